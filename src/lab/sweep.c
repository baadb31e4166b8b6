/*
 * sweep.c — threadgroup sizes to sweep, and the best point with its ties (see sweep.h).
 */
#include "lab/sweep.h"
#include "core/stats.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kp_sweep_default_sizes(uint64_t start, uint64_t kernel_max, uint64_t *out, int max)
{
    if (start == 0) start = 64;
    /* Start from a power of two at or above the execution width, or, when the kernel's maximum
     * is below the width (CUDA __launch_bounds__(16) on a 32-wide warp), from the largest power
     * of two it allows: a sweep never has no size because the width is too wide. */
    uint64_t s = 1;
    while (s < start)
        s *= 2;
    if (s > kernel_max && kernel_max > 0) {
        s = 1;
        while (s * 2 <= kernel_max)
            s *= 2;
    }
    int n = 0;
    for (; s <= kernel_max && n < max; s *= 2)
        out[n++] = s;
    return n;
}

int kp_sweep_default_shapes(uint64_t width, uint64_t kernel_max, const uint64_t max_dims[3],
                            const uint64_t grid[3], int uniform, uint64_t (*out)[3], int max)
{
    if (width == 0) width = 64;
    uint64_t w = 1; /* the width as a power of two at or above it */
    while (w < width)
        w *= 2;
    int n = 0;
    for (uint64_t total = w; total <= kernel_max && n < max; total *= 2) {
        uint64_t x = w;
        while (x * x < total)
            x *= 2; /* the squarest with x >= y */
        for (int k = 0; k < 3 && x <= total && n < max; k++, x *= 2) {
            uint64_t y = total / x;
            if ((max_dims[0] && x > max_dims[0]) || (max_dims[1] && y > max_dims[1])) continue;
            if (x > grid[0] || y > grid[1]) continue;
            if (uniform && (grid[0] % x || grid[1] % y)) continue;
            out[n][0] = x;
            out[n][1] = y;
            out[n][2] = 1;
            n++;
        }
    }
    return n;
}

static int kp_sweep_parse_shape(const char *text, uint64_t v[3], int *dims)
{
    v[0] = v[1] = v[2] = 1;
    *dims = 0;
    const char *p = text;
    for (;;) {
        if (!isdigit((unsigned char)*p) || *dims >= 3) return -1;
        errno = 0;
        char *end = NULL;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno || x == 0 || x > (1ULL << 32)) return -1;
        v[(*dims)++] = x;
        if (*end == '\0') return 0;
        if (*end != 'x') return -1;
        p = end + 1;
    }
}

kprof_status kp_sweep_parse_list(const char *text, const kp_launch *base, kp_sweep_point *out,
                                 int max, int *n, kp_error *err)
{
    *n = 0;
    if (!text || !*text)
        return kp_error_set(err, KPROF_INVALID, "--tg-list is empty: give sizes like 64,128,256");
    char buf[1024];
    if (strlen(text) >= sizeof buf)
        return kp_error_set(err, KPROF_INVALID, "--tg-list is too long");
    snprintf(buf, sizeof buf, "%s", text);
    kp_str bad = {0};
    int nbad = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        kp_rstrip(item);
        uint64_t v[3];
        int dims;
        if (kp_sweep_parse_shape(item, v, &dims) != 0) {
            kp_str_printf(&bad, "%s'%s' (%s)", nbad++ ? ", " : "", item,
                          strcmp(item, "0") == 0 || strstr(item, "x0") || item[0] == '0'
                              ? "zero"
                              : "not N, NxM or NxMxK");
            continue;
        }
        if (dims != base->dims) {
            kp_str_printf(&bad, "%s'%s' (%d-D, but the grid is %d-D)", nbad++ ? ", " : "", item,
                          dims, base->dims);
            continue;
        }
        if (*n >= max) {
            kp_str_free(&bad);
            return kp_error_set(err, KPROF_INVALID, "--tg-list has more than %d sizes", max);
        }
        kp_sweep_point *p = &out[(*n)++];
        memset(p, 0, sizeof *p);
        p->run.launch = *base;
        p->threads = 1;
        for (int d = 0; d < 3; d++) {
            p->run.launch.tg[d] = d < dims ? v[d] : 1;
            p->threads *= p->run.launch.tg[d];
        }
    }
    if (nbad) {
        kprof_status st = kp_error_set(err, KPROF_INVALID, "--tg-list: bad size%s %s",
                                       nbad == 1 ? "" : "s", bad.data ? bad.data : "");
        kp_str_free(&bad);
        return st;
    }
    kp_str_free(&bad);
    if (*n == 0) return kp_error_set(err, KPROF_INVALID, "--tg-list holds no sizes");
    return KPROF_OK;
}

void kp_sweep_summarise(kp_sweep_point *p, const double *samples_ms, size_t n, double *scratch)
{
    kp_run_result_time(&p->run, samples_ms, n, scratch);
    memcpy(scratch, samples_ms, n * sizeof *scratch);
    kp_sort_doubles(scratch, n);
    kp_median_ci_sorted(scratch, n, KP_SWEEP_CI_LEVEL, &p->median_ci);
    p->have_ci = 1;
    p->measured = 1;
}

int kp_sweep_mark(kp_sweep_point *points, int n)
{
    int best = -1, measured = 0;
    for (int i = 0; i < n; i++) {
        points[i].best = points[i].tie = 0;
        if (!points[i].measured) continue;
        measured++;
        if (best < 0 || points[i].run.stats.median < points[best].run.stats.median) best = i;
    }
    if (measured < 2) return -1; /* one size is not a comparison */
    points[best].best = 1;
    const kp_sweep_point *b = &points[best];
    double best_hi = b->have_ci ? b->median_ci.hi : b->run.p90;
    for (int i = 0; i < n; i++) {
        if (i == best || !points[i].measured) continue;
        const kp_sweep_point *p = &points[i];
        double lo = p->have_ci ? p->median_ci.lo : p->run.p10;
        if (p->run.stats.median > KP_SWEEP_TIE_RATIO * b->run.stats.median) continue;
        if (lo <= best_hi) points[i].tie = 1;
    }
    return best;
}
