/* kernels.c — the matmul driver (activation quantization, row tiles over the pool), the
 * generic dequantize-and-dot path, the scalar references, and the row kernels (RMSNorm,
 * RoPE, softmax, GEGLU, dot, axpy) written with GCC/Clang vector extensions so the same
 * source becomes SIMD128 in wasm and SSE/AVX natively. */
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"
#include "kernels/iq_tiles.h"
#include "kernels/affine_tiles.h"
#include "kernels/pool.h"
#include "kernels/prof.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 8-lane vectors: two v128 in wasm, one ymm with AVX, two xmm without. Only static inline
 * functions pass them, so the compilers' note that their ABI depends on -mavx does not apply. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int16_t v8s __attribute__((vector_size(16)));
typedef int8_t v8c __attribute__((vector_size(8)));

static inline v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void store8(float *p, v8f v) { memcpy(p, &v, sizeof v); }
static inline v8f splat8(float f) { return (v8f){f, f, f, f, f, f, f, f}; }
static inline v8f select8(v8i m, v8f a, v8f b) { return (v8f)(((v8i)a & m) | ((v8i)b & ~m)); }
static inline float hsum8(v8f v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

/* ------------------------------------------------------------------ scratch */

void *ox_scratch_get(ox_scratch *s, size_t bytes, ox_err *err) {
    if (bytes <= s->cap && s->p) return s->p;
    size_t cap = s->cap + s->cap / 2;
    if (cap < bytes) cap = bytes;
    cap = (cap + 63) & ~(size_t)63;
    if (cap < bytes) {
        ox_errf(err, OX_E_NOMEM, "scratch of %zu bytes: size overflows", bytes);
        return NULL;
    }
    void *p = aligned_alloc(64, cap);
    if (!p) {
        ox_errf(err, OX_E_NOMEM, "out of memory for %zu bytes of scratch", cap);
        return NULL;
    }
    free(s->p);
    s->p = p;
    s->cap = cap;
    return p;
}

void ox_scratch_free(ox_scratch *s) {
    free(s->p);
    s->p = NULL;
    s->cap = 0;
}

/* ------------------------------------------------------------------ reference matmul */

void ox_matmul_ref(const ox_matrix *W, const float *x, int n_tok, float *y) {
    ox_type at = ox_type_vec_dot(W->type);
    uint64_t abytes = (uint64_t)W->cols * 4;
    if (at != OX_F32 && ox_row_bytes(at, (uint64_t)W->cols, &abytes, NULL)) return;
    void *a = malloc(abytes ? abytes : 1);
    if (!a) return;
    for (int t = 0; t < n_tok; t++) {
        ox_quantize_row(at, x + (size_t)t * W->cols, a, (size_t)W->cols);
        for (int r = 0; r < W->rows; r++)
            y[(size_t)t * W->rows + r] =
                ox_vec_dot_ref(W->type, (const uint8_t *)W->data + (size_t)r * W->row_bytes, a, (size_t)W->cols);
    }
    free(a);
}

/* ------------------------------------------------------------------ generic tile */

/* Any weight type: dequantize 256 weights at a time (once per row for all tokens) and dot
 * them with the dequantized activations. Equal to the reference up to float rounding. */
#define CHUNK 256

static void tile_generic(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    float wf[CHUNK];
    const float *act = a->type == OX_F32 ? a->x : a->deq;
    size_t be = ox_type_block_elems(W->type), bb = ox_type_block_bytes(W->type);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        for (int t = 0; t < a->n_tok; t++) y[(size_t)t * W->rows + r] = 0;
        for (int c = 0; c < W->cols; c += CHUNK) {
            int n = W->cols - c < CHUNK ? W->cols - c : CHUNK;
            const float *w = wf;
            if (W->type == OX_F32) w = (const float *)row + c; /* already f32: no copy */
            else ox_dequantize_row(W->type, row + (size_t)c / be * bb, wf, (size_t)n);
            for (int t = 0; t < a->n_tok; t++)
                y[(size_t)t * W->rows + r] += ox_dot_f32(w, act + (size_t)t * a->cols + c, n);
        }
    }
}

/* Q4_1/Q5_1/Q8_A dot against Q8_1, whose min term uses the fp16-rounded block sum s (Q8_A:
 * the exact sum of the quants): the dequantized activations would not reproduce that, so
 * these types run the reference dot itself where no SIMD tile has them. */
