/* test_sampler.c — greedy, temperature, top-k/p, min-p, penalties, bias, seeded RNG.
 * Distributions are checked with a chi-square bound at a fixed seed (deterministic). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/sampler.h"

static ox_sampler *make(float temp, int top_k, float top_p, float min_p, uint64_t seed) {
    ox_sampler_params p;
    ox_sampler_defaults(&p);
    p.temperature = temp, p.top_k = top_k, p.top_p = top_p, p.min_p = min_p, p.seed = seed;
    ox_err err = {0};
    ox_sampler *s = ox_sampler_new(&p, &err);
    CHECK_MSG(s != NULL, "%s", err.msg);
    return s;
}

/* pseudo-random logits in [-4, 4) */
static void fill(float *l, int n, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        l[i] = (float)(seed >> 8) / (float)(1u << 24) * 8 - 4;
    }
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

/* chi-square of counts against probabilities q (only bins with q > 0; a count in a q == 0
 * bin is reported as failure through *stray) */
static double chi2(const int *count, const double *q, int n, int draws, int *stray) {
    double x = 0;
    *stray = 0;
    for (int i = 0; i < n; i++) {
        if (q[i] == 0) {
            *stray += count[i];
            continue;
        }
        double e = q[i] * draws;
        x += (count[i] - e) * (count[i] - e) / e;
    }
    return x;
}

/* draw `draws` samples; logits are restored each time (the sampler may modify them) */
static void draw(ox_sampler *s, const float *l, int n, int draws, int *count) {
    float *tmp = malloc(n * sizeof *tmp);
    memset(count, 0, n * sizeof *count);
    for (int k = 0; k < draws; k++) {
        memcpy(tmp, l, n * sizeof *tmp);
        int id = ox_sample(s, tmp, n, NULL, 0);
        if (id >= 0 && id < n) count[id]++;
    }
    free(tmp);
}

static void softmax(const float *l, int n, float temp, double *q) {
    double m = l[argmax(l, n)], z = 0;
    for (int i = 0; i < n; i++) z += q[i] = exp((l[i] - m) / temp);
    for (int i = 0; i < n; i++) q[i] /= z;
}

static void test_greedy(void) {
    enum { V = 262144 };
    float *l = malloc(V * sizeof *l), *t = malloc(V * sizeof *t);
    fill(l, V, 7);
    l[123457] = 10;
    ox_sampler *g = make(0, 64, 0.95f, 0, 1), *k1 = make(1.0f, 1, 1, 0, 2), *cold = make(1e-4f, 0, 1, 0, 3);
    for (int r = 0; r < 20; r++) {
        memcpy(t, l, V * sizeof *t);
        CHECK(ox_sample(g, t, V, NULL, 0) == 123457);
        memcpy(t, l, V * sizeof *t);
        CHECK(ox_sample(k1, t, V, NULL, 0) == 123457);
        memcpy(t, l, V * sizeof *t);
        CHECK(ox_sample(cold, t, V, NULL, 0) == 123457); /* temperature -> 0 behaves as greedy */
    }
    /* ties go to the lower id */
    float tie[5] = {1, 3, 0, 3, 2};
    CHECK(ox_sample(g, tie, 5, NULL, 0) == 1);
    /* NaN counts as -inf; all -inf is an error */
    float nan_l[4] = {NAN, 1, NAN, 0.5f};
    CHECK(ox_sample(g, nan_l, 4, NULL, 0) == 1);
    float nan_t[4] = {NAN, 1, NAN, 0.5f};
    int id = ox_sample(cold, nan_t, 4, NULL, 0);
    CHECK(id == 1);
    float dead[3] = {-INFINITY, NAN, -INFINITY};
    CHECK(ox_sample(g, dead, 3, NULL, 0) == OX_E_RANGE);
    float dead2[3] = {-INFINITY, NAN, -INFINITY};
    CHECK(ox_sample(k1, dead2, 3, NULL, 0) == OX_E_RANGE);
    CHECK(ox_sample(g, l, 0, NULL, 0) == OX_E_RANGE);
    ox_sampler_free(g), ox_sampler_free(k1), ox_sampler_free(cold);
    free(l), free(t);
}

