/* test_gguf.c — GGUF writer -> reader round trip over every metadata type and several tensor
 * types, typed getters, and every header error (hand-built corrupt files, in memory). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "kernels/quant.h"
#include "writers/gguf_write.h"

#define TMP "/tmp/oxinfer_test_gguf.gguf"

static uint8_t fill_data[40 * 4];
static int fill_cb(void *ud, int i, FILE *f, ox_err *err) {
    (void)ud, (void)i, (void)err;
    return fwrite(fill_data, 1, sizeof fill_data, f) == sizeof fill_data ? 0 : OX_E_IO;
}

static void test_round_trip(void) {
    ox_gguf_writer *w = ox_gguf_writer_new();
    CHECK(ox_gguf_w_str(w, "general.architecture", "gemma4") == 0);
    CHECK(ox_gguf_w_alignment(w, 64) == 0);
    ox_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = OX_GGUF_U8, v.v.u8 = 200;
    CHECK(ox_gguf_w_value(w, "t.u8", &v) == 0);
    v.type = OX_GGUF_I8, v.v.i8 = -100;
    CHECK(ox_gguf_w_value(w, "t.i8", &v) == 0);
    v.type = OX_GGUF_U16, v.v.u16 = 60000;
    CHECK(ox_gguf_w_value(w, "t.u16", &v) == 0);
    v.type = OX_GGUF_I16, v.v.i16 = -30000;
    CHECK(ox_gguf_w_value(w, "t.i16", &v) == 0);
    CHECK(ox_gguf_w_u32(w, "t.u32", 4000000000u) == 0);
    CHECK(ox_gguf_w_i32(w, "t.i32", -2000000000) == 0);
    CHECK(ox_gguf_w_f32(w, "t.f32", 1.5e-6f) == 0);
    CHECK(ox_gguf_w_bool(w, "t.bool", 1) == 0);
    CHECK(ox_gguf_w_u64(w, "t.u64", 0xFFFFFFFFFFFFull) == 0);
    v.type = OX_GGUF_I64, v.v.i64 = -5000000000ll;
    CHECK(ox_gguf_w_value(w, "t.i64", &v) == 0);
    v.type = OX_GGUF_F64, v.v.f64 = 3.141592653589793;
    CHECK(ox_gguf_w_value(w, "t.f64", &v) == 0);
    const char *toks[] = {"<pad>", "", "h\xc3\xa9llo", "a b"};
    CHECK(ox_gguf_w_arr_str(w, "t.strs", toks, 4) == 0);
    int32_t ff[5] = {6144, 6144, 12288, -1, 7};
    CHECK(ox_gguf_w_arr(w, "t.i32s", OX_GGUF_I32, ff, 5) == 0);
    float sc[3] = {0.5f, -1e30f, 2};
    CHECK(ox_gguf_w_arr(w, "t.f32s", OX_GGUF_F32, sc, 3) == 0);
    uint8_t bools[4] = {1, 1, 0, 1};
    CHECK(ox_gguf_w_arr(w, "t.bools", OX_GGUF_BOOL, bools, 4) == 0);
    uint64_t u64s[2] = {1, 1ull << 40};
    CHECK(ox_gguf_w_arr(w, "t.u64s", OX_GGUF_U64, u64s, 2) == 0);
    CHECK(ox_gguf_w_arr(w, "t.empty", OX_GGUF_U16, NULL, 0) == 0);
    /* nested: [[1,2],[3]] of u32 and [["x"]] */
    uint32_t a1[2] = {1, 2}, a2[1] = {3};
    ox_gguf_value inner[2];
    memset(inner, 0, sizeof inner);
    inner[0].type = inner[1].type = OX_GGUF_ARRAY;
    inner[0].v.arr.type = inner[1].v.arr.type = OX_GGUF_U32;
    inner[0].v.arr.n = 2, inner[0].v.arr.data = a1;
    inner[1].v.arr.n = 1, inner[1].v.arr.data = a2;
    ox_gguf_value nested;
    memset(&nested, 0, sizeof nested);
    nested.type = OX_GGUF_ARRAY, nested.v.arr.type = OX_GGUF_ARRAY, nested.v.arr.n = 2, nested.v.arr.data = inner;
    CHECK(ox_gguf_w_value(w, "t.nested", &nested) == 0);
    CHECK(ox_gguf_w_u32(w, "t.u32", 1) == OX_E_FORMAT); /* duplicate key: reported again at write */

    float f32[3 * 5];
    for (int i = 0; i < 15; i++) f32[i] = (float)i * 0.25f - 1;
    uint16_t f16[64 * 2];
    for (int i = 0; i < 128; i++) f16[i] = ox_f32_to_f16((float)i / 7);
    float src[64 * 3];
    for (int i = 0; i < 64 * 3; i++) src[i] = (float)((i * 37) % 101) / 50 - 1;
    uint8_t q8[3 * 2 * sizeof(ox_block_q8_0)];
    CHECK(ox_quantize_row(OX_Q8_0, src, q8, 64 * 3) == 0);
    for (size_t i = 0; i < sizeof fill_data; i++) fill_data[i] = (uint8_t)(i * 7 + 1);
    ox_err e = {0};
    CHECK(ox_gguf_w_tensor(w, "a.f32", OX_F32, 2, (uint64_t[]){5, 3}, f32, &e) == 0);
    CHECK(ox_gguf_w_tensor(w, "b.f16", OX_F16, 3, (uint64_t[]){64, 1, 2}, f16, &e) == 0);
    CHECK(ox_gguf_w_tensor(w, "c.q8", OX_Q8_0, 2, (uint64_t[]){64, 3}, q8, &e) == 0);
    CHECK(ox_gguf_w_tensor(w, "d.fill", OX_F32, 1, (uint64_t[]){40}, NULL, &e) == 0);
    CHECK(ox_gguf_w_tensor(w, "e.bad", OX_Q8_0, 1, (uint64_t[]){33}, q8, &e) != 0); /* not a block multiple */
    CHECK(ox_gguf_w_tensor(w, "a.f32", OX_F32, 1, (uint64_t[]){1}, f32, &e) == OX_E_RANGE);
    CHECK(ox_gguf_w_write(w, TMP, fill_cb, NULL, &e) == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "duplicate metadata key t.u32");
    ox_gguf_writer_free(w);

    /* again without the duplicate */
    w = ox_gguf_writer_new();
    ox_gguf_w_str(w, "general.architecture", "gemma4");
    ox_gguf_w_alignment(w, 64);
    v.type = OX_GGUF_U8, v.v.u8 = 200;
    ox_gguf_w_value(w, "t.u8", &v);
    v.type = OX_GGUF_I8, v.v.i8 = -100;
    ox_gguf_w_value(w, "t.i8", &v);
    v.type = OX_GGUF_U16, v.v.u16 = 60000;
    ox_gguf_w_value(w, "t.u16", &v);
    v.type = OX_GGUF_I16, v.v.i16 = -30000;
    ox_gguf_w_value(w, "t.i16", &v);
    ox_gguf_w_u32(w, "t.u32", 4000000000u);
    ox_gguf_w_i32(w, "t.i32", -2000000000);
    ox_gguf_w_f32(w, "t.f32", 1.5e-6f);
    ox_gguf_w_bool(w, "t.bool", 1);
    ox_gguf_w_u64(w, "t.u64", 0xFFFFFFFFFFFFull);
    v.type = OX_GGUF_I64, v.v.i64 = -5000000000ll;
    ox_gguf_w_value(w, "t.i64", &v);
    v.type = OX_GGUF_F64, v.v.f64 = 3.141592653589793;
    ox_gguf_w_value(w, "t.f64", &v);
    ox_gguf_w_arr_str(w, "t.strs", toks, 4);
    ox_gguf_w_arr(w, "t.i32s", OX_GGUF_I32, ff, 5);
    ox_gguf_w_arr(w, "t.f32s", OX_GGUF_F32, sc, 3);
    ox_gguf_w_arr(w, "t.bools", OX_GGUF_BOOL, bools, 4);
    ox_gguf_w_arr(w, "t.u64s", OX_GGUF_U64, u64s, 2);
    ox_gguf_w_arr(w, "t.empty", OX_GGUF_U16, NULL, 0);
    ox_gguf_w_value(w, "t.nested", &nested);
    ox_gguf_w_tensor(w, "a.f32", OX_F32, 2, (uint64_t[]){5, 3}, f32, &e);
    ox_gguf_w_tensor(w, "b.f16", OX_F16, 3, (uint64_t[]){64, 1, 2}, f16, &e);
    ox_gguf_w_tensor(w, "c.q8", OX_Q8_0, 2, (uint64_t[]){64, 3}, q8, &e);
    ox_gguf_w_tensor(w, "d.fill", OX_F32, 1, (uint64_t[]){40}, NULL, &e);
    int rc = ox_gguf_w_write(w, TMP, fill_cb, NULL, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    ox_gguf_writer_free(w);

    int h = ox_host_open_path(TMP, &e);
    CHECK(h >= 0);
    ox_gguf *g = ox_gguf_open(h, &e);
    CHECK_MSG(g != NULL, "%s", e.msg);
    if (!g) return;
    CHECK(g->version == 3 && g->n_kv == 20 && g->n_tensors == 4);
    CHECK(g->alignment == 64 && g->data_offset % 64 == 0);
    uint32_t u32;
    int32_t i32;
    int64_t i64;
    uint64_t u64;
    float f;
    int b;
    const char *s;
    const ox_gguf_value *a;
    CHECK(ox_gguf_get_str(g, "general.architecture", &s, &e) == 0 && strcmp(s, "gemma4") == 0);
    CHECK(ox_gguf_get_u32(g, "t.u8", &u32, &e) == 0 && u32 == 200); /* widening */
    CHECK(ox_gguf_get_i32(g, "t.i8", &i32, &e) == 0 && i32 == -100);
    CHECK(ox_gguf_get_u32(g, "t.u16", &u32, &e) == 0 && u32 == 60000);
    CHECK(ox_gguf_get_i32(g, "t.i16", &i32, &e) == 0 && i32 == -30000);
    CHECK(ox_gguf_get_u32(g, "t.u32", &u32, &e) == 0 && u32 == 4000000000u);
    CHECK(ox_gguf_get_i64(g, "t.u32", &i64, &e) == 0 && i64 == 4000000000ll);
    CHECK(ox_gguf_get_i32(g, "t.u32", &i32, &e) == OX_E_FORMAT); /* does not fit */
    CHECK_STR_CONTAINS(e.msg, "oxinfer_test_gguf.gguf");
    CHECK_STR_CONTAINS(e.msg, "t.u32");
    CHECK(ox_gguf_get_i32(g, "t.i32", &i32, &e) == 0 && i32 == -2000000000);
    CHECK(ox_gguf_get_u32(g, "t.i32", &u32, &e) == OX_E_FORMAT); /* negative */
    CHECK(ox_gguf_get_f32(g, "t.f32", &f, &e) == 0 && f == 1.5e-6f);
    CHECK(ox_gguf_get_f32(g, "t.u16", &f, &e) == 0 && f == 60000.0f); /* int -> float */
    CHECK(ox_gguf_get_bool(g, "t.bool", &b, &e) == 0 && b == 1);
    CHECK(ox_gguf_get_bool(g, "t.u8", &b, &e) == OX_E_FORMAT);
    CHECK(ox_gguf_get_u64(g, "t.u64", &u64, &e) == 0 && u64 == 0xFFFFFFFFFFFFull);
    CHECK(ox_gguf_get_i64(g, "t.i64", &i64, &e) == 0 && i64 == -5000000000ll);
    CHECK(ox_gguf_get_u64(g, "t.i64", &u64, &e) == OX_E_FORMAT);
    double d;
    CHECK(ox_gguf_val_f64(ox_gguf_find(g, "t.f64"), &d) == 0 && d == 3.141592653589793);
    CHECK(ox_gguf_get_str(g, "t.u8", &s, &e) == OX_E_FORMAT);
    CHECK_STR_CONTAINS(e.msg, "u8 value where string was expected");
    CHECK(ox_gguf_get_u32(g, "nope", &u32, &e) == OX_E_MISSING);
    CHECK_STR_CONTAINS(e.msg, "nope");
    CHECK(ox_gguf_get_arr(g, "t.strs", &a, &e) == 0 && a->v.arr.n == 4);
    for (int i = 0; i < 4; i++) {
        const ox_gguf_str *st = ox_gguf_arr_str(a, (uint64_t)i);
        CHECK(st && st->len == strlen(toks[i]) && strcmp(st->s, toks[i]) == 0);
    }
    CHECK(ox_gguf_arr_str(a, 4) == NULL);
    CHECK(ox_gguf_get_arr(g, "t.i32s", &a, &e) == 0 && a->v.arr.type == OX_GGUF_I32 && a->v.arr.n == 5);
    for (int i = 0; i < 5; i++) CHECK(ox_gguf_arr_i64(a, (uint64_t)i, &i64) == 0 && i64 == ff[i]);
    CHECK(ox_gguf_get_arr(g, "t.f32s", &a, &e) == 0);
    for (int i = 0; i < 3; i++) CHECK(ox_gguf_arr_f64(a, (uint64_t)i, &d) == 0 && (float)d == sc[i]);
    CHECK(ox_gguf_get_arr(g, "t.bools", &a, &e) == 0);
    for (int i = 0; i < 4; i++) CHECK(ox_gguf_arr_bool(a, (uint64_t)i, &b) == 0 && b == bools[i]);
    CHECK(ox_gguf_get_arr(g, "t.u64s", &a, &e) == 0 && ox_gguf_arr_i64(a, 1, &i64) == 0 && i64 == (1ll << 40));
    CHECK(ox_gguf_get_arr(g, "t.empty", &a, &e) == 0 && a->v.arr.n == 0 && a->v.arr.type == OX_GGUF_U16);
    CHECK(ox_gguf_get_arr(g, "t.nested", &a, &e) == 0 && a->v.arr.type == OX_GGUF_ARRAY && a->v.arr.n == 2);
    const ox_gguf_value *in = a->v.arr.data;
    CHECK(in[0].v.arr.n == 2 && ox_gguf_arr_i64(&in[0], 1, &i64) == 0 && i64 == 2);
    CHECK(in[1].v.arr.n == 1 && ox_gguf_arr_i64(&in[1], 0, &i64) == 0 && i64 == 3);
    CHECK(ox_gguf_get_arr(g, "t.u8", &a, &e) == OX_E_FORMAT);
    CHECK(ox_gguf_get_u32(g, "general.alignment", &u32, &e) == 0 && u32 == 64);

    const ox_gguf_tensor *t = ox_gguf_find_tensor(g, "a.f32");
    CHECK(t && t->type == OX_F32 && t->n_dims == 2 && t->ne[0] == 5 && t->ne[1] == 3 && t->ne[2] == 1 && t->nbytes == 60);
    float back[15];
    CHECK(t && ox_host_read(h, t->offset, sizeof back, back, &e) == 0 && memcmp(back, f32, sizeof back) == 0);
    t = ox_gguf_find_tensor(g, "b.f16");
    CHECK(t && t->type == OX_F16 && t->n_dims == 3 && t->ne[2] == 2 && t->nbytes == 256 && t->offset % 64 == 0);
    uint16_t hb[128];
    CHECK(t && ox_host_read(h, t->offset, sizeof hb, hb, &e) == 0 && memcmp(hb, f16, sizeof hb) == 0);
    t = ox_gguf_find_tensor(g, "c.q8");
    CHECK(t && t->type == OX_Q8_0 && t->nbytes == sizeof q8 && t->offset % 64 == 0);
    uint8_t qb[sizeof q8];
    CHECK(t && ox_host_read(h, t->offset, sizeof qb, qb, &e) == 0 && memcmp(qb, q8, sizeof qb) == 0);
    t = ox_gguf_find_tensor(g, "d.fill");
    uint8_t fb[sizeof fill_data];
    CHECK(t && ox_host_read(h, t->offset, sizeof fb, fb, &e) == 0 && memcmp(fb, fill_data, sizeof fb) == 0);
    CHECK(ox_gguf_find_tensor(g, "zzz") == NULL);
    CHECK(strcmp(g->tensors[0].name, "a.f32") == 0 && strcmp(g->tensors[3].name, "d.fill") == 0); /* file order */
    ox_gguf_free(g);
    ox_host_close(h);
    remove(TMP);
}

