/* bench_kernels.c — matmul micro-benchmark (not a test): a 1536-column x 6144-row weight
 * matrix (Gemma 4 E2B's FFN gate/up shape) in Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, BF16, 1 and 64 tokens, 1 and 2
 * threads, after a read-bandwidth probe (the ceiling for decode: summing 256 MB on the pool). Prints GB/s of weights streamed and GFLOP/s for the fastest call and the median
 * one (the fastest is the figure on a shared, noisy machine). Enough copies of the matrix
 * are cycled through that the weights come from memory, not from the last-level cache.
 *   native: cc -O3 -march=native -Isrc tools/bench_kernels.c src/{quant,kernels,kernels_x86,kernels_simd128,pool,err}.c -lm -lpthread
 *   wasm:   emcc -O3 -msimd128 -pthread -sPTHREAD_POOL_SIZE=4 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB ... ; node --no-experimental-fetch
 * Usage: bench_kernels [seconds per case (default 1) [TYPE n_tok threads]] — the second form
 * runs one case, any n_tok <= 64 (for perf stat; short calls for a loaded machine). */
#include "kernels/kernels.h"
#include "kernels/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the probe: each task sums its slice of the buffer with 16-byte loads (as the matmuls
 * read their weights) */
typedef uint64_t v2u __attribute__((vector_size(16)));
typedef struct {
    const v2u *p;
    size_t n;
    uint64_t sum[64 * 8];
} probe_job;

static void probe_task(void *ctx, int task, int n_tasks) {
    probe_job *j = ctx;
    size_t i0 = j->n * task / n_tasks, i1 = j->n * (task + 1) / n_tasks;
    v2u s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = i0; i + 4 <= i1; i += 4) s0 += j->p[i], s1 += j->p[i + 1], s2 += j->p[i + 2], s3 += j->p[i + 3];
    s0 += s1 + s2 + s3;
    j->sum[task * 8] = s0[0] + s0[1]; /* 64 bytes apart: no false sharing */
}

static void probe(double secs) {
    ox_err e = {0};
    size_t bytes = (size_t)256 << 20;
    probe_job *j = calloc(1, sizeof *j);
    uint64_t *buf = aligned_alloc(64, bytes);
    for (size_t i = 0; i < bytes / 8; i++) buf[i] = i;
    j->p = (const v2u *)buf, j->n = bytes / 16;
    for (int threads = 1; threads <= 2; threads++) {
        if (ox_pool_init(threads, &e)) return;
        double best = 1e9, t0 = now();
        while (now() - t0 < secs) {
            double c0 = now();
            ox_pool_run(probe_task, j, threads * 16);
            double dt = now() - c0;
            best = dt < best ? dt : best;
        }
        printf("read bandwidth probe threads %d: best %6.2f GB/s\n", threads, bytes / best / 1e9);
    }
    free(buf);
    free(j);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    const char *only_type = argc > 4 ? argv[2] : NULL;
    int only_tok = argc > 4 ? atoi(argv[3]) : 0, only_threads = argc > 4 ? atoi(argv[4]) : 0;
    if (only_tok < 0 || only_tok > 64) only_tok = 64;
    const int rows = 6144, cols = 1536;
    static const ox_type types[] = {OX_Q8_0, OX_Q4_0, OX_Q4_K, OX_Q5_K, OX_Q6_K, OX_BF16};
    static const int toks[] = {1, 64};
    ox_err e = {0};
    ox_scratch ws = {0};
    float *x = malloc(sizeof(float) * cols * 64), *y = malloc(sizeof(float) * rows * 64),
          *row = malloc(sizeof(float) * cols);
    for (int i = 0; i < cols * 64; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
#ifdef __wasm_simd128__
    const char *where = "wasm SIMD128";
#else
    const char *where = "native";
#endif
    if (!only_type) probe(secs);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        ox_type t = types[k];
        if (only_type && strcmp(only_type, ox_type_name(t))) continue;
        uint64_t rb;
        ox_row_bytes(t, cols, &rb, &e);
        size_t bytes = (size_t)rb * rows;
        int copies = (int)((256u << 20) / bytes) + 1;
        ox_matrix *W = malloc(sizeof(ox_matrix) * copies);
        for (int c = 0; c < copies; c++) {
            W[c] = (ox_matrix){t, rows, cols, (size_t)rb, malloc(bytes)};
            for (int r = 0; r < rows; r++) {
                for (int i = 0; i < cols; i++) row[i] = (float)(((r + c) * 31 + i * 17) % 255 - 127) / 127.0f;
                ox_quantize_row(t, row, (uint8_t *)W[c].data + (size_t)r * rb, cols);
            }
        }
        for (int threads = 1; threads <= 2; threads++) {
            if (only_threads && threads != only_threads) continue;
            if (ox_pool_init(threads, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            for (int ti = 0; ti < (only_tok ? 1 : 2); ti++) {
                int n_tok = only_tok ? only_tok : toks[ti], iters = 0;
                ox_matmul(&ws, &W[0], x, n_tok, y, &e); /* warm-up */
                double t0 = now(), t1 = t0;
                static double dt[100000];
                do {
                    double c0 = t1;
                    if (ox_matmul(&ws, &W[iters % copies], x, n_tok, y, &e)) {
                        fprintf(stderr, "%s\n", e.msg);
                        return 1;
                    }
                    t1 = now();
                    dt[iters++] = t1 - c0;
                } while (t1 - t0 < secs && iters < 100000);
                qsort(dt, (size_t)iters, sizeof dt[0], cmp_double);
                double best = dt[0], med = dt[iters / 2], flop = 2.0 * rows * cols * n_tok;
                printf("%s %s %dx%d n_tok %2d threads %d: best %7.3f ms %6.2f GB/s %6.2f GFLOP/s | median %7.3f ms "
                       "%6.2f GFLOP/s (%d calls)\n",
                       where, ox_type_name(t), cols, rows, n_tok, threads, best * 1e3, bytes / best / 1e9,
                       flop / best / 1e9, med * 1e3, flop / med / 1e9, iters);
                fflush(stdout);
            }
        }
        for (int c = 0; c < copies; c++) free(W[c].data);
        free(W);
    }
    ox_pool_shutdown();
    ox_scratch_free(&ws);
    free(x);
    free(y);
    free(row);
    return 0;
}
