/*
 * cmd_diff.c — `kprof diff A B`: what changed between two runs, and is it real?
 *
 * Two traces (*.kprof): per kernel launch shape (name and geometry: analysis/trace_aggregate.h's
 * kp_trace_shapes), copy and fill, per host API call and per NVTX range — or by name alone
 * (--by name), or by call path (--by path) — the count, total and median of A and of B, their
 * deltas (B - A) and ratios (B/A), the largest change of total time first; what only one trace
 * has, said so; and each trace's verdict, computed by the code `kprof report` prints it with
 * (analysis/trace_verdict.h), and whether it changed. Device rows where both traces have at least
 * KP_DIFF_MIN_INSTANCES instances are judged by the comparison engine (core/judge.h: the
 * instances in the order they ran, across runs, --min-effect-us as its minimum effect), and a
 * FASTER or SLOWER whose total change is under --min-share of the device time is held back
 * too. Host calls and ranges are listed, not judged, unless --judge-host: their time varies
 * from process to process. With fewer instances the deltas alone: "n too small".
 *
 * Two results: two bench.json files point by point (axes and cache state), or two runs of
 * kprof's history (@0 the newest, @-1 the one before, or an id), each compared as
 * `kprof bench --compare` does (lab/bench.h, the same engine, unpaired). Results of different
 * kernels (entry names) are refused unless --force.
 *
 * Analysis first, prose after (STYLE.md): kp_diff_traces and kp_diff_results compute every row
 * and verdict; the text and JSON writers and --fail-if-slower read those numbers only.
 */
#include "core/compare.h"
#include "core/event.h"
#include "core/format.h"
#include "core/judge.h"
#include "core/stats.h"
#include "base/util.h"
#include "base/json.h"
#include "export/text.h"
#include "lab/bench.h"
#include "store/event_source.h"
#include "analysis/trace_aggregate.h"
#include "analysis/trace_verdict.h"
#include "tools/kprof/bench_file.h"
#include "tools/kprof/cli.h"
#include "store/history.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_DIFF_MIN_INSTANCES 5 /* in A and in B, for a verdict */
/* ---- what the inputs are ------------------------------------------------------------------- */

typedef enum kp_diff_input {
    KP_DIFF_TRACE,  /* a .kprof trace (SQLite) */
    KP_DIFF_BENCH,  /* a bench.json (`kprof bench --json`) */
    KP_DIFF_HISTORY /* a run of kprof's history: @0, @-1, 17 */
} kp_diff_input;

/* What trace rows are keyed by (--by). */
typedef enum kp_diff_by {
    KP_DIFF_BY_SHAPE, /* device work by name and launch geometry, the rest by name (default) */
    KP_DIFF_BY_NAME,  /* everything by name */
    KP_DIFF_BY_PATH   /* everything by call path */
} kp_diff_by;
static const char *const kp_diff_by_name[] = {"shape", "name", "path"};

#define KP_DIFF_MIN_EFFECT_NS 1000.0 /* a verdict's minimum median change per instance */
#define KP_DIFF_MIN_SHARE     0.001  /* ... and its minimum total change, of the device time */
/* Two traces are two runs of a whole program: its clocks, caches and its libraries' choices vary
 * between processes more than one kernel between two bench runs (one cuDNN kernel was seen 10%
 * apart, [0.83, 0.95], between two runs of one PyTorch script on the H200): a trace row's FASTER
 * or SLOWER must clear the band by this much more (bench results keep the engine's 3%). */
#define KP_DIFF_TRACE_RUN_ALLOWANCE 0.10

typedef struct kp_diff_args {
    const char *in[2];
    kp_diff_input kind[2];
    kp_diff_by by;
    int by_given, raw, json;
    int judge_host;        /* --judge-host: host calls and ranges get verdicts too */
    int force;             /* --force: compare results of different kernels */
    int min_given;         /* --min-effect-us or --min-share was given */
    size_t top;            /* text: rows shown per table (0: all) */
    double threshold;      /* the SAME band (0.01) */
    double fail_if_slower; /* fraction; < 0: not asked */
    double min_effect_ns;  /* |median B - median A| under this: no FASTER/SLOWER */
    double min_share;      /* |total B - total A| under this fraction of the device time: none */
    double run_allowance;  /* traces: FASTER/SLOWER clear of the band by this much more */
} kp_diff_args;

/* @0, @-1 (@ then an optional minus and digits) or digits alone: a reference into the history. */
static int kp_diff_is_history_ref(const char *arg)
{
    int64_t id, back;
    return kp_history_parse_ref(arg, &id, &back) == 0;
}

/* Which kind of input arg is: a history reference by its form; a file by its name (.kprof,
 * .json) or else by its first bytes (SQLite's header, or JSON's opening brace). A file that is
 * neither is bad input (CORRUPT, exit 2), named. */
static kprof_status kp_diff_input_kind(const char *arg, kp_diff_input *kind, kp_error *err)
{
    if (kp_diff_is_history_ref(arg)) {
        *kind = KP_DIFF_HISTORY;
        return KPROF_OK;
    }
    kprof_status st = kp_input_check(arg, "a trace or a bench result", err);
    if (st != KPROF_OK) return st;
    const char *ext = kp_path_extension(arg);
    if (strcmp(ext, "kprof") == 0) {
        *kind = KP_DIFF_TRACE;
        return KPROF_OK;
    }
    if (strcmp(ext, "json") == 0) {
        *kind = KP_DIFF_BENCH;
        return KPROF_OK;
    }
    unsigned char head[64];
    size_t got = 0;
    FILE *f = fopen(arg, "rb");
    if (!f) return kp_error_set(err, KPROF_IO, "%s: cannot open", arg);
    got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got >= 16 && memcmp(head, "SQLite format 3", 16) == 0) {
        *kind = KP_DIFF_TRACE;
        return KPROF_OK;
    }
    size_t i = 0;
    if (got >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0) i = 3; /* a UTF-8 byte-order mark */
    while (i < got && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r'))
        i++;
    if (i < got && head[i] == '{') {
        *kind = KP_DIFF_BENCH;
        return KPROF_OK;
    }
    return kp_error_set(err, KPROF_CORRUPT,
                        "%s is neither a kprof trace (an SQLite file, .kprof) nor a `kprof bench` "
                        "result (JSON with \"kind\": \"bench\")",
                        arg);
}

static const char *kp_diff_input_name(kp_diff_input k)
{
    switch (k) {
    case KP_DIFF_TRACE:
        return "a trace";
    case KP_DIFF_BENCH:
        return "a bench result";
    case KP_DIFF_HISTORY:
        return "a history run";
    }
    return "?";
}

/* ---- two traces: the numbers ------------------------------------------------------------- */

/* The tables, in the order they are shown. */
enum { KP_DIFF_DEVICE, KP_DIFF_HOST, KP_DIFF_RANGES, KP_DIFF_TABLES };
static const char *const kp_diff_table_key[KP_DIFF_TABLES] = {"device", "host", "ranges"};

static int kp_diff_table_of(kp_event_kind kind)
{
    switch (kind) {
    case KP_EVENT_KERNEL:
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET:
        return KP_DIFF_DEVICE;
    case KP_EVENT_API:
        return KP_DIFF_HOST;
    case KP_EVENT_RANGE:
        return KP_DIFF_RANGES;
    default:
        return -1;
    }
}

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

static void kp_diff_trace_free(kp_diff_trace *t)
{
    for (size_t i = 0; i < t->nkeys; i++) {
        free(t->keys[i].name);
        free(t->keys[i].base);
        free(t->keys[i].ns);
        free(t->keys[i].sorted);
    }
    free(t->keys);
    kp_trace_verdicts_free(&t->v); /* before the source: it borrows its names */
    kp_event_source_close(t->src);
    memset(t, 0, sizeof *t);
}

static int kp_diff_key_cmp(const void *x, const void *y)
{
    const kp_diff_key *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* A node's row name: its label by name (a shape's label by shape), its path by path. Heap, or
 * NULL when out of memory. */
static char *kp_diff_node_name(const kp_aggregation *agg, uint32_t id, kp_diff_by by)
{
    if (by != KP_DIFF_BY_PATH) {
        char buf[32];
        const char *label = kp_aggregation_name(agg, id, buf, sizeof buf);
        return strdup(label);
    }
    kp_str path = {0};
    kp_aggregation_path(agg, id, &path);
    if (path.failed) {
        kp_str_free(&path);
        return NULL;
    }
    return kp_str_take(&path);
}

/* An instance of a row while loading: where it ran among the trace's instances, and how long. */
typedef struct kp_diff_instance {
    uint64_t seq;
    double ns;
} kp_diff_instance;

