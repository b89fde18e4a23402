/* iq.c — dequantize and scalar reference dots of the i-quants, TQ1_0/TQ2_0 and MXFP4
 * (formats in iq.h). The float expressions are ggml's, operand for operand, so dequantized
 * values are bit-exact; the dots keep ggml's integer sums and float order. */
#include "kernels/iq.h"
#include "kernels/quant.h"

#include <string.h>

_Static_assert(sizeof(ox_block_iq2_xxs) == 66, "iq2_xxs block");
_Static_assert(sizeof(ox_block_iq2_xs) == 74, "iq2_xs block");
_Static_assert(sizeof(ox_block_iq2_s) == 82, "iq2_s block");
_Static_assert(sizeof(ox_block_iq3_xxs) == 98, "iq3_xxs block");
_Static_assert(sizeof(ox_block_iq3_s) == 110, "iq3_s block");
_Static_assert(sizeof(ox_block_iq1_s) == 50, "iq1_s block");
_Static_assert(sizeof(ox_block_iq1_m) == 56, "iq1_m block");
_Static_assert(sizeof(ox_block_iq4_nl) == 18, "iq4_nl block");
_Static_assert(sizeof(ox_block_iq4_xs) == 136, "iq4_xs block");
_Static_assert(sizeof(ox_block_tq1_0) == 54, "tq1_0 block");
_Static_assert(sizeof(ox_block_tq2_0) == 66, "tq2_0 block");
_Static_assert(sizeof(ox_block_mxfp4) == 17, "mxfp4 block");

const int8_t ox_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t ox_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

#define IQ1_DELTA 0.125f

#define F16(h) ox_f16_to_f32(h) /* types.c */

static uint32_t rd32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
} /* little-endian hosts */
static unsigned rd16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* byte j of a grid word, as the unsigned magnitude (IQ2/IQ3) or signed value (IQ1) */
#define LANE(word, j)  ((uint8_t)((word) >> (8 * (j))))
#define SLANE(word, j) ((int8_t)LANE(word, j))

ox_f16 ox_iq1_m_d(const ox_block_iq1_m *b) {
    unsigned s0 = rd16(b->scales), s1 = rd16(b->scales + 2), s2 = rd16(b->scales + 4), s3 = rd16(b->scales + 6);
    return (ox_f16)((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
}

float ox_e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23; /* 2^(e-128), subnormal below e = 2 */
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* TQ1_0 trit n (0..4) of byte q: the digits are stored as a fixed-point fraction q/243,
 * so multiplying by 3^n (mod 256) brings digit n to the top and * 3 >> 8 reads it. */
static int trit(uint8_t q, int n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    uint8_t v = (uint8_t)(q * pow3[n]);
    return ((uint16_t)v * 3) >> 8;
}

/* TQ1_0 element k (0..255) as a trit 0..2: bytes 0..31 hold elements 0..159 (digit n of byte m
 * is element 32n + m), bytes 32..47 elements 160..239, qh elements 240..255. */
static void tq1_0_trits(const ox_block_tq1_0 *b, int8_t *t) {
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++) t[32 * n + m] = (int8_t)trit(b->qs[m], n);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++) t[160 + 16 * n + m] = (int8_t)trit(b->qs[32 + m], n);
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++) t[240 + 4 * n + j] = (int8_t)trit(b->qh[j], n);
}

/* TQ2_0 element 128h + 32l + m is bits 2l..2l+1 of qs[32h + m] */
static int tq2_0_trit(const ox_block_tq2_0 *b, int k) {
    return (b->qs[32 * (k / 128) + k % 32] >> (2 * (k % 128 / 32))) & 3;
}

/* ------------------------------------------------------------------ dequantize */

/* The five sign-grid formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) differ only in how
 * they pack the same things: per group of 8 elements a grid word of magnitudes and a sign
 * byte (7-bit codes get their parity bit), per 16 elements a 4-bit scale s. */
