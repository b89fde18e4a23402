/* quant.h — weight formats: one block format = one struct, one dequantize, one dot.
 *
 * Type ids are ggml's (GGUF stores them), so a GGUF tensor's bytes are used as is.
 * Formats: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
 * the i-quants, TQ1_0/TQ2_0 and MXFP4 (their blocks in iq.h), the engine's Q8_A (8-bit affine,
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

typedef enum ox_type {
    OX_F32 = 0, OX_F16 = 1, OX_Q4_0 = 2, OX_Q4_1 = 3, OX_Q5_0 = 6, OX_Q5_1 = 7,
    OX_Q8_0 = 8, OX_Q8_1 = 9, OX_Q2_K = 10, OX_Q3_K = 11, OX_Q4_K = 12, OX_Q5_K = 13,
    OX_Q6_K = 14, OX_Q8_K = 15, OX_IQ2_XXS = 16, OX_IQ2_XS = 17, OX_IQ3_XXS = 18, OX_IQ1_S = 19,
    OX_IQ4_NL = 20, OX_IQ3_S = 21, OX_IQ2_S = 22, OX_IQ4_XS = 23, OX_IQ1_M = 29, OX_BF16 = 30,
    OX_TQ1_0 = 34, OX_TQ2_0 = 35, OX_MXFP4 = 39,
    /* the engine's own formats, never read from a GGUF: ids far from ggml's */
    OX_Q8_A = 64, /* 8-bit affine (MLX 8-bit checkpoints): d * q + m, q unsigned */
    OX_TYPE_COUNT = 65,
    OX_TYPE_GGML_END = 40 /* ids below this are ggml's */
} ox_type;

#define OX_QK 32    /* block of the legacy formats */
#define OX_QK_K 256 /* super-block of the K-quants */

/* Block structs (layouts identical to ggml's; sizes checked by static asserts in quant.c). */
typedef uint16_t ox_f16;
typedef struct { ox_f16 d; uint8_t qs[OX_QK / 2]; } ox_block_q4_0;              /* 18 B  */
typedef struct { ox_f16 d, m; uint8_t qs[OX_QK / 2]; } ox_block_q4_1;          /* 20 B  */
typedef struct { ox_f16 d; uint8_t qh[4]; uint8_t qs[OX_QK / 2]; } ox_block_q5_0; /* 22 B */
typedef struct { ox_f16 d, m; uint8_t qh[4]; uint8_t qs[OX_QK / 2]; } ox_block_q5_1; /* 24 B */
typedef struct { ox_f16 d; int8_t qs[OX_QK]; } ox_block_q8_0;                   /* 34 B  */
typedef struct { ox_f16 d, s; int8_t qs[OX_QK]; } ox_block_q8_1;                /* 36 B  */
typedef struct { ox_f16 d, m; uint8_t qs[OX_QK]; } ox_block_q8_a;               /* 36 B: d * qs[j] + m */
typedef struct { uint8_t scales[OX_QK_K / 16]; uint8_t qs[OX_QK_K / 4]; ox_f16 d, dmin; } ox_block_q2_K; /* 84 B */
typedef struct { uint8_t hmask[OX_QK_K / 8]; uint8_t qs[OX_QK_K / 4]; uint8_t scales[12]; ox_f16 d; } ox_block_q3_K; /* 110 B */
typedef struct { ox_f16 d, dmin; uint8_t scales[12]; uint8_t qs[OX_QK_K / 2]; } ox_block_q4_K; /* 144 B */
typedef struct { ox_f16 d, dmin; uint8_t scales[12]; uint8_t qh[OX_QK_K / 8]; uint8_t qs[OX_QK_K / 2]; } ox_block_q5_K; /* 176 B */
typedef struct { uint8_t ql[OX_QK_K / 2]; uint8_t qh[OX_QK_K / 4]; int8_t scales[OX_QK_K / 16]; ox_f16 d; } ox_block_q6_K; /* 210 B */
typedef struct { float d; int8_t qs[OX_QK_K]; int16_t bsums[OX_QK_K / 16]; } ox_block_q8_K; /* 292 B */

/* Per-type facts. */
const char *ox_type_name(ox_type t);      /* "Q4_K", ...; NULL if unknown/unsupported */
int ox_type_known(int t);                 /* 1 if t is a type this engine can read */
size_t ox_type_block_elems(ox_type t);    /* 1 for F32/F16/BF16, 32 or 256 otherwise */
size_t ox_type_block_bytes(ox_type t);
ox_type ox_type_vec_dot(ox_type t);       /* activation format the dot uses */
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
