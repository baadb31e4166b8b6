/* test_verdict.c — the submission-economics verdict from a timeline's numbers. */
#include "core/verdict.h"
#include "test.h"

int main(void)
{
    kp_verdict v;
    kp_verdict_input none = {.wall_s = 1};
    kp_verdict_compute(&none, &v);
    CHECK_INT(v.kind, KP_VERDICT_NO_DEVICE);

    /* 10k tiny kernels in a second, GPU busy 5%: launch-bound. */
    kp_verdict_input launch = {.wall_s = 1, .gpu_busy_s = 0.05, .kernel_busy_s = 0.05,
                               .kernels = 10000, .small_kernels = 9900};
    kp_verdict_compute(&launch, &v);
    CHECK_INT(v.kind, KP_VERDICT_LAUNCH_BOUND);
    CHECK_NEAR(v.idle_fraction, 0.95, 1e-12);
    CHECK_NEAR(v.launches_per_s, 10000, 1e-9);
    CHECK_NEAR(v.small_fraction, 0.99, 1e-12);
    CHECK_CONTAINS(v.sentence, "GPU idle 95% of the wall");
    CHECK_CONTAINS(v.sentence, "kernel tuning cannot move the headline");

    /* Few long kernels, the host waiting 60% of the wall on a 30%-busy GPU: sync-bound. */
    kp_verdict_input sync = {.wall_s = 1, .gpu_busy_s = 0.3, .kernel_busy_s = 0.3, .kernels = 10,
                             .host_sync_s = 0.6};
    kp_verdict_compute(&sync, &v);
    CHECK_INT(v.kind, KP_VERDICT_SYNC_BOUND);

    kp_verdict_input host = {.wall_s = 1, .gpu_busy_s = 0.2, .kernel_busy_s = 0.2, .kernels = 10};
    kp_verdict_compute(&host, &v);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);

    /* Busy 70%, but kernels only 10% of it: copies dominate. */
    kp_verdict_input copies = {.wall_s = 1, .gpu_busy_s = 0.7, .kernel_busy_s = 0.1, .kernels = 5};
    kp_verdict_compute(&copies, &v);
    CHECK_INT(v.kind, KP_VERDICT_KERNELS_MINOR);

    kp_verdict_input dev = {.wall_s = 1, .gpu_busy_s = 0.9, .kernel_busy_s = 0.85, .kernels = 50};
    kp_verdict_compute(&dev, &v);
    CHECK_INT(v.kind, KP_VERDICT_DEVICE_BOUND);
    CHECK_STR(kp_verdict_name(v.kind), "device-bound");

    kp_verdict_input mixed = {.wall_s = 1, .gpu_busy_s = 0.6, .kernel_busy_s = 0.5, .kernels = 50,
                              .gaps = 3, .longest_gap_s = 0.1};
    kp_verdict_compute(&mixed, &v);
    CHECK_INT(v.kind, KP_VERDICT_MIXED);
    CHECK_CONTAINS(v.sentence, "3 gaps");
    TEST_DONE();
}
