/*
 * run.h — what `kprof run` and its sweep (`kprof run --sweep-tg`, `kprof sweep`) share: the
 * parsed arguments (lab_options.h parses them), the sweep's entry point (cmd_sweep.c) and a few
 * words for people (run.c). A run's numbers, and the JSON they are written in, are the lab's
 * (lab/run_result.h).
 */
#ifndef KP_TOOLS_RUN_H
#define KP_TOOLS_RUN_H

#include "base/util.h"
#include "lab/counters.h"
#include "lab/lab.h"
#include "lab/run_result.h"

#include <stdio.h>

typedef struct kp_run_args {
    kp_lab_options lab;
    kp_launch launch;
    int iters, warmup;
    int iters_set;        /* --iters given: it wins over the time budget */
    double time_budget_s; /* --time-budget: seconds of timed work (a sweep's whole); 0: none */
    int json;
    int have_bytes;
    uint64_t bytes;
    kp_str options;
    int sweep;           /* --sweep-tg, --tg-list, or `kprof sweep` */
    const char *tg_list; /* --tg-list */
    const char *plot;    /* --plot FILE.svg */
    const char *html;    /* --html FILE.html: the sweep's page */
    int force;           /* --force: --plot (and --trace) may replace an existing file */
    const char *trace;   /* --trace FILE.kprof: the run's dispatches as a trace */
    int tg_set;          /* --tg was given: in a sweep, that size is swept too and marked */
    int source;          /* --source[=N]: the N hottest source lines to print; 0 = not asked */
    int counters;        /* --counters: read hardware counters (per point in a sweep) */
    kp_counters counters_asked; /* the raw names of --counters LIST (nraw 0: the standard set) */
    int replay;                 /* the target is a captured launch (NAME@N) */
    int replay_moved;           /* ... run at a geometry of --grid/--tg/--smem, not its own */
    kp_launch replay_launch;    /* the captured geometry */
} kp_run_args;

/* The default --time-budget: seconds of dispatching a run (or a whole sweep) may take before it
 * times fewer dispatches than --iters' default. */
#define KP_RUN_TIME_BUDGET_S 15.0

/* The budget a run's or a sweep's dispatching goes by: none when --iters was given. */
double kp_run_budget(const kp_run_args *a);

/* Run the sweep the arguments describe; returns the exit code. */
int kp_run_sweep(kp_run_args *a);

/* The reflection's size limits for people: "max tg 1024 (device 1024)", "required group size 64
 * (reqd_work_group_size), device max 4096", "max tg 64 (__launch_bounds__ / .maxntid; device
 * 1024)". */
void kp_run_reflection_text(const kp_reflection *r, const kp_device_info *dev, char *buf, size_t n);

/* After KPROF_TIMEOUT: the kernel may still run, and releasing the device would wait for it,
 * maybe for ever. Report the error and leave at once; the OS reclaims everything. */
_Noreturn void kp_run_abandon(const kp_error *err);

/* A replayed capture's lines under a panel's title (run, sweep, bench): where it came from, the
 * output check's sentence (kp_lab_info.replay_text) and, when moved (the run's geometry is not
 * the captured one: --grid, --tg, --smem, or a sweep), that the check is of the captured
 * geometry only. Nothing for a session that is not a replay. */
void kp_run_replay_print(FILE *o, const kp_lab_info *info, int moved);

/* "4096", "64x32", "8x8x4". */
void kp_dims_text(const uint64_t *v, int dims, char *buf, size_t n);

/* The Counters block of a run for people (under the reflection): every standard value ("n/a
 * (not on this device)" where the device has none), the measured figures against the estimate
 * and the ceiling, the roofline, registers and spills, and the raw names asked for. Nothing when
 * the counters were not read. */
void kp_run_print_counters(FILE *o, const kp_run_result *r);

/* One line of what the counters say, for a row of a table (bench): "DRAM 1234 GB/s (85% of
 * the ceiling) · 1.00x the estimate · occupancy 87% · SM 45% · memory-bound", or
 * "unavailable: WHY". */
void kp_run_counters_line(const kp_counters *c, const kp_readings_input *in, const kp_readings *r,
                          char *buf, size_t n);

#endif
