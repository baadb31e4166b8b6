/*
 * test_cuda_inject.c — the CUDA trace collector's pure parts, no GPU or CUPTI needed: API names
 * without their version suffixes, copy directions and the names of copies, waits and CUPTI
 * overhead, CUPTI records (built by hand) turned into kp_rec, and the context-to-device map.
 */
#include "inject/cuda_records.h"
#include "tests/unit/test.h"

#include <stdlib.h>

static const char *api_name(const char *in)
{
    static char out[128];
    kp_cuda_trace_api_name(in, out, sizeof out);
    return out;
}

static void test_api_names(void)
{
    CHECK_STR(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
    CHECK_STR(api_name("cudaMemcpy_v3020"), "cudaMemcpy");
    CHECK_STR(api_name("cuMemAlloc_v2"), "cuMemAlloc");
    CHECK_STR(api_name("cuCtxCreate_v4"), "cuCtxCreate");
    CHECK_STR(api_name("cudaMemcpy_ptds_v7000"), "cudaMemcpy");
    CHECK_STR(api_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel");
    CHECK_STR(api_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
    CHECK_STR(api_name("cuLaunchKernel_ptsz"), "cuLaunchKernel");
    CHECK_STR(api_name("cudaLaunchKernelExC_ptsz_v11060"), "cudaLaunchKernelExC");
    CHECK_STR(api_name("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync");
    CHECK_STR(api_name("cuLaunchKernel"), "cuLaunchKernel");
    CHECK_STR(api_name("cuStreamGetCaptureInfo_v3"), "cuStreamGetCaptureInfo");
    /* Look-alikes stay as they are. */
    CHECK_STR(api_name("cuFoo_v"), "cuFoo_v");
    CHECK_STR(api_name("cuFoo_v2x"), "cuFoo_v2x");
    CHECK_STR(api_name("cuFoo_vector"), "cuFoo_vector");
    CHECK_STR(api_name("cu_2"), "cu_2");
    /* Never down to nothing. */
    CHECK_STR(api_name("_v2"), "_v2");
    CHECK_STR(api_name("_ptds"), "_ptds");
    CHECK_STR(api_name(""), "");
    CHECK_STR(api_name(NULL), "");

    char small[8];
    CHECK_INT(kp_cuda_trace_api_name("cudaMemcpy_v3020", small, sizeof small), 7);
    CHECK_STR(small, "cudaMem"); /* truncated before peeling: nothing left to peel */
    CHECK_INT(kp_cuda_trace_api_name("cuX_v2", small, sizeof small), 3);
    CHECK_STR(small, "cuX");
    CHECK_INT(kp_cuda_trace_api_name("cuX_v2", small, 0), 0);
}

static void test_copy_kinds(void)
{
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), KP_COPY_HTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA), KP_COPY_HTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), KP_COPY_DTOH);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH), KP_COPY_DTOH);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), KP_COPY_DTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA), KP_COPY_DTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), KP_COPY_DTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA), KP_COPY_DTOD);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH), KP_COPY_HTOH);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), KP_COPY_PEER);
    CHECK_INT(kp_cuda_trace_copy_direction(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), KP_COPY_UNKNOWN);
    CHECK_INT(kp_cuda_trace_copy_direction(200), KP_COPY_UNKNOWN);

    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), "[CUDA memcpy HtoD]");
    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "[CUDA memcpy DtoH]");
    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "[CUDA memcpy DtoD]");
    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH), "[CUDA memcpy HtoH]");
    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "[CUDA memcpy PtoP]");
    CHECK_STR(kp_cuda_trace_copy_name(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), "[CUDA memcpy AtoD]");
    CHECK_STR(kp_cuda_trace_copy_name(99), "[CUDA memcpy]");
}

static void test_other_names(void)
{
    CHECK_STR(kp_cuda_trace_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE),
              "[sync: stream]");
    CHECK_STR(kp_cuda_trace_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE),
              "[sync: event]");
    CHECK_STR(kp_cuda_trace_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT),
              "[sync: stream wait event]");
    CHECK_STR(kp_cuda_trace_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE),
              "[sync: context]");
    CHECK_STR(kp_cuda_trace_sync_name(0), "[sync]");

    CHECK_STR(kp_cuda_trace_overhead_name(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH),
              "[CUPTI overhead: buffer flush]");
    CHECK_STR(kp_cuda_trace_overhead_name(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER),
              "[CUPTI overhead: driver compiler]");
    CHECK_STR(kp_cuda_trace_overhead_name(CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING),
              "[CUPTI overhead: lazy function loading]");
    CHECK_STR(kp_cuda_trace_overhead_name(12345), "[CUPTI overhead]");
}

