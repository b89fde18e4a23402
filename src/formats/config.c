/* config.c — see config.h. Key names and defaults follow docs/gemma4.md §1.1 (HF) and §3.3
 * (GGUF); derived per-layer values follow §1.2. */
#include "formats/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"

/* ---- JSON ---- */

typedef struct {
    const ox_json *obj;
    const char *fname;
    ox_err *err;
} jctx;

/* Integer key: missing or null -> dflt (or OX_E_CONFIG if required). */
static int jint(jctx *j, const char *key, int required, int dflt, int *out) {
    const ox_json *v = ox_json_get(j->obj, key);
    if (!v || ox_json_type(v) == OX_JSON_NULL) {
        if (required) return ox_errf(j->err, OX_E_CONFIG, "%s: config key %s is missing", j->fname, key);
        *out = dflt;
        return 0;
    }
    int64_t x;
    if (!ox_json_int(v, &x) || x < INT32_MIN || x > INT32_MAX)
        return ox_errf(j->err, OX_E_CONFIG, "%s: config key %s: integer expected", j->fname, key);
    *out = (int)x;
    return 0;
}

static int jnum(const ox_json *obj, const char *key, float dflt, float *out, const char *fname, ox_err *err) {
    const ox_json *v = ox_json_get(obj, key);
    if (!v || ox_json_type(v) == OX_JSON_NULL) {
        *out = dflt;
        return 0;
    }
    if (ox_json_type(v) != OX_JSON_NUMBER)
        return ox_errf(err, OX_E_CONFIG, "%s: config key %s: number expected", fname, key);
    *out = (float)ox_json_num(v, 0);
    return 0;
}

static int jbool(jctx *j, const char *key, int *out) {
    const ox_json *v = ox_json_get(j->obj, key);
    if (!v || ox_json_type(v) == OX_JSON_NULL) {
        *out = 0;
        return 0;
    }
    if (ox_json_type(v) != OX_JSON_BOOL)
        return ox_errf(j->err, OX_E_CONFIG, "%s: config key %s: boolean expected", j->fname, key);
    *out = ox_json_bool(v, 0);
    return 0;
}

static void add_eos(ox_config *c, int64_t id) {
    if (id < 0 || id > INT32_MAX) return;
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == id) return;
    if (c->n_eos < (int)(sizeof c->eos_ids / sizeof c->eos_ids[0])) c->eos_ids[c->n_eos++] = (int)id;
    if (c->n_eos == 1) c->eos_id = (int)id;
}

int ox_config_add_eos(ox_config *c, const struct ox_json *v) {
    int64_t id;
    if (ox_json_int(v, &id)) {
        add_eos(c, id);
        return 0;
    }
    if (ox_json_type(v) != OX_JSON_ARRAY) return -1;
    for (size_t i = 0; i < ox_json_len(v); i++) {
        if (!ox_json_int(ox_json_at(v, i), &id)) return -1;
        add_eos(c, id);
    }
    return 0;
}

static int rope_from_json(const ox_json *tc, ox_config *c, const char *fname, ox_err *err) {
    const ox_json *rp = ox_json_get(tc, "rope_parameters");
    int rc;
    c->rope_factor = 1.0f;
    if (ox_json_type(rp) != OX_JSON_OBJECT) { /* older configs: flat keys; released ones: defaults */
        c->partial_rotary = 0.25f;
        if ((rc = jnum(tc, "rope_theta", 1e6f, &c->rope_base_full, fname, err))) return rc;
        return jnum(tc, "rope_local_base_freq", 1e4f, &c->rope_base_sliding, fname, err);
    }
    const ox_json *s = ox_json_get(rp, "sliding_attention"), *f = ox_json_get(rp, "full_attention");
    if ((rc = jnum(s, "rope_theta", 1e4f, &c->rope_base_sliding, fname, err)) ||
        (rc = jnum(f, "rope_theta", 1e6f, &c->rope_base_full, fname, err)) ||
        (rc = jnum(f, "partial_rotary_factor", f ? 1.0f : 0.25f, &c->partial_rotary, fname, err)) ||
        (rc = jnum(f, "factor", 1.0f, &c->rope_factor, fname, err)))
        return ox_err_prefix(err, "rope_parameters");
    return 0;
}

