/* test_kernels.c — fast kernels against the scalar references: matmul for every weight
 * type (1..9 tokens, odd row counts, 1 and 2 threads, fused multi; K-quant outputs the same
 * bits whatever the token count), the row kernels, and
 * the matmul argument checks. */
#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h" /* private: the vectorized Q8_0 activation quantizer, ox_f16_fast */
#include "kernels/pool.h"

#include <stdint.h>
#include <stdlib.h>

static uint32_t rng_state = 777;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float frand(void) { return (float)rnd() / 16777216.0f * 2.0f - 1.0f; }

/* A random weight matrix of type t (made by quantizing random floats). */
static ox_matrix make_matrix(ox_type t, int rows, int cols) {
    ox_matrix W = {t, rows, cols, 0, NULL};
    uint64_t rb = 0;
    CHECK(ox_row_bytes(t, (uint64_t)cols, &rb, NULL) == 0);
    W.row_bytes = (size_t)rb;
    W.data = malloc(W.row_bytes * rows + 1);
    float *row = malloc(sizeof(float) * cols);
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) row[c] = frand() * (1 + (r % 3));
        CHECK(ox_quantize_row(t, row, (uint8_t *)W.data + (size_t)r * W.row_bytes, (size_t)cols) == 0);
    }
    free(row);
    return W;
}

/* |W| . |x| per output: the scale of the rounding differences */
static void magnitudes(const ox_matrix *W, const float *x, int n_tok, double *mag) {
    float *wr = malloc(sizeof(float) * W->cols);
    for (int r = 0; r < W->rows; r++) {
        ox_dequantize_row(W->type, (const uint8_t *)W->data + (size_t)r * W->row_bytes, wr, (size_t)W->cols);
        for (int t = 0; t < n_tok; t++) {
            double m = 0;
            for (int c = 0; c < W->cols; c++) m += fabs((double)wr[c] * x[(size_t)t * W->cols + c]);
            mag[(size_t)t * W->rows + r] = m;
        }
    }
    free(wr);
}

static int compare(const ox_matrix *W, const float *x, int n_tok, const float *y, const char *what) {
    float *ref = malloc(sizeof(float) * W->rows * n_tok);
    double *mag = malloc(sizeof(double) * W->rows * n_tok);
    ox_matmul_ref(W, x, n_tok, ref);
    magnitudes(W, x, n_tok, mag);
    /* Q4_1/Q5_1 matmul runs ox_vec_dot_ref itself: compare it with a float64 dot of the
     * dequantized weights and Q8_1 activations instead, within Q8_1's fp16 block-sum rounding */
    int q8_1 = ox_type_vec_dot(W->type) == OX_Q8_1 && W->type != OX_Q8_A; /* Q8_A: exact activation sums */
    if (q8_1) {
        float *wr = malloc(sizeof(float) * W->cols), *ad = malloc(sizeof(float) * W->cols);
        void *aq = malloc(W->cols * 2 + 64);
        for (int t = 0; t < n_tok; t++) {
            CHECK(ox_quantize_row(OX_Q8_1, x + (size_t)t * W->cols, aq, (size_t)W->cols) == 0);
            ox_dequantize_row(OX_Q8_1, aq, ad, (size_t)W->cols);
            for (int r = 0; r < W->rows; r++) {
                ox_dequantize_row(W->type, (const uint8_t *)W->data + (size_t)r * W->row_bytes, wr, (size_t)W->cols);
                double d = 0;
                for (int c = 0; c < W->cols; c++) d += (double)wr[c] * ad[c];
                ref[(size_t)t * W->rows + r] = (float)d;
            }
        }
        free(wr);
        free(ad);
        free(aq);
    }
    int bad = 0;
    for (int i = 0; i < W->rows * n_tok; i++)
        if (!(fabs(y[i] - ref[i]) <= (q8_1 ? 2e-3 : 2e-6) * mag[i] + 1e-6)) {
            if (bad++ < 3)
                fprintf(stderr, "%s %s %dx%d tok %d: y[%d] = %.9g, ref %.9g\n", what, ox_type_name(W->type), W->rows,
                        W->cols, n_tok, i, y[i], ref[i]);
        }
    free(ref);
    free(mag);
    return bad;
}

static const ox_type TYPES[] = {OX_F32,  OX_F16,  OX_BF16, OX_Q4_0, OX_Q4_1, OX_Q5_0, OX_Q5_1, OX_Q8_0,
                                OX_Q8_1, OX_Q8_K, OX_Q2_K, OX_Q3_K, OX_Q4_K, OX_Q5_K, OX_Q6_K, OX_Q8_A};

