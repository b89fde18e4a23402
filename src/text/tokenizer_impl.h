/* tokenizer_impl.h — the tokenizer's tables, shared by its loaders (tokenizer_load.c: GGUF
 * vocabulary, tokenizer.json) and its codec (tokenizer_codec.c: encode, decode). One vocabulary
 * (pieces, scores, types), a hash map piece -> id, a hash map (left id, right id) -> (rank,
 * merged id), and a byte trie of the tokens matched before BPE. Not part of the API. */
#ifndef OX_TOKENIZER_IMPL_H
#define OX_TOKENIZER_IMPL_H

#include "text/tokenizer.h"

#define SPACE_MARK "\xE2\x96\x81" /* U+2581 "▁" */

typedef struct {
    uint32_t off, len;
    float score;
    uint8_t type;
} tok_info;
typedef struct {
    int32_t child, sibling, id;
    uint8_t byte, special;
} trie_node;
typedef struct {
    uint64_t key;
    uint32_t rank;
    int32_t res;
} merge_slot;
#define MERGE_EMPTY UINT64_MAX

enum { MODE_BPE, MODE_SPM };
enum { PREFIX_NONE, PREFIX_FIRST, PREFIX_EVERY };

struct ox_tokenizer {
    int n_vocab;
    tok_info *tok;
    char *text; /* all pieces, back to back */
    size_t text_len, text_cap;
    int32_t *map; /* piece -> id, open addressing, -1 = empty */
    uint32_t map_mask;
    merge_slot *merges;
    uint32_t merge_mask;
    int mode;           /* MODE_BPE: merge ranks; MODE_SPM: piece scores */
    int split_newlines; /* GGUF gemma4: runs of '\n' vs the rest */
    int prefix;         /* dummy "▁" prefix: none / first piece / every piece */
    int byte_fallback, fuse_unk;
    int32_t byte_id[256]; /* <0xXX> ids, -1 if absent */
    int bos, eos, unk;
    trie_node *trie;
    int n_trie, trie_cap;
    int32_t trie_root[256]; /* first node per first byte, -1 = no token starts so */
};

/* Id of the piece s[0, n), or -1. */
int ox_tok_find(const ox_tokenizer *t, const char *s, size_t n);
/* The merge of ids (a, b), or NULL. */
const merge_slot *ox_tok_merge(const ox_tokenizer *t, int a, int b);
/* "<0xXX>" -> XX, else -1. */
int ox_tok_byte_piece(const char *s, size_t n);

#endif
