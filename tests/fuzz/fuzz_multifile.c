/* fuzz_multifile.c — a model loaded from several files at once (fuzz_bundle.h: the input is
 * split into named files): a GGUF split in two (general.split.*, either order), or an HF
 * checkpoint directory (config.json, tokenizer.json, safetensors shards and their
 * model.safetensors.index.json). Any file may be damaged, cut, missing, doubled or of the wrong
 * kind; the engine load (files, model, tokenizer), a session and two forward tokens must give
 * a result or a coded error naming the problem. The options byte picks the precision and
 * whether the embedding tables stay on the host. */
#include "fuzz.h"
#include "fuzz_bundle.h"
#include "engine/engine.h"
#include "host/hostfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    fuzz_bundle_file f[FUZZ_BUNDLE_MAX];
    int n = fuzz_bundle_split(data + 1, size - 1, f), h[FUZZ_BUNDLE_MAX];
    for (int i = 0; i < n; i++) h[i] = ox_host_open_mem(fuzz_bundle_names[f[i].name], f[i].data, f[i].len);
    ox_err err = {0};
    ox_load_opts opts = {0};
    opts.max_resident = (uint64_t)64 << 20;
    opts.quant = (ox_quant)(data[0] % 4);
    opts.tables_on_host = (data[0] >> 2) & 1;
    ox_engine *e = ox_engine_load(h, n, &opts, 0, &err);
    if (!e) {
        fuzz_expect_error(err.code, &err);
    } else {
        ox_model *m = ox_engine_model(e);
        const ox_config *c = ox_model_config(m);
        ox_session *s = ox_session_new(m, 8, &err);
        if (!s) {
            fuzz_expect_error(err.code, &err);
        } else {
            int32_t tok[2] = {c->bos_id >= 0 && c->bos_id < c->vocab ? c->bos_id : 0, (int32_t)(size % (size_t)c->vocab)};
            ox_forward_io io = {tok, 2, NULL, NULL, NULL, 0, NULL};
            int rc = ox_forward(s, &io, &err);
            if (rc) fuzz_expect_error(rc, &err);
            else fuzz_assert(ox_session_pos(s) == 2, "position advanced");
            ox_session_free(s);
        }
        ox_engine_free(e);
    }
    for (int i = 0; i < n; i++) ox_host_close(h[i]);
    return 0;
}
