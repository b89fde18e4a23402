/* synth_vision.c — a synthetic Gemma 4 vision tower (synth.h): its presets, its tensors in
 * the plan (HF names in full, mmproj names as the values' keys), config.json's vision_config,
 * and llama.cpp's mmproj GGUF. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "writers/gguf_write.h"
#include "writers/synth_impl.h"

int ox_synth_vision_preset(ox_synth *s, const char *name, ox_err *err) {
    s->v_patch = 16, s->v_pool = 3, s->v_standardize = 0, s->v_clipped = 0;
    if (!strcmp(name, "none")) return s->v_layers = 0, 0;
    if (!strcmp(name, "tiny")) {
        s->v_hidden = 64, s->v_layers = 2, s->v_heads = 4, s->v_head_dim = 16, s->v_ffn = 128, s->v_pos = 64;
        return 0;
    }
    if (!strcmp(name, "e2b")) {
        s->v_hidden = 768, s->v_layers = 16, s->v_heads = 12, s->v_head_dim = 64, s->v_ffn = 3072, s->v_pos = 10240;
        return 0;
    }
    return ox_errf(err, OX_E_RANGE, "unknown vision preset '%s' (none, tiny, e2b)", name);
}

int synth_vision_plan_size(const ox_synth *s) { return s->v_layers > 0 ? 8 + 48 * s->v_layers : 0; }

static const char *const lin_stem[7] = {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"};
static const char *const lin_hf[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                      "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
static const char *const bound[4] = {"input_min", "input_max", "output_min", "output_max"};

static ptensor *vadd(plan *p, const char *g, const char *h, int kind, int nd, uint64_t a, uint64_t b, uint64_t c,
                     float m, float d) {
    ptensor *t = synth_plan_add(p, g, h, kind, nd, a, b, c, m, d);
    t->where = VISION;
    return t;
}

void synth_vision_plan(const ox_synth *s, plan *p) {
    if (s->v_layers <= 0) return;
    uint64_t H = (uint64_t)s->v_hidden, p2 = (uint64_t)s->v_patch * (uint64_t)s->v_patch, hd = (uint64_t)s->v_head_dim;
    uint64_t q = (uint64_t)s->v_heads * hd, I = (uint64_t)s->v_ffn;
    float sd = s->std, bg = s->branch_gain, qk = s->qk_norm_scale;
    const char *T = "model.vision_tower.";
    char g[64], h[96];
    ptensor *t;
#define ADD(kind, nd, a, b, c, m, d) vadd(p, g, h, kind, nd, a, b, c, m, d)
#define NAMES(gg, ...)               (snprintf(g, sizeof g, "%s", gg), snprintf(h, sizeof h, __VA_ARGS__))
    NAMES("v.patch_embd.weight", "%spatch_embedder.input_proj.weight", T);
    ADD(K_WEIGHT, 2, 3 * p2, H, 1, 0, sd);
    NAMES("v.position_embd.weight", "%spatch_embedder.position_embedding_table", T);
    ADD(K_WEIGHT, 3, H, (uint64_t)s->v_pos, 2, 0, sd);
    if (s->v_standardize) {
        NAMES("v.std_bias", "%sstd_bias", T);
        ADD(K_NORM, 1, H, 1, 1, 0, 1.0f);
        NAMES("v.std_scale", "%sstd_scale", T);
        ADD(K_NORM, 1, H, 1, 1, 1, 0.1f);
    }
    NAMES("mm.input_projection.weight", "model.embed_vision.embedding_projection.weight");
    t = ADD(K_WEIGHT, 2, H, (uint64_t)s->hidden, 1, 0, sd);
    t->type = H % ox_type_block_elems(s->type) ? OX_F32 : s->type;
    for (int l = 0; l < s->v_layers; l++) {
        const uint64_t rows[7] = {q, q, q, H, I, I, H}, cols[7] = {H, H, H, q, H, H, I};
        char gl[40];
        for (int i = 0; i < 7; i++) {
            snprintf(gl, sizeof gl, "v.blk.%d.%s", l, lin_stem[i]);
            NAMES(gl, "%sencoder.layers.%d.%s.linear.weight", T, l, lin_hf[i]);
            snprintf(g, sizeof g, "%s.weight", gl);
            t = ADD(K_WEIGHT, 2, cols[i], rows[i], 1, 0, sd);
            t->type = cols[i] % ox_type_block_elems(s->type) ? OX_F32 : s->type;
            for (int b = 0; s->v_clipped && b < 4; b++) { /* bounds that bite on part of the values */
                snprintf(g, sizeof g, "%s.%s", gl, bound[b]);
                snprintf(h, sizeof h, "%sencoder.layers.%d.%s.%s", T, l, lin_hf[i], bound[b]);
                ADD(K_NORM, 1, 1, 1, 1, b % 2 ? 1.5f : -1.5f, 0.1f);
            }
        }
        static const char *const norm_g[4] = {"ln1", "attn_post_norm", "ln2", "ffn_post_norm"};
        static const char *const norm_h[4] = {"input_layernorm", "post_attention_layernorm",
                                              "pre_feedforward_layernorm", "post_feedforward_layernorm"};
        for (int i = 0; i < 4; i++) {
            snprintf(gl, sizeof gl, "v.blk.%d.%s.weight", l, norm_g[i]);
            NAMES(gl, "%sencoder.layers.%d.%s.weight", T, l, norm_h[i]);
            ADD(K_NORM, 1, H, 1, 1, i % 2 ? bg : 1, 0.1f * (i % 2 ? bg : 1));
        }
        snprintf(gl, sizeof gl, "v.blk.%d.attn_q_norm.weight", l);
        NAMES(gl, "%sencoder.layers.%d.self_attn.q_norm.weight", T, l);
        ADD(K_NORM, 1, hd, 1, 1, qk, 0.1f * qk);
        snprintf(gl, sizeof gl, "v.blk.%d.attn_k_norm.weight", l);
        NAMES(gl, "%sencoder.layers.%d.self_attn.k_norm.weight", T, l);
        ADD(K_NORM, 1, hd, 1, 1, qk, 0.1f * qk);
    }