static int kp_diff_instance_cmp(const void *x, const void *y)
{
    const kp_diff_instance *a = x, *b = y;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Open a trace and read its rows (every node of its aggregation with instances, merged by
 * (table, kind, name, shape or path), with every instance's duration in the order they ran)
 * and its verdicts. */
static kprof_status kp_diff_trace_load(kp_diff_trace *t, const kp_diff_args *a, kp_error *err)
{
    kp_aggregation *agg = NULL;
    kp_trace_instances inst = {0};
    kp_trace_shapes shapes = {0};
    kp_diff_key *nodes = NULL; /* one per node, before merging */
    kp_diff_instance *run = NULL;
    size_t nnodes = 0;
    kprof_status st = kp_event_source_open(t->path, &t->src, err);
    if (st == KPROF_OK && !a->json) st = kp_event_source_escape_text(t->src, err); /* tables */
    if (st == KPROF_OK)
        st = kp_trace_aggregate_instances(t->src, a->raw ? KP_TRACE_AGGREGATE_POLLING : 0,
                                          a->by == KP_DIFF_BY_SHAPE ? &shapes : NULL, &agg, &inst,
                                          err);
    if (st == KPROF_OK) st = kp_trace_verdicts_read(t->src, a->raw, &t->v, err);
    if (st != KPROF_OK) goto done;
    t->events = kp_aggregation_get_totals(agg)->events;
    t->ends_before_start = kp_aggregation_get_totals(agg)->ends_before_start;
    t->gpu_busy_ns = kp_aggregation_get_totals(agg)->gpu_busy_ns;
    size_t count = kp_aggregation_node_count(agg);
    nodes = calloc(count ? count : 1, sizeof *nodes);
    if (!nodes) goto nomem;
    for (uint32_t id = 1; id < count; id++) {
        const kp_aggregation_node *node = kp_aggregation_get_node(agg, id);
        int table = kp_diff_table_of(node->kind);
        if (table < 0 || id >= inst.nnodes || inst.n[id] == 0) continue;
        kp_diff_key *k = &nodes[nnodes];
        k->table = table;
        k->kind = node->kind;
        k->total_ns = node->stats.duration_ns;
        k->n = inst.n[id];
        k->name = kp_diff_node_name(agg, id, a->by);
        if (!k->name) goto nomem;
        k->node = id;
        nnodes++;
        const kp_trace_shape *shape = kp_trace_shape_of(&shapes, node->name);
        if (shape) {
            const char *base = kp_event_source_string(t->src, shape->name, NULL);
            k->shape = *shape;
            k->shape.label = NULL;
            k->base = strdup(base ? base : "");
            if (!k->base) goto nomem;
        }
    }
    qsort(nodes, nnodes, sizeof *nodes, kp_diff_key_cmp);
    t->keys = calloc(nnodes ? nnodes : 1, sizeof *t->keys);
    if (!t->keys) goto nomem;
    for (size_t i = 0; i < nnodes;) {
        size_t j = i, n = 0;
        int64_t total = 0;
        for (; j < nnodes && kp_diff_key_cmp(&nodes[i], &nodes[j]) == 0; j++) {
            n += nodes[j].n;
            total = kp_i64_add_sat(total, nodes[j].total_ns);
        }
        kp_diff_key *k = &t->keys[t->nkeys];
        *k = nodes[i];
        k->ns = malloc((n ? n : 1) * sizeof *k->ns);
        k->sorted = malloc((n ? n : 1) * sizeof *k->sorted);
        k->n = 0;
        k->total_ns = total;
        nodes[i].name = NULL; /* the key owns them now */
        nodes[i].base = NULL;
        t->nkeys++;
        free(run);
        run = malloc((n ? n : 1) * sizeof *run);
        if (!k->ns || !k->sorted || !run) goto nomem;
        for (size_t m = i; m < j; m++) {
            uint32_t id = nodes[m].node;
            for (size_t q = 0; q < inst.n[id]; q++)
                run[k->n++] = (kp_diff_instance){inst.seq[id][q], (double)inst.ns[id][q]};
        }
        qsort(run, k->n, sizeof *run, kp_diff_instance_cmp); /* the nodes' instances in turn */
        for (size_t q = 0; q < k->n; q++)
            k->ns[q] = k->sorted[q] = run[q].ns;
        kp_sort_doubles(k->sorted, k->n);
        i = j;
    }
    goto done;
nomem:
    st = kp_error_nomem(err);
done:
    for (size_t i = 0; i < nnodes; i++) {
        free(nodes[i].name);
        free(nodes[i].base);
    }
    free(nodes);
    free(run);
    kp_trace_instances_free(&inst);
    kp_aggregation_destroy(agg); /* before the source and the shapes: they name its nodes */
    kp_trace_shapes_free(&shapes);
    return st;
}

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

#define KP_DIFF_STATUS_KEY_(NAME, key, text)  key,
#define KP_DIFF_STATUS_TEXT_(NAME, key, text) text,
static const char *const kp_diff_status_key[KP_DIFF_STATUS_COUNT] = {
    KP_DIFF_STATUS_LIST(KP_DIFF_STATUS_KEY_)};
static const char *const kp_diff_status_text[KP_DIFF_STATUS_COUNT] = {
    KP_DIFF_STATUS_LIST(KP_DIFF_STATUS_TEXT_)};
#undef KP_DIFF_STATUS_KEY_
#undef KP_DIFF_STATUS_TEXT_

static kp_diff_status kp_diff_status_of_verdict(kp_compare_verdict v)
{
    switch (v) {
    case KP_COMPARE_SLOWER:
        return KP_DIFF_SLOWER;
    case KP_COMPARE_FASTER:
        return KP_DIFF_FASTER;
    case KP_COMPARE_SAME:
        return KP_DIFF_SAME;
    default:
        return KP_DIFF_UNSURE;
    }
}

/* The row has a comparison: a ratio with its interval. */
static int kp_diff_status_compared(kp_diff_status s)
{
    return s <= KP_DIFF_SMALL;
}

/* A change is something found: slower, faster, or there in one trace only (not-judged rows are
 * none of these: they are never a change). */
static int kp_diff_status_is_change(kp_diff_status s)
{
    return s == KP_DIFF_SLOWER || s == KP_DIFF_FASTER || s == KP_DIFF_ONLY_A || s == KP_DIFF_ONLY_B;
}

/* The changes among the counts of each status. */
static size_t kp_diff_changes(const size_t counts[KP_DIFF_STATUS_COUNT])
{
    size_t changes = 0;
    for (int s = 0; s < KP_DIFF_STATUS_COUNT; s++)
        if (kp_diff_status_is_change((kp_diff_status)s)) changes += counts[s];
    return changes;
}

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

static double kp_diff_median_ns(const kp_diff_key *k)
{
    return k && k->n ? k->sorted[k->n / 2] : 0; /* stats.h's median: sorted[n/2] */
}

static int kp_diff_row_cmp(const void *x, const void *y)
{
    const kp_diff_row *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    int64_t da = a->delta_ns < 0 ? -a->delta_ns : a->delta_ns;
    int64_t db = b->delta_ns < 0 ? -b->delta_ns : b->delta_ns;
    if (da != db) return da > db ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c) return c;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

/* One row present in both traces, judged by kprof's comparison engine (core/judge.h) when both
 * have enough instances: each side's instance durations in the order they ran (one at a time:
 * batch 1), across runs (two traces are two runs of the program), the minimum effect
 * --min-effect-us (the engine's min_effect). A FASTER or SLOWER whose total change is under
 * --min-share of the device time is held back as well (SMALL: the engine's rule for an effect
 * too small to matter, applied to the total). Samples in µs, the unit the words are read in. */
static kprof_status kp_diff_judge(kp_diff_row *row, const kp_diff_args *args, int64_t device_ns,
                                  kp_error *err)
{
    const kp_diff_key *a = row->a, *b = row->b;
    if (a->n < KP_DIFF_MIN_INSTANCES || b->n < KP_DIFF_MIN_INSTANCES) {
        row->status = KP_DIFF_TOO_FEW;
        return KPROF_OK;
    }
    if (kp_diff_median_ns(a) <= 0 || kp_diff_median_ns(b) <= 0) {
        row->status = KP_DIFF_NO_VERDICT; /* a ratio to or of nothing */
        return KPROF_OK;
    }
    double *us = malloc((a->n + b->n) * sizeof *us);
    if (!us) return kp_error_nomem(err);
    for (size_t i = 0; i < a->n; i++)
        us[i] = a->ns[i] / 1e3;
    for (size_t i = 0; i < b->n; i++)
        us[a->n + i] = b->ns[i] / 1e3;
    kp_judge_config cfg;
    kp_judge_config_default(&cfg);
    cfg.threshold = args->threshold;
    cfg.min_effect = args->min_effect_ns / 1e3;
    cfg.across_runs = 1;
    cfg.run_allowance = args->run_allowance;
    cfg.spread_allowance = 1;
    kp_judge_side sa = {.v = us, .n = a->n, .batch = 1};
    kp_judge_side sb = {.v = us + a->n, .n = b->n, .batch = 1};
    kp_judgement j;
    int rc = kp_judge(&sa, &sb, &cfg, &j);
    free(us);
    if (rc != 0) return kp_error_nomem(err);
    row->ratio = j.ratio;
    row->interval_verdict = j.interval_verdict;
    row->reasons = j.reasons;
    row->share = device_ns > 0 ? fabs((double)row->delta_ns) / (double)device_ns : 0;
    kp_compare_verdict v = j.verdict;
    if (j.reasons & KP_JUDGE_SMALL) row->small |= KP_DIFF_SMALL_EFFECT;
    int decided =
        j.interval_verdict == KP_COMPARE_FASTER || j.interval_verdict == KP_COMPARE_SLOWER;
    if (decided && device_ns > 0 && row->share < args->min_share) {
        row->small |= KP_DIFF_SMALL_SHARE;
        row->reasons |= KP_JUDGE_SMALL;
        v = KP_COMPARE_UNSURE;
    }
    if (row->reasons & KP_JUDGE_INVALID)
        row->status = KP_DIFF_NO_VERDICT;
    else if (row->small)
        row->status = KP_DIFF_SMALL;
    else
        row->status = kp_diff_status_of_verdict(v);
    if (row->status == KP_DIFF_UNSURE || row->status == KP_DIFF_SMALL) {
        kp_judge_words(&j, &cfg, "µs", row->reason, sizeof row->reason);
        if (row->small & KP_DIFF_SMALL_SHARE) {
            size_t len = strlen(row->reason);
            snprintf(row->reason + len, sizeof row->reason - len,
                     "%sthe total changed by %.3g%% of the device time, under the minimum "
                     "share of %g%%",
                     len ? "; " : "", 100 * row->share, 100 * args->min_share);
        }
    }
    /* As kprof bench's gate: one run a side must clear 1 + P by the run allowance too. */
    if (row->table == KP_DIFF_DEVICE && args->fail_if_slower >= 0 && row->status == KP_DIFF_SLOWER)
        row->gate =
            kp_compare_verdict_of(&row->ratio, args->fail_if_slower + args->run_allowance) ==
            KP_COMPARE_SLOWER;
    return KPROF_OK;
}

static int kp_diff_row_add(kp_diff_traces *d, const kp_diff_key *a, const kp_diff_key *b,
                           const kp_diff_args *args)
{
    kp_diff_row *row = &d->rows[d->nrows++];
    memset(row, 0, sizeof *row);
    const kp_diff_key *k = a ? a : b;
    row->table = k->table;
    row->kind = k->kind;
    row->name = k->name;
    row->a = a;
    row->b = b;
    row->delta_ns = kp_ns_diff(b ? b->total_ns : 0, a ? a->total_ns : 0);
    /* Host calls and ranges vary between processes (page cache, lazy loading): listed, judged
     * only when asked. */
    row->judged = row->table == KP_DIFF_DEVICE || args->judge_host;
    row->status = !row->judged ? KP_DIFF_NOT_JUDGED
                  : !a         ? KP_DIFF_ONLY_B
                  : !b         ? KP_DIFF_ONLY_A
                               : KP_DIFF_SAME;
    return 0;
}

/* Both traces' rows matched by (table, kind, name), judged, and sorted for showing. */
static kprof_status kp_diff_traces_compute(kp_diff_traces *d, const kp_diff_args *args,
                                           kp_error *err)
{
    const kp_diff_trace *A = &d->t[0], *B = &d->t[1];
    d->rows = calloc(A->nkeys + B->nkeys + 1, sizeof *d->rows);
    if (!d->rows) return kp_error_nomem(err);
    size_t i = 0, j = 0;
    while (i < A->nkeys || j < B->nkeys) {
        int c = i == A->nkeys ? 1 : j == B->nkeys ? -1 : kp_diff_key_cmp(&A->keys[i], &B->keys[j]);
        if (c < 0)
            kp_diff_row_add(d, &A->keys[i++], NULL, args);
        else if (c > 0)
            kp_diff_row_add(d, NULL, &B->keys[j++], args);
        else
            kp_diff_row_add(d, &A->keys[i++], &B->keys[j++], args);
    }
    d->device_ns = A->gpu_busy_ns > B->gpu_busy_ns ? A->gpu_busy_ns : B->gpu_busy_ns;
    for (size_t r = 0; r < d->nrows; r++) {
        kp_diff_row *row = &d->rows[r];
        if (row->judged && row->a && row->b) {
            kprof_status st = kp_diff_judge(row, args, d->device_ns, err);
            if (st != KPROF_OK) return st;
        }
        d->counts[row->status]++;
        d->gate |= row->gate;
    }
    qsort(d->rows, d->nrows, sizeof *d->rows, kp_diff_row_cmp);
    return KPROF_OK;
}

static const char *kp_diff_duration(double ns, char *buf, size_t n)
{
    return kp_format_duration(ns / 1e9, buf, n);
}

/* The verdict a row's comparison gives, for --json: "SLOWER", ... or NULL (none). */
static const char *kp_diff_row_verdict(const kp_diff_row *row)
{
    switch (row->status) {
    case KP_DIFF_SLOWER:
    case KP_DIFF_FASTER:
    case KP_DIFF_UNSURE:
    case KP_DIFF_SAME:
        return kp_diff_status_text[row->status];
    default:
        return NULL;
    }
}

/* Why a compared row got no FASTER or SLOWER, in words (the engine's, core/judge.h): "" when it
 * did, or was SAME. */
static const char *kp_diff_row_reason(const kp_diff_row *row)
{
    return row->status == KP_DIFF_UNSURE || row->status == KP_DIFF_SMALL ? row->reason : "";
}

/* The reason codes of a row as a JSON array (kp_judge_reason_name's: "small", "modes", ...). */
static void kp_diff_json_reasons(kp_json *j, unsigned reasons)
{
    kp_json_array_begin(j, "reasons");
    for (unsigned bit = 1; bit && bit <= KP_JUDGE_INVALID; bit <<= 1)
        if (reasons & bit) kp_json_string(j, NULL, kp_judge_reason_name(bit));
    kp_json_array_end(j);
}

/* ---- two traces: text ------------------------------------------------------------------ */

/* Right-align text in `width` columns (a UTF-8 character is one column: "µs"). */
static void kp_diff_cell(const char *text, int width)
{
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        cols += (*p & 0xC0) != 0x80;
    for (; cols < width; cols++)
        putchar(' ');
    fputs(text, stdout);
}

static const char *kp_diff_delta(int64_t ns, char *buf, size_t n)
{
    char d[24];
    if (ns == 0) return snprintf(buf, n, "0"), buf;
    kp_format_duration(fabs((double)ns) / 1e9, d, sizeof d);
    snprintf(buf, n, "%s%s", ns > 0 ? "+" : "-", d);
    return buf;
}

static const char *kp_diff_status_colour(kp_diff_status s, FILE *f)
{
    switch (s) {
    case KP_DIFF_SLOWER:
        return kp_text_red(f);
    case KP_DIFF_UNSURE:
        return kp_text_yellow(f);
    case KP_DIFF_FASTER:
    case KP_DIFF_ONLY_A:
    case KP_DIFF_ONLY_B:
        return kp_text_bold(f);
    case KP_DIFF_TOO_FEW:
    case KP_DIFF_NO_VERDICT:
    case KP_DIFF_SMALL:
    case KP_DIFF_NOT_JUDGED:
        return kp_text_dim(f);
    default:
        return "";
    }
}

static void kp_diff_print_table(const kp_diff_traces *d, int table, const kp_diff_args *args)
{
    static const char *const titles[KP_DIFF_TABLES] = {"Device: kernels, copies and fills",
                                                       "Host API calls", "NVTX ranges and scopes"};
    FILE *o = stdout;
    size_t shown = 0, total = 0;
    for (size_t r = 0; r < d->nrows; r++)
        total += d->rows[r].table == table;
    printf("\n%s%s%s", kp_text_bold(o), titles[table], kp_text_reset(o));
    if (table == KP_DIFF_HOST && !args->raw) printf(" (polling and query calls hidden; --raw)");
    if (table != KP_DIFF_DEVICE && !args->judge_host)
        printf(" — not judged: host-side times vary between processes (--judge-host)");
    printf("\n");
    if (!total) {
        printf("  (none in either trace)\n");
        return;
    }
    printf("  ");
    kp_diff_cell("Δ Total", 10);
    printf("  ");
    kp_diff_cell("Total A", 10);
    printf("  ");
    kp_diff_cell("Total B", 10);
    printf("  %8s  %8s  ", "Calls A", "Calls B");
    kp_diff_cell("Median A", 10);
    printf("  ");
    kp_diff_cell("Median B", 10);
    printf("  %-24s  %-13s  Name\n", "B/A median [95% CI]", "Verdict");
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->table != table) continue;
        if (args->top && shown == args->top) {
            printf("  … %zu more row%s (--json lists them all)\n", total - shown,
                   total - shown == 1 ? "" : "s");
            break;
        }
        shown++;
        char b1[40], b2[32], b3[32], b4[32], b5[32], ratio[64] = "-";
        printf("  ");
        kp_diff_cell(kp_diff_delta(row->delta_ns, b1, sizeof b1), 10);
        printf("  ");
        kp_diff_cell(row->a ? kp_diff_duration((double)row->a->total_ns, b2, sizeof b2) : "-", 10);
        printf("  ");
        kp_diff_cell(row->b ? kp_diff_duration((double)row->b->total_ns, b3, sizeof b3) : "-", 10);
        char ca[24] = "-", cb[24] = "-";
        if (row->a) snprintf(ca, sizeof ca, "%zu", row->a->n);
        if (row->b) snprintf(cb, sizeof cb, "%zu", row->b->n);
        printf("  %8s  %8s  ", ca, cb);
        kp_diff_cell(row->a ? kp_diff_duration(kp_diff_median_ns(row->a), b4, sizeof b4) : "-", 10);
        printf("  ");
        kp_diff_cell(row->b ? kp_diff_duration(kp_diff_median_ns(row->b), b5, sizeof b5) : "-", 10);
        if (kp_diff_status_compared(row->status))
            snprintf(ratio, sizeof ratio, "%.3f [%.3f, %.3f]", row->ratio.value, row->ratio.lo,
                     row->ratio.hi);
        else if (row->a && row->b && kp_diff_median_ns(row->a) > 0)
            snprintf(ratio, sizeof ratio, "%.3f",
                     kp_diff_median_ns(row->b) / kp_diff_median_ns(row->a));
        const char *colour = kp_diff_status_colour(row->status, o);
        printf("  %-24s  %s%-13s%s  %s%s\n", ratio, colour, kp_diff_status_text[row->status],
               *colour ? kp_text_reset(o) : "", row->name,
               row->kind == KP_EVENT_MEMCPY   ? " (copy)"
               : row->kind == KP_EVENT_MEMSET ? " (fill)"
                                              : "");
    }
    /* Why the rows shown got no FASTER or SLOWER: a line each under the table. */
    shown = 0;
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->table != table) continue;
        if (args->top && shown++ == args->top) break;
        const char *reason = kp_diff_row_reason(row);
        if (reason[0])
            printf("  %s%s: %s%s\n", kp_text_dim(o), row->name, reason, kp_text_reset(o));
    }
}

