/*
 * cmd_report.c — `kprof report FILE`: a trace the way Metal.jl's and CUDA.jl's @profile show
 * one — header, host table, device table, NVTX ranges, optionally the chronological trace — and
 * the submission-economics verdict; or the same as --json or --csv. `--tree` and `--by name|path`
 * show the call tree and the key averages instead (analysis/trace_aggregate.h feeds them,
 * export/calltree.h writes them), leaving polling calls out unless --raw, as the tables do.
 * A distributed job's trace (ranks, and more than one rank or device: analysis/trace_job.h) gets a
 * table per rank and per device, its collectives (NCCL/RCCL kernels) as a table apart from the
 * compute kernels, and the stragglers line; the same pass feeds them.
 */
#include "core/collective.h"
#include "core/event.h"
#include "core/format.h"
#include "core/host_calls.h"
#include "core/stats.h"
#include "core/verdict.h"
#include "export/csv.h"
#include "export/calltree.h"
#include "base/json.h"
#include "export/text.h"
#include "base/util.h"
#include "store/event_source.h"
#include "analysis/trace_aggregate.h"
#include "analysis/trace_job.h"
#include "analysis/trace_verdict.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row's metrics (store/event_source.h): flops, and bytes (a bytes metric, else a copy's or a
 * fill's size), summed over its events that carry them, and the rates over those events' time
 * (the table's: host time for calls and ranges, device time for device work). */
typedef struct kp_row_metrics {
    int has_flops, has_bytes;
    double flops, bytes;
    int has_gflop_per_s, has_gb_per_s;
    double gflop_per_s, gb_per_s; /* 1e9 per second */
} kp_row_metrics;

typedef struct kp_group {
    char name[512];
    uint64_t calls;
    double total, mean, std, min, max; /* seconds */
    kp_row_metrics m;
} kp_group;

typedef struct kp_group_list {
    kp_group *rows;
    int n, cap;
    int metrics; /* an event of the table carried flops or a bytes metric: its metric columns
                    are shown (without, the table is what it was before metrics existed) */
} kp_group_list;

/* Launch latency or queue wait over the device operations that have it. */
typedef struct kp_latency {
    size_t n;                           /* operations with the number */
    double median, p95, mean, min, max; /* s */
} kp_latency;

typedef struct kp_samples {
    double *v;
    size_t n, cap;
} kp_samples;

/* Which columns of the device-side trace have any value (the text --trace shows those only). */
typedef struct kp_trace_columns {
    int grid, regs, smem, local, size, global;
    int flops; /* a device operation carries flops */
} kp_trace_columns;

typedef struct kp_report {
    kp_event_source *src;
    const char *path;
    double wall;      /* s */
    int64_t start_ns; /* trace start, for relative times */
    int64_t end_ns;
    uint64_t events;
    /* Completeness: what the trace lacks, each 0 when it is whole. */
    uint64_t dropped;            /* records lost (processes.dropped) */
    uint64_t ops_without_call;   /* device operations whose launching call was not recorded */
    uint64_t calls_without_work; /* calls that put work on the device and succeeded, with no
                                    device operation of their correlation */
    int unclosed;                /* processes that ended without closing their record */
    int raw, trace, json, csv;
    kp_group_list host, device, nvtx;
    double host_total;
    const char *const *names; /* by string id (the source's), for the timeline and verdicts */
    size_t nnames;
    unsigned char *name_flags; /* by string id: KP_HOST_CALL_* (core/host_calls.h) */
    kp_trace_columns columns;  /* text --trace: found in the load's pass */
    /* The verdicts over the whole wall, the active window (first to last device operation) and
     * each top-level NVTX range name (analysis/trace_verdict.h: kprof diff's too). */
    kp_trace_verdicts v;
    int metrics;          /* the trace may hold metrics: the pass reads them (and copies' sizes) */
    kp_latency launch;    /* device op start - its launching call's start */
    kp_latency queued;    /* start - queued_ns */
    kp_latency submitted; /* start - submitted_ns */
    char command[2048];
    int processes;
    kp_str notes;             /* the trace's notes, distinct, one per line */
    int has_nvtx, has_scopes; /* ranges of each domain seen (the table's title) */
    /* A job's trace (kp_trace_job_applies): its ranks, devices and stragglers, and its
     * collective kernels in a table of their own (not in `device`). */
    int is_job;
    kp_trace_job job;
    kp_group_list collectives;
} kp_report;

/* A name's flag in kp_report.name_flags besides core/host_calls.h's: a collective kernel's. */
#define KP_NAME_COLLECTIVE 0x80u

/* Per-name accumulators of one table, indexed by string id. */
typedef struct kp_acc {
    uint64_t calls;
    double total, ss; /* ns, ns^2 */
    int64_t min, max;
    double flops, bytes;        /* metrics of the events that carry them */
    int64_t flops_ns, bytes_ns; /* ... and those events' durations */
    unsigned char has_flops, has_bytes;
} kp_acc;

/* An event's metrics into its row: flops, and bytes (its bytes metric, else a copy's or fill's
 * size). 1 when it carried a metric (flops or a bytes metric), which shows the table's metric
 * columns; a copy's size alone does not. */
static int kp_acc_metrics(kp_acc *a, const kp_trace_event *ev, int64_t d)
{
    const kp_event *e = &ev->e;
    int metric = 0;
    if (e->known & KP_EVENT_HAS_FLOPS) {
        a->flops += e->metrics.flops;
        a->flops_ns = kp_i64_add_sat(a->flops_ns, d);
        a->has_flops = 1;
        metric = 1;
    }
    if ((e->known & KP_EVENT_HAS_METRIC_BYTES) || (ev->has & KP_TRACE_HAS_BYTES)) {
        metric |= (e->known & KP_EVENT_HAS_METRIC_BYTES) != 0;
        a->bytes += e->known & KP_EVENT_HAS_METRIC_BYTES ? e->metrics.bytes : (double)e->bytes;
        a->bytes_ns = kp_i64_add_sat(a->bytes_ns, d);
        a->has_bytes = 1;
    }
    return metric;
}

static void kp_acc_add(kp_acc *a, int64_t d)
{
    if (a->calls == 0 || d < a->min) a->min = d;
    if (a->calls == 0 || d > a->max) a->max = d;
    a->calls++;
    a->total += (double)d;
    a->ss += (double)d * (double)d;
}

static int kp_cmp_group(const void *x, const void *y)
{
    const kp_group *a = x, *b = y;
    return (a->total < b->total) - (a->total > b->total);
}

/* The table of one class from its accumulators, largest total first. */
static kprof_status kp_groups_from(const kp_acc *acc, const char *const *names, size_t nnames,
                                   kp_group_list *out, kp_error *err)
{
    for (size_t id = 0; id < nnames; id++) {
        const kp_acc *a = &acc[id];
        if (!a->calls) continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 32;
            kp_group *g = realloc(out->rows, (size_t)out->cap * sizeof *g);
            if (!g) return kp_error_nomem(err);
            out->rows = g;
        }
        kp_group *g = &out->rows[out->n++];
        snprintf(g->name, sizeof g->name, "%s", names[id] ? names[id] : "?");
        g->calls = a->calls;
        g->total = a->total / 1e9;
        g->min = (double)a->min / 1e9;
        g->max = (double)a->max / 1e9;
        g->mean = g->total / (double)g->calls;
        double n = (double)a->calls;
        double var = n > 1 ? (a->ss - a->total * a->total / n) / (n - 1) : 0;
        g->std = var > 0 ? sqrt(var) / 1e9 : 0;
        memset(&g->m, 0, sizeof g->m);
        g->m.has_flops = a->has_flops;
        g->m.flops = a->flops;
        g->m.has_bytes = a->has_bytes;
        g->m.bytes = a->bytes;
        /* Flops per ns are GFLOP per s. */
        g->m.has_gflop_per_s = a->has_flops && a->flops_ns > 0;
        g->m.gflop_per_s = g->m.has_gflop_per_s ? a->flops / (double)a->flops_ns : 0;
        g->m.has_gb_per_s = a->has_bytes && a->bytes_ns > 0;
        g->m.gb_per_s = g->m.has_gb_per_s ? a->bytes / (double)a->bytes_ns : 0;
    }
    if (out->n > 1) qsort(out->rows, (size_t)out->n, sizeof *out->rows, kp_cmp_group);
    return KPROF_OK;
}

static int kp_samples_add(kp_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

/* Median and p95 (linear-interpolated), mean, min and max; sorts the samples. */
static void kp_latency_from(kp_samples *s, kp_latency *out)
{
    memset(out, 0, sizeof *out);
    if (!s->n) return;
    kp_sort_doubles(s->v, s->n);
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    out->n = s->n;
    out->median = kp_quantile_sorted(s->v, s->n, 0.5);
    out->p95 = kp_quantile_sorted(s->v, s->n, 0.95);
    out->mean = sum / (double)s->n;
    out->min = s->v[0];
    out->max = s->v[s->n - 1];
}

/* The launching calls and the device operations, each as (process row, correlation, start):
 * the report's one pass collects both, and pairs every operation with its call's earliest
 * start afterwards, by sorting both lists (a query per operation cost four times the rest of a
 * 300k-kernel report; a hash table, a cache miss per operation). Both lists are usually in
 * order already: the sort is then a check. */
typedef struct kp_corr_start {
    int64_t process, correlation, start;
} kp_corr_start;

typedef struct kp_corr_list {
    kp_corr_start *v;
    size_t n, cap;
} kp_corr_list;

static int kp_corr_add(kp_corr_list *l, int64_t process, int64_t correlation, int64_t start)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        kp_corr_start *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (kp_corr_start){process, correlation, start};
    return 0;
}

/* By process row, correlation, then start: a call's earliest start comes first. */
static int kp_cmp_corr(const void *x, const void *y)
{
    const kp_corr_start *a = x, *b = y;
    if (a->process != b->process) return a->process < b->process ? -1 : 1;
    if (a->correlation != b->correlation) return a->correlation < b->correlation ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

static void kp_corr_sort(kp_corr_list *l)
{
    for (size_t i = 1; i < l->n; i++) {
        if (kp_cmp_corr(&l->v[i - 1], &l->v[i]) > 0) {
            qsort(l->v, l->n, sizeof *l->v, kp_cmp_corr);
            return;
        }
    }
}

/* What the collectors and the merge had to say (CUPTI unusable, records that could not be
 * written, ...), each text once; and the processes' counts. */
static void kp_report_load_meta(kp_report *r)
{
    const kp_trace_meta *m = kp_event_source_meta(r->src);
    snprintf(r->command, sizeof r->command, "%s", m->command);
    for (size_t i = 0; i < m->nnotes; i++)
        kp_str_printf(&r->notes, "%s\n", m->notes[i]);
    size_t n;
    const kp_trace_process *p = kp_event_source_processes(r->src, &n);
    int64_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        dropped = kp_i64_add_sat(dropped, p[i].dropped);
        r->unclosed += !p[i].clean_exit;
    }
    r->dropped = (uint64_t)dropped;
    r->processes = (int)n;
}

/* What --trace's device columns show: the columns any device operation has a value for. */
static void kp_trace_columns_add(kp_trace_columns *c, const kp_trace_event *ev)
{
    const kp_event *e = &ev->e;
    if ((ev->has & KP_TRACE_HAS_BYTES) && e->bytes > 0) c->size = 1;
    if (!kp_event_kind_on_device(e->kind)) return;
    if (e->known & KP_EVENT_HAS_METRIC_BYTES) c->size = 1;
    if (e->known & KP_EVENT_HAS_FLOPS) c->flops = 1;
    if (e->kind != KP_EVENT_KERNEL) return;
    if (e->known & KP_EVENT_HAS_GEOMETRY) {
        c->grid = 1;
        c->global |= kp_event_runtime_groups(e);
    }
    if ((e->known & KP_EVENT_HAS_REGISTERS) && e->registers > 0) c->regs = 1;
    if ((e->known & KP_EVENT_HAS_SHARED) && (e->static_shared || e->dynamic_shared)) c->smem = 1;
    if ((e->known & KP_EVENT_HAS_LOCAL) && e->local_mem > 0) c->local = 1;
}

