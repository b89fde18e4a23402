/* affine_simd128.c — see affine_tiles.h. Per block: the weights' 32 unsigned values (Q8_A
 * bytes, or Q4_1 nibbles: low = values 0..15, high = 16..31) widen to int16 and meet the Q8_1
 * quants in i32x4.dot_i16x8 (|q * a| <= 255 * 128: the pairwise sums fit int32); the four
 * lanes are scaled by d_w * d_a in float and kept apart until the row ends. The min term: Q8_A
 * takes m_w * d_a * (exact sum of the activation quants), Q4_1 m_w * s_a (ggml's fp16 s), as
 * quant.c's reference dots do. */
#ifdef __wasm_simd128__
#include "kernels/affine_tiles.h"

#include <wasm_simd128.h>

static inline float hsum(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 2)) +
           (wasm_f32x4_extract_lane(v, 1) + wasm_f32x4_extract_lane(v, 3));
}

/* sum of w[k] * a[k] over 16 lanes: w unsigned bytes, a signed bytes */
static inline v128_t dot16(v128_t w, v128_t a) {
    return wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(w), wasm_i16x8_extend_low_i8x16(a)),
                          wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(w), wasm_i16x8_extend_high_i8x16(a)));
}

static void tile_q8_a(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    const int nb = W->cols / OX_QK;
    for (int r = r0; r < r1; r++) {
        const ox_block_q8_a *w = (const void *)((const uint8_t *)W->data + (size_t)r * W->row_bytes);
        for (int t = 0; t < a->n_tok; t++) {
            const ox_block_q8_1 *x = (const void *)(a->q + (size_t)t * a->q_stride);
            v128_t acc = wasm_f32x4_splat(0);
            for (int b = 0; b < nb; b++) {
                v128_t a0 = wasm_v128_load(x[b].qs), a1 = wasm_v128_load(x[b].qs + 16);
                v128_t isum = wasm_i32x4_add(dot16(wasm_v128_load(w[b].qs), a0), dot16(wasm_v128_load(w[b].qs + 16), a1));
                v128_t asum = wasm_i32x4_extadd_pairwise_i16x8(
                    wasm_i16x8_add(wasm_i16x8_extadd_pairwise_i8x16(a0), wasm_i16x8_extadd_pairwise_i8x16(a1)));
                float da = ox_f16_fast(x[b].d);
                v128_t v = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(ox_f16_fast(w[b].d))),
                                          wasm_f32x4_mul(wasm_f32x4_convert_i32x4(asum), wasm_f32x4_splat(ox_f16_fast(w[b].m))));
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(v, wasm_f32x4_splat(da)));
            }
            y[(size_t)t * W->rows + r] = hsum(acc);
        }
    }
}

static void tile_q4_1(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    const int nb = W->cols / OX_QK;
    const v128_t lo_mask = wasm_i8x16_splat(0x0F);
    for (int r = r0; r < r1; r++) {
        const ox_block_q4_1 *w = (const void *)((const uint8_t *)W->data + (size_t)r * W->row_bytes);
        for (int t = 0; t < a->n_tok; t++) {
            const ox_block_q8_1 *x = (const void *)(a->q + (size_t)t * a->q_stride);
            v128_t acc = wasm_f32x4_splat(0);
            float mins = 0;
            for (int b = 0; b < nb; b++) {
                v128_t q = wasm_v128_load(w[b].qs);
                v128_t isum = wasm_i32x4_add(dot16(wasm_v128_and(q, lo_mask), wasm_v128_load(x[b].qs)),
                                             dot16(wasm_u8x16_shr(q, 4), wasm_v128_load(x[b].qs + 16)));
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum),
                                                         wasm_f32x4_splat(ox_f16_fast(w[b].d) * ox_f16_fast(x[b].d))));
                mins += ox_f16_fast(w[b].m) * ox_f16_fast(x[b].s);
            }
            y[(size_t)t * W->rows + r] = hsum(acc) + mins;
        }
    }
}

ox_tile_fn ox_affine_simd_tile(ox_type t) {
    switch (t) {
    case OX_Q8_A: return tile_q8_a;
    case OX_Q4_1: return tile_q4_1;
    default: return NULL;
    }
}
#endif
