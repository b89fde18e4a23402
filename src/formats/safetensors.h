/* safetensors.h — safetensors reader (single file; shard index); the writer is tooling
 * (tools/safetensors_write.h).
 *
 * File: u64 little-endian header length N, N bytes of JSON
 *   {"__metadata__": {str: str}, "NAME": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...}
 * then the data section; offsets are relative to its start (8 + N). Read through ox_host_read
 * only: the header is read once, tensor data never here.
 *
 * Sharded checkpoints: model.safetensors.index.json {"metadata": {...}, "weight_map": {NAME: SHARD}}
 * is parsed by ox_st_index_open; matching shards to host files is tensors.c's job. */
#ifndef OX_SAFETENSORS_H
#define OX_SAFETENSORS_H

#include <stdint.h>
#include "base/err.h"

#define OX_ST_MAX_DIMS   8
#define OX_ST_MAX_HEADER ((uint64_t)100 << 20) /* as the reference implementation */

typedef enum {
    OX_ST_F32,
    OX_ST_F16,
    OX_ST_BF16,
    OX_ST_I8,
    OX_ST_U8,
    OX_ST_I32,
    OX_ST_U32,
    OX_ST_DTYPE_COUNT
} ox_st_dtype;

const char *ox_st_dtype_name(ox_st_dtype d); /* "F32", ... */
size_t ox_st_dtype_size(ox_st_dtype d);
int ox_st_dtype_from_name(const char *s); /* -1 if unsupported */

typedef struct ox_st_tensor {
    char *name;
    ox_st_dtype dtype;
    int n_dims;                     /* 0 for a scalar */
    uint64_t shape[OX_ST_MAX_DIMS]; /* PyTorch order: shape[n_dims-1] is innermost */
    uint64_t offset;                /* absolute offset in the file */
    uint64_t nbytes;
} ox_st_tensor;

typedef struct ox_safetensors {
    int file;
    uint64_t data_start; /* 8 + header length */
    int n_tensors;
    ox_st_tensor *tensors; /* header order */
    int n_meta;
    char **meta_key, **meta_val; /* __metadata__ in header order */
    uint32_t *by_name;           /* tensor indices sorted by name */
} ox_safetensors;

/* Parse and validate the header. Errors: OX_E_FORMAT (bad header length, bad JSON, dtype/shape
 * vs byte-count mismatch, overlapping data, duplicate names), OX_E_TRUNCATED (header or data
 * beyond the file end), OX_E_UNSUPPORTED (dtype). Messages name the file and the tensor. */
ox_safetensors *ox_st_open(int file, ox_err *err);
void ox_st_free(ox_safetensors *st);
const ox_st_tensor *ox_st_find(const ox_safetensors *st, const char *name);
const char *ox_st_meta(const ox_safetensors *st, const char *key); /* NULL if absent */

/* Shard index: weight_map entries in file order, and the distinct shard names. */
typedef struct ox_st_index {
    int n;
    char **tensor, **shard; /* shard[i]: file name holding tensor[i] */
    int n_shards;
    char **shards; /* distinct, first-seen order */
} ox_st_index;
ox_st_index *ox_st_index_open(int file, ox_err *err);
void ox_st_index_free(ox_st_index *ix);

#endif
