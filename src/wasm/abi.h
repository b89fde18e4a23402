/* abi.h — the whole contract between the JS package and the wasm engine, in one place.
 *
 * tools/gen_abi.mjs reads this file (and the lists it names in err.h, model.h, generate.h)
 * and writes js/shared/abi.js: error codes, quant ids, generation statuses, the fields of the f64
 * records below, and every export and import with its signature and the comment above it.
 * tests/node/abi.test.mjs fails when js/shared/abi.js is stale, when an export is missing from the
 * built wasm, or when the wasm's code names disagree with js/shared/abi.js.
 *
 * Conventions. Pointers cross as unsigned 32-bit numbers (JS: `>>> 0`); a NULL return or a
 * negative int return is an error whose code and message ox_wasm_err_code/err_msg hold until
 * the next call. 64-bit counts and seeds cross as doubles (exact below 2^53). Records (stats,
 * generation parameters, a step's output) are arrays of doubles, one per field in the order
 * of their list: JS reads and writes them with a Float64Array and the generated field names.
 * Only the engine worker calls in, one call at a time.
 *
 * Signatures are plain prototypes, OX_EXPORT (JS calls Module._name) or OX_IMPORT (the JS
 * libraries src/host/hostfile_lib.js and src/gpu/gpu_lib.js provide them), one per statement, with the
 * comment above. */
#ifndef OX_WASM_ABI_H
#define OX_WASM_ABI_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"        /* OX_ERR_CODES */
#include "decode/generate.h" /* OX_GEN_STATUSES */
#include "model/model.h"     /* OX_QUANTS; model/kv.h: OX_KV_TYPES */

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define OX_EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define OX_EXPORT
#endif
#define OX_IMPORT extern

/* A loaded model and its tokenizer. */
typedef struct ox_wasm_engine ox_wasm_engine;
/* A generation (generate.h) plus its output record. */
typedef struct ox_wasm_gen ox_wasm_gen;

/* ---- records: X(field, meaning); JS names are the camelCase of the field ---- */

/* ox_wasm_stats: counters of the engine, all since load unless said otherwise. */
#define OX_WASM_STATS(X)                                                                                               \
    X(resident_bytes, "weights + KV caches held in wasm memory")                                                       \
    X(host_bytes_read, "table rows (PLE, host-side embeddings) read through the host since load")                      \
    X(rows_fetched, "table rows read since load")                                                                      \
    X(host_read_calls, "host read calls, all files, since start (load included)")                                      \
    X(host_bytes_read_all, "bytes read through the host, all files, since start")                                      \
    X(heap_bytes, "bytes malloc holds for the engine now (everything: weights, caches, scratch)")                      \
    X(wasm_bytes, "the wasm memory's size")                                                                            \
    X(stream_bytes, "streamed weights (streamWeights) read through the host since load")                               \
    X(stream_hits, "streamed-weight fetches served by the weight cache")                                               \
    X(stream_misses, "streamed-weight fetches read through the host")

/* ox_wasm_gen_new's parameters, and the generation options of the JS API: each row is
 * X(field, dst, kind, lo, hi, js, meaning). field: the record's field (JS: its camelCase);
 * dst: the ox_gen_params member it sets (wasm_api.c gen_params iterates this list); kind: F a
 * float, I an int, B a flag (0/1), P a pointer, S set by hand in gen_params; lo, hi: the range
 * the JS API checks (_: none; C checks again, sampler.h / generate.h); js: the option of
 * generate() / chat() that fills it ("a.b": option b of the object option a; "": the engine
 * worker fills it). tools/gen_abi.mjs writes js/shared/abi.js genOptions from the rows with a
 * js name; js/main/options.js checks them, the worker copies them into the record. NaN = the
 * C default (ox_gen_defaults). Adding a sampling option: one row here and its use in C. */
