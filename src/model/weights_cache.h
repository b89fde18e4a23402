/* weights_cache.h — linear weights left on the host (load option stream, loadModel
 * {streamWeights}) and the bounded cache they are read into per use.
 *
 * A streamed matrix keeps its type and shape in the model with data NULL; the forward pass
 * fetches the rows it needs — a layer's dense matrices, or one expert's block of a stacked
 * expert tensor — with ox_wcache_get, which returns the cached copy or reads the rows through
 * the host (ox_tensor_read_rows, so the bytes are exactly what a resident load holds), and
 * lets them go with ox_wcache_release when that unit of work is done.
 *
 * The policy follows the access pattern. Dense weights are read in the same order every
 * token, a cyclic scan that LRU turns into a 0 % hit rate, so they are sticky: admitted while
 * there is room, never evicted (the cache then holds a fixed share of them, the best a cache
 * smaller than the scan can do). Experts are chosen per token by the router: LRU, evicting
 * the least recently used expert that is not in use.
 *
 * Memory: at most cap bytes. `transit` of them (the largest working set: one layer's dense
 * weights plus one expert) are the transit area, allocated on first use, where a fetch that
 * cannot be admitted is read for the time of its use; the other cap - transit bytes hold the
 * admitted entries. Not thread-safe: only the thread running the forward pass calls it (the
 * host reads must happen there, src/host/hostfile.h). */
#ifndef OX_WEIGHTS_CACHE_H
#define OX_WEIGHTS_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"
#include "formats/tensors.h"

typedef struct ox_wcache ox_wcache;

/* Transit blocks start on this boundary: size the area as the sum of its blocks rounded up. */
#define OX_WCACHE_ALIGN 64

typedef struct ox_wcache_stats {
    uint64_t bytes_streamed; /* read through the host by fetches (misses) */
    uint64_t hits, misses;   /* fetches served from memory / read */
    uint64_t held;           /* bytes allocated now: entries + transit area */
} ox_wcache_stats;

/* A point to release back to: pins and transit space taken after it are given back. */
typedef struct ox_wcache_mark {
    int pins;
    size_t transit;
} ox_wcache_mark;

/* n_keys: keys are 0 .. n_keys-1 (the caller numbers its blocks). cap >= transit, else RANGE. */
ox_wcache *ox_wcache_new(uint64_t cap, uint64_t transit, int n_keys, ox_err *err);
void ox_wcache_free(ox_wcache *c);

/* Rows [row0, row0 + nrows) of t, `bytes` in all, under `key`; sticky as above. The pointer
 * stays valid (pinned) until a release to a mark taken before this call. NULL on a host
 * error (the cache is unchanged and usable) or when the transit area is full (STATE). */
const void *ox_wcache_get(ox_wcache *c, int key, int sticky, const ox_tensor *t, uint64_t row0, uint64_t nrows,
                          size_t bytes, ox_err *err);

ox_wcache_mark ox_wcache_mark_now(const ox_wcache *c);
void ox_wcache_release(ox_wcache *c, ox_wcache_mark mark);

void ox_wcache_stats_get(const ox_wcache *c, ox_wcache_stats *st);

#endif
