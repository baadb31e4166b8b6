/*
 * fail.c — kprof_last_error and the one way libkprof's files fail a public call: the thread's
 * error text set from a status and a message (or a kp_error). The bottom of libkprof: every
 * other file of it may call these, they call nothing of it.
 *
 * The text lives in a buffer per thread reached through a pthread key (made at the thread's
 * first failure, freed when it ends), not in a thread-local array: libkprof.so has initial-exec
 * TLS (the scopes' hot path, scope.c), so its whole TLS block is carved from the static TLS
 * surplus when it is dlopened (a Python extension linking it), and a 1.6 KB array there made
 * that dlopen fail ("cannot allocate memory in static TLS block") once other libraries had taken
 * their share.
 */
#include "libkprof/libkprof_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KP_LAST_ERROR_SIZE 1664 /* a kp_error message and a name */

static pthread_key_t kp_last_error_key;
static pthread_once_t kp_last_error_once = PTHREAD_ONCE_INIT;
static int kp_last_error_keyed; /* 1 once the key exists */

static void kp_last_error_make_key(void)
{
    kp_last_error_keyed = pthread_key_create(&kp_last_error_key, free) == 0;
}

/* This thread's buffer, made when make is set; NULL when there is none (or no memory). */
static char *kp_last_error_buffer(int make)
{
    pthread_once(&kp_last_error_once, kp_last_error_make_key);
    if (!kp_last_error_keyed) return NULL;
    char *text = pthread_getspecific(kp_last_error_key);
    if (!text && make) {
        text = calloc(1, KP_LAST_ERROR_SIZE);
        if (text && pthread_setspecific(kp_last_error_key, text) != 0) {
            free(text);
            text = NULL;
        }
    }
    return text;
}

const char *kprof_last_error(void)
{
    const char *text = kp_last_error_buffer(0);
    return text ? text : "";
}

kprof_status kp_inproc_fail(const char *function, kprof_status status, const char *message)
{
    char *text = kp_last_error_buffer(1);
    if (text)
        snprintf(text, KP_LAST_ERROR_SIZE, "%s: %s", function,
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
