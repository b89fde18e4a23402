/* kernels_simd128.c — wasm SIMD128 matmul tiles for Q8_0, Q4_0, Q4_K, Q5_K and Q6_K.
 *
 * A weight block is widened once to 4 x i16x8 (nibbles unpacked, -8 applied) and dotted
 * with the int16 copy of the Q8_0 activations (ox_act.q16) by i32x4.dot_i16x8: each
 * block's integer sum is exact, then scaled by d_w * d_a in f32 like ggml. Prefill takes
 * 4 tokens per pass over a weight row (the widening is shared, and the 4 per-token sums
 * are reduced into one vector whose lanes are the tokens, scaled by one vector multiply), and
 * 2 or 3 left over in one pass too;
 * decode is one row x one token (multi-row decode passes measured slower under V8: its
 * SIMD register allocation spills). K-quant super-blocks are unpacked once per row to int16
 * quants times their integer sub-block scales (ox_kblock) and dotted with each token's
 * int16 Q8_K quants: exact integer sums, then d and the min term in f32. */
#ifdef __wasm_simd128__
#include "kernels/kernels_impl.h"
#include "kernels/iq_tiles.h" /* ox_tile_f16 */

#include <wasm_simd128.h>

/* (two loads + extends measured faster under V8 than four v128.load8x8_s) */
static inline void widen_q8_0(const uint8_t *blk, v128_t *w) {
    v128_t lo = wasm_v128_load(blk + 2), hi = wasm_v128_load(blk + 18);
    w[0] = wasm_i16x8_extend_low_i8x16(lo);
    w[1] = wasm_i16x8_extend_high_i8x16(lo);
    w[2] = wasm_i16x8_extend_low_i8x16(hi);
    w[3] = wasm_i16x8_extend_high_i8x16(hi);
}

static inline void widen_q4_0(const uint8_t *blk, v128_t *w) {
    v128_t q = wasm_v128_load(blk + 2), eight = wasm_i8x16_splat(8);
    v128_t lo = wasm_i8x16_sub(wasm_v128_and(q, wasm_i8x16_splat(0x0F)), eight); /* elements 0..15 */
    v128_t hi = wasm_i8x16_sub(wasm_u8x16_shr(q, 4), eight);                     /* elements 16..31 */
    w[0] = wasm_i16x8_extend_low_i8x16(lo);
    w[1] = wasm_i16x8_extend_high_i8x16(lo);
    w[2] = wasm_i16x8_extend_low_i8x16(hi);
    w[3] = wasm_i16x8_extend_high_i8x16(hi);
}

/* i32x4 partial sums of one block's 32 products */
static inline v128_t dot_block(const v128_t *w, const int16_t *a) {
    v128_t s0 = wasm_i32x4_dot_i16x8(w[0], wasm_v128_load(a));
    v128_t s1 = wasm_i32x4_dot_i16x8(w[1], wasm_v128_load(a + 8));
    v128_t s2 = wasm_i32x4_dot_i16x8(w[2], wasm_v128_load(a + 16));
    v128_t s3 = wasm_i32x4_dot_i16x8(w[3], wasm_v128_load(a + 24));
    return wasm_i32x4_add(wasm_i32x4_add(s0, s1), wasm_i32x4_add(s2, s3));
}

/* [sum a, sum b, sum c, sum d] */
static inline v128_t hsum4(v128_t a, v128_t b, v128_t c, v128_t d) {
    v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

static inline float hsumf(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 2)) +
           (wasm_f32x4_extract_lane(v, 1) + wasm_f32x4_extract_lane(v, 3));
}

/* ox_f16_fast on 4 lanes (the halves zero-extended in i32 lanes): exact, inf/nan kept */
static inline v128_t f16x4_to_f32(v128_t h) {
    v128_t mag = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
    v128_t v = wasm_f32x4_mul(mag, wasm_f32x4_splat(0x1p112f));
    v128_t infnan = wasm_i32x4_eq(wasm_v128_and(h, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7c00));
    v = wasm_v128_bitselect(wasm_v128_or(mag, wasm_i32x4_splat(0x7f800000)), v, infnan);
    return wasm_v128_or(v, wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16));
}

/* F16 weights (llama.cpp keeps a tensor or two F16 in its K-quant mixes; E2B's per-layer input
 * projection is one): 256 of a row widened in registers (f16x4_to_f32) into a chunk, then
 * dotted with each token's f32 activations, in the generic path's float order (the same
 * results). That path converted one half at a time: 5 % of an E2B decode step. */
void ox_tile_f16(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    float wf[256] __attribute__((aligned(16)));
    for (int r = r0; r < r1; r++) {
        const uint16_t *row = (const uint16_t *)((const uint8_t *)W->data + (size_t)r * W->row_bytes);
        for (int t = 0; t < a->n_tok; t++) y[(size_t)t * W->rows + r] = 0;
        for (int c = 0; c < W->cols; c += 256) {
            int n = W->cols - c < 256 ? W->cols - c : 256, i = 0;
            for (; i + 8 <= n; i += 8) {
                v128_t h = wasm_v128_load(row + c + i);
                wasm_v128_store(wf + i, f16x4_to_f32(wasm_u32x4_extend_low_u16x8(h)));
                wasm_v128_store(wf + i + 4, f16x4_to_f32(wasm_u32x4_extend_high_u16x8(h)));
            }
            for (; i < n; i++) wf[i] = ox_f16_to_f32(row[c + i]);
            for (int t = 0; t < a->n_tok; t++)
                y[(size_t)t * W->rows + r] += ox_dot_f32(wf, a->x + (size_t)t * a->cols + c, n);
        }
    }
}

/* the d fields (first 2 bytes) of 4 consecutive legacy blocks, bb bytes apart */
static inline v128_t legacy_d4(const uint8_t *blk, size_t bb) {
    uint16_t d[4];
    for (int k = 0; k < 4; k++) memcpy(&d[k], blk + k * bb, 2);
    return wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(d));
}

