/*
 * cuda.c — libkprof's CUDA surface (include/kprof.h): the in-process CUDA collector of a
 * session (KPROF_COLLECT_CUDA: inject/cuda_collector.h, the collector `kprof trace` injects,
 * started here by the session instead of by the driver), kernel hooks (kprof_kernel_hook: the
 * work of every launch of a kernel, as metrics on its record), the capture hand-off for external
 * tools (kprof_capture_begin/end) and kprof_benchmark's CUDA timer (benchmark.h: a callback's
 * device time, run after run, from CUPTI's device timestamps; cold, before each, the L2 flush
 * kernel `kprof bench` uses: backend/cuda/l2_flush.h).
 */
#define _GNU_SOURCE
#include "core/demangle.h"
#include "base/util.h"
#include "libkprof/benchmark.h"
#include "libkprof/collectors.h"
#include "libkprof/libkprof_internal.h"
#include "kprof.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KPROF_HAVE_CUDA
#include "backend/cuda/l2_flush.h"
#include "inject/cuda_collector.h"
#include "runtime/cuda_api.h"

#include <nvtx3/nvToolsExt.h>
#endif

/* ---- kernel hooks ------------------------------------------------------------------------------
 */

#define KP_HOOKS_MAX 256 /* kernels with a hook at once */

typedef struct kp_hook {
    char *kernel; /* as registered */
    kprof_work_fn fn;
    void *ctx;
} kp_hook;

/* Which hook a kernel name (as CUDA gives it) resolved to: names are looked up once each. */
typedef struct kp_hook_seen {
    char *name;
    int hook; /* index in hooks, or -1 */
} kp_hook_seen;

static struct {
    pthread_mutex_t lock;
    kp_hook hooks[KP_HOOKS_MAX];
    int nhooks;
    kp_hook_seen *seen; /* open addressing by name hash */
    size_t seen_cap, seen_n;
} kp_hooks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t kp_hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static void kp_seen_clear_locked(void)
{
    for (size_t i = 0; i < kp_hooks.seen_cap; i++)
        free(kp_hooks.seen[i].name);
    free(kp_hooks.seen);
    kp_hooks.seen = NULL;
    kp_hooks.seen_cap = kp_hooks.seen_n = 0;
}

/* Whether a registered name means this kernel: its name as CUDA has it, its demangled name, or
 * that without the parameter list ("vadd" for "vadd(float*, int)" and "_Z4vaddPfi"). */
static int kp_hook_matches(const char *registered, const char *name, const char *demangled)
{
    if (strcmp(registered, name) == 0 || strcmp(registered, demangled) == 0) return 1;
    size_t n = strlen(registered);
    return strncmp(registered, demangled, n) == 0 && demangled[n] == '(';
}