static void test_matmul_types(void) {
    ox_err e = {0};
    ox_scratch ws = {0};
    static const int ROWS[] = {1, 7, 37};
    for (int threads = 1; threads <= 2; threads++) {
        CHECK(ox_pool_init(threads, &e) == 0);
        for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++) {
            ox_type t = TYPES[k];
            int cols = ox_type_block_elems(t) == 256 ? 512 : 160; /* legacy: a group of 4 blocks and a remainder */
            for (int ri = 0; ri < 3; ri++) {
                ox_matrix W = make_matrix(t, ROWS[ri], cols);
                int bad = 0;
                for (int n_tok = 1; n_tok <= 9; n_tok++) {
                    float *x = malloc(sizeof(float) * cols * n_tok), *y = malloc(sizeof(float) * W.rows * n_tok);
                    for (int i = 0; i < cols * n_tok; i++) x[i] = frand() * (1 + i % 5);
                    CHECK(ox_matmul(&ws, &W, x, n_tok, y, &e) == 0);
                    bad += compare(&W, x, n_tok, y, "matmul");
                    free(x);
                    free(y);
                }
                CHECK_MSG(bad == 0, "%s %dx%d, %d threads: %d outputs differ", ox_type_name(t), W.rows, cols, threads,
                          bad);
                free(W.data);
            }
        }
    }
    /* a bigger Q8_0/Q4_0 case: many tasks per thread, 2 threads */
    CHECK(ox_pool_init(2, &e) == 0);
    for (int q4 = 0; q4 < 2; q4++) {
        ox_matrix W = make_matrix(q4 ? OX_Q4_0 : OX_Q8_0, 301, 1024);
        float *x = malloc(sizeof(float) * 1024 * 13), *y = malloc(sizeof(float) * 301 * 13);
        for (int i = 0; i < 1024 * 13; i++) x[i] = frand();
        CHECK(ox_matmul(&ws, &W, x, 13, y, &e) == 0);
        CHECK(compare(&W, x, 13, y, "big") == 0);
        free(x);
        free(y);
        free(W.data);
    }
    ox_scratch_free(&ws);
    ox_pool_shutdown();
}

/* A token's outputs do not depend on how many tokens share the call (a speculative verify
 * pass against the decode step: greedy output must be the same tokens): the K-quant tiles
 * give the same bits for 1 to 9 tokens, each path (one-token dot, direct rows of 2 to 4,
 * unpacked super-blocks) summing in the same order. */
static void test_matmul_token_count(void) {
    ox_err e = {0};
    ox_scratch ws = {0};
    static const ox_type K[] = {OX_Q4_K, OX_Q5_K, OX_Q6_K};
    CHECK(ox_pool_init(2, &e) == 0);
    for (size_t k = 0; k < sizeof K / sizeof K[0]; k++) {
        enum { ROWS = 37, COLS = 768, MAXT = 9 };
        ox_matrix W = make_matrix(K[k], ROWS, COLS);
        static float x[COLS * MAXT], y[ROWS * MAXT], y1[ROWS];
        for (int i = 0; i < COLS * MAXT; i++) x[i] = frand() * (1 + i % 3);
        int bad = 0;
        for (int n_tok = 2; n_tok <= MAXT; n_tok++) {
            CHECK(ox_matmul(&ws, &W, x, n_tok, y, &e) == 0);
            for (int t = 0; t < n_tok; t++) {
                CHECK(ox_matmul(&ws, &W, x + (size_t)t * COLS, 1, y1, &e) == 0);
                bad += memcmp(y1, y + (size_t)t * ROWS, sizeof y1) != 0;
            }
        }
        CHECK_MSG(bad == 0, "%s: %d tokens' outputs differ from the token alone", ox_type_name(K[k]), bad);
        free(W.data);
    }
    ox_scratch_free(&ws);
    ox_pool_shutdown();
}

