/*
 * benchmark.c — kprof_benchmark and kprof_benchmark_compare (include/kprof.h): a callback's
 * device work timed run by run and measured by kprof bench's rule. The callbacks become a
 * sampler of lab/bench.h (kp_bench_sampler: one sample is one run, timed by the collector's timer,
 * benchmark.h), and kp_bench_measure_with does the rest as it does for `kprof bench`: warm-up,
 * batches (A's, B's, A's... when comparing), the clock around every batch with throttled rounds
 * discarded, the stopping rule, and the comparison engine's verdict. What the rule does not keep
 * of a run (its busy and wall time) waits in the sampler until the rule says whether the round
 * was kept.
 */
#define _GNU_SOURCE
#include "libkprof/benchmark.h"
#include "base/util.h"
#include "core/compare.h"
#include "lab/bench.h"
#include "libkprof/libkprof_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A kprof_benchmark with the default 1000 runs takes batches of at most 20, so that even a run
 * that stops at its cap has 50 rounds: the block-aware interval and a verdict need them. */
#define KP_CB_ROUNDS 50

typedef struct kp_cb_side {
    void (*fn)(void *);
    void *arg;
    double *busy, *wall; /* the kept runs' (ns), in order */
    size_t n, cap;
    double *pend_busy, *pend_wall; /* the last batch's, until the rule keeps it or not */
    size_t pend_n;
    size_t runs; /* runs made, warm-ups included: which one failed */
    unsigned last_ops;
} kp_cb_side;

typedef struct kp_cb_sampler {
    kp_bench_timer *timer;
    kp_bench_sampler *sp; /* the rule's view: host_device learnt from the runs */
    kp_cb_side side[2];
    size_t max_batch;
    kp_bench_run *runs; /* a batch's runs, as the timer gives them */
    size_t runs_cap;
} kp_cb_sampler;

/* Side s's k runs into c->runs: the timer's batch when it has one, else run after run. On
 * failure *ran: the runs finished before the failing one. */
static kprof_status kp_cb_runs(kp_cb_sampler *c, kp_cb_side *d, int k, int cold, int *ran,
                               kp_error *err)
{
    *ran = 0;
    if (c->timer->run_batch)
        return c->timer->run_batch(c->timer->ctx, d->fn, d->arg, cold, k, c->runs, ran, err);
    for (int i = 0; i < k; i++) {
        memset(&c->runs[i], 0, sizeof c->runs[i]);
        kprof_status st = c->timer->run(c->timer->ctx, d->fn, d->arg, cold, &c->runs[i], err);
        if (st != KPROF_OK) return st;
        *ran = i + 1;
    }
    return KPROF_OK;
}

static kprof_status kp_cb_sample(void *ctx, int s, int k, int cold, int warming, double *ms,
                                 double *flush_ms, kp_error *err)
{
    kp_cb_sampler *c = ctx;
    kp_cb_side *d = &c->side[s];
    d->pend_n = 0;
    if ((size_t)k > c->runs_cap) {
        kp_bench_run *grown = realloc(c->runs, (size_t)k * sizeof *grown);
        if (!grown) return kp_error_nomem(err);
        c->runs = grown;
        c->runs_cap = (size_t)k;
    }
    int ran = 0;
    kprof_status st = kp_cb_runs(c, d, k, cold, &ran, err);
    if (st != KPROF_OK) {
        d->runs += (size_t)ran + 1;
        kp_error_append(err, " (run %zu%s)", d->runs, warming ? ", a warm-up" : "");
        return st;
    }
    for (int i = 0; i < k; i++) {
        kp_bench_run r = c->runs[i];
        d->runs++;
        if (r.ops == 0)
            return kp_error_set(
                err, KPROF_INVALID,
                "run %zu%s launched no device work that the %s collector saw (the callback must "
                "launch %s work, and finish launching it before it returns)",
                d->runs, warming ? " (a warm-up)" : "", c->timer->name, c->timer->name);
        if (r.host_device) c->sp->host_device = 1;
        ms[i] = r.span_ns / 1e6;
        if (flush_ms) flush_ms[i] = r.flush_ns / 1e6;
        if (!warming) {
            d->last_ops = r.ops;
            if ((size_t)i < c->max_batch) {
                d->pend_busy[i] = r.busy_ns;
                d->pend_wall[i] = r.wall_ns;
                d->pend_n = (size_t)i + 1;
            }
        }
    }
    return KPROF_OK;
}