int ox_config_from_json(const struct ox_json *doc, ox_config *c, const char *fname, ox_err *err) {
    memset(c, 0, sizeof *c);
    if (!fname) fname = "config.json";
    if (ox_json_type(doc) != OX_JSON_OBJECT) return ox_errf(err, OX_E_CONFIG, "%s: config is not a JSON object", fname);
    const ox_json *tc = ox_json_get(doc, "text_config");
    if (ox_json_type(tc) != OX_JSON_OBJECT) tc = doc;
    if (ox_json_get(tc, "backbone_hidden_size") || ox_json_get(doc, "backbone_hidden_size"))
        return ox_errf(err, OX_E_UNSUPPORTED,
                       "%s: a Gemma 4 assistant (MTP drafter) checkpoint: HF safetensors drafters "
                       "are not supported yet; convert it to GGUF (llama.cpp's convert_hf_to_gguf.py writes "
                       "gemma4-assistant)",
                       fname);
    jctx j = {tc, fname, err};
    int rc, moe_ffn2, unified = ox_config_is_unified(doc, tc);
    if (unified && (rc = ox_config_unified_check(doc, tc, fname, err))) return rc;
    /* class defaults that differ: the unified text config's (docs/gemma4.md §6) */
    int dflt_window = unified ? 1024 : 512, dflt_ctx = unified ? 262144 : 131072;
    if ((rc = jint(&j, "vocab_size", 1, 0, &c->vocab)) || (rc = jint(&j, "hidden_size", 1, 0, &c->hidden)) ||
        (rc = jint(&j, "num_hidden_layers", 1, 0, &c->n_layers)) ||
        (rc = jint(&j, "num_attention_heads", 1, 0, &c->n_heads)) ||
        (rc = jint(&j, "num_key_value_heads", 1, 0, &c->n_kv_heads)) ||
        (rc = jint(&j, "num_global_key_value_heads", 0, 0, &c->n_global_kv_heads)) ||
        (rc = jint(&j, "head_dim", 1, 0, &c->head_dim)) ||
        (rc = jint(&j, "global_head_dim", 0, unified ? 512 : c->head_dim, &c->global_head_dim)) ||
        (rc = jint(&j, "intermediate_size", 1, 0, &c->intermediate)) ||
        (rc = jint(&j, "sliding_window", 0, dflt_window, &c->sliding_window)) ||
        (rc = jint(&j, "hidden_size_per_layer_input", 0, 0, &c->ple_dim)) ||
        (rc = jint(&j, "vocab_size_per_layer_input", 0, c->vocab, &c->ple_vocab)) ||
        (rc = jint(&j, "num_kv_shared_layers", 0, 0, &c->n_kv_shared)) ||
        (rc = jbool(&j, "attention_k_eq_v", &c->k_eq_v)) || (rc = jbool(&j, "use_double_wide_mlp", &c->double_wide)) ||
        (rc = jbool(&j, "enable_moe_block", &c->moe)) || (rc = jint(&j, "num_experts", 0, 0, &c->n_experts)) ||
        (rc = jint(&j, "top_k_experts", 0, 0, &c->top_k_experts)) ||
        (rc = jint(&j, "expert_intermediate_size", 0, 0, &moe_ffn2)) ||
        (rc = jint(&j, "moe_intermediate_size", 0, moe_ffn2, &c->moe_ffn)) ||
        (rc = jint(&j, "max_position_embeddings", 0, dflt_ctx, &c->ctx_max)) ||
        (rc = jnum(tc, "rms_norm_eps", 1e-6f, &c->rms_eps, fname, err)) ||
        (rc = jnum(tc, "final_logit_softcapping", 0.0f, &c->softcap, fname, err)) ||
        (rc = rope_from_json(tc, c, fname, err)))
        return rc;
    /* token ids: text_config first, then the wrapper */
    jctx jd = {doc, fname, err};
    if ((rc = jint(&j, "bos_token_id", 0, -1, &c->bos_id)) || (rc = jint(&j, "pad_token_id", 0, -1, &c->pad_id)))
        return rc;
    if (c->bos_id < 0 && (rc = jint(&jd, "bos_token_id", 0, 2, &c->bos_id))) return rc;
    if (c->pad_id < 0 && (rc = jint(&jd, "pad_token_id", 0, 0, &c->pad_id))) return rc;
    const ox_json *e1 = ox_json_get(tc, "eos_token_id"), *e2 = tc != doc ? ox_json_get(doc, "eos_token_id") : NULL;
    if ((e1 && ox_json_type(e1) != OX_JSON_NULL && ox_config_add_eos(c, e1)) ||
        (e2 && ox_json_type(e2) != OX_JSON_NULL && ox_config_add_eos(c, e2)))
        return ox_errf(err, OX_E_CONFIG, "%s: config key eos_token_id: integer or integer array expected", fname);
    if (!c->n_eos) add_eos(c, 1);

    const ox_json *bd = ox_json_get(tc, "use_bidirectional_attention");
    if (bd && ox_json_type(bd) != OX_JSON_NULL) {
        const char *s = ox_json_str(bd);
        if (!s || (strcmp(s, "all") && strcmp(s, "vision")))
            return ox_errf(err, OX_E_CONFIG,
                           "%s: config key use_bidirectional_attention: null, \"vision\" or \"all\" expected", fname);
        c->bidirectional = strcmp(s, "all") == 0;
        c->bidir_vision = strcmp(s, "vision") == 0; /* only image tokens, only sliding layers */
    } else if (!bd && unified) {
        c->bidir_vision = 1; /* the unified text config's class default is "vision" (an explicit null is causal) */
    }

    if (c->n_layers < 1 || c->n_layers > OX_MAX_LAYERS)
        return ox_errf(err, OX_E_CONFIG, "%s: num_hidden_layers = %d (1..%d supported)", fname, c->n_layers,
                       OX_MAX_LAYERS);
    const ox_json *lt = ox_json_get(tc, "layer_types");
    if (lt && ox_json_type(lt) != OX_JSON_NULL) {
        if (ox_json_type(lt) != OX_JSON_ARRAY || ox_json_len(lt) != (size_t)c->n_layers)
            return ox_errf(err, OX_E_CONFIG, "%s: layer_types must be an array of num_hidden_layers = %d entries",
                           fname, c->n_layers);
        for (int l = 0; l < c->n_layers; l++) {
            const char *s = ox_json_str(ox_json_at(lt, (size_t)l));
            if (!s || (strcmp(s, "full_attention") && strcmp(s, "sliding_attention")))
                return ox_errf(err, OX_E_CONFIG,
                               "%s: layer_types[%d]: \"sliding_attention\" or \"full_attention\" expected", fname, l);
            c->layers[l].full = strcmp(s, "full_attention") == 0;
        }
    } else { /* HF default: 5 sliding + 1 full, last layer full */
        for (int l = 0; l < c->n_layers; l++) c->layers[l].full = (l % 6 == 5) || l == c->n_layers - 1;
    }
    c->unified = unified;
    if ((rc = ox_config_per_layer(tc, c, unified, fname, err))) return rc;
    return ox_config_derive(c, fname, err);
}

