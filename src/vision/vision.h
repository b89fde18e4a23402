/* vision.h — the Gemma 4 vision tower and its multimodal embedder (docs/vision.md): an
 * image in, the soft tokens the decoder takes at the image placeholder positions out.
 *
 *   patchify     HWC [0,1] pixels -> patches of p x p x 3 (row-major patch grid, each patch's
 *                pixels row by row, R,G,B), as the Gemma 4 image processor orders them
 *   embed        W_patch (2 * pixels - 1) + pos_x[col] + pos_y[row]   (factorized table)
 *   encoder      L layers: RMSNorm, Q/K/V (Q, K RMSNorm with scale, V without), 2-D RoPE (the
 *                head's first half turns with the column, the second with the row), full
 *                bidirectional attention with scale 1, O, RMSNorm, residual; RMSNorm, GELU-tanh
 *                gated MLP, RMSNorm, residual; every linear optionally clamped in and out
 *   pool         k x k average over the patch grid, times sqrt(hidden); (x - bias) * scale
 *                when the checkpoint standardizes
 *   embedder     RMSNorm without scale, projection to the text width
 *
 * Weights come from the model's tensor directory (formats/tensors.h), under llama.cpp's
 * mmproj names ("v.blk.0.attn_q.weight", "mm.input_projection.weight"): an mmproj GGUF, or
 * an HF multimodal checkpoint (model.vision_tower.*, model.embed_vision.*; tensors.c maps
 * them). The config from the HF config.json's vision_config, or the mmproj's clip.vision.*
 * keys. Linear weights stay in their stored format (F32 / F16 / BF16 / GGUF quants) or are
 * quantized on load like the decoder's; the matmuls are the CPU kernels', or the tower runs on
 * the GPU backend once attached (ox_vision_gpu_attach). */
#ifndef OX_VISION_H
#define OX_VISION_H

#include <stdint.h>
#include "base/err.h"
#include "formats/tensors.h"
#include "gpu/record.h"
#include "kernels/quant.h"

typedef struct ox_vision_config {
    int hidden, ffn, n_layers, n_heads, n_kv_heads, head_dim;
    int patch;               /* p: pixels per patch side */
    int pool;                /* k: patches per pooled token side */
    int pos_size;            /* rows of each position table */
    int text_hidden;         /* the embedder's output width */
    int default_soft_tokens; /* the processor's max_soft_tokens default */
    int standardize;         /* std_bias / std_scale present */
    int clipped;             /* clamped linears (use_clipped_linears) */
    float eps, rope_theta;
} ox_vision_config;

/* The vision config of the model files: 1 and *vc filled when they hold a vision tower,
 * 0 when they hold none, < 0 on a malformed one (the file and key named). */
int ox_vision_config_read(const ox_model_files *mf, ox_vision_config *vc, ox_err *err);

typedef struct ox_vision ox_vision;

/* Load the tower from the model files (NULL on error; a config without the weights is
 * OX_E_MISSING naming the tensor). quant: 0 keeps the stored types; else the type
 * bf16/f16/f32 linear weights are quantized to on load (OX_Q8_0, OX_Q4_0, OX_BF16), rows
 * whose length the type does not divide staying f32. */
ox_vision *ox_vision_load(const ox_model_files *mf, ox_type quant, ox_err *err);
void ox_vision_free(ox_vision *v);
/* What ox_vision_load(mf, quant) will hold (bytes, = ox_vision_bytes after the load) and about
 * how many bytes it reads (reads may be NULL), from the headers alone: 1, 0 without a tower,
 * < 0 on a malformed one. */
int ox_vision_estimate(const ox_model_files *mf, ox_type quant, uint64_t *bytes, uint64_t *reads, ox_err *err);
const ox_vision_config *ox_vision_cfg(const ox_vision *v);
uint64_t ox_vision_bytes(const ox_vision *v); /* resident weight bytes */

/* The processor's largest soft-token budget (its max_soft_tokens choices end there). */
#define OX_VISION_MAX_SOFT_TOKENS 1120

/* The most patches one image may have: OX_VISION_MAX_SOFT_TOKENS * k^2 (the default budget,
 * default_soft_tokens, is the caller's choice below it); an image's sides must also stay
 * within the position table. */
int ox_vision_max_patches(const ox_vision *v);

/* Soft tokens of one image: rgb holds height * width * 3 floats (HWC, [0,1]); height and width
 * positive multiples of p*k, (height/p) * (width/p) <= ox_vision_max_patches. Writes n =
 * (height/p) * (width/p) / k^2 rows of text_hidden floats to out (the pooled grid row by row)
 * and returns n. Errors: RANGE (sizes not multiples of p*k, too many patches, n > max_tokens),
 * NOMEM. */
int ox_vision_embed(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err);

/* The same, stopping after the pooler (and standardization): n rows of `hidden` floats. */
int ox_vision_encode(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err);

/* The GPU backend (gpu/record.h): the tower's weights registered in g (the decoder's recorder,
 * model/gpu_attach.h; those of a type without GPU kernels stay out and their linears run on the
 * CPU inside the step), and from then on ox_vision_embed / ox_vision_encode record their ops
 * into one step on g (the image's activations in regions of their own). The weights stay
 * resident in wasm memory: ox_vision_gpu_detach (before g is freed) puts the tower back on the
 * CPU at once. gemma4_unified's embedder stays on the CPU (0, nothing registered). */
int ox_vision_gpu_attach(ox_vision *v, ox_gpu *g, ox_err *err);
void ox_vision_gpu_detach(ox_vision *v);
int ox_vision_gpu_on(const ox_vision *v);
/* Bytes of weights ox_vision_gpu_attach registers when every matrix type has a GPU kernel
 * (ox_vision_estimate's, less the host-side records): 1, 0 without a tower (or one that stays
 * on the CPU), < 0 on a malformed one. */
int ox_vision_gpu_estimate(const ox_model_files *mf, ox_type quant, uint64_t *bytes, ox_err *err);

#endif