static void kp_cb_clock(void *ctx, int s, kp_clock_reading *clk)
{
    (void)s;
    kp_cb_sampler *c = ctx;
    if (c->timer->clock) {
        c->timer->clock(c->timer->ctx, clk);
        return;
    }
    memset(clk, 0, sizeof *clk);
    snprintf(clk->why_not, sizeof clk->why_not, "%s devices: no clock is read", c->timer->name);
}

/* The rule kept side s's last batch, or discarded it (throttled). */
static void kp_cb_kept(void *ctx, int s, size_t k, int kept)
{
    kp_cb_side *d = &((kp_cb_sampler *)ctx)->side[s];
    size_t n = k < d->pend_n ? k : d->pend_n;
    if (kept && d->n + n <= d->cap) {
        memcpy(d->busy + d->n, d->pend_busy, n * sizeof *d->busy);
        memcpy(d->wall + d->n, d->pend_wall, n * sizeof *d->wall);
        d->n += n;
    }
    d->pend_n = 0;
}

static void kp_cb_side_free(kp_cb_side *d)
{
    free(d->busy);
    free(d->wall);
    free(d->pend_busy);
    free(d->pend_wall);
}

static kprof_status kp_cb_side_init(kp_cb_side *d, void (*fn)(void *), void *arg, size_t runs,
                                    size_t batch)
{
    memset(d, 0, sizeof *d);
    d->fn = fn;
    d->arg = arg;
    d->cap = runs;
    d->busy = malloc(runs * sizeof *d->busy);
    d->wall = malloc(runs * sizeof *d->wall);
    d->pend_busy = malloc(batch * sizeof *d->pend_busy);
    d->pend_wall = malloc(batch * sizeof *d->pend_wall);
    return d->busy && d->wall && d->pend_busy && d->pend_wall ? KPROF_OK : KPROF_NOMEM;
}

/* The median of v[0..n) (sorted in place), 0 for none. */
static double kp_cb_median(double *v, size_t n)
{
    if (n == 0) return 0;
    kp_sort_doubles(v, n);
    return kp_quantile_sorted(v, n, 0.5);
}

static const char *kp_cb_stop_name(kp_bench_stop stop)
{
    switch (stop) {
    case KP_BENCH_STOP_TIMEOUT:
        return "budget"; /* budget_s */
    case KP_BENCH_STOP_SAMPLES:
        return "runs"; /* max_runs */
    default:
        return kp_bench_stop_name(stop);
    }
}

/* One side's result, from the rule's side and the sampler's. samples: where its spans go (ns),
 * cap of them. */
