/* engine.c — the engine facade (engine.h): model, tokenizer, drafter and adapters owned in one
 * place, the info JSON, the grammar's stop ids. */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/tensors.h"
#include "host/hostfile.h"
#include "model/drafter_mtp.h"
#include "model/gpu_attach.h"
#include "model/lora.h"

struct ox_engine {
    ox_model *m;
    ox_model *drafter; /* MTP drafter, or NULL */
    ox_vision *vision; /* the vision tower when the files hold one, or NULL */
    ox_tokenizer *tok;
    char *info;               /* JSON, made once */
    ox_grammar_vocab *gvocab; /* the grammar engine's index of the vocabulary, made on first use */
    int (*aborted)(void *ud); /* the grammars' abort hook (ox_engine_set_abort), or NULL */
    void *aborted_ud;
    ox_lora *lora[OX_LORA_MAX]; /* the attached adapters, owned */
    float lora_scale[OX_LORA_MAX];
    int n_lora;
};

void ox_engine_name_files(ox_err *err, const int *files, int n) {
    for (int i = 0; i < n; i++)
        if (strstr(err->msg, ox_host_name(files[i]))) return;
    if (n == 1) ox_err_prefix(err, "%s", ox_host_name(files[0]));
    else if (n > 1) ox_err_prefix(err, "%s (+%d files)", ox_host_name(files[0]), n - 1);
}

static int check_quant(const char *what, int quant, ox_err *err) {
#define OX_QUANT_NAME_(name, id, js) " " js
    if (quant < OX_QUANT_STORED || quant > OX_QUANT_Q4)
        return ox_errf(err, OX_E_RANGE, "%squant %d is not one of" OX_QUANTS(OX_QUANT_NAME_), what, quant);
#undef OX_QUANT_NAME_
    return 0;
}

static char *info_json(const ox_engine *e, ox_err *err);

/* The vision tower's linears follow the load's quant, except q4: the tower stays at q8_0 (it is
 * small, and the image rows feed every later token). */
ox_type ox_engine_vision_quant(ox_quant q) {
    static const ox_type of[] = {
        [OX_QUANT_STORED] = (ox_type)0, [OX_QUANT_BF16] = OX_BF16, [OX_QUANT_Q8] = OX_Q8_0, [OX_QUANT_Q4] = OX_Q8_0};
    return q >= OX_QUANT_STORED && q <= OX_QUANT_Q4 ? of[q] : (ox_type)0;
}

/* The vision tower beside the decoder when the files hold one (vision/vision.h). */
static int load_vision(ox_engine *e, const ox_load_opts *opts, ox_err *err) {
    const ox_model_files *mf = ox_model_files_of(e->m);
    ox_vision_config vc;
    int rc = ox_vision_config_read(mf, &vc, err);
    if (rc <= 0) return rc;
    if (!(e->vision = ox_vision_load(mf, ox_engine_vision_quant(opts->quant), err)))
        return err ? err->code : OX_E_MISSING;
    if (vc.text_hidden != ox_model_config(e->m)->hidden)
        return ox_errf(err, OX_E_CONFIG, "the vision embedder projects to %d, the text model's width is %d",
                       vc.text_hidden, ox_model_config(e->m)->hidden);
    return 0;
}

int ox_engine_gpu_attach(ox_engine *e, int layers, uint32_t types, ox_err *err) {
    int rc = ox_model_gpu_attach(e->m, layers, types, err);
    if (!rc && e->vision && !ox_vision_gpu_on(e->vision)) rc = ox_vision_gpu_attach(e->vision, ox_model_gpu(e->m), err);
    if (rc) ox_engine_gpu_detach(e);
    return rc;
}

void ox_engine_gpu_detach(ox_engine *e) {
    ox_vision_gpu_detach(e->vision);
    ox_model_gpu_detach(e->m);
}

ox_engine *ox_engine_load(const int *files, int n_files, const ox_load_opts *opts, int flags, ox_err *err) {
    if (check_quant("", (int)opts->quant, err)) return NULL;
    ox_engine *e = calloc(1, sizeof *e);
    if (!e) {
        ox_errf(err, OX_E_NOMEM, "out of memory for the engine");
        return NULL;
    }
    ox_model_files *mf = ox_files_open(files, n_files, err);
    if (mf) e->m = ox_model_load(mf, opts, err); /* takes mf, also on failure */
    int tok_ok = e->m && ((flags & OX_ENGINE_NO_TOKENIZER) || (e->tok = ox_tokenizer_load(ox_model_files_of(e->m), err)));
    if (tok_ok && load_vision(e, opts, err) == 0) e->info = info_json(e, err);
    if (e->info) return e;
    ox_engine_name_files(err, files, n_files);
    ox_engine_free(e);
    return NULL;
}

