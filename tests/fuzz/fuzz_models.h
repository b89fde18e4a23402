/* fuzz_models.h — the miniature models the fuzz corpus (make_corpus.c) and the harnesses that
 * need a loaded model (fuzz_lora.c) share, and opening an input as a GGUF. */
#ifndef OX_FUZZ_MODELS_H
#define OX_FUZZ_MODELS_H

#include <stdio.h>
#include <unistd.h>

#include "formats/tensors.h"
#include "fuzz.h"
#include "host/hostfile.h"
#include "model/model.h"
#include "writers/synth.h"

/* The input as one GGUF file (host handle *h): its directory, or NULL when refused (the error
 * report checked, the handle closed). */
static inline ox_model_files *fuzz_gguf_files(const uint8_t *data, size_t size, int *h) {
    ox_err err = {0};
    *h = ox_host_open_mem("fuzz.gguf", data, size);
    ox_model_files *mf = ox_files_open(h, 1, &err);
    if (!mf) {
        fuzz_expect_error(err.code, &err);
        ox_host_close(*h);
    }
    return mf;
}

/* The smallest model synth.c accepts, so the seeds stay a few tens of KB. */
static inline ox_synth fuzz_mini_synth(const char *preset) {
    ox_synth s;
    ox_synth_preset(&s, preset, NULL);
    s.hidden = 32, s.layers = 2, s.heads = 2, s.kv_heads = 1, s.head_dim = 16, s.global_head_dim = 32;
    s.ffn = 64, s.ple = s.ple ? 16 : 0, s.vocab = 384, s.user_tokens = 4, s.swa_period = 2, s.kv_shared = 0;
    s.window = 4, s.ctx = 64, s.global_kv_heads = 1, s.moe_ffn = 32, s.n_experts = 4, s.top_k = 2;
    s.type = OX_Q8_0, s.embd_type = OX_Q8_0;
    return s;
}

/* The models fuzz_lora patches, by shape: 0 the mini tiny model with a third layer, KV-shared
 * (sliding, as layer 0); 1 the mini keqv model (full layers without attn_v); 2 the mini MoE
 * model, wider. Each written once to a temporary file and loaded (kept for the process). NULL
 * on failure, with the reason on stderr. */
#define FUZZ_LORA_SHAPES 3
static inline ox_model *fuzz_lora_model(int shape) {
    static ox_model *models[FUZZ_LORA_SHAPES];
    ox_model **m = &models[shape];
    if (*m) return *m;
    ox_synth s = fuzz_mini_synth(shape == 1 ? "keqv" : shape == 2 ? "moe" : "tiny");
    if (shape == 0) s.layers = 3, s.kv_shared = 1;
    if (shape == 2) s.hidden = 48, s.ffn = 96;
    char p[64];
    snprintf(p, sizeof p, "/tmp/oxinfer-fuzz-lora-%d-%d.gguf", (int)getpid(), shape);
    ox_err err = {0};
    int h = ox_synth_write_gguf(&s, p, &err) ? -1 : ox_host_open_path(p, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    ox_load_opts o = {0};
    *m = mf ? ox_model_load(mf, &o, &err) : NULL;
    if (!*m) fprintf(stderr, "fuzz_lora_model %d: %s\n", shape, err.msg);
    remove(p); /* resident now; the PLE rows are read through the open handle */
    return *m;
}

#endif
