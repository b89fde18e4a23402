/* gguf_write.c — see gguf_write.h. The layout is the reader's (formats/gguf.c). */
#include "writers/gguf_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

typedef struct {
    char *name;
    ox_type type;
    int n_dims;
    uint64_t ne[OX_GGUF_MAX_DIMS];
    const void *data;
    uint64_t nbytes, offset;
} wtensor;

struct ox_gguf_writer {
    ox_strbuf kv; /* serialized key/value section */
    uint64_t n_kv;
    char **keys;
    wtensor *t;
    int n_t, cap_t;
    uint32_t alignment;
    ox_err err; /* first error of an add call, reported by the write */
};

ox_gguf_writer *ox_gguf_writer_new(void) {
    ox_gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = OX_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void ox_gguf_writer_free(ox_gguf_writer *w) {
    if (!w) return;
    ox_sb_free(&w->kv);
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    for (int i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->keys);
    free(w->t);
    free(w);
}

static int w_fail(ox_gguf_writer *w, int code, const char *what, const char *name) {
    if (!w->err.code) ox_errf(&w->err, code, "GGUF writer: %s %s", what, name);
    return code;
}

static void put(ox_gguf_writer *w, const void *p, size_t n) { ox_sb_append(&w->kv, p, n); }
static void put_u32(ox_gguf_writer *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(ox_gguf_writer *w, uint64_t v) { put(w, &v, 8); }
static void put_str(ox_gguf_writer *w, const char *s, uint64_t n) {
    put_u64(w, n);
    put(w, s, (size_t)n);
}

static int put_value(ox_gguf_writer *w, const ox_gguf_value *v, const char *key, int depth) {
    if ((unsigned)v->type >= OX_GGUF_TYPE_COUNT) return w_fail(w, OX_E_FORMAT, "bad value type for key", key);
    if (v->type == OX_GGUF_STRING) {
        put_str(w, v->v.str.s, v->v.str.len);
    } else if (v->type != OX_GGUF_ARRAY) {
        put(w, &v->v, ox_gguf_type_size(v->type));
    } else {
        ox_gguf_type et = v->v.arr.type;
        if ((unsigned)et >= OX_GGUF_TYPE_COUNT || depth >= OX_GGUF_MAX_ARRAY_DEPTH)
            return w_fail(w, OX_E_FORMAT, "bad array for key", key);
        put_u32(w, et);
        put_u64(w, v->v.arr.n);
        if (et == OX_GGUF_STRING) {
            const ox_gguf_str *s = v->v.arr.data;
            for (uint64_t i = 0; i < v->v.arr.n; i++) put_str(w, s[i].s, s[i].len);
        } else if (et == OX_GGUF_ARRAY) {
            const ox_gguf_value *a = v->v.arr.data;
            for (uint64_t i = 0; i < v->v.arr.n; i++) {
                if (a[i].type != OX_GGUF_ARRAY) return w_fail(w, OX_E_FORMAT, "nested non-array value for key", key);
                int rc = put_value(w, &a[i], key, depth + 1);
                if (rc) return rc;
            }
        } else {
            put(w, v->v.arr.data, (size_t)(v->v.arr.n * ox_gguf_type_size(et)));
        }
    }
    return w->kv.oom ? w_fail(w, OX_E_NOMEM, "out of memory at key", key) : 0;
}

int ox_gguf_w_value(ox_gguf_writer *w, const char *key, const ox_gguf_value *v) {
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0) return w_fail(w, OX_E_FORMAT, "duplicate metadata key", key);
    if (strcmp(key, "general.alignment") == 0) {
        if (v->type != OX_GGUF_U32 || !v->v.u32 || (v->v.u32 & (v->v.u32 - 1)))
            return w_fail(w, OX_E_FORMAT, "alignment must be a power-of-two u32:", key);
        w->alignment = v->v.u32;
    }
    char **keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    if (!keys) return w_fail(w, OX_E_NOMEM, "out of memory at key", key);
    w->keys = keys;
    if (!(keys[w->n_kv] = strdup(key))) return w_fail(w, OX_E_NOMEM, "out of memory at key", key);
    w->n_kv++;
    put_str(w, key, strlen(key));
    put_u32(w, v->type);
    return put_value(w, v, key, 0);
}

#define W_SCALAR(fn, T, tag, field)                                                                                    \
    int fn(ox_gguf_writer *w, const char *key, T x) {                                                                  \
        ox_gguf_value v;                                                                                               \
        memset(&v, 0, sizeof v);                                                                                       \
        v.type = tag;                                                                                                  \
        v.v.field = x;                                                                                                 \
        return ox_gguf_w_value(w, key, &v);                                                                            \
    }
W_SCALAR(ox_gguf_w_u32, uint32_t, OX_GGUF_U32, u32)
W_SCALAR(ox_gguf_w_i32, int32_t, OX_GGUF_I32, i32)
W_SCALAR(ox_gguf_w_u64, uint64_t, OX_GGUF_U64, u64)
W_SCALAR(ox_gguf_w_f32, float, OX_GGUF_F32, f32)

int ox_gguf_w_bool(ox_gguf_writer *w, const char *key, int x) {
    ox_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = OX_GGUF_BOOL;
    v.v.b = x ? 1 : 0;
    return ox_gguf_w_value(w, key, &v);
}

int ox_gguf_w_str(ox_gguf_writer *w, const char *key, const char *s) {
    ox_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = OX_GGUF_STRING;
    v.v.str.s = (char *)s;
    v.v.str.len = strlen(s);
    return ox_gguf_w_value(w, key, &v);
}

int ox_gguf_w_arr(ox_gguf_writer *w, const char *key, ox_gguf_type elem, const void *data, uint64_t n) {
    if ((unsigned)elem >= OX_GGUF_TYPE_COUNT || !ox_gguf_type_size(elem))
        return w_fail(w, OX_E_FORMAT, "numeric array with a non-numeric element type for key", key);
    ox_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = OX_GGUF_ARRAY;
    v.v.arr.type = elem, v.v.arr.n = n, v.v.arr.data = (void *)data;
    return ox_gguf_w_value(w, key, &v);
}

int ox_gguf_w_arr_str(ox_gguf_writer *w, const char *key, const char *const *s, uint64_t n) {
    ox_gguf_str *a = calloc(n ? (size_t)n : 1, sizeof *a);
    if (!a) return w_fail(w, OX_E_NOMEM, "out of memory at key", key);
    for (uint64_t i = 0; i < n; i++) a[i].s = (char *)s[i], a[i].len = strlen(s[i]);
    ox_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = OX_GGUF_ARRAY;
    v.v.arr.type = OX_GGUF_STRING, v.v.arr.n = n, v.v.arr.data = a;
    int rc = ox_gguf_w_value(w, key, &v);
    free(a);
    return rc;
}

int ox_gguf_w_alignment(ox_gguf_writer *w, uint32_t alignment) {
    return ox_gguf_w_u32(w, "general.alignment", alignment);
}

int ox_gguf_w_tensor(ox_gguf_writer *w, const char *name, ox_type type, int n_dims, const uint64_t *ne,
                     const void *data, ox_err *err) {
    if (n_dims < 1 || n_dims > OX_GGUF_MAX_DIMS)
        return ox_errf(err, OX_E_RANGE, "GGUF writer: tensor %s: %d dimensions", name, n_dims);
    if (strlen(name) >= OX_GGUF_MAX_NAME)
        return ox_errf(err, OX_E_RANGE, "GGUF writer: tensor name too long: %s", name);
    for (int i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) return ox_errf(err, OX_E_RANGE, "GGUF writer: duplicate tensor %s", name);
    wtensor t = {NULL, type, n_dims, {1, 1, 1, 1}, data, 0, 0};
    uint64_t rows = 1;
    for (int d = 0; d < n_dims; d++) {
        t.ne[d] = ne[d];
        if (d && ne[d] && rows > UINT64_MAX / ne[d])
            return ox_errf(err, OX_E_RANGE, "GGUF writer: tensor %s too big", name);
        if (d) rows *= ne[d];
    }
    uint64_t row;
    if (ox_row_bytes(type, ne[0], &row, err)) return ox_err_prefix(err, "GGUF writer: tensor %s", name);
    if (row && rows > UINT64_MAX / row) return ox_errf(err, OX_E_RANGE, "GGUF writer: tensor %s too big", name);
    t.nbytes = row * rows;
    if (w->n_t == w->cap_t) {
        int cap = w->cap_t ? w->cap_t * 2 : 64;
        wtensor *n = realloc(w->t, (size_t)cap * sizeof *n);
        if (!n) return ox_errf(err, OX_E_NOMEM, "GGUF writer: out of memory");
        w->t = n, w->cap_t = cap;
    }
    if (!(t.name = strdup(name))) return ox_errf(err, OX_E_NOMEM, "GGUF writer: out of memory");
    w->t[w->n_t++] = t;
    return 0;
}

static int write_pad(FILE *f, uint64_t n) {
    static const uint8_t zeros[64];
    while (n > 0) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        if (fwrite(zeros, 1, k, f) != k) return -1;
        n -= k;
    }
    return 0;
}

