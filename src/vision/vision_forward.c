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

/* The image's rows (x, xn, q, k, v, att, o: every patch; kt: k transposed) and the feed-forward's, which runs
 * MLP_ROWS patches at a time (g, u: MLP_ROWS x ffn), so the widest buffers do not grow with the
 * image; clamped: a linear's clamped input, room for either. */
#define MLP_ROWS 256
typedef struct acts {
    float *x, *xn, *q, *k, *kt, *v, *att, *o, *g, *u, *clamped;
} acts;

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

static void clamp_copy(float *dst, const float *src, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i] < lo ? lo : src[i] > hi ? hi : src[i];
}

/* y = W x over n rows, with the layer's clamps when the checkpoint clips its linears. */
static int linear(ox_vision *v, const vision_layer *L, int i, const float *x, int n, float *y, acts *A, ox_err *err) {
    const ox_matrix *W = &L->w[i];
    if (v->c.clipped) {
        clamp_copy(A->clamped, x, (size_t)n * W->cols, L->clamp[i][0], L->clamp[i][1]);
        x = A->clamped;
    }
    TRY(ox_matmul(&v->ws, W, x, n, y, err));
    if (v->c.clipped) clamp_copy(y, y, (size_t)n * W->rows, L->clamp[i][2], L->clamp[i][3]);
    return 0;
}

/* Linears of one input (Q, K, V; gate, up): one activation quantization and one fork/join for
 * all of them, unless each clamps its input with bounds of its own. */
static int linears(ox_vision *v, const vision_layer *L, const int *idx, int count, const float *x, int n,
                   float *const *ys, acts *A, ox_err *err) {
    if (v->c.clipped) {
        for (int i = 0; i < count; i++) TRY(linear(v, L, idx[i], x, n, ys[i], A, err));
        return 0;
    }
    const ox_matrix *Ws[3];
    for (int i = 0; i < count; i++) Ws[i] = &L->w[idx[i]];
    return ox_matmul_multi(&v->ws, Ws, count, x, n, ys, err);
}

/* The attention of a whole image as blocked products (ox_gemm_f32): K transposed once per
 * layer (kt: per K/V head, hd rows of n_pad patches), then for a block of ATT_QB queries of one
 * head the scores S = Q K^T, a softmax per row and O = S V. A work item is (head, query block);
 * each task takes an equal run of them. */
#define ATT_QB 16
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