/* ---- derive + validate ---- */

int ox_config_derive(ox_config *c, const char *fname, ox_err *err) {
    if (!fname) fname = "config";
    int L = c->n_layers;
#define REQUIRE(cond, ...)                                                                                             \
    do {                                                                                                               \
        if (!(cond)) return ox_errf(err, OX_E_CONFIG, __VA_ARGS__);                                                    \
    } while (0)
    REQUIRE(L >= 1 && L <= OX_MAX_LAYERS, "%s: num_hidden_layers = %d (1..%d supported)", fname, L, OX_MAX_LAYERS);
    REQUIRE(c->vocab > 0, "%s: vocab_size = %d must be positive", fname, c->vocab);
    REQUIRE(c->hidden > 0, "%s: hidden_size = %d must be positive", fname, c->hidden);
    REQUIRE(c->n_heads > 0, "%s: num_attention_heads = %d must be positive", fname, c->n_heads);
    REQUIRE(c->n_kv_heads > 0, "%s: num_key_value_heads = %d must be positive", fname, c->n_kv_heads);
    REQUIRE(c->head_dim > 0 && c->head_dim % 2 == 0, "%s: head_dim = %d must be positive and even", fname, c->head_dim);
    REQUIRE(c->global_head_dim > 0 && c->global_head_dim % 2 == 0, "%s: global_head_dim = %d must be positive and even",
            fname, c->global_head_dim);
    REQUIRE(c->intermediate > 0, "%s: intermediate_size = %d must be positive", fname, c->intermediate);
    REQUIRE(c->ple_dim >= 0, "%s: hidden_size_per_layer_input = %d must not be negative", fname, c->ple_dim);
    REQUIRE(c->ple_dim == 0 || c->ple_vocab > 0, "%s: vocab_size_per_layer_input = %d must be positive", fname,
            c->ple_vocab);
    REQUIRE(c->n_kv_shared >= 0 && c->n_kv_shared < L, "%s: num_kv_shared_layers = %d must be in [0, %d)", fname,
            c->n_kv_shared, L);
    /* float keys are read as f32: a JSON number beyond FLT_MAX arrives as inf */
    REQUIRE(c->rms_eps > 0 && isfinite(c->rms_eps), "%s: rms_norm_eps must be positive and finite", fname);
    REQUIRE(c->softcap >= 0 && isfinite(c->softcap), "%s: final_logit_softcapping must be finite and not negative",
            fname);
    REQUIRE(c->rope_base_full > 0 && c->rope_base_sliding > 0 && isfinite(c->rope_base_full) &&
                isfinite(c->rope_base_sliding),
            "%s: rope_theta must be positive and finite", fname);
    REQUIRE(c->partial_rotary > 0 && c->partial_rotary <= 1, "%s: partial_rotary_factor = %g must be in (0, 1]", fname,
            c->partial_rotary);
    REQUIRE(c->rope_factor > 0 && isfinite(c->rope_factor), "%s: rope_parameters factor must be positive and finite",
            fname);
    REQUIRE(c->ctx_max > 0, "%s: max_position_embeddings = %d must be positive", fname, c->ctx_max);
    if (c->moe) {
        REQUIRE(c->n_experts > 0, "%s: enable_moe_block needs num_experts > 0", fname);
        REQUIRE(c->top_k_experts > 0 && c->top_k_experts <= c->n_experts, "%s: top_k_experts = %d must be in [1, %d]",
                fname, c->top_k_experts, c->n_experts);
        REQUIRE(c->moe_ffn > 0, "%s: enable_moe_block needs moe_intermediate_size > 0", fname);
    }
    int first_shared = L - c->n_kv_shared;
    for (int l = 0; l < L; l++) {
        ox_layer_cfg *y = &c->layers[l];
        int full = y->full ? 1 : 0;
        memset(y, 0, sizeof *y);
        y->full = full;
        y->head_dim = full ? c->global_head_dim : c->head_dim;
        y->k_eq_v = c->k_eq_v && full;
        y->n_kv_heads = y->k_eq_v ? c->n_global_kv_heads : c->n_kv_heads;
        REQUIRE(!y->k_eq_v || c->n_global_kv_heads > 0,
                "%s: attention_k_eq_v needs num_global_key_value_heads > 0 (layer %d is full attention)", fname, l);
        REQUIRE(c->n_heads % y->n_kv_heads == 0, "%s: num_attention_heads = %d is not a multiple of %s = %d (layer %d)",
                fname, c->n_heads, y->k_eq_v ? "num_global_key_value_heads" : "num_key_value_heads", y->n_kv_heads, l);
        y->shared = c->n_kv_shared > 0 && l >= first_shared;
        y->kv_src = l;
        if (y->shared) {
            y->kv_src = -1;
            for (int k = first_shared - 1; k >= 0 && y->kv_src < 0; k--)
                if (c->layers[k].full == full) y->kv_src = k;
            REQUIRE(y->kv_src >= 0,
                    "%s: num_kv_shared_layers = %d: shared layer %d (%s) has no unshared %s layer to read from", fname,
                    c->n_kv_shared, l, full ? "full" : "sliding", full ? "full" : "sliding");
        }
        y->ffn = c->intermediate * ((c->double_wide && y->shared) ? 2 : 1);
        if (!full) REQUIRE(c->sliding_window > 0, "%s: sliding_window = %d must be positive", fname, c->sliding_window);
        y->window = full ? 0 : c->sliding_window;
        y->rope_base = full ? c->rope_base_full : c->rope_base_sliding;
        y->rope_pairs = full ? (int)floor((double)c->partial_rotary * y->head_dim / 2) : y->head_dim / 2;
        REQUIRE(y->rope_pairs >= 1, "%s: partial_rotary_factor = %g leaves no rotated pairs", fname, c->partial_rotary);
    }
#undef REQUIRE
    return 0;
}

