/* test_generate.c — the C generator (generate.c) against a reference loop written here the way
 * js/engine/worker.js generated before the loop moved into C (ox_sample + ox_forward by hand): same
 * token streams and end reasons for several seeds and sampling settings; prefix reuse of the
 * session; the logits-filter hook; the session's token list; error paths; grammar-constrained
 * generation that never dead-ends. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "decode/generate.h"
#include "decode/grammar.h"
#include "writers/synth.h"

#define MAXGEN 64

static char tmp[256];
static ox_model *model;
static ox_tokenizer *tokenizer;
static int V;
static ox_grammar_vocab *gvocab;

/* One generation's settings: sampler parameters plus the loop's own. */
typedef struct setting {
    const char *name;
    ox_sampler_params sp;
    int max_tokens, use_eos, n_stop, ctx, chunk;
    int32_t stop[4];
} setting;

typedef struct run {
    int32_t tok[MAXGEN];
    int n, status, pos;
} run;

static void prompt_of(int32_t *t, int n, uint32_t r) {
    t[0] = 2;
    for (int i = 1; i < n; i++) t[i] = 7 + (int32_t)((r = r * 1664525u + 1013904223u) >> 9) % (V - 7);
}

static int is_stop(const setting *st, int tok) {
    const ox_config *c = ox_model_config(model);
    for (int i = 0; st->use_eos && i < c->n_eos; i++)
        if (c->eos_ids[i] == tok) return 1;
    for (int i = 0; i < st->n_stop; i++)
        if (st->stop[i] == tok) return 1;
    return 0;
}

/* The reference: the former JS loop. Prefill in chunks (logits of the last chunk), then per
 * token: context check, sample with the penalty history (the prompt's last `window` tokens,
 * then each output token), stop id (not output), output, max tokens (the last one is not
 * run), forward. */
static run reference(const setting *st, const int32_t *prompt, int n) {
    run r = {.status = -1};
    ox_err err = {0};
    ox_session *s = ox_session_new(model, st->ctx, &err);
    float *logits = malloc(sizeof(float) * (size_t)V);
    int32_t *hist = malloc(sizeof(int32_t) * (size_t)(n + MAXGEN));
    ox_sampler *smp = ox_sampler_new(&st->sp, &err);
    if (!s || !logits || !hist || !smp) goto out;
    for (int i = 0; i < n; i += st->chunk) {
        int k = n - i < st->chunk ? n - i : st->chunk;
        ox_forward_io io = {.tokens = prompt + i, .n = k, .logits = i + k == n ? logits : NULL};
        if (ox_forward(s, &io, &err)) goto out;
    }
    if (st->max_tokens <= 0) {
        r.status = OX_GEN_LENGTH;
        goto out;
    }
    int window = st->sp.penalty_window, nh = window > 0 && n > window ? window : n;
    memcpy(hist, prompt + n - nh, sizeof(int32_t) * (size_t)nh);
    for (;;) {
        if (ox_session_pos(s) >= ox_session_max_ctx(s)) {
            r.status = OX_GEN_CONTEXT;
            break;
        }
        int tok = ox_sample(smp, logits, V, hist, nh);
        if (tok < 0) break;
        if (is_stop(st, tok)) {
            r.status = OX_GEN_STOP;
            break;
        }
        hist[nh++] = tok;
        if (window > 0 && nh > window) memmove(hist, hist + 1, sizeof(int32_t) * (size_t)--nh);
        r.tok[r.n++] = tok;
        if (r.n >= st->max_tokens) {
            r.status = OX_GEN_LENGTH;
            break;
        }
        ox_forward_io io = {.tokens = &r.tok[r.n - 1], .n = 1, .logits = logits};
        if (ox_forward(s, &io, &err)) break;
    }
out:
    r.pos = s ? ox_session_pos(s) : -1;
    ox_sampler_free(smp);
    ox_session_free(s);
    free(logits);
    free(hist);
    return r;
}

static ox_gen_params gen_params(const setting *st) {
    ox_gen_params p;
    ox_gen_defaults(&p);
    p.sampler = st->sp;
    p.max_tokens = st->max_tokens;
    p.use_eos = st->use_eos;
    p.stop_ids = st->stop;
    p.n_stop = st->n_stop;
    return p;
}

