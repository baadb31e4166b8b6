/*
 * lab_trace_out.c — --trace FILE of `kprof run` and `kprof bench` (see lab_trace_out.h).
 */
#include "tools/kprof/lab_trace_out.h"
#include "base/util.h"
#include "collect/session.h"
#include "lab/lab_trace.h"
#include "store/trace_db.h"

#include <stdio.h>
#include <string.h>

kprof_status kp_lab_trace_out_open(kp_lab_trace_out *t, const char *path, int force,
                                   const char *const *inputs, size_t cap, kp_error *err)
{
    memset(t, 0, sizeof *t);
    /* SQLite writes the temporary by name, as `kprof trace -o` has it. */
    kprof_status st = kp_output_open(
        &t->out, path, (force ? KP_OUTPUT_FORCE : 0) | KP_OUTPUT_SEEKABLE, inputs, err);
    if (st != KPROF_OK) return st;
    kp_output_close_fd(&t->out);
    st = kp_lab_log_init(&t->log, cap, err);
    if (st != KPROF_OK) {
        kp_output_abort(&t->out);
        return st;
    }
    t->open = 1;
    t->start_ns = kp_now_ns();
    t->start_clock = kp_clock_pair_now();
    return KPROF_OK;
}

void kp_lab_trace_out_abort(kp_lab_trace_out *t)
{
    if (!t->open) return;
    kp_output_abort(&t->out);
    kp_lab_log_free(&t->log);
    t->open = 0;
}

kprof_status kp_lab_trace_out_commit(kp_lab_trace_out *t, const kp_device_info *device,
                                     kp_error *err)
{
    char dir[4096];
    kprof_status st = kp_session_scratch(dir, sizeof dir, err);
    if (st != KPROF_OK) {
        kp_lab_trace_out_abort(t);
        return st;
    }
    st = kp_lab_trace_records(&t->log, device, dir, err);
    char command[4096], host[256], boot_id[64], where[512];
    kp_command_line(command, sizeof command);
    kp_job_host(host, sizeof host);
    kp_job_boot_id(boot_id, sizeof boot_id);
    snprintf(where, sizeof where, "%s (%s device %d)", device->name, device->backend,
             device->index);
    kp_trace_run run = {
        .command = command,
        .start_ns = t->start_ns,
        .end_ns = kp_now_ns(),
        .exit_status = 0,
        .collectors = KP_LAB_COLLECTOR,
        .one_process = 1,
        .host = host[0] ? host : NULL,
        .boot_id = boot_id[0] ? boot_id : NULL,
        .start_clock = t->start_clock,
        .end_clock = kp_clock_pair_now(),
        .device = where,
    };
    kp_trace_summary sum;
    memset(&sum, 0, sizeof sum);
    if (st == KPROF_OK) st = kp_trace_ingest_dir(t->out.tmp, dir, &run, NULL, &sum, err);
    kp_session_remove(dir);
    if (st == KPROF_OK) st = kp_output_commit(&t->out, err);
    if (st == KPROF_OK) {
        fprintf(stderr, "kprof: %llu kernel events in %s\n", (unsigned long long)sum.device_events,
                t->out.path);
        if (t->log.lost)
            fprintf(stderr, "kprof: note: %llu dispatches are not in the trace (out of memory)\n",
                    (unsigned long long)t->log.lost);
        t->open = 0;
        kp_lab_log_free(&t->log);
        return KPROF_OK;
    }
    kp_lab_trace_out_abort(t);
    return st;
}
