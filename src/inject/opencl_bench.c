/*
 * opencl_bench.c — the OpenCL layer's side of libkprof's kprof_benchmark (opencl_bench.h): the
 * events of one run's device operations, kept from the enqueue to the run's end, and the cold
 * flush. Calls go to the next table (kp_cl_next), never back through the wrappers, so neither a
 * session's trace nor the run itself sees the benchmark's own waits and flushes.
 *
 * Threads: an enqueue on any thread may add to the run under way (a lock around the list); the
 * begin, end, flush and close calls come from the one thread that runs the benchmark.
 */
#include "inject/opencl_bench.h"
#include "inject/opencl_ops.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_mutex_t lock;
    atomic_int open;
    cl_event *events; /* one reference each */
    size_t n, cap;
    int lost;                 /* an event could not be kept: the run's times would be wrong */
    cl_command_queue last;    /* retained: the last run's last queue, the flush's */
    cl_command_queue flushed; /* retained: the queue the flush buffer was made for */
    cl_mem flush;
    size_t flush_bytes;
} kp_clb = {.lock = PTHREAD_MUTEX_INITIALIZER};

int kp_cl_bench_open(void)
{
    return atomic_load_explicit(&kp_clb.open, memory_order_relaxed);
}

void kp_cl_bench_add(void *event, int take_reference)
{
    cl_event e = event;
    if (take_reference && kp_cl_next.clRetainEvent(e) != CL_SUCCESS) {
        kp_clb.lost = 1;
        return;
    }
    pthread_mutex_lock(&kp_clb.lock);
    if (kp_clb.n == kp_clb.cap) {
        size_t cap = kp_clb.cap ? 2 * kp_clb.cap : 64;
        cl_event *p = realloc(kp_clb.events, cap * sizeof *p);
        if (!p) {
            kp_clb.lost = 1;
            pthread_mutex_unlock(&kp_clb.lock);
            kp_cl_next.clReleaseEvent(e);
            return;
        }
        kp_clb.events = p;
        kp_clb.cap = cap;
    }
    kp_clb.events[kp_clb.n++] = e;
    pthread_mutex_unlock(&kp_clb.lock);
}

static void kp_cl_bench_drop_events(void)
{
    pthread_mutex_lock(&kp_clb.lock);
    for (size_t i = 0; i < kp_clb.n; i++)
        kp_cl_next.clReleaseEvent(kp_clb.events[i]);
    kp_clb.n = 0;
    pthread_mutex_unlock(&kp_clb.lock);
}

void kp_cl_bench_begin(void)
{
    kp_cl_bench_drop_events();
    kp_clb.lost = 0;
    atomic_store(&kp_clb.open, 1);
}

/* Keep q as the flush's queue (retained), giving back the one kept before. */
static void kp_cl_bench_keep_queue(cl_command_queue q)
{
    if (q == kp_clb.last || !kp_cl_next.clRetainCommandQueue || !kp_cl_next.clReleaseCommandQueue)
        return;
    if (kp_cl_next.clRetainCommandQueue(q) != CL_SUCCESS) return;
    if (kp_clb.last) kp_cl_next.clReleaseCommandQueue(kp_clb.last);
    kp_clb.last = q;
}

static int kp_cl_bench_is_cpu(cl_command_queue q)
{
    cl_device_id device = NULL;
    cl_device_type type = 0;
    if (!q || !kp_cl_next.clGetDeviceInfo ||
        kp_cl_next.clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof device, &device, NULL) !=
            CL_SUCCESS ||
        kp_cl_next.clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
        return 0;
    return (type & CL_DEVICE_TYPE_CPU) != 0;
}

