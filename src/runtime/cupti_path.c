/*
 * cupti_path.c — kp_cupti_library_path in a build without CUDA: there is no CUPTI to name.
 */
#include "runtime/cupti_path.h"

kprof_status kp_cupti_library_path(char *buf, size_t n, kp_error *err)
{
    if (n) buf[0] = '\0';
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "this kprof is built without CUDA support: no CUPTI");
}
