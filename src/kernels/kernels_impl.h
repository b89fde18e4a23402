/* kernels_impl.h — private interface between the matmul driver (kernels.c) and the
 * per-architecture integer-dot tiles (kernels_simd128.c for wasm SIMD128, kernels_x86.c
 * for AVX2). Not part of the public API. */
#ifndef OX_KERNELS_IMPL_H
#define OX_KERNELS_IMPL_H

#include "kernels/kernels.h"

#include <string.h>

#if defined(__wasm_simd128__) || defined(__AVX2__)
#define OX_HAVE_SIMD_TILES 1
#endif

/* Activations of one matmul call, prepared once for one vec-dot type. */
typedef struct ox_act {
    ox_type type; /* OX_F32, OX_Q8_0, OX_Q8_1 or OX_Q8_K */
    int n_tok, cols;
    const float *x;   /* n_tok x cols f32 input (F32 dots) */
    const uint8_t *q; /* n_tok rows of standard vec-dot blocks, q_stride bytes each */
    size_t q_stride;
    const float *deq; /* dequantize(q): n_tok x cols, only when some weight takes the
                              generic path (NULL otherwise) */
    /* Q8_0 and Q8_K, for the SIMD tiles: int16 copies of the quants (n_tok x cols). */
    const int16_t *q16;
    /* Q8_0 only: the block scales token-minor, dT[b * tok_pad + t] (tok_pad = n_tok
     * rounded up to 4, padding 0, so one vector load gives a block's scale for 4 tokens;
     * 1 for a single token, so 4 blocks' scales are one load). */
    const float *dT;
    const int32_t *sT; /* Q8_0 only: each block's sum of quants, laid out as dT (relaxed Q4_0) */
    int tok_pad;
} ox_act;

/* A K-quant super-block unpacked for the integer dot: 256 int16 quants already multiplied
 * by their sub-block's integer scale (|q * sc| <= 31 * 63 (Q5_K), 32 * 128 (Q6_K): fits),
 * per-16 mins; value k = d * q[k] - dmin * mn[k/16]. The dot with a Q8_K block is
 * a->d * (d * sum(q . a) - dmin * sum(mn * bsums)): the same integers as quant.c's
 * sum of sc * (q . a) per sub-block. sc: the scales, set before the quants are stored. */
typedef struct {
    int16_t q[256];
    int32_t sc[16], mn[16];
    float d, dmin;
} ox_kblock;

/* Scalar parts of the unpacking shared by the architectures (the quants are unpacked with
 * SIMD in each kernels_*.c): Q4_K/Q5_K's 6-bit scale/min pairs. */
static inline void ox_kblock_scales_k4(const uint8_t *s, ox_kblock *k) {
    for (int j = 0; j < 8; j++) {
        int sc, m;
        if (j < 4) {
            sc = s[j] & 63;
            m = s[j + 4] & 63;
        } else {
            sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
            m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
        k->sc[2 * j] = k->sc[2 * j + 1] = sc;
        k->mn[2 * j] = k->mn[2 * j + 1] = m;
    }
}

/* Q8_0 activations of one row (n a multiple of 32): the same blocks as
 * ox_quantize_row(OX_Q8_0) (vectorized), plus the int16 copy of the quants and the block
 * scales as f32, d_stride floats apart. */
void ox_quantize_q8_0_act(const float *x, int n, ox_block_q8_0 *q, int16_t *q16, float *d, int32_t *s, size_t d_stride);

/* Computes y[t * W->rows + r] for every token t and rows r in [r0, r1). */
typedef void (*ox_tile_fn)(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y);

#ifdef OX_HAVE_SIMD_TILES
/* The architecture's tile for weight type t, or NULL (then kernels.c's generic path). */
ox_tile_fn ox_simd_tile(ox_type t);
#endif

/* ox_f16_to_f32 (types.c) inlined for the hot loops: same algorithm, exact, inf/nan
 * kept; test_kernels compares the two on all 65536 halves. */
static inline float ox_f16_fast(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)(h & 0x7fff) << 13};
    v.f *= 0x1p112f; /* rebias the exponent; also normalizes subnormals exactly */
    if ((h & 0x7c00) == 0x7c00) v.u = 0x7f800000 | (uint32_t)(h & 0x3ff) << 13;
    v.u |= (uint32_t)(h & 0x8000) << 16;
    return v.f;
}

/* d of a Q8_0 or Q4_0 block: both start with it, an f16 (memcpy: rows are read as bytes,
 * with no alignment promise). */
static inline float ox_legacy_d(const uint8_t *blk) {
    uint16_t dh;
    memcpy(&dh, blk, 2);
    return ox_f16_fast(dh);
}

#endif
