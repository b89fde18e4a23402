/* err.h — explicit error returns for the whole C core.
 *
 * Every fallible function takes an `ox_err *` (may be NULL) and returns an int
 * status (0 = ok, or a negative OX_E_* code) or NULL. The message names the file
 * (when one is involved) and the problem, e.g.
 *   "model.gguf: tensor blk.3.attn_q.weight: data [1024, 4096) beyond file end (2048 bytes)".
 * Codes are stable: the JS side gets them by name from js/shared/abi.js, generated from the list
 * below by tools/gen_abi.mjs (src/wasm/abi.h is the whole JS<->C contract). */
#ifndef OX_ERR_H
#define OX_ERR_H

#include <stddef.h>

/* X(NAME, code, meaning): the one list of error codes; OX_E_NAME = code, and "NAME" is what
 * ox_err_code_name() returns and what JS sees as OxError.code. */
#define OX_ERR_CODES(X)                                                                                                \
    X(IO, -1, "host read failed (I/O error, HTTP error, short read)")                                                  \
    X(FORMAT, -2, "malformed file: bad magic, bad JSON, bad header")                                                   \
    X(TRUNCATED, -3, "file ends before a header/tensor does")                                                          \
    X(UNSUPPORTED, -4, "unknown version, tensor type, dtype, architecture")                                            \
    X(MISSING, -5, "a required tensor, key, shard or file is absent")                                                  \
    X(CONFIG, -6, "inconsistent config or shapes that disagree with it")                                               \
    X(NOMEM, -7, "allocation failed (message says how much was needed)")                                               \
    X(RANGE, -8, "argument out of range: context, tokens, threads, ...")                                               \
    X(ABORTED, -9, "the caller's abort/progress callback asked to stop")                                               \
    X(STATE, -10, "call not valid in this state (e.g. session full)")

#define OX_ERR_ENUM_(name, code, what) OX_E_##name = code,
enum { OX_OK = 0, OX_ERR_CODES(OX_ERR_ENUM_) };
#undef OX_ERR_ENUM_

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
