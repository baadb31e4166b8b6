/*
 * l2_flush.h — kprof's L2 flush kernel, apart from any kprof object: the PTX, its scratch (twice
 * the L2, filled once), the launch shape and the launch, on whatever context is current. Both
 * cold timings use it: `kprof bench`'s CUDA backend (flush.c, which keeps it with its kp_device)
 * and kprof_benchmark's CUDA timer (src/libkprof/cuda.c, which keeps it with the timer).
 *
 * Reading, not writing: a fill or a memset would leave the L2 full of dirty lines, and the
 * measured kernel would pay for their write-back. Reads leave clean lines, which are dropped
 * for free (l2_flush.c says how the kernel reads without being optimised away).
 *
 * Every function calls the driver through kp_cu (runtime/cuda_api.h, loaded by the caller) on
 * the calling thread's current context, which must be the device's; they return the driver's
 * CUresult, and the caller phrases the failure (its error convention, its device bookkeeping).
 */
#ifndef KP_BACKEND_CUDA_L2_FLUSH_H
#define KP_BACKEND_CUDA_L2_FLUSH_H

#include "runtime/cuda_api.h"

#include <stdint.h>

/* The flush kernel's entry point: the name CUPTI gives its records. */
#define KP_CUDA_L2_FLUSH_KERNEL "kprof_cache_flush"

typedef struct kp_cuda_l2_flush {
    CUmodule module;     /* kprof's flush kernel, JIT-compiled from PTX (NULL: not loaded) */
    CUfunction function; /* NULL until the flush is ready */
    CUdeviceptr scratch; /* bytes the kernel reads, then its sink (0: none) */
    uint64_t bytes;      /* the scratch the kernel reads: kp_flush_bytes of the L2 */
    unsigned blocks;     /* the launch's grid: blocks per SM times the SMs (0: as for one SM) */
} kp_cuda_l2_flush;

/* The step of kp_cuda_l2_flush_make that failed, for the caller's message. */
typedef enum kp_cuda_l2_flush_step {
    KP_CUDA_L2_FLUSH_LOAD,     /* cuModuleLoadData: the driver could not JIT the PTX */
    KP_CUDA_L2_FLUSH_ALLOC,    /* cuMemAlloc of the scratch (f->bytes says how much) */
    KP_CUDA_L2_FLUSH_FILL,     /* cuMemsetD32Async of the pattern, or waiting for it */
    KP_CUDA_L2_FLUSH_FUNCTION, /* cuModuleGetFunction */
} kp_cuda_l2_flush_step;

/* Make the flush for device dev (current context's): load the module, allocate the scratch and
 * fill it on stream (waited for), find the kernel. *f zeroed first. CUDA_SUCCESS, or the failed
 * call's result with *step naming it; what was made stays in *f for kp_cuda_l2_flush_free (a
 * caller whose context faulted may leave it). */
CUresult kp_cuda_l2_flush_make(kp_cuda_l2_flush *f, CUdevice dev, CUstream stream,
                               kp_cuda_l2_flush_step *step);

/* Launch one flush on stream (not waited for). f must be ready (f->function set). */
CUresult kp_cuda_l2_flush_launch(const kp_cuda_l2_flush *f, CUstream stream);

/* Free the module and the scratch (the device's context current); harmless when none. *f is
 * left empty. */
void kp_cuda_l2_flush_free(kp_cuda_l2_flush *f);

#endif
