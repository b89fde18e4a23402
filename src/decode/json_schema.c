/* json_schema.c — JSON schema -> GBNF (json_schema.h). One walk over the schema, two notations.
 *
 * Every schema visited becomes a rule (or, under $ref, the body of the $ref's rule); a rule's
 * body refers to its children by name, so the text grows linearly with the schema. Strings made
 * on the way live in the builder's pool until the end. The GBNF rules the text will compile to
 * are counted as rules are added (a bounded repetition {m,n} compiles to n-m rules), so a schema
 * that would exceed the grammar compiler's limits is refused here, naming its place. */
#include "decode/json_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/json.h"

/* ---- shared rules, emitted when referenced ---- */

enum { C_JSON_CHAR, C_INTEGER, C_NUMBER, C_BOOLEAN, C_NULL, C_G4_CHAR, C_G4_CHAR1, C_DATE, C_TIME, C_UUID, N_COMMON };
static const char *const COMMON_NAME[N_COMMON] = {"json-char", "integer",  "number", "boolean", "null",
                                                  "g4-char",   "g4-char1", "date",   "time",    "uuid"};
static const char *const COMMON_BODY[N_COMMON] = {
    "[^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})",
    "\"-\"? ([0-9] | [1-9] [0-9]{1,15})",
    "\"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?",
    "\"true\" | \"false\"",
    "\"null\"",
    "[^<] | \"<\"+ [^<|]", /* no "<|" inside: a string cannot spell its own delimiter */
    "[^<]",                /* one code point (a bounded length counts code points) */
    "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])",
    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [-+] [0-9]{2} \":\" "
    "[0-9]{2})?",
    "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}",
};
/* between JSON tokens: bounded, so a sampler cannot pad without end (llama.cpp's rule) */
#define JSON_WS "| \" \" | \"\\n\" [ \\t]{0,20}"

static const char *const IGNORED[] = {"$schema",  "$id",      "title",      "description", "default",
                                      "examples", "$comment", "deprecated", "readOnly",    "writeOnly"};
static const char *const HANDLED[] = {"type",     "properties", "required",  "additionalProperties",
                                      "enum",     "const",      "items",     "prefixItems",
                                      "minItems", "maxItems",   "anyOf",     "oneOf",
                                      "allOf",    "$ref",       "$defs",     "definitions",
                                      "nullable", "minLength",  "maxLength", "format"};
#define MAX_LAYERS 8 /* allOf inside allOf */

/* ---- the builder ---- */

typedef struct {
    char **key;
    int *val;
    size_t cap, n;
} strmap; /* open addressing, key -> index */

typedef struct {
    int g4;                    /* Gemma 4 notation */
    const ox_json *root;       /* where $refs resolve */
    const char **name, **body; /* rules in order; body NULL while a $ref's rule is pending */
    int n_rules, cap_rules;
    strmap names, refs, suffix; /* suffix: a base name -> the next number to try */
    int used[N_COMMON];
    size_t cost;  /* GBNF rules the text compiles to (from above) */
    size_t bytes; /* bytes in the pool */
    char **pool;
    size_t n_pool, cap_pool;
    ox_err *err;
    int failed;
} builder;

typedef struct {
    const ox_json *layer[MAX_LAYERS];
    int n;
} view; /* a schema merged with allOf[0]s: top last */

