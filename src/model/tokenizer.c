/* tokenizer.c — see tokenizer.h. One vocabulary (pieces, scores, types), a hash map
 * piece -> id, a hash map (left id, right id) -> (rank, merged id), a byte trie of the
 * tokens matched before BPE, and the encoder: symbols in a linked list, candidate pairs in
 * a binary heap with lazy invalidation. */
#include "model/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "host/hostfile.h"
#include "formats/json.h"
#include "formats/tensors.h"

#define MAX_VOCAB (1 << 24) /* bound on ids read from files */
#define SPACE_MARK "\xE2\x96\x81" /* U+2581 "▁" */

typedef struct { uint32_t off, len; float score; uint8_t type; } tok_info;
typedef struct { int32_t child, sibling, id; uint8_t byte, special; } trie_node;
typedef struct { uint64_t key; uint32_t rank; int32_t res; } merge_slot;
#define MERGE_EMPTY UINT64_MAX

enum { MODE_BPE, MODE_SPM };
enum { PREFIX_NONE, PREFIX_FIRST, PREFIX_EVERY };

struct ox_tokenizer {
    int n_vocab;
    tok_info *tok;
    char *text;                 /* all pieces, back to back */
    size_t text_len, text_cap;
    int32_t *map;               /* piece -> id, open addressing, -1 = empty */
    uint32_t map_mask;
    merge_slot *merges;
    uint32_t merge_mask;
    int mode;                   /* MODE_BPE: merge ranks; MODE_SPM: piece scores */
    int split_newlines;         /* GGUF gemma4: runs of '\n' vs the rest */
    int prefix;                 /* dummy "▁" prefix: none / first piece / every piece */
    int byte_fallback, fuse_unk;
    int32_t byte_id[256];       /* <0xXX> ids, -1 if absent */
    int bos, eos, unk;
    trie_node *trie;
    int n_trie, trie_cap;
    int32_t trie_root[256];     /* first node per first byte, -1 = no token starts so */
};

/* ---- building ---- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint32_t pow2_at_least(uint64_t n) {
    uint32_t c = 16;
    while (c < n && c < (1u << 31)) c <<= 1;
    return c;
}

static ox_tokenizer *tok_new(int n_vocab, ox_err *err) {
    ox_tokenizer *t = calloc(1, sizeof *t);
    if (!t) goto nomem;
    t->n_vocab = n_vocab;
    t->tok = calloc((size_t)n_vocab, sizeof *t->tok);
    t->map_mask = pow2_at_least((uint64_t)n_vocab * 2 + 16) - 1;
    t->map = malloc(((size_t)t->map_mask + 1) * sizeof *t->map);
    if (!t->tok || !t->map) goto nomem;
    memset(t->map, 0xff, ((size_t)t->map_mask + 1) * sizeof *t->map);
    for (int i = 0; i < n_vocab; i++) t->tok[i].type = OX_TOKEN_UNUSED;
    for (int i = 0; i < 256; i++) t->byte_id[i] = -1, t->trie_root[i] = -1;
    t->bos = t->eos = t->unk = -1;
    return t;
nomem:
    ox_tokenizer_free(t);
    ox_errf(err, OX_E_NOMEM, "out of memory for a tokenizer of %d tokens", n_vocab);
    return NULL;
}

void ox_tokenizer_free(ox_tokenizer *t) {
    if (!t) return;
    free(t->tok);
    free(t->text);
    free(t->map);
    free(t->merges);
    free(t->trie);
    free(t);
}

static int map_find_n(const ox_tokenizer *t, const char *s, size_t n) {
    uint32_t i = (uint32_t)hash_bytes(s, n) & t->map_mask;
    for (;; i = (i + 1) & t->map_mask) {
        int32_t id = t->map[i];
        if (id < 0) return -1;
        const tok_info *k = &t->tok[id];
        if (k->len == n && memcmp(t->text + k->off, s, n) == 0) return id;
    }
}

/* Map s -> id; a piece seen again maps to the later id (llama.cpp and JSON.parse agree). */
static void map_put(ox_tokenizer *t, int id) {
    const tok_info *k = &t->tok[id];
    const char *s = t->text + k->off;
    uint32_t i = (uint32_t)hash_bytes(s, k->len) & t->map_mask;
    for (;; i = (i + 1) & t->map_mask) {
        int32_t o = t->map[i];
        if (o < 0 || (t->tok[o].len == k->len && memcmp(t->text + t->tok[o].off, s, k->len) == 0)) {
            t->map[i] = id;
            return;
        }
    }
}

/* Give id its piece text (the map is at most half full: n_vocab pieces, 2*n_vocab slots;
 * a re-set id leaves its old text mapped to it, as HF does for added tokens). */
