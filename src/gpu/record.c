/* record.c — the GPU backend's command list (record.h) and its hand-over to the host. */
#include "gpu/record.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    const void *key;
    int32_t w[OX_GPU_ENTRY_WORDS];
} entry;

struct ox_gpu {
    entry *tab;
    int n_tab, cap_tab;
    int32_t *list;
    int n_list, cap_list, n_ops;
    const uint8_t *act;
    size_t act_bytes;
    const char *broken; /* why the list being recorded cannot run (NULL: it can) */
    int32_t *flat;      /* ox_gpu_table's words */
    uint32_t types;     /* ggml types the host has kernels for (bit t) */
};

ox_gpu *ox_gpu_new(uint32_t types, ox_err *err) {
    ox_gpu *g = calloc(1, sizeof *g);
    if (!g) ox_errf(err, OX_E_NOMEM, "out of memory for the GPU backend");
    else g->types = types;
    return g;
}

int ox_gpu_has_type(const ox_gpu *g, int type) { return type >= 0 && type < 32 && ((g->types >> type) & 1u); }

int ox_gpu_has(const ox_gpu *g, const void *w) {
    for (int i = 0; i < g->n_tab; i++)
        if (g->tab[i].key == w) return 1;
    return 0;
}

void ox_gpu_free(ox_gpu *g) {
    if (!g) return;
    free(g->tab);
    free(g->list);
    free(g->flat);
    free(g);
}

static int add(ox_gpu *g, const void *key, int kind, int type, int rows, int cols, size_t row_bytes, const void *data,
               int unit, ox_err *err) {
    for (int i = 0; i < g->n_tab; i++)
        if (g->tab[i].key == key) return i;
    if (!data) return ox_errf(err, OX_E_STATE, "gpu: a weight to upload is not resident");
    if (g->n_tab == g->cap_tab) {
        int cap = g->cap_tab ? 2 * g->cap_tab : 64;
        entry *t = realloc(g->tab, (size_t)cap * sizeof *t);
        if (!t) return ox_errf(err, OX_E_NOMEM, "out of memory for the GPU weight table");
        g->tab = t;
        g->cap_tab = cap;
    }
    entry *e = &g->tab[g->n_tab];
    e->key = key;
    int32_t w[OX_GPU_ENTRY_WORDS] = {g->n_tab,           kind, type, rows, cols, (int32_t)(uintptr_t)data,
                                     (int32_t)row_bytes, unit};
    memcpy(e->w, w, sizeof w);
    return g->n_tab++;
}

int ox_gpu_add_matrix(ox_gpu *g, const ox_matrix *M, ox_err *err) {
    return add(g, M, 0, (int)M->type, M->rows, M->cols, M->row_bytes, M->data, 1, err);
}

int ox_gpu_add_experts(ox_gpu *g, const ox_matrix *M, int n_experts, ox_err *err) {
    if (n_experts < 1 || M->rows % n_experts)
        return ox_errf(err, OX_E_FORMAT, "gpu: %d expert rows are not %d experts' blocks", M->rows, n_experts);
    return add(g, M, 0, (int)M->type, M->rows, M->cols, M->row_bytes, M->data, M->rows / n_experts, err);
}

int ox_gpu_add_vector(ox_gpu *g, const float *v, int n, ox_err *err) {
    return add(g, v, 1, 0, 1, n, (size_t)n * sizeof(float), v, 1, err);
}

int ox_gpu_offer_matrix(ox_gpu *g, const ox_matrix *M, ox_err *err) {
    int id = M->rows > 0 && ox_gpu_has_type(g, (int)M->type) ? ox_gpu_add_matrix(g, M, err) : 0;
    return id < 0 ? id : 0;
}

int ox_gpu_offer_vector(ox_gpu *g, const float *v, int n, ox_err *err) {
    int id = v ? ox_gpu_add_vector(g, v, n, err) : 0;
    return id < 0 ? id : 0;
}

const int32_t *ox_gpu_table(const ox_gpu *g, int *n) {
    ox_gpu *m = (ox_gpu *)g;
    free(m->flat);
    m->flat = malloc((size_t)(g->n_tab ? g->n_tab : 1) * sizeof(int32_t) * OX_GPU_ENTRY_WORDS);
    *n = m->flat ? g->n_tab : 0;
    for (int i = 0; m->flat && i < g->n_tab; i++)
        memcpy(m->flat + (size_t)i * OX_GPU_ENTRY_WORDS, g->tab[i].w, sizeof g->tab[i].w);
    return m->flat;
}

static int id_of(ox_gpu *g, const void *key) {
    for (int i = 0; i < g->n_tab; i++)
        if (g->tab[i].key == key) return i;
    g->broken = "an op names a weight that was not uploaded";
    return -1;
}

