/* test_json_schema.c — JSON schema -> GBNF (decode/json_schema.h): every grammar compiles, accepts
 * documents valid under its schema and refuses invalid ones (through the grammar engine), in
 * both notations and for forced tool calls; the subset's UNSUPPORTED errors name the keyword;
 * the limits (maxLength, anyOf size, nesting, rules) are coded schema errors, never grammar
 * errors; $ref resolves only to real $defs entries; whitespace between tokens is bounded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/json_schema.h"
#include "formats/json.h"
#include "decode/grammar.h"
#include "text/tokenizer.h"

/* A vocabulary of the 256 byte tokens and Gemma 4's control tokens (the notation's delimiters). */
static const char *CONTROL[] = {"<eos>", "<|\"|>", "<|tool_call>", "<tool_call|>"};
enum { EOS, QUOTE, CALL_OPEN, CALL_CLOSE, N_CONTROL };
static ox_grammar_vocab *vocab;

static ox_grammar_vocab *make_vocab(void) {
    ox_strbuf sb = {0};
    ox_sb_printf(&sb, "{\"added_tokens\":[");
    for (int i = 0; i < N_CONTROL; i++) {
        ox_sb_printf(&sb, "%s{\"id\":%d,\"special\":true,\"content\":", i ? "," : "", i);
        ox_sb_json_str(&sb, CONTROL[i], strlen(CONTROL[i]));
        ox_sb_printf(&sb, "}");
    }
    ox_sb_printf(&sb, "],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"},"
                      "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"merges\":[],\"vocab\":{");
    for (int i = 0; i < N_CONTROL; i++) {
        ox_sb_json_str(&sb, CONTROL[i], strlen(CONTROL[i]));
        ox_sb_printf(&sb, ":%d,", i);
    }
    for (int c = 0; c < 256; c++) ox_sb_printf(&sb, "%s\"<0x%02X>\":%d", c ? "," : "", c, N_CONTROL + c);
    ox_sb_printf(&sb, "}}}");
    ox_err err = {0};
    ox_tokenizer *t = ox_tokenizer_from_json_text(sb.s, sb.len, "schema-test.json", &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    ox_grammar_vocab *v = t ? ox_grammar_vocab_new(t, &err) : NULL;
    ox_tokenizer_free(t);
    ox_sb_free(&sb);
    return v;
}

static char *convert(const char *schema, int mode, ox_err *err) {
    char *g = NULL;
    ox_json_schema_grammar(schema, strlen(schema), mode, &g, NULL, err);
    return g;
}

/* 1 when the grammar takes the whole document; <|"|>, <|tool_call> and <tool_call|> in doc are
 * fed as their control tokens */
static int takes(const char *gbnf, const char *doc) {
    static const int32_t stops[] = {EOS};
    ox_err err = {0};
    ox_grammar *g = ox_grammar_new(vocab, gbnf, strlen(gbnf), stops, 1, &err);
    CHECK_MSG(g != NULL, "%s\n%s", err.msg, gbnf);
    if (!g) return 0;
    int ok = 1;
    for (const char *p = doc; *p && ok;) {
        int ctl = -1;
        for (int i = 1; i < N_CONTROL && ctl < 0; i++)
            if (!strncmp(p, CONTROL[i], strlen(CONTROL[i]))) ctl = i;
        if (ctl >= 0) {
            ok = ox_grammar_accept(g, ctl, &err) == 0;
            p += strlen(CONTROL[ctl]);
        } else {
            ok = ox_grammar_accept_text(g, p, 1, &err) == 0;
            p++;
        }
    }
    ok = ok && ox_grammar_complete(g);
    ox_grammar_free(g);
    return ok;
}

typedef struct {
    const char *doc;
    int valid;
} doc_case;

