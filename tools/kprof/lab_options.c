/*
 * lab_options.c — the options `kprof run`, `kprof sweep` and `kprof bench` share, and the
 * parsers of `kprof run` and `kprof bench` (lab_options.h).
 */
#include "tools/kprof/lab_options.h"

#include "base/outfile.h"
#include "core/expr.h"
#include "lab/kernel_dir.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/run.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int kp_cli_parse_device(const char *cmd, const char *text, int *out)
{
    uint64_t v;
    if (kp_parse_size(text, &v) != 0 || v > 1 << 20)
        return kp_cli_usage_error(cmd, "--device '%s': expected a device number", text);
    *out = (int)v;
    return 0;
}

int kp_cli_parse_smem(const char *cmd, const char *text, kp_launch *launch)
{
    if (kp_parse_size(text, &launch->dyn_local) != 0)
        return kp_cli_usage_error(cmd, "--smem '%s': expected a byte count", text);
    return 0;
}

int kp_cli_parse_timer(const char *cmd, const char *text, kp_launch *launch)
{
    if (strcmp(text, "auto") == 0)
        launch->timer = KP_TIMER_AUTO;
    else if (strcmp(text, "events") == 0)
        launch->timer = KP_TIMER_EVENTS;
    else if (strcmp(text, "cupti") == 0)
        launch->timer = KP_TIMER_CUPTI;
    else
        return kp_cli_usage_error(cmd, "--timer '%s': choose auto, events or cupti", text);
    return 0;
}

int kp_cli_parse_kernel_timeout(const char *cmd, const char *opt, const char *text,
                                kp_launch *launch)
{
    if (kp_cli_parse_double(text, &launch->timeout_s, NULL) != KPROF_OK || launch->timeout_s <= 0)
        return kp_cli_usage_error(cmd, "%s '%s': expected seconds > 0", opt, text);
    return 0;
}

/* Whether a word after --counters looks like a kernel, never a LIST: a file or folder that
 * exists, a path (a '/'), or a kernel's or a spec's extension. */
static int kp_run_looks_like_kernel(const char *word)
{
    static const char *const exts[] = {"cu", "cl", "ptx", "cubin", "json"};
    struct stat st;
    if (strchr(word, '/') || stat(word, &st) == 0) return 1;
    const char *ext = kp_path_extension(word);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (strcmp(ext, exts[i]) == 0) return 1;
    return 0;
}

int kp_run_parse_counters(const char *cmd, const char *optarg_text, int argc, char **argv,
                          int *optind_io, kp_counters *c, const char **taken)
{
    const char *list = optarg_text;
    if (taken) *taken = NULL;
    if (!list && *optind_io < argc) {
        const char *next = argv[*optind_io];
        if (next[0] != '-' && (strstr(next, "__") || strchr(next, ',')) &&
            !kp_run_looks_like_kernel(next)) {
            list = next;
            if (taken) *taken = next;
            (*optind_io)++;
        }
    }
    if (!list) return 0;
    kp_error err = {0};
    if (kp_counters_parse_list(list, c, &err) != KPROF_OK) {
        int rc = kp_cli_usage_error(cmd, "%s", err.message);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}

void kp_lab_cli_init(kp_lab_cli *o, const char *cmd, const char *kernel_timeout_opt, int parse_dims)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->kernel_timeout_opt = kernel_timeout_opt;
    o->parse_dims = parse_dims;
    o->device = -1;
    o->grid_dims = o->tg_dims = 1;
}

