/*
 * export.h — a trace file written out in another format, one format per call: the timelines
 * (Chrome trace JSON, Perfetto) from the event source, the call tree (Hatchet, JSON, CSV) from
 * the trace's aggregate (analysis/trace_aggregate.h), the page people look at (export/html.h).
 * The one implementation of `kprof export`:
 * the CLI (tools/kprof/cmd_export.c) and libkprof's results (src/libkprof/results.c) both call it.
 *
 * The output goes through core/outfile: checked before the export starts (an input, a folder, an
 * existing file without KP_EXPORT_FORCE are refused), written to a temporary file and renamed, so
 * it is whole or untouched; '-', FIFOs and character devices are written in place.
 */
#ifndef KP_EXPORT_EXPORT_H
#define KP_EXPORT_EXPORT_H

#include "base/error.h"

/* The formats: X(NAME, option of `kprof export`). */
#define KP_EXPORT_FORMAT_LIST(X)                                                                   \
    X(CHROME, "--chrome")                                                                          \
    X(PERFETTO, "--perfetto")                                                                      \
    X(HATCHET, "--hatchet")                                                                        \
    X(JSON, "--json")                                                                              \
    X(CSV, "--csv")                                                                                \
    X(HTML, "--html")

typedef enum kp_export_format {
#define KP_EXPORT_ENUM_(NAME, option) KP_EXPORT_##NAME,
    KP_EXPORT_FORMAT_LIST(KP_EXPORT_ENUM_)
#undef KP_EXPORT_ENUM_
        KP_EXPORT_FORMAT_COUNT
} kp_export_format;

/* `--chrome` for KP_EXPORT_CHROME; NULL for a value that is no format. */
const char *kp_export_option(kp_export_format format);

/* Whether a format writes the call tree (Hatchet, JSON, CSV) rather than a timeline. */
int kp_export_is_calltree(kp_export_format format);

enum {
    KP_EXPORT_FORCE = 1u << 0, /* replace an existing output (--force) */
    KP_EXPORT_RAW = 1u << 1    /* the call tree's formats: polling calls too (--raw) */
};

/* Export the trace at path `trace` to `target` in format. label: how the call tree's JSON and
 * CSV name the trace (NULL: its path). flags: KP_EXPORT_*. Errors: the trace's (NOT_FOUND,
 * INVALID, CORRUPT), the output's (INVALID for a refused one, NOT_FOUND, IO naming the file and
 * why), NOMEM. */
kprof_status kp_export_file(const char *trace, const char *label, kp_export_format format,
                            const char *target, unsigned flags, kp_error *err);

#endif
