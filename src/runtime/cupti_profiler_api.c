/*
 * cupti_profiler_api.c — fills the Range Profiler's function table (see cupti_profiler_api.h).
 */
#define _GNU_SOURCE
#include "runtime/cupti_profiler_api.h"
#include "base/env.h"
#include "runtime/cupti_api.h"
#include "runtime/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

kp_cupti_profiler_api kp_cuptip;

static const char *const kp_cuptip_names[] = {
#define KP_CUPTI_PROFILER_NAME_(fn) #fn,
    KP_CUPTI_PROFILER_FUNCTIONS(KP_CUPTI_PROFILER_NAME_)
#undef KP_CUPTI_PROFILER_NAME_
};

static kp_dynlib_table kp_cuptip_table = {
    .libname = "libcupti",
    .libs = kp_cupti_libs,
    .env = KP_ENV_CUPTI_LIBRARY,
    .symbols = kp_cuptip_names,
    .slots = (void **)&kp_cuptip,
    .count = sizeof kp_cuptip_names / sizeof kp_cuptip_names[0],
    .hint = " (CUPTI 12.6 or newer is needed: the toolkit's extras/CUPTI/lib64, or name it with "
            "KPROF_CUPTI_LIBRARY)",
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

#if defined(__SANITIZE_ADDRESS__)
#define KP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KP_ASAN 1
#endif
#endif

/* libcupti opens PerfWorks (libnvperf_host.so) with RTLD_DEEPBIND, which AddressSanitizer
 * refuses by ending the process: in a sanitized kprof the real libcupti's profiler is
 * unavailable, said in words. A stand-in named otherwise (the tests' fake_cupti) is let in. */
static kprof_status kp_cupti_profiler_sanitized(kp_error *err)
{
#ifdef KP_ASAN
    Dl_info info;
    void *sym = *(void **)&kp_cuptip.cuptiProfilerInitialize;
    const char *base = NULL;
    if (dladdr(sym, &info) && info.dli_fname) {
        base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
    }
    if (!base || strncmp(base, "libcupti", 8) == 0)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "this kprof is built with AddressSanitizer, under which libcupti "
                            "cannot load PerfWorks (libnvperf_host.so opened with RTLD_DEEPBIND): "
                            "use a build without sanitizers for GPU counters");
#else
    (void)err;
#endif
    return KPROF_OK;
}

kprof_status kp_cupti_profiler_load(kp_error *err)
{
    kp_error e = {0};
    kprof_status st = kp_dynlib_load_table(&kp_cuptip_table, &e);
    if (st == KPROF_OK) return kp_cupti_profiler_sanitized(err);
    /* dynlib says "libcupti lacks SYMBOL (too old?)": say how old is too old. */
    char *why = e.message, *too_old = strstr(why, " (too old?)");
    if (too_old && strstr(why, " lacks "))
        snprintf(too_old, sizeof e.message - (size_t)(too_old - why),
                 ": CUPTI 12.6 or newer is needed (its Range Profiler)");
    kp_error_set(err, st, "%s", why);
    kp_error_clear(&e);
    return st;
}

const char *kp_cupti_profiler_result_text(CUptiResult r)
{
    static _Thread_local char buf[160];
    const char *s = NULL;
    if (kp_cuptip.cuptiGetResultString) kp_cuptip.cuptiGetResultString(r, &s);
    snprintf(buf, sizeof buf, "%s (%d)", s ? s : "CUPTI_ERROR", (int)r);
    return buf;
}
