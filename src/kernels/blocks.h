/* blocks.h — the weight and activation block formats as data: the type ids (ggml's, as GGUF
 * stores them, plus the engine's own), the block sizes and one struct per block format, with
 * layouts identical to ggml's (sizes checked by static asserts in quant.c and iq.c). The codecs
 * include this one header: quant.[ch] (the type registry, legacy and K-quant formats, the f16 /
 * bf16 conversions) and iq.[ch] (the i-quants, TQ1_0/TQ2_0, MXFP4), so neither header needs
 * the other. */
#ifndef OX_BLOCKS_H
#define OX_BLOCKS_H

#include <stdint.h>

typedef enum ox_type {
    OX_F32 = 0,
    OX_F16 = 1,
    OX_Q4_0 = 2,
    OX_Q4_1 = 3,
    OX_Q5_0 = 6,
    OX_Q5_1 = 7,
    OX_Q8_0 = 8,
    OX_Q8_1 = 9,
    OX_Q2_K = 10,
    OX_Q3_K = 11,
    OX_Q4_K = 12,
    OX_Q5_K = 13,
    OX_Q6_K = 14,
    OX_Q8_K = 15,
    OX_IQ2_XXS = 16,
    OX_IQ2_XS = 17,
    OX_IQ3_XXS = 18,
    OX_IQ1_S = 19,
    OX_IQ4_NL = 20,
    OX_IQ3_S = 21,
    OX_IQ2_S = 22,
    OX_IQ4_XS = 23,
    OX_IQ1_M = 29,
    OX_BF16 = 30,
    OX_TQ1_0 = 34,
    OX_TQ2_0 = 35,
    OX_MXFP4 = 39,
    /* the engine's own formats, never read from a GGUF: ids far from ggml's */
    OX_Q8_A = 64, /* 8-bit affine (MLX 8-bit checkpoints): d * q + m, q unsigned */
    OX_TYPE_COUNT = 65,
    OX_TYPE_GGML_END = 40 /* ids below this are ggml's */
} ox_type;

#define OX_QK   32  /* block of the legacy formats */
#define OX_QK_K 256 /* super-block of the K-quants */

/* Legacy and K-quant blocks, the engine's Q8_A, and the activation blocks Q8_1 / Q8_K. */
typedef uint16_t ox_f16;
typedef struct {
    ox_f16 d;
    uint8_t qs[OX_QK / 2];
} ox_block_q4_0; /* 18 B  */
typedef struct {
    ox_f16 d, m;
    uint8_t qs[OX_QK / 2];
} ox_block_q4_1; /* 20 B  */
typedef struct {
    ox_f16 d;
    uint8_t qh[4];
    uint8_t qs[OX_QK / 2];
} ox_block_q5_0; /* 22 B */
typedef struct {
    ox_f16 d, m;
    uint8_t qh[4];
    uint8_t qs[OX_QK / 2];
} ox_block_q5_1; /* 24 B */
typedef struct {
    ox_f16 d;
    int8_t qs[OX_QK];
} ox_block_q8_0; /* 34 B  */
typedef struct {
    ox_f16 d, s;
    int8_t qs[OX_QK];
} ox_block_q8_1; /* 36 B  */
typedef struct {
    ox_f16 d, m;
    uint8_t qs[OX_QK];
} ox_block_q8_a; /* 36 B: d * qs[j] + m */
typedef struct {
    uint8_t scales[OX_QK_K / 16];
    uint8_t qs[OX_QK_K / 4];
    ox_f16 d, dmin;
} ox_block_q2_K; /* 84 B */
typedef struct {
    uint8_t hmask[OX_QK_K / 8];
    uint8_t qs[OX_QK_K / 4];
    uint8_t scales[12];
    ox_f16 d;
} ox_block_q3_K; /* 110 B */
typedef struct {
    ox_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qs[OX_QK_K / 2];
} ox_block_q4_K; /* 144 B */
typedef struct {
    ox_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[OX_QK_K / 8];
    uint8_t qs[OX_QK_K / 2];
} ox_block_q5_K; /* 176 B */
typedef struct {
    uint8_t ql[OX_QK_K / 2];
    uint8_t qh[OX_QK_K / 4];
    int8_t scales[OX_QK_K / 16];
    ox_f16 d;
} ox_block_q6_K; /* 210 B */
typedef struct {
    float d;
    int8_t qs[OX_QK_K];
    int16_t bsums[OX_QK_K / 16];
} ox_block_q8_K; /* 292 B */

/* i-quants, ternary and MXFP4 (iq.h has their value formulas). */
typedef struct {
    ox_f16 d;
    uint16_t qs[OX_QK_K / 8];
} ox_block_iq2_xxs; /* 66 B  */
typedef struct {
    ox_f16 d;
    uint16_t qs[OX_QK_K / 8];
    uint8_t scales[OX_QK_K / 32];
} ox_block_iq2_xs; /* 74 B */
typedef struct {
    ox_f16 d;
    uint8_t qs[OX_QK_K / 4];
    uint8_t qh[OX_QK_K / 32];
    uint8_t scales[OX_QK_K / 32];
} ox_block_iq2_s; /* 82 B */
typedef struct {
    ox_f16 d;
    uint8_t qs[3 * OX_QK_K / 8];
} ox_block_iq3_xxs; /* 98 B  */
typedef struct {
    ox_f16 d;
    uint8_t qs[OX_QK_K / 4], qh[OX_QK_K / 32], signs[OX_QK_K / 8], scales[OX_QK_K / 64];
} ox_block_iq3_s; /* 110 B */
typedef struct {
    ox_f16 d;
    uint8_t qs[OX_QK_K / 8];
    uint16_t qh[OX_QK_K / 32];
} ox_block_iq1_s; /* 50 B  */
typedef struct {
    uint8_t qs[OX_QK_K / 8], qh[OX_QK_K / 16], scales[OX_QK_K / 32];
} ox_block_iq1_m; /* 56 B */
typedef struct {
    ox_f16 d;
    uint8_t qs[OX_QK / 2];
} ox_block_iq4_nl; /* 18 B  */
typedef struct {
    ox_f16 d;
    uint16_t scales_h;
    uint8_t scales_l[OX_QK_K / 64];
    uint8_t qs[OX_QK_K / 2];
} ox_block_iq4_xs; /* 136 B */
typedef struct {
    uint8_t qs[(OX_QK_K - 4 * OX_QK_K / 64) / 5];
    uint8_t qh[OX_QK_K / 64];
    ox_f16 d;
} ox_block_tq1_0; /* 54 B */
typedef struct {
    uint8_t qs[OX_QK_K / 4];
    ox_f16 d;
} ox_block_tq2_0; /* 66 B  */
typedef struct {
    uint8_t e;
    uint8_t qs[OX_QK / 2];
} ox_block_mxfp4; /* 17 B  */

#endif