static void test_distribution(void) {
    enum { V = 8, N = 200000 };
    float l[V] = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.5f, 1.2f, 0.8f};
    double q[V];
    int count[V], stray;
    /* temperature 1 and 2, no truncation: 7 degrees of freedom, chi2 < 30 (p ~ 1e-4) */
    float temps[] = {1.0f, 2.0f, 0.5f};
    for (int k = 0; k < 3; k++) {
        ox_sampler *s = make(temps[k], 0, 1, 0, 42 + k);
        draw(s, l, V, N, count);
        softmax(l, V, temps[k], q);
        double x = chi2(count, q, V, N, &stray);
        CHECK_MSG(x < 30 && stray == 0, "temperature %g: chi2 %.2f", temps[k], x);
        ox_sampler_free(s);
    }
    /* top-k 3: the three best (ids 3, 6, 0), renormalized */
    ox_sampler *s = make(1.0f, 3, 1, 0, 9);
    draw(s, l, V, N, count);
    softmax(l, V, 1, q);
    double z = q[3] + q[6] + q[0];
    for (int i = 0; i < V; i++) q[i] = (i == 3 || i == 6 || i == 0) ? q[i] / z : 0;
    double x = chi2(count, q, V, N, &stray);
    CHECK_MSG(x < 20 && stray == 0, "top-k 3: chi2 %.2f stray %d", x, stray);
    ox_sampler_free(s);
    /* top-p: probabilities 0.5, 0.3, 0.15, 0.05; top_p 0.75 keeps the first two */
    float lp[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    double qp[4] = {0.5 / 0.8, 0.3 / 0.8, 0, 0};
    int cp[4];
    s = make(1.0f, 0, 0.75f, 0, 10);
    draw(s, lp, 4, N, cp);
    x = chi2(cp, qp, 4, N, &stray);
    CHECK_MSG(x < 15 && stray == 0, "top-p: chi2 %.2f stray %d", x, stray);
    ox_sampler_free(s);
    /* min-p 0.2: threshold 0.1 drops only the 0.05 token */
    double qm[4] = {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0};
    s = make(1.0f, 0, 1, 0.2f, 11);
    draw(s, lp, 4, N, cp);
    x = chi2(cp, qm, 4, N, &stray);
    CHECK_MSG(x < 20 && stray == 0, "min-p: chi2 %.2f stray %d", x, stray);
    ox_sampler_free(s);
}

static int cmp_desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* top-p over a full 262144 vocabulary: only the nucleus (computed here by a full sort) may
 * come out, and with top-k 64 on top the result stays inside the 64 best */
static void test_top_p_large(void) {
    enum { V = 262144, N = 400 };
    float *l = malloc(V * sizeof *l), *t = malloc(V * sizeof *t), *sorted = malloc(V * sizeof *sorted);
    fill(l, V, 99);
    for (int i = 0; i < 300; i++) l[(i * 7919) % V] += 9; /* a head of 300 strong tokens */
    memcpy(sorted, l, V * sizeof *l);
    qsort(sorted, V, sizeof *sorted, cmp_desc);
    double z = 0, cum = 0;
    for (int i = 0; i < V; i++) z += exp(sorted[i] - sorted[0]);
    float cut = sorted[0];
    for (int i = 0; i < V && cum < 0.9 * z; i++) cum += exp(sorted[i] - sorted[0]), cut = sorted[i];
    ox_sampler *s = make(1.0f, 0, 0.9f, 0, 5), *sk = make(1.0f, 64, 0.9f, 0, 6);
    int outside = 0, outside_k = 0, distinct = 0;
    char *seen = calloc(V, 1);
    for (int k = 0; k < N; k++) {
        memcpy(t, l, V * sizeof *t);
        int id = ox_sample(s, t, V, NULL, 0);
        if (id < 0 || l[id] < cut) outside++;
        else if (!seen[id]) seen[id] = 1, distinct++;
        memcpy(t, l, V * sizeof *t);
        id = ox_sample(sk, t, V, NULL, 0);
        if (id < 0 || l[id] < sorted[63]) outside_k++;
    }
    CHECK_MSG(outside == 0 && outside_k == 0, "outside the nucleus: %d, outside the top 64: %d", outside, outside_k);
    CHECK_MSG(distinct > 50, "only %d distinct tokens from a nucleus of about 270", distinct);
    ox_sampler_free(s), ox_sampler_free(sk);
    free(l), free(t), free(sorted), free(seen);
}

