/* model.c — the Gemma 4 text decoder: load, sessions, forward (../shared/docs/gemma4-spec.md §b).
 *
 * Load walks the model's tensors twice with one function (walk): a dry pass validates names,
 * shapes and types and adds up the bytes, then (after the max_resident check) a real pass
 * allocates per tensor and reads in chunks. The PLE table is never loaded; its rows are read
 * per forward call, one host read per distinct token.
 *
 * Forward runs n tokens through each layer together: every matmul sees all n rows (prefill is
 * matrix-matrix), attention is split over (token, head) pairs on the thread pool. Activations
 * live in per-session scratch, so steady-state decode allocates nothing. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/hostfile.h"
#include "kernels/kernels.h"
#include "kernels/pool.h"
#include "kernels/quant.h"

#define LOAD_CHUNK (8u << 20) /* bytes per read while loading */
#define OX_UBATCH 256          /* tokens per micro-batch of a long prompt */

typedef struct layer_w {
    float *attn_norm, *q_norm, *k_norm, *post_attn_norm, *ffn_norm, *post_ffw_norm;
    float *ple_post_norm;
    float *post_ffw_norm_1, *pre_ffw_norm_2, *post_ffw_norm_2, *router_scale, *expert_scale;
    float out_scale;
    ox_matrix q, k, v, o, gate, up, down, ple_gate, ple_proj;
    ox_matrix router, exp_gate_up, exp_down; /* experts: E blocks of rows stacked */
    ox_matrix exp_gate, exp_up;              /* the split form (older GGUFs) instead of exp_gate_up */
} layer_w;

struct ox_model {
    ox_model_files *mf;
    ox_config c;
    ox_load_opts opts;
    ox_matrix embd, ple_model_proj;
    float *out_norm, *ple_proj_norm;
    const ox_tensor *t_embd, *t_ple;
    size_t embd_row_bytes, ple_row_bytes; /* rows as stored in the file */
    layer_w *L;
    void **allocs; /* every weight allocation, freed together */
    int n_allocs, cap_allocs;
    uint64_t weight_bytes, cache_bytes, host_bytes, rows_fetched;
};

/* ------------------------------------------------------------------ loading */

enum role { ROLE_LINEAR, ROLE_KEEP_Q8, ROLE_STORED }; /* KEEP_Q8: Q8 under q4; STORED: never converted */

typedef struct loader {
    ox_model *m;
    int dry;
    uint64_t total, done;   /* file bytes read (progress) */
    uint64_t resident;
    void *stage;            /* chunk staging for converted tensors */
    float *rowf;
    size_t stage_cap, rowf_cap;
    ox_err *err;
} loader;

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
    return ox_errf(err, OX_E_CONFIG, "%s: tensor %s: shape %s disagrees with the config %s", fname_of(t),
                   t->name, got, want);
}

static int is_float_type(ox_type t) { return t == OX_F32 || t == OX_F16 || t == OX_BF16; }

static int weight_type_ok(ox_type t) {
    return ox_type_known(t) && t != OX_Q8_1 && t != OX_Q8_K;
}

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

/* Read rows [0, rows) of t (cols each) into dst as type `to` (converting if it differs). */
static int read_rows_as(loader *ld, const ox_tensor *t, uint64_t rows, uint64_t cols, ox_type to, void *dst) {
    uint64_t src_rb, dst_rb;
    if (ox_row_bytes(t->type, cols, &src_rb, ld->err) || ox_row_bytes(to, cols, &dst_rb, ld->err))
        return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), t->name);
    uint64_t per = LOAD_CHUNK / src_rb;
    if (per == 0) per = 1;
    if (per > rows) per = rows;
    int convert = to != t->type;
    if (convert) {
        if (grow(&ld->stage, &ld->stage_cap, (size_t)(per * src_rb), ld->err) ||
            grow((void **)&ld->rowf, &ld->rowf_cap, (size_t)cols * sizeof(float), ld->err))
            return ld->err ? ld->err->code : OX_E_NOMEM;
    }
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
        uint64_t nr = rows - r0 < per ? rows - r0 : per;
        uint8_t *out = (uint8_t *)dst + r0 * dst_rb;
        int rc = ox_tensor_read_rows(t, r0, nr, convert ? ld->stage : out, ld->err);
        if (rc) return rc;
        for (uint64_t r = 0; convert && r < nr; r++) {
            ox_dequantize_row(t->type, (uint8_t *)ld->stage + r * src_rb, ld->rowf, (size_t)cols);
            if (ox_quantize_row(to, ld->rowf, out + r * dst_rb, (size_t)cols))
                return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: cannot convert to %s", fname_of(t),
                               t->name, ox_type_name(to));
        }
        if ((rc = progress(ld, nr * src_rb))) return rc;
    }
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
    if (ox_row_bytes(t->type, cols, &src_rb, ld->err)) return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
    if (ld->dry) {
        ld->resident += rows * rb;
        ld->total += rows * src_rb;
        return 0;
    }
    *M = (ox_matrix){to, (int)rows, (int)cols, (size_t)rb, track(ld->m, (size_t)(rows * rb))};
    if (!M->data) return ox_errf(ld->err, OX_E_NOMEM, "out of memory: %llu bytes for tensor %s",
                                 (unsigned long long)(rows * rb), name);
    return read_rows_as(ld, t, rows, cols, to, M->data);
}

