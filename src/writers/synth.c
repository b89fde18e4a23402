/* synth.c — synthetic Gemma 4 text models (see synth.h).
 *
 * Layout follows llama.cpp's gemma4 loader (docs/gemma4.md §3): GGUF tensors without K/V on
 * KV-shared layers and with rope_freqs for the proportional RoPE of full layers, as llama.cpp's
 * converter writes them; the HF checkpoint carries the HF names, and neither has the k/v
 * projections or k_norm of KV-shared layers (they would be unused: the layer reads its source's
 * cache); config.json as transformers writes it (floats where its Gemma 4 config declares
 * float).
 *
 * Vocab (ids): 0-6 specials <pad> <eos> <bos> <unk> <mask> <|turn> <turn|>; then byte tokens
 * <0x00>..<0xFF>; single characters; BPE merges (word chains, then random merges); last a
 * USER_DEFINED block <unused0>... (with chat_tokens, Gemma 4's tool-call and thinking control
 * tokens come first: <|tool> <tool|> <|tool_call> <tool_call|> <|tool_response> <tool_response|>
 * <|"|> <|think|> <|channel> <channel|>). llama.cpp splits these out of a text prompt as exact ids
 * (wllama takes text prompts only); the block's first id is synthetic.user_token_first.
 * Byte tokens 0x80+ are typed UNUSED by default: llama.cpp renders UNUSED as "", while a lone
 * non-UTF-8 byte breaks wllama's JSON output. */
#include "writers/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"
#include "kernels/pool.h"
#include "formats/safetensors.h"
#include "writers/gguf_write.h"
#include "writers/safetensors_write.h"
#include "writers/synth_widen.h"

/* ------------------------------------------------------------------ presets */

static const ox_synth base_tiny = {
    .hidden = 256, .layers = 6, .heads = 4, .kv_heads = 2, .head_dim = 64, .global_head_dim = 128,
    .ffn = 512, .double_wide = 1, .ple = 64, .vocab = 1024, .user_tokens = 128, .swa_period = 3,
    .kv_shared = 3, .window = 16, .ctx = 4096, .rope_base = 1e6f, .rope_base_swa = 1e4f,
    .partial_rotary = 0.25f, .softcap = 30.0f, .eps = 1e-6f, .std = 0.08f, .branch_gain = 1.0f,
    .qk_norm_scale = 1.0f, .seed = 1234, .type = OX_F32, .embd_type = OX_F32, .ple_type = OX_F32,
    .ple_proj_type = OX_F32,
};

int ox_synth_preset(ox_synth *s, const char *name, ox_err *err) {
    *s = base_tiny;
    if (!strcmp(name, "tiny")) return 0;
    if (!strcmp(name, "benchlike")) { /* E2B structure at tiny width */
        s->head_dim = 256, s->global_head_dim = 512, s->heads = 8, s->kv_heads = 1, s->layers = 10;
        s->swa_period = 5, s->kv_shared = 5, s->ple = 256, s->window = 512;
        return 0;
    }
    if (!strcmp(name, "bench") || !strcmp(name, "e2b")) { /* E2B shapes */
        s->hidden = 1536, s->heads = 8, s->kv_heads = 1, s->head_dim = 256, s->global_head_dim = 512;
        s->ffn = 6144, s->ple = 256, s->swa_period = 5, s->window = 512, s->ctx = 131072, s->std = 0.02f;
        int e2b = !strcmp(name, "e2b");
        s->layers = e2b ? 35 : 10, s->kv_shared = e2b ? 20 : 5;
        s->vocab = e2b ? 262144 : 8192, s->user_tokens = e2b ? 4096 : 1024;
        return 0;
    }
    if (!strcmp(name, "keqv") || !strcmp(name, "moe")) { /* 26B-A4B / 31B structure, small */
        s->ple = 0, s->kv_shared = 0, s->double_wide = 0, s->k_eq_v = 1, s->global_kv_heads = 1;
        if (!strcmp(name, "moe")) s->moe = 1, s->n_experts = 8, s->top_k = 2, s->moe_ffn = 128, s->ffn = 256;
        return 0;
    }
    return ox_errf(err, OX_E_RANGE, "unknown preset '%s' (tiny, benchlike, bench, e2b, moe, keqv)", name);
}

static int is_full(const ox_synth *s, int l) { return l % s->swa_period == s->swa_period - 1; }
static int is_shared(const ox_synth *s, int l) { return l >= s->layers - s->kv_shared; }
static int head_dim_of(const ox_synth *s, int l) { return is_full(s, l) ? s->global_head_dim : s->head_dim; }
static int kv_heads_of(const ox_synth *s, int l) { return s->k_eq_v && is_full(s, l) ? s->global_kv_heads : s->kv_heads; }
static int ffn_of(const ox_synth *s, int l) { return s->ffn * (s->double_wide && is_shared(s, l) ? 2 : 1); }

int ox_synth_check(const ox_synth *s, ox_err *err) {
    if (s->hidden <= 0 || s->layers <= 0 || s->heads <= 0 || s->kv_heads <= 0 || s->head_dim <= 0 ||
        s->global_head_dim <= 0 || s->ffn <= 0 || s->ple < 0 || s->swa_period <= 0 || s->window < 0 || s->ctx <= 0)
        return ox_errf(err, OX_E_CONFIG, "synth: shapes must be positive");
    if (s->layers > 512) return ox_errf(err, OX_E_CONFIG, "synth: at most 512 layers");
    if (s->head_dim % 2 || s->global_head_dim % 2) return ox_errf(err, OX_E_CONFIG, "synth: head dims must be even");
    if (s->heads % s->kv_heads || (s->k_eq_v && (s->global_kv_heads <= 0 || s->heads % s->global_kv_heads)))
        return ox_errf(err, OX_E_CONFIG, "synth: query heads must be a multiple of the KV heads");
    if (s->kv_shared < 0 || s->kv_shared >= s->layers) return ox_errf(err, OX_E_CONFIG, "synth: kv_shared must be in [0, layers)");
    if (s->kv_shared > 0) { /* llama.cpp: shared sliding layers read n_kv-2, shared full layers n_kv-1 */
        int nkv = s->layers - s->kv_shared, any_s = 0, any_f = 0;
        for (int l = nkv; l < s->layers; l++) any_f |= is_full(s, l), any_s |= !is_full(s, l);
        if (any_s && !(nkv >= 2 && !is_full(s, nkv - 2)))
            return ox_errf(err, OX_E_CONFIG, "synth: KV-shared sliding layers need layer %d (n_kv-2) sliding", nkv - 2);
        if (any_f && !is_full(s, nkv - 1))
            return ox_errf(err, OX_E_CONFIG, "synth: KV-shared full layers need layer %d (n_kv-1) full", nkv - 1);
    }
    if (s->assistant_of && (s->ple || s->kv_shared || s->moe || s->k_eq_v || s->assistant_of == s->hidden))
        return ox_errf(err, OX_E_CONFIG, "synth: a drafter has no PLE, KV sharing, experts or k_eq_v, and a width "
                       "other than its target's (%d)", s->assistant_of);
    if (s->moe && (s->n_experts <= 0 || s->top_k <= 0 || s->top_k > s->n_experts || s->moe_ffn <= 0))
        return ox_errf(err, OX_E_CONFIG, "synth: bad MoE shape (experts %d, top-k %d, width %d)", s->n_experts,
                       s->top_k, s->moe_ffn);
    if (s->user_tokens < 0 || s->vocab < 7 + 256 + 93 + s->user_tokens + 16 + 10 * !!s->chat_tokens)
        return ox_errf(err, OX_E_CONFIG, "synth: vocab %d too small (need %d)", s->vocab, 7 + 256 + 93 + s->user_tokens + 16 + 10 * !!s->chat_tokens);
    if (!ox_type_known(s->type) || !ox_type_known(s->embd_type) || !ox_type_known(s->ple_type) ||
        !ox_type_known(s->ple_proj_type))
        return ox_errf(err, OX_E_UNSUPPORTED, "synth: unknown weight type");
    return 0;
}