/* One pass over the events, in storage order: the three tables, the timeline the verdicts are
 * computed from, launch latency and queue waits (each device operation paired with its call
 * once every call has been seen), and what --trace's columns need. */
static kprof_status kp_report_load(kp_report *r, kp_error *err)
{
    kp_report_load_meta(r);
    kprof_status st = kp_trace_verdicts_begin(r->src, &r->v, err);
    if (st != KPROF_OK) return st;
    r->start_ns = r->v.start_ns;
    r->end_ns = r->v.end_ns;
    r->wall = (double)kp_ns_diff(r->end_ns, r->start_ns) / 1e9;

    size_t nnames;
    r->names = kp_event_source_strings(r->src, &nnames);
    r->nnames = nnames;
    kp_acc *host = calloc(nnames, sizeof *host);
    kp_acc *device = calloc(nnames, sizeof *device);
    kp_acc *nvtx = calloc(nnames, sizeof *nvtx);
    kp_acc *coll = NULL;
    unsigned char *flags = r->name_flags = calloc(nnames, 1);
    kp_samples launch = {0}, queued = {0}, submitted = {0};
    kp_corr_list calls = {0}, ops = {0};
    kp_event_iter *it = NULL;
    if (!host || !device || !nvtx || !flags) goto nomem;
    /* A job's tables come from this pass too. */
    if ((st = kp_trace_job_applies(r->src, &r->is_job, err)) != KPROF_OK) goto done;
    if (r->is_job) {
        size_t nprocs;
        const kp_trace_process *procs = kp_event_source_processes(r->src, &nprocs);
        coll = calloc(nnames, sizeof *coll);
        if (!coll || kp_trace_job_begin(&r->job, procs, nprocs, r->names, nnames, r->raw) != 0)
            goto nomem;
    }
    for (size_t id = 0; id < nnames; id++) {
        const char *text = r->names[id];
        if (!text) continue;
        flags[id] = (unsigned char)kp_host_call_flags(text);
        if (r->is_job && kp_collective_classify(text) != KP_COLLECTIVE_NONE)
            flags[id] |= KP_NAME_COLLECTIVE;
    }
    /* The text --trace's columns come from this pass too: no second one for them. */
    int trace_columns = r->trace && !r->json && !r->csv;
    uint64_t backwards = 0; /* events whose end precedes their start */
    /* Metrics, and the copies' sizes the bytes columns count, only from a trace that may hold
     * metrics: without, the pass reads what it always read. */
    r->metrics = kp_event_source_has_metrics(r->src);
    kp_event_filter all = {
        .fields = KP_EVENT_FIELD_DOMAIN | KP_EVENT_FIELD_QUEUE | KP_EVENT_FIELD_CALL |
                  (trace_columns ? KP_EVENT_FIELD_KERNEL | KP_EVENT_FIELD_PAYLOAD : 0) |
                  (r->metrics ? KP_EVENT_FIELD_METRICS | KP_EVENT_FIELD_PAYLOAD : 0) |
                  (r->is_job ? KP_TRACE_JOB_FIELDS : 0)};
    st = kp_event_iter_open(r->src, &all, &it, err);
    if (st != KPROF_OK) goto done;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        int kind = e->kind;
        uint32_t id = e->name; /* 0 (no name) beyond the table */
        int64_t s = e->start_ns;
        int64_t d = kp_ns_span(e->end_ns, s); /* 0 for one that ends before it starts */
        if (e->end_ns < s) backwards++;
        int64_t process = e->process;
        int has_corr = (e->known & KP_EVENT_HAS_CORRELATION) != 0;
        int64_t corr = (int64_t)e->correlation;
        r->events++;
        /* The verdicts' timeline: the same rules as kprof diff's (analysis/trace_verdict.h). */
        int fail = kp_trace_verdicts_add(&r->v, &ev, flags[id], r->raw);
        if (!fail && r->is_job) fail = kp_trace_job_add(&r->job, &ev, flags[id]);
        switch (kind) {
        case KP_EVENT_API: {
            int hidden = !r->raw && (flags[id] & KP_HOST_CALL_POLLING);
            int launched = (ev.has & KP_TRACE_LAUNCHED) != 0;
            if (!hidden) kp_acc_add(&host[id], d);
            if (!hidden && r->metrics && kp_acc_metrics(&host[id], &ev, d)) r->host.metrics = 1;
            if (!fail && launched && has_corr) fail = kp_corr_add(&calls, process, corr, s);
            /* A call that succeeded in putting work on the device, and none of it arrived. */
            if ((flags[id] & KP_HOST_CALL_LAUNCH) && !launched && (ev.has & KP_TRACE_HAS_STATUS) &&
                e->status == 0)
                r->calls_without_work++;
            break;
        }
        case KP_EVENT_KERNEL:
        case KP_EVENT_MEMCPY:
        case KP_EVENT_MEMSET: {
            /* A job's collectives go to their own table. */
            int collective = kind == KP_EVENT_KERNEL && (flags[id] & KP_NAME_COLLECTIVE);
            kp_acc *a = collective ? &coll[id] : &device[id];
            kp_group_list *table = collective ? &r->collectives : &r->device;
            kp_acc_add(a, d);
            if (r->metrics && kp_acc_metrics(a, &ev, d)) table->metrics = 1;
            if (trace_columns) kp_trace_columns_add(&r->columns, &ev);
            if (!fail && has_corr) {
                fail = kp_corr_add(&ops, process, corr, s);
            } else if (!fail) {
                r->ops_without_call++; /* no correlation: no call can be its own */
            }
            if (!fail && (e->known & KP_EVENT_HAS_QUEUED))
                fail = kp_samples_add(&queued, (double)kp_ns_diff(s, e->queued_ns) / 1e9);
            if (!fail && (e->known & KP_EVENT_HAS_SUBMITTED))
                fail = kp_samples_add(&submitted, (double)kp_ns_diff(s, e->submitted_ns) / 1e9);
            break;
        }
        case KP_EVENT_RANGE:
            if (e->domain == KP_DOMAIN_SCOPE)
                r->has_scopes = 1;
            else
                r->has_nvtx = 1;
            kp_acc_add(&nvtx[id], d);
            if (r->metrics && kp_acc_metrics(&nvtx[id], &ev, d)) r->nvtx.metrics = 1;
            break;
        default:
            if (trace_columns) kp_trace_columns_add(&r->columns, &ev); /* bytes of any kind */
            break;
        }
        if (fail) goto nomem;
    }
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st != KPROF_OK) goto done;
    if (backwards) { /* the damaged trace says so: a note (JSON's notes too) */
        char note[160];
        kp_str_printf(&r->notes, "%s in every table and row\n",
                      kp_format_ends_before_start(backwards, note, sizeof note));
    }
    st = kp_groups_from(host, r->names, nnames, &r->host, err);
    if (st == KPROF_OK) st = kp_groups_from(device, r->names, nnames, &r->device, err);
    if (st == KPROF_OK) st = kp_groups_from(nvtx, r->names, nnames, &r->nvtx, err);
    if (st == KPROF_OK && coll) st = kp_groups_from(coll, r->names, nnames, &r->collectives, err);
    if (st != KPROF_OK) goto done;
    if (r->is_job && kp_trace_job_finish(&r->job) != 0) goto nomem;
    for (int i = 0; i < r->host.n; i++)
        r->host_total += r->host.rows[i].total;
    /* Each device operation with the earliest call of its process and correlation. */
    kp_corr_sort(&calls);
    kp_corr_sort(&ops);
    for (size_t i = 0, c = 0; i < ops.n; i++) {
        const kp_corr_start *op = &ops.v[i];
        while (c < calls.n &&
               (calls.v[c].process < op->process ||
                (calls.v[c].process == op->process && calls.v[c].correlation < op->correlation)))
            c++;
        if (c == calls.n || calls.v[c].process != op->process ||
            calls.v[c].correlation != op->correlation)
            r->ops_without_call++;
        else if (kp_samples_add(&launch, (double)kp_ns_diff(op->start, calls.v[c].start) / 1e9) !=
                 0)
            goto nomem;
    }
    kp_latency_from(&launch, &r->launch);
    kp_latency_from(&queued, &r->queued);
    kp_latency_from(&submitted, &r->submitted);
    /* The verdicts: the whole wall, the active window, each top-level NVTX range name. */
    if (kp_trace_verdicts_finish(&r->v) != 0) goto nomem;
    goto done;
nomem:
    st = kp_error_nomem(err);
done:
    kp_event_iter_close(it, NULL);
    free(host);
    free(device);
    free(nvtx);
    free(coll);
    free(calls.v);
    free(ops.v);
    free(launch.v);
    free(queued.v);
    free(submitted.v);
    return st;
}

static void kp_report_free(kp_report *r)
{
    kp_str_free(&r->notes);
    free(r->host.rows);
    free(r->device.rows);
    free(r->nvtx.rows);
    free(r->collectives.rows);
    kp_trace_job_free(&r->job);
    kp_trace_verdicts_free(&r->v);
    free(r->name_flags);
    kp_event_source_close(r->src); /* after the timeline: it borrows the names */
}

/* ---- text ---------------------------------------------------------------------------------- */

/* The distribution cell: mean ± std (min ‥ max), the unit on the mean only. */
static void kp_dist(const kp_group *g, char *buf, size_t n)
{
    char mean[32];
    kp_format_duration(g->mean, mean, sizeof mean);
    double scale = 1;
    const char *u = strchr(mean, ' ');
    if (u && strcmp(u + 1, "ns") == 0)
        scale = 1e9;
    else if (u && strcmp(u + 1, "µs") == 0)
        scale = 1e6;
    else if (u && strcmp(u + 1, "ms") == 0)
        scale = 1e3;
    char sd[24], mn[24], mx[24];
    kp_format_2dp(g->std * scale, sd, sizeof sd);
    kp_format_2dp(g->min * scale, mn, sizeof mn);
    kp_format_2dp(g->max * scale, mx, sizeof mx);
    snprintf(buf, n, "%9s ± %-6s (%6s ‥ %s)", mean, sd, mn, mx);
}

/* Highlight thresholds over a table's totals: p75 and p95, linear-interpolated. */
static void kp_thresholds(const kp_group_list *l, double *p75, double *p95)
{
    *p75 = *p95 = INFINITY;
    int n = 0;
    size_t count = l->n > 0 ? (size_t)l->n : 1;
    double *v = malloc(count * sizeof *v);
    if (!v) return;
    for (int i = 0; i < l->n; i++)
        if (l->rows[i].total >= 1e-8) v[n++] = l->rows[i].total;
    if (n >= 4) {
        kp_sort_doubles(v, (size_t)n);
        *p75 = kp_quantile_sorted(v, (size_t)n, 0.75);
        *p95 = kp_quantile_sorted(v, (size_t)n, 0.95);
    }
    free(v);
}

/* A metric cell: the value as text, or "-" where the row has none. */
static const char *kp_metric_cell(int has, const char *text)
{
    return has ? text : "-";
}

