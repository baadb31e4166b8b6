/*
 * counters.c — hardware counters of one dispatch on the CUDA backend (kp_backend_ops.counters)
 * and the metric names a device offers (kp_backend_ops.counter_list), through CUPTI's Range
 * Profiler and its host API (src/runtime/cupti_profiler_api.h), by ncu's metric names.
 *
 * One dispatch is profiled in auto-range mode (the kernel is the range) with kernel replay:
 * CUPTI replays that one launch as many times as the metrics need passes, saving device memory
 * before the first pass and restoring it between them, so the buffers end as after one
 * dispatch. None of those runs is a timing: kprof's timings come from dispatch and
 * dispatch_batch alone. Before the profiled launch the L2 is flushed (flush.c), as ncu's
 * default --cache-control all does, so DRAM traffic is the kernel's own, not what an earlier
 * copy or dispatch left in the cache.
 *
 * Order with the CUPTI timer (cupti_timer.c): counters() runs on its own, never inside a
 * dispatch_batch; call it before or after the timed dispatches (the lab calls it after them,
 * so that no profiling state is ever in place under a timing). It switches the timer's kernel
 * records off (kp_cupti_timer_disable): no record of a replayed launch reaches the timer, and
 * no activity kind is on during the profiling session. The next dispatch_batch switches them
 * on again and discards every record older than itself. The profiler is initialized and
 * deinitialized within each call (its driver hooks are gone when the call returns), and one
 * mutex keeps two calls from overlapping: CUPTI's profiler state is per process.
 *
 * The call sequence. Every CUPTI parameter struct is zeroed, its structSize set to the
 * <Type>_STRUCT_SIZE macro of the headers kprof was built with (offsetof + sizeof of the last
 * field CUPTI reads: a newer CUPTI accepts an older size) and pPriv left NULL; "->" names the
 * [out] fields read back. Strings CUPTI returns are its own storage.
 *
 *   counters(k, launch, metrics[n]):
 *    1. kp_cuda_enter (the device's primary context current); kp_cupti_timer_disable.
 *    2. cuptiProfilerInitialize {}: loads PerfWorks (libnvperf_*), hooks the driver.
 *    3. cuptiProfilerDeviceSupported {cuDevice, api = CUPTI_PROFILER_RANGE_PROFILING}
 *       -> isSupported, and architecture/sli/vGpu/confidentialCompute/cmp/wsl saying why not.
 *    4. cuptiDeviceGetChipName {deviceIndex = the CUDA ordinal} -> pChipName ("GH100").
 *    5. cuptiProfilerGetCounterAvailability {ctx, pCounterAvailabilityImage NULL}
 *       -> counterAvailabilityImageSize; again with a buffer of that size -> the image.
 *    6. The plan (host side, no GPU: kp_cuda_counter_plan_make). Each distinct name is tried
 *       alone in a scratch host object — cuptiProfilerHostInitialize {profilerType =
 *       CUPTI_PROFILER_TYPE_RANGE_PROFILER, pChipName, pCounterAvailabilityImage} -> pHostObject;
 *       cuptiProfilerHostConfigAddMetrics {pHostObject, ppMetricNames = &name, numMetrics 1};
 *       cuptiProfilerHostDeinitialize {pHostObject} — because a name CUPTI refuses leaves a host
 *       object refusing every later name (CUPTI_ERROR_UNKNOWN), and one bad name among several
 *       in a single ConfigAddMetrics crashed CUPTI 13.0 (seen on its GH100 tables). A refused
 *       name gets NAN and bad[i] = 1, whatever the code, unless it is one kprof explains
 *       (permission, another profiler: the call fails with those words). The good ones then
 *       go into the real host object in one ConfigAddMetrics (one call schedules them in fewer
 *       passes than one call per name: 8 against 13 for the five metrics of
 *       tests/gpu/test_counters_cuda.c, GH100 without an availability image), and
 *       cuptiProfilerHostGetConfigImageSize {pHostObject}
 *       -> configImageSize; cuptiProfilerHostGetConfigImage {pHostObject, configImageSize,
 *       pConfigImage}; cuptiProfilerHostGetNumOfPasses {configImageSize, pConfigImage}
 *       -> numOfPasses.
 *    7. cuptiRangeProfilerEnable {ctx} -> pRangeProfilerObject.
 *    8. cuptiRangeProfilerGetCounterDataSize {object, pMetricNames, numMetrics,
 *       maxNumOfRanges 1, maxNumRangeTreeNodes 1} -> counterDataSize; a buffer of that size;
 *       cuptiRangeProfilerCounterDataImageInitialize {object, counterDataSize, pCounterData}.
 *    9. cuptiRangeProfilerSetConfig {object, configSize, pConfig, counterDataImageSize,
 *       pCounterDataImage, range = CUPTI_AutoRange, replayMode = CUPTI_KernelReplay,
 *       maxRangesPerPass 1, numNestingLevels 1, minNestingLevel 1, passIndex 0,
 *       targetNestingLevel 1}.
 *   10. The L2 flush (its kernel runs before Start: outside the profiled boundary).
 *   11. cuptiRangeProfilerStart {object}; kp_cuda_dispatch (launch.c's own launch, events and
 *       wait); cuptiRangeProfilerStop {object} -> isAllPassSubmitted. Under kernel replay CUPTI
 *       runs every pass inside the one launch and isAllPassSubmitted is always 1; were it 0, a
 *       second Start/dispatch/Stop would run the kernel again on its own output, so kprof fails
 *       instead (BACKEND) rather than break the one-dispatch promise.
 *   12. cuptiRangeProfilerDecodeData {object} -> numOfRangeDropped (0 expected).
 *   13. cuptiRangeProfilerGetCounterDataInfo {pCounterDataImage, counterDataImageSize}
 *       -> numTotalRanges (1: the dispatch).
 *   14. cuptiProfilerHostEvaluateToGpuValues {pHostObject, pCounterDataImage,
 *       counterDataImageSize, rangeIndex 0, ppMetricNames, numMetrics, pMetricValues}; should
 *       it fail, each name is evaluated alone and those that still fail become NAN and bad.
 *   15. On every path: cuptiRangeProfilerDisable {object} (skipped when a kernel fault has
 *       spoiled the context), cuptiProfilerHostDeinitialize {pHostObject}, the images freed,
 *       cuptiProfilerDeInitialize {}.
 *
 *   counter_list(dev, fn): steps 1 (context only), 2, 4 and 5 (an availability image that
 *   cannot be had is left out: the host API takes NULL), then cuptiProfilerHostInitialize;
 *   for each metric type (counter, ratio, throughput) cuptiProfilerHostGetBaseMetrics
 *   {pHostObject, metricType} -> ppMetricNames, numMetrics; per base name
 *   cuptiProfilerHostGetMetricProperties {pHostObject, pMetricName} -> pDescription and
 *   cuptiProfilerHostGetSubMetrics {pHostObject, metricType, pMetricName} -> ppSubMetrics
 *   (".sum", ".avg.pct_of_peak_sustained_elapsed", ".pct", ...); then HostDeinitialize and
 *   DeInitialize.
 *
 * CUPTI errors become one line saying what the user can do: no permission (the driver
 * restricts counters to administrators), another profiler holding the counters, a device or
 * configuration that cannot be profiled — all UNAVAILABLE, so the caller goes on with the
 * timing; anything else is BACKEND with CUPTI's own text.
 *
 * A hung kernel: under kernel replay CUPTI serializes the launch and may wait for it inside
 * cuLaunchKernel, where --timeout cannot reach; the timeout applies to the wait that follows.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cupti_timer.h"
#include "runtime/cupti_profiler_api.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CUPTI's profiler state is per process: one counters() or counter_list() at a time. */
static pthread_mutex_t kp_cuda_counters_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- errors --------------------------------------------------------------------------------- */

