/* vision_forward.c — one image through the tower and the embedder (vision.h, docs/vision.md).
 * Whole image at once: the patches of one image attend to each other without a mask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pool.h"
#include "vision/unified_embed.h"
#include "vision/vision_impl.h"

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* The image's activations, one region each (gpu/record.h: the GPU keeps a buffer per region):
 * the rows of every patch (x, xn, o, q, att, k, v); the feed-forward's, which runs MLP_ROWS
 * patches at a time (g, u: MLP_ROWS x ffn), so the widest buffers do not grow with the image;
 * a linear's clamped input (first the patches); the CPU attention's scores per task; the pooled
 * rows and the embedder's. gpu: the recorder, or NULL on the CPU. */
#define MLP_ROWS 256
typedef struct acts {
    float *x, *xn, *o, *q, *att, *k, *v, *g, *u, *clamped, *scores, *pooled, *emb;
    ox_gpu *gpu;
} acts;
#define N_ACTS 13

/* The regions' floats for an image of n patches pooled to n_out rows. */
static void act_sizes(const ox_vision_config *c, int n, int n_out, size_t sz[N_ACTS]) {
    size_t N = (size_t)n, H = (size_t)c->hidden, q = (size_t)c->n_heads * c->head_dim;
    size_t kv = (size_t)c->n_kv_heads * c->head_dim, I = (size_t)c->ffn, K = 3 * (size_t)c->patch * c->patch;
    size_t rows = n < MLP_ROWS ? N : MLP_ROWS, wide = q > K ? q : K;
    if (wide < H) wide = H;
    size_t clamp_room = N * wide > rows * I ? N * wide : rows * I;
    size_t tasks = ox_pool_threads() > 0 ? (size_t)ox_pool_threads() : 1;
    size_t s[N_ACTS] = {N * H,
                        N * H,
                        N * H,
                        N * q,
                        N * q,
                        N * kv,
                        N * kv,
                        rows * I,
                        rows * I,
                        clamp_room,
                        tasks * N,
                        (size_t)n_out * H,
                        (size_t)n_out * c->text_hidden};
    memcpy(sz, s, sizeof s);
}

/* Each pixel block of the patch grid, flattened as the processor does: patch (py, px) is
 * row py * pw + px; inside it the pixels row by row, each R, G, B; mapped to 2 * value - 1. */
static void patchify(const float *rgb, int width, int p, int ph, int pw, float *out) {
    size_t K = (size_t)3 * p * p;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            float *dst = out + ((size_t)py * pw + px) * K;
            for (int y = 0; y < p; y++) {
                const float *src = rgb + (((size_t)py * p + y) * width + (size_t)px * p) * 3;
                for (int i = 0; i < 3 * p; i++) dst[(size_t)y * 3 * p + i] = 2.0f * src[i] - 1.0f;
            }
        }
}

/* ---- the backend seam: run now on the CPU, or record for the GPU (gpu/record.h) ---- */

