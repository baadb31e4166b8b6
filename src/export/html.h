/*
 * html.h — one self-contained HTML page people look at, for a trace (`kprof report --html`,
 * `kprof export --html`, kprof_result_write's KPROF_FORMAT_HTML), a bench, a diff or a sweep
 * (their --html). The page is a fixed file — a fixed page script and style (src/export/page/,
 * embedded at build time) and one JSON data block — that makes no network request of any kind
 * (its Content-Security-Policy allows inline script and style and data: images, nothing else)
 * and draws itself in any browser, offline.
 *
 * The data block is one object: page ("trace", "diff", "bench", "sweep"), producer, title, and
 *   - trace: report (exactly `kprof report FILE --json`), tree (`kprof report FILE --tree
 *     --json`), slow (each table's p75/p95 thresholds over its totals, as the text table marks
 *     its rows; null where it marks none), hist (kernel duration histograms of the kernels with
 *     the most device time) and timeline (tracks, names and the slices as columns; past
 *     KP_HTML_SLICES_LIMIT slices, per-bin summaries of every track instead, so every busy
 *     stretch still shows): docs/formats/html.md describes every member;
 *   - bench, diff, sweep: the command's --json object under its page's name.
 * `<` is written as \u003c inside the block, so no text of a trace can close the script.
 */
#ifndef KP_EXPORT_HTML_H
#define KP_EXPORT_HTML_H

#include "base/error.h"
#include "base/outfile.h"

#include <stddef.h>
#include <stdio.h>

/* Past this many slices the timeline is decimated into per-bin summaries. */
#define KP_HTML_SLICES_LIMIT 100000
/* The bins a decimated timeline's span is cut into. */
#define KP_HTML_BINS 2000

/* The trace at path as a page, to f. label: how the page names the trace (NULL: its path).
 * Errors: the trace's (NOT_FOUND, INVALID, CORRUPT), NOMEM, IO when writing to f failed. */
kprof_status kp_html_trace(const char *path, const char *label, FILE *f, kp_error *err);

/* A page of kind page ("bench", "diff", "sweep") around json (len bytes: one JSON object, as
 * the command's --json prints it), titled title, written to out (opened by the command before
 * its work, base/outfile.h) and committed there. Errors: NOMEM, IO (the output's). */
kprof_status kp_html_json_page(kp_output *out, const char *page, const char *title,
                               const char *json, size_t len, kp_error *err);

#endif
