/*
 * judge.c — the comparison engine (judge.h): each side's shape (blocks from the autocorrelation,
 * block-aware median intervals, drift between halves, two modes), the block bootstrap of the
 * ratio, the spread between runs, and the rules that turn a verdict the data cannot support
 * into UNSURE with its reasons; and the CPU time other processes take while kprof measures.
 */
#define _GNU_SOURCE
#include "core/judge.h"
#include "core/stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KP_JUDGE_MODE_MIN_SHARE 0.05 /* each mode holds at least this share */
#define KP_JUDGE_MODE_D         3.0  /* Ashman's D at least this */
#define KP_JUDGE_MODE_MIN_N     20
#define KP_JUDGE_HALF_MIN_N     10

void kp_judge_config_default(kp_judge_config *c)
{
    memset(c, 0, sizeof *c);
    c->threshold = 0.01;
    c->busy_cpus = -1;
    c->busy_limit = KP_JUDGE_BUSY_LIMIT;
    c->run_allowance = KP_JUDGE_RUN_ALLOWANCE;
    c->resamples = KP_JUDGE_RESAMPLES;
    c->seed = KP_JUDGE_SEED;
}

const char *kp_judge_reason_name(unsigned bit)
{
#define KP_JUDGE_REASON_NAME(name, b, text)                                                        \
    if (bit == (b)) return text;
    KP_JUDGE_REASON_LIST(KP_JUDGE_REASON_NAME)
#undef KP_JUDGE_REASON_NAME
    return "?";
}

/* ---- one side's shape ------------------------------------------------------------------------ */

/* The first lag 2^k (k >= 0, lag <= n/4) at which |acf| falls to the limit; n/4 when it never
 * does (then the side has 4 blocks: too few). 1 for n < 8 or a constant sample. */
static size_t kp_acf_block(const double *v, size_t n, double *acf1)
{
    *acf1 = 0;
    if (n < 8) return 1;
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += v[i];
    mean /= (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    if (!(ss > 0)) return 1;
    double limit = 2 / sqrt((double)n);
    if (limit < 0.1) limit = 0.1;
    for (size_t lag = 1; lag <= n / 4; lag *= 2) {
        double c = 0;
        for (size_t i = 0; i + lag < n; i++)
            c += (v[i] - mean) * (v[i + lag] - mean);
        double r = c / ss;
        if (lag == 1) *acf1 = r;
        if (fabs(r) <= limit) return lag;
    }
    return n / 4;
}

/* The median of an ascending array and its 95% interval at the effective size n / block. */
static void kp_block_median_ci(const double *sorted, size_t n, size_t block, kp_estimate *out)
{
    size_t m = block > 1 ? n / block : n;
    if (m < 1) m = 1;
    size_t j = kp_median_ci_rank(m, 0.95);
    out->value = sorted[n / 2];
    if (j == 0) {
        out->lo = sorted[0];
        out->hi = sorted[n - 1];
        return;
    }
    size_t lo = (size_t)floor((double)(j - 1) * (double)n / (double)m);
    if (lo > n / 2) lo = n / 2;
    out->lo = sorted[lo];
    out->hi = sorted[n - 1 - lo];
}

/* Otsu's split of an ascending array into two modes (judge.h's rule). */
static void kp_modes(const double *s, size_t n, double threshold, kp_shape *out)
{
    out->modes = 1;
    if (n < KP_JUDGE_MODE_MIN_N) return;
    double med = s[n / 2];
    if (!(med > 0)) return;
    /* Centred on the median and scaled by it: sums of squares without cancellation. */
    double total = 0, total2 = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (s[i] - med) / med;
        total += x;
        total2 += x * x;
    }
    size_t kmin = (size_t)ceil(KP_JUDGE_MODE_MIN_SHARE * (double)n);
    if (kmin < 2) kmin = 2;
    double sum = 0, sum2 = 0, best = -1;
    size_t split = 0;
    double bs0 = 0, bs1 = 0, bq0 = 0, bq1 = 0;
    for (size_t k = 1; k < n; k++) {
        double x = (s[k - 1] - med) / med;
        sum += x;
        sum2 += x * x;
        if (k < kmin || n - k < kmin) continue;
        if (s[k] == s[k - 1]) continue; /* a split between equal values is no split */
        double w0 = (double)k / (double)n, w1 = 1 - w0;
        double m0 = sum / (double)k, m1 = (total - sum) / (double)(n - k);
        double between = w0 * w1 * (m1 - m0) * (m1 - m0);
        if (between > best) {
            best = between;
            split = k;
            bs0 = sum, bs1 = total - sum, bq0 = sum2, bq1 = total2 - sum2;
        }
    }
    if (split == 0) return;
    double n0 = (double)split, nn1 = (double)(n - split);
    double m0 = bs0 / n0, m1 = bs1 / nn1;
    double v0 = bq0 / n0 - m0 * m0, v1 = bq1 / nn1 - m1 * m1;
    if (v0 < 0) v0 = 0;
    if (v1 < 0) v1 = 0;
    double d = v0 + v1 > 0 ? sqrt(2.0) * fabs(m1 - m0) / sqrt(v0 + v1) : INFINITY;
    double lo_med = s[split / 2], hi_med = s[split + (n - split) / 2];
    double sep = 2 * threshold > 0.02 ? 2 * threshold : 0.02;
    if (d < KP_JUDGE_MODE_D || (hi_med - lo_med) / med < sep) return;
    /* Modes are compact: each group's interquartile range at most half the distance between
     * them (a long tail split off is spread out, not a mode). */
    size_t n1 = n - split;
    double iqr0 = s[split - 1 - split / 4] - s[split / 4];
    double iqr1 = s[split + n1 - 1 - n1 / 4] - s[split + n1 / 4];
    double gap = hi_med - lo_med;
    if (iqr0 > 0.5 * gap || iqr1 > 0.5 * gap) return;
    out->modes = 2;
    out->mode[0] = lo_med;
    out->mode[1] = hi_med;
    out->mode_share[0] = n0 / (double)n;
    out->mode_share[1] = nn1 / (double)n;
}

