/*
 * cuda_inject.c — the CUDA collector of `kprof trace`: the CUDA driver loads libkprof-inject.so
 * (CUDA_INJECTION64_PATH) during cuInit and calls InitializeInjection, which turns on CUPTI
 * activity records for kernels, copies, fills, runtime and driver API calls, synchronization and
 * CUPTI's own overhead, and streams them through the record writer (collect/writer.h) into this
 * process's trace part, with CUPTI's timestamps on kprof's CLOCK_MONOTONIC clock. NVTX ranges
 * and marks are not CUPTI's here: kprof's own NVTX collector (nvtx_inject.c) records them on
 * every machine, on that same clock.
 *
 * How records travel: CUPTI fills 8 MiB buffers that it asks us for, and hands each back to
 * kp_buffer_complete on its own thread (or on whichever thread calls cuptiActivityFlushAll),
 * which only queues it. A small thread of ours converts every queued buffer's records into
 * kp_recs, and every 100 ms asks CUPTI for whatever is complete, because CUPTI's periodic flush
 * only returns full buffers, and a trace should show a running program and survive its crash.
 * At exit the writer calls kp_cuda_exit, which forces out and converts the rest; a forked child
 * never runs it (a fork clears the writer's hooks), as flushing CUPTI there is known to hang.
 * On a crash (SIGSEGV and friends) the writer's handler calls kp_cuda_crash, which asks that
 * same thread for a forced flush and waits a bounded time; the writer then flushes and hands
 * the signal on.
 *
 * Only the activity API is used, never cuptiSubscribe: CUPTI allows one callback subscriber per
 * process, and taking it would break programs that profile themselves (the PyTorch profiler).
 * The one exception is asked for: `kprof trace --capture` (cuda_capture.h) subscribes, because
 * it must stop the program at one launch, and says so when another subscriber holds CUPTI.
 */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "base/env.h"
#include "runtime/cupti_api.h"
#include "collect/writer.h"
#include "base/util.h"
#include "inject/cuda_capture.h"
#include "inject/cuda_collector.h"
#include "inject/cuda_records.h"
#include "inject/program_hooks.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* InitializeInjection is the driver's to find in libkprof-inject.so. The same object is part of
 * libkprof (the in-process session, cuda_collector.h), whose version script (cmake/kprof.map)
 * exports kprof_* alone. */
#define KP_EXPORT __attribute__((visibility("default")))

#define KP_BUFFER_BYTES    (8u << 20) /* NVIDIA's samples use 8 MiB */
#define KP_FLUSH_PERIOD_MS 100u       /* how stale the file may be while the program runs */
#define KP_CRASH_WAIT_MS   2000       /* how long a crashing thread waits for the last flush */
#define KP_EXIT_WAIT_MS    2000       /* how long exit waits for the flush thread to stop */
#define KP_LITERALS        64         /* fixed names, cached by their address */

static struct {
    pthread_mutex_t init_lock; /* recursive: CUPTI may re-enter cuInit while we set it up */
    int initialized;
    int in_process;       /* started by libkprof's session (cuda_collector.h), not the driver */
    pid_t pid;            /* the process the collector runs in */
    int64_t clock_offset; /* subtracted from CUPTI times when our clock was refused */

    /* Conversion state; records can arrive on two threads at once (CUPTI's and a flusher). */
    pthread_mutex_t lock;
    kp_cuda_trace_contexts contexts;
    uint32_t runtime_names[CUPTI_RUNTIME_TRACE_CBID_SIZE]; /* string ids by cbid; 0 = unknown */
    uint32_t driver_names[CUPTI_DRIVER_TRACE_CBID_SIZE];
    struct {
        const char *text;
        uint32_t id;
    } literal[KP_LITERALS];

    /* The flush thread and the crash handshake with it. */
    pthread_mutex_t flush_lock; /* held around our flushes, and by fork (see kp_fork_prepare) */
    sem_t wake;
    pthread_t flusher;
    atomic_int flusher_running;
    atomic_int stop;          /* exit: leave the loop */
    atomic_int stopped;       /* the flusher has left its loop */
    atomic_int crash_request; /* a crash handler wants a forced flush */
    atomic_int crash_done;

    /* Completed CUPTI buffers waiting for kp_drain, and drained ones kept for reuse. */
    pthread_mutex_t queue_lock; /* held only to move pointers; never across a call */
    struct kp_cbuf *queue, **queue_tail, *spare;
    int nspare;

