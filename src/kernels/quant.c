/* quant.c — ggml block formats: dequantize, quantize and the
 * scalar reference dots. Layouts and rounding follow ggml (ggml-common.h, ggml-quants.c). */
#include "kernels/quant.h"
#include "kernels/iq.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(ox_block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(ox_block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(ox_block_q5_0) == 22, "q5_0 block");
_Static_assert(sizeof(ox_block_q5_1) == 24, "q5_1 block");
_Static_assert(sizeof(ox_block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(ox_block_q8_1) == 36, "q8_1 block");
_Static_assert(sizeof(ox_block_q8_a) == 36, "q8_a block");
_Static_assert(sizeof(ox_block_q2_K) == 84, "q2_K block");
_Static_assert(sizeof(ox_block_q3_K) == 110, "q3_K block");
_Static_assert(sizeof(ox_block_q4_K) == 144, "q4_K block");
_Static_assert(sizeof(ox_block_q5_K) == 176, "q5_K block");
_Static_assert(sizeof(ox_block_q6_K) == 210, "q6_K block");
_Static_assert(sizeof(ox_block_q8_K) == 292, "q8_K block");

/* ggml's quantizers compute x*id + c in two roundings; an FMA would change the result. */
#if defined(__GNUC__) && !defined(__clang__)
#define OX_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#pragma STDC FP_CONTRACT OFF
#define OX_NO_CONTRACT
#endif

#define F16(h) ox_f16_to_f32(h) /* types.c */

/* ------------------------------------------------------------------ K-quant scale helpers */

/* Q4_K / Q5_K: 8 six-bit (scale, min) pairs packed into 12 bytes. */
static void scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void set_scale_min_k4(int j, uint8_t *q, int sc, int m) {
    if (j < 4) {
        q[j] = (uint8_t)((q[j] & 0xC0) | sc);
        q[j + 4] = (uint8_t)((q[j + 4] & 0xC0) | m);
    } else {
        q[j + 4] = (uint8_t)((sc & 0xF) | ((m & 0xF) << 4));
        q[j - 4] = (uint8_t)((q[j - 4] & 0x3F) | ((sc >> 4) << 6));
        q[j] = (uint8_t)((q[j] & 0x3F) | ((m >> 4) << 6));
    }
}

/* Q3_K: 16 six-bit scales (stored +32): low nibbles in bytes 0..7, high 2 bits in 8..11. */
static int scale_q3_k(int j, const uint8_t *s) {
    int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* ------------------------------------------------------------------ dequantize */

static void deq_q4_0(const ox_block_q4_0 *b, float *y) {
    float d = F16(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = ((b->qs[j] & 0xF) - 8) * d;
        y[j + 16] = ((b->qs[j] >> 4) - 8) * d;
    }
}

static void deq_q4_1(const ox_block_q4_1 *b, float *y) {
    float d = F16(b->d), m = F16(b->m);
    for (int j = 0; j < 16; j++) {
        y[j] = (b->qs[j] & 0xF) * d + m;
        y[j + 16] = (b->qs[j] >> 4) * d + m;
    }
}

static uint32_t load_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q5_0/Q5_1: 5-bit values, the fifth bits of elements 0..31 in the 32-bit qh. */
static void q5_values(const uint8_t *qs, const uint8_t *qh4, int *v) {
    uint32_t qh = load_u32(qh4);
    for (int j = 0; j < 16; j++) {
        v[j] = (qs[j] & 0xF) | (((qh >> j) & 1) << 4);
        v[j + 16] = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    }
}

static void deq_q5_0(const ox_block_q5_0 *b, float *y) {
    float d = F16(b->d);
    int v[32];
    q5_values(b->qs, b->qh, v);
    for (int j = 0; j < 32; j++) y[j] = (v[j] - 16) * d;
}

static void deq_q5_1(const ox_block_q5_1 *b, float *y) {
    float d = F16(b->d), m = F16(b->m);
    int v[32];
    q5_values(b->qs, b->qh, v);
    for (int j = 0; j < 32; j++) y[j] = v[j] * d + m;
}

static void deq_q8_0(const ox_block_q8_0 *b, float *y) {
    float d = F16(b->d);
    for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d;
}

static void deq_q8_a(const ox_block_q8_a *b, float *y) {
    float d = F16(b->d), m = F16(b->m);
    for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d + m;
}

static void deq_q8_1(const ox_block_q8_1 *b, float *y) {
    float d = F16(b->d);
    for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d;
}

/* Integer values and per-16 scales of the K-quants, shared by dequantize and the dots:
 * element k = (q[k] * sc[k/16] - mn[k/16]) in units of (d, dmin). */
static void q2_k_ints(const ox_block_q2_K *b, int8_t *q, int *sc, int *mn) {
    for (int j = 0; j < 16; j++) {
        sc[j] = b->scales[j] & 0xF;
        mn[j] = b->scales[j] >> 4;
    }
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128, shift = 2 * (r / 32), l = r % 32;
        q[k] = (int8_t)((b->qs[32 * half + l] >> shift) & 3);
    }
}

static void q3_k_ints(const ox_block_q3_K *b, int8_t *q, int *sc) {
    for (int j = 0; j < 16; j++) sc[j] = scale_q3_k(j, b->scales);
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128, shift = 2 * (r / 32), l = r % 32;
        int lo = (b->qs[32 * half + l] >> shift) & 3;
        int hbit = (b->hmask[l] >> (4 * half + r / 32)) & 1;
        q[k] = (int8_t)(lo - (hbit ? 0 : 4));
    }
}

