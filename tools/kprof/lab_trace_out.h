/*
 * lab_trace_out.h — `kprof run --trace FILE` and `kprof bench --trace FILE`: the lab's
 * dispatches (lab/lab.h's kp_lab_log) written as a kprof trace that every report, export and
 * diff reads. The output is checked and its temporary made before anything runs (base/outfile.h:
 * an existing file is refused without --force, a folder that cannot be written is found at
 * once); the log's records go into a scratch folder (lab/lab_trace.h), the store's ingest makes
 * the trace of them in the temporary (store/trace_ingest.h, as `kprof trace` does), and only a
 * whole trace is renamed over the name asked for: on any failure nothing is left behind.
 */
#ifndef KP_TOOLS_LAB_TRACE_OUT_H
#define KP_TOOLS_LAB_TRACE_OUT_H

#include "base/job.h"
#include "base/outfile.h"
#include "lab/lab.h"

typedef struct kp_lab_trace_out {
    kp_output out;
    int open;                  /* out is open (kp_lab_trace_out_open succeeded) */
    kp_lab_log log;            /* the sessions log into it */
    uint64_t start_ns;         /* CLOCK_MONOTONIC when the command began measuring */
    kp_clock_pair start_clock; /* ... with CLOCK_REALTIME */
} kp_lab_trace_out;

/* Open path for the trace (force: --force, an existing file may be replaced; inputs: the
 * command's input files, NULL-terminated, which the trace may not be) and make a log of cap
 * entries. INVALID for a refused output (exit 2), IO when it cannot be written (exit 1), NOMEM.
 * On failure t is left closed (kp_lab_trace_out_abort is harmless). */
kprof_status kp_lab_trace_out_open(kp_lab_trace_out *t, const char *path, int force,
                                   const char *const *inputs, size_t cap, kp_error *err);

/* Write the log's dispatches on device as the trace (its meta: this command line, "lab" as the
 * collector, the device, the start and now as the end) and put it in place. Tells the user on
 * stderr where it went and how many events it holds. On failure the output is abandoned and
 * the scratch removed. t is closed afterwards, whatever the result. */
kprof_status kp_lab_trace_out_commit(kp_lab_trace_out *t, const kp_device_info *device,
                                     kp_error *err);

/* Give up: remove the temporary and free the log. Idempotent. */
void kp_lab_trace_out_abort(kp_lab_trace_out *t);

#endif