static int set_piece(ox_tokenizer *t, int id, const char *s, size_t n, float score, int type, ox_err *err) {
    if (n > UINT32_MAX / 2) return ox_errf(err, OX_E_FORMAT, "token %d: piece of %zu bytes is too long", id, n);
    if (t->text_len + n > t->text_cap) {
        size_t cap = t->text_cap ? t->text_cap * 2 : 1 << 16;
        while (cap < t->text_len + n) cap *= 2;
        char *p = realloc(t->text, cap);
        if (!p) return ox_errf(err, OX_E_NOMEM, "out of memory for token text (%zu bytes)", cap);
        t->text = p, t->text_cap = cap;
    }
    memcpy(t->text + t->text_len, s, n);
    t->tok[id] = (tok_info){(uint32_t)t->text_len, (uint32_t)n, score, (uint8_t)type};
    t->text_len += n;
    if (n) map_put(t, id);
    return 0;
}

static int trie_add(ox_tokenizer *t, int id, int special, ox_err *err) {
    const tok_info *k = &t->tok[id];
    const uint8_t *s = (const uint8_t *)t->text + k->off;
    if (!k->len) return 0;
    int32_t *link = &t->trie_root[s[0]];
    int32_t node = -1;
    for (uint32_t i = 0; i < k->len; i++) {
        node = *link;
        while (node >= 0 && t->trie[node].byte != s[i]) node = t->trie[node].sibling;
        if (node < 0) {
            if (t->n_trie == t->trie_cap) {
                int cap = t->trie_cap ? t->trie_cap * 2 : 1024;
                trie_node *p = realloc(t->trie, (size_t)cap * sizeof *p);
                if (!p) return ox_errf(err, OX_E_NOMEM, "out of memory for the added-token trie");
                t->trie = p, t->trie_cap = cap;
            }
            node = t->n_trie++;
            /* the root list is per first byte, so the root node's byte repeats it */
            t->trie[node] = (trie_node){-1, i ? *link : -1, -1, s[i], 0};
            *link = node;
        }
        link = &t->trie[node].child;
    }
    t->trie[node].id = id;
    t->trie[node].special = (uint8_t)special;
    return 0;
}

static int merges_init(ox_tokenizer *t, uint64_t n, ox_err *err) {
    t->merge_mask = pow2_at_least(n * 2 + 16) - 1;
    t->merges = malloc(((size_t)t->merge_mask + 1) * sizeof *t->merges);
    if (!t->merges) return ox_errf(err, OX_E_NOMEM, "out of memory for %llu merges", (unsigned long long)n);
    for (size_t i = 0; i <= t->merge_mask; i++) t->merges[i].key = MERGE_EMPTY;
    return 0;
}

static uint32_t merge_hash(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static const merge_slot *merge_find(const ox_tokenizer *t, int a, int b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint32_t i = merge_hash(key, t->merge_mask);; i = (i + 1) & t->merge_mask) {
        const merge_slot *m = &t->merges[i];
        if (m->key == key) return m;
        if (m->key == MERGE_EMPTY) return NULL;
    }
}

/* Add merge "a b" with this rank; a repeated pair keeps the later rank (as HF's map does).
 * Pairs naming unknown pieces, or whose concatenation is no piece, can never apply: skipped. */