#ifdef __wasm_relaxed_simd__
typedef int8_t i8x16_t __attribute__((vector_size(16)));
/* the int8 activations (first operand) times unsigned quants as the 7-bit operand (0..127:
 * the same result on every engine), pairs summed in int16 */
static inline v128_t rdot(v128_t q, const int8_t *a8) {
    return (v128_t)__builtin_wasm_relaxed_dot_i8x16_i7x16_s_i16x8((i8x16_t)wasm_v128_load(a8), (i8x16_t)q);
}
/* Q4_0 under relaxed SIMD: the nibbles stay unsigned (0..15) and are dotted with the int8
 * activations; the -8 comes back once per block as 8 * the activations' sum (a->sT). The
 * i16 sums (<= 4 * 15 * 128) cannot saturate. */
#define Q4_UNSIGNED 1
static inline void nibbles_q4_0(const uint8_t *blk, v128_t *lo, v128_t *hi) {
    v128_t q = wasm_v128_load(blk + 2), m4 = wasm_i8x16_splat(0x0F);
    *lo = wasm_v128_and(q, m4);
    *hi = wasm_v128_and(wasm_u16x8_shr(q, 4), m4);
}
static inline v128_t dot_q4u(v128_t lo, v128_t hi, const int8_t *a8) {
    return wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(rdot(lo, a8), rdot(hi, a8 + 16)));
}
#else
#define Q4_UNSIGNED 0
#endif

/* the int8 quants of token t's activation block b */
static inline const int8_t *act8(const ox_act *a, int t, int b) {
    return ((const ox_block_q8_0 *)(a->q + (size_t)t * a->q_stride))[b].qs;
}

/* one block widened and dotted at once (4 widened blocks alive together would spill);
 * Q4_UNSIGNED: without the -8 */
static inline v128_t legacy_block_dot(const uint8_t *blk, const int16_t *a, const int8_t *a8, int q4) {
#if Q4_UNSIGNED
    if (q4) {
        v128_t lo, hi;
        nibbles_q4_0(blk, &lo, &hi);
        return dot_q4u(lo, hi, a8);
    }
#endif
    v128_t w[4];
    if (q4) widen_q4_0(blk, w);
    else widen_q8_0(blk, w);
    return dot_block(w, a);
}

/* Tokens t..t+T-1 (T = 2..4, a constant once inlined) in the lanes of one vector per row: each
 * block widened once for all of them. A token's lane gets the same float operations whatever
 * T is (the padding lanes of a->dT and a->sT are zero). */
static inline __attribute__((always_inline)) void legacy_pass(const ox_matrix *W, const ox_act *a, int r0, int r1,
                                                              float *y, int q4, int t, const int T) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad;
    const size_t bb = q4 ? sizeof(ox_block_q4_0) : sizeof(ox_block_q8_0);
    const int16_t *a0 = a->q16 + (size_t)t * cols;
    const v128_t z = wasm_i32x4_splat(0);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        v128_t acc = wasm_f32x4_splat(0);
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = row + b * bb;
            v128_t s;
#if Q4_UNSIGNED
            if (q4) {
                v128_t lo, hi;
                nibbles_q4_0(blk, &lo, &hi);
                s = hsum4(dot_q4u(lo, hi, act8(a, t, b)), dot_q4u(lo, hi, act8(a, t + 1, b)),
                          T > 2 ? dot_q4u(lo, hi, act8(a, t + 2, b)) : z, T > 3 ? dot_q4u(lo, hi, act8(a, t + 3, b)) : z);
                s = wasm_i32x4_sub(s, wasm_i32x4_shl(wasm_v128_load(a->sT + (size_t)b * tp + t), 3));
            } else
#endif
            {
                v128_t w[4];
                if (q4) widen_q4_0(blk, w);
                else widen_q8_0(blk, w);
                const int16_t *ab = a0 + b * OX_QK;
                s = hsum4(dot_block(w, ab), dot_block(w, ab + cols), T > 2 ? dot_block(w, ab + 2 * cols) : z,
                          T > 3 ? dot_block(w, ab + 3 * cols) : z);
            }
            v128_t scale = wasm_f32x4_mul(wasm_v128_load(a->dT + (size_t)b * tp + t), wasm_f32x4_splat(ox_legacy_d(blk)));
            acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), scale));
        }
        float l[4];
        wasm_v128_store(l, acc);
        for (int k = 0; k < T; k++) y[(size_t)(t + k) * rows + r] = l[k];
    }
}

/* Q8_0, 4 tokens, rows r and r + 1 in one pass: each token's activation vectors loaded once for
 * both rows (a prefill's loads dominate once the weights are widened). Each row's lane gets
 * the same float operations as in legacy_pass. */
