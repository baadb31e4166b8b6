/*
 * cmd_diff.c — `kprof diff A B`: what changed between two runs, and is it real? Parses the
 * options, calls analysis/diff.h (which computes every row, point and verdict, and writes the
 * JSON) and prints the text from those numbers only (STYLE.md: analysis first, prose after).
 *
 * Two traces (*.kprof): per kernel launch shape, copy and fill, per host API call and per NVTX
 * range — or by name alone (--by name), or by call path (--by path) — with their deltas and
 * ratios, the largest change of total time first, and each trace's verdict. Device rows with
 * enough instances are judged by kprof's comparison engine (--min-effect-us, --min-share);
 * host calls and ranges are listed, not judged, unless --judge-host.
 *
 * Two results: two bench.json files point by point, or two runs of kprof's history (@0 the
 * newest, @-1 the one before, or an id), each compared as `kprof bench --compare` does. Results
 * of different kernels (entry names) are refused unless --force.
 */
#include "analysis/diff.h"
#include "base/outfile.h"
#include "base/util.h"
#include "core/format.h"
#include "core/judge.h"
#include "export/html.h"
#include "export/text.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_diff_args {
    const char *in[2];
    kp_diff_input kind[2];
    kp_diff_config cfg;
    int by_given, json;
    int force;        /* --force: compare results of different kernels; replace --html's OUT */
    const char *html; /* --html OUT: the page instead of the text (export/html.h) */
    int min_given;    /* --min-effect-us or --min-share was given */
    size_t top;       /* text: rows shown per table (0: all) */
} kp_diff_args;

/* ---- two traces: text ------------------------------------------------------------------ */

static const char *kp_diff_duration(double ns, char *buf, size_t n)
{
    return kp_format_duration(ns / 1e9, buf, n);
}

/* Right-align text in `width` columns (a UTF-8 character is one column: "µs"). */
static void kp_diff_cell(const char *text, int width)
{
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        cols += (*p & 0xC0) != 0x80;
    for (; cols < width; cols++)
        putchar(' ');
    fputs(text, stdout);
}

static const char *kp_diff_delta(int64_t ns, char *buf, size_t n)
{
    char d[24];
    if (ns == 0) return snprintf(buf, n, "0"), buf;
    kp_format_duration(fabs((double)ns) / 1e9, d, sizeof d);
    snprintf(buf, n, "%s%s", ns > 0 ? "+" : "-", d);
    return buf;
}

static const char *kp_diff_status_colour(kp_diff_status s, FILE *f)
{
    switch (s) {
    case KP_DIFF_SLOWER:
        return kp_text_red(f);
    case KP_DIFF_UNSURE:
        return kp_text_yellow(f);
    case KP_DIFF_FASTER:
    case KP_DIFF_ONLY_A:
    case KP_DIFF_ONLY_B:
        return kp_text_bold(f);
    case KP_DIFF_TOO_FEW:
    case KP_DIFF_NO_VERDICT:
    case KP_DIFF_SMALL:
    case KP_DIFF_NOT_JUDGED:
        return kp_text_dim(f);
    default:
        return "";
    }
}

