/*
 * report_json.c — `kprof report` as JSON and as CSV (export/report_json.h): the tables, launch
 * latency, a job's ranks, devices and stragglers, the verdicts, and with --trace the
 * chronological rows.
 */
#include "export/report_json.h"

#include "base/json.h"
#include "core/collective.h"
#include "core/event.h"
#include "core/verdict.h"
#include "export/csv.h"

#include <stdio.h>
#include <string.h>

static double kp_ns_s(int64_t ns)
{
    return (double)ns / 1e9;
}

/* Threads in all per dimension. */
static void kp_global_size(const kp_report_device_row *d, int64_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = d->global[i];
}

/* ---- JSON ------------------------------------------------------------------------------------ */
/* A row's metrics as members of the open object, only those it has: flops, gflop_per_s, bytes,
 * gb_per_s. */
static void kp_json_row_metrics(kp_json *j, const kp_report_metrics *m)
{
    if (m->has_flops) kp_json_double(j, "flops", m->flops);
    if (m->has_gflop_per_s) kp_json_double(j, "gflop_per_s", m->gflop_per_s);
    if (m->has_bytes) kp_json_double(j, "bytes", m->bytes);
    if (m->has_gb_per_s) kp_json_double(j, "gb_per_s", m->gb_per_s);
}

