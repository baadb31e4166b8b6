/*
 * lab_options.h — the options `kprof run`, `kprof sweep` and `kprof bench` share, parsed in one
 * place: the kernel's buffers, backend and device, the launch's shared memory, timer, kernel
 * timeout, grid and threadgroup, the compiler's -I and --options, --warmup, --json, --plot,
 * --force, --counters [LIST] and --trace FILE; the checks after the options that the three commands
 * make alike; and the whole parsers of `kprof run` (and its sweep), kp_run_parse, and of `kprof
 * bench`, kp_bench_parse. Every usage error is
 * printed as kp_cli_usage_error prints it and returned as its exit code (2).
 */
#ifndef KP_TOOLS_LAB_OPTIONS_H
#define KP_TOOLS_LAB_OPTIONS_H

#include "backend/backend.h"
#include "base/util.h"
#include "lab/bench.h"
#include "lab/counters.h"

#include <getopt.h>

/* getopt_long codes of the shared options (a command's own options use letters). */
enum {
    KP_LAB_OPT_GRID = 0x100,   /* --grid N|NxM|NxMxK */
    KP_LAB_OPT_TG,             /* --tg (--block, --local) */
    KP_LAB_OPT_BUFFERS,        /* --buffers SPEC */
    KP_LAB_OPT_BACKEND,        /* --backend NAME */
    KP_LAB_OPT_DEVICE,         /* --device N */
    KP_LAB_OPT_SMEM,           /* --smem BYTES */
    KP_LAB_OPT_OPTIONS,        /* --options TEXT */
    KP_LAB_OPT_TIMER,          /* --timer auto|events|cupti */
    KP_LAB_OPT_KERNEL_TIMEOUT, /* run's --timeout, bench's --kernel-timeout */
    KP_LAB_OPT_WARMUP,         /* --warmup N */
    KP_LAB_OPT_JSON,           /* --json */
    KP_LAB_OPT_PLOT,           /* --plot FILE.svg */
    KP_LAB_OPT_FORCE,          /* --force */
    KP_LAB_OPT_COUNTERS,       /* --counters [LIST] */
    KP_LAB_OPT_TRACE,          /* --trace FILE.kprof */
    KP_LAB_OPT_HTML,           /* --html FILE.html */
};

/* The shared options' getopt_long entries, but the kernel timeout's (its name differs: a
 * command adds {"timeout" or "kernel-timeout", required_argument, NULL,
 * KP_LAB_OPT_KERNEL_TIMEOUT}). */
#define KP_LAB_LONGOPTS                                                                            \
    {"grid", required_argument, NULL, KP_LAB_OPT_GRID},                                            \
        {"tg", required_argument, NULL, KP_LAB_OPT_TG},                                            \
        {"block", required_argument, NULL, KP_LAB_OPT_TG},                                         \
        {"local", required_argument, NULL, KP_LAB_OPT_TG},                                         \
        {"buffers", required_argument, NULL, KP_LAB_OPT_BUFFERS},                                  \
        {"backend", required_argument, NULL, KP_LAB_OPT_BACKEND},                                  \
        {"device", required_argument, NULL, KP_LAB_OPT_DEVICE},                                    \
        {"smem", required_argument, NULL, KP_LAB_OPT_SMEM},                                        \
        {"options", required_argument, NULL, KP_LAB_OPT_OPTIONS},                                  \
        {"timer", required_argument, NULL, KP_LAB_OPT_TIMER},                                      \
        {"warmup", required_argument, NULL, KP_LAB_OPT_WARMUP},                                    \
        {"json", no_argument, NULL, KP_LAB_OPT_JSON},                                              \
        {"plot", required_argument, NULL, KP_LAB_OPT_PLOT},                                        \
        {"force", no_argument, NULL, KP_LAB_OPT_FORCE},                                            \
        {"trace", required_argument, NULL, KP_LAB_OPT_TRACE},                                      \
        {"html", required_argument, NULL, KP_LAB_OPT_HTML},                                        \
    {                                                                                              \
        "counters", optional_argument, NULL, KP_LAB_OPT_COUNTERS                                   \
    }

/* The short options the three commands take: -D and -I with a value (-D is the command's). */
#define KP_LAB_SHORTOPTS ":D:I:"

/* What the shared options gave. kp_lab_cli_init sets the defaults; the command points launch
 * and warmup at its own. */
typedef struct kp_lab_cli {
    const char *cmd;                /* names the command in usage errors */
    const char *kernel_timeout_opt; /* "--timeout" (run) or "--kernel-timeout" (bench) */
    int parse_dims;    /* --grid and --tg parsed at once into launch (run); else their texts,
                          expressions in the axes, are kept (bench) */
    kp_launch *launch; /* --smem, --timer, the kernel timeout; with parse_dims grid and tg */
    int *warmup;       /* where --warmup goes */
    const char *grid_text, *tg_text; /* without parse_dims: the last --grid and --tg */
    int grid_dims, tg_dims;          /* with parse_dims: their dimensions (1 by default) */
    int tg_set;                      /* --tg was given */
    int grid_set, smem_set;          /* --grid, --smem were given */
    const char *buffers;
    const char *backend;
    int device;     /* -1: the default */
    kp_str options; /* " -IDIR" and " TEXT" of --options, in order (run adds -D here too) */
    int json, force;
    const char *plot;
    const char *html;           /* --html FILE: the page (export/html.h) */
    const char *trace;          /* --trace FILE: the dispatches as a trace */
    int counters;               /* --counters */
    kp_counters counters_asked; /* the raw names of --counters LIST */
    const char *counters_list;  /* the word --counters took as its LIST, if any */
} kp_lab_cli;

