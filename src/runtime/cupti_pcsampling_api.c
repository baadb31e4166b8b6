/*
 * cupti_pcsampling_api.c — fills the CUPTI PC Sampling table (see cupti_pcsampling_api.h) from
 * the libcupti kprof's CUPTI table loads.
 */
#include "runtime/cupti_pcsampling_api.h"
#include "base/env.h"
#include "runtime/cupti_api.h"
#include "runtime/dynlib.h"

kp_cupti_pcsampling_api kp_cupti_pcs;

static const char *const kp_cupti_pcs_names[] = {
#define KP_CUPTI_PCS_NAME_(fn) #fn,
    KP_CUPTI_PCSAMPLING_FUNCTIONS(KP_CUPTI_PCS_NAME_)
#undef KP_CUPTI_PCS_NAME_
};

/* The version check and error texts are kprof's CUPTI table's: load it first. */
static kprof_status kp_cupti_pcs_check(kp_error *err)
{
    return kp_cupti_load(err);
}

static kp_dynlib_table kp_cupti_pcs_table = {
    .libname = "libcupti",
    .libs = kp_cupti_libs, /* the names cupti_api.c tries: one libcupti for both */
    .env = KP_ENV_CUPTI_LIBRARY,
    .symbols = kp_cupti_pcs_names,
    .slots = (void **)&kp_cupti_pcs,
    .count = sizeof kp_cupti_pcs_names / sizeof kp_cupti_pcs_names[0],
    .check = kp_cupti_pcs_check,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

kprof_status kp_cupti_pcsampling_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_cupti_pcs_table, err);
}
