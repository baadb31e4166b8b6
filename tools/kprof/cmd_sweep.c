/*
 * cmd_sweep.c — `kprof run --sweep-tg` and its alias `kprof sweep`: one kernel at a fixed grid
 * across threadgroup sizes, as a table (median and min device ms, ~GB/s, % of the measured
 * ceiling, occupancy and its limiter on CUDA, with --counters each point's measured DRAM GB/s,
 * achieved occupancy and bound, the best point and its ties, the sizes above 110% of the ceiling
 * with `kprof run`'s reason), JSON (sweep.json in the kernel folder, written by
 * lab/result_file.h) and an SVG plot.
 *
 * How it runs (lab/sweep.h runs it): the calling thread opens the lab, checks every size before
 * anything runs and measures them one after another (the backends' runtimes stay on the thread
 * that opened them); a watcher thread, which never calls a backend, tells this file's observer,
 * which prints. The table's header comes once every
 * size is checked and each row as soon as its point is measured, so a long sweep shows its
 * curve as it grows. Which point is best, and which are tied with it, can only be known once
 * every point is in: a closing block after the rows names them (or says why there is no best:
 * one size is not a comparison). Under --json nothing is printed until the end.
 *
 * SIGINT, SIGTERM and SIGHUP are blocked in every thread of the sweep and read by the watcher
 * through a signalfd (lab/sweep.c), so that a signal never loses what was measured: the rows so far
 * and the closing block are printed — under --json the JSON of them with "complete": false, written
 * to sweep.json too — and kprof leaves at once with exit code 128 + the signal, without waiting for
 * the point being measured (its device work is abandoned, as after a --timeout).
 */
#define _GNU_SOURCE
#include "core/format.h"
#include "base/outfile.h"
#include "core/readings.h"
#include "base/json.h"
#include "export/html.h"
#include "export/svg.h"
#include "export/text.h"
#include "lab/result_file.h"
#include "lab/sweep.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/lab_options.h"
#include "tools/kprof/progress.h"
#include "tools/kprof/record.h"
#include "tools/kprof/run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int kp_sweep_has_occupancy(const kp_sweep *s)
{
    for (int i = 0; i < s->npoints; i++)
        if (s->points[i].run.refl.have_occupancy) return 1;
    return 0;
}

static void kp_sweep_print_header(const kp_sweep *s)
{
    const kp_lab_info *info = &s->info;
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o), *D = kp_text_dim(o);
    char g[64];
    kp_dims_text(s->points[0].run.launch.grid, s->points[0].run.launch.dims, g, sizeof g);
    printf("%s%s%s on %s %s(%s device %d)%s, grid %s, %d timed after %d warm-up%s per point\n", B,
           info->kernel->name, R, info->device.name, D, info->device.backend, info->device.index, R,
           g, s->iters, s->warmup, s->warmup == 1 ? "" : "s");
    /* A sweep changes the threadgroup: the output check is of the captured geometry only. */
    kp_run_replay_print(o, info, 1);
    if (s->refl.tg_rule != KP_TG_RULE_NONE) {
        char limits[512];
        kp_run_reflection_text(&s->refl, &info->device, limits, sizeof limits);
        printf("  %s\n", limits);
    }
    /* "GPU" only on a GPU, as run says it (device timestamps time any device). */
    printf("  %-12s %16s %12s %10s", "tg", info->device.is_gpu ? "GPU median" : "device median",
           "min", "~GB/s");
    if (s->ceiling_gbs > 0) printf(" %9s", "% ceiling");
    if (kp_sweep_has_occupancy(s)) printf("  %-24s", "occupancy (limiter)");
    if (s->counter_columns) printf(" %10s %9s %-8s", "DRAM GB/s", "achieved", "bound");
    printf("\n");
}

/* One measured row, printed as soon as it is measured: the best and its ties are marked in
 * the closing block, once every point is in. */
