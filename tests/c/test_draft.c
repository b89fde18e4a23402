/* test_draft.c — prompt-lookup drafting (decode/draft_lookup.h): the latest matching n-gram,
 * longest first; the draft length chosen by expected tokens per verify cost; the pause after a miss. */
#include "check.h"
#include "decode/draft_lookup.h"

static void test_match(void) {
    ox_lookup L;
    ox_lookup_init(&L, 8);
    L.k_max = 4, L.fixed = 1; /* (matching here, not adapting: a fixed draft length) */
    int32_t out[16];
    /* "1 2 3 4 5 9 | 1 2 3" -> the text after the earlier "1 2 3": 4 5 9 1 (k = 4) */
    int32_t h1[] = {1, 2, 3, 4, 5, 9, 1, 2, 3};
    int n = ox_lookup_draft(&L, h1, 9, out, 16);
    CHECK(n == 4 && out[0] == 4 && out[1] == 5 && out[2] == 9 && out[3] == 1);
    /* the latest occurrence wins, and a longer n-gram beats a later shorter one */
    int32_t h2[] = {7, 8, 1, 7, 8, 2, 5, 7, 8, 3, 9, 5, 7, 8};
    n = ox_lookup_draft(&L, h2, 14, out, 16); /* "5 7 8" matched at 6 -> 3 9 5 7 */
    CHECK(n == 4 && out[0] == 3 && out[1] == 9);
    /* no repeated n-gram of 2+ tokens: no draft */
    int32_t h3[] = {1, 2, 3, 4, 5, 6, 7, 1};
    CHECK(ox_lookup_draft(&L, h3, 8, out, 16) == 0);
    /* a continuation that reaches the end of the text goes on as the text repeats; cap holds */
    int32_t h4[] = {4, 5, 6, 4, 5};
    n = ox_lookup_draft(&L, h4, 5, out, 16);
    CHECK(n == 4 && out[0] == 6 && out[1] == 4 && out[2] == 5 && out[3] == 6);
    CHECK(ox_lookup_draft(&L, h1, 9, out, 2) == 2);
    /* a run of one token: k of it (the latest match is one token back) */
    int32_t h5[] = {3, 9, 9, 9};
    n = ox_lookup_draft(&L, h5, 4, out, 16);
    CHECK(n == 4 && out[0] == 9 && out[1] == 9 && out[2] == 9 && out[3] == 9);
}

/* p as the drafter estimates it: n drafted tokens kept of n + cuts, decayed counts set */
static void set_p(ox_lookup *L, float kept, float broken) { L->kept = kept, L->broken = broken; }

static void test_adapt(void) {
    ox_lookup L;
    ox_lookup_init(&L, 8);
    /* the cost model: passes of 4 tokens, a 5th starts a second pass */
    CHECK(ox_lookup_cost(1) == 1.0f);
    CHECK(ox_lookup_cost(4) > 1.5f && ox_lookup_cost(4) < 2.0f);
    CHECK(ox_lookup_cost(5) > ox_lookup_cost(4) + 0.9f && ox_lookup_cost(8) < 2 * ox_lookup_cost(4) + 0.01f);
    CHECK(ox_lookup_length(&L, 8) == 1); /* the prior (p = 1/2): a short first draft */
    set_p(&L, 1000, 0);
    CHECK(ox_lookup_length(&L, 8) == 3); /* p ~ 1: one full pass, never a second */
    CHECK(ox_lookup_length(&L, 2) == 2); /* cap holds */
    set_p(&L, 1, 6);
    CHECK(ox_lookup_length(&L, 8) == 0); /* p = 2/9: not even one draft pays */
    L.fixed = 1;
    CHECK(ox_lookup_length(&L, 16) == 8 && ox_lookup_length(&L, 5) == 5); /* fixed: k_max, cap holds */
    /* full drafts raise the length, cut ones lower it */
    ox_lookup_init(&L, 8);
    for (int i = 0; i < 6; i++) ox_lookup_update(&L, ox_lookup_length(&L, 8), ox_lookup_length(&L, 8));
    CHECK(ox_lookup_length(&L, 8) == 3);
    for (int i = 0; i < 6; i++) ox_lookup_update(&L, 3, 1);
    CHECK_MSG(ox_lookup_length(&L, 8) == 2, "after 6 cut drafts: k %d", ox_lookup_length(&L, 8));
    for (int i = 0; i < 24; i++) ox_lookup_update(&L, 2, 0 + (i % 3 != 0));
    CHECK_MSG(ox_lookup_length(&L, 8) == 1, "after 30: k %d", ox_lookup_length(&L, 8));
    /* where no length pays the drafter waits, and the estimate drifts back until it tries */
    ox_lookup_init(&L, 8);
    set_p(&L, 1, 8);
    int32_t h[] = {1, 2, 3, 1, 2};
    int32_t out[8];
    int waited = 0;
    while (waited < 100 && ox_lookup_draft(&L, h, 5, out, 8) == 0) waited++;
    CHECK_MSG(waited >= 2 && waited < 100, "waited %d steps", waited);
    /* totals */
    ox_lookup_init(&L, 6);
    ox_lookup_update(&L, 3, 3);
    ox_lookup_update(&L, 2, 1);
    CHECK(L.drafted == 5 && L.accepted == 4 && L.pause == 0);
    /* misses in a row: the pause doubles (4, 8, 16, 32, 64, 64), an accepted token resets it */
    ox_lookup_init(&L, 6);
    static const int want[] = {4, 8, 16, 32, 64, 64};
    for (int i = 0; i < 6; i++) {
        ox_lookup_update(&L, 1, 0);
        CHECK_MSG(L.pause == want[i], "miss %d: pause %d, want %d", i + 1, L.pause, want[i]);
    }
    int paused = 0;
    while (L.pause > 0) paused += ox_lookup_draft(&L, h, 5, out, 8) == 0;
    CHECK(paused == 64);
    ox_lookup_update(&L, 2, 1);
    ox_lookup_update(&L, 1, 0);
    CHECK(L.pause == 4);
    /* with a grace of one (the MTP drafter's): the first miss in a row costs no rest */
    ox_lookup_init(&L, 6);
    L.grace = 1;
    static const int want_grace[] = {0, 4, 8, 16, 32, 64, 64};
    for (int i = 0; i < 7; i++) {
        ox_lookup_miss(&L);
        CHECK_MSG(L.pause == want_grace[i], "grace, miss %d: pause %d, want %d", i + 1, L.pause, want_grace[i]);
    }
    int rested = 0;
    while (ox_lookup_resting(&L)) rested++;
    CHECK(rested == 64 && !ox_lookup_resting(&L));
}

int main(void) {
    RUN(test_match);
    RUN(test_adapt);
    return check_summary("test_draft");
}