int kp_lab_cli_option(kp_lab_cli *o, int c, int argc, char **argv, int *taken)
{
    const char *cmd = o->cmd;
    uint64_t v;
    *taken = 1;
    switch (c) {
    case KP_LAB_OPT_GRID:
        o->grid_set = 1;
        if (!o->parse_dims) {
            o->grid_text = optarg;
        } else if (kp_cli_parse_dims(optarg, o->launch->grid, &o->grid_dims, NULL) != KPROF_OK) {
            return kp_cli_usage_error(cmd,
                                      "--grid '%s': expected N, NxM or NxMxK of "
                                      "positive whole numbers",
                                      optarg);
        }
        return 0;
    case KP_LAB_OPT_TG:
        o->tg_set = 1;
        if (!o->parse_dims) {
            o->tg_text = optarg;
        } else if (kp_cli_parse_dims(optarg, o->launch->tg, &o->tg_dims, NULL) != KPROF_OK) {
            return kp_cli_usage_error(cmd,
                                      "--tg '%s': expected N, NxM or NxMxK of positive "
                                      "whole numbers",
                                      optarg);
        }
        return 0;
    case KP_LAB_OPT_BUFFERS:
        o->buffers = optarg;
        return 0;
    case KP_LAB_OPT_BACKEND:
        o->backend = optarg;
        return 0;
    case KP_LAB_OPT_DEVICE:
        return kp_cli_parse_device(cmd, optarg, &o->device);
    case KP_LAB_OPT_SMEM:
        o->smem_set = 1;
        return kp_cli_parse_smem(cmd, optarg, o->launch);
    case KP_LAB_OPT_TIMER:
        return kp_cli_parse_timer(cmd, optarg, o->launch);
    case KP_LAB_OPT_KERNEL_TIMEOUT:
        return kp_cli_parse_kernel_timeout(cmd, o->kernel_timeout_opt, optarg, o->launch);
    case KP_LAB_OPT_OPTIONS:
        kp_str_printf(&o->options, " %s", optarg);
        return 0;
    case 'I':
        kp_str_printf(&o->options, " -I%s", optarg);
        return 0;
    case KP_LAB_OPT_WARMUP:
        if (kp_parse_size(optarg, &v) != 0 || v > 1000000)
            return kp_cli_usage_error(cmd, "--warmup '%s': expected 0 to 1000000", optarg);
        *o->warmup = (int)v;
        return 0;
    case KP_LAB_OPT_JSON:
        o->json = 1;
        return 0;
    case KP_LAB_OPT_PLOT:
        o->plot = optarg;
        return 0;
    case KP_LAB_OPT_HTML:
        if (!*optarg) return kp_cli_usage_error(o->cmd, "--html needs a file name");
        o->html = optarg;
        return 0;
    case KP_LAB_OPT_FORCE:
        o->force = 1;
        return 0;
    case KP_LAB_OPT_TRACE:
        o->trace = optarg;
        return 0;
    case KP_LAB_OPT_COUNTERS:
        o->counters = 1;
        return kp_run_parse_counters(cmd, optarg, argc, argv, &optind, &o->counters_asked,
                                     &o->counters_list);
    case ':':
        return kp_cli_usage_error(cmd, "%s needs a value", argv[optind - 1]);
    case '?':
        return kp_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    default:
        *taken = 0;
        return 0;
    }
}

int kp_lab_cli_no_kernel(const kp_lab_cli *o, const char *what)
{
    if (o->counters_list)
        return kp_cli_usage_error(o->cmd,
                                  "give a kernel: --counters took '%s' as its LIST of "
                                  "metric names (write --counters=LIST, or name the kernel "
                                  "as a path)",
                                  o->counters_list);
    return kp_cli_usage_error(o->cmd, "give a kernel: %s", what);
}

int kp_lab_cli_capture(const kp_lab_cli *o, const char *target, kp_lab_capture_target *cap, int *rc)
{
    kp_error err = {0};
    *rc = 0;
    int is = kp_lab_capture_target_read(target, cap, &err);
    if (is < 0) {
        *rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return -1;
    }
    /* NAME@N with no such folder: a capture was meant, and --buffers is not what is missing. */
    char dir[4096];
    const char *at = strrchr(target, '@');
    if (!is && at && at != target && !strchr(target, '/') && !kp_path_exists(target) &&
        kp_kernel_dir(target, dir, sizeof dir, NULL) == KPROF_OK && !kp_path_exists(dir)) {
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "no captured launch %s: %s does not exist (make it with `kprof trace "
                     "--capture %.*s%s -o run.kprof -- PROG`)",
                     target, dir, (int)(at - target), target, at);
        *rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return -1;
    }
    if (is && o->buffers)
        *rc = kp_cli_usage_error(o->cmd,
                                 "%s is a captured launch: it brings its own arguments and "
                                 "buffers (those of the program); drop --buffers",
                                 target);
    return is;
}

int kp_lab_cli_need_buffers(const kp_lab_cli *o, const char *example)
{
    if (o->buffers) return 0;
    return kp_cli_usage_error(
        o->cmd, "--buffers is required: one item per kernel argument, e.g. %s", example);
}