static void tile_vec_dot_ref(const ox_matrix *W, const ox_act *a, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < a->n_tok; t++)
            y[(size_t)t * W->rows + r] = ox_vec_dot_ref(W->type, (const uint8_t *)W->data + (size_t)r * W->row_bytes,
                                                        a->q + (size_t)t * a->q_stride, (size_t)W->cols);
}

static ox_tile_fn tile_for(ox_type t) {
    ox_tile_fn f = ox_iq_simd_tile(t);
    if (f) return f;
    if ((f = ox_affine_simd_tile(t))) return f;
#ifdef OX_HAVE_SIMD_TILES
    f = ox_simd_tile(t);
    if (f) return f;
#endif
    return ox_type_vec_dot(t) == OX_Q8_1 ? tile_vec_dot_ref : tile_generic;
}

/* ------------------------------------------------------------------ activation preparation */

#define MAX_MULTI 16
#define MAX_ACT   4 /* distinct vec-dot types: F32, Q8_0, Q8_1, Q8_K */

/* Appends a 64-byte aligned region of n bytes at *off; nonzero on overflow. */
static int region(size_t *off, size_t n) {
    size_t end;
    if (ox_add_size(*off, n, &end) || ox_add_size(end, 63, &end)) return 1;
    *off = end & ~(size_t)63;
    return 0;
}

typedef struct {
    ox_act act[MAX_ACT];
    int n_act;
    int needs_deq[MAX_ACT];
    size_t off_q[MAX_ACT], off_deq[MAX_ACT], off_q16[MAX_ACT], off_dT[MAX_ACT], off_sT[MAX_ACT];
} act_plan;

static int act_index(act_plan *p, ox_type t) {
    for (int i = 0; i < p->n_act; i++)
        if (p->act[i].type == t) return i;
    return -1;
}

/* Sizes every region first (overflow-checked), so the scratch grows at most once. */
static int plan_acts(act_plan *p, const ox_matrix *const *Ws, int n, int n_tok, int cols, size_t *total, ox_err *err) {
    memset(p, 0, sizeof *p);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        ox_type at = ox_type_vec_dot(Ws[i]->type);
        int k = act_index(p, at);
        if (k < 0) {
            k = p->n_act++;
            p->act[k].type = at;
            p->act[k].n_tok = n_tok;
            p->act[k].cols = cols;
        }
        if (tile_for(Ws[i]->type) == tile_generic && at != OX_F32) p->needs_deq[k] = 1;
    }
    int overflow = 0;
    for (int k = 0; k < p->n_act; k++) {
        ox_act *a = &p->act[k];
        if (a->type == OX_F32) continue;
        uint64_t rb;
        int rc = ox_row_bytes(a->type, (uint64_t)cols, &rb, err);
        if (rc) return rc;
        a->q_stride = (size_t)rb;
        /* one token: the block scales contiguous (the decode tiles load 4 at once) */
        size_t sz = 0, n_el = 0, tok_pad = n_tok == 1 ? 1 : ((size_t)n_tok + 3) & ~(size_t)3, nb_pad = 0;
        overflow |= rb > SIZE_MAX || ox_mul_size((size_t)rb, (size_t)n_tok, &sz) ||
                    ox_mul_size((size_t)cols, (size_t)n_tok, &n_el) || n_el > SIZE_MAX / 8 ||
                    ox_mul_size((size_t)cols / OX_QK, tok_pad * 4, &nb_pad);
        p->off_q[k] = off;
        overflow |= region(&off, sz);
        if (p->needs_deq[k]) {
            p->off_deq[k] = off;
            overflow |= region(&off, n_el * 4);
        }
        if (a->type == OX_Q8_0 || a->type == OX_Q8_K) {
            p->off_q16[k] = off;
            overflow |= region(&off, n_el * 2);
        }
        if (a->type == OX_Q8_0) {
            a->tok_pad = (int)tok_pad;
            p->off_dT[k] = off;
            overflow |= region(&off, nb_pad);
            p->off_sT[k] = off;
            overflow |= region(&off, nb_pad);
        }
    }
    if (overflow)
        return ox_errf(err, OX_E_RANGE, "matmul activations: %d tokens x %d columns: size overflows", n_tok, cols);
    *total = off;
    return 0;
}