/* The hook of a kernel name, or -1. Caller holds kp_hooks.lock. */
static int kp_hook_find_locked(const char *name)
{
    if (kp_hooks.nhooks == 0) return -1;
    uint64_t h = kp_hash_text(name);
    if (kp_hooks.seen_cap) {
        for (size_t i = h & (kp_hooks.seen_cap - 1); kp_hooks.seen[i].name;
             i = (i + 1) & (kp_hooks.seen_cap - 1))
            if (strcmp(kp_hooks.seen[i].name, name) == 0) return kp_hooks.seen[i].hook;
    }
    char demangled[4096];
    if (!kp_demangle(name, demangled, sizeof demangled))
        snprintf(demangled, sizeof demangled, "%s", name);
    int hook = -1;
    for (int i = 0; i < kp_hooks.nhooks && hook < 0; i++)
        if (kp_hook_matches(kp_hooks.hooks[i].kernel, name, demangled)) hook = i;
    /* Remember it (a table at most half full; when memory runs out, look it up again next time). */
    if ((kp_hooks.seen_n + 1) * 2 > kp_hooks.seen_cap) {
        size_t cap = kp_hooks.seen_cap ? kp_hooks.seen_cap * 2 : 64;
        kp_hook_seen *t = calloc(cap, sizeof *t);
        if (!t) return hook;
        for (size_t i = 0; i < kp_hooks.seen_cap; i++) {
            if (!kp_hooks.seen[i].name) continue;
            size_t j = kp_hash_text(kp_hooks.seen[i].name) & (cap - 1);
            while (t[j].name)
                j = (j + 1) & (cap - 1);
            t[j] = kp_hooks.seen[i];
        }
        free(kp_hooks.seen);
        kp_hooks.seen = t;
        kp_hooks.seen_cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return hook;
    size_t i = h & (kp_hooks.seen_cap - 1);
    while (kp_hooks.seen[i].name)
        i = (i + 1) & (kp_hooks.seen_cap - 1);
    kp_hooks.seen[i] = (kp_hook_seen){copy, hook};
    kp_hooks.seen_n++;
    return hook;
}

int kprof_kernel_hooks_;

int kprof_kernel_work_(const char *name, const unsigned grid[3], const unsigned block[3],
                       double *flops, double *bytes)
{
    if (!name || __atomic_load_n(&kprof_kernel_hooks_, __ATOMIC_RELAXED) <= 0) return 0;
    /* The hook runs under the lock: once kprof_kernel_hook(k, NULL) returns, no call of the
     * removed one is still running (the caller may free its ctx). */
    pthread_mutex_lock(&kp_hooks.lock);
    int i = kp_hook_find_locked(name);
    if (i < 0) {
        pthread_mutex_unlock(&kp_hooks.lock);
        return 0;
    }
    kprof_launch launch = {.kernel = name,
                           .grid = {grid[0], grid[1], grid[2]},
                           .block = {block[0], block[1], block[2]}};
    double f = 0, b = 0;
    int got = kp_hooks.hooks[i].fn(kp_hooks.hooks[i].ctx, &launch, &f, &b), out = 0;
    pthread_mutex_unlock(&kp_hooks.lock);
    if ((got & KPROF_WORK_FLOPS) && isfinite(f) && f >= 0) {
        *flops = f;
        out |= KPROF_WORK_FLOPS;
    }
    if ((got & KPROF_WORK_BYTES) && isfinite(b) && b >= 0) {
        *bytes = b;
        out |= KPROF_WORK_BYTES;
    }
    return out;
}

#ifdef KPROF_HAVE_CUDA
/* The collector's kernel hook (cuda_collector.h): the program's formula for this kernel. */
static int kp_cuda_hook(void *ctx, const char *name, const uint32_t grid[3],
                        const uint32_t block[3], double *flops, double *bytes)
{
    (void)ctx;
    unsigned g[3] = {grid[0], grid[1], grid[2]}, b[3] = {block[0], block[1], block[2]};
    int got = kprof_kernel_work_(name, g, b, flops, bytes);
    return ((got & KPROF_WORK_FLOPS) ? KP_CUDA_HOOK_FLOPS : 0) |
           ((got & KPROF_WORK_BYTES) ? KP_CUDA_HOOK_BYTES : 0);
}
#endif

kprof_status kprof_kernel_hook(const char *kernel, kprof_work_fn fn, void *ctx)
{
    if (!kernel || !*kernel)
        return kp_libkprof_fail("kprof_kernel_hook", KPROF_INVALID, "no kernel name given");
    pthread_mutex_lock(&kp_hooks.lock);
    int at = -1;
    for (int i = 0; i < kp_hooks.nhooks && at < 0; i++)
        if (strcmp(kp_hooks.hooks[i].kernel, kernel) == 0) at = i;
    kprof_status st = KPROF_OK;
    if (!fn) { /* remove */
        if (at >= 0) {
            free(kp_hooks.hooks[at].kernel);
            kp_hooks.hooks[at] = kp_hooks.hooks[--kp_hooks.nhooks];
        }
    } else if (at >= 0) {
        kp_hooks.hooks[at].fn = fn;
        kp_hooks.hooks[at].ctx = ctx;
    } else if (kp_hooks.nhooks == KP_HOOKS_MAX) {
        st = KPROF_INVALID;
    } else {
        char *copy = strdup(kernel);
        if (!copy)
            st = KPROF_NOMEM;
        else
            kp_hooks.hooks[kp_hooks.nhooks++] = (kp_hook){copy, fn, ctx};
    }
    if (st == KPROF_OK) kp_seen_clear_locked(); /* names resolve again against the new list */
    __atomic_store_n(&kprof_kernel_hooks_, kp_hooks.nhooks, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&kp_hooks.lock);
    if (st == KPROF_INVALID) {
        char msg[96];
        snprintf(msg, sizeof msg, "%d kernels have hooks already (the most at once)", KP_HOOKS_MAX);
        return kp_libkprof_fail("kprof_kernel_hook", st, msg);
    }
    if (st == KPROF_NOMEM) return kp_libkprof_nomem("kprof_kernel_hook");
    return KPROF_OK;
}

/* ---- the session's collector -------------------------------------------------------------------
 */

#ifdef KPROF_HAVE_CUDA
const char *kp_libkprof_cuda_unavailable(void)
{
    return NULL;
}

kprof_status kp_libkprof_cuda_start(kp_session *s, kp_error *err)
{
    (void)s;
    kp_error load = {0}; /* holds no log: nothing to clear */
    if (kp_cuda_load(&load) != KPROF_OK)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "the CUDA driver cannot be loaded (%s): no CUDA work to record here",
                            load.message);
    const char *injected = getenv("CUDA_INJECTION64_PATH");
    if (injected && *injected) /* CUPTI has one activity client per process: theirs, not ours */
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "a CUDA injection collects this process's CUDA work already "
                            "(CUDA_INJECTION64_PATH=%s: kprof trace, Nsight Systems or Nsight "
                            "Compute): kprof's own CUDA collection is off (start the session "
                            "without KPROF_COLLECT_CUDA to record the scopes)",
                            injected);
    kp_cuda_collector_set_hook(kp_cuda_hook, NULL);
    kprof_status started = kp_cuda_collector_start(err);
    if (started != KPROF_OK) {
        kp_cuda_collector_set_hook(NULL, NULL);
        return started;
    }
    return KPROF_OK;
}