static void kp_diff_print_table(const kp_diff_traces *d, int table, const kp_diff_args *args)
{
    static const char *const titles[KP_DIFF_TABLES] = {"Device: kernels, copies and fills",
                                                       "Host API calls", "NVTX ranges and scopes"};
    FILE *o = stdout;
    size_t shown = 0, total = 0;
    for (size_t r = 0; r < d->nrows; r++)
        total += d->rows[r].table == table;
    printf("\n%s%s%s", kp_text_bold(o), titles[table], kp_text_reset(o));
    if (table == KP_DIFF_HOST && !args->cfg.raw) printf(" (polling and query calls hidden; --raw)");
    if (table != KP_DIFF_DEVICE && !args->cfg.judge_host)
        printf(" — not judged: host-side times vary between processes (--judge-host)");
    printf("\n");
    if (!total) {
        printf("  (none in either trace)\n");
        return;
    }
    printf("  ");
    kp_diff_cell("Δ Total", 10);
    printf("  ");
    kp_diff_cell("Total A", 10);
    printf("  ");
    kp_diff_cell("Total B", 10);
    printf("  %8s  %8s  ", "Calls A", "Calls B");
    kp_diff_cell("Median A", 10);
    printf("  ");
    kp_diff_cell("Median B", 10);
    printf("  %-24s  %-13s  Name\n", "B/A median [95% CI]", "Verdict");
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->table != table) continue;
        if (args->top && shown == args->top) {
            printf("  … %zu more row%s (--json lists them all)\n", total - shown,
                   total - shown == 1 ? "" : "s");
            break;
        }
        shown++;
        char b1[40], b2[32], b3[32], b4[32], b5[32], ratio[64] = "-";
        printf("  ");
        kp_diff_cell(kp_diff_delta(row->delta_ns, b1, sizeof b1), 10);
        printf("  ");
        kp_diff_cell(row->a ? kp_diff_duration((double)row->a->total_ns, b2, sizeof b2) : "-", 10);
        printf("  ");
        kp_diff_cell(row->b ? kp_diff_duration((double)row->b->total_ns, b3, sizeof b3) : "-", 10);
        char ca[24] = "-", cb[24] = "-";
        if (row->a) snprintf(ca, sizeof ca, "%zu", row->a->n);
        if (row->b) snprintf(cb, sizeof cb, "%zu", row->b->n);
        printf("  %8s  %8s  ", ca, cb);
        kp_diff_cell(row->a ? kp_diff_duration(kp_diff_median_ns(row->a), b4, sizeof b4) : "-", 10);
        printf("  ");
        kp_diff_cell(row->b ? kp_diff_duration(kp_diff_median_ns(row->b), b5, sizeof b5) : "-", 10);
        if (kp_diff_status_compared(row->status))
            snprintf(ratio, sizeof ratio, "%.3f [%.3f, %.3f]", row->ratio.value, row->ratio.lo,
                     row->ratio.hi);
        else if (row->a && row->b && kp_diff_median_ns(row->a) > 0)
            snprintf(ratio, sizeof ratio, "%.3f",
                     kp_diff_median_ns(row->b) / kp_diff_median_ns(row->a));
        const char *colour = kp_diff_status_colour(row->status, o);
        printf("  %-24s  %s%-13s%s  %s%s\n", ratio, colour, kp_diff_status_text[row->status],
               *colour ? kp_text_reset(o) : "", row->name,
               row->kind == KP_EVENT_MEMCPY   ? " (copy)"
               : row->kind == KP_EVENT_MEMSET ? " (fill)"
                                              : "");
    }
    /* Why the rows shown got no FASTER or SLOWER: a line each under the table. */
    shown = 0;
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->table != table) continue;
        if (args->top && shown++ == args->top) break;
        const char *reason = kp_diff_row_reason(row);
        if (reason[0])
            printf("  %s%s: %s%s\n", kp_text_dim(o), row->name, reason, kp_text_reset(o));
    }
}

static void kp_diff_print_trace_header(const char *label, const kp_diff_trace *t)
{
    char wall[32];
    const kp_trace_meta *m = kp_event_source_meta(t->src);
    printf(
        "%s: %s — wall %s, %llu events", label, t->path,
        kp_format_duration((double)kp_ns_diff(t->v.end_ns, t->v.start_ns) / 1e9, wall, sizeof wall),
        (unsigned long long)t->events);
    if (m->command[0]) printf(", command: %s", m->command);
    printf("\n");
    char note[160];
    if (t->ends_before_start)
        printf("   Note: %s\n",
               kp_format_ends_before_start(t->ends_before_start, note, sizeof note));
}

/* "Verdict over the wall: A host-bound, B host-bound (unchanged)", and the sentences where it
 * changed. */
