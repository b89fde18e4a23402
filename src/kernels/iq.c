/* iq.c — dequantize and scalar reference dots of the i-quants, TQ1_0/TQ2_0 and MXFP4
 * (formats in iq.h). The float expressions are ggml's, operand for operand, so dequantized
 * values are bit-exact; the dots keep ggml's integer sums and float order. */
#include "kernels/iq.h"

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

#define F16(h) ox_f16_to_f32(h)

static uint32_t rd32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; } /* little-endian hosts */
static unsigned rd16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* byte j of a grid word, as the unsigned magnitude (IQ2/IQ3) or signed value (IQ1) */
#define LANE(word, j) ((uint8_t)((word) >> (8 * (j))))
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

/* the 11-bit IQ1_M grid index of group l (0..3) of a 32 */
static unsigned iq1_m_index(const uint8_t *qs, const uint8_t *qh, int l) {
    return qs[l] | ((unsigned)(qh[l / 2] >> (4 * (l % 2))) & 7) << 8;
}

/* IQ1_M's 3-bit scale of half h (0, 1) of 32-block ib */
static int iq1_m_scale(const ox_block_iq1_m *b, int ib, int h) {
    return (rd16(b->scales + 2 * (ib / 2)) >> (6 * (ib % 2) + 3 * h)) & 7;
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

static void deq_iq2_xxs(const ox_block_iq2_xxs *b, float *y) {
    float d = F16(b->d);
    for (int ib = 0; ib < 8; ib++) {
        uint32_t idx = rd32(b->qs + 4 * ib), sg = rd32(b->qs + 4 * ib + 2);
        float db = d * (0.5f + (sg >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++, y += 8) {
            uint64_t g = ox_iq2xxs_grid[(idx >> 8 * l) & 255];
            unsigned s = ox_iq_signs((sg >> 7 * l) & 127);
            for (int j = 0; j < 8; j++) y[j] = db * LANE(g, j) * (s >> j & 1 ? -1.f : 1.f);
        }
    }
}

static void deq_iq2_xs(const ox_block_iq2_xs *b, float *y) {
    float d = F16(b->d);
    for (int ib = 0; ib < 8; ib++) {
        float db[2] = {d * (0.5f + (b->scales[ib] & 0xf)) * 0.25f, d * (0.5f + (b->scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++, y += 8) {
            unsigned q = b->qs[4 * ib + l];
            uint64_t g = ox_iq2xs_grid[q & 511];
            unsigned s = ox_iq_signs(q >> 9);
            for (int j = 0; j < 8; j++) y[j] = db[l / 2] * LANE(g, j) * (s >> j & 1 ? -1.f : 1.f);
        }
    }
}

static void deq_iq2_s(const ox_block_iq2_s *b, float *y) {
    float d = F16(b->d);
    const uint8_t *signs = b->qs + OX_QK_K / 8;
    for (int ib = 0; ib < 8; ib++) {
        float db[2] = {d * (0.5f + (b->scales[ib] & 0xf)) * 0.25f, d * (0.5f + (b->scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++, y += 8) {
            uint64_t g = ox_iq2s_grid[b->qs[4 * ib + l] | ((b->qh[ib] << (8 - 2 * l)) & 0x300)];
            unsigned s = signs[4 * ib + l];
            for (int j = 0; j < 8; j++) y[j] = db[l / 2] * LANE(g, j) * (s >> j & 1 ? -1.f : 1.f);
        }
    }
}

static void deq_iq3_xxs(const ox_block_iq3_xxs *b, float *y) {
    float d = F16(b->d);
    const uint8_t *qs = b->qs, *gas = b->qs + OX_QK_K / 4;
    for (int ib = 0; ib < 8; ib++, qs += 8) {
        uint32_t sg = rd32(gas + 4 * ib);
        float db = d * (0.5f + (sg >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++, y += 8) {
            uint64_t g = ox_iq3xxs_grid[qs[2 * l]] | (uint64_t)ox_iq3xxs_grid[qs[2 * l + 1]] << 32;
            unsigned s = ox_iq_signs((sg >> 7 * l) & 127);
            for (int j = 0; j < 8; j++) y[j] = db * LANE(g, j) * (s >> j & 1 ? -1.f : 1.f);
        }
    }
}

/* IQ3_S grid word of group l (0..3) of 32-block ib: indices qs[8ib + 2l], qs[8ib + 2l + 1]
 * with their ninth bits in qh[ib] (bits 2l, 2l + 1) */
static uint64_t iq3_s_word(const ox_block_iq3_s *b, int ib, int l) {
    unsigned h = b->qh[ib];
    unsigned i0 = b->qs[8 * ib + 2 * l] | ((h << (8 - 2 * l)) & 256), i1 = b->qs[8 * ib + 2 * l + 1] | ((h << (7 - 2 * l)) & 256);
    return ox_iq3s_grid[i0] | (uint64_t)ox_iq3s_grid[i1] << 32;
}

static void deq_iq3_s(const ox_block_iq3_s *b, float *y) {
    float d = F16(b->d);
    for (int ib = 0; ib < 8; ib++) {
        float db = d * (1 + 2 * ((b->scales[ib / 2] >> 4 * (ib % 2)) & 0xf));
        for (int l = 0; l < 4; l++, y += 8) {
            uint64_t g = iq3_s_word(b, ib, l);
            unsigned s = b->signs[4 * ib + l];
            for (int j = 0; j < 8; j++) y[j] = db * LANE(g, j) * (s >> j & 1 ? -1.f : 1.f);
        }
    }
}

static void deq_iq1_s(const ox_block_iq1_s *b, float *y) {
    float d = F16(b->d);
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = b->qh[ib];
        float dl = d * (2 * ((h >> 12) & 7) + 1);
        float delta = h & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
        for (int l = 0; l < 4; l++, y += 8) {
            uint64_t g = ox_iq1s_grid[b->qs[4 * ib + l] | ((h >> 3 * l) & 7) << 8];
            for (int j = 0; j < 8; j++) y[j] = dl * (SLANE(g, j) + delta);
        }
    }
}

static void deq_iq1_m(const ox_block_iq1_m *b, float *y) {
    float d = F16(ox_iq1_m_d(b));
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = b->qs + 4 * ib, *qh = b->qh + 2 * ib;
        for (int l = 0; l < 4; l++, y += 8) {
            float dl = d * (2 * iq1_m_scale(b, ib, l / 2) + 1);
            float delta = qh[l / 2] & (l % 2 ? 0x80 : 0x08) ? -IQ1_DELTA : IQ1_DELTA;
            uint64_t g = ox_iq1s_grid[iq1_m_index(qs, qh, l)];
            for (int j = 0; j < 8; j++) y[j] = dl * (SLANE(g, j) + delta);
        }
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
    case OX_IQ2_XXS: case OX_IQ2_XS: case OX_IQ2_S: case OX_IQ3_XXS: case OX_IQ3_S: case OX_IQ1_S:
    case OX_IQ1_M: case OX_IQ4_NL: case OX_IQ4_XS: case OX_TQ1_0: case OX_TQ2_0: case OX_MXFP4: return 1;
    default: return 0;
    }
}

void ox_iq_dequantize_row(ox_type t, const void *src, float *dst, size_t n) {
    const uint8_t *p = src;
    size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
    for (size_t i = 0; be && i < n / be; i++, p += bb, dst += be) {
        switch (t) {
        case OX_IQ2_XXS: deq_iq2_xxs((const void *)p, dst); break;
        case OX_IQ2_XS: deq_iq2_xs((const void *)p, dst); break;
        case OX_IQ2_S: deq_iq2_s((const void *)p, dst); break;
        case OX_IQ3_XXS: deq_iq3_xxs((const void *)p, dst); break;
        case OX_IQ3_S: deq_iq3_s((const void *)p, dst); break;
        case OX_IQ1_S: deq_iq1_s((const void *)p, dst); break;
        case OX_IQ1_M: deq_iq1_m((const void *)p, dst); break;
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

/* sum over 8 lanes of magnitude * sign * activation */
static int signed_dot8(uint64_t g, unsigned signs, const int8_t *q8) {
    int s = 0;
    for (int j = 0; j < 8; j++) s += LANE(g, j) * q8[j] * (signs >> j & 1 ? -1 : 1);
    return s;
}

static float dot_iq2_xxs(const ox_block_iq2_xxs *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t idx = rd32(x[i].qs + 4 * ib), sg = rd32(x[i].qs + 4 * ib + 2);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                sumi += signed_dot8(ox_iq2xxs_grid[(idx >> 8 * l) & 255], ox_iq_signs((sg >> 7 * l) & 127), q8);
            bsum += sumi * (int32_t)(2 * (sg >> 28) + 1);
        }
        sumf += F16(x[i].d) * y[i].d * bsum;
    }
    return 0.125f * sumf;
}

static float dot_iq2_xs(const ox_block_iq2_xs *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++)
            for (int h = 0; h < 2; h++) {
                int32_t sumi = 0;
                for (int l = 2 * h; l < 2 * h + 2; l++, q8 += 8) {
                    unsigned q = x[i].qs[4 * ib + l];
                    sumi += signed_dot8(ox_iq2xs_grid[q & 511], ox_iq_signs(q >> 9), q8);
                }
                bsum += sumi * (2 * ((x[i].scales[ib] >> 4 * h) & 0xf) + 1);
            }
        sumf += F16(x[i].d) * y[i].d * bsum;
    }
    return 0.125f * sumf;
}

static float dot_iq2_s(const ox_block_iq2_s *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        const uint8_t *signs = x[i].qs + OX_QK_K / 8;
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            int sumi[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8)
                sumi[l / 2] += signed_dot8(ox_iq2s_grid[x[i].qs[4 * ib + l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300)],
                                           signs[4 * ib + l], q8);
            bsum += (1 + 2 * (x[i].scales[ib] & 0xf)) * sumi[0] + (1 + 2 * (x[i].scales[ib] >> 4)) * sumi[1];
        }
        sumf += F16(x[i].d) * y[i].d * bsum;
    }
    return 0.125f * sumf;
}

static float dot_iq3_xxs(const ox_block_iq3_xxs *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        const uint8_t *q3 = x[i].qs, *gas = x[i].qs + OX_QK_K / 4;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++, q3 += 8) {
            uint32_t sg = rd32(gas + 4 * ib);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) {
                uint64_t g = ox_iq3xxs_grid[q3[2 * l]] | (uint64_t)ox_iq3xxs_grid[q3[2 * l + 1]] << 32;
                sumi += signed_dot8(g, ox_iq_signs((sg >> 7 * l) & 127), q8);
            }
            bsum += sumi * (int32_t)(2 * (sg >> 28) + 1);
        }
        sumf += F16(x[i].d) * y[i].d * bsum;
    }
    return 0.25f * sumf;
}

