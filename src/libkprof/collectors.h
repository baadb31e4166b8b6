/*
 * collectors.h — what an in-process session can record, one entry per collector of
 * include/kprof.h's KPROF_COLLECTOR_LIST: a const table filled with designated initializers, as
 * the backends' (PAPI's component vectors). kprof_start asks each collector its options name
 * whether it can run (`unavailable`: NULL, or the reason, which kprof_last_error gives as it is),
 * then starts them in the table's order once the session's writer is recording, and kprof_stop
 * stops them in reverse order before the last drain, so what they flush reaches the trace.
 *
 * The scopes need nothing started (their hot path is in scope.c); CUDA (CUPTI in this process)
 * and OpenCL come next: each fills in its entry and writes its records through the session's
 * writer (collect/writer.h) as libkprof-inject.so's collectors do, so one merge reads them all.
 */
#ifndef KP_LIBKPROF_COLLECTORS_H
#define KP_LIBKPROF_COLLECTORS_H

#include "base/error.h"
#include "libkprof/libkprof_internal.h"

#include <stddef.h>

typedef struct kp_libkprof_collector {
    const char *name; /* "scopes": KPROF_COLLECTOR_LIST's name */
    unsigned bit;     /* its KPROF_COLLECT_* */
    /* NULL when it can run here; else why not, for kprof_last_error. */
    const char *(*unavailable)(void);
    /* Start recording into the session's writer (NULL: nothing to start). */
    kprof_status (*start)(kp_session *s, kp_error *err);
    /* Stop and flush what it holds into the writer (NULL: nothing to stop). */
    void (*stop)(kp_session *s);
} kp_libkprof_collector;

/* The CUDA collector's entry points (cuda.c): unavailable says why not in a build without CUDA
 * (NULL with it: whether CUPTI can run is found at start). */
const char *kp_libkprof_cuda_unavailable(void);
kprof_status kp_libkprof_cuda_start(kp_session *s, kp_error *err);
void kp_libkprof_cuda_stop(kp_session *s);

/* The OpenCL collector's (opencl.c): libkprof-inject.so as an OpenCL layer. */
const char *kp_libkprof_opencl_unavailable(void);
kprof_status kp_libkprof_opencl_start(kp_session *s, kp_error *err);
void kp_libkprof_opencl_stop(kp_session *s);

/* The NVTX collector's (nvtx.c): libkprof-inject.so as the program's NVTX injection. */
const char *kp_libkprof_nvtx_unavailable(void);
kprof_status kp_libkprof_nvtx_start(kp_session *s, kp_error *err);
void kp_libkprof_nvtx_stop(kp_session *s);

/* libkprof-inject.so's path in out (PATH_MAX): $KPROF_INJECT_LIBRARY, else beside libkprof. 0,
 * or -1 when there is none. */
int kp_libkprof_inject_library(char *out);

extern const kp_libkprof_collector kp_libkprof_collectors[];
extern const size_t kp_libkprof_collector_count;

#endif
