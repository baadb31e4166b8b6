/*
 * cmd_report.c — `kprof report FILE`: parses the options, reads the trace into the report
 * (analysis/report.h: the header, host, device and NVTX tables, launch latency, the verdicts, a
 * job's ranks, devices and stragglers) and prints it as text, --json or --csv
 * (export/report_text.h, export/report_json.h). `--tree` and `--by name|path` show the call tree
 * and the key averages instead (analysis/trace_aggregate.h feeds them, export/calltree.h writes
 * them), leaving polling calls out unless --raw, as the tables do. `--html OUT` writes the page
 * (export/html.h, through export/export.h as `kprof export --html` does).
 */
#include "analysis/report.h"
#include "analysis/trace_aggregate.h"
#include "base/util.h"
#include "export/calltree.h"
#include "export/export.h"
#include "export/report_json.h"
#include "export/report_text.h"
#include "store/event_source.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options of the tables' report (not --tree or --by). */
typedef struct kp_report_opts {
    int raw, trace, json, csv, force;
    const char *html; /* --html OUT */
} kp_report_opts;

/* "total, self, gpu or calls": the values --sort takes, from the list. */
static void kp_sort_choices(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < KP_AGGREGATION_SORT_COUNT; k++) {
        const char *sep = k == 0 ? "" : k == KP_AGGREGATION_SORT_COUNT - 1 ? " or " : ", ";
        int w = snprintf(buf + used, n - used, "%s%s", sep,
                         kp_aggregation_sort_name((kp_aggregation_sort)k));
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
}

/* --tree or --by: the call tree or the key averages, through analysis/trace_aggregate.h. */
static int kp_report_calltree(const char *path, kp_calltree_view *view, int raw,
                              kp_calltree_format format)
{
    kp_error err = {0};
    kp_event_source *src = NULL;
    kp_aggregation *a = NULL;
    kprof_status st = kp_event_source_open(path, &src, &err);
    if (st == KPROF_OK && format == KP_CALLTREE_TEXT) st = kp_event_source_escape_text(src, &err);
    if (st == KPROF_OK)
        st = kp_trace_aggregate(src, raw ? KP_TRACE_AGGREGATE_POLLING : 0, &a, &err);
    if (st == KPROF_OK) {
        view->trace = path;
        view->command = kp_event_source_meta(src)->command;
        view->polling_calls = raw;
        view->opencl_only = kp_event_source_opencl_only(src);
        /* Standard output's errors are main's to report (kp_cli_exit), as for the tables. */
        kp_str s = {0};
        if ((st = kp_calltree_render(a, view, format, &s, &err)) == KPROF_OK)
            fputs(s.data ? s.data : "", stdout);
        kp_str_free(&s);
    }
    kp_aggregation_destroy(a); /* before the source: it reads the source's names */
    kp_event_source_close(src);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}

/* A whole number from 1 to max, digits only: KPROF_OK, or KPROF_INVALID naming the text (the
 * options pass NULL: each says which option it was). */
static kprof_status kp_parse_count(const char *text, uint64_t max, uint64_t *out, kp_error *err)
{
    uint64_t v = 0;
    if (!text || !*text) goto bad;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') goto bad;
        if (v > (max - (uint64_t)(*p - '0')) / 10) goto bad;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < 1) goto bad;
    *out = v;
    return KPROF_OK;
bad:
    return kp_error_set(err, KPROF_INVALID, "'%s': expected a whole number from 1 to %llu",
                        text ? text : "", (unsigned long long)max);
}

