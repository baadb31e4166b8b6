/*
 * compare.h — the statistics behind `kprof bench`: how noisy a median still is (to stop sampling
 * once more samples no longer help) and whether B is faster, slower or the same as A.
 *
 * The definitions, so that every number kprof prints can be recomputed by hand:
 *   median            = sorted[n/2] (0-based; the upper middle for even n), as stats.h.
 *   median interval   = [sorted[j-1], sorted[n-j]] (1-based ranks j and n-j+1), j the largest
 *                       rank with P(B <= j-1) <= (1-level)/2, B ~ binomial(n, 1/2): the
 *                       distribution-free interval, coverage 1 - 2 P(B <= j-1) >= level for any
 *                       continuous distribution. Exact binomial for n <= KP_MEDIAN_CI_EXACT_MAX;
 *                       above, the normal approximation with continuity correction,
 *                       j = floor(n/2 + 1/2 - z sqrt(n)/2), z = the normal quantile of
 *                       1 - (1-level)/2. Checked against the exact j (every 7th n from 1001 to
 *                       30000, and 50000, 100000, 200001; levels 0.8 to 0.999): equal, or one
 *                       rank lower (a wider interval), never higher.
 *   bootstrap interval = nearest-rank percentiles of the R resampled ratios r(0) <= ... <= r(R-1):
 *                       lo = r(floor(R (1-level)/2)), hi = r(ceil(R (1+level)/2) - 1), so that
 *                       as many resampled ratios lie below lo as above hi.
 *   noise             = (hi - lo) / 2 / value of the median's interval.
 *   rsd               = sample standard deviation (n-1) / mean.
 *
 * Nothing here prints; nothing allocates except kp_ratio_ci_bootstrap (one array of `resamples`
 * doubles per call, said there). All functions are reentrant: no global state.
 */
#ifndef KP_CORE_COMPARE_H
#define KP_CORE_COMPARE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* Up to this n, kp_median_ci_sorted sums the binomial distribution exactly. */
#define KP_MEDIAN_CI_EXACT_MAX 1000

/* A confidence interval and the estimate it surrounds. */
typedef struct kp_estimate {
    double value; /* the estimate (a median, a ratio of medians) */
    double lo;    /* the interval's lower end */
    double hi;    /* its upper end, >= lo (a bootstrap's value can lie outside, a median's not) */
} kp_estimate;

/* The distribution-free confidence interval of the median of an ascending array sorted[0..n)
 * (the ranks are the header's): value = sorted[n/2], lo = sorted[j-1], hi = sorted[n-j], with
 * coverage >= level (0 < level < 1, e.g. 0.95). Where n is too small for the level (no j >= 1
 * qualifies: n < 6 at 0.95, n < 8 at 0.99), lo = sorted[0] and hi = sorted[n-1], which covers
 * less than level. n >= 1; sorted must not hold NaN. */
void kp_median_ci_sorted(const double *sorted, size_t n, double level, kp_estimate *out);

/* The 1-based rank j of the interval's lower end for n samples at level (n - j + 1 is the upper
 * one); 0 when n is too small for the level. kp_median_ci_sorted's arithmetic, on its own. */
size_t kp_median_ci_rank(size_t n, double level);

/* The noise of a median: the half-width of its interval relative to it, (hi - lo) / 2 / value;
 * +infinity when value <= 0 (a median of 0 is below the timer: it meets no goal). */
double kp_estimate_noise(const kp_estimate *e);

/* Relative standard deviation (sample stddev, n-1, over the mean) of v[0..n); 0 for n < 2 or
 * mean <= 0. */
double kp_rsd(const double *v, size_t n);

/* The ratio of medians median(b) / median(a) with a percentile-bootstrap confidence interval at
 * `level` (the header's nearest-rank percentiles), from `resamples` resamples drawn with a
 * deterministic generator (xoshiro256** seeded through splitmix64) seeded by `seed`: the same
 * inputs and seed give the same answer, on any machine.
 *   paired:   a[i] and b[i] were measured back to back (na == nb): each resample draws pair
 *             indices, keeping both halves of a pair together, so that drift common to both
 *             cancels in the ratio.
 *   unpaired: each side is resampled on its own.
 * value is the ratio of the full samples' medians (element n/2 of the sorted sample, stats.h);
 * a resample's median is found by selection (kp_select, O(n)), not sorting. A resample whose
 * median of a is <= 0 counts as ratio +inf (interval unbounded above: the verdict is UNSURE).
 * a, b are left untouched; scratch must hold na + nb doubles (no overlap with a or b). Allocates
 * `resamples` doubles for the resampled ratios, freed before returning.
 * Returns KPROF_OK; with *out untouched and err filled, KPROF_INVALID when a side is empty, a
 * full sample's median is <= 0, paired with na != nb, resamples < 1 or level outside (0, 1), and
 * KPROF_NOMEM when the allocation failed. */
