/* gpu_attach.c — a model onto the GPU backend (gpu/record.h): every weight the forward's ops
 * name is registered for upload, and the forward records its steps from then on. */
#include "model/gpu_attach.h"

#include "model/model_impl.h"

#include <stdlib.h>

#define MATS_PER_LAYER 14 /* q k v o gate up down ple_gate ple_proj router + 4 expert tensors */

/* The matrices a GPU step names (the forward's dense ops, the router and the stacked experts of
 * its m->gpu_layers layers), into out (n of them, at most 2 + MATS_PER_LAYER per layer); the
 * tied embedding / head first when the head runs there. */
static int step_matrices(ox_model *m, ox_matrix **out) {
    const ox_config *c = &m->c;
    int n = 0;
    if (m->gpu_layers == c->n_layers) out[n++] = &m->embd;
    if (c->ple_dim > 0) out[n++] = &m->ple_model_proj;
    for (int l = 0; l < m->gpu_layers; l++) {
        layer_w *w = &m->L[l];
        const ox_layer_cfg *lc = &c->layers[l];
        ox_matrix *mats[] = {&w->q,        &w->k,      &w->v,           &w->o,        &w->gate,
                             &w->up,       &w->down,   &w->ple_gate,    &w->ple_proj, &w->router,
                             &w->exp_gate, &w->exp_up, &w->exp_gate_up, &w->exp_down};
        for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
            if (!(lc->shared && (i == 1 || i == 2)) && !(lc->k_eq_v && i == 2) && (c->ple_dim > 0 || i < 7 || i > 8) &&
                mats[i]->rows > 0)
                out[n++] = mats[i];
    }
    return n;
}

static int register_weights(ox_model *m, ox_gpu *g, ox_err *err) {
    const ox_config *c = &m->c;
    int H = c->hidden, P = c->ple_dim;
    ox_matrix **mats = malloc((size_t)(2 + MATS_PER_LAYER * c->n_layers) * sizeof *mats);
    if (!mats) return ox_errf(err, OX_E_NOMEM, "out of memory for the GPU weight list");
    int rc = 0;
    /* stacked experts first: registered with their rows per expert (the generic add below
     * finds them registered) */
    for (int l = 0; l < m->gpu_layers && c->moe && !rc; l++) {
        const layer_w *w = &m->L[l];
        const ox_matrix *ex[] = {&w->exp_gate, &w->exp_up, &w->exp_gate_up, &w->exp_down};
        for (size_t i = 0; i < sizeof ex / sizeof *ex && !rc; i++)
            if (ex[i]->rows > 0 && !ox_gpu_has_type(g, (int)ex[i]->type))
                rc = ox_errf(err, OX_E_UNSUPPORTED,
                             "gpu: layer %d's experts are of weight type %d, which has no GPU kernel", l,
                             (int)ex[i]->type);
            else if (ex[i]->rows > 0 && ox_gpu_add_experts(g, ex[i], c->n_experts, err) < 0)
                rc = err ? err->code : OX_E_FORMAT;
    }
    int n = step_matrices(m, mats);
    for (int i = 0; i < n && !rc; i++) rc = ox_gpu_offer_matrix(g, mats[i], err);
    free(mats);
    TRY(rc);
    if (m->gpu_layers == c->n_layers) TRY(ox_gpu_offer_vector(g, m->out_norm, H, err));
    if (P > 0) TRY(ox_gpu_offer_vector(g, m->ple_proj_norm, P, err));
    for (int l = 0; l < m->gpu_layers; l++) {
        const layer_w *w = &m->L[l];
        const ox_layer_cfg *lc = &c->layers[l];
        TRY(ox_gpu_offer_vector(g, w->attn_norm, H, err));
        TRY(ox_gpu_offer_vector(g, w->q_norm, lc->head_dim, err));
        if (!lc->shared) TRY(ox_gpu_offer_vector(g, w->k_norm, lc->head_dim, err));
        TRY(ox_gpu_offer_vector(g, w->post_attn_norm, H, err));
        TRY(ox_gpu_offer_vector(g, w->ffn_norm, H, err));
        TRY(ox_gpu_offer_vector(g, w->post_ffw_norm, H, err));
        if (P > 0) TRY(ox_gpu_offer_vector(g, w->ple_post_norm, H, err));
        if (c->moe) {
            TRY(ox_gpu_offer_vector(g, w->post_ffw_norm_1, H, err));
            TRY(ox_gpu_offer_vector(g, w->pre_ffw_norm_2, H, err));
            TRY(ox_gpu_offer_vector(g, w->post_ffw_norm_2, H, err));
            TRY(ox_gpu_offer_vector(g, w->router_scale, H, err));
            TRY(ox_gpu_offer_vector(g, w->expert_scale, c->n_experts, err));
        }
    }
    return 0;
}

