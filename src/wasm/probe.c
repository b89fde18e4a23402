/* probe.c — the memory read bandwidth this wasm build can reach: the ceiling the benchmark
 * (tools/bench.mjs) holds decode speed against. Decode streams every weight once per token,
 * so (weight bytes touched per token × tok/s) / this figure says how close the kernels are
 * to the memory limit.
 *
 * ox_probe_read_bandwidth(n_threads, mbytes, reps) sizes the engine's pool to n_threads
 * (the same pool the kernels use), allocates an mbytes MB buffer (larger than any cache),
 * touches it once, then `reps` times streams the whole buffer with 128-bit SIMD loads split
 * in n_threads contiguous slices, one per pool thread. Returns the best rep's bytes/s, or a
 * negative OX_E_* code (bad argument, out of memory, pool error). The pool is left at
 * n_threads: load a model afterwards, or call ox_wasm_set_threads, to resize it.
 * Benchmark only: declared in abi.h with the other exports; the package never calls it. */
#include "wasm/abi.h"

#include <emscripten.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "base/err.h"
#include "kernels/pool.h"
#include "wasm/abi.h"

typedef struct {
    const v128_t *buf;
    size_t n_vec;
    v128_t *sink; /* one per task: keeps the loads from being optimized away */
} probe_ctx;

static void probe_task(void *p, int task, int n_tasks) {
    probe_ctx *c = p;
    size_t lo = c->n_vec * task / n_tasks, hi = c->n_vec * (task + 1) / n_tasks;
    const v128_t *b = c->buf;
    /* four independent accumulators: loads, not the add chain, set the pace */
    v128_t a0 = wasm_i32x4_splat(0), a1 = a0, a2 = a0, a3 = a0;
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        a0 = wasm_i32x4_add(a0, wasm_v128_load(b + i));
        a1 = wasm_i32x4_add(a1, wasm_v128_load(b + i + 1));
        a2 = wasm_i32x4_add(a2, wasm_v128_load(b + i + 2));
        a3 = wasm_i32x4_add(a3, wasm_v128_load(b + i + 3));
    }
    for (; i < hi; i++) a0 = wasm_i32x4_add(a0, wasm_v128_load(b + i));
    c->sink[task] = wasm_i32x4_add(wasm_i32x4_add(a0, a1), wasm_i32x4_add(a2, a3));
}

OX_EXPORT double ox_probe_read_bandwidth(int n_threads, int mbytes, int reps) {
    if (n_threads < 1 || mbytes < 1 || mbytes > 2048 || reps < 1) return OX_E_RANGE;
    ox_err err = {0};
    if (ox_pool_init(n_threads, &err) < 0) return err.code ? err.code : OX_E_RANGE;
    size_t bytes = (size_t)mbytes << 20;
    v128_t *buf = aligned_alloc(64, bytes);
    v128_t *sink = aligned_alloc(16, sizeof(v128_t) * n_threads);
    if (!buf || !sink) {
        free(buf);
        free(sink);
        return OX_E_NOMEM;
    }
    memset(buf, 1, bytes); /* commit the pages before timing */
    probe_ctx c = {buf, bytes / sizeof(v128_t), sink};
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = emscripten_get_now();
        ox_pool_run(probe_task, &c, n_threads);
        double s = (emscripten_get_now() - t0) / 1000;
        if (s > 0 && bytes / s > best) best = bytes / s;
    }
    free(buf);
    free(sink);
    return best;
}
