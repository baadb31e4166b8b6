/*
 * demangle.c — __cxa_demangle through dlopen (see demangle.h).
 */
#define _GNU_SOURCE
#include "core/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*kp_cxa_demangle_fn)(const char *, char *, size_t *, int *);

static pthread_once_t kp_dm_once = PTHREAD_ONCE_INIT;
static kp_cxa_demangle_fn kp_dm;

static void kp_dm_load(void)
{
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libc++abi.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) *(void **)&kp_dm = dlsym(h, "__cxa_demangle");
}

int kp_demangle(const char *sym, char *out, size_t n)
{
    if (n == 0) return 0;
    snprintf(out, n, "%s", sym ? sym : "");
    if (!sym || strncmp(sym, "_Z", 2) != 0) return 0;
    pthread_once(&kp_dm_once, kp_dm_load);
    if (!kp_dm) return 0;
    int status = -1;
    char *d = kp_dm(sym, NULL, NULL, &status);
    int demangled = status == 0 && d && strlen(d) < n;
    if (demangled) memcpy(out, d, strlen(d) + 1);
    free(d);
    return demangled;
}

int kp_demangle_name(const char *sym, size_t len, char *out, size_t n)
{
    if (len <= 2 || sym[0] != '_' || sym[1] != 'Z' || len >= 4096) return 0;
    kp_demangle(sym, out, n);
    return 1;
}
