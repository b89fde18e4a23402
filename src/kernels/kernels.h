/* kernels.h — the compute kernels of the forward pass. Each has a scalar reference
 * (ox_*_ref, kept for tests) and a fast path (SIMD128 in wasm; SSE/AVX2 natively where
 * available; otherwise the reference). Matmuls split output rows over the thread pool.
 *
 * Activation rounding (stated in README): for quantized weights the activations are
 * quantized per row to the weight type's vec-dot format (Q8_0 / Q8_1 / Q8_K) exactly as
 * llama.cpp does; F16/BF16/F32 weights dot against f32 activations. */
#ifndef OX_KERNELS_H
#define OX_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "kernels/quant.h"

/* A weight matrix W[rows][cols] (PyTorch [out, in]) resident in memory, rows in the
 * ggml block layout of `type`. `data` is owned by whoever loaded it. */
typedef struct ox_matrix {
    ox_type type;
    int rows, cols;
    size_t row_bytes;
    void *data;
} ox_matrix;

/* Growable scratch owned by the caller (one per session): no per-token allocation. */
typedef struct ox_scratch {
    void *p;
    size_t cap;
} ox_scratch;
void *ox_scratch_get(ox_scratch *s, size_t bytes, ox_err *err); /* 64-byte aligned */
void ox_scratch_free(ox_scratch *s);

/* y[t][r] = sum_c W[r][c] * x[t][c], t < n_tok (x: n_tok x cols, y: n_tok x rows, f32).
 * Prefill (n_tok > 1) is matrix-matrix: several tokens per pass over the weights.
 * ws holds the quantized activations: it may be reallocated by the call, so x and y must
 * not point into it, and y must not overlap x. Runs on the pool (ox_pool_run): do not
 * call it from inside a pool task. Errors: CONFIG (W's cols/row_bytes disagree with the
 * input or its type), UNSUPPORTED (type), RANGE (n_tok < 1, sizes overflow), NOMEM. */
int ox_matmul(ox_scratch *ws, const ox_matrix *W, const float *x, int n_tok, float *y, ox_err *err);

/* Several matrices with the same input (fused Q/K/V or gate/up): one activation
 * quantization per distinct vec-dot type and one pool dispatch. ys[i]: n_tok x Ws[i]->rows.
 * 1 <= n <= 16; every Ws[i]->cols must equal Ws[0]->cols. */
int ox_matmul_multi(ox_scratch *ws, const ox_matrix *const *Ws, int n, const float *x, int n_tok, float *const *ys,
                    ox_err *err);

/* The bytes of ws that ox_matmul of a `type` matrix with `cols` columns over n_tok tokens
 * asks for (the memory estimate, model/estimate.h). */
int ox_matmul_scratch_bytes(ox_type type, int cols, int n_tok, size_t *bytes, ox_err *err);

/* The same product computed with ox_vec_dot_ref, one row at a time (tests). */
void ox_matmul_ref(const ox_matrix *W, const float *x, int n_tok, float *y);

/* Elementwise / row kernels (n = row length). w may be NULL for the no-scale RMSNorm. */
void ox_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
void ox_rmsnorm_ref(float *y, const float *x, const float *w, int n, float eps);
/* NEOX rotate-half RoPE over a head of hd lanes at position pos; pairs i < n_pairs turn
 * with angle pos * base^(-2i/hd) / factor, the rest are identity. */
void ox_rope(float *x, int hd, int pos, int n_pairs, float base, float factor);
void ox_rope_ref(float *x, int hd, int pos, int n_pairs, float base, float factor);
/* ox_rope on n_heads heads of one token, head h at x + h * stride: the cos/sin (the costly
 * part) are computed once for all heads. */
void ox_rope_heads(float *x, int n_heads, size_t stride, int hd, int pos, int n_pairs, float base, float factor);
void ox_softmax(float *x, int n);
void ox_softmax_ref(float *x, int n);
/* y = gelu_tanh(g) * u, elementwise */
void ox_geglu(float *y, const float *g, const float *u, int n);
void ox_geglu_ref(float *y, const float *g, const float *u, int n);
float ox_dot_f32(const float *a, const float *b, int n);
void ox_axpy(float *y, float a, const float *x, int n); /* y += a*x */
/* C = A B in f32: A m x k (row i at a + i * lda), B k x n (row p at b + p * ldb, its n values
 * contiguous), C m x n (row i at c + i * ldc), overwritten. Register tiles of 4 rows x 8
 * columns, each sum over p in order from 0 (a whole image's attention: q k^T with k
 * transposed, then p v). m, n, k >= 0; C must not overlap A or B. */
void ox_gemm_f32(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb, int m, int n, int k);

#endif
