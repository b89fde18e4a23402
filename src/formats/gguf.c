/* gguf.c — see gguf.h. Layout (v2/v3, little-endian):
 *   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
 *   n_kv × { string key, u32 type, value },
 *   n_tensors × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset },
 *   padding to `alignment`, tensor data (each tensor at data_offset + offset).
 * string = u64 length + bytes; array = u32 element type + u64 count + elements. */
#include "formats/gguf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "formats/json.h"
#include "formats/names.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "GGUF I/O assumes a little-endian host"
#endif

/* Hard limits on counts beyond which a header is corrupt rather than big. */
#define MAX_KV      ((uint64_t)1 << 20)
#define MAX_TENSORS ((uint64_t)1 << 20)
#define MAX_KEY     65536
/* Header reads: the first refill reads RD_FIRST bytes, each next one twice as many, up to RD_BUF.
 * A small header costs one small read; a real one (E2B: 11.4 MB, its vocabulary and merges)
 * some fifteen reads, not 175: each read is a round trip to the host (an HTTP request, or a
 * message to the reader thread). */
#define RD_FIRST    ((size_t)1 << 16)
#define RD_BUF      ((size_t)1 << 20)

static const size_t type_size[OX_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const type_names[OX_GGUF_TYPE_COUNT] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                           "bool", "string", "array", "u64", "i64", "f64"};

const char *ox_gguf_type_name(ox_gguf_type t) { return (unsigned)t < OX_GGUF_TYPE_COUNT ? type_names[t] : "?"; }
size_t ox_gguf_type_size(ox_gguf_type t) { return (unsigned)t < OX_GGUF_TYPE_COUNT ? type_size[t] : 0; }

/* ---- buffered reader over the host interface ---- */

typedef struct {
    int file;
    const char *fname;
    uint64_t size, pos; /* pos: next byte to consume */
    uint8_t *buf;
    uint64_t buf_pos; /* file offset of buf[0] */
    size_t buf_len;
    ox_err *err;
    size_t refill; /* bytes of the next refill (RD_FIRST, doubling to RD_BUF) */
} reader;

static int rd_bytes(reader *r, void *dst, uint64_t n, const char *what) {
    if (n > r->size - r->pos)
        return ox_errf(r->err, OX_E_TRUNCATED, "%s: header truncated: %s needs %llu bytes at offset %llu, file has %llu",
                       r->fname, what, (unsigned long long)n, (unsigned long long)r->pos, (unsigned long long)r->size);
    uint8_t *d = dst;
    while (n > 0) {
        if (r->pos >= r->buf_pos && r->pos < r->buf_pos + r->buf_len) {
            size_t off = (size_t)(r->pos - r->buf_pos), k = r->buf_len - off;
            if (k > n) k = (size_t)n;
            memcpy(d, r->buf + off, k);
            d += k, n -= k, r->pos += k;
        } else if (n >= r->refill) { /* big run: straight into dst */
            if (ox_host_read(r->file, r->pos, (size_t)n, d, r->err)) return r->err ? r->err->code : OX_E_IO;
            r->pos += n;
            return 0;
        } else {
            size_t k = r->size - r->pos < r->refill ? (size_t)(r->size - r->pos) : r->refill;
            int rc = ox_host_read(r->file, r->pos, k, r->buf, r->err);
            if (rc) return rc;
            r->buf_pos = r->pos, r->buf_len = k;
            if (r->refill < RD_BUF) r->refill *= 2;
        }
    }
    return 0;
}

static int rd_u32(reader *r, uint32_t *v, const char *what) { return rd_bytes(r, v, 4, what); }
static int rd_u64(reader *r, uint64_t *v, const char *what) { return rd_bytes(r, v, 8, what); }

