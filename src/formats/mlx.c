/* mlx.c — see mlx.h. */
#include "formats/mlx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ox_mlx_config_free(ox_mlx_config *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->module[i]);
    free(c->module);
    free(c->q);
    memset(c, 0, sizeof *c);
}

/* {"group_size": G, "bits": B[, "mode": "affine"]} -> *q; `what` names it in messages. */
static int parse_params(const ox_json *o, const char *fname, const char *what, ox_mlx_q *q, ox_err *err) {
    int64_t bits, group;
    if (!ox_json_int(ox_json_get(o, "bits"), &bits) || !ox_json_int(ox_json_get(o, "group_size"), &group))
        return ox_errf(err, OX_E_CONFIG, "%s: %s: needs integer bits and group_size", fname, what);
    const ox_json *mode = ox_json_get(o, "mode");
    if (mode && (!ox_json_str(mode) || strcmp(ox_json_str(mode), "affine") != 0))
        return ox_errf(err, OX_E_UNSUPPORTED, "%s: %s: quantization mode %s is not supported (affine only)", fname,
                       what, ox_json_str(mode) ? ox_json_str(mode) : "(not a string)");
    if (bits != 4 && bits != 8)
        return ox_errf(err, OX_E_CONFIG, "%s: %s: bits %lld is not supported (4 or 8)", fname, what, (long long)bits);
    if (group != 32 && group != 64)
        return ox_errf(err, OX_E_CONFIG, "%s: %s: group_size %lld is not supported (32 or 64)", fname, what,
                       (long long)group);
    q->bits = (int)bits, q->group = (int)group;
    return 0;
}

static const ox_json *find_block(const ox_json *root, const char **key) {
    const ox_json *b = ox_json_get(root, "quantization");
    *key = "quantization";
    if (ox_json_type(b) == OX_JSON_OBJECT) return b;
    b = ox_json_get(root, "quantization_config"); /* HF's key: other methods (quant_method) are not MLX's */
    *key = "quantization_config";
    if (ox_json_type(b) == OX_JSON_OBJECT && ox_json_get(b, "bits") && ox_json_get(b, "group_size") &&
        !ox_json_get(b, "quant_method"))
        return b;
    return NULL;
}

int ox_mlx_config_parse(const ox_json *root, const char *fname, ox_mlx_config *out, ox_err *err) {
    memset(out, 0, sizeof *out);
    const char *key;
    const ox_json *blk = find_block(root, &key);
    if (!blk) {
        if (ox_json_get(root, "quantization") && ox_json_type(ox_json_get(root, "quantization")) != OX_JSON_NULL)
            return ox_errf(err, OX_E_CONFIG, "%s: quantization is not an object", fname);
        return 0;
    }
    int rc = parse_params(blk, fname, key, &out->dflt, err);
    size_t n = ox_json_len(blk);
    if (!rc && (!(out->module = calloc(n + 1, sizeof *out->module)) || !(out->q = calloc(n + 1, sizeof *out->q))))
        rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname);
    char what[320];
    for (size_t i = 0; i < n && !rc; i++) {
        const ox_json *m = ox_json_at(blk, i);
        const char *k = ox_json_key(m);
        if (!strcmp(k, "bits") || !strcmp(k, "group_size") || !strcmp(k, "mode")) continue;
        snprintf(what, sizeof what, "%s.%.200s", key, k);
        ox_mlx_q q = {0, 0};
        if (ox_json_type(m) == OX_JSON_BOOL) q = ox_json_bool(m, 0) ? out->dflt : q;
        else if (ox_json_type(m) == OX_JSON_OBJECT) rc = parse_params(m, fname, what, &q, err);
        else rc = ox_errf(err, OX_E_CONFIG, "%s: %s: expected an object or a boolean", fname, what);
        if (rc) break;
        if (!(out->module[out->n] = strdup(k))) {
            rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname);
            break;
        }
        out->q[out->n++] = q;
    }
    if (rc) ox_mlx_config_free(out);
    return rc;
}

ox_mlx_q ox_mlx_config_for(const ox_mlx_config *c, const char *module) {
    for (int i = c->n; i-- > 0;) /* the last of duplicate keys, as ox_json_get */
        if (strcmp(c->module[i], module) == 0) return c->q[i];
    return c->dflt;
}

ox_type ox_mlx_type(int bits) { return bits == 4 ? OX_Q4_1 : OX_Q8_A; }

