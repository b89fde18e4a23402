/* test_kv.c — the KV cache (model/kv.h): the attention kernels against their scalar
 * references; sliding-window rings against a full cache (f32: bitwise equal logits) across
 * several wraps, with micro-batches, speculative verify batches truncated across a wrap,
 * prefix reuse (near: kept; too far back: recomputed), clones and drafted generation; each
 * KV type against the float64 reference and against f32; ox_kv_bytes against what sessions
 * allocate; the errors; where a GPU layer split lands (a CPU layer never reads a GPU layer's
 * cache) and what the GPU backend registers. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/attn.h"
#include "decode/generate.h"
#include "model/gpu_attach.h"
#include "model/model_impl.h"
#include "writers/synth.h"

#include "ref_forward.c" /* the test build makes one executable per test_*.c file */

static char tmp[256];
static ox_model *model; /* tiny, window 16: the ring holds 16 + OX_UBATCH - 1 positions */
static int V;

static uint32_t rng = 12345;
static float frand(void) { return (float)((rng = rng * 1664525u + 1013904223u) >> 8) / 16777216.0f * 2 - 1; }

static void tokens_of(int32_t *t, int n, uint32_t r) {
    t[0] = 2;
    for (int i = 1; i < n; i++) t[i] = 7 + (int32_t)((r = r * 1664525u + 1013904223u) >> 9) % (V - 7);
}

static ox_model *load_path(const char *path) {
    ox_err err = {0};
    int h = ox_host_open_path(path, &err);
    ox_model_files *mf = h >= 0 ? ox_files_open(&h, 1, &err) : NULL;
    ox_load_opts o = {0};
    ox_model *m = mf ? ox_model_load(mf, &o, &err) : NULL;
    if (!m) fprintf(stderr, "load %s: %s\n", path, err.msg);
    return m;
}

static ox_model *synth_model(const char *name, ox_synth *s) {
    char p[300];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    ox_err err = {0};
    if (ox_synth_write_gguf(s, p, &err)) {
        fprintf(stderr, "synth %s: %s\n", name, err.msg);
        return NULL;
    }
    return load_path(p);
}

/* ---- kernels ---- */

static void test_kernels(void) {
    enum { N = 512 };
    float q[N], v[N], y0[N], y1[N];
    ox_f16 h[N];
    ox_block_q8_0 b[N / OX_QK];
    double worst_dot = 0, worst_axpy = 0, worst_ref = 0;
    for (int trial = 0; trial < 50; trial++) {
        int n = trial % 2 ? N : 64 + 32 * (trial % 8); /* head widths 64..288 and 512 */
        for (int i = 0; i < n; i++) q[i] = frand() * 4, v[i] = frand() * 3;
        for (int i = 0; i < n; i++) h[i] = ox_f32_to_f16(v[i]);
        ox_quantize_row(OX_Q8_0, v, b, (size_t)n);
        float deq[N];
        ox_dequantize_row(OX_Q8_0, b, deq, (size_t)n);
        double e16 = 0, e8 = 0, mag = 0;
        for (int i = 0; i < n; i++) {
            e16 += (double)q[i] * ox_f16_to_f32(h[i]);
            e8 += (double)q[i] * deq[i];
            mag += fabs(q[i] * v[i]);
        }
        worst_ref = fmax(worst_ref, fabs(ox_dot_f16_ref(q, h, n) - e16) / mag);
        worst_ref = fmax(worst_ref, fabs(ox_dot_q8_0_ref(q, b, n) - e8) / mag);
        worst_dot = fmax(worst_dot, fabs(ox_dot_f16(q, h, n) - ox_dot_f16_ref(q, h, n)) / mag);
        worst_dot = fmax(worst_dot, fabs(ox_dot_q8_0(q, b, n) - ox_dot_q8_0_ref(q, b, n)) / mag);
        float a = frand();
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < n; i++) y0[i] = y1[i] = q[i];
            if (k) ox_axpy_q8_0(y0, a, b, n), ox_axpy_q8_0_ref(y1, a, b, n);
            else ox_axpy_f16(y0, a, h, n), ox_axpy_f16_ref(y1, a, h, n);
            for (int i = 0; i < n; i++) {
                double want = q[i] + (double)a * (k ? deq[i] : ox_f16_to_f32(h[i]));
                worst_axpy = fmax(worst_axpy, fabs(y0[i] - y1[i]));
                worst_ref = fmax(worst_ref, fabs(y1[i] - want) / 8);
            }
        }
    }
    CHECK_MSG(worst_ref < 1e-6, "references vs float64: %g", worst_ref);
    CHECK_MSG(worst_dot < 1e-6, "fast dots vs references: %g", worst_dot);
    CHECK_MSG(worst_axpy < 1e-5, "fast axpy vs references: %g", worst_axpy);
    /* exact stored values: f16 round trip and a Q8_0 block's extremes */
    ox_f16 one = ox_f32_to_f16(1.0f), sub = 1; /* smallest subnormal */
    ox_f16 hv[32];
    for (int i = 0; i < 32; i++) hv[i] = i % 2 ? one : sub, q[i] = 1;
    CHECK(ox_dot_f16(q, hv, 32) == ox_dot_f16_ref(q, hv, 32));
    CHECK(ox_dot_f16_ref(q, hv, 32) == 16.0f + 16 * ox_f16_to_f32(sub));
}

