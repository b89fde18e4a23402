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

/* ox_f16_fast on 4 lanes (the halves zero-extended in i32 lanes): exact, inf/nan kept */
static inline v128_t f16x4_to_f32(v128_t h) {
    v128_t mag = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
    v128_t v = wasm_f32x4_mul(mag, wasm_f32x4_splat(0x1p112f));
    v128_t infnan = wasm_i32x4_eq(wasm_v128_and(h, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7c00));
    v = wasm_v128_bitselect(wasm_v128_or(mag, wasm_i32x4_splat(0x7f800000)), v, infnan);
    return wasm_v128_or(v, wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16));
}

/* the d fields (first 2 bytes) of 4 consecutive legacy blocks, bb bytes apart */
static inline v128_t legacy_d4(const uint8_t *blk, size_t bb) {
    uint16_t d[4];
    for (int k = 0; k < 4; k++) memcpy(&d[k], blk + k * bb, 2);
    return wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(d));
}

/* one block widened and dotted at once (4 widened blocks alive together would spill) */
static inline v128_t legacy_block_dot(const uint8_t *blk, const int16_t *a, int q4) {
    v128_t w[4];
    if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
    return dot_block(w, a);
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
        const float *da = a->dT + t; /* block b's scale at da[b * tp] */
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            v128_t acc = wasm_f32x4_splat(0);
            int b = 0;
            /* 4 blocks at a time: their 4 sums in one vector, scaled by one multiply */
            for (; b + 4 <= nb; b += 4) {
                const uint8_t *blk = row + b * bb;
                const int16_t *ab = at + b * OX_QK;
                v128_t s0 = legacy_block_dot(blk, ab, q4), s1 = legacy_block_dot(blk + bb, ab + OX_QK, q4);
                v128_t s2 = legacy_block_dot(blk + 2 * bb, ab + 2 * OX_QK, q4);
                v128_t s3 = legacy_block_dot(blk + 3 * bb, ab + 3 * OX_QK, q4);
                v128_t s = hsum4(s0, s1, s2, s3);
                v128_t dw = f16x4_to_f32(legacy_d4(blk, bb));
                v128_t dav = tp == 1 ? wasm_v128_load(da + b)
                                     : wasm_f32x4_make(da[b * tp], da[(b + 1) * tp], da[(b + 2) * tp], da[(b + 3) * tp]);
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(s), wasm_f32x4_mul(dw, dav)));
            }
            for (; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                v128_t w[4];
                if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
                float scale = ox_legacy_d(blk) * da[(size_t)b * tp];
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


/* ---- one token, straight from the ggml blocks (decode): the quants are widened in
 * registers and dotted with the int16 activations per sub-block; the integer sub-block sums
 * are gathered 4 to a vector (hsum4) and multiplied by their integer scales, so the whole
 * super-block sum stays exact, as quant.c's. */

/* The products of unsigned weight bytes (0..63) with the activations, as i32x4 partial sums:
 * dot16 of 16 bytes, dot32 of 2 x 16. SIMD128 widens the bytes to int16 and takes
 * i32x4.dot_i16x8 with the int16 copy of the activations (a16); relaxed SIMD takes
 * i16x8.relaxed_dot_i8x16_i7x16_s with the int8 activations (a8) and the weights as the
 * 7-bit operand (0..127: the same result on every engine; the pair sums, <= 2 * 63 * 128,
 * and dot32's 4-product sums, <= 4 * 31 * 128, fit int16: nothing saturates). */
#ifdef __wasm_relaxed_simd__
typedef int8_t i8x16_t __attribute__((vector_size(16)));
static inline v128_t rdot(v128_t q, const int8_t *a8) {
    return (v128_t)__builtin_wasm_relaxed_dot_i8x16_i7x16_s_i16x8((i8x16_t)wasm_v128_load(a8), (i8x16_t)q);
}
static inline v128_t dot16(v128_t q, const int16_t *a16, const int8_t *a8) {
    return wasm_i32x4_extadd_pairwise_i16x8(rdot(q, a8));
}
static inline v128_t dot32(v128_t q0, v128_t q1, const int16_t *a16, const int8_t *a8) {
    return wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(rdot(q0, a8), rdot(q1, a8 + 16)));
}
#else
static inline v128_t dot16(v128_t q, const int16_t *a16, const int8_t *a8) {
    return wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(q), wasm_v128_load(a16)),
                          wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(q), wasm_v128_load(a16 + 8)));
}
static inline v128_t dot32(v128_t q0, v128_t q1, const int16_t *a16, const int8_t *a8) {
    return wasm_i32x4_add(dot16(q0, a16, a8), dot16(q1, a16 + 16, a8 + 16));
}
#endif

