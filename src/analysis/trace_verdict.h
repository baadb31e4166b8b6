/*
 * trace_verdict.h — a trace's submission-economics verdicts (core/verdict.h) exactly as
 * `kprof report` prints them: the timeline fed from the trace's events, then the verdict over
 * the whole wall (the traced command's span: the meta's start and end, else the events' own),
 * over the active window (first to last device operation) and per top-level NVTX range name.
 * One code for every reader, so that `kprof report` and `kprof diff` cannot disagree on a
 * trace's verdict: the report feeds it from its own pass over the events (begin, add per event,
 * finish), `kprof diff` through kp_trace_verdicts_read, a pass of its own.
 *
 * What is fed (the report's rules): every host API call the report's tables show — polling calls
 * (core/host_calls.h) only with raw, or when the host waits for the device in them; every
 * kernel, copy and fill; synchronization records (host waits where no call says so); NVTX ranges
 * on their thread (process row, tid). The APIs the events show (KP_API_*: an OpenCL domain on any
 * event, a CUDA runtime or driver domain on a call) pick the advice that fits.
 *
 * Ownership: the verdicts' names (calls[].name, gap_after, ranges[].name) are the source's
 * strings: keep the source open while they are read, and free the verdicts first.
 */
#ifndef KP_ANALYSIS_TRACE_VERDICT_H
#define KP_ANALYSIS_TRACE_VERDICT_H

#include "base/error.h"
#include "core/verdict.h"
#include "store/event_source.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_trace_verdicts {
    int64_t start_ns, end_ns; /* the wall (end_ns >= start_ns) */
    unsigned api;             /* KP_API_* seen */
    kp_verdict_input wall_in; /* the whole wall's numbers ... */
    kp_verdict wall;          /* ... and verdict */
    int has_active;           /* a device operation exists: the active window does */
    int64_t active_start_ns, active_end_ns;
    kp_verdict_input active_in;
    kp_verdict active;
    kp_range_verdict *ranges; /* top-level NVTX range names, largest total first (heap) */
    size_t nranges;
    kp_timeline *timeline; /* what was fed (kp_trace_verdicts_free releases it) */
} kp_trace_verdicts;

/* Zero *v, find the wall and make an empty timeline over the source's strings. Errors: as
 * kp_event_source_span's (the events' span, when the meta does not say), NOMEM. */
kprof_status kp_trace_verdicts_begin(kp_event_source *src, kp_trace_verdicts *v, kp_error *err);

/* Feed one event, any order. call_flags: kp_host_call_flags of its name (used for API calls);
 * raw: polling calls count too. KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_trace_verdicts_add(kp_trace_verdicts *v, const kp_trace_event *ev,
                                   unsigned call_flags, int raw, kp_error *err);

/* After the last event: the wall's, the active window's and the ranges' verdicts. KPROF_OK, or
 * KPROF_NOMEM (err filled). */
kprof_status kp_trace_verdicts_finish(kp_trace_verdicts *v, kp_error *err);

/* begin, one pass over the events in storage order (the columns the verdicts need), finish.
 * Errors: as kp_event_iter_next's (a damaged trace is CORRUPT), NOMEM; *v then holds nothing. */
kprof_status kp_trace_verdicts_read(kp_event_source *src, int raw, kp_trace_verdicts *v,
                                    kp_error *err);

void kp_trace_verdicts_free(kp_trace_verdicts *v); /* a zeroed one is fine; zeroes it */

#endif
