/* forward.c — the Gemma 4 forward pass over n tokens (docs/gemma4.md §2), read top to bottom:
 * embed, then per layer attention, feed-forward (dense, plus the routed experts on MoE
 * models), per-layer embedding injection and the layer scale, then the final norm and head.
 *
 * The n tokens go through each layer together: every matmul sees all n rows (prefill is
 * matrix-matrix), attention is split over (token, head) pairs on the thread pool. Activations
 * live in per-session scratch, so steady-state decode allocates nothing.
 *
 * Every op goes through the backend seam (the op_* functions): on the CPU it runs the kernel
 * at once; when the model is attached to the GPU (m->gpu, gpu/record.h) it is recorded, and
 * the step's list runs on the GPU in one submission at the end of the batch. Host work stays
 * on the CPU either way: table rows (embeddings, PLE) are read and dequantized here and
 * uploaded into the step. */
#include "model/gpu_attach.h"
#include "model/model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pool.h"
#include "kernels/prof.h"
#include "kernels/quant.h"

/* Activation buffers of one forward call, carved from the session's scratch. */
typedef struct acts {
    float *x, *a, *q, *k, *v, *att, *o, *g, *u, *f;
    float *ple, *ple_tok, *pg, *pu;       /* PLE */
    float *d1, *xe, *ye, *gu, *eact, *zr; /* MoE */
    int *sel, *tok_of, *slot_of;          /* MoE routing */
    float *selw;
    float *scores;  /* attention, per task */
    int32_t *uniq;  /* distinct tokens (PLE rows) */
    uint8_t *stage; /* one stored-format table row */
    float *hn;      /* final normed hidden */
    float *lz;      /* LoRA: A x per row */
    float *lg;      /* GPU: the logits before their read-back */
    float *kvx;     /* GPU split: K, V rows of the GPU layers whose caches CPU layers read */
    ox_gpu *gpu;    /* the recording backend, or NULL: the CPU */
    /* config bidir_vision: the batch's soft mask (a run of image tokens attends within itself on
     * sliding layers); NULL otherwise */
    const uint8_t *soft_runs;
} acts;

/* regions: where each array starts (the GPU backend keeps one buffer per array) */
typedef struct carve {
    uint8_t *base;
    size_t off;
    uint32_t regions[40];
    int n_regions;
} carve;
static void *take(carve *cv, size_t bytes) {
    void *p = cv->base ? cv->base + cv->off : NULL;
    if (cv->n_regions < (int)(sizeof cv->regions / sizeof *cv->regions))
        cv->regions[cv->n_regions++] = (uint32_t)cv->off;
    cv->off += (bytes + 63) & ~(size_t)63;
    return p;
}

/* The layout of one forward call's activations over n tokens and kv_len keys: pointers into
 * cv->base (NULL: sizes only, cv->off ends at the total); lora: floats per token of LoRA scratch;
 * logits: floats of the GPU's logits region (0 on the CPU, which writes the caller's); slots:
 * the expert rows of a MoE layer held at once (n on the CPU, one expert at a time; n * top-K
 * on the GPU, all of them); bridged: the GPU layers of a split whose caches CPU layers read. */
static void layout_acts(const ox_config *c, size_t stage, size_t lora, size_t logits, int tasks, int n, int slots,
                        int bridged, int kv_len, carve *cv, acts *A) {
    size_t H = (size_t)c->hidden, nh = (size_t)c->n_heads, LP = (size_t)c->n_layers * (size_t)c->ple_dim;
    size_t qw = 0, kw = 0, I = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const ox_layer_cfg *lc = &c->layers[l];
        if (nh * (size_t)lc->head_dim > qw) qw = nh * (size_t)lc->head_dim;
        if ((size_t)(lc->n_kv_heads * lc->head_dim) > kw) kw = (size_t)(lc->n_kv_heads * lc->head_dim);
        if ((size_t)lc->ffn > I) I = (size_t)lc->ffn;
    }
    size_t Ie = c->moe ? (size_t)c->moe_ffn : 0, E = c->moe ? (size_t)c->n_experts : 0;
    size_t K = c->moe ? (size_t)c->top_k_experts : 0, N = (size_t)n, S = (size_t)slots, F = sizeof(float);
    cv->off = 0;
    cv->n_regions = 0;
    A->x = take(cv, N * H * F);
    A->a = take(cv, N * H * F);
    A->q = take(cv, N * qw * F);
    A->k = take(cv, N * kw * F);
    A->v = take(cv, N * kw * F);
    A->att = take(cv, N * qw * F);
    A->o = take(cv, N * H * F);
    A->g = take(cv, N * I * F);
    A->u = take(cv, N * I * F);
    A->f = take(cv, N * H * F);
    A->hn = take(cv, N * H * F);
    A->ple = take(cv, N * LP * F);
    A->ple_tok = take(cv, N * LP * F);
    A->pg = take(cv, N * (size_t)c->ple_dim * F);
    A->pu = take(cv, N * H * F);
    A->d1 = take(cv, N * H * F * (c->moe != 0));
    A->xe = take(cv, S * H * F * (c->moe != 0));
    A->ye = take(cv, N * H * F * (c->moe != 0));
    A->gu = take(cv, S * 2 * Ie * F);
    A->eact = take(cv, S * Ie * F);
    A->zr = take(cv, N * E * F);
    A->sel = take(cv, N * K * sizeof(int));
    A->selw = take(cv, N * K * F);
    A->tok_of = take(cv, N * K * sizeof(int));
    A->slot_of = take(cv, N * K * sizeof(int));
    A->scores = take(cv, (size_t)tasks * (size_t)kv_len * F);
    A->uniq = take(cv, N * sizeof(int32_t));
    A->stage = take(cv, stage);
    A->lz = take(cv, N * lora * F);
    A->lg = take(cv, logits * F);
    A->kvx = take(cv, N * 2 * kw * (size_t)bridged * F);
}

