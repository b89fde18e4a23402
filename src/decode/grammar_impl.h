/* grammar_impl.h — the compiled form of a GBNF grammar, shared by the parser
 * (grammar_parse.c) and the matcher (grammar.c). Not a public header.
 *
 * All rules live in one element array. A rule is its alternatives one after another, each a
 * sequence of elements, separated by ALT and closed by END. A parse stack is a list of element
 * indices, each the next element to match in an enclosing alternative; the top is the last.
 * Repetition and groups are compiled into helper rules, so the matcher only sees rule
 * references, character classes and control tokens. */
#ifndef OX_GRAMMAR_IMPL_H
#define OX_GRAMMAR_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"

enum { GE_END = 0, GE_ALT, GE_RULE, GE_CHARS, GE_TOKEN };

typedef struct ox_gelem {
    uint8_t type;
    uint8_t neg; /* GE_CHARS: the class is negated */
    uint32_t a;  /* GE_RULE: rule index; GE_CHARS: first range; GE_TOKEN: token id */
    uint32_t n;  /* GE_CHARS: number of ranges */
} ox_gelem;

typedef struct ox_grules {
    ox_gelem *el;
    uint32_t n_el;
    uint32_t *ranges; /* [lo, hi] code point pairs of the classes */
    uint32_t n_ranges;
    uint32_t *rule_start; /* element index of each rule's first alternative */
    uint32_t n_rules;
    uint32_t root;
    uint64_t work; /* operations the parse and its checks took (tests bound the growth) */
} ox_grules;

/* A control token's text starting at text[0..len): its id and *matched length, or -1. */
typedef int (*ox_gcontrol_fn)(const void *ud, const char *text, size_t len, size_t *matched);

/* Polled every OX_GRAMMAR_POLL operations: nonzero stops the work with OX_E_ABORTED. */
typedef int (*ox_gabort_fn)(void *ud);
#define OX_GRAMMAR_POLL 4096

/* n more operations on *work; abort is polled each time the count passes a multiple of
 * OX_GRAMMAR_POLL. 0, or OX_E_ABORTED. */
static inline int ox_gtick(uint64_t *work, uint64_t n, ox_gabort_fn abort, void *ud, ox_err *err) {
    uint64_t before = *work;
    *work += n;
    if (abort && before / OX_GRAMMAR_POLL != *work / OX_GRAMMAR_POLL && abort(ud))
        return ox_errf(err, OX_E_ABORTED, "grammar: aborted by the caller");
    return 0;
}

/* Parse GBNF into r (freed with ox_grules_free, also after a failure). The work is linear in
 * the size of the compiled rules; abort (may be NULL) is polled along the way. */
int ox_grules_parse(ox_grules *r, const char *src, size_t len, ox_gcontrol_fn control, const void *ud,
                    ox_gabort_fn abort, void *abort_ud, ox_err *err);
void ox_grules_free(ox_grules *r);

static inline int ox_gelem_ends(const ox_gelem *e) { return e->type == GE_END || e->type == GE_ALT; }

#endif
