/*
 * fail.c — kprof_last_error and the one way libkprof's files fail a public call: the thread's
 * error text set from a status and a message (or a kp_error). The bottom of libkprof: every
 * other file of it may call these, they call nothing of it.
 */
#include "libkprof/libkprof_internal.h"

#include <stdio.h>

static _Thread_local char kp_last_error_text[1664]; /* a kp_error message and a name */

const char *kprof_last_error(void)
{
    return kp_last_error_text;
}

kprof_status kp_inproc_fail(const char *function, kprof_status status, const char *message)
{
    snprintf(kp_last_error_text, sizeof kp_last_error_text, "%s: %s", function,
             message && *message ? message : kprof_strerror(status));
    return status;
}

kprof_status kp_inproc_fail_err(const char *function, kp_error *err)
{
    kprof_status st = err->status == KPROF_OK ? KPROF_IO : err->status;
    kp_inproc_fail(function, st, err->message);
    kp_error_clear(err);
    return st;
}

kprof_status kp_inproc_nomem(const char *function)
{
    return kp_inproc_fail(function, KPROF_NOMEM, "out of memory");
}
