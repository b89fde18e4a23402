/* fuzz_generate.c — the generation paths on the mini model (fuzz_models.h) from arbitrary
 * bytes: sampling parameters (any float, NaN and infinities included), logit-bias and stop
 * id lists (ids in or out of the vocabulary), prompt-lookup drafting, logprobs, max_tokens,
 * and a prompt; with bit 7 of the first byte set, the rest after the parameter block is an MTP
 * drafter GGUF (a gemma4-assistant) loaded for the model and drafting the generation.
 * Invariants: coded errors only; every token output is in the vocabulary; a generation ends
 * with STOP, LENGTH or CONTEXT within max_tokens (+ a draft) steps. */
#include "fuzz.h"
#include "fuzz_models.h"
#include "decode/generate.h"
#include "text/tokenizer.h"

enum { PARAMS = 48, MAX_BIAS = 6, MAX_STOP = 3 };

static float f32_at(const uint8_t *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

static int32_t i32_at(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < PARAMS) return 0;
    ox_model *m = fuzz_lora_model(0);
    fuzz_assert(m != NULL, "the mini model loads");
    const int V = ox_model_config(m)->vocab;
    ox_gen_params p;
    ox_gen_defaults(&p);
    uint8_t flags = data[0];
    p.use_eos = flags & 1;
    p.show_special = flags >> 1 & 1;
    p.logprobs = flags & 4 ? data[1] % 24 - 2 : -1;
    p.max_tokens = 1 + data[2] % 24;
    p.draft_tokens = flags & 8 ? data[3] % (OX_GEN_DRAFT_MAX + 3) : 0;
    p.draft_fixed = flags >> 4 & 1;
    p.sampler.temperature = f32_at(data + 4);
    p.sampler.top_k = (int)(int8_t)data[8];
    p.sampler.top_p = f32_at(data + 9);
    p.sampler.min_p = flags & 32 ? f32_at(data + 13) : 0;
    p.sampler.repetition_penalty = flags & 64 ? f32_at(data + 17) : 1;
    p.sampler.seed = data[21];
    int32_t bias_ids[MAX_BIAS], stop_ids[MAX_STOP];
    float bias[MAX_BIAS];
    p.sampler.n_bias = data[22] % (MAX_BIAS + 1);
    for (int i = 0; i < p.sampler.n_bias; i++) {
        bias_ids[i] = i % 2 ? i32_at(data + 23 + 2 * i) % (V + 8) : (int32_t)data[23 + i] % V;
        bias[i] = i % 3 ? (float)(int8_t)data[30 + i] : f32_at(data + 30 + i);
    }
    p.sampler.bias_ids = bias_ids, p.sampler.bias = bias;
    p.n_stop = data[36] % (MAX_STOP + 1);
    for (int i = 0; i < p.n_stop; i++) stop_ids[i] = i32_at(data + 37 + 3 * i) % (V + 4);
    p.stop_ids = stop_ids;
    const uint8_t *rest = data + PARAMS;
    size_t n_rest = size - PARAMS;
    ox_err err = {0};
    ox_model *drafter = NULL;
    int h = -1;
    if (flags & 128) { /* the rest is an MTP drafter for the model */
        ox_model_files *mf = fuzz_gguf_files(rest, n_rest, &h);
        if (!mf) return 0;
        ox_load_opts o = {.drafter = 1};
        if (!(drafter = ox_model_load(mf, &o, &err))) {
            fuzz_expect_error(err.code, &err);
            ox_host_close(h);
            return 0;
        }
        p.drafter = drafter;
        p.draft_tokens = 1 + data[3] % 4;
        p.draft_p_min = (float)(data[46] % 4) * 0.1f; /* 0: every draft its full length */
        n_rest = 0;
    }
    int32_t prompt[32];
    int n_prompt = 1;
    prompt[0] = 2;
    for (size_t i = 0; i < n_rest && n_prompt < 32; i++) prompt[n_prompt++] = rest[i] % V;
    ox_session *s = ox_session_new(m, 48, &err);
    fuzz_assert(s != NULL, "a session");
    ox_gen *g = ox_gen_new(s, NULL, &p, &err);
    int rc = g ? ox_gen_start(g, prompt, n_prompt, &err) : err.code;
    while (rc >= 0 && (rc = ox_gen_prefill(g, 1 + data[47] % 8, &err)) > 0) {}
    int steps = 0;
    while (rc >= 0) {
        ox_gen_token t;
        rc = ox_gen_step(g, &t, &err);
        if (rc < 0) break;
        fuzz_assert(t.token >= -1 && t.token < V, "a token of the vocabulary");
        fuzz_assert(++steps <= 24 + OX_GEN_DRAFT_MAX + 2, "a generation ends within max_tokens");
        if (rc != OX_GEN_TOKEN) break;
    }
    if (rc < 0) fuzz_expect_error(rc, &err);
    ox_gen_free(g);
    ox_session_free(s);
    ox_model_free(drafter);
    if (h >= 0) ox_host_close(h);
    return 0;
}
