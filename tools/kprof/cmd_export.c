/*
 * cmd_export.c — `kprof export FILE --chrome OUT.json`, `--perfetto OUT.pftrace` (timelines),
 * `--hatchet OUT.json`, `--json OUT.json` or `--csv OUT.csv` (the call tree): a trace for other
 * tools, one format per run. The call tree's formats read the trace through
 * store/trace_aggregate.h, as `kprof report --tree` does, and write what `report --tree --json`
 * and `--csv` print: the whole tree, children by total time. OUT goes through core/outfile:
 * checked before the export starts, written to a temporary file and renamed (so OUT is whole or
 * untouched), or written in place when it is '-', a FIFO or a character device. The export
 * itself is export/export.h's kp_export_file, which libkprof's results write with too.
 */
#define _GNU_SOURCE
#include "export/export.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

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
                                      kp_export_option((kp_export_format)chosen),
                                      kp_export_option((kp_export_format)k));
        chosen = k;
    }
    if (chosen < 0)
        return kp_cli_usage_error(
            "export", "choose a format: --chrome OUT.json or --perfetto OUT.pftrace (timelines), "
                      "--hatchet OUT.json (the call tree for Hatchet), --json OUT.json or --csv "
                      "OUT.csv (the call tree's nodes; kprof report FILE --json/--csv gives the "
                      "tables)");
    kp_export_format format = (kp_export_format)chosen;
    if (raw && !kp_export_is_calltree(format))
        return kp_cli_usage_error("export",
                                  "--raw goes with --hatchet, --json or --csv (%s "
                                  "writes every call)",
                                  kp_export_option(format));
    kp_error err = {0};
    kprof_status st =
        kp_export_file(argv[optind], NULL, format, targets[format],
                       (force ? KP_EXPORT_FORCE : 0) | (raw ? KP_EXPORT_RAW : 0), &err);
    return st == KPROF_OK ? 0 : kp_cli_fail(&err);
}
