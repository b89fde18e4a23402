/* ref_forward.c — see ref_forward.h. Straight loops in double; slow and simple on purpose.
 * (Built into test_model.c by #include: the test build makes one executable per test file.) */
#include "ref_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant.h"

/* A weight matrix as doubles, with the type it is stored in (for activation rounding). */
typedef struct rmat {
    double *w;
    ox_type t;
    double *mins; /* Q4_1 / Q5_1: each 32-block's min m (the engine's dot uses the activation
                     block's stored sum s for m's term, see matvec) */
} rmat;

typedef struct ref_layer {
    int full, hd, nkv, kev, shared, src, ffn, window, pairs;
    double base;
    rmat wq, wk, wv, wo, gate, up, down, router, exp_gate_up, exp_down, ple_gate, ple_proj;
    double *attn_norm, *q_norm, *k_norm, *post_attn_norm, *ffn_norm, *post_ffw_norm;
    double *router_scale, *expert_scale, *pre_ffw_norm_2, *post_ffw_norm_1, *post_ffw_norm_2, *ple_post_norm;
    double out_scale;
} ref_layer;

struct ref_model {
    int V, H, L, nh, P, ple_vocab, E, K, Ie, moe, bidir, pad;
    int bidir_vision; /* use_bidirectional_attention "vision" */
    int act_round;
    double eps, softcap, factor;
    rmat embd, ple_model_proj;
    double *ple_table, *ple_proj_norm, *out_norm;
    ref_layer *lay;
    double **owned;
    int n_owned;
};

double *ref_read_tensor(const ox_tensor *t, uint64_t want, char *msg, size_t cap) {
    uint64_t n = 1;
    for (int i = 0; i < t->n_dims; i++) n *= t->ne[i];
    if (n != want) {
        snprintf(msg, cap, "ref: %s has %llu elements, want %llu", t->name, (unsigned long long)n,
                 (unsigned long long)want);
        return NULL;
    }
    uint64_t cols = t->ne[0], rows = n / cols, rb;
    ox_row_bytes(t->type, cols, &rb, NULL);
    uint8_t *raw = malloc(rows * rb);
    float *f = malloc(cols * sizeof(float));
    double *d = malloc(n * sizeof(double));
    if (ox_tensor_read_rows(t, 0, rows, raw, NULL)) {
        snprintf(msg, cap, "ref: cannot read %s", t->name);
        free(raw), free(f), free(d);
        return NULL;
    }
    for (uint64_t i = 0; i < rows; i++) {
        ox_dequantize_row(t->type, raw + i * rb, f, cols);
        for (uint64_t j = 0; j < cols; j++) d[i * cols + j] = f[j];
    }
    free(raw), free(f);
    return d;
}

static double *load(ref_model *r, const ox_model_files *mf, const char *name, uint64_t want, int optional, char *msg,
                    size_t cap, ox_type *type) {
    const ox_tensor *t = ox_files_find(mf, name);
    if (t && type) *type = t->type;
    if (!t) {
        if (!optional) snprintf(msg, cap, "ref: missing %s", name);
        return NULL;
    }
    double *d = ref_read_tensor(t, want, msg, cap);
    if (!d) return NULL;
    r->owned[r->n_owned++] = d;
    return d;
}

/* The per-block mins of a Q4_1/Q5_1 tensor (both blocks start with fp16 d, fp16 m); NULL otherwise. */
static double *load_mins(ref_model *r, const ox_model_files *mf, const char *name) {
    const ox_tensor *t = ox_files_find(mf, name);
    if (t->type != OX_Q4_1 && t->type != OX_Q5_1) return NULL;
    uint64_t n = 1, bb = ox_type_block_bytes(t->type);
    for (int i = 0; i < t->n_dims; i++) n *= t->ne[i];
    uint8_t *raw = malloc(n / 32 * bb);
    double *m = malloc(sizeof(double) * (n / 32));
    ox_tensor_read_rows(t, 0, n / t->ne[0], raw, NULL);
    for (uint64_t b = 0; b < n / 32; b++) {
        ox_f16 h;
        memcpy(&h, raw + b * bb + 2, 2);
        m[b] = ox_f16_to_f32(h);
    }
    free(raw);
    r->owned[r->n_owned++] = m;
    return m;
}

void ref_free(ref_model *r) {
    if (!r) return;
    for (int i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->lay);
    free(r);
}

