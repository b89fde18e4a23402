/* iq_simd128.c — wasm SIMD128 matmul tiles for the i-quants, TQ2_0 and MXFP4.
 *
 * 256-element formats (against Q8_K): a super-block is unpacked once per row into 256 int16
 * values already multiplied by their sub-block's integer scale, plus one float factor, so
 * the block's dot with a token is factor * a.d * (exact integer sum), the sum taken by
 * i32x4.dot_i16x8 against the int16 copy of the Q8_K quants (ox_act.q16); the unpacked block
 * is reused for every token. Grid lookups are scalar loads (two 8-lane or four 4-lane grid
 * words per vector); a sign byte becomes a lane mask through a 256-entry table and is
 * applied as (v ^ m) - m. IQ1_S/IQ1_M fold their +-1/8 shift into the integers:
 * ls * (8 g + delta) with factor d / 8. Bounds: |value * scale| <= 43 * 31 (IQ2), 62 * 31
 * (IQ3_XXS), 127 * 32 (IQ4_XS) fit int16, and 256 of them times 127 fit int32.
 *
 * IQ4_NL and MXFP4 (32-element blocks against Q8_0): nibbles through i8x16.swizzle into
 * their 16-entry value tables, then like the Q4_0 tile: d_w * d_a * integer sum per block. */
#ifdef __wasm_simd128__
#include "kernels/iq_tiles.h"
#include "kernels/iq.h"

#include <wasm_simd128.h>

/* 16 int8 lanes -> q[0..15] as int16, times the sub-block scale ls */
static inline void put16(int16_t *q, v128_t v, int ls) {
    v128_t s = wasm_i16x8_splat((int16_t)ls);
    wasm_v128_store(q, wasm_i16x8_mul(wasm_i16x8_extend_low_i8x16(v), s));
    wasm_v128_store(q + 8, wasm_i16x8_mul(wasm_i16x8_extend_high_i8x16(v), s));
}

/* expand8[b]: byte j is 0xff where bit j of b is set (a sign byte as a lane mask) */
#define EXPAND8(b)                                                                                                     \
    ((uint64_t)((b)&1) * 0xff | (uint64_t)((b) >> 1 & 1) * 0xff00 | (uint64_t)((b) >> 2 & 1) * 0xff0000 |              \
     (uint64_t)((b) >> 3 & 1) * 0xff000000 | (uint64_t)((b) >> 4 & 1) * 0xff00000000 |                                 \
     (uint64_t)((b) >> 5 & 1) * 0xff0000000000 | (uint64_t)((b) >> 6 & 1) * 0xff000000000000 |                         \
     (uint64_t)((b) >> 7 & 1) * 0xff00000000000000)
#define E4(b)  EXPAND8(b), EXPAND8((b) + 1), EXPAND8((b) + 2), EXPAND8((b) + 3)
#define E16(b) E4(b), E4((b) + 4), E4((b) + 8), E4((b) + 12)
#define E64(b) E16(b), E16((b) + 16), E16((b) + 32), E16((b) + 48)
static const uint64_t expand8[256] = {E64(0), E64(64), E64(128), E64(192)};

/* magnitudes m negated where the sign bits say: lanes 0..7 take bits 0..7 of s0, lanes
 * 8..15 those of s1 */
static inline v128_t signed16(v128_t m, unsigned s0, unsigned s1) {
    v128_t neg = wasm_u64x2_make(expand8[s0], expand8[s1]);
    return wasm_i8x16_sub(wasm_v128_xor(m, neg), neg);
}

static inline uint32_t ld32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---------------------------------------------------------------- unpackers */

static float unpack_iq2_xxs(const void *blk, int16_t *q) {
    const ox_block_iq2_xxs *b = blk;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t idx = ld32(b->qs + 4 * ib), sg = ld32(b->qs + 4 * ib + 2);
        int ls = 2 * (sg >> 28) + 1;
        for (int l = 0; l < 4; l += 2) {
            v128_t m = wasm_u64x2_make(ox_iq2xxs_grid[idx >> 8 * l & 255], ox_iq2xxs_grid[idx >> 8 * (l + 1) & 255]);
            put16(q + 32 * ib + 8 * l,
                  signed16(m, ox_iq_signs(sg >> 7 * l & 127), ox_iq_signs(sg >> 7 * (l + 1) & 127)), ls);
        }
    }
    return ox_f16_fast(b->d) * 0.125f;
}

