/*
 * test_cuda_counters_fake.c — the CUDA backend's counters() and counter_list() driven against
 * fake_cupti (KPROF_CUPTI_LIBRARY, tests/programs/fake_cupti.c) on a device and kernel of the
 * test's own, whose driver calls are stubs: no GPU, no driver.
 *
 * It checks the order of the CUPTI calls around the one dispatch (the flush before Start, the
 * launch between Start and Stop), that every object CUPTI made is released on every path
 * (each call of the sequence made to fail in turn), the words each CUPTI error becomes, the
 * refusals that must not dispatch twice, per-metric fallbacks, what a kernel fault leaves,
 * and the names counter_list passes on.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "tests/unit/test.h"

#include <cupti_result.h>

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

static void (*fake_configure)(const char *fail, int code, int all_passes, int unsupported,
                              size_t ranges);
static const char *(*fake_log)(void);
static void (*fake_note)(const char *event);
static void (*fake_alive)(int *initialized, int *hosts, int *enabled, int *started);

/* ---- the stub driver --------------------------------------------------------------------------
 */

static int context_storage, kernel_storage, flush_storage;
static int kernel_launches, flush_launches;
static int last_was_kernel;
static CUresult kernel_sync_result = CUDA_SUCCESS; /* what waiting for the kernel gives */

static CUresult stub_ctx_set_current(CUcontext ctx)
{
    return ctx == (CUcontext)&context_storage ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult stub_event_record(CUevent ev, CUstream stream)
{
    (void)ev, (void)stream;
    return CUDA_SUCCESS;
}

static CUresult stub_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                            CUstream stream, void **params, void **extra)
{
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)stream;
    (void)params, (void)extra;
    last_was_kernel = f != (CUfunction)&flush_storage;
    if (f == (CUfunction)&flush_storage) {
        flush_launches++;
        fake_note("flush");
    } else {
        kernel_launches++;
        fake_note("launch");
    }
    return CUDA_SUCCESS;
}

static CUresult stub_event_synchronize(CUevent ev)
{
    (void)ev;
    return last_was_kernel ? kernel_sync_result : CUDA_SUCCESS;
}

static CUresult stub_elapsed(float *ms, CUevent start, CUevent end)
{
    (void)start, (void)end;
    *ms = 1.0f;
    return CUDA_SUCCESS;
}

static kp_device dev;
static kp_kernel kernel;

static void reset_device(void)
{
    memset(&dev, 0, sizeof dev);
    dev.context = (CUcontext)&context_storage;
    dev.occ.max_threads_per_block = 1024;
    dev.max_grid[0] = 2147483647;
    dev.max_grid[1] = dev.max_grid[2] = 65535;
    dev.sm_count = 4;
    /* The flush is ready: its kernel is launched through the stub, no module is loaded. */
    dev.flush.function = (CUfunction)&flush_storage;
    dev.flush.bytes = 1 << 20;
    memset(&kernel, 0, sizeof kernel);
    kernel.dev = &dev;
    kernel.function = (CUfunction)&kernel_storage;
    snprintf(kernel.name, sizeof kernel.name, "accumulate");
    snprintf(kernel.symbol, sizeof kernel.symbol, "accumulate");
}

static const kp_launch launch = {.dims = 1, .grid = {1 << 20, 1, 1}, .tg = {256, 1, 1}};

/* ---- helpers ------------------------------------------------------------------------------- */

/* Each word of `order` (space-separated) appears in the log after the one before it. */
static int in_order(const char *log, const char *order)
{
    char words[1024];
    snprintf(words, sizeof words, "%s", order);
    const char *at = log;
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " ")) {
        char token[160];
        snprintf(token, sizeof token, "%s ", w);
        const char *found = strstr(at, token);
        if (!found) {
            fprintf(stderr, "'%s' is missing or out of order in: %s\n", w, log);
            return 0;
        }
        at = found + strlen(token);
    }
    return 1;
}

static int count_of(const char *log, const char *word)
{
    char token[160];
    snprintf(token, sizeof token, "%s ", word);
    int n = 0;
    for (const char *p = strstr(log, token); p; p = strstr(p + 1, token))
        n++;
    return n;
}

