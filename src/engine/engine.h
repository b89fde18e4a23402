/* engine.h — the engine facade: one loaded model with what runs beside it. The wasm exports
 * (wasm/wasm_api.c) and the oxinfer CLI (cli/) both hold one; neither re-does its parts.
 *
 * An engine owns:
 *   the model          the decoder (model/model.h), loaded from host files
 *   the tokenizer      read from the same files (text/tokenizer.h)
 *   the MTP drafter    optional, a gemma4-assistant checked against the model (model/drafter_mtp.h)
 *   the vision tower   when the files hold one (an mmproj GGUF beside the model, or an HF
 *                      multimodal checkpoint): images to soft tokens (vision/vision.h)
 *   LoRA adapters      the attached set, replaced as a whole (model/lora.h)
 *   the info JSON      the model's facts the JS side reads once (names below)
 *   the grammar index  the vocabulary as the grammar engine sees it, made on first use
 *
 * Load errors name the files: a message that names none of them gets the first file's name in
 * front ("a.gguf (+2 files): ..."). Sessions and generations stay the caller's
 * (ox_session_new on ox_engine_model, ox_gen_new with ox_engine_tokenizer); a generation
 * with a grammar takes the one ox_engine_grammar compiles (the generation's stop ids merged in). */
#ifndef OX_ENGINE_H
#define OX_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "decode/generate.h"
#include "decode/grammar.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "vision/vision.h"

typedef struct ox_engine ox_engine;

/* The model and its tokenizer from n host files (ox_host_open*); the files stay the caller's
 * and must stay open while the engine lives. flags: OX_ENGINE_NO_TOKENIZER loads the model
 * alone (logits over token ids; ox_engine_tokenizer is NULL, grammars are STATE). Errors: the
 * loader's and the tokenizer's (RANGE: an unknown quant), files named. */
#define OX_ENGINE_NO_TOKENIZER 1
ox_engine *ox_engine_load(const int *files, int n_files, const ox_load_opts *opts, int flags, ox_err *err);
void ox_engine_free(ox_engine *e);

ox_model *ox_engine_model(const ox_engine *e);
const ox_tokenizer *ox_engine_tokenizer(const ox_engine *e);
const ox_model *ox_engine_drafter(const ox_engine *e); /* NULL when none is loaded */
ox_vision *ox_engine_vision(const ox_engine *e);       /* NULL when the model has no vision tower */
ox_type ox_engine_vision_quant(ox_quant q);            /* the type the tower's linears load in (0: stored) */

/* The GPU backend for the model and its vision tower (model/gpu_attach.h ox_model_gpu_attach,
 * then vision.h ox_vision_gpu_attach into the same recorder); all or nothing: on error both stay
 * on the CPU. Detach puts both back. */
int ox_engine_gpu_attach(ox_engine *e, int layers, uint32_t types, ox_err *err);
void ox_engine_gpu_detach(ox_engine *e);

/* {"name","vocab","hidden","layers","heads","kvHeads","headDim","contextSize","slidingWindow",
 *  "pleDim","experts","bos","pad","eosIds":[..],"turnEnd","channelOpen","channelClose","quant"}:
 * made at load; turnEnd / channelOpen / channelClose are the ids of <turn|>, <|channel>,
 * <channel|> (-1 when the vocabulary lacks them, or without a tokenizer); quant the stored type ("stored" if mixed);
 * "vision": null, or {"patchSize","poolingKernel","defaultSoftTokens","hidden","layers","imageTokenId",
 * "boiTokenId","eoiTokenId"} (the ids of <|image|>, <|image>, <image|>, -1 when absent). */
const char *ox_engine_info(const ox_engine *e);

/* The MTP drafter from n host files (quant as for the model; progress from opts). Replaces the
 * one loaded before only when the new one loads and fits the model (errors name both). */
int ox_engine_load_drafter(ox_engine *e, const int *files, int n_files, const ox_load_opts *opts, ox_err *err);

/* Attach n adapters (0: none), adapter i read from counts[i] host files (GGUF: 1, PEFT:
 * config + safetensors) taken in order from files, at scales[i]. All or nothing: on error
 * the adapters attached before stay. Returns the patched linears (>= 0) or < 0. */
int ox_engine_set_lora(ox_engine *e, const int *files, const int *counts, const float *scales, int n, ox_err *err);
/* Detach the adapters (on = 0) or attach them again (on = 1), keeping them loaded: a benchmark's
 * alternating steps. */
int ox_engine_lora_enable(ox_engine *e, int on, ox_err *err);
int ox_engine_lora_count(const ox_engine *e);

/* len bytes of GBNF compiled over the engine's vocabulary, ending at the generation's stop ids:
 * the model's eos ids when p->use_eos, then p->stop_ids. The caller frees it (ox_grammar_free)
 * after the generation that uses it (ox_engine_grammar_filter). */
ox_grammar *ox_engine_grammar(ox_engine *e, const char *gbnf, size_t len, const ox_gen_params *p, ox_err *err);
/* The abort hook of the engine's grammars (decode/grammar.h ox_grammar_vocab_set_abort): polled
 * while a grammar compiles and while its masks are built; NULL: none. */
void ox_engine_set_abort(ox_engine *e, int (*aborted)(void *ud), void *ud);
/* The logits filter that makes a generation follow g. */
ox_logits_filter ox_engine_grammar_filter(ox_grammar *g);

/* A load error's message gets the first file's name in front unless it names one of them. */
void ox_engine_name_files(ox_err *err, const int *files, int n_files);

#endif
