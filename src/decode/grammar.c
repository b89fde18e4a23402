/* grammar.c — the grammar matcher: parse stacks, the vocabulary walk, the mask cache.
 * The contract is in grammar.h; the rule table in grammar_impl.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/grammar.h"
#include "decode/grammar_impl.h"

/* Open parses at once; an ambiguous grammar is refused past this. The sets are scanned
 * linearly, so a byte costs O(stacks^3) in the worst case: at 1024, `("ab"||"b"){406}` (812
 * open parses) took minutes per accept; at 256 the worst measured case is under 2 s. */
#define MAX_STACKS   256
#define MAX_DEPTH    4096 /* scratch for stacks being expanded */
#define MAX_EXPAND   512  /* rule references expanded without consuming a character */
/* Stacks with a rule on top expanded in one step. Each is expanded once per step: rules that
 * reach one another along several paths (`a ::= b | b`, `b ::= c | c`, ...) would otherwise
 * be walked once per path, 2^depth times. */
#define MAX_EXPANDED 1024
#define CACHE_SLOTS  16
/* Tokens a mask looks past an allowed token for a way on (see state_live); beyond, a state
 * is taken to be live. */
#define LOOKAHEAD    3
/* Tokens the look-ahead may visit per mask, in walks of the whole vocabulary: past it a state
 * counts as live, so a grammar full of dead ends costs a bounded number of walks. */
#define LIVE_WALKS   8

struct ox_grammar_vocab {
    int n_vocab;
    uint32_t n; /* character tokens, sorted by bytes */
    int32_t *id;
    uint32_t *off; /* n + 1 offsets into bytes */
    char *bytes;
    uint16_t *lcp; /* bytes in common with the previous entry */
    uint32_t max_len;
    uint32_t n_ctl; /* control tokens: matched only by literals equal to their text */
    int32_t *ctl_id;
    uint32_t *ctl_off;
    char *ctl_bytes;
    uint8_t ctl_first[256]; /* some control text starts with this byte */
    int32_t *where;         /* per id: sorted index, -1 - control index, or INT32_MIN (no text) */
    ox_gabort_fn abort;     /* the grammars' abort hook, or NULL */
    void *abort_ud;
};

/* A set of stacks: records [len, e_0 .. e_len-1], top last. */
typedef struct gset {
    uint32_t *d;
    uint32_t n, cap, count;
} gset;

/* Where the text is: the open stacks and a code point a token ended inside of. */
typedef struct gstate {
    gset set;
    uint32_t part; /* bits of the unfinished code point */
    uint8_t need;  /* continuation bytes it still needs */
} gstate;

/* The walk's states, interned: a set of stacks with its unfinished code point gets an id,
 * and its transitions by byte are remembered, so the walk over ~250k tokens mostly looks up
 * transitions instead of advancing stacks (the DFA of the part of the grammar it visits). */
typedef struct istate {
    uint32_t off, n, count; /* its records in the intern arena */
    uint32_t part;
    uint8_t need;
    int8_t end;  /* can the text end here: -1 not known yet, 0, 1 */
    int8_t live; /* can the text go on (state_live): -1 not known, 0, 1, 2 being checked */
    uint32_t hash;
    int32_t *next; /* 256 transitions: an id, DEAD, or UNKNOWN; NULL until needed */
} istate;

enum { DEAD = -1, UNKNOWN = -2 };
#define INTERN_MAX   8192 /* states kept before the table starts over (at a mask's start) */
/* States one mask may reach: each holds a 1 KiB transition table, and a grammar that tells
 * every prefix of the vocabulary apart would otherwise make a table per trie node. */
#define INTERN_LIMIT 65536

typedef struct intern {
    istate *s;
    uint32_t n, cap;
    uint32_t *data; /* the records of every state */
    uint32_t n_data, cap_data;
    int32_t *slot; /* open addressing: state id + 1, 0 empty */
    uint32_t n_slot;
} intern;

typedef struct cache_slot {
    uint32_t *key; /* the state: part, need, then the set's records */
    uint32_t key_n, key_cap;
    uint32_t *bits;
    uint64_t used;
} cache_slot;

struct ox_grammar {
    const ox_grammar_vocab *v;
    ox_grules r;
    int32_t *stops;
    int n_stops;
    gstate st;
    gset tmp[2];
    gset expanded; /* the step's stacks already expanded (see MAX_EXPANDED) */
    uint32_t *scratch;
    uint32_t sp;
    int32_t *lv;        /* per walk depth (LOOKAHEAD + 1): the state id after each byte of the current token */
    uint32_t n_lv;      /* ids per depth */
    int can_stop;       /* some stop token is in the vocabulary */
    uint64_t live_left; /* tokens the current mask's look-ahead may still visit (LIVE_WALKS) */
    uint64_t work;      /* ox_grammar_work */
    intern in;
    cache_slot cache[CACHE_SLOTS];
    uint64_t clock;
    ox_err *err; /* the current call's, for errors deep in the walk */
};

/* ---- vocabulary ---- */

