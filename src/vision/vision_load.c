/* vision_load.c — the vision tower's weights from the tensor directory (vision.h). Linear
 * weights keep their stored rows (or are quantized on load from f32/f16/bf16), norms and
 * tables become f32. The GGUF patch embedding is a conv kernel [hidden][3][p][p] (channel
 * first); it is reordered here to the processor's patch order [hidden][p][p][3], the HF
 * layout, so one patchify serves both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "vision/unified_embed.h"
#include "vision/vision_impl.h"

static void *own(ox_vision *v, size_t bytes, ox_err *err) {
    if (v->n_owned == v->cap_owned) {
        int cap = v->cap_owned ? v->cap_owned * 2 : 64;
        void **o = realloc(v->owned, (size_t)cap * sizeof *o);
        if (!o) return ox_errf(err, OX_E_NOMEM, "vision: out of memory"), NULL;
        v->owned = o, v->cap_owned = cap;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) return ox_errf(err, OX_E_NOMEM, "vision: out of memory for %zu bytes of weights", bytes), NULL;
    v->owned[v->n_owned++] = p;
    v->bytes += bytes;
    return p;
}

static uint64_t elems(const ox_tensor *t) {
    uint64_t n = 1;
    for (int i = 0; i < t->n_dims; i++) n *= t->ne[i];
    return n;
}

/* rows [0, nrows) of t (row length t->ne[0]) as f32 into dst */
static int read_f32(const ox_tensor *t, uint64_t nrows, float *dst, ox_err *err) {
    uint64_t rb;
    if (ox_row_bytes(t->type, t->ne[0], &rb, err)) return err ? err->code : OX_E_UNSUPPORTED;
    uint8_t *raw = malloc((size_t)(rb * nrows) + 1);
    if (!raw) return ox_errf(err, OX_E_NOMEM, "vision: out of memory reading %s", t->name);
    int rc = ox_tensor_read_rows(t, 0, nrows, raw, err);
    for (uint64_t r = 0; !rc && r < nrows; r++) ox_dequantize_row(t->type, raw + r * rb, dst + r * t->ne[0], t->ne[0]);
    free(raw);
    return rc;
}

static const ox_tensor *find_shaped(const ox_model_files *mf, const char *name, uint64_t n, ox_err *err) {
    const ox_tensor *t = ox_files_require(mf, name, err);
    if (t && elems(t) != n)
        return ox_errf(err, OX_E_CONFIG, "%s: tensor %s has %llu values, the vision config needs %llu",
                       ox_host_name(t->file), name, (unsigned long long)elems(t), (unsigned long long)n),
               NULL;
    return t;
}

static float *vector(ox_vision *v, const ox_model_files *mf, const char *name, int n, ox_err *err) {
    const ox_tensor *t = find_shaped(mf, name, (uint64_t)n, err);
    float *d = t ? own(v, (size_t)n * sizeof(float), err) : NULL;
    if (!d || read_f32(t, elems(t) / t->ne[0], d, err)) return NULL;
    return d;
}

/* The type a linear weight is held in: its stored one, or `quant` when stored as a float type
 * and the row length allows it. */
static ox_type load_type(const ox_tensor *t, ox_type quant) {
    int is_float = t->type == OX_F32 || t->type == OX_F16 || t->type == OX_BF16;
    return quant && is_float && t->ne[0] % ox_type_block_elems(quant) == 0 ? quant : t->type;
}

/* A [rows][cols] linear weight: stored rows, or quantized to `quant` when stored as a float
 * type and the row length allows it. */
