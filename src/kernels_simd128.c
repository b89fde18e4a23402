/* kernels_simd128.c — wasm SIMD128 matmul tiles for Q8_0 and Q4_0 weights.
 *
 * A weight block is widened once to 4 x i16x8 (nibbles unpacked, -8 applied) and dotted
 * with the int16 copy of the Q8_0 activations (ox_act.q16) by i32x4.dot_i16x8: each
 * block's integer sum is exact, then scaled by d_w * d_a in f32 like ggml. Prefill takes
 * 4 tokens per pass over a weight row (the widening is shared, and the 4 per-token sums
 * are reduced into one vector whose lanes are the tokens, scaled by one vector multiply);
 * decode is one row x one token. */
#ifdef __wasm_simd128__
#include "kernels_impl.h"

#include <string.h>
#include <wasm_simd128.h>

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
                uint16_t dh;
                memcpy(&dh, blk, 2);
                v128_t scale = wasm_f32x4_mul(wasm_v128_load(a->dT + (size_t)b * tp + t), wasm_f32x4_splat(ox_f16_fast(dh)));
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
                uint16_t dh;
                memcpy(&dh, blk, 2);
                float scale = ox_f16_fast(dh) * a->dT[(size_t)b * tp + t];
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(dot_block(w, at + b * OX_QK)),
                                                         wasm_f32x4_splat(scale)));
            }
            y[(size_t)t * rows + r] = hsumf(acc);
        }
    }
}

static void tile_q8_0(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { tile_legacy(W, a, r0, r1, y, 0); }
static void tile_q4_0(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { tile_legacy(W, a, r0, r1, y, 1); }

ox_tile_fn ox_simd_tile(ox_type t) {
    switch (t) {
    case OX_Q8_0: return tile_q8_0;
    case OX_Q4_0: return tile_q4_0;
    default: return NULL;
    }
}
#endif
