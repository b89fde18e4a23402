/* wasm_api.c — the exports of src/wasm/abi.h (the contract, documented there). Thin: each
 * wraps one core call and keeps the last error for the worker to read (ox_wasm_err_code /
 * ox_wasm_err_msg). Only the engine worker calls these, one at a time, so one static ox_err
 * is enough. */
#ifdef __EMSCRIPTEN__
#include "wasm/abi.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "formats/gguf.h"
#include "formats/tensors.h"
#include "decode/json_schema.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/embed.h"
#include "model/estimate.h"
#include "model/gpu_attach.h"
#include "model/lora.h"

#define API OX_EXPORT

/* The engine facade (engine/engine.h) under the ABI's name. */
struct ox_wasm_engine {
    ox_engine *core;
};

struct ox_wasm_gen {
    ox_gen *g;
    const ox_session *s;
    ox_grammar *grammar; /* the output's constraint, or NULL */
    double out[OX_WASM_N_GEN_OUT];
};

static ox_err last;

API int ox_wasm_err_code(void) { return last.code; }
API const char *ox_wasm_err_msg(void) { return last.msg; }
API const char *ox_wasm_code_name(int code) { return ox_err_code_name(code); }

API int ox_wasm_set_threads(int n) { return ox_pool_init(n, &last); }
API int ox_wasm_threads(void) { return ox_pool_threads(); }

static int progress(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    return ox_js_progress((double)done, (double)total);
}

/* Grammars poll the JS side's abort flag (ox_js_aborted) while they compile and mask. */
static int js_aborted(void *ud) {
    (void)ud;
    return ox_js_aborted();
}

/* The GPU's types as a bit mask (an f64 across the ABI). */
static uint64_t gpu_types_of(double t) { return t > 0 && t < 18446744073709551616.0 ? (uint64_t)t : 0; }

/* A load's matrices to the GPU thread as they are read (ox_load_opts.gpu_put). */
static int gpu_put(void *ud, const int32_t *entry, uint64_t row0, uint64_t rows, const void *bytes, ox_err *err) {
    (void)ud;
    char msg[256] = "";
    int rc = ox_js_gpu_put(entry, (double)row0, (double)rows, bytes, msg, (int)sizeof msg);
    return rc ? ox_errf(err, rc, "%s", msg) : 0;
}

API ox_wasm_engine *ox_wasm_load(const int *files, int n_files, int quant, int tables_on_host, double max_resident,
                                 int stream, double weight_cache, int gpu, double gpu_types) {
    last = (ox_err){0};
    if (!(weight_cache >= 0 && weight_cache <= 9007199254740991.0)) {
        ox_errf(&last, OX_E_RANGE, "weight cache of %.17g bytes is not a byte count", weight_cache);
        return NULL;
    }
    ox_wasm_engine *e = calloc(1, sizeof *e);
    if (!e) {
        ox_errf(&last, OX_E_NOMEM, "out of memory for the engine");
        return NULL;
    }
    ox_load_opts o = {.quant = (ox_quant)quant,
                      .tables_on_host = tables_on_host,
                      .max_resident = (uint64_t)max_resident,
                      .progress = progress,
                      .stream = (ox_stream)stream,
                      .weight_cache = (uint64_t)weight_cache,
                      .gpu_put = gpu ? gpu_put : NULL,
                      .gpu_types = gpu_types_of(gpu_types)};
    if (!(e->core = ox_engine_load(files, n_files, &o, 0, &last))) free(e), e = NULL;
    else ox_engine_set_abort(e->core, js_aborted, NULL);
    return e;
}

extern unsigned char __heap_base; /* wasm-ld: the end of static data and the main stack */

/* Bytes of wasm memory in use: static data and stack, then what malloc holds. */
static uint64_t in_use(void) { return (uintptr_t)&__heap_base + (uint64_t)(unsigned)mallinfo().uordblks; }