static void test_matmul_multi(void) {
    ox_err e = {0};
    ox_scratch ws = {0};
    CHECK(ox_pool_init(2, &e) == 0);
    ox_matrix A = make_matrix(OX_Q8_0, 33, 512), B = make_matrix(OX_Q4_K, 20, 512), C = make_matrix(OX_BF16, 9, 512),
              D = make_matrix(OX_Q4_0, 17, 512);
    const ox_matrix *Ws[4] = {&A, &B, &C, &D};
    float x[512 * 5], ya[33 * 5], yb[20 * 5], yc[9 * 5], yd[17 * 5];
    float *ys[4] = {ya, yb, yc, yd};
    for (int i = 0; i < 512 * 5; i++) x[i] = frand();
    for (int n_tok = 1; n_tok <= 5; n_tok += 4) {
        CHECK(ox_matmul_multi(&ws, Ws, 4, x, n_tok, ys, &e) == 0);
        for (int i = 0; i < 4; i++) CHECK(compare(Ws[i], x, n_tok, ys[i], "multi") == 0);
    }
    /* the scratch does not grow again for the same shapes */
    void *p = ws.p;
    size_t cap = ws.cap;
    CHECK(ox_matmul_multi(&ws, Ws, 4, x, 5, ys, &e) == 0);
    CHECK(ws.p == p && ws.cap == cap);
    /* argument checks */
    ox_matrix bad = A;
    bad.cols = 256;
    const ox_matrix *Wb[2] = {&A, &bad};
    CHECK(ox_matmul_multi(&ws, Wb, 2, x, 1, ys, &e) == OX_E_CONFIG);
    CHECK_STR_CONTAINS(e.msg, "columns");
    bad = A;
    bad.row_bytes = 10;
    CHECK(ox_matmul(&ws, &bad, x, 1, ya, &e) == OX_E_CONFIG);
    bad = A;
    bad.type = (ox_type)4;
    CHECK(ox_matmul(&ws, &bad, x, 1, ya, &e) == OX_E_UNSUPPORTED);
    CHECK(ox_matmul(&ws, &A, x, 0, ya, &e) == OX_E_RANGE);
    free(A.data);
    free(B.data);
    free(C.data);
    free(D.data);
    ox_scratch_free(&ws);
    ox_pool_shutdown();
}

/* The vectorized activation quantizer writes the same bytes as ox_quantize_row, including
 * halfway cases (roundf rounds them away from zero) and values just below 0.5. */
static void test_q8_0_act(void) {
    enum { N = 32 * 64 };
    static float x[N], d[64];
    static ox_block_q8_0 want[64], got[64];
    static int16_t q16[N];
    static int32_t sums[64];
    int bad = 0;
    for (int rep = 0; rep < 200; rep++) {
        for (int i = 0; i < N; i++) x[i] = frand() * (float)(1 + rep % 7) * (rep % 11 == 0 ? 1e-30f : 1.0f);
        for (int b = 0; b < 64; b++) {
            x[32 * b + 31] = (rep & 1 ? -127.0f : 127.0f) / 8;                 /* d = 1/8 exactly: x*id exact */
            x[32 * b + 1] = (float)((int)(rnd() % 255) - 127) / 8 + 1.0f / 16; /* ties */
            x[32 * b + 2] = nextafterf(0.5f, 0) / 8;                           /* just below 0.5 */
        }
        if (rep == 5) memset(x, 0, sizeof x);
        if (rep == 6)
            for (int i = 0; i < 64; i++) x[i] = ldexpf(1, -140); /* 1/d overflows */
        ox_quantize_row(OX_Q8_0, x, want, N);
        ox_quantize_q8_0_act(x, N, got, q16, d, sums, 1);
        bad += memcmp(want, got, sizeof want) != 0;
        for (int i = 0; i < N; i++) bad += q16[i] != got[i / 32].qs[i % 32];
        for (int b = 0; b < 64; b++) {
            int32_t s = 0;
            for (int i = 0; i < 32; i++) s += got[b].qs[i];
            bad += d[b] != ox_f16_to_f32(got[b].d) || sums[b] != s;
        }
    }
    CHECK_MSG(bad == 0, "%d mismatches with ox_quantize_row", bad);
    /* ox_f16_fast is ox_f16_to_f32 */
    bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = ox_f16_fast((uint16_t)h), b = ox_f16_to_f32((uint16_t)h);
        bad += isnan(b) ? !isnan(a) : memcmp(&a, &b, 4) != 0;
    }
    CHECK(bad == 0);
}

/* ---------------------------------------------------------------- row kernels */

static void test_rmsnorm(void) {
    float x[203], w[203], y[203], r[203];
    for (int i = 0; i < 203; i++) {
        x[i] = frand() * 3;
        w[i] = frand();
    }
    for (int n = 1; n <= 203; n += 101) {
        ox_rmsnorm(y, x, w, n, 1e-6f);
        ox_rmsnorm_ref(r, x, w, n, 1e-6f);
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        double sc = 1 / sqrt(ss / n + 1e-6);
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += fabs(y[i] - r[i]) > 1e-5 * fabs(r[i]) + 1e-7 || fabs(r[i] - x[i] * sc * w[i]) > 1e-5;
        CHECK(bad == 0);
        ox_rmsnorm(y, x, NULL, n, 1e-6f);
        CHECK_NEAR(y[n - 1], x[n - 1] * sc, 1e-5);
    }
}

