/*
 * cmd_run.c — `kprof run`: one kernel, compiled at run time, timed on the device, reported as
 * a panel (device ms median/min/p90/max, ~GB/s touched, reflection, with --counters the
 * hardware counters of one replayed dispatch, the hottest source lines with --source, readings,
 * buffer digests) or as JSON (also written to the kernel folder's run.json).
 */
#include "core/format.h"
#include "base/outfile.h"
#include "core/readings.h"
#include "base/util.h"
#include "export/text.h"
#include "lab/hotspots.h"
#include "lab/lab.h"
#include "lab/result_file.h"
#include "lab/run_result.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/lab_options.h"
#include "tools/kprof/lab_trace_out.h"
#include "tools/kprof/progress.h"
#include "tools/kprof/record.h"
#include "tools/kprof/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What `kprof run` reports: the session, the run's numbers, the readings in words and the
 * buffers read back. */
typedef struct kp_run_report {
    const kp_lab_info *info;
    kp_run_result run;
    int nreadings;
    kp_reading_line lines[16];
    int ndigests;
    kp_buffer_digest digests[KP_SPEC_MAX_ARGS];
    int iters_asked;   /* --iters or its default; run.iters is what the budget allowed */
    int moved;         /* a captured launch run at a geometry not its own */
    double budget_s;   /* the time budget the run went by (0: none: --iters given, or off) */
    int source;        /* --source: lines to print (0: not asked, nothing is reported) */
    int have_hotspots; /* the sampling ran: hotspots holds its lines */
    kp_hotspots hotspots;
    char source_why[512]; /* else why not */
} kp_run_report;

/* --source samples this many dispatches (fewer when --iters is smaller), after the timing. */
#define KP_RUN_SOURCE_DISPATCHES 10

/* --source: the hottest lines, each with its share of the samples, where it is, its text, and
 * its three main stall reasons (shares of the line's samples). */
static void kp_run_source_print(const kp_run_report *report)
{
    const kp_hotspots *h = &report->hotspots;
    if (!report->source || !report->have_hotspots) return;
    const char *B = kp_text_bold(stdout), *R = kp_text_reset(stdout), *D = kp_text_dim(stdout);
    printf("source lines (PC sampling: %llu samples over %d dispatch%s):\n",
           (unsigned long long)h->samples, h->dispatches, h->dispatches == 1 ? "" : "es");
    if (h->note[0]) printf("  %snote: %s%s\n", D, h->note, R);
    if (h->n == 0) printf("  no samples: the kernel ran too briefly for the sampler\n");
    size_t top = h->n < (size_t)report->source ? h->n : (size_t)report->source;
    for (size_t i = 0; i < top; i++) {
        const kp_hotspot *l = &h->lines[i];
        kp_str where = {0};
        if (l->file) {
            const char *slash = strrchr(l->file, '/');
            const char *base = slash ? slash + 1 : l->file;
            kp_str_append_escaped(&where, base, strlen(base));
            kp_str_printf(&where, ":%u", l->line);
        } else {
            kp_str_append_escaped(&where, l->function, strlen(l->function));
            kp_str_printf(&where, "+0x%llx", (unsigned long long)l->pc_offset);
        }
        printf("  %5.1f%%  %s%s%s  %s\n", 100 * l->share, B, where.data ? where.data : "", R,
               l->text ? l->text : "");
        kp_str_free(&where);
        printf("          %s", D);
        for (size_t k = 0; k < l->nstalls && k < 3; k++)
            printf("%s%s %.0f%%", k ? " · " : "", l->stalls[k].reason,
                   100.0 * (double)l->stalls[k].samples / (double)l->samples);
        printf("%s\n", R);
    }
    if (h->n > top)
        printf("  %s%zu more line%s in --json%s\n", D, h->n - top, h->n - top == 1 ? "" : "s", R);
}