    /* In-process additions (cuda_collector.h); read and changed under lock. */
    kp_cuda_kernel_hook hook;
    void *hook_ctx;
    kp_cuda_record_sink sink;
    void *sink_ctx;
    int sink_only; /* records to the sink alone (kp_cuda_collector_set_sink_only) */
    int atfork_registered;
} kp_ci = {
    .init_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
    .queue_lock = PTHREAD_MUTEX_INITIALIZER,
    .queue_tail = &kp_ci.queue,
};

/* ---- records ---- */

/* The string id of a name that is a string literal, interned once. Caller holds kp_ci.lock. */
static uint32_t kp_literal_id(const char *literal)
{
    int i = 0;
    for (; i < KP_LITERALS && kp_ci.literal[i].text; i++)
        if (kp_ci.literal[i].text == literal) return kp_ci.literal[i].id;
    uint32_t id = kp_writer_string(literal);
    if (i < KP_LITERALS && id) {
        kp_ci.literal[i].text = literal;
        kp_ci.literal[i].id = id;
    }
    return id;
}

/* The string id of an API's name, looked up once per callback id. Caller holds kp_ci.lock. */
static uint32_t kp_api_name_id(int driver, uint32_t cbid)
{
    uint32_t *cache = driver ? kp_ci.driver_names : kp_ci.runtime_names;
    uint32_t cache_n = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    if (cbid < cache_n && cache[cbid]) return cache[cbid];
    const char *cupti_name = NULL;
    CUpti_CallbackDomain domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    char name[256];
    if (kp_cupti.cuptiGetCallbackName(domain, cbid, &cupti_name) == CUPTI_SUCCESS && cupti_name &&
        *cupti_name)
        kp_cuda_trace_api_name(cupti_name, name, sizeof name);
    else
        snprintf(name, sizeof name, "[CUDA %s API %u]", driver ? "driver" : "runtime", cbid);
    uint32_t id = kp_writer_string(name);
    if (cbid < cache_n) cache[cbid] = id;
    return id;
}

/* Emit an event and the n - 1 metric records after it, in one piece. Caller holds kp_ci.lock. */
static void kp_emit_n(kp_rec *r, size_t n, const char *name)
{
    if (kp_ci.clock_offset) {
        /* CUPTI kept its own clock: move its times onto kprof's. 0 stays "unknown". */
        uint64_t *times[] = {&r->start, &r->end, &r->queued, &r->submitted};
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
            if (*times[i]) *times[i] = (uint64_t)((int64_t)*times[i] - kp_ci.clock_offset);
    }
    if (kp_ci.sink) kp_ci.sink(kp_ci.sink_ctx, r, name);
    if (kp_ci.sink_only) return;
    if (n == 1)
        kp_writer_emit(r);
    else
        kp_writer_emit_n(r, n);
}

static void kp_emit(kp_rec *r)
{
    kp_emit_n(r, 1, NULL);
}

/* A metric record for the event before it (record.h). */
static kp_rec kp_metric(uint32_t key, double value, uint32_t kind)
{
    kp_rec m = {.kind = KP_REC_METRIC, .name = key, .aux = kind};
    memcpy(&m.bytes, &value, sizeof value);
    return m;
}

/* Under `kprof trace`, a program that links libkprof and set kernel hooks (kprof_kernel_hook)
 * gets its kernels' work in the trace too (inject/program_hooks.h). */
static int kp_program_hook(void *ctx, const char *name, const uint32_t grid[3],
                           const uint32_t block[3], double *flops, double *bytes)
{
    (void)ctx;
    unsigned g[3] = {grid[0], grid[1], grid[2]}, b[3] = {block[0], block[1], block[2]};
    int got = kp_program_hooks_work(name, g, b, flops, bytes);
    return ((got & KP_PROGRAM_WORK_FLOPS) ? KP_CUDA_HOOK_FLOPS : 0) |
           ((got & KP_PROGRAM_WORK_BYTES) ? KP_CUDA_HOOK_BYTES : 0);
}