static void kp_diff_print_window(const char *window, const kp_diff_trace *t,
                                 const kp_verdict_input *in[2], const kp_verdict *v[2])
{
    FILE *o = stdout;
    const char *ka = in[0] ? kp_verdict_name(v[0]->kind) : "none (no device work)";
    const char *kb = in[1] ? kp_verdict_name(v[1]->kind) : "none (no device work)";
    int changed = (in[0] == NULL) != (in[1] == NULL) || (in[0] && v[0]->kind != v[1]->kind);
    printf("Verdict over %s: A %s, B %s — %s%s%s\n", window, ka, kb, changed ? kp_text_bold(o) : "",
           changed ? "changed" : "unchanged", changed ? kp_text_reset(o) : "");
    if (!changed) return;
    for (int s = 0; s < 2; s++) {
        if (!in[s]) continue;
        char sentence[2048];
        kp_verdict_describe(in[s], v[s], window, t[s].v.start_ns, sentence, sizeof sentence);
        printf("  %s → %s\n", s ? "B" : "A", sentence);
    }
}

/* The closing line of either diff: how many rows or points have each status (instances: a
 * trace diff, whose rows are counted in instances). */
static void kp_diff_print_summary(const size_t c[KP_DIFF_STATUS_COUNT], int instances)
{
    FILE *o = stdout;
    size_t changes = kp_diff_changes(c);
    printf("\n%s%zu difference%s%s: %zu slower, %zu faster, %zu only in A, %zu only in B; %zu "
           "unsure, %zu the same, %zu with n too small",
           kp_text_bold(o), changes, changes == 1 ? "" : "s", kp_text_reset(o), c[KP_DIFF_SLOWER],
           c[KP_DIFF_FASTER], c[KP_DIFF_ONLY_A], c[KP_DIFF_ONLY_B], c[KP_DIFF_UNSURE],
           c[KP_DIFF_SAME], c[KP_DIFF_TOO_FEW]);
    if (instances) printf(" (< %d instances in A or B)", KP_DIFF_MIN_INSTANCES);
    if (c[KP_DIFF_SMALL]) printf(", %zu under the minimum effect", c[KP_DIFF_SMALL]);
    if (c[KP_DIFF_NO_VERDICT]) printf(", %zu with a median of 0", c[KP_DIFF_NO_VERDICT]);
    if (c[KP_DIFF_NOT_JUDGED])
        printf("; %zu not judged (host calls and ranges: --judge-host)", c[KP_DIFF_NOT_JUDGED]);
    printf("\n");
}

static void kp_diff_print_traces(const kp_diff_traces *d, const kp_diff_args *args)
{
    FILE *o = stdout;
    kp_diff_print_trace_header("A", &d->t[0]);
    kp_diff_print_trace_header("B", &d->t[1]);
    char minimum[32];
    printf("By %s, the largest change of total time first. A verdict where A and B each have %d "
           "instances or more, from kprof's comparison engine: the 95%% interval of B/A of their "
           "medians (a block bootstrap over the instances in the order they ran) inside ±%g%% is "
           "the same, clear of it by %g%% more faster or slower (two traces are one run a "
           "side), else unsure, with the reason; a change under %s per instance (median) or under "
           "%g%% "
           "of the device time (total) is under the minimum effect: neither faster nor slower.\n",
           args->cfg.by == KP_DIFF_BY_SHAPE ? "kernel name and launch shape (host calls and ranges "
                                              "by name)"
                                            : kp_diff_by_name[args->cfg.by],
           KP_DIFF_MIN_INSTANCES, 100 * args->cfg.threshold, 100 * args->cfg.run_allowance,
           kp_diff_duration(args->cfg.min_effect_ns, minimum, sizeof minimum),
           100 * args->cfg.min_share);
    for (int table = 0; table < KP_DIFF_TABLES; table++)
        kp_diff_print_table(d, table, args);
    printf("\n");
    const kp_verdict_input *in[2] = {&d->t[0].v.wall_in, &d->t[1].v.wall_in};
    const kp_verdict *v[2] = {&d->t[0].v.wall, &d->t[1].v.wall};
    kp_diff_print_window("the wall", d->t, in, v);
    for (int s = 0; s < 2; s++) {
        in[s] = d->t[s].v.has_active ? &d->t[s].v.active_in : NULL;
        v[s] = &d->t[s].v.active;
    }
    kp_diff_print_window("the active window", d->t, in, v);
    kp_diff_print_summary(d->counts, 1);
    for (size_t r = 0; r < d->nrows; r++) {
        const kp_diff_row *row = &d->rows[r];
        if (row->gate)
            printf("%s%s is slower by more than --fail-if-slower %g%%: B/A %.3f [%.3f, %.3f]%s\n",
                   kp_text_red(o), row->name, 100 * args->cfg.fail_if_slower, row->ratio.value,
                   row->ratio.lo, row->ratio.hi, kp_text_reset(o));
    }
}

