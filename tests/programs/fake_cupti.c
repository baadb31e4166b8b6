/* fake_cupti.c — a stand-in for libcupti (loaded through KPROF_CUPTI_LIBRARY) with the Range
 * Profiler and host API entry points the CUDA backend's counters use, so the sequence, its
 * cleanup on every path and its error words are tested where no GPU exists
 * (tests/unit/test_cuda_counters_fake.c). Declared from CUPTI's own headers, so a signature
 * that drifts fails to build.
 *
 * It behaves as CUPTI 13.0 was seen to: a host object takes metric names it knows, one call
 * at a time or several together; a name it does not know is refused (INVALID_PARAMETER) and
 * leaves the object refusing everything after (UNKNOWN); several names in one call with an
 * unknown one among them abort the process (CUPTI crashed there). Every call checks that
 * structSize is the header's *_STRUCT_SIZE and pPriv is NULL, and is logged by name.
 *
 * The test drives it through fake_cupti_* (found with dlsym): which call fails and with what
 * code, whether Stop reports all passes submitted, whether the device is supported, and how
 * many ranges the counter data holds; it reads the log and the objects still alive.
 *
 * Known metrics and the value each evaluates to: dram__bytes_read.sum 1, dram__bytes_write.sum
 * 1001, sm__throughput.avg.pct_of_peak_sustained_elapsed 2001, lts__t_sector_hit_rate.pct 3001,
 * kprof__fails_evaluation.sum (accepted, but fails evaluation).
 *
 * Built without sanitizers, as the real library is. */
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static struct {
    char fail[128]; /* the call that fails */
    CUptiResult code;
    int all_passes;
    int unsupported; /* DeviceSupported: architecture unsupported */
    size_t ranges;
    char log[8192];
    int initialized, hosts, enabled, started;
} fake = {.all_passes = 1, .ranges = 1};

static const char *const known[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "kprof__fails_evaluation.sum",
};
#define KNOWN (sizeof known / sizeof known[0])

/* Objects come from fixed pools, so one kprof leaves on purpose (a range profiler on a context
 * a kernel fault spoiled) is no leak of the test process. */
struct CUpti_Profiler_Host_Object {
    int used;
    int refusing;
    int added;
};
struct CUpti_RangeProfiler_Object {
    int used;
    int config_set;
};
static struct CUpti_Profiler_Host_Object host_pool[64];
static struct CUpti_RangeProfiler_Object range_pool[8];

#define TAKE(pool, out)                                                                            \
    do {                                                                                           \
        (out) = NULL;                                                                              \
        for (size_t i_ = 0; i_ < sizeof pool / sizeof pool[0] && !(out); i_++)                     \
            if (!pool[i_].used) {                                                                  \
                memset(&pool[i_], 0, sizeof pool[i_]);                                             \
                pool[i_].used = 1;                                                                 \
                (out) = &pool[i_];                                                                 \
            }                                                                                      \
    } while (0)

EXPORT void fake_cupti_configure(const char *fail, int code, int all_passes, int unsupported,
                                 size_t ranges)
{
    snprintf(fake.fail, sizeof fake.fail, "%s", fail ? fail : "");
    fake.code = (CUptiResult)code;
    fake.all_passes = all_passes;
    fake.unsupported = unsupported;
    fake.ranges = ranges;
    fake.log[0] = '\0';
    fake.initialized = fake.hosts = fake.enabled = fake.started = 0;
}

EXPORT const char *fake_cupti_log(void)
{
    return fake.log;
}

/* The test's own events (a launch, a flush) in the same log. */
EXPORT void fake_cupti_note(const char *event)
{
    size_t n = strlen(fake.log);
    snprintf(fake.log + n, sizeof fake.log - n, "%s ", event);
}

/* Initialized profilers, host objects, enabled range profilers, started ranges still alive. */
EXPORT void fake_cupti_alive(int *initialized, int *hosts, int *enabled, int *started)
{
    *initialized = fake.initialized;
    *hosts = fake.hosts;
    *enabled = fake.enabled;
    *started = fake.started;
}

/* Log the call; the result it should give before doing anything: the configured failure, or
 * INVALID_PARAMETER for a struct not filled as the header says. */
static CUptiResult enter(const char *call, size_t size, size_t expected, const void *priv)
{
    fake_cupti_note(call);
    if (strcmp(call, fake.fail) == 0) return fake.code;
    if (size != expected || priv) return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
}

