/* tokenizer.h — Gemma 4 BPE ("SPM-style BPE") from GGUF metadata or an HF tokenizer.json.
 *
 * Encoding, as llama.cpp (model "gemma4") and HF tokenizers do it for this vocabulary:
 *   1. added / user-defined tokens are matched first, leftmost-longest, on the raw text
 *      (control tokens only when OX_TOK_SPECIAL is given);
 *   2. the text between them is normalized: ' ' -> U+2581 "▁" (no dummy prefix for Gemma);
 *      GGUF "gemma4" also splits it into runs of '\n' and runs of everything else;
 *   3. each piece starts as one symbol per UTF-8 character; a character missing from the
 *      vocabulary becomes its <0xXX> byte tokens (or <unk> without them); invalid UTF-8
 *      bytes are single-byte characters, so they always take the byte path;
 *   4. merges apply in rank order (ties: leftmost first) with a heap over a linked list of
 *      symbols: O(n log n) per piece. GGUF "llama"/"gemma" without merges use SentencePiece
 *      scores instead (the best-scoring adjacent pair whose concatenation is a token).
 * Decoding maps "▁" to ' ', <0xXX> to the byte, and control tokens to nothing (or their
 * text on request); per-token bytes let a caller stream UTF-8 across token boundaries.
 *
 * A tokenizer is immutable after load: encode/decode may run on several threads at once.
 * Arbitrary input bytes are safe (no crash, no out-of-bounds), for fuzzing. */
#ifndef OX_TOKENIZER_H
#define OX_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"

/* Token types: GGUF's tokenizer.ggml.token_type values. tokenizer.json maps to them:
 * special added token -> CONTROL, other added token -> USER_DEFINED, <0xXX> -> BYTE,
 * the unk token -> UNKNOWN, ids without a piece -> UNUSED. */
enum {
    OX_TOKEN_NORMAL = 1,
    OX_TOKEN_UNKNOWN = 2,
    OX_TOKEN_CONTROL = 3,
    OX_TOKEN_USER_DEFINED = 4,
    OX_TOKEN_UNUSED = 5,
    OX_TOKEN_BYTE = 6,
};

/* Encode flags. */
#define OX_TOK_ADD_BOS      1 /* prepend the BOS token (if the vocabulary has one) */
#define OX_TOK_SPECIAL      2 /* match control tokens (<bos>, <|turn>, ...) in the text */
/* Decode flags. */
#define OX_TOK_SHOW_SPECIAL 1 /* control/unknown tokens decode to their text, not "" */

typedef struct ox_tokenizer ox_tokenizer;
struct ox_gguf;
struct ox_json;
struct ox_model_files;

/* From GGUF metadata tokenizer.ggml.* (model "gemma4", "llama" or "gemma"). */
ox_tokenizer *ox_tokenizer_from_gguf(const struct ox_gguf *g, ox_err *err);
/* From a parsed / raw tokenizer.json (model.type "BPE"; anything else is OX_E_UNSUPPORTED). */
ox_tokenizer *ox_tokenizer_from_json(const struct ox_json *doc, const char *fname, ox_err *err);
ox_tokenizer *ox_tokenizer_from_json_text(const char *text, size_t len, const char *fname, ox_err *err);
/* From a host file: a GGUF (by magic) or a tokenizer.json. */
ox_tokenizer *ox_tokenizer_open(int file, ox_err *err);
/* A model's tokenizer: its GGUF if that has tokenizer.ggml.tokens, else its tokenizer.json. */
ox_tokenizer *ox_tokenizer_load(const struct ox_model_files *mf, ox_err *err);
void ox_tokenizer_free(ox_tokenizer *t);

int ox_tokenizer_vocab(const ox_tokenizer *t); /* number of ids (max id + 1) */
int ox_tokenizer_bos(const ox_tokenizer *t);   /* -1 if none */
int ox_tokenizer_eos(const ox_tokenizer *t);   /* -1 if none */
int ox_tokenizer_unk(const ox_tokenizer *t);   /* -1 if none */
/* Id of an exact piece (vocabulary text, e.g. "<|turn>" or "▁the"), or -1. */
int ox_tokenizer_find(const ox_tokenizer *t, const char *piece);
/* Raw piece text of id (not NUL-terminated; *len set) and its type; NULL / 0 if id is out of range. */
const char *ox_token_piece(const ox_tokenizer *t, int id, size_t *len);
int ox_token_type(const ox_tokenizer *t, int id);

/* Encode len bytes of text. Writes at most cap ids to out (out may be NULL when cap is 0)
 * and returns the total number of ids (> cap means: call again with a larger buffer),
 * or a negative OX_E_* (allocation failure, or a count beyond INT32_MAX). */
int ox_tokenize(const ox_tokenizer *t, const char *text, size_t len, int flags, int32_t *out, int cap, ox_err *err);

/* Bytes a token decodes to (flags: OX_TOK_SHOW_SPECIAL). Writes at most cap bytes and
 * returns the full length, or OX_E_RANGE for an id out of range. */
int ox_token_bytes(const ox_tokenizer *t, int id, int flags, char *out, int cap, ox_err *err);
/* Concatenated bytes of n tokens; same return convention (length may exceed cap). */
int64_t ox_detokenize(const ox_tokenizer *t, const int32_t *ids, int n, int flags, char *out, size_t cap, ox_err *err);

#endif
