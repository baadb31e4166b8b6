/*
 * bench_file.h — an earlier `kprof bench` result (bench.json, or what --json printed) read back
 * for `kprof bench --compare FILE`: each point's samples, by its axis values and cache state.
 * A file that is not such a result is refused as bad input (CORRUPT, exit 2), naming what is
 * wrong. Uses cJSON (the CLI's only dependency on it).
 */
#ifndef KP_TOOLS_BENCH_FILE_H
#define KP_TOOLS_BENCH_FILE_H

#include "base/error.h"
#include "lab/bench.h" /* KP_BENCH_MAX_REPEAT: the most sessions a point keeps */

#include <stddef.h>

typedef struct kp_bench_file_point {
    char point[256]; /* "N=1M T=f32", "" without axes (the JSON's "point") */
    int cold;
    double *ms;  /* the samples of the point's last kernel (B of a comparison) */
    double *mhz; /* its clock at each sample, or NULL */
    size_t n;
    size_t rounds; /* the batches they came in ("rounds"; 0 when not said) */
    double run_median[KP_BENCH_MAX_REPEAT]; /* --repeat: the sessions' medians */
    int nruns;                              /* how many ("run_medians_ms"; 0 when one session) */
    char entry[256];   /* that kernel's entry ("entry"; "" when not said): which kernel it is */
    char source[1024]; /* its source as given ("source"; "" when not said) */
} kp_bench_file_point;

typedef struct kp_bench_file {
    char device[256];
    int npoints;
    kp_bench_file_point *points;
} kp_bench_file;

kprof_status kp_bench_file_read(const char *path, kp_bench_file **out, kp_error *err);

/* The point with these axis values and cache state, or NULL. */
const kp_bench_file_point *kp_bench_file_find(const kp_bench_file *f, const char *point, int cold);

void kp_bench_file_free(kp_bench_file *f); /* NULL is fine */

#endif
