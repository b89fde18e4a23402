/* safetensors_write.c — see safetensors_write.h. */
#include "writers/safetensors_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

typedef struct {
    char *name;
    ox_st_dtype dtype;
    int n_dims;
    uint64_t shape[OX_ST_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
} wtensor;

struct ox_st_writer {
    wtensor *t;
    int n_t, cap_t;
    char **mk, **mv;
    int n_meta;
};

ox_st_writer *ox_st_writer_new(void) { return calloc(1, sizeof(ox_st_writer)); }

void ox_st_writer_free(ox_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n_t; i++) free(w->t[i].name);
    for (int i = 0; i < w->n_meta; i++) free(w->mk[i]), free(w->mv[i]);
    free(w->t);
    free(w->mk);
    free(w->mv);
    free(w);
}

int ox_st_w_meta(ox_st_writer *w, const char *key, const char *value, ox_err *err) {
    for (int i = 0; i < w->n_meta; i++)
        if (strcmp(w->mk[i], key) == 0)
            return ox_errf(err, OX_E_RANGE, "safetensors writer: duplicate metadata key %s", key);
    char **mk = realloc(w->mk, (size_t)(w->n_meta + 1) * sizeof *mk);
    if (mk) w->mk = mk;
    char **mv = mk ? realloc(w->mv, (size_t)(w->n_meta + 1) * sizeof *mv) : NULL;
    if (mv) w->mv = mv;
    if (!mk || !mv) return ox_errf(err, OX_E_NOMEM, "safetensors writer: out of memory");
    mk[w->n_meta] = strdup(key);
    mv[w->n_meta] = strdup(value);
    w->n_meta++;
    if (!mk[w->n_meta - 1] || !mv[w->n_meta - 1]) return ox_errf(err, OX_E_NOMEM, "safetensors writer: out of memory");
    return 0;
}

int ox_st_w_tensor(ox_st_writer *w, const char *name, ox_st_dtype dtype, int n_dims, const uint64_t *shape,
                   const void *data, ox_err *err) {
    if ((unsigned)dtype >= OX_ST_DTYPE_COUNT || n_dims < 0 || n_dims > OX_ST_MAX_DIMS || strcmp(name, "__metadata__") == 0)
        return ox_errf(err, OX_E_RANGE, "safetensors writer: tensor %s: bad dtype, rank or name", name);
    for (int i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return ox_errf(err, OX_E_RANGE, "safetensors writer: duplicate tensor %s", name);
    wtensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype, t.n_dims = n_dims, t.data = data;
    t.nbytes = ox_st_dtype_size(dtype);
    for (int i = 0; i < n_dims; i++) {
        if (shape[i] && t.nbytes > UINT64_MAX / shape[i])
            return ox_errf(err, OX_E_RANGE, "safetensors writer: tensor %s too big", name);
        t.shape[i] = shape[i];
        t.nbytes *= shape[i];
    }
    if (w->n_t == w->cap_t) {
        int cap = w->cap_t ? w->cap_t * 2 : 64;
        wtensor *n = realloc(w->t, (size_t)cap * sizeof *n);
        if (!n) return ox_errf(err, OX_E_NOMEM, "safetensors writer: out of memory");
        w->t = n, w->cap_t = cap;
    }
    if (!(t.name = strdup(name))) return ox_errf(err, OX_E_NOMEM, "safetensors writer: out of memory");
    w->t[w->n_t++] = t;
    return 0;
}

int ox_st_w_write(ox_st_writer *w, const char *path, ox_st_fill_fn fill, void *ud, ox_err *err) {
    ox_strbuf h = {0};
    ox_sb_append(&h, "{", 1);
    if (w->n_meta) {
        ox_sb_append(&h, "\"__metadata__\":{", 16);
        for (int i = 0; i < w->n_meta; i++) {
            if (i) ox_sb_append(&h, ",", 1);
            ox_sb_json_str(&h, w->mk[i], strlen(w->mk[i]));
            ox_sb_append(&h, ":", 1);
            ox_sb_json_str(&h, w->mv[i], strlen(w->mv[i]));
        }
        ox_sb_append(&h, "}", 1);
    }
    uint64_t off = 0;
    for (int i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (i || w->n_meta) ox_sb_append(&h, ",", 1);
        ox_sb_json_str(&h, t->name, strlen(t->name));
        ox_sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", ox_st_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++) ox_sb_printf(&h, d ? ",%llu" : "%llu", (unsigned long long)t->shape[d]);
        ox_sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    ox_sb_append(&h, "}", 1);
    while (h.len % 8) ox_sb_append(&h, " ", 1); /* data section 8-byte aligned, as HF writes it */
    if (h.oom) {
        ox_sb_free(&h);
        return ox_errf(err, OX_E_NOMEM, "%s: out of memory writing the header", path);
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        ox_sb_free(&h);
        return ox_errf(err, OX_E_IO, "%s: cannot create", path);
    }
    uint64_t hlen = h.len;
    int rc = 0;
    if (fwrite(&hlen, 8, 1, f) != 1 || fwrite(h.s, 1, h.len, f) != h.len)
        rc = ox_errf(err, OX_E_IO, "%s: write failed", path);
    ox_sb_free(&h);
    for (int i = 0; !rc && i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        long long before = ftello(f);
        if (t->data) {
            if (fwrite(t->data, 1, (size_t)t->nbytes, f) != t->nbytes)
                rc = ox_errf(err, OX_E_IO, "%s: write failed", path);
        } else if (!fill) {
            rc = ox_errf(err, OX_E_STATE, "%s: tensor %s has no data and no fill callback", path, t->name);
        } else if ((rc = fill(ud, i, f, err)) == 0 && before >= 0 && ftello(f) - before != (long long)t->nbytes) {
            rc = ox_errf(err, OX_E_STATE, "%s: fill callback wrote %lld bytes for tensor %s, expected %llu", path,
                         ftello(f) - before, t->name, (unsigned long long)t->nbytes);
        }
    }
    if (fclose(f) != 0 && !rc) rc = ox_errf(err, OX_E_IO, "%s: write failed", path);
    return rc;
}