#undef ADD
#undef NAMES
}

void synth_vision_config_json(const ox_synth *s, ox_strbuf *b) {
    if (s->v_layers <= 0) return;
    ox_sb_printf(b,
                 ",\n  \"boi_token_id\": null, \"eoi_token_id\": null, \"image_token_id\": null,\n"
                 "  \"vision_config\": {\n    \"model_type\": \"gemma4_vision\", \"hidden_size\": %d, "
                 "\"intermediate_size\": %d,\n    \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
                 "\"num_key_value_heads\": %d, \"head_dim\": %d,\n    \"hidden_activation\": \"gelu_pytorch_tanh\", "
                 "\"rms_norm_eps\": 1e-06, \"patch_size\": %d, \"pooling_kernel_size\": %d,\n"
                 "    \"position_embedding_size\": %d, \"use_clipped_linears\": %s, \"standardize\": %s,\n"
                 "    \"rope_parameters\": {\"rope_type\": \"axial\", \"rope_theta\": 100.0}\n  }",
                 s->v_hidden, s->v_ffn, s->v_layers, s->v_heads, s->v_heads, s->v_head_dim, s->v_patch, s->v_pool,
                 s->v_pos, s->v_clipped ? "true" : "false", s->v_standardize ? "true" : "false");
}

/* The mmproj writer's fill: plan tensors as synth_emit makes them, but the patch embedding
 * reordered from the processor's (row, col, channel) columns to the conv kernel's
 * (channel, row, col). */
typedef struct mm_ctx {
    writer_ctx *x;
    int patch_index, p;
} mm_ctx;

static int mm_fill(void *ud, int i, FILE *f, ox_err *err) {
    mm_ctx *m = ud;
    if (i != m->patch_index) return synth_emit(m->x, i, f, err);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    int rc = synth_emit(m->x, i, mem, err);
    fclose(mem);
    const ptensor *t = m->x->t[i];
    size_t K = (size_t)t->ne[0], rows = (size_t)t->ne[1];
    if (!rc && len != K * rows * sizeof(float)) rc = ox_errf(err, OX_E_IO, "synth: patch embedding size");
    float *row = malloc(K * sizeof(float));
    if (!rc && !row) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    int p = m->p;
    for (size_t r = 0; !rc && r < rows; r++) {
        const float *src = (const float *)buf + r * K;
        for (int ch = 0; ch < 3; ch++)
            for (int y = 0; y < p; y++)
                for (int xx = 0; xx < p; xx++) row[((size_t)ch * p + y) * p + xx] = src[((size_t)y * p + xx) * 3 + ch];
        if (fwrite(row, sizeof(float), K, f) != K) rc = ox_errf(err, OX_E_IO, "synth: write failed");
    }
    free(row);
    free(buf);
    return rc;
}

