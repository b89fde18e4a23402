/* kv.c — see kv.h. */
#include "model/kv.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/attn.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

int ox_kv_capacity(const ox_config *c, int l, int n_ctx) {
    const ox_layer_cfg *lc = &c->layers[l];
    if (n_ctx <= 0) n_ctx = c->ctx_max > 0 ? c->ctx_max : INT32_MAX / 2;
    if (lc->shared) return 0;
    /* bidirectional models run a whole sequence in one batch: no bound on what it writes */
    if (lc->window <= 0 || c->bidirectional) return n_ctx;
    int64_t ring = (int64_t)lc->window + ox_max_batch(c) - 1;
    return ring < n_ctx ? (int)ring : n_ctx;
}

/* SIZE_MAX when it does not fit a size_t (wasm32): the reserve's checked multiply refuses it */
size_t ox_kv_row_bytes(ox_kv_type t, int n_heads, int hd) {
    uint64_t n = (uint64_t)(n_heads > 0 ? n_heads : 0), w = (uint64_t)(hd > 0 ? hd : 0), b;
    switch (t) {
    case OX_KV_F16: b = n * w * sizeof(ox_f16); break;
    case OX_KV_Q8_0: b = n * ((w + OX_QK - 1) / OX_QK) * sizeof(ox_block_q8_0); break;
    default: b = n * w * sizeof(float);
    }
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}

uint64_t ox_kv_bytes(const ox_config *c, int n_ctx, ox_kv_type t) {
    uint64_t sum = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const ox_layer_cfg *lc = &c->layers[l];
        sum += 2ull * (uint64_t)ox_kv_capacity(c, l, n_ctx) * ox_kv_row_bytes(t, lc->n_kv_heads, lc->head_dim);
    }
    return sum;
}

int ox_kv_check(const ox_config *c, ox_kv_type t, ox_err *err) {
    if ((int)t < 0 || (int)t >= OX_KV_N_TYPES)
        return ox_errf(err, OX_E_UNSUPPORTED, "kv.c: unknown KV type %d", (int)t);
    for (int l = 0; t == OX_KV_Q8_0 && l < c->n_layers; l++)
        if (c->layers[l].head_dim % OX_QK)
            return ox_errf(err, OX_E_UNSUPPORTED,
                           "kv.c: a q8_0 KV cache needs head widths that are multiples of %d "
                           "(layer %d has %d)",
                           OX_QK, l, c->layers[l].head_dim);
    return 0;
}

void ox_kv_init(ox_kv *kv, const ox_config *c, int l, int n_ctx, ox_kv_type t, int rings) {
    const ox_layer_cfg *lc = &c->layers[l];
    *kv = (ox_kv){.type = t, .n_heads = lc->n_kv_heads, .hd = lc->head_dim};
    kv->row_bytes = ox_kv_row_bytes(t, kv->n_heads, kv->hd);
    kv->head_bytes = ox_kv_row_bytes(t, 1, kv->hd);
    if (n_ctx <= 0) n_ctx = c->ctx_max > 0 ? c->ctx_max : INT32_MAX / 2;
    kv->max_cap = rings || lc->shared ? ox_kv_capacity(c, l, n_ctx) : n_ctx;
    kv->ring = kv->max_cap < n_ctx;
    kv->window = lc->window;
}

void ox_kv_free(ox_kv *kv) {
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
    kv->cap = 0;
}

uint64_t ox_kv_alloc_bytes(const ox_kv *kv) { return 2ull * (uint64_t)kv->cap * kv->row_bytes; }

int ox_kv_grown_cap(int cap, int need, int max) {
    if (!cap) cap = 16;
    while (cap < need) cap = cap > max / 2 ? max : cap * 2;
    return cap < need ? need : cap;
}

