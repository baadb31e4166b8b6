/* test_inproc_benchmark.c — kprof_benchmark and kprof_benchmark_compare (src/libkprof/benchmark.c)
 * over a timer of the test's own (kp_bench_timer_override): each run's span, busy and wall time
 * come from the callback's own deterministic numbers, and the SM clock reads throttled at set
 * readings. Checked: a run's busy and wall times stay with its span when the rule discards a
 * throttled round (the medians agree with the kept spans), the run cap and its stop name, samples
 * in order and within the range, GB/s and GFLOP/s over p50, cold flushes measured apart, a
 * comparison of a callback with twice the work (SLOWER, about 2, its samples A's then B's) and
 * with itself (SAME), a run without device work, and the timer's own failure passed on with
 * the run it happened in; the same again through a timer's batch op (run_batch, as CUDA's), and
 * kp_bench_bin_ops, which gives a batch's records to its runs, on synthetic records. No answer
 * depends on how fast the machine is: the noise rules are off wherever a count is checked. */
#define _GNU_SOURCE
#include "libkprof/benchmark.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* A callback's device work: its span base (ns), drawn with +-1% noise; busy is half of it, the
 * wall twice. ops 0: no device work. fail_at: the run (1-based) the timer fails in. */
typedef struct fake_work {
    double base;
    unsigned ops;
    unsigned calls;
    unsigned fail_at;
} fake_work;

static uint64_t lcg = 7;
static int clock_reads, throttle_every, flushes;