static float unpack_iq2_xs(const void *blk, int16_t *q) {
    const ox_block_iq2_xs *b = blk;
    for (int ib = 0; ib < 8; ib++)
        for (int h = 0; h < 2; h++) {
            unsigned q0 = b->qs[4 * ib + 2 * h], q1 = b->qs[4 * ib + 2 * h + 1];
            v128_t m = wasm_u64x2_make(ox_iq2xs_grid[q0 & 511], ox_iq2xs_grid[q1 & 511]);
            put16(q + 32 * ib + 16 * h, signed16(m, ox_iq_signs(q0 >> 9), ox_iq_signs(q1 >> 9)),
                  2 * (b->scales[ib] >> 4 * h & 15) + 1);
        }
    return ox_f16_fast(b->d) * 0.125f;
}

static float unpack_iq2_s(const void *blk, int16_t *q) {
    const ox_block_iq2_s *b = blk;
    const uint8_t *signs = b->qs + OX_QK_K / 8;
    for (int ib = 0; ib < 8; ib++)
        for (int h = 0; h < 2; h++) {
            int l = 2 * h;
            unsigned i0 = b->qs[4 * ib + l] | ((b->qh[ib] << (8 - 2 * l)) & 0x300);
            unsigned i1 = b->qs[4 * ib + l + 1] | ((b->qh[ib] << (6 - 2 * l)) & 0x300);
            v128_t m = wasm_u64x2_make(ox_iq2s_grid[i0], ox_iq2s_grid[i1]);
            put16(q + 32 * ib + 16 * h, signed16(m, signs[4 * ib + l], signs[4 * ib + l + 1]),
                  2 * (b->scales[ib] >> 4 * h & 15) + 1);
        }
    return ox_f16_fast(b->d) * 0.125f;
}

static float unpack_iq3_xxs(const void *blk, int16_t *q) {
    const ox_block_iq3_xxs *b = blk;
    const uint8_t *gas = b->qs + OX_QK_K / 4;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = b->qs + 8 * ib;
        uint32_t sg = ld32(gas + 4 * ib);
        int ls = 2 * (sg >> 28) + 1;
        for (int l = 0; l < 4; l += 2) {
            v128_t m = wasm_u32x4_make(ox_iq3xxs_grid[qs[2 * l]], ox_iq3xxs_grid[qs[2 * l + 1]],
                                       ox_iq3xxs_grid[qs[2 * l + 2]], ox_iq3xxs_grid[qs[2 * l + 3]]);
            put16(q + 32 * ib + 8 * l,
                  signed16(m, ox_iq_signs(sg >> 7 * l & 127), ox_iq_signs(sg >> 7 * (l + 1) & 127)), ls);
        }
    }
    return ox_f16_fast(b->d) * 0.25f;
}

static float unpack_iq3_s(const void *blk, int16_t *q) {
    const ox_block_iq3_s *b = blk;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = b->qs + 8 * ib;
        unsigned h = b->qh[ib];
        int ls = 2 * (b->scales[ib / 2] >> 4 * (ib % 2) & 15) + 1;
        for (int l = 0; l < 4; l += 2) {
            int g = 2 * l; /* four grid words g..g+3, ninth index bits g..g+3 of qh */
            v128_t m = wasm_u32x4_make(
                ox_iq3s_grid[qs[g] | (h >> g & 1) << 8], ox_iq3s_grid[qs[g + 1] | (h >> (g + 1) & 1) << 8],
                ox_iq3s_grid[qs[g + 2] | (h >> (g + 2) & 1) << 8], ox_iq3s_grid[qs[g + 3] | (h >> (g + 3) & 1) << 8]);
            put16(q + 32 * ib + 8 * l, signed16(m, b->signs[4 * ib + l], b->signs[4 * ib + l + 1]), ls);
        }
    }
    return ox_f16_fast(b->d);
}

/* 8 g + delta for two grid words (lanes 0..7 with delta d0, 8..15 with d1) */
static inline v128_t iq1_lanes(uint64_t g0, uint64_t g1, int d0, int d1) {
    v128_t m = wasm_u64x2_make(g0, g1);
    v128_t delta = wasm_u64x2_make((uint8_t)d0 * 0x0101010101010101ull, (uint8_t)d1 * 0x0101010101010101ull);
    return wasm_i8x16_add(wasm_i8x16_shl(m, 3), delta);
}

