/*
 * report.c — the model of `kprof report` (analysis/report.h): one pass over a trace into the
 * tables (core/aggregate.h's key averages by name), the verdicts, a job's tables, launch latency
 * and the header's numbers.
 */
#include "analysis/report.h"

#include "core/aggregate.h"
#include "core/collective.h"
#include "core/event.h"
#include "core/format.h"
#include "core/host_calls.h"
#include "core/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_samples {
    double *v;
    size_t n, cap;
} kp_samples;

/* This file's helpers that can fail fill err themselves (kp_error_nomem), as the functions of
 * other files that the pass calls do: the pass passes every status on. */
static kprof_status kp_samples_add(kp_samples *s, double x, kp_error *err)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) return kp_error_nomem(err);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return KPROF_OK;
}

/* Median and p95 (linear-interpolated), mean, min and max; sorts the samples. */
static void kp_latency_from(kp_samples *s, kp_report_latency *out)
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

static kprof_status kp_corr_add(kp_corr_list *l, int64_t process, int64_t correlation,
                                int64_t start, kp_error *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        kp_corr_start *v = realloc(l->v, cap * sizeof *v);
        if (!v) return kp_error_nomem(err);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (kp_corr_start){process, correlation, start};
    return KPROF_OK;
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
static void kp_trace_columns_add(kp_report_columns *c, const kp_trace_event *ev)
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

static const char *kp_report_agg_name(void *ctx, uint32_t name)
{
    const kp_report *r = ctx;
    return name < r->nnames ? r->names[name] : NULL;
}

/* The table a by-name row of the aggregation adds to, or NULL (nodes of no table). */
static kp_report_table *kp_report_table_of(kp_report *r, kp_event_kind kind, uint32_t name)
{
    switch (kind) {
    case KP_EVENT_API:
        return &r->host;
    case KP_EVENT_KERNEL:
        if (name < r->nnames && (r->name_flags[name] & KP_REPORT_NAME_COLLECTIVE))
            return &r->collectives;
        return &r->device;
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET:
        return &r->device;
    case KP_EVENT_RANGE:
        return &r->nvtx;
    default:
        return NULL;
    }
}

static int kp_cmp_row(const void *x, const void *y)
{
    const kp_report_row *a = x, *b = y;
    return (a->total < b->total) - (a->total > b->total);
}

/* A row of a table from the stats of its name (the by-name rows of its kinds, merged). */
static void kp_report_row_from(kp_report_row *g, const char *name, const kp_aggregation_stats *a)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name ? name : "?");
    double total = (double)a->duration_ns;
    g->calls = a->count;
    g->total = total / 1e9;
    g->min = (double)a->min_ns / 1e9;
    g->max = (double)a->max_ns / 1e9;
    g->mean = g->total / (double)g->calls;
    double n = (double)a->count;
    double var = n > 1 ? (a->sum_sq_ns - total * total / n) / (n - 1) : 0;
    g->std = var > 0 ? sqrt(var) / 1e9 : 0;
    g->m.has_flops = a->flops_events > 0;
    g->m.flops = a->flops;
    g->m.has_bytes = a->bytes_events > 0;
    g->m.bytes = a->bytes;
    /* Flops per ns are GFLOP per s. */
    g->m.has_gflop_per_s =
        kp_aggregation_rate(a->flops, a->flops_ns, &g->m.gflop_per_s) == 0 && g->m.has_flops;
    if (!g->m.has_gflop_per_s) g->m.gflop_per_s = 0;
    g->m.has_gb_per_s =
        kp_aggregation_rate(a->bytes, a->bytes_ns, &g->m.gb_per_s) == 0 && g->m.has_bytes;
    if (!g->m.has_gb_per_s) g->m.gb_per_s = 0;
}

/* A by-name row of the aggregation with the table it goes to. */
typedef struct kp_report_part {
    size_t table;
    const kp_aggregation_row *row;
} kp_report_part;

/* By table, then name id: a name's parts side by side, in the order the old tables had them. */
static int kp_cmp_part(const void *x, const void *y)
{
    const kp_report_part *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    return (a->row->name > b->row->name) - (a->row->name < b->row->name);
}