static void kp_cb_result(const kp_bench_side *s, kp_cb_side *d, const kprof_benchmark_options *o,
                         const char *stop, double *samples, size_t cap, kprof_benchmark_result *out)
{
    kprof_benchmark_result r = {.size = sizeof r};
    r.runs = (unsigned)s->n;
    r.kernels = d->last_ops;
    /* min, max, mean and p90 (Enigma's benchmark_kernel: sorted[floor(0.9 n)]) are the kept
     * samples' summary, which kp_bench_summarise made (core/stats.h). */
    r.min_ns = s->stats.min * 1e6;
    r.max_ns = s->stats.max * 1e6;
    r.mean_ns = s->stats.mean * 1e6;
    r.p90_ns = s->stats.p90 * 1e6;
    /* The median and its interval are the rule's (block-aware, core/judge.h), as kprof bench
     * reports them. */
    r.p50_ns = s->median.value * 1e6;
    r.lo_ns = s->median.lo * 1e6;
    r.hi_ns = s->median.hi * 1e6;
    r.noise = s->noise;
    r.busy_p50_ns = kp_cb_median(d->busy, d->n);
    r.wall_p50_ns = kp_cb_median(d->wall, d->n);
    r.discarded = (unsigned)s->throttled;
    kp_strlcpy(r.stop, stop, sizeof r.stop);
    r.flush_ns = s->flush_ms * 1e6;
    if (r.p50_ns > 0) {
        r.gbps = o->bytes > 0 ? o->bytes / r.p50_ns : 0; /* bytes per ns: GB/s */
        r.gflops = o->flops > 0 ? o->flops / r.p50_ns : 0;
    }
    size_t k = 0;
    for (; samples && k < cap && k < s->n; k++)
        samples[k] = s->ms[k] * 1e6;
    r.samples_n = (unsigned)k;
    kp_sized_copy(out, &r, sizeof r);
}

/* Read and check the options (NULL: the defaults) into *o. */
static kprof_status kp_cb_options(const char *F, const kprof_benchmark_options *opt,
                                  kprof_benchmark_options *o)
{
    kprof_benchmark_options d = KPROF_BENCHMARK_OPTIONS_INIT;
    *o = d;
    if (opt) {
        if (opt->size < sizeof(unsigned) || opt->size > sizeof *o)
            return kp_libkprof_fail(F, KPROF_INVALID,
                                    "options.size is not sizeof(kprof_benchmark_options) "
                                    "(use KPROF_BENCHMARK_OPTIONS_INIT)");
        memcpy(o, opt, opt->size);
        o->size = sizeof *o;
    }
    if (o->min_runs == 0) o->min_runs = 1;
    if (o->max_runs < o->min_runs) o->max_runs = o->min_runs;
    char msg[200];
    if (!(o->budget_s >= 0) || o->budget_s > 86400)
        return kp_libkprof_fail(F, KPROF_INVALID, "budget_s must be 0 to 86400 seconds");
    if (!(o->max_noise >= 0) || o->max_noise > 1)
        return kp_libkprof_fail(
            F, KPROF_INVALID,
            "max_noise must be 0 (no noise rule) to 1 (a fraction of the median)");
    if (o->cache != KPROF_CACHE_HOT && o->cache != KPROF_CACHE_COLD) {
        snprintf(msg, sizeof msg, "cache %d is neither KPROF_CACHE_HOT nor KPROF_CACHE_COLD",
                 (int)o->cache);
        return kp_libkprof_fail(F, KPROF_INVALID, msg);
    }
    if (o->collector == 0) o->collector = KPROF_COLLECT_CUDA;
    if (o->collector != KPROF_COLLECT_CUDA && o->collector != KPROF_COLLECT_OPENCL) {
        snprintf(msg, sizeof msg,
                 "collector 0x%x is neither KPROF_COLLECT_CUDA nor KPROF_COLLECT_OPENCL (whose "
                 "device work is timed)",
                 o->collector);
        return kp_libkprof_fail(F, KPROF_INVALID, msg);
    }
    if (!(o->flops >= 0) || !isfinite(o->flops) || !(o->bytes >= 0) || !isfinite(o->bytes))
        return kp_libkprof_fail(F, KPROF_INVALID, "flops and bytes must be finite and >= 0");
    if (o->samples_cap && !o->samples)
        return kp_libkprof_fail(F, KPROF_INVALID, "samples_cap is set but samples is NULL");
    if (!o->samples) o->samples_cap = 0;
    return KPROF_OK;
}

kp_bench_timer_open_fn kp_bench_timer_override;

