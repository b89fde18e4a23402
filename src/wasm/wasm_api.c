/* wasm_api.c — the functions js/worker.js calls. Thin: each wraps one core call and keeps the
 * last error for the worker to read (ox_wasm_err_code / ox_wasm_err_msg). Only the engine
 * worker calls these, one at a time, so one static ox_err is enough.
 *
 * An engine is a loaded model plus its tokenizer. Pointers cross into JS as unsigned 32-bit
 * numbers; 64-bit counts cross as doubles (exact below 2^53). */
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "model/model.h"
#include "kernels/pool.h"
#include "model/sampler.h"
#include "formats/tensors.h"
#include "model/tokenizer.h"

#define API EMSCRIPTEN_KEEPALIVE

/* js/hostfile_lib.js: returns nonzero to abort the load */
extern int ox_js_progress(double done, double total);

typedef struct ox_wasm_engine {
    ox_model *m;
    ox_tokenizer *tok;
    char *info; /* JSON, made once */
} ox_wasm_engine;

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

API ox_wasm_engine *ox_wasm_load(const int *files, int n_files, int quant, int tables_on_host, double max_resident) {
    last = (ox_err){0};
    if (quant < OX_QUANT_STORED || quant > OX_QUANT_Q4) {
        ox_errf(&last, OX_E_RANGE, "quant %d is not one of stored, bf16, q8, q4", quant);
        return NULL;
    }
    ox_wasm_engine *e = calloc(1, sizeof *e);
    if (!e) {
        ox_errf(&last, OX_E_NOMEM, "out of memory for the engine");
        return NULL;
    }
    ox_model_files *mf = ox_files_open(files, n_files, &last);
    if (!mf) goto fail;
    ox_load_opts o = {(ox_quant)quant, tables_on_host, (uint64_t)max_resident, progress, NULL};
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

API void ox_wasm_free(ox_wasm_engine *e) {
    if (!e) return;
    ox_tokenizer_free(e->tok);
    ox_model_free(e->m);
    free(e->info);
    free(e);
}

static int token_id(const ox_wasm_engine *e, const char *piece) {
    return ox_tokenizer_find(e->tok, piece);
}

/* {"name", "vocab", "hidden", "layers", "heads", "kvHeads", "headDim", "contextSize",
 *  "slidingWindow", "pleDim", "experts", "bos", "pad", "eosIds", "turnEnd", "channelOpen",
 *  "channelClose", "quant"}; token ids are -1 where the vocabulary lacks the piece. */
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

/* A GGUF string key (e.g. tokenizer.chat_template), or NULL when absent / not a GGUF. */
API const char *ox_wasm_gguf_str(const ox_wasm_engine *e, const char *key) {
    const struct ox_gguf *g = ox_files_gguf(ox_model_files_of(e->m));
    const char *s = NULL;
    return g && ox_gguf_get_str(g, key, &s, NULL) == 0 ? s : NULL;
}

API ox_session *ox_wasm_session_new(ox_wasm_engine *e, int max_ctx) { return ox_session_new(e->m, max_ctx, &last); }
API void ox_wasm_session_free(ox_session *s) { ox_session_free(s); }
API int ox_wasm_session_pos(const ox_session *s) { return ox_session_pos(s); }
API int ox_wasm_session_truncate(ox_session *s, int pos) { return ox_session_truncate(s, pos, &last); }

/* Run n tokens; logits (may be NULL): vocab floats of the last token, or n * vocab if all. */
API int ox_wasm_forward(ox_session *s, const int32_t *tokens, int n, float *logits, int all) {
    ox_forward_io io = {.tokens = tokens, .n = n, .logits = logits, .all_logits = all};
    return ox_forward(s, &io, &last);
}

/* len bytes of UTF-8; special: match control tokens (<bos>, <|turn>, ...) in the text.
 * Returns the number of ids (> cap: call again with a larger buffer) or <0. */
API int ox_wasm_tokenize(const ox_wasm_engine *e, const char *text, int len, int special, int32_t *out, int cap) {
    return ox_tokenize(e->tok, text, (size_t)len, special ? OX_TOK_SPECIAL : 0, out, cap, &last);
}

/* Bytes of one token (control tokens: none, unless show_special). Same return convention. */
API int ox_wasm_token_bytes(const ox_wasm_engine *e, int id, int show_special, char *out, int cap) {
    return ox_token_bytes(e->tok, id, show_special ? OX_TOK_SHOW_SPECIAL : 0, out, cap, &last);
}

/* A sampler (sampler.h); seed as a double (integers up to 2^53). Bias arrays are copied. */
API ox_sampler *ox_wasm_sampler_new(float temperature, int top_k, float top_p, float min_p, float repeat_penalty,
                                    float frequency_penalty, float presence_penalty, int penalty_window, double seed,
                                    const int32_t *bias_ids, const float *bias, int n_bias) {
    ox_sampler_params p = {temperature, top_k, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty,
                           penalty_window, (uint64_t)seed, bias_ids, bias, n_bias};
    return ox_sampler_new(&p, &last);
}

API void ox_wasm_sampler_free(ox_sampler *s) { ox_sampler_free(s); }

/* Next token from the vocab logits (changed in place); recent: the tokens so far. */
API int ox_wasm_sample(const ox_wasm_engine *e, ox_sampler *s, float *logits, const int32_t *recent, int n_recent) {
    int rc = ox_sample(s, logits, ox_model_config(e->m)->vocab, recent, n_recent);
    if (rc < 0) ox_errf(&last, rc, "sample: %s", rc == OX_E_NOMEM ? "out of memory" : "no token can be sampled (a bias id beyond the vocabulary, or every logit is -inf)");
    return rc;
}

API int ox_wasm_stats(const ox_wasm_engine *e, double *out) {
    ox_model_stats st;
    ox_model_stats_get(e->m, &st);
    out[0] = (double)st.resident_bytes;
    out[1] = (double)st.host_bytes_read;
    out[2] = (double)st.rows_fetched;
    out[3] = (double)ox_host_reads();
    out[4] = (double)ox_host_bytes_read();
    return 5;
}
#endif
