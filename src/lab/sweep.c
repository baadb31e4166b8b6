/*
 * sweep.c — threadgroup sizes to sweep, the best point with its ties, and running a sweep: the
 * points measured in order on the calling thread, a watcher thread that tells an observer and
 * takes SIGINT, SIGTERM and SIGHUP through a signalfd (see sweep.h).
 */
#define _GNU_SOURCE
#include "lab/sweep.h"
#include "base/util.h"
#include "core/readings.h"
#include "core/stats.h"
#include "lab/result_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>
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

/* One size of --tg-list, "N", "NxM" or "NxMxK": KPROF_OK with v and dims, or KPROF_INVALID with
 * err saying "'TEXT' (zero)" or "'TEXT' (not N, NxM or NxMxK)" (the list names every bad one). */
static kprof_status kp_sweep_parse_shape(const char *text, uint64_t v[3], int *dims, kp_error *err)
{
    v[0] = v[1] = v[2] = 1;
    *dims = 0;
    const char *p = text;
    for (;;) {
        if (!isdigit((unsigned char)*p) || *dims >= 3) goto bad;
        errno = 0;
        char *end = NULL;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno || x == 0 || x > (1ULL << 32)) goto bad;
        v[(*dims)++] = x;
        if (*end == '\0') return KPROF_OK;
        if (*end != 'x') goto bad;
        p = end + 1;
    }
