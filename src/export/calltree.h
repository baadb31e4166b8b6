/*
 * calltree.h — a finished aggregation (core/aggregate.h) as people and scripts read it: the call
 * tree (`kprof report --tree`, `kprof export --json/--csv`) and the key averages by name or by
 * call path (`kprof report --by name|path`), as a text table, JSON or CSV. The numbers are the
 * aggregate's; this file only chooses what is shown and in which order, and writes it.
 *
 * WHAT IS SHOWN. The tree: every node depth-first from the top level, each node's children in
 * the order of view.sort (kp_aggregation_order), at most view.top of them per node (0: all) and
 * nothing deeper than view.depth (0: all). Key averages: kp_aggregation_rows sorted by view.sort,
 * the first view.top of them (0: all).
 *
 * THE NUMBERS of a node or row, in JSON and CSV (seconds as the shortest decimal that reads back
 * as the same double; ns / 1e9):
 *   calls        events: calls, range instances or device operations (0 for "(unattributed)")
 *   total_s      what --sort total orders by: host time of calls and ranges, device time of
 *                device work, the device time held by "(unattributed)"
 *   self_s       what --sort self orders by: exclusive_s of calls and ranges, gpu_self_s of
 *                device work (total_s for "(unattributed)")
 *   inclusive_s  host time (0 for device work)
 *   exclusive_s  host time not in its children: a polling call left out
 * (analysis/trace_aggregate.h) counts here, as its parent's own time gpu_s        device time
 * attributed: its own device work and all below it gpu_self_s   device time of its own device work
 * (device work only) device_ops   device operations at and below it min_s, mean_s, max_s, std_s one
 * event's duration (std: the sample standard deviation, 0 for one event); null in JSON and empty in
 * CSV where calls is 0 flops, bytes its own events' metrics (a copy or fill: its size); 0 when none
 *   gflop_per_s, gb_per_s   only when the trace has metrics (the aggregation's metric_events;
 *                without, no output has these keys, columns or cells): flops and bytes per
 *                second of the time of the events that carry them (host time for calls and
 *                ranges, device time for device work; aggregate.h's flops_ns, bytes_ns), in
 *                GFLOP/s and GB/s (1e9); null in JSON and empty in CSV where the node has no
 *                flops (bytes) or they took no time. The text shows Flops and GFLOP/s, Bytes
 *                and GB/s columns where a node or row shown has flops (bytes): the tree only
 *                with metrics; key averages show Flops and Bytes as before, the rates with
 *                metrics.
 * A tree node and a row by path also carry id (the aggregate's node id), parent (0: top level),
 * depth (1: top level), kind ("range", "api", "kernel", "memcpy", "memset", "unattributed"),
 * name and path (JSON: the names from the top level down, an array; CSV and text: joined by
 * "/"). A tree node also says children_not_shown: its children left out by --top or --depth.
 *
 * JSON: one object (pretty-printed) with trace, command, view ("tree" or "key_averages"), group
 * (key averages: "name" or "path"), sort, depth (the tree) and top (null when not set),
 * polling_calls (whether they were fed: --raw), totals {call_paths, events (fed to the aggregate:
 * polling calls left out are not), host_s (the top-level nodes' inclusive time, all threads
 * summed), gpu_s (attributed, summed), gpu_busy_s (the union of device intervals), device_ops,
 * device_ops_without_call (under "(unattributed)"), folded, unordered (aggregate.h)}; then
 * the tree's top_level_not_shown (top-level nodes left out by --top) and "nodes" (in the order
 * shown: a node's parent comes before it), or the key averages' "rows_in_all" (before --top)
 * and "rows".
 *
 * CSV: a header line, then one line per node or row with the numbers above (tree: id, parent,
 * depth, kind, name, path, the numbers, children_not_shown; by path: the same without
 * children_not_shown; by name: kind, name and the numbers). Every output is valid UTF-8 whatever
 * bytes the names held: JSON writes a byte that is not UTF-8 as \u00XX (base/json.h), CSV as
 * U+FFFD (export/csv.h), text as \xNN, with control characters as \n or \xNN so that a node
 * stays on its line.
 */
#ifndef KP_EXPORT_CALLTREE_H
#define KP_EXPORT_CALLTREE_H

#include "core/aggregate.h"
#include "base/error.h"

#include <stddef.h>
#include <stdio.h>

typedef enum kp_calltree_format {
    KP_CALLTREE_TEXT,
    KP_CALLTREE_JSON,
    KP_CALLTREE_CSV
} kp_calltree_format;

/* What to show. Zero it, then set what matters: the whole tree, children by total. */
typedef struct kp_calltree_view {
    int key_averages;           /* 0: the tree; 1: key averages grouped by `group` */
    kp_aggregation_group group; /* with key_averages */
    kp_aggregation_sort sort;   /* children's order (tree), rows' order (key averages) */
    size_t top;                 /* tree: children per node; key averages: rows; 0: all */
    unsigned depth;             /* tree: the deepest level shown (1: the top level); 0: all */
    int polling_calls;          /* the aggregation was fed polling calls (said in the output) */
    const char *trace;          /* the trace's path, for the header and JSON ("" when NULL) */
    const char *command;        /* the traced command ("" when unknown) */
    int opencl_only; /* the device work is all OpenCL's (kp_event_source_opencl_only): the text
                        says "device", not "GPU" (the device may be a CPU) */
} kp_calltree_view;

/* The numbers above of a node's or row's stats (seconds), as every output here writes them:
 * libkprof's results (src/libkprof/results.c) give the same. */
typedef struct kp_calltree_numbers {
    uint64_t calls, device_ops;
    double total, self, inclusive, exclusive, gpu, gpu_self; /* s */
    double min, mean, max, std;                              /* s; with calls only */
    double flops, bytes;
    int has_gflop_per_s, has_gb_per_s; /* the rates, where there is time they are over */
    double gflop_per_s, gb_per_s;      /* over the events' own time: host time for calls and
                                          ranges, device time for device work */
    /* Over device time: device work's own rates, and a call's or range's metrics over the device
     * time attributed to it (where it launched device work): what its kernels ran at. */
    int has_dev_gflop_per_s, has_dev_gb_per_s;
    double dev_gflop_per_s, dev_gb_per_s;
} kp_calltree_numbers;

void kp_calltree_numbers_of(const kp_aggregation_stats *s, kp_event_kind kind,
                            kp_calltree_numbers *out);

/* The kind's word in every output: "range", "api", ..., "unattributed" for KP_EVENT_NONE. */
const char *kp_calltree_kind(kp_event_kind kind);

/* Append the view of the finished aggregation a, in format, to out. Orders a's children by
 * view->sort (kp_aggregation_order), so a is not const. KPROF_OK, or KPROF_NOMEM (err filled; out
 * may then hold part of the view). */
kprof_status kp_calltree_render(kp_aggregation *a, const kp_calltree_view *view,
                                kp_calltree_format format, kp_str *out, kp_error *err);

/* kp_calltree_render written to f. NOMEM, or IO when writing failed, with err set. */
kprof_status kp_calltree_write(kp_aggregation *a, const kp_calltree_view *view,
                               kp_calltree_format format, FILE *f, kp_error *err);

#endif
