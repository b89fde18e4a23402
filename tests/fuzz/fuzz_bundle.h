/* fuzz_bundle.h — several model files in one fuzz input (fuzz_multifile.c; its seeds are written
 * by make_corpus.c). The input: one options byte, then records of a name byte (an index into
 * fuzz_bundle_names, modulo its count), a u32 little-endian length and that many bytes; a
 * length past the end takes what is left, so any cut of an input is still a bundle. */
#ifndef OX_FUZZ_BUNDLE_H
#define OX_FUZZ_BUNDLE_H

#include <stdint.h>
#include <string.h>

#define FUZZ_BUNDLE_MAX 8 /* files in one input; records past it are ignored */

/* The names a checkpoint directory's files have: the loader tells them apart by name and magic. */
static const char *const fuzz_bundle_names[] = {
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
    "model-00001-of-00002.gguf",
    "model-00002-of-00002.gguf",
};
enum {
    FUZZ_CONFIG,
    FUZZ_TOKENIZER,
    FUZZ_ST,
    FUZZ_SHARD1,
    FUZZ_SHARD2,
    FUZZ_ST_INDEX,
    FUZZ_SPLIT1,
    FUZZ_SPLIT2,
    FUZZ_BUNDLE_NAMES
};

typedef struct {
    int name; /* index into fuzz_bundle_names */
    const uint8_t *data;
    size_t len;
} fuzz_bundle_file;

/* Split data (after the options byte) into at most FUZZ_BUNDLE_MAX files; returns their count. */
static inline int fuzz_bundle_split(const uint8_t *data, size_t size, fuzz_bundle_file *f) {
    int n = 0;
    for (size_t at = 0; n < FUZZ_BUNDLE_MAX && size - at >= 5;) {
        uint32_t len;
        memcpy(&len, data + at + 1, 4);
        size_t left = size - at - 5, take = len < left ? len : left;
        f[n++] = (fuzz_bundle_file){data[at] % FUZZ_BUNDLE_NAMES, data + at + 5, take};
        at += 5 + take;
    }
    return n;
}

#endif