void kp_shape_of(const double *v, size_t n, size_t batch, double threshold, double *scratch,
                 kp_shape *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->modes = 1;
    if (n == 0) return;
    size_t block = kp_acf_block(v, n, &out->acf1);
    if (batch > block) block = batch;
    if (n >= 4 && block > n / 4) block = n / 4;
    if (block > n) block = n;
    if (block < 1) block = 1;
    out->block = block;
    out->blocks = n / block;
    if (n >= KP_JUDGE_HALF_MIN_N) {
        size_t h = n / 2;
        for (int k = 0; k < 2; k++) {
            const double *part = v + (size_t)k * h;
            size_t len = k ? n - h : h;
            /* Each half's own correlation: a step between the halves is no correlation
             * within either. */
            double acf1;
            size_t hb = kp_acf_block(part, len, &acf1);
            if (batch > hb) hb = batch;
            memcpy(scratch, part, len * sizeof *scratch);
            kp_sort_doubles(scratch, len);
            kp_block_median_ci(scratch, len, hb, &out->half[k]);
        }
        out->have_halves = 1;
        const kp_estimate *h0 = &out->half[0], *h1 = &out->half[1];
        int apart = h1->lo > h0->hi || h0->lo > h1->hi;
        double change = h0->value > 0 ? h1->value / h0->value - 1 : 0;
        out->drifting = apart && fabs(change) > threshold;
    }
    memcpy(scratch, v, n * sizeof *scratch);
    kp_sort_doubles(scratch, n);
    kp_block_median_ci(scratch, n, block, &out->median);
    out->noise = kp_estimate_noise(&out->median);
    if (n >= 4 && scratch[n / 2] > 0)
        out->spread = (scratch[n - 1 - n / 4] - scratch[n / 4]) / scratch[n / 2];
    kp_modes(scratch, n, threshold, out);
}

unsigned kp_judge_unstable(const kp_shape *s, double busy_cpus, double busy_limit, double threshold)
{
    unsigned r = 0;
    if (s->blocks < KP_JUDGE_MIN_BLOCKS) r |= KP_JUDGE_FEW;
    if (s->drifting) r |= KP_JUDGE_DRIFT;
    if (s->modes == 2 && s->mode_share[0] >= KP_JUDGE_MODE_UNSTABLE &&
        s->mode_share[1] >= KP_JUDGE_MODE_UNSTABLE)
        r |= KP_JUDGE_MODES;
    if (busy_cpus >= busy_limit && busy_limit > 0 && s->noise > threshold) r |= KP_JUDGE_BUSY;
    return r;
}

/* ---- the spread between runs ----------------------------------------------------------------- */

/* The 97.5% quantile of Student's t with df degrees of freedom (df >= 1): a table to 30, then
 * the normal's with the first Cornish-Fisher terms. */
static double kp_t975(double df)
{
    static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                               2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                               2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                               2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) df = 1;
    if (df <= 30) return t[(int)floor(df)];
    double z = 1.959964;
    return z + (z * z * z + z) / (4 * df) +
           (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * df * df);
}