/* The generator over session s (NULL: a new one of st->ctx positions). */
static run generated(const setting *st, ox_session *s, const ox_gen_params *p, const int32_t *prompt, int n) {
    run r = {.status = -1};
    ox_err err = {0};
    ox_session *own = s ? NULL : (s = ox_session_new(model, st->ctx, &err));
    ox_gen *g = s ? ox_gen_new(s, tokenizer, p, &err) : NULL;
    if (!g || ox_gen_start(g, prompt, n, &err) < 0) goto out;
    int left;
    while ((left = ox_gen_prefill(g, st->chunk, &err)) > 0) {}
    if (left < 0) goto out;
    for (;;) {
        ox_gen_token t;
        int status = ox_gen_step(g, &t, &err);
        if (status < 0) break;
        if (t.token >= 0 && status != OX_GEN_STOP) {
            char want[64];
            int nb = ox_token_bytes(tokenizer, t.token, 0, want, sizeof want, NULL);
            CHECK(t.n_bytes == nb && (nb == 0 || memcmp(t.bytes, want, (size_t)nb) == 0));
            if (r.n < MAXGEN) r.tok[r.n++] = t.token;
        }
        if (status != OX_GEN_TOKEN) {
            r.status = status;
            break;
        }
    }
    CHECK(ox_gen_counts_of(g)->generated == r.n);
out:
    if (r.status < 0) fprintf(stderr, "  generate: %s\n", err.msg);
    r.pos = ox_session_pos(s);
    ox_gen_free(g);
    ox_session_free(own);
    return r;
}

static int same_run(const run *a, const run *b) {
    return a->n == b->n && a->status == b->status && a->pos == b->pos &&
           memcmp(a->tok, b->tok, sizeof(int32_t) * (size_t)a->n) == 0;
}

static void test_streams_match_reference(void) {
    int32_t prompt[40];
    prompt_of(prompt, 40, 99);
    ox_sampler_params d;
    ox_sampler_defaults(&d);
    setting base = {"defaults", d, 24, 1, 0, 0, 16, {0}};
    setting S[12];
    int n = 0;
    S[n++] = base;
    S[n] = base, S[n].name = "greedy", S[n].sp.temperature = 0, n++;
    S[n] = base, S[n].name = "temperature 0.7, top-k 8, top-p 0.8, min-p 0.05";
    S[n].sp.temperature = 0.7f, S[n].sp.top_k = 8, S[n].sp.top_p = 0.8f, S[n].sp.min_p = 0.05f, n++;
    S[n] = base, S[n].name = "penalties, window 8", S[n].sp.repetition_penalty = 1.5f, S[n].sp.frequency_penalty = 0.4f;
    S[n].sp.presence_penalty = 0.6f, S[n].sp.penalty_window = 8, n++;
    S[n] = S[n - 1], S[n].name = "penalties, window all (<= 0)", S[n].sp.penalty_window = 0, n++;
    S[n] = base, S[n].name = "greedy, repetition penalty over the prompt", S[n].sp.temperature = 0;
    S[n].sp.repetition_penalty = 3.0f, S[n].sp.penalty_window = 64, n++;
    static const int32_t bias_ids[2] = {1, 300};
    static const float bias[2] = {2.5f, -INFINITY};
    S[n] = base, S[n].name = "logit bias (eos +2.5: stops)", S[n].sp.bias_ids = bias_ids, S[n].sp.bias = bias;
    S[n].sp.n_bias = 2, n++;
    S[n] = base, S[n].name = "max tokens 5", S[n].max_tokens = 5, n++;
    S[n] = base, S[n].name = "max tokens 0", S[n].max_tokens = 0, n++;
    S[n] = base, S[n].name = "context limit 48, prefill in one chunk", S[n].ctx = 48, S[n].chunk = 1000, n++;
    S[n] = base, S[n].name = "caller's stop ids, no eos", S[n].use_eos = 0, S[n].n_stop = 2, n++;
    S[n] = base, S[n].name = "prefill one token per chunk, greedy", S[n].chunk = 1, S[n].sp.temperature = 0, n++;
    int seen[4] = {0};
    for (int i = 0; i < n; i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            setting st = S[i];
            st.sp.seed = seed * 7919;
            if (st.n_stop) { /* stop at whatever the 3rd and 6th tokens of this seed's stream are */
                setting free_run = st;
                free_run.n_stop = 0;
                run f = reference(&free_run, prompt, 40);
                st.stop[0] = f.n > 2 ? f.tok[2] : 0, st.stop[1] = f.n > 5 ? f.tok[5] : 0;
            }
            run want = reference(&st, prompt, 40);
            ox_gen_params p = gen_params(&st);
            run got = generated(&st, NULL, &p, prompt, 40);
            CHECK_MSG(want.status >= 0 && same_run(&want, &got),
                      "%s, seed %llu: reference %d tokens (status %d, pos %d), "
                      "generator %d tokens (status %d, pos %d)",
                      st.name, (unsigned long long)st.sp.seed, want.n, want.status, want.pos, got.n, got.status, got.pos);
            if (want.status >= 0) seen[want.status]++;
        }
    }
    printf("  %d settings x 3 seeds: ends token/stop/length/context = %d/%d/%d/%d\n", n, seen[0], seen[1], seen[2],
           seen[3]);
    CHECK(seen[OX_GEN_STOP] > 0 && seen[OX_GEN_LENGTH] > 0 && seen[OX_GEN_CONTEXT] > 0);
}

