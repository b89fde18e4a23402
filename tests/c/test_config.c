/* test_config.c — the released Gemma 4 configs (docs/gemma4.md §1.3) as config.json text -> per-layer tables
 * checked against docs/gemma4.md; GGUF gemma4.* metadata -> the same tables; validation errors;
 * config -> JSON -> config round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/config.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"
#include "writers/gguf_write.h"

/* layer_types JSON array: full where l % period == period - 1 */
static void layer_types(char *out, size_t cap, int L, int period) {
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int l = 0; l < L; l++)
        n += (size_t)snprintf(out + n, cap - n, "%s\"%s\"", l ? ", " : "",
                              l % period == period - 1 ? "full_attention" : "sliding_attention");
    snprintf(out + n, cap - n, "]");
}

static const char *ROPE = "\"rope_parameters\": {\"full_attention\": {\"partial_rotary_factor\": 0.25, "
                          "\"rope_theta\": 1000000.0, \"rope_type\": \"proportional\"}, \"sliding_attention\": "
                          "{\"rope_theta\": 10000.0, \"rope_type\": \"default\"}}";

/* The text_config blocks of the released checkpoints (values: docs/gemma4.md §1.1, §1.3). */
static char *config_text(const char *which) {
    static char buf[16384];
    char lt[8192];
    if (strcmp(which, "E2B") == 0) {
        layer_types(lt, sizeof lt, 35, 5);
        snprintf(
            buf, sizeof buf,
            "{\"architectures\": [\"Gemma4ForConditionalGeneration\"], \"eos_token_id\": [1, 106], "
            "\"image_token_id\": 258880, \"model_type\": \"gemma4\", \"text_config\": {"
            "\"attention_bias\": false, \"attention_k_eq_v\": false, \"bos_token_id\": 2, \"enable_moe_block\": false, "
            "\"eos_token_id\": 1, \"expert_intermediate_size\": null, \"final_logit_softcapping\": 30.0, "
            "\"global_head_dim\": 512, \"head_dim\": 256, \"hidden_activation\": \"gelu_pytorch_tanh\", "
            "\"hidden_size\": 1536, \"hidden_size_per_layer_input\": 256, \"intermediate_size\": 6144, "
            "\"layer_types\": %s, \"max_position_embeddings\": 131072, \"model_type\": \"gemma4_text\", "
            "\"moe_intermediate_size\": null, \"num_attention_heads\": 8, \"num_experts\": null, "
            "\"num_global_key_value_heads\": null, \"num_hidden_layers\": 35, \"num_key_value_heads\": 1, "
            "\"num_kv_shared_layers\": 20, \"pad_token_id\": 0, \"rms_norm_eps\": 1e-06, %s, "
            "\"sliding_window\": 512, \"tie_word_embeddings\": true, \"top_k_experts\": null, "
            "\"use_bidirectional_attention\": null, \"use_cache\": true, \"use_double_wide_mlp\": true, "
            "\"vocab_size\": 262144, \"vocab_size_per_layer_input\": 262144}}",
            lt, ROPE);
    } else if (strcmp(which, "E4B") == 0) {
        layer_types(lt, sizeof lt, 42, 6);
        snprintf(
            buf, sizeof buf,
            "{\"eos_token_id\": [1, 106], \"text_config\": {\"attention_k_eq_v\": false, \"final_logit_softcapping\": "
            "30.0, "
            "\"global_head_dim\": 512, \"head_dim\": 256, \"hidden_size\": 2560, \"hidden_size_per_layer_input\": 256, "
            "\"intermediate_size\": 10240, \"layer_types\": %s, \"max_position_embeddings\": 131072, "
            "\"num_attention_heads\": 8, \"num_global_key_value_heads\": null, \"num_hidden_layers\": 42, "
            "\"num_key_value_heads\": 2, \"num_kv_shared_layers\": 18, \"rms_norm_eps\": 1e-06, %s, "
            "\"sliding_window\": 512, \"use_double_wide_mlp\": false, \"vocab_size\": 262144, "
            "\"vocab_size_per_layer_input\": 262144}}",
            lt, ROPE);
    } else if (strcmp(which, "26B-A4B") == 0) {
        layer_types(lt, sizeof lt, 30, 6);
        snprintf(
            buf, sizeof buf,
            "{\"eos_token_id\": [1, 106], \"text_config\": {\"attention_k_eq_v\": true, \"enable_moe_block\": true, "
            "\"final_logit_softcapping\": 30.0, \"global_head_dim\": 512, \"head_dim\": 256, \"hidden_size\": 2816, "
            "\"hidden_size_per_layer_input\": 0, \"intermediate_size\": 2112, \"layer_types\": %s, "
            "\"max_position_embeddings\": 262144, \"moe_intermediate_size\": 704, \"num_attention_heads\": 16, "
            "\"num_experts\": 128, \"num_global_key_value_heads\": 2, \"num_hidden_layers\": 30, "
            "\"num_key_value_heads\": 8, \"num_kv_shared_layers\": 0, \"rms_norm_eps\": 1e-06, %s, "
            "\"sliding_window\": 1024, \"top_k_experts\": 8, \"use_bidirectional_attention\": \"vision\", "
            "\"vocab_size\": 262144}}",
            lt, ROPE);
    } else { /* 31B */
        layer_types(lt, sizeof lt, 60, 6);
        snprintf(
            buf, sizeof buf,
            "{\"eos_token_id\": [1, 106], \"text_config\": {\"attention_k_eq_v\": true, \"final_logit_softcapping\": "
            "30.0, "
            "\"global_head_dim\": 512, \"head_dim\": 256, \"hidden_size\": 5376, \"hidden_size_per_layer_input\": 0, "
            "\"intermediate_size\": 21504, \"layer_types\": %s, \"max_position_embeddings\": 262144, "
            "\"num_attention_heads\": 32, \"num_global_key_value_heads\": 4, \"num_hidden_layers\": 60, "
            "\"num_key_value_heads\": 16, \"num_kv_shared_layers\": 0, \"rms_norm_eps\": 1e-06, %s, "
            "\"sliding_window\": 1024, \"use_bidirectional_attention\": \"vision\", \"vocab_size\": 262144}}",
            lt, ROPE);
    }
    return buf;
}

