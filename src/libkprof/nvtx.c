/*
 * nvtx.c — the in-process NVTX collector of a libkprof session (KPROF_COLLECT_NVTX, on by default
 * with the CUDA and OpenCL collectors): the program's NVTX ranges and marks, recorded the way
 * `kprof trace` records them, by libkprof-inject.so as the program's NVTX injection.
 *
 * kprof_start names the inject library in NVTX_INJECTION64_PATH with the session's folder in
 * KPROF_TRACE_DIR; each copy of NVTX in the program loads it at its first NVTX call, and its
 * records go into the session's folder beside the scopes' (and the OpenCL layer's, with which it
 * shares the inject library's writer). So, as for OpenCL, the first session must start before
 * the program's first NVTX call (or KPROF=1 starts one at load). kprof_stop ends the file
 * (kprof_inject_nvtx_stop, unless the OpenCL collector's stop does), and a later session
 * restarts it in its own folder (kprof_inject_nvtx_start). Under `kprof trace`, or beside another
 * NVTX injection (Nsight Systems), it stands aside and says why.
 */
#define _GNU_SOURCE
#include "collect/writer.h"
#include "base/env.h"
#include "base/util.h"
#include "libkprof/collectors.h"
#include "libkprof/libkprof_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_NVTX_ENV "NVTX_INJECTION64_PATH"

static struct {
    char library[PATH_MAX];
    int set_dir; /* this collector set KPROF_TRACE_DIR (not the OpenCL one) */
} kp_nv_in;

const char *kp_libkprof_nvtx_unavailable(void)
{
    if (kp_libkprof_inject_library(kp_nv_in.library) == 0) return NULL;
    return "libkprof-inject.so (the NVTX injection) is not beside libkprof: set "
           "KPROF_INJECT_LIBRARY to its path";
}

kprof_status kp_libkprof_nvtx_start(kp_session *s, kp_error *err)
{
    if (kp_libkprof_inject_library(kp_nv_in.library) != 0)
        return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_libkprof_nvtx_unavailable());
    const char *trace_dir = getenv(KP_ENV_TRACE_DIR);
    if (trace_dir && *trace_dir && strcmp(trace_dir, s->dir) != 0)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "kprof trace records this process's NVTX ranges already (%s=%s): "
                            "kprof's in-process NVTX collection is off",
                            KP_ENV_TRACE_DIR, trace_dir);
    const char *inject = getenv(KP_NVTX_ENV);
    char real[PATH_MAX];
    if (inject && *inject && !(realpath(inject, real) && strcmp(real, kp_nv_in.library) == 0))
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "another NVTX injection is named (%s=%s: Nsight Systems?): kprof's "
                            "in-process NVTX collection is off",
                            KP_NVTX_ENV, inject);
    kp_nv_in.set_dir = !(trace_dir && *trace_dir);
    setenv(KP_ENV_TRACE_DIR, s->dir, 1); /* not thread-safe: see kprof_start */
    void *h = dlopen(kp_nv_in.library, RTLD_LAZY | RTLD_NOLOAD);
    if (h) { /* loaded already (an earlier session, or the OpenCL layer): this session's file */
        int (*start)(const char *) = (int (*)(const char *))dlsym(h, "kprof_inject_nvtx_start");
        if (start) start(s->dir); /* -1: NVTX has not called in yet; it starts the file then */
        dlclose(h);
    }
    if (!inject || !*inject) setenv(KP_NVTX_ENV, kp_nv_in.library, 1);
    return KPROF_OK;
}

void kp_libkprof_nvtx_stop(kp_session *s)
{
    /* The OpenCL collector stops after this one (the reverse of the table) and ends the file
     * the two share; alone, this one ends it. */
    if (s->collectors & KPROF_COLLECT_OPENCL) return;
    void *h = dlopen(kp_nv_in.library, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        int (*stop)(void) = (int (*)(void))dlsym(h, "kprof_inject_nvtx_stop");
        if (stop) stop();
        dlclose(h);
    }
    if (kp_nv_in.set_dir) unsetenv(KP_ENV_TRACE_DIR);
    kp_nv_in.set_dir = 0;
}
