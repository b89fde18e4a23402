/* safetensors.c — see safetensors.h. */
#include "formats/safetensors.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "formats/json.h"
#include "formats/names.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors I/O assumes a little-endian host"
#endif

static const char *const dtype_names[OX_ST_DTYPE_COUNT] = {"F32", "F16", "BF16", "I8", "U8", "I32", "U32"};
static const size_t dtype_sizes[OX_ST_DTYPE_COUNT] = {4, 2, 2, 1, 1, 4, 4};

const char *ox_st_dtype_name(ox_st_dtype d) { return (unsigned)d < OX_ST_DTYPE_COUNT ? dtype_names[d] : "?"; }
size_t ox_st_dtype_size(ox_st_dtype d) { return (unsigned)d < OX_ST_DTYPE_COUNT ? dtype_sizes[d] : 0; }
int ox_st_dtype_from_name(const char *s) {
    for (int i = 0; i < OX_ST_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_names[i]) == 0) return i;
    return -1;
}

void ox_st_free(ox_safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (int i = 0; i < st->n_meta; i++) free(st->meta_key[i]), free(st->meta_val[i]);
    free(st->tensors);
    free(st->meta_key);
    free(st->meta_val);
    free(st->by_name);
    free(st);
}

/* Read a whole small file (JSON) through the host interface; NUL-terminated. */
static char *read_all(int file, uint64_t off, uint64_t len, ox_err *err) {
    char *buf = malloc((size_t)len + 1);
    if (!buf)
        return ox_errf(err, OX_E_NOMEM, "%s: out of memory (%llu bytes)", ox_host_name(file), (unsigned long long)len),
               NULL;
    if (ox_host_read(file, off, (size_t)len, buf, err)) return free(buf), NULL;
    buf[len] = 0;
    return buf;
}

static int parse_tensor(ox_safetensors *st, const ox_json *m, ox_st_tensor *t, uint64_t data_len, ox_err *err) {
    const char *fn = ox_host_name(st->file), *name = ox_json_key(m);
    if (ox_json_type(m) != OX_JSON_OBJECT)
        return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: header entry is not an object", fn, name);
    const char *dt = ox_json_str(ox_json_get(m, "dtype"));
    const ox_json *shape = ox_json_get(m, "shape"), *offs = ox_json_get(m, "data_offsets");
    if (!dt || ox_json_type(shape) != OX_JSON_ARRAY || ox_json_type(offs) != OX_JSON_ARRAY || ox_json_len(offs) != 2)
        return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: needs dtype, shape and data_offsets [begin, end]", fn, name);
    int d = ox_st_dtype_from_name(dt);
    if (d < 0) return ox_errf(err, OX_E_UNSUPPORTED, "%s: tensor %s: dtype %s is not supported", fn, name, dt);
    t->dtype = (ox_st_dtype)d;
    if (ox_json_len(shape) > OX_ST_MAX_DIMS)
        return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: %zu dimensions (at most %d)", fn, name, ox_json_len(shape),
                       OX_ST_MAX_DIMS);
    t->n_dims = (int)ox_json_len(shape);
    uint64_t n = ox_st_dtype_size(t->dtype);
    for (int i = 0; i < t->n_dims; i++) {
        int64_t v;
        if (!ox_json_int(ox_json_at(shape, (size_t)i), &v) || v < 0)
            return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: shape[%d] is not a non-negative integer", fn, name, i);
        t->shape[i] = (uint64_t)v;
        if (v && n > UINT64_MAX / (uint64_t)v)
            return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: byte size overflows", fn, name);
        n *= (uint64_t)v;
    }
    int64_t b, e;
    if (!ox_json_int(ox_json_at(offs, 0), &b) || !ox_json_int(ox_json_at(offs, 1), &e) || b < 0 || e < b)
        return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: bad data_offsets", fn, name);
    if ((uint64_t)e > data_len)
        return ox_errf(err, OX_E_TRUNCATED,
                       "%s: tensor %s: data_offsets [%lld, %lld) beyond file end (data section %llu bytes)", fn, name,
                       (long long)b, (long long)e, (unsigned long long)data_len);
    if ((uint64_t)(e - b) != n)
        return ox_errf(err, OX_E_FORMAT, "%s: tensor %s: %s with %d-D shape needs %llu bytes, data_offsets give %lld",
                       fn, name, dt, t->n_dims, (unsigned long long)n, (long long)(e - b));
    t->offset = st->data_start + (uint64_t)b;
    t->nbytes = n;
    return 0;
}