/* ---- GGUF ---- */

/* Keys carry the architecture as prefix: "gemma4." or, for the MTP drafter, "gemma4-assistant."
 * (kb: the caller's buffer, pre: the prefix; each use is consumed before the next). */
#define K(s) (snprintf(kb, sizeof kb, "%s%s", pre, s), kb)

/* Optional u32/f32 keys: absent -> dflt. *out is set on every path, errors included. */
static int g_u32(const ox_gguf *g, const char *key, int dflt, int *out, ox_err *err) {
    uint32_t v;
    *out = dflt;
    int rc = ox_gguf_get_u32(g, key, &v, err);
    if (rc == OX_E_MISSING) return 0;
    if (rc) return err ? (err->code = OX_E_CONFIG) : OX_E_CONFIG;
    if (v > INT32_MAX) return ox_errf(err, OX_E_CONFIG, "%s: %s = %u is too large", ox_gguf_name(g), key, v);
    *out = (int)v;
    return 0;
}
static int g_f32(const ox_gguf *g, const char *key, float dflt, float *out, ox_err *err) {
    int rc = ox_gguf_get_f32(g, key, out, err);
    if (rc == OX_E_MISSING) {
        *out = dflt;
        return 0;
    }
    if (rc) return err ? (err->code = OX_E_CONFIG) : OX_E_CONFIG;
    return 0;
}
static int g_req(const ox_gguf *g, const char *key, int *out, ox_err *err) {
    int rc = g_u32(g, key, 0, out, err);
    if (!rc && !ox_gguf_find(g, key))
        return ox_errf(err, OX_E_CONFIG, "%s: metadata key %s is missing", ox_gguf_name(g), key);
    return rc;
}

