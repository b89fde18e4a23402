/* mlx_write.c — see mlx_write.h. Tensors are streamed in chunks of rows through the writer's
 * fill callback; a quantized tensor is quantized once per part written (values, scales,
 * biases, reference), which gives the same bytes each time. */
#include "writers/mlx_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "kernels/quant.h"
#include "writers/safetensors_write.h"

#define CHUNK_VALUES ((size_t)1 << 20) /* f32 values per chunk of rows */

static void put_sb(ox_st_dtype sdt, void *p, uint64_t i, float f) {
    uint16_t h = sdt == OX_ST_BF16 ? ox_f32_to_bf16(f) : ox_f32_to_f16(f);
    memcpy((uint8_t *)p + 2 * i, &h, 2);
}

void ox_mlx_quantize_row(ox_mlx_q q, ox_st_dtype sdt, const float *x, uint64_t cols, uint32_t *w, void *scales,
                         void *biases) {
    const int levels = (1 << q.bits) - 1, per_word = 32 / q.bits;
    memset(w, 0, (size_t)(cols * (uint64_t)q.bits / 8));
    for (uint64_t g = 0; g < cols / (uint64_t)q.group; g++) {
        const float *v = x + g * (uint64_t)q.group;
        float mn = v[0], mx = v[0];
        for (int j = 1; j < q.group; j++) mn = v[j] < mn ? v[j] : mn, mx = v[j] > mx ? v[j] : mx;
        int min_edge = fabsf(mn) > fabsf(mx);
        float scale = (mx - mn) / (float)levels, edge = min_edge ? mn : mx;
        if (scale < 1e-7f) scale = 1e-7f;
        if (!min_edge) scale = -scale;
        float q0 = roundf(edge / scale);
        if (q0 != 0) scale = edge / q0;
        put_sb(sdt, scales, g, scale);
        put_sb(sdt, biases, g, q0 == 0 ? 0 : edge);
        float s = ox_mlx_value(sdt, scales, g), b = ox_mlx_value(sdt, biases, g);
        for (int j = 0; j < q.group; j++) {
            float r = roundf((v[j] - b) / s);
            uint32_t u = (uint32_t)(r < 0 ? 0 : r > (float)levels ? (float)levels : r);
            uint64_t k = g * (uint64_t)q.group + (uint64_t)j;
            w[k / (uint64_t)per_word] |= u << (q.bits * (int)(k % (uint64_t)per_word));
        }
    }
}

void ox_mlx_dequantize_row(ox_mlx_q q, ox_st_dtype sdt, const uint32_t *w, const void *scales, const void *biases,
                           uint64_t cols, float *y) {
    const int per_word = 32 / q.bits;
    const uint32_t mask = (1u << q.bits) - 1;
    for (uint64_t k = 0; k < cols; k++) {
        uint32_t u = w[k / (uint64_t)per_word] >> (q.bits * (int)(k % (uint64_t)per_word)) & mask;
        uint64_t g = k / (uint64_t)q.group;
        y[k] = ox_mlx_value(sdt, scales, g) * (float)u + ox_mlx_value(sdt, biases, g);
    }
}

/* ---- the checkpoint ---- */

enum part { P_COPY, P_VALUES, P_SCALES, P_BIASES, P_REF };

typedef struct {
    int file;
    const ox_st_tensor *src;
    enum part part;
    ox_mlx_q q;
} out_t;

typedef struct {
    out_t *out;
    ox_st_dtype sdt;
    uint8_t *raw, *packed;
    float *f;
} job;

static int is_quantized(const ox_st_tensor *t, ox_mlx_q q) {
    size_t n = strlen(t->name);
    return t->n_dims == 2 && n > 7 && strcmp(t->name + n - 7, ".weight") == 0 && t->shape[1] > 0 &&
           t->shape[1] % (uint64_t)q.group == 0 &&
           (t->dtype == OX_ST_F32 || t->dtype == OX_ST_F16 || t->dtype == OX_ST_BF16);
}

