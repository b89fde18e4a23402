/* test_mlx.c — MLX affine-quantized checkpoints (formats/mlx.h): repacked rows dequantize to
 * exactly scale * q + bias; whole MLX checkpoints written by tools/mlx_write.c (4 and 8 bits,
 * group 32 and 64, a per-module override) against their dequantized F32 reference (same
 * weights bit for bit; logits); the quantization-config reader; bad files. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "formats/mlx.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/model.h"
#include "writers/mlx_write.h"
#include "writers/safetensors_write.h"
#include "writers/synth.h"

#include "ref_forward.c" /* one executable per test file */

static char tmp[256];
static uint32_t rng = 99;
static float frand(void) { return (float)((rng = rng * 1664525u + 1013904223u) >> 8) / 16777216.0f * 2 - 1; }

/* ---------------------------------------------------------------- rows */

/* value j by the formula, written out here: scale * q + bias in f32, q from the words */
static float formula(ox_mlx_q q, ox_st_dtype sdt, const uint32_t *w, const uint16_t *s, const uint16_t *b, int j) {
    uint32_t u = w[j * q.bits / 32] >> (j * q.bits % 32) & ((1u << q.bits) - 1);
    float sc = sdt == OX_ST_BF16 ? ox_bf16_to_f32(s[j / q.group]) : ox_f16_to_f32(s[j / q.group]);
    float bi = sdt == OX_ST_BF16 ? ox_bf16_to_f32(b[j / q.group]) : ox_f16_to_f32(b[j / q.group]);
    return sc * (float)u + bi;
}

static void test_repack_exact(void) {
    enum { COLS = 512, ROWS = 3 };
    static float x[ROWS * COLS], y[ROWS * COLS];
    static uint32_t w[ROWS * COLS / 4];
    static uint16_t s[ROWS * COLS / 32], b[ROWS * COLS / 32];
    static uint8_t blocks[ROWS * COLS / 32 * 36];
    const ox_st_dtype dts[2] = {OX_ST_BF16, OX_ST_F16};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int group = 32; group <= 64; group += 32)
            for (int d = 0; d < 2; d++) {
                ox_mlx_q q = {bits, group};
                for (int i = 0; i < ROWS * COLS; i++) x[i] = frand() * (i % 7 == 0 ? 0.3f : 0.05f) + (i / 700) * 0.01f;
                for (int i = 0; i < 64; i++) x[COLS + i] = 0.25f; /* a constant group: every q is 0 */
                size_t wr = COLS * bits / 32, gr = COLS / group;
                for (int r = 0; r < ROWS; r++)
                    ox_mlx_quantize_row(q, dts[d], x + r * COLS, COLS, w + r * wr, s + r * gr, b + r * gr);
                ox_err e = {0};
                CHECK(ox_mlx_repack(q, dts[d], w, s, b, ROWS, COLS, blocks, "t", 0, &e) == 0);
                ox_dequantize_row(ox_mlx_type(bits), blocks, y, ROWS * COLS);
                int bad = 0, neg = 0;
                double err = 0;
                for (int r = 0; r < ROWS; r++)
                    for (int j = 0; j < COLS; j++) {
                        float want = formula(q, dts[d], w + r * wr, s + r * gr, b + r * gr, j);
                        bad += memcmp(&want, &y[r * COLS + j], 4) != 0;
                        err = fmax(err, fabs(want - x[r * COLS + j]));
                    }
                for (size_t g = 0; g < ROWS * gr; g++)
                    neg += (dts[d] == OX_ST_BF16 ? ox_bf16_to_f32(s[g]) : ox_f16_to_f32(s[g])) < 0;
                CHECK_MSG(bad == 0, "bits %d group %d %s: %d values differ from the formula", bits, group,
                          ox_st_dtype_name(dts[d]), bad);
                /* the quantizer fits: error within a step of the range (< 0.7; MLX's fit makes 0
                 * exact, which can clip the other extreme by up to half a step) plus the bf16
                 * rounding of scale and bias, and it uses negative scales where the max is the
                 * larger extreme, as MLX's */
                CHECK_MSG(err < 0.7 / ((1 << bits) - 1) + 0.003, "bits %d: max error %g", bits, err);
                CHECK(neg > 0 && neg < (int)(ROWS * gr));
            }
    /* a scale f16 cannot hold (a bf16 1e-6 with bits below f16's subnormal step) is an error */
    ox_mlx_q q = {4, 32};
    uint32_t w1[4] = {0x11111111, 0, 0, 0};
    uint16_t s1 = ox_f32_to_bf16(1.1e-6f), b1 = 0;
    ox_err e = {0};
    CHECK(ox_mlx_repack(q, OX_ST_BF16, w1, &s1, &b1, 1, 32, blocks, "blk.0.attn_q.weight", 7, &e) == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(e.msg, "blk.0.attn_q.weight");
    CHECK_STR_CONTAINS(e.msg, "row 7");
    w1[0] = 0; /* every q 0: the scale does not matter */
    CHECK(ox_mlx_repack(q, OX_ST_BF16, w1, &s1, &b1, 1, 32, blocks, "t", 0, &e) == 0);
}

