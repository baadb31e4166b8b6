/*
 * merge_json.h — `kprof merge --json`'s document, from a merge's result.
 */
#ifndef KP_EXPORT_MERGE_JSON_H
#define KP_EXPORT_MERGE_JSON_H

#include "base/error.h"
#include "base/util.h"
#include "store/trace_merge.h"

#include <stddef.h>

/* Append to out the JSON object (indented, no trailing newline) that says what the merge res of
 * inputs[0..n) into output did: "output", "inputs", "reference", "events", "processes",
 * "metrics", "hosts" (each with host, boot_id, reference, offset_ns, uncertainty_ns, pairs and
 * its inputs; null where unknown), "pid_shifts" (an input's shift, or null with its renumbered
 * "pids") and "notes". NOMEM when out could not grow; INVALID should the document not balance. */
kprof_status kp_merged_trace_json(const kp_merged_trace *res, const char *output,
                                  char *const *inputs, size_t n, kp_str *out, kp_error *err);

#endif