static inline __attribute__((always_inline)) void q8_0_pass_2rows(const ox_matrix *W, const ox_act *a, int r, float *y,
                                                                  int t) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad;
    const uint8_t *row0 = (const uint8_t *)W->data + (size_t)r * W->row_bytes, *row1 = row0 + W->row_bytes;
    const int16_t *a0 = a->q16 + (size_t)t * cols;
    v128_t acc0 = wasm_f32x4_splat(0), acc1 = acc0;
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk0 = row0 + b * sizeof(ox_block_q8_0), *blk1 = row1 + b * sizeof(ox_block_q8_0);
        v128_t w0[4], w1[4], p0[4], p1[4];
        widen_q8_0(blk0, w0);
        widen_q8_0(blk1, w1);
        for (int k = 0; k < 4; k++) {
            const int16_t *ab = a0 + (size_t)k * cols + b * OX_QK;
            v128_t x0 = wasm_v128_load(ab), x1 = wasm_v128_load(ab + 8), x2 = wasm_v128_load(ab + 16),
                   x3 = wasm_v128_load(ab + 24);
            p0[k] = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_dot_i16x8(w0[0], x0), wasm_i32x4_dot_i16x8(w0[1], x1)),
                                   wasm_i32x4_add(wasm_i32x4_dot_i16x8(w0[2], x2), wasm_i32x4_dot_i16x8(w0[3], x3)));
            p1[k] = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_dot_i16x8(w1[0], x0), wasm_i32x4_dot_i16x8(w1[1], x1)),
                                   wasm_i32x4_add(wasm_i32x4_dot_i16x8(w1[2], x2), wasm_i32x4_dot_i16x8(w1[3], x3)));
        }
        v128_t da = wasm_v128_load(a->dT + (size_t)b * tp + t);
        v128_t s0 = hsum4(p0[0], p0[1], p0[2], p0[3]), s1 = hsum4(p1[0], p1[1], p1[2], p1[3]);
        acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s0),
                                                   wasm_f32x4_mul(da, wasm_f32x4_splat(ox_legacy_d(blk0)))));
        acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s1),
                                                   wasm_f32x4_mul(da, wasm_f32x4_splat(ox_legacy_d(blk1)))));
    }
    float l0[4], l1[4];
    wasm_v128_store(l0, acc0);
    wasm_v128_store(l1, acc1);
    for (int k = 0; k < 4; k++) y[(size_t)(t + k) * rows + r] = l0[k], y[(size_t)(t + k) * rows + r + 1] = l1[k];
}

/* (always inlined: tile_q8_0 and tile_q4_0 each get their own code, q4 a constant; left to
 * clang, the 4-token Q4_0 pass ran 35-50 % slower with q4 a runtime branch in its loop) */
static inline __attribute__((always_inline)) void tile_legacy(const ox_matrix *W, const ox_act *a, int r0, int r1,
                                                              float *y, int q4) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad;
    const size_t bb = q4 ? sizeof(ox_block_q4_0) : sizeof(ox_block_q8_0);
    int t = 0;
    for (; t + 4 <= a->n_tok; t += 4) {
        int r = r0;
        if (!q4)
            for (; r + 2 <= r1; r += 2) q8_0_pass_2rows(W, a, r, y, t);
        if (r < r1) legacy_pass(W, a, r, r1, y, q4, t, 4);
    }
    /* 2 or 3 left (a speculative verify): one pass, not a decode pass per token */
    if (a->n_tok - t == 3) legacy_pass(W, a, r0, r1, y, q4, t, 3), t += 3;
    else if (a->n_tok - t == 2) legacy_pass(W, a, r0, r1, y, q4, t, 2), t += 2;
    for (; t < a->n_tok; t++) {
        const int16_t *at = a->q16 + (size_t)t * cols;
        const float *da = a->dT + t; /* block b's scale at da[b * tp] */
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            v128_t acc = wasm_f32x4_splat(0);
            int b = 0;
            /* 4 blocks at a time: their 4 sums in one vector, scaled by one multiply */
            for (; b + 4 <= nb; b += 4) {
                const uint8_t *blk = row + b * bb;
                const int16_t *ab = at + b * OX_QK;
                v128_t s0 = legacy_block_dot(blk, ab, act8(a, t, b), q4);
                v128_t s1 = legacy_block_dot(blk + bb, ab + OX_QK, act8(a, t, b + 1), q4);
                v128_t s2 = legacy_block_dot(blk + 2 * bb, ab + 2 * OX_QK, act8(a, t, b + 2), q4);
                v128_t s3 = legacy_block_dot(blk + 3 * bb, ab + 3 * OX_QK, act8(a, t, b + 3), q4);
                v128_t s = hsum4(s0, s1, s2, s3);
                if (Q4_UNSIGNED && q4) {
                    const int32_t *st = a->sT + t;
                    v128_t sv = tp == 1
                                    ? wasm_v128_load(st + b)
                                    : wasm_i32x4_make(st[b * tp], st[(b + 1) * tp], st[(b + 2) * tp], st[(b + 3) * tp]);
                    s = wasm_i32x4_sub(s, wasm_i32x4_shl(sv, 3));
                }
                v128_t dw = f16x4_to_f32(legacy_d4(blk, bb));
                v128_t dav = tp == 1 ? wasm_v128_load(da + b)
                                     : wasm_f32x4_make(da[b * tp], da[(b + 1) * tp], da[(b + 2) * tp], da[(b + 3) * tp]);
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), wasm_f32x4_mul(dw, dav)));
            }
            for (; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                float scale = ox_legacy_d(blk) * da[(size_t)b * tp];
                v128_t s = legacy_block_dot(blk, at + b * OX_QK, act8(a, t, b), q4);
                if (Q4_UNSIGNED && q4) /* the -8 in one lane */
                    s = wasm_i32x4_replace_lane(s, 0, wasm_i32x4_extract_lane(s, 0) - 8 * a->sT[(size_t)b * tp + t]);
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), wasm_f32x4_splat(scale)));
            }
            y[(size_t)t * rows + r] = hsumf(acc);
        }
    }
}

/* ---------------------------------------------------------------- K-quants */

/* prefill (SIMD128; Q6_K at many tokens under relaxed SIMD too): the super-blocks of a row
 * unpacked once (kernels_tile.inc's driver) */

/* the 16 quants at k->q[pos..pos+15] (one sub-block's), times that sub-block's scale */
static inline void store_scaled(ox_kblock *k, int pos, v128_t v) {
    v128_t sc = wasm_i16x8_splat((int16_t)k->sc[pos / 16]);
    wasm_v128_store(k->q + pos, wasm_i16x8_mul(wasm_i16x8_extend_low_i8x16(v), sc));
    wasm_v128_store(k->q + pos + 8, wasm_i16x8_mul(wasm_i16x8_extend_high_i8x16(v), sc));
}

