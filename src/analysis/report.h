/*
 * report.h — what `kprof report FILE` says of a trace, as data: the header's numbers (wall,
 * events, processes, what the trace lacks), the host, device and NVTX tables, launch latency and
 * queue waits, the submission-economics verdicts (analysis/trace_verdict.h, as `kprof diff`
 * computes them) and, for a distributed job's trace, its ranks, devices, collectives and
 * stragglers (analysis/trace_job.h). export/report_text.h, export/report_json.h print it; the
 * call tree and key averages (`--tree`, `--by`) are analysis/trace_aggregate.h's.
 *
 * THE TABLES are key averages of core/aggregate.h, the one aggregation `--by` and `--tree` read
 * too: every event is fed to a kp_aggregation in the report's one pass over the trace, and each
 * table is the by-name rows of its kinds, a row per name:
 *   host        API calls (polling and query calls left out unless KP_REPORT_RAW: they are
 *               then no node of the aggregation, as in `--by`)
 *   device      kernels, copies and fills (a kernel, a copy and a fill of one name: one row);
 *               in a job's trace the collective kernels (core/collective.h) are left out of it
 *   collectives a job's collective kernels (empty unless is_job)
 *   nvtx        ranges: NVTX ranges and libkprof's scopes
 * Rows are largest total first (ties in order of the name's id: qsort over rows in id order);
 * numbers are seconds. A table's metric columns (flops, bytes and their rates) are shown when
 * one of its events carried flops or a bytes metric (kp_report_table.metrics), and only read
 * from a trace that may hold metrics (kp_event_source_has_metrics).
 *
 * ONE PASS. kp_report_load reads the events once, in storage order, and feeds the aggregation,
 * the verdicts' timeline, the job, the launch pairs (each device operation with the earliest
 * call of its process and correlation, found by sorting both lists afterwards) and what the
 * text --trace's columns need. Memory: the aggregation's (per distinct call path), 24 bytes per
 * launching call and per device operation (the pairing), 8 bytes per device operation with a
 * queue time (the latency quantiles), and the verdicts' timeline.
 *
 * Errors: kprof_status + kp_error (first failure wins): the event source's (CORRUPT for a damaged
 * trace, IO), NOMEM.
 */
#ifndef KP_ANALYSIS_REPORT_H
#define KP_ANALYSIS_REPORT_H

#include "analysis/trace_job.h"
#include "analysis/trace_verdict.h"
#include "base/error.h"
#include "base/util.h"
#include "store/event_source.h"

#include <stddef.h>
#include <stdint.h>

/* A row's metrics: flops, and bytes (a bytes metric, else a copy's or a fill's size), summed
 * over its events that carry them, and the rates over those events' time (the table's: host
 * time for calls and ranges, device time for device work). */
typedef struct kp_report_metrics {
    int has_flops, has_bytes;
    double flops, bytes;
    int has_gflop_per_s, has_gb_per_s;
    double gflop_per_s, gb_per_s; /* 1e9 per second */
} kp_report_metrics;

typedef struct kp_report_row {
    char name[512];
    uint64_t calls;
    double total, mean, std, min, max; /* seconds; std: the sample standard deviation */
    kp_report_metrics m;
} kp_report_row;

typedef struct kp_report_table {
    kp_report_row *rows; /* largest total first */
    int n, cap;
    int metrics; /* an event of the table carried flops or a bytes metric: its metric columns
                    are shown (without, the table is what it was before metrics existed) */
} kp_report_table;

/* Launch latency or queue wait over the device operations that have it. */
typedef struct kp_report_latency {
    size_t n;                           /* operations with the number */
    double median, p95, mean, min, max; /* s */
} kp_report_latency;

/* Which columns of the device-side trace have any value (the text --trace shows those only);
 * found only under KP_REPORT_TRACE_COLUMNS. */
typedef struct kp_report_columns {
    int grid, regs, smem, local, size, global;
    int flops; /* a device operation carries flops */
} kp_report_columns;

/* A name's flag in kp_report.name_flags besides core/host_calls.h's: a collective kernel's. */
#define KP_REPORT_NAME_COLLECTIVE 0x80u

enum {
    KP_REPORT_RAW = 1u << 0,          /* polling and query calls in the host table (--raw) */
    KP_REPORT_TRACE_COLUMNS = 1u << 1 /* find kp_report.columns (the text --trace) */
};