static const ox_grammar_vocab *sort_vocab; /* qsort has no context argument in C11 */
static int by_bytes(const void *a, const void *b) {
    const ox_grammar_vocab *v = sort_vocab;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t li = v->off[i + 1] - v->off[i], lj = v->off[j + 1] - v->off[j];
    int c = memcmp(v->bytes + v->off[i], v->bytes + v->off[j], li < lj ? li : lj);
    return c ? c : li < lj ? -1 : li > lj;
}

void ox_grammar_vocab_set_abort(ox_grammar_vocab *v, int (*poll)(void *ud), void *ud) {
    v->abort = poll;
    v->abort_ud = ud;
}

static int tick(ox_grammar *g, uint64_t n) { return ox_gtick(&g->work, n, g->v->abort, g->v->abort_ud, g->err); }

void ox_grammar_vocab_free(ox_grammar_vocab *v) {
    if (!v) return;
    free(v->id);
    free(v->off);
    free(v->bytes);
    free(v->lcp);
    free(v->ctl_id);
    free(v->ctl_off);
    free(v->ctl_bytes);
    free(v->where);
    free(v);
}

ox_grammar_vocab *ox_grammar_vocab_new(const ox_tokenizer *t, ox_err *err) {
    int nv = ox_tokenizer_vocab(t);
    ox_grammar_vocab *v = calloc(1, sizeof *v);
    uint32_t *order = NULL, *off = NULL;
    int32_t *id = NULL;
    char *bytes = NULL;
    size_t n_bytes = 0, cap = 0;
    if (!v) goto nomem;
    v->n_vocab = nv;
    id = malloc((size_t)(nv ? nv : 1) * sizeof *id);
    off = malloc((size_t)(nv + 1) * sizeof *off);
    v->ctl_id = malloc((size_t)(nv ? nv : 1) * sizeof *v->ctl_id);
    v->ctl_off = malloc((size_t)(nv + 1) * sizeof *v->ctl_off);
    if (!id || !off || !v->ctl_id || !v->ctl_off) goto nomem;
    /* pass 1: every token's bytes into one buffer, character tokens and control tokens apart */
    size_t ctl_n = 0, ctl_cap = 0;
    uint32_t n = 0;
    for (int i = 0; i < nv; i++) {
        int type = ox_token_type(t, i);
        if (type == OX_TOKEN_UNUSED || type == OX_TOKEN_UNKNOWN) continue;
        int control = type == OX_TOKEN_CONTROL;
        int len = ox_token_bytes(t, i, control ? OX_TOK_SHOW_SPECIAL : 0, NULL, 0, err);
        if (len < 0) goto fail;
        if (len == 0) continue;
        char **buf = control ? &v->ctl_bytes : &bytes;
        size_t *used = control ? &ctl_n : &n_bytes, *bcap = control ? &ctl_cap : &cap;
        if (*used + (size_t)len > *bcap) {
            size_t c = *bcap ? *bcap * 2 : 1 << 16;
            while (c < *used + (size_t)len) c *= 2;
            char *q = realloc(*buf, c);
            if (!q) goto nomem;
            *buf = q;
            *bcap = c;
        }
        ox_token_bytes(t, i, control ? OX_TOK_SHOW_SPECIAL : 0, *buf + *used, len, err);
        if (control) {
            v->ctl_off[v->n_ctl] = (uint32_t)ctl_n;
            v->ctl_id[v->n_ctl++] = i;
            v->ctl_first[(unsigned char)v->ctl_bytes[ctl_n]] = 1;
        } else {
            off[n] = (uint32_t)n_bytes;
            id[n++] = i;
        }
        *used += (size_t)len;
    }
    off[n] = (uint32_t)n_bytes;
    v->ctl_off[v->n_ctl] = (uint32_t)ctl_n;
    /* pass 2: sort the character tokens by bytes and store them in that order */
    v->n = n;
    v->off = off;
    v->bytes = bytes;
    order = malloc((size_t)(n ? n : 1) * sizeof *order);
    v->id = malloc((size_t)(n ? n : 1) * sizeof *v->id);
    uint32_t *soff = malloc((size_t)(n + 1) * sizeof *soff);
    char *sbytes = malloc(n_bytes ? n_bytes : 1);
    v->lcp = malloc((size_t)(n ? n : 1) * sizeof *v->lcp);
    if (!order || !v->id || !soff || !sbytes || !v->lcp) {
        free(soff);
        free(sbytes);
        off = NULL, bytes = NULL;
        goto nomem;
    }
    for (uint32_t k = 0; k < n; k++) order[k] = k;
    sort_vocab = v;
    qsort(order, n, sizeof *order, by_bytes);
    uint32_t at = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t o = order[k], len = off[o + 1] - off[o];
        memcpy(sbytes + at, bytes + off[o], len);
        soff[k] = at;
        v->id[k] = id[o];
        at += len;
        if (len > v->max_len) v->max_len = len;
    }
    soff[n] = at;
    if (!(v->where = malloc((size_t)(nv ? nv : 1) * sizeof *v->where))) {
        free(soff);
        free(sbytes);
        off = NULL, bytes = NULL;
        goto nomem;
    }
    for (int i = 0; i < nv; i++) v->where[i] = INT32_MIN;
    for (uint32_t k = 0; k < n; k++) v->where[v->id[k]] = (int32_t)k;
    for (uint32_t k = 0; k < v->n_ctl; k++) v->where[v->ctl_id[k]] = -1 - (int32_t)k;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t l = 0;
        if (k) {
            uint32_t a = soff[k] - soff[k - 1], b = soff[k + 1] - soff[k], m = a < b ? a : b;
            while (l < m && sbytes[soff[k - 1] + l] == sbytes[soff[k] + l]) l++;
        }
        v->lcp[k] = (uint16_t)(l > 65535 ? 65535 : l);
    }
    free(off);
    free(bytes);
    free(order);
    free(id);
    v->off = soff;
    v->bytes = sbytes;
    return v;
