/* test_unified.c — Gemma 4 12B (gemma4_unified, docs/gemma4.md §6): its config.json (the
 * released shapes in both the global_head_dim and the per_layer_config form, the reference's
 * strict types, defaults, errors), and a synthetic unified checkpoint (`oxinfer synth --preset
 * unified`) whose logits match the float64 reference, its GGUF twin and the same weights under
 * a gemma4 config; its encoder-free image embedder against a float64 reference of §6.4. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "formats/config.h"
#include "formats/json.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/model.h"
#include "vision/vision.h"
#include "writers/synth.h"

#include "ref_forward.c" /* the test build makes one executable per test_*.c file */

/* ---- config.json ---- */

/* The 12B's text_config (docs/gemma4.md §1.3): 48 layers, 5 sliding : 1 full. per_layer: 1 =
 * per_layer_config (as transformers 5.x writes it), 0 = global_head_dim and
 * num_global_key_value_heads (as the original release's file). */
static const char *config_12b(int per_layer) {
    static char buf[16384];
    char lt[4096], plc[2048];
    size_t n = 0, k = 0;
    n += (size_t)snprintf(lt + n, sizeof lt - n, "[");
    k += (size_t)snprintf(plc + k, sizeof plc - k, "{");
    for (int l = 0; l < 48; l++) {
        int full = l % 6 == 5;
        n += (size_t)snprintf(lt + n, sizeof lt - n, "%s\"%s\"", l ? ", " : "",
                              full ? "full_attention" : "sliding_attention");
        if (full)
            k += (size_t)snprintf(plc + k, sizeof plc - k, "%s\"%d\": {\"head_dim\": 512, \"num_key_value_heads\": 1}",
                                  l > 5 ? ", " : "", l);
    }
    snprintf(lt + n, sizeof lt - n, "]");
    snprintf(plc + k, sizeof plc - k, "}");
    char shapes[2200];
    if (per_layer) snprintf(shapes, sizeof shapes, "\"per_layer_config\": %s", plc);
    else snprintf(shapes, sizeof shapes, "\"global_head_dim\": 512, \"num_global_key_value_heads\": 1");
    snprintf(buf, sizeof buf,
             "{\"architectures\": [\"Gemma4UnifiedForConditionalGeneration\"], \"boi_token_id\": 255999, "
             "\"eoi_token_id\": 258882, \"eos_token_id\": [1, 106], \"image_token_id\": 258880, "
             "\"initializer_range\": 0.02, \"model_type\": \"gemma4_unified\", \"text_config\": {"
             "\"attention_bias\": false, \"attention_k_eq_v\": true, \"bos_token_id\": 2, \"eos_token_id\": 1, "
             "\"final_logit_softcapping\": 30.0, \"head_dim\": 256, \"hidden_activation\": \"gelu_pytorch_tanh\", "
             "\"hidden_size\": 3840, \"initializer_range\": 0.02, \"intermediate_size\": 15360, \"layer_types\": %s, "
             "\"max_position_embeddings\": 262144, \"model_type\": \"gemma4_unified_text\", "
             "\"num_attention_heads\": 16, \"num_hidden_layers\": 48, \"num_key_value_heads\": 8, "
             "\"num_kv_shared_layers\": 0, \"pad_token_id\": 0, %s, \"rms_norm_eps\": 1e-06, "
             "\"rope_parameters\": {\"full_attention\": {\"partial_rotary_factor\": 0.25, \"rope_theta\": 1000000.0, "
             "\"rope_type\": \"proportional\"}, \"sliding_attention\": {\"rope_theta\": 10000.0, \"rope_type\": "
             "\"default\"}}, \"sliding_window\": 1024, \"tie_word_embeddings\": true, "
             "\"use_bidirectional_attention\": \"vision\", \"use_double_wide_mlp\": false, \"vocab_size\": 262144}, "
             "\"vision_config\": {\"initializer_range\": 0.02, \"mm_embed_dim\": 3840, \"mm_posemb_size\": 1120, "
             "\"model_type\": \"gemma4_unified_vision\", \"output_proj_dims\": 3840, \"patch_size\": 16, "
             "\"pooling_kernel_size\": 3, \"rms_norm_eps\": 1e-06}}",
             lt, shapes);
    return buf;
}

static ox_config cfg, cfg2; /* big (OX_MAX_LAYERS layers): not on the stack */

