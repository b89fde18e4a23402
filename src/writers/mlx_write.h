/* mlx_write.h — MLX-quantized checkpoints of an HF checkpoint, with our own affine quantizer
 * (tooling: fixtures for the MLX reader, formats/mlx.h; `oxinfer quantize --quant mlx4|mlx8`).
 *
 * The quantizer is MLX's affine fit per group of `group` values: the extreme of larger
 * magnitude is the bias (so it is represented exactly), the scale is the range over
 * 2^bits - 1 (negative when the bias is the max), then scale and bias are rounded to the
 * scales' dtype and q = clamp(round((w - bias) / scale), 0, 2^bits - 1). As mlx-lm, the
 * 2-D ".weight" tensors whose rows are a multiple of the group are quantized (linears and
 * embeddings); norms, scalars and 3-D expert tensors stay as they are. */
#ifndef OX_MLX_WRITE_H
#define OX_MLX_WRITE_H

#include "base/err.h"
#include "formats/mlx.h"
#include "formats/safetensors.h"

typedef struct ox_mlx_write_opts {
    ox_mlx_q q;                  /* the defaults */
    const char *override_suffix; /* modules whose path ends so get override_q (a per-module entry) */
    ox_mlx_q override_q;
    ox_st_dtype scale_dtype; /* BF16 (mlx-lm's for bf16 models) or F16 */
} ox_mlx_write_opts;

/* One row: cols values (cols % q.group == 0) -> packed words w (cols * bits / 32), scales and
 * biases (cols / group each, of dtype sdt: BF16 or F16). */
void ox_mlx_quantize_row(ox_mlx_q q, ox_st_dtype sdt, const float *x, uint64_t cols, uint32_t *w, void *scales,
                         void *biases);
/* The formula: value[j] = scale[j / group] * q[j] + bias[j / group], in f32. */
void ox_mlx_dequantize_row(ox_mlx_q q, ox_st_dtype sdt, const uint32_t *w, const void *scales, const void *biases,
                           uint64_t cols, float *y);

/* src: an HF checkpoint's files (safetensors, config.json; other files are copied as they
 * are). Writes out_dir/{model.safetensors, config.json (+ the quantization block)} and, if
 * ref_dir is not NULL, ref_dir/{model.safetensors, config.json}: the same checkpoint with each
 * quantized weight replaced by its dequantized values, exactly, as F32. Both dirs must exist. */
int ox_mlx_write(const char *const *src, int n_src, const char *out_dir, const char *ref_dir,
                 const ox_mlx_write_opts *o, ox_err *err);

#endif
