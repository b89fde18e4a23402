/* vision_forward.c — one image through the tower and the embedder (vision.h, docs/vision.md).
 * Whole image at once: the patches of one image attend to each other without a mask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/pool.h"
#include "kernels/prof.h"
#include "vision/unified_embed.h"
#include "vision/vision_impl.h"

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int rc_ = (x);                                                                                                 \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* The image's activations, one region each (gpu/record.h: the GPU keeps a buffer per region):
 * the rows of every patch (x, xn, o, q, att, k, v); k transposed for the CPU attention (kt);
 * the feed-forward's, which runs MLP_ROWS patches at a time (g, u: MLP_ROWS x ffn), so the
 * widest buffers do not grow with the image; a linear's clamped input (first the patches); the
 * CPU attention's scores per task; the pooled rows and the embedder's. gpu: the recorder, or
 * NULL on the CPU. */
#define MLP_ROWS 256
typedef struct acts {
    float *x, *xn, *o, *q, *att, *k, *v, *kt, *g, *u, *clamped, *scores, *pooled, *emb;
    ox_gpu *gpu;
} acts;
#define N_ACTS 14

/* The CPU attention of a whole image as blocked products (ox_gemm_f32): K transposed once per
 * layer (kt: per K/V head, hd rows of n_pad patches), then for a block of ATT_QB queries of one
 * head the scores S = Q K^T, a softmax per row and O = S V. A work item is (head, query block);
 * each task takes an equal run of them. */
#define ATT_QB 16
static int pad8(int n) { return (n + 7) & ~7; }

/* Attention tasks: two per thread, so a thread that starts late is caught up by the other. */
static int attn_tasks(int n, int nh) {
    int threads = ox_pool_threads() > 0 ? ox_pool_threads() : 1, items = nh * ((n + ATT_QB - 1) / ATT_QB);
    return threads == 1 ? 1 : 2 * threads < items ? 2 * threads : items;
}

