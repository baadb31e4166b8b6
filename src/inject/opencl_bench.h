/*
 * opencl_bench.h — libkprof's kprof_benchmark of OpenCL work, inside the OpenCL layer
 * (opencl_bench.c; exported by opencl_layer.c as kprof_inject_opencl_bench_*, which libkprof
 * finds with dlsym). While a benchmark's run is open, every device operation a wrapper enqueues
 * — on any queue, whether a session records or not — hands its event here too; ending the run
 * waits for those events and reads their commands' start and end. The flush of a cold run
 * writes a buffer twice the device's last-level cache on the queue the last run used.
 *
 * libkprof includes this header for the struct and the exports' types alone.
 */
#ifndef KP_INJECT_OPENCL_BENCH_H
#define KP_INJECT_OPENCL_BENCH_H

#include <stdint.h>

/* One run's device work. */
typedef struct kp_cl_bench_times {
    uint64_t first, last; /* earliest command start, latest end (device clock, ns) */
    uint64_t busy;        /* the commands' own durations summed, ns */
    unsigned ops;         /* commands enqueued in the run */
    int host_device;      /* the last queue's device is a CPU (its kernels run on the host) */
} kp_cl_bench_times;

/* The exports (opencl_layer.c). begin: 0, or -1 when the layer is not in the loader's chain.
 * end: CL_SUCCESS (0) with *out filled, or the OpenCL error of a wait or of a command that
 * failed. flush: CL_SUCCESS with the flush's device time and size, 1 when no run has shown a
 * queue yet, or an OpenCL error. close: releases the flush's buffer and the queue kept. */
typedef int (*kp_cl_bench_begin_fn)(void);
typedef int (*kp_cl_bench_end_fn)(kp_cl_bench_times *out);
typedef int (*kp_cl_bench_flush_fn)(uint64_t *ns, uint64_t *bytes);
typedef void (*kp_cl_bench_close_fn)(void);

/* The layer's side (opencl_bench.c). */
int kp_cl_bench_open(void); /* 1 while a run is open: one relaxed load */
void kp_cl_bench_add(void *event, int take_reference);
void kp_cl_bench_begin(void);
int kp_cl_bench_end(kp_cl_bench_times *out);
int kp_cl_bench_flush(uint64_t *ns, uint64_t *bytes);
void kp_cl_bench_close(void);

#endif
