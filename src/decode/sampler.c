/* sampler.c — see sampler.h. */
#include "decode/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float l;
    int32_t id;
} cand;

struct ox_sampler {
    ox_sampler_params p; /* bias pointers point at the owned copies below */
    int32_t *bias_ids;
    float *bias;
    uint64_t seed, state;
    cand *c; /* scratch: candidates */
    size_t c_cap;
    int32_t *win; /* scratch: the penalty window, sorted */
    size_t win_cap;
    float *w; /* scratch: weights, when every token may be drawn */
    size_t w_cap;
};

void ox_sampler_defaults(ox_sampler_params *p) {
    *p = (ox_sampler_params){
        .temperature = 1.0f, .top_k = 64, .top_p = 0.95f, .min_p = 0.0f, .repetition_penalty = 1.0f, .penalty_window = 64};
}

ox_sampler *ox_sampler_new(const ox_sampler_params *p, ox_err *err) {
    const char *bad = isnan(p->temperature)               ? "temperature is NaN"
                      : !(p->top_p > 0 && p->top_p <= 1)  ? "top_p must be in (0, 1]"
                      : !(p->min_p >= 0 && p->min_p <= 1) ? "min_p must be in [0, 1]"
                      : !(p->repetition_penalty > 0 && isfinite(p->repetition_penalty))
                          ? "repetition_penalty must be > 0"
                      : !isfinite(p->frequency_penalty) || !isfinite(p->presence_penalty) ? "penalties must be finite"
                      : p->n_bias < 0 || (p->n_bias && (!p->bias_ids || !p->bias))        ? "bad logit bias list"
                                                                                          : NULL;
    for (int i = 0; !bad && i < p->n_bias; i++)
        if (p->bias_ids[i] < 0 || isnan(p->bias[i])) bad = "logit bias: negative id or NaN value";
    if (bad) {
        ox_errf(err, OX_E_RANGE, "sampler: %s", bad);
        return NULL;
    }
    ox_sampler *s = calloc(1, sizeof *s);
    if (s && p->n_bias) {
        s->bias_ids = malloc((size_t)p->n_bias * sizeof *s->bias_ids);
        s->bias = malloc((size_t)p->n_bias * sizeof *s->bias);
    }
    if (!s || (p->n_bias && (!s->bias_ids || !s->bias))) {
        ox_sampler_free(s);
        ox_errf(err, OX_E_NOMEM, "sampler: out of memory");
        return NULL;
    }
    s->p = *p;
    if (p->n_bias) {
        memcpy(s->bias_ids, p->bias_ids, (size_t)p->n_bias * sizeof *s->bias_ids);
        memcpy(s->bias, p->bias, (size_t)p->n_bias * sizeof *s->bias);
    }
    s->p.bias_ids = s->bias_ids, s->p.bias = s->bias;
    ox_sampler_reseed(s, p->seed);
    return s;
}

void ox_sampler_free(ox_sampler *s) {
    if (!s) return;
    free(s->bias_ids);
    free(s->bias);
    free(s->c);
    free(s->win);
    free(s->w);
    free(s);
}

void ox_sampler_reseed(ox_sampler *s, uint64_t seed) { s->seed = s->state = seed; }
void ox_sampler_reset(ox_sampler *s) { s->state = s->seed; }