/* ---- ring vs full ---- */

/* Run t[0, n) from the session's position in chunks of the given sizes (cycled), every
 * row's logits into lg (n * V). */
static int run_chunks(ox_session *s, const int32_t *t, int n, const int *chunks, int n_chunks, float *lg) {
    ox_err err = {0};
    for (int i = 0, c = 0; i < n; c++) {
        int k = chunks[c % n_chunks] < n - i ? chunks[c % n_chunks] : n - i;
        ox_forward_io io = {.tokens = t + i, .n = k, .logits = lg + (size_t)i * V, .all_logits = 1};
        if (ox_forward(s, &io, &err)) {
            fprintf(stderr, "forward at %d: %s\n", ox_session_pos(s), err.msg);
            return -1;
        }
        i += k;
    }
    return 0;
}

static int rows_equal(const float *a, const float *b, int n) { return !memcmp(a, b, sizeof *a * (size_t)n * V); }

static uint64_t session_kv_bytes(const ox_session *s) {
    uint64_t b = 0;
    for (int l = 0; l < s->m->c.n_layers; l++) b += ox_kv_alloc_bytes(&s->kv[l]);
    return b;
}

static void test_ring_vs_full(void) {
    ox_err err = {0};
    ox_session *r = ox_session_new_kv(model, 0, OX_KV_F32, &err), *f = ox_session_new_rings(model, 0, OX_KV_F32, 0, &err);
    CHECK(r && f);
    if (!r || !f) return;
    int cap = r->kv[0].max_cap, n0 = 3 * cap - 8, N = n0 + 400;
    CHECK(r->kv[0].ring && cap == 16 + OX_UBATCH - 1 && !f->kv[0].ring);
    int32_t *t = malloc(sizeof *t * (size_t)N);
    float *lr = malloc(sizeof *lr * (size_t)N * V), *lf = malloc(sizeof *lf * (size_t)N * V);
    tokens_of(t, N, 42);
    /* to 3 rings less 8 positions (about 3 wraps) in mixed chunks: single tokens, a verify
     * batch, a full micro-batch, a prompt split into micro-batches */
    static const int chunks[] = {1, 17, 300, 3, 256, 1, 1, 40};
    CHECK(!run_chunks(r, t, n0, chunks, 8, lr) && !run_chunks(f, t, n0, chunks, 8, lf));
    CHECK_MSG(rows_equal(lr, lf, n0), "ring vs full logits over %d positions", n0);
    CHECK(r->kv[0].lo == n0 - cap); /* the last ring's worth: [n0 - cap, n0) */
    CHECK_MSG(session_kv_bytes(r) < session_kv_bytes(f), "%llu vs %llu bytes", (unsigned long long)session_kv_bytes(r),
              (unsigned long long)session_kv_bytes(f));

    /* speculative verify batches across the wrap: 17 rows, keep 5; 17, keep 9; then on */
    int p = n0, ok = 1;
    for (int round = 0; round < 2; round++) {
        int keep = round ? 9 : 5;
        ok &= !run_chunks(r, t + p, 17, (int[]){17}, 1, lr + (size_t)p * V);
        ok &= !run_chunks(f, t + p, 17, (int[]){17}, 1, lf + (size_t)p * V);
        ok &= rows_equal(lr + (size_t)p * V, lf + (size_t)p * V, 17);
        p += keep;
        ok &= !ox_session_truncate(r, p, &err) && !ox_session_truncate(f, p, &err);
        /* the dropped rows are overwritten by other tokens */
        for (int i = p; i < p + 12; i++) t[i] = 7 + (t[i] + 31) % (V - 7);
    }
    CHECK_MSG(ok, "verify batches across the wrap: %s", err.msg);
    CHECK(!run_chunks(r, t + p, N - p, (int[]){1, 2, 17}, 3, lr + (size_t)p * V));
    CHECK(!run_chunks(f, t + p, N - p, (int[]){1, 2, 17}, 3, lf + (size_t)p * V));
    CHECK_MSG(rows_equal(lr + (size_t)n0 * V, lf + (size_t)n0 * V, N - n0), "after truncations");

    /* a clone of a wrapped ring goes on the same way */
    ox_session *c = ox_session_clone(r, &err);
    CHECK(c && c->kv[0].lo == r->kv[0].lo);
    float *lc = malloc(sizeof *lc * (size_t)40 * V);
    int32_t more[40];
    tokens_of(more, 40, 7);
    CHECK(c && !run_chunks(c, more, 40, (int[]){1, 39}, 2, lc) && !run_chunks(f, more, 40, (int[]){1, 39}, 2, lf));
    CHECK_MSG(rows_equal(lc, lf, 40), "clone of a wrapped ring");
    ox_session_free(c);
    CHECK(!ox_session_truncate(f, N, &err));

    /* prefix reuse near the end: kept */
    int32_t *u = malloc(sizeof *u * (size_t)N);
    memcpy(u, t, sizeof *u * (size_t)N);
    int keep = N - 10;
    for (int i = keep; i < N; i++) u[i] = 7 + (u[i] + 5) % (V - 7);
    CHECK(ox_session_reuse(r, u, N, &err) == keep && ox_session_reuse(f, u, N, &err) == keep);
    CHECK(!run_chunks(r, u + keep, N - keep, (int[]){10}, 1, lr) &&
          !run_chunks(f, u + keep, N - keep, (int[]){10}, 1, lf));
    CHECK_MSG(rows_equal(lr, lf, N - keep), "reuse within the ring");

    /* too far back: truncation refuses, reuse falls back to 0 and the rerun matches a fresh
     * full cache run the same way */
    int far = 300;
    CHECK(ox_session_truncate(r, far, &err) == OX_E_STATE);
    CHECK_STR_CONTAINS(err.msg, "no longer hold");
    CHECK(ox_session_pos(r) == N);
    for (int i = far; i < N; i++) u[i] = 7 + (u[i] + 11) % (V - 7);
    CHECK(ox_session_reuse(r, u, N, &err) == 0 && r->kv[0].lo == 0);
    ox_session *g = ox_session_new_rings(model, 0, OX_KV_F32, 0, &err);
    CHECK(g && !run_chunks(r, u, N, chunks, 8, lr) && !run_chunks(g, u, N, chunks, 8, lf));
    CHECK_MSG(rows_equal(lr, lf, N), "recomputed after a reuse too far back");
    /* the full cache keeps the far prefix */
    CHECK(ox_session_reuse(f, u, N, &err) == far);
    ox_session_free(g);
    free(t), free(u), free(lr), free(lf), free(lc);
    ox_session_free(r);
    ox_session_free(f);
}