static void check_schema(const char *schema, int mode, const doc_case *docs) {
    ox_err err = {0};
    char *g = convert(schema, mode, &err);
    CHECK_MSG(g != NULL, "%s: %s", schema, err.msg);
    if (!g) return;
    for (const doc_case *d = docs; d->doc; d++)
        CHECK_MSG(takes(g, d->doc) == d->valid, "%s\n%s: expected %s\n%s", schema, d->doc,
                  d->valid ? "accepted" : "refused", g);
    free(g);
}

static void check_refused(const char *schema, int mode, int code, const char *what) {
    ox_err err = {0};
    char *g = convert(schema, mode, &err);
    CHECK_MSG(g == NULL, "%s: accepted\n%s", schema, g ? g : "");
    free(g);
    CHECK_ERR(err, code, "JSON schema", what);
}

static void test_json_text(void) {
    /* the schemas of tests/node/openai.test.mjs, with documents in and out */
    check_schema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},\"age\":{"
                 "\"type\":\"integer\"}},"
                 "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
                 OX_SCHEMA_JSON,
                 (doc_case[]){{"{\"name\":\"Ann\",\"age\":3}", 1},
                              {" {\n  \"name\": \"\\u00e9\\\"\", \"age\": -12 }", 1},
                              {"{\"name\":\"Anna-Maria\",\"age\":3}", 0},
                              {"{\"age\":3,\"name\":\"a\"}", 0},
                              {"{\"name\":\"a\"}", 0},
                              {"{\"name\":\"a\",\"age\":1.5}", 0},
                              {"{\"name\":\"a\",\"age\":01}", 0},
                              {"{\"name\":\"a\",\"age\":1,\"x\":1}", 0},
                              {NULL, 0}});
    check_schema(
        "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":"
        "{\"enum\":[\"a\",\"b\",\"c\"]},\"maxItems\":3}},\"required\":[\"ok\"]}",
        OX_SCHEMA_JSON,
        (doc_case[]){{"{\"ok\":true}", 1},
                     {"{\"ok\":false,\"tags\":[]}", 1},
                     {"{\"ok\":true,\"tags\":[\"a\",\"c\",\"a\"]}", 1},
                     {"{\"ok\":true,\"tags\":[\"a\",\"b\",\"c\",\"a\"]}", 0},
                     {"{\"ok\":true,\"tags\":[\"d\"]}", 0},
                     {"{\"tags\":[]}", 0},
                     {"{}", 0},
                     {NULL, 0}});
    check_schema(
        "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":4}", OX_SCHEMA_JSON,
        (doc_case[]){{"[1]", 1}, {"[1.5e3, -0.25, 7, 0]", 1}, {"[]", 0}, {"[1,2,3,4,5]", 0}, {"[\"1\"]", 0}, {NULL, 0}});
    check_schema("{\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\",\"format\":\"date\"},\"id\":{"
                 "\"type\":\"string\","
                 "\"format\":\"uuid\"},\"v\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"integer\"}]}},\"required\":["
                 "\"when\",\"id\",\"v\"]}",
                 OX_SCHEMA_JSON,
                 (doc_case[]){{"{\"when\":\"2024-02-29\",\"id\":\"123e4567-e89b-12d3-a456-426614174000\",\"v\":null}", 1},
                              {"{\"when\":\"2024-13-01\",\"id\":\"123e4567-e89b-12d3-a456-426614174000\",\"v\":1}", 0},
                              {"{\"when\":\"2024-01-01\",\"id\":\"123e4567\",\"v\":1}", 0},
                              {NULL, 0}});
    check_schema(
        "{\"type\":\"object\",\"properties\":{\"point\":{\"$ref\":\"#/$defs/"
        "pt\"},\"more\":{\"type\":\"array\",\"items\":"
        "{\"$ref\":\"#/$defs/"
        "pt\"},\"maxItems\":2}},\"required\":[\"point\",\"more\"],\"$defs\":{\"pt\":{\"type\":\"object\","
        "\"properties\":{\"x\":{\"type\":\"integer\"},\"y\":{\"type\":\"integer\"}},\"required\":[\"x\",\"y\"]}}}",
        OX_SCHEMA_JSON,
        (doc_case[]){{"{\"point\":{\"x\":1,\"y\":2},\"more\":[{\"x\":0,\"y\":0}]}", 1},
                     {"{\"point\":{\"x\":1},\"more\":[]}", 0},
                     {NULL, 0}});
    /* recursion through $ref, percent-decoded names, const / enum / nullable / allOf / prefixItems */
    check_schema("{\"$defs\":{\"a "
                 "b\":{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/"
                 "a%20b\"}}}}},"
                 "\"$ref\":\"#/$defs/a%20b\"}",
                 OX_SCHEMA_JSON,
                 (doc_case[]){{"{}", 1}, {"{\"kids\":[{\"kids\":[{}]},{}]}", 1}, {"{\"kids\":[1]}", 0}, {NULL, 0}});
    check_schema("{\"anyOf\":[{\"const\":{\"a\":[1,\"x\\n\"]}},{\"enum\":[null,2.5,\"q\\\"\"]},{\"type\":\"string\","
                 "\"nullable\":true,"
                 "\"allOf\":[{\"minLength\":2}]}]}",
                 OX_SCHEMA_JSON,
                 (doc_case[]){{"{\"a\":[1,\"x\\n\"]}", 1},
                              {"2.5", 1},
                              {"\"q\\\"\"", 1},
                              {"null", 1},
                              {"\"ab\"", 1},
                              {"\"a\"", 0},
                              {"{\"a\":[1,\"x\"]}", 0},
                              {NULL, 0}});
    /* const / enum numbers spelled as JSON.stringify spells them */
    check_schema("{\"enum\":[-340,0.1,1e21,1e-7,123456789012345678901,1.5e-6,-0.0,2.5e300]}", OX_SCHEMA_JSON,
                 (doc_case[]){{"-340", 1},
                              {"0.1", 1},
                              {"1e+21", 1},
                              {"1e-7", 1},
                              {"123456789012345680000", 1},
                              {"0.0000015", 1},
                              {"0", 1},
                              {"2.5e+300", 1},
                              {"-3.4e+02", 0},
                              {"-0", 0},
                              {NULL, 0}});
    check_schema("{\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"boolean\"}],\"items\":false}", OX_SCHEMA_JSON,
                 (doc_case[]){{"[1, true]", 1}, {"[1]", 0}, {"[1,true,2]", 0}, {NULL, 0}});
    /* optional keys in order, extra keys after them where additionalProperties allows */
    check_schema("{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},\"additionalProperties\":"
                 "{\"type\":\"boolean\"}}",
                 OX_SCHEMA_JSON,
                 (doc_case[]){{"{}", 1},
                              {"{\"b\":1}", 1},
                              {"{\"a\":1,\"b\":2,\"z\":true}", 1},
                              {"{\"z\":true}", 1},
                              {"{\"b\":1,\"a\":2}", 0},
                              {"{\"z\":1}", 0},
                              {NULL, 0}});
    /* an extra key is never one of the named keys (its value would be checked against the
     * named schema), nor an escaped spelling of one */
    check_schema(
        "{\"properties\":{\"a\":{\"type\":\"boolean\"},\"ab\":{\"type\":\"null\"},\"\u00e9\":{\"type\":\"null\"}},"
        "\"additionalProperties\":{\"type\":\"integer\"}}",
        OX_SCHEMA_JSON,
        (doc_case[]){{"{\"a\":true,\"abc\":1,\"b\":2,\"\u00e9\u00e9\":3,\"A\":4}", 1},
                     {"{\"a\":true,\"a\":1}", 0},
                     {"{\"ab\":null,\"a\":1}", 0},
                     {"{\"ab\":1}", 0},
                     {"{\"\\u0061\":1}", 0},
                     {"{\"\u00e9\":1}", 0},
                     {"{\"x\":1,\"\u00e9\":1}", 0},
                     {NULL, 0}});
    check_schema(
        "{\"properties\":{\"a\":{\"type\":\"boolean\"}},\"additionalProperties\":{\"type\":\"integer\"}}",
        OX_SCHEMA_GEMMA4,
        (doc_case[]){{"{a:true,b:1,a1:2}", 1}, {"{b:1}", 1}, {"{a:true,a:1}", 0}, {"{a:1}", 0}, {"{1:1}", 0}, {NULL, 0}});
    /* {} / true: any value, two deep; date-time */
    check_schema("{\"title\":\"anything\"}", OX_SCHEMA_JSON,
                 (doc_case[]){{"{\"a\":[1,{\"b\":null}]}", 0}, {"{\"a\":[1,\"x\"]}", 1}, {"\"s\"", 1}, {NULL, 0}});
    check_schema("{\"type\":\"string\",\"format\":\"date-time\"}", OX_SCHEMA_JSON,
                 (doc_case[]){{"\"2024-01-02T03:04:05Z\"", 1}, {"\"2024-01-02 03:04:05\"", 0}, {NULL, 0}});
}

