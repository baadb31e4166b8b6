/*
 * stats.h — summary statistics of a timing sample, with the seeds' exact definitions:
 *   median = sorted[n/2]                       (stwo-prof runner)
 *   p90    = sorted[min(n-1, floor(0.9 n))]    (Enigma benchmark_kernel)
 *   stddev = sample standard deviation (n-1)   (Metal.jl / CUDA.jl distribution cell)
 *   quantile(q) = linear interpolation between order statistics (for highlight thresholds)
 */
#ifndef KP_CORE_STATS_H
#define KP_CORE_STATS_H

#include <stddef.h>

typedef struct kp_stats {
    size_t n;
    double min, max, mean, stddev, median, p90;
} kp_stats;

/* Summarise v[0..n). v is left untouched; scratch must hold n doubles (may alias nothing).
 * With n == 0 every field is 0. */
void kp_stats_compute(const double *v, size_t n, double *scratch, kp_stats *out);

/* Linear-interpolated quantile q in [0,1] of an ascending array. */
double kp_quantile_sorted(const double *sorted, size_t n, double q);

void kp_sort_doubles(double *v, size_t n);

#endif