static void put(ox_gpu *g, const int32_t *w, int n) {
    if (g->broken) return;
    if (g->n_list + n > g->cap_list) {
        int cap = g->cap_list ? 2 * g->cap_list : 4096;
        while (cap < g->n_list + n) cap *= 2;
        int32_t *l = realloc(g->list, (size_t)cap * sizeof *l);
        if (!l) {
            g->broken = "out of memory for the command list";
            return;
        }
        g->list = l;
        g->cap_list = cap;
    }
    memcpy(g->list + g->n_list, w, (size_t)n * sizeof *w);
    g->n_list += n;
    g->n_ops++;
}

/* an activation's offset in the scratch (it must lie there) */
static int32_t off(ox_gpu *g, const void *p) {
    const uint8_t *b = p;
    if (b < g->act || b >= g->act + g->act_bytes) {
        g->broken = "an op's activation is outside the step's scratch";
        return 0;
    }
    return (int32_t)(b - g->act);
}

static int32_t fbits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

void ox_gpu_begin(ox_gpu *g, const void *session, int max_ctx, int kv_len, const void *act, size_t bytes,
                  const uint32_t *regions, int n_regions) {
    g->n_list = g->n_ops = 0;
    g->broken = NULL;
    g->act = act;
    g->act_bytes = bytes;
    int32_t h[OX_GPU_HEADER] = {OX_GPU_MAGIC, (int32_t)(uintptr_t)session, max_ctx, kv_len, (int32_t)bytes, 0,
                                n_regions};
    put(g, h, OX_GPU_HEADER);
    put(g, (const int32_t *)regions, n_regions);
    g->n_ops = 0;
}

void ox_gpu_upload(ox_gpu *g, const void *p, size_t bytes) {
    put(g, (int32_t[]){OX_GPU_UPLOAD, off(g, p), (int32_t)bytes}, 3);
}

void ox_gpu_matmul(ox_gpu *g, const ox_matrix *W, const float *x, int n, float *y) {
    put(g, (int32_t[]){OX_GPU_MATMUL, id_of(g, W), off(g, x), off(g, y), n}, 5);
}

void ox_gpu_rms(ox_gpu *g, float *y, const float *x, const float *w, int rows, int width, float eps) {
    put(g, (int32_t[]){OX_GPU_RMS, off(g, y), off(g, x), w ? id_of(g, w) : -1, rows, width, fbits(eps)}, 7);
}

void ox_gpu_rope(ox_gpu *g, float *x, int ntok, int nh, int hd, int pos, int pairs, float base, float factor) {
    put(g, (int32_t[]){OX_GPU_ROPE, off(g, x), ntok, nh, hd, pos, pairs, fbits(base), fbits(factor)}, 9);
}

void ox_gpu_kv_write(ox_gpu *g, int layer, int pos, int ntok, const float *k, const float *v, int width, int type,
                     int cap) {
    put(g, (int32_t[]){OX_GPU_KV_WRITE, layer, pos, ntok, off(g, k), off(g, v), width, type, cap}, 9);
}

void ox_gpu_attend(ox_gpu *g, int layer, const float *q, float *out, int ntok, int pos, int nh, int hd, int group,
                   int window, int bidir) {
    put(g, (int32_t[]){OX_GPU_ATTEND, layer, off(g, q), off(g, out), ntok, pos, nh, hd, group, window, bidir}, 11);
}

void ox_gpu_geglu(ox_gpu *g, float *y, const float *gt, const float *u, int rows, int width, int gstride, int ustride) {
    put(g, (int32_t[]){OX_GPU_GEGLU, off(g, y), off(g, gt), off(g, u), rows, width, gstride, ustride}, 8);
}

void ox_gpu_add(ox_gpu *g, float *y, const float *x, size_t count) {
    put(g, (int32_t[]){OX_GPU_ADD, off(g, y), off(g, x), (int32_t)count}, 4);
}

void ox_gpu_scale(ox_gpu *g, float *y, size_t count, float a) {
    put(g, (int32_t[]){OX_GPU_SCALE, off(g, y), (int32_t)count, fbits(a)}, 4);
}

void ox_gpu_mix(ox_gpu *g, float *y, const float *x, size_t count, float b, float a) {
    put(g, (int32_t[]){OX_GPU_MIX, off(g, y), off(g, x), (int32_t)count, fbits(b), fbits(a)}, 6);
}

void ox_gpu_softcap(ox_gpu *g, float *y, size_t count, float cap) {
    put(g, (int32_t[]){OX_GPU_SOFTCAP, off(g, y), (int32_t)count, fbits(cap)}, 4);
}

void ox_gpu_copy(ox_gpu *g, float *y, const float *x, size_t count) {
    put(g, (int32_t[]){OX_GPU_COPY, off(g, y), off(g, x), (int32_t)count}, 4);
}