/* y = clamp(x, lo, hi) over count floats (y may be x) */
static void op_clamp(acts *A, float *y, const float *x, size_t count, float lo, float hi) {
    if (A->gpu) {
        if (y != x) ox_gpu_copy(A->gpu, y, x, count);
        return ox_gpu_clamp(A->gpu, y, count, lo, hi);
    }
    for (size_t i = 0; i < count; i++) y[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
}

static int op_matmul(ox_vision *v, acts *A, const ox_matrix *W, const float *x, int n, float *y, ox_err *err) {
    return A->gpu ? ox_gpu_linear(A->gpu, &v->ws, W, x, n, y, err) : ox_matmul(&v->ws, W, x, n, y, err);
}

/* y = rmsnorm(x) (* w) over rows of width */
static void op_rms(acts *A, float *y, const float *x, const float *w, int rows, int width, float eps) {
    if (A->gpu) return ox_gpu_rms(A->gpu, y, x, w, rows, width, eps);
    for (int t = 0; t < rows; t++) ox_rmsnorm(y + (size_t)t * width, x + (size_t)t * width, w, width, eps);
}

static void op_add(acts *A, float *y, const float *x, size_t count) {
    if (A->gpu) return ox_gpu_add(A->gpu, y, x, count);
    for (size_t i = 0; i < count; i++) y[i] += x[i];
}

/* The 2-D rotation of each head: lanes [0, hd/2) turn with the patch's column, [hd/2, hd)
 * with its row, each half rotated in NEOX halves with frequencies theta^(-4i/hd). */
static void op_rope2d(acts *A, float *x, int n, int heads, int hd, int pw, float theta) {
    if (A->gpu) return ox_gpu_rope2d(A->gpu, x, n, heads, hd, pw, theta);
    for (int t = 0; t < n; t++) {
        float *row = x + (size_t)t * heads * hd;
        ox_rope_heads(row, heads, (size_t)hd, hd / 2, t % pw, hd / 4, theta, 1.0f);
        ox_rope_heads(row + hd / 2, heads, (size_t)hd, hd / 2, t / pw, hd / 4, theta, 1.0f);
    }
}

typedef struct attn_job {
    const float *q, *k, *v;
    float *out, *scores; /* scores: [tasks][n] */
    int n, nh, nkv, hd;
} attn_job;

/* softmax(q . k_j) v over every patch j, per (patch, head); scale 1 (q and k are normed). */
static void attn_task(void *ctx, int task, int n_tasks) {
    const attn_job *J = ctx;
    int items = J->n * J->nh, group = J->nh / J->nkv;
    int i0 = (int)((long long)items * task / n_tasks), i1 = (int)((long long)items * (task + 1) / n_tasks);
    float *s = J->scores + (size_t)task * J->n;
    size_t qs = (size_t)J->nh * J->hd, ks = (size_t)J->nkv * J->hd;
    for (int it = i0; it < i1; it++) {
        int t = it / J->nh, h = it % J->nh, g = h / group;
        const float *q = J->q + t * qs + (size_t)h * J->hd;
        for (int j = 0; j < J->n; j++) s[j] = ox_dot_f32(q, J->k + j * ks + (size_t)g * J->hd, J->hd);
        ox_softmax(s, J->n);
        float *o = J->out + t * qs + (size_t)h * J->hd;
        memset(o, 0, (size_t)J->hd * sizeof(float));
        for (int j = 0; j < J->n; j++) ox_axpy(o, s[j], J->v + j * ks + (size_t)g * J->hd, J->hd);
    }
}

static void op_attend(acts *A, int n, int nh, int nkv, int hd) {
    if (A->gpu) return ox_gpu_self_attend(A->gpu, A->q, A->k, A->v, A->att, n, nh, nkv, hd);
    attn_job J = {A->q, A->k, A->v, A->att, A->scores, n, nh, nkv, hd};
    ox_pool_run(attn_task, &J, ox_pool_threads() > 0 ? ox_pool_threads() : 1);
}

/* k x k average over the patch grid (pooled token (py/k) * (pw/k) + px/k), times sqrt(H),
 * then the standardization. */
static void op_pool(const ox_vision *v, acts *A, int ph, int pw) {
    int H = v->c.hidden, k = v->c.pool, ow = pw / k, n_out = (ph / k) * ow;
    float w = sqrtf((float)H) / (float)(k * k);
    if (A->gpu) return ox_gpu_pool(A->gpu, A->pooled, A->x, ph, pw, k, H, w, v->std_bias, v->std_scale);
    memset(A->pooled, 0, (size_t)n_out * H * sizeof(float));
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++)
            ox_axpy(A->pooled + ((size_t)(py / k) * ow + px / k) * H, w, A->x + ((size_t)py * pw + px) * H, H);
    if (!v->c.standardize) return;
    for (int t = 0; t < n_out; t++)
        for (int i = 0; i < H; i++) {
            float *o = A->pooled + (size_t)t * H + i;
            *o = (*o - v->std_bias[i]) * v->std_scale[i];
        }
}

/* y = W x over n rows, with the layer's clamps when the checkpoint clips its linears. */
static int linear(ox_vision *v, const vision_layer *L, int i, const float *x, int n, float *y, acts *A, ox_err *err) {
    const ox_matrix *W = &L->w[i];
    if (v->c.clipped) {
        op_clamp(A, A->clamped, x, (size_t)n * W->cols, L->clamp[i][0], L->clamp[i][1]);
        x = A->clamped;
    }
    TRY(op_matmul(v, A, W, x, n, y, err));
    if (v->c.clipped) op_clamp(A, y, y, (size_t)n * W->rows, L->clamp[i][2], L->clamp[i][3]);
    return 0;
}