/* The session keeps the prompt and every returned token but the last; the next generation
 * reuses the common prefix (the last prompt token is always run again). Reuse gives the same
 * logits, bit for bit, as truncating by hand and running the rest (a fresh prefill of the
 * same tokens differs in the last bits: other batch sizes, other summation order). */
static void test_prefix_reuse(void) {
    ox_err err = {0};
    int32_t a[30], b[36];
    prompt_of(a, 30, 5);
    memcpy(b, a, sizeof(int32_t) * 20);
    prompt_of(b + 20, 16, 6);
    b[20] = a[20] == 8 ? 9 : 8; /* b shares exactly 20 tokens with a */
    ox_sampler_params d;
    ox_sampler_defaults(&d);
    d.seed = 42;
    setting st = {"reuse", d, 6, 1, 0, 0, 16, {0}};
    ox_gen_params p = gen_params(&st);
    ox_session *s = ox_session_new(model, 0, &err);
    run r1 = generated(&st, s, &p, a, 30);
    CHECK(r1.status == OX_GEN_LENGTH && r1.n == 6 && ox_session_pos(s) == 35);
    const int32_t *toks = ox_session_tokens(s);
    CHECK(memcmp(toks, a, sizeof a) == 0 && memcmp(toks + 30, r1.tok, sizeof(int32_t) * 5) == 0);

    /* clone and truncate keep the tokens */
    ox_session *c = ox_session_clone(s, &err);
    CHECK(c && ox_session_pos(c) == 35 && memcmp(ox_session_tokens(c), toks, sizeof(int32_t) * 35) == 0);
    CHECK(ox_session_truncate(c, 12, &err) == 0 && ox_session_reuse(c, a, 30, &err) == 12);

    /* the same prompt again: all but its last token reused */
    ox_gen *g = ox_gen_new(s, tokenizer, &p, &err);
    CHECK(g && ox_gen_start(g, a, 30, &err) == 29 && ox_session_pos(s) == 29);
    ox_gen_free(g);
    /* prompt a + the 5 forwarded tokens + more: everything up to the new part reused */
    int32_t ax[40];
    memcpy(ax, a, sizeof a);
    memcpy(ax + 30, r1.tok, sizeof(int32_t) * 6);
    ax[36] = 50, ax[37] = 51, ax[38] = 52, ax[39] = 53;
    ox_session_free(c);
    c = ox_session_new(model, 0, &err);
    run r2 = generated(&st, c, &p, a, 30);
    CHECK(same_run(&r1, &r2));
    CHECK(ox_session_reuse(c, ax, 40, &err) == 35); /* the 6th output token was never run */
    ox_session_free(c);

    /* b after a: 20 reused; logits equal a by-hand truncate + forward */
    float *l1 = malloc(sizeof(float) * (size_t)V), *l2 = malloc(sizeof(float) * (size_t)V);
    ox_session *h = ox_session_new(model, 0, &err);
    ox_session_reset(s);
    ox_forward_io io = {.tokens = a, .n = 30};
    CHECK(ox_forward(s, &io, &err) == 0 && ox_forward(h, &io, &err) == 0);
    CHECK(ox_session_reuse(s, b, 36, &err) == 20 && ox_session_pos(s) == 20);
    io = (ox_forward_io){.tokens = b + 20, .n = 16, .logits = l1};
    CHECK(ox_forward(s, &io, &err) == 0);
    CHECK(ox_session_truncate(h, 20, &err) == 0);
    io.logits = l2;
    CHECK(ox_forward(h, &io, &err) == 0 && memcmp(l1, l2, sizeof(float) * (size_t)V) == 0);
    /* reuse of one token: nothing kept (the last token is always run) */
    CHECK(ox_session_reuse(s, b, 1, &err) == 0 && ox_session_pos(s) == 0);
    CHECK(ox_session_reuse(s, b, 0, &err) == OX_E_RANGE);
    ox_session_free(s), ox_session_free(h);
    free(l1), free(l2);
}