int synth_mmproj_header(struct ox_gguf_writer *w, const ox_synth *s, const char *projector, const char *name, int ffn,
                        int layers, int heads) {
    float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1}; /* the processor only rescales */
    int bad = ox_gguf_w_str(w, "general.architecture", "clip");
    bad |= ox_gguf_w_str(w, "general.type", "mmproj");
    bad |= ox_gguf_w_str(w, "general.name", name);
    bad |= ox_gguf_w_u32(w, "general.file_type", 0);
    bad |= ox_gguf_w_alignment(w, 32);
    bad |= ox_gguf_w_bool(w, "clip.has_vision_encoder", 1);
    bad |= ox_gguf_w_bool(w, "clip.has_audio_encoder", 0);
    bad |= ox_gguf_w_str(w, "clip.projector_type", projector);
    bad |= ox_gguf_w_str(w, "clip.vision.projector_type", projector);
    bad |= ox_gguf_w_u32(w, "clip.vision.image_size", 224);
    bad |= ox_gguf_w_u32(w, "clip.vision.patch_size", (uint32_t)s->v_patch);
    bad |= ox_gguf_w_u32(w, "clip.vision.embedding_length", (uint32_t)s->v_hidden);
    bad |= ox_gguf_w_u32(w, "clip.vision.feed_forward_length", (uint32_t)ffn);
    bad |= ox_gguf_w_u32(w, "clip.vision.block_count", (uint32_t)layers);
    bad |= ox_gguf_w_u32(w, "clip.vision.attention.head_count", (uint32_t)heads);
    bad |= ox_gguf_w_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
    bad |= ox_gguf_w_u32(w, "clip.vision.projection_dim", (uint32_t)s->hidden);
    bad |= ox_gguf_w_u32(w, "clip.vision.projector.scale_factor", (uint32_t)s->v_pool);
    bad |= ox_gguf_w_arr(w, "clip.vision.image_mean", OX_GGUF_F32, mean, 3);
    bad |= ox_gguf_w_arr(w, "clip.vision.image_std", OX_GGUF_F32, std, 3);
    return bad;
}

int ox_synth_write_mmproj(const ox_synth *s, const char *path, ox_err *err) {
    if (s->unified && s->v_hidden > 0 && s->v_layers <= 0) return synth_unified_write_mmproj(s, path, err); /* 12B */
    if (s->v_layers <= 0) return ox_errf(err, OX_E_CONFIG, "synth: --format mmproj needs a vision tower (--vision)");
    vocab v;
    plan p;
    writer_ctx x;
    ox_gguf_writer *w;
    int rc = synth_gguf_begin(s, &v, &p, &x, &w, err);
    if (rc) return rc;
    mm_ctx m = {&x, -1, s->v_patch};
    int bad = synth_mmproj_header(w, s, "gemma4v", "synthetic-gemma4-vision", s->v_ffn, s->v_layers, s->v_heads);
    bad |= ox_gguf_w_bool(w, "clip.use_gelu", 1);
    if (bad) {
        rc = ox_errf(err, OX_E_NOMEM, "synth: %s: cannot add metadata", path);
        goto done;
    }
    if (s->v_hidden != s->v_heads * s->v_head_dim) {
        rc = ox_errf(err, OX_E_CONFIG, "synth: an mmproj needs vision hidden = heads x head dim (llama.cpp derives it)");
        goto done;
    }
    int n = 0;
    for (int i = 0; i < p.n; i++) {
        const ptensor *t = &p.t[i];
        if (t->where != VISION) continue;
        x.t[n] = t;
        x.type[n] = t->type;
        uint64_t P = (uint64_t)s->v_patch, ne[4] = {P, P, 3, t->ne[1]};
        int patch = !strcmp(t->name, "v.patch_embd.weight");
        if (patch) m.patch_index = n, x.type[n] = OX_F32;
        rc = patch ? ox_gguf_w_tensor(w, t->name, OX_F32, 4, ne, NULL, err)
                   : ox_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, NULL, err);
        if (rc) goto done;
        n++;
    }
    rc = ox_gguf_w_write(w, path, mm_fill, &m, err);
done:
    synth_gguf_end(w, &v, &p, &x);
    return rc;
}