void kp_libkprof_cuda_stop(kp_session *s)
{
    (void)s;
    kp_cuda_collector_stop();
    kp_cuda_collector_set_hook(NULL, NULL);
}
#else
const char *kp_libkprof_cuda_unavailable(void)
{
    return "this libkprof was built without CUDA (no cuda.h where it was built): record the "
           "program's CUDA work with `kprof trace -o FILE -- PROGRAM`";
}

kprof_status kp_libkprof_cuda_start(kp_session *s, kp_error *err)
{
    (void)s;
    return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_libkprof_cuda_unavailable());
}

void kp_libkprof_cuda_stop(kp_session *s)
{
    (void)s;
}
#endif

/* ---- capture hand-off --------------------------------------------------------------------------
 */

static struct {
    pthread_mutex_t lock;
    int open;
    int profiler_started;
    unsigned long long range; /* the NVTX range's id: it may end on another thread */
} kp_capture_handoff = {.lock = PTHREAD_MUTEX_INITIALIZER};

kprof_status kprof_capture_begin(const char *name)
{
    if (!name || !*name)
        return kp_libkprof_fail("kprof_capture_begin", KPROF_INVALID, "no capture name given");
    pthread_mutex_lock(&kp_capture_handoff.lock);
    if (kp_capture_handoff.open) {
        pthread_mutex_unlock(&kp_capture_handoff.lock);
        return kp_libkprof_fail("kprof_capture_begin", KPROF_INVALID,
                                "a capture is open already (captures do not nest)");
    }
    kprof_status st = KPROF_OK;
    char msg[600] = "";
#ifdef KPROF_HAVE_CUDA
    char why[300];
    kp_error load = {0}; /* holds no log: nothing to clear */
    if (kp_cuda_load(&load) != KPROF_OK) {
        kp_strlcpy(why, load.message, sizeof why);
        snprintf(msg, sizeof msg, "the CUDA driver cannot be loaded: %s", why);
        st = KPROF_UNAVAILABLE;
    } else {
        CUresult rc = kp_cu.cuProfilerStart();
        if (rc != CUDA_SUCCESS) {
            char text[200];
            kp_cuda_error_text(rc, text, sizeof text);
            snprintf(msg, sizeof msg,
                     "cuProfilerStart failed: %s (a capture needs the calling thread's CUDA "
                     "context: call it after the program's first CUDA call)",
                     text);
            st = kp_cuda_result_status(rc) == KPROF_UNAVAILABLE ? KPROF_UNAVAILABLE : KPROF_INVALID;
        } else {
            kp_capture_handoff.profiler_started = 1;
            kp_capture_handoff.range = nvtxRangeStartA(name);
        }
    }
#else
    snprintf(msg, sizeof msg,
             "this libkprof was built without CUDA: there is no cudaProfilerApi "
             "range to hand to an external tool");
    st = KPROF_UNAVAILABLE;
#endif
    if (st == KPROF_OK) kp_capture_handoff.open = 1;
    pthread_mutex_unlock(&kp_capture_handoff.lock);
    return st == KPROF_OK ? KPROF_OK : kp_libkprof_fail("kprof_capture_begin", st, msg);
}