static int tasks_now(void) { return ox_pool_threads() > 1 ? ox_pool_threads() : 1; }

size_t ox_forward_scratch_bytes(const ox_config *c, size_t stage, int tasks, int n, int kv_len) {
    carve cv = {NULL, 0, {0}, 0};
    acts A;
    layout_acts(c, stage, 0, 0, tasks, n, n, 0, kv_len, &cv, &A);
    return cv.off;
}

/* two passes over one layout: size it, then fill the pointers; on the GPU the step's
 * recording starts over the same scratch (the GPU keeps a buffer laid out alike) */
static int carve_acts(ox_session *s, int n, int kv_len, size_t logits, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    size_t stage = s->m->embd_row_bytes > s->m->ple_row_bytes ? s->m->embd_row_bytes : s->m->ple_row_bytes;
    int slots = s->m->gpu && c->moe ? n * c->top_k_experts : n, bridged = ox_model_gpu_bridge(s->m, c->n_layers);
    carve cv = {NULL, 0, {0}, 0};
    layout_acts(c, stage, (size_t)ox_lora_scratch(s->m), logits, tasks_now(), n, slots, bridged, kv_len, &cv, A);
    cv.base = ox_scratch_get(&s->act, cv.off, err);
    if (!cv.base) return err ? err->code : OX_E_NOMEM;
    layout_acts(c, stage, (size_t)ox_lora_scratch(s->m), logits, tasks_now(), n, slots, bridged, kv_len, &cv, A);
    A->gpu = s->m->gpu;
    if (A->gpu) ox_gpu_begin(A->gpu, s, s->max_ctx, s->pos + n, cv.base, cv.off, cv.regions, cv.n_regions);
    return 0;
}

/* The widest K (or V) row of the model's layers: A->kvx's stride per bridged layer and token. */
static size_t kv_width(const ox_config *c) {
    size_t kw = 0;
    for (int l = 0; l < c->n_layers; l++)
        if ((size_t)(c->layers[l].n_kv_heads * c->layers[l].head_dim) > kw)
            kw = (size_t)(c->layers[l].n_kv_heads * c->layers[l].head_dim);
    return kw;
}

/* A layer split (model/gpu_attach.h): the GPU's part of the step runs now, and the CPU goes on
 * from the hidden state and the PLE inputs it reads back into the same scratch. */
static int gpu_handover(ox_session *s, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    ox_gpu_read(A->gpu, A->x, (size_t)n * c->hidden * sizeof(float), A->x);
    if (c->ple_dim > 0) ox_gpu_read(A->gpu, A->ple, (size_t)n * c->n_layers * c->ple_dim * sizeof(float), A->ple);
    int rc = ox_gpu_run(A->gpu, err);
    A->gpu = NULL;
    for (int l = 0; !rc && l < s->m->gpu_layers; l++) { /* the rows bridged layers wrote on the GPU */
        int b = ox_model_gpu_bridge(s->m, l), kvw = c->layers[l].n_kv_heads * c->layers[l].head_dim;
        const float *k = A->kvx + (size_t)(b > 0 ? b : 0) * 2 * n * kv_width(c), *v = k + (size_t)n * kvw;
        for (int t = 0; b >= 0 && t < n; t++)
            ox_kv_write(&s->kv[l], s->pos + t, k + (size_t)t * kvw, v + (size_t)t * kvw);
    }
    return rc;
}

static void rms_rows(float *y, const float *x, const float *w, int n_rows, int n, float eps) {
    for (int i = 0; i < n_rows; i++) ox_rmsnorm(y + (size_t)i * n, x + (size_t)i * n, w, n, eps);
}

/* ---- the backend seam: run now on the CPU, or record for the GPU ---- */

/* A weight the GPU has no kernel for stays in wasm memory (gpu_attach.h): its matmul runs on
 * the CPU inside the step (ox_gpu_linear). */
static int op_matmul(ox_session *s, acts *A, const ox_matrix *W, const float *x, int n, float *y, ox_err *err) {
    if (!A->gpu) return ox_matmul(&s->ws, W, x, n, y, err);
    return ox_gpu_linear(A->gpu, &s->ws, W, x, n, y, err);
}

static int op_matmul_multi(ox_session *s, acts *A, const ox_matrix *const *Ws, int k, const float *x, int n,
                           float *const *ys, ox_err *err) {
    if (!A->gpu) return ox_matmul_multi(&s->ws, Ws, k, x, n, ys, err);
    for (int i = 0; i < k; i++) TRY(op_matmul(s, A, Ws[i], x, n, ys[i], err));
    return 0;
}

/* y = rmsnorm(x) (* w) over n_rows rows of n */
static void op_rms(acts *A, float *y, const float *x, const float *w, int n_rows, int n, float eps) {
    if (A->gpu) return ox_gpu_rms(A->gpu, y, x, w, n_rows, n, eps);
    rms_rows(y, x, w, n_rows, n, eps);
}

