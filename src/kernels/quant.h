/* quant.h — weight formats: one block format = one struct, one dequantize, one dot.
 *
 * Type ids are ggml's (GGUF stores them), so a GGUF tensor's bytes are used as is.
 * Formats: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
 * the i-quants, TQ1_0/TQ2_0 and MXFP4 (their codec in iq.h; every block struct in blocks.h), the engine's Q8_A (8-bit affine,
 * what MLX 8-bit checkpoints repack to; dotted like Q4_1 against Q8_1), plus the activation
 * formats Q8_1 and Q8_K used by the dots.
 *
 * Dots follow llama.cpp: the activation vector is first quantized to the weight type's
 * "vec_dot type" (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants
 * and the other i-quants; F16/BF16/F32
 * dot against f32), then an integer dot per block. The scalar functions here are the
 * reference; SIMD versions in kernels*.c must agree with them (tests compare). */
#ifndef OX_QUANT_H
#define OX_QUANT_H

#include <stdint.h>
#include <stddef.h>
#include "base/err.h"
#include "kernels/blocks.h"

/* Per-type facts. */
const char *ox_type_name(ox_type t);   /* "Q4_K", ...; NULL if unknown/unsupported */
int ox_type_known(int t);              /* 1 if t is a type this engine can read */
size_t ox_type_block_elems(ox_type t); /* 1 for F32/F16/BF16, 32 or 256 otherwise */
size_t ox_type_block_bytes(ox_type t);
ox_type ox_type_vec_dot(ox_type t); /* activation format the dot uses */
/* Bytes of a row of n elements; returns a negative OX_E_* code (and sets err) if the type
 * is unknown (UNSUPPORTED), n is not a multiple of the block size (FORMAT) or the size
 * overflows (RANGE). */
int ox_row_bytes(ox_type t, uint64_t n, uint64_t *out, ox_err *err);

/* fp16 / bf16 <-> f32 (bit-exact, round-to-nearest-even for the f32 -> half direction). */
float ox_f16_to_f32(ox_f16 h);
ox_f16 ox_f32_to_f16(float f);
float ox_bf16_to_f32(uint16_t h);
uint16_t ox_f32_to_bf16(float f);

/* Scalar reference: dequantize n elements (n a multiple of the block size) from src. */
void ox_dequantize_row(ox_type t, const void *src, float *dst, size_t n);

/* Quantize n f32 values into blocks of type t. Supported targets: Q8_0, Q4_0 (the engine's
 * quantize-on-load and the fixture generator; bit-exact with ggml's *_ref quantizers),
 * Q8_1, Q8_K (activations), Q8_A (min/max fit, as MLX's affine quantizer), and for fixtures Q4_1, Q5_0, Q5_1, Q2_K..Q6_K (ggml's reference
 * quantizers, need not be optimal, must be valid). Returns 0 or OX_E_UNSUPPORTED. */
int ox_quantize_row(ox_type t, const float *src, void *dst, size_t n);

/* Scalar reference dot: weights row `w` of type t (n elements) against activations `a`
 * already quantized to ox_type_vec_dot(t) (or f32 for F32/F16/BF16). */
float ox_vec_dot_ref(ox_type t, const void *w, const void *a, size_t n);

#endif
