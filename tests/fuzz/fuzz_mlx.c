/* fuzz_mlx.c — config.json -> the MLX quantization block (formats/mlx.h): defaults, per-module
 * entries (objects, booleans), the HF quantization_config fallback. An accepted block holds
 * only supported parameters, and every module lookup gives one of them. (Whole MLX checkpoints
 * are fuzz_hf's: its corpus has one.) */
#include "formats/mlx.h"
#include "fuzz.h"
#include "formats/json.h"

static int valid(ox_mlx_q q, int allow_off) {
    return (allow_off && q.bits == 0) || ((q.bits == 4 || q.bits == 8) && (q.group == 32 || q.group == 64));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ox_err err = {0};
    ox_json *doc = ox_json_parse((const char *)data, size, "config.json", &err);
    if (!doc) {
        fuzz_expect_error(err.code, &err);
        return 0;
    }
    ox_mlx_config c;
    int rc = ox_mlx_config_parse(doc, "config.json", &c, &err);
    ox_json_free(doc);
    if (rc) {
        fuzz_expect_error(rc, &err);
        fuzz_assert(c.n == 0 && c.dflt.bits == 0 && !c.module, "a failed parse leaves nothing");
        return 0;
    }
    fuzz_assert(c.dflt.bits == 0 ? c.n == 0 : valid(c.dflt, 0), "defaults supported");
    for (int i = 0; i < c.n; i++) {
        fuzz_assert(valid(c.q[i], 1), "per-module entry supported");
        ox_mlx_q q = ox_mlx_config_for(&c, c.module[i]);
        fuzz_assert(valid(q, 1), "lookup gives a supported entry");
    }
    fuzz_assert(ox_mlx_config_for(&c, "\x01no such module").bits == c.dflt.bits, "unknown module: the defaults");
    ox_mlx_config_free(&c);
    return 0;
}