static int layer(ox_vision *v, const vision_layer *L, int n, int pw, acts *A, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
    op_rms(A, A->xn, A->x, L->ln1, n, H, c->eps);
    TRY(linear(v, L, VL_Q, A->xn, n, A->q, A, err));
    TRY(linear(v, L, VL_K, A->xn, n, A->k, A, err));
    TRY(linear(v, L, VL_V, A->xn, n, A->v, A, err));
    /* RMSNorm of each head (with the norm's scale; V without), then the rotation */
    op_rms(A, A->q, A->q, L->q_norm, n * nh, hd, c->eps);
    op_rms(A, A->k, A->k, L->k_norm, n * nkv, hd, c->eps);
    op_rms(A, A->v, A->v, NULL, n * nkv, hd, c->eps);
    op_rope2d(A, A->q, n, nh, hd, pw, c->rope_theta);
    op_rope2d(A, A->k, n, nkv, hd, pw, c->rope_theta);
    op_attend(A, n, nh, nkv, hd);
    TRY(linear(v, L, VL_O, A->att, n, A->o, A, err));
    op_rms(A, A->o, A->o, L->attn_post_norm, n, H, c->eps);
    op_add(A, A->x, A->o, (size_t)n * H);
    op_rms(A, A->xn, A->x, L->ln2, n, H, c->eps);
    for (int t0 = 0; t0 < n; t0 += MLP_ROWS) {
        int m = n - t0 < MLP_ROWS ? n - t0 : MLP_ROWS;
        const float *in = A->xn + (size_t)t0 * H;
        TRY(linear(v, L, VL_GATE, in, m, A->g, A, err));
        TRY(linear(v, L, VL_UP, in, m, A->u, A, err));
        if (A->gpu) ox_gpu_geglu(A->gpu, A->g, A->g, A->u, m, c->ffn, c->ffn, c->ffn);
        for (int t = 0; !A->gpu && t < m; t++)
            ox_geglu(A->g + (size_t)t * c->ffn, A->g + (size_t)t * c->ffn, A->u + (size_t)t * c->ffn, c->ffn);
        TRY(linear(v, L, VL_DOWN, A->g, m, A->o + (size_t)t0 * H, A, err));
    }
    op_rms(A, A->o, A->o, L->ffn_post_norm, n, H, c->eps);
    op_add(A, A->x, A->o, (size_t)n * H);
    return 0;
}

static int check_size(const ox_vision *v, int height, int width, int max_tokens, int *n_out, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int side = c->patch * c->pool;
    if (height <= 0 || width <= 0 || height % side || width % side)
        return ox_errf(err, OX_E_RANGE,
                       "image %dx%d: height and width must be positive multiples of %d (patch %d x pooling %d)", width,
                       height, side, c->patch, c->pool);
    long long patches = (long long)(height / c->patch) * (width / c->patch);
    if (patches > ox_vision_max_patches(v))
        return ox_errf(err, OX_E_RANGE, "image %dx%d: %lld patches, the vision tower takes at most %d (%d soft tokens)",
                       width, height, patches, ox_vision_max_patches(v), OX_VISION_MAX_SOFT_TOKENS);
    if (height / c->patch > v->pos_rows || width / c->patch > v->pos_rows)
        return ox_errf(err, OX_E_RANGE, "image %dx%d: %d x %d patches, the position table reaches %d along a side",
                       width, height, width / c->patch, height / c->patch, v->pos_rows);
    *n_out = (int)(patches / (c->pool * c->pool));
    if (*n_out > max_tokens)
        return ox_errf(err, OX_E_RANGE, "image %dx%d gives %d soft tokens, room for %d", width, height, *n_out,
                       max_tokens);
    return 0;
}

/* Rows [0, count) of the position table's half `axis` (0: columns, 1: rows), dequantized. */
static int position_rows(const ox_vision *v, int axis, int count, float *dst, ox_err *err) {
    const ox_tensor *pt = v->pos_table;
    uint64_t rb, H = (uint64_t)v->c.hidden;
    if (ox_row_bytes(pt->type, H, &rb, err)) return err ? err->code : OX_E_UNSUPPORTED;
    uint8_t *raw = malloc((size_t)(rb * (uint64_t)count));
    if (!raw) return ox_errf(err, OX_E_NOMEM, "vision: out of memory reading %s", pt->name);
    int rc = ox_tensor_read_rows(pt, (uint64_t)axis * (uint64_t)v->c.pos_size, (uint64_t)count, raw, err);
    for (int r = 0; !rc && r < count; r++) ox_dequantize_row(pt->type, raw + r * rb, dst + (size_t)r * H, (size_t)H);
    free(raw);
    return rc;
}

/* The embedding of the patches into x: the patch projection, then the column table's row of
 * each patch (staged in xn), then its row table's (staged in o), added in that order. */