static int load(const char *text, ox_config *c, ox_err *e) {
    ox_json *j = ox_json_parse(text, strlen(text), "config.json", e);
    if (!j) return e->code;
    int rc = ox_config_from_json(j, c, "config.json", e);
    ox_json_free(j);
    return rc;
}

static ox_config cfg; /* big (OX_MAX_LAYERS layers): not on the stack */

static void test_e2b(void) {
    ox_err e = {0};
    CHECK_MSG(load(config_text("E2B"), &cfg, &e) == 0, "%s", e.msg);
    const ox_config *c = &cfg;
    CHECK(c->vocab == 262144 && c->hidden == 1536 && c->n_layers == 35 && c->n_heads == 8 && c->n_kv_heads == 1);
    CHECK(c->head_dim == 256 && c->global_head_dim == 512 && c->intermediate == 6144 && c->ple_dim == 256);
    CHECK(c->ple_vocab == 262144 && c->n_kv_shared == 20 && c->double_wide && !c->k_eq_v && !c->moe);
    CHECK(c->sliding_window == 512 && c->ctx_max == 131072 && !c->bidirectional);
    CHECK_NEAR(c->softcap, 30.0, 0);
    CHECK_NEAR(c->rms_eps, 1e-6, 1e-12);
    CHECK_NEAR(c->partial_rotary, 0.25, 0);
    CHECK(c->bos_id == 2 && c->pad_id == 0 && c->eos_id == 1);
    CHECK(c->n_eos == 2 && c->eos_ids[0] == 1 && c->eos_ids[1] == 106); /* text_config 1 + top-level [1, 106] */
    int bad = 0;
    for (int l = 0; l < 35; l++) {
        const ox_layer_cfg *y = &c->layers[l];
        int full = l % 5 == 4, shared = l >= 15;
        if (y->full != full || y->head_dim != (full ? 512 : 256) || y->n_kv_heads != 1 || y->k_eq_v) bad++;
        if (y->shared != shared || y->kv_src != (shared ? (full ? 14 : 13) : l)) bad++;
        if (y->ffn != (shared ? 12288 : 6144) || y->window != (full ? 0 : 512)) bad++;
        if (y->rope_base != (full ? 1e6f : 1e4f) || y->rope_pairs != (full ? 64 : 128)) bad++;
    }
    CHECK(bad == 0);
    CHECK(c->layers[4].full && c->layers[34].full && !c->layers[33].full);
    CHECK(c->layers[34].kv_src == 14 && c->layers[15].kv_src == 13 && c->layers[19].kv_src == 14);
    /* generation_config.json adds 50 */
    const char *gen = "{\"eos_token_id\": [1, 106, 50]}";
    ox_json *g = ox_json_parse(gen, strlen(gen), "generation_config.json", &e);
    CHECK(ox_config_add_eos(&cfg, ox_json_get(g, "eos_token_id")) == 0);
    CHECK(cfg.n_eos == 3 && cfg.eos_ids[2] == 50);
    ox_json_free(g);
}