static int fail(builder *b, int code, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int fail(builder *b, int code, const char *where, const char *fmt, ...) {
    if (b->failed) return b->failed;
    char what[OX_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    b->failed = code;
    if (where && *where) return ox_errf(b->err, code, "JSON schema at %.200s: %s", where, what);
    return ox_errf(b->err, code, "JSON schema: %s", what);
}
#define UNSUP(b, where, ...) fail((b), OX_E_UNSUPPORTED, (where), __VA_ARGS__)

/* the pool: every string made, freed together; its size bounded */
static char *keep(builder *b, char *s, size_t n) {
    if (!s || b->n_pool == b->cap_pool) {
        size_t cap = b->cap_pool ? b->cap_pool * 2 : 64;
        char **p = s ? realloc(b->pool, cap * sizeof *p) : NULL;
        if (!p) {
            free(s);
            fail(b, OX_E_NOMEM, NULL, "out of memory");
            return NULL;
        }
        b->pool = p;
        b->cap_pool = cap;
    }
    b->pool[b->n_pool++] = s;
    b->bytes += n;
    if (b->bytes > 8 * OX_SCHEMA_MAX_OUTPUT) {
        UNSUP(b, NULL, "the grammar would be longer than %zu bytes", OX_SCHEMA_MAX_OUTPUT);
        return NULL;
    }
    return s;
}

static const char *sfmt(builder *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static const char *sfmt(builder *b, const char *fmt, ...) {
    if (b->failed) return NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n > OX_SCHEMA_MAX_OUTPUT) {
        UNSUP(b, NULL, "the grammar would be longer than %zu bytes", OX_SCHEMA_MAX_OUTPUT);
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return keep(b, s, (size_t)n);
}

static const char *from_sb(builder *b, ox_strbuf *sb) {
    if (sb->oom) {
        ox_sb_free(sb);
        fail(b, OX_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    if (sb->len > OX_SCHEMA_MAX_OUTPUT) {
        ox_sb_free(sb);
        UNSUP(b, NULL, "the grammar would be longer than %zu bytes", OX_SCHEMA_MAX_OUTPUT);
        return NULL;
    }
    if (!sb->s) ox_sb_append(sb, "", 0);
    return keep(b, sb->s, sb->len);
}

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int *map_slot(builder *b, strmap *m, const char *key, int add) {
    if (add && (m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        char **k = calloc(cap, sizeof *k);
        int *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k), free(v);
            fail(b, OX_E_NOMEM, NULL, "out of memory");
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->key[i]) continue;
            size_t j = hash(m->key[i]) & (cap - 1);
            while (k[j]) j = (j + 1) & (cap - 1);
            k[j] = m->key[i], v[j] = m->val[i];
        }
        free(m->key), free(m->val);
        m->key = k, m->val = v, m->cap = cap;
    }
    if (!m->cap) return NULL;
    size_t j = hash(key) & (m->cap - 1);
    while (m->key[j] && strcmp(m->key[j], key)) j = (j + 1) & (m->cap - 1);
    if (m->key[j]) return &m->val[j];
    if (!add) return NULL;
    m->key[j] = (char *)key; /* pool-owned */
    m->n++;
    m->val[j] = -1;
    return &m->val[j];
}

static void map_free(strmap *m) {
    free(m->key), free(m->val);
    memset(m, 0, sizeof *m);
}

/* The GBNF rules a rule body compiles to: groups, optional/repeated items, and n-m per {m,n}. */
static size_t body_cost(const char *s) {
    size_t c = 1;
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '[') { /* a literal or a class: skip it */
            char close = *p == '"' ? '"' : ']';
            for (p++; *p && *p != close; p++)
                if (*p == '\\' && p[1]) p++;
            if (!*p) break;
        } else if (*p == '(' || *p == '?' || *p == '*' || *p == '+') c++;
        else if (*p == '{') {
            unsigned long lo = strtoul(p + 1, (char **)&p, 10), hi = lo;
            if (*p == ',') hi = p[1] == '}' ? lo + 1 : strtoul(p + 1, (char **)&p, 10);
            c += (hi > lo ? hi - lo : 0) + 1;
            if (!*p) break;
        }
    }
    return c;
}

static int charge(builder *b, const char *body, const char *where) {
    b->cost += body_cost(body);
    if (b->cost > OX_SCHEMA_MAX_RULES)
        return UNSUP(b, where,
                     "the grammar would need more than %d rules (lower maxLength / maxItems, fewer anyOf "
                     "members, or fewer property names beside additionalProperties)",
                     OX_SCHEMA_MAX_RULES);
    return 0;
}

static int push_rule(builder *b, const char *name, const char *body) {
    if (b->n_rules == b->cap_rules) {
        int cap = b->cap_rules ? b->cap_rules * 2 : 32;
        const char **n = realloc(b->name, (size_t)cap * sizeof *n);
        if (n) b->name = n;
        const char **d = n ? realloc(b->body, (size_t)cap * sizeof *d) : NULL;
        if (!d) return fail(b, OX_E_NOMEM, NULL, "out of memory");
        b->body = d;
        b->cap_rules = cap;
    }
    int *slot = map_slot(b, &b->names, name, 1);
    if (!slot) return b->failed;
    *slot = b->n_rules;
    b->name[b->n_rules] = name;
    b->body[b->n_rules++] = body;
    return 0;
}

static int taken(builder *b, const char *k, const char *body) {
    if (!strcmp(k, "root") || !strcmp(k, "ws")) return 1;
    for (int i = 0; i < N_COMMON; i++)
        if (!strcmp(k, COMMON_NAME[i])) return 1;
    int *slot = map_slot(b, &b->names, k, 0);
    return slot && (!body || !b->body[*slot] || strcmp(b->body[*slot], body));
}

/* A rule named after `name` (a free name, or the same rule if one has this body already);
 * body NULL: a $ref's rule, filled in later. Returns the rule's name. */
static const char *add(builder *b, const char *name, const char *body, const char *where) {
    if (b->failed || (!body && name == NULL)) return NULL;
    size_t n = strlen(name);
    if (n > 48) n = 48;
    char base[64];
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        base[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '-';
    }
    base[n] = 0;
    if (!n) strcpy(base, "r");
    const char *k = sfmt(b, "%s", base);
    int *next = k ? map_slot(b, &b->suffix, k, 1) : NULL;
    if (!next) return NULL;
    if (*next < 1) *next = 1;
    while (k && taken(b, k, body)) k = sfmt(b, "%s-%d", base, (*next)++);
    if (!k) return NULL;
    int *slot = map_slot(b, &b->names, k, 0);
    if (slot) return k; /* the same rule again */
    if (b->n_rules >= OX_SCHEMA_MAX_RULES) {
        UNSUP(b, where, "more than %d rules", OX_SCHEMA_MAX_RULES);
        return NULL;
    }
    if ((body && charge(b, body, where)) || push_rule(b, k, body)) return NULL;
    return k;
}

static const char *common(builder *b, int which) {
    b->used[which] = 1;
    return COMMON_NAME[which];
}

/* ---- literals ---- */

/* s[0, n) as a GBNF string literal */
static void gbnf_lit(ox_strbuf *sb, const char *s, size_t n) {
    ox_sb_append(sb, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') ox_sb_printf(sb, "\\%c", c);
        else if (c == '\n') ox_sb_append(sb, "\\n", 2);
        else if (c == '\r') ox_sb_append(sb, "\\r", 2);
        else if (c == '\t') ox_sb_append(sb, "\\t", 2);
        else if (c < 0x20) ox_sb_printf(sb, "\\x%02x", c);
        else ox_sb_append(sb, (const char *)&c, 1);
    }
    ox_sb_append(sb, "\"", 1);
}

static const char *lit(builder *b, const char *s, size_t n) {
    ox_strbuf sb = {0};
    gbnf_lit(&sb, s, n);
    return from_sb(b, &sb);
}

/* a number as JSON.stringify writes it (ECMAScript Number::toString): the shortest digits that
 * read back the same double, in fixed notation for exponents -7 < e < 21 */
static int write_number(builder *b, ox_strbuf *sb, double x, const char *where) {
    if (!isfinite(x)) return UNSUP(b, where, "a number out of the range of doubles");
    if (x == 0) {
        ox_sb_append(sb, "0", 1);
        return 0;
    }
    char buf[40], digits[24];
    for (int p = 0; p <= 16; p++) {
        snprintf(buf, sizeof buf, "%.*e", p, x);
        if (strtod(buf, NULL) == x) break;
    }
    const char *m = buf + (buf[0] == '-');
    char *e = strchr(buf, 'e');
    int k = 0, n = atoi(e + 1) + 1; /* digits d1..dk, value 0.d1..dk x 10^n */
    for (const char *q = m; q < e; q++)
        if (*q != '.') digits[k++] = *q;
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = 0;
    if (x < 0) ox_sb_append(sb, "-", 1);
    if (k <= n && n <= 21) ox_sb_printf(sb, "%s%.*s", digits, n - k, "000000000000000000000");
    else if (0 < n && n <= 21) ox_sb_printf(sb, "%.*s.%s", n, digits, digits + n);
    else if (-6 < n && n <= 0) ox_sb_printf(sb, "0.%.*s%s", -n, "000000", digits);
    else
        ox_sb_printf(sb, "%c%s%s%se%c%d", digits[0], k > 1 ? "." : "", digits + 1, "", n - 1 < 0 ? '-' : '+', abs(n - 1));
    return 0;
}

static int by_key(const void *a, const void *c) {
    const ox_json *x = *(const ox_json *const *)a, *y = *(const ox_json *const *)c;
    size_t nx = ox_json_key_len(x), ny = ox_json_key_len(y);
    int r = memcmp(ox_json_key(x), ox_json_key(y), nx < ny ? nx : ny);
    return r ? r : (nx > ny) - (nx < ny);
}

/* Object members sorted by key (bytes); a key given twice is refused (which one JSON means is
 * up to the reader). *out: malloc'd. */
static int sorted_members(builder *b, const ox_json *obj, const ox_json ***out, const char *where) {
    size_t n = ox_json_len(obj);
    const ox_json **m = malloc((n ? n : 1) * sizeof *m);
    if (!m) return fail(b, OX_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) m[i] = ox_json_at(obj, i);
    qsort(m, n, sizeof *m, by_key);
    for (size_t i = 1; i < n; i++)
        if (!by_key(&m[i - 1], &m[i])) {
            UNSUP(b, where, "key \"%.64s\" given twice", ox_json_key(m[i]));
            free(m);
            return b->failed;
        }
    *out = m;
    return 0;
}

/* a JSON value as text: JSON (g4 0: members in their order) or Gemma 4 notation (sorted keys,
 * strings between <|"|>) */
static int write_value(builder *b, ox_strbuf *sb, const ox_json *v, int g4, const char *where) {
    switch (ox_json_type(v)) {
    case OX_JSON_NULL: ox_sb_append(sb, "null", 4); return 0;
    case OX_JSON_BOOL: ox_sb_printf(sb, "%s", ox_json_bool(v, 0) ? "true" : "false"); return 0;
    case OX_JSON_NUMBER: return write_number(b, sb, ox_json_num(v, 0), where);
    case OX_JSON_STRING:
        if (!g4) ox_sb_json_str(sb, ox_json_str(v), ox_json_len(v));
        else {
            ox_sb_append(sb, "<|\"|>", 5);
            ox_sb_append(sb, ox_json_str(v), ox_json_len(v));
            ox_sb_append(sb, "<|\"|>", 5);
        }
        return 0;
    case OX_JSON_ARRAY:
        ox_sb_append(sb, "[", 1);
        for (size_t i = 0; i < ox_json_len(v); i++) {
            if (i) ox_sb_append(sb, ",", 1);
            if (write_value(b, sb, ox_json_at(v, i), g4, where)) return b->failed;
        }
        ox_sb_append(sb, "]", 1);
        return 0;
    case OX_JSON_OBJECT: {
        const ox_json **m;
        if (sorted_members(b, v, &m, where)) return b->failed;
        ox_sb_append(sb, "{", 1);
        for (size_t i = 0; i < ox_json_len(v); i++) {
            const ox_json *x = g4 ? m[i] : ox_json_at(v, i);
            if (i) ox_sb_append(sb, ",", 1);
            if (g4) ox_sb_append(sb, ox_json_key(x), ox_json_key_len(x));
            else ox_sb_json_str(sb, ox_json_key(x), ox_json_key_len(x));
            ox_sb_append(sb, ":", 1);
            if (write_value(b, sb, x, g4, where)) break;
        }
        free(m);
        ox_sb_append(sb, "}", 1);
        return b->failed;
    }
    default: return UNSUP(b, where, "a value is missing");
    }
}

/* a value as a GBNF literal in the builder's notation */
static const char *literal(builder *b, const ox_json *v, const char *where) {
    ox_strbuf text = {0};
    if (write_value(b, &text, v, b->g4, where) || text.oom) {
        if (text.oom) fail(b, OX_E_NOMEM, NULL, "out of memory");
        ox_sb_free(&text);
        return NULL;
    }
    const char *out = text.len > OX_SCHEMA_MAX_OUTPUT ? NULL : lit(b, text.s ? text.s : "", text.len);
    if (!out) UNSUP(b, where, "a const / enum value longer than %zu bytes", OX_SCHEMA_MAX_OUTPUT);
    ox_sb_free(&text);
    return out;
}

/* ---- notations ---- */

static const char *string_of(builder *b, const char *body) {
    return b->g4 ? sfmt(b, "(\"<|\\\"|>\" %s \"<|\\\"|>\")", body) : sfmt(b, "(\"\\\"\" %s \"\\\"\")", body);
}

static const char *key_of(builder *b, const ox_json *member) {
    if (b->g4) return lit(b, ox_json_key(member), ox_json_key_len(member));
    ox_strbuf text = {0};
    ox_sb_json_str(&text, ox_json_key(member), ox_json_key_len(member));
    const char *out = text.oom ? NULL : lit(b, text.s, text.len);
    if (text.oom) fail(b, OX_E_NOMEM, NULL, "out of memory");
    ox_sb_free(&text);
    return out;
}

static const char *any_key(builder *b) {
    return b->g4 ? "[a-zA-Z_] [a-zA-Z0-9_]{0,63}" : sfmt(b, "\"\\\"\" %s{1,64} \"\\\"\"", common(b, C_JSON_CHAR));
}

/* The name of an extra key (additionalProperties) that is none of the object's named keys, so
 * that a value is never checked against the wrong schema: a trie of the names, one rule per
 * node; at each node a character that leaves the trie (then any tail), one that follows it, or
 * the end where no name ends. Extra names are spelled without escapes (the named ones could
 * otherwise come back escaped), at most 64 characters on the trie, 63 more after leaving it. */
typedef struct {
    const char *s;
    size_t n;
} name_ref;

static int by_name(const void *a, const void *c) {
    const name_ref *x = a, *y = c;
    int r = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return r ? r : (x->n > y->n) - (x->n < y->n);
}

static int key_char_ok(const builder *b, uint32_t cp, int first) {
    if (!b->g4) return cp >= 0x20 && cp != '"' && cp != '\\';
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_' || (!first && cp >= '0' && cp <= '9');
}

static uint32_t next_cp(const char *s, size_t *len) { /* keys are valid UTF-8 (the JSON parser) */
    const unsigned char *u = (const unsigned char *)s;
    *len = u[0] < 0x80 ? 1 : u[0] < 0xe0 ? 2 : u[0] < 0xf0 ? 3 : 4;
    uint32_t cp = *len == 1 ? u[0] : u[0] & (0x7f >> *len);
    for (size_t k = 1; k < *len; k++) cp = cp << 6 | (u[k] & 0x3f);
    return cp;
}

static const char *key_node(builder *b, const name_ref *k, size_t n, size_t off, int depth, const char *tail,
                            const char *where) {
    ox_strbuf alts = {0}, leave = {0};
    int ends = 0;
    const char *open = b->g4 ? "[" : "[^\"\\\\\\x00-\\x1f";
    ox_sb_append(&leave, open, strlen(open));
    for (size_t i = 0; i < n && !b->failed;) {
        if (k[i].n == off) {
            ends = 1, i++;
            continue;
        }
        size_t len, len2;
        uint32_t cp = next_cp(k[i].s + off, &len);
        size_t j = i + 1;
        while (j < n && k[j].n > off && next_cp(k[j].s + off, &len2) == cp) j++;
        if (key_char_ok(b, cp, depth == 0) && depth < 64) {
            if (!b->g4) ox_sb_printf(&leave, "\\U%08X", (unsigned)cp);
            const char *child = key_node(b, k + i, j - i, off + len, depth + 1, tail, where);
            if (child) ox_sb_printf(&alts, "%s[\\U%08X] %s", alts.len ? " | " : "", (unsigned)cp, child);
        }
        i = j;
    }
    if (b->g4) /* the identifier characters that do not follow here */
        for (int c = '0'; c <= 'z'; c++)
            if (key_char_ok(b, (uint32_t)c, depth == 0)) {
                int child = 0;
                for (size_t i = 0; i < n && !child; i++) child = k[i].n > off && (unsigned char)k[i].s[off] == c;
                if (!child) ox_sb_append(&leave, (const char *)&(char){(char)c}, 1);
            }
    ox_sb_append(&leave, "]", 1);
    if (!b->g4 || leave.len > 2) ox_sb_printf(&alts, "%s%s %s", alts.len ? " | " : "", leave.s, tail);
    if (!ends && depth > 0) ox_sb_printf(&alts, "%s\"\"", alts.len ? " | " : "");
    ox_sb_free(&leave);
    const char *body = b->failed ? (ox_sb_free(&alts), NULL) : from_sb(b, &alts);
    return body && *body ? add(b, "xkey", body, where) : NULL;
}

static const char *extra_key(builder *b, const ox_json *props, const char *where) {
    size_t n = ox_json_len(props);
    name_ref *k = malloc(n * sizeof *k);
    if (!k) {
        fail(b, OX_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (name_ref){ox_json_key(ox_json_at(props, i)), ox_json_key_len(ox_json_at(props, i))};
    qsort(k, n, sizeof *k, by_name);
    const char *tail = add(b, "xkey-tail", b->g4 ? "[a-zA-Z0-9_]{0,63}" : "[^\"\\\\\\x00-\\x1f]{0,63}", where);
    const char *root = tail ? key_node(b, k, n, 0, 0, tail, where) : NULL;
    free(k);
    if (!root) return NULL;
    return b->g4 ? root : sfmt(b, "\"\\\"\" %s \"\\\"\"", root);
}

/* ---- the walk ---- */

static const char *visit(builder *b, const ox_json *s, const char *where, const char *name, int depth);

static const ox_json *vget(const view *v, const char *key) {
    if (!strcmp(key, "allOf")) return ox_json_get(v->layer[v->n - 1], "allOf");
    for (int i = v->n - 1; i >= 0; i--) {
        const ox_json *x = ox_json_get(v->layer[i], key);
        if (x) return x;
    }
    return NULL;
}

static int in(const char *k, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i])) return 1;
    return 0;
}
#define IN(k, list) in((k), (list), sizeof(list) / sizeof *(list))

