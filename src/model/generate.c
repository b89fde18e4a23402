/* generate.c — see generate.h. */
#include "model/generate.h"

#include <stdlib.h>
#include <string.h>

struct ox_gen {
    ox_session *s;
    const ox_tokenizer *tok;
    ox_sampler *smp;
    ox_logits_filter filter;
    int vocab, limit, max_tokens, show_special;
    int32_t *stops;         /* eos ids (if use_eos) and the caller's */
    int n_stops;
    int32_t *prompt;        /* set by start; [next, n_prompt) still to run */
    int n_prompt, next, started;
    int32_t pending[1];     /* returned but not yet forwarded (a list: speculative steps queue more) */
    int n_pending;
    int done;
    float *logits;          /* [vocab] of the last forwarded token */
    char *bytes;            /* the last token's bytes */
    int bytes_cap;
    ox_gen_counts counts;
};

void ox_gen_defaults(ox_gen_params *p) {
    *p = (ox_gen_params){.max_tokens = 256, .use_eos = 1};
    ox_sampler_defaults(&p->sampler);
}

ox_gen *ox_gen_new(ox_session *s, const ox_tokenizer *tok, const ox_gen_params *p, ox_err *err) {
    const ox_config *c = ox_model_config(ox_session_model(s));
    if (p->n_stop < 0 || (p->n_stop && !p->stop_ids)) {
        ox_errf(err, OX_E_RANGE, "generate: bad stop id list");
        return NULL;
    }
    ox_gen *g = calloc(1, sizeof *g);
    int n_eos = p->use_eos ? c->n_eos : 0;
    if (g) {
        g->stops = malloc((size_t)(n_eos + p->n_stop + 1) * sizeof *g->stops);
        g->logits = malloc((size_t)c->vocab * sizeof *g->logits);
    }
    if (!g || !g->stops || !g->logits) {
        ox_gen_free(g);
        ox_errf(err, OX_E_NOMEM, "generate: out of memory for a vocabulary of %d", c->vocab);
        return NULL;
    }
    if (!(g->smp = ox_sampler_new(&p->sampler, err))) {
        ox_gen_free(g);
        return NULL;
    }
    g->s = s;
    g->tok = tok;
    g->filter = p->filter;
    g->vocab = c->vocab;
    g->limit = ox_session_max_ctx(s);
    if (p->max_context > 0 && p->max_context < g->limit) g->limit = p->max_context;
    g->max_tokens = p->max_tokens;
    g->show_special = p->show_special;
    if (n_eos) memcpy(g->stops, c->eos_ids, (size_t)n_eos * sizeof *g->stops);
    if (p->n_stop) memcpy(g->stops + n_eos, p->stop_ids, (size_t)p->n_stop * sizeof *g->stops);
    g->n_stops = n_eos + p->n_stop;
    return g;
}

void ox_gen_free(ox_gen *g) {
    if (!g) return;
    ox_sampler_free(g->smp);
    free(g->stops);
    free(g->prompt);
    free(g->logits);
    free(g->bytes);
    free(g);
}

const ox_gen_counts *ox_gen_counts_of(const ox_gen *g) { return &g->counts; }

int ox_gen_start(ox_gen *g, const int32_t *prompt, int n, ox_err *err) {
    if (g->started) return ox_errf(err, OX_E_STATE, "generate: the prompt is already set");
    if (n < 1 || !prompt) return ox_errf(err, OX_E_RANGE, "no tokens to run");
    for (int i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= g->vocab)
            return ox_errf(err, OX_E_RANGE, "token id %d is out of range (vocab %d)", prompt[i], g->vocab);
    if (!(g->prompt = malloc((size_t)n * sizeof *g->prompt)))
        return ox_errf(err, OX_E_NOMEM, "generate: out of memory for a prompt of %d tokens", n);
    memcpy(g->prompt, prompt, (size_t)n * sizeof *prompt);
    g->n_prompt = n;
    g->started = 1;
    int k = ox_session_reuse(g->s, prompt, n, err);
    if (k < 0) return k;
    g->next = g->counts.reused = k;
    return k;
}

