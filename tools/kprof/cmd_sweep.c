/*
 * cmd_sweep.c — `kprof run --sweep-tg` and its alias `kprof sweep`: one kernel at a fixed grid
 * across threadgroup sizes, as a table (median and min device ms, ~GB/s, % of the measured
 * ceiling, occupancy and its limiter on CUDA, with --counters each point's measured DRAM GB/s,
 * achieved occupancy and bound, the best point and its ties, the sizes above 110% of the ceiling
 * with `kprof run`'s reason), JSON (sweep.json in the kernel folder) and an SVG plot.
 *
 * How it runs: the calling thread opens the lab, checks every size before anything runs and
 * measures them one after another (the backends' runtimes stay on the thread that opened them);
 * a watcher thread, which never calls a backend, prints. The table's header comes once every
 * size is checked and each row as soon as its point is measured, so a long sweep shows its
 * curve as it grows. Which point is best, and which are tied with it, can only be known once
 * every point is in: a closing block after the rows names them (or says why there is no best:
 * one size is not a comparison). Under --json nothing is printed until the end.
 *
 * SIGINT, SIGTERM and SIGHUP are blocked in every thread of the sweep and read by the watcher
 * through a signalfd, so that a signal never loses what was measured: the rows so far and the
 * closing block are printed — under --json the JSON of them with "complete": false, written to
 * sweep.json too — and kprof leaves at once with exit code 128 + the signal, without waiting
 * for the point being measured (its device work is abandoned, as after a --timeout).
 */
#define _GNU_SOURCE
#include "core/format.h"
#include "base/outfile.h"
#include "core/readings.h"
#include "base/json.h"
#include "export/svg.h"
#include "export/text.h"
#include "lab/sweep.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/lab_options.h"
#include "tools/kprof/progress.h"
#include "tools/kprof/record.h"
#include "tools/kprof/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

typedef struct kp_sweep_run {
    kp_run_args *args;
    kp_lab *lab;      /* the worker's; closed by this thread after the join */
    kp_lab_info info; /* a copy, refreshed under mu after each point */
    kp_sweep_point points[KP_SWEEP_MAX_POINTS];
    int npoints;
    int best;
    int your_tg;       /* the point of --tg, or -1 */
    int required_only; /* the default sizes were the kernel's one required size */
    uint64_t bytes;
    int bytes_assumed;
    double ceiling_gbs;
    uint64_t kernel_max_tg;
    kp_reflection refl; /* at tg 1: the kernel's limits, rule and static memory */
    int iters, warmup;
    char skipped[512]; /* default sizes left out (non-multiples of the grid) */
    kp_reading_line warnings[4];
    int nwarnings;
    /* The measured point of lowest median so far (the best, once two are in: kp_sweep_mark
     * picks the same one, the first of equal medians) and its samples, for the history. Only
     * the worker writes them, and this thread reads them after the join. */
    int lowest;
    double *lowest_samples;
    /* --counters: each point's (heap, npoints), and the device's FLOP peak; counters_off holds
     * why they cannot be read once a point found they cannot (the rest are not asked). */
    kp_counters *counters;
    double peak_gflops;
    char counters_off[512];
    int counter_columns; /* the table shows the counters' columns (the backend can read them) */

    /* Between the worker and this thread, under mu. Points are measured in order, so the
     * measured ones are points[0..nmeasured). */
    pthread_mutex_t mu;
    int checked; /* every size checked: the table's header can be printed */
    int current; /* the point being measured, -1 before the first */
    int nmeasured;
    int finished; /* the worker returned: status and err are final */
    int stopped;  /* a point failed and the sweep stopped part-way */
    int voided;   /* the process that ran the kernels died: no row measured stands (lab.h) */
    kprof_status status;
    kp_error err;
    int wake[2]; /* the worker writes a byte here after every change */
} kp_sweep_run;

static void kp_tg_label(const kp_sweep_point *p, char *buf, size_t n)
{
    kp_dims_text(p->run.launch.tg, p->run.launch.dims, buf, n);
}

static int kp_sweep_has_occupancy(const kp_sweep_run *s)
{
    for (int i = 0; i < s->npoints; i++)
        if (s->points[i].run.refl.have_occupancy) return 1;
    return 0;
}