static int rd_str(reader *r, ox_gguf_str *s, uint64_t max, const char *what) {
    uint64_t len;
    int rc = rd_u64(r, &len, what);
    if (rc) return rc;
    if (len > max)
        return ox_errf(r->err, OX_E_FORMAT, "%s: %s: absurd string length %llu at offset %llu", r->fname, what,
                       (unsigned long long)len, (unsigned long long)(r->pos - 8));
    if (len > r->size - r->pos)
        return ox_errf(r->err, OX_E_TRUNCATED, "%s: header truncated: %s of %llu bytes at offset %llu, file has %llu",
                       r->fname, what, (unsigned long long)len, (unsigned long long)r->pos, (unsigned long long)r->size);
    if (len >= SIZE_MAX) /* 32-bit (wasm) address space */
        return ox_errf(r->err, OX_E_NOMEM, "%s: %s of %llu bytes does not fit in memory", r->fname, what,
                       (unsigned long long)len);
    s->s = malloc((size_t)len + 1);
    if (!s->s)
        return ox_errf(r->err, OX_E_NOMEM, "%s: out of memory (%llu-byte string)", r->fname, (unsigned long long)len);
    s->len = len;
    s->s[len] = 0;
    if ((rc = rd_bytes(r, s->s, len, what))) {
        free(s->s);
        s->s = NULL;
    }
    return rc;
}

static void value_free(ox_gguf_value *v) {
    if (v->type == OX_GGUF_STRING) {
        free(v->v.str.s);
    } else if (v->type == OX_GGUF_ARRAY && v->v.arr.data) {
        if (v->v.arr.type == OX_GGUF_STRING) {
            ox_gguf_str *s = v->v.arr.data;
            for (uint64_t i = 0; i < v->v.arr.n; i++) free(s[i].s);
        } else if (v->v.arr.type == OX_GGUF_ARRAY) {
            ox_gguf_value *a = v->v.arr.data;
            for (uint64_t i = 0; i < v->v.arr.n; i++) value_free(&a[i]);
        }
        free(v->v.arr.data);
    }
    v->type = OX_GGUF_U8;
}

/* Smallest encoding of one element of type t (bounds counts before allocating). */
static uint64_t min_elem_bytes(ox_gguf_type t) {
    return t == OX_GGUF_STRING ? 8 : t == OX_GGUF_ARRAY ? 12 : type_size[t];
}

static int rd_array_body(reader *r, ox_gguf_value *v, const char *key, int depth);

static int rd_value(reader *r, ox_gguf_value *v, ox_gguf_type t, const char *key, int depth) {
    memset(v, 0, sizeof *v);
    v->type = t;
    if (t == OX_GGUF_STRING) return rd_str(r, &v->v.str, r->size, key);
    if (t == OX_GGUF_ARRAY) return rd_array_body(r, v, key, depth + 1);
    int rc = rd_bytes(r, &v->v, type_size[t], key);
    if (!rc && t == OX_GGUF_BOOL && v->v.b > 1)
        return ox_errf(r->err, OX_E_FORMAT, "%s: key %s: bool value %u is not 0 or 1", r->fname, key, v->v.b);
    return rc;
}

/* *t is set on every path, errors included (a failed read leaves it U8). */
static int rd_type(reader *r, ox_gguf_type *t, const char *key) {
    uint32_t u;
    *t = OX_GGUF_U8;
    int rc = rd_u32(r, &u, key);
    if (rc) return rc;
    if (u >= OX_GGUF_TYPE_COUNT)
        return ox_errf(r->err, OX_E_FORMAT, "%s: key %s: unknown metadata value type %u", r->fname, key, u);
    *t = (ox_gguf_type)u;
    return 0;
}