static int matrix(ox_vision *v, const ox_model_files *mf, const char *name, int rows, int cols, ox_type quant,
                  ox_matrix *M, ox_err *err) {
    const ox_tensor *t = find_shaped(mf, name, (uint64_t)rows * (uint64_t)cols, err);
    if (!t) return err ? err->code : OX_E_MISSING;
    if (t->ne[0] != (uint64_t)cols)
        return ox_errf(err, OX_E_CONFIG, "%s: tensor %s has rows of %llu, the vision config needs %d",
                       ox_host_name(t->file), name, (unsigned long long)t->ne[0], cols);
    ox_type type = load_type(t, quant);
    uint64_t rb;
    if (ox_row_bytes(type, (uint64_t)cols, &rb, err))
        return ox_err_prefix(err, "%s: tensor %s", ox_host_name(t->file), name);
    void *data = own(v, (size_t)(rb * (uint64_t)rows), err);
    if (!data) return err ? err->code : OX_E_NOMEM;
    *M = (ox_matrix){type, rows, cols, (size_t)rb, data};
    if (type == t->type) return ox_tensor_read_rows(t, 0, (uint64_t)rows, data, err);
    float *f = malloc((size_t)rows * (size_t)cols * sizeof(float));
    if (!f) return ox_errf(err, OX_E_NOMEM, "vision: out of memory converting %s", name);
    int rc = read_f32(t, (uint64_t)rows, f, err);
    for (int r = 0; !rc && r < rows; r++)
        if (ox_quantize_row(type, f + (size_t)r * cols, (uint8_t *)data + (size_t)r * rb, (size_t)cols))
            rc = ox_errf(err, OX_E_UNSUPPORTED, "vision: cannot quantize %s to %s", name, ox_type_name(type));
    free(f);
    return rc;
}

/* The patch embedding as an f32 [hidden][p][p][3] matrix, from either layout. */
static int patch_matrix(ox_vision *v, const ox_model_files *mf, ox_err *err) {
    int H = v->c.hidden, p = v->c.patch, K = 3 * p * p;
    const ox_tensor *t = find_shaped(mf, "v.patch_embd.weight", (uint64_t)H * (uint64_t)K, err);
    if (!t) return err ? err->code : OX_E_MISSING;
    float *d = own(v, (size_t)H * (size_t)K * sizeof(float), err);
    if (!d) return err ? err->code : OX_E_NOMEM;
    v->patch = (ox_matrix){OX_F32, H, K, (size_t)K * sizeof(float), d};
    if (t->n_dims == 2 && t->ne[0] == (uint64_t)K) return read_f32(t, (uint64_t)H, d, err);
    if (t->n_dims != 4 || t->ne[0] != (uint64_t)p || t->ne[1] != (uint64_t)p || t->ne[2] != 3)
        return ox_errf(err, OX_E_CONFIG, "%s: v.patch_embd.weight: neither [hidden][3p^2] nor a [hidden][3][p][p] kernel",
                       ox_host_name(t->file));
    float *chw = malloc((size_t)H * (size_t)K * sizeof(float));
    if (!chw) return ox_errf(err, OX_E_NOMEM, "vision: out of memory for the patch embedding");
    int rc = read_f32(t, (uint64_t)H * 3 * (uint64_t)p, chw, err);
    for (int o = 0; !rc && o < H; o++)
        for (int ch = 0; ch < 3; ch++)
            for (int y = 0; y < p; y++)
                for (int x = 0; x < p; x++)
                    d[(size_t)o * K + ((size_t)y * p + x) * 3 + ch] = chw[(size_t)o * K + ((size_t)ch * p + y) * p + x];
    free(chw);
    return rc;
}

static int clamps(ox_vision *v, const ox_model_files *mf, int l, const char *stem, float out[4], ox_err *err) {
    static const char *const sfx[4] = {"input_min", "input_max", "output_min", "output_max"};
    out[0] = out[2] = -INFINITY, out[1] = out[3] = INFINITY;
    if (!v->c.clipped) return 0;
    for (int i = 0; i < 4; i++) {
        char name[96];
        snprintf(name, sizeof name, "v.blk.%d.%s.%s", l, stem, sfx[i]);
        const ox_tensor *t = ox_files_find(mf, name);
        if (!t) continue; /* an absent bound does not clamp (the reference's default is infinite) */
        if (elems(t) != 1) return ox_errf(err, OX_E_CONFIG, "%s: %s: one value expected", ox_host_name(t->file), name);
        if (read_f32(t, 1, &out[i], err)) return err ? err->code : OX_E_IO;
    }
    return 0;
}

