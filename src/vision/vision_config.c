/* vision_config.c — the vision tower's config (vision.h): HF config.json's vision_config
 * (missing keys take Gemma4VisionConfig's defaults), or an mmproj GGUF's clip.vision.* keys
 * (rope theta and the pooling kernel as llama.cpp's gemma4v projector fixes them, the kernel
 * overridable by clip.vision.projector.scale_factor). Widths the keys do not give (the text
 * width, the position table's rows) come from the tensors' shapes. A vision_config over files
 * without any vision tensor (a text-only export) is no tower. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"
#include "host/hostfile.h"
#include "vision/unified_embed.h"
#include "vision/vision.h"

#define DEFAULT_SOFT_TOKENS 280 /* the processor's max_soft_tokens */

static int json_int_key(const ox_json *o, const char *key, int dflt, int *out, const char *fn, ox_err *err) {
    const ox_json *v = ox_json_get(o, key);
    int64_t x;
    if (!v || ox_json_type(v) == OX_JSON_NULL) return *out = dflt, 0;
    if (!ox_json_int(v, &x) || x < 0 || x > (1 << 24))
        return ox_errf(err, OX_E_CONFIG, "%s: vision_config.%s: a non-negative integer expected", fn, key);
    return *out = (int)x, 0;
}

static int json_bool_key(const ox_json *o, const char *key, int *out, const char *fn, ox_err *err) {
    const ox_json *v = ox_json_get(o, key);
    if (!v || ox_json_type(v) == OX_JSON_NULL) return *out = 0, 0;
    if (ox_json_type(v) != OX_JSON_BOOL)
        return ox_errf(err, OX_E_CONFIG, "%s: vision_config.%s: true or false expected", fn, key);
    return *out = ox_json_bool(v, 0), 0;
}

static int from_json(int file, ox_vision_config *vc, ox_err *err) {
    const char *fn = ox_host_name(file);
    int64_t size = ox_host_size(file);
    if (size < 0 || size > (64 << 20)) return ox_errf(err, OX_E_FORMAT, "%s: not a config file of sane size", fn);
    char *text = malloc((size_t)size + 1);
    if (!text) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fn);
    int rc = ox_host_read(file, 0, (size_t)size, text, err);
    ox_json *doc = rc ? NULL : ox_json_parse(text, (size_t)size, fn, err);
    free(text);
    if (!doc) return rc ? rc : (err ? err->code : OX_E_FORMAT);
    const ox_json *o = ox_json_get(doc, "vision_config");
    if (!o || ox_json_type(o) == OX_JSON_NULL) {
        ox_json_free(doc);
        return 0;
    }
    rc = ox_json_type(o) == OX_JSON_OBJECT ? 0 : ox_errf(err, OX_E_CONFIG, "%s: vision_config: an object expected", fn);
    if (!rc) rc = json_int_key(o, "hidden_size", 768, &vc->hidden, fn, err);
    if (!rc) rc = json_int_key(o, "intermediate_size", 3072, &vc->ffn, fn, err);
    if (!rc) rc = json_int_key(o, "num_hidden_layers", 16, &vc->n_layers, fn, err);
    if (!rc) rc = json_int_key(o, "num_attention_heads", 12, &vc->n_heads, fn, err);
    if (!rc) rc = json_int_key(o, "num_key_value_heads", vc->n_heads, &vc->n_kv_heads, fn, err);
    if (!rc) rc = json_int_key(o, "head_dim", 64, &vc->head_dim, fn, err);
    if (!rc) rc = json_int_key(o, "patch_size", 16, &vc->patch, fn, err);
    if (!rc) rc = json_int_key(o, "pooling_kernel_size", 3, &vc->pool, fn, err);
    if (!rc) rc = json_int_key(o, "position_embedding_size", 10240, &vc->pos_size, fn, err);
    if (!rc) rc = json_bool_key(o, "use_clipped_linears", &vc->clipped, fn, err);
    if (!rc) rc = json_bool_key(o, "standardize", &vc->standardize, fn, err);
    vc->eps = (float)ox_json_num(ox_json_get(o, "rms_norm_eps"), 1e-6);
    vc->rope_theta = (float)ox_json_num(ox_json_get(ox_json_get(o, "rope_parameters"), "rope_theta"), 100.0);
    const ox_json *act = ox_json_get(o, "hidden_activation");
    if (!rc && act && ox_json_str(act) && strcmp(ox_json_str(act), "gelu_pytorch_tanh") != 0)
        rc = ox_errf(err, OX_E_UNSUPPORTED, "%s: vision_config.hidden_activation %s: only gelu_pytorch_tanh", fn,
                     ox_json_str(act));
    ox_json_free(doc);
    return rc ? rc : 1;
}

