/*
 * fail.c — kprof_last_error and the one way libkprof's files fail a public call: the thread's
 * error text set from a status and a message (or a kp_error). The bottom of libkprof: every
 * other file of it may call these, they call nothing of it.
 *
 * The text is per thread, kept through a pthread key rather than thread-local storage: a
 * 1.6 KB _Thread_local lives in the static TLS block when a build picks the initial-exec model,
 * and a libkprof loaded late (a Python extension's dlopen) could then fail to load with "cannot
 * allocate memory in static TLS block". A thread's buffer is made at its first failure and freed
 * when the thread exits.
 */
#include "libkprof/libkprof_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KP_FAIL_TEXT 1664 /* a kp_error message and a name */

static pthread_once_t kp_fail_once = PTHREAD_ONCE_INIT;
static pthread_key_t kp_fail_key;
static int kp_fail_key_made;

static void kp_fail_key_init(void)
{
    kp_fail_key_made = pthread_key_create(&kp_fail_key, free) == 0;
}

/* This thread's buffer; made when `make` (NULL when it cannot be). */
static char *kp_fail_text(int make)
{
    pthread_once(&kp_fail_once, kp_fail_key_init);
    if (!kp_fail_key_made) return NULL;
    char *text = pthread_getspecific(kp_fail_key);
    if (!text && make) {
        text = calloc(1, KP_FAIL_TEXT);
        if (text && pthread_setspecific(kp_fail_key, text) != 0) {
            free(text);
            text = NULL;
        }
    }
    return text;
}

const char *kprof_last_error(void)
{
    const char *text = kp_fail_text(0);
    return text ? text : "";
}

kprof_status kp_libkprof_fail(const char *function, kprof_status status, const char *message)
{
    char *text = kp_fail_text(1);
    if (text)
        snprintf(text, KP_FAIL_TEXT, "%s: %s", function,
                 message && *message ? message : kprof_strerror(status));
    return status;
}

kprof_status kp_libkprof_fail_err(const char *function, kp_error *err)
{
    kprof_status st = err->status == KPROF_OK ? KPROF_IO : err->status;
    kp_libkprof_fail(function, st, err->message);
    kp_error_clear(err);
    return st;
}

kprof_status kp_libkprof_nomem(const char *function)
{
    return kp_libkprof_fail(function, KPROF_NOMEM, "out of memory");
}
