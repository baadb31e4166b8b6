/*
 * dynlib.h — loading a runtime library with dlopen and keeping why it failed, in words a user
 * can act on. Backends and collectors build their function tables on top of this.
 */
#ifndef KP_BACKEND_DYNLIB_H
#define KP_BACKEND_DYNLIB_H

#include "base/error.h"

#include <pthread.h>
#include <stddef.h>

/* Try each name in turn (NULL-terminated list); an environment variable named by env_override
 * (may be NULL), when set, is tried first and alone. Returns the handle, or NULL with err set
 * (KPROF_UNAVAILABLE) to a reason such as "libcuda.so.1 not found". */
void *kp_dynlib_open(const char *const *names, const char *env_override, kp_error *err);

/* Resolve `count` symbols named by names[] into slots[]. A missing one that is not optional
 * (optional[i] == 0 or optional == NULL) fails: KPROF_UNAVAILABLE, "LIB lacks SYMBOL (too old?)" in
 * err. Optional ones stay NULL. */
kprof_status kp_dynlib_resolve(void *handle, const char *libname, const char *const *names,
                               void **slots, const unsigned char *optional, size_t count,
                               kp_error *err);

/* A runtime library's function table, loaded once, thread-safely, on first use. Fill the
 * description fields in a static initializer (with .lock = PTHREAD_MUTEX_INITIALIZER); the state
 * fields belong to kp_dynlib_load_table. */
typedef struct kp_dynlib_table {
    const char *libname;           /* for messages: "libcuda" */
    const char *const *libs;       /* names to try, NULL-terminated */
    const char *env;               /* a variable naming the library to load instead */
    const char *const *symbols;    /* count symbol names ... */
    void **slots;                  /* ... and where their addresses go */
    const unsigned char *optional; /* count flags: 1 = may be missing (stays NULL); or NULL */
    size_t count;
    const char *hint;                     /* appended when the library is missing, or NULL */
    kprof_status (*check)(kp_error *err); /* after loading (a version check), or NULL */
    pthread_mutex_t lock;
    int done;
    kprof_status status; /* KPROF_OK = loaded */
    char why[512];       /* why it is not */
} kp_dynlib_table;

/* Load the table the first time (later calls give the first answer again). KPROF_OK, or
 * KPROF_UNAVAILABLE with the reason in err (the library missing, a symbol missing, or what
 * check said). */
kprof_status kp_dynlib_load_table(kp_dynlib_table *t, kp_error *err);

#endif
