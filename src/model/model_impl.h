/* model_impl.h — what the model layer's files share (load.c, session.c, forward.c, estimate.c,
 * drafter_mtp.c, and lora*.c through lora_impl.h): the weights of a loaded model and the state
 * of a session. Not part of the API (model.h is); no other layer includes it. */
#ifndef OX_MODEL_IMPL_H
#define OX_MODEL_IMPL_H

#include "model/model.h"
#include "kernels/kernels.h"
#include "model/kv.h"
#include "model/lora.h"
#include "model/weights_cache.h"
#include "gpu/record.h"

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* A matrix left on the host (load option stream): *M has type and shape, data NULL except
 * while a forward uses it. experts > 0: a stacked expert tensor, fetched one expert's block
 * (rows / experts rows) at a time; 0: a dense matrix, fetched whole with its layer. */
typedef struct host_mat {
    ox_matrix *M;
    const ox_tensor *t;
    int experts;
} host_mat;
#define OX_HOST_MATS 12 /* per layer at most: q k v o gate up down ple_gate ple_proj + 3 expert tensors */

/* One layer's weights (docs/gemma4.md §3.2 for the names); vectors as f32, matrices as stored
 * or converted on load. */
typedef struct layer_w {
    float *attn_norm, *q_norm, *k_norm, *post_attn_norm, *ffn_norm, *post_ffw_norm;
    float *ple_post_norm;
    float *post_ffw_norm_1, *pre_ffw_norm_2, *post_ffw_norm_2, *router_scale, *expert_scale;
    float out_scale;
    ox_matrix q, k, v, o, gate, up, down, ple_gate, ple_proj;
    ox_matrix router, exp_gate_up, exp_down; /* experts: E blocks of rows stacked */
    ox_matrix exp_gate, exp_up;              /* the split form (older GGUFs) instead of exp_gate_up */
    host_mat host[OX_HOST_MATS];             /* its matrices left on the host, in load order */
    int n_host;
} layer_w;

struct ox_model {
    ox_model_files *mf;
    ox_config c;
    ox_load_opts opts;
    ox_matrix embd, ple_model_proj;
    ox_matrix nextn_pre, nextn_post; /* MTP drafter: [x | h] -> hidden, hidden -> target width */
    float *out_norm, *ple_proj_norm;
    const ox_tensor *t_embd, *t_ple;
    size_t embd_row_bytes, ple_row_bytes; /* rows as stored in the file */
    layer_w *L;
    void **allocs; /* every weight allocation, freed together */
    int n_allocs, cap_allocs;
    uint64_t weight_bytes, cache_bytes, host_bytes, rows_fetched;
    ox_wcache *wc; /* streamed weights (NULL: everything resident) */
    struct {
        const ox_lora *a;
        float scale;
    } lora[OX_LORA_MAX]; /* attached adapters (lora.c) */
    int n_lora;
    ox_gpu *gpu;    /* the GPU backend the forward records into (model/gpu_attach.h), or NULL */
    int gpu_only;   /* its matrices left wasm memory for the GPU (ox_model_gpu_release) */
    int gpu_layers; /* attached: the first layers run on the GPU, the rest and the head on the CPU (n_layers: all) */
};

/* The cache key of block e (0 for a dense matrix) of layer l's host matrix i. */
static inline int ox_wcache_key(const ox_model *m, int l, int i, int e) {
    int E = m->c.moe && m->c.n_experts > 0 ? m->c.n_experts : 1;
    return (l * OX_HOST_MATS + i) * E + e;
}

struct ox_session {
    ox_model *m;
    int max_ctx, pos;
    ox_kv_type kv_type;
    int rings;         /* sliding layers keep a ring of the window (else every position) */
    ox_kv *kv;         /* per layer (model/kv.h); used only where !shared */
    int32_t *toks;     /* [pos] the tokens in the caches, -1 where a soft embedding went in */
    uint64_t *soft_id; /* [pos] where toks is -1: ox_soft_row_id of the row that went in */
    int toks_cap;      /* of both */
    ox_scratch ws, act;
};

/* A soft row's identity in the session: a 64-bit hash of its hidden floats' bits, so that a
 * prefix reuse keeps a soft position only where the prompt brings the same row again. */
uint64_t ox_soft_row_id(const float *row, int hidden);

/* What the loader's dry pass adds up (load.c), for the memory estimate (estimate.c). */
typedef struct ox_weight_sums {
    uint64_t resident;         /* weight bytes load allocates */
    uint64_t file_bytes;       /* bytes load reads */
    uint64_t host_table_bytes; /* the tables whose rows stay on the host (PLE) */
    size_t matmul_ws;          /* the largest matmul scratch at the ws_tokens asked for */
    size_t embd_row_bytes, ple_row_bytes;
    uint64_t matrix_bytes, embd_bytes; /* of resident: the matrices (what goes to the GPU), the token embedding */
    uint64_t mat_types;                /* bit t for each ggml type a resident matrix has */
} ox_weight_sums;
int ox_model_dry_walk(const ox_model_files *mf, const ox_load_opts *opts, int ws_tokens, ox_weight_sums *out,
                      ox_err *err);

/* The activation scratch one forward call of n tokens over kv_len keys carves (forward.c);
 * stage: the largest stored table row, tasks: the pool's threads. */
size_t ox_forward_scratch_bytes(const ox_config *c, size_t stage, int tasks, int n, int kv_len);

/* ox_session_new_kv with rings = 0: sliding layers keep every position (tests compare). */
ox_session *ox_session_new_rings(ox_model *m, int max_ctx, ox_kv_type kv_type, int rings, ox_err *err);

/* Grow the session's token list and every own-KV cache to hold `need` positions (a ring: the
 * last of them it keeps). */
int ox_session_reserve(ox_session *s, int need, ox_err *err);

#endif
