/* ref_forward.h — an independent float64 Gemma 4 forward pass for the tests, written plainly
 * from the model's math (docs/gemma4.md §2): whole sequence at once, no KV cache, every
 * weight dequantized to double with ox_dequantize_row. Per-layer values are derived here from
 * the config's base fields, not taken from config.c's derivation. */
#ifndef OX_REF_FORWARD_H
#define OX_REF_FORWARD_H

#include <stdint.h>
#include "formats/tensors.h"

typedef struct ref_model ref_model;

/* A tensor of want values, dequantized to doubles (malloc'd); NULL with msg set when its size
 * differs or its bytes cannot be read. */
double *ref_read_tensor(const ox_tensor *t, uint64_t want, char *msg, size_t cap);

/* NULL on error (message in msg). */
ref_model *ref_load(const ox_model_files *mf, char *msg, size_t msg_cap);
void ref_free(ref_model *r);

/* Round each matmul input through the engine's activation format for the weight's type
 * (Q8_0 / Q8_1 / Q8_K), as llama.cpp does: then quantized files match to float rounding. */
void ref_set_act_round(ref_model *r, int on);

/* logits: n * vocab doubles (soft-capped). soft / soft_mask as in ox_forward_io (may be NULL). */
int ref_forward(const ref_model *r, const int32_t *tokens, int n, const float *soft, const uint8_t *soft_mask,
                double *logits);
/* The same; logits may be NULL, hidden (may be NULL): n * hidden doubles, the final-normed states. */
int ref_forward_hidden(const ref_model *r, const int32_t *tokens, int n, const float *soft, const uint8_t *soft_mask,
                       double *logits, double *hidden);

#endif