int ox_gguf_w_write_file(ox_gguf_writer *w, FILE *f, const char *fname, ox_gguf_fill_fn fill, void *ud, ox_err *err) {
    if (w->err.code) return ox_errf(err, w->err.code, "%s: %s", fname, w->err.msg);
    ox_strbuf h = {0};
    uint32_t hdr32[2] = {OX_GGUF_MAGIC, 3};
    uint64_t hdr64[2] = {(uint64_t)w->n_t, w->n_kv};
    ox_sb_append(&h, (const char *)hdr32, 8);
    ox_sb_append(&h, (const char *)hdr64, 16);
    ox_sb_append(&h, w->kv.s ? w->kv.s : "", w->kv.len);
    uint64_t off = 0, a = w->alignment;
    for (int i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        uint64_t n = strlen(t->name);
        uint32_t nd = (uint32_t)t->n_dims, ty = (uint32_t)t->type;
        ox_sb_append(&h, (const char *)&n, 8);
        ox_sb_append(&h, t->name, (size_t)n);
        ox_sb_append(&h, (const char *)&nd, 4);
        ox_sb_append(&h, (const char *)t->ne, 8 * nd);
        ox_sb_append(&h, (const char *)&ty, 4);
        t->offset = off;
        ox_sb_append(&h, (const char *)&t->offset, 8);
        off += (t->nbytes + a - 1) / a * a;
    }
    if (h.oom) {
        ox_sb_free(&h);
        return ox_errf(err, OX_E_NOMEM, "%s: out of memory writing the header", fname);
    }
    int rc = 0;
    uint64_t hpad = (h.len + a - 1) / a * a - h.len;
    if (fwrite(h.s, 1, h.len, f) != h.len || write_pad(f, hpad)) rc = ox_errf(err, OX_E_IO, "%s: write failed", fname);
    ox_sb_free(&h);
    for (int i = 0; !rc && i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        long long before = ftello(f);
        if (t->data) {
            if (fwrite(t->data, 1, (size_t)t->nbytes, f) != t->nbytes)
                rc = ox_errf(err, OX_E_IO, "%s: write failed", fname);
        } else if (!fill) {
            rc = ox_errf(err, OX_E_STATE, "%s: tensor %s has no data and no fill callback", fname, t->name);
        } else if ((rc = fill(ud, i, f, err)) == 0 && before >= 0 && ftello(f) - before != (long long)t->nbytes) {
            rc = ox_errf(err, OX_E_STATE, "%s: fill callback wrote %lld bytes for tensor %s, expected %llu", fname,
                         ftello(f) - before, t->name, (unsigned long long)t->nbytes);
        }
        if (!rc && write_pad(f, (t->nbytes + a - 1) / a * a - t->nbytes))
            rc = ox_errf(err, OX_E_IO, "%s: write failed", fname);
    }
    return rc;
}

int ox_gguf_w_write(ox_gguf_writer *w, const char *path, ox_gguf_fill_fn fill, void *ud, ox_err *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return ox_errf(err, OX_E_IO, "%s: cannot create", path);
    int rc = ox_gguf_w_write_file(w, f, path, fill, ud, err);
    if (fclose(f) != 0 && !rc) rc = ox_errf(err, OX_E_IO, "%s: write failed", path);
    return rc;
}
