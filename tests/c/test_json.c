/* test_json.c — the strict JSON parser: values, escapes, numbers, every error class with
 * its position, limits, and a tokenizer.json-sized document. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/json.h"

static ox_json *parse(const char *s, ox_err *e) { return ox_json_parse(s, strlen(s), "t.json", e); }

static void test_values(void) {
    ox_err e = {0};
    ox_json *r = parse(" {\"a\": 1, \"b\": [true, false, null, \"x\"], \"c\": {\"d\": -2.5}, \"e\": \"\"}\n", &e);
    CHECK(r != NULL);
    CHECK(ox_json_type(r) == OX_JSON_OBJECT);
    CHECK(ox_json_len(r) == 4);
    int64_t i = 0;
    CHECK(ox_json_int(ox_json_get(r, "a"), &i) && i == 1);
    const ox_json *b = ox_json_get(r, "b");
    CHECK(ox_json_type(b) == OX_JSON_ARRAY && ox_json_len(b) == 4);
    CHECK(ox_json_bool(ox_json_at(b, 0), 0) == 1);
    CHECK(ox_json_bool(ox_json_at(b, 1), 1) == 0);
    CHECK(ox_json_type(ox_json_at(b, 2)) == OX_JSON_NULL);
    CHECK(strcmp(ox_json_str(ox_json_at(b, 3)), "x") == 0);
    CHECK(ox_json_at(b, 4) == NULL);
    CHECK(ox_json_num(ox_json_get(ox_json_get(r, "c"), "d"), 0) == -2.5);
    CHECK(!ox_json_int(ox_json_get(ox_json_get(r, "c"), "d"), &i));
    CHECK(ox_json_str(ox_json_get(r, "e")) && ox_json_len(ox_json_get(r, "e")) == 0);
    /* members in file order, with keys */
    CHECK(strcmp(ox_json_key(ox_json_at(r, 0)), "a") == 0);
    CHECK(strcmp(ox_json_key(ox_json_at(r, 3)), "e") == 0);
    CHECK(ox_json_get(r, "zz") == NULL);
    /* NULL-safe chains */
    CHECK(ox_json_get(ox_json_get(r, "nope"), "x") == NULL);
    CHECK(ox_json_type(NULL) == OX_JSON_NONE);
    CHECK(ox_json_num(NULL, 7) == 7);
    ox_json_free(r);

    r = parse("{\"k\": 1, \"k\": 2}", &e); /* last duplicate wins, as JSON.parse */
    CHECK(ox_json_int(ox_json_get(r, "k"), &i) && i == 2);
    ox_json_free(r);
    r = parse("[]", &e);
    CHECK(r && ox_json_type(r) == OX_JSON_ARRAY && ox_json_len(r) == 0);
    ox_json_free(r);
    r = parse("\xEF\xBB\xBF 42", &e); /* BOM skipped */
    CHECK(r && ox_json_int(r, &i) && i == 42);
    ox_json_free(r);
}

