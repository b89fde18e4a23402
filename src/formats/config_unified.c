/* config_unified.c — the parts of an HF config.json that Gemma 4 12B (`gemma4_unified`) adds to
 * the Gemma 4 text config (docs/gemma4.md §6): recognizing it, the reference's strict field
 * types, and `per_layer_config` (which transformers writes for gemma4 as well) folded into the
 * per-type fields the rest of the engine reads. See config.h. */
#include <stdio.h>
#include <string.h>

#include "formats/config.h"
#include "formats/json.h"

static int str_is(const ox_json *v, const char *s) {
    const char *x = ox_json_str(v);
    return x && strcmp(x, s) == 0;
}

int ox_config_is_unified(const struct ox_json *doc, const struct ox_json *tc) {
    if (str_is(ox_json_get(doc, "model_type"), "gemma4_unified") ||
        str_is(ox_json_get(tc, "model_type"), "gemma4_unified_text"))
        return 1;
    const ox_json *a = ox_json_get(doc, "architectures");
    for (size_t i = 0; i < ox_json_len(a); i++) {
        const char *s = ox_json_str(ox_json_at(a, i));
        if (s && strncmp(s, "Gemma4Unified", 13) == 0 && !strstr(s, "Assistant")) return 1;
    }
    return 0;
}

static int present(const ox_json *v) { return v && ox_json_type(v) != OX_JSON_NULL; }

/* The reference's configs are strict dataclasses: a float field refuses 30 (an int) and an int
 * field refuses 30.0. `where` names the sub-config in messages ("" for the top level). */
static int strict_fields(const ox_json *obj, const char *where, const char *const *floats, const char *const *ints,
                         const char *fname, ox_err *err) {
    for (int i = 0; floats[i]; i++) {
        const ox_json *v = ox_json_get(obj, floats[i]);
        if (!present(v)) continue;
        if (ox_json_type(v) != OX_JSON_NUMBER || ox_json_int_literal(v))
            return ox_errf(err, OX_E_CONFIG,
                           "%s: config key %s%s: a float is expected (gemma4_unified declares it float: write "
                           "%s.0, not an integer)",
                           fname, where, floats[i], ox_json_type(v) == OX_JSON_NUMBER ? "e.g. 30" : "a number like 30");
    }
    for (int i = 0; ints[i]; i++) {
        const ox_json *v = ox_json_get(obj, ints[i]);
        if (!present(v) || ox_json_type(v) == OX_JSON_ARRAY) continue; /* eos_token_id may be a list */
        if (ox_json_type(v) != OX_JSON_NUMBER || !ox_json_int_literal(v))
            return ox_errf(err, OX_E_CONFIG,
                           "%s: config key %s%s: an integer is expected (gemma4_unified declares it int: no "
                           "fraction or exponent)",
                           fname, where, ints[i]);
    }
    return 0;
}

int ox_config_unified_check(const struct ox_json *doc, const struct ox_json *tc, const char *fname, ox_err *err) {
    static const char *const text_floats[] = {"rms_norm_eps", "final_logit_softcapping", "initializer_range", NULL};
    static const char *const text_ints[] = {"vocab_size",
                                            "hidden_size",
                                            "intermediate_size",
                                            "num_hidden_layers",
                                            "num_attention_heads",
                                            "num_key_value_heads",
                                            "head_dim",
                                            "max_position_embeddings",
                                            "sliding_window",
                                            "num_kv_shared_layers",
                                            "pad_token_id",
                                            "bos_token_id",
                                            "eos_token_id",
                                            NULL};
    static const char *const top_floats[] = {"initializer_range", NULL};
    static const char *const top_ints[] = {"boi_token_id", "eoi_token_id",    "image_token_id", "video_token_id",
                                           "boa_token_id", "eoa_token_index", "audio_token_id", NULL};
    static const char *const mm_floats[] = {"rms_norm_eps", "initializer_range", NULL};
    static const char *const vision_ints[] = {"patch_size",     "pooling_kernel_size", "mm_embed_dim",
                                              "mm_posemb_size", "output_proj_dims",    NULL};
    static const char *const audio_ints[] = {"audio_embed_dim", NULL};
    int rc;
    if ((rc = strict_fields(tc, tc == doc ? "" : "text_config.", text_floats, text_ints, fname, err))) return rc;
    if (tc != doc && (rc = strict_fields(doc, "", top_floats, top_ints, fname, err))) return rc;
    const ox_json *vc = ox_json_get(doc, "vision_config"), *ac = ox_json_get(doc, "audio_config");
    if (ox_json_type(vc) == OX_JSON_OBJECT &&
        (rc = strict_fields(vc, "vision_config.", mm_floats, vision_ints, fname, err)))
        return rc;
    if (ox_json_type(ac) == OX_JSON_OBJECT && (rc = strict_fields(ac, "audio_config.", mm_floats, audio_ints, fname, err)))
        return rc;
    /* the unified text config has no per-layer embeddings and no experts (its class removes the
     * attributes): a checkpoint that says otherwise is not one */
    static const char *const absent[] = {"hidden_size_per_layer_input", "num_experts", "top_k_experts",
                                         "moe_intermediate_size", NULL};
    for (int i = 0; absent[i]; i++) {
        const ox_json *v = ox_json_get(tc, absent[i]);
        int64_t x;
        if (present(v) && !(ox_json_int(v, &x) && x == 0))
            return ox_errf(err, OX_E_UNSUPPORTED,
                           "%s: config key %s: gemma4_unified has no per-layer embeddings or experts (0 or null "
                           "expected)",
                           fname, absent[i]);
    }
    const ox_json *moe = ox_json_get(tc, "enable_moe_block");
    if (present(moe) && ox_json_bool(moe, 1))
        return ox_errf(err, OX_E_UNSUPPORTED, "%s: config key enable_moe_block: gemma4_unified has no experts", fname);
    return 0;
}

