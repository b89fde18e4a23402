/* attn.c — scalar references of the attention kernels (attn.h), and the fast path where
 * there is no SIMD128 one. */
#include "kernels/attn.h"

float ox_dot_f16_ref(const float *q, const ox_f16 *k, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += q[i] * ox_f16_to_f32(k[i]);
    return s;
}

/* per block: d * sum(q_i * k_i), the sum in f32 */
float ox_dot_q8_0_ref(const float *q, const void *k, int n) {
    const ox_block_q8_0 *b = k;
    float s = 0;
    for (int i = 0; i < n / OX_QK; i++) {
        float bs = 0;
        for (int j = 0; j < OX_QK; j++) bs += q[i * OX_QK + j] * (float)b[i].qs[j];
        s += ox_f16_to_f32(b[i].d) * bs;
    }
    return s;
}

void ox_axpy_f16_ref(float *y, float a, const ox_f16 *v, int n) {
    for (int i = 0; i < n; i++) y[i] += a * ox_f16_to_f32(v[i]);
}

void ox_axpy_q8_0_ref(float *y, float a, const void *v, int n) {
    const ox_block_q8_0 *b = v;
    for (int i = 0; i < n / OX_QK; i++) {
        float ad = a * ox_f16_to_f32(b[i].d);
        for (int j = 0; j < OX_QK; j++) y[i * OX_QK + j] += ad * (float)b[i].qs[j];
    }
}

#ifndef __wasm_simd128__
float ox_dot_f16(const float *q, const ox_f16 *k, int n) { return ox_dot_f16_ref(q, k, n); }
float ox_dot_q8_0(const float *q, const void *k, int n) { return ox_dot_q8_0_ref(q, k, n); }
void ox_axpy_f16(float *y, float a, const ox_f16 *v, int n) { ox_axpy_f16_ref(y, a, v, n); }
void ox_axpy_q8_0(float *y, float a, const void *v, int n) { ox_axpy_q8_0_ref(y, a, v, n); }
#endif