/* Defaults: device -1, dims 1, nothing else given. launch and warmup must be set after. */
void kp_lab_cli_init(kp_lab_cli *o, const char *cmd, const char *kernel_timeout_opt,
                     int parse_dims);

/* Take getopt_long's answer c (optarg and optind as it left them) when it is a shared option,
 * -I, a missing value (':') or an unknown option ('?'): *taken is set to 1 and the return is 0
 * or the usage error's exit code. Any other c is the command's: *taken is 0 and 0 returned. */
int kp_lab_cli_option(kp_lab_cli *o, int c, int argc, char **argv, int *taken);

/* After the options, when no kernel was named: "give a kernel: --counters took 'LIST' as its
 * LIST of metric names (...)" when --counters took a word, else "give a kernel: " what. Returns
 * the usage error's exit code. */
int kp_lab_cli_no_kernel(const kp_lab_cli *o, const char *what);

/* --buffers is required: 0, or "--buffers is required: one item per kernel argument, e.g. "
 * example and its exit code. */
int kp_lab_cli_need_buffers(const kp_lab_cli *o, const char *example);

/* Whether target is a captured launch (`kprof trace --capture`: NAME@N): 1 and *cap filled
 * (--buffers given with one: *rc the usage error's exit code), 0 when it is not, -1 with *rc the
 * exit code when it is one kprof cannot read (printed). */
int kp_lab_cli_capture(const kp_lab_cli *o, const char *target, kp_lab_capture_target *cap,
                       int *rc);

/* --plot names an .svg file: 0, or the usage error's exit code. */
int kp_lab_cli_check_plot(const kp_lab_cli *o);

/* --html names a file (not '-': standard output has the table or the JSON) that --plot and
 * --trace do not name too: 0, or the usage error's exit code. */
int kp_lab_cli_check_html(const kp_lab_cli *o);

/* The lab options one at a time: each 0, or the usage error's exit code after printing
 * "OPT 'TEXT': ..." for cmd. --device N; --smem BYTES into launch->dyn_local; --timer
 * auto|events|cupti into launch->timer; a kernel timeout (seconds > 0, under the option name
 * opt) into launch->timeout_s. */
int kp_cli_parse_device(const char *cmd, const char *text, int *out);
int kp_cli_parse_smem(const char *cmd, const char *text, kp_launch *launch);
int kp_cli_parse_timer(const char *cmd, const char *text, kp_launch *launch);
int kp_cli_parse_kernel_timeout(const char *cmd, const char *opt, const char *text,
                                kp_launch *launch);

/* --counters [LIST] for cmd (run, sweep, bench), met by getopt_long as an option with an optional
 * argument: `--counters=LIST`, or `--counters LIST` where the next argument looks like a LIST —
 * it holds "__" (every ncu metric name does: dram__bytes_read.sum) or a comma, and does not
 * start with '-' — and is then taken (*optind moves past it; *taken, when not NULL, names it).
 * A word that looks like a kernel is never taken: one that exists as a file or folder, holds a
 * '/', or ends in .cu, .cl, .ptx, .cubin or .json. Plain `--counters` asks for the standard set
 * alone. 0, or the usage error's exit code (a malformed LIST: exit 2). */
int kp_run_parse_counters(const char *cmd, const char *optarg_text, int argc, char **argv,
                          int *optind_io, kp_counters *c, const char **taken);

/* Parse `kprof run` arguments (argv[0] is the command; a->sweep set before: `kprof sweep`) into
 * a (run.h). 0 or a usage exit code (printed). */
struct kp_run_args;
int kp_run_parse(int argc, char **argv, struct kp_run_args *a);

/* The command line: what to measure (lab/bench.h), and what to do with it. */
typedef struct kp_bench_args {
    kp_bench_plan plan;
    kp_str options; /* -I and --options (plan.options points into it) */
    const char *compare_file;
    double fail_if_slower; /* fraction; < 0: not asked */
    int json;
    const char *plot;
    const char *html; /* --html FILE.html: the bench's page */
    int plot_throughput;
    int force;
    const char *trace;                   /* --trace FILE */
    char replay_grid[64], replay_tg[64]; /* a captured launch's geometry, as --grid and --tg */
} kp_bench_args;

/* Parse `kprof bench` arguments (argv[0] is the command) into a: the axes, the formulas checked
 * against them, the compiler options checked (kp_cli_check_compiler_options). a->options is
 * the caller's to free, whatever the outcome. 0 or a usage exit code (printed). */
int kp_bench_parse(int argc, char **argv, kp_bench_args *a);

#endif