static void kp_print_table(const kp_report *r, const kp_group_list *l)
{
    FILE *o = stdout;
    int dist = 0, flops = 0, bytes = 0;
    for (int i = 0; i < l->n; i++) {
        dist |= l->rows[i].calls > 1;
        flops |= l->metrics && l->rows[i].m.has_flops;
        bytes |= l->metrics && l->rows[i].m.has_bytes;
    }
    double p75, p95;
    kp_thresholds(l, &p75, &p95);
    /* The metric columns before the distribution, whose cells are not all one width. */
    printf("  %9s  %10s  %8s  ", "Time (%)", "Total time", "Calls");
    if (flops) printf("%10s  %8s  ", "Flops", "GFLOP/s");
    if (bytes) printf("%10s  %8s  ", "Bytes", "GB/s");
    if (dist) printf("%-38s  ", "Time distribution");
    printf("Name\n");
    for (int i = 0; i < l->n; i++) {
        const kp_group *g = &l->rows[i];
        const char *colour = g->total >= p95   ? kp_text_red(o)
                             : g->total >= p75 ? kp_text_yellow(o)
                                               : "";
        const char *reset = *colour ? kp_text_reset(o) : "";
        const char *bold = g->total >= p75 ? kp_text_bold(o) : "";
        char pct[32], tot[32], d[160] = "";
        snprintf(pct, sizeof pct, "%.2f%%", r->wall > 0 ? 100 * g->total / r->wall : 0);
        kp_format_duration(g->total, tot, sizeof tot);
        if (dist) {
            if (g->calls > 1)
                kp_dist(g, d, sizeof d);
            else
                snprintf(d, sizeof d, "%s", "");
        }
        printf("  %s%9s  %10s%s  %8llu  ", colour, pct, tot, reset, (unsigned long long)g->calls);
        char value[48], rate[48];
        if (flops)
            printf("%10s  %8s  ",
                   kp_metric_cell(g->m.has_flops, kp_format_si(g->m.flops, value, sizeof value)),
                   kp_metric_cell(g->m.has_gflop_per_s,
                                  kp_format_rate(g->m.gflop_per_s, rate, sizeof rate)));
        if (bytes)
            printf("%10s  %8s  ",
                   kp_metric_cell(
                       g->m.has_bytes,
                       kp_format_bytes(g->m.bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)g->m.bytes,
                                       value, sizeof value)),
                   kp_metric_cell(g->m.has_gb_per_s,
                                  kp_format_rate(g->m.gb_per_s, rate, sizeof rate)));
        if (dist) printf("%-38s  ", d);
        printf("%s%s%s\n", bold, g->name, *bold ? kp_text_reset(o) : "");
    }
}

/* ---- the chronological trace (--trace) --------------------------------------------------- */

/* One device row: what the store knows, and nothing it does not (unknown stays unknown). */
typedef struct kp_device_row {
    int has_id;
    int64_t id; /* correlation */
    int64_t start, end;
    int kind;
    int has_grid;              /* a kernel with its geometry */
    int runtime_groups;        /* the runtime chose the group size: groups and their size unknown */
    int64_t grid[3], block[3]; /* threadgroups, threads per group */
    int64_t global[3];         /* threads in all */
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
} kp_device_row;

/* The device operations in time order, each with its launching call's start. */
static const kp_event_filter kp_device_rows = {
    .kind_flags = KP_EVENT_F_DEVICE,
    .order = KP_EVENT_ORDER_START,
    .fields = KP_EVENT_FIELD_STREAM | KP_EVENT_FIELD_QUEUE | KP_EVENT_FIELD_KERNEL |
              KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_LAUNCH | KP_EVENT_FIELD_METRICS};

/* The host calls (API calls and waits) in time order. */
static const kp_event_filter kp_host_rows = {.kind_flags = KP_EVENT_F_HOST_CALL,
                                             .order = KP_EVENT_ORDER_START,
                                             .fields = KP_EVENT_FIELD_PID | KP_EVENT_FIELD_METRICS};

static int64_t kp_i64_of(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* An event's name, "?" when the trace has none for it. */
static const char *kp_name_of(const kp_report *r, const kp_event *e)
{
    const char *name = kp_event_source_string(r->src, e->name, NULL);
    return name ? name : "?";
}

static void kp_device_row_read(const kp_report *r, const kp_trace_event *ev, kp_device_row *d)
{
    const kp_event *e = &ev->e;
    memset(d, 0, sizeof *d);
    d->has_id = (e->known & KP_EVENT_HAS_CORRELATION) != 0;
    d->id = (int64_t)e->correlation;
    d->start = e->start_ns;
    d->end = e->end_ns;
    d->kind = e->kind;
    d->has_grid = e->kind == KP_EVENT_KERNEL && (e->known & KP_EVENT_HAS_GEOMETRY);
    if (d->has_grid) {
        uint64_t groups[3];
        kp_event_groups(e, groups);
        for (int i = 0; i < 3; i++) {
            d->grid[i] = kp_i64_of(groups[i]);
            d->block[i] = e->group[i];
            d->global[i] = kp_i64_of(e->grid[i]);
        }
        d->runtime_groups = kp_event_runtime_groups(e);
    }
    d->has_regs = (e->known & KP_EVENT_HAS_REGISTERS) != 0;
    d->regs = e->registers;
    d->has_smem = (e->known & KP_EVENT_HAS_SHARED) != 0;
    d->smem = kp_i64_add_sat(kp_i64_of(e->static_shared), kp_i64_of(e->dynamic_shared));
    d->has_local = (e->known & KP_EVENT_HAS_LOCAL) != 0;
    d->local = e->local_mem;
    d->has_bytes = (ev->has & KP_TRACE_HAS_BYTES) != 0;
    d->bytes = kp_i64_of(e->bytes);
    d->name = kp_name_of(r, e);
    d->device = e->device;
    d->stream = e->stream;
    d->has_queued = (e->known & KP_EVENT_HAS_QUEUED) != 0;
    d->queued_ns = kp_ns_diff(d->start, e->queued_ns);
    d->has_submitted = (e->known & KP_EVENT_HAS_SUBMITTED) != 0;
    d->submitted_ns = kp_ns_diff(d->start, e->submitted_ns);
    d->has_launch = (ev->has & KP_TRACE_HAS_LAUNCH) != 0;
    d->launch_ns = kp_ns_diff(d->start, ev->launch_start_ns);
    d->has_flops = (e->known & KP_EVENT_HAS_FLOPS) != 0;
    d->flops = e->metrics.flops;
    d->has_metric_bytes = (e->known & KP_EVENT_HAS_METRIC_BYTES) != 0;
    d->metric_bytes = e->metrics.bytes;
    d->has_reflection = (e->known & KP_EVENT_HAS_CL_REFLECTION) != 0;
    d->max_group = e->max_threads_per_group;
    d->multiple = e->group_multiple;
    d->local_bytes = kp_i64_of(e->cl_local_mem);
    d->private_bytes = kp_i64_of(e->cl_private_mem);
}

/* The kernels' reflection lines under the device-side trace: each (device, kernel) once, in the
 * order first seen, as `kprof run` prints it. */
typedef struct kp_reflection_seen {
    int64_t device;
    const char *name;
} kp_reflection_seen;

static void kp_print_reflection(const kp_device_row *d, kp_reflection_seen **seen, size_t *n,
                                size_t *cap, kp_str *lines)
{
    if (!d->has_reflection) return;
    for (size_t i = 0; i < *n; i++)
        if ((*seen)[i].device == d->device && strcmp((*seen)[i].name, d->name) == 0) return;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        kp_reflection_seen *v = realloc(*seen, c * sizeof *v);
        if (!v) return;
        *seen = v;
        *cap = c;
    }
    (*seen)[(*n)++] = (kp_reflection_seen){d->device, d->name};
    char local[32], priv[32];
    kp_str_printf_escaped(lines, "  %s", d->name);
    kp_str_printf(lines,
                  " on device %lld: max tg %lld · preferred multiple %lld · local mem %s static · "
                  "private mem %s\n",
                  (long long)d->device, (long long)d->max_group, (long long)d->multiple,
                  kp_format_bytes((uint64_t)d->local_bytes, local, sizeof local),
                  kp_format_bytes((uint64_t)d->private_bytes, priv, sizeof priv));
}

/* Dims without trailing 1s: "256", "64x8". */
static void kp_dims(const int64_t v[3], char *buf, size_t n)
{
    if (v[2] > 1)
        snprintf(buf, n, "%lldx%lldx%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    else if (v[1] > 1)
        snprintf(buf, n, "%lldx%lld", (long long)v[0], (long long)v[1]);
    else
        snprintf(buf, n, "%lld", (long long)v[0]);
}

/* Threads in all per dimension: the work-items where the runtime chose the groups, else groups
 * times threads per group. */
static void kp_global_size(const kp_device_row *d, int64_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = d->global[i];
}

static const char *kp_dur_or_dash(int has, int64_t ns, char *buf, size_t n)
{
    if (!has) return "-";
    return kp_format_duration((double)ns / 1e9, buf, n);
}

static kprof_status kp_print_trace(kp_report *r, kp_error *err)
{
    /* Host side. */
    kp_event_iter *it = NULL;
    kp_trace_event ev;
    kprof_status status = kp_event_iter_open(r->src, &kp_host_rows, &it, err);
    if (status != KPROF_OK) return status;
    printf("\nHost-side trace:\n  %8s  %12s  %10s  %8s  Name\n", "ID", "Start", "Time", "Thread");
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        if (!r->raw && (r->name_flags[e->name] & KP_HOST_CALL_POLLING)) continue;
        char id[32] = "-", st[32], du[32];
        if (e->known & KP_EVENT_HAS_CORRELATION)
            snprintf(id, sizeof id, "%lld", (long long)e->correlation);
        kp_format_duration((double)kp_ns_diff(e->start_ns, r->start_ns) / 1e9, st, sizeof st);
        kp_format_duration((double)kp_ns_span(e->end_ns, e->start_ns) / 1e9, du, sizeof du);
        printf("  %8s  %12s  %10s  %8lld  %s\n", id, st, du, (long long)e->tid, kp_name_of(r, e));
    }
    status = kp_event_iter_close(it, err);
    if (status != KPROF_OK) return status;
    /* Device side, with the columns that have any value (found by the load's pass). */
    int has_grid = r->columns.grid, has_regs = r->columns.regs, has_smem = r->columns.smem;
    int has_local = r->columns.local, has_size = r->columns.size, has_global = r->columns.global;
    int has_launch = r->launch.n > 0, has_queued = r->queued.n > 0;
    int has_submitted = r->submitted.n > 0;
    status = kp_event_iter_open(r->src, &kp_device_rows, &it, err);
    if (status != KPROF_OK) return status;
    printf("\nDevice-side trace:\n  %8s  %12s  %10s", "ID", "Start", "Time");
    if (has_grid) printf("  %12s  %10s", "Threadgroups", "Threads");
    if (has_global) printf("  %12s", "Global size");
    if (has_regs) printf("  %5s", "Regs");
    if (has_smem) printf("  %10s", "Shared mem");
    if (has_local) printf("  %10s", "Local mem");
    if (has_size) printf("  %10s  %12s", "Size", "Throughput");
    if (r->columns.flops) printf("  %10s  %12s", "Flops", "GFLOP/s");
    if (has_launch) printf("  %10s", "Launch lat");
    if (has_queued) printf("  %10s", "Queue wait");
    if (has_submitted) printf("  %11s", "Submit wait");
    printf("  Name\n");
    kp_reflection_seen *seen = NULL;
    size_t nseen = 0, seen_cap = 0;
    kp_str reflection = {0};
    while (kp_event_iter_next(it, &ev)) {
        kp_device_row d;
        kp_device_row_read(r, &ev, &d);
        kp_print_reflection(&d, &seen, &nseen, &seen_cap, &reflection);
        char id[32] = "-", st[32], du[32], grid[48], block[48], buf[48];
        if (d.has_id) snprintf(id, sizeof id, "%lld", (long long)d.id);
        double dur = (double)kp_ns_span(d.end, d.start) / 1e9;
        kp_format_duration((double)kp_ns_diff(d.start, r->start_ns) / 1e9, st, sizeof st);
        kp_format_duration(dur, du, sizeof du);
        printf("  %8s  %12s  %10s", id, st, du);
        if (has_grid) {
            /* Where the runtime chose the group size, neither the groups nor their size is
             * known: "-" (the work-items are under Global size). */
            if (d.has_grid && !d.runtime_groups) {
                kp_dims(d.grid, grid, sizeof grid);
                kp_dims(d.block, block, sizeof block);
            } else {
                snprintf(grid, sizeof grid, "-");
                snprintf(block, sizeof block, "-");
            }
            printf("  %12s  %10s", grid, block);
        }
        if (has_global) {
            int64_t g[3];
            kp_global_size(&d, g);
            if (d.has_grid)
                kp_dims(g, grid, sizeof grid);
            else
                snprintf(grid, sizeof grid, "-");
            printf("  %12s", grid);
        }
        if (has_regs) {
            if (!d.has_regs)
                printf("  %5s", "-");
            else
                printf("  %5lld", (long long)d.regs);
        }
        if (has_smem)
            printf("  %10s", d.has_smem ? kp_format_bytes((uint64_t)d.smem, buf, sizeof buf) : "-");
        if (has_local)
            printf("  %10s",
                   d.has_local ? kp_format_bytes((uint64_t)d.local, buf, sizeof buf) : "-");
        if (has_size && d.has_metric_bytes) { /* what it moved, by its metric */
            char tp[48];
            snprintf(tp, sizeof tp, "%.2f GB/s", dur > 0 ? d.metric_bytes / dur / 1e9 : 0);
            printf("  %10s  %12s",
                   kp_format_bytes(d.metric_bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)d.metric_bytes,
                                   buf, sizeof buf),
                   tp);
        } else if (has_size) {
            if (!d.has_bytes) {
                printf("  %10s  %12s", "-", "-");
            } else {
                char tp[48];
                double gbs = dur > 0 ? (double)d.bytes / dur / 1e9 : 0;
                snprintf(tp, sizeof tp, "%.2f GB/s", gbs);
                printf("  %10s  %12s", kp_format_bytes((uint64_t)d.bytes, buf, sizeof buf), tp);
            }
        }
        if (r->columns.flops) {
            char tp[48];
            snprintf(tp, sizeof tp, "%s", "-");
            if (d.has_flops && dur > 0) kp_format_rate(d.flops / dur / 1e9, tp, sizeof tp);
            printf("  %10s  %12s", d.has_flops ? kp_format_si(d.flops, buf, sizeof buf) : "-", tp);
        }
        if (has_launch)
            printf("  %10s", kp_dur_or_dash(d.has_launch, d.launch_ns, buf, sizeof buf));
        if (has_queued)
            printf("  %10s", kp_dur_or_dash(d.has_queued, d.queued_ns, buf, sizeof buf));
        if (has_submitted)
            printf("  %11s", kp_dur_or_dash(d.has_submitted, d.submitted_ns, buf, sizeof buf));
        printf("  %s\n", d.name);
    }
    if (reflection.data)
        printf("\nKernel reflection (OpenCL: queried once per kernel and device, at its first "
               "launch):\n%s",
               reflection.data);
    kp_str_free(&reflection);
    free(seen);
    return kp_event_iter_close(it, err);
}