static void test_bounded_whitespace(void) {
    /* one space, or a newline and at most 20 blanks: a sampler cannot pad between tokens */
    char pad[64];
    const char *schema = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";
    snprintf(pad, sizeof pad, "[\n%.*s1]", 20, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t");
    check_schema(schema, OX_SCHEMA_JSON, (doc_case[]){{pad, 1}, {"[ 1 ]", 1}, {"[  1]", 0}, {"[\n\n1]", 0}, {NULL, 0}});
    snprintf(pad, sizeof pad, "[\n%.*s1]", 21, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t");
    check_schema(schema, OX_SCHEMA_JSON, (doc_case[]){{pad, 0}, {NULL, 0}});
}

static void test_gemma4(void) {
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":3}},\"c\":{\"const\":{\"b\":\"x\","
        "\"a\":1}}},"
        "\"required\":[\"city\"]}";
    check_schema(schema, OX_SCHEMA_GEMMA4,
                 (doc_case[]){{"{city:<|\"|>Paris \"x\" {}<|\"|>}", 1},
                              {"{city:<|\"|><|\"|>,n:3}", 1},
                              {"{city:<|\"|>a<|\"|>,tags:[<|\"|>abc<|\"|>,<|\"|><|\"|>]}", 1},
                              {"{city:<|\"|>a<|\"|>,c:{a:1,b:<|\"|>x<|\"|>}}", 1},
                              /* `<` anywhere but before `|`, at the end too: the close can follow */
                              {"{city:<|\"|>a<b<<c<|\"|>}", 1},
                              {"{city:<|\"|>a<<|\"|>}", 1},
                              {"{city:<|\"|><<<|\"|>}", 1},
                              {"{city:<|\"|>a<|b<|\"|>}", 0},
                              {"{city: <|\"|>a<|\"|>}", 0},
                              {"{\"city\":\"a\"}", 0},
                              {"{city:<|\"|>a<|\"|>,tags:[<|\"|>abcd<|\"|>]}", 0},
                              {NULL, 0}});
}

static void test_tool_calls(void) {
    const char *tools =
        "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":12},\"unit\":{\"type\":\"string\",\"enum\":[\"c\","
        "\"f\"]}},"
        "\"required\":[\"city\",\"unit\"],\"additionalProperties\":false}}},{\"type\":\"function\",\"function\":{"
        "\"name\":\"now\"}}]";
    check_schema(
        tools, OX_SCHEMA_TOOL_CALLS | OX_SCHEMA_PARALLEL,
        (doc_case[]){
            {"get_weather{city:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>", 1},
            {"now{}<tool_call|><|tool_call>call:get_weather{city:<|\"|>a<|\"|>,unit:<|\"|>f<|\"|>}<tool_call|>", 1},
            {"get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>", 0},
            {"other{}<tool_call|>", 0},
            {NULL, 0}});
    check_schema(
        tools, OX_SCHEMA_TOOL_CALLS | OX_SCHEMA_AFTER_NAME,
        (doc_case[]){{"{city:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>", 1},
                     {"{city:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|><|tool_call>call:now{}<tool_call|>", 0},
                     {NULL, 0}});
    /* each tool's $refs resolve in its own parameters */
    check_schema(
        "[{\"function\":{\"name\":\"a\",\"parameters\":{\"properties\":{\"x\":{\"$ref\":\"#/$defs/"
        "v\"}},\"$defs\":{\"v\":{\"type\":\"integer\"}}}}},"
        "{\"function\":{\"name\":\"b\",\"parameters\":{\"properties\":{\"x\":{\"$ref\":\"#/$defs/"
        "v\"}},\"$defs\":{\"v\":{\"type\":\"boolean\"}}}}}]",
        OX_SCHEMA_TOOL_CALLS,
        (doc_case[]){{"a{x:1}<tool_call|>", 1}, {"b{x:true}<tool_call|>", 1}, {"b{x:1}<tool_call|>", 0}, {NULL, 0}});
    check_refused("[{\"function\":{}}]", OX_SCHEMA_TOOL_CALLS, OX_E_UNSUPPORTED, "function.name");
    check_refused("[]", OX_SCHEMA_TOOL_CALLS, OX_E_UNSUPPORTED, "non-empty array");
}

/* outside the subset, and issue #33: a $ref names a real $defs entry or is refused; bad
 * percent-encoding is a coded error */
static const struct {
    const char *schema;
    int mode, code;
    const char *what;
} REFUSED[] = {
    {"{\"type\":\"string\",\"pattern\":\"a+\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "keyword \"pattern\""},
    {"{\"type\":\"integer\",\"minimum\":1}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "keyword \"minimum\""},
    {"{\"properties\":{\"a\":{\"multipleOf\":2}}}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED,
     "at /properties/a: keyword \"multipleOf\""},
    {"{\"allOf\":[{},{}]}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "allOf of more than one"},
    {"false", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "nothing is valid"},
    {"{\"type\":\"date\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "type \"date\""},
    {"{\"type\":\"string\",\"format\":\"email\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "format \"email\""},
    {"{\"properties\":{},\"required\":[\"a\"]}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "required \"a\""},
    {"{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED,
     "minLength 3 is above maxLength 2"},
    {"{\"enum\":[]}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "enum must be a non-empty array"},
    {"{\"anyOf\":{}}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "anyOf must be a non-empty array"},
    {"{\"type\":\"object\",\"type\":\"string\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "\"type\" given twice"},
    {"{\"$ref\":\"http://x/y\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "only #/$defs/"},
    {"{\"type\":", OX_SCHEMA_JSON, OX_E_FORMAT, "JSON schema"},
    {"{}", 7, OX_E_RANGE, "mode 7"},
    {"{\"$ref\":\"#/$defs/__proto__\",\"$defs\":{}}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "names no entry of $defs"},
    {"{\"$ref\":\"#/$defs/constructor\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "names no entry"},
    {"{\"$ref\":\"#/$defs/%E0\",\"$defs\":{\"a\":{}}}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "bad percent-encoding"},
    {"{\"$ref\":\"#/$defs/%zz\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "bad percent-encoding"},
    {"{\"$ref\":\"#/$defs/%\"}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "bad percent-encoding"},
    {"{\"$ref\":\"#/$defs/a%00\",\"$defs\":{\"a\":{}}}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "bad percent-encoding"},
};

static void test_refused(void) {
    for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
        check_refused(REFUSED[i].schema, REFUSED[i].mode, REFUSED[i].code, REFUSED[i].what);
}

static void test_refs(void) {
    /* a real entry named __proto__ is an entry like any other */
    check_schema("{\"$ref\":\"#/$defs/__proto__\",\"$defs\":{\"__proto__\":{\"type\":\"integer\"}}}", OX_SCHEMA_JSON,
                 (doc_case[]){{"12", 1}, {"\"x\"", 0}, {NULL, 0}});
}

/* issue #33: limits surface as schema errors naming the keyword and the limit */
static void test_limits(void) {
    check_refused("{\"type\":\"string\",\"maxLength\":1025}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED,
                  "maxLength 1025 is above 1024");
    check_refused("{\"type\":\"array\",\"minItems\":5000}", OX_SCHEMA_JSON, OX_E_UNSUPPORTED,
                  "minItems 5000 is above 1024");
    check_schema("{\"type\":\"string\",\"maxLength\":1024}", OX_SCHEMA_JSON, (doc_case[]){{"\"abc\"", 1}, {NULL, 0}});
    ox_strbuf sb = {0};
    ox_sb_printf(&sb, "{\"anyOf\":[");
    for (int i = 0; i < 1100; i++) ox_sb_printf(&sb, "%s{\"const\":%d}", i ? "," : "", i);
    ox_sb_printf(&sb, "]}");
    check_refused(sb.s, OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "anyOf of 1100 schemas (at most 1024)");
    sb.len = 0;
    /* 80 strings of up to 1000 characters: each bound is fine, together too many rules */
    ox_sb_printf(&sb, "{\"anyOf\":[");
    for (int i = 0; i < 80; i++) ox_sb_printf(&sb, "%s{\"type\":\"string\",\"maxLength\":%d}", i ? "," : "", 1000 - i);
    ox_sb_printf(&sb, "]}");
    check_refused(sb.s, OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "more than 16384 rules");
    check_refused(sb.s, OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "/anyOf/");
    sb.len = 0;
    for (int i = 0; i < 100; i++) ox_sb_printf(&sb, "{\"items\":");
    ox_sb_printf(&sb, "{}");
    for (int i = 0; i < 100; i++) ox_sb_printf(&sb, "}");
    check_refused(sb.s, OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "nested more than 64 deep");
    sb.len = 0;
    /* a chain of $refs is nesting too */
    ox_sb_printf(&sb, "{\"$ref\":\"#/$defs/d0\",\"$defs\":{");
    for (int i = 0; i < 200; i++) ox_sb_printf(&sb, "\"d%d\":{\"items\":{\"$ref\":\"#/$defs/d%d\"}},", i, i + 1);
    ox_sb_printf(&sb, "\"d200\":{}}}");
    check_refused(sb.s, OX_SCHEMA_JSON, OX_E_UNSUPPORTED, "nested more than 64 deep");
    sb.len = 0;
    /* a long const is fine up to the output limit */
    ox_sb_printf(&sb, "{\"const\":\"");
    for (int i = 0; i < 100000; i++) ox_sb_append(&sb, "ab", 2);
    ox_sb_printf(&sb, "\"}");
    ox_err err = {0};
    char *g = convert(sb.s, OX_SCHEMA_JSON, &err);
    CHECK_MSG(g && strlen(g) > 200000, "%s", err.msg);
    free(g);
    char *big = malloc(OX_SCHEMA_MAX_INPUT + 2);
    memset(big, ' ', OX_SCHEMA_MAX_INPUT + 1);
    g = NULL;
    CHECK(ox_json_schema_grammar(big, OX_SCHEMA_MAX_INPUT + 1, OX_SCHEMA_JSON, &g, NULL, &err) == OX_E_UNSUPPORTED && !g);
    free(big);
    ox_sb_free(&sb);
}

int main(void) {
    vocab = make_vocab();
    if (!vocab) return check_summary("test_json_schema");
    RUN(test_json_text);
    RUN(test_bounded_whitespace);
    RUN(test_gemma4);
    RUN(test_tool_calls);
    RUN(test_refused);
    RUN(test_refs);
    RUN(test_limits);
    ox_grammar_vocab_free(vocab);
    return check_summary("test_json_schema");
}