API int ox_wasm_estimate(const int *files, int n_files, int quant, int tables_on_host, int stream, double weight_cache,
                         int n_ctx, int kv_type, double budget, int fit, int gpu, double gpu_types, double *out) {
    last = (ox_err){0};
    ox_model_files *mf = ox_files_open(files, n_files, &last);
    if (!mf) {
        ox_engine_name_files(&last, files, n_files);
        return last.code;
    }
    ox_tokenizer *tok = ox_tokenizer_load(mf, &last);
    int rc = tok ? 0 : last.code;
    ox_mem_estimate e;
    /* the vision tower (when the files hold one) is held beside the decoder: its weights come
     * off the budget first, then join the weights and the total */
    uint64_t vbytes = 0, vreads = 0, vgpu = 0;
    if (!rc && ox_vision_estimate(mf, ox_engine_vision_quant((ox_quant)quant), &vbytes, &vreads, &last) < 0)
        rc = last.code;
    if (!rc && ox_vision_gpu_estimate(mf, ox_engine_vision_quant((ox_quant)quant), &vgpu, &last) < 0) rc = last.code;
    if (budget > 0) budget = budget > (double)vbytes ? budget - (double)vbytes : 1;
    if (!rc) {
        ox_load_opts o = {.quant = (ox_quant)quant,
                          .tables_on_host = tables_on_host,
                          .stream = (ox_stream)stream,
                          .weight_cache = (uint64_t)weight_cache,
                          .gpu_types = gpu_types_of(gpu_types)};
        ox_mem_request rq = {n_ctx, kv_type, ox_pool_threads(), in_use(), gpu};
        rc = ox_memory_budget(mf, &o, &rq, (uint64_t)budget, fit, &e, &last);
    }
    ox_tokenizer_free(tok);
    ox_files_free(mf);
    if (rc) {
        ox_engine_name_files(&last, files, n_files);
        return rc;
    }
    e.weights += vbytes, e.total += vbytes, e.file_bytes += vreads;
    if (e.gpu) e.gpu_weights += vgpu; /* the tower uploads its weights and keeps them resident */
#define OX_EST_OUT_(f, w) out[OX_WASM_EST_##f] = (double)e.f;
    OX_WASM_ESTIMATE(OX_EST_OUT_)
#undef OX_EST_OUT_
    return OX_WASM_N_ESTIMATE;
}

API int ox_wasm_reserve(double bytes) {
    last = (ox_err){0};
    uint64_t have = in_use();
    if (!(bytes > (double)have)) return 0;
    size_t more = (size_t)(bytes - (double)have);
    void *p = malloc(more); /* sbrk grows the memory; freed, the top stays for later mallocs */
    if (!p)
        return ox_errf(&last, OX_E_NOMEM, "wasm memory cannot grow to %.0f bytes (%llu in use)", bytes,
                       (unsigned long long)have);
    free(p);
    return 0;
}

API int ox_wasm_load_drafter(ox_wasm_engine *e, const int32_t *files, int n_files, int quant) {
    last = (ox_err){0};
    ox_load_opts o = {.quant = (ox_quant)quant, .progress = progress};
    return ox_engine_load_drafter(e->core, files, n_files, &o, &last);
}

API void ox_wasm_free(ox_wasm_engine *e) {
    if (!e) return;
    ox_engine_free(e->core);
    free(e);
}

API int ox_wasm_lora_set(ox_wasm_engine *e, const int32_t *files, const int32_t *counts, const double *scales, int n) {
    last = (ox_err){0};
    float sc[OX_LORA_MAX];
    for (int i = 0; i < n && i < OX_LORA_MAX; i++) sc[i] = (float)scales[i];
    return ox_engine_set_lora(e->core, files, counts, sc, n, &last);
}

API const char *ox_wasm_info(const ox_wasm_engine *e) { return ox_engine_info(e->core); }