/* Print the JSON a diff wrote into s, and free it. */
static kprof_status kp_diff_put(kp_str *s, kp_error *err)
{
    kprof_status st = KPROF_OK;
    if (s->failed)
        st = kp_error_nomem(err);
    else
        fputs(s->data, stdout);
    kp_str_free(s);
    return st;
}

/* --html: the diff's JSON (s, freed here) as the page, to out (opened before the diff ran). */
static kprof_status kp_diff_page(kp_output *out, const kp_diff_args *args, kp_str *s, kp_error *err)
{
    char title[9000];
    snprintf(title, sizeof title, "kprof diff %s %s", args->in[0], args->in[1]);
    kprof_status st = s->failed ? kp_error_nomem(err)
                                : kp_html_json_page(out, "diff", title, s->data, s->len, err);
    kp_str_free(s);
    return st;
}

/* --html's output, checked and opened before the work: the inputs may not be it. */
static kprof_status kp_diff_page_open(kp_output *out, const kp_diff_args *args, kp_error *err)
{
    if (!args->html) return KPROF_OK;
    const char *inputs[] = {args->in[0], args->in[1], NULL};
    return kp_output_open(out, args->html, args->force ? KP_OUTPUT_FORCE : 0, inputs, err);
}

/* The exit code of a diff: its error's, or 5 when the gate failed. */
static int kp_diff_exit(kprof_status st, kp_error *err, int gate)
{
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(err);
        kp_error_clear(err);
        return rc;
    }
    return gate ? kprof_status_exit_code(KPROF_REGRESSION) : 0;
}

static int kp_diff_two_traces(const kp_diff_args *args)
{
    kp_diff_traces d;
    memset(&d, 0, sizeof d);
    kp_error err = {0};
    kp_output page = {0};
    kprof_status st = kp_diff_page_open(&page, args, &err);
    if (st != KPROF_OK) return kp_diff_exit(st, &err, 0);
    st = kp_diff_traces_load(&d, args->in, &args->cfg, &err);
    if (st == KPROF_OK && args->html) {
        kp_str s = {0};
        kp_diff_traces_json(&s, &d, &args->cfg);
        st = kp_diff_page(&page, args, &s, &err);
    } else if (st == KPROF_OK && args->json) {
        kp_str s = {0};
        kp_diff_traces_json(&s, &d, &args->cfg);
        st = kp_diff_put(&s, &err);
    } else if (st == KPROF_OK) {
        kp_diff_print_traces(&d, args);
    }
    int gate = d.gate;
    kp_diff_traces_free(&d);
    kp_output_abort(&page); /* after a commit, a no-op */
    return kp_diff_exit(st, &err, gate);
}

/* ---- two results: text ------------------------------------------------------------------- */

/* printf on stdout whose %s arguments are escaped (kp_str_vprintf_escaped): the kernel, device,
 * command and points of result files and the store are names from files, and no text output
 * prints them raw. No colour codes among the arguments: they would be escaped too. */
static void kp_diff_printf_escaped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kp_diff_printf_escaped(const char *fmt, ...)
{
    kp_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(&s, fmt, ap);
    va_end(ap);
    fputs(s.data ? s.data : "", stdout);
    kp_str_free(&s);
}

static void kp_diff_print_result_header(const char *label, const kp_diff_result *r)
{
    if (r->history)
        kp_diff_printf_escaped("%s: %s — history run %lld (%s of %s on %s, %s%s), %zu samples\n",
                               label, r->arg, (long long)r->run.id, r->run.kind, r->run.kernel,
                               r->run.device, r->run.git_commit[0] ? "commit " : "no commit",
                               r->run.git_commit[0] ? r->run.git_commit : "", r->nsamples);
    else
        kp_diff_printf_escaped("%s: %s — kprof bench on %s, %d point%s\n", label, r->arg,
                               r->file->device[0] ? r->file->device : "an unnamed device",
                               r->file->npoints, r->file->npoints == 1 ? "" : "s");
}

