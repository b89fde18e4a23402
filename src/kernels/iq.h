/* iq.h — ggml's codebook and low-bit formats: the i-quants (IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S,
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M), the ternary TQ1_0 / TQ2_0 and MXFP4.
 *
 * One block format = one struct (in blocks.h, layout identical to ggml's ggml-common.h, sizes
 * checked in iq.c), one dequantize, one scalar dot. quant.c registers the types and forwards to
 * ox_iq_dequantize_row / ox_iq_vec_dot_ref; the public entry points stay ox_dequantize_row
 * and ox_vec_dot_ref.
 *
 * Values, as ggml defines them (dequantize is bit-exact with ggml's dequantize_row_*):
 *   IQ4_NL  (32)  d * kvalues_iq4nl[nibble]                          dot against Q8_0
 *   IQ4_XS  (256) d * (ls - 32) * kvalues_iq4nl[nibble], ls 6 bits per 32
 *   IQ3_XXS (256) d * (0.5 + s) * 0.5 * grid3 * sign, 4-bit s per 32, 7-bit sign codes
 *   IQ3_S   (256) d * (1 + 2s) * grid3s * sign, 9-bit grid index, explicit sign bits
 *   IQ2_XXS (256) d * (0.5 + s) * 0.25 * grid2 * sign, 8-bit grid index
 *   IQ2_XS  (256) as IQ2_XXS with 9-bit grid indices and 4-bit s per 16
 *   IQ2_S   (256) 10-bit grid indices, explicit sign bits, 4-bit s per 16
 *   IQ1_S   (256) d * (2s + 1) * (grid1 +- 1/8), 11-bit grid index, 3-bit s per 32
 *   IQ1_M   (256) as IQ1_S with s per 16, a delta sign per 8 and d spread over the scales
 *   TQ1_0   (256) d * (t - 1), t in {0,1,2} packed five per byte (base 3)
 *   TQ2_0   (256) d * (t - 1), t two bits
 *   MXFP4   (32)  2^(e - 128) * kvalues_mxfp4[nibble] (E2M1 doubled)    dot against Q8_0
 * All the 256-element formats dot against Q8_K, as in ggml. A "sign code" is 7 bits; the
 * eighth sign makes the number of minus signs even (ox_iq_signs). */
#ifndef OX_IQ_H
#define OX_IQ_H

#include <stdint.h>
#include <stddef.h>
#include "kernels/blocks.h"

/* The codebooks (iq_grids.c): entry i holds 8 (or 4) lane values, one per byte, lane 0 in
 * the low byte. IQ2 lanes are 8, 25 or 43; IQ3_XXS 4..62; IQ3_S odd 1..15; IQ1 -1, 0, 1. */
extern const uint64_t ox_iq2xxs_grid[256], ox_iq2xs_grid[512], ox_iq2s_grid[1024], ox_iq1s_grid[2048];
extern const uint32_t ox_iq3xxs_grid[256], ox_iq3s_grid[512];
/* IQ4_NL / IQ4_XS levels and MXFP4's E2M1 values (doubled), indexed by the nibble. */
extern const int8_t ox_kvalues_iq4nl[16], ox_kvalues_mxfp4[16];

/* The 8 sign bits of a 7-bit sign code: bit 7 is the parity of the other seven. */
static inline unsigned ox_iq_signs(unsigned code7) {
    unsigned p = code7 ^ code7 >> 4;
    p ^= p >> 2;
    p ^= p >> 1;
    return code7 | (p & 1) << 7;
}

/* IQ1_M's d: the top nibbles of its four 16-bit scale words form an fp16. */
ox_f16 ox_iq1_m_d(const ox_block_iq1_m *b);

/* MXFP4's scale, half of 2^(e - 127) (ggml's E8M0 "half": the table values are doubled). */
float ox_e8m0_half(uint8_t e);

/* 1 if t is one of the types of this file. */
int ox_iq_type(ox_type t);
/* Dequantize n elements (n a multiple of the block size) of type t (ox_iq_type(t)). */
void ox_iq_dequantize_row(ox_type t, const void *src, float *dst, size_t n);
/* Scalar reference dot against activations quantized to ox_type_vec_dot(t), following
 * ggml's *_generic dots (the same integer sums, the same float order). */
float ox_iq_vec_dot_ref(ox_type t, const void *w, const void *a, size_t n);

#endif
