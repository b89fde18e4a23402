/* unified_embed.c — see unified_embed.h (docs/gemma4.md §6.4). */
#include "vision/unified_embed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"
#include "host/hostfile.h"
#include "kernels/kernels.h"

#define LN_EPS 1e-5f /* torch.nn.LayerNorm's default: the reference passes none */

struct ox_uvision {
    int side, pool, D, K, S, T; /* patch side in pixels, pooling kernel, width, 3*side^2, table rows, text width */
    int mmproj;                 /* llama.cpp's form: pixels channel-first in a patch, the table [2][rows][width] */
    float rms_eps;
    float *ln[3][2]; /* patch_ln1 (K), patch_ln2, patch_ln3 (D): weight, bias */
    float *dense_b;  /* D */
    float *pos;      /* [S][2][D] */
    ox_matrix dense, proj;
    void *owned[16];
    int n_owned;
    uint64_t bytes;
    ox_scratch ws;
};

/* The tensors' names: from an HF checkpoint (unified_names.c), or llama.cpp's mmproj (gemma4uv). */
enum { N_LN1, N_LN2, N_LN3, N_DENSE, N_POS, N_PROJ, N_COUNT };
static const char *const NAMES[2][N_COUNT] = {
    {"v.patch_ln1", "v.patch_ln2", "v.patch_ln3", "v.patch_dense", "v.pos_embd_2d.weight", "mm.input_projection.weight"},
    {"v.patch_norm.1", "v.patch_norm.2", "v.patch_norm.3", "v.patch_embd", "v.position_embd.weight",
     "mm.input_projection.weight"},
};

/* an mmproj GGUF whose projector is the unified embedder */
static const ox_gguf *unified_mmproj(const ox_model_files *mf) {
    const ox_gguf *g = ox_files_mmproj(mf);
    const char *proj = NULL;
    if (g && ox_gguf_get_str(g, "clip.vision.projector_type", &proj, NULL) != 0)
        ox_gguf_get_str(g, "clip.projector_type", &proj, NULL);
    return g && proj && strcmp(proj, "gemma4uv") == 0 ? g : NULL;
}

int ox_uvision_present(const ox_model_files *mf) {
    return ox_files_find(mf, "v.patch_dense.weight") != NULL || unified_mmproj(mf) != NULL;
}

/* the mmproj's patch size, pooling kernel (llama.cpp's projector scale factor, 3 by default) and eps */
static int read_mmproj_config(const ox_gguf *g, float *eps, int *patch, int *pool, ox_err *err) {
    uint32_t p = 16, k = 3;
    *eps = 1e-6f;
    if (ox_gguf_get_u32(g, "clip.vision.patch_size", &p, err)) return err ? err->code : OX_E_MISSING;
    ox_gguf_get_u32(g, "clip.vision.projector.scale_factor", &k, NULL);
    ox_gguf_get_f32(g, "clip.vision.attention.layer_norm_epsilon", eps, NULL);
    if (p == 0 || p > 64 || k == 0 || k > 8 || !(*eps > 0))
        return ox_errf(err, OX_E_CONFIG,
                       "%s: gemma4uv: patch size, scale factor and epsilon must be positive and small", ox_gguf_name(g));
    *patch = (int)p, *pool = (int)k;
    return 0;
}

/* vision_config's rms_norm_eps, patch_size and pooling_kernel_size (class defaults 1e-6, 16, 3) */
static int read_vision_config(const ox_model_files *mf, float *eps, int *patch, int *pool, ox_err *err) {
    *eps = 1e-6f, *patch = 16, *pool = 3;
    int f = ox_files_aux(mf, "config.json");
    if (f < 0) return 0;
    int64_t size = ox_host_size(f);
    char *text = size > 0 && size < (64 << 20) ? malloc((size_t)size) : NULL;
    if (!text) return ox_errf(err, OX_E_FORMAT, "%s: cannot read the vision config", ox_host_name(f));
    ox_json *doc =
        ox_host_read(f, 0, (size_t)size, text, err) ? NULL : ox_json_parse(text, (size_t)size, ox_host_name(f), err);
    free(text);
    if (!doc) return err ? err->code : OX_E_FORMAT;
    const ox_json *vc = ox_json_get(doc, "vision_config");
    int64_t p = 16, k = 3;
    const ox_json *pv = ox_json_get(vc, "patch_size"), *kv = ox_json_get(vc, "pooling_kernel_size");
    int rc = 0;
    if ((pv && ox_json_type(pv) != OX_JSON_NULL && !ox_json_int(pv, &p)) ||
        (kv && ox_json_type(kv) != OX_JSON_NULL && !ox_json_int(kv, &k)) || p <= 0 || p > 64 || k <= 0 || k > 8)
        rc = ox_errf(err, OX_E_CONFIG,
                     "%s: vision_config: patch_size and pooling_kernel_size must be small positive integers",
                     ox_host_name(f));
    *patch = (int)p, *pool = (int)k;
    *eps = (float)ox_json_num(ox_json_get(vc, "rms_norm_eps"), 1e-6);
    if (!rc && !(*eps > 0))
        rc = ox_errf(err, OX_E_CONFIG, "%s: vision_config.rms_norm_eps must be positive", ox_host_name(f));
    ox_json_free(doc);
    return rc;
}

