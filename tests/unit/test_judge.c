/* test_judge.c — the comparison engine (core/judge.h) on synthetic samples, deterministic: a
 * kernel against itself is rarely FASTER or SLOWER (independent, autocorrelated, batched
 * samples); 5% more work is SLOWER; two modes, drift, a busy machine, a tiny effect, one run a
 * side and a spread between runs each make the verdict UNSURE with their reason and words; a
 * minority mode is only noted; drift and modes that cannot change a verdict are judged through; the
 * block-aware median interval is compare.h's at block 1; the CPU time another process takes is
 * seen. */
#define _GNU_SOURCE
#include "core/judge.h"
#include "core/stats.h"
#include "test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(void)
{
    return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
}

/* n samples around base with relative noise sd; AR(1) correlation phi between neighbours. */
static void fill(double *v, size_t n, double base, double sd, double phi)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        e = phi * e + sqrt(1 - phi * phi) * gauss();
        v[i] = base * (1 + sd * e);
    }
}

static kp_judgement judge(const double *a, size_t na, const double *b, size_t nb,
                          const kp_judge_config *c)
{
    kp_judge_side sa = {.v = a, .n = na, .batch = 10}, sb = {.v = b, .n = nb, .batch = 10};
    kp_judgement j;
    CHECK_INT(kp_judge(&sa, &sb, c, &j, NULL), 0);
    return j;
}

