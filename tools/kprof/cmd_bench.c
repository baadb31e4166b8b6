/*
 * cmd_bench.c — `kprof bench`: a kernel's time you can trust (noise-based stopping, hot and cold
 * caches, throttled samples discarded) across parameter axes, and an A/B comparison with its
 * confidence interval and a verdict (lab/bench.h does the measuring). Prints a table, or JSON
 * with every sample; a kernel folder keeps the JSON as bench.json; --plot draws an axis.
 */
#define _GNU_SOURCE
#include "core/expr.h"
#include "core/format.h"
#include "base/outfile.h"
#include "base/util.h"
#include "base/json.h"
#include "export/svg.h"
#include "export/text.h"
#include "lab/bench.h"
#include "lab/counters.h"
#include "lab/lab.h"
#include "store/store.h"
#include "tools/kprof/bench_file.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/lab_options.h"
#include "tools/kprof/progress.h"
#include "tools/kprof/record.h"
#include "tools/kprof/run.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_BENCH_MAX_AXES    8
#define KP_BENCH_MAX_VALUES  64
#define KP_BENCH_MAX_POINTS  4096
#define KP_BENCH_MAX_DEFINES 64

typedef struct kp_axis {
    char name[32];
    int nvalues;
    kp_var values[KP_BENCH_MAX_VALUES]; /* name unset; text and value */
} kp_axis;

typedef struct kp_bench_args {
    const char *targets[2];
    int ntargets;
    const char *entries[2];
    int nentries;
    const char *grid, *tg; /* texts, evaluated at each point */
    const char *buffers;
    const char *defines[KP_BENCH_MAX_DEFINES];
    int ndefines;
    kp_str options; /* -I and --options */
    const char *backend;
    int device;
    kp_launch launch; /* timeout, smem, timer */
    const char *bytes_expr, *flops_expr;
    kp_axis axes[KP_BENCH_MAX_AXES];
    int naxes;
    int hot, cold;
    kp_bench_config cfg;
    const char *compare_file;
    double fail_if_slower; /* fraction; < 0: not asked */
    int json;
    const char *plot;
    int plot_throughput;
    int force;
    int repeat;                 /* --repeat R: independent sessions per point (1) */
    int counters;               /* --counters: each row's kernels' hardware counters */
    kp_counters counters_asked; /* the raw names of --counters LIST */
} kp_bench_args;

/* One measured point: the axis values, the cache state, each kernel's samples, the comparison. */
typedef struct kp_bench_row {
    kp_vars vars;
    int cold;
    kp_launch launch;
    int nsides;
    kp_bench_side side[2];
    char label[2][160]; /* "A: demo.cu:demo_add" */
    kp_bench_outcome outcome;
    int have_old; /* --compare: the earlier run's samples of this point */
    kp_bench_side old;
    kp_bench_outcome old_outcome;
    uint64_t bytes;
    int bytes_assumed;
    uint64_t working_set; /* the buffers' total bytes (the counters' readings: fits the cache?) */
    double flops;         /* per dispatch; 0 when not given */
    int slower_gate;      /* --fail-if-slower: this point is slower by more than asked */
    kp_counters *counters[2]; /* --counters: each side's (heap), NULL when not asked */
} kp_bench_row;

typedef struct kp_bench_run {
    kp_bench_args *a;
    kp_lab_info info; /* of the first kernel of the first point */
    char entry_name[2][128];
    char source[2][4096];
    char kernel_dir[4096];
    int have_info;
    kp_bench_row *rows;
    int nrows;
    kp_bench_file *old; /* --compare */
    kp_progress *progress;
    const char *phase;
    char first_options[1024]; /* the first point's compiler options and SPEC, its axes */
    char first_buffers[1024]; /* substituted: what the history records */
    double ceiling_gbs; /* --counters: the device's measured ceiling and FLOP peak (0: none) */
    double peak_gflops;
    char counters_off[512]; /* why the counters cannot be read, once a row found it ("" else) */
} kp_bench_run;

/* ---- arguments ---------------------------------------------------------------------------- */

static int kp_bench_parse_axis(kp_bench_args *a, const char *text)
{
    if (a->naxes == KP_BENCH_MAX_AXES)
        return kp_cli_usage_error("bench", "at most %d --axis options", KP_BENCH_MAX_AXES);
    const char *eq = strchr(text, '=');
    kp_axis *ax = &a->axes[a->naxes];
    memset(ax, 0, sizeof *ax);
    if (!eq || eq == text || (size_t)(eq - text) >= sizeof ax->name)
        return kp_cli_usage_error("bench", "--axis '%s': expected NAME=V1,V2,... (N=1M,4M,16M)",
                                  text);
    memcpy(ax->name, text, (size_t)(eq - text));
    if (!kp_expr_is_name(ax->name))
        return kp_cli_usage_error("bench",
                                  "--axis '%s': '%s' is not a name (letters, digits "
                                  "and _, not starting with a digit)",
                                  text, ax->name);
    for (int i = 0; i < a->naxes; i++)
        if (strcmp(a->axes[i].name, ax->name) == 0)
            return kp_cli_usage_error("bench", "--axis %s is given twice", ax->name);
    if (strchr(ax->name, 'x'))
        return kp_cli_usage_error("bench",
                                  "--axis '%s': a name may not hold 'x', which separates "
                                  "the dimensions of --grid and --tg",
                                  ax->name);
    const char *p = eq + 1;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (ax->nvalues == KP_BENCH_MAX_VALUES)
            return kp_cli_usage_error("bench", "--axis %s: at most %d values", ax->name,
                                      KP_BENCH_MAX_VALUES);
        kp_var *v = &ax->values[ax->nvalues];
        if (len == 0 || len >= sizeof v->text)
            return kp_cli_usage_error("bench", "--axis '%s': an empty or too long value", text);
        memcpy(v->text, p, len);
        v->text[len] = '\0';
        memcpy(v->name, ax->name, sizeof v->name);
        char why[256];
        if (kp_expr_eval(v->text, NULL, &v->value, why, sizeof why) == 0) {
            v->numeric = 1;
        } else {
            /* A word ("f32", "float4") is a text value; anything else is a typing error. */
            for (const char *c = v->text; *c; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.'))
                    return kp_cli_usage_error("bench", "--axis %s value '%s': %s", ax->name,
                                              v->text, why);
            v->numeric = 0;
        }
        for (int i = 0; i < ax->nvalues; i++)
            if (strcmp(ax->values[i].text, v->text) == 0)
                return kp_cli_usage_error("bench", "--axis %s: value '%s' is given twice", ax->name,
                                          v->text);
        ax->nvalues++;
        if (!comma) break;
        p = comma + 1;
    }
    a->naxes++;
    return 0;
}

/* The options' loop: the shared ones into o (lab_options.h), bench's own into a. 0 or a usage
 * exit code. */