static void kp_diff_print_trace_header(const char *label, const kp_diff_trace *t)
{
    char wall[32];
    const kp_trace_meta *m = kp_event_source_meta(t->src);
    printf(
        "%s: %s — wall %s, %llu events", label, t->path,
        kp_format_duration((double)kp_ns_diff(t->v.end_ns, t->v.start_ns) / 1e9, wall, sizeof wall),
        (unsigned long long)t->events);
    if (m->command[0]) printf(", command: %s", m->command);
    printf("\n");
    char note[160];
    if (t->ends_before_start)
        printf("   Note: %s\n",
               kp_format_ends_before_start(t->ends_before_start, note, sizeof note));
}

/* "Verdict over the wall: A host-bound, B host-bound (unchanged)", and the sentences where it
 * changed. */
static void kp_diff_print_window(const char *window, const kp_diff_trace *t,
                                 const kp_verdict_input *in[2], const kp_verdict *v[2])
{
    FILE *o = stdout;
    const char *ka = in[0] ? kp_verdict_name(v[0]->kind) : "none (no device work)";
    const char *kb = in[1] ? kp_verdict_name(v[1]->kind) : "none (no device work)";
    int changed = (in[0] == NULL) != (in[1] == NULL) || (in[0] && v[0]->kind != v[1]->kind);
    printf("Verdict over %s: A %s, B %s — %s%s%s\n", window, ka, kb, changed ? kp_text_bold(o) : "",
           changed ? "changed" : "unchanged", changed ? kp_text_reset(o) : "");
    if (!changed) return;
    for (int s = 0; s < 2; s++) {
        if (!in[s]) continue;
        char sentence[2048];
        kp_verdict_describe(in[s], v[s], window, t[s].v.start_ns, sentence, sizeof sentence);
        printf("  %s → %s\n", s ? "B" : "A", sentence);
    }
}