#ifndef __wasm_relaxed_simd__
/* Q4_K/Q5_K: sub-block 2i = low nibbles of qs[32i..32i+31], 2i+1 = high nibbles; Q5_K's
 * fifth bit of sub-block j is bit j of qh[l]. */
static inline void unpack_q45_k(const uint8_t *qs, const uint8_t *qh, ox_kblock *k) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), one = wasm_i8x16_splat(1);
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            v128_t v = wasm_v128_load(qs + 32 * i + 16 * h);
            v128_t lo = wasm_v128_and(v, m4), hi = wasm_u8x16_shr(v, 4);
            if (qh) {
                v128_t b = wasm_v128_load(qh + 16 * h);
                lo = wasm_v128_or(lo, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(b, 2 * i), one), 4));
                hi = wasm_v128_or(hi, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(b, 2 * i + 1), one), 4));
            }
            store_scaled(k, 64 * i + 16 * h, lo);
            store_scaled(k, 64 * i + 32 + 16 * h, hi);
        }
}

#endif

/* Q6_K: per half of 128, quarter 0..3 = ql[l] low, ql[l+32] low, ql[l] high, ql[l+32]
 * high, with 2 high bits from qh[l] at shift 2*quarter; minus 32. */
static inline void unpack_q6_k_quants(const ox_block_q6_K *b, ox_kblock *k) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), m2 = wasm_i8x16_splat(3), off = wasm_i8x16_splat(32);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            v128_t ql0 = wasm_v128_load(b->ql + 64 * h + l), ql1 = wasm_v128_load(b->ql + 64 * h + 32 + l);
            v128_t qh = wasm_v128_load(b->qh + 32 * h + l);
            v128_t q[4] = {wasm_v128_and(ql0, m4), wasm_v128_and(ql1, m4), wasm_u8x16_shr(ql0, 4),
                           wasm_u8x16_shr(ql1, 4)};
            for (int j = 0; j < 4; j++) {
                v128_t hi = wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(qh, 2 * j), m2), 4);
                store_scaled(k, 128 * h + 32 * j + l, wasm_i8x16_sub(wasm_v128_or(q[j], hi), off));
            }
        }
}

/* a->d * (d * sum(q . a) - dmin * sum_g mn[g] * bsums[g]) */
static inline float kblock_dot(const ox_kblock *k, const int16_t *a, const ox_block_q8_K *ab, int has_min) {
    v128_t acc = wasm_i32x4_splat(0), acc2 = wasm_i32x4_splat(0);
    for (int i = 0; i < 256; i += 16) {
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_v128_load(k->q + i), wasm_v128_load(a + i)));
        acc2 = wasm_i32x4_add(acc2, wasm_i32x4_dot_i16x8(wasm_v128_load(k->q + i + 8), wasm_v128_load(a + i + 8)));
    }
    acc = wasm_i32x4_add(acc, acc2);
    int32_t isum = wasm_i32x4_extract_lane(acc, 0) + wasm_i32x4_extract_lane(acc, 1) + wasm_i32x4_extract_lane(acc, 2) +
                   wasm_i32x4_extract_lane(acc, 3);
    float v = k->d * (float)isum;
    if (has_min) {
        v128_t bs0 = wasm_v128_load(ab->bsums), bs1 = wasm_v128_load(ab->bsums + 8);
        v128_t m =
            wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(bs0), wasm_v128_load(k->mn)),
                                          wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(bs0), wasm_v128_load(k->mn + 4))),
                           wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(bs1), wasm_v128_load(k->mn + 8)),
                                          wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(bs1), wasm_v128_load(k->mn + 12))));
        int32_t msum = wasm_i32x4_extract_lane(m, 0) + wasm_i32x4_extract_lane(m, 1) + wasm_i32x4_extract_lane(m, 2) +
                       wasm_i32x4_extract_lane(m, 3);
        return ab->d * v - ab->d * (k->dmin * (float)msum);
    }
    return ab->d * v;
}

/* byte-wise (v >> n) & mask / (v << n) & mask with a 16-bit shift: the mask drops the bits
 * that crossed from the neighbouring byte */
static inline v128_t shr_mask(v128_t v, int n, v128_t mask) { return wasm_v128_and(wasm_u16x8_shr(v, n), mask); }
static inline v128_t shl_mask(v128_t v, int n, v128_t mask) { return wasm_v128_and(wasm_i16x8_shl(v, n), mask); }

static inline int32_t hsum_i32(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}

/* Q4_K/Q5_K's 12 scale bytes as 16 bytes: 8 scales then 8 mins (ggml's word trick; the
 * same values as ox_kblock_scales_k4) */
static inline v128_t scales_k4(const uint8_t *s) {
    uint32_t u[3];
    memcpy(u, s, 12);
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    return wasm_i32x4_make(u[0] & m6, (u[2] & m4) | (((u[0] >> 6) & m2) << 4), u[1] & m6,
                           ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4));
}

/* Q4_K/Q5_K quants of sub-blocks 2i (q[0], q[1]: elements 64i..64i+31) and 2i+1 (q[2], q[3]),
 * unsigned bytes; Q5_K's fifth bit of sub-block j is bit j of qh[l], moved to bit 4 */
