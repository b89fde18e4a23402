/* ref_vision.c — see ref_vision.h. Straight loops in double. (Built into test_vision.c by
 * #include: the test build makes one executable per test file.) */
#include "ref_vision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant.h"
#include "ref_forward.h"
#include "vision/vision.h"

typedef struct rv_layer {
    double *w[7], clamp[7][4];
    double *ln1, *post_attn, *ln2, *post_ffn, *qn, *kn;
} rv_layer;

struct ref_vision {
    ox_vision_config c;
    double *patch; /* [H][3 p^2] */
    int patch_chw; /* the GGUF kernel layout [H][3][p][p] */
    double *pos;   /* [2][pos][H] */
    double *std_bias, *std_scale, *proj;
    rv_layer *L;
};

static double *rv_read(const ox_model_files *mf, const char *name, uint64_t want, char *msg, size_t cap) {
    const ox_tensor *t = ox_files_find(mf, name);
    if (!t) return snprintf(msg, cap, "ref_vision: missing %s", name), NULL;
    return ref_read_tensor(t, want, msg, cap);
}

ref_vision *ref_vision_load(const ox_model_files *mf, char *msg, size_t cap) {
    ref_vision *r = calloc(1, sizeof *r);
    ox_err err = {0};
    if (ox_vision_config_read(mf, &r->c, &err) != 1) {
        snprintf(msg, cap, "ref_vision: %s", err.msg);
        free(r);
        return NULL;
    }
    const ox_vision_config *c = &r->c;
    uint64_t H = (uint64_t)c->hidden, K = 3ull * (uint64_t)c->patch * (uint64_t)c->patch, hd = (uint64_t)c->head_dim;
    uint64_t q = (uint64_t)c->n_heads * hd, kv = (uint64_t)c->n_kv_heads * hd, I = (uint64_t)c->ffn;
    int ok = 1;
    r->patch_chw = ox_files_find(mf, "v.patch_embd.weight") && ox_files_find(mf, "v.patch_embd.weight")->n_dims == 4;
    ok &= (r->patch = rv_read(mf, "v.patch_embd.weight", H * K, msg, cap)) != NULL;
    ok &= ok && (r->pos = rv_read(mf, "v.position_embd.weight", 2 * (uint64_t)c->pos_size * H, msg, cap)) != NULL;
    ok &= ok && (r->proj = rv_read(mf, "mm.input_projection.weight", (uint64_t)c->text_hidden * H, msg, cap)) != NULL;
    if (ok && c->standardize) {
        ok &= (r->std_bias = rv_read(mf, "v.std_bias", H, msg, cap)) != NULL;
        ok &= ok && (r->std_scale = rv_read(mf, "v.std_scale", H, msg, cap)) != NULL;
    }
    r->L = calloc((size_t)c->n_layers, sizeof *r->L);
    static const char *const stem[7] = {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"};
    static const char *const bound[4] = {"input_min", "input_max", "output_min", "output_max"};
    const uint64_t sizes[7] = {q * H, kv * H, kv * H, H * q, I * H, I * H, H * I};
    char name[96];
    for (int l = 0; ok && l < c->n_layers; l++) {
        rv_layer *L = &r->L[l];
        for (int i = 0; ok && i < 7; i++) {
            snprintf(name, sizeof name, "v.blk.%d.%s.weight", l, stem[i]);
            ok &= (L->w[i] = rv_read(mf, name, sizes[i], msg, cap)) != NULL;
            for (int b = 0; b < 4; b++) {
                L->clamp[i][b] = b % 2 ? INFINITY : -INFINITY;
                snprintf(name, sizeof name, "v.blk.%d.%s.%s", l, stem[i], bound[b]);
                if (!c->clipped || !ox_files_find(mf, name)) continue;
                double *v = rv_read(mf, name, 1, msg, cap);
                if (v) L->clamp[i][b] = v[0], free(v);
            }
        }
#define V(f, s, n)                                                                                                     \
    snprintf(name, sizeof name, "v.blk.%d.%s", l, s), ok &= ok && (L->f = rv_read(mf, name, n, msg, cap)) != NULL
        V(ln1, "ln1.weight", H);
        V(post_attn, "attn_post_norm.weight", H);
        V(ln2, "ln2.weight", H);
        V(post_ffn, "ffn_post_norm.weight", H);
        V(qn, "attn_q_norm.weight", hd);
        V(kn, "attn_k_norm.weight", hd);
#undef V
    }
    if (!ok) {
        ref_vision_free(r);
        return NULL;
    }
    return r;
}

void ref_vision_free(ref_vision *r) {
    if (!r) return;
    for (int l = 0; r->L && l < r->c.n_layers; l++) {
        for (int i = 0; i < 7; i++) free(r->L[l].w[i]);
        free(r->L[l].ln1), free(r->L[l].post_attn), free(r->L[l].ln2), free(r->L[l].post_ffn);
        free(r->L[l].qn), free(r->L[l].kn);
    }
    free(r->L), free(r->patch), free(r->pos), free(r->std_bias), free(r->std_scale), free(r->proj);
    free(r);
}

/* Gemma4RMSNorm: x * (mean(x^2) + eps)^-0.5, times the weight when it has one */
static void rv_rms(double *x, int n, const double *w, double eps) {
    double ms = 0;
    for (int i = 0; i < n; i++) ms += x[i] * x[i];
    double s = pow(ms / n + eps, -0.5);
    for (int i = 0; i < n; i++) x[i] = x[i] * s * (w ? w[i] : 1.0);
}

/* Gemma4ClippableLinear: clamp in, nn.Linear (y = x W^T), clamp out */
static void rv_linear(const double *W, const double *cl, const double *x, int n, int in, int out, double *y) {
    double *xc = malloc((size_t)in * sizeof(double));
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < in; i++) xc[i] = fmin(fmax(x[(size_t)t * in + i], cl[0]), cl[1]);
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < in; i++) s += W[(size_t)o * in + i] * xc[i];
            y[(size_t)t * out + o] = fmin(fmax(s, cl[2]), cl[3]);
        }
    }
    free(xc);
}

