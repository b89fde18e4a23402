/* generate.c — see generate.h. */
#include "decode/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/draft_lookup.h"
#include "model/drafter_mtp.h"

struct ox_gen {
    ox_session *s;
    const ox_tokenizer *tok;
    ox_sampler *smp;
    ox_logits_filter filter;
    int vocab, limit, max_tokens, show_special;
    int32_t *stops; /* eos ids (if use_eos) and the caller's */
    int n_stops;
    int32_t *prompt; /* set by start; [next, n_prompt) still to run */
    int n_prompt, next, started;
    int32_t pending[1]; /* returned but not yet forwarded */
    int n_pending;
    int done;
    float *logits; /* [vocab] of the last forwarded token */
    char *bytes;   /* the last token's bytes */
    int bytes_cap;
    ox_gen_counts counts;
    float *soft; /* n_prompt x hidden soft-token embeddings, or NULL */
    uint8_t *soft_mask;
    /* speculative decoding */
    int draft_tokens;
    ox_lookup look;
    int32_t queue[OX_GEN_DRAFT_MAX + 1]; /* verified, to be returned by the next steps */
    int q_head, q_n;
    float *rows;    /* a verify batch's logits, (1 + draft_tokens) x vocab */
    float *scratch; /* [vocab]: a row the sampler may modify */
    int32_t *text;  /* the drafter's view: session tokens + the pending one */
    int text_cap;
    ox_mtp *mtp;      /* MTP drafter, or NULL: prompt lookup */
    float *h, *hrows; /* target hidden: of position h_pos; of a verify batch's rows */
    int h_pos, hidden;
    float draft_p_min;
    /* logprobs */
    int logprobs;
    int32_t top_ids[OX_GEN_TOP_MAX];
    float top_lp[OX_GEN_TOP_MAX];
};

void ox_gen_defaults(ox_gen_params *p) {
    *p = (ox_gen_params){.max_tokens = 256, .use_eos = 1, .logprobs = -1, .draft_p_min = 0.3f};
    ox_sampler_defaults(&p->sampler);
}