/* A filter that forces a scripted token sequence, and counts its calls. */
typedef struct script {
    const int32_t *want;
    int n, masks, accepts, fail_at;
    int32_t seen[16];
} script;

static int script_mask(void *ud, float *logits, int vocab, ox_err *err) {
    script *s = ud;
    if (s->masks == s->fail_at) return ox_errf(err, OX_E_RANGE, "script: no token at step %d", s->masks);
    int32_t w = s->want[s->masks++ % s->n];
    for (int i = 0; i < vocab; i++)
        if (i != w) logits[i] = -INFINITY;
    return 0;
}

static int script_accept(void *ud, int token, ox_err *err) {
    script *s = ud;
    if (s->accepts < 16) s->seen[s->accepts] = token;
    s->accepts++;
    return 0;
}

static void test_filter_hook(void) {
    static const int32_t want[5] = {300, 301, 7, 300, 1}; /* 1: eos, stops */
    script sc = {want, 5, 0, 0, -1, {0}};
    ox_sampler_params d;
    ox_sampler_defaults(&d);
    d.seed = 3;
    setting st = {"filter", d, 20, 1, 0, 0, 8, {0}};
    ox_gen_params p = gen_params(&st);
    p.filter = (ox_logits_filter){&sc, script_mask, script_accept};
    int32_t prompt[10];
    prompt_of(prompt, 10, 1);
    run r = generated(&st, NULL, &p, prompt, 10);
    CHECK(r.status == OX_GEN_STOP && r.n == 4 && memcmp(r.tok, want, sizeof(int32_t) * 4) == 0);
    CHECK(sc.masks == 5 && sc.accepts == 5 && memcmp(sc.seen, want, sizeof want) == 0); /* the stop id too */
    /* a failing mask fails the step with its code */
    ox_err err = {0};
    sc = (script){want, 5, 0, 0, 2, {0}};
    ox_session *s = ox_session_new(model, 0, &err);
    ox_gen *g = ox_gen_new(s, tokenizer, &p, &err);
    ox_gen_token t;
    CHECK(g && ox_gen_start(g, prompt, 10, &err) == 0 && ox_gen_prefill(g, 0, &err) == 0);
    CHECK(ox_gen_step(g, &t, &err) == OX_GEN_TOKEN && ox_gen_step(g, &t, &err) == OX_GEN_TOKEN);
    CHECK(ox_gen_step(g, &t, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "logits filter: script: no token at step 2");
    ox_gen_free(g);
    ox_session_free(s);
}

static void test_errors(void) {
    ox_err err = {0};
    ox_session *s = ox_session_new(model, 0, &err);
    ox_gen_params p;
    ox_gen_defaults(&p);
    p.max_tokens = 1, p.use_eos = 0;
    ox_gen *g = ox_gen_new(s, tokenizer, &p, &err);
    ox_gen_token t;
    int32_t bad[3] = {2, V, 5}, ok[3] = {2, 9, 5};
    CHECK(g && ox_gen_step(g, &t, &err) == OX_E_STATE);
    CHECK(ox_gen_start(g, bad, 3, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "out of range");
    CHECK(ox_gen_start(g, ok, 0, &err) == OX_E_RANGE);
    CHECK(ox_gen_start(g, ok, 3, &err) == 0 && ox_gen_step(g, &t, &err) == OX_E_STATE); /* not prefilled */
    CHECK(ox_gen_prefill(g, 2, &err) == 1 && ox_gen_prefill(g, 2, &err) == 0);
    CHECK(ox_gen_step(g, &t, &err) == OX_GEN_LENGTH && t.token >= 0 && t.n_bytes >= 0);
    CHECK(ox_gen_step(g, &t, &err) == OX_E_STATE && t.token == -1);
    ox_gen_free(g);
    p.sampler.top_p = 0; /* a bad sampler parameter */
    CHECK(ox_gen_new(s, tokenizer, &p, &err) == NULL && err.code == OX_E_RANGE);
    ox_session_free(s);
}

/* Speculative decoding (prompt-lookup drafts, verified in one batch): greedy output equal to
 * plain decoding, token for token, with the same end reason and the same session afterwards
 * (every setting that ends early: stop ids, max tokens, context); drafts proposed on a prompt
 * that repeats itself; with sampling, a valid stream of the same length rules. */
static void test_speculative(void) {
    /* a prompt that repeats: lookups find n-grams in it, and the model's own copies */
    int32_t prompt[60];
    prompt_of(prompt, 20, 5);
    for (int i = 20; i < 60; i++) prompt[i] = prompt[1 + (i - 20) % 19];
    ox_sampler_params d;
    ox_sampler_defaults(&d);
    d.temperature = 0;
    setting S[7] = {
        {"greedy", d, 40, 1, 0, 0, 16, {0}},
        {"greedy, max tokens 3", d, 3, 1, 0, 0, 16, {0}},
        {"greedy, context 70", d, 40, 1, 0, 70, 16, {0}},
        {"greedy, repetition penalty", d, 30, 1, 0, 0, 16, {0}},
        {"greedy, stop ids", d, 40, 0, 2, 0, 16, {0}},
        /* a biased model that repeats one token: every draft is kept */
        {"greedy, one token favoured", d, 40, 1, 0, 0, 16, {0}},
        {"greedy, one token favoured, context 75", d, 40, 1, 0, 75, 16, {0}},
    };
    S[3].sp.repetition_penalty = 1.3f;
    static const int32_t fav_id[1] = {300};
    static const float fav[1] = {50};
    for (int i = 5; i < 7; i++) S[i].sp.bias_ids = fav_id, S[i].sp.bias = fav, S[i].sp.n_bias = 1;
    int drafted = 0, accepted = 0;
    for (int i = 0; i < 7; i++) {
        setting st = S[i];
        ox_gen_params p = gen_params(&st);
        if (st.n_stop) {
            run f = generated(&st, NULL, &p, prompt, 60);
            st.stop[0] = f.n > 4 ? f.tok[4] : 0, st.stop[1] = f.n > 9 ? f.tok[9] : 0;
            p = gen_params(&st);
        }
        run want = generated(&st, NULL, &p, prompt, 60);
        /* drafts of the length the drafter picks (1..3 here), and fixed lengths: verifies of up
         * to 17 tokens, several passes of the tiles */
        for (int kf = 0; kf < 10; kf++) {
            int k = 1 << (kf / 2);
            ox_gen_params q = p;
            q.draft_tokens = k, q.draft_fixed = kf % 2;
            ox_err err = {0};
            ox_session *s = ox_session_new(model, st.ctx, &err);
            run got = generated(&st, s, &q, prompt, 60);
            /* the drafter's counters, from a second run over the same session (all reused) */
            ox_gen *g = ox_gen_new(s, tokenizer, &q, &err);
            CHECK_MSG(want.status >= 0 && same_run(&want, &got),
                      "%s, drafts of %d%s: plain %d tokens (status %d, pos %d), "
                      "speculative %d (status %d, pos %d)",
                      st.name, k, q.draft_fixed ? " (fixed)" : "", want.n, want.status, want.pos, got.n, got.status,
                      got.pos);
            if (g && ox_gen_start(g, prompt, 60, &err) >= 0) {
                while (ox_gen_prefill(g, 64, &err) > 0) {}
                ox_gen_token t;
                while (ox_gen_step(g, &t, &err) == OX_GEN_TOKEN) {}
                drafted += ox_gen_counts_of(g)->drafted, accepted += ox_gen_counts_of(g)->accepted;
                CHECK(ox_gen_counts_of(g)->accepted <= ox_gen_counts_of(g)->drafted);
            }
            ox_gen_free(g);
            ox_session_free(s);
        }
    }
    printf("  speculative: %d drafted, %d kept\n", drafted, accepted);
    CHECK(drafted > 0 && accepted > 0);
    /* sampling: the stream keeps the rules (length, valid ids) */
    setting st = S[0];
    st.sp.temperature = 0.8f, st.sp.seed = 3;
    ox_gen_params p = gen_params(&st);
    p.draft_tokens = 4;
    run r = generated(&st, NULL, &p, prompt, 60);
    CHECK(r.status >= 0 && r.n <= 40 && r.pos == 60 + r.n - (r.status == OX_GEN_LENGTH ? 1 : 0));
    /* bad draft counts are refused */
    ox_err err = {0};
    p.draft_tokens = OX_GEN_DRAFT_MAX + 1;
    ox_session *s = ox_session_new(model, 0, &err);
    CHECK(ox_gen_new(s, tokenizer, &p, &err) == NULL && err.code == OX_E_RANGE);
    ox_session_free(s);
}

static const char *GRAMMARS[] = {
    /* {"type": "string"} */
    "root ::= ws value ws\nws ::= | \" \" | \"\\n\" [ \\t]{0,8}\nvalue ::= (\"\\\"\" json-char* \"\\\"\")\n"
    "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n",
    /* {name: string maxLength 8, age: integer} */
    "root ::= ws value ws\nws ::= | \" \" | \"\\n\" [ \\t]{0,8}\nname ::= (\"\\\"\" json-char{0,8} \"\\\"\")\n"
    "age ::= integer\nvalue-rest-1 ::= ws \",\" ws \"\\\"age\\\"\" ws \":\" ws age\n"
    "value ::= (\"{\" ws (\"\\\"name\\\"\" ws \":\" ws name value-rest-1) ws \"}\")\n"
    "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "integer ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15})\n",
    /* text with any code point, and an end marker */
    "root ::= [^#]* \"#\"\n",
};
#define N_GRAMMARS ((int)(sizeof GRAMMARS / sizeof *GRAMMARS))
enum { SEEDS = 24, MAX_TOKENS = 96 };

