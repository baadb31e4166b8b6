/*
 * bench.h — `kprof bench`'s measurement: one kernel (or two, interleaved) timed until its median
 * is known well enough, with cold caches when asked, throttled samples discarded, and an A/B
 * verdict with its confidence interval.
 *
 * The stopping rule (nvbench's as the floor):
 *   - never before min_samples samples and min_time_s of device time (per kernel; a cold
 *     sample's flush counts);
 *   - then stop when the noise of the median — the half-width of its block-aware 95% interval
 *     relative to it (core/judge.h: blocks at least a batch, and as long as the samples'
 *     autocorrelation reaches) — is at most max_noise for every kernel and the run is stable:
 *     KP_JUDGE_MIN_BLOCKS blocks or more, no drift between its halves, no two modes that share
 *     the samples (NOISE);
 *   - or when that noise has settled: it no longer shrinks as samples grow (SETTLED: a timer's
 *     quantum or a noise floor; more samples would not help);
 *   - or, comparing two kernels, when the engine's verdict is decided (DECIDED: FASTER, SLOWER or
 *     SAME with no reason to doubt it: core/judge.h's rules, a busy machine included);
 *   - or at timeout_s of wall time (TIMEOUT), or max_samples (SAMPLES).
 * The rule is checked each time the samples have grown by a tenth, so its cost stays a small
 * share of the run.
 *
 * Samples are taken in batches sized to about batch_s of device time (at least one; comparing, a
 * quarter of it, sized by the kernels' device time), each kernel in turn: A's batch, B's batch,
 * A's… The i-th samples of A and B are a pair, taken milliseconds apart, so drift (clocks,
 * temperature, other work) cancels in the comparison. The interval of the ratio is a block
 * bootstrap over batches (compare.h): what the samples of one batch share widens it rather than
 * passing for agreement, and a verdict may stop the measurement only after KP_BENCH_MIN_ROUNDS
 * rounds.
 *
 * Throttling: where the device's SM clock can be read (CUDA through NVML: kp_lab_clock), it is
 * read before and after every batch; a round whose lowest reading is below throttle_fraction of
 * the default clock is discarded (every kernel's batch of it, so pairs stay pairs), counted and
 * its reasons kept. The clock at each kept sample (the mean of the readings around its batch)
 * makes cycles = ms x MHz, and a comparison is confirmed in cycles too.
 *
 * Nothing here prints; progress goes through the optional callback.
 *
 * Above the measurement, a bench's points (below): each point of the axes set up, opened,
 * measured hot and cold, its counters read, with --repeat in sessions of its own.
 */
#ifndef KP_LAB_BENCH_H
#define KP_LAB_BENCH_H

#include "core/compare.h"
#include "core/judge.h"
#include "core/readings.h"
#include "core/stats.h"
#include "core/expr.h"
#include "lab/counters.h"
#include "lab/lab.h"

#include <stdio.h>

#define KP_BENCH_MIN_ROUNDS 30
#define KP_BENCH_MAX_REPEAT 32 /* --repeat R: independent sessions a point */

typedef struct kp_bench_config {
    double max_noise;         /* 0.005: the median known to +-0.5% */
    double min_time_s;        /* 0.5: GPU time per kernel before any rule may stop */
    int min_samples;          /* 10 */
    double timeout_s;         /* 15: wall time of one measurement */
    int warmup;               /* untimed dispatches of each kernel first (3) */
    int cold;                 /* flush the device's cache before every sample */
    double throttle_fraction; /* 0.75 */
    double threshold;         /* a comparison's SAME band: +-threshold (0.01) */
    size_t max_samples;       /* per kernel (1,000,000) */
    double batch_s;           /* device time per batch (0.01) */
    /* kprof_benchmark's (libkprof); kprof bench leaves them 0: */
    size_t max_batch;  /* samples a batch at most (0: 10,000), so that a short run still has
                          the rounds a block-aware interval and a verdict need */
    int floor_first;   /* the timeout stops only once min_samples are kept (its budget_s) */
    int noise_off;     /* neither NOISE nor SETTLED stops (its max_noise 0) */
    int warmup_exact;  /* warmup 0 is none (kprof bench warms up once at least) */
    double min_effect; /* a comparison's smallest effect that matters, ms (0: none) */
} kp_bench_config;