/* Drafted (speculative) greedy generation over several wraps: the same tokens as with a full
 * cache, with drafts kept and rejected along the way. */
static void test_generate_wraps(void) {
    ox_err err = {0};
    int32_t prompt[300], out[2][700];
    for (int i = 0; i < 300; i++) prompt[i] = 7 + (i % 23) * 3; /* repetitive: drafts hit */
    ox_gen_counts counts[2];
    int n[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        ox_session *s = ox_session_new_rings(model, 0, OX_KV_F32, !k, &err);
        ox_gen_params p;
        ox_gen_defaults(&p);
        p.sampler.temperature = 0, p.max_tokens = 700, p.use_eos = 0, p.draft_tokens = 8;
        ox_gen *g = s ? ox_gen_new(s, NULL, &p, &err) : NULL;
        CHECK(g && ox_gen_start(g, prompt, 300, &err) == 0);
        while (g && ox_gen_prefill(g, 128, &err) > 0) {}
        ox_gen_token tok;
        int st = OX_GEN_TOKEN;
        while (g && st == OX_GEN_TOKEN && (st = ox_gen_step(g, &tok, &err)) >= 0)
            if (tok.token >= 0 && n[k] < 700) out[k][n[k]++] = tok.token;
        CHECK_MSG(st == OX_GEN_LENGTH, "status %d: %s", st, err.msg);
        if (g) counts[k] = *ox_gen_counts_of(g);
        if (!k) CHECK(s->kv[0].ring && ox_session_pos(s) > 3 * s->kv[0].max_cap);
        ox_gen_free(g);
        ox_session_free(s);
    }
    CHECK(n[0] == 700 && n[1] == 700 && !memcmp(out[0], out[1], sizeof out[0]));
    CHECK(counts[0].accepted == counts[1].accepted && counts[0].drafted == counts[1].drafted);
    CHECK_MSG(counts[0].accepted > 0 && counts[0].accepted < counts[0].drafted, "drafted %d, accepted %d",
              counts[0].drafted, counts[0].accepted);
}

