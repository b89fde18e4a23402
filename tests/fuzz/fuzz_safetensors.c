/* fuzz_safetensors.c — the safetensors header reader and the tensor directory built from it
 * (HF name mapping, pre-quantized pairs) on arbitrary bytes. */
#include "fuzz.h"
#include "host/hostfile.h"
#include "formats/safetensors.h"
#include "formats/tensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int h = ox_host_open_mem("model.safetensors", data, size);
    ox_err err = {0};
    ox_safetensors *st = ox_st_open(h, &err);
    if (!st) {
        fuzz_expect_error(err.code, &err);
    } else {
        for (int i = 0; i < st->n_tensors; i++) {
            const ox_st_tensor *t = &st->tensors[i];
            fuzz_assert(t->offset >= st->data_start && t->offset <= size && t->nbytes <= size - t->offset,
                        "tensor data inside the file");
            fuzz_assert(ox_st_find(st, t->name) != NULL, "tensor found by name");
        }
        for (int i = 0; i < st->n_meta; i++) fuzz_assert(ox_st_meta(st, st->meta_key[i]) != NULL, "metadata by key");
        ox_st_free(st);
    }
    ox_model_files *mf = ox_files_open(&h, 1, &err);
    if (!mf) fuzz_expect_error(err.code, &err);
    else ox_files_free(mf);
    ox_host_close(h);
    return 0;
}