/* A per-layer key that is a scalar or an L-element integer array. val(l) = vals[l]. */
static int g_layer_ints(const ox_gguf *g, const char *key, int L, int *vals, ox_err *err) {
    const ox_gguf_value *v = ox_gguf_find(g, key);
    if (!v) return ox_errf(err, OX_E_CONFIG, "%s: metadata key %s is missing", ox_gguf_name(g), key);
    int64_t x;
    if (v->type != OX_GGUF_ARRAY) {
        if (ox_gguf_val_i64(v, &x) || x < 0 || x > INT32_MAX)
            return ox_errf(err, OX_E_CONFIG, "%s: %s: non-negative integer expected", ox_gguf_name(g), key);
        for (int l = 0; l < L; l++) vals[l] = (int)x;
        return 0;
    }
    if (v->v.arr.n != (uint64_t)L)
        return ox_errf(err, OX_E_CONFIG, "%s: %s has %llu entries, block_count is %d", ox_gguf_name(g), key,
                       (unsigned long long)v->v.arr.n, L);
    for (int l = 0; l < L; l++)
        if (ox_gguf_arr_i64(v, (uint64_t)l, &x) || x < 0 || x > INT32_MAX)
            return ox_errf(err, OX_E_CONFIG, "%s: %s[%d]: non-negative integer expected", ox_gguf_name(g), key, l);
        else vals[l] = (int)x;
    return 0;
}

/* partial rotary = share of rope_freqs entries equal to 1 before the first other value (1e30). */
static int partial_from_rope_freqs(const ox_gguf *g, ox_config *c, ox_err *err) {
    const ox_gguf_tensor *t = ox_gguf_find_tensor(g, "rope_freqs.weight");
    c->partial_rotary = 0.25f;
    if (!t) return 0;
    if (t->type != OX_F32 || t->n_dims != 1 || t->ne[0] != (uint64_t)c->global_head_dim / 2)
        return ox_errf(err, OX_E_CONFIG, "%s: rope_freqs.weight must be F32 with key_length/2 = %d entries",
                       ox_gguf_name(g), c->global_head_dim / 2);
    size_t n = (size_t)t->ne[0];
    float *f = malloc(n * sizeof *f);
    if (!f) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", ox_gguf_name(g));
    int rc = ox_host_read(g->file, t->offset, n * sizeof *f, f, err);
    size_t k = 0;
    while (!rc && k < n && f[k] == 1.0f) k++;
    free(f);
    if (rc) return rc;
    if (k == 0) return ox_errf(err, OX_E_CONFIG, "%s: rope_freqs.weight rotates no pairs", ox_gguf_name(g));
    c->partial_rotary = (float)k / (float)n;
    return 0;
}

/* The drafter's own keys (llama.cpp gemma4-assistant): the target's width, every block a
 * next-n layer; it has no caches, PLE or experts of its own. Called before the derivation. */