ox_gen *ox_gen_new(ox_session *s, const ox_tokenizer *tok, const ox_gen_params *p, ox_err *err) {
    const ox_config *c = ox_model_config(ox_session_model(s));
    if (p->n_stop < 0 || (p->n_stop && !p->stop_ids)) {
        ox_errf(err, OX_E_RANGE, "generate: bad stop id list");
        return NULL;
    }
    if (p->draft_tokens < 0 || p->draft_tokens > OX_GEN_DRAFT_MAX) {
        ox_errf(err, OX_E_RANGE, "generate: draft tokens must be from 0 to %d, not %d", OX_GEN_DRAFT_MAX,
                p->draft_tokens);
        return NULL;
    }
    if (p->logprobs < -1 || p->logprobs > OX_GEN_TOP_MAX) {
        ox_errf(err, OX_E_RANGE, "generate: top logprobs must be from 0 to %d, not %d", OX_GEN_TOP_MAX, p->logprobs);
        return NULL;
    }
    ox_gen *g = calloc(1, sizeof *g);
    int n_eos = p->use_eos ? c->n_eos : 0;
    /* drafting is for plain sampling: a filter or logprobs want one token per forward */
    int draft_tokens = p->filter.mask || p->filter.accept || p->logprobs >= 0 ? 0 : p->draft_tokens;
    if (g) {
        g->stops = malloc((size_t)(n_eos + p->n_stop + 1) * sizeof *g->stops);
        g->logits = malloc((size_t)c->vocab * sizeof *g->logits);
        if (draft_tokens || p->logprobs >= 0) g->scratch = malloc((size_t)c->vocab * sizeof *g->scratch);
        if (draft_tokens) g->rows = malloc((size_t)(draft_tokens + 1) * c->vocab * sizeof *g->rows);
    }
    if (!g || !g->stops || !g->logits || ((draft_tokens || p->logprobs >= 0) && !g->scratch) ||
        (draft_tokens && !g->rows)) {
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
    g->draft_tokens = draft_tokens;
    if (draft_tokens)
        ox_lookup_init(&g->look, draft_tokens), g->look.fixed = p->draft_fixed != 0, g->look.grace = p->drafter != NULL;
    g->h_pos = -1;
    g->draft_p_min = p->draft_p_min;
    if (draft_tokens && p->drafter) {
        g->hidden = c->hidden;
        g->h = malloc((size_t)c->hidden * sizeof *g->h);
        g->hrows = malloc((size_t)(draft_tokens + 1) * c->hidden * sizeof *g->hrows);
        if (!g->h || !g->hrows) {
            ox_gen_free(g);
            ox_errf(err, OX_E_NOMEM, "generate: out of memory for the MTP drafter's hidden states");
            return NULL;
        }
        if (!(g->mtp = ox_mtp_new(p->drafter, s, err))) {
            ox_gen_free(g);
            return NULL;
        }
    }
    g->logprobs = p->logprobs;
    return g;
}

void ox_gen_free(ox_gen *g) {
    if (!g) return;
    ox_sampler_free(g->smp);
    free(g->stops);
    free(g->prompt);
    free(g->logits);
    free(g->bytes);
    free(g->soft);
    free(g->soft_mask);
    free(g->rows);
    free(g->scratch);
    free(g->text);
    ox_mtp_free(g->mtp);
    free(g->h);
    free(g->hrows);
    free(g);
}

const ox_gen_counts *ox_gen_counts_of(const ox_gen *g) { return &g->counts; }

int ox_gen_start(ox_gen *g, const int32_t *prompt, int n, ox_err *err) {
    if (g->started) return ox_errf(err, OX_E_STATE, "generate: the prompt is already set");
    if (n < 1 || !prompt) return ox_errf(err, OX_E_RANGE, "no tokens to run");
    if (g->soft && n != g->n_prompt)
        return ox_errf(err, OX_E_RANGE, "generate: soft tokens for a prompt of %d tokens, not %d", g->n_prompt, n);
    for (int i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= g->vocab)
            return ox_errf(err, OX_E_RANGE, "token id %d is out of range (vocab %d)", prompt[i], g->vocab);
    if (!(g->prompt = malloc((size_t)n * sizeof *g->prompt)))
        return ox_errf(err, OX_E_NOMEM, "generate: out of memory for a prompt of %d tokens", n);
    memcpy(g->prompt, prompt, (size_t)n * sizeof *prompt);
    g->n_prompt = n;
    g->started = 1;
    int k = ox_session_reuse_soft(g->s, prompt, n, g->soft, g->soft_mask, err);
    if (k < 0) return k;
    g->next = g->counts.reused = k;
    return k;
}

int ox_gen_soft(ox_gen *g, const float *soft, const uint8_t *mask, int n, ox_err *err) {
    if (g->started) return ox_errf(err, OX_E_STATE, "generate: soft tokens go before the prompt is set");
    if (n < 1 || !soft || !mask) return ox_errf(err, OX_E_RANGE, "generate: soft tokens for %d positions", n);
    int hidden = ox_model_config(ox_session_model(g->s))->hidden, any = 0;
    for (int i = 0; i < n && !any; i++) any = mask[i] != 0;
    if (!any) return 0;
    size_t rows = (size_t)n * (size_t)hidden;
    free(g->soft), free(g->soft_mask);
    g->soft = malloc(rows * sizeof *g->soft);
    g->soft_mask = malloc((size_t)n);
    if (!g->soft || !g->soft_mask) {
        free(g->soft), free(g->soft_mask);
        g->soft = NULL, g->soft_mask = NULL;
        return ox_errf(err, OX_E_NOMEM, "generate: out of memory for %d soft tokens", n);
    }
    memcpy(g->soft, soft, rows * sizeof *soft);
    memcpy(g->soft_mask, mask, (size_t)n);
    g->n_prompt = n; /* what start must be given */
    return 0;
}

int ox_gen_prefill(ox_gen *g, int max_n, ox_err *err) {
    if (!g->started) return ox_errf(err, OX_E_STATE, "generate: prefill before the prompt is set");
    int left = g->n_prompt - g->next;
    if (left == 0) return 0;
    int n = max_n > 0 && max_n < left ? max_n : left;
    /* where an image's tokens attend within their run, a chunk ends before the run or takes it whole */
    const uint8_t *sm = g->soft ? g->soft_mask + g->next : NULL;
    if (sm && n < left && ox_model_config(ox_session_model(g->s))->bidir_vision && sm[n - 1] && sm[n]) {
        int start = n - 1;
        while (start > 0 && sm[start - 1]) start--;
        if (start > 0) n = start;
        else
            while (n < left && sm[n]) n++;
    }
    ox_forward_io io = {.tokens = g->prompt + g->next, .n = n, .logits = n == left ? g->logits : NULL};
    if (g->soft) {
        io.soft = g->soft + (size_t)g->next * ox_model_config(ox_session_model(g->s))->hidden;
        io.soft_mask = g->soft_mask + g->next;
    }
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

/* The model's log-probabilities of tok and of the n_top likeliest tokens, from raw logits. */
static void logprobs_of(ox_gen *g, const float *l, int tok, ox_gen_token *out) {
    float m = -INFINITY;
    for (int i = 0; i < g->vocab; i++)
        if (l[i] > m) m = l[i];
    double z = 0;
    for (int i = 0; i < g->vocab; i++) z += exp((double)l[i] - m);
    float lse = m + (float)log(z);
    out->logprob = l[tok] - lse;
    int n = 0; /* insertion into a short sorted list: n_top is at most 20 */
    for (int i = 0; i < g->vocab && g->logprobs > 0; i++) {
        if (n == g->logprobs && l[i] <= l[g->top_ids[n - 1]]) continue;
        int j = n < g->logprobs ? n++ : n - 1;
        while (j > 0 && l[g->top_ids[j - 1]] < l[i]) g->top_ids[j] = g->top_ids[j - 1], j--;
        g->top_ids[j] = i;
    }
    for (int k = 0; k < n; k++) g->top_lp[k] = l[g->top_ids[k]] - lse;
    out->n_top = n;
    out->top_ids = g->top_ids;
    out->top_logprobs = g->top_lp;
}

/* Output tok: STOP for a stop id; else its bytes, counted, LENGTH if it is the last. */
static int emit(ox_gen *g, int tok, ox_gen_token *out, ox_err *err) {
    out->token = tok;
    if (is_stop(g, tok)) return finish(g, OX_GEN_STOP);
    int rc = token_bytes(g, tok, out, err);
    if (rc) return rc;
    g->counts.generated++;
    return g->counts.generated >= g->max_tokens ? finish(g, OX_GEN_LENGTH) : OX_GEN_TOKEN;
}

static int sample_failed(ox_err *err, int tok) {
    return ox_errf(err, tok, "sample: %s",
                   tok == OX_E_NOMEM
                       ? "out of memory"
                       : "no token can be sampled (a bias id beyond the vocabulary, or every logit is -inf)");
}

/* One verify batch: forward pending + drafts with every row's logits, keep the drafts the
 * sampler keeps, queue them and the token after them. Returns 1 if it queued tokens, 0 if
 * there was nothing to draft, < 0 on errors. */
static int speculate(ox_gen *g, ox_err *err) {
    int pos = ox_session_pos(g->s);
    int room = g->limit - pos - g->n_pending - 1; /* every queued token must fit */
    int left = g->max_tokens - g->counts.generated - 1;
    int cap = g->draft_tokens < room ? g->draft_tokens : room;
    if (left < cap) cap = left;
    if (cap <= 0) return 0;
    /* the text so far: the session's tokens, then the pending one */
    const int32_t *hist = ox_session_tokens(g->s);
    int32_t tail[OX_GEN_DRAFT_MAX + 1], batch[1 + OX_GEN_DRAFT_MAX];
    if (pos + 1 > g->text_cap) {
        int c = g->text_cap ? g->text_cap : 1024;
        while (c < pos + 1) c *= 2;
        int32_t *t = realloc(g->text, (size_t)c * sizeof *t);
        if (!t) return ox_errf(err, OX_E_NOMEM, "generate: out of memory for the draft history");
        g->text = t, g->text_cap = c;
    }
    if (pos) memcpy(g->text, hist, (size_t)pos * sizeof *g->text);
    if (g->n_pending) g->text[pos] = g->pending[0];
    int k;
    if (g->mtp) { /* the drafter starts from the pending token and the hidden state before it */
        if (!g->n_pending || g->h_pos != pos - 1 || ox_lookup_resting(&g->look)) return 0;
        g->counts.draft_runs++;
        k = ox_mtp_draft(g->mtp, g->pending[0], g->h, cap, g->draft_p_min, tail, err);
        if (k < 0) return k;
        if (k == 0) ox_lookup_miss(&g->look); /* unsure: rest it if that goes on */
    } else {
        k = ox_lookup_draft(&g->look, g->text, pos + g->n_pending, tail, cap);
    }
    if (k <= 0) return 0;
    int np = g->n_pending;
    memcpy(batch, g->pending, (size_t)np * sizeof *batch);
    memcpy(batch + np, tail, (size_t)k * sizeof *batch);
    ox_forward_io io = {.tokens = batch, .n = np + k, .logits = g->rows, .all_logits = 1, .hidden = g->hrows};
    int rc = ox_forward(g->s, &io, err);
    if (rc) return rc;
    g->n_pending = 0;
    g->counts.decoded++;
    hist = ox_session_tokens(g->s); /* now pending + drafts too */
    /* row r holds the logits after batch[r]; draft i is predicted by row np - 1 + i (or, with
     * nothing pending, by the logits the prompt or the last step left) */
    int kept = 0, final = -1;
    for (int i = 0; i <= k && final < 0; i++) {
        const float *row = np - 1 + i >= 0 ? g->rows + (size_t)(np - 1 + i) * g->vocab : g->logits;
        memcpy(g->scratch, row, (size_t)g->vocab * sizeof *g->scratch);
        int at = pos + np + i, acc = 0;
        int tok = i < k ? ox_sample_verify(g->smp, g->scratch, g->vocab, hist, at, tail[i], &acc)
                        : ox_sample(g->smp, g->scratch, g->vocab, hist, at); /* every draft kept: one more */
        if (tok < 0) return sample_failed(err, tok);
        if (acc && !is_stop(g, tok)) {
            g->queue[g->q_n++] = tok;
            kept++;
        } else final = tok;
    }
    ox_lookup_update(&g->look, k, kept);
    g->counts.drafted += k;
    g->counts.accepted += kept;
    if ((rc = ox_session_truncate(g->s, pos + np + kept, err))) return rc;
    if (g->mtp) { /* the last row kept: the hidden state before the new pending token */
        memcpy(g->h, g->hrows + (size_t)(np + kept - 1) * g->hidden, (size_t)g->hidden * sizeof *g->h);
        g->h_pos = pos + np + kept - 1;
    }
    g->queue[g->q_n++] = final; /* a stop id here ends the generation when it is returned */
    g->pending[g->n_pending++] = final;
    return 1;
}

int ox_gen_step(ox_gen *g, ox_gen_token *out, ox_err *err) {
    *out = (ox_gen_token){-1, NULL, 0, 0, 0, NULL, NULL};
    if (!g->started || g->next < g->n_prompt)
        return ox_errf(err, OX_E_STATE, "generate: step before the prompt has run");
    if (g->done) return ox_errf(err, OX_E_STATE, "generate: the generation has ended");
    if (g->counts.generated >= g->max_tokens) return finish(g, OX_GEN_LENGTH);
    if (g->q_head == g->q_n && g->draft_tokens) {
        g->q_head = g->q_n = 0;
        int rc = speculate(g, err);
        if (rc < 0) return rc;
    }
    if (g->q_head < g->q_n) return emit(g, g->queue[g->q_head++], out, err);
    if (g->n_pending) {
        ox_forward_io io = {.tokens = g->pending, .n = g->n_pending, .logits = g->logits, .hidden = g->h};
        int rc = ox_forward(g->s, &io, err);
        if (rc) return rc;
        g->n_pending = 0;
        g->counts.decoded++;
        g->h_pos = ox_session_pos(g->s) - 1;
    }
    int pos = ox_session_pos(g->s);
    if (pos >= g->limit) return finish(g, OX_GEN_CONTEXT);
    int rc;
    if (g->logprobs >= 0) memcpy(g->scratch, g->logits, (size_t)g->vocab * sizeof *g->scratch);
    if (g->filter.mask && (rc = g->filter.mask(g->filter.ud, g->logits, g->vocab, err)) < 0)
        return filter_failed(err, rc);
    int tok = ox_sample(g->smp, g->logits, g->vocab, ox_session_tokens(g->s), pos);
    if (tok < 0) return sample_failed(err, tok);
    if (g->filter.accept && (rc = g->filter.accept(g->filter.ud, tok, err)) < 0) return filter_failed(err, rc);
    if (g->logprobs >= 0) logprobs_of(g, g->scratch, tok, out);
    rc = emit(g, tok, out, err);
    if (rc == OX_GEN_TOKEN || rc == OX_GEN_LENGTH) g->pending[g->n_pending++] = tok;
    return rc;
}
