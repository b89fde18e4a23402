/* prequant.h — write a model as a pre-quantized safetensors file (`oxinfer quantize`).
 *
 * Layout (read back by tensors.c, which presents the pairs as OX_Q8_0 / OX_Q4_0 tensors whose
 * rows are bit-identical to ggml's quantization of the source rows):
 *   metadata  oxinfer_quant = "q8" | "q4", oxinfer_config = the config as HF-style JSON
 *   NAME         I8 [..., rows, cols]   Q8_0 block values (qs), row-major          (q8)
 *                U8 [..., rows, cols/2] Q4_0 block nibbles as ggml packs them     (q4)
 *   NAME.scales  F16 [..., rows, cols/32] block scales d
 * Names are internal (GGUF-style). Which tensors are quantized:
 *   - 1-D tensors, norms (*norm*), the MoE router (ffn_gate_inp.*), *.scale tensors and rows
 *     whose length is not a multiple of 32 stay F32;
 *   - under q4, token_embd.weight (the LM head) and per_layer_model_proj.weight stay Q8;
 *   - everything else becomes Q8_0 (q8) or Q4_0 (q4).
 * Source rows of any type are dequantized to f32 and quantized with ox_quantize_row. */
#ifndef OX_PREQUANT_H
#define OX_PREQUANT_H

#include "base/err.h"
#include "kernels/quant.h"
#include "formats/tensors.h"

/* Target type of tensor t under quant "q8" / "q4" (OX_F32, OX_Q8_0 or OX_Q4_0). */
ox_type ox_prequant_type(const ox_tensor *t, int q4);

/* Write every tensor of mf to path. progress (may be NULL) gets bytes of source read. */
int ox_prequant_write(const ox_model_files *mf, const char *path, const char *quant,
                      void (*progress)(void *ud, uint64_t done, uint64_t total), void *ud, ox_err *err);

#endif
