/*
 * diff.h — what changed between two traces, or between two results, and is it real? The
 * numbers of `kprof diff A B` (tools/kprof/cmd_diff.c prints them as text; the JSON is written
 * here, so that the command and the library give the same document).
 *
 * Two traces (*.kprof): per kernel launch shape (name and geometry: analysis/trace_aggregate.h's
 * kp_trace_shapes), copy and fill, per host API call and per NVTX range — or by name alone
 * (KP_DIFF_BY_NAME), or by call path (KP_DIFF_BY_PATH) — the count, total and median of A and
 * of B, their deltas (B - A) and ratios (B/A); what only one trace has, said so; and each trace's
 * verdict, computed by the code `kprof report` prints it with (analysis/trace_verdict.h). Device
 * rows where both traces have at least KP_DIFF_MIN_INSTANCES instances are judged by the
 * comparison engine (core/judge.h: the instances in the order they ran, across runs,
 * min_effect_ns as its minimum effect), and a FASTER or SLOWER whose total change is under
 * min_share of the device time is held back too. Host calls and ranges are listed, not judged,
 * unless judge_host: their time varies from process to process.
 *
 * Two results: two bench.json files point by point (axes and cache state; read through
 * lab/result_file.h), or two runs of kprof's history (store/history.h), each compared as
 * `kprof bench --compare` does (lab/bench.h, the same engine, unpaired).
 *
 * Failures are kprof_status + kp_error (first failure wins); nothing here prints.
 */
#ifndef KP_ANALYSIS_DIFF_H
#define KP_ANALYSIS_DIFF_H

#include "analysis/trace_aggregate.h"
#include "analysis/trace_verdict.h"
#include "base/error.h"
#include "base/util.h"
#include "core/compare.h"
#include "core/event.h"
#include "lab/bench.h"
#include "lab/result_file.h"
#include "store/event_source.h"
#include "store/history.h"

#include <stddef.h>
#include <stdint.h>

#define KP_DIFF_MIN_INSTANCES 5      /* in A and in B, for a verdict */
#define KP_DIFF_MIN_EFFECT_NS 1000.0 /* a verdict's minimum median change per instance */
#define KP_DIFF_MIN_SHARE     0.001  /* ... and its minimum total change, of the device time */
/* Two traces are two runs of a whole program: its clocks, caches and its libraries' choices vary
 * between processes more than one kernel between two bench runs (one cuDNN kernel was seen 10%
 * apart, [0.83, 0.95], between two runs of one PyTorch script on the H200): a trace row's FASTER
 * or SLOWER must clear the band by this much more (bench results keep the engine's 3%). */
#define KP_DIFF_TRACE_RUN_ALLOWANCE 0.10

/* ---- what the inputs are ------------------------------------------------------------------- */

typedef enum kp_diff_input {
    KP_DIFF_TRACE,  /* a .kprof trace (SQLite) */
    KP_DIFF_BENCH,  /* a bench.json (`kprof bench --json`) */
    KP_DIFF_HISTORY /* a run of kprof's history: @0, @-1, 17 */
} kp_diff_input;

/* Which kind of input arg is: a history reference by its form; a file by its name (.kprof,
 * .json) or else by its first bytes (SQLite's header, or JSON's opening brace). A file that is
 * neither is bad input (CORRUPT, exit 2), named; one that cannot be read NOT_FOUND/IO. */
kprof_status kp_diff_input_of(const char *arg, kp_diff_input *kind, kp_error *err);

/* "a trace", "a bench result", "a history run": for messages. */
const char *kp_diff_input_name(kp_diff_input k);

/* What trace rows are keyed by. */
typedef enum kp_diff_by {
    KP_DIFF_BY_SHAPE, /* device work by name and launch geometry, the rest by name (default) */
    KP_DIFF_BY_NAME,  /* everything by name */
    KP_DIFF_BY_PATH   /* everything by call path */
} kp_diff_by;
extern const char *const kp_diff_by_name[3]; /* "shape", "name", "path" */

/* How to compare (the options of `kprof diff`). */
typedef struct kp_diff_config {
    kp_diff_by by;         /* traces */
    int raw;               /* traces: keep polling and query calls (kprof report --raw) */
    int escape_text;       /* traces: names escaped for a terminal (text output; not for JSON) */
    int judge_host;        /* traces: host calls and ranges get verdicts too */
    double threshold;      /* the SAME band (0.01) */
    double fail_if_slower; /* fraction; < 0: not asked */
    double min_effect_ns;  /* traces: |median B - median A| under this: no FASTER/SLOWER */
    double min_share;      /* traces: |total B - total A| under this fraction of the device time */
    double run_allowance;  /* traces: FASTER/SLOWER clear of the band by this much more */
} kp_diff_config;

/* The defaults: by shape, threshold 1%, no gate, KP_DIFF_MIN_EFFECT_NS, KP_DIFF_MIN_SHARE,
 * KP_DIFF_TRACE_RUN_ALLOWANCE, text escaped. */
