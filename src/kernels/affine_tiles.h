/* affine_tiles.h — wasm SIMD128 matmul tiles for the affine 32-blocks dotted against Q8_1
 * (affine_simd128.c): Q8_A (MLX 8-bit) and Q4_1 (MLX 4-bit, repacked). kernels.c asks for them
 * before the architecture's own tiles; NULL (other types, native builds) falls through. The
 * tiles compute what ox_vec_dot_ref computes (exact integer sums per block, then the same
 * scales) up to float rounding; test_kernels compares them. */
#ifndef OX_AFFINE_TILES_H
#define OX_AFFINE_TILES_H

#include "kernels/kernels_impl.h"

#ifdef __wasm_simd128__
ox_tile_fn ox_affine_simd_tile(ox_type t);
#else
static inline ox_tile_fn ox_affine_simd_tile(ox_type t) {
    (void)t;
    return NULL;
}
#endif

#endif
