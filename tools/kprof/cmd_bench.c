/*
 * cmd_bench.c — `kprof bench`: a kernel's time you can trust (noise-based stopping, hot and cold
 * caches, throttled samples discarded) across parameter axes, and an A/B comparison with its
 * confidence interval and a verdict (lab/bench.h does the measuring). Prints a table, or JSON
 * with every sample (written by lab/result_file.h); a kernel folder keeps the JSON as bench.json;
 * --plot draws an axis.
 */
#define _GNU_SOURCE
#include "core/expr.h"
#include "core/format.h"
#include "base/outfile.h"
#include "base/util.h"
#include "base/json.h"
#include "export/html.h"
#include "export/svg.h"
#include "export/text.h"
#include "lab/bench.h"
#include "lab/counters.h"
#include "lab/lab.h"
#include "lab/result_file.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/lab_options.h"
#include "tools/kprof/progress.h"
#include "tools/kprof/record.h"
#include "tools/kprof/run.h"
#include "tools/kprof/lab_trace_out.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_bench_run {
    kp_bench_session s; /* the points measured (lab/bench.h) */
    kp_bench_args *a;
    kp_bench_file *old; /* --compare */
    kp_progress *progress;
    double ceiling_gbs; /* --counters: the device's measured ceiling and FLOP peak (0: none) */
    double peak_gflops;
} kp_bench_run;

/* ---- the points (lab/bench.h measures them) ---------------------------------------------- */

static void kp_bench_step(void *user, const char *point, const char *what)
{
    kp_bench_run *r = user;
    kp_progress_set(r->progress, "bench: %s: %s", point, what);
}

static void kp_bench_progress(void *user, const kp_bench_side *sides, int nsides, double noise,
                              double elapsed)
{
    kp_bench_run *r = user;
    (void)nsides;
    kp_progress_set(r->progress, "bench: %s: %zu samples, noise ±%.2f%% (goal ±%.2f%%), %.1f s",
                    r->s.phase, sides[0].n, 100 * noise, 100 * r->a->plan.cfg.max_noise, elapsed);
}

/* ---- output ------------------------------------------------------------------------------- */

static const char *kp_bench_stop_words(kp_bench_stop s)
{
    switch (s) {
    case KP_BENCH_STOP_NOISE:
        return "the median's 95% interval is within --max-noise";
    case KP_BENCH_STOP_SETTLED:
        return "the noise stopped shrinking as samples grew (a timer quantum or a noise floor)";
    case KP_BENCH_STOP_DECIDED:
        return "the comparison's interval decided the verdict";
    case KP_BENCH_STOP_TIMEOUT:
        return "--timeout reached before the noise goal";
    case KP_BENCH_STOP_SAMPLES:
        return "the most samples kprof keeps";
    }
    return "";
}

static void kp_bench_print_comparison(const char *what, const kp_bench_outcome *o,
                                      const kp_bench_config *cfg, FILE *f)
{
    const char *B = kp_text_bold(f), *R = kp_text_reset(f);
    /* The band in words of its own: "SLOWER (SAME within ±1%)" read as a contradiction. */
    fprintf(f,
            "  %s %.4f  95%% CI [%.4f, %.4f]  →  %s%s%s (SAME would be an interval inside "
            "±%g%%)\n",
            what, o->ratio.value, o->ratio.lo, o->ratio.hi, B,
            kp_compare_verdict_name(o->final_verdict), R, 100 * cfg->threshold);
    if (o->have_cycles)
        fprintf(f, "    in cycles %.4f [%.4f, %.4f]: %s%s\n", o->cycles_ratio.value,
                o->cycles_ratio.lo, o->cycles_ratio.hi, kp_compare_verdict_name(o->cycles_verdict),
                o->final_verdict != o->verdict
                    ? " — the time differs but the cycles do not: the clock moved, not the kernel"
                    : "");
    if (o->final_verdict == KP_COMPARE_UNSURE) {
        if (o->judgement.reasons == KP_JUDGE_STRADDLES)
            fprintf(f,
                    "    UNSURE: the interval straddles ±%g%%: more samples would decide "
                    "(--timeout, --max-noise)\n",
                    100 * cfg->threshold);
        else
            fprintf(f, "    UNSURE: %s\n", o->judgement.reason);
    } else if (o->judgement.reason[0]) {
        fprintf(f, "    note: %s\n", o->judgement.reason);
    }
}