/* ggml's quantize_row_q8_0_ref, 8 lanes at a time: d = amax/127, q = roundf(x * (1/d)).
 * roundf (halves away from zero) is trunc(v + copysign(0.5, v)) for 0.5 <= |v| <= 127 (the
 * sum is exact there, or rounds without crossing an integer), and 0 below 0.5. */
void ox_quantize_q8_0_act(const float *x, int n, ox_block_q8_0 *q, int16_t *q16, float *d, int32_t *s, size_t d_stride) {
    const v8i abs_mask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                          0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    for (int b = 0; b < n / OX_QK; b++, x += OX_QK) {
        v8f v[4], m = splat8(0);
        for (int k = 0; k < 4; k++) {
            v[k] = load8(x + 8 * k);
            v8f av = (v8f)((v8i)v[k] & abs_mask);
            m = select8(av > m, av, m);
        }
        float amax = 0;
        for (int l = 0; l < 8; l++) amax = m[l] > amax ? m[l] : amax;
        float dd = amax / 127, id = dd ? 1.0f / dd : 0.0f;
        if (isinf(id)) id = 0; /* as ox_quantize_row */
        q[b].d = ox_f32_to_f16(dd);
        d[(size_t)b * d_stride] = ox_f16_to_f32(q[b].d);
        v8i sum = {0};
        for (int k = 0; k < 4; k++) {
            v8f s = v[k] * splat8(id);
            v8f half = (v8f)(((v8i)s & ~abs_mask) | (v8i)splat8(0.5f));
            v8i r = __builtin_convertvector(s + half, v8i);
            r = r & ((v8f)((v8i)s & abs_mask) >= splat8(0.5f));
            v8s r16 = __builtin_convertvector(r, v8s); /* |r| <= 127: the narrowings are exact */
            v8c r8 = __builtin_convertvector(r, v8c);
            memcpy(q[b].qs + 8 * k, &r8, sizeof r8);
            memcpy(q16 + b * OX_QK + 8 * k, &r16, sizeof r16);
            sum += r;
        }
        s[(size_t)b * d_stride] = ((sum[0] + sum[4]) + (sum[1] + sum[5])) + ((sum[2] + sum[6]) + (sum[3] + sum[7]));
    }
}

/* Where activation k's quantized forms go (the scratch regions of the plan), writable. */
typedef struct act_out {
    ox_act *a;
    uint8_t *q;
    int16_t *q16; /* Q8_0, Q8_K */
    float *dT;    /* Q8_0 */
    int32_t *sT;  /* Q8_0 */
    float *deq;   /* NULL unless a generic tile dequantizes */
} act_out;

/* Point a at its regions and clear what is shared by its tokens (the padding lanes of the
 * legacy scale and sum tables must be 0). */
static act_out act_setup(ox_act *a, uint8_t *base, const act_plan *p, int k, const float *x) {
    act_out o = {.a = a};
    a->x = x;
    if (a->type == OX_F32) return o;
    a->q = o.q = base + p->off_q[k];
    if (a->type == OX_Q8_0 || a->type == OX_Q8_K) a->q16 = o.q16 = (int16_t *)(base + p->off_q16[k]);
    if (a->type == OX_Q8_0) {
        a->dT = o.dT = (float *)(base + p->off_dT[k]);
        a->sT = o.sT = (int32_t *)(base + p->off_sT[k]);
        memset(o.dT, 0, (size_t)(a->cols / OX_QK) * a->tok_pad * 4);
        memset(o.sT, 0, (size_t)(a->cols / OX_QK) * a->tok_pad * 4);
    }
    if (p->needs_deq[k]) a->deq = o.deq = (float *)(base + p->off_deq[k]);
    return o;
}