/* an integer keyword (absent: dflt) from 0 to OX_SCHEMA_MAX_REPEAT */
static int count_kw(builder *b, const view *v, const char *kw, int64_t dflt, int64_t *out, const char *where) {
    const ox_json *x = vget(v, kw);
    *out = dflt;
    if (!x) return 0;
    if (!ox_json_int(x, out) || *out < 0) return UNSUP(b, where, "%s must be an integer >= 0", kw);
    if (*out > OX_SCHEMA_MAX_REPEAT)
        return UNSUP(b, where, "%s %lld is above %d", kw, (long long)*out, OX_SCHEMA_MAX_REPEAT);
    return 0;
}

/* a non-empty array keyword of at most OX_SCHEMA_MAX_ALTS entries: its length, or 0 (error set) */
static size_t list_kw(builder *b, const ox_json *x, const char *kw, const char *of, const char *where) {
    size_t n = ox_json_len(x);
    if (ox_json_type(x) != OX_JSON_ARRAY || !n) UNSUP(b, where, "%s must be a non-empty array", kw);
    else if (n > OX_SCHEMA_MAX_ALTS) UNSUP(b, where, "%s of %zu %s (at most %d)", kw, n, of, OX_SCHEMA_MAX_ALTS);
    else return n;
    return 0;
}

