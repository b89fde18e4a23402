/* grammar_parse.c — GBNF text -> the rule table of grammar_impl.h.
 *
 * Recursive descent: rules `name ::= alternates` one per line (a newline inside ( ) is
 * whitespace), `#` comments. Groups become helper rules; `x*` becomes `r ::= x r |`, `x+`
 * `x x*`, `x?` `r ::= x |`, `x{m,n}` m copies then a chain of n-m optional ones. After the
 * parse: every referenced rule must be defined, `root` must exist, and no rule may reach
 * itself without consuming input (left recursion would make the matcher loop). Every step is
 * linear in the compiled rules (names are hashed, the checks visit each element a bounded
 * number of times): a hostile grammar costs its size, and the caller's abort is polled. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/grammar_impl.h"

#define MAX_RULES  65536
#define MAX_REPEAT 1024
#define MAX_ELEMS  (1u << 21)

typedef struct evec {
    ox_gelem *el;
    uint32_t n, cap;
} evec;

typedef struct parser {
    const char *s;
    size_t len, i;
    int line;
    size_t line_start;
    evec *body;       /* per rule */
    char **name;      /* per rule; helper rules share their parent's string (not owned) */
    uint8_t *defined; /* per rule: 0 referenced only, 1 helper, 2 defined by the text */
    uint32_t n_rules, cap_rules;
    uint32_t *named; /* open addressing over the user rules' names: rule + 1, 0 empty */
    uint32_t n_named, cap_named;
    uint32_t *ranges;
    uint32_t n_ranges, cap_ranges;
    uint32_t total_el;
    ox_gcontrol_fn control;
    const void *ud;
    ox_gabort_fn abort;
    void *abort_ud;
    uint64_t work;
    ox_err *err;
} parser;

static int perr(parser *p, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ox_errf(p->err, OX_E_FORMAT, "grammar: line %d col %zu: %s", p->line, p->i - p->line_start + 1, msg);
}

static int nomem(parser *p) { return ox_errf(p->err, OX_E_NOMEM, "grammar: out of memory"); }

static int grow(void **buf, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*buf, (size_t)c * size);
    if (!q) return -1;
    *buf = q;
    *cap = c;
    return 0;
}

static int push(parser *p, uint32_t r, ox_gelem e) {
    evec *v = &p->body[r];
    if (++p->total_el > MAX_ELEMS) return perr(p, "more than %u elements", MAX_ELEMS);
    int rc = ox_gtick(&p->work, 1, p->abort, p->abort_ud, p->err);
    if (rc) return rc;
    if (grow((void **)&v->el, &v->cap, v->n + 1, sizeof *v->el)) return nomem(p);
    v->el[v->n++] = e;
    return 0;
}

/* a new rule named name[0..len) (copied), or sharing the string `shared` (helpers) */
static int64_t new_rule(parser *p, const char *name, size_t len, char *shared) {
    if (p->n_rules >= MAX_RULES) return perr(p, "more than %d rules", MAX_RULES);
    if (p->n_rules == p->cap_rules) {
        uint32_t c = p->cap_rules ? p->cap_rules * 2 : 32;
        evec *b = realloc(p->body, c * sizeof *b);
        if (b) p->body = b;
        char **nm = realloc(p->name, c * sizeof *nm);
        if (nm) p->name = nm;
        uint8_t *d = realloc(p->defined, c);
        if (d) p->defined = d;
        if (!b || !nm || !d) return nomem(p);
        p->cap_rules = c;
    }
    char *copy = shared;
    if (!copy) {
        if (!(copy = malloc(len + 1))) return nomem(p);
        memcpy(copy, name, len);
        copy[len] = 0;
    }
    uint32_t r = p->n_rules++;
    p->body[r] = (evec){0};
    p->name[r] = copy;
    p->defined[r] = shared ? 1 : 0;
    return r;
}

/* a helper rule, named after the rule it serves (for messages) */
static int64_t helper_rule(parser *p, uint32_t parent) { return new_rule(p, NULL, 0, p->name[parent]); }

static uint32_t name_hash(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < len; k++) h = (h ^ (unsigned char)s[k]) * 16777619u;
    return h;
}

