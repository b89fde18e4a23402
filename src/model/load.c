/* load.c — loading a Gemma 4 text model (docs/gemma4.md §3 for the tensors it expects).
 *
 * Load walks the model's tensors twice with one function (walk): a dry pass validates names,
 * shapes and types and adds up the bytes, then (after the max_resident check) a real pass
 * allocates per tensor and reads in chunks. The PLE table is never loaded; its rows are read
 * per forward call (forward.c), one host read per distinct token. */
#include "model/model_impl.h"
#include "model/gpu_attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "kernels/pool.h"
#include "kernels/quant.h"

/* Bytes per read while loading: a converted tensor's staging; 8x that where the bytes go
 * straight to their place (each host read of a URL is a round trip to the reader thread). */
#define LOAD_CHUNK (8u << 20)

/* KEEP_Q8: Q8 under q4; STORED: never converted; EXPERT: a stacked expert tensor, else as LINEAR */
enum role { ROLE_LINEAR, ROLE_KEEP_Q8, ROLE_STORED, ROLE_EXPERT };

typedef struct loader {
    ox_model *m;
    int dry;
    uint64_t total, done; /* file bytes read (progress) */
    uint64_t resident;
    int ws_tokens;             /* dry: size the matmul scratch for this many tokens (0: don't) */
    size_t ws_bytes;           /* dry: the largest matmul scratch of one weight at ws_tokens */
    uint64_t host_table_bytes; /* dry: bytes of the tables read per row through the host */
    int layer;                 /* the layer being walked, -1 for the global tensors */
    uint64_t streamed;         /* bytes left on the host (load option stream) */
    uint64_t unit, max_unit;   /* transit bytes: this layer's dense host matrices + one expert; the largest */
    void *stage;               /* chunk staging for converted tensors */
    float *rowf;
    size_t stage_cap, rowf_cap;
    struct read_job *jobs; /* real pass: the reads, run in file order once every place is allocated */
    int n_jobs, cap_jobs;
    float **layer_scale;            /* real pass: each layer's layer_output_scale once read, or NULL */
    uint64_t mat_types;             /* dry: bit t for each ggml type a resident matrix will have */
    uint64_t mat_bytes, embd_bytes; /* dry: resident matrices' bytes; the token embedding's */
    int to_gpu;  /* real pass: matrices go to the GPU as read (gpu_attach.h ox_model_gpu_load_begin) */
    void *chunk; /* to_gpu: the rows of a matrix that is not resident, on their way */
    size_t chunk_cap;
    ox_err *err;
} loader;

/* rows [0, rows) of t (cols each) into dst as type `to`; gpu: the rows also go to the GPU as
 * matrix gpu (dst NULL: only there, through the loader's chunk) */
typedef struct read_job {
    const ox_tensor *t;
    uint64_t rows, cols;
    ox_type to;
    void *dst;
    ox_matrix *gpu;
} read_job;