/* ------------------------------------------------------------------ tensor plan */

enum { K_WEIGHT, K_NORM, K_ROPE, K_EYE }; /* K_EYE: row r is the unit vector e_r */
enum { IN_BOTH, GGUF_ONLY };

typedef struct ptensor {
    char name[64];   /* GGUF name: the key of the values */
    char hf[96];     /* HF name without "model.language_model." */
    int n_dims, kind, where;
    uint64_t ne[3];
    ox_type type;    /* GGUF type */
    float mean, sd;
} ptensor;

typedef struct plan { ptensor *t; int n, cap; } plan;

static ptensor *add(plan *p, const char *name, const char *hf, int kind, int nd, uint64_t ne0, uint64_t ne1,
                    uint64_t ne2, float mean, float sd) {
    static ptensor spill; /* only when the plan could not be allocated; build_plan reports it */
    if (p->n == p->cap) return &spill;
    ptensor *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->hf, sizeof t->hf, "%s", hf);
    t->kind = kind, t->n_dims = nd, t->ne[0] = ne0, t->ne[1] = ne1, t->ne[2] = ne2, t->mean = mean, t->sd = sd;
    t->type = OX_F32;
    return t;
}

/* A weight type the row length allows: the requested one, else Q8_0, else F16. */
static ox_type fit_type(ox_type want, uint64_t ne0) {
    if (ne0 % ox_type_block_elems(want) == 0) return want;
    return ne0 % OX_QK == 0 ? OX_Q8_0 : OX_F16;
}

static ptensor *wmat(plan *p, const char *name, const char *hf, uint64_t cols, uint64_t rows, float sd, ox_type type) {
    ptensor *t = add(p, name, hf, K_WEIGHT, 2, cols, rows, 1, 0, sd);
    t->type = fit_type(type, cols);
    return t;
}

/* The drafter (llama.cpp's gemma4-assistant tensors): its own token table (tied head), the
 * pre-projection of [target embedding * sqrt(Hb) | target hidden] to its width, the
 * post-projection of its final-normed state back to the target's width, and per layer the
 * query side of attention (it reads the target's caches) and a dense feed-forward. */
static void build_drafter_plan(const ox_synth *s, plan *p) {
    uint64_t H = (uint64_t)s->hidden, V = (uint64_t)s->vocab, Hb = (uint64_t)s->assistant_of;
    float sd = s->std, bg = s->branch_gain, qk = s->qk_norm_scale;
    ptensor *t;
#define W(n, h, c, r) wmat(p, n, h, c, r, sd, s->type)
#define N(n, h, len, m, d) add(p, n, h, K_NORM, 1, len, 1, 1, m, d)
    t = W("token_embd.weight", "embed_tokens.weight", H, V);
    t->type = fit_type(s->embd_type, H);
    /* agree: a sharp head, so the drafter is as sure of the target's token as a trained one
     * would be on predictable text (its argmax is right, but over a large vocabulary the
     * random cross terms would otherwise keep p(argmax) low) */
    t = N("output_norm.weight", "norm.weight", H, 1, 0.1f);
    if (s->agree) t->mean = 8, t->sd = 0;
    t = W("nextn.pre_projection.weight", "pre_projection.weight", 2 * Hb, H);
    if (s->agree) t->kind = K_EYE, t->type = OX_F32;
    W("nextn.post_projection.weight", "post_projection.weight", H, Hb);
    t = add(p, "rope_freqs.weight", "", K_ROPE, 1, (uint64_t)s->global_head_dim / 2, 1, 1, 0, 0);
    t->where = GGUF_ONLY;
    for (int l = 0; l < s->layers; l++) {
        uint64_t hd = (uint64_t)head_dim_of(s, l), nh = (uint64_t)s->heads, I = (uint64_t)ffn_of(s, l);
        char g[64], h[96];
#define G(x) (snprintf(g, sizeof g, "blk.%d.%s", l, x), g)
#define HF(x) (snprintf(h, sizeof h, "layers.%d.%s", l, x), h)
        N(G("attn_norm.weight"), HF("input_layernorm.weight"), H, 1, 0.1f);
        W(G("attn_q.weight"), HF("self_attn.q_proj.weight"), H, nh * hd);
        W(G("attn_output.weight"), HF("self_attn.o_proj.weight"), nh * hd, H);
        N(G("attn_q_norm.weight"), HF("self_attn.q_norm.weight"), hd, qk, 0.1f * qk);
        N(G("post_attention_norm.weight"), HF("post_attention_layernorm.weight"), H, bg, 0.1f * bg);
        N(G("layer_output_scale.weight"), HF("layer_scalar"), 1, 0.7f, 0.1f);
        N(G("ffn_norm.weight"), HF("pre_feedforward_layernorm.weight"), H, 1, 0.1f);
        W(G("ffn_gate.weight"), HF("mlp.gate_proj.weight"), H, I);
        W(G("ffn_up.weight"), HF("mlp.up_proj.weight"), H, I);
        W(G("ffn_down.weight"), HF("mlp.down_proj.weight"), I, H);
        N(G("post_ffw_norm.weight"), HF("post_feedforward_layernorm.weight"), H, bg, 0.1f * bg);
#undef G
#undef HF
    }
#undef W
#undef N
}

