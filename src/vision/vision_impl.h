/* vision_impl.h — the vision tower's weights, shared by vision_load.c and vision_forward.c
 * (not part of the API: vision.h is). */
#ifndef OX_VISION_IMPL_H
#define OX_VISION_IMPL_H

#include "formats/tensors.h"
#include "kernels/kernels.h"
#include "vision/vision.h"

/* The linears of a layer, in this order (their clamp bounds follow the same index). */
enum { VL_Q, VL_K, VL_V, VL_O, VL_GATE, VL_UP, VL_DOWN, VL_COUNT };

typedef struct vision_layer {
    ox_matrix w[VL_COUNT];
    float clamp[VL_COUNT][4]; /* input min, input max, output min, output max */
    float *ln1, *attn_post_norm, *ln2, *ffn_post_norm, *q_norm, *k_norm;
} vision_layer;

struct ox_vision {
    ox_vision_config c;
    /* gemma4_unified: its encoder-free embedder (unified_embed.h) instead of the tower below */
    struct ox_uvision *unified;
    ox_matrix patch; /* [hidden][3 p^2], columns in the processor's patch order (row, col, channel) */
    /* the factorized position table [2][pos_size][hidden] (columns, then rows): read from its
     * file per image, the rows that image reaches, like the decoder's embedding rows */
    const ox_tensor *pos_table;
    int pos_rows; /* rows of each table a permitted image can reach */
    float *std_bias, *std_scale;
    ox_matrix proj; /* [text_hidden][hidden] */
    vision_layer *L;
    void **owned;
    int n_owned, cap_owned;
    uint64_t bytes;
    ox_scratch ws; /* the matmuls' activation scratch */
    ox_gpu *gpu;   /* the recorder the tower runs on (ox_vision_gpu_attach), or NULL: the CPU */
};

#endif