static int load_config(const char *text, ox_config *c, ox_err *e) {
    ox_json *j = ox_json_parse(text, strlen(text), "config.json", e);
    if (!j) return e->code;
    int rc = ox_config_from_json(j, c, "config.json", e);
    ox_json_free(j);
    return rc;
}

/* text with the first `from` replaced by `to` */
static const char *edit(const char *src, const char *from, const char *to) {
    static char text[4][20000]; /* rotating, so edits chain */
    static int k;
    const char *p = strstr(src, from);
    if (!p) return src;
    char *out = text[k++ % 4];
    snprintf(out, sizeof text[0], "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
    return out;
}

static void test_config_12b(void) {
    ox_err e = {0};
    CHECK_MSG(load_config(config_12b(0), &cfg, &e) == 0, "%s", e.msg);
    CHECK_MSG(load_config(config_12b(1), &cfg2, &e) == 0, "%s", e.msg);
    const ox_config *c = &cfg;
    CHECK(c->unified && cfg2.unified);
    CHECK(c->vocab == 262144 && c->hidden == 3840 && c->n_layers == 48 && c->n_heads == 16 && c->n_kv_heads == 8);
    CHECK(c->head_dim == 256 && c->global_head_dim == 512 && c->n_global_kv_heads == 1 && c->k_eq_v);
    CHECK(c->intermediate == 15360 && c->ple_dim == 0 && !c->moe && c->n_kv_shared == 0 && !c->bidirectional);
    CHECK(c->bidir_vision && cfg2.bidir_vision);
    CHECK(c->sliding_window == 1024 && c->ctx_max == 262144);
    CHECK_NEAR(c->softcap, 30.0, 0);
    int bad = 0;
    for (int l = 0; l < 48; l++) {
        const ox_layer_cfg *y = &c->layers[l], *z = &cfg2.layers[l];
        int full = l % 6 == 5;
        if (y->full != full || y->head_dim != (full ? 512 : 256) || y->n_kv_heads != (full ? 1 : 8)) bad++;
        if (y->k_eq_v != full || y->shared || y->kv_src != l || y->ffn != 15360 || y->window != (full ? 0 : 1024))
            bad++;
        if (y->rope_pairs != (full ? 64 : 128) || y->rope_base != (full ? 1e6f : 1e4f)) bad++;
        if (memcmp(y, z, sizeof *y)) bad++; /* per_layer_config gives the same layers */
    }
    CHECK(bad == 0);
    CHECK(cfg2.global_head_dim == 512 && cfg2.n_global_kv_heads == 1);

    /* the same per_layer_config in a gemma4 (not unified) text config is read the same way */
    const char *g4 =
        edit(edit(config_12b(1), "\"gemma4_unified_text\"", "\"gemma4_text\""), "\"gemma4_unified\"", "\"gemma4\"");
    g4 = edit(g4, "Gemma4UnifiedForConditionalGeneration", "Gemma4ForConditionalGeneration");
    CHECK_MSG(load_config(g4, &cfg2, &e) == 0, "%s", e.msg);
    CHECK(!cfg2.unified && cfg2.global_head_dim == 512 && cfg2.layers[5].n_kv_heads == 1 &&
          cfg2.layers[47].head_dim == 512 && cfg2.layers[46].head_dim == 256);

    /* the unified class defaults: global_head_dim 512, window 1024, context 262144; and with
     * attention_k_eq_v but no num_global_key_value_heads, full layers keep num_key_value_heads */
    const char *bare = "{\"model_type\": \"gemma4_unified\", \"text_config\": {\"vocab_size\": 512, \"hidden_size\": "
                       "64, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                       "\"head_dim\": 16, \"intermediate_size\": 128, \"attention_k_eq_v\": true}}";
    CHECK_MSG(load_config(bare, &cfg2, &e) == 0, "%s", e.msg);
    CHECK(cfg2.unified && cfg2.global_head_dim == 512 && cfg2.sliding_window == 1024 && cfg2.ctx_max == 262144);
    CHECK(cfg2.layers[5].full && cfg2.layers[5].head_dim == 512 && cfg2.layers[5].n_kv_heads == 2);
    CHECK(cfg2.softcap == 0); /* final_logit_softcapping absent: no cap (the class default is None) */
    CHECK(cfg2.bidir_vision && !cfg2.bidirectional); /* use_bidirectional_attention absent: "vision" */
    const char *causal = edit(bare, "\"attention_k_eq_v\": true",
                              "\"attention_k_eq_v\": true, "
                              "\"use_bidirectional_attention\": null");
    CHECK_MSG(load_config(causal, &cfg2, &e) == 0, "%s", e.msg);
    CHECK(!cfg2.bidir_vision && !cfg2.bidirectional);
}

static void expect_bad(const char *src, const char *from, const char *to, int code, const char *what) {
    CHECK_MSG(strstr(src, from) != NULL, "%s not in the config", from);
    ox_err e = {0};
    int rc = load_config(edit(src, from, to), &cfg2, &e);
    CHECK_MSG(rc == code, "%s -> %s: got %s (%s)", from, to, ox_err_code_name(rc), e.msg);
    CHECK_STR_CONTAINS(e.msg, "config.json");
    CHECK_STR_CONTAINS(e.msg, what);
}

static void test_config_errors(void) {
    char a[20000], b[20000];
    snprintf(a, sizeof a, "%s", config_12b(0));
    snprintf(b, sizeof b, "%s", config_12b(1));
    /* strict types, as the reference's dataclasses */
    expect_bad(a, "\"final_logit_softcapping\": 30.0", "\"final_logit_softcapping\": 30", OX_E_CONFIG,
               "text_config.final_logit_softcapping: a float is expected");
    expect_bad(a, "\"rms_norm_eps\": 1e-06, \"rope", "\"rms_norm_eps\": 0, \"rope", OX_E_CONFIG,
               "text_config.rms_norm_eps: a float");
    expect_bad(a, "\"hidden_size\": 3840", "\"hidden_size\": 3840.0", OX_E_CONFIG,
               "text_config.hidden_size: an integer is expected");
    expect_bad(a, "\"sliding_window\": 1024", "\"sliding_window\": 1.024e3", OX_E_CONFIG, "sliding_window: an integer");
    expect_bad(a, "\"image_token_id\": 258880", "\"image_token_id\": 258880.0", OX_E_CONFIG, "image_token_id");
    expect_bad(a, "\"patch_size\": 16", "\"patch_size\": 16.0", OX_E_CONFIG, "vision_config.patch_size");
    expect_bad(a, "\"initializer_range\": 0.02, \"mm", "\"initializer_range\": 1, \"mm", OX_E_CONFIG,
               "vision_config.initializer_range: a float");
    /* no per-layer embeddings, no experts */
    expect_bad(a, "\"attention_bias\": false", "\"hidden_size_per_layer_input\": 256", OX_E_UNSUPPORTED,
               "hidden_size_per_layer_input");
    expect_bad(a, "\"attention_bias\": false", "\"enable_moe_block\": true", OX_E_UNSUPPORTED, "enable_moe_block");
    /* per_layer_config */
    expect_bad(b, "\"5\": {", "\"4\": {", OX_E_UNSUPPORTED, "per_layer_config[4]: sliding layer");
    expect_bad(b, "\"11\": {\"head_dim\": 512", "\"11\": {\"head_dim\": 256", OX_E_UNSUPPORTED,
               "per_layer_config[11]: full layer with head_dim 256");
    expect_bad(b, "\"5\": {", "\"48\": {", OX_E_CONFIG, "per_layer_config key \"48\"");
    expect_bad(b, "\"5\": {", "\"x\": {", OX_E_CONFIG, "per_layer_config key \"x\"");
    expect_bad(b, "\"5\": {\"head_dim\": 512", "\"5\": {\"head_dim\": 0", OX_E_CONFIG,
               "per_layer_config[5].head_dim: a positive integer");
    expect_bad(b, "\"5\": {\"head_dim\": 512", "\"5\": {\"head_dim\": 512.0", OX_E_CONFIG,
               "per_layer_config[5].head_dim");
    expect_bad(b, "\"5\": {\"head_dim\": 512", "\"5\": {\"intermediate_size\": 7, \"head_dim\": 512", OX_E_UNSUPPORTED,
               "per_layer_config[5].intermediate_size");
    expect_bad(b, "\"per_layer_config\": {", "\"per_layer_config\": [], \"x\": {", OX_E_CONFIG,
               "per_layer_config: an object");
    expect_bad(b, "\"attention_k_eq_v\": true", "\"attention_k_eq_v\": false", OX_E_UNSUPPORTED,
               "supported only with attention_k_eq_v");
    /* an override equal to the model-wide value changes nothing */
    ox_err e = {0};
    CHECK_MSG(load_config(edit(b, "\"5\": {\"head_dim\": 512", "\"5\": {\"intermediate_size\": 15360, \"head_dim\": 512"),
                          &cfg2, &e) == 0,
              "%s", e.msg);
    CHECK_MSG(load_config(edit(b, "\"5\": {\"head_dim\": 512", "\"0\": {\"head_dim\": 256}, \"5\": {\"head_dim\": 512"),
                          &cfg2, &e) == 0,
              "%s", e.msg);
}

/* ---- a synthetic unified checkpoint ---- */

static char tmp[256];

static ox_synth unified_preset(void) {
    ox_synth s;
    ox_synth_preset(&s, "unified", NULL);
    s.window = 8;                                 /* so the test sequence outruns the window */
    s.branch_gain = 0.5f, s.qk_norm_scale = 0.5f; /* calmer, as test_model.c's fixtures */
    return s;
}

static ox_model *open_paths(const char *const *paths, int n, ox_err *err) {
    int h[8];
    for (int i = 0; i < n; i++)
        if ((h[i] = ox_host_open_path(paths[i], err)) < 0) return NULL;
    ox_model_files *mf = ox_files_open(h, n, err);
    return mf ? ox_model_load(mf, NULL, err) : NULL;
}

static ox_model *write_and_load(const ox_synth *s, const char *name, int hf) {
    char p[300], c[400], t[400], w[400];
    ox_err err = {0};
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    if (hf) {
        mkdir(p, 0777);
        if (ox_synth_write_hf(s, p, OX_F32, 1, &err)) goto fail;
        snprintf(c, sizeof c, "%s/config.json", p);
        snprintf(t, sizeof t, "%s/tokenizer.json", p);
        snprintf(w, sizeof w, "%s/model.safetensors", p);
        const char *pp[3] = {c, t, w};
        ox_model *m = open_paths(pp, 3, &err);
        if (!m) goto fail;
        return m;
    }
    if (ox_synth_write_gguf(s, p, &err)) goto fail;
    const char *pp[1] = {p};
    ox_model *m = open_paths(pp, 1, &err);
    if (m) return m;
fail:
    fprintf(stderr, "%s: %s\n", name, err.msg);
    return NULL;
}

enum { N_SEQ = 24 };

static float *logits(ox_model *m, const int32_t *t, int n) {
    int V = ox_model_config(m)->vocab;
    float *lg = malloc(sizeof *lg * (size_t)n * V);
    ox_err err = {0};
    ox_session *s = ox_session_new(m, 0, &err);
    ox_forward_io io = {.tokens = t, .n = n, .logits = lg, .all_logits = 1};
    if (!s || ox_forward(s, &io, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        free(lg);
        lg = NULL;
    }
    ox_session_free(s);
    return lg;
}

/* max |Δ log-prob| of f32 logits against float64 ones, over every position and token */
static double max_dlogp(const float *a, const double *b, int n, int V) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const float *x = a + (size_t)i * V;
        const double *y = b + (size_t)i * V;
        double mx = -INFINITY, my = -INFINITY, sx = 0, sy = 0;
        for (int v = 0; v < V; v++) mx = fmax(mx, x[v]), my = fmax(my, y[v]);
        for (int v = 0; v < V; v++) sx += exp(x[v] - mx), sy += exp(y[v] - my);
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((x[v] - mx - log(sx)) - (y[v] - my - log(sy))));
    }
    return worst;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double w = 0;
    for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]));
    return w;
}