/* The shapes the tensors give, checked against each other and the config. */
static int shapes(const ox_model_files *mf, int gguf, int *side, int *D, int *S, int *T, ox_err *err) {
    char dn[48];
    snprintf(dn, sizeof dn, "%s.weight", NAMES[gguf][N_DENSE]);
    const ox_tensor *d = ox_files_require(mf, dn, err);
    const ox_tensor *p = d ? ox_files_require(mf, NAMES[gguf][N_POS], err) : NULL;
    const ox_tensor *j = p ? ox_files_require(mf, "mm.input_projection.weight", err) : NULL;
    if (!j) return err ? err->code : OX_E_MISSING;
    *D = (int)d->ne[1], *S = (int)p->ne[gguf ? 1 : 2], *T = (int)j->ne[1];
    *side = (int)lround(sqrt((double)d->ne[0] / 3));
    if (d->n_dims != 2 || (uint64_t)3 * *side * *side != d->ne[0] || *D <= 0)
        return ox_errf(err, OX_E_CONFIG, "%s: %s: [width][3 * side^2] expected", ox_host_name(d->file), dn);
    if (p->n_dims != 3 || p->ne[0] != (uint64_t)*D || p->ne[gguf ? 2 : 1] != 2 || *S <= 0)
        return ox_errf(err, OX_E_CONFIG, "%s: the position table: [%s][%d] expected", ox_host_name(p->file),
                       gguf ? "2][rows" : "rows][2", *D);
    if (j->n_dims != 2 || j->ne[0] != (uint64_t)*D || *T <= 0)
        return ox_errf(err, OX_E_CONFIG, "%s: mm.input_projection.weight: [text width][%d] expected",
                       ox_host_name(j->file), *D);
    return 0;
}

int ox_uvision_config(const ox_model_files *mf, ox_vision_config *vc, ox_err *err) {
    memset(vc, 0, sizeof *vc);
    int side = 0, D = 0, S = 0, T = 0, rc;
    const ox_gguf *g = ox_files_find(mf, "v.patch_dense.weight") ? NULL : unified_mmproj(mf);
    if ((rc = g ? read_mmproj_config(g, &vc->eps, &vc->patch, &vc->pool, err)
                : read_vision_config(mf, &vc->eps, &vc->patch, &vc->pool, err)) ||
        (rc = shapes(mf, g != NULL, &side, &D, &S, &T, err)))
        return rc;
    if (vc->patch * vc->pool != side)
        return ox_errf(err, OX_E_CONFIG,
                       "%s: vision_config: patch_size %d x pooling_kernel_size %d is not the embedder's patch side %d",
                       ox_files_describe(mf), vc->patch, vc->pool, side);
    vc->hidden = D, vc->pos_size = S, vc->text_hidden = T, vc->default_soft_tokens = 280;
    return 1;
}

static void *own(ox_uvision *u, size_t bytes, ox_err *err) {
    void *p = u->n_owned < 16 ? malloc(bytes ? bytes : 1) : NULL;
    if (!p) return ox_errf(err, OX_E_NOMEM, "unified vision: out of memory for %zu bytes", bytes), NULL;
    u->bytes += bytes;
    return u->owned[u->n_owned++] = p;
}