typedef struct {
    float d;
    uint64_t g[32];
    uint8_t sign[32], s[16];
} sign_groups;

static void iq_sign_groups(ox_type t, const void *blk, sign_groups *o) {
    switch (t) {
    case OX_IQ2_XXS: { /* per 32: 4 grid bytes, then 4 sign codes + s (top 4 bits) in one word */
        const ox_block_iq2_xxs *b = blk;
        o->d = F16(b->d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t idx = rd32(b->qs + 4 * ib), sg = rd32(b->qs + 4 * ib + 2);
            o->s[2 * ib] = o->s[2 * ib + 1] = (uint8_t)(sg >> 28);
            for (int l = 0; l < 4; l++) {
                o->g[4 * ib + l] = ox_iq2xxs_grid[(idx >> 8 * l) & 255];
                o->sign[4 * ib + l] = (uint8_t)ox_iq_signs((sg >> 7 * l) & 127);
            }
        }
    } break;
    case OX_IQ2_XS: { /* per 8: a u16 of 9-bit grid index and sign code; s per 16 in nibbles */
        const ox_block_iq2_xs *b = blk;
        o->d = F16(b->d);
        for (int k = 0; k < 32; k++) {
            o->g[k] = ox_iq2xs_grid[b->qs[k] & 511];
            o->sign[k] = (uint8_t)ox_iq_signs(b->qs[k] >> 9);
        }
        for (int h = 0; h < 16; h++) o->s[h] = (b->scales[h / 2] >> 4 * (h % 2)) & 0xf;
    } break;
    case OX_IQ2_S: { /* 10-bit grid indices (high bits in qh), explicit sign bytes */
        const ox_block_iq2_s *b = blk;
        o->d = F16(b->d);
        for (int k = 0; k < 32; k++) {
            o->g[k] = ox_iq2s_grid[b->qs[k] | ((b->qh[k / 4] << (8 - 2 * (k % 4))) & 0x300)];
            o->sign[k] = b->qs[OX_QK_K / 8 + k];
        }
        for (int h = 0; h < 16; h++) o->s[h] = (b->scales[h / 2] >> 4 * (h % 2)) & 0xf;
    } break;
    case OX_IQ3_XXS: { /* per 8: two 4-lane grid bytes; per 32 a word of sign codes + s */
        const ox_block_iq3_xxs *b = blk;
        const uint8_t *qs = b->qs, *gas = b->qs + OX_QK_K / 4;
        o->d = F16(b->d);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t sg = rd32(gas + 4 * ib);
            o->s[2 * ib] = o->s[2 * ib + 1] = (uint8_t)(sg >> 28);
            for (int l = 0; l < 4; l++) {
                int k = 4 * ib + l;
                o->g[k] = ox_iq3xxs_grid[qs[2 * k]] | (uint64_t)ox_iq3xxs_grid[qs[2 * k + 1]] << 32;
                o->sign[k] = (uint8_t)ox_iq_signs((sg >> 7 * l) & 127);
            }
        }
    } break;
    case OX_IQ3_S: { /* 9-bit 4-lane grid indices (ninth bits in qh), sign bytes, s per 32 */
        const ox_block_iq3_s *b = blk;
        o->d = F16(b->d);
        for (int k = 0; k < 32; k++) {
            unsigned h = b->qh[k / 4], l = k % 4;
            unsigned i0 = b->qs[2 * k] | ((h << (8 - 2 * l)) & 256), i1 = b->qs[2 * k + 1] | ((h << (7 - 2 * l)) & 256);
            o->g[k] = ox_iq3s_grid[i0] | (uint64_t)ox_iq3s_grid[i1] << 32;
            o->sign[k] = b->signs[k];
        }
        for (int h = 0; h < 16; h++) o->s[h] = (b->scales[h / 4] >> 4 * (h / 2 % 2)) & 0xf;
    } break;
    default: memset(o, 0, sizeof *o);
    }
}

