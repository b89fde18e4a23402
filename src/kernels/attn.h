/* attn.h — the attention kernels over stored K/V rows (model/kv.c): q . k and y += a * v for
 * rows of n values stored as f16 or Q8_0 (blocks of 32; n a multiple of 32), the query and
 * the output in f32. Each has a scalar reference (ox_*_ref, for tests) and a fast path
 * (SIMD128 in wasm, attn_simd128.c; elsewhere the reference). The f32 pair is ox_dot_f32 /
 * ox_axpy (kernels.h). The fast f16 kernels take finite values only (no Inf/NaN halves). */
#ifndef OX_ATTN_H
#define OX_ATTN_H

#include <stdint.h>
#include "kernels/quant.h"

float ox_dot_f16(const float *q, const ox_f16 *k, int n);
float ox_dot_f16_ref(const float *q, const ox_f16 *k, int n);
float ox_dot_q8_0(const float *q, const void *k, int n);
float ox_dot_q8_0_ref(const float *q, const void *k, int n);
void ox_axpy_f16(float *y, float a, const ox_f16 *v, int n);
void ox_axpy_f16_ref(float *y, float a, const ox_f16 *v, int n);
void ox_axpy_q8_0(float *y, float a, const void *v, int n);
void ox_axpy_q8_0_ref(float *y, float a, const void *v, int n);

#endif