/* The regions' floats for an image of n patches pooled to n_out rows. */
static void act_sizes(const ox_vision_config *c, int n, int n_out, size_t sz[N_ACTS]) {
    size_t N = (size_t)n, N_pad = (size_t)pad8(n), H = (size_t)c->hidden, q = (size_t)c->n_heads * c->head_dim;
    size_t kv = (size_t)c->n_kv_heads * c->head_dim, I = (size_t)c->ffn, K = 3 * (size_t)c->patch * c->patch;
    size_t rows = n < MLP_ROWS ? N : MLP_ROWS, wide = q > K ? q : K;
    if (wide < H) wide = H;
    size_t clamp_room = N * wide > rows * I ? N * wide : rows * I;
    size_t s[N_ACTS] = {N * H,
                        N * H,
                        N * H,
                        N * q,
                        N * q,
                        N * kv,
                        N * kv,
                        kv * N_pad,
                        rows * I,
                        rows * I,
                        clamp_room,
                        (size_t)attn_tasks(n, c->n_heads) * ATT_QB * N_pad,
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

/* The per-patch steps between the matmuls, each one fork/join over the patches (a patch's
 * rows depend on that patch alone, so the split does not change them). */
typedef struct rows_job rows_job;
struct rows_job {
    void (*step)(const rows_job *J, int t0, int t1);
    const ox_vision_config *c;
    const vision_layer *L;
    const acts *A;
    int n, pw, n_pad;
    const float *post, *norm; /* residual: the branch's post norm; then x's norm into xn */
};

static void rows_task(void *ctx, int task, int n_tasks) {
    const rows_job *J = ctx;
    J->step(J, (int)((long long)J->n * task / n_tasks), (int)((long long)J->n * (task + 1) / n_tasks));
}

/* Below this many patches one thread does a step alone (a fork/join costs more). */
#define ROWS_FORK_MIN 16

static void run_rows(rows_job *J, int prof_slot) {
    int threads = ox_pool_threads() > 0 ? ox_pool_threads() : 1;
    double pt = ox_prof_begin(); /* booked under the step's kernel, not as attention */
    if (threads > 1 && J->n >= ROWS_FORK_MIN) {
        ox_prof_fork_slot(prof_slot);
        ox_pool_run(rows_task, J, threads);
    } else J->step(J, 0, J->n);
    ox_prof_end(pt, prof_slot, 0);
}

/* RMSNorm of each head (with the norm's scale, or none), then the 2-D rotation: lanes
 * [0, hd/2) turn with the patch's column, [hd/2, hd) with its row, each half rotated in
 * NEOX halves with frequencies theta^(-4i/hd). */
static void head_norm_rope(const ox_vision_config *c, float *row, int heads, const float *w, int t, int pw, int rope) {
    int hd = c->head_dim;
    for (int h = 0; h < heads; h++) ox_rmsnorm(row + (size_t)h * hd, row + (size_t)h * hd, w, hd, c->eps);
    if (!rope) return;
    ox_rope_heads(row, heads, (size_t)hd, hd / 2, t % pw, hd / 4, c->rope_theta, 1.0f);
    ox_rope_heads(row + hd / 2, heads, (size_t)hd, hd / 2, t / pw, hd / 4, c->rope_theta, 1.0f);
}

/* q, k, v of each patch normed per head (q and k rotated), and k's column of kt
 * (kt[g][d][t] = k[t][g * hd + d]; the padding columns stay 0: their scores are not read) */
static void step_heads(const rows_job *J, int t0, int t1) {
    const ox_vision_config *c = J->c;
    size_t q = (size_t)c->n_heads * c->head_dim, kv = (size_t)c->n_kv_heads * c->head_dim;
    for (int t = t0; t < t1; t++) {
        float *k = J->A->k + t * kv;
        head_norm_rope(c, J->A->q + t * q, c->n_heads, J->L->q_norm, t, J->pw, 1);
        head_norm_rope(c, k, c->n_kv_heads, J->L->k_norm, t, J->pw, 1);
        head_norm_rope(c, J->A->v + t * kv, c->n_kv_heads, NULL, t, J->pw, 0);
        for (size_t i = 0; i < kv; i++) J->A->kt[i * J->n_pad + t] = k[i];
    }
}

/* x += RMSNorm(o) * post (when post), then xn = RMSNorm(x) * norm (when norm) */
static void step_residual(const rows_job *J, int t0, int t1) {
    int H = J->c->hidden;
    for (int t = t0; t < t1; t++) {
        float *x = J->A->x + (size_t)t * H, *o = J->A->o + (size_t)t * H;
        if (J->post) {
            ox_rmsnorm(o, o, J->post, H, J->c->eps);
            ox_axpy(x, 1.0f, o, H);
        }
        if (J->norm) ox_rmsnorm(J->A->xn + (size_t)t * H, x, J->norm, H, J->c->eps);
    }
}

/* g = gelu_tanh(g) * u over the chunk's rows */
static void step_geglu(const rows_job *J, int t0, int t1) {
    size_t I = (size_t)J->c->ffn;
    for (int t = t0; t < t1; t++) ox_geglu(J->A->g + t * I, J->A->g + t * I, J->A->u + t * I, (int)I);
}

/* Per head: RMSNorm of q and k (with their scales) and of v (without), then the 2-D rotation
 * of q and k (on the CPU also k's column of kt). */
static void op_heads(const ox_vision_config *c, acts *A, const vision_layer *L, int n, int pw) {
    int hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
    if (A->gpu) {
        ox_gpu_rms(A->gpu, A->q, A->q, L->q_norm, n * nh, hd, c->eps);
        ox_gpu_rms(A->gpu, A->k, A->k, L->k_norm, n * nkv, hd, c->eps);
        ox_gpu_rms(A->gpu, A->v, A->v, NULL, n * nkv, hd, c->eps);
        ox_gpu_rope2d(A->gpu, A->q, n, nh, hd, pw, c->rope_theta);
        return ox_gpu_rope2d(A->gpu, A->k, n, nkv, hd, pw, c->rope_theta);
    }
    rows_job R = {.step = step_heads, .c = c, .L = L, .A = A, .n = n, .pw = pw, .n_pad = pad8(n)};
    run_rows(&R, OX_PROF_NORM);
}

/* The residual step (step_residual's) on either backend */
static void op_residual(const ox_vision_config *c, acts *A, int n, const float *post, const float *norm) {
    int H = c->hidden;
    if (A->gpu) {
        if (post) ox_gpu_rms(A->gpu, A->o, A->o, post, n, H, c->eps);
        if (post) ox_gpu_add(A->gpu, A->x, A->o, (size_t)n * H);
        if (norm) ox_gpu_rms(A->gpu, A->xn, A->x, norm, n, H, c->eps);
        return;
    }
    rows_job R = {.step = step_residual, .c = c, .A = A, .n = n, .post = post, .norm = norm};
    run_rows(&R, OX_PROF_NORM);
}

/* g = gelu_tanh(g) * u over the m rows of the feed-forward's chunk */
static void op_geglu(const ox_vision_config *c, acts *A, int m) {
    if (A->gpu) return ox_gpu_geglu(A->gpu, A->g, A->g, A->u, m, c->ffn, c->ffn, c->ffn);
    rows_job G = {.step = step_geglu, .c = c, .A = A, .n = m};
    run_rows(&G, OX_PROF_GEGLU);
}

typedef struct attn_job {
    const float *q, *kt, *v;
    float *out, *scores; /* scores: [tasks][ATT_QB * n_pad] */
    int n, n_pad, nh, nkv, hd;
} attn_job;

static void attn_task(void *ctx, int task, int n_tasks) {
    const attn_job *J = ctx;
    int blocks = (J->n + ATT_QB - 1) / ATT_QB, items = blocks * J->nh, group = J->nh / J->nkv;
    int i0 = (int)((long long)items * task / n_tasks), i1 = (int)((long long)items * (task + 1) / n_tasks);
    size_t np = (size_t)J->n_pad, qs = (size_t)J->nh * J->hd, ks = (size_t)J->nkv * J->hd;
    float *s = J->scores + (size_t)task * ATT_QB * np;
    for (int it = i0; it < i1; it++) {
        int h = it / blocks, t0 = (it % blocks) * ATT_QB, m = J->n - t0 < ATT_QB ? J->n - t0 : ATT_QB, g = h / group;
        const float *kt = J->kt + (size_t)g * J->hd * np;
        ox_gemm_f32(s, np, J->q + t0 * qs + (size_t)h * J->hd, qs, kt, np, m, J->n_pad, J->hd);
        for (int i = 0; i < m; i++) ox_softmax(s + i * np, J->n);
        ox_gemm_f32(J->out + t0 * qs + (size_t)h * J->hd, qs, s, np, J->v + (size_t)g * J->hd, ks, m, J->hd, J->n);
    }
}

static void op_attend(const ox_vision_config *c, acts *A, int n) {
    int nh = c->n_heads, nkv = c->n_kv_heads, hd = c->head_dim;
    if (A->gpu) return ox_gpu_self_attend(A->gpu, A->q, A->k, A->v, A->att, n, nh, nkv, hd);
    attn_job J = {A->q, A->kt, A->v, A->att, A->scores, n, pad8(n), nh, nkv, hd};
    ox_pool_run(attn_task, &J, attn_tasks(n, nh));
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

/* Linears of one input (Q, K, V; gate, up): one activation quantization and one fork/join for
 * all of them, unless each clamps its input with bounds of its own (or they run on the GPU). */
static int linears(ox_vision *v, const vision_layer *L, const int *idx, int count, const float *x, int n,
                   float *const *ys, acts *A, ox_err *err) {
    if (v->c.clipped || A->gpu) {
        for (int i = 0; i < count; i++) TRY(linear(v, L, idx[i], x, n, ys[i], A, err));
        return 0;
    }
    const ox_matrix *Ws[3];
    for (int i = 0; i < count; i++) Ws[i] = &L->w[idx[i]];
    return ox_matmul_multi(&v->ws, Ws, count, x, n, ys, err);
}

static int layer(ox_vision *v, const vision_layer *L, int n, int pw, acts *A, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int H = c->hidden;
    static const int qkv[3] = {VL_Q, VL_K, VL_V}, gate_up[2] = {VL_GATE, VL_UP};
    op_residual(c, A, n, NULL, L->ln1);
    TRY(linears(v, L, qkv, 3, A->xn, n, (float *const[]){A->q, A->k, A->v}, A, err));
    op_heads(c, A, L, n, pw);
    op_attend(c, A, n);
    TRY(linear(v, L, VL_O, A->att, n, A->o, A, err));
    op_residual(c, A, n, L->attn_post_norm, L->ln2);
    for (int t0 = 0; t0 < n; t0 += MLP_ROWS) {
        int m = n - t0 < MLP_ROWS ? n - t0 : MLP_ROWS;
        const float *in = A->xn + (size_t)t0 * H;
        TRY(linears(v, L, gate_up, 2, in, m, (float *const[]){A->g, A->u}, A, err));
        op_geglu(c, A, m);
        TRY(linear(v, L, VL_DOWN, A->g, m, A->o + (size_t)t0 * H, A, err));
    }
    op_residual(c, A, n, L->ffn_post_norm, NULL);
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
    float **slot[N_ACTS] = {&A.x,  &A.xn, &A.o, &A.q,       &A.att,    &A.k,      &A.v,
                            &A.kt, &A.g,  &A.u, &A.clamped, &A.scores, &A.pooled, &A.emb};
    for (int i = 0; i < N_ACTS; i++) *slot[i] = (float *)(buf + regions[i]);
    if (A.gpu) ox_gpu_begin(A.gpu, v, 0, 0, buf, at, regions, N_ACTS);
    else memset(A.kt, 0, sz[7] * sizeof(float)); /* kt's padding columns stay 0 */
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