static kprof_status kp_cb_open_timer(unsigned collector, kp_bench_timer *t, kp_error *err)
{
    memset(t, 0, sizeof *t);
    if (kp_bench_timer_override) return kp_bench_timer_override(collector, t, err);
    if (collector == KPROF_COLLECT_OPENCL) return kp_libkprof_opencl_timer(t, err);
#ifdef KPROF_HAVE_CUDA
    return kp_libkprof_cuda_timer(t, err);
#else
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "this libkprof was built without CUDA: it times CUDA work from CUPTI's "
                        "device timestamps (KPROF_COLLECT_OPENCL times OpenCL work)");
#endif
}

static atomic_int kp_cb_running; /* one benchmark at a time */

/* Both functions: nsides callbacks measured, their results and (two) the comparison. */
static kprof_status kp_cb_measure(const char *F, void (*fn[2])(void *), void *arg[2], int nsides,
                                  const kprof_benchmark_options *opt,
                                  const kprof_compare_options *cmp, kprof_benchmark_result *res[2],
                                  kprof_comparison *verdict)
{
    kprof_benchmark_options o;
    kprof_status st = kp_cb_options(F, opt, &o);
    if (st != KPROF_OK) return st;
    kprof_compare_options co = KPROF_COMPARE_OPTIONS_INIT;
    if (cmp) {
        if (cmp->size < sizeof(unsigned) || cmp->size > sizeof co)
            return kp_libkprof_fail(F, KPROF_INVALID,
                                    "compare->size is not sizeof(kprof_compare_options)");
        memcpy(&co, cmp, cmp->size);
        co.size = sizeof co;
        if (!(co.threshold >= 0 && co.threshold < 10) || !(co.min_effect >= 0))
            return kp_libkprof_fail(F, KPROF_INVALID, "a bad threshold or min_effect");
    }
    int expected = 0;
    if (!atomic_compare_exchange_strong(&kp_cb_running, &expected, 1))
        return kp_libkprof_fail(F, KPROF_INVALID,
                                "another kprof_benchmark or kprof_benchmark_compare is running "
                                "(they are not for concurrent use)");
    kp_error err = {0};
    kp_bench_timer timer;
    kp_cb_sampler c;
    memset(&c, 0, sizeof c);
    kp_bench_side sides[2];
    memset(sides, 0, sizeof sides);
    int opened = 0;
    st = kp_cb_open_timer(o.collector, &timer, &err);
    if (st != KPROF_OK) goto done;
    opened = 1;
    c.timer = &timer;
    c.max_batch = o.max_runs / KP_CB_ROUNDS;
    if (c.max_batch < 1) c.max_batch = 1;
    for (int s = 0; s < nsides; s++) {
        if (kp_cb_side_init(&c.side[s], fn[s], arg[s], o.max_runs, c.max_batch) != KPROF_OK) {
            st = kp_error_nomem(&err);
            goto done;
        }
    }

    kp_bench_config cfg;
    kp_bench_config_default(&cfg);
    cfg.max_noise = o.max_noise;
    cfg.noise_off = o.max_noise == 0;
    cfg.min_time_s = 0; /* min_runs is the floor */
    cfg.min_samples = (int)(o.min_runs < 1000000000u ? o.min_runs : 1000000000u);
    cfg.max_samples = o.max_runs;
    cfg.timeout_s = o.budget_s;
    cfg.floor_first = 1;
    cfg.warmup = (int)(o.warmup < 1000000000u ? o.warmup : 1000000000u);
    cfg.warmup_exact = 1;
    cfg.cold = o.cache == KPROF_CACHE_COLD;
    cfg.threshold = co.threshold;
    cfg.min_effect = co.min_effect / 1e6; /* ns: the rule's samples are ms */
    cfg.max_batch = c.max_batch;
    kp_bench_sampler sp = {
        .ctx = &c, .sample = kp_cb_sample, .clock = kp_cb_clock, .kept = kp_cb_kept};
    c.sp = &sp;
    kp_bench_outcome out;
    st = kp_bench_measure_with(sides, nsides, &cfg, &sp, NULL, NULL, &out, &err);
    if (st != KPROF_OK) goto done;

    const char *stop = kp_cb_stop_name(out.stop);
    size_t cap = nsides == 2 ? o.samples_cap / 2 : o.samples_cap;
    double *at = o.samples;
    for (int s = 0; s < nsides; s++) {
        if (!res[s]) continue;
        kp_cb_result(&sides[s], &c.side[s], &o, stop, at, cap, res[s]);
        if (at && KPROF_HAS(kprof_benchmark_result, res[s], samples_n))
            at += res[s]->samples_n;
        else if (at)
            at += sides[s].n < cap ? sides[s].n : cap;
    }
    if (verdict) {
        kprof_comparison v = {.size = sizeof v};
        switch (out.final_verdict) {
        case KP_COMPARE_SAME:
            v.verdict = KPROF_VERDICT_SAME;
            break;
        case KP_COMPARE_FASTER:
            v.verdict = KPROF_VERDICT_FASTER;
            break;
        case KP_COMPARE_SLOWER:
            v.verdict = KPROF_VERDICT_SLOWER;
            break;
        default:
            v.verdict = KPROF_VERDICT_UNSURE;
            break;
        }
        v.ratio = out.ratio.value;
        v.lo = out.ratio.lo;
        v.hi = out.ratio.hi;
        v.reasons = v.verdict == KPROF_VERDICT_UNSURE ? out.judgement.reasons : 0;
        kp_strlcpy(v.reason, out.judgement.reason, sizeof v.reason);
        kp_sized_copy(verdict, &v, sizeof v);
    }
done:
    for (int s = 0; s < 2; s++) {
        kp_bench_side_free(&sides[s]);
        kp_cb_side_free(&c.side[s]);
    }
    free(c.runs);
    if (opened && timer.close) timer.close(timer.ctx);
    atomic_store(&kp_cb_running, 0);
    return st == KPROF_OK ? KPROF_OK : kp_libkprof_fail_err(F, &err);
}