/* The closing line of either diff: how many rows or points have each status (instances: a
 * trace diff, whose rows are counted in instances). */
static void kp_diff_print_summary(const size_t c[KP_DIFF_STATUS_COUNT], int instances)
{
    FILE *o = stdout;
    size_t changes = kp_diff_changes(c);
    printf("\n%s%zu difference%s%s: %zu slower, %zu faster, %zu only in A, %zu only in B; %zu "
           "unsure, %zu the same, %zu with n too small",
           kp_text_bold(o), changes, changes == 1 ? "" : "s", kp_text_reset(o), c[KP_DIFF_SLOWER],
           c[KP_DIFF_FASTER], c[KP_DIFF_ONLY_A], c[KP_DIFF_ONLY_B], c[KP_DIFF_UNSURE],
           c[KP_DIFF_SAME], c[KP_DIFF_TOO_FEW]);
    if (instances) printf(" (< %d instances in A or B)", KP_DIFF_MIN_INSTANCES);
    if (c[KP_DIFF_SMALL]) printf(", %zu under the minimum effect", c[KP_DIFF_SMALL]);
    if (c[KP_DIFF_NO_VERDICT]) printf(", %zu with a median of 0", c[KP_DIFF_NO_VERDICT]);
    if (c[KP_DIFF_NOT_JUDGED])
        printf("; %zu not judged (host calls and ranges: --judge-host)", c[KP_DIFF_NOT_JUDGED]);
    printf("\n");
}

static void kp_diff_print_traces(const kp_diff_traces *d, const kp_diff_args *args)
{
    FILE *o = stdout;
    kp_diff_print_trace_header("A", &d->t[0]);
    kp_diff_print_trace_header("B", &d->t[1]);
    char minimum[32];
    printf("By %s, the largest change of total time first. A verdict where A and B each have %d "
           "instances or more, from kprof's comparison engine: the 95%% interval of B/A of their "
           "medians (a block bootstrap over the instances in the order they ran) inside ±%g%% is "
           "the same, clear of it by %g%% more faster or slower (two traces are one run a "
           "side), else unsure, with the reason; a change under %s per instance (median) or under "
           "%g%% "
           "of the device time (total) is under the minimum effect: neither faster nor slower.\n",
           args->by == KP_DIFF_BY_SHAPE ? "kernel name and launch shape (host calls and ranges "
                                          "by name)"
                                        : kp_diff_by_name[args->by],
           KP_DIFF_MIN_INSTANCES, 100 * args->threshold, 100 * args->run_allowance,
           kp_diff_duration(args->min_effect_ns, minimum, sizeof minimum), 100 * args->min_share);
    for (int table = 0; table < KP_DIFF_TABLES; table++)
        kp_diff_print_table(d, table, args);
    printf("\n");
    const kp_verdict_input *in[2] = {&d->t[0].v.wall_in, &d->t[1].v.wall_in};
    const kp_verdict *v[2] = {&d->t[0].v.wall, &d->t[1].v.wall};
    kp_diff_print_window("the wall", d->t, in, v);
    for (int s = 0; s < 2; s++) {
        in[s] = d->t[s].v.has_active ? &d->t[s].v.active_in : NULL;
        v[s] = &d->t[s].v.active;
    }
    kp_diff_print_window("the active window", d->t, in, v);
    kp_diff_print_summary(d->counts, 1);
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->gate)
            printf("%s%s is slower by more than --fail-if-slower %g%%: B/A %.3f [%.3f, %.3f]%s\n",
                   kp_text_red(o), row->name, 100 * args->fail_if_slower, row->ratio.value,
                   row->ratio.lo, row->ratio.hi, kp_text_reset(o));
    }
}

/* ---- two traces: JSON ------------------------------------------------------------------- */

/* An estimate's interval as [lo, hi]. */
static void kp_diff_json_ci(kp_json *j, const char *key, const kp_estimate *e)
{
    kp_json_array_begin(j, key);
    kp_json_double(j, NULL, e->lo);
    kp_json_double(j, NULL, e->hi);
    kp_json_array_end(j);
}

static void kp_diff_json_side(kp_json *j, const char *key, const kp_diff_key *k)
{
    if (!k) {
        kp_json_null(j, key);
        return;
    }
    kp_json_object_begin(j, key);
    kp_json_uint(j, "count", k->n);
    kp_json_double(j, "total_s", (double)k->total_ns / 1e9);
    kp_json_double(j, "median_s", kp_diff_median_ns(k) / 1e9);
    kp_json_object_end(j);
}

static void kp_diff_json_ratio(kp_json *j, const char *key, double b, double a, int both)
{
    if (both && a > 0)
        kp_json_double(j, key, b / a);
    else
        kp_json_null(j, key);
}

/* A row's launch shape as fields: grid (threads) and tg (threads per group; null when the
 * runtime chose) as [x, y, z], smem_bytes (dynamic shared memory); null what is not known. */
static void kp_diff_json_shape(kp_json *j, const kp_diff_key *k)
{
    const kp_trace_shape *s = &k->shape;
    if (s->known & KP_EVENT_HAS_GEOMETRY) {
        kp_json_array_begin(j, "grid");
        for (int d = 0; d < 3; d++)
            kp_json_uint(j, NULL, s->grid[d]);
        kp_json_array_end(j);
        if (s->group[0]) {
            kp_json_array_begin(j, "tg");
            for (int d = 0; d < 3; d++)
                kp_json_uint(j, NULL, s->group[d]);
            kp_json_array_end(j);
        } else {
            kp_json_null(j, "tg");
        }
    } else {
        kp_json_null(j, "grid");
        kp_json_null(j, "tg");
    }
    if (s->known & KP_EVENT_HAS_SHARED)
        kp_json_uint(j, "smem_bytes", s->dynamic_shared);
    else
        kp_json_null(j, "smem_bytes");
}