/* Nothing CUPTI made is still alive. */
static void check_released(const char *when)
{
    int initialized, hosts, enabled, started;
    fake_alive(&initialized, &hosts, &enabled, &started);
    if (initialized || hosts || enabled || started)
        fprintf(stderr,
                "%s: alive: %d profilers, %d host objects, %d range profilers, %d "
                "ranges\n",
                when, initialized, hosts, enabled, started);
    CHECK(initialized == 0 && hosts == 0 && enabled == 0 && started == 0);
}

static kprof_status run(const char *const *metrics, size_t n, double *values, unsigned char *bad,
                        kp_error *err)
{
    kernel_launches = flush_launches = 0;
    kp_error_clear(err);
    return kp_cuda_counters(&kernel, &launch, metrics, n, values, bad, err);
}

/* ---- the tests ----------------------------------------------------------------------------- */

static void test_sequence(void)
{
    const char *metrics[] = {"dram__bytes_read.sum", "kprof__made_up.sum",
                             "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum",
                             "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
    double values[5];
    unsigned char bad[5];
    kp_error err = {0};
    fake_configure("", 0, 1, 0, 1);
    CHECK_INT(run(metrics, 5, values, bad, &err), KPROF_OK);
    CHECK_NEAR(values[0], 1, 0);
    CHECK(isnan(values[1]));
    CHECK_NEAR(values[2], 3001, 0);
    CHECK_NEAR(values[3], 1, 0);
    CHECK_NEAR(values[4], 2001, 0);
    const unsigned char expect[] = {0, 1, 0, 0, 0};
    CHECK(memcmp(bad, expect, 5) == 0);
    CHECK_INT(kernel_launches, 1);
    CHECK_INT(flush_launches, 1);
    const char *log = fake_log();
    CHECK(in_order(log, "cuptiProfilerInitialize cuptiProfilerDeviceSupported "
                        "cuptiDeviceGetChipName cuptiProfilerGetCounterAvailability "
                        "cuptiProfilerHostInitialize cuptiRangeProfilerEnable "
                        "cuptiRangeProfilerGetCounterDataSize "
                        "cuptiRangeProfilerCounterDataImageInitialize cuptiRangeProfilerSetConfig "
                        "flush cuptiRangeProfilerStart launch cuptiRangeProfilerStop "
                        "cuptiRangeProfilerDecodeData cuptiRangeProfilerGetCounterDataInfo "
                        "cuptiProfilerHostEvaluateToGpuValues cuptiRangeProfilerDisable "
                        "cuptiProfilerHostDeinitialize cuptiProfilerDeInitialize"));
    /* Each distinct name tried alone (4 scratch objects), then the real one: the good three in
     * one call; a single evaluation. */
    CHECK_INT(count_of(log, "cuptiProfilerHostInitialize"), 5);
    CHECK_INT(count_of(log, "cuptiProfilerHostConfigAddMetrics"), 5);
    CHECK_INT(count_of(log, "cuptiProfilerHostEvaluateToGpuValues"), 1);
    check_released("sequence");
    kp_error_clear(&err);
}

/* Every call of the sequence fails in turn: an error (or, where kprof can do without the call,
 * a result), never a second dispatch, and everything released. */
static void test_each_failure(void)
{
    static const char *const calls[] = {
        "cuptiProfilerInitialize",
        "cuptiProfilerDeviceSupported",
        "cuptiDeviceGetChipName",
        "cuptiProfilerGetCounterAvailability",
        "cuptiProfilerHostInitialize",
        "cuptiProfilerHostConfigAddMetrics",
        "cuptiProfilerHostGetConfigImageSize",
        "cuptiProfilerHostGetConfigImage",
        "cuptiProfilerHostGetNumOfPasses",
        "cuptiRangeProfilerEnable",
        "cuptiRangeProfilerGetCounterDataSize",
        "cuptiRangeProfilerCounterDataImageInitialize",
        "cuptiRangeProfilerSetConfig",
        "cuptiRangeProfilerStart",
        "cuptiRangeProfilerStop",
        "cuptiRangeProfilerDecodeData",
        "cuptiRangeProfilerGetCounterDataInfo",
        "cuptiProfilerHostEvaluateToGpuValues",
        "cuptiRangeProfilerDisable",
        "cuptiProfilerHostDeinitialize",
        "cuptiProfilerDeInitialize",
    };
    const char *metrics[] = {"dram__bytes_read.sum", "dram__bytes_write.sum"};
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        const char *call = calls[c];
        double values[2];
        unsigned char bad[2];
        kp_error err = {0};
        fake_configure(call, CUPTI_ERROR_UNKNOWN, 1, 0, 1);
        kprof_status st = run(metrics, 2, values, bad, &err);
        CHECK(kernel_launches <= 1);
        /* Calls kprof can do without: a failed support query says nothing; a name CUPTI
         * will not add is a bad name (NAN), not an error; a failed evaluation is tried per
         * name; a failed release is still a result. */
        int result_expected = strcmp(call, "cuptiProfilerDeviceSupported") == 0 ||
                              strcmp(call, "cuptiProfilerHostConfigAddMetrics") == 0 ||
                              strcmp(call, "cuptiProfilerHostEvaluateToGpuValues") == 0 ||
                              strcmp(call, "cuptiRangeProfilerDisable") == 0 ||
                              strcmp(call, "cuptiProfilerHostDeinitialize") == 0 ||
                              strcmp(call, "cuptiProfilerDeInitialize") == 0;
        if (result_expected) {
            if (st != KPROF_OK) fprintf(stderr, "%s failing: %s\n", call, err.message);
            CHECK_INT(st, KPROF_OK);
            CHECK_INT(kernel_launches, 1);
        } else {
            if (st == KPROF_OK) fprintf(stderr, "%s failing gave no error\n", call);
            CHECK(st != KPROF_OK);
            CHECK(isnan(values[0]) && isnan(values[1]) && bad[0] && bad[1]);
            CHECK_CONTAINS(err.message, call);
        }
        if (strcmp(call, "cuptiProfilerHostConfigAddMetrics") == 0) {
            CHECK(isnan(values[0]) && isnan(values[1]) && bad[0] && bad[1]);
            CHECK(strstr(fake_log(), "cuptiRangeProfilerEnable") == NULL);
        }
        if (strcmp(call, "cuptiProfilerHostEvaluateToGpuValues") == 0) {
            /* The batch failed, then each name alone: NAN and bad, but not an error. */
            CHECK(isnan(values[0]) && isnan(values[1]) && bad[0] && bad[1]);
            CHECK_INT(count_of(fake_log(), call), 3);
        }
        check_released(call);
        kp_error_clear(&err);
    }
}

