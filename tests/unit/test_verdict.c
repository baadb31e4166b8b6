/* test_verdict.c — the submission-economics verdict: the numbers of a timeline's windows (whole
 * wall, active window, top-level NVTX ranges), the analysis of those numbers, and the prose. */
#include "core/verdict.h"
#include "test.h"

#include <stdlib.h>

#define MS 1000000LL
#define US 1000LL
#define S  1000000000LL

enum {
    N_NONE,
    N_KERNEL,
    N_LAUNCH,
    N_MALLOC,
    N_MODULE,
    N_SYNC,
    N_STEP,
    N_FORWARD,
    N_BUILD,
    N_CLKERNEL,
    N_ENQUEUE,
    N_COPY,
    N_LOAD,
    N_NAMES
};
static const char *const names[N_NAMES] = {NULL,
                                           "void at::native::elementwise_kernel<128, 2>(int)",
                                           "cudaLaunchKernel",
                                           "cudaMalloc",
                                           "cuModuleLoadData",
                                           "cudaStreamSynchronize",
                                           "step",
                                           "forward",
                                           "clBuildProgram",
                                           "scale",
                                           "clEnqueueNDRangeKernel",
                                           "[CUDA memcpy HtoD]",
                                           "load"};

/* The numbers alone: each rule of verdict.h from hand-made inputs. */
static void test_rules(void)
{
    kp_verdict v;
    kp_verdict_input none = {.wall_s = 1};
    kp_verdict_compute(&none, &v);
    CHECK_INT(v.kind, KP_VERDICT_NO_DEVICE);

    /* 10k tiny kernels in a second, 90 µs apart, GPU busy 5%: launch-bound. */
    kp_verdict_input launch = {.wall_s = 1,
                               .gpu_busy_s = 0.05,
                               .kernel_busy_s = 0.05,
                               .kernels = 10000,
                               .small_kernels = 9900,
                               .device_ops = 10000,
                               .gaps = 9999,
                               .median_gap_s = 90e-6,
                               .short_gap_idle_s = 0.9,
                               .api = KP_API_CUDA};
    kp_verdict_compute(&launch, &v);
    CHECK_INT(v.kind, KP_VERDICT_LAUNCH_BOUND);
    CHECK_NEAR(v.idle_fraction, 0.95, 1e-12);
    CHECK_NEAR(v.launches_per_s, 10000, 1e-9);
    CHECK_NEAR(v.small_fraction, 0.99, 1e-12);
    CHECK(v.advice & KP_ADVICE_CUDA_GRAPHS);
    char text[2048];
    kp_verdict_describe(&launch, &v, "the wall", 0, text, sizeof text);
    CHECK_CONTAINS(text, "GPU idle 95% of the wall");
    CHECK_CONTAINS(text, "kernel tuning cannot move the headline");
    CHECK_CONTAINS(text, "CUDA graphs");

    /* The same launches with gaps of 200 µs: the host does something else between them, so it
     * is host-bound, not launch-bound. */
    kp_verdict_input spread = launch;
    spread.median_gap_s = 200e-6;
    spread.short_gap_idle_s = 0;
    kp_verdict_compute(&spread, &v);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK(!v.short_gaps);
    /* ... and close together but only 500/s: host-bound too. */
    kp_verdict_input slow = launch;
    slow.wall_s = 20;
    kp_verdict_compute(&slow, &v);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK(!v.high_launch_rate);

    /* Few long kernels, the host waiting 60% of the wall on a 30%-busy GPU: sync-bound. */
    kp_verdict_input sync = {.wall_s = 1,
                             .gpu_busy_s = 0.3,
                             .kernel_busy_s = 0.3,
                             .kernels = 10,
                             .device_ops = 10,
                             .host_sync_s = 0.6};
    kp_verdict_compute(&sync, &v);
    CHECK_INT(v.kind, KP_VERDICT_SYNC_BOUND);

    kp_verdict_input host = {
        .wall_s = 1, .gpu_busy_s = 0.2, .kernel_busy_s = 0.2, .kernels = 10, .device_ops = 10};
    kp_verdict_compute(&host, &v);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK(v.advice & KP_ADVICE_HOST_WORK);

    /* Busy 70%, but kernels only 10% of it: copies dominate. */
    kp_verdict_input copies = {
        .wall_s = 1, .gpu_busy_s = 0.7, .kernel_busy_s = 0.1, .kernels = 5, .device_ops = 9};
    kp_verdict_compute(&copies, &v);
    CHECK_INT(v.kind, KP_VERDICT_KERNELS_MINOR);

    kp_verdict_input dev = {
        .wall_s = 1, .gpu_busy_s = 0.9, .kernel_busy_s = 0.85, .kernels = 50, .device_ops = 50};
    kp_verdict_compute(&dev, &v);
    CHECK_INT(v.kind, KP_VERDICT_DEVICE_BOUND);
    CHECK_STR(kp_verdict_name(v.kind), "device-bound");
    /* The host waiting 90% of the wall for a busy GPU: not a call to name. */
    kp_verdict_input waits = dev;
    waits.calls[0] = (kp_verdict_call){"cudaDeviceSynchronize", 1, 0.9, 1};
    waits.ncalls = 1;
    kp_verdict_compute(&waits, &v);
    CHECK_INT(v.kind, KP_VERDICT_DEVICE_BOUND);
    CHECK_INT(v.named_call, -1);
    CHECK_INT(v.advice, KP_ADVICE_KERNELS);
    waits.calls[0].sync = 0; /* a call of the host's own: named */
    kp_verdict_compute(&waits, &v);
    CHECK_INT(v.named_call, 0);
    kp_verdict_describe(&waits, &v, "the wall", 0, text, sizeof text);
    CHECK_CONTAINS(text, "cudaDeviceSynchronize took 90% of the wall (1 call, 900 ms): that call, "
                         "not a kernel, is the headline.");

    kp_verdict_input mixed = {.wall_s = 1,
                              .gpu_busy_s = 0.6,
                              .kernel_busy_s = 0.5,
                              .kernels = 50,
                              .device_ops = 50,
                              .gaps = 3,
                              .longest_gap_s = 0.1,
                              .longest_gap_place = KP_GAP_BETWEEN,
                              .gap_after = "a",
                              .gap_before = "b"};
    kp_verdict_compute(&mixed, &v);
    CHECK_INT(v.kind, KP_VERDICT_MIXED);
    kp_verdict_describe(&mixed, &v, "the wall", 0, text, sizeof text);
    CHECK_CONTAINS(text, "3 gaps");
    CHECK_CONTAINS(text, "between a and b");
}