#define OX_WASM_GEN_PARAMS(X)                                                                                          \
    X(temperature, sampler.temperature, F, 0, _, "temperature", "<= 0: greedy")                                        \
    X(top_k, sampler.top_k, I, 0, _, "topK", "<= 0 or >= vocab: off; 1: greedy")                                       \
    X(top_p, sampler.top_p, F, _, _, "topP", "in (0, 1]; 1: off")                                                      \
    X(min_p, sampler.min_p, F, _, _, "minP", "in [0, 1]; 0: off")                                                      \
    X(repetition_penalty, sampler.repetition_penalty, F, _, _, "repetitionPenalty", "> 0; 1: off")                     \
    X(frequency_penalty, sampler.frequency_penalty, F, _, _, "frequencyPenalty", "0: off")                             \
    X(presence_penalty, sampler.presence_penalty, F, _, _, "presencePenalty", "0: off")                                \
    X(penalty_window, sampler.penalty_window, I, 0, _, "penaltyWindow",                                                \
      "penalties see the last N tokens, prompt included; <= 0: all")                                                   \
    X(seed, sampler.seed, S, 0, _, "seed", "required: an integer from 0 to 2^53-1")                                    \
    X(max_tokens, max_tokens, I, 0, _, "maxTokens", "tokens output at most; <= 0: none")                               \
    X(eos, use_eos, B, _, _, "", "1: the model's eos ids stop generation (besides stop_ids); 0: only stop_ids")        \
    X(include_special, show_special, B, _, _, "includeSpecial", "1: a control token's bytes are its text")             \
    X(bias_ids, sampler.bias_ids, P, _, _, "", "pointer to n_bias int32 token ids (logit bias), or 0")                 \
    X(bias, sampler.bias, P, _, _, "", "pointer to n_bias f32 values added to those logits, or 0")                     \
    X(n_bias, sampler.n_bias, I, _, _, "", "entries in bias_ids / bias")                                               \
    X(stop_ids, stop_ids, P, _, _, "", "pointer to n_stop int32 token ids that stop generation, or 0")                 \
    X(n_stop, n_stop, I, _, _, "", "entries in stop_ids")                                                              \
    X(grammar, filter, S, _, _, "",                                                                                    \
      "pointer to n_grammar bytes of GBNF (decode/grammar.h) constraining the output, or 0")                           \
    X(n_grammar, filter, S, _, _, "", "bytes of grammar")                                                              \
    X(draft_tokens, draft_tokens, I, 1, OX_GEN_DRAFT_MAX, "speculative.draftTokens",                                   \
      "speculative decoding with prompt-lookup drafts of at most this many tokens; 0: off")                            \
    X(mtp, drafter, S, _, _, "", "1: the drafts come from the engine's MTP drafter (ox_wasm_load_drafter) instead")    \
    X(draft_p_min, draft_p_min, F, 0, 1, "speculative.minProbability",                                                 \
      "MTP: a draft ends before a token the drafter gives less than this probability")                                 \
    X(draft_fixed, draft_fixed, B, _, _, "speculative.fixedLength",                                                    \
      "1: every prompt-lookup draft is draft_tokens long (measuring; else chosen by expected gain)")                   \
    X(logprobs, logprobs, I, 0, OX_GEN_TOP_MAX, "logprobs",                                                            \
      "-1: off; 0..20: each token's log-probability and that many alternatives")

/* The load options of the JS API that reach C (ox_wasm_load, ox_wasm_estimate, ox_wasm_session_new):
 * X(arg, kind, lo, hi, js, meaning). arg: the C argument; kind: E a name of the list in lo
 * (OX_QUANTS, OX_STREAMS: model.h; OX_KV_TYPES: kv.h), I an integer in [lo, hi] (_: none), B a
 * flag; js: loadModel()'s option. js/shared/abi.js loadOptions; js/main/options.js checks them.
 * Unset: the first name of a list, 0 (off / no limit / the model's maximum), and for
 * weight_cache with a stream mode OX_WASM_WEIGHT_CACHE_DEFAULT. */
