/*
 * report_text.c — `kprof report` as text (export/report_text.h): the tables the way Metal.jl's
 * and CUDA.jl's @profile show them, the chronological trace, a job's ranks, devices and
 * stragglers, and the verdicts.
 */
#include "export/report_text.h"

#include "core/collective.h"
#include "core/event.h"
#include "core/format.h"
#include "core/host_calls.h"
#include "core/stats.h"
#include "core/verdict.h"
#include "export/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tables ----------------------------------------------------------------------------- */
/* The distribution cell: mean ± std (min ‥ max), the unit on the mean only. */
static void kp_dist(const kp_report_row *g, char *buf, size_t n)
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

void kp_report_thresholds(const kp_report_table *l, double *p75, double *p95)
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

static void kp_print_table(FILE *o, const kp_report *r, const kp_report_table *l)
{
    int dist = 0, flops = 0, bytes = 0;
    for (int i = 0; i < l->n; i++) {
        dist |= l->rows[i].calls > 1;
        flops |= l->metrics && l->rows[i].m.has_flops;
        bytes |= l->metrics && l->rows[i].m.has_bytes;
    }
    double p75, p95;
    kp_report_thresholds(l, &p75, &p95);
    /* The metric columns before the distribution, whose cells are not all one width. */
    fprintf(o, "  %9s  %10s  %8s  ", "Time (%)", "Total time", "Calls");
    if (flops) fprintf(o, "%10s  %8s  ", "Flops", "GFLOP/s");
    if (bytes) fprintf(o, "%10s  %8s  ", "Bytes", "GB/s");
    if (dist) fprintf(o, "%-38s  ", "Time distribution");
    fprintf(o, "Name\n");
    for (int i = 0; i < l->n; i++) {
        const kp_report_row *g = &l->rows[i];
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
        fprintf(o, "  %s%9s  %10s%s  %8llu  ", colour, pct, tot, reset,
                (unsigned long long)g->calls);
        char value[48], rate[48];
        if (flops)
            fprintf(o, "%10s  %8s  ",
                    kp_metric_cell(g->m.has_flops, kp_format_si(g->m.flops, value, sizeof value)),
                    kp_metric_cell(g->m.has_gflop_per_s,
                                   kp_format_rate(g->m.gflop_per_s, rate, sizeof rate)));
        if (bytes)
            fprintf(o, "%10s  %8s  ",
                    kp_metric_cell(
                        g->m.has_bytes,
                        kp_format_bytes(g->m.bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)g->m.bytes,
                                        value, sizeof value)),
                    kp_metric_cell(g->m.has_gb_per_s,
                                   kp_format_rate(g->m.gb_per_s, rate, sizeof rate)));
        if (dist) fprintf(o, "%-38s  ", d);
        fprintf(o, "%s%s%s\n", bold, g->name, *bold ? kp_text_reset(o) : "");
    }
}

/* ---- the chronological trace (--trace) ------------------------------------------------------ */

/* The kernels' reflection lines under the device-side trace: each (device, kernel) once, in the
 * order first seen, as `kprof run` prints it. */
typedef struct kp_reflection_seen {
    int64_t device;
    const char *name;
} kp_reflection_seen;

