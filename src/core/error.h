/*
 * error.h — the detailed error that travels with a kprof_status inside the library.
 *
 * Every internal function that can fail takes a kp_error *, fills it once (the first failure
 * wins) and returns the status. The message names what was wrong and where; a compiler log,
 * when there is one, travels beside it untouched.
 */
#ifndef KP_CORE_ERROR_H
#define KP_CORE_ERROR_H

#include "kprof.h"

#include <stddef.h>

typedef struct kp_error {
    kprof_status status; /* KPROF_OK until something fails */
    char message[1536];  /* one or more lines, no trailing newline */
    char *log;           /* compiler log as the compiler gave it; heap, may be NULL */
    char *detail;        /* extra lines printed after the message (e.g. a list); heap or NULL */
} kp_error;

/* Set status and message (printf format) unless an error is already set. Returns the status
 * now held by err, so callers can `return kp_error_set(...)`. err may be NULL. */
kprof_status kp_error_set(kp_error *err, kprof_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Take ownership of a heap string as the error's log or detail (replacing any earlier one). */
void kp_error_take_log(kp_error *err, char *log);
void kp_error_take_detail(kp_error *err, char *detail);

/* Free what the error holds and reset it to KPROF_OK. err may be NULL. */
void kp_error_clear(kp_error *err);

#endif