static void test_error_words(void)
{
    static const struct {
        const char *call;
        int code;
        kprof_status status;
        const char *words;
    } cases[] = {
        {"cuptiRangeProfilerEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, KPROF_UNAVAILABLE,
         "cuda: no permission to read GPU counters (NVreg_RestrictProfilingToAdminUsers=1: run "
         "as root"},
        {"cuptiProfilerInitialize", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, KPROF_UNAVAILABLE,
         "no permission to read GPU counters"},
        {"cuptiRangeProfilerEnable", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
         KPROF_UNAVAILABLE,
         "another profiler (Nsight Compute/Systems, a CUPTI tool) holds the GPU counters"},
        {"cuptiRangeProfilerStart", CUPTI_ERROR_HARDWARE_BUSY, KPROF_UNAVAILABLE,
         "another profiler"},
        {"cuptiRangeProfilerEnable", CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, KPROF_UNAVAILABLE,
         "MIG instance"},
        {"cuptiRangeProfilerEnable", CUPTI_ERROR_NOT_SUPPORTED, KPROF_UNAVAILABLE,
         "compute capability 7.5"},
        {"cuptiProfilerHostInitialize", CUPTI_ERROR_INVALID_CHIP_NAME, KPROF_UNAVAILABLE,
         "does not know chip 'GH100'"},
        {"cuptiProfilerHostConfigAddMetrics", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
         KPROF_UNAVAILABLE, "no permission to read GPU counters"},
        {"cuptiRangeProfilerEnable", CUPTI_ERROR_UNKNOWN, KPROF_BACKEND,
         "cuda: GPU counters: cuptiRangeProfilerEnable failed: CUPTI_ERROR_FAKE (999)"},
    };
    const char *metrics[] = {"dram__bytes_read.sum"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double value;
        unsigned char bad;
        kp_error err = {0};
        fake_configure(cases[i].call, cases[i].code, 1, 0, 1);
        CHECK_INT(run(metrics, 1, &value, &bad, &err), cases[i].status);
        CHECK_CONTAINS(err.message, cases[i].words);
        CHECK(strchr(err.message, '\n') == NULL); /* one line */
        CHECK(kernel_launches == 0 || strcmp(cases[i].call, "cuptiRangeProfilerStart") != 0);
        check_released(cases[i].call);
        kp_error_clear(&err);
    }
}

