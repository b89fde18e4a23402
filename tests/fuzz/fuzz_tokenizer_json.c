/* fuzz_tokenizer_json.c — tokenizer.json parsing (model, added tokens, normalizer and
 * pre-tokenizer checks) on arbitrary bytes; an accepted vocabulary then encodes and decodes
 * a fixed text and every id. */
#include "fuzz.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ox_err err = {0};
    ox_tokenizer *t = ox_tokenizer_from_json_text((const char *)data, size, "tokenizer.json", &err);
    if (!t) return fuzz_expect_error(err.code, &err), 0;
    static const char text[] = "<bos><|turn>user\nthe t\xC3\xA9xt \xF0\x9F\x98\x80\xFF<unused0>\n\n";
    int32_t ids[256];
    int n = ox_tokenize(t, text, sizeof text - 1, OX_TOK_ADD_BOS | OX_TOK_SPECIAL, ids, 256, &err);
    if (n < 0) fuzz_expect_error(n, &err);
    int V = ox_tokenizer_vocab(t);
    for (int i = 0; i < n && i < 256; i++) fuzz_assert(ids[i] >= 0 && ids[i] < V, "id in range");
    char buf[512];
    if (n > 0)
        fuzz_assert(ox_detokenize(t, ids, n < 256 ? n : 256, OX_TOK_SHOW_SPECIAL, buf, sizeof buf, &err) >= 0,
                    "decode");
    for (int id = 0; id < V && id < 4096; id++) {
        size_t len;
        const char *p = ox_token_piece(t, id, &len);
        fuzz_assert(ox_token_bytes(t, id, OX_TOK_SHOW_SPECIAL, buf, sizeof buf, &err) >= 0, "token bytes");
        if (p && len < 200) {
            char piece[256];
            memcpy(piece, p, len), piece[len] = 0;
            int f = ox_tokenizer_find(t, piece);
            fuzz_assert(f >= -1 && f < V, "find in range");
        }
    }
    ox_tokenizer_free(t);
    return 0;
}
