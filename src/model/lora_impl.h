/* lora_impl.h — what lora.c (attach, the forward hook) and lora_read.c (the two file formats)
 * share: an adapter's modules and the targets' base matrices. Not part of the API (lora.h). */
#ifndef OX_LORA_IMPL_H
#define OX_LORA_IMPL_H

#include "model/model_impl.h"

typedef struct lora_module {
    int r, in, out; /* r = 0: no module for this (layer, target) */
    float scale;    /* the format's alpha / r */
    float *a;       /* [r][in] */
    float *bt;      /* [r][out]: B transposed, so the update is r axpys over the output row */
} lora_module;

struct ox_lora {
    const ox_model *m;
    lora_module *mod; /* [layer * OX_LORA_N_TARGETS + target] */
    int n_modules, n_skipped, rank_max;
    uint64_t bytes;
};

/* The base matrix a target patches in layer l (its shape; data may be NULL when the model
 * streams its weights); NULL when the model does not run it (k/v of a KV-shared layer, v of a
 * K = V layer, PLE projections of a model without PLE). */
const ox_matrix *ox_lora_base(const ox_model *m, int l, ox_lora_target t);
/* An internal (GGUF) weight name "blk.N.<linear>.weight" -> layer and target; -1 if the name
 * is not one of the patched linears (*l is then -1 too unless the name had a layer). */
int ox_lora_target_of(const char *name, int *l, ox_lora_target *t);

#endif