static void test_refusals(void)
{
    const char *metrics[] = {"dram__bytes_read.sum"};
    double value;
    unsigned char bad;
    kp_error err = {0};

    /* The device cannot be profiled: said before anything is enabled or dispatched. */
    fake_configure("", 0, 1, 1, 1);
    CHECK_INT(run(metrics, 1, &value, &bad, &err), KPROF_UNAVAILABLE);
    CHECK_CONTAINS(err.message, "profiling is not supported for this GPU architecture");
    CHECK(strstr(fake_log(), "cuptiRangeProfilerEnable") == NULL);
    CHECK_INT(kernel_launches, 0);
    check_released("unsupported");

    /* CUPTI wants another pass after kernel replay: refused, the kernel ran once. */
    fake_configure("", 0, 0, 0, 1);
    CHECK_INT(run(metrics, 1, &value, &bad, &err), KPROF_BACKEND);
    CHECK_CONTAINS(err.message, "another pass of accumulate");
    CHECK_INT(kernel_launches, 1);
    CHECK(isnan(value) && bad);
    check_released("another pass");

    /* No range recorded. */
    fake_configure("", 0, 1, 0, 0);
    CHECK_INT(run(metrics, 1, &value, &bad, &err), KPROF_BACKEND);
    CHECK_CONTAINS(err.message, "recorded no range");
    check_released("no range");

    /* Only names the chip refuses: nothing to profile, the dispatch still runs once. */
    const char *unknown[] = {"kprof__made_up.sum", "", NULL};
    double values[3];
    unsigned char bads[3];
    fake_configure("", 0, 1, 0, 1);
    CHECK_INT(run(unknown, 3, values, bads, &err), KPROF_OK);
    CHECK(bads[0] && bads[1] && bads[2] && isnan(values[0]) && isnan(values[2]));
    CHECK_INT(kernel_launches, 1);
    CHECK(strstr(fake_log(), "cuptiRangeProfilerEnable") == NULL);
    check_released("no good names");

    /* One name fails evaluation: it alone is NAN. */
    const char *some[] = {"dram__bytes_read.sum", "kprof__fails_evaluation.sum",
                          "dram__bytes_write.sum"};
    fake_configure("", 0, 1, 0, 1);
    CHECK_INT(run(some, 3, values, bads, &err), KPROF_OK);
    CHECK_NEAR(values[0], 1, 0);
    CHECK(isnan(values[1]) && bads[1]);
    CHECK_NEAR(values[2], 1001, 0);
    CHECK(!bads[0] && !bads[2]);
    CHECK_INT(count_of(fake_log(), "cuptiProfilerHostEvaluateToGpuValues"), 4);
    check_released("evaluation fallback");

    /* No metric at all: nothing is asked of CUPTI's range profiler, one dispatch. */
    fake_configure("", 0, 1, 0, 1);
    CHECK_INT(run(NULL, 0, NULL, NULL, &err), KPROF_OK);
    CHECK_INT(kernel_launches, 1);
    check_released("no metrics");
    kp_error_clear(&err);
}

typedef struct listed {
    int count, sum, per_second, peak, max_rate, ratio_pct, throughput;
    char what[128];
} listed;

static void collect(const char *name, const char *what, void *ctx)
{
    listed *l = ctx;
    l->count++;
    if (strcmp(name, "dram__bytes_read.sum") == 0) {
        l->sum++;
        snprintf(l->what, sizeof l->what, "%s", what);
    }
    l->per_second += strstr(name, "per_second") != NULL;
    l->peak += strstr(name, ".peak_sustained") != NULL;
    l->max_rate += strstr(name, "max_rate") != NULL;
    l->ratio_pct += strcmp(name, "lts__t_sector_hit_rate.pct") == 0;
    l->throughput += strcmp(name, "sm__throughput.sum.pct_of_peak_sustained_active") == 0;
}