static int from_gguf(const ox_gguf *g, ox_vision_config *vc, ox_err *err) {
    const char *proj = NULL;
    int has = 0;
    if (ox_gguf_get_bool(g, "clip.has_vision_encoder", &has, NULL) == 0 && !has) return 0;
    if (ox_gguf_get_str(g, "clip.vision.projector_type", &proj, NULL) != 0)
        ox_gguf_get_str(g, "clip.projector_type", &proj, NULL);
    if (!proj || strcmp(proj, "gemma4v") != 0)
        return ox_errf(err, OX_E_UNSUPPORTED, "%s: projector type %s: only gemma4v (Gemma 4's vision tower)",
                       ox_gguf_name(g), proj ? proj : "(none)");
    uint32_t u[6];
    const char *keys[] = {"clip.vision.embedding_length", "clip.vision.feed_forward_length", "clip.vision.block_count",
                          "clip.vision.attention.head_count", "clip.vision.patch_size"};
    for (int i = 0; i < 5; i++)
        if (ox_gguf_get_u32(g, keys[i], &u[i], err)) return err ? err->code : OX_E_MISSING;
    vc->hidden = (int)u[0], vc->ffn = (int)u[1], vc->n_layers = (int)u[2], vc->n_heads = vc->n_kv_heads = (int)u[3];
    vc->patch = (int)u[4];
    vc->head_dim = vc->n_heads > 0 ? vc->hidden / vc->n_heads : 0;
    vc->pool = 3;
    if (ox_gguf_get_u32(g, "clip.vision.projector.scale_factor", &u[5], NULL) == 0) vc->pool = (int)u[5];
    vc->eps = 1e-6f;
    ox_gguf_get_f32(g, "clip.vision.attention.layer_norm_epsilon", &vc->eps, NULL);
    vc->rope_theta = 100.0f;
    return 1;
}

int ox_vision_config_read(const ox_model_files *mf, ox_vision_config *vc, ox_err *err) {
    memset(vc, 0, sizeof *vc);
    if (ox_uvision_present(mf)) return ox_uvision_config(mf, vc, err); /* gemma4_unified */
    const ox_gguf *mm = ox_files_mmproj(mf);
    int cj = ox_files_aux(mf, "config.json");
    int rc = mm ? from_gguf(mm, vc, err) : cj >= 0 ? from_json(cj, vc, err) : 0;
    if (rc <= 0) return rc;
    const char *what = mm ? ox_gguf_name(mm) : ox_host_name(cj);
    vc->default_soft_tokens = DEFAULT_SOFT_TOKENS;
    const ox_tensor *proj = ox_files_find(mf, "mm.input_projection.weight");
    const ox_tensor *pos = ox_files_find(mf, "v.position_embd.weight");
    /* a multimodal config over text-only weights (a text export keeps the config): no tower */
    if (!mm && !proj && !pos && !ox_files_find(mf, "v.patch_embd.weight")) return 0;
    if (!proj) return ox_errf(err, OX_E_MISSING, "%s: a vision tower without mm.input_projection.weight", what);
    if (!pos) return ox_errf(err, OX_E_MISSING, "%s: a vision tower without v.position_embd.weight", what);
    vc->text_hidden = (int)proj->ne[1];
    if (mm) vc->pos_size = (int)pos->ne[1];
    vc->standardize |= ox_files_find(mf, "v.std_bias") != NULL;
    vc->clipped |= ox_files_find(mf, "v.blk.0.attn_q.input_min") != NULL;
    int H = vc->hidden, hd = vc->head_dim;
    if (H <= 0 || vc->ffn <= 0 || vc->n_layers <= 0 || vc->n_heads <= 0 || vc->n_kv_heads <= 0 || hd <= 0 ||
        vc->patch <= 0 || vc->patch > 64 || vc->pool <= 0 || vc->pool > 8 || vc->pos_size <= 0 || vc->text_hidden <= 0)
        return ox_errf(err, OX_E_CONFIG, "%s: vision config: every width, count and size must be positive", what);
    if (hd % 4 || vc->n_heads % vc->n_kv_heads)
        return ox_errf(err, OX_E_CONFIG,
                       "%s: vision config: head_dim %d must be a multiple of 4 (2-D RoPE), heads %d a multiple of kv "
                       "heads %d",
                       what, hd, vc->n_heads, vc->n_kv_heads);
    if (vc->eps <= 0 || !(vc->rope_theta > 0))
        return ox_errf(err, OX_E_CONFIG, "%s: vision config: rms_norm_eps and rope_theta must be positive", what);
    return 1;
}