kprof_status kprof_capture_end(void)
{
    pthread_mutex_lock(&kp_capture_handoff.lock);
    if (!kp_capture_handoff.open) {
        pthread_mutex_unlock(&kp_capture_handoff.lock);
        return kp_libkprof_fail("kprof_capture_end", KPROF_INVALID, "no capture is open");
    }
    kp_capture_handoff.open = 0;
#ifdef KPROF_HAVE_CUDA
    if (kp_capture_handoff.profiler_started) {
        nvtxRangeEnd(kp_capture_handoff.range);
        kp_cu.cuProfilerStop();
        kp_capture_handoff.profiler_started = 0;
    }
#endif
    pthread_mutex_unlock(&kp_capture_handoff.lock);
    return KPROF_OK;
}

/* ---- kprof_benchmark's CUDA timer (benchmark.h) -------------------------------------------
 *
 * A CUPTI flush costs milliseconds, so runs are taken in batches of about KP_CUDA_BATCH_NS of
 * host time between two of them: after each run's cuCtxSynchronize (and cold, after each flush's)
 * the timer notes a boundary on CUPTI's clock (kp_cuda_collector_now), then one forced flush
 * brings the batch's records, and each goes to the run (or flush) whose boundaries hold its start
 * (kp_bench_bin_ops). A run's work was launched after the boundary before it and waited for
 * before the one after it, so its records start between the two.
 */

#ifdef KPROF_HAVE_CUDA
#define KP_CUDA_BATCH_NS  5e6 /* host time of the runs between two CUPTI flushes */
#define KP_CUDA_BATCH_MAX 256 /* runs between two CUPTI flushes at most */

typedef struct kp_cuda_timer {
    pthread_mutex_t lock; /* ops, as the sink adds them */
    kp_bench_op *ops;     /* the device operations converted since the batch began */
    size_t nops, cap;
    int lost; /* the sink had no room for one: the batch cannot be told */
    int own;  /* the collector was started for the benchmark */
    CUcontext ctx;
    kp_cuda_l2_flush flush; /* cold: kprof's flush kernel and its scratch (function NULL: not
                               made yet) */
    double run_ns;          /* host time of a run (cold: with its flush); 0 until one is made */
    int64_t bounds[2 * KP_CUDA_BATCH_MAX + 1];  /* a batch's boundaries (kp_bench_bin_ops) */
    kp_bench_slot slots[2 * KP_CUDA_BATCH_MAX]; /* cold: flush, run, flush, run... */
    char pci[32]; /* the device's PCI bus id, for NVML ("" until known) */
} kp_cuda_timer;