/* Every tensor of the model (at most 8 global + 32 per layer). 0, or OX_E_NOMEM. */
static int build_plan(const ox_synth *s, plan *p, ox_err *err) {
    p->n = 0;
    p->cap = 8 + 32 * s->layers;
    p->t = malloc((size_t)p->cap * sizeof *p->t);
    if (!p->t) return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the tensor plan");
    if (s->assistant_of) {
        build_drafter_plan(s, p);
        return 0;
    }
    uint64_t H = (uint64_t)s->hidden, V = (uint64_t)s->vocab, P = (uint64_t)s->ple, L = (uint64_t)s->layers;
    float sd = s->std, bg = s->branch_gain, qk = s->qk_norm_scale;
    ptensor *t;
#define W(n, h, c, r) wmat(p, n, h, c, r, sd, s->type)
#define N(n, h, len, m, d) add(p, n, h, K_NORM, 1, len, 1, 1, m, d)
    t = W("token_embd.weight", "embed_tokens.weight", H, V);
    t->type = fit_type(s->embd_type, H);
    if (P) {
        t = W("per_layer_token_embd.weight", "embed_tokens_per_layer.weight", P * L, V);
        t->type = fit_type(s->ple_type, P * L);
        t = W("per_layer_model_proj.weight", "per_layer_model_projection.weight", H, P * L);
        t->type = fit_type(s->ple_proj_type, H);
        N("per_layer_proj_norm.weight", "per_layer_projection_norm.weight", P, 1, 0.1f);
    }
    N("output_norm.weight", "norm.weight", H, 1, 0.1f);
    t = add(p, "rope_freqs.weight", "", K_ROPE, 1, (uint64_t)s->global_head_dim / 2, 1, 1, 0, 0);
    t->where = GGUF_ONLY;
    for (int l = 0; l < s->layers; l++) {
        uint64_t hd = (uint64_t)head_dim_of(s, l), nh = (uint64_t)s->heads, kvw = (uint64_t)kv_heads_of(s, l) * hd;
        uint64_t I = (uint64_t)ffn_of(s, l);
        int sh = is_shared(s, l);
        char g[64], h[96];
#define G(x) (snprintf(g, sizeof g, "blk.%d.%s", l, x), g)
#define HF(x) (snprintf(h, sizeof h, "layers.%d.%s", l, x), h)
        N(G("attn_norm.weight"), HF("input_layernorm.weight"), H, 1, 0.1f);
        W(G("attn_q.weight"), HF("self_attn.q_proj.weight"), H, nh * hd);
        if (!sh) W(G("attn_k.weight"), HF("self_attn.k_proj.weight"), H, kvw);
        if (!sh && !(s->k_eq_v && is_full(s, l))) W(G("attn_v.weight"), HF("self_attn.v_proj.weight"), H, kvw);
        W(G("attn_output.weight"), HF("self_attn.o_proj.weight"), nh * hd, H);
        N(G("attn_q_norm.weight"), HF("self_attn.q_norm.weight"), hd, qk, 0.1f * qk);
        if (!sh) N(G("attn_k_norm.weight"), HF("self_attn.k_norm.weight"), hd, qk, 0.1f * qk);
        N(G("post_attention_norm.weight"), HF("post_attention_layernorm.weight"), H, bg, 0.1f * bg);
        N(G("layer_output_scale.weight"), HF("layer_scalar"), 1, 0.7f, 0.1f);
        N(G("ffn_norm.weight"), HF("pre_feedforward_layernorm.weight"), H, 1, 0.1f);
        W(G("ffn_gate.weight"), HF("mlp.gate_proj.weight"), H, I);
        W(G("ffn_up.weight"), HF("mlp.up_proj.weight"), H, I);
        W(G("ffn_down.weight"), HF("mlp.down_proj.weight"), I, H);
        N(G("post_ffw_norm.weight"), HF("post_feedforward_layernorm.weight"), H, bg, 0.1f * bg);
        if (s->moe) {
            uint64_t E = (uint64_t)s->n_experts, Ie = (uint64_t)s->moe_ffn;
            add(p, G("ffn_gate_inp.weight"), HF("router.proj.weight"), K_WEIGHT, 2, H, E, 1, 0, sd);
            N(G("ffn_gate_inp.scale"), HF("router.scale"), H, 1, 0.1f);
            N(G("ffn_down_exps.scale"), HF("router.per_expert_scale"), E, 1, 0.1f);
            t = add(p, G("ffn_gate_up_exps.weight"), HF("experts.gate_up_proj"), K_WEIGHT, 3, H, 2 * Ie, E, 0, sd);
            t->type = fit_type(s->type, H);
            t = add(p, G("ffn_down_exps.weight"), HF("experts.down_proj"), K_WEIGHT, 3, Ie, H, E, 0, sd);
            t->type = fit_type(s->type, Ie);
            N(G("pre_ffw_norm_2.weight"), HF("pre_feedforward_layernorm_2.weight"), H, 1, 0.1f);
            N(G("post_ffw_norm_1.weight"), HF("post_feedforward_layernorm_1.weight"), H, bg, 0.1f * bg);
            N(G("post_ffw_norm_2.weight"), HF("post_feedforward_layernorm_2.weight"), H, bg, 0.1f * bg);
        }
        if (P) {
            W(G("inp_gate.weight"), HF("per_layer_input_gate.weight"), H, P);
            W(G("proj.weight"), HF("per_layer_projection.weight"), P, H);
            N(G("post_norm.weight"), HF("post_per_layer_input_norm.weight"), H, bg, 0.1f * bg);
        }
#undef G
#undef HF
    }
#undef W
#undef N
    return 0;
}

uint64_t ox_synth_params(const ox_synth *s) {
    plan p = {0};
    if (build_plan(s, &p, NULL)) return 0;
    uint64_t n = 0;
    for (int i = 0; i < p.n; i++) n += p.t[i].ne[0] * p.t[i].ne[1] * p.t[i].ne[2];
    free(p.t);
    return n;
}

/* ------------------------------------------------------------------ values */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t name_key(uint32_t seed, const char *name) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001B3ull;
    return mix64(h ^ mix64((uint64_t)seed + 0x9E3779B97F4A7C15ull));
}

/* Row `row` of a tensor: mean + sd * N(0,1) from a generator keyed by (seed, name, row). */
static void gen_row(const ox_synth *s, const ptensor *t, uint64_t key, uint64_t row, float *dst) {
    uint64_t n = t->ne[0];
    if (t->kind == K_ROPE) { /* proportional RoPE: 1 for rotated pairs, 1e30 (no rotation) beyond */
        uint64_t rot = (uint64_t)(s->global_head_dim * s->partial_rotary / 2);
        for (uint64_t i = 0; i < n; i++) dst[i] = i < rot ? 1.0f : 1e30f;
        return;
    }
    if (t->kind == K_EYE) {
        for (uint64_t i = 0; i < n; i++) dst[i] = i == row ? 1.0f : 0.0f;
        return;
    }
    uint64_t st = key ^ mix64(row + 1);
    for (uint64_t i = 0; i < n; i += 2) {
        st += 0x9E3779B97F4A7C15ull;
        uint64_t a = mix64(st);
        st += 0x9E3779B97F4A7C15ull;
        uint64_t b = mix64(st);
        double u1 = ((a >> 11) + 0.5) * (1.0 / 9007199254740992.0), u2 = (b >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1));
        dst[i] = (float)(t->mean + t->sd * r * cos(6.283185307179586 * u2));
        if (i + 1 < n) dst[i + 1] = (float)(t->mean + t->sd * r * sin(6.283185307179586 * u2));
    }
    for (uint64_t i = 0; s->bf16_values && i < n; i++) dst[i] = ox_bf16_to_f32(ox_f32_to_bf16(dst[i]));
}

/* Generate and encode rows [r0, r0+nr) of t as `type` into out, split over the pool. */
typedef struct gen_job {
    const ox_synth *s;
    const ptensor *t;
    ox_type type;
    uint64_t key, r0, nr, row_bytes;
    float *f;       /* [tasks][ne0] */
    const float *vals; /* the whole tensor from values_dir, or NULL: generate */
    uint8_t *out;
    int bad;
} gen_job;

static void gen_task(void *ctx, int task, int n_tasks) {
    gen_job *J = ctx;
    uint64_t a = J->nr * (uint64_t)task / (uint64_t)n_tasks, b = J->nr * (uint64_t)(task + 1) / (uint64_t)n_tasks;
    float *f = J->f + (size_t)task * J->t->ne[0];
    for (uint64_t r = a; r < b; r++) {
        if (J->vals) memcpy(f, J->vals + (J->r0 + r) * J->t->ne[0], (size_t)J->t->ne[0] * sizeof(float));
        else gen_row(J->s, J->t, J->key, J->r0 + r, f);
        if (ox_quantize_row(J->type, f, J->out + r * J->row_bytes, (size_t)J->t->ne[0])) J->bad = 1;
    }
}

typedef struct writer_ctx {
    const ox_synth *s;
    const ptensor **t;   /* tensors in write order */
    ox_type *type;       /* their output types */
    float *f;
    uint8_t *out;
    size_t f_cap, out_cap;
    float *vals;         /* the current tensor's values from values_dir or the widened source */
    ox_widen *widen;     /* s->widen, open */
} writer_ctx;

#define GEN_CHUNK (4u << 20)

/* room for tensor t's values in x->vals (trained tensors are small: the demo model's, or a
 * widened model's matrices) */
static int alloc_values(writer_ctx *x, const ptensor *t, ox_err *err) {
    free(x->vals);
    x->vals = malloc((size_t)(t->ne[0] * t->ne[1] * t->ne[2]) * sizeof(float));
    return x->vals ? 0 : ox_errf(err, OX_E_NOMEM, "synth: out of memory for the values of %s", t->name);
}

/* Tensor t's values from s->values_dir into x->vals. */
static int load_values(writer_ctx *x, const ptensor *t, ox_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.f32", x->s->values_dir, t->name);
    uint64_t n = t->ne[0] * t->ne[1] * t->ne[2];
    if (alloc_values(x, t, err)) return err ? err->code : OX_E_NOMEM;
    FILE *f = fopen(path, "rb");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot open %s (tensor %s)", path, t->name);
    size_t got = fread(x->vals, sizeof(float), (size_t)n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra)
        return ox_errf(err, OX_E_FORMAT, "synth: %s: expected %llu f32 values for tensor %s", path,
                       (unsigned long long)n, t->name);
    return 0;
}

