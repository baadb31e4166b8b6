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
static int kp_cupti_check_version(char *why, size_t why_n)
{
    uint32_t version = 0;
    if (kp_cupti.cuptiGetVersion(&version) != CUPTI_SUCCESS) {
        snprintf(why, why_n, "cuptiGetVersion failed");
        return -1;
    }
    if (version / 10000 != CUPTI_API_VERSION / 10000) {
        snprintf(why, why_n, "CUPTI API version %u differs from the %d kprof was built with",
                 version, CUPTI_API_VERSION);
        return -1;
    }
    return 0;
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

int kp_cupti_load(char *why, size_t why_n)
{
    return kp_dynlib_load_table(&kp_cupti_table, why, why_n);
}

const char *kp_cupti_result_text(CUptiResult r)
{
    static _Thread_local char buf[160];
    const char *s = NULL;
    if (kp_cupti.cuptiGetResultString) kp_cupti.cuptiGetResultString(r, &s);
    snprintf(buf, sizeof buf, "%s (%d)", s ? s : "CUPTI_ERROR", (int)r);
    return buf;
}

int kp_cupti_library_path(char *buf, size_t n)
{
    char why[512];
    if (kp_cupti_load(why, sizeof why) != 0) return -1;
    Dl_info info;
    if (!dladdr(*(void **)&kp_cupti.cuptiGetVersion, &info) || !info.dli_fname) return -1;
    snprintf(buf, n, "%s", info.dli_fname);
    return 0;
}