/* ---- KV types ---- */

static double max_dlogp(const float *a, const float *bf, const double *bd, int n) {
    double worst = 0, *x = malloc(sizeof *x * V), *y = malloc(sizeof *y * V);
    for (int i = 0; i < n; i++) {
        const float *ar = a + (size_t)i * V;
        double mx = -INFINITY, my = -INFINITY, sx = 0, sy = 0;
        for (int v = 0; v < V; v++) {
            x[v] = ar[v];
            y[v] = bd ? bd[(size_t)i * V + v] : bf[(size_t)i * V + v];
            mx = fmax(mx, x[v]), my = fmax(my, y[v]);
        }
        for (int v = 0; v < V; v++) sx += exp(x[v] - mx), sy += exp(y[v] - my);
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((x[v] - mx - log(sx)) - (y[v] - my - log(sy))));
    }
    free(x), free(y);
    return worst;
}

static void test_types(void) {
    enum { N = 120 };
    char msg[256];
    ref_model *ref = ref_load(ox_model_files_of(model), msg, sizeof msg);
    CHECK_MSG(ref, "%s", msg);
    if (!ref) return;
    int32_t t[N];
    tokens_of(t, N, 3);
    double *want = malloc(sizeof *want * (size_t)N * V);
    CHECK(ref_forward(ref, t, N, NULL, NULL, want) == 0);
    float *lg[OX_KV_N_TYPES];
    /* f16 rounds each K/V value to 11 significant bits, Q8_0 to 8 bits per block of 32; this
     * random model amplifies that to max |dlogp| 9.4e-6 (f32) / 0.012 (f16) / 0.19 (q8_0)
     * nats over 120 positions (measured; Q8_0 weights move it 0.25-0.47, test_model.c).
     * Bounds about 2.5x that; a wrong dot or layout is off by nats. */
    static const double tol_ref[] = {3e-5, 0.03, 0.5}, tol_f32[] = {0, 0.03, 0.5};
    for (int k = 0; k < OX_KV_N_TYPES; k++) {
        ox_err err = {0};
        ox_session *s = ox_session_new_kv(model, 0, (ox_kv_type)k, &err);
        lg[k] = malloc(sizeof *lg[k] * (size_t)N * V);
        CHECK(s && ox_session_kv_type(s) == (ox_kv_type)k && !run_chunks(s, t, N, (int[]){1, 30, 9}, 3, lg[k]));
        double dr = max_dlogp(lg[k], NULL, want, N), df = max_dlogp(lg[k], lg[0], NULL, N);
        fprintf(stderr, "kv type %d: max |dlogp| vs float64 %.3g, vs f32 cache %.3g\n", k, dr, df);
        CHECK_MSG(dr <= tol_ref[k], "type %d vs float64: %g", k, dr);
        CHECK_MSG(df <= tol_f32[k], "type %d vs f32: %g", k, df);
        if (k) CHECK_MSG(df > 0, "type %d gives the f32 logits: not stored in that type?", k);
        ox_session_free(s);
    }
    for (int k = 0; k < OX_KV_N_TYPES; k++) free(lg[k]);
    free(want);
    ref_free(ref);
}

