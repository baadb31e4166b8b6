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
 * aggregation, core/aggregate.h), for statistics of the instances themselves, and can key kernels
 * by their launch shape too (kp_trace_shapes): then a kernel name launched with two geometries
 * is two nodes, whose names are the shapes' labels ("gemm  grid 65536 tg 256 smem 0"). Only
 * readers that ask get this (`kprof diff`); `kprof report --by` and the exports read kernels by
 * name as before.
 *
 * Names: the aggregation looks them up in the source's strings (kernels demangled at the merge),
 * so the source must stay open while the aggregation is read — destroy the aggregation first.
 */
#ifndef KP_ANALYSIS_TRACE_AGGREGATE_H
#define KP_ANALYSIS_TRACE_AGGREGATE_H

#include "core/aggregate.h"
#include "base/error.h"
#include "store/event_source.h"

enum {
    KP_TRACE_AGGREGATE_POLLING = 1u << 0 /* feed polling calls too (`--raw`) */
};

/* A kernel's launch shape: its name and the geometry its instances were launched with. Two
 * launches of one kernel name are one shape when grid, group and dynamic shared memory all agree
 * (and what of them is known: a kernel the trace says no geometry of is one shape of its own). */
typedef struct kp_trace_shape {
    uint32_t name;           /* the kernel's name id in the source */
    uint32_t known;          /* KP_EVENT_HAS_GEOMETRY, KP_EVENT_HAS_SHARED: what the rest says */
    uint64_t grid[3];        /* total threads per dimension (core/event.h) */
    uint32_t group[3];       /* threads per threadgroup; all 0: the runtime chose */
    uint64_t dynamic_shared; /* bytes given at launch */
    char *label;             /* "NAME  grid 65536 tg 256 smem 0" (heap) */
} kp_trace_shape;

/* The shapes one aggregation met, each named by an id past the source's strings (base + i), so
 * that the aggregation, which keys nodes by (parent, kind, name), keeps shapes apart. Zero it
 * before use; it names the aggregation's nodes, so keep it (and the source) until the
 * aggregation's names are no longer asked for; free with kp_trace_shapes_free. */
typedef struct kp_trace_shapes {
    kp_event_source *src;
    uint32_t base;         /* the first shape's name id: the source's string count */
    kp_trace_shape *shape; /* shape[i] has name id base + i */
    size_t n;
    size_t cap_;      /* private */
    uint32_t *slots_; /* private: a hash of shapes, index + 1 */
    size_t nslots_;
} kp_trace_shapes;

/* The shape a name id stands for, or NULL when it is a plain name (no shape). */
const kp_trace_shape *kp_trace_shape_of(const kp_trace_shapes *shapes, uint32_t name);

/* A name id's text: a shape's label, or the source's string (NULL when it has none). */
const char *kp_trace_shapes_name(const kp_trace_shapes *shapes, uint32_t name);

void kp_trace_shapes_free(kp_trace_shapes *shapes); /* a zeroed one is fine */

/* Read every event of src into a new, finished aggregation (*out; NULL on failure). flags:
 * KP_TRACE_AGGREGATE_*. Errors: as kp_event_iter_next's (a damaged trace is CORRUPT), NOMEM. */
kprof_status kp_trace_aggregate(kp_event_source *src, unsigned flags, kp_aggregation **out,
                                kp_error *err);

/* What a reader sharing the aggregate's pass is handed: each event, as read. */
typedef void (*kp_trace_event_fn)(void *ctx, const kp_trace_event *ev);

/* kp_trace_aggregate, handing every event it reads (polling calls it leaves out too) to fn in
 * start order, with the fields KP_EVENT_FIELD_* it asks for besides the aggregate's own: one pass
 * for a reader that needs start order too (the HTML page's timeline, export/html.c). */
kprof_status kp_trace_aggregate_each(kp_event_source *src, unsigned flags, unsigned fields,
                                     kp_trace_event_fn fn, void *ctx, kp_aggregation **out,
                                     kp_error *err);

/* Every node's instances one by one: the durations the aggregation only sums, for what sums
 * cannot give (a median, the confidence interval of a ratio of medians: `kprof diff`). ns[id]
 * holds the n[id] durations (ns, each as the node's duration_ns counts it) of node id's
 * instances in the order they were placed, NULL when it has none; nnodes is the aggregation's
 * node count. Memory: 16 bytes per instance, on top of the aggregation. */
typedef struct kp_trace_instances {
    int64_t **ns;
    uint64_t **seq; /* seq[id][i]: instance i's place among all the trace's instances (the
                       order the aggregation placed them: by start, but device work held for
                       its call), so that instances of several nodes can be put in time order */
    size_t *n;
    size_t nnodes;
    size_t *cap_; /* private: room in ns[id] */
    size_t cap_nodes_;
    uint64_t placed_; /* private: instances placed so far */
} kp_trace_instances;

/* kp_trace_aggregate, keeping every instance's duration in *instances (zeroed here; on failure
 * it holds nothing). Free it with kp_trace_instances_free. shapes: NULL to key kernels by name
 * (as kp_trace_aggregate does), or a zeroed kp_trace_shapes that kernels with a launch geometry
 * are keyed by (see above; on failure it holds nothing). */
kprof_status kp_trace_aggregate_instances(kp_event_source *src, unsigned flags,
                                          kp_trace_shapes *shapes, kp_aggregation **out,
                                          kp_trace_instances *instances, kp_error *err);

void kp_trace_instances_free(kp_trace_instances *instances); /* a zeroed one is fine */

#endif
