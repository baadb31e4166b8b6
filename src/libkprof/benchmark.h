/*
 * benchmark.h — what kprof_benchmark and kprof_benchmark_compare (benchmark.c) ask of a collector:
 * a timer that runs a callback once and says what its device work took. The measuring — warm-up,
 * batches, cold flushes, the clock around every batch, the stopping rule, the comparison — is
 * kprof bench's own (lab/bench.h's kp_bench_measure_with, with a sampler made of the timer), so
 * the library and the command answer by one rule.
 *
 * Timers: CUDA (cuda.c: CUPTI's activity records of the run, the context synchronised) and
 * OpenCL (opencl.c: libkprof-inject.so's OpenCL layer, which keeps the run's commands and waits
 * for their queues).
 */
#ifndef KP_LIBKPROF_BENCHMARK_H
#define KP_LIBKPROF_BENCHMARK_H

#include "base/error.h"
#include "lab/lab.h"
#include "kprof.h"

#include <stddef.h>
#include <stdint.h>

/* What one run of the callback did on the device. */
typedef struct kp_bench_run {
    double span_ns;  /* first operation's start to the last one's end (device timestamps) */
    double busy_ns;  /* the operations' own durations summed */
    double wall_ns;  /* host time of the call and the wait after it */
    double flush_ns; /* cold: the flush before it (its device time; not in the run) */
    unsigned ops;    /* device operations (kernels, copies, fills) */
    int host_device; /* they ran on a device whose kernels run on the host's CPUs (PoCL) */
} kp_bench_run;

typedef struct kp_bench_timer {
    const char *name; /* "CUDA", "OpenCL": in messages */
    void *ctx;
    /* Run fn(arg) once and time its device work into *out; cold: flush the device's cache first
     * (a run that finds nothing to flush yet, as no device work was seen, calls fn once untimed
     * first). An error names what failed (the caller says which run). */
    kprof_status (*run)(void *ctx, void (*fn)(void *), void *arg, int cold, kp_bench_run *out,
                        kp_error *err);
    /* Optional: n runs as run makes them, one after another, into out[0..n), with the
     * collector's fixed costs shared between several (CUDA: one CUPTI flush for a few ms of
     * runs). On failure *ran says how many runs had finished before the one that failed. NULL:
     * run is called n times. */
    kprof_status (*run_batch)(void *ctx, void (*fn)(void *), void *arg, int cold, int n,
                              kp_bench_run *out, int *ran, kp_error *err);
    /* The device's SM clock now (NULL: none is read). */
    void (*clock)(void *ctx, kp_clock_reading *clk);
    /* Give back what open took. */
    void (*close)(void *ctx);
} kp_bench_timer;

/* A device operation as a timer collects it: start and end in ns on the collector's clock. */
typedef struct kp_bench_op {
    int64_t start, end;
} kp_bench_op;

/* The operations of one slot of a batch (the time between two boundaries). */
typedef struct kp_bench_slot {
    int64_t first, last; /* earliest start, latest end (ops 0: none) */
    int64_t busy;        /* durations summed */
    unsigned ops;
} kp_bench_slot;

/* Give each of ops[0..nops) to the slot whose boundaries hold its start: slot i is
 * [bounds[i], bounds[i+1]) for i < nslots, so bounds holds nslots + 1 readings in ascending
 * order (a batch: a reading before its first run, then one after each run's wait, and cold one
 * after each flush's wait too). slots[0..nslots) are zeroed first. An operation outside every
 * slot (an earlier batch's, an untimed call's) is nobody's: returns how many were. */
size_t kp_bench_bin_ops(const kp_bench_op *ops, size_t nops, const int64_t *bounds, size_t nslots,
                        kp_bench_slot *slots);

/* Open a collector's timer: UNAVAILABLE, saying why, where it cannot time here. */
kprof_status kp_libkprof_cuda_timer(kp_bench_timer *t, kp_error *err);
kprof_status kp_libkprof_opencl_timer(kp_bench_timer *t, kp_error *err);

/* For tests (SQLite's overridable calls): when set, the timer every benchmark opens, whatever
 * its collector (tests/unit/test_inproc_benchmark.c: deterministic runs and clocks). */
typedef kprof_status (*kp_bench_timer_open_fn)(unsigned collector, kp_bench_timer *t,
                                               kp_error *err);
extern kp_bench_timer_open_fn kp_bench_timer_override;

#endif