/* Q4_K/Q5_K: 8 sub-blocks of 32; sub-block 2i uses low nibbles of qs[32i..], 2i+1 high. */
static void q45_k_ints(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, int8_t *q, int *sc, int *mn) {
    for (int j = 0; j < 8; j++) scale_min_k4(j, scales, &sc[j], &mn[j]);
    for (int k = 0; k < 256; k++) {
        int sub = k / 32, l = k % 32;
        int v = (sub & 1) ? qs[32 * (sub / 2) + l] >> 4 : qs[32 * (sub / 2) + l] & 0xF;
        if (qh) v |= ((qh[l] >> sub) & 1) << 4;
        q[k] = (int8_t)v;
    }
}

static void q6_k_ints(const ox_block_q6_K *b, int8_t *q) {
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128, quarter = r / 32, l = r % 32;
        const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
        /* quarter 0: ql[l] low, 1: ql[l+32] low, 2: ql[l] high, 3: ql[l+32] high */
        int lo = (quarter < 2) ? (ql[l + 32 * quarter] & 0xF) : (ql[l + 32 * (quarter - 2)] >> 4);
        int hi = (qh[l] >> (2 * quarter)) & 3;
        q[k] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

static void deq_q2_k(const ox_block_q2_K *b, float *y) {
    int8_t q[256];
    int sc[16], mn[16];
    q2_k_ints(b, q, sc, mn);
    float d = F16(b->d), dmin = F16(b->dmin);
    for (int k = 0; k < 256; k++) y[k] = d * sc[k / 16] * q[k] - dmin * mn[k / 16];
}

static void deq_q3_k(const ox_block_q3_K *b, float *y) {
    int8_t q[256];
    int sc[16];
    q3_k_ints(b, q, sc);
    float d = F16(b->d);
    for (int k = 0; k < 256; k++) y[k] = d * sc[k / 16] * q[k];
}

static void deq_q4_k(const ox_block_q4_K *b, float *y) {
    int8_t q[256];
    int sc[8], mn[8];
    q45_k_ints(b->scales, b->qs, NULL, q, sc, mn);
    float d = F16(b->d), dmin = F16(b->dmin);
    for (int k = 0; k < 256; k++) y[k] = d * sc[k / 32] * q[k] - dmin * mn[k / 32];
}

static void deq_q5_k(const ox_block_q5_K *b, float *y) {
    int8_t q[256];
    int sc[8], mn[8];
    q45_k_ints(b->scales, b->qs, b->qh, q, sc, mn);
    float d = F16(b->d), dmin = F16(b->dmin);
    for (int k = 0; k < 256; k++) y[k] = d * sc[k / 32] * q[k] - dmin * mn[k / 32];
}

static void deq_q6_k(const ox_block_q6_K *b, float *y) {
    int8_t q[256];
    q6_k_ints(b, q);
    float d = F16(b->d);
    for (int k = 0; k < 256; k++) y[k] = d * b->scales[k / 16] * q[k];
}

static void deq_q8_k(const ox_block_q8_K *b, float *y) {
    for (int k = 0; k < 256; k++) y[k] = b->d * b->qs[k];
}

void ox_dequantize_row(ox_type t, const void *src, float *dst, size_t n) {
    const uint8_t *p = src;
    size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
    if (t == OX_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    if (t == OX_F16 || t == OX_BF16) { /* separate loops so each vectorizes */
        uint16_t h;
        if (t == OX_F16)
            for (size_t i = 0; i < n; i++) {
                memcpy(&h, p + 2 * i, 2);
                dst[i] = ox_f16_to_f32(h);
            }
        else
            for (size_t i = 0; i < n; i++) {
                memcpy(&h, p + 2 * i, 2);
                dst[i] = ox_bf16_to_f32(h);
            }
        return;
    }
    if (!be) return;
    if (ox_iq_type(t)) {
        ox_iq_dequantize_row(t, src, dst, n);
        return;
    }
    for (size_t i = 0; i < n / be; i++, p += bb, dst += be) {
        switch (t) {
        case OX_Q4_0: deq_q4_0((const void *)p, dst); break;
        case OX_Q4_1: deq_q4_1((const void *)p, dst); break;
        case OX_Q5_0: deq_q5_0((const void *)p, dst); break;
        case OX_Q5_1: deq_q5_1((const void *)p, dst); break;
        case OX_Q8_0: deq_q8_0((const void *)p, dst); break;
        case OX_Q8_1: deq_q8_1((const void *)p, dst); break;
        case OX_Q8_A: deq_q8_a((const void *)p, dst); break;
        case OX_Q2_K: deq_q2_k((const void *)p, dst); break;
        case OX_Q3_K: deq_q3_k((const void *)p, dst); break;
        case OX_Q4_K: deq_q4_k((const void *)p, dst); break;
        case OX_Q5_K: deq_q5_k((const void *)p, dst); break;
        case OX_Q6_K: deq_q6_k((const void *)p, dst); break;
        case OX_Q8_K: deq_q8_k((const void *)p, dst); break;
        default: return;
        }
    }
}

/* ------------------------------------------------------------------ quantize */

static float absmax(const float *x, int n, float *signed_max) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    if (signed_max) *signed_max = max;
    return amax;
}

static void minmax(const float *x, int n, float *mn, float *mx) {
    float lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < n; j++) {
        lo = x[j] < lo ? x[j] : lo;
        hi = x[j] > hi ? x[j] : hi;
    }
    *mn = lo;
    *mx = hi;
}