/* a user rule by name (helper rules share their parent's name and are not in the table) */
static int64_t rule_by_name(parser *p, const char *name, size_t len) {
    int rc = ox_gtick(&p->work, len + 1, p->abort, p->abort_ud, p->err);
    if (rc) return rc;
    if (2 * (p->n_named + 1) > p->cap_named) { /* grow and rehash: at most half full */
        uint32_t c = p->cap_named ? 2 * p->cap_named : 64;
        uint32_t *t = calloc(c, sizeof *t);
        if (!t) return nomem(p);
        for (uint32_t k = 0; k < p->cap_named; k++) {
            if (!p->named[k]) continue;
            const char *nm = p->name[p->named[k] - 1];
            uint32_t j = name_hash(nm, strlen(nm)) & (c - 1);
            while (t[j]) j = (j + 1) & (c - 1);
            t[j] = p->named[k];
        }
        free(p->named);
        p->named = t;
        p->cap_named = c;
    }
    uint32_t j = name_hash(name, len) & (p->cap_named - 1);
    for (; p->named[j]; j = (j + 1) & (p->cap_named - 1)) {
        const char *nm = p->name[p->named[j] - 1];
        if (!strncmp(nm, name, len) && !nm[len]) return p->named[j] - 1;
    }
    int64_t r = new_rule(p, name, len, NULL);
    if (r >= 0) p->named[j] = (uint32_t)r + 1, p->n_named++;
    return r;
}

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static void space(parser *p, int newline_ok) {
    while (p->i < p->len) {
        char c = p->s[p->i];
        if (c == ' ' || c == '\t' || c == '\r') p->i++;
        else if (c == '#') {
            while (p->i < p->len && p->s[p->i] != '\n') p->i++;
        } else if (c == '\n' && newline_ok) {
            p->i++;
            p->line++;
            p->line_start = p->i;
        } else break;
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* one UTF-8 code point of s[0..n); its length, or 0 if invalid */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || (size_t)len > n) return 0;
    uint32_t v = len == 1 ? c : c & (0x3f >> (len - 1));
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[k] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

static int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* a character of a literal or class, escapes decoded */
static int read_char(parser *p, uint32_t *cp) {
    if (p->i >= p->len) return perr(p, "unexpected end of the grammar");
    if (p->s[p->i] != '\\') {
        int n = utf8_decode((const unsigned char *)p->s + p->i, p->len - p->i, cp);
        if (!n) return perr(p, "invalid UTF-8");
        if (*cp == '\n') return perr(p, "a newline inside a literal or class (write \\n)");
        p->i += n;
        return 0;
    }
    if (++p->i >= p->len) return perr(p, "unexpected end after '\\'");
    char c = p->s[p->i++];
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; k++) {
            int h = p->i < p->len ? hexval(p->s[p->i]) : -1;
            if (h < 0) return perr(p, "\\%c needs %d hex digits", c, digits);
            v = v << 4 | (uint32_t)h;
            p->i++;
        }
        if (v > 0x10ffff) return perr(p, "code point U+%X is beyond Unicode", v);
        *cp = v;
        return 0;
    }
    switch (c) {
    case 'n': *cp = '\n'; return 0;
    case 't': *cp = '\t'; return 0;
    case 'r': *cp = '\r'; return 0;
    case '\\':
    case '"':
    case '[':
    case ']':
    case '-':
    case '^':
    case '/': *cp = (uint32_t)c; return 0;
    default: return perr(p, "unknown escape \\%c", c);
    }
}

static int add_range(parser *p, uint32_t lo, uint32_t hi) {
    if (lo > hi) return perr(p, "range U+%X-U+%X is empty", lo, hi);
    if (grow((void **)&p->ranges, &p->cap_ranges, p->n_ranges + 2, sizeof *p->ranges)) return nomem(p);
    p->ranges[p->n_ranges++] = lo;
    p->ranges[p->n_ranges++] = hi;
    return 0;
}

static int push_char(parser *p, uint32_t r, uint32_t cp) {
    uint32_t first = p->n_ranges / 2;
    int rc = add_range(p, cp, cp);
    return rc ? rc : push(p, r, (ox_gelem){.type = GE_CHARS, .a = first, .n = 1});
}