static void test_kernel_record(void)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000;
    k.end = 1500;
    k.queued = 900;
    k.submitted = 950;
    k.correlationId = 77;
    k.deviceId = 1;
    k.contextId = 3;
    k.streamId = 13;
    k.gridX = 64, k.gridY = 2, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 40;
    k.staticSharedMemory = 4096;
    k.dynamicSharedMemory = 8192;
    k.localMemoryPerThread = 24;
    k.name = "_Z5scaleILi2EEvPfi";
    kp_rec r;
    memset(&r, 0xab, sizeof r);
    CHECK_INT(kp_cuda_trace_kernel(&k, &r), 1);
    CHECK_INT(r.kind, KP_REC_KERNEL);
    CHECK_INT(r.name, 0); /* interned by the caller */
    CHECK_INT(r.start, 1000);
    CHECK_INT(r.end, 1500);
    CHECK_INT(r.queued, 900);
    CHECK_INT(r.submitted, 950);
    CHECK_INT(r.correlation, 77);
    CHECK_INT(r.device, 1);
    CHECK_INT(r.stream, 13);
    CHECK_INT(r.grid[0], 64);
    CHECK_INT(r.grid[1], 2);
    CHECK_INT(r.grid[2], 1);
    CHECK_INT(r.block[0], 256);
    CHECK_INT(r.registers, 40);
    CHECK_INT(r.static_smem, 4096);
    CHECK_INT(r.dynamic_smem, 8192);
    CHECK_INT(r.local_mem, 24);
    CHECK_INT(r.tid, 0);
    CHECK_INT(r.magic, 0); /* the writer sets it */

    k.staticSharedMemory = -1; /* never seen, but never a 4 GiB figure either */
    CHECK_INT(kp_cuda_trace_kernel(&k, &r), 1);
    CHECK_INT(r.static_smem, 0);

    k.start = k.end = 0;
    CHECK_INT(kp_cuda_trace_kernel(&k, &r), 0);
    k.end = 5; /* only both zero means "no timing" */
    CHECK_INT(kp_cuda_trace_kernel(&k, &r), 1);
}

static void test_api_record(void)
{
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = 10;
    a.end = 20;
    a.processId = 4000;
    a.threadId = 4001;
    a.correlationId = 9;
    a.returnValue = 2;
    kp_rec r;
    CHECK_INT(kp_cuda_trace_api(&a, 0, &r), 1);
    CHECK_INT(r.kind, KP_REC_API);
    CHECK_INT(r.domain, KP_DOMAIN_CUDA_RUNTIME);
    CHECK_INT(r.start, 10);
    CHECK_INT(r.end, 20);
    CHECK_INT(r.tid, 4001);
    CHECK_INT(r.correlation, 9);
    CHECK_INT(r.status, 2);
    CHECK_INT(kp_cuda_trace_api(&a, 1, &r), 1);
    CHECK_INT(r.domain, KP_DOMAIN_CUDA_DRIVER);
    a.start = a.end = 0;
    CHECK_INT(kp_cuda_trace_api(&a, 0, &r), 0);
}

