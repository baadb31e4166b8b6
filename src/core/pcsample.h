/*
 * pcsample.h — the samples of a kernel's program counters, as a backend's PC sampling gives
 * them (kp_backend_ops.pc_sample, issue 16's `kprof run --source`): per sampled PC, where it is
 * (function, offset, and the source file and line its line info names) and how many samples
 * found a warp there, per stall reason. A plain record, so that the lab can aggregate it
 * (lab/hotspots.h) and tests can build one without a GPU.
 *
 * Stall reasons keep the vendor's names (CUPTI's "smsp__pcsamp_warps_issue_stalled_long_
 * scoreboard", "..._not_issued"): what a reason means is the aggregation's business, not the
 * backend's. The set owns everything in it; kp_pc_samples_free releases it.
 */
#ifndef KP_CORE_PCSAMPLE_H
#define KP_CORE_PCSAMPLE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* One sampled PC. */
typedef struct kp_pc_sample {
    char *function;     /* the function's symbol, as the sampler names it */
    uint64_t pc_offset; /* bytes from the function's start */
    char *file;         /* source file the line info names ("/k/hot.cu"); NULL: unknown */
    uint32_t line;      /* 1-based; 0 when unknown */
    uint64_t *stalls;   /* samples per stall reason: kp_pc_samples.nreasons of them */
} kp_pc_sample;

/* Every PC sampled over some dispatches of one kernel. Zero-initialise. */
typedef struct kp_pc_samples {
    kp_pc_sample *pcs; /* n of them, in the order they were first seen */
    size_t n;
    char **reasons; /* the stall reasons' names, nreasons; stalls[] follow this order */
    size_t nreasons;
    uint64_t total_samples;   /* the sampler's own count over the sampled dispatches: every
                                 sample, at any PC, dropped ones included */
    uint64_t dropped_samples; /* of them, lost by the hardware (its buffer was full) */
    int dispatches;           /* how many dispatches were sampled */
    char note[320];           /* "" or a fact the reader needs ("no line info: ...") */
    /* private: the PC index (kp_pc_samples_at) */
    size_t cap;
    size_t *slots;
    size_t nslots;
} kp_pc_samples;

/* Name the stall reasons (copied) before the first kp_pc_samples_at. KPROF_OK, or KPROF_NOMEM
 * (err filled; the reasons are then as they were). */
kprof_status kp_pc_samples_set_reasons(kp_pc_samples *s, const char *const *names, size_t n,
                                       kp_error *err);

/* The PC (function, pc_offset), added with no samples, no file and line 0 when new. NULL when
 * out of memory. Pointers into s->pcs last until the next call. */
kp_pc_sample *kp_pc_samples_at(kp_pc_samples *s, const char *function, uint64_t pc_offset);

/* Release everything the set holds and zero it; harmless on a zeroed set. */
void kp_pc_samples_free(kp_pc_samples *s);

#endif