/* --counters under the table: a line per row and kernel (nothing when they could not be read:
 * stderr says why). */
static void kp_bench_print_counters(const kp_bench_run *r)
{
    if (!r->a->plan.counters || r->s.counters_off[0]) return;
    printf("counters (one replayed dispatch per row and kernel, after its samples; rates at its "
           "median):\n");
    for (int i = 0; i < r->s.nrows; i++) {
        const kp_bench_row *row = &r->s.rows[i];
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        for (int s = 0; s < row->nsides; s++) {
            const kp_counters *c = row->counters[s];
            if (!c) continue;
            kp_readings_input in;
            kp_readings rd;
            kp_bench_row_readings(row, &row->side[s], c, r->ceiling_gbs, r->peak_gflops,
                                  r->s.info.device.cache_bytes, &in, &rd);
            char line[2048];
            kp_run_counters_line(c, &in, &rd, line, sizeof line);
            printf("  %s%s%s%s: %s\n", vt, vt[0] ? " " : "", row->cold ? "cold" : "hot",
                   row->nsides == 2 ? (s ? " B" : " A") : "", line);
        }
    }
}

static void kp_bench_print(const kp_bench_run *r)
{
    const kp_bench_args *a = r->a;
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o), *Dm = kp_text_dim(o);
    printf("%s%s%s on %s %s(%s device %d, %s)%s\n", B, r->s.entry_name[0], R, r->s.info.device.name,
           Dm, r->s.info.device.backend, r->s.info.device.index, r->s.info.timer, R);
    if (r->s.info.replay) {
        int sides = a->plan.ntargets == 2 || a->plan.nentries == 2 ? 2 : 1;
        kp_run_replay_print(o, &r->s.info, 0);
        if (sides == 2 && r->s.replay_text[1][0])
            printf("  %-18s B (%s): %s\n", "", r->s.entry_name[1], r->s.replay_text[1]);
    }
    int has_flops = a->plan.flops_expr != NULL;
    int both = a->plan.hot && a->plan.cold;
    /* Header. */
    kp_str h = {0};
    for (int k = 0; k < a->plan.naxes; k++)
        kp_str_printf(&h, "%-10s ", a->plan.axes[k].name);
    if (both) kp_str_printf(&h, "%-5s ", "cache");
    if (r->s.rows[0].nsides == 2) kp_str_printf(&h, "%-3s ", "");
    kp_str_printf(&h, "%11s  %-23s %10s %10s %10s %10s %8s %7s %-8s %8s %9s", "median", "95% CI",
                  "min", "mean", "p90", "max", "samples", "noise", "stop", "clock", "GB/s");
    if (has_flops) kp_str_printf(&h, " %9s", "GFLOP/s");
    printf("%s%s%s\n", Dm, h.data ? h.data : "", R);
    kp_str_free(&h);
    for (int i = 0; i < r->s.nrows; i++) {
        const kp_bench_row *row = &r->s.rows[i];
        for (int s = 0; s < row->nsides; s++) {
            const kp_bench_side *sd = &row->side[s];
            kp_str l = {0};
            for (int k = 0; k < row->vars.n; k++)
                kp_str_printf(&l, "%-10s ", s == 0 ? row->vars.v[k].text : "");
            if (both) kp_str_printf(&l, "%-5s ", s == 0 ? (row->cold ? "cold" : "hot") : "");
            if (row->nsides == 2) kp_str_printf(&l, "%-3s ", s ? "B" : "A");
            /* Times in the unit that keeps their digits (726 ns, 1.235 ms). */
            char ci[96], lo[32], hi[32], med[64], mn[64], mean[64], p90[64], mx[64], clock[32];
            snprintf(ci, sizeof ci, "[%s, %s]", kp_format_ms(sd->median.lo, lo, sizeof lo),
                     kp_format_ms(sd->median.hi, hi, sizeof hi));
            int ci_chars = 0;
            for (const char *c = ci; *c; c++)
                ci_chars += ((unsigned char)*c & 0xC0) != 0x80;
            if (sd->clock_mhz > 0)
                snprintf(clock, sizeof clock, "%.0f MHz", sd->clock_mhz);
            else
                snprintf(clock, sizeof clock, "-");
            char samples[32];
            snprintf(samples, sizeof samples, "%zu", sd->n);
            kp_str_printf(&l, "%s%s%s  %s%*s %s %s %s %s %8s %6.2f%% %-8s %8s %9.1f", B,
                          kp_format_ms_cell(sd->median.value, 11, med, sizeof med), R, ci,
                          ci_chars < 23 ? 23 - ci_chars : 0, "",
                          kp_format_ms_cell(sd->stats.min, 10, mn, sizeof mn),
                          kp_format_ms_cell(sd->stats.mean, 10, mean, sizeof mean),
                          kp_format_ms_cell(sd->stats.p90, 10, p90, sizeof p90),
                          kp_format_ms_cell(sd->stats.max, 10, mx, sizeof mx), samples,
                          100 * sd->noise, s == 0 ? kp_bench_stop_name(row->outcome.stop) : "",
                          clock, kp_bench_row_gbps(row, sd));
            if (has_flops) kp_str_printf(&l, " %9.1f", kp_bench_row_gflops(row, sd));
            printf("%s\n", l.data ? l.data : "");
            kp_str_free(&l);
        }
        for (int s = 0; s < row->nsides; s++) {
            const kp_bench_side *sd = &row->side[s];
            if (sd->nruns >= 2) {
                double lo = sd->run_median[0], hi = lo;
                for (int k = 1; k < sd->nruns; k++) {
                    if (sd->run_median[k] < lo) lo = sd->run_median[k];
                    if (sd->run_median[k] > hi) hi = sd->run_median[k];
                }
                char lo_text[32], hi_text[32];
                printf("  %s%d sessions: their medians %s to %s (%.2f%% apart); the "
                       "interval above is the pooled samples'\n",
                       row->nsides == 2 ? (s ? "B: " : "A: ") : "", sd->nruns,
                       kp_format_ms(lo, lo_text, sizeof lo_text),
                       kp_format_ms(hi, hi_text, sizeof hi_text),
                       lo > 0 ? 100 * (hi / lo - 1) : 0.0);
                continue;
            }
            /* A comparison's reasons say what of each side's shape matters to it. */
            if (row->nsides == 2) continue;
            unsigned u = kp_judge_unstable(&sd->shape, row->outcome.busy_cpus, KP_JUDGE_BUSY_LIMIT,
                                           a->plan.cfg.threshold);
            if (!u) continue;
            char words[400];
            kp_judge_shape_words(&sd->shape, u, row->outcome.busy_cpus, row->outcome.ncpus, "ms",
                                 words, sizeof words);
            printf("  %sthe run is not stable%s: %s\n", row->nsides == 2 ? (s ? "B: " : "A: ") : "",
                   u & ~(unsigned)KP_JUDGE_FEW ? "" : " yet", words);
        }
        if (row->nsides == 2) {
            char what[300];
            snprintf(what, sizeof what, "B/A (%s / %s)", r->s.entry_name[1], r->s.entry_name[0]);
            if (strcmp(r->s.source[0], r->s.source[1]) != 0) snprintf(what, sizeof what, "B/A");
            kp_bench_print_comparison(what, &row->outcome, &a->plan.cfg, o);
        }
        if (row->have_old)
            kp_bench_print_comparison("now / before", &row->old_outcome, &a->plan.cfg, o);
        if (row->slower_gate)
            printf("  %sslower by more than --fail-if-slower %g%%%s\n", B, 100 * a->fail_if_slower,
                   R);
    }
    /* Notes under the table. */
    int stops[5] = {0};
    for (int i = 0; i < r->s.nrows; i++)
        stops[r->s.rows[i].outcome.stop] = 1;
    printf("%sstop:", Dm);
    for (int s = 0; s < 5; s++)
        if (stops[s])
            printf(" %s = %s;", kp_bench_stop_name((kp_bench_stop)s),
                   kp_bench_stop_words((kp_bench_stop)s));
    printf(" goal ±%g%%, at least %d samples and %g s of device time%s\n",
           100 * a->plan.cfg.max_noise, a->plan.cfg.min_samples, a->plan.cfg.min_time_s, R);
    if (r->s.rows[0].nsides == 2)
        printf("%sA and B ran in turn, batch by batch; their i-th samples are pairs (drift "
               "cancels). A: %s:%s  B: %s:%s%s\n",
               Dm, r->s.source[0], r->s.entry_name[0], r->s.source[1], r->s.entry_name[1], R);
    const kp_bench_side *s0 = &r->s.rows[0].side[0];
    if (s0->clock_mhz <= 0 && s0->clock_note[0])
        printf("%sclock: not read (%s): throttled samples cannot be told%s\n", Dm, s0->clock_note,
               R);
    for (int i = 0; i < r->s.nrows; i++) {
        if (!r->s.rows[i].cold) continue;
        char cb[32], fl[32];
        printf("%scold: the device's cache (%s) emptied before every sample by a read of twice "
               "its size, %s each, not in the times%s\n",
               Dm, kp_format_bytes(r->s.info.device.cache_bytes, cb, sizeof cb),
               kp_format_ms(r->s.rows[i].side[0].flush_ms, fl, sizeof fl), R);
        break;
    }
    if (r->s.rows[0].bytes_assumed)
        printf("%sGB/s: every buffer element assumed touched once per dispatch (--bytes EXPR "
               "corrects it)%s\n",
               Dm, R);
    kp_bench_print_counters(r);
}