static void test_rope(void) {
    float x[512], y[512], r[512];
    for (int i = 0; i < 512; i++) x[i] = frand();
    /* Gemma 4 full layer: 512 lanes, 64 turning pairs */
    for (int pos = 0; pos < 5000; pos += 1237) {
        memcpy(y, x, sizeof x);
        memcpy(r, x, sizeof x);
        ox_rope(y, 512, pos, 64, 1e6f, 1.0f);
        ox_rope_ref(r, 512, pos, 64, 1e6f, 1.0f);
        int bad = 0;
        for (int i = 0; i < 512; i++) bad += fabs(y[i] - r[i]) > 1e-6;
        CHECK(bad == 0);
        int same = 1;
        for (int i = 64; i < 256; i++) same &= y[i] == x[i] && y[i + 256] == x[i + 256];
        CHECK_MSG(same, "pairs >= n_pairs must be identity");
        if (pos) CHECK(y[1] != x[1] && y[257] != x[257]);
    }
    /* all pairs turning (several angle chunks), large position */
    memcpy(y, x, sizeof x);
    memcpy(r, x, sizeof x);
    ox_rope(y, 512, 100000, 256, 1e4f, 1.0f);
    ox_rope_ref(r, 512, 100000, 256, 1e4f, 1.0f);
    int bad = 0;
    for (int i = 0; i < 512; i++) bad += fabs(y[i] - r[i]) > 1e-6;
    CHECK(bad == 0);
    double n0 = 0, n1 = 0;
    for (int i = 0; i < 256; i++) {
        n0 += (double)x[i] * x[i] + (double)x[i + 256] * x[i + 256];
        n1 += (double)y[i] * y[i] + (double)y[i + 256] * y[i + 256];
    }
    CHECK_NEAR(n1, n0, 1e-4 * n0); /* rotations keep the norm */
    /* several heads at once = each head alone */
    float heads[3 * 260], one[3 * 260];
    for (int i = 0; i < 3 * 260; i++) heads[i] = one[i] = frand();
    ox_rope_heads(heads, 3, 260, 256, 77, 128, 1e4f, 1.0f);
    for (int h = 0; h < 3; h++) ox_rope_ref(one + 260 * h, 256, 77, 128, 1e4f, 1.0f);
    bad = 0;
    for (int i = 0; i < 3 * 260; i++) bad += fabs(heads[i] - one[i]) > 1e-6;
    CHECK(bad == 0);
    CHECK(heads[259] == one[259] && heads[2 * 260 + 259] == one[2 * 260 + 259]); /* gap untouched */
    /* hand value: hd 4, pos 1, pair 0 turns 1 rad, pair 1 turns base^(-1/2) = 0.01 rad */
    float v[4] = {1, 2, 3, 4};
    ox_rope(v, 4, 1, 2, 10000.0f, 1.0f);
    CHECK_NEAR(v[0], cos(1.0) - 3 * sin(1.0), 1e-6);
    CHECK_NEAR(v[2], sin(1.0) + 3 * cos(1.0), 1e-6);
    CHECK_NEAR(v[1], 2 * cos(0.01) - 4 * sin(0.01), 1e-6);
    CHECK_NEAR(v[3], 2 * sin(0.01) + 4 * cos(0.01), 1e-6);
    /* factor divides the angle */
    float u[4] = {1, 0, 0, 0};
    ox_rope(u, 4, 2, 1, 10000.0f, 2.0f);
    CHECK_NEAR(u[0], cos(1.0), 1e-6);
    CHECK_NEAR(u[2], sin(1.0), 1e-6);
}