static void *track(ox_model *m, size_t bytes) {
    if (m->n_allocs == m->cap_allocs) {
        int nc = m->cap_allocs ? 2 * m->cap_allocs : 256;
        void **p = realloc(m->allocs, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        m->allocs = p;
        m->cap_allocs = nc;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (p) m->allocs[m->n_allocs++] = p;
    return p;
}

static const char *fname_of(const ox_tensor *t) { return ox_host_name(t->file); }

static void shape_str(char *s, size_t cap, int nd, const uint64_t *ne) {
    size_t o = 0;
    o += (size_t)snprintf(s + o, cap - o, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)ne[i]);
    if (o < cap) snprintf(s + o, cap - o, "]");
}

/* Shapes compare after dropping trailing 1-sized dims (HF [1] scalars vs GGUF {1}). */
static int check_shape(const ox_tensor *t, int nd, const uint64_t *ne, ox_err *err) {
    int a = t->n_dims, b = nd;
    while (a > 1 && t->ne[a - 1] == 1) a--;
    while (b > 1 && ne[b - 1] == 1) b--;
    int same = a == b;
    for (int i = 0; same && i < a; i++) same = t->ne[i] == ne[i];
    if (same) return 0;
    char got[96], want[96];
    shape_str(got, sizeof got, t->n_dims, t->ne);
    shape_str(want, sizeof want, nd, ne);
    return ox_errf(err, OX_E_CONFIG, "%s: tensor %s: shape %s disagrees with the config %s", fname_of(t), t->name, got,
                   want);
}

static int is_float_type(ox_type t) { return t == OX_F32 || t == OX_F16 || t == OX_BF16; }

static int weight_type_ok(ox_type t) { return ox_type_known(t) && t != OX_Q8_1 && t != OX_Q8_K; }

static ox_type target_type(const ox_model *m, ox_type stored, enum role role, uint64_t cols) {
    if (role == ROLE_STORED || !is_float_type(stored)) return stored;
    switch (m->opts.quant) {
    case OX_QUANT_Q8: return cols % OX_QK == 0 ? OX_Q8_0 : stored;
    case OX_QUANT_Q4:
        if (cols % OX_QK) return stored;
        return role == ROLE_KEEP_Q8 ? OX_Q8_0 : OX_Q4_0;
    case OX_QUANT_BF16: return stored == OX_F32 ? OX_BF16 : stored;
    default: return stored;
    }
}

static int progress(loader *ld, uint64_t bytes) {
    ld->done += bytes;
    const ox_load_opts *o = &ld->m->opts;
    if (o->progress && o->progress(o->progress_ud, ld->done, ld->total))
        return ox_errf(ld->err, OX_E_ABORTED, "load aborted by the caller");
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, ox_err *err) {
    if (need <= *cap) return 0;
    void *q = realloc(*p, need);
    if (!q) return ox_errf(err, OX_E_NOMEM, "out of memory: %zu bytes for a load buffer", need);
    *p = q;
    *cap = need;
    return 0;
}

/* Read rows [0, rows) of t (cols each) into dst as type `to` (converting if it differs); with
 * gpu, each chunk also goes to the GPU (dst NULL: it passes through ld->chunk only). */
static int read_rows_as(loader *ld, const ox_tensor *t, uint64_t rows, uint64_t cols, ox_type to, void *dst,
                        ox_matrix *gpu) {
    uint64_t src_rb, dst_rb;
    int convert = to != t->type;
    if (ox_row_bytes(t->type, cols, &src_rb, ld->err) || ox_row_bytes(to, cols, &dst_rb, ld->err))
        return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), t->name);
    uint64_t per = (convert ? LOAD_CHUNK : LOAD_CHUNK * 8) / src_rb;
    if (per == 0) per = 1;
    if (per > rows) per = rows;
    if (convert) {
        if (grow(&ld->stage, &ld->stage_cap, (size_t)(per * src_rb), ld->err) ||
            grow((void **)&ld->rowf, &ld->rowf_cap, (size_t)cols * sizeof(float), ld->err))
            return ld->err ? ld->err->code : OX_E_NOMEM;
    }
    if (!dst && grow(&ld->chunk, &ld->chunk_cap, (size_t)(per * dst_rb), ld->err))
        return ld->err ? ld->err->code : OX_E_NOMEM;
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        uint64_t nr = rows - r0 < per ? rows - r0 : per;
        uint8_t *out = dst ? (uint8_t *)dst + r0 * dst_rb : ld->chunk;
        int rc = ox_tensor_read_rows(t, r0, nr, convert ? ld->stage : out, ld->err);
        if (rc) return rc;
        for (uint64_t r = 0; convert && r < nr; r++) {
            ox_dequantize_row(t->type, (uint8_t *)ld->stage + r * src_rb, ld->rowf, (size_t)cols);
            if (ox_quantize_row(to, ld->rowf, out + r * dst_rb, (size_t)cols))
                return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: cannot convert to %s", fname_of(t), t->name,
                               ox_type_name(to));
        }
        if (gpu && (rc = ox_model_gpu_put(ld->m, gpu, r0, nr, out, ld->err)))
            return ox_err_prefix(ld->err, "%s: tensor %s: upload to the GPU", fname_of(t), t->name);
        if ((rc = progress(ld, nr * src_rb))) return rc;
    }
    return 0;
}

