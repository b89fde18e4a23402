/* weights_cache.c — the bounded cache of streamed weights (weights_cache.h): a table of
 * entries by key, an LRU list over the evictable (expert) entries, a pin stack, and the
 * transit area for what cannot be admitted. */
#include "model/weights_cache.h"

#include <stdlib.h>

#define MAX_PINS 64 /* entries in use at once: one layer's matrices plus one expert's */

typedef struct entry {
    uint8_t *data; /* NULL: not admitted */
    size_t bytes;
    int prev, next; /* LRU links (evictable entries only); -1 = none */
    int pins;
    int sticky;
} entry;

struct ox_wcache {
    uint64_t admit_cap, used; /* entries' bytes may not exceed admit_cap = cap - transit */
    entry *e;
    int n_keys;
    int head, tail; /* LRU: head = most recently used */
    int pin[MAX_PINS], n_pins;
    uint8_t *transit; /* allocated on first use */
    size_t transit_cap, transit_used;
    ox_wcache_stats st;
};

ox_wcache *ox_wcache_new(uint64_t cap, uint64_t transit, int n_keys, ox_err *err) {
    if (cap < transit) {
        ox_errf(err, OX_E_RANGE,
                "weight cache: %llu bytes is less than the %llu bytes in use at once (a layer's streamed dense "
                "weights and one expert)",
                (unsigned long long)cap, (unsigned long long)transit);
        return NULL;
    }
    if (n_keys < 1 || transit > SIZE_MAX) {
        ox_errf(err, OX_E_RANGE, "weight cache: bad key count %d or transit size", n_keys);
        return NULL;
    }
    ox_wcache *c = calloc(1, sizeof *c);
    entry *e = calloc((size_t)n_keys, sizeof *e);
    if (!c || !e) {
        free(c);
        free(e);
        ox_errf(err, OX_E_NOMEM, "weight cache: out of memory for %d entries", n_keys);
        return NULL;
    }
    for (int i = 0; i < n_keys; i++) e[i].prev = e[i].next = -1;
    c->e = e;
    c->n_keys = n_keys;
    c->admit_cap = cap - transit;
    c->transit_cap = (size_t)transit;
    c->head = c->tail = -1;
    return c;
}

void ox_wcache_free(ox_wcache *c) {
    if (!c) return;
    for (int i = 0; i < c->n_keys; i++) free(c->e[i].data);
    free(c->e);
    free(c->transit);
    free(c);
}

static void lru_unlink(ox_wcache *c, int k) {
    entry *x = &c->e[k];
    if (x->prev >= 0) c->e[x->prev].next = x->next;
    else c->head = x->next;
    if (x->next >= 0) c->e[x->next].prev = x->prev;
    else c->tail = x->prev;
    x->prev = x->next = -1;
}

static void lru_push_front(ox_wcache *c, int k) {
    entry *x = &c->e[k];
    x->prev = -1;
    x->next = c->head;
    if (c->head >= 0) c->e[c->head].prev = k;
    c->head = k;
    if (c->tail < 0) c->tail = k;
}

/* Evict least recently used unpinned experts until `bytes` more fit; 1 if they do. */
static int make_room(ox_wcache *c, size_t bytes) {
    if (bytes > c->admit_cap) return 0;
    for (int k = c->tail; k >= 0 && c->used + bytes > c->admit_cap;) {
        int prev = c->e[k].prev;
        if (!c->e[k].pins) {
            lru_unlink(c, k);
            free(c->e[k].data);
            c->e[k].data = NULL;
            c->used -= c->e[k].bytes;
            c->st.held -= c->e[k].bytes;
        }
        k = prev;
    }
    return c->used + bytes <= c->admit_cap;
}

static int pin(ox_wcache *c, int key, ox_err *err) {
    if (c->n_pins == MAX_PINS) return ox_errf(err, OX_E_STATE, "weight cache: more than %d blocks in use", MAX_PINS);
    c->pin[c->n_pins++] = key;
    c->e[key].pins++;
    return 0;
}

const void *ox_wcache_get(ox_wcache *c, int key, int sticky, const ox_tensor *t, uint64_t row0, uint64_t nrows,
                          size_t bytes, ox_err *err) {
    if (key < 0 || key >= c->n_keys) {
        ox_errf(err, OX_E_RANGE, "weight cache: key %d outside 0..%d", key, c->n_keys - 1);
        return NULL;
    }
    entry *x = &c->e[key];
    if (x->data) {
        if (pin(c, key, err)) return NULL;
        c->st.hits++;
        if (!x->sticky) {
            lru_unlink(c, key);
            lru_push_front(c, key);
        }
        return x->data;
    }
    uint8_t *dst = NULL;
    int admit = sticky ? c->used + bytes <= c->admit_cap : make_room(c, bytes);
    if (admit && !(dst = malloc(bytes ? bytes : 1))) admit = 0; /* no memory: fall back to transit */
    if (!admit) {
        size_t at = (c->transit_used + OX_WCACHE_ALIGN - 1) & ~(size_t)(OX_WCACHE_ALIGN - 1);
        if (at > c->transit_cap || bytes > c->transit_cap - at) {
            ox_errf(err, OX_E_STATE, "weight cache: transit area of %zu bytes cannot take %zu more (in use: %zu)",
                    c->transit_cap, bytes, c->transit_used);
            return NULL;
        }
        if (!c->transit) {
            if (!(c->transit = malloc(c->transit_cap ? c->transit_cap : 1))) {
                ox_errf(err, OX_E_NOMEM, "weight cache: out of memory for the %zu-byte transit area", c->transit_cap);
                return NULL;
            }
            c->st.held += c->transit_cap;
        }
        if (ox_tensor_read_rows(t, row0, nrows, c->transit + at, err)) return NULL;
        c->transit_used = at + bytes;
        c->st.misses++;
        c->st.bytes_streamed += bytes;
        return c->transit + at;
    }
    if (ox_tensor_read_rows(t, row0, nrows, dst, err) || pin(c, key, err)) {
        free(dst);
        return NULL;
    }
    x->data = dst;
    x->bytes = bytes;
    x->sticky = sticky;
    c->used += bytes;
    c->st.held += bytes;
    c->st.misses++;
    c->st.bytes_streamed += bytes;
    if (!sticky) lru_push_front(c, key);
    return dst;
}

ox_wcache_mark ox_wcache_mark_now(const ox_wcache *c) { return (ox_wcache_mark){c->n_pins, c->transit_used}; }

void ox_wcache_release(ox_wcache *c, ox_wcache_mark mark) {
    while (c->n_pins > mark.pins) c->e[c->pin[--c->n_pins]].pins--;
    if (mark.transit < c->transit_used) c->transit_used = mark.transit;
}

void ox_wcache_stats_get(const ox_wcache *c, ox_wcache_stats *st) { *st = c->st; }
