/* test_sizes.c — size arithmetic on sizes that come from files, as it must hold where size_t
 * is 32 bits (tests/c/run_wasm.sh runs this as wasm32, where a product past 4 GiB wraps to a
 * small allocation followed by a large write): checked products, products that saturate so
 * the checked allocation refuses them, and the JSON tree's value count bound (its memory
 * grows with the count, whatever the text's size). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/json.h"
#include "model/kv.h"

static void test_checked_products(void) {
    size_t out = 7;
    CHECK(ox_mul_size(SIZE_MAX / 2, 2, &out) == 0 && out == SIZE_MAX - 1);
    CHECK(ox_mul_size(SIZE_MAX / 2 + 1, 2, &out) == -1);
    CHECK(ox_mul_size((size_t)1 << (sizeof(size_t) * 4), (size_t)1 << (sizeof(size_t) * 4), &out) == -1);
    CHECK(ox_mul_size(0, SIZE_MAX, &out) == 0 && out == 0);
    CHECK(ox_add_size(SIZE_MAX, 1, &out) == -1);
}

/* 65536 heads of 65536 floats: 2^34 bytes a row. 64-bit: exact; 32-bit: SIZE_MAX (it wrapped
 * to 0 before), which the KV reserve's checked multiply then refuses. */
static void test_kv_row_bytes(void) {
    uint64_t want = (uint64_t)1 << 34;
    size_t got = ox_kv_row_bytes(OX_KV_F32, 1 << 16, 1 << 16);
    CHECK_MSG(want <= SIZE_MAX ? got == want : got == SIZE_MAX, "%zu", got);
    got = ox_kv_row_bytes(OX_KV_F16, 1 << 16, 1 << 16);
    CHECK(want / 2 <= SIZE_MAX ? got == want / 2 : got == SIZE_MAX);
    CHECK(ox_kv_row_bytes(OX_KV_F32, 8, 256) == 8 * 256 * sizeof(float));
}

/* [0,0,...]: OX_JSON_MAX_VALUES values parse, one more is refused with FORMAT */
static void test_json_value_count(void) {
    size_t n = OX_JSON_MAX_VALUES + 1, len = 2 * n + 1;
    char *text = malloc(len);
    text[0] = '[';
    for (size_t i = 0; i < n; i++) text[1 + 2 * i] = '0', text[2 + 2 * i] = ',';
    text[len - 1] = ']';
    ox_err err = {0};
    ox_json *j = ox_json_parse(text, len, "values.json", &err);
    CHECK(j == NULL && err.code == OX_E_FORMAT);
    CHECK_STR_CONTAINS(err.msg, "values.json");
    CHECK_STR_CONTAINS(err.msg, "more than");
    text[len - 3] = ']'; /* one value fewer */
    j = ox_json_parse(text, len - 2, "values.json", &err);
    CHECK_MSG(j != NULL && ox_json_len(j) == OX_JSON_MAX_VALUES, "%s", err.msg);
    ox_json_free(j);
    free(text);
}

int main(void) {
    RUN(test_checked_products);
    RUN(test_kv_row_bytes);
    RUN(test_json_value_count);
    return check_summary("test_sizes");
}
