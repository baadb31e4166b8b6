/*
 * cmd_report.c — `kprof report FILE`: a trace the way Metal.jl's and CUDA.jl's @profile show
 * one — header, host table, device table, NVTX ranges, optionally the chronological trace — and
 * the submission-economics verdict; or the same as --json or --csv.
 */
#include "core/event.h"
#include "core/format.h"
#include "core/stats.h"
#include "core/verdict.h"
#include "export/json.h"
#include "export/text.h"
#include "store/trace_db.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls hidden unless --raw: polling, queries and bookkeeping (CUDA.jl's list, plus OpenCL's). */
static const char *const kp_noisy[] = {
    "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuCtxPushCurrent", "cuCtxPopCurrent",
    "cuStreamQuery", "cuEventQuery", "cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceGetCount",
    "cuDriverGetVersion", "cuGetProcAddress", "cuPointerGetAttribute", "cuPointerGetAttributes",
    "cuCtxGetId", "cuStreamGetCaptureInfo", "cuStreamIsCapturing", "cuGetExportTable",
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDevice", "cudaGetDeviceCount",
    "cudaDeviceGetAttribute", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
    "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaStreamQuery",
    "cudaEventQuery", "clGetEventInfo", "clGetDeviceInfo", "clGetPlatformInfo", "clGetKernelInfo",
    "clGetEventProfilingInfo", "clGetPlatformIDs", "clGetDeviceIDs", "clGetProgramBuildInfo",
    "clGetProgramInfo", "clGetMemObjectInfo", "clRetainEvent", "clReleaseEvent", NULL};

/* Calls in which the host waits for the device. */
static const char *const kp_sync_calls[] = {
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH", "cuMemcpyHtoD",
    "clFinish", "clWaitForEvents", NULL};

/* Calls that put work on a device (name prefixes, so every variant counts: _v2, _ptsz, Async,
 * Ex, Rect): when one succeeds, a kernel, copy or fill of its correlation follows. Those of
 * OpenCL are the enqueues kprof's layer times. */
static const char *const kp_launch_prefixes[] = {"cudaLaunch",
                                                 "cuLaunch",
                                                 "cudaGraphLaunch",
                                                 "cuGraphLaunch",
                                                 "cudaMemcpy",
                                                 "cuMemcpy",
                                                 "cudaMemset",
                                                 "cuMemset",
                                                 "clEnqueueNDRangeKernel",
                                                 "clEnqueueTask",
                                                 "clEnqueueReadBuffer",
                                                 "clEnqueueWriteBuffer",
                                                 "clEnqueueCopyBuffer",
                                                 "clEnqueueFillBuffer",
                                                 NULL};

/* ... except these, whose work runs on the host. */
static const char *const kp_host_launches[] = {"cudaLaunchHostFunc", "cuLaunchHostFunc", NULL};

static int kp_in_list(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(name, list[i]) == 0) return 1;
    return 0;
}

static int kp_launches_device_work(const char *name)
{
    if (kp_in_list(name, kp_host_launches)) return 0;
    for (int i = 0; kp_launch_prefixes[i]; i++)
        if (strncmp(name, kp_launch_prefixes[i], strlen(kp_launch_prefixes[i])) == 0) return 1;
    return 0;
}

typedef struct kp_group {
    char name[512];
    uint64_t calls;
    double total, mean, std, min, max; /* seconds */
} kp_group;