/* Quantize tokens [t0, t1) of one activation: each token's rows depend on that token alone. */
static void act_tokens(const act_out *o, int t0, int t1) {
    const ox_act *a = o->a;
    if (a->type == OX_F32) return;
    for (int t = t0; t < t1; t++) {
        const float *xt = a->x + (size_t)t * a->cols;
        uint8_t *qt = o->q + (size_t)t * a->q_stride;
        if (a->type == OX_Q8_0)
            ox_quantize_q8_0_act(xt, a->cols, (ox_block_q8_0 *)qt, o->q16 + (size_t)t * a->cols, o->dT + t, o->sT + t,
                                 (size_t)a->tok_pad);
        else ox_quantize_row(a->type, xt, qt, (size_t)a->cols);
        if (a->type == OX_Q8_K) {
            const ox_block_q8_K *b = (const ox_block_q8_K *)qt;
            int16_t *q16 = o->q16 + (size_t)t * a->cols;
            for (int i = 0; i < a->cols / OX_QK_K; i++, q16 += OX_QK_K)
                for (int j = 0; j < OX_QK_K; j++) q16[j] = b[i].qs[j];
        }
        if (o->deq) ox_dequantize_row(a->type, qt, o->deq + (size_t)t * a->cols, (size_t)a->cols);
    }
}

typedef struct act_job {
    act_out out[MAX_ACT];
    int n_act, n_tok;
} act_job;

/* task i of n: an equal share of the tokens, of every activation */
static void act_task(void *ctx, int task, int n_tasks) {
    const act_job *j = ctx;
    int t0 = (int)((int64_t)j->n_tok * task / n_tasks), t1 = (int)((int64_t)j->n_tok * (task + 1) / n_tasks);
    for (int k = 0; k < j->n_act; k++) act_tokens(&j->out[k], t0, t1);
}

/* Below this many activation values a fork/join costs more than quantizing them on the
 * calling thread (a speculative verify's few tokens). */
#define ACT_FORK_MIN 32768

/* Every activation of the plan: a prefill's tokens shared out over the pool (the same values
 * as one thread's: tokens are independent). */
static void fill_acts(act_plan *p, uint8_t *base, const float *x) {
    act_job j = {.n_act = p->n_act, .n_tok = p->n_act ? p->act[0].n_tok : 0};
    for (int k = 0; k < p->n_act; k++) j.out[k] = act_setup(&p->act[k], base, p, k, x);
    int threads = ox_pool_threads(), tasks = j.n_tok < threads ? j.n_tok : threads;
    if (p->n_act && (size_t)j.n_tok * (size_t)p->act[0].cols < ACT_FORK_MIN) tasks = 1;
    if (tasks > 1) {
        ox_prof_fork_slot(OX_PROF_ACTQ);
        ox_pool_run(act_task, &j, tasks);
    } else act_task(&j, 0, 1);
}

/* ------------------------------------------------------------------ the pool job */

typedef struct {
    const ox_matrix *W;
    const ox_act *a;
    float *y;
    ox_tile_fn tile;
    int rows_per_task, task0;
} mm_item;

typedef struct {
    mm_item item[MAX_MULTI];
    int n_item;
} mm_job;

static void mm_task(void *ctx, int task, int n_tasks) {
    const mm_job *j = ctx;
    int i = 0;
    while (i + 1 < j->n_item && task >= j->item[i + 1].task0) i++;
    const mm_item *it = &j->item[i];
    int r0 = (task - it->task0) * it->rows_per_task;
    int r1 = r0 + it->rows_per_task < it->W->rows ? r0 + it->rows_per_task : it->W->rows;
    it->tile(it->W, it->a, r0, r1, it->y);
}

/* A task streams at least this many weight bytes: each claim is an atomic on a line every
 * thread shares, so on many threads a small matrix (a PLE projection) must not be cut into
 * a claim every few rows. */
#define MIN_TASK_BYTES (32 * 1024)

/* Rows per task: a multiple of 4 (the tiles' row group), small enough that every thread
 * gets several tasks (load balance), large enough that a task is not all overhead (by bytes,
 * so a wide row and a narrow one weigh alike); for prefill also bounded so a task's weights
 * (re-read once per 4 tokens) stay in L2. */
static int rows_per_task(const ox_matrix *W, int n_tok, int threads) {
    int rpt = W->rows / (threads * 8);
    size_t rb = W->row_bytes ? W->row_bytes : 1, min_rows = (MIN_TASK_BYTES + rb - 1) / rb;
    if ((size_t)rpt < min_rows) rpt = min_rows < (size_t)W->rows ? (int)min_rows : W->rows;
    size_t l2_rows = (size_t)(128 * 1024) / rb;
    if (n_tok > 1 && (size_t)rpt > l2_rows) rpt = (int)l2_rows;
    if (rpt < 4) rpt = 4;
    return (rpt + 3) & ~3;
}

