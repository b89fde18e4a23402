/* test_estimate.c — the memory estimate (model/estimate.h) against what a load and a full
 * session really allocate, on synthetic models of several shapes, types and contexts; the
 * budget's refusal and its fitted context. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/hostfile.h"
#include "kernels/pool.h"
#include "model/estimate.h"
#include "model/model_impl.h"
#include "writers/synth.h"

static char tmp[256];

static ox_model_files *open_files(const char *path) {
    ox_err err = {0};
    int h = ox_host_open_path(path, &err);
    ox_model_files *mf = h < 0 ? NULL : ox_files_open(&h, 1, &err);
    if (!mf) fprintf(stderr, "open %s: %s\n", path, err.msg);
    return mf;
}

static const char *write_model(const char *preset, ox_type type, const char *tag) {
    static char p[300];
    ox_synth s;
    ox_synth_preset(&s, preset, NULL);
    s.type = s.embd_type = s.ple_proj_type = type;
    snprintf(p, sizeof p, "%s/%s-%s.gguf", tmp, preset, tag);
    ox_err err = {0};
    if (ox_synth_write_gguf(&s, p, &err)) {
        fprintf(stderr, "synth %s: %s\n", p, err.msg);
        return NULL;
    }
    return p;
}

/* Estimate at ctx, then load and fill a session to ctx in prefill chunks of `chunk`: the
 * weights and KV must be exactly the estimate's, the scratch the forward holds close to it. */
static void check_against_load(const char *preset, ox_type type, ox_quant quant, ox_kv_type kvt, int ctx, int chunk) {
    char tag[64];
    snprintf(tag, sizeof tag, "%s-t%d-kv%d", preset, (int)type, (int)kvt);
    const char *path = write_model(preset, type, tag);
    CHECK(path != NULL);
    if (!path) return;
    ox_model_files *mf = open_files(path);
    CHECK(mf != NULL);
    if (!mf) return;
    ox_load_opts o = {.quant = quant};
    ox_mem_request rq = {ctx, kvt, ox_pool_threads(), 0, 0};
    ox_mem_estimate e;
    ox_err err = {0};
    CHECK_MSG(ox_memory_estimate(mf, &o, &rq, &e, &err) == 0, "%s", err.msg);
    ox_model *m = ox_model_load(mf, &o, &err);
    CHECK_MSG(m != NULL, "%s", err.msg);
    if (!m) return;
    ox_model_stats st;
    ox_model_stats_get(m, &st);
    CHECK_MSG(st.resident_bytes == e.weights, "%s: weights %llu, estimated %llu", tag,
              (unsigned long long)st.resident_bytes, (unsigned long long)e.weights);
    CHECK(e.context == ctx);
    CHECK(e.total == e.weights + e.kv + e.scratch);
    CHECK(m->t_ple ? e.embeddings_on_host == m->t_ple->nbytes : e.embeddings_on_host == 0);
    ox_session *s = ox_session_new_kv(m, ctx, kvt, &err);
    CHECK(s != NULL);
    int V = m->c.vocab;
    int32_t *t = malloc(sizeof *t * (size_t)ctx);
    for (int i = 0; i < ctx; i++) t[i] = (int32_t)((i * 7919u + 3) % (unsigned)V);
    float *lg = malloc(sizeof *lg * (size_t)V);
    for (int i = 0; s && i < ctx; i += chunk) {
        int n = ctx - i < chunk ? ctx - i : chunk;
        ox_forward_io io = {.tokens = t + i, .n = n, .logits = lg};
        CHECK_MSG(ox_forward(s, &io, &err) == 0, "%s", err.msg);
    }
    ox_model_stats_get(m, &st);
    CHECK_MSG(st.resident_bytes - e.weights == e.kv, "%s ctx %d: KV %llu, estimated %llu", tag, ctx,
              (unsigned long long)(st.resident_bytes - e.weights), (unsigned long long)e.kv);
    if (s) {
        size_t held = s->act.cap + s->ws.cap;
        /* the first call sizes the scratch for the whole context when it is a full micro-batch;
         * calls that grow it later may leave up to 1.5 x what they needed (ox_scratch_get) */
        int full = chunk >= (ctx < OX_UBATCH ? ctx : OX_UBATCH);
        uint64_t lim = full ? e.scratch : e.scratch * 3 / 2;
        CHECK_MSG(held <= lim, "%s ctx %d: scratch held %zu > %llu", tag, ctx, held, (unsigned long long)lim);
        /* the estimate is a prefill of OX_UBATCH tokens; after one, it is not padded much */
        if (full)
            CHECK_MSG(e.scratch - held < (e.weights + e.kv) / 10 + (uint64_t)V * 20 + 4096u * ctx,
                      "%s ctx %d: scratch estimated %llu, held %zu", tag, ctx, (unsigned long long)e.scratch, held);
    }
    free(t);
    free(lg);
    ox_session_free(s);
    ox_model_free(m);
}