static void merge_add(ox_tokenizer *t, const char *a, size_t na, const char *b, size_t nb, uint32_t rank,
                      char *buf) {
    int ia = map_find_n(t, a, na), ib = map_find_n(t, b, nb);
    if (ia < 0 || ib < 0) return;
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    int res = map_find_n(t, buf, na + nb);
    if (res < 0) return;
    uint64_t key = (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib;
    uint32_t i = merge_hash(key, t->merge_mask);
    while (t->merges[i].key != MERGE_EMPTY && t->merges[i].key != key) i = (i + 1) & t->merge_mask;
    t->merges[i] = (merge_slot){key, rank, res};
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "<0xXX>" -> XX, else -1 */
static int byte_piece(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int hi = hexval(s[3]), lo = hexval(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* After all pieces: byte-token table, the trie of pre-matched tokens. */
static int finish(ox_tokenizer *t, ox_err *err) {
    for (int id = 0; id < t->n_vocab; id++) {
        const tok_info *k = &t->tok[id];
        const char *s = t->text + k->off;
        int b = byte_piece(s, k->len);
        /* llama.cpp finds byte-fallback tokens by their text whatever their type (even UNUSED) */
        if (b >= 0 && (k->type == OX_TOKEN_BYTE || k->type == OX_TOKEN_NORMAL || k->type == OX_TOKEN_UNUSED)) {
            t->tok[id].type = OX_TOKEN_BYTE;
            if (t->byte_id[b] < 0) t->byte_id[b] = id;
        }
        if (k->type == OX_TOKEN_USER_DEFINED || k->type == OX_TOKEN_CONTROL || k->type == OX_TOKEN_UNKNOWN) {
            int rc = trie_add(t, id, k->type != OX_TOKEN_USER_DEFINED, err);
            if (rc) return rc;
        }
    }
    if (t->unk >= t->n_vocab) t->unk = -1;
    if (t->bos >= t->n_vocab) t->bos = -1;
    if (t->eos >= t->n_vocab) t->eos = -1;
    return 0;
}

/* ---- GGUF ---- */

ox_tokenizer *ox_tokenizer_from_gguf(const ox_gguf *g, ox_err *err) {
    const char *fname = ox_gguf_name(g), *model = NULL;
    const ox_gguf_value *toks, *scores = NULL, *types = NULL, *merges = NULL;
    if (ox_gguf_get_str(g, "tokenizer.ggml.model", &model, err)) return NULL;
    int spm = strcmp(model, "llama") == 0 || strcmp(model, "gemma") == 0;
    if (!spm && strcmp(model, "gemma4") != 0) {
        ox_errf(err, OX_E_UNSUPPORTED, "%s: tokenizer model \"%s\" is not supported (gemma4, llama, gemma)", fname, model);
        return NULL;
    }
    if (ox_gguf_get_arr(g, "tokenizer.ggml.tokens", &toks, err)) return NULL;
    uint64_t n = toks->v.arr.n;
    if (toks->v.arr.type != OX_GGUF_STRING || n == 0 || n > MAX_VOCAB) {
        ox_errf(err, OX_E_FORMAT, "%s: tokenizer.ggml.tokens must be 1..%d strings (has %llu %s)", fname, MAX_VOCAB,
                (unsigned long long)n, ox_gguf_type_name(toks->v.arr.type));
        return NULL;
    }
    if (ox_gguf_find(g, "tokenizer.ggml.scores") && ox_gguf_get_arr(g, "tokenizer.ggml.scores", &scores, err)) return NULL;
    if (ox_gguf_find(g, "tokenizer.ggml.token_type") && ox_gguf_get_arr(g, "tokenizer.ggml.token_type", &types, err))
        return NULL;
    if (!spm && ox_gguf_find(g, "tokenizer.ggml.merges") && ox_gguf_get_arr(g, "tokenizer.ggml.merges", &merges, err))
        return NULL;
    const char *bad = scores && scores->v.arr.n != n ? "tokenizer.ggml.scores"
                      : types && types->v.arr.n != n ? "tokenizer.ggml.token_type"
                      : merges && merges->v.arr.type != OX_GGUF_STRING ? "tokenizer.ggml.merges" : NULL;
    if (bad) {
        ox_errf(err, OX_E_FORMAT, "%s: %s does not match tokenizer.ggml.tokens (%llu)", fname, bad, (unsigned long long)n);
        return NULL;
    }
    ox_tokenizer *t = tok_new((int)n, err);
    if (!t) return NULL;
    for (uint64_t i = 0; i < n; i++) {
        const ox_gguf_str *s = ox_gguf_arr_str(toks, i);
        double sc = 0;
        int64_t ty = OX_TOKEN_NORMAL;
        if ((scores && ox_gguf_arr_f64(scores, i, &sc)) || (types && ox_gguf_arr_i64(types, i, &ty))) {
            ox_errf(err, OX_E_FORMAT, "%s: token %llu: score or type is not a number", fname, (unsigned long long)i);
            goto fail;
        }
        if (ty < OX_TOKEN_NORMAL || ty > OX_TOKEN_BYTE) ty = OX_TOKEN_NORMAL;
        if (set_piece(t, (int)i, s->s, s->len, (float)sc, (int)ty, err)) goto fail;
    }
    t->mode = merges ? MODE_BPE : MODE_SPM;
    if (merges) {
        uint64_t nm = merges->v.arr.n;
        if (nm > UINT32_MAX / 4) {
            ox_errf(err, OX_E_FORMAT, "%s: %llu merges is too many", fname, (unsigned long long)nm);
            goto fail;
        }
        if (merges_init(t, nm, err)) goto fail;
        char *buf = NULL;
        size_t cap = 0;
        for (uint64_t i = 0; i < nm; i++) {
            const ox_gguf_str *m = ox_gguf_arr_str(merges, i);
            /* "a b": split at the first space after the first byte (a piece may start with ' ') */
            const char *sp = m->len > 1 ? memchr(m->s + 1, ' ', m->len - 1) : NULL;
            if (!sp) continue;
            if (m->len > cap) {
                free(buf);
                cap = m->len * 2;
                if (!(buf = malloc(cap))) {
                    ox_errf(err, OX_E_NOMEM, "%s: out of memory for merges", fname);
                    goto fail;
                }
            }
            size_t na = (size_t)(sp - m->s);
            merge_add(t, m->s, na, sp + 1, m->len - na - 1, (uint32_t)i, buf);
        }
        free(buf);
    }
    t->split_newlines = !spm;
    int add_prefix = strcmp(model, "llama") == 0;
    if (ox_gguf_find(g, "tokenizer.ggml.add_space_prefix") &&
        ox_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &add_prefix, err))
        goto fail;
    t->prefix = add_prefix ? PREFIX_EVERY : PREFIX_NONE; /* llama.cpp: after every matched token */
    t->byte_fallback = 1;
    struct { const char *key, *piece; int *dst; } ids[] = {
        {"tokenizer.ggml.bos_token_id", "<bos>", &t->bos},
        {"tokenizer.ggml.eos_token_id", "<eos>", &t->eos},
        {"tokenizer.ggml.unknown_token_id", "<unk>", &t->unk},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t v;
        if (ox_gguf_find(g, ids[i].key)) {
            if (ox_gguf_get_u32(g, ids[i].key, &v, err)) goto fail;
            *ids[i].dst = v < n ? (int)v : -1;
        } else {
            *ids[i].dst = map_find_n(t, ids[i].piece, strlen(ids[i].piece));
        }
    }
    if (finish(t, err)) goto fail;
    return t;
fail:
    ox_err_prefix(err, "tokenizer");
    ox_tokenizer_free(t);
    return NULL;
}

/* ---- tokenizer.json ---- */

static int json_str_is(const ox_json *v, const char *s) {
    const char *p = ox_json_str(v);
    return p && ox_json_len(v) == strlen(s) && memcmp(p, s, ox_json_len(v)) == 0;
}

/* One normalizer or pre-tokenizer object (json_steps has handled null and Sequence). */
typedef int (*json_step_fn)(ox_tokenizer *t, const ox_json *v, int *replace, const char *fname, ox_err *err);

/* null, one step, or a Sequence of steps (nested ones too) listed under list_key: the
 * normalizer and the pre_tokenizer objects share this shape. */
static int json_steps(ox_tokenizer *t, const ox_json *v, const char *list_key, json_step_fn step, int *replace,
                      const char *fname, ox_err *err) {
    if (!v || ox_json_type(v) == OX_JSON_NULL) return 0;
    if (!json_str_is(ox_json_get(v, "type"), "Sequence")) return step(t, v, replace, fname, err);
    const ox_json *list = ox_json_get(v, list_key);
    for (size_t i = 0; i < ox_json_len(list); i++) {
        int rc = json_steps(t, ox_json_at(list, i), list_key, step, replace, fname, err);
        if (rc) return rc;
    }
    return 0;
}

/* Normalizers: Replace " " -> "▁", Prepend "▁". */
static int json_normalizer(ox_tokenizer *t, const ox_json *nz, int *replace, const char *fname, ox_err *err) {
    const ox_json *ty = ox_json_get(nz, "type");
    if (json_str_is(ty, "Replace") && json_str_is(ox_json_get(ox_json_get(nz, "pattern"), "String"), " ") &&
        json_str_is(ox_json_get(nz, "content"), SPACE_MARK)) {
        *replace = 1;
        return 0;
    }
    if (json_str_is(ty, "Prepend") && json_str_is(ox_json_get(nz, "prepend"), SPACE_MARK)) {
        t->prefix = PREFIX_EVERY;
        return 0;
    }
    return ox_errf(err, OX_E_UNSUPPORTED, "%s: normalizer %s is not supported (Replace \" \" -> \"\xE2\x96\x81\", Prepend)",
                   fname, ox_json_str(ty) ? ox_json_str(ty) : "?");
}

/* Pre-tokenizers: Split on " " (a no-op once spaces are "▁"); Metaspace without split. */
static int json_pretokenizer(ox_tokenizer *t, const ox_json *pt, int *replace, const char *fname, ox_err *err) {
    const ox_json *ty = ox_json_get(pt, "type");
    if (json_str_is(ty, "Split") && *replace && json_str_is(ox_json_get(ox_json_get(pt, "pattern"), "String"), " "))
        return 0;
    if (json_str_is(ty, "Metaspace") && json_str_is(ox_json_get(pt, "replacement"), SPACE_MARK) &&
        !ox_json_bool(ox_json_get(pt, "split"), 1)) {
        *replace = 1;
        const ox_json *scheme = ox_json_get(pt, "prepend_scheme");
        int add = ox_json_bool(ox_json_get(pt, "add_prefix_space"), 1);
        if (json_str_is(scheme, "never") || (!scheme && !add)) t->prefix = PREFIX_NONE;
        else t->prefix = json_str_is(scheme, "first") ? PREFIX_FIRST : PREFIX_EVERY;
        return 0;
    }
    return ox_errf(err, OX_E_UNSUPPORTED, "%s: pre_tokenizer %s is not supported (Split on \" \", Metaspace without split)",
                   fname, ox_json_str(ty) ? ox_json_str(ty) : "?");
}

static int json_id(const ox_json *v, int64_t *id) {
    return ox_json_int(v, id) && *id >= 0 && *id < MAX_VOCAB;
}

ox_tokenizer *ox_tokenizer_from_json(const ox_json *doc, const char *fname, ox_err *err) {
    const ox_json *model = ox_json_get(doc, "model"), *ty = ox_json_get(model, "type");
    const ox_json *vocab = ox_json_get(model, "vocab"), *merges = ox_json_get(model, "merges");
    const ox_json *added = ox_json_get(doc, "added_tokens");
    if (ox_json_type(model) != OX_JSON_OBJECT) {
        ox_errf(err, OX_E_FORMAT, "%s: no \"model\" object", fname);
        return NULL;
    }
    if (ty ? !json_str_is(ty, "BPE") : !merges) {
        ox_errf(err, OX_E_UNSUPPORTED, "%s: tokenizer model type \"%s\" is not supported (only BPE)", fname,
                ox_json_str(ty) ? ox_json_str(ty) : "?");
        return NULL;
    }
    if (ox_json_type(vocab) != OX_JSON_OBJECT || ox_json_type(merges) != OX_JSON_ARRAY ||
        (added && ox_json_type(added) != OX_JSON_ARRAY)) {
        ox_errf(err, OX_E_FORMAT, "%s: model.vocab must be an object, model.merges and added_tokens arrays", fname);
        return NULL;
    }
    const char *sfx[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const ox_json *v = ox_json_get(model, sfx[i]);
        if (ox_json_len(v) > 0 && ox_json_type(v) == OX_JSON_STRING) {
            ox_errf(err, OX_E_UNSUPPORTED, "%s: model.%s is not supported", fname, sfx[i]);
            return NULL;
        }
    }
    /* ids: vocabulary and added tokens; the vocabulary is max id + 1 */
    int64_t max_id = -1, id;
    size_t nv = ox_json_len(vocab), na = ox_json_len(added);
    for (size_t i = 0; i < nv; i++) {
        if (!json_id(ox_json_at(vocab, i), &id)) {
            ox_errf(err, OX_E_FORMAT, "%s: model.vocab \"%s\": id is not an integer in [0, %d)", fname,
                    ox_json_key(ox_json_at(vocab, i)), MAX_VOCAB);
            return NULL;
        }
        if (id > max_id) max_id = id;
    }
    for (size_t i = 0; i < na; i++) {
        const ox_json *a = ox_json_at(added, i);
        if (!json_id(ox_json_get(a, "id"), &id) || ox_json_type(ox_json_get(a, "content")) != OX_JSON_STRING) {
            ox_errf(err, OX_E_FORMAT, "%s: added_tokens[%zu] needs an integer \"id\" in [0, %d) and a \"content\" string",
                    fname, i, MAX_VOCAB);
            return NULL;
        }
        if (id > max_id) max_id = id;
    }
    if (max_id < 0) {
        ox_errf(err, OX_E_FORMAT, "%s: empty vocabulary", fname);
        return NULL;
    }
    if ((uint64_t)max_id > (uint64_t)nv + na) { /* ids are dense; a stray huge id would only cost memory */
        ox_errf(err, OX_E_FORMAT, "%s: token id %lld for %zu tokens: ids are not dense", fname, (long long)max_id, nv + na);
        return NULL;
    }
    ox_tokenizer *t = tok_new((int)(max_id + 1), err);
    if (!t) return NULL;
    t->mode = MODE_BPE;
    int replace = 0;
    if (json_steps(t, ox_json_get(doc, "normalizer"), "normalizers", json_normalizer, &replace, fname, err) ||
        json_steps(t, ox_json_get(doc, "pre_tokenizer"), "pretokenizers", json_pretokenizer, &replace, fname, err))
        goto fail;
    if (!replace) {
        ox_errf(err, OX_E_UNSUPPORTED, "%s: spaces are not mapped to \"\xE2\x96\x81\" (not a SentencePiece-style BPE)", fname);
        goto fail;
    }
    for (size_t i = 0; i < nv; i++) {
        const ox_json *m = ox_json_at(vocab, i);
        ox_json_int(m, &id);
        if (set_piece(t, (int)id, ox_json_key(m), ox_json_key_len(m), 0, OX_TOKEN_NORMAL, err)) goto fail;
    }
    const char *unk = ox_json_str(ox_json_get(model, "unk_token"));
    if (unk) t->unk = map_find_n(t, unk, strlen(unk));
    if (t->unk >= 0) t->tok[t->unk].type = OX_TOKEN_UNKNOWN;
    for (size_t i = 0; i < na; i++) {
        const ox_json *a = ox_json_at(added, i), *c = ox_json_get(a, "content");
        ox_json_int(ox_json_get(a, "id"), &id);
        int type = ox_json_bool(ox_json_get(a, "special"), 0) ? OX_TOKEN_CONTROL : OX_TOKEN_USER_DEFINED;
        if (set_piece(t, (int)id, ox_json_str(c), ox_json_len(c), 0, type, err)) goto fail;
    }
    size_t nm = ox_json_len(merges), cap = 0;
    if (nm > UINT32_MAX / 4) {
        ox_errf(err, OX_E_FORMAT, "%s: %zu merges is too many", fname, nm);
        goto fail;
    }
    if (merges_init(t, nm, err)) goto fail;
    char *buf = NULL;
    for (size_t i = 0; i < nm; i++) {
        const ox_json *m = ox_json_at(merges, i);
        const char *a, *b;
        size_t la, lb;
        if (ox_json_type(m) == OX_JSON_ARRAY && ox_json_len(m) == 2 && ox_json_str(ox_json_at(m, 0)) &&
            ox_json_str(ox_json_at(m, 1))) {
            a = ox_json_str(ox_json_at(m, 0)), la = ox_json_len(ox_json_at(m, 0));
            b = ox_json_str(ox_json_at(m, 1)), lb = ox_json_len(ox_json_at(m, 1));
        } else if (ox_json_str(m) && (b = memchr(ox_json_str(m), ' ', ox_json_len(m)))) {
            a = ox_json_str(m), la = (size_t)(b - a), b++, lb = ox_json_len(m) - la - 1;
        } else {
            free(buf);
            ox_errf(err, OX_E_FORMAT, "%s: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", fname, i);
            goto fail;
        }
        if (la + lb > cap) {
            free(buf);
            cap = (la + lb) * 2;
            if (!(buf = malloc(cap))) {
                ox_errf(err, OX_E_NOMEM, "%s: out of memory for merges", fname);
                goto fail;
            }
        }
        merge_add(t, a, la, b, lb, (uint32_t)i, buf);
    }
    free(buf);
    t->byte_fallback = ox_json_bool(ox_json_get(model, "byte_fallback"), 0);
    t->fuse_unk = ox_json_bool(ox_json_get(model, "fuse_unk"), 0);
    /* BOS: the special token the post-processor puts before sequence A */
    const ox_json *single = ox_json_get(ox_json_get(doc, "post_processor"), "single");
    const ox_json *first = ox_json_get(ox_json_get(ox_json_at(single, 0), "SpecialToken"), "id");
    const char *bos = ox_json_str(first) ? ox_json_str(first) : "<bos>";
    t->bos = map_find_n(t, bos, strlen(bos));
    t->eos = map_find_n(t, "<eos>", 5);
    if (finish(t, err)) goto fail;
    return t;
fail:
    ox_err_prefix(err, "tokenizer");
    ox_tokenizer_free(t);
    return NULL;
}

ox_tokenizer *ox_tokenizer_from_json_text(const char *text, size_t len, const char *fname, ox_err *err) {
    ox_json *doc = ox_json_parse(text, len, fname, err);
    if (!doc) return NULL;
    ox_tokenizer *t = ox_tokenizer_from_json(doc, fname, err);
    ox_json_free(doc);
    return t;
}

static ox_tokenizer *open_json(int file, ox_err *err) {
    int64_t size = ox_host_size(file);
    const char *name = ox_host_name(file);
    if (size < 0 || (uint64_t)size > OX_JSON_MAX_BYTES) {
        ox_errf(err, OX_E_FORMAT, "%s: size %lld is not that of a tokenizer.json", name, (long long)size);
        return NULL;
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        ox_errf(err, OX_E_NOMEM, "%s: out of memory for %lld bytes", name, (long long)size);
        return NULL;
    }
    ox_tokenizer *t = NULL;
    if (ox_host_read(file, 0, (size_t)size, buf, err) == 0) t = ox_tokenizer_from_json_text(buf, (size_t)size, name, err);
    free(buf);
    return t;
}

ox_tokenizer *ox_tokenizer_open(int file, ox_err *err) {
    uint32_t magic = 0;
    if (ox_host_size(file) >= 4 && ox_host_read(file, 0, 4, &magic, err)) return NULL;
    if (magic != OX_GGUF_MAGIC) return open_json(file, err); /* magic is read little-endian */
    ox_gguf *g = ox_gguf_open(file, err);
    if (!g) return NULL;
    ox_tokenizer *t = ox_tokenizer_from_gguf(g, err);
    ox_gguf_free(g);
    return t;
}

ox_tokenizer *ox_tokenizer_load(const ox_model_files *mf, ox_err *err) {
    const ox_gguf *g = ox_files_gguf(mf);
    if (g && ox_gguf_find(g, "tokenizer.ggml.tokens")) return ox_tokenizer_from_gguf(g, err);
    int f = ox_files_aux(mf, "tokenizer.json");
    if (f >= 0) return open_json(f, err);
    ox_errf(err, OX_E_MISSING, "%s: no tokenizer (GGUF tokenizer.ggml.* keys or tokenizer.json)", ox_files_describe(mf));
    return NULL;
}

/* ---- queries ---- */

int ox_tokenizer_vocab(const ox_tokenizer *t) { return t->n_vocab; }
int ox_tokenizer_bos(const ox_tokenizer *t) { return t->bos; }
int ox_tokenizer_eos(const ox_tokenizer *t) { return t->eos; }
int ox_tokenizer_unk(const ox_tokenizer *t) { return t->unk; }
int ox_tokenizer_find(const ox_tokenizer *t, const char *piece) { return map_find_n(t, piece, strlen(piece)); }

const char *ox_token_piece(const ox_tokenizer *t, int id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    if (len) *len = t->tok[id].len;
    return t->text ? t->text + t->tok[id].off : "";
}

int ox_token_type(const ox_tokenizer *t, int id) {
    return id < 0 || id >= t->n_vocab ? 0 : t->tok[id].type;
}

/* ---- encoding ---- */

typedef struct { int32_t id, prev, next; uint32_t start, len; int32_t nomerge; } sym;
typedef struct { uint32_t key, left, right, len; } cand; /* key: rank, or the score's order, best first */

typedef struct {
    const ox_tokenizer *t;
    int32_t *out;
    int cap;
    int64_t n;
    char *norm;
    sym *s;
    cand *h;
    size_t nh, cap_bytes; /* norm holds cap_bytes; s and h are sized from it */
} work;

static void emit(work *w, int id) {
    if (w->n < w->cap) w->out[w->n] = id;
    w->n++;
}

/* Length of the UTF-8 character at s (1 for an invalid byte: it becomes its own char). */
static int utf8_len(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    int need = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
    if (need <= 0) return 1;
    if (n < (size_t)need + 1) return 1;
    for (int k = 1; k <= need; k++)
        if ((s[k] & 0xC0) != 0x80) return 1;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
        return 1;
    return need + 1;
}

/* Can symbols l and r merge? Sets the priority key (lower first) and the merged id. */
/* An order-preserving map of -score to uint32 (higher score -> smaller key). */
static uint32_t score_key(float score) {
    uint32_t u;
    memcpy(&u, &score, 4);
    u = u & 0x80000000u ? ~u : u | 0x80000000u; /* ascending with the score */
    return ~u;
}

static int pair_of(const work *w, const char *p, const sym *l, const sym *r, uint32_t *key, int *res) {
    const ox_tokenizer *t = w->t;
    if (l->nomerge || r->nomerge) return 0;
    if (t->mode == MODE_BPE) {
        const merge_slot *m = merge_find(t, l->id, r->id);
        if (!m) return 0;
        *key = m->rank, *res = m->res;
        return 1;
    }
    int id = map_find_n(t, p + l->start, (size_t)l->len + r->len);
    if (id < 0) return 0;
    *key = score_key(t->tok[id].score), *res = id;
    return 1;
}

static int cand_less(const cand *a, const cand *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

static void heap_push(work *w, cand c) {
    size_t i = w->nh++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!cand_less(&c, &w->h[up])) break;
        w->h[i] = w->h[up];
        i = up;
    }
    w->h[i] = c;
}

static cand heap_pop(work *w) {
    cand top = w->h[0], last = w->h[--w->nh];
    size_t i = 0, n = w->nh;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(&w->h[c + 1], &w->h[c])) c++;
        if (!cand_less(&w->h[c], &last)) break;
        w->h[i] = w->h[c];
        i = c;
    }
    if (n) w->h[i] = last;
    return top;
}