API const char *ox_wasm_gguf_str(const ox_wasm_engine *e, const char *key) {
    const struct ox_gguf *g = ox_files_gguf(ox_model_files_of(ox_engine_model(e->core)));
    const char *s = NULL;
    return g && ox_gguf_get_str(g, key, &s, NULL) == 0 ? s : NULL;
}

API ox_session *ox_wasm_session_new(ox_wasm_engine *e, int max_ctx, int kv_type) {
    return ox_session_new_kv(ox_engine_model(e->core), max_ctx, (ox_kv_type)kv_type, &last);
}
API void ox_wasm_session_free(ox_session *s) { ox_session_free(s); }
API int ox_wasm_session_pos(const ox_session *s) { return ox_session_pos(s); }
API int ox_wasm_session_prealloc(ox_session *s) {
    last = (ox_err){0};
    return ox_session_prealloc(s, &last);
}
API int ox_wasm_session_truncate(ox_session *s, int pos) { return ox_session_truncate(s, pos, &last); }
API int ox_wasm_session_reuse(ox_session *s, const int32_t *tokens, int n) {
    return ox_session_reuse(s, tokens, n, &last);
}

API int ox_wasm_gpu_attach(ox_wasm_engine *e, int layers, int types) {
    int n = 0;
    if (ox_engine_gpu_attach(e->core, layers, (uint32_t)types, &last)) return last.code;
    ox_gpu_table(ox_model_gpu(ox_engine_model(e->core)), &n);
    return n;
}
API const int32_t *ox_wasm_gpu_table(ox_wasm_engine *e) {
    int n = 0;
    const ox_gpu *g = ox_model_gpu(ox_engine_model(e->core));
    return g ? ox_gpu_table(g, &n) : NULL;
}
API void ox_wasm_gpu_detach(ox_wasm_engine *e) { ox_engine_gpu_detach(e->core); }
API int ox_wasm_gpu_layers(ox_wasm_engine *e) { return ox_model_gpu_layers(ox_engine_model(e->core)); }
API double ox_wasm_gpu_release(ox_wasm_engine *e) { return (double)ox_model_gpu_release(ox_engine_model(e->core)); }

API int ox_wasm_forward(ox_session *s, const int32_t *tokens, int n, float *logits, int all) {
    ox_forward_io io = {.tokens = tokens, .n = n, .logits = logits, .all_logits = all};
    return ox_forward(s, &io, &last);
}

API int ox_wasm_tokenize(const ox_wasm_engine *e, const char *text, int len, int special, int32_t *out, int cap) {
    return ox_tokenize(ox_engine_tokenizer(e->core), text, (size_t)len, special ? OX_TOK_SPECIAL : 0, out, cap, &last);
}

API int ox_wasm_token_bytes(const ox_wasm_engine *e, int id, int show_special, char *out, int cap) {
    return ox_token_bytes(ox_engine_tokenizer(e->core), id, show_special ? OX_TOK_SHOW_SPECIAL : 0, out, cap, &last);
}

API int ox_wasm_stats(const ox_wasm_engine *e, double *out) {
    ox_model_stats st;
    ox_model_stats_get(ox_engine_model(e->core), &st);
    const ox_vision *v = ox_engine_vision(e->core); /* the vision tower's weights are resident too */
    out[OX_WASM_STAT_resident_bytes] = (double)st.resident_bytes + (v ? (double)ox_vision_bytes(v) : 0.0);
    out[OX_WASM_STAT_host_bytes_read] = (double)st.host_bytes_read;
    out[OX_WASM_STAT_rows_fetched] = (double)st.rows_fetched;
    out[OX_WASM_STAT_host_read_calls] = (double)ox_host_reads();
    out[OX_WASM_STAT_host_bytes_read_all] = (double)ox_host_bytes_read();
    out[OX_WASM_STAT_heap_bytes] = (double)in_use();
    out[OX_WASM_STAT_wasm_bytes] = (double)__builtin_wasm_memory_size(0) * 65536.0;
    out[OX_WASM_STAT_stream_bytes] = (double)st.stream_bytes;
    out[OX_WASM_STAT_stream_hits] = (double)st.stream_hits;
    out[OX_WASM_STAT_stream_misses] = (double)st.stream_misses;
    return OX_WASM_N_STATS;
}

