/* fuzz_model.c — a whole model from one GGUF: directory, config, the loader's shape checks
 * against the config (every tensor's type and shape), quantize-on-load of float weights
 * (the input's length picks the precision), a session and two forward tokens.
 * Loads are capped at 64 MiB resident so a header that claims huge tensors must fail cleanly. */
#include "fuzz.h"
#include "fuzz_models.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int h;
    ox_model_files *mf = fuzz_gguf_files(data, size, &h);
    if (!mf) return 0;
    ox_err err = {0};
    ox_load_opts opts = {0};
    opts.max_resident = (uint64_t)64 << 20;
    opts.tables_on_host = size & 1;
    opts.quant = (ox_quant)((size >> 1) % 4); /* f32/f16/bf16 weights: quantize on load too */
    ox_model *m = ox_model_load(mf, &opts, &err);
    if (!m) {
        fuzz_expect_error(err.code, &err);
        ox_host_close(h);
        return 0;
    }
    const ox_config *c = ox_model_config(m);
    ox_session *s = ox_session_new(m, 8, &err);
    if (!s) {
        fuzz_expect_error(err.code, &err);
    } else {
        static float logits[1 << 20];
        int32_t tok[2] = {c->bos_id >= 0 && c->bos_id < c->vocab ? c->bos_id : 0, (int32_t)(size % (size_t)c->vocab)};
        ox_forward_io io = {tok, 2, NULL, NULL, c->vocab <= (1 << 20) ? logits : NULL, 0, NULL};
        int rc = ox_forward(s, &io, &err);
        if (rc) fuzz_expect_error(rc, &err);
        else fuzz_assert(ox_session_pos(s) == 2, "position advanced");
        ox_session_free(s);
    }
    ox_model_free(m);
    ox_host_close(h);
    return 0;
}