/* The walk only allocates and queues; the reads then run sorted by file and offset, so the file
 * is read front to back whatever order its writer put the tensors in (llama-quantize's differs
 * from the walk's): a URL's read-ahead then streams it in one pass instead of restarting at
 * every jump (an E2B Q4_K_M load over loopback HTTP: 9-10 s before, in Node). */
static int queue_read(loader *ld, const ox_tensor *t, uint64_t rows, uint64_t cols, ox_type to, void *dst,
                      ox_matrix *gpu) {
    if (ld->n_jobs == ld->cap_jobs) {
        int nc = ld->cap_jobs ? 2 * ld->cap_jobs : 256;
        read_job *j = realloc(ld->jobs, (size_t)nc * sizeof *j);
        if (!j) return ox_errf(ld->err, OX_E_NOMEM, "out of memory for the load's read list");
        ld->jobs = j, ld->cap_jobs = nc;
    }
    ld->jobs[ld->n_jobs++] = (read_job){t, rows, cols, to, dst, gpu};
    return 0;
}

static int by_place(const void *a, const void *b) {
    const ox_tensor *x = ((const read_job *)a)->t, *y = ((const read_job *)b)->t;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The first write to a fresh page is a fault, and faults are much of the cost of filling new
 * memory: an E2B load from a local file took 1.75 s with the reads taking them, 1.45 s with every
 * page touched first on all the pool's threads. Over HTTP they would otherwise fall on the thread
 * that also takes the bytes off the network (the reader thread writes straight into these
 * places). Touching while the reads run instead gained nothing measurable and needs a protocol
 * (a late zero over read bytes is silent garbage); this runs before any read. */
typedef struct {
    const read_job *jobs;
    int n_jobs;
} touch_ctx;

static void touch_task(void *ctx, int task, int n_tasks) {
    const touch_ctx *tc = ctx;
    for (int i = 0; i < tc->n_jobs; i++) {
        const read_job *j = &tc->jobs[i];
        uint64_t rb;
        if (!j->dst || ox_row_bytes(j->to, j->cols, &rb, NULL)) continue;
        uint64_t bytes = j->rows * rb, part = (bytes / (uint64_t)n_tasks + 4095) & ~(uint64_t)4095;
        uint64_t a = part * (uint64_t)task, b = a + part < bytes ? a + part : bytes;
        for (volatile uint8_t *p = (uint8_t *)j->dst; a < b; a += 4096) p[a] = 0;
    }
}

static int run_reads(loader *ld) {
    qsort(ld->jobs, (size_t)ld->n_jobs, sizeof *ld->jobs, by_place);
    touch_ctx tc = {ld->jobs, ld->n_jobs};
    ox_pool_run(touch_task, &tc, ox_pool_threads() > 1 ? ox_pool_threads() : 1);
    for (int i = 0; i < ld->n_jobs; i++) {
        const read_job *j = &ld->jobs[i];
        TRY(read_rows_as(ld, j->t, j->rows, j->cols, j->to, j->dst, j->gpu));
    }
    return 0;
}

/* Does this matrix stay on the host (load option stream)? Layer weights only: the tied head
 * (token_embd), the PLE projection and the routers (ROLE_STORED) are needed whole every token. */
static int on_host(const loader *ld, enum role role) {
    ox_stream st = ld->m->opts.stream;
    if (ld->layer < 0) return 0;
    return role == ROLE_EXPERT ? st != OX_STREAM_NONE : (role == ROLE_LINEAR && st == OX_STREAM_ALL);
}

static uint64_t align_up(uint64_t n) { return (n + OX_WCACHE_ALIGN - 1) & ~(uint64_t)(OX_WCACHE_ALIGN - 1); }

/* Record a host matrix: its bytes (dry pass), or its place in the layer (real pass). */
static int place_on_host(loader *ld, const ox_tensor *t, enum role role, uint64_t rows, uint64_t rb, ox_matrix *M) {
    int E = role == ROLE_EXPERT ? ld->m->c.n_experts : 0;
    if (ld->dry) {
        ld->streamed += rows * rb;
        ld->unit += align_up(E ? rows / (uint64_t)E * rb : rows * rb);
        return 0;
    }
    layer_w *w = &ld->m->L[ld->layer];
    if (w->n_host == OX_HOST_MATS)
        return ox_errf(ld->err, OX_E_STATE, "%s: tensor %s: more than %d host matrices in layer %d", fname_of(t),
                       t->name, OX_HOST_MATS, ld->layer);
    w->host[w->n_host++] = (host_mat){M, t, E};
    return 0;
}

/* A weight matrix: rows = product of ne[1..], cols = ne[0]. */
static int take_mat(loader *ld, const char *name, int nd, const uint64_t *ne, enum role role, ox_matrix *M) {
    const ox_tensor *t = ox_files_require(ld->m->mf, name, ld->err);
    if (!t) return ld->err ? ld->err->code : OX_E_MISSING;
    int rc = check_shape(t, nd, ne, ld->err);
    if (rc) return rc;
    if (!weight_type_ok(t->type))
        return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported type %d (%s)", fname_of(t), name,
                       (int)t->type, ox_type_name(t->type) ? ox_type_name(t->type) : "unknown");
    uint64_t rows = 1, rb, cols = ne[0];
    for (int i = 1; i < nd; i++) rows *= ne[i];
    ox_type to = target_type(ld->m, t->type, role, cols);
    if (ox_row_bytes(to, cols, &rb, ld->err)) return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
    if (rows > INT32_MAX || cols > INT32_MAX || rb > SIZE_MAX / rows)
        return ox_errf(ld->err, OX_E_CONFIG, "%s: tensor %s: too large", fname_of(t), name);
    uint64_t src_rb;
    if (ox_row_bytes(t->type, cols, &src_rb, ld->err))
        return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
    if (on_host(ld, role)) { /* read per use as stored: a conversion per read would cost more than the read */
        if (to != t->type)
            return ox_errf(ld->err, OX_E_UNSUPPORTED,
                           "%s: tensor %s: streamed weights run as stored, but it is %s and quant asks for %s "
                           "(use quant 'stored' or a quantized file)",
                           fname_of(t), name, ox_type_name(t->type), ox_type_name(to));
        *M = (ox_matrix){to, (int)rows, (int)cols, (size_t)rb, NULL};
        return place_on_host(ld, t, role, rows, rb, M);
    }
    if (ld->dry) {
        ld->resident += rows * rb;
        ld->total += rows * src_rb;
        ld->mat_bytes += rows * rb;
        if (M == &ld->m->embd) ld->embd_bytes = rows * rb;
        if ((unsigned)to < 64) ld->mat_types |= 1ull << to;
        else ld->mat_types |= 1ull << 63; /* no GPU kernel has such an id */
        size_t ws = 0;
        if (ld->ws_tokens && ox_matmul_scratch_bytes(to, (int)cols, ld->ws_tokens, &ws, ld->err))
            return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
        if (ws > ld->ws_bytes) ld->ws_bytes = ws;
        return 0;
    }
    /* on the GPU, the tied embedding stays resident too when embeddings are read from it */
    int resident = !ld->to_gpu || (M == &ld->m->embd && !ld->m->opts.tables_on_host);
    *M = (ox_matrix){to, (int)rows, (int)cols, (size_t)rb, resident ? track(ld->m, (size_t)(rows * rb)) : NULL};
    if (resident && !M->data)
        return ox_errf(ld->err, OX_E_NOMEM, "out of memory: %llu bytes for tensor %s", (unsigned long long)(rows * rb),
                       name);
    if (!resident) ld->m->weight_bytes -= rows * rb;
    return queue_read(ld, t, rows, cols, to, M->data, ld->to_gpu ? M : NULL);
}