static float unpack_iq1_s(const void *blk, int16_t *q) {
    const ox_block_iq1_s *b = blk;
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = b->qh[ib];
        int ls = 2 * (h >> 12 & 7) + 1, delta = h & 0x8000 ? -1 : 1;
        const uint8_t *qs = b->qs + 4 * ib;
        for (int l = 0; l < 4; l += 2)
            put16(q + 32 * ib + 8 * l,
                  iq1_lanes(ox_iq1s_grid[qs[l] | (h >> 3 * l & 7) << 8],
                            ox_iq1s_grid[qs[l + 1] | (h >> 3 * (l + 1) & 7) << 8], delta, delta),
                  ls);
    }
    return ox_f16_fast(b->d) * 0.125f;
}

static float unpack_iq1_m(const void *blk, int16_t *q) {
    const ox_block_iq1_m *b = blk;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = b->qs + 4 * ib, *qh = b->qh + 2 * ib;
        unsigned sc = b->scales[2 * (ib / 2)] | (unsigned)b->scales[2 * (ib / 2) + 1] << 8;
        for (int h = 0; h < 2; h++) {
            int ls = 2 * (sc >> (6 * (ib % 2) + 3 * h) & 7) + 1;
            put16(q + 32 * ib + 16 * h,
                  iq1_lanes(ox_iq1s_grid[qs[2 * h] | (qh[h] & 7) << 8],
                            ox_iq1s_grid[qs[2 * h + 1] | (qh[h] >> 4 & 7) << 8], qh[h] & 0x08 ? -1 : 1,
                            qh[h] & 0x80 ? -1 : 1),
                  ls);
        }
    }
    return ox_f16_fast(ox_iq1_m_d(b)) * 0.125f;
}

static float unpack_iq4_xs(const void *blk, int16_t *q) {
    const ox_block_iq4_xs *b = blk;
    const v128_t lut = wasm_v128_load(ox_kvalues_iq4nl), m4 = wasm_i8x16_splat(0x0F);
    for (int ib = 0; ib < 8; ib++) {
        int ls = ((b->scales_l[ib / 2] >> 4 * (ib % 2) & 15) | (b->scales_h >> 2 * ib & 3) << 4) - 32;
        v128_t v = wasm_v128_load(b->qs + 16 * ib);
        put16(q + 32 * ib, wasm_i8x16_swizzle(lut, wasm_v128_and(v, m4)), ls);
        put16(q + 32 * ib + 16, wasm_i8x16_swizzle(lut, wasm_u8x16_shr(v, 4)), ls);
    }
    return ox_f16_fast(b->d);
}

/* element 128 h + 32 l + m = bits 2l of qs[32 h + m], minus 1 */
static float unpack_tq2_0(const void *blk, int16_t *q) {
    const ox_block_tq2_0 *b = blk;
    const v128_t m2 = wasm_i8x16_splat(3), one = wasm_i8x16_splat(1);
    for (int h = 0; h < 2; h++)
        for (int half = 0; half < 2; half++) {
            v128_t v = wasm_v128_load(b->qs + 32 * h + 16 * half);
            for (int l = 0; l < 4; l++)
                put16(q + 128 * h + 32 * l + 16 * half,
                      wasm_i8x16_sub(wasm_v128_and(wasm_u8x16_shr(v, 2 * l), m2), one), 1);
        }
    return ox_f16_fast(b->d);
}

/* ---------------------------------------------------------------- tiles */

static inline int32_t dot256(const int16_t *q, const int16_t *a) {
    v128_t acc0 = wasm_i32x4_splat(0), acc1 = wasm_i32x4_splat(0);
    for (int i = 0; i < 256; i += 16) {
        acc0 = wasm_i32x4_add(acc0, wasm_i32x4_dot_i16x8(wasm_v128_load(q + i), wasm_v128_load(a + i)));
        acc1 = wasm_i32x4_add(acc1, wasm_i32x4_dot_i16x8(wasm_v128_load(q + i + 8), wasm_v128_load(a + i + 8)));
    }
    acc0 = wasm_i32x4_add(acc0, acc1);
    return wasm_i32x4_extract_lane(acc0, 0) + wasm_i32x4_extract_lane(acc0, 1) + wasm_i32x4_extract_lane(acc0, 2) +
           wasm_i32x4_extract_lane(acc0, 3);
}

typedef float (*unpack_fn)(const void *blk, int16_t *q);

