/* drafter_mtp.c — see drafter_mtp.h. The graph is llama.cpp's gemma4-assistant one, step by
 * step; the target's caches are read where the target's own attention reads them. */
#include "model/drafter_mtp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_impl.h"

struct ox_mtp {
    const ox_model *d;
    ox_session *s;
    int src[2]; /* target cache read by drafter sliding [0] / full [1] layers */
    int Hb, D, V;
    float *xh, *cur, *a, *q, *att, *o, *g, *u, *hn, *scores, *logits, *h;
    uint8_t *stage; /* one stored token_embd row of the target (tables on host) */
    ox_scratch ws;
};

void ox_mtp_free(ox_mtp *t) {
    if (!t) return;
    free(t->xh), free(t->cur), free(t->a), free(t->q), free(t->att), free(t->o);
    free(t->g), free(t->u), free(t->hn), free(t->scores), free(t->logits), free(t->h), free(t->stage);
    ox_scratch_free(&t->ws);
    free(t);
}

/* The target layer whose cache drafter layers of this kind read: llama.cpp takes the last
 * sliding (n_layer - 2) and the last full (n_layer - 1) layer of a Gemma 4 target. */
static int last_layer_of_kind(const ox_config *c, int full) {
    for (int l = c->n_layers - 1; l >= 0; l--)
        if (c->layers[l].full == full) return l;
    return -1;
}

int ox_mtp_check(const ox_model *drafter, const ox_model *target, ox_err *err) {
    const ox_config *dc = &drafter->c, *tc = &target->c;
    if (!dc->assistant) return ox_errf(err, OX_E_CONFIG, "MTP drafter: the drafter model is not a gemma4-assistant");
    if (dc->backbone_hidden != tc->hidden || dc->vocab != tc->vocab)
        return ox_errf(err, OX_E_CONFIG,
                       "MTP drafter: it is made for a target of width %d and vocab %d, the target has "
                       "width %d and vocab %d",
                       dc->backbone_hidden, dc->vocab, tc->hidden, tc->vocab);
    for (int l = 0; l < dc->n_layers; l++) {
        const ox_layer_cfg *lc = &dc->layers[l];
        int tl = last_layer_of_kind(tc, lc->full);
        if (tl < 0)
            return ox_errf(err, OX_E_CONFIG, "MTP drafter: layer %d is %s attention, the target has no such layer", l,
                           lc->full ? "full" : "sliding");
        const ox_layer_cfg *tlc = &tc->layers[tl];
        if (lc->head_dim != tlc->head_dim || dc->n_heads % tlc->n_kv_heads)
            return ox_errf(err, OX_E_CONFIG,
                           "MTP drafter: layer %d (%d heads of %d) cannot read target layer %d's "
                           "cache (%d KV heads of %d)",
                           l, dc->n_heads, lc->head_dim, tl, tlc->n_kv_heads, tlc->head_dim);
    }
    return 0;
}

ox_mtp *ox_mtp_new(const ox_model *drafter, ox_session *target, ox_err *err) {
    const ox_config *dc = &drafter->c, *tc = &target->m->c;
    if (ox_mtp_check(drafter, target->m, err)) return NULL;
    int width = 0;
    for (int l = 0; l < dc->n_layers; l++)
        if (dc->n_heads * dc->layers[l].head_dim > width) width = dc->n_heads * dc->layers[l].head_dim;
    ox_mtp *t = calloc(1, sizeof *t);
    if (!t) return ox_errf(err, OX_E_NOMEM, "MTP drafter: out of memory"), NULL;
    t->d = drafter, t->s = target;
    for (int full = 0; full < 2; full++) { /* a kind the drafter lacks reads nothing */
        int tl = last_layer_of_kind(tc, full);
        t->src[full] = tl < 0 ? -1 : tc->layers[tl].kv_src;
    }
    t->Hb = tc->hidden, t->D = dc->hidden, t->V = dc->vocab;
    int I = 0;
    for (int l = 0; l < dc->n_layers; l++)
        if (dc->layers[l].ffn > I) I = dc->layers[l].ffn;
    size_t F = sizeof(float);
    t->xh = malloc(2 * (size_t)t->Hb * F);
    t->cur = malloc((size_t)t->D * F), t->a = malloc((size_t)t->D * F), t->o = malloc((size_t)t->D * F);
    t->hn = malloc((size_t)t->D * F);
    t->q = malloc((size_t)width * F), t->att = malloc((size_t)width * F);
    t->g = malloc((size_t)I * F), t->u = malloc((size_t)I * F);
    t->scores = malloc((size_t)target->max_ctx * F);
    t->logits = malloc((size_t)t->V * F), t->h = malloc((size_t)t->Hb * F);
    t->stage = malloc(target->m->embd_row_bytes ? target->m->embd_row_bytes : 1);
    if (!t->xh || !t->cur || !t->a || !t->o || !t->hn || !t->q || !t->att || !t->g || !t->u || !t->scores ||
        !t->logits || !t->h || !t->stage) {
        ox_mtp_free(t);
        return ox_errf(err, OX_E_NOMEM, "MTP drafter: out of memory for its buffers"), NULL;
    }
    return t;
}