/* One CUPTI record. Returns the number of records lost (no timing). Caller holds kp_ci.lock. */
static uint64_t kp_record(const CUpti_Activity *rec)
{
    kp_rec r;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (!kp_cuda_trace_kernel(k, &r)) return 1;
        kp_cuda_trace_context_learn(&kp_ci.contexts, k->contextId, k->deviceId);
        const char *name = k->name ? k->name : "[unnamed kernel]";
        r.name = kp_writer_string(name);
        /* The session's hook in-process; the program's own under `kprof trace`. */
        kp_cuda_kernel_hook hook = kp_ci.hook                                    ? kp_ci.hook
                                   : !kp_ci.in_process && kp_program_hooks_any() ? kp_program_hook
                                                                                 : NULL;
        if (!hook) {
            kp_emit_n(&r, 1, name);
            return 0;
        }
        /* The kernel's work, as the program's hook says: metric records right after it. */
        kp_rec recs[3] = {r};
        size_t n = 1;
        double flops = 0, bytes = 0;
        uint32_t grid[3] = {k->gridX, k->gridY, k->gridZ};
        uint32_t block[3] = {k->blockX, k->blockY, k->blockZ};
        int got = hook(kp_ci.hook_ctx, name, grid, block, &flops, &bytes);
        if (got & KP_CUDA_HOOK_FLOPS)
            recs[n++] = kp_metric(kp_literal_id("flops"), flops, KP_REC_KERNEL);
        if (got & KP_CUDA_HOOK_BYTES)
            recs[n++] = kp_metric(kp_literal_id("bytes"), bytes, KP_REC_KERNEL);
        kp_emit_n(recs, n, name);
        return 0;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        int driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        if (!kp_cuda_trace_api(a, driver, &r)) return 1;
        r.name = kp_api_name_id(driver, a->cbid);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        if (!kp_cuda_trace_memcpy(m, &r)) return 1;
        kp_cuda_trace_context_learn(&kp_ci.contexts, m->contextId, m->deviceId);
        r.name = kp_literal_id(kp_cuda_trace_copy_name(m->copyKind));
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        if (!kp_cuda_trace_memset(m, &r)) return 1;
        kp_cuda_trace_context_learn(&kp_ci.contexts, m->contextId, m->deviceId);
        r.name = kp_literal_id("[CUDA memset]");
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        if (!kp_cuda_trace_sync(s, &r)) return 1;
        r.device = kp_cuda_trace_context_device(&kp_ci.contexts, s->contextId);
        r.name = kp_literal_id(kp_cuda_trace_sync_name(s->type));
        break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)rec;
        /* CUPTI allocates the details and leaves freeing them to us, timing or not. */
        free(o->overheadData);
        if (!kp_cuda_trace_overhead(o, &r)) return 1;
        r.name = kp_literal_id(kp_cuda_trace_overhead_name(o->overheadKind));
        break;
    }
    default:
        return 0; /* anything another client enabled: nothing to record */
    }
    kp_emit(&r);
    return 0;
}

/* ---- CUPTI's buffers ----
 *
 * CUPTI calls kp_buffer_request and kp_buffer_complete from inside itself (on the launching
 * thread, on its worker thread, inside cuptiActivityFlushAll), possibly holding its own locks.
 * So they only move pointers under queue_lock, which is never held across a call out; records
 * are converted later by kp_drain on our own thread, outside every CUPTI callback, so no lock of
 * ours is ever waited on while CUPTI holds one of its own, and CUPTI's thread is never kept busy.
 * Each buffer carries a header just before the bytes CUPTI sees; drained buffers are kept for
 * reuse, up to KP_SPARE_BUFFERS. */

typedef struct kp_cbuf {
    struct kp_cbuf *next;
    size_t valid; /* bytes of records CUPTI wrote */
} kp_cbuf;

#define KP_CBUF_HEAD     64u /* sizeof (kp_cbuf), rounded up so records stay aligned */
#define KP_SPARE_BUFFERS 4

static kp_cbuf *kp_cbuf_of(uint8_t *records)
{
    return (kp_cbuf *)(void *)(records - KP_CBUF_HEAD);
}

static void kp_drain(void);

static void CUPTIAPI kp_buffer_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    kp_cbuf *b = NULL;
    pthread_mutex_lock(&kp_ci.queue_lock);
    if (kp_ci.spare) {
        b = kp_ci.spare;
        kp_ci.spare = b->next;
        kp_ci.nspare--;
    }
    pthread_mutex_unlock(&kp_ci.queue_lock);
    if (!b) {
        void *p = NULL;
        if (posix_memalign(&p, KP_CBUF_HEAD, KP_CBUF_HEAD + KP_BUFFER_BYTES) == 0) b = p;
    }
    *buffer = b ? (uint8_t *)b + KP_CBUF_HEAD : NULL; /* NULL declines; CUPTI counts the drops */
    *size = b ? KP_BUFFER_BYTES : 0;
    *max_records = 0;
}