static void kp_sweep_print_header(const kp_sweep_run *s)
{
    const kp_lab_info *info = &s->info;
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o), *D = kp_text_dim(o);
    char g[64];
    kp_dims_text(s->points[0].run.launch.grid, s->points[0].run.launch.dims, g, sizeof g);
    printf("%s%s%s on %s %s(%s device %d)%s, grid %s, %d timed after %d warm-up%s per point\n", B,
           info->kernel->name, R, info->device.name, D, info->device.backend, info->device.index, R,
           g, s->iters, s->warmup, s->warmup == 1 ? "" : "s");
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
static void kp_sweep_print_row(const kp_sweep_run *s, int i)
{
    const kp_sweep_point *p = &s->points[i];
    char tg[48];
    kp_tg_label(p, tg, sizeof tg);
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

/* Point i's reading of its ~GB/s against the ceiling when above KP_READING_CEILING_TOLERANCE
 * of it: `kprof run`'s own sentence (kp_readings_describe's "above_ceiling": why it cannot be
 * DRAM traffic), into buf; 0 when the point is not above. */
static int kp_sweep_above_ceiling(const kp_sweep_point *p, char *buf, size_t n)
{
    if (!p->measured || p->run.readings.bandwidth != KP_BANDWIDTH_ABOVE) return 0;
    kp_readings_input in = p->run.readings_in;
    in.limiter = p->run.refl.limiter; /* the point was copied: read its own (run_result.h) */
    kp_reading_line lines[16];
    int nl = kp_readings_describe(&in, &p->run.readings, lines, 16);
    for (int k = 0; k < nl; k++)
        if (strcmp(lines[k].id, "above_ceiling") == 0) {
            snprintf(buf, n, "%s", lines[k].text);
            return 1;
        }
    return 0;
}

/* Above 110% of the ceiling is no bandwidth: the sizes that are, and why (the reading of the
 * highest of them; the reasons are the grid's and the buffers', which every size shares). */
static void kp_sweep_print_above_ceiling(const kp_sweep_run *s)
{
    kp_str tgs = {0};
    int top = -1, nabove = 0;
    char why[sizeof((kp_reading_line *)0)->text];
    for (int i = 0; i < s->npoints; i++) {
        if (!kp_sweep_above_ceiling(&s->points[i], why, sizeof why)) continue;
        char t[48];
        kp_tg_label(&s->points[i], t, sizeof t);
        kp_str_printf(&tgs, "%s%s", nabove++ ? ", " : "", t);
        if (top < 0 || s->points[i].run.gbps > s->points[top].run.gbps) top = i;
    }
    if (top >= 0 && kp_sweep_above_ceiling(&s->points[top], why, sizeof why))
        printf("  ! above %.0f%% of the ceiling at tg %s: %s\n", 100 * KP_READING_CEILING_TOLERANCE,
               tgs.data ? tgs.data : "", why);
    kp_str_free(&tgs);
}

/* The closing block: sizes left out, warnings, then the best point and its ties, or why there
 * is none. complete: 0 when the sweep stopped part-way (a fault, a timeout, a signal). */
static void kp_sweep_print_close(const kp_sweep_run *s, int complete)
{
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o);
    int measured = 0;
    for (int i = 0; i < s->npoints; i++)
        measured += s->points[i].measured;
    if (s->skipped[0]) printf("  left out: %s\n", s->skipped);
    int fewest = 0, cut = 0;
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured || p->run.iters >= s->iters) continue;
        cut++;
        if (!fewest || p->run.iters < fewest) fewest = p->run.iters;
    }
    if (cut)
        printf("  time budget: %d size%s timed fewer than the %d dispatches asked (%d at the "
               "fewest): %d each would take longer than the %g s --time-budget (--iters N "
               "times N)\n",
               cut, cut == 1 ? "" : "s", s->iters, fewest, s->iters, kp_run_budget(s->args));
    for (int i = 0; i < s->nwarnings; i++)
        printf("  ! %s\n", s->warnings[i].text);
    if (!complete)
        printf("  the sweep stopped: %d of %d size%s measured\n", measured, s->npoints,
               s->npoints == 1 ? "" : "s");
    if (measured == 1) {
        const kp_sweep_point *p = NULL;
        for (int i = 0; i < s->npoints && !p; i++)
            if (s->points[i].measured) p = &s->points[i];
        char tg[48];
        kp_tg_label(p, tg, sizeof tg);
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
    kp_tg_label(b, tg, sizeof tg);
    char when[64];
    printf("  %s◀ best tg %s%s (median %s)%s%s\n", B, tg, R,
           kp_format_ms(b->run.stats.median, when, sizeof when),
           complete ? "" : ", of the sizes measured so far",
           s->best == s->your_tg ? ": your --tg" : "");
    kp_str ties = {0};
    int nties = 0;
    for (int i = 0; i < s->npoints; i++) {
        if (!s->points[i].tie) continue;
        char t[48];
        kp_tg_label(&s->points[i], t, sizeof t);
        kp_str_printf(&ties, "%s%s%s", nties++ ? ", " : "", t,
                      i == s->your_tg ? " (your --tg)" : "");
    }
    if (nties)
        printf("  ◀ tie: tg %s: the 95%% confidence interval of the median overlaps the best's "
               "(and the median is within %gx of it), a tie, not a difference\n",
               ties.data ? ties.data : "", KP_SWEEP_TIE_RATIO);
    kp_str_free(&ties);
    kp_sweep_print_above_ceiling(s);
    if (s->your_tg >= 0 && s->your_tg != s->best && s->points[s->your_tg].measured &&
        !s->points[s->your_tg].tie && b->run.stats.median > 0) {
        const kp_sweep_point *y = &s->points[s->your_tg];
        kp_tg_label(y, tg, sizeof tg);
        printf("  your --tg %s: median %s, %.2fx the best\n", tg,
               kp_format_ms(y->run.stats.median, when, sizeof when),
               y->run.stats.median / b->run.stats.median);
    }
}

