/* test_grammar.c — the GBNF grammar engine (decode/grammar.h): parse errors, sentences accepted
 * and refused, repetition bounds, control tokens matched only as tokens, stop tokens only where
 * the text is complete, code points split across byte tokens, and the vocabulary mask equal
 * at every step to a brute-force check of every token through ox_grammar_accept. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/grammar.h"
#include "text/tokenizer.h"

#define SP "\xE2\x96\x81"

/* control tokens, then the byte tokens, then text tokens */
static const char *controls[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<|\"|>", "<tool_call|>", "<turn|>"};
enum { N_CTL = 7, EOS = 1, QUOTE_TOK = 4, CALL_END = 5, TURN_END = 6, BYTE0 = N_CTL };
static const char *texts[] = {"a", "b", "c", "ab", "abc", "ba", "{", "}", "\"", ":", ",", "{\"", "\":", "true", "false",
                              "null", "1", "12", "-", ".", "0", "x", "y", "z", "<", "|", ">", "<|", "\xC3\xA9" /* é */,
                              "\xC3\xA9t\xC3\xA9", SP, SP "a", "\\", "n", "[", "]", "e", "E", "+"};
#define N_TEXT ((int)(sizeof texts / sizeof *texts))
#define N_VOCAB (BYTE0 + 256 + N_TEXT)

static void json_str(char **p, const char *s) {
    *(*p)++ = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') *(*p)++ = '\\';
        *(*p)++ = *s;
    }
    *(*p)++ = '"';
}