/* A PyTorch training script as the H200 traced it: 13.3 s of wall, ~10 s of `import torch` and
 * start-up before the first kernel, then 30 NVTX `step` ranges of 37 small kernels each (plus
 * two warm-up kernels): 1,112 kernels, 84 launches/s, GPU busy 0.2%. */
static kp_timeline *pytorch_like(void)
{
    kp_timeline *t = kp_timeline_create(0, 13300 * MS, names, N_NAMES);
    kp_timeline_set_api(t, KP_API_CUDA);
    /* Start-up: allocations and module loads, no kernels. */
    for (int i = 0; i < 12; i++)
        kp_timeline_add_call(t, 9000 * MS + i * 50 * MS, 9000 * MS + i * 50 * MS + 40 * MS,
                             N_MALLOC, 0, NULL);
    kp_timeline_add_call(t, 9700 * MS, 9990 * MS, N_MODULE, 0, NULL);
    int64_t at = 10000 * MS;
    for (int w = 0; w < 2; w++, at += 100 * US) {
        kp_timeline_add_call(t, at - 10 * US, at - 2 * US, N_LAUNCH, 0, NULL);
        kp_timeline_add_op(t, at, at + 24 * US, N_KERNEL, 1, NULL);
    }
    for (int s = 0; s < 30; s++) {
        int64_t step = 10010 * MS + s * 100 * MS;
        kp_timeline_add_range(t, step, step + 100 * MS, N_STEP, 1, NULL);
        kp_timeline_add_range(t, step + 100 * US, step + 5 * MS, N_FORWARD, 1, NULL); /* nested */
        for (int k = 0; k < 37; k++) {
            int64_t ks = step + 1 * MS + k * 50 * US;
            kp_timeline_add_call(t, ks - 10 * US, ks - 2 * US, N_LAUNCH, 0, NULL);
            kp_timeline_add_op(t, ks, ks + 24 * US, N_KERNEL, 1, NULL);
        }
        kp_timeline_add_call(t, step + 3 * MS, step + 4 * MS, N_SYNC, 1, NULL);
    }
    CHECK_INT(kp_timeline_prepare(t, NULL), 0);
    return t;
}

