/* session.c — sessions: the KV caches of the own-KV layers (model/kv.h) and the tokens in
 * them, grown with use (not preallocated to the context size). */
#include "model/gpu_attach.h"
#include "model/model_impl.h"

#include <stdlib.h>
#include <string.h>

ox_session *ox_session_new_rings(ox_model *m, int max_ctx, ox_kv_type kv_type, int rings, ox_err *err) {
    int lim = m->c.ctx_max > 0 ? m->c.ctx_max : INT32_MAX / 2;
    if (max_ctx <= 0) max_ctx = lim;
    if (max_ctx > lim) {
        ox_errf(err, OX_E_RANGE, "context %d exceeds the model's maximum %d", max_ctx, lim);
        return NULL;
    }
    if (ox_kv_check(&m->c, kv_type, err)) return NULL;
    ox_session *s = calloc(1, sizeof *s);
    if (s) s->kv = calloc((size_t)m->c.n_layers, sizeof *s->kv);
    if (!s || !s->kv) {
        free(s);
        ox_errf(err, OX_E_NOMEM, "out of memory for a session");
        return NULL;
    }
    s->m = m;
    s->max_ctx = max_ctx;
    s->kv_type = kv_type;
    s->rings = rings;
    for (int l = 0; l < m->c.n_layers; l++) ox_kv_init(&s->kv[l], &m->c, l, max_ctx, kv_type, rings);
    return s;
}

ox_session *ox_session_new_kv(ox_model *m, int max_ctx, ox_kv_type kv_type, ox_err *err) {
    return ox_session_new_rings(m, max_ctx, kv_type, 1, err);
}

ox_session *ox_session_new(ox_model *m, int max_ctx, ox_err *err) {
    return ox_session_new_kv(m, max_ctx, OX_KV_DEFAULT, err);
}

void ox_session_free(ox_session *s) {
    if (!s) return;
    if (s->m->gpu) ox_gpu_forget(s->m->gpu, s);
    for (int l = 0; l < s->m->c.n_layers; l++) {
        s->m->cache_bytes -= ox_kv_alloc_bytes(&s->kv[l]);
        ox_kv_free(&s->kv[l]);
    }
    free(s->kv);
    free(s->toks);
    free(s->soft_id);
    ox_scratch_free(&s->ws);
    ox_scratch_free(&s->act);
    free(s);
}

int ox_session_pos(const ox_session *s) { return s->pos; }
int ox_session_max_ctx(const ox_session *s) { return s->max_ctx; }
const ox_model *ox_session_model(const ox_session *s) { return s->m; }
const int32_t *ox_session_tokens(const ox_session *s) { return s->toks; }
ox_kv_type ox_session_kv_type(const ox_session *s) { return s->kv_type; }

/* Whether every own-KV cache can go on from pos (a ring holds only its last rows). */
static int can_resume(const ox_session *s, int pos) {
    for (int l = 0; l < s->m->c.n_layers; l++)
        if (!s->m->c.layers[l].shared && !ox_kv_can_resume(&s->kv[l], pos)) return 0;
    return 1;
}

static void rewind_to(ox_session *s, int pos) {
    for (int l = 0; l < s->m->c.n_layers; l++) ox_kv_truncate(&s->kv[l], pos);
    s->pos = pos;
}

void ox_session_reset(ox_session *s) { rewind_to(s, 0); }

/* splitmix64's finalizer: every input bit reaches every output bit */
static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t ox_soft_row_id(const float *row, int hidden) {
    uint64_t h = (uint64_t)hidden;
    for (int i = 0; i < hidden; i++) {
        uint32_t bits;
        memcpy(&bits, &row[i], sizeof bits);
        h = mix64(h ^ bits ^ ((uint64_t)i << 32));
    }
    return h;
}

/* Whether the session's position k holds what the prompt puts there: the same token, or a soft
 * row with the same identity. */
static int same_at(const ox_session *s, int k, const int32_t *tokens, const float *soft, const uint8_t *soft_mask) {
    int H = s->m->c.hidden;
    if (soft_mask && soft_mask[k]) return s->toks[k] == -1 && s->soft_id[k] == ox_soft_row_id(soft + (size_t)k * H, H);
    return tokens[k] >= 0 && s->toks[k] == tokens[k];
}