/* ---- sizes and errors ---- */

static void test_bytes(void) {
    const ox_config *c = ox_model_config(model);
    int32_t t[400];
    tokens_of(t, 400, 9);
    float *lg = malloc(sizeof *lg * (size_t)400 * V);
    for (int k = 0; k < OX_KV_N_TYPES; k++)
        for (int ctx = 40; ctx <= 400; ctx += 360) { /* no ring yet / ring */
            ox_err err = {0};
            ox_model_stats before, after;
            ox_model_stats_get(model, &before);
            ox_session *s = ox_session_new_kv(model, ctx, (ox_kv_type)k, &err);
            CHECK(s && !run_chunks(s, t, ctx, (int[]){7, 256}, 2, lg));
            ox_model_stats_get(model, &after);
            uint64_t want = ox_kv_bytes(c, ctx, (ox_kv_type)k);
            CHECK_MSG(after.resident_bytes - before.resident_bytes == want, "type %d ctx %d: %llu allocated, %llu said",
                      k, ctx, (unsigned long long)(after.resident_bytes - before.resident_bytes),
                      (unsigned long long)want);
            ox_session_free(s);
            ox_model_stats_get(model, &after);
            CHECK(after.resident_bytes == before.resident_bytes);
        }
    free(lg);
    /* the arithmetic on this geometry: 3 own-KV layers (2 sliding, 1 full), 2 heads */
    uint64_t row = 2 * 64 * 4, grow = 2 * 128 * 4;
    CHECK(ox_kv_bytes(c, 4096, OX_KV_F32) == 2 * (2 * 271 * row + 4096 * grow));
    CHECK(ox_kv_bytes(c, 100, OX_KV_F16) == 2 * (2 * 100 * row / 2 + 100 * grow / 2));
    CHECK(ox_kv_bytes(c, 4096, OX_KV_Q8_0) == 2 * (2 * 271 * 2 * 2 * 34 + 4096 * 2 * 4 * 34));
    CHECK(ox_kv_bytes(c, 0, OX_KV_F32) == ox_kv_bytes(c, c->ctx_max, OX_KV_F32));
}

static void test_errors(void) {
    ox_err err = {0};
    CHECK(!ox_session_new_kv(model, 0, (ox_kv_type)7, &err));
    CHECK(err.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "kv.c: unknown KV type 7");
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.head_dim = 48, s.global_head_dim = 96, s.layers = 3, s.kv_shared = 0;
    ox_model *m = synth_model("hd48.gguf", &s);
    CHECK(m);
    if (!m) return;
    CHECK(!ox_session_new_kv(m, 0, OX_KV_Q8_0, &err));
    CHECK(err.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "multiples of 32");
    ox_session *f16 = ox_session_new_kv(m, 0, OX_KV_F16, &err);
    CHECK(f16); /* f16 stores any width; the engine stays usable */
    int32_t t[3] = {2, 9, 11};
    ox_forward_io io = {.tokens = t, .n = 3};
    CHECK(f16 && !ox_forward(f16, &io, &err));
    ox_session_free(f16);
    ox_model_free(m);
}