static void test_pytorch_like(void)
{
    kp_timeline *t = pytorch_like();
    kp_verdict_input in;
    kp_verdict v;
    char text[2048], gap[320];

    /* The whole wall: an idle GPU with a low launch rate is host-bound, and the verdict says
     * what the host did: 10 s before the first kernel, cudaMalloc and cuModuleLoadData. */
    CHECK_INT(kp_timeline_window(t, 0, 13300 * MS, &in, NULL), 0);
    kp_verdict_compute(&in, &v);
    CHECK_INT(in.kernels, 1112);
    CHECK_NEAR(v.launches_per_s, 1112 / 13.3, 1e-9);
    CHECK_INT((int)(v.launches_per_s + 0.5), 84);
    CHECK_NEAR(in.gpu_busy_s, 1112 * 24e-6, 1e-12);
    CHECK(v.busy_fraction < 0.0025);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK(!v.high_launch_rate);
    CHECK_INT(in.longest_gap_place, KP_GAP_BEFORE_FIRST);
    CHECK_NEAR(in.longest_gap_s, 10.0, 1e-12);
    kp_verdict_gap_text(&in, gap, sizeof gap);
    CHECK_STR(gap, "before the first kernel");
    CHECK_INT(in.ncalls, 3);
    CHECK_STR(in.calls[0].name, "cudaMalloc");
    CHECK_NEAR(in.calls[0].total_s, 0.48, 1e-12);
    CHECK_INT(in.calls[0].calls, 12);
    CHECK_STR(in.calls[1].name, "cuModuleLoadData");
    CHECK_INT(v.named_call, -1); /* nothing takes 20% of the wall */
    CHECK(!(v.advice & KP_ADVICE_CUDA_GRAPHS));
    kp_verdict_describe(&in, &v, "the wall", 0, text, sizeof text);
    CHECK_CONTAINS(text, "host-bound, not launch-bound");
    CHECK_CONTAINS(text, "84 launches/s");
    CHECK_CONTAINS(text, "is before the first kernel");
    CHECK_CONTAINS(text, "cudaMalloc 480 ms");
    CHECK_CONTAINS(text, "cuModuleLoadData 290 ms");
    CHECK(!strstr(text, "CUDA graphs"));

    /* The active window (first to last kernel) leaves start-up out: still host-bound (370
     * launches/s, the GPU idle between steps), the longest gap now between two kernels. */
    int64_t a0, a1;
    CHECK(kp_timeline_active(t, &a0, &a1));
    CHECK_INT(a0, 10000 * MS);
    CHECK_INT(a1, 10010 * MS + 29 * 100 * MS + 1 * MS + 36 * 50 * US + 24 * US);
    CHECK_INT(kp_timeline_window(t, a0, a1, &in, NULL), 0);
    kp_verdict_compute(&in, &v);
    CHECK_INT(in.kernels, 1112);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK_INT(in.longest_gap_place, KP_GAP_BETWEEN);
    CHECK_NEAR(in.median_gap_s, 26e-6, 1e-12); /* within a step: short, but few per second */
    kp_verdict_gap_text(&in, gap, sizeof gap);
    CHECK_STR(gap, "between void at::native::elementwise_kernel<128, 2>(int) and void "
                   "at::native::elementwise_kernel<128, 2>(int)");

    /* Per top-level NVTX range: `forward` is nested inside `step`, so one name, 30 instances. */
    kp_range_verdict *rv = NULL;
    size_t n = 0;
    CHECK_INT(kp_timeline_ranges(t, &rv, &n, NULL), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(rv[0].name, "step");
        CHECK_INT(rv[0].instances, 30);
        CHECK_NEAR(rv[0].in.wall_s, 3.0, 1e-12);
        CHECK_INT(rv[0].in.kernels, 30 * 37);
        CHECK_INT(rv[0].verdict.kind, KP_VERDICT_HOST_BOUND);
        CHECK_INT(rv[0].kinds[KP_VERDICT_HOST_BOUND], 30);
        CHECK_INT(rv[0].in.longest_gap_place, KP_GAP_AFTER_LAST);
        CHECK_NEAR(rv[0].in.host_sync_s, 30 * 1e-3, 1e-12);
        CHECK_STR(rv[0].in.calls[0].name, "cudaStreamSynchronize");
        kp_verdict_describe(&rv[0].in, &rv[0].verdict, "the 30 'step' ranges", 0, text,
                            sizeof text);
        CHECK_CONTAINS(text, "after the last kernel");
    }
    free(rv);
    kp_timeline_destroy(t);
}