static void dims_str(char *s, size_t cap, const ox_st_tensor *t) {
    size_t o = (size_t)snprintf(s, cap, "[");
    for (int i = 0; i < t->n_dims && o < cap; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
    if (o < cap) snprintf(s + o, cap - o, "]");
}

int ox_mlx_check(const char *fname, const ox_st_tensor *w, const ox_st_tensor *s, const ox_st_tensor *b, ox_mlx_q q,
                 uint64_t *cols, ox_err *err) {
    if (w->dtype != OX_ST_U32)
        return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s: packed values must be U32, not %s", fname, w->name,
                       ox_st_dtype_name(w->dtype));
    if (s->dtype != OX_ST_BF16 && s->dtype != OX_ST_F16 && s->dtype != OX_ST_F32)
        return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s: scales must be BF16, F16 or F32, not %s", fname, s->name,
                       ox_st_dtype_name(s->dtype));
    if (b->dtype != s->dtype)
        return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s: biases are %s, scales %s", fname, b->name,
                       ox_st_dtype_name(b->dtype), ox_st_dtype_name(s->dtype));
    int nd = w->n_dims;
    char ws[128], ss[128];
    dims_str(ws, sizeof ws, w);
    dims_str(ss, sizeof ss, s);
    if (nd < 1 || nd > 4 || s->n_dims != nd || b->n_dims != nd)
        return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s: shape %s, scales %s: ranks 1..4 that agree expected",
                       fname, w->name, ws, ss);
    int same = 1;
    for (int d = 0; d < nd; d++) same &= b->shape[d] == s->shape[d] && (d == nd - 1 || s->shape[d] == w->shape[d]);
    if (!same)
        return ox_errf(err, OX_E_FORMAT, "%s: MLX tensor %s: shape %s disagrees with its scales/biases %s", fname,
                       w->name, ws, ss);
    uint64_t packed = w->shape[nd - 1], groups = s->shape[nd - 1], c = groups * (uint64_t)q.group;
    if (groups > UINT64_MAX / 64 || packed * 32 != c * (uint64_t)q.bits || c == 0)
        return ox_errf(err, OX_E_FORMAT,
                       "%s: MLX tensor %s: %llu packed words per row and %llu groups do not fit bits %d, group_size %d "
                       "(the config's quantization for it)",
                       fname, w->name, (unsigned long long)packed, (unsigned long long)groups, q.bits, q.group);
    *cols = c;
    return 0;
}

float ox_mlx_value(ox_st_dtype sdt, const void *p, uint64_t i) {
    uint16_t h;
    float f;
    switch (sdt) {
    case OX_ST_BF16: memcpy(&h, (const uint8_t *)p + 2 * i, 2); return ox_bf16_to_f32(h);
    case OX_ST_F16: memcpy(&h, (const uint8_t *)p + 2 * i, 2); return ox_f16_to_f32(h);
    default: memcpy(&f, (const uint8_t *)p + 4 * i, 4); return f;
    }
}

/* f as an f16 that converts back to exactly f, or -1. */
static int exact_f16(float f, ox_f16 *h) {
    *h = ox_f32_to_f16(f);
    return ox_f16_to_f32(*h) == f ? 0 : -1;
}

int ox_mlx_repack(ox_mlx_q q, ox_st_dtype sdt, const uint32_t *w, const void *scales, const void *biases,
                  uint64_t nrows, uint64_t cols, void *dst, const char *name, uint64_t row0, ox_err *err) {
    const uint64_t nb = cols / OX_QK, per_group = (uint64_t)q.group / OX_QK, words = OX_QK * (uint64_t)q.bits / 32;
    const uint32_t mask = q.bits == 4 ? 0xF : 0xFF;
    const int per_word = 32 / q.bits;
    uint8_t v[OX_QK];
    for (uint64_t r = 0; r < nrows; r++)
        for (uint64_t k = 0; k < nb; k++) {
            uint64_t blk = r * nb + k, g = blk / per_group;
            const uint32_t *src = w + blk * words;
            int any = 0;
            for (int j = 0; j < OX_QK; j++) {
                v[j] = (uint8_t)(src[j / per_word] >> (q.bits * (j % per_word)) & mask);
                any |= v[j];
            }
            float s = ox_mlx_value(sdt, scales, g), b = ox_mlx_value(sdt, biases, g);
            ox_f16 d16, m16;
            int bad_d = exact_f16(s, &d16) && any, bad_m = exact_f16(b, &m16);
            if (bad_d || bad_m)
                return ox_errf(err, OX_E_UNSUPPORTED,
                               "MLX tensor %s: row %llu group %llu: %s %.9g is not exact in f16 (repacking needs it; "
                               "such checkpoints are not supported yet)",
                               name, (unsigned long long)(row0 + r), (unsigned long long)(k / per_group),
                               bad_d ? "scale" : "bias", bad_d ? s : b);
            if (!any) d16 = 0; /* any d gives the same values; keep it finite */
            if (q.bits == 4) {
                ox_block_q4_1 *o = (ox_block_q4_1 *)dst + blk;
                o->d = d16, o->m = m16;
                for (int j = 0; j < 16; j++) o->qs[j] = (uint8_t)(v[j] | v[j + 16] << 4);
            } else {
                ox_block_q8_a *o = (ox_block_q8_a *)dst + blk;
                o->d = d16, o->m = m16;
                memcpy(o->qs, v, OX_QK);
            }
        }
    return 0;
}