bad:
    return kp_error_set(err, KPROF_INVALID, "'%s' (%s)", text,
                        strcmp(text, "0") == 0 || strstr(text, "x0") || text[0] == '0'
                            ? "zero"
                            : "not N, NxM or NxMxK");
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
        kp_error shape = {0};
        if (kp_sweep_parse_shape(item, v, &dims, &shape) != KPROF_OK) {
            /* Its item escaped already; the list's kp_error_set below leaves it so. */
            kp_str_printf(&bad, "%s%s", nbad++ ? ", " : "", shape.message);
            kp_error_clear(&shape);
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

/* ---- running a sweep ---------------------------------------------------------------------- */

/* "4096", "64x32", "8x8x4": the dims first values of v. */
static void kp_sweep_dims_text(const uint64_t *v, int dims, char *buf, size_t n)
{
    if (dims == 1)
        snprintf(buf, n, "%llu", (unsigned long long)v[0]);
    else if (dims == 2)
        snprintf(buf, n, "%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1]);
    else
        snprintf(buf, n, "%llux%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1],
                 (unsigned long long)v[2]);
}

void kp_sweep_tg_text(const kp_sweep_point *p, char *buf, size_t n)
{
    kp_sweep_dims_text(p->run.launch.tg, p->run.launch.dims, buf, n);
}

static int kp_same_tg(const kp_launch *a, const kp_launch *b)
{
    return a->tg[0] == b->tg[0] && a->tg[1] == b->tg[1] && a->tg[2] == b->tg[2];
}

/* Add the size of --tg to the sweep unless it is there already, and remember which it is: in
 * order of threads among default sizes, at the end of a --tg-list. */
static kprof_status kp_sweep_add_your_tg(kp_sweep *s, kp_error *err)
{
    const kp_sweep_config *a = &s->cfg;
    for (int i = 0; i < s->npoints; i++)
        if (kp_same_tg(&s->points[i].run.launch, &a->launch)) {
            s->your_tg = i;
            return KPROF_OK;
        }
    if (s->npoints >= KP_SWEEP_MAX_POINTS)
        return kp_error_set(err, KPROF_INVALID, "the sweep has %d sizes already, no room for --tg",
                            KP_SWEEP_MAX_POINTS);
    uint64_t threads = kp_launch_tg_threads(&a->launch);
    int at = 0;
    if (a->tg_list) at = s->npoints;
    while (at < s->npoints && s->points[at].threads < threads)
        at++;
    memmove(&s->points[at + 1], &s->points[at], (size_t)(s->npoints - at) * sizeof s->points[0]);
    kp_sweep_point *p = &s->points[at];
    memset(p, 0, sizeof *p);
    p->run.launch = a->launch;
    p->threads = threads;
    s->npoints++;
    s->your_tg = at;
    return KPROF_OK;
}

/* The sizes to sweep: --tg-list; or the kernel's required size when it has one; or powers of
 * two from the execution width to the kernel's maximum. Then --tg's size, when given. */
static kprof_status kp_sweep_points(kp_sweep *s, kp_error *err)
{
    const kp_sweep_config *a = &s->cfg;
    const kp_lab_info *info = kp_lab_get_info(s->lab);
    kp_launch probe = a->launch;
    for (int d = 0; d < 3; d++)
        probe.tg[d] = 1;
    kprof_status st = kp_lab_reflect(s->lab, &probe, &s->refl, err);
    if (st != KPROF_OK) return st;
    s->kernel_max_tg = s->refl.max_tg ? s->refl.max_tg : info->device.max_tg;
    if (a->tg_list) {
        st = kp_sweep_parse_list(a->tg_list, &a->launch, s->points, KP_SWEEP_MAX_POINTS,
                                 &s->npoints, err);
        if (st == KPROF_OK && a->tg_set) st = kp_sweep_add_your_tg(s, err);
        return st;
    }
    if (s->refl.tg_rule == KP_TG_RULE_REQUIRED) {
        /* One legal size: that one (checked below like any other: a shape with more
         * dimensions than the grid is named there). */
        kp_sweep_point *p = &s->points[s->npoints++];
        memset(p, 0, sizeof *p);
        p->run.launch = a->launch;
        for (int d = 0; d < 3; d++)
            p->run.launch.tg[d] = s->refl.tg_rule_size[d];
        p->threads = kp_tg_rule_threads(&s->refl);
        s->required_only = 1;
        return a->tg_set ? kp_sweep_add_your_tg(s, err) : KPROF_OK;
    }
    uint64_t start = info->device.exec_width ? info->device.exec_width : s->refl.preferred_multiple;
    if (a->launch.dims != 1) {
        /* 2-D and 3-D grids: shapes whose x is a multiple of the width, z 1 (sweep.h). */
        uint64_t shapes[KP_SWEEP_MAX_POINTS][3];
        int n = kp_sweep_default_shapes(start ? start : 64, s->kernel_max_tg,
                                        info->device.max_tg_dims, a->launch.grid,
                                        info->device.uniform_groups, shapes, KP_SWEEP_MAX_POINTS);
        for (int i = 0; i < n; i++) {
            kp_sweep_point *p = &s->points[s->npoints++];
            memset(p, 0, sizeof *p);
            p->run.launch = a->launch;
            for (int d = 0; d < 3; d++)
                p->run.launch.tg[d] = shapes[i][d];
            p->threads = shapes[i][0] * shapes[i][1];
        }
        if (a->tg_set && (st = kp_sweep_add_your_tg(s, err)) != KPROF_OK) return st;
        if (s->npoints == 0) {
            char g[64];
            kp_sweep_dims_text(a->launch.grid, a->launch.dims, g, sizeof g);
            return kp_error_set(err, KPROF_INVALID,
                                "no threadgroup shape whose x is a multiple of %llu fits grid %s "
                                "(up to %llu threads): give --tg-list, e.g. 8x8,16x16,32x8",
                                (unsigned long long)(start ? start : 64), g,
                                (unsigned long long)s->kernel_max_tg);
        }
        return KPROF_OK;
    }
    uint64_t sizes[KP_SWEEP_MAX_POINTS];
    int n =
        kp_sweep_default_sizes(start ? start : 64, s->kernel_max_tg, sizes, KP_SWEEP_MAX_POINTS);
    kp_str skipped = {0};
    for (int i = 0; i < n; i++) {
        if (info->device.uniform_groups && a->launch.grid[0] % sizes[i] != 0) {
            kp_str_printf(&skipped, "%s%llu", skipped.len ? ", " : "",
                          (unsigned long long)sizes[i]);
            continue;
        }
        kp_sweep_point *p = &s->points[s->npoints++];
        memset(p, 0, sizeof *p);
        p->run.launch = a->launch;
        p->run.launch.tg[0] = sizes[i];
        p->threads = sizes[i];
    }
    if (skipped.len)
        snprintf(s->skipped, sizeof s->skipped,
                 "tg %s (grid %llu is not a multiple, and %s needs whole threadgroups)",
                 skipped.data, (unsigned long long)a->launch.grid[0], info->device.backend);
    kp_str_free(&skipped);
    if (a->tg_set) {
        st = kp_sweep_add_your_tg(s, err);
        if (st != KPROF_OK) return st;
    }
    if (s->npoints == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "no threadgroup size from %llu to %llu divides grid %llu: give "
                            "--tg-list or a grid that is a power of two",
                            (unsigned long long)start, (unsigned long long)s->kernel_max_tg,
                            (unsigned long long)a->launch.grid[0]);
    return KPROF_OK;
}

/* Tell the printing thread something changed. The pipe is non-blocking: when it is full, the
 * printer has a wake-up pending anyway. */
static void kp_sweep_wake(kp_sweep *s)
{
    char c = 1;
    ssize_t w = write(s->wake[1], &c, 1);
    (void)w;
}

/* Everything up to the first dispatch, the lab being open: choose and check the sizes, look up
 * the ceiling, and the readings that follow the table. */
static kprof_status kp_sweep_prepare(kp_sweep *s, kp_error *err)
{
    const kp_sweep_config *a = &s->cfg;
    kprof_status st;
    const kp_lab_info *info = kp_lab_get_info(s->lab);
    pthread_mutex_lock(&s->mu);
    s->info = *info;
    pthread_mutex_unlock(&s->mu);
    st = kp_sweep_points(s, err);
    if (st != KPROF_OK) return st;

    /* Every size is checked before anything runs; each bad one is named, one per line (the
     * line breaks are in the formats: arguments are escaped). */
    for (int i = 0; i < s->npoints; i++) {
        kp_error one = {0};
        if (kp_lab_check_launch(s->lab, &s->points[i].run.launch, &s->points[i].run.refl, &one) !=
            KPROF_OK) {
            kp_error_set(err, KPROF_INVALID, "the sweep cannot use these threadgroup sizes:");
            kp_error_append(err, "\n  %s%s", i == s->your_tg ? "your --tg: " : "", one.message);
        }
        kp_error_clear(&one);
    }
    if (err->status != KPROF_OK) return err->status;

    if (a->ceiling) a->ceiling(a->ceiling_user, &info->device, &s->ceiling_gbs, &s->peak_gflops);
    if (a->counters) {
        s->counters = calloc((size_t)s->npoints, sizeof *s->counters);
        if (!s->counters) return kp_error_nomem(err);
        /* A backend without counters is known now: no columns of dashes. */
        kp_error off = {0};
        s->counter_columns = kp_lab_counters_check(s->lab, &off) == KPROF_OK;
        if (!s->counter_columns) kp_strlcpy(s->counters_off, off.message, sizeof s->counters_off);
        kp_error_clear(&off);
    }
    s->bytes_assumed = !a->have_bytes;
    s->bytes = a->have_bytes ? a->bytes : info->buffer_bytes;

    /* The seed's warnings: register pressure and static shared memory near the limit. A
     * maximum the kernel declares itself is not register pressure. */
    kp_readings_input rin = {
        .kernel_max_tg = kp_reflection_limit_declared(&s->refl) ? 0 : s->kernel_max_tg,
        .device_max_tg = info->device.max_tg,
        .static_local = s->refl.static_local,
        .device_local = info->device.local_mem,
    };
    kp_readings r;
    kp_readings_compute(&rin, &r);
    kp_reading_line lines[16];
    int nl = kp_readings_describe(&rin, &r, lines, 16);
    for (int i = 0; i < nl && s->nwarnings < 4; i++)
        if (strcmp(lines[i].id, "register_pressure") == 0 ||
            strcmp(lines[i].id, "shared_memory_bound") == 0)
            s->warnings[s->nwarnings++] = lines[i];
    return KPROF_OK;
}

/* --counters at point i (measured, p its copy): one replayed dispatch read into s->counters[i],
 * and the point's readings from it. Once a point finds the counters cannot be read, the rest
 * are not asked (their reason is the first's). */
static kprof_status kp_sweep_counters(kp_sweep *s, int i, kp_sweep_point *p, kp_error *err)
{
    kp_counters *c = &s->counters[i];
    *c = s->cfg.counters_asked; /* the raw names */
    if (s->counters_off[0]) {
        c->read = 1;
        c->have = 0;
        snprintf(c->why_not, sizeof c->why_not, "%s", s->counters_off);
    } else {
        kprof_status st = kp_lab_counters(s->lab, &p->run.launch, c, err);
        if (st != KPROF_OK) return st;
        if (!c->have) snprintf(s->counters_off, sizeof s->counters_off, "%s", c->why_not);
    }
    p->run.counters = c;
    p->run.peak_gflops = s->peak_gflops;
    uint64_t threads = 0;
    uint64_t grid_bytes = kp_lab_grid_bytes(s->lab, &p->run.launch, &threads);
    kp_run_result_read(&p->run, &s->info.device, s->info.buffer_bytes, grid_bytes, threads);
    return KPROF_OK;
}

/* The sweep itself, on the calling thread (the backends' runtimes stay on the thread that
 * opened them): prepare, then every point in order, telling the watcher after each change. */
static void kp_sweep_work(kp_sweep *s)
{
    const kp_sweep_config *a = &s->cfg;
    kp_error err = {0};
    double *samples = calloc((size_t)a->iters, sizeof *samples);
    double *scratch = calloc((size_t)a->iters, sizeof *scratch);
    kprof_status st = KPROF_OK;
    int stopped = 0;
    s->lowest_samples = calloc((size_t)a->iters, sizeof *s->lowest_samples);
    if (!samples || !scratch || !s->lowest_samples) st = kp_error_nomem(&err);
    if (st == KPROF_OK) st = kp_sweep_prepare(s, &err);
    if (st == KPROF_OK) {
        pthread_mutex_lock(&s->mu);
        s->checked = 1;
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
    }
    for (int i = 0; st == KPROF_OK && i < s->npoints; i++) {
        pthread_mutex_lock(&s->mu);
        s->current = i;
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
        kp_sweep_point p = s->points[i];
        /* The time budget is the sweep's: each size gets an equal share of it. */
        double budget = s->cfg.budget_s / s->npoints;
        int timed = 0;
        st = kp_lab_measure_within(s->lab, &p.run.launch, a->warmup, a->iters, budget, samples,
                                   &timed, &err);
        if (st != KPROF_OK && kp_lab_is_void(s->lab)) break; /* no row measured stands */
        if (st != KPROF_OK) {
            char tg[48];
            kp_sweep_tg_text(&p, tg, sizeof tg);
            kp_error_append(&err, " (at tg %s; the sweep stopped)", tg);
            stopped = 1;
            break;
        }
        kp_sweep_summarise(&p, samples, (size_t)timed, scratch);
        if (s->lowest < 0 || p.run.stats.median < s->points[s->lowest].run.stats.median) {
            s->lowest = i;
            memcpy(s->lowest_samples, samples, (size_t)timed * sizeof *samples);
        }
        p.run.iters = timed;
        p.run.warmup = a->warmup;
        kp_run_result_bandwidth(&p.run, s->bytes, s->bytes_assumed, s->ceiling_gbs);
        if (!a->counters) { /* the readings `kprof run` gives (with counters: below) */
            uint64_t threads = 0;
            uint64_t grid_bytes = kp_lab_grid_bytes(s->lab, &p.run.launch, &threads);
            kp_run_result_read(&p.run, &s->info.device, s->info.buffer_bytes, grid_bytes, threads);
        }
        if (a->counters) {
            st = kp_sweep_counters(s, i, &p, &err);
            if (st != KPROF_OK && kp_lab_is_void(s->lab)) break;
            if (st != KPROF_OK) {
                char tg[48];
                kp_sweep_tg_text(&p, tg, sizeof tg);
                kp_error_append(&err, " (reading counters at tg %s; the sweep stopped)", tg);
                stopped = 1;
                break;
            }
        }
        pthread_mutex_lock(&s->mu);
        s->points[i] = p;
        s->nmeasured = i + 1;
        s->info = *kp_lab_get_info(s->lab); /* the timer it was measured with */
        pthread_mutex_unlock(&s->mu);
        kp_sweep_wake(s);
    }
    /* What was measured stands only once the session released the device cleanly (lab.h). */
    if (st == KPROF_OK && s->npoints > 0 && !stopped) st = kp_lab_finish(s->lab, &err);
    free(samples);
    free(scratch);
    pthread_mutex_lock(&s->mu);
    s->voided = s->lab && kp_lab_is_void(s->lab);
    s->status = st;
    s->err = err; /* the log, if any, moves with it */
    s->stopped = stopped;
    s->finished = 1;
    pthread_mutex_unlock(&s->mu);
    kp_sweep_wake(s);
}

/* The signals a sweep takes itself: SIGINT, SIGTERM and SIGHUP, less any ignored when kprof
 * started (nohup): those stay ignored. */
static void kp_sweep_signal_set(sigset_t *set)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaddset(set, sigs[i]);
    }
}