/* A tensor of exactly n values, as f32 (any stored type). */
static float *values(ox_uvision *u, const ox_model_files *mf, const char *name, uint64_t n, ox_err *err) {
    const ox_tensor *t = ox_files_require(mf, name, err);
    if (!t) return NULL;
    uint64_t total = 1, rb;
    for (int i = 0; i < t->n_dims; i++) total *= t->ne[i];
    if (total != n)
        return ox_errf(err, OX_E_CONFIG, "%s: %s has %llu values, %llu expected", ox_host_name(t->file), name,
                       (unsigned long long)total, (unsigned long long)n),
               NULL;
    uint64_t rows = n / t->ne[0];
    if (ox_row_bytes(t->type, t->ne[0], &rb, err)) return NULL;
    float *d = own(u, (size_t)n * sizeof(float), err);
    uint8_t *raw = d ? malloc((size_t)(rb * rows)) : NULL;
    if (d && !raw) ox_errf(err, OX_E_NOMEM, "unified vision: out of memory reading %s", name);
    int rc = raw ? ox_tensor_read_rows(t, 0, rows, raw, err) : -1;
    for (uint64_t r = 0; !rc && r < rows; r++) ox_dequantize_row(t->type, raw + r * rb, d + r * t->ne[0], t->ne[0]);
    free(raw);
    return rc ? NULL : d;
}

/* A matrix in its stored type. */
static int matrix(ox_uvision *u, const ox_model_files *mf, const char *name, int rows, int cols, ox_matrix *M,
                  ox_err *err) {
    const ox_tensor *t = ox_files_require(mf, name, err);
    uint64_t rb;
    if (!t || ox_row_bytes(t->type, (uint64_t)cols, &rb, err)) return err ? err->code : OX_E_MISSING;
    void *data = own(u, (size_t)(rb * (uint64_t)rows), err);
    if (!data) return err ? err->code : OX_E_NOMEM;
    *M = (ox_matrix){t->type, rows, cols, (size_t)rb, data};
    return ox_tensor_read_rows(t, 0, (uint64_t)rows, data, err);
}

ox_uvision *ox_uvision_load(const ox_model_files *mf, ox_err *err) {
    ox_uvision *u = calloc(1, sizeof *u);
    if (!u) return ox_errf(err, OX_E_NOMEM, "unified vision: out of memory"), NULL;
    ox_vision_config vc;
    int rc = ox_uvision_config(mf, &vc, err) < 0;
    u->pool = vc.pool, u->side = vc.patch * vc.pool, u->D = vc.hidden, u->K = 3 * u->side * u->side;
    u->S = vc.pos_size, u->T = vc.text_hidden, u->rms_eps = vc.eps;
    u->mmproj = !ox_files_find(mf, "v.patch_dense.weight");
    const char *const *nm = NAMES[u->mmproj];
    char name[64];
    for (int i = 0; !rc && i < 3; i++)
        for (int b = 0; !rc && b < 2; b++) {
            snprintf(name, sizeof name, "%s.%s", nm[N_LN1 + i], b ? "bias" : "weight");
            rc = !(u->ln[i][b] = values(u, mf, name, (uint64_t)(i ? u->D : u->K), err));
        }
    snprintf(name, sizeof name, "%s.bias", nm[N_DENSE]);
    if (!rc) rc = !(u->dense_b = values(u, mf, name, (uint64_t)u->D, err));
    if (!rc) rc = !(u->pos = values(u, mf, nm[N_POS], (uint64_t)u->S * 2 * u->D, err));
    snprintf(name, sizeof name, "%s.weight", nm[N_DENSE]);
    if (!rc) rc = matrix(u, mf, name, u->D, u->K, &u->dense, err);
    if (!rc) rc = matrix(u, mf, "mm.input_projection.weight", u->T, u->D, &u->proj, err);
    if (rc) {
        ox_uvision_free(u);
        return NULL;
    }
    return u;
}

int ox_uvision_estimate(const ox_model_files *mf, uint64_t *bytes, uint64_t *reads, ox_err *err) {
    ox_vision_config vc;
    int rc = ox_uvision_config(mf, &vc, err);
    if (rc <= 0) return rc;
    int gguf = !ox_files_find(mf, "v.patch_dense.weight");
    uint64_t n = 0, rd = 0;
    for (int i = 0; i < N_COUNT; i++)
        for (int b = 0; b < (i <= N_DENSE ? 2 : 1); b++) {
            char name[64];
            if (i <= N_DENSE) snprintf(name, sizeof name, "%s.%s", NAMES[gguf][i], b ? "bias" : "weight");
            else snprintf(name, sizeof name, "%s", NAMES[gguf][i]);
            const ox_tensor *t = ox_files_require(mf, name, err);
            if (!t) return err ? err->code : OX_E_MISSING;
            uint64_t elems = 1;
            for (int d = 0; d < t->n_dims; d++) elems *= t->ne[d];
            /* matrices keep their stored rows, the rest becomes f32 (ox_uvision_load) */
            n += (i == N_DENSE && !b) || i == N_PROJ ? t->nbytes : elems * sizeof(float);
            rd += t->nbytes;
        }
    *bytes = n;
    if (reads) *reads = rd;
    return 1;
}

