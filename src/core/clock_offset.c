/*
 * clock_offset.c — the clock offset estimate and the shift between two hosts (see
 * clock_offset.h).
 */
#include "core/clock_offset.h"
#include "base/util.h"

#include <stdint.h>
#include <string.h>

int kp_clock_offset_estimate(const kp_clock_pair *pairs, size_t n, kp_clock_offset *out)
{
    memset(out, 0, sizeof *out);
    int64_t lo = 0, hi = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_clock_pair *p = &pairs[i];
        if (p->real_ns <= 0 || p->uncertainty_ns < 0) continue;
        int64_t d = kp_ns_diff(p->real_ns, p->mono_ns);
        if (d == INT64_MAX || d == INT64_MIN) continue; /* saturated: not a difference */
        if (out->pairs == 0 || d < lo) lo = d;
        if (out->pairs == 0 || d > hi) hi = d;
        if (p->uncertainty_ns > worst) worst = p->uncertainty_ns;
        out->pairs++;
    }
    if (out->pairs == 0) return 0;
    int64_t range = kp_ns_diff(hi, lo); /* >= 0; saturates for a range beyond int64 */
    out->spread_ns = range;
    out->offset_ns = lo + range / 2;
    out->uncertainty_ns = kp_i64_add_sat(worst, range / 2 + range % 2);
    return 1;
}

int64_t kp_clock_offset_shift(const kp_clock_offset *host, const kp_clock_offset *reference,
                              int64_t *uncertainty_ns)
{
    if (uncertainty_ns)
        *uncertainty_ns = kp_i64_add_sat(host->uncertainty_ns, reference->uncertainty_ns);
    return kp_ns_diff(host->offset_ns, reference->offset_ns);
}