ref_model *ref_load(const ox_model_files *mf, char *msg, size_t cap) {
    const ox_config *c = ox_files_config(mf);
    ref_model *r = calloc(1, sizeof *r);
    r->V = c->vocab, r->H = c->hidden, r->L = c->n_layers, r->nh = c->n_heads, r->P = c->ple_dim;
    r->ple_vocab = c->ple_vocab, r->moe = c->moe, r->E = c->n_experts, r->K = c->top_k_experts;
    r->Ie = c->moe_ffn, r->bidir = c->bidirectional, r->pad = c->pad_id;
    r->bidir_vision = c->bidir_vision;
    r->eps = c->rms_eps, r->softcap = c->softcap, r->factor = c->rope_factor > 0 ? c->rope_factor : 1.0;
    r->lay = calloc((size_t)r->L, sizeof *r->lay);
    r->owned = calloc(64 + 40 * (size_t)r->L, sizeof *r->owned);
    uint64_t H = r->H, V = r->V, LP = (uint64_t)r->L * r->P;
    int first_shared = r->L - c->n_kv_shared;
#define NEED(dst, name, n)                                                                                             \
    do {                                                                                                               \
        if (!((dst) = load(r, mf, (name), (n), 0, msg, cap, NULL))) goto fail;                                         \
    } while (0)
#define MNEED(dst, name, n)                                                                                            \
    do {                                                                                                               \
        if (!((dst).w = load(r, mf, (name), (n), 0, msg, cap, &(dst).t))) goto fail;                                   \
        (dst).mins = load_mins(r, mf, (name));                                                                         \
    } while (0)
    MNEED(r->embd, "token_embd.weight", V * H);
    NEED(r->out_norm, "output_norm.weight", H);
    if (r->P) {
        NEED(r->ple_table, "per_layer_token_embd.weight", (uint64_t)r->ple_vocab * LP);
        MNEED(r->ple_model_proj, "per_layer_model_proj.weight", LP * H);
        NEED(r->ple_proj_norm, "per_layer_proj_norm.weight", (uint64_t)r->P);
    }
    for (int l = 0; l < r->L; l++) {
        ref_layer *y = &r->lay[l];
        y->full = c->layers[l].full;
        y->hd = y->full ? c->global_head_dim : c->head_dim;
        y->kev = c->k_eq_v && y->full;
        y->nkv = y->kev ? c->n_global_kv_heads : c->n_kv_heads;
        y->shared = c->n_kv_shared > 0 && l >= first_shared;
        y->src = l;
        if (y->shared)
            for (int j = 0; j < first_shared; j++)
                if (c->layers[j].full == y->full) y->src = j;
        y->ffn = c->intermediate * ((c->double_wide && y->shared) ? 2 : 1);
        y->window = y->full ? 0 : c->sliding_window;
        y->base = y->full ? c->rope_base_full : c->rope_base_sliding;
        y->pairs = y->full ? (int)floor(c->partial_rotary * y->hd / 2) : y->hd / 2;
        uint64_t hd = y->hd, qw = (uint64_t)r->nh * hd, kw = (uint64_t)y->nkv * hd, I = y->ffn;
        char nm[128];
#define LNEED(dst, s, n)                                                                                               \
    do {                                                                                                               \
        snprintf(nm, sizeof nm, "blk.%d.%s", l, s);                                                                    \
        NEED(dst, nm, n);                                                                                              \
    } while (0)
#define LMNEED(dst, s, n)                                                                                              \
    do {                                                                                                               \
        snprintf(nm, sizeof nm, "blk.%d.%s", l, s);                                                                    \
        MNEED(dst, nm, n);                                                                                             \
    } while (0)
        LNEED(y->attn_norm, "attn_norm.weight", H);
        LMNEED(y->wq, "attn_q.weight", qw * H);
        LNEED(y->q_norm, "attn_q_norm.weight", hd);
        if (!y->shared) {
            LMNEED(y->wk, "attn_k.weight", kw * H);
            if (!y->kev) LMNEED(y->wv, "attn_v.weight", kw * H);
            LNEED(y->k_norm, "attn_k_norm.weight", hd);
        }
        LMNEED(y->wo, "attn_output.weight", H * qw);
        LNEED(y->post_attn_norm, "post_attention_norm.weight", H);
        LNEED(y->ffn_norm, "ffn_norm.weight", H);
        LMNEED(y->gate, "ffn_gate.weight", I * H);
        LMNEED(y->up, "ffn_up.weight", I * H);
        LMNEED(y->down, "ffn_down.weight", H * I);
        LNEED(y->post_ffw_norm, "post_ffw_norm.weight", H);
        if (r->moe) {
            uint64_t E = r->E, Ie = r->Ie;
            LMNEED(y->router, "ffn_gate_inp.weight", E * H);
            LNEED(y->router_scale, "ffn_gate_inp.scale", H);
            LNEED(y->expert_scale, "ffn_down_exps.scale", E);
            LMNEED(y->exp_gate_up, "ffn_gate_up_exps.weight", E * 2 * Ie * H);
            LMNEED(y->exp_down, "ffn_down_exps.weight", E * H * Ie);
            LNEED(y->pre_ffw_norm_2, "pre_ffw_norm_2.weight", H);
            LNEED(y->post_ffw_norm_1, "post_ffw_norm_1.weight", H);
            LNEED(y->post_ffw_norm_2, "post_ffw_norm_2.weight", H);
        }
        if (r->P) {
            LMNEED(y->ple_gate, "inp_gate.weight", (uint64_t)r->P * H);
            LMNEED(y->ple_proj, "proj.weight", H * r->P);
            LNEED(y->ple_post_norm, "post_norm.weight", H);
        }
        snprintf(nm, sizeof nm, "blk.%d.layer_output_scale.weight", l);
        double *sc = load(r, mf, nm, 1, 1, msg, cap, NULL);
        y->out_scale = sc ? sc[0] : 1.0;
    }
    return r;
fail:
    ref_free(r);
    return NULL;
}

