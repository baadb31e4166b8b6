/* test_ceiling.c — the plan of `kprof caps --measure` (kp_ceiling_plan_make): buffer sizes and
 * repeat counts from the device — a GPU from 8x its L2 up (512 MiB, 1 GiB, 2 GiB on an H200),
 * anything else one size a few times its last-level cache but at most 512 MiB (or the cache),
 * with fewer repeats and no grid-stride copy — the expected time, the caps, the
 * refusal of a --max-bytes whose buffers would fit in the cache, and the FP32 FLOP peak's grid
 * and iterations. No device is touched. */
#include "lab/ceiling.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static kp_device_info gpu(uint64_t l2, uint64_t memory)
{
    kp_device_info d = {.is_gpu = 1, .cache_bytes = l2, .global_mem = memory, .max_alloc = memory};
    return d;
}

static kp_device_info cpu(uint64_t llc, uint64_t memory, uint64_t max_alloc)
{
    kp_device_info d = {
        .is_gpu = 0, .cache_bytes = llc, .global_mem = memory, .max_alloc = max_alloc};
    return d;
}

static void check_sizes(const kp_ceiling_plan *p, int n, uint64_t a, uint64_t b, uint64_t c)
{
    CHECK_INT(p->nsizes, n);
    const uint64_t want[3] = {a, b, c};
    for (int i = 0; i < n && i < p->nsizes; i++)
        CHECK_INT(p->sizes[i], want[i]);
    /* The copies at every size, demo_add, and fma_f32 (the FLOP peak). */
    CHECK_INT(p->npoints, p->nsizes * (p->gpu ? KP_CEILING_VARIANTS : KP_CEILING_CPU_VARIANTS) + 2);
    CHECK_INT(p->nvariants, p->gpu ? KP_CEILING_VARIANTS : KP_CEILING_CPU_VARIANTS);
}