static ox_type float_type(ox_st_dtype d) { return d == OX_ST_F32 ? OX_F32 : d == OX_ST_F16 ? OX_F16 : OX_BF16; }

static int put(FILE *f, const void *p, size_t n, ox_err *err) {
    return fwrite(p, 1, n, f) == n ? 0 : ox_errf(err, OX_E_IO, "mlx: write failed");
}

/* Rows of the source tensor, chunk by chunk, as the part asks. */
static int fill(void *ud, int i, FILE *f, ox_err *err) {
    job *j = ud;
    const out_t *o = &j->out[i];
    const ox_st_tensor *t = o->src;
    if (o->part == P_COPY) {
        for (uint64_t off = 0; off < t->nbytes; off += CHUNK_VALUES) {
            size_t n = (size_t)(t->nbytes - off < CHUNK_VALUES ? t->nbytes - off : CHUNK_VALUES);
            int rc = ox_host_read(o->file, t->offset + off, n, j->raw, err);
            if (rc || (rc = put(f, j->raw, n, err))) return rc;
        }
        return 0;
    }
    uint64_t rows = t->shape[0], cols = t->shape[1], es = ox_st_dtype_size(t->dtype);
    uint64_t per = CHUNK_VALUES / cols ? CHUNK_VALUES / cols : 1;
    size_t wb = (size_t)(cols * (uint64_t)o->q.bits / 8), gb = (size_t)(cols / (uint64_t)o->q.group * 2);
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        uint64_t nr = rows - r0 < per ? rows - r0 : per;
        int rc = ox_host_read(o->file, t->offset + r0 * cols * es, (size_t)(nr * cols * es), j->raw, err);
        if (rc) return rc;
        for (uint64_t r = 0; r < nr; r++) {
            float *x = j->f + r * cols;
            uint8_t *pw = j->packed, *ps = pw + wb, *pb = ps + gb;
            ox_dequantize_row(float_type(t->dtype), j->raw + r * cols * es, x, (size_t)cols);
            ox_mlx_quantize_row(o->q, j->sdt, x, cols, (uint32_t *)pw, ps, pb);
            switch (o->part) {
            case P_VALUES: rc = put(f, pw, wb, err); break;
            case P_SCALES: rc = put(f, ps, gb, err); break;
            case P_BIASES: rc = put(f, pb, gb, err); break;
            default:
                ox_mlx_dequantize_row(o->q, j->sdt, (const uint32_t *)pw, ps, pb, cols, x);
                rc = put(f, x, (size_t)cols * 4, err);
            }
            if (rc) return rc;
        }
    }
    return 0;
}