/* Stream tensor i of the writer's list to f, in chunks of rows. */
static int emit(writer_ctx *x, int i, FILE *fp, ox_err *err) {
    const ptensor *t = x->t[i];
    ox_type type = x->type[i];
    uint64_t rb, rows = t->ne[1] * t->ne[2];
    if (ox_row_bytes(type, t->ne[0], &rb, err)) return ox_err_prefix(err, "synth: tensor %s", t->name);
    uint64_t per = GEN_CHUNK / (t->ne[0] * 4);
    if (per < 1) per = 1;
    if (per > rows) per = rows;
    int tasks = ox_pool_threads() > 0 ? ox_pool_threads() : 1;
    size_t fneed = (size_t)tasks * (size_t)t->ne[0] * sizeof(float), oneed = (size_t)(per * rb);
    if (fneed > x->f_cap) {
        free(x->f);
        x->f = malloc(fneed);
        x->f_cap = x->f ? fneed : 0;
    }
    if (oneed > x->out_cap) {
        free(x->out);
        x->out = malloc(oneed);
        x->out_cap = x->out ? oneed : 0;
    }
    if (!x->f || !x->out) return ox_errf(err, OX_E_NOMEM, "synth: out of memory generating %s", t->name);
    uint64_t key = name_key(x->s->seed, t->name);
    int trained = 0;
    if (t->kind != K_ROPE && x->s->values_dir) {
        if (load_values(x, t, err)) return err ? err->code : OX_E_IO;
        trained = 1;
    } else if (t->kind != K_ROPE && x->widen) {
        if (alloc_values(x, t, err)) return err ? err->code : OX_E_NOMEM;
        trained = ox_widen_values(x->widen, t->name, t->ne[0], t->ne[1] * t->ne[2], x->vals, err);
        if (trained < 0) return trained;
    }
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        uint64_t nr = rows - r0 < per ? rows - r0 : per;
        gen_job J = {x->s, t, type, key, r0, nr, rb, x->f, trained ? x->vals : NULL, x->out, 0};
        ox_pool_run(gen_task, &J, (int)(nr < (uint64_t)tasks ? nr : (uint64_t)tasks));
        if (J.bad) return ox_errf(err, OX_E_UNSUPPORTED, "synth: cannot encode %s as %s", t->name, ox_type_name(type));
        if (fwrite(x->out, 1, (size_t)(nr * rb), fp) != (size_t)(nr * rb))
            return ox_errf(err, OX_E_IO, "synth: write failed for tensor %s", t->name);
    }
    return 0;
}

static void writer_ctx_free(writer_ctx *x) {
    free(x->t);
    free(x->type);
    free(x->f);
    free(x->out);
    free(x->vals);
    ox_widen_close(x->widen);
}

/* ------------------------------------------------------------------ vocab */

enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_USER = 4, TOK_UNUSED = 5, TOK_BYTE = 6 };

typedef struct vocab {
    char **tok;
    float *score;
    int32_t *type;
    char **merges;
    int n, n_merges, user_first, byte_first;
    char **set; /* open addressing over tok strings */
    size_t set_cap;
} vocab;

static const char *WORDS =
    "the of and to in a is that for it as was with be by on not he i this are or his from at which but have an "
    "they you were her she there one all we can their has been if more when will would who so no what up out "
    "about into them than its time only could new two some may other then do first any my now such like our "
    "over man me even most made after also did many before must through back years where much your way well "
    "down should because each just those people how too little state good very make world still own see men "
    "work long get here between both life being under never day same another know while last might us great "
    "old year off come since against go came right used take three model token layer gemma weight cache tensor "
    "engine browser thread decode prefill logit value query key attention window slide full share embed norm "
    "scale rope hello world test";
static const char *CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
static const char *PUNCT = ".,;:!?'\"()[]{}-_/\\*+=<>@#$%^&|~`";
#define SPACE "\xE2\x96\x81" /* U+2581 */

static uint64_t str_hash(const char *s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
    return h;
}

static int has(const vocab *v, const char *s) {
    for (size_t i = str_hash(s) & (v->set_cap - 1);; i = (i + 1) & (v->set_cap - 1)) {
        if (!v->set[i]) return 0;
        if (!strcmp(v->set[i], s)) return 1;
    }
}

static int push(vocab *v, const char *s, int type) {
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (!d) return -1;
    memcpy(d, s, len);
    size_t i = str_hash(s) & (v->set_cap - 1);
    while (v->set[i]) i = (i + 1) & (v->set_cap - 1);
    v->set[i] = d;
    v->tok[v->n] = d;
    v->type[v->n] = type;
    v->n++;
    return 0;
}

static int cp_len(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((uint8_t)*s & 0xC0) != 0x80;
    return n;
}

static void vocab_free(vocab *v) {
    for (int i = 0; i < v->n; i++) free(v->tok[i]);
    for (int i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok), free(v->score), free(v->type), free(v->merges), free(v->set);
    memset(v, 0, sizeof *v);
}

/* Append a merge a+b (if new and room is left); returns 0, or -1 on allocation failure. */
static int add_merge(vocab *v, const char *a, const char *b, int n_bpe, char *out, size_t cap) {
    snprintf(out, cap, "%s%s", a, b);
    if (has(v, out) || v->n >= n_bpe) return 0;
    size_t la = strlen(a), lb = strlen(b);
    char *m = malloc(la + lb + 2);
    if (!m) return -1;
    memcpy(m, a, la), m[la] = ' ', memcpy(m + la + 1, b, lb + 1);
    v->merges[v->n_merges++] = m;
    return push(v, out, TOK_NORMAL);
}

static const char *const chat_specials[] = {"<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                                            "<tool_response|>", "<|\"|>", "<|think|>", "<|channel>", "<channel|>"};
#define N_CHAT_SPECIALS ((int)(sizeof chat_specials / sizeof *chat_specials))

static int vocab_alloc(vocab *v, int N) {
    memset(v, 0, sizeof *v);
    v->set_cap = 1;
    while (v->set_cap < 2 * (size_t)N) v->set_cap <<= 1;
    v->tok = calloc((size_t)N, sizeof *v->tok);
    v->score = calloc((size_t)N, sizeof *v->score);
    v->type = calloc((size_t)N, sizeof *v->type);
    v->merges = calloc((size_t)N, sizeof *v->merges);
    v->set = calloc(v->set_cap, sizeof *v->set);
    return v->tok && v->score && v->type && v->merges && v->set ? 0 : -1;
}

/* Hex text -> bytes (NUL-terminated) in out; -1 if malformed or too long. */
static int unhex(const char *h, char *out, size_t cap) {
    size_t n = strlen(h), k = 0;
    if (n % 2 || n / 2 + 1 > cap) return -1;
    for (size_t i = 0; i < n; i += 2) {
        unsigned b;
        if (sscanf(h + i, "%2x", &b) != 1) return -1;
        out[k++] = (char)b;
    }
    out[k] = 0;
    return k ? 0 : -1;
}

/* A trained vocab, one entry a line, ids in order, merges by rank (pieces hex-encoded UTF-8):
 *   t TYPE HEX         a token (TYPE as in tokenizer.ggml.token_type)
 *   m HEXA HEXB        a merge
 * Ids 0-4 must be <pad> <eos> <bos> <unk> <mask> (the ids put_meta writes). */