void ox_gpu_route(ox_gpu *g, float *z, int *sel, float *wts, const float *scale, int ntok, int nexp, int topk) {
    put(g, (int32_t[]){OX_GPU_ROUTE, off(g, z), off(g, sel), off(g, wts), id_of(g, scale), ntok, nexp, topk}, 8);
}

void ox_gpu_experts(ox_gpu *g, const ox_matrix *W, const float *x, const int *sel, float *y, int nslots, int xdiv) {
    put(g, (int32_t[]){OX_GPU_EXPERTS, id_of(g, W), off(g, x), off(g, sel), off(g, y), nslots, xdiv}, 7);
}

void ox_gpu_combine(ox_gpu *g, float *y, const float *ys, const int *sel, const float *wts, int ntok, int topk,
                    int width) {
    put(g, (int32_t[]){OX_GPU_COMBINE, off(g, y), off(g, ys), off(g, sel), off(g, wts), ntok, topk, width}, 8);
}

void ox_gpu_rope2d(ox_gpu *g, float *x, int ntok, int nh, int hd, int pw, float base) {
    put(g, (int32_t[]){OX_GPU_ROPE2D, off(g, x), ntok, nh, hd, pw, fbits(base)}, 7);
}

void ox_gpu_self_attend(ox_gpu *g, const float *q, const float *k, const float *v, float *out, int ntok, int nh,
                        int nkv, int hd) {
    put(g, (int32_t[]){OX_GPU_SELF_ATTEND, off(g, q), off(g, k), off(g, v), off(g, out), ntok, nh, nkv, hd}, 9);
}

void ox_gpu_pool(ox_gpu *g, float *y, const float *x, int ph, int pw, int k, int width, float scale, const float *bias,
                 const float *std) {
    int32_t b = bias ? id_of(g, bias) : -1, s = bias ? id_of(g, std) : -1;
    put(g, (int32_t[]){OX_GPU_POOL, off(g, y), off(g, x), ph, pw, k, width, fbits(scale), b, s}, 10);
}

void ox_gpu_clamp(ox_gpu *g, float *y, size_t count, float lo, float hi) {
    put(g, (int32_t[]){OX_GPU_CLAMP, off(g, y), (int32_t)count, fbits(lo), fbits(hi)}, 5);
}

int ox_gpu_linear(ox_gpu *g, ox_scratch *ws, const ox_matrix *W, const float *x, int n, float *y, ox_err *err) {
    if (ox_gpu_has(g, W)) {
        ox_gpu_matmul(g, W, x, n, y);
        return 0;
    }
    ox_gpu_read(g, x, (size_t)n * W->cols * sizeof(float), (void *)x);
    int rc = ox_gpu_run(g, err);
    if (!rc) rc = ox_matmul(ws, W, x, n, y, err);
    if (rc) return rc;
    ox_gpu_restart(g);
    ox_gpu_upload(g, y, (size_t)n * W->rows * sizeof(float));
    return 0;
}

void ox_gpu_read(ox_gpu *g, const void *p, size_t bytes, void *dst) {
    put(g, (int32_t[]){OX_GPU_READ, off(g, p), (int32_t)bytes, (int32_t)(uintptr_t)dst}, 4);
}

#if defined(__EMSCRIPTEN__) && !defined(OX_HOST_NATIVE)
#include "wasm/abi.h" /* the imports (src/gpu/gpu_lib.js) */
#endif

int ox_gpu_run(ox_gpu *g, ox_err *err) {
    if (g->broken) return ox_errf(err, OX_E_STATE, "gpu: %s", g->broken);
    g->list[5] = g->n_ops; /* the header's op count (record.h) */
#if defined(__EMSCRIPTEN__) && !defined(OX_HOST_NATIVE)
    char msg[OX_ERR_MSG - 16] = "";
    int rc = ox_js_gpu_run(g->list, g->n_list, g->act, msg, (int)sizeof msg);
    return rc ? ox_errf(err, rc < 0 ? rc : OX_E_IO, "webgpu: %s", msg) : 0;
#else
    return ox_errf(err, OX_E_UNSUPPORTED, "gpu: this build has no GPU host (WebGPU runs in the wasm builds)");
#endif
}

void ox_gpu_restart(ox_gpu *g) {
    if (g->n_list < OX_GPU_HEADER) return;  /* never begun: ox_gpu_run reports that */
    g->n_list = OX_GPU_HEADER + g->list[6]; /* the header and the regions stay */
    g->n_ops = 0;
}

void ox_gpu_forget(ox_gpu *g, const void *session) {
    (void)g;
#if defined(__EMSCRIPTEN__) && !defined(OX_HOST_NATIVE)
    ox_js_gpu_forget((int32_t)(uintptr_t)session);
#else
    (void)session;
#endif
}