/* splitmix64: uniform in [0, 1) with 53 bits */
static double uniform(ox_sampler *s) {
    uint64_t z = (s->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* a comes before b: larger logit, then lower id (a total order: results are reproducible) */
static int better(cand a, cand b) { return a.l > b.l || (a.l == b.l && a.id < b.id); }

static int cmp_cand(const void *x, const void *y) {
    cand a = *(const cand *)x, b = *(const cand *)y;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Partial selection: afterwards c[0..k) are the k best of c[0..n), in no order. */
static void select_top(cand *c, size_t n, size_t k) {
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        cand a = c[lo], b = c[lo + (hi - lo) / 2], d = c[hi - 1], pv; /* median of three */
        if (better(a, b)) pv = better(b, d) ? b : better(a, d) ? d : a;
        else pv = better(a, d) ? a : better(b, d) ? d : b;
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) { /* [lo,lt) better than pv, [lt,i) equal, [gt,hi) worse */
            if (better(c[i], pv)) {
                cand t = c[lt];
                c[lt++] = c[i];
                c[i++] = t;
            } else if (better(pv, c[i])) {
                cand t = c[--gt];
                c[gt] = c[i];
                c[i] = t;
            } else i++;
        }
        if (k < lt) hi = lt;
        else if (k <= gt) return;
        else lo = gt;
    }
}

/* Relative weight of a logit (the max has weight 1); one definition for every pass. */
static float weight(float l, float m, float inv_t) { return expf((l - m) * inv_t); }

/* The comparisons come before the conversion: a NaN or huge logit (a hostile bias) has no int. */
static int bucket(float l, float lo, float scale) {
    float x = (l - lo) * scale;
    return x >= 1023.0f ? 1023 : x >= 0.0f ? (int)x : 0;
}

static void penalize(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent) {
    const ox_sampler_params *p = &s->p;
    if (n_recent <= 0 || !recent ||
        (p->repetition_penalty == 1.0f && p->frequency_penalty == 0.0f && p->presence_penalty == 0.0f))
        return;
    if (p->penalty_window > 0 && n_recent > p->penalty_window)
        recent += n_recent - p->penalty_window, n_recent = p->penalty_window;
    if ((size_t)n_recent > s->win_cap) {
        int32_t *w = realloc(s->win, (size_t)n_recent * sizeof *w);
        if (!w) return; /* penalties are skipped rather than failing the step */
        s->win = w, s->win_cap = (size_t)n_recent;
    }
    memcpy(s->win, recent, (size_t)n_recent * sizeof *recent);
    qsort(s->win, (size_t)n_recent, sizeof *s->win, cmp_i32);
    for (int i = 0; i < n_recent;) {
        int j = i;
        while (j < n_recent && s->win[j] == s->win[i]) j++;
        int32_t id = s->win[i];
        if (id >= 0 && id < vocab) {
            float l = logits[id];
            l = l > 0 ? l / p->repetition_penalty : l * p->repetition_penalty;
            logits[id] = l - (float)(j - i) * p->frequency_penalty - p->presence_penalty;
        }
        i = j;
    }
}

/* One draw from weights w(i) over the ids the caller's loop visits, with a draft to verify
 * (draft < 0: none). With a draft d, standard speculative sampling for a draft distribution
 * that is certain of d: keep d with probability p(d), else draw from p without d. */
typedef struct draw {
    ox_sampler *s;
    int draft, *accepted;
    double total; /* the weights drawn from (without the draft's, once it is refused) */
    double r, cum;
} draw;

/* returns 1 when the draw is decided before the scan (the draft kept) */
static int draw_begin(draw *d, double total, double draft_w) {
    d->total = total;
    d->cum = 0;
    if (d->draft >= 0) {
        if (uniform(d->s) * total < draft_w) return *d->accepted = 1;
        d->total -= draft_w;
    }
    d->r = uniform(d->s) * d->total;
    return 0;
}

/* the scan over the candidates but the draft: 1 when the one of weight w is drawn */
static int draw_take(draw *d, double w) {
    d->cum += w;
    return d->r < d->cum;
}

static int sample_core(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent, int draft,
                       int *accepted) {
    const ox_sampler_params *p = &s->p;
    draw dr = {.s = s, .draft = draft >= 0 && draft < vocab ? draft : -1, .accepted = accepted};
    if (accepted) *accepted = 0;
    if (!logits || vocab <= 0) return OX_E_RANGE;
    for (int i = 0; i < p->n_bias; i++) {
        if (p->bias_ids[i] >= vocab) return OX_E_RANGE;
        logits[p->bias_ids[i]] += p->bias[i];
    }
    penalize(s, logits, vocab, recent, n_recent);
    int best = -1;
    float m = -INFINITY;
    for (int i = 0; i < vocab; i++)
        if (logits[i] > m) m = logits[i], best = i;
    if (best < 0) return OX_E_RANGE; /* every logit is -inf or NaN */
    if (p->temperature <= 0 || p->top_k == 1 || isinf(m)) {
        if (accepted) *accepted = best == draft;
        return best;
    }

    /* One pass buckets the logits that can still be drawn (weight exp((l - m) / T) above
     * exp(-40): anything lighter is below the draw's 53-bit resolution) by value, with counts
     * and masses; top-k and top-p then only gather and sort the buckets they need. */
    const float inv_t = 1.0f / p->temperature, lo = m - 40.0f * p->temperature;
    if (!(m - lo > 0) || !isfinite(inv_t)) { /* temperature too small to matter */
        if (accepted) *accepted = best == draft;
        return best;
    }
    enum { NB = 1024 };
    uint32_t cnt[NB] = {0};
    double mass[NB] = {0}, z = 0;
    const float scale = NB / (m - lo);
    size_t n_in = 0;
    for (int i = 0; i < vocab; i++)                                       /* counts: all top-k needs */
        if (logits[i] >= lo) cnt[bucket(logits[i], lo, scale)]++, n_in++; /* NaN fails >= */
    size_t want_k = p->top_k > 0 && (size_t)p->top_k < n_in ? (size_t)p->top_k : 0;
    if (!want_k) { /* masses (weights kept for the draw) */
        if ((size_t)vocab > s->w_cap) {
            float *w = realloc(s->w, (size_t)vocab * sizeof *w);
            if (!w) return OX_E_NOMEM;
            s->w = w, s->w_cap = (size_t)vocab;
        }
        for (int i = 0; i < vocab; i++) {
            float w = logits[i] >= lo ? weight(logits[i], m, inv_t) : 0;
            s->w[i] = w;
            if (w > 0) mass[bucket(logits[i], lo, scale)] += w, z += w;
        }
    }
    const double floor_w = p->min_p; /* min-p: p_i >= min_p * p_max, and p_max has weight 1 */
    if (!want_k && p->top_p >= 1.0f) {
        /* no truncation: draw by a scan in id order */
        double total = 0;
        if (floor_w > 0)
            for (int i = 0; i < vocab; i++) total += s->w[i] >= floor_w ? s->w[i] : 0;
        else total = z;
        double wd = dr.draft >= 0 && s->w[dr.draft] > 0 && s->w[dr.draft] >= floor_w ? s->w[dr.draft] : 0;
        if (draw_begin(&dr, total, wd)) return dr.draft;
        int last = best;
        for (int i = 0; i < vocab; i++) {
            if (s->w[i] <= 0 || s->w[i] < floor_w || i == dr.draft) continue;
            last = i;
            if (draw_take(&dr, s->w[i])) return i;
        }
        return last; /* rounding: r landed on the total */
    }
    /* the lowest bucket that must be gathered: enough tokens for top-k, or enough mass for top-p */
    int from = NB - 1;
    double acc = 0;
    for (size_t have = 0; from > 0; from--) {
        have += cnt[from], acc += mass[from];
        if (want_k ? have >= want_k : acc >= p->top_p * z) break;
    }
    if ((size_t)vocab > s->c_cap) {
        cand *c = realloc(s->c, (size_t)vocab * sizeof *c);
        if (!c) return OX_E_NOMEM;
        s->c = c, s->c_cap = (size_t)vocab;
    }
    cand *c = s->c;
    size_t n = 0;
    for (int i = 0; i < vocab; i++)
        if (logits[i] >= lo && bucket(logits[i], lo, scale) >= from) c[n++] = (cand){logits[i], i};
    size_t keep = n;
    if (want_k) {
        select_top(c, n, want_k);
        keep = want_k;
        z = 0;
        for (size_t i = 0; i < keep; i++) z += weight(c[i].l, m, inv_t);
    }
    qsort(c, keep, sizeof *c, cmp_cand);
    if (p->top_p < 1.0f) { /* smallest sorted prefix holding top_p of the mass */
        double want = p->top_p * z, cum = 0;
        size_t i = 0;
        while (i < keep && cum < want) cum += weight(c[i++].l, m, inv_t);
        keep = i ? i : 1;
    }
    double total = 0;
    for (size_t i = 0; i < keep; i++) {
        double w = weight(c[i].l, m, inv_t);
        if (w >= floor_w) total += w;
    }
    double wd = 0;
    for (size_t i = 0; dr.draft >= 0 && i < keep; i++)
        if (c[i].id == dr.draft) {
            double w = weight(c[i].l, m, inv_t);
            wd = w >= floor_w ? w : 0;
        }
    if (draw_begin(&dr, total, wd)) return dr.draft;
    int last = best;
    for (size_t i = 0; i < keep; i++) {
        double w = weight(c[i].l, m, inv_t);
        if (w < floor_w || c[i].id == dr.draft) continue;
        last = c[i].id;
        if (draw_take(&dr, w)) return c[i].id;
    }
    return last;
}

int ox_sample(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent) {
    return sample_core(s, logits, vocab, recent, n_recent, -1, NULL);
}

int ox_sample_verify(ox_sampler *s, float *logits, int vocab, const int32_t *recent, int n_recent, int draft,
                     int *accepted) {
    return sample_core(s, logits, vocab, recent, n_recent, draft, accepted);
}
