/* kernels_simd128.c — wasm SIMD128 matmul tiles for Q8_0, Q4_0, Q4_K, Q5_K and Q6_K.
 *
 * A weight block is widened once to 4 x i16x8 (nibbles unpacked, -8 applied) and dotted
 * with the int16 copy of the Q8_0 activations (ox_act.q16) by i32x4.dot_i16x8: each
 * block's integer sum is exact, then scaled by d_w * d_a in f32 like ggml. Prefill takes
 * 4 tokens per pass over a weight row (the widening is shared, and the 4 per-token sums
 * are reduced into one vector whose lanes are the tokens, scaled by one vector multiply);
 * decode is one row x one token (multi-row decode passes measured slower under V8: its
 * SIMD register allocation spills). K-quant super-blocks are unpacked once per row to int16
 * quants times their integer sub-block scales (ox_kblock) and dotted with each token's
 * int16 Q8_K quants: exact integer sums, then d and the min term in f32. */
#ifdef __wasm_simd128__
#include "kernels/kernels_impl.h"

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
    v128_t hi = wasm_i8x16_sub(wasm_u8x16_shr(q, 4), eight);                      /* elements 16..31 */
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

static inline void tile_legacy(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, int q4) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad;
    const size_t bb = q4 ? sizeof(ox_block_q4_0) : sizeof(ox_block_q8_0);
    int t = 0;
    for (; t + 4 <= a->n_tok; t += 4) {
        const int16_t *a0 = a->q16 + (size_t)t * cols;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            v128_t acc = wasm_f32x4_splat(0);
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                v128_t w[4];
                if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
                const int16_t *ab = a0 + b * OX_QK;
                v128_t s = hsum4(dot_block(w, ab), dot_block(w, ab + cols), dot_block(w, ab + 2 * cols),
                                 dot_block(w, ab + 3 * cols));
                v128_t scale = wasm_f32x4_mul(wasm_v128_load(a->dT + (size_t)b * tp + t), wasm_f32x4_splat(ox_legacy_d(blk)));
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), scale));
            }
            y[(size_t)t * rows + r] = wasm_f32x4_extract_lane(acc, 0);
            y[(size_t)(t + 1) * rows + r] = wasm_f32x4_extract_lane(acc, 1);
            y[(size_t)(t + 2) * rows + r] = wasm_f32x4_extract_lane(acc, 2);
            y[(size_t)(t + 3) * rows + r] = wasm_f32x4_extract_lane(acc, 3);
        }
    }
    for (; t < a->n_tok; t++) {
        const int16_t *at = a->q16 + (size_t)t * cols;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            v128_t acc = wasm_f32x4_splat(0);
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                v128_t w[4];
                if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
                float scale = ox_legacy_d(blk) * a->dT[(size_t)b * tp + t];
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(dot_block(w, at + b * OX_QK)),
                                                         wasm_f32x4_splat(scale)));
            }
            y[(size_t)t * rows + r] = hsumf(acc);
        }
    }
}

/* ---------------------------------------------------------------- K-quants */

/* the 16 quants at k->q[pos..pos+15] (one sub-block's), times that sub-block's scale */
static inline void store_scaled(ox_kblock *k, int pos, v128_t v) {
    v128_t sc = wasm_i16x8_splat((int16_t)k->sc[pos / 16]);
    wasm_v128_store(k->q + pos, wasm_i16x8_mul(wasm_i16x8_extend_low_i8x16(v), sc));
    wasm_v128_store(k->q + pos + 8, wasm_i16x8_mul(wasm_i16x8_extend_high_i8x16(v), sc));
}

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

/* Q6_K: per half of 128, quarter 0..3 = ql[l] low, ql[l+32] low, ql[l] high, ql[l+32]
 * high, with 2 high bits from qh[l] at shift 2*quarter; minus 32. */
static inline void unpack_q6_k_quants(const ox_block_q6_K *b, ox_kblock *k) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), m2 = wasm_i8x16_splat(3), off = wasm_i8x16_splat(32);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            v128_t ql0 = wasm_v128_load(b->ql + 64 * h + l), ql1 = wasm_v128_load(b->ql + 64 * h + 32 + l);
            v128_t qh = wasm_v128_load(b->qh + 32 * h + l);
            v128_t q[4] = {wasm_v128_and(ql0, m4), wasm_v128_and(ql1, m4), wasm_u8x16_shr(ql0, 4), wasm_u8x16_shr(ql1, 4)};
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
    int32_t isum = wasm_i32x4_extract_lane(acc, 0) + wasm_i32x4_extract_lane(acc, 1) +
                   wasm_i32x4_extract_lane(acc, 2) + wasm_i32x4_extract_lane(acc, 3);
    float v = k->d * (float)isum;
    if (has_min) {
        v128_t bs0 = wasm_v128_load(ab->bsums), bs1 = wasm_v128_load(ab->bsums + 8);
        v128_t m = wasm_i32x4_add(
            wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(bs0), wasm_v128_load(k->mn)),
                           wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(bs0), wasm_v128_load(k->mn + 4))),
            wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(bs1), wasm_v128_load(k->mn + 8)),
                           wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(bs1), wasm_v128_load(k->mn + 12))));
        int32_t msum = wasm_i32x4_extract_lane(m, 0) + wasm_i32x4_extract_lane(m, 1) +
                       wasm_i32x4_extract_lane(m, 2) + wasm_i32x4_extract_lane(m, 3);
        return ab->d * v - ab->d * (k->dmin * (float)msum);
    }
    return ab->d * v;
}

#include "kernels/kernels_tile.h"
#endif