static void kp_bench_warnings(const kp_bench_run *r)
{
    for (int i = 0; i < r->s.nrows; i++)
        for (int s = 0; s < r->s.rows[i].nsides; s++) {
            const kp_bench_side *sd = &r->s.rows[i].side[s];
            if (!sd->throttled) continue;
            char reasons[160];
            kp_clock_reasons_text(sd->throttle_reasons, reasons, sizeof reasons);
            fprintf(stderr,
                    "kprof: warning: %zu of %zu samples discarded: the SM clock fell to %.0f MHz, "
                    "below %g%% of its default %.0f MHz%s%s%s\n",
                    sd->throttled, sd->taken, sd->min_clock_mhz,
                    100 * r->a->plan.cfg.throttle_fraction, sd->default_clock_mhz,
                    reasons[0] ? " (" : "", reasons, reasons[0] ? ")" : "");
        }
}

static kprof_status kp_bench_plot(const kp_bench_run *r, kp_output *out, kp_error *err)
{
    const kp_bench_args *a = r->a;
    int axis = 0;
    for (int i = 0; i < a->plan.naxes; i++)
        if (a->plan.axes[i].nvalues > 1) axis = i;
    int n = 0;
    kp_plot_point *pts = calloc((size_t)r->s.nrows * 2, sizeof *pts);
    if (!pts) return kp_error_nomem(err);
    /* One line: the first cache state and kernel at each value of the axis. */
    for (int i = 0; i < r->s.nrows; i++) {
        const kp_bench_row *row = &r->s.rows[i];
        if (row->cold != r->s.rows[0].cold) continue;
        const kp_bench_side *s = &row->side[0];
        kp_plot_point *p = &pts[n++];
        kp_strlcpy(p->label, row->vars.v[axis].text, sizeof p->label);
        p->occupancy = -1;
        if (a->plot_throughput == 0) {
            p->median_ms = s->median.value;
            p->min_ms = s->stats.min;
        } else {
            double scale = a->plot_throughput == 1 ? (double)row->bytes : row->flops;
            p->median_ms = s->median.value > 0 ? scale / (s->median.value * 1e6) : 0;
            p->min_ms = s->stats.min > 0 ? scale / (s->stats.min * 1e6) : 0;
        }
    }
    char title[512], xl[64];
    snprintf(title, sizeof title, "%s on %s (%s)", r->s.entry_name[0], r->s.info.device.name,
             r->s.rows[0].cold ? "cold" : "hot");
    snprintf(xl, sizeof xl, "%s", a->plan.axes[axis].name);
    kp_svg_labels labels = {
        xl,
        a->plot_throughput == 0   ? (r->s.info.device.is_gpu ? "GPU time per dispatch (ms)"
                                                             : "device time per dispatch (ms)")
        : a->plot_throughput == 1 ? "GB/s"
                                  : "GFLOP/s",
        a->plot_throughput ? "at the median" : "median", a->plot_throughput ? "at the min" : "min"};
    char *svg = n ? kp_svg_plot(title, &labels, pts, n) : NULL;
    free(pts);
    if (!svg) return kp_error_set(err, KPROF_NOMEM, "no points to plot, or out of memory");
    kprof_status st = kp_output_write(out, svg, strlen(svg), err);
    free(svg);
    if (st == KPROF_OK) st = kp_output_commit(out, err);
    return st;
}

