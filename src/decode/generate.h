/* generate.h — the decode loop in C: a generator owns the sampler, the stop rules and the
 * limits of one generation over a session, and makes one call per generated token.
 *
 *   g = ox_gen_new(session, tokenizer, &params)
 *   [ox_gen_soft(g, rows, mask, n)]   soft tokens of the prompt (embeddings given, images')
 *   ox_gen_start(g, prompt, n)        keep the session's longest common prefix with the prompt
 *                                     (soft positions by their rows; the last prompt token is
 *                                     always recomputed: its logits are needed), truncate the
 *                                     rest; returns the kept count
 *   while (ox_gen_prefill(g, chunk))  run the rest of the prompt, chunk tokens per call, so a
 *                                     caller can abort between chunks; returns tokens left
 *   ox_gen_step(g, &tok)              one token per call, until a status other than TOKEN
 *
 * A step first runs the forward of the token the previous step returned (lazily, so the last
 * token of a generation, and a token after which the caller stops for its own reasons — a
 * stop string, an abort — costs no forward), then checks the context, samples from the logits
 * and applies the stop rules. In order:
 *   generated >= max_tokens            -> LENGTH, no token (max_tokens <= 0)
 *   session position >= context limit  -> CONTEXT, no token (every token returned fits: its
 *                                         forward runs at the position the check saw)
 *   mask(logits); sample; accept(token)   (the filter hook, then the sampler)
 *   token is a stop id                 -> STOP with that id; it is not output, not counted,
 *                                         not in the penalty history, never forwarded
 *   generated + 1 == max_tokens        -> LENGTH with the token (output, not forwarded)
 *   otherwise                          -> TOKEN
 * After a status other than TOKEN the generation is over (a further step is OX_E_STATE).
 * The penalty history is the session's token list at sampling time: prompt included, then
 * every returned token (the sampler looks at its last penalty_window).
 *
 * The session keeps the tokens it holds (ox_session_tokens), so the next generation's
 * start finds the common prefix without any mirror on the caller's side; a token returned
 * but never forwarded is not in the session.
 *
 * Speculative decoding (draft_tokens > 0, no filter, no logprobs): when the queue of verified
 * tokens is empty, a step asks the prompt-lookup drafter (draft_lookup.h) for up to draft_tokens
 * tokens, runs pending + drafts in one batched forward with every row's logits, and verifies
 * the drafts in order with ox_sample_verify (kept with probability p(draft), else replaced by a
 * draw from the rest: the output distribution is unchanged; greedy output is token-identical
 * to plain decoding). The kept drafts and the one token after them (the replacement, or a
 * draw from the last row when every draft was kept) are queued; the session is truncated to
 * the kept ones, and the last token is pending as usual. Each later step returns the next
 * queued token without a forward. Drafts never reach past max_tokens or the context.
 * With an MTP drafter, the drafts come from it instead: it needs the target's hidden state of
 * the token before the pending one, which every step's forward keeps, so a step right after
 * the prompt (or with nothing pending) runs plainly. */
#ifndef OX_GENERATE_H
#define OX_GENERATE_H

#include <stdint.h>
#include "base/err.h"
#include "model/model.h"
#include "decode/sampler.h"
#include "text/tokenizer.h"

/* X(NAME, value, js reason): what a step returns (>= 0; errors are < 0). */
#define OX_GEN_STATUSES(X)                                                                                             \
    X(TOKEN, 0, "token")     /* a token; generation goes on */                                                         \
    X(STOP, 1, "stop")       /* a stop id (returned in the token, not output) */                                       \
    X(LENGTH, 2, "length")   /* max_tokens reached: the token (if any, >= 0) is the last */                            \
    X(CONTEXT, 3, "context") /* the context is full: no token */
#define OX_GEN_ENUM_(name, v, js) OX_GEN_##name = v,
enum { OX_GEN_STATUSES(OX_GEN_ENUM_) };
#undef OX_GEN_ENUM_

/* The logits-filter hook (a grammar engine, say). mask runs on the logits before the
 * sampler (set a logit to -INFINITY to forbid a token); accept gets every sampled token,
 * stop ids included. Either may be NULL. A negative return (with err set by the hook) fails
 * the step with that code; the message gets "logits filter: " in front. */
