/*
 * sweep.h — the threadgroup sweep: one kernel, one grid, many threadgroup sizes, and which of
 * them is best — or which are tied with the best, because their difference is within what the
 * measurement itself spreads — and the running of it: which sizes (the defaults, a list, the
 * kernel's required one, "your --tg"), each checked before anything runs, then measured in order,
 * with a watcher thread that tells an observer after every change and takes the signals.
 * `kprof run --sweep-tg` (tools/kprof/cmd_sweep.c) prints and plots it.
 */
#ifndef KP_LAB_SWEEP_H
#define KP_LAB_SWEEP_H

#include "backend/backend.h"
#include "core/compare.h"
#include "base/error.h"
#include "core/readings.h"
#include "lab/counters.h"
#include "lab/lab.h"
#include "lab/run_result.h"

#include <pthread.h>
#include <signal.h>

#define KP_SWEEP_MAX_POINTS 64

typedef struct kp_sweep_point {
    kp_run_result run;     /* the kernel at this tg: run.launch (the grid stays; tg varies), the
                              timings and their spread (p10..p90), ~GB/s, occupancy (CUDA) */
    uint64_t threads;      /* threads per threadgroup */
    int measured;          /* timed (a fault stops a sweep part-way) */
    int best;              /* lowest median */
    int tie;               /* not told apart from the best (kp_sweep_mark) */
    kp_estimate median_ci; /* the median's 95% interval (kp_median_ci_sorted), when have_ci */
    int have_ci;           /* set by kp_sweep_summarise */
} kp_sweep_point;

#define KP_SWEEP_CI_LEVEL  0.95 /* the medians' confidence intervals */
#define KP_SWEEP_TIE_RATIO 1.5  /* a median this many times the best's is never a tie */

/* Default sizes: powers of two from `start` (the execution width, or 64 when unknown) up to and
 * including the kernel's maximum, stopping above it; when the maximum is below `start`, from
 * the largest power of two it allows. 1-D. Returns how many (<= max). */
int kp_sweep_default_sizes(uint64_t start, uint64_t kernel_max, uint64_t *out, int max);

/* Default shapes for a 2- or 3-D grid (z stays 1): for each total T of threads, a power of two
 * from `width` (the warp or preferred multiple; 64 when unknown) to the kernel's maximum, up to
 * three shapes x by T/x, x a multiple of width and a power of two, from the squarest whose x is
 * at least its y, then x doubled twice: 16x16, 32x8, 64x4 for T = 256 and width 8. A shape must
 * fit the device's per-dimension maxima (max_dims, 0: no limit) and the grid, and divide it
 * when the device needs whole groups (uniform). out[i] holds x, y, 1. Returns how many
 * (<= max). */
int kp_sweep_default_shapes(uint64_t width, uint64_t kernel_max, const uint64_t max_dims[3],
                            const uint64_t grid[3], int uniform, uint64_t (*out)[3], int max);

/* Parse --tg-list "96,128,256" or "8x8,16x16,32x8" into points with the base launch's grid.
 * Every shape must have the grid's number of dimensions. INVALID names each bad item. */
kprof_status kp_sweep_parse_list(const char *text, const kp_launch *base, kp_sweep_point *out,
                                 int max, int *n, kp_error *err);

/* Fill a point's run.stats, spread and median_ci from its samples (ms) and mark it measured;
 * scratch holds n doubles. */
void kp_sweep_summarise(kp_sweep_point *p, const double *samples_ms, size_t n, double *scratch);

/* Mark the best (lowest median among measured points) and the ties: a point is tied when the
 * 95% confidence intervals of the two medians overlap (the point's lower end at or below the
 * best's upper end), and its median is at most KP_SWEEP_TIE_RATIO times the best's: a point
 * whose median's interval lies above the best's is slower, however wide the samples spread. A
 * point without an interval (not summarised) uses its p10..p90.
 * Returns the index of the best, or -1 when fewer than two points were measured: one size is
 * not a comparison, and none is marked. */
int kp_sweep_mark(kp_sweep_point *points, int n);

/* ---- running a sweep ------------------------------------------------------------------------
 *
 * kp_sweep_init; kp_sweep_catch_signals (before any thread of the process exists: it blocks
 * SIGINT, SIGTERM and SIGHUP — less those ignored when kprof started — in every thread to come
 * and reads them from a signalfd); the caller opens s->lab (kp_lab_open: it may fork, best with
 * no other thread about); kp_sweep_execute; the caller reads the outcome (status, err, points)
 * and closes the lab; kp_sweep_release. */

typedef struct kp_sweep kp_sweep;

typedef struct kp_sweep_config {
    kp_launch launch;    /* the grid; with tg_set its tg is one more size ("your --tg") */
    int tg_set;          /* --tg was given */
    const char *tg_list; /* --tg-list "96,128,256", or NULL: the default sizes */
    int iters, warmup;   /* per point */
    double budget_s;     /* the whole sweep's time budget, shared equally by the points; 0 none */
    int have_bytes;      /* bytes given (--bytes), else the buffers' total, assumed touched once */
    uint64_t bytes;
    int counters;               /* read hardware counters at every point */
    kp_counters counters_asked; /* their raw names */
    /* The device's measured bandwidth ceiling and FLOP peak, looked up once every size is
     * checked: it sets *copy_gbs and *fma_gflops when known (left 0 otherwise). NULL: none. */
    void (*ceiling)(void *user, const kp_device_info *dev, double *copy_gbs, double *fma_gflops);
    void *ceiling_user;
} kp_sweep_config;