static void test_e4b(void) {
    ox_err e = {0};
    CHECK_MSG(load(config_text("E4B"), &cfg, &e) == 0, "%s", e.msg);
    int bad = 0;
    for (int l = 0; l < 42; l++) {
        const ox_layer_cfg *y = &cfg.layers[l];
        int full = l % 6 == 5, shared = l >= 24;
        if (y->full != full || y->n_kv_heads != 2 || y->shared != shared || y->ffn != 10240) bad++;
        if (y->kv_src != (shared ? (full ? 23 : 22) : l)) bad++;
        if (y->head_dim != (full ? 512 : 256) || y->window != (full ? 0 : 512)) bad++;
    }
    CHECK(bad == 0);
    CHECK(cfg.layers[41].full && cfg.layers[41].kv_src == 23 && cfg.layers[24].kv_src == 22);
    CHECK(cfg.bos_id == 2 && cfg.pad_id == 0); /* defaults */
}

static void test_26b(void) {
    ox_err e = {0};
    CHECK_MSG(load(config_text("26B-A4B"), &cfg, &e) == 0, "%s", e.msg);
    CHECK(cfg.moe && cfg.n_experts == 128 && cfg.top_k_experts == 8 && cfg.moe_ffn == 704 && cfg.intermediate == 2112);
    CHECK(cfg.k_eq_v && cfg.n_global_kv_heads == 2 && cfg.ple_dim == 0 && cfg.ctx_max == 262144 && !cfg.bidirectional);
    int bad = 0;
    for (int l = 0; l < 30; l++) {
        const ox_layer_cfg *y = &cfg.layers[l];
        int full = l % 6 == 5;
        if (y->full != full || y->k_eq_v != full || y->n_kv_heads != (full ? 2 : 8) || y->shared || y->kv_src != l)
            bad++;
        if (y->ffn != 2112 || y->window != (full ? 0 : 1024) || y->rope_pairs != (full ? 64 : 128)) bad++;
    }
    CHECK(bad == 0);
}

static void test_31b(void) {
    ox_err e = {0};
    CHECK_MSG(load(config_text("31B"), &cfg, &e) == 0, "%s", e.msg);
    int bad = 0;
    for (int l = 0; l < 60; l++) {
        const ox_layer_cfg *y = &cfg.layers[l];
        int full = l % 6 == 5;
        if (y->full != full || y->k_eq_v != full || y->n_kv_heads != (full ? 4 : 16) || y->ffn != 21504) bad++;
        if (y->head_dim != (full ? 512 : 256) || y->window != (full ? 0 : 1024)) bad++;
    }
    CHECK(bad == 0);
    CHECK(cfg.hidden == 5376 && cfg.n_heads == 32 && !cfg.moe);
}

/* config -> JSON -> config gives the same per-layer table */
static void test_to_json(void) {
    const char *names[] = {"E2B", "E4B", "26B-A4B", "31B"};
    static ox_config a, b;
    for (int i = 0; i < 4; i++) {
        ox_err e = {0};
        CHECK(load(config_text(names[i]), &a, &e) == 0);
        ox_strbuf sb = {0};
        CHECK(ox_config_to_json(&a, &sb) == 0);
        CHECK_MSG(load(sb.s, &b, &e) == 0, "%s: %s", names[i], e.msg);
        CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "%s differs after the JSON round trip", names[i]);
        ox_sb_free(&sb);
    }
}