static void try_pair(work *w, const char *p, int l) {
    if (l < 0 || w->s[l].next < 0) return;
    int r = w->s[l].next, res;
    uint32_t key;
    if (pair_of(w, p, &w->s[l], &w->s[r], &key, &res))
        heap_push(w, (cand){key, (uint32_t)l, (uint32_t)r, w->s[l].len + w->s[r].len});
}

/* BPE over one piece p[0..n) of normalized text. */
static void bpe_piece(work *w, const char *p, size_t n) {
    const ox_tokenizer *t = w->t;
    int m = 0;
    for (size_t i = 0; i < n;) {
        int cl = utf8_len((const uint8_t *)p + i, n - i);
        int id = map_find_n(t, p + i, (size_t)cl);
        int bytes_ok = t->byte_fallback;
        for (int k = 0; id < 0 && bytes_ok && k < cl; k++) bytes_ok = t->byte_id[(uint8_t)p[i + k]] >= 0;
        if (id >= 0) {
            w->s[m++] = (sym){id, 0, 0, (uint32_t)i, (uint32_t)cl, 0};
        } else if (bytes_ok) { /* byte tokens never merge in SentencePiece; in HF BPE they may */
            for (int k = 0; k < cl; k++)
                w->s[m++] = (sym){t->byte_id[(uint8_t)p[i + k]], 0, 0, (uint32_t)(i + k), 1, t->mode == MODE_SPM};
        } else if (t->unk >= 0) {
            if (t->fuse_unk && m > 0 && w->s[m - 1].id == t->unk && w->s[m - 1].nomerge) w->s[m - 1].len += cl;
            else w->s[m++] = (sym){t->unk, 0, 0, (uint32_t)i, (uint32_t)cl, 1};
        } /* else: no byte tokens and no <unk>: the character is dropped */
        i += cl;
    }
    for (int i = 0; i < m; i++) w->s[i].prev = i - 1, w->s[i].next = i + 1 < m ? i + 1 : -1;
    w->nh = 0;
    for (int i = 0; i + 1 < m; i++) try_pair(w, p, i);
    while (w->nh) {
        cand c = heap_pop(w);
        sym *l = &w->s[c.left], *r = &w->s[c.right];
        /* stale if either side merged since: l's next changed, r died, or r grew */
        if (l->len == 0 || l->next != (int32_t)c.right || r->len == 0 || l->len + r->len != c.len) continue;
        uint32_t key;
        int res = -1;
        pair_of(w, p, l, r, &key, &res);
        l->id = res;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) w->s[r->next].prev = (int32_t)c.left;
        r->len = 0;
        try_pair(w, p, l->prev);
        try_pair(w, p, (int)c.left);
    }
    for (int i = m ? 0 : -1; i >= 0; i = w->s[i].next) emit(w, w->s[i].id);
}