/* RoPE on n_tok tokens of nh heads of hd, token t at position pos + t */
static void op_rope(acts *A, float *x, int n_tok, int nh, int hd, int pos, const ox_layer_cfg *lc, float factor) {
    if (A->gpu) return ox_gpu_rope(A->gpu, x, n_tok, nh, hd, pos, lc->rope_pairs, lc->rope_base, factor);
    for (int t = 0; t < n_tok; t++)
        ox_rope_heads(x + (size_t)t * nh * hd, nh, (size_t)hd, hd, pos + t, lc->rope_pairs, lc->rope_base, factor);
}

/* y = gelu(g) * u over rows of width; g (and y) rows gs apart, u rows us apart */
static void op_geglu(acts *A, float *y, const float *g, const float *u, int rows, int width, size_t gs, size_t us) {
    if (A->gpu) return ox_gpu_geglu(A->gpu, y, g, u, rows, width, (int)gs, (int)us);
    for (int t = 0; t < rows; t++) ox_geglu(y + (size_t)t * gs, g + (size_t)t * gs, u + (size_t)t * us, width);
}

static void op_add(acts *A, float *h, const float *d, size_t n) {
    if (A->gpu) return ox_gpu_add(A->gpu, h, d, n);
    for (size_t i = 0; i < n; i++) h[i] += d[i];
}

static void op_scale(acts *A, float *h, size_t n, float a) {
    if (A->gpu) return ox_gpu_scale(A->gpu, h, n, a);
    for (size_t i = 0; i < n; i++) h[i] *= a;
}

static void op_copy(acts *A, float *y, const float *x, size_t n) {
    if (A->gpu) return ox_gpu_copy(A->gpu, y, x, n);
    memcpy(y, x, n * sizeof(float));
}

typedef struct attn_job {
    const float *q;  /* [n][nh*hd] */
    float *out;      /* [n][nh*hd] */
    const ox_kv *kv; /* the layer's cache (model/kv.h) */
    float *scores;   /* [tasks][kv_len] */
    int n, pos, nh, hd, group, window, bidir, kv_len;
    const uint8_t *soft_runs; /* acts.soft_runs, on sliding layers */
} attn_job;

/* Keys j visible from position p: causal j <= p (bidirectional: all of the sequence), and on
 * sliding layers only the W nearest (j > p - W; bidirectional also j < p + W). */