static void kp_run_print(const kp_run_report *report)
{
    const kp_lab_info *info = report->info;
    const kp_run_result *r = &report->run;
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o), *D = kp_text_dim(o);
    char a[64], b[64], c[64], g[64], t[64], limits[512];
    kp_dims_text(r->launch.grid, r->launch.dims, g, sizeof g);
    kp_dims_text(r->launch.tg, r->launch.dims, t, sizeof t);
    printf("%s%s%s on %s %s(%s device %d)%s\n", B, info->kernel->name, R, info->device.name, D,
           info->device.backend, info->device.index, R);
    if (info->replay) kp_run_replay_print(o, info, report->moved);
    /* Device timestamps time the kernel on whatever the device is: "GPU" only on a GPU (the
     * JSON keys keep their gpu_ms_ names for scripts). Each time in the unit that keeps its
     * digits (726 ns, 1.235 ms). */
    const char *clock = info->device.is_gpu ? "GPU" : "device";
    char label[4][32], when[4][32];
    static const char *const which[4] = {"median", "min", "p90", "max"};
    const double value[4] = {r->stats.median, r->stats.min, r->stats.p90, r->stats.max};
    for (int i = 0; i < 4; i++) {
        snprintf(label[i], sizeof label[i], "%s (%s)", clock, which[i]);
        kp_format_ms(value[i], when[i], sizeof when[i]);
    }
    printf("  %-18s %s%s%s\n", label[0], B, when[0], R);
    for (int i = 1; i < 4; i++)
        printf("  %-18s %s\n", label[i], when[i]);
    if (r->ceiling_gbs > 0)
        printf("  %-18s %.1f   (%.0f%% of the measured ceiling, %.0f GB/s)\n", "~GB/s touched",
               r->gbps, 100 * r->gbps / r->ceiling_gbs, r->ceiling_gbs);
    else
        printf("  %-18s %.1f\n", "~GB/s touched", r->gbps);
    printf("  %-18s %s per dispatch%s\n", "bytes", kp_format_bytes(r->bytes, a, sizeof a),
           r->bytes_assumed ? " (each buffer element assumed touched once; --bytes corrects it)"
                            : " (--bytes)");
    printf("  %-18s %s\n", "grid", g);
    printf("  %-18s %s\n", "threadgroup", t);
    printf("  %-18s %d timed after %d warm-up%s (%s)\n", "iterations", r->iters, r->warmup,
           r->warmup == 1 ? "" : "s", info->timer);
    if (r->iters < report->iters_asked)
        printf("  %-18s %d of %d timed dispatches: %d would take longer than the %g s "
               "--time-budget (--iters N times N)\n",
               "time budget", r->iters, report->iters_asked, report->iters_asked, report->budget_s);
    printf("  %-18s %s (%s)\n", "compile", info->cache_hit ? "from cache" : "compiled",
           kp_format_ms(info->compile_ms, c, sizeof c));
    kp_run_reflection_text(&r->refl, &info->device, limits, sizeof limits);
    printf("  reflection: %s · preferred multiple %llu · local mem %s static", limits,
           (unsigned long long)r->refl.preferred_multiple,
           kp_format_bytes(r->refl.static_local, a, sizeof a));
    if (r->refl.dynamic_local)
        printf(" + %s dynamic", kp_format_bytes(r->refl.dynamic_local, c, sizeof c));
    printf(" · private mem %s", kp_format_bytes(r->refl.private_bytes, b, sizeof b));
    if (r->refl.have_registers)
        printf(" · %d registers · const %llu B · PTX %d.%d · SASS sm_%d", r->refl.registers,
               (unsigned long long)r->refl.const_bytes, r->refl.ptx_version / 10,
               r->refl.ptx_version % 10, r->refl.binary_version);
    printf("\n");
    if (r->refl.have_occupancy)
        printf("  occupancy: %.0f%% theoretical at tg %llu (%d blocks/SM, limited by %s)\n",
               100 * r->refl.occupancy, (unsigned long long)kp_launch_tg_threads(&r->launch),
               r->refl.blocks_per_sm, r->refl.limiter);
    kp_run_source_print(report);
    kp_run_print_counters(o, r);
    printf("buffers after the run:\n");
    for (int i = 0; i < report->ndigests; i++) {
        const kp_buffer_digest *d = &report->digests[i];
        char name[80];
        snprintf(name, sizeof name, "#%d %s", d->arg + 1, d->name[0] ? d->name : "");
        printf("  %-12s %s[%llu]  fnv %016llx  sum %.6g  min %.6g  max %.6g", name,
               kp_type_name(d->type), (unsigned long long)d->count, (unsigned long long)d->hash,
               d->sum, d->min, d->max);
        if (d->nonfinite) printf("  %llu non-finite", (unsigned long long)d->nonfinite);
        printf("  [");
        for (int k = 0; k < d->nfirst; k++)
            printf("%s%.6g", k ? ", " : "", d->first[k]);
        printf("%s]\n", d->count > (uint64_t)d->nfirst ? ", …" : "");
    }
    if (report->nreadings) printf("readings:\n");
    for (int i = 0; i < report->nreadings; i++)
        printf("  · %s\n", report->lines[i].text);
}

/* --source: sample the kernel's PCs on dispatches of their own. Where the sampler cannot run,
 * the reason is kept for one line on stderr (and the JSON) and the run goes on: OK. */
