/* fuzz_json.c — the JSON parser on arbitrary bytes; an accepted document is walked, and
 * every string written back with ox_sb_json_str must parse to the same bytes. */
#include "fuzz.h"
#include "formats/json.h"

static void walk(const ox_json *v, int depth) {
    fuzz_assert(depth <= OX_JSON_MAX_DEPTH + 1, "depth limit");
    ox_json_kind k = ox_json_type(v);
    if (k == OX_JSON_STRING) {
        const char *s = ox_json_str(v);
        size_t n = ox_json_len(v);
        fuzz_assert(s[n] == 0, "string terminated");
        ox_strbuf b = {0};
        ox_sb_json_str(&b, s, n);
        if (!b.oom) {
            ox_err e = {0};
            ox_json *r = ox_json_parse(b.s, b.len, "roundtrip", &e);
            fuzz_assert(r && ox_json_len(r) == n && memcmp(ox_json_str(r), s, n) == 0, "string round trip");
            ox_json_free(r);
        }
        ox_sb_free(&b);
    } else if (k == OX_JSON_NUMBER) {
        int64_t i;
        if (ox_json_int(v, &i))
            fuzz_assert((double)i == ox_json_num(v, 0) || i == INT64_MIN || i == INT64_MAX ||
                            (i > (1LL << 53) || i < -(1LL << 53)),
                        "integer agrees with the double");
    } else if (k == OX_JSON_ARRAY || k == OX_JSON_OBJECT) {
        for (size_t i = 0; i < ox_json_len(v); i++) {
            const ox_json *c = ox_json_at(v, i);
            if (k == OX_JSON_OBJECT) {
                fuzz_assert(ox_json_key(c) != NULL, "member has a key");
                if (strlen(ox_json_key(c)) == ox_json_key_len(c))
                    fuzz_assert(ox_json_get(v, ox_json_key(c)) != NULL, "member found by key");
            }
            walk(c, depth + 1);
        }
        fuzz_assert(ox_json_at(v, ox_json_len(v)) == NULL, "index past the end");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ox_err err = {0};
    ox_json *root = ox_json_parse((const char *)data, size, "fuzz.json", &err);
    if (!root) {
        fuzz_expect_error(err.code, &err);
        return 0;
    }
    walk(root, 0);
    ox_json_free(root);
    return 0;
}