/* Attention tasks: two per thread, so a thread that starts late is caught up by the other. */
static int attn_tasks(int n, int nh) {
    int threads = ox_pool_threads() > 0 ? ox_pool_threads() : 1, items = nh * ((n + ATT_QB - 1) / ATT_QB);
    return threads == 1 ? 1 : 2 * threads < items ? 2 * threads : items;
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

static int layer(ox_vision *v, const vision_layer *L, int n, int pw, acts *A, float *scores, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, n_pad = (n + 7) & ~7;
    static const int qkv[3] = {VL_Q, VL_K, VL_V}, gate_up[2] = {VL_GATE, VL_UP};
    rows_job R = {step_residual, c, L, A, n, pw, n_pad, NULL, L->ln1};
    run_rows(&R, OX_PROF_NORM);
    TRY(linears(v, L, qkv, 3, A->xn, n, (float *const[]){A->q, A->k, A->v}, A, err));
    R.step = step_heads;
    run_rows(&R, OX_PROF_NORM);
    attn_job J = {A->q, A->kt, A->v, A->att, scores, n, n_pad, nh, nkv, hd};
    ox_pool_run(attn_task, &J, attn_tasks(n, nh));
    TRY(linear(v, L, VL_O, A->att, n, A->o, A, err));
    R.step = step_residual, R.post = L->attn_post_norm, R.norm = L->ln2;
    run_rows(&R, OX_PROF_NORM);
    for (int t0 = 0; t0 < n; t0 += MLP_ROWS) {
        int m = n - t0 < MLP_ROWS ? n - t0 : MLP_ROWS;
        const float *in = A->xn + (size_t)t0 * H;
        TRY(linears(v, L, gate_up, 2, in, m, (float *const[]){A->g, A->u}, A, err));
        rows_job G = {.step = step_geglu, .c = c, .L = L, .A = A, .n = m};
        run_rows(&G, OX_PROF_GEGLU);
        TRY(linear(v, L, VL_DOWN, A->g, m, A->o + (size_t)t0 * H, A, err));
    }
    R.step = step_residual, R.post = L->ffn_post_norm, R.norm = NULL;
    run_rows(&R, OX_PROF_NORM);
    return 0;
}

/* k x k average over the patch grid (pooled token (py/k) * (pw/k) + px/k), times sqrt(H),
 * then the standardization. */
static void pool(const ox_vision *v, const float *x, int ph, int pw, float *out) {
    int H = v->c.hidden, k = v->c.pool, ow = pw / k, n_out = (ph / k) * ow;
    memset(out, 0, (size_t)n_out * H * sizeof(float));
    float w = sqrtf((float)H) / (float)(k * k);
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++)
            ox_axpy(out + ((size_t)(py / k) * ow + px / k) * H, w, x + ((size_t)py * pw + px) * H, H);
    if (!v->c.standardize) return;
    for (int t = 0; t < n_out; t++)
        for (int i = 0; i < H; i++) {
            float *o = out + (size_t)t * H + i;
            *o = (*o - v->std_bias[i]) * v->std_scale[i];
        }
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

static int encode(ox_vision *v, const float *rgb, int height, int width, float *pooled, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int p = c->patch, ph = height / p, pw = width / p, n = ph * pw, H = c->hidden;
    int q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim, I = c->ffn, K = 3 * p * p;
    int wide = q > K ? q : K, rows = n < MLP_ROWS ? n : MLP_ROWS;
    if (wide < H) wide = H;
    size_t clamp_room = (size_t)n * wide > (size_t)rows * I ? (size_t)n * wide : (size_t)rows * I;
    size_t N = (size_t)n, N_pad = (N + 7) & ~(size_t)7;
    size_t need = N * ((size_t)H * 3 + (size_t)q * 2 + (size_t)kv * 2) + (size_t)rows * I * 2 + clamp_room +
                  ((size_t)kv + (size_t)attn_tasks(n, c->n_heads) * ATT_QB) * N_pad;
    float *buf = malloc(need * sizeof(float));
    if (!buf) return ox_errf(err, OX_E_NOMEM, "vision: out of memory for %zu MB of activations", need * 4 >> 20);
    acts A;
    float *at = buf;
    A.x = at, at += N * H;
    A.xn = at, at += N * H;
    A.o = at, at += N * H;
    A.q = at, at += N * q;
    A.att = at, at += N * q;
    A.k = at, at += N * kv;
    A.v = at, at += N * kv;
    A.g = at, at += (size_t)rows * I;
    A.u = at, at += (size_t)rows * I;
    A.clamped = at, at += clamp_room;
    A.kt = at, at += (size_t)kv * N_pad;
    memset(A.kt, 0, (size_t)kv * N_pad * sizeof(float)); /* the padding columns stay 0 */
    float *scores = at;
    /* embed: the patch projection plus the column and row tables */
    patchify(rgb, width, p, ph, pw, A.clamped);
    int rc = ox_matmul(&v->ws, &v->patch, A.clamped, n, A.x, err);
    float *cols = A.clamped, *rws = A.clamped + (size_t)pw * H; /* the patches are spent */
    if (!rc) rc = position_rows(v, 0, pw, cols, err);
    if (!rc) rc = position_rows(v, 1, ph, rws, err);
    for (int t = 0; !rc && t < n; t++) {
        float *x = A.x + (size_t)t * H;
        const float *cx = cols + (size_t)(t % pw) * H, *ry = rws + (size_t)(t / pw) * H;
        for (int i = 0; i < H; i++) x[i] += cx[i] + ry[i];
    }
    for (int l = 0; !rc && l < c->n_layers; l++) rc = layer(v, &v->L[l], n, pw, &A, scores, err);
    if (!rc) pool(v, A.x, ph, pw, pooled);
    free(buf);
    return rc;
}

int ox_vision_encode(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err) {
    int n = 0;
    if (!rgb || !out) return ox_errf(err, OX_E_RANGE, "vision: no image or no output buffer");
    TRY(check_size(v, height, width, max_tokens, &n, err));
    if (v->unified) return ox_uvision_encode(v->unified, rgb, height, width, out, err);
    TRY(encode(v, rgb, height, width, out, err));
    return n;
}

int ox_vision_embed(ox_vision *v, const float *rgb, int height, int width, float *out, int max_tokens, ox_err *err) {
    int n = 0, H = v->c.hidden;
    if (!rgb || !out) return ox_errf(err, OX_E_RANGE, "vision: no image or no output buffer");
    TRY(check_size(v, height, width, max_tokens, &n, err));
    if (v->unified) return ox_uvision_embed(v->unified, rgb, height, width, out, err);
    float *pooled = malloc((size_t)n * H * sizeof(float));
    if (!pooled) return ox_errf(err, OX_E_NOMEM, "vision: out of memory");
    int rc = encode(v, rgb, height, width, pooled, err);
    /* the embedder: RMSNorm without a scale, then the projection to the text width */
    for (int t = 0; !rc && t < n; t++) ox_rmsnorm(pooled + (size_t)t * H, pooled + (size_t)t * H, NULL, H, v->c.eps);
    if (!rc) rc = ox_matmul(&v->ws, &v->proj, pooled, n, out, err);
    free(pooled);
    return rc ? rc : n;
}