static void test_a_against_a(void)
{
    enum { N = 600 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    c.resamples = 500;
    const double phis[] = {0, 0.6, 0.95};
    for (int p = 0; p < 3; p++) {
        for (int paired = 0; paired < 2; paired++) {
            int wrong = 0, same = 0;
            c.paired = paired;
            for (int k = 0; k < 100; k++) {
                rng_state = 0x9e3779b97f4a7c15ULL + (uint64_t)k * 7919 + (uint64_t)p * 104729;
                fill(a, N, 1.0, 0.01, phis[p]);
                fill(b, N, 1.0, 0.01, phis[p]);
                kp_judgement j = judge(a, N, b, N, &c);
                if (j.verdict == KP_COMPARE_FASTER || j.verdict == KP_COMPARE_SLOWER) wrong++;
                if (j.verdict == KP_COMPARE_SAME) same++;
                CHECK(j.ratio.lo <= j.ratio.value && j.ratio.value <= j.ratio.hi);
            }
            /* 95% intervals against a +-1% band: a false verdict needs the whole interval out
             * of the band; seen here never, allowed twice in 100. */
            if (wrong > 2)
                fprintf(stderr, "phi %.2f paired %d: %d false\n", phis[p], paired, wrong);
            CHECK(wrong <= 2);
            /* Independent samples are not all UNSURE: the engine still answers. */
            if (phis[p] == 0) CHECK(same >= 80);
        }
    }
}

static void test_five_percent_slower(void)
{
    enum { N = 600 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    int slower = 0;
    for (int k = 0; k < 20; k++) {
        rng_state = 1234567 + (uint64_t)k;
        fill(a, N, 1.0, 0.01, 0);
        fill(b, N, 1.05, 0.01, 0);
        kp_judgement j = judge(a, N, b, N, &c);
        slower += j.verdict == KP_COMPARE_SLOWER;
        CHECK_INT(j.reasons, 0);
        CHECK_STR(j.reason, "");
    }
    CHECK_INT(slower, 20);
    /* Paired too. */
    c.paired = 1;
    rng_state = 99;
    fill(a, N, 1.0, 0.01, 0.5);
    fill(b, N, 1.05, 0.01, 0.5);
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(j.have_q);
}

static void test_two_modes(void)
{
    enum { N = 600 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 4242;
    /* Each sample from one of two modes, 0.37 and 0.52 ms, 60/40. */
    for (int i = 0; i < N; i++) {
        a[i] = (uniform() < 0.6 ? 0.37 : 0.52) * (1 + 0.002 * gauss());
        b[i] = (uniform() < 0.6 ? 0.37 : 0.52) * (1 + 0.002 * gauss());
    }
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_MODES);
    CHECK_INT(j.a.modes, 2);
    CHECK_NEAR(j.a.mode[0], 0.37, 0.005);
    CHECK_NEAR(j.a.mode[1], 0.52, 0.005);
    CHECK_NEAR(j.a.mode_share[1], 0.4, 0.06);
    char words[400];
    kp_judge_words(&j, &c, "ms", words, sizeof words);
    CHECK_CONTAINS(words, "two modes at 0.37");
    CHECK_CONTAINS(words, "and 0.52");
    CHECK_CONTAINS(words, " ms");
    /* A clear minority mode (5% of the samples, far off) is noted, not a reason. */
    for (int i = 0; i < N; i++) {
        a[i] = (i % 20 == 0 ? 0.52 : 0.37) * (1 + 0.002 * gauss());
        b[i] = (i % 20 == 7 ? 0.52 : 0.37) * (1 + 0.002 * gauss());
    }
    j = judge(a, N, b, N, &c);
    CHECK(!(j.reasons & KP_JUDGE_MODES));
    CHECK(j.notes & KP_JUDGE_NOTE_MODES);
    CHECK_INT(j.verdict, KP_COMPARE_SAME);
    /* A heavy tail is not a second mode. */
    for (int i = 0; i < N; i++)
        a[i] = 1.0 + 0.005 * gauss() + (i % 10 == 0 ? 2 * uniform() : 0);
    kp_shape s;
    static double scratch[N];
    kp_shape_of(a, N, 1, 0.01, scratch, &s);
    CHECK_INT(s.modes, 1);
}

static void test_drift(void)
{
    enum { N = 600 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 777;
    /* B's second half runs 4% slower than its first (clock, temperature, another process). */
    fill(a, N, 1.0, 0.005, 0);
    fill(b, N, 1.0, 0.005, 0);
    for (int i = N / 2; i < N; i++)
        b[i] *= 1.04;
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_DRIFT);
    CHECK(j.b.drifting);
    CHECK(!j.a.drifting);
    char words[400];
    kp_judge_words(&j, &c, "ms", words, sizeof words);
    CHECK_CONTAINS(words, "B: drifted: the first half's median 1");
    /* Paired, drift common to both sides cancels in the pairs' ratios. */
    for (int i = N / 2; i < N; i++)
        a[i] *= 1.04;
    c.paired = 1;
    j = judge(a, N, b, N, &c);
    CHECK(!(j.reasons & KP_JUDGE_DRIFT));
    CHECK(!j.q.drifting);
    /* (each side now has two modes, 50/50: the medians' ratio is unsafe all the same) */
    CHECK(j.verdict != KP_COMPARE_FASTER && j.verdict != KP_COMPARE_SLOWER);
    /* ... but a ratio that drifts does not. */
    for (int i = N / 2; i < N; i++)
        b[i] *= 1.04;
    j = judge(a, N, b, N, &c);
    CHECK(j.reasons & KP_JUDGE_DRIFT);
    CHECK(j.q.drifting);
}

/* Drift and modes that cannot change the verdict are judged through: 1.5x as long is SLOWER
 * even where a run drifted by 10% or split into two modes 7% apart; where they could change it
 * (5% more work, modes 10% apart) they still make it UNSURE. */
static void test_judged_through(void)
{
    enum { N = 20000 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 9191;
    /* A noisy run (5%) whose second half is 1.5% slower: a drift past the threshold, too small
     * beside the noise to correlate the samples (the blocks stay many). */
    fill(a, N, 1.0, 0.05, 0);
    fill(b, N, 1.5, 0.05, 0);
    for (int i = N / 2; i < N; i++)
        a[i] *= 1.015;
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK(j.a.drifting);
    CHECK(j.a.blocks >= KP_JUDGE_MIN_BLOCKS);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(j.notes & KP_JUDGE_NOTE_THROUGH);
    CHECK_INT(j.a_through, KP_JUDGE_DRIFT);
    CHECK_INT(j.b_through, 0);
    /* The interval covers the medians the drift allows: A at its first half's or its second's. */
    CHECK(j.ratio.lo < 1.5 / 1.015);
    CHECK(j.ratio.hi > 1.5);
    char words[400];
    kp_judge_words(&j, &c, "ms", words, sizeof words);
    CHECK_CONTAINS(words, "A: drifted");
    CHECK_CONTAINS(words, "it cannot change the verdict");
    /* The same drift where B is only 1% slower: it could, so it is a reason. */
    fill(b, N, 1.01, 0.05, 0);
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.a_reasons & KP_JUDGE_DRIFT);
    /* Two modes 7% apart in B, 45% in the second: still SLOWER. */
    fill(a, N, 1.0, 0.003, 0);
    for (int i = 0; i < N; i++)
        b[i] = (uniform() < 0.55 ? 1.5 : 1.6) * (1 + 0.003 * gauss());
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.b.modes, 2);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK_INT(j.b_through, KP_JUDGE_MODES);
    /* 5% more work, B's modes 1.0 and 1.1: which median B has decides the verdict. */
    for (int i = 0; i < N; i++)
        b[i] = (uniform() < 0.5 ? 1.0 : 1.1) * (1 + 0.003 * gauss());
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_MODES);
    CHECK(!(j.notes & KP_JUDGE_NOTE_THROUGH));
    /* Paired: a ratio drifting from 1.5 to 1.52 stays SLOWER; from 1.0 to 1.015 it does not. */
    c.paired = 1;
    fill(a, N, 1.0, 0.003, 0);
    for (int i = 0; i < N; i++)
        b[i] = a[i] * (i < N / 2 ? 1.5 : 1.5225) * (1 + 0.05 * gauss());
    j = judge(a, N, b, N, &c);
    CHECK(j.q.drifting);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK_INT(j.q_through, KP_JUDGE_DRIFT);
    for (int i = 0; i < N; i++)
        b[i] = a[i] * (i < N / 2 ? 1.0 : 1.015) * (1 + 0.05 * gauss());
    j = judge(a, N, b, N, &c);
    CHECK(j.q.drifting);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_DRIFT);
}

