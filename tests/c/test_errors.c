/* test_errors.c — bad input and failure, end to end through ox_files_open / ox_model_load /
 * ox_forward: a valid synthetic model (synth.c) is written to /tmp, then corrupted one way
 * at a time. Each case checks the error code, that the message names the file and the
 * problem, and that a good model still loads and runs afterwards. Also: limits (context,
 * tokens, threads) and a host file whose reads start failing in the middle of generation.
 * (The committed fuzz regression inputs are replayed by test_fuzz_corpus.c.) */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"
#include "model/model.h"
#include "kernels/pool.h"
#include "formats/safetensors.h"
#include "writers/synth.h"
#include "formats/tensors.h"
#include "text/tokenizer.h"

static char dir[64];        /* scratch directory for this run */
static char good_gguf[128]; /* the pristine model */
static char hf_dir[128];    /* the pristine HF checkpoint (2 shards) */

/* ------------------------------------------------------------------ helpers */

static ox_synth mini(void) {
    ox_synth s;
    ox_synth_preset(&s, "tiny", NULL);
    s.hidden = 32, s.layers = 2, s.heads = 2, s.kv_heads = 1, s.head_dim = 16, s.global_head_dim = 32;
    s.ffn = 64, s.ple = 16, s.vocab = 384, s.user_tokens = 4, s.swa_period = 2, s.kv_shared = 0;
    s.window = 4, s.ctx = 64;
    return s;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) free(b), b = NULL;
    fclose(f);
    if (b) b[n] = 0, *len = (size_t)n;
    return b;
}

static int spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Replace the first occurrence of `from` in a NUL-terminated text; returns a new buffer. */
static char *edit(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    if (!at) return NULL;
    size_t pre = (size_t)(at - text), fl = strlen(from), tl = strlen(to), n = strlen(text);
    char *o = malloc(n - fl + tl + 1);
    memcpy(o, text, pre), memcpy(o + pre, to, tl), strcpy(o + pre + tl, at + fl);
    return o;
}

/* Open a model from in-memory files and load it; returns the error code (0 = loaded, freed). */
static int load_mem(const char *const *names, uint8_t *const *bufs, const size_t *lens, int n, const ox_load_opts *opts,
                    ox_err *err) {
    int h[8];
    for (int i = 0; i < n; i++) h[i] = ox_host_open_mem(names[i], bufs[i], lens[i]);
    memset(err, 0, sizeof *err);
    ox_model_files *mf = ox_files_open(h, n, err);
    ox_model *m = mf ? ox_model_load(mf, opts, err) : NULL;
    int rc = m ? 0 : err->code;
    if (m) ox_model_free(m);
    for (int i = 0; i < n; i++) ox_host_close(h[i]);
    return rc;
}

static int load_gguf_mem(const uint8_t *buf, size_t len, const ox_load_opts *opts, ox_err *err) {
    const char *name = "bad.gguf";
    uint8_t *b = (uint8_t *)buf;
    return load_mem(&name, &b, &len, 1, opts, err);
}

/* Offset of the field after tensor `name`'s name in a GGUF's tensor infos (n_dims). */
static size_t tensor_info(const uint8_t *buf, size_t len, const char *name) {
    size_t nl = strlen(name);
    for (size_t i = 0; i + 8 + nl <= len; i++) {
        uint64_t l;
        memcpy(&l, buf + i, 8);
        if (l == nl && memcmp(buf + i + 8, name, nl) == 0) return i + 8 + nl;
    }
    return 0;
}
/* Pointers into a tensor info: ne[d] and the type / offset fields after the dims. */
static uint8_t *ti_ne(uint8_t *buf, size_t at, int d) { return buf + at + 4 + 8 * (size_t)d; }
static uint8_t *ti_type(uint8_t *buf, size_t at) {
    uint32_t nd;
    memcpy(&nd, buf + at, 4);
    return buf + at + 4 + 8 * (size_t)nd;
}
static uint8_t *ti_offset(uint8_t *buf, size_t at) { return ti_type(buf, at) + 4; }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* The pristine model still loads and runs (after every failure). */
/* The good model's logits for {2, 300, 301}, taken before any fault (main); every "still
 * usable" check must reproduce them exactly. */
static float good_logits[384];
static int have_good_logits;

