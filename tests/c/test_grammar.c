/* test_grammar.c — the GBNF grammar engine (decode/grammar.h): parse errors, sentences accepted
 * and refused, repetition bounds, control tokens matched only as tokens, stop tokens only where
 * the text is complete, code points split across byte tokens, and the vocabulary mask equal
 * at every step to a brute-force check of every token through ox_grammar_accept; compiling
 * linear in the grammar's size (operation counts over 1x..64x hostile inputs), the abort hook
 * stopping compiles and masks, and masks that never lead into a dead end. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/grammar.h"
#include "decode/grammar_impl.h"
#include "text/tokenizer.h"

#define SP "\xE2\x96\x81"

/* control tokens, then the byte tokens, then text tokens */
static const char *controls[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<|\"|>", "<tool_call|>", "<turn|>"};
enum { N_CTL = 7, EOS = 1, QUOTE_TOK = 4, CALL_END = 5, TURN_END = 6, BYTE0 = N_CTL };
static const char *texts[] = {"a",
                              "b",
                              "c",
                              "ab",
                              "abc",
                              "ba",
                              "{",
                              "}",
                              "\"",
                              ":",
                              ",",
                              "{\"",
                              "\":",
                              "true",
                              "false",
                              "null",
                              "1",
                              "12",
                              "-",
                              ".",
                              "0",
                              "x",
                              "y",
                              "z",
                              "<",
                              "|",
                              ">",
                              "<|",
                              "\xC3\xA9" /* é */,
                              "\xC3\xA9t\xC3\xA9",
                              SP,
                              SP "a",
                              "\\",
                              "n",
                              "[",
                              "]",
                              "e",
                              "E",
                              "+"};