static void kp_diff_print_results(const kp_diff_results *d, const kp_diff_args *args)
{
    FILE *o = stdout;
    kp_diff_print_result_header("A", &d->r[0]);
    kp_diff_print_result_header("B", &d->r[1]);
    if (d->different[0]) {
        fputs(kp_text_bold(o), stdout);
        kp_diff_printf_escaped("%s: different kernels, compared anyway (--force)", d->different);
        printf("%s\n", kp_text_reset(o));
    }
    if (d->r[0].history) {
        kp_diff_run_field f[KP_DIFF_RUN_FIELDS];
        int n = kp_diff_run_fields(&d->r[0].run, &d->r[1].run, f);
        if (!n)
            printf("The runs differ in nothing kprof records of them (device, kernel, "
                   "source, options, geometry, commit).\n");
        for (int i = 0; i < n; i++)
            kp_diff_printf_escaped("  %s: %s → %s\n", f[i].key, f[i].a[0] ? f[i].a : "\"\"",
                                   f[i].b[0] ? f[i].b : "\"\"");
    }
    printf("Point by point, as kprof bench --compare judges: B/A of the medians with its 95%% "
           "interval (a block bootstrap, each side's rounds as its blocks at least), SAME within "
           "±%g%%; FASTER or SLOWER clear of the band by %g%% more (one run a side); a verdict "
           "needs %d samples or more on each side.\n\n",
           100 * args->cfg.threshold, 100 * KP_JUDGE_RUN_ALLOWANCE, KP_DIFF_MIN_INSTANCES);
    int has_cache = 0;
    size_t wpoint = 5;
    for (int i = 0; i < d->npoints; i++) {
        has_cache |= d->points[i].cold;
        kp_str esc = {0};
        kp_str_append_escaped(&esc, d->points[i].point, strlen(d->points[i].point));
        size_t w = esc.len;
        kp_str_free(&esc);
        if (w > wpoint) wpoint = w;
    }
    if (wpoint > 40) wpoint = 40;
    printf("  %-*s  %s%12s  %12s  %8s  %8s  %-24s  %s\n", (int)wpoint, "Point",
           has_cache ? "Cache  " : "", "A median ms", "B median ms", "A n", "B n",
           "B/A median [95% CI]", "Verdict");
    for (int i = 0; i < d->npoints; i++) {
        const kp_diff_point *p = &d->points[i];
        char ma[32] = "-", mb[32] = "-", na[24] = "-", nb[24] = "-", ratio[64] = "-";
        if (p->has[0]) {
            snprintf(ma, sizeof ma, "%.5g", p->side[0].median.value);
            snprintf(na, sizeof na, "%zu", p->side[0].n);
        }
        if (p->has[1]) {
            snprintf(mb, sizeof mb, "%.5g", p->side[1].median.value);
            snprintf(nb, sizeof nb, "%zu", p->side[1].n);
        }
        if (p->status <= KP_DIFF_SAME)
            snprintf(ratio, sizeof ratio, "%.4f [%.4f, %.4f]", p->outcome.ratio.value,
                     p->outcome.ratio.lo, p->outcome.ratio.hi);
        const char *colour = kp_diff_status_colour(p->status, o);
        kp_diff_printf_escaped("  %-*s  ", (int)wpoint, p->point[0] ? p->point : "-");
        if (has_cache) printf("%-5s  ", p->cold ? "cold" : "hot");
        printf("%12s  %12s  %8s  %8s  %-24s  %s%s%s\n", ma, mb, na, nb, ratio, colour,
               kp_diff_status_text[p->status], *colour ? kp_text_reset(o) : "");
        if (p->status <= KP_DIFF_SAME && p->outcome.have_cycles)
            printf("  %-*s  in cycles %.4f [%.4f, %.4f]: %s%s\n", (int)wpoint, "",
                   p->outcome.cycles_ratio.value, p->outcome.cycles_ratio.lo,
                   p->outcome.cycles_ratio.hi, kp_compare_verdict_name(p->outcome.cycles_verdict),
                   p->outcome.final_verdict != p->outcome.verdict
                       ? " — the time differs but the cycles do not: the clock moved"
                       : "");
        if (p->status == KP_DIFF_UNSURE && p->outcome.judgement.reason[0])
            printf("  %-*s  %s%s%s\n", (int)wpoint, "", kp_text_dim(o), p->outcome.judgement.reason,
                   kp_text_reset(o));
        if (p->gate)
            printf("  %s%s is slower by more than --fail-if-slower %g%%%s\n", kp_text_red(o),
                   p->point[0] ? p->point : "the point", 100 * args->cfg.fail_if_slower,
                   kp_text_reset(o));
    }
    kp_diff_print_summary(d->counts, 0);
}