static void good_model_works(void) {
    ox_err err = {0};
    int h = ox_host_open_path(good_gguf, &err);
    ox_model_files *mf = h >= 0 ? ox_files_open(&h, 1, &err) : NULL;
    ox_model *m = mf ? ox_model_load(mf, NULL, &err) : NULL;
    CHECK_MSG(m != NULL, "good model after a failure: %s", err.msg);
    if (m) {
        ox_session *s = ox_session_new(m, 16, &err);
        float logits[384];
        int32_t t[3] = {2, 300, 301};
        ox_forward_io io = {t, 3, NULL, NULL, logits, 0, NULL};
        CHECK(s && ox_forward(s, &io, &err) == 0);
        if (!have_good_logits) {
            memcpy(good_logits, logits, sizeof logits);
            have_good_logits = 1;
        }
        CHECK_MSG(memcmp(logits, good_logits, sizeof logits) == 0,
                  "the good model's logits differ from those before the faults");
        ox_session_free(s);
        ox_model_free(m);
    }
    ox_host_close(h);
}

#define EXPECT(rc, err, code, ...)                                                                                     \
    do {                                                                                                               \
        CHECK_MSG((rc) == (code), "rc %d (%s), want %s: %s", (rc), ox_err_code_name(rc), ox_err_code_name(code),       \
                  (err).msg);                                                                                          \
        const char *needles_[] = {__VA_ARGS__};                                                                        \
        for (size_t k_ = 0; k_ < sizeof needles_ / sizeof needles_[0]; k_++)                                           \
            CHECK_STR_CONTAINS((err).msg, needles_[k_]);                                                               \
        fprintf(stderr, "   %s: %s\n", ox_err_code_name(rc), (err).msg);                                               \
        good_model_works();                                                                                            \
    } while (0)

/* ------------------------------------------------------------------ GGUF header and data */

static uint8_t *gguf; /* pristine GGUF bytes */
static size_t gguf_len;

static uint8_t *copy_gguf(void) {
    uint8_t *b = malloc(gguf_len);
    memcpy(b, gguf, gguf_len);
    return b;
}

static void test_gguf_header(void) {
    ox_err err;
    uint8_t *b = copy_gguf();
    memcpy(b, "GGML", 4);
    int rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", "bad magic");

    memcpy(b, gguf, 8);
    put_u32(b + 4, 7);
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_UNSUPPORTED, "bad.gguf", "version 7");

    memcpy(b, gguf, 8);
    rc = load_gguf_mem(b, 100, NULL, &err); /* cut inside the metadata */
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", "truncated");
    rc = load_gguf_mem(b, 3, NULL, &err);
    CHECK(rc < 0);
    rc = load_gguf_mem(b, 0, NULL, &err); /* empty (a .gguf by name) */
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf");

    put_u64(b + 8, (uint64_t)1 << 40); /* absurd tensor count */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", "absurd counts");
    put_u64(b + 8, 100000); /* plausible count the file cannot hold */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", "cannot fit");

    memcpy(b, gguf, 24);
    put_u64(b + 24, UINT64_MAX - 3); /* first key's length */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", "absurd string length");
    free(b);
}