/* Thousands of launches per second, short gaps between short kernels: launch-bound, in the
 * active window; the whole wall, with a second of idle start-up, is not. */
static void test_launch_bound(unsigned api)
{
    kp_timeline *t = kp_timeline_create(0, 2 * S, names, N_NAMES);
    kp_timeline_set_api(t, api);
    int kernel = api == KP_API_OPENCL ? N_CLKERNEL : N_KERNEL;
    int call = api == KP_API_OPENCL ? N_ENQUEUE : N_LAUNCH;
    for (int i = 0; i < 5000; i++) {
        int64_t s = 1 * S + i * 15 * US;
        kp_timeline_add_call(t, s, s + 12 * US, call, 0, NULL);
        kp_timeline_add_op(t, s + 10 * US, s + 15 * US, kernel, 1, NULL);
    }
    CHECK_INT(kp_timeline_prepare(t, NULL), 0);
    int64_t a0, a1;
    CHECK(kp_timeline_active(t, &a0, &a1));
    kp_verdict_input in;
    kp_verdict v;
    CHECK_INT(kp_timeline_window(t, a0, a1, &in, NULL), 0);
    kp_verdict_compute(&in, &v);
    CHECK_INT(v.kind, KP_VERDICT_LAUNCH_BOUND);
    CHECK(v.launches_per_s > 60000);
    CHECK_NEAR(in.median_gap_s, 10e-6, 1e-12);
    CHECK_INT(in.gaps, 4999);
    CHECK_NEAR(v.idle_fraction, 2.0 / 3.0, 1e-3);
    char text[2048];
    kp_verdict_describe(&in, &v, "the active window", 0, text, sizeof text);
    CHECK_CONTAINS(text, "launch-bound");
    if (api == KP_API_OPENCL) {
        CHECK(!(v.advice & KP_ADVICE_CUDA_GRAPHS));
        CHECK(!strstr(text, "CUDA"));
        CHECK_CONTAINS(text, "fusion, more work per launch");
    } else {
        CHECK(v.advice & KP_ADVICE_CUDA_GRAPHS);
        CHECK_CONTAINS(text, "fusion, CUDA graphs");
    }
    CHECK_INT(kp_timeline_window(t, 0, 2 * S, &in, NULL), 0);
    kp_verdict_compute(&in, &v);
    /* 2,500 launches/s, 10 µs apart, but the GPU idles mostly before and after them. */
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK(v.high_launch_rate && !v.short_gaps);
    CHECK_INT(in.longest_gap_place, KP_GAP_BEFORE_FIRST);
    kp_timeline_destroy(t);
}

/* An OpenCL program whose clBuildProgram takes 40% of the wall: named, with advice that fits. */
static void test_opencl_build(void)
{
    kp_timeline *t = kp_timeline_create(0, 5 * S, names, N_NAMES);
    kp_timeline_set_api(t, KP_API_OPENCL);
    kp_timeline_add_call(t, 500 * MS, 2500 * MS, N_BUILD, 0, NULL);
    for (int i = 0; i < 20; i++) {
        int64_t s = 3 * S + i * 100 * MS;
        kp_timeline_add_call(t, s, s + 20 * US, N_ENQUEUE, 0, NULL);
        kp_timeline_add_op(t, s + 30 * US, s + 10 * MS, N_CLKERNEL, 1, NULL);
    }
    CHECK_INT(kp_timeline_prepare(t, NULL), 0);
    kp_verdict_input in;
    kp_verdict v;
    CHECK_INT(kp_timeline_window(t, 0, 5 * S, &in, NULL), 0);
    kp_verdict_compute(&in, &v);
    CHECK_INT(v.kind, KP_VERDICT_HOST_BOUND);
    CHECK_INT(v.named_call, 0);
    CHECK_STR(in.calls[0].name, "clBuildProgram");
    CHECK(v.advice & KP_ADVICE_BUILD_ONCE);
    CHECK(!(v.advice & KP_ADVICE_CUDA_GRAPHS));
    char text[2048];
    kp_verdict_describe(&in, &v, "the wall", 0, text, sizeof text);
    CHECK_CONTAINS(text, "clBuildProgram took 40% of the wall (1 call, 2 s)");
    CHECK_CONTAINS(text, "clCreateProgramWithBinary");
    CHECK(!strstr(text, "CUDA"));
    kp_timeline_destroy(t);
}

