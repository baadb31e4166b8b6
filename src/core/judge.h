/*
 * judge.h — kprof's comparison engine: is B faster than A, slower, the same — or can the data
 * not say, and why not? `kprof bench` (A/B, --compare, --repeat), `kprof diff` (of traces, of
 * bench results, of history runs) and libkprof ask this one place; nothing else turns samples
 * into FASTER, SLOWER or SAME.
 *
 * A verdict is a claim with an error rate, so it is given only when the data supports it:
 *   - the interval of the ratio of medians B/A covers the variation the samples show: a block
 *     bootstrap (core/compare.h) whose blocks are at least the batches the samples came in and
 *     as long as the samples' autocorrelation reaches (kp_shape_of: the first lag 2^k at which
 *     the autocorrelation falls to max(0.1, 2/sqrt(n))). With fewer than KP_JUDGE_MIN_BLOCKS
 *     blocks a side the bootstrap cannot know the variation: the interval is then the samples'
 *     whole range (paired: of the pairs' ratios; else [min B / max A, max B / min A]), and a
 *     verdict only what no sample contradicts (UNSURE, FEW, where that range straddles); with
 *     fewer than KP_JUDGE_RANGE_MIN_BLOCKS blocks a side (KP_JUDGE_RANGE_MIN_PAIRED paired) even
 *     the range could lie by chance: UNSURE (FEW), the interval unbounded;
 *   - a run whose halves disagree (their medians' block-aware 95% intervals apart, and by more
 *     than the threshold) drifted: UNSURE (DRIFT). Paired, the drift of the pairs' ratios is
 *     what counts (drift common to both sides cancels in a pair);
 *   - samples with two modes whose mix decides where the median falls (the smaller mode holds
 *     KP_JUDGE_MODE_UNSTABLE of the samples or more): UNSURE (MODES), "two modes at 0.37 and
 *     0.52 ms". A clear minority mode is noted and judged through;
 *   - a busy machine (a device whose kernels run on the host's CPUs, other processes taking
 *     busy_limit CPUs or more) whose noise is past the threshold: UNSURE (BUSY);
 *   - an effect under the minimum absolute effect (min_effect, in the samples' unit): UNSURE
 *     (SMALL), whatever the ratio;
 *   - across runs (each side measured in a run of its own: --compare, diff): the interval sees
 *     one run's variation only. With the medians of several independent runs a side (--repeat),
 *     the interval widens to the spread between them (a t interval of the mean log ratio, the
 *     hull with the samples' own; the few blocks or the drift of samples pooled from several
 *     sessions are then the runs' spread, which that interval covers). FASTER and SLOWER across
 *     runs need the interval clear of the SAME band by the run allowance as well (else UNSURE,
 *     ONE_RUN) — with one run a side, and with several a side too, since a side's runs taken
 *     back to back in one invocation can share one state of the machine; only paired sessions
 *     (run_ratios: each session both sides anew) are judged by their spread alone. A verdict
 *     on one run a side says it rests on one run a side.
 * Drift and modes make UNSURE only where they could change the verdict: the interval widened by
 * every median they allow (a side's ends moved by the hull of its halves' intervals and of its
 * two modes, relative to its median; paired, the ratio's halves too) still giving the verdict,
 * the verdict stands on that wider interval (KP_JUDGE_NOTE_THROUGH, a_through...: "judged
 * through A's drift"). A kernel 1.5x as long is SLOWER even if a run drifted by 10%.
 * The interval alone decides as kp_compare_verdict_of does (the band [1 - t, 1 + t], closed);
 * each rule above can only turn a verdict into UNSURE, never make one.
 *
 * Shapes (kp_shape_of), one side's samples, in the order taken:
 *   block       max(batch, first lag 2^k with |acf(2^k)| <= max(0.1, 2/sqrt(n))), at most n/4
 *               (n >= 4) and never more than n;
 *   median ci   the distribution-free interval of compare.h at the effective size m = n/block:
 *               its lower rank's level (j-1)/m applied to the whole sorted sample, the upper
 *               end the same distance from the top (sorted[lo], sorted[n-1-lo]);
 *   halves      the medians of the first and second n/2 samples, with the same intervals;
 *   modes       Otsu's split of the sorted sample (the largest between-group variance) is two
 *               modes when each group holds at least 5% of the samples, Ashman's D =
 *               sqrt(2)|m1 - m0| / sqrt(s0^2 + s1^2) >= 3 and the groups' medians differ by at
 *               least max(2 t, 2%) of the whole median.
 *
 * Nothing here prints. kp_judge allocates scratch (freed before it returns); reentrant.
 */
#ifndef KP_CORE_JUDGE_H
#define KP_CORE_JUDGE_H

#include "core/compare.h"

#include <stddef.h>
#include <stdint.h>

