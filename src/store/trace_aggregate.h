/*
 * trace_aggregate.h — a trace's call tree and key averages: every event of a trace file, read
 * through the event source in order of start, fed to core/aggregate.h and finished. The one
 * place that does it: `kprof report --tree` and `--by`, and `kprof export --hatchet`, `--json`
 * and `--csv` all read the aggregation it returns.
 *
 * Polling calls (core/host_calls.h's KP_HOST_CALL_POLLING: cudaGetLastError, cuStreamQuery,
 * clGetEventInfo, ...) are left out unless KP_TRACE_AGGREGATE_POLLING asks for them, as the
 * report's host table leaves them out unless --raw: a call left out is no node of the tree, and
 * its time counts as its parent's own (exclusive) time. Marks and the collector's overhead
 * records are fed and ignored (totals.ignored); synchronization records add to totals.wait_ns.
 *
 * Names: the aggregation looks them up in the source's strings (kernels demangled at the merge),
 * so the source must stay open while the aggregation is read — destroy the aggregation first.
 */
#ifndef KP_STORE_TRACE_AGGREGATE_H
#define KP_STORE_TRACE_AGGREGATE_H

#include "core/aggregate.h"
#include "core/error.h"
#include "store/event_source.h"

enum {
    KP_TRACE_AGGREGATE_POLLING = 1u << 0 /* feed polling calls too (`--raw`) */
};

/* Read every event of src into a new, finished aggregation (*out; NULL on failure). flags:
 * KP_TRACE_AGGREGATE_*. Errors: as kp_event_iter_next's (a damaged trace is CORRUPT), NOMEM. */
kprof_status kp_trace_aggregate(kp_event_source *src, unsigned flags, kp_aggregation **out,
                                kp_error *err);

#endif
