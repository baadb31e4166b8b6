/*
 * error.h — the detailed error that travels with a kprof_status inside the library.
 *
 * Every internal function that can fail takes a kp_error *, fills it once (the first failure
 * wins) and returns the status. The message names what was wrong and where; a compiler log,
 * when there is one, travels beside it untouched.
 */
#ifndef KP_BASE_ERROR_H
#define KP_BASE_ERROR_H

#include "kprof.h"

#include <stddef.h>

typedef struct kp_error {
    kprof_status status; /* KPROF_OK until something fails */
    char message[1536];  /* one or more lines, no trailing newline */
    char *log;           /* compiler log as the compiler gave it; heap, may be NULL */
} kp_error;

/* Set status and message (printf format) unless an error is already set. Returns the status
 * now held by err, so callers can `return kp_error_set(...)`. err may be NULL. Every %s argument
 * is escaped (kp_str_append_escaped: a newline becomes `\n`, a control character or a byte that
 * is not UTF-8 `\xNN`), so user text cannot split the message; a line break meant by kprof goes
 * in the format itself. */
kprof_status kp_error_set(kp_error *err, kprof_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* KPROF_NOMEM with the one message every allocation failure gives ("out of memory"); returns
 * KPROF_NOMEM. err may be NULL. */
kprof_status kp_error_nomem(kp_error *err);

/* Add to the message of the error already set (printf format, %s arguments escaped as above,
 * cut to fit). err may be NULL. */
void kp_error_append(kp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Add text that kprof composed itself, line breaks kept and nothing escaped again: a list built
 * with kp_str_printf_escaped (its arguments escaped, its "\n  " its own). err may be NULL. */
void kp_error_append_lines(kp_error *err, const char *text);

/* Take ownership of a heap string as the error's compiler log (replacing any earlier one). */
void kp_error_take_log(kp_error *err, char *log);

/* Hand src's error (message and log) to dst, first failure winning: dst takes it unless dst is
 * NULL or holds an error already, in which case src's is freed. src is left KPROF_OK. Returns
 * the status dst holds. */
kprof_status kp_error_move(kp_error *dst, kp_error *src);

/* Free what the error holds and reset it to KPROF_OK. err may be NULL. */
void kp_error_clear(kp_error *err);

#endif
