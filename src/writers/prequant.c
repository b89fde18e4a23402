/* prequant.c — see prequant.h. Tensors are streamed: each output tensor is produced chunk by
 * chunk of rows at write time (the fill callback), so nothing holds a whole model. A quantized
 * tensor is quantized twice (once for its values, once for its scales): cheaper than keeping
 * the scales of a multi-GB table around, and the results are identical. */
#include "writers/prequant.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/safetensors.h"
#include "writers/safetensors_write.h"

#define CHUNK_BYTES ((size_t)8 << 20)

ox_type ox_prequant_type(const ox_tensor *t, int q4) {
    const char *n = t->name;
    size_t len = strlen(n);
    if (t->n_dims < 2 || t->ne[0] % OX_QK || strstr(n, "norm") || strstr(n, "ffn_gate_inp.") ||
        (len >= 6 && strcmp(n + len - 6, ".scale") == 0))
        return OX_F32;
    if (q4 && strcmp(n, "token_embd.weight") != 0 && strcmp(n, "per_layer_model_proj.weight") != 0) return OX_Q4_0;
    return OX_Q8_0;
}

typedef struct {
    const ox_tensor *src;
    ox_type type;
    int part; /* 0 values / plain, 1 scales */
} out_t;

typedef struct {
    out_t *out;
    uint8_t *raw, *blocks;
    float *f;
    size_t cap_raw, cap_f, cap_blocks;
    uint64_t done, total;
    void (*progress)(void *, uint64_t, uint64_t);
    void *ud;
} job;

static int grow(void **p, size_t *cap, size_t need, ox_err *err) {
    if (need <= *cap) return 0;
    void *n = realloc(*p, need);
    if (!n) return ox_errf(err, OX_E_NOMEM, "quantize: out of memory (%zu bytes)", need);
    *p = n, *cap = need;
    return 0;
}

static int fill(void *ud, int i, FILE *f, ox_err *err) {
    job *j = ud;
    const out_t *o = &j->out[i];
    const ox_tensor *t = o->src;
    uint64_t rows = ox_tensor_rows(t), n = t->ne[0], rb;
    if (ox_row_bytes(t->type, n, &rb, err)) return err ? err->code : OX_E_FORMAT;
    size_t per = (size_t)(CHUNK_BYTES / (n * sizeof(float) > rb ? n * sizeof(float) : rb));
    if (per < 1) per = 1;
    size_t bb = ox_type_block_bytes(o->type), nb = (size_t)n / OX_QK, qb = bb - sizeof(ox_f16);
    int rc;
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        size_t nr = rows - r0 < per ? (size_t)(rows - r0) : per;
        if ((rc = grow((void **)&j->raw, &j->cap_raw, nr * (size_t)rb, err)) ||
            (rc = grow((void **)&j->f, &j->cap_f, nr * (size_t)n * sizeof(float), err)))
            return rc;
        if ((rc = ox_tensor_read_rows(t, r0, nr, j->raw, err))) return rc;
        for (size_t r = 0; r < nr; r++) ox_dequantize_row(t->type, j->raw + r * rb, j->f + r * n, (size_t)n);
        if (o->type == OX_F32) {
            if (fwrite(j->f, sizeof(float), nr * n, f) != nr * n)
                return ox_errf(err, OX_E_IO, "quantize: write failed");
        } else {
            if ((rc = grow((void **)&j->blocks, &j->cap_blocks, nr * nb * bb, err))) return rc;
            if (ox_quantize_row(o->type, j->f, j->blocks, nr * (size_t)n))
                return ox_errf(err, OX_E_UNSUPPORTED, "quantize: %s: quantizer unavailable", t->name);
            /* keep only this part of each block, compacted in place */
            uint8_t *p = j->blocks;
            size_t part = o->part ? sizeof(ox_f16) : qb, skip = o->part ? 0 : sizeof(ox_f16);
            for (size_t k = 0; k < nr * nb; k++) memmove(p + k * part, j->blocks + k * bb + skip, part);
            if (fwrite(p, part, nr * nb, f) != nr * nb) return ox_errf(err, OX_E_IO, "quantize: write failed");
        }
        if (o->part == 0) {
            j->done += nr * rb;
            if (j->progress) j->progress(j->ud, j->done, j->total);
        }
    }
    return 0;
}

