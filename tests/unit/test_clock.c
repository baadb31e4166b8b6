/* test_clock.c — the scopes' tick map (core/clock.h): continuous at every anchor, never going
 * back, following a clock whose rate was measured wrong and which is slewed meanwhile, ignoring
 * anchors out of order, staying on the clock when anchors come late; and the real clock: the
 * process's rate, mapped against clock_gettime. */
#include "core/clock.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The "true" clock of the synthetic tests: ns = 1e12 + tick * 0.4 * (1 + drift) after tick
 * 1e9, with 50 ppm more from there (NTP slewing the clock the map follows). */
static double truth(uint64_t tick)
{
    double ns = 1e12 + (double)tick * 0.4;
    if (tick > 1000000000ull) ns += (double)(tick - 1000000000ull) * 0.4 * 50e-6;
    return ns;
}

static kp_tick_anchor anchor_at(uint64_t tick)
{
    kp_tick_anchor a = {tick, (int64_t)llround(truth(tick))};
    return a;
}

static void test_synthetic(void)
{
    kp_tick_map m;
    /* The rate measured 20 ppm low, as a short calibration might. */
    double rate = 0.4 * (1 - 20e-6);
    CHECK_INT(kp_tick_map_init(&m, 0, anchor_at(0), rate, anchor_at(1000), NULL), 0);
    double horizon_ns = 10e6; /* anchors every 10 ms: 25M ticks */
    uint64_t step = 25000000;
    int64_t last = kp_tick_map_ns(&m, 1000);
    int went_back = 0, jumped = 0;
    double worst_late = 0;
    for (uint64_t t = 1000 + step; t < 1000 + 400 * step; t += step) {
        /* Dense samples up to the anchor, then the anchor, then the same ticks again. */
        int64_t before[64];
        for (int i = 0; i < 64; i++) {
            uint64_t tick = t - step + (uint64_t)i * (step / 64);
            before[i] = kp_tick_map_ns(&m, tick);
            if (before[i] < last) went_back++;
            last = before[i];
        }
        int64_t at_before = kp_tick_map_ns(&m, t);
        kp_tick_map_anchor(&m, anchor_at(t), horizon_ns);
        int64_t at_after = kp_tick_map_ns(&m, t);
        if (llabs(at_after - at_before) > 1) jumped++;
        for (int i = 0; i < 64; i++) /* a tick converts the same before and after an anchor */
            if (kp_tick_map_ns(&m, t - step + (uint64_t)i * (step / 64)) != before[i]) jumped++;
        if (t > 1000 + 250 * step) { /* settled (the rate's window past the slewing's start):
                                         within a few ns of the truth */
            double err = fabs((double)at_after - truth(t));
            if (err > worst_late) worst_late = err;
        }
    }
    CHECK_INT(went_back, 0);
    CHECK_INT(jumped, 0);
    CHECK(worst_late < 50.0);
    /* Out of order, or too close to the last: ignored. */
    size_t n = m.n;
    kp_tick_map_anchor(&m, anchor_at(5), horizon_ns);
    kp_tick_map_anchor(&m, anchor_at(m.segments[m.n - 1].tick + 10), horizon_ns);
    CHECK_INT(m.n, n);
    /* Before the first segment: the first extends backwards. */
    CHECK(kp_tick_map_ns(&m, 0) < kp_tick_map_ns(&m, 1000));
    kp_tick_map_free(&m);
}

/* Anchors that come late — three horizons apart, as from a drain thread the machine's load kept
 * waiting — with the rate measured 20 ppm low: the map stays within the drift between anchors of
 * the truth everywhere between them, never swinging about it. (A slew kept up past its horizon
 * overshot by the lateness: anchors over two horizons apart swung the map ever wider, here some
 * 18 us, against CLOCK_MONOTONIC times of other records that scopes must nest with.) */
static void test_late_anchors(void)
{
    kp_tick_map m;
    CHECK_INT(kp_tick_map_init(&m, 0, anchor_at(0), 0.4 * (1 - 20e-6), anchor_at(1000), NULL), 0);
    double horizon_ns = 10e6;
    uint64_t step = 75000000; /* 30 ms of ticks */
    double worst = 0, worst_late = 0;
    for (uint64_t t = 1000 + step; t < 1000 + 200 * step; t += step) {
        for (int i = 0; i < 64; i++) {
            uint64_t tick = t - step + (uint64_t)i * (step / 64);
            double err = fabs((double)kp_tick_map_ns(&m, tick) - truth(tick));
            if (err > worst) worst = err;
            if (t > 1000 + 100 * step && err > worst_late) worst_late = err;
        }
        kp_tick_map_anchor(&m, anchor_at(t), horizon_ns);
    }
    /* The drift over one interval at most: the calibration's 20 ppm over the first 30 ms
     * (600 ns), then the truth's 50 ppm change while the rate's window catches up (1.1 us). */
    CHECK(worst < 2000.0);
    CHECK(worst_late < 100.0); /* settled: the rate measured over the window */
    kp_tick_map_free(&m);
}

static void test_identity(void)
{
    kp_tick_map m;
    kp_tick_anchor a = {5, 5};
    CHECK_INT(kp_tick_map_init(&m, 1, a, 1.0, a, NULL), 0);
    CHECK_INT(kp_tick_map_ns(&m, 123456789), 123456789);
    kp_tick_map_anchor(&m, a, 1e6);
    CHECK_INT(kp_tick_map_ns(&m, 42), 42);
    kp_tick_map_free(&m);
}

static void test_real_clock(void)
{
    double rate;
    kp_tick_anchor origin;
    kp_ticks_setup(&rate, &origin);
    CHECK(rate > 0);
    CHECK(origin.tick > 0);
    kp_tick_map m;
    kp_tick_anchor first = kp_tick_anchor_now();
    CHECK_INT(kp_tick_map_init(&m, !kp_ticks_tsc, origin, rate, first, NULL), 0);
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
    /* 20 ms on: the first calibration's rate is good to some 10 ppm, so well under 5 µs off
     * (a loaded machine's scheduling does not enter: the pair is read back to back). */
    kp_tick_anchor later = kp_tick_anchor_now();
    int64_t mapped = kp_tick_map_ns(&m, later.tick);
    CHECK(llabs(mapped - later.ns) < 5000);
    uint64_t a = kp_ticks(), b = kp_ticks();
    CHECK(b >= a);
    kp_tick_map_free(&m);
}

int main(void)
{
    test_synthetic();
    test_late_anchors();
    test_identity();
    test_real_clock();
    TEST_DONE();
}
