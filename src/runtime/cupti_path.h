/*
 * cupti_path.h — where the CUPTI library kprof loads lives, askable in every build (no CUPTI
 * header needed): cupti_api.c answers in a CUDA build, cupti_path.c (UNAVAILABLE) in one
 * without.
 */
#ifndef KP_CUPTI_PATH_H
#define KP_CUPTI_PATH_H

#include "base/error.h"

#include <stddef.h>

/* The full path of the CUPTI library kprof's CUDA support loads (`kprof trace` hands it to the
 * CUDA collector as KPROF_CUPTI_LIBRARY) into buf (n bytes): KPROF_OK; or KPROF_UNAVAILABLE with
 * why in err when there is none (no CUDA support in this build, CUPTI missing or too old, or the
 * loader cannot say which file it loaded). */
kprof_status kp_cupti_library_path(char *buf, size_t n, kp_error *err);

#endif