static int kp_bench_parse_options(int argc, char **argv, const struct option *longopts,
                                  kp_lab_cli *o, kp_bench_args *a)
{
    uint64_t v;
    double d;
    int rc, taken;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, KP_LAB_SHORTOPTS, longopts, NULL)) != -1) {
        if ((rc = kp_lab_cli_option(o, c, argc, argv, &taken)) != 0) return rc;
        if (taken) continue;
        switch (c) {
        case 'e':
            if (a->nentries == 2)
                return kp_cli_usage_error("bench", "--entry at most twice (A and B)");
            a->entries[a->nentries++] = optarg;
            break;
        case 'D':
            if (a->ndefines == KP_BENCH_MAX_DEFINES)
                return kp_cli_usage_error("bench", "at most %d -D options", KP_BENCH_MAX_DEFINES);
            a->defines[a->ndefines++] = optarg;
            break;
        case 'B':
            a->bytes_expr = optarg;
            break;
        case 'f':
            a->flops_expr = optarg;
            break;
        case 'a':
            if ((rc = kp_bench_parse_axis(a, optarg)) != 0) return rc;
            break;
        case 'C':
            if (strcmp(optarg, "hot") == 0)
                a->hot = 1;
            else if (strcmp(optarg, "cold") == 0)
                a->cold = 1;
            else if (strcmp(optarg, "both") == 0)
                a->hot = a->cold = 1;
            else
                return kp_cli_usage_error("bench", "--cache '%s': choose hot, cold or both",
                                          optarg);
            break;
        case 'O':
            a->cold = 1;
            break;
        case 'H':
            a->hot = 1;
            break;
        case 'N':
            if ((rc = kp_cli_parse_percent("bench", "--max-noise", optarg, 0.001, 100,
                                           &a->cfg.max_noise)) != 0)
                return rc;
            break;
        case 'm':
            if (kp_cli_parse_double(optarg, &d) != 0 || d > 3600)
                return kp_cli_usage_error("bench", "--min-time '%s': expected 0 to 3600 seconds",
                                          optarg);
            a->cfg.min_time_s = d;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 1000000)
                return kp_cli_usage_error("bench", "--min-samples '%s': expected 1 to 1000000",
                                          optarg);
            a->cfg.min_samples = (int)v;
            break;
        case 'T':
            if (kp_cli_parse_double(optarg, &d) != 0 || d <= 0 || d > 86400)
                return kp_cli_usage_error("bench", "--timeout '%s': expected seconds > 0", optarg);
            a->cfg.timeout_s = d;
            break;
        case 'R':
            if ((rc = kp_cli_parse_percent("bench", "--throttle", optarg, 0, 100,
                                           &a->cfg.throttle_fraction)) != 0)
                return rc;
            break;
        case 'h':
            if ((rc = kp_cli_parse_percent("bench", "--threshold", optarg, 0.01, 100,
                                           &a->cfg.threshold)) != 0)
                return rc;
            break;
        case 'x':
            a->compare_file = optarg;
            break;
        case 'X':
            if ((rc = kp_cli_parse_percent("bench", "--fail-if-slower", optarg, 0, 1000,
                                           &a->fail_if_slower)) != 0)
                return rc;
            break;
        case 'Y':
            if (strcmp(optarg, "time") == 0)
                a->plot_throughput = 0;
            else if (strcmp(optarg, "gbps") == 0)
                a->plot_throughput = 1;
            else if (strcmp(optarg, "gflops") == 0)
                a->plot_throughput = 2;
            else
                return kp_cli_usage_error("bench", "--plot-y '%s': choose time, gbps or gflops",
                                          optarg);
            break;
        case 'r':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > KP_BENCH_MAX_REPEAT)
                return kp_cli_usage_error("bench", "--repeat '%s': expected 1 to %d sessions",
                                          optarg, KP_BENCH_MAX_REPEAT);
            a->repeat = (int)v;
            break;
        }
    }
    return 0;
}