static void test_list(void)
{
    kp_error err = {0};
    listed l = {0};
    fake_configure("", 0, 1, 0, 1);
    CHECK_INT(kp_cuda_counter_list(&dev, collect, &l, &err), KPROF_OK);
    /* 2 counters x 5 (4 rollups, a % of peak), a ratio's .pct and .ratio, 2 throughputs. */
    CHECK_INT(l.count, 14);
    CHECK_INT(l.sum, 1);
    CHECK_STR(l.what, "what dram__bytes_read counts");
    CHECK_INT(l.per_second, 0);
    CHECK_INT(l.peak, 0);
    CHECK_INT(l.max_rate, 0);
    CHECK_INT(l.ratio_pct, 1);
    CHECK_INT(l.throughput, 1);
    check_released("list");

    /* Without a counter availability image the list is still given. */
    memset(&l, 0, sizeof l);
    fake_configure("cuptiProfilerGetCounterAvailability", CUPTI_ERROR_UNKNOWN, 1, 0, 1);
    CHECK_INT(kp_cuda_counter_list(&dev, collect, &l, &err), KPROF_OK);
    CHECK_INT(l.count, 14);
    check_released("list without availability");

    fake_configure("cuptiDeviceGetChipName", CUPTI_ERROR_UNKNOWN, 1, 0, 1);
    CHECK_INT(kp_cuda_counter_list(&dev, collect, &l, &err), KPROF_BACKEND);
    CHECK_CONTAINS(err.message, "cuptiDeviceGetChipName");
    check_released("list without a chip name");
    kp_error_clear(&err);
}

/* Last: a fault leaves the context spoiled, and CUPTI's objects on it are not touched again. */
static void test_fault(void)
{
    const char *metrics[] = {"dram__bytes_read.sum"};
    double value;
    unsigned char bad;
    kp_error err = {0};
    fake_configure("", 0, 1, 0, 1);
    kernel_sync_result = CUDA_ERROR_ILLEGAL_ADDRESS;
    CHECK_INT(run(metrics, 1, &value, &bad, &err), KPROF_FAULT);
    kernel_sync_result = CUDA_SUCCESS;
    CHECK_CONTAINS(err.message, "kernel accumulate faulted");
    CHECK(dev.poisoned);
    CHECK(isnan(value) && bad);
    CHECK(strstr(fake_log(), "cuptiRangeProfilerStop") == NULL);
    CHECK(strstr(fake_log(), "cuptiRangeProfilerDisable") == NULL);
    CHECK(strstr(fake_log(), "cuptiProfilerDeInitialize") != NULL);
    int initialized, hosts, enabled, started;
    fake_alive(&initialized, &hosts, &enabled, &started);
    CHECK(initialized == 0 && hosts == 0);
    CHECK_INT(run(metrics, 1, &value, &bad, &err), KPROF_FAULT);
    CHECK_CONTAINS(err.message, "earlier kernel fault");
    kp_error_clear(&err);
}

int main(void)
{
    const char *path = getenv("KPROF_CUPTI_LIBRARY");
    void *fake = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!fake) {
        fprintf(stderr, "KPROF_CUPTI_LIBRARY must name fake_cupti: %s\n",
                path ? dlerror() : "unset");
        return 1;
    }
    *(void **)&fake_configure = dlsym(fake, "fake_cupti_configure");
    *(void **)&fake_log = dlsym(fake, "fake_cupti_log");
    *(void **)&fake_note = dlsym(fake, "fake_cupti_note");
    *(void **)&fake_alive = dlsym(fake, "fake_cupti_alive");
    if (!fake_configure || !fake_log || !fake_note || !fake_alive) {
        fprintf(stderr, "%s is not fake_cupti\n", path);
        return 1;
    }
    kp_cu.cuCtxSetCurrent = stub_ctx_set_current;
    kp_cu.cuEventRecord = stub_event_record;
    kp_cu.cuLaunchKernel = stub_launch;
    kp_cu.cuEventSynchronize = stub_event_synchronize;
    kp_cu.cuEventElapsedTime = stub_elapsed;
    reset_device();
    test_sequence();
    test_each_failure();
    test_error_words();
    test_refusals();
    test_list();
    test_fault();
    dlclose(fake);
    return kp_test_failures ? 1 : 0;
}
