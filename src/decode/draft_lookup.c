/* draft_lookup.c — prompt-lookup drafting (draft_lookup.h). */
#include <string.h>

#include "decode/draft_lookup.h"

#define PAUSE_AFTER_MISS 4 /* steps; doubled per consecutive miss, up to 64 */
#define PAUSE_MAX_SHIFT  4
#define DECAY            0.9f  /* per draft (and per step without one): the estimate follows the recent text */
#define PASS_TOKENS      4     /* tokens per pass of the matmul tiles (kernels_simd128.c) */
#define TOKEN_COST       0.27f /* a pass's further token, in decode steps (bench:decoding, 2 threads) */

void ox_lookup_init(ox_lookup *L, int max_k) {
    memset(L, 0, sizeof *L);
    L->min_n = 2;
    L->max_n = 4;
    L->k_max = max_k > 0 ? max_k : 8;
}

float ox_lookup_cost(int n) {
    int passes = (n + PASS_TOKENS - 1) / PASS_TOKENS;
    return (float)passes + TOKEN_COST * (float)(n - passes);
}

int ox_lookup_length(const ox_lookup *L, int cap) {
    /* p with one kept and one cut short as prior: a first draft is short */
    float p = (L->kept + 1) / (L->kept + L->broken + 2);
    int best = 0, hi = L->k_max < cap ? L->k_max : cap;
    if (L->fixed) return hi;
    float best_gain = 1, yield = 1, pk = 1; /* yield: 1 + p + ... + p^k tokens expected */
    for (int k = 1; k <= hi; k++) {
        pk *= p, yield += pk;
        float gain = yield / ox_lookup_cost(k + 1);
        if (gain > best_gain) best = k, best_gain = gain;
    }
    return best;
}

/* the latest j < n - len with hist[j..j+len) == the last len tokens, or -1 */
static int latest_match(const int32_t *hist, int n, int len) {
    const int32_t *tail = hist + n - len;
    for (int j = n - len - 1; j >= 0; j--)
        if (hist[j] == tail[0] && !memcmp(hist + j, tail, (size_t)len * sizeof *hist)) return j;
    return -1;
}

int ox_lookup_resting(ox_lookup *L) {
    if (L->pause <= 0) return 0;
    L->pause--;
    return 1;
}

void ox_lookup_miss(ox_lookup *L) {
    /* a rejected verify costs about a decode step: on text that does not repeat, consecutive
     * misses back off exponentially, so they number O(log n) in n tokens */
    int over = L->misses++ - L->grace;
    if (over >= 0) L->pause = PAUSE_AFTER_MISS << (over < PAUSE_MAX_SHIFT ? over : PAUSE_MAX_SHIFT);
}

int ox_lookup_draft(ox_lookup *L, const int32_t *hist, int n, int32_t *out, int cap) {
    if (ox_lookup_resting(L)) return 0;
    int k = ox_lookup_length(L, cap);
    if (k == 0) { /* nothing pays now: let the estimate drift back so a later step tries again */
        L->kept *= DECAY, L->broken *= DECAY;
        return 0;
    }
    for (int len = L->max_n; len >= L->min_n; len--) {
        if (len >= n) continue;
        int j = latest_match(hist, n, len);
        if (j < 0) continue;
        /* what followed the match; where that runs into the present, the text repeats with
         * period n - len - j and the draft copies on from itself (an overlapping LZ77 copy):
         * a run of one token drafts k of it, not 1 */
        int from = j + len;
        for (int i = 0; i < k; i++) out[i] = from + i < n ? hist[from + i] : out[from + i - n];
        return k;
    }
    return 0;
}

void ox_lookup_update(ox_lookup *L, int drafted, int accepted) {
    if (drafted <= 0) return;
    L->drafted += (uint64_t)drafted;
    L->accepted += (uint64_t)accepted;
    L->kept = DECAY * L->kept + (float)accepted;
    L->broken = DECAY * L->broken + (accepted < drafted);
    if (accepted > 0) L->misses = 0;
    else ox_lookup_miss(L);
}
