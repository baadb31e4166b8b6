/*
 * cmd_export.c — `kprof export FILE --chrome OUT.json`: a trace for other tools. The output is
 * written to a temporary file and renamed, so OUT is whole or untouched.
 */
#define _GNU_SOURCE
#include "core/util.h"
#include "export/chrome.h"
#include "store/trace_db.h"
#include "tools/kprof/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kp_cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"chrome", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    const char *chrome = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': chrome = optarg; break;
        case ':': return kp_cli_usage_error("export", "%s needs a value", argv[optind - 1]);
        default: return kp_cli_usage_error("export", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("export", "give the trace FILE");
    if (optind + 1 < argc)
        return kp_cli_usage_error("export", "unexpected argument '%s'", argv[optind + 1]);
    if (!chrome)
        return kp_cli_usage_error("export", "choose a format: --chrome OUT.json (kprof report "
                                            "FILE --json/--csv gives the tables)");
    kp_error err = {0};
    sqlite3 *db = NULL;
    kprof_status st = kp_trace_db_open(argv[optind], &db, &err);
    if (st != KPROF_OK) return kp_cli_fail(&err);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", chrome, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        kp_error_set(&err, KPROF_IO, "cannot write %s: %s", chrome, strerror(errno));
        sqlite3_close(db);
        return kp_cli_fail(&err);
    }
    st = kp_export_chrome(db, f, &err);
    if (fclose(f) != 0 && st == KPROF_OK)
        st = kp_error_set(&err, KPROF_IO, "cannot write %s: %s", chrome, strerror(errno));
    if (st == KPROF_OK && rename(tmp, chrome) != 0)
        st = kp_error_set(&err, KPROF_IO, "cannot write %s: %s", chrome, strerror(errno));
    if (st != KPROF_OK) unlink(tmp);
    sqlite3_close(db);
    if (st != KPROF_OK) return kp_cli_fail(&err);
    return 0;
}