static int read_vocab(const ox_synth *s, vocab *v, ox_err *err) {
    const char *path = s->vocab_path;
    FILE *f = fopen(path, "r");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot open the vocab file %s", path);
    int N = s->vocab, line_no = 0, rc = 0;
    if (vocab_alloc(v, N)) {
        fclose(f);
        vocab_free(v);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
    }
    char line[1024], a[512], b[512], pa[256], pb[256];
    v->byte_first = -1;
    while (!rc && fgets(line, sizeof line, f)) {
        line_no++;
        int type;
        if (sscanf(line, "t %d %511s", &type, a) == 2 && !unhex(a, pa, sizeof pa)) {
            if (v->n >= N) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: more than %d tokens", path, line_no, N);
            else if (has(v, pa)) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: token %s twice", path, line_no, pa);
            else if (type < TOK_NORMAL || type > TOK_BYTE) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: bad type %d", path, line_no, type);
            else if (push(v, pa, type)) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
            if (!rc && v->byte_first < 0 && !strcmp(pa, "<0x00>")) v->byte_first = v->n - 1;
        } else if (sscanf(line, "m %511s %511s", a, b) == 2 && !unhex(a, pa, sizeof pa) && !unhex(b, pb, sizeof pb)) {
            size_t la = strlen(pa), lb = strlen(pb);
            char *m = v->n_merges < N ? malloc(la + lb + 2) : NULL;
            if (!m) rc = ox_errf(err, OX_E_FORMAT, "%s:%d: more than %d merges (or out of memory)", path, line_no, N);
            else memcpy(m, pa, la), m[la] = ' ', memcpy(m + la + 1, pb, lb + 1), v->merges[v->n_merges++] = m;
        } else {
            rc = ox_errf(err, OX_E_FORMAT, "%s:%d: expected 't TYPE HEX' or 'm HEX HEX'", path, line_no);
        }
    }
    fclose(f);
    static const char *fixed[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    for (int i = 0; !rc && i < 5; i++)
        if (i >= v->n || strcmp(v->tok[i], fixed[i]))
            rc = ox_errf(err, OX_E_FORMAT, "%s: token %d must be %s", path, i, fixed[i]);
    if (!rc && v->n != N) rc = ox_errf(err, OX_E_FORMAT, "%s: %d tokens, but the model's vocab is %d", path, v->n, N);
    if (rc) {
        vocab_free(v);
        return rc;
    }
    v->user_first = v->n;
    if (v->byte_first < 0) v->byte_first = 0;
    for (int i = 0; i < N; i++) v->score[i] = v->type[i] == TOK_NORMAL ? -(float)i : 0.0f;
    return 0;
}

/* The vocab of a GGUF (a widened model's source): tokens, types, scores and merges as stored. */
static int vocab_from_gguf(const ox_gguf *g, int N, vocab *v, ox_err *err) {
    const ox_gguf_value *tok, *type, *merges, *score = ox_gguf_find(g, "tokenizer.ggml.scores");
    if (ox_gguf_get_arr(g, "tokenizer.ggml.tokens", &tok, err) || ox_gguf_get_arr(g, "tokenizer.ggml.token_type", &type, err) ||
        ox_gguf_get_arr(g, "tokenizer.ggml.merges", &merges, err))
        return err ? err->code : OX_E_MISSING;
    const char *name = ox_gguf_name(g);
    if (tok->v.arr.n != (uint64_t)N || type->v.arr.n != (uint64_t)N || merges->v.arr.n > (uint64_t)N)
        return ox_errf(err, OX_E_FORMAT, "%s: %llu tokens and %llu types for a vocab of %d (and at most as many merges)", name,
                       (unsigned long long)tok->v.arr.n, (unsigned long long)type->v.arr.n, N);
    if (vocab_alloc(v, N)) {
        vocab_free(v);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
    }
    int rc = 0;
    v->byte_first = 0, v->user_first = N;
    for (int i = 0; !rc && i < N; i++) {
        const ox_gguf_str *str = ox_gguf_arr_str(tok, (uint64_t)i);
        int64_t ty;
        double sc = 0;
        if (!str || ox_gguf_arr_i64(type, (uint64_t)i, &ty) || (score && ox_gguf_arr_f64(score, (uint64_t)i, &sc)))
            rc = ox_errf(err, OX_E_FORMAT, "%s: token %d is malformed", name, i);
        else if (has(v, str->s)) rc = ox_errf(err, OX_E_FORMAT, "%s: token %d (%s) appears twice", name, i, str->s);
        else if (push(v, str->s, (int)ty)) rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory for the vocab");
        if (rc) break;
        v->score[i] = (float)sc;
        if (!strcmp(str->s, "<0x00>")) v->byte_first = i;
        if (ty == TOK_USER && v->user_first == N) v->user_first = i;
    }
    for (uint64_t i = 0; !rc && i < merges->v.arr.n; i++) {
        const ox_gguf_str *m = ox_gguf_arr_str(merges, i);
        if (!m || !(v->merges[v->n_merges] = malloc(m->len + 1))) {
            rc = ox_errf(err, m ? OX_E_NOMEM : OX_E_FORMAT, "%s: merge %llu is malformed (or out of memory)", name, (unsigned long long)i);
            break;
        }
        memcpy(v->merges[v->n_merges++], m->s, m->len + 1);
    }
    static const char *fixed[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"}; /* the ids put_meta writes */
    for (int i = 0; !rc && i < 5; i++)
        if (strcmp(v->tok[i], fixed[i])) rc = ox_errf(err, OX_E_FORMAT, "%s: token %d must be %s", name, i, fixed[i]);
    if (rc) vocab_free(v);
    return rc;
}

static int build_vocab(const ox_synth *s, const ox_widen *widen, vocab *v, ox_err *err) {
    if (widen) return vocab_from_gguf(ox_widen_gguf(widen), s->vocab, v, err);
    if (s->vocab_path) return read_vocab(s, v, err);
    int N = s->vocab, n_bpe = N - s->user_tokens - (s->chat_tokens ? N_CHAT_SPECIALS : 0);
    if (vocab_alloc(v, N)) goto oom;
    static const char *specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>"};
    for (int i = 0; i < 7; i++)
        if (push(v, specials[i], i == 3 ? TOK_UNKNOWN : TOK_CONTROL)) goto oom;
    v->byte_first = v->n;
    char buf[256];
    for (int b = 0; b < 256; b++) {
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        if (push(v, buf, (b >= 0x80 && !s->all_byte_tokens) ? TOK_UNUSED : TOK_BYTE)) goto oom;
    }
    int first_normal = v->n;
    const char *fixed[] = {"\n", "\t", SPACE};
    for (int i = 0; i < 3; i++)
        if (push(v, fixed[i], TOK_NORMAL)) goto oom;
    snprintf(buf, sizeof buf, "%s%s", CHARS, PUNCT);
    for (const char *p = buf; *p; p++)
        if (push(v, (char[2]){*p, 0}, TOK_NORMAL)) goto oom;
    /* words: merge chains SPACE + w[0], then + w[1], ... */
    char cur[256], ch[2] = {0, 0};
    for (const char *w = WORDS; *w && v->n < n_bpe;) {
        size_t len = strcspn(w, " ");
        snprintf(cur, sizeof cur, SPACE);
        for (size_t i = 0; i < len; i++) {
            char nxt[256];
            ch[0] = w[i];
            if (add_merge(v, cur, ch, n_bpe, nxt, sizeof nxt)) goto oom;
            memcpy(cur, nxt, sizeof cur);
        }
        w += len + (w[len] == ' ');
    }
    /* the rest: random merges of normal pieces (no space inside the right part, at most 10
     * characters); when a random pair fails, a short piece + one character (big vocabs) */
    int *normal = malloc(sizeof(int) * (size_t)N), *shortp = malloc(sizeof(int) * (size_t)N), n_norm = 0, n_short = 0;
    int first_char = first_normal + 3, n_chars = (int)(strlen(CHARS) + strlen(PUNCT));
    if (!normal || !shortp) {
        free(normal), free(shortp);
        goto oom;
    }
    for (int i = first_normal; i < v->n; i++) {
        if (!strcmp(v->tok[i], "\n") || !strcmp(v->tok[i], "\t")) continue;
        normal[n_norm++] = i;
        if (cp_len(v->tok[i]) < 10) shortp[n_short++] = i;
    }
    uint64_t st = mix64((uint64_t)s->seed ^ 0x5EED);
    long misses = 0;
    while (v->n < n_bpe) {
        st += 0x9E3779B97F4A7C15ull;
        const char *a = v->tok[normal[mix64(st) % (uint64_t)n_norm]];
        st += 0x9E3779B97F4A7C15ull;
        const char *b = v->tok[normal[mix64(st) % (uint64_t)n_norm]];
        snprintf(buf, sizeof buf, "%s%s", a, b);
        if (strstr(b, SPACE) || cp_len(a) + cp_len(b) > 10 || has(v, buf)) {
            st += 0x9E3779B97F4A7C15ull;
            a = v->tok[shortp[mix64(st) % (uint64_t)n_short]];
            st += 0x9E3779B97F4A7C15ull;
            b = v->tok[first_char + (int)(mix64(st) % (uint64_t)n_chars)];
            snprintf(buf, sizeof buf, "%s%s", a, b);
            if (has(v, buf)) {
                if (++misses > 1000000) {
                    free(normal), free(shortp);
                    vocab_free(v);
                    return ox_errf(err, OX_E_CONFIG, "synth: could not fill a vocab of %d", N);
                }
                continue;
            }
        }
        char nxt[256];
        if (add_merge(v, a, b, n_bpe, nxt, sizeof nxt)) {
            free(normal), free(shortp);
            goto oom;
        }
        normal[n_norm++] = v->n - 1;
        if (cp_len(nxt) < 10) shortp[n_short++] = v->n - 1;
    }
    free(shortp);
    free(normal);
    for (int i = 0; s->chat_tokens && i < N_CHAT_SPECIALS; i++)
        if (push(v, chat_specials[i], TOK_CONTROL)) goto oom;
    v->user_first = v->n;
    for (int i = 0; v->n < N; i++) {
        snprintf(buf, sizeof buf, "<unused%d>", i);
        if (push(v, buf, TOK_USER)) goto oom;
    }
    for (int i = 0; i < N; i++) v->score[i] = v->type[i] == TOK_NORMAL ? -(float)i : 0.0f;
    return 0;
oom:
    vocab_free(v);
    return ox_errf(err, OX_E_NOMEM, "synth: out of memory building the vocab");
}

/* ------------------------------------------------------------------ both writers */

static void writer_end(vocab *v, plan *p, writer_ctx *x) {
    writer_ctx_free(x);
    free(p->t);
    vocab_free(v);
}

/* What the GGUF and the HF writers start from: the vocab, the tensor plan and a writer
 * context with room for every tensor. On failure nothing is left allocated. */
static int writer_begin(const ox_synth *s, vocab *v, plan *p, writer_ctx *x, ox_err *err) {
    *x = (writer_ctx){.s = s};
    if (s->widen && !(x->widen = ox_widen_open(s, err))) return err ? err->code : OX_E_IO;
    int rc = build_vocab(s, x->widen, v, err);
    if (rc) {
        ox_widen_close(x->widen);
        return rc;
    }
    *p = (plan){0};
    if ((rc = build_plan(s, p, err))) {
        vocab_free(v);
        ox_widen_close(x->widen);
        return rc;
    }
    x->t = calloc((size_t)p->n, sizeof *x->t);
    x->type = calloc((size_t)p->n, sizeof *x->type);
    if (!x->t || !x->type) {
        writer_end(v, p, x);
        return ox_errf(err, OX_E_NOMEM, "synth: out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------------ GGUF */

static uint32_t file_type_of(ox_type t) { /* llama_ftype */
    switch (t) {
    case OX_F32: return 0;
    case OX_F16: return 1;
    case OX_Q4_0: return 2;
    case OX_Q4_1: return 3;
    case OX_Q8_0: return 7;
    case OX_Q5_0: return 8;
    case OX_Q5_1: return 9;
    case OX_Q2_K: return 10;
    case OX_Q3_K: return 12;
    case OX_Q4_K: return 15;
    case OX_Q5_K: return 17;
    case OX_Q6_K: return 18;
    case OX_BF16: return 32;
    default: return 0;
    }
}

static int gguf_fill(void *ud, int i, FILE *f, ox_err *err) { return emit(ud, i, f, err); }

static int put_meta(ox_gguf_writer *w, const ox_synth *s, const vocab *v, float eps) {
    const char *A = s->assistant_of ? "gemma4-assistant." : "gemma4.";
    char k[128];
    int rc = 0, L = s->layers;
#define KEY(x) (snprintf(k, sizeof k, "%s%s", A, x), k)
    rc |= ox_gguf_w_str(w, "general.architecture", s->assistant_of ? "gemma4-assistant" : "gemma4");
    if (s->assistant_of) { /* as llama.cpp's converter writes a drafter: every block is a next-n layer */
        rc |= ox_gguf_w_u32(w, KEY("embedding_length_out"), (uint32_t)s->assistant_of);
        rc |= ox_gguf_w_u32(w, KEY("nextn_predict_layers"), (uint32_t)L);
    }
    rc |= ox_gguf_w_str(w, "general.type", "model");
    char name[96];
    snprintf(name, sizeof name, "%s-gemma4-%dL-%d", s->values_dir ? "oxinfer-trained" : s->widen ? "oxinfer-widened" : "synthetic",
             L, s->hidden);
    rc |= ox_gguf_w_str(w, "general.name", name);
    rc |= ox_gguf_w_u32(w, "general.file_type", file_type_of(s->type));
    rc |= ox_gguf_w_u32(w, "general.quantization_version", 2);
    rc |= ox_gguf_w_alignment(w, 32);
    rc |= ox_gguf_w_u32(w, KEY("context_length"), (uint32_t)s->ctx);
    rc |= ox_gguf_w_u32(w, KEY("embedding_length"), (uint32_t)s->hidden);
    rc |= ox_gguf_w_u32(w, KEY("block_count"), (uint32_t)L);
    int32_t ff[512];
    uint32_t kvh[512];
    uint8_t swa[512];
    int ff_same = 1, kv_same = 1;
    for (int l = 0; l < L; l++) {
        ff[l] = ffn_of(s, l), kvh[l] = (uint32_t)kv_heads_of(s, l), swa[l] = !is_full(s, l);
        ff_same &= ff[l] == ff[0], kv_same &= kvh[l] == kvh[0];
    }
    rc |= ff_same ? ox_gguf_w_u32(w, KEY("feed_forward_length"), (uint32_t)ff[0])
                  : ox_gguf_w_arr(w, KEY("feed_forward_length"), OX_GGUF_I32, ff, (uint64_t)L);
    rc |= ox_gguf_w_u32(w, KEY("attention.head_count"), (uint32_t)s->heads);
    rc |= kv_same ? ox_gguf_w_u32(w, KEY("attention.head_count_kv"), kvh[0])
                  : ox_gguf_w_arr(w, KEY("attention.head_count_kv"), OX_GGUF_U32, kvh, (uint64_t)L);
    rc |= ox_gguf_w_f32(w, KEY("attention.layer_norm_rms_epsilon"), eps);
    rc |= ox_gguf_w_u32(w, KEY("attention.key_length"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.value_length"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.key_length_swa"), (uint32_t)s->head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.value_length_swa"), (uint32_t)s->head_dim);
    rc |= ox_gguf_w_u32(w, KEY("attention.sliding_window"), (uint32_t)s->window);
    rc |= ox_gguf_w_arr(w, KEY("attention.sliding_window_pattern"), OX_GGUF_BOOL, swa, (uint64_t)L);
    rc |= ox_gguf_w_u32(w, KEY("attention.shared_kv_layers"), (uint32_t)s->kv_shared);
    rc |= ox_gguf_w_u32(w, KEY("embedding_length_per_layer_input"), (uint32_t)s->ple);
    rc |= ox_gguf_w_f32(w, KEY("rope.freq_base"), s->rope_base);
    rc |= ox_gguf_w_f32(w, KEY("rope.freq_base_swa"), s->rope_base_swa);
    rc |= ox_gguf_w_u32(w, KEY("rope.dimension_count"), (uint32_t)s->global_head_dim);
    rc |= ox_gguf_w_u32(w, KEY("rope.dimension_count_swa"), (uint32_t)s->head_dim);
    if (s->softcap > 0 && !s->assistant_of) rc |= ox_gguf_w_f32(w, KEY("final_logit_softcapping"), s->softcap);
    if (s->moe) {
        rc |= ox_gguf_w_u32(w, KEY("expert_count"), (uint32_t)s->n_experts);
        rc |= ox_gguf_w_u32(w, KEY("expert_used_count"), (uint32_t)s->top_k);
        rc |= ox_gguf_w_u32(w, KEY("expert_feed_forward_length"), (uint32_t)s->moe_ffn);
    }
#undef KEY
    rc |= ox_gguf_w_str(w, "tokenizer.ggml.model", "gemma4");
    rc |= ox_gguf_w_str(w, "tokenizer.ggml.pre", "gemma4");
    rc |= ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, (uint64_t)v->n);
    rc |= ox_gguf_w_arr(w, "tokenizer.ggml.scores", OX_GGUF_F32, v->score, (uint64_t)v->n);
    rc |= ox_gguf_w_arr(w, "tokenizer.ggml.token_type", OX_GGUF_I32, v->type, (uint64_t)v->n);
    rc |= ox_gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, (uint64_t)v->n_merges);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 2);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 1);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 3);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.padding_token_id", 0);
    rc |= ox_gguf_w_u32(w, "tokenizer.ggml.mask_token_id", 4);
    rc |= ox_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);
    rc |= ox_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", 0);
    rc |= ox_gguf_w_u32(w, "synthetic.user_token_first", (uint32_t)v->user_first);
    rc |= ox_gguf_w_u32(w, "synthetic.user_token_count", (uint32_t)(v->n - v->user_first));
    rc |= ox_gguf_w_u32(w, "synthetic.byte_token_first", (uint32_t)v->byte_first);
    rc |= ox_gguf_w_u32(w, "synthetic.seed", s->seed);
    return rc;
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const ptensor *const *)a)->name, (*(const ptensor *const *)b)->name);
}

