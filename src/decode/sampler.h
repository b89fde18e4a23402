/* sampler.h — next-token sampling over a logits row.
 *
 * Order (as HF generate's processors): logit bias, penalties over a window of recent
 * tokens (repetition: positive logits divided by it, negative multiplied; frequency: minus
 * count * f; presence: minus p once), then greedy if temperature <= 0 or top_k == 1, else
 * temperature, top-k, top-p (smallest prefix of the sorted distribution with mass >= top_p,
 * at least one token), min-p (drop tokens below min_p * the top probability), and a draw.
 * No full sort of the vocabulary: one pass buckets the logits by value (counts, and masses
 * when top-p needs them); only the top buckets holding k tokens / top_p of the mass are
 * gathered, partially selected and sorted. Tokens lighter than exp(-40) of the top one are
 * never drawn (below the draw's resolution). Ties break towards the lower id.
 *
 * The RNG (splitmix64) lives in the sampler: the same seed gives the same sequence.
 * A sampler is not thread-safe (it owns its scratch and RNG state). */
#ifndef OX_SAMPLER_H
#define OX_SAMPLER_H

#include <stdint.h>
#include "base/err.h"

typedef struct ox_sampler_params {
    float temperature;        /* <= 0: greedy */
    int top_k;                /* <= 0 or >= vocab: off; 1: greedy */
    float top_p;              /* in (0, 1]; 1: off */
    float min_p;              /* in [0, 1]; 0: off */
    float repetition_penalty; /* > 0; 1: off */
    float frequency_penalty;  /* 0: off */
    float presence_penalty;   /* 0: off */
    int penalty_window;       /* penalties see the last N recent tokens; <= 0: all given */
    uint64_t seed;
    const int32_t *bias_ids; /* sparse logit bias (copied at creation) */
    const float *bias;
    int n_bias;
} ox_sampler_params;

typedef struct ox_sampler ox_sampler;

/* Gemma's generation defaults: temperature 1, top_k 64, top_p 0.95; penalties off, window 64. */
void ox_sampler_defaults(ox_sampler_params *p);
/* OX_E_RANGE for a parameter out of its range (NaN, top_p <= 0, negative bias id, ...). */
ox_sampler *ox_sampler_new(const ox_sampler_params *p, ox_err *err);
void ox_sampler_free(ox_sampler *s);

/* Pick the next token from vocab logits (modified in place: bias and penalties are applied
 * to them). recent: the tokens so far (may be NULL if n_recent is 0); ids outside the vocab
 * are ignored. Returns the id, or OX_E_RANGE (vocab <= 0, a bias id >= vocab, or no logit
 * above -inf), or OX_E_NOMEM. NaN logits count as -inf. */
int ox_sample(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent);

/* Speculative verification of a drafted token: the same distribution as ox_sample, drawn so
 * that the draft is kept with probability p(draft) (*accepted = 1, returns draft) and
 * otherwise a token is drawn from p without the draft (*accepted = 0). Greedy: the argmax,
 * *accepted = (argmax == draft). The output distribution is exactly ox_sample's. */
int ox_sample_verify(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent, int draft,
                     int *accepted);

void ox_sampler_reset(ox_sampler *s);                 /* RNG back to its seed */
void ox_sampler_reseed(ox_sampler *s, uint64_t seed); /* new seed, RNG restarted */

#endif