typedef struct ox_logits_filter {
    void *ud;
    int (*mask)(void *ud, float *logits, int vocab, ox_err *err);
    int (*accept)(void *ud, int token, ox_err *err);
} ox_logits_filter;

typedef struct ox_gen_params {
    ox_sampler_params sampler; /* bias lists are copied */
    int max_tokens;            /* tokens output at most; <= 0: none */
    int use_eos;               /* the config's eos ids stop too */
    const int32_t *stop_ids;   /* more stop ids (copied); ids outside the vocab never match */
    int n_stop;
    int show_special; /* a control token's bytes are its text (else none) */
    int max_context;  /* positions the session may reach; <= 0 or beyond: the session's */
    ox_logits_filter filter;
    int draft_tokens;        /* speculative decoding with prompt-lookup drafts of at most this
                                   many tokens (<= OX_GEN_DRAFT_MAX); 0: off */
    int draft_fixed;         /* prompt lookup: every draft draft_tokens long (for measuring a verify's
                                   cost); 0: the length with the most tokens per cost (draft_lookup.h) */
    const ox_model *drafter; /* with draft_tokens: MTP drafts (drafter_mtp.h) of draft_tokens tokens
                                   from this gemma4-assistant model instead of prompt lookup */
    float draft_p_min;       /* MTP: a draft ends before a token the drafter gives less than this
                                   probability (default 0.3: a random drafter, p ~ 0.01, then costs a
                                   drafter step per token instead of a wider verify; drafts that
                                   agree come with p ~ 0.9 on the synthetic agreeing drafter; not yet
                                   tuned on a released assistant) */
    int logprobs;            /* -1: off; 0..OX_GEN_TOP_MAX: the chosen token's log-probability
                                   and that many alternatives (the model's distribution) */
} ox_gen_params;

/* OX_GEN_DRAFT_MAX, OX_GEN_DRAFT_DEFAULT: model/kv.h (the verify batch the caches and the
 * memory estimate are sized for). */
/* the JS API drafts up to this many when a request asks for speculative decoding without saying how many */
#define OX_GEN_DRAFT_ASKED 8
#define OX_GEN_TOP_MAX     20

/* Sampler defaults (ox_sampler_defaults), max_tokens 256, use_eos 1, no filter, no
 * speculation (draft_p_min 0.3), no logprobs. */
void ox_gen_defaults(ox_gen_params *p);

typedef struct ox_gen ox_gen;

/* What a step returned: the token (-1 if none) and its bytes (valid until the next step;
 * none for a stop id, or without a tokenizer). */
typedef struct ox_gen_token {
    int token;
    const char *bytes;
    int n_bytes;
    float logprob; /* with logprobs >= 0: log p(token) under the model */
    int n_top;     /* alternatives, most likely first */
    const int32_t *top_ids;
    const float *top_logprobs;
} ox_gen_token;

typedef struct ox_gen_counts {
    int reused;     /* prompt tokens kept from the session */
    int prefilled;  /* prompt tokens run */
    int generated;  /* tokens output (stop ids not counted) */
    int decoded;    /* forwards run by steps (a verify batch counts once) */
    int drafted;    /* tokens proposed by the drafter */
    int accepted;   /* drafted tokens kept */
    int draft_runs; /* times the MTP drafter ran (it rests after misses in a row) */
} ox_gen_counts;

/* tok may be NULL (no bytes). The session must outlive the generator. */
ox_gen *ox_gen_new(ox_session *s, const ox_tokenizer *tok, const ox_gen_params *p, ox_err *err);
void ox_gen_free(ox_gen *g);
int ox_gen_start(ox_gen *g, const int32_t *prompt, int n, ox_err *err);
/* Soft tokens, before start: where mask[i] != 0 position i of the n-token prompt start will be
 * given takes the embedding soft[i * hidden ...] instead of its token's (copied; docs/gemma4.md
 * "soft tokens"). Start then keeps the session's positions that hold the same rows
 * (ox_session_reuse_soft); a prompt of another length is RANGE, soft tokens after start STATE. */
int ox_gen_soft(ox_gen *g, const float *soft, const uint8_t *mask, int n, ox_err *err);
int ox_gen_prefill(ox_gen *g, int max_n, ox_err *err);
int ox_gen_step(ox_gen *g, ox_gen_token *out, ox_err *err);
const ox_gen_counts *ox_gen_counts_of(const ox_gen *g);

#endif
