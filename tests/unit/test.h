/*
 * test.h — the smallest test harness that does the job: CHECK macros count failures and print
 * where; a test file's main returns 1 when anything failed. Each file runs as its own process.
 */
#ifndef KP_TEST_H
#define KP_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int kp_test_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            kp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_); \
            kp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || strcmp(a_, b_) != 0) {                                                          \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,      \
                    a_ ? a_ : "(null)", b_);                                                       \
            kp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_)) {                                                              \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    h_ ? h_ : "(null)", n_);                                                       \
            kp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            fprintf(stderr, "%s:%d: %s == %.17g, expected %.17g\n", __FILE__, __LINE__, #a, a_,    \
                    b_);                                                                           \
            kp_test_failures++;                                                                    \
        }                                                                                          \
    } while (0)

#define TEST_DONE()                                                                                \
    do {                                                                                           \
        if (kp_test_failures) fprintf(stderr, "%d check(s) failed\n", kp_test_failures);           \
        return kp_test_failures ? 1 : 0;                                                           \
    } while (0)

#endif