static void kp_diff_json_row(kp_json *j, const kp_diff_row *row, const kp_diff_args *args)
{
    int both = row->a && row->b;
    const kp_diff_key *k = row->a ? row->a : row->b;
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "name", k->base ? k->base : row->name);
    kp_json_string(j, "kind", kp_event_kind_name(row->kind));
    if (row->table == KP_DIFF_DEVICE && args->by == KP_DIFF_BY_SHAPE) {
        kp_json_string(j, "key", row->name);
        kp_diff_json_shape(j, k);
    }
    kp_json_string(j, "status", kp_diff_status_key[row->status]);
    kp_json_bool(j, "changed", kp_diff_status_is_change(row->status));
    kp_json_bool(j, "judged", row->judged);
    const char *verdict = kp_diff_row_verdict(row);
    if (verdict)
        kp_json_string(j, "verdict", verdict);
    else
        kp_json_null(j, "verdict");
    const char *reason = kp_diff_row_reason(row);
    if (reason[0])
        kp_json_string(j, "reason", reason);
    else
        kp_json_null(j, "reason");
    kp_diff_json_reasons(j, reason[0] ? row->reasons : 0);
    kp_diff_json_side(j, "a", row->a);
    kp_diff_json_side(j, "b", row->b);
    kp_json_object_begin(j, "delta");
    kp_json_int(j, "count", (int64_t)(row->b ? row->b->n : 0) - (int64_t)(row->a ? row->a->n : 0));
    kp_json_double(j, "total_s", (double)row->delta_ns / 1e9);
    if (both)
        kp_json_double(j, "median_s",
                       (kp_diff_median_ns(row->b) - kp_diff_median_ns(row->a)) / 1e9);
    else
        kp_json_null(j, "median_s");
    kp_json_object_end(j);
    kp_json_object_begin(j, "ratio");
    kp_diff_json_ratio(j, "total", row->b ? (double)row->b->total_ns : 0,
                       row->a ? (double)row->a->total_ns : 0, both);
    kp_diff_json_ratio(j, "median", kp_diff_median_ns(row->b), kp_diff_median_ns(row->a), both);
    kp_json_object_end(j);
    if (kp_diff_status_compared(row->status)) {
        kp_json_object_begin(j, "comparison");
        kp_json_double(j, "ratio", row->ratio.value);
        kp_diff_json_ci(j, "ci", &row->ratio);
        kp_json_double(j, "level", 0.95);
        kp_json_string(j, "interval_verdict", kp_compare_verdict_name(row->interval_verdict));
        if (verdict)
            kp_json_string(j, "verdict", verdict);
        else
            kp_json_null(j, "verdict");
        kp_json_object_end(j);
    } else {
        kp_json_null(j, "comparison");
    }
    if (row->status == KP_DIFF_TOO_FEW)
        kp_json_string(j, "note", "n too small");
    else if (row->status == KP_DIFF_NO_VERDICT)
        kp_json_string(j, "note", "a median is 0: no ratio");
    else if (row->status == KP_DIFF_SMALL)
        kp_json_string(j, "note", "under the minimum effect");
    else if (row->status == KP_DIFF_NOT_JUDGED)
        kp_json_string(j, "note",
                       "not judged: host-side times vary between processes "
                       "(--judge-host)");
    else
        kp_json_null(j, "note");
    if (args->fail_if_slower >= 0) kp_json_bool(j, "fails_gate", row->gate);
    kp_json_object_end(j);
}

static void kp_diff_json_verdict(kp_json *j, const char *key, const kp_verdict_input *in,
                                 const kp_verdict *v, const char *window, int64_t start_ns)
{
    if (!in) {
        kp_json_null(j, key);
        return;
    }
    char sentence[2048];
    kp_verdict_describe(in, v, window, start_ns, sentence, sizeof sentence);
    kp_json_object_begin(j, key);
    kp_json_string(j, "kind", kp_verdict_name(v->kind));
    kp_json_double(j, "duration_s", in->wall_s);
    kp_json_double(j, "gpu_busy_fraction", v->busy_fraction);
    kp_json_string(j, "sentence", sentence);
    kp_json_object_end(j);
}

static void kp_diff_json_trace(kp_json *j, const char *key, const kp_diff_trace *t)
{
    const kp_trace_meta *m = kp_event_source_meta(t->src);
    kp_json_object_begin(j, key);
    kp_json_string(j, "trace", t->path);
    kp_json_string(j, "command", m->command);
    kp_json_double(j, "wall_s", (double)kp_ns_diff(t->v.end_ns, t->v.start_ns) / 1e9);
    kp_json_uint(j, "events", t->events);
    kp_json_object_begin(j, "verdict");
    kp_diff_json_verdict(j, "wall", &t->v.wall_in, &t->v.wall, "the wall", t->v.start_ns);
    kp_diff_json_verdict(j, "active", t->v.has_active ? &t->v.active_in : NULL, &t->v.active,
                         "the active window", t->v.start_ns);
    kp_json_object_end(j);
    kp_json_object_end(j);
}

static void kp_diff_json_summary(kp_json *j, const size_t counts[KP_DIFF_STATUS_COUNT])
{
    kp_json_object_begin(j, "summary");
    for (int s = 0; s < KP_DIFF_STATUS_COUNT; s++)
        kp_json_uint(j, kp_diff_status_key[s], counts[s]);
    kp_json_uint(j, "differences", kp_diff_changes(counts));
    kp_json_object_end(j);
}

static void kp_diff_json_common(kp_json *j, const kp_diff_args *args)
{
    kp_json_double(j, "threshold", args->threshold);
    if (args->fail_if_slower >= 0)
        kp_json_double(j, "fail_if_slower", args->fail_if_slower);
    else
        kp_json_null(j, "fail_if_slower");
}

static void kp_diff_json_traces(kp_str *out, const kp_diff_traces *d, const kp_diff_args *args)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "trace-diff");
    kp_json_string(&j, "by", kp_diff_by_name[args->by]);
    kp_diff_json_common(&j, args);
    kp_json_int(&j, "min_instances", KP_DIFF_MIN_INSTANCES);
    kp_json_double(&j, "min_effect_us", args->min_effect_ns / 1e3);
    kp_json_double(&j, "min_share", args->min_share);
    kp_json_double(&j, "run_allowance", args->run_allowance);
    kp_json_double(&j, "device_s", (double)d->device_ns / 1e9);
    kp_json_bool(&j, "judge_host", args->judge_host);
    kp_json_bool(&j, "polling_calls", args->raw);
    kp_diff_json_trace(&j, "a", &d->t[0]);
    kp_diff_json_trace(&j, "b", &d->t[1]);
    kp_json_object_begin(&j, "verdict_changed");
    const kp_trace_verdicts *va = &d->t[0].v, *vb = &d->t[1].v;
    kp_json_bool(&j, "wall", va->wall.kind != vb->wall.kind);
    kp_json_bool(&j, "active",
                 va->has_active != vb->has_active ||
                     (va->has_active && va->active.kind != vb->active.kind));
    kp_json_object_end(&j);
    for (int table = 0; table < KP_DIFF_TABLES; table++) {
        kp_json_array_begin(&j, kp_diff_table_key[table]);
        for (size_t r = 0; r < d->nrows; r++)
            if (d->rows[r].table == table) kp_diff_json_row(&j, &d->rows[r], args);
        kp_json_array_end(&j);
    }
    kp_diff_json_summary(&j, d->counts);
    kp_json_bool(&j, "fails_gate", d->gate);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
}

/* Print the JSON a diff wrote into s, and free it. */
static kprof_status kp_diff_put(kp_str *s, kp_error *err)
{
    kprof_status st = KPROF_OK;
    if (s->failed)
        st = kp_error_nomem(err);
    else
        fputs(s->data, stdout);
    kp_str_free(s);
    return st;
}

/* The exit code of a diff: its error's, or 5 when the gate failed. */
static int kp_diff_exit(kprof_status st, kp_error *err, int gate)
{
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(err);
        kp_error_clear(err);
        return rc;
    }
    return gate ? kprof_status_exit_code(KPROF_REGRESSION) : 0;
}

static int kp_diff_two_traces(const kp_diff_args *args)
{
    kp_diff_traces d;
    memset(&d, 0, sizeof d);
    kp_error err = {0};
    kprof_status st = KPROF_OK;
    for (int s = 0; s < 2 && st == KPROF_OK; s++) {
        d.t[s].path = args->in[s];
        st = kp_diff_trace_load(&d.t[s], args, &err);
    }
    if (st == KPROF_OK) st = kp_diff_traces_compute(&d, args, &err);
    if (st == KPROF_OK && args->json) {
        kp_str s = {0};
        kp_diff_json_traces(&s, &d, args);
        st = kp_diff_put(&s, &err);
    } else if (st == KPROF_OK) {
        kp_diff_print_traces(&d, args);
    }
    int gate = d.gate;
    free(d.rows);
    kp_diff_trace_free(&d.t[0]);
    kp_diff_trace_free(&d.t[1]);
    return kp_diff_exit(st, &err, gate);
}

/* ---- two results: the numbers ------------------------------------------------------------ */

/* One input of a result diff: a bench.json, or a history run (its samples as one point). */
typedef struct kp_diff_result {
    const char *arg;
    kp_bench_file *file; /* a bench.json */
    int history;         /* a history run: run, samples */
    kp_history_run run;
    double *samples; /* ms, heap */
    size_t nsamples;
} kp_diff_result;

