/*
 * cupti_path.c — kp_cupti_library_path in a build without CUDA: there is no CUPTI to name.
 */
#include "runtime/cupti_path.h"

int kp_cupti_library_path(char *buf, size_t n)
{
    (void)buf;
    (void)n;
    return -1;
}