int ox_session_reuse_soft(ox_session *s, const int32_t *tokens, int n, const float *soft, const uint8_t *soft_mask,
                          ox_err *err) {
    if (n < 1 || !tokens) return ox_errf(err, OX_E_RANGE, "reuse: need at least one token (got %d)", n);
    if (soft_mask && !soft) return ox_errf(err, OX_E_RANGE, "reuse: a soft mask without its rows");
    int k = 0, lim = n - 1 < s->pos ? n - 1 : s->pos;
    while (k < lim && same_at(s, k, tokens, soft, soft_mask)) k++;
    /* bidir_vision: a run of image tokens attends within itself, so its cached rows hold only
     * for the whole run; a prefix that would cut a run (the session's or the prompt's, the
     * same up to k) ends before it, and the prefill runs it whole again */
    int cut = k > 0 && s->toks[k - 1] == -1 && ((k < s->pos && s->toks[k] == -1) || (soft_mask && soft_mask[k]));
    if (s->m->c.bidir_vision && cut)
        while (k > 0 && s->toks[k - 1] == -1) k--;
    /* a prefix ending where the sliding-window rings no longer hold the window: recompute */
    if (!can_resume(s, k)) k = 0;
    rewind_to(s, k);
    return k;
}

int ox_session_reuse(ox_session *s, const int32_t *tokens, int n, ox_err *err) {
    return ox_session_reuse_soft(s, tokens, n, NULL, NULL, err);
}

int ox_session_truncate(ox_session *s, int pos, ox_err *err) {
    if (pos < 0 || pos > s->pos)
        return ox_errf(err, OX_E_RANGE, "truncate to %d: session is at position %d", pos, s->pos);
    if (!can_resume(s, pos))
        return ox_errf(err, OX_E_STATE,
                       "truncate to %d: the sliding-window KV caches no longer hold the %d "
                       "positions before it (truncate to 0 and run the tokens again)",
                       pos, s->m->c.sliding_window - 1);
    rewind_to(s, pos);
    return 0;
}

int ox_session_reserve(ox_session *s, int need, ox_err *err) {
    const ox_config *c = &s->m->c;
    if (s->toks_cap < need) {
        int cap = ox_kv_grown_cap(s->toks_cap, need, s->max_ctx);
        int32_t *t = realloc(s->toks, (size_t)cap * sizeof *t);
        if (!t) return ox_errf(err, OX_E_NOMEM, "out of memory: token list of %d positions", cap);
        s->toks = t;
        uint64_t *ids = realloc(s->soft_id, (size_t)cap * sizeof *ids);
        if (!ids) return ox_errf(err, OX_E_NOMEM, "out of memory: soft-row ids of %d positions", cap);
        s->soft_id = ids;
        s->toks_cap = cap;
    }
    /* the GPU layers' caches live on the GPU (gpu/record.h), and also here where CPU layers read them */
    int on_gpu = s->m->gpu ? s->m->gpu_layers : 0;
    for (int l = 0; l < c->n_layers; l++)
        if (!c->layers[l].shared && (l >= on_gpu || ox_model_gpu_bridge(s->m, l) >= 0))
            TRY(ox_kv_reserve(&s->kv[l], need, &s->m->cache_bytes, err));
    return 0;
}

ox_session *ox_session_clone(const ox_session *s, ox_err *err) {
    ox_session *d = ox_session_new_rings(s->m, s->max_ctx, s->kv_type, s->rings, err);
    if (!d) return NULL;
    if (s->pos > 0 && ox_session_reserve(d, s->pos, err)) {
        ox_session_free(d);
        return NULL;
    }
    for (int l = 0; l < s->m->c.n_layers; l++)
        if (!s->m->c.layers[l].shared && ox_kv_copy(&d->kv[l], &s->kv[l], &s->m->cache_bytes, err)) {
            ox_session_free(d);
            return NULL;
        }
    if (s->pos > 0) {
        memcpy(d->toks, s->toks, (size_t)s->pos * sizeof *d->toks);
        memcpy(d->soft_id, s->soft_id, (size_t)s->pos * sizeof *d->soft_id);
    }
    d->pos = s->pos;
    return d;
}