/* ggml's per-32 multiplier of the grid values: d (0.5 + s) / 4 for IQ2, d (0.5 + s) / 2 for
 * IQ3_XXS, d (1 + 2 s) for IQ3_S */
static float sign_group_scale(ox_type t, float d, int s) {
    if (t == OX_IQ3_S) return d * (1 + 2 * s);
    return d * (0.5f + s) * (t == OX_IQ3_XXS ? 0.5f : 0.25f);
}

static void deq_sign_grid(ox_type t, const void *blk, float *y) {
    sign_groups o;
    iq_sign_groups(t, blk, &o);
    for (int k = 0; k < 32; k++, y += 8) {
        float db = sign_group_scale(t, o.d, o.s[k / 2]);
        for (int j = 0; j < 8; j++) y[j] = db * LANE(o.g[k], j) * (o.sign[k] >> j & 1 ? -1.f : 1.f);
    }
}

/* IQ1_S / IQ1_M: per group of 8 an 11-bit grid index of -1/0/+1 lanes and the sign of a
 * +-1/8 shift, per 16 a 3-bit scale s; value d (2 s + 1) (grid + shift). */
typedef struct {
    float d;
    uint64_t g[32];
    int8_t neg[32];
    uint8_t s[16];
} iq1_groups;

static void iq1_groups_of(ox_type t, const void *blk, iq1_groups *o) {
    if (t == OX_IQ1_S) { /* per 32 a u16: 3 index bits per group, s, shift sign */
        const ox_block_iq1_s *b = blk;
        o->d = F16(b->d);
        for (int ib = 0; ib < 8; ib++) {
            unsigned h = b->qh[ib];
            o->s[2 * ib] = o->s[2 * ib + 1] = (uint8_t)((h >> 12) & 7);
            for (int l = 0; l < 4; l++) {
                o->g[4 * ib + l] = ox_iq1s_grid[b->qs[4 * ib + l] | ((h >> 3 * l) & 7) << 8];
                o->neg[4 * ib + l] = (int8_t)(h >> 15);
            }
        }
    } else { /* IQ1_M: per group a nibble (3 index bits, shift sign), s per 16, d in the scales */
        const ox_block_iq1_m *b = blk;
        o->d = F16(ox_iq1_m_d(b));
        for (int k = 0; k < 32; k++) {
            unsigned nib = (b->qh[k / 2] >> 4 * (k % 2)) & 15;
            o->g[k] = ox_iq1s_grid[b->qs[k] | (nib & 7) << 8];
            o->neg[k] = (int8_t)(nib >> 3);
        }
        for (int h = 0; h < 16; h++) o->s[h] = (uint8_t)((rd16(b->scales + 2 * (h / 4)) >> (3 * (h % 4))) & 7);
    }
}

static void deq_iq1(ox_type t, const void *blk, float *y) {
    iq1_groups o;
    iq1_groups_of(t, blk, &o);
    for (int k = 0; k < 32; k++, y += 8) {
        float dl = o.d * (2 * o.s[k / 2] + 1), delta = o.neg[k] ? -IQ1_DELTA : IQ1_DELTA;
        for (int j = 0; j < 8; j++) y[j] = dl * (SLANE(o.g[k], j) + delta);
    }
}

static void deq_iq4_nl(const ox_block_iq4_nl *b, float *y) {
    float d = F16(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * ox_kvalues_iq4nl[b->qs[j] & 0xf];
        y[j + 16] = d * ox_kvalues_iq4nl[b->qs[j] >> 4];
    }
}

/* IQ4_XS's 6-bit scale of 32-block ib (stored +32) */
static int iq4_xs_scale(const ox_block_iq4_xs *b, int ib) {
    return (((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4)) - 32;
}

static void deq_iq4_xs(const ox_block_iq4_xs *b, float *y) {
    float d = F16(b->d);
    for (int ib = 0; ib < 8; ib++, y += 32) {
        float dl = d * iq4_xs_scale(b, ib);
        const uint8_t *qs = b->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            y[j] = dl * ox_kvalues_iq4nl[qs[j] & 0xf];
            y[j + 16] = dl * ox_kvalues_iq4nl[qs[j] >> 4];
        }
    }
}