/* 1/d as ggml computes it (0 for d = 0); also 0 where 1/d overflows (|d| < 2^-128), which
 * ggml leaves to an undefined float -> int conversion. */
static float inv_or_zero(float d) {
    float id = d ? 1.0f / d : 0.0f;
    return isinf(id) ? 0.0f : id;
}

/* round half to even for |v| < 2^22, as ggml's nearest_int */
static int nearest_int(float v) {
    float val = v + 12582912.f;
    int32_t i;
    memcpy(&i, &val, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* |v| <= 127 unless the block holds Inf/NaN (corrupt weights) or a subnormal absmax (1/d
 * overflows): converting those to an integer is undefined behaviour, so clamp; NaN -> 0. */
static int8_t round_q8(float v) { return v >= 127.f ? 127 : v <= -127.f ? -127 : v == v ? (int8_t)roundf(v) : 0; }
/* ggml's (int8_t)v in the legacy quantizers, where v >= 0.5 for finite weights: the cast is
 * undefined for NaN / out-of-range v (non-finite weights), so clamp to [0, 127]; NaN -> 0. */
static int trunc_q(float v) { return v >= 127.f ? 127 : v > 0.f ? (int)v : 0; }

static void quant_q8_0(const float *x, ox_block_q8_0 *b) {
    float d = absmax(x, 32, NULL) / 127, id = inv_or_zero(d);
    b->d = ox_f32_to_f16(d);
    for (int j = 0; j < 32; j++) b->qs[j] = round_q8(x[j] * id);
}

static void quant_q8_1(const float *x, ox_block_q8_1 *b) {
    float d = absmax(x, 32, NULL) / 127, id = inv_or_zero(d);
    int sum = 0;
    b->d = ox_f32_to_f16(d);
    for (int j = 0; j < 32; j++) {
        b->qs[j] = round_q8(x[j] * id);
        sum += b->qs[j];
    }
    b->s = ox_f32_to_f16(sum * d);
}

OX_NO_CONTRACT static void quant_q4_0(const float *x, ox_block_q4_0 *b) {
    float max;
    absmax(x, 32, &max);
    float d = max / -8, id = inv_or_zero(d);
    b->d = ox_f32_to_f16(d);
    for (int j = 0; j < 16; j++) {
        float x0 = x[j] * id, x1 = x[j + 16] * id;
        int q0 = trunc_q(x0 + 8.5f), q1 = trunc_q(x1 + 8.5f);
        b->qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
}

/* The min/max fit of a 32-block with a min (Q4_1, Q8_A): d = range / levels and m = the min,
 * stored as f16; returns 1/d (0 for a flat block) and the min. */
OX_NO_CONTRACT static float fit_min_max(const float *x, int levels, ox_f16 *d16, ox_f16 *m16, float *mn) {
    float mx;
    minmax(x, 32, mn, &mx);
    float d = (mx - *mn) / (float)levels;
    *d16 = ox_f32_to_f16(d);
    *m16 = ox_f32_to_f16(*mn);
    return inv_or_zero(d);
}

OX_NO_CONTRACT static void quant_q4_1(const float *x, ox_block_q4_1 *b) {
    float mn, id = fit_min_max(x, 15, &b->d, &b->m, &mn);
    for (int j = 0; j < 16; j++) {
        float x0 = (x[j] - mn) * id, x1 = (x[j + 16] - mn) * id;
        int q0 = trunc_q(x0 + 0.5f), q1 = trunc_q(x1 + 0.5f);
        b->qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
    }
}

/* As quant_q4_1 with 255 levels (MLX's affine fit: the min as m, the range over 255 as d). */
OX_NO_CONTRACT static void quant_q8_a(const float *x, ox_block_q8_a *b) {
    float mn, id = fit_min_max(x, 255, &b->d, &b->m, &mn);
    for (int j = 0; j < 32; j++) {
        float v = (x[j] - mn) * id + 0.5f;
        b->qs[j] = (uint8_t)(v >= 255.f ? 255 : v > 0.f ? (int)v : 0);
    }
}

static void pack_q5(const int *q, uint8_t *qs, uint8_t *qh4) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0xF) | (q[j + 16] & 0xF) << 4);
        qh |= (uint32_t)(q[j] >> 4) << j | (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; k++) qh4[k] = (uint8_t)(qh >> (8 * k));
}