static int assistant_from_gguf(const ox_gguf *g, ox_config *c, char *kb, size_t cap, ox_err *err) {
    const char *fn = ox_gguf_name(g);
    int nextn, rc;
    snprintf(kb, cap, "gemma4-assistant.embedding_length_out");
    if ((rc = g_req(g, kb, &c->backbone_hidden, err))) return rc;
    snprintf(kb, cap, "gemma4-assistant.nextn_predict_layers");
    if ((rc = g_u32(g, kb, c->n_layers, &nextn, err))) return rc;
    if (c->backbone_hidden <= 0 || c->backbone_hidden == c->hidden)
        return ox_errf(err, OX_E_CONFIG,
                       "%s: gemma4-assistant.embedding_length_out = %d must be the target's width, "
                       "not the drafter's own (%d)",
                       fn, c->backbone_hidden, c->hidden);
    if (nextn != c->n_layers)
        return ox_errf(err, OX_E_CONFIG, "%s: gemma4-assistant.nextn_predict_layers = %d, block_count is %d", fn, nextn,
                       c->n_layers);
    /* keys a converter copies from the target's config: llama.cpp's drafter graph ignores them */
    c->ple_dim = c->n_kv_shared = c->moe = c->n_experts = c->top_k_experts = c->moe_ffn = c->double_wide = 0;
    return 0;
}

