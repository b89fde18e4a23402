/* json.c — see json.h. A recursive-descent parser over a byte range. Container children are
 * collected on one growable stack and copied into the arena when the container closes, so
 * every array/object is one contiguous node array (O(1) indexing) without per-node mallocs. */
#include "formats/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ox_json {
    const char *key; /* member key (object members only) */
    union {
        double num;
        const char *str;
        ox_json *kids;
        int b;
    } u;
    int64_t ival; /* exact value when is_int */
    uint32_t len; /* string bytes / element count */
    uint32_t key_len;
    uint8_t kind, is_int;
    uint8_t int_literal; /* written without a fraction or exponent (what Python's json reads as int) */
};

/* ---- arena ---- */

typedef struct blk {
    struct blk *next;
    size_t used, cap;
} blk;
#define BLK_HDR ((sizeof(blk) + 15) & ~(size_t)15)
#define BLK_MIN ((size_t)1 << 20)

typedef struct {
    ox_json root;
    blk *blocks;
} doc;

static void *arena_alloc(doc *d, size_t n) {
    if (n > SIZE_MAX - 15 - BLK_HDR) return NULL;
    n = (n + 15) & ~(size_t)15;
    blk *b = d->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLK_MIN ? n : BLK_MIN;
        b = malloc(BLK_HDR + cap);
        if (!b) return NULL;
        b->next = d->blocks, b->used = 0, b->cap = cap;
        d->blocks = b;
    }
    void *p = (char *)b + BLK_HDR + b->used;
    b->used += n;
    return p;
}

/* ---- parser ---- */

typedef struct {
    const char *start, *p, *end;
    const char *fname;
    ox_err *err;
    doc *d;
    ox_json *stk;
    size_t nstk, cap;
    size_t n_values; /* pushed so far (OX_JSON_MAX_VALUES) */
    int depth;
    int failed;
} parser;

static int fail(parser *ps, const char *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(parser *ps, const char *at, const char *fmt, ...) {
    if (ps->failed) return -1;
    ps->failed = 1;
    long line = 1;
    const char *ls = ps->start;
    for (const char *q = ps->start; q < at; q++)
        if (*q == '\n') line++, ls = q + 1;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ox_errf(ps->err, OX_E_FORMAT, "%s:%ld:%ld: %s", ps->fname, line, (long)(at - ls) + 1, what);
    return -1;
}

static int nomem(parser *ps, size_t n) {
    if (ps->failed) return -1;
    ps->failed = 1;
    ox_errf(ps->err, OX_E_NOMEM, "%s: out of memory parsing JSON (%zu bytes)", ps->fname, n);
    return -1;
}

static void skip_ws(parser *ps) {
    const char *p = ps->p;
    while (p < ps->end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    ps->p = p;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (end - p < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) *o++ = (char)cp;
    else if (cp < 0x800) *o++ = (char)(0xC0 | cp >> 6), *o++ = (char)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
        *o++ = (char)(0xE0 | cp >> 12), *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)), *o++ = (char)(0x80 | (cp & 0x3F));
    else
        *o++ = (char)(0xF0 | cp >> 18), *o++ = (char)(0x80 | ((cp >> 12) & 0x3F)),
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)), *o++ = (char)(0x80 | (cp & 0x3F));
    return o;
}