#define KP_JUDGE_MIN_BLOCKS       10   /* independent blocks a side, for the bootstrap */
#define KP_JUDGE_RANGE_MIN_BLOCKS 6    /* fewer (unpaired): the samples' range, from this many */
#define KP_JUDGE_RANGE_MIN_PAIRED 9    /* the same for the pairs' ratios */
#define KP_JUDGE_MODE_UNSTABLE    0.30 /* a second mode this large makes the median unstable */
#define KP_JUDGE_BUSY_LIMIT       0.25 /* CPUs other work may take before the machine is busy */
#define KP_JUDGE_RUN_ALLOWANCE    0.03 /* one run a side: clear the band by this much more */
#define KP_JUDGE_RESAMPLES        2000
#define KP_JUDGE_SEED             0x6b70726f66ULL /* "kprof": one answer per input */

/* Why a verdict is UNSURE (bits), and the notes a verdict given still carries. */
#define KP_JUDGE_REASON_LIST(X)                                                                    \
    X(STRADDLES, 1u << 0, "straddles") /* the interval straddles an edge of the SAME band */       \
    X(FEW, 1u << 1, "few")             /* few blocks, and the samples' range straddles */          \
    X(DRIFT, 1u << 2, "drift")         /* a side (paired: the ratio) drifted between halves */     \
    X(MODES, 1u << 3, "modes")         /* two modes whose mix moves the median */                  \
    X(BUSY, 1u << 4, "busy")           /* the host was busy and the noise is past the threshold */ \
    X(SMALL, 1u << 5, "small")         /* the effect is under the minimum absolute effect */       \
    X(ONE_RUN, 1u << 6, "one_run")     /* across runs, not clear of the band by the allowance */   \
    X(RUNS, 1u << 7, "runs")           /* the spread between runs covers the effect */             \
    X(CLOCK, 1u << 8, "clock")         /* time and cycles disagree (set by bench) */               \
    X(INVALID, 1u << 9, "invalid")     /* no positive median, or a side empty */

enum {
#define KP_JUDGE_REASON_ENUM(name, bit, text) KP_JUDGE_##name = bit,
    KP_JUDGE_REASON_LIST(KP_JUDGE_REASON_ENUM)
#undef KP_JUDGE_REASON_ENUM
};

/* Notes on a verdict that was given (not reasons for UNSURE). */
#define KP_JUDGE_NOTE_ONE_RUN (1u << 0) /* across runs, one run a side */
#define KP_JUDGE_NOTE_MODES   (1u << 1) /* a side has a clear minority mode */
#define KP_JUDGE_NOTE_BUSY    (1u << 2) /* the host was busy, the noise within the threshold */
#define KP_JUDGE_NOTE_FEW     (1u << 3) /* few blocks: the interval is the samples' range */
#define KP_JUDGE_NOTE_THROUGH (1u << 4) /* drift or modes judged through (a_through...) */

/* What one side's samples show about themselves. */
typedef struct kp_shape {
    size_t n;
    size_t block;        /* samples per independent block */
    size_t blocks;       /* n / block */
    double acf1;         /* lag-1 autocorrelation (0 for n < 3) */
    kp_estimate median;  /* the median, block-aware 95% interval */
    double noise;        /* kp_estimate_noise(&median) */
    kp_estimate half[2]; /* the first and the second half's medians (n >= 2 * 5) */
    int have_halves;
    int drifting;         /* the halves' intervals apart by more than the threshold */
    int modes;            /* 1, or 2 */
    double mode[2];       /* the two groups' medians, low first (modes == 2) */
    double mode_share[2]; /* their shares of the samples */
    double spread;        /* the interquartile range relative to the median (0 for n < 4) */
} kp_shape;

/* The shape of v[0..n) (n >= 1, in the order taken, no NaN), taken in batches of `batch`
 * (0 or 1: one at a time), drift and modes judged against threshold t. scratch holds n
 * doubles. No allocation. */
void kp_shape_of(const double *v, size_t n, size_t batch, double threshold, double *scratch,
                 kp_shape *out);

/* One side of a comparison. */
typedef struct kp_judge_side {
    const double *v; /* samples in the order taken (ms, ns, cycles: one unit for both) */
    size_t n;
    size_t batch;       /* they came in batches of about this many (0/1: one at a time) */
    const double *runs; /* the medians of independent runs of this side (--repeat), or NULL */
    size_t nruns;
} kp_judge_side;

