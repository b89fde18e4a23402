/* draft_lookup.c — prompt-lookup drafting (draft_lookup.h). */
#include <string.h>

#include "model/draft_lookup.h"

#define PAUSE_AFTER_MISS 4 /* steps; doubled per consecutive miss, up to 64 */
#define PAUSE_MAX_SHIFT 4

void ox_lookup_init(ox_lookup *L, int max_k) {
    memset(L, 0, sizeof *L);
    L->min_n = 2;
    L->max_n = 4;
    L->k_max = max_k > 0 ? max_k : 8;
    L->k_min = 1;
    L->k = L->k_max < 2 ? L->k_max : 2; /* a first draft that fails costs little */
}

/* the latest j < n - len with hist[j..j+len) == the last len tokens, or -1 */
static int latest_match(const int32_t *hist, int n, int len) {
    const int32_t *tail = hist + n - len;
    for (int j = n - len - 1; j >= 0; j--)
        if (hist[j] == tail[0] && !memcmp(hist + j, tail, (size_t)len * sizeof *hist)) return j;
    return -1;
}

int ox_lookup_draft(ox_lookup *L, const int32_t *hist, int n, int32_t *out, int cap) {
    if (L->pause > 0) {
        L->pause--;
        return 0;
    }
    int k = L->k < cap ? L->k : cap;
    for (int len = L->max_n; len >= L->min_n && k > 0; len--) {
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
    /* a draft that broke after `accepted` tokens says the match holds about that far: the next
     * one is a token longer (each rejected token of a verify costs a token of prefill) */
    if (accepted == drafted) L->k = 2 * L->k < L->k_max ? 2 * L->k : L->k_max;
    else L->k = accepted + 1 > L->k_min ? (accepted + 1 < L->k_max ? accepted + 1 : L->k_max) : L->k_min;
    if (accepted > 0) {
        L->misses = 0;
        return;
    }
    /* a rejected verify costs about a decode step: on text that does not repeat, consecutive
     * misses back off exponentially, so they number O(log n) in n tokens */
    L->pause = PAUSE_AFTER_MISS << (L->misses < PAUSE_MAX_SHIFT ? L->misses : PAUSE_MAX_SHIFT);
    L->misses++;
}