/* ---- hand-built files ---- */

typedef struct {
    uint8_t b[4096];
    size_t n;
} buf;
static void p32(buf *b, uint32_t v) {
    memcpy(b->b + b->n, &v, 4);
    b->n += 4;
}
static void p64(buf *b, uint64_t v) {
    memcpy(b->b + b->n, &v, 8);
    b->n += 8;
}
static void pstr(buf *b, const char *s) {
    p64(b, strlen(s));
    memcpy(b->b + b->n, s, strlen(s));
    b->n += strlen(s);
}
static void pad32(buf *b) {
    while (b->n % 32) b->b[b->n++] = 0;
}

typedef struct {
    const char *name;
    uint32_t nd;
    uint64_t ne[5];
    uint32_t type;
    uint64_t off;
} tinfo;

/* magic/version, one kv "k" = u32 7, the given tensors, data of `data` bytes. */
static void build(buf *b, uint32_t version, const tinfo *ts, int nt, size_t data) {
    memset(b, 0, sizeof *b);
    p32(b, OX_GGUF_MAGIC);
    p32(b, version);
    p64(b, (uint64_t)nt);
    p64(b, 1);
    pstr(b, "k");
    p32(b, OX_GGUF_U32);
    p32(b, 7);
    for (int i = 0; i < nt; i++) {
        pstr(b, ts[i].name);
        p32(b, ts[i].nd);
        for (uint32_t d = 0; d < ts[i].nd; d++) p64(b, ts[i].ne[d]);
        p32(b, ts[i].type);
        p64(b, ts[i].off);
    }
    pad32(b);
    b->n += data;
}