typedef struct kp_judge_config {
    double threshold;  /* the SAME band: +-threshold (0.01) */
    double min_effect; /* |median(B) - median(A)| below this is too small to judge; 0: none */
    int paired;        /* a.v[i] and b.v[i] were taken back to back (then a.n == b.n is used:
                          the first min(n) of each) */
    int across_runs;   /* the sides come from separate runs (--compare, diff) */
    /* Paired sessions repeated (bench --repeat): each session's ratio B/A; NULL when none. */
    const double *run_ratios;
    size_t nrun_ratios;
    double busy_cpus;     /* CPUs other processes took during the measurement; < 0: unknown */
    double ncpus;         /* the host's CPUs (for the words) */
    double busy_limit;    /* busy from this many (KP_JUDGE_BUSY_LIMIT) */
    double run_allowance; /* KP_JUDGE_RUN_ALLOWANCE */
    /* Across runs of whole programs (kprof diff of traces): the allowance is at least the
     * noisier side's spread within its run (kp_shape.spread) — a kernel whose instances spread
     * by X inside one run is seen to move by as much between runs (a cuDNN kernel of a PyTorch
     * script, 0.78x to 1.29x between unchanged runs on the H200, spread 20-30% inside each). */
    int spread_allowance;
    int resamples; /* KP_JUDGE_RESAMPLES */
    uint64_t seed; /* KP_JUDGE_SEED */
} kp_judge_config;

/* The defaults above: threshold 0.01, unpaired, one run, busy unknown. */
void kp_judge_config_default(kp_judge_config *c);

typedef struct kp_judgement {
    kp_compare_verdict verdict;               /* the answer */
    kp_compare_verdict interval_verdict;      /* what the interval alone says */
    kp_estimate ratio;                        /* median(B) / median(A), its 95% interval (widened
                                                 to the runs' spread where there is one) */
    kp_estimate sample_ratio;                 /* the samples' own interval, before any widening */
    unsigned reasons;                         /* KP_JUDGE_* bits: why it is UNSURE (0 when not) */
    unsigned a_reasons, b_reasons, q_reasons; /* of them, A's, B's and the pairs' ratio's
                                                 shape's (drift, modes, busy) */
    unsigned a_through, b_through, q_through; /* drift and modes that could not change the
                                                 verdict (KP_JUDGE_NOTE_THROUGH) */
    unsigned notes;                           /* KP_JUDGE_NOTE_* bits */
    int runs;                                 /* runs a side the interval rests on (1: one) */
    double effect;                            /* median(B) - median(A), the samples' unit */
    kp_shape a, b;                            /* each side's shape */
    kp_shape q;                               /* paired: the shape of the ratios b[i]/a[i] */
    int have_q;
    char reason[400]; /* the reasons and notes in words ("" when none) */
} kp_judgement;

/* Judge B against A. Returns KPROF_OK (the answer in *out, UNSURE with KP_JUDGE_INVALID where a
 * side is empty or a median is not positive); KPROF_NOMEM (err filled; *out then says nothing). */
kprof_status kp_judge(const kp_judge_side *a, const kp_judge_side *b, const kp_judge_config *cfg,
                      kp_judgement *out, kp_error *err);

/* Is one side's run stable enough for a noise-based stop or a reported median: enough blocks,
 * no drift, no unstable modes, not busy past the threshold? The reasons (KP_JUDGE_* bits) it is
 * not; 0 when stable. */
unsigned kp_judge_unstable(const kp_shape *s, double busy_cpus, double busy_limit,
                           double threshold);

/* The reasons and notes in words, "; "-separated, into buf (e.g. "two modes at 0.37 and 0.52
 * ms (41% in the second)"; "the machine was busy: 1.9 of 2 CPUs taken by other work"). unit is
 * the samples' unit as printed ("ms"). Returns buf. */
const char *kp_judge_words(const kp_judgement *j, const kp_judge_config *cfg, const char *unit,
                           char *buf, size_t n);

/* A side's instability in words (kp_judge_unstable's reasons), as kp_judge_words. */
const char *kp_judge_shape_words(const kp_shape *s, unsigned reasons, double busy_cpus,
                                 double ncpus, const char *unit, char *buf, size_t n);

/* "straddles", "few", ... for one bit; "?" for none or several. */
const char *kp_judge_reason_name(unsigned bit);

/* The CPUs other processes take while we measure: read /proc/stat and our own process tree's CPU
 * time at begin and at end. pids: processes of ours besides this one whose CPU time is ours (the
 * lab's child); their time is read at end (a process gone by then counts as other work: say it
 * with a pid that lives). */
typedef struct kp_cpuload {
    int ok;                 /* /proc could be read */
    double ncpus;           /* CPUs online */
    uint64_t busy0, total0; /* /proc/stat's jiffies at begin */
    double own0;            /* our CPU seconds at begin */
    uint64_t t0_ns;
} kp_cpuload;

void kp_cpuload_begin(kp_cpuload *l, const int *pids, int npids);
/* The CPUs taken by other processes on average since begin (>= 0); -1 when unknown. */
double kp_cpuload_end(const kp_cpuload *l, const int *pids, int npids);

#endif