OX_NO_CONTRACT static void quant_q5_0(const float *x, ox_block_q5_0 *b) {
    float max;
    absmax(x, 32, &max);
    float d = max / -16, id = inv_or_zero(d);
    int q[32];
    b->d = ox_f32_to_f16(d);
    for (int j = 0; j < 32; j++) {
        float xs = x[j] * id;
        int v = trunc_q(xs + 16.5f);
        q[j] = v < 31 ? v : 31;
    }
    pack_q5(q, b->qs, b->qh);
}

OX_NO_CONTRACT static void quant_q5_1(const float *x, ox_block_q5_1 *b) {
    float mn, mx;
    minmax(x, 32, &mn, &mx);
    float d = (mx - mn) / 31, id = inv_or_zero(d);
    int q[32];
    b->d = ox_f32_to_f16(d);
    b->m = ox_f32_to_f16(mn);
    for (int j = 0; j < 32; j++) {
        float xs = (x[j] - mn) * id;
        int v = trunc_q(xs + 0.5f);
        q[j] = v < 31 ? v : 31;
    }
    pack_q5(q, b->qs, b->qh);
}

static void quant_q8_k(const float *x, ox_block_q8_K *b) {
    float max, amax = absmax(x, 256, &max);
    memset(b->bsums, 0, sizeof b->bsums);
    float iscale = amax ? -127.f / max : 0;
    if (!amax || isinf(iscale)) {
        b->d = 0;
        memset(b->qs, 0, sizeof b->qs);
        return;
    }
    for (int j = 0; j < 256; j++) {
        int v = nearest_int(iscale * x[j]);
        b->qs[j] = (int8_t)(v < 127 ? v : 127);
        b->bsums[j / 16] = (int16_t)(b->bsums[j / 16] + b->qs[j]);
    }
    b->d = 1 / iscale;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Asymmetric K-quants (Q2_K, Q4_K, Q5_K): per sub-block of `sub` elements a scale and a
 * min (x ~ q*scale - min, q in [0, qmax]), both quantized to `sbits` bits against the
 * super-block d / dmin. Simple min/max fit: valid blocks, not ggml's optimal search. */
static void fit_asym(const float *x, int nsub, int sub, int qmax, int smax, float *d, float *dmin, int *L, int *M,
                     int8_t *q) {
    float scale[16], mins[16], maxs = 0, maxm = 0;
    for (int s = 0; s < nsub; s++) {
        float mn, mx;
        minmax(x + s * sub, sub, &mn, &mx);
        if (mn > 0) mn = 0;
        scale[s] = (mx - mn) / qmax;
        mins[s] = -mn;
        if (scale[s] > maxs) maxs = scale[s];
        if (mins[s] > maxm) maxm = mins[s];
    }
    *d = maxs / smax;
    *dmin = maxm / smax;
    /* round d/dmin through fp16 first so the integer scales see the stored values */
    float dq = ox_f16_to_f32(ox_f32_to_f16(*d)), mq = ox_f16_to_f32(ox_f32_to_f16(*dmin));
    for (int s = 0; s < nsub; s++) {
        L[s] = dq > 0 ? clampi(nearest_int(scale[s] / dq), 0, smax) : 0;
        M[s] = mq > 0 ? clampi(nearest_int(mins[s] / mq), 0, smax) : 0;
        float ds = dq * L[s], ms = mq * M[s];
        for (int j = 0; j < sub; j++)
            q[s * sub + j] = (int8_t)(ds > 0 ? clampi(nearest_int((x[s * sub + j] + ms) / ds), 0, qmax) : 0);
    }
}

/* Symmetric K-quants (Q3_K, Q6_K): per sub-block of 16 a signed scale (|L| <= smax) and
 * q in [qlo, qhi]; the largest |x| maps to qlo (ggml's "max / qlo" choice). */
static void fit_sym(const float *x, int qlo, int qhi, int smax, float *d, int *L, int8_t *q) {
    float scale[16], amax = 0;
    for (int s = 0; s < 16; s++) {
        float max;
        absmax(x + 16 * s, 16, &max);
        scale[s] = max / qlo;
        if (fabsf(scale[s]) > amax) amax = fabsf(scale[s]);
    }
    *d = amax / smax;
    float dq = ox_f16_to_f32(ox_f32_to_f16(*d));
    for (int s = 0; s < 16; s++) {
        L[s] = dq > 0 ? clampi(nearest_int(scale[s] / dq), -smax, smax) : 0;
        float ds = dq * L[s];
        for (int j = 0; j < 16; j++)
            q[16 * s + j] = (int8_t)(ds != 0 ? clampi(nearest_int(x[16 * s + j] / ds), qlo, qhi) : 0);
    }
}

static void quant_q2_k(const float *x, ox_block_q2_K *b) {
    float d, dmin;
    int L[16], M[16];
    int8_t q[256];
    fit_asym(x, 16, 16, 3, 15, &d, &dmin, L, M, q);
    b->d = ox_f32_to_f16(d);
    b->dmin = ox_f32_to_f16(dmin);
    for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)(L[j] | M[j] << 4);
    memset(b->qs, 0, sizeof b->qs);
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128;
        b->qs[32 * half + r % 32] |= (uint8_t)(q[k] << (2 * (r / 32)));
    }
}