#define OX_WASM_LOAD_OPTIONS(X)                                                                                        \
    X(quant, E, OX_QUANTS, _, "quant", "precision of bf16/f16/f32 weights in memory")                                  \
    X(tables_on_host, B, _, _, "tablesOnHost", "token-embedding rows read from the host too")                          \
    X(max_resident, I, 0, _, "maxResident", "bytes of weights at most; 0: no limit")                                   \
    X(stream, E, OX_STREAMS, _, "streamWeights", "which linear weights stay on the host")                              \
    X(weight_cache, I, 1, _, "weightCache", "bytes for the streamed weights")                                          \
    X(kv_type, E, OX_KV_TYPES, _, "kvType", "how K and V rows are stored")                                             \
    X(max_ctx, I, 0, _, "maxContext", "positions of the session; 0: the model's maximum")                              \
    X(gpu_layers, I, 0, _, "gpuLayers", "on the GPU backend, the first layers that run there; 0: all that fit")
#define OX_WASM_WEIGHT_CACHE_DEFAULT 536870912 /* bytes for streamed weights when the option is unset */

/* Prompt tokens one ox_wasm_gen_prefill call runs unless generate({prefillChunk}) says otherwise:
 * the engine worker looks at aborts and other requests between calls. */
#define OX_WASM_PREFILL_CHUNK 256

/* ox_wasm_gen_out: what the last ox_wasm_gen_step produced (the status is its return). */
#define OX_WASM_GEN_OUT(X)                                                                                             \
    X(token, "the token id, -1 if none (STOP: the stop id, which is not output)")                                      \
    X(bytes, "pointer to the token's bytes (UTF-8, may split a character); valid until the next step")                 \
    X(n_bytes, "number of bytes")                                                                                      \
    X(generated, "tokens output so far")                                                                               \
    X(decoded, "forwards run by steps so far (a verify batch counts once)")                                            \
    X(pos, "session position (tokens in the KV cache)")                                                                \
    X(drafted, "tokens proposed by the drafter so far")                                                                \
    X(accepted, "drafted tokens kept so far")                                                                          \
    X(logprob, "with logprobs: log p(token) under the model")                                                          \
    X(n_top, "with logprobs: alternatives listed")                                                                     \
    X(top_ids, "pointer to n_top int32 token ids, likeliest first")                                                    \
    X(top_logprobs, "pointer to n_top f32 log-probabilities")

/* ox_wasm_estimate's output (model/estimate.h), bytes unless said otherwise. */
#define OX_WASM_ESTIMATE(X)                                                                                            \
    X(weights, "resident weights")                                                                                     \
    X(embeddings_on_host, "table rows read through the host (PLE): not resident, not in total")                        \
    X(weight_cache, "the streamed weights' cache bound (0: everything resident)")                                      \
    X(kv, "KV caches at the context")                                                                                  \
    X(scratch, "activations and matmul scratch of a prefill micro-batch, token list, one generation")                  \
    X(runtime, "in use before the load: the module, stacks, parsed headers, tokenizer")                                \
    X(total, "weights + weight_cache + kv + scratch + runtime")                                                        \
    X(file_bytes, "bytes the load reads")                                                                              \
    X(context, "positions (the fitted context with fit)")                                                              \
    X(gpu, "1: on the GPU backend (weights and kv then count wasm memory only; model/estimate.h)")                     \
    X(gpu_weights, "weights on the GPU")                                                                               \
    X(gpu_kv, "KV caches on the GPU at the context")                                                                   \
    X(gpu_scratch, "the GPU step's buffers: activations, attention scores, quantized activations, read-back")