static const char *any_value(builder *b, const char *where, int only_object);

static const char *string_schema(builder *b, const view *v, const char *where) {
    const ox_json *f = vget(v, "format");
    if (f) {
        const char *fs = ox_json_str(f);
        const char *body = NULL;
        if (fs && !strcmp(fs, "date")) body = common(b, C_DATE);
        else if (fs && !strcmp(fs, "time")) body = common(b, C_TIME);
        else if (fs && !strcmp(fs, "uuid")) body = common(b, C_UUID);
        else if (fs && !strcmp(fs, "date-time")) body = sfmt(b, "%s \"T\" %s", common(b, C_DATE), common(b, C_TIME));
        else {
            UNSUP(b, where, "string format \"%.64s\" (date, time, date-time, uuid)", fs ? fs : "(not a string)");
            return NULL;
        }
        return body ? string_of(b, body) : NULL;
    }
    int64_t lo, hi;
    if (count_kw(b, v, "minLength", 0, &lo, where) || count_kw(b, v, "maxLength", -1, &hi, where)) return NULL;
    if (hi >= 0 && hi < lo) {
        UNSUP(b, where, "minLength %lld is above maxLength %lld", (long long)lo, (long long)hi);
        return NULL;
    }
    const char *ch = common(b, hi < 0 ? (b->g4 ? C_G4_CHAR : C_JSON_CHAR) : (b->g4 ? C_G4_CHAR1 : C_JSON_CHAR));
    /* Gemma 4: `<`s may end a string (the close follows them); inside, `<` never precedes `|` */
    const char *tail = b->g4 && hi < 0 ? " \"<\"*" : "";
    const char *body = hi >= 0 ? sfmt(b, "%s{%lld,%lld}", ch, (long long)lo, (long long)hi)
                       : lo    ? sfmt(b, "%s{%lld,}%s", ch, (long long)lo, tail)
                               : sfmt(b, "%s*%s", ch, tail);
    return body ? string_of(b, body) : NULL;
}

