/*
 * trace_merge.h — `kprof merge`: one trace from several trace files (the per-rank or per-host
 * traces of a distributed job), every host's times put on one time base (docs/formats/trace.md,
 * "Merged traces").
 *
 * Hosts. Inputs whose traces name the same boot id (meta boot_id, else the one boot id their
 * processes share) share CLOCK_MONOTONIC exactly: they are one host of the merge and are never
 * shifted against each other. An input that names no boot id is a host of its own. The host of
 * the reference input (the first, unless the caller picks another) is the time base; every
 * other host's times — events, processes' start and end, clock pairs, notes, meta start/end — are
 * shifted by the difference of the two hosts' (CLOCK_REALTIME − CLOCK_MONOTONIC) offsets,
 * estimated from the clock pairs of their traces (core/clock_offset.h). That assumes the
 * hosts' CLOCK_REALTIME agree (NTP, PTP); the uncertainty stated is that of the pairs, not of the
 * hosts' synchronisation, which kprof cannot see. A host without pairs (traces of formats 1 and
 * 2, which have none), or any host when the reference has none, is not shifted: its offset is
 * unknown, taken as 0, and a note says so.
 *
 * Rows. Strings are interned again (the output's strings.text is UNIQUE); processes, events,
 * metrics, clocks and notes get new ids (an input's ids keep their order and gaps, moved past
 * the rows already in), so correlation stays per process row. A pid of an input that an
 * earlier input's process already has (two hosts, containers, pid reuse) would merge two
 * processes' threads in readers, which key threads by pid: that input's pids (processes.pid,
 * ppid, events.pid) become pid + k·4194304 (the kernel's pid_max limit; k ≥ 1, the smallest
 * that makes them distinct), a note says so and processes.os_pid keeps the pid the system gave.
 * Where that would pass INT32_MAX (Perfetto's pids are int32), the input's pids get the smallest
 * free ids instead (kp_merged_trace.renumbered). Whole-trace notes of an input are copied with
 * its path in front ("a.kprof: ..."); the hosts rows of an input that is a merged trace are
 * carried after the merge's own, on the new time base (docs/formats/trace.md, "hosts").
 *
 * Every input is opened with store/trace_db.h's checks first (NOT_FOUND, INVALID, CORRUPT, the
 * message naming the file); the same file given twice is INVALID. The output is written with
 * SQLite's ATTACH and INSERT ... SELECT, one input at a time, in one transaction.
 */
#ifndef KP_STORE_TRACE_MERGE_H
#define KP_STORE_TRACE_MERGE_H

#include "base/error.h"
#include "base/job.h"
#include "core/clock_offset.h"

#include <stddef.h>
#include <stdint.h>

/* ---- merging files ----------------------------------------------------------------------- */

#define KP_MERGE_PID_STRIDE 4194304 /* 2^22: pids stay below it (the kernel's PID_MAX_LIMIT) */

/* One host of the merge (see the top): a boot id and the inputs recorded on it. */
typedef struct kp_merged_host {
    char *host;             /* its name ("" when no trace says) */
    char *boot_id;          /* its boot id ("" when none says: an input of its own) */
    int reference;          /* 1: the time base */
    int known;              /* 1: its shift is known (the reference itself, or both hosts had
                               clock pairs); 0: unknown, taken as 0 */
    int64_t offset_ns;      /* added to every time of its inputs */
    int64_t uncertainty_ns; /* of offset_ns; -1 unknown */
    size_t pairs;           /* clock pairs its inputs hold */
    size_t *inputs;         /* indexes of its inputs, in the order given */
    size_t ninputs;
} kp_merged_host;

/* A pid given a new id by the merge (processes.os_pid keeps the first). */
typedef struct kp_merged_pid {
    int64_t os_pid, pid;
} kp_merged_pid;

/* What a merge did. Zero it before kp_trace_files_merge; kp_merged_trace_free releases it. */
typedef struct kp_merged_trace {
    uint64_t events, processes, metrics; /* rows written */
    size_t reference;                    /* the reference input's index */
    kp_merged_host *hosts;               /* in the order of their first input */
    size_t nhosts;
    size_t ninputs;             /* the inputs (the per-input arrays below have that many) */
    int64_t *pid_shift;         /* per input: added to its pids (0: none) */
    kp_merged_pid **renumbered; /* per input: its pids given new ids instead (NULL: none), */
    size_t *nrenumbered;        /* ... that many */
    char **notes;               /* the notes of the whole trace the merge wrote (shifts, unknown
                                   offsets, pids), one line each, for the user too */
    size_t nnotes;
} kp_merged_trace;

/* Merge inputs[0..ninputs) (at least one) into a new trace at out_path, a file that does not
 * exist or is empty (the caller's temporary, renamed once this succeeds). reference: the path of
 * the input whose host is the time base, or NULL for the first; a path that is none of the
 * inputs is INVALID. Errors: an input's own (kp_trace_db_open: NOT_FOUND, INVALID, CORRUPT,
 * naming it), INVALID for a file given twice, CORRUPT "PATH is damaged or truncated (...)" when
 * an input fails while it is copied, holds a pid below 0 or near the int64 limit, or holds a
 * time, id or pid that its shift would move past the int64 range; IO for the output, NOMEM. On
 * failure the output is incomplete (the caller removes it) and *res holds what was known so far
 * (free it). */
kprof_status kp_trace_files_merge(const char *out_path, const char *const *inputs, size_t ninputs,
                                  const char *reference, kp_merged_trace *res, kp_error *err);

/* Free what a merge result holds (NULL and a zeroed result are fine) and zero it. */
void kp_merged_trace_free(kp_merged_trace *res);

#endif