static inline void quants_k45(const uint8_t *qs, const uint8_t *qh, int i, v128_t *q) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), b4 = wasm_i8x16_splat(0x10);
    v128_t v0 = wasm_v128_load(qs + 32 * i), v1 = wasm_v128_load(qs + 32 * i + 16);
    q[0] = wasm_v128_and(v0, m4), q[1] = wasm_v128_and(v1, m4), q[2] = shr_mask(v0, 4, m4), q[3] = shr_mask(v1, 4, m4);
    if (qh) {
        v128_t h0 = wasm_v128_load(qh), h1 = wasm_v128_load(qh + 16);
        for (int k = 0; k < 2; k++) {
            int n = 2 * i + k;
            q[2 * k] = wasm_v128_or(q[2 * k], n <= 4 ? shl_mask(h0, 4 - n, b4) : shr_mask(h0, n - 4, b4));
            q[2 * k + 1] = wasm_v128_or(q[2 * k + 1], n <= 4 ? shl_mask(h1, 4 - n, b4) : shr_mask(h1, n - 4, b4));
        }
    }
}

/* Q6_K quants of step (h, l), unsigned (0..63): q[j] holds elements 128h + 32j + l .. +15,
 * sub-block 8h + l/16 + 2j */
static inline void quants_q6_k(const ox_block_q6_K *b, int h, int l, v128_t *q) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), m6 = wasm_i8x16_splat(0x30);
    v128_t ql0 = wasm_v128_load(b->ql + 64 * h + l), ql1 = wasm_v128_load(b->ql + 64 * h + 32 + l);
    v128_t qh = wasm_v128_load(b->qh + 32 * h + l);
    q[0] = wasm_v128_or(wasm_v128_and(ql0, m4), shl_mask(qh, 4, m6));
    q[1] = wasm_v128_or(wasm_v128_and(ql1, m4), shl_mask(qh, 2, m6));
    q[2] = wasm_v128_or(shr_mask(ql0, 4, m4), wasm_v128_and(qh, m6));
    q[3] = wasm_v128_or(shr_mask(ql1, 4, m4), shr_mask(qh, 2, m6));
}

#ifdef __wasm_relaxed_simd__
/* ---- relaxed SIMD: every token count from the ggml blocks, up to 4 tokens per pass over a
 * row. i16x8.relaxed_dot_i8x16_i7x16_s multiplies the int8 activations by the unsigned
 * quants as the 7-bit operand (0..63 <= 127: the same result on every engine); its pair sums
 * (<= 2 * 63 * 128, and two of them for Q4_K/Q5_K's <= 31) fit int16. i32x4.dot_i16x8 of
 * those with the sub-block's integer scale splatted applies the scale and widens at once,
 * so each super-block's sum per lane stays an exact integer until d * a->d in f32. The
 * quants are extracted once per pass and used for every token. */
#define KT 4 /* tokens per pass */

/* One super-block's integer sums (acc: sum sc_j (q . a)_j, m: sum mn_j bsum_j, NULL without
 * mins) into the tokens' running sums, in the same float operations and order as the
 * SIMD128 dots (ab->d * (d * isum) - ab->d * (dmin * msum), summed block by block), so both
 * builds give the same logits: one token in a scalar, more in the lanes of *fv. */
static inline __attribute__((always_inline)) void kfinish(const v128_t *acc, const v128_t *m,
                                                          const ox_block_q8_K *const *ab, int b, const int T, float d,
                                                          float dmin, float *fs, v128_t *fv) {
    if (T == 1) {
        float ad = ab[0][b].d, v = ad * (d * (float)hsum_i32(acc[0]));
        *fs += m ? v - ad * (dmin * (float)hsum_i32(m[0])) : v;
        return;
    }
    const v128_t z = wasm_i32x4_splat(0);
    v128_t ad = wasm_f32x4_make(ab[0][b].d, ab[1][b].d, T > 2 ? ab[2][b].d : 0, T > 3 ? ab[3][b].d : 0);
    v128_t is = hsum4(acc[0], acc[1], T > 2 ? acc[2] : z, T > 3 ? acc[3] : z);
    v128_t v = wasm_f32x4_mul(ad, wasm_f32x4_mul(wasm_f32x4_splat(d), wasm_f32x4_convert_i32x4(is)));
    if (m) {
        v128_t ms = hsum4(m[0], m[1], T > 2 ? m[2] : z, T > 3 ? m[3] : z);
        v = wasm_f32x4_sub(v, wasm_f32x4_mul(ad, wasm_f32x4_mul(wasm_f32x4_splat(dmin), wasm_f32x4_convert_i32x4(ms))));
    }
    *fv = wasm_f32x4_add(*fv, v);
}

static inline void kstore(const int T, float fs, v128_t fv, float *out) {
    if (T == 1) {
        out[0] = fs;
        return;
    }
    float l[4];
    wasm_v128_store(l, fv);
    for (int t = 0; t < T; t++) out[t] = l[t];
}

/* The steps of a super-block: unrolled for one token (decode), where V8 then issues the
 * step's loads early, which measured faster streaming from memory; a loop for more tokens
 * (verify, prefill), where the unrolled body spills (measured 13-25 % faster as a loop). */
#define KSTEPS(n, step)                                                                                                \
    do {                                                                                                               \
        if (T == 1)                                                                                                    \
            for (int i = 0; i < (n); i++) step;                                                                        \
        else _Pragma("clang loop unroll(disable)") for (int i = 0; i < (n); i++) step;                                 \
    } while (0)

/* Q4_K/Q5_K step i: sub-blocks 2i and 2i+1 of block b, each token's scaled sums into acc[t] */
static inline __attribute__((always_inline)) void ksteps45(const uint8_t *qs, const uint8_t *qh, int i,
                                                           const uint16_t *sc, const ox_block_q8_K *const *ab, int b,
                                                           const int T, v128_t *acc) {
    v128_t q[4];
    quants_k45(qs, qh, i, q);
    v128_t s0 = wasm_v128_load16_splat(sc + 2 * i), s1 = wasm_v128_load16_splat(sc + 2 * i + 1);
    for (int t = 0; t < T; t++) {
        const int8_t *a8 = ab[t][b].qs + 64 * i;
        v128_t p0 = wasm_i16x8_add(rdot(q[0], a8), rdot(q[1], a8 + 16));
        v128_t p1 = wasm_i16x8_add(rdot(q[2], a8 + 32), rdot(q[3], a8 + 48));
        acc[t] = wasm_i32x4_add(acc[t], wasm_i32x4_add(wasm_i32x4_dot_i16x8(p0, s0), wasm_i32x4_dot_i16x8(p1, s1)));
    }
}

