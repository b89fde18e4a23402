/* fuzz_hf.c — a whole model from an HF checkpoint: config.json + model.safetensors (input:
 * u32 little-endian length of the config, the config, then the safetensors file). Covers the
 * HF config keys, name mapping, shape checks against the config, quantize-on-load (the
 * input's length picks the precision), a session and two forward tokens. */
#include "fuzz.h"
#include "host/hostfile.h"
#include "model/model.h"
#include "formats/tensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint32_t n;
    if (size < 4) return 0;
    memcpy(&n, data, 4);
    if (n > size - 4) return 0;
    int h[2] = {ox_host_open_mem("config.json", data + 4, n),
                ox_host_open_mem("model.safetensors", data + 4 + n, size - 4 - n)};
    ox_err err = {0};
    ox_model_files *mf = ox_files_open(h, 2, &err);
    ox_model *m = NULL;
    if (!mf) {
        fuzz_expect_error(err.code, &err);
    } else {
        ox_load_opts opts = {0};
        opts.max_resident = (uint64_t)64 << 20;
        opts.quant = (ox_quant)(size % 4);
        if (!(m = ox_model_load(mf, &opts, &err))) fuzz_expect_error(err.code, &err);
    }
    if (m) {
        const ox_config *c = ox_model_config(m);
        ox_session *s = ox_session_new(m, 8, &err);
        if (!s) {
            fuzz_expect_error(err.code, &err);
        } else {
            int32_t tok[2] = {0, (int32_t)(size % (size_t)c->vocab)};
            ox_forward_io io = {tok, 2, NULL, NULL, NULL, 0, NULL};
            int rc = ox_forward(s, &io, &err);
            if (rc) fuzz_expect_error(rc, &err);
            ox_session_free(s);
        }
        ox_model_free(m);
    }
    ox_host_close(h[0]);
    ox_host_close(h[1]);
    return 0;
}
