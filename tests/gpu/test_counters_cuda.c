/*
 * test_counters_cuda.c — the CUDA backend's hardware counters on a GPU (ctest: gpu.counters_cuda):
 * kp_backend_ops.counters and counter_list through CUPTI's Range Profiler.
 *
 * The kernel `accumulate` does x[i] += a[i] over N floats: it reads 2 x N x 4 bytes and writes
 * N x 4, buffers of 1 GiB each, 20 times the H200's L2, so whatever the cache holds is lost in
 * the rounding. It checks:
 *   - DRAM bytes read are the input bytes within 3%, written the output bytes within -8%/+3%
 *     (dirty lines still in the L2 when the kernel ends are written back later);
 *   - SM throughput and achieved occupancy are percentages in (0, 100], the L2 hit rate in
 *     [0, 100];
 *   - a made-up name comes back NAN and bad, the others not;
 *   - x holds x0 + a exactly: one dispatch, however many passes the replay took;
 *   - the CUPTI timer and the counters do not conflict: dispatch_batch before and after
 *     counters, the clock it names the same both times, every duration positive;
 *   - a second counters() call (a profiler initialized again) works, and how long each took;
 *   - counter_list names the metrics used here, with descriptions.
 * Exit 0 passed, 1 failed, 77 skipped (no CUDA device, or no counters: no permission, another
 * profiler, an ASan build — each with the reason).
 */
#define _GNU_SOURCE
#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N       (256u << 20) /* floats per buffer: 1 GiB */
#define TG      256
#define BATCH   3
#define METRICS 6

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAILED: %s: ", #cond);                                                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char kernel_source[] =
    "extern \"C\" __global__ void accumulate(float *x, const float *a, unsigned int n)\n"
    "{\n"
    "    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] = x[i] + a[i];\n"
    "}\n";

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct listed {
    size_t count;
    int found[METRICS];
    char dram_what[256];
} listed;

static const char *const metrics[METRICS] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
    "kprof__no_such_metric.sum",
};

static void collect(const char *name, const char *what, void *ctx)
{
    listed *l = ctx;
    l->count++;
    for (int i = 0; i < METRICS; i++)
        if (strcmp(name, metrics[i]) == 0) l->found[i]++;
    if (strcmp(name, metrics[0]) == 0) snprintf(l->dram_what, sizeof l->dram_what, "%s", what);
}

/* dispatch_batch of BATCH: every duration positive; the clock it used into timer[]. */
static void timed_batch(const kp_backend_ops *ops, kp_kernel *k, const kp_launch *launch,
                        char *timer, size_t timer_n, const char *when)
{
    double ns[BATCH] = {0};
    kp_error err = {0};
    kprof_status st = ops->dispatch_batch(k, launch, BATCH, ns, NULL, timer, timer_n, &err);
    EXPECT(st == KPROF_OK, "dispatch_batch %s: %s", when, err.message);
    printf("dispatch_batch %s: timer %s, %.3f %.3f %.3f ms\n", when, timer, ns[0] * 1e-6,
           ns[1] * 1e-6, ns[2] * 1e-6);
    for (int i = 0; i < BATCH; i++)
        EXPECT(ns[i] > 0, "dispatch_batch %s: duration %d is %g ns", when, i, ns[i]);
    kp_error_clear(&err);
}