static void kp_print_latency(const kp_report *r)
{
    const struct {
        const char *what;
        const kp_latency *l;
    } parts[] = {{"launch call to start", &r->launch},
                 {"queued to start", &r->queued},
                 {"submitted to start", &r->submitted}};
    int any = 0;
    for (int i = 0; i < 3; i++) {
        const kp_latency *l = parts[i].l;
        if (!l->n) continue;
        char m[32], p[32];
        printf("%s%s median %s, p95 %s", any ? "; " : "\nLaunch latency: ", parts[i].what,
               kp_format_duration(l->median, m, sizeof m), kp_format_duration(l->p95, p, sizeof p));
        if (!any)
            printf(" (%zu device operations)", l->n);
        else if (l->n != r->launch.n)
            printf(" (%zu)", l->n);
        any = 1;
    }
    if (any) printf("\n");
}

/* ---- a job: ranks, devices, stragglers ------------------------------------------------------ */

/* "3", "-" for the processes without a rank (or an unknown number). */
static const char *kp_rank_text(int rank, char *buf, size_t n)
{
    if (rank < 0) return "-";
    snprintf(buf, n, "%d", rank);
    return buf;
}

/* "4242, 4243 +2": a few pids, then how many more. */
static void kp_pids_text(const kp_job_rank *k, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k->npids && i < 3; i++) {
        int w = snprintf(buf + used, n - used, "%s%lld", i ? "," : "", (long long)k->pids[i]);
        if (w < 0 || (size_t)w >= n - used) return;
        used += (size_t)w;
    }
    if (k->npids > 3) snprintf(buf + used, n - used, " +%zu", k->npids - 3);
    if (!k->npids) snprintf(buf, n, "-");
}

/* "0,1"; "-" for none. */
static void kp_u32_list_text(const uint32_t *v, size_t count, char *buf, size_t n)
{
    size_t used = 0;
    snprintf(buf, n, "-");
    for (size_t i = 0; i < count; i++) {
        int w = snprintf(buf + used, n - used, "%s%u", i ? "," : "", (unsigned)v[i]);
        if (w < 0 || (size_t)w >= n - used) return;
        used += (size_t)w;
    }
}

static void kp_ranks_text(const int *v, size_t count, char *buf, size_t n)
{
    size_t used = 0;
    char one[16];
    snprintf(buf, n, "-");
    for (size_t i = 0; i < count; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? "," : "",
                         kp_rank_text(v[i], one, sizeof one));
        if (w < 0 || (size_t)w >= n - used) return;
        used += (size_t)w;
    }
}

/* The display width of UTF-8 text (code points; kprof's own text has no wide characters). */
static int kp_text_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

#define KP_HOST_WIDTH 32 /* characters of a host's name (and of its tag) in the tables */
#define KP_HOST_TEXT  (2 * 4 * KP_HOST_WIDTH + 16) /* bytes kp_host_text may write */

/* text from a file as the tables show it: escaped as `kprof notes` prints text
 * (kp_str_append_escaped: control characters and bytes that are not UTF-8 as \xNN, so what a
 * file holds cannot move the terminal's cursor), cut to KP_HOST_WIDTH characters with "…". */
static void kp_cell_append(kp_str *out, const char *text)
{
    kp_str s = {0};
    kp_str_append_escaped(&s, text, strlen(text));
    const char *t = s.data ? s.data : "";
    if (kp_text_width(t) <= KP_HOST_WIDTH) {
        kp_str_append(out, t);
    } else {
        size_t bytes = 0;
        for (int chars = 0; chars < KP_HOST_WIDTH - 1; chars++) /* whole characters */
            do
                bytes++;
            while (((unsigned char)t[bytes] & 0xc0) == 0x80);
        kp_str_append_n(out, t, bytes);
        kp_str_append(out, "…");
    }
    kp_str_free(&s);
}

/* A host as the tables show it: its name (kp_cell_append), with its tag where hosts share the
 * name ("node1 (boot 1a2b3c4d)", analysis/trace_job.h); "-" for none. buf: KP_HOST_TEXT bytes. */
static void kp_host_text(const char *host, const char *tag, char *buf, size_t n)
{
    kp_str s = {0};
    if (host && *host) kp_cell_append(&s, host);
    if (tag && *tag) {
        kp_str_append(&s, s.len ? " (" : "");
        kp_cell_append(&s, tag);
        kp_str_append(&s, s.len && host && *host ? ")" : "");
    }
    snprintf(buf, n, "%s", s.data && *s.data ? s.data : "-");
    kp_str_free(&s);
}

/* A device's label: "GPU 0" ("device 0" where the program used OpenCL alone), or "HOST · GPU 0"
 * when the job ran on more than one host (the host as kp_host_text shows it). */
static void kp_device_label(const kp_report *r, const kp_trace_job *job, const kp_job_device *d,
                            char *buf, size_t n)
{
    char host[KP_HOST_TEXT];
    const char *word = kp_verdict_device_word(r->v.api, 0);
    kp_host_text(d->host, d->host_tag, host, sizeof host);
    if (job->nhosts > 1 && (*d->host || *d->host_tag))
        snprintf(buf, n, "%s · %s %u", host, word, (unsigned)d->device);
    else
        snprintf(buf, n, "%s %u", word, (unsigned)d->device);
}

/* What a step is, for the stragglers line: "'step' steps", "all-reduce steps". */
static void kp_steps_text(const kp_report *r, char *buf, size_t n)
{
    const kp_job_stragglers *g = &r->job.stragglers;
    if (g->steps_by == KP_JOB_STEPS_RANGE) {
        const char *name = kp_event_source_string(r->src, g->range, NULL);
        snprintf(buf, n, "'%s' steps", name ? name : "?");
    } else if (g->op != KP_COLLECTIVE_NONE && g->op != KP_COLLECTIVE_OTHER) {
        snprintf(buf, n, "%s steps", kp_collective_op_name(g->op));
    } else {
        snprintf(buf, n, "collective steps");
    }
}

static double kp_ns_s(int64_t ns)
{
    return (double)ns / 1e9;
}

/* The ranks' waits as a share of the time timed: at most 1 (a rank waits at a step no longer
 * than it spent in it), guarded all the same. */
static double kp_straggler_share(const kp_job_stragglers *g)
{
    if (g->timed_total_ns <= 0) return 0;
    double share = (double)g->wait_total_ns / (double)g->timed_total_ns;
    return share < 1 ? share : 1;
}

static void kp_print_stragglers(const kp_report *r)
{
    const kp_trace_job *job = &r->job;
    const kp_job_stragglers *g = &job->stragglers;
    char a[32], b[32], what[600];
    if (job->nranked < 2) return;
    if (g->steps_by == KP_JOB_STEPS_NONE) {
        printf("\nStragglers: none measured (no NVTX range name occurs twice on every rank, and "
               "no collective kernel was recorded on a rank)\n");
        return;
    }
    kp_steps_text(r, what, sizeof what);
    if (!g->nsteps && g->apart) { /* what the steps are: ranges, or collective kernels */
        const char *range = g->steps_by == KP_JOB_STEPS_RANGE
                                ? kp_event_source_string(r->src, g->range, NULL)
                                : NULL;
        if (g->steps_by == KP_JOB_STEPS_RANGE)
            snprintf(what, sizeof what, "'%s' ranges", range ? range : "?");
        else
            snprintf(what, sizeof what, "%s kernels",
                     g->op != KP_COLLECTIVE_NONE && g->op != KP_COLLECTIVE_OTHER
                         ? kp_collective_op_name(g->op)
                         : "collective");
        printf("\nStragglers: not judged: the ranks' %s never overlap in time (the ranks ran one "
               "after another)\n",
               what);
        return;
    }
    if (!g->nsteps) {
        printf("\nStragglers: none measured: no %s on every rank (%llu skipped)\n", what,
               (unsigned long long)(g->skipped + g->unmatched));
        return;
    }
    /* Ranks on hosts that kprof merge put on one time base compare starts read on different
     * clocks: say how far apart those may still be, and when the median is within it. */
    int64_t unsure = kp_event_source_meta(r->src)->clock_uncertainty_ns;
    char within[64] = "", across[96] = "", u[32];
    if (unsure > 0) {
        snprintf(across, sizeof across, " ± %s across hosts",
                 kp_format_duration(kp_ns_s(unsure), u, sizeof u));
        if (g->wait_median_ns < unsure)
            snprintf(within, sizeof within, " (within the hosts' clock uncertainty)");
    } else if (unsure < 0) {
        snprintf(across, sizeof across, " (the hosts' clock offsets are unknown)");
    }
    printf("\nStragglers: rank %d arrived last at %llu of %zu %s; the other ranks waited %s "
           "median%s, %s max per step%s (%.1f%% of the %s time)",
           g->last_rank, (unsigned long long)g->last_count, g->nsteps, what,
           kp_format_duration(kp_ns_s(g->wait_median_ns), a, sizeof a), within,
           kp_format_duration(kp_ns_s(g->wait_max_ns), b, sizeof b), across,
           kp_straggler_share(g) * 100.0, g->timed_by_collectives ? "collectives'" : "ranges'");
    if (g->skipped)
        printf("; %llu step%s skipped (not on every rank)", (unsigned long long)g->skipped,
               g->skipped == 1 ? "" : "s");
    if (g->unmatched)
        printf("; %llu step%s skipped (their collectives did not pair up across the ranks)",
               (unsigned long long)g->unmatched, g->unmatched == 1 ? "" : "s");
    if (g->apart)
        printf("; %llu step%s not judged (the ranks were never in %s at one time)",
               (unsigned long long)g->apart, g->apart == 1 ? "" : "s",
               g->apart == 1 ? "it" : "them");
    printf("\n");
    if (g->steps_by == KP_JOB_STEPS_RANGE && g->timed_by_collectives)
        printf("  (a rank arrives when its first collective kernel of the step starts; it waits "
               "at each collective until the last rank's starts, or its own kernel ends)\n");
}

