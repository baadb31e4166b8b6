/*
 * nvtx_inject.h — NVTX's entry point into libkprof-inject.so (NVTX_INJECTION64_PATH).
 *
 * NVTX calls InitializeInjectionNvtx2 at a program's first NVTX call, once for each copy of NVTX
 * in the program (every library built with the header-only nvtx3 carries its own). kprof records
 * NVTX itself, on every machine, whether or not CUDA or CUPTI is present: nvtx_inject.c writes its
 * handlers into each copy's function tables, and they write ranges and marks through the record
 * writer (collect/writer.h) on the same CLOCK_MONOTONIC clock as the CUDA and OpenCL collectors.
 * The CUDA collector starts separately, at cuInit (CUDA_INJECTION64_PATH).
 */
#ifndef KP_INJECT_NVTX_INJECT_H
#define KP_INJECT_NVTX_INJECT_H

#include "inject/nvtx_abi.h"

/* NVTX's entry point: 1 when kprof's handlers are attached to this copy of NVTX; 0 (NVTX calls
 * then do nothing) when the program is not being traced (no KPROF_TRACE_DIR) or the copy's
 * tables could not be read. Thread-safe; copies attach one at a time. */
int InitializeInjectionNvtx2(kp_nvtx_get_export_table_fn get_export_table);

#endif