static void test_checkpoint(void) {
    ox_synth s = unified_preset();
    ox_model *hf = write_and_load(&s, "hf-unified", 1), *gg = write_and_load(&s, "unified.gguf", 0);
    s.unified = 0; /* the same weights under a gemma4 config (global_head_dim form) */
    ox_model *g4 = write_and_load(&s, "hf-keqv", 1);
    CHECK(hf && gg && g4);
    if (!hf || !gg || !g4) goto done;
    const ox_config *c = ox_model_config(hf);
    CHECK(c->unified && !ox_model_config(g4)->unified && c->k_eq_v && c->n_global_kv_heads == 1 &&
          c->global_head_dim == s.global_head_dim && c->ple_dim == 0);
    int V = c->vocab, n = N_SEQ;
    int32_t t[N_SEQ];
    uint32_t r = 777;
    t[0] = 2;
    for (int i = 1; i < n; i++) t[i] = (int32_t)((r = r * 1664525u + 1013904223u) >> 9) % V;
    char msg[256];
    ref_model *ref = ref_load(ox_model_files_of(hf), msg, sizeof msg);
    if (!ref) fprintf(stderr, "%s\n", msg);
    float *a = logits(hf, t, n), *b = logits(gg, t, n), *d = logits(g4, t, n);
    double *rl = malloc(sizeof *rl * (size_t)n * V);
    CHECK(ref && a && b && d && rl);
    if (ref && a && b && d && rl) {
        ref_forward(ref, t, n, NULL, NULL, rl);
        double dr = max_dlogp(a, rl, n, V), dg = max_abs_diff(a, b, (size_t)n * V),
               dk = max_abs_diff(a, d, (size_t)n * V);
        printf("  unified HF f32 vs f64 reference: max |dlogp| %.3g; vs its GGUF twin: max |dlogit| %.3g; vs the "
               "same weights under a gemma4 config: %.3g\n",
               dr, dg, dk);
        CHECK(dr <= 3e-5); /* the decoder tests' F32 band (test_model.c: keqv measured 8.6e-6) */
        CHECK(dg <= 1e-5);
        CHECK(dk == 0);
    }
    free(a), free(b), free(d), free(rl);
    ref_free(ref);
done:
    ox_model_free(hf), ox_model_free(gg), ox_model_free(g4);
}