#define OX_WASM_COUNT_(field, what)                           +1
#define OX_WASM_GP_COUNT_(field, dst, kind, lo, hi, js, what) +1
enum {
    OX_WASM_N_STATS = 0 OX_WASM_STATS(OX_WASM_COUNT_),
    OX_WASM_N_GEN_PARAMS = 0 OX_WASM_GEN_PARAMS(OX_WASM_GP_COUNT_),
    OX_WASM_N_GEN_OUT = 0 OX_WASM_GEN_OUT(OX_WASM_COUNT_),
    OX_WASM_N_ESTIMATE = 0 OX_WASM_ESTIMATE(OX_WASM_COUNT_),
};
#undef OX_WASM_COUNT_
#undef OX_WASM_GP_COUNT_
/* Field indices: OX_WASM_STAT_resident_bytes, OX_WASM_GP_seed, OX_WASM_GO_token, ... */
#define OX_WASM_STAT_(f, w)                      OX_WASM_STAT_##f,
#define OX_WASM_GP_(f, dst, kind, lo, hi, js, w) OX_WASM_GP_##f,
#define OX_WASM_GO_(f, w)                        OX_WASM_GO_##f,
#define OX_WASM_EST_(f, w)                       OX_WASM_EST_##f,
enum { OX_WASM_STATS(OX_WASM_STAT_) };
enum { OX_WASM_ESTIMATE(OX_WASM_EST_) };
enum { OX_WASM_GEN_PARAMS(OX_WASM_GP_) };
enum { OX_WASM_GEN_OUT(OX_WASM_GO_) };
#undef OX_WASM_STAT_
#undef OX_WASM_GP_
#undef OX_WASM_GO_
#undef OX_WASM_EST_

/* ---- exports ---- */

/* The code (OX_E_*, err.h) of the last failed call; 0 after a success. */
OX_EXPORT int ox_wasm_err_code(void);
/* Its message (names the file and the problem). */
OX_EXPORT const char *ox_wasm_err_msg(void);
/* The name of a code ("IO", "RANGE", ...; "OK" for 0, "UNKNOWN" otherwise). */
OX_EXPORT const char *ox_wasm_code_name(int code);

/* Size the thread pool (n threads in all, the caller included). Returns 0 or < 0. */
OX_EXPORT int ox_wasm_set_threads(int n);
/* Threads the pool runs on. */
OX_EXPORT int ox_wasm_threads(void);

/* Load a model from n_files host handles (GGUF, or an HF directory's files). quant: a quant
 * id; tables_on_host: token-embedding lookups read from the host (-1: when on the GPU);
 * max_resident: bytes, 0 = no limit; stream: a stream mode id (weights left on the host);
 * weight_cache: bytes for the streamed weights; gpu: 1 to upload the matrices through
 * ox_js_gpu_put as they are read when the model can run on the GPU whole (model/model.h
 * ox_load_opts.gpu_put), gpu_types the bit mask of the ggml types the GPU has kernels for. The
 * engine then comes out attached (ox_wasm_gpu_attach returns at once; the table lists the
 * vectors still to upload and the matrices put already). Calls ox_js_progress while loading.
 * Returns the engine, or NULL. */
OX_EXPORT ox_wasm_engine *ox_wasm_load(const int32_t *files, int n_files, int quant, int tables_on_host,
                                       double max_resident, int stream, double weight_cache, int gpu, double gpu_types);
/* Load a gemma4-assistant MTP drafter for the engine's model from n_files host handles
 * (model/drafter_mtp.h); checked against the model. quant as for ox_wasm_load. Replaces an
 * earlier drafter; a failed load keeps it. Returns 0 or < 0. */
OX_EXPORT int ox_wasm_load_drafter(ox_wasm_engine *e, const int32_t *files, int n_files, int quant);
/* The memory a load of these files would take (model/estimate.h), from their headers only,
 * into out (OX_WASM_ESTIMATE). stream, weight_cache, gpu, gpu_types as for ox_wasm_load. n_ctx <= 0: the
 * model's maximum; kv_type 0: f32; budget:
 * bytes, 0 = none; fit: lower the context to the budget instead of failing (NOMEM). The
 * runtime part is the heap in use after the headers and the tokenizer are read (they are
 * freed again). Returns OX_WASM_N_ESTIMATE, or < 0. */
OX_EXPORT int ox_wasm_estimate(const int32_t *files, int n_files, int quant, int tables_on_host, int stream,
                               double weight_cache, int n_ctx, int kv_type, double budget, int fit, int gpu,
                               double gpu_types, double *out);
/* Grow wasm memory now so that `bytes` of it in all are in use without growing again (a
 * budgeted load grows once, before it allocates). Returns 0, or NOMEM when it cannot. */