/* The Range Profiler's table, or KPROF_UNAVAILABLE saying why the GPU counters cannot be had. */
static kprof_status kp_cuda_counters_load(kp_error *err)
{
    kp_error why = {0};
    if (kp_cupti_profiler_load(&why) == KPROF_OK) return KPROF_OK;
    kprof_status st =
        kp_error_set(err, KPROF_UNAVAILABLE, "cuda: GPU counters unavailable: %s", why.message);
    kp_error_clear(&why);
    return st;
}

/* What a CUPTI result means to a user, when it is one kprof can explain: UNAVAILABLE with the
 * words; NULL for the rest (BACKEND, CUPTI's own text). */
static const char *kp_cuda_counters_reason(CUptiResult r)
{
    switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        return "no permission to read GPU counters (NVreg_RestrictProfilingToAdminUsers=1: run "
               "as root, or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0; "
               "https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "no permission to read GPU counters on this virtual GPU (the hypervisor does not "
               "allow profiling)";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
        return "another profiler (Nsight Compute/Systems, a CUPTI tool) holds the GPU counters";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
        return "this device cannot be profiled by CUPTI's Range Profiler (it needs compute "
               "capability 7.5 or newer)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        return "GPU counters cannot be read on this virtual GPU";
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        return "GPU counters cannot be read in confidential computing mode";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
        return "GPU counters cannot be read on a Crypto Mining Processor";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        return "GPU counters cannot be read on a MIG instance";
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
        return "GPU counters cannot be read on an SLI device";
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        return "GPU counters cannot be read under WSL with this driver";
    case CUPTI_ERROR_INVALID_CHIP_NAME:
        return "this CUPTI does not know the device's chip (a newer CUPTI is needed)";
    default:
        return NULL;
    }
}