/* A vector (norm weights, scales) as f32. optional: absent -> *out stays NULL, returns 0. */
static int take_vec(loader *ld, const char *name, uint64_t n, int optional, float **out) {
    const ox_tensor *t = optional ? ox_files_find(ld->m->mf, name) : ox_files_require(ld->m->mf, name, ld->err);
    if (!t) return optional ? 0 : (ld->err ? ld->err->code : OX_E_MISSING);
    int rc = check_shape(t, 1, &n, ld->err);
    if (rc) return rc;
    if (!weight_type_ok(t->type) || ox_type_block_elems(t->type) != 1)
        return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported type %d for a vector", fname_of(t),
                       name, (int)t->type);
    if (ld->dry) {
        ld->resident += n * sizeof(float);
        ld->total += n * ox_type_block_bytes(t->type);
        return 0;
    }
    *out = track(ld->m, (size_t)n * sizeof(float));
    if (!*out) return ox_errf(ld->err, OX_E_NOMEM, "out of memory for tensor %s", name);
    return read_rows_as(ld, t, 1, n, OX_F32, *out);
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
        return ox_errf(ld->err, OX_E_UNSUPPORTED, "%s: tensor %s: unsupported type %d", fname_of(t), name,
                       (int)t->type);
    if (ox_row_bytes(t->type, cols, &rb, ld->err)) return ox_err_prefix(ld->err, "%s: tensor %s", fname_of(t), name);
    *out = t;
    *row_bytes = (size_t)rb;
    return 0;
}

#define TRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

static int walk_layer(loader *ld, int l) {
    ox_model *m = ld->m;
    const ox_config *c = &m->c;
    const ox_layer_cfg *lc = &c->layers[l];
    layer_w *w = &m->L[l];
    uint64_t H = (uint64_t)c->hidden, hd = (uint64_t)lc->head_dim, nh = (uint64_t)c->n_heads;
    uint64_t kvw = (uint64_t)lc->n_kv_heads * hd, I = (uint64_t)lc->ffn;
    char nm[128];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), nm)
    TRY(take_vec(ld, NAME("attn_norm.weight"), H, 0, &w->attn_norm));
    TRY(take_mat(ld, NAME("attn_q.weight"), 2, (uint64_t[]){H, nh * hd}, ROLE_LINEAR, &w->q));
    TRY(take_vec(ld, NAME("attn_q_norm.weight"), hd, 0, &w->q_norm));
    if (!lc->shared) { /* shared layers' k/v/k_norm may exist; they are unused (spec §c) */
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
            TRY(take_mat(ld, nm, 3, (uint64_t[]){H, 2 * Ie, E}, ROLE_LINEAR, &w->exp_gate_up));
        } else { /* gate and up experts as two tensors (spec §c notes) */
            TRY(take_mat(ld, NAME("ffn_gate_exps.weight"), 3, (uint64_t[]){H, Ie, E}, ROLE_LINEAR, &w->exp_gate));
            TRY(take_mat(ld, NAME("ffn_up_exps.weight"), 3, (uint64_t[]){H, Ie, E}, ROLE_LINEAR, &w->exp_up));
        }
        TRY(take_mat(ld, NAME("ffn_down_exps.weight"), 3, (uint64_t[]){Ie, H, E}, ROLE_LINEAR, &w->exp_down));
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
    float *scale = NULL;
    TRY(take_vec(ld, NAME("layer_output_scale.weight"), 1, 1, &scale));
    w->out_scale = scale ? scale[0] : 1.0f;