/* "…": one element per character; a control token's text inside becomes that token */
static int literal(parser *p, uint32_t r) {
    p->i++; /* " */
    char *buf = NULL;
    uint32_t n = 0, cap = 0;
    int rc = 0;
    while (!rc) {
        if (p->i >= p->len) {
            rc = perr(p, "unterminated string literal");
            break;
        }
        if (p->s[p->i] == '"') {
            p->i++;
            break;
        }
        uint32_t cp;
        if ((rc = read_char(p, &cp))) break;
        if (grow((void **)&buf, &cap, n + 4, 1)) rc = nomem(p);
        else n += (uint32_t)utf8_encode(cp, buf + n);
    }
    for (uint32_t k = 0; !rc && k < n;) {
        size_t m = 0;
        int tok = p->control ? p->control(p->ud, buf + k, n - k, &m) : -1;
        if (tok >= 0 && m > 0) {
            rc = push(p, r, (ox_gelem){.type = GE_TOKEN, .a = (uint32_t)tok});
            k += (uint32_t)m;
            continue;
        }
        uint32_t cp;
        int len = utf8_decode((const unsigned char *)buf + k, n - k, &cp);
        if (!len) rc = perr(p, "a literal holds a surrogate or invalid code point");
        else rc = push_char(p, r, cp), k += (uint32_t)len;
    }
    free(buf);
    return rc;
}

/* […] or [^…] */
static int char_class(parser *p, uint32_t r) {
    p->i++; /* [ */
    int neg = p->i < p->len && p->s[p->i] == '^';
    if (neg) p->i++;
    uint32_t first = p->n_ranges / 2, count = 0;
    for (;;) {
        if (p->i >= p->len) return perr(p, "unterminated character class");
        if (p->s[p->i] == ']') {
            p->i++;
            break;
        }
        uint32_t lo, hi;
        int rc = read_char(p, &lo);
        if (rc) return rc;
        hi = lo;
        if (p->i + 1 < p->len && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            p->i++;
            if ((rc = read_char(p, &hi))) return rc;
        }
        if ((rc = add_range(p, lo, hi))) return rc;
        count++;
    }
    if (!count && !neg) return perr(p, "an empty character class matches nothing");
    return push(p, r, (ox_gelem){.type = GE_CHARS, .neg = (uint8_t)neg, .a = first, .n = count});
}

static int read_count(parser *p, uint32_t *v) {
    size_t start = p->i;
    uint64_t x = 0;
    while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9' && x <= MAX_REPEAT)
        x = x * 10 + (uint64_t)(p->s[p->i++] - '0');
    if (p->i == start) return perr(p, "a count was expected");
    if (x > MAX_REPEAT) return perr(p, "a repetition count above %d", MAX_REPEAT);
    *v = (uint32_t)x;
    return 0;
}

/* the last item of rule r (elements [start, n)) repeated min..max times (max UINT32_MAX: no bound) */
static int repeat(parser *p, uint32_t r, uint32_t start, uint32_t min, uint32_t max) {
    ox_gelem x;
    if (p->body[r].n - start == 1) x = p->body[r].el[start];
    else { /* several elements (a literal): make them one rule */ int64_t sub = helper_rule(p, r);
        if (sub < 0) return (int)sub;
        for (uint32_t k = start; k < p->body[r].n; k++) {
            int rc = push(p, (uint32_t)sub, p->body[r].el[k]);
            if (rc) return rc;
        }
        int rc = push(p, (uint32_t)sub, (ox_gelem){.type = GE_END});
        if (rc) return rc;
        x = (ox_gelem){.type = GE_RULE, .a = (uint32_t)sub};
    }
    p->total_el -= p->body[r].n - start;
    p->body[r].n = start;
    for (uint32_t k = 0; k < min; k++) {
        int rc = push(p, r, x);
        if (rc) return rc;
    }
    if (max == min) return 0;
    /* x* : rep ::= x rep | ; bounded: opt_k ::= x opt_{k-1} | , with opt_0 empty */
    int64_t prev = -1;
    uint32_t chain = max == UINT32_MAX ? 1 : max - min;
    for (uint32_t k = 0; k < chain; k++) {
        int64_t rep = helper_rule(p, r);
        if (rep < 0) return (int)rep;
        int rc = push(p, (uint32_t)rep, x);
        if (!rc && max == UINT32_MAX) rc = push(p, (uint32_t)rep, (ox_gelem){.type = GE_RULE, .a = (uint32_t)rep});
        else if (!rc && prev >= 0) rc = push(p, (uint32_t)rep, (ox_gelem){.type = GE_RULE, .a = (uint32_t)prev});
        if (!rc) rc = push(p, (uint32_t)rep, (ox_gelem){.type = GE_ALT});
        if (!rc) rc = push(p, (uint32_t)rep, (ox_gelem){.type = GE_END});
        if (rc) return rc;
        prev = rep;
    }
    return push(p, r, (ox_gelem){.type = GE_RULE, .a = (uint32_t)prev});
}