static void quant_q3_k(const float *x, ox_block_q3_K *b) {
    float d;
    int L[16];
    int8_t q[256];
    fit_sym(x, -4, 3, 31, &d, L, q);
    b->d = ox_f32_to_f16(d);
    memset(b->scales, 0, sizeof b->scales);
    for (int j = 0; j < 16; j++) {
        int v = L[j] + 32;
        if (j < 8) b->scales[j] |= (uint8_t)(v & 0xF);
        else b->scales[j - 8] |= (uint8_t)((v & 0xF) << 4);
        b->scales[8 + (j & 3)] |= (uint8_t)((v >> 4) << (2 * (j >> 2)));
    }
    memset(b->qs, 0, sizeof b->qs);
    memset(b->hmask, 0, sizeof b->hmask);
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128, l = r % 32, u = q[k] + 4; /* 0..7 */
        b->qs[32 * half + l] |= (uint8_t)((u & 3) << (2 * (r / 32)));
        if (u & 4) b->hmask[l] |= (uint8_t)(1 << (4 * half + r / 32));
    }
}

static void quant_q45_k(const float *x, int qmax, ox_f16 *d16, ox_f16 *dmin16, uint8_t *scales, uint8_t *qs, uint8_t *qh) {
    float d, dmin;
    int L[8], M[8];
    int8_t q[256];
    fit_asym(x, 8, 32, qmax, 63, &d, &dmin, L, M, q);
    *d16 = ox_f32_to_f16(d);
    *dmin16 = ox_f32_to_f16(dmin);
    memset(scales, 0, 12);
    for (int j = 0; j < 8; j++) set_scale_min_k4(j, scales, L[j], M[j]);
    memset(qs, 0, 128);
    if (qh) memset(qh, 0, 32);
    for (int k = 0; k < 256; k++) {
        int sub = k / 32, l = k % 32;
        qs[32 * (sub / 2) + l] |= (uint8_t)((q[k] & 0xF) << (4 * (sub & 1)));
        if (qh && (q[k] & 16)) qh[l] |= (uint8_t)(1 << sub);
    }
}