/* The defaults above. */
void kp_bench_config_default(kp_bench_config *c);

typedef enum kp_bench_stop {
    KP_BENCH_STOP_NOISE,
    KP_BENCH_STOP_SETTLED,
    KP_BENCH_STOP_DECIDED,
    KP_BENCH_STOP_TIMEOUT,
    KP_BENCH_STOP_SAMPLES,
} kp_bench_stop;

/* "noise", "settled", "decided", "timeout", "samples". */
const char *kp_bench_stop_name(kp_bench_stop s);

/* One kernel's samples and what follows from them. */
typedef struct kp_bench_side {
    /* Set by the caller (lab NULL: samples given, e.g. read from an earlier bench.json). */
    kp_lab *lab;
    kp_launch launch;
    /* Two sides may share one lab (two kernels of one file): before each of its batches the
     * lab switches to this side's kernel (kp_lab_use_kernel), so both run in one process, on
     * one set of buffers, from one compiled program. NULL: the lab's kernel as it is. */
    const char *entry;
    /* Samples kept, in order (ms), and the SM clock at each (MHz; NULL when none was read):
     * heap, kp_bench_side_free. */
    double *ms, *mhz;
    size_t n, cap;
    size_t taken;         /* samples timed, kept or not */
    size_t rounds;        /* batches kept: the samples came in about n / rounds at a time (samples
                             given by the caller: set it from theirs, or leave 0 for one at a time) */
    size_t throttled;     /* of them, discarded: taken while the clock was throttled */
    double gpu_s;         /* device time of every sample taken, and of the flushes before them (the
                             --min-time floor is device time spent, so a cold sample counts its
                             flush) */
    double flush_ms;      /* cold: the median cost of one flush (not in the samples); 0 hot */
    double min_clock_mhz; /* lowest clock read (0: none read) */
    double default_clock_mhz;  /* the device's default SM clock (0: not read) */
    char clock_note[160];      /* why no clock was read, or "" */
    uint64_t throttle_reasons; /* NVML's reason bits seen in discarded rounds */
    /* --repeat: the medians of the independent sessions these samples came from, in order
     * (nruns 0 or 1: one session). */
    double run_median[KP_BENCH_MAX_REPEAT];
    int nruns;
    /* Summary (kp_bench_summarise). */
    kp_stats stats;
    kp_shape shape;     /* blocks, drift, modes (core/judge.h) */
    kp_estimate median; /* the median and its 95% interval, ms: block-aware (shape.median) */
    double noise;       /* its relative half-width */
    double rsd;         /* relative standard deviation of the samples */
    double clock_mhz;   /* median of mhz[] (0: none) */
} kp_bench_side;

void kp_bench_side_free(kp_bench_side *s);

/* Append samples (the caller's, e.g. an earlier run's); mhz may be NULL. */
kprof_status kp_bench_side_add(kp_bench_side *s, const double *ms, const double *mhz, size_t n,
                               kp_error *err);

/* Fill stats, median, noise, rsd and clock_mhz from the kept samples (n >= 1). */
kprof_status kp_bench_summarise(kp_bench_side *s, kp_error *err);

typedef struct kp_bench_outcome {
    kp_bench_stop stop;
    double wall_s;
    /* Comparing (two sides): ratio = median(B) / median(A) with its 95% interval (bootstrap),
     * the verdict in time, and where clocks were read for both, the same in cycles. */
    int compared;
    int paired;
    kp_estimate ratio;
    kp_compare_verdict verdict;
    int have_cycles;
    kp_estimate cycles_ratio;
    kp_compare_verdict cycles_verdict;
    kp_compare_verdict final_verdict; /* verdict, or UNSURE when cycles do not confirm it */
    kp_judgement judgement;           /* the engine's answer in time: reasons and words */
    /* What the comparison knew, set before kp_bench_compare (kp_bench_measure sets the busy
     * figures; the caller the runs): */
    double busy_cpus;          /* CPUs other processes took while measuring (-1: unknown,
                                  or a device whose kernels do not run on the host) */
    double measured_busy_cpus; /* the same measured whatever the device (-1: unknown) */
    double ncpus;              /* the host's CPUs */
    double run_ratio[KP_BENCH_MAX_REPEAT]; /* --repeat, paired: each session's ratio B/A */
    int nrun_ratios;
    /* A and B ran in sessions of their own (two labs) on a device whose kernels run on the
     * host's CPUs, where two processes running the very same kernel can differ by a few percent
     * (memory placement): the pair is judged as two runs (core/judge.h's one run a side) unless
     * --repeat measured the sessions' spread. Set by kp_bench_measure. */
    int separate_sessions;
    int across_runs; /* what the comparison was judged as (set by kp_bench_compare) */
} kp_bench_outcome;

