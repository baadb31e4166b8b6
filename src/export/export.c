/*
 * export.c — a trace written out in one of the export formats (see export.h): open the trace and
 * the output, hand them to the format's writer, commit the output or take it back.
 */
#define _GNU_SOURCE
#include "export/export.h"
#include "base/outfile.h"
#include "base/util.h"
#include "export/calltree.h"
#include "export/chrome.h"
#include "export/hatchet.h"
#include "export/html.h"
#include "export/perfetto.h"
#include "store/event_source.h"
#include "analysis/trace_aggregate.h"

#include <stdio.h>
#include <string.h>

static const char *const kp_export_options[] = {
#define KP_EXPORT_OPTION_(NAME, option) [KP_EXPORT_##NAME] = option,
    KP_EXPORT_FORMAT_LIST(KP_EXPORT_OPTION_)
#undef KP_EXPORT_OPTION_
};

const char *kp_export_option(kp_export_format format)
{
    return (unsigned)format < KP_EXPORT_FORMAT_COUNT ? kp_export_options[format] : NULL;
}

int kp_export_is_calltree(kp_export_format format)
{
    return format == KP_EXPORT_HATCHET || format == KP_EXPORT_JSON || format == KP_EXPORT_CSV;
}

/* The call tree's formats: the aggregate of the whole trace, then its writer. */
static kprof_status kp_export_calltree(kp_event_source *src, const char *label,
                                       kp_export_format format, int raw, FILE *f, kp_error *err)
{
    kp_aggregation *a = NULL;
    kprof_status st = kp_trace_aggregate(src, raw ? KP_TRACE_AGGREGATE_POLLING : 0, &a, err);
    const char *command = kp_event_source_meta(src)->command;
    if (st == KPROF_OK && format == KP_EXPORT_HATCHET) {
        st = kp_export_hatchet(a, *command ? command : NULL, f, err);
    } else if (st == KPROF_OK) {
        kp_calltree_view view = {.trace = label, .command = command, .polling_calls = raw};
        st = kp_calltree_write(
            a, &view, format == KP_EXPORT_JSON ? KP_CALLTREE_JSON : KP_CALLTREE_CSV, f, err);
    }
    kp_aggregation_destroy(a); /* before the source: it reads the source's names */
    return st;
}

kprof_status kp_export_file(const char *trace, const char *label, kp_export_format format,
                            const char *target, unsigned flags, kp_error *err)
{
    if (!kp_export_option(format))
        return kp_error_set(err, KPROF_INVALID, "unknown export format %d", (int)format);
    kp_event_source *src = NULL;
    kp_output out = {0};
    kprof_status st = kp_event_source_open(trace, &src, err);
    const char *inputs[] = {trace, NULL};
    if (st == KPROF_OK)
        st = kp_output_open(&out, target, flags & KP_EXPORT_FORCE ? KP_OUTPUT_FORCE : 0, inputs,
                            err);
    if (st == KPROF_OK && format == KP_EXPORT_PERFETTO) {
        st = kp_export_perfetto(src, &out, err); /* writes in chunks of its own, no stdio */
    } else if (st == KPROF_OK) {
        FILE *f = kp_output_stream(&out);
        if (!f)
            st = kp_error_nomem(err);
        else if (format == KP_EXPORT_CHROME)
            st = kp_export_chrome(src, f, err);
        else if (format == KP_EXPORT_HTML)
            st = kp_html_trace(trace, label ? label : trace, f, err);
        else
            st = kp_export_calltree(src, label ? label : trace, format,
                                    (flags & KP_EXPORT_RAW) != 0, f, err);
    }
    if (st == KPROF_OK) {
        st = kp_output_commit(&out, err);
    } else {
        if (out.write_errno) { /* say which file and why, not only that writing failed */
            kp_error_clear(err);
            st = kp_error_set(err, KPROF_IO, "cannot write %s: %s", kp_output_name(&out),
                              strerror(out.write_errno));
        }
        kp_output_abort(&out);
    }
    kp_event_source_close(src);
    return st;
}
