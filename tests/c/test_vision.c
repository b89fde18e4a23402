/* test_vision.c — the vision tower and embedder (src/vision) against the float64 reference
 * (ref_vision.c) on generated checkpoints: HF safetensors and llama.cpp's mmproj GGUF, f32 and
 * quantized weights, several image sizes; the two formats of the same weights against each
 * other; the errors. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "check.h"
#include "formats/tensors.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "vision/vision.h"
#include "writers/synth.h"

#include "decode/generate.h"
#include "engine/engine.h"
#include "model/model.h"
#include "model/model_impl.h"
#include "ref_forward.c" /* the test build makes one executable per test_*.c file */
#include "ref_vision.c"
#include "vision_fixture.h"

static char tmp[256];

/* Model files: an HF dir (config, tokenizer, safetensors) or a text GGUF + an mmproj GGUF. */
typedef struct files {
    int h[4], n;
    ox_model_files *mf;
} files;

static int open_files(files *f, const char *const *paths, int n) {
    ox_err err = {0};
    f->n = n;
    for (int i = 0; i < n; i++)
        if ((f->h[i] = ox_host_open_path(paths[i], &err)) < 0) return fprintf(stderr, "%s\n", err.msg), -1;
    f->mf = ox_files_open(f->h, n, &err);
    if (!f->mf) fprintf(stderr, "open: %s\n", err.msg);
    return f->mf ? 0 : -1;
}

static void close_files(files *f) {
    ox_files_free(f->mf);
    for (int i = 0; i < f->n; i++) ox_host_close(f->h[i]);
}

static int write_hf(const char *name, const ox_synth *s, files *f) {
    char dir[300], p[3][400];
    ox_err err = {0};
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    mkdir(dir, 0777);
    if (ox_synth_write_hf(s, dir, OX_F32, 1, &err)) return fprintf(stderr, "synth hf: %s\n", err.msg), -1;
    snprintf(p[0], 400, "%s/config.json", dir);
    snprintf(p[1], 400, "%s/tokenizer.json", dir);
    snprintf(p[2], 400, "%s/model.safetensors", dir);
    const char *pp[3] = {p[0], p[1], p[2]};
    return open_files(f, pp, 3);
}

static int write_gguf_pair(const char *name, const ox_synth *s, files *f) {
    char a[300], b[300];
    ox_err err = {0};
    snprintf(a, sizeof a, "%s/%s.gguf", tmp, name);
    snprintf(b, sizeof b, "%s/%s-mmproj.gguf", tmp, name);
    if (ox_synth_write_gguf(s, a, &err) || ox_synth_write_mmproj(s, b, &err))
        return fprintf(stderr, "synth gguf: %s\n", err.msg), -1;
    const char *pp[2] = {b, a}; /* the mmproj first: the order must not matter */
    return open_files(f, pp, 2);
}

/* max |ours - ref| over the embedder's output, and max |ref| for scale */
static double compare(ox_vision *v, const ref_vision *r, int h, int w, double *ref_max) {
    const ox_vision_config *c = ox_vision_cfg(v);
    float *rgb = vision_image(h, w, (unsigned)(h + w));
    int n_exp = (h / c->patch) * (w / c->patch) / (c->pool * c->pool);
    float *out = malloc((size_t)n_exp * c->text_hidden * sizeof(float));
    double *ref = malloc((size_t)n_exp * c->text_hidden * sizeof(double));
    ox_err err = {0};
    int n = ox_vision_embed(v, rgb, h, w, out, n_exp, &err);
    int nr = ref_vision_embed(r, rgb, h, w, NULL, ref);
    CHECK_MSG(n == n_exp && nr == n_exp, "%dx%d: %d / %d tokens, want %d (%s)", w, h, n, nr, n_exp, err.msg);
    double md = 0, mr = 0;
    for (int i = 0; n == n_exp && i < n * c->text_hidden; i++) {
        md = fmax(md, fabs(out[i] - ref[i]));
        mr = fmax(mr, fabs(ref[i]));
    }
    free(rgb), free(out), free(ref);
    if (ref_max) *ref_max = mr;
    return md;
}