#define ENTER(call, p, type)                                                                       \
    CUptiResult r_ = enter(#call, (p)->structSize, type##_STRUCT_SIZE, (p)->pPriv);                \
    if (r_ != CUPTI_SUCCESS) return r_

static long known_index(const char *name)
{
    for (size_t i = 0; name && i < KNOWN; i++)
        if (strcmp(name, known[i]) == 0) return (long)i;
    return -1;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    switch (result) {
    case CUPTI_SUCCESS:
        *str = "CUPTI_SUCCESS";
        break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
        break;
    default:
        *str = "CUPTI_ERROR_FAKE";
        break;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p)
{
    ENTER(cuptiProfilerInitialize, p, CUpti_Profiler_Initialize_Params);
    fake.initialized++;
    return CUPTI_SUCCESS;
}

/* The releases release even when told to fail, and then say they failed. */
EXPORT CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p)
{
    fake.initialized--;
    return enter("cuptiProfilerDeInitialize", p->structSize,
                 CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE, p->pPriv);
}

EXPORT CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p)
{
    ENTER(cuptiProfilerDeviceSupported, p, CUpti_Profiler_DeviceSupported_Params);
    CUpti_Profiler_Support_Level yes = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->architecture = fake.unsupported ? CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED : yes;
    p->sli = p->vGpu = p->confidentialCompute = p->cmp = p->wsl = yes;
    p->isSupported = p->architecture;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p)
{
    ENTER(cuptiDeviceGetChipName, p, CUpti_Device_GetChipName_Params);
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p)
{
    ENTER(cuptiProfilerGetCounterAvailability, p, CUpti_Profiler_GetCounterAvailability_Params);
    if (!p->ctx) return CUPTI_ERROR_INVALID_CONTEXT;
    if (p->pCounterAvailabilityImage) {
        if (p->counterAvailabilityImageSize < 64) return CUPTI_ERROR_INVALID_PARAMETER;
        memset(p->pCounterAvailabilityImage, 0xa5, 64);
    }
    p->counterAvailabilityImageSize = 64;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p)
{
    ENTER(cuptiProfilerHostInitialize, p, CUpti_Profiler_Host_Initialize_Params);
    if (!p->pChipName || strcmp(p->pChipName, "GH100") != 0) return CUPTI_ERROR_INVALID_CHIP_NAME;
    if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER) return CUPTI_ERROR_INVALID_PARAMETER;
    TAKE(host_pool, p->pHostObject);
    if (!p->pHostObject) return CUPTI_ERROR_OUT_OF_MEMORY;
    fake.hosts++;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p)
{
    if (!p->pHostObject || !p->pHostObject->used) return CUPTI_ERROR_INVALID_PARAMETER;
    p->pHostObject->used = 0;
    fake.hosts--;
    return enter("cuptiProfilerHostDeinitialize", p->structSize,
                 CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, p->pPriv);
}