void ox_engine_free(ox_engine *e) {
    if (!e) return;
    ox_tokenizer_free(e->tok);
    ox_model_free(e->drafter);
    ox_vision_free(e->vision);
    for (int i = 0; i < e->n_lora; i++) ox_lora_free(e->lora[i]);
    ox_model_free(e->m);
    ox_grammar_vocab_free(e->gvocab);
    free(e->info);
    free(e);
}

ox_model *ox_engine_model(const ox_engine *e) { return e->m; }
const ox_tokenizer *ox_engine_tokenizer(const ox_engine *e) { return e->tok; }
const ox_model *ox_engine_drafter(const ox_engine *e) { return e->drafter; }
ox_vision *ox_engine_vision(const ox_engine *e) { return e->vision; }
const char *ox_engine_info(const ox_engine *e) { return e->info; }

int ox_engine_load_drafter(ox_engine *e, const int *files, int n_files, const ox_load_opts *opts, ox_err *err) {
    if (check_quant("drafter: ", (int)opts->quant, err)) return err->code;
    ox_load_opts o = *opts;
    o.drafter = 1;
    ox_model_files *mf = ox_files_open(files, n_files, err);
    ox_model *d = mf ? ox_model_load(mf, &o, err) : NULL; /* takes mf */
    if (d && ox_mtp_check(d, e->m, err)) ox_model_free(d), d = NULL;
    if (!d) {
        ox_engine_name_files(err, files, n_files);
        return err->code ? err->code : OX_E_STATE;
    }
    ox_model_free(e->drafter);
    e->drafter = d;
    return 0;
}

int ox_engine_set_lora(ox_engine *e, const int *files, const int *counts, const float *scales, int n, ox_err *err) {
    if (n < 0 || n > OX_LORA_MAX)
        return ox_errf(err, OX_E_RANGE, "LoRA: %d adapters at once (at most %d)", n, OX_LORA_MAX);
    ox_lora *next[OX_LORA_MAX] = {0};
    int rc = 0, modules = 0;
    for (int i = 0, at = 0; i < n && !rc; at += counts[i++]) {
        next[i] = ox_lora_load(e->m, files + at, counts[i], err);
        if (!next[i]) rc = err->code;
        else modules += ox_lora_modules(next[i]);
    }
    if (!rc) rc = ox_model_set_lora(e->m, next, scales, n, err);
    ox_lora **drop = rc ? next : e->lora; /* on error the new ones go, else the old ones */
    for (int i = 0; i < (rc ? n : e->n_lora); i++) ox_lora_free(drop[i]);
    if (rc) return rc;
    memcpy(e->lora, next, sizeof next);
    if (n) memcpy(e->lora_scale, scales, (size_t)n * sizeof *scales);
    e->n_lora = n;
    return modules;
}

int ox_engine_lora_enable(ox_engine *e, int on, ox_err *err) {
    return ox_model_set_lora(e->m, e->lora, e->lora_scale, on ? e->n_lora : 0, err);
}

int ox_engine_lora_count(const ox_engine *e) { return e->n_lora; }

void ox_engine_set_abort(ox_engine *e, int (*aborted)(void *ud), void *ud) {
    e->aborted = aborted, e->aborted_ud = ud;
    if (e->gvocab) ox_grammar_vocab_set_abort(e->gvocab, aborted, ud);
}