/* A failed CUPTI call: "cuda: <reason> (call: CUPTI text)" as UNAVAILABLE, or "cuda: GPU
 * counters: call failed: CUPTI text" as BACKEND. */
static kprof_status kp_cuda_counters_fail(kp_error *err, const char *call, CUptiResult r)
{
    const char *reason = kp_cuda_counters_reason(r);
    const char *text = kp_cupti_profiler_result_text(r);
    if (reason)
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: %s (%s: %s)", reason, call, text);
    return kp_error_set(err, KPROF_BACKEND, "cuda: GPU counters: %s failed: %s", call, text);
}

/* cuptiProfilerInitialize failed: say so, and whether PerfWorks, which it loads from beside
 * libcupti, is missing there. */
static kprof_status kp_cuda_counters_init_fail(kp_error *err, CUptiResult r)
{
    if (kp_cuda_counters_reason(r)) return kp_cuda_counters_fail(err, "cuptiProfilerInitialize", r);
    char where[1024] = "";
    Dl_info info;
    void *sym = *(void **)&kp_cuptip.cuptiProfilerInitialize;
    if (dladdr(sym, &info) && info.dli_fname) {
        snprintf(where, sizeof where, "%s", info.dli_fname);
        char *slash = strrchr(where, '/');
        if (slash) {
            slash[1] = '\0';
            char host[1100];
            snprintf(host, sizeof host, "%slibnvperf_host.so", where);
            if (access(host, R_OK) != 0)
                return kp_error_set(err, KPROF_UNAVAILABLE,
                                    "cuda: GPU counters: cuptiProfilerInitialize failed: %s "
                                    "(libnvperf_host.so, which CUPTI loads, is not in %s)",
                                    kp_cupti_profiler_result_text(r), where);
        }
    }
    return kp_error_set(err, KPROF_BACKEND,
                        "cuda: GPU counters: cuptiProfilerInitialize failed: %s",
                        kp_cupti_profiler_result_text(r));
}

static const char *kp_cuda_support_level_name(CUpti_Profiler_Support_Level level)
{
    return level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? "disabled" : "not supported";
}

/* cuptiProfilerDeviceSupported said no: which part of the configuration, in words. */
static kprof_status kp_cuda_counters_unsupported(kp_error *err,
                                                 const CUpti_Profiler_DeviceSupported_Params *p)
{
    struct {
        CUpti_Profiler_Support_Level level;
        const char *what;
    } parts[] = {
        {p->architecture, "this GPU architecture (the Range Profiler needs compute capability 7.5 "
                          "or newer)"},
        {p->vGpu, "this virtual GPU"},
        {p->confidentialCompute, "confidential computing mode"},
        {p->cmp, "a Crypto Mining Processor"},
        {p->sli, "SLI"},
        {p->wsl, "WSL"},
    };
    const char *what = "this device or its configuration";
    CUpti_Profiler_Support_Level level = p->isSupported;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i].level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
            what = parts[i].what;
            level = parts[i].level;
            break;
        }
    }
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "cuda: GPU counters cannot be read: profiling is %s for %s "
                        "(cuptiProfilerDeviceSupported)",
                        kp_cuda_support_level_name(level), what);
}

/* ---- the host side: names, config image, evaluation ------------------------------------------ */

struct kp_cuda_counter_plan {
    CUpti_Profiler_Host_Object *host; /* the chip's host object, the good names added */
    const char **names;               /* the distinct good names (the caller's strings) */
    size_t count;
    long *slot; /* per requested metric: its index in names, or -1 when bad */
    size_t requested;
    uint8_t *config; /* the config image */
    size_t config_size;
    size_t passes;
};

static CUptiResult kp_cuda_host_open(const char *chip, const uint8_t *availability,
                                     CUpti_Profiler_Host_Object **out)
{
    CUpti_Profiler_Host_Initialize_Params p = {
        .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
        .profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER,
        .pChipName = chip,
        .pCounterAvailabilityImage = availability,
    };
    CUptiResult r = kp_cuptip.cuptiProfilerHostInitialize(&p);
    *out = r == CUPTI_SUCCESS ? p.pHostObject : NULL;
    return r;
}

static void kp_cuda_host_close(CUpti_Profiler_Host_Object *host)
{
    if (!host) return;
    CUpti_Profiler_Host_Deinitialize_Params p = {
        .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, .pHostObject = host};
    kp_cuptip.cuptiProfilerHostDeinitialize(&p);
}

static CUptiResult kp_cuda_host_add(CUpti_Profiler_Host_Object *host, const char **names, size_t n)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params p = {
        .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
        .pHostObject = host,
        .ppMetricNames = names,
        .numMetrics = n,
    };
    return kp_cuptip.cuptiProfilerHostConfigAddMetrics(&p);
}

