/*
 * l2_flush.c — kprof's L2 flush kernel and its scratch (l2_flush.h), on the current context.
 *
 * The kernel is PTX held here as text and JIT-compiled by the driver (cuModuleLoadData), so a
 * flush needs no NVRTC; `.target sm_50` lets the driver compile it for any GPU the toolkit still
 * supports. Each thread walks the scratch with a grid-stride loop of 16-byte loads
 * (ld.global.cg: through the L2, not kept in L1) and sums them; the sum is stored to a 4-byte
 * sink only when it equals an odd number it can never be (the scratch is filled with a pattern
 * whose sums are all multiples of 4), so the compiler cannot drop the loads and the kernel never
 * writes.
 */
#define _GNU_SOURCE
#include "backend/cuda/l2_flush.h"
#include "backend/backend.h"

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

CUresult kp_cuda_l2_flush_make(kp_cuda_l2_flush *f, CUdevice dev, CUstream stream,
                               kp_cuda_l2_flush_step *step)
{
    memset(f, 0, sizeof *f);
    *step = KP_CUDA_L2_FLUSH_LOAD;
    CUresult rc = kp_cu.cuModuleLoadData(&f->module, kp_cuda_flush_ptx);
    if (rc != CUDA_SUCCESS) {
        f->module = NULL;
        return rc;
    }
    int l2 = 0, sms = 0;
    if (kp_cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS ||
        l2 < 0)
        l2 = 0;
    if (kp_cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) !=
            CUDA_SUCCESS ||
        sms < 1)
        sms = 1;
    f->blocks = (unsigned)sms * KP_FLUSH_BLOCKS_PER_SM;
    f->bytes = kp_flush_bytes((uint64_t)l2);
    *step = KP_CUDA_L2_FLUSH_ALLOC;
    rc = kp_cu.cuMemAlloc(&f->scratch, (size_t)(f->bytes + KP_FLUSH_SINK_BYTES));
    if (rc != CUDA_SUCCESS) {
        f->scratch = 0;
        return rc;
    }
    /* Written once, here: memory never written could hold anything, and the pattern makes the
     * kernel's impossible sum truly impossible. */
    *step = KP_CUDA_L2_FLUSH_FILL;
    rc = kp_cu.cuMemsetD32Async(f->scratch, KP_FLUSH_FILL,
                                (size_t)((f->bytes + KP_FLUSH_SINK_BYTES) / 4), stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuStreamSynchronize(stream);
    if (rc != CUDA_SUCCESS) return rc;
    *step = KP_CUDA_L2_FLUSH_FUNCTION;
    CUfunction fn = NULL;
    rc = kp_cu.cuModuleGetFunction(&fn, f->module, KP_CUDA_L2_FLUSH_KERNEL);
    if (rc != CUDA_SUCCESS) return rc;
    f->function = fn;
    return CUDA_SUCCESS;
}

CUresult kp_cuda_l2_flush_launch(const kp_cuda_l2_flush *f, CUstream stream)
{
    CUdeviceptr scratch = f->scratch, sink = f->scratch + f->bytes;
    unsigned long long count = f->bytes / 16;
    void *args[3] = {&scratch, &count, &sink};
    unsigned int blocks = f->blocks ? f->blocks : KP_FLUSH_BLOCKS_PER_SM;
    return kp_cu.cuLaunchKernel(f->function, blocks, 1, 1, KP_FLUSH_THREADS, 1, 1, 0, stream, args,
                                NULL);
}

void kp_cuda_l2_flush_free(kp_cuda_l2_flush *f)
{
    if (f->scratch) kp_cu.cuMemFree(f->scratch);
    if (f->module) kp_cu.cuModuleUnload(f->module);
    memset(f, 0, sizeof *f);
}
