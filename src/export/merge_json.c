/*
 * merge_json.c — `kprof merge --json`'s document: what a merge of traces did (store/trace_merge.h's
 * kp_merged_trace), written with base/json.h.
 */
#include "export/merge_json.h"
#include "base/json.h"

kprof_status kp_merged_trace_json(const kp_merged_trace *res, const char *output,
                                  char *const *inputs, size_t n, kp_str *out, kp_error *err)
{
    kp_json j;
    kp_json_init(&j, out, 1);
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
    if (out->failed) return kp_error_nomem(err);
    if (kp_json_finish(&j) != 0)
        return kp_error_set(err, KPROF_INVALID, "the merge summary's JSON is unbalanced");
    return KPROF_OK;
}