/* Give back what CUPTI left us to free in a buffer whose records are not converted. */
static void kp_buffer_discard(uint8_t *buffer, size_t valid)
{
    CUpti_Activity *rec = NULL;
    while (kp_cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        if (rec->kind == CUPTI_ACTIVITY_KIND_OVERHEAD)
            free(((CUpti_ActivityOverhead3 *)rec)->overheadData);
}

static void CUPTIAPI kp_buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                        size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    if (!buffer) return;
    kp_cbuf *b = kp_cbuf_of(buffer);
    if (getpid() != kp_ci.pid || (!kp_ci.in_process && !kp_writer_active())) {
        /* A forked child: the string ids, the file and our locks are the parent's. (In-process,
         * records go on to the sink even with no writer recording: kprof_benchmark's own.) */
        kp_buffer_discard(buffer, valid);
        free(b);
        return;
    }
    b->valid = valid;
    b->next = NULL;
    pthread_mutex_lock(&kp_ci.queue_lock);
    *kp_ci.queue_tail = b;
    kp_ci.queue_tail = &b->next;
    pthread_mutex_unlock(&kp_ci.queue_lock);
    if (atomic_load(&kp_ci.flusher_running))
        sem_post(&kp_ci.wake);
    else
        kp_drain(); /* no thread of ours to do it (never started, stopped, or left after a crash) */
}

/* Convert every queued buffer, oldest first, into records. Any thread outside CUPTI's callbacks;
 * kp_ci.lock is taken before the queue is emptied, so two drains keep the buffers' order. */
static void kp_drain(void)
{
    pthread_mutex_lock(&kp_ci.lock);
    pthread_mutex_lock(&kp_ci.queue_lock);
    kp_cbuf *list = kp_ci.queue;
    kp_ci.queue = NULL;
    kp_ci.queue_tail = &kp_ci.queue;
    pthread_mutex_unlock(&kp_ci.queue_lock);
    uint64_t lost = 0;
    while (list) {
        kp_cbuf *b = list;
        list = b->next;
        uint8_t *records = (uint8_t *)b + KP_CBUF_HEAD;
        CUpti_Activity *rec = NULL;
        while (kp_cupti.cuptiActivityGetNextRecord(records, b->valid, &rec) == CUPTI_SUCCESS)
            lost += kp_record(rec);
        pthread_mutex_lock(&kp_ci.queue_lock);
        int keep = kp_ci.nspare < KP_SPARE_BUFFERS;
        if (keep) {
            b->next = kp_ci.spare;
            kp_ci.spare = b;
            kp_ci.nspare++;
        }
        pthread_mutex_unlock(&kp_ci.queue_lock);
        if (!keep) free(b);
    }
    pthread_mutex_unlock(&kp_ci.lock);
    /* The count resets on every call: the drops since the last one. */
    size_t dropped = 0;
    if (kp_cupti.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
        lost += dropped;
    kp_writer_dropped(lost);
}

/* ---- the flush thread ---- */

/* Conditions the exit and crash paths wait on, a bounded time (kp_poll_until). */
static int kp_flusher_has_stopped(void *ctx)
{
    (void)ctx;
    return atomic_load(&kp_ci.stopped);
}

static int kp_crash_flush_done(void *ctx)
{
    (void)ctx;
    return atomic_load(&kp_ci.crash_done);
}

/* Ask CUPTI for its buffers (forced: records still in flight are cut off there), then convert. */
static void kp_flush_cupti(int forced)
{
    pthread_mutex_lock(&kp_ci.flush_lock);
    kp_cupti.cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    pthread_mutex_unlock(&kp_ci.flush_lock);
    kp_drain();
}

/* The same at exit, where waiting must end: a flush thread stuck inside CUPTI keeps flush_lock,
 * and exit then converts only what was already handed over. */
static void kp_flush_cupti_at_exit(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += KP_EXIT_WAIT_MS / 1000;
    if (pthread_mutex_timedlock(&kp_ci.flush_lock, &until) == 0) {
        kp_cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        pthread_mutex_unlock(&kp_ci.flush_lock);
    } else {
        kp_writer_note("kprof's CUPTI flush thread did not return from CUPTI: the CUDA records "
                       "still inside CUPTI at exit were not recorded");
    }
    kp_drain();
}

/* Woken by every completed buffer (convert it) and every KP_FLUSH_PERIOD_MS (also ask CUPTI for
 * what is complete, because CUPTI's own periodic flush only returns full buffers, and write out
 * every thread's records, so the file shows a running program). */
static void *kp_flusher_main(void *arg)
{
    (void)arg;
    uint64_t next_flush = kp_now_ns() + KP_FLUSH_PERIOD_MS * 1000000ull;
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)KP_FLUSH_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (sem_timedwait(&kp_ci.wake, &until) != 0 && errno == EINTR) {
        }
        int crash = atomic_load(&kp_ci.crash_request);
        if (!crash && atomic_load(&kp_ci.stop)) break;
        if (crash) {
            kp_flush_cupti(1);
            kp_writer_flush_all();
            atomic_store(&kp_ci.crash_done, 1);
            break;
        }
        uint64_t now = kp_now_ns();
        if (now >= next_flush) {
            next_flush = now + KP_FLUSH_PERIOD_MS * 1000000ull;
            kp_flush_cupti(0);
            kp_writer_flush_all(); /* records of other threads, too */
        } else {
            kp_drain();
        }
    }
    atomic_store(&kp_ci.stopped, 1);
    atomic_store(&kp_ci.flusher_running, 0); /* from now on, buffers are converted as they come */
    return NULL;
}

