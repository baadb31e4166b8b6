/*
 * trace_ingest.h — the ingest: the per-process record files (*.klog, collect/record.h) that
 * kprof's collectors left in a folder, into one new trace file (store/trace_schema.h). `kprof
 * trace` ingests while the program runs and once it has ended, `kprof trace --merge DIR` a
 * folder a failed or interrupted ingest kept, and libkprof's kprof_stop its session's folder.
 * (Not `kprof merge`, which makes one trace of several trace files: store/trace_merge.h.)
 */
#ifndef KP_STORE_TRACE_INGEST_H
#define KP_STORE_TRACE_INGEST_H

#include "base/error.h"
#include "collect/session.h"

#include <signal.h>
#include <stdint.h>

/* What the ingest found, for the user (the run's description is collect/session.h's
 * kp_trace_run). */
typedef struct kp_trace_summary {
    uint64_t events;        /* rows in events */
    uint64_t device_events; /* kernels, copies, fills */
    uint64_t dropped;       /* records lost, all processes (lost_writes included) */
    uint64_t lost_writes;   /* ... of which records that could not be written (folder full) */
    int write_errno;        /* the first such failure's errno */
    int unrecorded;      /* processes whose record file stayed empty (nothing could be written) */
    int processes;       /* processes that recorded anything */
    int truncated_parts; /* record files cut short (a crash) */
    int unclean;         /* processes with no end record (crashed or killed) */
    uint64_t metrics;    /* metric values stored (flops, bytes, user keys: KP_REC_METRIC) */
    uint64_t metrics_orphaned; /* metric records dropped: no event of their kind right before
                                  them in their file (a note says so) */
    uint64_t metrics_invalid;  /* ... dropped: a value that is not finite, a negative count of
                                  flops or bytes, a key never defined */
    char notes[2048];          /* collectors' notes, one per line */
    int captured;              /* kernel launches captured (`kprof trace --capture`: the collectors'
                                  captures.tsv, collect/capture.h; each a note of the trace) */
    int capture_failed;        /* ... and captures that failed (each a note too) */
} kp_trace_summary;

/*
 * Ingesting a folder of record files (*.klog) into a new trace written at path: a file that does
 * not exist or is empty (the caller's temporary, renamed over the real name once this succeeds).
 *
 * While the program runs, kp_trace_ingest_poll ingests what its processes' writers have marked
 * whole (record.h: the header's `submitted`); kp_trace_ingest_finish ingests the rest of every
 * file (a file cut short by a crash up to its last whole record), fills in the processes'
 * counters and the meta table, and commits. Events go in as they arrive; readers take them in
 * time order through the index on start_ns. Stops with IO ("the merge was interrupted") once
 * *cancel becomes non-zero (cancel may be NULL). A run with end_ns 0 ends at its last record.
 *
 * Threads: one ingest is used by one thread at a time (poll from a helper thread while the
 * program runs, then finish from another once the helper has stopped is fine).
 */
typedef struct kp_trace_ingest kp_trace_ingest;

kprof_status kp_trace_ingest_open(const char *path, const volatile sig_atomic_t *cancel,
                                  kp_trace_ingest **ingest, kp_error *err);
/* Ingest what is whole now; a failure is kept and returned again by kp_trace_ingest_finish. */
kprof_status kp_trace_ingest_poll(kp_trace_ingest *ingest, const char *dir);
/* kp_trace_ingest_poll for a kp_session_poll_fn (collect/session.h): ctx is the ingest. */
kprof_status kp_trace_ingest_poll_fn(void *ingest, const char *dir);
/* The rest, then commit and close; frees ingest whatever happens. */
kprof_status kp_trace_ingest_finish(kp_trace_ingest *ingest, const char *dir,
                                    const kp_trace_run *run, kp_trace_summary *summary,
                                    kp_error *err);
/* The events ingested so far (0 for NULL). */
uint64_t kp_trace_ingest_events(const kp_trace_ingest *ingest);
/* Give up: close and free (the caller removes the file). NULL is a no-op. */
void kp_trace_ingest_abort(kp_trace_ingest *ingest);

/* Open, then finish: the whole folder at once (`kprof trace --merge DIR`, kprof_stop). */
kprof_status kp_trace_ingest_dir(const char *path, const char *dir, const kp_trace_run *run,
                                 const volatile sig_atomic_t *cancel, kp_trace_summary *summary,
                                 kp_error *err);

#endif
