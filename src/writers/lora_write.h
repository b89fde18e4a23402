/* lora_write.h — synthetic LoRA adapters for a model (tests, benchmarks): the same A and B
 * written as a llama.cpp GGUF adapter or as a PEFT directory (adapter_config.json +
 * adapter_model.safetensors), shaped after the model's config. Values depend only on
 * (seed, layer, target): the two formats of one spec hold the same numbers. */
#ifndef OX_LORA_WRITE_H
#define OX_LORA_WRITE_H

#include <stdint.h>
#include "base/err.h"
#include "formats/config.h"
#include "kernels/quant.h"

typedef struct ox_lora_spec {
    int rank;
    float alpha; /* GGUF adapter.lora.alpha / PEFT lora_alpha */
    int rslora;  /* PEFT use_rslora */
    float std;   /* of the A and B values */
    uint32_t seed;
    unsigned targets; /* bit (1 << ox_lora_target) per patched linear (model/lora.h order) */
    ox_type type;     /* F32, F16 or BF16 */
    int layers;       /* patch layers [0, layers) only; 0 = all */
} ox_lora_spec;

#define OX_LORA_ALL_TARGETS 0x1ffu

/* The value of element i of the A (is_b 0) or B matrix of (layer, target). */
float ox_lora_spec_value(const ox_lora_spec *a, int layer, int target, int is_b, uint64_t i);
/* The (out, in) of a target of layer l in a model of config c; 0 if the layer has none
 * (v on a K = V layer, the PLE projections without PLE). */
int ox_lora_spec_shape(const ox_config *c, int l, int target, int *out, int *in);

int ox_lora_write_gguf(const ox_config *c, const ox_lora_spec *a, const char *path, ox_err *err);
/* dir must exist. */
int ox_lora_write_peft(const ox_config *c, const ox_lora_spec *a, const char *dir, ox_err *err);

#endif
