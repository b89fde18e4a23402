/* gguf.h — GGUF (v2, v3) reader (the writer is tooling: tools/gguf_write.h).
 *
 * The reader works only through ox_host_read: the header, metadata and tensor infos are
 * read in buffered chunks, never by assuming the file is in memory. Every count and length
 * is bounded by what the rest of the file can hold before anything is allocated; every
 * tensor's data must lie inside the file. Tensor types are ggml's (ox_type values). */
#ifndef OX_GGUF_H
#define OX_GGUF_H

#include <stdint.h>
#include "base/err.h"
#include "kernels/quant.h"

#define OX_GGUF_MAGIC             0x46554747u /* "GGUF" little-endian */
#define OX_GGUF_DEFAULT_ALIGNMENT 32
#define OX_GGUF_MAX_DIMS          4
#define OX_GGUF_MAX_NAME          1024 /* tensor name bytes (reader and writer) */
#define OX_GGUF_MAX_ARRAY_DEPTH   8    /* nesting of array values */

typedef enum {
    OX_GGUF_U8 = 0,
    OX_GGUF_I8 = 1,
    OX_GGUF_U16 = 2,
    OX_GGUF_I16 = 3,
    OX_GGUF_U32 = 4,
    OX_GGUF_I32 = 5,
    OX_GGUF_F32 = 6,
    OX_GGUF_BOOL = 7,
    OX_GGUF_STRING = 8,
    OX_GGUF_ARRAY = 9,
    OX_GGUF_U64 = 10,
    OX_GGUF_I64 = 11,
    OX_GGUF_F64 = 12,
    OX_GGUF_TYPE_COUNT
} ox_gguf_type;

typedef struct ox_gguf_str {
    uint64_t len;
    char *s; /* NUL-terminated */
} ox_gguf_str;

typedef struct ox_gguf_value {
    ox_gguf_type type;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        float f32; /* scalars: read via the getters */
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        uint8_t b;
        ox_gguf_str str;
        struct {
            ox_gguf_type type; /* element type */
            uint64_t n;
            /* numeric/bool: n packed little-endian values of the element type (bool: 1 byte);
             * string: ox_gguf_str[n]; array: ox_gguf_value[n] (nested arrays) */
            void *data;
        } arr;
    } v;
} ox_gguf_value;

typedef struct ox_gguf_kv {
    char *key;
    ox_gguf_value val;
} ox_gguf_kv;

typedef struct ox_gguf_tensor {
    char *name;
    ox_type type;
    int n_dims;
    uint64_t ne[OX_GGUF_MAX_DIMS]; /* unused dims are 1 */
    uint64_t offset;               /* absolute offset in the file */
    uint64_t nbytes;
} ox_gguf_tensor;

typedef struct ox_gguf {
    int file; /* host file handle */
    uint32_t version;
    uint64_t n_kv, n_tensors;
    ox_gguf_kv *kv;          /* file order */
    ox_gguf_tensor *tensors; /* file order */
    uint64_t alignment;      /* general.alignment or 32 */
    uint64_t data_offset;    /* start of the tensor data section */
    uint32_t *by_name;       /* tensor indices sorted by name (lookup) */
} ox_gguf;

/* Open and validate a GGUF through the host interface. Errors: OX_E_FORMAT (bad magic,
 * absurd counts, overflowing sizes, duplicate tensor names, misaligned offsets),
 * OX_E_UNSUPPORTED (version, tensor type), OX_E_TRUNCATED (header or data beyond end). */
ox_gguf *ox_gguf_open(int file, ox_err *err);
void ox_gguf_free(ox_gguf *g);
const char *ox_gguf_name(const ox_gguf *g); /* display name of the file */

const ox_gguf_value *ox_gguf_find(const ox_gguf *g, const char *key);
const ox_gguf_tensor *ox_gguf_find_tensor(const ox_gguf *g, const char *name);

/* Typed getters. Return 0, OX_E_MISSING (no such key) or OX_E_FORMAT (wrong type, or the
 * value does not fit). Integers widen/narrow from any integer type when the value fits;
 * f32 accepts F32/F64 and integers; bool accepts BOOL only. Messages name file and key. */
int ox_gguf_get_u32(const ox_gguf *g, const char *key, uint32_t *out, ox_err *err);
int ox_gguf_get_i32(const ox_gguf *g, const char *key, int32_t *out, ox_err *err);
int ox_gguf_get_u64(const ox_gguf *g, const char *key, uint64_t *out, ox_err *err);
int ox_gguf_get_i64(const ox_gguf *g, const char *key, int64_t *out, ox_err *err);
int ox_gguf_get_f32(const ox_gguf *g, const char *key, float *out, ox_err *err);
int ox_gguf_get_bool(const ox_gguf *g, const char *key, int *out, ox_err *err);
int ox_gguf_get_str(const ox_gguf *g, const char *key, const char **out, ox_err *err);
/* Array of elements of any type: *out points at the stored value (type ARRAY). */
int ox_gguf_get_arr(const ox_gguf *g, const char *key, const ox_gguf_value **out, ox_err *err);

/* Value-level conversions (also for array elements): 0 ok, -1 wrong type / does not fit. */
int ox_gguf_val_i64(const ox_gguf_value *v, int64_t *out);
int ox_gguf_val_f64(const ox_gguf_value *v, double *out);
/* Element i of an array value as int64 / double / bool / string (0 ok, -1 wrong type/index). */
int ox_gguf_arr_i64(const ox_gguf_value *arr, uint64_t i, int64_t *out);
int ox_gguf_arr_f64(const ox_gguf_value *arr, uint64_t i, double *out);
int ox_gguf_arr_bool(const ox_gguf_value *arr, uint64_t i, int *out);
const ox_gguf_str *ox_gguf_arr_str(const ox_gguf_value *arr, uint64_t i); /* NULL if not */
const char *ox_gguf_type_name(ox_gguf_type t);                            /* "u32", "string", ... */
size_t ox_gguf_type_size(ox_gguf_type t);                                 /* bytes of a scalar; 0 for string/array */

#endif
