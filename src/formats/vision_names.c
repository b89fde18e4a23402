/* vision_names.c — HF names of the Gemma 4 vision tower and its embedder -> llama.cpp's
 * mmproj names (tensors.h). The converter's rules: the encoder's layers become v.blk.N, the
 * clippable linears' inner ".linear.weight" becomes ".weight", their clamp bounds keep their
 * suffixes (input_min, input_max, output_min, output_max). */
#include <stdio.h>
#include <string.h>

#include "formats/tensors.h"

static const char *const vision_global[][2] = {
    {"patch_embedder.input_proj.weight", "v.patch_embd.weight"},
    {"patch_embedder.position_embedding_table", "v.position_embd.weight"},
    {"std_bias", "v.std_bias"},
    {"std_scale", "v.std_scale"},
};

/* HF module -> mmproj tensor stem, inside encoder.layers.N. */
static const char *const vision_layer[][2] = {
    {"input_layernorm", "ln1"},           {"post_attention_layernorm", "attn_post_norm"},
    {"pre_feedforward_layernorm", "ln2"}, {"post_feedforward_layernorm", "ffn_post_norm"},
    {"self_attn.q_proj", "attn_q"},       {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},       {"self_attn.o_proj", "attn_out"},
    {"self_attn.q_norm", "attn_q_norm"},  {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},        {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

static const char *const suffixes[] = {".linear.weight", ".weight",     ".input_min",
                                       ".input_max",     ".output_min", ".output_max"};

int ox_map_hf_vision_name(const char *hf, char *out, size_t cap) {
    const char *n = hf;
    int u = ox_map_hf_unified_name(hf, out, cap); /* gemma4_unified's embedder */
    if (u <= 0) return u;
    if (strncmp(n, "model.", 6) == 0) n += 6;
    if (strcmp(n, "embed_vision.embedding_projection.weight") == 0)
        return snprintf(out, cap, "mm.input_projection.weight") >= (int)cap ? -1 : 0;
    if (strncmp(n, "vision_tower.", 13) != 0) return 1;
    n += 13;
    for (size_t i = 0; i < sizeof vision_global / sizeof vision_global[0]; i++)
        if (strcmp(n, vision_global[i][0]) == 0)
            return snprintf(out, cap, "%s", vision_global[i][1]) >= (int)cap ? -1 : 0;
    unsigned layer;
    int used = 0;
    if (sscanf(n, "encoder.layers.%u.%n", &layer, &used) != 1 || used == 0) return 1;
    n += used;
    for (size_t i = 0; i < sizeof vision_layer / sizeof vision_layer[0]; i++) {
        size_t k = strlen(vision_layer[i][0]);
        if (strncmp(n, vision_layer[i][0], k) != 0) continue;
        for (size_t j = 0; j < sizeof suffixes / sizeof suffixes[0]; j++)
            if (strcmp(n + k, suffixes[j]) == 0) {
                const char *suf = j == 0 ? ".weight" : suffixes[j];
                return snprintf(out, cap, "v.blk.%u.%s%s", layer, vision_layer[i][1], suf) >= (int)cap ? -1 : 0;
            }
    }
    return 1;
}