static void kp_sweep_json_tg(kp_json *j, const char *key, const kp_sweep_point *p)
{
    kp_json_array_begin(j, key);
    for (int d = 0; d < p->run.launch.dims; d++)
        kp_json_uint(j, NULL, p->run.launch.tg[d]);
    kp_json_array_end(j);
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

/* complete: 0 when the sweep stopped part-way (a fault, a timeout, a signal: `signal` names it,
 * else 0): the points measured so far. */
static void kp_sweep_json(kp_str *out, const kp_sweep_run *s, int complete, int signal)
{
    const kp_lab_info *info = &s->info;
    int measured = 0;
    for (int i = 0; i < s->npoints; i++)
        measured += s->points[i].measured;
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_run_json_header(&j, info);
    kp_json_bool(&j, "complete", complete);
    if (signal)
        kp_json_string(&j, "signal", kp_signal_name(signal));
    else
        kp_json_null(&j, "signal");
    kp_json_array_begin(&j, "grid");
    for (int d = 0; d < s->points[0].run.launch.dims; d++)
        kp_json_uint(&j, NULL, s->points[0].run.launch.grid[d]);
    kp_json_array_end(&j);
    kp_json_int(&j, "iterations", s->iters); /* asked; each point's "iterations" ran */
    kp_json_int(&j, "warmup", s->warmup);
    double budget = kp_run_budget(s->args);
    if (budget > 0)
        kp_json_double(&j, "time_budget_s", budget);
    else
        kp_json_null(&j, "time_budget_s");
    int cut = 0;
    for (int i = 0; i < s->npoints; i++)
        cut |= s->points[i].measured && s->points[i].run.iters < s->iters;
    kp_json_bool(&j, "time_budget_cut", cut);
    kp_json_uint(&j, "bytes", s->bytes);
    kp_json_bool(&j, "bytes_assumed_once_per_element", s->bytes_assumed);
    if (s->ceiling_gbs > 0)
        kp_json_double(&j, "ceiling_gb_per_s", s->ceiling_gbs);
    else
        kp_json_null(&j, "ceiling_gb_per_s");
    kp_json_uint(&j, "kernel_max_threadgroup_size", s->kernel_max_tg);
    kp_json_uint(&j, "device_max_threadgroup_size", info->device.max_tg);
    kp_run_json_tg_rule(&j, &s->refl);
    kp_json_uint(&j, "static_local_bytes", s->refl.static_local);
    kp_json_uint(&j, "dynamic_local_bytes", s->refl.dynamic_local);
    if (s->your_tg >= 0)
        kp_sweep_json_tg(&j, "your_threadgroup", &s->points[s->your_tg]);
    else
        kp_json_null(&j, "your_threadgroup");
    kp_json_int(&j, "sizes_planned", s->npoints);
    kp_json_int(&j, "sizes_measured", measured);
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_json_object_begin(&j, NULL);
        kp_run_result_json(&j, &p->run, KP_RUN_JSON_SWEEP_POINT);
        kp_json_bool(&j, "best", p->best);
        kp_json_bool(&j, "tie", p->tie);
        kp_json_bool(&j, "your_tg", i == s->your_tg);
        char why[sizeof((kp_reading_line *)0)->text];
        if (kp_sweep_above_ceiling(p, why, sizeof why)) /* `kprof run`'s reading of it */
            kp_json_string(&j, "above_ceiling_reason", why);
        else
            kp_json_null(&j, "above_ceiling_reason");
        if (p->have_ci) { /* the median's 95% interval: what "tie" compares */
            kp_json_double(&j, "gpu_ms_median_ci_low", p->median_ci.lo);
            kp_json_double(&j, "gpu_ms_median_ci_high", p->median_ci.hi);
        } else {
            kp_json_null(&j, "gpu_ms_median_ci_low");
            kp_json_null(&j, "gpu_ms_median_ci_high");
        }
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    /* Fewer than two sizes measured: no comparison, so no best (best_threadgroup null). */
    kp_json_bool(&j, "compared", measured >= 2);
    if (s->best >= 0)
        kp_sweep_json_tg(&j, "best_threadgroup", &s->points[s->best]);
    else
        kp_json_null(&j, "best_threadgroup");
    kp_json_array_begin(&j, "warnings");
    for (int i = 0; i < s->nwarnings; i++) {
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "id", s->warnings[i].id);
        kp_json_string(&j, "text", s->warnings[i].text);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
}

/* Print the sweep's JSON and write it to the kernel folder's sweep.json (complete or not: the
 * file says which). */
static kprof_status kp_sweep_emit_json(const kp_sweep_run *s, int complete, int signal,
                                       kp_error *err)
{
    kp_str out = {0};
    kp_sweep_json(&out, s, complete, signal);
    if (out.failed) {
        kp_str_free(&out);
        return kp_error_set(err, KPROF_NOMEM, "out of memory writing JSON");
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

static kprof_status kp_sweep_plot(const kp_sweep_run *s, kp_output *out, kp_error *err)
{
    kp_plot_point *pts = calloc((size_t)s->npoints, sizeof *pts);
    if (!pts) return kp_error_nomem(err);
    int n = 0;
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_tg_label(p, pts[n].label, sizeof pts[n].label);
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

static int kp_same_tg(const kp_launch *a, const kp_launch *b)
{
    return a->tg[0] == b->tg[0] && a->tg[1] == b->tg[1] && a->tg[2] == b->tg[2];
}

/* Add the size of --tg to the sweep unless it is there already, and remember which it is: in
 * order of threads among default sizes, at the end of a --tg-list. */
static kprof_status kp_sweep_add_your_tg(kp_run_args *a, kp_sweep_run *s, kp_error *err)
{
    for (int i = 0; i < s->npoints; i++)
        if (kp_same_tg(&s->points[i].run.launch, &a->launch)) {
            s->your_tg = i;
            return KPROF_OK;
        }
    if (s->npoints >= KP_SWEEP_MAX_POINTS)
        return kp_error_set(err, KPROF_INVALID, "the sweep has %d sizes already, no room for --tg",
                            KP_SWEEP_MAX_POINTS);
    uint64_t threads = kp_launch_tg_threads(&a->launch);
    int at = 0;
    if (a->tg_list) at = s->npoints;
    while (at < s->npoints && s->points[at].threads < threads)
        at++;
    memmove(&s->points[at + 1], &s->points[at], (size_t)(s->npoints - at) * sizeof s->points[0]);
    kp_sweep_point *p = &s->points[at];
    memset(p, 0, sizeof *p);
    p->run.launch = a->launch;
    p->threads = threads;
    s->npoints++;
    s->your_tg = at;
    return KPROF_OK;
}

/* The sizes to sweep: --tg-list; or the kernel's required size when it has one; or powers of
 * two from the execution width to the kernel's maximum. Then --tg's size, when given. */
static kprof_status kp_sweep_points(kp_run_args *a, kp_lab *lab, kp_sweep_run *s, kp_error *err)
{
    const kp_lab_info *info = kp_lab_get_info(lab);
    kp_launch probe = a->launch;
    for (int d = 0; d < 3; d++)
        probe.tg[d] = 1;
    kprof_status st = kp_lab_reflect(lab, &probe, &s->refl, err);
    if (st != KPROF_OK) return st;
    s->kernel_max_tg = s->refl.max_tg ? s->refl.max_tg : info->device.max_tg;
    if (a->tg_list) {
        st = kp_sweep_parse_list(a->tg_list, &a->launch, s->points, KP_SWEEP_MAX_POINTS,
                                 &s->npoints, err);
        if (st == KPROF_OK && a->tg_set) st = kp_sweep_add_your_tg(a, s, err);
        return st;
    }
    if (s->refl.tg_rule == KP_TG_RULE_REQUIRED) {
        /* One legal size: that one (checked below like any other: a shape with more
         * dimensions than the grid is named there). */
        kp_sweep_point *p = &s->points[s->npoints++];
        memset(p, 0, sizeof *p);
        p->run.launch = a->launch;
        for (int d = 0; d < 3; d++)
            p->run.launch.tg[d] = s->refl.tg_rule_size[d];
        p->threads = kp_tg_rule_threads(&s->refl);
        s->required_only = 1;
        return a->tg_set ? kp_sweep_add_your_tg(a, s, err) : KPROF_OK;
    }
    uint64_t start = info->device.exec_width ? info->device.exec_width : s->refl.preferred_multiple;
    if (a->launch.dims != 1) {
        /* 2-D and 3-D grids: shapes whose x is a multiple of the width, z 1 (sweep.h). */
        uint64_t shapes[KP_SWEEP_MAX_POINTS][3];
        int n = kp_sweep_default_shapes(start ? start : 64, s->kernel_max_tg,
                                        info->device.max_tg_dims, a->launch.grid,
                                        info->device.uniform_groups, shapes, KP_SWEEP_MAX_POINTS);
        for (int i = 0; i < n; i++) {
            kp_sweep_point *p = &s->points[s->npoints++];
            memset(p, 0, sizeof *p);
            p->run.launch = a->launch;
            for (int d = 0; d < 3; d++)
                p->run.launch.tg[d] = shapes[i][d];
            p->threads = shapes[i][0] * shapes[i][1];
        }
        if (a->tg_set && (st = kp_sweep_add_your_tg(a, s, err)) != KPROF_OK) return st;
        if (s->npoints == 0) {
            char g[64];
            kp_dims_text(a->launch.grid, a->launch.dims, g, sizeof g);
            return kp_error_set(err, KPROF_INVALID,
                                "no threadgroup shape whose x is a multiple of %llu fits grid %s "
                                "(up to %llu threads): give --tg-list, e.g. 8x8,16x16,32x8",
                                (unsigned long long)(start ? start : 64), g,
                                (unsigned long long)s->kernel_max_tg);
        }
        return KPROF_OK;
    }
    uint64_t sizes[KP_SWEEP_MAX_POINTS];
    int n =
        kp_sweep_default_sizes(start ? start : 64, s->kernel_max_tg, sizes, KP_SWEEP_MAX_POINTS);
    kp_str skipped = {0};
    for (int i = 0; i < n; i++) {
        if (info->device.uniform_groups && a->launch.grid[0] % sizes[i] != 0) {
            kp_str_printf(&skipped, "%s%llu", skipped.len ? ", " : "",
                          (unsigned long long)sizes[i]);
            continue;
        }
        kp_sweep_point *p = &s->points[s->npoints++];
        memset(p, 0, sizeof *p);
        p->run.launch = a->launch;
        p->run.launch.tg[0] = sizes[i];
        p->threads = sizes[i];
    }
    if (skipped.len)
        snprintf(s->skipped, sizeof s->skipped,
                 "tg %s (grid %llu is not a multiple, and %s needs whole threadgroups)",
                 skipped.data, (unsigned long long)a->launch.grid[0], info->device.backend);
    kp_str_free(&skipped);
    if (a->tg_set) {
        st = kp_sweep_add_your_tg(a, s, err);
        if (st != KPROF_OK) return st;
    }
    if (s->npoints == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "no threadgroup size from %llu to %llu divides grid %llu: give "
                            "--tg-list or a grid that is a power of two",
                            (unsigned long long)start, (unsigned long long)s->kernel_max_tg,
                            (unsigned long long)a->launch.grid[0]);
    return KPROF_OK;
}

/* Tell the printing thread something changed. The pipe is non-blocking: when it is full, the
 * printer has a wake-up pending anyway. */
static void kp_sweep_wake(kp_sweep_run *s)
{
    char c = 1;
    ssize_t w = write(s->wake[1], &c, 1);
    (void)w;
}

/* Everything up to the first dispatch, the lab being open: choose and check the sizes, look up
 * the ceiling, and the readings that follow the table. */
static kprof_status kp_sweep_prepare(kp_sweep_run *s, kp_error *err)
{
    kp_run_args *a = s->args;
    kprof_status st;
    const kp_lab_info *info = kp_lab_get_info(s->lab);
    pthread_mutex_lock(&s->mu);
    s->info = *info;
    pthread_mutex_unlock(&s->mu);
    st = kp_sweep_points(a, s->lab, s, err);
    if (st != KPROF_OK) return st;

    /* Every size is checked before anything runs; each bad one is named, one per line (the
     * line breaks are in the formats: arguments are escaped). */
    for (int i = 0; i < s->npoints; i++) {
        kp_error one = {0};
        if (kp_lab_check_launch(s->lab, &s->points[i].run.launch, &s->points[i].run.refl, &one) !=
            KPROF_OK) {
            kp_error_set(err, KPROF_INVALID, "the sweep cannot use these threadgroup sizes:");
            kp_error_append(err, "\n  %s%s", i == s->your_tg ? "your --tg: " : "", one.message);
        }
        kp_error_clear(&one);
    }
    if (err->status != KPROF_OK) return err->status;

    kp_ceiling ceiling;
    if (kp_cli_ceiling(&info->device, &ceiling) == 0) {
        s->ceiling_gbs = ceiling.copy_gbs;
        s->peak_gflops = ceiling.fma_gflops;
    }
    if (a->counters) {
        s->counters = calloc((size_t)s->npoints, sizeof *s->counters);
        if (!s->counters) return kp_error_nomem(err);
        /* A backend without counters is known now: no columns of dashes. */
        s->counter_columns = kp_lab_has_counters(s->lab, s->counters_off, sizeof s->counters_off);
    }
    s->bytes_assumed = !a->have_bytes;
    s->bytes = a->have_bytes ? a->bytes : info->buffer_bytes;

    /* The seed's warnings: register pressure and static shared memory near the limit. A
     * maximum the kernel declares itself is not register pressure. */
    kp_readings_input rin = {
        .kernel_max_tg = kp_reflection_limit_declared(&s->refl) ? 0 : s->kernel_max_tg,
        .device_max_tg = info->device.max_tg,
        .static_local = s->refl.static_local,
        .device_local = info->device.local_mem,
    };
    kp_readings r;
    kp_readings_compute(&rin, &r);
    kp_reading_line lines[16];
    int nl = kp_readings_describe(&rin, &r, lines, 16);
    for (int i = 0; i < nl && s->nwarnings < 4; i++)
        if (strcmp(lines[i].id, "register_pressure") == 0 ||
            strcmp(lines[i].id, "shared_memory_bound") == 0)
            s->warnings[s->nwarnings++] = lines[i];
    return KPROF_OK;
}

/* --counters at point i (measured, p its copy): one replayed dispatch read into s->counters[i],
 * and the point's readings from it. Once a point finds the counters cannot be read, the rest
 * are not asked (their reason is the first's). */
static kprof_status kp_sweep_counters(kp_sweep_run *s, int i, kp_sweep_point *p, kp_error *err)
{
    kp_counters *c = &s->counters[i];
    *c = s->args->counters_asked; /* the raw names */
    if (s->counters_off[0]) {
        c->read = 1;
        c->have = 0;
        snprintf(c->why_not, sizeof c->why_not, "%s", s->counters_off);
    } else {
        kprof_status st = kp_lab_counters(s->lab, &p->run.launch, c, err);
        if (st != KPROF_OK) return st;
        if (!c->have) snprintf(s->counters_off, sizeof s->counters_off, "%s", c->why_not);
    }
    p->run.counters = c;
    p->run.peak_gflops = s->peak_gflops;
    uint64_t threads = 0;
    uint64_t grid_bytes = kp_lab_grid_bytes(s->lab, &p->run.launch, &threads);
    kp_run_result_read(&p->run, &s->info.device, s->info.buffer_bytes, grid_bytes, threads);
    return KPROF_OK;
}

/* The sweep itself, on the calling thread (the backends' runtimes stay on the thread that
 * opened them): prepare, then every point in order, telling the watcher after each change. */
static void kp_sweep_work(kp_sweep_run *s)
{
    kp_run_args *a = s->args;
    kp_error err = {0};
    double *samples = calloc((size_t)a->iters, sizeof *samples);
    double *scratch = calloc((size_t)a->iters, sizeof *scratch);
    kprof_status st = KPROF_OK;
    int stopped = 0;
    s->lowest_samples = calloc((size_t)a->iters, sizeof *s->lowest_samples);
    if (!samples || !scratch || !s->lowest_samples) st = kp_error_nomem(&err);
    if (st == KPROF_OK) st = kp_sweep_prepare(s, &err);
    if (st == KPROF_OK) {
        pthread_mutex_lock(&s->mu);
        s->checked = 1;
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
    }
    for (int i = 0; st == KPROF_OK && i < s->npoints; i++) {
        pthread_mutex_lock(&s->mu);
        s->current = i;
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
        kp_sweep_point p = s->points[i];
        /* The time budget is the sweep's: each size gets an equal share of it. */
        double budget = kp_run_budget(a) / s->npoints;
        int timed = 0;
        st = kp_lab_measure_within(s->lab, &p.run.launch, a->warmup, a->iters, budget, samples,
                                   &timed, &err);
        if (st != KPROF_OK && kp_lab_is_void(s->lab)) break; /* no row measured stands */
        if (st != KPROF_OK) {
            char tg[48];
            kp_tg_label(&p, tg, sizeof tg);
            kp_error_append(&err, " (at tg %s; the sweep stopped)", tg);
            stopped = 1;
            break;
        }
        kp_sweep_summarise(&p, samples, (size_t)timed, scratch);
        if (s->lowest < 0 || p.run.stats.median < s->points[s->lowest].run.stats.median) {
            s->lowest = i;
            memcpy(s->lowest_samples, samples, (size_t)timed * sizeof *samples);
        }
        p.run.iters = timed;
        p.run.warmup = a->warmup;
        kp_run_result_bandwidth(&p.run, s->bytes, s->bytes_assumed, s->ceiling_gbs);
        if (!a->counters) { /* the readings `kprof run` gives (with counters: below) */
            uint64_t threads = 0;
            uint64_t grid_bytes = kp_lab_grid_bytes(s->lab, &p.run.launch, &threads);
            kp_run_result_read(&p.run, &s->info.device, s->info.buffer_bytes, grid_bytes, threads);
        }
        if (a->counters) {
            st = kp_sweep_counters(s, i, &p, &err);
            if (st != KPROF_OK && kp_lab_is_void(s->lab)) break;
            if (st != KPROF_OK) {
                char tg[48];
                kp_tg_label(&p, tg, sizeof tg);
                kp_error_append(&err, " (reading counters at tg %s; the sweep stopped)", tg);
                stopped = 1;
                break;
            }
        }
        pthread_mutex_lock(&s->mu);
        s->points[i] = p;
        s->nmeasured = i + 1;
        s->info = *kp_lab_get_info(s->lab); /* the timer it was measured with */
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
    }
    /* What was measured stands only once the session released the device cleanly (lab.h). */
    if (st == KPROF_OK && s->npoints > 0 && !stopped) st = kp_lab_finish(s->lab, &err);
    free(samples);
    free(scratch);
    pthread_mutex_lock(&s->mu);
    s->voided = s->lab && kp_lab_is_void(s->lab);
    s->status = st;
    s->err = err; /* the log, if any, moves with it */
    s->stopped = stopped;
    s->finished = 1;
    pthread_mutex_unlock(&s->mu);
    kp_sweep_wake(s);
}

/* What the watcher has printed so far. */
typedef struct kp_sweep_view {
    int header;  /* the table's header is out */
    int rows;    /* rows printed */
    int current; /* the point the progress line names */
} kp_sweep_view;

/* Print what the sweep has added since the last call (with s->mu held). */
static void kp_sweep_catch_up(const kp_sweep_run *s, kp_sweep_view *v, kp_progress *progress)
{
    int json = s->args->json;
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
        kp_tg_label(&s->points[s->current], tg, sizeof tg);
        kp_progress_set(progress, "sweep: tg %s (%d/%d)", tg, s->current + 1, s->npoints);
        v->current = s->current;
    }
}

/* Mark the best and its ties among the measured points (none when fewer than two). */
static void kp_sweep_finish_marks(kp_sweep_run *s)
{
    s->best = kp_sweep_mark(s->points, s->npoints);
}

/* The watcher thread's arguments. */
typedef struct kp_sweep_watch_args {
    kp_sweep_run *sweep;
    kp_progress *progress;
    int signal_fd;
} kp_sweep_watch_args;

/* A signal came: print what was measured and leave with 128 + the signal, now. The sweep's
 * thread may be inside a dispatch: it is not waited for, and the lab is not closed (the OS
 * reclaims it). s->mu is held from here on, so the sweep changes nothing while this prints. */
static _Noreturn void kp_sweep_interrupted(kp_sweep_run *s, kp_sweep_view *v, kp_progress *progress,
                                           int sig)
{
    pthread_mutex_lock(&s->mu);
    kp_sweep_catch_up(s, v, progress);
    kp_progress_stop(progress);
    int measured = s->nmeasured;
    /* Everything measured already (the signal came with the last point): complete. */
    int complete = s->finished && s->status == KPROF_OK;
    if (s->checked) {
        kp_sweep_finish_marks(s);
        kp_error err = {0};
        if (s->args->json) {
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

/* The watcher: prints the header and each row as the sweep adds them, keeps the progress line,
 * and takes the signals. It never calls into a backend. Returns once the sweep has finished
 * and everything it measured is printed. */
static void *kp_sweep_watch(void *arg)
{
    kp_sweep_watch_args *w = arg;
    kp_sweep_run *s = w->sweep;
    kp_sweep_view view = {0, 0, -1};
    for (;;) {
        struct pollfd fds[2] = {{.fd = w->signal_fd, .events = POLLIN},
                                {.fd = s->wake[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return NULL; /* cannot happen; rows wait */
        char drain[64];
        while (read(s->wake[0], drain, sizeof drain) > 0)
            continue;
        pthread_mutex_lock(&s->mu);
        kp_sweep_catch_up(s, &view, w->progress);
        int finished = s->finished;
        pthread_mutex_unlock(&s->mu);
        /* Finished first: a signal that comes with the last point finds everything measured;
         * it is printed in full by the caller (which still ends with 128 + the signal). */
        if (finished) return NULL;
        struct signalfd_siginfo si;
        if (read(w->signal_fd, &si, sizeof si) == (ssize_t)sizeof si)
            kp_sweep_interrupted(s, &view, w->progress, (int)si.ssi_signo);
    }
}

/* The signals a sweep takes itself: SIGINT, SIGTERM and SIGHUP, less any ignored when kprof
 * started (nohup): those stay ignored. */
static void kp_sweep_signal_set(sigset_t *set)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaddset(set, sigs[i]);
    }
}

/* Keep a complete sweep in the history: its JSON, and the best point's numbers and samples
 * (the only point's when one size was measured). */
static void kp_sweep_record(const kp_sweep_run *s)
{
    if (!kp_record_enabled() || s->lowest < 0) return;
    const kp_sweep_point *p = &s->points[s->lowest];
    kp_str json = {0};
    kp_sweep_json(&json, s, 1, 0);
    kp_history_run h = {.git_dirty = -1};
    kp_strlcpy(h.kind, "sweep", sizeof h.kind);
    kp_strlcpy(h.kernel, s->info.kernel->name, sizeof h.kernel);
    kp_strlcpy(h.target, s->args->lab.target, sizeof h.target);
    kp_strlcpy(h.options, s->args->lab.options ? s->args->lab.options : "", sizeof h.options);
    kp_dims_text(p->run.launch.grid, p->run.launch.dims, h.grid, sizeof h.grid);
    kp_dims_text(p->run.launch.tg, p->run.launch.dims, h.tg, sizeof h.tg);
    kp_strlcpy(h.buffers, s->args->lab.buffers, sizeof h.buffers);
    h.median_ms = p->run.stats.median;
    h.min_ms = p->run.stats.min;
    h.nsamples = p->run.iters;
    if (json.failed)
        fprintf(stderr, "kprof: warning: not recorded in the history: out of memory\n");
    else
        kp_record_result(&h, &s->info.device, s->info.source_path, s->lowest_samples,
                         (size_t)p->run.iters, json.data);
    kp_str_free(&json);
}

int kp_run_sweep(kp_run_args *a)
{
    kp_error err = {0};
    kp_output plot = {0};
    kp_progress *progress = NULL;
    int sfd = -1, sig_after = 0, masked = 0;
    sigset_t set, old_mask;
    kp_sweep_run *s = calloc(1, sizeof *s);
    kprof_status st = KPROF_OK;
    if (!s) return kp_cli_fail(&(kp_error){.status = KPROF_NOMEM, .message = "out of memory"});
    s->args = a;
    s->best = -1;
    s->your_tg = -1;
    s->current = -1;
    s->lowest = -1;
    s->iters = a->iters;
    s->warmup = a->warmup;
    s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    /* The plot's file is checked (and its temporary made) before the sweep runs. */
    const char *plot_inputs[] = {a->lab.target, NULL};
    if (a->plot)
        st = kp_output_open(&plot, a->plot, a->force ? KP_OUTPUT_FORCE : 0, plot_inputs, &err);
    if (st != KPROF_OK) goto done;

    /* Block the signals before any thread exists (the runtime's own threads, made later,
     * inherit the mask), and read them from a signalfd on the watcher thread. */
    kp_sweep_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old_mask);
    masked = 1;
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0 || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        st = kp_error_set(&err, KPROF_IO, "cannot set up the sweep: %s", strerror(errno));
        goto done;
    }
    progress = kp_progress_start_still();
    kp_progress_set(progress, "sweep: %s: compile, fill and bind buffers, check the sizes",
                    a->lab.target);
    /* The lab opens before the watcher and progress threads exist: it may fork the process
     * that runs the kernels (lab.h), which is best done with no other thread of ours about. */
    st = kp_lab_open(&a->lab, &s->lab, &err);
    if (st != KPROF_OK) goto done;
    kp_progress_animate(progress);
    kp_sweep_watch_args watch = {.sweep = s, .progress = progress, .signal_fd = sfd};
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, kp_sweep_watch, &watch) != 0) {
        st = kp_error_set(&err, KPROF_NOMEM, "cannot start the sweep's printing thread");
        goto done;
    }
    kp_sweep_work(s);
    pthread_join(watcher, NULL);
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

    kp_sweep_finish_marks(s);
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
    if (st == KPROF_OK && !s->stopped) kp_sweep_record(s);
done:
    kp_progress_stop(progress);
    kp_output_abort(&plot); /* after a commit, a no-op */
    if (st == KPROF_TIMEOUT) kp_run_abandon(&err);
    kp_lab_close(s->lab);
    /* A signal that came after the last point still ends kprof with 128 + it: what was measured
     * is out, in full. */
    if (sfd >= 0) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) sig_after = (int)si.ssi_signo;
        close(sfd);
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    pthread_mutex_destroy(&s->mu);
    free(s->lowest_samples);
    free(s->counters);
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