/* The tables from the finished aggregation: its by-name rows merged per name into each table
 * (a kernel and a copy of one name are one row), in order of name id, then sorted by total.
 * Memory: per row of the aggregation, not per name of the trace. */
static kprof_status kp_report_tables(kp_report *r, const kp_aggregation *a, kp_error *err)
{
    kp_aggregation_row *rows = NULL;
    size_t nrows = 0, nparts = 0;
    kprof_status st = kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &nrows, err);
    if (st != KPROF_OK) return st;
    kp_report_table *tables[] = {&r->host, &r->device, &r->collectives, &r->nvtx};
    enum { NT = sizeof tables / sizeof *tables };
    kp_report_part *parts = malloc((nrows ? nrows : 1) * sizeof *parts);
    if (!parts) {
        st = kp_error_nomem(err);
        goto done;
    }
    for (size_t i = 0; i < nrows; i++) {
        kp_report_table *t = kp_report_table_of(r, rows[i].kind, rows[i].name);
        if (!t || !rows[i].stats.count) continue;
        size_t ti = 0;
        while (tables[ti] != t)
            ti++;
        parts[nparts++] = (kp_report_part){ti, &rows[i]};
        if (rows[i].stats.metric_events) t->metrics = 1;
    }
    if (nparts > 1) qsort(parts, nparts, sizeof *parts, kp_cmp_part);
    for (size_t i = 0; i < nparts;) {
        kp_report_table *t = tables[parts[i].table];
        uint32_t name = parts[i].row->name;
        kp_aggregation_stats sum = parts[i].row->stats;
        /* A second kind of the name in the same table (the device table's) adds to the first. */
        for (i++; i < nparts && tables[parts[i].table] == t && parts[i].row->name == name; i++)
            kp_aggregation_stats_merge(&sum, &parts[i].row->stats);
        if (t->n == t->cap) {
            int cap = t->cap ? t->cap * 2 : 32;
            kp_report_row *g = realloc(t->rows, (size_t)cap * sizeof *g);
            if (!g) {
                st = kp_error_nomem(err);
                goto done;
            }
            t->rows = g;
            t->cap = cap;
        }
        kp_report_row_from(&t->rows[t->n++], name < r->nnames ? r->names[name] : NULL, &sum);
    }
    for (size_t ti = 0; ti < NT; ti++) {
        kp_report_table *t = tables[ti];
        /* Metrics only from a trace that may hold them: without, what it always was. */
        if (!r->metrics) t->metrics = 0;
        if (t->n > 1) qsort(t->rows, (size_t)t->n, sizeof *t->rows, kp_cmp_row);
    }
done:
    free(parts);
    free(rows);
    return st;
}

/* Each device operation with the earliest call of its process and correlation: the launch
 * latencies, and the operations that have no call. */
static kprof_status kp_report_pair(kp_report *r, kp_corr_list *calls, kp_corr_list *ops,
                                   kp_samples *launch, kp_error *err)
{
    kp_corr_sort(calls);
    kp_corr_sort(ops);
    for (size_t i = 0, c = 0; i < ops->n; i++) {
        const kp_corr_start *op = &ops->v[i];
        while (c < calls->n &&
               (calls->v[c].process < op->process ||
                (calls->v[c].process == op->process && calls->v[c].correlation < op->correlation)))
            c++;
        if (c == calls->n || calls->v[c].process != op->process ||
            calls->v[c].correlation != op->correlation)
            r->ops_without_call++;
        else if (kp_samples_add(launch, (double)kp_ns_diff(op->start, calls->v[c].start) / 1e9,
                                err) != KPROF_OK)
            return KPROF_NOMEM;
    }
    return KPROF_OK;
}

/* The names' flags: core/host_calls.h's, and a job's collective kernels. */
static kprof_status kp_report_flags(kp_report *r, kp_error *err)
{
    unsigned char *flags = r->name_flags = calloc(r->nnames ? r->nnames : 1, 1);
    if (!flags) return kp_error_nomem(err);
    for (size_t id = 0; id < r->nnames; id++) {
        const char *text = r->names[id];
        if (!text) continue;
        flags[id] = (unsigned char)kp_host_call_flags(text);
        if (r->is_job && kp_collective_classify(text) != KP_COLLECTIVE_NONE)
            flags[id] |= KP_REPORT_NAME_COLLECTIVE;
    }
    return KPROF_OK;
}

