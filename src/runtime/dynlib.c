/*
 * dynlib.c — dlopen with a kept, readable failure reason (see dynlib.h).
 */
#define _GNU_SOURCE
#include "runtime/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *kp_dynlib_open(const char *const *names, const char *env_override, char *why, size_t why_n)
{
    const char *forced = env_override ? getenv(env_override) : NULL;
    if (forced && *forced) {
        void *h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(why, why_n, "%s (from %s) could not be loaded: %s", forced, env_override,
                     e ? e : "unknown error");
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
        snprintf(why, why_n, "%s not found", names[0]);
    else
        snprintf(why, why_n, "%s could not be loaded: %s", names[0], first_error);
    return NULL;
}

int kp_dynlib_load_table(kp_dynlib_table *t, char *why, size_t why_n)
{
    pthread_mutex_lock(&t->lock);
    if (!t->done) {
        t->done = 1;
        t->status = -1;
        void *h = kp_dynlib_open(t->libs, t->env, t->why, sizeof t->why);
        if (!h) {
            if (t->hint) {
                size_t n = strlen(t->why);
                snprintf(t->why + n, sizeof t->why - n, "%s", t->hint);
            }
        } else if (kp_dynlib_resolve(h, t->libname, t->symbols, t->slots, t->optional, t->count,
                                     t->why, sizeof t->why) == 0 &&
                   (!t->check || t->check(t->why, sizeof t->why) == 0)) {
            t->status = 0;
        }
    }
    int status = t->status;
    if (status != 0) snprintf(why, why_n, "%s", t->why);
    pthread_mutex_unlock(&t->lock);
    return status;
}

int kp_dynlib_resolve(void *handle, const char *libname, const char *const *names, void **slots,
                      const unsigned char *optional, size_t count, char *why, size_t why_n)
{
    for (size_t i = 0; i < count; i++) {
        slots[i] = dlsym(handle, names[i]);
        if (!slots[i] && !(optional && optional[i])) {
            snprintf(why, why_n, "%s lacks %s (too old?)", libname, names[i]);
            return -1;
        }
    }
    return 0;
}
