/*
 * bench.c — `kprof bench`'s measurement loop: warm-up, batches sized to the kernel, kernels in
 * turn, clocks around every batch, the stopping rule checked as the samples grow, and the A/B
 * comparison; and a bench's points: each set up from its axis values, opened, measured hot and
 * cold, its counters read (see bench.h).
 */
#define _GNU_SOURCE
#include "lab/bench.h"
#include "base/util.h"
#include "core/expr.h"
#include "core/readings.h"
#include "lab/result_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_BENCH_CHECK_RESAMPLES 200
#define KP_BENCH_FINAL_RESAMPLES 2000
#define KP_BENCH_SEED            0x6b70726f66ULL /* "kprof" */
#define KP_BENCH_MAX_BATCH       10000

void kp_bench_config_default(kp_bench_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_noise = 0.005;
    c->min_time_s = 0.5;
    c->min_samples = 10;
    c->timeout_s = 15;
    c->warmup = 3;
    c->throttle_fraction = 0.75;
    c->threshold = 0.01;
    c->max_samples = 1000000;
    c->batch_s = 0.01;
}

const char *kp_bench_stop_name(kp_bench_stop s)
{
    switch (s) {
    case KP_BENCH_STOP_NOISE:
        return "noise";
    case KP_BENCH_STOP_SETTLED:
        return "settled";
    case KP_BENCH_STOP_DECIDED:
        return "decided";
    case KP_BENCH_STOP_TIMEOUT:
        return "timeout";
    case KP_BENCH_STOP_SAMPLES:
        return "samples";
    }
    return "?";
}

void kp_bench_side_free(kp_bench_side *s)
{
    free(s->ms);
    free(s->mhz);
    s->ms = s->mhz = NULL;
    s->n = s->cap = 0;
}

static kprof_status kp_bench_reserve(kp_bench_side *s, size_t more, int with_clock, kp_error *err)
{
    if (s->n + more <= s->cap && (!with_clock || s->mhz)) return KPROF_OK;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < s->n + more)
        cap *= 2;
    double *ms = realloc(s->ms, cap * sizeof *ms);
    if (!ms) return kp_error_set(err, KPROF_NOMEM, "out of memory keeping %zu samples", cap);
    s->ms = ms;
    if (with_clock || s->mhz) {
        double *mhz = realloc(s->mhz, cap * sizeof *mhz);
        if (!mhz) return kp_error_set(err, KPROF_NOMEM, "out of memory keeping %zu samples", cap);
        if (!s->mhz)
            for (size_t i = 0; i < s->n; i++)
                mhz[i] = 0;
        s->mhz = mhz;
    }
    s->cap = cap;
    return KPROF_OK;
}

kprof_status kp_bench_side_add(kp_bench_side *s, const double *ms, const double *mhz, size_t n,
                               kp_error *err)
{
    kprof_status st = kp_bench_reserve(s, n, mhz != NULL, err);
    if (st != KPROF_OK) return st;
    memcpy(s->ms + s->n, ms, n * sizeof *ms);
    if (s->mhz)
        for (size_t i = 0; i < n; i++)
            s->mhz[s->n + i] = mhz ? mhz[i] : 0;
    s->n += n;
    return KPROF_OK;
}

kprof_status kp_bench_summarise(kp_bench_side *s, kp_error *err)
{
    if (s->n == 0) return kp_error_set(err, KPROF_INVALID, "no samples to summarise");
    double *scratch = malloc(s->n * sizeof *scratch);
    if (!scratch) return kp_error_nomem(err);
    kp_stats_compute(s->ms, s->n, scratch, &s->stats);
    /* The shape: blocks no shorter than the batches the samples came in. */
    size_t batch = s->rounds ? s->n / s->rounds : 1;
    kp_shape_of(s->ms, s->n, batch, 0.01, scratch, &s->shape);
    s->median = s->shape.median;
    s->noise = s->shape.noise;
    s->rsd = kp_rsd(s->ms, s->n);
    s->clock_mhz = 0;
    if (s->mhz) {
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->mhz[i] > 0) scratch[k++] = s->mhz[i];
        if (k) s->clock_mhz = kp_select(scratch, k, k / 2);
    }
    free(scratch);
    return KPROF_OK;
}

/* Cycles (thousands) of each sample with a clock; NULL when some sample has none. */
static double *kp_bench_cycles(const kp_bench_side *s)
{
    if (!s->mhz || s->n == 0) return NULL;
    double *c = malloc(s->n * sizeof *c);
    if (!c) return NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (s->mhz[i] <= 0) {
            free(c);
            return NULL;
        }
        c[i] = s->ms[i] * s->mhz[i]; /* ms x MHz = thousands of cycles */
    }
    return c;
}

/* The block a side's samples are resampled in: the mean batch. */
static size_t kp_bench_block(const kp_bench_side *s)
{
    size_t b = s->rounds ? s->n / s->rounds : 1;
    return b < 1 ? 1 : b;
}

void kp_bench_outcome_init(kp_bench_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->busy_cpus = o->measured_busy_cpus = -1;
}

void kp_bench_judge_config(const kp_bench_config *cfg, const kp_bench_outcome *o, int paired,
                           kp_judge_config *jc)
{
    kp_judge_config_default(jc);
    jc->threshold = cfg->threshold;
    jc->paired = paired;
    jc->across_runs = !paired || o->separate_sessions;
    jc->busy_cpus = o->busy_cpus;
    jc->ncpus = o->ncpus;
    jc->min_effect = cfg->min_effect;
    if (o->nrun_ratios >= 2) {
        jc->run_ratios = o->run_ratio;
        jc->nrun_ratios = (size_t)o->nrun_ratios;
    }
}

/* One side as the engine sees it: xs its values (ms or cycles), n of them; with its sessions'
 * medians when xs are its times (the medians are of times). */
static kp_judge_side kp_bench_judge_side(const kp_bench_side *s, const double *xs, size_t n)
{
    kp_judge_side js = {.v = xs, .n = n, .batch = kp_bench_block(s)};
    if (s->nruns >= 2 && xs == s->ms) {
        js.runs = s->run_median;
        js.nruns = (size_t)s->nruns;
    }
    return js;
}

