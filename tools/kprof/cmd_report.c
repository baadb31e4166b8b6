/*
 * cmd_report.c — `kprof report FILE`: a trace the way Metal.jl's and CUDA.jl's @profile show
 * one — header, host table, device table, NVTX ranges, optionally the chronological trace — and
 * the submission-economics verdict; or the same as --json or --csv.
 */
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

static int kp_in_list(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(name, list[i]) == 0) return 1;
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

typedef struct kp_report {
    sqlite3 *db;
    const char *path;
    double wall;          /* s */
    uint64_t start_ns;    /* trace start, for relative times */
    uint64_t events, dropped;
    int raw, trace, json, csv;
    kp_group_list host, device, nvtx;
    double host_total;
    kp_verdict_input vin;
    kp_verdict verdict;
    char command[2048];
    int processes;
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

typedef struct kp_span {
    int64_t s, e;
} kp_span;

static int kp_cmp_span(const void *x, const void *y)
{
    const kp_span *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

/* Union of intervals: busy seconds, the gaps between them and the longest. Sorts v. */
static void kp_union(kp_span *v, size_t n, double *busy, uint64_t *gaps, double *longest)
{
    if (n > 1) qsort(v, n, sizeof *v, kp_cmp_span);
    int64_t total = 0, longest_gap = 0, cur_s = 0, cur_e = 0;
    uint64_t ngaps = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = v[i].s, e = v[i].e < v[i].s ? v[i].s : v[i].e;
        if (i == 0) {
            cur_s = s, cur_e = e;
        } else if (s <= cur_e) {
            if (e > cur_e) cur_e = e;
        } else {
            total = kp_i64_add_sat(total, kp_ns_diff(cur_e, cur_s));
            ngaps++;
            if (kp_ns_diff(s, cur_e) > longest_gap) longest_gap = kp_ns_diff(s, cur_e);
            cur_s = s, cur_e = e;
        }
    }
    if (n) total = kp_i64_add_sat(total, kp_ns_diff(cur_e, cur_s));
    *busy = (double)total / 1e9;
    if (gaps) *gaps = ngaps;
    if (longest) *longest = (double)longest_gap / 1e9;
}

typedef struct kp_spans {
    kp_span *v;
    size_t n, cap;
} kp_spans;

static int kp_spans_add(kp_spans *l, int64_t s, int64_t e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        kp_span *v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (kp_span){s, e};
    return 0;
}

/* One pass over the events, in storage order: the three tables, the device and kernel
 * intervals, the verdict's counts. */
static kprof_status kp_report_load(kp_report *r, kp_error *err)
{
    kp_trace_db_meta(r->db, "command", r->command, sizeof r->command);
    int64_t start = kp_trace_db_meta_int(r->db, "start_ns");
    int64_t end = kp_trace_db_meta_int(r->db, "end_ns");
    if (end <= start) { /* no meta: the span of the events */
        start = kp_trace_db_scalar(r->db, "SELECT MIN(start_ns) FROM events", 0);
        end = kp_trace_db_scalar(r->db, "SELECT MAX(end_ns) FROM events", 0);
    }
    r->start_ns = (uint64_t)start;
    r->wall = (double)kp_ns_diff(end, start) / 1e9;
    r->dropped = (uint64_t)kp_trace_db_scalar(r->db, "SELECT TOTAL(dropped) FROM processes", 0);
    r->processes = (int)kp_trace_db_scalar(r->db, "SELECT COUNT(*) FROM processes", 0);

    int64_t nnames = kp_trace_db_string_slots(r->db);
    char **names = calloc((size_t)nnames, sizeof *names);
    kp_acc *host = calloc((size_t)nnames, sizeof *host);
    kp_acc *device = calloc((size_t)nnames, sizeof *device);
    kp_acc *nvtx = calloc((size_t)nnames, sizeof *nvtx);
    unsigned char *flags = calloc((size_t)nnames, 1); /* 1 noisy, 2 synchronizing */
    kp_spans dev = {0}, ker = {0};
    kprof_status st = KPROF_OK;
    sqlite3_stmt *q = NULL;
    if (!names || !host || !device || !nvtx || !flags) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    if (sqlite3_prepare_v2(r->db, "SELECT id, text FROM strings", -1, &q, NULL) != SQLITE_OK) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        const char *text = (const char *)sqlite3_column_text(q, 1);
        if (id < 0 || id >= nnames || !text) continue;
        names[id] = strdup(text);
        flags[id] = (unsigned char)(kp_in_list(text, kp_noisy) | kp_in_list(text, kp_sync_calls) << 1);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc != SQLITE_DONE) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    if (sqlite3_prepare_v2(r->db, "SELECT kind, name, start_ns, end_ns FROM events", -1, &q,
                           NULL) != SQLITE_OK) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    kp_verdict_input *v = &r->vin;
    double api_sync = 0, rec_sync = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int kind = sqlite3_column_int(q, 0);
        int64_t id = sqlite3_column_int64(q, 1);
        if (id < 0 || id >= nnames) id = 0;
        int64_t s = sqlite3_column_int64(q, 2), e = sqlite3_column_int64(q, 3);
        int64_t d = kp_ns_diff(e, s);
        r->events++;
        switch (kind) {
        case 3:
            if (flags[id] & 2) api_sync += (double)d;
            if (!r->raw && (flags[id] & 1)) break;
            kp_acc_add(&host[id], d);
            break;
        case 4:
            v->kernels++;
            v->small_kernels += d < 50000;
            if (kp_spans_add(&ker, s, e) != 0) goto nomem;
            /* fall through */
        case 5:
        case 6:
            kp_acc_add(&device[id], d);
            if (kp_spans_add(&dev, s, e) != 0) goto nomem;
            break;
        case 7: rec_sync += (double)d; break;
        case 8: kp_acc_add(&nvtx[id], d); break;
        default: break;
        }
    }
    if (rc != SQLITE_DONE) {
        st = kp_sql_fail(r, err);
        goto done;
    }
    st = kp_groups_from(host, names, nnames, &r->host, err);
    if (st == KPROF_OK) st = kp_groups_from(device, names, nnames, &r->device, err);
    if (st == KPROF_OK) st = kp_groups_from(nvtx, names, nnames, &r->nvtx, err);
    if (st != KPROF_OK) goto done;
    for (int i = 0; i < r->host.n; i++) r->host_total += r->host.rows[i].total;
    v->wall_s = r->wall;
    kp_union(dev.v, dev.n, &v->gpu_busy_s, &v->gaps, &v->longest_gap_s);
    kp_union(ker.v, ker.n, &v->kernel_busy_s, NULL, NULL);
    /* Host waits: synchronizing API calls; where the collector gave none, its
     * synchronization records. */
    v->host_sync_s = (api_sync > 0 ? api_sync : rec_sync) / 1e9;
    kp_verdict_compute(v, &r->verdict);
    goto done;