/* Q6_K step (h, l): sub-blocks 8h + l/16 + {0, 2, 4, 6} of block b */
static inline __attribute__((always_inline)) void ksteps6(const ox_block_q6_K *blk, int h, int l, const int16_t *sc,
                                                          const ox_block_q8_K *const *ab, int b, const int T,
                                                          v128_t *acc) {
    v128_t q[4], s[4];
    quants_q6_k(blk, h, l, q);
    for (int j = 0; j < 4; j++) s[j] = wasm_v128_load16_splat(sc + 8 * h + l / 16 + 2 * j);
    for (int t = 0; t < T; t++) {
        const int8_t *a8 = ab[t][b].qs + 128 * h + l;
        v128_t p =
            wasm_i32x4_add(wasm_i32x4_dot_i16x8(rdot(q[0], a8), s[0]), wasm_i32x4_dot_i16x8(rdot(q[1], a8 + 32), s[1]));
        p = wasm_i32x4_add(p, wasm_i32x4_add(wasm_i32x4_dot_i16x8(rdot(q[2], a8 + 64), s[2]),
                                             wasm_i32x4_dot_i16x8(rdot(q[3], a8 + 96), s[3])));
        acc[t] = wasm_i32x4_add(acc[t], p);
    }
}

static inline __attribute__((always_inline)) void ktile45_pass(const uint8_t *row, int nb, size_t bb, int five,
                                                               const ox_block_q8_K *const *ab, const int T, float *out) {
    float fs = 0;
    v128_t fv = wasm_f32x4_splat(0);
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = row + b * bb;
        const ox_block_q4_K *b4 = (const ox_block_q4_K *)blk;
        const ox_block_q5_K *b5 = (const ox_block_q5_K *)blk;
        const uint8_t *scales = five ? b5->scales : b4->scales, *qs = five ? b5->qs : b4->qs;
        const uint8_t *qh = five ? b5->qh : NULL;
        v128_t sm = scales_k4(scales);
        uint16_t sc[8] __attribute__((aligned(16)));
        wasm_v128_store(sc, wasm_u16x8_extend_low_u8x16(sm));
        v128_t mn = wasm_u16x8_extend_high_u8x16(sm); /* mn_j times bsums 2j and 2j+1 */
        v128_t mn_lo = wasm_i16x8_shuffle(mn, mn, 0, 0, 1, 1, 2, 2, 3, 3),
               mn_hi = wasm_i16x8_shuffle(mn, mn, 4, 4, 5, 5, 6, 6, 7, 7);
        v128_t acc[KT];
        for (int t = 0; t < T; t++) acc[t] = wasm_i32x4_splat(0);
        KSTEPS(4, ksteps45(qs, qh, i, sc, ab, b, T, acc));
        v128_t m[KT];
        for (int t = 0; t < T; t++)
            m[t] = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t][b].bsums), mn_lo),
                                  wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t][b].bsums + 8), mn_hi));
        kfinish(acc, m, ab, b, T, ox_f16_fast(five ? b5->d : b4->d), ox_f16_fast(five ? b5->dmin : b4->dmin), &fs, &fv);
    }
    kstore(T, fs, fv, out);
}

/* Q6_K: the -32 offset applied once per super-block and token as 32 * sum_j sc_j bsum_j */
static inline __attribute__((always_inline)) void ktile6_pass(const uint8_t *row, int nb,
                                                              const ox_block_q8_K *const *ab, const int T, float *out) {
    float fs = 0;
    v128_t fv = wasm_f32x4_splat(0);
    for (int b = 0; b < nb; b++) {
        const ox_block_q6_K *blk = (const ox_block_q6_K *)row + b;
        v128_t sc8 = wasm_v128_load(blk->scales);
        v128_t sc_lo = wasm_i16x8_extend_low_i8x16(sc8), sc_hi = wasm_i16x8_extend_high_i8x16(sc8);
        int16_t sc[16] __attribute__((aligned(16)));
        wasm_v128_store(sc, sc_lo), wasm_v128_store(sc + 8, sc_hi);
        v128_t acc[KT];
        for (int t = 0; t < T; t++) acc[t] = wasm_i32x4_splat(0);
        KSTEPS(4, ksteps6(blk, i >> 1, (i & 1) * 16, sc, ab, b, T, acc));
        for (int t = 0; t < T; t++) {
            v128_t off = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t][b].bsums), sc_lo),
                                        wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t][b].bsums + 8), sc_hi));
            acc[t] = wasm_i32x4_sub(acc[t], wasm_i32x4_shl(off, 5));
        }
        kfinish(acc, NULL, ab, b, T, ox_f16_fast(blk->d), 0, &fs, &fv);
    }
    kstore(T, fs, fv, out);
}

/* kind: 4 = Q4_K, 5 = Q5_K, 6 = Q6_K. Tokens in passes of 4, the rest in one pass of 1..3
 * (each pass length its own unrolled copy). */
static inline __attribute__((always_inline)) void ktile_pass(const uint8_t *row, int nb, int kind,
                                                             const ox_block_q8_K *const *ab, const int T, float *out) {
    if (kind == 6) ktile6_pass(row, nb, ab, T, out);
    else ktile45_pass(row, nb, kind == 5 ? sizeof(ox_block_q5_K) : sizeof(ox_block_q4_K), kind == 5, ab, T, out);
}

