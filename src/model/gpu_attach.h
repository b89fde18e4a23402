/* gpu_attach.h — moving a loaded model's forward onto the GPU backend and back.
 *
 * Attached, every forward of the model's sessions records its ops (gpu/record.h) and runs them
 * on the GPU. Until ox_model_gpu_release the weights stay resident in wasm memory too, and a
 * detach puts the model back on the CPU at once; after it, the model runs on the GPU only (a
 * detached one refuses to run: reload it). Sessions' KV caches on the GPU are not copied back:
 * after a detach the caller resets its sessions (their positions recompute). */
#ifndef OX_GPU_ATTACH_H
#define OX_GPU_ATTACH_H

#include <stdint.h>

#include "base/err.h"
#include "gpu/record.h"
#include "model/model.h"

/* Register the model's weights for upload (ox_gpu_table lists them) and record from now on.
 * UNSUPPORTED (with a message) for what runs on the CPU only: MoE layers, streamed weights,
 * LoRA adapters, bidirectional attention. A no-op when attached. */
int ox_model_gpu_attach(ox_model *m, ox_err *err);
void ox_model_gpu_detach(ox_model *m);
/* Free the wasm copies of the uploaded matrices (not the embedding table when embeddings are
 * read from it, i.e. not tables_on_host); returns the bytes freed. */
uint64_t ox_model_gpu_release(ox_model *m);
/* The model's recorder, or NULL on the CPU. */
const ox_gpu *ox_model_gpu(const ox_model *m);

#endif