static void test_against_load(void) {
    check_against_load("tiny", OX_F32, OX_QUANT_STORED, OX_KV_F32, 64, 64);
    check_against_load("tiny", OX_F32, OX_QUANT_Q8, OX_KV_F32, 300, 300);         /* two micro-batches */
    check_against_load("tiny", OX_F32, OX_QUANT_Q4, OX_KV_F32, 40, 1);            /* decode only */
    check_against_load("benchlike", OX_Q8_0, OX_QUANT_STORED, OX_KV_F32, 96, 32); /* PLE, KV-shared layers */
    check_against_load("benchlike", OX_Q4_0, OX_QUANT_STORED, OX_KV_F32, 257, 257);
    check_against_load("moe", OX_F32, OX_QUANT_Q8, OX_KV_F32, 50, 50);
    check_against_load("keqv", OX_F32, OX_QUANT_STORED, OX_KV_F32, 33, 11);
    check_against_load("tiny", OX_F32, OX_QUANT_STORED, OX_KV_F32, 400, 256); /* sliding layers: a ring */
    check_against_load("benchlike", OX_Q8_0, OX_QUANT_STORED, OX_KV_Q8_0, 700, 256);
    check_against_load("moe", OX_F32, OX_QUANT_Q4, OX_KV_F16, 300, 100);
}

static void test_budget(void) {
    const char *path = write_model("benchlike", OX_Q8_0, "budget");
    ox_model_files *mf = path ? open_files(path) : NULL;
    CHECK(mf != NULL);
    if (!mf) return;
    ox_load_opts o = {0};
    ox_mem_request rq = {4096, 0, 1, 1 << 20, 0};
    ox_mem_estimate full, e;
    ox_err err = {0};
    CHECK(ox_memory_estimate(mf, &o, &rq, &full, &err) == 0);
    CHECK(full.runtime == 1 << 20 && full.total == full.weights + full.kv + full.scratch + full.runtime);
    /* a budget between the weights and the full need: refused, naming what fits */
    uint64_t budget = full.weights + full.runtime + (full.total - full.weights - full.runtime) * 2 / 3;
    CHECK(ox_memory_budget(mf, &o, &rq, budget, 0, &e, &err) == OX_E_NOMEM);
    CHECK_STR_CONTAINS(err.msg, "memory budget");
    CHECK_STR_CONTAINS(err.msg, "try context: ");
    err = (ox_err){0};
    CHECK_MSG(ox_memory_budget(mf, &o, &rq, budget, 1, &e, &err) == 0, "%s", err.msg);
    CHECK_MSG(e.total <= budget && e.context >= 256 && e.context < 4096 && e.context % 256 == 0,
              "budget %llu: context %d, total %llu (full %llu, weights %llu)", (unsigned long long)budget, e.context,
              (unsigned long long)e.total, (unsigned long long)full.total, (unsigned long long)full.weights);
    /* the next multiple of 256 would not fit */
    ox_mem_request more = rq;
    more.n_ctx = e.context + 256;
    ox_mem_estimate e2;
    CHECK(ox_memory_estimate(mf, &o, &more, &e2, &err) == 0 && e2.total > budget);
    char want[64];
    snprintf(want, sizeof want, "try context: %d", e.context);
    ox_memory_budget(mf, &o, &rq, budget, 0, &e2, &err);
    CHECK_STR_CONTAINS(err.msg, want);
    /* below the weights: nothing fits */
    err = (ox_err){0};
    CHECK(ox_memory_budget(mf, &o, &rq, full.weights / 2, 1, &e, &err) == OX_E_NOMEM);
    CHECK_STR_CONTAINS(err.msg, "even at a context of 1");
    /* no budget, or a budget that holds it: the estimate as is */
    CHECK(ox_memory_budget(mf, &o, &rq, 0, 0, &e, &err) == 0 && e.total == full.total);
    CHECK(ox_memory_budget(mf, &o, &rq, full.total, 0, &e, &err) == 0 && e.context == 4096);
    /* bad requests */
    rq.n_ctx = 1 << 30;
    CHECK(ox_memory_estimate(mf, &o, &rq, &e, &err) == OX_E_RANGE);
    rq.n_ctx = 64, rq.kv_type = 7;
    CHECK(ox_memory_estimate(mf, &o, &rq, &e, &err) == OX_E_RANGE);
    /* the KV types: q8_0 about a quarter of f32 */
    ox_mem_estimate f32, q8;
    rq.n_ctx = 1024, rq.kv_type = OX_KV_F32;
    CHECK(ox_memory_estimate(mf, &o, &rq, &f32, &err) == 0);
    rq.kv_type = OX_KV_Q8_0;
    CHECK(ox_memory_estimate(mf, &o, &rq, &q8, &err) == 0);
    CHECK(q8.kv * 3 < f32.kv && q8.kv * 4 > f32.kv && q8.weights == f32.weights);
    ox_files_free(mf);
}

