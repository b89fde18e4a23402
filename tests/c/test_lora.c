/* test_lora.c — runtime LoRA (model/lora.h) on synthetic F32 models: an attached adapter gives
 * the logits of the model with merged weights W + s * alpha/r * B A (merged here in f32 from
 * the writer's values, not from what the reader loaded), GGUF and PEFT files of one spec give
 * the same logits, scale 0 and detach give the base exactly, two adapters add up, decode matches
 * prefill; bad adapters fail with a clear error and leave the model (and what was attached) as
 * it was. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/lora_impl.h"
#include "writers/gguf_write.h"
#include "writers/lora_write.h"
#include "writers/synth.h"

static char tmp[256];
#define NTOK 12

static const char *path_in(const char *name) {
    static char p[8][320];
    static int k;
    char *o = p[k++ % 8];
    snprintf(o, 320, "%s/%s", tmp, name);
    return o;
}

/* stream: the layers' weights left on the host (model/weights_cache.h), the file kept */
static ox_model *load_synth_opts(const char *preset, const char *file, ox_stream stream) {
    ox_synth s;
    ox_synth_preset(&s, preset, NULL);
    s.branch_gain = 0.5f, s.qk_norm_scale = 0.5f;
    ox_err err = {0};
    const char *p = path_in(file);
    if (access(p, F_OK) != 0 && ox_synth_write_gguf(&s, p, &err)) return fprintf(stderr, "synth: %s\n", err.msg), NULL;
    int h = ox_host_open_path(p, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    ox_load_opts o = {.stream = stream, .weight_cache = stream ? (uint64_t)64 << 20 : 0};
    ox_model *m = mf ? ox_model_load(mf, &o, &err) : NULL;
    if (!m) fprintf(stderr, "load %s: %s\n", p, err.msg);
    return m;
}

static ox_model *load_synth(const char *preset, const char *file) {
    return load_synth_opts(preset, file, OX_STREAM_NONE);
}

static ox_lora_spec spec(uint32_t seed) {
    return (ox_lora_spec){
        .rank = 4, .alpha = 8, .std = 0.05f, .seed = seed, .targets = OX_LORA_ALL_TARGETS, .type = OX_F32};
}

/* All-position logits of a fresh session (step: one token per forward). */
static float *logits(ox_model *m, int step) {
    int V = ox_model_config(m)->vocab;
    int32_t t[NTOK];
    for (int i = 0; i < NTOK; i++) t[i] = (int32_t)((i * 37 + 2) % V);
    float *lg = malloc(sizeof *lg * NTOK * V);
    ox_err err = {0};
    ox_session *s = ox_session_new(m, 64, &err);
    for (int i = 0; i < NTOK; i += step) {
        ox_forward_io io = {.tokens = t + i, .n = step, .logits = lg + (size_t)i * V, .all_logits = 1};
        if (ox_forward(s, &io, &err)) fprintf(stderr, "forward: %s\n", err.msg);
    }
    ox_session_free(s);
    return lg;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static ox_lora *load_files(ox_model *m, const char *const *paths, int n, ox_err *err) {
    int h[2];
    for (int i = 0; i < n; i++)
        if ((h[i] = ox_host_open_path(paths[i], err)) < 0) return NULL;
    ox_lora *a = ox_lora_load(m, h, n, err);
    for (int i = 0; i < n; i++) ox_host_close(h[i]);
    return a;
}

static ox_lora *write_gguf(ox_model *m, const ox_lora_spec *sp, const char *name) {
    ox_err err = {0};
    const char *p = path_in(name);
    if (ox_lora_write_gguf(ox_model_config(m), sp, p, &err)) return fprintf(stderr, "write: %s\n", err.msg), NULL;
    ox_lora *a = load_files(m, &p, 1, &err);
    if (!a) fprintf(stderr, "lora %s: %s\n", p, err.msg);
    return a;
}

static ox_lora *write_peft(ox_model *m, const ox_lora_spec *sp, const char *name) {
    ox_err err = {0};
    const char *dir = path_in(name);
    mkdir(dir, 0777);
    if (ox_lora_write_peft(ox_model_config(m), sp, dir, &err)) return fprintf(stderr, "write: %s\n", err.msg), NULL;
    char c[400], w[400];
    snprintf(c, sizeof c, "%s/adapter_config.json", dir);
    snprintf(w, sizeof w, "%s/adapter_model.safetensors", dir);
    const char *ps[2] = {w, c}; /* any order */
    ox_lora *a = load_files(m, ps, 2, &err);
    if (!a) fprintf(stderr, "lora %s: %s\n", dir, err.msg);
    return a;
}

/* W += s * scale * B A for every module of the spec the model runs (sign -1 undoes it). */
static void merge(ox_model *m, const ox_lora_spec *sp, float s, float scale) {
    const ox_config *c = ox_model_config(m);
    for (int l = 0; l < c->n_layers; l++)
        for (int t = 0; t < OX_LORA_N_TARGETS; t++) {
            int out, in;
            const ox_matrix *W = ox_lora_base(m, l, (ox_lora_target)t);
            if (!W || !ox_lora_spec_shape(c, l, t, &out, &in)) continue;
            float *w = W->data;
            for (int o = 0; o < out; o++)
                for (int k = 0; k < in; k++) {
                    double d = 0;
                    for (int j = 0; j < sp->rank; j++)
                        d += (double)ox_lora_spec_value(sp, l, t, 1, (uint64_t)o * sp->rank + j) *
                             ox_lora_spec_value(sp, l, t, 0, (uint64_t)j * in + k);
                    w[(size_t)o * in + k] += (float)(s * scale * d);
                }
        }
}

static int set1(ox_model *m, ox_lora *a, float s) {
    ox_err err = {0};
    int rc = ox_model_set_lora(m, &a, &s, 1, &err);
    if (rc) fprintf(stderr, "set: %s\n", err.msg);
    return rc;
}

static void merged_equals_attached(const char *preset) {
    ox_model *m = load_synth(preset, preset);
    CHECK(m != NULL);
    if (!m) return;
    const ox_config *c = ox_model_config(m);
    size_t NV = (size_t)NTOK * c->vocab;
    ox_lora_spec s1 = spec(1), s2 = spec(2);
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s-a.gguf", preset);
    snprintf(n2, sizeof n2, "%s-b.gguf", preset);
    ox_lora *a = write_gguf(m, &s1, n1), *b = write_gguf(m, &s2, n2);
    CHECK(a && b);
    if (!a || !b) return;
    int skipped = 0; /* PEFT: k and v of shared layers are skipped (the GGUF has none); v of K = V layers is not written */
    for (int l = 0; l < c->n_layers; l++) skipped += c->layers[l].shared ? 2 - c->layers[l].k_eq_v : 0;
    CHECK(ox_lora_skipped(a) == 0);
    CHECK(ox_lora_rank_max(a) == 4);

    float *base = logits(m, NTOK);
    CHECK(set1(m, a, 0.7f) == 0);
    float *with = logits(m, NTOK), *steps = logits(m, 1);
    double moved = max_diff(base, with, NV);
    CHECK_MSG(moved > 0.05, "the adapter moved the logits by only %g", moved);
    CHECK_MSG(max_diff(with, steps, NV) < 2e-3, "decode vs prefill with an adapter: %g", max_diff(with, steps, NV));

    /* the merged model, without the adapter */
    CHECK(ox_model_set_lora(m, NULL, NULL, 0, NULL) == 0);
    merge(m, &s1, 0.7f, s1.alpha / s1.rank);
    float *merged = logits(m, NTOK);
    CHECK_MSG(max_diff(with, merged, NV) < 2e-3, "%s: attached vs merged: %g (moved %g)", preset,
              max_diff(with, merged, NV), moved);

    /* two adapters at once = both merged */
    merge(m, &s2, -0.4f, s2.alpha / s2.rank);
    float *merged2 = logits(m, NTOK);
    merge(m, &s1, -0.7f, s1.alpha / s1.rank);
    merge(m, &s2, 0.4f, s2.alpha / s2.rank);
    float *restored = logits(m, NTOK);
    CHECK_MSG(max_diff(restored, base, NV) < 1e-4, "unmerge: %g", max_diff(restored, base, NV));
    ox_lora *ab[2] = {a, b};
    float sc[2] = {0.7f, -0.4f};
    CHECK(ox_model_set_lora(m, ab, sc, 2, NULL) == 0);
    float *two = logits(m, NTOK);
    CHECK_MSG(max_diff(two, merged2, NV) < 2e-3, "two adapters vs both merged: %g", max_diff(two, merged2, NV));

    /* scale 0 and detach: the base, bit for bit */
    sc[0] = sc[1] = 0;
    CHECK(ox_model_set_lora(m, ab, sc, 2, NULL) == 0);
    float *zero = logits(m, NTOK);
    CHECK(max_diff(zero, restored, NV) == 0);
    CHECK(ox_model_set_lora(m, NULL, NULL, 0, NULL) == 0);
    float *off = logits(m, NTOK);
    CHECK(max_diff(off, restored, NV) == 0);

    /* PEFT files of the same spec: the same logits; rsLoRA scales by alpha / sqrt(r) (the weights
     * moved by rounding in the merge and unmerge: the GGUF adapter's logits again) */
    CHECK(set1(m, a, 0.7f) == 0);
    free(with);
    with = logits(m, NTOK);
    char np[64];
    snprintf(np, sizeof np, "%s-peft", preset);
    ox_lora *p = write_peft(m, &s1, np);
    CHECK(p != NULL);
    if (p) {
        CHECK(ox_lora_modules(p) == ox_lora_modules(a));
        CHECK_MSG(ox_lora_skipped(p) == skipped, "skipped %d, expected %d", ox_lora_skipped(p), skipped);
        CHECK(set1(m, p, 0.7f) == 0);
        float *pl = logits(m, NTOK);
        CHECK_MSG(max_diff(pl, with, NV) == 0, "PEFT vs GGUF: %g", max_diff(pl, with, NV));
        free(pl);
        ox_model_set_lora(m, NULL, NULL, 0, NULL);
        ox_lora_free(p);
    }
    ox_lora_spec rs = s1;
    rs.rslora = 1;
    snprintf(np, sizeof np, "%s-rslora", preset);
    p = write_peft(m, &rs, np);
    CHECK(p != NULL);
    if (p) { /* alpha / sqrt(r) = 2 * alpha / r at r = 4: scale 0.35 of it = 0.7 of the plain one */
        CHECK(set1(m, p, 0.35f) == 0);
        float *pl = logits(m, NTOK);
        CHECK_MSG(max_diff(pl, with, NV) < 1e-4, "rsLoRA: %g", max_diff(pl, with, NV));
        free(pl);
        ox_model_set_lora(m, NULL, NULL, 0, NULL);
        ox_lora_free(p);
    }
    /* F16 and BF16 weights load too (rounded values: close, not equal) */
    for (int k = 0; k < 2; k++) {
        ox_lora_spec h = s1;
        h.type = k ? OX_BF16 : OX_F16;
        snprintf(np, sizeof np, "%s-%s", preset, k ? "bf16" : "f16");
        ox_lora *q = k ? write_peft(m, &h, np) : write_gguf(m, &h, np);
        CHECK(q != NULL);
        if (!q) continue;
        CHECK(set1(m, q, 0.7f) == 0);
        float *ql = logits(m, NTOK);
        CHECK_MSG(max_diff(ql, with, NV) < 0.05 * moved + 1e-3, "%s adapter: %g (moved %g)", np, max_diff(ql, with, NV),
                  moved);
        free(ql);
        ox_model_set_lora(m, NULL, NULL, 0, NULL);
        ox_lora_free(q);
    }
    free(base), free(with), free(steps), free(merged), free(merged2), free(restored), free(two), free(zero), free(off);
    ox_lora_free(a), ox_lora_free(b);
    ox_model_free(m);
}

/* A model that streams its layers' weights (data NULL between uses) is patched the same. */
static void test_streamed(void) {
    ox_model *r = load_synth("tiny", "tiny-stream.gguf"),
             *st = load_synth_opts("tiny", "tiny-stream.gguf", OX_STREAM_ALL);
    CHECK(r && st);
    if (!r || !st) return;
    ox_lora_spec sp = spec(5);
    ox_lora *a = write_gguf(r, &sp, "stream-r.gguf"), *b = write_gguf(st, &sp, "stream-s.gguf");
    CHECK(a && b && ox_lora_modules(a) == ox_lora_modules(b));
    if (a && b) {
        CHECK(set1(r, a, 0.7f) == 0 && set1(st, b, 0.7f) == 0);
        float *x = logits(r, NTOK), *y = logits(st, NTOK), *base;
        size_t NV = (size_t)NTOK * ox_model_config(r)->vocab;
        CHECK_MSG(max_diff(x, y, NV) == 0, "streamed vs resident with an adapter: %g", max_diff(x, y, NV));
        ox_model_set_lora(st, NULL, NULL, 0, NULL);
        base = logits(st, NTOK);
        CHECK(max_diff(base, y, NV) > 0.05);
        free(x), free(y), free(base);
        ox_model_set_lora(r, NULL, NULL, 0, NULL);
    }
    ox_lora_free(a), ox_lora_free(b);
    ox_model_free(r), ox_model_free(st);
}

static void test_tiny(void) { merged_equals_attached("tiny"); }
static void test_keqv(void) { merged_equals_attached("keqv"); }

/* ---- bad adapters ---- */

/* A GGUF adapter with one tensor pair named `base` of shapes a [ne0, ne1] and b. */
static const char *bad_gguf(const char *file, const char *type, const char *arch, const char *base, const uint64_t *nea,
                            const uint64_t *neb, int with_b) {
    static float zeros[1 << 16];
    const char *p = path_in(file);
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_w_str(w, "general.architecture", arch);
    ox_gguf_w_str(w, "general.type", type);
    ox_gguf_w_str(w, "adapter.type", "lora");
    ox_gguf_w_f32(w, "adapter.lora.alpha", 8);
    char n[256];
    snprintf(n, sizeof n, "%s.lora_a", base);
    ox_gguf_w_tensor(w, n, OX_F32, 2, nea, zeros, NULL);
    snprintf(n, sizeof n, "%s.lora_b", base);
    if (with_b) ox_gguf_w_tensor(w, n, OX_F32, 2, neb, zeros, NULL);
    ox_err err = {0};
    if (ox_gguf_w_write(w, p, NULL, NULL, &err)) fprintf(stderr, "write %s: %s\n", p, err.msg);
    ox_gguf_writer_free(w);
    return p;
}

static void expect_fail(ox_model *m, const char *const *paths, int n, int code, const char *what, const float *base) {
    ox_err err = {0};
    ox_lora *a = load_files(m, paths, n, &err);
    CHECK_MSG(a == NULL, "%s loaded", paths[0]);
    ox_lora_free(a);
    const char *slash = strrchr(paths[0], '/');
    CHECK_ERR(err, code, slash ? slash + 1 : paths[0], what);
    /* the model still runs, with what was attached before (nothing here) */
    float *lg = logits(m, NTOK);
    CHECK(max_diff(lg, base, (size_t)NTOK * ox_model_config(m)->vocab) == 0);
    free(lg);
}

static void test_bad_adapters(void) {
    ox_model *m = load_synth("tiny", "tiny-bad.gguf");
    CHECK(m != NULL);
    if (!m) return;
    const ox_config *c = ox_model_config(m);
    float *base = logits(m, NTOK);
    uint64_t H = (uint64_t)c->hidden, Q = (uint64_t)c->n_heads * c->layers[0].head_dim;
    const char *p;
    p = bad_gguf("shape.gguf", "adapter", "gemma4", "blk.0.attn_q.weight", (uint64_t[]){H + 32, 4}, (uint64_t[]){4, Q},
                 1);
    expect_fail(m, &p, 1, OX_E_CONFIG, "are not A [r x 256]", base);
    p = bad_gguf("rank.gguf", "adapter", "gemma4", "blk.0.attn_q.weight", (uint64_t[]){H, 4}, (uint64_t[]){8, Q}, 1);
    expect_fail(m, &p, 1, OX_E_CONFIG, "blk.0.attn_q.weight.lora_a", base);
    p = bad_gguf("target.gguf", "adapter", "gemma4", "blk.0.ffn_gate_inp.weight", (uint64_t[]){H, 4},
                 (uint64_t[]){4, 8}, 1);
    expect_fail(m, &p, 1, OX_E_UNSUPPORTED, "is not a linear LoRA can patch", base);
    p = bad_gguf("layer.gguf", "adapter", "gemma4", "blk.99.attn_q.weight", (uint64_t[]){H, 4}, (uint64_t[]){4, Q}, 1);
    expect_fail(m, &p, 1, OX_E_CONFIG, "layer 99", base);
    p = bad_gguf("nob.gguf", "adapter", "gemma4", "blk.0.attn_q.weight", (uint64_t[]){H, 4}, NULL, 0);
    expect_fail(m, &p, 1, OX_E_FORMAT, "has no B", base);
    p = bad_gguf("model.gguf", "model", "gemma4", "blk.0.attn_q.weight", (uint64_t[]){H, 4}, (uint64_t[]){4, Q}, 1);
    expect_fail(m, &p, 1, OX_E_FORMAT, "not a LoRA adapter", base);
    p = bad_gguf("llama.gguf", "adapter", "llama", "blk.0.attn_q.weight", (uint64_t[]){H, 4}, (uint64_t[]){4, Q}, 1);
    expect_fail(m, &p, 1, OX_E_UNSUPPORTED, "general.architecture", base);

    /* a good adapter, attached, then cut short: the error leaves it attached */
    ox_lora_spec sp = spec(3);
    ox_lora *good = write_gguf(m, &sp, "good.gguf");
    CHECK(good && set1(m, good, 1.0f) == 0);
    float *with = logits(m, NTOK);
    const char *gp = path_in("good.gguf"), *cut = path_in("cut.gguf");
    FILE *in = fopen(gp, "rb"), *out = fopen(cut, "wb");
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    rewind(in);
    for (long i = 0; i < size - 100; i++) fputc(fgetc(in), out);
    fclose(in), fclose(out);
    expect_fail(m, &cut, 1, OX_E_TRUNCATED, "cut.gguf", with);

    /* PEFT: DoRA, a wrong file set */
    const char *dir = path_in("dora");
    mkdir(dir, 0777);
    CHECK(ox_lora_write_peft(c, &sp, dir, NULL) == 0);
    char cfg[400], st[400];
    snprintf(cfg, sizeof cfg, "%s/adapter_config.json", dir);
    snprintf(st, sizeof st, "%s/adapter_model.safetensors", dir);
    FILE *f = fopen(cfg, "wb");
    fprintf(f, "{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": 8, \"use_dora\": true}");
    fclose(f);
    const char *pair[2] = {cfg, st};
    expect_fail(m, pair, 2, OX_E_UNSUPPORTED, "DoRA", with);
    f = fopen(cfg, "wb");
    fprintf(f, "{\"peft_type\": \"LORA\", \"r\": 8, \"lora_alpha\": 8}");
    fclose(f);
    expect_fail(m, pair, 2, OX_E_CONFIG, "r = 8", with);
    expect_fail(m, &pair[1], 1, OX_E_FORMAT, "adapter_config.json", with);

    /* attach errors leave the set as it was */
    ox_err err = {0};
    float nan = NAN;
    CHECK(ox_model_set_lora(m, &good, &nan, 1, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "not a finite number");
    ox_lora *many[OX_LORA_MAX + 1];
    float ones[OX_LORA_MAX + 1];
    for (int i = 0; i <= OX_LORA_MAX; i++) many[i] = good, ones[i] = 1;
    CHECK(ox_model_set_lora(m, many, ones, OX_LORA_MAX + 1, &err) == OX_E_RANGE);
    float *still = logits(m, NTOK);
    CHECK(max_diff(still, with, (size_t)NTOK * c->vocab) == 0);
    ox_model_set_lora(m, NULL, NULL, 0, NULL);
    free(still), free(with), free(base);
    ox_lora_free(good);
    ox_model_free(m);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxinfer-test-lora-%d", (int)getpid());
    mkdir(tmp, 0777);
    ox_pool_init(2, NULL);
    RUN(test_tiny);
    RUN(test_keqv);
    RUN(test_streamed);
    RUN(test_bad_adapters);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return check_summary("test_lora");
}
