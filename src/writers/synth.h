/* synth.h — synthetic Gemma 4 text models (random weights, made-up BPE vocab) for the tests,
 * the demo and the benchmarks, written as GGUF or as an HF checkpoint directory.
 *
 * Each tensor's values depend only on (seed, tensor name): row r of a tensor comes from its
 * own generator keyed by (seed, GGUF name, r), whatever the type or format, so a Q8_0 GGUF
 * is exactly the Q8_0 quantization of the F32 GGUF and the HF checkpoint holds the same
 * weights. Tensors are generated and written one chunk of rows at a time (the e2b preset is
 * several GB): nothing holds the whole model.
 *
 * Knobs that make a random model less chaotic (for correctness fixtures): std (weights),
 * branch_gain (mean of the post-branch norm weights: the residual dominates), qk_norm_scale
 * (softer attention). */
#ifndef OX_SYNTH_H
#define OX_SYNTH_H

#include <stdint.h>
#include "base/err.h"
#include "kernels/quant.h"

typedef struct ox_synth {
    int hidden, layers, heads, kv_heads, head_dim, global_head_dim;
    int ffn, double_wide;   /* intermediate size; doubled on KV-shared layers if double_wide */
    int ple;                /* per-layer embedding width P, 0 = none */
    int vocab, user_tokens; /* trailing USER_DEFINED <unusedN> block */
    int swa_period;         /* layer l is full attention when l % period == period - 1 */
    int kv_shared, window, ctx;
    int k_eq_v, global_kv_heads; /* full layers: no attn_v, global_kv_heads KV heads */
    int moe, n_experts, top_k, moe_ffn;
    int bidirectional;   /* HF config use_bidirectional_attention: 1 "all", 2 "vision" (GGUF: no key) */
    int unified;         /* HF: a gemma4_unified (Gemma 4 12B) checkpoint: its config.json, with
                            per_layer_config instead of global_head_dim / num_global_key_value_heads
                            (GGUF: llama.cpp writes the 12B as gemma4, so no difference); with
                            v_hidden > 0 (and v_layers 0) the HF checkpoint also holds its image
                            embedder (model.vision_embedder.*: width v_hidden, v_pos table rows,
                            v_patch * v_pool pixel patches; synth_unified.c) */
    int all_byte_tokens; /* type <0x80>..<0xFF> BYTE too (default UNUSED, see synth.c) */
    int chat_tokens;     /* Gemma 4's tool and thinking control tokens, before the user block */
    float rope_base, rope_base_swa, partial_rotary, softcap, eps;
    float std, branch_gain, qk_norm_scale;
    uint32_t seed;
    ox_type type;           /* 2-D weights (norms, scales, router stay F32) */
    ox_type embd_type;      /* token_embd */
    ox_type ple_type;       /* per_layer_token_embd (read per row, never quantized on load) */
    ox_type ple_proj_type;  /* per_layer_model_proj (q4 on load keeps it and token_embd Q8_0) */
    int bf16_values;        /* round every value to bf16 precision first (so an F32/quantized
                                  GGUF matches a bf16 HF checkpoint, norms included) */
    const char *values_dir; /* trained weights instead of generated ones: <dir>/<GGUF name>.f32,
                                  each the tensor's raw little-endian f32 values, rows in order
                                  (rope_freqs still comes from the config) */
    const char *vocab_path; /* a trained vocab instead of the made-up one (format: synth.c,
                                  read_vocab); its token count must equal vocab */
    int assistant_of;       /* > 0: a gemma4-assistant (MTP drafter) for a target of this hidden
                                  size: queries only, no PLE, no KV sharing (synth.c, drafter plan) */
    int agree;              /* drafter: the pre-projection passes the target's token embedding
                                  through, so with the target's seed it predicts what a target
                                  whose residual stays near its input embedding predicts */
    int by_name;            /* GGUF: tensor data in name order (llama-quantize's is its own, HF
                                  checkpoints sort by name), not the order the loader walks them */
    const char *widen;      /* a trained GGUF to widen (ox_synth_widen_base): its weights and
                                  vocab, zero-padded to hidden/ffn, and layers past its own that
                                  add nothing to the residual */
    /* the vision tower (v_layers 0: none): in the HF checkpoint (model.vision_tower.*,
     * model.embed_vision.*, config.json's vision_config), or as llama.cpp's mmproj GGUF */
    int v_hidden, v_layers, v_heads, v_head_dim, v_ffn, v_patch, v_pool, v_pos;
    int v_standardize, v_clipped; /* std_bias / std_scale; clamped linears (bounds generated) */
} ox_synth;