static int grammar_mask(void *ud, float *logits, int vocab, ox_err *err) {
    return ox_grammar_mask(ud, logits, vocab, err);
}
static int grammar_accept(void *ud, int token, ox_err *err) { return ox_grammar_accept(ud, token, err); }

/* one constrained generation: its status (STOP / LENGTH), or the failing code */
static int constrained(const char *src, uint32_t seed, ox_err *err) {
    const ox_config *c = ox_model_config(model);
    ox_grammar *gr = ox_grammar_new(gvocab, src, strlen(src), c->eos_ids, c->n_eos, err);
    if (!gr) return err->code;
    ox_gen_params p;
    ox_gen_defaults(&p);
    p.sampler.seed = seed;
    p.sampler.temperature = 1.5f; /* flatter: more of the vocabulary gets sampled */
    p.sampler.top_k = 0;
    p.sampler.top_p = 1;
    p.max_tokens = MAX_TOKENS;
    p.filter = (ox_logits_filter){gr, grammar_mask, grammar_accept};
    ox_session *s = ox_session_new(model, 0, err);
    ox_gen *g = s ? ox_gen_new(s, tokenizer, &p, err) : NULL;
    int32_t prompt[4] = {2, 10 + (int32_t)(seed % 50), 20, 30};
    int status = g && ox_gen_start(g, prompt, 4, err) == 0 ? ox_gen_prefill(g, 0, err) : err->code;
    while (status >= 0) {
        ox_gen_token t;
        if ((status = ox_gen_step(g, &t, err)) != OX_GEN_TOKEN) break;
    }
    ox_gen_free(g);
    ox_session_free(s);
    ox_grammar_free(gr);
    return status;
}