static void deq_tq1_0(const ox_block_tq1_0 *b, float *y) {
    float d = F16(b->d);
    int8_t t[256];
    tq1_0_trits(b, t);
    for (int k = 0; k < 256; k++) y[k] = (float)(t[k] - 1) * d;
}

static void deq_tq2_0(const ox_block_tq2_0 *b, float *y) {
    float d = F16(b->d);
    for (int k = 0; k < 256; k++) y[k] = (float)(tq2_0_trit(b, k) - 1) * d;
}

static void deq_mxfp4(const ox_block_mxfp4 *b, float *y) {
    float d = ox_e8m0_half(b->e);
    for (int j = 0; j < 16; j++) {
        y[j] = ox_kvalues_mxfp4[b->qs[j] & 0xf] * d;
        y[j + 16] = ox_kvalues_mxfp4[b->qs[j] >> 4] * d;
    }
}

int ox_iq_type(ox_type t) {
    switch (t) {
    case OX_IQ2_XXS:
    case OX_IQ2_XS:
    case OX_IQ2_S:
    case OX_IQ3_XXS:
    case OX_IQ3_S:
    case OX_IQ1_S:
    case OX_IQ1_M:
    case OX_IQ4_NL:
    case OX_IQ4_XS:
    case OX_TQ1_0:
    case OX_TQ2_0:
    case OX_MXFP4: return 1;
    default: return 0;
    }
}

void ox_iq_dequantize_row(ox_type t, const void *src, float *dst, size_t n) {
    const uint8_t *p = src;
    size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
    for (size_t i = 0; be && i < n / be; i++, p += bb, dst += be) {
        switch (t) {
        case OX_IQ2_XXS:
        case OX_IQ2_XS:
        case OX_IQ2_S:
        case OX_IQ3_XXS:
        case OX_IQ3_S: deq_sign_grid(t, p, dst); break;
        case OX_IQ1_S:
        case OX_IQ1_M: deq_iq1(t, p, dst); break;
        case OX_IQ4_NL: deq_iq4_nl((const void *)p, dst); break;
        case OX_IQ4_XS: deq_iq4_xs((const void *)p, dst); break;
        case OX_TQ1_0: deq_tq1_0((const void *)p, dst); break;
        case OX_TQ2_0: deq_tq2_0((const void *)p, dst); break;
        case OX_MXFP4: deq_mxfp4((const void *)p, dst); break;
        default: return;
        }
    }
}

/* ------------------------------------------------------------------ scalar dots */

/* ggml's integer sums: per 16 elements (2 s + 1) times the signed grid . q8, summed over the
 * super-block, times d_w d_a, and the constant factor (1/8 IQ2, 1/4 IQ3_XXS, 1 IQ3_S) last */
static float dot_sign_grid(ox_type t, const uint8_t *w, const ox_block_q8_K *y, size_t nb) {
    size_t bb = ox_type_block_bytes(t);
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        sign_groups o;
        iq_sign_groups(t, w + i * bb, &o);
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int h = 0; h < 16; h++) {
            int32_t sumi = 0;
            for (int k = 2 * h; k < 2 * h + 2; k++, q8 += 8)
                for (int j = 0; j < 8; j++) sumi += LANE(o.g[k], j) * q8[j] * (o.sign[k] >> j & 1 ? -1 : 1);
            bsum += sumi * (2 * o.s[h] + 1);
        }
        sumf += o.d * y[i].d * bsum;
    }
    return (t == OX_IQ3_S ? 1.0f : t == OX_IQ3_XXS ? 0.25f : 0.125f) * sumf;
}

