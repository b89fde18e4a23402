/* unified_names.c — HF names of Gemma 4 12B's (gemma4_unified) image embedder -> the engine's
 * (tensors.h, docs/gemma4.md §6.4). The released checkpoint stores it as model.vision_embedder.*
 * plus model.embed_vision.embedding_projection.weight (transformers renames those to its modules,
 * model.embed_vision.* with the projection under multimodal_embedder.); both spellings map.
 * llama.cpp's converter renames pos_norm to patch_ln3; the position table keeps the
 * checkpoint's [rows][2][width] order here. */
#include <stdio.h>
#include <string.h>

#include "formats/tensors.h"

static const char *const unified_map[][2] = {
    {"patch_ln1.weight", "v.patch_ln1.weight"},
    {"patch_ln1.bias", "v.patch_ln1.bias"},
    {"patch_dense.weight", "v.patch_dense.weight"},
    {"patch_dense.bias", "v.patch_dense.bias"},
    {"patch_ln2.weight", "v.patch_ln2.weight"},
    {"patch_ln2.bias", "v.patch_ln2.bias"},
    {"pos_embedding", "v.pos_embd_2d.weight"},
    {"pos_norm.weight", "v.patch_ln3.weight"},
    {"pos_norm.bias", "v.patch_ln3.bias"},
    {"multimodal_embedder.embedding_projection.weight", "mm.input_projection.weight"},
};

int ox_map_hf_unified_name(const char *hf, char *out, size_t cap) {
    const char *n = hf;
    if (strncmp(n, "model.", 6) == 0) n += 6;
    if (strncmp(n, "vision_embedder.", 16) == 0) n += 16;
    else if (strncmp(n, "embed_vision.", 13) == 0) n += 13;
    else return 1;
    for (size_t i = 0; i < sizeof unified_map / sizeof unified_map[0]; i++)
        if (strcmp(n, unified_map[i][0]) == 0) return snprintf(out, cap, "%s", unified_map[i][1]) >= (int)cap ? -1 : 0;
    return 1;
}