static int check_matrix(const ox_matrix *W, int cols, ox_err *err) {
    if (!ox_type_known(W->type))
        return ox_errf(err, OX_E_UNSUPPORTED, "matmul: weight type %d not supported", (int)W->type);
    if (W->cols != cols || W->rows < 0)
        return ox_errf(err, OX_E_CONFIG, "matmul: weight %dx%d does not fit input of %d columns", W->rows, W->cols, cols);
    uint64_t rb;
    int rc = ox_row_bytes(W->type, (uint64_t)W->cols, &rb, err);
    if (rc) return rc;
    if (rb != W->row_bytes)
        return ox_errf(err, OX_E_CONFIG, "matmul: %s row of %d has %zu bytes, expected %llu", ox_type_name(W->type),
                       W->cols, W->row_bytes, (unsigned long long)rb);
    return 0;
}

int ox_matmul_multi(ox_scratch *ws, const ox_matrix *const *Ws, int n, const float *x, int n_tok, float *const *ys,
                    ox_err *err) {
    if (n < 1 || n > MAX_MULTI) return ox_errf(err, OX_E_RANGE, "matmul: %d matrices (1..%d)", n, MAX_MULTI);
    if (n_tok < 1) return ox_errf(err, OX_E_RANGE, "matmul: %d tokens", n_tok);
    int cols = Ws[0]->cols, rc;
    for (int i = 0; i < n; i++)
        if ((rc = check_matrix(Ws[i], cols, err))) return rc;
    act_plan plan;
    size_t total = 0;
    if ((rc = plan_acts(&plan, Ws, n, n_tok, cols, &total, err))) return rc;
    uint8_t *base = total ? ox_scratch_get(ws, total, err) : NULL;
    if (total && !base) return OX_E_NOMEM;
    double pt = ox_prof_begin();
    fill_acts(&plan, base, x);
    ox_prof_end(pt, OX_PROF_ACTQ, 0);

    mm_job job;
    int tasks = 0, threads = ox_pool_threads();
    job.n_item = n;
    for (int i = 0; i < n; i++) {
        mm_item *it = &job.item[i];
        it->W = Ws[i];
        it->a = &plan.act[act_index(&plan, ox_type_vec_dot(Ws[i]->type))];
        it->y = ys[i];
        it->tile = tile_for(Ws[i]->type);
        it->rows_per_task = rows_per_task(Ws[i], n_tok, threads);
        it->task0 = tasks;
        tasks += (Ws[i]->rows + it->rows_per_task - 1) / it->rows_per_task;
    }
    pt = ox_prof_begin();
    if (pt >= 0) { /* the fork/join is booked under the matrix of most bytes */
        int big = 0;
        for (int i = 1; i < n; i++)
            if ((double)Ws[i]->rows * Ws[i]->row_bytes > (double)Ws[big]->rows * Ws[big]->row_bytes) big = i;
        ox_prof_fork_slot(ox_prof_matmul_slot(Ws[big]->type, Ws[big]->rows));
    }
    ox_pool_run(mm_task, &job, tasks);
    double secs = ox_prof_end(pt, -1, 0);
    if (secs > 0) { /* a fused call's time is shared by weight bytes */
        double all = 0;
        for (int i = 0; i < n; i++) all += (double)Ws[i]->rows * Ws[i]->row_bytes;
        for (int i = 0; i < n; i++) {
            double b = (double)Ws[i]->rows * Ws[i]->row_bytes;
            ox_prof_add(ox_prof_matmul_slot(Ws[i]->type, Ws[i]->rows), all > 0 ? secs * b / all : secs / n, (uint64_t)b);
        }
    }
    return 0;
}

int ox_matmul_scratch_bytes(ox_type type, int cols, int n_tok, size_t *bytes, ox_err *err) {
    uint64_t rb;
    int rc = ox_row_bytes(type, (uint64_t)cols, &rb, err);
    if (rc) return rc;
    ox_matrix W = {type, 1, cols, (size_t)rb, NULL};
    const ox_matrix *Ws = &W;
    act_plan plan;
    return plan_acts(&plan, &Ws, 1, n_tok, cols, bytes, err);
}

int ox_matmul(ox_scratch *ws, const ox_matrix *W, const float *x, int n_tok, float *y, ox_err *err) {
    return ox_matmul_multi(ws, &W, 1, x, n_tok, &y, err);
}

