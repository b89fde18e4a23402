/* test_tensors.c — the tensor directory: a GGUF model, HF checkpoints (single file, prefixes,
 * towers skipped, MoE and layer_scalar names, shapes to ne order), sharded checkpoints incl.
 * a missing shard, pre-quantized safetensors written by ox_prequant_write (rows bit-identical
 * to ox_quantize_row of the source), and the directory's errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "writers/prequant.h"
#include "kernels/quant.h"
#include "formats/safetensors.h"
#include "formats/tensors.h"
#include "writers/gguf_write.h"
#include "writers/safetensors_write.h"

#define DIR "/tmp/oxinfer_test_tensors/"
enum { V = 100, H = 64, FF = 128 };

static float emb[V * H], up[FF * H], norm[H], freqs[32];
static uint8_t q8[H * H / 32 * sizeof(ox_block_q8_0)];

static void init_data(void) {
    for (int i = 0; i < V * H; i++) emb[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
    for (int i = 0; i < FF * H; i++)
        up[i] = (float)((i * 104729) % 3001) / 1500.0f - 1.0f + (i % 64 == 5 ? 3.0f : 0.0f);
    for (int i = 0; i < H; i++) norm[i] = 1.0f + (float)i / 64;
    for (int i = 0; i < 32; i++) freqs[i] = i < 8 ? 1.0f : 1e30f;
    ox_quantize_row(OX_Q8_0, up, q8, H * H);
}

/* A 2-layer gemma4 GGUF (layer 0 sliding, layer 1 full). split: general.split.count, or 0. */
static int write_gguf(const char *path, int split, ox_err *e) {
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_w_str(w, "general.architecture", "gemma4");
    ox_gguf_w_u32(w, "gemma4.block_count", 2);
    ox_gguf_w_u32(w, "gemma4.embedding_length", H);
    ox_gguf_w_u32(w, "gemma4.feed_forward_length", FF);
    ox_gguf_w_u32(w, "gemma4.attention.head_count", 2);
    ox_gguf_w_u32(w, "gemma4.attention.head_count_kv", 1);
    ox_gguf_w_u32(w, "gemma4.attention.key_length", 64);
    ox_gguf_w_u32(w, "gemma4.attention.key_length_swa", 32);
    ox_gguf_w_u32(w, "gemma4.attention.sliding_window", 16);
    uint8_t pat[2] = {1, 0};
    ox_gguf_w_arr(w, "gemma4.attention.sliding_window_pattern", OX_GGUF_BOOL, pat, 2);
    if (split) ox_gguf_w_u32(w, "general.split.count", (uint32_t)split);
    ox_gguf_w_tensor(w, "token_embd.weight", OX_F32, 2, (uint64_t[]){H, V}, emb, e);
    ox_gguf_w_tensor(w, "blk.0.attn_q.weight", OX_Q8_0, 2, (uint64_t[]){H, H}, q8, e);
    ox_gguf_w_tensor(w, "blk.0.ffn_up.weight", OX_F32, 2, (uint64_t[]){H, FF}, up, e);
    ox_gguf_w_tensor(w, "output_norm.weight", OX_F32, 1, (uint64_t[]){H}, norm, e);
    ox_gguf_w_tensor(w, "rope_freqs.weight", OX_F32, 1, (uint64_t[]){32}, freqs, e);
    int rc = ox_gguf_w_write(w, path, NULL, NULL, e);
    ox_gguf_writer_free(w);
    return rc;
}

static const char *CONFIG =
    "{\"text_config\": {\"vocab_size\": 100, \"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
    "\"num_key_value_heads\": 1, \"head_dim\": 32, \"global_head_dim\": 64, \"intermediate_size\": 128,"
    "\"sliding_window\": 16, \"layer_types\": [\"sliding_attention\", \"full_attention\"]}, \"eos_token_id\": [1, "
    "106]}";
static const char *TOKJ = "{\"model\": {}}";