/* The config as JSON, checked to read back to the same per-layer table. */
static int config_json(const ox_config *c, ox_strbuf *sb, ox_err *err) {
    if (ox_config_to_json(c, sb)) return ox_errf(err, OX_E_NOMEM, "quantize: out of memory");
    ox_config *back = malloc(sizeof *back);
    if (!back) return ox_errf(err, OX_E_NOMEM, "quantize: out of memory");
    ox_json *j = ox_json_parse(sb->s, sb->len, "oxinfer_config", err);
    int rc = j ? ox_config_from_json(j, back, "oxinfer_config", err) : OX_E_FORMAT;
    if (!rc && memcmp(back->layers, c->layers, sizeof c->layers) != 0)
        rc = ox_errf(err, OX_E_CONFIG, "quantize: the model's per-layer config cannot be written as config.json keys");
    ox_json_free(j);
    free(back);
    return rc;
}

int ox_prequant_write(const ox_model_files *mf, const char *path, const char *quant,
                      void (*progress)(void *ud, uint64_t done, uint64_t total), void *ud, ox_err *err) {
    int q4;
    if (strcmp(quant, "q8") == 0) q4 = 0;
    else if (strcmp(quant, "q4") == 0) q4 = 1;
    else return ox_errf(err, OX_E_RANGE, "quantize: --quant must be q8 or q4, not %s", quant);
    int n = ox_files_count(mf), rc = 0;
    job j;
    memset(&j, 0, sizeof j);
    j.progress = progress, j.ud = ud;
    j.out = calloc((size_t)n * 2 + 1, sizeof *j.out);
    ox_st_writer *w = ox_st_writer_new();
    ox_strbuf cfg = {0};
    if (!j.out || !w) {
        rc = ox_errf(err, OX_E_NOMEM, "quantize: out of memory");
        goto done;
    }
    if ((rc = config_json(ox_files_config(mf), &cfg, err)) || (rc = ox_st_w_meta(w, "oxinfer_quant", quant, err)) ||
        (rc = ox_st_w_meta(w, "oxinfer_config", cfg.s, err)) || (rc = ox_st_w_meta(w, "format", "pt", err)))
        goto done;
    int no = 0;
    char sname[600];
    for (int i = 0; i < n && !rc; i++) {
        const ox_tensor *t = ox_files_tensor(mf, i);
        ox_type ty = ox_prequant_type(t, q4);
        uint64_t shape[4], rb;
        int nd = t->n_dims;
        for (int d = 0; d < nd; d++) shape[d] = t->ne[nd - 1 - d];
        if ((rc = ox_row_bytes(t->type, t->ne[0], &rb, err))) break;
        j.total += ox_tensor_rows(t) * rb;
        if (ty == OX_F32) {
            j.out[no++] = (out_t){t, ty, 0};
            rc = ox_st_w_tensor(w, t->name, OX_ST_F32, nd, shape, NULL, err);
            continue;
        }
        shape[nd - 1] = ty == OX_Q4_0 ? t->ne[0] / 2 : t->ne[0];
        j.out[no++] = (out_t){t, ty, 0};
        if ((rc = ox_st_w_tensor(w, t->name, ty == OX_Q4_0 ? OX_ST_U8 : OX_ST_I8, nd, shape, NULL, err))) break;
        shape[nd - 1] = t->ne[0] / OX_QK;
        snprintf(sname, sizeof sname, "%s.scales", t->name);
        j.out[no++] = (out_t){t, ty, 1};
        rc = ox_st_w_tensor(w, sname, OX_ST_F16, nd, shape, NULL, err);
    }
    if (!rc) rc = ox_st_w_write(w, path, fill, &j, err);
done:
    ox_sb_free(&cfg);
    ox_st_writer_free(w);
    free(j.out);
    free(j.raw);
    free(j.f);
    free(j.blocks);
    return rc;
}
