/* fuzz_grammar.c — the GBNF compiler and matcher (decode/grammar.h) on arbitrary grammar text,
 * which reaches the engine from a request body (grammar, json_schema). A refused grammar gives
 * a coded error; an accepted one runs a few steps over a small vocabulary (byte tokens, text
 * tokens, control tokens), where every token the mask allows must be accepted, and a token
 * the mask forbids refused. */
#include "fuzz.h"
#include "decode/grammar.h"
#include "text/tokenizer.h"

#include <math.h>

static ox_tokenizer *tok;
static ox_grammar_vocab *vocab;
static int n_vocab;

static void setup(void) {
    static const char js[] =
        "{\"added_tokens\":[{\"id\":0,\"content\":\"<pad>\",\"special\":true},{\"id\":1,\"content\":\"<eos>\",\"special\":true},"
        "{\"id\":2,\"content\":\"<|\\\"|>\",\"special\":true},{\"id\":3,\"content\":\"<tool_call|>\",\"special\":true}],"
        "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"},"
        "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{\"<pad>\":0,\"<eos>\":1,\"<|\\\"|>\":2,\"<tool_call|>\":3,"
        "\"<0x22>\":4,\"<0x7B>\":5,\"<0x7D>\":6,\"<0xC3>\":7,\"<0xA9>\":8,\"a\":9,\"b\":10,\"ab\":11,\"{\\\"\":12,\"\\\":\":13,"
        "\"1\":14,\"12\":15,\"true\":16,\"\\u2581\":17,\"\\u00e9\":18,\"<\":19,\"|\":20,\",\":21,\"[\":22,\"]\":23,\"\\\\\":24},"
        "\"merges\":[]}}";
    ox_err err = {0};
    tok = ox_tokenizer_from_json_text(js, sizeof js - 1, "fuzz-vocab.json", &err);
    if (!tok) {
        fprintf(stderr, "fuzz_grammar: %s\n", err.msg);
        abort();
    }
    vocab = ox_grammar_vocab_new(tok, &err);
    fuzz_assert(vocab != NULL, "vocabulary index");
    n_vocab = ox_tokenizer_vocab(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!tok) setup();
    static const int32_t stops[] = {1};
    ox_err err = {0};
    ox_grammar *g = ox_grammar_new(vocab, (const char *)data, size, stops, 1, &err);
    if (!g) {
        fuzz_expect_error(err.code, &err);
        return 0;
    }
    float logits[64];
    for (int step = 0; step < 8; step++) {
        for (int i = 0; i < n_vocab; i++) logits[i] = 0;
        ox_err e = {0};
        int rc = ox_grammar_mask(g, logits, n_vocab, &e);
        if (rc) { /* nothing can follow, or a limit: a coded error */
            fuzz_expect_error(rc, &e);
            break;
        }
        int pick = -1;
        for (int i = 0; i < n_vocab; i++) {
            ox_grammar *c = ox_grammar_clone(g, &e);
            if (!c) break;
            int ok = ox_grammar_accept(c, i, &e) == 0;
            ox_grammar_free(c);
            fuzz_assert(ok == (logits[i] == 0), "the mask and accept agree");
            if (ok && pick < 0 && (i != 1 || step == 7)) pick = i;
        }
        if (pick < 0 || pick == 1) break;
        fuzz_assert(ox_grammar_accept(g, pick, &e) == 0, "an allowed token is accepted");
    }
    ox_grammar_free(g);
    return 0;
}
