/* draft_lookup.h — prompt-lookup drafting: guess the next tokens by finding the text's
 * latest n-gram earlier in the text (prompt and generated tokens alike) and proposing what
 * followed it there (continued periodically where that reaches the present). No model: it wins where the answer copies from its context (rewrite,
 * quote, edit, code), and proposes nothing where the text does not repeat itself.
 *
 * The draft length adapts to how many drafted tokens the verifier accepted lately: it starts
 * at 2 (a verify costs about what prefill of its tokens does, so a first draft that fails
 * should be short), doubles after a fully accepted draft and after a partly rejected one is
 * one more than the tokens kept, between k_min and k_max; after a draft with nothing accepted, the drafter pauses for a few steps (4, doubled
 * for each further miss in a row up to 64, reset by an accepted token), so a text that does
 * not repeat costs almost nothing. */
#ifndef OX_DRAFT_LOOKUP_H
#define OX_DRAFT_LOOKUP_H

#include <stdint.h>

typedef struct ox_lookup {
    int min_n, max_n;  /* n-gram lengths tried, longest first (defaults 2 and 4) */
    int k, k_min, k_max; /* the current draft length and its bounds (defaults 2, 1, 8) */
    int pause;         /* steps left without drafting */
    int misses;        /* drafts in a row with nothing accepted */
    uint64_t drafted, accepted; /* totals, for stats */
} ox_lookup;

/* Defaults: n-grams of 4 down to 2 tokens, k from 2 between 1 and max_k (<= 0: 8). */
void ox_lookup_init(ox_lookup *L, int max_k);

/* Up to L->k (and at most cap) tokens to follow hist[0..n), into out; returns how many (0: no
 * draft this step). */
int ox_lookup_draft(ox_lookup *L, const int32_t *hist, int n, int32_t *out, int cap);

/* Tell the drafter how a draft of `drafted` tokens fared (`accepted` of them kept). */
void ox_lookup_update(ox_lookup *L, int drafted, int accepted);

#endif
