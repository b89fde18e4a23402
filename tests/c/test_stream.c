/* test_stream.c — weights left on the host (load option stream, model/weights_cache.h): logits
 * bitwise equal to the fully resident engine with caches far smaller than the streamed
 * weights (experts evicted, dense weights through the transit area), the cache's counters,
 * a host error in the middle of a streamed read (a coded IO error, the engine usable after),
 * and the option errors. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/model.h"
#include "writers/synth.h"

static char tmp[256];
enum { N = 20 }; /* tokens per test sequence: several windows (8) and many expert choices */

static const char *fixture(const char *name, const ox_synth *s) {
    static char paths[16][400];
    static int n;
    char *p = paths[n];
    snprintf(p, sizeof paths[0], "%s/%s", tmp, name);
    ox_err err = {0};
    if (ox_synth_write_gguf(s, p, &err)) {
        fprintf(stderr, "synth %s: %s\n", name, err.msg);
        return NULL;
    }
    n++;
    return p;
}

static ox_synth preset(const char *name, ox_type type) {
    ox_synth s;
    ox_synth_preset(&s, name, NULL);
    s.type = s.embd_type = s.ple_type = s.ple_proj_type = type;
    s.window = 8;
    if (s.moe) s.n_experts = 16, s.top_k = 4; /* 4 of 16 per token: a small cache must evict */
    return s;
}

static ox_model *load(const char *path, ox_stream st, uint64_t cache, ox_quant q, ox_err *err) {
    int h = ox_host_open_path(path, err);
    if (h < 0) return NULL;
    ox_model_files *mf = ox_files_open(&h, 1, err);
    ox_load_opts o = {.quant = q, .stream = st, .weight_cache = cache};
    return mf ? ox_model_load(mf, &o, err) : NULL;
}

static void seq(int32_t *t, int n, int vocab) {
    uint32_t r = 4242;
    t[0] = 2;
    for (int i = 1; i < n; i++) t[i] = (int32_t)(((r = r * 1664525u + 1013904223u) >> 9) % (uint32_t)vocab);
}

/* All-position logits, `step` tokens per forward (NULL on an error, printed). */
static float *logits_of(ox_model *m, const int32_t *t, int n, int step) {
    int V = ox_model_config(m)->vocab;
    float *lg = malloc(sizeof *lg * (size_t)n * V);
    ox_err err = {0};
    ox_session *s = ox_session_new(m, 0, &err);
    for (int i = 0; s && lg && i < n; i += step) {
        int k = n - i < step ? n - i : step;
        ox_forward_io io = {.tokens = t + i, .n = k, .logits = lg + (size_t)i * V, .all_logits = 1};
        if (ox_forward(s, &io, &err)) {
            fprintf(stderr, "forward: %s\n", err.msg);
            free(lg);
            lg = NULL;
        }
    }
    ox_session_free(s);
    return lg;
}

/* The smallest cache the model takes in this mode, read from the RANGE error of a 1-byte one. */
static uint64_t min_cache(const char *path, ox_stream st) {
    ox_err err = {0};
    ox_model *m = load(path, st, 1, OX_QUANT_STORED, &err);
    unsigned long long need = 0;
    CHECK(m == NULL && err.code == OX_E_RANGE);
    const char *p = strstr(err.msg, "less than the ");
    CHECK_MSG(p && sscanf(p, "less than the %llu", &need) == 1, "%s", err.msg);
    ox_model_free(m);
    return need;
}

/* Load p streaming `mode` through `cache` bytes; its logits (one batch, and one token per
 * forward) equal the resident ones bit for bit (want: the resident engine's, batch then step:
 * matrix-matrix and matrix-vector products round differently). 0 and the stats, or -1. */
static int check_same(const char *p, ox_stream mode, uint64_t cache, float *const *want, const char *what,
                      ox_model_stats *st) {
    ox_err err = {0};
    ox_model *m = load(p, mode, cache, OX_QUANT_STORED, &err);
    CHECK_MSG(m != NULL, "%s: %s", what, err.msg);
    if (!m) return -1;
    int32_t t[N];
    seq(t, N, ox_model_config(m)->vocab);
    size_t nv = (size_t)N * ox_model_config(m)->vocab;
    float *batch = logits_of(m, t, N, N), *step = logits_of(m, t, N, 1);
    CHECK_MSG(batch && !memcmp(batch, want[0], nv * sizeof *batch), "%s: batch logits differ", what);
    CHECK_MSG(step && !memcmp(step, want[1], nv * sizeof *step), "%s: step logits differ", what);
    ox_model_stats_get(m, st);
    printf("  %s: %llu misses, %llu hits, %.2f MB streamed, %.2f MB resident\n", what,
           (unsigned long long)st->stream_misses, (unsigned long long)st->stream_hits, st->stream_bytes / 1e6,
           st->resident_bytes / 1e6);
    free(batch);
    free(step);
    ox_model_free(m);
    return 0;
}

