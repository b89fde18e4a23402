/* fuzz_gguf.c — the GGUF reader (header, metadata, tensor infos), the typed getters, the
 * config from GGUF metadata and the tensor directory (ox_files_open) on arbitrary bytes. */
#include "formats/config.h"
#include "fuzz.h"
#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/tensors.h"
#include "text/tokenizer.h"

static void walk_metadata(const ox_gguf *g) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const char *key = g->kv[i].key;
        const ox_gguf_value *v = &g->kv[i].val;
        fuzz_assert(ox_gguf_find(g, key) != NULL, "key found by name");
        ox_err e = {0};
        int64_t i64;
        double f64;
        uint32_t u32;
        const char *s;
        const ox_gguf_value *arr;
        ox_gguf_val_i64(v, &i64);
        ox_gguf_val_f64(v, &f64);
        int rc = ox_gguf_get_u32(g, key, &u32, &e);
        if (rc) fuzz_expect_error(rc, &e);
        if ((rc = ox_gguf_get_str(g, key, &s, &e)) == 0) fuzz_assert(strlen(s) <= v->v.str.len, "string length");
        if (ox_gguf_get_arr(g, key, &arr, &e) == 0) {
            for (uint64_t k = 0; k < arr->v.arr.n && k < 64; k++) {
                int b;
                ox_gguf_arr_i64(arr, k, &i64);
                ox_gguf_arr_f64(arr, k, &f64);
                ox_gguf_arr_bool(arr, k, &b);
                const ox_gguf_str *str = ox_gguf_arr_str(arr, k);
                if (str) fuzz_assert(str->s && str->s[str->len] == 0, "array string terminated");
            }
            fuzz_assert(ox_gguf_arr_str(arr, arr->v.arr.n) == NULL, "array index past the end");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int h = ox_host_open_mem("fuzz.gguf", data, size);
    ox_err err = {0};
    ox_gguf *g = ox_gguf_open(h, &err);
    if (!g) {
        fuzz_expect_error(err.code, &err);
    } else {
        walk_metadata(g);
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const ox_gguf_tensor *t = &g->tensors[i];
            fuzz_assert(t->offset <= size && t->nbytes <= size - t->offset, "tensor data inside the file");
            fuzz_assert(ox_gguf_find_tensor(g, t->name) == t, "tensor found by name");
        }
        static ox_config c;
        ox_err e = {0};
        int rc = ox_config_from_gguf(g, &c, &e);
        if (rc) fuzz_expect_error(rc, &e);
        ox_tokenizer *tok = ox_tokenizer_from_gguf(g, &e);
        if (!tok) {
            fuzz_expect_error(e.code, &e);
        } else {
            static const char text[] = "<bos>the t\xC3\xA9xt\n\n\xFF";
            int32_t ids[64];
            int n = ox_tokenize(tok, text, sizeof text - 1, OX_TOK_ADD_BOS | OX_TOK_SPECIAL, ids, 64, &e);
            if (n < 0) fuzz_expect_error(n, &e);
            for (int i = 0; i < n && i < 64; i++)
                fuzz_assert(ids[i] >= 0 && ids[i] < ox_tokenizer_vocab(tok), "id in range");
            ox_tokenizer_free(tok);
        }
        ox_gguf_free(g);
    }
    ox_model_files *mf = ox_files_open(&h, 1, &err);
    if (!mf) {
        fuzz_expect_error(err.code, &err);
    } else {
        static uint8_t row[1 << 16];
        for (int i = 0; i < ox_files_count(mf); i++) {
            const ox_tensor *t = ox_files_tensor(mf, i);
            uint64_t rb;
            if (ox_row_bytes(t->type, t->ne[0], &rb, NULL) == 0 && rb <= sizeof row && ox_tensor_rows(t) > 0) {
                int rc = ox_tensor_read_rows(t, ox_tensor_rows(t) - 1, 1, row, &err);
                if (rc) fuzz_expect_error(rc, &err);
            }
        }
        ox_files_free(mf);
    }
    ox_host_close(h);
    return 0;
}
