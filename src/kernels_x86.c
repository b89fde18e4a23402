/* kernels_x86.c — AVX2 matmul tiles for Q8_0 and Q4_0 weights (native builds; the same
 * scheme as kernels_simd128.c: a block widened once to 2 x i16x16, madd with the int16
 * activations, exact integer block sums scaled by d_w * d_a; 4 tokens per pass). */
#if defined(__AVX2__) && defined(__FMA__) && !defined(__wasm_simd128__)
#include "kernels_impl.h"

#include <immintrin.h>
#include <string.h>

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
                if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
                const int16_t *ab = a0 + b * OX_QK;
                __m128i s = hsum4(dot_block(w, ab), dot_block(w, ab + cols), dot_block(w, ab + 2 * cols),
                                  dot_block(w, ab + 3 * cols));
                uint16_t dh;
                memcpy(&dh, blk, 2);
                __m128 scale = _mm_mul_ps(_mm_loadu_ps(a->dT + (size_t)b * tp + t), _mm_set1_ps(ox_f16_fast(dh)));
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
                if (q4) widen_q4_0(blk, w); else widen_q8_0(blk, w);
                uint16_t dh;
                memcpy(&dh, blk, 2);
                float scale = ox_f16_fast(dh) * a->dT[(size_t)b * tp + t];
                acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dot_block(w, at + b * OX_QK)),
                                                       _mm256_set1_ps(scale)));
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
