/* gpu_attach.c — a model onto the GPU backend (gpu/record.h): every weight the forward's ops
 * name is registered for upload, and the forward records its steps from then on. */
#include "model/gpu_attach.h"

#include "model/model_impl.h"

static int add_m(ox_gpu *g, const ox_matrix *M, ox_err *err) {
    int id = M->rows > 0 ? ox_gpu_add_matrix(g, M, err) : 0;
    return id < 0 ? id : 0;
}

static int add_v(ox_gpu *g, const float *v, int n, ox_err *err) {
    int id = v ? ox_gpu_add_vector(g, v, n, err) : 0;
    return id < 0 ? id : 0;
}

static int register_weights(const ox_model *m, ox_gpu *g, ox_err *err) {
    const ox_config *c = &m->c;
    int H = c->hidden, P = c->ple_dim;
    TRY(add_m(g, &m->embd, err));
    TRY(add_v(g, m->out_norm, H, err));
    if (P > 0) {
        TRY(add_m(g, &m->ple_model_proj, err));
        TRY(add_v(g, m->ple_proj_norm, P, err));
    }
    for (int l = 0; l < c->n_layers; l++) {
        const layer_w *w = &m->L[l];
        const ox_layer_cfg *lc = &c->layers[l];
        const ox_matrix *mats[] = {&w->q, &w->k, &w->v, &w->o, &w->gate, &w->up, &w->down, &w->ple_gate, &w->ple_proj};
        for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
            if (!(lc->shared && (i == 1 || i == 2)) && !(lc->k_eq_v && i == 2) && (P > 0 || i < 7))
                TRY(add_m(g, mats[i], err));
        TRY(add_v(g, w->attn_norm, H, err));
        TRY(add_v(g, w->q_norm, lc->head_dim, err));
        if (!lc->shared) TRY(add_v(g, w->k_norm, lc->head_dim, err));
        TRY(add_v(g, w->post_attn_norm, H, err));
        TRY(add_v(g, w->ffn_norm, H, err));
        TRY(add_v(g, w->post_ffw_norm, H, err));
        if (P > 0) TRY(add_v(g, w->ple_post_norm, H, err));
    }
    return 0;
}

int ox_model_gpu_attach(ox_model *m, ox_err *err) {
    if (m->gpu) return 0;
    if (m->c.moe) return ox_errf(err, OX_E_UNSUPPORTED, "gpu: mixture-of-experts layers run on the CPU only");
    if (m->wc) return ox_errf(err, OX_E_UNSUPPORTED, "gpu: streamed weights (streamWeights) run on the CPU only");
    if (m->n_lora > 0) return ox_errf(err, OX_E_UNSUPPORTED, "gpu: LoRA adapters run on the CPU only");
    if (m->c.bidirectional) return ox_errf(err, OX_E_UNSUPPORTED, "gpu: bidirectional attention runs on the CPU only");
    ox_gpu *g = ox_gpu_new(err);
    if (!g) return err ? err->code : OX_E_NOMEM;
    int rc = register_weights(m, g, err);
    if (rc) {
        ox_gpu_free(g);
        return rc;
    }
    m->gpu = g;
    return 0;
}

void ox_model_gpu_detach(ox_model *m) {
    ox_gpu_free(m->gpu);
    m->gpu = NULL;
}

const ox_gpu *ox_model_gpu(const ox_model *m) { return m->gpu; }
