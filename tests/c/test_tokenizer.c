/* test_tokenizer.c — a small hand-built vocabulary with merges, written as a GGUF (model
 * "gemma4": merge ranks; model "llama": SentencePiece scores) and as a tokenizer.json; all
 * three must give the hand-derived ids. Also: byte fallback, specials, newline runs, invalid
 * UTF-8, decoding, round trips over random bytes, and the errors for unsupported files. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"
#include "text/tokenizer.h"
#include "writers/gguf_write.h"

#define SP "\xE2\x96\x81" /* ▁ */

/* ids 0..6 fixed, 7..262 <0x00>..<0xFF>, then the normal pieces below */
static const char *head[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "\n", "\n\n"};
static const int head_type[] = {OX_TOKEN_CONTROL, OX_TOKEN_CONTROL,      OX_TOKEN_CONTROL,     OX_TOKEN_UNKNOWN,
                                OX_TOKEN_CONTROL, OX_TOKEN_USER_DEFINED, OX_TOKEN_USER_DEFINED};
#define BYTE0 7
#define NORM0 (BYTE0 + 256)
static const char *norm[] = {
    SP,         "a",   "b",    "c",     "h",  "e",  "l",    "o",     "w",    "r",  "d",      "\xC3\xA9" /* é */,
    "ab",       "abc", SP "a", SP "ab", "he", "ll", "hell", "hello", SP "w", "or", SP "wor", "ld",
    SP "world", "bc",  SP SP,  "lo",    "aa"};
#define N_NORM  (int)(sizeof norm / sizeof norm[0])
#define N_VOCAB (NORM0 + N_NORM)
/* merges in rank order */
static const char *merges[][2] = {{"a", "b"},       {"ab", "c"},   {SP, "a"}, {SP "a", "b"}, {"h", "e"},     {"l", "l"},
                                  {"he", "ll"},     {"hell", "o"}, {SP, "w"}, {"o", "r"},    {SP "w", "or"}, {"l", "d"},
                                  {SP "wor", "ld"}, {"b", "c"},    {SP, SP},  {"l", "o"},    {"a", "a"}};
#define N_MERGES (int)(sizeof merges / sizeof merges[0])

static char byte_names[256][8];
static const char *piece(int id) {
    if (id < BYTE0) return head[id];
    if (id < NORM0) return byte_names[id - BYTE0];
    return norm[id - NORM0];
}
static int id_of(const char *p) {
    for (int i = 0; i < N_VOCAB; i++)
        if (strcmp(piece(i), p) == 0) return i;
    return -1;
}
/* score of a merged piece: minus the rank of the merge making it (SentencePiece then picks
 * the same pairs as BPE does with these merges) */
static float score_of(int id) {
    char buf[64];
    for (int r = 0; r < N_MERGES; r++) {
        snprintf(buf, sizeof buf, "%s%s", merges[r][0], merges[r][1]);
        if (strcmp(buf, piece(id)) == 0) return -(float)r - 1;
    }
    return -100;
}

static char tmpdir[256];

static ox_tokenizer *open_path(const char *path) {
    ox_err err = {0};
    int f = ox_host_open_path(path, &err);
    CHECK_MSG(f >= 0, "%s", err.msg);
    if (f < 0) return NULL;
    ox_tokenizer *t = ox_tokenizer_open(f, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    ox_host_close(f);
    return t;
}

static ox_tokenizer *make_gguf(const char *model, int with_merges, int prefix_key, int prefix) {
    const char *toks[N_VOCAB];
    float scores[N_VOCAB];
    int32_t types[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) {
        toks[i] = piece(i);
        scores[i] = score_of(i);
        types[i] = i < BYTE0 ? head_type[i] : i < NORM0 ? OX_TOKEN_BYTE : OX_TOKEN_NORMAL;
    }
    char mbuf[N_MERGES][64];
    const char *ms[N_MERGES];
    for (int r = 0; r < N_MERGES; r++) snprintf(mbuf[r], 64, "%s %s", merges[r][0], merges[r][1]), ms[r] = mbuf[r];
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_gguf_w_str(w, "general.architecture", "gemma4");
    ox_gguf_w_str(w, "tokenizer.ggml.model", model);
    ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, N_VOCAB);
    ox_gguf_w_arr(w, "tokenizer.ggml.scores", OX_GGUF_F32, scores, N_VOCAB);
    ox_gguf_w_arr(w, "tokenizer.ggml.token_type", OX_GGUF_I32, types, N_VOCAB);
    if (with_merges) ox_gguf_w_arr_str(w, "tokenizer.ggml.merges", ms, N_MERGES);
    ox_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 2);
    ox_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 1);
    ox_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 3);
    if (prefix_key) ox_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", prefix);
    char path[300];
    snprintf(path, sizeof path, "%s/%s.gguf", tmpdir, model);
    ox_err err = {0};
    int rc = ox_gguf_w_write(w, path, NULL, NULL, &err);
    CHECK_MSG(rc == 0, "%s", err.msg);
    ox_gguf_writer_free(w);
    return rc ? NULL : open_path(path);
}

