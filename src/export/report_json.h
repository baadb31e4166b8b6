/*
 * report_json.h — `kprof report --json` and `--csv`, from analysis/report.h's model.
 *
 * JSON: one object: trace, command, wall_s, events, dropped, processes, completeness, notes,
 * host_api_s, gpu_busy_s, the tables (host, device, nvtx; a job's collectives and job), each row
 * {name, calls, total_s, percent_of_wall, mean_s, std_s, min_s, max_s} with flops, gflop_per_s,
 * bytes, gb_per_s where its table has metrics and the row has them, launch_latency, verdict
 * (the wall's at the top, active, ranges), and with trace host_trace and device_trace.
 *
 * CSV: a header line, then a line per table row (table host, device, nvtx, collective), per
 * latency (table latency) and per verdict window (table verdict: wall, active, nvtx:NAME); the
 * metric columns flops, bytes, gflop_per_s, gb_per_s at the end only when a table has metrics.
 */
#ifndef KP_EXPORT_REPORT_JSON_H
#define KP_EXPORT_REPORT_JSON_H

#include "analysis/report.h"
#include "base/util.h"

#include <stdio.h>

/* Append the report r as JSON (indented, a newline at the end) to out; with trace, the trace
 * rows too (read again from r's source). Errors: the event source's, NOMEM (out->failed). */
kprof_status kp_report_write_json(kp_str *out, kp_report *r, int trace, kp_error *err);

/* Write the report r's tables, latencies and verdicts to o as CSV. */
void kp_report_write_csv(FILE *o, const kp_report *r);

#endif