/* A child forked while our thread is inside CUPTI would inherit CUPTI's locks held, and CUPTI's
 * own exit code in the child could then wait on them forever: fork waits for our flush to end.
 * Registered after the writer's handlers, so this runs before them (flush_lock, then the
 * writer's lock: the order the flush thread takes them in). */
static void kp_fork_prepare(void)
{
    pthread_mutex_lock(&kp_ci.flush_lock);
}

static void kp_fork_parent(void)
{
    pthread_mutex_unlock(&kp_ci.flush_lock);
}

static void kp_fork_child(void)
{
    pthread_mutex_init(&kp_ci.flush_lock, NULL);
    pthread_mutex_init(&kp_ci.queue_lock, NULL);
}

/* Start the flush thread: KPROF_OK, or KPROF_BACKEND naming the call that failed (err filled). */
static kprof_status kp_flusher_start(kp_error *err)
{
    if (sem_init(&kp_ci.wake, 0, 0) != 0)
        return kp_error_set(err, KPROF_BACKEND, "the CUPTI flush thread: sem_init: %s",
                            strerror(errno));
    if (!kp_ci.atfork_registered) { /* once: an in-process session may start it again */
        int rc = pthread_atfork(kp_fork_prepare, kp_fork_parent, kp_fork_child);
        if (rc != 0)
            return kp_error_set(err, KPROF_BACKEND, "the CUPTI flush thread: pthread_atfork: %s",
                                strerror(rc));
        kp_ci.atfork_registered = 1;
    }
    /* Signals meant for the program must not land on our thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&kp_ci.flusher, NULL, kp_flusher_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return kp_error_set(err, KPROF_BACKEND, "the CUPTI flush thread: pthread_create: %s",
                            strerror(rc));
    pthread_setname_np(kp_ci.flusher, "kprof-cupti");
    pthread_detach(kp_ci.flusher);
    atomic_store(&kp_ci.flusher_running, 1);
    return KPROF_OK;
}

static void kp_flusher_stop(void)
{
    if (!atomic_load(&kp_ci.flusher_running)) return;
    atomic_store(&kp_ci.stop, 1);
    sem_post(&kp_ci.wake);
    /* Bounded: a flusher stuck inside CUPTI must not turn exit into a hang. */
    kp_poll_until(kp_flusher_has_stopped, NULL, KP_EXIT_WAIT_MS / 1000.0);
    atomic_store(&kp_ci.flusher_running, 0);
}

/* ---- crash and exit ---- */

/* The writer's crash hook: the flush thread forces CUPTI's last records out (a bounded wait),
 * then the writer flushes them with everything else. */
static void kp_cuda_crash(void)
{
    if (atomic_load(&kp_ci.flusher_running) && !pthread_equal(pthread_self(), kp_ci.flusher) &&
        !atomic_exchange(&kp_ci.crash_request, 1)) {
        sem_post(&kp_ci.wake);
        kp_poll_until(kp_crash_flush_done, NULL, KP_CRASH_WAIT_MS / 1000.0);
    }
}