static void kp_bench_sink(void *ctx, const kp_rec *r, const char *name)
{
    (void)name;
    kp_cuda_timer *t = ctx;
    if (r->kind != KP_REC_KERNEL && r->kind != KP_REC_MEMCPY && r->kind != KP_REC_MEMSET) return;
    pthread_mutex_lock(&t->lock);
    if (t->nops == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        kp_bench_op *grown = realloc(t->ops, cap * sizeof *grown);
        if (grown) {
            t->ops = grown;
            t->cap = cap;
        }
    }
    if (t->nops < t->cap)
        t->ops[t->nops++] = (kp_bench_op){(int64_t)r->start, (int64_t)r->end};
    else
        t->lost = 1;
    pthread_mutex_unlock(&t->lock);
}

/* Wait for the context's work; a failure names what (NULL: the run's own work). */
static kprof_status kp_cuda_timer_wait(const char *what, kp_error *err)
{
    CUresult rc = kp_cu.cuCtxSynchronize();
    if (rc == CUDA_SUCCESS) return KPROF_OK;
    char text[200];
    kp_cuda_error_text(rc, text, sizeof text);
    if (rc == CUDA_ERROR_INVALID_CONTEXT)
        return kp_error_set(err, KPROF_INVALID,
                            "cuCtxSynchronize%s%s failed: %s (the calling thread has no CUDA "
                            "context: the callback must launch its work on this thread's current "
                            "context)",
                            what ? " " : "", what ? what : "", text);
    if (what)
        return kp_error_set(err, kp_cuda_result_status(rc), "%s: the device work failed: %s", what,
                            text);
    return kp_error_set(err, kp_cuda_result_status(rc), "the device work failed: %s", text);
}

/* A boundary of the batch, on the records' clock. */
static kprof_status kp_cuda_timer_bound(int64_t *at, kp_error *err)
{
    uint64_t now = kp_cuda_collector_now();
    if (!now)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "CUPTI's clock cannot be read (cuptiGetTimestamp): the runs' device "
                            "records cannot be told apart");
    *at = (int64_t)now;
    return KPROF_OK;
}

/* Cold: kprof's flush kernel (backend/cuda/l2_flush.h, the one `kprof bench` uses) on the current
 * context's device, reading twice its L2. */
