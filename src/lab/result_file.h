/*
 * result_file.h — the one owner of the lab's result files: run.json (`kprof run`), sweep.json
 * (`kprof sweep`) and bench.json (`kprof bench`), or what each printed with --json
 * (docs/formats/results.md). It writes all three (result_write.c) from the lab's own
 * structs (a run's result, a sweep, a bench session); a run's numbers, in run.json and in each
 * point of sweep.json (and of `caps --measure --json`), are kp_run_result_json's (run_result.h,
 * included here). It says which of the three a file is and checks its
 * version, and reads a bench result into C structs (each point's samples, by its axis values and
 * cache state) for `kprof bench --compare` and `kprof diff`; `kprof notes add --from` takes the
 * parsed document (analysis/notes.h). A file that is not such a result is refused as bad input
 * (CORRUPT, exit 2), naming what is wrong. Reads through base/json_file.h's strict reader.
 *
 * Versions: every file carries "version" and "kind" ("run", "sweep", "bench"), and its members
 * as well (a run's "gpu_ms_median" and "threadgroup", a sweep's "points" and "sizes_measured", a
 * bench's "points"). A run.json or sweep.json of a kprof before version 1 of theirs has neither
 * "version" nor "kind" and is told by its members alone; a file of another version is refused.
 */
#ifndef KP_LAB_RESULT_FILE_H
#define KP_LAB_RESULT_FILE_H

#include "base/error.h"
#include "base/util.h"
#include "lab/hotspots.h"
#include "lab/bench.h" /* KP_BENCH_MAX_REPEAT: the most sessions a point keeps */
#include "lab/run_result.h"
#include "lab/sweep.h"

#include <stddef.h>

/* cJSON's document, by its tag: a caller that reads one includes <cjson/cJSON.h> (or
 * base/json_file.h); one that only writes results (the CLI) needs no cJSON header. */
struct cJSON;

#define KP_RESULT_BENCH_VERSION 1 /* the bench.json version this kprof writes and reads */
#define KP_RESULT_RUN_VERSION   1 /* run.json's (a file without "version" is read as well) */
#define KP_RESULT_SWEEP_VERSION 1 /* sweep.json's (likewise) */

typedef enum kp_result_kind {
    KP_RESULT_RUN,   /* run.json */
    KP_RESULT_SWEEP, /* sweep.json */
    KP_RESULT_BENCH  /* bench.json */
} kp_result_kind;

/* Which result doc is: 1 with *kind set, 0 when it is none of the three (by the members named
 * above; a bench result needs "kind": "bench" and a "points" array) — an answer, not a failure:
 * each caller says what it expected. The version is not checked here: kp_result_check_version. */
int kp_result_kind_of(const struct cJSON *doc, kp_result_kind *kind);

/* A result of this kind whose version this kprof reads: OK, or CORRUPT naming path and the
 * version ("bench result version 2; this kprof reads version 1"). run and sweep: always OK. */
kprof_status kp_result_check_version(const struct cJSON *doc, kp_result_kind kind, const char *path,
                                     kp_error *err);

/* Read the result at path: the document into *doc (cJSON_Delete it) and its kind; CORRUPT when
 * it is not JSON, not an object, none of the three or of a version not read (the message names
 * path and what is wrong). */
kprof_status kp_result_file_read(const char *path, struct cJSON **doc, kp_result_kind *kind,
                                 kp_error *err);

/* ---- the writers ----------------------------------------------------------------------------
 * Each appends the whole file to out (as --json prints it) and fails only for memory (NOMEM,
 * "out of memory writing JSON"). */

/* What run.json says beside the run's numbers (kp_run_result_json's KP_RUN_JSON_RUN form). */
typedef struct kp_run_file {
    const kp_lab_info *info;  /* the session: the header (kp_run_json_header) and "compile" */
    const kp_run_result *run; /* the run's numbers */
    int iters_asked;          /* --iters or its default (run->iters: what the budget allowed) */
    double budget_s;          /* the time budget the run went by (0: none: null) */
    const kp_reading_line *readings; /* the readings in words ("readings") */
    int nreadings;
    const kp_buffer_digest *digests; /* the buffers read back ("buffers") */
    int ndigests;
    int source;                  /* --source was asked: "hotspots" is written */
    const kp_hotspots *hotspots; /* its sampled lines, or NULL when the sampling did not run */
    const char *source_why;      /* then why not */
} kp_run_file;

/* run.json, as `kprof run --json` prints it (no newline at the end). */
kprof_status kp_run_result_write(kp_str *out, const kp_run_file *f, kp_error *err);

/* What a bench.json says beside the session's points. */
typedef struct kp_bench_result_meta {
    const char *compare_file; /* --compare's file ("config"."compare"), or NULL */
    double fail_if_slower;    /* --fail-if-slower (a fraction): "fails_gate" per point; < 0: not
                                 asked, no "fails_gate" */
    double ceiling_gbs;       /* --counters: the measured ceiling and FP32 FLOP peak the counters */
    double peak_gflops;       /* are read against (0: none) */
} kp_bench_result_meta;

/* bench.json (KP_RESULT_BENCH_VERSION) of the session's rows (kp_bench_point has measured them;
 * with --compare, a row's have_old and old_outcome say the comparison with the earlier run),
 * ending in a newline. */
kprof_status kp_bench_result_write(kp_str *out, const kp_bench_session *s,
                                   const kp_bench_result_meta *m, kp_error *err);

/* sweep.json of the points measured (s->best and each point's tie marked: kp_sweep_mark), with
 * "complete" (0 when the sweep stopped part-way: a fault, a timeout, a signal) and "signal": the
 * signal's name ("SIGINT") when one stopped it, else NULL (null). No newline at the end. */
kprof_status kp_sweep_result_write(kp_str *out, const kp_sweep *s, int complete, const char *signal,
                                   kp_error *err);

/* Whether sweep point p's ~GB/s is above KP_READING_CEILING_TOLERANCE of the ceiling: 1 with
 * `kprof run`'s own sentence (kp_readings_describe's "above_ceiling": why it cannot be DRAM
 * traffic) in buf, as sweep.json's "above_ceiling_reason"; 0 when it is not above. */
int kp_sweep_above_ceiling(const kp_sweep_point *p, char *buf, size_t n);

/* ---- a bench result, read into structs ----------------------------------------------------- */

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

/* Read the bench result at path into *out (kp_bench_file_free it): CORRUPT when it is not one
 * (not JSON, no "kind": "bench" with "points", another version, a point without "point",
 * "cache" or "kernels", samples that are not times, a clock that does not match them). */
kprof_status kp_bench_file_read(const char *path, kp_bench_file **out, kp_error *err);

/* The point with these axis values and cache state, or NULL. */
const kp_bench_file_point *kp_bench_file_find(const kp_bench_file *f, const char *point, int cold);

void kp_bench_file_free(kp_bench_file *f); /* NULL is fine */

#endif
