/* mlx.h — MLX affine-quantized safetensors checkpoints (as mlx-lm's nn.quantize writes them).
 *
 * config.json carries the quantization block (top-level "quantization", or
 * "quantization_config" when that one has bits and group_size):
 *   {"group_size": 64, "bits": 4, "mode": "affine",
 *    "<module path>": {"group_size": 32, "bits": 8} | true | false, ...}
 * A module path is the tensor name minus ".weight" (true: the defaults, false: not quantized).
 * A quantized linear or embedding NAME is three tensors:
 *   NAME.weight  U32 [..., rows, cols * bits / 32]  values little-endian, low bits first
 *   NAME.scales  BF16 | F16 | F32 [..., rows, cols / group]
 *   NAME.biases  the same dtype and shape
 * and value[j] = scales[j / group] * q[j] + biases[j / group].
 * Supported: bits 4 and 8, group 32 and 64, mode "affine".
 *
 * Rows are repacked when read, exactly, to blocks of 32 with f16 d and m: 4 bits -> Q4_1
 * (d = scale, m = bias; nibbles reordered to ggml's), 8 bits -> Q8_A. The product s * q is
 * exact in f32 for a bf16/f16 s and q < 256, so the blocks dequantize to exactly the
 * formula's f32 values whenever f16 holds s and b; a scale or bias it does not hold (f32
 * scales, tiny bf16 values) is an OX_E_UNSUPPORTED error naming the tensor and row, except
 * a scale whose block's values are all 0 (the scale does not matter there). */
#ifndef OX_MLX_H
#define OX_MLX_H

#include <stdint.h>
#include "base/err.h"
#include "kernels/quant.h"
#include "formats/json.h"
#include "formats/safetensors.h"

typedef struct ox_mlx_q {
    int bits, group;
} ox_mlx_q; /* bits 0: not quantized */

typedef struct ox_mlx_config {
    ox_mlx_q dflt; /* bits 0: the config has no quantization block */
    int n;         /* per-module overrides, in file order */
    char **module;
    ox_mlx_q *q;
} ox_mlx_config;

/* The quantization block of a parsed config.json (fname for messages) into *out (zeroed
 * first; no block leaves dflt.bits 0). Errors: OX_E_CONFIG naming the key (bits not 4/8,
 * group_size not 32/64, a value of the wrong type), OX_E_UNSUPPORTED (mode other than
 * affine), OX_E_NOMEM. */
int ox_mlx_config_parse(const ox_json *root, const char *fname, ox_mlx_config *out, ox_err *err);
void ox_mlx_config_free(ox_mlx_config *c);
/* Parameters of a module (its override, else the defaults). */
ox_mlx_q ox_mlx_config_for(const ox_mlx_config *c, const char *module);

/* Block format rows of `bits` repack to (Q4_1 or Q8_A). */
ox_type ox_mlx_type(int bits);

/* The three tensors of NAME checked against each other and q: dtypes, ranks, outer dims,
 * packed width = cols * bits / 32, scales width = cols / group. *cols gets the row length.
 * Errors name the file and the tensor: OX_E_FORMAT (shapes, dtypes). */
int ox_mlx_check(const char *fname, const ox_st_tensor *w, const ox_st_tensor *s, const ox_st_tensor *b, ox_mlx_q q,
                 uint64_t *cols, ox_err *err);

/* Repack nrows rows of cols values: packed words w (cols * bits / 32 per row) and scales /
 * biases (cols / group per row, dtype sdt) into blocks of ox_mlx_type(bits) at dst. name and
 * row0 are for messages (the first row's index in the tensor). */
int ox_mlx_repack(ox_mlx_q q, ox_st_dtype sdt, const uint32_t *w, const void *scales, const void *biases,
                  uint64_t nrows, uint64_t cols, void *dst, const char *name, uint64_t row0, ox_err *err);

/* One scale / bias of dtype sdt (BF16, F16 or F32) as f32. */
float ox_mlx_value(ox_st_dtype sdt, const void *p, uint64_t i);

#endif