int kp_lab_cli_check_html(const kp_lab_cli *o)
{
    if (!o->html) return 0;
    if (strcmp(o->html, "-") == 0)
        return kp_cli_usage_error(o->cmd, "--html writes a file: standard output has the %s",
                                  o->json ? "JSON" : "table");
    const char *others[] = {o->plot, o->trace};
    const char *what[] = {"--plot", "--trace"};
    for (int i = 0; i < 2; i++)
        if (others[i] &&
            (strcmp(others[i], o->html) == 0 || kp_output_same_file(others[i], o->html)))
            return kp_cli_usage_error(o->cmd, "--html and %s name one file, '%s'", what[i],
                                      o->html);
    return 0;
}

int kp_lab_cli_check_plot(const kp_lab_cli *o)
{
    if (o->plot && strcmp(kp_path_extension(o->plot), "svg") != 0)
        return kp_cli_usage_error(o->cmd, "--plot '%s': the plot is SVG; name a .svg file",
                                  o->plot);
    return 0;
}

int kp_run_parse(int argc, char **argv, kp_run_args *a)
{
    static const struct option longopts[] = {
        KP_LAB_LONGOPTS,
        {"entry", required_argument, NULL, 'e'},
        {"iters", required_argument, NULL, 'n'},
        {"bytes", required_argument, NULL, 'B'},
        {"timeout", required_argument, NULL, KP_LAB_OPT_KERNEL_TIMEOUT},
        {"sweep-tg", no_argument, NULL, 'S'},
        {"tg-list", required_argument, NULL, 'L'},
        {"source", optional_argument, NULL, 'H'},
        {"time-budget", required_argument, NULL, 'U'},
        {NULL, 0, NULL, 0},
    };
    int sweep = a->sweep;                      /* `kprof sweep` sets it before parsing */
    const char *cmd = sweep ? "sweep" : "run"; /* the command usage errors name */
    memset(a, 0, sizeof *a);
    a->sweep = sweep;
    a->iters = 50;
    a->warmup = 3;
    a->time_budget_s = KP_RUN_TIME_BUDGET_S;
    a->launch.dims = 1;
    a->launch.grid[0] = 1048576;
    a->launch.tg[0] = 256;
    a->launch.grid[1] = a->launch.grid[2] = a->launch.tg[1] = a->launch.tg[2] = 1;
    kp_lab_cli o;
    kp_lab_cli_init(&o, cmd, "--timeout", 1);
    o.launch = &a->launch;
    o.warmup = &a->warmup;
    uint64_t v;
    int rc = 0, taken;
    opterr = 0;
    optind = 1;
    int c;
    while (rc == 0 && (c = getopt_long(argc, argv, KP_LAB_SHORTOPTS, longopts, NULL)) != -1) {
        if ((rc = kp_lab_cli_option(&o, c, argc, argv, &taken)) != 0 || taken) continue;
        switch (c) {
        case 'e':
            a->lab.entry = optarg;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 1000000) {
                rc = kp_cli_usage_error(cmd, "--iters '%s': expected 1 to 1000000", optarg);
                break;
            }
            a->iters = (int)v;
            a->iters_set = 1;
            break;
        case 'U': {
            char *end = NULL;
            double secs = strtod(optarg, &end);
            if (end && end != optarg && strcmp(end, "s") == 0) end++;
            if (strcmp(optarg, "off") == 0) secs = 0, end = optarg + 3;
            if (!end || end == optarg || *end || !(secs >= 0) || secs > 1e6) {
                rc = kp_cli_usage_error(cmd,
                                        "--time-budget '%s': expected seconds, e.g. 15 "
                                        "or 2.5s (0 or off: no budget)",
                                        optarg);
                break;
            }
            a->time_budget_s = secs;
            break;
        }
        case 'B':
            if (kp_parse_size(optarg, &a->bytes) != 0 || a->bytes == 0) {
                rc =
                    kp_cli_usage_error(cmd, "--bytes '%s': expected a positive byte count", optarg);
                break;
            }
            a->have_bytes = 1;
            break;
        case 'S':
            a->sweep = 1;
            break;
        case 'L':
            a->tg_list = optarg;
            a->sweep = 1;
            break;
        case 'H':
            a->source = 10;
            if (optarg && (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 100000)) {
                rc = kp_cli_usage_error(cmd, "--source=%s: expected 1 to 100000 lines", optarg);
                break;
            }
            if (optarg) a->source = (int)v;
            break;
        case 'D':
            kp_str_printf(&o.options, " -D%s", optarg);
            break;
        }
    }
    a->options = o.options; /* freed by the caller, whatever the outcome */
    a->lab.buffers = o.buffers;
    a->lab.backend = o.backend;
    a->lab.device = o.device;
    a->json = o.json;
    a->plot = o.plot;
    a->html = o.html;
    a->force = o.force;
    a->trace = o.trace;
    a->counters = o.counters;
    a->counters_asked = o.counters_asked;
    if (rc != 0) return rc;
    if (optind >= argc) return kp_lab_cli_no_kernel(&o, "a NAME made by `kprof isolate` or a FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    a->lab.target = argv[optind];
    /* A captured launch (NAME@N) brings its arguments, and its geometry unless --grid, --tg or
     * --smem say otherwise (the output check is then still of the captured geometry). */
    kp_lab_capture_target cap;
    int is_capture = kp_lab_cli_capture(&o, a->lab.target, &cap, &rc);
    if (rc != 0) return rc;
    if (is_capture) {
        a->replay = 1;
        a->replay_launch = cap.launch;
        if (!o.grid_set) {
            memcpy(a->launch.grid, cap.launch.grid, sizeof a->launch.grid);
            o.grid_dims = cap.launch.dims;
        }
        if (!o.tg_set && !a->sweep) {
            memcpy(a->launch.tg, cap.launch.tg, sizeof a->launch.tg);
            o.tg_dims = cap.launch.dims;
        }
        if (!o.smem_set) a->launch.dyn_local = cap.launch.dyn_local;
        a->replay_moved = o.grid_set || o.tg_set || o.smem_set;
    } else if ((rc = kp_lab_cli_need_buffers(&o, "f32:1048576,f32:1048576,u32=1048576")) != 0) {
        return rc;
    }
    if (a->source && a->sweep)
        return kp_cli_usage_error(cmd, "--source samples one run's kernel: not with a sweep");
    if (a->trace && a->sweep)
        return kp_cli_usage_error(cmd, "--trace writes one run's dispatches: not with a sweep "
                                       "(kprof bench --axis --trace writes every point's)");
    if (a->plot && !a->sweep)
        return kp_cli_usage_error(cmd, "--plot draws a sweep: add --sweep-tg (or use kprof "
                                       "sweep)");
    if ((rc = kp_lab_cli_check_plot(&o)) != 0) return rc;
    if ((rc = kp_lab_cli_check_html(&o)) != 0) return rc;
    if (a->html && !a->sweep)
        return kp_cli_usage_error(cmd, "--html is a sweep's page here: add --sweep-tg (or use "
                                       "kprof sweep; kprof bench --html for a bench)");
    /* With a sweep, --tg is one more size to sweep, marked "your --tg": a run command becomes a
     * sweep by adding --sweep-tg. */
    int grid_dims = o.grid_dims, tg_dims = o.tg_dims;
    a->tg_set = o.tg_set;
    if (a->sweep && !o.tg_set) tg_dims = grid_dims; /* the sweep chooses the sizes */
    if (grid_dims != tg_dims)
        return kp_cli_usage_error(cmd, "--grid has %d dimension%s but --tg has %d", grid_dims,
                                  grid_dims == 1 ? "" : "s", tg_dims);
    a->launch.dims = grid_dims;
    if (a->options.failed) return kp_cli_nomem();
    a->lab.options = a->options.data ? a->options.data : "";
    return kp_cli_check_compiler_options(cmd, a->lab.options);
}