typedef struct kp_group_list {
    kp_group *rows;
    int n, cap;
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

typedef struct kp_report {
    sqlite3 *db;
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
    char **names; /* by string id, kept for the timeline and its verdicts */
    int64_t nnames;
    unsigned api; /* KP_API_* seen */
    kp_timeline *timeline;
    kp_verdict_input wall_in; /* the whole wall */
    kp_verdict wall_v;
    int has_active; /* some device operation: the active window exists */
    int64_t active_start, active_end;
    kp_verdict_input active_in; /* first to last device operation */
    kp_verdict active_v;
    kp_range_verdict *ranges; /* top-level NVTX ranges, one per name */
    size_t nranges;
    kp_latency launch;    /* device op start - its launching call's start */
    kp_latency queued;    /* start - queued_ns */
    kp_latency submitted; /* start - submitted_ns */
    char command[2048];
    int processes;
    kp_str notes; /* the trace's notes, distinct, one per line */
} kp_report;

static kprof_status kp_sql_fail(kp_report *r, kp_error *err)
{
    return kp_trace_db_read_error(r->path, sqlite3_extended_errcode(r->db), sqlite3_errmsg(r->db),
                                  err);
}

/* Per-name accumulators of one table, indexed by string id. */
typedef struct kp_acc {
    uint64_t calls;
    double total, ss; /* ns, ns^2 */
    int64_t min, max;
} kp_acc;

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
static kprof_status kp_groups_from(const kp_acc *acc, char *const *names, int64_t nnames,
                                   kp_group_list *out, kp_error *err)
{
    for (int64_t id = 0; id < nnames; id++) {
        const kp_acc *a = &acc[id];
        if (!a->calls) continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 32;
            kp_group *g = realloc(out->rows, (size_t)out->cap * sizeof *g);
            if (!g) return kp_error_set(err, KPROF_NOMEM, "out of memory");
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

/* Launching calls by (process row, correlation), each with its earliest start: the report's
 * one pass pairs every device operation with its call without a query per operation (which
 * cost four times the rest of a 300k-kernel report). Open addressing, linear probing. */
typedef struct kp_call_slot {
    int64_t process, correlation, start;
    int used;
} kp_call_slot;

typedef struct kp_call_map {
    kp_call_slot *slots;
    size_t cap, n; /* cap a power of two, at most half full */
} kp_call_map;

/* A device operation waiting for its call, found once every call has been seen. */
typedef struct kp_pending_op {
    int64_t process, correlation, start;
} kp_pending_op;

static size_t kp_call_slot_of(const kp_call_map *m, int64_t process, int64_t correlation)
{
    uint64_t h =
        (uint64_t)process * 0x9E3779B97F4A7C15ull ^ (uint64_t)correlation * 0xC2B2AE3D27D4EB4Full;
    size_t i = (size_t)(h ^ h >> 29) & (m->cap - 1);
    while (m->slots[i].used &&
           (m->slots[i].process != process || m->slots[i].correlation != correlation))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int kp_call_map_put(kp_call_map *m, int64_t process, int64_t correlation, int64_t start)
{
    if ((m->n + 1) * 2 > m->cap) {
        kp_call_map bigger = {calloc(m->cap ? m->cap * 2 : 1024, sizeof *m->slots),
                              m->cap ? m->cap * 2 : 1024, 0};
        if (!bigger.slots) return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].used) continue;
            bigger.slots[kp_call_slot_of(&bigger, m->slots[i].process, m->slots[i].correlation)] =
                m->slots[i];
            bigger.n++;
        }
        free(m->slots);
        *m = bigger;
    }
    kp_call_slot *s = &m->slots[kp_call_slot_of(m, process, correlation)];
    if (!s->used) {
        *s = (kp_call_slot){process, correlation, start, 1};
        m->n++;
    } else if (start < s->start) {
        s->start = start;
    }
    return 0;
}

/* 1 with the call's start in *start, or 0 when no call of that process has that correlation. */
static int kp_call_map_get(const kp_call_map *m, int64_t process, int64_t correlation,
                           int64_t *start)
{
    if (!m->cap) return 0;
    const kp_call_slot *s = &m->slots[kp_call_slot_of(m, process, correlation)];
    if (!s->used) return 0;
    *start = s->start;
    return 1;
}

/* One pass over the events, in storage order: the three tables, the timeline the verdicts are
 * computed from, launch latency and queue waits. */
/* What the collectors and the merge had to say (CUPTI unusable, records that could not be
 * written, ...), each text once. */
static void kp_report_load_notes(kp_report *r)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT text FROM notes GROUP BY text ORDER BY MIN(rowid)", -1,
                           &q, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(q, 0);
        if (text && *text) kp_str_printf(&r->notes, "%s\n", text);
    }
    sqlite3_finalize(q);
}

