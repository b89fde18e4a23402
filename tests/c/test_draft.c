/* test_draft.c — prompt-lookup drafting (model/draft_lookup.h): the latest matching n-gram,
 * longest first; the draft length adapting to acceptance; the pause after a miss. */
#include "check.h"
#include "model/draft_lookup.h"

static void test_match(void) {
    ox_lookup L;
    ox_lookup_init(&L, 8);
    L.k = 4; /* (matching here, not adapting: a fixed draft length) */
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

static void test_adapt(void) {
    ox_lookup L;
    ox_lookup_init(&L, 6);
    CHECK(L.k == 2);
    ox_lookup_update(&L, 2, 2);
    CHECK(L.k == 4); /* doubles */
    ox_lookup_update(&L, 4, 4);
    ox_lookup_update(&L, 6, 6);
    CHECK(L.k == 6); /* up to k_max, and stays */
    ox_lookup_update(&L, 6, 3);
    CHECK(L.k == 4); /* one more than kept */
    ox_lookup_update(&L, 4, 4);
    ox_lookup_update(&L, 6, 5);
    CHECK(L.k == 6);
    ox_lookup_update(&L, 6, 0);
    CHECK(L.k == 1 && L.pause > 0);
    int32_t h[] = {1, 2, 3, 1, 2};
    int32_t out[8];
    int paused = 0;
    while (L.pause > 0) paused += ox_lookup_draft(&L, h, 5, out, 8) == 0;
    CHECK(paused >= 1);
    CHECK(ox_lookup_draft(&L, h, 5, out, 8) > 0); /* drafting again after the pause */
    CHECK(L.drafted == 34 && L.accepted == 24);
    /* misses in a row: the pause doubles (4, 8, 16, 32, 64, 64), an accepted token resets it */
    ox_lookup_init(&L, 6);
    static const int want[] = {4, 8, 16, 32, 64, 64};
    for (int i = 0; i < 6; i++) {
        ox_lookup_update(&L, 1, 0);
        CHECK_MSG(L.pause == want[i], "miss %d: pause %d, want %d", i + 1, L.pause, want[i]);
    }
    ox_lookup_update(&L, 2, 1);
    ox_lookup_update(&L, 1, 0);
    CHECK(L.pause == 4);
}

int main(void) {
    RUN(test_match);
    RUN(test_adapt);
    return check_summary("test_draft");
}