/* Called by the writer at exit, in the process that started it only. No CUDA call here: the
 * driver may already be shutting down, and the forced flush does not need the device. */
static void kp_cuda_exit(void)
{
    kp_cuda_capture_exit(); /* a capture asked for and never made says why */
    kp_flusher_stop();
    kp_flush_cupti_at_exit();
}

/* ---- setup ---- */

static const struct {
    CUpti_ActivityKind kind;
    const char *what;
} kp_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "copies"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "fills"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API calls"},
    {CUPTI_ACTIVITY_KIND_DRIVER, "driver API calls"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization waits"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "CUPTI overhead"},
};

#define KP_OTHER_SUBSCRIBER                                                                        \
    "another CUPTI subscriber (Nsight Systems, Nsight Compute, a debugger) is present"

/* "nothing from CUDA was recorded", naming the other profiler when that is the reason. */
static void kp_note_unusable(CUptiResult r)
{
    char note[300];
    snprintf(note, sizeof note,
             r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? KP_OTHER_SUBSCRIBER "; nothing from CUDA was recorded (%s)"
                 : "CUPTI could not be used (%s); nothing from CUDA was recorded",
             kp_cupti_result_text(r));
    kp_writer_note(note);
}

/* Queued/submitted times, only on request (kprof trace --queue-times). With them on, CUPTI 13.0
 * deadlocked a program of 200k back-to-back launches on the H200 whenever concurrent kernel
 * records and API records were both on (the launching thread and CUPTI's worker each waiting on
 * a lock inside libcuda; our flushes and buffer sizes made no difference). With serialized
 * kernel records it ran through, so the request also serializes kernels: the price is said in
 * the trace's notes. (Those records carry the queue time only; their submit time stays 0.) */
static int kp_queue_times(void)
{
    const char *v = getenv(KP_ENV_CUDA_QUEUE_TIMES);
    return v && strcmp(v, "1") == 0;
}

/* Enable every kind; say in one note what could not be, and why. Returns how many are on. */
static int kp_enable_kinds(int *other_subscriber_out, CUptiResult *first_error_out)
{
    char failed[512] = "";
    size_t used = 0;
    CUptiResult first_error = CUPTI_SUCCESS;
    int enabled = 0, other_subscriber = 0;
    for (size_t i = 0; i < sizeof kp_kinds / sizeof kp_kinds[0]; i++) {
        CUpti_ActivityKind kind = kp_kinds[i].kind;
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kp_queue_times())
            kind = CUPTI_ACTIVITY_KIND_KERNEL;
        CUptiResult r = kp_cupti.cuptiActivityEnable(kind);
        if (r == CUPTI_SUCCESS) {
            enabled++;
            continue;
        }
        if (first_error == CUPTI_SUCCESS) first_error = r;
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) other_subscriber = 1;
        int n = snprintf(failed + used, sizeof failed - used, "%s%s", used ? ", " : "",
                         kp_kinds[i].what);
        if (n > 0 && (size_t)n < sizeof failed - used) used += (size_t)n;
    }
    *other_subscriber_out = other_subscriber;
    *first_error_out = first_error;
    if (enabled == 0) {
        kp_note_unusable(other_subscriber ? CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                          : first_error);
    } else if (first_error != CUPTI_SUCCESS) {
        char note[900];
        snprintf(note, sizeof note,
                 other_subscriber ? KP_OTHER_SUBSCRIBER "; kprof could not record %s (%s)"
                                  : "CUPTI could not record %s (%s)",
                 failed, kp_cupti_result_text(first_error));
        kp_writer_note(note);
    }
    return enabled;
}

/* Everything CUPTI needs before the first kind is on: our clock, kernel thread ids, queue
 * times. None is fatal; what failed is written into notes[], to be told only if anything is
 * recorded at all. */
#define KP_CONFIG_NOTES 3

