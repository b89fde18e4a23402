/* draft_lookup.h — prompt-lookup drafting: guess the next tokens by finding the text's
 * latest n-gram earlier in the text (prompt and generated tokens alike) and proposing what
 * followed it there (continued periodically where that reaches the present). No model: it
 * wins where the answer copies from its context (rewrite, quote, edit, code), and proposes
 * nothing where the text does not repeat itself.
 *
 * The draft length is the one with the most tokens per unit of verify cost. Each drafted
 * token is taken as kept with probability p (estimated from the recent drafts, decayed), so
 * a draft of k yields (1 - p^(k+1)) / (1 - p) tokens for one forward of k + 1 (the pending
 * token and the drafts), whose cost ox_lookup_cost models in decode steps. Where no length
 * pays (p below the cost of one more token), it does not draft, and the estimate decays back
 * towards its prior so it tries again later. After a draft with nothing accepted it pauses
 * for a few steps (4, doubled for each further miss in a row up to 64, reset by an accepted
 * token), so a text that does not repeat costs almost nothing. The same pacing
 * (ox_lookup_resting, ox_lookup_miss) rests the MTP drafter, whose every run costs a few
 * percent of a decode step even when it proposes nothing. */
#ifndef OX_DRAFT_LOOKUP_H
#define OX_DRAFT_LOOKUP_H

#include <stdint.h>

typedef struct ox_lookup {
    int min_n, max_n;           /* n-gram lengths tried, longest first (defaults 2 and 4) */
    int k_max;                  /* the longest draft (default 8) */
    int fixed;                  /* 1: every draft k_max long (cap permitting): measuring, not choosing */
    float kept, broken;         /* decayed counts: drafted tokens kept, drafts cut short */
    int pause;                  /* steps left without drafting */
    int misses;                 /* drafts in a row with nothing accepted (or, MTP, nothing proposed) */
    int grace;                  /* misses in a row before the first pause (0; the MTP drafter 1) */
    uint64_t drafted, accepted; /* totals, for stats */
} ox_lookup;

/* Defaults: n-grams of 4 down to 2 tokens, k from 1 to max_k (<= 0: 8), not fixed. */
void ox_lookup_init(ox_lookup *L, int max_k);

/* The cost of one forward of n tokens in decode steps, as `npm run bench:decoding` measures
 * it on memory-bound models: the matmul tiles take up to 4 tokens per pass over the weights,
 * each further token of a pass costs about a quarter of a step, and a 5th token starts a
 * second pass. */
float ox_lookup_cost(int n);

/* The draft length the estimate favours now (1..k_max, at most cap), 0 where none pays;
 * k_max (at most cap) when fixed. */
int ox_lookup_length(const ox_lookup *L, int cap);

/* Up to ox_lookup_length tokens to follow hist[0..n), into out; returns how many (0: no
 * draft this step). */
int ox_lookup_draft(ox_lookup *L, const int32_t *hist, int n, int32_t *out, int cap);

/* Tell the drafter how a draft of `drafted` tokens fared (`accepted` of them kept). */
void ox_lookup_update(ox_lookup *L, int drafted, int accepted);

/* 1 if drafting rests this step (and counts the rest down), else 0. */
int ox_lookup_resting(ox_lookup *L);
/* A step that drafted in vain: nothing accepted, or (MTP) nothing proposed. Past `grace`
 * misses in a row, rest 4 steps, doubled per further miss up to 64. */
void ox_lookup_miss(ox_lookup *L);

#endif