static void kp_print_job(const kp_report *r)
{
    const kp_trace_job *job = &r->job;
    char a[32], b[32], c[32], d[32], e[32], rank[16], local[16], pids[64], gpus[64];
    int dash = job->nranks > job->nranked;
    printf("\nRanks: %zu rank%s%s%s%s on %zu host%s%s\n", job->nranked,
           job->nranked == 1 ? "" : "s", *job->launcher ? " (" : "", job->launcher,
           *job->launcher ? ")" : "", job->nhosts ? job->nhosts : 1, job->nhosts > 1 ? "s" : "",
           dash ? "; \"-\" is the processes without a rank" : "");
    int hw = 4;
    char host[KP_HOST_TEXT];
    for (size_t i = 0; i < job->nranks; i++) {
        kp_host_text(job->ranks[i].host, job->ranks[i].host_tag, host, sizeof host);
        if (kp_text_width(host) > hw) hw = kp_text_width(host);
    }
    printf("  %5s  %5s  %-*s  %-16s  %-6s  %8s  %11s  %10s  %14s  %10s  %10s\n", "Rank", "Local",
           hw, "Host", "PIDs", "GPUs", "Kernels", "Collectives", "GPU busy", "In collectives",
           "Host API", "Span");
    for (size_t i = 0; i < job->nranks; i++) {
        const kp_job_rank *k = &job->ranks[i];
        kp_pids_text(k, pids, sizeof pids);
        kp_u32_list_text(k->gpus, k->ngpus, gpus, sizeof gpus);
        kp_host_text(k->host, k->host_tag, host, sizeof host);
        printf("  %5s  %5s  %s%*s  %-16s  %-6s  %8llu  %11llu  %10s  %14s  %10s  %10s\n",
               kp_rank_text(k->rank, rank, sizeof rank),
               kp_rank_text(k->local_rank, local, sizeof local), host, hw - kp_text_width(host), "",
               pids, gpus, (unsigned long long)k->kernels, (unsigned long long)k->collectives,
               kp_format_duration(kp_ns_s(k->gpu_busy_ns), a, sizeof a),
               kp_format_duration(kp_ns_s(k->collective_ns), b, sizeof b),
               kp_format_duration(kp_ns_s(k->host_api_ns), c, sizeof c),
               kp_format_duration(kp_ns_s(kp_ns_diff(k->end_ns, k->start_ns)), d, sizeof d));
    }
    printf("\nDevices (numbered as each process saw them: a CUDA_VISIBLE_DEVICES remapping per "
           "rank is not undone):\n");
    int lw = 6;
    for (size_t i = 0; i < job->ndevices; i++) {
        char label[KP_HOST_TEXT + 32];
        kp_device_label(r, job, &job->devices[i], label, sizeof label);
        if (kp_text_width(label) > lw) lw = kp_text_width(label);
    }
    printf("  %-*s  %10s  %7s  %8s  %11s  %12s  %14s  Ranks\n", lw, "Device", "GPU busy", "Busy %",
           "Kernels", "Collectives", "Copies/fills", "In collectives");
    for (size_t i = 0; i < job->ndevices; i++) {
        const kp_job_device *dv = &job->devices[i];
        char label[KP_HOST_TEXT + 32], ranks[256], pct[32];
        kp_device_label(r, job, dv, label, sizeof label);
        kp_ranks_text(dv->ranks, dv->nranks, ranks, sizeof ranks);
        snprintf(pct, sizeof pct, "%.2f%%",
                 r->wall > 0 ? 100 * kp_ns_s(dv->gpu_busy_ns) / r->wall : 0);
        printf("  %s%*s  %10s  %7s  %8llu  %11llu  %12llu  %14s  %s\n", label,
               lw - kp_text_width(label), "",
               kp_format_duration(kp_ns_s(dv->gpu_busy_ns), e, sizeof e), pct,
               (unsigned long long)dv->kernels, (unsigned long long)dv->collectives,
               (unsigned long long)(dv->copies + dv->fills),
               kp_format_duration(kp_ns_s(dv->collective_ns), a, sizeof a), ranks);
    }
    kp_print_stragglers(r);
}

static void kp_print_report(const kp_report *r)
{
    char a[32], b[32];
    printf("Profiler ran for %s, capturing %llu events.\n",
           kp_format_duration(r->wall, a, sizeof a), (unsigned long long)r->events);
    if (r->command[0])
        printf("Command: %s (%d process%s recorded)\n", r->command, r->processes,
               r->processes == 1 ? "" : "es");
    /* What the trace lacks, every number even when it is 0: a clean trace says so. */
    printf("Completeness: %llu record%s dropped, %llu device operation%s whose launching call%s "
           "not recorded, %llu call%s whose device work never arrived, %d process%s that ended "
           "without closing\n",
           (unsigned long long)r->dropped, r->dropped == 1 ? "" : "s",
           (unsigned long long)r->ops_without_call, r->ops_without_call == 1 ? "" : "s",
           r->ops_without_call == 1 ? " was" : "s were", (unsigned long long)r->calls_without_work,
           r->calls_without_work == 1 ? "" : "s", r->unclosed, r->unclosed == 1 ? "" : "es");
    for (const char *p = r->notes.data ? r->notes.data : "", *nl; (nl = strchr(p, '\n')) != NULL;
         p = nl + 1)
        printf("Note: %.*s\n", (int)(nl - p), p);
    printf("\nHost-side activity: calling %s APIs took %s (%.2f%% of the wall)%s\n",
           r->v.api == KP_API_OPENCL ? "OpenCL" : "GPU",
           kp_format_duration(r->host_total, a, sizeof a),
           r->wall > 0 ? 100 * r->host_total / r->wall : 0,
           r->raw ? "" : "; polling and query calls hidden (--raw shows them)");
    if (r->host.n)
        kp_print_table(r, &r->host);
    else
        printf("  (no host API calls recorded)\n");
    printf("\nDevice-side activity: %s was busy for %s (%.2f%% of the wall)\n",
           r->v.api == KP_API_OPENCL ? "the device" : "GPU",
           kp_format_duration(r->v.wall_in.gpu_busy_s, b, sizeof b), 100 * r->v.wall.busy_fraction);
    if (r->device.n)
        kp_print_table(r, &r->device);
    else if (!r->collectives.n)
        printf("  (no kernels, copies or fills recorded)\n");
    if (r->collectives.n) {
        double total = 0;
        uint64_t calls = 0;
        for (int i = 0; i < r->collectives.n; i++) {
            total += r->collectives.rows[i].total;
            calls += r->collectives.rows[i].calls;
        }
        printf("\nCollectives (NCCL/RCCL kernels, apart from the compute kernels): %llu kernel%s, "
               "%s (%.2f%% of the wall)\n",
               (unsigned long long)calls, calls == 1 ? "" : "s",
               kp_format_duration(total, a, sizeof a), r->wall > 0 ? 100 * total / r->wall : 0);
        kp_print_table(r, &r->collectives);
    }
    kp_print_latency(r);
    if (r->nvtx.n) {
        /* libkprof's scopes are ranges too (their domain says which). */
        printf("\n%s:\n", !r->has_scopes ? "NVTX ranges"
                          : r->has_nvtx  ? "NVTX ranges and scopes"
                                         : "Scopes");
        kp_print_table(r, &r->nvtx);
    }
    if (r->is_job) kp_print_job(r);
}

/* The numbers under a verdict's heading, then its sentence; indent is the lines' margin. */
static void kp_print_window(const kp_report *r, const kp_verdict_input *in, const kp_verdict *v,
                            const char *window, const char *indent)
{
    char a[32], b[32], c[32], gap[320], name[160];
    printf("%s%s busy %s of %s (%.1f%%); %llu gaps between device operations", indent,
           kp_verdict_device_word(r->v.api, 1), kp_format_duration(in->gpu_busy_s, a, sizeof a),
           kp_format_duration(in->wall_s, b, sizeof b), 100 * v->busy_fraction,
           (unsigned long long)in->gaps);
    if (in->gaps) printf(", median %s", kp_format_duration(in->median_gap_s, a, sizeof a));
    if (in->longest_gap_place != KP_GAP_NONE) {
        kp_verdict_gap_text(in, gap, sizeof gap);
        printf("; the longest idle stretch %s, %s",
               kp_format_duration(in->longest_gap_s, c, sizeof c), gap);
    }
    printf("\n");
    printf("%s%llu kernel launches (%.0f/s), %.1f%% under 0.05 ms; kernels %.1f%% of %s; host "
           "synchronization %s (%.1f%%)\n",
           indent, (unsigned long long)in->kernels, v->launches_per_s, 100 * v->small_fraction,
           100 * v->kernel_fraction, window, kp_format_duration(in->host_sync_s, a, sizeof a),
           100 * v->sync_fraction);
    if (in->ncalls) {
        printf("%sLargest host calls:", indent);
        for (int i = 0; i < in->ncalls; i++) {
            snprintf(name, sizeof name, "%s", in->calls[i].name);
            printf("%s %s %s (%.1f%%)", i ? "," : "", name,
                   kp_format_duration(in->calls[i].total_s, a, sizeof a),
                   in->wall_s > 0 ? 100 * in->calls[i].total_s / in->wall_s : 0);
        }
        printf("\n");
    }
    char sentence[2048];
    kp_verdict_describe(in, v, window, r->start_ns, sentence, sizeof sentence);
    printf("%s→ %s\n", indent, sentence);
}

/* "the 30 'step' ranges" */
static void kp_range_window(const kp_range_verdict *rv, char *buf, size_t n)
{
    if (rv->instances == 1)
        snprintf(buf, n, "the '%s' range", rv->name);
    else
        snprintf(buf, n, "the %llu '%s' ranges", (unsigned long long)rv->instances, rv->name);
}

#define KP_RANGES_SHOWN 10