/* byte-wise (v >> n) & mask / (v << n) & mask with a 16-bit shift: the mask drops the bits
 * that crossed from the neighbouring byte */
static inline v128_t shr_mask(v128_t v, int n, v128_t mask) { return wasm_v128_and(wasm_u16x8_shr(v, n), mask); }
static inline v128_t shl_mask(v128_t v, int n, v128_t mask) { return wasm_v128_and(wasm_i16x8_shl(v, n), mask); }

/* bytes 4g..4g+3 of v (unsigned) as i32x4 */
static inline v128_t u8_group(v128_t v, int g) {
    v128_t h = g < 2 ? wasm_u16x8_extend_low_u8x16(v) : wasm_u16x8_extend_high_u8x16(v);
    return g % 2 ? wasm_u32x4_extend_high_u16x8(h) : wasm_u32x4_extend_low_u16x8(h);
}

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

/* Q4_K / Q5_K super-block . Q8_K block: ab->d * (d * sum sc_j (q . a)_j - dmin * sum mn_j bsum_j) */
static inline float dot_k45(const ox_f16 *d, const ox_f16 *dmin, const uint8_t *scales, const uint8_t *qs,
                            const uint8_t *qh, const int16_t *a, const ox_block_q8_K *ab) {
    const v128_t m4 = wasm_i8x16_splat(0x0F), b4 = wasm_i8x16_splat(0x10);
    v128_t sm = scales_k4(scales), s[8];
    for (int i = 0; i < 4; i++) {
        v128_t v0 = wasm_v128_load(qs + 32 * i), v1 = wasm_v128_load(qs + 32 * i + 16);
        v128_t l0 = wasm_v128_and(v0, m4), l1 = wasm_v128_and(v1, m4), h0 = shr_mask(v0, 4, m4), h1 = shr_mask(v1, 4, m4);
        if (qh) { /* fifth bit of sub-block j: bit j of qh[l], moved to bit 4 */
            v128_t q0 = wasm_v128_load(qh), q1 = wasm_v128_load(qh + 16);
            int n = 2 * i;
            if (n <= 4) l0 = wasm_v128_or(l0, shl_mask(q0, 4 - n, b4)), l1 = wasm_v128_or(l1, shl_mask(q1, 4 - n, b4));
            else l0 = wasm_v128_or(l0, shr_mask(q0, n - 4, b4)), l1 = wasm_v128_or(l1, shr_mask(q1, n - 4, b4));
            n++;
            if (n <= 4) h0 = wasm_v128_or(h0, shl_mask(q0, 4 - n, b4)), h1 = wasm_v128_or(h1, shl_mask(q1, 4 - n, b4));
            else h0 = wasm_v128_or(h0, shr_mask(q0, n - 4, b4)), h1 = wasm_v128_or(h1, shr_mask(q1, n - 4, b4));
        }
        const int16_t *ai = a + 64 * i;
        const int8_t *a8 = ab->qs + 64 * i;
        s[2 * i] = dot32(l0, l1, ai, a8);
        s[2 * i + 1] = dot32(h0, h1, ai + 32, a8 + 32);
    }
    v128_t sum = wasm_i32x4_add(wasm_i32x4_mul(hsum4(s[0], s[1], s[2], s[3]), u8_group(sm, 0)),
                                wasm_i32x4_mul(hsum4(s[4], s[5], s[6], s[7]), u8_group(sm, 1)));
    /* mins: bsums pairwise (the 16-element sums of each 32-element sub-block) . mn */
    v128_t mn16 = wasm_u16x8_extend_high_u8x16(sm);
    v128_t bs0 = wasm_v128_load(ab->bsums), bs1 = wasm_v128_load(ab->bsums + 8);
    v128_t m = wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(bs0), wasm_u32x4_extend_low_u16x8(mn16)),
                              wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(bs1), wasm_u32x4_extend_high_u16x8(mn16)));
    return ab->d * (ox_f16_fast(*d) * (float)hsum_i32(sum)) - ab->d * (ox_f16_fast(*dmin) * (float)hsum_i32(m));
}