/* ---- the image embedder (docs/gemma4.md §6.4) ---- */

/* a tensor's values as doubles (n of them) */
static double *f64(const ox_model_files *mf, const char *name, uint64_t n) {
    const ox_tensor *t = ox_files_find(mf, name);
    uint64_t total = 1, rb;
    for (int i = 0; t && i < t->n_dims; i++) total *= t->ne[i];
    if (!t || total != n || ox_row_bytes(t->type, t->ne[0], &rb, NULL)) return NULL;
    uint64_t rows = n / t->ne[0];
    uint8_t *raw = malloc(rb * rows);
    float *f = malloc(t->ne[0] * sizeof *f);
    double *d = malloc(n * sizeof *d);
    ox_tensor_read_rows(t, 0, rows, raw, NULL);
    for (uint64_t r = 0; r < rows; r++) {
        ox_dequantize_row(t->type, raw + r * rb, f, t->ne[0]);
        for (uint64_t j = 0; j < t->ne[0]; j++) d[r * t->ne[0] + j] = f[j];
    }
    free(raw), free(f);
    return d;
}

static void ln64(double *x, int n, const double *w, const double *b) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    for (int i = 0; i < n; i++) x[i] = (x[i] - m) / sqrt(v / n + 1e-5) * w[i] + b[i];
}

