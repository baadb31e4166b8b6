/*
 * dynlib.h — loading a runtime library with dlopen and keeping why it failed, in words a user
 * can act on. Backends and collectors build their function tables on top of this.
 */
#ifndef KP_BACKEND_DYNLIB_H
#define KP_BACKEND_DYNLIB_H

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

#endif