static void test_penalties(void) {
    ox_sampler_params p;
    ox_sampler_defaults(&p);
    p.temperature = 0;
    p.repetition_penalty = 2.0f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.penalty_window = 0;
    ox_err err = {0};
    ox_sampler *s = ox_sampler_new(&p, &err);
    float l[6] = {0.1f, 2.0f, 0.3f, -1.0f, 0.5f, 0.2f};
    int32_t recent[] = {1, 3, 1, 99, -4};
    ox_sample(s, l, 6, recent, 5);
    CHECK_NEAR(l[1], 2.0 / 2 - 2 * 0.5 - 0.25, 1e-6); /* positive: divided; seen twice */
    CHECK_NEAR(l[3], -1.0 * 2 - 0.5 - 0.25, 1e-6);    /* negative: multiplied; seen once */
    CHECK_NEAR(l[0], 0.1f, 0);
    CHECK_NEAR(l[2], 0.3f, 0);
    CHECK_NEAR(l[4], 0.5f, 0);
    ox_sampler_free(s);
    /* window: only the last token counts */
    p.penalty_window = 1;
    s = ox_sampler_new(&p, &err);
    float w[4] = {1, 1, 1, 1};
    int32_t rec2[] = {0, 2};
    CHECK(ox_sample(s, w, 4, rec2, 2) == 0);
    CHECK_NEAR(w[0], 1, 0);
    CHECK_NEAR(w[2], 0.5 - 0.5 - 0.25, 1e-6);
    ox_sampler_free(s);
    /* logit bias: sparse, applied before everything; an id beyond the vocab is an error */
    int32_t ids[2] = {4, 0};
    float bias[2] = {100, -INFINITY};
    p = (ox_sampler_params){0};
    ox_sampler_defaults(&p);
    p.temperature = 0.7f, p.bias_ids = ids, p.bias = bias, p.n_bias = 2;
    s = ox_sampler_new(&p, &err);
    float b[6] = {9, 1, 2, 3, 0, 1};
    CHECK(ox_sample(s, b, 6, NULL, 0) == 4);
    CHECK(b[0] == -INFINITY);
    CHECK(ox_sample(s, b, 4, NULL, 0) == OX_E_RANGE);
    ox_sampler_free(s);
    /* bad parameters */
    ox_sampler_defaults(&p);
    p.top_p = 0;
    err = (ox_err){0};
    CHECK(ox_sampler_new(&p, &err) == NULL && err.code == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "top_p");
    ox_sampler_defaults(&p);
    p.repetition_penalty = 0;
    CHECK(ox_sampler_new(&p, &err) == NULL && err.code == OX_E_RANGE);
    ox_sampler_defaults(&p);
    p.temperature = NAN;
    CHECK(ox_sampler_new(&p, &err) == NULL && err.code == OX_E_RANGE);
}

