/*
 * run_result.h — the result of one kernel run in the lab: one kernel at one launch geometry,
 * timed over `iters` dispatches after `warmup`, and what follows from the timings (their spread,
 * ~GB/s touched, the share of the measured ceiling, the kernel's reflection and occupancy at that
 * launch, and for `kprof run` the readings). `kprof run` reports one; each point of a sweep
 * (kp_sweep_point) and of the bandwidth ceiling (kp_ceiling_point) is one.
 *
 * A run's numbers reach JSON through kp_run_result_json alone. It writes them in one of the forms
 * kprof has always written — run.json, a point of sweep.json, a point of `caps --measure --json`
 * — whose keys are kept as they were: run_result.c lists the three side by side, number by
 * number, so a number that goes by two names (or a name that holds two numbers) shows there.
 * Nothing here prints.
 */
#ifndef KP_LAB_RUN_RESULT_H
#define KP_LAB_RUN_RESULT_H

#include "core/readings.h"
#include "core/stats.h"
#include "base/json.h"
#include "lab/counters.h"
#include "lab/lab.h"

typedef struct kp_run_result {
    kp_launch launch;   /* the geometry timed */
    int iters, warmup;  /* timed dispatches, and the untimed ones before them */
    double *samples;    /* the iters timings (ms) in dispatch order, or NULL when not kept; not
                           owned */
    kp_stats stats;     /* of the timings, ms; p90 the order statistic of stats.h */
    double p10, p90;    /* linear-interpolated 10th and 90th percentiles (ms): the spread */
    uint64_t bytes;     /* bytes per dispatch the bandwidth is figured over */
    int bytes_assumed;  /* bytes is every buffer element touched once, not --bytes */
    double gbps;        /* ~GB/s: bytes over the median dispatch (a ceiling point figures it
                           its own way: ceiling.h) */
    double ceiling_gbs; /* the device's measured bandwidth ceiling, 0 when none */
    kp_reflection refl; /* the kernel at this launch: limits, memory, occupancy */
    /* Hardware counters of one replayed dispatch at this launch (--counters; lab/counters.h),
     * or NULL when not asked for; not owned. Read with the device's measured FP32 FLOP peak
     * (GFLOP/s, 0 when none). */
    const kp_counters *counters;
    double peak_gflops;
    /* The readings (kp_run_result_read; zero where nobody asked for them). readings_in.limiter
     * points into refl: a copy of the struct must be read again before its readings are used. */
    kp_readings_input readings_in;
    kp_readings readings;
} kp_run_result;

/* Summarise samples_ms[0..n) (n >= 1) into stats, p10 and p90; scratch holds n doubles. */
void kp_run_result_time(kp_run_result *r, const double *samples_ms, size_t n, double *scratch);

/* Set bytes, whether they were assumed, the ceiling (0: none), and ~GB/s at the median (0 when
 * the median is not positive). After kp_run_result_time. */
void kp_run_result_bandwidth(kp_run_result *r, uint64_t bytes, int bytes_assumed,
                             double ceiling_gbs);

/* ~GB/s as a percentage of the ceiling; 0 without one. */
double kp_run_result_ceiling_percent(const kp_run_result *r);

/* The readings of a run on dev (core/readings.h): working_set is the buffers' total,
 * grid_bytes and grid_threads what the launch's grid touches (kp_lab_grid_bytes). After
 * kp_run_result_bandwidth and with refl filled; with counters (r->counters read), the measured
 * figures are read too (kp_counters_apply). */
void kp_run_result_read(kp_run_result *r, const kp_device_info *dev, uint64_t working_set,
                        uint64_t grid_bytes, uint64_t grid_threads);

/* The JSON a run's numbers are written in. Each form writes members into the object the caller
 * has open; the caller adds its own (run.json's header and buffers, a sweep point's best and
 * tie, a ceiling point's kernel and buffer size) around them. */
typedef enum kp_run_json_form {
    KP_RUN_JSON_RUN,           /* `kprof run --json` and run.json: from "grid" to "reflection",
                                  then "counters" when they were asked for */
    KP_RUN_JSON_SWEEP_POINT,   /* a point of `kprof sweep --json` and sweep.json ("counters"
                                  last, when asked for) */
    KP_RUN_JSON_CEILING_POINT, /* a point of `kprof caps --measure --json` */
} kp_run_json_form;

void kp_run_result_json(kp_json *j, const kp_run_result *r, kp_run_json_form form);

/* The members run.json and sweep.json open with: version, device, backend, source, entry,
 * timer. Call right after opening the top-level object. */
void kp_run_json_header(kp_json *j, const kp_lab_info *info);

/* The kernel's compile-time threadgroup rule as JSON: "threadgroup_rule": null, or {"kind":
 * "required"|"max", "size": [x, y, z], "threads": N, "from": "reqd_work_group_size"}. */
void kp_run_json_tg_rule(kp_json *j, const kp_reflection *r);

#endif