/* Whether CUPTI takes `name` for the Range Profiler on this chip: added alone to a host object
 * of its own (see step 6 above). KPROF_OK with *taken 1 yes, 0 no (any refusal: CUPTI 13.0
 * answers an unknown name INVALID_PARAMETER and a base name without its rollup the same); a
 * failure (kp_cuda_counters_fail's status, err filled) when no host object could be made or the
 * refusal is one kprof explains (permission, another profiler). */
static kprof_status kp_cuda_metric_ok(const char *chip, const uint8_t *availability,
                                      const char *name, int *taken, kp_error *err)
{
    *taken = 0;
    CUpti_Profiler_Host_Object *scratch = NULL;
    CUptiResult r = kp_cuda_host_open(chip, availability, &scratch);
    if (r != CUPTI_SUCCESS)
        return kp_cuda_counters_fail(err, "cuptiProfilerHostInitialize / ConfigAddMetrics", r);
    const char *one[1] = {name};
    CUptiResult added = kp_cuda_host_add(scratch, one, 1);
    kp_cuda_host_close(scratch);
    if (added != CUPTI_SUCCESS && kp_cuda_counters_reason(added))
        return kp_cuda_counters_fail(err, "cuptiProfilerHostInitialize / ConfigAddMetrics", added);
    *taken = added == CUPTI_SUCCESS;
    return KPROF_OK;
}

void kp_cuda_counter_plan_free(kp_cuda_counter_plan *plan)
{
    if (!plan) return;
    kp_cuda_host_close(plan->host);
    free(plan->names);
    free(plan->slot);
    free(plan->config);
    free(plan);
}

size_t kp_cuda_counter_plan_passes(const kp_cuda_counter_plan *plan)
{
    return plan ? plan->passes : 0;
}

size_t kp_cuda_counter_plan_count(const kp_cuda_counter_plan *plan)
{
    return plan ? plan->count : 0;
}

kprof_status kp_cuda_counter_plan_make(const char *chip, const uint8_t *availability,
                                       const char *const *metrics, size_t n, unsigned char *bad,
                                       kp_cuda_counter_plan **out, kp_error *err)
{
    *out = NULL;
    kprof_status loaded = kp_cuda_counters_load(err);
    if (loaded != KPROF_OK) return loaded;
    kprof_status st = KPROF_OK;
    CUptiResult r = CUPTI_SUCCESS;
    kp_cuda_counter_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return kp_error_nomem(err);
    plan->requested = n;
    plan->names = calloc(n ? n : 1, sizeof *plan->names);
    plan->slot = calloc(n ? n : 1, sizeof *plan->slot);
    if (!plan->names || !plan->slot) {
        st = kp_error_nomem(err);
        goto fail;
    }
    r = kp_cuda_host_open(chip, availability, &plan->host);
    if (r != CUPTI_SUCCESS) {
        st = r == CUPTI_ERROR_INVALID_CHIP_NAME || r == CUPTI_ERROR_INVALID_PARAMETER
                 ? kp_error_set(err, KPROF_UNAVAILABLE,
                                "cuda: this CUPTI does not know chip '%s' (a newer CUPTI is "
                                "needed for the GPU counters): cuptiProfilerHostInitialize: %s",
                                chip, kp_cupti_profiler_result_text(r))
                 : kp_cuda_counters_fail(err, "cuptiProfilerHostInitialize", r);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        plan->slot[i] = -1;
        if (bad) bad[i] = 1;
        const char *name = metrics[i];
        if (!name || !*name) continue;
        size_t seen = 0;
        while (seen < plan->count && strcmp(plan->names[seen], name) != 0)
            seen++;
        if (seen < plan->count) {
            plan->slot[i] = (long)seen;
        } else {
            /* A name asked for twice but refused the first time is refused again here; rare
             * enough not to keep a list of refusals. */
            int ok = 0;
            st = kp_cuda_metric_ok(chip, availability, name, &ok, err);
            if (st != KPROF_OK) goto fail;
            if (!ok) continue;
            plan->names[plan->count] = name;
            plan->slot[i] = (long)plan->count++;
        }
        if (bad) bad[i] = 0;
    }
    if (plan->count == 0) {
        *out = plan;
        return KPROF_OK;
    }
    r = kp_cuda_host_add(plan->host, plan->names, plan->count);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_fail(err, "cuptiProfilerHostConfigAddMetrics", r);
        goto fail;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params size = {
        .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
        .pHostObject = plan->host,
    };
    r = kp_cuptip.cuptiProfilerHostGetConfigImageSize(&size);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_fail(err, "cuptiProfilerHostGetConfigImageSize", r);
        goto fail;
    }
    plan->config_size = size.configImageSize;
    plan->config = calloc(1, plan->config_size ? plan->config_size : 1);
    if (!plan->config) {
        st = kp_error_nomem(err);
        goto fail;
    }
    CUpti_Profiler_Host_GetConfigImage_Params image = {
        .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
        .pHostObject = plan->host,
        .configImageSize = plan->config_size,
        .pConfigImage = plan->config,
    };
    r = kp_cuptip.cuptiProfilerHostGetConfigImage(&image);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_fail(err, "cuptiProfilerHostGetConfigImage", r);
        goto fail;
    }
    CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
        .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE,
        .configImageSize = plan->config_size,
        .pConfigImage = plan->config,
    };
    r = kp_cuptip.cuptiProfilerHostGetNumOfPasses(&passes);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_fail(err, "cuptiProfilerHostGetNumOfPasses", r);
        goto fail;
    }
    plan->passes = passes.numOfPasses;
    *out = plan;
    return KPROF_OK;
