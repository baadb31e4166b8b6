/*
 * flush.c — the CUDA backend's cache flush (kp_backend_ops.flush_cache): a kernel of kprof's own
 * reads a scratch buffer twice the size of the device's L2, so that the next dispatch finds
 * the L2 holding nothing it uses — "cold" timings for `kprof bench`.
 *
 * Reading, not writing: a fill or a memset would leave the L2 full of dirty lines, and the
 * measured kernel would pay for their write-back. Reads leave clean lines, which are dropped
 * for free. The kernel is PTX held here as text and JIT-compiled by the driver
 * (cuModuleLoadData), so a flush needs no NVRTC; `.target sm_50` lets the driver compile it
 * for any GPU the toolkit still supports. Each thread walks the scratch with a grid-stride
 * loop of 16-byte loads (ld.global.cg: through the L2, not kept in L1) and sums them; the sum
 * is stored to a 4-byte sink only when it equals an odd number it can never be (the scratch
 * is filled with a pattern whose sums are all multiples of 4), so the compiler cannot drop
 * the loads and the kernel never writes.
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

#define KP_FLUSH_THREADS       256
#define KP_FLUSH_BLOCKS_PER_SM 8
#define KP_FLUSH_FILL          0x01010101u /* sums of four are multiples of 4 */
#define KP_FLUSH_SINK_BYTES    256         /* after the scratch: the sink, kept aligned */

/* The sum the kernel stores only if it reaches it: odd, so never a sum of KP_FLUSH_FILL words
 * (0x7fc0ffed). */
static const char kp_cuda_flush_ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kprof_cache_flush(\n"
    "    .param .u64 kprof_cache_flush_scratch,\n"
    "    .param .u64 kprof_cache_flush_count,\n"
    "    .param .u64 kprof_cache_flush_sink\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<12>;\n"
    "    .reg .b64 %rd<10>;\n"
    "\n"
    "    ld.param.u64 %rd1, [kprof_cache_flush_scratch];\n"
    "    ld.param.u64 %rd2, [kprof_cache_flush_count];\n"
    "    ld.param.u64 %rd3, [kprof_cache_flush_sink];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    cvta.to.global.u64 %rd3, %rd3;\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mov.u32 %r4, %nctaid.x;\n"
    "    mul.wide.u32 %rd4, %r1, %r2;\n"
    "    cvt.u64.u32 %rd5, %r3;\n"
    "    add.s64 %rd4, %rd4, %rd5;\n"    /* i: this thread's first 16-byte element */
    "    mul.wide.u32 %rd6, %r4, %r2;\n" /* the grid's stride */
    "    mov.u32 %r10, 0;\n"
    "    setp.ge.u64 %p1, %rd4, %rd2;\n"
    "    @%p1 bra $L_done;\n"
    "$L_loop:\n"
    "    shl.b64 %rd7, %rd4, 4;\n"
    "    add.s64 %rd8, %rd1, %rd7;\n"
    "    ld.global.cg.v4.u32 {%r5, %r6, %r7, %r8}, [%rd8];\n"
    "    add.s32 %r10, %r10, %r5;\n"
    "    add.s32 %r10, %r10, %r6;\n"
    "    add.s32 %r10, %r10, %r7;\n"
    "    add.s32 %r10, %r10, %r8;\n"
    "    add.s64 %rd4, %rd4, %rd6;\n"
    "    setp.lt.u64 %p2, %rd4, %rd2;\n"
    "    @%p2 bra $L_loop;\n"
    "$L_done:\n"
    "    setp.ne.s32 %p1, %r10, 2143354861;\n"
    "    @%p1 bra $L_end;\n"
    "    st.global.u32 [%rd3], %r10;\n"
    "$L_end:\n"
    "    ret;\n"
    "}\n";

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
    if (dev->flush_function) return KPROF_OK;
    kprof_status st = KPROF_OK;
    char text[320];
    CUfunction f = NULL;
    CUresult rc = kp_cu.cuModuleLoadData(&dev->flush_module, kp_cuda_flush_ptx);
    if (rc != CUDA_SUCCESS) {
        dev->flush_module = NULL;
        st = kp_cuda_flush_jit_failed(dev, rc, err);
        goto fail;
    }
    int l2 = 0;
    if (kp_cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev->id) !=
            CUDA_SUCCESS ||
        l2 < 0)
        l2 = 0;
    uint64_t bytes = kp_flush_bytes((uint64_t)l2);
    rc = kp_cu.cuMemAlloc(&dev->flush_scratch, (size_t)(bytes + KP_FLUSH_SINK_BYTES));
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        dev->flush_scratch = 0;
        kp_cuda_error_text(rc, text, sizeof text);
        st = kp_error_set(err, KPROF_NOMEM,
                          "cuda: cannot allocate the %llu-byte scratch the cache flush reads "
                          "(twice the L2): %s",
                          (unsigned long long)bytes, text);
        goto fail;
    }
    if (rc != CUDA_SUCCESS) {
        dev->flush_scratch = 0;
        st = kp_cuda_fail(dev, err, "cuMemAlloc (the cache flush's scratch)", rc);
        goto fail;
    }
    /* Written once, here: memory never written could hold anything, and the pattern makes the
     * kernel's impossible sum truly impossible. */
    rc = kp_cu.cuMemsetD32Async(dev->flush_scratch, KP_FLUSH_FILL,
                                (size_t)((bytes + KP_FLUSH_SINK_BYTES) / 4), dev->stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuStreamSynchronize(dev->stream);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(dev, err, "filling the cache flush's scratch (cuMemsetD32Async)", rc);
        goto fail;
    }
    rc = kp_cu.cuModuleGetFunction(&f, dev->flush_module, "kprof_cache_flush");
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(dev, err, "cuModuleGetFunction (kprof_cache_flush)", rc);
        goto fail;
    }
    dev->flush_bytes = bytes;
    dev->flush_function = f;
    return KPROF_OK;
fail:
    if (!dev->poisoned) kp_cuda_flush_release(dev);
    return st;
}

kprof_status kp_cuda_flush_cache(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err)
{
    *ns = 0;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st == KPROF_OK) st = kp_cuda_flush_prepare(dev, err);
    if (st != KPROF_OK) return st;
    CUdeviceptr scratch = dev->flush_scratch, sink = dev->flush_scratch + dev->flush_bytes;
    unsigned long long count = dev->flush_bytes / 16;
    void *args[3] = {&scratch, &count, &sink};
    unsigned int blocks =
        (unsigned int)(dev->sm_count > 0 ? dev->sm_count : 1) * KP_FLUSH_BLOCKS_PER_SM;
    /* Events carry no timestamps: the span starts at the host clock before the launch. */
    int64_t host_start = (int64_t)kp_now_ns();
    CUresult rc = kp_cu.cuEventRecord(dev->start, dev->stream);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuEventRecord", rc);
    rc = kp_cu.cuLaunchKernel(dev->flush_function, blocks, 1, 1, KP_FLUSH_THREADS, 1, 1, 0,
                              dev->stream, args, NULL);
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
