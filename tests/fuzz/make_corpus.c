/* make_corpus.c — writes the fuzzers' seed corpus with the project's own writers (nothing
 * binary is committed): a miniature synthetic model as GGUF and as an HF checkpoint (sharded
 * and not), the same as a GGUF split in two and as several files in one input (fuzz_bundle.h),
 * a GGUF holding every metadata type and tensor type, JSON, config and tokenizer inputs. Usage: make_corpus OUTDIR  (creates OUTDIR/<target>/ for every fuzz target). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "writers/mlx_write.h"
#include "writers/synth.h"
#include "writers/gguf_write.h"
#include "writers/safetensors_write.h"
#include "writers/lora_write.h"
#include "model/lora.h"
#include "fuzz_bundle.h"
#include "fuzz_models.h"

static const char *out;

static void die(const char *what, const ox_err *e) {
    fprintf(stderr, "make_corpus: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static void dir(const char *sub) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out, sub);
    mkdir(p, 0777);
}

static void put(const char *target, const char *name, const void *data, size_t n) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/%s", out, target, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) die(p, NULL);
}
static void put_s(const char *target, const char *name, const char *s) { put(target, name, s, strlen(s)); }

/* The whole file at src, NUL-terminated. */
static char *slurp(const char *src, size_t *len) {
    FILE *f = fopen(src, "rb");
    if (!f) die(src, NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) die(src, NULL);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* Copy the file at src into the corpus, its first `from` (if given and present) replaced by `to`. */
static void copy_edit(const char *src, const char *target, const char *name, const char *from, const char *to) {
    size_t n;
    char *b = slurp(src, &n);
    char *at = from ? strstr(b, from) : NULL;
    if (!at) {
        put(target, name, b, n);
    } else {
        size_t pre = (size_t)(at - b), fl = strlen(from), tl = strlen(to);
        char *o = malloc(n - fl + tl);
        memcpy(o, b, pre), memcpy(o + pre, to, tl), memcpy(o + pre + tl, at + fl, n - pre - fl);
        put(target, name, o, n - fl + tl);
        free(o);
    }
    free(b);
}
static void copy(const char *src, const char *target, const char *name) { copy_edit(src, target, name, NULL, NULL); }

static ox_synth mini(const char *preset) { return fuzz_mini_synth(preset); }

static void models(void) {
    ox_err e = {0};
    char p[4096], d[4096];
    static const char *presets[] = {"tiny", "moe", "keqv"};
    for (int i = 0; i < 3; i++) {
        ox_synth s = mini(presets[i]);
        snprintf(p, sizeof p, "%s/tmp-%s.gguf", out, presets[i]);
        if (ox_synth_write_gguf(&s, p, &e)) die(p, &e);
        char name[64];
        snprintf(name, sizeof name, "mini-%s.gguf", presets[i]);
        copy(p, "fuzz_gguf", name);
        copy(p, "fuzz_model", name);
        copy(p, "fuzz_estimate", name);
        remove(p);
    }
    /* grammars: the shapes src/decode/json_schema.c writes, and the dialect's corners */
    put_s("fuzz_grammar", "json.gbnf",
          "root ::= ws value ws\nvalue ::= (\"{\" ws (\"\\\"a\\\"\" ws \":\" ws num) ws \"}\")\n"
          "num ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15})\nws ::= | \" \" | \"\\n\" [ \\t]{0,8}\n");
    put_s("fuzz_grammar", "tool.gbnf",
          "root ::= (\"f\" args) \"<tool_call|>\"\nargs ::= \"{\" (\"x\" \":\" str)? \"}\"\n"
          "str ::= \"<|\\\"|>\" ([^<] | \"<\" [^|])* \"<|\\\"|>\"\n");
    /* schemas: the first byte picks the mode (fuzz_json_schema.c) */
    put_s("fuzz_json_schema", "object.json",
          "\x00{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"maxLength\":8},"
          "\"b\":{\"anyOf\":[{\"type\":\"integer\"},{\"enum\":[1.5,null,\"x\"]}]}},\"required\":[\"a\"]}");
    put_s("fuzz_json_schema", "refs.json",
          "\x01{\"$ref\":\"#/$defs/n\",\"$defs\":{\"n\":{\"properties\":{\"k\":{\"type\":\"array\","
          "\"items\":{\"$ref\":\"#/$defs/n\"},\"maxItems\":3}},\"additionalProperties\":{\"const\":{\"z\":[true]}}}}}");
    put_s("fuzz_json_schema", "tools.json",
          "\x03[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"properties\":"
          "{\"d\":{\"type\":\"string\",\"format\":\"date-time\"},\"u\":{\"allOf\":[{\"format\":\"uuid\"}]}}}}}]");
    put_s("fuzz_grammar", "classes.gbnf",
          "root ::= [a-c\\u00e0-\\u00ff]+ [^a-z] . \"\\x41\" (\"ab\" | \"b\"){0,3} # c\n");
    ox_synth s = mini("tiny");
    s.type = s.embd_type = OX_F32;
    snprintf(p, sizeof p, "%s/tmp-f32.gguf", out);
    if (ox_synth_write_gguf(&s, p, &e)) die(p, &e);
    copy(p, "fuzz_model", "mini-f32.gguf");
    remove(p);

    snprintf(d, sizeof d, "%s/tmp-hf", out);
    mkdir(d, 0777);
    s = mini("tiny");
    if (ox_synth_write_hf(&s, d, OX_BF16, 2, &e)) die(d, &e);
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", d), copy(p, "fuzz_safetensors", "shard1.safetensors");
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", d), copy(p, "fuzz_safetensors", "shard2.safetensors");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", d), copy(p, "fuzz_st_index", "index.json");
    snprintf(p, sizeof p, "%s/config.json", d), copy(p, "fuzz_config", "tiny.json"), copy(p, "fuzz_json", "config.json");
    snprintf(p, sizeof p, "%s/tokenizer.json", d), copy(p, "fuzz_tokenizer_json", "tokenizer.json");
    /* the same vocabulary with the other pre-tokenizers tokenizer.c accepts */
    static const char split_nl[] =
        "{\"type\": \"Split\", \"pattern\": {\"String\": \"\\n\"}, \"behavior\": \"Isolated\", \"invert\": false}";
    copy_edit(p, "fuzz_tokenizer_json", "tokenizer-nopre.json", split_nl, "null");
    copy_edit(
        p, "fuzz_tokenizer_json", "tokenizer-metaspace.json",
        split_nl, "{\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\", \"prepend_scheme\": \"first\", \"split\": false}");
    copy(p, "fuzz_json", "tokenizer.json");
    static const char *names[] = {"config.json", "tokenizer.json", "model-00001-of-00002.safetensors",
                                  "model-00002-of-00002.safetensors", "model.safetensors.index.json"};
    for (int i = 0; i < 5; i++) snprintf(p, sizeof p, "%s/%s", d, names[i]), remove(p);
    static const char *cfgs[] = {"moe", "keqv"};
    for (int i = 0; i < 2; i++) {
        s = mini(cfgs[i]);
        if (ox_synth_write_hf(&s, d, OX_BF16, 1, &e)) die(d, &e);
        char name[64];
        snprintf(name, sizeof name, "%s.json", cfgs[i]);
        snprintf(p, sizeof p, "%s/config.json", d), copy(p, "fuzz_config", name);
        snprintf(p, sizeof p, "%s/model.safetensors", d);
        snprintf(name, sizeof name, "%s.safetensors", cfgs[i]), copy(p, "fuzz_safetensors", name);
        for (int k = 0; k < 2; k++) snprintf(p, sizeof p, "%s/%s", d, names[k]), remove(p);
        snprintf(p, sizeof p, "%s/model.safetensors", d), remove(p);
    }
    /* fuzz_hf: u32 config length, config.json, model.safetensors (one shard, bf16 and f32) */
    static const ox_type hf_types[] = {OX_BF16, OX_F32};
    for (int i = 0; i < 2; i++) {
        s = mini("tiny");
        if (ox_synth_write_hf(&s, d, hf_types[i], 1, &e)) die(d, &e);
        size_t cn, sn;
        snprintf(p, sizeof p, "%s/config.json", d);
        char *cj = slurp(p, &cn);
        snprintf(p, sizeof p, "%s/model.safetensors", d);
        char *st = slurp(p, &sn);
        char *b = malloc(4 + cn + sn);
        uint32_t n32 = (uint32_t)cn;
        memcpy(b, &n32, 4), memcpy(b + 4, cj, cn), memcpy(b + 4 + cn, st, sn);
        put("fuzz_hf", i ? "mini-f32.bin" : "mini-bf16.bin", b, 4 + cn + sn);
        free(cj), free(st), free(b);
        for (int k = 0; k < 2; k++) snprintf(p, sizeof p, "%s/%s", d, names[k]), remove(p);
        snprintf(p, sizeof p, "%s/model.safetensors", d), remove(p);
    }
    /* an MLX 4-bit checkpoint of the mini model (fuzz_hf), its quantization block (fuzz_mlx) */
    s = mini("tiny");
    if (ox_synth_write_hf(&s, d, OX_BF16, 1, &e)) die(d, &e);
    char q[4096], src[3][4200];
    const char *sp[3];
    snprintf(q, sizeof q, "%s/tmp-mlx", out);
    mkdir(q, 0777);
    for (int k = 0; k < 3; k++)
        snprintf(src[k], sizeof src[k], "%s/%s", d, k < 2 ? names[k] : "model.safetensors"), sp[k] = src[k];
    ox_mlx_write_opts mo = {{4, 32}, "mlp.down_proj", {8, 32}, OX_ST_BF16};
    if (ox_mlx_write(sp, 3, q, NULL, &mo, &e)) die(q, &e);
    for (int k = 0; k < 3; k++) remove(src[k]);
    size_t cn, sn;
    snprintf(p, sizeof p, "%s/config.json", q);
    char *cj = slurp(p, &cn);
    put("fuzz_mlx", "mlx-config.json", cj, cn);
    remove(p);
    snprintf(p, sizeof p, "%s/model.safetensors", q);
    char *st = slurp(p, &sn);
    char *b = malloc(4 + cn + sn);
    uint32_t n32 = (uint32_t)cn;
    memcpy(b, &n32, 4), memcpy(b + 4, cj, cn), memcpy(b + 4 + cn, st, sn);
    put("fuzz_hf", "mini-mlx4.bin", b, 4 + cn + sn);
    free(cj), free(st), free(b);
    remove(p);
    snprintf(p, sizeof p, "%s/tokenizer.json", q), remove(p);
    rmdir(q);
    rmdir(d);
    put_s("fuzz_mlx", "overrides.json",
          "{\"quantization\": {\"group_size\": 64, \"bits\": 4, \"mode\": \"affine\", \"a.b\": {\"group_size\": 32,"
          " \"bits\": 8}, \"c\": false, \"d\": true}}");
    put_s("fuzz_mlx", "hf.json", "{\"quantization_config\": {\"group_size\": 32, \"bits\": 8}}");
}

