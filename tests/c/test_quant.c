/* test_quant.c — block formats: fp16/bf16, dequantize against an independent decoder
 * written here from ggml's block definitions (ggml-common.h / ggml-quants.c loop
 * structure), quantizer round trips, hand-checked Q8_0/Q4_0 blocks, and the reference
 * dots against dequantize(w) . dequantize(quantize(a)). */
#include "check.h"
#include "kernels/quant.h"

#include <stdint.h>
#include <stdlib.h>

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float frand(void) { return (float)rnd() / 16777216.0f * 2.0f - 1.0f; } /* [-1, 1) */

static float bits_to_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t f_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---------------------------------------------------------------- independent decoders */

/* fp16 by its definition: (-1)^s * 2^(e-15) * (1 + m/1024), subnormal 2^-14 * m/1024 */
static double h2d(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) return m ? NAN : s ? -INFINITY : INFINITY;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return s ? -v : v;
}

static void dec_block(ox_type t, const uint8_t *b, double *y) {
#define H(off) h2d((uint16_t)(b[off] | b[(off) + 1] << 8))
    switch (t) {
    case OX_Q4_0:
        for (int j = 0; j < 16; j++) {
            y[j] = H(0) * ((b[2 + j] & 15) - 8);
            y[j + 16] = H(0) * ((b[2 + j] >> 4) - 8);
        }
        break;
    case OX_Q4_1:
        for (int j = 0; j < 16; j++) {
            y[j] = H(0) * (b[4 + j] & 15) + H(2);
            y[j + 16] = H(0) * (b[4 + j] >> 4) + H(2);
        }
        break;
    case OX_Q5_0:
    case OX_Q5_1: {
        int o = t == OX_Q5_0 ? 2 : 4;
        uint32_t qh = b[o] | b[o + 1] << 8 | b[o + 2] << 16 | (uint32_t)b[o + 3] << 24;
        for (int j = 0; j < 16; j++) {
            int x0 = (b[o + 4 + j] & 15) | (((qh >> j) << 4) & 0x10);
            int x1 = (b[o + 4 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
            if (t == OX_Q5_0) {
                y[j] = H(0) * (x0 - 16);
                y[j + 16] = H(0) * (x1 - 16);
            } else {
                y[j] = H(0) * x0 + H(2);
                y[j + 16] = H(0) * x1 + H(2);
            }
        }
    } break;
    case OX_Q8_0:
        for (int j = 0; j < 32; j++) y[j] = H(0) * (int8_t)b[2 + j];
        break;
    case OX_Q8_1:
        for (int j = 0; j < 32; j++) y[j] = H(0) * (int8_t)b[4 + j];
        break;
    case OX_Q8_A:
        for (int j = 0; j < 32; j++) y[j] = H(0) * b[4 + j] + H(2);
        break;      /* d, m, u8 q[32] */
    case OX_Q2_K: { /* scales[16] qs[64] d dmin */
        const uint8_t *sc = b, *q = b + 16;
        double d = H(80), mn = H(82);
        int is = 0;
        for (int n = 0; n < 256; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int half = 0; half < 2; half++, is++)
                    for (int l = 0; l < 16; l++)
                        *y++ = d * (sc[is] & 15) * ((q[l + 16 * half] >> shift) & 3) - mn * (sc[is] >> 4);
    } break;
    case OX_Q3_K: { /* hmask[32] qs[64] scales[12] d */
        const uint8_t *hm = b, *q = b + 32, *s = b + 96;
        double d = H(108);
        int sc[16];
        for (int j = 0; j < 16; j++) {
            uint32_t lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
            uint32_t hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j] = (int)(lo | hi << 4) - 32;
        }
        int is = 0;
        uint8_t m = 1;
        for (int n = 0; n < 256; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int half = 0; half < 2; half++, is++)
                    for (int l = 0; l < 16; l++)
                        *y++ = d * sc[is] * (((q[l + 16 * half] >> shift) & 3) - ((hm[l + 16 * half] & m) ? 0 : 4));
    } break;
    case OX_Q4_K:
    case OX_Q5_K: { /* d dmin scales[12] (qh[32]) qs[128] */
        const uint8_t *s = b + 4, *qh = b + 16, *q = b + (t == OX_Q4_K ? 16 : 48);
        double d = H(0), mn = H(2);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            if (j < 4) {
                sc = s[j] & 63;
                m = s[j + 4] & 63;
            } else {
                sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
                m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
            }
            for (int l = 0; l < 32; l++) {
                int v = (j & 1) ? q[32 * (j / 2) + l] >> 4 : q[32 * (j / 2) + l] & 15;
                if (t == OX_Q5_K && (qh[l] & (1 << j))) v += 16;
                *y++ = d * sc * v - mn * m;
            }
        }
    } break;
    case OX_Q6_K: { /* ql[128] qh[64] scales[16] d */
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        double d = H(208);
        for (int n = 0; n < 2; n++, ql += 64, qh += 32, sc += 8, y += 128)
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                y[l] = d * sc[is] * (((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32);
                y[l + 32] = d * sc[is + 2] * (((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
                y[l + 64] = d * sc[is + 4] * (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                y[l + 96] = d * sc[is + 6] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
    } break;
    case OX_Q8_K: {
        float d;
        memcpy(&d, b, 4);
        for (int j = 0; j < 256; j++) y[j] = (double)d * (int8_t)b[4 + j];
    } break;
    default: break;
    }
#undef H
}

/* ---------------------------------------------------------------- fp16 / bf16 */

static void test_f16(void) {
    /* every half converts to float and back unchanged (NaN stays NaN) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ox_f16_to_f32((ox_f16)h);
        if (((h >> 10) & 31) == 31 && (h & 1023)) {
            bad += !isnan(f);
            continue;
        }
        bad += (double)f != h2d((uint16_t)h) || ox_f32_to_f16(f) != h;
    }
    CHECK_MSG(bad == 0, "%d halves fail the round trip", bad);
    CHECK(ox_f32_to_f16(1.0f) == 0x3c00);
    CHECK(ox_f32_to_f16(0.1f) == 0x2e66);
    CHECK(ox_f32_to_f16(-0.0f) == 0x8000);
    CHECK(ox_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(ox_f32_to_f16(65519.99f) == 0x7bff);
    CHECK(ox_f32_to_f16(65520.0f) == 0x7c00); /* tie rounds to even: inf */
    CHECK(ox_f32_to_f16(1e10f) == 0x7c00);
    CHECK(ox_f32_to_f16(ldexpf(1, -24)) == 0x0001);
    CHECK(ox_f32_to_f16(ldexpf(1, -25)) == 0x0000); /* tie to even: 0 */
    CHECK(ox_f32_to_f16(ldexpf(1.5f, -25)) == 0x0001);
    CHECK(ox_f32_to_f16(ldexpf(3, -25)) == 0x0002);        /* 1.5 ulp tie -> even 2 */
    CHECK(ox_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00); /* tie -> even */
    CHECK(ox_f32_to_f16(1.0f + ldexpf(3, -11)) == 0x3c02);
    CHECK((ox_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
    /* random floats round to the nearest half (ties to even) */
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f = ldexpf(frand(), (int)(rnd() % 40) - 28);
        uint16_t h = ox_f32_to_f16(f);
        double e = fabs(h2d(h) - f);
        for (int k = -1; k <= 1; k += 2) {
            uint16_t n = (uint16_t)(h + k);
            if ((n & 0x7fff) >= 0x7c00 || ((n ^ h) & 0x8000)) continue;
            double en = fabs(h2d(n) - f);
            if (en < e || (en == e && (h & 1))) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d floats not rounded to nearest-even half", bad);
}

static void test_bf16(void) {
    CHECK(ox_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(ox_f32_to_bf16(bits_to_f(0x3f808000)) == 0x3f80); /* tie -> even */
    CHECK(ox_f32_to_bf16(bits_to_f(0x3f818000)) == 0x3f82);
    CHECK(ox_f32_to_bf16(bits_to_f(0x3f808001)) == 0x3f81);
    CHECK(ox_f32_to_bf16(bits_to_f(0x7f7fffff)) == 0x7f80); /* overflow to inf */
    CHECK((ox_f32_to_bf16(NAN) & 0x7fff) > 0x7f80);
    CHECK(ox_bf16_to_f32(0xc000) == -2.0f);
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
        bad += ox_f32_to_bf16(ox_bf16_to_f32((uint16_t)h)) != h || f_to_bits(ox_bf16_to_f32((uint16_t)h)) != h << 16;
    }
    CHECK(bad == 0);
}

/* ---------------------------------------------------------------- dequantize */

static const ox_type QTYPES[] = {OX_Q4_0, OX_Q4_1, OX_Q5_0, OX_Q5_1, OX_Q8_0, OX_Q8_1, OX_Q2_K,
                                 OX_Q3_K, OX_Q4_K, OX_Q5_K, OX_Q6_K, OX_Q8_K, OX_Q8_A};
#define NQ (int)(sizeof QTYPES / sizeof QTYPES[0])

/* Random block bytes, then sane scales (fp16 fields in [-2, 2]) at the field offsets. */
static void random_block(ox_type t, uint8_t *b) {
    size_t bb = ox_type_block_bytes(t);
    for (size_t i = 0; i < bb; i++) b[i] = (uint8_t)rnd();
    int offs[2] = {-1, -1};
    switch (t) {
    case OX_Q4_0:
    case OX_Q5_0:
    case OX_Q8_0: offs[0] = 0; break;
    case OX_Q4_1:
    case OX_Q5_1:
    case OX_Q8_1:
    case OX_Q8_A:
    case OX_Q4_K:
    case OX_Q5_K:
        offs[0] = 0;
        offs[1] = 2;
        break;
    case OX_Q2_K:
        offs[0] = 80;
        offs[1] = 82;
        break;
    case OX_Q3_K: offs[0] = 108; break;
    case OX_Q6_K: offs[0] = 208; break;
    case OX_Q8_K: {
        float d = frand();
        memcpy(b, &d, 4);
    } break;
    default: break;
    }
    for (int k = 0; k < 2; k++)
        if (offs[k] >= 0) {
            uint16_t h = ox_f32_to_f16(2 * frand());
            b[offs[k]] = (uint8_t)h;
            b[offs[k] + 1] = (uint8_t)(h >> 8);
        }
}

static void test_facts(void) {
    CHECK(ox_type_block_bytes(OX_Q4_0) == 18 && ox_type_block_bytes(OX_Q6_K) == 210);
    CHECK(ox_type_block_bytes(OX_Q8_K) == 292 && ox_type_block_elems(OX_Q2_K) == 256);
    CHECK(ox_type_vec_dot(OX_Q4_0) == OX_Q8_0 && ox_type_vec_dot(OX_Q5_1) == OX_Q8_1);
    CHECK(ox_type_vec_dot(OX_Q3_K) == OX_Q8_K && ox_type_vec_dot(OX_BF16) == OX_F32);
    CHECK(ox_type_block_bytes(OX_Q8_A) == 36 && ox_type_vec_dot(OX_Q8_A) == OX_Q8_1 &&
          strcmp(ox_type_name(OX_Q8_A), "Q8_A") == 0);
    CHECK(strcmp(ox_type_name(OX_Q5_K), "Q5_K") == 0);
    CHECK(ox_type_name((ox_type)4) == NULL && !ox_type_known(4) && !ox_type_known(-1) && !ox_type_known(99));
    uint64_t rb = 0;
    ox_err e = {0};
    CHECK(ox_row_bytes(OX_Q4_K, 512, &rb, &e) == 0 && rb == 288);
    CHECK(ox_row_bytes(OX_Q4_K, 100, &rb, &e) == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "Q4_K");
    CHECK(ox_row_bytes(OX_Q8_0, UINT64_MAX - 31, &rb, &e) == OX_E_RANGE);
    CHECK(ox_row_bytes((ox_type)5, 32, &rb, &e) == OX_E_UNSUPPORTED);
}

static void test_dequantize(void) {
    uint8_t buf[4 * 292];
    float y[1024];
    double ref[256];
    for (int k = 0; k < NQ; k++) {
        ox_type t = QTYPES[k];
        size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
        int bad = 0;
        for (int rep = 0; rep < 50; rep++) {
            for (int b = 0; b < 4; b++) random_block(t, buf + b * bb);
            ox_dequantize_row(t, buf, y, 4 * be);
            for (int b = 0; b < 4; b++) {
                dec_block(t, buf + b * bb, ref);
                for (size_t j = 0; j < be; j++)
                    if (fabs(y[b * be + j] - ref[j]) > 1e-6 * (fabs(ref[j]) + 1)) bad++;
            }
        }
        CHECK_MSG(bad == 0, "%s: %d values differ from the independent decoder", ox_type_name(t), bad);
    }
    /* float types */
    uint16_t h[3] = {0x3c00, 0xc000, 0x0001};
    ox_dequantize_row(OX_F16, h, y, 3);
    CHECK(y[0] == 1.0f && y[1] == -2.0f && y[2] == ldexpf(1, -24));
    uint16_t bf[2] = {0x3f80, 0x4049};
    ox_dequantize_row(OX_BF16, bf, y, 2);
    CHECK(y[0] == 1.0f && y[1] == bits_to_f(0x40490000));
}

/* ---------------------------------------------------------------- quantizers */

static void test_q8_0_known(void) {
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    x[0] = 127;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.5f;
    x[4] = -0.5f;
    x[5] = 1.49f;
    ox_block_q8_0 b;
    CHECK(ox_quantize_row(OX_Q8_0, x, &b, 32) == 0);
    CHECK(b.d == 0x3c00); /* d = 127/127 = 1 */
    /* roundf: halves away from zero */
    CHECK(b.qs[0] == 127 && b.qs[1] == 3 && b.qs[2] == -3 && b.qs[3] == 1 && b.qs[4] == -1 && b.qs[5] == 1);
    int ok = 1;
    for (int j = 6; j < 32; j++) ok &= b.qs[j] == j - 16;
    CHECK(ok);

    /* d = 1/127 is not a half: stored 0x2008 (2^-7 * 1032/1024), quants use the f32 d */
    for (int j = 0; j < 32; j++) x[j] = 0.3f;
    x[7] = -1.0f;
    CHECK(ox_quantize_row(OX_Q8_0, x, &b, 32) == 0);
    CHECK(b.d == 0x2008);
    CHECK(b.qs[7] == -127 && b.qs[0] == 38 && b.qs[31] == 38); /* 0.3 * 127 = 38.1 */

    /* tiny block: 1/d overflows; quants 0 instead of an undefined conversion */
    for (int j = 0; j < 32; j++) x[j] = ldexpf(1, -140);
    CHECK(ox_quantize_row(OX_Q8_0, x, &b, 32) == 0);
    CHECK(b.d == 0 && b.qs[0] == 0);
    ox_block_q4_0 b4;
    CHECK(ox_quantize_row(OX_Q4_0, x, &b4, 32) == 0);
    CHECK((b4.d & 0x7fff) == 0 && b4.qs[0] == 0x88); /* d = -0 */
    /* all zeros: d = 0, q = 0 */
    memset(x, 0, sizeof x);
    CHECK(ox_quantize_row(OX_Q8_0, x, &b, 32) == 0);
    CHECK(b.d == 0 && b.qs[0] == 0 && b.qs[31] == 0);
}

static void test_q4_0_known(void) {
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16); /* largest |x| is x[0] = -16 */
    ox_block_q4_0 b;
    CHECK(ox_quantize_row(OX_Q4_0, x, &b, 32) == 0);
    CHECK(b.d == 0x4000); /* d = -16 / -8 = 2 */
    /* q = min(15, (int8)(x/2 + 8.5)): 0,1,1,2,2,...; element j low nibble, j+16 high */
    static const uint8_t want[16] = {0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4,
                                     0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
    CHECK(memcmp(b.qs, want, 16) == 0);

    /* positive max: x[5] = 4 wins over -3.9; d = 4/-8 = -0.5; x=4 -> (int8)(-8+8.5) = 0 */
    for (int j = 0; j < 32; j++) x[j] = 0;
    x[5] = 4.0f;
    x[6] = -3.9f;
    x[20] = 1.0f;
    x[9] = 4.0f; /* tie in |x|: first one kept */
    CHECK(ox_quantize_row(OX_Q4_0, x, &b, 32) == 0);
    CHECK(b.d == 0xb800);        /* -0.5 */
    CHECK((b.qs[5] & 15) == 0);  /* 4 / -0.5 + 8.5 = 0.5 -> 0 */
    CHECK((b.qs[6] & 15) == 15); /* 7.8 + 8.5 = 16.3 -> 16 -> min 15 */
    CHECK((b.qs[4] >> 4) == 6);  /* x[20] = 1: -2 + 8.5 = 6.5 -> 6 */
    CHECK((b.qs[0] & 15) == 8 && (b.qs[0] >> 4) == 8);
}

static double block_err(ox_type t, const float *x, int n, double *rms) {
    uint8_t q[16 * 292];
    float y[4096];
    CHECK(ox_quantize_row(t, x, q, (size_t)n) == 0);
    ox_dequantize_row(t, q, y, (size_t)n);
    double se = 0, sx = 0;
    for (int i = 0; i < n; i++) {
        se += (y[i] - x[i]) * (double)(y[i] - x[i]);
        sx += (double)x[i] * x[i];
    }
    *rms = sqrt(sx / n);
    return sqrt(se / n);
}

static void test_roundtrip(void) {
    /* relative RMS error bounds per type for N(0,1)-ish data (sum of uniforms) */
    static const struct {
        ox_type t;
        double bound;
    } B[] = {{OX_Q8_0, 0.01}, {OX_Q8_1, 0.01}, {OX_Q8_K, 0.01}, {OX_Q4_0, 0.12}, {OX_Q4_1, 0.1},
             {OX_Q5_0, 0.06}, {OX_Q5_1, 0.05}, {OX_Q2_K, 0.45}, {OX_Q3_K, 0.25}, {OX_Q4_K, 0.12},
             {OX_Q5_K, 0.06}, {OX_Q6_K, 0.03}, {OX_Q8_A, 0.006}};
    float x[4096];
    for (size_t k = 0; k < sizeof B / sizeof B[0]; k++) {
        double worst = 0;
        for (int rep = 0; rep < 20; rep++) {
            for (int i = 0; i < 1024; i++) x[i] = (frand() + frand() + frand()) * (rep + 1) * 0.1f;
            if (rep == 3)
                for (int i = 0; i < 1024; i += 7) x[i] = 0; /* sparse */
            if (rep == 4)
                for (int i = 0; i < 1024; i++) x[i] = fabsf(x[i]); /* one-signed */
            double rms, e = block_err(B[k].t, x, 1024, &rms);
            if (e / rms > worst) worst = e / rms;
        }
        CHECK_MSG(worst < B[k].bound, "%s: relative rms error %.4f >= %.3f", ox_type_name(B[k].t), worst, B[k].bound);
        CHECK_MSG(worst > B[k].bound / 20, "%s: error %.5f suspiciously small", ox_type_name(B[k].t), worst);
    }
    /* Q8_0 per element: |x - y| <= d/2 (+ fp16 rounding of d) */
    for (int i = 0; i < 1024; i++) x[i] = frand() * 3;
    ox_block_q8_0 q[32];
    float y[1024];
    ox_quantize_row(OX_Q8_0, x, q, 1024);
    ox_dequantize_row(OX_Q8_0, q, y, 1024);
    int bad = 0;
    for (int i = 0; i < 1024; i++) {
        double d = ox_f16_to_f32(q[i / 32].d);
        bad += fabs(y[i] - x[i]) > d * 0.5 + fabs(x[i]) * 1e-3;
    }
    CHECK(bad == 0);
    /* Q8_1 s = d * sum(q), Q8_K bsums = sums of 16 */
    ox_block_q8_1 q1[32];
    ox_quantize_row(OX_Q8_1, x, q1, 1024);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += q1[3].qs[j];
    CHECK_NEAR(ox_f16_to_f32(q1[3].s), sum * ox_f16_to_f32(q1[3].d), fabs(sum * ox_f16_to_f32(q1[3].d)) * 1e-3 + 1e-6);
    ox_block_q8_K qk[4];
    ox_quantize_row(OX_Q8_K, x, qk, 1024);
    sum = 0;
    for (int j = 32; j < 48; j++) sum += qk[1].qs[j];
    CHECK(qk[1].bsums[2] == sum);
    /* Q8_K: the largest |x| maps to -127 */
    int amax_i = 0;
    for (int i = 0; i < 256; i++)
        if (fabsf(x[i]) > fabsf(x[amax_i])) amax_i = i;
    CHECK(qk[0].qs[amax_i] == -127);
    /* unsupported target / size */
    CHECK(ox_quantize_row(OX_Q8_0, x, q, 33) == OX_E_UNSUPPORTED);
    CHECK(ox_quantize_row((ox_type)4, x, q, 32) == OX_E_UNSUPPORTED);
}

/* ---------------------------------------------------------------- reference dots */

static void test_vec_dot(void) {
    static const ox_type T[] = {OX_F32,  OX_F16,  OX_BF16, OX_Q4_0, OX_Q4_1, OX_Q5_0, OX_Q5_1,
                                OX_Q8_0, OX_Q2_K, OX_Q3_K, OX_Q4_K, OX_Q5_K, OX_Q6_K, OX_Q8_A};
    enum { N = 1024 };
    static float x[N], a[N], wd[N], ad[N];
    static uint8_t w[N * 4], aq[N * 4];
    for (size_t k = 0; k < sizeof T / sizeof T[0]; k++) {
        ox_type t = T[k], at = ox_type_vec_dot(t);
        int bad = 0;
        for (int rep = 0; rep < 10; rep++) {
            for (int i = 0; i < N; i++) {
                x[i] = frand() + 0.2f * rep * frand();
                a[i] = frand() * (1 + rep);
            }
            CHECK(ox_quantize_row(t, x, w, N) == 0);
            ox_dequantize_row(t, w, wd, N);
            const void *av = a;
            if (at != OX_F32) {
                CHECK(ox_quantize_row(at, a, aq, N) == 0);
                ox_dequantize_row(at, aq, ad, N);
                av = aq;
            } else memcpy(ad, a, sizeof a);
            double want = 0, mag = 0;
            for (int i = 0; i < N; i++) {
                want += (double)wd[i] * ad[i];
                mag += fabs((double)wd[i] * ad[i]);
            }
            double got = ox_vec_dot_ref(t, w, av, N);
            /* Q4_1/Q5_1 use the fp16-rounded block sum s of Q8_1: 2^-11 relative on the min term */
            double tol = mag * ((at == OX_Q8_1 && t != OX_Q8_A) ? 2e-3 : 1e-5); /* Q8_A: exact sums */
            if (fabs(got - want) > tol) {
                bad++;
                fprintf(stderr, "%s rep %d: dot %.9g, dequantized %.9g\n", ox_type_name(t), rep, got, want);
            }
        }
        CHECK_MSG(bad == 0, "%s: vec_dot_ref disagrees", ox_type_name(t));
    }
}

int main(void) {
    RUN(test_facts);
    RUN(test_f16);
    RUN(test_bf16);
    RUN(test_dequantize);
    RUN(test_q8_0_known);
    RUN(test_q4_0_known);
    RUN(test_roundtrip);
    RUN(test_vec_dot);
    return check_summary("test_quant");
}