static void test_softmax(void) {
    float x[301], y[301];
    for (int n = 1; n <= 301; n += 50) {
        for (int i = 0; i < n; i++) x[i] = y[i] = frand() * 30 - (i == 3 ? 200 : 0);
        ox_softmax(y, n);
        ox_softmax_ref(x, n);
        double sum = 0;
        int bad = 0;
        for (int i = 0; i < n; i++) {
            sum += y[i];
            bad += fabs(y[i] - x[i]) > 2e-6 * x[i] + 1e-12;
        }
        CHECK_MSG(bad == 0, "softmax n=%d: %d differ", n, bad);
        CHECK_NEAR(sum, 1.0, 1e-5);
    }
    /* masked (-inf) scores get exactly 0 */
    float m[20];
    for (int i = 0; i < 20; i++) m[i] = i % 3 ? -INFINITY : frand();
    ox_softmax(m, 20);
    int zeros = 1;
    for (int i = 0; i < 20; i++) zeros &= (i % 3 != 0) == (m[i] == 0.0f);
    CHECK(zeros);
    float z[9] = {0, 0, 0, 0, 0, 0, 0, 0, log(3.0f)};
    ox_softmax(z, 9);
    CHECK_NEAR(z[8], 3.0 / 11, 1e-6);
    CHECK_NEAR(z[0], 1.0 / 11, 1e-6);
}

static void test_geglu(void) {
    float g[203], u[203], y[203], r[203];
    for (int i = 0; i < 203; i++) {
        g[i] = frand() * 8;
        u[i] = frand();
    }
    g[0] = 0;
    g[1] = -30;
    g[2] = 30;
    g[3] = 1e-4f;
    ox_geglu(y, g, u, 203);
    ox_geglu_ref(r, g, u, 203);
    int bad = 0;
    for (int i = 0; i < 203; i++) bad += fabs(y[i] - r[i]) > 1e-6 * (fabs(g[i] * u[i]) + 1e-3);
    CHECK_MSG(bad == 0, "%d geglu values differ", bad);
    CHECK(y[0] == 0);
    CHECK_NEAR(r[2], 30 * u[2], 1e-5);
    CHECK_NEAR(y[1], 0, 1e-6);
    /* gelu_tanh(1) = 0.8411920 */
    float one = 1, o = 1, out;
    ox_geglu(&out, &one, &o, 1);
    CHECK_NEAR(out, 0.841192, 1e-6);
}

static void test_dot_axpy(void) {
    float a[77], b[77], y[77];
    double want = 0;
    for (int i = 0; i < 77; i++) {
        a[i] = frand();
        b[i] = frand();
        want += (double)a[i] * b[i];
        y[i] = b[i];
    }
    CHECK_NEAR(ox_dot_f32(a, b, 77), want, 1e-5);
    CHECK(ox_dot_f32(a, b, 0) == 0);
    ox_axpy(y, 0.5f, a, 77);
    int bad = 0;
    for (int i = 0; i < 77; i++) bad += fabs(y[i] - (b[i] + 0.5f * a[i])) > 1e-6;
    CHECK(bad == 0);
}

/* ox_gemm_f32 against double sums, over the 4 x 8 tiles and every kind of remainder (rows, columns,
 * both), with strides wider than the rows; C's cells outside the product stay untouched. */
static void test_gemm_f32(void) {
    enum { LD = 40 };
    static float a[13 * LD], b[37 * LD], c[13 * LD];
    const int shapes[][3] = {{4, 8, 16}, {1, 1, 1}, {3, 7, 5}, {9, 19, 37}, {13, 32, 33}, {5, 24, 0}, {0, 8, 4}};
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        for (int i = 0; i < 13 * LD; i++) a[i] = frand(), c[i] = 7.0f;
        for (int i = 0; i < 37 * LD; i++) b[i] = frand();
        ox_gemm_f32(c, LD, a, LD - 1, b, LD - 2, m, n, k);
        for (int i = 0; i < 13; i++)
            for (int j = 0; j < LD; j++) {
                double want = 7.0;
                if (i < m && j < n) {
                    want = 0;
                    for (int p = 0; p < k; p++) want += (double)a[i * (LD - 1) + p] * b[p * (LD - 2) + j];
                }
                bad += fabs(c[i * LD + j] - want) > 1e-5 * (1 + k);
            }
    }
    CHECK_MSG(bad == 0, "%d cells off", bad);
}

int main(void) {
#ifdef __wasm_simd128__
    printf("wasm SIMD128 build\n");
#elif defined(__wasm__)
    CHECK_MSG(0, "wasm build without -msimd128: the SIMD128 tiles are not compiled");
#endif
    RUN(test_q8_0_act);
    RUN(test_matmul_types);
    RUN(test_matmul_token_count);
    RUN(test_matmul_multi);
    RUN(test_rmsnorm);
    RUN(test_rope);
    RUN(test_softmax);
    RUN(test_geglu);
    RUN(test_dot_axpy);
    RUN(test_gemm_f32);
    return check_summary("test_kernels");
}