static void quant_q6_k(const float *x, ox_block_q6_K *b) {
    float d;
    int L[16];
    int8_t q[256];
    fit_sym(x, -32, 31, 127, &d, L, q);
    b->d = ox_f32_to_f16(d);
    for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)L[j];
    memset(b->ql, 0, sizeof b->ql);
    memset(b->qh, 0, sizeof b->qh);
    for (int k = 0; k < 256; k++) {
        int half = k / 128, r = k % 128, quarter = r / 32, l = r % 32, u = q[k] + 32;
        uint8_t *ql = b->ql + 64 * half;
        if (quarter < 2) ql[l + 32 * quarter] |= (uint8_t)(u & 0xF);
        else ql[l + 32 * (quarter - 2)] |= (uint8_t)((u & 0xF) << 4);
        b->qh[32 * half + l] |= (uint8_t)((u >> 4) << (2 * quarter));
    }
}

int ox_quantize_row(ox_type t, const float *src, void *dst, size_t n) {
    size_t be = ox_type_block_elems(t), bb = ox_type_block_bytes(t);
    if (t == OX_F32) {
        memcpy(dst, src, n * 4);
        return 0;
    }
    if (t == OX_F16 || t == OX_BF16) {
        uint16_t *h = dst;
        for (size_t i = 0; i < n; i++) h[i] = t == OX_F16 ? ox_f32_to_f16(src[i]) : ox_f32_to_bf16(src[i]);
        return 0;
    }
    if (!be || n % be) return OX_E_UNSUPPORTED;
    uint8_t *p = dst;
    for (size_t i = 0; i < n / be; i++, p += bb, src += be) {
        switch (t) {
        case OX_Q4_0: quant_q4_0(src, (void *)p); break;
        case OX_Q4_1: quant_q4_1(src, (void *)p); break;
        case OX_Q5_0: quant_q5_0(src, (void *)p); break;
        case OX_Q5_1: quant_q5_1(src, (void *)p); break;
        case OX_Q8_0: quant_q8_0(src, (void *)p); break;
        case OX_Q8_1: quant_q8_1(src, (void *)p); break;
        case OX_Q8_A: quant_q8_a(src, (void *)p); break;
        case OX_Q2_K: quant_q2_k(src, (void *)p); break;
        case OX_Q3_K: quant_q3_k(src, (void *)p); break;
        case OX_Q4_K: {
            ox_block_q4_K *b = (void *)p;
            quant_q45_k(src, 15, &b->d, &b->dmin, b->scales, b->qs, NULL);
        } break;
        case OX_Q5_K: {
            ox_block_q5_K *b = (void *)p;
            quant_q45_k(src, 31, &b->d, &b->dmin, b->scales, b->qs, b->qh);
        } break;
        case OX_Q6_K: quant_q6_k(src, (void *)p); break;
        case OX_Q8_K: quant_q8_k(src, (void *)p); break;
        default: return OX_E_UNSUPPORTED;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ scalar dots */

static int isum8(const int8_t *a, const int8_t *b, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) s += a[j] * b[j];
    return s;
}

static float dot_q4_0(const ox_block_q4_0 *w, const ox_block_q8_0 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += ((w[i].qs[j] & 0xF) - 8) * a[i].qs[j] + ((w[i].qs[j] >> 4) - 8) * a[i].qs[j + 16];
        sum += s * (F16(w[i].d) * F16(a[i].d));
    }
    return sum;
}

static float dot_q4_1(const ox_block_q4_1 *w, const ox_block_q8_1 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int s = 0;
        for (int j = 0; j < 16; j++) s += (w[i].qs[j] & 0xF) * a[i].qs[j] + (w[i].qs[j] >> 4) * a[i].qs[j + 16];
        sum += s * (F16(w[i].d) * F16(a[i].d)) + F16(w[i].m) * F16(a[i].s);
    }
    return sum;
}

