/* ref_helper.c — the C engine's own scalar references, for tests/node/gpu-kernels.test.mjs
 * (built by the test with cc; reads binary input on stdin, writes binary output on stdout):
 *   quant TYPE N            f32[N] -> blocks of TYPE (ox_quantize_row)
 *   deq TYPE N              blocks -> f32[N] (ox_dequantize_row)
 *   dot TYPE ROWS COLS NTOK weights (ROWS rows of TYPE), then NTOK activation rows already
 *                           quantized to the type's vec-dot format (f32 for F32/F16/BF16)
 *                           -> f32[NTOK][ROWS] (ox_vec_dot_ref)
 *   rms N EPS HASW          weight f32[N] if HASW, then x f32[N] -> f32[N] (ox_rmsnorm_ref)
 *   rope HD POS PAIRS BASE FACTOR   x f32[HD] -> f32[HD] (ox_rope_ref)
 *   softmax N               f32[N] -> f32[N] (ox_softmax_ref)
 *   geglu N                 g f32[N], u f32[N] -> f32[N] (ox_geglu: the engine's x / (1 + e^-2z)
 *                           form; the reference's 1 + tanh cancels for negative x) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/quant.h"

static void *in(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p || fread(p, 1, n, stdin) != n) {
        fprintf(stderr, "ref_helper: short input (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}
static void out(const void *p, size_t n) { fwrite(p, 1, n, stdout); }
static size_t row_bytes(ox_type t, size_t n) {
    uint64_t rb;
    if (ox_row_bytes(t, n, &rb, NULL)) {
        fprintf(stderr, "ref_helper: bad type %d / length %zu\n", (int)t, n);
        exit(1);
    }
    return (size_t)rb;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ref_helper CMD ARGS...\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "quant") || !strcmp(cmd, "deq")) {
        ox_type t = (ox_type)atoi(argv[2]);
        size_t n = (size_t)atol(argv[3]), rb = row_bytes(t, n);
        if (cmd[0] == 'q') {
            float *x = in(n * 4);
            void *q = malloc(rb);
            if (ox_quantize_row(t, x, q, n)) {
                fprintf(stderr, "ref_helper: cannot quantize to %d\n", (int)t);
                return 1;
            }
            out(q, rb);
        } else {
            void *q = in(rb);
            float *y = malloc(n * 4);
            ox_dequantize_row(t, q, y, n);
            out(y, n * 4);
        }
    } else if (!strcmp(cmd, "dot")) {
        ox_type t = (ox_type)atoi(argv[2]), at = ox_type_vec_dot(t);
        size_t rows = (size_t)atol(argv[3]), cols = (size_t)atol(argv[4]), ntok = (size_t)atol(argv[5]);
        size_t wb = row_bytes(t, cols), ab = at == OX_F32 ? cols * 4 : row_bytes(at, cols);
        uint8_t *w = in(rows * wb), *a = in(ntok * ab);
        float *y = malloc(rows * ntok * 4);
        for (size_t k = 0; k < ntok; k++)
            for (size_t r = 0; r < rows; r++) y[k * rows + r] = ox_vec_dot_ref(t, w + r * wb, a + k * ab, cols);
        out(y, rows * ntok * 4);
    } else if (!strcmp(cmd, "rms")) {
        int n = atoi(argv[2]), hasw = atoi(argv[4]);
        float eps = (float)atof(argv[3]), *w = hasw ? in((size_t)n * 4) : NULL, *x = in((size_t)n * 4),
              *y = malloc((size_t)n * 4);
        ox_rmsnorm_ref(y, x, w, n, eps);
        out(y, (size_t)n * 4);
    } else if (!strcmp(cmd, "rope")) {
        int hd = atoi(argv[2]), pos = atoi(argv[3]), pairs = atoi(argv[4]);
        float *x = in((size_t)hd * 4);
        ox_rope_ref(x, hd, pos, pairs, (float)atof(argv[5]), (float)atof(argv[6]));
        out(x, (size_t)hd * 4);
    } else if (!strcmp(cmd, "softmax")) {
        int n = atoi(argv[2]);
        float *x = in((size_t)n * 4);
        ox_softmax_ref(x, n);
        out(x, (size_t)n * 4);
    } else if (!strcmp(cmd, "geglu")) {
        int n = atoi(argv[2]);
        float *g = in((size_t)n * 4), *u = in((size_t)n * 4), *y = malloc((size_t)n * 4);
        ox_geglu(y, g, u, n);
        out(y, (size_t)n * 4);
    } else {
        fprintf(stderr, "ref_helper: unknown command %s\n", cmd);
        return 2;
    }
    return 0;
}