/* One pass over the events, in storage order: the tables (fed to the aggregation), the timeline the
 * verdicts are computed from, launch latency and queue waits (each device operation paired with its
 * call once every call has been seen), and what --trace's columns need. */
kprof_status kp_report_load(kp_report *r, kp_event_source *src, const char *path, unsigned flags,
                            kp_error *err)
{
    memset(r, 0, sizeof *r);
    r->src = src;
    r->path = path;
    r->raw = (flags & KP_REPORT_RAW) != 0;
    int trace_columns = (flags & KP_REPORT_TRACE_COLUMNS) != 0;
    kp_report_load_meta(r);
    kprof_status st = kp_trace_verdicts_begin(r->src, &r->v, err);
    if (st != KPROF_OK) return st;
    r->start_ns = r->v.start_ns;
    r->end_ns = r->v.end_ns;
    r->wall = (double)kp_ns_diff(r->end_ns, r->start_ns) / 1e9;
    r->names = kp_event_source_strings(r->src, &r->nnames);
    kp_samples launch = {0}, queued = {0}, submitted = {0};
    kp_corr_list calls = {0}, ops = {0};
    kp_event_iter *it = NULL;
    kp_aggregation *agg = kp_aggregation_create(kp_report_agg_name, r);
    if (!agg) goto nomem;
    /* A job's tables come from this pass too. */
    if ((st = kp_trace_job_applies(r->src, &r->is_job, err)) != KPROF_OK) goto done;
    if (r->is_job) {
        size_t nprocs;
        const kp_trace_process *procs = kp_event_source_processes(r->src, &nprocs);
        st = kp_trace_job_begin(&r->job, procs, nprocs, r->names, r->nnames, r->raw, err);
        if (st != KPROF_OK) goto done;
    }
    if ((st = kp_report_flags(r, err)) != KPROF_OK) goto done;
    const unsigned char *names = r->name_flags;
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
        uint32_t id = e->name; /* 0 (no name) beyond the table */
        int64_t s = e->start_ns;
        if (e->end_ns < s) backwards++;
        int64_t process = e->process;
        int has_corr = (e->known & KP_EVENT_HAS_CORRELATION) != 0;
        int64_t corr = (int64_t)e->correlation;
        r->events++;
        /* The verdicts' timeline: the same rules as kprof diff's (analysis/trace_verdict.h). */
        st = kp_trace_verdicts_add(&r->v, &ev, names[id], r->raw, err);
        if (st == KPROF_OK && r->is_job) st = kp_trace_job_add(&r->job, &ev, names[id], err);
        switch (e->kind) {
        case KP_EVENT_API: {
            int launched = (ev.has & KP_TRACE_LAUNCHED) != 0;
            /* A hidden call is no node of the tables' aggregation (as in `--by`). */
            if (st == KPROF_OK && !(!r->raw && (names[id] & KP_HOST_CALL_POLLING)))
                st = kp_aggregation_add(agg, e, err);
            if (st == KPROF_OK && launched && has_corr)
                st = kp_corr_add(&calls, process, corr, s, err);
            /* A call that succeeded in putting work on the device, and none of it arrived. */
            if ((names[id] & KP_HOST_CALL_LAUNCH) && !launched && (ev.has & KP_TRACE_HAS_STATUS) &&
                e->status == 0)
                r->calls_without_work++;
            break;
        }
        case KP_EVENT_KERNEL:
        case KP_EVENT_MEMCPY:
        case KP_EVENT_MEMSET:
            if (st == KPROF_OK) st = kp_aggregation_add(agg, e, err);
            if (trace_columns) kp_trace_columns_add(&r->columns, &ev);
            if (st == KPROF_OK && has_corr) {
                st = kp_corr_add(&ops, process, corr, s, err);
            } else if (st == KPROF_OK) {
                r->ops_without_call++; /* no correlation: no call can be its own */
            }
            if (st == KPROF_OK && (e->known & KP_EVENT_HAS_QUEUED))
                st = kp_samples_add(&queued, (double)kp_ns_diff(s, e->queued_ns) / 1e9, err);
            if (st == KPROF_OK && (e->known & KP_EVENT_HAS_SUBMITTED))
                st = kp_samples_add(&submitted, (double)kp_ns_diff(s, e->submitted_ns) / 1e9, err);
            break;
        case KP_EVENT_RANGE:
            if (e->domain == KP_DOMAIN_SCOPE)
                r->has_scopes = 1;
            else
                r->has_nvtx = 1;
            if (st == KPROF_OK) st = kp_aggregation_add(agg, e, err);
            break;
        default:
            if (trace_columns) kp_trace_columns_add(&r->columns, &ev); /* bytes of any kind */
            break;
        }
        if (st != KPROF_OK) goto done;
    }
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st != KPROF_OK) goto done;
    if (backwards) { /* the damaged trace says so: a note (JSON's notes too) */
        char note[160];
        kp_str_printf(&r->notes, "%s in every table and row\n",
                      kp_format_ends_before_start(backwards, note, sizeof note));
    }
    if ((st = kp_aggregation_finish(agg, err)) != KPROF_OK) goto done;
    if ((st = kp_report_tables(r, agg, err)) != KPROF_OK) goto done;
    if (r->is_job && (st = kp_trace_job_finish(&r->job, err)) != KPROF_OK) goto done;
    for (int i = 0; i < r->host.n; i++)
        r->host_total += r->host.rows[i].total;
    if ((st = kp_report_pair(r, &calls, &ops, &launch, err)) != KPROF_OK) goto done;
    kp_latency_from(&launch, &r->launch);
    kp_latency_from(&queued, &r->queued);
    kp_latency_from(&submitted, &r->submitted);
    /* The verdicts: the whole wall, the active window, each top-level NVTX range name. */
    st = kp_trace_verdicts_finish(&r->v, err);
    goto done;