/* The resident engine's logits of the test sequence: want[0] in one batch, want[1] by steps. */
static int resident_logits(const char *path, uint64_t *resident, float **want) {
    ox_err err = {0};
    ox_model *m = path ? load(path, OX_STREAM_NONE, 0, OX_QUANT_STORED, &err) : NULL;
    CHECK_MSG(m != NULL, "%s", err.msg);
    if (!m) return -1;
    int32_t t[N];
    seq(t, N, ox_model_config(m)->vocab);
    ox_model_stats st;
    ox_model_stats_get(m, &st);
    *resident = st.resident_bytes;
    want[0] = logits_of(m, t, N, N);
    want[1] = logits_of(m, t, N, 1);
    ox_model_free(m);
    return want[0] && want[1] ? 0 : -1;
}

/* MoE: experts streamed through caches of one expert, a few, and all of them. */
static void test_experts(void) {
    const ox_type types[] = {OX_Q8_0, OX_Q4_K};
    for (int ti = 0; ti < 2; ti++) {
        ox_synth s = preset("moe", types[ti]);
        char name[64];
        snprintf(name, sizeof name, "moe-%s.gguf", ox_type_name(types[ti]));
        const char *p = fixture(name, &s);
        uint64_t res = 0;
        float *want[2] = {NULL, NULL};
        if (resident_logits(p, &res, want)) {
            CHECK(0);
            continue;
        }
        uint64_t unit = min_cache(p, OX_STREAM_EXPERTS);
        int keys = 2 * s.n_experts * s.layers; /* gate_up and down blocks */
        const uint64_t caches[] = {unit, (uint64_t)keys / 8 * unit, (uint64_t)keys * unit}; /* none, 1/4, all */
        for (int ci = 0; ci < 3; ci++) {
            char what[96];
            snprintf(what, sizeof what, "moe %s, experts, cache %llu B", ox_type_name(types[ti]),
                     (unsigned long long)caches[ci]);
            ox_model_stats st;
            if (check_same(p, OX_STREAM_EXPERTS, caches[ci], want, what, &st)) continue;
            CHECK(st.stream_misses > 0 && st.stream_bytes > 0);
            CHECK(st.resident_bytes < res);
            if (ci < 2) CHECK_MSG(st.stream_misses > (uint64_t)keys, "%s: no eviction", what); /* blocks read again */
            else CHECK_MSG(st.stream_misses <= (uint64_t)keys && st.stream_hits > 0, "%s: all fit", what);
            if (ci == 1) CHECK(st.stream_hits > 0); /* a few experts kept between tokens */
        }
        free(want[0]);
        free(want[1]);
    }
}

/* Dense (PLE, KV sharing, double-wide layers) and MoE with every layer weight streamed: all
 * through transit (the smallest cache), and all admitted (a cache as large as the model). */
static void test_all(void) {
    const char *presets[] = {"tiny", "moe"};
    for (int pi = 0; pi < 2; pi++) {
        ox_synth s = preset(presets[pi], OX_Q8_0);
        char name[64];
        snprintf(name, sizeof name, "%s-all-q8_0.gguf", presets[pi]);
        const char *p = fixture(name, &s);
        uint64_t res = 0;
        float *want[2] = {NULL, NULL};
        if (resident_logits(p, &res, want)) {
            CHECK(0);
            continue;
        }
        uint64_t unit = min_cache(p, OX_STREAM_ALL);
        const uint64_t caches[] = {unit, unit + res};
        for (int ci = 0; ci < 2; ci++) {
            char what[96];
            snprintf(what, sizeof what, "%s, all, cache %llu B", presets[pi], (unsigned long long)caches[ci]);
            ox_model_stats st;
            if (check_same(p, OX_STREAM_ALL, caches[ci], want, what, &st)) continue;
            if (ci == 0 && !s.moe) CHECK_MSG(st.stream_hits == 0, "%s: nothing admitted", what);
            if (ci == 1) CHECK_MSG(st.stream_hits > st.stream_misses, "%s: kept", what);
        }
        free(want[0]);
        free(want[1]);
    }
}

static int copy_file(const char *src, const char *dst) {
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    char buf[1 << 16];
    size_t k;
    int rc = a && b ? 0 : -1;
    while (!rc && (k = fread(buf, 1, sizeof buf, a)) > 0) rc = fwrite(buf, 1, k, b) == k ? 0 : -1;
    if (a) fclose(a);
    if (b && fclose(b)) rc = -1;
    return rc;
}

/* The file loses its second half under a streamed read: the forward ends in IO naming the
 * file, the session stays where it was; with the file back, the same session goes on and its
 * logits equal the resident engine's. */
