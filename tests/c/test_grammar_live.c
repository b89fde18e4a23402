/* test_grammar_live.c — constrained generation on a random-weight synthetic model never
 * dead-ends: over many seeds and JSON grammars (the shapes js/schema.js writes), every
 * generation ends with a stop token or at max_tokens, never with "no token of the vocabulary
 * can continue the text". The model's made-up vocabulary has byte tokens that start code
 * points no text can finish (ED A0..BF: surrogates), which random weights do sample. Also:
 * sampling uniformly from the mask itself, the same. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "model/generate.h"
#include "model/grammar.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "tools/synth.h"

static ox_model *model;
static ox_tokenizer *tokenizer;
static ox_grammar_vocab *gvocab;

static const char *GRAMMARS[] = {
    /* {"type": "string"} */
    "root ::= ws value ws\nws ::= | \" \" | \"\\n\" [ \\t]{0,8}\nvalue ::= (\"\\\"\" json-char* \"\\\"\")\n"
    "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n",
    /* {name: string maxLength 8, age: integer} */
    "root ::= ws value ws\nws ::= | \" \" | \"\\n\" [ \\t]{0,8}\nname ::= (\"\\\"\" json-char{0,8} \"\\\"\")\n"
    "age ::= integer\nvalue-rest-1 ::= ws \",\" ws \"\\\"age\\\"\" ws \":\" ws age\n"
    "value ::= (\"{\" ws (\"\\\"name\\\"\" ws \":\" ws name value-rest-1) ws \"}\")\n"
    "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "integer ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15})\n",
    /* text with any code point, and an end marker */
    "root ::= [^#]* \"#\"\n",
};
#define N_GRAMMARS ((int)(sizeof GRAMMARS / sizeof *GRAMMARS))
enum { SEEDS = 24, MAX_TOKENS = 96 };

static int mask(void *ud, float *logits, int vocab, ox_err *err) { return ox_grammar_mask(ud, logits, vocab, err); }
static int accept(void *ud, int token, ox_err *err) { return ox_grammar_accept(ud, token, err); }

/* one constrained generation: its status (STOP / LENGTH), or the failing code */
static int generate(const char *src, uint32_t seed, ox_err *err) {
    const ox_config *c = ox_model_config(model);
    ox_grammar *gr = ox_grammar_new(gvocab, src, strlen(src), c->eos_ids, c->n_eos, err);
    if (!gr) return err->code;
    ox_gen_params p;
    ox_gen_defaults(&p);
    p.sampler.seed = seed;
    p.sampler.temperature = 1.5f; /* flatter: more of the vocabulary gets sampled */
    p.sampler.top_k = 0;
    p.sampler.top_p = 1;
    p.max_tokens = MAX_TOKENS;
    p.filter = (ox_logits_filter){gr, mask, accept};
    ox_session *s = ox_session_new(model, 0, err);
    ox_gen *g = s ? ox_gen_new(s, tokenizer, &p, err) : NULL;
    int32_t prompt[4] = {2, 10 + (int32_t)(seed % 50), 20, 30};
    int status = g && ox_gen_start(g, prompt, 4, err) == 0 ? ox_gen_prefill(g, 0, err) : err->code;
    while (status >= 0) {
        ox_gen_token t;
        if ((status = ox_gen_step(g, &t, err)) != OX_GEN_TOKEN) break;
    }
    ox_gen_free(g);
    ox_session_free(s);
    ox_grammar_free(gr);
    return status;
}

static void test_generations(void) {
    int dead = 0, stops = 0;
    for (int k = 0; k < N_GRAMMARS; k++)
        for (uint32_t seed = 1; seed <= SEEDS; seed++) {
            ox_err err = {0};
            int status = generate(GRAMMARS[k], seed, &err);
            if (status == OX_GEN_STOP) stops++;
            if (status != OX_GEN_STOP && status != OX_GEN_LENGTH && dead++ < 5)
                fprintf(stderr, "grammar %d seed %u: %s\n", k, seed, err.msg);
        }
    CHECK_MSG(dead == 0, "%d of %d generations dead-ended", dead, N_GRAMMARS * SEEDS);
    CHECK(stops > 0); /* the grammars do end */
}

/* Uniform choice among the tokens the mask allows: no step finds the mask empty. */
static void test_uniform_walks(void) {
    int V = ox_tokenizer_vocab(tokenizer), dead = 0;
    const ox_config *c = ox_model_config(model);
    float *logits = malloc((size_t)V * sizeof *logits);
    int *allowed = malloc((size_t)V * sizeof *allowed);
    for (int k = 0; k < N_GRAMMARS; k++)
        for (uint32_t seed = 1; seed <= 2 * SEEDS; seed++) {
            ox_err err = {0};
            ox_grammar *g = ox_grammar_new(gvocab, GRAMMARS[k], strlen(GRAMMARS[k]), c->eos_ids, c->n_eos, &err);
            CHECK_MSG(g != NULL, "%s", err.msg);
            uint32_t r = seed * 2654435761u;
            for (int step = 0; g && step < 200; step++) {
                for (int i = 0; i < V; i++) logits[i] = 0;
                if (ox_grammar_mask(g, logits, V, &err)) {
                    if (dead++ < 5) fprintf(stderr, "grammar %d seed %u step %d: %s\n", k, seed, step, err.msg);
                    break;
                }
                int n = 0;
                for (int i = 0; i < V; i++)
                    if (logits[i] == 0) allowed[n++] = i;
                r = r * 1103515245u + 12345u;
                int pick = allowed[(r >> 8) % (uint32_t)n], stop = 0;
                for (int e = 0; e < c->n_eos; e++) stop |= pick == c->eos_ids[e];
                if (stop) break;
                CHECK(ox_grammar_accept(g, pick, &err) == 0);
            }
            ox_grammar_free(g);
        }
    CHECK_MSG(dead == 0, "%d walks dead-ended", dead);
    free(logits);
    free(allowed);
}

int main(void) {
    char tmp[64], path[128];
    snprintf(tmp, sizeof tmp, "/tmp/oxtest_grammar_live_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    snprintf(path, sizeof path, "%s/tiny.gguf", tmp);
    ox_synth sy;
    ox_err err = {0};
    ox_synth_preset(&sy, "tiny", &err);
    int h = ox_synth_write_gguf(&sy, path, &err) ? -1 : ox_host_open_path(path, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    model = mf ? ox_model_load(mf, NULL, &err) : NULL;
    tokenizer = model ? ox_tokenizer_load(ox_model_files_of(model), &err) : NULL;
    gvocab = tokenizer ? ox_grammar_vocab_new(tokenizer, &err) : NULL;
    if (!gvocab) {
        fprintf(stderr, "fixture: %s\n", err.msg);
        return 1;
    }
    RUN(test_generations);
    RUN(test_uniform_walks);
    ox_grammar_vocab_free(gvocab);
    ox_tokenizer_free(tokenizer);
    ox_model_free(model);
    unlink(path);
    rmdir(tmp);
    return check_summary("test_grammar_live");
}
