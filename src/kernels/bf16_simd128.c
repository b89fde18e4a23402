/* bf16_simd128.c — wasm SIMD128 tile for BF16 weights (checkpoints loaded with quant 'bf16'
 * keep their bf16 rows: half the memory of f32, no quantization). A bf16 is the top half of
 * an f32, so 8 weights widen to two f32x4 with one zero-extend and one shift each, and are
 * dotted with the f32 activations as they are (ox_act.x): no dequantized copy of the row.
 * Two accumulators, reduced at the end; the scalar tail finishes rows not a multiple of 8. */
#ifdef __wasm_simd128__
#include "kernels/iq_tiles.h"

#include <wasm_simd128.h>

void ox_tile_bf16(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    const int cols = W->cols, rows = W->rows;
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        for (int t = 0; t < a->n_tok; t++) {
            const float *x = a->x + (size_t)t * cols;
            v128_t acc0 = wasm_f32x4_splat(0), acc1 = wasm_f32x4_splat(0);
            int c = 0;
            for (; c + 8 <= cols; c += 8) {
                v128_t w = wasm_v128_load(row + 2 * (size_t)c);
                v128_t lo = wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(w), 16),
                       hi = wasm_i32x4_shl(wasm_u32x4_extend_high_u16x8(w), 16);
                acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(lo, wasm_v128_load(x + c)));
                acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(hi, wasm_v128_load(x + c + 4)));
            }
            v128_t acc = wasm_f32x4_add(acc0, acc1);
            float s = (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 2)) +
                      (wasm_f32x4_extract_lane(acc, 1) + wasm_f32x4_extract_lane(acc, 3));
            for (; c < cols; c++) {
                uint16_t h;
                memcpy(&h, row + 2 * (size_t)c, 2);
                s += ox_bf16_to_f32(h) * x[c];
            }
            y[(size_t)t * rows + r] = s;
        }
    }
}
#endif