nomem:
    st = kp_error_set(err, KPROF_NOMEM, "out of memory");
done:
    sqlite3_finalize(q);
    if (names)
        for (int64_t i = 0; i < nnames; i++) free(names[i]);
    free(names);
    free(host);
    free(device);
    free(nvtx);
    free(flags);
    free(dev.v);
    free(ker.v);
    return st;
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

/* Dims without trailing 1s: "256", "64x8". */
static void kp_dims(sqlite3_stmt *q, int col, char *buf, size_t n)
{
    if (sqlite3_column_type(q, col) == SQLITE_NULL) {
        snprintf(buf, n, "-");
        return;
    }
    int64_t v[3] = {sqlite3_column_int64(q, col), sqlite3_column_int64(q, col + 1),
                    sqlite3_column_int64(q, col + 2)};
    if (v[2] > 1) snprintf(buf, n, "%lldx%lldx%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    else if (v[1] > 1) snprintf(buf, n, "%lldx%lld", (long long)v[0], (long long)v[1]);
    else snprintf(buf, n, "%lld", (long long)v[0]);
}

static kprof_status kp_print_trace(kp_report *r, kp_error *err)
{
    /* Host side. */
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT e.correlation, e.start_ns, e.end_ns, e.pid, e.tid, "
                           "COALESCE(s.text, '?') FROM events e LEFT JOIN strings s ON s.id = "
                           "e.name WHERE e.kind IN (3, 7) ORDER BY e.start_ns",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    printf("\nHost-side trace:\n  %8s  %12s  %10s  %8s  Name\n", "ID", "Start", "Time", "Thread");
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 5);
        if (!r->raw && kp_in_list(name, kp_noisy)) continue;
        char id[32] = "-", st[32], du[32];
        if (sqlite3_column_type(q, 0) != SQLITE_NULL)
            snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(q, 0));
        kp_format_duration((double)kp_ns_diff(sqlite3_column_int64(q, 1), (int64_t)r->start_ns) /
                               1e9,
                           st, sizeof st);
        kp_format_duration(
            (double)kp_ns_diff(sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 1)) / 1e9, du,
            sizeof du);
        printf("  %8s  %12s  %10s  %8lld  %s\n", id, st, du, (long long)sqlite3_column_int64(q, 4),
               name);
    }
    sqlite3_finalize(q);
    /* Device side, with the columns that have any value. */
    int has_grid = 0, has_regs = 0, has_smem = 0, has_local = 0, has_size = 0;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT MAX(kind = 4 AND grid_x IS NOT NULL), MAX(kind = 4 AND "
                           "registers > 0), MAX(kind = 4 AND static_smem + dynamic_smem > 0), "
                           "MAX(kind = 4 AND local_mem > 0), MAX(bytes > 0) FROM events",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        has_grid = sqlite3_column_int(q, 0) > 0;
        has_regs = sqlite3_column_int(q, 1) > 0;
        has_smem = sqlite3_column_int(q, 2) > 0;
        has_local = sqlite3_column_int(q, 3) > 0;
        has_size = sqlite3_column_int(q, 4) > 0;
    }
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(r->db,
                           "SELECT e.correlation, e.start_ns, e.end_ns, e.grid_x, e.grid_y, "
                           "e.grid_z, e.block_x, e.block_y, e.block_z, e.registers, "
                           "e.static_smem, e.dynamic_smem, e.local_mem, e.bytes, "
                           "COALESCE(s.text, '?'), e.device, e.stream FROM events e LEFT JOIN "
                           "strings s ON s.id = e.name WHERE e.kind IN (4,5,6) ORDER BY "
                           "e.start_ns",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_sql_fail(r, err);
    printf("\nDevice-side trace:\n  %8s  %12s  %10s", "ID", "Start", "Time");
    if (has_grid) printf("  %12s  %10s", "Threadgroups", "Threads");
    if (has_regs) printf("  %5s", "Regs");
    if (has_smem) printf("  %10s", "Shared mem");
    if (has_local) printf("  %10s", "Local mem");
    if (has_size) printf("  %10s  %12s", "Size", "Throughput");
    printf("  Name\n");
    while (sqlite3_step(q) == SQLITE_ROW) {
        char id[32] = "-", st[32], du[32], grid[48], block[48], buf[48];
        if (sqlite3_column_type(q, 0) != SQLITE_NULL)
            snprintf(id, sizeof id, "%lld", (long long)sqlite3_column_int64(q, 0));
        double dur =
            (double)kp_ns_diff(sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 1)) / 1e9;
        kp_format_duration((double)kp_ns_diff(sqlite3_column_int64(q, 1), (int64_t)r->start_ns) /
                               1e9,
                           st, sizeof st);
        kp_format_duration(dur, du, sizeof du);
        printf("  %8s  %12s  %10s", id, st, du);
        if (has_grid) {
            kp_dims(q, 3, grid, sizeof grid);
            kp_dims(q, 6, block, sizeof block);
            printf("  %12s  %10s", grid, block);
        }
        if (has_regs) {
            if (sqlite3_column_type(q, 9) == SQLITE_NULL) printf("  %5s", "-");
            else printf("  %5lld", (long long)sqlite3_column_int64(q, 9));
        }
        if (has_smem) {
            if (sqlite3_column_type(q, 10) == SQLITE_NULL) printf("  %10s", "-");
            else
                printf("  %10s",
                       kp_format_bytes((uint64_t)kp_i64_add_sat(sqlite3_column_int64(q, 10),
                                                                sqlite3_column_int64(q, 11)),
                                       buf, sizeof buf));
        }
        if (has_local) {
            if (sqlite3_column_type(q, 12) == SQLITE_NULL) printf("  %10s", "-");
            else printf("  %10s", kp_format_bytes((uint64_t)sqlite3_column_int64(q, 12), buf, sizeof buf));
        }
        if (has_size) {
            if (sqlite3_column_type(q, 13) == SQLITE_NULL) {
                printf("  %10s  %12s", "-", "-");
            } else {
                uint64_t bytes = (uint64_t)sqlite3_column_int64(q, 13);
                char tp[48];
                double gbs = dur > 0 ? (double)bytes / dur / 1e9 : 0;
                snprintf(tp, sizeof tp, "%.2f GB/s", gbs);
                printf("  %10s  %12s", kp_format_bytes(bytes, buf, sizeof buf), tp);
            }
        }
        printf("  %s\n", (const char *)sqlite3_column_text(q, 14));
    }
    sqlite3_finalize(q);
    return KPROF_OK;
}