static int load_layer(ox_vision *v, const ox_model_files *mf, int l, ox_type quant, ox_err *err) {
    const ox_vision_config *c = &v->c;
    vision_layer *L = &v->L[l];
    int H = c->hidden, hd = c->head_dim, q = c->n_heads * hd, kv = c->n_kv_heads * hd, I = c->ffn;
    static const char *const stem[VL_COUNT] = {"attn_q",   "attn_k", "attn_v",  "attn_out",
                                               "ffn_gate", "ffn_up", "ffn_down"};
    const int rows[VL_COUNT] = {q, kv, kv, H, I, I, H}, cols[VL_COUNT] = {H, H, H, q, H, H, I};
    char name[96];
    for (int i = 0; i < VL_COUNT; i++) {
        snprintf(name, sizeof name, "v.blk.%d.%s.weight", l, stem[i]);
        if (matrix(v, mf, name, rows[i], cols[i], quant, &L->w[i], err)) return err ? err->code : OX_E_MISSING;
        if (clamps(v, mf, l, stem[i], L->clamp[i], err)) return err ? err->code : OX_E_CONFIG;
    }
#define VEC(field, suffix, n)                                                                                          \
    snprintf(name, sizeof name, "v.blk.%d.%s", l, suffix);                                                             \
    if (!(L->field = vector(v, mf, name, n, err))) return err ? err->code : OX_E_MISSING;
    VEC(ln1, "ln1.weight", H)
    VEC(attn_post_norm, "attn_post_norm.weight", H)
    VEC(ln2, "ln2.weight", H)
    VEC(ffn_post_norm, "ffn_post_norm.weight", H)
    VEC(q_norm, "attn_q_norm.weight", hd)
    VEC(k_norm, "attn_k_norm.weight", hd)
#undef VEC
    return 0;
}

int ox_vision_max_patches(const ox_vision *v) { return OX_VISION_MAX_SOFT_TOKENS * v->c.pool * v->c.pool; }

static int load_all(ox_vision *v, const ox_model_files *mf, ox_type quant, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int H = c->hidden;
    if (patch_matrix(v, mf, err)) return err ? err->code : OX_E_MISSING;
    /* positions reach at most max_patches / k along one side (the other side is >= k) */
    const ox_tensor *pt = find_shaped(mf, "v.position_embd.weight", 2ull * (uint64_t)c->pos_size * (uint64_t)H, err);
    if (!pt) return err ? err->code : OX_E_MISSING;
    if (pt->ne[0] != (uint64_t)H)
        return ox_errf(err, OX_E_CONFIG, "%s: v.position_embd.weight: rows of %d expected", ox_host_name(pt->file), H);
    int reach = ox_vision_max_patches(v) / c->pool;
    v->pos_rows = reach < c->pos_size ? reach : c->pos_size;
    uint64_t rb;
    if (ox_row_bytes(pt->type, (uint64_t)H, &rb, err)) return err ? err->code : OX_E_UNSUPPORTED;
    v->pos_table = pt;
    if (c->standardize) {
        if (!(v->std_bias = vector(v, mf, "v.std_bias", H, err))) return err ? err->code : OX_E_MISSING;
        if (!(v->std_scale = vector(v, mf, "v.std_scale", H, err))) return err ? err->code : OX_E_MISSING;
    }
    if (matrix(v, mf, "mm.input_projection.weight", c->text_hidden, H, quant, &v->proj, err))
        return err ? err->code : OX_E_MISSING;
    if (!(v->L = own(v, (size_t)c->n_layers * sizeof *v->L, err))) return err ? err->code : OX_E_NOMEM;
    memset(v->L, 0, (size_t)c->n_layers * sizeof *v->L);
    for (int l = 0; l < c->n_layers; l++)
        if (load_layer(v, mf, l, quant, err)) return err ? err->code : OX_E_MISSING;
    return 0;
}