int ox_synth_write_gguf(const ox_synth *s, const char *path, ox_err *err) {
    int rc = ox_synth_check(s, err);
    if (rc) return rc;
    vocab v;
    plan p;
    writer_ctx x;
    if ((rc = writer_begin(s, &v, &p, &x, err))) return rc;
    ox_gguf_writer *w = ox_gguf_writer_new();
    if (!w) {
        rc = ox_errf(err, OX_E_NOMEM, "synth: out of memory");
        goto done;
    }
    if (put_meta(w, s, &v, x.widen ? ox_widen_eps(x.widen) : s->eps)) {
        rc = ox_errf(err, OX_E_NOMEM, "synth: %s: cannot add metadata", path);
        goto done;
    }
    int n = 0;
    for (int i = 0; i < p.n; i++)
        x.t[n++] = &p.t[i];
    if (s->by_name) qsort(x.t, (size_t)n, sizeof *x.t, by_name);
    for (int i = 0; i < n; i++) {
        x.type[i] = x.t[i]->type;
        if ((rc = ox_gguf_w_tensor(w, x.t[i]->name, x.t[i]->type, x.t[i]->n_dims, x.t[i]->ne, NULL, err))) goto done;
    }
    rc = ox_gguf_w_write(w, path, gguf_fill, &x, err);
done:
    ox_gguf_writer_free(w);
    writer_end(&v, &p, &x);
    return rc;
}