/* A vector (norm weights, scales) as f32. optional: absent -> *out stays NULL, returns 0. */
static int take_vec(loader *ld, const char *name, uint64_t n, int optional, float **out) {
    const ox_tensor *t = optional ? ox_files_find(ld->m->mf, name) : ox_files_require(ld->m->mf, name, ld->err);
    if (!t) return optional ? 0 : (ld->err ? ld->err->code : OX_E_MISSING);
    int rc = check_shape(t, 1, &n, ld->err);
    if (rc) return rc;
    if (!weight_type_ok(t->type) || ox_type_block_elems(t->type) != 1)
        return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported type %d for a vector", fname_of(t), name,
                       (int)t->type);
    if (ld->dry) {
        ld->resident += n * sizeof(float);
        ld->total += n * ox_type_block_bytes(t->type);
        return 0;
    }
    *out = track(ld->m, (size_t)n * sizeof(float));
    if (!*out) return ox_errf(ld->err, OX_E_NOMEM, "out of memory for tensor %s", name);
    return queue_read(ld, t, 1, n, OX_F32, *out, NULL);
}

/* A table read per row through the host (PLE): only its shape and type are checked. */
static int check_table(loader *ld, const char *name, uint64_t cols, uint64_t rows, const ox_tensor **out,
                       size_t *row_bytes) {
    const ox_tensor *t = ox_files_require(ld->m->mf, name, ld->err);
    if (!t) return ld->err ? ld->err->code : OX_E_MISSING;
    uint64_t ne[2] = {cols, rows}, rb;
    int rc = check_shape(t, 2, ne, ld->err);
    if (rc) return rc;
    if (!weight_type_ok(t->type))
        return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported type %d", fname_of(t), name, (int)t->type);
    if (ox_row_bytes(t->type, cols, &rb, ld->err)) return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
    *out = t;
    *row_bytes = (size_t)rb;
    ld->host_table_bytes += rows * rb;
    return 0;
}