/* A history run and its samples (store/history.h). */
static kprof_status kp_diff_history_load(kp_diff_result *r, kp_error *err)
{
    kprof_status st = kp_history_get(r->arg, &r->run, &r->samples, &r->nsamples, NULL, err);
    if (st != KPROF_OK) return st;
    r->history = 1;
    if (r->nsamples == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "history run %s (%lld) kept no samples: nothing "
                            "to compare",
                            r->arg, (long long)r->run.id);
    return KPROF_OK;
}

static void kp_diff_result_free(kp_diff_result *r)
{
    kp_bench_file_free(r->file);
    free(r->samples);
    memset(r, 0, sizeof *r);
}

static const char *kp_diff_result_device(const kp_diff_result *r)
{
    return r->history ? r->run.device : r->file ? r->file->device : "";
}

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

/* " (src hash 0123456789abcdef)", " (w.cl)" or "": what tells a kernel's version apart. */
static void kp_diff_kernel_origin(char *buf, size_t n, const char *hash, const char *source)
{
    if (hash && hash[0])
        snprintf(buf, n, " (src hash %s)", hash);
    else if (source && source[0])
        snprintf(buf, n, " (%s)", source);
    else
        buf[0] = '\0';
}

/* Whether A and B are results of different kernels, said into d->different: two history runs
 * whose kernels (entries) differ, or two bench results with a point in both whose kernels
 * differ. The kernel is its entry's name: one entry whose source changed (another hash, another
 * file) is the same kernel changed, which is what a diff is for. An entry not recorded (an
 * older bench.json) differs from nothing. */
static void kp_diff_results_kernels(kp_diff_results *d)
{
    const kp_diff_result *A = &d->r[0], *B = &d->r[1];
    char oa[1100], ob[1100];
    d->different[0] = '\0';
    if (A->history) {
        if (!A->run.kernel[0] || !B->run.kernel[0] || strcmp(A->run.kernel, B->run.kernel) == 0)
            return;
        kp_diff_kernel_origin(oa, sizeof oa, A->run.source_hash, A->run.target);
        kp_diff_kernel_origin(ob, sizeof ob, B->run.source_hash, B->run.target);
        snprintf(d->different, sizeof d->different, "A is %.255s%.300s, B is %.255s%.300s",
                 A->run.kernel, oa, B->run.kernel, ob);
        return;
    }
    for (int i = 0; i < A->file->npoints; i++) {
        const kp_bench_file_point *pa = &A->file->points[i];
        const kp_bench_file_point *pb = kp_bench_file_find(B->file, pa->point, pa->cold);
        if (!pb || !pa->entry[0] || !pb->entry[0] || strcmp(pa->entry, pb->entry) == 0) continue;
        kp_diff_kernel_origin(oa, sizeof oa, NULL, pa->source);
        kp_diff_kernel_origin(ob, sizeof ob, NULL, pb->source);
        snprintf(d->different, sizeof d->different, "A is %.255s%.300s, B is %.255s%.300s%s%.200s",
                 pa->entry, oa, pb->entry, ob, pa->point[0] ? " at " : "", pa->point);
        return;
    }
}

static kprof_status kp_diff_point_side(kp_diff_point *p, int s, const double *ms, const double *mhz,
                                       size_t n, size_t rounds, kp_error *err)
{
    p->has[s] = 1;
    kprof_status st = kp_bench_side_add(&p->side[s], ms, mhz, n, err);
    p->side[s].rounds = rounds;
    if (st == KPROF_OK) st = kp_bench_summarise(&p->side[s], err);
    return st;
}

/* A bench.json point's side, with its sessions' medians (--repeat) as bench --compare takes
 * them. */
static kprof_status kp_diff_file_side(kp_diff_point *p, int s, const kp_bench_file_point *fp,
                                      kp_error *err)
{
    kprof_status st = kp_diff_point_side(p, s, fp->ms, fp->mhz, fp->n, fp->rounds, err);
    for (int k = 0; k < fp->nruns && k < KP_BENCH_MAX_REPEAT; k++)
        p->side[s].run_median[p->side[s].nruns++] = fp->run_median[k];
    return st;
}

/* Compare a point present in both: kprof bench --compare's comparison (unpaired). */
static kprof_status kp_diff_point_judge(kp_diff_point *p, const kp_diff_args *args, kp_error *err)
{
    if (!p->has[0] || !p->has[1]) {
        p->status = p->has[0] ? KP_DIFF_ONLY_A : KP_DIFF_ONLY_B;
        return KPROF_OK;
    }
    if (p->side[0].n < KP_DIFF_MIN_INSTANCES || p->side[1].n < KP_DIFF_MIN_INSTANCES) {
        p->status = KP_DIFF_TOO_FEW;
        return KPROF_OK;
    }
    if (p->side[0].median.value <= 0 || p->side[1].median.value <= 0) {
        p->status = KP_DIFF_NO_VERDICT;
        return KPROF_OK;
    }
    kp_bench_config cfg;
    kp_bench_config_default(&cfg);
    cfg.threshold = args->threshold;
    /* kprof bench --compare's comparison: the engine (core/judge.h) over each side's samples in
     * the order taken, their rounds as batches, across runs (unpaired); busy unknown. */
    kp_bench_outcome_init(&p->outcome);
    kprof_status st = kp_bench_compare(&p->side[0], &p->side[1], 0, &cfg, &p->outcome, err);
    if (st != KPROF_OK) return st;
    p->status = kp_diff_status_of_verdict(p->outcome.final_verdict);
    if (args->fail_if_slower >= 0)
        p->gate = kp_bench_outcome_fails(&p->outcome, args->fail_if_slower);
    return KPROF_OK;
}

static kprof_status kp_diff_results_compute(kp_diff_results *d, const kp_diff_args *args,
                                            kp_error *err)
{
    kp_diff_result *A = &d->r[0], *B = &d->r[1];
    int cap = A->history ? 1 : A->file->npoints + B->file->npoints;
    d->points = calloc((size_t)(cap > 0 ? cap : 1), sizeof *d->points);
    if (!d->points) return kp_error_nomem(err);
    kprof_status st = KPROF_OK;
    if (A->history) { /* one point: the two runs */
        kp_diff_point *p = &d->points[d->npoints++];
        snprintf(p->point, sizeof p->point, "%s", B->run.kernel);
        st = kp_diff_point_side(p, 0, A->samples, NULL, A->nsamples, 0, err);
        if (st == KPROF_OK) st = kp_diff_point_side(p, 1, B->samples, NULL, B->nsamples, 0, err);
    } else { /* A's points in A's order, then those only B has */
        for (int i = 0; i < A->file->npoints && st == KPROF_OK; i++) {
            const kp_bench_file_point *pa = &A->file->points[i];
            if (kp_bench_file_find(A->file, pa->point, pa->cold) != pa) continue; /* twice */
            const kp_bench_file_point *pb = kp_bench_file_find(B->file, pa->point, pa->cold);
            kp_diff_point *p = &d->points[d->npoints++];
            kp_strlcpy(p->point, pa->point, sizeof p->point);
            p->cold = pa->cold;
            st = kp_diff_file_side(p, 0, pa, err);
            if (st == KPROF_OK && pb) st = kp_diff_file_side(p, 1, pb, err);
        }
        for (int i = 0; i < B->file->npoints && st == KPROF_OK; i++) {
            const kp_bench_file_point *pb = &B->file->points[i];
            if (kp_bench_file_find(B->file, pb->point, pb->cold) != pb ||
                kp_bench_file_find(A->file, pb->point, pb->cold))
                continue;
            kp_diff_point *p = &d->points[d->npoints++];
            kp_strlcpy(p->point, pb->point, sizeof p->point);
            p->cold = pb->cold;
            st = kp_diff_file_side(p, 1, pb, err);
        }
    }
    for (int i = 0; i < d->npoints && st == KPROF_OK; i++) {
        st = kp_diff_point_judge(&d->points[i], args, err);
        d->counts[d->points[i].status]++;
        d->gate |= d->points[i].gate;
    }
    return st;
}

/* ---- two results: text and JSON ---------------------------------------------------------- */

/* The fields two history runs differ in, as "name: A → B" lines (or a note that none do). */
typedef struct kp_diff_run_field {
    const char *key;
    const char *a, *b;
} kp_diff_run_field;