/* With OX_KV_MODEL=<gguf> (the E2B bench file): sessions of 4K / 32K / 128K positions of each
 * type reserved in full on that model allocate exactly ox_kv_bytes, and so does a real run of
 * 1024 positions (past the ring); the table of KV bytes and resident bytes (weights + KV) for
 * it and for the E4B geometry (its config with E4B's 42 layers, 2 KV heads, 18 KV-shared
 * layers, 5 : 1 pattern), rings against keeping every position. */
static ox_config e4b; /* big: not on the stack */
static void test_real_geometry(void) {
    const char *path = getenv("OX_KV_MODEL");
    if (!path) return;
    ox_model *m = load_path(path);
    CHECK(m);
    if (!m) return;
    const ox_config *c = ox_model_config(m);
    ox_model_stats st;
    ox_model_stats_get(m, &st);
    uint64_t weights = st.resident_bytes;
    e4b = *c;
    e4b.n_layers = 42, e4b.n_kv_heads = 2, e4b.n_kv_shared = 18, e4b.double_wide = 0;
    for (int l = 0; l < 42; l++) e4b.layers[l].full = l % 6 == 5;
    ox_err err = {0};
    CHECK_MSG(ox_config_derive(&e4b, "e4b", &err) == 0, "%s", err.msg);
    static const char *names[] = {"f32", "f16", "q8_0"};
    static const int ctxs[] = {4096, 32768, 131072};
    printf("| geometry | context | kvType | KV (rings) | KV (every position) | resident (weights + KV) |\n");
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < OX_KV_N_TYPES; k++) {
                const ox_config *gc = g ? &e4b : c;
                uint64_t want = ox_kv_bytes(gc, ctxs[i], (ox_kv_type)k), full = 0;
                for (int l = 0; l < gc->n_layers; l++)
                    if (!gc->layers[l].shared)
                        full += 2ull * ctxs[i] *
                                ox_kv_row_bytes((ox_kv_type)k, gc->layers[l].n_kv_heads, gc->layers[l].head_dim);
                if (!g) { /* the real session, reserved to its full context */
                    ox_session *s = ox_session_new_kv(m, ctxs[i], (ox_kv_type)k, &err);
                    CHECK(s && !ox_session_reserve(s, ctxs[i], &err));
                    ox_model_stats_get(m, &st);
                    CHECK_MSG(st.resident_bytes - weights == want, "%d %s: %llu allocated, %llu said", ctxs[i],
                              names[k], (unsigned long long)(st.resident_bytes - weights), (unsigned long long)want);
                    ox_session_free(s);
                }
                char res[32] = "(no E4B file)";
                if (!g) snprintf(res, sizeof res, "%.2f GiB", (weights + want) / 1073741824.0);
                printf("| %s | %d | %s | %.1f MiB | %.1f MiB | %s |\n", g ? "E4B" : "E2B", ctxs[i], names[k],
                       want / 1048576.0, full / 1048576.0, res);
            }
    printf("E2B weights resident: %.2f GiB\n", weights / 1073741824.0);
    /* a real run past the ring: 1024 positions in micro-batches */
    enum { N = 1024 };
    int32_t *t = malloc(sizeof *t * N);
    tokens_of(t, N, 5);
    for (int k = 0; k < OX_KV_N_TYPES; k++) {
        ox_session *s = ox_session_new_kv(m, 4096, (ox_kv_type)k, &err);
        ox_forward_io io = {.tokens = t, .n = N};
        CHECK_MSG(s && !ox_forward(s, &io, &err), "%s", err.msg);
        ox_model_stats_get(m, &st);
        CHECK_MSG(st.resident_bytes - weights == ox_kv_bytes(c, N, (ox_kv_type)k), "run of %d, %s: %llu allocated", N,
                  names[k], (unsigned long long)(st.resident_bytes - weights));
        ox_session_free(s);
    }
    free(t);
    ox_model_free(m);
}

