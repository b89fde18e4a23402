// mtp_oracle.cpp — llama.cpp as the oracle for the Gemma 4 MTP drafter (gemma4-assistant):
// the drafter's logits for given steps, computed by libllama exactly as its draft-mtp
// speculative decoding drives the drafter (common/speculative.cpp): the target runs the
// prompt, the drafter reads the target's KV cache (ctx_other) and gets the target's
// post-norm hidden state of the last prompt token; each next step takes the previous
// step's argmax and h_nextn at the same position.
//
//   mtp_oracle TARGET.gguf DRAFTER.gguf STEPS TOK0 TOK1 ... TOKn-1 NEXT
// prints STEPS lines "step argmax logit0 logit1 ..." (prompt TOK0..TOKn-1, NEXT the token
// the drafter starts from, at position n). Built by tools/mtp_oracle/build.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "llama.h"
#include "llama-ext.h"

static void quiet(ggml_log_level level, const char *text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: mtp_oracle TARGET DRAFTER STEPS TOK... NEXT\n");
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    int steps = atoi(argv[3]);
    std::vector<llama_token> prompt;
    for (int i = 4; i < argc - 1; i++) prompt.push_back(atoi(argv[i]));
    llama_token next = atoi(argv[argc - 1]);

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.progress_callback = [](float, void *) { return true; }; // no progress dots
    llama_model *tgt = llama_model_load_from_file(argv[1], mp);
    llama_model *dft = tgt ? llama_model_load_from_file(argv[2], mp) : nullptr;
    if (!tgt || !dft) { fprintf(stderr, "mtp_oracle: cannot load the models\n"); return 1; }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512, cp.n_batch = 512, cp.n_ubatch = 512, cp.n_threads = 1, cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32, cp.type_v = GGML_TYPE_F32;
    llama_context *ct = llama_init_from_model(tgt, cp);
    if (!ct) { fprintf(stderr, "mtp_oracle: no target context\n"); return 1; }
    llama_context_params cd = cp;
    cd.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
    cd.ctx_other = ct;
    llama_context *cx = llama_init_from_model(dft, cd);
    if (!cx) { fprintf(stderr, "mtp_oracle: no drafter context\n"); return 1; }
    llama_set_embeddings_nextn(ct, true, false);
    llama_set_embeddings_nextn(cx, true, true);

    int n = (int)prompt.size();
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = prompt[i], b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0, b.logits[i] = i == n - 1;
    }
    b.n_tokens = n;
    if (llama_decode(ct, b)) { fprintf(stderr, "mtp_oracle: target decode failed\n"); return 1; }
    const int hb = llama_model_n_embd_out(dft), nv = llama_vocab_n_tokens(llama_model_get_vocab(dft));
    std::vector<float> h(llama_get_embeddings_nextn_ith(ct, n - 1), llama_get_embeddings_nextn_ith(ct, n - 1) + hb);

    llama_batch d = llama_batch_init(1, hb, 1);
    d.token = (llama_token *)malloc(sizeof(llama_token)); // the MTP batch carries token and embd
    llama_token tok = next;
    for (int s = 0; s < steps; s++) {
        d.n_tokens = 1, d.token[0] = tok, d.pos[0] = n, d.n_seq_id[0] = 1, d.seq_id[0][0] = 0, d.logits[0] = 1;
        memcpy(d.embd, h.data(), hb * sizeof(float));
        if (llama_decode(cx, d)) { fprintf(stderr, "mtp_oracle: drafter decode failed\n"); return 1; }
        const float *l = llama_get_logits_ith(cx, 0);
        int best = 0;
        for (int v = 1; v < nv; v++) if (l[v] > l[best]) best = v;
        printf("%d %d", s, best);
        for (int v = 0; v < nv; v++) printf(" %.9g", l[v]);
        printf("\n");
        const float *hn = llama_get_embeddings_nextn_ith(cx, 0);
        h.assign(hn, hn + hb);
        tok = best;
    }
    return 0;
}