static void expect(const uint8_t *data, size_t n, int code, const char *what) {
    int h = ox_host_open_mem("bad.gguf", data, n);
    ox_err e = {0};
    ox_gguf *g = ox_gguf_open(h, &e);
    CHECK_MSG(g == NULL, "opened, expected %s", what);
    ox_gguf_free(g);
    CHECK_ERR(e, code, "bad.gguf", what);
    ox_host_close(h);
}

static void test_errors(void) {
    static buf b;
    tinfo ok[2] = {{"w", 2, {32, 2}, OX_F32, 0}, {"v", 1, {8}, OX_F32, 256}};
    build(&b, 3, ok, 2, 288);
    int h = ox_host_open_mem("good.gguf", b.b, b.n);
    ox_err e = {0};
    ox_gguf *g = ox_gguf_open(h, &e);
    CHECK_MSG(g != NULL, "%s", e.msg);
    CHECK(g && g->version == 3 && g->n_tensors == 2 && g->tensors[1].nbytes == 32);
    ox_gguf_free(g);
    ox_host_close(h);
    build(&b, 2, ok, 2, 288); /* v2 has the same layout */
    h = ox_host_open_mem("v2.gguf", b.b, b.n);
    g = ox_gguf_open(h, &e);
    CHECK(g && g->version == 2);
    ox_gguf_free(g);
    ox_host_close(h);

    /* every truncation of the header, and of the data */
    size_t full = b.n;
    int trunc_ok = 1;
    for (size_t n = 0; n < full; n++) {
        h = ox_host_open_mem("cut.gguf", b.b, n);
        g = ox_gguf_open(h, &e);
        if (g || e.code != OX_E_TRUNCATED || !strstr(e.msg, "cut.gguf")) trunc_ok = 0;
        ox_gguf_free(g);
        ox_host_close(h);
    }
    CHECK(trunc_ok);
    expect(b.b, full - 1, OX_E_TRUNCATED, "tensor v: data [");

    build(&b, 3, ok, 2, 288);
    b.b[0] = 'X';
    expect(b.b, b.n, OX_E_FORMAT, "bad magic");
    build(&b, 1, ok, 2, 288);
    expect(b.b, b.n, OX_E_UNSUPPORTED, "version 1");
    build(&b, 4, ok, 2, 288);
    expect(b.b, b.n, OX_E_UNSUPPORTED, "version 4");

    build(&b, 3, ok, 2, 288);
    uint64_t huge = 1ull << 40;
    memcpy(b.b + 8, &huge, 8); /* n_tensors */
    expect(b.b, b.n, OX_E_FORMAT, "absurd counts");
    build(&b, 3, ok, 2, 288);
    memcpy(b.b + 16, &huge, 8); /* n_kv */
    expect(b.b, b.n, OX_E_FORMAT, "absurd counts");
    build(&b, 3, ok, 2, 288);
    memcpy(b.b + 24, &huge, 8); /* key length */
    expect(b.b, b.n, OX_E_FORMAT, "absurd string length");
    build(&b, 3, ok, 2, 288);
    uint64_t big = 60000;
    memcpy(b.b + 24, &big, 8);
    expect(b.b, b.n, OX_E_TRUNCATED, "metadata key");
    build(&b, 3, ok, 2, 288);
    uint32_t badtype = 13;
    memcpy(b.b + 33, &badtype, 4); /* value type of "k" */
    expect(b.b, b.n, OX_E_FORMAT, "unknown metadata value type 13");

    /* array count that cannot fit */
    memset(&b, 0, sizeof b);
    p32(&b, OX_GGUF_MAGIC);
    p32(&b, 3);
    p64(&b, 0);
    p64(&b, 1);
    pstr(&b, "arr");
    p32(&b, OX_GGUF_ARRAY);
    p32(&b, OX_GGUF_STRING);
    p64(&b, 1ull << 50);
    expect(b.b, b.n, OX_E_TRUNCATED, "array of 1125899906842624 string elements");
    /* bool not 0/1 */
    memset(&b, 0, sizeof b);
    p32(&b, OX_GGUF_MAGIC);
    p32(&b, 3);
    p64(&b, 0);
    p64(&b, 1);
    pstr(&b, "flag");
    p32(&b, OX_GGUF_BOOL);
    b.b[b.n++] = 2;
    expect(b.b, b.n, OX_E_FORMAT, "bool value 2");
    /* arrays nested too deep */
    memset(&b, 0, sizeof b);
    p32(&b, OX_GGUF_MAGIC);
    p32(&b, 3);
    p64(&b, 0);
    p64(&b, 1);
    pstr(&b, "deep");
    p32(&b, OX_GGUF_ARRAY);
    for (int i = 0; i < 20; i++) {
        p32(&b, OX_GGUF_ARRAY);
        p64(&b, 1);
    }
    p32(&b, OX_GGUF_U8);
    p64(&b, 0);
    expect(b.b, b.n, OX_E_FORMAT, "nested deeper");
    /* bad alignment */
    memset(&b, 0, sizeof b);
    p32(&b, OX_GGUF_MAGIC);
    p32(&b, 3);
    p64(&b, 0);
    p64(&b, 1);
    pstr(&b, "general.alignment");
    p32(&b, OX_GGUF_U32);
    p32(&b, 48);
    expect(b.b, b.n, OX_E_FORMAT, "general.alignment");

    tinfo t5[1] = {{"five", 5, {1, 1, 1, 1, 1}, OX_F32, 0}};
    build(&b, 3, t5, 1, 32);
    expect(b.b, b.n, OX_E_FORMAT, "tensor five: 5 dimensions");
    tinfo tt[1] = {{"blk.0.attn_q.weight", 1, {32}, 99, 0}};
    build(&b, 3, tt, 1, 128);
    expect(b.b, b.n, OX_E_UNSUPPORTED, "tensor blk.0.attn_q.weight: unsupported ggml type 99 (unknown)");
    tinfo ovf[1] = {{"ovf", 3, {1ull << 40, 1ull << 40, 1ull << 40}, OX_F32, 0}};
    build(&b, 3, ovf, 1, 32);
    expect(b.b, b.n, OX_E_FORMAT, "tensor ovf: element count overflows");
    tinfo ovf2[1] = {{"ovf2", 2, {1ull << 40, 1ull << 30}, OX_F32, 0}};
    build(&b, 3, ovf2, 1, 32);
    expect(b.b, b.n, OX_E_FORMAT, "tensor ovf2: byte size overflows");
    tinfo neg[1] = {{"neg", 1, {(uint64_t)-5}, OX_F32, 0}};
    build(&b, 3, neg, 1, 32);
    expect(b.b, b.n, OX_E_FORMAT, "tensor neg: dimension 0 is negative");
    tinfo blk[1] = {{"q", 1, {40}, OX_Q8_0, 0}};
    build(&b, 3, blk, 1, 64);
    expect(b.b, b.n, OX_E_FORMAT, "tensor q:");
    tinfo dup[2] = {{"same", 1, {8}, OX_F32, 0}, {"same", 1, {8}, OX_F32, 32}};
    build(&b, 3, dup, 2, 64);
    expect(b.b, b.n, OX_E_FORMAT, "duplicate tensor name same");
    tinfo mis[1] = {{"mis", 1, {8}, OX_F32, 4}};
    build(&b, 3, mis, 1, 64);
    expect(b.b, b.n, OX_E_FORMAT, "tensor mis: data offset 4 is not a multiple of the alignment 32");
    tinfo far[1] = {{"far", 1, {8}, OX_F32, 1ull << 62}};
    build(&b, 3, far, 1, 64);
    expect(b.b, b.n, OX_E_TRUNCATED, "tensor far: data [");
}