static void kp_configure_cupti(char notes[KP_CONFIG_NOTES][300])
{
    CUptiResult r = kp_cupti.cuptiActivityRegisterTimestampCallback(kp_now_ns);
    if (r != CUPTI_SUCCESS) {
        /* CUPTI keeps its own clock (CLOCK_REALTIME on Linux): measure the distance once. */
        uint64_t cupti_now = 0;
        if (kp_cupti.cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS && cupti_now)
            kp_ci.clock_offset = (int64_t)(cupti_now - kp_now_ns());
        snprintf(notes[0], 300,
                 kp_ci.clock_offset
                     ? "CUPTI refused kprof's clock (%s); CUDA times were moved onto it by a "
                       "one-time offset and may drift against other records"
                     : "CUPTI refused kprof's clock (%s); CUDA times are on CUPTI's clock and do "
                       "not line up with other records",
                 kp_cupti_result_text(r));
    }
    r = kp_cupti.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    if (r != CUPTI_SUCCESS)
        snprintf(notes[1], 300,
                 "CUPTI could not report kernel thread ids (%s); CUDA API calls carry "
                 "pthread ids instead, which do not match the thread ids of other records",
                 kp_cupti_result_text(r));
    if (!kp_queue_times()) return;
    r = kp_cupti.cuptiActivityEnableLatencyTimestamps(1);
    if (r != CUPTI_SUCCESS)
        snprintf(notes[2], 300,
                 "CUPTI could not record when kernels were queued and submitted (%s)",
                 kp_cupti_result_text(r));
}

/* Turn collection on. KPROF_OK, or KPROF_UNAVAILABLE with the reason in err (also said in the
 * trace's notes). */
static kprof_status kp_start(kp_error *err)
{
    char note[700];
    kp_error load = {0};
    if (kp_cupti_load(&load) != KPROF_OK) {
        char why[512];
        kp_strlcpy(why, load.message, sizeof why);
        snprintf(note, sizeof note, "CUPTI could not be loaded: %s; nothing from CUDA was recorded",
                 why);
        kp_writer_note(note);
        kp_error_clear(&load);
        return kp_error_set(err, KPROF_UNAVAILABLE, "CUPTI could not be loaded: %s", why);
    }
    CUptiResult r = kp_cupti.cuptiActivityRegisterCallbacks(kp_buffer_request, kp_buffer_complete);
    if (r != CUPTI_SUCCESS) {
        kp_note_unusable(r);
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                ? KP_OTHER_SUBSCRIBER ": kprof's own CUDA collection is off (%s)"
                                : "CUPTI could not be used (%s): kprof's CUDA collection is off",
                            kp_cupti_result_text(r));
    }
    char config_notes[KP_CONFIG_NOTES][300] = {{0}};
    kp_configure_cupti(config_notes);
    int other = 0;
    CUptiResult first = CUPTI_SUCCESS;
    if (kp_enable_kinds(&other, &first) == 0)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            other ? KP_OTHER_SUBSCRIBER ": kprof's own CUDA collection is off"
                                  : "CUPTI could not enable any activity kind (%s): kprof's CUDA "
                                    "collection is off",
                            kp_cupti_result_text(first));
    for (int i = 0; i < KP_CONFIG_NOTES; i++)
        if (config_notes[i][0]) kp_writer_note(config_notes[i]);
    if (kp_queue_times())
        kp_writer_note("--queue-times: kernels ran one at a time (CUPTI's serialized kernel "
                       "records, the mode in which its queue times are safe to take)");
    /* Full buffers come back on CUPTI's own schedule; partial ones through the flush thread. */
    kp_cupti.cuptiActivityFlushPeriod(KP_FLUSH_PERIOD_MS);
    if (!kp_ci.in_process) kp_writer_at_exit(kp_cuda_exit); /* the session stops it instead */
    /* No flush thread is no failure of the collection: the trace's note says what it costs. */
    if (kp_flusher_start(NULL) != KPROF_OK) {
        kp_writer_note("kprof could not start its CUPTI flush thread; CUDA records reach the "
                       "trace only at exit and are lost if the program crashes");
        return KPROF_OK;
    }
    if (!kp_ci.in_process) kp_writer_at_crash(kp_cuda_crash);
    return KPROF_OK;
}

/* The CUDA driver's entry point for injection libraries (CUDA_INJECTION64_PATH). 1 = success;
 * the driver carries on either way, and every failure is a note in the trace instead. */
KP_EXPORT int InitializeInjection(void)
{
    pthread_mutex_lock(&kp_ci.init_lock);
    if (kp_ci.initialized) {
        pthread_mutex_unlock(&kp_ci.init_lock);
        return 1;
    }
    kp_ci.initialized = 1;
    if (kp_writer_start("cuda", NULL) == KPROF_OK) {
        kp_ci.pid = getpid();
        kp_error err = {0};
        kp_start(&err); /* a failure is a note in the trace */
        /* kprof trace --capture only (KPROF_CAPTURE); it needs the CUPTI the collection uses,
         * and says so when that could not be had. */
        kp_cuda_capture_start(err.status == KPROF_OK ? NULL : &err);
        kp_error_clear(&err);
    }
    pthread_mutex_unlock(&kp_ci.init_lock);
    return 1;
}

