/* fuzz_json_schema.c — the JSON schema -> GBNF converter (decode/json_schema.h) on arbitrary
 * input, which reaches the engine from a request body (response_format, tools). The first byte
 * picks the mode (JSON, Gemma 4, tool calls with their flags), the rest is the JSON. A refused
 * input gives a coded error; an accepted one is a grammar within the output limit that the
 * grammar compiler takes, or refuses only for left recursion (a $ref cycle that consumes
 * nothing), never for its own size limits. */
#include "fuzz.h"
#include "decode/json_schema.h"
#include "decode/grammar.h"
#include "text/tokenizer.h"

static ox_grammar_vocab *schema_vocab;

static void schema_setup(void) {
    static const char js[] =
        "{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<eos>\":0,\"{\":1,\"\\\"\":2},\"merges\":[]}}";
    ox_err err = {0};
    ox_tokenizer *tok = ox_tokenizer_from_json_text(js, sizeof js - 1, "fuzz-schema-vocab.json", &err);
    fuzz_assert(tok != NULL, "the vocabulary");
    schema_vocab = ox_grammar_vocab_new(tok, &err);
    fuzz_assert(schema_vocab != NULL, "vocabulary index");
    ox_tokenizer_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!schema_vocab) schema_setup();
    if (!size) return 0;
    static const int modes[] = {OX_SCHEMA_JSON, OX_SCHEMA_GEMMA4, OX_SCHEMA_TOOL_CALLS,
                                OX_SCHEMA_TOOL_CALLS | OX_SCHEMA_AFTER_NAME | OX_SCHEMA_PARALLEL};
    ox_err err = {0};
    char *gbnf = NULL;
    size_t n = 0;
    int rc = ox_json_schema_grammar((const char *)data + 1, size - 1, modes[data[0] & 3], &gbnf, &n, &err);
    if (rc) {
        fuzz_expect_error(rc, &err);
        fuzz_assert(gbnf == NULL, "no grammar with an error");
        return 0;
    }
    fuzz_assert(gbnf && n == strlen(gbnf) && n <= OX_SCHEMA_MAX_OUTPUT, "a grammar within the limit");
    ox_grammar *g = ox_grammar_new(schema_vocab, gbnf, n, NULL, 0, &err);
    if (!g) fuzz_assert(err.code == OX_E_FORMAT && strstr(err.msg, "left"), "the compiler takes the grammar");
    ox_grammar_free(g);
    free(gbnf);
    return 0;
}