/* The watcher: tells the observer after every change, and takes the signals. It never calls
 * into a backend. Returns once the sweep has finished. */
static void *kp_sweep_watch(void *arg)
{
    kp_sweep *s = arg;
    const kp_sweep_observer *obs = s->observer;
    for (;;) {
        struct pollfd fds[2] = {{.fd = s->signal_fd, .events = POLLIN},
                                {.fd = s->wake[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return NULL; /* cannot happen; rows wait */
        char drain[64];
        while (read(s->wake[0], drain, sizeof drain) > 0)
            continue;
        pthread_mutex_lock(&s->mu);
        if (obs->changed) obs->changed(obs->user, s);
        int finished = s->finished;
        pthread_mutex_unlock(&s->mu);
        /* Finished first: a signal that comes with the last point finds everything measured;
         * kp_sweep_release returns it (the caller still ends with 128 + the signal). */
        if (finished) return NULL;
        struct signalfd_siginfo si;
        if (read(s->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
            pthread_mutex_lock(&s->mu); /* held from here on: the sweep changes nothing */
            if (obs->signal) obs->signal(obs->user, s, (int)si.ssi_signo);
            pthread_mutex_unlock(&s->mu);
        }
    }
}

void kp_sweep_init(kp_sweep *s, const kp_sweep_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->best = -1;
    s->your_tg = -1;
    s->current = -1;
    s->lowest = -1;
    s->iters = cfg->iters;
    s->warmup = cfg->warmup;
    s->wake[0] = s->wake[1] = -1;
    s->signal_fd = -1;
    pthread_mutex_init(&s->mu, NULL);
}

kprof_status kp_sweep_catch_signals(kp_sweep *s, kp_error *err)
{
    sigset_t set;
    /* Blocked before any thread exists (the runtime's own threads, made later, inherit the
     * mask), and read from a signalfd on the watcher thread. */
    kp_sweep_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &s->old_mask);
    s->masked = 1;
    s->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s->signal_fd < 0 || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return kp_error_set(err, KPROF_IO, "cannot set up the sweep: %s", strerror(errno));
    return KPROF_OK;
}

kprof_status kp_sweep_execute(kp_sweep *s, const kp_sweep_observer *obs, kp_error *err)
{
    s->observer = obs;
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, kp_sweep_watch, s) != 0)
        return kp_error_set(err, KPROF_NOMEM, "cannot start the sweep's printing thread");
    kp_sweep_work(s);
    pthread_join(watcher, NULL);
    return KPROF_OK;
}

int kp_sweep_release(kp_sweep *s)
{
    int sig = 0;
    if (s->signal_fd >= 0) {
        struct signalfd_siginfo si;
        if (read(s->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) sig = (int)si.ssi_signo;
        close(s->signal_fd);
        s->signal_fd = -1;
    }
    if (s->masked) pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
    s->masked = 0;
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    s->wake[0] = s->wake[1] = -1;
    pthread_mutex_destroy(&s->mu);
    free(s->lowest_samples);
    free(s->counters);
    s->lowest_samples = NULL;
    s->counters = NULL;
    kp_error_clear(&s->err);
    return sig;
}

/* Append item (then more) to the list in buf, ", " before all but the first (index i). */
static void kp_sweep_list_add(char *buf, size_t n, int i, const char *item, const char *more)
{
    size_t len = strlen(buf);
    if (len < n) snprintf(buf + len, n - len, "%s%s%s", i ? ", " : "", item, more);
}

void kp_sweep_close_summary(const kp_sweep *s, kp_sweep_summary *out)
{
    *out = (kp_sweep_summary){.only = -1};
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        out->measured++;
        if (out->only < 0) out->only = i;
        if (p->run.iters >= s->iters) continue;
        out->cut++;
        if (!out->fewest || p->run.iters < out->fewest) out->fewest = p->run.iters;
    }
    if (out->measured != 1) out->only = -1;

    int top = -1;
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        char tg[48];
        kp_sweep_tg_text(p, tg, sizeof tg);
        if (p->tie)
            kp_sweep_list_add(out->ties, sizeof out->ties, out->nties++, tg,
                              i == s->your_tg ? " (your --tg)" : "");
        if (!kp_sweep_above_ceiling(p, out->above_why, sizeof out->above_why)) continue;
        kp_sweep_list_add(out->above, sizeof out->above, out->nabove++, tg, "");
        if (top < 0 || p->run.gbps > s->points[top].run.gbps) top = i;
    }
    out->above_why[0] = '\0';
    if (top >= 0) kp_sweep_above_ceiling(&s->points[top], out->above_why, sizeof out->above_why);

    if (s->best >= 0 && s->best < s->npoints && s->your_tg >= 0 && s->your_tg < s->npoints &&
        s->your_tg != s->best) {
        const kp_sweep_point *b = &s->points[s->best], *y = &s->points[s->your_tg];
        if (y->measured && !y->tie && b->run.stats.median > 0)
            out->your_ratio = y->run.stats.median / b->run.stats.median;
    }
}
