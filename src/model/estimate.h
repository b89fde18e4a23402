/* estimate.h — the memory a load and one session will take, from the headers alone.
 *
 * The sums are the allocator's own: the weights come from the loader's dry pass (load.c, the
 * same walk that sizes the real load), the activation scratch from forward.c's layout, the
 * matmul scratch from the kernels' activation plan, the KV caches from the session's
 * allocation. No weight is read: only the directory ox_files_open parsed (GGUF header,
 * metadata and tensor infos; safetensors headers and config.json).
 *
 *   weights            resident weight bytes (stored or converted as opts->quant says)
 *   embeddings_on_host the tables whose rows are read through the host per token (PLE):
 *                      not resident, not in total
 *   kv                 the KV caches holding `context` positions (model/kv.h ox_kv_bytes:
 *                      sliding layers a ring of the window)
 *   weight_cache       the bound of the streamed weights' cache (load option stream; 0 when
 *                      everything is resident): streamed weights are not in `weights`
 *   scratch            one prefill micro-batch's activations and matmul scratch at that
 *                      context, the session's token list (ids and soft-row ids), one
 *                      generation's vocab buffers
 *   runtime            what the caller says is in use before the load (the wasm module, its
 *                      stacks, the parsed headers, the tokenizer): copied into total
 *   total              weights + weight_cache + kv + scratch + runtime
 *
 * On the GPU backend (rq->gpu, and the model can run there: gpu_attach.h ox_gpu_cpu_only, every
 * matrix type in opts->gpu_types) the matrices and the KV caches live on the device instead:
 * weights and kv then count what stays in wasm memory (the vectors, the token embedding unless
 * tables_on_host; no KV), and gpu_weights, gpu_kv, gpu_scratch the device's share (js/gpu/step.js:
 * every weight as stored, f32 K and V rows of every position for each own-KV layer, the
 * activation regions of a micro-batch plus its attention scores at the context, its quantized
 * activations and the logits row read back). A budget then bounds total + the GPU's sum. */
#ifndef OX_ESTIMATE_H
#define OX_ESTIMATE_H

#include <stdint.h>
#include "model/model.h"

typedef struct ox_mem_request {
    int n_ctx;        /* positions the session will hold; <= 0: the model's maximum */
    int kv_type;      /* an ox_kv_type (model/kv.h) */
    int threads;      /* the pool's threads: attention keeps one row of scores per task */
    uint64_t runtime; /* bytes in use before the load */
    int gpu;          /* on the GPU backend, where the model can run there (opts->gpu_types) */
} ox_mem_request;

typedef struct ox_mem_estimate {
    uint64_t weights, embeddings_on_host, weight_cache, kv, scratch, runtime, total;
    uint64_t file_bytes; /* what the load reads from the host */
    int context;
    int gpu; /* the model runs on the GPU: the gpu_* fields count its device memory */
    uint64_t gpu_weights, gpu_kv, gpu_scratch;
} ox_mem_estimate;

/* Errors: those of the loader's validation (CONFIG, MISSING, UNSUPPORTED), RANGE (context
 * beyond the model's maximum, an unknown KV type), UNSUPPORTED (a KV type the heads cannot use). */
int ox_memory_estimate(const ox_model_files *mf, const ox_load_opts *opts, const ox_mem_request *rq,
                       ox_mem_estimate *out, ox_err *err);

/* The estimate under a budget of `budget` bytes (0: none). When it does not fit: with fit, the
 * largest context that does (a multiple of 256 when it is 256 or more) goes into out; without,
 * or when not even one position fits, NOMEM saying what is needed and what to try. */
int ox_memory_budget(const ox_model_files *mf, const ox_load_opts *opts, const ox_mem_request *rq, uint64_t budget,
                     int fit, ox_mem_estimate *out, ox_err *err);

/* Allocate what the estimate counts for a session, for its whole context, now: the KV caches,
 * the token list, the activation and matmul scratch of a full micro-batch. Forward calls then
 * allocate nothing (a budgeted load: memory never grows in the middle of a generation). */
int ox_session_prealloc(ox_session *s, ox_err *err);

#endif
