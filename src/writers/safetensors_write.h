/* safetensors_write.h — safetensors writer: header JSON, then each tensor's data from memory
 * or a fill callback. Tooling only (synth, the tests): the wasm engine does not link it. */
#ifndef OX_SAFETENSORS_WRITE_H
#define OX_SAFETENSORS_WRITE_H

#include <stdio.h>
#include "formats/safetensors.h"

typedef struct ox_st_writer ox_st_writer;
/* Writes exactly the tensor's bytes to f (tensor index i in add order). */
typedef int (*ox_st_fill_fn)(void *ud, int i, FILE *f, ox_err *err);

ox_st_writer *ox_st_writer_new(void);
void ox_st_writer_free(ox_st_writer *w);
int ox_st_w_meta(ox_st_writer *w, const char *key, const char *value, ox_err *err);
/* data: kept (not copied) until the write, or NULL to have the fill callback produce it. */
int ox_st_w_tensor(ox_st_writer *w, const char *name, ox_st_dtype dtype, int n_dims, const uint64_t *shape,
                   const void *data, ox_err *err);
int ox_st_w_write(ox_st_writer *w, const char *path, ox_st_fill_fn fill, void *ud, ox_err *err);

#endif
