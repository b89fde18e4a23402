/* kernels_impl.h — private interface between the matmul driver (kernels.c) and the
 * per-architecture integer-dot tiles (kernels_simd128.c for wasm SIMD128, kernels_x86.c
 * for AVX2). Not part of the public API. */
#ifndef OX_KERNELS_IMPL_H
#define OX_KERNELS_IMPL_H

#include "kernels.h"

#if defined(__wasm_simd128__) || (defined(__AVX2__) && defined(__FMA__))
#define OX_HAVE_SIMD_TILES 1
#endif

/* Activations of one matmul call, prepared once for one vec-dot type. */
typedef struct ox_act {
    ox_type type;          /* OX_F32, OX_Q8_0, OX_Q8_1 or OX_Q8_K */
    int n_tok, cols;
    const float *x;        /* n_tok x cols f32 input (F32 dots) */
    const uint8_t *q;      /* n_tok rows of standard vec-dot blocks, q_stride bytes each */
    size_t q_stride;
    const float *deq;      /* dequantize(q): n_tok x cols, only when some weight takes the
                              generic path (NULL otherwise) */
    /* Q8_0 only, for the SIMD tiles: int16 copies of the quants (n_tok x cols) and the
     * block scales token-minor, dT[b * tok_pad + t] (tok_pad = n_tok rounded up to 4,
     * padding 0), so one vector load gives a block's scale for 4 tokens. */
    const int16_t *q16;
    const float *dT;
    int tok_pad;
} ox_act;

/* Computes y[t * W->rows + r] for every token t and rows r in [r0, r1). */
typedef void (*ox_tile_fn)(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y);

#ifdef OX_HAVE_SIMD_TILES
/* The architecture's tile for weight type t, or NULL (then kernels.c's generic path). */
ox_tile_fn ox_simd_tile(ox_type t);
#endif

/* fp16 -> f32 for scales in hot loops: exact for finite values, inf/nan kept. */
static inline float ox_f16_fast(uint16_t h) {
    union { uint32_t u; float f; } v = {(uint32_t)(h & 0x7fff) << 13};
    v.f *= 0x1p112f; /* rebias the exponent; also normalizes subnormals exactly */
    if ((h & 0x7c00) == 0x7c00) v.u = 0x7f800000 | (uint32_t)(h & 0x3ff) << 13;
    v.u |= (uint32_t)(h & 0x8000) << 16;
    return v.f;
}

#endif
