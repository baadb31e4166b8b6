/*
 * cupti_profiler_api.h — the CUPTI entry points kprof's hardware counters use, as one list that
 * generates a table of function pointers filled at run time from the same libcupti as
 * cupti_api.h (KPROF_CUPTI_LIBRARY, else the names in kp_cupti_libs):
 *
 *   - the Range Profiler (cupti_range_profiler.h, CUPTI 12.6 and later): enable on a context,
 *     set a config, start/stop around kernels, decode, read the counter data image;
 *   - the profiler host API (cupti_profiler_host.h): metric names and properties, config
 *     images, evaluation of counter data into metric values; it needs no GPU;
 *   - the profiler's process-wide setup and device queries (cupti_profiler_target.h,
 *     cupti_target.h): initialize/deinitialize, device support, chip name, counter
 *     availability.
 *
 * libcupti loads PerfWorks (libnvperf_host.so, libnvperf_target.so, shipped beside it) itself,
 * in cuptiProfilerInitialize and cuptiProfilerHostInitialize. A libcupti older than 12.6 lacks
 * the Range Profiler: loading then fails naming the missing symbol.
 *
 * cupti_profiler_host.h (CUDA 12.6 to 13.0 at least) includes the C++ header <string> though it
 * declares a C API. The build puts src/runtime/c_compat, which holds an empty `string`, first on
 * the include path of kprof's C sources (-I: before CPATH, which on the GPU machine's image names
 * the C++ headers' folder, so -idirafter found the real <string>): a C compile finds that empty
 * file. No C source includes a header named `string`, and no C++ source is built with it.
 * Every declaration used here is still the vendor's own.
 */
#ifndef KP_CUPTI_PROFILER_API_H
#define KP_CUPTI_PROFILER_API_H

#include "base/error.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <stddef.h>

/* X(function) — all required; typed from CUPTI's own declarations. */
#define KP_CUPTI_PROFILER_FUNCTIONS(X)                                                             \
    X(cuptiGetResultString)                                                                        \
    X(cuptiProfilerInitialize)                                                                     \
    X(cuptiProfilerDeInitialize)                                                                   \
    X(cuptiProfilerDeviceSupported)                                                                \
    X(cuptiDeviceGetChipName)                                                                      \
    X(cuptiProfilerGetCounterAvailability)                                                         \
    X(cuptiRangeProfilerEnable)                                                                    \
    X(cuptiRangeProfilerDisable)                                                                   \
    X(cuptiRangeProfilerGetCounterDataSize)                                                        \
    X(cuptiRangeProfilerCounterDataImageInitialize)                                                \
    X(cuptiRangeProfilerSetConfig)                                                                 \
    X(cuptiRangeProfilerStart)                                                                     \
    X(cuptiRangeProfilerStop)                                                                      \
    X(cuptiRangeProfilerDecodeData)                                                                \
    X(cuptiRangeProfilerGetCounterDataInfo)                                                        \
    X(cuptiProfilerHostInitialize)                                                                 \
    X(cuptiProfilerHostDeinitialize)                                                               \
    X(cuptiProfilerHostGetBaseMetrics)                                                             \
    X(cuptiProfilerHostGetSubMetrics)                                                              \
    X(cuptiProfilerHostGetMetricProperties)                                                        \
    X(cuptiProfilerHostConfigAddMetrics)                                                           \
    X(cuptiProfilerHostGetConfigImageSize)                                                         \
    X(cuptiProfilerHostGetConfigImage)                                                             \
    X(cuptiProfilerHostGetNumOfPasses)                                                             \
    X(cuptiProfilerHostEvaluateToGpuValues)

typedef struct kp_cupti_profiler_api {
#define KP_CUPTI_PROFILER_SLOT_(fn) __typeof__(fn) *fn;
    KP_CUPTI_PROFILER_FUNCTIONS(KP_CUPTI_PROFILER_SLOT_)
#undef KP_CUPTI_PROFILER_SLOT_
} kp_cupti_profiler_api;

/* Valid after kp_cupti_profiler_load() returned KPROF_OK. */
extern kp_cupti_profiler_api kp_cuptip;

/* Load once (thread-safe). KPROF_OK, or KPROF_UNAVAILABLE with the reason in err: the library
 * missing
 * ("libcupti.so.13 not found (...)"), or too old for the Range Profiler ("libcupti lacks
 * cuptiRangeProfilerEnable: CUPTI 12.6 or newer is needed (its Range Profiler)"), or kprof
 * built with AddressSanitizer (libcupti loads PerfWorks with RTLD_DEEPBIND, which ASan refuses
 * by ending the process). */
kprof_status kp_cupti_profiler_load(kp_error *err);

/* "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)" style text for a result. Thread-local storage. */
const char *kp_cupti_profiler_result_text(CUptiResult r);

#endif