int ox_config_from_gguf(const struct ox_gguf *g, ox_config *c, ox_err *err) {
    memset(c, 0, sizeof *c);
    const char *fn = ox_gguf_name(g), *arch;
    if (ox_gguf_get_str(g, "general.architecture", &arch, err)) return err ? (err->code = OX_E_CONFIG) : OX_E_CONFIG;
    c->assistant = strcmp(arch, "gemma4-assistant") == 0;
    if (strcmp(arch, "gemma4") != 0 && !c->assistant)
        return ox_errf(err, OX_E_UNSUPPORTED, "%s: architecture %s is not supported (gemma4 and gemma4-assistant are)",
                       fn, arch);
    const char *pre = c->assistant ? "gemma4-assistant." : "gemma4.";
    char kb[96];
    int rc, L;
    if ((rc = g_req(g, K("block_count"), &L, err))) return rc;
    if (L < 1 || L > OX_MAX_LAYERS)
        return ox_errf(err, OX_E_CONFIG, "%s: gemma4.block_count = %d (1..%d supported)", fn, L, OX_MAX_LAYERS);
    c->n_layers = L;
    int kv[OX_MAX_LAYERS], ff[OX_MAX_LAYERS];
    int bos, eos, pad, eot;
    if ((rc = g_req(g, K("embedding_length"), &c->hidden, err)) ||
        (rc = g_req(g, K("attention.head_count"), &c->n_heads, err)) ||
        (rc = g_req(g, K("attention.key_length"), &c->global_head_dim, err)) ||
        (rc = g_u32(g, K("attention.key_length_swa"), c->global_head_dim, &c->head_dim, err)) ||
        (rc = g_u32(g, K("attention.sliding_window"), 512, &c->sliding_window, err)) ||
        (rc = g_u32(g, K("attention.shared_kv_layers"), 0, &c->n_kv_shared, err)) ||
        (rc = g_u32(g, K("embedding_length_per_layer_input"), 0, &c->ple_dim, err)) ||
        (rc = g_u32(g, K("context_length"), 131072, &c->ctx_max, err)) ||
        (rc = g_u32(g, K("expert_count"), 0, &c->n_experts, err)) ||
        (rc = g_u32(g, K("expert_used_count"), 0, &c->top_k_experts, err)) ||
        (rc = g_u32(g, K("expert_feed_forward_length"), 0, &c->moe_ffn, err)) ||
        (rc = g_f32(g, K("attention.layer_norm_rms_epsilon"), 1e-6f, &c->rms_eps, err)) ||
        (rc = g_f32(g, K("final_logit_softcapping"), 0.0f, &c->softcap, err)) ||
        (rc = g_f32(g, K("rope.freq_base"), 1e6f, &c->rope_base_full, err)) ||
        (rc = g_f32(g, K("rope.freq_base_swa"), 1e4f, &c->rope_base_sliding, err)) ||
        (rc = g_u32(g, "tokenizer.ggml.bos_token_id", 2, &bos, err)) ||
        (rc = g_u32(g, "tokenizer.ggml.eos_token_id", 1, &eos, err)) ||
        (rc = g_u32(g, "tokenizer.ggml.padding_token_id", 0, &pad, err)) ||
        (rc = g_u32(g, "tokenizer.ggml.eot_token_id", -1, &eot, err)) ||
        (rc = g_layer_ints(g, K("attention.head_count_kv"), L, kv, err)) ||
        (rc = g_layer_ints(g, K("feed_forward_length"), L, ff, err)))
        return rc;
    if (c->n_kv_shared >= L) /* checked here too: the loops below index layers from L - n_kv_shared */
        return ox_errf(err, OX_E_CONFIG, "%s: gemma4.attention.shared_kv_layers = %d must be in [0, %d)", fn,
                       c->n_kv_shared, L);
    c->moe = c->n_experts > 0;
    c->rope_factor = 1.0f;
    c->bos_id = bos, c->pad_id = pad;
    add_eos(c, eos);
    if (eot >= 0) add_eos(c, eot);

    /* vocab from the embedding table (authoritative), else the token list */
    const ox_gguf_tensor *emb = ox_gguf_find_tensor(g, "token_embd.weight");
    const ox_gguf_value *toks = ox_gguf_find(g, "tokenizer.ggml.tokens");
    uint64_t vocab = emb && emb->n_dims == 2 ? emb->ne[1] : toks && toks->type == OX_GGUF_ARRAY ? toks->v.arr.n : 0;
    if (!vocab || vocab > INT32_MAX)
        return ox_errf(err, OX_E_CONFIG, "%s: no token_embd.weight or tokenizer.ggml.tokens to size the vocabulary", fn);
    c->vocab = (int)vocab;
    const ox_gguf_tensor *ple = ox_gguf_find_tensor(g, "per_layer_token_embd.weight");
    c->ple_vocab = ple && ple->n_dims == 2 && ple->ne[1] <= INT32_MAX ? (int)ple->ne[1] : c->vocab;

    /* layer types: bool array (true = sliding) or the older integer period */
    const ox_gguf_value *pat = ox_gguf_find(g, K("attention.sliding_window_pattern"));
    int64_t period;
    if (pat && pat->type == OX_GGUF_ARRAY) {
        if (pat->v.arr.n != (uint64_t)L)
            return ox_errf(err, OX_E_CONFIG,
                           "%s: gemma4.attention.sliding_window_pattern has %llu entries, block_count is %d", fn,
                           (unsigned long long)pat->v.arr.n, L);
        for (int l = 0; l < L; l++) {
            int sw;
            if (ox_gguf_arr_bool(pat, (uint64_t)l, &sw))
                return ox_errf(err, OX_E_CONFIG, "%s: gemma4.attention.sliding_window_pattern must be a bool array", fn);
            c->layers[l].full = !sw;
        }
    } else if (pat && !ox_gguf_val_i64(pat, &period) && period > 0) {
        for (int l = 0; l < L; l++) c->layers[l].full = l % period == period - 1;
    } else {
        return ox_errf(err, OX_E_CONFIG, "%s: gemma4.attention.sliding_window_pattern is missing or malformed", fn);
    }

    /* k_eq_v: a full, unshared layer with K but no V projection */
    int first_shared = L - c->n_kv_shared, lf = -1, ls = -1;
    for (int l = 0; l < L; l++) {
        if (c->layers[l].full && lf < 0 && l < first_shared) lf = l;
        if (!c->layers[l].full && ls < 0) ls = l;
    }
    if (lf >= 0) {
        char kn[64], vn[64];
        snprintf(kn, sizeof kn, "blk.%d.attn_k.weight", lf);
        snprintf(vn, sizeof vn, "blk.%d.attn_v.weight", lf);
        c->k_eq_v = ox_gguf_find_tensor(g, kn) && !ox_gguf_find_tensor(g, vn);
    }
    c->n_kv_heads = kv[ls >= 0 ? ls : 0];
    c->n_global_kv_heads = c->k_eq_v ? kv[lf] : 0;
    c->intermediate = ff[0];
    for (int l = first_shared; l < L; l++)
        if (ff[l] == 2 * ff[0] && ff[0] > 0) c->double_wide = 1;
    if ((rc = partial_from_rope_freqs(g, c, err))) return rc;
    if (c->assistant && (rc = assistant_from_gguf(g, c, kb, sizeof kb, err))) return rc;
    c->bidir_vision = (c->k_eq_v || c->moe) && !c->assistant; /* no GGUF key: the 26B-A4B / 31B shapes */
    if ((rc = ox_config_derive(c, fn, err))) return rc;
    for (int l = 0; c->assistant && l < L; l++) c->layers[l].shared = 1; /* queries only: reads the target's caches */
    for (int l = 0; l < L; l++) {
        if (c->layers[l].n_kv_heads != kv[l])
            return ox_errf(err, OX_E_CONFIG, "%s: gemma4.attention.head_count_kv[%d] = %d, expected %d for a %s layer",
                           fn, l, kv[l], c->layers[l].n_kv_heads, c->layers[l].full ? "full" : "sliding");
        if (c->layers[l].ffn != ff[l])
            return ox_errf(err, OX_E_CONFIG, "%s: gemma4.feed_forward_length[%d] = %d, expected %d", fn, l, ff[l],
                           c->layers[l].ffn);
    }
    return 0;
}

