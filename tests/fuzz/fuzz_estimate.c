/* fuzz_estimate.c — what reads a model's headers before any load: ox_memory_estimate,
 * ox_memory_budget (with and without fitting the context) and the loader's dry walk under
 * them, on one GGUF; then, when the budget fits, the load it sized (weights streamed or not,
 * each KV type) with a session preallocated at the fitted context and two forward tokens.
 * The input's length picks the options. Invariants: coded errors only; total is the sum of
 * its parts; a fitted estimate is within its budget and holds at least one position. */
#include "fuzz.h"
#include "fuzz_models.h"
#include "model/estimate.h"
#include "model/kv.h"
#include "model/model.h"

#define BUDGET ((uint64_t)64 << 20)

static void check_sum(const ox_mem_estimate *e) {
    fuzz_assert(e->total == e->weights + e->weight_cache + e->kv + e->scratch + e->runtime,
                "total is the sum of its parts");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ox_err err = {0};
    ox_load_opts opts = {0};
    int h;
    ox_model_files *mf = fuzz_gguf_files(data, size, &h);
    if (!mf) return 0;
    opts.quant = (ox_quant)(size % 4);
    opts.stream = (ox_stream)((size >> 2) % 3);
    opts.weight_cache = opts.stream ? (uint64_t)8 << 20 : 0;
    ox_mem_request rq = {.n_ctx = (int)(size >> 4) % 300 - 20,
                         .kv_type = (int)((size >> 3) % (OX_KV_N_TYPES + 1)),
                         .threads = 1 + (int)(size % 3),
                         .runtime = 1 << 20};
    ox_mem_estimate e;
    int rc = ox_memory_estimate(mf, &opts, &rq, &e, &err);
    if (rc) fuzz_expect_error(rc, &err);
    else check_sum(&e);
    rc = ox_memory_budget(mf, &opts, &rq, BUDGET, 1, &e, &err);
    if (rc) {
        fuzz_expect_error(rc, &err);
        ox_files_free(mf);
        ox_host_close(h);
        return 0;
    }
    check_sum(&e);
    fuzz_assert(e.total <= BUDGET && e.context >= 1, "a fitted estimate is within its budget");
    ox_model *m = ox_model_load(mf, &opts, &err); /* takes mf */
    if (!m) {
        fuzz_expect_error(err.code, &err);
        ox_host_close(h);
        return 0;
    }
    const ox_config *c = ox_model_config(m);
    ox_session *s = ox_session_new_kv(m, e.context, (ox_kv_type)rq.kv_type, &err);
    if (!s) fuzz_expect_error(err.code, &err);
    else if ((rc = ox_session_prealloc(s, &err))) fuzz_expect_error(rc, &err);
    else {
        int32_t tok[2] = {0, (int32_t)(size % (size_t)c->vocab)};
        ox_forward_io io = {tok, e.context >= 2 ? 2 : 1, NULL, NULL, NULL, 0, NULL};
        if ((rc = ox_forward(s, &io, &err))) fuzz_expect_error(rc, &err);
    }
    ox_session_free(s);
    ox_model_free(m);
    ox_host_close(h);
    return 0;
}