typedef struct kp_report {
    kp_event_source *src; /* owned: kp_report_free closes it */
    const char *path;     /* as given (borrowed) */
    int raw;              /* KP_REPORT_RAW */
    double wall;          /* s */
    int64_t start_ns;     /* trace start, for relative times */
    int64_t end_ns;
    uint64_t events;
    /* Completeness: what the trace lacks, each 0 when it is whole. */
    uint64_t dropped;            /* records lost (processes.dropped) */
    uint64_t ops_without_call;   /* device operations whose launching call was not recorded */
    uint64_t calls_without_work; /* calls that put work on the device and succeeded, with no
                                    device operation of their correlation */
    int unclosed;                /* processes that ended without closing their record */
    kp_report_table host, device, nvtx;
    double host_total;        /* s: the host table's totals summed */
    const char *const *names; /* by string id (the source's), for the timeline and verdicts */
    size_t nnames;
    unsigned char *name_flags; /* by string id: KP_HOST_CALL_* (core/host_calls.h), and
                                  KP_REPORT_NAME_COLLECTIVE */
    kp_report_columns columns;
    /* The verdicts over the whole wall, the active window (first to last device operation) and
     * each top-level NVTX range name (analysis/trace_verdict.h: kprof diff's too). */
    kp_trace_verdicts v;
    int metrics;                 /* the trace may hold metrics: the pass read them */
    kp_report_latency launch;    /* device op start - its launching call's start */
    kp_report_latency queued;    /* start - queued_ns */
    kp_report_latency submitted; /* start - submitted_ns */
    char command[2048];
    int processes;
    kp_str notes;             /* the trace's notes, distinct, one per line */
    int has_nvtx, has_scopes; /* ranges of each domain seen (the table's title) */
    /* A job's trace (kp_trace_job_applies): its ranks, devices and stragglers, and its
     * collective kernels in a table of their own (not in `device`). */
    int is_job;
    kp_trace_job job;
    kp_report_table collectives;
} kp_report;

/* Read the trace src (taken: closed by kp_report_free, also on failure) into *r (zeroed here).
 * path: how the trace is named (JSON's "trace"; kept, not copied). flags: KP_REPORT_*. Free *r
 * with kp_report_free whatever this returns. */
kprof_status kp_report_load(kp_report *r, kp_event_source *src, const char *path, unsigned flags,
                            kp_error *err);

/* Frees what *r holds and closes its source; a zeroed one is fine. */
void kp_report_free(kp_report *r);

/* Whether a host call is left out of the tables and the trace rows (a polling call, no --raw). */
int kp_report_hidden(const kp_report *r, uint32_t name);

/* An event's name, "?" when the trace has none for it. */
const char *kp_report_name_of(const kp_report *r, const kp_event *e);

/* ---- the chronological trace (--trace) ------------------------------------------------------ */

/* The host calls (API calls and waits) in time order; the device operations in time order, each
 * with its launching call's start. */
extern const kp_event_filter kp_report_host_rows;
extern const kp_event_filter kp_report_device_rows;

/* One device row: what the store knows, and nothing it does not (unknown stays unknown). */
typedef struct kp_report_device_row {
    int has_id;
    int64_t id; /* correlation */
    int64_t start, end;
    int kind;
    int has_grid;              /* a kernel with its geometry */
    int runtime_groups;        /* the runtime chose the group size: groups and their size unknown */
    int64_t grid[3], block[3]; /* threadgroups, threads per group */
    int64_t global[3];         /* threads in all per dimension */
    int has_regs, has_smem, has_local, has_bytes;
    int64_t regs, smem, local, bytes;
    int has_launch, has_queued, has_submitted;
    int64_t launch_ns, queued_ns, submitted_ns; /* to the operation's start */
    int64_t device, stream;
    const char *name;
    int has_flops, has_metric_bytes; /* its metrics (a bytes metric stands for a copy's size) */
    double flops, metric_bytes;
    int has_reflection; /* an OpenCL kernel's reflection on its device (KP_EVENT_HAS_CL_...) */
    int64_t max_group, multiple, local_bytes, private_bytes;
} kp_report_device_row;

/* A device operation read with kp_report_device_rows, as a row. */
void kp_report_device_row_read(const kp_report *r, const kp_trace_event *ev,
                               kp_report_device_row *d);

/* "the 30 'step' ranges", "the 'train' range": a range verdict's window, for its sentence. */
void kp_report_range_window(const kp_range_verdict *rv, char *buf, size_t n);

/* The ranks' waits as a share of the time timed, at most 1. */
double kp_report_straggler_share(const kp_job_stragglers *g);

#endif