static int walk_layer(loader *ld, int l) {
    ox_model *m = ld->m;
    const ox_config *c = &m->c;
    const ox_layer_cfg *lc = &c->layers[l];
    layer_w *w = &m->L[l];
    uint64_t H = (uint64_t)c->hidden, hd = (uint64_t)lc->head_dim, nh = (uint64_t)c->n_heads;
    uint64_t kvw = (uint64_t)lc->n_kv_heads * hd, I = (uint64_t)lc->ffn;
    char nm[128];
    ld->layer = l;
    ld->unit = 0;
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), nm)
    TRY(take_vec(ld, NAME("attn_norm.weight"), H, 0, &w->attn_norm));
    TRY(take_mat(ld, NAME("attn_q.weight"), 2, (uint64_t[]){H, nh * hd}, ROLE_LINEAR, &w->q));
    TRY(take_vec(ld, NAME("attn_q_norm.weight"), hd, 0, &w->q_norm));
    if (!lc->shared) { /* shared layers' k/v/k_norm may exist; they are unused (docs/gemma4.md §3.2) */
        TRY(take_mat(ld, NAME("attn_k.weight"), 2, (uint64_t[]){H, kvw}, ROLE_LINEAR, &w->k));
        if (!lc->k_eq_v) TRY(take_mat(ld, NAME("attn_v.weight"), 2, (uint64_t[]){H, kvw}, ROLE_LINEAR, &w->v));
        TRY(take_vec(ld, NAME("attn_k_norm.weight"), hd, 0, &w->k_norm));
    }
    TRY(take_mat(ld, NAME("attn_output.weight"), 2, (uint64_t[]){nh * hd, H}, ROLE_LINEAR, &w->o));
    TRY(take_vec(ld, NAME("post_attention_norm.weight"), H, 0, &w->post_attn_norm));
    TRY(take_vec(ld, NAME("ffn_norm.weight"), H, 0, &w->ffn_norm));
    TRY(take_mat(ld, NAME("ffn_gate.weight"), 2, (uint64_t[]){H, I}, ROLE_LINEAR, &w->gate));
    TRY(take_mat(ld, NAME("ffn_up.weight"), 2, (uint64_t[]){H, I}, ROLE_LINEAR, &w->up));
    TRY(take_mat(ld, NAME("ffn_down.weight"), 2, (uint64_t[]){I, H}, ROLE_LINEAR, &w->down));
    TRY(take_vec(ld, NAME("post_ffw_norm.weight"), H, 0, &w->post_ffw_norm));
    if (c->moe) {
        uint64_t E = (uint64_t)c->n_experts, Ie = (uint64_t)c->moe_ffn;
        TRY(take_mat(ld, NAME("ffn_gate_inp.weight"), 2, (uint64_t[]){H, E}, ROLE_STORED, &w->router));
        TRY(take_vec(ld, NAME("ffn_gate_inp.scale"), H, 0, &w->router_scale));
        TRY(take_vec(ld, NAME("ffn_down_exps.scale"), E, 0, &w->expert_scale));
        if (ox_files_find(m->mf, NAME("ffn_gate_up_exps.weight"))) {
            TRY(take_mat(ld, nm, 3, (uint64_t[]){H, 2 * Ie, E}, ROLE_EXPERT, &w->exp_gate_up));
        } else { /* gate and up experts as two tensors (docs/gemma4.md §3.2) */
            TRY(take_mat(ld, NAME("ffn_gate_exps.weight"), 3, (uint64_t[]){H, Ie, E}, ROLE_EXPERT, &w->exp_gate));
            TRY(take_mat(ld, NAME("ffn_up_exps.weight"), 3, (uint64_t[]){H, Ie, E}, ROLE_EXPERT, &w->exp_up));
        }
        TRY(take_mat(ld, NAME("ffn_down_exps.weight"), 3, (uint64_t[]){Ie, H, E}, ROLE_EXPERT, &w->exp_down));
        TRY(take_vec(ld, NAME("pre_ffw_norm_2.weight"), H, 0, &w->pre_ffw_norm_2));
        TRY(take_vec(ld, NAME("post_ffw_norm_1.weight"), H, 0, &w->post_ffw_norm_1));
        TRY(take_vec(ld, NAME("post_ffw_norm_2.weight"), H, 0, &w->post_ffw_norm_2));
    }
    if (c->ple_dim > 0) {
        uint64_t P = (uint64_t)c->ple_dim;
        TRY(take_mat(ld, NAME("inp_gate.weight"), 2, (uint64_t[]){H, P}, ROLE_LINEAR, &w->ple_gate));
        TRY(take_mat(ld, NAME("proj.weight"), 2, (uint64_t[]){P, H}, ROLE_LINEAR, &w->ple_proj));
        TRY(take_vec(ld, NAME("post_norm.weight"), H, 0, &w->ple_post_norm));
    }
    w->out_scale = 1.0f; /* or the tensor's value, once read (ox_model_load) */
    TRY(take_vec(ld, NAME("layer_output_scale.weight"), 1, 1, ld->dry ? &(float *){NULL} : &ld->layer_scale[l]));