static const char *base_of(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int ends(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static int read_text(const char *path, ox_strbuf *b, ox_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return ox_errf(err, OX_E_IO, "mlx: cannot open %s", path);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) ox_sb_append(b, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return ox_errf(err, OX_E_IO, "mlx: read failed: %s", path);
    return b->oom ? ox_errf(err, OX_E_NOMEM, "mlx: out of memory reading %s", path) : 0;
}

static int write_text(const char *dir, const char *name, const char *s, size_t n, ox_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return ox_errf(err, OX_E_IO, "mlx: cannot create %s", path);
    int ok = fwrite(s, 1, n, f) == n;
    ok &= fclose(f) == 0;
    return ok ? 0 : ox_errf(err, OX_E_IO, "mlx: write failed: %s", path);
}

static void params_json(ox_strbuf *b, ox_mlx_q q) {
    ox_sb_printf(b, "{\"group_size\": %d, \"bits\": %d, \"mode\": \"affine\"}", q.group, q.bits);
}

/* config.json with the quantization block (twice, as mlx-lm writes it) before its last '}'. */
static int quantized_config(const ox_strbuf *src, const ox_strbuf *overrides, const ox_mlx_write_opts *o,
                            ox_strbuf *out, ox_err *err) {
    const char *end = src->len ? strrchr(src->s, '}') : NULL;
    if (!end) return ox_errf(err, OX_E_FORMAT, "mlx: config.json is not a JSON object");
    ox_sb_append(out, src->s, (size_t)(end - src->s));
    for (int k = 0; k < 2; k++) {
        ox_sb_printf(out, ",\n  \"%s\": ", k ? "quantization_config" : "quantization");
        params_json(out, o->q);
        if (overrides->len) { /* insert the per-module entries before the block's '}' */
            out->len--;
            ox_sb_append(out, overrides->s, overrides->len);
            ox_sb_append(out, "}", 1);
        }
    }
    ox_sb_append(out, "\n", 1);
    ox_sb_append(out, end, src->len - (size_t)(end - src->s));
    return out->oom ? ox_errf(err, OX_E_NOMEM, "mlx: out of memory") : 0;
}

int ox_mlx_write(const char *const *src, int n_src, const char *out_dir, const char *ref_dir,
                 const ox_mlx_write_opts *o, ox_err *err) {
    if ((o->q.bits != 4 && o->q.bits != 8) || (o->q.group != 32 && o->q.group != 64) ||
        (o->override_suffix && (o->override_q.bits != 4 && o->override_q.bits != 8)) ||
        (o->override_suffix && o->override_q.group != 32 && o->override_q.group != 64) ||
        (o->scale_dtype != OX_ST_BF16 && o->scale_dtype != OX_ST_F16))
        return ox_errf(err, OX_E_RANGE, "mlx: bits must be 4 or 8, group 32 or 64, scales BF16 or F16");
    int *files = calloc((size_t)n_src + 1, sizeof *files), n_files = 0, n_st = 0, rc = 0;
    ox_safetensors **st = calloc((size_t)n_src + 1, sizeof *st);
    ox_strbuf cfg = {0}, ov = {0}, qcfg = {0}, other = {0};
    ox_st_writer *w[2] = {ox_st_writer_new(), ref_dir ? ox_st_writer_new() : NULL};
    job jobs[2] = {{0}, {0}};
    size_t max_cols = 0;
    if (!files || !st || !w[0] || (ref_dir && !w[1])) {
        rc = ox_errf(err, OX_E_NOMEM, "mlx: out of memory");
        goto done;
    }
    for (int i = 0; i < n_src && !rc; i++) {
        const char *b = base_of(src[i]);
        if (ends(b, ".safetensors")) {
            if ((files[n_files] = ox_host_open_path(src[i], err)) < 0) {
                rc = err ? err->code : OX_E_IO;
                break;
            }
            n_files++;
            if (!(st[n_st] = ox_st_open(files[n_files - 1], err))) rc = err ? err->code : OX_E_FORMAT;
            else n_st++;
        } else if (!strcmp(b, "config.json")) {
            rc = read_text(src[i], &cfg, err);
        } else if (!ends(b, ".safetensors.index.json")) { /* tokenizer files and the like: copied */
            other.len = 0;
            if (!(rc = read_text(src[i], &other, err))) rc = write_text(out_dir, b, other.s, other.len, err);
            if (!rc && ref_dir) rc = write_text(ref_dir, b, other.s, other.len, err);
        }
    }
    if (!rc && !cfg.len) rc = ox_errf(err, OX_E_MISSING, "mlx: config.json is not among the source files");
    for (int k = 0; k < 2; k++) {
        jobs[k].out = calloc(4 * (size_t)1024 * (size_t)(n_st + 1), sizeof *jobs[k].out);
        jobs[k].sdt = o->scale_dtype;
        if (!jobs[k].out && !rc) rc = ox_errf(err, OX_E_NOMEM, "mlx: out of memory");
    }
    int no[2] = {0, 0};
    char name[600];
    for (int s = 0; s < n_st && !rc; s++)
        for (int i = 0; i < st[s]->n_tensors && !rc; i++) {
            const ox_st_tensor *t = &st[s]->tensors[i];
            char module[512];
            snprintf(module, sizeof module, "%.*s", (int)(strlen(t->name) > 7 ? strlen(t->name) - 7 : 0), t->name);
            ox_mlx_q q = o->override_suffix && ends(module, o->override_suffix) ? o->override_q : o->q;
            if (no[0] + 3 >= 4 * 1024 * (n_st + 1)) {
                rc = ox_errf(err, OX_E_RANGE, "mlx: too many tensors");
                break;
            }
            if (!is_quantized(t, q)) {
                for (int k = 0; k < 1 + (ref_dir != NULL) && !rc; k++) {
                    jobs[k].out[no[k]++] = (out_t){files[s], t, P_COPY, q};
                    rc = ox_st_w_tensor(w[k], t->name, t->dtype, t->n_dims, t->shape, NULL, err);
                }
                continue;
            }
            if (t->shape[1] > max_cols) max_cols = (size_t)t->shape[1];
            if (q.bits != o->q.bits || q.group != o->q.group) {
                ox_sb_printf(&ov, ",\n    ");
                ox_sb_json_str(&ov, module, strlen(module));
                ox_sb_printf(&ov, ": ");
                params_json(&ov, q);
            }
            uint64_t shape[2] = {t->shape[0], t->shape[1] * (uint64_t)q.bits / 32};
            static const char *const suffix[3] = {"weight", "scales", "biases"};
            for (int p = 0; p < 3 && !rc; p++) {
                snprintf(name, sizeof name, "%s.%s", module, suffix[p]);
                jobs[0].out[no[0]++] = (out_t){files[s], t, (enum part)(P_VALUES + p), q};
                rc = ox_st_w_tensor(w[0], name, p ? o->scale_dtype : OX_ST_U32, 2, shape, NULL, err);
                shape[1] = t->shape[1] / (uint64_t)q.group;
            }
            if (ref_dir && !rc) {
                jobs[1].out[no[1]++] = (out_t){files[s], t, P_REF, q};
                rc = ox_st_w_tensor(w[1], t->name, OX_ST_F32, 2, t->shape, NULL, err);
            }
        }
    for (int k = 0; k < 2 && !rc; k++) { /* a chunk: at most max(CHUNK_VALUES, one row) values */
        size_t vals = max_cols > CHUNK_VALUES ? max_cols : CHUNK_VALUES;
        jobs[k].raw = malloc(vals * 4);
        jobs[k].f = malloc(vals * sizeof(float));
        jobs[k].packed = malloc(3 * (max_cols ? max_cols : 1));
        if (!jobs[k].raw || !jobs[k].f || !jobs[k].packed) rc = ox_errf(err, OX_E_NOMEM, "mlx: out of memory");
    }
    char path[4096];
    if (!rc) rc = ox_st_w_meta(w[0], "format", "mlx", err);
    if (!rc)
        snprintf(path, sizeof path, "%s/model.safetensors", out_dir), rc = ox_st_w_write(w[0], path, fill, &jobs[0], err);
    if (!rc && ref_dir) rc = ox_st_w_meta(w[1], "format", "pt", err);
    if (!rc && ref_dir)
        snprintf(path, sizeof path, "%s/model.safetensors", ref_dir), rc = ox_st_w_write(w[1], path, fill, &jobs[1], err);
    if (!rc) rc = quantized_config(&cfg, &ov, o, &qcfg, err);
    if (!rc) rc = write_text(out_dir, "config.json", qcfg.s, qcfg.len, err);
    if (!rc && ref_dir) rc = write_text(ref_dir, "config.json", cfg.s, cfg.len, err);
done:
    for (int k = 0; k < 2; k++) {
        ox_st_writer_free(w[k]);
        free(jobs[k].out), free(jobs[k].raw), free(jobs[k].f), free(jobs[k].packed);
    }
    for (int s = 0; s < n_st; s++) ox_st_free(st[s]);
    for (int i = 0; i < n_files; i++) ox_host_close(files[i]);
    ox_sb_free(&cfg), ox_sb_free(&ov), ox_sb_free(&qcfg), ox_sb_free(&other);
    free(files);
    free(st);
    return rc;
}