static void check_against_ref(files *f, ox_type quant, double tol, const char *what) {
    char msg[256] = "";
    ox_err err = {0};
    ox_vision *v = ox_vision_load(f->mf, quant, &err);
    ref_vision *r = ref_vision_load(f->mf, msg, sizeof msg);
    CHECK_MSG(v && r, "%s: %s %s", what, err.msg, msg);
    uint64_t est = 0; /* the estimate from the headers is what the load holds */
    CHECK(ox_vision_estimate(f->mf, quant, &est, NULL, &err) == 1);
    CHECK_MSG(v && est == ox_vision_bytes(v), "%s: estimate %llu, loaded %llu", what, (unsigned long long)est,
              (unsigned long long)(v ? ox_vision_bytes(v) : 0));
    for (size_t i = 0; v && r && i < VISION_N_SIZES; i++) {
        double mr, md = compare(v, r, vision_sizes[i][0], vision_sizes[i][1], &mr);
        printf("%s %dx%d: max |ours - ref| %.3g (max |ref| %.3g)\n", what, vision_sizes[i][1], vision_sizes[i][0], md,
               mr);
        CHECK_MSG(md <= tol, "%s %dx%d: %.3g > %.3g", what, vision_sizes[i][1], vision_sizes[i][0], md, tol);
        CHECK(mr > 0.1); /* the output is not trivially small */
    }
    ox_vision_free(v);
    ref_vision_free(r);
}