/* Straight from the reference: the processor's merged patches (rows of the 48-pixel grid, each
 * patch's pixels row by row, R,G,B) through LN -> dense -> LN -> + P[x][0] + P[y][1] -> LN ->
 * RMSNorm (no scale) -> projection. out: n x T. */
static void embed_ref(const ox_model_files *mf, int side, int D, int S, int T, const float *rgb, int height, int width,
                      double *out) {
    int K = 3 * side * side, gw = width / side, n = (height / side) * gw;
    double *l1w = f64(mf, "v.patch_ln1.weight", K), *l1b = f64(mf, "v.patch_ln1.bias", K);
    double *W = f64(mf, "v.patch_dense.weight", (uint64_t)K * D), *bd = f64(mf, "v.patch_dense.bias", D);
    double *l2w = f64(mf, "v.patch_ln2.weight", D), *l2b = f64(mf, "v.patch_ln2.bias", D);
    double *P = f64(mf, "v.pos_embd_2d.weight", (uint64_t)S * 2 * D);
    double *l3w = f64(mf, "v.patch_ln3.weight", D), *l3b = f64(mf, "v.patch_ln3.bias", D);
    double *J = f64(mf, "mm.input_projection.weight", (uint64_t)T * D);
    double *px = malloc(sizeof *px * K), *h = malloc(sizeof *h * D);
    for (int t = 0; t < n; t++) {
        int y0 = (t / gw) * side, x0 = (t % gw) * side, k = 0;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++)
                for (int c = 0; c < 3; c++) px[k++] = rgb[((size_t)(y0 + y) * width + x0 + x) * 3 + c];
        ln64(px, K, l1w, l1b);
        for (int o = 0; o < D; o++) {
            double a = bd[o];
            for (int i = 0; i < K; i++) a += W[(size_t)o * K + i] * px[i];
            h[o] = a;
        }
        ln64(h, D, l2w, l2b);
        for (int o = 0; o < D; o++)
            h[o] += P[((size_t)(t % gw) * 2 + 0) * D + o] + P[((size_t)(t / gw) * 2 + 1) * D + o];
        ln64(h, D, l3w, l3b);
        double ss = 0;
        for (int o = 0; o < D; o++) ss += h[o] * h[o];
        for (int o = 0; o < D; o++) h[o] /= sqrt(ss / D + 1e-6);
        for (int j = 0; j < T; j++) {
            double a = 0;
            for (int o = 0; o < D; o++) a += J[(size_t)j * D + o] * h[o];
            out[(size_t)t * T + j] = a;
        }
    }
    free(l1w), free(l1b), free(W), free(bd), free(l2w), free(l2b), free(P), free(l3w), free(l3b), free(J);
    free(px), free(h);
}

