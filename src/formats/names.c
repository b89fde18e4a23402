/* names.c — see names.h. */
#include "formats/names.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    uint32_t idx;
} name_idx;

static int cmp(const void *a, const void *b) {
    return strcmp(((const name_idx *)a)->name, ((const name_idx *)b)->name);
}

static const char *name_at(const void *base, size_t i, size_t stride, size_t name_off) {
    const char *p;
    memcpy(&p, (const char *)base + i * stride + name_off, sizeof p);
    return p;
}

int ox_names_sort(const void *base, size_t n, size_t stride, size_t name_off, uint32_t *order, size_t *dup) {
    name_idx *ni = malloc((n ? n : 1) * sizeof *ni);
    if (!ni) return -1;
    for (size_t i = 0; i < n; i++) ni[i].name = name_at(base, i, stride, name_off), ni[i].idx = (uint32_t)i;
    qsort(ni, n, sizeof *ni, cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        order[i] = ni[i].idx;
        if (i && !rc && strcmp(ni[i - 1].name, ni[i].name) == 0) *dup = ni[i].idx, rc = 1;
    }
    free(ni);
    return rc;
}

long ox_names_find(const void *base, size_t n, size_t stride, size_t name_off, const uint32_t *order, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name_at(base, order[mid], stride, name_off), name);
        if (c == 0) return (long)order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}
