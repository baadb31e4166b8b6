/*
 * aggregate.h — what a stream of kp_events adds up to: key averages by name and by call path,
 * the call tree with inclusive and exclusive time, the device time each call launched, and how
 * long the devices were busy. Enigma's key_averages(group_by=name|call_path) and tree(), for a
 * trace of any size: memory grows with the distinct call paths, not with the events (apart from
 * the correlation join, below). Reports (`kprof report --tree`, `--by name|path`) and exports
 * (Hatchet) read it; it reads nothing but the events it is given.
 *
 * THE TREE. A node is one call path: the chain of enclosing ranges and calls on the thread, then
 * the event itself, identified by (parent node, kind, name) — so a path's instances on every
 * thread and process of a trace add up in one node.
 *   - Ranges (KP_EVENT_RANGE: NVTX ranges, library scopes) and host API calls (KP_EVENT_API) are
 *     placed on their thread, (process, tid): the parent of one is the innermost range or call of
 *     that thread still open at its start (start <= s < end). Ranges make the paths; a call
 *     ends one, with what it contains below it: a driver call inside a runtime call, the device
 *     work it launched. Where ranges end out of order (A opens, B opens, A ends, B ends), B
 *     stays A's child, and whatever starts in B after A ended is still placed under A/B: the
 *     path of the innermost open element, whose own path was fixed when it opened. (The path is
 *     found from the ranges themselves; kp_event.call_path is not read.)
 *   - Device work (KERNEL, MEMCPY, MEMSET) joins the call of the same (process, correlation): its
 *     node is a child of that call's node, named after the kernel or copy — so a kernel launched
 *     inside a range is attributed to the range's path however long after the range closed it
 *     ran. Device work whose call was never recorded (no correlation, or no call with it) goes
 *     under one top-level node, "(unattributed)" (kind KP_EVENT_NONE).
 *   - Other kinds (SYNC, MARK, OVERHEAD) are not placed: SYNC adds to totals.wait_ns, the others
 *     are counted in totals.ignored. A call the caller leaves out (the report's hidden polling
 *     calls) counts as its parent's own time.
 *   - Paths deeper than KP_AGGREGATION_MAX_DEPTH are folded: an event that would be deeper is
 *     placed at that depth, beside its parent instead of below it (totals.folded counts them).
 *
 * THE NUMBERS of a node (kp_aggregation_stats), in nanoseconds:
 *   count         its events: calls, range instances or device operations
 *   duration_ns   their durations summed, in their own domain: host time for ranges and calls,
 *                 device time for device work; min_ns, max_ns and sum_sq_ns describe them one by
 *                 one (the report's distribution cell)
 *   inclusive_ns  host time: duration_ns for ranges and calls, 0 for device work
 *   exclusive_ns  host time not in its children: inclusive_ns minus the part of each child's
 *                 duration that lies inside its parent's instance. With ranges that nest properly
 *                 inclusive = exclusive + the children's inclusive, exactly; a child that outlives
 *                 its parent (out-of-order ends) keeps its whole duration, its parent loses only
 *                 the part inside it, so exclusive is never negative.
 *   gpu_self_ns   device time of its own device operations (device work nodes only)
 *   gpu_ns        device time attributed: its own and everything below it, whenever it ran
 *   device_ops    device operations at and below it
 *   flops, bytes  metrics of its own events (KP_EVENT_HAS_FLOPS, KP_EVENT_HAS_METRIC_BYTES; a
 *                 copy or fill without a bytes metric counts its size, where known:
 *                 KP_EVENT_HAS_BYTES); *_inclusive: with
 *                 everything below it
 *   flops_ns, bytes_ns  the durations (as duration_ns) of its own events that carry flops, and
 *                 bytes: the time the rates are over, GFLOP/s = flops / flops_ns (flops per ns
 *                 are GFLOP per s), GB/s = bytes / bytes_ns (kp_aggregation_rate); an instance
 *                 without the metric neither adds to it nor dilutes it
 *   flops_events, bytes_events  its own events that carry flops, and bytes (a copy's or a
 *                 fill's known size included; one of unknown size carries none, and shows "-"):
 *                 a row "has" flops or bytes when these are > 0, even
 *                 where the values are 0 (`kprof report`'s tables show "0", not "-")
 *   metric_events its own events that carry flops or a bytes metric (a size alone is none):
 *                 whether a table of rows shows metric columns at all
 * A key average by name merges the nodes of one (kind, name): counts and sums add, min and max
 * combine. A range inside a range of its own name counts twice there, as in every profiler's
 * key averages; the tree shows them apart.
 *
 * ORDER OF EVENTS. Feed events in ascending order of start (the event source's order). Events
 * that start at the same nanosecond may come in any order: the aggregate holds them until a later
 * start arrives and places the longer first, so an enclosing range starting with its first call
 * is that call's parent. An event that starts earlier than one already fed is counted in
 * totals.unordered and placed as well as the threads' current state allows (inside the innermost
 * open element that contains its start, if any), but is no one's parent; device work may come
 * before its call.
 *
 * MEMORY. Per distinct node, per thread (its stack of open ranges and calls), per host call that
 * carries a correlation (the join's map: about 48 bytes each, kept to the end because a graph
 * launch's many operations share one correlation), per device operation that arrives before its
 * call or never finds one (held to the end, about 48 bytes each), and per event starting at one
 * same nanosecond. add is O(1) amortised (an event in order of start looks at the top of its
 * thread's open stack only; one out of order scans it); finish O(nodes + held
 * operations); order and rows O(nodes log nodes).
 *
 * OWNERSHIP AND THREADS. The aggregation owns everything it returns except rows (heap: free()).
 * Names are looked up through the caller's callback only when asked for (kp_aggregation_name,
 * kp_aggregation_path), so the callback and its context must stay valid while names are asked.
 * Not thread-safe: feed it from one thread; after kp_aggregation_finish, any number of threads may
 * read it at once as long as none calls kp_aggregation_order.
 */