void kp_diff_config_default(kp_diff_config *cfg);

/* ---- what a row or point says --------------------------------------------------------------- */

/* What a row (or a point) of the diff says: X(NAME, key for --json, text for the table).
 * Compared rows first (SLOWER .. SMALL: they have a comparison), in the order the summary counts
 * them. */
#define KP_DIFF_STATUS_LIST(X)                                                                     \
    X(SLOWER, "slower", "SLOWER")                                                                  \
    X(FASTER, "faster", "FASTER")                                                                  \
    X(UNSURE, "unsure", "UNSURE")                                                                  \
    X(SAME, "same", "SAME")                                                                        \
    X(SMALL, "under-minimum", "under minimum") /* outside the band, under a minimum effect */      \
    X(TOO_FEW, "n-too-small", "n too small")   /* fewer than KP_DIFF_MIN_INSTANCES in A or B */    \
    X(NO_VERDICT, "no-verdict", "no verdict")  /* a median of 0: no ratio */                       \
    X(ONLY_A, "only-in-a", "only in A")                                                            \
    X(ONLY_B, "only-in-b", "only in B")                                                            \
    X(NOT_JUDGED, "not-judged", "not judged") /* host calls and ranges (without --judge-host) */

typedef enum kp_diff_status {
#define KP_DIFF_STATUS_ENUM_(NAME, key, text) KP_DIFF_##NAME,
    KP_DIFF_STATUS_LIST(KP_DIFF_STATUS_ENUM_)
#undef KP_DIFF_STATUS_ENUM_
        KP_DIFF_STATUS_COUNT
} kp_diff_status;

extern const char *const kp_diff_status_key[KP_DIFF_STATUS_COUNT];  /* for --json: "slower" */
extern const char *const kp_diff_status_text[KP_DIFF_STATUS_COUNT]; /* for a table: "SLOWER" */

/* The status has a comparison: a ratio with its interval (SLOWER .. SMALL). */
int kp_diff_status_compared(kp_diff_status s);

/* A change is something found: slower, faster, or there in one side only (not-judged rows are
 * none of these: they are never a change). */
int kp_diff_status_is_change(kp_diff_status s);

/* The changes among the counts of each status. */
size_t kp_diff_changes(const size_t counts[KP_DIFF_STATUS_COUNT]);

/* ---- two traces ---------------------------------------------------------------------------- */

/* The tables, in the order they are shown. */
enum { KP_DIFF_DEVICE, KP_DIFF_HOST, KP_DIFF_RANGES, KP_DIFF_TABLES };

/* One row of one trace: a (kind, name), (kind, launch shape) or (kind, call path) and its
 * instances. */
typedef struct kp_diff_key {
    int table;
    kp_event_kind kind;
    char *name;           /* the name, a shape's label "gemm  grid 65536 tg 256 smem 0", or the path
                             "step/cudaLaunchKernel/gemm" (heap): the row's key */
    char *base;           /* a shape's kernel name (heap); NULL when name is the name itself */
    kp_trace_shape shape; /* a shape's geometry (its label NULL here); known 0 when no shape */
    int64_t total_ns;     /* durations summed (the report's total time) */
    double *ns;           /* every instance's duration, in the order they ran (heap) */
    double *sorted;       /* the same, ascending (heap) */
    size_t n;             /* instances (the report's calls) */
    uint32_t node;        /* while loading: the aggregation's node it comes from */
} kp_diff_key;

typedef struct kp_diff_trace {
    const char *path;
    kp_event_source *src;
    kp_trace_verdicts v; /* as kprof report computes them */
    uint64_t events;
    uint64_t ends_before_start; /* events whose end precedes their start: duration 0 */
    int64_t gpu_busy_ns;        /* the devices' busy time (the union of device operations) */
    kp_diff_key *keys;          /* sorted by (table, kind, name) */
    size_t nkeys;
} kp_diff_trace;

typedef struct kp_diff_row {
    int table;
    kp_event_kind kind;
    const char *name;
    const kp_diff_key *a, *b; /* NULL: not in that trace */
    int64_t delta_ns;         /* total B - total A (an absent side counts 0) */
    kp_diff_status status;
    int judged;        /* it is a row that gets a verdict (device work; host with --judge-host) */
    kp_estimate ratio; /* compared: median(B) / median(A) and its 95% interval (core/judge.h) */
    kp_compare_verdict interval_verdict; /* compared: what the interval alone says */
    unsigned reasons; /* compared: why it is UNSURE or SMALL (KP_JUDGE_* bits; 0: none) */
    unsigned small;   /* compared: KP_DIFF_SMALL_* bits: which minimum the change is under */
    double share;     /* compared: |delta_ns| over the device time (0 when there is none) */
    char reason[480]; /* compared, UNSURE or SMALL: why, in words ("" otherwise) */
    int gate;         /* --fail-if-slower: slower by more than asked */
} kp_diff_row;