/* Ranges of two names on two threads, one of them with no device work, one with a copy first:
 * each name gets its own verdict. */
static void test_ranges(void)
{
    kp_timeline *t = kp_timeline_create(0, 1 * S, names, N_NAMES);
    kp_timeline_set_api(t, KP_API_CUDA);
    for (int i = 0; i < 4; i++) {
        int64_t s = i * 200 * MS;
        kp_timeline_add_range(t, s, s + 100 * MS, N_STEP, 7, NULL); /* busy 95% */
        kp_timeline_add_op(t, s + 1 * MS, s + 2 * MS, N_COPY, 0, NULL);
        kp_timeline_add_op(t, s + 2 * MS, s + 97 * MS, N_KERNEL, 1, NULL);
        kp_timeline_add_range(t, s + 100 * MS, s + 200 * MS, N_LOAD, 8,
                              NULL); /* nothing on the GPU */
        kp_timeline_add_range(t, s + 110 * MS, s + 120 * MS, N_FORWARD, 8, NULL); /* nested */
    }
    kp_timeline_add_range(t, 900 * MS, 950 * MS, N_FORWARD, 9, NULL); /* top level on its thread */
    CHECK_INT(kp_timeline_prepare(t, NULL), 0);
    kp_range_verdict *rv = NULL;
    size_t n = 0;
    CHECK_INT(kp_timeline_ranges(t, &rv, &n, NULL), 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        /* Largest total first; equal totals by name. */
        CHECK_STR(rv[0].name, "load");
        CHECK_STR(rv[1].name, "step");
        CHECK_STR(rv[2].name, "forward");
        CHECK_INT(rv[0].verdict.kind, KP_VERDICT_NO_DEVICE);
        CHECK_INT(rv[0].in.longest_gap_place, KP_GAP_WHOLE);
        CHECK_INT(rv[1].verdict.kind, KP_VERDICT_DEVICE_BOUND);
        CHECK_INT(rv[1].kinds[KP_VERDICT_DEVICE_BOUND], 4);
        CHECK_NEAR(rv[1].in.gpu_busy_s, 4 * 96e-3, 1e-12);
        CHECK_INT(rv[1].in.longest_gap_place, KP_GAP_AFTER_LAST);
        char gap[320];
        kp_verdict_gap_text(&rv[1].in, gap, sizeof gap);
        CHECK_STR(gap, "after the last kernel");
        CHECK_INT(rv[2].instances, 1);
    }
    free(rv);
    /* A window that starts inside a busy stretch has no gap before it; the first operation
     * being a copy is said so. */
    kp_verdict_input in;
    CHECK_INT(kp_timeline_window(t, 0, 100 * MS, &in, NULL), 0);
    char gap[320];
    kp_verdict_gap_text(&in, gap, sizeof gap);
    CHECK_STR(gap, "after the last kernel");
    CHECK_INT(kp_timeline_window(t, 0, 1 * MS + 500 * US, &in, NULL), 0);
    CHECK_INT(in.longest_gap_place, KP_GAP_BEFORE_FIRST);
    kp_verdict_gap_text(&in, gap, sizeof gap);
    CHECK_STR(gap, "before the first device operation ([CUDA memcpy HtoD])");
    CHECK_INT(kp_timeline_window(t, 1500 * US, 50 * MS, &in, NULL), 0);
    CHECK_INT(in.longest_gap_place, KP_GAP_NONE); /* busy throughout */
    CHECK_NEAR(in.gpu_busy_s, 48.5e-3, 1e-12);
    CHECK_INT(kp_timeline_window(t, 1500 * US, 150 * MS, &in, NULL), 0);
    CHECK_INT(in.longest_gap_place, KP_GAP_AFTER_LAST);
    CHECK_NEAR(in.gpu_busy_s, 95.5e-3, 1e-12);
    CHECK_NEAR(in.longest_gap_s, 53e-3, 1e-12);
    kp_timeline_destroy(t);
    kp_timeline_destroy(NULL);
}

int main(void)
{
    test_rules();
    test_pytorch_like();
    test_launch_bound(KP_API_CUDA);
    test_launch_bound(KP_API_OPENCL);
    test_opencl_build();
    test_ranges();
    TEST_DONE();
}