/* ps->p at the opening quote. Decodes into the arena (NUL-terminated). */
static int parse_string(parser *ps, const char **out, uint32_t *out_len) {
    const char *q = ps->p + 1, *end = ps->end;
    int escapes = 0;
    /* First pass: find the closing quote, validate raw bytes. */
    while (1) {
        if (q >= end) return fail(ps, ps->p, "unterminated string");
        unsigned char c = (unsigned char)*q;
        if (c == '"') break;
        if (c == '\\') {
            escapes = 1;
            if (q + 1 >= end) return fail(ps, q, "unterminated string");
            q += 2;
        } else if (c < 0x20) {
            return fail(ps, q, "unescaped control character 0x%02x in string", c);
        } else if (c < 0x80) {
            q++;
        } else {
            int n = utf8_len((const unsigned char *)q, (const unsigned char *)end);
            if (!n) return fail(ps, q, "invalid UTF-8 in string");
            q += n;
        }
    }
    size_t raw = (size_t)(q - (ps->p + 1));
    if (raw > UINT32_MAX) return fail(ps, ps->p, "string too long");
    char *dst = arena_alloc(ps->d, raw + 1);
    if (!dst) return nomem(ps, raw + 1);
    const char *s = ps->p + 1;
    char *o = dst;
    if (!escapes) {
        memcpy(dst, s, raw);
        o = dst + raw;
    } else {
        while (s < q) {
            if (*s != '\\') {
                *o++ = *s++;
                continue;
            }
            char e = s[1];
            const char *at = s;
            s += 2;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (q - s < 4 || hex4(s, &cp)) return fail(ps, at, "bad \\u escape");
                s += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(ps, at, "lone low surrogate \\u%04X", cp);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (q - s < 6 || s[0] != '\\' || s[1] != 'u' || hex4(s + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return fail(ps, at, "high surrogate \\u%04X without a low surrogate", cp);
                    s += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                o = put_utf8(o, cp);
                break;
            }
            default: return fail(ps, at, "bad escape \\%c", e);
            }
        }
    }
    *o = 0;
    *out = dst;
    *out_len = (uint32_t)(o - dst);
    ps->p = q + 1;
    return 0;
}

