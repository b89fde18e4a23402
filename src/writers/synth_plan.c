/* synth_plan.c — the tensor plan of a synthetic model (synth_impl.h). */
#include "writers/synth_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ptensor *add(plan *p, const char *name, const char *hf, int kind, int nd, uint64_t ne0, uint64_t ne1,
                    uint64_t ne2, float mean, float sd) {
    static ptensor spill; /* only when the plan could not be allocated; synth_build_plan reports it */
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
#define W(n, h, c, r)      wmat(p, n, h, c, r, sd, s->type)
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
        uint64_t hd = (uint64_t)synth_head_dim(s, l), nh = (uint64_t)s->heads, I = (uint64_t)synth_ffn(s, l);
        char g[64], h[96];
#define G(x)  (snprintf(g, sizeof g, "blk.%d.%s", l, x), g)
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
int synth_build_plan(const ox_synth *s, plan *p, ox_err *err) {
    p->n = 0;
    p->cap = 8 + 32 * s->layers + synth_vision_plan_size(s) + synth_unified_plan_size(s);
    p->t = malloc((size_t)p->cap * sizeof *p->t);
    if (!p->t) return ox_errf(err, OX_E_NOMEM, "synth: out of memory for the tensor plan");
    if (s->assistant_of) {
        build_drafter_plan(s, p);
        return 0;
    }
    uint64_t H = (uint64_t)s->hidden, V = (uint64_t)s->vocab, P = (uint64_t)s->ple, L = (uint64_t)s->layers;
    float sd = s->std, bg = s->branch_gain, qk = s->qk_norm_scale;
    ptensor *t;
#define W(n, h, c, r)      wmat(p, n, h, c, r, sd, s->type)
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
        uint64_t hd = (uint64_t)synth_head_dim(s, l), nh = (uint64_t)s->heads, kvw = (uint64_t)synth_kv_heads(s, l) * hd;
        uint64_t I = (uint64_t)synth_ffn(s, l);
        int sh = synth_is_shared(s, l);
        char g[64], h[96];
#define G(x)  (snprintf(g, sizeof g, "blk.%d.%s", l, x), g)
#define HF(x) (snprintf(h, sizeof h, "layers.%d.%s", l, x), h)
        N(G("attn_norm.weight"), HF("input_layernorm.weight"), H, 1, 0.1f);
        W(G("attn_q.weight"), HF("self_attn.q_proj.weight"), H, nh * hd);
        if (!sh) W(G("attn_k.weight"), HF("self_attn.k_proj.weight"), H, kvw);
        if (!sh && !(s->k_eq_v && synth_is_full(s, l))) W(G("attn_v.weight"), HF("self_attn.v_proj.weight"), H, kvw);
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
    synth_vision_plan(s, p);
    synth_unified_plan(s, p);
    return 0;
}

ptensor *synth_plan_add(plan *p, const char *name, const char *hf, int kind, int nd, uint64_t ne0, uint64_t ne1,
                        uint64_t ne2, float mean, float sd) {
    return add(p, name, hf, kind, nd, ne0, ne1, ne2, mean, sd);
}

uint64_t ox_synth_params(const ox_synth *s) {
    plan p = {0};
    if (synth_build_plan(s, &p, NULL)) return 0;
    uint64_t n = 0;
    for (int i = 0; i < p.n; i++) n += p.t[i].ne[0] * p.t[i].ne[1] * p.t[i].ne[2];
    free(p.t);
    return n;
}