#undef NAME
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
        if (ld->dry) TRY(check_table(ld, "per_layer_token_embd.weight", LP, (uint64_t)c->ple_vocab, &m->t_ple,
                                     &m->ple_row_bytes));
        TRY(take_mat(ld, "per_layer_model_proj.weight", 2, (uint64_t[]){H, LP}, ROLE_KEEP_Q8, &m->ple_model_proj));
        TRY(take_vec(ld, "per_layer_proj_norm.weight", (uint64_t)c->ple_dim, 0, &m->ple_proj_norm));
    }
    for (int l = 0; l < c->n_layers; l++) TRY(walk_layer(ld, l));
    return 0;
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
    if (c->n_layers <= 0 || c->n_layers > OX_MAX_LAYERS || c->hidden <= 0 || c->vocab <= 0) {
        ox_errf(err, OX_E_CONFIG, "model config: bad layer count / hidden / vocab");
        goto fail;
    }
    m->L = calloc((size_t)c->n_layers, sizeof *m->L);
    if (!m->L) {
        ox_errf(err, OX_E_NOMEM, "out of memory for %d layers", c->n_layers);
        goto fail;
    }
    loader ld = {.m = m, .dry = 1, .err = err};
    if (walk(&ld)) goto fail_ld;
    if (m->opts.max_resident && ld.resident > m->opts.max_resident) {
        ox_errf(err, OX_E_NOMEM, "the model needs %llu bytes resident (weights), more than the limit of %llu",
                (unsigned long long)ld.resident, (unsigned long long)m->opts.max_resident);
        goto fail_ld;
    }
    m->weight_bytes = ld.resident;
    ld.dry = 0;
    ld.resident = 0;
    if (walk(&ld)) goto fail_ld;
    free(ld.stage);
    free(ld.rowf);
    return m;
fail_ld:
    free(ld.stage);
    free(ld.rowf);
fail:
    ox_model_free(m);
    return NULL;
}

void ox_model_free(ox_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_allocs; i++) free(m->allocs[i]);
    free(m->allocs);
    free(m->L);
    ox_files_free(m->mf);
    free(m);
}

const ox_config *ox_model_config(const ox_model *m) { return &m->c; }
const ox_model_files *ox_model_files_of(const ox_model *m) { return m->mf; }

void ox_model_stats_get(const ox_model *m, ox_model_stats *st) {
    st->resident_bytes = m->weight_bytes + m->cache_bytes;
    st->host_bytes_read = m->host_bytes;
    st->rows_fetched = m->rows_fetched;
}

/* ----------------------------------------------------------------- sessions */

typedef struct kv_cache {
    float *k, *v; /* [cap][width] post-norm, post-RoPE K; post-norm V */
    int cap, width;
} kv_cache;

struct ox_session {
    ox_model *m;
    int max_ctx, pos;
    kv_cache *kv;   /* per layer; used only where !shared */
    int32_t *toks;  /* [pos] the tokens in the caches, -1 where a soft embedding went in */
    int toks_cap;
    ox_scratch ws, act;
};

ox_session *ox_session_new(ox_model *m, int max_ctx, ox_err *err) {
    int lim = m->c.ctx_max > 0 ? m->c.ctx_max : INT32_MAX / 2;
    if (max_ctx <= 0) max_ctx = lim;
    if (max_ctx > lim) {
        ox_errf(err, OX_E_RANGE, "context %d exceeds the model's maximum %d", max_ctx, lim);
        return NULL;
    }
    ox_session *s = calloc(1, sizeof *s);
    if (s) s->kv = calloc((size_t)m->c.n_layers, sizeof *s->kv);
    if (!s || !s->kv) {
        free(s);
        ox_errf(err, OX_E_NOMEM, "out of memory for a session");
        return NULL;
    }
    s->m = m;
    s->max_ctx = max_ctx;
    for (int l = 0; l < m->c.n_layers; l++)
        s->kv[l].width = m->c.layers[l].n_kv_heads * m->c.layers[l].head_dim;
    return s;
}