#undef NAME
    if (ld->unit > ld->max_unit) ld->max_unit = ld->unit;
    ld->layer = -1;
    return 0;
}

static int walk(loader *ld) {
    ox_model *m = ld->m;
    const ox_config *c = &m->c;
    uint64_t H = (uint64_t)c->hidden, V = (uint64_t)c->vocab;
    TRY(take_mat(ld, "token_embd.weight", 2, (uint64_t[]){H, V}, ROLE_KEEP_Q8, &m->embd));
    if (ld->dry) {
        uint64_t rb = 0; /* the row size was validated by take_mat */
        m->t_embd = ox_files_find(m->mf, "token_embd.weight");
        ox_row_bytes(m->t_embd->type, H, &rb, NULL);
        m->embd_row_bytes = (size_t)rb;
    }
    TRY(take_vec(ld, "output_norm.weight", H, 0, &m->out_norm));
    if (c->ple_dim > 0) {
        uint64_t LP = (uint64_t)c->n_layers * (uint64_t)c->ple_dim;
        if (ld->dry)
            TRY(check_table(ld, "per_layer_token_embd.weight", LP, (uint64_t)c->ple_vocab, &m->t_ple, &m->ple_row_bytes));
        TRY(take_mat(ld, "per_layer_model_proj.weight", 2, (uint64_t[]){H, LP}, ROLE_KEEP_Q8, &m->ple_model_proj));
        TRY(take_vec(ld, "per_layer_proj_norm.weight", (uint64_t)c->ple_dim, 0, &m->ple_proj_norm));
    }
    if (c->assistant) {
        uint64_t Hb = (uint64_t)c->backbone_hidden;
        TRY(take_mat(ld, "nextn.pre_projection.weight", 2, (uint64_t[]){2 * Hb, H}, ROLE_LINEAR, &m->nextn_pre));
        TRY(take_mat(ld, "nextn.post_projection.weight", 2, (uint64_t[]){H, Hb}, ROLE_LINEAR, &m->nextn_post));
    }
    for (int l = 0; l < c->n_layers; l++) TRY(walk_layer(ld, l));
    return 0;
}