/* ------------------------------------------------------------------ HF checkpoint */

static int write_text(const char *dir, const char *name, const ox_strbuf *b, ox_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (b->oom) return ox_errf(err, OX_E_NOMEM, "synth: out of memory writing %s", path);
    FILE *f = fopen(path, "wb");
    if (!f) return ox_errf(err, OX_E_IO, "synth: cannot create %s", path);
    int ok = fwrite(b->s, 1, b->len, f) == b->len;
    ok &= fclose(f) == 0;
    return ok ? 0 : ox_errf(err, OX_E_IO, "synth: write failed: %s", path);
}

/* A float as transformers writes one: always with a point or an exponent (30.0, not 30), so a
 * field its config declares float never reads back as an int. */
static const char *json_float(char *buf, size_t cap, double v) {
    int n = snprintf(buf, cap, "%.9g", v);
    if (n > 0 && (size_t)n + 2 < cap && !strpbrk(buf, ".eEni")) memcpy(buf + n, ".0", 3);
    return buf;
}

static void config_json(const ox_synth *s, ox_type dtype, ox_strbuf *b) {
    char f1[32], f2[32], f3[32];
    ox_sb_printf(b, "{\n  \"architectures\": [\"Gemma4ForConditionalGeneration\"],\n  \"model_type\": \"gemma4\",\n"
                    "  \"pad_token_id\": 0, \"bos_token_id\": 2, \"eos_token_id\": [1, 6],\n"
                    "  \"tie_word_embeddings\": true,\n  \"text_config\": {\n");
    ox_sb_printf(b, "    \"model_type\": \"gemma4_text\", \"torch_dtype\": \"%s\",\n",
                 dtype == OX_BF16 ? "bfloat16" : "float32");
    ox_sb_printf(b, "    \"vocab_size\": %d, \"hidden_size\": %d, \"intermediate_size\": %d,\n", s->vocab,
                 s->hidden, s->ffn);
    ox_sb_printf(b, "    \"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"num_key_value_heads\": %d,\n",
                 s->layers, s->heads, s->kv_heads);
    if (s->k_eq_v) ox_sb_printf(b, "    \"num_global_key_value_heads\": %d,\n", s->global_kv_heads);
    else ox_sb_printf(b, "    \"num_global_key_value_heads\": null,\n");
    ox_sb_printf(b, "    \"head_dim\": %d, \"global_head_dim\": %d, \"sliding_window\": %d,\n", s->head_dim,
                 s->global_head_dim, s->window);
    ox_sb_printf(b, "    \"layer_types\": [");
    for (int l = 0; l < s->layers; l++)
        ox_sb_printf(b, "%s\"%s\"", l ? ", " : "", is_full(s, l) ? "full_attention" : "sliding_attention");
    ox_sb_printf(b, "],\n    \"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"default\", "
                    "\"rope_theta\": %s}, \"full_attention\": {\"rope_type\": \"proportional\", "
                    "\"partial_rotary_factor\": %s, \"rope_theta\": %s}},\n",
                 json_float(f1, sizeof f1, s->rope_base_swa), json_float(f2, sizeof f2, s->partial_rotary),
                 json_float(f3, sizeof f3, s->rope_base));
    ox_sb_printf(b, "    \"rms_norm_eps\": %s, \"hidden_activation\": \"gelu_pytorch_tanh\",\n",
                 json_float(f1, sizeof f1, s->eps));
    if (s->softcap > 0)
        ox_sb_printf(b, "    \"final_logit_softcapping\": %s,\n", json_float(f1, sizeof f1, s->softcap));
    else ox_sb_printf(b, "    \"final_logit_softcapping\": null,\n");
    ox_sb_printf(b, "    \"tie_word_embeddings\": true, \"attention_bias\": false,\n");
    ox_sb_printf(b, "    \"hidden_size_per_layer_input\": %d, \"vocab_size_per_layer_input\": %d,\n", s->ple,
                 s->vocab);
    ox_sb_printf(b, "    \"num_kv_shared_layers\": %d, \"attention_k_eq_v\": %s, \"use_double_wide_mlp\": %s,\n",
                 s->kv_shared, s->k_eq_v ? "true" : "false", s->double_wide ? "true" : "false");
    ox_sb_printf(b, "    \"enable_moe_block\": %s", s->moe ? "true" : "false");
    if (s->moe)
        ox_sb_printf(b, ", \"num_experts\": %d, \"top_k_experts\": %d, \"moe_intermediate_size\": %d", s->n_experts,
                     s->top_k, s->moe_ffn);
    ox_sb_printf(b, ",\n    \"use_bidirectional_attention\": %s, \"max_position_embeddings\": %d,\n",
                 s->bidirectional ? "\"all\"" : "null", s->ctx);
    ox_sb_printf(b, "    \"pad_token_id\": 0, \"bos_token_id\": 2, \"eos_token_id\": 1\n  }\n}\n");
}