ox_vision *ox_vision_load(const ox_model_files *mf, ox_type quant, ox_err *err) {
    ox_vision *v = calloc(1, sizeof *v);
    if (!v) return ox_errf(err, OX_E_NOMEM, "vision: out of memory"), NULL;
    if (ox_uvision_present(mf)) { /* gemma4_unified: patch embedder, no tower (unified_embed.h) */
        v->unified = ox_uvision_config(mf, &v->c, err) > 0 ? ox_uvision_load(mf, err) : NULL;
        v->pos_rows = v->c.pos_size * v->c.pool; /* check_size counts in patch_size steps */
        if (v->unified) v->bytes = ox_uvision_bytes(v->unified);
        else ox_vision_free(v), v = NULL;
        return v;
    }
    int rc = ox_vision_config_read(mf, &v->c, err);
    if (rc == 0) rc = ox_errf(err, OX_E_MISSING, "no vision tower among the model files (%s)", ox_files_describe(mf));
    if (rc > 0) rc = load_all(v, mf, quant, err);
    if (rc) {
        ox_vision_free(v);
        return NULL;
    }
    return v;
}

void ox_vision_free(ox_vision *v) {
    if (!v) return;
    ox_uvision_free(v->unified);
    for (int i = 0; i < v->n_owned; i++) free(v->owned[i]);
    free(v->owned);
    ox_scratch_free(&v->ws);
    free(v);
}

const ox_vision_config *ox_vision_cfg(const ox_vision *v) { return &v->c; }
uint64_t ox_vision_bytes(const ox_vision *v) { return v->bytes; }

/* What ox_vision_load holds, from the headers: every allocation load_all makes. */
int ox_vision_estimate(const ox_model_files *mf, ox_type quant, uint64_t *bytes, uint64_t *reads, ox_err *err) {
    if (ox_uvision_present(mf)) return ox_uvision_estimate(mf, bytes, reads, err); /* gemma4_unified */
    ox_vision_config c;
    int rc = ox_vision_config_read(mf, &c, err);
    if (rc <= 0) return rc;
    uint64_t H = (uint64_t)c.hidden, K = 3ull * (uint64_t)c.patch * (uint64_t)c.patch, n = 0, rd = 0;
    n += H * K * 4 + (c.standardize ? 2 * H * 4 : 0);
    n += (uint64_t)c.n_layers * (sizeof(vision_layer) + (4 * H + 2 * (uint64_t)c.head_dim) * 4);
    static const char *const stem[VL_COUNT] = {"attn_q",   "attn_k", "attn_v",  "attn_out",
                                               "ffn_gate", "ffn_up", "ffn_down"};
    for (int l = -1; l < c.n_layers; l++)
        for (int i = 0; i < (l < 0 ? 1 : VL_COUNT); i++) {
            char name[96];
            if (l < 0) snprintf(name, sizeof name, "mm.input_projection.weight");
            else snprintf(name, sizeof name, "v.blk.%d.%s.weight", l, stem[i]);
            const ox_tensor *t = ox_files_require(mf, name, err);
            uint64_t rb;
            if (!t || ox_row_bytes(load_type(t, quant), t->ne[0], &rb, err)) return err ? err->code : OX_E_MISSING;
            n += rb * ox_tensor_rows(t);
            rd += t->nbytes;
        }
    const ox_tensor *pt = ox_files_find(mf, "v.patch_embd.weight");
    rd += pt ? pt->nbytes : 0; /* the position table is read per image (encode) */
    *bytes = n;
    if (reads) *reads = rd;
    return 1;
}