static void test_seed(void) {
    enum { V = 1000, N = 500 };
    float l[V], t[V];
    fill(l, V, 3);
    ox_sampler *a = make(1.0f, 64, 0.95f, 0, 1234), *b = make(1.0f, 64, 0.95f, 0, 1234),
               *c = make(1.0f, 64, 0.95f, 0, 4321);
    int seq[N], same = 1, differ = 0;
    for (int k = 0; k < N; k++) {
        memcpy(t, l, sizeof t);
        seq[k] = ox_sample(a, t, V, NULL, 0);
        memcpy(t, l, sizeof t);
        same &= ox_sample(b, t, V, NULL, 0) == seq[k];
        memcpy(t, l, sizeof t);
        differ += ox_sample(c, t, V, NULL, 0) != seq[k];
    }
    CHECK(same);
    CHECK(differ > N / 2);
    ox_sampler_reset(a);
    int again = 1;
    for (int k = 0; k < N; k++) {
        memcpy(t, l, sizeof t);
        again &= ox_sample(a, t, V, NULL, 0) == seq[k];
    }
    CHECK(again);
    ox_sampler_reseed(c, 1234);
    int reseeded = 1;
    for (int k = 0; k < N; k++) {
        memcpy(t, l, sizeof t);
        reseeded &= ox_sample(c, t, V, NULL, 0) == seq[k];
    }
    CHECK(reseeded);
    ox_sampler_free(a), ox_sampler_free(b), ox_sampler_free(c);
}

/* Speculative verification keeps the output distribution: with a draft (fixed, or drawn from
 * another distribution each time), the token histogram matches the exact one, and the draft
 * is kept at the rate p(draft). Both truncation paths (full scan; top-k/top-p candidates). */
static void test_verify(void) {
    enum { V = 8, N = 200000 };
    float l[V] = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.5f, 1.2f, 0.8f};
    struct {
        int top_k;
        float top_p;
    } cfg[] = {{0, 1}, {3, 1}, {0, 0.8f}};
    for (int c = 0; c < 3; c++) {
        ox_sampler *ref = make(1.0f, cfg[c].top_k, cfg[c].top_p, 0, 77 + c),
                   *s = make(1.0f, cfg[c].top_k, cfg[c].top_p, 0, 99 + c);
        int want[V], got[V] = {0}, kept_fixed = 0, drafted_fixed = 0, stray, bad = 0;
        draw(ref, l, V, N, want);
        double qr[V]; /* the reference: ox_sample's histogram */
        for (int i = 0; i < V; i++) qr[i] = (double)want[i] / N;
        uint32_t r = 12345;
        for (int k = 0; k < N; k++) {
            float t[V];
            memcpy(t, l, sizeof t);
            r = r * 1664525u + 1013904223u;
            int draft = k % 2 ? 3 : (int)(r >> 29); /* every other: the likeliest token; else anything */
            int accepted = -1, id = ox_sample_verify(s, t, V, NULL, 0, draft, &accepted);
            if (id < 0 || id >= V || (accepted && id != draft) || (!accepted && id == draft)) bad++;
            else got[id]++;
            if (draft == 3) drafted_fixed++, kept_fixed += accepted;
        }
        CHECK_MSG(bad == 0, "%d draws returned a bad id or an accepted flag that disagrees with it", bad);
        double x = chi2(got, qr, V, N, &stray);
        CHECK_MSG(x < 40 && stray == 0, "verify, top_k %d top_p %g: chi2 %.2f against ox_sample, stray %d",
                  cfg[c].top_k, cfg[c].top_p, x, stray);
        double rate = (double)kept_fixed / drafted_fixed, p3 = qr[3], sd = sqrt(p3 * (1 - p3) / drafted_fixed);
        CHECK_MSG(fabs(rate - p3) < 5 * sd + 1e-3, "draft kept at %.4f, p(draft) %.4f", rate, p3);
        ox_sampler_free(ref), ox_sampler_free(s);
    }
    /* greedy: kept exactly when the draft is the argmax */
    ox_sampler *g = make(0, 64, 0.95f, 0, 1);
    float t[V];
    int acc = -1;
    memcpy(t, l, sizeof t);
    CHECK(ox_sample_verify(g, t, V, NULL, 0, 3, &acc) == 3 && acc == 1);
    memcpy(t, l, sizeof t);
    CHECK(ox_sample_verify(g, t, V, NULL, 0, 5, &acc) == 3 && acc == 0);
    ox_sampler_free(g);
}

int main(void) {
    RUN(test_greedy);
    RUN(test_distribution);
    RUN(test_verify);
    RUN(test_top_p_large);
    RUN(test_penalties);
    RUN(test_seed);
    return check_summary("test_sampler");
}