static void test_busy(void)
{
    enum { N = 200 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 31337;
    /* A loaded machine: 30% noise per sample, so the medians are known to a few percent only,
     * and one side's interval happens to clear the band. */
    fill(a, N, 1.0, 0.3, 0);
    fill(b, N, 1.0, 0.3, 0);
    for (int i = 0; i < N; i++)
        b[i] *= 1.2;
    c.busy_cpus = 1.9;
    c.ncpus = 2;
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK_INT(j.interval_verdict, KP_COMPARE_SLOWER);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_BUSY);
    char words[400];
    kp_judge_words(&j, &c, "ms", words, sizeof words);
    CHECK_CONTAINS(words, "the machine was busy: 1.9 of 2 CPUs taken by other work");
    /* The same samples on an idle machine: the verdict stands. */
    c.busy_cpus = 0;
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    /* Busy, but quiet samples: noted only. */
    fill(a, N, 1.0, 0.002, 0);
    fill(b, N, 1.2, 0.002, 0);
    c.busy_cpus = 1.0;
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(j.notes & KP_JUDGE_NOTE_BUSY);
}

static void test_small_effect_and_runs(void)
{
    enum { N = 400 };
    static double a[N], b[N];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 5;
    fill(a, N, 2000, 0.001, 0); /* 2 us in ns */
    fill(b, N, 2100, 0.001, 0);
    kp_judgement j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    c.min_effect = 1000; /* 1 us */
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK_INT(j.reasons, KP_JUDGE_SMALL);
    char words[400];
    kp_judge_words(&j, &c, "ns", words, sizeof words);
    CHECK_CONTAINS(words, "under the minimum effect of 1000 ns");

    /* Across runs, one run a side: 2% is not clear of the band by the run allowance ... */
    c.min_effect = 0;
    c.across_runs = 1;
    fill(a, N, 1.0, 0.001, 0);
    fill(b, N, 1.02, 0.001, 0);
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.interval_verdict, KP_COMPARE_SLOWER);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK_INT(j.reasons, KP_JUDGE_ONE_RUN);
    CHECK_CONTAINS(j.reason, "one run a side");
    /* ... 10% is, and the verdict says what it rests on. */
    fill(b, N, 1.10, 0.001, 0);
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(j.notes & KP_JUDGE_NOTE_ONE_RUN);
    CHECK_CONTAINS(j.reason, "rests on one run a side");
    CHECK_INT(j.runs, 1);

    /* Three runs a side whose medians spread 3%: a 2% effect is inside the spread. */
    fill(b, N, 1.02, 0.001, 0);
    const double ra[] = {1.00, 1.03, 0.985}, rb[] = {1.02, 1.05, 1.0};
    kp_judge_side sa = {.v = a, .n = N, .batch = 10, .runs = ra, .nruns = 3};
    kp_judge_side sb = {.v = b, .n = N, .batch = 10, .runs = rb, .nruns = 3};
    CHECK_INT(kp_judge(&sa, &sb, &c, &j, NULL), 0);
    CHECK_INT(j.runs, 3);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_RUNS);
    CHECK(j.ratio.lo < j.sample_ratio.lo && j.ratio.hi > j.sample_ratio.hi);
    /* Runs that agree: the verdict stands, with no one-run note. */
    const double rc[] = {1.10, 1.101, 1.099};
    sb.runs = rc;
    fill(b, N, 1.10, 0.001, 0);
    const double rd[] = {1.0, 1.001, 0.999};
    sa.runs = rd;
    CHECK_INT(kp_judge(&sa, &sb, &c, &j, NULL), 0);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(!(j.notes & KP_JUDGE_NOTE_ONE_RUN));
    /* Each side's runs back to back in one state, 2.8% apart (seen on PoCL): tight runs, but
     * across invocations the allowance stands. */
    const double re[] = {0.278095, 0.278067, 0.278207}, rf[] = {0.285817, 0.285884, 0.285964};
    fill(a, N, 0.2781, 0.001, 0);
    fill(b, N, 0.2859, 0.001, 0);
    sa.runs = re;
    sb.runs = rf;
    CHECK_INT(kp_judge(&sa, &sb, &c, &j, NULL), 0);
    CHECK_INT(j.interval_verdict, KP_COMPARE_SLOWER);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK_INT(j.reasons, KP_JUDGE_ONE_RUN);
    CHECK_CONTAINS(j.reason, "one invocation a side");
    /* Whole programs traced twice: a kernel whose 20 instances spread ~30% inside each run,
     * 25% apart between the runs, is not judged past its own spread; a tight one 1.5x is. */
    {
        kp_judge_config tc;
        kp_judge_config_default(&tc);
        tc.across_runs = 1;
        tc.run_allowance = 0.10;
        tc.spread_allowance = 1;
        double ta[20], tb[20];
        rng_state = 77;
        fill(ta, 20, 100, 0.2, 0);
        fill(tb, 20, 125, 0.2, 0);
        kp_judge_side xa = {.v = ta, .n = 20}, xb = {.v = tb, .n = 20};
        CHECK_INT(kp_judge(&xa, &xb, &tc, &j, NULL), 0);
        CHECK(j.a.spread > 0.15 && j.b.spread > 0.15);
        CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
        CHECK(j.reasons & KP_JUDGE_ONE_RUN);
        CHECK_CONTAINS(j.reason, "the instances' own spread within a run");
        fill(ta, 20, 100, 0.001, 0);
        fill(tb, 20, 150, 0.001, 0);
        CHECK_INT(kp_judge(&xa, &xb, &tc, &j, NULL), 0);
        CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    }
    /* Paired sessions repeated: their ratios' spread. */
    c.across_runs = 0;
    c.paired = 1;
    const double rr[] = {1.00, 1.04, 1.02};
    c.run_ratios = rr;
    c.nrun_ratios = 3;
    fill(b, N, 1.02, 0.001, 0);
    j = judge(a, N, b, N, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK(j.reasons & KP_JUDGE_RUNS);
}

