/* tokenizer_codec.c — encoding (tokenizer.h: added tokens, normalization, BPE merges or
 * SentencePiece scores: symbols in a linked list, candidate pairs in a binary heap with lazy
 * invalidation) and decoding, over the tables tokenizer_load.c builds. */
#include "text/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- queries ---- */

int ox_tokenizer_vocab(const ox_tokenizer *t) { return t->n_vocab; }
int ox_tokenizer_bos(const ox_tokenizer *t) { return t->bos; }
int ox_tokenizer_eos(const ox_tokenizer *t) { return t->eos; }
int ox_tokenizer_unk(const ox_tokenizer *t) { return t->unk; }
int ox_tokenizer_find(const ox_tokenizer *t, const char *piece) { return ox_tok_find(t, piece, strlen(piece)); }

const char *ox_token_piece(const ox_tokenizer *t, int id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    if (len) *len = t->tok[id].len;
    return t->text ? t->text + t->tok[id].off : "";
}

int ox_token_type(const ox_tokenizer *t, int id) { return id < 0 || id >= t->n_vocab ? 0 : t->tok[id].type; }

/* ---- encoding ---- */

typedef struct {
    int32_t id, prev, next;
    uint32_t start, len;
    int32_t nomerge;
} sym;
typedef struct {
    uint32_t key, left, right, len;
} cand; /* key: rank, or the score's order, best first */

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
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F))
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
        const merge_slot *m = ox_tok_merge(t, l->id, r->id);
        if (!m) return 0;
        *key = m->rank, *res = m->res;
        return 1;
    }
    int id = ox_tok_find(t, p + l->start, (size_t)l->len + r->len);
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
        int id = ox_tok_find(t, p + i, (size_t)cl);
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
        int id =
            t->trie_root[(uint8_t)text[i]] < 0 ? -1 : match_added(t, (const uint8_t *)text + i, len - i, special, &mlen);
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
        if (cap > 0) out[0] = (char)ox_tok_byte_piece(p, k->len);
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
        int k = ox_token_bytes(t, ids[i], flags, out ? out + (room ? total : 0) : NULL,
                               room > INT32_MAX ? INT32_MAX : (int)room, err);
        if (k < 0) return k;
        total += k;
    }
    return total;
}
