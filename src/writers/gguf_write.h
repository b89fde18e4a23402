/* gguf_write.h — GGUF writer (v3), the reader's layout (formats/gguf.h). It collects metadata
 * and tensors and writes a complete file; tensor data is either a caller pointer (kept, not
 * copied: keep it alive until the write) or produced by a callback at write time (large
 * models). Tooling only (synth, prequant, the tests): the wasm engine does not link it. */
#ifndef OX_GGUF_WRITE_H
#define OX_GGUF_WRITE_H

#include <stdio.h>
#include "formats/gguf.h"

typedef struct ox_gguf_writer ox_gguf_writer;
/* Writes exactly the tensor's nbytes of data to f (tensor index i in add order). */
typedef int (*ox_gguf_fill_fn)(void *ud, int i, FILE *f, ox_err *err);

ox_gguf_writer *ox_gguf_writer_new(void);
void ox_gguf_writer_free(ox_gguf_writer *w);
/* Metadata (kept in add order; a repeated key is an error at write time). */
int ox_gguf_w_u32(ox_gguf_writer *w, const char *key, uint32_t v);
int ox_gguf_w_i32(ox_gguf_writer *w, const char *key, int32_t v);
int ox_gguf_w_u64(ox_gguf_writer *w, const char *key, uint64_t v);
int ox_gguf_w_f32(ox_gguf_writer *w, const char *key, float v);
int ox_gguf_w_bool(ox_gguf_writer *w, const char *key, int v);
int ox_gguf_w_str(ox_gguf_writer *w, const char *key, const char *s);
/* Numeric/bool array: n packed values of elem type (bool: 1 byte each). */
int ox_gguf_w_arr(ox_gguf_writer *w, const char *key, ox_gguf_type elem, const void *data, uint64_t n);
int ox_gguf_w_arr_str(ox_gguf_writer *w, const char *key, const char *const *s, uint64_t n);
/* Any value, including every scalar type and nested arrays (same layout as the reader's). */
int ox_gguf_w_value(ox_gguf_writer *w, const char *key, const ox_gguf_value *v);
/* Alignment of tensor data (power of two); also written as general.alignment. */
int ox_gguf_w_alignment(ox_gguf_writer *w, uint32_t alignment);
/* Tensor with ggml-order ne[n_dims]; data NULL means "produced by the fill callback".
 * ne[0] must be a multiple of the type's block size. */
int ox_gguf_w_tensor(ox_gguf_writer *w, const char *name, ox_type type, int n_dims, const uint64_t *ne,
                     const void *data, ox_err *err);
/* Write the file. fill may be NULL when every tensor has a data pointer. */
int ox_gguf_w_write(ox_gguf_writer *w, const char *path, ox_gguf_fill_fn fill, void *ud, ox_err *err);
int ox_gguf_w_write_file(ox_gguf_writer *w, FILE *f, const char *fname, ox_gguf_fill_fn fill, void *ud, ox_err *err);

#endif