static inline __attribute__((always_inline)) void ktile(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y,
                                                        int kind) {
    const int nb = W->cols / OX_QK_K;
    for (int t0 = 0; t0 < a->n_tok; t0 += KT) {
        const int T = a->n_tok - t0 < KT ? a->n_tok - t0 : KT;
        const ox_block_q8_K *ab[KT];
        for (int t = 0; t < T; t++) ab[t] = (const ox_block_q8_K *)(a->q + (size_t)(t0 + t) * a->q_stride);
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            float out[KT];
            switch (T) {
            case 4: ktile_pass(row, nb, kind, ab, 4, out); break;
            case 3: ktile_pass(row, nb, kind, ab, 3, out); break;
            case 2: ktile_pass(row, nb, kind, ab, 2, out); break;
            default: ktile_pass(row, nb, kind, ab, 1, out); break;
            }
            for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * W->rows + r] = out[t];
        }
    }
}
static void ktile_q4_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { ktile(W, a, r0, r1, y, 4); }
static void ktile_q5_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { ktile(W, a, r0, r1, y, 5); }
static void ktile_q6_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { ktile(W, a, r0, r1, y, 6); }
#define OX_KTILE             1
#define OX_KTILE_Q6_K_UNPACK 8 /* measured: from 8 tokens, unpacking once per row wins */

#else
/* ---- SIMD128, 1 to 4 tokens straight from the ggml blocks (decode and short verify passes):
 * the quants are extracted once and widened in registers, dotted with each token's int16
 * activations per sub-block; the integer sub-block sums are gathered 4 to a vector (hsum4)
 * and multiplied by their integer scales, so the whole super-block sum stays exact, as
 * quant.c's. A token gets the same operations whatever the number of tokens (T, a constant
 * once inlined): its result has the same bits as when it is decoded alone. */
#define KD               4 /* tokens per direct pass */

/* the products of 16 unsigned weight bytes (0..63) with the int16 activations, as i32x4
 * partial sums (dot32: of 2 x 16); with several tokens the widening of q is the same
 * expression for each, computed once */
static inline v128_t dot16(v128_t q, const int16_t *a16) {
    return wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(q), wasm_v128_load(a16)),
                          wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(q), wasm_v128_load(a16 + 8)));
}
static inline v128_t dot32(v128_t q0, v128_t q1, const int16_t *a16) {
    return wasm_i32x4_add(dot16(q0, a16), dot16(q1, a16 + 16));
}

/* bytes 4g..4g+3 of v (unsigned) as i32x4 */
static inline v128_t u8_group(v128_t v, int g) {
    v128_t h = g < 2 ? wasm_u16x8_extend_low_u8x16(v) : wasm_u16x8_extend_high_u8x16(v);
    return g % 2 ? wasm_u32x4_extend_high_u16x8(h) : wasm_u32x4_extend_low_u16x8(h);
}

/* Q4_K / Q5_K super-block . T tokens' Q8_K blocks (a[t], ab[t]):
 * ab->d * (d * sum sc_j (q . a)_j - dmin * sum mn_j bsum_j). (Summing the sub-blocks per
 * half, fewer sums live, measured no faster at 4 tokens and slower at 1.) */
static inline __attribute__((always_inline)) void dot_k45(const ox_f16 *d, const ox_f16 *dmin, const uint8_t *scales,
                                                          const uint8_t *qs, const uint8_t *qh, const int16_t *const *a,
                                                          const ox_block_q8_K *const *ab, const int T, float *out) {
    v128_t sm = scales_k4(scales), s[KD][8], sum[KD];
    for (int i = 0; i < 4; i++) {
        v128_t q[4];
        quants_k45(qs, qh, i, q);
        for (int t = 0; t < T; t++) {
            s[t][2 * i] = dot32(q[0], q[1], a[t] + 64 * i);
            s[t][2 * i + 1] = dot32(q[2], q[3], a[t] + 64 * i + 32);
        }
    }
    for (int t = 0; t < T; t++)
        sum[t] = wasm_i32x4_add(wasm_i32x4_mul(hsum4(s[t][0], s[t][1], s[t][2], s[t][3]), u8_group(sm, 0)),
                                wasm_i32x4_mul(hsum4(s[t][4], s[t][5], s[t][6], s[t][7]), u8_group(sm, 1)));
    /* mins: bsums pairwise (the 16-element sums of each 32-element sub-block) . mn */
    v128_t mn16 = wasm_u16x8_extend_high_u8x16(sm);
    v128_t mn_lo = wasm_u32x4_extend_low_u16x8(mn16), mn_hi = wasm_u32x4_extend_high_u16x8(mn16);
    for (int t = 0; t < T; t++) {
        v128_t bs0 = wasm_v128_load(ab[t]->bsums), bs1 = wasm_v128_load(ab[t]->bsums + 8);
        v128_t m = wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(bs0), mn_lo),
                                  wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(bs1), mn_hi));
        out[t] = ab[t]->d * (ox_f16_fast(*d) * (float)hsum_i32(sum[t])) -
                 ab[t]->d * (ox_f16_fast(*dmin) * (float)hsum_i32(m));
    }
}

/* Q6_K: the unsigned 6-bit quants (0..63) dotted per sub-block of 16, the -32 offset applied
 * once as 32 * sum sc_j bsum_j. Step (h, l) makes sub-blocks 8h + l/16 + {0, 2, 4, 6}. */