static ox_tokenizer *make_tokenizer(void) {
    char *js = malloc(1 << 16), *p = js;
    p += sprintf(p, "{\"added_tokens\":[");
    for (int i = 0; i < N_CTL; i++) {
        p += sprintf(p, "%s{\"id\":%d,\"content\":", i ? "," : "", i);
        json_str(&p, controls[i]);
        p += sprintf(p, ",\"special\":true}");
    }
    p += sprintf(p, "],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" SP "\"},"
                    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,\"vocab\":{");
    for (int i = 0; i < N_CTL; i++) {
        json_str(&p, controls[i]);
        p += sprintf(p, ":%d,", i);
    }
    for (int b = 0; b < 256; b++) p += sprintf(p, "\"<0x%02X>\":%d,", b, BYTE0 + b);
    for (int i = 0; i < N_TEXT; i++) {
        json_str(&p, texts[i]);
        p += sprintf(p, ":%d%s", BYTE0 + 256 + i, i + 1 < N_TEXT ? "," : "");
    }
    p += sprintf(p, "},\"merges\":[]}}");
    ox_err err = {0};
    ox_tokenizer *t = ox_tokenizer_from_json_text(js, (size_t)(p - js), "grammar-test.json", &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    free(js);
    return t;
}

static int text_id(const char *s) {
    for (int i = 0; i < N_TEXT; i++)
        if (!strcmp(texts[i], s)) return BYTE0 + 256 + i;
    return -1;
}

static ox_grammar *compile(const ox_grammar_vocab *v, const char *src) {
    static const int32_t stops[] = {EOS, TURN_END};
    ox_err err = {0};
    ox_grammar *g = ox_grammar_new(v, src, strlen(src), stops, 2, &err);
    CHECK_MSG(g != NULL, "%s: %s", src, err.msg);
    return g;
}

static int accepts(const ox_grammar_vocab *v, const char *src, const char *text, int *complete) {
    ox_grammar *g = compile(v, src);
    if (!g) return 0;
    ox_err err = {0};
    int ok = ox_grammar_accept_text(g, text, strlen(text), &err) == 0;
    if (complete) *complete = ox_grammar_complete(g);
    ox_grammar_free(g);
    return ok;
}

/* the text is a whole sentence of the grammar */
static int sentence(const ox_grammar_vocab *v, const char *src, const char *text) {
    int complete = 0;
    return accepts(v, src, text, &complete) && complete;
}

static void test_parse_errors(const ox_grammar_vocab *v) {
    static const struct { const char *src, *what; } bad[] = {
        {"rule ::= \"a\"", "no root rule"},
        {"root ::= missing", "rule missing is used but not defined"},
        {"root ::= root \"a\" | \"b\"", "rule root is left-recursive"},
        {"root ::= x \"a\"\nx ::= \"\" | root", "left-recursive"},
        {"root ::= \"a", "unterminated string literal"},
        {"root ::= [a-", "unterminated character class"},
        {"root ::= \"\\q\"", "unknown escape \\q"},
        {"root ::= *", "has nothing to repeat"},
        {"root ::= \"a\"{3,2}", "the maximum is below the minimum"},
        {"root ::= \"a\"{5000}", "a repetition count above"},
        {"root ::= (\"a\"", "')' expected"},
        {"root ::= \"a\"\nroot ::= \"b\"", "rule root is defined twice"},
        {"root \"a\"", "'::=' expected"},
        {"root ::= [z-a]", "is empty"},
        {"root ::= \"a\" x ::= \"b\"", "a newline is needed before the next rule"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ox_err err = {0};
        ox_grammar *g = ox_grammar_new(v, bad[i].src, strlen(bad[i].src), NULL, 0, &err);
        CHECK_MSG(g == NULL, "accepted: %s", bad[i].src);
        ox_grammar_free(g);
        CHECK_MSG(err.code == OX_E_FORMAT, "%s: code %d: %s", bad[i].src, err.code, err.msg);
        CHECK_STR_CONTAINS(err.msg, "grammar");
        CHECK_STR_CONTAINS(err.msg, bad[i].what);
    }
    ox_err err = {0};
    const char *multi = "root ::= \"a\"\n\nx ::= \"b\" |\n  \"c\" @";
    ox_grammar *g = ox_grammar_new(v, multi, strlen(multi), NULL, 0, &err);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(err.msg, "line 4 col 7: unexpected '@'"); /* line and column in the message */
}

static void test_sentences(const ox_grammar_vocab *v) {
    const char *g1 = "root ::= \"a\" (\"b\" | \"c\")* \"x\"?   # a comment\n";
    CHECK(sentence(v, g1, "a"));
    CHECK(sentence(v, g1, "abcbx"));
    CHECK(!sentence(v, g1, "ab" "xx"));
    CHECK(!accepts(v, g1, "b", NULL));
    int complete = 1;
    CHECK(accepts(v, "root ::= \"abc\"", "ab", &complete) && !complete); /* a prefix: open, not complete */
    const char *rep = "root ::= \"a\"{2,3} \"b\"{2} \"c\"{1,}";
    CHECK(sentence(v, rep, "aabbc"));
    CHECK(sentence(v, rep, "aaabbccc"));
    CHECK(!sentence(v, rep, "abbc"));
    CHECK(!sentence(v, rep, "aaaabbc"));
    CHECK(!sentence(v, rep, "aabbbc"));
    CHECK(!sentence(v, rep, "aabb"));
    const char *cls = "root ::= [a-c0-9]+ [^a-z] . \"\\x41\\u00e9\"";
    CHECK(sentence(v, cls, "a9c1-zA\xC3\xA9"));
    CHECK(!sentence(v, cls, "a9cqzA\xC3\xA9"));
    /* multi-line alternatives inside a group, rules in any order */
    const char *json = "root ::= obj\nobj ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\n"
                       "pair ::= str ws \":\" ws val ws\nval ::= str | num | obj | (\"true\"\n  | \"false\")\n"
                       "str ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\nnum ::= \"-\"? [0-9]+\nws ::= [ ]?\n";
    CHECK(sentence(v, json, "{\"a\": 12, \"b\": {\"c\": true}}"));
    CHECK(!sentence(v, json, "{\"a\": 12,}"));
    /* ambiguity: both parses stay open */
    CHECK(sentence(v, "root ::= \"a\" \"b\"? | \"ab\" \"c\"", "abc"));
    CHECK(sentence(v, "root ::= \"a\" \"b\"? | \"ab\" \"c\"", "ab"));
    /* rules reaching one another along 2^48 paths: each stack is expanded once per step (this
     * walked every path before: a fuzzer timeout) */
    char dag[2048];
    int n = snprintf(dag, sizeof dag, "root ::= r0 \"b\"\n");
    for (int i = 0; i < 48; i++) n += snprintf(dag + n, sizeof dag - (size_t)n, "r%d ::= r%d | r%d\n", i, i + 1, i + 1);
    snprintf(dag + n, sizeof dag - (size_t)n, "r48 ::= \"a\"+\n");
    CHECK(sentence(v, dag, "aab"));
    CHECK(!sentence(v, dag, "b"));
}

static void test_tokens(const ox_grammar_vocab *v) {
    ox_err err = {0};
    /* a literal holding a control token's text matches that token, and text cannot spell it */
    ox_grammar *g = compile(v, "root ::= \"say:<|\\\"|>\" [a-z]* \"<|\\\"|><tool_call|>\"");
    if (!g) return;
    CHECK(ox_grammar_accept_text(g, "say:", 4, &err) == 0);
    ox_grammar *spelled = ox_grammar_clone(g, &err);
    CHECK(ox_grammar_accept_text(spelled, "<|\"|>", 5, &err) == OX_E_RANGE);
    ox_grammar_free(spelled);
    CHECK(ox_grammar_accept(g, EOS, &err) == OX_E_RANGE); /* a stop before the text is complete */
    CHECK(ox_grammar_accept(g, QUOTE_TOK, &err) == 0);
    CHECK(ox_grammar_accept(g, text_id("ab"), &err) == 0);
    CHECK(ox_grammar_accept(g, CALL_END, &err) == OX_E_RANGE); /* the closing quote comes first */
    CHECK(ox_grammar_accept(g, QUOTE_TOK, &err) == 0);
    CHECK(!ox_grammar_complete(g));
    CHECK(ox_grammar_accept(g, CALL_END, &err) == 0);
    CHECK(ox_grammar_complete(g) && ox_grammar_finished(g));
    CHECK(ox_grammar_accept(g, TURN_END, &err) == 0); /* stops where complete */
    CHECK(ox_grammar_accept(g, text_id("a"), &err) == OX_E_RANGE);
    CHECK(ox_grammar_reset(g, &err) == 0 && !ox_grammar_complete(g));
    ox_grammar_free(g);

    /* é as two byte tokens: the first one leaves a code point open */
    g = compile(v, "root ::= [\\u00e0-\\u00ff] \"t\"");
    CHECK(ox_grammar_accept(g, BYTE0 + 0xC3, &err) == 0);
    CHECK(ox_grammar_accept(g, BYTE0 + 0xA9, &err) == 0);
    CHECK(ox_grammar_accept(g, text_id("\xC3\xA9"), &err) == OX_E_RANGE); /* one code point only */
    CHECK(ox_grammar_accept(g, BYTE0 + 't', &err) == 0 && ox_grammar_complete(g));
    ox_grammar_free(g);
    g = compile(v, "root ::= [a-z]");
    CHECK(ox_grammar_accept(g, BYTE0 + 0xC3, &err) == OX_E_RANGE); /* no code point from C3 is in a-z */
    CHECK(ox_grammar_accept(g, BYTE0 + 0xE0, &err) == OX_E_RANGE); /* E0 starts U+0800 and up */
    CHECK(ox_grammar_accept(g, BYTE0 + 0xC1, &err) == OX_E_RANGE); /* never a UTF-8 lead */
    ox_grammar_free(g);
    g = compile(v, "root ::= [\\u0800-\\u0fff]");
    CHECK(ox_grammar_accept(g, BYTE0 + 0xE0, &err) == 0);
    CHECK(ox_grammar_accept(g, BYTE0 + 0x80, &err) == OX_E_RANGE); /* E0 80 xx is an overlong form */
    ox_grammar_free(g);
}

/* For each step: the mask equals, token by token, what ox_grammar_accept says on a clone. */
static void mask_vs_accept(const ox_grammar_vocab *v, const char *src, unsigned seed, int steps) {
    ox_grammar *g = compile(v, src);
    if (!g) return;
    float logits[N_VOCAB];
    int mismatches = 0;
    for (int step = 0; step < steps; step++) {
        ox_err err = {0};
        for (int i = 0; i < N_VOCAB; i++) logits[i] = 0;
        int rc = ox_grammar_mask(g, logits, N_VOCAB, &err);
        if (rc) {
            CHECK_MSG(rc == 0, "%s step %d: %s", src, step, err.msg);
            break;
        }
        int allowed[N_VOCAB], n_allowed = 0;
        for (int i = 0; i < N_VOCAB; i++) {
            ox_grammar *c = ox_grammar_clone(g, &err);
            int ok = ox_grammar_accept(c, i, &err) == 0;
            ox_grammar_free(c);
            if (ok != (logits[i] == 0)) {
                if (mismatches++ < 5) fprintf(stderr, "%s step %d token %d: accept %d, mask %d\n", src, step, i, ok, logits[i] == 0);
            }
            if (ok) allowed[n_allowed++] = i;
        }
        if (!n_allowed) break;
        seed = seed * 1103515245u + 12345u;
        int pick = allowed[(seed >> 8) % (unsigned)n_allowed];
        if (pick == EOS || pick == TURN_END) break;
        CHECK(ox_grammar_accept(g, pick, &err) == 0);
    }
    CHECK_MSG(mismatches == 0, "%s: %d mask/accept mismatches", src, mismatches);
    ox_grammar_free(g);
}

static void test_mask(const ox_grammar_vocab *v) {
    static const char *grammars[] = {
        "root ::= \"a\" (\"b\" | \"c\")* \"x\"?",
        "root ::= \"{\" ws (pair (ws \",\" ws pair){0,3})? ws \"}\"\npair ::= \"\\\"\" [a-z]{1,4} \"\\\"\" ws \":\" ws val\n"
        "val ::= \"true\" | \"false\" | \"null\" | \"-\"? [0-9]{1,3}\nws ::= | \" \"",
        "root ::= ([^\\x00-\\x1f<] | \"<\" [^|]){0,6} \"<|\\\"|>\" \"<tool_call|>\"",
        "root ::= [\\u00e0-\\u00ff]+ [a-z]?",
        "root ::= \"a\"* \"ab\" | \"abc\" [a-c]*",
    };
    for (size_t k = 0; k < sizeof grammars / sizeof *grammars; k++)
        for (unsigned seed = 1; seed <= 4; seed++) mask_vs_accept(v, grammars[k], seed * 7919u + (unsigned)k, 12);
}

static void test_errors_usable(const ox_grammar_vocab *v) {
    ox_grammar *g = compile(v, "root ::= \"ab\"");
    ox_err err = {0};
    float logits[N_VOCAB];
    CHECK(ox_grammar_mask(g, logits, N_VOCAB - 1, &err) == OX_E_RANGE); /* wrong vocabulary size */
    CHECK(ox_grammar_accept(g, N_VOCAB + 5, &err) == OX_E_RANGE);
    CHECK(ox_grammar_accept(g, text_id("b"), &err) == OX_E_RANGE); /* refused: the state stays */
    CHECK(ox_grammar_accept(g, text_id("ab"), &err) == 0 && ox_grammar_complete(g));
    ox_grammar_free(g);
}

int main(void) {
    ox_tokenizer *t = make_tokenizer();
    if (!t) return check_summary("test_grammar");
    ox_err err = {0};
    ox_grammar_vocab *v = ox_grammar_vocab_new(t, &err);
    CHECK_MSG(v != NULL, "%s", err.msg);
    if (v) {
        fprintf(stderr, "-- test_parse_errors\n"), test_parse_errors(v);
        fprintf(stderr, "-- test_sentences\n"), test_sentences(v);
        fprintf(stderr, "-- test_tokens\n"), test_tokens(v);
        fprintf(stderr, "-- test_mask\n"), test_mask(v);
        fprintf(stderr, "-- test_errors_usable\n"), test_errors_usable(v);
    }
    ox_grammar_vocab_free(v);
    ox_tokenizer_free(t);
    return check_summary("test_grammar");
}