/* ------------------------------------------------------------------ row kernels */

/* exp for x in float range, ~2 ulp: 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2]. */
static inline v8f exp8(v8f x) {
    v8i tiny = x < splat8(-87.3f);        /* result flushed to 0 (so masked -inf scores give 0) */
    x = select8(tiny, splat8(-87.3f), x); /* keep 2^n a normal float */
    x = select8(x > splat8(88.3f), splat8(88.3f), x);
    const v8f magic = splat8(12582912.f);
    v8f t = x * splat8(1.44269504088896341f) + magic;
    v8f n = t - magic;
    v8f r = x - n * splat8(0.693359375f);
    r = r - n * splat8(-2.12194440e-4f);
    v8f p = splat8(1.9875691500e-4f);
    p = p * r + splat8(1.3981999507e-3f);
    p = p * r + splat8(8.3334519073e-3f);
    p = p * r + splat8(4.1665795894e-2f);
    p = p * r + splat8(1.6666665459e-1f);
    p = p * r + splat8(5.0000001201e-1f);
    p = p * r * r + r + splat8(1.0f);
    v8i e = ((v8i)t - (v8i)magic + 127) << 23;
    return (v8f)((v8i)(p * (v8f)e) & ~tiny);
}

float ox_dot_f32(const float *a, const float *b, int n) {
    v8f s0 = splat8(0), s1 = splat8(0);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 += load8(a + i) * load8(b + i);
        s1 += load8(a + i + 8) * load8(b + i + 8);
    }
    for (; i + 8 <= n; i += 8) s0 += load8(a + i) * load8(b + i);
    float s = hsum8(s0 + s1);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

void ox_axpy(float *y, float a, const float *x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) store8(y + i, load8(y + i) + splat8(a) * load8(x + i));
    for (; i < n; i++) y[i] += a * x[i];
}

/* 4 rows x 8 columns of C: the 4 sums of a column in one vector each, B's row loaded once
 * for the 4 rows. */
static inline void gemm_4x8(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb, int k) {
    v8f s0 = splat8(0), s1 = s0, s2 = s0, s3 = s0;
    for (int p = 0; p < k; p++) {
        v8f bv = load8(b + (size_t)p * ldb);
        s0 += splat8(a[p]) * bv;
        s1 += splat8(a[lda + p]) * bv;
        s2 += splat8(a[2 * lda + p]) * bv;
        s3 += splat8(a[3 * lda + p]) * bv;
    }
    store8(c, s0), store8(c + ldc, s1), store8(c + 2 * ldc, s2), store8(c + 3 * ldc, s3);
}

void ox_gemm_f32(float *c, size_t ldc, const float *a, size_t lda, const float *b, size_t ldb, int m, int n, int k) {
    int i = 0, n8 = n & ~7;
    for (; i + 4 <= m; i += 4)
        for (int j = 0; j < n8; j += 8) gemm_4x8(c + i * ldc + j, ldc, a + i * lda, lda, b + j, ldb, k);
    for (; i < m; i++) /* rows left over: one at a time */
        for (int j = 0; j < n8; j += 8) {
            v8f s = splat8(0);
            for (int p = 0; p < k; p++) s += splat8(a[i * lda + p]) * load8(b + (size_t)p * ldb + j);
            store8(c + i * ldc + j, s);
        }
    for (i = 0; i < m; i++) /* columns left over */
        for (int j = n8; j < n; j++) {
            float s = 0;
            for (int p = 0; p < k; p++) s += a[i * lda + p] * b[(size_t)p * ldb + j];
            c[i * ldc + j] = s;
        }
}

void ox_rmsnorm_ref(float *y, const float *x, const float *w, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) y[i] = w ? (x[i] * scale) * w[i] : x[i] * scale;
}

void ox_rmsnorm(float *y, const float *x, const float *w, int n, float eps) {
    double pt = ox_prof_begin();
    float scale = 1.0f / sqrtf(ox_dot_f32(x, x, n) / n + eps);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v = load8(x + i) * splat8(scale);
        store8(y + i, w ? v * load8(w + i) : v);
    }
    for (; i < n; i++) y[i] = w ? (x[i] * scale) * w[i] : x[i] * scale;
    ox_prof_end(pt, OX_PROF_NORM, 0);
}

