/* names.h — sorted name index over an array of structs holding a `char *` name: one sort at
 * open (which also finds duplicates), binary-search lookups. Used by the GGUF, safetensors
 * and tensor-directory tables. */
#ifndef OX_NAMES_H
#define OX_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The name of element i is *(char **)((char *)base + i * stride + name_off).
 * Fills order[0..n) with element indices sorted by name. Returns 0; 1 with *dup set to the
 * index of an element whose name occurs twice; -1 if out of memory. */
int ox_names_sort(const void *base, size_t n, size_t stride, size_t name_off, uint32_t *order, size_t *dup);
/* Index of the element named `name`, or -1. */
long ox_names_find(const void *base, size_t n, size_t stride, size_t name_off, const uint32_t *order, const char *name);

#endif
