/* estimate.c — the memory estimate (estimate.h): the loader's dry pass for the weights, and
 * the sizes forward.c, the kernels and session.c ask for at a given context. */
#include "model/estimate.h"

#include <stdio.h>

#include "kernels/pool.h"

#include "model/gpu_attach.h"
#include "model/model_impl.h"

/* Per generation (generate.c, sampler.c): the logits row, the sampler's candidates (id and
 * logit), its weights, the row a logprob or a draft check copies, and the verify rows of the
 * default drafts of a greedy request (OX_GEN_DRAFT_DEFAULT + 1 rows; longer drafts asked for
 * explicitly take (k + 1) rows). */
static uint64_t generation_bytes(const ox_config *c) {
    return (uint64_t)c->vocab * (4 + 8 + 4 + 4 + 4 * (OX_GEN_DRAFT_DEFAULT + 1));
}

/* The most tokens one forward call takes: a prefill goes in micro-batches (forward.c),
 * bidirectional models in one batch. */
static int micro_batch(const ox_config *c, int ctx) {
    return c->bidirectional || ctx < ox_max_batch(c) ? ctx : ox_max_batch(c);
}

static size_t stage_bytes(const ox_weight_sums *w) {
    return w->embd_row_bytes > w->ple_row_bytes ? w->embd_row_bytes : w->ple_row_bytes;
}

int ox_memory_estimate(const ox_model_files *mf, const ox_load_opts *opts, const ox_mem_request *rq,
                       ox_mem_estimate *out, ox_err *err) {
    const ox_config *c = ox_files_config(mf);
    int ctx = rq->n_ctx > 0 ? rq->n_ctx : c->ctx_max;
    if (ctx <= 0) return ox_errf(err, OX_E_RANGE, "memory estimate: the model states no context size: give one");
    if (c->ctx_max > 0 && ctx > c->ctx_max)
        return ox_errf(err, OX_E_RANGE, "context %d exceeds the model's maximum %d", ctx, c->ctx_max);
    int ub = micro_batch(c, ctx);
    ox_weight_sums w;
    TRY(ox_model_dry_walk(mf, opts, ub, &w, err));
    if (rq->kv_type < 0 || rq->kv_type >= OX_KV_N_TYPES)
        return ox_errf(err, OX_E_RANGE, "memory estimate: KV type %d is not one of 0..%d", rq->kv_type,
                       OX_KV_N_TYPES - 1);
    TRY(ox_kv_check(c, (ox_kv_type)rq->kv_type, err));
    uint64_t kv = ox_kv_bytes(c, ctx, (ox_kv_type)rq->kv_type);
    int tasks = rq->threads > 1 ? rq->threads : 1;
    uint64_t scratch = ox_forward_scratch_bytes(c, stage_bytes(&w), tasks, ub, ctx) + w.matmul_ws +
                       (uint64_t)ctx * (sizeof(int32_t) + sizeof(uint64_t)) + generation_bytes(c);
    uint64_t wcache = opts && opts->stream != OX_STREAM_NONE ? opts->weight_cache : 0;
    ox_load_opts none = {0};
    const ox_load_opts *o = opts ? opts : &none;
    if (rq->gpu && !ox_gpu_cpu_only(c, o) && !c->moe && !(w.mat_types & ~o->gpu_types)) {
        int on_host = o->tables_on_host != 0; /* < 0: yes on the GPU */
        uint64_t resident = w.resident - w.matrix_bytes + (on_host ? 0 : w.embd_bytes);
        /* the GPU keeps the CPU's cache layout: the KV type's rows, sliding layers as rings */
        uint64_t gkv = kv;
        int width = c->hidden, heads = c->n_heads;
        for (int l = 0; l < c->n_layers; l++)
            if (c->layers[l].ffn > width) width = c->layers[l].ffn;
        uint64_t gscratch = ox_forward_scratch_bytes(c, stage_bytes(&w), 1, ub, ctx) +
                            (uint64_t)ub * (uint64_t)heads * (uint64_t)ctx * 4 + (uint64_t)ub * (uint64_t)width * 4 +
                            (uint64_t)c->vocab * 4;
        *out = (ox_mem_estimate){
            .weights = resident,
            .embeddings_on_host = w.host_table_bytes + (on_host ? w.embd_bytes : 0),
            .scratch = scratch,
            .runtime = rq->runtime,
            .total = resident + scratch + rq->runtime,
            .file_bytes = w.file_bytes,
            .context = ctx,
            .gpu = 1,
            .gpu_weights = w.resident,
            .gpu_kv = gkv,
            .gpu_scratch = gscratch,
        };
        return 0;
    }
    *out = (ox_mem_estimate){
        .weights = w.resident,
        .weight_cache = wcache,
        .embeddings_on_host = w.host_table_bytes,
        .kv = kv,
        .scratch = scratch,
        .runtime = rq->runtime,
        .total = w.resident + wcache + kv + scratch + rq->runtime,
        .file_bytes = w.file_bytes,
        .context = ctx,
    };
    return 0;
}

