/* types.c — the facts of each ggml block format (name, block elements and bytes, the
 * activation type its dot takes, row sizes) and the fp16 / bf16 conversions: what the
 * quantizers (quant.c) and the i-quants (iq.c) both look up, kept apart so neither calls
 * back into the other. */
#include "kernels/iq.h"
#include "kernels/quant.h"

#include <string.h>

/* ------------------------------------------------------------------ type facts */

typedef struct {
    const char *name;
    size_t elems, bytes;
    ox_type vec_dot;
} type_info;

static const type_info *info(ox_type t) {
    static const type_info tab[OX_TYPE_COUNT] = {
        [OX_F32] = {"F32", 1, 4, OX_F32},
        [OX_F16] = {"F16", 1, 2, OX_F32},
        [OX_BF16] = {"BF16", 1, 2, OX_F32},
        [OX_Q4_0] = {"Q4_0", OX_QK, sizeof(ox_block_q4_0), OX_Q8_0},
        [OX_Q4_1] = {"Q4_1", OX_QK, sizeof(ox_block_q4_1), OX_Q8_1},
        [OX_Q5_0] = {"Q5_0", OX_QK, sizeof(ox_block_q5_0), OX_Q8_0},
        [OX_Q5_1] = {"Q5_1", OX_QK, sizeof(ox_block_q5_1), OX_Q8_1},
        [OX_Q8_0] = {"Q8_0", OX_QK, sizeof(ox_block_q8_0), OX_Q8_0},
        [OX_Q8_1] = {"Q8_1", OX_QK, sizeof(ox_block_q8_1), OX_Q8_1},
        [OX_Q2_K] = {"Q2_K", OX_QK_K, sizeof(ox_block_q2_K), OX_Q8_K},
        [OX_Q3_K] = {"Q3_K", OX_QK_K, sizeof(ox_block_q3_K), OX_Q8_K},
        [OX_Q4_K] = {"Q4_K", OX_QK_K, sizeof(ox_block_q4_K), OX_Q8_K},
        [OX_Q5_K] = {"Q5_K", OX_QK_K, sizeof(ox_block_q5_K), OX_Q8_K},
        [OX_Q6_K] = {"Q6_K", OX_QK_K, sizeof(ox_block_q6_K), OX_Q8_K},
        [OX_Q8_K] = {"Q8_K", OX_QK_K, sizeof(ox_block_q8_K), OX_Q8_K},
        [OX_IQ2_XXS] = {"IQ2_XXS", OX_QK_K, sizeof(ox_block_iq2_xxs), OX_Q8_K},
        [OX_IQ2_XS] = {"IQ2_XS", OX_QK_K, sizeof(ox_block_iq2_xs), OX_Q8_K},
        [OX_IQ2_S] = {"IQ2_S", OX_QK_K, sizeof(ox_block_iq2_s), OX_Q8_K},
        [OX_IQ3_XXS] = {"IQ3_XXS", OX_QK_K, sizeof(ox_block_iq3_xxs), OX_Q8_K},
        [OX_IQ3_S] = {"IQ3_S", OX_QK_K, sizeof(ox_block_iq3_s), OX_Q8_K},
        [OX_IQ1_S] = {"IQ1_S", OX_QK_K, sizeof(ox_block_iq1_s), OX_Q8_K},
        [OX_IQ1_M] = {"IQ1_M", OX_QK_K, sizeof(ox_block_iq1_m), OX_Q8_K},
        [OX_IQ4_NL] = {"IQ4_NL", OX_QK, sizeof(ox_block_iq4_nl), OX_Q8_0},
        [OX_IQ4_XS] = {"IQ4_XS", OX_QK_K, sizeof(ox_block_iq4_xs), OX_Q8_K},
        [OX_TQ1_0] = {"TQ1_0", OX_QK_K, sizeof(ox_block_tq1_0), OX_Q8_K},
        [OX_TQ2_0] = {"TQ2_0", OX_QK_K, sizeof(ox_block_tq2_0), OX_Q8_K},
        [OX_MXFP4] = {"MXFP4", OX_QK, sizeof(ox_block_mxfp4), OX_Q8_0},
        [OX_Q8_A] = {"Q8_A", OX_QK, sizeof(ox_block_q8_a), OX_Q8_1},
    };
    if ((unsigned)t >= OX_TYPE_COUNT || !tab[t].name) return NULL;
    return &tab[t];
}

int ox_type_known(int t) { return t >= 0 && info((ox_type)t) != NULL; }
const char *ox_type_name(ox_type t) { return info(t) ? info(t)->name : NULL; }
size_t ox_type_block_elems(ox_type t) { return info(t) ? info(t)->elems : 0; }
size_t ox_type_block_bytes(ox_type t) { return info(t) ? info(t)->bytes : 0; }
ox_type ox_type_vec_dot(ox_type t) { return info(t) ? info(t)->vec_dot : OX_F32; }

int ox_row_bytes(ox_type t, uint64_t n, uint64_t *out, ox_err *err) {
    const type_info *ti = info(t);
    if (!ti) return ox_errf(err, OX_E_UNSUPPORTED, "tensor type %d is not supported", (int)t);
    if (n % ti->elems)
        return ox_errf(err, OX_E_FORMAT, "row of %llu elements is not a multiple of the %s block (%zu)",
                       (unsigned long long)n, ti->name, ti->elems);
    uint64_t blocks = n / ti->elems;
    if (blocks > UINT64_MAX / ti->bytes)
        return ox_errf(err, OX_E_RANGE, "row of %llu %s elements: size overflows", (unsigned long long)n, ti->name);
    *out = blocks * ti->bytes;
    return 0;
}

/* ------------------------------------------------------------------ fp16 / bf16 */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float ox_f16_to_f32(ox_f16 h) {
    /* exponent/mantissa moved into f32 position, then * 2^112 rebiases the exponent (and
     * normalizes subnormals exactly); inf/nan get the all-ones exponent. Branch-free so
     * row conversions vectorize. */
    uint32_t em = (uint32_t)(h & 0x7fff) << 13;
    uint32_t u = f32_bits(bits_f32(em) * 0x1p112f);
    u |= (h & 0x7c00) == 0x7c00 ? 0x7f800000u : 0;
    return bits_f32(u | (uint32_t)(h & 0x8000) << 16);
}

ox_f16 ox_f32_to_f16(float f) {
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;
    if (a > 0x7f800000) return (ox_f16)(sign | 0x7e00 | ((a >> 13) & 0x3ff)); /* nan stays nan */
    if (a >= 0x477ff000) return (ox_f16)(sign | 0x7c00);                      /* rounds to >= 65536: inf */
    if (a < 0x38800000) {
        /* result is subnormal: round a * 2^24 to an integer, ties to even */
        if (a < 0x33000000) return (ox_f16)sign; /* below half the smallest subnormal */
        uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* value = m * 2^(e-150); want m * 2^(e-150+24) */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (ox_f16)(sign | q);
    }
    /* normal: drop 13 mantissa bits, ties to even (a carry into the exponent is right) */
    uint32_t r = a + 0xfff + ((a >> 13) & 1);
    return (ox_f16)(sign | ((r - 0x38000000) >> 13));
}

float ox_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t ox_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 64); /* quiet nan */
    return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}