/* Unlike Q4_1's, the min term takes the exact integer sum of the activation quants, not the
 * fp16-rounded s: with 8-bit values the min term is as large as the rest, and s's 2^-11 would
 * be the dot's largest error. */
static float dot_q8_a(const ox_block_q8_a *w, const ox_block_q8_1 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int s = 0, sa = 0;
        for (int j = 0; j < 32; j++) s += w[i].qs[j] * a[i].qs[j], sa += a[i].qs[j];
        sum += F16(a[i].d) * (s * F16(w[i].d) + sa * F16(w[i].m));
    }
    return sum;
}

static float dot_q5_0(const ox_block_q5_0 *w, const ox_block_q8_0 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int v[32], s = 0;
        q5_values(w[i].qs, w[i].qh, v);
        for (int j = 0; j < 32; j++) s += (v[j] - 16) * a[i].qs[j];
        sum += s * (F16(w[i].d) * F16(a[i].d));
    }
    return sum;
}

static float dot_q5_1(const ox_block_q5_1 *w, const ox_block_q8_1 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int v[32], s = 0;
        q5_values(w[i].qs, w[i].qh, v);
        for (int j = 0; j < 32; j++) s += v[j] * a[i].qs[j];
        sum += s * (F16(w[i].d) * F16(a[i].d)) + F16(w[i].m) * F16(a[i].s);
    }
    return sum;
}

static float dot_q8_0(const ox_block_q8_0 *w, const ox_block_q8_0 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) sum += isum8(w[i].qs, a[i].qs, 32) * (F16(w[i].d) * F16(a[i].d));
    return sum;
}

static float dot_q8_1(const ox_block_q8_1 *w, const ox_block_q8_1 *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) sum += isum8(w[i].qs, a[i].qs, 32) * (F16(w[i].d) * F16(a[i].d));
    return sum;
}

/* K-quants against Q8_K: integer sum per super-block, then d * isum - dmin * msum,
 * where the min term uses the activation's per-16 sums (bsums) as ggml does. */
static float dot_q2_k(const ox_block_q2_K *w, const ox_block_q8_K *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int8_t q[256];
        int sc[16], mn[16], isum = 0, msum = 0;
        q2_k_ints(&w[i], q, sc, mn);
        for (int j = 0; j < 16; j++) {
            isum += sc[j] * isum8(q + 16 * j, a[i].qs + 16 * j, 16);
            msum += mn[j] * a[i].bsums[j];
        }
        sum += a[i].d * F16(w[i].d) * isum - a[i].d * F16(w[i].dmin) * msum;
    }
    return sum;
}