/* Every metadata value type (nested arrays too) and one small tensor of every type. */
static void gguf_all_types(void) {
    ox_err e = {0};
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_value v;
    static const ox_gguf_type scalars[] = {OX_GGUF_U8,  OX_GGUF_I8,  OX_GGUF_U16, OX_GGUF_I16,
                                           OX_GGUF_U32, OX_GGUF_I32, OX_GGUF_F32, OX_GGUF_BOOL,
                                           OX_GGUF_U64, OX_GGUF_I64, OX_GGUF_F64};
    char key[64];
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        memset(&v, 0, sizeof v);
        v.type = scalars[i];
        v.v.u64 = 1;
        snprintf(key, sizeof key, "t.%s", ox_gguf_type_name(scalars[i]));
        ox_gguf_w_value(w, key, &v);
    }
    ox_gguf_w_str(w, "general.architecture", "gemma4");
    ox_gguf_w_str(w, "t.utf8", "h\xc3\xa9llo \xe2\x96\x81");
    int32_t ints[4] = {1, -2, 3, -4};
    ox_gguf_w_arr(w, "t.arr_i32", OX_GGUF_I32, ints, 4);
    uint8_t bools[3] = {0, 1, 1};
    ox_gguf_w_arr(w, "t.arr_bool", OX_GGUF_BOOL, bools, 3);
    const char *strs[] = {"a", "", "<|turn>"};
    ox_gguf_w_arr_str(w, "t.arr_str", strs, 3);
    ox_gguf_value inner[2], outer;
    memset(inner, 0, sizeof inner), memset(&outer, 0, sizeof outer);
    for (int i = 0; i < 2; i++)
        inner[i].type = OX_GGUF_ARRAY, inner[i].v.arr.type = OX_GGUF_I32, inner[i].v.arr.n = 2,
        inner[i].v.arr.data = ints + 2 * i;
    outer.type = OX_GGUF_ARRAY, outer.v.arr.type = OX_GGUF_ARRAY, outer.v.arr.n = 2, outer.v.arr.data = inner;
    ox_gguf_w_value(w, "t.arr_arr", &outer);
    static const ox_type types[] = {OX_F32,  OX_F16,  OX_BF16, OX_Q4_0, OX_Q4_1, OX_Q5_0, OX_Q5_1,
                                    OX_Q8_0, OX_Q2_K, OX_Q3_K, OX_Q4_K, OX_Q5_K, OX_Q6_K};
    static uint8_t zeros[4096];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        uint64_t ne[2] = {ox_type_block_elems(types[i]) == 1 ? 4 : ox_type_block_elems(types[i]), 2};
        snprintf(key, sizeof key, "t.%s", ox_type_name(types[i]));
        if (ox_gguf_w_tensor(w, key, types[i], 2, ne, zeros, &e)) die(key, &e);
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/fuzz_gguf/all-types.gguf", out);
    if (ox_gguf_w_write(w, p, NULL, NULL, &e)) die(p, &e);
    ox_gguf_writer_free(w);
}