static void kp_print_report(const kp_report *r)
{
    char a[32], b[32];
    printf("Profiler ran for %s, capturing %llu events", kp_format_duration(r->wall, a, sizeof a),
           (unsigned long long)r->events);
    if (r->dropped) printf(" (%llu records dropped)", (unsigned long long)r->dropped);
    printf(".\n");
    if (r->command[0])
        printf("Command: %s (%d process%s recorded)\n", r->command, r->processes,
               r->processes == 1 ? "" : "es");
    printf("\nHost-side activity: calling GPU APIs took %s (%.2f%% of the wall)%s\n",
           kp_format_duration(r->host_total, a, sizeof a),
           r->wall > 0 ? 100 * r->host_total / r->wall : 0,
           r->raw ? "" : "; polling and query calls hidden (--raw shows them)");
    if (r->host.n) kp_print_table(r, &r->host);
    else printf("  (no host API calls recorded)\n");
    printf("\nDevice-side activity: GPU was busy for %s (%.2f%% of the wall)\n",
           kp_format_duration(r->vin.gpu_busy_s, b, sizeof b), 100 * r->verdict.busy_fraction);
    if (r->device.n) kp_print_table(r, &r->device);
    else printf("  (no kernels, copies or fills recorded)\n");
    if (r->nvtx.n) {
        printf("\nNVTX ranges:\n");
        kp_print_table(r, &r->nvtx);
    }
}

