/*
 * compare.c — confidence intervals of medians and of ratios of medians, the A/B verdict and the
 * noise-settling test behind `kprof bench` (the definitions are compare.h's).
 */
#include "core/compare.h"
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the deterministic generator --------------------------------------------------------------
 * xoshiro256** (Blackman and Vigna), its state filled by splitmix64 from one 64-bit seed, as its
 * authors recommend. Integer arithmetic only: the same seed gives the same stream everywhere. */

typedef struct kp_rng {
    uint64_t s[4];
} kp_rng;

static uint64_t kp_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void kp_rng_seed(kp_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = kp_splitmix64(&seed);
}

static uint64_t kp_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t kp_rng_next(kp_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = kp_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = kp_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n) for n in [1, 2^32], without modulo bias: Lemire's multiply-shift, bits a
 * uniform 32-bit number, redrawn in the rare case (reject_below / 2^32) that would bias it. */
typedef struct kp_bounded {
    uint64_t range;        /* n */
    uint32_t reject_below; /* 2^32 mod n */
} kp_bounded;

static kp_bounded kp_bounded_make(size_t n)
{
    kp_bounded d = {(uint64_t)n, (uint32_t)((((uint64_t)1) << 32) % (uint64_t)n)};
    return d;
}

static size_t kp_bounded_draw(kp_rng *r, const kp_bounded *d, uint32_t bits)
{
    uint64_t m = (uint64_t)bits * d->range;
    while ((uint32_t)m < d->reject_below)
        m = (uint64_t)(uint32_t)(kp_rng_next(r) >> 32) * d->range;
    return (size_t)(m >> 32);
}

/* Uniform in [0, n), n >= 1, for any n (above 2^32 by modulo: a bias of n / 2^64). */
static size_t kp_rng_below(kp_rng *r, size_t n)
{
    if ((uint64_t)n > UINT32_MAX) return (size_t)(kp_rng_next(r) % (uint64_t)n);
    kp_bounded d = kp_bounded_make(n);
    return kp_bounded_draw(r, &d, (uint32_t)(kp_rng_next(r) >> 32));
}

/* ---- selection ------------------------------------------------------------------------------
 * Resampled timings are in random order and full of ties (timer quantisation), and a bootstrap
 * selects thousands of times, so the loop is built for that:
 *   - partitions are branchless Lomuto passes (each element swapped unconditionally, the boundary
 *     advanced by the comparison's 0 or 1): no mispredicted branch per element;
 *   - ranges of KP_SELECT_SAMPLE_MIN or more take two pivots from a random sample, at ranks just
 *     below and above where k should fall (Floyd and Rivest's idea): one pass over the range and
 *     one over what lies above the lower pivot leave a few percent of it around k, about 1.5 n
 *     comparisons for a median where one pivot needs about 2.75 n;
 *   - smaller ranges take the median of three random elements;
 *   - a run of values equal to a pivot is split off and finished at once when k falls inside
 *     (timings with a handful of distinct values stay linear).
 * Every round shrinks the range or returns, and a budget of rounds bounds the unlucky case. */

#define KP_SELECT_SAMPLE_MIN 4096

static void kp_swap(double *v, size_t i, size_t j)
{
    double t = v[i];
    v[i] = v[j];
    v[j] = t;
}

/* Reorder v[lo..hi) so that the elements x < pivot (strict) or x <= pivot (not strict) come
 * first; returns where the rest begins. */
static size_t kp_partition(double *v, size_t lo, size_t hi, double pivot, int strict)
{
    size_t split = lo;
    if (strict) {
        for (size_t i = lo; i < hi; i++) {
            double x = v[i];
            v[i] = v[split];
            v[split] = x;
            split += x < pivot;
        }
    } else {
        for (size_t i = lo; i < hi; i++) {
            double x = v[i];
            v[i] = v[split];
            v[split] = x;
            split += x <= pivot;
        }
    }
    return split;
}