static void test_few_and_invalid(void)
{
    double a[30], b[30];
    kp_judge_config c;
    kp_judge_config_default(&c);
    rng_state = 8;
    fill(a, 30, 1.0, 0.001, 0);
    fill(b, 30, 1.2, 0.001, 0);
    /* 30 samples in batches of 10: three blocks a side, too few even for the samples' range. */
    kp_judgement j = judge(a, 30, b, 30, &c);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK_INT(j.reasons, KP_JUDGE_FEW);
    CHECK_CONTAINS(j.reason, "too few to judge");
    /* In batches of 5: six blocks. The interval is then the samples' whole range: 20% apart
     * with 0.1% noise, no sample contradicts SLOWER ... */
    kp_judge_side s5a = {.v = a, .n = 30, .batch = 5}, s5b = {.v = b, .n = 30, .batch = 5};
    CHECK_INT(kp_judge(&s5a, &s5b, &c, &j, NULL), 0);
    CHECK_INT(j.verdict, KP_COMPARE_SLOWER);
    CHECK(j.notes & KP_JUDGE_NOTE_FEW);
    CHECK(j.ratio.lo <= j.sample_ratio.lo && j.ratio.hi >= j.sample_ratio.hi);
    CHECK_CONTAINS(j.reason, "whole range");
    /* ... 0.5% apart, the ranges overlap the band: UNSURE, few blocks. */
    fill(b, 30, 1.005, 0.001, 0);
    CHECK_INT(kp_judge(&s5a, &s5b, &c, &j, NULL), 0);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    CHECK_INT(j.reasons, KP_JUDGE_FEW);
    CHECK_CONTAINS(j.reason, "independent blocks");
    /* A batch larger than the samples is the samples. */
    kp_judge_side big_a = {.v = a, .n = 3, .batch = (size_t)-1},
                  big_b = {.v = b, .n = 3, .batch = (size_t)-1};
    CHECK_INT(kp_judge(&big_a, &big_b, &c, &j, NULL), 0);
    CHECK_INT(j.a.block, 3);
    CHECK_INT(j.verdict, KP_COMPARE_UNSURE);
    kp_judge_side sa = {.v = a, .n = 0}, sb = {.v = b, .n = 30};
    CHECK_INT(kp_judge(&sa, &sb, &c, &j, NULL), 0);
    CHECK_INT(j.reasons, KP_JUDGE_INVALID);
    a[15] = 0;
    for (int i = 0; i < 30; i++)
        a[i] = 0;
    sa.n = 30;
    CHECK_INT(kp_judge(&sa, &sb, &c, &j, NULL), 0);
    CHECK_INT(j.reasons, KP_JUDGE_INVALID);
    CHECK_STR(kp_judge_reason_name(KP_JUDGE_MODES), "modes");
    CHECK_STR(kp_judge_reason_name(3), "?");
}