/* ---- the math ---- */

static void rms(double *y, const double *x, const double *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * (w ? w[i] : 1.0);
}

static void matvec_d(double *y, const double *W, const double *x, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < cols; c++) s += W[(size_t)r * cols + c] * x[c];
        y[r] = s;
    }
}

/* y = W x; with act_round, x first goes through the activation format the engine's dot uses
 * for W's type (Q8_0 / Q8_1 / Q8_K; f32 for float weights), as llama.cpp does. */
static void matvec(const ref_model *r, double *y, const rmat *W, const double *x, int rows, int cols) {
    ox_type at = ox_type_vec_dot(W->t);
    if (!r->act_round || at == OX_F32) {
        matvec_d(y, W->w, x, rows, cols);
        return;
    }
    float *f = malloc(sizeof(float) * cols);
    double *xr = malloc(sizeof(double) * cols);
    uint64_t rb;
    ox_row_bytes(at, (uint64_t)cols, &rb, NULL);
    void *q = malloc(rb);
    for (int c = 0; c < cols; c++) f[c] = (float)x[c];
    ox_quantize_row(at, f, q, (size_t)cols);
    ox_dequantize_row(at, q, f, (size_t)cols);
    for (int c = 0; c < cols; c++) xr[c] = f[c];
    matvec_d(y, W->w, xr, rows, cols);
    if (at == OX_Q8_1 && W->mins) /* w = d*q + m: the m term uses s = fp16(d_a * sum q_a), not sum x */
        for (int b = 0; b < cols / 32; b++) {
            const ox_block_q8_1 *blk = (const ox_block_q8_1 *)q + b;
            double sx = 0;
            for (int c = 0; c < 32; c++) sx += xr[b * 32 + c];
            double ds = ox_f16_to_f32(blk->s) - sx;
            for (int rr = 0; rr < rows; rr++) y[rr] += W->mins[(size_t)rr * (cols / 32) + b] * ds;
        }
    free(f), free(xr), free(q);
}

void ref_set_act_round(ref_model *r, int on) { r->act_round = on; }

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

static void rope(double *x, int hd, int pos, int pairs, double base, double factor) {
    for (int i = 0; i < pairs; i++) {
        double th = pos * pow(base, -2.0 * i / hd) / factor;
        double a = x[i], b = x[i + hd / 2];
        x[i] = a * cos(th) - b * sin(th);
        x[i + hd / 2] = b * cos(th) + a * sin(th);
    }
}

static void ffn(const ref_model *r, double *out, const rmat *gate, const rmat *up, const rmat *down, const double *x,
                int H, int I) {
    double *g = malloc(sizeof(double) * I), *u = malloc(sizeof(double) * I);
    matvec(r, g, gate, x, I, H);
    matvec(r, u, up, x, I, H);
    for (int i = 0; i < I; i++) g[i] = gelu(g[i]) * u[i];
    matvec(r, out, down, g, H, I);
    free(g), free(u);
}

int ref_forward(const ref_model *r, const int32_t *tok, int n, const float *soft, const uint8_t *soft_mask,
                double *logits) {
    return ref_forward_hidden(r, tok, n, soft, soft_mask, logits, NULL);
}

