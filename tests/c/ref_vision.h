/* ref_vision.h — an independent float64 Gemma 4 vision tower and multimodal embedder for the
 * tests, written plainly from the reference model's code (docs/vision.md): the processor's
 * patches and position ids, the patch embedder, the axial RoPE as cos/sin tables and
 * rotate_half, eager attention, the pooler's one-hot average over kernel indices, the
 * standardization, the embedder. Every weight dequantized to double. */
#ifndef OX_REF_VISION_H
#define OX_REF_VISION_H

#include "formats/tensors.h"

typedef struct ref_vision ref_vision;

/* NULL on error (message in msg). Shapes from the vision config the caller read. */
ref_vision *ref_vision_load(const ox_model_files *mf, char *msg, size_t cap);
void ref_vision_free(ref_vision *r);
/* Returns the number of soft tokens n; out: n * text_hidden doubles (pooled: n * hidden, may be NULL). */
int ref_vision_embed(const ref_vision *r, const float *rgb, int height, int width, double *pooled, double *out);

#endif