/* Keep the invocation in the history, once: its JSON, and the first point's first kernel as
 * the main measurement (its geometry, options, numbers and samples). */
static void kp_bench_record(const kp_bench_run *r, const char *json)
{
    const kp_bench_row *row = &r->s.rows[0];
    const kp_bench_side *sd = &row->side[0];
    kp_history_run h = {.git_dirty = -1};
    kp_strlcpy(h.kind, "bench", sizeof h.kind);
    kp_strlcpy(h.kernel, r->s.entry_name[0], sizeof h.kernel);
    kp_strlcpy(h.target, r->a->plan.targets[0], sizeof h.target);
    kp_strlcpy(h.options, r->s.first_options, sizeof h.options);
    kp_dims_text(row->launch.grid, row->launch.dims, h.grid, sizeof h.grid);
    kp_dims_text(row->launch.tg, row->launch.dims, h.tg, sizeof h.tg);
    kp_strlcpy(h.buffers, r->s.first_buffers, sizeof h.buffers);
    h.median_ms = sd->median.value;
    h.min_ms = sd->stats.min;
    h.nsamples = (int64_t)sd->n;
    kp_record_result(&h, &r->s.info.device, r->s.source[0], sd->ms, sd->n, json);
}

int kp_cmd_bench(int argc, char **argv)
{
    kp_bench_args *a = calloc(1, sizeof *a);
    kp_bench_run r = {0};
    if (!a) return kp_cli_nomem();
    int rc = kp_bench_parse(argc, argv, a);
    if (rc != 0) {
        kp_str_free(&a->options);
        free(a);
        return rc;
    }
    r.a = a;
    kp_error err = {0};
    kprof_status st = KPROF_OK;
    kp_output plot = {0}, html = {0};
    kp_lab_trace_out trace;
    memset(&trace, 0, sizeof trace);
    const char *inputs[] = {a->plan.targets[0], a->plan.ntargets > 1 ? a->plan.targets[1] : NULL,
                            NULL};
    int npoints = 1;
    for (int i = 0; i < a->plan.naxes; i++) {
        npoints *= a->plan.axes[i].nvalues;
        if (npoints > KP_BENCH_MAX_POINTS) {
            rc = kp_cli_usage_error("bench", "the axes make more than %d points",
                                    KP_BENCH_MAX_POINTS);
            goto out;
        }
    }
    st = kp_bench_check_points(&a->plan, npoints, &err);
    if (st != KPROF_OK) goto done;
    if (a->compare_file) {
        st = kp_bench_file_read(a->compare_file, &r.old, &err);
        if (st != KPROF_OK) goto done;
    }
    if (a->plot) {
        st = kp_output_open(&plot, a->plot, a->force ? KP_OUTPUT_FORCE : 0, inputs, &err);
        if (st != KPROF_OK) goto done;
    }
    if (a->html) {
        st = kp_output_open(&html, a->html, a->force ? KP_OUTPUT_FORCE : 0, inputs, &err);
        if (st != KPROF_OK) goto done;
    }
    if (a->trace) { /* every session's dispatches, the warm-ups too (lab/lab.h) */
        st = kp_lab_trace_out_open(&trace, a->trace, a->force, inputs, 4096, &err);
        if (st != KPROF_OK) goto done;
        a->plan.log = &trace.log;
    }
    r.s.rows = calloc((size_t)npoints * 2, sizeof *r.s.rows);
    if (!r.s.rows) {
        st = kp_error_nomem(&err);
        goto done;
    }
    r.progress = kp_progress_start_still();
    r.s.plan = &a->plan;
    r.s.step = kp_bench_step;
    r.s.progress = kp_bench_progress;
    r.s.user = &r;
    for (int p = 0; p < npoints && st == KPROF_OK; p++) {
        st = kp_bench_point(&r.s, p, &err);
        if (r.s.wedged) {
            kp_progress_stop(r.progress);
            r.progress = NULL;
            kp_run_abandon(&err);
        }
        /* The ceiling and FLOP peak the counters are read against, once the device is known. */
        if (st == KPROF_OK && p == 0 && a->plan.counters) {
            kp_ceiling ceiling;
            if (kp_cli_ceiling(&r.s.info.device, &ceiling) == 0) {
                r.ceiling_gbs = ceiling.copy_gbs;
                r.peak_gflops = ceiling.fma_gflops;
            }
        }
    }
    kp_progress_stop(r.progress);
    r.progress = NULL;
    if (st != KPROF_OK) goto done;
    if (r.old) {
        int matched;
        st = kp_bench_compare_file(&r.s, r.old, a->compare_file, a->fail_if_slower >= 0, stderr,
                                   &matched, &err);
        if (st != KPROF_OK) goto done;
    }
    kp_bench_gate(r.s.rows, r.s.nrows, a->fail_if_slower);
    if (r.s.info.warning[0]) fprintf(stderr, "kprof: warning: %s\n", r.s.info.warning);
    if (r.s.counters_off[0]) fprintf(stderr, "kprof: counters: %s\n", r.s.counters_off);
    kp_bench_warnings(&r);
    kp_str js = {0};
    kp_bench_result_meta meta = {.compare_file = a->compare_file,
                                 .fail_if_slower = a->fail_if_slower,
                                 .ceiling_gbs = r.ceiling_gbs,
                                 .peak_gflops = r.peak_gflops};
    st = kp_bench_result_write(&js, &r.s, &meta, &err);
    if (st == KPROF_OK && a->trace) st = kp_lab_trace_out_commit(&trace, &r.s.info.device, &err);
    if (st != KPROF_OK) {
        kp_str_free(&js);
        goto done;
    }
    if (a->json)
        fputs(js.data, stdout);
    else
        kp_bench_print(&r);
    if (r.s.kernel_dir[0]) {
        char path[4200];
        snprintf(path, sizeof path, "%s/bench.json", r.s.kernel_dir);
        /* --compare's file was read before anything ran: replacing it is fine. */
        const char *in[] = {r.s.info.source_path, NULL};
        st = kp_output_write_file(path, KP_OUTPUT_FORCE, in, js.data, js.len, &err);
        if (st == KPROF_OK && !a->json) printf("  kept in %s\n", path);
    }
    if (st == KPROF_OK && a->plot) {
        st = kp_bench_plot(&r, &plot, &err);
        if (st == KPROF_OK && !a->json) printf("  plot: %s\n", a->plot);
    }
    if (st == KPROF_OK && a->html) {
        char title[9000];
        if (a->plan.ntargets > 1)
            snprintf(title, sizeof title, "kprof bench %s %s", a->plan.targets[0],
                     a->plan.targets[1]);
        else
            snprintf(title, sizeof title, "kprof bench %s", a->plan.targets[0]);
        st = kp_html_json_page(&html, "bench", title, js.data, js.len, &err);
        if (st == KPROF_OK && !a->json) printf("  page: %s\n", a->html);
    }
    if (st == KPROF_OK) kp_bench_record(&r, js.data);
    kp_str_free(&js);
done:
    kp_progress_stop(r.progress);
    kp_output_abort(&plot);
    kp_output_abort(&html);
    kp_lab_trace_out_abort(&trace);
    if (st != KPROF_OK) {
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
    } else {
        rc = 0;
        for (int i = 0; i < r.s.nrows; i++)
            if (r.s.rows[i].slower_gate) rc = kprof_status_exit_code(KPROF_REGRESSION);
    }
out:
    for (int i = 0; i < r.s.nrows; i++) {
        for (int s = 0; s < 2; s++) {
            kp_bench_side_free(&r.s.rows[i].side[s]);
            free(r.s.rows[i].counters[s]);
        }
        kp_bench_side_free(&r.s.rows[i].old);
    }
    free(r.s.rows);
    kp_bench_file_free(r.old);
    kp_str_free(&a->options);
    free(a);
    return rc;
}