static void test_gguf_tensors(void) {
    ox_err err;
    const char *q = "blk.0.attn_q.weight";
    size_t at = tensor_info(gguf, gguf_len, q);
    CHECK(at > 0);
    if (!at) return;
    uint8_t *b = copy_gguf();
    int rc;

    rc = load_gguf_mem(b, gguf_len - 100, NULL, &err); /* last tensor's data cut short */
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", "beyond file end");

    put_u64(ti_offset(b, at), (uint64_t)1 << 40); /* offset beyond the file */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", q, "beyond file end");
    put_u64(ti_offset(b, at), UINT64_MAX - 31); /* offset + data start wraps around */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", q);
    put_u64(ti_offset(b, at), 3); /* misaligned */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", q, "alignment");
    memcpy(b, gguf, gguf_len);

    put_u64(ti_ne(b, at, 1), (uint64_t)1 << 62); /* rows * row bytes overflows 64 bits */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", q, "overflows");
    put_u64(ti_ne(b, at, 1), ((uint64_t)1 << 32) + 1); /* > 4 GiB: fine in 64 bits, not in this file */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_TRUNCATED, "bad.gguf", q, "beyond file end");
    put_u64(ti_ne(b, at, 0), (uint64_t)1 << 63); /* "negative" dimension */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_FORMAT, "bad.gguf", q);
    memcpy(b, gguf, gguf_len);

    put_u64(ti_ne(b, at, 1), 8); /* 8 output rows where the config says heads * head_dim = 32 */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_CONFIG, "bad.gguf", q, "disagrees with the config");
    memcpy(b, gguf, gguf_len);

    put_u32(ti_type(b, at), 99); /* unknown ggml type */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_UNSUPPORTED, "bad.gguf", q, "type 99");
    put_u32(ti_type(b, at), 28); /* F64: a real ggml type this engine does not read */
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_UNSUPPORTED, "bad.gguf", q, "type 28 (F64)");
    memcpy(b, gguf, gguf_len);

    memcpy(b + at - strlen("attn_q.weight"), "attn_X", 6); /* rename: blk.0.attn_q.weight is now missing */
    CHECK(memcmp(b + at - strlen(q), "blk.0.attn_X.weight", strlen(q)) == 0);
    rc = load_gguf_mem(b, gguf_len, NULL, &err);
    EXPECT(rc, err, OX_E_MISSING, q);
    free(b);
}

/* A model larger than allowed: fails before allocating, saying how much it needs. */
static void test_max_resident(void) {
    ox_err err;
    ox_load_opts o = {0};
    o.max_resident = 4096;
    int rc = load_gguf_mem(gguf, gguf_len, &o, &err);
    EXPECT(rc, err, OX_E_NOMEM, "needs", "4096");
    char need[32];
    const char *p = strstr(err.msg, "needs ");
    CHECK(p && sscanf(p, "needs %31s", need) == 1 && atoll(need) > 4096);
    o.max_resident = (uint64_t)1 << 30;
    rc = load_gguf_mem(gguf, gguf_len, &o, &err);
    CHECK_MSG(rc == 0, "a generous limit: %s", err.msg);
}

/* ------------------------------------------------------------------ safetensors / HF checkpoint */

typedef struct {
    const char *name;
    uint8_t *buf;
    size_t len;
} hf_file;
static hf_file hf[5]; /* config, tokenizer, index, shard 1, shard 2 */

static int load_hf(const hf_file *files, int n, ox_err *err) {
    const char *names[8];
    uint8_t *bufs[8];
    size_t lens[8];
    for (int i = 0; i < n; i++) names[i] = files[i].name, bufs[i] = files[i].buf, lens[i] = files[i].len;
    return load_mem(names, bufs, lens, n, NULL, err);
}

