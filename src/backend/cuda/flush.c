/*
 * flush.c — the CUDA backend's cache flush (kp_backend_ops.flush_cache): kprof's own kernel
 * reads a scratch buffer twice the size of the device's L2 (l2_flush.h: the kernel, its scratch
 * and its launch, shared with kprof_benchmark's CUDA timer), so that the next dispatch finds the
 * L2 holding nothing it uses — "cold" timings for `kprof bench`.
 *
 * The module, the scratch and its sink are made on first use and kept with the device
 * (kp_cuda_close releases them, through kp_cuda_flush_release in device.c). The flush runs on the
 * device's stream between the device's two events, so it is ordered with the dispatches around it
 * and timed by the GPU. It never counts in a dispatch's time: dispatch_batch takes CUPTI records of
 * its own kernel's symbol only, and drops everything recorded before it starts.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The driver could not JIT the flush kernel: the device cannot flush (UNAVAILABLE). */
static kprof_status kp_cuda_flush_jit_failed(kp_device *dev, CUresult rc, kp_error *err)
{
    if (kp_cuda_result_status(rc) != KPROF_COMPILE)
        return kp_cuda_fail(dev, err, "loading kprof's cache-flush kernel (cuModuleLoadData)", rc);
    char text[320];
    kp_cuda_error_text(rc, text, sizeof text);
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "cuda: this device cannot flush its cache: the driver could not compile "
                        "kprof's flush kernel (PTX): %s",
                        text);
}

/* The module, the scratch (filled, waited for) and the sink, the first time. On failure nothing
 * is kept, so a later call starts afresh. */
static kprof_status kp_cuda_flush_prepare(kp_device *dev, kp_error *err)
{
    if (dev->flush.function) return KPROF_OK;
    kp_cuda_l2_flush_step step = KP_CUDA_L2_FLUSH_LOAD;
    CUresult rc = kp_cuda_l2_flush_make(&dev->flush, dev->id, dev->stream, &step);
    if (rc == CUDA_SUCCESS) return KPROF_OK;
    kprof_status st;
    char text[320];
    switch (step) {
    case KP_CUDA_L2_FLUSH_LOAD:
        st = kp_cuda_flush_jit_failed(dev, rc, err);
        break;
    case KP_CUDA_L2_FLUSH_ALLOC:
        if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
            kp_cuda_error_text(rc, text, sizeof text);
            st = kp_error_set(err, KPROF_NOMEM,
                              "cuda: cannot allocate the %llu-byte scratch the cache flush reads "
                              "(twice the L2): %s",
                              (unsigned long long)dev->flush.bytes, text);
        } else {
            st = kp_cuda_fail(dev, err, "cuMemAlloc (the cache flush's scratch)", rc);
        }
        break;
    case KP_CUDA_L2_FLUSH_FILL:
        st = kp_cuda_fail(dev, err, "filling the cache flush's scratch (cuMemsetD32Async)", rc);
        break;
    default:
        st = kp_cuda_fail(dev, err, "cuModuleGetFunction (" KP_CUDA_L2_FLUSH_KERNEL ")", rc);
        break;
    }
    if (!dev->poisoned) kp_cuda_flush_release(dev);
    return st;
}

kprof_status kp_cuda_flush_cache(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err)
{
    *ns = 0;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st == KPROF_OK) st = kp_cuda_flush_prepare(dev, err);
    if (st != KPROF_OK) return st;
    /* Events carry no timestamps: the span starts at the host clock before the launch. */
    int64_t host_start = (int64_t)kp_now_ns();
    CUresult rc = kp_cu.cuEventRecord(dev->start, dev->stream);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuEventRecord", rc);
    rc = kp_cuda_l2_flush_launch(&dev->flush, dev->stream);
    if (rc != CUDA_SUCCESS)
        return kp_cuda_fail(dev, err, "launching kprof's cache-flush kernel", rc);
    rc = kp_cu.cuEventRecord(dev->end, dev->stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuEventSynchronize(dev->end);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "the cache flush", rc);
    float ms = 0;
    rc = kp_cu.cuEventElapsedTime(&ms, dev->start, dev->end);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuEventElapsedTime (cache flush)", rc);
    *ns = round((double)ms * 1e6);
    if (span) *span = kp_dispatch_span_at(host_start, *ns);
    return KPROF_OK;
}