/* tokenizer.json in the HF BPE form Gemma uses: spaces -> U+2581, byte fallback, specials and
 * the <unusedN> block as added tokens (matched before BPE). */
static void tokenizer_json(const vocab *v, ox_strbuf *b) {
    ox_sb_printf(b, "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n\"added_tokens\": [");
    int first = 1;
    for (int i = 0; i < v->n; i++) {
        if (v->type[i] != TOK_CONTROL && v->type[i] != TOK_UNKNOWN && v->type[i] != TOK_USER) continue;
        ox_sb_printf(b, "%s\n {\"id\": %d, \"content\": ", first ? "" : ",", i);
        ox_sb_json_str(b, v->tok[i], strlen(v->tok[i]));
        ox_sb_printf(b, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                        "\"special\": %s}", v->type[i] == TOK_USER ? "false" : "true");
        first = 0;
    }
    ox_sb_printf(b, "],\n\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"" SPACE "\"},\n"
                    "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", \"invert\": false},\n"
                    "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<bos>\", \"type_id\": 0}}, "
                    "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"SpecialToken\": {\"id\": \"<bos>\", \"type_id\": 0}}, "
                    "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], "
                    "\"special_tokens\": {\"<bos>\": {\"id\": \"<bos>\", \"ids\": [2], \"tokens\": [\"<bos>\"]}}},\n"
                    "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"" SPACE "\"}, "
                    "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},\n"
                    "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", \"continuing_subword_prefix\": null, "
                    "\"end_of_word_suffix\": null, \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": false,\n\"vocab\": {");
    for (int i = 0; i < v->n; i++) {
        ox_sb_printf(b, "%s\n", i ? "," : "");
        ox_sb_json_str(b, v->tok[i], strlen(v->tok[i]));
        ox_sb_printf(b, ": %d", i);
    }
    ox_sb_printf(b, "},\n\"merges\": [");
    for (int i = 0; i < v->n_merges; i++) {
        const char *m = v->merges[i], *sp = strchr(m, ' ');
        ox_sb_printf(b, "%s\n[", i ? "," : "");
        ox_sb_json_str(b, m, (size_t)(sp - m));
        ox_sb_printf(b, ", ");
        ox_sb_json_str(b, sp + 1, strlen(sp + 1));
        ox_sb_printf(b, "]");
    }
    ox_sb_printf(b, "]}}\n");
}

static int st_fill(void *ud, int i, FILE *f, ox_err *err) { return emit(ud, i, f, err); }

int ox_synth_write_hf(const ox_synth *s, const char *dir, ox_type dtype, int n_shards, ox_err *err) {
    int rc = ox_synth_check(s, err);
    if (rc) return rc;
    if (dtype != OX_F32 && dtype != OX_BF16) return ox_errf(err, OX_E_UNSUPPORTED, "synth: HF dtype must be F32 or BF16");
    if (s->widen) return ox_errf(err, OX_E_UNSUPPORTED, "synth: --widen writes GGUF only");
    if (n_shards < 1 || n_shards > 99) return ox_errf(err, OX_E_RANGE, "synth: shards must be in 1..99");
    vocab v;
    plan p;
    writer_ctx x;
    if ((rc = writer_begin(s, &v, &p, &x, err))) return rc;
    ox_strbuf b = {0}, ix = {0};
    config_json(s, dtype, &b);
    if ((rc = write_text(dir, "config.json", &b, err))) goto done;
    b.len = 0;
    tokenizer_json(&v, &b);
    if ((rc = write_text(dir, "tokenizer.json", &b, err))) goto done;
    uint64_t total = 0, esz = dtype == OX_BF16 ? 2 : 4;
    for (int i = 0; i < p.n; i++)
        if (p.t[i].where != GGUF_ONLY) total += p.t[i].ne[0] * p.t[i].ne[1] * p.t[i].ne[2] * esz;
    ox_sb_printf(&ix, "{\"metadata\": {\"total_size\": %llu}, \"weight_map\": {", (unsigned long long)total);
    int ti = 0, n_map = 0;
    uint64_t acc = 0;
    for (int sh = 0; sh < n_shards; sh++) {
        char fname[64], path[4096];
        if (n_shards == 1) snprintf(fname, sizeof fname, "model.safetensors");
        else snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", sh + 1, n_shards);
        snprintf(path, sizeof path, "%s/%s", dir, fname);
        ox_st_writer *w = ox_st_writer_new();
        if (!w || ox_st_w_meta(w, "format", "pt", err)) {
            ox_st_writer_free(w);
            rc = err && err->code ? err->code : ox_errf(err, OX_E_NOMEM, "synth: out of memory");
            goto done;
        }
        int n = 0;
        uint64_t limit = total * (uint64_t)(sh + 1) / (uint64_t)n_shards;
        for (; ti < p.n && (acc < limit || sh == n_shards - 1); ti++) {
            const ptensor *t = &p.t[ti];
            if (t->where == GGUF_ONLY) continue;
            char name[160];
            uint64_t shape[3];
            for (int d = 0; d < t->n_dims; d++) shape[d] = t->ne[t->n_dims - 1 - d];
            snprintf(name, sizeof name, "model.language_model.%s", t->hf);
            x.t[n] = t;
            x.type[n] = dtype;
            if ((rc = ox_st_w_tensor(w, name, dtype == OX_BF16 ? OX_ST_BF16 : OX_ST_F32, t->n_dims, shape, NULL, err))) {
                ox_st_writer_free(w);
                goto done;
            }
            n++;
            acc += t->ne[0] * t->ne[1] * t->ne[2] * esz;
            ox_sb_printf(&ix, "%s\n  \"%s\": \"%s\"", n_map++ ? "," : "", name, fname);
        }
        rc = ox_st_w_write(w, path, st_fill, &x, err);
        ox_st_writer_free(w);
        if (rc) goto done;
    }
    ox_sb_printf(&ix, "\n}}\n");
    if (n_shards > 1) rc = write_text(dir, "model.safetensors.index.json", &ix, err);
done:
    ox_sb_free(&b);
    ox_sb_free(&ix);
    writer_end(&v, &p, &x);
    return rc;
}

int ox_synth_type_from_name(const char *name) {
    static const struct { const char *n; ox_type t; } tab[] = {
        {"f32", OX_F32}, {"f16", OX_F16}, {"bf16", OX_BF16}, {"q8_0", OX_Q8_0}, {"q4_0", OX_Q4_0},
        {"q4_1", OX_Q4_1}, {"q5_0", OX_Q5_0}, {"q5_1", OX_Q5_1}, {"q2_k", OX_Q2_K}, {"q3_k", OX_Q3_K},
        {"q4_k", OX_Q4_K}, {"q5_k", OX_Q5_K}, {"q6_k", OX_Q6_K},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(name, tab[i].n)) return (int)tab[i].t;
    return -1;
}