static void safetensors_small(void) {
    ox_err e = {0};
    ox_st_writer *w = ox_st_writer_new();
    static uint8_t zeros[256];
    ox_st_w_meta(w, "format", "pt", &e);
    ox_st_w_meta(w, "oxinfer_quant", "q8", &e);
    uint64_t sh[2] = {2, 32}, sc[2] = {2, 1}, one[1] = {3};
    ox_st_w_tensor(w, "model.layers.0.mlp.up_proj.weight", OX_ST_I8, 2, sh, zeros, &e);
    ox_st_w_tensor(w, "model.layers.0.mlp.up_proj.weight.scales", OX_ST_F16, 2, sc, zeros, &e);
    ox_st_w_tensor(w, "scalar", OX_ST_F32, 0, NULL, zeros, &e);
    ox_st_w_tensor(w, "vec", OX_ST_U32, 1, one, zeros, &e);
    char p[4096];
    snprintf(p, sizeof p, "%s/fuzz_safetensors/small-q8.safetensors", out);
    if (ox_st_w_write(w, p, NULL, NULL, &e)) die(p, &e);
    ox_st_writer_free(w);
}

static void texts(void) {
    static const char *json[] = {"{}",
                                 "[]",
                                 "null",
                                 "true",
                                 "-0.5e-3",
                                 "\"\\u00e9\\ud83d\\ude00\\n\\\"\"",
                                 "[1, -2, 3.25, 1e308, 9223372036854775807]",
                                 "{\"a\": {\"b\": [true, false, null, {\"c\": \"\xe2\x96\x81x\"}]}, \"a\": 2}",
                                 "\xef\xbb\xbf{\"bom\": 1}",
                                 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"};
    for (size_t i = 0; i < sizeof json / sizeof json[0]; i++) {
        char n[32];
        snprintf(n, sizeof n, "j%zu.json", i);
        put_s("fuzz_json", n, json[i]);
    }
    put_s("fuzz_config", "wrapped.json",
          "{\"architectures\": [\"Gemma4ForConditionalGeneration\"], \"eos_token_id\": [1, 106],"
          " \"text_config\": {\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
          " \"num_key_value_heads\": 1, \"head_dim\": 32, \"global_head_dim\": 64, \"intermediate_size\": 128,"
          " \"vocab_size\": 400, \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\", \"full_attention\"],"
          " \"hidden_size_per_layer_input\": 16, \"vocab_size_per_layer_input\": 400, \"num_kv_shared_layers\": 0,"
          " \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-6, \"final_logit_softcapping\": 30.0,"
          " \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"proportional\", \"rope_theta\": 1000000.0,"
          " \"partial_rotary_factor\": 0.25}, \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": "
          "10000.0}}}}");
    put_s("fuzz_st_index", "small.json",
          "{\"metadata\": {\"total_size\": 8}, \"weight_map\": {\"a\": \"x/model-1.safetensors\", \"b\": "
          "\"model-2.safetensors\","
          " \"c\": \"model-1.safetensors\"}}");
    static const char *tok[] = {"Hello world",
                                "  leading  spaces\n\n\ttabs",
                                "<bos><|turn>user\nhi<turn|>\n<|turn>model\n",
                                "h\xc3\xa9llo \xe2\x96\x81 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87",
                                "\xff\xfe\x80\xc0\xaf invalid utf8 \xed\xa0\x80",
                                "<unused0><unused3>text<unused1>",
                                "\x00\x01\x02 nul and controls",
                                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof tok / sizeof tok[0]; i++) {
        char n[32];
        snprintf(n, sizeof n, "t%zu.txt", i);
        put("fuzz_tokenizer", n, tok[i], i == 6 ? 20 : strlen(tok[i]));
    }
}

/* fuzz_lora: adapters for each fuzz_lora_model(shape), GGUF (tag byte shape << 1) and PEFT
 * (tag shape << 1 | 1, u32 config length, config, safetensors). */
static void loras(void) {
    for (int shape = 0; shape < FUZZ_LORA_SHAPES; shape++) {
        ox_err e = {0};
        ox_model *m = fuzz_lora_model(shape);
        if (!m) die("fuzz_lora_model", NULL);
        ox_lora_spec sp = {.rank = 2, .alpha = 4, .std = 0.1f, .seed = 1, .targets = OX_LORA_ALL_TARGETS, .type = OX_F16};
        char p[4096], d[4096], name[64];
        snprintf(p, sizeof p, "%s/tmp-lora.gguf", out);
        if (ox_lora_write_gguf(ox_model_config(m), &sp, p, &e)) die(p, &e);
        size_t n;
        char *b = slurp(p, &n), *o = malloc(n + 1);
        o[0] = (char)(shape << 1), memcpy(o + 1, b, n);
        snprintf(name, sizeof name, "shape%d.gguf", shape);
        put("fuzz_lora", name, o, n + 1);
        free(b), free(o), remove(p);
        snprintf(d, sizeof d, "%s/tmp-peft", out);
        mkdir(d, 0777);
        sp.type = OX_BF16, sp.targets = 0x7;
        if (ox_lora_write_peft(ox_model_config(m), &sp, d, &e)) die(d, &e);
        size_t nc, ns;
        snprintf(p, sizeof p, "%s/adapter_config.json", d);
        char *cfg = slurp(p, &nc);
        remove(p);
        snprintf(p, sizeof p, "%s/adapter_model.safetensors", d);
        char *st = slurp(p, &ns);
        remove(p), rmdir(d);
        uint32_t len = (uint32_t)nc;
        o = malloc(5 + nc + ns);
        o[0] = (char)(shape << 1 | 1), memcpy(o + 1, &len, 4), memcpy(o + 5, cfg, nc), memcpy(o + 5 + nc, st, ns);
        snprintf(name, sizeof name, "shape%d-peft.bin", shape);
        put("fuzz_lora", name, o, 5 + nc + ns);
        free(o), free(cfg), free(st);
    }
}

/* A bundle (fuzz_bundle.h) being written: the options byte, then name, length, bytes per file. */
typedef struct {
    uint8_t *b;
    size_t n;
} bundle;

static bundle bundle_new(uint8_t options) {
    bundle u = {malloc(1), 1};
    if (!u.b) die("bundle", NULL);
    u.b[0] = options;
    return u;
}

static void bundle_add(bundle *u, int name, const void *data, size_t len) {
    if (!(u->b = realloc(u->b, u->n + 5 + len))) die("bundle", NULL);
    uint32_t l = (uint32_t)len;
    u->b[u->n] = (uint8_t)name, memcpy(u->b + u->n + 1, &l, 4), memcpy(u->b + u->n + 5, data, len);
    u->n += 5 + len;
}

/* The GGUF at src as two splits (general.split.*): its metadata and the first half of its
 * tensors into dst[0], the other half into dst[1]. */
static void gguf_split(const char *src, const char *const dst[2]) {
    ox_err e = {0};
    size_t n;
    char *bytes = slurp(src, &n);
    int h = ox_host_open_path(src, &e);
    ox_gguf *g = h < 0 ? NULL : ox_gguf_open(h, &e);
    if (!g) die(src, &e);
    ox_gguf_writer *w[2] = {ox_gguf_writer_new(), ox_gguf_writer_new()};
    int rc = 0;
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kv[i].key, "general.alignment")) rc |= ox_gguf_w_value(w[0], g->kv[i].key, &g->kv[i].val);
    for (int k = 0; k < 2; k++)
        rc |= ox_gguf_w_u32(w[k], "general.split.count", 2), rc |= ox_gguf_w_u32(w[k], "general.split.no", (uint32_t)k);
    for (uint64_t i = 0; i < g->n_tensors && !rc; i++) {
        const ox_gguf_tensor *t = &g->tensors[i];
        rc = ox_gguf_w_tensor(w[i >= g->n_tensors / 2], t->name, t->type, t->n_dims, t->ne, bytes + t->offset, &e);
    }
    for (int k = 0; k < 2 && !rc; k++) rc = ox_gguf_w_write(w[k], dst[k], NULL, NULL, &e);
    if (rc) die(dst[0], &e);
    for (int k = 0; k < 2; k++) ox_gguf_writer_free(w[k]);
    ox_gguf_free(g);
    ox_host_close(h);
    free(bytes);
}

