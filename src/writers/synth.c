/* synth.c — synthetic Gemma 4 text models (see synth.h; synth_impl.h lists the files): the
 * presets, the check and the type names.
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

#include <string.h>

#include "writers/synth_impl.h"

/* ------------------------------------------------------------------ presets */

static const ox_synth base_tiny = {
    .hidden = 256,
    .layers = 6,
    .heads = 4,
    .kv_heads = 2,
    .head_dim = 64,
    .global_head_dim = 128,
    .ffn = 512,
    .double_wide = 1,
    .ple = 64,
    .vocab = 1024,
    .user_tokens = 128,
    .swa_period = 3,
    .kv_shared = 3,
    .window = 16,
    .ctx = 4096,
    .rope_base = 1e6f,
    .rope_base_swa = 1e4f,
    .partial_rotary = 0.25f,
    .softcap = 30.0f,
    .eps = 1e-6f,
    .std = 0.08f,
    .branch_gain = 1.0f,
    .qk_norm_scale = 1.0f,
    .seed = 1234,
    .type = OX_F32,
    .embd_type = OX_F32,
    .ple_type = OX_F32,
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
    if (!strcmp(name, "unified")) { /* Gemma 4 12B (gemma4_unified) structure, small: dense, k_eq_v */
        s->ple = 0, s->kv_shared = 0, s->double_wide = 0, s->k_eq_v = 1, s->global_kv_heads = 1, s->unified = 1;
        s->v_patch = 16, s->v_pool = 3, s->v_pos = 64; /* the image embedder's, once --v-hidden is set */
        return 0;
    }
    return ox_errf(err, OX_E_RANGE, "unknown preset '%s' (tiny, benchlike, bench, e2b, moe, keqv, unified)", name);
}

int ox_synth_check(const ox_synth *s, ox_err *err) {
    if (s->hidden <= 0 || s->layers <= 0 || s->heads <= 0 || s->kv_heads <= 0 || s->head_dim <= 0 ||
        s->global_head_dim <= 0 || s->ffn <= 0 || s->ple < 0 || s->swa_period <= 0 || s->window < 0 || s->ctx <= 0)
        return ox_errf(err, OX_E_CONFIG, "synth: shapes must be positive");
    if (s->layers > 512) return ox_errf(err, OX_E_CONFIG, "synth: at most 512 layers");
    if (s->head_dim % 2 || s->global_head_dim % 2) return ox_errf(err, OX_E_CONFIG, "synth: head dims must be even");
    if (s->heads % s->kv_heads || (s->k_eq_v && (s->global_kv_heads <= 0 || s->heads % s->global_kv_heads)))
        return ox_errf(err, OX_E_CONFIG, "synth: query heads must be a multiple of the KV heads");
    if (s->kv_shared < 0 || s->kv_shared >= s->layers)
        return ox_errf(err, OX_E_CONFIG, "synth: kv_shared must be in [0, layers)");
    if (s->kv_shared > 0) { /* llama.cpp: shared sliding layers read n_kv-2, shared full layers n_kv-1 */
        int nkv = s->layers - s->kv_shared, any_s = 0, any_f = 0;
        for (int l = nkv; l < s->layers; l++) any_f |= synth_is_full(s, l), any_s |= !synth_is_full(s, l);
        if (any_s && !(nkv >= 2 && !synth_is_full(s, nkv - 2)))
            return ox_errf(err, OX_E_CONFIG, "synth: KV-shared sliding layers need layer %d (n_kv-2) sliding", nkv - 2);
        if (any_f && !synth_is_full(s, nkv - 1))
            return ox_errf(err, OX_E_CONFIG, "synth: KV-shared full layers need layer %d (n_kv-1) full", nkv - 1);
    }
    if (s->assistant_of && (s->ple || s->kv_shared || s->moe || s->k_eq_v || s->assistant_of == s->hidden))
        return ox_errf(err, OX_E_CONFIG,
                       "synth: a drafter has no PLE, KV sharing, experts or k_eq_v, and a width "
                       "other than its target's (%d)",
                       s->assistant_of);
    if (s->unified && (s->ple || s->moe))
        return ox_errf(err, OX_E_CONFIG, "synth: a gemma4_unified model has no per-layer embeddings or experts");
    if (s->moe && (s->n_experts <= 0 || s->top_k <= 0 || s->top_k > s->n_experts || s->moe_ffn <= 0))
        return ox_errf(err, OX_E_CONFIG, "synth: bad MoE shape (experts %d, top-k %d, width %d)", s->n_experts,
                       s->top_k, s->moe_ffn);
    if (s->user_tokens < 0 || s->vocab < 7 + 256 + 93 + s->user_tokens + 16 + 10 * !!s->chat_tokens)
        return ox_errf(err, OX_E_CONFIG, "synth: vocab %d too small (need %d)", s->vocab,
                       7 + 256 + 93 + s->user_tokens + 16 + 10 * !!s->chat_tokens);
    if (s->v_layers > 0 && (s->v_hidden <= 0 || s->v_heads <= 0 || s->v_head_dim <= 0 || s->v_head_dim % 4 ||
                            s->v_ffn <= 0 || s->v_patch <= 0 || s->v_pool <= 0 || s->v_pos <= 0))
        return ox_errf(err, OX_E_CONFIG, "synth: bad vision shape (widths positive, head dim a multiple of 4)");
    if (s->unified && s->v_hidden > 0 && (s->v_layers > 0 || s->v_patch <= 0 || s->v_pool <= 0 || s->v_pos <= 0))
        return ox_errf(err, OX_E_CONFIG,
                       "synth: a gemma4_unified image embedder has no tower layers (--v-layers 0) and a positive "
                       "patch, pooling and table size (--v-patch --v-pool --v-pos)");
    if (!ox_type_known(s->type) || !ox_type_known(s->embd_type) || !ox_type_known(s->ple_type) ||
        !ox_type_known(s->ple_proj_type))
        return ox_errf(err, OX_E_UNSUPPORTED, "synth: unknown weight type");
    return 0;
}

int ox_synth_type_from_name(const char *name) {
    static const struct {
        const char *n;
        ox_type t;
    } tab[] = {
        {"f32", OX_F32},   {"f16", OX_F16},   {"bf16", OX_BF16}, {"q8_0", OX_Q8_0}, {"q4_0", OX_Q4_0},
        {"q4_1", OX_Q4_1}, {"q5_0", OX_Q5_0}, {"q5_1", OX_Q5_1}, {"q2_k", OX_Q2_K}, {"q3_k", OX_Q3_K},
        {"q4_k", OX_Q4_K}, {"q5_k", OX_Q5_K}, {"q6_k", OX_Q6_K},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(name, tab[i].n)) return (int)tab[i].t;
    return -1;
}