int ref_forward_hidden(const ref_model *r, const int32_t *tok, int n, const float *soft, const uint8_t *soft_mask,
                       double *logits, double *hidden) {
    int H = r->H, L = r->L, P = r->P, nh = r->nh;
    size_t LP = (size_t)L * P;
    double *x = calloc((size_t)n * H, sizeof(double));
    double *ple = calloc((size_t)n * LP + 1, sizeof(double));
    double *a = malloc(sizeof(double) * H), *t1 = malloc(sizeof(double) * H), *t2 = malloc(sizeof(double) * H);
    double **K = calloc((size_t)L, sizeof *K), **Vc = calloc((size_t)L, sizeof *Vc);
    for (int i = 0; i < n; i++) {
        int is_soft = soft && soft_mask && soft_mask[i];
        int row = is_soft ? r->pad : tok[i];
        for (int j = 0; j < H; j++)
            x[(size_t)i * H + j] =
                is_soft ? soft[(size_t)i * H + j] : r->embd.w[(size_t)tok[i] * H + j] * sqrt((double)H);
        if (P) {
            double *pl = ple + (size_t)i * LP, *proj = malloc(sizeof(double) * LP);
            matvec(r, proj, &r->ple_model_proj, x + (size_t)i * H, (int)LP, H);
            for (int l = 0; l < L; l++) {
                for (int j = 0; j < P; j++) proj[l * P + j] /= sqrt((double)H);
                rms(pl + (size_t)l * P, proj + (size_t)l * P, r->ple_proj_norm, P, r->eps);
            }
            for (size_t j = 0; j < LP; j++)
                pl[j] = (pl[j] + r->ple_table[(size_t)row * LP + j] * sqrt((double)P)) / sqrt(2.0);
            free(proj);
        }
    }
    for (int l = 0; l < L; l++) {
        const ref_layer *y = &r->lay[l];
        int hd = y->hd, kw = y->nkv * hd, qw = nh * hd;
        double *q = malloc(sizeof(double) * (size_t)n * qw);
        if (!y->shared) {
            K[l] = malloc(sizeof(double) * (size_t)n * kw);
            Vc[l] = malloc(sizeof(double) * (size_t)n * kw);
        }
        for (int i = 0; i < n; i++) {
            rms(a, x + (size_t)i * H, y->attn_norm, H, r->eps);
            matvec(r, q + (size_t)i * qw, &y->wq, a, qw, H);
            for (int h = 0; h < nh; h++) {
                double *qh = q + (size_t)i * qw + h * hd;
                rms(qh, qh, y->q_norm, hd, r->eps);
                rope(qh, hd, i, y->pairs, y->base, r->factor);
            }
            if (!y->shared) {
                double *k = K[l] + (size_t)i * kw, *v = Vc[l] + (size_t)i * kw;
                matvec(r, k, &y->wk, a, kw, H);
                if (y->kev) memcpy(v, k, sizeof(double) * kw);
                else matvec(r, v, &y->wv, a, kw, H);
                for (int h = 0; h < y->nkv; h++) {
                    rms(k + h * hd, k + h * hd, y->k_norm, hd, r->eps);
                    rope(k + h * hd, hd, i, y->pairs, y->base, r->factor);
                    rms(v + h * hd, v + h * hd, NULL, hd, r->eps);
                }
            }
        }
        const double *Ks = K[y->src], *Vs = Vc[y->src];
        double *att = calloc((size_t)n * qw, sizeof(double)), *s = malloc(sizeof(double) * n);
        for (int i = 0; i < n; i++)
            for (int h = 0; h < nh; h++) {
                int g = h / (nh / y->nkv);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    int vis = r->bidir ? 1 : j <= i;
                    /* "vision" (create_masks_for_vision_model): on sliding layers, OR the block of
                     * consecutive image tokens holding both i and j */
                    if (r->bidir_vision && y->window && soft && soft_mask && j > i && soft_mask[i]) {
                        int run = 1;
                        for (int m = i + 1; m <= j && run; m++) run = soft_mask[m] != 0;
                        vis = vis || run;
                    }
                    if (y->window) vis = vis && j > i - y->window && (!r->bidir || j < i + y->window);
                    s[j] = -INFINITY;
                    if (!vis) continue;
                    double d = 0;
                    for (int e = 0; e < hd; e++) d += q[(size_t)i * qw + h * hd + e] * Ks[(size_t)j * kw + g * hd + e];
                    s[j] = d;
                    if (d > mx) mx = d;
                }
                for (int j = 0; j < n; j++) sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
                for (int j = 0; j < n; j++) {
                    if (s[j] == -INFINITY) continue;
                    double p = exp(s[j] - mx) / sum;
                    for (int e = 0; e < hd; e++)
                        att[(size_t)i * qw + h * hd + e] += p * Vs[(size_t)j * kw + g * hd + e];
                }
            }
        for (int i = 0; i < n; i++) {
            double *xi = x + (size_t)i * H;
            matvec(r, t1, &y->wo, att + (size_t)i * qw, H, qw);
            rms(t1, t1, y->post_attn_norm, H, r->eps);
            for (int j = 0; j < H; j++) xi[j] += t1[j];
            rms(a, xi, y->ffn_norm, H, r->eps);
            ffn(r, t1, &y->gate, &y->up, &y->down, a, H, y->ffn);
            if (r->moe) {
                rms(t1, t1, y->post_ffw_norm_1, H, r->eps);
                /* router on the un-normed residual */
                double *z = malloc(sizeof(double) * r->E), mx = -INFINITY, sum = 0;
                rms(a, xi, NULL, H, r->eps);
                for (int j = 0; j < H; j++) a[j] *= y->router_scale[j] / sqrt((double)H);
                matvec(r, z, &y->router, a, r->E, H);
                for (int e = 0; e < r->E; e++) mx = z[e] > mx ? z[e] : mx;
                for (int e = 0; e < r->E; e++) sum += (z[e] = exp(z[e] - mx));
                for (int e = 0; e < r->E; e++) z[e] /= sum;
                int *sel = malloc(sizeof(int) * r->K);
                double wsum = 0;
                for (int k = 0; k < r->K; k++) {
                    int best = -1;
                    for (int e = 0; e < r->E; e++) {
                        int used = 0;
                        for (int q2 = 0; q2 < k; q2++) used |= sel[q2] == e;
                        if (!used && (best < 0 || z[e] > z[best])) best = e;
                    }
                    sel[k] = best;
                    wsum += z[best];
                }
                rms(a, xi, y->pre_ffw_norm_2, H, r->eps);
                double *gu = malloc(sizeof(double) * 2 * r->Ie), *ye = malloc(sizeof(double) * H);
                memset(t2, 0, sizeof(double) * H);
                for (int k = 0; k < r->K; k++) {
                    int e = sel[k];
                    double we = z[e] / wsum * y->expert_scale[e];
                    rmat gu_e = {y->exp_gate_up.w + (size_t)e * 2 * r->Ie * H, y->exp_gate_up.t,
                                 y->exp_gate_up.mins ? y->exp_gate_up.mins + (size_t)e * 2 * r->Ie * H / 32 : NULL};
                    rmat dn_e = {y->exp_down.w + (size_t)e * H * r->Ie, y->exp_down.t,
                                 y->exp_down.mins ? y->exp_down.mins + (size_t)e * H * r->Ie / 32 : NULL};
                    matvec(r, gu, &gu_e, a, 2 * r->Ie, H);
                    for (int j = 0; j < r->Ie; j++) gu[j] = gelu(gu[j]) * gu[r->Ie + j];
                    matvec(r, ye, &dn_e, gu, H, r->Ie);
                    for (int j = 0; j < H; j++) t2[j] += we * ye[j];
                }
                rms(t2, t2, y->post_ffw_norm_2, H, r->eps);
                for (int j = 0; j < H; j++) t1[j] += t2[j];
                free(z), free(sel), free(gu), free(ye);
            }
            rms(t1, t1, y->post_ffw_norm, H, r->eps);
            for (int j = 0; j < H; j++) xi[j] += t1[j];
            if (P) {
                double *pg = malloc(sizeof(double) * P);
                matvec(r, pg, &y->ple_gate, xi, P, H);
                for (int j = 0; j < P; j++) pg[j] = gelu(pg[j]) * ple[(size_t)i * LP + (size_t)l * P + j];
                matvec(r, t1, &y->ple_proj, pg, H, P);
                rms(t1, t1, y->ple_post_norm, H, r->eps);
                for (int j = 0; j < H; j++) xi[j] += t1[j];
                free(pg);
            }
            for (int j = 0; j < H; j++) xi[j] *= y->out_scale;
        }
        free(q), free(att), free(s);
    }
    for (int i = 0; i < n; i++) {
        rms(a, x + (size_t)i * H, r->out_norm, H, r->eps);
        if (hidden) memcpy(hidden + (size_t)i * H, a, sizeof(double) * (size_t)H);
        if (!logits) continue;
        double *lg = logits + (size_t)i * r->V;
        matvec(r, lg, &r->embd, a, r->V, H);
        if (r->softcap > 0)
            for (int v = 0; v < r->V; v++) lg[v] = r->softcap * tanh(lg[v] / r->softcap);
    }
    for (int l = 0; l < L; l++) free(K[l]), free(Vc[l]);
    free(K), free(Vc), free(x), free(ple), free(a), free(t1), free(t2);
    return 0;
}