enum {
    KP_DIFF_SMALL_EFFECT = 1u << 0, /* |median B - median A| < --min-effect-us */
    KP_DIFF_SMALL_SHARE = 1u << 1   /* |total B - total A| < --min-share of the device time */
};

typedef struct kp_diff_traces {
    kp_diff_trace t[2];
    int64_t device_ns; /* the larger device busy time of the two: --min-share's base */
    kp_diff_row *rows; /* table by table, each by |delta| descending */
    size_t nrows;
    size_t counts[KP_DIFF_STATUS_COUNT];
    int gate; /* some row failed --fail-if-slower */
} kp_diff_traces;

/* Open both traces (paths[0] A, paths[1] B), read their rows (every node of each one's
 * aggregation with instances, merged by (table, kind, name, shape or path), with every
 * instance's duration in the order they ran) and verdicts, match the rows, judge them and sort
 * them for showing (table by table, the largest |delta| first). *d is zeroed first;
 * kp_diff_traces_free it whatever this returns. */
kprof_status kp_diff_traces_load(kp_diff_traces *d, const char *const paths[2],
                                 const kp_diff_config *cfg, kp_error *err);

void kp_diff_traces_free(kp_diff_traces *d);

/* A row side's median duration (ns; 0 for none). */
double kp_diff_median_ns(const kp_diff_key *k);

/* Why a compared row got no FASTER or SLOWER, in words (the engine's, core/judge.h): "" when it
 * did, or was SAME. */
const char *kp_diff_row_reason(const kp_diff_row *row);

/* The diff as `kprof diff --json` writes it ("kind": "trace-diff", version 1), appended to out
 * with a closing newline (out->failed when out of memory). */
void kp_diff_traces_json(kp_str *out, const kp_diff_traces *d, const kp_diff_config *cfg);

/* ---- two results --------------------------------------------------------------------------- */

/* One input of a result diff: a bench.json, or a history run (its samples as one point). */
typedef struct kp_diff_result {
    const char *arg;
    kp_bench_file *file; /* a bench.json */
    int history;         /* a history run: run, samples */
    kp_history_run run;
    double *samples; /* ms, heap */
    size_t nsamples;
} kp_diff_result;

/* One point of a result diff: its samples in A and in B, and their comparison. */
typedef struct kp_diff_point {
    char point[256]; /* the axes ("N=1M T=f32"; "" without), or a history run's kernel */
    int cold;
    int has[2];            /* the side has the point */
    kp_bench_side side[2]; /* summarised where present */
    kp_diff_status status;
    kp_bench_outcome outcome; /* status SLOWER..SAME: the comparison */
    int gate;
} kp_diff_point;

typedef struct kp_diff_results {
    kp_diff_result r[2];
    kp_diff_point *points;
    int npoints;
    size_t counts[KP_DIFF_STATUS_COUNT];
    int gate;
    char different[1400]; /* "A is reduce_sum (src hash ...), B is slow (...)"; "" when A and B
                             are results of one kernel */
} kp_diff_results;

/* Read both results: args[0] A, args[1] B; history: history runs (kp_history_get; INVALID for
 * one without samples), else bench.json files (kp_bench_file_read). *d is zeroed first;
 * kp_diff_results_free it whatever this returns. */
kprof_status kp_diff_results_load(kp_diff_results *d, const char *const args[2], int history,
                                  kp_error *err);

/* Whether A and B are results of different kernels, said into d->different: two history runs
 * whose kernels (entries) differ, or two bench results with a point in both whose kernels
 * differ. The kernel is its entry's name: one entry whose source changed (another hash, another
 * file) is the same kernel changed, which is what a diff is for. An entry not recorded (an
 * older bench.json) differs from nothing. */
void kp_diff_results_kernels(kp_diff_results *d);

/* Match the points (A's in A's order, then those only B has; a history run is one point) and
 * judge each present in both as kprof bench --compare does (unpaired); counts and gate. */
kprof_status kp_diff_results_compute(kp_diff_results *d, const kp_diff_config *cfg, kp_error *err);

void kp_diff_results_free(kp_diff_results *d);

/* The device a result was measured on ("" when not said). */
const char *kp_diff_result_device(const kp_diff_result *r);

/* A field two history runs differ in: its name and the two values. */
typedef struct kp_diff_run_field {
    const char *key;
    const char *a, *b;
} kp_diff_run_field;
#define KP_DIFF_RUN_FIELDS 16 /* the most kp_diff_run_fields gives */

/* The fields a and b differ in (kind, device, ..., git_commit, git_dirty) into out; how many. */
int kp_diff_run_fields(const kp_history_run *a, const kp_history_run *b, kp_diff_run_field *out);

/* The diff as `kprof diff --json` writes it ("kind": "result-diff", version 1), appended to out
 * with a closing newline. */
void kp_diff_results_json(kp_str *out, const kp_diff_results *d, const kp_diff_config *cfg);

#endif