/* ---- back to JSON (pre-quantized files carry their config) ---- */

int ox_config_to_json(const ox_config *c, ox_strbuf *b) {
    ox_sb_printf(b,
                 "{\"model_type\":\"gemma4_text\",\"vocab_size\":%d,\"hidden_size\":%d,\"num_hidden_layers\":%d,"
                 "\"num_attention_heads\":%d,\"num_key_value_heads\":%d,",
                 c->vocab, c->hidden, c->n_layers, c->n_heads, c->n_kv_heads);
    if (c->n_global_kv_heads) ox_sb_printf(b, "\"num_global_key_value_heads\":%d,", c->n_global_kv_heads);
    ox_sb_printf(b,
                 "\"head_dim\":%d,\"global_head_dim\":%d,\"intermediate_size\":%d,\"sliding_window\":%d,"
                 "\"hidden_size_per_layer_input\":%d,\"vocab_size_per_layer_input\":%d,\"num_kv_shared_layers\":%d,"
                 "\"attention_k_eq_v\":%s,\"use_double_wide_mlp\":%s,\"enable_moe_block\":%s,",
                 c->head_dim, c->global_head_dim, c->intermediate, c->sliding_window, c->ple_dim, c->ple_vocab,
                 c->n_kv_shared, c->k_eq_v ? "true" : "false", c->double_wide ? "true" : "false",
                 c->moe ? "true" : "false");
    if (c->moe)
        ox_sb_printf(b, "\"num_experts\":%d,\"top_k_experts\":%d,\"moe_intermediate_size\":%d,", c->n_experts,
                     c->top_k_experts, c->moe_ffn);
    ox_sb_printf(b, "\"use_bidirectional_attention\":%s,\"max_position_embeddings\":%d,\"rms_norm_eps\":%.9g,",
                 c->bidirectional  ? "\"all\""
                 : c->bidir_vision ? "\"vision\""
                                   : "null",
                 c->ctx_max, c->rms_eps);
    if (c->softcap > 0) ox_sb_printf(b, "\"final_logit_softcapping\":%.9g,", c->softcap);
    ox_sb_printf(
        b,
        "\"rope_parameters\":{\"sliding_attention\":{\"rope_type\":\"default\",\"rope_theta\":%.9g},"
        "\"full_attention\":{\"rope_type\":\"proportional\",\"partial_rotary_factor\":%.9g,\"rope_theta\":%.9g",
        c->rope_base_sliding, c->partial_rotary, c->rope_base_full);
    if (c->rope_factor != 1.0f) ox_sb_printf(b, ",\"factor\":%.9g", c->rope_factor);
    ox_sb_printf(b, "}},\"bos_token_id\":%d,\"pad_token_id\":%d,\"eos_token_id\":[", c->bos_id, c->pad_id);
    for (int i = 0; i < c->n_eos; i++) ox_sb_printf(b, i ? ",%d" : "%d", c->eos_ids[i]);
    ox_sb_printf(b, "],\"layer_types\":[");
    for (int l = 0; l < c->n_layers; l++)
        ox_sb_printf(b, "%s\"%s\"", l ? "," : "", c->layers[l].full ? "full_attention" : "sliding_attention");
    ox_sb_printf(b, "]}");
    return b->oom ? OX_E_NOMEM : 0;
}