void ox_session_free(ox_session *s) {
    if (!s) return;
    for (int l = 0; l < s->m->c.n_layers; l++) {
        s->m->cache_bytes -= 2ull * (uint64_t)s->kv[l].cap * (uint64_t)s->kv[l].width * sizeof(float);
        free(s->kv[l].k);
        free(s->kv[l].v);
    }
    free(s->kv);
    free(s->toks);
    ox_scratch_free(&s->ws);
    ox_scratch_free(&s->act);
    free(s);
}

int ox_session_pos(const ox_session *s) { return s->pos; }
int ox_session_max_ctx(const ox_session *s) { return s->max_ctx; }
const ox_model *ox_session_model(const ox_session *s) { return s->m; }
const int32_t *ox_session_tokens(const ox_session *s) { return s->toks; }
void ox_session_reset(ox_session *s) { s->pos = 0; }

int ox_session_reuse(ox_session *s, const int32_t *tokens, int n, ox_err *err) {
    if (n < 1 || !tokens) return ox_errf(err, OX_E_RANGE, "reuse: need at least one token (got %d)", n);
    int k = 0, lim = n - 1 < s->pos ? n - 1 : s->pos;
    while (k < lim && s->toks[k] == tokens[k]) k++;
    s->pos = k;
    return k;
}

int ox_session_truncate(ox_session *s, int pos, ox_err *err) {
    if (pos < 0 || pos > s->pos)
        return ox_errf(err, OX_E_RANGE, "truncate to %d: session is at position %d", pos, s->pos);
    s->pos = pos;
    return 0;
}

/* A capacity >= need: doubling from cap (16 at first), capped at max_ctx. */
static int grown_cap(int cap, int need, int max_ctx) {
    if (!cap) cap = 16;
    while (cap < need) cap = cap > max_ctx / 2 ? max_ctx : cap * 2;
    return cap < need ? need : cap;
}

/* Grow the token list and every own-KV cache to hold `need` positions. */
static int kv_reserve(ox_session *s, int need, ox_err *err) {
    const ox_config *c = &s->m->c;
    if (s->toks_cap < need) {
        int cap = grown_cap(s->toks_cap, need, s->max_ctx);
        int32_t *t = realloc(s->toks, (size_t)cap * sizeof *t);
        if (!t) return ox_errf(err, OX_E_NOMEM, "out of memory: token list of %d positions", cap);
        s->toks = t;
        s->toks_cap = cap;
    }
    for (int l = 0; l < c->n_layers; l++) {
        kv_cache *kc = &s->kv[l];
        if (c->layers[l].shared || kc->cap >= need) continue;
        int cap = grown_cap(kc->cap, need, s->max_ctx);
        size_t bytes;
        if (ox_mul_size((size_t)cap, (size_t)kc->width * sizeof(float), &bytes))
            return ox_errf(err, OX_E_NOMEM, "KV cache of layer %d: %d positions x %d values is too large", l, cap,
                           kc->width);
        float *k = realloc(kc->k, bytes);
        if (k) kc->k = k;
        float *v = k ? realloc(kc->v, bytes) : NULL;
        if (!v) return ox_errf(err, OX_E_NOMEM, "out of memory: KV cache of layer %d needs %zu bytes", l, 2 * bytes);
        kc->v = v;
        s->m->cache_bytes += 2ull * (uint64_t)(cap - kc->cap) * (uint64_t)kc->width * sizeof(float);
        kc->cap = cap;
    }
    return 0;
}

ox_session *ox_session_clone(const ox_session *s, ox_err *err) {
    ox_session *d = ox_session_new(s->m, s->max_ctx, err);
    if (!d) return NULL;
    if (s->pos > 0 && kv_reserve(d, s->pos, err)) {
        ox_session_free(d);
        return NULL;
    }
    for (int l = 0; l < s->m->c.n_layers; l++) {
        if (s->m->c.layers[l].shared) continue;
        size_t bytes = (size_t)s->pos * (size_t)s->kv[l].width * sizeof(float);
        if (!bytes) continue;
        memcpy(d->kv[l].k, s->kv[l].k, bytes);
        memcpy(d->kv[l].v, s->kv[l].v, bytes);
    }
    if (s->pos > 0) memcpy(d->toks, s->toks, (size_t)s->pos * sizeof *d->toks);
    d->pos = s->pos;
    return d;
}

/* ------------------------------------------------------------------ forward */