#define N_TEXT  ((int)(sizeof texts / sizeof *texts))
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
    static const struct {
        const char *src, *what;
    } bad[] = {
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
    CHECK(!sentence(v, g1,
                    "ab"
                    "xx"));
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
                if (mismatches++ < 5)
                    fprintf(stderr, "%s step %d token %d: accept %d, mask %d\n", src, step, i, ok, logits[i] == 0);
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
        "root ::= \"{\" ws (pair (ws \",\" ws pair){0,3})? ws \"}\"\npair ::= \"\\\"\" [a-z]{1,4} \"\\\"\" ws \":\" ws "
        "val\n"
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

/* the operations ox_grules_parse takes for text (0 if it is refused) */
static uint64_t compile_work(const char *text, size_t len) {
    ox_grules r;
    ox_err err = {0};
    int rc = ox_grules_parse(&r, text, len, NULL, NULL, NULL, NULL, &err);
    CHECK_MSG(rc == 0, "%.40s...: %s", text, err.msg);
    uint64_t w = r.work;
    ox_grules_free(&r);
    return rc ? 0 : w;
}

/* Hostile shapes at 1x..64x: the work grows linearly, and stays within a small constant per
 * compiled element. Each was quadratic before (a walk back to the alternative's start per
 * element; a linear scan per rule name; a pass over every rule per step of the nullable fixed
 * point). */
static void test_compile_linear(void) {
    enum { FAMILIES = 4 };
    size_t cap = 4u << 20;
    char *buf = malloc(cap);
    for (int f = 0; f < FAMILIES; f++) {
        uint64_t first = 0;
        for (int scale = 1; scale <= 64; scale *= 2) {
            char *p = buf;
            size_t elements; /* what the text compiles to, about */
            if (f == 0) {    /* one long alternative: [a]{1024} x 2*scale */
                p += sprintf(p, "root ::=");
                for (int i = 0; i < 2 * scale; i++) p += sprintf(p, " [a]{1024}");
                elements = 2048u * (size_t)scale;
            } else if (f == 1) { /* many rules, each referenced by name: a chain */
                p += sprintf(p, "root ::= r0\n");
                for (int i = 0; i < 300 * scale; i++) p += sprintf(p, "r%d ::= \"a\" r%d\n", i, i + 1);
                p += sprintf(p, "r%d ::= \"a\"\n", 300 * scale);
                elements = 900u * (size_t)scale;
            } else if (f == 2) { /* nullable only after one rule per pass, in text order */
                p += sprintf(p, "root ::= r0 \"a\"\n");
                for (int i = 0; i < 300 * scale; i++) p += sprintf(p, "r%d ::= r%d | \"b\"\n", i, i + 1);
                p += sprintf(p, "r%d ::= \n", 300 * scale);
                elements = 1200u * (size_t)scale;
            } else { /* leftmost positions behind many nullable rules */
                p += sprintf(p, "n ::= | \"b\"\nroot ::=");
                for (int i = 0; i < 500 * scale; i++) p += sprintf(p, " n");
                p += sprintf(p, " \"a\"\n");
                elements = 500u * (size_t)scale;
            }
            uint64_t w = compile_work(buf, (size_t)(p - buf));
            if (scale == 1) first = w;
            CHECK_MSG(w <= 16 * elements, "family %d x%d: %llu operations for ~%zu elements", f, scale,
                      (unsigned long long)w, elements);
            CHECK_MSG(w <= (uint64_t)scale * first * 5 / 4, "family %d x%d: %llu operations, x1 took %llu", f, scale,
                      (unsigned long long)w, (unsigned long long)first);
        }
    }
    free(buf);
}

typedef struct abort_after {
    int polls, at; /* stop at poll number `at` (0: never) */
} abort_after;

static int poll_abort(void *ud) {
    abort_after *a = ud;
    return a->at && ++a->polls >= a->at;
}

/* The hook stops a compile and a mask with ABORTED; the grammar is still usable after. */
static void test_abort(ox_grammar_vocab *v) {
    abort_after a = {0, 2};
    ox_grammar_vocab_set_abort(v, poll_abort, &a);
    char *big = malloc(1 << 16), *p = big;
    p += sprintf(p, "root ::=");
    for (int i = 0; i < 256; i++) p += sprintf(p, " [a]{1024}");
    ox_err err = {0};
    CHECK(ox_grammar_new(v, big, (size_t)(p - big), NULL, 0, &err) == NULL && err.code == OX_E_ABORTED);
    CHECK_STR_CONTAINS(err.msg, "aborted");
    CHECK(a.polls == 2); /* it stopped at the poll that said so */
    /* a mask: abort at its first poll, then ask again without */
    a = (abort_after){0, 0};
    ox_grammar *g = compile(v, "root ::= [a-z]* \".\"");
    float logits[N_VOCAB], want[N_VOCAB];
    a.at = 1;
    for (int i = 0; i < N_VOCAB; i++) logits[i] = 0;
    CHECK(g && ox_grammar_mask(g, logits, N_VOCAB, &err) == OX_E_ABORTED);
    a.at = 0;
    for (int i = 0; i < N_VOCAB; i++) logits[i] = want[i] = 0;
    CHECK(g && ox_grammar_mask(g, logits, N_VOCAB, &err) == 0);
    ox_grammar_vocab_set_abort(v, NULL, NULL);
    ox_grammar *fresh = compile(v, "root ::= [a-z]* \".\"");
    CHECK(fresh && ox_grammar_mask(fresh, want, N_VOCAB, &err) == 0);
    CHECK(!memcmp(logits, want, sizeof want));
    CHECK(ox_grammar_work(g) > 0);
    ox_grammar_free(fresh);
    ox_grammar_free(g);
    free(big);
}

/* A token is allowed only if something can follow it: a lead byte into the surrogates (ED A0..
 * ED BF) starts no code point, and with no stop token a complete text that cannot go on is a
 * dead end. */
static void test_no_dead_ends(const ox_grammar_vocab *v) {
    ox_err err = {0};
    float logits[N_VOCAB];
    ox_grammar *g = compile(v, "root ::= [^\"]* \"\\\"\"");
    CHECK(g && ox_grammar_accept(g, BYTE0 + 0xED, &err) == 0);
    for (int i = 0; i < N_VOCAB; i++) logits[i] = 0;
    CHECK(ox_grammar_mask(g, logits, N_VOCAB, &err) == 0);
    CHECK(logits[BYTE0 + 0x9F] == 0 && logits[BYTE0 + 0xA0] < 0 && logits[BYTE0 + 0xBF] < 0);
    CHECK(ox_grammar_accept(g, BYTE0 + 0xA0, &err) == OX_E_RANGE);
    ox_grammar_free(g);
    /* "a" completes the text, but without a stop token nothing can end or follow it ("b" can
     * go on forever) */
    const char *src = "root ::= \"a\" | \"b\" \"c\" \"a\"*";
    ox_grammar *none = ox_grammar_new(v, src, strlen(src), NULL, 0, &err);
    int32_t stops[1] = {EOS};
    ox_grammar *with = ox_grammar_new(v, src, strlen(src), stops, 1, &err);
    CHECK(none && with);
    if (none && with) {
        for (int i = 0; i < N_VOCAB; i++) logits[i] = 0;
        CHECK(ox_grammar_mask(none, logits, N_VOCAB, &err) == 0);
        CHECK(logits[text_id("a")] < 0 && logits[text_id("b")] == 0);
        for (int i = 0; i < N_VOCAB; i++) logits[i] = 0;
        CHECK(ox_grammar_mask(with, logits, N_VOCAB, &err) == 0);
        CHECK(logits[text_id("a")] == 0 && logits[text_id("b")] == 0);
    }
    ox_grammar_free(none);
    ox_grammar_free(with);
    /* every state a dead end (no stop token ends the text), ~180 of them one or two tokens away:
     * the look-ahead stops after a bounded number of walks of the vocabulary (past it, states
     * count as live: the mask may allow tokens) */
    char all_dead[1024], *q = all_dead;
    q += sprintf(q, "root ::= \"!\" \"!\"?");
    for (char ch = '#'; ch <= '~'; ch++)
        if (ch != '\\') q += sprintf(q, " | \"%c\" \"%c\"?", ch, ch);
    ox_grammar *d = ox_grammar_new(v, all_dead, (size_t)(q - all_dead), NULL, 0, &err);
    uint64_t before = d ? ox_grammar_work(d) : 0;
    int rc = d ? ox_grammar_mask(d, logits, N_VOCAB, &err) : -1;
    CHECK(rc == 0 || rc == OX_E_RANGE);
    uint64_t spent = d ? ox_grammar_work(d) - before : 0;
    CHECK_MSG(spent < 256 * N_VOCAB, "%llu operations for one mask", (unsigned long long)spent);
    ox_grammar_free(d);
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
        fprintf(stderr, "-- test_compile_linear\n"), test_compile_linear();
        fprintf(stderr, "-- test_abort\n"), test_abort(v);
        fprintf(stderr, "-- test_no_dead_ends\n"), test_no_dead_ends(v);
    }
    ox_grammar_vocab_free(v);
    ox_tokenizer_free(t);
    return check_summary("test_grammar");
}
