/* affine_simd128.c — see affine_tiles.h. Per block: the weights' 32 unsigned values (Q8_A
 * bytes, or Q4_1 nibbles: low = values 0..15, high = 16..31) widen to int16 and meet the Q8_1
 * quants in i32x4.dot_i16x8 (|q * a| <= 255 * 128: the pairwise sums fit int32); the four
 * lanes are scaled by d_w * d_a in float and kept apart until the row ends. Four rows go
 * together, so each activation block is widened once for them. The min term: Q8_A
 * takes m_w * d_a * (exact sum of the activation quants), Q4_1 m_w * s_a (ggml's fp16 s), as
 * quant.c's reference dots do. */
#ifdef __wasm_simd128__
#include "kernels/affine_tiles.h"

#include <wasm_simd128.h>

static inline float hsum(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 2)) +
           (wasm_f32x4_extract_lane(v, 1) + wasm_f32x4_extract_lane(v, 3));
}

/* A Q8_1 block widened once for up to 4 rows: its quants as int16 (a[0..1]: quants 0..15,
 * a[2..3]: 16..31), d, and the exact sum of the quants per lane group. */
typedef struct {
    v128_t a[4], asum;
    float d;
} act_blk; /* asum: as f32 */

static inline act_blk widen(const ox_block_q8_1 *x) {
    act_blk k;
    v128_t a0 = wasm_v128_load(x->qs), a1 = wasm_v128_load(x->qs + 16);
    k.a[0] = wasm_i16x8_extend_low_i8x16(a0), k.a[1] = wasm_i16x8_extend_high_i8x16(a0);
    k.a[2] = wasm_i16x8_extend_low_i8x16(a1), k.a[3] = wasm_i16x8_extend_high_i8x16(a1);
    k.asum = wasm_f32x4_convert_i32x4(wasm_i32x4_extadd_pairwise_i16x8(
        wasm_i16x8_add(wasm_i16x8_extadd_pairwise_i8x16(a0), wasm_i16x8_extadd_pairwise_i8x16(a1))));
    k.d = ox_f16_fast(x->d);
    return k;
}

/* sum of w[k] * a[k] over the block: w0 the unsigned values 0..15, w1 16..31 */
static inline v128_t dot32(v128_t w0, v128_t w1, const act_blk *k) {
    v128_t s0 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(w0), k->a[0]),
                               wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(w0), k->a[1]));
    v128_t s1 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(w1), k->a[2]),
                               wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(w1), k->a[3]));
    return wasm_i32x4_add(s0, s1);
}

/* Up to 4 rows at a time against one token, so each activation block is widened once. q4: the
 * Q4_1 layout (min term m * s), else Q8_A (min term m * d_a * exact sum). */
static inline void rows_affine(const ox_matrix *W, const ox_block_q8_1 *x, int r, int nr, int q4, float *y) {
    const int nb = W->cols / OX_QK;
    const v128_t lo_mask = wasm_i8x16_splat(0x0F);
    const uint8_t *row[4];
    v128_t acc[4];
    float mins[4] = {0, 0, 0, 0};
    for (int i = 0; i < nr; i++)
        row[i] = (const uint8_t *)W->data + (size_t)(r + i) * W->row_bytes, acc[i] = wasm_f32x4_splat(0);
    for (int b = 0; b < nb; b++) {
        act_blk k = widen(&x[b]);
        for (int i = 0; i < nr; i++) {
            if (q4) {
                const ox_block_q4_1 *w = (const ox_block_q4_1 *)row[i] + b;
                v128_t q = wasm_v128_load(w->qs);
                v128_t isum = dot32(wasm_v128_and(q, lo_mask), wasm_u8x16_shr(q, 4), &k);
                acc[i] = wasm_f32x4_add(
                    acc[i], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(ox_f16_fast(w->d) * k.d)));
                mins[i] += ox_f16_fast(w->m) * ox_f16_fast(x[b].s);
            } else {
                const ox_block_q8_a *w = (const ox_block_q8_a *)row[i] + b;
                v128_t isum = dot32(wasm_v128_load(w->qs), wasm_v128_load(w->qs + 16), &k);
                v128_t v = wasm_f32x4_add(
                    wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(ox_f16_fast(w->d) * k.d)),
                    wasm_f32x4_mul(k.asum, wasm_f32x4_splat(ox_f16_fast(w->m) * k.d)));
                acc[i] = wasm_f32x4_add(acc[i], v);
            }
        }
    }
    for (int i = 0; i < nr; i++) y[r + i] = hsum(acc[i]) + mins[i];
}

static inline void tile_affine(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, int q4) {
    for (int t = 0; t < a->n_tok; t++) {
        const ox_block_q8_1 *x = (const void *)(a->q + (size_t)t * a->q_stride);
        for (int r = r0; r < r1; r += 4) rows_affine(W, x, r, r1 - r < 4 ? r1 - r : 4, q4, y + (size_t)t * W->rows);
    }
}

static void tile_q8_a(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_affine(W, a, r0, r1, y, 0);
}
static void tile_q4_1(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_affine(W, a, r0, r1, y, 1);
}

ox_tile_fn ox_affine_simd_tile(ox_type t) {
    switch (t) {
    case OX_Q8_A: return tile_q8_a;
    case OX_Q4_1: return tile_q4_1;
    default: return NULL;
    }
}
#endif