static void test_hf_checkpoint(void) {
    ox_err err;
    int rc = load_hf(hf, 5, &err);
    CHECK_MSG(rc == 0, "pristine HF checkpoint: %s", err.msg);

    hf_file f[5];
    memcpy(f, hf, sizeof f);
    rc = load_hf(f, 4, &err); /* shard 2 not given */
    EXPECT(rc, err, OX_E_MISSING, "model.safetensors.index.json", "model-00002-of-00002.safetensors");

    /* inconsistent config: 2 query heads over 3 KV heads */
    char *c = edit((const char *)hf[0].buf, "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3");
    CHECK(c != NULL);
    f[0].buf = (uint8_t *)c, f[0].len = strlen(c);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_CONFIG, "config.json");
    free(c);
    c = edit((const char *)hf[0].buf, "\"layer_types\": [\"sliding_attention\", ", "\"layer_types\": [");
    f[0].buf = (uint8_t *)c, f[0].len = strlen(c);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_CONFIG, "config.json", "layer_types");
    free(c);
    /* shapes that disagree with the config: the checkpoint is 32 wide, the config says 64 */
    c = edit((const char *)hf[0].buf, "\"hidden_size\": 32", "\"hidden_size\": 64");
    f[0].buf = (uint8_t *)c, f[0].len = strlen(c);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_CONFIG, ".safetensors", "disagrees with the config");
    free(c);
    c = edit((const char *)hf[0].buf, "{", "{,");
    f[0].buf = (uint8_t *)c, f[0].len = strlen(c);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_FORMAT, "config.json:1:2");
    free(c);
    f[0] = hf[0];

    /* safetensors header: length beyond the file, bad JSON, unsupported dtype, overlap, offsets beyond */
    uint8_t *s = malloc(hf[3].len);
    uint64_t hl;
    memcpy(&hl, hf[3].buf, 8);
    f[3].buf = s;
    memcpy(s, hf[3].buf, hf[3].len);
    put_u64(s, hf[3].len);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_TRUNCATED, "model-00001-of-00002.safetensors", "beyond file end");
    put_u64(s, (uint64_t)1 << 62);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_FORMAT, "model-00001-of-00002.safetensors", "header length");
    memcpy(s, hf[3].buf, hf[3].len);
    s[8 + hl - 1] = ','; /* closing brace -> trailing comma */
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_FORMAT, "model-00001-of-00002.safetensors");
    memcpy(s, hf[3].buf, hf[3].len);
    char *d = memmem(s, 8 + hl, "\"F32\"", 5);
    CHECK(d != NULL);
    if (d) {
        memcpy(d, "\"F64\"", 5);
        rc = load_hf(f, 5, &err);
        EXPECT(rc, err, OX_E_UNSUPPORTED, "model-00001-of-00002.safetensors", "F64");
    }
    memcpy(s, hf[3].buf, hf[3].len);
    d = memmem(s, 8 + hl, "\"data_offsets\":[", 16);
    if (!d) d = memmem(s, 8 + hl, "\"data_offsets\": [", 17);
    CHECK(d != NULL);
    if (d) { /* first tensor's begin -> 9 digits: overlaps / disagrees with its size */
        char *num = strchr(d, '[') + 1;
        char *comma = strchr(num, ',');
        memset(num, ' ', (size_t)(comma - num));
        num[0] = '4';
        rc = load_hf(f, 5, &err);
        EXPECT(rc, err, OX_E_FORMAT, "model-00001-of-00002.safetensors");
        memcpy(s, hf[3].buf, hf[3].len);
        memset(num, ' ', (size_t)(comma - num));
        memcpy(num, "99999999999", (size_t)(comma - num) < 11 ? (size_t)(comma - num) : 11);
        rc = load_hf(f, 5, &err);
        CHECK(rc == OX_E_FORMAT || rc == OX_E_TRUNCATED);
        CHECK_STR_CONTAINS(err.msg, "model-00001-of-00002.safetensors");
    }
    /* a shape whose byte size overflows 64 bits, in a hand-made file */
    {
        static const char hdr[] =
            "{\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
            "\"data_offsets\":[0,16]}}";
        uint8_t file[256];
        uint64_t n = sizeof hdr - 1;
        memcpy(file, &n, 8), memcpy(file + 8, hdr, n), memset(file + 8 + n, 0, 16);
        hf_file one = {"big.safetensors", file, 8 + n + 16};
        rc = load_hf(&one, 1, &err);
        EXPECT(rc, err, OX_E_FORMAT, "big.safetensors", "model.norm.weight", "overflows");
    }
    free(s);
    f[3] = hf[3];

    /* a shard index that names a tensor the shard lacks */
    c = edit((const char *)hf[2].buf, "\": \"model-00001-of-00002.safetensors\"",
             "\": \"model-00002-of-00002.safetensors\"");
    f[2].buf = (uint8_t *)c, f[2].len = strlen(c);
    rc = load_hf(f, 5, &err);
    EXPECT(rc, err, OX_E_MISSING, "model.safetensors.index.json", "does not contain");
    free(c);
    f[2] = hf[2];
}

/* Weights holding NaN, Inf and subnormals (a corrupt or hostile checkpoint) quantized on load
 * to Q8_0 / Q4_0: the load and the forward pass complete (the output may be NaN), with no
 * undefined behaviour in the quantizers (float -> int conversions of NaN / out-of-range values
 * are UB; UBSan aborts on them in the sanitizer build). */