/* fuzz_multifile: the mini model as a GGUF split in two (in order, and the tensor split first
 * with other load options), and as a 2-shard HF checkpoint directory with its index */
static void multifile(void) {
    ox_err e = {0};
    char src[4096], sp[2][4096], d[4096];
    ox_synth s = mini("tiny");
    snprintf(src, sizeof src, "%s/tmp-split.gguf", out);
    if (ox_synth_write_gguf(&s, src, &e)) die(src, &e);
    for (int k = 0; k < 2; k++) snprintf(sp[k], sizeof sp[k], "%s/tmp-split-%d.gguf", out, k + 1);
    gguf_split(src, (const char *const[2]){sp[0], sp[1]});
    size_t n[2];
    char *b[2] = {slurp(sp[0], &n[0]), slurp(sp[1], &n[1])};
    for (int order = 0; order < 2; order++) {
        bundle u = bundle_new(order ? 5 : 0); /* stored; or bf16 with the tables on the host */
        for (int k = 0; k < 2; k++) bundle_add(&u, FUZZ_SPLIT1 + (k ^ order), b[k ^ order], n[k ^ order]);
        put("fuzz_multifile", order ? "split-reversed.bin" : "split.bin", u.b, u.n);
        free(u.b);
    }
    for (int k = 0; k < 2; k++) free(b[k]), remove(sp[k]);
    remove(src);

    snprintf(d, sizeof d, "%s/tmp-multi", out);
    mkdir(d, 0777);
    if (ox_synth_write_hf(&s, d, OX_BF16, 2, &e)) die(d, &e);
    static const int names[] = {FUZZ_CONFIG, FUZZ_TOKENIZER, FUZZ_SHARD1, FUZZ_SHARD2, FUZZ_ST_INDEX};
    bundle u = bundle_new(0);
    for (int k = 0; k < 5; k++) {
        char p[4200];
        size_t len;
        snprintf(p, sizeof p, "%s/%s", d, fuzz_bundle_names[names[k]]);
        char *f = slurp(p, &len);
        bundle_add(&u, names[k], f, len);
        free(f), remove(p);
    }
    put("fuzz_multifile", "hf-sharded.bin", u.b, u.n);
    free(u.b);
    rmdir(d);
}