/* Activation buffers of one forward call, carved from the session's scratch. */
typedef struct acts {
    float *x, *a, *q, *k, *v, *att, *o, *g, *u, *f;
    float *ple, *ple_tok, *pg, *pu;                  /* PLE */
    float *d1, *xe, *ye, *gu, *eact, *zr;            /* MoE */
    int *sel, *tok_of, *slot_of;                     /* MoE routing */
    float *selw;
    float *scores;                                   /* attention, per task */
    int32_t *uniq;                                   /* distinct tokens (PLE rows) */
    int *row_of;                                     /* token i -> index into uniq */
    uint8_t *stage;                                  /* one stored-format table row */
    float *hn;                                       /* final normed hidden */
} acts;

typedef struct carve { uint8_t *base; size_t off; } carve;
static void *take(carve *cv, size_t bytes) {
    void *p = cv->base ? cv->base + cv->off : NULL;
    cv->off += (bytes + 63) & ~(size_t)63;
    return p;
}

static int carve_acts(ox_session *s, int n, int kv_len, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    size_t H = (size_t)c->hidden, nh = (size_t)c->n_heads, LP = (size_t)c->n_layers * (size_t)c->ple_dim;
    size_t qw = 0, kw = 0, I = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const ox_layer_cfg *lc = &c->layers[l];
        if (nh * (size_t)lc->head_dim > qw) qw = nh * (size_t)lc->head_dim;
        if ((size_t)(lc->n_kv_heads * lc->head_dim) > kw) kw = (size_t)(lc->n_kv_heads * lc->head_dim);
        if ((size_t)lc->ffn > I) I = (size_t)lc->ffn;
    }
    size_t Ie = c->moe ? (size_t)c->moe_ffn : 0, E = c->moe ? (size_t)c->n_experts : 0;
    size_t K = c->moe ? (size_t)c->top_k_experts : 0, N = (size_t)n, F = sizeof(float);
    size_t stage = s->m->embd_row_bytes > s->m->ple_row_bytes ? s->m->embd_row_bytes : s->m->ple_row_bytes;
    int tasks = ox_pool_threads();
    if (tasks < 1) tasks = 1;
    /* two passes over one layout: size it, then fill the pointers */
    carve cv = {NULL, 0};
    for (int pass = 0; pass < 2; pass++) {
        cv.off = 0;
        A->x = take(&cv, N * H * F);
        A->a = take(&cv, N * H * F);
        A->q = take(&cv, N * qw * F);
        A->k = take(&cv, N * kw * F);
        A->v = take(&cv, N * kw * F);
        A->att = take(&cv, N * qw * F);
        A->o = take(&cv, N * H * F);
        A->g = take(&cv, N * I * F);
        A->u = take(&cv, N * I * F);
        A->f = take(&cv, N * H * F);
        A->hn = take(&cv, N * H * F);
        A->ple = take(&cv, N * LP * F);
        A->ple_tok = take(&cv, N * LP * F);
        A->pg = take(&cv, N * (size_t)c->ple_dim * F);
        A->pu = take(&cv, N * H * F);
        A->d1 = take(&cv, N * H * F * (c->moe != 0));
        A->xe = take(&cv, N * H * F * (c->moe != 0));
        A->ye = take(&cv, N * H * F * (c->moe != 0));
        A->gu = take(&cv, N * 2 * Ie * F);
        A->eact = take(&cv, N * Ie * F);
        A->zr = take(&cv, N * E * F);
        A->sel = take(&cv, N * K * sizeof(int));
        A->selw = take(&cv, N * K * F);
        A->tok_of = take(&cv, N * K * sizeof(int));
        A->slot_of = take(&cv, N * K * sizeof(int));
        A->scores = take(&cv, (size_t)tasks * (size_t)kv_len * F);
        A->uniq = take(&cv, N * sizeof(int32_t));
        A->row_of = take(&cv, N * sizeof(int));
        A->stage = take(&cv, stage);
        if (pass == 0) {
            cv.base = ox_scratch_get(&s->act, cv.off, err);
            if (!cv.base) return err ? err->code : OX_E_NOMEM;
        }
    }
    return 0;
}

typedef struct attn_job {
    const float *q;      /* [n][nh*hd] */
    float *out;          /* [n][nh*hd] */
    const float *K, *V;  /* cache rows [j][kvw] */
    float *scores;       /* [tasks][kv_len] */
    int n, pos, nh, hd, kvw, group, window, bidir, kv_len;
} attn_job;

