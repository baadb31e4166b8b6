/*
 * cupti_pcsampling_api.h — the entry points of CUPTI's PC Sampling API (cupti_pcsampling.h) that
 * `kprof run --source` uses, as one list that generates a table of function pointers filled
 * from the same libcupti as kprof's other CUPTI table (runtime/cupti_api.h: KPROF_CUPTI_LIBRARY,
 * libcupti.so.13, or the toolkit's copy). Sampling (enable, configure, start, stop, get data,
 * stall reason names, disable) and the SASS-to-source correlation that turns a sampled PC into
 * a file and line through a cubin's line info (-lineinfo) are both in libcupti itself in CUDA
 * 13.0; the separate libpcsamplingutil only reads and writes CUPTI's sample files, which kprof
 * does not need. A separate table, so that a CUPTI lacking these symbols costs the lab's timing
 * nothing: only --source then says why it cannot run.
 */
#ifndef KP_CUPTI_PCSAMPLING_API_H
#define KP_CUPTI_PCSAMPLING_API_H

#include "base/error.h"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <stddef.h>

#define KP_CUPTI_PCSAMPLING_FUNCTIONS(X)                                                           \
    X(cuptiPCSamplingEnable)                                                                       \
    X(cuptiPCSamplingDisable)                                                                      \
    X(cuptiPCSamplingSetConfigurationAttribute)                                                    \
    X(cuptiPCSamplingStart)                                                                        \
    X(cuptiPCSamplingStop)                                                                         \
    X(cuptiPCSamplingGetData)                                                                      \
    X(cuptiPCSamplingGetNumStallReasons)                                                           \
    X(cuptiPCSamplingGetStallReasons)                                                              \
    X(cuptiGetCubinCrc)                                                                            \
    X(cuptiGetSassToSourceCorrelation)

typedef struct kp_cupti_pcsampling_api {
#define KP_CUPTI_PCSAMPLING_SLOT_(fn) __typeof__(fn) *fn;
    KP_CUPTI_PCSAMPLING_FUNCTIONS(KP_CUPTI_PCSAMPLING_SLOT_)
#undef KP_CUPTI_PCSAMPLING_SLOT_
} kp_cupti_pcsampling_api;

/* The loaded table; valid after kp_cupti_pcsampling_load() returned KPROF_OK. */
extern kp_cupti_pcsampling_api kp_cupti_pcs;

/* Load once (thread-safe): kprof's CUPTI table first (its version check, and the error texts
 * kp_cupti_result_text gives), then these symbols from the same library. KPROF_OK, or
 * KPROF_UNAVAILABLE with the reason in err ("libcupti.so.13 not found", "libcupti lacks
 * cuptiPCSamplingEnable (too old?)"). */
kprof_status kp_cupti_pcsampling_load(kp_error *err);

#endif