int ox_gen_prefill(ox_gen *g, int max_n, ox_err *err) {
    if (!g->started) return ox_errf(err, OX_E_STATE, "generate: prefill before the prompt is set");
    int left = g->n_prompt - g->next;
    if (left == 0) return 0;
    int n = max_n > 0 && max_n < left ? max_n : left;
    ox_forward_io io = {.tokens = g->prompt + g->next, .n = n, .logits = n == left ? g->logits : NULL};
    int rc = ox_forward(g->s, &io, err);
    if (rc) return rc;
    g->next += n;
    g->counts.prefilled += n;
    return left - n;
}

static int is_stop(const ox_gen *g, int tok) {
    for (int i = 0; i < g->n_stops; i++)
        if (g->stops[i] == tok) return 1;
    return 0;
}

static int token_bytes(ox_gen *g, int tok, ox_gen_token *out, ox_err *err) {
    if (!g->tok) return 0;
    int flags = g->show_special ? OX_TOK_SHOW_SPECIAL : 0;
    int n = ox_token_bytes(g->tok, tok, flags, g->bytes, g->bytes_cap, err);
    if (n > g->bytes_cap) {
        char *b = realloc(g->bytes, (size_t)n);
        if (!b) return ox_errf(err, OX_E_NOMEM, "generate: out of memory for %d token bytes", n);
        g->bytes = b;
        g->bytes_cap = n;
        n = ox_token_bytes(g->tok, tok, flags, g->bytes, g->bytes_cap, err);
    }
    if (n < 0) return n;
    out->bytes = g->bytes;
    out->n_bytes = n;
    return 0;
}

static int filter_failed(ox_err *err, int rc) {
    if (err) {
        err->code = rc;
        ox_err_prefix(err, "logits filter");
    }
    return rc;
}

static int finish(ox_gen *g, int status) {
    g->done = 1;
    return status;
}

int ox_gen_step(ox_gen *g, ox_gen_token *out, ox_err *err) {
    *out = (ox_gen_token){-1, NULL, 0};
    if (!g->started || g->next < g->n_prompt)
        return ox_errf(err, OX_E_STATE, "generate: step before the prompt has run");
    if (g->done) return ox_errf(err, OX_E_STATE, "generate: the generation has ended");
    if (g->counts.generated >= g->max_tokens) return finish(g, OX_GEN_LENGTH);
    if (g->n_pending) {
        ox_forward_io io = {.tokens = g->pending, .n = g->n_pending, .logits = g->logits};
        int rc = ox_forward(g->s, &io, err);
        if (rc) return rc;
        g->n_pending = 0;
        g->counts.decoded++;
    }
    int pos = ox_session_pos(g->s);
    if (pos >= g->limit) return finish(g, OX_GEN_CONTEXT);
    int rc;
    if (g->filter.mask && (rc = g->filter.mask(g->filter.ud, g->logits, g->vocab, err)) < 0)
        return filter_failed(err, rc);
    int tok = ox_sample(g->smp, g->logits, g->vocab, ox_session_tokens(g->s), pos);
    if (tok < 0)
        return ox_errf(err, tok, "sample: %s", tok == OX_E_NOMEM ? "out of memory"
                       : "no token can be sampled (a bias id beyond the vocabulary, or every logit is -inf)");
    if (g->filter.accept && (rc = g->filter.accept(g->filter.ud, tok, err)) < 0) return filter_failed(err, rc);
    out->token = tok;
    if (is_stop(g, tok)) return finish(g, OX_GEN_STOP);
    if ((rc = token_bytes(g, tok, out, err))) return rc;
    g->counts.generated++;
    g->pending[g->n_pending++] = tok;
    return g->counts.generated >= g->max_tokens ? finish(g, OX_GEN_LENGTH) : OX_GEN_TOKEN;
}