static kprof_status kp_report_load(kp_report *r, kp_error *err)
{
    kp_trace_db_meta(r->db, "command", r->command, sizeof r->command);
    int64_t start = kp_trace_db_meta_int(r->db, "start_ns");
    int64_t end = kp_trace_db_meta_int(r->db, "end_ns");
    if (end <= start) { /* no meta: the span of the events */
        start = kp_trace_db_scalar(r->db, "SELECT MIN(start_ns) FROM events", 0);
        end = kp_trace_db_scalar(r->db, "SELECT MAX(end_ns) FROM events", 0);
    }
    r->start_ns = start;
    r->end_ns = end > start ? end : start;
    r->wall = (double)kp_ns_diff(r->end_ns, start) / 1e9;
    r->dropped = (uint64_t)kp_trace_db_scalar(r->db, "SELECT TOTAL(dropped) FROM processes", 0);
    r->processes = (int)kp_trace_db_scalar(r->db, "SELECT COUNT(*) FROM processes", 0);
    r->unclosed = (int)kp_trace_db_scalar(
        r->db, "SELECT COUNT(*) FROM processes WHERE COALESCE(clean_exit, 0) = 0", 0);
    kp_report_load_notes(r);

    int64_t nnames = kp_trace_db_string_slots(r->db);
    r->nnames = nnames;
    r->names = calloc((size_t)nnames, sizeof *r->names);
    kp_acc *host = calloc((size_t)nnames, sizeof *host);
    kp_acc *device = calloc((size_t)nnames, sizeof *device);
    kp_acc *nvtx = calloc((size_t)nnames, sizeof *nvtx);
    /* 1 noisy, 2 synchronizing, 4 puts work on the device */
    unsigned char *flags = calloc((size_t)nnames, 1);
    kp_samples launch = {0}, queued = {0}, submitted = {0};
    kp_call_map calls = {0};
    kp_pending_op *pending = NULL;
    size_t npending = 0, cappending = 0;
    kprof_status st = KPROF_OK;
    sqlite3_stmt *q = NULL;
    if (!r->names || !host || !device || !nvtx || !flags) goto nomem;
    if (sqlite3_prepare_v2(r->db, "SELECT id, text FROM strings", -1, &q, NULL) != SQLITE_OK) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        const char *text = (const char *)sqlite3_column_text(q, 1);
        if (id < 0 || id >= nnames || !text) continue;
        r->names[id] = strdup(text);
        if (!r->names[id]) goto nomem;
        flags[id] =
            (unsigned char)(kp_in_list(text, kp_noisy) | kp_in_list(text, kp_sync_calls) << 1 |
                            kp_launches_device_work(text) << 2);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc != SQLITE_DONE) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    if (sqlite3_prepare_v2(r->db,
                           "SELECT e.kind, e.name, e.start_ns, e.end_ns, e.process, e.tid, "
                           "e.domain, e.queued_ns, e.submitted_ns, e.correlation, "
                           "e.launched, e.status FROM events e",
                           -1, &q, NULL) != SQLITE_OK) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    r->timeline =
        kp_timeline_create(r->start_ns, r->end_ns, (const char *const *)r->names, (size_t)nnames);
    if (!r->timeline) goto nomem;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int kind = sqlite3_column_int(q, 0);
        int64_t id = sqlite3_column_int64(q, 1);
        if (id < 0 || id >= nnames) id = 0;
        int64_t s = sqlite3_column_int64(q, 2), e = sqlite3_column_int64(q, 3);
        int64_t d = kp_ns_diff(e, s);
        int domain = sqlite3_column_int(q, 6);
        int64_t process = sqlite3_column_int64(q, 4);
        r->events++;
        if (domain == KP_DOMAIN_OPENCL) r->api |= KP_API_OPENCL;
        int fail = 0;
        switch (kind) {
        case KP_EVENT_API: {
            if (domain == KP_DOMAIN_CUDA_RUNTIME || domain == KP_DOMAIN_CUDA_DRIVER)
                r->api |= KP_API_CUDA;
            int hidden = !r->raw && (flags[id] & 1), sync = (flags[id] & 2) != 0;
            if (!hidden) kp_acc_add(&host[id], d);
            if (!hidden || sync) fail = kp_timeline_add_call(r->timeline, s, e, (uint32_t)id, sync);
            if (!fail && sqlite3_column_int(q, 10) && sqlite3_column_type(q, 9) != SQLITE_NULL)
                fail = kp_call_map_put(&calls, process, sqlite3_column_int64(q, 9), s);
            /* A call that succeeded in putting work on the device, and none of it arrived. */
            if ((flags[id] & 4) && !sqlite3_column_int(q, 10) &&
                sqlite3_column_type(q, 11) != SQLITE_NULL && sqlite3_column_int64(q, 11) == 0)
                r->calls_without_work++;
            break;
        }
        case KP_EVENT_KERNEL:
        case KP_EVENT_MEMCPY:
        case KP_EVENT_MEMSET:
            kp_acc_add(&device[id], d);
            fail = kp_timeline_add_op(r->timeline, s, e, (uint32_t)id, kind == KP_EVENT_KERNEL);
            if (!fail && sqlite3_column_type(q, 9) != SQLITE_NULL) {
                if (npending == cappending) {
                    size_t cap = cappending ? cappending * 2 : 4096;
                    kp_pending_op *p = realloc(pending, cap * sizeof *p);
                    if (!p) goto nomem;
                    pending = p;
                    cappending = cap;
                }
                pending[npending++] = (kp_pending_op){process, sqlite3_column_int64(q, 9), s};
            } else if (!fail) {
                r->ops_without_call++; /* no correlation: no call can be its own */
            }
            if (!fail && sqlite3_column_type(q, 7) != SQLITE_NULL)
                fail = kp_samples_add(
                    &queued, (double)kp_ns_diff(s, sqlite3_column_int64(q, 7)) / 1e9);
            if (!fail && sqlite3_column_type(q, 8) != SQLITE_NULL)
                fail = kp_samples_add(
                    &submitted, (double)kp_ns_diff(s, sqlite3_column_int64(q, 8)) / 1e9);
            break;
        case KP_EVENT_SYNC:
            fail = kp_timeline_add_wait(r->timeline, s, e);
            break;
        case KP_EVENT_RANGE: {
            kp_acc_add(&nvtx[id], d);
            /* A thread is (process row, tid): ranges nest per thread. */
            int64_t thread =
                (int64_t)((uint64_t)process << 32 | (uint32_t)sqlite3_column_int64(q, 5));
            fail = kp_timeline_add_range(r->timeline, s, e, (uint32_t)id, thread);
            break;
        }
        default: break;
        }
        if (fail) goto nomem;
    }
    if (rc != SQLITE_DONE) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    st = kp_groups_from(host, r->names, nnames, &r->host, err);
    if (st == KPROF_OK) st = kp_groups_from(device, r->names, nnames, &r->device, err);
    if (st == KPROF_OK) st = kp_groups_from(nvtx, r->names, nnames, &r->nvtx, err);
    if (st != KPROF_OK) goto done;
    for (int i = 0; i < r->host.n; i++) r->host_total += r->host.rows[i].total;
    for (size_t i = 0; i < npending; i++) {
        int64_t call;
        if (!kp_call_map_get(&calls, pending[i].process, pending[i].correlation, &call))
            r->ops_without_call++;
        else if (kp_samples_add(&launch, (double)kp_ns_diff(pending[i].start, call) / 1e9) != 0)
            goto nomem;
    }
    kp_latency_from(&launch, &r->launch);
    kp_latency_from(&queued, &r->queued);
    kp_latency_from(&submitted, &r->submitted);
    /* The verdicts: the whole wall, the active window, each top-level NVTX range name. */
    kp_timeline_set_api(r->timeline, r->api);
    if (kp_timeline_prepare(r->timeline) != 0 ||
        kp_timeline_window(r->timeline, r->start_ns, r->end_ns, &r->wall_in) != 0)
        goto nomem;
    kp_verdict_compute(&r->wall_in, &r->wall_v);
    r->has_active = kp_timeline_active(r->timeline, &r->active_start, &r->active_end);
    if (r->has_active) {
        if (kp_timeline_window(r->timeline, r->active_start, r->active_end, &r->active_in) != 0)
            goto nomem;
        kp_verdict_compute(&r->active_in, &r->active_v);
    }
    if (kp_timeline_ranges(r->timeline, &r->ranges, &r->nranges) != 0) goto nomem;
    goto done;