OX_EXPORT int ox_wasm_reserve(double bytes);
/* Free an engine (its sessions must be freed first). */
OX_EXPORT void ox_wasm_free(ox_wasm_engine *e);
/* The model's facts as JSON: {name, vocab, hidden, layers, heads, kvHeads, headDim,
 * contextSize, slidingWindow, pleDim, experts, bos, pad, eosIds, turnEnd, channelOpen,
 * channelClose, quant, vision}; token ids are -1 where the vocabulary lacks the piece; vision
 * null without a vision tower, else {patchSize, poolingKernel, defaultSoftTokens, hidden,
 * layers, imageTokenId, boiTokenId, eoiTokenId} (engine/engine.h). */
OX_EXPORT const char *ox_wasm_info(const ox_wasm_engine *e);
/* A GGUF string key (e.g. tokenizer.chat_template), or NULL when absent / not a GGUF. */
OX_EXPORT const char *ox_wasm_gguf_str(const ox_wasm_engine *e, const char *key);
/* Fill out[OX_WASM_N_STATS] (the OX_WASM_STATS record). Returns the field count. */
OX_EXPORT int ox_wasm_stats(const ox_wasm_engine *e, double *out);

/* Encode len bytes of UTF-8 (special: match control tokens such as <|turn> in the text).
 * Returns the number of ids (> cap: call again with a larger buffer) or < 0. */
OX_EXPORT int ox_wasm_tokenize(const ox_wasm_engine *e, const char *text, int len, int special, int32_t *out, int cap);
/* Bytes of one token (control tokens: none, unless show_special). Same return convention. */
OX_EXPORT int ox_wasm_token_bytes(const ox_wasm_engine *e, int id, int show_special, char *out, int cap);

/* A session (KV caches and the tokens in them) of at most max_ctx positions (0: the model's),
 * K and V stored as kv_type (model/kv.h OX_KV_TYPES: js/shared/abi.js kvType). */
OX_EXPORT ox_session *ox_wasm_session_new(ox_wasm_engine *e, int max_ctx, int kv_type);
OX_EXPORT void ox_wasm_session_free(ox_session *s);
/* Allocate all a session of its context needs now: KV caches, token list, scratch
 * (model/estimate.h ox_session_prealloc; a budgeted load: no allocation later). Returns 0 or < 0. */
OX_EXPORT int ox_wasm_session_prealloc(ox_session *s);
/* Tokens in the session. */
OX_EXPORT int ox_wasm_session_pos(const ox_session *s);
/* Rewind to pos <= the current position. Returns 0 or < 0. */
OX_EXPORT int ox_wasm_session_truncate(ox_session *s, int pos);
/* Keep the longest common prefix of the session and tokens[0, n), but never the last token
 * (its logits are needed): truncate to it and return its length (then run the rest). */
OX_EXPORT int ox_wasm_session_reuse(ox_session *s, const int32_t *tokens, int n);
/* Run n tokens at the session's position; logits (may be 0): vocab floats of the last token,
 * or n * vocab if all. Returns 0 or < 0 (the session is then unchanged). */
OX_EXPORT int ox_wasm_forward(ox_session *s, const int32_t *tokens, int n, float *logits, int all);

/* A generation over session s; params: OX_WASM_N_GEN_PARAMS doubles (OX_WASM_GEN_PARAMS,
 * arrays copied). Returns the generator, or NULL (a bad parameter is RANGE). */
OX_EXPORT ox_wasm_gen *ox_wasm_gen_new(ox_wasm_engine *e, ox_session *s, const double *params);
OX_EXPORT void ox_wasm_gen_free(ox_wasm_gen *g);
/* The generator's output record: OX_WASM_N_GEN_OUT doubles (OX_WASM_GEN_OUT) at a fixed
 * address, rewritten by each step. */
OX_EXPORT const double *ox_wasm_gen_out(const ox_wasm_gen *g);
/* Set the prompt (n >= 1 ids, copied): keeps the session's common prefix with it (as
 * ox_wasm_session_reuse; soft positions where the rows of ox_wasm_gen_soft match) and returns
 * that length, or < 0 (bad ids: RANGE, session unchanged). */