static int kp_bench_parse(int argc, char **argv, kp_bench_args *a)
{
    static const struct option longopts[] = {
        KP_LAB_LONGOPTS,
        {"entry", required_argument, NULL, 'e'},
        {"kernel-timeout", required_argument, NULL, KP_LAB_OPT_KERNEL_TIMEOUT},
        {"bytes", required_argument, NULL, 'B'},
        {"flops", required_argument, NULL, 'f'},
        {"axis", required_argument, NULL, 'a'},
        {"cache", required_argument, NULL, 'C'},
        {"cold", no_argument, NULL, 'O'},
        {"hot", no_argument, NULL, 'H'},
        {"max-noise", required_argument, NULL, 'N'},
        {"min-time", required_argument, NULL, 'm'},
        {"min-samples", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 'T'},
        {"throttle", required_argument, NULL, 'R'},
        {"threshold", required_argument, NULL, 'h'},
        {"compare", required_argument, NULL, 'x'},
        {"fail-if-slower", required_argument, NULL, 'X'},
        {"plot-y", required_argument, NULL, 'Y'},
        {"repeat", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->fail_if_slower = -1;
    a->repeat = 1;
    kp_bench_config_default(&a->cfg);
    kp_lab_cli o;
    kp_lab_cli_init(&o, "bench", "--kernel-timeout", 0);
    o.launch = &a->launch;
    o.warmup = &a->cfg.warmup;
    int rc = kp_bench_parse_options(argc, argv, longopts, &o, a);
    a->options = o.options; /* freed by the caller, whatever the outcome */
    a->grid = o.grid_text ? o.grid_text : "1048576";
    a->tg = o.tg_text ? o.tg_text : "256";
    a->buffers = o.buffers;
    a->backend = o.backend;
    a->device = o.device;
    a->json = o.json;
    a->plot = o.plot;
    a->force = o.force;
    a->counters = o.counters;
    a->counters_asked = o.counters_asked;
    if (rc != 0) return rc;
    for (; optind < argc; optind++) {
        if (a->ntargets == 2)
            return kp_cli_usage_error("bench",
                                      "unexpected argument '%s': give one kernel, or "
                                      "two to compare (A B)",
                                      argv[optind]);
        a->targets[a->ntargets++] = argv[optind];
    }
    if (a->ntargets == 0)
        return kp_lab_cli_no_kernel(&o, "a NAME made by `kprof isolate` or a FILE (two to "
                                        "compare them)");
    if ((rc = kp_lab_cli_need_buffers(&o, "f32:N,f32:N,u32=N with --axis N=1M,4M")) != 0) return rc;
    int sides = a->ntargets == 2 || a->nentries == 2 ? 2 : 1;
    if (sides == 2 && a->compare_file)
        return kp_cli_usage_error("bench", "--compare FILE compares with an earlier run: give "
                                           "one kernel with it, not two");
    if (a->fail_if_slower >= 0 && sides == 1 && !a->compare_file)
        return kp_cli_usage_error("bench", "--fail-if-slower needs a comparison: two kernels "
                                           "(A B, or --entry twice) or --compare FILE");
    if (!a->hot && !a->cold) a->hot = 1;
    if (a->plot) {
        if ((rc = kp_lab_cli_check_plot(&o)) != 0) return rc;
        int varying = 0;
        for (int i = 0; i < a->naxes; i++)
            varying += a->axes[i].nvalues > 1;
        if (varying != 1)
            return kp_cli_usage_error("bench", "--plot draws one axis against time or "
                                               "throughput: give exactly one --axis with "
                                               "several values");
    }
    if (a->plot_throughput == 2 && !a->flops_expr)
        return kp_cli_usage_error("bench", "--plot-y gflops needs --flops EXPR");
    if (a->options.failed) return kp_cli_usage_error(NULL, "out of memory");
    { /* -D NAME[=EXPR] and the rest as the compiler will see them, axes not yet substituted */
        kp_str all = {0};
        for (int i = 0; i < a->ndefines; i++)
            kp_str_printf(&all, " -D%s", a->defines[i]);
        if (a->options.data) kp_str_append(&all, a->options.data);
        if (all.failed) {
            kp_str_free(&all);
            return kp_cli_usage_error(NULL, "out of memory");
        }
        int bad = kp_cli_check_compiler_options("bench", all.data);
        kp_str_free(&all);
        if (bad) return bad;
    }
    /* Every formula must name only axes: checked now, not after minutes of measuring. */
    kp_vars probe = {0};
    for (int i = 0; i < a->naxes; i++) {
        probe.v[probe.n] = a->axes[i].values[0];
        probe.n++;
    }
    const char *formulas[2] = {a->bytes_expr, a->flops_expr};
    const char *names[2] = {"--bytes", "--flops"};
    for (int i = 0; i < 2; i++) {
        if (!formulas[i]) continue;
        char why[256];
        double x;
        if (kp_expr_eval(formulas[i], &probe, &x, why, sizeof why) != 0)
            return kp_cli_usage_error("bench", "%s '%s': %s", names[i], formulas[i], why);
    }
    return 0;
}

/* ---- one point ---------------------------------------------------------------------------- */

/* "Nx64" -> dims; each part an expression in the axes ('x' outside braces separates). */
static kprof_status kp_bench_dims(const char *opt, const char *text, const kp_vars *vars,
                                  uint64_t out[3], int *dims, kp_error *err)
{
    int n = 0, depth = 0;
    const char *start = text;
    out[0] = out[1] = out[2] = 1;
    for (const char *p = text;; p++) {
        if (*p == '{') depth++;
        if (*p == '}') depth--;
        if (*p == '\0' || (*p == 'x' && depth == 0)) {
            if (n == 3)
                return kp_error_set(err, KPROF_INVALID, "%s '%s': more than 3 dimensions", opt,
                                    text);
            char part[256];
            size_t len = (size_t)(p - start);
            if (len == 0 || len >= sizeof part)
                return kp_error_set(err, KPROF_INVALID, "%s '%s': an empty dimension", opt, text);
            memcpy(part, start, len);
            part[len] = '\0';
            kp_str sub = {0};
            char why[256];
            double v;
            int rc = kp_expr_substitute(part, vars, &sub, why, sizeof why);
            if (rc == 0) rc = kp_expr_eval(sub.data ? sub.data : "", vars, &v, why, sizeof why);
            kp_str_free(&sub);
            if (rc != 0) return kp_error_set(err, KPROF_INVALID, "%s '%s': %s", opt, text, why);
            if (v < 1 || v != floor(v) || v > 1e15)
                return kp_error_set(err, KPROF_INVALID,
                                    "%s '%s': dimension %d is %g, not a positive whole number", opt,
                                    text, n + 1, v);
            out[n++] = (uint64_t)v;
            if (*p == '\0') break;
            start = p + 1;
        }
    }
    *dims = n;
    return KPROF_OK;
}

/* The compiler options at a point: -D values in the axes, then -I and --options. */
static kprof_status kp_bench_point_options(const kp_bench_args *a, const kp_vars *vars, kp_str *out,
                                           kp_error *err)
{
    for (int i = 0; i < a->ndefines; i++) {
        const char *d = a->defines[i], *eq = strchr(d, '=');
        char why[256];
        if (!eq) {
            /* -DN with an axis N defines N as the axis value. */
            const kp_var *v = kp_vars_find(vars, d);
            char num[64];
            if (v && v->numeric) kp_expr_format(v->value, num, sizeof num);
            if (v)
                kp_str_printf(out, " -D%s=%s", d, v->numeric ? num : v->text);
            else
                kp_str_printf(out, " -D%s", d);
            continue;
        }
        kp_str_printf(out, " -D%.*s=", (int)(eq - d), d);
        if (kp_expr_substitute(eq + 1, vars, out, why, sizeof why) != 0)
            return kp_error_set(err, KPROF_INVALID, "-D %s: %s", d, why);
    }
    if (a->options.data) kp_str_append(out, a->options.data);
    if (out->failed) return kp_error_nomem(err);
    return KPROF_OK;
}

static void kp_bench_point_vars(const kp_bench_args *a, int index, kp_vars *vars)
{
    memset(vars, 0, sizeof *vars);
    /* The first axis varies slowest. */
    int stride = 1;
    for (int i = a->naxes - 1; i >= 0; i--) {
        const kp_axis *ax = &a->axes[i];
        vars->v[i] = ax->values[(index / stride) % ax->nvalues];
        stride *= ax->nvalues;
    }
    vars->n = a->naxes;
}

static void kp_bench_vars_text(const kp_vars *vars, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    /* Numbers as numbers ("N=4096" whether given as 4K or 4096): a point is found again in an
     * earlier run however its value was spelled. */
    for (int i = 0; i < vars->n && len < n; i++) {
        char num[64];
        if (vars->v[i].numeric) kp_expr_format(vars->v[i].value, num, sizeof num);
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%s", i ? " " : "", vars->v[i].name,
                                vars->v[i].numeric ? num : vars->v[i].text);
    }
}

static void kp_bench_progress(void *user, const kp_bench_side *sides, int nsides, double noise,
                              double elapsed)
{
    kp_bench_run *r = user;
    (void)nsides;
    kp_progress_set(r->progress, "bench: %s: %zu samples, noise ±%.2f%% (goal ±%.2f%%), %.1f s",
                    r->phase, sides[0].n, 100 * noise, 100 * r->a->cfg.max_noise, elapsed);
}

/* What a point is measured at, from its axis values: the launch geometry, the SPEC and the
 * compiler options with the axes substituted, and the formulas' values. */
typedef struct kp_bench_setup {
    kp_vars vars;
    kp_launch launch;
    kp_str buffers, options;
    double bytes, flops; /* per dispatch; 0 when not given */
} kp_bench_setup;

static void kp_bench_setup_free(kp_bench_setup *p)
{
    kp_str_free(&p->buffers);
    kp_str_free(&p->options);
}

/* Point index's setup; an error names the point. */
static kprof_status kp_bench_point_setup(const kp_bench_args *a, int index, kp_bench_setup *p,
                                         kp_error *err)
{
    memset(p, 0, sizeof *p);
    kp_bench_point_vars(a, index, &p->vars);
    const kp_vars *vars = &p->vars;
    p->launch = a->launch;
    int gd = 0, td = 0;
    char why[256];
    kprof_status st = kp_bench_dims("--grid", a->grid, vars, p->launch.grid, &gd, err);
    if (st == KPROF_OK) st = kp_bench_dims("--tg", a->tg, vars, p->launch.tg, &td, err);
    if (st == KPROF_OK && gd != td)
        st = kp_error_set(err, KPROF_INVALID, "--grid has %d dimension%s but --tg has %d", gd,
                          gd == 1 ? "" : "s", td);
    p->launch.dims = gd;
    if (st == KPROF_OK && kp_expr_substitute(a->buffers, vars, &p->buffers, why, sizeof why) != 0)
        st = kp_error_set(err, KPROF_INVALID, "--buffers: %s", why);
    if (st == KPROF_OK) st = kp_bench_point_options(a, vars, &p->options, err);
    const char *formulas[2] = {a->bytes_expr, a->flops_expr};
    const char *names[2] = {"--bytes", "--flops"};
    double *values[2] = {&p->bytes, &p->flops};
    for (int f = 0; f < 2 && st == KPROF_OK; f++) {
        if (!formulas[f]) continue;
        double v = 0;
        if (kp_expr_eval(formulas[f], vars, &v, why, sizeof why) != 0)
            st = kp_error_set(err, KPROF_INVALID, "%s '%s': %s", names[f], formulas[f], why);
        else if (v < 0 || v >= 18446744073709551616.0)
            st = kp_error_set(err, KPROF_INVALID, "%s '%s' is %g at a point: %s", names[f],
                              formulas[f], v, v < 0 ? "negative" : "too large");
        *values[f] = v;
    }
    if (st != KPROF_OK) {
        char vt[256];
        kp_bench_vars_text(vars, vt, sizeof vt);
        if (vt[0]) kp_error_append(err, " (at the point %s)", vt);
        kp_bench_setup_free(p);
    }
    return st;
}

/* Every point's setup, before anything is measured: a mistake at the last point is found now,
 * not after minutes of measuring. */
static kprof_status kp_bench_check_points(const kp_bench_args *a, int npoints, kp_error *err)
{
    for (int index = 0; index < npoints; index++) {
        kp_bench_setup p;
        kprof_status st = kp_bench_point_setup(a, index, &p, err);
        if (st != KPROF_OK) return st;
        kp_bench_setup_free(&p);
    }
    return KPROF_OK;
}

/* --counters for one side of a row, after its samples: one replayed dispatch of lab's kernel at
 * launch. Once a row finds the counters cannot be read, later rows are not asked (the first
 * reason stands for all). */
static kprof_status kp_bench_counters(kp_bench_run *r, kp_bench_row *row, int side, kp_lab *lab,
                                      const kp_launch *launch, kp_error *err)
{
    kp_counters *c = malloc(sizeof *c);
    if (!c) return kp_error_nomem(err);
    *c = r->a->counters_asked;
    row->counters[side] = c;
    if (r->counters_off[0]) {
        c->read = 1;
        c->have = 0;
        snprintf(c->why_not, sizeof c->why_not, "%s", r->counters_off);
        return KPROF_OK;
    }
    kprof_status st = kp_lab_counters(lab, launch, c, err);
    if (st == KPROF_OK && !c->have)
        snprintf(r->counters_off, sizeof r->counters_off, "%s", c->why_not);
    return st;
}

/* --repeat: a later session's samples of a row (tmp) joined to the row's, and the sessions'
 * medians and ratios kept. */
static kprof_status kp_bench_join(kp_bench_row *row, kp_bench_side *tmp, const kp_bench_outcome *o,
                                  kp_error *err)
{
    for (int s = 0; s < row->nsides; s++) {
        kp_bench_side *d = &row->side[s], *t = &tmp[s];
        kprof_status st = kp_bench_side_add(d, t->ms, t->mhz, t->n, err);
        if (st != KPROF_OK) return st;
        d->taken += t->taken;
        d->rounds += t->rounds;
        d->throttled += t->throttled;
        d->gpu_s += t->gpu_s;
        d->throttle_reasons |= t->throttle_reasons;
        if (t->min_clock_mhz > 0 && (d->min_clock_mhz <= 0 || t->min_clock_mhz < d->min_clock_mhz))
            d->min_clock_mhz = t->min_clock_mhz;
        if (d->nruns < KP_BENCH_MAX_REPEAT) d->run_median[d->nruns++] = t->median.value;
    }
    kp_bench_outcome *ro = &row->outcome;
    if (row->nsides == 2 && ro->nrun_ratios < KP_BENCH_MAX_REPEAT)
        ro->run_ratio[ro->nrun_ratios++] = o->ratio.value;
    ro->wall_s += o->wall_s;
    if (o->measured_busy_cpus > ro->measured_busy_cpus)
        ro->measured_busy_cpus = o->measured_busy_cpus;
    if (o->busy_cpus > ro->busy_cpus) ro->busy_cpus = o->busy_cpus;
    if (o->stop == KP_BENCH_STOP_TIMEOUT) ro->stop = KP_BENCH_STOP_TIMEOUT;
    return KPROF_OK;
}

/* After the last session of a point: each row's samples summarised whole and the comparison
 * made again, with the spread between the sessions. */
static kprof_status kp_bench_rejudge(kp_bench_run *r, int row0, kp_error *err)
{
    for (int i = row0; i < r->nrows; i++) {
        kp_bench_row *row = &r->rows[i];
        for (int s = 0; s < row->nsides; s++) {
            kprof_status st = kp_bench_summarise(&row->side[s], err);
            if (st != KPROF_OK) return st;
        }
        if (row->nsides == 2) {
            kp_bench_config cfg = r->a->cfg;
            cfg.cold = row->cold;
            kprof_status st =
                kp_bench_compare(&row->side[0], &row->side[1], 1, &cfg, &row->outcome, err);
            if (st != KPROF_OK) return st;
        }
    }
    return KPROF_OK;
}

/* Measure one point (both cache states asked): its first session appends rows; with --repeat,
 * each later session (fresh sessions: compiled, filled and run anew) joins its samples to
 * them. */
static kprof_status kp_bench_point_once(kp_bench_run *r, int index, int rep, int row0,
                                        kp_error *err);

static kprof_status kp_bench_point(kp_bench_run *r, int index, kp_error *err)
{
    int row0 = r->nrows;
    kprof_status st = KPROF_OK;
    for (int rep = 0; rep < r->a->repeat && st == KPROF_OK; rep++)
        st = kp_bench_point_once(r, index, rep, row0, err);
    if (st == KPROF_OK && r->a->repeat > 1) st = kp_bench_rejudge(r, row0, err);
    return st;
}

static kprof_status kp_bench_point_once(kp_bench_run *r, int index, int rep, int row0,
                                        kp_error *err)
{
    kp_bench_args *a = r->a;
    kp_bench_setup p;
    kprof_status st = kp_bench_point_setup(a, index, &p, err);
    if (st != KPROF_OK) return st;
    const kp_vars *vars = &p.vars;
    const kp_launch launch = p.launch;
    const kp_str buffers = p.buffers, options = p.options;
    if (index == 0) {
        kp_strlcpy(r->first_options, options.data ? options.data : "", sizeof r->first_options);
        kp_strlcpy(r->first_buffers, buffers.data ? buffers.data : "", sizeof r->first_buffers);
    }
    int nsides = a->ntargets == 2 || a->nentries == 2 ? 2 : 1;
    kp_lab *labs[2] = {NULL, NULL};
    kp_reflection refl;
    /* Two kernels of one file share one session: one process, one program, one set of
     * buffers (bench.h), so nothing but the kernels differs between A and B. */
    int shared = nsides == 2 && (a->ntargets == 1 || strcmp(a->targets[0], a->targets[1]) == 0);
    const char *entries[2] = {NULL, NULL};
    for (int s = 0; s < nsides && st == KPROF_OK; s++) {
        entries[s] = a->nentries == 0 ? NULL : a->entries[a->nentries == 2 ? s : 0];
        kp_lab_options lo = {
            .target = a->targets[a->ntargets == 2 ? s : 0],
            .entry = entries[s],
            .buffers = buffers.data,
            .backend = a->backend,
            .device = a->device,
            .options = options.data ? options.data : "",
        };
        if (shared && s == 1) {
            labs[1] = labs[0];
            st = kp_lab_use_kernel(labs[0], entries[1], err);
        } else {
            st = kp_lab_open(&lo, &labs[s], err);
        }
        if (st == KPROF_OK) st = kp_lab_check_launch(labs[s], &launch, &refl, err);
        if (st == KPROF_OK) {
            const kp_lab_info *info = kp_lab_get_info(labs[s]);
            if (!r->have_info) {
                r->info = *info;
                snprintf(r->kernel_dir, sizeof r->kernel_dir, "%s", info->kernel_dir);
            }
            kp_strlcpy(r->entry_name[s], info->kernel->name, sizeof r->entry_name[s]);
            snprintf(r->source[s], sizeof r->source[s], "%s", info->source_path);
        }
    }
    if (st == KPROF_OK && shared) st = kp_lab_use_kernel(labs[0], entries[0], err);
    if (st == KPROF_OK) r->have_info = 1;
    if (st == KPROF_OK && nsides == 2) {
        const kp_lab_info *i0 = kp_lab_get_info(labs[0]), *i1 = kp_lab_get_info(labs[1]);
        if (strcmp(i0->device.name, i1->device.name) != 0 ||
            strcmp(i0->device.backend, i1->device.backend) != 0)
            st = kp_error_set(err, KPROF_INVALID,
                              "A runs on %s (%s) but B on %s (%s): compare on one device (give "
                              "--backend, and kernels in one language)",
                              i0->device.name, i0->device.backend, i1->device.name,
                              i1->device.backend);
    }
    int rowk = row0;
    for (int cold = 0; cold < 2 && st == KPROF_OK; cold++) {
        if ((cold && !a->cold) || (!cold && !a->hot)) continue;
        kp_bench_row *row;
        kp_bench_side later[2]; /* a later session's samples, joined to the row's after */
        kp_bench_side *sides;
        kp_bench_outcome later_outcome, *outcome;
        if (rep == 0) {
            row = &r->rows[r->nrows];
            memset(row, 0, sizeof *row);
            row->vars = *vars;
            row->cold = cold;
            row->launch = launch;
            row->nsides = nsides;
            r->nrows++;
            sides = row->side;
            outcome = &row->outcome;
        } else {
            row = &r->rows[rowk];
            memset(later, 0, sizeof later);
            sides = later;
            outcome = &later_outcome;
        }
        rowk++;
        for (int s = 0; s < nsides; s++) {
            sides[s].lab = labs[s];
            sides[s].launch = launch;
            sides[s].entry = shared ? entries[s] : NULL;
            snprintf(row->label[s], sizeof row->label[s], "%s", r->entry_name[s]);
        }
        char vt[256];
        kp_bench_vars_text(vars, vt, sizeof vt);
        char phase[512];
        if (a->repeat > 1)
            snprintf(phase, sizeof phase, "%s%s%s %s, session %d of %d", r->entry_name[0],
                     vt[0] ? " " : "", vt, cold ? "cold" : "hot", rep + 1, a->repeat);
        else
            snprintf(phase, sizeof phase, "%s%s%s %s", r->entry_name[0], vt[0] ? " " : "", vt,
                     cold ? "cold" : "hot");
        r->phase = phase;
        kp_progress_set(r->progress, "bench: %s: warming up", phase);
        kp_bench_config cfg = a->cfg;
        cfg.cold = cold;
        st = kp_bench_measure(sides, nsides, &cfg, kp_bench_progress, r, outcome, err);
        r->phase = NULL;
        if (st == KPROF_OK && a->repeat > 1) {
            if (rep == 0) {
                /* The first session's median and ratio are the first of the runs'. */
                for (int s = 0; s < nsides; s++)
                    row->side[s].run_median[row->side[s].nruns++] = row->side[s].median.value;
                if (nsides == 2)
                    row->outcome.run_ratio[row->outcome.nrun_ratios++] = row->outcome.ratio.value;
            } else {
                st = kp_bench_join(row, later, &later_outcome, err);
            }
        }
        if (rep > 0)
            for (int s = 0; s < nsides; s++)
                kp_bench_side_free(&later[s]);
        if (rep > 0) {
            if (st == KPROF_TIMEOUT) {
                kp_progress_stop(r->progress);
                r->progress = NULL;
                kp_run_abandon(err);
            }
            if (st != KPROF_OK) break;
            continue; /* the counters and sizes are the first session's */
        }
        kp_strlcpy(r->info.timer, kp_lab_get_info(labs[0])->timer, sizeof r->info.timer);
        if (st == KPROF_TIMEOUT) {
            kp_progress_stop(r->progress);
            r->progress = NULL;
            kp_run_abandon(err);
        }
        if (st != KPROF_OK) break;
        row->bytes = a->bytes_expr ? (uint64_t)p.bytes : kp_lab_get_info(labs[0])->buffer_bytes;
        row->bytes_assumed = !a->bytes_expr;
        row->working_set = kp_lab_get_info(labs[0])->buffer_bytes;
        row->flops = p.flops;
        for (int s = 0; s < nsides && st == KPROF_OK && a->counters; s++) {
            kp_progress_set(r->progress, "bench: %s: hardware counters (one replayed dispatch)",
                            phase);
            if (shared) st = kp_lab_use_kernel(labs[0], entries[s], err);
            if (st == KPROF_OK) st = kp_bench_counters(r, row, s, labs[s], &launch, err);
        }
        if (st == KPROF_TIMEOUT) {
            kp_progress_stop(r->progress);
            r->progress = NULL;
            kp_run_abandon(err);
        }
    }
    /* Nothing a session measured stands until it released its device cleanly (lab.h). */
    for (int s = 0; s < nsides; s++) {
        if (!labs[s] || (s == 1 && labs[1] == labs[0])) continue;
        if (st == KPROF_OK) st = kp_lab_finish(labs[s], err);
        kp_lab_close(labs[s]);
    }
    for (int i = 0; i < r->nrows; i++)
        for (int s = 0; s < 2; s++)
            r->rows[i].side[s].lab = NULL;
    kp_bench_setup_free(&p);
    return st;
}

/* --compare: the earlier run's samples of each row, and the verdict on this run against them. */
static kprof_status kp_bench_compare_old(kp_bench_run *r, kp_error *err)
{
    for (int i = 0; i < r->nrows; i++) {
        kp_bench_row *row = &r->rows[i];
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        const kp_bench_file_point *p = kp_bench_file_find(r->old, vt, row->cold);
        if (!p) continue;
        /* As kprof diff: a verdict needs 5 samples a side. */
        if (p->n < 5) {
            fprintf(stderr,
                    "kprof: warning: %s: point '%s' (%s) has %zu samples, fewer than 5: not "
                    "compared\n",
                    r->a->compare_file, vt, row->cold ? "cold" : "hot", p->n);
            continue;
        }
        memset(&row->old, 0, sizeof row->old);
        kprof_status st = kp_bench_side_add(&row->old, p->ms, p->mhz, p->n, err);
        row->old.rounds = p->rounds;
        for (int k = 0; k < p->nruns && k < KP_BENCH_MAX_REPEAT; k++)
            row->old.run_median[row->old.nruns++] = p->run_median[k];
        /* What this run knows of the machine stands for the comparison. */
        kp_bench_outcome_init(&row->old_outcome);
        row->old_outcome.busy_cpus = row->outcome.busy_cpus;
        row->old_outcome.measured_busy_cpus = row->outcome.measured_busy_cpus;
        row->old_outcome.ncpus = row->outcome.ncpus;
        if (st == KPROF_OK) st = kp_bench_summarise(&row->old, err);
        if (st == KPROF_OK && !(row->old.median.value > 0))
            st = kp_error_set(err, KPROF_INVALID,
                              "%s: point '%s' has a median of 0 ms: nothing to compare with",
                              r->a->compare_file, vt);
        if (st == KPROF_OK)
            st = kp_bench_compare(&row->old, &row->side[0], 0, &r->a->cfg, &row->old_outcome, err);
        if (st != KPROF_OK) return st;
        row->have_old = 1;
    }
    return KPROF_OK;
}

/* ---- output ------------------------------------------------------------------------------- */

static const kp_bench_outcome *kp_bench_row_comparison(const kp_bench_row *row)
{
    if (row->nsides == 2) return &row->outcome;
    if (row->have_old) return &row->old_outcome;
    return NULL;
}

static void kp_bench_gate(kp_bench_run *r)
{
    if (r->a->fail_if_slower < 0) return;
    for (int i = 0; i < r->nrows; i++) {
        kp_bench_row *row = &r->rows[i];
        const kp_bench_outcome *o = kp_bench_row_comparison(row);
        if (!o) continue;
        row->slower_gate = kp_bench_outcome_fails(o, r->a->fail_if_slower);
    }
}

static double kp_bench_gbps(const kp_bench_row *row, const kp_bench_side *s)
{
    return s->median.value > 0 ? (double)row->bytes / (s->median.value * 1e-3) / 1e9 : 0;
}

static double kp_bench_gflops(const kp_bench_row *row, const kp_bench_side *s)
{
    return s->median.value > 0 && row->flops > 0 ? row->flops / (s->median.value * 1e-3) / 1e9 : 0;
}

/* What a side's counters say at its median (readings of the measured figures alone). */
static void kp_bench_counter_readings(const kp_bench_run *r, const kp_bench_row *row,
                                      const kp_bench_side *s, const kp_counters *c,
                                      kp_readings_input *in, kp_readings *rd)
{
    memset(in, 0, sizeof *in);
    in->median_ms = s->median.value;
    in->gbps = kp_bench_gbps(row, s);
    in->bytes = row->bytes;
    in->bytes_assumed = row->bytes_assumed;
    in->ceiling_gbs = r->ceiling_gbs;
    /* Hot rows' data that fits in the cache: the counters' cold DRAM bytes are no rate. */
    in->working_set = row->working_set;
    in->cache_bytes = r->info.device.cache_bytes;
    in->timed_cold = row->cold;
    kp_counters_apply(c, r->peak_gflops, in);
    kp_readings_compute(in, rd);
}

/* The engine's reasons as a list of their names. */
static void kp_bench_json_reasons(kp_json *j, const char *key, unsigned reasons)
{
    kp_json_array_begin(j, key);
    for (unsigned bit = 1; bit && bit <= reasons; bit <<= 1)
        if (reasons & bit) kp_json_string(j, NULL, kp_judge_reason_name(bit));
    kp_json_array_end(j);
}

/* A side's shape: its blocks, halves, modes, and why its run is not stable (if it is not). */
static void kp_bench_json_shape(kp_json *j, const char *key, const kp_shape *sh, double busy,
                                double threshold)
{
    kp_json_object_begin(j, key);
    kp_json_uint(j, "block", sh->block);
    kp_json_uint(j, "blocks", sh->blocks);
    kp_json_double(j, "acf1", sh->acf1);
    if (sh->have_halves) {
        kp_json_array_begin(j, "halves_ms");
        kp_json_double(j, NULL, sh->half[0].value);
        kp_json_double(j, NULL, sh->half[1].value);
        kp_json_array_end(j);
    }
    kp_json_bool(j, "drifting", sh->drifting);
    kp_json_array_begin(j, "modes");
    for (int m = 0; m < sh->modes && sh->modes == 2; m++) {
        kp_json_object_begin(j, NULL);
        kp_json_double(j, "at_ms", sh->mode[m]);
        kp_json_double(j, "share", sh->mode_share[m]);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_bench_json_reasons(j, "unstable",
                          kp_judge_unstable(sh, busy, KP_JUDGE_BUSY_LIMIT, threshold));
    kp_json_object_end(j);
}

static void kp_bench_json_side(kp_json *j, const kp_bench_run *r, const kp_bench_row *row,
                               const kp_bench_side *s, const kp_counters *c, const char *label,
                               const char *source, const char *entry)
{
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "label", label);
    kp_json_string(j, "source", source);
    kp_json_string(j, "entry", entry);
    kp_json_double(j, "median_ms", s->median.value);
    kp_json_array_begin(j, "ci_ms");
    kp_json_double(j, NULL, s->median.lo);
    kp_json_double(j, NULL, s->median.hi);
    kp_json_array_end(j);
    kp_json_double(j, "min_ms", s->stats.min);
    kp_json_double(j, "p90_ms", s->stats.p90);
    kp_json_double(j, "max_ms", s->stats.max);
    kp_json_double(j, "mean_ms", s->stats.mean);
    kp_json_double(j, "stddev_ms", s->stats.stddev);
    kp_json_double(j, "noise", s->noise);
    kp_json_double(j, "rsd", s->rsd);
    kp_json_uint(j, "samples", s->n);
    kp_json_uint(j, "taken", s->taken);
    kp_json_uint(j, "rounds", s->rounds);
    kp_json_uint(j, "throttled", s->throttled);
    kp_json_double(j, "gpu_time_s", s->gpu_s);
    kp_bench_json_shape(j, "shape", &s->shape, row->outcome.busy_cpus, r->a->cfg.threshold);
    if (s->nruns >= 2) {
        kp_json_array_begin(j, "run_medians_ms");
        for (int k = 0; k < s->nruns; k++)
            kp_json_double(j, NULL, s->run_median[k]);
        kp_json_array_end(j);
    }
    if (row->cold) kp_json_double(j, "flush_ms", s->flush_ms);
    if (s->clock_mhz > 0) {
        kp_json_double(j, "clock_mhz", s->clock_mhz);
        kp_json_double(j, "min_clock_mhz", s->min_clock_mhz);
        kp_json_double(j, "default_clock_mhz", s->default_clock_mhz);
    } else {
        kp_json_null(j, "clock_mhz");
        kp_json_string(j, "clock_note", s->clock_note);
    }
    kp_json_double(j, "gbps", kp_bench_gbps(row, s));
    if (row->flops > 0) kp_json_double(j, "gflops", kp_bench_gflops(row, s));
    kp_json_array_begin(j, "samples_ms");
    for (size_t i = 0; i < s->n; i++)
        kp_json_double(j, NULL, s->ms[i]);
    kp_json_array_end(j);
    if (s->mhz && s->clock_mhz > 0) {
        kp_json_array_begin(j, "clock_samples_mhz");
        for (size_t i = 0; i < s->n; i++)
            kp_json_double(j, NULL, s->mhz[i]);
        kp_json_array_end(j);
    }
    if (c) {
        kp_readings_input in;
        kp_readings rd;
        kp_bench_counter_readings(r, row, s, c, &in, &rd);
        kp_counters_json(j, "counters", c, &in, &rd);
    }
    kp_json_object_end(j);
}

static void kp_bench_json_comparison(kp_json *j, const char *key, const kp_bench_outcome *o,
                                     const kp_bench_config *cfg)
{
    kp_json_object_begin(j, key);
    kp_json_double(j, "ratio", o->ratio.value);
    kp_json_array_begin(j, "ci");
    kp_json_double(j, NULL, o->ratio.lo);
    kp_json_double(j, NULL, o->ratio.hi);
    kp_json_array_end(j);
    kp_json_double(j, "threshold", cfg->threshold);
    kp_json_bool(j, "paired", o->paired);
    kp_json_string(j, "time_verdict", kp_compare_verdict_name(o->verdict));
    if (o->have_cycles) {
        kp_json_double(j, "cycles_ratio", o->cycles_ratio.value);
        kp_json_array_begin(j, "cycles_ci");
        kp_json_double(j, NULL, o->cycles_ratio.lo);
        kp_json_double(j, NULL, o->cycles_ratio.hi);
        kp_json_array_end(j);
        kp_json_string(j, "cycles_verdict", kp_compare_verdict_name(o->cycles_verdict));
    } else {
        kp_json_null(j, "cycles_ratio");
    }
    kp_json_string(j, "verdict", kp_compare_verdict_name(o->final_verdict));
    kp_json_string(j, "interval_verdict", kp_compare_verdict_name(o->judgement.interval_verdict));
    kp_bench_json_reasons(j, "reasons", o->judgement.reasons);
    kp_json_string(j, "reason", o->judgement.reason);
    kp_json_array_begin(j, "sample_ci");
    kp_json_double(j, NULL, o->judgement.sample_ratio.lo);
    kp_json_double(j, NULL, o->judgement.sample_ratio.hi);
    kp_json_array_end(j);
    kp_json_bool(j, "across_runs", o->across_runs);
    kp_json_bool(j, "separate_sessions", o->separate_sessions);
    kp_json_int(j, "runs", o->judgement.runs);
    kp_json_bool(j, "one_run_a_side", (o->judgement.notes & KP_JUDGE_NOTE_ONE_RUN) != 0);
    if (o->busy_cpus >= 0)
        kp_json_double(j, "busy_cpus", o->busy_cpus);
    else
        kp_json_null(j, "busy_cpus");
    kp_json_object_end(j);
}

static void kp_bench_json(kp_str *out, const kp_bench_run *r)
{
    const kp_bench_args *a = r->a;
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "bench");
    kp_json_string(&j, "device", r->info.device.name);
    kp_json_string(&j, "backend", r->info.device.backend);
    kp_json_int(&j, "device_index", r->info.device.index);
    kp_json_string(&j, "timer", r->info.timer);
    kp_json_object_begin(&j, "config");
    kp_json_double(&j, "max_noise", a->cfg.max_noise);
    kp_json_double(&j, "min_time_s", a->cfg.min_time_s);
    kp_json_int(&j, "min_samples", a->cfg.min_samples);
    kp_json_double(&j, "timeout_s", a->cfg.timeout_s);
    kp_json_int(&j, "warmup", a->cfg.warmup);
    kp_json_double(&j, "throttle_fraction", a->cfg.throttle_fraction);
    kp_json_double(&j, "threshold", a->cfg.threshold);
    kp_json_string(&j, "grid", a->grid);
    kp_json_string(&j, "tg", a->tg);
    kp_json_string(&j, "buffers", a->buffers);
    kp_json_string(&j, "bytes", a->bytes_expr);
    kp_json_string(&j, "flops", a->flops_expr);
    kp_json_string(&j, "compare", a->compare_file);
    kp_json_object_end(&j);
    kp_json_array_begin(&j, "axes");
    for (int i = 0; i < a->naxes; i++) {
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "name", a->axes[i].name);
        kp_json_array_begin(&j, "values");
        for (int k = 0; k < a->axes[i].nvalues; k++)
            kp_json_string(&j, NULL, a->axes[i].values[k].text);
        kp_json_array_end(&j);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < r->nrows; i++) {
        const kp_bench_row *row = &r->rows[i];
        kp_json_object_begin(&j, NULL);
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        kp_json_string(&j, "point", vt);
        kp_json_object_begin(&j, "axes");
        for (int k = 0; k < row->vars.n; k++) {
            const kp_var *v = &row->vars.v[k];
            if (v->numeric)
                kp_json_double(&j, v->name, v->value);
            else
                kp_json_string(&j, v->name, v->text);
        }
        kp_json_object_end(&j);
        kp_json_string(&j, "cache", row->cold ? "cold" : "hot");
        kp_json_array_begin(&j, "grid");
        for (int d = 0; d < row->launch.dims; d++)
            kp_json_uint(&j, NULL, row->launch.grid[d]);
        kp_json_array_end(&j);
        kp_json_array_begin(&j, "tg");
        for (int d = 0; d < row->launch.dims; d++)
            kp_json_uint(&j, NULL, row->launch.tg[d]);
        kp_json_array_end(&j);
        kp_json_uint(&j, "bytes", row->bytes);
        kp_json_bool(&j, "bytes_assumed", row->bytes_assumed);
        if (row->flops > 0) kp_json_double(&j, "flops", row->flops);
        kp_json_string(&j, "stop", kp_bench_stop_name(row->outcome.stop));
        kp_json_double(&j, "wall_s", row->outcome.wall_s);
        /* The CPUs other processes took while this point was measured (whatever the device),
         * and the host's. */
        if (row->outcome.measured_busy_cpus >= 0)
            kp_json_double(&j, "other_cpus", row->outcome.measured_busy_cpus);
        else
            kp_json_null(&j, "other_cpus");
        kp_json_double(&j, "host_cpus", row->outcome.ncpus);
        kp_json_array_begin(&j, "kernels");
        for (int s = 0; s < row->nsides; s++)
            kp_bench_json_side(&j, r, row, &row->side[s], row->counters[s],
                               row->nsides == 2 ? (s ? "B" : "A") : "", r->source[s],
                               r->entry_name[s]);
        kp_json_array_end(&j);
        if (row->nsides == 2)
            kp_bench_json_comparison(&j, "comparison", &row->outcome, &a->cfg);
        else if (row->have_old)
            kp_bench_json_comparison(&j, "comparison", &row->old_outcome, &a->cfg);
        else
            kp_json_null(&j, "comparison");
        if (a->fail_if_slower >= 0) kp_json_bool(&j, "fails_gate", row->slower_gate);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
}

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
    if (!r->a->counters || r->counters_off[0]) return;
    printf("counters (one replayed dispatch per row and kernel, after its samples; rates at its "
           "median):\n");
    for (int i = 0; i < r->nrows; i++) {
        const kp_bench_row *row = &r->rows[i];
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        for (int s = 0; s < row->nsides; s++) {
            const kp_counters *c = row->counters[s];
            if (!c) continue;
            kp_readings_input in;
            kp_readings rd;
            kp_bench_counter_readings(r, row, &row->side[s], c, &in, &rd);
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
    printf("%s%s%s on %s %s(%s device %d, %s)%s\n", B, r->entry_name[0], R, r->info.device.name, Dm,
           r->info.device.backend, r->info.device.index, r->info.timer, R);
    int has_flops = a->flops_expr != NULL;
    int both = a->hot && a->cold;
    /* Header. */
    kp_str h = {0};
    for (int k = 0; k < a->naxes; k++)
        kp_str_printf(&h, "%-10s ", a->axes[k].name);
    if (both) kp_str_printf(&h, "%-5s ", "cache");
    if (r->rows[0].nsides == 2) kp_str_printf(&h, "%-3s ", "");
    kp_str_printf(&h, "%11s  %-23s %10s %10s %10s %10s %8s %7s %-8s %8s %9s", "median", "95% CI",
                  "min", "mean", "p90", "max", "samples", "noise", "stop", "clock", "GB/s");
    if (has_flops) kp_str_printf(&h, " %9s", "GFLOP/s");
    printf("%s%s%s\n", Dm, h.data ? h.data : "", R);
    kp_str_free(&h);
    for (int i = 0; i < r->nrows; i++) {
        const kp_bench_row *row = &r->rows[i];
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
                          clock, kp_bench_gbps(row, sd));
            if (has_flops) kp_str_printf(&l, " %9.1f", kp_bench_gflops(row, sd));
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
                                           a->cfg.threshold);
            if (!u) continue;
            char words[400];
            kp_judge_shape_words(&sd->shape, u, row->outcome.busy_cpus, row->outcome.ncpus, "ms",
                                 words, sizeof words);
            printf("  %sthe run is not stable%s: %s\n", row->nsides == 2 ? (s ? "B: " : "A: ") : "",
                   u & ~(unsigned)KP_JUDGE_FEW ? "" : " yet", words);
        }
        if (row->nsides == 2) {
            char what[300];
            snprintf(what, sizeof what, "B/A (%s / %s)", r->entry_name[1], r->entry_name[0]);
            if (strcmp(r->source[0], r->source[1]) != 0) snprintf(what, sizeof what, "B/A");
            kp_bench_print_comparison(what, &row->outcome, &a->cfg, o);
        }
        if (row->have_old) kp_bench_print_comparison("now / before", &row->old_outcome, &a->cfg, o);
        if (row->slower_gate)
            printf("  %sslower by more than --fail-if-slower %g%%%s\n", B, 100 * a->fail_if_slower,
                   R);
    }
    /* Notes under the table. */
    int stops[5] = {0};
    for (int i = 0; i < r->nrows; i++)
        stops[r->rows[i].outcome.stop] = 1;
    printf("%sstop:", Dm);
    for (int s = 0; s < 5; s++)
        if (stops[s])
            printf(" %s = %s;", kp_bench_stop_name((kp_bench_stop)s),
                   kp_bench_stop_words((kp_bench_stop)s));
    printf(" goal ±%g%%, at least %d samples and %g s of device time%s\n", 100 * a->cfg.max_noise,
           a->cfg.min_samples, a->cfg.min_time_s, R);
    if (r->rows[0].nsides == 2)
        printf("%sA and B ran in turn, batch by batch; their i-th samples are pairs (drift "
               "cancels). A: %s:%s  B: %s:%s%s\n",
               Dm, r->source[0], r->entry_name[0], r->source[1], r->entry_name[1], R);
    const kp_bench_side *s0 = &r->rows[0].side[0];
    if (s0->clock_mhz <= 0 && s0->clock_note[0])
        printf("%sclock: not read (%s): throttled samples cannot be told%s\n", Dm, s0->clock_note,
               R);
    for (int i = 0; i < r->nrows; i++) {
        if (!r->rows[i].cold) continue;
        char cb[32], fl[32];
        printf("%scold: the device's cache (%s) emptied before every sample by a read of twice "
               "its size, %s each, not in the times%s\n",
               Dm, kp_format_bytes(r->info.device.cache_bytes, cb, sizeof cb),
               kp_format_ms(r->rows[i].side[0].flush_ms, fl, sizeof fl), R);
        break;
    }
    if (r->rows[0].bytes_assumed)
        printf("%sGB/s: every buffer element assumed touched once per dispatch (--bytes EXPR "
               "corrects it)%s\n",
               Dm, R);
    kp_bench_print_counters(r);
}