/* ---- generation ---- */

/* The parameter record onto ox_gen_params: NaN keeps the default. */
static int gen_params(const double *r, ox_gen_params *p) {
    ox_gen_defaults(p);
    double seed = r[OX_WASM_GP_seed];
    if (!(seed >= 0 && seed <= 9007199254740991.0 && seed == floor(seed)))
        return ox_errf(&last, OX_E_RANGE, "seed must be an integer from 0 to 2^53-1, not %.17g", seed);
    p->sampler.seed = (uint64_t)seed;
    /* every row of OX_WASM_GEN_PARAMS by its kind; S rows are set here (seed) or by the caller */
#define GP_F(f, dst) p->dst = (float)r[OX_WASM_GP_##f]
#define GP_I(f, dst) p->dst = (int)r[OX_WASM_GP_##f]
#define GP_B         GP_I
#define GP_P(f, dst) p->dst = (void *)(uintptr_t)r[OX_WASM_GP_##f]
#define GP_S(f, dst) (void)0
#define GP_SET_(f, dst, kind, lo, hi, js, w)                                                                           \
    if (!isnan(r[OX_WASM_GP_##f])) GP_##kind(f, dst);
    OX_WASM_GEN_PARAMS(GP_SET_)
#undef GP_SET_
#undef GP_F
#undef GP_I
#undef GP_B
#undef GP_P
#undef GP_S
    return 0;
}

/* The grammar of the record (if any), compiled by the engine with the generation's stop ids. */
static ox_grammar *gen_grammar(ox_wasm_engine *e, const double *r, const ox_gen_params *p) {
    if (isnan(r[OX_WASM_GP_grammar]) || !r[OX_WASM_GP_grammar]) return NULL;
    const char *src = (const char *)(uintptr_t)r[OX_WASM_GP_grammar];
    size_t len = isnan(r[OX_WASM_GP_n_grammar]) ? 0 : (size_t)r[OX_WASM_GP_n_grammar];
    return ox_engine_grammar(e->core, src, len, p, &last);
}

API ox_wasm_gen *ox_wasm_gen_new(ox_wasm_engine *e, ox_session *s, const double *params) {
    ox_gen_params p;
    if (gen_params(params, &p)) return NULL;
    ox_wasm_gen *w = calloc(1, sizeof *w);
    if (!w) {
        ox_errf(&last, OX_E_NOMEM, "out of memory for a generation");
        return NULL;
    }
    last = (ox_err){0};
    w->grammar = gen_grammar(e, params, &p);
    if (last.code) {
        free(w);
        return NULL;
    }
    if (w->grammar) p.filter = ox_engine_grammar_filter(w->grammar);
    if (!isnan(params[OX_WASM_GP_mtp]) && params[OX_WASM_GP_mtp] != 0) {
        if (!ox_engine_drafter(e->core)) {
            ox_grammar_free(w->grammar);
            free(w);
            ox_errf(&last, OX_E_STATE, "speculative method mtp: no MTP drafter is loaded (loadModel's drafter option)");
            return NULL;
        }
        p.drafter = ox_engine_drafter(e->core);
    }
    if (!(w->g = ox_gen_new(s, ox_engine_tokenizer(e->core), &p, &last))) {
        ox_grammar_free(w->grammar);
        free(w);
        return NULL;
    }
    w->s = s;
    w->out[OX_WASM_GO_token] = -1;
    return w;
}

API void ox_wasm_gen_free(ox_wasm_gen *g) {
    if (!g) return;
    ox_gen_free(g->g);
    ox_grammar_free(g->grammar);
    free(g);
}

API const double *ox_wasm_gen_out(const ox_wasm_gen *g) { return g->out; }
API int ox_wasm_gen_start(ox_wasm_gen *g, const int32_t *prompt, int n) { return ox_gen_start(g->g, prompt, n, &last); }
API int ox_wasm_gen_prefill(ox_wasm_gen *g, int max_n) { return ox_gen_prefill(g->g, max_n, &last); }
API int ox_wasm_gen_soft(ox_wasm_gen *g, const float *soft, const uint8_t *mask, int n) {
    return ox_gen_soft(g->g, soft, mask, n, &last);
}

API int ox_wasm_gen_step(ox_wasm_gen *g) {
    ox_gen_token t;
    int rc = ox_gen_step(g->g, &t, &last);
    const ox_gen_counts *c = ox_gen_counts_of(g->g);
    double *o = g->out;
    o[OX_WASM_GO_token] = t.token;
    o[OX_WASM_GO_bytes] = (double)(uintptr_t)t.bytes;
    o[OX_WASM_GO_n_bytes] = t.n_bytes;
    o[OX_WASM_GO_generated] = c->generated;
    o[OX_WASM_GO_decoded] = c->decoded;
    o[OX_WASM_GO_pos] = ox_session_pos(g->s);
    o[OX_WASM_GO_drafted] = c->drafted;
    o[OX_WASM_GO_accepted] = c->accepted;
    o[OX_WASM_GO_logprob] = t.logprob;
    o[OX_WASM_GO_n_top] = t.n_top;
    o[OX_WASM_GO_top_ids] = (double)(uintptr_t)t.top_ids;
    o[OX_WASM_GO_top_logprobs] = (double)(uintptr_t)t.top_logprobs;
    return rc;
}

/* ---- embeddings ---- */

API int ox_wasm_embed(ox_wasm_engine *e, const int32_t *tokens, int n, int pooling, int normalize, float *out) {
    return ox_embed(ox_engine_model(e->core), tokens, n, (ox_pooling)pooling, normalize, out, &last);
}

API int ox_wasm_image_embed(ox_wasm_engine *e, const float *rgb, int height, int width, float *out, int max_tokens) {
    last = (ox_err){0};
    ox_vision *v = ox_engine_vision(e->core);
    if (!v) return ox_errf(&last, OX_E_UNSUPPORTED, "the model has no vision tower (load its mmproj GGUF beside it)");
    return ox_vision_embed(v, rgb, height, width, out, max_tokens, &last);
}

/* ---- JSON schema -> grammar ---- */

API const char *ox_wasm_json_schema_grammar(const char *json, int n, int tools, int after_name, int parallel) {
    static char *gbnf; /* the last result, kept until the next call */
    free(gbnf);
    gbnf = NULL;
    last = (ox_err){0};
    int mode = tools
                   ? OX_SCHEMA_TOOL_CALLS | (after_name ? OX_SCHEMA_AFTER_NAME : 0) | (parallel ? OX_SCHEMA_PARALLEL : 0)
                   : OX_SCHEMA_JSON;
    if (n < 0) {
        ox_errf(&last, OX_E_RANGE, "JSON schema: %d bytes", n);
        return NULL;
    }
    ox_json_schema_grammar(json, (size_t)n, mode, &gbnf, NULL, &last);
    return gbnf;
}

API int ox_wasm_grammar_accepts(ox_wasm_engine *e, const char *gbnf, int n_gbnf, const char *text, int n_text) {
    if (n_gbnf < 0 || n_text < 0) return ox_errf(&last, OX_E_RANGE, "grammar_accepts: negative length");
    ox_gen_params no_stops = {.use_eos = 0};
    ox_grammar *g = ox_engine_grammar(e->core, gbnf, (size_t)n_gbnf, &no_stops, &last);
    if (!g) return last.code;
    ox_err err = {0};
    int ok = ox_grammar_accept_text(g, text, (size_t)n_text, &err) == 0 && ox_grammar_complete(g);
    ox_grammar_free(g);
    return ok;
}
#endif