static int alternates(parser *p, uint32_t r, int nested, int depth);

static int sequence(parser *p, uint32_t r, int nested, int depth) {
    int64_t last = -1; /* start of the last item, for a postfix operator */
    for (;;) {
        space(p, nested);
        if (p->i >= p->len) return 0;
        char c = p->s[p->i];
        uint32_t start = p->body[r].n;
        int rc = 0;
        if (c == '"') rc = literal(p, r);
        else if (c == '[') rc = char_class(p, r);
        else if (c == '.') {
            p->i++;
            rc = push(p, r, (ox_gelem){.type = GE_CHARS, .neg = 1, .a = 0, .n = 0});
        } else if (c == '(') {
            p->i++;
            int64_t g = helper_rule(p, r);
            if (g < 0) return (int)g;
            if ((rc = alternates(p, (uint32_t)g, 1, depth + 1))) return rc;
            space(p, 1);
            if (p->i >= p->len || p->s[p->i] != ')') return perr(p, "')' expected");
            p->i++;
            rc = push(p, r, (ox_gelem){.type = GE_RULE, .a = (uint32_t)g});
        } else if (is_name_char(c)) {
            size_t s0 = p->i;
            while (p->i < p->len && is_name_char(p->s[p->i])) p->i++;
            size_t j = p->i;
            while (j < p->len && (p->s[j] == ' ' || p->s[j] == '\t')) j++;
            if (!nested && j + 2 < p->len && !memcmp(p->s + j, "::=", 3)) { /* the next rule: a missing newline */
                p->i = s0;
                return perr(p, "a newline is needed before the next rule");
            }
            int64_t ref = rule_by_name(p, p->s + s0, p->i - s0);
            if (ref < 0) return (int)ref;
            rc = push(p, r, (ox_gelem){.type = GE_RULE, .a = (uint32_t)ref});
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last < 0) return perr(p, "'%c' has nothing to repeat", c);
            p->i++;
            uint32_t min = 0, max = UINT32_MAX;
            if (c == '+') min = 1;
            else if (c == '?') max = 1;
            else if (c == '{') {
                space(p, 0);
                if ((rc = read_count(p, &min))) return rc;
                space(p, 0);
                max = min;
                if (p->i < p->len && p->s[p->i] == ',') {
                    p->i++;
                    space(p, 0);
                    max = UINT32_MAX;
                    if (p->i < p->len && p->s[p->i] != '}' && (rc = read_count(p, &max))) return rc;
                    space(p, 0);
                }
                if (p->i >= p->len || p->s[p->i] != '}') return perr(p, "'}' expected");
                p->i++;
                if (max < min) return perr(p, "{%u,%u}: the maximum is below the minimum", min, max);
            }
            if ((rc = repeat(p, r, (uint32_t)last, min, max))) return rc;
            last = -1; /* x** is an error, as in llama.cpp */
            continue;
        } else return 0; /* '|', ')', newline: the caller's */
        if (rc) return rc;
        last = start;
    }
}

static int alternates(parser *p, uint32_t r, int nested, int depth) {
    if (depth > 64) return perr(p, "groups nested deeper than 64");
    for (;;) {
        int rc = sequence(p, r, nested, depth);
        if (rc) return rc;
        space(p, nested);
        if (p->i < p->len && p->s[p->i] == '|') {
            p->i++;
            space(p, 1); /* an alternative may start on the next line */
            if ((rc = push(p, r, (ox_gelem){.type = GE_ALT}))) return rc;
            continue;
        }
        return push(p, r, (ox_gelem){.type = GE_END});
    }
}

