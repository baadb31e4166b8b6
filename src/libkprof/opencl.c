/*
 * opencl.c — the in-process OpenCL collector of a libkprof session (KPROF_COLLECT_OPENCL).
 *
 * OpenCL calls are reached the way `kprof trace` reaches them: through libkprof-inject.so as an
 * OpenCL layer (the ICD loader's OPENCL_LAYERS), which records the program's calls and its
 * kernels, copies and fills with their device times. libkprof cannot be the layer itself (it
 * exports kprof_* alone), so kprof_start puts the inject library into OPENCL_LAYERS with the
 * session's folder in KPROF_TRACE_DIR, and the loader takes the layer in at the program's first
 * OpenCL call; its records go into the session's folder beside the scopes', and the merge makes
 * one process of both (kp_trace_run.one_process). kprof_stop ends the layer's file through
 * kprof_inject_opencl_stop, and the next session restarts it in its own folder through
 * kprof_inject_opencl_start (the layer stays in the loader's chain).
 *
 * kprof_benchmark's OpenCL timer (at the end) times a callback's runs through the same layer.
 *
 * So a program must start its first session before its first OpenCL call (or run under
 * KPROF=1, which starts one at load): the loader reads OPENCL_LAYERS once. A session that asked
 * for OpenCL and saw none says so in its trace's notes. Under `kprof trace`, whose collector
 * already records OpenCL, the in-process one stands aside and says why.
 */
#define _GNU_SOURCE
#include "collect/writer.h"
#include "base/env.h"
#include "base/util.h"
#include "inject/opencl_bench.h"
#include "runtime/cl_api.h"
#include "libkprof/benchmark.h"
#include "libkprof/collectors.h"
#include "libkprof/libkprof_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    int armed;          /* OPENCL_LAYERS and KPROF_TRACE_DIR set by a session of ours */
    char dir[PATH_MAX]; /* the folder KPROF_TRACE_DIR names for the running session */
    char library[PATH_MAX];
} kp_cl_session;

/* libkprof-inject.so: $KPROF_INJECT_LIBRARY, else beside libkprof (build tree and installed
 * libdir alike). 0, or -1 when there is none. */
int kp_libkprof_inject_library(char *out)
{
    const char *env = getenv(KP_ENV_INJECT_LIBRARY);
    if (env && *env) return realpath(env, out) ? 0 : -1;
    Dl_info info;
    if (!dladdr((void *)kp_libkprof_inject_library, &info) || !info.dli_fname) return -1;
    char here[PATH_MAX];
    snprintf(here, sizeof here, "%s", info.dli_fname);
    char *slash = strrchr(here, '/');
    if (!slash) return -1;
    *slash = '\0';
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/libkprof-inject.so", here);
    return kp_path_exists(path) && realpath(path, out) ? 0 : -1;
}

const char *kp_libkprof_opencl_unavailable(void)
{
    if (kp_libkprof_inject_library(kp_cl_session.library) == 0) return NULL;
    return "libkprof-inject.so (the OpenCL layer) is not beside libkprof: set "
           "KPROF_INJECT_LIBRARY to its path";
}

/* The inject library, when something (a session of ours, or `kprof trace`) loaded it. */
static void *kp_cl_loaded(void)
{
    return kp_cl_session.library[0] ? dlopen(kp_cl_session.library, RTLD_LAZY | RTLD_NOLOAD) : NULL;
}