/* Make room for a piece of n raw bytes: normalized text (3 bytes per space, plus a prefix),
 * one symbol per byte, three heap entries per symbol. */
static int reserve(work *w, size_t n, ox_err *err) {
    size_t need, a, b;
    if (ox_mul_size(n, 3, &need) || ox_add_size(need, 3, &need) || ox_mul_size(need, sizeof(sym), &a) ||
        ox_mul_size(need, 3 * sizeof(cand), &b))
        return ox_errf(err, OX_E_RANGE, "tokenize: text of %zu bytes is too long", n);
    if (need <= w->cap_bytes) return 0;
    free(w->norm), free(w->s), free(w->h);
    w->norm = malloc(need), w->s = malloc(a), w->h = malloc(b);
    w->cap_bytes = need;
    if (!w->norm || !w->s || !w->h) {
        free(w->norm), free(w->s), free(w->h);
        w->norm = NULL, w->s = NULL, w->h = NULL, w->cap_bytes = 0;
        return ox_errf(err, OX_E_NOMEM, "tokenize: out of memory for a piece of %zu bytes", n);
    }
    return 0;
}

/* Text between pre-matched tokens: normalize, split, BPE. */
static int encode_raw(work *w, const char *s, size_t n, int first, ox_err *err) {
    const ox_tokenizer *t = w->t;
    int rc = reserve(w, n, err);
    if (rc) return rc;
    size_t m = 0;
    if (t->prefix == PREFIX_EVERY || (t->prefix == PREFIX_FIRST && first)) memcpy(w->norm, SPACE_MARK, 3), m = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(w->norm + m, SPACE_MARK, 3), m += 3;
        else w->norm[m++] = s[i];
    }
    if (!t->split_newlines) {
        bpe_piece(w, w->norm, m);
        return 0;
    }
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        while (j < m && (w->norm[j] == '\n') == (w->norm[i] == '\n')) j++;
        bpe_piece(w, w->norm + i, j - i);
        i = j;
    }
    return 0;
}