int ox_kv_reserve(ox_kv *kv, int need, uint64_t *grown, ox_err *err) {
    if (need > kv->max_cap) need = kv->max_cap; /* a ring reuses its rows */
    if (kv->cap >= need) return 0;
    int cap = ox_kv_grown_cap(kv->cap, need, kv->max_cap);
    size_t bytes;
    if (ox_mul_size((size_t)cap, kv->row_bytes, &bytes))
        return ox_errf(err, OX_E_NOMEM, "kv.c: a KV cache of %d positions x %zu bytes is too large", cap, kv->row_bytes);
    uint8_t *k = realloc(kv->k, bytes);
    if (k) kv->k = k;
    uint8_t *v = k ? realloc(kv->v, bytes) : NULL;
    if (!v) return ox_errf(err, OX_E_NOMEM, "kv.c: out of memory for a KV cache of %zu bytes", 2 * bytes);
    kv->v = v;
    *grown += 2ull * (uint64_t)(cap - kv->cap) * kv->row_bytes;
    kv->cap = cap;
    return 0;
}

static size_t row_of(const ox_kv *kv, int pos) { return (size_t)(kv->ring ? pos % kv->max_cap : pos); }

static void store_row(const ox_kv *kv, uint8_t *dst, const float *x) {
    size_t n = (size_t)kv->n_heads * (size_t)kv->hd;
    if (kv->type == OX_KV_F32) {
        memcpy(dst, x, n * sizeof(float));
    } else if (kv->type == OX_KV_F16) {
        ox_f16 *h = (ox_f16 *)dst;
        for (size_t i = 0; i < n; i++) h[i] = ox_f32_to_f16(x[i]);
    } else {
        ox_quantize_row(OX_Q8_0, x, dst, n); /* hd % 32 == 0 (ox_kv_check): blocks stay in a head */
    }
}

void ox_kv_write(ox_kv *kv, int pos, const float *k, const float *v) {
    size_t r = row_of(kv, pos) * kv->row_bytes;
    store_row(kv, kv->k + r, k);
    store_row(kv, kv->v + r, v);
    ox_kv_advance(kv, pos);
}

void ox_kv_advance(ox_kv *kv, int pos) {
    if (kv->ring && pos - kv->max_cap + 1 > kv->lo) kv->lo = pos - kv->max_cap + 1; /* its row held that one */
}

int ox_kv_can_resume(const ox_kv *kv, int pos) {
    int need = kv->window > 0 && pos - kv->window + 1 > 0 ? pos - kv->window + 1 : 0;
    return pos == 0 || need >= kv->lo;
}

void ox_kv_truncate(ox_kv *kv, int pos) {
    if (pos == 0) kv->lo = 0;
}

int ox_kv_copy(ox_kv *dst, const ox_kv *src, uint64_t *grown, ox_err *err) {
    int rc = ox_kv_reserve(dst, src->cap, grown, err);
    if (rc) return rc;
    size_t bytes = (size_t)src->cap * src->row_bytes;
    if (bytes) {
        memcpy(dst->k, src->k, bytes);
        memcpy(dst->v, src->v, bytes);
    }
    dst->lo = src->lo;
    return 0;
}

static float dot_row(const ox_kv *kv, const float *q, const uint8_t *k) {
    switch (kv->type) {
    case OX_KV_F16: return ox_dot_f16(q, (const ox_f16 *)k, kv->hd);
    case OX_KV_Q8_0: return ox_dot_q8_0(q, k, kv->hd);
    default: return ox_dot_f32(q, (const float *)k, kv->hd);
    }
}

static void axpy_row(const ox_kv *kv, float *out, float a, const uint8_t *v) {
    switch (kv->type) {
    case OX_KV_F16: ox_axpy_f16(out, a, (const ox_f16 *)v, kv->hd); break;
    case OX_KV_Q8_0: ox_axpy_q8_0(out, a, v, kv->hd); break;
    default: ox_axpy(out, a, (const float *)v, kv->hd);
    }
}

void ox_kv_attend(const ox_kv *kv, int g, const float *q, int lo, int hi, float *scores, float *out) {
    size_t off = (size_t)g * kv->head_bytes;
    for (int j = lo; j <= hi; j++) scores[j - lo] = dot_row(kv, q, kv->k + row_of(kv, j) * kv->row_bytes + off);
    ox_softmax(scores, hi - lo + 1);
    memset(out, 0, (size_t)kv->hd * sizeof(float));
    for (int j = lo; j <= hi; j++) axpy_row(kv, out, scores[j - lo], kv->v + row_of(kv, j) * kv->row_bytes + off);
}
