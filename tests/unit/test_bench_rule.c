/* test_bench_rule.c — the stopping rule of lab/bench.h (kp_bench_measure_with) driven by a
 * synthetic sampler: deterministic samples and a clock of the test's own, which advances by each
 * sample's time and nothing else, so no answer depends on the machine or its load. The sampler is
 * the same interface kprof bench's lab and libkprof's kprof_benchmark use: one rule for all.
 * Covered: a quiet kernel stops on its noise; a timer's quantum stops on settled noise; with the
 * noise rules off the budget (timeout) or the sample cap ends it; kprof_benchmark's floor keeps
 * the budget from stopping before min_samples; two sides are decided (SLOWER, SAME) with pairs in
 * step; rounds read below the throttle fraction are discarded (every side's, so pairs stay
 * pairs), counted and the sampler told; warm-ups are as many as asked, none included. */
#define _GNU_SOURCE
#include "lab/bench.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One side's samples: base ms, relative noise, a timer quantum (0: none), a cost per flush. */
typedef struct fake_side {
    double base, noise, quantum, flush_ms;
    size_t warmups, timed;  /* sample calls' samples, warming and timed */
    size_t kept, discarded; /* as the rule told the sampler */
} fake_side;

typedef struct fake_sampler {
    fake_side side[2];
    uint64_t now;       /* the test's clock, ns */
    uint64_t lcg;       /* the noise's generator */
    int throttle_every; /* every Nth clock reading is throttled (0: never) */
    int clock_reads;
    int have_clock;
} fake_sampler;

static double fake_uniform(fake_sampler *f)
{
    f->lcg = f->lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(f->lcg >> 11) / 9007199254740992.0; /* [0, 1) */
}

static kprof_status fake_sample(void *ctx, int s, int k, int cold, int warming, double *ms,
                                double *flush_ms, kp_error *err)
{
    (void)err;
    fake_sampler *f = ctx;
    fake_side *d = &f->side[s];
    for (int i = 0; i < k; i++) {
        double t = d->base * (1 + d->noise * (2 * fake_uniform(f) - 1));
        if (d->quantum > 0) t = d->quantum * floor(t / d->quantum + 0.5);
        ms[i] = t;
        if (cold) flush_ms[i] = d->flush_ms;
        f->now += (uint64_t)((t + (cold ? d->flush_ms : 0)) * 1e6) + 1000; /* + 1 us a call */
    }
    if (warming)
        d->warmups += (size_t)k;
    else
        d->timed += (size_t)k;
    return KPROF_OK;
}

static void fake_clock(void *ctx, int s, kp_clock_reading *clk)
{
    (void)s;
    fake_sampler *f = ctx;
    memset(clk, 0, sizeof *clk);
    if (!f->have_clock) {
        snprintf(clk->why_not, sizeof clk->why_not, "the fake reads no clock");
        return;
    }
    f->clock_reads++;
    clk->have = 1;
    clk->default_mhz = 1980;
    int throttled = f->throttle_every && f->clock_reads % f->throttle_every == 0;
    clk->sm_mhz = throttled ? 900 : 1980;
    clk->reasons = throttled ? 0x20 : 0; /* sw thermal slowdown */
}

static void fake_kept(void *ctx, int s, size_t k, int kept)
{
    fake_sampler *f = ctx;
    if (kept)
        f->side[s].kept += k;
    else
        f->side[s].discarded += k;
}

static uint64_t fake_now(void *ctx)
{
    return ((fake_sampler *)ctx)->now;
}

static kp_bench_sampler sampler_of(fake_sampler *f)
{
    kp_bench_sampler sp = {.ctx = f,
                           .sample = fake_sample,
                           .clock = fake_clock,
                           .kept = fake_kept,
                           .now_ns = fake_now};
    return sp;
}