nomem:
    ox_errf(err, OX_E_NOMEM, "grammar: out of memory for the vocabulary index");
fail:
    if (v && v->off != off) free(off);
    if (v && v->bytes != bytes) free(bytes);
    free(order);
    free(id);
    ox_grammar_vocab_free(v);
    return NULL;
}

/* the longest control token whose text starts text[0..len) */
static int control_at(const void *ud, const char *text, size_t len, size_t *matched) {
    const ox_grammar_vocab *v = ud;
    if (!len || !v->ctl_first[(unsigned char)text[0]]) return -1;
    int best = -1;
    size_t best_len = 0;
    for (uint32_t k = 0; k < v->n_ctl; k++) {
        size_t l = v->ctl_off[k + 1] - v->ctl_off[k];
        if (l > best_len && l <= len && !memcmp(v->ctl_bytes + v->ctl_off[k], text, l))
            best = v->ctl_id[k], best_len = l;
    }
    *matched = best_len;
    return best;
}

/* ---- stacks ---- */

#define RECORDS(s, k, len, rec)                                                                                        \
    for (uint32_t k = 0, len, *rec; k < (s)->n && (len = (s)->d[k], rec = (s)->d + k + 1, 1); k += 1 + len)

static int set_reserve(ox_grammar *g, gset *s, uint32_t extra) {
    if (s->n + extra <= s->cap) return 0;
    uint32_t c = s->cap ? s->cap : 64;
    while (c < s->n + extra) c *= 2;
    uint32_t *q = realloc(s->d, (size_t)c * sizeof *q);
    if (!q) return ox_errf(g->err, OX_E_NOMEM, "grammar: out of memory");
    s->d = q;
    s->cap = c;
    return 0;
}

static int set_copy(ox_grammar *g, gset *dst, const gset *src) {
    dst->n = dst->count = 0;
    int rc = set_reserve(g, dst, src->n);
    if (rc) return rc;
    if (src->n) memcpy(dst->d, src->d, (size_t)src->n * sizeof *src->d);
    dst->n = src->n;
    dst->count = src->count;
    return 0;
}

/* Adds st to s unless it is there already: 1 if added, 0 if there, <0 past max. */
static int set_insert(ox_grammar *g, gset *s, const uint32_t *st, uint32_t len, uint32_t max, const char *what) {
    RECORDS(s, k, l, rec) if (l == len && !memcmp(rec, st, (size_t)len * sizeof *st)) return 0;
    if (s->count >= max)
        return ox_errf(g->err, OX_E_RANGE, "grammar: more than %u %s at once (the grammar is too ambiguous)", max, what);
    int rc = set_reserve(g, s, len + 1);
    if (rc) return rc;
    s->d[s->n++] = len;
    memcpy(s->d + s->n, st, (size_t)len * sizeof *st);
    s->n += len;
    s->count++;
    return 1;
}

static int set_add(ox_grammar *g, gset *s, const uint32_t *st, uint32_t len) {
    int rc = set_insert(g, s, st, len, MAX_STACKS, "open parses");
    return rc < 0 ? rc : 0;
}

/* Add the stacks that st reaches without consuming input: a rule reference at the top is
 * replaced by each of its alternatives (behind the reference's continuation). */
static int expand(ox_grammar *g, gset *out, const uint32_t *st, uint32_t n, int depth) {
    if (!n) return set_add(g, out, st, 0);
    uint32_t pos = st[n - 1];
    const ox_gelem *e = &g->r.el[pos];
    if (e->type != GE_RULE) return set_add(g, out, st, n);
    if (depth > MAX_EXPAND) return ox_errf(g->err, OX_E_RANGE, "grammar: rules nested deeper than %d", MAX_EXPAND);
    int fresh = set_insert(g, &g->expanded, st, n, MAX_EXPANDED, "rule expansions in one step");
    if (fresh <= 0) return fresh; /* its stacks are in out already, or a limit */
    int has_next = !ox_gelem_ends(e + 1);
    uint32_t base = n - 1 + (uint32_t)has_next;
    if (g->sp + base + 1 > MAX_DEPTH)
        return ox_errf(g->err, OX_E_RANGE, "grammar: parse stacks deeper than %d", MAX_DEPTH);
    uint32_t *child = g->scratch + g->sp;
    g->sp += base + 1;
    memcpy(child, st, (size_t)(n - 1) * sizeof *st);
    if (has_next) child[n - 1] = pos + 1;
    int rc = 0;
    for (uint32_t a = g->r.rule_start[e->a]; !rc;) {
        if (ox_gelem_ends(&g->r.el[a])) rc = expand(g, out, child, base, depth + 1); /* an empty alternative */
        else {
            child[base] = a;
            rc = expand(g, out, child, base + 1, depth + 1);
        }
        while (!ox_gelem_ends(&g->r.el[a])) a++;
        if (g->r.el[a].type == GE_END) break;
        a++;
    }
    g->sp -= base + 1;
    return rc;
}