int kp_cl_bench_end(kp_cl_bench_times *out)
{
    memset(out, 0, sizeof *out);
    atomic_store(&kp_clb.open, 0);
    pthread_mutex_lock(&kp_clb.lock);
    cl_event *events = kp_clb.events;
    size_t n = kp_clb.n;
    kp_clb.events = NULL;
    kp_clb.n = kp_clb.cap = 0;
    pthread_mutex_unlock(&kp_clb.lock);
    int rc = kp_clb.lost ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
    cl_command_queue queue = NULL;
    for (size_t i = 0; i < n; i++) {
        cl_event e = events[i];
        /* Waiting on the event flushes its queue and waits for the command alone. */
        cl_int w = kp_cl_next.clWaitForEvents(1, &e);
        cl_int status = CL_COMPLETE;
        if (kp_cl_next.clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                      NULL) != CL_SUCCESS)
            status = w != CL_SUCCESS ? w : CL_INVALID_EVENT;
        if (status < 0 && rc == CL_SUCCESS) rc = status; /* the command failed */
        if (w != CL_SUCCESS && rc == CL_SUCCESS && status != CL_COMPLETE) rc = w;
        cl_ulong start = 0, end = 0;
        if (status == CL_COMPLETE &&
            kp_cl_next.clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                               NULL) == CL_SUCCESS &&
            kp_cl_next.clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                               NULL) == CL_SUCCESS &&
            start && end >= start) {
            if (!out->ops || start < out->first) out->first = start;
            if (!out->ops || end > out->last) out->last = end;
            out->busy += end - start;
            out->ops++;
        } else if (status == CL_COMPLETE && rc == CL_SUCCESS) {
            rc = CL_PROFILING_INFO_NOT_AVAILABLE; /* a queue made without profiling */
        }
        cl_command_queue q = NULL;
        if (kp_cl_next.clGetEventInfo(e, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) ==
                CL_SUCCESS &&
            q)
            queue = q;
        kp_cl_next.clReleaseEvent(e);
    }
    free(events);
    if (queue) kp_cl_bench_keep_queue(queue);
    out->host_device = kp_cl_bench_is_cpu(kp_clb.last);
    return rc;
}

int kp_cl_bench_flush(uint64_t *ns, uint64_t *bytes)
{
    *ns = 0;
    *bytes = 0;
    cl_command_queue q = kp_clb.last;
    if (!q) return 1;
    if (!kp_cl_next.clCreateBuffer || !kp_cl_next.clEnqueueFillBuffer ||
        !kp_cl_next.clGetDeviceInfo || !kp_cl_next.clReleaseMemObject)
        return CL_INVALID_OPERATION;
    cl_int rc = CL_SUCCESS;
    if (!kp_clb.flush || kp_clb.flushed != q) {
        if (kp_clb.flush) kp_cl_next.clReleaseMemObject(kp_clb.flush);
        kp_clb.flush = NULL;
        cl_device_id device = NULL;
        cl_context context = NULL;
        cl_ulong cache = 0;
        rc = kp_cl_next.clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof device, &device, NULL);
        if (rc == CL_SUCCESS)
            rc = kp_cl_next.clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof context, &context,
                                                  NULL);
        if (rc == CL_SUCCESS &&
            kp_cl_next.clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache,
                                       &cache, NULL) != CL_SUCCESS)
            cache = 0;
        if (cache == 0) cache = 32u << 20; /* not said: larger than most last-level caches */
        size_t size = (size_t)(2 * cache + 63) & ~(size_t)63;
        if (rc == CL_SUCCESS)
            kp_clb.flush = kp_cl_next.clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &rc);
        if (rc != CL_SUCCESS || !kp_clb.flush) {
            kp_clb.flush = NULL;
            return rc != CL_SUCCESS ? rc : CL_OUT_OF_RESOURCES;
        }
        kp_clb.flush_bytes = size;
        kp_clb.flushed = q;
    }
    const cl_uint pattern = 0x6b70726fu;
    cl_event e = NULL;
    rc = kp_cl_next.clEnqueueFillBuffer(q, kp_clb.flush, &pattern, sizeof pattern, 0,
                                        kp_clb.flush_bytes, 0, NULL, &e);
    if (rc != CL_SUCCESS) return rc;
    rc = kp_cl_next.clWaitForEvents(1, &e);
    cl_ulong start = 0, end = 0;
    if (rc == CL_SUCCESS &&
        kp_cl_next.clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                           NULL) == CL_SUCCESS &&
        kp_cl_next.clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
            CL_SUCCESS &&
        end > start)
        *ns = end - start;
    kp_cl_next.clReleaseEvent(e);
    *bytes = kp_clb.flush_bytes;
    return rc;
}

void kp_cl_bench_close(void)
{
    atomic_store(&kp_clb.open, 0);
    kp_cl_bench_drop_events();
    if (kp_clb.flush) kp_cl_next.clReleaseMemObject(kp_clb.flush);
    kp_clb.flush = NULL;
    kp_clb.flushed = NULL;
    if (kp_clb.last && kp_cl_next.clReleaseCommandQueue)
        kp_cl_next.clReleaseCommandQueue(kp_clb.last);
    kp_clb.last = NULL;
}
