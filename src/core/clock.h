/*
 * clock.h — the in-process profiler's cheap clock. A scope reads "ticks" on its hot path: the
 * CPU's time-stamp counter (rdtsc, about 10 ns in a VM, where clock_gettime costs 22) where the
 * kernel itself keeps time with it, else CLOCK_MONOTONIC nanoseconds. Ticks become trace times
 * (CLOCK_MONOTONIC ns, as every other record's) only when the records are drained, through a
 * tick map:
 *
 *   - the counter's rate is measured once per process (two pairs of rdtsc and clock_gettime a
 *     few milliseconds apart) and measured again at every later pair, over the last second or
 *     so of anchors (long enough for the pairs' noise to vanish, short enough to follow NTP
 *     changing CLOCK_MONOTONIC's rate);
 *   - the map is piecewise linear, continuous and strictly increasing: each anchor (a new pair,
 *     taken by the drain now and then) starts a segment where the map already was, with a slope
 *     that closes the gap to the measured CLOCK_MONOTONIC over the next `horizon` (slewing, at
 *     most KP_TICK_MAX_SLEW, never jumping), and the measured rate after it. So two ticks keep
 *     their order and their nesting whichever drain converts them, and the map follows
 *     CLOCK_MONOTONIC (NTP's slewing included) within the noise of a pair, tens of nanoseconds,
 *     once it has settled — however late the next anchor comes. (The slew ends at the horizon:
 *     kept up until the next anchor, an anchor that came late — a drain the machine's load held
 *     up — overshot the gap, and anchors more than two horizons apart made the map swing ever
 *     wider about CLOCK_MONOTONIC, up to KP_TICK_MAX_SLEW of the time between them: tens of
 *     microseconds, against the other records' CLOCK_MONOTONIC times.)
 *
 * A tick converted before an anchor is added converts to the same value after it: anchors are
 * measured while no conversion runs (the caller's write lock), and a segment only ever covers
 * ticks from its anchor on.
 *
 * KPROF_CLOCK=monotonic makes the ticks CLOCK_MONOTONIC ns (the map is then the identity): for
 * machines whose counter kprof cannot trust, and for the tests of that path.
 */
#ifndef KP_CORE_CLOCK_H
#define KP_CORE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/util.h"

#define KP_TICK_MAX_SLEW 1e-3 /* the most a segment's slope departs from the rate (1000 ppm) */

/* Set once by kp_ticks_setup: 1 when ticks are the time-stamp counter. */
extern int kp_ticks_tsc;

/* The ticks now. Before kp_ticks_setup (and wherever it chose so) CLOCK_MONOTONIC ns. */
static inline uint64_t kp_ticks(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_expect(kp_ticks_tsc, 1)) return __builtin_ia32_rdtsc();
#endif
    return kp_now_ns();
}

/* A tick and the CLOCK_MONOTONIC time read together. */
typedef struct kp_tick_anchor {
    uint64_t tick;
    int64_t ns;
} kp_tick_anchor;

/* Choose the ticks (once per process; thread-safe) and, for the counter, measure its rate:
 * about 2 ms the first time. *rate: ns per tick (1 for ns ticks); *origin: the first anchor of
 * the process, the baseline later anchors refine the rate over. */
void kp_ticks_setup(double *rate, kp_tick_anchor *origin);

/* A tick and the time now, the best (tightest) of a few tries. */
kp_tick_anchor kp_tick_anchor_now(void);

typedef struct kp_tick_segment {
    uint64_t tick;         /* from here on (up to the next segment) */
    int64_t ns;            /* the map's value at tick */
    double ns_per_tick;    /* its slope while it slews (and before tick: the first segment) */
    int64_t measured;      /* CLOCK_MONOTONIC at tick, as the anchor read it */
    uint64_t slew_ticks;   /* the horizon, in ticks: the slew ends there */
    double after_per_tick; /* the slope after it: the rate the anchor measured */
} kp_tick_segment;

#define KP_TICK_RATE_WINDOW_NS 1000000000ll /* the span the rate is measured over */

typedef struct kp_tick_map {
    int identity;          /* ticks are ns already */
    kp_tick_anchor origin; /* the rate's baseline until the anchors span the window */
    double rate;           /* ns per tick, as last measured */
    kp_tick_segment *segments;
    size_t n, cap;
} kp_tick_map;

/* A map starting at `first` (its first segment), with the process's rate and origin. identity:
 * ticks are ns (then nothing else matters). KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_tick_map_init(kp_tick_map *m, int identity, kp_tick_anchor origin, double rate,
                              kp_tick_anchor first, kp_error *err);
void kp_tick_map_free(kp_tick_map *m);

/* A new anchor (measured now, with no conversion running meanwhile): a segment from a.tick on,
 * starting where the map was there, slewing towards a.ns over horizon_ns (the time to the next
 * anchor, were it on time) and at the measured rate from then on. Anchors must come
 * in order of tick; one that does not (or comes within a microsecond's ticks of the last) is
 * ignored, as is one that cannot be stored (out of memory: the map extrapolates on). */
void kp_tick_map_anchor(kp_tick_map *m, kp_tick_anchor a, double horizon_ns);

/* A tick as CLOCK_MONOTONIC ns. Thread-safe against other conversions (not against anchor). */
int64_t kp_tick_map_ns(const kp_tick_map *m, uint64_t tick);

#endif