static int chars_match(const ox_grammar *g, const ox_gelem *e, uint32_t cp) {
    if (!e->n) return e->neg; /* '.' (and no ranges at all: no table to point into) */
    const uint32_t *r = g->r.ranges + 2 * (size_t)e->a;
    int in = 0;
    for (uint32_t k = 0; k < e->n && !in; k++) in = cp >= r[2 * k] && cp <= r[2 * k + 1];
    return in != e->neg;
}

/* can the class match some code point in [lo, hi]? */
static int chars_meet(const ox_grammar *g, const ox_gelem *e, uint32_t lo, uint32_t hi) {
    if (!e->n) return e->neg;
    const uint32_t *r = g->r.ranges + 2 * (size_t)e->a;
    if (!e->neg) {
        for (uint32_t k = 0; k < e->n; k++)
            if (r[2 * k] <= hi && r[2 * k + 1] >= lo) return 1;
        return 0;
    }
    /* negated: unless its ranges cover all of [lo, hi] (checked for a single covering range) */
    for (uint32_t k = 0; k < e->n; k++)
        if (r[2 * k] <= lo && r[2 * k + 1] >= hi) return 0;
    return 1;
}

/* the stacks of in whose top matches (a code point, or a control token), moved past it */
static int advance(ox_grammar *g, const gset *in, int is_token, uint32_t what, gset *out) {
    out->n = out->count = 0;
    g->expanded.n = g->expanded.count = 0;
    RECORDS(in, k, len, rec) {
        if (!len) continue;
        uint32_t top = rec[len - 1];
        const ox_gelem *e = &g->r.el[top];
        if (is_token ? e->type != GE_TOKEN || e->a != what : e->type != GE_CHARS || !chars_match(g, e, what)) continue;
        if (g->sp + len > MAX_DEPTH)
            return ox_errf(g->err, OX_E_RANGE, "grammar: parse stacks deeper than %d", MAX_DEPTH);
        uint32_t *child = g->scratch + g->sp;
        g->sp += len;
        memcpy(child, rec, (size_t)len * sizeof *rec);
        uint32_t m = len - 1;
        if (!ox_gelem_ends(e + 1)) child[m++] = top + 1;
        int rc = expand(g, out, child, m, 0);
        g->sp -= len;
        if (rc) return rc;
    }
    return 0;
}

static int has_empty(const gset *s) {
    for (uint32_t k = 0; k < s->n; k += 1 + s->d[k])
        if (!s->d[k]) return 1;
    return 0;
}

/* One byte of text from (set, part, need) into out; *res is the set after it (out, or set
 * itself while a code point is unfinished). Returns 1 if the text can go on, 0 if not, <0. */
/* An unfinished code point: `part` holds its length in bytes (bits 24..26) and the bits read
 * so far (0..20). The smallest code point of each length (shorter forms are invalid UTF-8): */
static const uint32_t CP_MIN[5] = {0, 0, 0x80, 0x800, 0x10000};
#define PART_BITS(p) ((p)&0xffffffu)
#define PART_LEN(p)  ((p) >> 24)

