/*
 * nvtx_inject.h — NVTX's entry point into libkprof-inject.so (NVTX_INJECTION64_PATH) and what it
 * asks of the CUDA collector.
 *
 * NVTX calls InitializeInjectionNvtx2 at a program's first NVTX call, once for each copy of NVTX
 * in the program (every library built with the header-only nvtx3 carries its own). Where kprof
 * is built with CUDA and CUPTI records NVTX markers, nvtx_inject.c hands the copy on to CUPTI
 * (kp_cuda_nvtx_handoff, in cuda_inject.c); otherwise it installs kprof's own handlers, which
 * write ranges and marks through the record writer (collect/writer.h) without CUPTI.
 */
#ifndef KP_INJECT_NVTX_INJECT_H
#define KP_INJECT_NVTX_INJECT_H

#include "inject/nvtx_abi.h"

#include <stddef.h>

/* NVTX's entry point: 1 when this copy of NVTX is attached to CUPTI or to kprof's handlers; 0
 * (NVTX calls then do nothing) when the program is not being traced (no KPROF_TRACE_DIR). */
int InitializeInjectionNvtx2(kp_nvtx_get_export_table_fn get_export_table);

typedef enum kp_nvtx_handoff {
    KP_NVTX_HANDOFF_NOT_TRACING = -1, /* the collector could not start: no trace to write */
    KP_NVTX_HANDOFF_DECLINED = 0,     /* CUPTI did not take this copy; why[] says why */
    KP_NVTX_HANDOFF_CUPTI = 1,        /* CUPTI records this copy's ranges and marks */
} kp_nvtx_handoff;

/* The CUDA collector's half (cuda_inject.c; only where kprof is built with CUDA). When CUPTI can
 * be loaded, it starts the CUDA collector (so that CUPTI also records the ranges a program opens
 * before its first CUDA call) and, if CUPTI records NVTX markers, hands this copy of NVTX to
 * CUPTI's own InitializeInjectionNvtx2. When it declines, why[] holds the reason as the start of
 * a sentence ("CUPTI could not be used"), and any function pointers CUPTI wrote into the copy's
 * tables are the caller's to undo. Called with the caller's init lock held. */
kp_nvtx_handoff kp_cuda_nvtx_handoff(kp_nvtx_get_export_table_fn get_export_table, char *why,
                                     size_t why_n);

#endif
