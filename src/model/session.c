/* session.c — sessions: the KV caches of the own-KV layers and the tokens in them, grown with
 * use (not preallocated to the context size). */
#include "model/model_impl.h"

#include <stdlib.h>
#include <string.h>

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

int ox_session_reserve(ox_session *s, int need, ox_err *err) {
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
    if (s->pos > 0 && ox_session_reserve(d, s->pos, err)) {
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