/* tokenizer.json text; merges alternate between the "a b" and ["a", "b"] forms */
static char *make_json(const char *model_type) {
    ox_strbuf b = {0};
    ox_sb_printf(&b, "{\"version\":\"1.0\",\"added_tokens\":[");
    for (int i = 0; i < BYTE0; i++) {
        ox_sb_printf(&b, "%s{\"id\":%d,\"content\":", i ? "," : "", i);
        ox_sb_json_str(&b, head[i], strlen(head[i]));
        ox_sb_printf(&b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":%s}",
                     head_type[i] == OX_TOKEN_USER_DEFINED ? "false" : "true");
    }
    ox_sb_printf(
        &b,
        "],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" SP "\"},"
        "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" "
        "\"},\"behavior\":\"MergedWithPrevious\",\"invert\":false},"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<bos>\",\"type_"
        "id\":0}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}]},\"decoder\":null,"
        "\"model\":{\"type\":\"%s\",\"dropout\":null,\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":null,"
        "\"end_of_word_suffix\":null,\"fuse_unk\":true,\"byte_fallback\":true,\"ignore_merges\":false,\"vocab\":{",
        model_type);
    for (int i = 0; i < N_VOCAB; i++) {
        if (i) ox_sb_append(&b, ",", 1);
        ox_sb_json_str(&b, piece(i), strlen(piece(i)));
        ox_sb_printf(&b, ":%d", i);
    }
    ox_sb_printf(&b, "},\"merges\":[");
    for (int r = 0; r < N_MERGES; r++) {
        char m[64];
        if (r) ox_sb_append(&b, ",", 1);
        if (r % 2) {
            snprintf(m, sizeof m, "%s %s", merges[r][0], merges[r][1]);
            ox_sb_json_str(&b, m, strlen(m));
        } else {
            ox_sb_append(&b, "[", 1);
            ox_sb_json_str(&b, merges[r][0], strlen(merges[r][0]));
            ox_sb_append(&b, ",", 1);
            ox_sb_json_str(&b, merges[r][1], strlen(merges[r][1]));
            ox_sb_append(&b, "]", 1);
        }
    }
    ox_sb_printf(&b, "]}}");
    CHECK(!b.oom);
    return b.s;
}

static int encode(const ox_tokenizer *t, const char *s, size_t n, int flags, int32_t *out, int cap) {
    ox_err err = {0};
    int k = ox_tokenize(t, s, n, flags, out, cap, &err);
    CHECK_MSG(k >= 0 && k <= cap, "k = %d: %s", k, err.msg);
    return k;
}

/* expect: space-separated pieces, "#N" for an id */
static void expect(const ox_tokenizer *t, const char *name, const char *text, size_t n, int flags, const char *want) {
    int32_t ids[256], exp[256];
    int k = encode(t, text, n, flags, ids, 256), m = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", want);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char p[64];
        /* "_" in expectations stands for ▁ */
        size_t q = 0;
        for (const char *c = tok; *c && q + 4 < sizeof p; c++) {
            if (*c == '_') memcpy(p + q, SP, 3), q += 3;
            else p[q++] = *c;
        }
        p[q] = 0;
        exp[m++] = p[0] == '#' ? atoi(p + 1) : id_of(p);
    }
    int same = k == m;
    for (int i = 0; same && i < k; i++) same = ids[i] == exp[i];
    char got[1024] = "";
    for (int i = 0, o = 0; i < k && o < 1000; i++) o += snprintf(got + o, sizeof got - o, "%d ", ids[i]);
    CHECK_MSG(same, "%s: \"%s\" -> %s(want \"%s\")", name, text, got, want);
}

