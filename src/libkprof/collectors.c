/*
 * collectors.c — the table of what an in-process session records (see collectors.h).
 */
#include "libkprof/collectors.h"

static kprof_status kp_scopes_start(kp_session *s, kp_error *err)
{
    (void)err;
    kp_rings_set_entries(s->ring_entries);
    return KPROF_OK;
}

const kp_libkprof_collector kp_libkprof_collectors[] = {
    {.name = "scopes", .bit = KPROF_COLLECT_SCOPES, .start = kp_scopes_start},
    {.name = "cuda",
     .bit = KPROF_COLLECT_CUDA,
     .unavailable = kp_libkprof_cuda_unavailable,
     .start = kp_libkprof_cuda_start,
     .stop = kp_libkprof_cuda_stop},
    {.name = "opencl",
     .bit = KPROF_COLLECT_OPENCL,
     .unavailable = kp_libkprof_opencl_unavailable,
     .start = kp_libkprof_opencl_start,
     .stop = kp_libkprof_opencl_stop},
    {.name = "nvtx",
     .bit = KPROF_COLLECT_NVTX,
     .unavailable = kp_libkprof_nvtx_unavailable,
     .start = kp_libkprof_nvtx_start,
     .stop = kp_libkprof_nvtx_stop},
};

const size_t kp_libkprof_collector_count =
    sizeof kp_libkprof_collectors / sizeof kp_libkprof_collectors[0];

/* Every collector of the public list has its entry, in the list's order. */
#define KP_COLLECTOR_CHECK_(NAME, bit, name, what) +1
_Static_assert(sizeof kp_libkprof_collectors / sizeof kp_libkprof_collectors[0] ==
                   0 KPROF_COLLECTOR_LIST(KP_COLLECTOR_CHECK_),
               "one entry per KPROF_COLLECTOR_LIST row");
#undef KP_COLLECTOR_CHECK_
