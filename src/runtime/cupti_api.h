/*
 * cupti_api.h — the CUPTI entry points kprof uses, as one list that generates a table of
 * function pointers filled from libcupti at run time (KPROF_CUPTI_LIBRARY, libcupti.so.13,
 * or the toolkit's copy). kprof never links CUPTI, so it starts without it.
 */
#ifndef KP_CUPTI_API_H
#define KP_CUPTI_API_H

#include "base/error.h"

#include <cupti.h>

#include <stddef.h>

#define KP_CUPTI_FUNCTIONS(X)                                                                      \
    X(cuptiGetVersion)                                                                             \
    X(cuptiGetResultString)                                                                        \
    X(cuptiActivityEnable)                                                                         \
    X(cuptiActivityDisable)                                                                        \
    X(cuptiActivityRegisterCallbacks)                                                              \
    X(cuptiActivityFlushAll)                                                                       \
    X(cuptiActivityGetNextRecord)                                                                  \
    X(cuptiActivityGetNumDroppedRecords)                                                           \
    X(cuptiActivityRegisterTimestampCallback)                                                      \
    X(cuptiActivityEnableLatencyTimestamps)                                                        \
    X(cuptiActivityFlushPeriod)                                                                    \
    X(cuptiSetThreadIdType)                                                                        \
    X(cuptiGetCallbackName)                                                                        \
    X(cuptiGetTimestamp)

typedef struct kp_cupti_api {
#define KP_CUPTI_SLOT_(fn) __typeof__(fn) *fn;
    KP_CUPTI_FUNCTIONS(KP_CUPTI_SLOT_)
#undef KP_CUPTI_SLOT_
} kp_cupti_api;

extern kp_cupti_api kp_cupti;

/* The names libcupti is looked for by, in order (NULL-terminated), after KPROF_CUPTI_LIBRARY:
 * shared with the Range Profiler's table (cupti_profiler_api.h), so both load the same copy. */
extern const char *const kp_cupti_libs[];

/* Load once (thread-safe). KPROF_OK, or KPROF_UNAVAILABLE with the reason in err. Also refuses a
 * CUPTI whose record layouts differ from the headers kprof was built with. */
kprof_status kp_cupti_load(kp_error *err);

/* "CUPTI_ERROR_NOT_INITIALIZED (15)" style text for a result. Static storage per thread. */
const char *kp_cupti_result_text(CUptiResult r);

#endif