static double uniform(void)
{
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

static void work(void *arg)
{
    ((fake_work *)arg)->calls++;
}

static kprof_status fake_run(void *ctx, void (*fn)(void *), void *arg, int cold, kp_bench_run *out,
                             kp_error *err)
{
    (void)ctx;
    fake_work *w = arg;
    fn(arg);
    if (w->fail_at && w->calls == w->fail_at)
        return kp_error_set(err, KPROF_FAULT, "the fake device faulted");
    memset(out, 0, sizeof *out);
    out->span_ns = w->base * (1 + 0.01 * (2 * uniform() - 1));
    out->busy_ns = out->span_ns / 2;
    out->wall_ns = out->span_ns * 2;
    out->ops = w->ops;
    if (cold) {
        out->flush_ns = 5000;
        flushes++;
    }
    return KPROF_OK;
}

static void fake_clock(void *ctx, kp_clock_reading *clk)
{
    (void)ctx;
    memset(clk, 0, sizeof *clk);
    clk->have = 1;
    clk->default_mhz = 1980;
    clock_reads++;
    clk->sm_mhz = throttle_every && clock_reads % throttle_every == 0 ? 600 : 1980;
}

static unsigned opened_collector;
static int opened, closed;

static void fake_close(void *ctx)
{
    (void)ctx;
    closed++;
}

static kprof_status fake_open(unsigned collector, kp_bench_timer *t, kp_error *err)
{
    (void)err;
    opened_collector = collector;
    opened++;
    *t =
        (kp_bench_timer){.name = "fake", .run = fake_run, .clock = fake_clock, .close = fake_close};
    return KPROF_OK;
}

/* The same timer with a batch op (as CUDA's): run never called, each batch's runs from fake_run. */
static int batch_calls, single_calls, batch_most;

static kprof_status fake_run_single(void *ctx, void (*fn)(void *), void *arg, int cold,
                                    kp_bench_run *out, kp_error *err)
{
    single_calls++;
    return fake_run(ctx, fn, arg, cold, out, err);
}

static kprof_status fake_run_batch(void *ctx, void (*fn)(void *), void *arg, int cold, int n,
                                   kp_bench_run *out, int *ran, kp_error *err)
{
    batch_calls++;
    if (n > batch_most) batch_most = n;
    for (*ran = 0; *ran < n; ++*ran) {
        kprof_status st = fake_run(ctx, fn, arg, cold, &out[*ran], err);
        if (st != KPROF_OK) return st;
    }
    return KPROF_OK;
}

static kprof_status fake_open_batch(unsigned collector, kp_bench_timer *t, kp_error *err)
{
    kprof_status st = fake_open(collector, t, err);
    t->run = fake_run_single;
    t->run_batch = fake_run_batch;
    return st;
}

static void test_throttled_runs_keep_their_times(void)
{
    fake_work w = {.base = 100000, .ops = 3};
    throttle_every = 7;
    clock_reads = 0;
    kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
    o.max_noise = 0; /* to the cap */
    o.max_runs = 300;
    o.budget_s = 1000;
    o.bytes = 1e6;
    o.flops = 4e6;
    static double samples[500];
    o.samples = samples;
    o.samples_cap = 500;
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    CHECK_INT(kprof_benchmark(work, &w, &o, &r), KPROF_OK);
    CHECK_INT(opened_collector, KPROF_COLLECT_CUDA); /* the default */
    CHECK_STR(r.stop, "runs");
    CHECK_INT(r.runs, 300);
    CHECK(r.discarded > 0);
    CHECK_INT(w.calls, 3 + 300 + r.discarded); /* warm-ups, kept, discarded */
    CHECK_INT(r.kernels, 3);
    CHECK_INT(r.samples_n, 300);
    int in_range = 1;
    for (unsigned i = 0; i < r.samples_n; i++)
        if (samples[i] < r.min_ns || samples[i] > r.max_ns) in_range = 0;
    CHECK(in_range);
    CHECK(r.min_ns <= r.p50_ns && r.p50_ns <= r.p90_ns && r.p90_ns <= r.max_ns);
    CHECK(r.lo_ns <= r.p50_ns && r.p50_ns <= r.hi_ns);
    CHECK_NEAR(r.noise, (r.hi_ns - r.lo_ns) / 2 / r.p50_ns, 1e-12);
    /* Each kept run's busy (half its span) and wall (twice) came with it. */
    double *v = malloc(r.samples_n * sizeof *v);
    memcpy(v, samples, r.samples_n * sizeof *v);
    for (unsigned i = 0; i + 1 < r.samples_n; i++) /* a sort, for the median */
        for (unsigned j = i + 1; j < r.samples_n; j++)
            if (v[j] < v[i]) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    double median = (v[149] + v[150]) / 2;
    free(v);
    CHECK_NEAR(r.busy_p50_ns, median / 2, 1e-6);
    CHECK_NEAR(r.wall_p50_ns, median * 2, 1e-6);
    CHECK_NEAR(r.gbps, 1e6 / r.p50_ns, 1e-12);
    CHECK_NEAR(r.gflops, 4e6 / r.p50_ns, 1e-12);
    CHECK_NEAR(r.flush_ns, 0, 0);
    throttle_every = 0;
}

static void test_cold(void)
{
    fake_work w = {.base = 50000, .ops = 1};
    flushes = 0;
    kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
    o.cache = KPROF_CACHE_COLD;
    o.collector = KPROF_COLLECT_OPENCL;
    o.max_noise = 0;
    o.max_runs = 40;
    o.budget_s = 1000;
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    CHECK_INT(kprof_benchmark(work, &w, &o, &r), KPROF_OK);
    CHECK_INT(opened_collector, KPROF_COLLECT_OPENCL);
    CHECK_NEAR(r.flush_ns, 5000, 0);
    CHECK_INT(flushes, 3 + 40); /* before warm-ups too: they are sized as the runs are */
    CHECK_INT(r.samples_n, 0);  /* no buffer */
}

static void test_compare(void)
{
    fake_work a = {.base = 100000, .ops = 1}, b = {.base = 200000, .ops = 1};
    kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
    o.budget_s = 1000;
    o.max_runs = 2000;
    static double samples[400];
    o.samples = samples;
    o.samples_cap = 400;
    kprof_benchmark_result ra = KPROF_BENCHMARK_RESULT_INIT, rb = KPROF_BENCHMARK_RESULT_INIT;
    kprof_comparison c = KPROF_COMPARISON_INIT;
    CHECK_INT(kprof_benchmark_compare(work, &a, work, &b, &o, NULL, &ra, &rb, &c), KPROF_OK);
    CHECK_INT(c.verdict, KPROF_VERDICT_SLOWER);
    CHECK_NEAR(c.ratio, 2, 0.02);
    CHECK(c.lo <= c.ratio && c.ratio <= c.hi);
    CHECK_INT(c.reasons, 0);
    CHECK_STR(ra.stop, "decided");
    CHECK_STR(rb.stop, "decided");
    CHECK_INT(ra.runs, rb.runs);
    CHECK(ra.samples_n > 0 && ra.samples_n <= 200 && rb.samples_n == ra.samples_n);
    int order = 1; /* A's spans (about 100 us) first, then B's (about 200 us) */
    for (unsigned i = 0; i < ra.samples_n; i++)
        if (samples[i] > 110000) order = 0;
    for (unsigned i = 0; i < rb.samples_n; i++)
        if (samples[ra.samples_n + i] < 190000) order = 0;
    CHECK(order);

    fake_work a2 = {.base = 100000, .ops = 1}, a3 = {.base = 100000, .ops = 1};
    o.samples = NULL;
    o.samples_cap = 0;
    kprof_compare_options co = KPROF_COMPARE_OPTIONS_INIT;
    co.threshold = 0.02;
    CHECK_INT(kprof_benchmark_compare(work, &a2, work, &a3, &o, &co, NULL, NULL, &c), KPROF_OK);
    CHECK_INT(c.verdict, KPROF_VERDICT_SAME);
}

static void test_failures(void)
{
    fake_work none = {.base = 1000, .ops = 0};
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    CHECK_INT(kprof_benchmark(work, &none, NULL, &r), KPROF_INVALID);
    CHECK_CONTAINS(kprof_last_error(), "run 1 (a warm-up) launched no device work that the fake "
                                       "collector saw");
    fake_work faulty = {.base = 1000, .ops = 1, .fail_at = 5};
    CHECK_INT(kprof_benchmark(work, &faulty, NULL, &r), KPROF_FAULT);
    CHECK_CONTAINS(kprof_last_error(), "kprof_benchmark: the fake device faulted (run 5)");
    CHECK_INT(opened, closed); /* every timer given back, failures included */
}

/* kp_bench_bin_ops on synthetic records: each to the slot holding its start, half-open
 * slots, records outside all of them counted as nobody's, in any order. */
static void test_bin_ops(void)
{
    const int64_t bounds[] = {100, 200, 300, 400};
    const kp_bench_op ops[] = {
        {260, 280}, /* slot 1 */
        {50, 60},   /* before the batch: nobody's */
        {120, 210}, /* slot 0, though it ends after its upper boundary */
        {100, 150}, /* slot 0: a lower bound is inside */
        {400, 410}, /* an upper bound is outside: nobody's */
        {200, 250}, /* slot 1 */
        {199, 199}, /* slot 0, no duration */
        {399, 500}, /* slot 2 */
    };
    kp_bench_slot slots[3];
    memset(slots, 0xff, sizeof slots); /* zeroed by the call */
    CHECK_INT(kp_bench_bin_ops(ops, 8, bounds, 3, slots), 2);
    CHECK_INT(slots[0].ops, 3);
    CHECK_INT(slots[0].first, 100);
    CHECK_INT(slots[0].last, 210);
    CHECK_INT(slots[0].busy, 90 + 50 + 0);
    CHECK_INT(slots[1].ops, 2);
    CHECK_INT(slots[1].first, 200);
    CHECK_INT(slots[1].last, 280);
    CHECK_INT(slots[1].busy, 50 + 20);
    CHECK_INT(slots[2].ops, 1);
    CHECK_INT(slots[2].first, 399);
    CHECK_INT(slots[2].last, 500);
    CHECK_INT(slots[2].busy, 101);
    /* A cold batch: flush, run, flush, run (the flush's records stay out of the runs). */
    const int64_t cold_bounds[] = {0, 10, 30, 40, 70};
    const kp_bench_op cold_ops[] = {{2, 9}, {12, 20}, {21, 29}, {31, 38}, {45, 60}};
    kp_bench_slot cold[4];
    CHECK_INT(kp_bench_bin_ops(cold_ops, 5, cold_bounds, 4, cold), 0);
    CHECK_INT(cold[0].ops, 1);
    CHECK_INT(cold[0].last - cold[0].first, 7);
    CHECK_INT(cold[1].ops, 2);
    CHECK_INT(cold[1].last - cold[1].first, 17); /* span: first start to last end */
    CHECK_INT(cold[1].busy, 8 + 8);
    CHECK_INT(cold[3].ops, 1);
    CHECK_INT(cold[3].busy, 15);
    /* No slots: everything is nobody's. */
    CHECK_INT(kp_bench_bin_ops(ops, 8, bounds, 0, slots), 8);
}

int main(void)
{
    test_bin_ops();
    kp_bench_timer_override = fake_open;
    test_throttled_runs_keep_their_times();
    test_cold();
    test_compare();
    test_failures();
    /* Again through the batch op: the same answers, no run taken one by one. */
    kp_bench_timer_override = fake_open_batch;
    test_throttled_runs_keep_their_times();
    test_cold();
    test_failures();
    CHECK(batch_calls > 0);
    CHECK(batch_most > 1);
    CHECK_INT(single_calls, 0);
    return kp_test_failures ? 1 : 0;
}