static void kp_log_mean_var(const double *v, size_t n, double *mean, double *var)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m += log(v[i]);
    m /= (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (log(v[i]) - m) * (log(v[i]) - m);
    *mean = m;
    *var = n > 1 ? ss / (double)(n - 1) : 0;
}

static int kp_all_positive(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] > 0) || !isfinite(v[i])) return 0;
    return 1;
}

/* The runs' interval of the ratio: paired sessions' ratios (a t interval of their mean log), or
 * each side's run medians (Welch's). 1 when there is one (*out set), 0 when none. */
static int kp_runs_interval(const kp_judge_side *a, const kp_judge_side *b,
                            const kp_judge_config *cfg, kp_estimate *out, int *runs)
{
    if (cfg->run_ratios && cfg->nrun_ratios >= 2 &&
        kp_all_positive(cfg->run_ratios, cfg->nrun_ratios)) {
        double m, v;
        size_t k = cfg->nrun_ratios;
        kp_log_mean_var(cfg->run_ratios, k, &m, &v);
        double half = kp_t975((double)(k - 1)) * sqrt(v / (double)k);
        *out = (kp_estimate){exp(m), exp(m - half), exp(m + half)};
        *runs = (int)k;
        return 1;
    }
    if (a->runs && b->runs && a->nruns >= 2 && b->nruns >= 2 &&
        kp_all_positive(a->runs, a->nruns) && kp_all_positive(b->runs, b->nruns)) {
        double ma, va, mb, vb;
        kp_log_mean_var(a->runs, a->nruns, &ma, &va);
        kp_log_mean_var(b->runs, b->nruns, &mb, &vb);
        double qa = va / (double)a->nruns, qb = vb / (double)b->nruns, se2 = qa + qb;
        double df = 1;
        if (se2 > 0) {
            double den = qa * qa / (double)(a->nruns - 1) + qb * qb / (double)(b->nruns - 1);
            df = den > 0 ? se2 * se2 / den : (double)(a->nruns + b->nruns - 2);
        }
        double half = kp_t975(df) * sqrt(se2);
        *out = (kp_estimate){exp(mb - ma), exp(mb - ma - half), exp(mb - ma + half)};
        *runs = (int)(a->nruns < b->nruns ? a->nruns : b->nruns);
        return 1;
    }
    return 0;
}

/* ---- the judgement ------------------------------------------------------------------------- */

/* The run allowance for this judgement: the configured one, or the noisier side's spread within
 * its run where that is larger and asked for. */
/* How far a side's median may move (as factors of it) under the drift and modes in `moving`:
 * the hull of its halves' intervals (drift) and of its two modes (modes), over its median.
 * [1, 1] when neither. */
static void kp_judge_moving_range(const kp_shape *s, unsigned moving, double *lo, double *hi)
{
    double m = s->median.value, l = m, h = m;
    if ((moving & KP_JUDGE_DRIFT) && s->have_halves)
        for (int k = 0; k < 2; k++) {
            if (s->half[k].lo < l) l = s->half[k].lo;
            if (s->half[k].hi > h) h = s->half[k].hi;
        }
    if ((moving & KP_JUDGE_MODES) && s->modes == 2) {
        if (s->mode[0] < l) l = s->mode[0];
        if (s->mode[1] > h) h = s->mode[1];
    }
    *lo = m > 0 ? l / m : 0;
    *hi = m > 0 ? h / m : INFINITY;
}

static double kp_judge_allowance(const kp_judgement *j, const kp_judge_config *cfg)
{
    double allowance = cfg->run_allowance > 0 ? cfg->run_allowance : 0;
    if (cfg->spread_allowance) {
        if (j->a.spread > allowance) allowance = j->a.spread;
        if (j->b.spread > allowance) allowance = j->b.spread;
    }
    return allowance;
}

