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
#include "base/json.h"
#include "store/trace_merge.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void kp_merge_print_json(const kp_merged_trace *res, const char *output, char *const *inputs,
                                size_t n)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "output", output);
    kp_json_array_begin(&j, "inputs");
    for (size_t i = 0; i < n; i++)
        kp_json_string(&j, NULL, inputs[i]);
    kp_json_array_end(&j);
    kp_json_string(&j, "reference", inputs[res->reference]);
    kp_json_uint(&j, "events", res->events);
    kp_json_uint(&j, "processes", res->processes);
    kp_json_uint(&j, "metrics", res->metrics);
    kp_json_array_begin(&j, "hosts");
    for (size_t h = 0; h < res->nhosts; h++) {
        const kp_merged_host *host = &res->hosts[h];
        kp_json_object_begin(&j, NULL);
        if (*host->host)
            kp_json_string(&j, "host", host->host);
        else
            kp_json_null(&j, "host");
        if (*host->boot_id)
            kp_json_string(&j, "boot_id", host->boot_id);
        else
            kp_json_null(&j, "boot_id");
        kp_json_bool(&j, "reference", host->reference);
        kp_json_int(&j, "offset_ns", host->offset_ns);
        if (host->known)
            kp_json_int(&j, "uncertainty_ns", host->uncertainty_ns);
        else
            kp_json_null(&j, "uncertainty_ns");
        kp_json_uint(&j, "pairs", host->pairs);
        kp_json_array_begin(&j, "inputs");
        for (size_t i = 0; i < host->ninputs; i++)
            kp_json_string(&j, NULL, inputs[host->inputs[i]]);
        kp_json_array_end(&j);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "pid_shifts");
    for (size_t i = 0; i < n; i++) {
        int renumbered = res->renumbered && res->renumbered[i];
        if (!renumbered && (!res->pid_shift || !res->pid_shift[i])) continue;
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "input", inputs[i]);
        if (renumbered) { /* given the smallest free ids: no one shift */
            kp_json_null(&j, "shift");
            kp_json_array_begin(&j, "pids");
            for (size_t p = 0; p < res->nrenumbered[i]; p++) {
                kp_json_object_begin(&j, NULL);
                kp_json_int(&j, "os_pid", res->renumbered[i][p].os_pid);
                kp_json_int(&j, "pid", res->renumbered[i][p].pid);
                kp_json_object_end(&j);
            }
            kp_json_array_end(&j);
        } else {
            kp_json_int(&j, "shift", res->pid_shift[i]);
        }
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "notes");
    for (size_t i = 0; i < res->nnotes; i++)
        kp_json_string(&j, NULL, res->notes[i]);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    if (kp_json_finish(&j) == 0 && !s.failed) printf("%s\n", s.data);
    kp_str_free(&s);
}

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
    if (json) kp_merge_print_json(&res, out.path, inputs, n);
    kp_merged_trace_free(&res);
    return 0;
}