/* Two JSON scalars with the same value (numbers by value, strings by content, bools, nulls). */
static int same_scalar(const ox_json *a, const ox_json *b) {
    if (!a || !b || ox_json_type(a) != ox_json_type(b)) return 0;
    switch (ox_json_type(a)) {
    case OX_JSON_NULL: return 1;
    case OX_JSON_BOOL: return ox_json_bool(a, 0) == ox_json_bool(b, 0);
    case OX_JSON_NUMBER: return ox_json_num(a, 0) == ox_json_num(b, 1);
    case OX_JSON_STRING: return strcmp(ox_json_str(a), ox_json_str(b)) == 0;
    default: return 0;
    }
}

/* A layer index key: decimal digits only (transformers writes str(int)), below L. */
static int layer_key(const char *k, int L) {
    long v = 0;
    if (!k || !*k) return -1;
    for (const char *p = k; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000) return -1;
        v = v * 10 + (*p - '0');
    }
    return v < L ? (int)v : -1;
}

static int pos_int(const ox_json *v, int strict, int *out) {
    int64_t x;
    if (!ox_json_int(v, &x) || x <= 0 || x > 1 << 20 || (strict && !ox_json_int_literal(v))) return -1;
    *out = (int)x;
    return 0;
}

int ox_config_per_layer(const struct ox_json *tc, ox_config *c, int unified, const char *fname, ox_err *err) {
    const ox_json *plc = ox_json_get(tc, "per_layer_config");
    int L = c->n_layers;
    if (!present(plc)) {
        /* the reference's default: full layers take num_global_key_value_heads only when it is set */
        if (unified && c->k_eq_v && c->n_global_kv_heads <= 0) c->n_global_kv_heads = c->n_kv_heads;
        return 0;
    }
    if (ox_json_type(plc) != OX_JSON_OBJECT)
        return ox_errf(err, OX_E_CONFIG, "%s: config key per_layer_config: an object {layer index: overrides} expected",
                       fname);
    int hd[OX_MAX_LAYERS], nkv[OX_MAX_LAYERS];
    for (int l = 0; l < L; l++) hd[l] = c->head_dim, nkv[l] = c->n_kv_heads;
    for (size_t i = 0; i < ox_json_len(plc); i++) {
        const ox_json *e = ox_json_at(plc, i);
        const char *k = ox_json_key(e);
        int l = layer_key(k, L);
        if (l < 0)
            return ox_errf(err, OX_E_CONFIG, "%s: per_layer_config key \"%s\": a layer index in [0, %d) expected",
                           fname, k ? k : "", L);
        if (ox_json_type(e) != OX_JSON_OBJECT)
            return ox_errf(err, OX_E_CONFIG, "%s: per_layer_config[%s]: an object of overrides expected", fname, k);
        for (size_t j = 0; j < ox_json_len(e); j++) {
            const ox_json *v = ox_json_at(e, j);
            const char *f = ox_json_key(v);
            if (!strcmp(f, "head_dim") || !strcmp(f, "num_key_value_heads")) {
                int *dst = !strcmp(f, "head_dim") ? &hd[l] : &nkv[l];
                if (pos_int(v, unified, dst))
                    return ox_errf(err, OX_E_CONFIG, "%s: per_layer_config[%s].%s: a positive integer expected", fname,
                                   k, f);
            } else if (!same_scalar(v, ox_json_get(tc, f))) {
                /* an override equal to the model-wide value changes nothing; others are per-layer
                 * shapes the engine does not have */
                return ox_errf(err, OX_E_UNSUPPORTED,
                               "%s: per_layer_config[%s].%s: per-layer values other than head_dim and "
                               "num_key_value_heads are not supported",
                               fname, k, f);
            }
        }
    }
    /* RoPE is resolved per layer type, so each type has one head width; the engine keeps one
     * KV-head count per type as well (full layers: the global one) */
    int gh = 0, gk = 0;
    for (int l = 0; l < L; l++) {
        if (!c->layers[l].full) {
            if (hd[l] != c->head_dim || nkv[l] != c->n_kv_heads)
                return ox_errf(err, OX_E_UNSUPPORTED,
                               "%s: per_layer_config[%d]: sliding layer with head_dim %d / num_key_value_heads %d, "
                               "not the model's %d / %d (one shape per layer type is supported)",
                               fname, l, hd[l], nkv[l], c->head_dim, c->n_kv_heads);
            continue;
        }
        if (!gh) gh = hd[l], gk = nkv[l];
        if (hd[l] != gh || nkv[l] != gk)
            return ox_errf(err, OX_E_UNSUPPORTED,
                           "%s: per_layer_config[%d]: full layer with head_dim %d / num_key_value_heads %d, other "
                           "full layers have %d / %d (one shape per layer type is supported)",
                           fname, l, hd[l], nkv[l], gh, gk);
    }
    /* as in the reference, per_layer_config replaces global_head_dim / num_global_key_value_heads */
    c->global_head_dim = gh ? gh : c->head_dim;
    if (c->k_eq_v) c->n_global_kv_heads = gk ? gk : c->n_kv_heads;
    else if (gk && gk != c->n_kv_heads)
        return ox_errf(err, OX_E_UNSUPPORTED,
                       "%s: per_layer_config: full layers with %d KV heads, sliding ones %d: supported only with "
                       "attention_k_eq_v",
                       fname, gk, c->n_kv_heads);
    return 0;
}