static int parse_meta(ox_safetensors *st, const ox_json *m, ox_err *err) {
    const char *fn = ox_host_name(st->file);
    if (ox_json_type(m) != OX_JSON_OBJECT) return ox_errf(err, OX_E_FORMAT, "%s: __metadata__ is not an object", fn);
    size_t n = ox_json_len(m);
    st->meta_key = calloc(n + 1, sizeof(char *));
    st->meta_val = calloc(n + 1, sizeof(char *));
    if (!st->meta_key || !st->meta_val) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
    for (size_t i = 0; i < n; i++) {
        const ox_json *v = ox_json_at(m, i);
        if (ox_json_type(v) != OX_JSON_STRING)
            return ox_errf(err, OX_E_FORMAT, "%s: __metadata__ value of %s is not a string", fn, ox_json_key(v));
        st->meta_key[i] = strdup(ox_json_key(v));
        st->meta_val[i] = strdup(ox_json_str(v));
        st->n_meta = (int)i + 1;
        if (!st->meta_key[i] || !st->meta_val[i]) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
    }
    return 0;
}

typedef struct {
    uint64_t b, e;
    int i;
} span;
static int cmp_span(const void *x, const void *y) {
    const span *a = x, *b = y;
    return a->b < b->b ? -1 : a->b > b->b ? 1 : (a->e > b->e) - (a->e < b->e);
}

static int check_overlap(ox_safetensors *st, ox_err *err) {
    int n = st->n_tensors;
    span *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    if (!s) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", ox_host_name(st->file));
    for (int i = 0; i < n; i++) s[i] = (span){st->tensors[i].offset, st->tensors[i].offset + st->tensors[i].nbytes, i};
    qsort(s, (size_t)n, sizeof *s, cmp_span);
    int rc = 0;
    uint64_t end = 0;
    int last = -1;
    for (int i = 0; i < n && !rc; i++) {
        if (s[i].b == s[i].e) continue; /* empty tensors occupy nothing */
        if (last >= 0 && s[i].b < end)
            rc = ox_errf(err, OX_E_FORMAT, "%s: data of tensors %s and %s overlap", ox_host_name(st->file),
                         st->tensors[last].name, st->tensors[s[i].i].name);
        end = s[i].e, last = s[i].i;
    }
    free(s);
    return rc;
}

ox_safetensors *ox_st_open(int file, ox_err *err) {
    const char *fn = ox_host_name(file);
    int64_t fsize = ox_host_size(file);
    if (fsize < 0) return ox_errf(err, OX_E_IO, "unknown host file %d", file), NULL;
    if (fsize < 8)
        return ox_errf(err, OX_E_TRUNCATED, "%s: %lld bytes is too short for a safetensors file", fn, (long long)fsize),
               NULL;
    uint64_t hlen;
    if (ox_host_read(file, 0, 8, &hlen, err)) return NULL;
    if (hlen < 2 || hlen > OX_ST_MAX_HEADER)
        return ox_errf(err, OX_E_FORMAT, "%s: bad safetensors header length %llu", fn, (unsigned long long)hlen), NULL;
    if (hlen > (uint64_t)fsize - 8)
        return ox_errf(err, OX_E_TRUNCATED, "%s: header of %llu bytes beyond file end (%lld bytes)", fn,
                       (unsigned long long)hlen, (long long)fsize),
               NULL;
    char *text = read_all(file, 8, hlen, err);
    if (!text) return NULL;
    ox_json *root = ox_json_parse(text, (size_t)hlen, fn, err);
    free(text);
    if (!root) return NULL;
    ox_safetensors *st = calloc(1, sizeof *st);
    size_t n = ox_json_len(root);
    int rc = 0;
    if (!st || !(st->tensors = calloc(n + 1, sizeof *st->tensors)) || !(st->by_name = calloc(n + 1, sizeof(uint32_t)))) {
        rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
        goto done;
    }
    st->file = file;
    st->data_start = 8 + hlen;
    if (ox_json_type(root) != OX_JSON_OBJECT) {
        rc = ox_errf(err, OX_E_FORMAT, "%s: safetensors header is not a JSON object", fn);
        goto done;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const ox_json *m = ox_json_at(root, i);
        if (strcmp(ox_json_key(m), "__metadata__") == 0) {
            if (st->meta_key) rc = ox_errf(err, OX_E_FORMAT, "%s: duplicate __metadata__", fn);
            else rc = parse_meta(st, m, err);
            continue;
        }
        ox_st_tensor *t = &st->tensors[st->n_tensors];
        if (!(t->name = strdup(ox_json_key(m)))) {
            rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
            break;
        }
        st->n_tensors++;
        rc = parse_tensor(st, m, t, (uint64_t)fsize - st->data_start, err);
    }
    if (!rc) rc = check_overlap(st, err);
    if (!rc) {
        size_t dup;
        int r = ox_names_sort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, offsetof(ox_st_tensor, name),
                              st->by_name, &dup);
        if (r)
            rc = r > 0 ? ox_errf(err, OX_E_FORMAT, "%s: duplicate tensor name %s", fn, st->tensors[dup].name)
                       : ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
    }