static int rd_array_body(reader *r, ox_gguf_value *v, const char *key, int depth) {
    ox_gguf_type et;
    uint64_t n;
    int rc;
    if (depth > OX_GGUF_MAX_ARRAY_DEPTH)
        return ox_errf(r->err, OX_E_FORMAT, "%s: key %s: arrays nested deeper than %d", r->fname, key,
                       OX_GGUF_MAX_ARRAY_DEPTH);
    if ((rc = rd_type(r, &et, key)) || (rc = rd_u64(r, &n, key))) return rc;
    uint64_t rest = r->size - r->pos, mb = min_elem_bytes(et);
    if (n > rest / mb)
        return ox_errf(r->err, OX_E_TRUNCATED,
                       "%s: key %s: array of %llu %s elements cannot fit in the remaining %llu bytes", r->fname, key,
                       (unsigned long long)n, type_names[et], (unsigned long long)rest);
    size_t esz = et == OX_GGUF_STRING  ? sizeof(ox_gguf_str)
                 : et == OX_GGUF_ARRAY ? sizeof(ox_gguf_value)
                                       : type_size[et];
    if (n > SIZE_MAX / esz)
        return ox_errf(r->err, OX_E_NOMEM, "%s: key %s: array of %llu elements does not fit in memory", r->fname, key,
                       (unsigned long long)n);
    v->v.arr.type = et;
    v->v.arr.data = calloc(n ? (size_t)n : 1, esz);
    if (!v->v.arr.data)
        return ox_errf(r->err, OX_E_NOMEM, "%s: key %s: out of memory (%llu elements)", r->fname, key,
                       (unsigned long long)n);
    if (et == OX_GGUF_STRING) {
        ox_gguf_str *s = v->v.arr.data;
        v->v.arr.n = n; /* zeroed entries free as no-ops if reading stops early */
        for (uint64_t i = 0; i < n; i++)
            if ((rc = rd_str(r, &s[i], r->size, key))) return rc;
    } else if (et == OX_GGUF_ARRAY) {
        ox_gguf_value *a = v->v.arr.data;
        v->v.arr.n = n;
        for (uint64_t i = 0; i < n; i++) {
            a[i].type = OX_GGUF_ARRAY;
            if ((rc = rd_array_body(r, &a[i], key, depth + 1))) return rc;
        }
    } else {
        v->v.arr.n = n;
        if ((rc = rd_bytes(r, v->v.arr.data, n * esz, key))) return rc;
        if (et == OX_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (((uint8_t *)v->v.arr.data)[i] > 1)
                    return ox_errf(r->err, OX_E_FORMAT, "%s: key %s: bool element %llu is not 0 or 1", r->fname, key,
                                   (unsigned long long)i);
    }
    return 0;
}

/* ---- open ---- */

void ox_gguf_free(ox_gguf *g) {
    if (!g) return;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        value_free(&g->kv[i].val);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(g->by_name);
    free(g);
}

const char *ox_gguf_name(const ox_gguf *g) { return ox_host_name(g->file); }

/* ggml types this engine does not read, named so the user knows what the file holds. */
static const char *unsupported_type_name(uint32_t t) {
    static const char *names[] = {[24] = "I8",  [25] = "I16",   [26] = "I32",  [27] = "I64",
                                  [28] = "F64", [40] = "NVFP4", [41] = "Q1_0", [42] = "Q2_0"};
    return t < sizeof names / sizeof names[0] && names[t] ? names[t] : "unknown";
}
static int read_tensor_info(reader *r, ox_gguf *g, ox_gguf_tensor *t, uint64_t idx) {
    ox_gguf_str name = {0, NULL};
    int rc = rd_str(r, &name, OX_GGUF_MAX_NAME, "tensor name");
    if (rc) return rc;
    t->name = name.s;
    if (strlen(name.s) != name.len)
        return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %llu: name contains a NUL byte", r->fname,
                       (unsigned long long)idx);
    uint32_t nd, type;
    if ((rc = rd_u32(r, &nd, t->name))) return rc;
    if (nd < 1 || nd > OX_GGUF_MAX_DIMS)
        return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: %u dimensions (1..%d allowed)", r->fname, t->name, nd,
                       OX_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < OX_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        if ((rc = rd_u64(r, &t->ne[d], t->name))) return rc;
        if (t->ne[d] > (uint64_t)INT64_MAX)
            return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: dimension %u is negative", r->fname, t->name, d);
    }
    if ((rc = rd_u32(r, &type, t->name)) || (rc = rd_u64(r, &t->offset, t->name))) return rc;
    if (type >= OX_TYPE_GGML_END || !ox_type_known((int)type)) /* the engine's own formats are not ggml's */
        return ox_errf(r->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported ggml type %u (%s)", r->fname, t->name,
                       type, unsupported_type_name(type));
    t->type = (ox_type)type;
    if (t->offset % g->alignment)
        return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: data offset %llu is not a multiple of the alignment %llu",
                       r->fname, t->name, (unsigned long long)t->offset, (unsigned long long)g->alignment);
    uint64_t row, rows = 1, nb;
    for (int d = 1; d < t->n_dims; d++) {
        if (t->ne[d] && rows > UINT64_MAX / t->ne[d])
            return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: element count overflows", r->fname, t->name);
        rows *= t->ne[d];
    }
    ox_err e2;
    if (ox_row_bytes(t->type, t->ne[0], &row, &e2))
        return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: %s", r->fname, t->name, e2.msg);
    if (row && rows > UINT64_MAX / row)
        return ox_errf(r->err, OX_E_FORMAT, "%s: tensor %s: byte size overflows", r->fname, t->name);
    nb = row * rows;
    t->nbytes = nb;
    return 0;
}

