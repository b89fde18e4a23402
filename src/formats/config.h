/* config.h — Gemma 4 text config, from HF config.json (text_config) or GGUF gemma4.* keys,
 * with every per-layer value derived once at load (docs/gemma4.md §1.2).
 * Validation turns inconsistent configs into OX_E_CONFIG errors, never crashes. */
#ifndef OX_CONFIG_H
#define OX_CONFIG_H

#include <stdint.h>
#include "base/err.h"

#define OX_MAX_LAYERS 512

typedef struct ox_layer_cfg {
    int full;        /* 1 = full attention, 0 = sliding */
    int head_dim;    /* hd[l] */
    int n_kv_heads;  /* nkv[l] */
    int k_eq_v;      /* no v_proj: V from the raw K projection */
    int shared;      /* KV-shared: reads kv_src's cache, computes no K/V */
    int kv_src;      /* layer whose cache this layer reads (itself if !shared) */
    int ffn;         /* I[l] (dense branch width) */
    int window;      /* sliding window W; 0 = unlimited (full layers) */
    float rope_base; /* theta */
    int rope_pairs;  /* rotated pairs: hd/2 sliding; floor(partial*hd/2) on full layers */
} ox_layer_cfg;

typedef struct ox_config {
    int vocab, hidden, n_layers, n_heads;
    int n_kv_heads;        /* sliding layers (and full ones unless k_eq_v) */
    int n_global_kv_heads; /* full layers when k_eq_v; 0 if unset */
    int head_dim, global_head_dim;
    int intermediate; /* base I (MoE model: the dense branch) */
    int sliding_window;
    int ple_dim; /* P, 0 = no PLE */
    int ple_vocab;
    int n_kv_shared;
    int k_eq_v, double_wide;
    int moe, n_experts, top_k_experts, moe_ffn;
    int bidirectional; /* 0 causal; 1 "all" (embedding / encoder mode) */
    int unified;       /* HF gemma4_unified (Gemma 4 12B): same decoder, strict config (§6) */
    int bidir_vision;  /* "vision": a run of soft (image) tokens attends within itself on sliding
                          layers (docs/vision.md); GGUF has no key: set for the k_eq_v / MoE
                          shapes (26B-A4B, 31B), whose configs say "vision" */
    int ctx_max;       /* max_position_embeddings */
    float rms_eps, rope_base_full, rope_base_sliding, partial_rotary, rope_factor, softcap;
    int bos_id, eos_id, pad_id;
    int n_eos;
    int eos_ids[8];      /* stop ids (e.g. 1, 106, 50) */
    int assistant;       /* a gemma4-assistant MTP drafter (GGUF arch): every layer queries only */
    int backbone_hidden; /* drafter: its target's hidden size (embedding_length_out) */
    ox_layer_cfg layers[OX_MAX_LAYERS];
} ox_config;

struct ox_json; /* json.h */
struct ox_gguf; /* gguf.h */

/* From an HF config.json document (top level or its text_config). */
int ox_config_from_json(const struct ox_json *doc, ox_config *c, const char *fname, ox_err *err);
/* From GGUF metadata (arch "gemma4"); partial_rotary from the rope_freqs tensor if present. */
int ox_config_from_gguf(const struct ox_gguf *g, ox_config *c, ox_err *err);
/* Fill layers[] from the base fields and validate; called by both loaders. Exposed for tests
 * (real E2B/E4B/26B-A4B/31B shapes). Layer types must already be in layers[].full. */
int ox_config_derive(ox_config *c, const char *fname, ox_err *err);

/* Added by the formats helper: */
struct ox_strbuf; /* json.h */
/* Add stop ids from an eos_token_id value (integer or integer array; duplicates skipped,
 * at most 8); used for config.json and generation_config.json. 0, or -1 if malformed. */
int ox_config_add_eos(ox_config *c, const struct ox_json *v);
/* The config as an HF-style text config JSON object (what ox_config_from_json reads back to
 * the same per-layer values). Used for the `oxinfer_config` metadata of quantized files. */
int ox_config_to_json(const ox_config *c, struct ox_strbuf *b);

/* gemma4_unified (Gemma 4 12B, docs/gemma4.md §6), config_unified.c; used by ox_config_from_json. */
/* 1 if config.json describes a gemma4_unified model (model_type, text model_type or
 * architectures). */
int ox_config_is_unified(const struct ox_json *doc, const struct ox_json *tc);
/* The reference's strict typing (floats written as floats, ints as ints) and no PLE / experts. */
int ox_config_unified_check(const struct ox_json *doc, const struct ox_json *tc, const char *fname, ox_err *err);
/* text_config.per_layer_config ({"5": {"head_dim": 512, "num_key_value_heads": 1}, ...}) folded
 * into global_head_dim / n_global_kv_heads (it replaces them, as in the reference); one shape per
 * layer type. Without it, a unified k_eq_v model lacking num_global_key_value_heads keeps
 * num_key_value_heads on full layers. Needs layers[].full; runs before ox_config_derive. */
int ox_config_per_layer(const struct ox_json *tc, ox_config *c, int unified, const char *fname, ox_err *err);

#endif