/* fuzz_generate: parameter blocks (48 bytes, see fuzz_generate.c) with prompts, and one with
 * an MTP drafter for the mini model */
static void generations(void) {
    uint8_t b[4096];
    for (int k = 0; k < 4; k++) {
        memset(b, 0, 48);
        b[0] = (uint8_t)(k == 0   ? 1
                         : k == 1 ? 0x0d
                         : k == 2 ? 0x65
                                  : 0x2f); /* eos; lookup drafts; penalties; logprobs */
        b[1] = 5, b[2] = (uint8_t)(8 + k), b[3] = 3;
        float t = k == 0 ? 0.0f : 0.8f, tp = 0.9f, mp = 0.05f, rp = 1.1f;
        memcpy(b + 4, &t, 4), memcpy(b + 9, &tp, 4), memcpy(b + 13, &mp, 4), memcpy(b + 17, &rp, 4);
        b[8] = 40, b[21] = (uint8_t)k, b[22] = (uint8_t)(k + 1), b[36] = (uint8_t)k, b[47] = 3;
        for (int i = 0; i < 16; i++) b[48 + i] = (uint8_t)(i % 5 + 20); /* repeats: lookup finds drafts */
        char name[32];
        snprintf(name, sizeof name, "params%d.bin", k);
        put("fuzz_generate", name, b, 64);
    }
    ox_synth s = mini("tiny");
    s.ple = 0, s.kv_shared = 0, s.layers = 2, s.assistant_of = s.hidden, s.hidden = 64,
    s.ffn = 128; /* wider than its target */
    ox_err e = {0};
    char p[4096];
    snprintf(p, sizeof p, "%s/tmp-drafter.gguf", out);
    if (ox_synth_write_gguf(&s, p, &e)) die(p, &e);
    size_t n;
    char *d = slurp(p, &n);
    uint8_t *o = malloc(48 + n);
    memcpy(o, b, 48);
    o[0] = 0x81;
    memcpy(o + 48, d, n);
    put("fuzz_generate", "mtp-drafter.bin", o, 48 + n);
    free(o), free(d), remove(p);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus OUTDIR\n");
        return 2;
    }
    out = argv[1];
    mkdir(out, 0777);
    static const char *targets[] = {"fuzz_gguf",           "fuzz_model",    "fuzz_hf",       "fuzz_safetensors",
                                    "fuzz_st_index",       "fuzz_json",     "fuzz_config",   "fuzz_tokenizer",
                                    "fuzz_tokenizer_json", "fuzz_grammar",  "fuzz_mlx",      "fuzz_lora",
                                    "fuzz_json_schema",    "fuzz_estimate", "fuzz_generate", "fuzz_multifile"};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) dir(targets[i]);
    models();
    gguf_all_types();
    safetensors_small();
    texts();
    loras();
    generations();
    multifile();
    return 0;
}
