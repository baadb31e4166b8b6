/*
 * trace_db.h — the trace file (*.kprof): an SQLite database with a documented schema
 * (docs/formats/trace.md) that every report and export reads. `kprof trace` writes it from the
 * per-process record files its collectors left; readers open it read-only and refuse anything
 * that is not a kprof trace with a clear error. Its events.kind, events.domain and
 * events.copy_kind are the numbers of core/event.h's lists (the kinds and domains tables hold
 * their names).
 */
#ifndef KP_STORE_TRACE_DB_H
#define KP_STORE_TRACE_DB_H

#include "base/error.h"
#include "core/event.h"
#include "base/job.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>

#define KP_TRACE_FORMAT_VERSION 3 /* what this kprof writes */
#define KP_TRACE_FORMAT_OLDEST  1 /* the oldest it reads (docs/formats/trace.md: what changed) */
#define KP_TRACE_APPLICATION_ID 0x4b50524f /* "KPRO" */

/* What `kprof trace` knows about the run, for the meta table. */
typedef struct kp_trace_run {
    const char *command;        /* the command line as given */
    uint64_t start_ns;          /* CLOCK_MONOTONIC when the command started */
    uint64_t end_ns;            /* ... and when it ended */
    int exit_status;            /* its exit code, or 128 + signal */
    const char *collectors;     /* e.g. "cuda,opencl" */
    int one_process;            /* every record file is of this one process image (libkprof's
                                   session: its own file and its OpenCL layer's): one process row */
    const char *host, *boot_id; /* where it ran (base/job.h); NULL: not said */
    kp_clock_pair start_clock;  /* (CLOCK_MONOTONIC, CLOCK_REALTIME) when it started ... */
    kp_clock_pair end_clock;    /* ... and when it ended; real_ns 0: not read */
} kp_trace_run;

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
} kp_trace_summary;

/*
 * Merging a folder of record files (*.klog) into a new trace written at path: a file that does
 * not exist or is empty (the caller's temporary, renamed over the real name once this succeeds).
 *
 * While the program runs, kp_trace_merge_poll merges what its processes' writers have marked
 * whole (record.h: the header's `submitted`); kp_trace_merge_finish merges the rest of every file
 * (a file cut short by a crash up to its last whole record), fills in the processes' counters
 * and the meta table, and commits. Events go in as they arrive; readers take them in time order
 * through the index on start_ns. Stops with IO ("the merge was interrupted") once *cancel
 * becomes non-zero (cancel may be NULL). A run with end_ns 0 ends at its last record.
 *
 * Threads: one merge is used by one thread at a time (poll from a helper thread while the
 * program runs, then finish from another once the helper has stopped is fine).
 */
typedef struct kp_trace_merge kp_trace_merge;

kprof_status kp_trace_merge_open(const char *path, const volatile sig_atomic_t *cancel,
                                 kp_trace_merge **merge, kp_error *err);
/* Merge what is whole now; a failure is kept and returned again by kp_trace_merge_finish. */
kprof_status kp_trace_merge_poll(kp_trace_merge *merge, const char *dir);
/* The rest, then commit and close; frees merge whatever happens. */
kprof_status kp_trace_merge_finish(kp_trace_merge *merge, const char *dir, const kp_trace_run *run,
                                   kp_trace_summary *summary, kp_error *err);
/* The events merged so far (0 for NULL). */
uint64_t kp_trace_merge_events(const kp_trace_merge *merge);
/* Give up: close and free (the caller removes the file). NULL is a no-op. */
void kp_trace_merge_abort(kp_trace_merge *merge);

/* Open, then finish: the whole folder at once (`kprof trace --merge DIR`). */
kprof_status kp_trace_db_write(const char *path, const char *dir, const kp_trace_run *run,
                               const volatile sig_atomic_t *cancel, kp_trace_summary *summary,
                               kp_error *err);

/* Make the tables of a new, empty trace of this format in db, for a writer that fills them in
 * bulk rather than from record files (store/trace_merge.h): application id and format version,
 * the schema with the events' metric columns, the kinds and domains rows and event_view; no
 * index (kp_trace_db_create_index, once the rows are in: one sort is cheaper than keeping the
 * index up row by row). SQLITE_OK or SQLite's error (its message in db). */
int kp_trace_db_create(sqlite3 *db);
int kp_trace_db_create_index(sqlite3 *db);

/* The meta table's keys (docs/formats/trace.md), as `kprof trace` and `kprof merge` both write
 * them: format, format_version, kprof_version, command, start_ns, end_ns, exit_status,
 * collectors, dropped, metrics, clock (1: CLOCK_MONOTONIC), then host, boot_id and merged_from
 * where they are not NULL. NULL command or collectors write "". SQLITE_OK or SQLite's error. */
typedef struct kp_trace_meta_keys {
    const char *command, *collectors;
    int64_t start_ns, end_ns, exit_status, dropped, metrics;
    const char *host, *boot_id; /* where it ran; NULL: not said */
    const char *merged_from;    /* kprof merge's inputs, one per line; NULL for a trace */
} kp_trace_meta_keys;
int kp_trace_db_write_meta(sqlite3 *db, const kp_trace_meta_keys *meta);

/* Whether a table of schema ("main", or an attached database's name; NULL: main) exists, and
 * whether it has a column: what readers of older formats probe (columns and tables that came
 * with a later format). 0 when the query fails. */
int kp_trace_db_has_table(sqlite3 *db, const char *schema, const char *table);
int kp_trace_db_has_column(sqlite3 *db, const char *schema, const char *table, const char *column);

/* Open a trace read-only, checking it is one: NOT_FOUND or INVALID (kp_input_check) unless it
 * is a regular file, so a FIFO is refused without blocking; CORRUPT with the reason when it is
 * not a kprof trace, is one of a format version this kprof does not read (it reads
 * KP_TRACE_FORMAT_OLDEST .. KP_TRACE_FORMAT_VERSION; the error names both), or is cut short. The
 * file is read, never mapped: a
 * trace that shrinks while it is read is reported (kp_trace_db_read_error), not a SIGBUS. */
kprof_status kp_trace_db_open(const char *path, sqlite3 **db, kp_error *err);

/* How many slots a table of names indexed by string id needs: MAX(id) + 1 of the strings
 * table, at least 1. A damaged or edited file may hold any id: the count is bounded by the
 * number of strings (twice it, plus 65536), and ids beyond it read as unknown names. */
int64_t kp_trace_db_string_slots(sqlite3 *db);

/* The error for a query on an open trace that failed (sqlite_code and message from
 * sqlite3_errcode/errmsg): CORRUPT "PATH is damaged or truncated (...)" for anything the file's
 * contents explain, a file that shrank while it was read included; NOMEM and IO (exit 1) only
 * for memory and real I/O errors. path may be NULL (the text then says "the trace"). */
kprof_status kp_trace_db_read_error(const char *path, int sqlite_code, const char *message,
                                    kp_error *err);

/* A meta value as text ("" when absent), or as an integer. */
/* The first column of the first row of sql (a one-number query), or fallback when there is none
 * or the query fails. */
int64_t kp_trace_db_scalar(sqlite3 *db, const char *sql, int64_t fallback);

void kp_trace_db_meta(sqlite3 *db, const char *key, char *out, size_t n);
int64_t kp_trace_db_meta_int(sqlite3 *db, const char *key);

#endif
