/*
 * dynlib.h — loading a runtime library with dlopen and keeping why it failed, in words a user
 * can act on. Backends and collectors build their function tables on top of this.
 */
#ifndef KP_BACKEND_DYNLIB_H
#define KP_BACKEND_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

/* Try each name in turn (NULL-terminated list); an environment variable named by env_override
 * (may be NULL), when set, is tried first and alone. Returns the handle or NULL with a reason
 * such as "libcuda.so.1 not found" in why[]. */
void *kp_dynlib_open(const char *const *names, const char *env_override, char *why, size_t why_n);

/* Resolve `count` symbols named by names[] into slots[]. A missing one that is not optional
 * (optional[i] == 0 or optional == NULL) fails: -1 with "LIB lacks SYMBOL" in why[]. Optional
 * ones stay NULL. */
int kp_dynlib_resolve(void *handle, const char *libname, const char *const *names, void **slots,
                      const unsigned char *optional, size_t count, char *why, size_t why_n);

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
    const char *hint;                      /* appended when the library is missing, or NULL */
    int (*check)(char *why, size_t why_n); /* after loading (a version check), or NULL */
    pthread_mutex_t lock;
    int done, status; /* status 0 = loaded */
    char why[512];    /* why it is not */
} kp_dynlib_table;

/* Load the table the first time (later calls return the first answer). 0, or -1 with the
 * reason in why[]. */
int kp_dynlib_load_table(kp_dynlib_table *t, char *why, size_t why_n);

#endif