kprof_status kp_judge(const kp_judge_side *a, const kp_judge_side *b, const kp_judge_config *cfg,
                      kp_judgement *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->verdict = out->interval_verdict = KP_COMPARE_UNSURE;
    out->runs = 1;
    double t = cfg->threshold;
    size_t na = a->n, nb = b->n;
    if (cfg->paired) na = nb = a->n < b->n ? a->n : b->n;
    if (na == 0 || nb == 0) {
        out->reasons = KP_JUDGE_INVALID;
        snprintf(out->reason, sizeof out->reason, "a side has no samples");
        return KPROF_OK;
    }
    size_t most = na > nb ? na : nb;
    double *scratch = malloc(2 * (na + nb) * sizeof *scratch);
    if (!scratch) return kp_error_nomem(err);
    double *q = scratch + na + nb;
    kp_shape_of(a->v, na, a->batch, t, scratch, &out->a);
    kp_shape_of(b->v, nb, b->batch, t, scratch, &out->b);
    double ma = out->a.median.value, mb = out->b.median.value;
    if (!(ma > 0) || !(mb > 0)) {
        free(scratch);
        out->reasons = KP_JUDGE_INVALID;
        snprintf(out->reason, sizeof out->reason, "a median is not positive: nothing to compare");
        return KPROF_OK;
    }
    out->effect = mb - ma;
    size_t block_a = out->a.block, block_b = out->b.block;
    double q_lo = 0, q_hi = 0;
    if (cfg->paired) {
        int ok = 1;
        for (size_t i = 0; i < na; i++) {
            if (!(a->v[i] > 0)) {
                ok = 0;
                break;
            }
            q[i] = b->v[i] / a->v[i];
        }
        if (ok) {
            size_t batch = a->batch > b->batch ? a->batch : b->batch;
            q_lo = q_hi = q[0];
            for (size_t i = 1; i < na; i++) {
                if (q[i] < q_lo) q_lo = q[i];
                if (q[i] > q_hi) q_hi = q[i];
            }
            kp_shape_of(q, na, batch, t, scratch, &out->q);
            out->have_q = 1;
            block_a = block_b = out->q.block;
        } else {
            block_a = block_b = block_a > block_b ? block_a : block_b;
        }
    }
    /* Past 25,000 samples a side, fewer resamples (never under 200): the bootstrap's cost grows
     * with the samples. */
    int resamples = cfg->resamples > 0 ? cfg->resamples : KP_JUDGE_RESAMPLES;
    if (most > 25000 && resamples > 200) {
        double scaled = (double)resamples * 25000.0 / (double)most;
        resamples = scaled < 200 ? 200 : (int)scaled;
    }
    kp_error berr = {0};
    kprof_status rc =
        kp_ratio_ci_bootstrap_blocks(a->v, na, block_a, b->v, nb, block_b, cfg->paired, resamples,
                                     0.95, cfg->seed, scratch, &out->sample_ratio, &berr);
    free(scratch);
    if (rc == KPROF_NOMEM) return kp_error_move(err, &berr);
    if (rc != KPROF_OK) { /* the medians were checked above: what the bootstrap refuses */
        kp_error_clear(&berr);
        out->reasons = KP_JUDGE_INVALID;
        snprintf(out->reason, sizeof out->reason, "a median is not positive: nothing to compare");
        return KPROF_OK;
    }
    out->ratio = out->sample_ratio;
    kp_compare_verdict sample_verdict = kp_compare_verdict_of(&out->sample_ratio, t);

    /* Across runs: the spread between them where it is known. */
    kp_estimate runs;
    int nruns = 1;
    int have_runs = kp_runs_interval(a, b, cfg, &runs, &nruns);
    if (have_runs) {
        out->runs = nruns;
        if (runs.lo < out->ratio.lo) out->ratio.lo = runs.lo;
        if (runs.hi > out->ratio.hi) out->ratio.hi = runs.hi;
    }
    /* Too few independent blocks for the bootstrap to know the variation: the interval is the
     * samples' whole range instead (paired: the pairs' ratios'; else B's extremes over A's),
     * which claims only what no sample contradicts. */
    int few = !have_runs && (out->have_q ? out->q.blocks < KP_JUDGE_MIN_BLOCKS
                                         : out->a.blocks < KP_JUDGE_MIN_BLOCKS ||
                                               out->b.blocks < KP_JUDGE_MIN_BLOCKS);
    /* The whole range claims something only with enough blocks of its own: unpaired, all of
     * B's blocks beyond all of A's happens by chance 2 / C(2k, k) of the time (k = 6: 0.2%);
     * paired, all k ratios on one side 2^(1-k) (k = 9: 0.4%). Fewer: no verdict at all. */
    int too_few = few && (out->have_q ? out->q.blocks < KP_JUDGE_RANGE_MIN_PAIRED
                                      : out->a.blocks < KP_JUDGE_RANGE_MIN_BLOCKS ||
                                            out->b.blocks < KP_JUDGE_RANGE_MIN_BLOCKS);
    if (too_few) {
        out->ratio.lo = 0;
        out->ratio.hi = INFINITY;
    }
    if (few && !too_few) {
        double lo, hi;
        if (out->have_q) {
            lo = q_lo, hi = q_hi;
        } else {
            double a_lo = a->v[0], a_hi = a->v[0], b_lo = b->v[0], b_hi = b->v[0];
            for (size_t i = 1; i < na; i++) {
                if (a->v[i] < a_lo) a_lo = a->v[i];
                if (a->v[i] > a_hi) a_hi = a->v[i];
            }
            for (size_t i = 1; i < nb; i++) {
                if (b->v[i] < b_lo) b_lo = b->v[i];
                if (b->v[i] > b_hi) b_hi = b->v[i];
            }
            lo = a_hi > 0 ? b_lo / a_hi : 0;
            hi = a_lo > 0 ? b_hi / a_lo : INFINITY;
        }
        if (lo < out->ratio.lo) out->ratio.lo = lo;
        if (hi > out->ratio.hi) out->ratio.hi = hi;
        out->notes |= KP_JUDGE_NOTE_FEW;
    }
    out->interval_verdict = kp_compare_verdict_of(&out->ratio, t);
    kp_compare_verdict v = out->interval_verdict;
    unsigned r = 0;
    if (v == KP_COMPARE_UNSURE)
        r |= few                                                ? KP_JUDGE_FEW
             : have_runs && sample_verdict != KP_COMPARE_UNSURE ? KP_JUDGE_RUNS
                                                                : KP_JUDGE_STRADDLES;

    /* Each side's samples (paired: the pairs' ratios) must be stable. */
    const kp_shape *shape_q = out->have_q ? &out->q : NULL;
    unsigned ua = kp_judge_unstable(&out->a, cfg->busy_cpus, cfg->busy_limit, t);
    unsigned ub = kp_judge_unstable(&out->b, cfg->busy_cpus, cfg->busy_limit, t);
    unsigned uq = 0;
    if (shape_q) {
        /* Paired, drift and the blocks are the ratio's; modes and noise stay each side's. */
        uq = kp_judge_unstable(shape_q, -1, 0, t) & KP_JUDGE_DRIFT;
        ua &= ~(unsigned)(KP_JUDGE_FEW | KP_JUDGE_DRIFT);
        ub &= ~(unsigned)(KP_JUDGE_FEW | KP_JUDGE_DRIFT);
    }
    /* Few blocks widened the interval above; they are a reason only where it then straddles. */
    ua &= ~(unsigned)KP_JUDGE_FEW;
    ub &= ~(unsigned)KP_JUDGE_FEW;
    /* With several runs a side, the blocks within one run matter less: the runs' spread is the
     * interval. */
    if (have_runs) {
        /* The sessions' shifts are the runs': pooled, they drift, split into blocks too few,
         * or into modes (sessions at two levels), all of which the runs' interval covers. */
        unsigned within = KP_JUDGE_FEW | KP_JUDGE_DRIFT | KP_JUDGE_MODES;
        ua &= ~within;
        ub &= ~within;
        uq &= ~within;
        r &= ~within;
    }
    /* Drift and two modes make a verdict UNSURE only where they could change it: where the
     * interval widened to every median they allow (each side's halves and modes) still gives
     * the verdict, it stands, on that wider interval, and the words say what it was judged
     * through (a kernel 1.5x as long whose run drifted by 10% is still SLOWER). */
    const unsigned moving = KP_JUDGE_DRIFT | KP_JUDGE_MODES;
    if (((ua | ub | uq) & moving) && v != KP_COMPARE_UNSURE) {
        kp_estimate wide = out->ratio;
        double a_lo, a_hi, b_lo, b_hi;
        kp_judge_moving_range(&out->a, ua, &a_lo, &a_hi);
        kp_judge_moving_range(&out->b, ub, &b_lo, &b_hi);
        /* The ratio's ends move as A's median falls or rises and B's rises or falls. */
        wide.lo = isfinite(a_hi) ? wide.lo * b_lo / a_hi : 0;
        wide.hi = a_lo > 0 ? wide.hi * b_hi / a_lo : INFINITY;
        if (shape_q && (uq & KP_JUDGE_DRIFT)) {
            double f_lo, f_hi;
            kp_judge_moving_range(&out->q, KP_JUDGE_DRIFT, &f_lo, &f_hi);
            wide.lo *= f_lo;
            wide.hi *= f_hi;
        }
        if (kp_compare_verdict_of(&wide, t) == v) {
            out->a_through = ua & moving;
            out->b_through = ub & moving;
            out->q_through = uq & moving;
            ua &= ~moving;
            ub &= ~moving;
            uq &= ~moving;
            out->ratio.lo = wide.lo < out->ratio.lo ? wide.lo : out->ratio.lo;
            out->ratio.hi = wide.hi > out->ratio.hi ? wide.hi : out->ratio.hi;
            out->notes |= KP_JUDGE_NOTE_THROUGH;
        }
    }
    r |= ua | ub | uq;
    /* Which side each reason is (the words say it once, from here). */
    out->a_reasons = ua;
    out->b_reasons = ub;
    out->q_reasons = uq;
    if ((out->a.modes == 2 || out->b.modes == 2) && !(r & KP_JUDGE_MODES) && !have_runs)
        out->notes |= KP_JUDGE_NOTE_MODES;
    if (cfg->busy_limit > 0 && cfg->busy_cpus >= cfg->busy_limit && !(r & KP_JUDGE_BUSY))
        out->notes |= KP_JUDGE_NOTE_BUSY;

    if (v == KP_COMPARE_FASTER || v == KP_COMPARE_SLOWER) {
        if (cfg->min_effect > 0 && fabs(out->effect) < cfg->min_effect) r |= KP_JUDGE_SMALL;
        /* Across runs the allowance stands even where each side brings several runs, unless
         * they are paired sessions (bench --repeat of A against B, each session both sides
         * anew): a side's runs taken back to back in one invocation can share one state of the
         * machine for all of them (seen on PoCL: every session of a run 2.8% off the other's),
         * so their spread is no measure of the next invocation's. */
        if (cfg->across_runs && !(have_runs && cfg->run_ratios && cfg->nrun_ratios >= 2)) {
            double edge = t + kp_judge_allowance(out, cfg);
            int clear =
                v == KP_COMPARE_SLOWER ? out->ratio.lo >= 1 + edge : out->ratio.hi <= 1 - edge;
            if (!clear) r |= KP_JUDGE_ONE_RUN;
        }
    }
    if (cfg->across_runs && !have_runs) out->notes |= KP_JUDGE_NOTE_ONE_RUN;
    out->reasons = r;
    out->verdict = r ? KP_COMPARE_UNSURE : v;
    kp_judge_words(out, cfg, "", out->reason, sizeof out->reason);
    return 0;
}

