/* vision_gpu.c — the vision tower onto the GPU backend (vision.h ox_vision_gpu_attach): its
 * weights registered for upload beside the decoder's, in the same recorder. */
#include "formats/tensors.h"
#include "vision/unified_embed.h"
#include "vision/vision_impl.h"

int ox_vision_gpu_attach(ox_vision *v, ox_gpu *g, ox_err *err) {
    if (v->unified) return 0; /* gemma4_unified's embedder stays on the CPU */
    const ox_vision_config *c = &v->c;
    int rc = ox_gpu_offer_matrix(g, &v->patch, err);
    if (!rc) rc = ox_gpu_offer_matrix(g, &v->proj, err);
    if (!rc) rc = ox_gpu_offer_vector(g, v->std_bias, c->hidden, err);
    if (!rc) rc = ox_gpu_offer_vector(g, v->std_scale, c->hidden, err);
    for (int l = 0; l < c->n_layers && !rc; l++) {
        const vision_layer *L = &v->L[l];
        for (int i = 0; i < VL_COUNT && !rc; i++) rc = ox_gpu_offer_matrix(g, &L->w[i], err);
        const float *hv[] = {L->ln1, L->attn_post_norm, L->ln2, L->ffn_post_norm};
        for (int i = 0; i < 4 && !rc; i++) rc = ox_gpu_offer_vector(g, hv[i], c->hidden, err);
        if (!rc) rc = ox_gpu_offer_vector(g, L->q_norm, c->head_dim, err);
        if (!rc) rc = ox_gpu_offer_vector(g, L->k_norm, c->head_dim, err);
    }
    if (!rc) v->gpu = g;
    return rc;
}

void ox_vision_gpu_detach(ox_vision *v) {
    if (v) v->gpu = NULL;
}

int ox_vision_gpu_on(const ox_vision *v) { return v->gpu != NULL; }

int ox_vision_gpu_estimate(const ox_model_files *mf, ox_type quant, uint64_t *bytes, ox_err *err) {
    *bytes = 0;
    if (ox_uvision_present(mf)) return 0;
    uint64_t all = 0;
    int rc = ox_vision_estimate(mf, quant, &all, NULL, err);
    ox_vision_config c;
    if (rc > 0) rc = ox_vision_config_read(mf, &c, err);
    if (rc > 0) *bytes = all - (uint64_t)c.n_layers * sizeof(vision_layer); /* less the layer records */
    return rc;
}