/* Replace the first occurrence of `from` in E2B's text by `to` and expect an error. */
static void expect_bad(const char *which, const char *from, const char *to, int code, const char *what) {
    char text[16384];
    const char *src = config_text(which);
    const char *p = strstr(src, from);
    CHECK_MSG(p != NULL, "%s not in the config", from);
    if (!p) return;
    snprintf(text, sizeof text, "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
    ox_err e = {0};
    int rc = load(text, &cfg, &e);
    CHECK_MSG(rc == code, "%s -> %s: got %s (%s)", from, to, ox_err_code_name(rc), e.msg);
    CHECK_STR_CONTAINS(e.msg, "config.json");
    CHECK_STR_CONTAINS(e.msg, what);
}

static void test_errors(void) {
    expect_bad("E2B", "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3", OX_E_CONFIG,
               "num_attention_heads = 8 is not a multiple of num_key_value_heads = 3");
    expect_bad("31B", "\"num_global_key_value_heads\": 4", "\"num_global_key_value_heads\": 5", OX_E_CONFIG,
               "not a multiple of num_global_key_value_heads = 5");
    expect_bad("31B", "\"num_global_key_value_heads\": 4", "\"num_global_key_value_heads\": null", OX_E_CONFIG,
               "attention_k_eq_v needs num_global_key_value_heads");
    expect_bad("E2B", "\"head_dim\": 256", "\"head_dim\": 255", OX_E_CONFIG, "head_dim = 255 must be positive and even");
    expect_bad("E2B", "\"global_head_dim\": 512", "\"global_head_dim\": 0", OX_E_CONFIG, "global_head_dim = 0");
    expect_bad("E2B", "\"hidden_size\": 1536", "\"hidden_size\": -4", OX_E_CONFIG, "hidden_size = -4");
    expect_bad("E2B", "\"hidden_size\": 1536", "\"hidden_sizeX\": 1536", OX_E_CONFIG,
               "config key hidden_size is missing");
    expect_bad("E2B", "\"hidden_size\": 1536", "\"hidden_size\": 1536.5", OX_E_CONFIG, "hidden_size: integer expected");
    expect_bad("E2B", "\"intermediate_size\": 6144", "\"intermediate_size\": 0", OX_E_CONFIG, "intermediate_size = 0");
    expect_bad("E2B", "\"num_kv_shared_layers\": 20", "\"num_kv_shared_layers\": 35", OX_E_CONFIG,
               "num_kv_shared_layers = 35");
    /* 32 shared layers: layers 3.. shared; layer 4 (full) has no unshared full layer before 3 */
    expect_bad("E2B", "\"num_kv_shared_layers\": 20", "\"num_kv_shared_layers\": 32", OX_E_CONFIG,
               "shared layer 4 (full) has no unshared full layer");
    expect_bad("E2B", "\"num_hidden_layers\": 35", "\"num_hidden_layers\": 34", OX_E_CONFIG,
               "layer_types must be an array of num_hidden_layers = 34 entries");
    expect_bad("E2B", "\"num_hidden_layers\": 35", "\"num_hidden_layers\": 600", OX_E_CONFIG, "num_hidden_layers = 600");
    expect_bad("E2B", "\"sliding_attention\"", "\"local\"", OX_E_CONFIG, "layer_types[0]");
    expect_bad("E2B", "\"sliding_window\": 512", "\"sliding_window\": 0", OX_E_CONFIG, "sliding_window = 0");
    expect_bad("E2B", "\"use_bidirectional_attention\": null", "\"use_bidirectional_attention\": \"some\"", OX_E_CONFIG,
               "use_bidirectional_attention");
    expect_bad("E2B", "\"use_double_wide_mlp\": true", "\"use_double_wide_mlp\": 1", OX_E_CONFIG,
               "use_double_wide_mlp: boolean expected");
    expect_bad("E2B", "\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 1.5", OX_E_CONFIG,
               "partial_rotary_factor = 1.5");
    expect_bad("E2B", "\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": \"x\"", OX_E_CONFIG, "rms_norm_eps: number expected");
    expect_bad("26B-A4B", "\"top_k_experts\": 8", "\"top_k_experts\": 200", OX_E_CONFIG, "top_k_experts = 200");
    expect_bad("26B-A4B", "\"num_experts\": 128", "\"num_experts\": null", OX_E_CONFIG, "num_experts > 0");
    expect_bad("E2B", "\"eos_token_id\": 1", "\"eos_token_id\": \"x\"", OX_E_CONFIG, "eos_token_id");
    expect_bad("E2B", "\"vocab_size\": 262144", "\"vocab_size\": 262144,", OX_E_FORMAT, "config.json:1:");
    /* "all" -> bidirectional; no layer_types -> HF default pattern, last layer full */
    char text[16384];
    const char *src = config_text("31B");
    const char *p = strstr(src, "\"vision\"");
    snprintf(text, sizeof text, "%.*s\"all\"%s", (int)(p - src), src, p + 8);
    ox_err e = {0};
    CHECK(load(text, &cfg, &e) == 0 && cfg.bidirectional == 1);
    const char *bare =
        "{\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 8, \"num_attention_heads\": 4,"
        "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 128}";
    CHECK_MSG(load(bare, &cfg, &e) == 0, "%s", e.msg);
    CHECK(cfg.layers[5].full && cfg.layers[7].full && !cfg.layers[6].full && !cfg.layers[0].full);
    CHECK(cfg.global_head_dim == 16 && cfg.layers[7].rope_pairs == 2 && cfg.layers[0].rope_pairs == 8);
    CHECK(cfg.eos_id == 1 && cfg.n_eos == 1 && cfg.bos_id == 2);
}

/* ---- GGUF metadata ---- */

#define TMP "/tmp/oxinfer_test_config.gguf"

static int write_gguf(int variant, ox_err *e) {
    /* variant 0: E2B-like (ffn array, kv scalar); 1: 31B-like (kv array, k_eq_v from tensors);
     * 2: E2B with a wrong ffn array; 3: wrong architecture */
    int L = variant == 1 ? 12 : 35;
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_w_str(w, "general.architecture", variant == 3 ? "llama" : "gemma4");
    ox_gguf_w_u32(w, "gemma4.block_count", (uint32_t)L);
    ox_gguf_w_u32(w, "gemma4.context_length", 131072);
    ox_gguf_w_u32(w, "gemma4.embedding_length", variant == 1 ? 5376 : 1536);
    ox_gguf_w_u32(w, "gemma4.attention.head_count", variant == 1 ? 32 : 8);
    ox_gguf_w_u32(w, "gemma4.attention.key_length", 512);
    ox_gguf_w_u32(w, "gemma4.attention.value_length", 512);
    ox_gguf_w_u32(w, "gemma4.attention.key_length_swa", 256);
    ox_gguf_w_u32(w, "gemma4.attention.value_length_swa", 256);
    ox_gguf_w_u32(w, "gemma4.attention.sliding_window", variant == 1 ? 1024 : 512);
    ox_gguf_w_u32(w, "gemma4.attention.shared_kv_layers", variant == 1 ? 0 : 20);
    ox_gguf_w_f32(w, "gemma4.attention.layer_norm_rms_epsilon", 1e-6f);
    ox_gguf_w_u32(w, "gemma4.embedding_length_per_layer_input", variant == 1 ? 0 : 256);
    ox_gguf_w_f32(w, "gemma4.rope.freq_base", 1e6f);
    ox_gguf_w_f32(w, "gemma4.rope.freq_base_swa", 1e4f);
    ox_gguf_w_f32(w, "gemma4.final_logit_softcapping", 30.0f);
    uint8_t pat[64];
    int32_t ff[64], kv[64];
    int period = variant == 1 ? 6 : 5;
    for (int l = 0; l < L; l++) {
        pat[l] = l % period != period - 1;
        ff[l] = variant == 1 ? 21504 : (l >= 15 ? 12288 : 6144);
        kv[l] = pat[l] ? 16 : 4;
    }
    if (variant == 2) ff[20] = 6144;
    ox_gguf_w_arr(w, "gemma4.attention.sliding_window_pattern", OX_GGUF_BOOL, pat, (uint64_t)L);
    if (variant == 1) {
        ox_gguf_w_u32(w, "gemma4.feed_forward_length", 21504);
        ox_gguf_w_arr(w, "gemma4.attention.head_count_kv", OX_GGUF_I32, kv, (uint64_t)L);
    } else {
        ox_gguf_w_arr(w, "gemma4.feed_forward_length", OX_GGUF_I32, ff, (uint64_t)L);
        ox_gguf_w_u32(w, "gemma4.attention.head_count_kv", 1);
    }
    const char *toks[300];
    for (int i = 0; i < 300; i++) toks[i] = "t";
    ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 300);
    ox_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 1);
    ox_gguf_w_u32(w, "tokenizer.ggml.eot_token_id", 106);
    static float freqs[256], one = 1;
    for (int i = 0; i < 256; i++) freqs[i] = i < 64 ? 1.0f : 1e30f;
    ox_gguf_w_tensor(w, "rope_freqs.weight", OX_F32, 1, (uint64_t[]){256}, freqs, e);
    ox_gguf_w_tensor(w, "blk.5.attn_k.weight", OX_F32, 1, (uint64_t[]){1}, &one, e);
    if (variant != 1) ox_gguf_w_tensor(w, "blk.5.attn_v.weight", OX_F32, 1, (uint64_t[]){1}, &one, e);
    int rc = ox_gguf_w_write(w, TMP, NULL, NULL, e);
    ox_gguf_writer_free(w);
    return rc;
}

