/*
 * compare.c — kprof_compare: the public face of the comparison engine (core/judge.h), so that a
 * program (and the Python package) judges its own samples as kprof bench and kprof diff do.
 */
#include "core/judge.h"
#include "libkprof/libkprof_internal.h"

#include <math.h>
#include <string.h>

#define KP_FN "kprof_compare"

/* The header's bits are the engine's. */
_Static_assert(KPROF_UNSURE_STRADDLES == KP_JUDGE_STRADDLES && KPROF_UNSURE_FEW == KP_JUDGE_FEW &&
                   KPROF_UNSURE_DRIFT == KP_JUDGE_DRIFT && KPROF_UNSURE_MODES == KP_JUDGE_MODES &&
                   KPROF_UNSURE_BUSY == KP_JUDGE_BUSY && KPROF_UNSURE_SMALL == KP_JUDGE_SMALL &&
                   KPROF_UNSURE_ONE_RUN == KP_JUDGE_ONE_RUN && KPROF_UNSURE_RUNS == KP_JUDGE_RUNS &&
                   KPROF_UNSURE_CLOCK == KP_JUDGE_CLOCK && KPROF_UNSURE_INVALID == KP_JUDGE_INVALID,
               "kprof.h's KPROF_UNSURE_* are core/judge.h's KP_JUDGE_*");

kprof_status kprof_compare(const double *a, size_t na, const double *b, size_t nb,
                           const kprof_compare_options *options, kprof_comparison *result)
{
    kprof_compare_options o = KPROF_COMPARE_OPTIONS_INIT;
    if (options) {
        if (options->size < sizeof(unsigned) || options->size > sizeof o)
            return kp_libkprof_fail(KP_FN, KPROF_INVALID,
                                    "options.size is not sizeof(kprof_compare_options)");
        memcpy(&o, options, options->size);
    }
    if (!a || !b || !result)
        return kp_libkprof_fail(KP_FN, KPROF_INVALID, "a, b and out are required");
    if (result->size == 0)
        return kp_libkprof_fail(KP_FN, KPROF_INVALID, "out->size is 0 (use KPROF_COMPARISON_INIT)");
    if (na == 0 || nb == 0) return kp_libkprof_fail(KP_FN, KPROF_INVALID, "a side has no samples");
    if (o.paired && na != nb)
        return kp_libkprof_fail(KP_FN, KPROF_INVALID, "paired sides of different sizes");
    if (!(o.threshold >= 0 && o.threshold < 10) || !(o.min_effect >= 0) || isnan(o.busy_cpus))
        return kp_libkprof_fail(KP_FN, KPROF_INVALID, "a bad threshold, min_effect or busy_cpus");
    for (size_t i = 0; i < na; i++)
        if (isnan(a[i])) return kp_libkprof_fail(KP_FN, KPROF_INVALID, "a sample of a is NaN");
    for (size_t i = 0; i < nb; i++)
        if (isnan(b[i])) return kp_libkprof_fail(KP_FN, KPROF_INVALID, "a sample of b is NaN");
    kp_judge_config c;
    kp_judge_config_default(&c);
    c.threshold = o.threshold;
    c.paired = o.paired != 0;
    c.across_runs = o.across_runs != 0;
    c.min_effect = o.min_effect;
    c.busy_cpus = o.busy_cpus;
    kp_judge_side sa = {.v = a, .n = na, .batch = o.batch},
                  sb = {.v = b, .n = nb, .batch = o.batch};
    kp_judgement j;
    kp_error err = {0};
    if (kp_judge(&sa, &sb, &c, &j, &err) != KPROF_OK) return kp_libkprof_fail_err(KP_FN, &err);
    kprof_comparison full = {.size = sizeof full}, *out = &full;
    switch (j.verdict) {
    case KP_COMPARE_SAME:
        out->verdict = KPROF_VERDICT_SAME;
        break;
    case KP_COMPARE_FASTER:
        out->verdict = KPROF_VERDICT_FASTER;
        break;
    case KP_COMPARE_SLOWER:
        out->verdict = KPROF_VERDICT_SLOWER;
        break;
    default:
        out->verdict = KPROF_VERDICT_UNSURE;
        break;
    }
    out->ratio = j.ratio.value;
    out->lo = j.ratio.lo;
    out->hi = j.ratio.hi;
    out->reasons = j.reasons & ~(unsigned)KP_JUDGE_CLOCK; /* no clocks here */
    memcpy(out->reason, j.reason, sizeof out->reason);
    kp_sized_copy(result, &full, sizeof full);
    return KPROF_OK;
}
