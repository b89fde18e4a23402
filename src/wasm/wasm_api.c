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

#include "formats/gguf.h"
#include "formats/tensors.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/drafter_mtp.h"
#include "model/embed.h"
#include "model/estimate.h"
#include "model/gpu_attach.h"
#include "model/grammar.h"
#include "model/lora.h"
#include "model/tokenizer.h"

#define API OX_EXPORT

struct ox_wasm_engine {
    ox_model *m;
    ox_model *drafter;       /* MTP drafter (ox_wasm_load_drafter), or NULL */
    ox_tokenizer *tok;
    char *info;              /* JSON, made once */
    ox_grammar_vocab *gvocab; /* the grammar engine's index of the vocabulary, made on first use */
    ox_lora *lora[OX_LORA_MAX]; /* the attached adapters, owned */
    int n_lora;
};

struct ox_wasm_gen {
    ox_gen *g;
    const ox_session *s;
    ox_grammar *grammar;     /* the output's constraint, or NULL */
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

static char *info_json(const ox_wasm_engine *e);

/* Load errors name the file; a message about the model as a whole (e.g. out of memory) gets
 * the first file's name in front. */
static void name_files(const int *files, int n) {
    for (int i = 0; i < n; i++)
        if (strstr(last.msg, ox_host_name(files[i]))) return;
    if (n == 1) ox_err_prefix(&last, "%s", ox_host_name(files[0]));
    else if (n > 1) ox_err_prefix(&last, "%s (+%d files)", ox_host_name(files[0]), n - 1);
}

API ox_wasm_engine *ox_wasm_load(const int *files, int n_files, int quant, int tables_on_host, double max_resident,
                                 int stream, double weight_cache) {
    last = (ox_err){0};
#define OX_QUANT_NAME_(name, id, js) " " js
    if (quant < OX_QUANT_STORED || quant > OX_QUANT_Q4) {
        ox_errf(&last, OX_E_RANGE, "quant %d is not one of" OX_QUANTS(OX_QUANT_NAME_), quant);
        return NULL;
    }
#undef OX_QUANT_NAME_
    if (!(weight_cache >= 0 && weight_cache <= 9007199254740991.0)) {
        ox_errf(&last, OX_E_RANGE, "weight cache of %.17g bytes is not a byte count", weight_cache);
        return NULL;
    }
    ox_wasm_engine *e = calloc(1, sizeof *e);
    if (!e) {
        ox_errf(&last, OX_E_NOMEM, "out of memory for the engine");
        return NULL;
    }
    ox_model_files *mf = ox_files_open(files, n_files, &last);
    if (!mf) goto fail;
    ox_load_opts o = {.quant = (ox_quant)quant, .tables_on_host = tables_on_host, .max_resident = (uint64_t)max_resident,
                      .progress = progress, .stream = (ox_stream)stream, .weight_cache = (uint64_t)weight_cache};
    e->m = ox_model_load(mf, &o, &last); /* takes mf, also on failure */
    if (!e->m) goto fail;
    e->tok = ox_tokenizer_load(ox_model_files_of(e->m), &last);
    if (!e->tok) goto fail;
    e->info = info_json(e);
    if (!e->info) goto fail;
    return e;
fail:
    name_files(files, n_files);
    ox_tokenizer_free(e->tok);
    ox_model_free(e->m);
    free(e);
    return NULL;
}

extern unsigned char __heap_base; /* wasm-ld: the end of static data and the main stack */

/* Bytes of wasm memory in use: static data and stack, then what malloc holds. */
static uint64_t in_use(void) { return (uintptr_t)&__heap_base + (uint64_t)(unsigned)mallinfo().uordblks; }

API int ox_wasm_estimate(const int *files, int n_files, int quant, int tables_on_host, int stream, double weight_cache,
                         int n_ctx, int kv_type, double budget, int fit, double *out) {
    last = (ox_err){0};
    ox_model_files *mf = ox_files_open(files, n_files, &last);
    if (!mf) {
        name_files(files, n_files);
        return last.code;
    }
    ox_tokenizer *tok = ox_tokenizer_load(mf, &last);
    int rc = tok ? 0 : last.code;
    ox_mem_estimate e;
    if (!rc) {
        ox_load_opts o = {.quant = (ox_quant)quant, .tables_on_host = tables_on_host, .stream = (ox_stream)stream,
                          .weight_cache = (uint64_t)weight_cache};
        ox_mem_request rq = {n_ctx, kv_type, ox_pool_threads(), in_use()};
        rc = ox_memory_budget(mf, &o, &rq, (uint64_t)budget, fit, &e, &last);
    }
    ox_tokenizer_free(tok);
    ox_files_free(mf);
    if (rc) {
        name_files(files, n_files);
        return rc;
    }
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
    if (quant < OX_QUANT_STORED || quant > OX_QUANT_Q4) return ox_errf(&last, OX_E_RANGE, "drafter: quant %d is unknown", quant);
    ox_model_files *mf = ox_files_open(files, n_files, &last);
    ox_load_opts o = {.quant = (ox_quant)quant, .progress = progress, .drafter = 1};
    ox_model *d = mf ? ox_model_load(mf, &o, &last) : NULL; /* takes mf */
    if (d && ox_mtp_check(d, e->m, &last)) ox_model_free(d), d = NULL;
    if (!d) {
        name_files(files, n_files);
        return last.code ? last.code : OX_E_STATE;
    }
    ox_model_free(e->drafter);
    e->drafter = d;
    return 0;
}

API void ox_wasm_free(ox_wasm_engine *e) {
    if (!e) return;
    ox_tokenizer_free(e->tok);
    ox_model_free(e->drafter);
    for (int i = 0; i < e->n_lora; i++) ox_lora_free(e->lora[i]);
    ox_model_free(e->m);
    ox_grammar_vocab_free(e->gvocab);
    free(e->info);
    free(e);
}

API int ox_wasm_lora_set(ox_wasm_engine *e, const int32_t *files, const int32_t *counts, const double *scales, int n) {
    last = (ox_err){0};
    if (n < 0 || n > OX_LORA_MAX) return ox_errf(&last, OX_E_RANGE, "LoRA: %d adapters at once (at most %d)", n, OX_LORA_MAX);
    ox_lora *next[OX_LORA_MAX] = {0};
    float sc[OX_LORA_MAX];
    int rc = 0, modules = 0;
    for (int i = 0, at = 0; i < n && !rc; at += counts[i++]) {
        sc[i] = (float)scales[i];
        next[i] = ox_lora_load(e->m, files + at, counts[i], &last);
        if (!next[i]) rc = last.code;
        else modules += ox_lora_modules(next[i]);
    }
    if (!rc) rc = ox_model_set_lora(e->m, next, sc, n, &last);
    ox_lora **drop = rc ? next : e->lora; /* on error the new ones go, else the old ones */
    for (int i = 0; i < (rc ? n : e->n_lora); i++) ox_lora_free(drop[i]);
    if (rc) return rc;
    memcpy(e->lora, next, sizeof next);
    e->n_lora = n;
    return modules;
}

static int token_id(const ox_wasm_engine *e, const char *piece) {
    return ox_tokenizer_find(e->tok, piece);
}

static char *info_json(const ox_wasm_engine *e) {
    const ox_config *c = ox_model_config(e->m);
    const ox_model_files *mf = ox_model_files_of(e->m);
    const struct ox_gguf *g = ox_files_gguf(mf);
    const char *name = NULL, *sq = ox_files_stored_quant(mf);
    if (g) ox_gguf_get_str(g, "general.name", &name, NULL);
    char eos[8 * 12] = "";
    for (int i = 0, k = 0; i < c->n_eos && i < 8; i++) k += snprintf(eos + k, sizeof eos - k, "%s%d", i ? "," : "", c->eos_ids[i]);
    size_t cap = 1024 + (name ? 2 * strlen(name) : 0);
    char *s = malloc(cap), *q = name ? malloc(2 * strlen(name) + 1) : NULL;
    if (!s || (name && !q)) {
        free(s);
        free(q);
        ox_errf(&last, OX_E_NOMEM, "out of memory for the model info");
        return NULL;
    }
    if (q) { /* JSON string escape: quotes, backslashes; control characters dropped */
        char *w = q;
        for (const char *p = name; *p; p++) {
            if (*p == '"' || *p == '\\') *w++ = '\\';
            if ((unsigned char)*p >= 0x20) *w++ = *p;
        }
        *w = 0;
    }
    snprintf(s, cap,
             "{\"name\":\"%s\",\"vocab\":%d,\"hidden\":%d,\"layers\":%d,\"heads\":%d,\"kvHeads\":%d,"
             "\"headDim\":%d,\"contextSize\":%d,\"slidingWindow\":%d,\"pleDim\":%d,\"experts\":%d,"
             "\"bos\":%d,\"pad\":%d,\"eosIds\":[%s],\"turnEnd\":%d,\"channelOpen\":%d,\"channelClose\":%d,"
             "\"quant\":\"%s\"}",
             q ? q : "", c->vocab, c->hidden, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, c->ctx_max,
             c->sliding_window, c->ple_dim, c->moe ? c->n_experts : 0, c->bos_id, c->pad_id, eos,
             token_id(e, "<turn|>"), token_id(e, "<|channel>"), token_id(e, "<channel|>"), sq ? sq : "stored");
    free(q);
    return s;
}

API const char *ox_wasm_info(const ox_wasm_engine *e) { return e->info; }

API const char *ox_wasm_gguf_str(const ox_wasm_engine *e, const char *key) {
    const struct ox_gguf *g = ox_files_gguf(ox_model_files_of(e->m));
    const char *s = NULL;
    return g && ox_gguf_get_str(g, key, &s, NULL) == 0 ? s : NULL;
}

API ox_session *ox_wasm_session_new(ox_wasm_engine *e, int max_ctx, int kv_type) {
    return ox_session_new_kv(e->m, max_ctx, (ox_kv_type)kv_type, &last);
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

API int ox_wasm_gpu_attach(ox_wasm_engine *e) {
    int n = 0;
    if (ox_model_gpu_attach(e->m, &last)) return last.code;
    ox_gpu_table(ox_model_gpu(e->m), &n);
    return n;
}
API const int32_t *ox_wasm_gpu_table(ox_wasm_engine *e) {
    int n = 0;
    const ox_gpu *g = ox_model_gpu(e->m);
    return g ? ox_gpu_table(g, &n) : NULL;
}
API void ox_wasm_gpu_detach(ox_wasm_engine *e) { ox_model_gpu_detach(e->m); }
API double ox_wasm_gpu_release(ox_wasm_engine *e) { return (double)ox_model_gpu_release(e->m); }

API int ox_wasm_forward(ox_session *s, const int32_t *tokens, int n, float *logits, int all) {
    ox_forward_io io = {.tokens = tokens, .n = n, .logits = logits, .all_logits = all};
    return ox_forward(s, &io, &last);
}

API int ox_wasm_tokenize(const ox_wasm_engine *e, const char *text, int len, int special, int32_t *out, int cap) {
    return ox_tokenize(e->tok, text, (size_t)len, special ? OX_TOK_SPECIAL : 0, out, cap, &last);
}

API int ox_wasm_token_bytes(const ox_wasm_engine *e, int id, int show_special, char *out, int cap) {
    return ox_token_bytes(e->tok, id, show_special ? OX_TOK_SHOW_SPECIAL : 0, out, cap, &last);
}

API int ox_wasm_stats(const ox_wasm_engine *e, double *out) {
    ox_model_stats st;
    ox_model_stats_get(e->m, &st);
    out[OX_WASM_STAT_resident_bytes] = (double)st.resident_bytes;
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
#define SET(field, dst, type) if (!isnan(r[OX_WASM_GP_##field])) dst = (type)r[OX_WASM_GP_##field]
#define PTR(field, dst) if (!isnan(r[OX_WASM_GP_##field])) dst = (void *)(uintptr_t)r[OX_WASM_GP_##field]
    SET(temperature, p->sampler.temperature, float);
    SET(top_k, p->sampler.top_k, int);
    SET(top_p, p->sampler.top_p, float);
    SET(min_p, p->sampler.min_p, float);
    SET(repetition_penalty, p->sampler.repeat_penalty, float);
    SET(frequency_penalty, p->sampler.frequency_penalty, float);
    SET(presence_penalty, p->sampler.presence_penalty, float);
    SET(penalty_window, p->sampler.penalty_window, int);
    SET(max_tokens, p->max_tokens, int);
    SET(eos, p->use_eos, int);
    SET(include_special, p->show_special, int);
    PTR(bias_ids, p->sampler.bias_ids);
    PTR(bias, p->sampler.bias);
    SET(n_bias, p->sampler.n_bias, int);
    PTR(stop_ids, p->stop_ids);
    SET(n_stop, p->n_stop, int);
    SET(draft_tokens, p->draft_max, int);
    SET(draft_p_min, p->draft_p_min, float);
    SET(draft_fixed, p->draft_fixed, int);
    SET(logprobs, p->logprobs, int);
#undef SET
#undef PTR
    return 0;
}

static int grammar_mask(void *ud, float *logits, int vocab, ox_err *err) { return ox_grammar_mask(ud, logits, vocab, err); }
static int grammar_accept(void *ud, int token, ox_err *err) { return ox_grammar_accept(ud, token, err); }

/* The grammar of the record (if any), compiled over the engine's vocabulary, with the
 * generation's stop ids (the model's eos ids unless eos is 0, then stop_ids). */
static ox_grammar *gen_grammar(ox_wasm_engine *e, const double *r, const ox_gen_params *p) {
    if (isnan(r[OX_WASM_GP_grammar]) || !r[OX_WASM_GP_grammar]) return NULL;
    const char *src = (const char *)(uintptr_t)r[OX_WASM_GP_grammar];
    size_t len = isnan(r[OX_WASM_GP_n_grammar]) ? 0 : (size_t)r[OX_WASM_GP_n_grammar];
    if (!e->gvocab && !(e->gvocab = ox_grammar_vocab_new(e->tok, &last))) return NULL;
    const ox_config *c = ox_model_config(e->m);
    int n_eos = p->use_eos ? c->n_eos : 0, n = n_eos + p->n_stop;
    int32_t *stops = malloc((size_t)(n ? n : 1) * sizeof *stops);
    if (!stops) {
        ox_errf(&last, OX_E_NOMEM, "out of memory for the stop ids");
        return NULL;
    }
    for (int i = 0; i < n_eos; i++) stops[i] = c->eos_ids[i];
    if (p->n_stop) memcpy(stops + n_eos, p->stop_ids, (size_t)p->n_stop * sizeof *stops);
    ox_grammar *g = ox_grammar_new(e->gvocab, src, len, stops, n, &last);
    free(stops);
    return g;
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
    if (w->grammar) p.filter = (ox_logits_filter){w->grammar, grammar_mask, grammar_accept};
    if (!isnan(params[OX_WASM_GP_mtp]) && params[OX_WASM_GP_mtp] != 0) {
        if (!e->drafter) {
            ox_grammar_free(w->grammar);
            free(w);
            ox_errf(&last, OX_E_STATE, "speculative method mtp: no MTP drafter is loaded (loadModel's drafter option)");
            return NULL;
        }
        p.drafter = e->drafter;
    }
    if (!(w->g = ox_gen_new(s, e->tok, &p, &last))) {
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
API int ox_wasm_gen_soft(ox_wasm_gen *g, const float *soft, const uint8_t *mask) { return ox_gen_soft(g->g, soft, mask, &last); }

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
    return ox_embed(e->m, tokens, n, (ox_pooling)pooling, normalize, out, &last);
}
#endif
