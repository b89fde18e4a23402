/* kernels_x86.c — AVX2 matmul tiles for Q8_0, Q4_0, Q4_K, Q5_K, Q6_K (native builds; the
 * same scheme as kernels_simd128.c: a block widened once to int16, madd with the int16
 * activations, exact integer block sums scaled by d_w * d_a; 4 tokens per pass for the
 * legacy formats, K-quant super-blocks unpacked once per row for all tokens). */
#if defined(__AVX2__) && !defined(__wasm_simd128__)
#include "kernels/kernels_impl.h"

#include <immintrin.h>

static inline void widen_q8_0(const uint8_t *blk, __m256i *w) {
    w[0] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + 2)));
    w[1] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + 18)));
}

static inline void widen_q4_0(const uint8_t *blk, __m256i *w) {
    __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(0x0F), e = _mm_set1_epi8(8);
    w[0] = _mm256_cvtepi8_epi16(_mm_sub_epi8(_mm_and_si128(q, m), e));
    w[1] = _mm256_cvtepi8_epi16(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), e));
}

/* i32x8 partial sums of one block's 32 products */
static inline __m256i dot_block(const __m256i *w, const int16_t *a) {
    __m256i s0 = _mm256_madd_epi16(w[0], _mm256_loadu_si256((const __m256i *)a));
    __m256i s1 = _mm256_madd_epi16(w[1], _mm256_loadu_si256((const __m256i *)(a + 16)));
    return _mm256_add_epi32(s0, s1);
}

/* [sum a, sum b, sum c, sum d] */
static inline __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
    __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

static inline float hsumf(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

static inline void tile_legacy(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y, int q4) {
    const int nb = W->cols / OX_QK, cols = W->cols, rows = W->rows, tp = a->tok_pad;
    const size_t bb = q4 ? sizeof(ox_block_q4_0) : sizeof(ox_block_q8_0);
    int t = 0;
    for (; t + 4 <= a->n_tok; t += 4) {
        const int16_t *a0 = a->q16 + (size_t)t * cols;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            __m128 acc = _mm_setzero_ps();
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                __m256i w[2];
                if (q4) widen_q4_0(blk, w);
                else widen_q8_0(blk, w);
                const int16_t *ab = a0 + b * OX_QK;
                __m128i s = hsum4(dot_block(w, ab), dot_block(w, ab + cols), dot_block(w, ab + 2 * cols),
                                  dot_block(w, ab + 3 * cols));
                __m128 scale = _mm_mul_ps(_mm_loadu_ps(a->dT + (size_t)b * tp + t), _mm_set1_ps(ox_legacy_d(blk)));
                acc = _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(s), scale));
            }
            float out[4];
            _mm_storeu_ps(out, acc);
            for (int k = 0; k < 4; k++) y[(size_t)(t + k) * rows + r] = out[k];
        }
    }
    for (; t < a->n_tok; t++) {
        const int16_t *at = a->q16 + (size_t)t * cols;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
            __m256 acc = _mm256_setzero_ps();
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                __m256i w[2];
                if (q4) widen_q4_0(blk, w);
                else widen_q8_0(blk, w);
                float scale = ox_legacy_d(blk) * a->dT[(size_t)b * tp + t];
                acc = _mm256_add_ps(
                    acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dot_block(w, at + b * OX_QK)), _mm256_set1_ps(scale)));
            }
            y[(size_t)t * rows + r] = hsumf(acc);
        }
    }
}

/* ---------------------------------------------------------------- K-quants */

/* the 16 quants at k->q[pos..pos+15] (one sub-block's), times that sub-block's scale */
static inline void store_scaled(ox_kblock *k, int pos, __m128i v) {
    __m256i sc = _mm256_set1_epi16((short)k->sc[pos / 16]);
    _mm256_storeu_si256((__m256i *)(k->q + pos), _mm256_mullo_epi16(_mm256_cvtepi8_epi16(v), sc));
}

/* byte-wise (v >> n) & mask, for masks that keep only bits below 8 - n */
static inline __m128i shr_mask(__m128i v, int n, __m128i mask) { return _mm_and_si128(_mm_srli_epi16(v, n), mask); }

static inline void unpack_q45_k(const uint8_t *qs, const uint8_t *qh, ox_kblock *k) {
    const __m128i m4 = _mm_set1_epi8(0x0F), one = _mm_set1_epi8(1);
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(qs + 32 * i + 16 * h));
            __m128i lo = _mm_and_si128(v, m4), hi = shr_mask(v, 4, m4);
            if (qh) {
                __m128i b = _mm_loadu_si128((const __m128i *)(qh + 16 * h));
                lo = _mm_or_si128(lo, _mm_slli_epi16(shr_mask(b, 2 * i, one), 4));
                hi = _mm_or_si128(hi, _mm_slli_epi16(shr_mask(b, 2 * i + 1, one), 4));
            }
            store_scaled(k, 64 * i + 16 * h, lo);
            store_scaled(k, 64 * i + 32 + 16 * h, hi);
        }
}

static inline void unpack_q6_k_quants(const ox_block_q6_K *b, ox_kblock *k) {
    const __m128i m4 = _mm_set1_epi8(0x0F), m2 = _mm_set1_epi8(3), off = _mm_set1_epi8(32);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            __m128i ql0 = _mm_loadu_si128((const __m128i *)(b->ql + 64 * h + l));
            __m128i ql1 = _mm_loadu_si128((const __m128i *)(b->ql + 64 * h + 32 + l));
            __m128i qh = _mm_loadu_si128((const __m128i *)(b->qh + 32 * h + l));
            __m128i q[4] = {_mm_and_si128(ql0, m4), _mm_and_si128(ql1, m4), shr_mask(ql0, 4, m4), shr_mask(ql1, 4, m4)};
            for (int j = 0; j < 4; j++) {
                __m128i hi = _mm_slli_epi16(shr_mask(qh, 2 * j, m2), 4);
                store_scaled(k, 128 * h + 32 * j + l, _mm_sub_epi8(_mm_or_si128(q[j], hi), off));
            }
        }
}

static inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1)));
}

static inline float kblock_dot(const ox_kblock *k, const int16_t *a, const ox_block_q8_K *ab, int has_min) {
    __m256i acc = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
    for (int i = 0; i < 256; i += 32) {
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(k->q + i)),
                                                      _mm256_loadu_si256((const __m256i *)(a + i))));
        acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(k->q + i + 16)),
                                                        _mm256_loadu_si256((const __m256i *)(a + i + 16))));
    }
    acc = _mm256_add_epi32(acc, acc2);
    float v = k->d * (float)hsum_i32(acc);
    if (has_min) {
        __m256i b0 = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)ab->bsums));
        __m256i b1 = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(ab->bsums + 8)));
        __m256i m = _mm256_add_epi32(_mm256_mullo_epi32(b0, _mm256_loadu_si256((const __m256i *)k->mn)),
                                     _mm256_mullo_epi32(b1, _mm256_loadu_si256((const __m256i *)(k->mn + 8))));
        return ab->d * v - ab->d * (k->dmin * (float)hsum_i32(m));
    }
    return ab->d * v;
}

#include "kernels/kernels_tile.inc"
#endif