/* ---- kprof bench --------------------------------------------------------------------------- */

static int kp_bench_parse_axis(kp_bench_args *a, const char *text)
{
    if (a->plan.naxes == KP_BENCH_MAX_AXES)
        return kp_cli_usage_error("bench", "at most %d --axis options", KP_BENCH_MAX_AXES);
    const char *eq = strchr(text, '=');
    kp_bench_axis *ax = &a->plan.axes[a->plan.naxes];
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
    for (int i = 0; i < a->plan.naxes; i++)
        if (strcmp(a->plan.axes[i].name, ax->name) == 0)
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
        kp_error why = {0};
        if (kp_expr_eval(v->text, NULL, &v->value, &why) == KPROF_OK) {
            v->numeric = 1;
        } else {
            /* A word ("f32", "float4") is a text value; anything else is a typing error. */
            for (const char *c = v->text; *c; c++)
                if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.'))
                    return kp_cli_usage_error("bench", "--axis %s value '%s': %s", ax->name,
                                              v->text, why.message);
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
    a->plan.naxes++;
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
            if (a->plan.nentries == 2)
                return kp_cli_usage_error("bench", "--entry at most twice (A and B)");
            a->plan.entries[a->plan.nentries++] = optarg;
            break;
        case 'D':
            if (a->plan.ndefines == KP_BENCH_MAX_DEFINES)
                return kp_cli_usage_error("bench", "at most %d -D options", KP_BENCH_MAX_DEFINES);
            a->plan.defines[a->plan.ndefines++] = optarg;
            break;
        case 'B':
            a->plan.bytes_expr = optarg;
            break;
        case 'f':
            a->plan.flops_expr = optarg;
            break;
        case 'a':
            if ((rc = kp_bench_parse_axis(a, optarg)) != 0) return rc;
            break;
        case 'C':
            if (strcmp(optarg, "hot") == 0)
                a->plan.hot = 1;
            else if (strcmp(optarg, "cold") == 0)
                a->plan.cold = 1;
            else if (strcmp(optarg, "both") == 0)
                a->plan.hot = a->plan.cold = 1;
            else
                return kp_cli_usage_error("bench", "--cache '%s': choose hot, cold or both",
                                          optarg);
            break;
        case 'O':
            a->plan.cold = 1;
            break;
        case 'H':
            a->plan.hot = 1;
            break;
        case 'N':
            if ((rc = kp_cli_parse_percent("bench", "--max-noise", optarg, 0.001, 100,
                                           &a->plan.cfg.max_noise)) != 0)
                return rc;
            break;
        case 'm':
            if (kp_cli_parse_double(optarg, &d, NULL) != KPROF_OK || d > 3600)
                return kp_cli_usage_error("bench", "--min-time '%s': expected 0 to 3600 seconds",
                                          optarg);
            a->plan.cfg.min_time_s = d;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 1000000)
                return kp_cli_usage_error("bench", "--min-samples '%s': expected 1 to 1000000",
                                          optarg);
            a->plan.cfg.min_samples = (int)v;
            break;
        case 'T':
            if (kp_cli_parse_double(optarg, &d, NULL) != KPROF_OK || d <= 0 || d > 86400)
                return kp_cli_usage_error("bench", "--timeout '%s': expected seconds > 0", optarg);
            a->plan.cfg.timeout_s = d;
            break;
        case 'R':
            if ((rc = kp_cli_parse_percent("bench", "--throttle", optarg, 0, 100,
                                           &a->plan.cfg.throttle_fraction)) != 0)
                return rc;
            break;
        case 'h':
            if ((rc = kp_cli_parse_percent("bench", "--threshold", optarg, 0.01, 100,
                                           &a->plan.cfg.threshold)) != 0)
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
            a->plan.repeat = (int)v;
            break;
        }
    }
    return 0;
}

