/*
 * hatchet.h — the call tree (core/aggregate.h) as Hatchet's literal format, which
 * `hatchet.GraphFrame.from_literal(json.load(f))` reads (LLNL/hatchet, readers/literal_reader.py):
 *
 *   [{"frame": {"name": ROOT, "type": "root"},
 *     "metrics": {...},
 *     "children": [{"frame": {"name": "step", "type": "range"}, "metrics": {...},
 *                   "children": [...]}, ...]}]
 *
 * One root (named by the caller: the traced command, say) holds the aggregate's top-level nodes,
 * so that every export loads, an empty one too. Frame types are the event kinds' names ("range",
 * "api", "kernel", "memcpy", "memset") and "unattributed" for device work whose call was not
 * recorded. Children come in the aggregate's current order (kp_aggregation_order).
 *
 * Every node carries every metric (Hatchet takes the metric names from the last root, and a
 * metric missing from a node would be NaN); times in seconds. Following Hatchet's convention a
 * name with "(inc)" is inclusive, one without exclusive:
 *   "time (inc)"      host time (inclusive_ns)
 *   "time"            host time not in children (exclusive_ns)
 *   "calls"           events: calls, range instances, device operations (count)
 *   "gpu_time (inc)"  device time attributed: the device work at and below it (gpu_ns)
 *   "gpu_time"        device time of its own device work (gpu_self_ns; device nodes only)
 *   "flops (inc)", "flops", "bytes (inc)", "bytes"   the events' metrics, likewise
 * So Hatchet's own update_inclusive_columns() over "time" and "gpu_time" gives back our "(inc)"
 * columns (exactly, where ranges nest properly). The root's metrics are the sums over its
 * children, with no time of its own and 0 calls.
 *
 * Written through the JSON writer: valid UTF-8 whatever bytes the names hold.
 */
#ifndef KP_EXPORT_HATCHET_H
#define KP_EXPORT_HATCHET_H

#include "core/aggregate.h"
#include "base/error.h"
#include "base/util.h"

#include <stdio.h>

#define KP_HATCHET_ROOT "kprof" /* the root's name when the caller gives none */

/* Append the document (one line and a newline) for a finished aggregation to out. root: the
 * root's name (NULL: KP_HATCHET_ROOT). KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_hatchet_write(const kp_aggregation *a, const char *root, kp_str *out,
                              kp_error *err);

/* Write the document to f. NOMEM or IO (a failed write), with err set. */
kprof_status kp_export_hatchet(const kp_aggregation *a, const char *root, FILE *f, kp_error *err);

#endif