/* A big header (a vocabulary: 300k strings, 5.2 MB) is read in refills that start at 64 KiB
 * and double up to 1 MiB, in order: a handful of host reads (each is an HTTP request or a
 * round trip to the reader thread in a browser), not one per 64 KiB; and its strings intact. */
typedef struct {
    int n;
    size_t first, max;
    uint64_t next;
    int in_order;
} read_log;
static void log_read(void *ud, int file, uint64_t off, size_t len) {
    read_log *l = ud;
    (void)file;
    if (!l->n++) l->first = len;
    if (len > l->max) l->max = len;
    if (off < l->next) l->in_order = 0;
    l->next = off + len;
}

static void test_header_reads(void) {
    enum { N = 300000 };
    static char text[N][12];
    static const char *toks[N];
    for (int i = 0; i < N; i++) snprintf(text[i], sizeof text[i], "tok%d", i * 7), toks[i] = text[i];
    ox_gguf_writer *w = ox_gguf_writer_new();
    ox_err e = {0};
    CHECK(ox_gguf_w_str(w, "general.architecture", "gemma4") == 0);
    CHECK(ox_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, N) == 0);
    CHECK(ox_gguf_w_tensor(w, "d.fill", OX_F32, 1, (uint64_t[]){40}, NULL, &e) == 0);
    CHECK_MSG(ox_gguf_w_write(w, TMP, fill_cb, NULL, &e) == 0, "%s", e.msg);
    ox_gguf_writer_free(w);
    int h = ox_host_open_path(TMP, &e);
    CHECK(h >= 0);
    read_log l = {0, 0, 0, 0, 1};
    ox_host_trace(log_read, &l);
    ox_gguf *g = ox_gguf_open(h, &e);
    ox_host_trace(NULL, NULL);
    CHECK_MSG(g != NULL, "%s", e.msg);
    if (g) {
        CHECK_MSG(g->data_offset > (3u << 20), "header of %llu bytes", (unsigned long long)g->data_offset);
        /* 64 + 128 + 256 + 512 KiB, then 1 MiB reads (64 KiB reads took 80) */
        int want = 4 + (int)((g->data_offset - (960u << 10) + (1u << 20) - 1) >> 20);
        CHECK_MSG(l.n <= want, "%d reads for a %llu-byte header, want %d", l.n, (unsigned long long)g->data_offset, want);
        CHECK_MSG(l.first == (64u << 10) && l.max == (1u << 20) && l.in_order,
                  "first read %zu, largest %zu, in order %d", l.first, l.max, l.in_order);
        const ox_gguf_value *a = ox_gguf_find(g, "tokenizer.ggml.tokens");
        CHECK(a && a->v.arr.n == N);
        if (a && a->v.arr.n == N) {
            const ox_gguf_str *str = a->v.arr.data;
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += str[i].len != strlen(text[i]) || memcmp(str[i].s, text[i], str[i].len) != 0;
            CHECK_MSG(bad == 0, "%d strings differ", bad);
        }
        ox_gguf_free(g);
    }
    ox_host_close(h);
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_errors);
    RUN(test_header_reads);
    return check_summary("gguf");
}