static void test_copy_fill_sync_records(void)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.bytes = 1 << 20;
    m.start = 100;
    m.end = 300;
    m.deviceId = 2;
    m.streamId = 14;
    m.correlationId = 5;
    kp_rec r;
    CHECK_INT(kp_cuda_trace_memcpy(&m, &r), 1);
    CHECK_INT(r.kind, KP_REC_MEMCPY);
    CHECK_INT(r.bytes, 1 << 20);
    CHECK_INT(r.aux, KP_COPY_DTOH);
    CHECK_INT(r.device, 2);
    CHECK_INT(r.stream, 14);
    CHECK_INT(r.correlation, 5);
    m.start = m.end = 0;
    CHECK_INT(kp_cuda_trace_memcpy(&m, &r), 0);

    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 4096;
    s.start = 1;
    s.end = 2;
    s.streamId = 7;
    CHECK_INT(kp_cuda_trace_memset(&s, &r), 1);
    CHECK_INT(r.kind, KP_REC_MEMSET);
    CHECK_INT(r.bytes, 4096);
    CHECK_INT(r.stream, 7);
    s.start = s.end = 0;
    CHECK_INT(kp_cuda_trace_memset(&s, &r), 0);

    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    y.start = 50;
    y.end = 90;
    y.streamId = 13;
    y.correlationId = 33;
    y.returnValue = 0;
    CHECK_INT(kp_cuda_trace_sync(&y, &r), 1);
    CHECK_INT(r.kind, KP_REC_SYNC);
    CHECK_INT(r.stream, 13);
    CHECK_INT(r.correlation, 33);
    CHECK_INT(r.end - r.start, 40);
    y.start = y.end = 0;
    CHECK_INT(kp_cuda_trace_sync(&y, &r), 0);
}

static void test_overhead_record(void)
{
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = 10;
    o.objectId.pt.threadId = 11;
    o.start = 5;
    o.end = 8;
    kp_rec r;
    CHECK_INT(kp_cuda_trace_overhead(&o, &r), 1);
    CHECK_INT(r.kind, KP_REC_OVERHEAD);
    CHECK_INT(r.tid, 11);
    CHECK_INT(r.aux, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
    o.objectKind = CUPTI_ACTIVITY_OBJECT_STREAM;
    o.objectId.dcs.deviceId = 1;
    o.objectId.dcs.contextId = 2;
    o.objectId.dcs.streamId = 3;
    CHECK_INT(kp_cuda_trace_overhead(&o, &r), 1);
    CHECK_INT(r.tid, 0);
    CHECK_INT(r.device, 1);
    CHECK_INT(r.stream, 3);
    o.start = o.end = 0;
    CHECK_INT(kp_cuda_trace_overhead(&o, &r), 0);

    CUpti_ActivityObjectKindId id;
    memset(&id, 0, sizeof id);
    id.pt.threadId = 1234;
    CHECK_INT(kp_cuda_trace_object_thread(CUPTI_ACTIVITY_OBJECT_THREAD, &id), 1234);
    CHECK_INT(kp_cuda_trace_object_thread(CUPTI_ACTIVITY_OBJECT_PROCESS, &id), 0);
}

static void test_contexts(void)
{
    kp_cuda_trace_contexts t;
    memset(&t, 0, sizeof t);
    CHECK_INT(kp_cuda_trace_context_device(&t, 1), 0);
    kp_cuda_trace_context_learn(&t, 1, 3);
    kp_cuda_trace_context_learn(&t, 0, 2);           /* context id 0 is a valid id */
    kp_cuda_trace_context_learn(&t, 0xffffffffu, 5); /* CUPTI_INVALID_CONTEXT_ID: ignored */
    CHECK_INT(kp_cuda_trace_context_device(&t, 1), 3);
    CHECK_INT(kp_cuda_trace_context_device(&t, 0), 2);
    CHECK_INT(kp_cuda_trace_context_device(&t, 0xffffffffu), 0);
    kp_cuda_trace_context_learn(&t, 1, 4); /* re-learnt */
    CHECK_INT(kp_cuda_trace_context_device(&t, 1), 4);
    for (uint32_t c = 100; c < 100 + 2 * KP_CUDA_TRACE_CONTEXTS; c++)
        kp_cuda_trace_context_learn(&t, c, c % 7);
    CHECK_INT(kp_cuda_trace_context_device(&t, 101), 101 % 7);
    CHECK_INT(kp_cuda_trace_context_device(&t, 100 + 2 * KP_CUDA_TRACE_CONTEXTS - 1), 0); /* full */
    CHECK_INT(kp_cuda_trace_context_device(&t, 1), 4);
}

int main(void)
{
    test_api_names();
    test_copy_kinds();
    test_other_names();
    test_kernel_record();
    test_api_record();
    test_copy_fill_sync_records();
    test_overhead_record();
    test_contexts();
    TEST_DONE();
}