static int gguf_config(int variant, ox_config *c, ox_err *e) {
    if (write_gguf(variant, e)) return -100;
    int h = ox_host_open_path(TMP, e);
    ox_gguf *g = ox_gguf_open(h, e);
    int rc = g ? ox_config_from_gguf(g, c, e) : -101;
    ox_gguf_free(g);
    ox_host_close(h);
    remove(TMP);
    return rc;
}

static void test_gguf(void) {
    static ox_config ref;
    ox_err e = {0};
    CHECK(load(config_text("E2B"), &ref, &e) == 0);
    CHECK_MSG(gguf_config(0, &cfg, &e) == 0, "%s", e.msg);
    CHECK(cfg.vocab == 300 && cfg.ple_vocab == 300); /* from the token list: no token_embd in this file */
    CHECK(cfg.double_wide && cfg.intermediate == 6144 && !cfg.k_eq_v && cfg.n_kv_heads == 1);
    CHECK_NEAR(cfg.partial_rotary, 0.25, 0);
    CHECK(cfg.n_eos == 2 && cfg.eos_ids[0] == 1 && cfg.eos_ids[1] == 106);
    CHECK_MSG(memcmp(cfg.layers, ref.layers, sizeof ref.layers) == 0,
              "E2B per-layer table from GGUF differs from config.json");

    CHECK(load(config_text("31B"), &ref, &e) == 0);
    CHECK_MSG(gguf_config(1, &cfg, &e) == 0, "%s", e.msg);
    CHECK(cfg.k_eq_v && cfg.n_kv_heads == 16 && cfg.n_global_kv_heads == 4 && cfg.n_layers == 12);
    CHECK_MSG(memcmp(cfg.layers, ref.layers, 12 * sizeof ref.layers[0]) == 0, "31B per-layer table from GGUF differs");

    CHECK(gguf_config(2, &cfg, &e) == OX_E_CONFIG);
    CHECK_STR_CONTAINS(e.msg, "gemma4.feed_forward_length[20] = 6144, expected 12288");
    CHECK_STR_CONTAINS(e.msg, "oxinfer_test_config.gguf");
    CHECK(gguf_config(3, &cfg, &e) == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(e.msg, "architecture llama");
}

int main(void) {
    RUN(test_e2b);
    RUN(test_e4b);
    RUN(test_26b);
    RUN(test_31b);
    RUN(test_to_json);
    RUN(test_errors);
    RUN(test_gguf);
    return check_summary("config");
}
