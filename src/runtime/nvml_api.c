/*
 * nvml_api.c — fills the NVML function table (see nvml_api.h).
 */
#include "runtime/nvml_api.h"
#include "base/env.h"
#include "runtime/dynlib.h"

#include <pthread.h>
#include <stdio.h>

kp_nvml_api kp_nvml;

static const char *const kp_nvml_libs[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
static const char *const kp_nvml_names[] = {
#define KP_NVML_NAME_(fn, optional, ret, params) #fn,
    KP_NVML_FUNCTIONS(KP_NVML_NAME_)
#undef KP_NVML_NAME_
};
static const unsigned char kp_nvml_optional[] = {
#define KP_NVML_OPTIONAL_(fn, optional, ret, params) optional,
    KP_NVML_FUNCTIONS(KP_NVML_OPTIONAL_)
#undef KP_NVML_OPTIONAL_
};

static kp_dynlib_table kp_nvml_table = {
    .libname = "libnvidia-ml",
    .libs = kp_nvml_libs,
    .env = KP_ENV_NVML_LIBRARY,
    .symbols = kp_nvml_names,
    .slots = (void **)&kp_nvml,
    .optional = kp_nvml_optional,
    .count = sizeof kp_nvml_names / sizeof kp_nvml_names[0],
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

kprof_status kp_nvml_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_nvml_table, err);
}

void kp_nvml_error_text(kp_nvml_return rc, char *buf, size_t n)
{
    const char *text = kp_nvml.nvmlErrorString ? kp_nvml.nvmlErrorString(rc) : NULL;
    snprintf(buf, n, "%s (%d)", text && *text ? text : "NVML error", (int)rc);
}