static void test_shape_interval(void)
{
    enum { N = 301 };
    static double v[N], s[N], scratch[N];
    rng_state = 11;
    fill(v, N, 1.0, 0.01, 0);
    memcpy(s, v, sizeof v);
    kp_sort_doubles(s, N);
    kp_estimate e;
    kp_median_ci_sorted(s, N, 0.95, &e);
    kp_shape sh;
    kp_shape_of(v, N, 1, 0.01, scratch, &sh);
    if (sh.block == 1) {
        CHECK_NEAR(sh.median.lo, e.lo, 0);
        CHECK_NEAR(sh.median.hi, e.hi, 0);
    }
    CHECK_NEAR(sh.median.value, e.value, 0);
    /* Batches of 30: the interval is that of 10 samples, wider. */
    kp_shape_of(v, N, 30, 0.01, scratch, &sh);
    CHECK_INT(sh.block, 30);
    CHECK_INT(sh.blocks, 10);
    CHECK(sh.median.lo < e.lo && sh.median.hi > e.hi);
    /* Strong autocorrelation lengthens the block by itself. */
    fill(v, N, 1.0, 0.01, 0.98);
    kp_shape_of(v, N, 1, 0.01, scratch, &sh);
    CHECK(sh.block >= 8);
    CHECK(sh.acf1 > 0.8);
}

static void test_cpuload(void)
{
    kp_cpuload l;
    kp_cpuload_begin(&l, NULL, 0);
    CHECK(l.ok);
    pid_t child = fork();
    if (child == 0) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        static volatile double x; /* the spin's work, kept (volatile) */
        do {
            for (int i = 0; i < 100000; i++)
                x = x + i;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 4e8);
        _exit(0);
    }
    /* Measured while the child spins (it is not waited for yet: not ours). */
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    double others = kp_cpuload_end(&l, NULL, 0);
    int status;
    waitpid(child, &status, 0);
    CHECK(others > 0.2);
    CHECK(others <= l.ncpus);
}

int main(void)
{
    test_a_against_a();
    test_five_percent_slower();
    test_two_modes();
    test_drift();
    test_judged_through();
    test_busy();
    test_small_effect_and_runs();
    test_few_and_invalid();
    test_shape_interval();
    test_cpuload();
    return kp_test_failures ? 1 : 0;
}