#ifndef KP_CORE_AGGREGATE_H
#define KP_CORE_AGGREGATE_H

#include "core/event.h"
#include "base/error.h"
#include "base/util.h"

#include <stddef.h>
#include <stdint.h>

#define KP_AGGREGATION_MAX_DEPTH 64 /* tree levels below the root (see "folded" above) */

/* Label of the node that holds device work with no recorded call. */
#define KP_AGGREGATION_UNATTRIBUTED "(unattributed)"

typedef struct kp_aggregation kp_aggregation;

typedef struct kp_aggregation_stats {
    uint64_t count;
    int64_t duration_ns;
    int64_t min_ns, max_ns; /* 0 when count is 0 */
    double sum_sq_ns;       /* sum of squared durations, ns^2 (double: a standard deviation's
                               input, as the report computes it) */
    int64_t inclusive_ns;
    int64_t exclusive_ns;
    int64_t gpu_self_ns;
    int64_t gpu_ns;
    uint64_t device_ops;
    double flops, bytes;
    double flops_inclusive, bytes_inclusive;
    int64_t flops_ns, bytes_ns;
    uint64_t flops_events, bytes_events, metric_events;
} kp_aggregation_stats;

/* Node 0 is the root: no event of its own; its children are the top-level nodes, its stats the
 * sums over them (count 0). Node ids are dense: 0 .. kp_aggregation_node_count() - 1. */
typedef struct kp_aggregation_node {
    uint32_t parent;       /* 0 for top-level nodes (and for the root itself) */
    uint32_t first_child;  /* 0 = none; siblings in the order of kp_aggregation_order */
    uint32_t next_sibling; /* 0 = none */
    uint32_t depth;        /* root 0, top level 1 */
    kp_event_kind kind;    /* RANGE, API, KERNEL, MEMCPY or MEMSET; NONE: root, (unattributed) */
    uint32_t name;         /* interned name id (0 for the root and (unattributed)) */
    kp_aggregation_stats stats;
} kp_aggregation_node;