static int kp_diff_run_fields(const kp_history_run *a, const kp_history_run *b,
                              kp_diff_run_field *out)
{
    int n = 0;
#define KP_DIFF_FIELD_(name)                                                                       \
    if (strcmp(a->name, b->name) != 0) out[n++] = (kp_diff_run_field){#name, a->name, b->name};
    KP_DIFF_FIELD_(kind)
    KP_DIFF_FIELD_(device)
    KP_DIFF_FIELD_(backend)
    KP_DIFF_FIELD_(driver)
    KP_DIFF_FIELD_(kprof_version)
    KP_DIFF_FIELD_(kernel)
    KP_DIFF_FIELD_(target)
    KP_DIFF_FIELD_(source_hash)
    KP_DIFF_FIELD_(options)
    KP_DIFF_FIELD_(grid)
    KP_DIFF_FIELD_(tg)
    KP_DIFF_FIELD_(buffers)
    KP_DIFF_FIELD_(git_commit)
#undef KP_DIFF_FIELD_
    if (a->git_dirty != b->git_dirty) {
        static const char *const dirty[] = {"no work tree", "clean", "dirty"};
        int da = a->git_dirty < 0 ? 0 : a->git_dirty ? 2 : 1;
        int db = b->git_dirty < 0 ? 0 : b->git_dirty ? 2 : 1;
        out[n++] = (kp_diff_run_field){"git_dirty", dirty[da], dirty[db]};
    }
    return n;
}

#define KP_DIFF_RUN_FIELDS 16

/* printf on stdout whose %s arguments are escaped (kp_str_vprintf_escaped): the kernel, device,
 * command and points of result files and the store are names from files, and no text output
 * prints them raw. No colour codes among the arguments: they would be escaped too. */
static void kp_diff_printf_escaped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kp_diff_printf_escaped(const char *fmt, ...)
{
    kp_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(&s, fmt, ap);
    va_end(ap);
    fputs(s.data ? s.data : "", stdout);
    kp_str_free(&s);
}

static void kp_diff_print_result_header(const char *label, const kp_diff_result *r)
{
    if (r->history)
        kp_diff_printf_escaped("%s: %s — history run %lld (%s of %s on %s, %s%s), %zu samples\n",
                               label, r->arg, (long long)r->run.id, r->run.kind, r->run.kernel,
                               r->run.device, r->run.git_commit[0] ? "commit " : "no commit",
                               r->run.git_commit[0] ? r->run.git_commit : "", r->nsamples);
    else
        kp_diff_printf_escaped("%s: %s — kprof bench on %s, %d point%s\n", label, r->arg,
                               r->file->device[0] ? r->file->device : "an unnamed device",
                               r->file->npoints, r->file->npoints == 1 ? "" : "s");
}

static void kp_diff_print_results(const kp_diff_results *d, const kp_diff_args *args)
{
    FILE *o = stdout;
    kp_diff_print_result_header("A", &d->r[0]);
    kp_diff_print_result_header("B", &d->r[1]);
    if (d->different[0]) {
        fputs(kp_text_bold(o), stdout);
        kp_diff_printf_escaped("%s: different kernels, compared anyway (--force)", d->different);
        printf("%s\n", kp_text_reset(o));
    }
    if (d->r[0].history) {
        kp_diff_run_field f[KP_DIFF_RUN_FIELDS];
        int n = kp_diff_run_fields(&d->r[0].run, &d->r[1].run, f);
        if (!n)
            printf("The runs differ in nothing kprof records of them (device, kernel, "
                   "source, options, geometry, commit).\n");
        for (int i = 0; i < n; i++)
            kp_diff_printf_escaped("  %s: %s → %s\n", f[i].key, f[i].a[0] ? f[i].a : "\"\"",
                                   f[i].b[0] ? f[i].b : "\"\"");
    }
    printf("Point by point, as kprof bench --compare judges: B/A of the medians with its 95%% "
           "interval (a block bootstrap, each side's rounds as its blocks at least), SAME within "
           "±%g%%; FASTER or SLOWER clear of the band by %g%% more (one run a side); a verdict "
           "needs %d samples or more on each side.\n\n",
           100 * args->threshold, 100 * KP_JUDGE_RUN_ALLOWANCE, KP_DIFF_MIN_INSTANCES);
    int has_cache = 0;
    size_t wpoint = 5;
    for (int i = 0; i < d->npoints; i++) {
        has_cache |= d->points[i].cold;
        kp_str esc = {0};
        kp_str_append_escaped(&esc, d->points[i].point, strlen(d->points[i].point));
        size_t w = esc.len;
        kp_str_free(&esc);
        if (w > wpoint) wpoint = w;
    }
    if (wpoint > 40) wpoint = 40;
    printf("  %-*s  %s%12s  %12s  %8s  %8s  %-24s  %s\n", (int)wpoint, "Point",
           has_cache ? "Cache  " : "", "A median ms", "B median ms", "A n", "B n",
           "B/A median [95% CI]", "Verdict");
    for (int i = 0; i < d->npoints; i++) {
        const kp_diff_point *p = &d->points[i];
        char ma[32] = "-", mb[32] = "-", na[24] = "-", nb[24] = "-", ratio[64] = "-";
        if (p->has[0]) {
            snprintf(ma, sizeof ma, "%.5g", p->side[0].median.value);
            snprintf(na, sizeof na, "%zu", p->side[0].n);
        }
        if (p->has[1]) {
            snprintf(mb, sizeof mb, "%.5g", p->side[1].median.value);
            snprintf(nb, sizeof nb, "%zu", p->side[1].n);
        }
        if (p->status <= KP_DIFF_SAME)
            snprintf(ratio, sizeof ratio, "%.4f [%.4f, %.4f]", p->outcome.ratio.value,
                     p->outcome.ratio.lo, p->outcome.ratio.hi);
        const char *colour = kp_diff_status_colour(p->status, o);
        kp_diff_printf_escaped("  %-*s  ", (int)wpoint, p->point[0] ? p->point : "-");
        if (has_cache) printf("%-5s  ", p->cold ? "cold" : "hot");
        printf("%12s  %12s  %8s  %8s  %-24s  %s%s%s\n", ma, mb, na, nb, ratio, colour,
               kp_diff_status_text[p->status], *colour ? kp_text_reset(o) : "");
        if (p->status <= KP_DIFF_SAME && p->outcome.have_cycles)
            printf("  %-*s  in cycles %.4f [%.4f, %.4f]: %s%s\n", (int)wpoint, "",
                   p->outcome.cycles_ratio.value, p->outcome.cycles_ratio.lo,
                   p->outcome.cycles_ratio.hi, kp_compare_verdict_name(p->outcome.cycles_verdict),
                   p->outcome.final_verdict != p->outcome.verdict
                       ? " — the time differs but the cycles do not: the clock moved"
                       : "");
        if (p->status == KP_DIFF_UNSURE && p->outcome.judgement.reason[0])
            printf("  %-*s  %s%s%s\n", (int)wpoint, "", kp_text_dim(o), p->outcome.judgement.reason,
                   kp_text_reset(o));
        if (p->gate)
            printf("  %s%s is slower by more than --fail-if-slower %g%%%s\n", kp_text_red(o),
                   p->point[0] ? p->point : "the point", 100 * args->fail_if_slower,
                   kp_text_reset(o));
    }
    kp_diff_print_summary(d->counts, 0);
}

static void kp_diff_json_result(kp_json *j, const char *key, const kp_diff_result *r)
{
    kp_json_object_begin(j, key);
    kp_json_string(j, "input", r->history ? "history" : "bench");
    kp_json_string(j, r->history ? "ref" : "path", r->arg);
    kp_json_string(j, "device", kp_diff_result_device(r));
    if (r->history) {
        const kp_history_run *run = &r->run;
        kp_json_int(j, "id", run->id);
        kp_json_string(j, "kind", run->kind);
        kp_json_int(j, "at", run->at);
        kp_json_string(j, "backend", run->backend);
        kp_json_string(j, "driver", run->driver);
        kp_json_string(j, "kprof_version", run->kprof_version);
        kp_json_string(j, "kernel", run->kernel);
        kp_json_string(j, "target", run->target);
        kp_json_string(j, "source_hash", run->source_hash);
        kp_json_string(j, "options", run->options);
        kp_json_string(j, "grid", run->grid);
        kp_json_string(j, "tg", run->tg);
        kp_json_string(j, "buffers", run->buffers);
        kp_json_string(j, "git_commit", run->git_commit);
        if (run->git_dirty < 0)
            kp_json_null(j, "git_dirty");
        else
            kp_json_bool(j, "git_dirty", run->git_dirty);
    } else {
        kp_json_int(j, "points", r->file->npoints);
    }
    kp_json_object_end(j);
}

static void kp_diff_json_point_side(kp_json *j, const char *key, const kp_diff_point *p, int s)
{
    if (!p->has[s]) {
        kp_json_null(j, key);
        return;
    }
    const kp_bench_side *sd = &p->side[s];
    kp_json_object_begin(j, key);
    kp_json_double(j, "median_ms", sd->median.value);
    kp_diff_json_ci(j, "ci_ms", &sd->median);
    kp_json_double(j, "min_ms", sd->stats.min);
    kp_json_uint(j, "samples", sd->n);
    kp_json_object_end(j);
}

static void kp_diff_json_results(kp_str *out, const kp_diff_results *d, const kp_diff_args *args)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "result-diff");
    kp_diff_json_common(&j, args);
    kp_json_int(&j, "min_samples", KP_DIFF_MIN_INSTANCES);
    kp_diff_json_result(&j, "a", &d->r[0]);
    kp_diff_json_result(&j, "b", &d->r[1]);
    if (d->different[0])
        kp_json_string(&j, "different_kernels", d->different);
    else
        kp_json_null(&j, "different_kernels");
    if (d->r[0].history) {
        kp_diff_run_field f[KP_DIFF_RUN_FIELDS];
        int n = kp_diff_run_fields(&d->r[0].run, &d->r[1].run, f);
        kp_json_object_begin(&j, "differs");
        for (int i = 0; i < n; i++) {
            kp_json_array_begin(&j, f[i].key);
            kp_json_string(&j, NULL, f[i].a);
            kp_json_string(&j, NULL, f[i].b);
            kp_json_array_end(&j);
        }
        kp_json_object_end(&j);
    }
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < d->npoints; i++) {
        const kp_diff_point *p = &d->points[i];
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "point", p->point);
        kp_json_string(&j, "cache", p->cold ? "cold" : "hot");
        kp_json_string(&j, "status", kp_diff_status_key[p->status]);
        kp_json_bool(&j, "changed", kp_diff_status_is_change(p->status));
        int unsure = p->status == KP_DIFF_UNSURE;
        if (unsure && p->outcome.judgement.reason[0])
            kp_json_string(&j, "reason", p->outcome.judgement.reason);
        else
            kp_json_null(&j, "reason");
        kp_diff_json_reasons(&j, unsure ? p->outcome.judgement.reasons : 0);
        kp_diff_json_point_side(&j, "a", p, 0);
        kp_diff_json_point_side(&j, "b", p, 1);
        if (p->status <= KP_DIFF_SAME) {
            const kp_bench_outcome *o = &p->outcome;
            kp_json_object_begin(&j, "comparison");
            kp_json_double(&j, "ratio", o->ratio.value);
            kp_diff_json_ci(&j, "ci", &o->ratio);
            kp_json_bool(&j, "paired", o->paired);
            kp_json_string(&j, "time_verdict", kp_compare_verdict_name(o->verdict));
            if (o->have_cycles) {
                kp_json_double(&j, "cycles_ratio", o->cycles_ratio.value);
                kp_diff_json_ci(&j, "cycles_ci", &o->cycles_ratio);
                kp_json_string(&j, "cycles_verdict", kp_compare_verdict_name(o->cycles_verdict));
            } else {
                kp_json_null(&j, "cycles_ratio");
            }
            kp_json_string(&j, "verdict", kp_compare_verdict_name(o->final_verdict));
            kp_json_object_end(&j);
        } else {
            kp_json_null(&j, "comparison");
        }
        if (args->fail_if_slower >= 0) kp_json_bool(&j, "fails_gate", p->gate);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_diff_json_summary(&j, d->counts);
    kp_json_bool(&j, "fails_gate", d->gate);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
}

