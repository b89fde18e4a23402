/* tokenizer_load.c — building the tokenizer's tables (tokenizer_impl.h) from GGUF metadata
 * (tokenizer.ggml.*) or an HF tokenizer.json, and finding a model's tokenizer. */
#include "text/tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"
#include "formats/tensors.h"
#include "host/hostfile.h"

#define MAX_VOCAB (1 << 24) /* bound on ids read from files */

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
    size_t map_bytes;
    if (!t->tok || ox_mul_size((size_t)t->map_mask + 1, sizeof *t->map, &map_bytes) || !(t->map = malloc(map_bytes)))
        goto nomem;
    memset(t->map, 0xff, map_bytes);
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

int ox_tok_find(const ox_tokenizer *t, const char *s, size_t n) {
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
    size_t bytes; /* the table can pass 4 GiB: wasm32's size_t */
    if (ox_mul_size((size_t)t->merge_mask + 1, sizeof *t->merges, &bytes) || !(t->merges = malloc(bytes)))
        return ox_errf(err, OX_E_NOMEM, "out of memory for %llu merges", (unsigned long long)n);
    for (size_t i = 0; i <= t->merge_mask; i++) t->merges[i].key = MERGE_EMPTY;
    return 0;
}

static uint32_t merge_hash(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

const merge_slot *ox_tok_merge(const ox_tokenizer *t, int a, int b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint32_t i = merge_hash(key, t->merge_mask);; i = (i + 1) & t->merge_mask) {
        const merge_slot *m = &t->merges[i];
        if (m->key == key) return m;
        if (m->key == MERGE_EMPTY) return NULL;
    }
}

/* Add merge "a b" with this rank; a repeated pair keeps the later rank (as HF's map does).
 * Pairs naming unknown pieces, or whose concatenation is no piece, can never apply: skipped. */