/* Whole-stream numbers, the verdict's streaming inputs among them. */
typedef struct kp_aggregation_totals {
    uint64_t events;            /* fed */
    uint64_t calls, ranges;     /* API calls and ranges placed */
    uint64_t device_ops;        /* kernels, copies and fills */
    uint64_t kernels;           /* ... of which kernels */
    uint64_t small_kernels;     /* kernels shorter than KP_VERDICT_SMALL_DISPATCH_S */
    uint64_t ops_without_call;  /* device operations under (unattributed) */
    int64_t first_ns, last_ns;  /* earliest start and latest end of any event (0 when none) */
    int64_t gpu_busy_ns;        /* union of device operation intervals (core/busy.h) */
    int64_t kernel_busy_ns;     /* the same for kernels alone */
    int64_t active_start_ns;    /* first device operation's start .. */
    int64_t active_end_ns;      /* .. last one's end (both 0 when there is none) */
    int64_t host_api_ns;        /* durations of the API calls fed, summed */
    int64_t wait_ns;            /* durations of the SYNC records fed, summed */
    uint64_t unordered;         /* events that started before one fed earlier */
    uint64_t folded;            /* events placed at KP_AGGREGATION_MAX_DEPTH (see above) */
    uint64_t ends_before_start; /* events whose end precedes their start (a damaged trace):
                                   each counted with duration 0 */
    uint64_t ignored;           /* MARK, OVERHEAD and unknown kinds */
    uint64_t metric_events;     /* events fed with flops or a bytes metric (KP_EVENT_HAS_FLOPS,
                                   KP_EVENT_HAS_METRIC_BYTES), any kind: 0 when the stream has
                                   no metrics (the views then show no rates) */
} kp_aggregation_totals;

/* A name id's text, or NULL when it has none. */
typedef const char *(*kp_aggregation_name_fn)(void *ctx, uint32_t name);

/* A new, empty aggregation; name (may be NULL: names print as "#ID") and ctx are kept for
 * kp_aggregation_name and kp_aggregation_path. NULL when out of memory. */
kp_aggregation *kp_aggregation_create(kp_aggregation_name_fn name, void *ctx);
void kp_aggregation_destroy(kp_aggregation *a); /* NULL is a no-op */

/* Each instance as it is placed: its node and its duration (ns, as duration_ns counts it). For
 * a reader that needs the instances' durations themselves (`kprof diff`'s confidence intervals
 * of medians), which the aggregation does not keep: its memory grows with the nodes, the
 * observer's with what it keeps. Return KPROF_OK, or a failure status to fail the add (or finish)
 * that placed it with that status (KPROF_NOMEM: "out of memory"; another: "the observer of its
 * instances failed"; say more in ctx): the aggregation is then spoilt. Instances are placed
 * during kp_aggregation_add and, for those held (ties of start, device work before its call),
 * during kp_aggregation_finish. */
typedef kprof_status (*kp_aggregation_observe_fn)(void *ctx, uint32_t node, int64_t duration_ns);

/* Call fn(ctx, ...) for every instance placed from now on (NULL fn: none). Set it before the
 * first kp_aggregation_add to see them all. */
void kp_aggregation_observe(kp_aggregation *a, kp_aggregation_observe_fn fn, void *ctx);

/* Feed one event (copied; e need not outlive the call). KPROF_OK; KPROF_NOMEM (or the observer's
 * status) when that failed; KPROF_INVALID after kp_aggregation_finish. After a failure the
 * aggregation is spoilt and every later call of add and finish returns that failure's status
 * again (destroy still frees it). err says which. */
kprof_status kp_aggregation_add(kp_aggregation *a, const kp_event *e, kp_error *err);

/* No more events: places what is held, joins device work that came before its call, leaves the
 * rest under (unattributed), computes the inclusive numbers and orders the tree by
 * KP_AGGREGATION_SORT_TOTAL. Call once; the reading functions below need it. KPROF_OK; KPROF_NOMEM
 * (or the observer's status) when that failed, or the status of the failure that spoilt it;
 * KPROF_INVALID when called twice. err says which. */
kprof_status kp_aggregation_finish(kp_aggregation *a, kp_error *err);

const kp_aggregation_totals *kp_aggregation_get_totals(const kp_aggregation *a);

size_t kp_aggregation_node_count(const kp_aggregation *a); /* the root included */

/* Open-stack elements looked at while placing ranges and calls so far: the work that must stay
 * linear in the events fed in order (tests bound it; nothing reports it). */
uint64_t kp_aggregation_stack_steps(const kp_aggregation *a);
/* Node `id`, or NULL when out of range. Valid until the aggregation is destroyed. */
const kp_aggregation_node *kp_aggregation_get_node(const kp_aggregation *a, uint32_t id);

/* A node's label: the name's text, KP_AGGREGATION_UNATTRIBUTED, "(root)", or "#ID" when the
 * callback knows no text for it. Never NULL; the text is the callback's or static, or (for
 * "#ID") in buf of n bytes (24 suffice). */
const char *kp_aggregation_name(const kp_aggregation *a, uint32_t id, char *buf, size_t n);

/* A node's path, its labels from the top level down joined by "/" ("step/cudaLaunchKernel/k"),
 * appended to out (out->failed says when memory ran out). */
