/* fuzz_models.h — the miniature models the fuzz corpus (make_corpus.c) and the harnesses that
 * need a loaded model (fuzz_lora.c) share. */
#ifndef OX_FUZZ_MODELS_H
#define OX_FUZZ_MODELS_H

#include <stdio.h>
#include <unistd.h>

#include "host/hostfile.h"
#include "model/model.h"
#include "writers/synth.h"

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

/* The model fuzz_lora patches: the mini tiny model with a third layer, KV-shared (sliding, as
 * layer 0), written once to a temporary file and loaded (kept for the process). NULL on
 * failure, with the reason on stderr. */
static inline ox_model *fuzz_lora_model(void) {
    static ox_model *m;
    if (m) return m;
    ox_synth s = fuzz_mini_synth("tiny");
    s.layers = 3, s.kv_shared = 1;
    char p[64];
    snprintf(p, sizeof p, "/tmp/oxinfer-fuzz-lora-%d.gguf", (int)getpid());
    ox_err err = {0};
    int h = ox_synth_write_gguf(&s, p, &err) ? -1 : ox_host_open_path(p, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    ox_load_opts o = {0};
    m = mf ? ox_model_load(mf, &o, &err) : NULL;
    if (!m) fprintf(stderr, "fuzz_lora_model: %s\n", err.msg);
    remove(p); /* resident now; the PLE rows are read through the open handle */
    return m;
}

#endif