static void kp_print_verdict(const kp_report *r)
{
    char a[32], b[32];
    printf("\nVerdict: %s over the wall (%s)\n", kp_verdict_name(r->v.wall.kind),
           kp_format_duration(r->v.wall_in.wall_s, a, sizeof a));
    kp_print_window(r, &r->v.wall_in, &r->v.wall, "the wall", "  ");
    if (r->v.has_active) {
        printf("\nVerdict: %s over the active window (%s from %s: first to last device "
               "operation)\n",
               kp_verdict_name(r->v.active.kind),
               kp_format_duration(r->v.active_in.wall_s, a, sizeof a),
               kp_format_duration((double)kp_ns_diff(r->v.active_start_ns, r->start_ns) / 1e9, b,
                                  sizeof b));
        kp_print_window(r, &r->v.active_in, &r->v.active, "the active window", "  ");
    }
    if (r->v.nranges) {
        printf("\nVerdict per top-level NVTX range (all instances of a name together):\n");
        for (size_t i = 0; i < r->v.nranges && i < KP_RANGES_SHOWN; i++) {
            const kp_range_verdict *rv = &r->v.ranges[i];
            char window[600];
            kp_range_window(rv, window, sizeof window);
            printf("  %s ×%llu (%s): %s", rv->name, (unsigned long long)rv->instances,
                   kp_format_duration(rv->in.wall_s, a, sizeof a),
                   kp_verdict_name(rv->verdict.kind));
            if (rv->instances > 1) { /* each instance alone */
                const char *sep = "; instance by instance: ";
                for (int k = 0; k < KP_VERDICT_KIND_COUNT; k++) {
                    if (!rv->kinds[k]) continue;
                    printf("%s%llu %s", sep, (unsigned long long)rv->kinds[k],
                           kp_verdict_name((kp_verdict_kind)k));
                    sep = ", ";
                }
            }
            printf("\n");
            kp_print_window(r, &rv->in, &rv->verdict, window, "    ");
        }
        if (r->v.nranges > KP_RANGES_SHOWN)
            printf("  … %zu more range names (--json lists them all)\n",
                   r->v.nranges - KP_RANGES_SHOWN);
    }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

/* A row's metrics as members of the open object, only those it has: flops, gflop_per_s, bytes,
 * gb_per_s. */
static void kp_json_row_metrics(kp_json *j, const kp_row_metrics *m)
{
    if (m->has_flops) kp_json_double(j, "flops", m->flops);
    if (m->has_gflop_per_s) kp_json_double(j, "gflop_per_s", m->gflop_per_s);
    if (m->has_bytes) kp_json_double(j, "bytes", m->bytes);
    if (m->has_gb_per_s) kp_json_double(j, "gb_per_s", m->gb_per_s);
}

static void kp_json_groups(kp_json *j, const char *key, const kp_group_list *l, double wall)
{
    kp_json_array_begin(j, key);
    for (int i = 0; i < l->n; i++) {
        const kp_group *g = &l->rows[i];
        kp_json_object_begin(j, NULL);
        kp_json_string(j, "name", g->name);
        kp_json_uint(j, "calls", g->calls);
        kp_json_double(j, "total_s", g->total);
        kp_json_double(j, "percent_of_wall", wall > 0 ? 100 * g->total / wall : 0);
        kp_json_double(j, "mean_s", g->mean);
        kp_json_double(j, "std_s", g->std);
        kp_json_double(j, "min_s", g->min);
        kp_json_double(j, "max_s", g->max);
        if (l->metrics) kp_json_row_metrics(j, &g->m);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
}

/* A window's numbers, analysis and sentence, as members of the open object. */
static void kp_json_window(kp_json *j, const kp_report *r, const kp_verdict_input *in,
                           const kp_verdict *v, const char *window)
{
    char text[2048];
    kp_json_string(j, "kind", kp_verdict_name(v->kind));
    kp_json_double(j, "duration_s", in->wall_s);
    kp_json_double(j, "gpu_busy_s", in->gpu_busy_s);
    kp_json_double(j, "gpu_busy_fraction", v->busy_fraction);
    kp_json_double(j, "idle_fraction", v->idle_fraction);
    kp_json_double(j, "kernel_busy_s", in->kernel_busy_s);
    kp_json_double(j, "kernel_fraction", v->kernel_fraction);
    kp_json_uint(j, "kernels", in->kernels);
    kp_json_uint(j, "device_operations", in->device_ops);
    kp_json_double(j, "launches_per_s", v->launches_per_s);
    kp_json_double(j, "small_dispatch_fraction", v->small_fraction);
    kp_json_uint(j, "idle_gaps", in->gaps);
    if (in->gaps)
        kp_json_double(j, "median_gap_s", in->median_gap_s);
    else
        kp_json_null(j, "median_gap_s");
    kp_json_double(j, "longest_gap_s", in->longest_gap_s);
    kp_json_object_begin(j, "longest_gap");
    kp_json_string(j, "place", kp_verdict_gap_place_name(in->longest_gap_place));
    if (in->longest_gap_place != KP_GAP_NONE)
        kp_json_double(j, "at_s", (double)kp_ns_diff(in->longest_gap_at_ns, r->start_ns) / 1e9);
    if (in->gap_after) kp_json_string(j, "after", in->gap_after);
    if (in->gap_before) kp_json_string(j, "before", in->gap_before);
    kp_verdict_gap_text(in, text, sizeof text);
    kp_json_string(j, "text", text);
    kp_json_object_end(j);
    kp_json_double(j, "host_api_s", in->host_api_s);
    kp_json_double(j, "host_api_fraction", v->host_api_fraction);
    kp_json_double(j, "host_sync_s", in->host_sync_s);
    kp_json_double(j, "host_sync_fraction", v->sync_fraction);
    kp_json_array_begin(j, "largest_host_calls");
    for (int i = 0; i < in->ncalls; i++) {
        kp_json_object_begin(j, NULL);
        kp_json_string(j, "name", in->calls[i].name);
        kp_json_uint(j, "calls", in->calls[i].calls);
        kp_json_double(j, "total_s", in->calls[i].total_s);
        kp_json_double(j, "fraction", in->wall_s > 0 ? in->calls[i].total_s / in->wall_s : 0);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    if (v->named_call >= 0)
        kp_json_string(j, "named_call", in->calls[v->named_call].name);
    else
        kp_json_null(j, "named_call");
    kp_json_object_begin(j, "flags");
    kp_json_bool(j, "idle", v->idle);
    kp_json_bool(j, "high_launch_rate", v->high_launch_rate);
    kp_json_bool(j, "enough_launches", v->enough_launches);
    kp_json_bool(j, "short_kernels", v->short_kernels);
    kp_json_bool(j, "short_gaps", v->short_gaps);
    kp_json_object_end(j);
    kp_json_array_begin(j, "advice");
    for (unsigned bit = 1; bit && kp_verdict_advice_name(bit); bit <<= 1)
        if (v->advice & bit) kp_json_string(j, NULL, kp_verdict_advice_name(bit));
    kp_json_array_end(j);
    kp_verdict_describe(in, v, window, r->start_ns, text, sizeof text);
    kp_json_string(j, "sentence", text);
}

static void kp_json_latency(kp_json *j, const kp_report *r)
{
    const struct {
        const char *key;
        const kp_latency *l;
    } parts[] = {{"launch_to_start", &r->launch},
                 {"queued_to_start", &r->queued},
                 {"submitted_to_start", &r->submitted}};
    if (!r->launch.n && !r->queued.n && !r->submitted.n) return;
    kp_json_object_begin(j, "launch_latency");
    for (int i = 0; i < 3; i++) {
        const kp_latency *l = parts[i].l;
        if (!l->n) continue;
        kp_json_object_begin(j, parts[i].key);
        kp_json_uint(j, "count", l->n);
        kp_json_double(j, "median_s", l->median);
        kp_json_double(j, "p95_s", l->p95);
        kp_json_double(j, "mean_s", l->mean);
        kp_json_double(j, "min_s", l->min);
        kp_json_double(j, "max_s", l->max);
        kp_json_object_end(j);
    }
    kp_json_object_end(j);
}

static void kp_json_dims(kp_json *j, const char *key, const int64_t v[3])
{
    kp_json_array_begin(j, key);
    for (int i = 0; i < 3; i++)
        kp_json_int(j, NULL, v[i]);
    kp_json_array_end(j);
}

/* An event's flops and user metrics as members of the open object, where it has them: flops and
 * gflop_per_s, and "metrics" {key: value} (a bytes metric is written by the caller, in place of
 * a copy's size). */
static void kp_json_event_metrics(kp_json *j, const kp_report *r, const kp_trace_event *ev)
{
    const kp_event *e = &ev->e;
    int64_t ns = kp_ns_span(e->end_ns, e->start_ns);
    if (e->known & KP_EVENT_HAS_FLOPS) { /* flops per ns are GFLOP per s */
        kp_json_double(j, "flops", e->metrics.flops);
        if (ns > 0) kp_json_double(j, "gflop_per_s", e->metrics.flops / (double)ns);
    }
    if (!ev->nmetrics) return;
    kp_json_object_begin(j, "metrics");
    for (size_t i = 0; i < ev->nmetrics; i++) {
        const char *key = kp_event_source_string(r->src, ev->metrics[i].key, NULL);
        kp_json_double(j, key ? key : "?", ev->metrics[i].value);
    }
    kp_json_object_end(j);
}

/* --trace --json: the chronological rows, with what is known and null or nothing for what is
 * not. */
static kprof_status kp_json_trace(kp_json *j, kp_report *r, kp_error *err)
{
    kp_event_iter *it = NULL;
    kp_trace_event ev;
    kprof_status st = kp_event_iter_open(r->src, &kp_host_rows, &it, err);
    if (st != KPROF_OK) return st;
    kp_json_array_begin(j, "host_trace");
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        if (!r->raw && (r->name_flags[e->name] & KP_HOST_CALL_POLLING)) continue;
        kp_json_object_begin(j, NULL);
        if (e->known & KP_EVENT_HAS_CORRELATION)
            kp_json_int(j, "id", (int64_t)e->correlation);
        else
            kp_json_null(j, "id");
        kp_json_string(j, "kind", kp_event_kind_name(e->kind));
        kp_json_double(j, "start_s", (double)kp_ns_diff(e->start_ns, r->start_ns) / 1e9);
        kp_json_double(j, "duration_s", (double)kp_ns_span(e->end_ns, e->start_ns) / 1e9);
        kp_json_int(j, "pid", e->pid);
        kp_json_int(j, "tid", e->tid);
        kp_json_string(j, "name", kp_name_of(r, e));
        int64_t ns = kp_ns_span(e->end_ns, e->start_ns);
        if (e->known & KP_EVENT_HAS_METRIC_BYTES) {
            kp_json_double(j, "bytes", e->metrics.bytes);
            if (ns > 0) kp_json_double(j, "gb_per_s", e->metrics.bytes / (double)ns);
        }
        kp_json_event_metrics(j, r, &ev);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    st = kp_event_iter_close(it, err);
    if (st != KPROF_OK) return st;
    st = kp_event_iter_open(r->src, &kp_device_rows, &it, err);
    if (st != KPROF_OK) return st;
    kp_json_array_begin(j, "device_trace");
    while (kp_event_iter_next(it, &ev)) {
        kp_device_row d;
        kp_device_row_read(r, &ev, &d);
        double dur = (double)kp_ns_span(d.end, d.start) / 1e9;
        kp_json_object_begin(j, NULL);
        if (d.has_id)
            kp_json_int(j, "id", d.id);
        else
            kp_json_null(j, "id");
        kp_json_string(j, "kind", kp_event_kind_name(d.kind));
        kp_json_double(j, "start_s", (double)kp_ns_diff(d.start, r->start_ns) / 1e9);
        kp_json_double(j, "duration_s", dur);
        kp_json_int(j, "device", d.device);
        kp_json_int(j, "stream", d.stream);
        kp_json_string(j, "name", d.name);
        if (d.has_grid && d.runtime_groups) {
            /* The runtime chose the groups: their count and size are unknown. */
            kp_json_null(j, "grid");
            kp_json_null(j, "block");
            int64_t g[3];
            kp_global_size(&d, g);
            kp_json_dims(j, "global_size", g);
        } else if (d.has_grid) {
            kp_json_dims(j, "grid", d.grid);
            kp_json_dims(j, "block", d.block);
        }
        if (d.has_regs) kp_json_int(j, "registers", d.regs);
        if (d.has_smem) kp_json_int(j, "shared_bytes", d.smem);
        if (d.has_local) kp_json_int(j, "local_bytes", d.local);
        if (d.has_reflection) { /* an OpenCL kernel's, named as `kprof run --json` does */
            kp_json_object_begin(j, "reflection");
            kp_json_int(j, "max_threadgroup_size", d.max_group);
            kp_json_int(j, "preferred_multiple", d.multiple);
            kp_json_int(j, "static_local_bytes", d.local_bytes);
            kp_json_int(j, "private_bytes", d.private_bytes);
            kp_json_object_end(j);
        }
        int64_t ns = kp_ns_span(d.end, d.start);
        if (d.has_metric_bytes) { /* what it moved, by its metric; bytes per ns are GB per s */
            kp_json_double(j, "bytes", d.metric_bytes);
            if (ns > 0) kp_json_double(j, "gb_per_s", d.metric_bytes / (double)ns);
        } else if (d.has_bytes) {
            kp_json_int(j, "bytes", d.bytes);
            if (dur > 0) kp_json_double(j, "gb_per_s", (double)d.bytes / dur / 1e9);
        }
        kp_json_event_metrics(j, r, &ev);
        if (d.has_launch) kp_json_double(j, "launch_to_start_s", (double)d.launch_ns / 1e9);
        if (d.has_queued) kp_json_double(j, "queued_to_start_s", (double)d.queued_ns / 1e9);
        if (d.has_submitted)
            kp_json_double(j, "submitted_to_start_s", (double)d.submitted_ns / 1e9);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    return kp_event_iter_close(it, err);
}

/* A rank's number, null for the processes without one. */
static void kp_json_rank(kp_json *j, const char *key, int rank)
{
    if (rank >= 0)
        kp_json_int(j, key, rank);
    else
        kp_json_null(j, key);
}

/* The job's ranks, devices and stragglers (analysis/trace_job.h); times from the trace's start. */
static void kp_json_job(kp_json *j, const kp_report *r)
{
    const kp_trace_job *job = &r->job;
    const kp_job_stragglers *g = &job->stragglers;
    kp_json_object_begin(j, "job");
    kp_json_string(j, "launcher", job->launcher);
    kp_json_uint(j, "hosts", job->nhosts);
    kp_json_uint(j, "ranks_count", job->nranked);
    kp_json_array_begin(j, "ranks");
    for (size_t i = 0; i < job->nranks; i++) {
        const kp_job_rank *k = &job->ranks[i];
        kp_json_object_begin(j, NULL);
        kp_json_rank(j, "rank", k->rank);
        kp_json_rank(j, "local_rank", k->local_rank);
        kp_json_string(j, "host", k->host);
        kp_json_string(j, "boot_id", k->boot_id);
        kp_json_array_begin(j, "pids");
        for (size_t p = 0; p < k->npids; p++)
            kp_json_int(j, NULL, k->pids[p]);
        kp_json_array_end(j);
        kp_json_array_begin(j, "gpus");
        for (size_t p = 0; p < k->ngpus; p++)
            kp_json_uint(j, NULL, k->gpus[p]);
        kp_json_array_end(j);
        kp_json_uint(j, "kernels", k->kernels);
        kp_json_uint(j, "collectives", k->collectives);
        kp_json_uint(j, "copies", k->copies);
        kp_json_uint(j, "fills", k->fills);
        kp_json_double(j, "gpu_busy_s", kp_ns_s(k->gpu_busy_ns));
        kp_json_double(j, "collective_s", kp_ns_s(k->collective_ns));
        kp_json_double(j, "host_api_s", kp_ns_s(k->host_api_ns));
        kp_json_double(j, "start_s", kp_ns_s(kp_ns_diff(k->start_ns, r->start_ns)));
        kp_json_double(j, "span_s", kp_ns_s(kp_ns_diff(k->end_ns, k->start_ns)));
        kp_json_uint(j, "last_at_steps", k->last_at);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_array_begin(j, "devices");
    for (size_t i = 0; i < job->ndevices; i++) {
        const kp_job_device *d = &job->devices[i];
        kp_json_object_begin(j, NULL);
        kp_json_string(j, "host", d->host);
        kp_json_string(j, "boot_id", d->boot_id);
        kp_json_uint(j, "device", d->device);
        kp_json_uint(j, "kernels", d->kernels);
        kp_json_uint(j, "collectives", d->collectives);
        kp_json_uint(j, "copies", d->copies);
        kp_json_uint(j, "fills", d->fills);
        kp_json_double(j, "gpu_busy_s", kp_ns_s(d->gpu_busy_ns));
        kp_json_double(j, "gpu_busy_percent_of_wall",
                       r->wall > 0 ? 100 * kp_ns_s(d->gpu_busy_ns) / r->wall : 0);
        kp_json_double(j, "collective_s", kp_ns_s(d->collective_ns));
        kp_json_array_begin(j, "ranks");
        for (size_t k = 0; k < d->nranks; k++)
            kp_json_rank(j, NULL, d->ranks[k]);
        kp_json_array_end(j);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_object_begin(j, "stragglers");
    static const char *const by[] = {[KP_JOB_STEPS_NONE] = NULL,
                                     [KP_JOB_STEPS_RANGE] = "range",
                                     [KP_JOB_STEPS_COLLECTIVE] = "collective"};
    kp_json_string(j, "steps_by", by[g->steps_by]);
    if (g->steps_by == KP_JOB_STEPS_RANGE)
        kp_json_string(j, "range", kp_event_source_string(r->src, g->range, NULL));
    else
        kp_json_null(j, "range");
    if (g->steps_by != KP_JOB_STEPS_NONE)
        kp_json_string(j, "timed_by", g->timed_by_collectives ? "collective" : "range");
    else
        kp_json_null(j, "timed_by");
    kp_json_string(j, "op", g->op != KP_COLLECTIVE_NONE ? kp_collective_op_name(g->op) : NULL);
    kp_json_uint(j, "steps", g->nsteps);
    kp_json_uint(j, "skipped", g->skipped);
    kp_json_uint(j, "unmatched", g->unmatched);
    kp_json_uint(j, "apart", g->apart);
    kp_json_rank(j, "last_rank", g->nsteps ? g->last_rank : -1);
    kp_json_uint(j, "last_count", g->last_count);
    kp_json_double(j, "wait_median_s", kp_ns_s(g->wait_median_ns));
    kp_json_double(j, "wait_max_s", kp_ns_s(g->wait_max_ns));
    /* How far apart the hosts' clocks may be (kp_trace_meta.clock_uncertainty_ns): 0 on one
     * host, null where a host's offset is unknown. */
    int64_t unsure = kp_event_source_meta(r->src)->clock_uncertainty_ns;
    if (unsure >= 0)
        kp_json_double(j, "clock_uncertainty_s", kp_ns_s(unsure));
    else
        kp_json_null(j, "clock_uncertainty_s");
    kp_json_bool(j, "wait_median_within_clock_uncertainty",
                 unsure > 0 && g->wait_median_ns < unsure);
    kp_json_double(j, "wait_total_s", kp_ns_s(g->wait_total_ns));
    kp_json_double(j, "timed_total_s", kp_ns_s(g->timed_total_ns));
    kp_json_double(j, "wait_fraction", kp_straggler_share(g));
    kp_json_array_begin(j, "detail");
    for (size_t i = 0; i < g->nsteps; i++) {
        const kp_job_step *st = &g->steps[i];
        kp_json_object_begin(j, NULL);
        kp_json_uint(j, "index", st->index);
        kp_json_string(j, "name", kp_event_source_string(r->src, st->name, NULL));
        kp_json_string(j, "op",
                       st->op != KP_COLLECTIVE_NONE ? kp_collective_op_name(st->op) : NULL);
        kp_json_uint(j, "collectives", st->collectives);
        kp_json_double(j, "at_s", kp_ns_s(kp_ns_diff(st->at_ns, r->start_ns)));
        kp_json_int(j, "last_rank", st->last_rank);
        kp_json_double(j, "wait_s", kp_ns_s(st->wait_ns));
        kp_json_double(j, "timed_s", kp_ns_s(st->timed_ns));
        kp_json_array_begin(j, "waits");
        for (size_t k = 0; k < job->nranked; k++) {
            kp_json_object_begin(j, NULL);
            kp_json_int(j, "rank", job->ranks[k].rank);
            kp_json_double(j, "wait_s", kp_ns_s(st->waits[k]));
            kp_json_object_end(j);
        }
        kp_json_array_end(j);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_object_end(j);
    kp_json_object_end(j);
}

static kprof_status kp_report_json(kp_report *r, kp_error *err)
{
    kp_str s = {0};
    kp_json j;
    kprof_status st = KPROF_OK;
    kp_json_init(&j, &s, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "trace", r->path);
    kp_json_string(&j, "command", r->command);
    kp_json_double(&j, "wall_s", r->wall);
    kp_json_uint(&j, "events", r->events);
    kp_json_uint(&j, "dropped", r->dropped);
    kp_json_int(&j, "processes", r->processes);
    kp_json_object_begin(&j, "completeness");
    kp_json_uint(&j, "records_dropped", r->dropped);
    kp_json_uint(&j, "device_ops_without_call", r->ops_without_call);
    kp_json_uint(&j, "calls_without_device_work", r->calls_without_work);
    kp_json_int(&j, "processes_not_closed", r->unclosed);
    kp_json_object_end(&j);
    kp_json_array_begin(&j, "notes");
    for (const char *p = r->notes.data ? r->notes.data : "", *nl; (nl = strchr(p, '\n')) != NULL;
         p = nl + 1) {
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
        kp_json_string(&j, NULL, line);
    }
    kp_json_array_end(&j);
    kp_json_double(&j, "host_api_s", r->host_total);
    kp_json_double(&j, "gpu_busy_s", r->v.wall_in.gpu_busy_s);
    kp_json_groups(&j, "host", &r->host, r->wall);
    kp_json_groups(&j, "device", &r->device, r->wall);
    kp_json_groups(&j, "nvtx", &r->nvtx, r->wall);
    if (r->is_job) {
        kp_json_groups(&j, "collectives", &r->collectives, r->wall);
        kp_json_job(&j, r);
    }
    kp_json_latency(&j, r);
    /* The whole wall's verdict at the top (as before), the active window and the NVTX ranges
     * inside it. */
    kp_json_object_begin(&j, "verdict");
    kp_json_string(&j, "window", "wall");
    kp_json_array_begin(&j, "api");
    if (r->v.api & KP_API_CUDA) kp_json_string(&j, NULL, "cuda");
    if (r->v.api & KP_API_OPENCL) kp_json_string(&j, NULL, "opencl");
    kp_json_array_end(&j);
    kp_json_window(&j, r, &r->v.wall_in, &r->v.wall, "the wall");
    if (r->v.has_active) {
        kp_json_object_begin(&j, "active");
        kp_json_string(&j, "window", "active");
        kp_json_double(&j, "start_s", (double)kp_ns_diff(r->v.active_start_ns, r->start_ns) / 1e9);
        kp_json_double(&j, "end_s", (double)kp_ns_diff(r->v.active_end_ns, r->start_ns) / 1e9);
        kp_json_window(&j, r, &r->v.active_in, &r->v.active, "the active window");
        kp_json_object_end(&j);
    } else {
        kp_json_null(&j, "active");
    }
    kp_json_array_begin(&j, "ranges");
    for (size_t i = 0; i < r->v.nranges; i++) {
        const kp_range_verdict *rv = &r->v.ranges[i];
        char window[600];
        kp_range_window(rv, window, sizeof window);
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "window", "nvtx");
        kp_json_string(&j, "name", rv->name);
        kp_json_uint(&j, "instances", rv->instances);
        kp_json_object_begin(&j, "instance_kinds");
        for (int k = 0; k < KP_VERDICT_KIND_COUNT; k++)
            if (rv->kinds[k]) kp_json_uint(&j, kp_verdict_name((kp_verdict_kind)k), rv->kinds[k]);
        kp_json_object_end(&j);
        kp_json_window(&j, r, &rv->in, &rv->verdict, window);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    if (r->trace) st = kp_json_trace(&j, r, err);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    if (st == KPROF_OK && s.failed) st = kp_error_nomem(err);
    if (st == KPROF_OK) fputs(s.data ? s.data : "", stdout);
    kp_str_free(&s);
    return st;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

static void kp_csv_field_out(const char *raw)
{
    kp_str field = {0};
    kp_csv_field(&field, raw);
    fputs(field.data ? field.data : "", stdout);
    kp_str_free(&field);
}

/* Whether the CSV has the metric columns: a table has metrics. */
static int kp_csv_metrics(const kp_report *r)
{
    return r->host.metrics || r->device.metrics || r->nvtx.metrics || r->collectives.metrics;
}

/* The end of a CSV line: with metric columns, a row's metrics (m NULL or without: empty), the
 * shortest decimals that read back as the same doubles. */
static void kp_csv_end(const kp_report *r, const kp_row_metrics *m)
{
    if (kp_csv_metrics(r)) {
        int has[4] = {m && m->has_flops, m && m->has_bytes, m && m->has_gflop_per_s,
                      m && m->has_gb_per_s};
        double v[4] = {m ? m->flops : 0, m ? m->bytes : 0, m ? m->gflop_per_s : 0,
                       m ? m->gb_per_s : 0};
        for (int i = 0; i < 4; i++) {
            char buf[40] = "";
            if (has[i]) kp_json_format_double(v[i], buf, sizeof buf);
            printf(",%s", buf);
        }
    }
    printf("\n");
}

/* One verdict row: table "verdict", name the window ("wall", "active", "nvtx:NAME"). */
static void kp_csv_verdict(const kp_report *r, const char *name, uint64_t instances,
                           const kp_verdict_input *in, const kp_verdict *v, const char *window)
{
    char gap[320], sentence[2048];
    printf("verdict,");
    kp_csv_field_out(name);
    printf(",%llu,%.9g,%.4f,%.9g,,,,", (unsigned long long)instances, in->wall_s,
           r->wall > 0 ? 100 * in->wall_s / r->wall : 0,
           instances ? in->wall_s / (double)instances : 0);
    printf("%s,%.9g,%.9g,%.9g,%.9g,%.9g,", kp_verdict_name(v->kind), v->busy_fraction,
           v->kernel_fraction, v->sync_fraction, v->launches_per_s, v->small_fraction);
    if (in->gaps) printf("%.9g", in->median_gap_s);
    printf(",%.9g,", in->longest_gap_s);
    kp_verdict_gap_text(in, gap, sizeof gap);
    kp_csv_field_out(gap);
    printf(",,,");
    kp_verdict_describe(in, v, window, r->start_ns, sentence, sizeof sentence);
    kp_csv_field_out(sentence);
    kp_csv_end(r, NULL);
}

static void kp_report_csv(const kp_report *r)
{
    printf("table,name,calls,total_s,percent_of_wall,mean_s,std_s,min_s,max_s,verdict,"
           "gpu_busy_fraction,kernel_fraction,host_sync_fraction,launches_per_s,"
           "small_dispatch_fraction,median_gap_s,longest_gap_s,longest_gap_at,median_s,p95_s,"
           "sentence%s\n",
           kp_csv_metrics(r) ? ",flops,bytes,gflop_per_s,gb_per_s" : "");
    const struct {
        const char *name;
        const kp_group_list *l;
    } tables[] = {{"host", &r->host},
                  {"device", &r->device},
                  {"nvtx", &r->nvtx},
                  {"collective", &r->collectives}}; /* a job's (else empty) */
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < tables[t].l->n; i++) {
            const kp_group *g = &tables[t].l->rows[i];
            printf("%s,", tables[t].name);
            kp_csv_field_out(g->name);
            printf(",%llu,%.9g,%.4f,%.9g,%.9g,%.9g,%.9g,,,,,,,,,,,,", (unsigned long long)g->calls,
                   g->total, r->wall > 0 ? 100 * g->total / r->wall : 0, g->mean, g->std, g->min,
                   g->max);
            kp_csv_end(r, tables[t].l->metrics ? &g->m : NULL);
        }
    }
    /* Launch latency: calls = operations, the distribution in mean/min/max, median and p95. */
    const struct {
        const char *name;
        const kp_latency *l;
    } lat[] = {{"launch_to_start", &r->launch},
               {"queued_to_start", &r->queued},
               {"submitted_to_start", &r->submitted}};
    for (int i = 0; i < 3; i++) {
        const kp_latency *l = lat[i].l;
        if (!l->n) continue;
        printf("latency,%s,%zu,,,%.9g,,%.9g,%.9g,,,,,,,,,,%.9g,%.9g,", lat[i].name, l->n, l->mean,
               l->min, l->max, l->median, l->p95);
        kp_csv_end(r, NULL);
    }
    kp_csv_verdict(r, "wall", 1, &r->v.wall_in, &r->v.wall, "the wall");
    if (r->v.has_active)
        kp_csv_verdict(r, "active", 1, &r->v.active_in, &r->v.active, "the active window");
    for (size_t i = 0; i < r->v.nranges; i++) {
        const kp_range_verdict *rv = &r->v.ranges[i];
        char name[600], window[600];
        snprintf(name, sizeof name, "nvtx:%s", rv->name);
        kp_range_window(rv, window, sizeof window);
        kp_csv_verdict(r, name, rv->instances, &rv->in, &rv->verdict, window);
    }
}

/* "total, self, gpu or calls": the values --sort takes, from the list. */
static void kp_sort_choices(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < KP_AGGREGATION_SORT_COUNT; k++) {
        const char *sep = k == 0 ? "" : k == KP_AGGREGATION_SORT_COUNT - 1 ? " or " : ", ";
        int w = snprintf(buf + used, n - used, "%s%s", sep,
                         kp_aggregation_sort_name((kp_aggregation_sort)k));
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
}

/* --tree or --by: the call tree or the key averages, through analysis/trace_aggregate.h. */
static int kp_report_calltree(const char *path, kp_calltree_view *view, int raw,
                              kp_calltree_format format)
{
    kp_error err = {0};
    kp_event_source *src = NULL;
    kp_aggregation *a = NULL;
    kprof_status st = kp_event_source_open(path, &src, &err);
    if (st == KPROF_OK && format == KP_CALLTREE_TEXT) st = kp_event_source_escape_text(src, &err);
    if (st == KPROF_OK)
        st = kp_trace_aggregate(src, raw ? KP_TRACE_AGGREGATE_POLLING : 0, &a, &err);
    if (st == KPROF_OK) {
        view->trace = path;
        view->command = kp_event_source_meta(src)->command;
        view->polling_calls = raw;
        view->opencl_only = kp_event_source_opencl_only(src);
        /* Standard output's errors are main's to report (kp_cli_exit), as for the tables. */
        kp_str s = {0};
        if (kp_calltree_render(a, view, format, &s) != 0)
            st = kp_error_nomem(&err);
        else
            fputs(s.data ? s.data : "", stdout);
        kp_str_free(&s);
    }
    kp_aggregation_destroy(a); /* before the source: it reads the source's names */
    kp_event_source_close(src);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}

/* A whole number from 1 to max, digits only: 0 or -1 when it is not one. */
static int kp_parse_count(const char *text, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!text || !*text) return -1;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (v > (max - (uint64_t)(*p - '0')) / 10) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < 1) return -1;
    *out = v;
    return 0;
}

int kp_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"raw", no_argument, NULL, 'r'},         {"trace", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},        {"csv", no_argument, NULL, 'c'},
        {"tree", no_argument, NULL, 'T'},        {"by", required_argument, NULL, 'b'},
        {"sort", required_argument, NULL, 's'},  {"top", required_argument, NULL, 'n'},
        {"depth", required_argument, NULL, 'd'}, {NULL, 0, NULL, 0},
    };
    kp_report r;
    memset(&r, 0, sizeof r);
    kp_calltree_view view;
    memset(&view, 0, sizeof view);
    int tree = 0, by = 0, sorted = 0;
    uint64_t v;
    char choices[64];
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            r.raw = 1;
            break;
        case 't':
            r.trace = 1;
            break;
        case 'j':
            r.json = 1;
            break;
        case 'c':
            r.csv = 1;
            break;
        case 'T':
            tree = 1;
            break;
        case 'b':
            if (kp_aggregation_group_parse(optarg, &view.group) != 0)
                return kp_cli_usage_error("report", "--by '%s': choose name or path", optarg);
            by = 1;
            break;
        case 's':
            if (kp_aggregation_sort_parse(optarg, &view.sort) != 0) {
                kp_sort_choices(choices, sizeof choices);
                return kp_cli_usage_error("report", "--sort '%s': choose %s", optarg, choices);
            }
            sorted = 1;
            break;
        case 'n':
            if (kp_parse_count(optarg, UINT32_MAX, &v) != 0)
                return kp_cli_usage_error("report", "--top '%s': expected a whole number >= 1",
                                          optarg);
            view.top = (size_t)v;
            break;
        case 'd':
            if (kp_parse_count(optarg, UINT32_MAX, &v) != 0)
                return kp_cli_usage_error(
                    "report", "--depth '%s': expected a whole number >= 1 (1: the top level)",
                    optarg);
            view.depth = (unsigned)v;
            break;
        case ':':
            return kp_cli_usage_error("report", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("report", "give the trace FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
    if (r.json && r.csv) return kp_cli_usage_error("report", "--json or --csv, not both");
    if (tree && by)
        return kp_cli_usage_error("report", "--tree or --by, not both (--by path gives the "
                                            "tree's nodes as rows)");
    if ((tree || by) && r.trace)
        return kp_cli_usage_error("report",
                                  "--trace lists events; %s, call paths: one or the other",
                                  tree ? "--tree" : "--by");
    if (view.depth && !tree) return kp_cli_usage_error("report", "--depth goes with --tree");
    if ((sorted || view.top) && !tree && !by)
        return kp_cli_usage_error("report", "--sort and --top go with --tree or --by");
    if (tree || by) {
        view.key_averages = by;
        return kp_report_calltree(argv[optind], &view, r.raw,
                                  r.json  ? KP_CALLTREE_JSON
                                  : r.csv ? KP_CALLTREE_CSV
                                          : KP_CALLTREE_TEXT);
    }
    if (r.trace && r.csv)
        return kp_cli_usage_error("report", "--trace does not combine with --csv (the trace's "
                                            "rows are not the tables'); --trace --json gives both");
    r.path = argv[optind];
    kp_error err = {0};
    kprof_status st = kp_event_source_open(r.path, &r.src, &err);
    if (st == KPROF_OK && !r.json && !r.csv) st = kp_event_source_escape_text(r.src, &err);
    if (st == KPROF_OK) st = kp_report_load(&r, &err);
    if (st == KPROF_OK) {
        if (r.json)
            st = kp_report_json(&r, &err);
        else if (r.csv)
            kp_report_csv(&r);
        else {
            kp_print_report(&r);
            if (r.trace) st = kp_print_trace(&r, &err);
            if (st == KPROF_OK) kp_print_verdict(&r);
        }
    }
    kp_report_free(&r);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}