static int rules(parser *p) {
    for (;;) {
        space(p, 1);
        if (p->i >= p->len) return 0;
        size_t s0 = p->i;
        while (p->i < p->len && is_name_char(p->s[p->i])) p->i++;
        if (p->i == s0) return perr(p, "a rule name was expected");
        int64_t r = rule_by_name(p, p->s + s0, p->i - s0);
        if (r < 0) return (int)r;
        if (p->defined[r]) return perr(p, "rule %s is defined twice", p->name[r]);
        p->defined[r] = 2;
        space(p, 0);
        if (p->len - p->i < 3 || memcmp(p->s + p->i, "::=", 3)) return perr(p, "'::=' expected after %s", p->name[r]);
        p->i += 3;
        int rc = alternates(p, (uint32_t)r, 0, 0);
        if (rc) return rc;
        space(p, 0);
        if (p->i < p->len && p->s[p->i] != '\n') return perr(p, "unexpected '%c'", p->s[p->i]);
    }
}

/* Rules that can match the empty string, then a search for a rule that reaches itself
 * through leftmost positions (each position after only nullable rules). Both linear in the
 * elements: nullability is a worklist (an alternative of rule references counts down the
 * references not yet known nullable, each reference is visited once when its rule becomes
 * nullable), and the search's cursor leaves an alternative at its first element that is not
 * a nullable rule. */
static int check_left_recursion(ox_grules *g, char *const *names, ox_gabort_fn abort, void *abort_ud, ox_err *err) {
    uint32_t n = g->n_rules, n_el = g->n_el ? g->n_el : 1;
    uint8_t *nullable = calloc(n ? n : 1, 1), *color = calloc(n ? n : 1, 1);
    uint32_t *stack = malloc((size_t)(n ? n : 1) * 2 * sizeof *stack);
    /* per alternative (indexed by its first element): references left, or UINT32_MAX when it
     * holds a character or token and can never be empty; its rule */
    uint32_t *left = malloc((size_t)n_el * sizeof *left), *alt_rule = malloc((size_t)n_el * sizeof *alt_rule);
    uint32_t *use_start = calloc((size_t)n + 1, sizeof *use_start), *use = malloc((size_t)n_el * sizeof *use);
    uint32_t *queue = malloc((size_t)(n ? n : 1) * sizeof *queue), q_head = 0, q_tail = 0;
    int rc = 0;
    if (!nullable || !color || !stack || !left || !alt_rule || !use_start || !use || !queue) {
        rc = ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        goto done;
    }
    /* pass 1: each alternative's count; the empty ones make their rule nullable */
    for (uint32_t r = 0; r < n && !rc; r++) {
        for (uint32_t e = g->rule_start[r];; e++) {
            uint32_t k = e, refs = 0, plain = 1;
            for (; !ox_gelem_ends(&g->el[k]); k++) {
                if (g->el[k].type == GE_RULE) refs++, use_start[g->el[k].a + 1]++;
                else plain = 0;
            }
            left[e] = plain ? refs : UINT32_MAX;
            alt_rule[e] = r;
            if (plain && !refs && !nullable[r]) nullable[r] = 1, queue[q_tail++] = r;
            rc = ox_gtick(&g->work, k - e + 1, abort, abort_ud, err);
            if (g->el[k].type == GE_END || rc) break;
            e = k;
        }
    }
    /* pass 2: the alternatives that reference each rule (counting sort by rule) */
    for (uint32_t r = 0; r < n; r++) use_start[r + 1] += use_start[r];
    for (uint32_t r = 0; r < n && !rc; r++) {
        for (uint32_t e = g->rule_start[r];; e++) {
            uint32_t k = e;
            for (; !ox_gelem_ends(&g->el[k]); k++)
                if (g->el[k].type == GE_RULE) use[use_start[g->el[k].a]++] = e;
            rc = ox_gtick(&g->work, k - e + 1, abort, abort_ud, err);
            if (g->el[k].type == GE_END || rc) break;
            e = k;
        }
    }
    for (uint32_t r = n; r > 0; r--) use_start[r] = use_start[r - 1]; /* back to the starts */
    if (n) use_start[0] = 0;
    /* pass 3: the worklist */
    while (q_head < q_tail && !rc) {
        uint32_t t = queue[q_head++];
        for (uint32_t u = use_start[t]; u < use_start[t + 1]; u++) {
            uint32_t a = use[u];
            if (left[a] != UINT32_MAX && !--left[a] && !nullable[alt_rule[a]])
                nullable[alt_rule[a]] = 1, queue[q_tail++] = alt_rule[a];
        }
        rc = ox_gtick(&g->work, use_start[t + 1] - use_start[t] + 1, abort, abort_ud, err);
    }
    /* iterative DFS over left-corner edges: stack of (rule, element cursor) */
    for (uint32_t s = 0; s < n && !rc; s++) {
        if (color[s]) continue;
        uint32_t top = 0;
        stack[top++] = s, stack[top++] = g->rule_start[s];
        color[s] = 1;
        while (top && !rc) {
            uint32_t r = stack[top - 2], k = stack[top - 1];
            if ((rc = ox_gtick(&g->work, 1, abort, abort_ud, err))) break;
            if (g->el[k].type == GE_END) {
                color[r] = 2;
                top -= 2;
                continue;
            }
            const ox_gelem *e = &g->el[k];
            if (e->type == GE_ALT) {
                stack[top - 1] = k + 1;
                continue;
            }
            /* k is leftmost (the cursor only passes nullable rules); past a non-nullable element
             * nothing else in this alternative is */
            uint32_t next = k + 1;
            if (e->type != GE_RULE || !nullable[e->a])
                while (!ox_gelem_ends(&g->el[next])) next++;
            rc = ox_gtick(&g->work, next - k, abort, abort_ud, err);
            stack[top - 1] = next;
            if (rc || e->type != GE_RULE) continue;
            uint32_t t = e->a;
            if (color[t] == 1)
                rc = ox_errf(err, OX_E_FORMAT,
                             "grammar: rule %s is left-recursive (it can reach itself before matching a character)",
                             names[t]);
            else if (!color[t]) {
                color[t] = 1;
                stack[top++] = t, stack[top++] = g->rule_start[t];
            }
        }
    }
done:
    free(nullable);
    free(color);
    free(stack);
    free(left);
    free(alt_rule);
    free(use_start);
    free(use);
    free(queue);
    return rc;
}