/* ---- words ----------------------------------------------------------------------------------- */

typedef struct kp_words {
    char *buf;
    size_t n, len;
} kp_words;

static void kp_words_add(kp_words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void kp_words_add(kp_words *w, const char *fmt, ...)
{
    if (w->len + 1 >= w->n) return;
    if (w->len) {
        int k = snprintf(w->buf + w->len, w->n - w->len, "; ");
        if (k < 0) return;
        w->len += (size_t)k < w->n - w->len ? (size_t)k : w->n - w->len - 1;
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->buf + w->len, w->n - w->len, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    w->len += (size_t)k < w->n - w->len ? (size_t)k : w->n - w->len - 1;
}

/* A value in the samples' unit: 4 significant digits, then the unit. */
static const char *kp_val(double x, const char *unit, char *buf, size_t n)
{
    snprintf(buf, n, "%.4g%s%s", x, unit && *unit ? " " : "", unit ? unit : "");
    return buf;
}

static void kp_shape_words(kp_words *w, const char *who, const kp_shape *s, unsigned r, double busy,
                           double ncpus, const char *unit)
{
    char x[48], y[48];
    if (r & KP_JUDGE_FEW)
        kp_words_add(w,
                     "%sonly %zu independent blocks of samples (%d needed): they are correlated "
                     "over %zu in a row",
                     who, s->blocks, KP_JUDGE_MIN_BLOCKS, s->block);
    if (r & KP_JUDGE_DRIFT)
        kp_words_add(w, "%sdrifted: the first half's median %s, the second's %s", who,
                     kp_val(s->half[0].value, unit, x, sizeof x),
                     kp_val(s->half[1].value, unit, y, sizeof y));
    if (r & KP_JUDGE_MODES)
        kp_words_add(w,
                     "%stwo modes at %s and %s (%.0f%% in the second): the median depends on "
                     "their mix",
                     who, kp_val(s->mode[0], unit, x, sizeof x),
                     kp_val(s->mode[1], unit, y, sizeof y), 100 * s->mode_share[1]);
    if (r & KP_JUDGE_BUSY) {
        if (ncpus > 0)
            kp_words_add(w,
                         "the machine was busy: %.1f of %.0f CPUs taken by other work (%snoise "
                         "%.2f%%)",
                         busy, ncpus, who, 100 * s->noise);
        else
            kp_words_add(w, "the machine was busy: %.1f CPUs taken by other work (%snoise %.2f%%)",
                         busy, who, 100 * s->noise);
    }
}

const char *kp_judge_shape_words(const kp_shape *s, unsigned reasons, double busy_cpus,
                                 double ncpus, const char *unit, char *buf, size_t n)
{
    kp_words w = {buf, n, 0};
    if (n) buf[0] = '\0';
    kp_shape_words(&w, "", s, reasons, busy_cpus, ncpus, unit);
    return buf;
}

const char *kp_judge_words(const kp_judgement *j, const kp_judge_config *cfg, const char *unit,
                           char *buf, size_t n)
{
    kp_words w = {buf, n, 0};
    if (n) buf[0] = '\0';
    unsigned r = j->reasons;
    double t = cfg->threshold;
    char x[48];
    if (r & KP_JUDGE_INVALID) {
        kp_words_add(&w, "%s", j->reason[0] ? j->reason : "nothing to compare");
        return buf;
    }
    if ((r & KP_JUDGE_FEW) && isinf(j->ratio.hi)) {
        const kp_shape *s = j->have_q ? &j->q : j->a.blocks < j->b.blocks ? &j->a : &j->b;
        kp_words_add(&w,
                     "%sonly %zu independent blocks of samples (they are correlated over %zu in a "
                     "row): too few to judge (%d wanted)",
                     j->have_q    ? "the ratio B/A has "
                     : s == &j->a ? "A has "
                                  : "B has ",
                     s->blocks, s->block, KP_JUDGE_MIN_BLOCKS);
    } else if (r & KP_JUDGE_FEW) {
        const kp_shape *s = j->have_q ? &j->q : j->a.blocks < j->b.blocks ? &j->a : &j->b;
        kp_words_add(&w,
                     "%sonly %zu independent blocks of samples (%d wanted: they are correlated "
                     "over %zu in a row), and the samples' whole range [%.4f, %.4f] straddles an "
                     "edge of the +-%.3g%% band",
                     j->have_q    ? "the ratio B/A has "
                     : s == &j->a ? "A has "
                                  : "B has ",
                     s->blocks, KP_JUDGE_MIN_BLOCKS, s->block, j->ratio.lo, j->ratio.hi, 100 * t);
    }
    if (r & KP_JUDGE_STRADDLES)
        kp_words_add(&w, "the interval [%.4f, %.4f] straddles an edge of the +-%.3g%% band",
                     j->ratio.lo, j->ratio.hi, 100 * t);
    if (r & KP_JUDGE_RUNS)
        kp_words_add(&w, "the spread between the %d runs a side covers the effect: [%.4f, %.4f]",
                     j->runs, j->ratio.lo, j->ratio.hi);
    unsigned ua = j->a_reasons & r, ub = j->b_reasons & r;
    if (j->q_reasons & r) kp_shape_words(&w, "the ratio B/A ", &j->q, j->q_reasons & r, -1, 0, "");
    kp_shape_words(&w, "A: ", &j->a, ua, cfg->busy_cpus, cfg->ncpus, unit);
    /* The busy machine is said once. */
    if (ua & KP_JUDGE_BUSY) ub &= ~(unsigned)KP_JUDGE_BUSY;
    kp_shape_words(&w, "B: ", &j->b, ub, cfg->busy_cpus, cfg->ncpus, unit);
    if (r & KP_JUDGE_SMALL)
        kp_words_add(&w, "the difference, %s, is under the minimum effect of %s",
                     kp_val(fabs(j->effect), unit, x, sizeof x),
                     kp_val(cfg->min_effect, unit, (char[48]){0}, 48));
    if ((r & KP_JUDGE_ONE_RUN) && j->runs <= 1)
        kp_words_add(&w,
                     "one run a side: the run-to-run variation is unknown, and [%.4f, %.4f] is not "
                     "clear of the band by the %.3g%% run allowance%s",
                     j->ratio.lo, j->ratio.hi, 100 * kp_judge_allowance(j, cfg),
                     kp_judge_allowance(j, cfg) > cfg->run_allowance
                         ? " (the instances' own spread within a run)"
                         : " (--repeat R measures it)");
    else if (r & KP_JUDGE_ONE_RUN)
        kp_words_add(
            &w,
            "one invocation a side: its %d runs ran back to back and may share one state of "
            "the machine, and [%.4f, %.4f] is not clear of the band by the %.3g%% run "
            "allowance",
            j->runs, j->ratio.lo, j->ratio.hi, 100 * kp_judge_allowance(j, cfg));
    if (r & KP_JUDGE_CLOCK) kp_words_add(&w, "the time's verdict is not the cycles'");
    if (!r && (j->notes & KP_JUDGE_NOTE_ONE_RUN)) kp_words_add(&w, "rests on one run a side");
    if (j->notes & KP_JUDGE_NOTE_MODES) {
        const kp_shape *s = j->a.modes == 2 ? &j->a : &j->b;
        char y[48];
        kp_words_add(
            &w, "%s: a minority mode at %s (%.0f%%) beside %s", s == &j->a ? "A" : "B",
            kp_val(s->mode[s->mode_share[1] < s->mode_share[0] ? 1 : 0], unit, x, sizeof x),
            100 * (s->mode_share[1] < s->mode_share[0] ? s->mode_share[1] : s->mode_share[0]),
            kp_val(s->mode[s->mode_share[1] < s->mode_share[0] ? 0 : 1], unit, y, sizeof y));
    }
    if (j->notes & KP_JUDGE_NOTE_THROUGH) {
        /* What the verdict was judged through: each side's drift and modes, as the reasons
         * would have said them, then that they could not change it. */
        size_t at = w.len;
        if (j->q_through) kp_shape_words(&w, "the ratio B/A ", &j->q, j->q_through, -1, 0, "");
        kp_shape_words(&w, "A: ", &j->a, j->a_through, -1, 0, unit);
        kp_shape_words(&w, "B: ", &j->b, j->b_through, -1, 0, unit);
        if (w.len > at)
            kp_words_add(&w,
                         "it cannot change the verdict: every median it allows gives it "
                         "(the interval widened to [%.4f, %.4f])",
                         j->ratio.lo, j->ratio.hi);
    }
    if ((j->notes & KP_JUDGE_NOTE_FEW) && !(r & KP_JUDGE_FEW))
        kp_words_add(&w, "few independent blocks: the interval is the samples' whole range");
    if (j->notes & KP_JUDGE_NOTE_BUSY)
        kp_words_add(&w,
                     "the machine was busy (%.1f CPUs taken by other work), the noise within "
                     "the threshold",
                     cfg->busy_cpus);
    return buf;
}

/* ---- the CPU time other processes take ------------------------------------------------------- */

/* The machine's busy and total CPU ticks from /proc/stat: 1 when read, 0 when not (no /proc:
 * the load is then unknown, no failure). */
static int kp_read_proc_stat(uint64_t *busy, uint64_t *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    unsigned long long v[10] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (got < 4) return 0;
    /* user nice system idle iowait irq softirq steal (guest is inside user) */
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *total = *busy + v[3] + v[4];
    return 1;
}

/* utime + stime of a process (and, self, of its children waited for), in seconds; -1 when it
 * cannot be read. */
static double kp_proc_cpu_s(const char *path, int with_children)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = '\0';
    char *p = strrchr(line, ')'); /* the command's name may hold spaces and parentheses */
    if (!p) return -1;
    unsigned long long ut = 0, st = 0, cut = 0, cst = 0;
    /* After ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ut, &st,
               &cut, &cst) < 2)
        return -1;
    double hz = (double)sysconf(_SC_CLK_TCK);
    if (!(hz > 0)) hz = 100;
    return (double)(ut + st + (with_children ? cut + cst : 0)) / hz;
}

static double kp_own_cpu_s(const int *pids, int npids)
{
    double s = kp_proc_cpu_s("/proc/self/stat", 1);
    if (s < 0) return -1;
    for (int i = 0; i < npids; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
        double c = kp_proc_cpu_s(path, 1);
        if (c > 0) s += c;
    }
    return s;
}

static uint64_t kp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kp_cpuload_begin(kp_cpuload *l, const int *pids, int npids)
{
    memset(l, 0, sizeof *l);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    l->ncpus = cpus > 0 ? (double)cpus : 1;
    l->own0 = kp_own_cpu_s(pids, npids);
    l->t0_ns = kp_mono_ns();
    l->ok = l->own0 >= 0 && kp_read_proc_stat(&l->busy0, &l->total0);
}

double kp_cpuload_end(const kp_cpuload *l, const int *pids, int npids)
{
    if (!l->ok) return -1;
    uint64_t busy, total;
    double own = kp_own_cpu_s(pids, npids);
    if (own < 0 || !kp_read_proc_stat(&busy, &total)) return -1;
    double secs = (double)(kp_mono_ns() - l->t0_ns) / 1e9;
    if (secs < 0.05 || busy < l->busy0) return -1; /* too short for the kernel's ticks */
    double hz = (double)sysconf(_SC_CLK_TCK);
    if (!(hz > 0)) hz = 100;
    double others = ((double)(busy - l->busy0) / hz - (own - l->own0)) / secs;
    if (others < 0) others = 0;
    if (others > l->ncpus) others = l->ncpus;
    return others;
}