fail:
    kp_cuda_counter_plan_free(plan);
    return st;
}

/* Evaluate `count` names of the plan (from index first) in range 0 of the counter data. */
static CUptiResult kp_cuda_evaluate(const kp_cuda_counter_plan *plan, const uint8_t *data,
                                    size_t data_size, size_t first, size_t count, double *values)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {
        .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
        .pHostObject = plan->host,
        .pCounterDataImage = data,
        .counterDataImageSize = data_size,
        .rangeIndex = 0,
        .ppMetricNames = plan->names + first,
        .numMetrics = count,
        .pMetricValues = values,
    };
    return kp_cuptip.cuptiProfilerHostEvaluateToGpuValues(&p);
}

/* values[i]/bad[i] for every requested metric from the decoded counter data. */
static void kp_cuda_counter_plan_evaluate(const kp_cuda_counter_plan *plan, const uint8_t *data,
                                          size_t data_size, double *values, unsigned char *bad)
{
    double *got = calloc(plan->count ? plan->count : 1, sizeof *got);
    unsigned char *ok = calloc(plan->count ? plan->count : 1, 1);
    if (got && ok) {
        if (kp_cuda_evaluate(plan, data, data_size, 0, plan->count, got) == CUPTI_SUCCESS) {
            memset(ok, 1, plan->count);
        } else {
            for (size_t j = 0; j < plan->count; j++)
                ok[j] = kp_cuda_evaluate(plan, data, data_size, j, 1, &got[j]) == CUPTI_SUCCESS;
        }
    }
    for (size_t i = 0; i < plan->requested; i++) {
        long j = plan->slot[i];
        int good = j >= 0 && got && ok && ok[j] && !isnan(got[j]);
        values[i] = good ? got[j] : NAN;
        if (bad) bad[i] = !good;
    }
    free(got);
    free(ok);
}

/* ---- the target side: one profiled dispatch ------------------------------------------------- */

/* The chip name and counter availability image of the device whose context is current (steps
 * 4 and 5). *availability is malloc'ed, or NULL when want_availability is 0 and it could not be
 * had. */
static kprof_status kp_cuda_counters_device(kp_device *dev, int want_availability,
                                            const char **chip, uint8_t **availability,
                                            kp_error *err)
{
    *chip = NULL;
    *availability = NULL;
    CUpti_Device_GetChipName_Params name = {
        .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
        .deviceIndex = (size_t)dev->id,
    };
    CUptiResult r = kp_cuptip.cuptiDeviceGetChipName(&name);
    if (r != CUPTI_SUCCESS || !name.pChipName)
        return kp_cuda_counters_fail(err, "cuptiDeviceGetChipName", r);
    *chip = name.pChipName;
    CUpti_Profiler_GetCounterAvailability_Params size = {
        .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
        .ctx = dev->context,
    };
    r = kp_cuptip.cuptiProfilerGetCounterAvailability(&size);
    if (r == CUPTI_SUCCESS && size.counterAvailabilityImageSize > 0) {
        uint8_t *image = calloc(1, size.counterAvailabilityImageSize);
        if (!image) return kp_error_nomem(err);
        CUpti_Profiler_GetCounterAvailability_Params fill = {
            .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
            .ctx = dev->context,
            .counterAvailabilityImageSize = size.counterAvailabilityImageSize,
            .pCounterAvailabilityImage = image,
        };
        r = kp_cuptip.cuptiProfilerGetCounterAvailability(&fill);
        if (r == CUPTI_SUCCESS) {
            *availability = image;
            return KPROF_OK;
        }
        free(image);
    }
    if (!want_availability) return KPROF_OK;
    return kp_cuda_counters_fail(err, "cuptiProfilerGetCounterAvailability",
                                 r == CUPTI_SUCCESS ? CUPTI_ERROR_UNKNOWN : r);
}