OX_EXPORT int ox_wasm_gen_start(ox_wasm_gen *g, const int32_t *prompt, int n);
/* Run up to max_n more prompt tokens. Returns the prompt tokens still to run (0: done,
 * the first step may follow), or < 0. */
OX_EXPORT int ox_wasm_gen_prefill(ox_wasm_gen *g, int max_n);
/* Soft tokens, before start: where mask[i] != 0 position i of the n-token prompt start will be
 * given takes the n x hidden embedding row soft[i] (arrays copied); start keeps the session's
 * positions that took the same rows. Returns 0 or < 0. */
OX_EXPORT int ox_wasm_gen_soft(ox_wasm_gen *g, const float *soft, const uint8_t *mask, int n);
/* One decode step (generate.h): forward the previous token if any, sample the next. Returns
 * a status (OX_GEN_*: token, stop, length, context) with the output record filled, or < 0. */
OX_EXPORT int ox_wasm_gen_step(ox_wasm_gen *g);

/* An embedding of tokens[0, n) into out[hidden]: the final-normed hidden states (the model's
 * bidirectional attention where its config asks for it), pooled (0 mean, 1 last token, 2 first
 * token) and, if normalize, scaled to unit length. Runs in a session of its own. Returns the
 * hidden size, or < 0. */
OX_EXPORT int ox_wasm_embed(ox_wasm_engine *e, const int32_t *tokens, int n, int pooling, int normalize, float *out);

/* Soft tokens of one image through the model's vision tower and multimodal embedder
 * (vision/vision.h, docs/vision.md): rgb holds height * width * 3 floats, HWC (rows top to
 * bottom, pixels R, G, B), in [0, 1] (the processor's 1/255 rescale, no mean/std). height and
 * width are positive multiples of patchSize * poolingKernel (info.vision) and the image has at
 * most defaultSoftTokens * poolingKernel^2 patches. Writes n = (height/p) * (width/p) / k^2 rows
 * of `hidden` (the text width) floats to out, the rows for the image's placeholder positions
 * in order, and returns n; RANGE for bad sizes or n > max_tokens, UNSUPPORTED when the model
 * has no vision tower. The engine stays usable after any error. */
OX_EXPORT int ox_wasm_image_embed(ox_wasm_engine *e, const float *rgb, int height, int width, float *out, int max_tokens);

/* GBNF (decode/json_schema.h) for n bytes of JSON: tools 0: a JSON schema, the grammar of JSON
 * text valid under it; tools 1: an array of tools ({function: {name, parameters}}), the grammar
 * of the rest of a forced call after `<|tool_call>call:` in Gemma 4's notation (after_name: the
 * name of tools[0] is already written; parallel: more calls may follow). Needs no model. Returns
 * the grammar, valid until the next call, or NULL (UNSUPPORTED names the keyword or limit). */
OX_EXPORT const char *ox_wasm_json_schema_grammar(const char *json, int n, int tools, int after_name, int parallel);
/* Tests: 1 when the grammar (n_gbnf bytes, over the engine's vocabulary) takes the whole of
 * text[0, n_text) as a complete sentence, 0 when not, or < 0 (the grammar does not compile). */
OX_EXPORT int ox_wasm_grammar_accepts(ox_wasm_engine *e, const char *gbnf, int n_gbnf, const char *text, int n_text);

/* Attach n LoRA adapters (model/lora.h) in place of the attached ones: adapter i is read from
 * counts[i] consecutive handles of files (one GGUF adapter, or adapter_config.json +
 * adapter_model.safetensors) and scaled by scales[i]; n = 0 detaches all. The files are read only
 * here. On error the previous adapters stay attached. Returns the modules patched, or < 0.
 * Sessions' KV caches hold what the previous set computed: the caller truncates them. */
OX_EXPORT int ox_wasm_lora_set(ox_wasm_engine *e, const int32_t *files, const int32_t *counts, const double *scales,
                               int n);