/* Keys j visible from position p: causal j <= p (bidirectional: all of the sequence), and on
 * sliding layers only the W nearest (j > p - W; bidirectional also j < p + W). */
static void attn_task(void *ctx, int task, int n_tasks) {
    const attn_job *J = ctx;
    int items = J->n * J->nh;
    int i0 = (int)((long long)items * task / n_tasks), i1 = (int)((long long)items * (task + 1) / n_tasks);
    float *s = J->scores + (size_t)task * (size_t)J->kv_len;
    for (int it = i0; it < i1; it++) {
        int t = it / J->nh, h = it % J->nh, p = J->pos + t, g = h / J->group;
        int lo = 0, hi = J->bidir ? J->kv_len - 1 : p;
        if (J->window > 0) {
            if (p - J->window + 1 > lo) lo = p - J->window + 1;
            if (J->bidir && p + J->window - 1 < hi) hi = p + J->window - 1;
        }
        const float *qh = J->q + (size_t)t * J->nh * J->hd + (size_t)h * J->hd;
        for (int j = lo; j <= hi; j++) s[j - lo] = ox_dot_f32(qh, J->K + (size_t)j * J->kvw + (size_t)g * J->hd, J->hd);
        ox_softmax(s, hi - lo + 1);
        float *o = J->out + (size_t)t * J->nh * J->hd + (size_t)h * J->hd;
        memset(o, 0, (size_t)J->hd * sizeof(float));
        for (int j = lo; j <= hi; j++) ox_axpy(o, s[j - lo], J->V + (size_t)j * J->kvw + (size_t)g * J->hd, J->hd);
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Read one row of a host table and dequantize it to f32. */
static int table_row(ox_model *m, const ox_tensor *t, size_t rb, int32_t row, uint64_t cols, uint8_t *stage,
                     float *dst, ox_err *err) {
    int rc = ox_tensor_read_rows(t, (uint64_t)row, 1, stage, err);
    if (rc) return rc;
    m->host_bytes += rb;
    m->rows_fetched++;
    ox_dequantize_row(t->type, stage, dst, (size_t)cols);
    return 0;
}

/* Input embeddings and PLE inputs for the n tokens (spec b.1, b.2). */
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
        else
            ox_dequantize_row(m->embd.type, (const uint8_t *)m->embd.data + (size_t)io->tokens[i] * m->embd.row_bytes,
                              x, (size_t)H);
        for (int j = 0; j < H; j++) x[j] *= sH;
    }
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
    /* ctx = rms(W_plm h / sqrt(H)) per layer chunk; ple = (ctx + row * sqrt(P)) / sqrt(2) */
    TRY(ox_matmul(&s->ws, &m->ple_model_proj, A->x, n, A->ple, err));
    float iH = 1.0f / sqrtf((float)H), sP = sqrtf((float)P), i2 = 1.0f / sqrtf(2.0f);
    for (int i = 0; i < n; i++) {
        int32_t tok = (io->soft && io->soft_mask && io->soft_mask[i]) ? c->pad_id : io->tokens[i];
        const int32_t *hit = bsearch(&tok, A->uniq, (size_t)nu, sizeof *A->uniq, cmp_i32);
        const float *row = A->ple_tok + (size_t)(hit - A->uniq) * LP;
        float *pl = A->ple + (size_t)i * LP;
        for (size_t j = 0; j < LP; j++) pl[j] *= iH;
        for (int l = 0; l < L; l++) ox_rmsnorm(pl + (size_t)l * P, pl + (size_t)l * P, m->ple_proj_norm, P, c->rms_eps);
        for (size_t j = 0; j < LP; j++) pl[j] = (pl[j] + row[j] * sP) * i2;
    }
    return 0;
}

static void rms_rows(float *y, const float *x, const float *w, int n_rows, int n, float eps) {
    for (int i = 0; i < n_rows; i++) ox_rmsnorm(y + (size_t)i * n, x + (size_t)i * n, w, n, eps);
}

static void add_rows(float *h, const float *d, size_t n) {
    for (size_t i = 0; i < n; i++) h[i] += d[i];
}

/* Expert e's block of `rows` rows in a stacked expert tensor. */
static ox_matrix expert_view(const ox_matrix *M, int e, int rows) {
    ox_matrix v = *M;
    v.rows = rows;
    v.data = (uint8_t *)M->data + (size_t)e * (size_t)rows * M->row_bytes;
    return v;
}