static inline __attribute__((always_inline)) void dot_q6_k(const ox_block_q6_K *b, const int16_t *const *a,
                                                           const ox_block_q8_K *const *ab, const int T, float *out) {
    v128_t sc = wasm_v128_load(b->scales);
    /* the scales in step order: bytes 4k..4k+3 = sub-blocks of step k */
    v128_t scs = wasm_i8x16_shuffle(sc, sc, 0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    v128_t sc16lo = wasm_i16x8_extend_low_i8x16(scs), sc16hi = wasm_i16x8_extend_high_i8x16(scs);
    v128_t sum[KD];
    for (int t = 0; t < T; t++) sum[t] = wasm_i32x4_splat(0);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            v128_t q[4];
            quants_q6_k(b, h, l, q);
            int k = 2 * h + l / 16;
            v128_t sck = k < 2 ? (k ? wasm_i32x4_extend_high_i16x8(sc16lo) : wasm_i32x4_extend_low_i16x8(sc16lo))
                               : (k == 3 ? wasm_i32x4_extend_high_i16x8(sc16hi) : wasm_i32x4_extend_low_i16x8(sc16hi));
            for (int t = 0; t < T; t++) {
                const int16_t *ap = a[t] + 128 * h + l;
                v128_t s4 = hsum4(dot16(q[0], ap), dot16(q[1], ap + 32), dot16(q[2], ap + 64), dot16(q[3], ap + 96));
                sum[t] = wasm_i32x4_add(sum[t], wasm_i32x4_mul(s4, sck));
            }
        }
    /* the offset: 32 * sum_j sc_j * bsums_j, in natural sub-block order */
    v128_t sclo = wasm_i16x8_extend_low_i8x16(sc), schi = wasm_i16x8_extend_high_i8x16(sc);
    for (int t = 0; t < T; t++) {
        v128_t off = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t]->bsums), sclo),
                                    wasm_i32x4_dot_i16x8(wasm_v128_load(ab[t]->bsums + 8), schi));
        out[t] = ab[t]->d * (ox_f16_fast(b->d) * (float)(hsum_i32(sum[t]) - 32 * hsum_i32(off)));
    }
}

/* one super-block . T tokens (kind 4 = Q4_K, 5 = Q5_K, 6 = Q6_K) */
static inline __attribute__((always_inline)) void kdot_t(const uint8_t *blk, int kind, const int16_t *const *a,
                                                         const ox_block_q8_K *const *ab, const int T, float *out) {
    const ox_block_q4_K *b4 = (const ox_block_q4_K *)blk;
    const ox_block_q5_K *b5 = (const ox_block_q5_K *)blk;
    if (kind == 6) dot_q6_k((const ox_block_q6_K *)blk, a, ab, T, out);
    else if (kind == 5) dot_k45(&b5->d, &b5->dmin, b5->scales, b5->qs, b5->qh, a, ab, T, out);
    else dot_k45(&b4->d, &b4->dmin, b4->scales, b4->qs, NULL, a, ab, T, out);
}

/* the one-token dots, the decode path */
static inline float kdot1(const void *blk, int kind, const int16_t *a, const ox_block_q8_K *ab) {
    float out;
    kdot_t(blk, kind, &a, &ab, 1, &out);
    return out;
}
static float kdot_q4_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) { return kdot1(blk, 4, a, ab); }
static float kdot_q5_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) { return kdot1(blk, 5, a, ab); }
static float kdot_q6_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) { return kdot1(blk, 6, a, ab); }

/* Tokens t0..t0+T-1 (T = 2..KD) . one row of nb super-blocks, each token's super-blocks summed
 * in order from 0 as the one-token path sums them */
static inline __attribute__((always_inline)) void krow_pass(const uint8_t *row, int nb, int kind, const ox_act *a,
                                                            int t0, const int T, float *out) {
    const size_t bb = kind == 6 ? sizeof(ox_block_q6_K) : kind == 5 ? sizeof(ox_block_q5_K) : sizeof(ox_block_q4_K);
    float sum[KD] = {0};
    for (int b = 0; b < nb; b++) {
        const int16_t *at[KD];
        const ox_block_q8_K *ab[KD];
        for (int t = 0; t < T; t++) {
            at[t] = a->q16 + (size_t)(t0 + t) * a->cols + b * OX_QK_K;
            ab[t] = (const ox_block_q8_K *)(a->q + (size_t)(t0 + t) * a->q_stride) + b;
        }
        float part[KD];
        kdot_t(row + b * bb, kind, at, ab, T, part);
        for (int t = 0; t < T; t++) sum[t] += part[t];
    }
    for (int t = 0; t < T; t++) out[t] = sum[t];
}

/* each pass length its own unrolled copy */
static inline __attribute__((always_inline)) void krow(const uint8_t *row, int nb, int kind, const ox_act *a, int t0,
                                                       int T, float *out) {
    switch (T) {
    case 4: krow_pass(row, nb, kind, a, t0, 4, out); break;
    case 3: krow_pass(row, nb, kind, a, t0, 3, out); break;
    default: krow_pass(row, nb, kind, a, t0, 2, out); break;
    }
}
static void krow_q4_k(const uint8_t *row, int nb, const ox_act *a, int t0, int T, float *out) {
    krow(row, nb, 4, a, t0, T, out);
}
static void krow_q5_k(const uint8_t *row, int nb, const ox_act *a, int t0, int T, float *out) {
    krow(row, nb, 5, a, t0, T, out);
}
/* Q6_K up to 3 (measured: 4 tokens' sums spill, slower than unpacking) */
static void krow_q6_k(const uint8_t *row, int nb, const ox_act *a, int t0, int T, float *out) {
    if (T == 3) krow_pass(row, nb, 6, a, t0, 3, out);
    else krow_pass(row, nb, 6, a, t0, 2, out);
}
#define OX_KROW_MAX_K45  KD
#define OX_KROW_MAX_Q6_K 3
#define OX_KDOT_DIRECT   1
/* Q5_K's prefill too (4 tokens per direct row, the rest one), where it measured faster than
 * unpacking once per row (its unpacking is slow); Q4_K and Q6_K keep the unpacked int16 dots
 * there. */
#define OX_KDOT_ALL_Q5_K 1
#endif

#include "kernels/kernels_tile.inc"
#endif