int kp_bench_parse(int argc, char **argv, kp_bench_args *a)
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
    a->plan.repeat = 1;
    kp_bench_config_default(&a->plan.cfg);
    kp_lab_cli o;
    kp_lab_cli_init(&o, "bench", "--kernel-timeout", 0);
    o.launch = &a->plan.launch;
    o.warmup = &a->plan.cfg.warmup;
    int rc = kp_bench_parse_options(argc, argv, longopts, &o, a);
    a->options = o.options; /* freed by the caller, whatever the outcome */
    a->plan.options = a->options.data;
    a->plan.grid = o.grid_text ? o.grid_text : "1048576";
    a->plan.tg = o.tg_text ? o.tg_text : "256";
    a->plan.buffers = o.buffers;
    a->plan.backend = o.backend;
    a->plan.device = o.device;
    a->json = o.json;
    a->plot = o.plot;
    a->html = o.html;
    a->force = o.force;
    a->trace = o.trace;
    a->plan.counters = o.counters;
    a->plan.counters_asked = o.counters_asked;
    if (rc != 0) return rc;
    for (; optind < argc; optind++) {
        if (a->plan.ntargets == 2)
            return kp_cli_usage_error("bench",
                                      "unexpected argument '%s': give one kernel, or "
                                      "two to compare (A B)",
                                      argv[optind]);
        a->plan.targets[a->plan.ntargets++] = argv[optind];
    }
    if (a->plan.ntargets == 0)
        return kp_lab_cli_no_kernel(&o, "a NAME made by `kprof isolate` or a FILE (two to "
                                        "compare them)");
    /* A captured launch (NAME@N) brings its arguments and geometry; the other side of an A/B
     * (an edited copy: `kprof isolate NEW --from NAME@N`) is bound with the same capture. */
    kp_lab_capture_target cap;
    int captures = 0;
    for (int t = 0; t < a->plan.ntargets; t++) {
        int is = kp_lab_cli_capture(&o, a->plan.targets[t], &cap, &rc);
        if (rc != 0) return rc;
        if (!is || captures++) continue;
        a->plan.replay = a->plan.targets[t];
        if (!o.grid_text) {
            kp_dims_text(cap.launch.grid, cap.launch.dims, a->replay_grid, sizeof a->replay_grid);
            a->plan.grid = a->replay_grid;
        }
        if (!o.tg_text) {
            kp_dims_text(cap.launch.tg, cap.launch.dims, a->replay_tg, sizeof a->replay_tg);
            a->plan.tg = a->replay_tg;
        }
        if (!o.smem_set) a->plan.launch.dyn_local = cap.launch.dyn_local;
    }
    if (a->plan.replay && a->plan.naxes > 0)
        return kp_cli_usage_error("bench",
                                  "%s is a captured launch: its buffers are the "
                                  "program's, so --axis has nothing to vary",
                                  a->plan.replay);
    if (!a->plan.replay &&
        (rc = kp_lab_cli_need_buffers(&o, "f32:N,f32:N,u32=N with --axis N=1M,4M")) != 0)
        return rc;
    int sides = a->plan.ntargets == 2 || a->plan.nentries == 2 ? 2 : 1;
    if (sides == 2 && a->compare_file)
        return kp_cli_usage_error("bench", "--compare FILE compares with an earlier run: give "
                                           "one kernel with it, not two");
    if (a->fail_if_slower >= 0 && sides == 1 && !a->compare_file)
        return kp_cli_usage_error("bench", "--fail-if-slower needs a comparison: two kernels "
                                           "(A B, or --entry twice) or --compare FILE");
    if (!a->plan.hot && !a->plan.cold) a->plan.hot = 1;
    if ((rc = kp_lab_cli_check_html(&o)) != 0) return rc;
    if (a->plot) {
        if ((rc = kp_lab_cli_check_plot(&o)) != 0) return rc;
        int varying = 0;
        for (int i = 0; i < a->plan.naxes; i++)
            varying += a->plan.axes[i].nvalues > 1;
        if (varying != 1)
            return kp_cli_usage_error("bench", "--plot draws one axis against time or "
                                               "throughput: give exactly one --axis with "
                                               "several values");
    }
    if (a->plot_throughput == 2 && !a->plan.flops_expr)
        return kp_cli_usage_error("bench", "--plot-y gflops needs --flops EXPR");
    if (a->options.failed) return kp_cli_nomem();
    { /* -D NAME[=EXPR] and the rest as the compiler will see them, axes not yet substituted */
        kp_str all = {0};
        for (int i = 0; i < a->plan.ndefines; i++)
            kp_str_printf(&all, " -D%s", a->plan.defines[i]);
        if (a->options.data) kp_str_append(&all, a->options.data);
        if (all.failed) {
            kp_str_free(&all);
            return kp_cli_nomem();
        }
        int bad = kp_cli_check_compiler_options("bench", all.data);
        kp_str_free(&all);
        if (bad) return bad;
    }
    /* Every formula must name only axes: checked now, not after minutes of measuring. */
    kp_vars probe = {0};
    for (int i = 0; i < a->plan.naxes; i++) {
        probe.v[probe.n] = a->plan.axes[i].values[0];
        probe.n++;
    }
    const char *formulas[2] = {a->plan.bytes_expr, a->plan.flops_expr};
    const char *names[2] = {"--bytes", "--flops"};
    for (int i = 0; i < 2; i++) {
        if (!formulas[i]) continue;
        kp_error why = {0};
        double x;
        if (kp_expr_eval(formulas[i], &probe, &x, &why) != KPROF_OK)
            return kp_cli_usage_error("bench", "%s '%s': %s", names[i], formulas[i], why.message);
    }
    return 0;
}