kprof_status kp_libkprof_opencl_start(kp_session *s, kp_error *err)
{
    if (kp_libkprof_inject_library(kp_cl_session.library) != 0)
        return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_libkprof_opencl_unavailable());
    const char *trace_dir = getenv(KP_ENV_TRACE_DIR);
    if (trace_dir && *trace_dir &&
        !(kp_cl_session.armed && strcmp(trace_dir, kp_cl_session.dir) == 0))
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "kprof trace records this process's OpenCL work already (%s=%s): "
                            "kprof's in-process OpenCL collection is off (start the session "
                            "without KPROF_COLLECT_OPENCL to record the scopes)",
                            KP_ENV_TRACE_DIR, trace_dir);
    void *h = kp_cl_loaded();
    if (h) { /* the layer is in the loader's chain since an earlier session */
        int (*start)(const char *) = (int (*)(const char *))dlsym(h, "kprof_inject_opencl_start");
        int rc = start ? start(s->dir) : -1;
        dlclose(h);
        if (rc != 0)
            return kp_error_set(err, KPROF_UNAVAILABLE,
                                "the OpenCL layer (%s) is loaded but not in the loader's chain: "
                                "kprof's in-process OpenCL collection is off",
                                kp_cl_session.library);
    } else {
        /* Not thread-safe (setenv): kprof_start says to call it before other threads read the
         * environment. The loader reads these at the program's first OpenCL call. */
        const char *layers = getenv("OPENCL_LAYERS");
        if (!layers || !strstr(layers, kp_cl_session.library)) {
            kp_str v = {0};
            kp_str_printf(&v, "%s%s%s", layers && *layers ? layers : "",
                          layers && *layers ? ":" : "", kp_cl_session.library);
            if (v.failed) {
                kp_str_free(&v);
                return kp_error_nomem(err);
            }
            setenv("OPENCL_LAYERS", v.data, 1);
            kp_str_free(&v);
        }
    }
    setenv(KP_ENV_TRACE_DIR, s->dir, 1);
    snprintf(kp_cl_session.dir, sizeof kp_cl_session.dir, "%s", s->dir);
    kp_cl_session.armed = 1;
    return KPROF_OK;
}

void kp_libkprof_opencl_stop(kp_session *s)
{
    (void)s;
    void *h = kp_cl_loaded();
    int recorded = 0;
    if (h) {
        int (*stop)(void) = (int (*)(void))dlsym(h, "kprof_inject_opencl_stop");
        recorded = stop ? stop() : 0;
        dlclose(h);
    }
    if (!recorded)
        kp_writer_note("the OpenCL collector recorded nothing: the program made no OpenCL call "
                       "after kprof_start, its OpenCL had started before the first session (the "
                       "loader takes kprof's layer in at the first OpenCL call: start the session "
                       "before it, or use KPROF=1), or its OpenCL loader has no layer support "
                       "(OPENCL_LAYERS; an ICD loader older than ocl-icd 2.3): `kprof trace` "
                       "records OpenCL there");
    /* The next session sets its own folder; until then the layer writes nothing. */
    unsetenv(KP_ENV_TRACE_DIR);
    kp_cl_session.armed = 0;
    kp_cl_session.dir[0] = '\0';
}

/* ---- kprof_benchmark's OpenCL timer (benchmark.h) ------------------------------------------
 *
 * The layer keeps each run's events (inject/opencl_bench.h): libkprof opens a run, calls the
 * callback, and ends the run, which waits for the run's commands and gives their times. That
 * needs the layer in the loader's chain — a session that asked for OpenCL started before the
 * program's first OpenCL call, or KPROF=1 with KPROF_COLLECT=opencl — and says so when not.
 */

typedef struct kp_cl_timer {
    void *lib; /* libkprof-inject.so, as the loader took it in */
    kp_cl_bench_begin_fn begin;
    kp_cl_bench_end_fn end;
    kp_cl_bench_flush_fn flush;
    kp_cl_bench_close_fn close;
} kp_cl_timer;

static const char kp_cl_not_in_chain[] =
    "the program's OpenCL does not go through kprof's OpenCL layer, so its work cannot be timed: "
    "the ICD loader takes the layer (libkprof-inject.so) in at the program's first OpenCL call "
    "only when a session with KPROF_COLLECT_OPENCL was started before it (kprof_start; "
    "kprof.profile(opencl=True) in Python) or the program runs with KPROF=1 "
    "KPROF_COLLECT=opencl";

static kprof_status kp_cl_timer_end(kp_cl_timer *t, kp_cl_bench_times *times, const char *what,
                                    kp_error *err)
{
    int rc = t->end(times);
    if (rc == CL_PROFILING_INFO_NOT_AVAILABLE)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "%s: a command's queue has no profiling (the device refused "
                            "CL_QUEUE_PROFILING_ENABLE when the queue was made): its times "
                            "cannot be read",
                            what);
    if (rc != 0)
        return kp_error_set(err, KPROF_BACKEND, "%s: the OpenCL work failed (%s)", what,
                            kp_cl_error_name(rc));
    return KPROF_OK;
}