static void test_nonfinite_weights(void) {
    hf_file f[5];
    memcpy(f, hf, sizeof f);
    float bad[64];
    for (int i = 0; i < 32; i++) bad[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? INFINITY : i % 4 == 2 ? -INFINITY : 1e-42f;
    for (int i = 32; i < 64; i++) bad[i] = 1e-41f * (float)(i - 40); /* a block of subnormals only */
    /* the first row of a projection (quantized to Q4_0 with OX_QUANT_Q4) and of the embedding */
    static const char *const victims[] = {"model.language_model.layers.0.self_attn.q_proj.weight",
                                          "model.language_model.embed_tokens.weight"};
    uint8_t *s[2];
    int hit = 0;
    for (int k = 0; k < 2; k++) {
        s[k] = malloc(hf[3 + k].len);
        memcpy(s[k], hf[3 + k].buf, hf[3 + k].len);
        f[3 + k].buf = s[k];
        int h = ox_host_open_mem(hf[3 + k].name, s[k], hf[3 + k].len);
        ox_safetensors *st = ox_st_open(h, NULL);
        for (int v = 0; st && v < 2; v++) {
            const ox_st_tensor *t = ox_st_find(st, victims[v]);
            if (t) memcpy(s[k] + t->offset, bad, sizeof bad), hit++;
        }
        ox_st_free(st);
        ox_host_close(h);
    }
    CHECK(hit == 2);
    static const ox_quant quants[] = {OX_QUANT_STORED, OX_QUANT_Q8, OX_QUANT_Q4, OX_QUANT_BF16};
    for (int q = 0; q < 4; q++) {
        ox_err err = {0};
        int h[5];
        for (int i = 0; i < 5; i++) h[i] = ox_host_open_mem(f[i].name, f[i].buf, f[i].len);
        ox_load_opts o = {0};
        o.quant = quants[q];
        ox_model_files *mf = ox_files_open(h, 5, &err);
        ox_model *m = mf ? ox_model_load(mf, &o, &err) : NULL;
        CHECK_MSG(m != NULL, "quant %d: %s", q, err.msg);
        if (m) {
            ox_session *ss = ox_session_new(m, 8, &err);
            float logits[384];
            int32_t t[3] = {2, 0, 383}; /* row 0 of the table holds the bad values */
            ox_forward_io io = {t, 3, NULL, NULL, logits, 0, NULL};
            CHECK_MSG(ss && ox_forward(ss, &io, &err) == 0, "quant %d: %s", q, err.msg);
            ox_session_free(ss);
            ox_model_free(m);
        }
        for (int i = 0; i < 5; i++) ox_host_close(h[i]);
    }
    free(s[0]), free(s[1]);
    good_model_works();
}

/* tokenizer.json that is not BPE; and one that is not JSON */
static void test_tokenizer_json(void) {
    ox_err err = {0};
    /* first, the pristine one (synth.c's) loads */
    ox_tokenizer *ok = ox_tokenizer_from_json_text((const char *)hf[1].buf, hf[1].len, "tokenizer.json", &err);
    CHECK_MSG(ok != NULL, "the synthetic checkpoint's own tokenizer.json: %s", err.msg);
    ox_tokenizer_free(ok);
    memset(&err, 0, sizeof err);
    char *t = edit((const char *)hf[1].buf, "\"type\": \"BPE\"", "\"type\": \"Unigram\"");
    CHECK(t != NULL);
    if (!t) return;
    ox_tokenizer *tok = ox_tokenizer_from_json_text(t, strlen(t), "tokenizer.json", &err);
    CHECK(tok == NULL && err.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.json");
    CHECK_STR_CONTAINS(err.msg, "Unigram");
    /* through the model files */
    hf_file f[5];
    memcpy(f, hf, sizeof f);
    f[1].buf = (uint8_t *)t, f[1].len = strlen(t);
    int h[5];
    for (int i = 0; i < 5; i++) h[i] = ox_host_open_mem(f[i].name, f[i].buf, f[i].len);
    ox_model_files *mf = ox_files_open(h, 5, &err);
    CHECK_MSG(mf != NULL, "%s", err.msg);
    if (mf) {
        memset(&err, 0, sizeof err);
        tok = ox_tokenizer_load(mf, &err);
        CHECK(tok == NULL && err.code == OX_E_UNSUPPORTED);
        CHECK_STR_CONTAINS(err.msg, "tokenizer.json");
        ox_tokenizer_free(tok);
        ox_files_free(mf);
    }
    for (int i = 0; i < 5; i++) ox_host_close(h[i]);
    free(t);
    memset(&err, 0, sizeof err);
    tok = ox_tokenizer_from_json_text("{\"model\": ", 10, "tokenizer.json", &err);
    CHECK(tok == NULL && err.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "tokenizer.json:1:");
    good_model_works();
}

/* JSON limits */
static void test_json_limits(void) {
    ox_err err = {0};
    char deep[1100];
    memset(deep, '[', 600), memset(deep + 600, ']', 500), deep[1100 - 1] = 0;
    CHECK(ox_json_parse(deep, 1099, "deep.json", &err) == NULL && err.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "deep.json");
    CHECK_STR_CONTAINS(err.msg, "nesting deeper than 256");
    static const char *bad[] = {"{\"a\":1,}", "[01]", "\"\\ud800\"", "\"\xff\"",
                                "[1e999]",    "NaN",  "{\"a\" 1}",   "\"a\x01\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        ox_json *j = ox_json_parse(bad[i], strlen(bad[i]), "x.json", &err);
        CHECK_MSG(j == NULL && err.code == OX_E_FORMAT && strstr(err.msg, "x.json:1:"), "%s -> %s", bad[i], err.msg);
        ox_json_free(j);
    }
}

/* ------------------------------------------------------------------ limits */

static void test_limits(void) {
    ox_err err = {0};
    int h = ox_host_open_path(good_gguf, &err);
    ox_model *m = ox_model_load(ox_files_open(&h, 1, &err), NULL, &err);
    CHECK(m != NULL);
    if (!m) return;
    memset(&err, 0, sizeof err);
    CHECK(ox_session_new(m, 1 << 30, &err) == NULL && err.code == OX_E_RANGE);
    CHECK_STR_CONTAINS(err.msg, "64"); /* names the model's maximum */
    CHECK(ox_session_new(m, INT32_MAX, &err) == NULL && err.code == OX_E_RANGE);
    ox_session *s = ox_session_new(m, 4, &err);
    CHECK(s != NULL);
    if (s) {
        float logits[384];
        int32_t t[8] = {2, 10, 11, 12, 13, 14, 15, 16};
        ox_forward_io io = {t, 0, NULL, NULL, logits, 0, NULL};
        CHECK(ox_forward(s, &io, &err) == OX_E_RANGE);
        io.n = -5;
        CHECK(ox_forward(s, &io, &err) == OX_E_RANGE);
        io.n = 5; /* more than the session's context of 4 */
        int rc = ox_forward(s, &io, &err);
        CHECK(rc == OX_E_STATE || rc == OX_E_RANGE);
        CHECK(ox_session_pos(s) == 0);
        int32_t bad[2] = {2, 384};
        io.tokens = bad, io.n = 2;
        CHECK(ox_forward(s, &io, &err) == OX_E_RANGE);
        CHECK_STR_CONTAINS(err.msg, "384");
        bad[1] = -1;
        CHECK(ox_forward(s, &io, &err) == OX_E_RANGE);
        CHECK(ox_session_pos(s) == 0);
        io.tokens = t, io.n = 4;
        CHECK(ox_forward(s, &io, &err) == 0 && ox_session_pos(s) == 4);
        io.n = 1; /* full */
        rc = ox_forward(s, &io, &err);
        CHECK(rc == OX_E_STATE || rc == OX_E_RANGE);
        CHECK(ox_session_truncate(s, 5, &err) == OX_E_RANGE);
        CHECK(ox_session_truncate(s, -1, &err) == OX_E_RANGE);
        CHECK(ox_session_truncate(s, 2, &err) == 0 && ox_session_pos(s) == 2);
        ox_session_free(s);
    }
    ox_model_free(m);
    ox_host_close(h);
    CHECK(ox_pool_init(0, &err) == OX_E_RANGE);
    CHECK(ox_pool_init(-3, &err) == OX_E_RANGE);
    CHECK(ox_pool_init(1 << 20, &err) == OX_E_RANGE);
    CHECK(ox_pool_init(2, &err) == 0 && ox_pool_threads() == 2);
    CHECK(ox_pool_init(1, &err) == 0);
    ox_synth s2 = mini();
    s2.vocab = 10;
    CHECK(ox_synth_check(&s2, &err) == OX_E_CONFIG);
}

/* ------------------------------------------------------------------ failing reads mid-generation */

/* The model file's reads start failing after load (the file shrinks under the engine, as an
 * HTTP source that starts failing would): the forward pass that needs a table row reports
 * OX_E_IO naming the file, the session stays where it was, and once reads work again the
 * same session continues with exactly the logits of an undisturbed run. */
static void test_read_fails_mid_generation(void) {
    char path[160];
    snprintf(path, sizeof path, "%s/flaky.gguf", dir);
    CHECK(spit(path, gguf, gguf_len) == 0);
    ox_err err = {0};
    ox_load_opts o = {0};
    o.tables_on_host = 1; /* embedding rows come from the host too */
    int h = ox_host_open_path(path, &err);
    ox_model *m = ox_model_load(ox_files_open(&h, 1, &err), &o, &err);
    CHECK_MSG(m != NULL, "%s", err.msg);
    if (!m) return;
    ox_session *s = ox_session_new(m, 16, &err), *ref = ox_session_new(m, 16, &err);
    float la[384], lb[384];
    int32_t t1[3] = {2, 100, 101}, t2[2] = {200, 201};
    ox_forward_io io = {t1, 3, NULL, NULL, la, 0, NULL};
    CHECK(ox_forward(s, &io, &err) == 0);
    io.logits = lb;
    CHECK(ox_forward(ref, &io, &err) == 0);
    io.tokens = t2, io.n = 2;
    CHECK(ox_forward(ref, &io, &err) == 0); /* reference logits for t2 in lb */

    CHECK(truncate(path, 64) == 0); /* every row read now fails */
    io.logits = la;
    memset(&err, 0, sizeof err);
    int rc = ox_forward(s, &io, &err);
    CHECK_MSG(rc == OX_E_IO, "rc %d: %s", rc, err.msg);
    CHECK_STR_CONTAINS(err.msg, "flaky.gguf");
    CHECK(ox_session_pos(s) == 3);

    CHECK(spit(path, gguf, gguf_len) == 0); /* reads work again */
    rc = ox_forward(s, &io, &err);
    CHECK_MSG(rc == 0, "after recovery: %s", err.msg);
    CHECK(ox_session_pos(s) == 5);
    int same = 1;
    for (int i = 0; i < 384; i++) same &= la[i] == lb[i];
    CHECK_MSG(same, "logits after a failed read differ from an undisturbed session");
    ox_session_free(s);
    ox_session_free(ref);
    ox_model_free(m);
    ox_host_close(h);
    good_model_works();
}

/* ------------------------------------------------------------------ main */

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ox_errors_XXXXXX");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    ox_synth s = mini();
    ox_err err = {0};
    snprintf(good_gguf, sizeof good_gguf, "%s/good.gguf", dir);
    snprintf(hf_dir, sizeof hf_dir, "%s/hf", dir);
    mkdir(hf_dir, 0777);
    if (ox_synth_write_gguf(&s, good_gguf, &err) || ox_synth_write_hf(&s, hf_dir, OX_F32, 2, &err)) {
        fprintf(stderr, "synth: %s\n", err.msg);
        return 1;
    }
    gguf = slurp(good_gguf, &gguf_len);
    static const char *names[5] = {"config.json", "tokenizer.json", "model.safetensors.index.json",
                                   "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    for (int i = 0; i < 5; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", hf_dir, names[i]);
        hf[i].name = names[i];
        hf[i].buf = slurp(p, &hf[i].len);
        if (!hf[i].buf) return fprintf(stderr, "missing %s\n", p), 1;
        remove(p);
    }
    RUN(good_model_works);
    RUN(test_gguf_header);
    RUN(test_gguf_tensors);
    RUN(test_max_resident);
    RUN(test_hf_checkpoint);
    RUN(test_nonfinite_weights);
    RUN(test_tokenizer_json);
    RUN(test_json_limits);
    RUN(test_limits);
    RUN(test_read_fails_mid_generation);
    for (int i = 0; i < 5; i++) free(hf[i].buf);
    free(gguf);
    char p[256];
    snprintf(p, sizeof p, "%s/flaky.gguf", dir), remove(p);
    remove(good_gguf);
    rmdir(hf_dir);
    rmdir(dir);
    return check_summary("test_errors");
}
