/*
 * verdict.h — is the kernel even the problem? The submission-economics verdict of a traced
 * program, from its timeline's numbers (the analysis), and the sentence that follows from them
 * (the prose), kept apart as in readings.h.
 */
#ifndef KP_CORE_VERDICT_H
#define KP_CORE_VERDICT_H

#include <stdint.h>

typedef struct kp_verdict_input {
    double wall_s;          /* the traced command, start to end */
    double gpu_busy_s;      /* union of kernel, copy and fill intervals */
    double kernel_busy_s;   /* union of kernel intervals */
    double host_sync_s;     /* host time in synchronizing calls */
    uint64_t kernels;       /* dispatches */
    uint64_t small_kernels; /* dispatches under 0.05 ms */
    uint64_t gaps;          /* idle gaps between device intervals */
    double longest_gap_s;
} kp_verdict_input;

typedef enum kp_verdict_kind {
    KP_VERDICT_NO_DEVICE,
    KP_VERDICT_LAUNCH_BOUND,
    KP_VERDICT_SYNC_BOUND,
    KP_VERDICT_HOST_BOUND,
    KP_VERDICT_KERNELS_MINOR,
    KP_VERDICT_DEVICE_BOUND,
    KP_VERDICT_MIXED
} kp_verdict_kind;

typedef struct kp_verdict {
    kp_verdict_kind kind;
    double busy_fraction;    /* GPU busy / wall */
    double idle_fraction;    /* 1 - busy (not below 0) */
    double kernel_fraction;  /* kernel busy / wall */
    double sync_fraction;    /* host sync / wall */
    double launches_per_s;
    double small_fraction;   /* dispatches under 0.05 ms / dispatches */
    char sentence[512];
} kp_verdict;

void kp_verdict_compute(const kp_verdict_input *in, kp_verdict *out);
const char *kp_verdict_name(kp_verdict_kind kind); /* "launch-bound" ... */

#endif
