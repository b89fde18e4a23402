/* fuzz_grammar.c — the GBNF compiler and matcher (decode/grammar.h) on arbitrary grammar text,
 * which reaches the engine from a request body (grammar, json_schema). A refused grammar gives
 * a coded error; an accepted one runs a few steps over a trained vocabulary (the committed demo
 * model's: byte tokens, merged text, Gemma's control tokens), where every token the mask allows
 * must be accepted and a token accept refuses must be masked (the mask may refuse more: tokens
 * that lead into a dead end). Each input's cost is bounded in operations (ox_grammar_work):
 * compiling linear in the text, each mask a bounded number of walks of the vocabulary. */
#include "fuzz.h"
#include "decode/grammar.h"
#include "formats/tensors.h"
#include "host/hostfile.h"
#include "text/tokenizer.h"

#include <math.h>

static ox_tokenizer *grammar_tok;
static ox_grammar_vocab *grammar_vocab;
static int grammar_n_vocab;
static int32_t grammar_eos;

/* a source file under the repository's tests/, absolute: the demo model is found from it (a
 * test that includes this harness names its own, which its build passes absolute) */
#ifndef FUZZ_SOURCE_FILE
#define FUZZ_SOURCE_FILE __FILE__
#endif

static void grammar_setup(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s", FUZZ_SOURCE_FILE);
    char *cut = NULL;
    for (char *at = strstr(path, "tests/"); at; at = strstr(at + 1, "tests/")) cut = at; /* the last */
    fuzz_assert(cut != NULL && cut - path + 40 < (long)sizeof path, "the harness knows where the repository is");
    strcpy(cut, "web/models/oxinfer-demo.gguf");
    ox_err err = {0};
    int h = ox_host_open_path(path, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    grammar_tok = mf ? ox_tokenizer_load(mf, &err) : NULL;
    ox_files_free(mf);
    if (!grammar_tok) {
        fprintf(stderr, "fuzz_grammar: %s\n", err.msg);
        abort();
    }
    grammar_vocab = ox_grammar_vocab_new(grammar_tok, &err);
    fuzz_assert(grammar_vocab != NULL, "vocabulary index");
    grammar_n_vocab = ox_tokenizer_vocab(grammar_tok);
    grammar_eos = ox_tokenizer_eos(grammar_tok);
}

/* Operations an input may take: compiling at most 64 per compiled element (a byte of text
 * compiles to at most 1024 elements, {1024}), a mask at most 64 per token for each of the
 * look-ahead's walks of the vocabulary, an accept 64 per byte per open parse. */
#define COMPILE_OPS(size) (64 * 1024 * ((uint64_t)(size) + 16))
#define MASK_OPS          ((uint64_t)64 * 16 * (uint64_t)(grammar_n_vocab + 1) * 256)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!grammar_tok) grammar_setup();
    const int32_t stops[] = {grammar_eos};
    ox_err err = {0};
    ox_grammar *g = ox_grammar_new(grammar_vocab, (const char *)data, size, stops, 1, &err);
    if (!g) {
        fuzz_expect_error(err.code, &err);
        return 0;
    }
    fuzz_assert(ox_grammar_work(g) <= COMPILE_OPS(size), "compiling is linear in the text");
    float *logits = malloc((size_t)grammar_n_vocab * sizeof *logits);
    fuzz_assert(logits != NULL, "memory for the logits");
    for (int step = 0; step < 8; step++) {
        for (int i = 0; i < grammar_n_vocab; i++) logits[i] = 0;
        ox_err e = {0};
        uint64_t before = ox_grammar_work(g);
        int rc = ox_grammar_mask(g, logits, grammar_n_vocab, &e);
        fuzz_assert(ox_grammar_work(g) - before <= MASK_OPS, "a mask costs a bounded number of vocabulary walks");
        if (rc) { /* nothing can follow, or a limit: a coded error */
            fuzz_expect_error(rc, &e);
            break;
        }
        /* every allowed token is accepted; tokens accept refuses are masked. Which one to
         * take: a pseudo-random allowed one from the input's bytes (the stop only last) */
        int n_ok = 0, pick = -1;
        unsigned salt = size ? data[step % size] : 0;
        /* a refused token leaves the clone as it was: a new clone only after an accepted one */
        ox_grammar *c = ox_grammar_clone(g, &e);
        for (int i = 0; c && i < grammar_n_vocab; i++) {
            int ok = ox_grammar_accept(c, i, &e) == 0;
            if (ok) ox_grammar_free(c), c = ox_grammar_clone(g, &e);
            if (logits[i] == 0) fuzz_assert(ok, "a token the mask allows is accepted");
            if (logits[i] == 0 && (i != grammar_eos || step == 7) && (pick < 0 || (unsigned)n_ok++ % 7 == salt % 7))
                pick = i;
        }
        ox_grammar_free(c);
        if (pick < 0 || pick == grammar_eos) break;
        fuzz_assert(ox_grammar_accept(g, pick, &e) == 0, "an allowed token is accepted");
    }
    free(logits);
    ox_grammar_free(g);
    return 0;
}
