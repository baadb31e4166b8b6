/*
 * cmd_export.c — `kprof export FILE --chrome OUT.json` or `--perfetto OUT.pftrace`: a trace for
 * other tools, one format per run. OUT goes through
 * core/outfile: checked before the export starts, written to a temporary file and renamed (so
 * OUT is whole or untouched), or written in place when it is '-', a FIFO or a character device.
 */
#define _GNU_SOURCE
#include "core/outfile.h"
#include "core/util.h"
#include "export/chrome.h"
#include "export/perfetto.h"
#include "store/event_source.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int kp_cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"chrome", required_argument, NULL, 'c'},
        {"perfetto", required_argument, NULL, 'p'},
        {"force", no_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    const char *chrome = NULL, *perfetto = NULL;
    int force = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            chrome = optarg;
            break;
        case 'p':
            perfetto = optarg;
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
    if (!chrome && !perfetto)
        return kp_cli_usage_error("export", "choose a format: --chrome OUT.json or --perfetto "
                                            "OUT.pftrace (kprof report FILE --json/--csv gives "
                                            "the tables)");
    if (chrome && perfetto)
        return kp_cli_usage_error("export", "one format at a time: --chrome or --perfetto");
    const char *target = chrome ? chrome : perfetto;
    const char *trace = argv[optind];
    kp_error err = {0};
    kp_event_source *src = NULL;
    kp_output out = {0};
    kprof_status st = kp_event_source_open(trace, &src, &err);
    const char *inputs[] = {trace, NULL};
    if (st == KPROF_OK)
        st = kp_output_open(&out, target, force ? KP_OUTPUT_FORCE : 0, inputs, &err);
    if (st == KPROF_OK && perfetto) {
        st = kp_export_perfetto(src, &out, &err); /* writes in chunks of its own, no stdio */
    } else if (st == KPROF_OK) {
        FILE *f = kp_output_stream(&out);
        st = f ? kp_export_chrome(src, f, &err) : kp_error_set(&err, KPROF_NOMEM, "out of memory");
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
