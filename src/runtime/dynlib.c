/*
 * dynlib.c — dlopen with a kept, readable failure reason (see dynlib.h).
 */
#define _GNU_SOURCE
#include "runtime/dynlib.h"
#include "base/util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *kp_dynlib_open(const char *const *names, const char *env_override, kp_error *err)
{
    const char *forced = env_override ? getenv(env_override) : NULL;
    if (forced && *forced) {
        void *h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            kp_error_set(err, KPROF_UNAVAILABLE, "%s (from %s) could not be loaded: %s", forced,
                         env_override, e ? e : "unknown error");
        }
        return h;
    }
    char first_error[512] = "";
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        const char *e = dlerror();
        if (i == 0 && e) snprintf(first_error, sizeof first_error, "%s", e);
    }
    /* dlerror says "cannot open shared object file: No such file or directory" for the usual
     * case; say it the short way and keep anything else verbatim. */
    if (!*first_error || strstr(first_error, "No such file"))
        kp_error_set(err, KPROF_UNAVAILABLE, "%s not found", names[0]);
    else
        kp_error_set(err, KPROF_UNAVAILABLE, "%s could not be loaded: %s", names[0], first_error);
    return NULL;
}

kprof_status kp_dynlib_load_table(kp_dynlib_table *t, kp_error *err)
{
    pthread_mutex_lock(&t->lock);
    if (!t->done) {
        t->done = 1;
        t->status = KPROF_UNAVAILABLE;
        kp_error why = {0};
        void *h = kp_dynlib_open(t->libs, t->env, &why);
        if (!h) {
            if (t->hint) kp_error_append(&why, "%s", t->hint);
        } else if (kp_dynlib_resolve(h, t->libname, t->symbols, t->slots, t->optional, t->count,
                                     &why) == KPROF_OK &&
                   (!t->check || t->check(&why) == KPROF_OK)) {
            t->status = KPROF_OK;
        }
        if (t->status != KPROF_OK) {
            if (why.status != KPROF_OK) t->status = why.status;
            kp_strlcpy(t->why, why.message, sizeof t->why);
        }
        kp_error_clear(&why);
    }
    kprof_status status = t->status;
    if (status != KPROF_OK) kp_error_set(err, status, "%s", t->why);
    pthread_mutex_unlock(&t->lock);
    return status;
}

kprof_status kp_dynlib_resolve(void *handle, const char *libname, const char *const *names,
                               void **slots, const unsigned char *optional, size_t count,
                               kp_error *err)
{
    for (size_t i = 0; i < count; i++) {
        slots[i] = dlsym(handle, names[i]);
        if (!slots[i] && !(optional && optional[i]))
            return kp_error_set(err, KPROF_UNAVAILABLE, "%s lacks %s (too old?)", libname,
                                names[i]);
    }
    return KPROF_OK;
}