static int kp_diff_two_results(const kp_diff_args *args)
{
    kp_diff_results d;
    memset(&d, 0, sizeof d);
    kp_error err = {0};
    kp_output page = {0};
    kprof_status st = kp_diff_page_open(&page, args, &err);
    if (st != KPROF_OK) return kp_diff_exit(st, &err, 0);
    st = kp_diff_results_load(&d, args->in, args->kind[0] == KP_DIFF_HISTORY, &err);
    if (st == KPROF_OK) {
        const char *da = kp_diff_result_device(&d.r[0]), *db = kp_diff_result_device(&d.r[1]);
        if (strcmp(da, db) != 0)
            fprintf(stderr,
                    "kprof: warning: A was measured on %s, B on %s: a difference may be "
                    "the device's\n",
                    da[0] ? da : "an unnamed device", db[0] ? db : "an unnamed device");
        kp_diff_results_kernels(&d);
        if (d.different[0] && !args->force)
            st = kp_error_set(&err, KPROF_INVALID,
                              "%s: different kernels; --force compares them anyway", d.different);
    }
    if (st == KPROF_OK) st = kp_diff_results_compute(&d, &args->cfg, &err);
    if (st == KPROF_OK && args->html) {
        kp_str s = {0};
        kp_diff_results_json(&s, &d, &args->cfg);
        st = kp_diff_page(&page, args, &s, &err);
    } else if (st == KPROF_OK && args->json) {
        kp_str s = {0};
        kp_diff_results_json(&s, &d, &args->cfg);
        st = kp_diff_put(&s, &err);
    } else if (st == KPROF_OK) {
        kp_diff_print_results(&d, args);
    }
    int gate = d.gate;
    kp_diff_results_free(&d);
    kp_output_abort(&page);
    return kp_diff_exit(st, &err, gate);
}

/* ---- the command -------------------------------------------------------------------------- */