done:
    ox_json_free(root);
    if (rc) {
        ox_st_free(st);
        return NULL;
    }
    return st;
}

const ox_st_tensor *ox_st_find(const ox_safetensors *st, const char *name) {
    long i = ox_names_find(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, offsetof(ox_st_tensor, name),
                           st->by_name, name);
    return i < 0 ? NULL : &st->tensors[i];
}

const char *ox_st_meta(const ox_safetensors *st, const char *key) {
    for (int i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta_key[i], key) == 0) return st->meta_val[i];
    return NULL;
}

/* ---- shard index ---- */

void ox_st_index_free(ox_st_index *ix) {
    if (!ix) return;
    for (int i = 0; i < ix->n; i++) free(ix->tensor[i]), free(ix->shard[i]);
    free(ix->tensor);
    free(ix->shard);
    free(ix->shards); /* entries alias shard[] */
    free(ix);
}

ox_st_index *ox_st_index_open(int file, ox_err *err) {
    const char *fn = ox_host_name(file);
    int64_t size = ox_host_size(file);
    if (size < 0) return ox_errf(err, OX_E_IO, "unknown host file %d", file), NULL;
    if ((uint64_t)size > OX_JSON_MAX_BYTES)
        return ox_errf(err, OX_E_FORMAT, "%s: index file of %lld bytes is too big", fn, (long long)size), NULL;
    char *text = read_all(file, 0, (uint64_t)size, err);
    if (!text) return NULL;
    ox_json *root = ox_json_parse(text, (size_t)size, fn, err);
    free(text);
    if (!root) return NULL;
    const ox_json *wm = ox_json_get(root, "weight_map");
    ox_st_index *ix = NULL;
    int rc = 0;
    if (ox_json_type(wm) != OX_JSON_OBJECT) {
        rc = ox_errf(err, OX_E_FORMAT, "%s: no weight_map object", fn);
        goto done;
    }
    size_t n = ox_json_len(wm);
    ix = calloc(1, sizeof *ix);
    if (!ix || !(ix->tensor = calloc(n + 1, sizeof(char *))) || !(ix->shard = calloc(n + 1, sizeof(char *))) ||
        !(ix->shards = calloc(n + 1, sizeof(char *)))) {
        rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
        goto done;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const ox_json *m = ox_json_at(wm, i);
        const char *s = ox_json_str(m);
        if (!s) {
            rc = ox_errf(err, OX_E_FORMAT, "%s: weight_map entry %s is not a string", fn, ox_json_key(m));
            break;
        }
        const char *base = strrchr(s, '/');
        base = base ? base + 1 : s;
        ix->tensor[i] = strdup(ox_json_key(m));
        ix->shard[i] = strdup(base);
        ix->n = (int)i + 1;
        if (!ix->tensor[i] || !ix->shard[i]) {
            rc = ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
            break;
        }
        int seen = 0;
        for (int k = ix->n_shards; k-- > 0 && !seen;) seen = strcmp(ix->shards[k], ix->shard[i]) == 0;
        if (!seen) ix->shards[ix->n_shards++] = ix->shard[i];
    }
done:
    ox_json_free(root);
    if (rc) {
        ox_st_index_free(ix);
        return NULL;
    }
    return ix;
}
