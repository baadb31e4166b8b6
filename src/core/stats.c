/*
 * stats.c — median, p90, min, max, mean and spread of timing samples (see stats.h).
 */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int kp_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void kp_sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof *v, kp_cmp_double);
}

double kp_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0) return 0;
    if (q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    if (lo + 1 >= n) return sorted[n - 1];
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void kp_stats_compute(const double *v, size_t n, double *scratch, kp_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0) return;
    memcpy(scratch, v, n * sizeof *v);
    kp_sort_doubles(scratch, n);
    out->min = scratch[0];
    out->max = scratch[n - 1];
    out->median = scratch[n / 2];
    size_t i90 = (size_t)(0.9 * (double)n);
    out->p90 = scratch[i90 < n - 1 ? i90 : n - 1];
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    out->mean = sum / (double)n;
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - out->mean) * (v[i] - out->mean);
        out->stddev = sqrt(ss / (double)(n - 1));
    }
}
