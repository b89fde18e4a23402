/* attn_simd128.c — wasm SIMD128 attention kernels (attn.h) over f16 and Q8_0 K/V rows.
 *
 * f16 -> f32 has no instruction in SIMD128: the half's exponent and mantissa shifted into
 * place, times 2^112, is the exact f32 (subnormal halves land on normal floats: wasm keeps
 * denormals), then the sign. Inf/NaN halves would come out as +-65536 * (1 + m) instead;
 * none is stored (K and V rows are RMS-normed), and fixing them up (a compare and a select)
 * made the dot 4.8x slower under V8 (measured). Q8_0 quants widen
 * i8 -> i16 -> i32 -> f32 and each block's products sum in f32 before its scale. The dots sum
 * in another order than the scalar references (tests bound the difference); the axpys round
 * the same as theirs. */
#ifdef __wasm_simd128__
#include "kernels/attn.h"

#include <wasm_simd128.h>

/* 4 finite halves (in the low 16 bits of each lane) to f32 */
static inline v128_t half4(v128_t h) {
    v128_t em = wasm_v128_and(h, wasm_i32x4_splat(0x7fff));
    v128_t f = wasm_f32x4_mul(wasm_i32x4_shl(em, 13), wasm_f32x4_splat(0x1p112f));
    return wasm_v128_or(f, wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16));
}

static inline float hsum(v128_t s) {
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1) + wasm_f32x4_extract_lane(s, 2) +
           wasm_f32x4_extract_lane(s, 3);
}

float ox_dot_f16(const float *q, const ox_f16 *k, int n) {
    v128_t s0 = wasm_f32x4_splat(0), s1 = s0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v128_t h = wasm_v128_load(k + i);
        s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(q + i), half4(wasm_u32x4_extend_low_u16x8(h))));
        s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(wasm_v128_load(q + i + 4), half4(wasm_u32x4_extend_high_u16x8(h))));
    }
    float s = hsum(wasm_f32x4_add(s0, s1));
    for (; i < n; i++) s += q[i] * ox_f16_to_f32(k[i]);
    return s;
}

void ox_axpy_f16(float *y, float a, const ox_f16 *v, int n) {
    v128_t av = wasm_f32x4_splat(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v128_t h = wasm_v128_load(v + i);
        wasm_v128_store(
            y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(av, half4(wasm_u32x4_extend_low_u16x8(h)))));
        wasm_v128_store(y + i + 4, wasm_f32x4_add(wasm_v128_load(y + i + 4),
                                                  wasm_f32x4_mul(av, half4(wasm_u32x4_extend_high_u16x8(h)))));
    }
    for (; i < n; i++) y[i] += a * ox_f16_to_f32(v[i]);
}

/* the 32 quants of a block as 8 f32x4 */
static inline void widen_block(const int8_t *qs, v128_t *f) {
    for (int h = 0; h < 2; h++) {
        v128_t b = wasm_v128_load(qs + 16 * h);
        v128_t lo = wasm_i16x8_extend_low_i8x16(b), hi = wasm_i16x8_extend_high_i8x16(b);
        f[4 * h + 0] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(lo));
        f[4 * h + 1] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(lo));
        f[4 * h + 2] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(hi));
        f[4 * h + 3] = wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(hi));
    }
}

float ox_dot_q8_0(const float *q, const void *k, int n) {
    const ox_block_q8_0 *b = k;
    v128_t s = wasm_f32x4_splat(0);
    for (int i = 0; i < n / OX_QK; i++, q += OX_QK) {
        v128_t f[8], bs = wasm_f32x4_splat(0);
        widen_block(b[i].qs, f);
        for (int j = 0; j < 8; j++) bs = wasm_f32x4_add(bs, wasm_f32x4_mul(wasm_v128_load(q + 4 * j), f[j]));
        s = wasm_f32x4_add(s, wasm_f32x4_mul(bs, wasm_f32x4_splat(ox_f16_to_f32(b[i].d))));
    }
    return hsum(s);
}

void ox_axpy_q8_0(float *y, float a, const void *v, int n) {
    const ox_block_q8_0 *b = v;
    for (int i = 0; i < n / OX_QK; i++, y += OX_QK) {
        v128_t f[8], ad = wasm_f32x4_splat(a * ox_f16_to_f32(b[i].d));
        widen_block(b[i].qs, f);
        for (int j = 0; j < 8; j++)
            wasm_v128_store(y + 4 * j, wasm_f32x4_add(wasm_v128_load(y + 4 * j), wasm_f32x4_mul(ad, f[j])));
    }
}

#endif