/* rows r0..r1 against every token: each super-block unpacked once, dotted with each token */
static inline void tile_q8_k(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, unpack_fn unpack) {
    const int nb = W->cols / OX_QK_K, cols = W->cols, rows = W->rows;
    const size_t bb = ox_type_block_bytes(W->type);
    int16_t q[OX_QK_K] __attribute__((aligned(16)));
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        for (int t = 0; t < a->n_tok; t++) y[(size_t)t * rows + r] = 0;
        for (int b = 0; b < nb; b++) {
            float d = unpack(row + (size_t)b * bb, q);
            for (int t = 0; t < a->n_tok; t++) {
                const ox_block_q8_K *ab = (const ox_block_q8_K *)(a->q + (size_t)t * a->q_stride) + b;
                y[(size_t)t * rows + r] +=
                    ab->d * (d * (float)dot256(q, a->q16 + (size_t)t * cols + (size_t)b * OX_QK_K));
            }
        }
    }
}

#define Q8_K_TILE(name)                                                                                                \
    static void tile_##name(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {                           \
        tile_q8_k(W, a, r0, r1, y, unpack_##name);                                                                     \
    }
Q8_K_TILE(iq2_xxs)
Q8_K_TILE(iq2_xs)
Q8_K_TILE(iq2_s)
Q8_K_TILE(iq3_xxs)
Q8_K_TILE(iq3_s)
Q8_K_TILE(iq1_s)
Q8_K_TILE(iq1_m)
Q8_K_TILE(iq4_xs)
Q8_K_TILE(tq2_0)

/* IQ4_NL (mx = 0: fp16 d, then 16 bytes) and MXFP4 (mx = 1: E8M0 e, then 16 bytes) */
static inline void tile_lut4(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, int mx) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad, off = mx ? 1 : 2;
    const size_t bb = mx ? sizeof(ox_block_mxfp4) : sizeof(ox_block_iq4_nl);
    const v128_t lut = wasm_v128_load(mx ? ox_kvalues_mxfp4 : ox_kvalues_iq4nl), m4 = wasm_i8x16_splat(0x0F);
    for (int t = 0; t < a->n_tok; t++) {
        const int16_t *at = a->q16 + (size_t)t * cols;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            v128_t acc = wasm_f32x4_splat(0);
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = row + (size_t)b * bb;
                const int16_t *ab = at + (size_t)b * OX_QK;
                v128_t v = wasm_v128_load(blk + off);
                v128_t lo = wasm_i8x16_swizzle(lut, wasm_v128_and(v, m4)),
                       hi = wasm_i8x16_swizzle(lut, wasm_u8x16_shr(v, 4));
                v128_t s = wasm_i32x4_add(
                    wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(lo), wasm_v128_load(ab)),
                                   wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(lo), wasm_v128_load(ab + 8))),
                    wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(hi), wasm_v128_load(ab + 16)),
                                   wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(hi), wasm_v128_load(ab + 24))));
                float dw = mx ? ox_e8m0_half(blk[0]) : ox_legacy_d(blk);
                acc = wasm_f32x4_add(
                    acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), wasm_f32x4_splat(dw * a->dT[(size_t)b * tp + t])));
            }
            y[(size_t)t * rows + r] = (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 2)) +
                                      (wasm_f32x4_extract_lane(acc, 1) + wasm_f32x4_extract_lane(acc, 3));
        }
    }
}

static void tile_iq4_nl(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    tile_lut4(W, a, r0, r1, y, 0);
}
static void tile_mxfp4(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) { tile_lut4(W, a, r0, r1, y, 1); }

ox_tile_fn ox_iq_simd_tile(ox_type t) {
    switch (t) {
    case OX_IQ2_XXS: return tile_iq2_xxs;
    case OX_IQ2_XS: return tile_iq2_xs;
    case OX_IQ2_S: return tile_iq2_s;
    case OX_IQ3_XXS: return tile_iq3_xxs;
    case OX_IQ3_S: return tile_iq3_s;
    case OX_IQ1_S: return tile_iq1_s;
    case OX_IQ1_M: return tile_iq1_m;
    case OX_IQ4_XS: return tile_iq4_xs;
    case OX_TQ2_0: return tile_tq2_0;
    case OX_IQ4_NL: return tile_iq4_nl;
    case OX_MXFP4: return tile_mxfp4;
    case OX_BF16: return ox_tile_bf16;
    case OX_F16: return ox_tile_f16;
    default: return NULL; /* TQ1_0: the generic path */
    }
}
#endif