/* The CI gate of --fail-if-slower P (fraction): B is slower than A by more than P — the
 * engine's verdict SLOWER with no reason to doubt it, its interval (widened to the runs' spread
 * where there are several) wholly above 1 + P (with one run a side across runs, above
 * 1 + P + the run allowance), and the cycles' too where clocks were read. */
int kp_bench_outcome_fails(const kp_bench_outcome *o, double fail_if_slower);

/* Called after each check: the sides, the samples so far of the first, the noise now. */
typedef void (*kp_bench_progress_fn)(void *user, const kp_bench_side *sides, int nsides,
                                     double noise, double elapsed_s);

/* What takes the samples the rule measures: the lab's kernels (kp_bench_measure), libkprof's
 * callbacks (kprof_benchmark), a test's synthetic numbers. One rule, kp_bench_measure_with,
 * whatever takes them. */
typedef struct kp_bench_sampler {
    void *ctx;
    /* Take k samples of side s (ms each, in order, into ms[0..k)); cold: each after a flush of
     * the device's cache, the flush's own time into flush_ms[0..k). warming: untimed warm-ups
     * (their times still tell how long a sample takes). */
    kprof_status (*sample)(void *ctx, int s, int k, int cold, int warming, double *ms,
                           double *flush_ms, kp_error *err);
    /* The device's SM clock now, for side s; NULL: none is read ("no clock is read here"). */
    void (*clock)(void *ctx, int s, kp_clock_reading *clk);
    /* After each round: side s's last k samples were kept (1) or discarded as taken while
     * throttled (0). NULL: not told. */
    void (*kept)(void *ctx, int s, size_t k, int kept);
    /* The wall clock in ns; NULL: kp_now_ns (a test's own, so no budget depends on load). */
    uint64_t (*now_ns)(void *ctx);
    int pids[2]; /* processes besides this one whose CPU time is the measurement's own */
    int npids;
    int host_device;       /* the kernels run on the host's CPUs: a busy host counts (read at
                              every check: a sampler may learn it from its first samples) */
    int separate_sessions; /* see kp_bench_outcome */
} kp_bench_sampler;

/* The rule above, over samples sp takes: nsides (1 or 2) sides, compared when two (B = sides[1]
 * against A = sides[0]). On failure the samples so far stay in the sides. */
kprof_status kp_bench_measure_with(kp_bench_side *sides, int nsides, const kp_bench_config *cfg,
                                   const kp_bench_sampler *sp, kp_bench_progress_fn progress,
                                   void *user, kp_bench_outcome *out, kp_error *err);

/* Measure nsides (1 or 2) kernels as described above; with two, compare them (B = sides[1]
 * against A = sides[0]). Each side's lab and launch are set and checked by the caller. On
 * failure the samples so far stay in the sides. */
kprof_status kp_bench_measure(kp_bench_side *sides, int nsides, const kp_bench_config *cfg,
                              kp_bench_progress_fn progress, void *user, kp_bench_outcome *out,
                              kp_error *err);

/* Compare B with A from their samples (both summarised) through the comparison engine
 * (core/judge.h): paired when the samples were taken in pairs (kp_bench_measure), else each side
 * resampled on its own and judged as two runs (an earlier run's samples: across_runs). Reads
 * out->busy_cpus, ncpus and run_ratio (set them first: kp_bench_outcome_init); sides with
 * nruns >= 2 bring their sessions' medians. */