static void kp_print_verdict(const kp_report *r)
{
    const kp_verdict *v = &r->verdict;
    const kp_verdict_input *in = &r->vin;
    char a[32], b[32], c[32];
    printf("\nVerdict: %s\n", kp_verdict_name(v->kind));
    printf("  GPU busy %s of %s wall (%.1f%%); %llu idle gaps, the longest %s\n",
           kp_format_duration(in->gpu_busy_s, a, sizeof a),
           kp_format_duration(in->wall_s, b, sizeof b), 100 * v->busy_fraction,
           (unsigned long long)in->gaps, kp_format_duration(in->longest_gap_s, c, sizeof c));
    printf("  %llu kernel launches (%.0f/s), %.1f%% under 0.05 ms; kernels %.1f%% of the wall; "
           "host synchronization %s (%.1f%% of the wall)\n",
           (unsigned long long)in->kernels, v->launches_per_s, 100 * v->small_fraction,
           100 * v->kernel_fraction, kp_format_duration(in->host_sync_s, a, sizeof a),
           100 * v->sync_fraction);
    printf("  → %s\n", v->sentence);
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
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
}

static void kp_report_json(const kp_report *r)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "trace", r->path);
    kp_json_string(&j, "command", r->command);
    kp_json_double(&j, "wall_s", r->wall);
    kp_json_uint(&j, "events", r->events);
    kp_json_uint(&j, "dropped", r->dropped);
    kp_json_int(&j, "processes", r->processes);
    kp_json_double(&j, "host_api_s", r->host_total);
    kp_json_double(&j, "gpu_busy_s", r->vin.gpu_busy_s);
    kp_json_groups(&j, "host", &r->host, r->wall);
    kp_json_groups(&j, "device", &r->device, r->wall);
    kp_json_groups(&j, "nvtx", &r->nvtx, r->wall);
    const kp_verdict *v = &r->verdict;
    kp_json_object_begin(&j, "verdict");
    kp_json_string(&j, "kind", kp_verdict_name(v->kind));
    kp_json_double(&j, "gpu_busy_fraction", v->busy_fraction);
    kp_json_double(&j, "idle_fraction", v->idle_fraction);
    kp_json_uint(&j, "idle_gaps", r->vin.gaps);
    kp_json_double(&j, "longest_gap_s", r->vin.longest_gap_s);
    kp_json_uint(&j, "kernels", r->vin.kernels);
    kp_json_double(&j, "launches_per_s", v->launches_per_s);
    kp_json_double(&j, "small_dispatch_fraction", v->small_fraction);
    kp_json_double(&j, "host_sync_s", r->vin.host_sync_s);
    kp_json_double(&j, "host_sync_fraction", v->sync_fraction);
    kp_json_double(&j, "kernel_fraction", v->kernel_fraction);
    kp_json_string(&j, "sentence", v->sentence);
    kp_json_object_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    fputs(s.data ? s.data : "", stdout);
    kp_str_free(&s);
}

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

static void kp_report_csv(const kp_report *r)
{
    printf("table,name,calls,total_s,percent_of_wall,mean_s,std_s,min_s,max_s\n");
    const struct {
        const char *name;
        const kp_group_list *l;
    } tables[] = {{"host", &r->host}, {"device", &r->device}, {"nvtx", &r->nvtx}};
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < tables[t].l->n; i++) {
            const kp_group *g = &tables[t].l->rows[i];
            printf("%s,", tables[t].name);
            kp_csv_field(g->name);
            printf(",%llu,%.9g,%.4f,%.9g,%.9g,%.9g,%.9g\n", (unsigned long long)g->calls, g->total,
                   r->wall > 0 ? 100 * g->total / r->wall : 0, g->mean, g->std, g->min, g->max);
        }
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
    r.path = argv[optind];
    kp_error err = {0};
    kprof_status st = kp_trace_db_open(r.path, &r.db, &err);
    if (st == KPROF_OK) st = kp_report_load(&r, &err);
    if (st == KPROF_OK) {
        if (r.json) kp_report_json(&r);
        else if (r.csv) kp_report_csv(&r);
        else {
            kp_print_report(&r);
            if (r.trace) st = kp_print_trace(&r, &err);
            if (st == KPROF_OK) kp_print_verdict(&r);
        }
    }
    free(r.host.rows);
    free(r.device.rows);
    free(r.nvtx.rows);
    sqlite3_close(r.db);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}