static void human(char *s, size_t cap, uint64_t b) {
    if (b >= (1ull << 30)) snprintf(s, cap, "%.2f GiB", (double)b / (1ull << 30));
    else snprintf(s, cap, "%.1f MiB", (double)b / (1ull << 20));
}

/* What a budget bounds: wasm memory, and on the GPU the device's memory too. */
static uint64_t in_all(const ox_mem_estimate *e) { return e->total + e->gpu_weights + e->gpu_kv + e->gpu_scratch; }

int ox_memory_budget(const ox_model_files *mf, const ox_load_opts *opts, const ox_mem_request *rq, uint64_t budget,
                     int fit, ox_mem_estimate *out, ox_err *err) {
    TRY(ox_memory_estimate(mf, opts, rq, out, err));
    if (!budget || in_all(out) <= budget) return 0;
    /* total grows with the context: the largest that fits, by bisection */
    ox_mem_request r = *rq;
    ox_mem_estimate e;
    int lo = 0, hi = out->context;
    while (hi - lo > 1) {
        r.n_ctx = lo + (hi - lo) / 2;
        TRY(ox_memory_estimate(mf, opts, &r, &e, err));
        if (in_all(&e) <= budget) lo = r.n_ctx;
        else hi = r.n_ctx;
    }
    if (lo >= 256) lo -= lo % 256;
    char need[32], have[32];
    human(need, sizeof need, in_all(out));
    human(have, sizeof have, budget);
    if (lo < 1) {
        r.n_ctx = 1;
        TRY(ox_memory_estimate(mf, opts, &r, &e, err));
        human(need, sizeof need, in_all(&e));
        return ox_errf(
            err, OX_E_NOMEM,
            "the model needs %s even at a context of 1 (weights %llu bytes), more than the memory budget of %s", need,
            (unsigned long long)e.weights, have);
    }
    if (!fit)
        return ox_errf(err, OX_E_NOMEM,
                       "the model needs %s at a context of %d, more than the memory budget of %s; try context: %d "
                       "(or %smemoryBudget: {bytes, fit: 'context'})",
                       need, out->context, have, lo, rq->kv_type == OX_KV_Q8_0 ? "" : "kvType: 'q8_0', or ");
    r.n_ctx = lo;
    return ox_memory_estimate(mf, opts, &r, out, err);
}

int ox_session_prealloc(ox_session *s, ox_err *err) {
    const ox_model *m = s->m;
    int ctx = s->max_ctx, ub = micro_batch(&m->c, ctx);
    ox_weight_sums w;
    TRY(ox_model_dry_walk(m->mf, &m->opts, ub, &w, err));
    TRY(ox_session_reserve(s, ctx, err));
    int tasks = ox_pool_threads() > 1 ? ox_pool_threads() : 1;
    if (!ox_scratch_get(&s->act, ox_forward_scratch_bytes(&m->c, stage_bytes(&w), tasks, ub, ctx), err) ||
        (w.matmul_ws && !ox_scratch_get(&s->ws, w.matmul_ws, err)))
        return err ? err->code : OX_E_NOMEM;
    return 0;
}