int kp_cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"by", required_argument, NULL, 'b'},
        {"threshold", required_argument, NULL, 'h'},
        {"fail-if-slower", required_argument, NULL, 'X'},
        {"json", no_argument, NULL, 'j'},
        {"raw", no_argument, NULL, 'r'},
        {"top", required_argument, NULL, 'n'},
        {"min-effect-us", required_argument, NULL, 'e'},
        {"min-share", required_argument, NULL, 's'},
        {"judge-host", no_argument, NULL, 'H'},
        {"run-allowance", required_argument, NULL, 'A'},
        {"force", no_argument, NULL, 'f'},
        {"html", required_argument, NULL, 'W'},
        {NULL, 0, NULL, 0},
    };
    kp_diff_args a;
    memset(&a, 0, sizeof a);
    kp_diff_config_default(&a.cfg);
    double x;
    int rc, c;
    uint64_t v;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': {
            int found = 0;
            for (int i = 0; i < 3; i++)
                if (strcmp(optarg, kp_diff_by_name[i]) == 0) {
                    a.cfg.by = (kp_diff_by)i;
                    found = 1;
                }
            if (!found)
                return kp_cli_usage_error("diff", "--by '%s': choose shape, name or path", optarg);
            a.by_given = 1;
            break;
        }
        case 'e':
            if (kp_cli_parse_double(optarg, &x, NULL) != KPROF_OK || !(x <= 1e9))
                return kp_cli_usage_error(
                    "diff", "--min-effect-us '%s': expected microseconds >= 0", optarg);
            a.cfg.min_effect_ns = x * 1e3;
            a.min_given = 1;
            break;
        case 's':
            if ((rc = kp_cli_parse_percent("diff", "--min-share", optarg, 0, 100,
                                           &a.cfg.min_share)) != 0)
                return rc;
            a.min_given = 1;
            break;
        case 'H':
            a.cfg.judge_host = 1;
            break;
        case 'A':
            if ((rc = kp_cli_parse_percent("diff", "--run-allowance", optarg, 0, 100,
                                           &a.cfg.run_allowance)) != 0)
                return rc;
            break;
        case 'f':
            a.force = 1;
            break;
        case 'h':
            if ((rc = kp_cli_parse_percent("diff", "--threshold", optarg, 0.01, 100,
                                           &a.cfg.threshold)) != 0)
                return rc;
            break;
        case 'X':
            if ((rc = kp_cli_parse_percent("diff", "--fail-if-slower", optarg, 0, 1000,
                                           &a.cfg.fail_if_slower)) != 0)
                return rc;
            break;
        case 'j':
            a.json = 1;
            break;
        case 'W':
            if (!*optarg) return kp_cli_usage_error("diff", "--html needs a file name");
            a.html = optarg;
            break;
        case 'r':
            a.cfg.raw = 1;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > UINT32_MAX)
                return kp_cli_usage_error("diff", "--top '%s': expected a whole number >= 1",
                                          optarg);
            a.top = (size_t)v;
            break;
        case ':':
            return kp_cli_usage_error("diff", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("diff", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return kp_cli_usage_error("diff",
                                  argc - optind < 2
                                      ? "give two traces, two bench.json files or two "
                                        "history runs (A B)"
                                      : "unexpected argument '%s' (diff compares two)",
                                  argc - optind > 2 ? argv[optind + 2] : "");
    kp_error err = {0};
    for (int s = 0; s < 2; s++) {
        a.in[s] = argv[optind + s];
        kprof_status st = kp_diff_input_of(a.in[s], &a.kind[s], &err);
        if (st != KPROF_OK) return kp_diff_exit(st, &err, 0);
    }
    int traces = (a.kind[0] == KP_DIFF_TRACE) + (a.kind[1] == KP_DIFF_TRACE);
    if (traces == 1)
        return kp_cli_usage_error("diff",
                                  "%s is %s and %s %s: kprof diff compares two traces, or two "
                                  "results (bench.json files or history runs)",
                                  a.in[0], kp_diff_input_name(a.kind[0]), a.in[1],
                                  kp_diff_input_name(a.kind[1]));
    if (!traces && (a.kind[0] == KP_DIFF_HISTORY) != (a.kind[1] == KP_DIFF_HISTORY))
        return kp_cli_usage_error("diff",
                                  "%s is %s and %s %s: compare a history run with a history run, "
                                  "a bench.json with a bench.json",
                                  a.in[0], kp_diff_input_name(a.kind[0]), a.in[1],
                                  kp_diff_input_name(a.kind[1]));
    if (!traces && (a.by_given || a.cfg.raw || a.top || a.cfg.judge_host || a.min_given))
        return kp_cli_usage_error("diff", "--by, --raw, --top, --judge-host, --min-effect-us and "
                                          "--min-share go with traces");
    if (a.html && a.json)
        return kp_cli_usage_error("diff", "--html or --json, not both (the page holds the JSON)");
    if (a.html && a.top)
        return kp_cli_usage_error("diff", "--top shortens the text's tables: the page has every "
                                          "row");
    if (traces && a.force && !a.html)
        return kp_cli_usage_error("diff", "--force goes with results (bench.json files or history "
                                          "runs): traces of different programs always compare");
    /* the tables print names; the JSON (and the page's) escapes its own way */
    a.cfg.escape_text = !a.json && !a.html;
    return traces ? kp_diff_two_traces(&a) : kp_diff_two_results(&a);
}