/* The drafter's input: the target's embedding of token, scaled by sqrt(Hb), then h. */
static int input(ox_mtp *t, int token, const float *h_in, ox_err *err) {
    ox_model *m = t->s->m;
    if (m->opts.tables_on_host) {
        TRY(ox_tensor_read_rows(m->t_embd, (uint64_t)token, 1, t->stage, err));
        m->host_bytes += m->embd_row_bytes;
        m->rows_fetched++;
        ox_dequantize_row(m->t_embd->type, t->stage, t->xh, (size_t)t->Hb);
    } else {
        ox_dequantize_row(m->embd.type, (const uint8_t *)m->embd.data + (size_t)token * m->embd.row_bytes, t->xh,
                          (size_t)t->Hb);
    }
    float sH = sqrtf((float)t->Hb);
    for (int i = 0; i < t->Hb; i++) t->xh[i] *= sH;
    memcpy(t->xh + t->Hb, h_in, (size_t)t->Hb * sizeof(float));
    return 0;
}

/* Queries of position pos over the target cache's keys 0..pos-1 (causal; sliding layers only
 * the window's). Scale 1: the q/k norms carry it, as in the target. */
static void attend(ox_mtp *t, const ox_layer_cfg *lc, int pos) {
    const ox_kv *kc = &t->s->kv[t->src[lc->full]];
    int nh = t->d->c.n_heads, hd = lc->head_dim, group = nh / kc->n_heads;
    int lo = lc->window > 0 && pos - lc->window + 1 > 0 ? pos - lc->window + 1 : 0, hi = pos - 1;
    for (int h = 0; h < nh; h++)
        ox_kv_attend(kc, h / group, t->q + (size_t)h * hd, lo, hi, t->scores, t->att + (size_t)h * hd);
}

static int layer(ox_mtp *t, int l, int pos, ox_err *err) {
    const ox_config *c = &t->d->c;
    const ox_layer_cfg *lc = &c->layers[l];
    const layer_w *w = &t->d->L[l];
    int D = t->D, nh = c->n_heads, hd = lc->head_dim, I = lc->ffn;
    float eps = c->rms_eps;
    ox_scratch *ws = &t->ws;
    ox_rmsnorm(t->a, t->cur, w->attn_norm, D, eps);
    TRY(ox_matmul(ws, &w->q, t->a, 1, t->q, err));
    for (int h = 0; h < nh; h++) ox_rmsnorm(t->q + (size_t)h * hd, t->q + (size_t)h * hd, w->q_norm, hd, eps);
    ox_rope_heads(t->q, nh, (size_t)hd, hd, pos, lc->rope_pairs, lc->rope_base, c->rope_factor);
    attend(t, lc, pos);
    TRY(ox_matmul(ws, &w->o, t->att, 1, t->o, err));
    ox_rmsnorm(t->o, t->o, w->post_attn_norm, D, eps);
    for (int i = 0; i < D; i++) t->cur[i] += t->o[i];
    ox_rmsnorm(t->a, t->cur, w->ffn_norm, D, eps);
    const ox_matrix *Ws[2] = {&w->gate, &w->up};
    float *ys[2] = {t->g, t->u};
    TRY(ox_matmul_multi(ws, Ws, 2, t->a, 1, ys, err));
    ox_geglu(t->g, t->g, t->u, I);
    TRY(ox_matmul(ws, &w->down, t->g, 1, t->o, err));
    ox_rmsnorm(t->o, t->o, w->post_ffw_norm, D, eps);
    for (int i = 0; i < D; i++) t->cur[i] = (t->cur[i] + t->o[i]) * w->out_scale;
    return 0;
}

int ox_mtp_step(ox_mtp *t, int token, int pos, const float *h_in, float *logits, float *h_out, ox_err *err) {
    if (token < 0 || token >= t->V)
        return ox_errf(err, OX_E_RANGE, "MTP drafter: token %d outside the vocab (%d)", token, t->V);
    if (pos < 1 || pos > ox_session_pos(t->s))
        return ox_errf(err, OX_E_RANGE, "MTP drafter: position %d needs 1..%d (the target session's)", pos,
                       ox_session_pos(t->s));
    const ox_model *d = t->d;
    TRY(input(t, token, h_in, err));
    TRY(ox_matmul(&t->ws, &d->nextn_pre, t->xh, 1, t->cur, err));
    for (int l = 0; l < d->c.n_layers; l++) TRY(layer(t, l, pos, err));
    ox_rmsnorm(t->hn, t->cur, d->out_norm, t->D, d->c.rms_eps);
    if (logits) TRY(ox_matmul(&t->ws, &d->embd, t->hn, 1, logits, err));
    if (h_out) TRY(ox_matmul(&t->ws, &d->nextn_post, t->hn, 1, h_out, err));
    return 0;
}

int ox_mtp_draft(ox_mtp *t, int token, const float *h, int k, float p_min, int32_t *out, ox_err *err) {
    int pos = ox_session_pos(t->s);
    for (int i = 0; i < k; i++) {
        TRY(ox_mtp_step(t, token, pos, i ? t->h : h, t->logits, t->h, err));
        int best = 0;
        for (int v = 1; v < t->V; v++)
            if (t->logits[v] > t->logits[best]) best = v;
        double z = 0; /* p(best) = 1 / sum exp(l - l_best) */
        for (int v = 0; v < t->V; v++) z += exp((double)t->logits[v] - t->logits[best]);
        if (1.0 / z < p_min) return i;
        out[i] = token = best;
    }
    return k;
}