/* Steps 2 and 3: the profiler initialized (*initialized = 1) on a device that supports it. */
static kprof_status kp_cuda_counters_begin(kp_device *dev, int *initialized, kp_error *err)
{
    *initialized = 0;
    CUpti_Profiler_Initialize_Params init = {.structSize =
                                                 CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = kp_cuptip.cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) return kp_cuda_counters_init_fail(err, r);
    *initialized = 1;
    CUpti_Profiler_DeviceSupported_Params supported = {
        .structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE,
        .cuDevice = dev->id,
        .api = CUPTI_PROFILER_RANGE_PROFILING,
    };
    r = kp_cuptip.cuptiProfilerDeviceSupported(&supported);
    /* A failed query says nothing; the calls that follow fail with their own codes. */
    if (r == CUPTI_SUCCESS && supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return kp_cuda_counters_unsupported(err, &supported);
    return KPROF_OK;
}

static void kp_cuda_counters_end(int initialized)
{
    if (!initialized) return;
    CUpti_Profiler_DeInitialize_Params p = {.structSize =
                                                CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    kp_cuptip.cuptiProfilerDeInitialize(&p);
}

/* Steps 7 to 14 on an enabled range profiler object. */
static kprof_status kp_cuda_counters_collect(kp_kernel *k, const kp_launch *launch,
                                             const kp_cuda_counter_plan *plan,
                                             CUpti_RangeProfiler_Object *object, uint8_t **data,
                                             size_t *data_size, kp_error *err)
{
    kp_device *dev = k->dev;
    CUpti_RangeProfiler_GetCounterDataSize_Params size = {
        .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
        .pRangeProfilerObject = object,
        .pMetricNames = plan->names,
        .numMetrics = plan->count,
        .maxNumOfRanges = 1,
        .maxNumRangeTreeNodes = 1,
    };
    CUptiResult r = kp_cuptip.cuptiRangeProfilerGetCounterDataSize(&size);
    if (r != CUPTI_SUCCESS)
        return kp_cuda_counters_fail(err, "cuptiRangeProfilerGetCounterDataSize", r);
    *data_size = size.counterDataSize;
    *data = calloc(1, *data_size ? *data_size : 1);
    if (!*data) return kp_error_nomem(err);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
        .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
        .pRangeProfilerObject = object,
        .counterDataSize = *data_size,
        .pCounterData = *data,
    };
    r = kp_cuptip.cuptiRangeProfilerCounterDataImageInitialize(&init);
    if (r != CUPTI_SUCCESS)
        return kp_cuda_counters_fail(err, "cuptiRangeProfilerCounterDataImageInitialize", r);
    CUpti_RangeProfiler_SetConfig_Params config = {
        .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
        .pRangeProfilerObject = object,
        .configSize = plan->config_size,
        .pConfig = plan->config,
        .counterDataImageSize = *data_size,
        .pCounterDataImage = *data,
        .range = CUPTI_AutoRange,
        .replayMode = CUPTI_KernelReplay,
        .maxRangesPerPass = 1,
        .numNestingLevels = 1,
        .minNestingLevel = 1,
        .passIndex = 0,
        .targetNestingLevel = 1,
    };
    r = kp_cuptip.cuptiRangeProfilerSetConfig(&config);
    if (r != CUPTI_SUCCESS) return kp_cuda_counters_fail(err, "cuptiRangeProfilerSetConfig", r);

    /* A cold L2, as ncu's default; a device without the flush is profiled as it is. */
    double flush_ns = 0;
    kp_error flush_err = {0};
    kprof_status st = kp_cuda_flush_cache(dev, &flush_ns, NULL, &flush_err);
    if (st != KPROF_OK && st != KPROF_UNAVAILABLE) {
        kp_error_set(err, st, "%s", flush_err.message);
        kp_error_clear(&flush_err);
        return st;
    }
    kp_error_clear(&flush_err);

    CUpti_RangeProfiler_Start_Params start = {
        .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, .pRangeProfilerObject = object};
    r = kp_cuptip.cuptiRangeProfilerStart(&start);
    if (r != CUPTI_SUCCESS) return kp_cuda_counters_fail(err, "cuptiRangeProfilerStart", r);
    double ns = 0;
    st = kp_cuda_dispatch(k, launch, &ns, NULL, err);
    CUpti_RangeProfiler_Stop_Params stop = {
        .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, .pRangeProfilerObject = object};
    r = dev->poisoned ? CUPTI_SUCCESS : kp_cuptip.cuptiRangeProfilerStop(&stop);
    if (st != KPROF_OK) return st;
    if (r != CUPTI_SUCCESS) return kp_cuda_counters_fail(err, "cuptiRangeProfilerStop", r);
    if (!stop.isAllPassSubmitted)
        return kp_error_set(err, KPROF_BACKEND,
                            "cuda: GPU counters: CUPTI asked for another pass of %s after kernel "
                            "replay (pass %zu); kprof does not dispatch it twice",
                            k->name, stop.passIndex);
    CUpti_RangeProfiler_DecodeData_Params decode = {
        .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE,
        .pRangeProfilerObject = object};
    r = kp_cuptip.cuptiRangeProfilerDecodeData(&decode);
    if (r != CUPTI_SUCCESS) return kp_cuda_counters_fail(err, "cuptiRangeProfilerDecodeData", r);
    CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
        .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
        .pCounterDataImage = *data,
        .counterDataImageSize = *data_size,
    };
    r = kp_cuptip.cuptiRangeProfilerGetCounterDataInfo(&info);
    if (r != CUPTI_SUCCESS)
        return kp_cuda_counters_fail(err, "cuptiRangeProfilerGetCounterDataInfo", r);
    if (info.numTotalRanges < 1)
        return kp_error_set(err, KPROF_BACKEND,
                            "cuda: GPU counters: CUPTI recorded no range for the dispatch of %s "
                            "(%zu dropped)",
                            k->name, decode.numOfRangeDropped);
    return KPROF_OK;
}

