/*
 * bench.c — `kprof bench`'s measurement loop: warm-up, batches sized to the kernel, kernels in
 * turn, clocks around every batch, the stopping rule checked as the samples grow, and the A/B
 * comparison (see bench.h).
 */
#define _GNU_SOURCE
#include "lab/bench.h"
#include "base/util.h"

#include <math.h>
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
    if (kp_judge(&ja, &jb, jc, out) != 0) return kp_error_nomem(err);
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

kprof_status kp_bench_measure(kp_bench_side *sides, int nsides, const kp_bench_config *cfg,
                              kp_bench_progress_fn progress, void *user, kp_bench_outcome *out,
                              kp_error *err)
{
    kp_bench_outcome_init(out);
    if (nsides < 1 || nsides > 2)
        return kp_error_set(err, KPROF_INVALID, "bench measures one kernel or two");
    uint64_t t0 = kp_now_ns();
    /* The CPU time other processes take meanwhile; the sessions' children are ours. A busy host
     * counts against a device whose kernels run on its CPUs. */
    int pids[2], npids = 0, host_device = 0;
    for (int s = 0; s < nsides; s++) {
        int pid = kp_lab_pid(sides[s].lab);
        if (pid > 0 && (npids == 0 || pids[0] != pid)) pids[npids++] = pid;
        if (sides[s].lab && kp_lab_get_info(sides[s].lab)->device.kernels_in_process)
            host_device = 1;
    }
    kp_cpuload load;
    kp_cpuload_begin(&load, pids, npids);
    out->ncpus = load.ncpus;
    out->separate_sessions = nsides == 2 && sides[0].lab != sides[1].lab && host_device;
    int cold = cfg->cold;
    double *buf = NULL, *flush = NULL;
    kp_bench_side flushes = {0}; /* cold: every flush's time, for flush_ms */
    kprof_status st = KPROF_OK;
    double wall_per_sample[2] = {0, 0}, dev_per_sample[2] = {0, 0};
    kp_clock_reading clk;

    /* Warm-up, which also tells how long a sample takes on the host's clock. */
    int warm = cfg->warmup > 0 ? cfg->warmup : 1;
    buf = malloc((size_t)KP_BENCH_MAX_BATCH * sizeof *buf);
    flush = malloc((size_t)KP_BENCH_MAX_BATCH * sizeof *flush);
    if (!buf || !flush) {
        st = kp_error_nomem(err);
        goto done;
    }
    for (int s = 0; s < nsides; s++) {
        kp_bench_side *side = &sides[s];
        side->clock_note[0] = '\0';
        kp_lab_clock(side->lab, &clk);
        if (clk.have)
            side->default_clock_mhz = clk.default_mhz;
        else
            snprintf(side->clock_note, sizeof side->clock_note, "%s", clk.why_not);
        uint64_t w0 = kp_now_ns();
        st = kp_bench_switch(sides, nsides, s, err);
        if (st != KPROF_OK) goto done;
        double dev = 0;
        for (int done_ = 0; done_ < warm;) {
            int chunk = warm - done_ < KP_BENCH_MAX_BATCH ? warm - done_ : KP_BENCH_MAX_BATCH;
            st =
                kp_lab_sample(side->lab, &side->launch, chunk, cold, buf, cold ? flush : NULL, err);
            if (st != KPROF_OK) goto done;
            /* The device time of a sample (its flush too, cold): what a comparison's batches
             * are sized by. */
            dev += kp_bench_sum(buf, chunk) + (cold ? kp_bench_sum(flush, chunk) : 0);
            done_ += chunk;
        }
        wall_per_sample[s] = (double)(kp_now_ns() - w0) / 1e9 / warm;
        dev_per_sample[s] = dev / 1e3 / warm;
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
            k = dev > 0 ? (int)(cfg->batch_s / 4 / dev) : KP_BENCH_MAX_BATCH;
        } else {
            k = per > 0 ? (int)(cfg->batch_s / per) : KP_BENCH_MAX_BATCH;
        }
        if (k < 1) k = 1;
        if (k > KP_BENCH_MAX_BATCH) k = KP_BENCH_MAX_BATCH;
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
            kp_lab_clock(side->lab, &clk);
            if (clk.have) {
                lo = clk.sm_mhz, sum += clk.sm_mhz, reads++;
                reasons |= clk.reasons;
            }
            uint64_t w0 = kp_now_ns();
            st = kp_bench_switch(sides, nsides, s, err);
            if (st != KPROF_OK) goto done;
            st = kp_lab_sample(side->lab, &side->launch, k, cold, buf, cold ? flush : NULL, err);
            if (st != KPROF_OK) goto done;
            double wall = (double)(kp_now_ns() - w0) / 1e9 / k;
            wall_per_sample[s] = 0.5 * wall_per_sample[s] + 0.5 * wall;
            kp_lab_clock(side->lab, &clk);
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
            if (!throttled) {
                sides[s].rounds++;
                continue;
            }
            sides[s].throttled += sides[s].n - first[s];
            sides[s].n = first[s];
            sides[s].throttle_reasons |= reasons;
        }

        double elapsed = (double)(kp_now_ns() - t0) / 1e9;
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
            out->busy_cpus = host_device ? out->measured_busy_cpus : -1;
            if (progress) progress(user, sides, nsides, noise, elapsed);
            /* One kernel stops on its noise, once its run is stable; two on the engine's
             * verdict, which is what was asked (both medians within +-0.5% can still leave the
             * ratio's interval straddling the threshold). */
            if (nsides == 1 && noise <= cfg->max_noise &&
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
            if (n >= settle_at) {
                settle_at = n + n / 4 + 1;
                kp_settle_add(&settle, noise);
                if (kp_settle_done(&settle)) {
                    out->stop = KP_BENCH_STOP_SETTLED;
                    break;
                }
            }
        }
        /* With nothing kept (throttled throughout), the timeout still ends it: an error below. */
        if (elapsed >= cfg->timeout_s) {
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
        out->busy_cpus = host_device ? out->measured_busy_cpus : -1;
    }
    if (nsides == 2) {
        st = kp_bench_compare(&sides[0], &sides[1], 1, cfg, out, err);
        if (st != KPROF_OK) goto done;
    }
done:
    out->wall_s = (double)(kp_now_ns() - t0) / 1e9;
    free(buf);
    free(flush);
    kp_bench_side_free(&flushes);
    return st;
}