int main(void)
{
    const kp_backend_ops *ops = kp_backend_find("cuda");
    kp_error reason = {0};
    if (!ops) {
        printf("skipped: this kprof was built without the CUDA backend\n");
        return 77;
    }
    if (ops->probe(&reason) != KPROF_OK || ops->device_count() < 1) {
        printf("skipped: no CUDA device: %s\n", reason.message);
        return 77;
    }
    EXPECT(ops->counters && ops->counter_list, "the CUDA backend has no counters ops");
    if (!ops->counters || !ops->counter_list) return 1;

    kp_error err = {0};
    kp_device *dev = NULL;
    kp_program *prog = NULL;
    kp_kernel *k = NULL;
    kp_buffer *bx = NULL, *ba = NULL;
    kp_build_output products = {0};
    float *x0 = NULL, *a = NULL, *x = NULL;
    int skipped = 0;
    kprof_status st = ops->open(0, &dev, &err);
    if (st != KPROF_OK) {
        fprintf(stderr, "FAILED: open: %s\n", err.message);
        failures++;
        goto done;
    }
    kp_source src = {.path = "test_counters_cuda.cu",
                     .text = kernel_source,
                     .len = sizeof kernel_source - 1,
                     .lang = KP_LANG_CUDA,
                     .options = "",
                     .entry = "accumulate"};
    st = ops->build(dev, &src, &prog, &products, &err);
    if (st != KPROF_OK) {
        fprintf(stderr, "FAILED: build: %s\n%s\n", err.message, err.log ? err.log : "");
        failures++;
        goto done;
    }
    const kp_kernel_meta *meta = kp_program_meta_find(&products.meta, "accumulate");
    EXPECT(meta != NULL, "the program has no kernel accumulate");
    if (!meta) goto done;
    st = ops->kernel_create(prog, meta, &k, &err);
    EXPECT(st == KPROF_OK, "kernel_create: %s", err.message);
    if (st != KPROF_OK) goto done;

    const uint64_t bytes = (uint64_t)N * sizeof(float);
    x0 = malloc(bytes);
    a = malloc(bytes);
    x = malloc(bytes);
    if (!x0 || !a || !x) {
        fprintf(stderr, "FAILED: out of host memory\n");
        failures++;
        goto done;
    }
    for (uint32_t i = 0; i < N; i++) {
        x0[i] = (float)(i % 1000u);
        a[i] = (float)(1u + i % 7u);
    }
    st = ops->alloc(dev, bytes, &bx, &err);
    if (st == KPROF_OK) st = ops->alloc(dev, bytes, &ba, &err);
    if (st == KPROF_OK) st = ops->write(bx, x0, bytes, &err);
    if (st == KPROF_OK) st = ops->write(ba, a, bytes, &err);
    EXPECT(st == KPROF_OK, "buffers: %s", err.message);
    if (st != KPROF_OK) goto done;
    char spec_text[128];
    snprintf(spec_text, sizeof spec_text, "f32:%u,f32:%u,u32=%u", N, N, N);
    kp_spec spec;
    st = kp_spec_parse(spec_text, &spec, &err);
    kp_buffer *bound[3] = {bx, ba, NULL};
    if (st == KPROF_OK) st = ops->bind(k, &spec, bound, &err);
    EXPECT(st == KPROF_OK, "bind: %s", err.message);
    if (st != KPROF_OK) goto done;
    kp_launch launch = {.dims = 1, .grid = {N, 1, 1}, .tg = {TG, 1, 1}, .timer = KP_TIMER_AUTO};

    /* The timer first, as the lab does: CUPTI kernel records on when CUPTI is there. */
    char timer_before[256] = "", timer_after[256] = "";
    timed_batch(ops, k, &launch, timer_before, sizeof timer_before, "before counters");
    st = ops->write(bx, x0, bytes, &err);
    EXPECT(st == KPROF_OK, "rewriting x: %s", err.message);

    double values[METRICS];
    unsigned char bad[METRICS];
    double t0 = seconds();
    st = ops->counters(k, &launch, metrics, METRICS, values, bad, &err);
    double took = seconds() - t0;
    if (st == KPROF_UNAVAILABLE) {
        printf("skipped: the GPU counters are unavailable here: %s\n", err.message);
        skipped = 1;
        goto done;
    }
    EXPECT(st == KPROF_OK, "counters: %s", err.message);
    if (st != KPROF_OK) goto done;
    printf("counters took %.3f s\n", took);
    for (int i = 0; i < METRICS; i++)
        printf("  %-52s %s%.6g\n", metrics[i], bad[i] ? "(bad) " : "", values[i]);

    double read_expected = 2.0 * (double)bytes, write_expected = (double)bytes;
    EXPECT(!bad[0] && fabs(values[0] / read_expected - 1) <= 0.03,
           "DRAM bytes read %.6g, expected %.6g within 3%%", values[0], read_expected);
    EXPECT(!bad[1] && values[1] >= 0.92 * write_expected && values[1] <= 1.03 * write_expected,
           "DRAM bytes written %.6g, expected %.6g (-8%%/+3%%)", values[1], write_expected);
    EXPECT(!bad[2] && values[2] > 0 && values[2] <= 100.0001, "SM throughput %g%%", values[2]);
    EXPECT(!bad[3] && values[3] > 0 && values[3] <= 100.0001, "achieved occupancy %g%%", values[3]);
    EXPECT(!bad[4] && values[4] >= 0 && values[4] <= 100.0001, "L2 hit rate %g%%", values[4]);
    EXPECT(bad[5] && isnan(values[5]), "the made-up metric: bad %d, value %g", bad[5], values[5]);

    /* One dispatch's result, however many replays. */
    st = ops->read(bx, x, bytes, &err);
    EXPECT(st == KPROF_OK, "reading x: %s", err.message);
    uint64_t wrong = 0, first = 0;
    for (uint32_t i = 0; st == KPROF_OK && i < N; i++)
        if (x[i] != x0[i] + a[i] && wrong++ == 0) first = i;
    EXPECT(wrong == 0,
           "%llu elements are not x0 + a after counters (first: x[%llu] = %g, x0 + a = %g): the "
           "kernel ran more or fewer than once",
           (unsigned long long)wrong, (unsigned long long)first, x[first], x0[first] + a[first]);

    /* The timer after counters: the same clock as before. */
    timed_batch(ops, k, &launch, timer_after, sizeof timer_after, "after counters");
    EXPECT(strncmp(timer_before, timer_after, 5) == 0,
           "the timer changed across counters: '%s' before, '%s' after", timer_before, timer_after);

    /* A second call, one metric: the profiler set up again from nothing. */
    double again = NAN;
    unsigned char again_bad = 1;
    t0 = seconds();
    st = ops->counters(k, &launch, metrics, 1, &again, &again_bad, &err);
    took = seconds() - t0;
    EXPECT(st == KPROF_OK && !again_bad && again > 0, "second counters: %s (bad %d, %g)",
           err.message, again_bad, again);
    printf("second counters (%s only) took %.3f s: %.6g\n", metrics[0], took, again);

    listed l = {0};
    st = ops->counter_list(dev, collect, &l, &err);
    EXPECT(st == KPROF_OK, "counter_list: %s", err.message);
    printf("counter_list: %zu names; %s: \"%s\"\n", l.count, metrics[0], l.dram_what);
    for (int i = 0; i < METRICS - 1; i++)
        EXPECT(l.found[i] == 1, "counter_list named %s %d times", metrics[i], l.found[i]);
    EXPECT(l.found[METRICS - 1] == 0, "counter_list named the made-up metric");
    EXPECT(l.dram_what[0] != '\0', "no description for %s", metrics[0]);

done:
    kp_error_clear(&err);
    if (ops) {
        ops->free(bx);
        ops->free(ba);
        ops->kernel_release(k);
        ops->program_release(prog);
        ops->close(dev);
    }
    kp_build_output_free(&products);
    free(x0);
    free(a);
    free(x);
    if (skipped && !failures) return 77;
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