/* angle of pair i: pos * base^(-2i/hd) / factor, in double so large positions keep their
 * precision */
static double rope_angle(int i, int hd, int pos, float base, float factor) {
    return (double)pos * pow((double)base, -2.0 * i / hd) / factor;
}

static int rope_pairs(int hd, int n_pairs) { return n_pairs < 0 ? 0 : n_pairs > hd / 2 ? hd / 2 : n_pairs; }

void ox_rope_ref(float *x, int hd, int pos, int n_pairs, float base, float factor) {
    int half = hd / 2;
    n_pairs = rope_pairs(hd, n_pairs);
    for (int i = 0; i < n_pairs; i++) {
        double th = rope_angle(i, hd, pos, base, factor);
        float c = (float)cos(th), s = (float)sin(th);
        float x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c - x1 * s;
        x[i + half] = x0 * s + x1 * c;
    }
}

void ox_rope_heads(float *x, int n_heads, size_t stride, int hd, int pos, int n_pairs, float base, float factor) {
    enum { STEP = 64 };
    float c[STEP], s[STEP];
    double pt = ox_prof_begin();
    int half = hd / 2;
    n_pairs = rope_pairs(hd, n_pairs);
    for (int i0 = 0; i0 < n_pairs; i0 += STEP) {
        int n = n_pairs - i0 < STEP ? n_pairs - i0 : STEP;
        for (int k = 0; k < n; k++) {
            double th = rope_angle(i0 + k, hd, pos, base, factor);
            c[k] = (float)cos(th);
            s[k] = (float)sin(th);
        }
        for (int h = 0; h < n_heads; h++) {
            float *p = x + (size_t)h * stride + i0;
            int i = 0;
            for (; i + 8 <= n; i += 8) {
                v8f x0 = load8(p + i), x1 = load8(p + i + half), vc = load8(c + i), vs = load8(s + i);
                store8(p + i, x0 * vc - x1 * vs);
                store8(p + i + half, x0 * vs + x1 * vc);
            }
            for (; i < n; i++) {
                float x0 = p[i], x1 = p[i + half];
                p[i] = x0 * c[i] - x1 * s[i];
                p[i + half] = x0 * s[i] + x1 * c[i];
            }
        }
    }
    ox_prof_end(pt, OX_PROF_ROPE, 0);
}

void ox_rope(float *x, int hd, int pos, int n_pairs, float base, float factor) {
    ox_rope_heads(x, 1, 0, hd, pos, n_pairs, base, factor);
}

void ox_softmax_ref(float *x, int n) {
    if (n <= 0) return;
    float mx = x[0], sum = 0;
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

void ox_softmax(float *x, int n) {
    if (n <= 0) return;
    double pt = ox_prof_begin();
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    v8f vs = splat8(0);
    float sum = 0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f e = exp8(load8(x + i) - splat8(mx));
        store8(x + i, e);
        vs += e;
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = 1.0f / (sum + hsum8(vs));
    for (i = 0; i + 8 <= n; i += 8) store8(x + i, load8(x + i) * splat8(inv));
    for (; i < n; i++) x[i] *= inv;
    ox_prof_end(pt, OX_PROF_SOFTMAX, 0);
}

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */

void ox_geglu_ref(float *y, const float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) {
        float x = g[i];
        y[i] = 0.5f * x * (1.0f + tanhf(GELU_C * x * (1.0f + 0.044715f * x * x))) * u[i];
    }
}

/* gelu_tanh(x) = 0.5 x (1 + tanh z) = x * sigmoid(2z) = x / (1 + exp(-2z)) */
void ox_geglu(float *y, const float *g, const float *u, int n) {
    double pt = ox_prof_begin();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f x = load8(g + i);
        v8f z = splat8(GELU_C) * x * (splat8(1.0f) + splat8(0.044715f) * x * x);
        store8(y + i, x / (splat8(1.0f) + exp8(splat8(-2.0f) * z)) * load8(u + i));
    }
    for (; i < n; i++) {
        float x = g[i];
        y[i] = x / (1.0f + expf(-2.0f * GELU_C * x * (1.0f + 0.044715f * x * x))) * u[i];
    }
    ox_prof_end(pt, OX_PROF_GEGLU, 0);
}
