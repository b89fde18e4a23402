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

/* kt[g][d][j] = k[j][g * hd + d]; the padding patches 0 (their scores are not read) */
static void transpose_k(float *kt, const float *k, int n, int n_pad, int nkv, int hd) {
    for (int c = 0; c < nkv * hd; c++) {
        float *row = kt + (size_t)c * n_pad;
        for (int j = 0; j < n; j++) row[j] = k[(size_t)j * nkv * hd + c];
        for (int j = n; j < n_pad; j++) row[j] = 0;
    }
}

/* Attention tasks: two per thread, so a thread that starts late is caught up by the other. */
static int attn_tasks(int n, int nh) {
    int threads = ox_pool_threads() > 0 ? ox_pool_threads() : 1, items = nh * ((n + ATT_QB - 1) / ATT_QB);
    return threads == 1 ? 1 : 2 * threads < items ? 2 * threads : items;
}

/* RMSNorm of each head (with the norm's scale, or none), then the 2-D rotation: lanes
 * [0, hd/2) turn with the patch's column, [hd/2, hd) with its row, each half rotated in
 * NEOX halves with frequencies theta^(-4i/hd). */
static void heads_norm_rope(float *x, int n, int heads, int hd, const float *w, int pw, float theta, float eps, int rope) {
    for (int t = 0; t < n; t++) {
        float *row = x + (size_t)t * heads * hd;
        for (int h = 0; h < heads; h++) ox_rmsnorm(row + (size_t)h * hd, row + (size_t)h * hd, w, hd, eps);
        if (!rope) continue;
        ox_rope_heads(row, heads, (size_t)hd, hd / 2, t % pw, hd / 4, theta, 1.0f);
        ox_rope_heads(row + hd / 2, heads, (size_t)hd, hd / 2, t / pw, hd / 4, theta, 1.0f);
    }
}

static void rms_rows(float *y, const float *x, const float *w, int n, int H, float eps) {
    for (int t = 0; t < n; t++) ox_rmsnorm(y + (size_t)t * H, x + (size_t)t * H, w, H, eps);
}

static int layer(ox_vision *v, const vision_layer *L, int n, int pw, acts *A, float *scores, ox_err *err) {
    const ox_vision_config *c = &v->c;
    int H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
    rms_rows(A->xn, A->x, L->ln1, n, H, c->eps);
    TRY(linear(v, L, VL_Q, A->xn, n, A->q, A, err));
    TRY(linear(v, L, VL_K, A->xn, n, A->k, A, err));
    TRY(linear(v, L, VL_V, A->xn, n, A->v, A, err));
    heads_norm_rope(A->q, n, nh, hd, L->q_norm, pw, c->rope_theta, c->eps, 1);
    heads_norm_rope(A->k, n, nkv, hd, L->k_norm, pw, c->rope_theta, c->eps, 1);
    heads_norm_rope(A->v, n, nkv, hd, NULL, pw, c->rope_theta, c->eps, 0);
    int n_pad = (n + 7) & ~7;
    transpose_k(A->kt, A->k, n, n_pad, nkv, hd);
    attn_job J = {A->q, A->kt, A->v, A->att, scores, n, n_pad, nh, nkv, hd};
    ox_pool_run(attn_task, &J, attn_tasks(n, nh));
    TRY(linear(v, L, VL_O, A->att, n, A->o, A, err));
    rms_rows(A->o, A->o, L->attn_post_norm, n, H, c->eps);
    for (size_t i = 0; i < (size_t)n * H; i++) A->x[i] += A->o[i];
    rms_rows(A->xn, A->x, L->ln2, n, H, c->eps);
    for (int t0 = 0; t0 < n; t0 += MLP_ROWS) {
        int m = n - t0 < MLP_ROWS ? n - t0 : MLP_ROWS;
        const float *in = A->xn + (size_t)t0 * H;
        TRY(linear(v, L, VL_GATE, in, m, A->g, A, err));
        TRY(linear(v, L, VL_UP, in, m, A->u, A, err));
        for (int t = 0; t < m; t++)
            ox_geglu(A->g + (size_t)t * c->ffn, A->g + (size_t)t * c->ffn, A->u + (size_t)t * c->ffn, c->ffn);
        TRY(linear(v, L, VL_DOWN, A->g, m, A->o + (size_t)t0 * H, A, err));
    }
    rms_rows(A->o, A->o, L->ffn_post_norm, n, H, c->eps);
    for (size_t i = 0; i < (size_t)n * H; i++) A->x[i] += A->o[i];
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
    if (!rc) rms_rows(pooled, pooled, NULL, n, H, v->c.eps);
    if (!rc) rc = ox_matmul(&v->ws, &v->proj, pooled, n, out, err);
    free(pooled);
    return rc ? rc : n;
}
