/*
 * clock_offset.h — one host's CLOCK_REALTIME − CLOCK_MONOTONIC offset estimated from the clock
 * pairs (base/job.h) its processes recorded, and the shift that puts one host's times on
 * another's: what `kprof merge` (store/trace_merge.h) uses to put every host of a job on one time
 * base. Pure: no SQL, no I/O.
 */
#ifndef KP_CORE_CLOCK_OFFSET_H
#define KP_CORE_CLOCK_OFFSET_H

#include "base/job.h"

#include <stddef.h>
#include <stdint.h>

/* One host's CLOCK_REALTIME − CLOCK_MONOTONIC from its clock pairs. Each pair i gives
 * d_i = real_ns − mono_ns, read within u_i = uncertainty_ns. The offset is the middle of the
 * range of the d_i, so every pair lies within half the range of it; the uncertainty is the
 * largest u_i plus that half range (a clock slewed by NTP, or stepped, during the run shows as a
 * range). */
typedef struct kp_clock_offset {
    int64_t offset_ns;      /* REALTIME − MONOTONIC */
    int64_t uncertainty_ns; /* max u_i + (max d_i − min d_i) / 2, rounded up */
    int64_t spread_ns;      /* max d_i − min d_i */
    size_t pairs;           /* the pairs used */
} kp_clock_offset;

/* Estimate from n pairs. Pairs that cannot be one are left out: real_ns ≤ 0 (not read), a
 * negative uncertainty, a difference or range beyond the int64 range (saturating instead of
 * wrapping). 1 and *out filled, or 0 (out->pairs 0, the rest 0) when no pair is usable (no
 * failure: that host's offset is unknown). */
int kp_clock_offset_estimate(const kp_clock_pair *pairs, size_t n, kp_clock_offset *out);

/* The shift that puts a host's times on the reference host's: host.offset − reference.offset
 * (saturating), known within host.uncertainty + reference.uncertainty (*uncertainty_ns). */
int64_t kp_clock_offset_shift(const kp_clock_offset *host, const kp_clock_offset *reference,
                              int64_t *uncertainty_ns);

#endif
