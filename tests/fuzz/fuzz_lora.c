/* fuzz_lora.c — the LoRA adapter reader (model/lora_read.c) against mini models of several
 * shapes (fuzz_models.h): input tag byte, bit 0: 0 -> a GGUF adapter (the rest); 1 -> PEFT
 * (u32 little-endian config length, the adapter_config.json, then adapter_model.safetensors);
 * the bits above, modulo FUZZ_LORA_SHAPES: the model's shape. A loaded adapter is attached, two
 * tokens run through it, and it is detached again. */
#include "fuzz.h"
#include "fuzz_models.h"
#include "model/lora.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    ox_model *m = fuzz_lora_model((data[0] >> 1) % FUZZ_LORA_SHAPES);
    fuzz_assert(m != NULL, "the mini model loads");
    int h[2], n = 1;
    if (data[0] & 1) {
        uint32_t k;
        if (size < 5) return 0;
        memcpy(&k, data + 1, 4);
        if (k > size - 5) return 0;
        h[0] = ox_host_open_mem("adapter_config.json", data + 5, k);
        h[1] = ox_host_open_mem("adapter_model.safetensors", data + 5 + k, size - 5 - k);
        n = 2;
    } else {
        h[0] = ox_host_open_mem("adapter.gguf", data + 1, size - 1);
    }
    ox_err err = {0};
    ox_lora *a = ox_lora_load(m, h, n, &err);
    if (!a) {
        fuzz_expect_error(err.code, &err);
    } else {
        float scale = 0.5f;
        fuzz_assert(ox_model_set_lora(m, &a, &scale, 1, &err) == 0, "attach");
        ox_session *s = ox_session_new(m, 8, &err);
        fuzz_assert(s != NULL, "session");
        int32_t tok[2] = {2, (int32_t)(size % (size_t)ox_model_config(m)->vocab)};
        ox_forward_io io = {tok, 2, NULL, NULL, NULL, 0, NULL};
        int rc = ox_forward(s, &io, &err);
        if (rc) fuzz_expect_error(rc, &err);
        ox_session_free(s);
        ox_model_set_lora(m, NULL, NULL, 0, NULL);
        ox_lora_free(a);
    }
    for (int i = 0; i < n; i++) ox_host_close(h[i]);
    return 0;
}
