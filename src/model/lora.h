/* lora.h — runtime LoRA adapters: loaded next to a model, attached, rescaled and detached
 * without touching the base weights (docs/lora.md).
 *
 * An adapter holds, per patched linear W [out][in] of a layer, A [r][in] and B [out][r] in
 * f32 and a scale; while attached with scale s the forward pass adds, after W x,
 *     y += s * scale * B (A x)
 * which equals running the merged weights W + s * scale * B A. scale is the format's:
 * llama.cpp GGUF adapters alpha / r (1 when adapter.lora.alpha is absent or 0, as llama.cpp),
 * PEFT lora_alpha / r (use_rslora: lora_alpha / sqrt(r)), r the module's own rank.
 *
 * Files (host handles, read only while loading):
 *   - one GGUF with general.type = "adapter", adapter.type = "lora", general.architecture
 *     "gemma4", tensors "<base name>.lora_a" (ggml ne [in, r]) and ".lora_b" (ne [r, out]);
 *   - PEFT: adapter_config.json (r, lora_alpha, use_rslora, target_modules) and
 *     adapter_model.safetensors ("base_model.model.<HF module>.lora_A.weight" [r, in],
 *     ".lora_B.weight" [out, r]), HF names mapped as the model's own (formats/tensors.h).
 * Targets: attn_q/k/v/output, ffn_gate/up/down, and the PLE inp_gate/proj of every layer.
 * A module of a projection the model does not run (k/v of a KV-shared layer) is skipped;
 * any other name, shape or type that does not fit the model is an error naming the file and
 * the tensor. Weights of any type the engine reads (F32, F16, BF16, Q8_0, ...) become f32. */
#ifndef OX_LORA_H
#define OX_LORA_H

#include "model/model.h"

#define OX_LORA_MAX 8 /* adapters attached at once */

typedef enum {
    OX_LORA_Q,
    OX_LORA_K,
    OX_LORA_V,
    OX_LORA_O,
    OX_LORA_GATE,
    OX_LORA_UP,
    OX_LORA_DOWN,
    OX_LORA_PLE_GATE,
    OX_LORA_PLE_PROJ,
    OX_LORA_N_TARGETS
} ox_lora_target;

/* The GGUF name of a target's weight ("attn_q.weight", ...). */
const char *ox_lora_target_name(ox_lora_target t);

typedef struct ox_lora ox_lora;

/* Load an adapter for model m from n_files host handles (one GGUF, or the PEFT pair in any
 * order). Errors: FORMAT (not an adapter, a lora_a without its lora_b, bad config), CONFIG
 * (shapes disagree with the model), UNSUPPORTED (a target the engine has no hook for, DoRA,
 * per-module alphas, another architecture), TRUNCATED / IO, NOMEM. */
ox_lora *ox_lora_load(const ox_model *m, const int *files, int n_files, ox_err *err);
/* Free an adapter; detach it first (ox_model_set_lora) if it is attached. */
void ox_lora_free(ox_lora *a);
int ox_lora_modules(const ox_lora *a); /* patched linears */
int ox_lora_skipped(const ox_lora *a); /* modules of projections the model does not run */
int ox_lora_rank_max(const ox_lora *a);
uint64_t ox_lora_bytes(const ox_lora *a); /* f32 weights held */

/* Attach exactly these n adapters (0 detaches all) with scales[i] (any finite value; 0 turns
 * one off). The adapters must have been loaded for m and stay alive while attached. On error
 * (RANGE: n > OX_LORA_MAX or a scale not finite; STATE: an adapter of another model) the
 * attached set is unchanged. KV caches of existing sessions hold keys and values computed
 * with the previous set: truncate them for outputs equal to the merged model's. */
int ox_model_set_lora(ox_model *m, ox_lora *const *adapters, const float *scales, int n, ox_err *err);

/* The forward pass's hook, after the base matmul of targets t[0..nt) of layer l over n input
 * rows x [n][in]: ys[i][n][out] += the attached adapters' deltas. z: scratch of n * the largest
 * attached rank floats (ox_lora_scratch). No-op without adapters. */
void ox_lora_add(const ox_model *m, int l, const ox_lora_target *t, int nt, const float *x, int n, float *const *ys,
                 float *z);
/* Floats of z the hook needs per input row (0 without adapters). */
int ox_lora_scratch(const ox_model *m);

#endif
