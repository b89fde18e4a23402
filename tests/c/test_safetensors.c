/* test_safetensors.c — writer -> reader round trip (every dtype, metadata, fill callback), the
 * shard index, and every header error on hand-built files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/quant.h"
#include "formats/safetensors.h"
#include "writers/safetensors_write.h"

#define TMP "/tmp/oxinfer_test_st.safetensors"

static int32_t fill_vals[6] = {-3, 0, 7, 1 << 30, -1, 42};
static int fill_cb(void *ud, int i, FILE *f, ox_err *err) {
    (void)ud, (void)err;
    return i == 5 && fwrite(fill_vals, 1, sizeof fill_vals, f) == sizeof fill_vals ? 0 : OX_E_IO;
}

static void test_round_trip(void) {
    float f32[6] = {1, -2, 3.5f, 0, 1e-7f, -1e30f};
    uint16_t f16[4], bf16[8];
    for (int i = 0; i < 4; i++) f16[i] = ox_f32_to_f16((float)i - 1.5f);
    for (int i = 0; i < 8; i++) bf16[i] = ox_f32_to_bf16((float)i * 3.25f);
    int8_t i8[3 * 32];
    for (int i = 0; i < 96; i++) i8[i] = (int8_t)(i - 48);
    uint8_t u8[5] = {0, 1, 127, 128, 255};
    uint32_t u32 = 0xDEADBEEF;
    ox_err e = {0};
    ox_st_writer *w = ox_st_writer_new();
    CHECK(ox_st_w_meta(w, "format", "pt", &e) == 0);
    CHECK(ox_st_w_meta(w, "note", "quote \" backslash \\ newline \n \xc3\xa9", &e) == 0);
    CHECK(ox_st_w_meta(w, "format", "x", &e) == OX_E_RANGE);
    CHECK(ox_st_w_tensor(w, "a.f32", OX_ST_F32, 2, (uint64_t[]){2, 3}, f32, &e) == 0);
    CHECK(ox_st_w_tensor(w, "b.f16", OX_ST_F16, 1, (uint64_t[]){4}, f16, &e) == 0);
    CHECK(ox_st_w_tensor(w, "c.bf16", OX_ST_BF16, 3, (uint64_t[]){2, 2, 2}, bf16, &e) == 0);
    CHECK(ox_st_w_tensor(w, "d.i8", OX_ST_I8, 2, (uint64_t[]){3, 32}, i8, &e) == 0);
    CHECK(ox_st_w_tensor(w, "e.u8", OX_ST_U8, 1, (uint64_t[]){5}, u8, &e) == 0);
    CHECK(ox_st_w_tensor(w, "f.i32", OX_ST_I32, 2, (uint64_t[]){2, 3}, NULL, &e) == 0);
    CHECK(ox_st_w_tensor(w, "g.u32", OX_ST_U32, 0, NULL, &u32, &e) == 0);
    CHECK(ox_st_w_tensor(w, "h.empty", OX_ST_F32, 2, (uint64_t[]){0, 4}, f32, &e) == 0);
    CHECK(ox_st_w_tensor(w, "a.f32", OX_ST_F32, 1, (uint64_t[]){1}, f32, &e) == OX_E_RANGE);
    int rc = ox_st_w_write(w, TMP, fill_cb, NULL, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    ox_st_writer_free(w);

    int h = ox_host_open_path(TMP, &e);
    ox_safetensors *st = ox_st_open(h, &e);
    CHECK_MSG(st != NULL, "%s", e.msg);
    if (!st) return;
    CHECK(st->n_tensors == 8 && st->n_meta == 2);
    CHECK(st->data_start % 8 == 0);
    CHECK(strcmp(ox_st_meta(st, "format"), "pt") == 0);
    CHECK(strcmp(ox_st_meta(st, "note"), "quote \" backslash \\ newline \n \xc3\xa9") == 0);
    CHECK(ox_st_meta(st, "nope") == NULL);
    const ox_st_tensor *t = ox_st_find(st, "a.f32");
    CHECK(t && t->dtype == OX_ST_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->nbytes == 24);
    float fb[6];
    CHECK(t && ox_host_read(h, t->offset, 24, fb, &e) == 0 && memcmp(fb, f32, 24) == 0);
    t = ox_st_find(st, "b.f16");
    uint16_t hb[8];
    CHECK(t && t->dtype == OX_ST_F16 && t->nbytes == 8 && ox_host_read(h, t->offset, 8, hb, &e) == 0 &&
          memcmp(hb, f16, 8) == 0);
    t = ox_st_find(st, "c.bf16");
    CHECK(t && t->dtype == OX_ST_BF16 && t->n_dims == 3 && ox_host_read(h, t->offset, 16, hb, &e) == 0 &&
          memcmp(hb, bf16, 16) == 0);
    t = ox_st_find(st, "d.i8");
    int8_t ib[96];
    CHECK(t && t->dtype == OX_ST_I8 && t->shape[1] == 32 && ox_host_read(h, t->offset, 96, ib, &e) == 0 &&
          memcmp(ib, i8, 96) == 0);
    t = ox_st_find(st, "e.u8");
    uint8_t ub[5];
    CHECK(t && t->dtype == OX_ST_U8 && ox_host_read(h, t->offset, 5, ub, &e) == 0 && memcmp(ub, u8, 5) == 0);
    t = ox_st_find(st, "f.i32");
    int32_t ii[6];
    CHECK(t && t->dtype == OX_ST_I32 && ox_host_read(h, t->offset, 24, ii, &e) == 0 && memcmp(ii, fill_vals, 24) == 0);
    t = ox_st_find(st, "g.u32");
    uint32_t u;
    CHECK(t && t->dtype == OX_ST_U32 && t->n_dims == 0 && t->nbytes == 4 &&
          ox_host_read(h, t->offset, 4, &u, &e) == 0 && u == u32);
    t = ox_st_find(st, "h.empty");
    CHECK(t && t->nbytes == 0 && t->shape[0] == 0 && t->shape[1] == 4);
    CHECK(strcmp(st->tensors[0].name, "a.f32") == 0 && strcmp(st->tensors[7].name, "h.empty") == 0);
    ox_st_free(st);
    ox_host_close(h);
    remove(TMP);
}

static void test_index(void) {
    const char *text = "{\"metadata\": {\"total_size\": 123}, \"weight_map\": {"
                       "\"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\","
                       "\"model.norm.weight\": \"model-00002-of-00002.safetensors\","
                       "\"model.layers.0.mlp.up_proj.weight\": \"sub/model-00001-of-00002.safetensors\"}}";
    int h = ox_host_open_mem("model.safetensors.index.json", text, strlen(text));
    ox_err e = {0};
    ox_st_index *ix = ox_st_index_open(h, &e);
    CHECK_MSG(ix != NULL, "%s", e.msg);
    if (ix) {
        CHECK(ix->n == 3 && ix->n_shards == 2);
        CHECK(strcmp(ix->tensor[2], "model.layers.0.mlp.up_proj.weight") == 0);
        CHECK(strcmp(ix->shard[2], "model-00001-of-00002.safetensors") == 0); /* directory stripped */
        CHECK(strcmp(ix->shards[0], "model-00001-of-00002.safetensors") == 0);
        CHECK(strcmp(ix->shards[1], "model-00002-of-00002.safetensors") == 0);
    }
    ox_st_index_free(ix);
    ox_host_close(h);
    const char *bad[] = {"{\"metadata\": {}}", "{\"weight_map\": {\"a\": 3}}", "{\"weight_map\": {\"a\": \"x\",}}"};
    const char *want[] = {"no weight_map", "weight_map entry a is not a string", "index.json:1:"};
    for (int i = 0; i < 3; i++) {
        h = ox_host_open_mem("bad.index.json", bad[i], strlen(bad[i]));
        ix = ox_st_index_open(h, &e);
        CHECK(ix == NULL && e.code == OX_E_FORMAT);
        CHECK_STR_CONTAINS(e.msg, "bad.index.json");
        CHECK_STR_CONTAINS(e.msg, want[i]);
        ox_st_index_free(ix);
        ox_host_close(h);
    }
}

