/* err.h — explicit error returns for the whole C core.
 *
 * Every fallible function takes an `ox_err *` (may be NULL) and returns an int
 * status (0 = ok, or a negative OX_E_* code) or NULL. The message names the file
 * (when one is involved) and the problem, e.g.
 *   "model.gguf: tensor blk.3.attn_q.weight: data [1024, 4096) beyond file end (2048 bytes)".
 * Codes are stable: the JS layer maps them to string codes (js/errors.js). */
#ifndef OX_ERR_H
#define OX_ERR_H

#include <stddef.h>

enum {
    OX_OK = 0,
    OX_E_IO = -1,          /* host read failed (I/O error, HTTP error, short read)   -> "IO"          */
    OX_E_FORMAT = -2,      /* malformed file: bad magic, bad JSON, bad header         -> "FORMAT"      */
    OX_E_TRUNCATED = -3,   /* file ends before a header/tensor does                   -> "TRUNCATED"   */
    OX_E_UNSUPPORTED = -4, /* unknown version, tensor type, dtype, architecture       -> "UNSUPPORTED" */
    OX_E_MISSING = -5,     /* a required tensor, key, shard or file is absent         -> "MISSING"     */
    OX_E_CONFIG = -6,      /* inconsistent config or shapes that disagree with it     -> "CONFIG"      */
    OX_E_NOMEM = -7,       /* allocation failed (message says how much was needed)    -> "NOMEM"       */
    OX_E_RANGE = -8,       /* argument out of range: context, tokens, threads, ...    -> "RANGE"       */
    OX_E_ABORTED = -9,     /* the caller's abort/progress callback asked to stop      -> "ABORTED"     */
    OX_E_STATE = -10,      /* call not valid in this state (e.g. session full)        -> "STATE"       */
};

#define OX_ERR_MSG 512

typedef struct ox_err {
    int code;
    char msg[OX_ERR_MSG];
} ox_err;

/* Set *e (if non-NULL) to code + printf-style message; returns code, so
 * `return ox_errf(e, OX_E_FORMAT, "%s: bad magic", name);` reads naturally. */
int ox_errf(ox_err *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefix an existing message with "prefix: " (used to add context on the way up). */
int ox_err_prefix(ox_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

const char *ox_err_code_name(int code); /* "IO", "FORMAT", ... ; "OK" for 0 */

/* Overflow-checked size arithmetic: return 0 on success, -1 on overflow. */
int ox_mul_size(size_t a, size_t b, size_t *out);
int ox_add_size(size_t a, size_t b, size_t *out);

#endif