/* Routed experts (spec b.6 steps 2-3) into A->ye: router on the un-normed residual A->x,
 * experts on rms(x, pre_ffw_norm_2); tokens grouped per expert so each expert runs once. */
static int moe_branch(ox_session *s, const layer_w *w, int n, acts *A, ox_err *err) {
    const ox_config *c = &s->m->c;
    int H = c->hidden, E = c->n_experts, K = c->top_k_experts, Ie = c->moe_ffn;
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
        ox_matrix dn = expert_view(&w->exp_down, e, H);
        int fused = w->exp_gate_up.data != NULL;
        if (fused) {
            ox_matrix gu = expert_view(&w->exp_gate_up, e, 2 * Ie);
            TRY(ox_matmul(&s->ws, &gu, A->xe, m, A->gu, err));
        } else {
            ox_matrix g = expert_view(&w->exp_gate, e, Ie), u = expert_view(&w->exp_up, e, Ie);
            const ox_matrix *Ws[2] = {&g, &u};
            float *ys[2] = {A->gu, A->gu + (size_t)m * Ie};
            TRY(ox_matmul_multi(&s->ws, Ws, 2, A->xe, m, ys, err));
        }
        for (int r = 0; r < m; r++) { /* fused rows: [gate | up]; split: all gates, then all ups */
            const float *g = A->gu + (size_t)r * (fused ? 2 * Ie : Ie);
            const float *u = fused ? g + Ie : A->gu + (size_t)(m + r) * Ie;
            ox_geglu(A->eact + (size_t)r * Ie, g, u, Ie);
        }
        TRY(ox_matmul(&s->ws, &dn, A->eact, m, A->f, err));
        for (int r = 0; r < m; r++)
            ox_axpy(A->ye + (size_t)A->tok_of[r] * H, A->selw[A->slot_of[r]], A->f + (size_t)r * H, H);
    }
    return 0;
}