void ox_grules_free(ox_grules *r) {
    free(r->el);
    free(r->ranges);
    free(r->rule_start);
    *r = (ox_grules){0};
}

int ox_grules_parse(ox_grules *g, const char *src, size_t len, ox_gcontrol_fn control, const void *ud,
                    ox_gabort_fn abort, void *abort_ud, ox_err *err) {
    *g = (ox_grules){0};
    parser p = {
        .s = src, .len = len, .line = 1, .control = control, .ud = ud, .abort = abort, .abort_ud = abort_ud, .err = err};
    int rc = rules(&p);
    int64_t root = -1;
    for (uint32_t r = 0; !rc && r < p.n_rules; r++) {
        if (!p.defined[r]) rc = ox_errf(err, OX_E_FORMAT, "grammar: rule %s is used but not defined", p.name[r]);
        if (p.defined[r] == 2 && !strcmp(p.name[r], "root")) root = r;
    }
    if (!rc && root < 0) rc = ox_errf(err, OX_E_FORMAT, "grammar: no root rule (root ::= ...)");
    if (!rc) { /* one flat array, rules in order */
        g->n_rules = p.n_rules;
        g->root = (uint32_t)root;
        g->n_el = p.total_el;
        g->el = malloc((size_t)(g->n_el ? g->n_el : 1) * sizeof *g->el);
        g->rule_start = malloc((size_t)g->n_rules * sizeof *g->rule_start);
        g->ranges = p.ranges;
        g->n_ranges = p.n_ranges / 2;
        p.ranges = NULL;
        if (!g->el || !g->rule_start) rc = ox_errf(err, OX_E_NOMEM, "grammar: out of memory");
        for (uint32_t r = 0, at = 0; !rc && r < p.n_rules; r++) {
            g->rule_start[r] = at;
            memcpy(g->el + at, p.body[r].el, p.body[r].n * sizeof *g->el);
            at += p.body[r].n;
        }
    }
    g->work = p.work;
    if (!rc) rc = check_left_recursion(g, p.name, abort, abort_ud, err);
    for (uint32_t r = 0; r < p.n_rules; r++) {
        free(p.body[r].el);
        if (p.defined[r] != 1) free(p.name[r]);
    }
    free(p.body);
    free(p.name);
    free(p.named);
    free(p.defined);
    free(p.ranges);
    if (rc) ox_grules_free(g);
    return rc;
}
