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
 * kp_trace_aggregate_instances keeps each node's instance durations as well (an observer of the
 * aggregation, core/aggregate.h), for statistics of the instances themselves.
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

/* Every node's instances one by one: the durations the aggregation only sums, for what sums
 * cannot give (a median, the confidence interval of a ratio of medians: `kprof diff`). ns[id]
 * holds the n[id] durations (ns, each as the node's duration_ns counts it) of node id's
 * instances in the order they were placed, NULL when it has none; nnodes is the aggregation's
 * node count. Memory: 8 bytes per instance, on top of the aggregation. */
typedef struct kp_trace_instances {
    int64_t **ns;
    size_t *n;
    size_t nnodes;
    size_t *cap_; /* private: room in ns[id] */
    size_t cap_nodes_;
} kp_trace_instances;

/* kp_trace_aggregate, keeping every instance's duration in *instances (zeroed here; on failure
 * it holds nothing). Free it with kp_trace_instances_free. */
kprof_status kp_trace_aggregate_instances(kp_event_source *src, unsigned flags,
                                          kp_aggregation **out, kp_trace_instances *instances,
                                          kp_error *err);

void kp_trace_instances_free(kp_trace_instances *instances); /* a zeroed one is fine */

#endif