static void attn_task(void *ctx, int task, int n_tasks) {
    const attn_job *J = ctx;
    int items = J->n * J->nh;
    int i0 = (int)((long long)items * task / n_tasks), i1 = (int)((long long)items * (task + 1) / n_tasks);
    float *s = J->scores + (size_t)task * (size_t)J->kv_len;
    for (int it = i0; it < i1; it++) {
        int t = it / J->nh, h = it % J->nh, p = J->pos + t;
        int lo = 0, hi = J->bidir ? J->kv_len - 1 : p;
        if (J->soft_runs && J->soft_runs[t]) /* an image token also sees the rest of its run */
            for (int e = t + 1; e < J->n && J->soft_runs[e]; e++) hi = J->pos + e;
        if (J->window > 0) {
            if (p - J->window + 1 > lo) lo = p - J->window + 1;
            if (J->bidir && p + J->window - 1 < hi) hi = p + J->window - 1;
        }
        size_t at = (size_t)t * J->nh * J->hd + (size_t)h * J->hd;
        ox_kv_attend(J->kv, h / J->group, J->q + at, lo, hi, s, J->out + at);
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Read one row of a host table and dequantize it to f32. */
static int table_row(ox_model *m, const ox_tensor *t, size_t rb, int32_t row, uint64_t cols, uint8_t *stage, float *dst,
                     ox_err *err) {
    double pt = ox_prof_begin();
    int rc = ox_tensor_read_rows(t, (uint64_t)row, 1, stage, err);
    if (rc) return ox_prof_end(pt, -1, 0), rc;
    m->host_bytes += rb;
    m->rows_fetched++;
    ox_dequantize_row(t->type, stage, dst, (size_t)cols);
    ox_prof_end(pt, OX_PROF_TABLE, rb);
    return 0;
}

/* Input embeddings and PLE inputs for the n tokens (docs/gemma4.md §2.1, §2.2). */
static int embed(ox_session *s, const ox_forward_io *io, acts *A, ox_err *err) {
    ox_model *m = s->m;
    const ox_config *c = &m->c;
    int n = io->n, H = c->hidden, P = c->ple_dim, L = c->n_layers;
    float sH = sqrtf((float)H);
    for (int i = 0; i < n; i++) {
        float *x = A->x + (size_t)i * H;
        if (io->soft && io->soft_mask && io->soft_mask[i]) {
            memcpy(x, io->soft + (size_t)i * H, (size_t)H * sizeof(float));
            continue;
        }
        if (m->opts.tables_on_host)
            TRY(table_row(m, m->t_embd, m->embd_row_bytes, io->tokens[i], (uint64_t)H, A->stage, x, err));
        else {
            double pt = ox_prof_begin();
            ox_dequantize_row(m->embd.type, (const uint8_t *)m->embd.data + (size_t)io->tokens[i] * m->embd.row_bytes,
                              x, (size_t)H);
            ox_prof_end(pt, OX_PROF_TABLE, m->embd.row_bytes);
        }
        for (int j = 0; j < H; j++) x[j] *= sH;
    }
    if (A->gpu) ox_gpu_upload(A->gpu, A->x, (size_t)n * H * sizeof(float));
    if (P <= 0) return 0;
    /* one host read per distinct table row (soft tokens use the pad token's row) */
    int nu = 0;
    for (int i = 0; i < n; i++)
        A->uniq[nu++] = (io->soft && io->soft_mask && io->soft_mask[i]) ? c->pad_id : io->tokens[i];
    qsort(A->uniq, (size_t)nu, sizeof *A->uniq, cmp_i32);
    int k = 0;
    for (int i = 0; i < nu; i++)
        if (k == 0 || A->uniq[i] != A->uniq[k - 1]) A->uniq[k++] = A->uniq[i];
    nu = k;
    size_t LP = (size_t)L * (size_t)P;
    for (int u = 0; u < nu; u++) {
        if (A->uniq[u] < 0 || A->uniq[u] >= c->ple_vocab)
            return ox_errf(err, OX_E_RANGE, "token %d has no per-layer embedding row (table has %d)", A->uniq[u],
                           c->ple_vocab);
        TRY(table_row(m, m->t_ple, m->ple_row_bytes, A->uniq[u], LP, A->stage, A->ple_tok + (size_t)u * LP, err));
    }
    if (A->gpu) ox_gpu_upload(A->gpu, A->ple_tok, (size_t)nu * LP * sizeof(float));
    /* ctx = rms(W_plm h / sqrt(H)) per layer chunk; ple = (ctx + row * sqrt(P)) / sqrt(2) */
    TRY(op_matmul(s, A, &m->ple_model_proj, A->x, n, A->ple, err));
    float iH = 1.0f / sqrtf((float)H), sP = sqrtf((float)P), i2 = 1.0f / sqrtf(2.0f);
    for (int i = 0; i < n; i++) {
        int32_t tok = (io->soft && io->soft_mask && io->soft_mask[i]) ? c->pad_id : io->tokens[i];
        const int32_t *hit = bsearch(&tok, A->uniq, (size_t)nu, sizeof *A->uniq, cmp_i32);
        const float *row = A->ple_tok + (size_t)(hit - A->uniq) * LP;
        float *pl = A->ple + (size_t)i * LP;
        if (A->gpu) {
            ox_gpu_scale(A->gpu, pl, LP, iH);
            ox_gpu_rms(A->gpu, pl, pl, m->ple_proj_norm, L, P, c->rms_eps);
            ox_gpu_mix(A->gpu, pl, row, LP, sP, i2);
            continue;
        }
        for (size_t j = 0; j < LP; j++) pl[j] *= iH;
        for (int l = 0; l < L; l++) ox_rmsnorm(pl + (size_t)l * P, pl + (size_t)l * P, m->ple_proj_norm, P, c->rms_eps);
        for (size_t j = 0; j < LP; j++) pl[j] = (pl[j] + row[j] * sP) * i2;
    }
    return 0;
}

/* Expert e's block of `rows` rows in a stacked expert tensor: a view into the resident tensor,
 * or, when it stays on the host, the block fetched into the weight cache (pinned until the
 * caller releases it). */
static int expert_view(ox_model *m, int l, const ox_matrix *M, int e, int rows, ox_matrix *v, ox_err *err) {
    *v = *M;
    v->rows = rows;
    if (M->data) {
        v->data = (uint8_t *)M->data + (size_t)e * (size_t)rows * M->row_bytes;
        return 0;
    }
    const layer_w *w = &m->L[l];
    for (int i = 0; i < w->n_host; i++) {
        if (w->host[i].M != M) continue;
        size_t bytes = (size_t)rows * M->row_bytes;
        v->data = (void *)ox_wcache_get(m->wc, ox_wcache_key(m, l, i, e), 0, w->host[i].t, (uint64_t)e * (uint64_t)rows,
                                        (uint64_t)rows, bytes, err);
        return v->data ? 0 : (err ? err->code : OX_E_IO);
    }
    return ox_errf(err, OX_E_STATE, "layer %d: an expert tensor is neither resident nor on the host", l);
}

/* One expert on its m gathered rows A->xe: A->f = W_down (gelu(gate) * up), gate/up from the
 * fused [gate | up] tensor or the split pair. */
static int run_expert(ox_session *s, int l, const layer_w *w, int e, int m, acts *A, ox_err *err) {
    int Ie = s->m->c.moe_ffn, H = s->m->c.hidden;
    ox_matrix dn, gu, g, u;
    int fused = w->exp_gate_up.rows > 0;
    if (fused) {
        TRY(expert_view(s->m, l, &w->exp_gate_up, e, 2 * Ie, &gu, err));
        TRY(ox_matmul(&s->ws, &gu, A->xe, m, A->gu, err));
    } else {
        TRY(expert_view(s->m, l, &w->exp_gate, e, Ie, &g, err));
        TRY(expert_view(s->m, l, &w->exp_up, e, Ie, &u, err));
        const ox_matrix *Ws[2] = {&g, &u};
        float *ys[2] = {A->gu, A->gu + (size_t)m * Ie};
        TRY(ox_matmul_multi(&s->ws, Ws, 2, A->xe, m, ys, err));
    }
    for (int r = 0; r < m; r++) { /* fused rows: [gate | up]; split: all gates, then all ups */
        const float *gr = A->gu + (size_t)r * (fused ? 2 * Ie : Ie);
        const float *ur = fused ? gr + Ie : A->gu + (size_t)(m + r) * Ie;
        ox_geglu(A->eact + (size_t)r * Ie, gr, ur, Ie);
    }
    TRY(expert_view(s->m, l, &w->exp_down, e, H, &dn, err));
    return ox_matmul(&s->ws, &dn, A->eact, m, A->f, err);
}

/* moe_branch on the GPU: the same math with nothing read back. The router's top-K stays on
 * the device (sel, selw) and every (token, chosen expert) slot runs at once, each expert
 * matmul reading its slot's expert id; the weighted sum adds them in increasing id, as the
 * CPU's loop over experts does. Router input: rmsnorm(x) * router_scale, then 1/sqrt(H). */
static int moe_branch_gpu(ox_session *s, const layer_w *w, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    int H = c->hidden, E = c->n_experts, K = c->top_k_experts, Ie = c->moe_ffn, S = n * K;
    op_rms(A, A->a, A->x, w->router_scale, n, H, c->rms_eps);
    op_scale(A, A->a, (size_t)n * H, 1.0f / sqrtf((float)H));
    TRY(op_matmul(s, A, &w->router, A->a, n, A->zr, err));
    ox_gpu_route(A->gpu, A->zr, A->sel, A->selw, w->expert_scale, n, E, K);
    op_rms(A, A->a, A->x, w->pre_ffw_norm_2, n, H, c->rms_eps);
    float *act = A->eact; /* gelu(gate) * up per slot */
    if (w->exp_gate_up.rows > 0) {
        ox_gpu_experts(A->gpu, &w->exp_gate_up, A->a, A->sel, A->gu, S, K);
        ox_gpu_geglu(A->gpu, act, A->gu, A->gu + Ie, S, Ie, 2 * Ie, 2 * Ie);
    } else {
        act = A->gu;
        ox_gpu_experts(A->gpu, &w->exp_gate, A->a, A->sel, A->gu, S, K);
        ox_gpu_experts(A->gpu, &w->exp_up, A->a, A->sel, A->gu + (size_t)S * Ie, S, K);
        ox_gpu_geglu(A->gpu, act, A->gu, A->gu + (size_t)S * Ie, S, Ie, Ie, Ie);
    }
    ox_gpu_experts(A->gpu, &w->exp_down, act, A->sel, A->xe, S, 1);
    ox_gpu_combine(A->gpu, A->ye, A->xe, A->sel, A->selw, n, K, H);
    return 0;
}

/* Routed experts (docs/gemma4.md §2.5) into A->ye: router on the un-normed residual A->x,
 * experts on rms(x, pre_ffw_norm_2); tokens grouped per expert so each expert runs once, in
 * id order (streamed experts: reads in file order). Each streamed expert is released once it
 * has run. No prefetch of the next layer's experts: the router needs this layer's output, and
 * in wasm host reads are synchronous on the forward's own thread (hostfile.h), so there is
 * nothing to overlap them with. */
static int moe_branch(ox_session *s, const layer_w *w, int n, acts *A, ox_err *err) {
    if (A->gpu) return moe_branch_gpu(s, w, n, A, err);
    const ox_config *c = &s->m->c;
    int H = c->hidden, E = c->n_experts, K = c->top_k_experts;
    int l = (int)(w - s->m->L); /* w is this layer's entry of the model's table */
    ox_wcache *wc = s->m->wc;
    float iH = 1.0f / sqrtf((float)H);
    for (int i = 0; i < n; i++) {
        float *a = A->a + (size_t)i * H;
        ox_rmsnorm(a, A->x + (size_t)i * H, NULL, H, c->rms_eps);
        for (int j = 0; j < H; j++) a[j] *= w->router_scale[j] * iH;
    }
    TRY(ox_matmul(&s->ws, &w->router, A->a, n, A->zr, err));
    for (int i = 0; i < n; i++) {
        float *z = A->zr + (size_t)i * E;
        int *sel = A->sel + (size_t)i * K;
        float *sw = A->selw + (size_t)i * K, sum = 0;
        ox_softmax(z, E);
        for (int k = 0; k < K; k++) { /* top-K by probability, ties to the lower id */
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int q = 0; q < k; q++) taken |= sel[q] == e;
                if (!taken && (best < 0 || z[e] > z[best])) best = e;
            }
            sel[k] = best;
            sw[k] = z[best];
            sum += z[best];
        }
        for (int k = 0; k < K; k++) sw[k] = sw[k] / sum * w->expert_scale[sel[k]];
    }
    rms_rows(A->a, A->x, w->pre_ffw_norm_2, n, H, c->rms_eps);
    memset(A->ye, 0, (size_t)n * H * sizeof(float));
    for (int e = 0; e < E; e++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < K; k++)
                if (A->sel[(size_t)i * K + k] == e) {
                    A->tok_of[m] = i;
                    A->slot_of[m] = i * K + k;
                    memcpy(A->xe + (size_t)m * H, A->a + (size_t)i * H, (size_t)H * sizeof(float));
                    m++;
                }
        if (!m) continue;
        ox_wcache_mark mk = wc ? ox_wcache_mark_now(wc) : (ox_wcache_mark){0, 0};
        int rc = run_expert(s, l, w, e, m, A, err);
        if (wc) ox_wcache_release(wc, mk);
        if (rc) return rc;
        for (int r = 0; r < m; r++)
            ox_axpy(A->ye + (size_t)A->tok_of[r] * H, A->selw[A->slot_of[r]], A->f + (size_t)r * H, H);
    }
    return 0;
}