static kprof_status kp_bench_judge(const kp_bench_side *a, const double *xa, const kp_bench_side *b,
                                   const double *xb, int paired, const kp_judge_config *jc,
                                   kp_judgement *out, kp_error *err)
{
    size_t na = a->n, nb = b->n;
    if (paired) na = nb = a->n < b->n ? a->n : b->n;
    kp_judge_side ja = kp_bench_judge_side(a, xa, na), jb = kp_bench_judge_side(b, xb, nb);
    if (paired) jb.batch = ja.batch;
    kprof_status st = kp_judge(&ja, &jb, jc, out, err);
    if (st != KPROF_OK) return st;
    if (out->reasons & KP_JUDGE_INVALID)
        return kp_error_set(err, KPROF_INVALID, "cannot compare: a kernel has no positive time");
    return KPROF_OK;
}

kprof_status kp_bench_compare(const kp_bench_side *a, const kp_bench_side *b, int paired,
                              const kp_bench_config *cfg, kp_bench_outcome *out, kp_error *err)
{
    out->compared = 1;
    out->paired = paired;
    kp_judge_config jc;
    kp_bench_judge_config(cfg, out, paired, &jc);
    out->across_runs = jc.across_runs;
    kprof_status st = kp_bench_judge(a, a->ms, b, b->ms, paired, &jc, &out->judgement, err);
    if (st != KPROF_OK) return st;
    out->ratio = out->judgement.ratio;
    out->verdict = out->judgement.verdict;
    out->final_verdict = out->verdict;
    out->have_cycles = 0;
    double *ca = kp_bench_cycles(a), *cb = kp_bench_cycles(b);
    if (ca && cb) {
        kp_error scratch_err = {0};
        kp_judgement cj;
        /* The cycles' verdict is the interval's: the time's judgement has said what the
         * samples' shape allows. The sessions' spread is of times (clock changes in it): the
         * cycles are judged on their samples alone. */
        kp_judge_config cjc = jc;
        cjc.run_ratios = NULL;
        cjc.nrun_ratios = 0;
        if (kp_bench_judge(a, ca, b, cb, paired, &cjc, &cj, &scratch_err) == KPROF_OK) {
            out->have_cycles = 1;
            out->cycles_ratio = cj.ratio;
            out->cycles_verdict = cj.interval_verdict;
            /* A difference in time that the cycles do not show is the clock's, not the
             * kernel's. */
            if ((out->verdict == KP_COMPARE_FASTER || out->verdict == KP_COMPARE_SLOWER) &&
                out->cycles_verdict != out->verdict) {
                out->final_verdict = KP_COMPARE_UNSURE;
                out->judgement.reasons |= KP_JUDGE_CLOCK;
                kp_judge_words(&out->judgement, &jc, "ms", out->judgement.reason,
                               sizeof out->judgement.reason);
            }
        }
        kp_error_clear(&scratch_err);
    }
    free(ca);
    free(cb);
    if (!(out->judgement.reasons & KP_JUDGE_CLOCK))
        kp_judge_words(&out->judgement, &jc, "ms", out->judgement.reason,
                       sizeof out->judgement.reason);
    return KPROF_OK;
}

int kp_bench_outcome_fails(const kp_bench_outcome *o, double fail_if_slower)
{
    if (o->final_verdict != KP_COMPARE_SLOWER) return 0;
    double p = fail_if_slower;
    if (o->judgement.notes & KP_JUDGE_NOTE_ONE_RUN) p += KP_JUDGE_RUN_ALLOWANCE;
    if (kp_compare_verdict_of(&o->ratio, p) != KP_COMPARE_SLOWER) return 0;
    return !o->have_cycles ||
           kp_compare_verdict_of(&o->cycles_ratio, fail_if_slower) == KP_COMPARE_SLOWER;
}