/* After ox_session_prealloc a session runs its whole context without allocating. */
static void test_prealloc(void) {
    const char *path = write_model("benchlike", OX_Q4_0, "prealloc");
    ox_model_files *mf = path ? open_files(path) : NULL;
    CHECK(mf != NULL);
    if (!mf) return;
    ox_err err = {0};
    ox_load_opts o = {0};
    int ctx = 600;
    ox_mem_request rq = {ctx, 0, ox_pool_threads(), 0, 0};
    ox_mem_estimate e;
    CHECK(ox_memory_estimate(mf, &o, &rq, &e, &err) == 0);
    ox_model *m = ox_model_load(mf, &o, &err);
    ox_session *s = m ? ox_session_new(m, ctx, &err) : NULL;
    CHECK(s != NULL);
    if (!s) return;
    CHECK_MSG(ox_session_prealloc(s, &err) == 0, "%s", err.msg);
    ox_model_stats st;
    ox_model_stats_get(m, &st);
    CHECK(st.resident_bytes == e.weights + e.kv);
    void *act = s->act.p, *ws = s->ws.p, *k0 = s->kv[0].k;
    size_t act_cap = s->act.cap, ws_cap = s->ws.cap;
    CHECK(act_cap + ws_cap <= e.scratch);
    int V = m->c.vocab, chunks[] = {7, 256, 256, 1, 1, 79};
    int32_t t[256];
    float *lg = malloc(sizeof *lg * (size_t)V);
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < chunks[c]; i++) t[i] = (int32_t)((i * 7919u + 5 * c) % (unsigned)V);
        ox_forward_io io = {.tokens = t, .n = chunks[c], .logits = lg};
        CHECK_MSG(ox_forward(s, &io, &err) == 0, "%s", err.msg);
    }
    CHECK(ox_session_pos(s) == ctx);
    CHECK_MSG(s->act.p == act && s->act.cap == act_cap && s->ws.p == ws && s->ws.cap == ws_cap && s->kv[0].k == k0,
              "scratch act %zu -> %zu, ws %zu -> %zu", act_cap, s->act.cap, ws_cap, s->ws.cap);
    free(lg);
    ox_session_free(s);
    ox_model_free(m);
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/ox_estimate_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    ox_err err = {0};
    ox_pool_init(2, &err);
    RUN(test_against_load);
    RUN(test_budget);
    RUN(test_prealloc);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) return 1;
    return check_summary("test_estimate");
}