static float dot_iq3_s(const ox_block_iq3_s *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) sumi += signed_dot8(iq3_s_word(&x[i], ib, l), x[i].signs[4 * ib + l], q8);
            bsum += sumi * (int32_t)(2 * ((x[i].scales[ib / 2] >> 4 * (ib % 2)) & 0xf) + 1);
        }
        sumf += F16(x[i].d) * y[i].d * bsum;
    }
    return sumf;
}

static int grid1_dot8(uint64_t g, const int8_t *q8) {
    int s = 0;
    for (int j = 0; j < 8; j++) s += q8[j] * SLANE(g, j);
    return s;
}

static float dot_iq1_s(const ox_block_iq1_s *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        int sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < 8; ib++) {
            unsigned h = x[i].qh[ib];
            int ls = 2 * ((h >> 12) & 7) + 1, delta = h & 0x8000 ? -1 : 1, lsum = 0;
            for (int l = 0; l < 4; l++, q8 += 8) lsum += grid1_dot8(ox_iq1s_grid[x[i].qs[4 * ib + l] | ((h >> 3 * l) & 7) << 8], q8);
            sumi += ls * lsum;
            sumi1 += ls * delta * (y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1]);
        }
        sumf += F16(x[i].d) * y[i].d * (sumi + IQ1_DELTA * sumi1);
    }
    return sumf;
}