static double kp_select_range(double *v, size_t lo, size_t hi, size_t k, kp_rng *rng)
{
    /* Each round leaves at most 3/4 of the range at least half the time; a range still there
     * after this many rounds is fighting the pivots: sort it instead. */
    int budget = 64;
    for (size_t m = hi - lo; m > 1; m >>= 1)
        budget += 4;
    /* Sampled pivots can enclose the whole range (two distinct values, k at their border): from
     * then on the single pivot, which splits ties off, takes over. */
    int sample_pivots = 1;
    while (hi - lo > 1) {
        size_t len = hi - lo;
        if (budget-- == 0) {
            kp_sort_doubles(v + lo, len);
            return v[k];
        }
        if (sample_pivots && len >= KP_SELECT_SAMPLE_MIN) {
            /* A random sample of about len^(2/3) / 2 elements, moved to v[lo..lo+size) by a
             * partial Fisher-Yates shuffle, so sorted or patterned input samples as well. */
            size_t size = (size_t)(0.5 * pow((double)len, 2.0 / 3.0));
            for (size_t i = 0; i < size; i++)
                kp_swap(v, lo + i, lo + i + kp_rng_below(rng, len - i));
            /* Where k falls in the sample, and a margin of 2 standard deviations of that
             * rank either side: k lies between the pivots about 95% of the time. */
            double share = (double)(k - lo) / (double)len, at = share * (double)size;
            double margin = 2 * sqrt((double)size * share * (1 - share)) + 2;
            size_t r1 = at > margin ? (size_t)(at - margin) : 0;
            size_t r2 = at + margin < (double)(size - 1) ? (size_t)(at + margin) : size - 1;
            double p2 = kp_select_range(v, lo, lo + size, lo + r2, rng);
            double p1 = r1 < r2 ? kp_select_range(v, lo, lo + r2, lo + r1, rng) : p2;
            size_t lt = kp_partition(v, lo, hi, p1, 1);
            if (k < lt) {
                hi = lt; /* k fell below the lower pivot */
                continue;
            }
            size_t le = kp_partition(v, lt, hi, p2, 0);
            if (k >= le) {
                lo = le; /* above the upper one */
                continue;
            }
            if (p1 == p2) return p1; /* [lt, le) holds p1 alone */
            if (lt == lo && le == hi) sample_pivots = 0;
            lo = lt;
            hi = le;
            continue;
        }
        /* Pivot: the median of three random elements of the range. */
        double p0 = v[lo + kp_rng_below(rng, len)];
        double p1 = v[lo + kp_rng_below(rng, len)];
        double p2 = v[lo + kp_rng_below(rng, len)];
        double pivot =
            p0 < p1 ? (p1 < p2 ? p1 : (p0 < p2 ? p2 : p0)) : (p0 < p2 ? p0 : (p1 < p2 ? p2 : p1));
        size_t lt = kp_partition(v, lo, hi, pivot, 1);
        if (k < lt) {
            hi = lt; /* the pivot itself lies above: the range shrank */
        } else if (lt > lo) {
            lo = lt;
        } else {
            /* Nothing below the pivot: split off the values equal to it, which include it. */
            size_t le = kp_partition(v, lo, hi, pivot, 0);
            if (k < le) return pivot;
            lo = le;
        }
    }
    return v[k];
}

double kp_select(double *v, size_t n, size_t k)
{
    kp_rng rng;
    kp_rng_seed(&rng, (uint64_t)n);
    return kp_select_range(v, 0, n, k, &rng);
}

/* ---- the median's interval ------------------------------------------------------------------ */

/* The standard normal quantile of p in (0.5, 1), by bisection on erfc: called once per interval,
 * so exactness beats speed. */