static const char *array_schema(builder *b, const view *v, const char *where, int depth) {
    int64_t lo, hi;
    if (count_kw(b, v, "minItems", 0, &lo, where) || count_kw(b, v, "maxItems", -1, &hi, where)) return NULL;
    if (hi >= 0 && hi < lo) {
        UNSUP(b, where, "minItems %lld is above maxItems %lld", (long long)lo, (long long)hi);
        return NULL;
    }
    const ox_json *prefix = vget(v, "prefixItems"), *items = vget(v, "items");
    if (prefix) {
        size_t n = list_kw(b, prefix, "prefixItems", "schemas", where);
        if (!n) return NULL;
        if (items && !(ox_json_type(items) == OX_JSON_BOOL && !ox_json_bool(items, 1))) {
            UNSUP(b, where, "prefixItems with items");
            return NULL;
        }
        ox_strbuf sb = {0};
        ox_sb_append(&sb, "(\"[\" ws ", 8);
        for (size_t i = 0; i < n; i++) {
            const char *it = visit(b, ox_json_at(prefix, i), sfmt(b, "%s/prefixItems/%zu", where, i), NULL, depth + 1);
            if (!it) {
                ox_sb_free(&sb);
                return NULL;
            }
            ox_sb_printf(&sb, "%s%s", i ? " ws \",\" ws " : "", it);
        }
        ox_sb_append(&sb, " ws \"]\")", 8);
        return from_sb(b, &sb);
    }
    if (hi == 0) return "(\"[\" ws \"]\")";
    const char *item = visit(b, items, sfmt(b, "%s/items", where), NULL, depth + 1);
    if (!item) return NULL;
    long long rlo = lo > 0 ? lo - 1 : 0;
    const char *rest = hi < 0 ? sfmt(b, "(\",\" ws %s){%lld,}", item, rlo)
                              : sfmt(b, "(\",\" ws %s){%lld,%lld}", item, rlo, (long long)(hi > 0 ? hi - 1 : 0));
    if (!rest) return NULL;
    return lo > 0 ? sfmt(b, "(\"[\" ws %s ws %s ws \"]\")", item, rest)
                  : sfmt(b, "(\"[\" ws (%s ws %s)? ws \"]\")", item, rest);
}

/* one object: named keys in their order (required always, optional optionally), then extra
 * keys where additionalProperties allows them */
static const char *object_schema(builder *b, const view *v, const char *where, int depth) {
    const ox_json *props = vget(v, "properties"), *req = vget(v, "required"), *extra_s = vget(v, "additionalProperties");
    if (props && ox_json_type(props) != OX_JSON_OBJECT) {
        UNSUP(b, where, "properties must be an object");
        return NULL;
    }
    if (req && ox_json_type(req) != OX_JSON_ARRAY) {
        UNSUP(b, where, "required must be an array of names");
        return NULL;
    }
    size_t n = ox_json_len(props);
    if (n > OX_SCHEMA_MAX_PROPS) {
        UNSUP(b, where, "properties: %zu of them (at most %d)", n, OX_SCHEMA_MAX_PROPS);
        return NULL;
    }
    const ox_json **sorted;
    if (sorted_members(b, props, &sorted, where)) return NULL;
    free(sorted);
    for (size_t i = 0; i < ox_json_len(req); i++) {
        const ox_json *r = ox_json_at(req, i);
        if (!ox_json_str(r) || !ox_json_get(props, ox_json_str(r)) || strlen(ox_json_str(r)) != ox_json_len(r)) {
            UNSUP(b, where, "required \"%.64s\" is not in properties",
                  ox_json_str(r) ? ox_json_str(r) : "(not a string)");
            return NULL;
        }
    }
    int extra_false = ox_json_type(extra_s) == OX_JSON_BOOL && !ox_json_bool(extra_s, 1);
    if (!n && !extra_s) return any_value(b, where, 1);
    if (!n && extra_false) return "(\"{\" ws \"}\")";
    const char *extra = NULL, *more = "";
    if (extra_s && !extra_false) {
        const ox_json *es = ox_json_type(extra_s) == OX_JSON_BOOL ? NULL : extra_s;
        const char *val = visit(b, es, sfmt(b, "%s/additionalProperties", where), NULL, depth + 1);
        const char *name = !val ? NULL : n ? extra_key(b, props, where) : any_key(b);
        extra = name ? sfmt(b, "%s ws \":\" ws %s", name, val) : NULL;
        more = extra ? sfmt(b, " (ws \",\" ws %s){0,16}", extra) : NULL;
        if (!more) return NULL;
    }
    const char **pair = calloc(n + 1, sizeof *pair), **rest = calloc(n + 1, sizeof *rest);
    char *required = calloc(n + 1, 1);
    const char *out = NULL;
    if (!pair || !rest || !required) {
        fail(b, OX_E_NOMEM, NULL, "out of memory");
        goto done;
    }
    size_t first_req = n;
    for (size_t i = 0; i < n; i++) {
        const ox_json *m = ox_json_at(props, i);
        for (size_t j = 0; j < ox_json_len(req) && !required[i]; j++)
            required[i] = ox_json_key_len(m) == ox_json_len(ox_json_at(req, j)) &&
                          !memcmp(ox_json_key(m), ox_json_str(ox_json_at(req, j)), ox_json_key_len(m));
        if (required[i] && first_req == n) first_req = i;
        const char *val = visit(b, m, sfmt(b, "%s/properties/%s", where, ox_json_key(m)), NULL, depth + 1);
        const char *key = val ? key_of(b, m) : NULL;
        if (!key || !(pair[i] = sfmt(b, "%s ws \":\" ws %s", key, val))) goto done;
    }
    /* rest[i]: the keys from i on, after some key was written (each behind a comma) */
    rest[n] = more;
    const char *rname = sfmt(b, "%s-rest", strrchr(where, '/') ? strrchr(where, '/') + 1 : "value");
    for (size_t i = n; rname && i-- > 1;) {
        const char *one = required[i] ? sfmt(b, "ws \",\" ws %s", pair[i]) : sfmt(b, "(ws \",\" ws %s)?", pair[i]);
        const char *body = one ? sfmt(b, "%s%s%s", one, *rest[i + 1] ? " " : "", rest[i + 1]) : NULL;
        if (!body || !(rest[i] = add(b, sfmt(b, "%s-%zu", rname, i), body, where))) goto done;
    }
    /* the first key written: any optional one up to the first required one, or that one */
    ox_strbuf alts = {0};
    for (size_t j = 0; j < n && j <= first_req; j++)
        ox_sb_printf(&alts, "%s%s%s%s", j ? " | " : "", pair[j], *rest[j + 1] ? " " : "", rest[j + 1]);
    if (extra && first_req == n) ox_sb_printf(&alts, "%s%s%s", n ? " | " : "", extra, more);
    const char *a = from_sb(b, &alts);
    if (a) out = sfmt(b, "(\"{\" ws (%s)%s ws \"}\")", a, first_req == n ? "?" : "");
done:
    free(pair), free(rest), free(required);
    return out;
}