nomem:
    st = kp_error_nomem(err);
done:
    kp_event_iter_close(it, NULL);
    kp_aggregation_destroy(agg);
    free(calls.v);
    free(ops.v);
    free(launch.v);
    free(queued.v);
    free(submitted.v);
    return st;
}

void kp_report_free(kp_report *r)
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
    memset(r, 0, sizeof *r);
}

int kp_report_hidden(const kp_report *r, uint32_t name)
{
    return !r->raw && name < r->nnames && (r->name_flags[name] & KP_HOST_CALL_POLLING);
}

const char *kp_report_name_of(const kp_report *r, const kp_event *e)
{
    const char *name = kp_event_source_string(r->src, e->name, NULL);
    return name ? name : "?";
}

/* ---- the chronological trace ---------------------------------------------------------------- */

const kp_event_filter kp_report_device_rows = {
    .kind_flags = KP_EVENT_F_DEVICE,
    .order = KP_EVENT_ORDER_START,
    .fields = KP_EVENT_FIELD_STREAM | KP_EVENT_FIELD_QUEUE | KP_EVENT_FIELD_KERNEL |
              KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_LAUNCH | KP_EVENT_FIELD_METRICS};

const kp_event_filter kp_report_host_rows = {.kind_flags = KP_EVENT_F_HOST_CALL,
                                             .order = KP_EVENT_ORDER_START,
                                             .fields = KP_EVENT_FIELD_PID | KP_EVENT_FIELD_METRICS};

static int64_t kp_i64_of(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

void kp_report_device_row_read(const kp_report *r, const kp_trace_event *ev,
                               kp_report_device_row *d)
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
    d->name = kp_report_name_of(r, e);
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

void kp_report_range_window(const kp_range_verdict *rv, char *buf, size_t n)
{
    if (rv->instances == 1)
        snprintf(buf, n, "the '%s' range", rv->name);
    else
        snprintf(buf, n, "the %llu '%s' ranges", (unsigned long long)rv->instances, rv->name);
}

double kp_report_straggler_share(const kp_job_stragglers *g)
{
    if (g->timed_total_ns <= 0) return 0;
    double share = (double)g->wait_total_ns / (double)g->timed_total_ns;
    return share < 1 ? share : 1;
}
