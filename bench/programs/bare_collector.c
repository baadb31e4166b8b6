/*
 * bare_collector.c — the floor for `kprof trace`'s overhead (bench/trace_overhead.py, issue 11):
 * a CUDA injection library (CUDA_INJECTION64_PATH) that turns on the same CUPTI activity kinds
 * as kprof's collector (kernels, copies, fills, runtime and driver API calls, synchronization,
 * CUPTI overhead), on the same clock, with the same buffer size and the same flushing (a thread
 * that asks CUPTI for completed records every 100 ms, as NVIDIA's cupti_trace_injection sample
 * and kprof do: with CUPTI's periodic flush alone, which returns only full buffers, a forced
 * flush at the exit of 200k launches took 11 s on the H200), and does nothing with the records
 * but count them. At exit it flushes and prints the count on stderr
 * ("bare collector: N records"). What kprof costs beyond it is its own: translating and writing
 * records, NVTX and OpenCL injection, and the merge into a trace file.
 *
 * Built on the GPU machine by the benchmark:
 *   gcc -O2 -shared -fPIC -I$CUDA/include -I$CUDA/extras/CUPTI/include bare_collector.c \
 *       -L$CUPTI_LIB -lcupti -Wl,-rpath,$CUPTI_LIB -o libbare_collector.so
 */
#include <cupti.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BUFFER_BYTES    (8u << 20) /* as kprof's collector */
#define FLUSH_PERIOD_MS 100

static atomic_ullong records;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI buffer_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                     size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    unsigned long long n = 0;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        n++;
    atomic_fetch_add(&records, n);
    free(buffer);
}

static atomic_int stop;
static pthread_t flusher;
static int flusher_running;

static void *flush_loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        struct timespec ts = {0, FLUSH_PERIOD_MS * 1000000L};
        nanosleep(&ts, NULL);
        cuptiActivityFlushAll(0);
    }
    return NULL;
}

#ifdef BARE_DIAG /* where the time goes, on stderr */
#define DIAG(what) fprintf(stderr, "bare %.3f %s\n", (double)now_ns() * 1e-9, what)
#else
#define DIAG(what) ((void)0)
#endif

static void at_exit(void)
{
    DIAG("exit");
    atomic_store(&stop, 1);
    if (flusher_running) pthread_join(flusher, NULL);
    DIAG("joined");
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    DIAG("flushed");
    fprintf(stderr, "bare collector: %llu records\n", (unsigned long long)atomic_load(&records));
}

int InitializeInjection(void)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_OVERHEAD,
    };
    DIAG("init");
    if (cuptiActivityRegisterCallbacks(buffer_request, buffer_complete) != CUPTI_SUCCESS) return 1;
    cuptiActivityRegisterTimestampCallback(now_ns);
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        cuptiActivityEnable(kinds[i]);
    cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
    flusher_running = pthread_create(&flusher, NULL, flush_loop, NULL) == 0;
    atexit(at_exit);
    DIAG("init done");
    return 1;
}