static int step_byte(ox_grammar *g, const gset *set, uint32_t *part, uint8_t *need, unsigned char b, gset *out,
                     const gset **res) {
    uint32_t cp;
    if (*need) {
        if ((b & 0xc0) != 0x80) return 0;
        uint32_t bits = PART_BITS(*part) << 6 | (b & 0x3f);
        if (--*need) {
            *part = (*part & 0xff000000u) | bits;
            return *res = set, 1;
        }
        cp = bits;
        if (cp < CP_MIN[PART_LEN(*part)] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        *part = 0;
    } else if (b < 0x80) cp = b;
    else {
        *need = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
        if (!*need) return 0;
        *part = (uint32_t)(*need + 1) << 24 | (b & (0x3f >> *need));
        return *res = set, 1;
    }
    int rc = advance(g, set, 0, cp, out);
    if (rc) return rc;
    *res = out;
    return out->count > 0;
}

/* the text may end here: a whole code point, or the start of one the stacks can take */
static int can_end(const ox_grammar *g, const gset *set, uint32_t part, uint8_t need) {
    if (!set->count) return 0;
    if (!need) return 1;
    uint32_t lo = PART_BITS(part) << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
    if (lo < CP_MIN[PART_LEN(part)]) lo = CP_MIN[PART_LEN(part)];
    if (hi > 0x10ffff) hi = 0x10ffff;
    /* surrogates are no code points: ED A0..BF starts none (the only way on would be one) */
    if (lo >= 0xd800 && hi <= 0xdfff) return 0;
    if (lo < 0xd800 && hi >= 0xd800 && hi <= 0xdfff) hi = 0xd7ff;
    if (lo >= 0xd800 && lo <= 0xdfff && hi > 0xdfff) lo = 0xe000;
    if (lo > hi) return 0;
    RECORDS(set, k, len, rec)
    if (len && g->r.el[rec[len - 1]].type == GE_CHARS && chars_meet(g, &g->r.el[rec[len - 1]], lo, hi)) return 1;
    return 0;
}

static int grow_u32(uint32_t **buf, uint32_t *cap, uint32_t need) {
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    uint32_t *q = realloc(*buf, (size_t)c * sizeof *q);
    if (!q) return -1;
    *buf = q;
    *cap = c;
    return 0;
}

/* ---- interned states ---- */

static void intern_clear(intern *in) {
    for (uint32_t k = 0; k < in->n; k++) free(in->s[k].next);
    in->n = in->n_data = 0;
    if (in->slot) memset(in->slot, 0, in->n_slot * sizeof *in->slot);
}

static uint32_t state_hash(const uint32_t *d, uint32_t n, uint32_t part, uint8_t need) {
    uint32_t h = 2166136261u ^ part ^ ((uint32_t)need << 24);
    for (uint32_t k = 0; k < n; k++) h = (h ^ d[k]) * 16777619u;
    return h ? h : 1;
}

/* the id of (set, part, need), added if new; <0 on allocation failure */
static int32_t intern_get(ox_grammar *g, const gset *set, uint32_t part, uint8_t need) {
    intern *in = &g->in;
    uint32_t h = state_hash(set->d, set->n, part, need);
    if (in->n * 2 >= in->n_slot) { /* grow and rehash */
        uint32_t ns = in->n_slot ? in->n_slot * 2 : 1024;
        int32_t *sl = calloc(ns, sizeof *sl);
        if (!sl) return ox_errf(g->err, OX_E_NOMEM, "grammar: out of memory");
        for (uint32_t k = 0; k < in->n; k++) {
            uint32_t j = in->s[k].hash & (ns - 1);
            while (sl[j]) j = (j + 1) & (ns - 1);
            sl[j] = (int32_t)k + 1;
        }
        free(in->slot);
        in->slot = sl;
        in->n_slot = ns;
    }
    uint32_t j = h & (in->n_slot - 1);
    for (; in->slot[j]; j = (j + 1) & (in->n_slot - 1)) {
        const istate *st = &in->s[in->slot[j] - 1];
        if (st->hash == h && st->n == set->n && st->part == part && st->need == need &&
            (!set->n || !memcmp(in->data + st->off, set->d, (size_t)set->n * sizeof *set->d)))
            return in->slot[j] - 1;
    }
    if (in->n >= INTERN_LIMIT)
        return ox_errf(g->err, OX_E_RANGE,
                       "grammar: more than %d states in one mask (the grammar tells too many texts apart)", INTERN_LIMIT);
    if (grow_u32(&in->data, &in->cap_data, in->n_data + set->n))
        return ox_errf(g->err, OX_E_NOMEM, "grammar: out of memory");
    if (in->n == in->cap) {
        uint32_t c = in->cap ? in->cap * 2 : 256;
        istate *q = realloc(in->s, (size_t)c * sizeof *q);
        if (!q) return ox_errf(g->err, OX_E_NOMEM, "grammar: out of memory");
        in->s = q;
        in->cap = c;
    }
    if (set->n) memcpy(in->data + in->n_data, set->d, (size_t)set->n * sizeof *set->d);
    in->s[in->n] = (istate){
        .off = in->n_data, .n = set->n, .count = set->count, .part = part, .need = need, .end = -1, .live = -1, .hash = h};
    in->n_data += set->n;
    in->slot[j] = (int32_t)in->n + 1;
    return (int32_t)in->n++;
}

/* a read-only view of an interned state's set (valid until the next intern_get) */
static gset state_set(const ox_grammar *g, int32_t id) {
    const istate *st = &g->in.s[id];
    return (gset){.d = st->n ? g->in.data + st->off : NULL, .n = st->n, .cap = st->n, .count = st->count};
}

/* the state after byte b; DEAD if no parse takes it; <OX_E... on errors */
static int32_t transition(ox_grammar *g, int32_t id, unsigned char b) {
    istate *st = &g->in.s[id];
    if (!st->next) {
        if (!(st->next = malloc(256 * sizeof *st->next))) return ox_errf(g->err, OX_E_NOMEM, "grammar: out of memory");
        for (int k = 0; k < 256; k++) st->next[k] = UNKNOWN;
    }
    if (st->next[b] != UNKNOWN) return st->next[b];
    gset set = state_set(g, id);
    int rc = tick(g, 1 + set.n);
    if (rc) return rc;
    uint32_t part = st->part;
    uint8_t need = st->need;
    const gset *res = NULL;
    rc = step_byte(g, &set, &part, &need, b, &g->tmp[0], &res);
    int32_t to = DEAD;
    if (rc < 0) return rc;
    if (rc) {
        /* copy the view first: interning may move the arena it points into */
        if (res == &set && (rc = set_copy(g, &g->tmp[1], &set))) return rc;
        to = intern_get(g, res == &set ? &g->tmp[1] : res, part, need);
        if (to < 0 && to != DEAD) return to;
    }
    g->in.s[id].next[b] = to;
    return to;
}

static int state_can_end(ox_grammar *g, int32_t id) {
    istate *st = &g->in.s[id];
    if (st->end < 0) {
        gset set = state_set(g, id);
        st->end = (int8_t)can_end(g, &set, st->part, st->need);
    }
    return st->end;
}

/* ---- the grammar ---- */

static int is_stop(const ox_grammar *g, int token) {
    for (int k = 0; k < g->n_stops; k++)
        if (g->stops[k] == token) return 1;
    return 0;
}

static int start(ox_grammar *g) {
    uint32_t root[1] = {0};
    gset *s = &g->st.set;
    s->n = s->count = 0;
    g->st.part = g->st.need = 0;
    /* root is entered as the reference the element array has for it: a one-element stack
     * whose top is a synthetic GE_RULE element at index n_el (see ox_grammar_new) */
    root[0] = g->r.n_el;
    g->expanded.n = g->expanded.count = 0;
    return expand(g, s, root, 1, 0);
}

void ox_grammar_free(ox_grammar *g) {
    if (!g) return;
    ox_grules_free(&g->r);
    free(g->stops);
    free(g->st.set.d);
    free(g->tmp[0].d);
    free(g->tmp[1].d);
    free(g->expanded.d);
    free(g->scratch);
    free(g->lv);
    intern_clear(&g->in);
    free(g->in.s);
    free(g->in.data);
    free(g->in.slot);
    for (int k = 0; k < CACHE_SLOTS; k++) free(g->cache[k].key), free(g->cache[k].bits);
    free(g);
}

ox_grammar *ox_grammar_new(const ox_grammar_vocab *v, const char *gbnf, size_t len, const int32_t *stops, int n_stops,
                           ox_err *err) {
    ox_grammar *g = calloc(1, sizeof *g);
    if (!g) {
        ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        return NULL;
    }
    g->v = v;
    g->err = err;
    if (ox_grules_parse(&g->r, gbnf, len, control_at, v, v->abort, v->abort_ud, err)) goto fail;
    g->work = g->r.work;
    /* two synthetic elements at the end: a reference to root, and the END behind it */
    ox_gelem *el = realloc(g->r.el, (size_t)(g->r.n_el + 2) * sizeof *el);
    g->stops = malloc((size_t)(n_stops > 0 ? n_stops : 1) * sizeof *g->stops);
    g->scratch = malloc(MAX_DEPTH * sizeof *g->scratch);
    g->n_lv = v->max_len + 1;
    g->lv = malloc((size_t)g->n_lv * (LOOKAHEAD + 1) * sizeof *g->lv);
    if (!el || !g->stops || !g->scratch || !g->lv) {
        if (el) g->r.el = el;
        ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        goto fail;
    }
    g->r.el = el;
    el[g->r.n_el] = (ox_gelem){.type = GE_RULE, .a = g->r.root};
    el[g->r.n_el + 1] = (ox_gelem){.type = GE_END};
    if (n_stops > 0) memcpy(g->stops, stops, (size_t)n_stops * sizeof *stops);
    g->n_stops = n_stops > 0 ? n_stops : 0;
    for (int k = 0; k < g->n_stops; k++) g->can_stop |= g->stops[k] >= 0 && g->stops[k] < v->n_vocab;
    if (start(g)) goto fail;
    return g;
fail:
    ox_grammar_free(g);
    return NULL;
}

int ox_grammar_reset(ox_grammar *g, ox_err *err) {
    g->err = err;
    return start(g);
}

static void *dup(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

ox_grammar *ox_grammar_clone(const ox_grammar *src, ox_err *err) {
    ox_grammar *g = calloc(1, sizeof *g);
    if (!g) {
        ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        return NULL;
    }
    const ox_grules *r = &src->r;
    g->v = src->v;
    g->err = err;
    g->r = (ox_grules){.n_el = r->n_el, .n_ranges = r->n_ranges, .n_rules = r->n_rules, .root = r->root};
    g->r.el = dup(r->el, (size_t)(r->n_el + 2) * sizeof *r->el);
    g->r.ranges = dup(r->ranges, (size_t)r->n_ranges * 2 * sizeof *r->ranges);
    g->r.rule_start = dup(r->rule_start, (size_t)r->n_rules * sizeof *r->rule_start);
    g->stops = dup(src->stops, (size_t)src->n_stops * sizeof *src->stops);
    g->n_stops = src->n_stops;
    g->can_stop = src->can_stop;
    g->scratch = malloc(MAX_DEPTH * sizeof *g->scratch);
    g->n_lv = src->n_lv;
    g->lv = malloc((size_t)g->n_lv * (LOOKAHEAD + 1) * sizeof *g->lv);
    if (!g->r.el || !g->r.ranges || !g->r.rule_start || !g->stops || !g->scratch || !g->lv ||
        set_copy(g, &g->st.set, &src->st.set)) {
        ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        ox_grammar_free(g);
        return NULL;
    }
    g->st.part = src->st.part;
    g->st.need = src->st.need;
    return g;
}

int ox_grammar_complete(const ox_grammar *g) { return !g->st.need && has_empty(&g->st.set); }

int ox_grammar_finished(const ox_grammar *g) { return ox_grammar_complete(g) && g->st.set.count == 1; }

uint64_t ox_grammar_work(const ox_grammar *g) { return g->work; }

/* ---- the mask ---- */

static cache_slot *cache_find(ox_grammar *g) {
    uint32_t n = 2 + g->st.set.n;
    for (int k = 0; k < CACHE_SLOTS; k++) {
        cache_slot *c = &g->cache[k];
        if (c->bits && c->key_n == n && c->key[0] == g->st.part && c->key[1] == g->st.need &&
            !memcmp(c->key + 2, g->st.set.d, (size_t)g->st.set.n * sizeof *c->key)) {
            c->used = ++g->clock;
            return c;
        }
    }
    return NULL;
}

/* the least recently used slot, holding this state's key (bits to be filled) */
static cache_slot *cache_take(ox_grammar *g) {
    cache_slot *c = &g->cache[0];
    for (int k = 1; k < CACHE_SLOTS; k++)
        if (g->cache[k].used < c->used) c = &g->cache[k];
    uint32_t n = 2 + g->st.set.n;
    size_t words = ((size_t)g->v->n_vocab + 31) / 32;
    if (n > c->key_cap) {
        uint32_t *q = realloc(c->key, (size_t)n * sizeof *q);
        if (!q) return NULL;
        c->key = q;
        c->key_cap = n;
    }
    if (!c->bits && !(c->bits = malloc((words ? words : 1) * sizeof *c->bits))) return NULL;
    c->key_n = 0; /* invalid until filled */
    memset(c->bits, 0, words * sizeof *c->bits);
    c->used = ++g->clock;
    return c;
}

typedef int (*visit_fn)(ox_grammar *g, uint32_t i, int32_t to, void *ctx);

/* Walk the sorted vocabulary from state `from`: visit(i, to) for each character token i whose
 * bytes keep some parse open, `to` the state after it (one where a token may end). lv[d] is
 * the state after d bytes of the current token; the next token reuses the states of the
 * prefix it shares, and tokens under a dead prefix are skipped. Returns 0 when done, the
 * visit's positive return when it stopped the walk early, or <0. */
static int walk_tokens(ox_grammar *g, int32_t from, int32_t *lv, visit_fn visit, void *ctx, int look_ahead) {
    const ox_grammar_vocab *v = g->v;
    lv[0] = from;
    uint32_t valid = 0; /* lv[0..valid] hold the previous token's path */
    for (uint32_t i = 0; i < v->n; i++) {
        int rc = tick(g, 1);
        if (rc) return rc;
        if (look_ahead && !g->live_left--) return g->live_left = 0, 1; /* the budget: taken as live */
        uint32_t d = v->lcp[i] < valid ? v->lcp[i] : valid;
        const unsigned char *b = (const unsigned char *)v->bytes + v->off[i];
        uint32_t len = v->off[i + 1] - v->off[i];
        int32_t id = lv[d];
        for (; d < len; d++) {
            if ((id = transition(g, id, b[d])) < 0) break;
            lv[d + 1] = id;
        }
        if (id < DEAD) return id;
        if (id == DEAD) {
            valid = d;
            while (i + 1 < v->n && v->lcp[i + 1] > d) i++; /* the same dead prefix */
            continue;
        }
        valid = len;
        if (state_can_end(g, id) && (rc = visit(g, i, id, ctx))) return rc;
    }
    return 0;
}

static int state_live(ox_grammar *g, int32_t id, int depth);

static int visit_live(ox_grammar *g, uint32_t i, int32_t to, void *ctx) {
    (void)i;
    return state_live(g, to, *(const int *)ctx - 1);
}

/* Can the text go on from state id: it can end here (complete, and a stop token exists), a
 * control token the grammar names can come next, or some character token leads to a live
 * state. Looks at most depth tokens ahead (past that, on a cycle, and past the mask's LIVE_WALKS
 * budget a state counts as live);
 * the answer is kept with the state. 1, 0, or <0. */
static int state_live(ox_grammar *g, int32_t id, int depth) {
    if (depth <= 0) return 1;
    istate *st = &g->in.s[id];
    if (st->live >= 0) return st->live != 0;
    if (!st->need) {
        gset set = state_set(g, id);
        int live = g->can_stop && has_empty(&set);
        RECORDS(&set, k, len, rec) if (len && g->r.el[rec[len - 1]].type == GE_TOKEN) live = 1;
        if (live) return st->live = 1;
    }
    st->live = 2;
    int rc = walk_tokens(g, id, g->lv + (size_t)(LOOKAHEAD + 1 - depth) * g->n_lv, visit_live, &depth, 1);
    g->in.s[id].live = (int8_t)(rc < 0 ? -1 : rc > 0);
    return rc < 0 ? rc : rc > 0;
}

/* the mask's visit: the token is allowed when the state after it is live */
static int visit_mask(ox_grammar *g, uint32_t i, int32_t to, void *ctx) {
    int rc = state_live(g, to, LOOKAHEAD);
    if (rc > 0) ((uint32_t *)ctx)[g->v->id[i] >> 5] |= 1u << (g->v->id[i] & 31);
    return rc < 0 ? rc : 0;
}

/* The allowed tokens from the current state into bits. */
static int walk(ox_grammar *g, uint32_t *bits) {
    const ox_grammar_vocab *v = g->v;
    if (v->abort && v->abort(v->abort_ud)) return ox_errf(g->err, OX_E_ABORTED, "grammar: aborted by the caller");
    if (g->in.n > INTERN_MAX) intern_clear(&g->in);
    int32_t from = intern_get(g, &g->st.set, g->st.part, g->st.need);
    if (from < 0) return from;
    g->live_left = (uint64_t)LIVE_WALKS * (v->n + 1);
    int rc = walk_tokens(g, from, g->lv, visit_mask, bits, 0);
    if (rc < 0) return rc;
    /* control tokens the grammar names; stop tokens where the text is complete */
    if (!g->st.need) {
        RECORDS(&g->st.set, k, len, rec) {
            if (!len) continue;
            const ox_gelem *e = &g->r.el[rec[len - 1]];
            if (e->type == GE_TOKEN && (int)e->a < v->n_vocab) bits[e->a >> 5] |= 1u << (e->a & 31);
        }
    }
    if (ox_grammar_complete(g))
        for (int k = 0; k < g->n_stops; k++)
            if (g->stops[k] >= 0 && g->stops[k] < v->n_vocab) bits[g->stops[k] >> 5] |= 1u << (g->stops[k] & 31);
    return 0;
}

int ox_grammar_mask(ox_grammar *g, float *logits, int vocab, ox_err *err) {
    g->err = err;
    if (vocab != g->v->n_vocab)
        return ox_errf(err, OX_E_RANGE, "grammar: %d logits for a vocabulary of %d", vocab, g->v->n_vocab);
    cache_slot *c = cache_find(g);
    if (!c) {
        if (!(c = cache_take(g))) return ox_errf(err, OX_E_NOMEM, "grammar: out of memory for the mask cache");
        int rc = walk(g, c->bits);
        if (rc) return rc;
        c->key[0] = g->st.part;
        c->key[1] = g->st.need;
        memcpy(c->key + 2, g->st.set.d, (size_t)g->st.set.n * sizeof *c->key);
        c->key_n = 2 + g->st.set.n;
    }
    int any = 0;
    for (int i = 0; i < vocab; i++) {
        if (c->bits[i >> 5] >> (i & 31) & 1) any = 1;
        else logits[i] = -INFINITY;
    }
    if (!any) return ox_errf(err, OX_E_RANGE, "grammar: no token of the vocabulary can continue the text");
    return 0;
}

/* ---- accepting ---- */

static int accept_bytes(ox_grammar *g, const unsigned char *b, size_t n, ox_err *err, const char *what) {
    const gset *cur = &g->st.set;
    uint32_t part = g->st.part;
    uint8_t need = g->st.need;
    int which = 0;
    for (size_t k = 0; k < n; k++) {
        const gset *res = NULL;
        int rc = tick(g, 1 + cur->n);
        if (rc) return rc;
        rc = step_byte(g, cur, &part, &need, b[k], &g->tmp[which], &res);
        if (rc < 0) return rc;
        if (!rc) return ox_errf(err, OX_E_RANGE, "grammar: %s does not fit the grammar here", what);
        if (res == &g->tmp[which]) which ^= 1;
        cur = res;
    }
    if (!can_end(g, cur, part, need))
        return ox_errf(err, OX_E_RANGE, "grammar: %s does not fit the grammar here", what);
    if (cur != &g->st.set) {
        int rc = set_copy(g, &g->st.set, cur);
        if (rc) return rc;
    }
    g->st.part = part;
    g->st.need = need;
    return 0;
}

int ox_grammar_accept_text(ox_grammar *g, const char *text, size_t len, ox_err *err) {
    g->err = err;
    return accept_bytes(g, (const unsigned char *)text, len, err, "the text");
}

int ox_grammar_accept(ox_grammar *g, int token, ox_err *err) {
    g->err = err;
    const ox_grammar_vocab *v = g->v;
    if (token < 0 || token >= v->n_vocab)
        return ox_errf(err, OX_E_RANGE, "grammar: token %d is outside the vocabulary", token);
    int32_t at = v->where[token];
    if (at >= 0 && !is_stop(g, token)) {
        char what[32];
        snprintf(what, sizeof what, "token %d", token);
        return accept_bytes(g, (const unsigned char *)v->bytes + v->off[at], v->off[at + 1] - v->off[at], err, what);
    }
    if (at < 0 && at != INT32_MIN && !g->st.need) { /* a control token the grammar names */
        int rc = advance(g, &g->st.set, 1, (uint32_t)token, &g->tmp[0]);
        if (rc) return rc;
        if (g->tmp[0].count) return set_copy(g, &g->st.set, &g->tmp[0]);
    }
    if (is_stop(g, token))
        return ox_grammar_complete(g)
                   ? 0
                   : ox_errf(err, OX_E_RANGE, "grammar: stop token %d before the text is complete", token);
    return ox_errf(err, OX_E_RANGE, "grammar: token %d does not fit the grammar here", token);
}