static int parse_number(parser *ps, ox_json *v) {
    const char *s = ps->p, *p = s, *end = ps->end;
    int neg = 0, simple = 1;
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end || *p < '0' || *p > '9') return fail(ps, s, "bad number");
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') return fail(ps, s, "leading zero in number");
    } else {
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    const char *int_end = p;
    if (p < end && *p == '.') {
        simple = 0, p++;
        if (p >= end || *p < '0' || *p > '9') return fail(ps, s, "bad number: digit expected after '.'");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        simple = 0, p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return fail(ps, s, "bad number: digit expected in exponent");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    v->kind = OX_JSON_NUMBER;
    v->int_literal = (uint8_t)simple;
    if (simple) {
        uint64_t u = 0;
        int ovf = 0;
        for (const char *d = s + neg; d < int_end; d++) {
            unsigned dig = (unsigned)(*d - '0');
            if (u > (UINT64_MAX - dig) / 10) {
                ovf = 1;
                break;
            }
            u = u * 10 + dig;
        }
        if (!ovf && (neg ? u <= (uint64_t)INT64_MAX + 1 : u <= (uint64_t)INT64_MAX)) {
            v->ival = neg ? (int64_t)(0 - u) : (int64_t)u;
            v->u.num = (double)v->ival;
            v->is_int = 1;
            ps->p = p;
            return 0;
        }
    }
    char buf[64], *tmp = buf;
    size_t n = (size_t)(p - s);
    if (n >= sizeof buf && !(tmp = malloc(n + 1))) return nomem(ps, n + 1);
    memcpy(tmp, s, n);
    tmp[n] = 0;
    double d = strtod(tmp, NULL);
    if (tmp != buf) free(tmp);
    if (isinf(d)) return fail(ps, s, "number out of range");
    v->u.num = d;
    if (d == floor(d) && fabs(d) < 9.2233720368547758e18) v->ival = (int64_t)d, v->is_int = 1;
    ps->p = p;
    return 0;
}

static int push(parser *ps, const ox_json *v) {
    if (++ps->n_values > OX_JSON_MAX_VALUES)
        return fail(ps, ps->p, "more than %zu values in arrays and objects", (size_t)OX_JSON_MAX_VALUES);
    if (ps->nstk == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 256, bytes;
        if (ox_mul_size(cap, sizeof(ox_json), &bytes)) return nomem(ps, SIZE_MAX);
        ox_json *n = realloc(ps->stk, bytes);
        if (!n) return nomem(ps, bytes);
        ps->stk = n, ps->cap = cap;
    }
    ps->stk[ps->nstk++] = *v;
    return 0;
}

/* Move stack entries [base, top) into an arena array owned by v. */
static int close_container(parser *ps, ox_json *v, size_t base) {
    size_t n = ps->nstk - base;
    if (n > UINT32_MAX) return fail(ps, ps->p, "too many elements");
    v->len = (uint32_t)n;
    v->u.kids = NULL;
    if (n) {
        size_t bytes;
        if (ox_mul_size(n, sizeof(ox_json), &bytes)) return nomem(ps, SIZE_MAX);
        v->u.kids = arena_alloc(ps->d, bytes);
        if (!v->u.kids) return nomem(ps, bytes);
        memcpy(v->u.kids, ps->stk + base, bytes);
    }
    ps->nstk = base;
    return 0;
}

static int parse_value(parser *ps, ox_json *v);

static int parse_container(parser *ps, ox_json *v, int is_obj) {
    const char *open = ps->p;
    if (++ps->depth > OX_JSON_MAX_DEPTH) return fail(ps, open, "nesting deeper than %d", OX_JSON_MAX_DEPTH);
    char close = is_obj ? '}' : ']';
    size_t base = ps->nstk;
    v->kind = is_obj ? OX_JSON_OBJECT : OX_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        while (1) {
            ox_json item;
            memset(&item, 0, sizeof item);
            const char *key = NULL;
            uint32_t key_len = 0;
            if (is_obj) {
                skip_ws(ps);
                if (ps->p >= ps->end) return fail(ps, ps->p, "unexpected end inside object");
                if (*ps->p != '"') return fail(ps, ps->p, "object key (string) expected");
                if (parse_string(ps, &key, &key_len)) return -1;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') return fail(ps, ps->p, "':' expected after object key");
                ps->p++;
            }
            if (parse_value(ps, &item)) return -1;
            item.key = key, item.key_len = key_len;
            if (push(ps, &item)) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end) return fail(ps, ps->p, "unexpected end inside %s", is_obj ? "object" : "array");
            if (*ps->p == ',') {
                ps->p++;
                continue;
            }
            if (*ps->p == close) {
                ps->p++;
                break;
            }
            return fail(ps, ps->p, "',' or '%c' expected", close);
        }
    }
    ps->depth--;
    return close_container(ps, v, base);
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return fail(ps, ps->p, "invalid literal");
    ps->p += n;
    return 0;
}

static int parse_value(parser *ps, ox_json *v) {
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, ps->p, "value expected, found end of input");
    switch (*ps->p) {
    case '{': return parse_container(ps, v, 1);
    case '[': return parse_container(ps, v, 0);
    case '"': v->kind = OX_JSON_STRING; return parse_string(ps, &v->u.str, &v->len);
    case 't': v->kind = OX_JSON_BOOL, v->u.b = 1; return literal(ps, "true");
    case 'f': v->kind = OX_JSON_BOOL, v->u.b = 0; return literal(ps, "false");
    case 'n': v->kind = OX_JSON_NULL; return literal(ps, "null");
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps, v);
        return fail(ps, ps->p, "unexpected character '%c'", *ps->p);
    }
}