ox_gguf *ox_gguf_open(int file, ox_err *err) {
    const char *fname = ox_host_name(file);
    int64_t fsize = ox_host_size(file);
    if (fsize < 0) return ox_errf(err, OX_E_IO, "unknown host file %d", file), NULL;
    ox_gguf *g = calloc(1, sizeof *g);
    reader r = {file, fname, (uint64_t)fsize, 0, malloc(RD_BUF), 0, 0, err, RD_FIRST};
    if (!g || !r.buf) {
        free(g), free(r.buf);
        return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname), NULL;
    }
    g->file = file;
    g->alignment = OX_GGUF_DEFAULT_ALIGNMENT;
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    int rc;
    if ((rc = rd_u32(&r, &magic, "magic"))) goto fail;
    if (magic != OX_GGUF_MAGIC) {
        rc = ox_errf(err, OX_E_FORMAT, "%s: bad magic 0x%08x (not a GGUF file)", fname, magic);
        goto fail;
    }
    if ((rc = rd_u32(&r, &version, "version"))) goto fail;
    if (version != 2 && version != 3) {
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: GGUF version %u is not supported (2 and 3 are)", fname, version);
        goto fail;
    }
    g->version = version;
    if ((rc = rd_u64(&r, &n_tensors, "tensor count")) || (rc = rd_u64(&r, &n_kv, "metadata count"))) goto fail;
    if (n_tensors > MAX_TENSORS || n_kv > MAX_KV) {
        rc = ox_errf(err, OX_E_FORMAT, "%s: absurd counts: %llu tensors, %llu metadata keys", fname,
                     (unsigned long long)n_tensors, (unsigned long long)n_kv);
        goto fail;
    }
    if (n_tensors > (r.size - r.pos) / 28 || n_kv > (r.size - r.pos) / 12) { /* smallest tensor info, key/value */
        rc = ox_errf(err, OX_E_TRUNCATED,
                     "%s: header truncated: %llu tensors and %llu metadata keys cannot fit in %llu bytes", fname,
                     (unsigned long long)n_tensors, (unsigned long long)n_kv, (unsigned long long)r.size);
        goto fail;
    }
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    g->by_name = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->by_name);
    if (!g->kv || !g->tensors || !g->by_name) {
        rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname);
        goto fail;
    }
    for (uint64_t i = 0; i < n_kv; i++) {
        ox_gguf_kv *kv = &g->kv[i];
        ox_gguf_str key = {0, NULL};
        ox_gguf_type t;
        if ((rc = rd_str(&r, &key, MAX_KEY, "metadata key"))) goto fail;
        kv->key = key.s;
        g->n_kv = i + 1;
        if ((rc = rd_type(&r, &t, kv->key)) || (rc = rd_value(&r, &kv->val, t, kv->key, 0))) goto fail;
    }
    const ox_gguf_value *al = ox_gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != OX_GGUF_U32 || al->v.u32 == 0 || (al->v.u32 & (al->v.u32 - 1))) {
            rc = ox_errf(err, OX_E_FORMAT, "%s: general.alignment must be a power-of-two u32", fname);
            goto fail;
        }
        g->alignment = al->v.u32;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors = i + 1;
        if ((rc = read_tensor_info(&r, g, &g->tensors[i], i))) goto fail;
        g->by_name[i] = (uint32_t)i;
    }
    g->data_offset = (r.pos + g->alignment - 1) / g->alignment * g->alignment;
    for (uint64_t i = 0; i < n_tensors; i++) {
        ox_gguf_tensor *t = &g->tensors[i];
        uint64_t rel = t->offset;
        t->offset = g->data_offset + rel;
        if (t->offset < rel || t->offset > r.size || t->nbytes > r.size - t->offset) {
            rc = ox_errf(err, OX_E_TRUNCATED, "%s: tensor %s: data [%llu, %llu) beyond file end (%llu bytes)", fname,
                         t->name, (unsigned long long)t->offset, (unsigned long long)(t->offset + t->nbytes),
                         (unsigned long long)r.size);
            goto fail;
        }
    }
    size_t dup;
    if ((rc = ox_names_sort(g->tensors, (size_t)n_tensors, sizeof *g->tensors, offsetof(ox_gguf_tensor, name),
                            g->by_name, &dup)) != 0) {
        rc = rc > 0 ? ox_errf(err, OX_E_FORMAT, "%s: duplicate tensor name %s", fname, g->tensors[dup].name)
                    : ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname);
        goto fail;
    }
    free(r.buf);
    return g;