static void kp_print_reflection(const kp_report_device_row *d, kp_reflection_seen **seen, size_t *n,
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
static void kp_global_size(const kp_report_device_row *d, int64_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = d->global[i];
}

static const char *kp_dur_or_dash(int has, int64_t ns, char *buf, size_t n)
{
    if (!has) return "-";
    return kp_format_duration((double)ns / 1e9, buf, n);
}

static kprof_status kp_print_trace(FILE *o, kp_report *r, kp_error *err)
{
    /* Host side. */
    kp_event_iter *it = NULL;
    kp_trace_event ev;
    kprof_status status = kp_event_iter_open(r->src, &kp_report_host_rows, &it, err);
    if (status != KPROF_OK) return status;
    fprintf(o, "\nHost-side trace:\n  %8s  %12s  %10s  %8s  Name\n", "ID", "Start", "Time",
            "Thread");
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        if (kp_report_hidden(r, e->name)) continue;
        char id[32] = "-", st[32], du[32];
        if (e->known & KP_EVENT_HAS_CORRELATION)
            snprintf(id, sizeof id, "%lld", (long long)e->correlation);
        kp_format_duration((double)kp_ns_diff(e->start_ns, r->start_ns) / 1e9, st, sizeof st);
        kp_format_duration((double)kp_ns_span(e->end_ns, e->start_ns) / 1e9, du, sizeof du);
        fprintf(o, "  %8s  %12s  %10s  %8lld  %s\n", id, st, du, (long long)e->tid,
                kp_report_name_of(r, e));
    }
    status = kp_event_iter_close(it, err);
    if (status != KPROF_OK) return status;
    /* Device side, with the columns that have any value (found by the load's pass). */
    int has_grid = r->columns.grid, has_regs = r->columns.regs, has_smem = r->columns.smem;
    int has_local = r->columns.local, has_size = r->columns.size, has_global = r->columns.global;
    int has_launch = r->launch.n > 0, has_queued = r->queued.n > 0;
    int has_submitted = r->submitted.n > 0;
    status = kp_event_iter_open(r->src, &kp_report_device_rows, &it, err);
    if (status != KPROF_OK) return status;
    fprintf(o, "\nDevice-side trace:\n  %8s  %12s  %10s", "ID", "Start", "Time");
    if (has_grid) fprintf(o, "  %12s  %10s", "Threadgroups", "Threads");
    if (has_global) fprintf(o, "  %12s", "Global size");
    if (has_regs) fprintf(o, "  %5s", "Regs");
    if (has_smem) fprintf(o, "  %10s", "Shared mem");
    if (has_local) fprintf(o, "  %10s", "Local mem");
    if (has_size) fprintf(o, "  %10s  %12s", "Size", "Throughput");
    if (r->columns.flops) fprintf(o, "  %10s  %12s", "Flops", "GFLOP/s");
    if (has_launch) fprintf(o, "  %10s", "Launch lat");
    if (has_queued) fprintf(o, "  %10s", "Queue wait");
    if (has_submitted) fprintf(o, "  %11s", "Submit wait");
    fprintf(o, "  Name\n");
    kp_reflection_seen *seen = NULL;
    size_t nseen = 0, seen_cap = 0;
    kp_str reflection = {0};
    while (kp_event_iter_next(it, &ev)) {
        kp_report_device_row d;
        kp_report_device_row_read(r, &ev, &d);
        kp_print_reflection(&d, &seen, &nseen, &seen_cap, &reflection);
        char id[32] = "-", st[32], du[32], grid[48], block[48], buf[48];
        if (d.has_id) snprintf(id, sizeof id, "%lld", (long long)d.id);
        double dur = (double)kp_ns_span(d.end, d.start) / 1e9;
        kp_format_duration((double)kp_ns_diff(d.start, r->start_ns) / 1e9, st, sizeof st);
        kp_format_duration(dur, du, sizeof du);
        fprintf(o, "  %8s  %12s  %10s", id, st, du);
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
            fprintf(o, "  %12s  %10s", grid, block);
        }
        if (has_global) {
            int64_t g[3];
            kp_global_size(&d, g);
            if (d.has_grid)
                kp_dims(g, grid, sizeof grid);
            else
                snprintf(grid, sizeof grid, "-");
            fprintf(o, "  %12s", grid);
        }
        if (has_regs) {
            if (!d.has_regs)
                fprintf(o, "  %5s", "-");
            else
                fprintf(o, "  %5lld", (long long)d.regs);
        }
        if (has_smem)
            fprintf(o, "  %10s",
                    d.has_smem ? kp_format_bytes((uint64_t)d.smem, buf, sizeof buf) : "-");
        if (has_local)
            fprintf(o, "  %10s",
                    d.has_local ? kp_format_bytes((uint64_t)d.local, buf, sizeof buf) : "-");
        if (has_size && d.has_metric_bytes) { /* what it moved, by its metric */
            char tp[48];
            snprintf(tp, sizeof tp, "%.2f GB/s", dur > 0 ? d.metric_bytes / dur / 1e9 : 0);
            fprintf(
                o, "  %10s  %12s",
                kp_format_bytes(d.metric_bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)d.metric_bytes,
                                buf, sizeof buf),
                tp);
        } else if (has_size) {
            if (!d.has_bytes) {
                fprintf(o, "  %10s  %12s", "-", "-");
            } else {
                char tp[48];
                double gbs = dur > 0 ? (double)d.bytes / dur / 1e9 : 0;
                snprintf(tp, sizeof tp, "%.2f GB/s", gbs);
                fprintf(o, "  %10s  %12s", kp_format_bytes((uint64_t)d.bytes, buf, sizeof buf), tp);
            }
        }
        if (r->columns.flops) {
            char tp[48];
            snprintf(tp, sizeof tp, "%s", "-");
            if (d.has_flops && dur > 0) kp_format_rate(d.flops / dur / 1e9, tp, sizeof tp);
            fprintf(o, "  %10s  %12s", d.has_flops ? kp_format_si(d.flops, buf, sizeof buf) : "-",
                    tp);
        }
        if (has_launch)
            fprintf(o, "  %10s", kp_dur_or_dash(d.has_launch, d.launch_ns, buf, sizeof buf));
        if (has_queued)
            fprintf(o, "  %10s", kp_dur_or_dash(d.has_queued, d.queued_ns, buf, sizeof buf));
        if (has_submitted)
            fprintf(o, "  %11s", kp_dur_or_dash(d.has_submitted, d.submitted_ns, buf, sizeof buf));
        fprintf(o, "  %s\n", d.name);
    }
    if (reflection.data)
        fprintf(o,
                "\nKernel reflection (OpenCL: queried once per kernel and device, at its first "
                "launch):\n%s",
                reflection.data);
    kp_str_free(&reflection);
    free(seen);
    return kp_event_iter_close(it, err);
}

