/* tensors.h — one tensor directory over every file of a model (GGUF splits, safetensors
 * shards + index, pre-quantized safetensors) with one internal naming: GGUF's
 * ("token_embd.weight", "blk.3.attn_q.weight", "per_layer_token_embd.weight", ...).
 * HF names with prefixes "model.language_model.", "model." or none are mapped to it (MLX
 * quantized triples NAME.weight/.scales/.biases become one tensor, formats/mlx.h);
 * the vision tower and its embedder get llama.cpp's mmproj names (vision_names.c), the
 * audio tower is ignored. An mmproj GGUF (general.architecture "clip") given beside the
 * text model's GGUF adds its tensors ("v.*", "mm.*") and is kept apart (ox_files_mmproj).
 *
 * A model is given as a set of host-file handles; each is sniffed by content (GGUF magic,
 * safetensors header) or by name (config.json, tokenizer.json, tokenizer_config.json,
 * model.safetensors.index.json, chat_template.jinja). */
#ifndef OX_TENSORS_H
#define OX_TENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "kernels/quant.h"
#include "formats/config.h"

typedef struct ox_tensor {
    char *name;   /* internal (GGUF-style) name */
    ox_type type; /* in-memory format rows are delivered in (see ox_tensor_read_rows) */
    int n_dims;
    uint64_t ne[4];  /* ggml order: ne[0] = row length (innermost), ne[1] = rows, ... */
    int file;        /* host file holding the data */
    uint64_t offset; /* absolute offset of the data in `file` */
    uint64_t nbytes; /* bytes in the file */
    /* pre-quantized safetensors (values and scales stored apart): */
    int scale_file; /* -1 if not split */
    uint64_t scale_offset;
    /* MLX affine (formats/mlx.h): packed values at file/offset, scales at scale_file/
     * scale_offset, biases at bias_file/bias_offset; rows repacked to `type` when read */
    int mlx_bits, mlx_group; /* bits 0: not MLX */
    int mlx_dtype;           /* ox_st_dtype of the scales and biases */
    int bias_file;
    uint64_t bias_offset;
} ox_tensor;

typedef struct ox_model_files ox_model_files;

/* Open a model from host-file handles (names from ox_host_name). Parses every header,
 * builds the directory and the config, checks every tensor lies within its file.
 * Errors name the file and the problem. */
ox_model_files *ox_files_open(const int *files, int n_files, ox_err *err);
void ox_files_free(ox_model_files *mf);

const ox_config *ox_files_config(const ox_model_files *mf);
int ox_files_count(const ox_model_files *mf);
const ox_tensor *ox_files_tensor(const ox_model_files *mf, int i);
/* Lookup by internal name; NULL if absent. */
const ox_tensor *ox_files_find(const ox_model_files *mf, const char *name);
/* Same, but a missing tensor is OX_E_MISSING naming it and the model files. */
const ox_tensor *ox_files_require(const ox_model_files *mf, const char *name, ox_err *err);

/* Rows of a tensor, as ne[0] * nrows elements of t->type (block-interleaved bytes as ggml
 * lays them out), read through the host interface; split values+scales are repacked.
 * dst must hold nrows * row_bytes. */
int ox_tensor_read_rows(const ox_tensor *t, uint64_t row0, uint64_t nrows, void *dst, ox_err *err);

/* Metadata the tokenizer and the chat template need: the GGUF (NULL if none), and the
 * handles of tokenizer.json / tokenizer_config.json / chat_template.jinja (-1 if absent). */
struct ox_gguf;
const struct ox_gguf *ox_files_gguf(const ox_model_files *mf);
int ox_files_aux(const ox_model_files *mf, const char *basename); /* e.g. "tokenizer.json" */
/* Precision recorded by a pre-quantized safetensors file ("q8"/"q4"), or NULL. */
const char *ox_files_stored_quant(const ox_model_files *mf);
/* The MLX quantization block of config.json ("bits 4, group 64"), or NULL if none. */
const char *ox_files_mlx(const ox_model_files *mf);

/* Added by the formats helper: */
/* Rows of a tensor (ne[1] * ne[2] * ne[3]). */
uint64_t ox_tensor_rows(const ox_tensor *t);
/* "a.gguf, config.json, ..." — the files, for messages. */
const char *ox_files_describe(const ox_model_files *mf);
/* HF name -> internal name into out (prefixes model.language_model. / model. / none).
 * 0 = mapped (names already internal, and unknown names, are kept minus the prefix),
 * 1 = not a text-decoder tensor (vision/audio towers: skip), -1 = out too small. */
int ox_map_hf_name(const char *hf, char *out, size_t cap);

/* Added for the vision tower (vision_names.c): an HF vision-tower or embed_vision name ->
 * llama.cpp's mmproj name ("model.vision_tower.encoder.layers.3.self_attn.q_proj.linear.weight"
 * -> "v.blk.3.attn_q.weight"). 0 = mapped, 1 = not a vision tensor, -1 = out too small. */
int ox_map_hf_vision_name(const char *hf, char *out, size_t cap);
/* Gemma 4 12B's (gemma4_unified) image embedder, model.vision_embedder.{patch_ln1, patch_dense,
 * patch_ln2, pos_embedding, pos_norm} as the released checkpoint stores it (or under
 * model.embed_vision., transformers' module names): 0 mapped, 1 not one of them, -1 too long
 * (unified_names.c). */
int ox_map_hf_unified_name(const char *hf, char *out, size_t cap);
/* The mmproj GGUF among the files, or NULL. */
const struct ox_gguf *ox_files_mmproj(const ox_model_files *mf);

#endif