fail:
    (void)rc;
    free(r.buf);
    ox_gguf_free(g);
    return NULL;
}

/* ---- lookup ---- */

const ox_gguf_value *ox_gguf_find(const ox_gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kv[i].key, key) == 0) return &g->kv[i].val;
    return NULL;
}

const ox_gguf_tensor *ox_gguf_find_tensor(const ox_gguf *g, const char *name) {
    long i = ox_names_find(g->tensors, (size_t)g->n_tensors, sizeof *g->tensors, offsetof(ox_gguf_tensor, name),
                           g->by_name, name);
    return i < 0 ? NULL : &g->tensors[i];
}

/* Read a scalar of type t at p as int64 / double. */
static int scalar_i64(ox_gguf_type t, const void *p, int64_t *out) {
    uint64_t u;
    switch (t) {
    case OX_GGUF_U8: *out = *(const uint8_t *)p; return 0;
    case OX_GGUF_I8: *out = *(const int8_t *)p; return 0;
    case OX_GGUF_U16: {
        uint16_t x;
        memcpy(&x, p, 2);
        *out = x;
        return 0;
    }
    case OX_GGUF_I16: {
        int16_t x;
        memcpy(&x, p, 2);
        *out = x;
        return 0;
    }
    case OX_GGUF_U32: {
        uint32_t x;
        memcpy(&x, p, 4);
        *out = x;
        return 0;
    }
    case OX_GGUF_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        *out = x;
        return 0;
    }
    case OX_GGUF_I64: memcpy(out, p, 8); return 0;
    case OX_GGUF_U64:
        memcpy(&u, p, 8);
        if (u > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)u;
        return 0;
    default: return -1;
    }
}

static int scalar_f64(ox_gguf_type t, const void *p, double *out) {
    int64_t i;
    if (t == OX_GGUF_F32) {
        float f;
        memcpy(&f, p, 4);
        *out = f;
        return 0;
    }
    if (t == OX_GGUF_F64) {
        memcpy(out, p, 8);
        return 0;
    }
    if (scalar_i64(t, p, &i)) return -1;
    *out = (double)i;
    return 0;
}

int ox_gguf_val_i64(const ox_gguf_value *v, int64_t *out) { return v ? scalar_i64(v->type, &v->v, out) : -1; }
int ox_gguf_val_f64(const ox_gguf_value *v, double *out) { return v ? scalar_f64(v->type, &v->v, out) : -1; }

static const void *arr_elem(const ox_gguf_value *a, uint64_t i) {
    if (!a || a->type != OX_GGUF_ARRAY || i >= a->v.arr.n || !type_size[a->v.arr.type]) return NULL;
    return (const uint8_t *)a->v.arr.data + i * type_size[a->v.arr.type];
}

int ox_gguf_arr_i64(const ox_gguf_value *a, uint64_t i, int64_t *out) {
    const void *p = arr_elem(a, i);
    return p ? scalar_i64(a->v.arr.type, p, out) : -1;
}
int ox_gguf_arr_f64(const ox_gguf_value *a, uint64_t i, double *out) {
    const void *p = arr_elem(a, i);
    return p ? scalar_f64(a->v.arr.type, p, out) : -1;
}
int ox_gguf_arr_bool(const ox_gguf_value *a, uint64_t i, int *out) {
    const void *p = arr_elem(a, i);
    if (!p || a->v.arr.type != OX_GGUF_BOOL) return -1;
    *out = *(const uint8_t *)p;
    return 0;
}
const ox_gguf_str *ox_gguf_arr_str(const ox_gguf_value *a, uint64_t i) {
    if (!a || a->type != OX_GGUF_ARRAY || a->v.arr.type != OX_GGUF_STRING || i >= a->v.arr.n) return NULL;
    return &((const ox_gguf_str *)a->v.arr.data)[i];
}