int kp_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"raw", no_argument, NULL, 'r'},         {"trace", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},        {"csv", no_argument, NULL, 'c'},
        {"tree", no_argument, NULL, 'T'},        {"by", required_argument, NULL, 'b'},
        {"sort", required_argument, NULL, 's'},  {"top", required_argument, NULL, 'n'},
        {"depth", required_argument, NULL, 'd'}, {"html", required_argument, NULL, 'h'},
        {"force", no_argument, NULL, 'f'},       {NULL, 0, NULL, 0},
    };
    kp_report_opts r;
    memset(&r, 0, sizeof r);
    kp_calltree_view view;
    memset(&view, 0, sizeof view);
    int tree = 0, by = 0, sorted = 0;
    uint64_t v = 0;
    char choices[64];
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            r.raw = 1;
            break;
        case 't':
            r.trace = 1;
            break;
        case 'j':
            r.json = 1;
            break;
        case 'c':
            r.csv = 1;
            break;
        case 'T':
            tree = 1;
            break;
        case 'h':
            if (!*optarg) return kp_cli_usage_error("report", "--html needs a file name");
            r.html = optarg;
            break;
        case 'f':
            r.force = 1;
            break;
        case 'b':
            if (kp_aggregation_group_parse(optarg, &view.group) != 0)
                return kp_cli_usage_error("report", "--by '%s': choose name or path", optarg);
            by = 1;
            break;
        case 's':
            if (kp_aggregation_sort_parse(optarg, &view.sort) != 0) {
                kp_sort_choices(choices, sizeof choices);
                return kp_cli_usage_error("report", "--sort '%s': choose %s", optarg, choices);
            }
            sorted = 1;
            break;
        case 'n':
            if (kp_parse_count(optarg, UINT32_MAX, &v, NULL) != KPROF_OK)
                return kp_cli_usage_error("report", "--top '%s': expected a whole number >= 1",
                                          optarg);
            view.top = (size_t)v;
            break;
        case 'd':
            if (kp_parse_count(optarg, UINT32_MAX, &v, NULL) != KPROF_OK)
                return kp_cli_usage_error(
                    "report", "--depth '%s': expected a whole number >= 1 (1: the top level)",
                    optarg);
            view.depth = (unsigned)v;
            break;
        case ':':
            return kp_cli_usage_error("report", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("report", "give the trace FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
    if (r.json && r.csv) return kp_cli_usage_error("report", "--json or --csv, not both");
    if (r.html &&
        (r.json || r.csv || tree || by || r.trace || r.raw || sorted || view.top || view.depth))
        return kp_cli_usage_error("report", "--html writes the whole page (tables, tree, "
                                            "timeline): give it alone, with --force at most");
    if (r.force && !r.html) return kp_cli_usage_error("report", "--force goes with --html");
    if (r.html) {
        kp_error err = {0};
        kprof_status st = kp_export_file(argv[optind], NULL, KP_EXPORT_HTML, r.html,
                                         r.force ? KP_EXPORT_FORCE : 0, &err);
        if (st != KPROF_OK) {
            int rc = kp_cli_fail(&err);
            kp_error_clear(&err);
            return rc;
        }
        return 0;
    }
    if (tree && by)
        return kp_cli_usage_error("report", "--tree or --by, not both (--by path gives the "
                                            "tree's nodes as rows)");
    if ((tree || by) && r.trace)
        return kp_cli_usage_error("report",
                                  "--trace lists events; %s, call paths: one or the other",
                                  tree ? "--tree" : "--by");
    if (view.depth && !tree) return kp_cli_usage_error("report", "--depth goes with --tree");
    if ((sorted || view.top) && !tree && !by)
        return kp_cli_usage_error("report", "--sort and --top go with --tree or --by");
    if (tree || by) {
        view.key_averages = by;
        return kp_report_calltree(argv[optind], &view, r.raw,
                                  r.json  ? KP_CALLTREE_JSON
                                  : r.csv ? KP_CALLTREE_CSV
                                          : KP_CALLTREE_TEXT);
    }
    if (r.trace && r.csv)
        return kp_cli_usage_error("report", "--trace does not combine with --csv (the trace's "
                                            "rows are not the tables'); --trace --json gives both");
    const char *path = argv[optind];
    kp_error err = {0};
    kp_report rep;
    memset(&rep, 0, sizeof rep);
    kp_event_source *src = NULL;
    kprof_status st = kp_event_source_open(path, &src, &err);
    if (st == KPROF_OK && !r.json && !r.csv) st = kp_event_source_escape_text(src, &err);
    if (st == KPROF_OK) {
        unsigned flags = (r.raw ? KP_REPORT_RAW : 0) |
                         (r.trace && !r.json && !r.csv ? KP_REPORT_TRACE_COLUMNS : 0);
        st = kp_report_load(&rep, src, path, flags, &err);
    } else {
        kp_event_source_close(src);
    }
    if (st == KPROF_OK) {
        /* Standard output's errors are main's to report (kp_cli_exit). */
        if (r.json) {
            kp_str s = {0};
            st = kp_report_write_json(&s, &rep, r.trace, &err);
            if (st == KPROF_OK) fputs(s.data ? s.data : "", stdout);
            kp_str_free(&s);
        } else if (r.csv) {
            kp_report_write_csv(stdout, &rep);
        } else {
            st = kp_report_write_text(stdout, &rep, r.trace, &err);
        }
    }
    kp_report_free(&rep);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}