static void kp_sweep_print_row(const kp_sweep *s, int i)
{
    const kp_sweep_point *p = &s->points[i];
    char tg[48];
    kp_sweep_tg_text(p, tg, sizeof tg);
    char median[64], min[64];
    printf("  %-12s %s %s %10.1f", tg,
           kp_format_ms_cell(p->run.stats.median, 16, median, sizeof median),
           kp_format_ms_cell(p->run.stats.min, 12, min, sizeof min), p->run.gbps);
    if (s->ceiling_gbs > 0) printf(" %8.0f%%", kp_run_result_ceiling_percent(&p->run));
    if (kp_sweep_has_occupancy(s)) {
        char cell[64] = "-";
        if (p->run.refl.have_occupancy)
            snprintf(cell, sizeof cell, "%3.0f%% (%s)", 100 * p->run.refl.occupancy,
                     p->run.refl.limiter);
        printf("  %-24s", cell);
    }
    if (s->counter_columns) {
        /* Measured: DRAM traffic over the median, the achieved occupancy and the bound. */
        const kp_run_result *r = &p->run;
        const kp_counters *c = r->counters;
        char gbs[32] = "-", occ[32] = "-";
        const char *bound = "-";
        if (c && c->have) {
            if (r->readings.measured) snprintf(gbs, sizeof gbs, "%.1f", r->readings.measured_gbps);
            if (c->v[KP_COUNTER_OCCUPANCY].known)
                snprintf(occ, sizeof occ, "%.0f%%", c->v[KP_COUNTER_OCCUPANCY].value);
            bound = kp_bound_name(r->readings.bound);
        }
        printf(" %10s %9s %-8s", gbs, occ, bound);
    }
    if (i == s->your_tg) printf("  ◀ your --tg");
    printf("\n");
}

/* The closing block: sizes left out, warnings, then the best point and its ties, or why there
 * is none. complete: 0 when the sweep stopped part-way (a fault, a timeout, a signal). */
static void kp_sweep_print_close(const kp_sweep *s, int complete)
{
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o);
    kp_sweep_summary sum;
    kp_sweep_close_summary(s, &sum);
    if (s->skipped[0]) printf("  left out: %s\n", s->skipped);
    if (sum.cut)
        printf("  time budget: %d size%s timed fewer than the %d dispatches asked (%d at the "
               "fewest): %d each would take longer than the %g s --time-budget (--iters N "
               "times N)\n",
               sum.cut, sum.cut == 1 ? "" : "s", s->iters, sum.fewest, s->iters, s->cfg.budget_s);
    for (int i = 0; i < s->nwarnings; i++)
        printf("  ! %s\n", s->warnings[i].text);
    if (!complete)
        printf("  the sweep stopped: %d of %d size%s measured\n", sum.measured, s->npoints,
               s->npoints == 1 ? "" : "s");
    if (sum.only >= 0) {
        char tg[48];
        kp_sweep_tg_text(&s->points[sum.only], tg, sizeof tg);
        printf("  only tg %s was measured%s: one size is not a comparison, so none is the "
               "best\n",
               tg,
               s->required_only ? " (the kernel's required group size: there is nothing to "
                                  "sweep)"
                                : "");
        return;
    }
    if (s->best < 0) return;
    const kp_sweep_point *b = &s->points[s->best];
    char tg[48];
    kp_sweep_tg_text(b, tg, sizeof tg);
    char when[64];
    printf("  %s◀ best tg %s%s (median %s)%s%s\n", B, tg, R,
           kp_format_ms(b->run.stats.median, when, sizeof when),
           complete ? "" : ", of the sizes measured so far",
           s->best == s->your_tg ? ": your --tg" : "");
    if (sum.nties)
        printf("  ◀ tie: tg %s: the 95%% confidence interval of the median overlaps the best's "
               "(and the median is within %gx of it), a tie, not a difference\n",
               sum.ties, KP_SWEEP_TIE_RATIO);
    /* Above 110% of the ceiling is no bandwidth: the sizes that are, and why. */
    if (sum.nabove)
        printf("  ! above %.0f%% of the ceiling at tg %s: %s\n", 100 * KP_READING_CEILING_TOLERANCE,
               sum.above, sum.above_why);
    if (sum.your_ratio > 0) {
        const kp_sweep_point *y = &s->points[s->your_tg];
        kp_sweep_tg_text(y, tg, sizeof tg);
        printf("  your --tg %s: median %s, %.2fx the best\n", tg,
               kp_format_ms(y->run.stats.median, when, sizeof when), sum.your_ratio);
    }
}

