/*
 * run.h — what `kprof run` and its sweep (`kprof run --sweep-tg`, `kprof sweep`) share: the
 * parsed arguments, the sweep's entry point and a few words for people. A run's numbers, and
 * the JSON they are written in, are the lab's (lab/run_result.h).
 */
#ifndef KP_TOOLS_RUN_H
#define KP_TOOLS_RUN_H

#include "core/util.h"
#include "lab/lab.h"

typedef struct kp_run_args {
    kp_lab_options lab;
    kp_launch launch;
    int iters, warmup;
    int json;
    int have_bytes;
    uint64_t bytes;
    kp_str options;
    int sweep;           /* --sweep-tg, --tg-list, or `kprof sweep` */
    const char *tg_list; /* --tg-list */
    const char *plot;    /* --plot FILE.svg */
    int force;           /* --force: --plot may replace an existing file */
    int tg_set;          /* --tg was given: in a sweep, that size is swept too and marked */
    int source;          /* --source[=N]: the N hottest source lines to print; 0 = not asked */
} kp_run_args;

/* Parse `kprof run` arguments (argv[0] is the command). 0 or a usage exit code (printed). */
int kp_run_parse(int argc, char **argv, kp_run_args *a);

/* Run the sweep the arguments describe; returns the exit code. */
int kp_run_sweep(kp_run_args *a);

/* The reflection's size limits for people: "max tg 1024 (device 1024)", "required group size 64
 * (reqd_work_group_size), device max 4096", "max tg 64 (__launch_bounds__ / .maxntid; device
 * 1024)". */
void kp_run_reflection_text(const kp_reflection *r, const kp_device_info *dev, char *buf, size_t n);

/* After KPROF_TIMEOUT: the kernel may still run, and releasing the device would wait for it,
 * maybe for ever. Report the error and leave at once; the OS reclaims everything. */
_Noreturn void kp_run_abandon(const kp_error *err);

/* "4096", "64x32", "8x8x4". */
void kp_dims_text(const uint64_t *v, int dims, char *buf, size_t n);

#endif