static float dot_iq1_m(const ox_block_iq1_m *x, const ox_block_q8_K *y, size_t nb) {
    float sumf = 0;
    for (size_t i = 0; i < nb; i++) {
        const int8_t *q8 = y[i].qs;
        int sumi1 = 0, sumi2 = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x[i].qs + 4 * ib, *qh = x[i].qh + 2 * ib;
            int sum1[2] = {0, 0}, sum2[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8) {
                int delta = qh[l / 2] & (l % 2 ? 0x80 : 0x08) ? -1 : 1, lsum2 = 0;
                for (int j = 0; j < 8; j++) lsum2 += q8[j];
                sum1[l / 2] += grid1_dot8(ox_iq1s_grid[iq1_m_index(qs, qh, l)], q8);
                sum2[l / 2] += lsum2 * delta;
            }
            int ls1 = 2 * iq1_m_scale(&x[i], ib, 0) + 1, ls2 = 2 * iq1_m_scale(&x[i], ib, 1) + 1;
            sumi1 += sum1[0] * ls1 + sum1[1] * ls2;
            sumi2 += sum2[0] * ls1 + sum2[1] * ls2;
        }
        sumf += F16(ox_iq1_m_d(&x[i])) * y[i].d * (sumi1 + IQ1_DELTA * sumi2);
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
    for (size_t i = 0; i < nb; i++)
        sumf += F16(y[i].d) * F16(x[i].d) * lut4_dot32(ox_kvalues_iq4nl, x[i].qs, y[i].qs);
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
    case OX_IQ2_XXS: return dot_iq2_xxs(w, a, nb);
    case OX_IQ2_XS: return dot_iq2_xs(w, a, nb);
    case OX_IQ2_S: return dot_iq2_s(w, a, nb);
    case OX_IQ3_XXS: return dot_iq3_xxs(w, a, nb);
    case OX_IQ3_S: return dot_iq3_s(w, a, nb);
    case OX_IQ1_S: return dot_iq1_s(w, a, nb);
    case OX_IQ1_M: return dot_iq1_m(w, a, nb);
    case OX_IQ4_NL: return dot_iq4_nl(w, a, nb);
    case OX_IQ4_XS: return dot_iq4_xs(w, a, nb);
    case OX_TQ1_0: return dot_tq1_0(w, a, nb);
    case OX_TQ2_0: return dot_tq2_0(w, a, nb);
    case OX_MXFP4: return dot_mxfp4(w, a, nb);
    default: return 0;
    }
}