static const char *kp_signal_name(int sig)
{
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "a signal";
    }
}

/* Print the sweep's JSON and write it to the kernel folder's sweep.json (complete or not: the
 * file says which). */
static kprof_status kp_sweep_emit_json(const kp_sweep *s, int complete, int signal, kp_error *err)
{
    kp_str out = {0};
    if (kp_sweep_result_write(&out, s, complete, signal ? kp_signal_name(signal) : NULL, err) !=
        KPROF_OK) {
        kp_str_free(&out);
        return err->status;
    }
    fputs(out.data, stdout);
    kprof_status st = KPROF_OK;
    if (s->info.kernel_dir[0]) {
        char path[4200];
        snprintf(path, sizeof path, "%s/sweep.json", s->info.kernel_dir);
        const char *inputs[] = {s->info.source_path, NULL};
        st = kp_output_write_file(path, KP_OUTPUT_FORCE, inputs, out.data, out.len, err);
    }
    kp_str_free(&out);
    return st;
}

static kprof_status kp_sweep_plot(const kp_sweep *s, kp_output *out, kp_error *err)
{
    kp_plot_point *pts = calloc((size_t)s->npoints, sizeof *pts);
    if (!pts) return kp_error_nomem(err);
    int n = 0;
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_sweep_tg_text(p, pts[n].label, sizeof pts[n].label);
        pts[n].median_ms = p->run.stats.median;
        pts[n].min_ms = p->run.stats.min;
        pts[n].occupancy = p->run.refl.have_occupancy ? p->run.refl.occupancy : -1;
        pts[n].best = p->best;
        pts[n].tie = p->tie;
        n++;
    }
    char title[1024];
    char g[64];
    kp_dims_text(s->points[0].run.launch.grid, s->points[0].run.launch.dims, g, sizeof g);
    snprintf(title, sizeof title, "%s on %s, grid %s", s->info.kernel->name, s->info.device.name,
             g);
    char *svg = n ? kp_svg_sweep(title, s->info.device.is_gpu, pts, n) : NULL;
    free(pts);
    if (!svg) return kp_error_set(err, KPROF_NOMEM, "no points to plot, or out of memory");
    kprof_status st = kp_output_write(out, svg, strlen(svg), err);
    free(svg);
    if (st == KPROF_OK) st = kp_output_commit(out, err);
    return st;
}

/* What the watcher has printed so far. */
typedef struct kp_sweep_view {
    int header;  /* the table's header is out */
    int rows;    /* rows printed */
    int current; /* the point the progress line names */
} kp_sweep_view;

/* What the observer works with: the arguments, the progress line and what is printed. */
typedef struct kp_sweep_watch {
    const kp_run_args *args;
    kp_progress *progress;
    kp_sweep_view view;
} kp_sweep_watch;

/* Print what the sweep has added since the last call (with s->mu held). */
static void kp_sweep_catch_up(void *user, kp_sweep *s)
{
    kp_sweep_watch *w = user;
    kp_sweep_view *v = &w->view;
    kp_progress *progress = w->progress;
    int json = w->args->json;
    if (!s->checked) return;
    if ((!v->header || v->rows < s->nmeasured) && !json) {
        kp_progress_hide(progress);
        if (!v->header) kp_sweep_print_header(s);
        for (; v->rows < s->nmeasured; v->rows++)
            kp_sweep_print_row(s, v->rows);
        fflush(stdout);
        v->current = -1; /* redraw the progress line below the new rows */
    }
    v->header = 1;
    v->rows = s->nmeasured;
    if (!s->finished && s->current >= 0 && s->current != v->current) {
        char tg[48];
        kp_sweep_tg_text(&s->points[s->current], tg, sizeof tg);
        kp_progress_set(progress, "sweep: tg %s (%d/%d)", tg, s->current + 1, s->npoints);
        v->current = s->current;
    }
}

/* A signal came: print what was measured and leave with 128 + the signal, now. The sweep's
 * thread may be inside a dispatch: it is not waited for, and the lab is not closed (the OS
 * reclaims it). s->mu is held (sweep.h), so the sweep changes nothing while this prints. */