static int check_config(const ox_config *c, ox_err *err) {
    if (c->n_layers <= 0 || c->n_layers > OX_MAX_LAYERS || c->hidden <= 0 || c->vocab <= 0)
        return ox_errf(err, OX_E_CONFIG, "model config: bad layer count / hidden / vocab");
    return 0;
}

/* After the dry pass: the weight cache for what stays on the host. */
static int start_stream(ox_model *m, const loader *ld, ox_err *err) {
    if (m->opts.stream < OX_STREAM_NONE || m->opts.stream > OX_STREAM_ALL)
        return ox_errf(err, OX_E_RANGE, "stream %d is not one of none (0), experts (1), all (2)", (int)m->opts.stream);
    if (!ld->streamed)
        return ox_errf(err, OX_E_RANGE,
                       "stream experts: the model has no routed experts (stream 'all' streams its layers)");
    if (!m->opts.weight_cache)
        return ox_errf(err, OX_E_RANGE, "streamed weights need a weight cache size (at least %llu bytes, one layer's)",
                       (unsigned long long)ld->max_unit);
    int n_keys = ox_wcache_key(m, m->c.n_layers, 0, 0);
    m->wc = ox_wcache_new(m->opts.weight_cache, ld->max_unit, n_keys, err);
    return m->wc ? 0 : (err ? err->code : OX_E_NOMEM);
}