static void encode_cases(const ox_tokenizer *t, const char *name, int spm) {
    if (!t) return;
    const int S = OX_TOK_SPECIAL;
    expect(t, name, "abc", 3, S, "abc");
    /* rank order, not left to right: "a b" (0) then "ab c" (1) beat "▁ a" (2) */
    expect(t, name, " abc", 4, S, "_ abc");
    /* BPE has no merge "▁ ab"; SentencePiece joins any adjacent pair that is a piece */
    expect(t, name, " ab", 3, S, spm ? "_ab" : "_ ab");
    expect(t, name, "hello world", 11, S, "hello _world");
    /* equal ranks: leftmost first */
    expect(t, name, "aaa", 3, S, "aa a");
    expect(t, name, "aaaaa", 5, S, "aa aa a");
    /* no dummy prefix; spaces become ▁ and merge */
    expect(t, name, "a", 1, S, "a");
    expect(t, name, "  a", 3, S, "_ _a");
    expect(t, name, "   ", 3, S, "__ _");
    /* byte fallback: 'z' and 'ж' (D0 B6) are not pieces; 'é' is */
    expect(t, name, "z", 1, S, "#129");
    expect(t, name,
           "\xD0\xB6"
           "\xC3\xA9",
           4, S, "#215 #189 \xC3\xA9");
    /* invalid UTF-8: each bad byte is its own character, which falls back to its byte */
    expect(t, name,
           "a\x80"
           "b\xFF",
           4, S, "a #135 b #262");
    expect(t, name, "\xC3", 1, S, "#202");
    expect(t, name, "\xE2\x96", 2, S, "#233 #157");          /* a truncated ▁ */
    expect(t, name, "\xED\xA0\x80", 3, S, "#244 #167 #135"); /* a UTF-16 surrogate */
    expect(t, name, "ab\0c", 4, S, "ab #7 c");
    /* specials (longest match first), user-defined tokens without the flag, BOS */
    expect(t, name, "<start_of_turn>hello<eos>", 25, S, "#4 hello #1");
    expect(t, name, "<bos>ab", 7, S | OX_TOK_ADD_BOS, "#2 #2 ab");
    expect(t, name, "ab", 2, OX_TOK_ADD_BOS, "#2 ab");
    expect(t, name, "<eos>", 5, 0, "#67 e o #122 #69");
    /* newline runs: "\n\n" is longer than "\n"; they split the text like specials do */
    expect(t, name, "a\n\n\nb", 5, 0, "a #6 #5 b");
    expect(t, name, "\n\n\n\n", 4, 0, "#6 #6");
    expect(t, name, "ab\n ab", 6, 0, spm ? "ab #5 _ab" : "ab #5 _ ab");
    expect(t, name, "", 0, S, "");
    expect(t, name, "", 0, S | OX_TOK_ADD_BOS, "#2");
}

static void decode_cases(const ox_tokenizer *t) {
    if (!t) return;
    char buf[256];
    ox_err err = {0};
    int32_t ids[] = {2, id_of("hello"), id_of(SP "world"), 215, 189, 1};
    int64_t n = ox_detokenize(t, ids, 6, 0, buf, sizeof buf, &err);
    CHECK(n == 13 && memcmp(buf, "hello world\xD0\xB6", 13) == 0);
    n = ox_detokenize(t, ids, 6, OX_TOK_SHOW_SPECIAL, buf, sizeof buf, &err);
    CHECK(n == 23 && memcmp(buf, "<bos>hello world\xD0\xB6<eos>", 23) == 0);
    /* too small a buffer: the full length comes back, only cap bytes are written */
    memset(buf, 'x', sizeof buf);
    CHECK(ox_token_bytes(t, id_of(SP "world"), 0, buf, 3, &err) == 6 && memcmp(buf, " wox", 4) == 0);
    CHECK(ox_token_bytes(t, N_VOCAB, 0, buf, 3, &err) == OX_E_RANGE);
    CHECK(ox_token_bytes(t, -1, 0, buf, 3, &err) == OX_E_RANGE);
    CHECK(ox_token_bytes(t, 5, 0, buf, 3, &err) == 1 && buf[0] == '\n');
    CHECK(ox_tokenizer_find(t, "<start_of_turn>") == 4 && ox_tokenizer_find(t, "nope") == -1);
    CHECK(ox_tokenizer_vocab(t) == N_VOCAB && ox_tokenizer_bos(t) == 2 && ox_tokenizer_eos(t) == 1 &&
          ox_tokenizer_unk(t) == 3);
    CHECK(ox_token_type(t, 2) == OX_TOKEN_CONTROL && ox_token_type(t, 5) == OX_TOKEN_USER_DEFINED &&
          ox_token_type(t, 10) == OX_TOKEN_BYTE && ox_token_type(t, NORM0) == OX_TOKEN_NORMAL);
}

