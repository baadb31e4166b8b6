/*
 * cmd_export.c — `kprof export FILE --chrome OUT.json`, `--perfetto OUT.pftrace` (timelines),
 * `--hatchet OUT.json`, `--json OUT.json` or `--csv OUT.csv` (the call tree), `--html OUT.html`
 * (the page, export/html.h: what `kprof report --html` writes): a trace for other tools, one
 * format per run. `kprof export FILE -o OUT` takes the format from OUT's name (see
 * kp_export_by_name); a name that says none gets a timeline: Chrome JSON, or Perfetto when the
 * trace holds more events than a browser's JSON loader takes (kp_export_chrome_max_events). The
 * call tree's formats read the trace through analysis/trace_aggregate.h, as `kprof report --tree`
 * does, and write what `report --tree --json` and `--csv` print: the whole tree, children by
 * total time. OUT goes through core/outfile: checked before the export starts, written to a
 * temporary file and renamed (so OUT is whole or untouched), or written in place when it is '-',
 * a FIFO or a character device. The export itself is export/export.h's kp_export_file, which
 * libkprof's results write with too.
 */
#define _GNU_SOURCE
#include "base/env.h"
#include "export/export.h"
#include "store/event_source.h"
#include "tools/kprof/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Above this many events a trace's Chrome JSON is too large for a browser's JSON loader: some
 * 230 bytes of JSON an event (the 1M-kernel trace of bench/trace_scale.py, 2M events, wrote 443
 * MiB), and Chrome's V8, which Perfetto UI's and chrome://tracing's JSON loaders run on, holds a
 * string of at most 512 MiB (2^29 - 24 characters). KP_ENV_CHROME_MAX_EVENTS overrides it. */
#define KP_EXPORT_CHROME_MAX_EVENTS 2000000

/* The names OUT may end with, compared without case, the longest first where one ends another. */
static const struct {
    const char *suffix;
    kp_export_format format;
} kp_export_suffixes[] = {
    {".hatchet.json", KP_EXPORT_HATCHET},
    {".hatchet", KP_EXPORT_HATCHET},
    {".json", KP_EXPORT_CHROME},
    {".pftrace", KP_EXPORT_PERFETTO},
    {".perfetto-trace", KP_EXPORT_PERFETTO},
    {".pb", KP_EXPORT_PERFETTO},
    {".csv", KP_EXPORT_CSV},
    {".html", KP_EXPORT_HTML},
    {".htm", KP_EXPORT_HTML},
};

/* The format OUT's name says, or -1 for a name that says none ('-', no extension, another). */
static int kp_export_by_name(const char *out)
{
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    size_t n = strlen(base);
    for (size_t i = 0; i < sizeof kp_export_suffixes / sizeof kp_export_suffixes[0]; i++) {
        size_t m = strlen(kp_export_suffixes[i].suffix);
        /* "x.json" but not ".json" alone: a name that is only an extension is a hidden file */
        if (n > m && strcasecmp(base + n - m, kp_export_suffixes[i].suffix) == 0)
            return (int)kp_export_suffixes[i].format;
    }
    return -1;
}

/* The threshold: KP_ENV_CHROME_MAX_EVENTS when set (a whole number), else the default. 0, or the
 * usage error's exit code for a value that is no number. */
static int kp_export_chrome_max_events(int64_t *out)
{
    *out = KP_EXPORT_CHROME_MAX_EVENTS;
    const char *v = getenv(KP_ENV_CHROME_MAX_EVENTS);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || n < 0 || !isdigit((unsigned char)v[0]))
        return kp_cli_usage_error("export", "%s='%s': expected a whole number of events",
                                  KP_ENV_CHROME_MAX_EVENTS, v);
    *out = (int64_t)n;
    return 0;
}

/* How many events the trace holds (its rows run from 1 to the last id). */
static kprof_status kp_export_count_events(const char *trace, int64_t *events, kp_error *err)
{
    kp_event_source *src = NULL;
    kprof_status st = kp_event_source_open(trace, &src, err);
    if (st == KPROF_OK) st = kp_event_source_last_id(src, events, err);
    kp_event_source_close(src);
    return st;
}