static int embed_patches(ox_vision *v, const float *rgb, int width, int ph, int pw, acts *A, ox_err *err) {
    int p = v->c.patch, n = ph * pw, H = v->c.hidden;
    float *tab = malloc((size_t)(ph + pw) * H * sizeof(float));
    if (!tab) return ox_errf(err, OX_E_NOMEM, "vision: out of memory for the position rows");
    int rc = position_rows(v, 0, pw, tab, err);
    if (!rc) rc = position_rows(v, 1, ph, tab + (size_t)pw * H, err);
    for (int t = 0; !rc && t < n; t++) {
        memcpy(A->xn + (size_t)t * H, tab + (size_t)(t % pw) * H, (size_t)H * sizeof(float));
        memcpy(A->o + (size_t)t * H, tab + (size_t)(pw + t / pw) * H, (size_t)H * sizeof(float));
    }
    free(tab);
    if (rc) return rc;
    patchify(rgb, width, p, ph, pw, A->clamped);
    if (A->gpu) { /* the host's rows go up before the step computes */
        ox_gpu_upload(A->gpu, A->clamped, (size_t)n * 3 * p * p * sizeof(float));
        ox_gpu_upload(A->gpu, A->xn, (size_t)n * H * sizeof(float));
        ox_gpu_upload(A->gpu, A->o, (size_t)n * H * sizeof(float));
    }
    TRY(op_matmul(v, A, &v->patch, A->clamped, n, A->x, err));
    op_add(A, A->x, A->xn, (size_t)n * H);
    op_add(A, A->x, A->o, (size_t)n * H);
    return 0;
}

/* One image through the tower (and the embedder when embed): n_out rows of text_hidden (embed)
 * or hidden floats to out. On the GPU the whole image is one step, read back at its end. */
static int run(ox_vision *v, const float *rgb, int height, int width, int n_out, int embed, float *out, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int ph = height / c->patch, pw = width / c->patch, n = ph * pw;
    size_t sz[N_ACTS], at = 0;
    uint32_t regions[N_ACTS];
    act_sizes(c, n, n_out, sz);
    for (int i = 0; i < N_ACTS; i++) {
        regions[i] = (uint32_t)at;
        at += (sz[i] * sizeof(float) + 63) & ~(size_t)63;
    }
    uint8_t *buf = malloc(at);
    if (!buf) return ox_errf(err, OX_E_NOMEM, "vision: out of memory for %zu MB of activations", at >> 20);
    acts A = {.gpu = v->gpu};
    float **slot[N_ACTS] = {&A.x, &A.xn, &A.o,       &A.q,      &A.att,    &A.k,  &A.v,
                            &A.g, &A.u,  &A.clamped, &A.scores, &A.pooled, &A.emb};
    for (int i = 0; i < N_ACTS; i++) *slot[i] = (float *)(buf + regions[i]);
    if (A.gpu) ox_gpu_begin(A.gpu, v, 0, 0, buf, at, regions, N_ACTS);
    int rc = embed_patches(v, rgb, width, ph, pw, &A, err);
    for (int l = 0; !rc && l < c->n_layers; l++) rc = layer(v, &v->L[l], n, pw, &A, err);
    if (!rc) op_pool(v, &A, ph, pw);
    /* the embedder: RMSNorm without a scale, then the projection to the text width */
    if (!rc && embed) op_rms(&A, A.pooled, A.pooled, NULL, n_out, c->hidden, c->eps);
    if (!rc && embed) rc = op_matmul(v, &A, &v->proj, A.pooled, n_out, A.emb, err);
    const float *res = embed ? A.emb : A.pooled;
    size_t bytes = (size_t)n_out * (embed ? c->text_hidden : c->hidden) * sizeof(float);
    if (!rc && A.gpu) ox_gpu_read(A.gpu, res, bytes, out);
    if (!rc && A.gpu) rc = ox_gpu_run(A.gpu, err);
    else if (!rc) memcpy(out, res, bytes);
    free(buf);
    return rc;
}

int ox_vision_encode(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err) {
    int n = 0;
    if (!rgb || !out) return ox_errf(err, OX_E_RANGE, "vision: no image or no output buffer");
    TRY(check_size(v, height, width, max_tokens, &n, err));
    if (v->unified) return ox_uvision_encode(v->unified, rgb, height, width, out, err);
    TRY(run(v, rgb, height, width, n, 0, out, err));
    return n;
}

int ox_vision_embed(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err) {
    int n = 0;
    if (!rgb || !out) return ox_errf(err, OX_E_RANGE, "vision: no image or no output buffer");
    TRY(check_size(v, height, width, max_tokens, &n, err));
    if (v->unified) return ox_uvision_embed(v->unified, rgb, height, width, out, err);
    TRY(run(v, rgb, height, width, n, 1, out, err));
    return n;
}