/* Attention (docs/gemma4.md §2.3): h += post_norm(W_o attn(rope(norm(q)), rope(norm(k)), norm(v)))
 * with q, k, v projections of norm(h). A KV-shared layer projects only q and reads the cache of
 * the layer it shares with; an own-KV layer appends its k, v rows at the session's positions
 * first (K = V on k_eq_v layers: V is the raw K before its norm). */
static int attention(ox_session *s, int l, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    const ox_layer_cfg *lc = &c->layers[l];
    const layer_w *w = &s->m->L[l];
    int H = c->hidden, nh = c->n_heads, hd = lc->head_dim, nkv = lc->n_kv_heads, kvw = nkv * hd;
    float eps = c->rms_eps;
    op_rms(A, A->a, A->x, w->attn_norm, n, H, eps);
    static const ox_lora_target QKV[3] = {OX_LORA_Q, OX_LORA_K, OX_LORA_V};
    if (lc->shared) {
        TRY(op_matmul(s, A, &w->q, A->a, n, A->q, err));
        ox_lora_add(s->m, l, QKV, 1, A->a, n, &A->q, A->lz);
    } else {
        const ox_matrix *Ws[3] = {&w->q, &w->k, &w->v};
        float *ys[3] = {A->q, A->k, A->v};
        TRY(op_matmul_multi(s, A, Ws, lc->k_eq_v ? 2 : 3, A->a, n, ys, err));
        ox_lora_add(s->m, l, QKV, lc->k_eq_v ? 2 : 3, A->a, n, ys, A->lz);
        if (lc->k_eq_v) op_copy(A, A->v, A->k, (size_t)n * kvw);
    }
    op_rms(A, A->q, A->q, w->q_norm, n * nh, hd, eps);
    op_rope(A, A->q, n, nh, hd, s->pos, lc, c->rope_factor);
    ox_kv *kc = &s->kv[lc->kv_src];
    if (!lc->shared) {
        op_rms(A, A->k, A->k, w->k_norm, n * nkv, hd, eps);
        op_rope(A, A->k, n, nkv, hd, s->pos, lc, c->rope_factor);
        op_rms(A, A->v, A->v, NULL, n * nkv, hd, eps);
        if (A->gpu) {
            ox_gpu_kv_write(A->gpu, lc->kv_src, s->pos, n, A->k, A->v, kvw, (int)kc->type, kc->ring ? kc->max_cap : 0);
            ox_kv_advance(kc, s->pos + n - 1);
            int b = ox_model_gpu_bridge(s->m, l); /* CPU layers read this cache too: its rows come back */
            if (b >= 0) {
                float *kx = A->kvx + (size_t)b * 2 * n * kv_width(c);
                ox_gpu_read(A->gpu, A->k, (size_t)n * kvw * sizeof(float), kx);
                ox_gpu_read(A->gpu, A->v, (size_t)n * kvw * sizeof(float), kx + (size_t)n * kvw);
            }
        } else
            for (int t = 0; t < n; t++) ox_kv_write(kc, s->pos + t, A->k + (size_t)t * kvw, A->v + (size_t)t * kvw);
    }
    const uint8_t *runs = lc->window > 0 ? A->soft_runs : NULL;
    if (A->gpu && runs)
        return ox_errf(err, OX_E_UNSUPPORTED, "gpu: image tokens attending within their run run on the CPU only");
    if (A->gpu) {
        ox_gpu_attend(A->gpu, lc->kv_src, A->q, A->att, n, s->pos, nh, hd, nh / nkv, lc->window, c->bidirectional);
    } else {
        int tasks = ox_pool_threads();
        if (tasks < 1) tasks = 1;
        if (tasks > n * nh) tasks = n * nh;
        attn_job J = {A->q, A->att,   kc,         A->scores,        n,          s->pos, nh,
                      hd,   nh / nkv, lc->window, c->bidirectional, s->pos + n, runs};
        ox_pool_run(attn_task, &J, tasks);
    }
    TRY(op_matmul(s, A, &w->o, A->att, n, A->o, err));
    ox_lora_add(s->m, l, (ox_lora_target[]){OX_LORA_O}, 1, A->att, n, &A->o, A->lz);
    op_rms(A, A->o, A->o, w->post_attn_norm, n, H, eps);
    op_add(A, A->x, A->o, (size_t)n * H);
    return 0;
}