kprof_status kp_bench_compare(const kp_bench_side *a, const kp_bench_side *b, int paired,
                              const kp_bench_config *cfg, kp_bench_outcome *out, kp_error *err);

/* An outcome that knows nothing yet: busy unknown, no runs. */
void kp_bench_outcome_init(kp_bench_outcome *o);

/* The judge's configuration bench uses for cfg (threshold) and what *o knows. */
void kp_bench_judge_config(const kp_bench_config *cfg, const kp_bench_outcome *o, int paired,
                           kp_judge_config *jc);

/* ---- a bench's points ------------------------------------------------------------------------
 *
 * `kprof bench` measures a kernel (or two: A and B) at every point of its axes (each a list of
 * values; the first axis varies slowest), hot, cold or both: a row per point and cache state.
 * At a point, --grid, --tg, the SPEC, -D values and the --bytes and --flops formulas are
 * expressions in the axes (core/expr.h). */

#define KP_BENCH_MAX_AXES    8
#define KP_BENCH_MAX_VALUES  64
#define KP_BENCH_MAX_POINTS  4096
#define KP_BENCH_MAX_DEFINES 64

typedef struct kp_bench_axis {
    char name[32];
    int nvalues;
    kp_var values[KP_BENCH_MAX_VALUES]; /* text and value */
} kp_bench_axis;

/* What to measure (the parsed command line). */
typedef struct kp_bench_plan {
    const char *targets[2]; /* one kernel, or two to compare */
    int ntargets;
    const char *entries[2]; /* --entry, at most twice (two kernels of one file) */
    int nentries;
    const char *grid, *tg; /* texts, evaluated at each point */
    const char *buffers;   /* the SPEC, substituted at each point */
    /* A captured launch among the targets (NAME@N): its arguments bind every side, so that an
     * edited copy (`kprof isolate NEW --from NAME@N`) is compared on the program's own data;
     * buffers is then NULL. NULL: none. */
    const char *replay;
    const char *defines[KP_BENCH_MAX_DEFINES]; /* -D NAME[=EXPR] */
    int ndefines;
    const char *options; /* -I and --options as the compiler sees them, or NULL */
    const char *backend;
    int device;
    kp_launch launch; /* timeout, smem, timer */
    const char *bytes_expr, *flops_expr;
    kp_bench_axis axes[KP_BENCH_MAX_AXES];
    int naxes;
    int hot, cold;
    kp_bench_config cfg;
    int repeat;                 /* --repeat R: independent sessions per point (1) */
    int counters;               /* --counters: each row's kernels' hardware counters */
    kp_counters counters_asked; /* the raw names of --counters LIST */
    kp_lab_log *log;            /* --trace: every session logs its dispatches here (lab.h), the
                                   log's bytes and flops set at each point; NULL: none */
} kp_bench_plan;

/* One measured point: the axis values, the cache state, each kernel's samples, the comparison. */
typedef struct kp_bench_row {
    kp_vars vars;
    int cold;
    kp_launch launch;
    int nsides;
    kp_bench_side side[2];
    char label[2][160]; /* "A: demo.cu:demo_add" */
    kp_bench_outcome outcome;
    int have_old; /* --compare: the earlier run's samples of this point (set by the caller) */
    kp_bench_side old;
    kp_bench_outcome old_outcome;
    uint64_t bytes;
    int bytes_assumed;
    uint64_t working_set; /* the buffers' total bytes (the counters' readings: fits the cache?) */
    double flops;         /* per dispatch; 0 when not given */
    int slower_gate;      /* --fail-if-slower: this point is slower by more than asked */
    kp_counters *counters[2]; /* --counters: each side's (heap), NULL when not asked */
} kp_bench_row;