static void test_map_names(void) {
    static const char *cases[][2] = {
        {"model.language_model.embed_tokens.weight", "token_embd.weight"},
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"embed_tokens.weight", "token_embd.weight"},
        {"model.language_model.norm.weight", "output_norm.weight"},
        {"model.language_model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
        {"model.language_model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
        {"model.language_model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
        {"model.language_model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
        {"model.language_model.layers.12.self_attn.q_proj.weight", "blk.12.attn_q.weight"},
        {"model.layers.3.self_attn.k_proj.weight", "blk.3.attn_k.weight"},
        {"layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
        {"model.language_model.layers.7.self_attn.o_proj.weight", "blk.7.attn_output.weight"},
        {"model.language_model.layers.7.self_attn.q_norm.weight", "blk.7.attn_q_norm.weight"},
        {"model.language_model.layers.7.self_attn.k_norm.weight", "blk.7.attn_k_norm.weight"},
        {"model.language_model.layers.7.post_attention_layernorm.weight", "blk.7.post_attention_norm.weight"},
        {"model.language_model.layers.7.pre_feedforward_layernorm.weight", "blk.7.ffn_norm.weight"},
        {"model.language_model.layers.7.mlp.gate_proj.weight", "blk.7.ffn_gate.weight"},
        {"model.language_model.layers.7.mlp.up_proj.weight", "blk.7.ffn_up.weight"},
        {"model.language_model.layers.7.mlp.down_proj.weight", "blk.7.ffn_down.weight"},
        {"model.language_model.layers.7.post_feedforward_layernorm.weight", "blk.7.post_ffw_norm.weight"},
        {"model.language_model.layers.34.layer_scalar", "blk.34.layer_output_scale.weight"},
        {"model.language_model.layers.7.per_layer_input_gate.weight", "blk.7.inp_gate.weight"},
        {"model.language_model.layers.7.per_layer_projection.weight", "blk.7.proj.weight"},
        {"model.language_model.layers.7.post_per_layer_input_norm.weight", "blk.7.post_norm.weight"},
        {"model.language_model.layers.2.router.proj.weight", "blk.2.ffn_gate_inp.weight"},
        {"model.language_model.layers.2.router.scale", "blk.2.ffn_gate_inp.scale"},
        {"model.language_model.layers.2.router.per_expert_scale", "blk.2.ffn_down_exps.scale"},
        {"model.language_model.layers.2.experts.gate_up_proj", "blk.2.ffn_gate_up_exps.weight"},
        {"model.language_model.layers.2.experts.down_proj", "blk.2.ffn_down_exps.weight"},
        {"model.language_model.layers.2.pre_feedforward_layernorm_2.weight", "blk.2.pre_ffw_norm_2.weight"},
        {"model.language_model.layers.2.post_feedforward_layernorm_1.weight", "blk.2.post_ffw_norm_1.weight"},
        {"model.language_model.layers.2.post_feedforward_layernorm_2.weight", "blk.2.post_ffw_norm_2.weight"},
        {"blk.5.attn_q.weight", "blk.5.attn_q.weight"},
        {"rope_freqs.weight", "rope_freqs.weight"},
    };
    char out[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = ox_map_hf_name(cases[i][0], out, sizeof out);
        CHECK_MSG(rc == 0 && strcmp(out, cases[i][1]) == 0, "%s -> %s (rc %d), want %s", cases[i][0], out, rc,
                  cases[i][1]);
    }
    CHECK(ox_map_hf_name("model.vision_tower.encoder.layers.0.weight", out, sizeof out) == 1);
    CHECK(ox_map_hf_name("model.audio_tower.conv.weight", out, sizeof out) == 1);
    CHECK(ox_map_hf_name("model.embed_vision.embedding_projection.weight", out, sizeof out) == 1);
    CHECK(ox_map_hf_name("model.embed_audio.embedding_projection.weight", out, sizeof out) == 1);
    CHECK(ox_map_hf_name("model.language_model.layers.1.self_attn.q_proj.weight", out, 8) == -1);
}

static void test_gguf_model(void) {
    ox_err e = {0};
    CHECK(write_gguf(DIR "m.gguf", 0, &e) == 0);
    int f[3] = {ox_host_open_path(DIR "m.gguf", &e), ox_host_open_mem("tokenizer.json", TOKJ, strlen(TOKJ)),
                ox_host_open_mem("chat_template.jinja", "{{x}}", 5)};
    ox_model_files *mf = ox_files_open(f, 3, &e);
    CHECK_MSG(mf != NULL, "%s", e.msg);
    if (mf) {
        CHECK(ox_files_count(mf) == 5);
        CHECK(ox_files_gguf(mf) != NULL);
        CHECK(ox_files_aux(mf, "tokenizer.json") == f[1] && ox_files_aux(mf, "chat_template.jinja") == f[2]);
        CHECK(ox_files_aux(mf, "config.json") == -1);
        CHECK(ox_files_stored_quant(mf) == NULL);
        const ox_config *c = ox_files_config(mf);
        CHECK(c->vocab == V && c->hidden == H && c->n_layers == 2 && c->layers[1].full && !c->layers[0].full);
        CHECK(c->layers[1].rope_pairs == 8 && c->layers[0].rope_pairs == 16 && c->layers[1].head_dim == 64);
        const ox_tensor *t = ox_files_find(mf, "blk.0.attn_q.weight");
        CHECK(t && t->type == OX_Q8_0 && t->ne[0] == H && t->ne[1] == H && ox_tensor_rows(t) == H);
        uint8_t rows[3 * 2 * sizeof(ox_block_q8_0)];
        CHECK(t && ox_tensor_read_rows(t, 5, 3, rows, &e) == 0);
        CHECK(memcmp(rows, q8 + 5 * 2 * sizeof(ox_block_q8_0), sizeof rows) == 0);
        CHECK(t && ox_tensor_read_rows(t, 62, 3, rows, &e) == OX_E_RANGE);
        CHECK_STR_CONTAINS(e.msg, "blk.0.attn_q.weight");
        t = ox_files_find(mf, "token_embd.weight");
        float r[H];
        CHECK(t && ox_tensor_read_rows(t, 99, 1, r, &e) == 0 && memcmp(r, emb + 99 * H, sizeof r) == 0);
        CHECK(ox_files_require(mf, "blk.9.attn_q.weight", &e) == NULL && e.code == OX_E_MISSING);
        CHECK_STR_CONTAINS(e.msg, "blk.9.attn_q.weight");
        CHECK_STR_CONTAINS(e.msg, "m.gguf");
    }
    ox_files_free(mf);
    /* two unsplit GGUFs */
    int f2[2] = {f[0], ox_host_open_path(DIR "m.gguf", &e)};
    mf = ox_files_open(f2, 2, &e);
    CHECK(mf == NULL && e.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "2 GGUF files given, but m.gguf is not split");
    ox_host_close(f2[1]);
    /* no weights */
    mf = ox_files_open(f + 1, 2, &e);
    CHECK(mf == NULL && e.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "tokenizer.json");
    /* split count says 2, one given */
    CHECK(write_gguf(DIR "s.gguf", 2, &e) == 0);
    int fs = ox_host_open_path(DIR "s.gguf", &e);
    mf = ox_files_open(&fs, 1, &e);
    CHECK(mf == NULL && e.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "split into 2 GGUF files, 1 given");
    /* ... and with its second split (tensors only), given first */
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_w_u32(w, "general.split.count", 2);
    ox_gguf_w_u32(w, "general.split.no", 1);
    ox_gguf_w_tensor(w, "blk.1.ffn_up.weight", OX_F32, 2, (uint64_t[]){H, FF}, up, &e);
    CHECK(ox_gguf_w_write(w, DIR "s2.gguf", NULL, NULL, &e) == 0);
    ox_gguf_writer_free(w);
    int sp[2] = {ox_host_open_path(DIR "s2.gguf", &e), fs};
    mf = ox_files_open(sp, 2, &e);
    CHECK_MSG(mf != NULL, "%s", e.msg);
    if (mf) {
        CHECK(ox_files_count(mf) == 6 && ox_files_config(mf)->n_layers == 2);
        CHECK(ox_gguf_find(ox_files_gguf(mf), "general.architecture") != NULL); /* the metadata split */
        const ox_tensor *t = ox_files_find(mf, "blk.1.ffn_up.weight");
        float r[H];
        CHECK(t && t->file == sp[0] && ox_tensor_read_rows(t, 127, 1, r, &e) == 0 &&
              memcmp(r, up + 127 * H, sizeof r) == 0);
    }
    ox_files_free(mf);
    ox_host_close(sp[0]);
    ox_host_close(fs);
    for (int i = 0; i < 3; i++) ox_host_close(f[i]);
    remove(DIR "s.gguf");
    remove(DIR "s2.gguf");
}

/* ---- HF checkpoints ---- */

static uint16_t emb_bf16[V * H], exps[4 * 16 * H];
static float qproj[H * H], scalar1[1] = {0.75f}, router[4 * H];

static int write_hf(const char *path, int part, ox_err *e) {
    /* part 0: everything; 1: first shard; 2: second shard */
    ox_st_writer *w = ox_st_writer_new();
    int rc = 0;
    if (part != 2) {
        rc |= ox_st_w_tensor(w, "model.language_model.embed_tokens.weight", OX_ST_BF16, 2, (uint64_t[]){V, H}, emb_bf16,
                             e);
        rc |= ox_st_w_tensor(w, "model.language_model.layers.0.self_attn.q_proj.weight", OX_ST_F32, 2,
                             (uint64_t[]){H, H}, qproj, e);
        rc |= ox_st_w_tensor(w, "model.vision_tower.patch.weight", OX_ST_I32, 1, (uint64_t[]){4}, qproj, e);
    }
    if (part != 1) {
        rc |= ox_st_w_tensor(w, "model.language_model.norm.weight", OX_ST_F32, 1, (uint64_t[]){H}, norm, e);
        rc |= ox_st_w_tensor(w, "model.language_model.layers.1.layer_scalar", OX_ST_F32, 1, (uint64_t[]){1}, scalar1, e);
        rc |= ox_st_w_tensor(w, "model.language_model.layers.0.router.proj.weight", OX_ST_F32, 2, (uint64_t[]){4, H},
                             router, e);
        rc |= ox_st_w_tensor(w, "model.language_model.layers.0.experts.gate_up_proj", OX_ST_F16, 3,
                             (uint64_t[]){4, 16, H}, exps, e);
    }
    rc |= ox_st_w_write(w, path, NULL, NULL, e);
    ox_st_writer_free(w);
    return rc;
}

static void check_hf_dir(ox_model_files *mf) {
    ox_err e = {0};
    CHECK(ox_files_count(mf) == 6); /* the vision tensor is skipped */
    const ox_tensor *t = ox_files_find(mf, "token_embd.weight");
    CHECK(t && t->type == OX_BF16 && t->n_dims == 2 && t->ne[0] == H && t->ne[1] == V);
    uint16_t r[2 * H];
    CHECK(t && ox_tensor_read_rows(t, 40, 2, r, &e) == 0 && memcmp(r, emb_bf16 + 40 * H, sizeof r) == 0);
    t = ox_files_find(mf, "blk.1.layer_output_scale.weight");
    float s;
    CHECK(t && t->type == OX_F32 && t->n_dims == 1 && t->ne[0] == 1 && ox_tensor_read_rows(t, 0, 1, &s, &e) == 0 &&
          s == 0.75f);
    t = ox_files_find(mf, "blk.0.ffn_gate_inp.weight");
    CHECK(t && t->ne[0] == H && t->ne[1] == 4);
    t = ox_files_find(mf, "blk.0.ffn_gate_up_exps.weight");
    CHECK(t && t->type == OX_F16 && t->n_dims == 3 && t->ne[0] == H && t->ne[1] == 16 && t->ne[2] == 4 &&
          ox_tensor_rows(t) == 64);
    uint16_t x[H];
    CHECK(t && ox_tensor_read_rows(t, 37, 1, x, &e) == 0 && memcmp(x, exps + 37 * H, sizeof x) == 0);
    CHECK(ox_files_find(mf, "output_norm.weight") && ox_files_find(mf, "blk.0.attn_q.weight"));
    const ox_config *c = ox_files_config(mf);
    CHECK(c->n_layers == 2 && c->hidden == H && c->n_eos == 3 && c->eos_ids[2] == 50); /* generation_config adds 50 */
}

static void test_hf(void) {
    for (int i = 0; i < V * H; i++) emb_bf16[i] = ox_f32_to_bf16(emb[i]);
    for (int i = 0; i < 4 * 16 * H; i++) exps[i] = ox_f32_to_f16((float)(i % 97) / 97);
    for (int i = 0; i < H * H; i++) qproj[i] = (float)i;
    for (int i = 0; i < 4 * H; i++) router[i] = -(float)i;
    ox_err e = {0};
    CHECK(write_hf(DIR "model.safetensors", 0, &e) == 0);
    const char *gen = "{\"eos_token_id\": [1, 106, 50]}";
    int f[4] = {ox_host_open_path(DIR "model.safetensors", &e), ox_host_open_mem("config.json", CONFIG, strlen(CONFIG)),
                ox_host_open_mem("generation_config.json", gen, strlen(gen)),
                ox_host_open_mem("tokenizer_config.json", "{}", 2)};
    /* the I32 vision tensor is skipped before its dtype matters */
    ox_model_files *mf = ox_files_open(f, 4, &e);
    CHECK_MSG(mf != NULL, "%s", e.msg);
    if (mf) check_hf_dir(mf);
    ox_files_free(mf);
    /* the same tensor from a GGUF and a safetensors file */
    CHECK(write_gguf(DIR "m.gguf", 0, &e) == 0);
    int dup[3] = {f[0], ox_host_open_path(DIR "m.gguf", &e), f[1]};
    mf = ox_files_open(dup, 3, &e);
    CHECK(mf == NULL && e.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "tensor blk.0.attn_q.weight appears twice in the model files: in ");
    CHECK(strstr(e.msg, "m.gguf") && strstr(e.msg, "model.safetensors"));
    ox_host_close(dup[1]);
    remove(DIR "m.gguf");
    /* without config.json */
    int g[1] = {f[0]};
    mf = ox_files_open(g, 1, &e);
    CHECK(mf == NULL && e.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "config.json");

    /* sharded */
    CHECK(write_hf(DIR "model-00001-of-00002.safetensors", 1, &e) == 0);
    CHECK(write_hf(DIR "model-00002-of-00002.safetensors", 2, &e) == 0);
    const char *index =
        "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {"
        "\"model.language_model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\","
        "\"model.language_model.layers.0.self_attn.q_proj.weight\": \"model-00001-of-00002.safetensors\","
        "\"model.language_model.norm.weight\": \"model-00002-of-00002.safetensors\","
        "\"model.language_model.layers.1.layer_scalar\": \"model-00002-of-00002.safetensors\"}}";
    const char *bad_index =
        "{\"weight_map\": {\"model.language_model.norm.weight\": \"model-00001-of-00002.safetensors\"}}";
    int s1 = ox_host_open_path(DIR "model-00001-of-00002.safetensors", &e);
    int s2 = ox_host_open_path(DIR "model-00002-of-00002.safetensors", &e);
    int ix = ox_host_open_mem("model.safetensors.index.json", index, strlen(index));
    int bix = ox_host_open_mem("model.safetensors.index.json", bad_index, strlen(bad_index));
    int sh[5] = {ix, s2, f[1], s1, f[2]};
    mf = ox_files_open(sh, 5, &e);
    CHECK_MSG(mf != NULL, "%s", e.msg);
    if (mf) {
        check_hf_dir(mf);
        CHECK(ox_files_aux(mf, "model.safetensors.index.json") == ix);
    }
    ox_files_free(mf);
    int miss[4] = {ix, s1, f[1], f[2]};
    mf = ox_files_open(miss, 4, &e);
    CHECK(mf == NULL && e.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "model.safetensors.index.json");
    CHECK_STR_CONTAINS(e.msg, "shard model-00002-of-00002.safetensors");
    int wrong[5] = {bix, s1, s2, f[1], f[2]};
    mf = ox_files_open(wrong, 5, &e);
    CHECK(mf == NULL && e.code == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "tensor model.language_model.norm.weight is mapped to model-00001-of-00002.safetensors");

    /* a non-weight dtype in the text decoder */
    ox_st_writer *w = ox_st_writer_new();
    int32_t ids[2] = {1, 2};
    ox_st_w_tensor(w, "model.language_model.layers.0.weird", OX_ST_I32, 1, (uint64_t[]){2}, ids, &e);
    ox_st_w_write(w, DIR "i32.safetensors", NULL, NULL, &e);
    ox_st_writer_free(w);
    int fi[2] = {ox_host_open_path(DIR "i32.safetensors", &e), f[1]};
    mf = ox_files_open(fi, 2, &e);
    CHECK(mf == NULL && e.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(e.msg, "i32.safetensors: tensor model.language_model.layers.0.weird: dtype I32");
    ox_host_close(fi[0]);
    for (int i = 0; i < 4; i++) ox_host_close(f[i]);
    ox_host_close(s1), ox_host_close(s2), ox_host_close(ix), ox_host_close(bix);
    remove(DIR "model.safetensors");
    remove(DIR "model-00001-of-00002.safetensors");
    remove(DIR "model-00002-of-00002.safetensors");
    remove(DIR "i32.safetensors");
}

/* ---- pre-quantized ---- */

static void check_quant_rows(const ox_tensor *t, const float *src, ox_type want) {
    ox_err e = {0};
    CHECK_MSG(t && t->type == want, "%s: type %d, want %d", t ? t->name : "?", t ? (int)t->type : -1, (int)want);
    if (!t || t->type != want) return;
    uint64_t rows = ox_tensor_rows(t), rb;
    ox_row_bytes(want, t->ne[0], &rb, &e);
    uint8_t *got = malloc(rows * rb), *ref = malloc(rows * rb);
    ox_quantize_row(want, src, ref, (size_t)(rows * t->ne[0]));
    /* whole tensor in one call, and row by row from odd offsets */
    CHECK(ox_tensor_read_rows(t, 0, rows, got, &e) == 0 && memcmp(got, ref, rows * rb) == 0);
    int bad = 0;
    for (uint64_t r = 1; r + 2 <= rows; r += 7)
        if (ox_tensor_read_rows(t, r, 2, got, &e) || memcmp(got, ref + r * rb, 2 * rb)) bad++;
    CHECK(bad == 0);
    CHECK(t->nbytes == rows * rb);
    free(got), free(ref);
}

static void test_prequant(void) {
    ox_err e = {0};
    CHECK(write_gguf(DIR "m.gguf", 0, &e) == 0);
    int src = ox_host_open_path(DIR "m.gguf", &e);
    ox_model_files *mf = ox_files_open(&src, 1, &e);
    CHECK_MSG(mf != NULL, "%s", e.msg);
    if (!mf) return;
    float q_deq[H * H];
    ox_dequantize_row(OX_Q8_0, q8, q_deq, H * H);
    const char *modes[2] = {"q8", "q4"};
    for (int m = 0; m < 2; m++) {
        CHECK_MSG(ox_prequant_write(mf, DIR "q.safetensors", modes[m], NULL, NULL, &e) == 0, "%s", e.msg);
        int qf = ox_host_open_path(DIR "q.safetensors", &e);
        ox_model_files *qm = ox_files_open(&qf, 1, &e); /* loads on its own: config from metadata */
        CHECK_MSG(qm != NULL, "%s", e.msg);
        if (!qm) continue;
        CHECK(strcmp(ox_files_stored_quant(qm), modes[m]) == 0);
        CHECK(ox_files_count(qm) == 5);
        CHECK(memcmp(ox_files_config(qm)->layers, ox_files_config(mf)->layers, sizeof ox_files_config(mf)->layers) == 0);
        CHECK(ox_files_config(qm)->vocab == V);
        ox_type wq = m ? OX_Q4_0 : OX_Q8_0;
        check_quant_rows(ox_files_find(qm, "token_embd.weight"), emb, OX_Q8_0); /* LM head stays Q8 */
        check_quant_rows(ox_files_find(qm, "blk.0.ffn_up.weight"), up, wq);
        check_quant_rows(ox_files_find(qm, "blk.0.attn_q.weight"), q_deq, wq);
        const ox_tensor *t = ox_files_find(qm, "output_norm.weight");
        float r[H];
        CHECK(t && t->type == OX_F32 && ox_tensor_read_rows(t, 0, 1, r, &e) == 0 && memcmp(r, norm, sizeof r) == 0);
        t = ox_files_find(qm, "rope_freqs.weight");
        CHECK(t && t->type == OX_F32 && t->ne[0] == 32);
        CHECK(ox_prequant_type(ox_files_find(mf, "token_embd.weight"), 1) == OX_Q8_0);
        CHECK(ox_prequant_type(ox_files_find(mf, "output_norm.weight"), 1) == OX_F32);
        ox_files_free(qm);
        ox_host_close(qf);
    }
    CHECK(ox_prequant_write(mf, DIR "q.safetensors", "q5", NULL, NULL, &e) == OX_E_RANGE);

    /* a broken pair: scales with the wrong width */
    ox_st_writer *w = ox_st_writer_new();
    int8_t vals[4 * 64] = {0};
    uint16_t sc[4 * 3] = {0};
    ox_st_w_meta(w, "oxinfer_quant", "q8", &e);
    ox_st_w_tensor(w, "blk.0.attn_q.weight", OX_ST_I8, 2, (uint64_t[]){4, 64}, vals, &e);
    ox_st_w_tensor(w, "blk.0.attn_q.weight.scales", OX_ST_F16, 2, (uint64_t[]){4, 3}, sc, &e);
    ox_st_w_write(w, DIR "bad.safetensors", NULL, NULL, &e);
    ox_st_writer_free(w);
    int bf[2] = {ox_host_open_path(DIR "bad.safetensors", &e), ox_host_open_mem("config.json", CONFIG, strlen(CONFIG))};
    ox_model_files *bm = ox_files_open(bf, 2, &e);
    CHECK(bm == NULL && e.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "bad.safetensors: quantized tensor blk.0.attn_q.weight");
    ox_host_close(bf[0]), ox_host_close(bf[1]);
    ox_files_free(mf);
    ox_host_close(src);
    remove(DIR "q.safetensors");
    remove(DIR "bad.safetensors");
    remove(DIR "m.gguf");
}

int main(void) {
    mkdir(DIR, 0755);
    init_data();
    RUN(test_map_names);
    RUN(test_gguf_model);
    RUN(test_hf);
    RUN(test_prequant);
    return check_summary("tensors");
}