void ox_uvision_free(ox_uvision *u) {
    if (!u) return;
    for (int i = 0; i < u->n_owned; i++) free(u->owned[i]);
    ox_scratch_free(&u->ws);
    free(u);
}

uint64_t ox_uvision_bytes(const ox_uvision *u) { return u->bytes; }

/* x = (x - mean) / sqrt(var + eps) * w + b over n values (biased variance, as torch) */
static void layer_norm(float *x, int n, const float *w, const float *b) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    float inv = (float)(1.0 / sqrt(v / n + LN_EPS));
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] - m) * inv * w[i] + b[i];
}

int ox_uvision_encode(ox_uvision *u, const float *rgb, int height, int width, float *out, ox_err *err) {
    int s = u->side, gh = height / s, gw = width / s, n = gh * gw, K = u->K, D = u->D;
    if (gh > u->S || gw > u->S)
        return ox_errf(err, OX_E_RANGE, "image %dx%d: %d x %d patches, the position table has %d rows", width, height,
                       gw, gh, u->S);
    float *px = calloc((size_t)n * K, sizeof(float));
    if (!px) return ox_errf(err, OX_E_NOMEM, "unified vision: out of memory for %d patches", n);
    for (int t = 0; t < n; t++) {
        int r = t / gw, c = t % gw;
        float *d = px + (size_t)t * K;
        for (int y = 0; y < s; y++) {
            const float *src = rgb + (((size_t)r * s + y) * width + (size_t)c * s) * 3;
            if (!u->mmproj) memcpy(d + (size_t)y * 3 * s, src, 3 * (size_t)s * sizeof(float));
            else /* llama.cpp permuted the dense columns and LayerNorm 1 to channel-first pixels */
                for (int x = 0; x < s; x++)
                    for (int ch = 0; ch < 3; ch++) d[((size_t)ch * s + y) * s + x] = src[x * 3 + ch];
        }
        layer_norm(d, K, u->ln[0][0], u->ln[0][1]);
    }
    int rc = ox_matmul(&u->ws, &u->dense, px, n, out, err);
    free(px);
    for (int t = 0; !rc && t < n; t++) {
        float *h = out + (size_t)t * D;
        size_t x = (size_t)(t % gw), y = (size_t)(t / gw), S = (size_t)u->S; /* P[x][0], P[y][1] */
        const float *col = u->pos + (u->mmproj ? x : x * 2) * D, *row = u->pos + (u->mmproj ? S + y : y * 2 + 1) * D;
        for (int i = 0; i < D; i++) h[i] += u->dense_b[i];
        layer_norm(h, D, u->ln[1][0], u->ln[1][1]);
        for (int i = 0; i < D; i++) h[i] += col[i] + row[i];
        layer_norm(h, D, u->ln[2][0], u->ln[2][1]);
    }
    return rc ? rc : n;
}

int ox_uvision_embed(ox_uvision *u, const float *rgb, int height, int width, float *out, ox_err *err) {
    int n = (height / u->side) * (width / u->side), D = u->D;
    float *h = malloc((size_t)n * D * sizeof(float));
    if (!h) return ox_errf(err, OX_E_NOMEM, "unified vision: out of memory for %d patches", n);
    int rc = ox_uvision_encode(u, rgb, height, width, h, err);
    /* the multimodal embedder: RMSNorm without a scale, then the projection */
    for (int t = 0; rc >= 0 && t < n; t++) {
        float *x = h + (size_t)t * D;
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)x[i] * x[i];
        float inv = (float)(1.0 / sqrt(ss / D + u->rms_eps));
        for (int i = 0; i < D; i++) x[i] *= inv;
    }
    if (rc >= 0) rc = ox_matmul(&u->ws, &u->proj, h, n, out, err);
    free(h);
    return rc < 0 ? rc : n;
}