static void kp_print_latency(FILE *o, const kp_report *r)
{
    const struct {
        const char *what;
        const kp_report_latency *l;
    } parts[] = {{"launch call to start", &r->launch},
                 {"queued to start", &r->queued},
                 {"submitted to start", &r->submitted}};
    int any = 0;
    for (int i = 0; i < 3; i++) {
        const kp_report_latency *l = parts[i].l;
        if (!l->n) continue;
        char m[32], p[32];
        fprintf(o, "%s%s median %s, p95 %s", any ? "; " : "\nLaunch latency: ", parts[i].what,
                kp_format_duration(l->median, m, sizeof m),
                kp_format_duration(l->p95, p, sizeof p));
        if (!any)
            fprintf(o, " (%zu device operations)", l->n);
        else if (l->n != r->launch.n)
            fprintf(o, " (%zu)", l->n);
        any = 1;
    }
    if (any) fprintf(o, "\n");
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

static void kp_print_stragglers(FILE *o, const kp_report *r)
{
    const kp_trace_job *job = &r->job;
    const kp_job_stragglers *g = &job->stragglers;
    char a[32], b[32], what[600];
    if (job->nranked < 2) return;
    if (g->steps_by == KP_JOB_STEPS_NONE) {
        fprintf(o,
                "\nStragglers: none measured (no NVTX range name occurs twice on every rank, and "
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
        fprintf(o,
                "\nStragglers: not judged: the ranks' %s never overlap in time (the ranks ran one "
                "after another)\n",
                what);
        return;
    }
    if (!g->nsteps) {
        fprintf(o, "\nStragglers: none measured: no %s on every rank (%llu skipped)\n", what,
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
    fprintf(o,
            "\nStragglers: rank %d arrived last at %llu of %zu %s; the other ranks waited %s "
            "median%s, %s max per step%s (%.1f%% of the %s time)",
            g->last_rank, (unsigned long long)g->last_count, g->nsteps, what,
            kp_format_duration(kp_ns_s(g->wait_median_ns), a, sizeof a), within,
            kp_format_duration(kp_ns_s(g->wait_max_ns), b, sizeof b), across,
            kp_report_straggler_share(g) * 100.0,
            g->timed_by_collectives ? "collectives'" : "ranges'");
    if (g->skipped)
        fprintf(o, "; %llu step%s skipped (not on every rank)", (unsigned long long)g->skipped,
                g->skipped == 1 ? "" : "s");
    if (g->unmatched)
        fprintf(o, "; %llu step%s skipped (their collectives did not pair up across the ranks)",
                (unsigned long long)g->unmatched, g->unmatched == 1 ? "" : "s");
    if (g->apart)
        fprintf(o, "; %llu step%s not judged (the ranks were never in %s at one time)",
                (unsigned long long)g->apart, g->apart == 1 ? "" : "s",
                g->apart == 1 ? "it" : "them");
    fprintf(o, "\n");
    if (g->steps_by == KP_JOB_STEPS_RANGE && g->timed_by_collectives)
        fprintf(o,
                "  (a rank arrives when its first collective kernel of the step starts; it waits "
                "at each collective until the last rank's starts, or its own kernel ends)\n");
}

static void kp_print_job(FILE *o, const kp_report *r)
{
    const kp_trace_job *job = &r->job;
    char a[32], b[32], c[32], d[32], e[32], rank[16], local[16], pids[64], gpus[64];
    int dash = job->nranks > job->nranked;
    fprintf(o, "\nRanks: %zu rank%s%s%s%s on %zu host%s%s\n", job->nranked,
            job->nranked == 1 ? "" : "s", *job->launcher ? " (" : "", job->launcher,
            *job->launcher ? ")" : "", job->nhosts ? job->nhosts : 1, job->nhosts > 1 ? "s" : "",
            dash ? "; \"-\" is the processes without a rank" : "");
    int hw = 4;
    char host[KP_HOST_TEXT];
    for (size_t i = 0; i < job->nranks; i++) {
        kp_host_text(job->ranks[i].host, job->ranks[i].host_tag, host, sizeof host);
        if (kp_text_width(host) > hw) hw = kp_text_width(host);
    }
    fprintf(o, "  %5s  %5s  %-*s  %-16s  %-6s  %8s  %11s  %10s  %14s  %10s  %10s\n", "Rank",
            "Local", hw, "Host", "PIDs", "GPUs", "Kernels", "Collectives", "GPU busy",
            "In collectives", "Host API", "Span");
    for (size_t i = 0; i < job->nranks; i++) {
        const kp_job_rank *k = &job->ranks[i];
        kp_pids_text(k, pids, sizeof pids);
        kp_u32_list_text(k->gpus, k->ngpus, gpus, sizeof gpus);
        kp_host_text(k->host, k->host_tag, host, sizeof host);
        fprintf(o, "  %5s  %5s  %s%*s  %-16s  %-6s  %8llu  %11llu  %10s  %14s  %10s  %10s\n",
                kp_rank_text(k->rank, rank, sizeof rank),
                kp_rank_text(k->local_rank, local, sizeof local), host, hw - kp_text_width(host),
                "", pids, gpus, (unsigned long long)k->kernels, (unsigned long long)k->collectives,
                kp_format_duration(kp_ns_s(k->gpu_busy_ns), a, sizeof a),
                kp_format_duration(kp_ns_s(k->collective_ns), b, sizeof b),
                kp_format_duration(kp_ns_s(k->host_api_ns), c, sizeof c),
                kp_format_duration(kp_ns_s(kp_ns_diff(k->end_ns, k->start_ns)), d, sizeof d));
    }
    fprintf(o, "\nDevices (numbered as each process saw them: a CUDA_VISIBLE_DEVICES remapping per "
               "rank is not undone):\n");
    int lw = 6;
    for (size_t i = 0; i < job->ndevices; i++) {
        char label[KP_HOST_TEXT + 32];
        kp_device_label(r, job, &job->devices[i], label, sizeof label);
        if (kp_text_width(label) > lw) lw = kp_text_width(label);
    }
    fprintf(o, "  %-*s  %10s  %7s  %8s  %11s  %12s  %14s  Ranks\n", lw, "Device", "GPU busy",
            "Busy %", "Kernels", "Collectives", "Copies/fills", "In collectives");
    for (size_t i = 0; i < job->ndevices; i++) {
        const kp_job_device *dv = &job->devices[i];
        char label[KP_HOST_TEXT + 32], ranks[256], pct[32];
        kp_device_label(r, job, dv, label, sizeof label);
        kp_ranks_text(dv->ranks, dv->nranks, ranks, sizeof ranks);
        snprintf(pct, sizeof pct, "%.2f%%",
                 r->wall > 0 ? 100 * kp_ns_s(dv->gpu_busy_ns) / r->wall : 0);
        fprintf(o, "  %s%*s  %10s  %7s  %8llu  %11llu  %12llu  %14s  %s\n", label,
                lw - kp_text_width(label), "",
                kp_format_duration(kp_ns_s(dv->gpu_busy_ns), e, sizeof e), pct,
                (unsigned long long)dv->kernels, (unsigned long long)dv->collectives,
                (unsigned long long)(dv->copies + dv->fills),
                kp_format_duration(kp_ns_s(dv->collective_ns), a, sizeof a), ranks);
    }
    kp_print_stragglers(o, r);
}

static void kp_print_report(FILE *o, const kp_report *r)
{
    char a[32], b[32];
    fprintf(o, "Profiler ran for %s, capturing %llu events.\n",
            kp_format_duration(r->wall, a, sizeof a), (unsigned long long)r->events);
    if (r->command[0])
        fprintf(o, "Command: %s (%d process%s recorded)\n", r->command, r->processes,
                r->processes == 1 ? "" : "es");
    /* What the trace lacks, every number even when it is 0: a clean trace says so. */
    fprintf(o,
            "Completeness: %llu record%s dropped, %llu device operation%s whose launching call%s "
            "not recorded, %llu call%s whose device work never arrived, %d process%s that ended "
            "without closing\n",
            (unsigned long long)r->dropped, r->dropped == 1 ? "" : "s",
            (unsigned long long)r->ops_without_call, r->ops_without_call == 1 ? "" : "s",
            r->ops_without_call == 1 ? " was" : "s were", (unsigned long long)r->calls_without_work,
            r->calls_without_work == 1 ? "" : "s", r->unclosed, r->unclosed == 1 ? "" : "es");
    for (const char *p = r->notes.data ? r->notes.data : "", *nl; (nl = strchr(p, '\n')) != NULL;
         p = nl + 1)
        fprintf(o, "Note: %.*s\n", (int)(nl - p), p);
    fprintf(o, "\nHost-side activity: calling %s APIs took %s (%.2f%% of the wall)%s\n",
            r->v.api == KP_API_OPENCL ? "OpenCL" : "GPU",
            kp_format_duration(r->host_total, a, sizeof a),
            r->wall > 0 ? 100 * r->host_total / r->wall : 0,
            r->raw ? "" : "; polling and query calls hidden (--raw shows them)");
    if (r->host.n)
        kp_print_table(o, r, &r->host);
    else
        fprintf(o, "  (no host API calls recorded)\n");
    fprintf(o, "\nDevice-side activity: %s was busy for %s (%.2f%% of the wall)\n",
            r->v.api == KP_API_OPENCL ? "the device" : "GPU",
            kp_format_duration(r->v.wall_in.gpu_busy_s, b, sizeof b),
            100 * r->v.wall.busy_fraction);
    if (r->device.n)
        kp_print_table(o, r, &r->device);
    else if (!r->collectives.n)
        fprintf(o, "  (no kernels, copies or fills recorded)\n");
    if (r->collectives.n) {
        double total = 0;
        uint64_t calls = 0;
        for (int i = 0; i < r->collectives.n; i++) {
            total += r->collectives.rows[i].total;
            calls += r->collectives.rows[i].calls;
        }
        fprintf(o,
                "\nCollectives (NCCL/RCCL kernels, apart from the compute kernels): %llu kernel%s, "
                "%s (%.2f%% of the wall)\n",
                (unsigned long long)calls, calls == 1 ? "" : "s",
                kp_format_duration(total, a, sizeof a), r->wall > 0 ? 100 * total / r->wall : 0);
        kp_print_table(o, r, &r->collectives);
    }
    kp_print_latency(o, r);
    if (r->nvtx.n) {
        /* libkprof's scopes are ranges too (their domain says which). */
        fprintf(o, "\n%s:\n",
                !r->has_scopes ? "NVTX ranges"
                : r->has_nvtx  ? "NVTX ranges and scopes"
                               : "Scopes");
        kp_print_table(o, r, &r->nvtx);
    }
    if (r->is_job) kp_print_job(o, r);
}

/* The numbers under a verdict's heading, then its sentence; indent is the lines' margin. */
static void kp_print_window(FILE *o, const kp_report *r, const kp_verdict_input *in,
                            const kp_verdict *v, const char *window, const char *indent)
{
    char a[32], b[32], c[32], gap[320], name[160];
    fprintf(o, "%s%s busy %s of %s (%.1f%%); %llu gaps between device operations", indent,
            kp_verdict_device_word(r->v.api, 1), kp_format_duration(in->gpu_busy_s, a, sizeof a),
            kp_format_duration(in->wall_s, b, sizeof b), 100 * v->busy_fraction,
            (unsigned long long)in->gaps);
    if (in->gaps) fprintf(o, ", median %s", kp_format_duration(in->median_gap_s, a, sizeof a));
    if (in->longest_gap_place != KP_GAP_NONE) {
        kp_verdict_gap_text(in, gap, sizeof gap);
        fprintf(o, "; the longest idle stretch %s, %s",
                kp_format_duration(in->longest_gap_s, c, sizeof c), gap);
    }
    fprintf(o, "\n");
    fprintf(o,
            "%s%llu kernel launches (%.0f/s), %.1f%% under 0.05 ms; kernels %.1f%% of %s; host "
            "synchronization %s (%.1f%%)\n",
            indent, (unsigned long long)in->kernels, v->launches_per_s, 100 * v->small_fraction,
            100 * v->kernel_fraction, window, kp_format_duration(in->host_sync_s, a, sizeof a),
            100 * v->sync_fraction);
    if (in->ncalls) {
        fprintf(o, "%sLargest host calls:", indent);
        for (int i = 0; i < in->ncalls; i++) {
            snprintf(name, sizeof name, "%s", in->calls[i].name);
            fprintf(o, "%s %s %s (%.1f%%)", i ? "," : "", name,
                    kp_format_duration(in->calls[i].total_s, a, sizeof a),
                    in->wall_s > 0 ? 100 * in->calls[i].total_s / in->wall_s : 0);
        }
        fprintf(o, "\n");
    }
    char sentence[2048];
    kp_verdict_describe(in, v, window, r->start_ns, sentence, sizeof sentence);
    fprintf(o, "%s→ %s\n", indent, sentence);
}

#define KP_RANGES_SHOWN 10 /* range verdicts the text shows (--json: all) */

static void kp_print_verdict(FILE *o, const kp_report *r)
{
    char a[32], b[32];
    fprintf(o, "\nVerdict: %s over the wall (%s)\n", kp_verdict_name(r->v.wall.kind),
            kp_format_duration(r->v.wall_in.wall_s, a, sizeof a));
    kp_print_window(o, r, &r->v.wall_in, &r->v.wall, "the wall", "  ");
    if (r->v.has_active) {
        fprintf(o,
                "\nVerdict: %s over the active window (%s from %s: first to last device "
                "operation)\n",
                kp_verdict_name(r->v.active.kind),
                kp_format_duration(r->v.active_in.wall_s, a, sizeof a),
                kp_format_duration((double)kp_ns_diff(r->v.active_start_ns, r->start_ns) / 1e9, b,
                                   sizeof b));
        kp_print_window(o, r, &r->v.active_in, &r->v.active, "the active window", "  ");
    }
    if (r->v.nranges) {
        fprintf(o, "\nVerdict per top-level NVTX range (all instances of a name together):\n");
        for (size_t i = 0; i < r->v.nranges && i < KP_RANGES_SHOWN; i++) {
            const kp_range_verdict *rv = &r->v.ranges[i];
            char window[600];
            kp_report_range_window(rv, window, sizeof window);
            fprintf(o, "  %s ×%llu (%s): %s", rv->name, (unsigned long long)rv->instances,
                    kp_format_duration(rv->in.wall_s, a, sizeof a),
                    kp_verdict_name(rv->verdict.kind));
            if (rv->instances > 1) { /* each instance alone */
                const char *sep = "; instance by instance: ";
                for (int k = 0; k < KP_VERDICT_KIND_COUNT; k++) {
                    if (!rv->kinds[k]) continue;
                    fprintf(o, "%s%llu %s", sep, (unsigned long long)rv->kinds[k],
                            kp_verdict_name((kp_verdict_kind)k));
                    sep = ", ";
                }
            }
            fprintf(o, "\n");
            kp_print_window(o, r, &rv->in, &rv->verdict, window, "    ");
        }
        if (r->v.nranges > KP_RANGES_SHOWN)
            fprintf(o, "  … %zu more range names (--json lists them all)\n",
                    r->v.nranges - KP_RANGES_SHOWN);
    }
}

kprof_status kp_report_write_text(FILE *o, kp_report *r, int trace, kp_error *err)
{
    kp_print_report(o, r);
    kprof_status st = trace ? kp_print_trace(o, r, err) : KPROF_OK;
    if (st == KPROF_OK) kp_print_verdict(o, r);
    return st;
}