static _Noreturn void kp_sweep_interrupted(void *user, kp_sweep *s, int sig)
{
    kp_sweep_watch *w = user;
    kp_sweep_catch_up(w, s);
    kp_progress_stop(w->progress);
    int measured = s->nmeasured;
    /* Everything measured already (the signal came with the last point): complete. */
    int complete = s->finished && s->status == KPROF_OK;
    if (s->checked) {
        s->best = kp_sweep_mark(s->points, s->npoints);
        kp_error err = {0};
        if (w->args->json) {
            if (kp_sweep_emit_json(s, complete, complete ? 0 : sig, &err) != KPROF_OK)
                kp_cli_fail(&err);
        } else {
            kp_sweep_print_close(s, complete);
        }
        kp_error_clear(&err);
    }
    fflush(stdout);
    fprintf(stderr, "kprof: %s (%s) stopped the sweep with %d of %d size%s measured\n",
            kp_signal_name(sig), strsignal(sig), measured, s->checked ? s->npoints : 0,
            s->checked && s->npoints == 1 ? "" : "s");
    kp_output_unlink_all(); /* --plot's temporary */
    _exit(kp_cli_exit(128 + sig));
}

/* Keep a complete sweep in the history: its JSON, and the best point's numbers and samples
 * (the only point's when one size was measured). */
static void kp_sweep_record(const kp_sweep *s, const kp_run_args *a)
{
    if (!kp_record_enabled() || s->lowest < 0) return;
    const kp_sweep_point *p = &s->points[s->lowest];
    kp_str json = {0};
    kp_error jerr = {0};
    kprof_status jst = kp_sweep_result_write(&json, s, 1, NULL, &jerr);
    kp_error_clear(&jerr);
    kp_history_run h = {.git_dirty = -1};
    kp_strlcpy(h.kind, "sweep", sizeof h.kind);
    kp_strlcpy(h.kernel, s->info.kernel->name, sizeof h.kernel);
    kp_strlcpy(h.target, a->lab.target, sizeof h.target);
    kp_strlcpy(h.options, a->lab.options ? a->lab.options : "", sizeof h.options);
    kp_dims_text(p->run.launch.grid, p->run.launch.dims, h.grid, sizeof h.grid);
    kp_dims_text(p->run.launch.tg, p->run.launch.dims, h.tg, sizeof h.tg);
    kp_strlcpy(h.buffers, a->lab.buffers ? a->lab.buffers : "", sizeof h.buffers);
    h.median_ms = p->run.stats.median;
    h.min_ms = p->run.stats.min;
    h.nsamples = p->run.iters;
    if (jst != KPROF_OK)
        fprintf(stderr, "kprof: warning: not recorded in the history: out of memory\n");
    else
        kp_record_result(&h, &s->info.device, s->info.source_path, s->lowest_samples,
                         (size_t)p->run.iters, json.data);
    kp_str_free(&json);
}

/* The stored ceiling for the sweep (kp_cli_ceiling: a damaged store is a warning). */
static void kp_sweep_ceiling(void *user, const kp_device_info *dev, double *copy_gbs,
                             double *fma_gflops)
{
    (void)user;
    kp_ceiling ceiling;
    if (kp_cli_ceiling(dev, &ceiling) == 0) {
        *copy_gbs = ceiling.copy_gbs;
        *fma_gflops = ceiling.fma_gflops;
    }
}