kprof_status kp_cuda_counters(kp_kernel *k, const kp_launch *launch, const char *const *metrics,
                              size_t n, double *values, unsigned char *bad, kp_error *err)
{
    for (size_t i = 0; i < n; i++) {
        values[i] = NAN;
        if (bad) bad[i] = 1;
    }
    if (n > 0 && !metrics)
        return kp_error_set(err, KPROF_INVALID, "cuda: GPU counters: no metric names given");
    kp_device *dev = k->dev;
    kprof_status loaded = kp_cuda_counters_load(err);
    if (loaded != KPROF_OK) return loaded;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) return st;

    int initialized = 0;
    const char *chip = NULL;
    uint8_t *availability = NULL, *data = NULL;
    size_t data_size = 0;
    kp_cuda_counter_plan *plan = NULL;
    CUpti_RangeProfiler_Object *object = NULL;
    CUpti_RangeProfiler_Enable_Params enable = {
        .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, .ctx = dev->context};
    CUptiResult r = CUPTI_SUCCESS;
    pthread_mutex_lock(&kp_cuda_counters_lock);
    kp_cupti_timer_disable();
    st = kp_cuda_counters_begin(dev, &initialized, err);
    if (st != KPROF_OK) goto done;
    st = kp_cuda_counters_device(dev, 1, &chip, &availability, err);
    if (st != KPROF_OK) goto done;
    st = kp_cuda_counter_plan_make(chip, availability, metrics, n, bad, &plan, err);
    if (st != KPROF_OK) goto done;
    if (plan->count == 0) {
        /* Nothing the chip can count: the dispatch still runs once, as promised. */
        double ns = 0;
        st = kp_cuda_dispatch(k, launch, &ns, NULL, err);
        goto done;
    }
    r = kp_cuptip.cuptiRangeProfilerEnable(&enable);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_fail(err, "cuptiRangeProfilerEnable", r);
        goto done;
    }
    object = enable.pRangeProfilerObject;
    st = kp_cuda_counters_collect(k, launch, plan, object, &data, &data_size, err);
    if (st == KPROF_OK) kp_cuda_counter_plan_evaluate(plan, data, data_size, values, bad);
done:
    if (object && !dev->poisoned) {
        CUpti_RangeProfiler_Disable_Params disable = {
            .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
            .pRangeProfilerObject = object};
        kp_cuptip.cuptiRangeProfilerDisable(&disable);
    }
    kp_cuda_counter_plan_free(plan);
    free(data);
    free(availability);
    kp_cuda_counters_end(initialized);
    pthread_mutex_unlock(&kp_cuda_counters_lock);
    if (st != KPROF_OK)
        for (size_t i = 0; i < n; i++) {
            values[i] = NAN;
            if (bad) bad[i] = 1;
        }
    return st;
}

/* ---- the names a chip offers ---------------------------------------------------------------- */

/* Which submetrics counter_list shows: the rollups (.sum .avg .max .min), a ratio as a
 * percentage or ratio, and every % of peak; not the per-second, per-cycle and peak rates
 * (a counter has 40 submetrics; these are the ones ncu's sections read). */
static int kp_cuda_submetric_listed(const char *sub)
{
    static const char *const rollups[] = {".sum", ".avg", ".max", ".min", ".pct", ".ratio"};
    for (size_t i = 0; i < sizeof rollups / sizeof rollups[0]; i++)
        if (strcmp(sub, rollups[i]) == 0) return 1;
    static const char *const pct[] = {".pct_of_peak_sustained_active",
                                      ".pct_of_peak_sustained_elapsed"};
    size_t len = strlen(sub);
    for (size_t i = 0; i < 2; i++) {
        size_t tail = strlen(pct[i]);
        if (len > tail && strcmp(sub + len - tail, pct[i]) == 0) return 1;
    }
    return 0;
}