/* Feed-forward (docs/gemma4.md §2.4): h += post_norm(W_down (gelu(W_gate x) * W_up x)), x =
 * norm(h). On MoE layers (§2.5) the dense branch and the routed experts run side by side, each
 * with its own post-norm, and their sum takes the shared post-norm. */
static int feed_forward(ox_session *s, int l, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    const ox_layer_cfg *lc = &c->layers[l];
    const layer_w *w = &s->m->L[l];
    int H = c->hidden, I = lc->ffn;
    size_t NH = (size_t)n * H;
    float eps = c->rms_eps;
    op_rms(A, A->a, A->x, w->ffn_norm, n, H, eps);
    const ox_matrix *Ws[2] = {&w->gate, &w->up};
    float *ys[2] = {A->g, A->u};
    TRY(op_matmul_multi(s, A, Ws, 2, A->a, n, ys, err));
    ox_lora_add(s->m, l, (ox_lora_target[]){OX_LORA_GATE, OX_LORA_UP}, 2, A->a, n, ys, A->lz);
    op_geglu(A, A->g, A->g, A->u, n, I, (size_t)I, (size_t)I);
    TRY(op_matmul(s, A, &w->down, A->g, n, A->f, err));
    ox_lora_add(s->m, l, (ox_lora_target[]){OX_LORA_DOWN}, 1, A->g, n, &A->f, A->lz);
    if (c->moe) {
        op_rms(A, A->d1, A->f, w->post_ffw_norm_1, n, H, eps);
        TRY(moe_branch(s, w, n, A, err));
        op_rms(A, A->ye, A->ye, w->post_ffw_norm_2, n, H, eps);
        op_copy(A, A->f, A->d1, NH);
        op_add(A, A->f, A->ye, NH);
    }
    op_rms(A, A->f, A->f, w->post_ffw_norm, n, H, eps);
    op_add(A, A->x, A->f, NH);
    return 0;
}