static double kp_normal_quantile_upper(double p)
{
    double lo = 0, hi = 40;
    for (int i = 0; i < 200 && lo < hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        double cdf = 1 - 0.5 * erfc(mid / sqrt(2.0));
        if (cdf < p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

size_t kp_median_ci_rank(size_t n, double level)
{
    if (n == 0 || !(level < 1)) return 0;
    double tail = level > 0 ? (1 - level) / 2 : 0.5; /* allowed on each side */
    /* A binomial sum can equal the tail exactly (dyadic levels: P(B <= 0) = 1/4 at n = 2 and
     * level 0.5), and then the rank qualifies; the slack keeps rounding in the sum from saying
     * otherwise. */
    tail *= 1 + 1e-12;
    size_t j = 0; /* ranks 1..j qualify: P(B <= j - 1) <= tail */
    if (n <= KP_MEDIAN_CI_EXACT_MAX) {
        /* pmf(0) = 2^-n is a normal double for n <= 1022; the terms grow by (n - i) / (i + 1). */
        double pmf = ldexp(1.0, -(int)n), cdf = 0;
        for (size_t i = 0; i < n; i++) {
            cdf += pmf; /* P(B <= i) */
            if (cdf > tail) break;
            j = i + 1;
            pmf *= (double)(n - i) / (double)(i + 1);
        }
    } else {
        double z = kp_normal_quantile_upper(1 - (1 - level) / 2);
        /* A hair subtracted so that rounding never lands one rank high (too narrow). */
        double x = (double)n / 2 + 0.5 - z * sqrt((double)n) / 2 - 1e-9;
        j = x < 0 ? 0 : (size_t)floor(x);
    }
    /* The lower end can never pass the median: j - 1 <= n/2 and n - j >= n/2. */
    size_t most = (n + 1) / 2;
    return j < most ? j : most;
}

void kp_median_ci_sorted(const double *sorted, size_t n, double level, kp_estimate *out)
{
    size_t j = kp_median_ci_rank(n, level);
    out->value = sorted[n / 2];
    if (j == 0) {
        out->lo = sorted[0];
        out->hi = sorted[n - 1];
    } else {
        out->lo = sorted[j - 1];
        out->hi = sorted[n - j];
    }
}

double kp_estimate_noise(const kp_estimate *e)
{
    if (!(e->value > 0)) return INFINITY; /* a time of 0 is below the timer: no precision */
    return (e->hi - e->lo) / 2 / e->value;
}

double kp_rsd(const double *v, size_t n)
{
    if (n < 2) return 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    double mean = sum / (double)n;
    if (!(mean > 0)) return 0;
    double ss = 0; /* two passes: no cancellation between sum of squares and squared sum */
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (double)(n - 1)) / mean;
}

/* ---- the bootstrap of a ratio of medians ---------------------------------------------------- */

static double kp_median_of_copy(const double *v, size_t n, double *scratch)
{
    memcpy(scratch, v, n * sizeof *v);
    return kp_select(scratch, n, n / 2);
}

/* One bootstrap resample: out_x[i] = x[pick], out_y[i] = y[pick] (y may be NULL) for n picks
 * drawn uniformly from [0, n). The random gather is most of a resample's cost after the
 * selection, so each 64-bit draw serves two picks. */
static void kp_resample(kp_rng *rng, const double *x, const double *y, size_t n, double *out_x,
                        double *out_y)
{
    if ((uint64_t)n > UINT32_MAX) {
        for (size_t i = 0; i < n; i++) {
            size_t pick = kp_rng_below(rng, n);
            out_x[i] = x[pick];
            if (y) out_y[i] = y[pick];
        }
        return;
    }
    kp_bounded d = kp_bounded_make(n);
    for (size_t i = 0; i < n; i += 2) {
        uint64_t bits = kp_rng_next(rng);
        size_t pick = kp_bounded_draw(rng, &d, (uint32_t)(bits >> 32));
        out_x[i] = x[pick];
        if (y) out_y[i] = y[pick];
        if (i + 1 < n) {
            pick = kp_bounded_draw(rng, &d, (uint32_t)bits);
            out_x[i + 1] = x[pick];
            if (y) out_y[i + 1] = y[pick];
        }
    }
}

/* Blocks of `block` consecutive elements (the last may be shorter), drawn with replacement
 * until n are filled: what is correlated within a block stays together. */
static void kp_resample_blocks(kp_rng *rng, const double *x, const double *y, size_t n,
                               size_t block, double *out_x, double *out_y)
{
    size_t blocks = (n + block - 1) / block, i = 0;
    while (i < n) {
        size_t start = kp_rng_below(rng, blocks) * block;
        for (size_t t = start; t < start + block && t < n && i < n; t++, i++) {
            out_x[i] = x[t];
            if (y) out_y[i] = y[t];
        }
    }
}

kprof_status kp_ratio_ci_bootstrap(const double *a, size_t na, const double *b, size_t nb,
                                   int paired, int resamples, double level, uint64_t seed,
                                   double *scratch, kp_estimate *out, kp_error *err)
{
    return kp_ratio_ci_bootstrap_blocks(a, na, 1, b, nb, 1, paired, resamples, level, seed, scratch,
                                        out, err);
}

kprof_status kp_ratio_ci_bootstrap_blocks(const double *a, size_t na, size_t block_a,
                                          const double *b, size_t nb, size_t block_b, int paired,
                                          int resamples, double level, uint64_t seed,
                                          double *scratch, kp_estimate *out, kp_error *err)
{
    if (na == 0 || nb == 0)
        return kp_error_set(err, KPROF_INVALID, "bootstrap: a side has no samples");
    if (paired && (na != nb || block_a != block_b))
        return kp_error_set(err, KPROF_INVALID,
                            "bootstrap: paired sides of different sizes or blocks");
    if (resamples < 1 || !(level > 0) || !(level < 1) || block_a < 1 || block_b < 1)
        return kp_error_set(err, KPROF_INVALID,
                            "bootstrap: resamples and blocks must be >= 1, level in (0, 1)");
    double median_a = kp_median_of_copy(a, na, scratch);
    double median_b = kp_median_of_copy(b, nb, scratch + na);
    if (!(median_a > 0) || !(median_b > 0))
        return kp_error_set(err, KPROF_INVALID, "bootstrap: a median is not positive");
    double *ratios = malloc((size_t)resamples * sizeof *ratios);
    if (!ratios) return kp_error_nomem(err);

    kp_rng rng;
    kp_rng_seed(&rng, seed);
    double *ra = scratch, *rb = scratch + na;
    for (int r = 0; r < resamples; r++) {
        if (paired && block_a > 1) {
            kp_resample_blocks(&rng, a, b, na, block_a, ra, rb);
        } else if (paired) {
            kp_resample(&rng, a, b, na, ra, rb);
        } else {
            if (block_a > 1)
                kp_resample_blocks(&rng, a, NULL, na, block_a, ra, NULL);
            else
                kp_resample(&rng, a, NULL, na, ra, NULL);
            if (block_b > 1)
                kp_resample_blocks(&rng, b, NULL, nb, block_b, rb, NULL);
            else
                kp_resample(&rng, b, NULL, nb, rb, NULL);
        }
        double ma = kp_select(ra, na, na / 2);
        double mb = kp_select(rb, nb, nb / 2);
        ratios[r] = ma > 0 ? mb / ma : INFINITY;
    }

    /* Nearest-rank percentiles (compare.h); the small slack keeps (1 - 0.95) / 2 * 2000 = 50
     * from becoming 49.99999 or 50.00001 by rounding. */
    size_t count = (size_t)resamples;
    double tail = (1 - level) / 2 * (double)count;
    size_t lo_index = (size_t)floor(tail + 1e-9);
    size_t hi_index = (size_t)ceil((double)count - tail - 1e-9);
    hi_index = hi_index > 0 ? hi_index - 1 : 0;
    if (lo_index >= count) lo_index = count - 1;
    if (hi_index >= count) hi_index = count - 1;
    if (hi_index < lo_index) hi_index = lo_index;
    double hi = kp_select(ratios, count, hi_index);
    /* After that selection ratios[0..hi_index) are <= hi: the lower end is among them. */
    double lo = lo_index < hi_index ? kp_select(ratios, hi_index, lo_index) : hi;
    free(ratios);

    out->value = median_b / median_a;
    out->lo = lo;
    out->hi = hi;
    return KPROF_OK;
}

/* ---- the verdict ---------------------------------------------------------------------------- */

kp_compare_verdict kp_compare_verdict_of(const kp_estimate *ratio, double threshold)
{
    double lo = ratio->lo, hi = ratio->hi;
    if (isnan(lo) || isnan(hi)) return KP_COMPARE_UNSURE;
    double below = 1 - threshold, above = 1 + threshold;
    if (lo >= below && hi <= above) return KP_COMPARE_SAME;
    if (lo >= above) return KP_COMPARE_SLOWER;
    if (hi <= below) return KP_COMPARE_FASTER;
    return KP_COMPARE_UNSURE;
}

const char *kp_compare_verdict_name(kp_compare_verdict v)
{
    switch (v) {
#define KP_COMPARE_VERDICT_CASE(name, text)                                                        \
    case KP_COMPARE_##name:                                                                        \
        return text;
        KP_COMPARE_VERDICT_LIST(KP_COMPARE_VERDICT_CASE)
#undef KP_COMPARE_VERDICT_CASE
    case KP_COMPARE_VERDICT_COUNT:
        break;
    }
    return "?";
}

/* ---- settling ------------------------------------------------------------------------------- */

void kp_settle_add(kp_settle *s, double noise)
{
    if (s->count < 0) s->count = 0;
    if (s->count >= KP_SETTLE_CHECKS) {
        memmove(s->last, s->last + 1, (KP_SETTLE_CHECKS - 1) * sizeof s->last[0]);
        s->count = KP_SETTLE_CHECKS - 1;
    }
    s->last[s->count++] = noise;
}

int kp_settle_done(const kp_settle *s)
{
    if (s->count < KP_SETTLE_CHECKS) return 0;
    double sum = 0;
    for (int i = 0; i < KP_SETTLE_CHECKS; i++) {
        if (!(s->last[i] > 0)) return 0; /* also NaN */
        sum += s->last[i];
    }
    double mean = sum / KP_SETTLE_CHECKS;
    for (int i = 0; i < KP_SETTLE_CHECKS; i++)
        if (!(fabs(s->last[i] - mean) <= KP_SETTLE_SPREAD * mean)) return 0;
    return 1;
}
