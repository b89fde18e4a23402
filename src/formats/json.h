/* json.h — a strict, bounded JSON parser (RFC 8259) for config.json, tokenizer.json,
 * safetensors headers and index files, plus a tiny string builder for writing JSON.
 *
 * The whole document is parsed into one arena-backed tree; ox_json_free(root) frees it.
 * Values are read through NULL-safe accessors, so lookups chain without checks:
 *   ox_json_int(ox_json_get(ox_json_get(root, "text_config"), "hidden_size"), &v)
 *
 * Strictness: no comments, no trailing commas, no leading zeros, no NaN/Infinity, no
 * unescaped control characters, UTF-8 validated, lone surrogates rejected; a leading
 * UTF-8 BOM is skipped. Limits: OX_JSON_MAX_DEPTH nesting, OX_JSON_MAX_BYTES of text,
 * OX_JSON_MAX_VALUES values in arrays and objects (the tree's memory follows the count).
 * Errors (OX_E_FORMAT) read "FILE:LINE:COL: problem".
 *
 * Object members keep file order; with duplicate keys ox_json_get returns the last one
 * (as JSON.parse does). Lookup is a linear scan: iterate large objects (vocabularies)
 * with ox_json_len / ox_json_at / ox_json_key instead of calling ox_json_get per key. */
#ifndef OX_JSON_H
#define OX_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "base/err.h"

#define OX_JSON_MAX_DEPTH  256
#define OX_JSON_MAX_BYTES  ((size_t)1 << 30)
#define OX_JSON_MAX_VALUES ((size_t)1 << 22) /* a 262k-token tokenizer.json holds under 2M */

typedef enum {
    OX_JSON_NONE = -1, /* ox_json_kind(NULL): a missing value */
    OX_JSON_NULL = 0,
    OX_JSON_BOOL,
    OX_JSON_NUMBER,
    OX_JSON_STRING,
    OX_JSON_ARRAY,
    OX_JSON_OBJECT
} ox_json_kind;

typedef struct ox_json ox_json;

/* Parse len bytes of text (need not be NUL-terminated). fname is used in messages.
 * Returns the root value, or NULL with err set. */
ox_json *ox_json_parse(const char *text, size_t len, const char *fname, ox_err *err);
void ox_json_free(ox_json *root); /* only the root returned by ox_json_parse */

ox_json_kind ox_json_type(const ox_json *v);
/* Member value of an object by key (NULL if v is not an object or has no such key). */
const ox_json *ox_json_get(const ox_json *obj, const char *key);
/* Array/object: element/member count; string: byte length; else 0. */
size_t ox_json_len(const ox_json *v);
/* i-th array element or i-th object member value (NULL if out of range). */
const ox_json *ox_json_at(const ox_json *v, size_t i);
/* Key of an object member value (from ox_json_at on an object or ox_json_get); NULL otherwise.
 * Keys are NUL-terminated; ox_json_key_len gives the byte length (keys may contain \u0000). */
const char *ox_json_key(const ox_json *member);
size_t ox_json_key_len(const ox_json *member);

/* String value, NUL-terminated UTF-8 (length: ox_json_len); NULL if not a string. */
const char *ox_json_str(const ox_json *v);
/* Number as double; dflt if v is not a number. */
double ox_json_num(const ox_json *v, double dflt);
/* Exact integer: 1 and *out set if v is a number with an integral value that fits int64
 * (e.g. 42, -7, 1e3); 0 otherwise (fractions, 1e300, non-numbers). */
int ox_json_int(const ox_json *v, int64_t *out);
/* 1 if v is a number written as an integer literal (no fraction, no exponent: 30, not 30.0 or
 * 3e1), the form Python's json reads as int; for configs whose readers refuse ints as floats. */
int ox_json_int_literal(const ox_json *v);
/* true/false; dflt if v is not a boolean. */
int ox_json_bool(const ox_json *v, int dflt);

/* A growable string for writing JSON (safetensors headers, metadata). On allocation
 * failure `oom` is set and later appends are ignored; check it before using `s`. */
typedef struct ox_strbuf {
    char *s;
    size_t len, cap;
    int oom;
} ox_strbuf;
void ox_sb_append(ox_strbuf *b, const char *s, size_t n);
void ox_sb_printf(ox_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append s (n bytes) as a quoted, escaped JSON string. */
void ox_sb_json_str(ox_strbuf *b, const char *s, size_t n);
void ox_sb_free(ox_strbuf *b);

#endif
