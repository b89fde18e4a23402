/* gpu_attach.c — a model onto the GPU backend (gpu/record.h): every weight the forward's ops
 * name is registered for upload, and the forward records its steps from then on. */
#include "model/gpu_attach.h"

#include "model/model_impl.h"

#include <stdlib.h>

static int add_m(ox_gpu *g, const ox_matrix *M, ox_err *err) {
    int id = M->rows > 0 ? ox_gpu_add_matrix(g, M, err) : 0;
    return id < 0 ? id : 0;
}

static int add_v(ox_gpu *g, const float *v, int n, ox_err *err) {
    int id = v ? ox_gpu_add_vector(g, v, n, err) : 0;
    return id < 0 ? id : 0;
}

/* The matrices a GPU step names (the forward's dense ops), into out (n of them); the tied
 * embedding / head first. */
static int step_matrices(ox_model *m, ox_matrix **out) {
    const ox_config *c = &m->c;
    int n = 0;
    out[n++] = &m->embd;
    if (c->ple_dim > 0) out[n++] = &m->ple_model_proj;
    for (int l = 0; l < c->n_layers; l++) {
        layer_w *w = &m->L[l];
        const ox_layer_cfg *lc = &c->layers[l];
        ox_matrix *mats[] = {&w->q, &w->k, &w->v, &w->o, &w->gate, &w->up, &w->down, &w->ple_gate, &w->ple_proj};
        for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
            if (!(lc->shared && (i == 1 || i == 2)) && !(lc->k_eq_v && i == 2) && (c->ple_dim > 0 || i < 7) &&
                mats[i]->rows > 0)
                out[n++] = mats[i];
    }
    return n;
}

static int register_weights(ox_model *m, ox_gpu *g, ox_err *err) {
    const ox_config *c = &m->c;
    int H = c->hidden, P = c->ple_dim;
    ox_matrix **mats = malloc((size_t)(2 + 9 * c->n_layers) * sizeof *mats);
    if (!mats) return ox_errf(err, OX_E_NOMEM, "out of memory for the GPU weight list");
    int n = step_matrices(m, mats), rc = 0;
    for (int i = 0; i < n && !rc; i++) rc = add_m(g, mats[i], err);
    free(mats);
    TRY(rc);
    TRY(add_v(g, m->out_norm, H, err));
    if (P > 0) TRY(add_v(g, m->ple_proj_norm, P, err));
    for (int l = 0; l < c->n_layers; l++) {
        const layer_w *w = &m->L[l];
        const ox_layer_cfg *lc = &c->layers[l];
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

uint64_t ox_model_gpu_release(ox_model *m) {
    if (!m->gpu) return 0;
    ox_matrix **mats = malloc((size_t)(2 + 9 * m->c.n_layers) * sizeof *mats);
    if (!mats) return 0; /* nothing released: the model keeps its CPU copies */
    int n = step_matrices(m, mats);
    uint64_t freed = 0;
    for (int i = 0; i < n; i++) {
        ox_matrix *M = mats[i];
        if ((M == &m->embd && !m->opts.tables_on_host) || !M->data) continue; /* embeddings read from it */
        for (int a = 0; a < m->n_allocs; a++)
            if (m->allocs[a] == M->data) {
                free(m->allocs[a]);
                m->allocs[a] = NULL;
                M->data = NULL;
                freed += (uint64_t)M->rows * M->row_bytes;
                break;
            }
    }
    free(mats);
    m->weight_bytes -= freed;
    m->gpu_only = freed > 0;
    return freed;
}

const ox_gpu *ox_model_gpu(const ox_model *m) { return m->gpu; }