static void test_gpu_sizes_unchanged(void)
{
    kp_ceiling_plan p;
    kp_error err = {0};
    /* H200: its 60 MiB L2 (62914560 bytes in the H200 runs under bench/results) and 141 GiB:
     * 8 x L2 -> 512 MiB, then 1 and 2 GiB. */
    kp_device_info h200 = gpu(60 * MIB, 141 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&h200, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 3, 512 * MIB, GIB, 2 * GIB);
    CHECK_INT(p.gpu, 1);
    CHECK_INT(p.cache_factor, 8);
    CHECK_INT(p.iters, 20);
    CHECK_INT(p.warmup, 3);
    CHECK_INT(p.cap, KP_CEILING_CAP_NONE);
    CHECK_INT(p.in_cache, 0);
    h200.cache_bytes = 50 * MIB; /* H100's */
    CHECK_INT(kp_ceiling_plan_make(&h200, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 3, 512 * MIB, GIB, 2 * GIB);
    h200.cache_bytes = 60 * MIB;
    /* A small L2: never below 64 MiB. */
    kp_device_info small = gpu(4 * MIB, 16 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&small, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 3, 64 * MIB, 128 * MIB, 256 * MIB);
    /* --iters overrides the count, not the sizes. */
    CHECK_INT(kp_ceiling_plan_make(&h200, 0, 30, &p, &err), KPROF_OK);
    CHECK_INT(p.iters, 30);
    check_sizes(&p, 3, 512 * MIB, GIB, 2 * GIB);
}

static void test_cpu_sizes(void)
{
    kp_ceiling_plan p;
    kp_error err = {0};
    /* PoCL on a 2-core machine: 32 MiB L3, 4.28 GiB, 2 GiB allocations: one size, 4x the cache. */
    kp_device_info pocl = cpu(32 * MIB, 4600783872ULL, 2 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&pocl, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 128 * MIB, 0, 0);
    CHECK_INT(p.gpu, 0);
    CHECK_INT(p.cache_factor, 4);
    CHECK_INT(p.iters, 20);
    CHECK_INT(p.warmup, 1);
    CHECK_INT(p.cap, KP_CEILING_CAP_NONE);
    /* Issue 23: PoCL's 480 MiB L3 made 2 GiB and 2.3 GiB buffers (a minute, two on a busy
     * machine): at most 512 MiB, the pair still above the cache. */
    kp_device_info big = cpu(480 * MIB, 9 * GIB, 4 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&big, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 512 * MIB, 0, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_CPU);
    CHECK_INT(p.in_cache, 0);
    /* A 256 MiB L3: 4x would be 1 GiB; 512 MiB. */
    kp_device_info server = cpu(256 * MIB, 256 * GIB, 64 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&server, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 512 * MIB, 0, 0);
    /* A cache above 512 MiB: its size rounded up to a power of two, never inside it. */
    kp_device_info vcache = cpu(1152 * MIB, 768 * GIB, 64 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&vcache, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 2 * GIB, 0, 0);
    CHECK_INT(p.in_cache, 0);
    /* A cache not a power of two rounds up: 4 x 48 MiB -> 256 MiB. */
    kp_device_info odd = cpu(48 * MIB, 64 * GIB, 16 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&odd, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 256 * MIB, 0, 0);
    /* No cache reported: 64 MiB. */
    kp_device_info unknown = cpu(0, 8 * GIB, 2 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&unknown, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 64 * MIB, 0, 0);
    CHECK_INT(p.in_cache, 0);
    /* The expected time: sessions, fills and dispatches. The 480 MiB plan at a 25 GB/s ceiling
     * and 15 GFLOP/s: 0.9 s + 1.61 s of fills + 2 x 21 x 1.07 GB / 25 GB/s + 21 x 0.54 GB / 25
     * GB/s + 21 x 0.067 GFLOP / 15 GFLOP/s. */
    CHECK_INT(kp_ceiling_plan_make(&big, 0, 0, &p, &err), KPROF_OK);
    double mb = 512.0 * MIB;
    CHECK_NEAR(kp_ceiling_plan_seconds(&p, 25, 15),
               0.9 + 3 * mb / 1e9 + 2 * 21 * 2 * mb / 25e9 + 21 * mb / 25e9 +
                   21 * kp_ceiling_fma_flops(&p) / 15e9,
               1e-9);
    /* Unknown ceilings: a guess, longer than at the measured figures; the old plan's far more. */
    CHECK(kp_ceiling_plan_seconds(&p, 0, 0) > kp_ceiling_plan_seconds(&p, 25, 15));
    CHECK(kp_ceiling_plan_seconds(&p, 0, 0) < 20);
}

static void test_caps(void)
{
    kp_ceiling_plan p;
    kp_error err = {0};
    kp_device_info pocl = cpu(32 * MIB, 4600783872ULL, 2 * GIB);
    /* --max-bytes at the cache's size is accepted: one size. */
    CHECK_INT(kp_ceiling_plan_make(&pocl, 32 * MIB, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 32 * MIB, 0, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_MAX_BYTES);
    CHECK_INT(p.in_cache, 0);
    /* Below the rule's size: cut, to whole 64-byte groups. */
    CHECK_INT(kp_ceiling_plan_make(&pocl, 100 * MIB + 5, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 100 * MIB, 0, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_MAX_BYTES);
    /* Above the rule's size: no effect. */
    CHECK_INT(kp_ceiling_plan_make(&pocl, GIB, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 128 * MIB, 0, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_NONE);
    /* The device's memory: a quarter of 256 MiB is 64 MiB. */
    kp_device_info tiny = cpu(32 * MIB, 256 * MIB, 256 * MIB);
    CHECK_INT(kp_ceiling_plan_make(&tiny, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 64 * MIB, 0, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_DEVICE);
    CHECK_INT(p.in_cache, 0);
    /* A device whose limits keep every buffer inside its cache: planned, and flagged. */
    kp_device_info cramped = cpu(32 * MIB, 64 * MIB, 64 * MIB);
    CHECK_INT(kp_ceiling_plan_make(&cramped, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 16 * MIB, 0, 0);
    CHECK_INT(p.in_cache, 1);
    /* The GPU's largest allocation. */
    kp_device_info limited = gpu(50 * MIB, 141 * GIB);
    limited.max_alloc = GIB - 100;
    CHECK_INT(kp_ceiling_plan_make(&limited, 0, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 2, 512 * MIB, GIB - 128, 0);
    CHECK_INT(p.cap, KP_CEILING_CAP_DEVICE);
}

static void test_max_bytes_inside_the_cache_is_refused(void)
{
    kp_ceiling_plan p;
    kp_error err = {0};
    kp_device_info pocl = cpu(32 * MIB, 4600783872ULL, 2 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&pocl, 8 * MIB, 0, &p, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "--max-bytes 8 MiB is below this device's 32 MiB last-level cache");
    CHECK_CONTAINS(err.message, "Give --max-bytes 32M or more");
    kp_error_clear(&err);
    kp_device_info h200 = gpu(50 * MIB + 1, 141 * GIB); /* an odd size rounds up */
    CHECK_INT(kp_ceiling_plan_make(&h200, 16 * MIB, 0, &p, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "Give --max-bytes 51M or more");
    kp_error_clear(&err);
    /* No cache reported: nothing to compare with, accepted. */
    kp_device_info unknown = cpu(0, 8 * GIB, 2 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&unknown, 8 * MIB, 0, &p, &err), KPROF_OK);
    check_sizes(&p, 1, 8 * MIB, 0, 0);
}

/* The FLOP peak: a few waves of full SMs (8192 threads per SM) of 4096 iterations on a GPU,
 * 4096 threads per compute unit of 512 iterations elsewhere; 16 FLOPs per thread and
 * iteration. */
static void test_fma_plan(void)
{
    kp_ceiling_plan p;
    kp_error err = {0};
    kp_device_info h200 = gpu(60 * MIB, 141 * GIB);
    h200.compute_units = 132;
    CHECK_INT(kp_ceiling_plan_make(&h200, 0, 0, &p, &err), KPROF_OK);
    CHECK_INT(p.fma_threads, 132 * 8192);
    CHECK_INT(p.fma_iters, 4096);
    CHECK_NEAR(kp_ceiling_fma_flops(&p), 132.0 * 8192 * 4096 * 16, 0);
    kp_device_info two_cores = cpu(32 * MIB, 8 * GIB, 2 * GIB);
    two_cores.compute_units = 2;
    CHECK_INT(kp_ceiling_plan_make(&two_cores, 0, 0, &p, &err), KPROF_OK);
    CHECK_INT(p.fma_threads, 2 * 4096);
    CHECK_INT(p.fma_iters, 512);
    /* A device that reports no compute units still gets a grid. */
    kp_device_info none = cpu(32 * MIB, 8 * GIB, 2 * GIB);
    CHECK_INT(kp_ceiling_plan_make(&none, 0, 0, &p, &err), KPROF_OK);
    CHECK_INT(p.fma_threads, 4096);
}

/* kp_ceiling_conclude: the best copy is the bandwidth ceiling; the FLOP peak is optional — a
 * failed fma_f32 leaves it out (0: NULL in the store) with one warning line, and the bandwidth
 * ceiling stands. */
static kp_ceiling_point point(const char *kernel, double gbps, double gflops)
{
    kp_ceiling_point p;
    memset(&p, 0, sizeof p);
    snprintf(p.kernel, sizeof p.kernel, "%s", kernel);
    p.bytes = 512 * MIB;
    p.gflops = gflops;
    p.run.gbps = gbps;
    p.run.launch.dims = 1;
    p.run.launch.grid[0] = 8192;
    p.run.launch.tg[0] = 256;
    return p;
}

static void test_conclude(void)
{
    static kp_ceiling_result r;
    for (int fail = 0; fail <= 1; fail++) {
        memset(&r, 0, sizeof r);
        r.plan.iters = 5;
        r.plan.fma_iters = 512;
        r.points[r.npoints++] = point("copy_f4", 100, 0);
        r.points[r.npoints++] = point("copy_f4x4", 120, 0);
        r.points[r.npoints++] = point("demo_add", 500, 0);
        if (!fail) r.points[r.npoints++] = point("fma_f32", 0, 900);
        FILE *warn = tmpfile();
        CHECK(warn != NULL);
        if (!warn) return;
        kp_error err = {0};
        CHECK_INT(kp_ceiling_conclude(&r, fail ? KPROF_TIMEOUT : KPROF_OK,
                                      fail ? "fma_f32 timed out" : NULL, warn, &err),
                  KPROF_OK);
        CHECK_NEAR(r.ceiling.copy_gbs, 120, 0);
        CHECK(strstr(r.ceiling.method, "copy_f4x4") != NULL);
        char text[512] = "";
        rewind(warn);
        size_t got = fread(text, 1, sizeof text - 1, warn);
        text[got] = '\0';
        fclose(warn);
        if (fail) {
            CHECK_NEAR(r.ceiling.fma_gflops, 0, 0);
            CHECK_STR(r.ceiling.fma_method, "");
            CHECK(strncmp(text, "kprof: warning: ", 16) == 0);
            CHECK(strstr(text, "fma_f32 timed out") != NULL);
        } else {
            CHECK_NEAR(r.ceiling.fma_gflops, 900, 0);
            CHECK(strstr(r.ceiling.fma_method, "fma_f32") != NULL);
            CHECK_STR(text, "");
        }
        kp_error_clear(&err);
    }
    /* No copy measured: no ceiling. */
    memset(&r, 0, sizeof r);
    r.points[r.npoints++] = point("fma_f32", 0, 900);
    kp_error err = {0};
    CHECK_INT(kp_ceiling_conclude(&r, KPROF_OK, NULL, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
}

int main(void)
{
    test_conclude();
    test_fma_plan();
    test_gpu_sizes_unchanged();
    test_cpu_sizes();
    test_caps();
    test_max_bytes_inside_the_cache_is_refused();
    return kp_test_failures ? 1 : 0;
}
