/* fuzz_config.c — config.json -> ox_config (HF keys, text_config, derived per-layer values);
 * an accepted config must survive ox_config_to_json -> ox_config_from_json unchanged. */
#include "formats/config.h"
#include "fuzz.h"
#include "formats/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ox_err err = {0};
    ox_json *doc = ox_json_parse((const char *)data, size, "config.json", &err);
    if (!doc) {
        fuzz_expect_error(err.code, &err);
        return 0;
    }
    static ox_config c, c2;
    memset(&c, 0, sizeof c);
    int rc = ox_config_from_json(doc, &c, "config.json", &err);
    ox_json_free(doc);
    if (rc) {
        fuzz_expect_error(rc, &err);
        return 0;
    }
    fuzz_assert(c.n_layers >= 1 && c.n_layers <= OX_MAX_LAYERS, "layer count");
    for (int l = 0; l < c.n_layers; l++) {
        const ox_layer_cfg *L = &c.layers[l];
        fuzz_assert(L->head_dim > 0 && L->n_kv_heads > 0 && L->kv_src >= 0 && L->kv_src <= l, "layer shape");
        fuzz_assert(L->rope_pairs >= 0 && 2 * L->rope_pairs <= L->head_dim, "rope pairs");
    }
    ox_strbuf b = {0};
    ox_config_to_json(&c, &b);
    if (b.oom) return ox_sb_free(&b), 0;
    ox_json *back = ox_json_parse(b.s, b.len, "roundtrip.json", &err);
    fuzz_assert(back != NULL, "ox_config_to_json output parses");
    memset(&c2, 0, sizeof c2);
    rc = ox_config_from_json(back, &c2, "roundtrip.json", &err);
    if (rc) fprintf(stderr, "round trip: %s\n%s\n", err.msg, b.s);
    fuzz_assert(rc == 0, "ox_config_to_json output loads");
    for (int l = 0; l < c.n_layers; l++)
        fuzz_assert(memcmp(&c.layers[l], &c2.layers[l], sizeof c.layers[l]) == 0, "per-layer values round trip");
    ox_json_free(back);
    ox_sb_free(&b);
    return 0;
}