/* Per-layer embedding injection (docs/gemma4.md §2.6): h += norm(W_proj (gelu(W_gate h) *
 * ple_l)), ple_l this layer's slice of the PLE input made by embed(). */
static int ple_inject(ox_session *s, int l, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    const layer_w *w = &s->m->L[l];
    int H = c->hidden, P = c->ple_dim;
    size_t LP = (size_t)c->n_layers * P;
    TRY(op_matmul(s, A, &w->ple_gate, A->x, n, A->pg, err));
    ox_lora_add(s->m, l, (ox_lora_target[]){OX_LORA_PLE_GATE}, 1, A->x, n, &A->pg, A->lz);
    op_geglu(A, A->pg, A->pg, A->ple + (size_t)l * P, n, P, (size_t)P, LP);
    TRY(op_matmul(s, A, &w->ple_proj, A->pg, n, A->pu, err));
    ox_lora_add(s->m, l, (ox_lora_target[]){OX_LORA_PLE_PROJ}, 1, A->pg, n, &A->pu, A->lz);
    op_rms(A, A->pu, A->pu, w->ple_post_norm, n, H, c->rms_eps);
    op_add(A, A->x, A->pu, (size_t)n * H);
    return 0;
}

/* Point layer l's dense host matrices at their rows in the weight cache, fetching what is not
 * there; drop_layer lets them go again (data NULL, pins released to mk). */
static int fetch_layer(ox_model *m, int l, ox_wcache_mark *mk, ox_err *err) {
    layer_w *w = &m->L[l];
    *mk = ox_wcache_mark_now(m->wc);
    for (int i = 0; i < w->n_host; i++) {
        host_mat *h = &w->host[i];
        if (h->experts) continue;
        size_t bytes = (size_t)h->M->rows * h->M->row_bytes;
        h->M->data =
            (void *)ox_wcache_get(m->wc, ox_wcache_key(m, l, i, 0), 1, h->t, 0, (uint64_t)h->M->rows, bytes, err);
        if (!h->M->data) return err ? err->code : OX_E_IO;
    }
    return 0;
}

static void drop_layer(ox_model *m, int l, ox_wcache_mark mk) {
    layer_w *w = &m->L[l];
    for (int i = 0; i < w->n_host; i++)
        if (!w->host[i].experts) w->host[i].M->data = NULL;
    ox_wcache_release(m->wc, mk);
}

/* One decoder layer (docs/gemma4.md §2): attention, feed-forward, PLE, then the layer scale,
 * which multiplies the whole residual stream (§2.7). */
static int layer_compute(ox_session *s, int l, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    TRY(attention(s, l, n, A, err));
    TRY(feed_forward(s, l, n, A, err));
    if (c->ple_dim > 0) TRY(ple_inject(s, l, n, A, err));
    float scale = s->m->L[l].out_scale;
    if (scale != 1.0f) op_scale(A, A->x, (size_t)n * c->hidden, scale);
    return 0;
}

/* A layer with its streamed dense weights (load option stream 'all') fetched for it and let
 * go after it, also on an error. */
static int layer_forward(ox_session *s, int l, int n, acts *A, ox_err *err) {
    ox_model *m = s->m;
    if (!m->wc) return layer_compute(s, l, n, A, err);
    ox_wcache_mark mk;
    int rc = fetch_layer(m, l, &mk, err);
    if (!rc) rc = layer_compute(s, l, n, A, err);
    drop_layer(m, l, mk);
    return rc;
}