static fake_sampler fake(double base, double noise)
{
    fake_sampler f;
    memset(&f, 0, sizeof f);
    f.lcg = 42;
    f.now = 1000000000ull;
    for (int s = 0; s < 2; s++) {
        f.side[s].base = base;
        f.side[s].noise = noise;
        f.side[s].flush_ms = 0.05;
    }
    return f;
}

/* kprof_benchmark's shape of the rule: min_samples 10, no min time, batches of at most 20. */
static kp_bench_config config(void)
{
    kp_bench_config c;
    kp_bench_config_default(&c);
    c.min_time_s = 0;
    c.timeout_s = 10;
    c.max_samples = 100000;
    c.max_batch = 20;
    c.floor_first = 1;
    c.warmup_exact = 1;
    return c;
}

static void bench_free(kp_bench_side *sides)
{
    kp_bench_side_free(&sides[0]);
    kp_bench_side_free(&sides[1]);
}

static kprof_status measure(fake_sampler *f, int nsides, const kp_bench_config *c,
                            kp_bench_side *sides, kp_bench_outcome *o)
{
    memset(sides, 0, 2 * sizeof *sides);
    kp_bench_sampler sp = sampler_of(f);
    kp_error err = {0};
    kprof_status st = kp_bench_measure_with(sides, nsides, c, &sp, NULL, NULL, o, &err);
    if (st != KPROF_OK) fprintf(stderr, "measure: %s\n", err.message);
    kp_error_clear(&err);
    return st;
}

static void test_noise_stop(void)
{
    fake_sampler f = fake(1.0, 0.001);
    kp_bench_config c = config();
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "noise");
    CHECK(s[0].noise <= c.max_noise);
    CHECK(s[0].n >= (size_t)c.min_samples);
    CHECK(s[0].median.lo <= s[0].median.value && s[0].median.value <= s[0].median.hi);
    CHECK_NEAR(s[0].median.value, 1.0, 0.002);
    CHECK_INT(f.side[0].warmups, 3); /* as asked */
    CHECK_INT(f.side[0].kept, s[0].n);
    CHECK_INT(f.side[0].discarded, 0);
    CHECK_INT(s[0].throttled, 0);
    CHECK(s[0].clock_note[0] != '\0'); /* no clock: said why */
    bench_free(s);
}

static void test_settled(void)
{
    /* A timer that counts in 0.1 ms steps, the kernel right between two: half the samples read
     * 1.0 and half 1.1, whatever their number. The median's interval spans the step however many
     * samples come: the noise (about 5%) no longer shrinks, and the rule stops on it rather than
     * run to the budget. */
    fake_sampler f = fake(1.05, 0.01);
    f.side[0].quantum = 0.1;
    kp_bench_config c = config();
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "settled");
    CHECK(s[0].noise > c.max_noise);
    CHECK(o.wall_s < c.timeout_s);
    bench_free(s);
}

static void test_budget_and_cap(void)
{
    /* Noise rules off (kprof_benchmark's max_noise 0): the budget ends a 1 ms kernel after 1 s of
     * the test's clock, about a thousand samples. */
    fake_sampler f = fake(1.0, 0.001);
    kp_bench_config c = config();
    c.noise_off = 1;
    c.timeout_s = 1;
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "timeout");
    CHECK(s[0].n >= 950 && s[0].n <= 1020);
    CHECK(o.wall_s >= 1.0 && o.wall_s < 1.1);
    bench_free(s);

    /* ... or the sample cap, exactly. */
    f = fake(1.0, 0.001);
    c.timeout_s = 1000;
    c.max_samples = 137;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "samples");
    CHECK_INT(s[0].n, 137);
    CHECK_INT(f.side[0].timed, 137);
    bench_free(s);

    /* A budget of 0 stops at once, but kprof_benchmark's floor keeps min_samples first; kprof
     * bench's timeout (no floor) stops after the first batch. */
    f = fake(1.0, 0.001);
    c = config();
    c.noise_off = 1;
    c.timeout_s = 0;
    c.min_samples = 50;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "timeout");
    CHECK(s[0].n >= 50 && s[0].n < 50 + 20);
    bench_free(s);
    f = fake(1.0, 0.001);
    c.floor_first = 0;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK(s[0].n < 50);
    bench_free(s);
}

