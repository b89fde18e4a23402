/* model.h — the Gemma 4 text decoder: load, sessions (KV caches), forward.
 *
 * Load copies every linear weight into memory in its stored format (or quantizes on load
 * for bf16/f16/f32 checkpoints), norms as f32. The PLE table (per_layer_token_embd) is
 * never loaded: its rows are read through the host interface per forward call, one read
 * per needed row, on the calling thread. With tables_on_host the token-embedding lookups
 * go to the host too (the tied LM head still needs the table resident). With stream, the
 * chosen linear weights stay on the host and are read per use into a bounded cache. */
#ifndef OX_MODEL_H
#define OX_MODEL_H

#include <stdint.h>
#include "base/err.h"
#include "formats/config.h"
#include "formats/tensors.h"
#include "model/kv.h"

/* X(NAME, id, js name): what load does with bf16/f16/f32 linear weights (GGUF quant types
 * stay as stored). The JS option loadModel({quant}) takes the js names (js/shared/abi.js). */
#define OX_QUANTS(X)                                                                                                   \
    X(STORED, 0, "stored") /* as stored */                                                                             \
    X(BF16, 1, "bf16")     /* f32 -> bf16 */                                                                           \
    X(Q8, 2, "q8")         /* -> Q8_0 */                                                                               \
    X(Q4, 3, "q4")         /* -> Q4_0 (token_embd, per_layer_model_proj: Q8_0) */
#define OX_QUANT_ENUM_(name, id, js) OX_QUANT_##name = id,
typedef enum { OX_QUANTS(OX_QUANT_ENUM_) } ox_quant;
#undef OX_QUANT_ENUM_

/* Return nonzero from progress to abort the load (OX_E_ABORTED). */
typedef int (*ox_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* X(NAME, id, js name): which linear weights stay on the host and are read per use into the
 * weight cache (model/weights_cache.h). The JS option loadModel({streamWeights}) takes the js names. */
#define OX_STREAMS(X)                                                                                                  \
    X(NONE, 0, "none")       /* every weight resident */                                                               \
    X(EXPERTS, 1, "experts") /* the routed experts of MoE layers */                                                    \
    X(ALL, 2, "all")         /* every linear weight of the layers (token_embd, the PLE           \
                                projection and the routers stay resident) */
#define OX_STREAM_ENUM_(name, id, js) OX_STREAM_##name = id,
typedef enum { OX_STREAMS(OX_STREAM_ENUM_) } ox_stream;
#undef OX_STREAM_ENUM_

/* Rows [row0, row0 + rows) of the weight `entry` (OX_GPU_ENTRY_WORDS words of gpu/record.h;
 * its pointer word is 0) in their stored block layout; 0, or a negative OX_E_* with err. */
typedef int (*ox_gpu_put_fn)(void *ud, const int32_t *entry, uint64_t row0, uint64_t rows, const void *bytes,
                             ox_err *err);

typedef struct ox_load_opts {
    ox_quant quant;        /* for bf16/f16/f32 checkpoints; GGUF quant types stay as stored */
    int tables_on_host;    /* token-embedding lookups read from the host too */
    uint64_t max_resident; /* 0 = no limit; else fail before allocating, saying how much is needed */
    ox_progress_fn progress;
    void *progress_ud;
    ox_stream stream;      /* weights left on the host; they must be stored in the format they run in */
    uint64_t weight_cache; /* bytes for streamed weights (cache + transit), >= one layer's */
    int drafter;           /* the files must be a gemma4-assistant MTP drafter (drafter_mtp.h), and
                                  without it must not be one */
    /* Upload to the GPU while loading (model/gpu_attach.h): set, and the model can run there
     * whole (no MoE, nothing streamed, causal, every matrix type in gpu_types), its matrices
     * go to gpu_put chunk by chunk as they are read and never stay resident; the model comes
     * out attached. Else it loads as without. tables_on_host < 0 then means: 1 when they go. */
    ox_gpu_put_fn gpu_put;
    void *gpu_put_ud;
    uint64_t gpu_types; /* bit t: the GPU has a kernel for matrices of ggml type t */
} ox_load_opts;

typedef struct ox_model ox_model;
typedef struct ox_session ox_session;

ox_model *ox_model_load(ox_model_files *mf, const ox_load_opts *opts, ox_err *err); /* takes mf */
void ox_model_free(ox_model *m);
const ox_config *ox_model_config(const ox_model *m);
const ox_model_files *ox_model_files_of(const ox_model *m);

typedef struct ox_model_stats {
    uint64_t resident_bytes;  /* weights + caches held in memory */
    uint64_t host_bytes_read; /* table rows read through the host after load */
    uint64_t rows_fetched;
    uint64_t stream_bytes; /* streamed weights read through the host (cache misses) */
    uint64_t stream_hits, stream_misses;
} ox_model_stats;
void ox_model_stats_get(const ox_model *m, ox_model_stats *st);

/* Sessions: KV caches per own-KV layer, grown with use (not preallocated to ctx_max), in
 * kv_type (model/kv.h; ox_session_new: OX_KV_DEFAULT). Sliding-window layers keep a ring of
 * the window, so a truncation or prefix reuse can only go back within what it holds. */
ox_session *ox_session_new(ox_model *m, int max_ctx, ox_err *err);
ox_session *ox_session_new_kv(ox_model *m, int max_ctx, ox_kv_type kv_type, ox_err *err);
ox_kv_type ox_session_kv_type(const ox_session *s);
void ox_session_free(ox_session *s);
int ox_session_pos(const ox_session *s);
int ox_session_max_ctx(const ox_session *s);
const ox_model *ox_session_model(const ox_session *s);
/* The pos tokens in the caches, in order (-1 where a soft embedding went in); NULL when empty.
 * Valid until the next forward. */
const int32_t *ox_session_tokens(const ox_session *s);
/* Rewind to pos <= current; OX_E_STATE if the sliding-window rings no longer hold the window
 * before pos (0 always works). */
int ox_session_truncate(ox_session *s, int pos, ox_err *err);
/* Keep the longest common prefix of the session's tokens and tokens[0, n), never the last
 * token (its logits are needed): truncate to it and return its length (n >= 1); 0 when the
 * rings no longer hold the window before it (the prefix is run again). */
int ox_session_reuse(ox_session *s, const int32_t *tokens, int n, ox_err *err);
/* The same for a prompt with soft tokens (ox_forward_io's soft and soft_mask over n): a soft
 * position is kept where the session took a bitwise-equal row there (by a 64-bit hash of the
 * row); on bidir_vision models never part of a run of them (the prefix ends before the run). */
int ox_session_reuse_soft(ox_session *s, const int32_t *tokens, int n, const float *soft, const uint8_t *soft_mask,
                          ox_err *err);
ox_session *ox_session_clone(const ox_session *s, ox_err *err); /* caches and tokens */
void ox_session_reset(ox_session *s);

/* Run n >= 1 tokens at the session's position and append them to its caches.
 * soft: optional n x hidden embeddings; where soft_mask[i] != 0 token i takes soft[i]
 * (not scaled by sqrt(H)) and the pad token's PLE row.
 * logits: NULL, or vocab floats (last token) or n * vocab (all_logits).
 * hidden: NULL, or n * hidden floats of final-normed hidden states.
 * On error the session is left at its previous position. */
typedef struct ox_forward_io {
    const int32_t *tokens;
    int n;
    const float *soft;
    const uint8_t *soft_mask;
    float *logits;
    int all_logits;
    float *hidden;
} ox_forward_io;
int ox_forward(ox_session *s, const ox_forward_io *io, ox_err *err);

#endif