/* ---- in-process use (cuda_collector.h) ---- */

kprof_status kp_cuda_collector_start(kp_error *err)
{
    pthread_mutex_lock(&kp_ci.init_lock);
    if (kp_ci.initialized) {
        kprof_status st = kp_error_set(
            err, KPROF_UNAVAILABLE, "%s",
            kp_ci.in_process ? "kprof's CUDA collection is already on in this process"
                             : "kprof trace's collector already records this process's CUDA "
                               "work: the in-process CUDA collection stays off");
        pthread_mutex_unlock(&kp_ci.init_lock);
        return st;
    }
    kp_ci.pid = getpid();
    kp_ci.in_process = 1;
    atomic_store(&kp_ci.stop, 0);
    atomic_store(&kp_ci.stopped, 0);
    kprof_status rc = kp_start(err);
    if (rc == KPROF_OK)
        kp_ci.initialized = 1;
    else
        kp_ci.in_process = 0;
    pthread_mutex_unlock(&kp_ci.init_lock);
    return rc;
}

int kp_cuda_collector_running(void)
{
    pthread_mutex_lock(&kp_ci.init_lock);
    int on = kp_ci.initialized && kp_ci.in_process;
    pthread_mutex_unlock(&kp_ci.init_lock);
    return on;
}

void kp_cuda_collector_flush(int forced)
{
    pthread_mutex_lock(&kp_ci.init_lock);
    if (kp_ci.initialized && kp_ci.in_process) kp_flush_cupti(forced);
    pthread_mutex_unlock(&kp_ci.init_lock);
}

uint64_t kp_cuda_collector_now(void)
{
    uint64_t t = 0;
    pthread_mutex_lock(&kp_ci.init_lock);
    int on = kp_ci.initialized && kp_ci.in_process;
    int64_t offset = kp_ci.clock_offset;
    pthread_mutex_unlock(&kp_ci.init_lock);
    if (!on || kp_cupti.cuptiGetTimestamp(&t) != CUPTI_SUCCESS || !t) return 0;
    return offset ? (uint64_t)((int64_t)t - offset) : t; /* as kp_emit_n moves the records */
}

void kp_cuda_collector_stop(void)
{
    pthread_mutex_lock(&kp_ci.init_lock);
    if (!kp_ci.initialized || !kp_ci.in_process) {
        pthread_mutex_unlock(&kp_ci.init_lock);
        return;
    }
    kp_flusher_stop();
    kp_flush_cupti(1);
    for (size_t i = 0; i < sizeof kp_kinds / sizeof kp_kinds[0]; i++) {
        kp_cupti.cuptiActivityDisable(kp_kinds[i].kind);
        if (kp_kinds[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            kp_cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL);
    }
    kp_drain(); /* anything the disabling flushed */
    /* String ids belong to the writer's file, which the session ends now. */
    pthread_mutex_lock(&kp_ci.lock);
    memset(kp_ci.runtime_names, 0, sizeof kp_ci.runtime_names);
    memset(kp_ci.driver_names, 0, sizeof kp_ci.driver_names);
    memset(kp_ci.literal, 0, sizeof kp_ci.literal);
    pthread_mutex_unlock(&kp_ci.lock);
    kp_ci.initialized = 0;
    kp_ci.in_process = 0;
    pthread_mutex_unlock(&kp_ci.init_lock);
}

void kp_cuda_collector_set_hook(kp_cuda_kernel_hook hook, void *ctx)
{
    pthread_mutex_lock(&kp_ci.lock);
    kp_ci.hook = hook;
    kp_ci.hook_ctx = ctx;
    pthread_mutex_unlock(&kp_ci.lock);
}

void kp_cuda_collector_set_sink_only(int on)
{
    pthread_mutex_lock(&kp_ci.lock);
    kp_ci.sink_only = on;
    pthread_mutex_unlock(&kp_ci.lock);
}

void kp_cuda_collector_set_sink(kp_cuda_record_sink sink, void *ctx)
{
    pthread_mutex_lock(&kp_ci.lock);
    kp_ci.sink = sink;
    kp_ci.sink_ctx = ctx;
    pthread_mutex_unlock(&kp_ci.lock);
}
