/*
 * report_text.h — `kprof report` as text, from analysis/report.h's model: the header (wall,
 * events, command, completeness, notes), the host, device, collective and NVTX tables (the
 * distribution cell "mean ± std (min ‥ max)", the top quarter of totals bold, the top 5% red
 * where the stream is a colour terminal: export/text.h), launch latency, a job's ranks, devices
 * and stragglers, optionally the chronological trace, then the verdicts over the wall, the
 * active window and each top-level NVTX range name.
 */
#ifndef KP_EXPORT_REPORT_TEXT_H
#define KP_EXPORT_REPORT_TEXT_H

#include "analysis/report.h"

#include <stdio.h>

/* Write the report r (kp_report_load'ed) to o; with trace, the host-side and device-side
 * trace rows (read again from r's source, in time order; their columns are r->columns, so load
 * with KP_REPORT_TRACE_COLUMNS) between the tables and the verdicts. Names are printed as the
 * source gives them (kp_event_source_escape_text makes them safe for a terminal). Errors: the
 * event source's, while reading the trace rows (what came before them is written). */
kprof_status kp_report_write_text(FILE *o, kp_report *r, int trace, kp_error *err);

/* A table's slow-row thresholds over its totals, as the text table marks its rows (p95 red,
 * p75 yellow and bold): linear-interpolated quantiles of the totals of 10 ns or more; INFINITY
 * both (no row marked) with fewer than four such rows. */
void kp_report_thresholds(const kp_report_table *l, double *p75, double *p95);

#endif
