/*
 * cupti_api.c — fills the CUPTI function table (see cupti_api.h).
 */
#define _GNU_SOURCE
#include "runtime/cupti_api.h"
#include "base/env.h"
#include "runtime/cupti_path.h"
#include "runtime/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

kp_cupti_api kp_cupti;

const char *const kp_cupti_libs[] = {"libcupti.so.13", "libcupti.so",
                                     "/usr/local/cuda/lib64/libcupti.so.13",
                                     "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", NULL};
static const char *const kp_cupti_names[] = {
#define KP_CUPTI_NAME_(fn) #fn,
    KP_CUPTI_FUNCTIONS(KP_CUPTI_NAME_)
#undef KP_CUPTI_NAME_
};

/* Record layouts are versioned by the API's major release (13xxxx). */
static kprof_status kp_cupti_check_version(kp_error *err)
{
    uint32_t version = 0;
    if (kp_cupti.cuptiGetVersion(&version) != CUPTI_SUCCESS)
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuptiGetVersion failed");
    if (version / 10000 != CUPTI_API_VERSION / 10000)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "CUPTI API version %u differs from the %d kprof was built with",
                            version, CUPTI_API_VERSION);
    return KPROF_OK;
}

static kp_dynlib_table kp_cupti_table = {
    .libname = "libcupti",
    .libs = kp_cupti_libs,
    .env = KP_ENV_CUPTI_LIBRARY,
    .symbols = kp_cupti_names,
    .slots = (void **)&kp_cupti,
    .count = sizeof kp_cupti_names / sizeof kp_cupti_names[0],
    .check = kp_cupti_check_version,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

kprof_status kp_cupti_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_cupti_table, err);
}

const char *kp_cupti_result_text(CUptiResult r)
{
    static _Thread_local char buf[160];
    const char *s = NULL;
    if (kp_cupti.cuptiGetResultString) kp_cupti.cuptiGetResultString(r, &s);
    snprintf(buf, sizeof buf, "%s (%d)", s ? s : "CUPTI_ERROR", (int)r);
    return buf;
}

kprof_status kp_cupti_library_path(char *buf, size_t n, kp_error *err)
{
    if (n) buf[0] = '\0';
    kprof_status st = kp_cupti_load(err);
    if (st != KPROF_OK) return st;
    Dl_info info;
    if (!dladdr(*(void **)&kp_cupti.cuptiGetVersion, &info) || !info.dli_fname)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "libcupti is loaded, but the dynamic loader does not say from which "
                            "file");
    snprintf(buf, n, "%s", info.dli_fname);
    return KPROF_OK;
}