ox_model *ox_model_load(ox_model_files *mf, const ox_load_opts *opts, ox_err *err) {
    if (!mf) {
        ox_errf(err, OX_E_STATE, "ox_model_load: no model files");
        return NULL;
    }
    ox_model *m = calloc(1, sizeof *m);
    if (!m) {
        ox_files_free(mf);
        ox_errf(err, OX_E_NOMEM, "out of memory for the model struct");
        return NULL;
    }
    m->mf = mf;
    m->c = *ox_files_config(mf);
    if (opts) m->opts = *opts;
    const ox_config *c = &m->c;
    if (check_config(c, err)) goto fail;
    if (c->assistant != !!m->opts.drafter) {
        ox_errf(err, OX_E_CONFIG,
                c->assistant ? "%s: a gemma4-assistant MTP drafter, not a model: load it as the drafter"
                             : "%s: not a gemma4-assistant MTP drafter (architecture gemma4)",
                ox_files_describe(mf));
        goto fail;
    }
    m->L = calloc((size_t)c->n_layers, sizeof *m->L);
    if (!m->L) {
        ox_errf(err, OX_E_NOMEM, "out of memory for %d layers", c->n_layers);
        goto fail;
    }
    loader ld = {.m = m, .dry = 1, .layer = -1, .err = err};
    if (walk(&ld)) goto fail_ld;
    if (m->opts.stream != OX_STREAM_NONE && start_stream(m, &ld, err)) goto fail_ld;
    uint64_t need = ld.resident + (m->wc ? m->opts.weight_cache : 0);
    if (m->opts.max_resident && need > m->opts.max_resident) {
        ox_errf(err, OX_E_NOMEM, "the model needs %llu bytes resident (weights%s), more than the limit of %llu",
                (unsigned long long)need, m->wc ? " and the weight cache" : "", (unsigned long long)m->opts.max_resident);
        goto fail_ld;
    }
    m->weight_bytes = ld.resident;
    if ((ld.to_gpu = ox_model_gpu_load_begin(m, ld.mat_types, err)) < 0) goto fail_ld;
    ld.dry = 0;
    ld.resident = 0;
    ld.layer_scale = calloc((size_t)c->n_layers, sizeof *ld.layer_scale);
    if (!ld.layer_scale) {
        ox_errf(err, OX_E_NOMEM, "out of memory for %d layers", c->n_layers);
        goto fail_ld;
    }
    if (walk(&ld) || run_reads(&ld) || (ld.to_gpu && ox_model_gpu_load_end(m, err))) goto fail_ld;
    for (int l = 0; l < c->n_layers; l++)
        if (ld.layer_scale[l]) m->L[l].out_scale = ld.layer_scale[l][0];
    free(ld.stage);
    free(ld.rowf);
    free(ld.chunk);
    free(ld.jobs);
    free(ld.layer_scale);
    return m;
fail_ld:
    free(ld.stage);
    free(ld.rowf);
    free(ld.chunk);
    free(ld.jobs);
    free(ld.layer_scale);
fail:
    ox_model_free(m);
    return NULL;
}

int ox_model_dry_walk(const ox_model_files *mf, const ox_load_opts *opts, int ws_tokens, ox_weight_sums *out,
                      ox_err *err) {
    ox_model m = {.mf = (ox_model_files *)mf, .c = *ox_files_config(mf)};
    if (opts) m.opts = *opts;
    int rc = check_config(&m.c, err);
    if (rc) return rc;
    m.L = calloc((size_t)m.c.n_layers, sizeof *m.L);
    if (!m.L) return ox_errf(err, OX_E_NOMEM, "out of memory for %d layers", m.c.n_layers);
    loader ld = {.m = &m, .dry = 1, .layer = -1, .ws_tokens = ws_tokens, .err = err};
    rc = walk(&ld);
    free(m.L);
    if (rc) return rc;
    *out = (ox_weight_sums){ld.resident,     ld.total,     ld.host_table_bytes, ld.ws_bytes, m.embd_row_bytes,
                            m.ple_row_bytes, ld.mat_bytes, ld.embd_bytes,       ld.mat_types};
    return 0;
}

void ox_model_free(ox_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_allocs; i++) free(m->allocs[i]);
    ox_wcache_free(m->wc);
    ox_gpu_free(m->gpu);
    free(m->allocs);
    free(m->L);
    ox_files_free(m->mf);
    free(m);
}

const ox_config *ox_model_config(const ox_model *m) { return &m->c; }
const ox_model_files *ox_model_files_of(const ox_model *m) { return m->mf; }

void ox_model_stats_get(const ox_model *m, ox_model_stats *st) {
    ox_wcache_stats ws = {0};
    if (m->wc) ox_wcache_stats_get(m->wc, &ws);
    st->resident_bytes = m->weight_bytes + m->cache_bytes + ws.held;
    st->host_bytes_read = m->host_bytes;
    st->rows_fetched = m->rows_fetched;
    st->stream_bytes = ws.bytes_streamed;
    st->stream_hits = ws.hits;
    st->stream_misses = ws.misses;
}