/* ---- the GPU backend's layer split (model/gpu_attach.h; no device needed to register) ---- */

static int table_len(const ox_model *m) {
    int n = 0;
    ox_gpu_table(ox_model_gpu(m), &n);
    return n;
}

static void test_gpu_split(void) {
    const ox_config *c = ox_model_config(model);
    uint32_t all = 0xffffffffu;
    /* tiny: layers 3..5 share the caches of layers 1 and 2: a split before those keeps layer 1's
     * (and 2's) rows on the CPU too */
    for (int want = 1; want < c->n_layers; want++) {
        CHECK(ox_model_gpu_attach(model, want, all, NULL) == 0);
        CHECK(ox_model_gpu_layers(model) == want);
        CHECK(!ox_gpu_has(ox_model_gpu(model), &model->embd)); /* the head stays on the CPU */
        CHECK(ox_gpu_has(ox_model_gpu(model), &model->L[want - 1].o) &&
              !ox_gpu_has(ox_model_gpu(model), &model->L[want].o));
        /* layers 0, 1 sliding, 2 full; 3, 4 read 1 and 5 reads 2 */
        static const int bridged[6] = {0, 0, 1, 2, 2, 1};
        CHECK(ox_model_gpu_bridge(model, c->n_layers) == bridged[want]);
        CHECK(ox_model_gpu_bridge(model, 1) == (want >= 2 && want <= 4 ? 0 : -1));
        CHECK(ox_model_gpu_bridge(model, 2) == (want >= 3 ? (want <= 4 ? 1 : 0) : -1));
        CHECK(ox_model_gpu_bridge(model, 0) == -1);
        ox_model_gpu_detach(model);
        CHECK(ox_model_gpu_layers(model) == 0 && ox_model_gpu_bridge(model, c->n_layers) == 0);
    }
    CHECK(ox_model_gpu_attach(model, 0, all, NULL) == 0);
    CHECK(ox_model_gpu_layers(model) == c->n_layers && ox_gpu_has(ox_model_gpu(model), &model->embd));
    int whole = table_len(model);
    ox_model_gpu_detach(model);
    /* no F32 kernel: the matrices stay on the CPU (their ops run there), the vectors go up */
    CHECK(ox_model_gpu_attach(model, 0, all & ~(1u << OX_F32), NULL) == 0);
    CHECK(!ox_gpu_has(ox_model_gpu(model), &model->L[0].q) && ox_gpu_has(ox_model_gpu(model), model->L[0].attn_norm));
    CHECK(table_len(model) > 0 && table_len(model) < whole);
    ox_model_gpu_detach(model);

    /* the MoE preset shares no caches: every split is where it was asked; stacked experts of a
     * type without kernels refuse */
    ox_synth s;
    ox_synth_preset(&s, "moe", NULL);
    ox_model *m = synth_model("moe.gguf", &s);
    CHECK(m);
    if (!m) return;
    for (int want = 1; want <= ox_model_config(m)->n_layers; want++) {
        CHECK(ox_model_gpu_attach(m, want, all, NULL) == 0);
        CHECK(ox_model_gpu_layers(m) == want);
        ox_model_gpu_detach(m);
    }
    ox_err err = {0};
    CHECK(ox_model_gpu_attach(m, 0, all & ~(1u << OX_F32), &err) == OX_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "experts") != NULL);
    CHECK(ox_model_gpu_layers(m) == 0);
    ox_model_free(m);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_kv_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.branch_gain = 0.5f, s.qk_norm_scale = 0.5f; /* calmer: tight tolerances mean something */
    model = synth_model("tiny.gguf", &s);
    CHECK(model);
    if (model) {
        V = ox_model_config(model)->vocab;
        RUN(test_kernels);
        RUN(test_bytes);
        RUN(test_ring_vs_full);
        RUN(test_generate_wraps);
        RUN(test_types);
        RUN(test_errors);
        RUN(test_real_geometry);
        RUN(test_gpu_split);
    }
    ox_model_free(model);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return check_summary("test_kv");
}
