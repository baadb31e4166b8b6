/*
 * cmd_merge.c — `kprof merge A.kprof B.kprof ... -o OUT.kprof`: one trace from the per-rank or
 * per-host traces of a distributed job, every host's times put on one time base (the merge
 * itself is store/trace_merge.h). OUT goes through core/outfile: checked (never one of the
 * inputs, an existing file only with --force) before anything is read, written to a temporary
 * beside it and renamed when whole. What was shifted, and by how much, is said on stderr (and
 * kept in the trace's notes and hosts table); --json says it on stdout too.
 */
#define _GNU_SOURCE
#include "base/outfile.h"
#include "base/util.h"
#include "export/merge_json.h"
#include "store/trace_merge.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kp_cmd_merge(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},
        {"reference", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL, *reference = NULL;
    int force = 0, json = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":o:f", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 'r':
            reference = optarg;
            break;
        case ':':
            return kp_cli_usage_error("merge", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("merge", "unknown option '%s'", argv[optind - 1]);
        }
    }
    size_t n = (size_t)(argc - optind);
    char *const *inputs = argv + optind;
    if (n == 0)
        return kp_cli_usage_error("merge", "give the traces to merge: kprof merge A.kprof "
                                           "B.kprof ... -o OUT.kprof");
    if (!output) return kp_cli_usage_error("merge", "give the output: -o OUT.kprof");
    if (strcmp(kp_path_extension(output), "kprof") != 0)
        fprintf(stderr, "kprof: note: trace files are named *.kprof by convention\n");

    kp_error err = {0};
    kp_output out = {0};
    const char **list = calloc(n + 1, sizeof *list);
    if (!list) {
        kp_error_nomem(&err);
        return kp_cli_fail(&err);
    }
    for (size_t i = 0; i < n; i++)
        list[i] = inputs[i];
    /* Checked, and its temporary made, before any input is read; SQLite writes it by name. */
    kprof_status st = kp_output_open(
        &out, output, (force ? KP_OUTPUT_FORCE : 0) | KP_OUTPUT_SEEKABLE, list, &err);
    if (st != KPROF_OK) {
        free(list);
        return kp_cli_fail(&err);
    }
    kp_output_close_fd(&out);
    kp_merged_trace res = {0};
    st = kp_trace_files_merge(out.tmp, list, n, reference, &res, &err);
    free(list);
    if (st == KPROF_OK) st = kp_output_commit(&out, &err);
    if (st != KPROF_OK) {
        kp_output_abort(&out);
        kp_merged_trace_free(&res);
        return kp_cli_fail(&err);
    }
    for (size_t i = 0; i < res.nnotes; i++)
        fprintf(stderr, "kprof: %s\n", res.notes[i]);
    fprintf(stderr,
            "kprof: %" PRIu64 " events from %" PRIu64
            " process%s of %zu trace%s (%zu host%s) in %s\n",
            res.events, res.processes, res.processes == 1 ? "" : "es", n, n == 1 ? "" : "s",
            res.nhosts, res.nhosts == 1 ? "" : "s", out.path);
    if (json) {
        kp_str s = {0};
        kp_error jerr = {0};
        if (kp_merged_trace_json(&res, out.path, inputs, n, &s, &jerr) == KPROF_OK)
            printf("%s\n", s.data);
        kp_error_clear(&jerr);
        kp_str_free(&s);
    }
    kp_merged_trace_free(&res);
    return 0;
}
