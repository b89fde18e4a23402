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
#define OX_ERR_NAME_(name, c, what)                                                                                    \
    if (code == c) return #name;
    OX_ERR_CODES(OX_ERR_NAME_)
#undef OX_ERR_NAME_
    return code == OX_OK ? "OK" : "UNKNOWN";
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