/* Longest pre-matched token at s (control tokens only if special); its id, or -1. */
static int match_added(const ox_tokenizer *t, const uint8_t *s, size_t n, int special, size_t *mlen) {
    int best = -1;
    int32_t node = t->trie_root[s[0]];
    for (size_t i = 0; node >= 0; i++) {
        while (node >= 0 && t->trie[node].byte != s[i]) node = t->trie[node].sibling;
        if (node < 0) break;
        const trie_node *nd = &t->trie[node];
        if (nd->id >= 0 && (special || !nd->special)) best = nd->id, *mlen = i + 1;
        if (i + 1 == n) break;
        node = nd->child;
    }
    return best;
}

int ox_tokenize(const ox_tokenizer *t, const char *text, size_t len, int flags, int32_t *out, int cap, ox_err *err) {
    work w = {.t = t, .out = out, .cap = out ? (cap > 0 ? cap : 0) : 0};
    int rc = 0, first = 1, special = (flags & OX_TOK_SPECIAL) != 0;
    if ((flags & OX_TOK_ADD_BOS) && t->bos >= 0) emit(&w, t->bos);
    size_t seg = 0;
    for (size_t i = 0; i < len && !rc;) {
        size_t mlen = 0;
        int id = t->trie_root[(uint8_t)text[i]] < 0 ? -1 : match_added(t, (const uint8_t *)text + i, len - i, special, &mlen);
        if (id < 0) {
            i++;
            continue;
        }
        if (i > seg) rc = encode_raw(&w, text + seg, i - seg, first, err);
        first = 0;
        emit(&w, id);
        i += mlen;
        seg = i;
    }
    if (!rc && seg < len) rc = encode_raw(&w, text + seg, len - seg, first, err);
    free(w.norm), free(w.s), free(w.h);
    if (rc) return rc;
    if (w.n > INT32_MAX) return ox_errf(err, OX_E_RANGE, "tokenize: %lld tokens is too many", (long long)w.n);
    return (int)w.n;
}