int kp_cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"chrome", required_argument, NULL, 'c'},  {"perfetto", required_argument, NULL, 'p'},
        {"hatchet", required_argument, NULL, 'H'}, {"json", required_argument, NULL, 'j'},
        {"csv", required_argument, NULL, 'v'},     {"html", required_argument, NULL, 'h'},
        {"output", required_argument, NULL, 'o'},  {"raw", no_argument, NULL, 'r'},
        {"force", no_argument, NULL, 'f'},         {NULL, 0, NULL, 0},
    };
    const char *targets[KP_EXPORT_FORMAT_COUNT] = {0};
    const char *output = NULL;
    int force = 0, raw = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
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
        case 'h':
            targets[KP_EXPORT_HTML] = optarg;
            break;
        case 'o':
            output = optarg;
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
    const char *trace = argv[optind];
    int chosen = -1;
    for (int k = 0; k < KP_EXPORT_FORMAT_COUNT; k++) {
        if (!targets[k]) continue;
        if (chosen >= 0)
            return kp_cli_usage_error("export", "one format at a time: %s or %s",
                                      kp_export_option((kp_export_format)chosen),
                                      kp_export_option((kp_export_format)k));
        chosen = k;
    }
    if (chosen >= 0 && output)
        return kp_cli_usage_error("export",
                                  "-o OUT takes the format from OUT's name; with %s OUT, "
                                  "give OUT there alone",
                                  kp_export_option((kp_export_format)chosen));
    if (chosen < 0 && !output)
        return kp_cli_usage_error(
            "export", "give -o OUT (the format follows OUT's name: .json, .pftrace, .csv, "
                      ".hatchet.json), or choose a format: --chrome OUT.json or --perfetto "
                      "OUT.pftrace (timelines), --hatchet OUT.json (the call tree for Hatchet), "
                      "--json OUT.json or --csv OUT.csv (the call tree's nodes; kprof report "
                      "FILE --json/--csv gives the tables)");
    int by_count = 0; /* the format was chosen by the trace's size, not by a name or option */
    if (output) {
        if (!*output) return kp_cli_usage_error("export", "-o needs a file name");
        chosen = kp_export_by_name(output);
        if (chosen < 0) by_count = 1;
        targets[chosen < 0 ? KP_EXPORT_CHROME : chosen] = output;
    }
    /* --raw is checked before the trace is read; a name that says no format gets a timeline. */
    if (raw && output && (by_count || !kp_export_is_calltree((kp_export_format)chosen)))
        return kp_cli_usage_error("export",
                                  "--raw goes with the call tree's formats (-o OUT.csv, "
                                  "OUT.hatchet.json; --json OUT): %s is a timeline, which "
                                  "writes every call",
                                  output);
    if (raw && !kp_export_is_calltree((kp_export_format)chosen))
        return kp_cli_usage_error("export",
                                  "--raw goes with --hatchet, --json or --csv (%s "
                                  "writes every call)",
                                  kp_export_option((kp_export_format)chosen));
    kp_error err = {0};
    if (by_count || chosen == KP_EXPORT_CHROME) {
        int64_t limit = 0, events = 0;
        int rc = kp_export_chrome_max_events(&limit);
        if (rc) return rc;
        if (kp_export_count_events(trace, &events, &err) != KPROF_OK) return kp_cli_fail(&err);
        const char *target = targets[KP_EXPORT_CHROME];
        if (by_count && events > limit) {
            chosen = KP_EXPORT_PERFETTO;
            targets[KP_EXPORT_PERFETTO] = target;
            fprintf(stderr,
                    "kprof: note: %s names no format (.json, .pftrace, .csv, .hatchet.json): "
                    "writing a Perfetto trace, as the trace's %lld events are more than a "
                    "browser's JSON loader takes (over %lld; OUT.json or --chrome OUT writes "
                    "Chrome JSON)\n",
                    target, (long long)events, (long long)limit);
        } else if (by_count) {
            chosen = KP_EXPORT_CHROME;
            fprintf(stderr,
                    "kprof: note: %s names no format (.json, .pftrace, .csv, .hatchet.json): "
                    "writing Chrome JSON (%lld events; OUT.pftrace or --perfetto OUT writes a "
                    "Perfetto trace)\n",
                    target, (long long)events);
        } else if (events > limit) {
            fprintf(stderr,
                    "kprof: warning: the trace holds %lld events (over %lld): browsers may fail "
                    "to load its Chrome JSON (some 230 bytes an event; their JSON loaders stop "
                    "near 512 MiB); --perfetto OUT.pftrace writes the same timeline at under "
                    "half the size for Perfetto UI\n",
                    (long long)events, (long long)limit);
        }
    }
    kp_export_format format = (kp_export_format)chosen;
    kprof_status st =
        kp_export_file(trace, NULL, format, targets[format],
                       (force ? KP_EXPORT_FORCE : 0) | (raw ? KP_EXPORT_RAW : 0), &err);
    return st == KPROF_OK ? 0 : kp_cli_fail(&err);
}
