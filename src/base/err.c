/* err.c — see err.h. */
#include "base/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int ox_errf(ox_err *e, int code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int ox_err_prefix(ox_err *e, const char *fmt, ...) {
    if (!e) return OX_E_STATE;
    char pre[OX_ERR_MSG], old[OX_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Messages are bounded: a combined message that does not fit ends in "..." so the cut shows. */
    if (snprintf(e->msg, sizeof e->msg, "%s: %s", pre, old) >= (int)sizeof e->msg)
        memcpy(e->msg + sizeof e->msg - 4, "...", 4);
    return e->code;
}

const char *ox_err_code_name(int code) {
    switch (code) {
    case OX_OK: return "OK";
    case OX_E_IO: return "IO";
    case OX_E_FORMAT: return "FORMAT";
    case OX_E_TRUNCATED: return "TRUNCATED";
    case OX_E_UNSUPPORTED: return "UNSUPPORTED";
    case OX_E_MISSING: return "MISSING";
    case OX_E_CONFIG: return "CONFIG";
    case OX_E_NOMEM: return "NOMEM";
    case OX_E_RANGE: return "RANGE";
    case OX_E_ABORTED: return "ABORTED";
    case OX_E_STATE: return "STATE";
    default: return "UNKNOWN";
    }
}

int ox_mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int ox_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return -1;
    *out = a + b;
    return 0;
}