static double kp_bench_sum(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Two sides sharing a lab: switch it to side s's kernel. */
static kprof_status kp_bench_switch(kp_bench_side *sides, int nsides, int s, kp_error *err)
{
    if (nsides < 2 || sides[0].lab != sides[1].lab || !sides[s].entry) return KPROF_OK;
    return kp_lab_use_kernel(sides[s].lab, sides[s].entry, err);
}

/* The noise now: the largest of the sides'. */
static kprof_status kp_bench_check(kp_bench_side *sides, int nsides, double *noise, kp_error *err)
{
    *noise = 0;
    for (int i = 0; i < nsides; i++) {
        kprof_status st = kp_bench_summarise(&sides[i], err);
        if (st != KPROF_OK) return st;
        if (sides[i].noise > *noise) *noise = sides[i].noise;
    }
    return KPROF_OK;
}

/* ---- the lab's sampler: kprof bench's kernels, each in its lab session ---------------------- */

typedef struct kp_bench_lab_sampler {
    kp_bench_side *sides;
    int nsides;
} kp_bench_lab_sampler;

static kprof_status kp_bench_lab_sample(void *ctx, int s, int k, int cold, int warming, double *ms,
                                        double *flush_ms, kp_error *err)
{
    kp_bench_lab_sampler *l = ctx;
    kp_bench_side *side = &l->sides[s];
    kprof_status st = kp_bench_switch(l->sides, l->nsides, s, err);
    if (st != KPROF_OK) return st;
    kp_lab_log *log = warming ? kp_lab_get_log(side->lab) : NULL; /* --trace: warm-ups */
    if (log) log->warming = 1;
    st = kp_lab_sample(side->lab, &side->launch, k, cold, ms, cold ? flush_ms : NULL, err);
    if (log) log->warming = 0;
    return st;
}

static void kp_bench_lab_clock(void *ctx, int s, kp_clock_reading *clk)
{
    kp_bench_lab_sampler *l = ctx;
    kp_lab_clock(l->sides[s].lab, clk);
}

kprof_status kp_bench_measure(kp_bench_side *sides, int nsides, const kp_bench_config *cfg,
                              kp_bench_progress_fn progress, void *user, kp_bench_outcome *out,
                              kp_error *err)
{
    if (nsides < 1 || nsides > 2) {
        kp_bench_outcome_init(out);
        return kp_error_set(err, KPROF_INVALID, "bench measures one kernel or two");
    }
    kp_bench_lab_sampler l = {sides, nsides};
    kp_bench_sampler sampler = {
        .ctx = &l, .sample = kp_bench_lab_sample, .clock = kp_bench_lab_clock};
    /* The CPU time other processes take meanwhile; the sessions' children are ours. A busy host
     * counts against a device whose kernels run on its CPUs. */
    for (int s = 0; s < nsides; s++) {
        int pid = kp_lab_pid(sides[s].lab);
        if (pid > 0 && (sampler.npids == 0 || sampler.pids[0] != pid))
            sampler.pids[sampler.npids++] = pid;
        if (sides[s].lab && kp_lab_get_info(sides[s].lab)->device.kernels_in_process)
            sampler.host_device = 1;
    }
    sampler.separate_sessions = nsides == 2 && sides[0].lab != sides[1].lab && sampler.host_device;
    return kp_bench_measure_with(sides, nsides, cfg, &sampler, progress, user, out, err);
}

/* ---- the rule: one loop for every sampler ------------------------------------------------- */

static uint64_t kp_bench_now(const kp_bench_sampler *sp)
{
    return sp->now_ns ? sp->now_ns(sp->ctx) : kp_now_ns();
}

static void kp_bench_read_clock(const kp_bench_sampler *sp, int s, kp_clock_reading *clk)
{
    if (sp->clock) {
        sp->clock(sp->ctx, s, clk);
        return;
    }
    memset(clk, 0, sizeof *clk);
    kp_strlcpy(clk->why_not, "no clock is read here", sizeof clk->why_not);
}

kprof_status kp_bench_measure_with(kp_bench_side *sides, int nsides, const kp_bench_config *cfg,
                                   const kp_bench_sampler *sp, kp_bench_progress_fn progress,
                                   void *user, kp_bench_outcome *out, kp_error *err)
{
    kp_bench_outcome_init(out);
    if (nsides < 1 || nsides > 2)
        return kp_error_set(err, KPROF_INVALID, "bench measures one kernel or two");
    uint64_t t0 = kp_bench_now(sp);
    const int *pids = sp->pids;
    int npids = sp->npids;
    kp_cpuload load;
    kp_cpuload_begin(&load, pids, npids);
    out->ncpus = load.ncpus;
    out->separate_sessions = sp->separate_sessions;
    int cold = cfg->cold;
    size_t max_batch = cfg->max_batch && cfg->max_batch < KP_BENCH_MAX_BATCH
                           ? cfg->max_batch
                           : (size_t)KP_BENCH_MAX_BATCH;
    double *buf = NULL, *flush = NULL;
    kp_bench_side flushes = {0}; /* cold: every flush's time, for flush_ms */
    kprof_status st = KPROF_OK;
    double wall_per_sample[2] = {0, 0}, dev_per_sample[2] = {0, 0};
    kp_clock_reading clk;

    /* Warm-up, which also tells how long a sample takes on the host's clock. */
    int warm = cfg->warmup > 0 ? cfg->warmup : cfg->warmup_exact ? 0 : 1;
    buf = malloc((size_t)KP_BENCH_MAX_BATCH * sizeof *buf);
    flush = malloc((size_t)KP_BENCH_MAX_BATCH * sizeof *flush);
    if (!buf || !flush) {
        st = kp_error_nomem(err);
        goto done;
    }
    for (int s = 0; s < nsides; s++) {
        kp_bench_side *side = &sides[s];
        side->clock_note[0] = '\0';
        kp_bench_read_clock(sp, s, &clk);
        if (clk.have)
            side->default_clock_mhz = clk.default_mhz;
        else
            snprintf(side->clock_note, sizeof side->clock_note, "%s", clk.why_not);
        uint64_t w0 = kp_bench_now(sp);
        double dev = 0;
        for (int done_ = 0; done_ < warm;) {
            int chunk = warm - done_ < KP_BENCH_MAX_BATCH ? warm - done_ : KP_BENCH_MAX_BATCH;
            st = sp->sample(sp->ctx, s, chunk, cold, 1, buf, flush, err);
            if (st != KPROF_OK) goto done;
            /* The device time of a sample (its flush too, cold): what a comparison's batches
             * are sized by. */
            dev += kp_bench_sum(buf, chunk) + (cold ? kp_bench_sum(flush, chunk) : 0);
            done_ += chunk;
        }
        if (warm) {
            wall_per_sample[s] = (double)(kp_bench_now(sp) - w0) / 1e9 / warm;
            dev_per_sample[s] = dev / 1e3 / warm;
        }
    }

    size_t next_check = (size_t)cfg->min_samples;
    kp_settle settle;
    memset(&settle, 0, sizeof settle);
    size_t settle_at = 0;
    for (;;) {
        /* One round: a batch of each kernel, the same size for both so that pairs form. */
        /* A sample costs its wall time, and never less than its device time. */
        double per = 0;
        for (int s = 0; s < nsides; s++) {
            if (wall_per_sample[s] > per) per = wall_per_sample[s];
            if (dev_per_sample[s] > per) per = dev_per_sample[s];
        }
        /* Comparing, the kernels take turns every quarter batch of device time (a kernel of
         * 2.5 ms or more alternates sample by sample): the two halves of a pair are close in
         * time, so what the machine does meanwhile falls on both. Sized by device time, not
         * wall time: a batch's fixed cost (a timer's setup, a clock reading, a child's reply)
         * would otherwise shrink batches to single samples that cost more than they time. */
        int k;
        if (nsides == 2) {
            double dev =
                dev_per_sample[0] > dev_per_sample[1] ? dev_per_sample[0] : dev_per_sample[1];
            k = dev > 0 ? (int)(cfg->batch_s / 4 / dev) : warm ? KP_BENCH_MAX_BATCH : 1;
        } else {
            /* No warm-up (kprof_benchmark's warmup 0): one sample first, to learn its time. */
            k = per > 0 ? (int)(cfg->batch_s / per) : warm ? KP_BENCH_MAX_BATCH : 1;
        }
        if (k < 1) k = 1;
        if ((size_t)k > max_batch) k = (int)max_batch;
        if (sides[0].n + (size_t)k > cfg->max_samples)
            k = (int)(cfg->max_samples > sides[0].n ? cfg->max_samples - sides[0].n : 1);
        double round_mhz[2] = {0, 0};
        int throttled = 0;
        uint64_t reasons = 0;
        size_t first[2] = {sides[0].n, nsides > 1 ? sides[1].n : 0};
        for (int s = 0; s < nsides; s++) {
            kp_bench_side *side = &sides[s];
            double lo = 0, sum = 0;
            int reads = 0;
            kp_bench_read_clock(sp, s, &clk);
            if (clk.have) {
                lo = clk.sm_mhz, sum += clk.sm_mhz, reads++;
                reasons |= clk.reasons;
            }
            uint64_t w0 = kp_bench_now(sp);
            st = sp->sample(sp->ctx, s, k, cold, 0, buf, flush, err);
            if (st != KPROF_OK) goto done;
            double wall = (double)(kp_bench_now(sp) - w0) / 1e9 / k;
            wall_per_sample[s] =
                wall_per_sample[s] > 0 ? 0.5 * wall_per_sample[s] + 0.5 * wall : wall;
            if (!warm && dev_per_sample[s] <= 0) /* no warm-up told it */
                dev_per_sample[s] =
                    (kp_bench_sum(buf, k) + (cold ? kp_bench_sum(flush, k) : 0)) / 1e3 / k;
            kp_bench_read_clock(sp, s, &clk);
            if (clk.have) {
                if (clk.sm_mhz < lo) lo = clk.sm_mhz;
                sum += clk.sm_mhz, reads++;
                reasons |= clk.reasons;
                if (side->default_clock_mhz <= 0) side->default_clock_mhz = clk.default_mhz;
            }
            if (reads) {
                round_mhz[s] = sum / reads;
                if (side->min_clock_mhz <= 0 || lo < side->min_clock_mhz) side->min_clock_mhz = lo;
                if (side->default_clock_mhz > 0 &&
                    lo < cfg->throttle_fraction * side->default_clock_mhz)
                    throttled = 1;
            }
            side->taken += (size_t)k;
            side->gpu_s += (kp_bench_sum(buf, k) + (cold ? kp_bench_sum(flush, k) : 0)) / 1e3;
            if (cold) {
                st = kp_bench_side_add(&flushes, flush, NULL, (size_t)k, err);
                if (st != KPROF_OK) goto done;
            }
            /* Kept for now; a throttled round is taken back below. */
            st = kp_bench_reserve(side, (size_t)k, reads > 0, err);
            if (st != KPROF_OK) goto done;
            memcpy(side->ms + side->n, buf, (size_t)k * sizeof *buf);
            if (side->mhz)
                for (int i = 0; i < k; i++)
                    side->mhz[side->n + (size_t)i] = round_mhz[s];
            side->n += (size_t)k;
        }
        for (int s = 0; s < nsides; s++) {
            if (sp->kept) sp->kept(sp->ctx, s, sides[s].n - first[s], !throttled);
            if (!throttled) {
                sides[s].rounds++;
                continue;
            }
            sides[s].throttled += sides[s].n - first[s];
            sides[s].n = first[s];
            sides[s].throttle_reasons |= reasons;
        }

        double elapsed = (double)(kp_bench_now(sp) - t0) / 1e9;
        size_t n = sides[0].n;
        for (int s = 1; s < nsides; s++)
            if (sides[s].n < n) n = sides[s].n;
        double gpu = sides[0].gpu_s;
        for (int s = 1; s < nsides; s++)
            if (sides[s].gpu_s < gpu) gpu = sides[s].gpu_s;
        int may_stop = n >= (size_t)cfg->min_samples && gpu >= cfg->min_time_s;
        if (may_stop && n >= next_check) {
            next_check = n + n / 10 + 1;
            double noise;
            st = kp_bench_check(sides, nsides, &noise, err);
            if (st != KPROF_OK) goto done;
            out->measured_busy_cpus = kp_cpuload_end(&load, pids, npids);
            out->busy_cpus = sp->host_device ? out->measured_busy_cpus : -1;
            if (progress) progress(user, sides, nsides, noise, elapsed);
            /* One kernel stops on its noise, once its run is stable; two on the engine's
             * verdict, which is what was asked (both medians within +-0.5% can still leave the
             * ratio's interval straddling the threshold). */
            if (nsides == 1 && !cfg->noise_off && noise <= cfg->max_noise &&
                kp_judge_unstable(&sides[0].shape, out->busy_cpus, KP_JUDGE_BUSY_LIMIT,
                                  cfg->max_noise) == 0) {
                out->stop = KP_BENCH_STOP_NOISE;
                break;
            }
            if (nsides == 2 && sides[0].rounds >= KP_BENCH_MIN_ROUNDS) {
                kp_judge_config jc;
                kp_bench_judge_config(cfg, out, 1, &jc);
                jc.resamples = KP_BENCH_CHECK_RESAMPLES;
                kp_judgement j;
                st =
                    kp_bench_judge(&sides[0], sides[0].ms, &sides[1], sides[1].ms, 1, &jc, &j, err);
                if (st != KPROF_OK) goto done;
                /* A quick look decides whether the full bootstrap is worth its time; only the
                 * full one, the verdict reported, may stop the measurement. */
                if (j.verdict != KP_COMPARE_UNSURE) {
                    jc.resamples = KP_BENCH_FINAL_RESAMPLES;
                    st = kp_bench_judge(&sides[0], sides[0].ms, &sides[1], sides[1].ms, 1, &jc, &j,
                                        err);
                    if (st != KPROF_OK) goto done;
                    if (j.verdict != KP_COMPARE_UNSURE) {
                        out->stop = KP_BENCH_STOP_DECIDED;
                        break;
                    }
                }
            }
            /* The settling rule hears the noise each time the samples grew by a quarter. */
            if (!cfg->noise_off && n >= settle_at) {
                settle_at = n + n / 4 + 1;
                kp_settle_add(&settle, noise);
                if (kp_settle_done(&settle)) {
                    out->stop = KP_BENCH_STOP_SETTLED;
                    break;
                }
            }
        }
        /* With nothing kept (throttled throughout), the timeout still ends it: an error below.
         * floor_first (kprof_benchmark's budget): not before min_samples are kept, unless
         * throttling kept them from being taken in twice the time. */
        if (elapsed >= cfg->timeout_s && (!cfg->floor_first || n >= (size_t)cfg->min_samples ||
                                          elapsed >= 2 * cfg->timeout_s + 10)) {
            out->stop = KP_BENCH_STOP_TIMEOUT;
            break;
        }
        if (n >= cfg->max_samples) {
            out->stop = KP_BENCH_STOP_SAMPLES;
            break;
        }
    }
    for (int s = 0; s < nsides; s++) {
        if (sides[s].n == 0) {
            st = kp_error_set(err, KPROF_BACKEND,
                              "every sample was taken while the GPU was throttled (%zu of them); "
                              "nothing to report",
                              sides[s].throttled);
            goto done;
        }
        st = kp_bench_summarise(&sides[s], err);
        if (st != KPROF_OK) goto done;
    }
    if (flushes.n) {
        double med = kp_select(flushes.ms, flushes.n, flushes.n / 2);
        for (int s = 0; s < nsides; s++)
            sides[s].flush_ms = med;
    }
    {
        double busy = kp_cpuload_end(&load, pids, npids);
        if (busy >= 0 || out->measured_busy_cpus < 0) out->measured_busy_cpus = busy;
        out->busy_cpus = sp->host_device ? out->measured_busy_cpus : -1;
    }
    if (nsides == 2) {
        st = kp_bench_compare(&sides[0], &sides[1], 1, cfg, out, err);
        if (st != KPROF_OK) goto done;
    }
done:
    out->wall_s = (double)(kp_bench_now(sp) - t0) / 1e9;
    free(buf);
    free(flush);
    kp_bench_side_free(&flushes);
    return st;
}

/* ---- a bench's points ------------------------------------------------------------------- */

/* "Nx64" -> dims; each part an expression in the axes ('x' outside braces separates). */
static kprof_status kp_bench_dims(const char *opt, const char *text, const kp_vars *vars,
                                  uint64_t out[3], int *dims, kp_error *err)
{
    int n = 0, depth = 0;
    const char *start = text;
    out[0] = out[1] = out[2] = 1;
    for (const char *p = text;; p++) {
        if (*p == '{') depth++;
        if (*p == '}') depth--;
        if (*p == '\0' || (*p == 'x' && depth == 0)) {
            if (n == 3)
                return kp_error_set(err, KPROF_INVALID, "%s '%s': more than 3 dimensions", opt,
                                    text);
            char part[256];
            size_t len = (size_t)(p - start);
            if (len == 0 || len >= sizeof part)
                return kp_error_set(err, KPROF_INVALID, "%s '%s': an empty dimension", opt, text);
            memcpy(part, start, len);
            part[len] = '\0';
            kp_str sub = {0};
            kp_error why = {0};
            double v;
            kprof_status rc = kp_expr_substitute(part, vars, &sub, &why);
            if (rc == KPROF_OK) rc = kp_expr_eval(sub.data ? sub.data : "", vars, &v, &why);
            kp_str_free(&sub);
            if (rc != KPROF_OK)
                return kp_error_set(err, KPROF_INVALID, "%s '%s': %s", opt, text, why.message);
            if (v < 1 || v != floor(v) || v > 1e15)
                return kp_error_set(err, KPROF_INVALID,
                                    "%s '%s': dimension %d is %g, not a positive whole number", opt,
                                    text, n + 1, v);
            out[n++] = (uint64_t)v;
            if (*p == '\0') break;
            start = p + 1;
        }
    }
    *dims = n;
    return KPROF_OK;
}

/* The compiler options at a point: -D values in the axes, then -I and --options. */
static kprof_status kp_bench_point_options(const kp_bench_plan *a, const kp_vars *vars, kp_str *out,
                                           kp_error *err)
{
    for (int i = 0; i < a->ndefines; i++) {
        const char *d = a->defines[i], *eq = strchr(d, '=');
        kp_error why = {0};
        if (!eq) {
            /* -DN with an axis N defines N as the axis value. */
            const kp_var *v = kp_vars_find(vars, d);
            char num[64];
            if (v && v->numeric) kp_expr_format(v->value, num, sizeof num);
            if (v)
                kp_str_printf(out, " -D%s=%s", d, v->numeric ? num : v->text);
            else
                kp_str_printf(out, " -D%s", d);
            continue;
        }
        kp_str_printf(out, " -D%.*s=", (int)(eq - d), d);
        if (kp_expr_substitute(eq + 1, vars, out, &why) != KPROF_OK)
            return kp_error_set(err, KPROF_INVALID, "-D %s: %s", d, why.message);
    }
    if (a->options) kp_str_append(out, a->options);
    if (out->failed) return kp_error_nomem(err);
    return KPROF_OK;
}

static void kp_bench_point_vars(const kp_bench_plan *a, int index, kp_vars *vars)
{
    memset(vars, 0, sizeof *vars);
    /* The first axis varies slowest. */
    int stride = 1;
    for (int i = a->naxes - 1; i >= 0; i--) {
        const kp_bench_axis *ax = &a->axes[i];
        vars->v[i] = ax->values[(index / stride) % ax->nvalues];
        stride *= ax->nvalues;
    }
    vars->n = a->naxes;
}

void kp_bench_vars_text(const kp_vars *vars, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    /* Numbers as numbers ("N=4096" whether given as 4K or 4096): a point is found again in an
     * earlier run however its value was spelled. */
    for (int i = 0; i < vars->n && len < n; i++) {
        char num[64];
        if (vars->v[i].numeric) kp_expr_format(vars->v[i].value, num, sizeof num);
        len += (size_t)snprintf(buf + len, n - len, "%s%s=%s", i ? " " : "", vars->v[i].name,
                                vars->v[i].numeric ? num : vars->v[i].text);
    }
}

void kp_bench_setup_free(kp_bench_setup *p)
{
    kp_str_free(&p->buffers);
    kp_str_free(&p->options);
}

/* Point index's setup; an error names the point. */
kprof_status kp_bench_point_setup(const kp_bench_plan *a, int index, kp_bench_setup *p,
                                  kp_error *err)
{
    memset(p, 0, sizeof *p);
    kp_bench_point_vars(a, index, &p->vars);
    const kp_vars *vars = &p->vars;
    p->launch = a->launch;
    int gd = 0, td = 0;
    kp_error why = {0};
    kprof_status st = kp_bench_dims("--grid", a->grid, vars, p->launch.grid, &gd, err);
    if (st == KPROF_OK) st = kp_bench_dims("--tg", a->tg, vars, p->launch.tg, &td, err);
    if (st == KPROF_OK && gd != td)
        st = kp_error_set(err, KPROF_INVALID, "--grid has %d dimension%s but --tg has %d", gd,
                          gd == 1 ? "" : "s", td);
    p->launch.dims = gd;
    if (st == KPROF_OK && kp_expr_substitute(a->buffers, vars, &p->buffers, &why) != KPROF_OK)
        st = kp_error_set(err, KPROF_INVALID, "--buffers: %s", why.message);
    if (st == KPROF_OK) st = kp_bench_point_options(a, vars, &p->options, err);
    const char *formulas[2] = {a->bytes_expr, a->flops_expr};
    const char *names[2] = {"--bytes", "--flops"};
    double *values[2] = {&p->bytes, &p->flops};
    for (int f = 0; f < 2 && st == KPROF_OK; f++) {
        if (!formulas[f]) continue;
        double v = 0;
        if (kp_expr_eval(formulas[f], vars, &v, &why) != KPROF_OK)
            st =
                kp_error_set(err, KPROF_INVALID, "%s '%s': %s", names[f], formulas[f], why.message);
        else if (v < 0 || v >= 18446744073709551616.0)
            st = kp_error_set(err, KPROF_INVALID, "%s '%s' is %g at a point: %s", names[f],
                              formulas[f], v, v < 0 ? "negative" : "too large");
        *values[f] = v;
    }
    if (st != KPROF_OK) {
        char vt[256];
        kp_bench_vars_text(vars, vt, sizeof vt);
        if (vt[0]) kp_error_append(err, " (at the point %s)", vt);
        kp_bench_setup_free(p);
    }
    return st;
}

/* Every point's setup, before anything is measured: a mistake at the last point is found now,
 * not after minutes of measuring. */
kprof_status kp_bench_check_points(const kp_bench_plan *a, int npoints, kp_error *err)
{
    for (int index = 0; index < npoints; index++) {
        kp_bench_setup p;
        kprof_status st = kp_bench_point_setup(a, index, &p, err);
        if (st != KPROF_OK) return st;
        kp_bench_setup_free(&p);
    }
    return KPROF_OK;
}

/* --counters for one side of a row, after its samples: one replayed dispatch of lab's kernel at
 * launch. Once a row finds the counters cannot be read, later rows are not asked (the first
 * reason stands for all). */
static kprof_status kp_bench_counters(kp_bench_session *r, kp_bench_row *row, int side, kp_lab *lab,
                                      const kp_launch *launch, kp_error *err)
{
    kp_counters *c = malloc(sizeof *c);
    if (!c) return kp_error_nomem(err);
    *c = r->plan->counters_asked;
    row->counters[side] = c;
    if (r->counters_off[0]) {
        c->read = 1;
        c->have = 0;
        snprintf(c->why_not, sizeof c->why_not, "%s", r->counters_off);
        return KPROF_OK;
    }
    kprof_status st = kp_lab_counters(lab, launch, c, err);
    if (st == KPROF_OK && !c->have)
        snprintf(r->counters_off, sizeof r->counters_off, "%s", c->why_not);
    return st;
}

/* --repeat: a later session's samples of a row (tmp) joined to the row's, and the sessions'
 * medians and ratios kept. */
static kprof_status kp_bench_join(kp_bench_row *row, kp_bench_side *tmp, const kp_bench_outcome *o,
                                  kp_error *err)
{
    for (int s = 0; s < row->nsides; s++) {
        kp_bench_side *d = &row->side[s], *t = &tmp[s];
        kprof_status st = kp_bench_side_add(d, t->ms, t->mhz, t->n, err);
        if (st != KPROF_OK) return st;
        d->taken += t->taken;
        d->rounds += t->rounds;
        d->throttled += t->throttled;
        d->gpu_s += t->gpu_s;
        d->throttle_reasons |= t->throttle_reasons;
        if (t->min_clock_mhz > 0 && (d->min_clock_mhz <= 0 || t->min_clock_mhz < d->min_clock_mhz))
            d->min_clock_mhz = t->min_clock_mhz;
        if (d->nruns < KP_BENCH_MAX_REPEAT) d->run_median[d->nruns++] = t->median.value;
    }
    kp_bench_outcome *ro = &row->outcome;
    if (row->nsides == 2 && ro->nrun_ratios < KP_BENCH_MAX_REPEAT)
        ro->run_ratio[ro->nrun_ratios++] = o->ratio.value;
    ro->wall_s += o->wall_s;
    if (o->measured_busy_cpus > ro->measured_busy_cpus)
        ro->measured_busy_cpus = o->measured_busy_cpus;
    if (o->busy_cpus > ro->busy_cpus) ro->busy_cpus = o->busy_cpus;
    if (o->stop == KP_BENCH_STOP_TIMEOUT) ro->stop = KP_BENCH_STOP_TIMEOUT;
    return KPROF_OK;
}

/* After the last session of a point: each row's samples summarised whole and the comparison
 * made again, with the spread between the sessions. */
static kprof_status kp_bench_rejudge(kp_bench_session *r, int row0, kp_error *err)
{
    for (int i = row0; i < r->nrows; i++) {
        kp_bench_row *row = &r->rows[i];
        for (int s = 0; s < row->nsides; s++) {
            kprof_status st = kp_bench_summarise(&row->side[s], err);
            if (st != KPROF_OK) return st;
        }
        if (row->nsides == 2) {
            kp_bench_config cfg = r->plan->cfg;
            cfg.cold = row->cold;
            kprof_status st =
                kp_bench_compare(&row->side[0], &row->side[1], 1, &cfg, &row->outcome, err);
            if (st != KPROF_OK) return st;
        }
    }
    return KPROF_OK;
}

/* A kernel timed out: its sessions may never be released; the caller leaves at once. */
static kprof_status kp_bench_wedged(kp_bench_session *r, kp_bench_setup *p, kprof_status st)
{
    r->wedged = 1;
    kp_bench_setup_free(p);
    return st;
}

/* Measure one point (both cache states asked): its first session appends rows; with --repeat,
 * each later session (fresh sessions: compiled, filled and run anew) joins its samples to
 * them. */
static kprof_status kp_bench_point_once(kp_bench_session *r, int index, int rep, int row0,
                                        kp_error *err);

kprof_status kp_bench_point(kp_bench_session *r, int index, kp_error *err)
{
    int row0 = r->nrows;
    kprof_status st = KPROF_OK;
    for (int rep = 0; rep < r->plan->repeat && st == KPROF_OK; rep++)
        st = kp_bench_point_once(r, index, rep, row0, err);
    if (st == KPROF_OK && r->plan->repeat > 1) st = kp_bench_rejudge(r, row0, err);
    return st;
}

static kprof_status kp_bench_point_once(kp_bench_session *r, int index, int rep, int row0,
                                        kp_error *err)
{
    const kp_bench_plan *a = r->plan;
    kp_bench_setup p;
    kprof_status st = kp_bench_point_setup(a, index, &p, err);
    if (st != KPROF_OK) return st;
    const kp_vars *vars = &p.vars;
    const kp_launch launch = p.launch;
    const kp_str buffers = p.buffers, options = p.options;
    if (index == 0) {
        kp_strlcpy(r->first_options, options.data ? options.data : "", sizeof r->first_options);
        kp_strlcpy(r->first_buffers, buffers.data ? buffers.data : "", sizeof r->first_buffers);
    }
    int nsides = a->ntargets == 2 || a->nentries == 2 ? 2 : 1;
    kp_lab *labs[2] = {NULL, NULL};
    kp_reflection refl;
    /* Two kernels of one file share one session: one process, one program, one set of
     * buffers (bench.h), so nothing but the kernels differs between A and B. */
    int shared = nsides == 2 && (a->ntargets == 1 || strcmp(a->targets[0], a->targets[1]) == 0);
    const char *entries[2] = {NULL, NULL};
    for (int s = 0; s < nsides && st == KPROF_OK; s++) {
        entries[s] = a->nentries == 0 ? NULL : a->entries[a->nentries == 2 ? s : 0];
        kp_lab_options lo = {
            .target = a->targets[a->ntargets == 2 ? s : 0],
            .entry = entries[s],
            .buffers = a->replay ? NULL : buffers.data,
            .backend = a->backend,
            .device = a->device,
            .options = options.data ? options.data : "",
        };
        /* The capture binds the side that is not the capture itself (lab.h). */
        if (a->replay && strcmp(lo.target, a->replay) != 0) lo.capture = a->replay;
        if (shared && s == 1) {
            labs[1] = labs[0];
            st = kp_lab_use_kernel(labs[0], entries[1], err);
        } else {
            st = kp_lab_open(&lo, &labs[s], err);
            if (st == KPROF_OK && a->log) kp_lab_set_log(labs[s], a->log);
        }
        if (st == KPROF_OK) st = kp_lab_check_launch(labs[s], &launch, &refl, err);
        if (st == KPROF_OK) {
            const kp_lab_info *info = kp_lab_get_info(labs[s]);
            if (a->log) { /* the work of this point's dispatches, as its row reports it */
                a->log->bytes = a->bytes_expr ? p.bytes : (double)info->buffer_bytes;
                a->log->flops = a->flops_expr ? p.flops : NAN;
            }
            if (!r->have_info) {
                r->info = *info;
                snprintf(r->kernel_dir, sizeof r->kernel_dir, "%s", info->kernel_dir);
            }
            kp_strlcpy(r->entry_name[s], info->kernel->name, sizeof r->entry_name[s]);
            if (info->replay && !r->replay_text[s][0])
                kp_strlcpy(r->replay_text[s], info->replay_text, sizeof r->replay_text[s]);
            snprintf(r->source[s], sizeof r->source[s], "%s", info->source_path);
        }
    }
    if (st == KPROF_OK && shared) st = kp_lab_use_kernel(labs[0], entries[0], err);
    if (st == KPROF_OK) r->have_info = 1;
    if (st == KPROF_OK && nsides == 2) {
        const kp_lab_info *i0 = kp_lab_get_info(labs[0]), *i1 = kp_lab_get_info(labs[1]);
        if (strcmp(i0->device.name, i1->device.name) != 0 ||
            strcmp(i0->device.backend, i1->device.backend) != 0)
            st = kp_error_set(err, KPROF_INVALID,
                              "A runs on %s (%s) but B on %s (%s): compare on one device (give "
                              "--backend, and kernels in one language)",
                              i0->device.name, i0->device.backend, i1->device.name,
                              i1->device.backend);
    }
    int rowk = row0;
    for (int cold = 0; cold < 2 && st == KPROF_OK; cold++) {
        if ((cold && !a->cold) || (!cold && !a->hot)) continue;
        kp_bench_row *row;
        kp_bench_side later[2]; /* a later session's samples, joined to the row's after */
        kp_bench_side *sides;
        kp_bench_outcome later_outcome, *outcome;
        if (rep == 0) {
            row = &r->rows[r->nrows];
            memset(row, 0, sizeof *row);
            row->vars = *vars;
            row->cold = cold;
            row->launch = launch;
            row->nsides = nsides;
            r->nrows++;
            sides = row->side;
            outcome = &row->outcome;
        } else {
            row = &r->rows[rowk];
            memset(later, 0, sizeof later);
            sides = later;
            outcome = &later_outcome;
        }
        rowk++;
        for (int s = 0; s < nsides; s++) {
            sides[s].lab = labs[s];
            sides[s].launch = launch;
            sides[s].entry = shared ? entries[s] : NULL;
            snprintf(row->label[s], sizeof row->label[s], "%s", r->entry_name[s]);
        }
        char vt[256];
        kp_bench_vars_text(vars, vt, sizeof vt);
        char phase[512];
        if (a->repeat > 1)
            snprintf(phase, sizeof phase, "%s%s%s %s, session %d of %d", r->entry_name[0],
                     vt[0] ? " " : "", vt, cold ? "cold" : "hot", rep + 1, a->repeat);
        else
            snprintf(phase, sizeof phase, "%s%s%s %s", r->entry_name[0], vt[0] ? " " : "", vt,
                     cold ? "cold" : "hot");
        r->phase = phase;
        if (r->step) r->step(r->user, phase, "warming up");
        kp_bench_config cfg = a->cfg;
        cfg.cold = cold;
        st = kp_bench_measure(sides, nsides, &cfg, r->progress, r->user, outcome, err);
        r->phase = NULL;
        if (st == KPROF_OK && a->repeat > 1) {
            if (rep == 0) {
                /* The first session's median and ratio are the first of the runs'. */
                for (int s = 0; s < nsides; s++)
                    row->side[s].run_median[row->side[s].nruns++] = row->side[s].median.value;
                if (nsides == 2)
                    row->outcome.run_ratio[row->outcome.nrun_ratios++] = row->outcome.ratio.value;
            } else {
                st = kp_bench_join(row, later, &later_outcome, err);
            }
        }
        if (rep > 0)
            for (int s = 0; s < nsides; s++)
                kp_bench_side_free(&later[s]);
        if (rep > 0) {
            if (st == KPROF_TIMEOUT) return kp_bench_wedged(r, &p, st);
            if (st != KPROF_OK) break;
            continue; /* the counters and sizes are the first session's */
        }
        kp_strlcpy(r->info.timer, kp_lab_get_info(labs[0])->timer, sizeof r->info.timer);
        if (st == KPROF_TIMEOUT) return kp_bench_wedged(r, &p, st);
        if (st != KPROF_OK) break;
        row->bytes = a->bytes_expr ? (uint64_t)p.bytes : kp_lab_get_info(labs[0])->buffer_bytes;
        row->bytes_assumed = !a->bytes_expr;
        row->working_set = kp_lab_get_info(labs[0])->buffer_bytes;
        row->flops = p.flops;
        for (int s = 0; s < nsides && st == KPROF_OK && a->counters; s++) {
            if (r->step) r->step(r->user, phase, "hardware counters (one replayed dispatch)");
            if (shared) st = kp_lab_use_kernel(labs[0], entries[s], err);
            if (st == KPROF_OK) st = kp_bench_counters(r, row, s, labs[s], &launch, err);
        }
        if (st == KPROF_TIMEOUT) return kp_bench_wedged(r, &p, st);
    }
    /* Nothing a session measured stands until it released its device cleanly (lab.h). */
    for (int s = 0; s < nsides; s++) {
        if (!labs[s] || (s == 1 && labs[1] == labs[0])) continue;
        if (st == KPROF_OK) st = kp_lab_finish(labs[s], err);
        kp_lab_close(labs[s]);
    }
    for (int i = 0; i < r->nrows; i++)
        for (int s = 0; s < 2; s++)
            r->rows[i].side[s].lab = NULL;
    kp_bench_setup_free(&p);
    return st;
}

const kp_bench_outcome *kp_bench_row_comparison(const kp_bench_row *row)
{
    if (row->nsides == 2) return &row->outcome;
    if (row->have_old) return &row->old_outcome;
    return NULL;
}

void kp_bench_gate(kp_bench_row *rows, int nrows, double fail_if_slower)
{
    if (fail_if_slower < 0) return;
    for (int i = 0; i < nrows; i++) {
        kp_bench_row *row = &rows[i];
        const kp_bench_outcome *o = kp_bench_row_comparison(row);
        if (!o) continue;
        row->slower_gate = kp_bench_outcome_fails(o, fail_if_slower);
    }
}

double kp_bench_row_gbps(const kp_bench_row *row, const kp_bench_side *s)
{
    return s->median.value > 0 ? (double)row->bytes / (s->median.value * 1e-3) / 1e9 : 0;
}

double kp_bench_row_gflops(const kp_bench_row *row, const kp_bench_side *s)
{
    return s->median.value > 0 && row->flops > 0 ? row->flops / (s->median.value * 1e-3) / 1e9 : 0;
}

void kp_bench_row_readings(const kp_bench_row *row, const kp_bench_side *s, const kp_counters *c,
                           double ceiling_gbs, double peak_gflops, uint64_t cache_bytes,
                           kp_readings_input *in, kp_readings *rd)
{
    memset(in, 0, sizeof *in);
    in->median_ms = s->median.value;
    in->gbps = kp_bench_row_gbps(row, s);
    in->bytes = row->bytes;
    in->bytes_assumed = row->bytes_assumed;
    in->ceiling_gbs = ceiling_gbs;
    /* Hot rows' data that fits in the cache: the counters' cold DRAM bytes are no rate. */
    in->working_set = row->working_set;
    in->cache_bytes = cache_bytes;
    in->timed_cold = row->cold;
    kp_counters_apply(c, peak_gflops, in);
    kp_readings_compute(in, rd);
}

/* ---- --compare: against an earlier bench result ----------------------------------------- */

kprof_status kp_bench_compare_file(kp_bench_session *s, const kp_bench_file *old,
                                   const char *old_path, int gate, FILE *warn, int *matched,
                                   kp_error *err)
{
    const kp_bench_config *cfg = &s->plan->cfg;
    *matched = 0;
    if (strcmp(old->device, s->info.device.name) != 0)
        fprintf(warn, "kprof: warning: %s was measured on %s, this run on %s\n", old_path,
                old->device, s->info.device.name);
    for (int i = 0; i < s->nrows; i++) {
        kp_bench_row *row = &s->rows[i];
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        const kp_bench_file_point *p = kp_bench_file_find(old, vt, row->cold);
        if (!p) continue;
        /* As kprof diff: a verdict needs 5 samples a side. */
        if (p->n < 5) {
            fprintf(warn,
                    "kprof: warning: %s: point '%s' (%s) has %zu samples, fewer than 5: not "
                    "compared\n",
                    old_path, vt, row->cold ? "cold" : "hot", p->n);
            continue;
        }
        memset(&row->old, 0, sizeof row->old);
        kprof_status st = kp_bench_side_add(&row->old, p->ms, p->mhz, p->n, err);
        row->old.rounds = p->rounds;
        for (int k = 0; k < p->nruns && k < KP_BENCH_MAX_REPEAT; k++)
            row->old.run_median[row->old.nruns++] = p->run_median[k];
        /* What this run knows of the machine stands for the comparison. */
        kp_bench_outcome_init(&row->old_outcome);
        row->old_outcome.busy_cpus = row->outcome.busy_cpus;
        row->old_outcome.measured_busy_cpus = row->outcome.measured_busy_cpus;
        row->old_outcome.ncpus = row->outcome.ncpus;
        if (st == KPROF_OK) st = kp_bench_summarise(&row->old, err);
        if (st == KPROF_OK && !(row->old.median.value > 0))
            st = kp_error_set(err, KPROF_INVALID,
                              "%s: point '%s' has a median of 0 ms: nothing to compare with",
                              old_path, vt);
        if (st == KPROF_OK)
            st = kp_bench_compare(&row->old, &row->side[0], 0, cfg, &row->old_outcome, err);
        if (st != KPROF_OK) return st;
        row->have_old = 1;
        (*matched)++;
    }
    if (!*matched && gate) /* A gate that compared nothing must not pass. */
        return kp_error_set(err, KPROF_INVALID,
                            "--fail-if-slower: %s has no point with these axes and cache state "
                            "(and 5 samples or more): nothing was compared",
                            old_path);
    if (!*matched)
        fprintf(warn,
                "kprof: warning: %s has no point with these axes and cache state: "
                "nothing compared\n",
                old_path);
    return KPROF_OK;
}