EXPORT CUptiResult cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p)
{
    ENTER(cuptiProfilerHostConfigAddMetrics, p, CUpti_Profiler_Host_ConfigAddMetrics_Params);
    if (p->pHostObject->refusing) return CUPTI_ERROR_UNKNOWN;
    for (size_t i = 0; i < p->numMetrics; i++) {
        if (known_index(p->ppMetricNames[i]) >= 0) continue;
        if (p->numMetrics > 1) {
            fprintf(stderr,
                    "fake_cupti: an unknown metric among %zu in one call: CUPTI 13.0 "
                    "crashes here\n",
                    p->numMetrics);
            abort();
        }
        p->pHostObject->refusing = 1;
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    p->pHostObject->added += (int)p->numMetrics;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *p)
{
    ENTER(cuptiProfilerHostGetConfigImageSize, p, CUpti_Profiler_Host_GetConfigImageSize_Params);
    p->configImageSize = 16 + 8 * (size_t)p->pHostObject->added;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p)
{
    ENTER(cuptiProfilerHostGetConfigImage, p, CUpti_Profiler_Host_GetConfigImage_Params);
    if (p->configImageSize != 16 + 8 * (size_t)p->pHostObject->added || !p->pConfigImage)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memset(p->pConfigImage, 0x5a, p->configImageSize);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p)
{
    ENTER(cuptiProfilerHostGetNumOfPasses, p, CUpti_Profiler_Host_GetNumOfPasses_Params);
    p->numOfPasses = (p->configImageSize - 16) / 8; /* a pass per metric */
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p)
{
    ENTER(cuptiProfilerHostEvaluateToGpuValues, p, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    if (p->rangeIndex >= fake.ranges || !p->pCounterDataImage || p->counterDataImageSize != 128)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numMetrics; i++) {
        long k = known_index(p->ppMetricNames[i]);
        if (k < 0 || strcmp(known[k], "kprof__fails_evaluation.sum") == 0)
            return CUPTI_ERROR_INVALID_METRIC_NAME;
        p->pMetricValues[i] = 1000.0 * (double)k + 1;
    }
    return CUPTI_SUCCESS;
}

static const char *const base_counter[] = {"dram__bytes_read", "dram__bytes_write"};
static const char *const base_ratio[] = {"lts__t_sector_hit_rate"};
static const char *const base_throughput[] = {"sm__throughput"};
static const char *const sub_counter[] = {".sum",
                                          ".avg",
                                          ".max",
                                          ".min",
                                          ".sum.per_second",
                                          ".sum.pct_of_peak_sustained_elapsed",
                                          ".sum.peak_sustained"};
static const char *const sub_ratio[] = {".pct", ".ratio", ".max_rate"};
static const char *const sub_throughput[] = {".avg.pct_of_peak_sustained_elapsed",
                                             ".sum.pct_of_peak_sustained_active"};

EXPORT CUptiResult cuptiProfilerHostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params *p)
{
    ENTER(cuptiProfilerHostGetBaseMetrics, p, CUpti_Profiler_Host_GetBaseMetrics_Params);
    switch (p->metricType) {
    case CUPTI_METRIC_TYPE_COUNTER:
        p->ppMetricNames = (const char **)base_counter, p->numMetrics = 2;
        break;
    case CUPTI_METRIC_TYPE_RATIO:
        p->ppMetricNames = (const char **)base_ratio, p->numMetrics = 1;
        break;
    case CUPTI_METRIC_TYPE_THROUGHPUT:
        p->ppMetricNames = (const char **)base_throughput, p->numMetrics = 1;
        break;
    default:
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiProfilerHostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params *p)
{
    ENTER(cuptiProfilerHostGetSubMetrics, p, CUpti_Profiler_Host_GetSubMetrics_Params);
    switch (p->metricType) {
    case CUPTI_METRIC_TYPE_COUNTER:
        p->ppSubMetrics = (const char **)sub_counter, p->numOfSubmetrics = 7;
        break;
    case CUPTI_METRIC_TYPE_RATIO:
        p->ppSubMetrics = (const char **)sub_ratio, p->numOfSubmetrics = 3;
        break;
    case CUPTI_METRIC_TYPE_THROUGHPUT:
        p->ppSubMetrics = (const char **)sub_throughput, p->numOfSubmetrics = 2;
        break;
    default:
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiProfilerHostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params *p)
{
    ENTER(cuptiProfilerHostGetMetricProperties, p, CUpti_Profiler_Host_GetMetricProperties_Params);
    static char what[160];
    snprintf(what, sizeof what, "what %s counts", p->pMetricName);
    p->pDescription = what;
    p->pHwUnit = "";
    p->pDimUnit = "";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p)
{
    ENTER(cuptiRangeProfilerEnable, p, CUpti_RangeProfiler_Enable_Params);
    if (!p->ctx) return CUPTI_ERROR_INVALID_CONTEXT;
    TAKE(range_pool, p->pRangeProfilerObject);
    if (!p->pRangeProfilerObject) return CUPTI_ERROR_OUT_OF_MEMORY;
    fake.enabled++;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p)
{
    if (!p->pRangeProfilerObject || !p->pRangeProfilerObject->used)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->pRangeProfilerObject->used = 0;
    fake.enabled--;
    fake.started = 0; /* disabling ends whatever range was left open */
    return enter("cuptiRangeProfilerDisable", p->structSize,
                 CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, p->pPriv);
}

EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
    ENTER(cuptiRangeProfilerGetCounterDataSize, p, CUpti_RangeProfiler_GetCounterDataSize_Params);
    if (!p->pRangeProfilerObject || p->maxNumOfRanges < 1 ||
        p->maxNumRangeTreeNodes < p->maxNumOfRanges || p->numMetrics < 1)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numMetrics; i++)
        if (known_index(p->pMetricNames[i]) < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->counterDataSize = 128;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p)
{
    ENTER(cuptiRangeProfilerCounterDataImageInitialize, p,
          CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    if (p->counterDataSize != 128 || !p->pCounterData) return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p)
{
    ENTER(cuptiRangeProfilerSetConfig, p, CUpti_RangeProfiler_SetConfig_Params);
    /* Kernel replay is only valid with auto range, and auto range with one nesting level. */
    if (p->range != CUPTI_AutoRange || p->replayMode != CUPTI_KernelReplay ||
        p->numNestingLevels != 1 || p->minNestingLevel != 1 || p->targetNestingLevel != 1 ||
        p->passIndex != 0 || p->maxRangesPerPass < 1 || !p->pConfig || !p->configSize ||
        p->counterDataImageSize != 128 || !p->pCounterDataImage)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->pRangeProfilerObject->config_set = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p)
{
    ENTER(cuptiRangeProfilerStart, p, CUpti_RangeProfiler_Start_Params);
    if (!p->pRangeProfilerObject->config_set) return CUPTI_ERROR_INVALID_OPERATION;
    fake.started++;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p)
{
    ENTER(cuptiRangeProfilerStop, p, CUpti_RangeProfiler_Stop_Params);
    fake.started--;
    p->isAllPassSubmitted = (uint8_t)fake.all_passes;
    p->passIndex = fake.all_passes ? 0 : 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p)
{
    ENTER(cuptiRangeProfilerDecodeData, p, CUpti_RangeProfiler_DecodeData_Params);
    p->numOfRangeDropped = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
    ENTER(cuptiRangeProfilerGetCounterDataInfo, p, CUpti_RangeProfiler_GetCounterDataInfo_Params);
    p->numTotalRanges = fake.ranges;
    return CUPTI_SUCCESS;
}
