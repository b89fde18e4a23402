/* fuzz.h — shared by the libFuzzer harnesses (and by tests/c/test_errors.c, which replays
 * the committed regression inputs through the same functions).
 * The contract every harness checks: a bad input returns a known negative OX_E_* code with
 * a non-empty message; anything else (crash, leak, UB, silent failure) is a finding. */
#ifndef OX_FUZZ_H
#define OX_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

/* Abort (a finding) unless rc is a stable error code and err carries a message. */
static inline void fuzz_expect_error(int rc, const ox_err *err) {
    if (rc < OX_E_STATE || rc > OX_E_IO || err->code != rc || !err->msg[0] || !memchr(err->msg, 0, sizeof err->msg)) {
        fprintf(stderr, "fuzz: bad error report: rc %d, err.code %d, msg \"%.*s\"\n", rc, err->code,
                (int)sizeof err->msg, err->msg);
        abort();
    }
}

static inline void fuzz_assert(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz: invariant violated: %s\n", what);
        abort();
    }
}

#endif