static kprof_status kp_cuda_timer_flush_setup(kp_cuda_timer *t, kp_error *err)
{
    CUcontext ctx = NULL;
    if (kp_cu.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return kp_error_set(err, KPROF_INVALID,
                            "the calling thread has no CUDA context after the callback ran: "
                            "the callback must launch its work on this thread's current context");
    CUdevice dev = 0;
    kp_cuda_l2_flush_step step = KP_CUDA_L2_FLUSH_LOAD;
    CUresult rc = kp_cu.cuCtxGetDevice(&dev);
    if (rc == CUDA_SUCCESS) rc = kp_cuda_l2_flush_make(&t->flush, dev, NULL, &step);
    if (rc != CUDA_SUCCESS) {
        static const char *const what[] = {
            [KP_CUDA_L2_FLUSH_LOAD] = "its kernel cannot be loaded (cuModuleLoadData)",
            [KP_CUDA_L2_FLUSH_ALLOC] = "its scratch cannot be allocated (cuMemAlloc)",
            [KP_CUDA_L2_FLUSH_FILL] = "its scratch cannot be filled (cuMemsetD32Async)",
            [KP_CUDA_L2_FLUSH_FUNCTION] = "its kernel cannot be found (cuModuleGetFunction)"};
        char text[200];
        kp_cuda_error_text(rc, text, sizeof text);
        kprof_status st =
            kp_error_set(err, rc == CUDA_ERROR_OUT_OF_MEMORY ? KPROF_NOMEM : KPROF_BACKEND,
                         "cold: kprof's L2 flush cannot be made: %s (%llu bytes, twice the L2): %s",
                         what[step], (unsigned long long)t->flush.bytes, text);
        if (kp_cuda_result_status(rc) != KPROF_FAULT) kp_cuda_l2_flush_free(&t->flush);
        memset(&t->flush, 0, sizeof t->flush);
        return st;
    }
    t->ctx = ctx;
    return KPROF_OK;
}

/* n runs (n <= KP_CUDA_BATCH_MAX) between two CUPTI flushes. *ran: runs finished. */
static kprof_status kp_cuda_timer_batch(kp_cuda_timer *t, void (*fn)(void *), void *arg, int cold,
                                        int n, kp_bench_run *out, int *ran, kp_error *err)
{
    *ran = 0;
    pthread_mutex_lock(&t->lock);
    t->nops = 0;
    t->lost = 0;
    pthread_mutex_unlock(&t->lock);
    size_t nb = 0;
    kprof_status st = kp_cuda_timer_bound(&t->bounds[nb++], err);
    uint64_t h0 = kp_now_ns();
    for (int i = 0; i < n && st == KPROF_OK; i++) {
        memset(&out[i], 0, sizeof out[i]);
        if (cold) {
            CUresult rc = kp_cuda_l2_flush_launch(&t->flush, NULL);
            if (rc != CUDA_SUCCESS) {
                char text[200];
                kp_cuda_error_text(rc, text, sizeof text);
                return kp_error_set(err, kp_cuda_result_status(rc),
                                    "cold: launching kprof's L2 flush kernel failed: %s", text);
            }
            st = kp_cuda_timer_wait("after the L2 flush", err);
            if (st == KPROF_OK) st = kp_cuda_timer_bound(&t->bounds[nb++], err);
            if (st != KPROF_OK) return st;
        }
        uint64_t t0 = kp_now_ns();
        fn(arg);
        st = kp_cuda_timer_wait(NULL, err);
        uint64_t t1 = kp_now_ns();
        if (st == KPROF_OK) st = kp_cuda_timer_bound(&t->bounds[nb++], err);
        if (st != KPROF_OK) return st;
        out[i].wall_ns = (double)(t1 - t0);
        *ran = i + 1;
    }
    if (st != KPROF_OK) return st;
    t->run_ns = (double)(kp_now_ns() - h0) / n;
    kp_cuda_collector_flush(1);
    pthread_mutex_lock(&t->lock);
    int lost = t->lost;
    if (!lost) kp_bench_bin_ops(t->ops, t->nops, t->bounds, nb - 1, t->slots);
    pthread_mutex_unlock(&t->lock);
    if (lost) { /* the batch fails as a whole: in its last run */
        *ran = n - 1;
        return kp_error_nomem(err);
    }
    for (int i = 0; i < n; i++) {
        const kp_bench_slot *run = &t->slots[cold ? 2 * i + 1 : i];
        out[i].ops = run->ops;
        out[i].span_ns = run->ops ? (double)(run->last - run->first) : 0;
        out[i].busy_ns = (double)run->busy;
        if (cold) {
            const kp_bench_slot *flush = &t->slots[2 * i];
            out[i].flush_ns = flush->ops ? (double)(flush->last - flush->first) : 0;
        }
    }
    *ran = n;
    return KPROF_OK;
}

static kprof_status kp_cuda_timer_run_batch(void *ctx, void (*fn)(void *), void *arg, int cold,
                                            int n, kp_bench_run *out, int *ran, kp_error *err)
{
    kp_cuda_timer *t = ctx;
    kprof_status st;
    *ran = 0;
    if (cold && !t->flush.function) {
        /* The flush needs the callback's context: one untimed call makes sure there is one (its
         * records start before the first batch's first boundary: nobody's). */
        fn(arg);
        st = kp_cuda_timer_wait("after an untimed first call", err);
        if (st == KPROF_OK) st = kp_cuda_timer_flush_setup(t, err);
        if (st != KPROF_OK) return st;
    }
    for (int done = 0; done < n;) {
        /* A few ms of runs per CUPTI flush; one first, to learn how long a run takes. */
        double fit = t->run_ns > 0 ? KP_CUDA_BATCH_NS / t->run_ns : 1;
        int m = fit < 1 ? 1 : fit > KP_CUDA_BATCH_MAX ? KP_CUDA_BATCH_MAX : (int)fit;
        if (m > n - done) m = n - done;
        int got = 0;
        st = kp_cuda_timer_batch(t, fn, arg, cold, m, out + done, &got, err);
        if (st != KPROF_OK) {
            *ran = done + got;
            return st;
        }
        done += m;
        *ran = done;
    }
    if (!t->pci[0]) { /* the clock's device: the current context's, once there is one */
        CUdevice dev = 0;
        char pci[32];
        if (kp_cu.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
            kp_cu.cuDeviceGetPCIBusId(pci, sizeof pci, dev) == CUDA_SUCCESS)
            kp_strlcpy(t->pci, pci, sizeof t->pci);
    }
    return KPROF_OK;
}

static kprof_status kp_cuda_timer_run(void *ctx, void (*fn)(void *), void *arg, int cold,
                                      kp_bench_run *out, kp_error *err)
{
    int ran = 0;
    return kp_cuda_timer_run_batch(ctx, fn, arg, cold, 1, out, &ran, err);
}

static void kp_cuda_timer_clock(void *ctx, kp_clock_reading *clk)
{
    kp_cuda_timer *t = ctx;
    if (!t->pci[0]) {
        memset(clk, 0, sizeof *clk);
        kp_strlcpy(clk->why_not, "the device is not known yet (no run has finished)",
                   sizeof clk->why_not);
        return;
    }
    kp_clock_read_pci(t->pci, clk);
}

static void kp_cuda_timer_close(void *ctx)
{
    kp_cuda_timer *t = ctx;
    kp_cuda_collector_set_sink(NULL, NULL);
    kp_cuda_l2_flush_free(&t->flush);
    if (t->own) {
        kp_cuda_collector_stop();
        kp_cuda_collector_set_sink_only(0);
    }
    pthread_mutex_destroy(&t->lock);
    free(t->ops);
    free(t);
}

kprof_status kp_libkprof_cuda_timer(kp_bench_timer *timer, kp_error *err)
{
    kp_error load = {0}; /* holds no log: nothing to clear */
    if (kp_cuda_load(&load) != KPROF_OK)
        return kp_error_set(err, KPROF_UNAVAILABLE, "the CUDA driver cannot be loaded: %s",
                            load.message);
    /* The session's collector when it records CUDA, else one of our own for the benchmark. */
    const char *injected = getenv("CUDA_INJECTION64_PATH");
    if (!kp_cuda_collector_running() && injected && *injected)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "a CUDA injection holds CUPTI in this process "
                            "(CUDA_INJECTION64_PATH=%s: kprof trace, Nsight Systems or Nsight "
                            "Compute): kprof_benchmark cannot read device timestamps beside it",
                            injected);
    kp_cuda_timer *t = calloc(1, sizeof *t);
    if (!t) return kp_error_nomem(err);
    pthread_mutex_init(&t->lock, NULL);
    if (!kp_cuda_collector_running()) {
        /* Its records go to the benchmark alone, not into a session that did not ask for CUDA. */
        kp_cuda_collector_set_sink_only(1);
        kp_error start = {0}; /* holds no log: nothing to clear */
        if (kp_cuda_collector_start(&start) != KPROF_OK) {
            kp_cuda_collector_set_sink_only(0);
            pthread_mutex_destroy(&t->lock);
            free(t);
            return kp_error_set(err, KPROF_UNAVAILABLE, "%s", start.message);
        }
        t->own = 1;
    }
    kp_cuda_collector_set_sink(kp_bench_sink, t);
    *timer = (kp_bench_timer){.name = "CUDA",
                              .ctx = t,
                              .run = kp_cuda_timer_run,
                              .run_batch = kp_cuda_timer_run_batch,
                              .clock = kp_cuda_timer_clock,
                              .close = kp_cuda_timer_close};
    return KPROF_OK;
}
#endif