/* any JSON value (an unconstrained schema), nested at most two deep so that a sampler cannot
 * recurse without end */
static const char *any_value(builder *b, const char *where, int only_object) {
    const char *key = any_key(b);
    const char *s0 = string_schema(b, &(view){{NULL}, 1}, where);
    const char *v0 =
        s0 ? add(b, "any-0",
                 sfmt(b, "%s | %s | %s | %s", s0, common(b, C_NUMBER), common(b, C_BOOLEAN), common(b, C_NULL)), where)
           : NULL;
#define OBJ(v) sfmt(b, "\"{\" ws (%s ws \":\" ws %s (\",\" ws %s ws \":\" ws %s){0,16})? ws \"}\"", key, v, key, v)
#define ARR(v) sfmt(b, "\"[\" ws (%s (\",\" ws %s){0,16})? ws \"]\"", v, v)
    const char *v1 = v0 ? add(b, "any-1", sfmt(b, "%s | %s | %s", v0, OBJ(v0), ARR(v0)), where) : NULL;
    if (!v1) return NULL;
    if (only_object) return add(b, "any-object", OBJ(v1), where);
    return add(b, "any", sfmt(b, "%s | %s | %s", v1, OBJ(v1), ARR(v1)), where);
#undef OBJ
#undef ARR
}

static const char *typed(builder *b, const char *t, const view *v, const char *where, int depth) {
    if (!strcmp(t, "string")) return string_schema(b, v, where);
    if (!strcmp(t, "integer")) return common(b, C_INTEGER);
    if (!strcmp(t, "number")) return common(b, C_NUMBER);
    if (!strcmp(t, "boolean")) return common(b, C_BOOLEAN);
    if (!strcmp(t, "null")) return common(b, C_NULL);
    if (!strcmp(t, "object")) return object_schema(b, v, where, depth);
    if (!strcmp(t, "array")) return array_schema(b, v, where, depth);
    UNSUP(b, where, "type \"%.64s\"", t);
    return NULL;
}