static void kp_bench_warnings(const kp_bench_run *r)
{
    for (int i = 0; i < r->nrows; i++)
        for (int s = 0; s < r->rows[i].nsides; s++) {
            const kp_bench_side *sd = &r->rows[i].side[s];
            if (!sd->throttled) continue;
            char reasons[160];
            kp_clock_reasons_text(sd->throttle_reasons, reasons, sizeof reasons);
            fprintf(stderr,
                    "kprof: warning: %zu of %zu samples discarded: the SM clock fell to %.0f MHz, "
                    "below %g%% of its default %.0f MHz%s%s%s\n",
                    sd->throttled, sd->taken, sd->min_clock_mhz, 100 * r->a->cfg.throttle_fraction,
                    sd->default_clock_mhz, reasons[0] ? " (" : "", reasons, reasons[0] ? ")" : "");
        }
}

static kprof_status kp_bench_plot(const kp_bench_run *r, kp_output *out, kp_error *err)
{
    const kp_bench_args *a = r->a;
    int axis = 0;
    for (int i = 0; i < a->naxes; i++)
        if (a->axes[i].nvalues > 1) axis = i;
    int n = 0;
    kp_plot_point *pts = calloc((size_t)r->nrows * 2, sizeof *pts);
    if (!pts) return kp_error_nomem(err);
    /* One line: the first cache state and kernel at each value of the axis. */
    for (int i = 0; i < r->nrows; i++) {
        const kp_bench_row *row = &r->rows[i];
        if (row->cold != r->rows[0].cold) continue;
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
    snprintf(title, sizeof title, "%s on %s (%s)", r->entry_name[0], r->info.device.name,
             r->rows[0].cold ? "cold" : "hot");
    snprintf(xl, sizeof xl, "%s", a->axes[axis].name);
    kp_svg_labels labels = {
        xl,
        a->plot_throughput == 0   ? (r->info.device.is_gpu ? "GPU time per dispatch (ms)"
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
    const kp_bench_row *row = &r->rows[0];
    const kp_bench_side *sd = &row->side[0];
    kp_history_run h = {.git_dirty = -1};
    kp_strlcpy(h.kind, "bench", sizeof h.kind);
    kp_strlcpy(h.kernel, r->entry_name[0], sizeof h.kernel);
    kp_strlcpy(h.target, r->a->targets[0], sizeof h.target);
    kp_strlcpy(h.options, r->first_options, sizeof h.options);
    kp_dims_text(row->launch.grid, row->launch.dims, h.grid, sizeof h.grid);
    kp_dims_text(row->launch.tg, row->launch.dims, h.tg, sizeof h.tg);
    kp_strlcpy(h.buffers, r->first_buffers, sizeof h.buffers);
    h.median_ms = sd->median.value;
    h.min_ms = sd->stats.min;
    h.nsamples = (int64_t)sd->n;
    kp_record_result(&h, &r->info.device, r->source[0], sd->ms, sd->n, json);
}

int kp_cmd_bench(int argc, char **argv)
{
    kp_bench_args *a = calloc(1, sizeof *a);
    kp_bench_run r = {0};
    if (!a) return kp_cli_usage_error(NULL, "out of memory");
    int rc = kp_bench_parse(argc, argv, a);
    if (rc != 0) {
        kp_str_free(&a->options);
        free(a);
        return rc;
    }
    r.a = a;
    kp_error err = {0};
    kprof_status st = KPROF_OK;
    kp_output plot = {0};
    const char *inputs[] = {a->targets[0], a->ntargets > 1 ? a->targets[1] : NULL, NULL};
    int npoints = 1;
    for (int i = 0; i < a->naxes; i++) {
        npoints *= a->axes[i].nvalues;
        if (npoints > KP_BENCH_MAX_POINTS) {
            rc = kp_cli_usage_error("bench", "the axes make more than %d points",
                                    KP_BENCH_MAX_POINTS);
            goto out;
        }
    }
    st = kp_bench_check_points(a, npoints, &err);
    if (st != KPROF_OK) goto done;
    if (a->compare_file) {
        st = kp_bench_file_read(a->compare_file, &r.old, &err);
        if (st != KPROF_OK) goto done;
    }
    if (a->plot) {
        st = kp_output_open(&plot, a->plot, a->force ? KP_OUTPUT_FORCE : 0, inputs, &err);
        if (st != KPROF_OK) goto done;
    }
    r.rows = calloc((size_t)npoints * 2, sizeof *r.rows);
    if (!r.rows) {
        st = kp_error_nomem(&err);
        goto done;
    }
    r.progress = kp_progress_start_still();
    for (int p = 0; p < npoints && st == KPROF_OK; p++) {
        st = kp_bench_point(&r, p, &err);
        /* The ceiling and FLOP peak the counters are read against, once the device is known. */
        if (st == KPROF_OK && p == 0 && a->counters) {
            kp_ceiling ceiling;
            if (kp_cli_ceiling(&r.info.device, &ceiling) == 0) {
                r.ceiling_gbs = ceiling.copy_gbs;
                r.peak_gflops = ceiling.fma_gflops;
            }
        }
    }
    kp_progress_stop(r.progress);
    r.progress = NULL;
    if (st != KPROF_OK) goto done;
    if (r.old) {
        if (strcmp(r.old->device, r.info.device.name) != 0)
            fprintf(stderr, "kprof: warning: %s was measured on %s, this run on %s\n",
                    a->compare_file, r.old->device, r.info.device.name);
        st = kp_bench_compare_old(&r, &err);
        if (st != KPROF_OK) goto done;
        int matched = 0;
        for (int i = 0; i < r.nrows; i++)
            matched += r.rows[i].have_old;
        if (!matched && a->fail_if_slower >= 0) {
            /* A gate that compared nothing must not pass. */
            st = kp_error_set(&err, KPROF_INVALID,
                              "--fail-if-slower: %s has no point with these axes and cache state "
                              "(and 5 samples or more): nothing was compared",
                              a->compare_file);
            goto done;
        }
        if (!matched)
            fprintf(stderr,
                    "kprof: warning: %s has no point with these axes and cache state: "
                    "nothing compared\n",
                    a->compare_file);
    }
    kp_bench_gate(&r);
    if (r.info.warning[0]) fprintf(stderr, "kprof: warning: %s\n", r.info.warning);
    if (r.counters_off[0]) fprintf(stderr, "kprof: counters: %s\n", r.counters_off);
    kp_bench_warnings(&r);
    kp_str js = {0};
    kp_bench_json(&js, &r);
    if (js.failed) {
        kp_str_free(&js);
        st = kp_error_set(&err, KPROF_NOMEM, "out of memory writing JSON");
        goto done;
    }
    if (a->json)
        fputs(js.data, stdout);
    else
        kp_bench_print(&r);
    if (r.kernel_dir[0]) {
        char path[4200];
        snprintf(path, sizeof path, "%s/bench.json", r.kernel_dir);
        /* --compare's file was read before anything ran: replacing it is fine. */
        const char *in[] = {r.info.source_path, NULL};
        st = kp_output_write_file(path, KP_OUTPUT_FORCE, in, js.data, js.len, &err);
        if (st == KPROF_OK && !a->json) printf("  kept in %s\n", path);
    }
    if (st == KPROF_OK && a->plot) {
        st = kp_bench_plot(&r, &plot, &err);
        if (st == KPROF_OK && !a->json) printf("  plot: %s\n", a->plot);
    }
    if (st == KPROF_OK) kp_bench_record(&r, js.data);
    kp_str_free(&js);
done:
    kp_progress_stop(r.progress);
    kp_output_abort(&plot);
    if (st != KPROF_OK) {
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
    } else {
        rc = 0;
        for (int i = 0; i < r.nrows; i++)
            if (r.rows[i].slower_gate) rc = kprof_status_exit_code(KPROF_REGRESSION);
    }
out:
    for (int i = 0; i < r.nrows; i++) {
        for (int s = 0; s < 2; s++) {
            kp_bench_side_free(&r.rows[i].side[s]);
            free(r.rows[i].counters[s]);
        }
        kp_bench_side_free(&r.rows[i].old);
    }
    free(r.rows);
    kp_bench_file_free(r.old);
    kp_str_free(&a->options);
    free(a);
    return rc;
}