static void test_strings(void) {
    ox_err e = {0};
    ox_json *r = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\", \"x\\u0000y\", "
                       "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]",
                       &e);
    CHECK(r != NULL);
    CHECK(strcmp(ox_json_str(ox_json_at(r, 0)), "a\"b\\c/d\b\f\n\r\t") == 0);
    CHECK(strcmp(ox_json_str(ox_json_at(r, 1)), "\xc3\xa9\xe2\x82\xac") == 0);
    CHECK(strcmp(ox_json_str(ox_json_at(r, 2)), "\xf0\x9f\x98\x80") == 0); /* U+1F600 from a surrogate pair */
    CHECK(ox_json_len(ox_json_at(r, 3)) == 3 && memcmp(ox_json_str(ox_json_at(r, 3)), "x\0y", 3) == 0);
    CHECK(strcmp(ox_json_str(ox_json_at(r, 4)), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") == 0);
    ox_json_free(r);
    /* the string builder escapes what the parser unescapes */
    const char raw[] = "q\"b\\s\n\t\x01\x1f end \xc3\xa9";
    ox_strbuf sb = {0};
    ox_sb_json_str(&sb, raw, sizeof raw - 1);
    CHECK(!sb.oom);
    r = ox_json_parse(sb.s, sb.len, "sb", &e);
    CHECK(r && ox_json_len(r) == sizeof raw - 1 && memcmp(ox_json_str(r), raw, sizeof raw - 1) == 0);
    ox_json_free(r);
    ox_sb_free(&sb);
}

static void test_numbers(void) {
    ox_err e = {0};
    ox_json *r = parse("[0, -0, 9223372036854775807, -9223372036854775808, 9223372036854775808, 1e3, 1.5e2, "
                       "2.5, 1E-2, 12345678901234567890123, 0.1]",
                       &e);
    CHECK(r != NULL);
    int64_t i;
    CHECK(ox_json_int(ox_json_at(r, 0), &i) && i == 0);
    CHECK(ox_json_int(ox_json_at(r, 1), &i) && i == 0);
    CHECK(ox_json_int(ox_json_at(r, 2), &i) && i == INT64_MAX);
    CHECK(ox_json_int(ox_json_at(r, 3), &i) && i == INT64_MIN);
    CHECK(!ox_json_int(ox_json_at(r, 4), &i)); /* 2^63 does not fit */
    CHECK(ox_json_num(ox_json_at(r, 4), 0) == 9223372036854775808.0);
    CHECK(ox_json_int(ox_json_at(r, 5), &i) && i == 1000);
    CHECK(ox_json_int(ox_json_at(r, 6), &i) && i == 150);
    CHECK(!ox_json_int(ox_json_at(r, 7), &i) && ox_json_num(ox_json_at(r, 7), 0) == 2.5);
    CHECK(ox_json_num(ox_json_at(r, 8), 0) == 0.01);
    CHECK(!ox_json_int(ox_json_at(r, 9), &i) && ox_json_num(ox_json_at(r, 9), 0) == 1.2345678901234567e22);
    CHECK(ox_json_num(ox_json_at(r, 10), 0) == 0.1);
    ox_json_free(r);
}

static void expect_error(const char *text, const char *where, const char *what) {
    ox_err e = {0};
    ox_json *r = ox_json_parse(text, strlen(text), "bad.json", &e);
    CHECK_MSG(r == NULL, "parsed: %s", text);
    ox_json_free(r);
    CHECK(e.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, where);
    CHECK_STR_CONTAINS(e.msg, what);
}

static void test_errors(void) {
    expect_error("", "bad.json:1:1:", "empty");
    expect_error("   \n ", "bad.json:2:2:", "empty");
    expect_error("{\"a\": 1,}", "bad.json:1:9:", "key");
    expect_error("[1, 2,]", "bad.json:1:7:", "unexpected character");
    expect_error("{\n  \"a\": tru\n}", "bad.json:2:8:", "invalid literal");
    expect_error("[01]", "bad.json:1:2:", "leading zero");
    expect_error("[1.]", "bad.json:1:2:", "digit expected");
    expect_error("[1e]", "bad.json:1:2:", "exponent");
    expect_error("[-]", "bad.json:1:2:", "bad number");
    expect_error("[+1]", "bad.json:1:2:", "unexpected character");
    expect_error("[1e400]", "bad.json:1:2:", "out of range");
    expect_error("[NaN]", "bad.json:1:2:", "unexpected character");
    expect_error("\"abc", "bad.json:1:1:", "unterminated");
    expect_error("\"a\\qb\"", "bad.json:1:3:", "bad escape");
    expect_error("\"\\u12G4\"", "bad.json:1:2:", "\\u escape");
    expect_error("\"\\ud800\"", "bad.json:1:2:", "without a low surrogate");
    expect_error("\"\\ud800\\u0041\"", "bad.json:1:2:", "without a low surrogate");
    expect_error("\"\\udc00\"", "bad.json:1:2:", "lone low surrogate");
    expect_error("\"a\tb\"", "bad.json:1:3:", "control character");
    expect_error("\"\xc3\x28\"", "bad.json:1:2:", "UTF-8");
    expect_error("\"\xed\xa0\x80\"", "bad.json:1:2:", "UTF-8"); /* encoded surrogate */
    expect_error("\"\xc0\xaf\"", "bad.json:1:2:", "UTF-8");     /* overlong */
    expect_error("{\"a\" 1}", "bad.json:1:6:", "':' expected");
    expect_error("{\"a\": 1 \"b\": 2}", "bad.json:1:9:", "',' or '}' expected");
    expect_error("[1] x", "bad.json:1:5:", "trailing");
    expect_error("// c\n1", "bad.json:1:1:", "unexpected character");
    expect_error("{1: 2}", "bad.json:1:2:", "key");
    expect_error("[1, 2", "bad.json:1:6:", "unexpected end");
    /* depth limit */
    char deep[OX_JSON_MAX_DEPTH + 3];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    expect_error(deep, "bad.json:1:257:", "nesting deeper than 256");
    /* exactly at the limit parses */
    char ok[2 * OX_JSON_MAX_DEPTH + 1];
    memset(ok, '[', OX_JSON_MAX_DEPTH);
    memset(ok + OX_JSON_MAX_DEPTH, ']', OX_JSON_MAX_DEPTH);
    ok[2 * OX_JSON_MAX_DEPTH] = 0;
    ox_err e = {0};
    ox_json *r = ox_json_parse(ok, strlen(ok), "ok", &e);
    CHECK(r != NULL);
    ox_json_free(r);
}

/* A document shaped like a 262k-vocab tokenizer.json with 500k merges (~25 MB). */
static void test_big(void) {
    enum { V = 262144, M = 500000 };
    ox_strbuf sb = {0};
    ox_sb_printf(&sb, "{\"version\":\"1.0\",\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (int i = 0; i < V; i++) ox_sb_printf(&sb, "%s\"tok_\\u00e9%d\":%d", i ? "," : "", i, i);
    ox_sb_printf(&sb, "},\"merges\":[");
    for (int i = 0; i < M; i++) ox_sb_printf(&sb, "%s[\"a%d\",\"b%d\"]", i ? "," : "", i, i % 977);
    ox_sb_printf(&sb, "]}}");
    CHECK(!sb.oom);
    ox_err e = {0};
    ox_json *r = ox_json_parse(sb.s, sb.len, "tokenizer.json", &e);
    CHECK_MSG(r != NULL, "%s", e.msg);
    const ox_json *vocab = ox_json_get(ox_json_get(r, "model"), "vocab");
    const ox_json *merges = ox_json_get(ox_json_get(r, "model"), "merges");
    CHECK(ox_json_len(vocab) == V);
    CHECK(ox_json_len(merges) == M);
    int bad = 0;
    char want[64];
    for (int i = 0; i < V; i += 997) {
        const ox_json *m = ox_json_at(vocab, (size_t)i);
        int64_t id;
        snprintf(want, sizeof want, "tok_\xc3\xa9%d", i);
        if (strcmp(ox_json_key(m), want) != 0 || !ox_json_int(m, &id) || id != i) bad++;
    }
    CHECK(bad == 0);
    const ox_json *last = ox_json_at(merges, M - 1);
    CHECK(strcmp(ox_json_str(ox_json_at(last, 0)), "a499999") == 0);
    CHECK(strcmp(ox_json_str(ox_json_at(last, 1)), "b752") == 0); /* 499999 % 977 */
    ox_json_free(r);
    ox_sb_free(&sb);
}

int main(void) {
    RUN(test_values);
    RUN(test_strings);
    RUN(test_numbers);
    RUN(test_errors);
    RUN(test_big);
    return check_summary("json");
}
