/* kv.h — the KV cache of one own-KV layer (docs/architecture.md "KV cache"): K and V rows
 * per position, stored as f32, f16 or Q8_0, and attention over them.
 *
 * Full-attention layers keep every position. Sliding-window layers (causal models) keep a
 * ring of min(n_ctx, W + OX_UBATCH - 1) rows, position p in row p % ring: one forward call
 * writes at most OX_UBATCH positions (its micro-batch; a speculative verify batch is
 * smaller) before its queries read, and the first of them still needs the W - 1 keys before
 * it. KV-shared layers have no cache of their own (they read kv_src's) and take no bytes.
 *
 * Caches grow with use up to their capacity (a ring never wraps before it reached it), so
 * ox_kv_bytes is what a session allocates once it has run n_ctx positions. */
#ifndef OX_KV_H
#define OX_KV_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "formats/config.h"

#define OX_UBATCH            256 /* tokens per micro-batch of a long prompt: the most one forward writes at once */
/* Speculative decoding verifies the pending token and up to OX_GEN_DRAFT_MAX drafts in one
 * forward: a batch within one micro-batch, so the sliding rings' margin covers it. The memory
 * estimate counts the logits rows of OX_GEN_DRAFT_DEFAULT + 1 (decode/generate.c uses both). */
#define OX_GEN_DRAFT_MAX     16
/* the JS API drafts up to this many for greedy requests by default: prompt lookup's cost model never picks more (decode/draft_lookup.h) */
#define OX_GEN_DRAFT_DEFAULT 3

/* On models whose image tokens attend within their run (config bidir_vision) a run of soft
 * tokens stays in one batch: batches go up to this many tokens there (an image at the
 * processor's default budget), and the sliding rings keep the margin for it. */
#define OX_SOFT_RUN_MAX 280
static inline int ox_max_batch(const ox_config *c) {
    return c->bidir_vision && OX_SOFT_RUN_MAX > OX_UBATCH ? OX_SOFT_RUN_MAX : OX_UBATCH;
}

/* X(NAME, id, js name): the KV storage types (the JS option kvType takes the js names). */
#define OX_KV_TYPES(X)                                                                                                 \
    X(F32, 0, "f32")                                                                                                   \
    X(F16, 1, "f16")                                                                                                   \
    X(Q8_0, 2, "q8_0") /* blocks of 32 per head: f16 scale + 32 int8, 34 bytes */
#define OX_KV_ENUM_(name, id, js) OX_KV_##name = id,
typedef enum { OX_KV_TYPES(OX_KV_ENUM_) } ox_kv_type;
#undef OX_KV_ENUM_
#define OX_KV_N_TYPES 3
#define OX_KV_DEFAULT OX_KV_F32 /* sessions made by ox_session_new */

/* Bytes of every KV cache of a session of n_ctx positions (n_ctx <= 0: the model's maximum),
 * exactly what the session allocates once full, ring buffers included. */
uint64_t ox_kv_bytes(const ox_config *c, int n_ctx, ox_kv_type t);
/* Positions layer l's cache holds at most (0 for KV-shared layers). */
int ox_kv_capacity(const ox_config *c, int l, int n_ctx);
/* Bytes of one K (or V) row of n_heads heads of hd values. */
size_t ox_kv_row_bytes(ox_kv_type t, int n_heads, int hd);
/* 0, or OX_E_UNSUPPORTED (with err) if type t cannot store this model's heads (Q8_0 needs
 * head widths that are multiples of 32) or t is unknown. */
int ox_kv_check(const ox_config *c, ox_kv_type t, ox_err *err);

typedef struct ox_kv {
    uint8_t *k, *v; /* [cap][row_bytes]: post-norm, post-RoPE K; post-norm V */
    ox_kv_type type;
    int n_heads, hd;
    size_t row_bytes, head_bytes;
    int cap;          /* rows allocated */
    int max_cap;      /* rows at most; on a ring, position p lives in row p % max_cap */
    int ring, window; /* window: keys a query sees (0: all) */
    int lo;           /* lowest position still held: rows [lo, the session's position) are */
} ox_kv;

/* A cache for layer l of a session of n_ctx positions; allocates nothing yet. rings = 0 keeps
 * every position on sliding layers too (the reference tests compare the rings with). */
void ox_kv_init(ox_kv *kv, const ox_config *c, int l, int n_ctx, ox_kv_type t, int rings);
void ox_kv_free(ox_kv *kv);
/* Grow to hold positions [0, need) (a ring: its last max_cap of them); *grown += bytes added. */
int ox_kv_reserve(ox_kv *kv, int need, uint64_t *grown, ox_err *err);
uint64_t ox_kv_alloc_bytes(const ox_kv *kv);
/* Store the K and V rows (n_heads * hd f32 each) of position pos (reserved); positions are
 * written in order from the session's position on. */
void ox_kv_write(ox_kv *kv, int pos, const float *k, const float *v);
/* Position pos was written, here or into the GPU's copy of this cache (gpu/record.h): a ring's
 * lowest held position moves on. ox_kv_write calls it. */
void ox_kv_advance(ox_kv *kv, int pos);
/* Whether the cache can go on from position pos (after a truncation to it): its queries need
 * the keys of [pos - window + 1, pos), which a ring may have overwritten. Always true for 0. */
int ox_kv_can_resume(const ox_kv *kv, int pos);
/* Drop the positions from pos on (ox_kv_can_resume(kv, pos) must hold). */
void ox_kv_truncate(ox_kv *kv, int pos);
/* Copy src's rows and state into dst (same layer and type), growing dst to src's size. */
int ox_kv_copy(ox_kv *dst, const ox_kv *src, uint64_t *grown, ox_err *err);
/* A capacity >= need: doubling from cap (16 at first), capped at max (also the token list's). */
int ox_kv_grown_cap(int cap, int need, int max);

/* One query head q (hd values) over KV head g at positions [lo, hi] (all held): scores
 * (hi - lo + 1 floats of scratch) q . k_j, softmax, out = sum_j p_j v_j. */
void ox_kv_attend(const ox_kv *kv, int g, const float *q, int lo, int hi, float *scores, float *out);

#endif