static kprof_status kp_run_source(kp_lab *lab, const kp_run_args *a, kp_run_report *report,
                                  kp_error *err)
{
    int iters = report->run.iters; /* as the time budget allowed */
    int n = iters < KP_RUN_SOURCE_DISPATCHES ? iters : KP_RUN_SOURCE_DISPATCHES;
    kp_error why = {0};
    kprof_status st = kp_lab_hotspots(lab, &a->launch, n, &report->hotspots, &why);
    if (st == KPROF_OK) {
        report->have_hotspots = 1;
    } else if (st == KPROF_UNAVAILABLE) {
        kp_hotspots_free(&report->hotspots);
        kp_strlcpy(report->source_why, why.message, sizeof report->source_why);
        st = KPROF_OK;
    } else {
        kp_error_clear(err);
        kp_error_move(err, &why);
        return st;
    }
    kp_error_clear(&why);
    return st;
}

int kp_cmd_run(int argc, char **argv)
{
    kp_run_args a = {0};
    int rc = kp_run_parse(argc, argv, &a);
    if (rc == 0 && a.sweep) rc = kp_run_sweep(&a);
    if (rc != 0 || a.sweep) {
        kp_str_free(&a.options);
        return rc;
    }
    kp_error err = {0};
    kp_lab *lab = NULL;
    kp_run_report report;
    memset(&report, 0, sizeof report);
    kp_run_result *r = &report.run;
    int wedged = 0;
    double *scratch = NULL;
    /* --trace: its output is checked (and refused) before anything runs. */
    kp_lab_trace_out trace;
    memset(&trace, 0, sizeof trace);
    const char *trace_inputs[] = {a.lab.target, NULL};
    if (a.trace && kp_lab_trace_out_open(&trace, a.trace, a.force, trace_inputs,
                                         (size_t)a.warmup + (size_t)a.iters, &err) != KPROF_OK) {
        kp_str_free(&a.options);
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    /* On a terminal, a line on stderr says what is happening while a heavy kernel runs. */
    kp_progress *progress = kp_progress_start_still(); /* the lab may fork: no thread yet */
    kp_progress_set(progress, "run: %s: compile, fill and bind buffers", a.lab.target);
    kprof_status st = kp_lab_open(&a.lab, &lab, &err);
    if (st != KPROF_OK) goto done;
    kp_progress_animate(progress);
    report.info = kp_lab_get_info(lab);
    if (a.trace) { /* every warm-up and timed dispatch, with the bytes the run reports */
        trace.log.bytes = a.have_bytes ? (double)a.bytes : (double)report.info->buffer_bytes;
        kp_lab_set_log(lab, &trace.log);
    }
    r->launch = a.launch;
    r->iters = a.iters;
    r->warmup = a.warmup;
    st = kp_lab_check_launch(lab, &a.launch, &r->refl, &err);
    if (st != KPROF_OK) goto done;
    r->samples = calloc((size_t)a.iters, sizeof *r->samples);
    scratch = calloc((size_t)a.iters, sizeof *scratch);
    if (!r->samples || !scratch) {
        st = kp_error_nomem(&err);
        goto done;
    }
    kp_progress_set(progress, "run: %s: %d warm-up%s + %d timed dispatch%s",
                    report.info->kernel->name, a.warmup, a.warmup == 1 ? "" : "s", a.iters,
                    a.iters == 1 ? "" : "es");
    report.iters_asked = a.iters;
    report.moved = a.replay_moved;
    report.budget_s = kp_run_budget(&a);
    st = kp_lab_measure_within(lab, &a.launch, a.warmup, a.iters, report.budget_s, r->samples,
                               &r->iters, &err);
    if (st == KPROF_TIMEOUT) wedged = 1;
    if (st != KPROF_OK) goto done;
    kp_progress_set(progress, "run: %s: reading the buffers back", report.info->kernel->name);
    st = kp_lab_digest(lab, report.digests, KP_SPEC_MAX_ARGS, &report.ndigests, &err);
    if (st != KPROF_OK) goto done;
    /* After the digest, so that the buffers it reports are those of the timed run. */
    if (a.source) {
        report.source = a.source;
        kp_progress_set(progress, "run: %s: sampling PCs", report.info->kernel->name);
        st = kp_run_source(lab, &a, &report, &err);
        if (st == KPROF_TIMEOUT) wedged = 1;
        if (st != KPROF_OK) goto done;
    }
    /* After the read-back: the digests are what they are without --counters. */
    if (a.counters) {
        kp_progress_set(progress, "run: %s: hardware counters (one replayed dispatch)",
                        report.info->kernel->name);
        st = kp_lab_counters(lab, &a.launch, &a.counters_asked, &err);
        if (st == KPROF_TIMEOUT) wedged = 1;
        if (st != KPROF_OK) goto done;
        r->counters = &a.counters_asked;
    }
    kp_progress_stop(progress);
    progress = NULL;
    /* Nothing is reported before the session has released the device cleanly: a kernel that
     * corrupted memory may only be caught there (kp_lab_finish). */
    st = kp_lab_finish(lab, &err);
    if (st == KPROF_OK && a.trace) st = kp_lab_trace_out_commit(&trace, &report.info->device, &err);
    if (st != KPROF_OK) goto done;

    const kp_lab_info *info = report.info;
    kp_run_result_time(r, r->samples, (size_t)r->iters, scratch);
    kp_ceiling ceiling;
    double ceiling_gbs = 0;
    if (kp_cli_ceiling(&info->device, &ceiling) == 0) {
        ceiling_gbs = ceiling.copy_gbs;
        r->peak_gflops = ceiling.fma_gflops;
    }
    kp_run_result_bandwidth(r, a.have_bytes ? a.bytes : info->buffer_bytes, !a.have_bytes,
                            ceiling_gbs);
    uint64_t threads = 0;
    uint64_t grid_bytes = kp_lab_grid_bytes(lab, &a.launch, &threads);
    kp_run_result_read(r, &info->device, info->buffer_bytes, grid_bytes, threads);
    report.nreadings = kp_readings_describe(&r->readings_in, &r->readings, report.lines, 16);

    if (info->warning[0]) fprintf(stderr, "kprof: warning: %s\n", info->warning);
    if (report.source && !report.have_hotspots)
        fprintf(stderr, "kprof: source: %s\n", report.source_why);
    if (r->counters && !r->counters->have)
        fprintf(stderr, "kprof: counters: %s\n", r->counters->why_not);
    /* The JSON is the result --json prints, run.json keeps and the history records. */
    kp_str json = {0};
    if (a.json || kp_record_enabled()) {
        kp_run_file file = {.info = info,
                            .run = &report.run,
                            .iters_asked = report.iters_asked,
                            .budget_s = report.budget_s,
                            .readings = report.lines,
                            .nreadings = report.nreadings,
                            .digests = report.digests,
                            .ndigests = report.ndigests,
                            .source = report.source,
                            .hotspots = report.have_hotspots ? &report.hotspots : NULL,
                            .source_why = report.source_why};
        st = kp_run_result_write(&json, &file, &err);
        if (st != KPROF_OK) {
            kp_str_free(&json);
            goto done;
        }
    }
    if (a.json) {
        fputs(json.data, stdout);
        if (info->kernel_dir[0]) {
            /* kprof's own file, replaced by every run; a link is followed, not replaced. */
            char path[4200];
            snprintf(path, sizeof path, "%s/run.json", info->kernel_dir);
            const char *inputs[] = {info->source_path, NULL};
            st = kp_output_write_file(path, KP_OUTPUT_FORCE, inputs, json.data, json.len, &err);
        }
    } else {
        kp_run_print(&report);
    }
    if (st == KPROF_OK) {
        kp_history_run h = {.git_dirty = -1};
        kp_strlcpy(h.kind, "run", sizeof h.kind);
        kp_strlcpy(h.kernel, info->kernel->name, sizeof h.kernel);
        kp_strlcpy(h.target, a.lab.target, sizeof h.target);
        kp_strlcpy(h.options, a.lab.options ? a.lab.options : "", sizeof h.options);
        kp_dims_text(r->launch.grid, r->launch.dims, h.grid, sizeof h.grid);
        kp_dims_text(r->launch.tg, r->launch.dims, h.tg, sizeof h.tg);
        kp_strlcpy(h.buffers, a.lab.buffers ? a.lab.buffers : "", sizeof h.buffers);
        h.median_ms = r->stats.median;
        h.min_ms = r->stats.min;
        h.nsamples = r->iters;
        kp_record_result(&h, &info->device, info->source_path, r->samples, (size_t)r->iters,
                         json.data);
    }
    kp_str_free(&json);
done:
    kp_progress_stop(progress);
    kp_lab_trace_out_abort(&trace);
    kp_hotspots_free(&report.hotspots);
    free(r->samples);
    free(scratch);
    if (wedged) kp_run_abandon(&err);
    kp_lab_close(lab);
    kp_str_free(&a.options);
    if (st != KPROF_OK) {
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}
