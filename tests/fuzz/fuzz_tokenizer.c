#define _GNU_SOURCE /* memmem */
/* fuzz_tokenizer.c — encode and decode arbitrary bytes with a small built-in BPE vocabulary
 * (specials, a user-defined token, all 256 byte tokens, a few letters and merges).
 * Input: byte 0 = encode flags, the rest = text. Checks: ids in range, the count
 * convention (> cap means "call again"), per-token bytes concatenate to the detokenized
 * text, and decode(encode(text)) == text when the text holds no "▁" and no control tokens
 * are matched (every byte has a byte token, so nothing is lost). */
#include "fuzz.h"
#include "formats/json.h"
#include "text/tokenizer.h"

static ox_tokenizer *tok;

static ox_tokenizer *vocab(void) {
    static const char *const specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>", "<unused0>"};
    static const char *const pieces[] = {
        "\xE2\x96\x81",    "a",  "e",    "h",    "t", "o", "\n", "\xC3\xA9", "\xE2\x96\x81t", "\xE2\x96\x81th", "he",
        "\xE2\x96\x81the", "aa", "aaaa", "\n\n", "to"};
    static const char *const merges[][2] = {
        {"\xE2\x96\x81", "t"}, {"\xE2\x96\x81t", "h"}, {"h", "e"}, {"\xE2\x96\x81th", "e"}, {"a", "a"},
        {"aa", "aa"},          {"\n", "\n"},           {"t", "o"}};
    ox_strbuf b = {0};
    int id = 0;
    ox_sb_printf(&b, "{\"added_tokens\": [");
    for (int i = 0; i < 7; i++) {
        ox_sb_printf(&b, "%s{\"id\": %d, \"content\": ", i ? "," : "", i);
        ox_sb_json_str(&b, specials[i], strlen(specials[i]));
        ox_sb_printf(&b, ", \"special\": %s}", i < 6 ? "true" : "false");
    }
    ox_sb_printf(
        &b,
        "], \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"},"
        " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
        "\"MergedWithPrevious\"},"
        " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true, \"fuse_unk\": true,"
        " \"vocab\": {");
    for (; id < 7; id++) {
        ox_sb_json_str(&b, specials[id], strlen(specials[id]));
        ox_sb_printf(&b, ": %d, ", id);
    }
    for (int c = 0; c < 256; c++, id++) ox_sb_printf(&b, "\"<0x%02X>\": %d, ", c, id);
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++, id++) {
        ox_sb_json_str(&b, pieces[i], strlen(pieces[i]));
        ox_sb_printf(&b, ": %d%s", id, i + 1 < sizeof pieces / sizeof pieces[0] ? ", " : "}, \"merges\": [");
    }
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++) {
        ox_sb_printf(&b, "%s[", i ? ", " : "");
        ox_sb_json_str(&b, merges[i][0], strlen(merges[i][0]));
        ox_sb_printf(&b, ", ");
        ox_sb_json_str(&b, merges[i][1], strlen(merges[i][1]));
        ox_sb_printf(&b, "]");
    }
    ox_sb_printf(&b, "]}}");
    ox_err err = {0};
    ox_tokenizer *t = b.oom ? NULL : ox_tokenizer_from_json_text(b.s, b.len, "fuzz-tokenizer.json", &err);
    if (!t) fprintf(stderr, "fuzz_tokenizer: built-in vocabulary rejected: %s\n", err.msg), abort();
    ox_sb_free(&b);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!tok) tok = vocab();
    if (size < 1) return 0;
    int flags = data[0] & (OX_TOK_ADD_BOS | OX_TOK_SPECIAL);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    ox_err err = {0};
    int n = ox_tokenize(tok, text, len, flags, NULL, 0, &err);
    if (n < 0) return fuzz_expect_error(n, &err), 0;
    int32_t *ids = malloc(sizeof *ids * (size_t)(n + 1));
    int cap = n / 2; /* too small first: must report the full count and not write past cap */
    int n1 = ox_tokenize(tok, text, len, flags, ids, cap, &err);
    fuzz_assert(n1 == n, "count with a short buffer");
    int n2 = ox_tokenize(tok, text, len, flags, ids, n, &err);
    fuzz_assert(n2 == n, "count is deterministic");
    int V = ox_tokenizer_vocab(tok);
    for (int i = 0; i < n; i++) fuzz_assert(ids[i] >= 0 && ids[i] < V, "id in range");
    if (n && (flags & OX_TOK_ADD_BOS)) fuzz_assert(ids[0] == ox_tokenizer_bos(tok), "BOS first");
    for (int show = 0; show <= OX_TOK_SHOW_SPECIAL; show++) {
        int64_t m = ox_detokenize(tok, ids, n, show, NULL, 0, &err);
        fuzz_assert(m >= 0, "detokenize length");
        char *out = malloc((size_t)m + 1), *cat = malloc((size_t)m + 1);
        fuzz_assert(ox_detokenize(tok, ids, n, show, out, (size_t)m, &err) == m, "detokenize is deterministic");
        size_t k = 0;
        for (int i = 0; i < n; i++) {
            int l = ox_token_bytes(tok, ids[i], show, NULL, 0, &err);
            fuzz_assert(l >= 0 && k + (size_t)l <= (size_t)m, "token bytes within the total");
            fuzz_assert(ox_token_bytes(tok, ids[i], show, cat + k, l, &err) == l, "token bytes deterministic");
            k += (size_t)l;
        }
        fuzz_assert(k == (size_t)m && memcmp(out, cat, k) == 0, "per-token bytes concatenate to the text");
        if (!show && !(flags & OX_TOK_SPECIAL) && !memmem(text, len, "\xE2\x96\x81", 3))
            fuzz_assert((size_t)m == len && memcmp(out, text, len) == 0, "decode(encode(text)) == text");
        free(out), free(cat);
    }
    fuzz_assert(ox_token_bytes(tok, V, 0, NULL, 0, &err) == OX_E_RANGE, "id past the vocabulary is RANGE");
    fuzz_assert(ox_token_bytes(tok, -1, 0, NULL, 0, &err) == OX_E_RANGE, "negative id is RANGE");
    free(ids);
    return 0;
}