/* Constrained generation on the random-weight model never dead-ends: over many seeds and JSON
 * grammars (the shapes js/schema.js writes), every generation ends with a stop token or at
 * max_tokens, never with "no token of the vocabulary can continue the text". The made-up
 * vocabulary has byte tokens that start code points no text can finish (ED A0..BF:
 * surrogates), which random weights do sample. */
static void test_grammar_generations(void) {
    int dead = 0, stops = 0;
    for (int k = 0; k < N_GRAMMARS; k++)
        for (uint32_t seed = 1; seed <= SEEDS; seed++) {
            ox_err err = {0};
            int status = constrained(GRAMMARS[k], seed, &err);
            if (status == OX_GEN_STOP) stops++;
            if (status != OX_GEN_STOP && status != OX_GEN_LENGTH && dead++ < 5)
                fprintf(stderr, "grammar %d seed %u: %s\n", k, seed, err.msg);
        }
    CHECK_MSG(dead == 0, "%d of %d generations dead-ended", dead, N_GRAMMARS * SEEDS);
    CHECK(stops > 0); /* the grammars do end */
}

/* Uniform choice among the tokens the mask allows: no step finds the mask empty. */
static void test_grammar_walks(void) {
    int dead = 0;
    const ox_config *c = ox_model_config(model);
    float *logits = malloc((size_t)V * sizeof *logits);
    int *allowed = malloc((size_t)V * sizeof *allowed);
    for (int k = 0; k < N_GRAMMARS; k++)
        for (uint32_t seed = 1; seed <= 2 * SEEDS; seed++) {
            ox_err err = {0};
            ox_grammar *g = ox_grammar_new(gvocab, GRAMMARS[k], strlen(GRAMMARS[k]), c->eos_ids, c->n_eos, &err);
            CHECK_MSG(g != NULL, "%s", err.msg);
            uint32_t r = seed * 2654435761u;
            for (int step = 0; g && step < 200; step++) {
                for (int i = 0; i < V; i++) logits[i] = 0;
                if (ox_grammar_mask(g, logits, V, &err)) {
                    if (dead++ < 5) fprintf(stderr, "grammar %d seed %u step %d: %s\n", k, seed, step, err.msg);
                    break;
                }
                int n = 0;
                for (int i = 0; i < V; i++)
                    if (logits[i] == 0) allowed[n++] = i;
                r = r * 1103515245u + 12345u;
                int pick = allowed[(r >> 8) % (uint32_t)n], stop = 0;
                for (int e = 0; e < c->n_eos; e++) stop |= pick == c->eos_ids[e];
                if (stop) break;
                CHECK(ox_grammar_accept(g, pick, &err) == 0);
            }
            ox_grammar_free(g);
        }
    CHECK_MSG(dead == 0, "%d walks dead-ended", dead);
    free(logits);
    free(allowed);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_generate_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    char path[300];
    snprintf(path, sizeof path, "%s/tiny.gguf", tmp);
    ox_synth sy;
    ox_err err = {0};
    ox_synth_preset(&sy, "tiny", &err);
    int h = ox_synth_write_gguf(&sy, path, &err) ? -1 : ox_host_open_path(path, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    model = mf ? ox_model_load(mf, NULL, &err) : NULL;
    tokenizer = model ? ox_tokenizer_load(ox_model_files_of(model), &err) : NULL;
    if (!tokenizer) {
        fprintf(stderr, "fixture: %s\n", err.msg);
        return 1;
    }
    V = ox_model_config(model)->vocab;
    gvocab = ox_grammar_vocab_new(tokenizer, &err);
    CHECK_MSG(gvocab != NULL, "%s", err.msg);
    RUN(test_streams_match_reference);
    RUN(test_prefix_reuse);
    RUN(test_filter_hook);
    RUN(test_speculative);
    RUN(test_errors);
    if (gvocab) {
        RUN(test_grammar_generations);
        RUN(test_grammar_walks);
    }
    ox_grammar_vocab_free(gvocab);
    ox_tokenizer_free(tokenizer);
    ox_model_free(model);
    unlink(path);
    rmdir(tmp);
    return check_summary("test_generate");
}
