/*
 * cupti_path.h — where the CUPTI library kprof loads lives, askable in every build (no CUPTI
 * header needed): cupti_api.c answers in a CUDA build, cupti_path.c (-1) in one without.
 */
#ifndef KP_CUPTI_PATH_H
#define KP_CUPTI_PATH_H

#include <stddef.h>

/* The full path of the CUPTI library kprof's CUDA support loads (`kprof trace` hands it to the
 * CUDA collector as KPROF_CUPTI_LIBRARY), or -1 when there is none (no CUDA support, or CUPTI
 * missing). */
int kp_cupti_library_path(char *buf, size_t n);

#endif