static void test_host_error(void) {
    for (int mode = OX_STREAM_EXPERTS; mode <= OX_STREAM_ALL; mode++) {
        ox_synth s = preset("moe", OX_Q8_0);
        char src[300], p[300];
        snprintf(src, sizeof src, "%s/moe-err-src.gguf", tmp);
        snprintf(p, sizeof p, "%s/moe-err.gguf", tmp);
        ox_err err = {0};
        if (ox_synth_write_gguf(&s, src, &err) || copy_file(src, p)) {
            CHECK(0);
            return;
        }
        uint64_t res = 0;
        float *want[2] = {NULL, NULL}; /* the session runs one token per forward: want[1] */
        int ok = resident_logits(src, &res, want) == 0;
        uint64_t unit = min_cache(p, (ox_stream)mode);
        ox_model *m = load(p, (ox_stream)mode, unit, OX_QUANT_STORED, &err);
        CHECK_MSG(m && ok, "%s", err.msg);
        if (!m || !ok) {
            free(want[0]);
            free(want[1]);
            ox_model_free(m);
            return;
        }
        int32_t t[N];
        seq(t, N, s.vocab);
        int V = s.vocab;
        float *lg = malloc(sizeof *lg * (size_t)V);
        ox_session *ss = ox_session_new(m, 0, &err);
        ox_forward_io io;
        for (int i = 0; i < N / 2; i++) {
            io = (ox_forward_io){.tokens = t + i, .n = 1};
            CHECK(ox_forward(ss, &io, &err) == 0);
        }
        long size = 0;
        FILE *f = fopen(p, "rb");
        if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
        if (f) fclose(f);
        CHECK(size > 0 && truncate(p, size / 2) == 0);
        io = (ox_forward_io){.tokens = t + N / 2, .n = 1, .logits = lg};
        err = (ox_err){0};
        int rc = ox_forward(ss, &io, &err);
        CHECK_MSG(rc == OX_E_IO, "mode %d: rc %d: %s", mode, rc, err.msg);
        CHECK_STR_CONTAINS(err.msg, "moe-err.gguf");
        CHECK(ox_session_pos(ss) == N / 2);
        printf("  streamed read of a cut file (mode %d): %s: %s\n", mode, ox_err_code_name(err.code), err.msg);
        CHECK(copy_file(src, p) == 0);
        for (int i = N / 2; i < N; i++) {
            io = (ox_forward_io){.tokens = t + i, .n = 1, .logits = lg};
            CHECK_MSG(ox_forward(ss, &io, &err) == 0, "after the error: %s", err.msg);
            CHECK_MSG(!memcmp(lg, want[1] + (size_t)i * V, sizeof *lg * (size_t)V), "mode %d: logits at %d", mode, i);
        }
        ox_session_free(ss);
        ox_model_free(m);
        free(lg);
        free(want[0]);
        free(want[1]);
    }
}

static void test_option_errors(void) {
    ox_synth s = preset("tiny", OX_F32);
    const char *p = fixture("tiny-opt-f32.gguf", &s);
    ox_err err = {0};
    ox_model *m = load(p, OX_STREAM_EXPERTS, 1 << 20, OX_QUANT_STORED, &err);
    CHECK(m == NULL && err.code == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "no routed experts");
    err = (ox_err){0};
    m = load(p, OX_STREAM_ALL, 0, OX_QUANT_STORED, &err);
    CHECK(m == NULL && err.code == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "weight cache size");
    err = (ox_err){0};
    m = load(p, (ox_stream)7, 1 << 20, OX_QUANT_STORED, &err);
    CHECK(m == NULL && err.code == OX_E_RANGE);
    err = (ox_err){0};
    m = load(p, OX_STREAM_ALL, 64u << 20, OX_QUANT_Q8, &err); /* f32 file converted on load */
    CHECK_MSG(err.code == OX_E_UNSUPPORTED, "%s", err.msg);
    CHECK_STR_CONTAINS(err.msg, "tiny-opt-f32.gguf");
    CHECK_STR_CONTAINS(err.msg, "streamed weights run as stored");
    CHECK(m == NULL);
    /* max_resident counts the cache */
    err = (ox_err){0};
    int h = ox_host_open_path(p, &err);
    ox_load_opts o = {.stream = OX_STREAM_ALL, .weight_cache = 64u << 20, .max_resident = 64u << 20};
    m = ox_model_load(ox_files_open(&h, 1, &err), &o, &err);
    CHECK(m == NULL && err.code == OX_E_NOMEM);
    CHECK_STR_CONTAINS(err.msg, "weight cache");
    err = (ox_err){0};
    m = load(p, OX_STREAM_ALL, 64u << 20, OX_QUANT_STORED, &err); /* and f32 streams as stored */
    CHECK_MSG(m != NULL, "%s", err.msg);
    ox_model_free(m);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_stream_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_pool_init(2, NULL);
    RUN(test_experts);
    RUN(test_all);
    RUN(test_host_error);
    RUN(test_option_errors);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    ox_pool_shutdown();
    return check_summary("test_stream");
}