static void test_no_warmup_and_cold(void)
{
    fake_sampler f = fake(0.2, 0.001);
    kp_bench_config c = config();
    c.warmup = 0;
    c.cold = 1;
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 1, &c, s, &o), KPROF_OK);
    CHECK_INT(f.side[0].warmups, 0);
    CHECK_NEAR(s[0].flush_ms, 0.05, 1e-12); /* the flushes' median, kept apart */
    CHECK_NEAR(s[0].median.value, 0.2, 0.001);
    bench_free(s);
}

static void test_decided(void)
{
    /* B 20% slower than A: decided SLOWER, after KP_BENCH_MIN_ROUNDS rounds at least, the
     * sides in step (pairs). */
    fake_sampler f = fake(1.0, 0.002);
    f.side[1].base = 1.2;
    kp_bench_config c = config();
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 2, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "decided");
    CHECK_INT(o.final_verdict, KP_COMPARE_SLOWER);
    CHECK_NEAR(o.ratio.value, 1.2, 0.01);
    CHECK(o.ratio.lo <= o.ratio.value && o.ratio.value <= o.ratio.hi);
    CHECK_INT(s[0].n, s[1].n);
    CHECK(s[0].rounds >= KP_BENCH_MIN_ROUNDS);
    bench_free(s);

    /* The same kernel twice: SAME, decided too. */
    f = fake(1.0, 0.002);
    CHECK_INT(measure(&f, 2, &c, s, &o), KPROF_OK);
    CHECK_STR(kp_bench_stop_name(o.stop), "decided");
    CHECK_INT(o.final_verdict, KP_COMPARE_SAME);
    bench_free(s);
}

static void test_throttled_rounds(void)
{
    /* Every 5th clock reading is throttled (two readings a side a round): those rounds are
     * discarded, for both sides, and the sampler is told which. */
    fake_sampler f = fake(1.0, 0.002);
    f.side[1].base = 1.2;
    f.have_clock = 1;
    f.throttle_every = 5;
    kp_bench_config c = config();
    kp_bench_side s[2];
    kp_bench_outcome o;
    CHECK_INT(measure(&f, 2, &c, s, &o), KPROF_OK);
    CHECK(s[0].throttled > 0);
    CHECK_INT(s[0].throttled, s[1].throttled);
    CHECK_INT(s[0].n + s[0].throttled, s[0].taken);
    CHECK_INT(f.side[0].discarded, s[0].throttled);
    CHECK_INT(f.side[0].kept, s[0].n);
    CHECK_INT(f.side[1].kept, s[1].n);
    CHECK(s[0].throttle_reasons & 0x20);
    CHECK_NEAR(s[0].min_clock_mhz, 900, 1e-9);
    CHECK_INT(o.final_verdict, KP_COMPARE_SLOWER);
    bench_free(s);

    /* Throttled throughout: nothing kept, an error, not a number. */
    f = fake(1.0, 0.002);
    f.have_clock = 1;
    f.throttle_every = 1;
    c.timeout_s = 0.5;
    memset(s, 0, sizeof s);
    kp_bench_sampler sp = sampler_of(&f);
    kp_error err = {0};
    CHECK_INT(kp_bench_measure_with(s, 1, &c, &sp, NULL, NULL, &o, &err), KPROF_BACKEND);
    CHECK_CONTAINS(err.message, "throttled");
    kp_error_clear(&err);
    bench_free(s);
}

int main(void)
{
    test_noise_stop();
    test_settled();
    test_budget_and_cap();
    test_no_warmup_and_cold();
    test_decided();
    test_throttled_rounds();
    return kp_test_failures ? 1 : 0;
}