static float kdot_q4_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) {
    const ox_block_q4_K *b = blk;
    return dot_k45(&b->d, &b->dmin, b->scales, b->qs, NULL, a, ab);
}

static float kdot_q5_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) {
    const ox_block_q5_K *b = blk;
    return dot_k45(&b->d, &b->dmin, b->scales, b->qs, b->qh, a, ab);
}

/* Q6_K: the unsigned 6-bit quants (0..63) dotted per sub-block of 16, the -32 offset applied
 * once as 32 * sum sc_j bsum_j. Step (h, l) makes sub-blocks 8h + l/16 + {0, 2, 4, 6}. */
static float kdot_q6_k(const void *blk, const int16_t *a, const ox_block_q8_K *ab) {
    const ox_block_q6_K *b = blk;
    const v128_t m4 = wasm_i8x16_splat(0x0F), m6 = wasm_i8x16_splat(0x30);
    v128_t sc = wasm_v128_load(b->scales);
    /* the scales in step order: bytes 4k..4k+3 = sub-blocks of step k */
    v128_t scs = wasm_i8x16_shuffle(sc, sc, 0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    v128_t sc16lo = wasm_i16x8_extend_low_i8x16(scs), sc16hi = wasm_i16x8_extend_high_i8x16(scs);
    v128_t sum = wasm_i32x4_splat(0);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            v128_t ql0 = wasm_v128_load(b->ql + 64 * h + l), ql1 = wasm_v128_load(b->ql + 64 * h + 32 + l);
            v128_t qh = wasm_v128_load(b->qh + 32 * h + l);
            const int16_t *ap = a + 128 * h + l;
            v128_t q0 = wasm_v128_or(wasm_v128_and(ql0, m4), shl_mask(qh, 4, m6));
            v128_t q1 = wasm_v128_or(wasm_v128_and(ql1, m4), shl_mask(qh, 2, m6));
            v128_t q2 = wasm_v128_or(shr_mask(ql0, 4, m4), wasm_v128_and(qh, m6));
            v128_t q3 = wasm_v128_or(shr_mask(ql1, 4, m4), shr_mask(qh, 2, m6));
            const int8_t *a8 = ab->qs + 128 * h + l;
            v128_t s4 = hsum4(dot16(q0, ap, a8), dot16(q1, ap + 32, a8 + 32), dot16(q2, ap + 64, a8 + 64),
                              dot16(q3, ap + 96, a8 + 96));
            int k = 2 * h + l / 16;
            v128_t sck = k < 2 ? (k ? wasm_i32x4_extend_high_i16x8(sc16lo) : wasm_i32x4_extend_low_i16x8(sc16lo))
                               : (k == 3 ? wasm_i32x4_extend_high_i16x8(sc16hi) : wasm_i32x4_extend_low_i16x8(sc16hi));
            sum = wasm_i32x4_add(sum, wasm_i32x4_mul(s4, sck));
        }
    /* the offset: 32 * sum_j sc_j * bsums_j, in natural sub-block order */
    v128_t off = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_v128_load(ab->bsums), wasm_i16x8_extend_low_i8x16(sc)),
                                wasm_i32x4_dot_i16x8(wasm_v128_load(ab->bsums + 8), wasm_i16x8_extend_high_i8x16(sc)));
    return ab->d * (ox_f16_fast(b->d) * (float)(hsum_i32(sum) - 32 * hsum_i32(off)));
}
#define OX_KDOT_DIRECT 1
/* Prefill too, where it measured faster than unpacking once per row (Q5_K: its unpacking
 * is slow; relaxed Q4_K: cheap dots per token); Q6_K keeps the unpacked int16 dots. */
#define OX_KDOT_ALL_Q5_K 1
#ifdef __wasm_relaxed_simd__
#define OX_KDOT_ALL_Q4_K 1
#endif

#include "kernels/kernels_tile.h"
#endif