/* 1 when s[0, n) is well-formed UTF-8 (shortest forms, no surrogates), as every JSON key is */
static int utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n) return 0;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t MIN[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < MIN[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

/* #/$defs/NAME or #/definitions/NAME, NAME percent-decoded, of the schema being converted */
static const ox_json *resolve(builder *b, const char *ref, size_t n, const char *where) {
    const char *defs = !strncmp(ref, "#/$defs/", 8)          ? "$defs"
                       : !strncmp(ref, "#/definitions/", 14) ? "definitions"
                                                             : NULL;
    const char *p = defs ? ref + strlen(defs) + 3 : NULL;
    if (!p || !*p || strlen(ref) != n) {
        UNSUP(b, where, "$ref \"%.64s\" (only #/$defs/... and #/definitions/... of this schema)", ref);
        return NULL;
    }
    char *key = malloc(strlen(p) + 1);
    if (!key) {
        fail(b, OX_E_NOMEM, NULL, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (; *p; p++) {
        if (*p != '%') {
            key[k++] = *p;
            continue;
        }
        int hi = -1, lo = -1;
        for (int d = 1; d <= 2 && p[d]; d++) {
            char c = p[d];
            int x = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d == 1) hi = x;
            else lo = x;
        }
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) break;
        key[k++] = (char)(hi * 16 + lo);
        p += 2;
    }
    key[k] = 0;
    const ox_json *target = NULL;
    if (*p || !utf8_ok((const unsigned char *)key, k)) UNSUP(b, where, "$ref \"%.64s\": bad percent-encoding", ref);
    else {
        /* a member of the object itself (a JSON object has no inherited keys), by exact bytes */
        const ox_json *d = ox_json_get(b->root, defs);
        for (size_t i = 0; i < ox_json_len(d) && ox_json_type(d) == OX_JSON_OBJECT; i++) {
            const ox_json *m = ox_json_at(d, i);
            if (ox_json_key_len(m) == k && !memcmp(ox_json_key(m), key, k)) target = m;
        }
        if (!target) UNSUP(b, where, "$ref \"%.64s\" names no entry of %s", ref, defs);
    }
    free(key);
    return target;
}

static const char *visit_ref(builder *b, const ox_json *ref, const char *where, int depth) {
    const char *r = ox_json_str(ref);
    if (!r) {
        UNSUP(b, where, "$ref must be a string");
        return NULL;
    }
    const char *rkey = sfmt(b, "%s", r); /* the map keeps pool strings */
    int *slot = rkey ? map_slot(b, &b->refs, rkey, 0) : NULL;
    if (slot) return b->name[*slot];
    const ox_json *target = rkey ? resolve(b, r, ox_json_len(ref), where) : NULL;
    const char *last = strrchr(r, '/');
    const char *rule = target ? add(b, sfmt(b, "ref-%s", last ? last + 1 : r), NULL, where) : NULL;
    if (!rule || !(slot = map_slot(b, &b->refs, rkey, 1))) return NULL;
    int idx = *map_slot(b, &b->names, rule, 0);
    *slot = idx;
    const char *body = visit(b, target, r, rule, depth + 1);
    if (!body || charge(b, body, where)) return NULL;
    b->body[idx] = body;
    return rule;
}

/* type (one or a list; absent: inferred from the keywords present) -> alternatives */
static const char *typed_body(builder *b, const view *v, const char *where, int depth) {
    static const char *const ALL[] = {"string", "number", "boolean", "null", "object", "array"};
    const ox_json *t = vget(v, "type");
    const char *one[1];
    const char *const *types = ALL;
    size_t n = 6;
    if (ox_json_type(t) == OX_JSON_STRING) one[0] = ox_json_str(t), types = one, n = 1;
    else if (ox_json_type(t) == OX_JSON_ARRAY) n = ox_json_len(t);
    else if (t) {
        UNSUP(b, where, "type must be a name or a list of names");
        return NULL;
    } else if (vget(v, "properties") || vget(v, "additionalProperties") || vget(v, "required"))
        one[0] = "object", types = one, n = 1;
    else if (vget(v, "items") || vget(v, "prefixItems")) one[0] = "array", types = one, n = 1;
    else if (vget(v, "minLength") || vget(v, "maxLength") || vget(v, "format")) one[0] = "string", types = one, n = 1;
    if (!n || n > 16) {
        UNSUP(b, where, "type must list 1 to 16 names");
        return NULL;
    }
    ox_strbuf sb = {0};
    for (size_t i = 0; i < n; i++) {
        const char *name = ox_json_type(t) == OX_JSON_ARRAY ? ox_json_str(ox_json_at(t, i)) : types[i];
        const char *alt = name ? typed(b, name, v, where, depth) : NULL;
        if (!alt) {
            if (!name) UNSUP(b, where, "type must be a name or a list of names");
            ox_sb_free(&sb);
            return NULL;
        }
        ox_sb_printf(&sb, "%s%s", i ? " | " : "", alt);
    }
    return from_sb(b, &sb);
}

static const char *visit_view(builder *b, view *v, const char *where, const char *name, int depth) {
    if (depth > OX_SCHEMA_MAX_DEPTH) {
        UNSUP(b, where, "schemas nested more than %d deep", OX_SCHEMA_MAX_DEPTH);
        return NULL;
    }
    int constrains = v->n > 1;
    for (int l = 0; l < v->n; l++)
        for (size_t i = 0; i < ox_json_len(v->layer[l]); i++) {
            const char *k = ox_json_key(ox_json_at(v->layer[l], i));
            if (IN(k, IGNORED)) continue;
            if (!IN(k, HANDLED)) {
                UNSUP(b, where, "keyword \"%.64s\"", k);
                return NULL;
            }
            constrains = 1;
        }
    if (!constrains) return any_value(b, where, 0);
    const ox_json *ref = vget(v, "$ref"), *all = vget(v, "allOf");
    if (ref) return visit_ref(b, ref, where, depth);
    if (all) {
        if (ox_json_type(all) != OX_JSON_ARRAY || ox_json_len(all) != 1) {
            UNSUP(b, where, "allOf of more than one schema");
            return NULL;
        }
        const ox_json *one = ox_json_at(all, 0);
        if (ox_json_type(one) == OX_JSON_BOOL && !ox_json_bool(one, 1)) {
            UNSUP(b, where, "false (nothing is valid)");
            return NULL;
        }
        if (v->n == MAX_LAYERS) {
            UNSUP(b, where, "allOf nested more than %d deep", MAX_LAYERS - 1);
            return NULL;
        }
        if (ox_json_type(one) == OX_JSON_BOOL) one = NULL; /* true adds nothing (and hides allOf) */
        else if (ox_json_type(one) != OX_JSON_OBJECT) {
            UNSUP(b, where, "allOf/0: a schema must be an object or a boolean");
            return NULL;
        }
        view w = *v;
        w.layer[w.n++] = one;
        return visit_view(b, &w, where, name, depth + 1);
    }
    const char *body = NULL;
    const ox_json *cst = vget(v, "const");
    const ox_json *en = vget(v, "enum"), *alts = vget(v, "anyOf");
    const char *alts_kw = "anyOf";
    if (!alts && (alts = vget(v, "oneOf"))) alts_kw = "oneOf";
    if (cst) body = literal(b, cst, where);
    else if (en) {
        size_t n = list_kw(b, en, "enum", "values", where);
        if (!n) return NULL;
        ox_strbuf sb = {0};
        for (size_t i = 0; i < n; i++) {
            const char *l = literal(b, ox_json_at(en, i), where);
            if (!l) break;
            ox_sb_printf(&sb, "%s%s", i ? " | " : "", l);
        }
        body = b->failed ? (ox_sb_free(&sb), NULL) : from_sb(b, &sb);
    } else if (alts) {
        size_t n = list_kw(b, alts, alts_kw, "schemas", where);
        if (!n) return NULL;
        ox_strbuf sb = {0};
        for (size_t i = 0; i < n; i++) {
            const char *a = visit(b, ox_json_at(alts, i), sfmt(b, "%s/%s/%zu", where, alts_kw, i), NULL, depth + 1);
            if (!a) break;
            ox_sb_printf(&sb, "%s%s", i ? " | " : "", a);
        }
        body = b->failed ? (ox_sb_free(&sb), NULL) : from_sb(b, &sb);
    } else body = typed_body(b, v, where, depth);
    if (body && vget(v, "nullable") && ox_json_bool(vget(v, "nullable"), 1))
        body = sfmt(b, "%s | %s", body, common(b, C_NULL));
    if (!body || name) return body;
    const char *slash = strrchr(where, '/');
    const char *rn = slash ? slash + 1 : where;
    return add(b, *rn ? rn : "value", body, where);
}

/* the rule (or, with name: the body of rule `name`) for one schema */
static const char *visit(builder *b, const ox_json *s, const char *where, const char *name, int depth) {
    if (!where || b->failed) return NULL;
    if (!s || (ox_json_type(s) == OX_JSON_BOOL && ox_json_bool(s, 0))) return any_value(b, where, 0);
    if (ox_json_type(s) == OX_JSON_BOOL) {
        UNSUP(b, where, "false (nothing is valid)");
        return NULL;
    }
    if (ox_json_type(s) != OX_JSON_OBJECT) {
        UNSUP(b, where, "a schema must be an object or a boolean");
        return NULL;
    }
    const ox_json **sorted; /* refuse a keyword given twice */
    if (sorted_members(b, s, &sorted, where)) return NULL;
    free(sorted);
    view v = {{s}, 1};
    return visit_view(b, &v, where, name, depth);
}

/* root, ws, the rules in order, then the common rules used */
static char *grammar_text(builder *b, const char *root, size_t *out_len) {
    if (!root || b->failed) return NULL;
    if (b->used[C_DATE] || b->used[C_TIME]) b->used[C_DATE] = b->used[C_TIME] = 1;
    ox_strbuf sb = {0};
    ox_sb_printf(&sb, "root ::= %s\nws ::= %s\n", root, b->g4 ? "\"\"" : JSON_WS);
    for (int i = 0; i < b->n_rules; i++) ox_sb_printf(&sb, "%s ::= %s\n", b->name[i], b->body[i]);
    for (int i = 0; i < N_COMMON; i++)
        if (b->used[i]) ox_sb_printf(&sb, "%s ::= %s\n", COMMON_NAME[i], COMMON_BODY[i]);
    if (sb.oom) fail(b, OX_E_NOMEM, NULL, "out of memory");
    else if (sb.len > OX_SCHEMA_MAX_OUTPUT)
        UNSUP(b, NULL, "the grammar would be longer than %zu bytes", OX_SCHEMA_MAX_OUTPUT);
    if (b->failed) {
        ox_sb_free(&sb);
        return NULL;
    }
    if (out_len) *out_len = sb.len;
    return sb.s;
}

/* NAME{arguments}<tool_call|> for each tool (tools[0] without its name with AFTER_NAME), and
 * with PARALLEL up to 8 more whole calls */
static const char *tool_calls(builder *b, const ox_json *tools, int mode) {
    size_t n = ox_json_len(tools);
    if (ox_json_type(tools) != OX_JSON_ARRAY || !n) {
        UNSUP(b, "tools", "must be a non-empty array of {function: {name, parameters}}");
        return NULL;
    }
    if (n > OX_SCHEMA_MAX_TOOLS) {
        UNSUP(b, "tools", "%zu of them (at most %d)", n, OX_SCHEMA_MAX_TOOLS);
        return NULL;
    }
    static const char DFLT[] = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
    static const char OBJ[] = "{\"type\":\"object\"}";
    ox_err perr;
    ox_json *dflt = ox_json_parse(DFLT, sizeof DFLT - 1, "tools", &perr);
    ox_json *obj = ox_json_parse(OBJ, sizeof OBJ - 1, "tools", &perr);
    ox_strbuf first = {0}, again = {0};
    if (!dflt || !obj) fail(b, OX_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n && !b->failed; i++) {
        const ox_json *f = ox_json_get(ox_json_at(tools, i), "function");
        const ox_json *name = ox_json_get(f, "name"), *params = ox_json_get(f, "parameters");
        const char *where = sfmt(b, "tools/%zu", i);
        if (!ox_json_str(name) || strlen(ox_json_str(name)) != ox_json_len(name)) {
            UNSUP(b, where, "function.name must be a string");
            break;
        }
        if (params && ox_json_type(params) != OX_JSON_OBJECT) {
            UNSUP(b, where, "function.parameters must be a JSON schema object");
            break;
        }
        where = sfmt(b, "tools/%s", ox_json_str(name));
        /* arguments: an object under the parameters ({type: object, ...parameters}) */
        b->root = params;
        map_free(&b->refs); /* each tool's $refs resolve in its own parameters */
        const ox_json **sorted;
        if (params && sorted_members(b, params, &sorted, where)) break;
        if (params) free(sorted);
        view v = {{obj, params ? params : dflt}, 2};
        const char *args = where ? visit_view(b, &v, where, NULL, 0) : NULL;
        const char *nl = args ? lit(b, ox_json_str(name), ox_json_len(name)) : NULL;
        if (!nl) break;
        if (mode & OX_SCHEMA_AFTER_NAME) {
            if (!i) ox_sb_printf(&first, "%s", args);
        } else ox_sb_printf(&first, "%s%s %s", i ? " | " : "(", nl, args);
        ox_sb_printf(&again, "%s\"<|tool_call>call:\" %s %s \"<tool_call|>\"", i ? " | " : "", nl, args);
    }
    ox_json_free(dflt);
    ox_json_free(obj);
    if (!(mode & OX_SCHEMA_AFTER_NAME)) ox_sb_append(&first, ")", 1);
    const char *a = from_sb(b, &first), *g = from_sb(b, &again);
    if (!a || !g) return NULL;
    return (mode & OX_SCHEMA_PARALLEL) ? sfmt(b, "%s \"<tool_call|>\" (%s){0,8}", a, g)
                                       : sfmt(b, "%s \"<tool_call|>\"", a);
}

int ox_json_schema_grammar(const char *json, size_t len, int mode, char **out, size_t *out_len, ox_err *err) {
    *out = NULL;
    if (out_len) *out_len = 0;
    int notation = mode & 0xf;
    if (notation >= OX_SCHEMA_NOTATIONS || (mode & ~0x3f) || (notation != OX_SCHEMA_TOOL_CALLS && (mode & 0x30)))
        return ox_errf(err, OX_E_RANGE, "JSON schema: mode %d is not a notation with its flags", mode);
    if (len > OX_SCHEMA_MAX_INPUT)
        return ox_errf(err, OX_E_UNSUPPORTED, "JSON schema: %zu bytes (at most %zu)", len, OX_SCHEMA_MAX_INPUT);
    ox_json *doc = ox_json_parse(json, len, "JSON schema", err);
    if (!doc) return err ? err->code : OX_E_FORMAT;
    builder b = {.g4 = notation != OX_SCHEMA_JSON, .root = doc, .err = err};
    const char *root;
    if (notation == OX_SCHEMA_TOOL_CALLS) root = tool_calls(&b, doc, mode);
    else {
        const char *v = visit(&b, doc, "", NULL, 0);
        root = !v ? NULL : b.g4 ? v : sfmt(&b, "ws %s ws", v);
    }
    if (root) charge(&b, root, "");
    for (int i = 0; i < N_COMMON; i++)
        if (b.used[i]) charge(&b, COMMON_BODY[i], "");
    *out = grammar_text(&b, root, out_len);
    int rc = *out ? 0 : b.failed ? b.failed : OX_E_NOMEM;
    if (rc == OX_E_NOMEM && !b.failed) ox_errf(err, rc, "JSON schema: out of memory");
    for (size_t i = 0; i < b.n_pool; i++) free(b.pool[i]);
    free(b.pool);
    free(b.name), free(b.body);
    map_free(&b.names), map_free(&b.refs), map_free(&b.suffix);
    ox_json_free(doc);
    return rc;
}