/* header text + data_len zero bytes */
static uint8_t file[8192];
static size_t make(const char *header, size_t data_len) {
    uint64_t n = strlen(header);
    memcpy(file, &n, 8);
    memcpy(file + 8, header, n);
    memset(file + 8 + n, 0, data_len);
    return 8 + n + data_len;
}

static void expect(size_t n, int code, const char *what) {
    int h = ox_host_open_mem("bad.safetensors", file, n);
    ox_err e = {0};
    ox_safetensors *st = ox_st_open(h, &e);
    CHECK_MSG(st == NULL, "opened, expected %s", what);
    ox_st_free(st);
    CHECK_ERR(e, code, "bad.safetensors", what);
    ox_host_close(h);
}

/* expect() for the file of this header and data_len data bytes */
static void expect_header(const char *header, size_t data_len, int code, const char *what) {
    expect(make(header, data_len), code, what);
}

static void test_errors(void) {
    size_t n = make("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    int h = ox_host_open_mem("ok.safetensors", file, n);
    ox_err e = {0};
    ox_safetensors *st = ox_st_open(h, &e);
    CHECK(st && st->n_tensors == 1 && st->tensors[0].nbytes == 8);
    ox_st_free(st);
    ox_host_close(h);

    expect(5, OX_E_TRUNCATED, "too short");
    uint64_t one = 1;
    memcpy(file, &one, 8);
    expect(n, OX_E_FORMAT, "bad safetensors header length 1");
    uint64_t huge = 1ull << 40;
    memcpy(file, &huge, 8);
    expect(n, OX_E_FORMAT, "bad safetensors header length");
    uint64_t past = 1000;
    make("{}", 0);
    memcpy(file, &past, 8);
    expect(10, OX_E_TRUNCATED, "header of 1000 bytes beyond file end");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8, OX_E_FORMAT,
                  "bad.safetensors:1:");
    expect_header("[1, 2]", 0, OX_E_FORMAT, "not a JSON object");
    expect_header("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, OX_E_UNSUPPORTED,
                  "tensor a: dtype F64 is not supported");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, OX_E_FORMAT,
                  "tensor a: F32 with 1-D shape needs 12 bytes, data_offsets give 8");
    expect_header("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,4]}}", 8, OX_E_FORMAT, "needs 8 bytes");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, OX_E_TRUNCATED,
                  "tensor a: data_offsets [0, 16) beyond file end (data section 8 bytes)");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, OX_E_FORMAT,
                  "tensor a: bad data_offsets");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8, OX_E_FORMAT,
                  "tensor a: bad data_offsets");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, OX_E_FORMAT,
                  "shape[0] is not a non-negative integer");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
                  OX_E_FORMAT, "byte size overflows");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                  16, OX_E_FORMAT, "data of tensors a and b overlap");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                  16, OX_E_FORMAT, "duplicate tensor name a");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, OX_E_FORMAT,
                  "tensor a: needs dtype, shape and data_offsets");
    expect_header("{\"a\":[1]}", 8, OX_E_FORMAT, "tensor a: header entry is not an object");
    expect_header("{\"__metadata__\":{\"k\":1}}", 0, OX_E_FORMAT, "__metadata__ value of k is not a string");
    expect_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 8, OX_E_FORMAT,
                  "9 dimensions");
    /* touching tensors and empty tensors do not overlap */
    n = make("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"z\":{\"dtype\":\"F32\",\"shape\":[0],"
             "\"data_offsets\":[4,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[8,16]}}",
             16);
    h = ox_host_open_mem("ok2.safetensors", file, n);
    st = ox_st_open(h, &e);
    CHECK_MSG(st && st->n_tensors == 3, "%s", e.msg);
    ox_st_free(st);
    ox_host_close(h);
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_index);
    RUN(test_errors);
    return check_summary("safetensors");
}
