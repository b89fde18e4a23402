/* iq_tiles.h — wasm SIMD128 matmul tiles for the i-quants, MXFP4, BF16 and F16 weights
 * (iq_simd128.c, bf16_simd128.c, kernels_simd128.c for F16), beside the K-quant/legacy tiles of kernels_simd128.c.
 * kernels.c asks ox_iq_simd_tile first; NULL (every other type, and native builds) sends it
 * on to the architecture's own tiles or the generic dequantize-and-dot path. The tiles
 * compute what ox_vec_dot_ref computes (exact integer sums per block, then the same scales),
 * up to float rounding; test_quant_iq compares them. */
#ifndef OX_IQ_TILES_H
#define OX_IQ_TILES_H

#include "kernels/kernels_impl.h"

#ifdef __wasm_simd128__
ox_tile_fn ox_iq_simd_tile(ox_type t);
void ox_tile_bf16(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y);
void ox_tile_f16(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y);
#else
static inline ox_tile_fn ox_iq_simd_tile(ox_type t) {
    (void)t;
    return NULL;
}
#endif

#endif
