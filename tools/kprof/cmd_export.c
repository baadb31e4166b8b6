/*
 * cmd_export.c — `kprof export FILE --chrome OUT.json`, `--perfetto OUT.pftrace` (timelines),
 * `--hatchet OUT.json`, `--json OUT.json` or `--csv OUT.csv` (the call tree): a trace for other
 * tools, one format per run. The call tree's formats read the trace through
 * store/trace_aggregate.h, as `kprof report --tree` does, and write what `report --tree --json`
 * and `--csv` print: the whole tree, children by total time. OUT goes through core/outfile:
 * checked before the export starts, written to a temporary file and renamed (so OUT is whole or
 * untouched), or written in place when it is '-', a FIFO or a character device.
 */
#define _GNU_SOURCE
#include "core/outfile.h"
#include "core/util.h"
#include "export/calltree.h"
#include "export/chrome.h"
#include "export/hatchet.h"
#include "export/perfetto.h"
#include "store/event_source.h"
#include "store/trace_aggregate.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The formats, one per run: X(NAME, option). */
#define KP_EXPORT_FORMAT_LIST(X)                                                                   \
    X(CHROME, "--chrome")                                                                          \
    X(PERFETTO, "--perfetto")                                                                      \
    X(HATCHET, "--hatchet")                                                                        \
    X(JSON, "--json")                                                                              \
    X(CSV, "--csv")

typedef enum kp_export_format {
#define KP_EXPORT_ENUM_(NAME, option) KP_EXPORT_##NAME,
    KP_EXPORT_FORMAT_LIST(KP_EXPORT_ENUM_)
#undef KP_EXPORT_ENUM_
        KP_EXPORT_FORMAT_COUNT
} kp_export_format;

static const char *const kp_export_options[] = {
#define KP_EXPORT_OPTION_(NAME, option) [KP_EXPORT_##NAME] = option,
    KP_EXPORT_FORMAT_LIST(KP_EXPORT_OPTION_)
#undef KP_EXPORT_OPTION_
};

/* The call tree's formats: the aggregate of the whole trace, then its writer. */
static kprof_status kp_export_calltree(kp_event_source *src, const char *trace,
                                       kp_export_format format, int raw, FILE *f, kp_error *err)
{
    kp_aggregation *a = NULL;
    kprof_status st = kp_trace_aggregate(src, raw ? KP_TRACE_AGGREGATE_POLLING : 0, &a, err);
    const char *command = kp_event_source_meta(src)->command;
    if (st == KPROF_OK && format == KP_EXPORT_HATCHET) {
        st = kp_export_hatchet(a, *command ? command : NULL, f, err);
    } else if (st == KPROF_OK) {
        kp_calltree_view view = {.trace = trace, .command = command, .polling_calls = raw};
        st = kp_calltree_write(
            a, &view, format == KP_EXPORT_JSON ? KP_CALLTREE_JSON : KP_CALLTREE_CSV, f, err);
    }
    kp_aggregation_destroy(a); /* before the source: it reads the source's names */
    return st;
}

int kp_cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"chrome", required_argument, NULL, 'c'},  {"perfetto", required_argument, NULL, 'p'},
        {"hatchet", required_argument, NULL, 'H'}, {"json", required_argument, NULL, 'j'},
        {"csv", required_argument, NULL, 'v'},     {"raw", no_argument, NULL, 'r'},
        {"force", no_argument, NULL, 'f'},         {NULL, 0, NULL, 0},
    };
    const char *targets[KP_EXPORT_FORMAT_COUNT] = {0};
    int force = 0, raw = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            targets[KP_EXPORT_CHROME] = optarg;
            break;
        case 'p':
            targets[KP_EXPORT_PERFETTO] = optarg;
            break;
        case 'H':
            targets[KP_EXPORT_HATCHET] = optarg;
            break;
        case 'j':
            targets[KP_EXPORT_JSON] = optarg;
            break;
        case 'v':
            targets[KP_EXPORT_CSV] = optarg;
            break;
        case 'r':
            raw = 1;
            break;
        case 'f':
            force = 1;
            break;
        case ':':
            return kp_cli_usage_error("export", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("export", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("export", "give the trace FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error("export", "unexpected argument '%s'", argv[optind + 1]);
    int chosen = -1;
    for (int k = 0; k < KP_EXPORT_FORMAT_COUNT; k++) {
        if (!targets[k]) continue;
        if (chosen >= 0)
            return kp_cli_usage_error("export", "one format at a time: %s or %s",
                                      kp_export_options[chosen], kp_export_options[k]);
        chosen = k;
    }
    if (chosen < 0)
        return kp_cli_usage_error(
            "export", "choose a format: --chrome OUT.json or --perfetto OUT.pftrace (timelines), "
                      "--hatchet OUT.json (the call tree for Hatchet), --json OUT.json or --csv "
                      "OUT.csv (the call tree's nodes; kprof report FILE --json/--csv gives the "
                      "tables)");
    kp_export_format format = (kp_export_format)chosen;
    int calltree = format != KP_EXPORT_CHROME && format != KP_EXPORT_PERFETTO;
    if (raw && !calltree)
        return kp_cli_usage_error("export",
                                  "--raw goes with --hatchet, --json or --csv (%s "
                                  "writes every call)",
                                  kp_export_options[format]);
    const char *target = targets[format];
    const char *trace = argv[optind];
    kp_error err = {0};
    kp_event_source *src = NULL;
    kp_output out = {0};
    kprof_status st = kp_event_source_open(trace, &src, &err);
    const char *inputs[] = {trace, NULL};
    if (st == KPROF_OK)
        st = kp_output_open(&out, target, force ? KP_OUTPUT_FORCE : 0, inputs, &err);
    if (st == KPROF_OK && format == KP_EXPORT_PERFETTO) {
        st = kp_export_perfetto(src, &out, &err); /* writes in chunks of its own, no stdio */
    } else if (st == KPROF_OK) {
        FILE *f = kp_output_stream(&out);
        if (!f)
            st = kp_error_set(&err, KPROF_NOMEM, "out of memory");
        else if (format == KP_EXPORT_CHROME)
            st = kp_export_chrome(src, f, &err);
        else
            st = kp_export_calltree(src, trace, format, raw, f, &err);
    }
    if (st == KPROF_OK) {
        st = kp_output_commit(&out, &err);
    } else {
        if (out.write_errno) { /* say which file and why, not only that writing failed */
            kp_error_clear(&err);
            st = kp_error_set(&err, KPROF_IO, "cannot write %s: %s", kp_output_name(&out),
                              strerror(out.write_errno));
        }
        kp_output_abort(&out);
    }
    kp_event_source_close(src);
    return st == KPROF_OK ? 0 : kp_cli_fail(&err);
}
