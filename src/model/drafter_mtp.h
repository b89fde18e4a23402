/* drafter_mtp.h — the Gemma 4 MTP drafter: llama.cpp's gemma4-assistant model driving the
 * target's speculative decoding (src/models/gemma4-assistant.cpp, common/speculative.cpp
 * "draft-mtp" there).
 *
 * The drafter is a few-layer Gemma 4 decoder of its own width D that has no caches: its layers
 * project queries only and attend over the target session's caches, its sliding layers over
 * the cache the target's last sliding layer reads, its full layers over the one the target's
 * last full layer reads. One step, for the token t at position p (the target holds 0..p-1):
 *
 *   x   = target_embd[t] * sqrt(Hb)           Hb = the target's width
 *   cur = W_pre [x | h]                        h  = the target's final-normed hidden at p-1
 *   per layer: cur = (ffn_block(attn_block(cur)) ) * out_scale   (queries at position p)
 *   hn  = rms(cur, output_norm)
 *   logits = drafter_embd hn                   (tied head, no soft-cap)
 *   h'  = W_post hn                            (the h of the next step)
 *
 * A draft of k tokens is k such steps, all at the same position p (the drafter never writes
 * a cache), each on the previous step's argmax and h'. Greedy drafts: the verifier
 * (generate.c) keeps exactly the ones the target would have produced. */
#ifndef OX_DRAFTER_MTP_H
#define OX_DRAFTER_MTP_H

#include <stdint.h>
#include "base/err.h"
#include "model/model.h"

typedef struct ox_mtp ox_mtp;

/* A drafter model (loaded with ox_load_opts.drafter = 1) bound to a target session: checks
 * the drafter fits the target (vocab, width, head dims, head groups; errors name both) and
 * allocates its buffers. Both must outlive it. */
ox_mtp *ox_mtp_new(const ox_model *drafter, ox_session *target, ox_err *err);
/* The same checks without a session (at load, say). 0 or OX_E_CONFIG. */
int ox_mtp_check(const ox_model *drafter, const ox_model *target, ox_err *err);
void ox_mtp_free(ox_mtp *t);

/* One step (above) for token at position pos <= the session's position; h_in: Hb floats.
 * logits: vocab floats, h_out: Hb floats (either may be NULL). */
int ox_mtp_step(ox_mtp *t, int token, int pos, const float *h_in, float *logits, float *h_out, ox_err *err);

/* Up to k greedy draft tokens after `token` (not yet run by the target, at the session's
 * position), given the target's hidden h of the token before it; the draft ends before the
 * first token the drafter gives less than p_min probability (a guess the verifier would
 * likely reject costs a wider verify batch). Returns how many (0..k), or < 0. */
int ox_mtp_draft(ox_mtp *t, int token, const float *h, int k, float p_min, int32_t *out, ox_err *err);

#endif