static void test_image_embedder_names(void) {
    static const char *const pairs[][2] = {
        {"model.vision_embedder.patch_ln1.weight", "v.patch_ln1.weight"}, /* the released checkpoint */
        {"model.vision_embedder.pos_embedding", "v.pos_embd_2d.weight"},
        {"model.vision_embedder.pos_norm.bias", "v.patch_ln3.bias"},
        {"model.embed_vision.embedding_projection.weight", "mm.input_projection.weight"},
        {"model.embed_vision.patch_dense.weight", "v.patch_dense.weight"}, /* transformers' module names */
        {"model.embed_vision.multimodal_embedder.embedding_projection.weight", "mm.input_projection.weight"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char out[96] = "", ig[96];
        CHECK(ox_map_hf_name(pairs[i][0], ig, sizeof ig) == 1); /* not a text-decoder tensor */
        CHECK_MSG(ox_map_hf_vision_name(pairs[i][0], out, sizeof out) == 0 && !strcmp(out, pairs[i][1]), "%s -> %s",
                  pairs[i][0], out);
    }
    char out[96];
    CHECK(ox_map_hf_unified_name("model.vision_embedder.other.weight", out, sizeof out) == 1);
    CHECK(ox_map_hf_unified_name("model.vision_embedder.patch_ln1.weight", out, 8) == -1);
}

static void test_image_embedder(void) {
    ox_synth s = unified_preset();
    s.v_hidden = 32, s.v_pos = 8; /* side 48: v_patch 16 x v_pool 3 */
    ox_model *m = write_and_load(&s, "hf-unified-vision", 1);
    CHECK(m != NULL);
    if (!m) return;
    const ox_model_files *mf = ox_model_files_of(m);
    ox_err err = {0};
    ox_vision_config vc;
    CHECK_MSG(ox_vision_config_read(mf, &vc, &err) == 1, "%s", err.msg);
    CHECK(vc.patch == 16 && vc.pool == 3 && vc.hidden == 32 && vc.n_layers == 0 && vc.pos_size == 8 &&
          vc.text_hidden == s.hidden && vc.default_soft_tokens == 280);
    ox_vision *v = ox_vision_load(mf, 0, &err);
    CHECK_MSG(v != NULL, "%s", err.msg);
    uint64_t est = 0, reads = 0;
    CHECK(ox_vision_estimate(mf, 0, &est, &reads, &err) == 1);
    CHECK_MSG(v && est == ox_vision_bytes(v) && reads > 0, "estimate %llu, loaded %llu", (unsigned long long)est,
              (unsigned long long)(v ? ox_vision_bytes(v) : 0));
    int T = s.hidden;
    /* image sizes: one patch, a row, a column, a 3 x 2 grid (the grid's orientation matters) */
    static const int sizes[][2] = {{48, 48}, {48, 192}, {144, 48}, {96, 144}};
    for (int k = 0; v && k < 4; k++) {
        int H = sizes[k][0], W = sizes[k][1], n = (H / 48) * (W / 48);
        float *rgb = malloc(sizeof *rgb * (size_t)H * W * 3), *out = malloc(sizeof *out * (size_t)n * T);
        double *ref = malloc(sizeof *ref * (size_t)n * T);
        uint32_t r = 99u + (uint32_t)k;
        for (size_t i = 0; i < (size_t)H * W * 3; i++)
            rgb[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f;
        int got = ox_vision_embed(v, rgb, H, W, out, n, &err);
        CHECK_MSG(got == n, "%dx%d: %d (%s)", W, H, got, err.msg);
        embed_ref(mf, 48, 32, 8, T, rgb, H, W, ref);
        double worst = 0, big = 0;
        for (size_t i = 0; got == n && i < (size_t)n * T; i++)
            worst = fmax(worst, fabs(out[i] - ref[i])), big = fmax(big, fabs(ref[i]));
        printf("  image embedder %3dx%-3d (%d soft tokens) vs f64 reference: max |d| %.3g (max |ref| %.3g)\n", W, H, n,
               worst, big);
        CHECK(got == n && worst <= 1e-4 && big > 0.1);
        free(rgb), free(out), free(ref);
    }
    /* sizes: not multiples of 48, past the position table (8 rows of 48 pixels), no room */
    float px[3 * 48 * 48 * 10] = {0}, o[256 * 10];
    err = (ox_err){0};
    CHECK(v && ox_vision_embed(v, px, 50, 48, o, 10, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "multiples of 48");
    float *wide = calloc((size_t)48 * 432 * 3, sizeof *wide), *wo = malloc(sizeof *wo * 9 * (size_t)T);
    err = (ox_err){0};
    CHECK(v && ox_vision_embed(v, wide, 48, 432, wo, 9, &err) == OX_E_RANGE); /* 9 columns, 8 table rows */
    err = (ox_err){0};
    CHECK(v && ox_vision_embed(v, px, 96, 96, o, 3, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "room for 3");
    free(wide), free(wo);

    /* llama.cpp's form: the text GGUF and a gemma4uv mmproj of the same weights (channel-first
     * patch columns, the table as [2][rows][width]) give the HF checkpoint's soft tokens */
    char gp[300], mp[300];
    snprintf(gp, sizeof gp, "%s/unified-vision.gguf", tmp);
    snprintf(mp, sizeof mp, "%s/unified-mmproj.gguf", tmp);
    err = (ox_err){0};
    CHECK_MSG(ox_synth_write_gguf(&s, gp, &err) == 0 && ox_synth_write_mmproj(&s, mp, &err) == 0, "%s", err.msg);
    int h[2] = {ox_host_open_path(gp, &err), ox_host_open_path(mp, &err)};
    ox_model_files *gmf = h[0] >= 0 && h[1] >= 0 ? ox_files_open(h, 2, &err) : NULL;
    ox_vision *gv = gmf ? ox_vision_load(gmf, 0, &err) : NULL;
    CHECK_MSG(gv != NULL, "mmproj: %s", err.msg);
    CHECK(gv && ox_vision_estimate(gmf, 0, &est, &reads, &err) == 1 && est == ox_vision_bytes(gv));
    if (gv && v) {
        enum { IH = 96, IW = 144, N = 6 };
        float *rgb = malloc(sizeof *rgb * IH * IW * 3), *a = malloc(sizeof *a * N * (size_t)T),
              *b = malloc(sizeof *b * N * (size_t)T);
        uint32_t r = 7;
        for (int i = 0; i < IH * IW * 3; i++) rgb[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f;
        CHECK(ox_vision_embed(v, rgb, IH, IW, a, N, &err) == N && ox_vision_embed(gv, rgb, IH, IW, b, N, &err) == N);
        double d = 0;
        for (int i = 0; i < N * T; i++) d = fmax(d, fabs((double)a[i] - b[i]));
        printf("  image embedder from the gemma4uv mmproj vs from the HF checkpoint: max |d| %.3g\n", d);
        CHECK(d <= 1e-5);
        free(rgb), free(a), free(b);
    }
    ox_vision_free(gv);
    ox_files_free(gmf);
    ox_vision_free(v);
    ox_model_free(m);
}

/* Through the engine: the unified checkpoint with its embedder loads its vision side (info.vision
 * without layers), and an image prompt's logits (soft tokens from the engine's embedder) match
 * the float64 embedder + decoder, both with the "vision" mask of the unified config's default
 * (the image's run of soft tokens attends within itself on sliding layers, docs/vision.md). */
static void test_engine_image_prompt(void) {
    ox_synth s = unified_preset();
    s.v_hidden = 32, s.v_pos = 8;
    s.bidirectional = 0; /* the config then says "vision", the unified default */
    char dir[300], p[3][400];
    snprintf(dir, sizeof dir, "%s/hf-unified-engine", tmp);
    mkdir(dir, 0777);
    ox_err err = {0};
    CHECK(ox_synth_write_hf(&s, dir, OX_F32, 1, &err) == 0);
    snprintf(p[0], 400, "%s/config.json", dir);
    snprintf(p[1], 400, "%s/tokenizer.json", dir);
    snprintf(p[2], 400, "%s/model.safetensors", dir);
    int h[3];
    for (int i = 0; i < 3; i++) h[i] = ox_host_open_path(p[i], &err);
    ox_load_opts o = {0};
    ox_engine *e = ox_engine_load(h, 3, &o, 0, &err);
    CHECK_MSG(e != NULL, "%s", err.msg);
    if (!e) return;
    const char *info = ox_engine_info(e);
    CHECK_STR_CONTAINS(info, "\"vision\":{\"patchSize\":16,\"poolingKernel\":3,\"defaultSoftTokens\":280");
    CHECK_STR_CONTAINS(info, "\"layers\":0");
    CHECK(ox_model_config(ox_engine_model(e))->bidir_vision);
    const ox_model_files *mf = ox_model_files_of(ox_engine_model(e));
    int H = s.hidden, V = s.vocab, n = 0, img = V - 1; /* placeholder rows take the soft tokens */
    int32_t t[16];
    t[n++] = 2, t[n++] = 300;
    for (int i = 0; i < 6; i++) t[n++] = img;
    t[n++] = 310;
    float *rgb = malloc(sizeof *rgb * 96 * 144 * 3), *rows = malloc(sizeof *rows * 6 * (size_t)H);
    uint32_t r = 5;
    for (int i = 0; i < 96 * 144 * 3; i++) rgb[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f;
    CHECK(ox_vision_embed(ox_engine_vision(e), rgb, 96, 144, rows, 6, &err) == 6);
    double *ref_rows = malloc(sizeof *ref_rows * 6 * (size_t)H);
    embed_ref(mf, 48, 32, 8, H, rgb, 96, 144, ref_rows);
    float *soft = calloc((size_t)n * H, sizeof *soft), *soft_ref = calloc((size_t)n * H, sizeof *soft_ref);
    uint8_t mask[16] = {0};
    for (int i = 0, k = 0; i < n; i++)
        if (t[i] == img) {
            mask[i] = 1;
            for (int j = 0; j < H; j++)
                soft[(size_t)i * H + j] = rows[k * H + j], soft_ref[(size_t)i * H + j] = (float)ref_rows[k * H + j];
            k++;
        }
    char msg[256];
    ref_model *rm = ref_load(mf, msg, sizeof msg);
    float *lg = malloc(sizeof *lg * (size_t)n * V);
    double *rl = malloc(sizeof *rl * (size_t)n * V);
    ox_session *ss = ox_session_new(ox_engine_model(e), 64, &err);
    ox_forward_io io = {.tokens = t, .n = n, .soft = soft, .soft_mask = mask, .logits = lg, .all_logits = 1};
    CHECK(rm && ss && ox_forward(ss, &io, &err) == 0);
    double d = 1e9;
    if (rm && ss) {
        ref_forward(rm, t, n, soft_ref, mask, rl);
        d = max_dlogp(lg, rl, n, V);
    }
    printf("  unified image prompt through the engine vs the float64 embedder + decoder: max |dlogp| %.3g\n", d);
    CHECK(d <= 3e-5);
    ox_session_free(ss);
    ref_free(rm);
    free(rgb), free(rows), free(ref_rows), free(soft), free(soft_ref), free(lg), free(rl);
    ox_engine_free(e);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_unified_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_pool_init(2, NULL);
    RUN(test_config_12b);
    RUN(test_config_errors);
    RUN(test_checkpoint);
    RUN(test_image_embedder_names);
    RUN(test_image_embedder);
    RUN(test_engine_image_prompt);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    ox_pool_shutdown();
    return check_summary("test_unified");
}
