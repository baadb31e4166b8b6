/*
 * cupti_api.c — fills the CUPTI function table (see cupti_api.h).
 */
#include "backend/cuda/cupti_api.h"
#include "backend/dynlib.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

kp_cupti_api kp_cupti;

static pthread_once_t kp_cupti_once = PTHREAD_ONCE_INIT;
static int kp_cupti_status = -1;
static char kp_cupti_why[512];

static void kp_cupti_load_once(void)
{
    static const char *const libs[] = {"libcupti.so.13", "libcupti.so",
                                       "/usr/local/cuda/lib64/libcupti.so.13",
                                       "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", NULL};
    static const char *const names[] = {
#define KP_CUPTI_NAME_(fn) #fn,
        KP_CUPTI_FUNCTIONS(KP_CUPTI_NAME_)
#undef KP_CUPTI_NAME_
    };
    void *h = kp_dynlib_open(libs, "KPROF_CUPTI_LIBRARY", kp_cupti_why, sizeof kp_cupti_why);
    if (!h) return;
    if (kp_dynlib_resolve(h, "libcupti", names, (void **)&kp_cupti, NULL,
                          sizeof names / sizeof names[0], kp_cupti_why, sizeof kp_cupti_why) != 0)
        return;
    uint32_t version = 0;
    if (kp_cupti.cuptiGetVersion(&version) != CUPTI_SUCCESS) {
        snprintf(kp_cupti_why, sizeof kp_cupti_why, "cuptiGetVersion failed");
        return;
    }
    /* Record layouts are versioned by the API's major release (13xxxx). */
    if (version / 10000 != CUPTI_API_VERSION / 10000) {
        snprintf(kp_cupti_why, sizeof kp_cupti_why,
                 "CUPTI API version %u differs from the %d kprof was built with", version,
                 CUPTI_API_VERSION);
        return;
    }
    kp_cupti_status = 0;
}

int kp_cupti_load(char *why, size_t why_n)
{
    pthread_once(&kp_cupti_once, kp_cupti_load_once);
    if (kp_cupti_status != 0) snprintf(why, why_n, "%s", kp_cupti_why);
    return kp_cupti_status;
}

const char *kp_cupti_result_text(CUptiResult r)
{
    static _Thread_local char buf[160];
    const char *s = NULL;
    if (kp_cupti.cuptiGetResultString) kp_cupti.cuptiGetResultString(r, &s);
    snprintf(buf, sizeof buf, "%s (%d)", s ? s : "CUPTI_ERROR", (int)r);
    return buf;
}