kprof_status kp_ratio_ci_bootstrap(const double *a, size_t na, const double *b, size_t nb,
                                   int paired, int resamples, double level, uint64_t seed,
                                   double *scratch, kp_estimate *out, kp_error *err);

/* The same with a block bootstrap: samples taken in batches share what happened to the device
 * during their batch (another process, a clock step), so a resample draws whole blocks of
 * block_a (block_b) consecutive samples, in the order taken, instead of single ones; the
 * interval then widens by what is correlated within a block instead of pretending each sample
 * independent. Paired: blocks of pairs, block_a == block_b. Block 1 is
 * kp_ratio_ci_bootstrap (the same statuses; INVALID too for a block < 1, or paired blocks that
 * differ). */
kprof_status kp_ratio_ci_bootstrap_blocks(const double *a, size_t na, size_t block_a,
                                          const double *b, size_t nb, size_t block_b, int paired,
                                          int resamples, double level, uint64_t seed,
                                          double *scratch, kp_estimate *out, kp_error *err);

/* The verdict on B against A, one list making the enum and the names. */
#define KP_COMPARE_VERDICT_LIST(X)                                                                 \
    X(SAME, "SAME")     /* the interval lies inside [1 - t, 1 + t] */                              \
    X(FASTER, "FASTER") /* it lies at or below 1 - t, and is not within [1 - t, 1 + t] */          \
    X(SLOWER, "SLOWER") /* it lies at or above 1 + t, and is not within [1 - t, 1 + t] */          \
    X(UNSURE, "UNSURE") /* it straddles 1 - t or 1 + t: more samples would decide */

typedef enum kp_compare_verdict {
#define KP_COMPARE_VERDICT_ENUM(name, text) KP_COMPARE_##name,
    KP_COMPARE_VERDICT_LIST(KP_COMPARE_VERDICT_ENUM)
#undef KP_COMPARE_VERDICT_ENUM
        KP_COMPARE_VERDICT_COUNT
} kp_compare_verdict;

/* The verdict from the interval [lo, hi] of the ratio B/A and a threshold t >= 0 (0.01 = 1%),
 * the bounds closed: SAME when 1 - t <= lo and hi <= 1 + t; else SLOWER when lo >= 1 + t; else
 * FASTER when hi <= 1 - t; else UNSURE (also when lo or hi is NaN). The value is not looked at. */
kp_compare_verdict kp_compare_verdict_of(const kp_estimate *ratio, double threshold);

/* "SAME", "FASTER", "SLOWER", "UNSURE"; "?" for a value outside the enum. */
const char *kp_compare_verdict_name(kp_compare_verdict v);

/* Has a noise estimate settled? Fed one noise value per check (checks come after the sample
 * count has grown by a fixed factor), it answers 1 once the last KP_SETTLE_CHECKS values are all
 * > 0 and all lie within +-KP_SETTLE_SPREAD relative of their mean: more samples no longer make
 * the estimate better (timer quantisation, a noise floor). Start from a zeroed struct
 * (kp_settle s = {0}); last[] holds the newest count values, oldest first. No allocation. */
#define KP_SETTLE_CHECKS 8
#define KP_SETTLE_SPREAD 0.05
typedef struct kp_settle {
    double last[KP_SETTLE_CHECKS]; /* the newest noise values, oldest first */
    int count;                     /* how many of last[] hold values (<= KP_SETTLE_CHECKS) */
} kp_settle;
void kp_settle_add(kp_settle *s, double noise);
int kp_settle_done(const kp_settle *s);

/* Select the k-th smallest (0-based, k < n) of v[0..n) in place and return it: afterwards v[k]
 * holds it, v[0..k) values <= it and v[k+1..n) values >= it. Quickselect with random pivots
 * (a generator seeded by n: deterministic), two of them taken from a sample on large ranges;
 * expected O(n) whatever the order, ties included; a range the pivots fail to shrink for long is
 * sorted instead, so O(n log n) at worst. No allocation; reentrant. v must not hold NaN (the
 * result is then unspecified; it still returns). */
double kp_select(double *v, size_t n, size_t k);

#endif
