/* gpu_attach.h — moving a loaded model's forward onto the GPU backend and back.
 *
 * Attached, every forward of the model's sessions records its ops (gpu/record.h) and runs them
 * on the GPU. Until ox_model_gpu_release the weights stay resident in wasm memory too, and a
 * detach puts the model back on the CPU at once; after it, the model runs on the GPU only (a
 * detached one refuses to run: reload it). Sessions' KV caches on the GPU are not copied back:
 * after a detach the caller resets its sessions (their positions recompute). A model can also
 * come out of the load attached, its matrices uploaded as they were read (ox_load_opts.gpu_put):
 * then it never had them in wasm memory and is gpu_only from the start. */
#ifndef OX_GPU_ATTACH_H
#define OX_GPU_ATTACH_H

#include <stdint.h>

#include "base/err.h"
#include "gpu/record.h"
#include "model/model.h"

/* Why a model of config c loaded with o cannot run on the GPU backend (MoE, streamed weights,
 * bidirectional attention, an MTP drafter), or NULL when it can (LoRA is checked at attach). */
const char *ox_gpu_cpu_only(const ox_config *c, const ox_load_opts *o);

/* Register the model's weights for upload (ox_gpu_table lists them) and record from now on.
 * types: bit t set when the GPU has kernels for ggml type t; a dense matrix of another type
 * stays in wasm memory and its matmul runs on the CPU inside the step (forward.c op_matmul);
 * stacked experts of such a type: UNSUPPORTED.
 * layers: how many of the first layers run on the GPU (<= 0 or >= n_layers: all of them, and
 * the final norm and head too); the rest run on the CPU inside the same forward, which reads
 * the hidden state (and the PLE inputs) back at the boundary. A GPU layer whose cache CPU
 * layers read (KV-shared layers after the split) has its rows read back too and kept in the
 * CPU's cache as well (ox_model_gpu_bridge). UNSUPPORTED (with a message) for what runs on the
 * CPU only: streamed weights, LoRA adapters, bidirectional attention. A no-op when attached. */
int ox_model_gpu_attach(ox_model *m, int layers, uint32_t types, ox_err *err);
/* The layers that run on the GPU (0: detached). */
int ox_model_gpu_layers(const ox_model *m);
/* On a split: l < ox_model_gpu_layers whose cache CPU layers read too: its index among those
 * (from 0), else -1; l = n_layers: how many there are (0 unsplit or detached). */
int ox_model_gpu_bridge(const ox_model *m, int l);
void ox_model_gpu_detach(ox_model *m);
/* Free the wasm copies of the uploaded matrices (not the embedding table when embeddings are
 * read from it, i.e. not tables_on_host); returns the bytes freed. */
uint64_t ox_model_gpu_release(ox_model *m);
/* Uploading while loading (ox_load_opts.gpu_put; load.c calls these). After the dry pass
 * (mat_types: bit t for each ggml type the matrices will have): 1 when the model goes to the
 * GPU as it loads (attached from now on, its matrices never resident: gpu_only), 0 when it
 * loads on the CPU (no gpu_put, or a reason of ox_model_gpu_attach's, or a type with no GPU
 * kernel), < 0 on error. Also resolves tables_on_host < 0 to whether it goes. */
int ox_model_gpu_load_begin(ox_model *m, uint64_t mat_types, ox_err *err);
/* Rows [row0, row0 + rows) of matrix M (bytes in its block layout) to gpu_put. */
int ox_model_gpu_put(ox_model *m, ox_matrix *M, uint64_t row0, uint64_t rows, const void *bytes, ox_err *err);
/* After the reads: the vectors (resident) registered too; ox_gpu_table then lists every
 * weight, the matrices put during the load included (the host uploads the rest). */
int ox_model_gpu_load_end(ox_model *m, ox_err *err);
/* The model's recorder, or NULL on the CPU (the vision tower records into it too). */
ox_gpu *ox_model_gpu(const ox_model *m);

#endif