static int layer_forward(ox_session *s, int l, int n, acts *A, ox_err *err) {
    ox_model *m = s->m;
    const ox_config *c = &m->c;
    const ox_layer_cfg *lc = &c->layers[l];
    const layer_w *w = &m->L[l];
    int H = c->hidden, nh = c->n_heads, hd = lc->head_dim, nkv = lc->n_kv_heads, kvw = nkv * hd;
    size_t NH = (size_t)n * H;
    float eps = c->rms_eps;

    /* attention (b.3 steps 1-5) */
    rms_rows(A->a, A->x, w->attn_norm, n, H, eps);
    if (lc->shared) {
        TRY(ox_matmul(&s->ws, &w->q, A->a, n, A->q, err));
    } else {
        const ox_matrix *Ws[3] = {&w->q, &w->k, &w->v};
        float *ys[3] = {A->q, A->k, A->v};
        TRY(ox_matmul_multi(&s->ws, Ws, lc->k_eq_v ? 2 : 3, A->a, n, ys, err));
        if (lc->k_eq_v) memcpy(A->v, A->k, (size_t)n * kvw * sizeof(float)); /* V from the raw K */
    }
    for (int t = 0; t < n; t++) {
        float *qt = A->q + (size_t)t * nh * hd;
        rms_rows(qt, qt, w->q_norm, nh, hd, eps);
        ox_rope_heads(qt, nh, (size_t)hd, hd, s->pos + t, lc->rope_pairs, lc->rope_base, c->rope_factor);
    }
    kv_cache *kc = &s->kv[lc->kv_src];
    if (!lc->shared) {
        for (int t = 0; t < n; t++) {
            float *kd = kc->k + (size_t)(s->pos + t) * kvw, *vd = kc->v + (size_t)(s->pos + t) * kvw;
            rms_rows(kd, A->k + (size_t)t * kvw, w->k_norm, nkv, hd, eps);
            ox_rope_heads(kd, nkv, (size_t)hd, hd, s->pos + t, lc->rope_pairs, lc->rope_base, c->rope_factor);
            rms_rows(vd, A->v + (size_t)t * kvw, NULL, nkv, hd, eps);
        }
    }
    int tasks = ox_pool_threads();
    if (tasks < 1) tasks = 1;
    if (tasks > n * nh) tasks = n * nh;
    attn_job J = {A->q, A->att, kc->k, kc->v, A->scores, n, s->pos, nh, hd, kc->width, nh / nkv,
                  lc->window, c->bidirectional, s->pos + n};
    ox_pool_run(attn_task, &J, tasks);
    TRY(ox_matmul(&s->ws, &w->o, A->att, n, A->o, err));
    rms_rows(A->o, A->o, w->post_attn_norm, n, H, eps);
    add_rows(A->x, A->o, NH);

    /* feed-forward (b.3 step 6, or b.6 with the routed experts in parallel) */
    rms_rows(A->a, A->x, w->ffn_norm, n, H, eps);
    {
        const ox_matrix *Ws[2] = {&w->gate, &w->up};
        float *ys[2] = {A->g, A->u};
        TRY(ox_matmul_multi(&s->ws, Ws, 2, A->a, n, ys, err));
    }
    for (int t = 0; t < n; t++)
        ox_geglu(A->g + (size_t)t * lc->ffn, A->g + (size_t)t * lc->ffn, A->u + (size_t)t * lc->ffn, lc->ffn);
    TRY(ox_matmul(&s->ws, &w->down, A->g, n, A->f, err));
    if (c->moe) {
        rms_rows(A->d1, A->f, w->post_ffw_norm_1, n, H, eps);
        TRY(moe_branch(s, w, n, A, err));
        rms_rows(A->ye, A->ye, w->post_ffw_norm_2, n, H, eps);
        for (size_t i = 0; i < NH; i++) A->f[i] = A->d1[i] + A->ye[i];
    }
    rms_rows(A->f, A->f, w->post_ffw_norm, n, H, eps);
    add_rows(A->x, A->f, NH);

    /* per-layer embedding injection (b.3 step 7) */
    if (c->ple_dim > 0) {
        int P = c->ple_dim;
        size_t LP = (size_t)c->n_layers * P;
        TRY(ox_matmul(&s->ws, &w->ple_gate, A->x, n, A->pg, err));
        for (int t = 0; t < n; t++)
            ox_geglu(A->pg + (size_t)t * P, A->pg + (size_t)t * P, A->ple + (size_t)t * LP + (size_t)l * P, P);
        TRY(ox_matmul(&s->ws, &w->ple_proj, A->pg, n, A->pu, err));
        rms_rows(A->pu, A->pu, w->ple_post_norm, n, H, eps);
        add_rows(A->x, A->pu, NH);
    }
    /* layer_scalar scales the whole residual stream (b.3 step 8) */
    if (w->out_scale != 1.0f)
        for (size_t i = 0; i < NH; i++) A->x[i] *= w->out_scale;
    return 0;
}

/* One micro-batch: every token through every layer, appended to the caches. */
static int forward_batch(ox_session *s, const ox_forward_io *io, ox_err *err) {
    ox_model *m = s->m;
    const ox_config *c = &m->c;
    int n = io->n, H = c->hidden, V = c->vocab;
    TRY(kv_reserve(s, s->pos + n, err));
    acts A;
    TRY(carve_acts(s, n, s->pos + n, &A, err));
    TRY(embed(s, io, &A, err));
    for (int l = 0; l < c->n_layers; l++) TRY(layer_forward(s, l, n, &A, err));

    /* final norm, tied head, soft-cap (b.4) */
    int first = (io->hidden || (io->logits && io->all_logits)) ? 0 : n - 1, nout = n - first;
    float *hn = io->hidden ? io->hidden : A.hn;
    rms_rows(hn + (size_t)first * H, A.x + (size_t)first * H, m->out_norm, nout, H, c->rms_eps);
    if (io->logits) {
        int f0 = io->all_logits ? 0 : n - 1, nl = n - f0;
        TRY(ox_matmul(&s->ws, &m->embd, hn + (size_t)f0 * H, nl, io->logits, err));
        if (c->softcap > 0) {
            float cap = c->softcap;
            for (size_t i = 0; i < (size_t)nl * V; i++) io->logits[i] = cap * tanhf(io->logits[i] / cap);
        }
    }
    for (int i = 0; i < n; i++) s->toks[s->pos + i] = io->soft && io->soft_mask && io->soft_mask[i] ? -1 : io->tokens[i];
    s->pos += n;
    return 0;
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
    for (int i0 = 0; i0 < n; i0 += ub) {
        int k = n - i0 < ub ? n - i0 : ub, last = i0 + k == n;
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