/* One micro-batch: every token through every layer, appended to the caches. */
static int forward_batch(ox_session *s, const ox_forward_io *io, ox_err *err) {
    ox_model *m = s->m;
    const ox_config *c = &m->c;
    int n = io->n, H = c->hidden, V = c->vocab;
    TRY(ox_session_reserve(s, s->pos + n, err));
    acts A;
    /* the scores sized for the session's whole context (where that is a sane bound: 1 MB of
     * f32 per thread), so the scratch is not regrown, old and new at once, as positions pass */
    int keys = s->max_ctx <= (1 << 18) ? s->max_ctx : s->pos + n;
    int f0 = io->all_logits ? 0 : n - 1, nl = io->logits ? n - f0 : 0;
    if (!m->gpu && m->gpu_only)
        return ox_errf(err, OX_E_STATE, "forward: the model's weights were on a GPU it no longer has: load it again");
    if (m->gpu && m->n_lora > 0)
        return ox_errf(err, OX_E_UNSUPPORTED, "forward: LoRA adapters do not run on the GPU backend yet");
    TRY(carve_acts(s, n, keys, m->gpu && m->gpu_layers == c->n_layers ? (size_t)nl * V : 0, &A, err));
    A.soft_runs = c->bidir_vision && io->soft ? io->soft_mask : NULL;
    TRY(embed(s, io, &A, err));
    for (int l = 0; l < c->n_layers; l++) {
        if (A.gpu && l == m->gpu_layers) TRY(gpu_handover(s, n, &A, err));
        TRY(layer_forward(s, l, n, &A, err));
    }

    /* final norm, tied head, soft-cap (docs/gemma4.md §2.8); on the GPU both land in the
     * scratch and only the rows asked for come back */
    int first = (io->hidden || (io->logits && io->all_logits)) ? 0 : n - 1, nout = n - first;
    float *hn = io->hidden && !A.gpu ? io->hidden : A.hn;
    op_rms(&A, hn + (size_t)first * H, A.x + (size_t)first * H, m->out_norm, nout, H, c->rms_eps);
    if (io->logits) {
        float *lg = A.gpu ? A.lg : io->logits;
        TRY(op_matmul(s, &A, &m->embd, hn + (size_t)f0 * H, nl, lg, err));
        if (c->softcap > 0 && A.gpu) ox_gpu_softcap(A.gpu, lg, (size_t)nl * V, c->softcap);
        if (c->softcap > 0 && !A.gpu) {
            float cap = c->softcap;
            for (size_t i = 0; i < (size_t)nl * V; i++) io->logits[i] = cap * tanhf(io->logits[i] / cap);
        }
    }
    if (A.gpu) {
        if (io->logits) ox_gpu_read(A.gpu, A.lg, (size_t)nl * V * sizeof(float), io->logits);
        if (io->hidden)
            ox_gpu_read(A.gpu, hn + (size_t)first * H, (size_t)nout * H * sizeof(float), io->hidden + (size_t)first * H);
        TRY(ox_gpu_run(A.gpu, err));
    }
    for (int i = 0; i < n; i++) {
        int soft = io->soft && io->soft_mask && io->soft_mask[i];
        s->toks[s->pos + i] = soft ? -1 : io->tokens[i];
        s->soft_id[s->pos + i] = soft ? ox_soft_row_id(io->soft + (size_t)i * H, H) : 0;
    }
    s->pos += n;
    return 0;
}

/* A batch [i0, i0 + *k) that would cut a run of soft tokens (bidir_vision) ends before the run,
 * or, when the run starts the batch, takes it whole (at most OX_SOFT_RUN_MAX tokens). */
static int keep_run_whole(const uint8_t *soft, int i0, int n, int *k, ox_err *err) {
    int end = i0 + *k;
    if (end >= n || !soft[end - 1] || !soft[end]) return 0;
    int start = end - 1;
    while (start > i0 && soft[start - 1]) start--;
    if (start > i0) return *k = start - i0, 0;
    while (end < n && soft[end]) end++;
    if (end - i0 > OX_SOFT_RUN_MAX)
        return ox_errf(err, OX_E_RANGE, "forward: a run of %d image tokens; this model takes at most %d per image",
                       end - i0, OX_SOFT_RUN_MAX);
    return *k = end - i0, 0;
}

int ox_forward(ox_session *s, const ox_forward_io *io, ox_err *err) {
    const ox_config *c = &s->m->c;
    int n = io->n, H = c->hidden, V = c->vocab, pos0 = s->pos;
    if (n < 1) return ox_errf(err, OX_E_RANGE, "forward: need at least one token (got %d)", n);
    if (n > s->max_ctx - s->pos)
        return ox_errf(err, OX_E_STATE, "forward: %d tokens at position %d exceed the session's context of %d", n,
                       s->pos, s->max_ctx);
    for (int i = 0; i < n; i++) {
        int soft = io->soft && io->soft_mask && io->soft_mask[i];
        if (!soft && (!io->tokens || io->tokens[i] < 0 || io->tokens[i] >= V))
            return ox_errf(err, OX_E_RANGE, "forward: token %d at index %d is outside the vocab (%d)",
                           io->tokens ? io->tokens[i] : -1, i, V);
    }
    /* Long prompts go in micro-batches of OX_UBATCH tokens: activation scratch stays bounded
     * (E2B: ~150 KB per token) while each matmul still sees many tokens. Bidirectional models
     * need the whole sequence in one batch. */
    int ub = c->bidirectional ? n : OX_UBATCH;
    for (int i0 = 0, k; i0 < n; i0 += k) {
        k = n - i0 < ub ? n - i0 : ub;
        if (c->bidir_vision && io->soft && io->soft_mask) TRY(keep_run_whole(io->soft_mask, i0, n, &k, err));
        int last = i0 + k == n;
        ox_forward_io b = {
            .tokens = io->tokens ? io->tokens + i0 : NULL,
            .n = k,
            .soft = io->soft ? io->soft + (size_t)i0 * H : NULL,
            .soft_mask = io->soft_mask ? io->soft_mask + i0 : NULL,
            .logits = io->logits && io->all_logits ? io->logits + (size_t)i0 * V : (last ? io->logits : NULL),
            .all_logits = io->all_logits,
            .hidden = io->hidden ? io->hidden + (size_t)i0 * H : NULL,
        };
        int rc = forward_batch(s, &b, err);
        if (rc) {
            s->pos = pos0;
            return rc;
        }
    }
    return 0;
}