ox_json *ox_json_parse(const char *text, size_t len, const char *fname, ox_err *err) {
    if (!fname) fname = "JSON";
    if (len > OX_JSON_MAX_BYTES)
        return ox_errf(err, OX_E_FORMAT, "%s: JSON text of %zu bytes exceeds the %zu-byte limit", fname, len,
                       OX_JSON_MAX_BYTES),
               NULL;
    doc *d = calloc(1, sizeof *d);
    if (!d) return ox_errf(err, OX_E_NOMEM, "%s: out of memory", fname), NULL;
    parser ps = {text, text, text + len, fname, err, d, NULL, 0, 0, 0, 0, 0};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.p += 3;
    skip_ws(&ps);
    int rc = ps.p >= ps.end ? fail(&ps, ps.p, "empty document") : parse_value(&ps, &d->root);
    if (!rc) {
        skip_ws(&ps);
        if (ps.p < ps.end) rc = fail(&ps, ps.p, "trailing characters after the JSON value");
    }
    free(ps.stk);
    if (rc) {
        ox_json_free(&d->root);
        return NULL;
    }
    return &d->root;
}

void ox_json_free(ox_json *root) {
    if (!root) return;
    doc *d = (doc *)root;
    for (blk *b = d->blocks, *n; b; b = n) n = b->next, free(b);
    free(d);
}

/* ---- accessors ---- */

ox_json_kind ox_json_type(const ox_json *v) { return v ? (ox_json_kind)v->kind : OX_JSON_NONE; }

const ox_json *ox_json_get(const ox_json *obj, const char *key) {
    if (!obj || obj->kind != OX_JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = obj->len; i-- > 0;) {
        const ox_json *m = &obj->u.kids[i];
        if (m->key_len == kl && memcmp(m->key, key, kl) == 0) return m;
    }
    return NULL;
}

size_t ox_json_len(const ox_json *v) {
    if (!v) return 0;
    return (v->kind == OX_JSON_ARRAY || v->kind == OX_JSON_OBJECT || v->kind == OX_JSON_STRING) ? v->len : 0;
}

const ox_json *ox_json_at(const ox_json *v, size_t i) {
    if (!v || (v->kind != OX_JSON_ARRAY && v->kind != OX_JSON_OBJECT) || i >= v->len) return NULL;
    return &v->u.kids[i];
}

const char *ox_json_key(const ox_json *m) { return m ? m->key : NULL; }
size_t ox_json_key_len(const ox_json *m) { return m && m->key ? m->key_len : 0; }
const char *ox_json_str(const ox_json *v) { return v && v->kind == OX_JSON_STRING ? v->u.str : NULL; }
double ox_json_num(const ox_json *v, double dflt) { return v && v->kind == OX_JSON_NUMBER ? v->u.num : dflt; }
int ox_json_bool(const ox_json *v, int dflt) { return v && v->kind == OX_JSON_BOOL ? v->u.b : dflt; }

int ox_json_int(const ox_json *v, int64_t *out) {
    if (!v || v->kind != OX_JSON_NUMBER || !v->is_int) return 0;
    *out = v->ival;
    return 1;
}

int ox_json_int_literal(const ox_json *v) { return v && v->kind == OX_JSON_NUMBER && v->int_literal; }

/* ---- string builder ---- */

static int sb_reserve(ox_strbuf *b, size_t extra) {
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *n = realloc(b->s, cap);
    if (!n) return b->oom = 1, -1;
    b->s = n, b->cap = cap;
    return 0;
}

void ox_sb_append(ox_strbuf *b, const char *s, size_t n) {
    if (sb_reserve(b, n) || n == 0) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void ox_sb_printf(ox_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ox_sb_json_str(ox_strbuf *b, const char *s, size_t n) {
    ox_sb_append(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        ox_sb_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': ox_sb_append(b, "\\\"", 2); break;
        case '\\': ox_sb_append(b, "\\\\", 2); break;
        case '\n': ox_sb_append(b, "\\n", 2); break;
        case '\t': ox_sb_append(b, "\\t", 2); break;
        case '\r': ox_sb_append(b, "\\r", 2); break;
        default: ox_sb_printf(b, "\\u%04x", c);
        }
    }
    ox_sb_append(b, s + run, n - run);
    ox_sb_append(b, "\"", 1);
}

void ox_sb_free(ox_strbuf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}