static kprof_status kp_cl_timer_run(void *ctx, void (*fn)(void *), void *arg, int cold,
                                    kp_bench_run *out, kp_error *err)
{
    kp_cl_timer *t = ctx;
    kp_cl_bench_times times;
    memset(out, 0, sizeof *out);
    if (cold) {
        uint64_t ns = 0, bytes = 0;
        int rc = t->flush(&ns, &bytes);
        if (rc == 1) { /* no queue seen yet: one untimed call shows it */
            if (t->begin() != 0) return kp_error_set(err, KPROF_UNAVAILABLE, kp_cl_not_in_chain);
            fn(arg);
            kprof_status st = kp_cl_timer_end(t, &times, "an untimed first call", err);
            if (st != KPROF_OK) return st;
            if (times.ops == 0)
                return kp_error_set(err, KPROF_INVALID,
                                    "an untimed first call launched no OpenCL work that kprof's "
                                    "layer saw: nothing to flush the cache of");
            rc = t->flush(&ns, &bytes);
        }
        if (rc != 0)
            return kp_error_set(err, KPROF_BACKEND,
                                "cold: the cache flush (a buffer write on the run's queue) failed "
                                "(%s)",
                                kp_cl_error_name(rc));
        out->flush_ns = (double)ns;
    }
    if (t->begin() != 0) return kp_error_set(err, KPROF_UNAVAILABLE, kp_cl_not_in_chain);
    uint64_t t0 = kp_now_ns();
    fn(arg);
    kprof_status st = kp_cl_timer_end(t, &times, "the run", err);
    uint64_t t1 = kp_now_ns();
    if (st != KPROF_OK) return st;
    out->ops = times.ops;
    out->host_device = times.host_device;
    out->span_ns = (double)(times.last - times.first);
    out->busy_ns = (double)times.busy;
    out->wall_ns = (double)(t1 - t0);
    return KPROF_OK;
}

static void kp_cl_timer_close(void *ctx)
{
    kp_cl_timer *t = ctx;
    t->close();
    dlclose(t->lib);
    free(t);
}

kprof_status kp_libkprof_opencl_timer(kp_bench_timer *timer, kp_error *err)
{
    const char *why = kp_libkprof_opencl_unavailable();
    if (why) return kp_error_set(err, KPROF_UNAVAILABLE, "%s", why);
    void *h = kp_cl_loaded();
    if (!h) return kp_error_set(err, KPROF_UNAVAILABLE, kp_cl_not_in_chain);
    kp_cl_timer *t = calloc(1, sizeof *t);
    if (!t) {
        dlclose(h);
        return kp_error_nomem(err);
    }
    t->lib = h;
    /* dlsym gives data pointers; the exports are functions (POSIX makes the cast good). */
    void *b = dlsym(h, "kprof_inject_opencl_bench_begin"),
         *e = dlsym(h, "kprof_inject_opencl_bench_end"),
         *f = dlsym(h, "kprof_inject_opencl_bench_flush"),
         *c = dlsym(h, "kprof_inject_opencl_bench_close");
    memcpy(&t->begin, &b, sizeof b);
    memcpy(&t->end, &e, sizeof e);
    memcpy(&t->flush, &f, sizeof f);
    memcpy(&t->close, &c, sizeof c);
    if (!t->begin || !t->end || !t->flush || !t->close) {
        dlclose(h);
        free(t);
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "the OpenCL layer (%s) has no benchmark entry points: it is older "
                            "than this libkprof",
                            kp_cl_session.library);
    }
    /* In the chain? An empty run says (and is dropped). */
    kp_cl_bench_times times;
    if (t->begin() != 0) {
        dlclose(h);
        free(t);
        return kp_error_set(err, KPROF_UNAVAILABLE, kp_cl_not_in_chain);
    }
    t->end(&times);
    *timer = (kp_bench_timer){
        .name = "OpenCL", .ctx = t, .run = kp_cl_timer_run, .close = kp_cl_timer_close};
    return KPROF_OK;
}