static double rv_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* apply_multidimensional_rope with ndim 2: each half of the head is apply_rotary_pos_emb with
 * cos/sin = cat(freq, freq) of its own coordinate (x for the first, y for the second) */
static void rv_rope2d(double *h, int hd, int px, int py, double theta) {
    int half = hd / 2, quarter = hd / 4;
    for (int part = 0; part < 2; part++) {
        double *x = h + part * half, pos = part ? py : px, tmp[1024];
        for (int i = 0; i < half; i++) {
            int f = i % quarter;
            double inv = 1.0 / pow(theta, (2.0 * f) / half), ang = pos * inv;
            double rot = i < quarter ? -x[i + quarter] : x[i - quarter];
            tmp[i] = x[i] * cos(ang) + rot * sin(ang);
        }
        memcpy(x, tmp, (size_t)half * sizeof(double));
    }
}

int ref_vision_embed(const ref_vision *r, const float *rgb, int height, int width, double *pooled_out, double *out) {
    const ox_vision_config *c = &r->c;
    int p = c->patch, H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, I = c->ffn;
    int ph = height / p, pw = width / p, n = ph * pw, K = 3 * p * p, k = c->pool;
    /* the processor: convert_image_to_patches (patch grid row-major; inside (dy, dx, c)) and
     * the meshgrid position ids (x = column, y = row) */
    double *pix = malloc((size_t)n * K * sizeof(double));
    int *posx = malloc((size_t)n * sizeof(int)), *posy = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < ph; i++)
        for (int j = 0; j < pw; j++) {
            int t = i * pw + j;
            posx[t] = j, posy[t] = i;
            for (int dy = 0; dy < p; dy++)
                for (int dx = 0; dx < p; dx++)
                    for (int ch = 0; ch < 3; ch++)
                        pix[(size_t)t * K + (dy * p + dx) * 3 + ch] =
                            rgb[((size_t)(i * p + dy) * width + j * p + dx) * 3 + ch];
        }
    /* Gemma4VisionPatchEmbedder */
    double *x = calloc((size_t)n * H, sizeof(double));
    for (int t = 0; t < n; t++)
        for (int o = 0; o < H; o++) {
            double s = 0;
            for (int dy = 0; dy < p; dy++)
                for (int dx = 0; dx < p; dx++)
                    for (int ch = 0; ch < 3; ch++) {
                        int col = r->patch_chw ? (ch * p + dy) * p + dx : (dy * p + dx) * 3 + ch;
                        s += r->patch[(size_t)o * K + col] * 2 * (pix[(size_t)t * K + (dy * p + dx) * 3 + ch] - 0.5);
                    }
            x[(size_t)t * H + o] = s + r->pos[(size_t)posx[t] * H + o] + r->pos[((size_t)c->pos_size + posy[t]) * H + o];
        }
    int q = nh * hd, kvw = nkv * hd;
    double *xn = malloc((size_t)n * H * sizeof(double)), *Q = malloc((size_t)n * q * sizeof(double));
    double *Kt = malloc((size_t)n * kvw * sizeof(double)), *Vt = malloc((size_t)n * kvw * sizeof(double));
    double *att = malloc((size_t)n * q * sizeof(double)), *o = malloc((size_t)n * H * sizeof(double));
    double *g = malloc((size_t)n * I * sizeof(double)), *u = malloc((size_t)n * I * sizeof(double));
    double *sc = malloc((size_t)n * sizeof(double));
    for (int l = 0; l < c->n_layers; l++) {
        const rv_layer *L = &r->L[l];
        memcpy(xn, x, (size_t)n * H * sizeof(double));
        for (int t = 0; t < n; t++) rv_rms(xn + (size_t)t * H, H, L->ln1, c->eps);
        rv_linear(L->w[0], L->clamp[0], xn, n, H, q, Q);
        rv_linear(L->w[1], L->clamp[1], xn, n, H, kvw, Kt);
        rv_linear(L->w[2], L->clamp[2], xn, n, H, kvw, Vt);
        for (int t = 0; t < n; t++) {
            for (int h = 0; h < nh; h++) {
                rv_rms(Q + (size_t)t * q + h * hd, hd, L->qn, c->eps);
                rv_rope2d(Q + (size_t)t * q + h * hd, hd, posx[t], posy[t], c->rope_theta);
            }
            for (int h = 0; h < nkv; h++) {
                rv_rms(Kt + (size_t)t * kvw + h * hd, hd, L->kn, c->eps);
                rv_rope2d(Kt + (size_t)t * kvw + h * hd, hd, posx[t], posy[t], c->rope_theta);
                rv_rms(Vt + (size_t)t * kvw + h * hd, hd, NULL, c->eps);
            }
        }
        /* eager attention, scaling 1, no mask (no padding patches), repeat_kv groups */
        for (int t = 0; t < n; t++)
            for (int h = 0; h < nh; h++) {
                int gk = h / (nh / nkv);
                double mx = -INFINITY, den = 0;
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int d = 0; d < hd; d++) s += Q[(size_t)t * q + h * hd + d] * Kt[(size_t)j * kvw + gk * hd + d];
                    sc[j] = s, mx = fmax(mx, s);
                }
                for (int j = 0; j < n; j++) den += sc[j] = exp(sc[j] - mx);
                for (int d = 0; d < hd; d++) {
                    double s = 0;
                    for (int j = 0; j < n; j++) s += sc[j] / den * Vt[(size_t)j * kvw + gk * hd + d];
                    att[(size_t)t * q + h * hd + d] = s;
                }
            }
        rv_linear(L->w[3], L->clamp[3], att, n, q, H, o);
        for (int t = 0; t < n; t++) rv_rms(o + (size_t)t * H, H, L->post_attn, c->eps);
        for (size_t i = 0; i < (size_t)n * H; i++) x[i] += o[i];
        memcpy(xn, x, (size_t)n * H * sizeof(double));
        for (int t = 0; t < n; t++) rv_rms(xn + (size_t)t * H, H, L->ln2, c->eps);
        rv_linear(L->w[4], L->clamp[4], xn, n, H, I, g);
        rv_linear(L->w[5], L->clamp[5], xn, n, H, I, u);
        for (size_t i = 0; i < (size_t)n * I; i++) g[i] = rv_gelu_tanh(g[i]) * u[i];
        rv_linear(L->w[6], L->clamp[6], g, n, I, H, o);
        for (int t = 0; t < n; t++) rv_rms(o + (size_t)t * H, H, L->post_ffn, c->eps);
        for (size_t i = 0; i < (size_t)n * H; i++) x[i] += o[i];
    }
    /* Gemma4VisionPooler._avg_pool_by_positions: kernel index floor(x/k) + (max_x/k) floor(y/k),
     * one-hot weights 1/k^2; then sqrt(H); then the standardization */
    int n_out = n / (k * k), max_x = pw;
    double *pooled = calloc((size_t)n_out * H, sizeof(double));
    for (int t = 0; t < n; t++) {
        int idx = posx[t] / k + (max_x / k) * (posy[t] / k);
        for (int i = 0; i < H; i++) pooled[(size_t)idx * H + i] += x[(size_t)t * H + i] / (k * k);
    }
    for (int t = 0; t < n_out; t++)
        for (int i = 0; i < H; i++) {
            double *v = &pooled[(size_t)t * H + i];
            *v *= sqrt((double)H);
            if (c->standardize) *v = (*v - r->std_bias[i]) * r->std_scale[i];
        }
    if (pooled_out) memcpy(pooled_out, pooled, (size_t)n_out * H * sizeof(double));
    /* Gemma4MultimodalEmbedder: RMSNorm without scale, projection */
    double *nv = malloc((size_t)H * sizeof(double));
    for (int t = 0; t < n_out; t++) {
        memcpy(nv, pooled + (size_t)t * H, (size_t)H * sizeof(double));
        rv_rms(nv, H, NULL, c->eps);
        for (int j = 0; j < c->text_hidden; j++) {
            double s = 0;
            for (int i = 0; i < H; i++) s += r->proj[(size_t)j * H + i] * nv[i];
            out[(size_t)t * c->text_hidden + j] = s;
        }
    }
    free(nv), free(pooled), free(pix), free(posx), free(posy), free(x), free(xn), free(Q), free(Kt), free(Vt);
    free(att), free(o), free(g), free(u), free(sc);
    return n_out;
}