/* sum (2 s + 1) grid . q8 and, for the 1/8 shifts, sum (2 s + 1) (+-1) sum(q8) per group */
static float dot_iq1(ox_type t, const uint8_t *w, const ox_block_q8_K *y, size_t nb) {
    size_t bb = ox_type_block_bytes(t);
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        iq1_groups o;
        iq1_groups_of(t, w + i * bb, &o);
        const int8_t *q8 = y[i].qs;
        int sumi1 = 0, sumi2 = 0;
        for (int k = 0; k < 32; k++, q8 += 8) {
            int ls = 2 * o.s[k / 2] + 1, gsum = 0, qsum = 0;
            for (int j = 0; j < 8; j++) {
                gsum += q8[j] * SLANE(o.g[k], j);
                qsum += q8[j];
            }
            sumi1 += ls * gsum;
            sumi2 += ls * (o.neg[k] ? -qsum : qsum);
        }
        sumf += o.d * y[i].d * (sumi1 + IQ1_DELTA * sumi2);
    }
    return sumf;
}

/* IQ4_NL / MXFP4: 16-entry value tables against Q8_0 */
static int lut4_dot32(const int8_t *lut, const uint8_t *qs, const int8_t *q8) {
    int s1 = 0, s2 = 0;
    for (int j = 0; j < 16; j++) {
        s1 += q8[j] * lut[qs[j] & 0xf];
        s2 += q8[j + 16] * lut[qs[j] >> 4];
    }
    return s1 + s2;
}

static float dot_iq4_nl(const ox_block_iq4_nl *x, const ox_block_q8_0 *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) sumf += F16(y[i].d) * F16(x[i].d) * lut4_dot32(ox_kvalues_iq4nl, x[i].qs, y[i].qs);
    return sumf;
}

static float dot_mxfp4(const ox_block_mxfp4 *x, const ox_block_q8_0 *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++)
        sumf += F16(y[i].d) * ox_e8m0_half(x[i].e) * lut4_dot32(ox_kvalues_mxfp4, x[i].qs, y[i].qs);
    return sumf;
}

static float dot_iq4_xs(const ox_block_iq4_xs *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        float d4d8 = F16(x[i].d) * y[i].d;
        for (int ib = 0; ib < 8; ib++)
            sumf += d4d8 * iq4_xs_scale(&x[i], ib) * lut4_dot32(ox_kvalues_iq4nl, x[i].qs + 16 * ib, y[i].qs + 32 * ib);
    }
    return sumf;
}

static float dot_tq1_0(const ox_block_tq1_0 *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        int8_t t[256];
        int sum = 0;
        tq1_0_trits(&x[i], t);
        for (int k = 0; k < 256; k++) sum += (t[k] - 1) * y[i].qs[k];
        sumf += (float)sum * (F16(x[i].d) * y[i].d);
    }
    return sumf;
}

static float dot_tq2_0(const ox_block_tq2_0 *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        int32_t sumi = 0;
        for (int k = 0; k < 256; k++) sumi += y[i].qs[k] * (tq2_0_trit(&x[i], k) - 1);
        sumf += (float)sumi * (y[i].d * F16(x[i].d));
    }
    return sumf;
}

float ox_iq_vec_dot_ref(ox_type t, const void *w, const void *a, size_t n) {
    size_t nb = ox_type_block_elems(t) ? n / ox_type_block_elems(t) : 0;
    switch (t) {
    case OX_IQ2_XXS:
    case OX_IQ2_XS:
    case OX_IQ2_S:
    case OX_IQ3_XXS:
    case OX_IQ3_S: return dot_sign_grid(t, w, a, nb);
    case OX_IQ1_S:
    case OX_IQ1_M: return dot_iq1(t, w, a, nb);
    case OX_IQ4_NL: return dot_iq4_nl(w, a, nb);
    case OX_IQ4_XS: return dot_iq4_xs(w, a, nb);
    case OX_TQ1_0: return dot_tq1_0(w, a, nb);
    case OX_TQ2_0: return dot_tq2_0(w, a, nb);
    case OX_MXFP4: return dot_mxfp4(w, a, nb);
    default: return 0;
    }
}