void kp_aggregation_path(const kp_aggregation *a, uint32_t id, kp_str *out);

/* A rate: metric per nanosecond of the time it is over (flops per ns are GFLOP/s, bytes per ns
 * GB/s). 0, or -1 when there is none (no metric, or no time to divide by). */
static inline int kp_aggregation_rate(double metric, int64_t ns, double *rate)
{
    if (ns <= 0) return -1;
    *rate = metric / (double)ns;
    return 0;
}

/* ---- sorting and selecting ------------------------------------------------------------------ */

/*
 * X(NAME, name, what): the orders of --sort. Each is descending; ties go to the larger
 * duration_ns, then the smaller name id, then the smaller kind, then the earlier node: the same
 * order on every run and machine (the report's tables break ties of total by name id too).
 */
#define KP_AGGREGATION_SORT_LIST(X)                                                                \
    X(TOTAL, "total", "duration_ns: host time of calls and ranges, device time of device work")    \
    X(SELF, "self", "exclusive_ns of calls and ranges, gpu_self_ns of device work")                \
    X(GPU, "gpu", "gpu_ns: device time attributed, inclusive")                                     \
    X(CALLS, "calls", "count")

typedef enum kp_aggregation_sort {
#define KP_AGGREGATION_SORT_ENUM_(NAME, name, what) KP_AGGREGATION_SORT_##NAME,
    KP_AGGREGATION_SORT_LIST(KP_AGGREGATION_SORT_ENUM_)
#undef KP_AGGREGATION_SORT_ENUM_
        KP_AGGREGATION_SORT_COUNT
} kp_aggregation_sort;

const char *kp_aggregation_sort_name(kp_aggregation_sort key); /* "total"; NULL if none */
/* The key named `name` ("self"); 0, or -1 when no key has that name. */
int kp_aggregation_sort_parse(const char *name, kp_aggregation_sort *key);

/* The value a key sorts a node or row by (kind: its kind). */
double kp_aggregation_sort_value(const kp_aggregation_stats *s, kp_event_kind kind,
                                 kp_aggregation_sort key);

/* Reorder every node's children by key (finish orders them by TOTAL). KPROF_OK, or KPROF_NOMEM
 * (err filled; the order is then unchanged). */
kprof_status kp_aggregation_order(kp_aggregation *a, kp_aggregation_sort key, kp_error *err);

/* ---- key averages ---------------------------------------------------------------------------- */

/* X(NAME, name): what key averages group by (--by). */
#define KP_AGGREGATION_GROUP_LIST(X)                                                               \
    X(NAME, "name")                                                                                \
    X(PATH, "path")

typedef enum kp_aggregation_group {
#define KP_AGGREGATION_GROUP_ENUM_(NAME, name) KP_AGGREGATION_GROUP_##NAME,
    KP_AGGREGATION_GROUP_LIST(KP_AGGREGATION_GROUP_ENUM_)
#undef KP_AGGREGATION_GROUP_ENUM_
        KP_AGGREGATION_GROUP_COUNT
} kp_aggregation_group;

const char *kp_aggregation_group_name(kp_aggregation_group group); /* "name"; NULL if none */
int kp_aggregation_group_parse(const char *name, kp_aggregation_group *group); /* 0 or -1 */

typedef struct kp_aggregation_row {
    uint32_t node;      /* by path: the node; by name: the first node of that (kind, name) */
    kp_event_kind kind; /* as the node's */
    uint32_t name;
    kp_aggregation_stats stats; /* by path: the node's; by name: the merge of its nodes */
} kp_aggregation_row;

/* Key averages: one row per node (by path; (unattributed) included, the root not) or per
 * (kind, name) (by name; nodes of kind NONE left out), in node order. *rows is heap (free() it;
 * NULL when there are none). KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_aggregation_rows(const kp_aggregation *a, kp_aggregation_group group,
                                 kp_aggregation_row **rows, size_t *n, kp_error *err);

/* Add the numbers s into `into`, as a key average by name merges its nodes: counts and sums add,
 * min and max combine (an empty side leaves the other's). */
void kp_aggregation_stats_merge(kp_aggregation_stats *into, const kp_aggregation_stats *s);

/* Sort rows[0..n) by key and return how many of them the top `top` are (0: all of them). */
size_t kp_aggregation_select(kp_aggregation_row *rows, size_t n, kp_aggregation_sort key,
                             size_t top);

#endif