static void kp_json_groups(kp_json *j, const char *key, const kp_report_table *l, double wall)
{
    kp_json_array_begin(j, key);
    for (int i = 0; i < l->n; i++) {
        const kp_report_row *g = &l->rows[i];
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
    kp_json_double_or_null(j, "median_gap_s", in->gaps != 0, in->median_gap_s);
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
    kp_json_string(j, "named_call", v->named_call >= 0 ? in->calls[v->named_call].name : NULL);
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
        const kp_report_latency *l;
    } parts[] = {{"launch_to_start", &r->launch},
                 {"queued_to_start", &r->queued},
                 {"submitted_to_start", &r->submitted}};
    if (!r->launch.n && !r->queued.n && !r->submitted.n) return;
    kp_json_object_begin(j, "launch_latency");
    for (int i = 0; i < 3; i++) {
        const kp_report_latency *l = parts[i].l;
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
    kprof_status st = kp_event_iter_open(r->src, &kp_report_host_rows, &it, err);
    if (st != KPROF_OK) return st;
    kp_json_array_begin(j, "host_trace");
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        if (kp_report_hidden(r, e->name)) continue;
        kp_json_object_begin(j, NULL);
        kp_json_int_or_null(j, "id", (e->known & KP_EVENT_HAS_CORRELATION) != 0,
                            (int64_t)e->correlation);
        kp_json_string(j, "kind", kp_event_kind_name(e->kind));
        kp_json_double(j, "start_s", (double)kp_ns_diff(e->start_ns, r->start_ns) / 1e9);
        kp_json_double(j, "duration_s", (double)kp_ns_span(e->end_ns, e->start_ns) / 1e9);
        kp_json_int(j, "pid", e->pid);
        kp_json_int(j, "tid", e->tid);
        kp_json_string(j, "name", kp_report_name_of(r, e));
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
    st = kp_event_iter_open(r->src, &kp_report_device_rows, &it, err);
    if (st != KPROF_OK) return st;
    kp_json_array_begin(j, "device_trace");
    while (kp_event_iter_next(it, &ev)) {
        kp_report_device_row d;
        kp_report_device_row_read(r, &ev, &d);
        double dur = (double)kp_ns_span(d.end, d.start) / 1e9;
        kp_json_object_begin(j, NULL);
        kp_json_int_or_null(j, "id", d.has_id, d.id);
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
    kp_json_int_or_null(j, key, rank >= 0, rank);
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
    kp_json_double_or_null(j, "clock_uncertainty_s", unsure >= 0, kp_ns_s(unsure));
    kp_json_bool(j, "wait_median_within_clock_uncertainty",
                 unsure > 0 && g->wait_median_ns < unsure);
    kp_json_double(j, "wait_total_s", kp_ns_s(g->wait_total_ns));
    kp_json_double(j, "timed_total_s", kp_ns_s(g->timed_total_ns));
    kp_json_double(j, "wait_fraction", kp_report_straggler_share(g));
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

kprof_status kp_report_write_json(kp_str *out, kp_report *r, int trace, kp_error *err)
{
    kp_json j;
    kprof_status st = KPROF_OK;
    kp_json_init(&j, out, 1);
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
        kp_report_range_window(rv, window, sizeof window);
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
    if (trace) st = kp_json_trace(&j, r, err);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    if (st == KPROF_OK && out->failed) st = kp_error_nomem(err);
    return st;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

static void kp_csv_field_out(FILE *o, const char *raw)
{
    kp_str field = {0};
    kp_csv_field(&field, raw);
    fputs(field.data ? field.data : "", o);
    kp_str_free(&field);
}

/* Whether the CSV has the metric columns: a table has metrics. */
static int kp_csv_metrics(const kp_report *r)
{
    return r->host.metrics || r->device.metrics || r->nvtx.metrics || r->collectives.metrics;
}

/* The end of a CSV line: with metric columns, a row's metrics (m NULL or without: empty), the
 * shortest decimals that read back as the same doubles. */
static void kp_csv_end(FILE *o, const kp_report *r, const kp_report_metrics *m)
{
    if (kp_csv_metrics(r)) {
        int has[4] = {m && m->has_flops, m && m->has_bytes, m && m->has_gflop_per_s,
                      m && m->has_gb_per_s};
        double v[4] = {m ? m->flops : 0, m ? m->bytes : 0, m ? m->gflop_per_s : 0,
                       m ? m->gb_per_s : 0};
        for (int i = 0; i < 4; i++) {
            char buf[40] = "";
            if (has[i]) kp_json_format_double(v[i], buf, sizeof buf);
            fprintf(o, ",%s", buf);
        }
    }
    fprintf(o, "\n");
}

/* One verdict row: table "verdict", name the window ("wall", "active", "nvtx:NAME"). */
static void kp_csv_verdict(FILE *o, const kp_report *r, const char *name, uint64_t instances,
                           const kp_verdict_input *in, const kp_verdict *v, const char *window)
{
    char gap[320], sentence[2048];
    fprintf(o, "verdict,");
    kp_csv_field_out(o, name);
    fprintf(o, ",%llu,%.9g,%.4f,%.9g,,,,", (unsigned long long)instances, in->wall_s,
            r->wall > 0 ? 100 * in->wall_s / r->wall : 0,
            instances ? in->wall_s / (double)instances : 0);
    fprintf(o, "%s,%.9g,%.9g,%.9g,%.9g,%.9g,", kp_verdict_name(v->kind), v->busy_fraction,
            v->kernel_fraction, v->sync_fraction, v->launches_per_s, v->small_fraction);
    if (in->gaps) fprintf(o, "%.9g", in->median_gap_s);
    fprintf(o, ",%.9g,", in->longest_gap_s);
    kp_verdict_gap_text(in, gap, sizeof gap);
    kp_csv_field_out(o, gap);
    fprintf(o, ",,,");
    kp_verdict_describe(in, v, window, r->start_ns, sentence, sizeof sentence);
    kp_csv_field_out(o, sentence);
    kp_csv_end(o, r, NULL);
}

void kp_report_write_csv(FILE *o, const kp_report *r)
{
    fprintf(o,
            "table,name,calls,total_s,percent_of_wall,mean_s,std_s,min_s,max_s,verdict,"
            "gpu_busy_fraction,kernel_fraction,host_sync_fraction,launches_per_s,"
            "small_dispatch_fraction,median_gap_s,longest_gap_s,longest_gap_at,median_s,p95_s,"
            "sentence%s\n",
            kp_csv_metrics(r) ? ",flops,bytes,gflop_per_s,gb_per_s" : "");
    const struct {
        const char *name;
        const kp_report_table *l;
    } tables[] = {{"host", &r->host},
                  {"device", &r->device},
                  {"nvtx", &r->nvtx},
                  {"collective", &r->collectives}}; /* a job's (else empty) */
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < tables[t].l->n; i++) {
            const kp_report_row *g = &tables[t].l->rows[i];
            fprintf(o, "%s,", tables[t].name);
            kp_csv_field_out(o, g->name);
            fprintf(o, ",%llu,%.9g,%.4f,%.9g,%.9g,%.9g,%.9g,,,,,,,,,,,,",
                    (unsigned long long)g->calls, g->total,
                    r->wall > 0 ? 100 * g->total / r->wall : 0, g->mean, g->std, g->min, g->max);
            kp_csv_end(o, r, tables[t].l->metrics ? &g->m : NULL);
        }
    }
    /* Launch latency: calls = operations, the distribution in mean/min/max, median and p95. */
    const struct {
        const char *name;
        const kp_report_latency *l;
    } lat[] = {{"launch_to_start", &r->launch},
               {"queued_to_start", &r->queued},
               {"submitted_to_start", &r->submitted}};
    for (int i = 0; i < 3; i++) {
        const kp_report_latency *l = lat[i].l;
        if (!l->n) continue;
        fprintf(o, "latency,%s,%zu,,,%.9g,,%.9g,%.9g,,,,,,,,,,%.9g,%.9g,", lat[i].name, l->n,
                l->mean, l->min, l->max, l->median, l->p95);
        kp_csv_end(o, r, NULL);
    }
    kp_csv_verdict(o, r, "wall", 1, &r->v.wall_in, &r->v.wall, "the wall");
    if (r->v.has_active)
        kp_csv_verdict(o, r, "active", 1, &r->v.active_in, &r->v.active, "the active window");
    for (size_t i = 0; i < r->v.nranges; i++) {
        const kp_range_verdict *rv = &r->v.ranges[i];
        char name[600], window[600];
        snprintf(name, sizeof name, "nvtx:%s", rv->name);
        kp_report_range_window(rv, window, sizeof window);
        kp_csv_verdict(o, r, name, rv->instances, &rv->in, &rv->verdict, window);
    }
}