static void test_hf_f32(void) {
    ox_synth s = vision_tiny(OX_F32);
    files f;
    if (write_hf("hf", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_vision_config c;
    CHECK(ox_vision_config_read(f.mf, &c, NULL) == 1);
    CHECK(c.hidden == 64 && c.n_layers == 2 && c.patch == 16 && c.pool == 3 && c.text_hidden == s.hidden);
    check_against_ref(&f, 0, 1e-4, "hf f32");
    close_files(&f);
}

static void test_hf_std_clipped(void) {
    ox_synth s = vision_tiny(OX_F32);
    s.v_standardize = s.v_clipped = 1;
    files f;
    if (write_hf("hf-std", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_vision_config c;
    CHECK(ox_vision_config_read(f.mf, &c, NULL) == 1 && c.standardize && c.clipped);
    check_against_ref(&f, 0, 1e-4, "hf f32 standardize+clipped");
    close_files(&f);
}

/* The mmproj GGUF of the same seed: same tensors in llama.cpp's layout, same output. */
static void test_mmproj_f32(void) {
    ox_synth s = vision_tiny(OX_F32);
    files f, g;
    if (write_gguf_pair("mm", &s, &f) || write_hf("hf2", &s, &g)) {
        CHECK(0);
        return;
    }
    check_against_ref(&f, 0, 1e-4, "mmproj f32");
    ox_err err = {0};
    ox_vision *a = ox_vision_load(f.mf, 0, &err), *b = ox_vision_load(g.mf, 0, &err);
    CHECK(a && b);
    float *rgb = vision_image(96, 144, 7), oa[6 * 512], ob[6 * 512];
    int na = a ? ox_vision_embed(a, rgb, 96, 144, oa, 6, &err) : -1;
    int nb = b ? ox_vision_embed(b, rgb, 96, 144, ob, 6, &err) : -1;
    CHECK(na == 6 && nb == 6);
    double md = 0;
    for (int i = 0; na == 6 && nb == 6 && i < 6 * s.hidden; i++) md = fmax(md, fabs(oa[i] - ob[i]));
    printf("mmproj vs HF (same weights) 144x96: max diff %.3g\n", md);
    CHECK(md <= 1e-5);
    free(rgb);
    ox_vision_free(a), ox_vision_free(b);
    close_files(&f), close_files(&g);
}

/* Quantized weights: the Q8_0 mmproj and quantize-on-load, against the float64 reference of
 * the stored (dequantized) weights. The kernels round each matmul's activations to Q8 blocks
 * (llama.cpp's rule), which the reference does not: the stated band is 0.1 absolute on
 * outputs of magnitude ~2 (measured 0.06-0.07 for Q8_0, see the printout). */
static void test_quantized(void) {
    ox_synth s = vision_tiny(OX_Q8_0);
    files f;
    if (write_gguf_pair("mm-q8", &s, &f)) {
        CHECK(0);
        return;
    }
    check_against_ref(&f, 0, 0.1, "mmproj q8_0");
    close_files(&f);
    ox_synth s32 = vision_tiny(OX_F32);
    if (write_hf("hf-q", &s32, &f)) {
        CHECK(0);
        return;
    }
    check_against_ref(&f, OX_BF16, 0.05, "hf f32 as bf16 on load"); /* against the f32 weights: 0.01-0.024 */
    check_against_ref(&f, OX_Q8_0, 0.2, "hf f32 as q8_0 on load");  /* the same: 0.07-0.1 */
    close_files(&f);
}

static void test_errors(void) {
    ox_synth s = vision_tiny(OX_F32);
    files f;
    if (write_hf("hf-err", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_err err = {0};
    ox_vision *v = ox_vision_load(f.mf, 0, &err);
    CHECK(v);
    if (!v) {
        close_files(&f);
        return;
    }
    float *rgb = vision_image(96, 96, 1), out[4 * 512];
    CHECK(ox_vision_embed(v, rgb, 96, 50, out, 4, &err) == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "multiples of 48");
    CHECK(ox_vision_embed(v, rgb, 0, 48, out, 4, &err) == OX_E_RANGE);
    CHECK(ox_vision_embed(v, rgb, 96, 96, out, 3, &err) == OX_E_RANGE); /* 4 tokens, room for 3 */
    CHECK_STR_CONTAINS(err.msg, "room for 3");
    float *big = calloc((size_t)48 * 48 * 60 * 3, sizeof(float)); /* 3 x 180 patches = 540 > 64 table rows */
    CHECK(ox_vision_embed(v, big, 48, 48 * 60, out, 4, &err) == OX_E_RANGE);
    free(big);
    CHECK(ox_vision_embed(v, rgb, 96, 96, out, 4, &err) == 4); /* usable after errors */
    free(rgb);
    ox_vision_free(v);
    close_files(&f);
    /* a text-only model: no tower */
    ox_synth t;
    ox_synth_preset(&t, "tiny", NULL);
    char p[300];
    snprintf(p, sizeof p, "%s/text.gguf", tmp);
    CHECK(ox_synth_write_gguf(&t, p, &err) == 0);
    const char *pp[1] = {p};
    if (open_files(&f, pp, 1)) {
        CHECK(0);
        return;
    }
    ox_vision_config c;
    CHECK(ox_vision_config_read(f.mf, &c, &err) == 0);
    CHECK(ox_vision_load(f.mf, 0, &err) == NULL && err.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(err.msg, "no vision tower");
    close_files(&f);
    /* an mmproj alone: MISSING, saying what it is */
    char mp[300];
    snprintf(mp, sizeof mp, "%s/alone-mmproj.gguf", tmp);
    CHECK(ox_synth_write_mmproj(&s, mp, &err) == 0);
    int hm = ox_host_open_path(mp, &err);
    CHECK(ox_files_open(&hm, 1, &err) == NULL);
    CHECK_ERR(err, OX_E_MISSING, "alone-mmproj.gguf", "vision projector (mmproj)");
    ox_host_close(hm);
    /* a vision_config over text-only weights: no tower; over part of the tower: MISSING, named */
    char dir[300], q[2][400];
    snprintf(dir, sizeof dir, "%s/hf-err", tmp);
    ox_synth s2 = vision_tiny(OX_F32);
    s2.v_layers = 0; /* the text weights alone */
    CHECK(ox_synth_write_hf(&s2, dir, OX_F32, 1, &err) == 0);
    snprintf(q[0], 400, "%s/config.json", dir);
    snprintf(q[1], 400, "%s/model.safetensors", dir);
    ox_synth s3 = vision_tiny(OX_F32);
    char dir3[300];
    snprintf(dir3, sizeof dir3, "%s/hf-cfg", tmp);
    mkdir(dir3, 0777);
    CHECK(ox_synth_write_hf(&s3, dir3, OX_F32, 1, &err) == 0);
    snprintf(q[0], 400, "%s/config.json", dir3); /* vision_config ... */
    const char *mixed[2] = {q[0], q[1]};         /* ... over the text-only safetensors */
    if (open_files(&f, mixed, 2) == 0) {
        CHECK(ox_vision_config_read(f.mf, &c, &err) == 0);
        close_files(&f);
    } else CHECK(0);
}

/* The engine end to end: an HF multimodal checkpoint and a GGUF + mmproj pair load with their
 * tower (info.vision names the image tokens), an image's rows enter the decoder at the
 * <|image|> positions of a prompt, and the logits match the float64 decoder fed the float64
 * tower's rows (soft tokens: no embedding scale, the pad token's PLE row). */
static void test_engine_image_prompt(void) {
    ox_synth s = vision_tiny(OX_F32);
    files f;
    if (write_hf("hf-engine", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_err err = {0};
    int h[3] = {f.h[0], f.h[1], f.h[2]};
    ox_load_opts o = {0};
    ox_engine *e = ox_engine_load(h, 3, &o, 0, &err);
    CHECK_MSG(e != NULL, "%s", err.msg);
    if (!e) return;
    const char *info = ox_engine_info(e);
    const ox_tokenizer *tok = ox_engine_tokenizer(e);
    int img = ox_tokenizer_find(tok, "<|image|>"), boi = ox_tokenizer_find(tok, "<|image>"),
        eoi = ox_tokenizer_find(tok, "<image|>");
    char want[160];
    snprintf(want, sizeof want, "\"imageTokenId\":%d,\"boiTokenId\":%d,\"eoiTokenId\":%d", img, boi, eoi);
    CHECK(img > 0 && boi > 0 && eoi > 0);
    CHECK_STR_CONTAINS(info, "\"vision\":{\"patchSize\":16,\"poolingKernel\":3,\"defaultSoftTokens\":280");
    CHECK_STR_CONTAINS(info, want);
    /* prompt: <bos> a <|image> <|image|> x 6 <image|> b */
    int H = s.hidden, n = 0;
    int32_t t[16];
    t[n++] = 2, t[n++] = 300, t[n++] = boi;
    for (int i = 0; i < 6; i++) t[n++] = img;
    t[n++] = eoi, t[n++] = 310;
    float *rgb = vision_image(96, 144, 3), *soft = calloc((size_t)n * H, sizeof(float)), rows[6 * 512];
    uint8_t mask[16] = {0};
    CHECK(ox_vision_embed(ox_engine_vision(e), rgb, 96, 144, rows, 6, &err) == 6);
    double *ref_rows = malloc((size_t)6 * H * sizeof(double));
    char msg[256];
    ref_vision *rv = ref_vision_load(ox_model_files_of(ox_engine_model(e)), msg, sizeof msg);
    ref_model *rm = ref_load(ox_model_files_of(ox_engine_model(e)), msg, sizeof msg);
    CHECK(rv && rm);
    if (rv) ref_vision_embed(rv, rgb, 96, 144, NULL, ref_rows);
    float *soft_ref = calloc((size_t)n * H, sizeof(float));
    for (int i = 0, k = 0; i < n; i++)
        if (t[i] == img) {
            mask[i] = 1;
            for (int j = 0; j < H; j++)
                soft[(size_t)i * H + j] = rows[k * H + j], soft_ref[(size_t)i * H + j] = (float)ref_rows[k * H + j];
            k++;
        }
    int V = s.vocab;
    float *lg = malloc((size_t)n * V * sizeof(float));
    double *rl = malloc((size_t)n * V * sizeof(double));
    ox_session *ss = ox_session_new(ox_engine_model(e), 64, &err);
    ox_forward_io io = {.tokens = t, .n = n, .soft = soft, .soft_mask = mask, .logits = lg, .all_logits = 1};
    CHECK(ss && ox_forward(ss, &io, &err) == 0);
    if (rm) ref_forward(rm, t, n, soft_ref, mask, rl);
    double d = 0;
    for (int i = 0; i < n * V; i++) d = fmax(d, fabs(lg[i] - rl[i]));
    printf("image prompt through the engine vs the float64 tower + decoder: max |dlogit| %.3g\n", d);
    CHECK(d < 2e-3); /* measured 5.2e-5 native, 1.7e-4 wasm */
    ox_session_free(ss);
    ref_free(rm), ref_vision_free(rv);
    free(rgb), free(soft), free(soft_ref), free(ref_rows), free(lg), free(rl);
    ox_engine_free(e);
    close_files(&f);
    /* the same model as GGUF + mmproj: the tower comes with it; a text-only GGUF: info.vision null */
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/eng.gguf", tmp);
    snprintf(b, sizeof b, "%s/eng-mmproj.gguf", tmp);
    CHECK(ox_synth_write_gguf(&s, a, &err) == 0 && ox_synth_write_mmproj(&s, b, &err) == 0);
    h[0] = ox_host_open_path(a, &err), h[1] = ox_host_open_path(b, &err);
    e = ox_engine_load(h, 2, &o, 0, &err);
    CHECK_MSG(e && ox_engine_vision(e), "%s", err.msg);
    ox_engine_free(e);
    e = ox_engine_load(h, 1, &o, 0, &err);
    CHECK(e && !ox_engine_vision(e));
    if (e) CHECK_STR_CONTAINS(ox_engine_info(e), "\"vision\":null");
    ox_engine_free(e);
    ox_host_close(h[0]), ox_host_close(h[1]);
}

/* use_bidirectional_attention "vision": a run of image tokens attends within itself on sliding
 * layers. A run of OX_SOFT_RUN_MAX soft tokens across the micro-batch boundary, in one forward
 * and in prefill chunks that would cut it, against the float64 decoder's mask; and the mask
 * matters (causal logits differ). */

/* Prefix reuse over a run of image tokens (ox_session_reuse_soft), on a session that ran the n
 * tokens t with rows soft at mask (keeping every position: no ring limits the reuse): positions
 * are kept where the prompt brings the same rows; on a bidir_vision model a changed row drops
 * the whole run (its rows saw each other), on a causal one only from the changed row on; a
 * prompt run on the kept prefix gives the logits of a run from scratch; the generator's soft
 * rows go before its prompt. */
static void soft_reuse(ox_model *m, const int32_t *t, const uint8_t *mask, const float *soft, int n) {
    ox_err err = {0};
    int H = m->c.hidden, V = m->c.vocab, first = 0, last = n - 1;
    while (!mask[first]) first++;
    while (!mask[last]) last--;
    float *other = malloc((size_t)n * H * sizeof *other), *lg = malloc((size_t)V * sizeof *lg),
          *fresh = malloc((size_t)V * sizeof *fresh);
    ox_session *ss = ox_session_new_rings(m, n + 8, OX_KV_DEFAULT, 0, &err);
    ox_forward_io run = {.tokens = t, .n = n, .soft = soft, .soft_mask = mask};
    CHECK(ss && ox_forward(ss, &run, &err) == 0);
    memcpy(other, soft, (size_t)n * H * sizeof *other);
    other[(size_t)last * H] += 0.5f; /* the run's last row, changed */
    CHECK(ox_session_pos(ss) == n && ox_session_reuse_soft(ss, t, n, soft, mask, &err) == n - 1);
    CHECK(ox_session_reuse_soft(ss, t, n, other, mask, &err) == first); /* bidir: not in part */
    ox_forward_io rest = {
        .tokens = t + first, .n = n - first, .soft = other + (size_t)first * H, .soft_mask = mask + first, .logits = lg};
    CHECK(ox_forward(ss, &rest, &err) == 0);
    ox_session *f = ox_session_new_rings(m, n + 8, OX_KV_DEFAULT, 0, &err);
    ox_forward_io all = {.tokens = t, .n = n, .soft = other, .soft_mask = mask, .logits = fresh};
    CHECK(f && ox_forward(f, &all, &err) == 0);
    double d = 0;
    for (int i = 0; i < V; i++) d = fmax(d, fabs(lg[i] - fresh[i]));
    printf("  the run again on the kept prefix vs from scratch: logits %.3g\n", d);
    CHECK(d < 1e-4);
    CHECK(ox_session_reuse(ss, t, n, &err) == first); /* ids alone never match a soft position */
    m->c.bidir_vision = 0;
    CHECK(ox_session_reuse_soft(f, t, n, soft, mask, &err) == last); /* causal: up to the changed row */
    m->c.bidir_vision = 1;
    /* the generator takes the rows before the prompt, for that prompt's length */
    ox_gen_params gp;
    ox_gen_defaults(&gp);
    ox_gen *g = ox_gen_new(f, NULL, &gp, &err);
    CHECK(g && ox_gen_soft(g, soft, mask, n, &err) == 0 && ox_gen_start(g, t, n - 1, &err) == OX_E_RANGE);
    CHECK(g && ox_gen_start(g, t, n, &err) == first && ox_gen_soft(g, soft, mask, n, &err) == OX_E_STATE);
    ox_gen_free(g);
    ox_session_free(f);
    ox_session_free(ss);
    free(other), free(lg), free(fresh);
}
static void test_vision_bidirectional(void) {
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.bidirectional = 2, s.ctx = 1024;
    files f;
    if (write_hf("hf-bidir", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_err err = {0};
    CHECK(ox_files_config(f.mf)->bidir_vision == 1);
    /* GGUF has no key: the 26B-A4B / 31B shapes (k_eq_v, MoE) get it, E2B's does not */
    const char *presets[3] = {"keqv", "moe", "tiny"};
    for (int i = 0; i < 3; i++) {
        ox_synth g;
        char gp[300];
        ox_synth_preset(&g, presets[i], NULL);
        snprintf(gp, sizeof gp, "%s/%s.gguf", tmp, presets[i]);
        files gf;
        const char *one[1] = {gp};
        if (ox_synth_write_gguf(&g, gp, &err) || open_files(&gf, one, 1)) {
            CHECK(0);
            continue;
        }
        CHECK_MSG(ox_files_config(gf.mf)->bidir_vision == (i < 2), "%s", presets[i]);
        close_files(&gf);
    }
    char msg[256];
    ref_model *rm = ref_load(f.mf, msg, sizeof msg);
    ox_model *m = ox_model_load(f.mf, &(ox_load_opts){0}, &err); /* takes f.mf */
    f.mf = NULL;
    CHECK(m && rm);
    if (!m || !rm) return;
    int H = s.hidden, V = s.vocab, n = 20 + OX_SOFT_RUN_MAX + 10;
    int32_t *t = malloc((size_t)n * sizeof *t);
    uint8_t *mask = calloc((size_t)n, 1);
    float *soft = calloc((size_t)n * H, sizeof(float));
    for (int i = 0; i < n; i++) t[i] = 300 + (i * 7) % 200;
    for (int i = 20; i < 20 + OX_SOFT_RUN_MAX; i++) {
        mask[i] = 1;
        for (int j = 0; j < H; j++) soft[(size_t)i * H + j] = (float)sin(0.37 * i + 0.11 * j);
    }
    float *lg = malloc((size_t)n * V * sizeof(float)), *lc = malloc((size_t)n * V * sizeof(float));
    double *rl = malloc((size_t)n * V * sizeof(double));
    ref_forward(rm, t, n, soft, mask, rl);
    ox_session *ss = ox_session_new(m, n + 8, &err);
    ox_forward_io io = {.tokens = t, .n = n, .soft = soft, .soft_mask = mask, .logits = lg, .all_logits = 1};
    CHECK(ss && ox_forward(ss, &io, &err) == 0);
    double d = 0, dc = 0;
    for (size_t i = 0; i < (size_t)n * V; i++) d = fmax(d, fabs(lg[i] - rl[i]));
    printf("\"vision\" attention, a run of %d image tokens: max |dlogit| vs reference %.3g\n", OX_SOFT_RUN_MAX, d);
    CHECK(d < 2e-3); /* 310 positions: measured 2.5e-4 native, 4.9e-4 wasm */
    /* the same through prefill chunks of 100 (cut inside the run), then one more token: its
     * logits against the reference's over the n + 1 tokens */
    ox_session_reset(ss);
    ox_gen_params gp;
    ox_gen_defaults(&gp);
    ox_gen *g = ox_gen_new(ss, NULL, &gp, &err);
    CHECK(g && ox_gen_soft(g, soft, mask, n, &err) == 0 && ox_gen_start(g, t, n, &err) >= 0);
    int left = 1;
    while (g && left > 0) left = ox_gen_prefill(g, 100, &err);
    CHECK_MSG(left == 0, "%s", err.msg);
    ox_gen_free(g);
    int32_t *t1 = malloc((size_t)(n + 1) * sizeof *t1);
    uint8_t *m1 = calloc((size_t)n + 1, 1);
    float *s1 = calloc((size_t)(n + 1) * H, sizeof(float));
    memcpy(t1, t, (size_t)n * sizeof *t), memcpy(m1, mask, (size_t)n), memcpy(s1, soft, (size_t)n * H * sizeof(float));
    t1[n] = 333;
    double *r1 = malloc((size_t)(n + 1) * V * sizeof(double));
    ref_forward(rm, t1, n + 1, s1, m1, r1);
    ox_forward_io one = {.tokens = &t1[n], .n = 1, .logits = lc};
    CHECK(ox_session_pos(ss) == n && ox_forward(ss, &one, &err) == 0);
    double dg = 0;
    for (int i = 0; i < V; i++) dg = fmax(dg, fabs(lc[i] - r1[(size_t)n * V + i]));
    printf("  prefill in chunks of 100, then one token: logits vs reference %.3g\n", dg);
    CHECK(dg < 1e-3);
    soft_reuse(m, t1, m1, s1, n + 1);
    free(t1), free(m1), free(s1), free(r1);
    /* causal attention for the same prompt: logits in the run differ (the mask is in effect) */
    ref_model *causal = rm;
    causal->bidir_vision = 0;
    ref_forward(causal, t, n, soft, mask, rl);
    for (size_t i = 0; i < (size_t)n * V; i++) dc = fmax(dc, fabs(lg[i] - rl[i]));
    CHECK(dc > 1e-2);
    ox_session_free(ss);
    ox_model_free(m);
    ref_free(rm);
    close_files(&f);
    free(t), free(mask), free(soft), free(lg), free(lc), free(rl);
}

/* The GPU seam natively: attach registers the tower's weights (every matrix of a type with a
 * GPU kernel, every norm vector; their bytes what ox_vision_gpu_estimate says); an image then
 * records one step, which a native build cannot run (UNSUPPORTED, the tower still usable);
 * detached, the CPU rows are the same as before, bit for bit. A type without kernels keeps its
 * matrices out (their linears would run on the CPU inside the step). */
static void test_gpu_attach(void) {
    ox_synth s = vision_tiny(OX_F32);
    s.v_standardize = 1;
    files f;
    if (write_gguf_pair("gpu", &s, &f)) {
        CHECK(0);
        return;
    }
    ox_err err = {0};
    ox_vision *v = ox_vision_load(f.mf, 0, &err);
    CHECK_MSG(v != NULL, "%s", err.msg);
    if (!v) return close_files(&f);
    const ox_vision_config *c = ox_vision_cfg(v);
    float *rgb = vision_image(96, 144, 3), a[6 * 512], b[6 * 512];
    CHECK(ox_vision_embed(v, rgb, 96, 144, a, 6, &err) == 6);
    for (int pass = 0; pass < 2; pass++) {
        uint32_t types = pass ? 0 : 1u << OX_F32; /* f32 kernels, then none */
        ox_gpu *g = ox_gpu_new(types, &err);
        CHECK(g && ox_vision_gpu_attach(v, g, &err) == 0 && ox_vision_gpu_on(v));
        int n = 0, mats = 0;
        const int32_t *t = ox_gpu_table(g, &n);
        uint64_t bytes = 0, est = 0;
        for (int i = 0; i < n; i++) {
            const int32_t *e = t + (size_t)i * OX_GPU_ENTRY_WORDS;
            mats += e[1] == 0;
            bytes += e[1] ? (uint64_t)e[4] * 4 : (uint64_t)e[3] * (uint64_t)e[6];
        }
        CHECK(ox_vision_gpu_estimate(f.mf, 0, &est, &err) == 1);
        int want_mats = types ? 2 + 7 * c->n_layers : 0, want_vecs = 2 + 6 * c->n_layers;
        CHECK_MSG(mats == want_mats && n - mats == want_vecs, "%d matrices, %d vectors", mats, n - mats);
        if (types)
            CHECK_MSG(bytes == est, "registered %llu bytes, estimated %llu", (unsigned long long)bytes,
                      (unsigned long long)est);
        err = (ox_err){0};
        CHECK(ox_vision_embed(v, rgb, 96, 144, b, 6, &err) == OX_E_UNSUPPORTED && strstr(err.msg, "no GPU host"));
        ox_vision_gpu_detach(v);
        ox_gpu_free(g);
        CHECK(!ox_vision_gpu_on(v) && ox_vision_embed(v, rgb, 96, 144, b, 6, &err) == 6);
        CHECK(memcmp(a, b, (size_t)6 * c->text_hidden * sizeof(float)) == 0);
    }
    free(rgb);
    ox_vision_free(v);
    close_files(&f);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_vision_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_pool_init(2, NULL);
    RUN(test_hf_f32);
    RUN(test_hf_std_clipped);
    RUN(test_mmproj_f32);
    RUN(test_quantized);
    RUN(test_errors);
    RUN(test_engine_image_prompt);
    RUN(test_vision_bidirectional);
    RUN(test_gpu_attach);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", tmp);
    return check_summary("test_vision");
}
