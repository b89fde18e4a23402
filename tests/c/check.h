/* check.h — the C tests' assertions: count, report, exit status. No framework.
 * A test file defines tests as functions and calls them from main via RUN(); main ends
 * with `return check_summary("name");`, which prints "N passed, N failed". */
#ifndef OX_CHECK_H
#define OX_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_pass_, check_fail_;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (cond) check_pass_++;                                                                                       \
        else {                                                                                                         \
            check_fail_++;                                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)
#define CHECK_MSG(cond, ...)                                                                                           \
    do {                                                                                                               \
        if (cond) check_pass_++;                                                                                       \
        else {                                                                                                         \
            check_fail_++;                                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                                          \
    do {                                                                                                               \
        double a_ = (a), b_ = (b);                                                                                     \
        CHECK_MSG(fabs(a_ - b_) <= (tol), "%s = %.9g, %s = %.9g, tol %.3g", #a, a_, #b, b_, (double)(tol));            \
    } while (0)
#define CHECK_STR_CONTAINS(hay, needle)                                                                                \
    CHECK_MSG(strstr((hay), (needle)) != NULL, "\"%s\" does not contain \"%s\"", (hay), (needle))
/* e (an ox_err) holds code and its message names file and says what: the project's rule for
 * errors (the test includes err.h, for ox_err_code_name). */
#define CHECK_ERR(e, want, file, what)                                                                                 \
    do {                                                                                                               \
        CHECK_MSG((e).code == (want), "code %s, expected %s (%s): %s", ox_err_code_name((e).code),                     \
                  ox_err_code_name(want), (what), (e).msg);                                                            \
        CHECK_STR_CONTAINS((e).msg, (file));                                                                           \
        CHECK_STR_CONTAINS((e).msg, (what));                                                                           \
    } while (0)
#define RUN(fn)                                                                                                        \
    do {                                                                                                               \
        fprintf(stderr, "-- %s\n", #fn);                                                                               \
        fn();                                                                                                          \
    } while (0)

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_pass_, check_fail_);
    return check_fail_ ? 1 : 0;
}

#endif
