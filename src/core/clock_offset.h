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

/*
 * A device's clock mapped onto this host's CLOCK_MONOTONIC, from the operations of one queue:
 * how `kprof trace`'s OpenCL layer (inject/opencl_ops.c) and the lab's OpenCL backend put
 * CL_PROFILING_COMMAND_* stamps on the host clock. The offset (host ns − device ns, modulo 2^64)
 * is set by the first operation observed: the host time its enqueue call began minus its QUEUED
 * stamp (START when QUEUED is not available), so QUEUED lines up with the enqueue. The device
 * stamps QUEUED somewhere inside the call, and a queue's first enqueue is often slow, so every
 * later operation moves the offset by the least amount that keeps its own QUEUED inside its own
 * enqueue call: later (when QUEUED would fall before the call began) or earlier (after it
 * returned). Starting from the earliest admissible value the offset in practice only grows, by a
 * few microseconds in all, which cannot reorder the operations of an in-order queue.
 *
 * Header only: the injected collector shares it without linking core.
 */
typedef struct kp_device_clock {
    int have;        /* an operation was observed: offset is set */
    uint64_t offset; /* host ns − device ns, modulo 2^64 */
} kp_device_clock;

/* Observe one operation: host_enqueue and host_return are CLOCK_MONOTONIC when its enqueue call
 * began and returned; queued and start its device stamps (queued 0: not available). */
static inline void kp_device_clock_observe(kp_device_clock *c, uint64_t host_enqueue,
                                           uint64_t host_return, uint64_t queued, uint64_t start)
{
    uint64_t anchor = queued ? queued : start;
    /* Offsets are compared through signed differences (they wrap). */
    uint64_t earliest = host_enqueue - anchor;
    if (!c->have || (int64_t)(c->offset - earliest) < 0)
        c->offset = earliest;
    else if (queued && (int64_t)(c->offset - (host_return - queued)) > 0)
        c->offset = host_return - queued; /* QUEUED would fall after the call returned */
    c->have = 1;
}

/* A device stamp on the host clock (0 stays 0: a stamp not available). */
static inline uint64_t kp_device_clock_map(const kp_device_clock *c, uint64_t device_ns)
{
    return device_ns ? device_ns + c->offset : 0;
}

#endif
