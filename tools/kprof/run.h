/*
 * run.h — what `kprof run` and its sweep (`kprof run --sweep-tg`, `kprof sweep`) share: the
 * parsed arguments and the sweep's entry point.
 */
#ifndef KP_TOOLS_RUN_H
#define KP_TOOLS_RUN_H

#include "core/util.h"
#include "export/json.h"
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
} kp_run_args;

/* Parse `kprof run` arguments (argv[0] is the command). 0 or a usage exit code (printed). */
int kp_run_parse(int argc, char **argv, kp_run_args *a);

/* Run the sweep the arguments describe; returns the exit code. */
int kp_run_sweep(kp_run_args *a);

/* The fields run.json and sweep.json share: version, device, backend, source, entry, timer.
 * Call right after opening the top-level object. */
void kp_run_json_header(kp_json *j, const kp_lab_info *info);

/* After KPROF_TIMEOUT: the kernel may still run, and releasing the device would wait for it,
 * maybe for ever. Report the error and leave at once; the OS reclaims everything. */
_Noreturn void kp_run_abandon(const kp_error *err);

/* "4096", "64x32", "8x8x4". */
void kp_dims_text(const uint64_t *v, int dims, char *buf, size_t n);

#endif