int kp_run_sweep(kp_run_args *a)
{
    kp_error err = {0};
    kp_output plot = {0}, html = {0};
    kp_progress *progress = NULL;
    kp_sweep *s = calloc(1, sizeof *s);
    kprof_status st = KPROF_OK;
    if (!s) return kp_cli_nomem();
    kp_sweep_config cfg = {
        .launch = a->launch,
        .tg_set = a->tg_set,
        .tg_list = a->tg_list,
        .iters = a->iters,
        .warmup = a->warmup,
        .budget_s = kp_run_budget(a),
        .have_bytes = a->have_bytes,
        .bytes = a->bytes,
        .counters = a->counters,
        .counters_asked = a->counters_asked,
        .ceiling = kp_sweep_ceiling,
    };
    kp_sweep_init(s, &cfg);
    /* The plot's file is checked (and its temporary made) before the sweep runs. */
    const char *plot_inputs[] = {a->lab.target, NULL};
    if (a->plot)
        st = kp_output_open(&plot, a->plot, a->force ? KP_OUTPUT_FORCE : 0, plot_inputs, &err);
    if (st == KPROF_OK && a->html)
        st = kp_output_open(&html, a->html, a->force ? KP_OUTPUT_FORCE : 0, plot_inputs, &err);
    if (st != KPROF_OK) goto done;
    st = kp_sweep_catch_signals(s, &err);
    if (st != KPROF_OK) goto done;
    progress = kp_progress_start_still();
    kp_progress_set(progress, "sweep: %s: compile, fill and bind buffers, check the sizes",
                    a->lab.target);
    /* The lab opens before the watcher and progress threads exist: it may fork the process
     * that runs the kernels (lab.h), which is best done with no other thread of ours about. */
    st = kp_lab_open(&a->lab, &s->lab, &err);
    if (st != KPROF_OK) goto done;
    kp_progress_animate(progress);
    kp_sweep_watch watch = {.args = a, .progress = progress, .view = {0, 0, -1}};
    kp_sweep_observer obs = {
        .user = &watch, .changed = kp_sweep_catch_up, .signal = kp_sweep_interrupted};
    st = kp_sweep_execute(s, &obs, &err);
    if (st != KPROF_OK) goto done;
    kp_progress_stop(progress);
    progress = NULL;
    st = s->status;
    err = s->err;
    memset(&s->err, 0, sizeof s->err);
    if (!s->checked) goto done; /* nothing ran: the error says why */
    if (s->voided) {            /* no row stands: no closing block, no JSON, no plot */
        if (!a->json && s->nmeasured)
            printf("  the sweep is void: the process that ran its kernels died, so none of the "
                   "rows above stands\n");
        goto done;
    }

    s->best = kp_sweep_mark(s->points, s->npoints);
    if (s->info.warning[0]) fprintf(stderr, "kprof: warning: %s\n", s->info.warning);
    if (s->counters_off[0]) fprintf(stderr, "kprof: counters: %s\n", s->counters_off);
    if (a->json) {
        kp_error jerr = {0};
        kprof_status jst = kp_sweep_emit_json(s, !s->stopped, 0, &jerr);
        if (jst != KPROF_OK && st == KPROF_OK) {
            st = jst;
            kp_error_clear(&err);
            err = jerr;
        } else {
            kp_error_clear(&jerr);
        }
    } else {
        kp_sweep_print_close(s, !s->stopped);
    }
    if (st == KPROF_OK && a->plot) {
        st = kp_sweep_plot(s, &plot, &err);
        if (st == KPROF_OK && !a->json) printf("  plot: %s\n", a->plot);
    }
    if (st == KPROF_OK && a->html) {
        kp_str js = {0};
        st = kp_sweep_result_write(&js, s, !s->stopped, NULL, &err);
        char title[4200];
        snprintf(title, sizeof title, "kprof sweep %s", a->lab.target);
        if (st == KPROF_OK) st = kp_html_json_page(&html, "sweep", title, js.data, js.len, &err);
        kp_str_free(&js);
        if (st == KPROF_OK && !a->json) printf("  page: %s\n", a->html);
    }
    if (st == KPROF_OK && !s->stopped) kp_sweep_record(s, a);
done:
    kp_progress_stop(progress);
    kp_output_abort(&plot); /* after a commit, a no-op */
    kp_output_abort(&html);
    if (st == KPROF_TIMEOUT) kp_run_abandon(&err);
    kp_lab_close(s->lab);
    /* A signal that came after the last point still ends kprof with 128 + it: what was measured
     * is out, in full. */
    int sig_after = kp_sweep_release(s);
    free(s);
    int rc = 0;
    if (st != KPROF_OK) rc = kp_cli_fail(&err);
    kp_error_clear(&err);
    return sig_after ? 128 + sig_after : rc;
}

int kp_cmd_sweep(int argc, char **argv)
{
    kp_run_args a = {0};
    a.sweep = 1;
    int rc = kp_run_parse(argc, argv, &a);
    if (rc == 0) rc = kp_run_sweep(&a);
    kp_str_free(&a.options);
    return rc;
}