/* Benchmark only (wasm/probe.c, tools/bench.mjs): the best memory read bandwidth in bytes/s of
 * reps streams over an mbytes MB buffer split across n_threads pool threads (the pool is left
 * at n_threads), or < 0. Not used by the package. */
OX_EXPORT double ox_probe_read_bandwidth(int n_threads, int mbytes, int reps);

/* Forget the cached display name of a host handle (JS closed it; the number may be reused). */
OX_EXPORT void ox_host_wasm_forget(int file);

/* The GPU backend (model/gpu_attach.h, gpu/record.h). Move the model's forward onto it, its
 * first `layers` layers (0: all; ox_wasm_gpu_layers says how many), the rest on the CPU;
 * types: bit t set when the GPU has kernels for ggml type t (the matmuls of other types run on
 * the CPU inside the step). Returns the number of weights to upload (ox_wasm_gpu_table), or < 0
 * (UNSUPPORTED with the reason: streamed weights, LoRA). Sessions made before keep their CPU
 * caches: reset them. */
OX_EXPORT int ox_wasm_gpu_attach(ox_wasm_engine *e, int layers, int types);
/* The layers on the GPU backend (0: not attached). */
OX_EXPORT int ox_wasm_gpu_layers(ox_wasm_engine *e);
/* The weights to upload: ox_wasm_gpu_attach's count of entries, OX_GPU_ENTRY_WORDS int32 each
 * (id, kind 0 matrix / 1 f32 vector, ggml type, rows, cols, data pointer, row bytes, rows per
 * expert of a stacked expert tensor, else 1). */
OX_EXPORT const int32_t *ox_wasm_gpu_table(ox_wasm_engine *e);
/* Back to the CPU (before ox_wasm_gpu_release: the weights are still in wasm memory; after it,
 * the model refuses to run and is loaded again); the caller resets its sessions. */
OX_EXPORT void ox_wasm_gpu_detach(ox_wasm_engine *e);
/* Free the wasm copies of the uploaded matrices; returns the bytes freed. */
OX_EXPORT double ox_wasm_gpu_release(ox_wasm_engine *e);

/* ---- imports (src/host/hostfile_lib.js; the GPU's: src/gpu/gpu_lib.js) ---- */

/* Read len bytes at off of host file `file` into dst; 0, or a negative code with a message
 * (NUL-terminated, at most msg_cap bytes) in msg. Runs on the calling thread, synchronously. */
OX_IMPORT int ox_js_host_read(int file, double off, size_t len, void *dst, char *msg, int msg_cap);
/* Size of a host file in bytes, or -1 for an unknown handle. */
OX_IMPORT double ox_js_host_size(int file);
/* The display name of a host file into buf (NUL-terminated); 0, or -1 for an unknown handle. */
OX_IMPORT int ox_js_host_name(int file, char *buf, int cap);
/* Load progress (bytes done of total); nonzero aborts the load (ABORTED). */
OX_IMPORT int ox_js_progress(double done, double total);
/* Polled while a grammar compiles and while a grammar mask is built (Module.oxAborted());
 * nonzero stops that call with ABORTED, leaving the engine free for the next call. */
OX_IMPORT int ox_js_aborted(void);
/* (src/gpu/gpu_lib.js) Run one recorded step (gpu/record.h: `words` int32 at list, activations
 * at act) on the GPU thread and wait for it; 0, or a negative code with a message in msg. */
OX_IMPORT int ox_js_gpu_run(const int32_t *list, int words, const void *act, char *msg, int msg_cap);
/* A session's KV caches on the GPU may go (the session ended). */
OX_IMPORT void ox_js_gpu_forget(int32_t session);
/* While loading: rows [row0, row0 + rows) of the weight `entry` (OX_GPU_ENTRY_WORDS words) in
 * their block layout at bytes, to the GPU; returns once the GPU thread took them (the bytes
 * may then be reused): 0, or a negative code with a message in msg. */
OX_IMPORT int ox_js_gpu_put(const int32_t *entry, double row0, double rows, const void *bytes, char *msg, int msg_cap);

#endif