const char *ox_gpu_cpu_only(const ox_config *c, const ox_load_opts *o) {
    if (o->stream != OX_STREAM_NONE) return "gpu: streamed weights (streamWeights) run on the CPU only";
    if (c->bidirectional) return "gpu: bidirectional attention runs on the CPU only";
    if (c->assistant) return "gpu: an MTP drafter runs on the CPU only";
    return NULL;
}

/* Why the model cannot run on the GPU backend, or NULL when it can. */
static const char *cpu_only(const ox_model *m) {
    if (m->n_lora > 0) return "gpu: LoRA adapters run on the CPU only";
    if (m->wc) return "gpu: streamed weights (streamWeights) run on the CPU only";
    return ox_gpu_cpu_only(&m->c, &m->opts);
}

int ox_model_gpu_attach(ox_model *m, int layers, uint32_t types, ox_err *err) {
    if (m->gpu) return 0;
    const char *why = cpu_only(m);
    if (why) return ox_errf(err, OX_E_UNSUPPORTED, "%s", why);
    int G = layers <= 0 || layers > m->c.n_layers ? m->c.n_layers : layers;
    ox_gpu *g = ox_gpu_new(types, err);
    if (!g) return err ? err->code : OX_E_NOMEM;
    m->gpu_layers = G;
    int rc = register_weights(m, g, err);
    if (rc) {
        ox_gpu_free(g);
        m->gpu_layers = 0;
        return rc;
    }
    m->gpu = g;
    return 0;
}

void ox_model_gpu_detach(ox_model *m) {
    ox_gpu_free(m->gpu);
    m->gpu = NULL;
    m->gpu_layers = 0;
}

int ox_model_gpu_layers(const ox_model *m) { return m->gpu ? m->gpu_layers : 0; }

int ox_model_gpu_bridge(const ox_model *m, int l) {
    const ox_config *c = &m->c;
    int G = m->gpu ? m->gpu_layers : c->n_layers, slot = 0;
    for (int j = 0; j < G && j <= l; j++) {
        int read = 0;
        for (int i = G; i < c->n_layers; i++) read |= c->layers[i].shared && c->layers[i].kv_src == j;
        if (read && j == l) return slot;
        slot += read;
    }
    return l >= c->n_layers ? slot : -1;
}

uint64_t ox_model_gpu_release(ox_model *m) {
    if (!m->gpu) return 0;
    ox_matrix **mats = malloc((size_t)(2 + MATS_PER_LAYER * m->c.n_layers) * sizeof *mats);
    if (!mats) return 0; /* nothing released: the model keeps its CPU copies */
    int n = step_matrices(m, mats);
    uint64_t freed = 0;
    for (int i = 0; i < n; i++) {
        ox_matrix *M = mats[i];
        if ((M == &m->embd && !m->opts.tables_on_host) || !M->data) continue; /* embeddings read from it */
        if (!ox_gpu_has(m->gpu, M)) continue;                                 /* its op runs on the CPU */
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

ox_gpu *ox_model_gpu(const ox_model *m) { return m->gpu; }

int ox_model_gpu_load_begin(ox_model *m, uint64_t mat_types, ox_err *err) {
    const ox_load_opts *o = &m->opts;
    /* every matrix with a kernel and no stacked experts (they go up per expert, at attach);
     * otherwise the model loads into wasm memory and attaches after (a layer split too: the
     * caller then does not set gpu_put) */
    int go = o->gpu_put && !cpu_only(m) && !m->c.moe && !(mat_types & ~o->gpu_types);
    if (m->opts.tables_on_host < 0) m->opts.tables_on_host = go;
    if (!go) return 0;
    if (!(m->gpu = ox_gpu_new((uint32_t)o->gpu_types, err))) return err ? err->code : OX_E_NOMEM;
    m->gpu_layers = m->c.n_layers;
    m->gpu_only = 1; /* its matrices will be on the GPU only */
    return 1;
}

int ox_model_gpu_put(ox_model *m, ox_matrix *M, uint64_t row0, uint64_t rows, const void *bytes, ox_err *err) {
    /* registered (keyed by M) at its first rows, which stand in for its data: the table's
     * pointer of a weight put here is never read, the host has its bytes already */
    void *data = M->data;
    if (!data) M->data = (void *)bytes;
    int id = ox_gpu_add_matrix(m->gpu, M, err);
    M->data = data;
    if (id < 0) return id;
    int32_t entry[OX_GPU_ENTRY_WORDS] = {id, 0, (int32_t)M->type, M->rows, M->cols, 0, (int32_t)M->row_bytes, 1};
    return m->opts.gpu_put(m->opts.gpu_put_ud, entry, row0, rows, bytes, err);
}

int ox_model_gpu_load_end(ox_model *m, ox_err *err) { return register_weights(m, m->gpu, err); }
