/* fuzz_st_index.c — the sharded-checkpoint index (model.safetensors.index.json) reader, and
 * matching it against a real shard in ox_files_open. */
#include "fuzz.h"
#include "host/hostfile.h"
#include "formats/safetensors.h"
#include "formats/tensors.h"

/* A one-tensor shard named as the index seeds name their first shard. */
static const uint8_t *shard(size_t *n) {
    static uint8_t buf[256];
    static size_t len;
    if (!len) {
        const char *hdr =
            "{\"model.language_model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        uint64_t hl = strlen(hdr);
        memcpy(buf, &hl, 8);
        memcpy(buf + 8, hdr, hl);
        memset(buf + 8 + hl, 0, 8);
        len = 16 + hl;
    }
    *n = len;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int h = ox_host_open_mem("model.safetensors.index.json", data, size);
    ox_err err = {0};
    ox_st_index *ix = ox_st_index_open(h, &err);
    if (!ix) {
        fuzz_expect_error(err.code, &err);
    } else {
        for (int i = 0; i < ix->n; i++) fuzz_assert(ix->tensor[i] && ix->shard[i], "index entries set");
        fuzz_assert(ix->n_shards <= ix->n, "distinct shards");
        ox_st_index_free(ix);
    }
    size_t n;
    const uint8_t *s = shard(&n);
    int files[2] = {ox_host_open_mem("model-00001-of-00002.safetensors", s, n), h};
    ox_model_files *mf = ox_files_open(files, 2, &err);
    if (!mf) fuzz_expect_error(err.code, &err);
    else ox_files_free(mf);
    ox_host_close(files[0]);
    ox_host_close(h);
    return 0;
}
