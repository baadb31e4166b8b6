/* test_sweep.c — default sizes, --tg-list parsing, the best point with its ties, and the
 * closing summary (measured, cut by the time budget, the only point, the ties, --tg against the
 * best, the sizes above the ceiling). */
#include "lab/lab.h"
#include "lab/result_file.h"
#include "lab/sweep.h"
#include "test.h"

static void point(kp_sweep_point *p, double median, double p10, double p90)
{
    memset(p, 0, sizeof *p);
    p->measured = 1;
    p->run.stats.median = median;
    p->run.p10 = p10;
    p->run.p90 = p90;
}

int main(void)
{
    uint64_t s[64];
    int n = kp_sweep_default_sizes(32, 1024, s, 64);
    CHECK_INT(n, 6);
    CHECK_INT(s[0], 32);
    CHECK_INT(s[5], 1024);
    n = kp_sweep_default_sizes(64, 1024, s, 64); /* the seed's 64..1024 curve */
    CHECK_INT(n, 5);
    n = kp_sweep_default_sizes(32, 448, s, 64); /* stops above the kernel's max */
    CHECK_INT(n, 4);
    CHECK_INT(s[3], 256);
    n = kp_sweep_default_sizes(0, 256, s, 64); /* unknown width: 64 */
    CHECK_INT(s[0], 64);
    n = kp_sweep_default_sizes(24, 256, s, 64); /* next power of two */
    CHECK_INT(s[0], 32);
    /* A kernel maximum below the width (__launch_bounds__(16), 32-wide warps): from the largest
     * power of two it allows, never no size at all. */
    n = kp_sweep_default_sizes(32, 16, s, 64);
    CHECK_INT(n, 1);
    CHECK_INT(s[0], 16);
    n = kp_sweep_default_sizes(32, 48, s, 64);
    CHECK_INT(n, 1);
    CHECK_INT(s[0], 32);
    n = kp_sweep_default_sizes(64, 40, s, 64);
    CHECK_INT(n, 1);
    CHECK_INT(s[0], 32);

    kp_launch base = {.dims = 2, .grid = {1024, 1024, 1}, .tg = {1, 1, 1}};
    kp_sweep_point pts[64];
    kp_error e = {0};
    CHECK_INT(kp_sweep_parse_list("8x8, 16x16,32x8", &base, pts, 64, &n, &e), KPROF_OK);
    CHECK_INT(n, 3);
    CHECK_INT(pts[1].run.launch.tg[0], 16);
    CHECK_INT(pts[2].threads, 256);
    CHECK_INT(pts[2].run.launch.grid[1], 1024);
    CHECK_INT(kp_sweep_parse_list("8x8,64,0x4,abc", &base, pts, 64, &n, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "'64' (1-D, but the grid is 2-D)");
    CHECK_CONTAINS(e.message, "'0x4' (zero)");
    CHECK_CONTAINS(e.message, "'abc' (not N, NxM or NxMxK)");
    kp_error_clear(&e);
    CHECK_INT(kp_sweep_parse_list("", &base, pts, 64, &n, &e), KPROF_INVALID);
    kp_error_clear(&e);

    /* Best and ties: 1.00 best (spread 0.02); 1.015 within it; 1.10 not; unmeasured ignored. */
    point(&pts[0], 1.10, 1.09, 1.12);
    point(&pts[1], 1.00, 0.99, 1.01);
    point(&pts[2], 1.015, 1.01, 1.02);
    point(&pts[3], 0.5, 0.5, 0.5);
    pts[3].measured = 0;
    CHECK_INT(kp_sweep_mark(pts, 4), 1);
    CHECK(pts[1].best && !pts[1].tie);
    CHECK(pts[2].tie && !pts[2].best);
    CHECK(!pts[0].tie && !pts[0].best);
    CHECK(!pts[3].best);
    /* A noisy point is tied by its own spread. */
    point(&pts[0], 1.10, 0.95, 1.30);
    kp_sweep_mark(pts, 3);
    CHECK(pts[0].tie);
    /* One measured size is not a comparison: no best, no tie (a kernel with one legal size, or
     * a sweep stopped after its first point). */
    pts[0].measured = pts[2].measured = 0;
    CHECK_INT(kp_sweep_mark(pts, 3), -1);
    CHECK(!pts[1].best && !pts[1].tie);
    pts[1].measured = 0;
    CHECK_INT(kp_sweep_mark(pts, 3), -1);

    /* Ties from samples (deterministic): the medians' 95% intervals must overlap, and a median
     * over 1.5x the best's is never a tie. Best: 20 samples 1.000..1.019. */
    double sm[20], tmp[20];
    kp_sweep_point q[5];
    memset(q, 0, sizeof q);
    for (int i = 0; i < 20; i++)
        sm[i] = 1.0 + 0.001 * i;
    kp_sweep_summarise(&q[0], sm, 20, tmp);
    CHECK(q[0].have_ci && q[0].median_ci.lo <= q[0].run.stats.median &&
          q[0].median_ci.hi >= q[0].run.stats.median);
    for (int i = 0; i < 20; i++) /* overlapping the best's: a tie */
        sm[i] = 1.005 + 0.001 * i;
    kp_sweep_summarise(&q[1], sm, 20, tmp);
    for (int i = 0; i < 20; i++) /* 2.2x the best, spread so wide the old p10..p90 rule tied it */
        sm[i] = i < 10 ? 0.9 + 0.13 * i : 2.2 + 0.13 * (i - 10);
    kp_sweep_summarise(&q[2], sm, 20, tmp);
    CHECK(q[2].run.stats.median > 1.5 * q[0].run.stats.median);
    CHECK(q[2].run.stats.median - q[0].run.stats.median <= q[2].run.p90 - q[2].run.p10);
    for (int i = 0; i < 20; i++) /* 1.3x, noisy (0.9..1.85): its median's interval lies above */
        sm[i] = 0.9 + 0.05 * i;
    kp_sweep_summarise(&q[3], sm, 20, tmp);
    CHECK(q[3].median_ci.lo > q[0].median_ci.hi);
    CHECK(q[3].run.stats.median - q[0].run.stats.median <= q[3].run.p90 - q[3].run.p10);
    for (int i = 0; i < 20; i++) /* just above the best, tight: intervals apart */
        sm[i] = 1.03 + 0.0005 * i;
    kp_sweep_summarise(&q[4], sm, 20, tmp);
    CHECK_INT(kp_sweep_mark(q, 5), 0);
    CHECK(q[0].best && !q[0].tie);
    CHECK(q[1].tie);
    CHECK(!q[2].tie);
    CHECK(!q[3].tie);
    CHECK(!q[4].tie);

    /* Summaries: percentiles interpolate. */
    double samples[5] = {5, 1, 4, 2, 3}, scratch[5];
    kp_sweep_point p;
    memset(&p, 0, sizeof p);
    kp_sweep_summarise(&p, samples, 5, scratch);
    CHECK_NEAR(p.run.stats.median, 3, 0);
    CHECK_NEAR(p.run.p10, 1.4, 1e-12);
    CHECK_NEAR(p.run.p90, 4.6, 1e-12);
    CHECK(p.measured);
    /* The time budget (kp_lab_budget_iters): what fits of the asked count. A 2 s dispatch, 8 s
     * spent on 3 warm-ups and 1 timed one, 15 s: 3 more fit, 4 timed. */
    CHECK_INT(kp_lab_budget_iters(50, 1, 2.0, 8.0, 15.0), 4);
    /* Fast: every one. */
    CHECK_INT(kp_lab_budget_iters(50, 1, 1e-5, 0.01, 15.0), 50);
    /* Over the budget already: what ran, never fewer than one. */
    CHECK_INT(kp_lab_budget_iters(50, 1, 3.0, 20.0, 15.0), 1);
    CHECK_INT(kp_lab_budget_iters(50, 0, 30.0, 0, 15.0), 1);
    /* No budget, or no cost known: the count asked. */
    CHECK_INT(kp_lab_budget_iters(50, 1, 2.0, 8.0, 0), 50);
    CHECK_INT(kp_lab_budget_iters(7, 1, 0, 8.0, 15.0), 7);
    CHECK_INT(kp_lab_budget_iters(0, 0, 1, 0, 15.0), 0);
    /* 2-D defaults: x a multiple of the width, the squarest first, three per total. */
    {
        uint64_t shapes[KP_SWEEP_MAX_POINTS][3];
        const uint64_t nolimit[3] = {0, 0, 0}, big[3] = {4096, 4096, 1};
        int ns = kp_sweep_default_shapes(32, 1024, nolimit, big, 1, shapes, KP_SWEEP_MAX_POINTS);
        /* 32: 32x1; 64: 32x2, 64x1; 128: 32x4, 64x2, 128x1; 256: 32x8, 64x4, 128x2; 512:
         * 32x16, 64x8, 128x4; 1024: 32x32, 64x16, 128x8. */
        CHECK_INT(ns, 15);
        CHECK_INT((int)shapes[0][0], 32);
        CHECK_INT((int)shapes[0][1], 1);
        CHECK_INT((int)shapes[1][0], 32);
        CHECK_INT((int)shapes[1][1], 2);
        CHECK_INT((int)shapes[6][0], 32);
        CHECK_INT((int)shapes[6][1], 8);
        CHECK_INT((int)shapes[12][0], 32);
        CHECK_INT((int)shapes[12][1], 32);
        for (int k = 0; k < ns; k++) {
            CHECK_INT((int)(shapes[k][0] % 32), 0);
            CHECK_INT(shapes[k][0] * shapes[k][1] <= 1024, 1);
            CHECK_INT((int)shapes[k][2], 1);
        }
        /* The grid bounds each dimension, and a device of whole groups needs divisors. */
        const uint64_t narrow[3] = {64, 2, 1};
        ns = kp_sweep_default_shapes(32, 1024, nolimit, narrow, 0, shapes, KP_SWEEP_MAX_POINTS);
        CHECK_INT(ns, 4); /* 32x1, 32x2, 64x1, 64x2 */
        const uint64_t odd[3] = {96, 96, 1};
        ns = kp_sweep_default_shapes(32, 1024, nolimit, odd, 1, shapes, KP_SWEEP_MAX_POINTS);
        for (int k = 0; k < ns; k++) {
            CHECK_INT((int)(96 % shapes[k][0]), 0);
            CHECK_INT((int)(96 % shapes[k][1]), 0);
        }
        CHECK_INT(ns > 0, 1);
        /* The device's per-dimension maxima. */
        const uint64_t dims[3] = {1024, 4, 64};
        ns = kp_sweep_default_shapes(32, 1024, dims, big, 1, shapes, KP_SWEEP_MAX_POINTS);
        for (int k = 0; k < ns; k++)
            CHECK_INT(shapes[k][1] <= 4, 1);
        /* No shape fits: none. */
        const uint64_t tiny[3] = {4, 4, 1};
        CHECK_INT(kp_sweep_default_shapes(8, 1024, nolimit, tiny, 1, shapes, KP_SWEEP_MAX_POINTS),
                  0);
    }
    {
        /* The closing summary: measured points, those the time budget cut, the only one. */
        static kp_sweep sw; /* large: not on the stack */
        kp_sweep_point *sp = sw.points;
        point(&sp[0], 1.0, 0.9, 1.1);
        point(&sp[1], 2.0, 1.9, 2.1);
        memset(&sp[2], 0, sizeof sp[2]);
        sp[0].run.iters = 100;
        sp[1].run.iters = 40;
        sw.npoints = 3;
        sw.iters = 100;
        kp_sweep_summary sum;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_INT(sum.measured, 2);
        CHECK_INT(sum.cut, 1);
        CHECK_INT(sum.fewest, 40);
        CHECK_INT(sum.only, -1);
        sp[0].measured = 0;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_INT(sum.measured, 1);
        CHECK_INT(sum.only, 1);
        sp[1].measured = 0;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_INT(sum.measured, 0);
        CHECK_INT(sum.cut, 0);
        CHECK_INT(sum.fewest, 0);
        CHECK_INT(sum.only, -1);
        CHECK_INT(sum.nties, 0);
        CHECK_STR(sum.ties, "");
        CHECK_INT(sum.nabove, 0);
        CHECK_STR(sum.above, "");
        CHECK_STR(sum.above_why, "");
        CHECK_NEAR(sum.your_ratio, 0, 0);
    }
    {
        /* The closing summary's ties, --tg against the best and the sizes above the ceiling. */
        static kp_sweep sw;
        kp_sweep_point *sp = sw.points;
        const uint64_t tgs[4] = {64, 128, 256, 512};
        point(&sp[0], 2.0, 1.9, 2.1);    /* slower: no tie */
        point(&sp[1], 1.0, 0.95, 1.05);  /* the best */
        point(&sp[2], 1.02, 0.97, 1.07); /* tied */
        point(&sp[3], 1.03, 0.98, 1.08); /* tied, and --tg */
        for (int i = 0; i < 4; i++) {
            sp[i].run.launch.dims = 1;
            sp[i].run.launch.tg[0] = tgs[i];
            sp[i].run.launch.tg[1] = sp[i].run.launch.tg[2] = 1;
            sp[i].run.iters = 10;
        }
        sw.npoints = 4;
        sw.iters = 10;
        sw.your_tg = 3;
        sw.best = kp_sweep_mark(sp, 4);
        CHECK_INT(sw.best, 1);
        kp_sweep_summary sum;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_INT(sum.nties, 2);
        CHECK_STR(sum.ties, "256, 512 (your --tg)");
        CHECK_NEAR(sum.your_ratio, 0, 0); /* tied: no ratio */
        CHECK_INT(sum.nabove, 0);
        /* --tg on the slower point: its median over the best's. */
        sw.your_tg = 0;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_STR(sum.ties, "256, 512");
        CHECK_NEAR(sum.your_ratio, 2.0, 1e-12);
        /* --tg the best, or none: no ratio. */
        sw.your_tg = 1;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_NEAR(sum.your_ratio, 0, 0);
        sw.your_tg = -1;
        kp_sweep_close_summary(&sw, &sum);
        CHECK_NEAR(sum.your_ratio, 0, 0);
        /* Two points above 110% of a 100 GB/s ceiling: both named, the reason the highest's. */
        for (int i = 2; i < 4; i++) {
            kp_run_result *r = &sp[i].run;
            r->gbps = i == 2 ? 150 : 300;
            r->readings_in = (kp_readings_input){
                .median_ms = r->stats.median,
                .gbps = r->gbps,
                .bytes_assumed = 1,
                .bytes = 1u << 30,
                .working_set = 1u << 30,
                .grid_bytes = 1u << 30,
                .grid_threads = 1u << 28,
                .ceiling_gbs = 100,
            };
            kp_readings_compute(&r->readings_in, &r->readings);
            CHECK_INT(r->readings.bandwidth, KP_BANDWIDTH_ABOVE);
        }
        char why[sizeof sum.above_why];
        CHECK_INT(kp_sweep_above_ceiling(&sp[3], why, sizeof why), 1);
        kp_sweep_close_summary(&sw, &sum);
        CHECK_INT(sum.nabove, 2);
        CHECK_STR(sum.above, "256, 512");
        CHECK_STR(sum.above_why, why);
        CHECK(why[0] != '\0');
    }
    TEST_DONE();
}
