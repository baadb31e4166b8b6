/*
 * verdict.c — the submission-economics verdict (see verdict.h). Thresholds follow the seeds:
 * dispatches under 0.05 ms are submission-dominated; kernels under 15% of the wall cannot move
 * the headline; a GPU idle half the wall is not kernel-bound.
 */
#include "core/verdict.h"

#include <stdio.h>
#include <string.h>

const char *kp_verdict_name(kp_verdict_kind kind)
{
    switch (kind) {
    case KP_VERDICT_NO_DEVICE: return "no-device-activity";
    case KP_VERDICT_LAUNCH_BOUND: return "launch-bound";
    case KP_VERDICT_SYNC_BOUND: return "sync-bound";
    case KP_VERDICT_HOST_BOUND: return "host-bound";
    case KP_VERDICT_KERNELS_MINOR: return "kernels-minor";
    case KP_VERDICT_DEVICE_BOUND: return "device-bound";
    default: return "mixed";
    }
}

void kp_verdict_compute(const kp_verdict_input *in, kp_verdict *v)
{
    memset(v, 0, sizeof *v);
    double wall = in->wall_s > 0 ? in->wall_s : 1e-9;
    v->busy_fraction = in->gpu_busy_s / wall;
    v->idle_fraction = v->busy_fraction < 1 ? 1 - v->busy_fraction : 0;
    v->kernel_fraction = in->kernel_busy_s / wall;
    v->sync_fraction = in->host_sync_s / wall;
    v->launches_per_s = (double)in->kernels / wall;
    v->small_fraction = in->kernels ? (double)in->small_kernels / (double)in->kernels : 0;
    double idle = 100 * v->idle_fraction, busy = 100 * v->busy_fraction;
    if (in->gpu_busy_s <= 0) {
        v->kind = KP_VERDICT_NO_DEVICE;
        snprintf(v->sentence, sizeof v->sentence,
                 "No GPU activity was captured: nothing here is a kernel's cost.");
    } else if (v->idle_fraction >= 0.5 && v->small_fraction >= 0.5 && in->kernels >= 100) {
        v->kind = KP_VERDICT_LAUNCH_BOUND;
        snprintf(v->sentence, sizeof v->sentence,
                 "GPU idle %.0f%% of the wall with %.0f launches/s, %.0f%% of them under 0.05 ms: "
                 "launch-bound; kernel tuning cannot move the headline. Fewer, larger launches "
                 "(fusion, CUDA graphs) and fewer waits come first.",
                 idle, v->launches_per_s, 100 * v->small_fraction);
    } else if (v->idle_fraction >= 0.5 && v->sync_fraction >= 0.3) {
        v->kind = KP_VERDICT_SYNC_BOUND;
        snprintf(v->sentence, sizeof v->sentence,
                 "GPU idle %.0f%% of the wall while the host waits on it %.0f%% of the wall: "
                 "synchronization-bound; remove waits and overlap host work before tuning "
                 "kernels.",
                 idle, 100 * v->sync_fraction);
    } else if (v->idle_fraction >= 0.5) {
        v->kind = KP_VERDICT_HOST_BOUND;
        snprintf(v->sentence, sizeof v->sentence,
                 "GPU idle %.0f%% of the wall: host-bound; kernel tuning cannot move the "
                 "headline. Find what the host does between launches.",
                 idle);
    } else if (v->kernel_fraction < 0.15) {
        v->kind = KP_VERDICT_KERNELS_MINOR;
        snprintf(v->sentence, sizeof v->sentence,
                 "Kernels take %.0f%% of the wall (GPU busy %.0f%%, the rest copies and fills): "
                 "kernel tuning cannot move the headline; attack the transfers first.",
                 100 * v->kernel_fraction, busy);
    } else if (v->busy_fraction >= 0.8) {
        v->kind = KP_VERDICT_DEVICE_BOUND;
        snprintf(v->sentence, sizeof v->sentence,
                 "GPU busy %.0f%% of the wall: device-bound; the top of the device table is the "
                 "headline.",
                 busy);
    } else {
        v->kind = KP_VERDICT_MIXED;
        snprintf(v->sentence, sizeof v->sentence,
                 "GPU busy %.0f%% of the wall: mixed; the device table and the %llu gaps between "
                 "device work (the longest %.3g s) both matter.",
                 busy, (unsigned long long)in->gaps, in->longest_gap_s);
    }
}
