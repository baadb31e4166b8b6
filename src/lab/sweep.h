/*
 * sweep.h — the threadgroup sweep: one kernel, one grid, many threadgroup sizes, and which of
 * them is best — or which are tied with the best, because their difference is within what the
 * measurement itself spreads. Analysis only; `kprof run --sweep-tg` prints and plots it.
 */
#ifndef KP_LAB_SWEEP_H
#define KP_LAB_SWEEP_H

#include "backend/backend.h"
#include "core/compare.h"
#include "base/error.h"
#include "lab/run_result.h"

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

#endif