/* Told on the watcher thread, with the sweep's lock held (nothing in s changes meanwhile). */
typedef struct kp_sweep_observer {
    void *user;
    /* After every change: checked, current, nmeasured or finished moved. */
    void (*changed)(void *user, kp_sweep *s);
    /* SIGINT, SIGTERM or SIGHUP came, sig; the lock stays held: meant to end the process
     * (128 + sig) without waiting for the point being measured. */
    void (*signal)(void *user, kp_sweep *s, int sig);
} kp_sweep_observer;

struct kp_sweep {
    kp_sweep_config cfg;
    kp_lab *lab;      /* opened by the caller between kp_sweep_catch_signals and _execute */
    kp_lab_info info; /* a copy, refreshed under mu after each point (the timer it used) */
    kp_sweep_point points[KP_SWEEP_MAX_POINTS];
    int npoints;
    int best;          /* set by the caller's kp_sweep_mark; -1 */
    int your_tg;       /* the point of --tg, or -1 */
    int required_only; /* the default sizes were the kernel's one required size */
    uint64_t bytes;    /* per dispatch, and whether assumed from the buffers */
    int bytes_assumed;
    double ceiling_gbs; /* cfg.ceiling's, 0: none */
    double peak_gflops;
    uint64_t kernel_max_tg;
    kp_reflection refl; /* at tg 1: the kernel's limits, rule and static memory */
    int iters, warmup;
    char skipped[512];           /* default sizes left out (non-multiples of the grid) */
    kp_reading_line warnings[4]; /* register pressure, static shared memory near the limit */
    int nwarnings;
    /* The measured point of lowest median so far (the best, once two are in: kp_sweep_mark
     * picks the same one, the first of equal medians) and its samples. Only the sweep's thread
     * writes them; read them after kp_sweep_execute. */
    int lowest;
    double *lowest_samples;
    /* With cfg.counters: each point's (npoints), and why they cannot be read once a point found
     * they cannot (the rest are not asked). counter_columns: the backend can read them. */
    kp_counters *counters;
    char counters_off[512];
    int counter_columns;

    /* Between the sweep's thread and the watcher, under mu. Points are measured in order, so
     * the measured ones are points[0..nmeasured). */
    pthread_mutex_t mu;
    int checked; /* every size checked: a table's header can be printed */
    int current; /* the point being measured, -1 before the first */
    int nmeasured;
    int finished; /* the sweep returned: status and err are final */
    int stopped;  /* a point failed and the sweep stopped part-way */
    int voided;   /* the process that ran the kernels died: no row measured stands (lab.h) */
    kprof_status status;
    kp_error err;

    /* Private. */
    int wake[2];
    int signal_fd, masked;
    sigset_t old_mask;
    const kp_sweep_observer *observer;
};

/* s from cfg (copied): nothing measured, nothing opened. */
void kp_sweep_init(kp_sweep *s, const kp_sweep_config *cfg);

/* Block the sweep's signals and open what the watcher reads: IO when it cannot. */
kprof_status kp_sweep_catch_signals(kp_sweep *s, kp_error *err);

/* Run the sweep on the calling thread (the backends' runtimes stay on the thread that opened
 * s->lab) while a watcher thread tells obs: choose the sizes, check every one (INVALID names
 * each bad one, one per line), look up the ceiling, then measure each point in order (equal
 * shares of the time budget; with counters one replayed dispatch each), then kp_lab_finish.
 * The sweep's outcome is in s->status and s->err (moved out by the caller); the return is
 * NOMEM only when the watcher cannot start (nothing ran). */
kprof_status kp_sweep_execute(kp_sweep *s, const kp_sweep_observer *obs, kp_error *err);

/* Undo kp_sweep_init and _catch_signals (the lab is the caller's) and free what the sweep
 * allocated. Returns a signal that came after the sweep finished (to end with 128 + it), or 0. */
int kp_sweep_release(kp_sweep *s);

/* "256", "16x16": point p's threadgroup. */
void kp_sweep_tg_text(const kp_sweep_point *p, char *buf, size_t n);

/* Room for a list of every point's tg ("128, 256 (your --tg)") in a kp_sweep_summary. */
#define KP_SWEEP_TG_LIST_MAX (KP_SWEEP_MAX_POINTS * 64)

/* What a sweep's closing lines say, worked out from its points (kp_sweep_close_summary). */
typedef struct kp_sweep_summary {
    int measured; /* the points measured */
    int cut;      /* of those, the ones timed fewer than the sweep's iters dispatches (the
                     --time-budget cut them) */
    int fewest;   /* the fewest dispatches among the cut ones (0 when none was cut) */
    int only;     /* when one point was measured, its index; else -1 */
    /* The points tied with the best (their tie mark): how many, and their tgs in order, comma
     * separated, the one of --tg followed by " (your --tg)"; "" when none. */
    int nties;
    char ties[KP_SWEEP_TG_LIST_MAX];
    /* --tg against the best: its median over the best's when --tg was measured and is neither
     * the best nor tied with it (and the best's median is above 0); else 0. */
    double your_ratio;
    /* The points above KP_READING_CEILING_TOLERANCE of the ceiling (kp_sweep_above_ceiling):
     * how many, their tgs as in ties (without the --tg mark), and `kprof run`'s reason for the
     * highest ~GB/s of them ("" when none). */
    int nabove;
    char above[KP_SWEEP_TG_LIST_MAX];
    char above_why[sizeof((kp_reading_line *)0)->text];
} kp_sweep_summary;

/* Fill *out from s's points (reads them only: safe while s->mu is held). The ties and
 * your_ratio come from s->best and the points' tie marks: kp_sweep_mark them first. */
void kp_sweep_close_summary(const kp_sweep *s, kp_sweep_summary *out);

#endif