kprof_status kprof_benchmark(void (*fn)(void *arg), void *arg, const kprof_benchmark_options *opt,
                             kprof_benchmark_result *result)
{
    static const char *const F = "kprof_benchmark";
    if (!fn || !result) return kp_libkprof_fail(F, KPROF_INVALID, "no callback or no result given");
    if (result->size == 0)
        return kp_libkprof_fail(F, KPROF_INVALID,
                                "result->size is 0 (use KPROF_BENCHMARK_RESULT_INIT)");
    void (*fns[2])(void *) = {fn, NULL};
    void *args[2] = {arg, NULL};
    kprof_benchmark_result *res[2] = {result, NULL};
    return kp_cb_measure(F, fns, args, 1, opt, NULL, res, NULL);
}

kprof_status kprof_benchmark_compare(void (*fn_a)(void *), void *arg_a, void (*fn_b)(void *),
                                     void *arg_b, const kprof_benchmark_options *options,
                                     const kprof_compare_options *compare,
                                     kprof_benchmark_result *a, kprof_benchmark_result *b,
                                     kprof_comparison *out)
{
    static const char *const F = "kprof_benchmark_compare";
    if (!fn_a || !fn_b || !out)
        return kp_libkprof_fail(F, KPROF_INVALID, "fn_a, fn_b and out are required");
    if (out->size == 0)
        return kp_libkprof_fail(F, KPROF_INVALID, "out->size is 0 (use KPROF_COMPARISON_INIT)");
    if ((a && a->size == 0) || (b && b->size == 0))
        return kp_libkprof_fail(F, KPROF_INVALID,
                                "a result's size is 0 (use KPROF_BENCHMARK_RESULT_INIT)");
    void (*fns[2])(void *) = {fn_a, fn_b};
    void *args[2] = {arg_a, arg_b};
    kprof_benchmark_result *res[2] = {a, b};
    return kp_cb_measure(F, fns, args, 2, options, compare, res, out);
}