kprof_status kp_cuda_counter_list_chip(const char *chip, const uint8_t *availability,
                                       void (*fn)(const char *name, const char *what, void *ctx),
                                       void *ctx, kp_error *err)
{
    kprof_status loaded = kp_cuda_counters_load(err);
    if (loaded != KPROF_OK) return loaded;
    CUpti_Profiler_Host_Object *host = NULL;
    CUptiResult r = kp_cuda_host_open(chip, availability, &host);
    if (r != CUPTI_SUCCESS)
        return r == CUPTI_ERROR_INVALID_CHIP_NAME || r == CUPTI_ERROR_INVALID_PARAMETER
                   ? kp_error_set(err, KPROF_UNAVAILABLE,
                                  "cuda: this CUPTI does not know chip '%s' (a newer CUPTI is "
                                  "needed for the GPU counters): cuptiProfilerHostInitialize: %s",
                                  chip, kp_cupti_profiler_result_text(r))
                   : kp_cuda_counters_fail(err, "cuptiProfilerHostInitialize", r);
    kprof_status st = KPROF_OK;
    char *name = NULL;
    size_t name_cap = 0;
    for (int type = 0; type < CUPTI_METRIC_TYPE__COUNT && st == KPROF_OK; type++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params base = {
            .structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE,
            .pHostObject = host,
            .metricType = (CUpti_MetricType)type,
        };
        r = kp_cuptip.cuptiProfilerHostGetBaseMetrics(&base);
        if (r != CUPTI_SUCCESS) {
            st = kp_cuda_counters_fail(err, "cuptiProfilerHostGetBaseMetrics", r);
            break;
        }
        for (size_t i = 0; i < base.numMetrics; i++) {
            const char *metric = base.ppMetricNames[i];
            CUpti_Profiler_Host_GetMetricProperties_Params props = {
                .structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE,
                .pHostObject = host,
                .pMetricName = metric,
            };
            const char *what = "";
            if (kp_cuptip.cuptiProfilerHostGetMetricProperties(&props) == CUPTI_SUCCESS &&
                props.pDescription)
                what = props.pDescription;
            CUpti_Profiler_Host_GetSubMetrics_Params subs = {
                .structSize = CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE,
                .pHostObject = host,
                .metricType = (CUpti_MetricType)type,
                .pMetricName = metric,
            };
            if (kp_cuptip.cuptiProfilerHostGetSubMetrics(&subs) != CUPTI_SUCCESS) continue;
            for (size_t j = 0; j < subs.numOfSubmetrics; j++) {
                const char *sub = subs.ppSubMetrics[j];
                if (!sub) continue;
                /* CUPTI 13.0 gives ".sum"; a bare "sum" gets its dot. */
                const char *dot = sub[0] == '.' ? "" : ".";
                char spelled[128];
                snprintf(spelled, sizeof spelled, "%s%s", dot, sub);
                if (!kp_cuda_submetric_listed(spelled)) continue;
                size_t need = strlen(metric) + strlen(spelled) + 1;
                if (need > name_cap) {
                    char *grown = realloc(name, need);
                    if (!grown) {
                        st = kp_error_nomem(err);
                        break;
                    }
                    name = grown;
                    name_cap = need;
                }
                snprintf(name, name_cap, "%s%s", metric, spelled);
                fn(name, what, ctx);
            }
            if (st != KPROF_OK) break;
        }
    }
    free(name);
    kp_cuda_host_close(host);
    return st;
}

kprof_status kp_cuda_counter_list(kp_device *dev,
                                  void (*fn)(const char *name, const char *what, void *ctx),
                                  void *ctx, kp_error *err)
{
    kprof_status loaded = kp_cuda_counters_load(err);
    if (loaded != KPROF_OK) return loaded;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) return st;
    int initialized = 0;
    const char *chip = NULL;
    uint8_t *availability = NULL;
    pthread_mutex_lock(&kp_cuda_counters_lock);
    /* Listing needs no permission: a device that cannot be profiled still names its metrics,
     * so only an initialization failure stops it. */
    CUpti_Profiler_Initialize_Params init = {.structSize =
                                                 CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = kp_cuptip.cuptiProfilerInitialize(&init);
    if (r != CUPTI_SUCCESS) {
        st = kp_cuda_counters_init_fail(err, r);
        goto done;
    }
    initialized = 1;
    st = kp_cuda_counters_device(dev, 0, &chip, &availability, err);
    if (st == KPROF_OK) st = kp_cuda_counter_list_chip(chip, availability, fn, ctx, err);
done:
    free(availability);
    kp_cuda_counters_end(initialized);
    pthread_mutex_unlock(&kp_cuda_counters_lock);
    return st;
}