/* ---- decoding ---- */

int ox_token_bytes(const ox_tokenizer *t, int id, int flags, char *out, int cap, ox_err *err) {
    if (id < 0 || id >= t->n_vocab)
        return ox_errf(err, OX_E_RANGE, "token id %d is out of range (vocab %d)", id, t->n_vocab);
    const tok_info *k = &t->tok[id];
    const char *p = t->text ? t->text + k->off : "";
    if (cap < 0 || !out) cap = 0;
    if (k->type == OX_TOKEN_BYTE) {
        if (cap > 0) out[0] = (char)byte_piece(p, k->len);
        return 1;
    }
    int show = k->type == OX_TOKEN_NORMAL || k->type == OX_TOKEN_USER_DEFINED || (flags & OX_TOK_SHOW_SPECIAL);
    if (!show) return 0;
    int n = 0;
    for (uint32_t i = 0; i < k->len;) {
        char c = p[i];
        if (k->len - i >= 3 && memcmp(p + i, SPACE_MARK, 3) == 0) c = ' ', i += 3;
        else i++;
        if (n < cap) out[n] = c;
        n++;
    }
    return n;
}

int64_t ox_detokenize(const ox_tokenizer *t, const int32_t *ids, int n, int flags, char *out, size_t cap, ox_err *err) {
    int64_t total = 0;
    if (!out) cap = 0;
    for (int i = 0; i < n; i++) {
        size_t room = (uint64_t)total < cap ? cap - (size_t)total : 0;
        int k = ox_token_bytes(t, ids[i], flags, out ? out + (room ? total : 0) : NULL, room > INT32_MAX ? INT32_MAX : (int)room, err);
        if (k < 0) return k;
        total += k;
    }
    return total;
}