/* Presets: tiny, benchlike, bench, e2b, moe, keqv, unified. Sets every field (type F32). */
int ox_synth_preset(ox_synth *s, const char *name, ox_err *err);
/* A model that computes what the trained GGUF `src` computes but reads far more weights per
 * token: a bench model where speculative drafts are accepted as on trained text and a decode
 * step streams real-sized matrices. Sets s to the tiny preset with src's shapes and
 * s->widen = src; then raise hidden, ffn and layers. At write time:
 *   - src's weights fill the top-left corner of each matrix, zeros elsewhere (padded hidden
 *     channels stay exactly 0 through every layer; padded FFN units have zero gate and up rows);
 *   - RMSNorm over the wider hidden sees mean(x^2) scaled by d/D: eps is scaled by d/D and the
 *     hidden-wide norm weights by sqrt(d/D), so every norm gives src's values; the embedding
 *     is scaled by sqrt(d/D) too (its sqrt(D) input scale then gives src's sqrt(d)), which the
 *     final norm's sqrt(D/d) undoes in the tied head;
 *   - the extra layers have random weights but zero post-attention and post-FFN norm weights
 *     and a layer scale of 1: they add exactly 0 to the residual.
 * src must be a gemma4 GGUF without PLE, experts, KV sharing or k_eq_v (the trained demo
 * model is one). Logits match src's to float rounding (tests/c/test_model.c). */
int ox_synth_widen_base(ox_synth *s, const char *src, ox_err *err);
/* Check the shapes are consistent (and loadable by llama.cpp's KV-sharing rule). */
int ox_synth_check(const ox_synth *s, ox_err *err);
/* Parameter count (all tensors) and bytes the GGUF's tensor data takes. */
uint64_t ox_synth_params(const ox_synth *s);

/* A gemma4-assistant s (assistant_of > 0) writes a drafter GGUF as llama.cpp's converter does. */
int ox_synth_write_gguf(const ox_synth *s, const char *path, ox_err *err);
/* HF checkpoint dir (must exist): config.json, tokenizer.json, model.safetensors (or n_shards
 * model-0000i-of-0000n.safetensors + model.safetensors.index.json). dtype OX_F32 or OX_BF16. */
int ox_synth_write_hf(const ox_synth *s, const char *dir, ox_type dtype, int n_shards, ox_err *err);

/* Vision presets (synth_vision.c): "tiny" (hidden 64, 2 layers, patch 16, pooling 3) and "e2b"
 * (Gemma 4 E2B's tower: hidden 768, 16 layers); "none" removes the tower. */
int ox_synth_vision_preset(ox_synth *s, const char *name, ox_err *err);
/* llama.cpp's mmproj GGUF of s's vision tower (projector gemma4v, the converter's names and
 * layouts: the patch embedding as a [hidden][3][p][p] kernel). Linear weights in s->type where
 * the row length allows it, else F32; tables, norms and clamp bounds F32. */
int ox_synth_write_mmproj(const ox_synth *s, const char *path, ox_err *err);

/* Type by name ("f32", "q8_0", "q4_k", ...), or -1. */
int ox_synth_type_from_name(const char *name);

#endif
