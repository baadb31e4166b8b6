/*
 * clock.c — ticks and the tick map (see clock.h): which clock the hot path reads, the rate of
 * the time-stamp counter, and the continuous piecewise-linear map from ticks to CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include "core/clock.h"
#include "base/env.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kp_ticks_tsc;

static pthread_once_t kp_ticks_once = PTHREAD_ONCE_INIT;
static double kp_ticks_rate = 1.0;
static kp_tick_anchor kp_ticks_origin;

/* Whether the kernel keeps time with the counter: then it is invariant and the same on every
 * CPU (the kernel checks both before it chooses it), which is what the ticks need. */
static int kp_kernel_uses_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f) return 0;
    char name[64] = "";
    int ok = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    return ok && strncmp(name, "tsc", 3) == 0 && (name[3] == '\n' || name[3] == '\0');
}

kp_tick_anchor kp_tick_anchor_now(void)
{
    kp_tick_anchor best = {0, 0};
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t before = kp_ticks();
        int64_t ns = (int64_t)kp_now_ns();
        uint64_t after = kp_ticks();
        if (after - before < best_gap) {
            best_gap = after - before;
            best.tick = before + (after - before) / 2;
            best.ns = ns;
        }
    }
    if (!kp_ticks_tsc) best.tick = (uint64_t)best.ns; /* ns ticks: the pair is exact */
    return best;
}

static void kp_ticks_choose(void)
{
    const char *env = getenv(KP_ENV_CLOCK);
    int tsc = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    tsc = !(env && strcmp(env, "monotonic") == 0) && kp_kernel_uses_tsc();
#else
    (void)env;
#endif
    kp_ticks_tsc = tsc;
    kp_ticks_origin = kp_tick_anchor_now();
    if (!tsc) return;
    /* The rate over 2 ms: a pair's uncertainty is some 20 ns, so about 10 ppm, which the map's
     * anchors then steer out. */
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    kp_tick_anchor second = kp_tick_anchor_now();
    if (second.tick > kp_ticks_origin.tick && second.ns > kp_ticks_origin.ns)
        kp_ticks_rate =
            (double)(second.ns - kp_ticks_origin.ns) / (double)(second.tick - kp_ticks_origin.tick);
    else
        kp_ticks_tsc = 0; /* a counter that does not advance with time: not a clock */
    if (!kp_ticks_tsc) kp_ticks_origin = kp_tick_anchor_now();
}

void kp_ticks_setup(double *rate, kp_tick_anchor *origin)
{
    pthread_once(&kp_ticks_once, kp_ticks_choose);
    *rate = kp_ticks_tsc ? kp_ticks_rate : 1.0;
    *origin = kp_ticks_origin;
}

kprof_status kp_tick_map_init(kp_tick_map *m, int identity, kp_tick_anchor origin, double rate,
                              kp_tick_anchor first, kp_error *err)
{
    memset(m, 0, sizeof *m);
    m->identity = identity;
    m->origin = origin;
    m->rate = rate > 0 ? rate : 1.0;
    if (identity) return KPROF_OK;
    m->segments = malloc(64 * sizeof *m->segments);
    if (!m->segments) return kp_error_nomem(err);
    m->cap = 64;
    m->segments[0] = (kp_tick_segment){first.tick, first.ns, m->rate, first.ns, 0, m->rate};
    m->n = 1;
    return KPROF_OK;
}

void kp_tick_map_free(kp_tick_map *m)
{
    free(m->segments);
    memset(m, 0, sizeof *m);
}

/* The value of segment s at tick: slewing up to its horizon, at the rate after it (before s.tick
 * too: the first segment, which does not slew, extends backwards). */
static int64_t kp_segment_ns(const kp_tick_segment *s, uint64_t tick)
{
    if (tick < s->tick) return s->ns - (int64_t)llround((double)(s->tick - tick) * s->ns_per_tick);
    uint64_t delta = tick - s->tick;
    if (delta <= s->slew_ticks) return s->ns + (int64_t)llround((double)delta * s->ns_per_tick);
    return s->ns + (int64_t)llround((double)s->slew_ticks * s->ns_per_tick +
                                    (double)(delta - s->slew_ticks) * s->after_per_tick);
}

int64_t kp_tick_map_ns(const kp_tick_map *m, uint64_t tick)
{
    if (m->identity || m->n == 0) return (int64_t)tick;
    /* Most ticks fall in the last segment (a drain converts what was just recorded). */
    size_t lo = 0, hi = m->n - 1;
    if (tick >= m->segments[hi].tick) return kp_segment_ns(&m->segments[hi], tick);
    while (lo < hi) { /* the last segment starting at or before tick */
        size_t mid = lo + (hi - lo + 1) / 2;
        if (m->segments[mid].tick <= tick)
            lo = mid;
        else
            hi = mid - 1;
    }
    return kp_segment_ns(&m->segments[lo], tick);
}

void kp_tick_map_anchor(kp_tick_map *m, kp_tick_anchor a, double horizon_ns)
{
    if (m->identity || m->n == 0) return;
    kp_tick_segment *last = &m->segments[m->n - 1];
    if (a.tick <= last->tick || (double)(a.tick - last->tick) * m->rate < 1000.0) return;
    if (m->n == m->cap) {
        kp_tick_segment *grown = realloc(m->segments, 2 * m->cap * sizeof *grown);
        if (!grown) return;
        m->segments = grown;
        m->cap *= 2;
        last = &m->segments[m->n - 1];
    }
    /* The rate over the window: from the newest anchor at least a window older than this one
     * (the process's origin while there is none). */
    kp_tick_anchor base = m->origin;
    for (size_t i = m->n; i-- > 0;) {
        if (a.ns - m->segments[i].measured >= KP_TICK_RATE_WINDOW_NS) {
            base.tick = m->segments[i].tick;
            base.ns = m->segments[i].measured;
            break;
        }
    }
    if (a.tick > base.tick && a.ns > base.ns)
        m->rate = (double)(a.ns - base.ns) / (double)(a.tick - base.tick);
    int64_t here = kp_segment_ns(last, a.tick);
    double slew = horizon_ns > 0 ? (double)(a.ns - here) / horizon_ns : 0.0;
    if (slew > KP_TICK_MAX_SLEW) slew = KP_TICK_MAX_SLEW;
    if (slew < -KP_TICK_MAX_SLEW) slew = -KP_TICK_MAX_SLEW;
    /* The gap closes over the horizon and the slew stops there: the next anchor, however late,
     * finds only the drift since (a slew kept up until it would overshoot by the lateness, and
     * anchors over two horizons apart would swing the map ever wider). */
    uint64_t slew_ticks = horizon_ns > 0 ? (uint64_t)(horizon_ns / m->rate) : 0;
    m->segments[m->n++] =
        (kp_tick_segment){a.tick, here, m->rate * (1.0 + slew), a.ns, slew_ticks, m->rate};
}