static const ox_gguf_value *get(const ox_gguf *g, const char *key, ox_err *err, int *rc) {
    const ox_gguf_value *v = ox_gguf_find(g, key);
    *rc = v ? 0 : ox_errf(err, OX_E_MISSING, "%s: metadata key %s is missing", ox_gguf_name(g), key);
    return v;
}

static int bad_type(const ox_gguf *g, const char *key, const ox_gguf_value *v, const char *want, ox_err *err) {
    return ox_errf(err, OX_E_FORMAT, "%s: metadata key %s: %s value where %s was expected", ox_gguf_name(g), key,
                   ox_gguf_type_name(v->type), want);
}

static int get_int(const ox_gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *out, const char *want,
                   ox_err *err) {
    int rc;
    *out = 0; /* set on every path, errors included */
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    if (ox_gguf_val_i64(v, out)) return bad_type(g, key, v, want, err);
    if (*out < lo || *out > hi)
        return ox_errf(err, OX_E_FORMAT, "%s: metadata key %s: value %lld does not fit %s", ox_gguf_name(g), key,
                       (long long)*out, want);
    return 0;
}

int ox_gguf_get_u32(const ox_gguf *g, const char *key, uint32_t *out, ox_err *err) {
    int64_t x;
    int rc = get_int(g, key, 0, UINT32_MAX, &x, "u32", err);
    if (!rc) *out = (uint32_t)x;
    return rc;
}
int ox_gguf_get_i32(const ox_gguf *g, const char *key, int32_t *out, ox_err *err) {
    int64_t x;
    int rc = get_int(g, key, INT32_MIN, INT32_MAX, &x, "i32", err);
    if (!rc) *out = (int32_t)x;
    return rc;
}
int ox_gguf_get_i64(const ox_gguf *g, const char *key, int64_t *out, ox_err *err) {
    return get_int(g, key, INT64_MIN, INT64_MAX, out, "i64", err);
}
int ox_gguf_get_u64(const ox_gguf *g, const char *key, uint64_t *out, ox_err *err) {
    int rc;
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    if (v->type == OX_GGUF_U64) {
        *out = v->v.u64;
        return 0;
    }
    int64_t x;
    if (ox_gguf_val_i64(v, &x)) return bad_type(g, key, v, "u64", err);
    if (x < 0)
        return ox_errf(err, OX_E_FORMAT, "%s: metadata key %s: value %lld does not fit u64", ox_gguf_name(g), key,
                       (long long)x);
    *out = (uint64_t)x;
    return 0;
}
int ox_gguf_get_f32(const ox_gguf *g, const char *key, float *out, ox_err *err) {
    int rc;
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    double d;
    if (ox_gguf_val_f64(v, &d)) return bad_type(g, key, v, "f32", err);
    *out = (float)d;
    return 0;
}
int ox_gguf_get_bool(const ox_gguf *g, const char *key, int *out, ox_err *err) {
    int rc;
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    if (v->type != OX_GGUF_BOOL) return bad_type(g, key, v, "bool", err);
    *out = v->v.b;
    return 0;
}
int ox_gguf_get_str(const ox_gguf *g, const char *key, const char **out, ox_err *err) {
    int rc;
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    if (v->type != OX_GGUF_STRING) return bad_type(g, key, v, "string", err);
    *out = v->v.str.s;
    return 0;
}
int ox_gguf_get_arr(const ox_gguf *g, const char *key, const ox_gguf_value **out, ox_err *err) {
    int rc;
    const ox_gguf_value *v = get(g, key, err, &rc);
    if (!v) return rc;
    if (v->type != OX_GGUF_ARRAY) return bad_type(g, key, v, "array", err);
    *out = v;
    return 0;
}