static float dot_q3_k(const ox_block_q3_K *w, const ox_block_q8_K *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int8_t q[256];
        int sc[16], isum = 0;
        q3_k_ints(&w[i], q, sc);
        for (int j = 0; j < 16; j++) isum += sc[j] * isum8(q + 16 * j, a[i].qs + 16 * j, 16);
        sum += a[i].d * F16(w[i].d) * isum;
    }
    return sum;
}

static float dot_q45_k(ox_f16 d, ox_f16 dmin, const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                       const ox_block_q8_K *a) {
    int8_t q[256];
    int sc[8], mn[8], isum = 0, msum = 0;
    q45_k_ints(scales, qs, qh, q, sc, mn);
    for (int j = 0; j < 8; j++) {
        isum += sc[j] * isum8(q + 32 * j, a->qs + 32 * j, 32);
        msum += mn[j] * (a->bsums[2 * j] + a->bsums[2 * j + 1]);
    }
    return a->d * F16(d) * isum - a->d * F16(dmin) * msum;
}

static float dot_q6_k(const ox_block_q6_K *w, const ox_block_q8_K *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) {
        int8_t q[256];
        int isum = 0;
        q6_k_ints(&w[i], q);
        for (int j = 0; j < 16; j++) isum += w[i].scales[j] * isum8(q + 16 * j, a[i].qs + 16 * j, 16);
        sum += a[i].d * F16(w[i].d) * isum;
    }
    return sum;
}

static float dot_q8_k(const ox_block_q8_K *w, const ox_block_q8_K *a, size_t nb) {
    float sum = 0;
    for (size_t i = 0; i < nb; i++) sum += w[i].d * a[i].d * isum8(w[i].qs, a[i].qs, 256);
    return sum;
}

float ox_vec_dot_ref(ox_type t, const void *w, const void *a, size_t n) {
    const float *af = a;
    size_t nb = n / (ox_type_block_elems(t) ? ox_type_block_elems(t) : 1);
    float sum = 0;
    switch (t) {
    case OX_F32:
        for (size_t i = 0; i < n; i++) sum += ((const float *)w)[i] * af[i];
        return sum;
    case OX_F16:
        for (size_t i = 0; i < n; i++) sum += F16(((const uint16_t *)w)[i]) * af[i];
        return sum;
    case OX_BF16:
        for (size_t i = 0; i < n; i++) sum += ox_bf16_to_f32(((const uint16_t *)w)[i]) * af[i];
        return sum;
    case OX_Q4_0: return dot_q4_0(w, a, nb);
    case OX_Q4_1: return dot_q4_1(w, a, nb);
    case OX_Q5_0: return dot_q5_0(w, a, nb);
    case OX_Q5_1: return dot_q5_1(w, a, nb);
    case OX_Q8_0: return dot_q8_0(w, a, nb);
    case OX_Q8_1: return dot_q8_1(w, a, nb);
    case OX_Q8_A: return dot_q8_a(w, a, nb);
    case OX_Q2_K: return dot_q2_k(w, a, nb);
    case OX_Q3_K: return dot_q3_k(w, a, nb);
    case OX_Q4_K:
        for (size_t i = 0; i < nb; i++) {
            const ox_block_q4_K *b = (const ox_block_q4_K *)w + i;
            sum += dot_q45_k(b->d, b->dmin, b->scales, b->qs, NULL, (const ox_block_q8_K *)a + i);
        }
        return sum;
    case OX_Q5_K:
        for (size_t i = 0; i < nb; i++) {
            const ox_block_q5_K *b = (const ox_block_q5_K *)w + i;
            sum += dot_q45_k(b->d, b->dmin, b->scales, b->qs, b->qh, (const ox_block_q8_K *)a + i);
        }
        return sum;
    case OX_Q6_K: return dot_q6_k(w, a, nb);
    case OX_Q8_K: return dot_q8_k(w, a, nb);
    default: return ox_iq_vec_dot_ref(t, w, a, n);
    }
}