static void merge_add(ox_tokenizer *t, const char *a, size_t na, const char *b, size_t nb, uint32_t rank, char *buf) {
    int ia = ox_tok_find(t, a, na), ib = ox_tok_find(t, b, nb);
    if (ia < 0 || ib < 0) return;
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    int res = ox_tok_find(t, buf, na + nb);
    if (res < 0) return;
    uint64_t key = (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib;
    uint32_t i = merge_hash(key, t->merge_mask);
    while (t->merges[i].key != MERGE_EMPTY && t->merges[i].key != key) i = (i + 1) & t->merge_mask;
    t->merges[i] = (merge_slot){key, rank, res};
}

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

/* "<0xXX>" -> XX, else -1 */
int ox_tok_byte_piece(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int hi = hexval(s[3]), lo = hexval(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* After all pieces: byte-token table, the trie of pre-matched tokens. */
static int finish(ox_tokenizer *t, ox_err *err) {
    for (int id = 0; id < t->n_vocab; id++) {
        const tok_info *k = &t->tok[id];
        const char *s = t->text + k->off;
        int b = ox_tok_byte_piece(s, k->len);
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

/* A loader's failure path: free the half-built tables, say "tokenizer" in the message. */
static ox_tokenizer *abandon(ox_tokenizer *t, ox_err *err) {
    ox_err_prefix(err, "tokenizer");
    ox_tokenizer_free(t);
    return NULL;
}

/* ---- GGUF ---- */

ox_tokenizer *ox_tokenizer_from_gguf(const ox_gguf *g, ox_err *err) {
    const char *fname = ox_gguf_name(g), *model = NULL;
    const ox_gguf_value *toks, *scores = NULL, *types = NULL, *merges = NULL;
    if (ox_gguf_get_str(g, "tokenizer.ggml.model", &model, err)) return NULL;
    int spm = strcmp(model, "llama") == 0 || strcmp(model, "gemma") == 0;
    if (!spm && strcmp(model, "gemma4") != 0) {
        ox_errf(err, OX_E_UNSUPPORTED, "%s: tokenizer model \"%s\" is not supported (gemma4, llama, gemma)", fname,
                model);
        return NULL;
    }
    if (ox_gguf_get_arr(g, "tokenizer.ggml.tokens", &toks, err)) return NULL;
    uint64_t n = toks->v.arr.n;
    if (toks->v.arr.type != OX_GGUF_STRING || n == 0 || n > MAX_VOCAB) {
        ox_errf(err, OX_E_FORMAT, "%s: tokenizer.ggml.tokens must be 1..%d strings (has %llu %s)", fname, MAX_VOCAB,
                (unsigned long long)n, ox_gguf_type_name(toks->v.arr.type));
        return NULL;
    }
    if (ox_gguf_find(g, "tokenizer.ggml.scores") && ox_gguf_get_arr(g, "tokenizer.ggml.scores", &scores, err))
        return NULL;
    if (ox_gguf_find(g, "tokenizer.ggml.token_type") && ox_gguf_get_arr(g, "tokenizer.ggml.token_type", &types, err))
        return NULL;
    if (!spm && ox_gguf_find(g, "tokenizer.ggml.merges") && ox_gguf_get_arr(g, "tokenizer.ggml.merges", &merges, err))
        return NULL;
    const char *bad = scores && scores->v.arr.n != n                   ? "tokenizer.ggml.scores"
                      : types && types->v.arr.n != n                   ? "tokenizer.ggml.token_type"
                      : merges && merges->v.arr.type != OX_GGUF_STRING ? "tokenizer.ggml.merges"
                                                                       : NULL;
    if (bad) {
        ox_errf(err, OX_E_FORMAT, "%s: %s does not match tokenizer.ggml.tokens (%llu)", fname, bad,
                (unsigned long long)n);
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
    struct {
        const char *key, *piece;
        int *dst;
    } ids[] = {
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
            *ids[i].dst = ox_tok_find(t, ids[i].piece, strlen(ids[i].piece));
        }
    }
    if (finish(t, err)) goto fail;
    return t;
fail:
    return abandon(t, err);
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
    return ox_errf(err, OX_E_UNSUPPORTED,
                   "%s: normalizer %s is not supported (Replace \" \" -> \"\xE2\x96\x81\", Prepend)", fname,
                   ox_json_str(ty) ? ox_json_str(ty) : "?");
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
    return ox_errf(err, OX_E_UNSUPPORTED,
                   "%s: pre_tokenizer %s is not supported (Split on \" \", Metaspace without split)", fname,
                   ox_json_str(ty) ? ox_json_str(ty) : "?");
}

static int json_id(const ox_json *v, int64_t *id) { return ox_json_int(v, id) && *id >= 0 && *id < MAX_VOCAB; }

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
        ox_errf(err, OX_E_FORMAT, "%s: token id %lld for %zu tokens: ids are not dense", fname, (long long)max_id,
                nv + na);
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
        ox_errf(err, OX_E_UNSUPPORTED, "%s: spaces are not mapped to \"\xE2\x96\x81\" (not a SentencePiece-style BPE)",
                fname);
        goto fail;
    }
    for (size_t i = 0; i < nv; i++) {
        const ox_json *m = ox_json_at(vocab, i);
        ox_json_int(m, &id);
        if (set_piece(t, (int)id, ox_json_key(m), ox_json_key_len(m), 0, OX_TOKEN_NORMAL, err)) goto fail;
    }
    const char *unk = ox_json_str(ox_json_get(model, "unk_token"));
    if (unk) t->unk = ox_tok_find(t, unk, strlen(unk));
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
    t->bos = ox_tok_find(t, bos, strlen(bos));
    t->eos = ox_tok_find(t, "<eos>", 5);
    if (finish(t, err)) goto fail;
    return t;
fail:
    return abandon(t, err);
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
    if (ox_host_read(file, 0, (size_t)size, buf, err) == 0)
        t = ox_tokenizer_from_json_text(buf, (size_t)size, name, err);
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