/* The points measured so far, and what the sessions said of themselves. */
typedef struct kp_bench_session {
    const kp_bench_plan *plan;
    kp_bench_row *rows; /* the caller's: room for 2 rows a point */
    int nrows;
    kp_lab_info info; /* of the first kernel of the first point */
    int have_info;
    char entry_name[2][128];
    char source[2][4096];
    /* A replayed capture (kp_bench_plan.replay): each side's output check at its first point,
     * "" for a side that is not bound with one (lab.h: kp_lab_info.replay_text). */
    char replay_text[2][512];
    char kernel_dir[4096];
    char first_options[1024]; /* the first point's compiler options and SPEC, its axes */
    char first_buffers[1024]; /* substituted */
    char counters_off[512];   /* why the counters cannot be read, once a row found it ("" else) */
    int wedged; /* a kernel timed out (TIMEOUT): its sessions are left open, as they may never
                   be released (leave at once: the OS reclaims them) */
    /* Told as the measuring goes: step (the point, e.g. "demo N=4096 hot", and "warming up" or
     * "hardware counters (one replayed dispatch)"), and kp_bench_measure's progress while
     * phase names the point. Each may be NULL. */
    void (*step)(void *user, const char *point, const char *what);
    kp_bench_progress_fn progress;
    void *user;
    const char *phase;
} kp_bench_session;

/* What a point is measured at, from its axis values: the launch geometry, the SPEC and the
 * compiler options with the axes substituted, and the formulas' values. */
typedef struct kp_bench_setup {
    kp_vars vars;
    kp_launch launch;
    kp_str buffers, options;
    double bytes, flops; /* per dispatch; 0 when not given */
} kp_bench_setup;

/* Point index's setup; an error (INVALID) names the point. kp_bench_setup_free after. */
kprof_status kp_bench_point_setup(const kp_bench_plan *plan, int index, kp_bench_setup *p,
                                  kp_error *err);
void kp_bench_setup_free(kp_bench_setup *p);

/* Every point's setup, before anything is measured: a mistake at the last point is found now,
 * not after minutes of measuring. */
kprof_status kp_bench_check_points(const kp_bench_plan *plan, int npoints, kp_error *err);

/* "N=4096 T=f32": a point's values, numbers as numbers (4K is 4096), so that a point is found
 * again in an earlier run however its value was spelled. */
void kp_bench_vars_text(const kp_vars *vars, char *buf, size_t n);

/* Measure point index: open its sessions (one shared by two kernels of one file), check the
 * launch, measure each cache state asked (appending its rows to s->rows), read the counters,
 * release the sessions; with --repeat, each later session's samples joined to the rows and the
 * comparison made again with the sessions' spread. On TIMEOUT s->wedged is set and the
 * sessions are left open. */
kprof_status kp_bench_point(kp_bench_session *s, int index, kp_error *err);

/* The comparison a row shows: A/B's (two kernels), else --compare's against the earlier run,
 * else NULL. */
const kp_bench_outcome *kp_bench_row_comparison(const kp_bench_row *row);

/* --fail-if-slower P (fraction; < 0: not asked): each row's slower_gate, from its comparison
 * (kp_bench_outcome_fails). */
void kp_bench_gate(kp_bench_row *rows, int nrows, double fail_if_slower);

/* A side's ~GB/s (the row's bytes over its median) and GFLOP/s (0 without --flops). */
double kp_bench_row_gbps(const kp_bench_row *row, const kp_bench_side *s);
double kp_bench_row_gflops(const kp_bench_row *row, const kp_bench_side *s);

/* What a side's counters c say at its median (the readings of the measured figures alone),
 * against the device's ceiling and FLOP peak (0: none) and its cache. */
void kp_bench_row_readings(const kp_bench_row *row, const kp_bench_side *s, const kp_counters *c,
                           double ceiling_gbs, double peak_gflops, uint64_t cache_bytes,
                           kp_readings_input *in, kp_readings *rd);

/* --compare: this run's rows (s) against old, the bench result read from old_path
 * (lab/result_file.h): warns on warn when old was measured on another device, skips (with a
 * warning) a point of fewer than 5 samples (as kprof diff: a verdict needs 5 a side), fills each
 * matching row's old side, old_outcome and have_old, and warns when none matched. gate (from
 * --fail-if-slower) makes "none matched" an INVALID failure instead, as a gate that compared
 * nothing must not pass; a point of median 0 ms is INVALID too. *matched: the rows compared. */
struct kp_bench_file;
kprof_status kp_bench_compare_file(kp_bench_session *s, const struct kp_bench_file *old,
                                   const char *old_path, int gate, FILE *warn, int *matched,
                                   kp_error *err);

#endif
