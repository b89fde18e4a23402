/* unified_embed.h — Gemma 4 12B's (gemma4_unified) encoder-free image embedder, the image
 * path of a model with no vision tower (docs/gemma4.md §6.4). It sits behind the vision API
 * (vision.h): ox_vision_load returns it when the files hold its weights, ox_vision_embed runs it.
 *
 *   patchify   HWC [0,1] pixels -> one 48x48 patch per soft token (patch_size x pooling kernel
 *              pixels a side), the grid row by row, each patch's pixels row by row, R,G,B
 *   embed      LayerNorm -> dense (with bias) -> LayerNorm -> + P[col][0] + P[row][1] -> LayerNorm
 *              (torch LayerNorms: eps 1e-5, weight and bias)
 *   project    RMSNorm without a scale (vision rms_norm_eps), then the projection to the text width
 *
 * Weights (HF model.embed_vision.*, mapped by ox_map_hf_unified_name): v.patch_ln1, v.patch_dense,
 * v.patch_ln2, v.patch_ln3 (the reference's pos_norm), v.pos_embd_2d.weight (the factorized
 * table, [rows][2][width]), mm.input_projection.weight. Matrices keep their stored type. */
#ifndef OX_UNIFIED_EMBED_H
#define OX_UNIFIED_EMBED_H

#include "base/err.h"
#include "formats/tensors.h"
#include "vision/vision.h"

typedef struct ox_uvision ox_uvision;

/* 1 if the model files hold the unified embedder's weights. */
int ox_uvision_present(const ox_model_files *mf);
/* Its config in the vision API's terms (patch 16, pool 3, hidden = mm_embed_dim, no layers,
 * pos_size = the table's rows, text_hidden, eps = vision_config.rms_norm_eps): 1, or < 0 with
 * the file and problem named. */
int ox_uvision_config(const ox_model_files *mf, ox_vision_config *vc, ox_err *err);
/* NULL on error (missing or misshapen tensors named). */
ox_uvision *ox_uvision_load(const ox_model_files *mf, ox_err *err);
void ox_uvision_free(ox_uvision *u);
uint64_t ox_uvision_bytes(const ox_uvision *u);
/* What ox_uvision_load will hold (*bytes) and read (*reads), from the headers: 1, or < 0. */
int ox_uvision_estimate(const ox_model_files *mf, uint64_t *bytes, uint64_t *reads, ox_err *err);

/* One image (rgb: height*width*3 floats, HWC, [0,1]; sizes checked by the caller, see
 * ox_vision_embed): n = (height/48)*(width/48) rows written to out, returns n. encode stops
 * after the last LayerNorm (rows of hidden floats), embed ends in the projection (text_hidden). */
int ox_uvision_encode(ox_uvision *u, const float *rgb, int height, int width, float *out, ox_err *err);
int ox_uvision_embed(ox_uvision *u, const float *rgb, int height, int width, float *out, ox_err *err);

#endif