nomem:
    st = kp_error_set(err, KPROF_NOMEM, "out of memory");
done:
    sqlite3_finalize(q);
    free(host);
    free(device);
    free(nvtx);
    free(flags);
    free(calls.slots);
    free(pending);
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
    free(r->ranges);
    kp_timeline_destroy(r->timeline);
    if (r->names)
        for (int64_t i = 0; i < r->nnames; i++)
            free(r->names[i]);
    free(r->names);
    sqlite3_close(r->db);
}

/* ---- text ---------------------------------------------------------------------------------- */

/* The distribution cell: mean ± std (min ‥ max), the unit on the mean only. */
static void kp_dist(const kp_group *g, char *buf, size_t n)
{
    char mean[32];
    kp_format_duration(g->mean, mean, sizeof mean);
    double scale = 1;
    const char *u = strchr(mean, ' ');
    if (u && strcmp(u + 1, "ns") == 0) scale = 1e9;
    else if (u && strcmp(u + 1, "µs") == 0) scale = 1e6;
    else if (u && strcmp(u + 1, "ms") == 0) scale = 1e3;
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

static void kp_print_table(const kp_report *r, const kp_group_list *l)
{
    FILE *o = stdout;
    int dist = 0;
    for (int i = 0; i < l->n; i++) dist |= l->rows[i].calls > 1;
    double p75, p95;
    kp_thresholds(l, &p75, &p95);
    printf("  %9s  %10s  %8s  ", "Time (%)", "Total time", "Calls");
    if (dist) printf("%-38s  ", "Time distribution");
    printf("Name\n");
    for (int i = 0; i < l->n; i++) {
        const kp_group *g = &l->rows[i];
        const char *colour = g->total >= p95 ? kp_text_red(o) : g->total >= p75 ? kp_text_yellow(o) : "";
        const char *reset = *colour ? kp_text_reset(o) : "";
        const char *bold = g->total >= p75 ? kp_text_bold(o) : "";
        char pct[32], tot[32], d[160] = "";
        snprintf(pct, sizeof pct, "%.2f%%", r->wall > 0 ? 100 * g->total / r->wall : 0);
        kp_format_duration(g->total, tot, sizeof tot);
        if (dist) {
            if (g->calls > 1) kp_dist(g, d, sizeof d);
            else snprintf(d, sizeof d, "%s", "");
        }
        printf("  %s%9s  %10s%s  %8llu  ", colour, pct, tot, reset, (unsigned long long)g->calls);
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
    int has_grid;       /* a kernel with its geometry */
    int runtime_groups; /* the runtime chose the group size: grid holds work-items */
    int64_t grid[3], block[3];
    int has_regs, has_smem, has_local, has_bytes;
    int64_t regs, smem, local, bytes;
    int has_launch, has_queued, has_submitted;
    int64_t launch_ns, queued_ns, submitted_ns; /* to the operation's start */
    int64_t device, stream;
    const char *name;
} kp_device_row;

/* The device operations in time order, each with its launching call's start for the --trace
 * rows: the earliest API call of the same process and correlation (index events_correlation). */
static const char *kp_device_rows_sql(char *sql, size_t n)
{
    char device[64];
    kp_event_kind_ids(KP_EVENT_F_DEVICE, device, sizeof device);
    snprintf(sql, n,
             "SELECT e.correlation, e.start_ns, e.end_ns, e.grid_x, e.grid_y, e.grid_z, e.block_x, "
             "e.block_y, e.block_z, e.registers, e.static_smem, e.dynamic_smem, e.local_mem, "
             "e.bytes, COALESCE(s.text, '?'), e.device, e.stream, e.kind, e.queued_ns, "
             "e.submitted_ns, CASE WHEN e.kind IN (%s) AND e.correlation IS NOT NULL THEN "
             "(SELECT MIN(a.start_ns) FROM events a WHERE a.process = e.process AND "
             "a.correlation = e.correlation AND a.kind = %d) END FROM events e LEFT JOIN strings "
             "s ON s.id = e.name WHERE e.kind IN (%s) ORDER BY e.start_ns",
             device, KP_EVENT_API, device);
    return sql;
}

/* The host calls (API calls and waits) in time order. */
static const char *kp_host_rows_sql(char *sql, size_t n)
{
    char host[64];
    snprintf(sql, n,
             "SELECT e.correlation, e.start_ns, e.end_ns, e.pid, e.tid, COALESCE(s.text, '?'), "
             "e.kind FROM events e LEFT JOIN strings s ON s.id = e.name WHERE e.kind IN (%s) "
             "ORDER BY e.start_ns",
             kp_event_kind_ids(KP_EVENT_F_HOST_CALL, host, sizeof host));
    return sql;
}

static int kp_col_null(sqlite3_stmt *q, int col)
{
    return sqlite3_column_type(q, col) == SQLITE_NULL;
}

static void kp_device_row_read(sqlite3_stmt *q, kp_device_row *d)
{
    memset(d, 0, sizeof *d);
    d->has_id = !kp_col_null(q, 0);
    d->id = sqlite3_column_int64(q, 0);
    d->start = sqlite3_column_int64(q, 1);
    d->end = sqlite3_column_int64(q, 2);
    d->kind = sqlite3_column_int(q, 17);
    d->has_grid = d->kind == KP_EVENT_KERNEL && !kp_col_null(q, 3) && !kp_col_null(q, 6);
    for (int i = 0; i < 3; i++) {
        d->grid[i] = sqlite3_column_int64(q, 3 + i);
        d->block[i] = sqlite3_column_int64(q, 6 + i);
    }
    d->runtime_groups = d->has_grid && d->block[0] == 0;
    d->has_regs = !kp_col_null(q, 9);
    d->regs = sqlite3_column_int64(q, 9);
    d->has_smem = !kp_col_null(q, 10) && !kp_col_null(q, 11);
    d->smem = kp_i64_add_sat(sqlite3_column_int64(q, 10), sqlite3_column_int64(q, 11));
    d->has_local = !kp_col_null(q, 12);
    d->local = sqlite3_column_int64(q, 12);
    d->has_bytes = !kp_col_null(q, 13);
    d->bytes = sqlite3_column_int64(q, 13);
    d->name = (const char *)sqlite3_column_text(q, 14);
    d->device = sqlite3_column_int64(q, 15);
    d->stream = sqlite3_column_int64(q, 16);
    d->has_queued = !kp_col_null(q, 18);
    d->queued_ns = kp_ns_diff(d->start, sqlite3_column_int64(q, 18));
    d->has_submitted = !kp_col_null(q, 19);
    d->submitted_ns = kp_ns_diff(d->start, sqlite3_column_int64(q, 19));
    d->has_launch = !kp_col_null(q, 20);
    d->launch_ns = kp_ns_diff(d->start, sqlite3_column_int64(q, 20));
}

/* Dims without trailing 1s: "256", "64x8". */
static void kp_dims(const int64_t v[3], char *buf, size_t n)
{
    if (v[2] > 1) snprintf(buf, n, "%lldx%lldx%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    else if (v[1] > 1) snprintf(buf, n, "%lldx%lld", (long long)v[0], (long long)v[1]);
    else snprintf(buf, n, "%lld", (long long)v[0]);
}

/* Threads in all per dimension: the work-items where the runtime chose the groups, else groups
 * times threads per group. */
static void kp_global_size(const kp_device_row *d, int64_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = d->runtime_groups ? d->grid[i] : d->grid[i] * d->block[i];
}

static const char *kp_dur_or_dash(int has, int64_t ns, char *buf, size_t n)
{
    if (!has) return "-";
    return kp_format_duration((double)ns / 1e9, buf, n);
}

static kprof_status kp_print_trace(kp_report *r, kp_error *err)
{
    /* Host side. */
    sqlite3_stmt *q = NULL;
    char sql[1024];
    if (sqlite3_prepare_v2(r->db, kp_host_rows_sql(sql, sizeof sql), -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    printf("\nHost-side trace:\n  %8s  %12s  %10s  %8s  Name\n", "ID", "Start", "Time", "Thread");
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 5);
        if (!r->raw && kp_in_list(name, kp_noisy)) continue;
        char id[32] = "-", st[32], du[32];
        if (sqlite3_column_type(q, 0) != SQLITE_NULL)
            snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(q, 0));
        kp_format_duration((double)kp_ns_diff(sqlite3_column_int64(q, 1), r->start_ns) / 1e9,
                           st, sizeof st);
        kp_format_duration(
            (double)kp_ns_diff(sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 1)) / 1e9,
            du, sizeof du);
        printf("  %8s  %12s  %10s  %8lld  %s\n", id, st, du, (long long)sqlite3_column_int64(q, 4),
               name);
    }
    sqlite3_finalize(q);
    /* Device side, with the columns that have any value. */
    int has_grid = 0, has_regs = 0, has_smem = 0, has_local = 0, has_size = 0, has_global = 0;
    snprintf(sql, sizeof sql,
             "SELECT MAX(kind = %d AND grid_x IS NOT NULL), MAX(kind = %d AND registers > 0), "
             "MAX(kind = %d AND static_smem + dynamic_smem > 0), MAX(kind = %d AND local_mem > 0), "
             "MAX(bytes > 0), MAX(kind = %d AND block_x = 0) FROM events",
             KP_EVENT_KERNEL, KP_EVENT_KERNEL, KP_EVENT_KERNEL, KP_EVENT_KERNEL, KP_EVENT_KERNEL);
    if (sqlite3_prepare_v2(r->db, sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        has_grid = sqlite3_column_int(q, 0) > 0;
        has_regs = sqlite3_column_int(q, 1) > 0;
        has_smem = sqlite3_column_int(q, 2) > 0;
        has_local = sqlite3_column_int(q, 3) > 0;
        has_size = sqlite3_column_int(q, 4) > 0;
        has_global = sqlite3_column_int(q, 5) > 0;
    }
    sqlite3_finalize(q);
    int has_launch = r->launch.n > 0, has_queued = r->queued.n > 0;
    int has_submitted = r->submitted.n > 0;
    if (sqlite3_prepare_v2(r->db, kp_device_rows_sql(sql, sizeof sql), -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    printf("\nDevice-side trace:\n  %8s  %12s  %10s", "ID", "Start", "Time");
    if (has_grid) printf("  %12s  %10s", "Threadgroups", "Threads");
    if (has_global) printf("  %12s", "Global size");
    if (has_regs) printf("  %5s", "Regs");
    if (has_smem) printf("  %10s", "Shared mem");
    if (has_local) printf("  %10s", "Local mem");
    if (has_size) printf("  %10s  %12s", "Size", "Throughput");
    if (has_launch) printf("  %10s", "Launch lat");
    if (has_queued) printf("  %10s", "Queue wait");
    if (has_submitted) printf("  %11s", "Submit wait");
    printf("  Name\n");
    while (sqlite3_step(q) == SQLITE_ROW) {
        kp_device_row d;
        kp_device_row_read(q, &d);
        char id[32] = "-", st[32], du[32], grid[48], block[48], buf[48];
        if (d.has_id) snprintf(id, sizeof id, "%lld", (long long)d.id);
        double dur = (double)kp_ns_diff(d.end, d.start) / 1e9;
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
        if (has_size) {
            if (!d.has_bytes) {
                printf("  %10s  %12s", "-", "-");
            } else {
                char tp[48];
                double gbs = dur > 0 ? (double)d.bytes / dur / 1e9 : 0;
                snprintf(tp, sizeof tp, "%.2f GB/s", gbs);
                printf("  %10s  %12s", kp_format_bytes((uint64_t)d.bytes, buf, sizeof buf), tp);
            }
        }
        if (has_launch)
            printf("  %10s", kp_dur_or_dash(d.has_launch, d.launch_ns, buf, sizeof buf));
        if (has_queued)
            printf("  %10s", kp_dur_or_dash(d.has_queued, d.queued_ns, buf, sizeof buf));
        if (has_submitted)
            printf("  %11s", kp_dur_or_dash(d.has_submitted, d.submitted_ns, buf, sizeof buf));
        printf("  %s\n", d.name);
    }
    sqlite3_finalize(q);
    return KPROF_OK;
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
    printf("\nHost-side activity: calling GPU APIs took %s (%.2f%% of the wall)%s\n",
           kp_format_duration(r->host_total, a, sizeof a),
           r->wall > 0 ? 100 * r->host_total / r->wall : 0,
           r->raw ? "" : "; polling and query calls hidden (--raw shows them)");
    if (r->host.n) kp_print_table(r, &r->host);
    else printf("  (no host API calls recorded)\n");
    printf("\nDevice-side activity: GPU was busy for %s (%.2f%% of the wall)\n",
           kp_format_duration(r->wall_in.gpu_busy_s, b, sizeof b), 100 * r->wall_v.busy_fraction);
    if (r->device.n) kp_print_table(r, &r->device);
    else printf("  (no kernels, copies or fills recorded)\n");
    kp_print_latency(r);
    if (r->nvtx.n) {
        printf("\nNVTX ranges:\n");
        kp_print_table(r, &r->nvtx);
    }
}

/* The numbers under a verdict's heading, then its sentence; indent is the lines' margin. */
static void kp_print_window(const kp_report *r, const kp_verdict_input *in, const kp_verdict *v,
                            const char *window, const char *indent)
{
    char a[32], b[32], c[32], gap[320], name[160];
    printf("%sGPU busy %s of %s (%.1f%%); %llu gaps between device operations", indent,
           kp_format_duration(in->gpu_busy_s, a, sizeof a),
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
    printf("\nVerdict: %s over the wall (%s)\n", kp_verdict_name(r->wall_v.kind),
           kp_format_duration(r->wall_in.wall_s, a, sizeof a));
    kp_print_window(r, &r->wall_in, &r->wall_v, "the wall", "  ");
    if (r->has_active) {
        printf("\nVerdict: %s over the active window (%s from %s: first to last device "
               "operation)\n",
               kp_verdict_name(r->active_v.kind),
               kp_format_duration(r->active_in.wall_s, a, sizeof a),
               kp_format_duration((double)kp_ns_diff(r->active_start, r->start_ns) / 1e9, b,
                                  sizeof b));
        kp_print_window(r, &r->active_in, &r->active_v, "the active window", "  ");
    }
    if (r->nranges) {
        printf("\nVerdict per top-level NVTX range (all instances of a name together):\n");
        for (size_t i = 0; i < r->nranges && i < KP_RANGES_SHOWN; i++) {
            const kp_range_verdict *rv = &r->ranges[i];
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
        if (r->nranges > KP_RANGES_SHOWN)
            printf("  … %zu more range names (--json lists them all)\n",
                   r->nranges - KP_RANGES_SHOWN);
    }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

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
        kp_json_double(j, "at_s",
                       (double)kp_ns_diff(in->longest_gap_at_ns, r->start_ns) / 1e9);
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

/* --trace --json: the chronological rows, with what is known and null or nothing for what is
 * not. */
static kprof_status kp_json_trace(kp_json *j, kp_report *r, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    char sql[1024];
    if (sqlite3_prepare_v2(r->db, kp_host_rows_sql(sql, sizeof sql), -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    kp_json_array_begin(j, "host_trace");
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 5);
        if (!r->raw && kp_in_list(name, kp_noisy)) continue;
        kp_json_object_begin(j, NULL);
        if (kp_col_null(q, 0))
            kp_json_null(j, "id");
        else
            kp_json_int(j, "id", sqlite3_column_int64(q, 0));
        kp_json_string(j, "kind", kp_event_kind_name(sqlite3_column_int(q, 6)));
        kp_json_double(j, "start_s",
                       (double)kp_ns_diff(sqlite3_column_int64(q, 1), r->start_ns) / 1e9);
        kp_json_double(
            j, "duration_s",
            (double)kp_ns_diff(sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 1)) /
                1e9);
        kp_json_int(j, "pid", sqlite3_column_int64(q, 3));
        kp_json_int(j, "tid", sqlite3_column_int64(q, 4));
        kp_json_string(j, "name", name);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return kp_sql_fail(r, err);
    if (sqlite3_prepare_v2(r->db, kp_device_rows_sql(sql, sizeof sql), -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    kp_json_array_begin(j, "device_trace");
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        kp_device_row d;
        kp_device_row_read(q, &d);
        double dur = (double)kp_ns_diff(d.end, d.start) / 1e9;
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
        if (d.has_bytes) {
            kp_json_int(j, "bytes", d.bytes);
            if (dur > 0) kp_json_double(j, "gb_per_s", (double)d.bytes / dur / 1e9);
        }
        if (d.has_launch) kp_json_double(j, "launch_to_start_s", (double)d.launch_ns / 1e9);
        if (d.has_queued) kp_json_double(j, "queued_to_start_s", (double)d.queued_ns / 1e9);
        if (d.has_submitted)
            kp_json_double(j, "submitted_to_start_s", (double)d.submitted_ns / 1e9);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? KPROF_OK : kp_sql_fail(r, err);
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
    kp_json_double(&j, "gpu_busy_s", r->wall_in.gpu_busy_s);
    kp_json_groups(&j, "host", &r->host, r->wall);
    kp_json_groups(&j, "device", &r->device, r->wall);
    kp_json_groups(&j, "nvtx", &r->nvtx, r->wall);
    kp_json_latency(&j, r);
    /* The whole wall's verdict at the top (as before), the active window and the NVTX ranges
     * inside it. */
    kp_json_object_begin(&j, "verdict");
    kp_json_string(&j, "window", "wall");
    kp_json_array_begin(&j, "api");
    if (r->api & KP_API_CUDA) kp_json_string(&j, NULL, "cuda");
    if (r->api & KP_API_OPENCL) kp_json_string(&j, NULL, "opencl");
    kp_json_array_end(&j);
    kp_json_window(&j, r, &r->wall_in, &r->wall_v, "the wall");
    if (r->has_active) {
        kp_json_object_begin(&j, "active");
        kp_json_string(&j, "window", "active");
        kp_json_double(&j, "start_s",
                       (double)kp_ns_diff(r->active_start, r->start_ns) / 1e9);
        kp_json_double(&j, "end_s", (double)kp_ns_diff(r->active_end, r->start_ns) / 1e9);
        kp_json_window(&j, r, &r->active_in, &r->active_v, "the active window");
        kp_json_object_end(&j);
    } else {
        kp_json_null(&j, "active");
    }
    kp_json_array_begin(&j, "ranges");
    for (size_t i = 0; i < r->nranges; i++) {
        const kp_range_verdict *rv = &r->ranges[i];
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
    if (st == KPROF_OK && s.failed) st = kp_error_set(err, KPROF_NOMEM, "out of memory");
    if (st == KPROF_OK) fputs(s.data ? s.data : "", stdout);
    kp_str_free(&s);
    return st;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

static void kp_csv_field(const char *raw)
{
    /* CSV has no escapes: bytes that are not UTF-8 become U+FFFD, so the output stays UTF-8. */
    kp_str clean = {0};
    kp_str_append_utf8(&clean, raw, strlen(raw));
    const char *text = clean.data ? clean.data : "";
    if (!strpbrk(text, ",\"\n\r")) {
        fputs(text, stdout);
    } else {
        putchar('"');
        for (const char *p = text; *p; p++) {
            if (*p == '"') putchar('"');
            putchar(*p);
        }
        putchar('"');
    }
    kp_str_free(&clean);
}

/* One verdict row: table "verdict", name the window ("wall", "active", "nvtx:NAME"). */
static void kp_csv_verdict(const kp_report *r, const char *name, uint64_t instances,
                           const kp_verdict_input *in, const kp_verdict *v, const char *window)
{
    char gap[320], sentence[2048];
    printf("verdict,");
    kp_csv_field(name);
    printf(",%llu,%.9g,%.4f,%.9g,,,,", (unsigned long long)instances, in->wall_s,
           r->wall > 0 ? 100 * in->wall_s / r->wall : 0,
           instances ? in->wall_s / (double)instances : 0);
    printf("%s,%.9g,%.9g,%.9g,%.9g,%.9g,", kp_verdict_name(v->kind), v->busy_fraction,
           v->kernel_fraction, v->sync_fraction, v->launches_per_s, v->small_fraction);
    if (in->gaps) printf("%.9g", in->median_gap_s);
    printf(",%.9g,", in->longest_gap_s);
    kp_verdict_gap_text(in, gap, sizeof gap);
    kp_csv_field(gap);
    printf(",,,");
    kp_verdict_describe(in, v, window, r->start_ns, sentence, sizeof sentence);
    kp_csv_field(sentence);
    printf("\n");
}

static void kp_report_csv(const kp_report *r)
{
    printf("table,name,calls,total_s,percent_of_wall,mean_s,std_s,min_s,max_s,verdict,"
           "gpu_busy_fraction,kernel_fraction,host_sync_fraction,launches_per_s,"
           "small_dispatch_fraction,median_gap_s,longest_gap_s,longest_gap_at,median_s,p95_s,"
           "sentence\n");
    const struct {
        const char *name;
        const kp_group_list *l;
    } tables[] = {{"host", &r->host}, {"device", &r->device}, {"nvtx", &r->nvtx}};
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < tables[t].l->n; i++) {
            const kp_group *g = &tables[t].l->rows[i];
            printf("%s,", tables[t].name);
            kp_csv_field(g->name);
            printf(",%llu,%.9g,%.4f,%.9g,%.9g,%.9g,%.9g,,,,,,,,,,,,\n",
                   (unsigned long long)g->calls, g->total,
                   r->wall > 0 ? 100 * g->total / r->wall : 0, g->mean, g->std, g->min, g->max);
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
        printf("latency,%s,%zu,,,%.9g,,%.9g,%.9g,,,,,,,,,,%.9g,%.9g,\n", lat[i].name, l->n, l->mean,
               l->min, l->max, l->median, l->p95);
    }
    kp_csv_verdict(r, "wall", 1, &r->wall_in, &r->wall_v, "the wall");
    if (r->has_active)
        kp_csv_verdict(r, "active", 1, &r->active_in, &r->active_v, "the active window");
    for (size_t i = 0; i < r->nranges; i++) {
        const kp_range_verdict *rv = &r->ranges[i];
        char name[600], window[600];
        snprintf(name, sizeof name, "nvtx:%s", rv->name);
        kp_range_window(rv, window, sizeof window);
        kp_csv_verdict(r, name, rv->instances, &rv->in, &rv->verdict, window);
    }
}

int kp_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"raw", no_argument, NULL, 'r'},   {"trace", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},  {"csv", no_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    kp_report r;
    memset(&r, 0, sizeof r);
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': r.raw = 1; break;
        case 't': r.trace = 1; break;
        case 'j': r.json = 1; break;
        case 'c': r.csv = 1; break;
        default: return kp_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("report", "give the trace FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
    if (r.json && r.csv) return kp_cli_usage_error("report", "--json or --csv, not both");
    if (r.trace && r.csv)
        return kp_cli_usage_error("report", "--trace does not combine with --csv (the trace's "
                                            "rows are not the tables'); --trace --json gives both");
    r.path = argv[optind];
    kp_error err = {0};
    kprof_status st = kp_trace_db_open(r.path, &r.db, &err);
    if (st == KPROF_OK) st = kp_report_load(&r, &err);
    if (st == KPROF_OK) {
        if (r.json)
            st = kp_report_json(&r, &err);
        else if (r.csv) kp_report_csv(&r);
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