/* ---------------------------------------------------------------- config */

static int parse_cfg(const char *text, ox_mlx_config *c, ox_err *e) {
    ox_json *j = ox_json_parse(text, strlen(text), "config.json", e);
    if (!j) return e->code;
    int rc = ox_mlx_config_parse(j, "config.json", c, e);
    ox_json_free(j);
    return rc;
}

static void test_config(void) {
    ox_mlx_config c;
    ox_err e = {0};
    CHECK(parse_cfg("{\"hidden_size\": 8}", &c, &e) == 0 && c.dflt.bits == 0);
    CHECK(parse_cfg("{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"a.b\": {\"group_size\": 32, \"bits\": 8},"
                    " \"c\": false, \"d\": true}}",
                    &c, &e) == 0);
    CHECK(c.dflt.bits == 4 && c.dflt.group == 64 && c.n == 3);
    ox_mlx_q q = ox_mlx_config_for(&c, "a.b");
    CHECK(q.bits == 8 && q.group == 32);
    CHECK(ox_mlx_config_for(&c, "c").bits == 0 && ox_mlx_config_for(&c, "d").bits == 4);
    CHECK(ox_mlx_config_for(&c, "zzz").group == 64);
    ox_mlx_config_free(&c);
    CHECK(parse_cfg("{\"quantization_config\": {\"group_size\": 32, \"bits\": 8}}", &c, &e) == 0 && c.dflt.bits == 8);
    ox_mlx_config_free(&c);
    CHECK(parse_cfg("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}}", &c,
                    &e) == 0 &&
          c.dflt.bits == 0);
    static const struct {
        const char *text;
        int code;
        const char *what;
    } bad[] = {
        {"{\"quantization\": {\"group_size\": 64, \"bits\": 3}}", OX_E_CONFIG, "bits 3"},
        {"{\"quantization\": {\"group_size\": 128, \"bits\": 4}}", OX_E_CONFIG, "group_size 128"},
        {"{\"quantization\": {\"bits\": 4}}", OX_E_CONFIG, "group_size"},
        {"{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"mode\": \"mxfp4\"}}", OX_E_UNSUPPORTED, "mxfp4"},
        {"{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"m.x\": {\"group_size\": 64, \"bits\": 2}}}",
         OX_E_CONFIG, "quantization.m.x: bits 2"},
        {"{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"m.y\": 7}}", OX_E_CONFIG, "quantization.m.y"},
        {"{\"quantization\": 5}", OX_E_CONFIG, "not an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        int rc = parse_cfg(bad[i].text, &c, &e);
        CHECK_MSG(rc == bad[i].code, "%s: %d", bad[i].text, rc);
        CHECK_ERR(e, bad[i].code, "config.json", bad[i].what);
    }
}

/* ---------------------------------------------------------------- checkpoints */

static ox_synth tiny(void) {
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.branch_gain = 0.5f, s.qk_norm_scale = 0.5f; /* calmer, as test_model */
    return s;
}

static ox_model *open_dir(const char *dir, ox_err *err) {
    char p[3][400];
    int h[3];
    snprintf(p[0], 400, "%s/config.json", dir);
    snprintf(p[1], 400, "%s/tokenizer.json", dir);
    snprintf(p[2], 400, "%s/model.safetensors", dir);
    for (int i = 0; i < 3; i++)
        if ((h[i] = ox_host_open_path(p[i], err)) < 0) return NULL;
    ox_model_files *mf = ox_files_open(h, 3, err);
    return mf ? ox_model_load(mf, NULL, err) : NULL;
}

static const char *src_dir(void) {
    static char dir[300];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/hf", tmp);
    ox_synth s = tiny();
    ox_err e = {0};
    if (mkdir(dir, 0777) || ox_synth_write_hf(&s, dir, OX_BF16, 1, &e)) fprintf(stderr, "synth: %s\n", e.msg);
    return dir;
}

/* MLX + reference dirs of the tiny bf16 checkpoint; 0 on success. */
static int write_pair(const char *name, const ox_mlx_write_opts *o, char *mlx, char *ref) {
    char src[3][400];
    const char *sp[3];
    snprintf(src[0], 400, "%s/config.json", src_dir());
    snprintf(src[1], 400, "%s/tokenizer.json", src_dir());
    snprintf(src[2], 400, "%s/model.safetensors", src_dir());
    for (int i = 0; i < 3; i++) sp[i] = src[i];
    snprintf(mlx, 300, "%s/%s-mlx", tmp, name);
    snprintf(ref, 300, "%s/%s-ref", tmp, name);
    ox_err e = {0};
    if (mkdir(mlx, 0777) || mkdir(ref, 0777) || ox_mlx_write(sp, 3, mlx, ref, o, &e)) {
        fprintf(stderr, "mlx write %s: %s\n", name, e.msg);
        return -1;
    }
    return 0;
}

static void seq(int32_t *t, int n, int vocab) {
    uint32_t r = 777;
    t[0] = 2;
    for (int i = 1; i < n; i++) t[i] = (int32_t)((r = r * 1664525u + 1013904223u) >> 9) % vocab;
}

static float *engine_logits(ox_model *m, const int32_t *t, int n) {
    int V = ox_model_config(m)->vocab;
    float *lg = malloc(sizeof *lg * (size_t)n * V);
    ox_err err = {0};
    ox_session *s = ox_session_new(m, 0, &err);
    ox_forward_io io = {.tokens = t, .n = n, .logits = lg, .all_logits = 1};
    if (!s || ox_forward(s, &io, &err)) fprintf(stderr, "forward: %s\n", err.msg), free(lg), lg = NULL;
    ox_session_free(s);
    return lg;
}

/* max |d log-prob| between a (float) and b (double or float) over n positions */
static double dlogp(const float *a, const double *bd, const float *bf, int n, int V, int *within) {
    double worst = 0;
    *within = 0;
    for (int i = 0; i < n; i++) {
        double ma = -INFINITY, mb = -INFINITY, sa = 0, sb = 0, w = 0;
        const float *x = a + (size_t)i * V;
        for (int v = 0; v < V; v++) {
            double y = bd ? bd[(size_t)i * V + v] : bf[(size_t)i * V + v];
            ma = fmax(ma, x[v]), mb = fmax(mb, y);
        }
        for (int v = 0; v < V; v++) {
            double y = bd ? bd[(size_t)i * V + v] : bf[(size_t)i * V + v];
            sa += exp(x[v] - ma), sb += exp(y - mb);
        }
        for (int v = 0; v < V; v++) {
            double y = bd ? bd[(size_t)i * V + v] : bf[(size_t)i * V + v];
            w = fmax(w, fabs((x[v] - ma - log(sa)) - (y - mb - log(sb))));
        }
        worst = fmax(worst, w);
        *within += w <= 1e-4;
    }
    return worst;
}

#define N_SEQ 24

/* Every quantized tensor of the MLX model reads back as exactly the reference's F32 values;
 * then the float64 reference forward of both models is the same to the last bit, and the
 * engine on the MLX files matches the activation-rounded reference as test_model's quantized
 * GGUFs do (int8 rounding flips aside: see test_model.c, test_quant_vs_ref). */
static void check_pair(const char *name, const char *mlx, const char *ref) {
    ox_err e = {0};
    ox_model *m = open_dir(mlx, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", mlx, e.msg);
    ox_model *r = open_dir(ref, &e);
    if (!r) fprintf(stderr, "load %s: %s\n", ref, e.msg);
    if (!m || !r) {
        CHECK(0);
        ox_model_free(m), ox_model_free(r);
        return;
    }
    const ox_model_files *mf = ox_model_files_of(m), *rf = ox_model_files_of(r);
    CHECK(ox_files_mlx(mf) != NULL && ox_files_mlx(rf) == NULL);
    int n_mlx = 0, bad = 0;
    for (int i = 0; i < ox_files_count(mf); i++) {
        const ox_tensor *t = ox_files_tensor(mf, i), *u = ox_files_find(rf, t->name);
        if (!t->mlx_bits) continue;
        n_mlx++;
        if (!u || u->type != OX_F32 || u->ne[0] != t->ne[0] || ox_tensor_rows(u) != ox_tensor_rows(t)) {
            bad++;
            continue;
        }
        uint64_t rows = ox_tensor_rows(t), cols = t->ne[0], rb;
        ox_row_bytes(t->type, cols, &rb, NULL);
        uint8_t *raw = malloc(rb * rows);
        float *a = malloc(4 * cols * rows), *b = malloc(4 * cols * rows);
        CHECK(ox_tensor_read_rows(t, 0, rows, raw, &e) == 0 && ox_tensor_read_rows(u, 0, rows, b, &e) == 0);
        for (uint64_t k = 0; k < rows; k++) ox_dequantize_row(t->type, raw + k * rb, a + k * cols, (size_t)cols);
        bad += memcmp(a, b, 4 * cols * rows) != 0;
        free(raw), free(a), free(b);
    }
    CHECK_MSG(n_mlx >= 6 * 7 + 3 && bad == 0, "%s: %d MLX tensors, %d differ from the reference", name, n_mlx, bad);

    int V = ox_model_config(m)->vocab;
    int32_t t[N_SEQ];
    seq(t, N_SEQ, V);
    char msg[256];
    ref_model *rm = ref_load(mf, msg, sizeof msg), *rr = ref_load(rf, msg, sizeof msg);
    double *lm = malloc(sizeof *lm * N_SEQ * V), *lr = malloc(sizeof *lr * N_SEQ * V);
    float *em = engine_logits(m, t, N_SEQ), *er = engine_logits(r, t, N_SEQ);
    if (rm && rr && em && er) {
        ref_forward(rm, t, N_SEQ, NULL, NULL, lm);
        ref_forward(rr, t, N_SEQ, NULL, NULL, lr);
        CHECK_MSG(memcmp(lm, lr, sizeof *lm * N_SEQ * V) == 0, "%s: f64 reference forwards differ", name);
        int within, w2;
        double plain = dlogp(em, lm, NULL, N_SEQ, V, &w2);
        ref_set_act_round(rm, 1);
        ref_forward(rm, t, N_SEQ, NULL, NULL, lm);
        double rounded = dlogp(em, lm, NULL, N_SEQ, V, &within);
        double engines = dlogp(em, NULL, er, N_SEQ, V, &w2);
        printf("  %-12s engine vs f64 reference: max |dlogp| %.3g; vs activation-rounded: %.3g, positions within "
               "1e-4: %d/%d; vs the engine on the reference files: %.3g\n",
               name, plain, rounded, within, N_SEQ, engines);
        CHECK_MSG(plain <= 1.0 && engines <= 1.0, "%s: %.3g / %.3g", name, plain, engines);
        CHECK_MSG(within >= 1, "%s: %d positions", name, within);
    } else {
        CHECK(0);
    }
    free(lm), free(lr), free(em), free(er);
    ref_free(rm), ref_free(rr);
    ox_model_free(m), ox_model_free(r);
}

static void test_checkpoints(void) {
    static const struct {
        const char *name;
        int bits, group;
        ox_st_dtype sdt;
        const char *ov;
        int ob, og;
    } cases[] = {
        {"q4-g64", 4, 64, OX_ST_BF16, NULL, 0, 0},
        {"q4-g32", 4, 32, OX_ST_BF16, NULL, 0, 0},
        {"q8-g64", 8, 64, OX_ST_BF16, NULL, 0, 0},
        {"q8-g32-f16", 8, 32, OX_ST_F16, NULL, 0, 0},
        {"q4-mixed", 4, 64, OX_ST_BF16, "mlp.down_proj", 8, 32}, /* mlx-lm's mixed recipes: per-module entries */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ox_mlx_write_opts o = {{cases[i].bits, cases[i].group}, cases[i].ov, {cases[i].ob, cases[i].og}, cases[i].sdt};
        char mlx[300], ref[300];
        if (write_pair(cases[i].name, &o, mlx, ref)) {
            CHECK(0);
            continue;
        }
        check_pair(cases[i].name, mlx, ref);
    }
}

/* ---------------------------------------------------------------- bad files */

static char bad_dir[300];

/* A one-layer-free little MLX file: embed (U32 + scales + biases) and a norm, and config.json. */
static int open_bad(const char *cfg, int drop, uint64_t scale_rows, ox_err *e) {
    static uint32_t w[8 * 8];
    static uint16_t sb[8 * 2];
    char p[2][400];
    snprintf(p[0], 400, "%s/config.json", bad_dir);
    snprintf(p[1], 400, "%s/model.safetensors", bad_dir);
    FILE *f = fopen(p[0], "wb");
    fputs(cfg, f);
    fclose(f);
    ox_st_writer *wr = ox_st_writer_new();
    ox_st_w_tensor(wr, "model.embed_tokens.weight", OX_ST_U32, 2, (uint64_t[]){8, 8}, w, e);
    if (drop != 1) ox_st_w_tensor(wr, "model.embed_tokens.scales", OX_ST_BF16, 2, (uint64_t[]){scale_rows, 2}, sb, e);
    if (drop != 2) ox_st_w_tensor(wr, "model.embed_tokens.biases", OX_ST_BF16, 2, (uint64_t[]){scale_rows, 2}, sb, e);
    if (drop == 3) ox_st_w_tensor(wr, "model.norm.scales", OX_ST_BF16, 1, (uint64_t[]){2}, sb, e);
    ox_st_w_write(wr, p[1], NULL, NULL, e);
    ox_st_writer_free(wr);
    int h[2];
    for (int i = 0; i < 2; i++) h[i] = ox_host_open_path(p[i], e);
    memset(e, 0, sizeof *e);
    ox_model_files *mf = ox_files_open(h, 2, e);
    int rc = mf ? 0 : e->code;
    ox_files_free(mf);
    for (int i = 0; i < 2; i++) ox_host_close(h[i]);
    return rc;
}

static void test_bad_files(void) {
    snprintf(bad_dir, sizeof bad_dir, "%s/bad", tmp);
    mkdir(bad_dir, 0777);
    ox_err e = {0};
    const char *g32 = "{\"quantization\": {\"group_size\": 32, \"bits\": 4}}";
    /* 8 words of 4 bits = 64 values per row, 2 groups of 32: a valid pair, then an error in
     * build_config (no model config), which shows the tensors themselves were accepted */
    CHECK(open_bad(g32, 0, 8, &e) == OX_E_CONFIG);
    CHECK(open_bad(g32, 1, 8, &e) == OX_E_MISSING);
    CHECK_ERR(e, OX_E_MISSING, "model.safetensors", "model.embed_tokens.scales is missing");
    CHECK(open_bad(g32, 2, 8, &e) == OX_E_MISSING);
    CHECK_ERR(e, OX_E_MISSING, "model.safetensors", "model.embed_tokens.biases");
    CHECK(open_bad(g32, 3, 8, &e) == OX_E_FORMAT);
    CHECK_ERR(e, OX_E_FORMAT, "model.safetensors", "model.norm.scales has no U32 values tensor");
    /* the config says group 64: 2 groups of 64 would need 16 words */
    CHECK(open_bad("{\"quantization\": {\"group_size\": 64, \"bits\": 4}}", 0, 8, &e) == OX_E_FORMAT);
    CHECK_ERR(e, OX_E_FORMAT, "model.safetensors", "model.embed_tokens.weight");
    CHECK_STR_CONTAINS(e.msg, "group_size 64");
    CHECK(open_bad("{\"quantization\": {\"group_size\": 64, \"bits\": 3}}", 0, 8, &e) == OX_E_CONFIG);
    CHECK_ERR(e, OX_E_CONFIG, "config.json", "bits 3");
    CHECK(open_bad("{\"quantization\": {\"group_size\": 32, \"bits\": 4, \"model.embed_tokens\": {\"group_size\": 32,"
                   " \"bits\": 8}}}",
                   0, 8, &e) == OX_E_FORMAT); /* the override's 8 bits: 16 words needed */
    CHECK_ERR(e, OX_E_FORMAT, "model.safetensors", "bits 8");
    CHECK(open_bad("{\"quantization\": {\"group_size\": 32, \"bits\": 4, \"model.embed_tokens\": false}}", 0, 8, &e) ==
          OX_E_CONFIG);
    CHECK_ERR(e, OX_E_CONFIG, "model.safetensors", "says it is not");
    CHECK(open_bad(g32, 0, 7, &e) == OX_E_FORMAT); /* scales for 7 rows, values for 8 */
    CHECK_ERR(e, OX_E_FORMAT, "model.safetensors", "disagrees with its scales");
    CHECK(open_bad("{\"hidden_size\": 8}", 0, 8, &e) == OX_E_MISSING); /* U32 but no quantization block */
    CHECK_ERR(e, OX_E_MISSING, "model.safetensors", "no config.json with a quantization block");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_mlx_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_pool_init(2, NULL);
    RUN(test_repack_exact);
    RUN(test_config);
    RUN(test_checkpoints);
    RUN(test_bad_files);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "cleanup failed\n");
    ox_pool_shutdown();
    return check_summary("test_mlx");
}