ox_grammar *ox_engine_grammar(ox_engine *e, const char *gbnf, size_t len, const ox_gen_params *p, ox_err *err) {
    if (!e->tok) {
        ox_errf(err, OX_E_STATE, "grammar: the engine was loaded without a tokenizer");
        return NULL;
    }
    if (!e->gvocab) {
        if (!(e->gvocab = ox_grammar_vocab_new(e->tok, err))) return NULL;
        ox_grammar_vocab_set_abort(e->gvocab, e->aborted, e->aborted_ud);
    }
    const ox_config *c = ox_model_config(e->m);
    int n_eos = p->use_eos ? c->n_eos : 0, n = n_eos + p->n_stop;
    int32_t *stops = malloc((size_t)(n ? n : 1) * sizeof *stops);
    if (!stops) {
        ox_errf(err, OX_E_NOMEM, "out of memory for the stop ids");
        return NULL;
    }
    for (int i = 0; i < n_eos; i++) stops[i] = c->eos_ids[i];
    if (p->n_stop) memcpy(stops + n_eos, p->stop_ids, (size_t)p->n_stop * sizeof *stops);
    ox_grammar *g = ox_grammar_new(e->gvocab, gbnf, len, stops, n, err);
    free(stops);
    return g;
}

static int grammar_mask(void *ud, float *logits, int vocab, ox_err *err) {
    return ox_grammar_mask(ud, logits, vocab, err);
}
static int grammar_accept(void *ud, int token, ox_err *err) { return ox_grammar_accept(ud, token, err); }

ox_logits_filter ox_engine_grammar_filter(ox_grammar *g) { return (ox_logits_filter){g, grammar_mask, grammar_accept}; }

static int token_id(const ox_engine *e, const char *piece) { return e->tok ? ox_tokenizer_find(e->tok, piece) : -1; }

static char *info_json(const ox_engine *e, ox_err *err) {
    const ox_config *c = ox_model_config(e->m);
    const ox_model_files *mf = ox_model_files_of(e->m);
    const struct ox_gguf *g = ox_files_gguf(mf);
    const char *name = NULL, *sq = ox_files_stored_quant(mf);
    if (g) ox_gguf_get_str(g, "general.name", &name, NULL);
    char eos[8 * 12] = "";
    for (int i = 0, k = 0; i < c->n_eos && i < 8; i++)
        k += snprintf(eos + k, sizeof eos - k, "%s%d", i ? "," : "", c->eos_ids[i]);
    char vis[320] = "null";
    if (e->vision) { /* the image markers as Gemma 4's tokenizer spells them (docs/vision.md) */
        const ox_vision_config *v = ox_vision_cfg(e->vision);
        snprintf(vis, sizeof vis,
                 "{\"patchSize\":%d,\"poolingKernel\":%d,\"defaultSoftTokens\":%d,\"hidden\":%d,\"layers\":%d,"
                 "\"imageTokenId\":%d,\"boiTokenId\":%d,\"eoiTokenId\":%d}",
                 v->patch, v->pool, v->default_soft_tokens, v->hidden, v->n_layers, token_id(e, "<|image|>"),
                 token_id(e, "<|image>"), token_id(e, "<image|>"));
    }
    size_t cap = 1400 + (name ? 2 * strlen(name) : 0);
    char *s = malloc(cap), *q = name ? malloc(2 * strlen(name) + 1) : NULL;
    if (!s || (name && !q)) {
        free(s);
        free(q);
        ox_errf(err, OX_E_NOMEM, "out of memory for the model info");
        return NULL;
    }
    if (q) { /* JSON string escape: quotes, backslashes; control characters dropped */
        char *w = q;
        for (const char *p = name; *p; p++) {
            if (*p == '"' || *p == '\\') *w++ = '\\';
            if ((unsigned char)*p >= 0x20) *w++ = *p;
        }
        *w = 0;
    }
    snprintf(s, cap,
             "{\"name\":\"%s\",\"vocab\":%d,\"hidden\":%d,\"layers\":%d,\"heads\":%d,\"kvHeads\":%d,"
             "\"headDim\":%d,\"contextSize\":%d,\"slidingWindow\":%d,\"pleDim\":%d,\"experts\":%d,"
             "\"bos\":%d,\"pad\":%d,\"eosIds\":[%s],\"turnEnd\":%d,\"channelOpen\":%d,\"channelClose\":%d,"
             "\"quant\":\"%s\",\"vision\":%s}",
             q ? q : "", c->vocab, c->hidden, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, c->ctx_max,
             c->sliding_window, c->ple_dim, c->moe ? c->n_experts : 0, c->bos_id, c->pad_id, eos,
             token_id(e, "<turn|>"), token_id(e, "<|channel>"), token_id(e, "<channel|>"), sq ? sq : "stored", vis);
    free(q);
    return s;
}