/* decode(encode(x)) == x for arbitrary bytes (specials shown; x free of ▁) */
static void roundtrip(const ox_tokenizer *t, const char *name) {
    if (!t) return;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    int ok = 1;
    static int32_t ids[4096];
    static char text[1024], back[8192];
    const char *alpha[] = {"a",     "b",        "c",        " ",    "\n",  "<bos>", "<start_of_turn>",
                           "hello", "\xC3\xA9", "\xD0\xB6", "\xFF", "\x80"};
    for (int iter = 0; iter < 2000 && ok; iter++) {
        size_t n = 0;
        int len = (int)((s >> 33) % 60);
        for (int i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            if ((s >> 60) < 8) text[n++] = (char)(s >> 40); /* raw bytes, any value */
            else {
                const char *a = alpha[(s >> 40) % (sizeof alpha / sizeof alpha[0])];
                memcpy(text + n, a, strlen(a)), n += strlen(a);
            }
        }
        if (memmem(text, n, SP, 3)) continue;
        ox_err err = {0};
        int k = ox_tokenize(t, text, n, OX_TOK_SPECIAL, ids, 4096, &err);
        int64_t m = k < 0 ? -1 : ox_detokenize(t, ids, k, OX_TOK_SHOW_SPECIAL, back, sizeof back, &err);
        ok = m == (int64_t)n && memcmp(back, text, n) == 0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
    }
    CHECK_MSG(ok, "%s: decode(encode(x)) != x", name);
}

static void test_gguf_bpe(void) {
    ox_tokenizer *t = make_gguf("gemma4", 1, 0, 0);
    encode_cases(t, "gguf gemma4", 0);
    decode_cases(t);
    roundtrip(t, "gguf gemma4");
    ox_tokenizer_free(t);
}

static void test_gguf_spm(void) {
    ox_tokenizer *t = make_gguf("llama", 0, 1, 0);
    encode_cases(t, "gguf llama (scores)", 1);
    roundtrip(t, "gguf llama");
    ox_tokenizer_free(t);
    /* llama's default dummy prefix: "▁" before the text and after every matched token */
    t = make_gguf("llama", 0, 0, 0);
    if (t) {
        expect(t, "llama+prefix", "ab", 2, OX_TOK_SPECIAL, "_ab");
        expect(t, "llama+prefix", "hello<eos>ab", 12, OX_TOK_SPECIAL, "_ hello #1 _ab");
    }
    ox_tokenizer_free(t);
}

static void test_json(void) {
    char *js = make_json("BPE");
    ox_err err = {0};
    ox_tokenizer *t = ox_tokenizer_from_json_text(js, strlen(js), "tokenizer.json", &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    encode_cases(t, "tokenizer.json", 0);
    decode_cases(t);
    roundtrip(t, "tokenizer.json");
    ox_tokenizer_free(t);
    free(js);
}

static void test_errors(void) {
    ox_err err = {0};
    char *js = make_json("Unigram");
    CHECK(ox_tokenizer_from_json_text(js, strlen(js), "uni.json", &err) == NULL);
    CHECK(err.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "uni.json");
    CHECK_STR_CONTAINS(err.msg, "Unigram");
    free(js);
#define NZ "{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" SP "\"},"
    const char *bad[] = {
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}",
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"ab\"]}}",
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\"]]}}",
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"added_tokens\":[{\"id\":99999999,"
           "\"content\":\"x\"}]}",
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":[],\"merges\":[]}}",
        NZ "\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}",
        "[1,2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (ox_err){0};
        ox_tokenizer *t = ox_tokenizer_from_json_text(bad[i], strlen(bad[i]), "bad.json", &err);
        CHECK_MSG(t == NULL && err.code == OX_E_FORMAT, "bad[%zu]: code %d %s", i, err.code, err.msg);
        ox_tokenizer_free(t);
    }
    /* BPE without the ▁ normalization (e.g. byte-level GPT-2 style) is not this tokenizer */
    const char *bl = "{\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                     "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}";
    err = (ox_err){0};
    CHECK(ox_tokenizer_from_json_text(bl, strlen(bl), "bl.json", &err) == NULL && err.code == OX_E_UNSUPPORTED);
    ox_gguf_writer *w = ox_gguf_writer_new();
    const char *toks[] = {"a"};
    ox_gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 1);
    char path[300];
    snprintf(path, sizeof path, "%s/gpt2.gguf", tmpdir);
    CHECK(ox_gguf_w_write(w, path, NULL, NULL, &err) == 0);
    ox_gguf_writer_free(w);
    int f = ox_host_open_path(path, &err);
    err = (ox_err){0};
    CHECK(ox_tokenizer_open(f, &err) == NULL && err.code == OX_E_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.msg, "gpt2");
    ox_host_close(f);
}

int main(void) {
    for (int b = 0; b < 256; b++) snprintf(byte_names[b], sizeof byte_names[b], "<0x%02X>", b);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oxtok-test-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
    if (system(cmd) != 0) return 1;
    RUN(test_gguf_bpe);
    RUN(test_gguf_spm);
    RUN(test_json);
    RUN(test_errors);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_tokenizer");
}