static int kp_diff_two_results(const kp_diff_args *args)
{
    kp_diff_results d;
    memset(&d, 0, sizeof d);
    kp_error err = {0};
    kprof_status st = KPROF_OK;
    for (int s = 0; s < 2 && st == KPROF_OK; s++) {
        d.r[s].arg = args->in[s];
        st = args->kind[s] == KP_DIFF_HISTORY ? kp_diff_history_load(&d.r[s], &err)
                                              : kp_bench_file_read(args->in[s], &d.r[s].file, &err);
    }
    if (st == KPROF_OK) {
        const char *da = kp_diff_result_device(&d.r[0]), *db = kp_diff_result_device(&d.r[1]);
        if (strcmp(da, db) != 0)
            fprintf(stderr,
                    "kprof: warning: A was measured on %s, B on %s: a difference may be "
                    "the device's\n",
                    da[0] ? da : "an unnamed device", db[0] ? db : "an unnamed device");
        kp_diff_results_kernels(&d);
        if (d.different[0] && !args->force)
            st = kp_error_set(&err, KPROF_INVALID,
                              "%s: different kernels; --force compares them anyway", d.different);
    }
    if (st == KPROF_OK) st = kp_diff_results_compute(&d, args, &err);
    if (st == KPROF_OK && args->json) {
        kp_str s = {0};
        kp_diff_json_results(&s, &d, args);
        st = kp_diff_put(&s, &err);
    } else if (st == KPROF_OK) {
        kp_diff_print_results(&d, args);
    }
    int gate = d.gate;
    for (int i = 0; i < d.npoints; i++)
        for (int s = 0; s < 2; s++)
            kp_bench_side_free(&d.points[i].side[s]);
    free(d.points);
    kp_diff_result_free(&d.r[0]);
    kp_diff_result_free(&d.r[1]);
    return kp_diff_exit(st, &err, gate);
}

/* ---- the command -------------------------------------------------------------------------- */

int kp_cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"by", required_argument, NULL, 'b'},
        {"threshold", required_argument, NULL, 'h'},
        {"fail-if-slower", required_argument, NULL, 'X'},
        {"json", no_argument, NULL, 'j'},
        {"raw", no_argument, NULL, 'r'},
        {"top", required_argument, NULL, 'n'},
        {"min-effect-us", required_argument, NULL, 'e'},
        {"min-share", required_argument, NULL, 's'},
        {"judge-host", no_argument, NULL, 'H'},
        {"run-allowance", required_argument, NULL, 'A'},
        {"force", no_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    kp_diff_args a;
    memset(&a, 0, sizeof a);
    a.by = KP_DIFF_BY_SHAPE;
    a.threshold = 0.01;
    a.fail_if_slower = -1;
    a.min_effect_ns = KP_DIFF_MIN_EFFECT_NS;
    a.min_share = KP_DIFF_MIN_SHARE;
    a.run_allowance = KP_DIFF_TRACE_RUN_ALLOWANCE;
    double x;
    int rc, c;
    uint64_t v;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': {
            int found = 0;
            for (int i = 0; i < 3; i++)
                if (strcmp(optarg, kp_diff_by_name[i]) == 0) {
                    a.by = (kp_diff_by)i;
                    found = 1;
                }
            if (!found)
                return kp_cli_usage_error("diff", "--by '%s': choose shape, name or path", optarg);
            a.by_given = 1;
            break;
        }
        case 'e':
            if (kp_cli_parse_double(optarg, &x) != 0 || !(x <= 1e9))
                return kp_cli_usage_error(
                    "diff", "--min-effect-us '%s': expected microseconds >= 0", optarg);
            a.min_effect_ns = x * 1e3;
            a.min_given = 1;
            break;
        case 's':
            if ((rc = kp_cli_parse_percent("diff", "--min-share", optarg, 0, 100, &a.min_share)) !=
                0)
                return rc;
            a.min_given = 1;
            break;
        case 'H':
            a.judge_host = 1;
            break;
        case 'A':
            if ((rc = kp_cli_parse_percent("diff", "--run-allowance", optarg, 0, 100,
                                           &a.run_allowance)) != 0)
                return rc;
            break;
        case 'f':
            a.force = 1;
            break;
        case 'h':
            if ((rc = kp_cli_parse_percent("diff", "--threshold", optarg, 0.01, 100,
                                           &a.threshold)) != 0)
                return rc;
            break;
        case 'X':
            if ((rc = kp_cli_parse_percent("diff", "--fail-if-slower", optarg, 0, 1000,
                                           &a.fail_if_slower)) != 0)
                return rc;
            break;
        case 'j':
            a.json = 1;
            break;
        case 'r':
            a.raw = 1;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > UINT32_MAX)
                return kp_cli_usage_error("diff", "--top '%s': expected a whole number >= 1",
                                          optarg);
            a.top = (size_t)v;
            break;
        case ':':
            return kp_cli_usage_error("diff", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("diff", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return kp_cli_usage_error("diff",
                                  argc - optind < 2
                                      ? "give two traces, two bench.json files or two "
                                        "history runs (A B)"
                                      : "unexpected argument '%s' (diff compares two)",
                                  argc - optind > 2 ? argv[optind + 2] : "");
    kp_error err = {0};
    for (int s = 0; s < 2; s++) {
        a.in[s] = argv[optind + s];
        kprof_status st = kp_diff_input_kind(a.in[s], &a.kind[s], &err);
        if (st != KPROF_OK) return kp_diff_exit(st, &err, 0);
    }
    int traces = (a.kind[0] == KP_DIFF_TRACE) + (a.kind[1] == KP_DIFF_TRACE);
    if (traces == 1)
        return kp_cli_usage_error("diff",
                                  "%s is %s and %s %s: kprof diff compares two traces, or two "
                                  "results (bench.json files or history runs)",
                                  a.in[0], kp_diff_input_name(a.kind[0]), a.in[1],
                                  kp_diff_input_name(a.kind[1]));
    if (!traces && (a.kind[0] == KP_DIFF_HISTORY) != (a.kind[1] == KP_DIFF_HISTORY))
        return kp_cli_usage_error("diff",
                                  "%s is %s and %s %s: compare a history run with a history run, "
                                  "a bench.json with a bench.json",
                                  a.in[0], kp_diff_input_name(a.kind[0]), a.in[1],
                                  kp_diff_input_name(a.kind[1]));
    if (!traces && (a.by_given || a.raw || a.top || a.judge_host || a.min_given))
        return kp_cli_usage_error("diff", "--by, --raw, --top, --judge-host, --min-effect-us and "
                                          "--min-share go with traces");
    if (traces && a.force)
        return kp_cli_usage_error("diff", "--force goes with results (bench.json files or history "
                                          "runs): traces of different programs always compare");
    return traces ? kp_diff_two_traces(&a) : kp_diff_two_results(&a);
}
