/*
 * event_source.h — how kprof reads a trace file (*.kprof): its meta, processes, notes and
 * strings, the tracks its events lie on, and the events themselves as core/event.h's kp_event,
 * in storage order or in start-time order, filtered by kind. Reports, exports and diff read a
 * trace through it and nothing else: only src/store speaks SQL (trace_ingest.c writes the file,
 * this reads it), so no reader names a column or numbers one.
 *
 * A trace's columns come in converted to the event model: grid_x/y/z count threadgroups and
 * kp_event.grid counts threads (kp_event_set_groups); what a column leaves NULL is unknown
 * (kp_event.known, kp_trace_event.has), never a made-up 0; numbers that do not fit a field
 * saturate (a negative size or count is 0). A device operation can carry the start of the host
 * call that launched it (KP_EVENT_FIELD_LAUNCH): the earliest API call of the same process row
 * and correlation, found in an index the source makes once with one pass over the events, not
 * with a query per operation. The same index says whether a call launched device work that is
 * in the trace (KP_EVENT_FIELD_CALL: KP_TRACE_LAUNCHED, a device operation of the same process
 * row and correlation), for traces of every format version (version 1 also stored it).
 *
 * Metrics (KP_EVENT_FIELD_METRICS): an event's flops and bytes come in as kp_event.metrics with
 * KP_EVENT_HAS_FLOPS and KP_EVENT_HAS_METRIC_BYTES, and its user keys as kp_trace_event.metrics,
 * a few (key, value) pairs in an array the source holds: the trace's metrics table, read once,
 * the first time a reader asks. A trace without metrics (its meta says 0; a version 1 trace has
 * neither the columns nor the table) reads no column and no table for them, so asking costs a
 * reader of such a trace nothing. Values a damaged file may hold that cannot be metrics (not
 * finite; negative flops or bytes) read as unknown.
 *
 * Errors: opening goes through kp_trace_db_open's checks (NOT_FOUND, INVALID, CORRUPT naming the
 * file); a trace found damaged while it is read (cut short, a page that does not decode, the
 * file shrinking under the reader) is CORRUPT "PATH is damaged or truncated (...)", exit 2;
 * NOMEM and IO only for memory and real I/O errors (kp_trace_db_read_error).
 *
 * Threads: a source and its iterators belong to one thread at a time, except an iterator opened
 * with KP_EVENT_ITER_OWN_CONNECTION, which reads through a connection of its own and may be
 * stepped on another thread while the source (whose tables are then read-only) and its other
 * iterators are used on this one.
 */
#ifndef KP_STORE_EVENT_SOURCE_H
#define KP_STORE_EVENT_SOURCE_H

#include "base/error.h"
#include "core/event.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_event_source kp_event_source;

/* What the trace says of the run (its meta table) and what its collectors noted. Strings are
 * "" when the trace does not say; they live as long as the source. */
typedef struct kp_trace_meta {
    const char *command;       /* the traced command line */
    const char *collectors;    /* the collectors injected, "cuda,opencl" */
    const char *kprof_version; /* the version of the kprof that wrote it */
    int64_t start_ns, end_ns;  /* when the command started and ended; 0 when not said (see
                                  kp_event_source_span for the events' own span) */
    int64_t exit_status;       /* its exit code, or 128 + signal; -1 unknown */
    uint64_t dropped;          /* records lost, all processes, as the meta table says */
    const char *host;          /* the host kprof ran on ("" when not said; format 3) */
    const char *boot_id;       /* ... and its boot */
    /* How far apart the hosts' clocks may still be in a trace `kprof merge` put on one time
     * base (its hosts table: trace_merge.h): the largest uncertainty_ns of a host it shifted.
     * 0 for a trace of one host (or of one boot; no hosts table), -1 when the offset of some
     * host is unknown (merged unshifted: no clock pairs, an old format) or the table says
     * something no merge writes (a negative uncertainty). */
    int64_t clock_uncertainty_ns;
    const char *const *notes; /* the notes table's texts, each once, in the order first
                                 written; empty ones left out */
    size_t nnotes;
} kp_trace_meta;

/* A process image that recorded anything (a row of the processes table). */
typedef struct kp_trace_process {
    int64_t id;            /* its row: kp_event.process of its events */
    int64_t pid, ppid;     /* operating-system ids */
    const char *command;   /* its command line ("" when the trace does not say) */
    const char *collector; /* "cuda", "opencl", "nvtx" */
    int64_t start_ns;      /* when its collector started */
    int64_t end_ns;        /* when it exited; 0 with ended 0 */
    int ended;             /* end_ns is known (it did not crash or get killed) */
    int clean_exit;        /* it exited normally and closed its record */
    int truncated;         /* its record file ended inside a record */
    int64_t events;        /* rows it contributed */
    int64_t dropped;       /* records it lost */
    /* Where it stands in a distributed job, as its launcher's environment said (base/job.h);
     * -1 unknown (a process no launcher started, a trace of format 1 or 2). */
    const char *launcher; /* "torchrun", "env", "openmpi", "pmi", "slurm"; "" none */
    int rank, local_rank, world_size, local_world_size, node, restart;
    const char *host;    /* its host's name; "" when not said */
    const char *boot_id; /* its host's boot: processes of one boot share CLOCK_MONOTONIC */
} kp_trace_process;

/* A (CLOCK_MONOTONIC, CLOCK_REALTIME) pair a process (or kprof itself: process 0) read when it
 * started or ended (base/job.h), in the trace's time base: a merged trace's pairs are shifted
 * with their host's events. */
typedef struct kp_trace_clock {
    int64_t process; /* its row; 0: the run's own */
    int64_t mono_ns, real_ns, uncertainty_ns;
} kp_trace_clock;

/* A host thread that made calls or annotations (kinds with KP_EVENT_F_HOST_THREAD). */
typedef struct kp_trace_thread {
    int64_t pid, tid;
} kp_trace_thread;

/* A device's stream or queue that ran device operations, in a process (kinds with
 * KP_EVENT_F_DEVICE). */
typedef struct kp_trace_queue {
    int64_t pid;
    uint32_t device, stream;
    int opencl; /* an OpenCL queue (its operations' domain): named "queue", its device "device" */
} kp_trace_queue;

/* Open a trace read-only (kp_trace_db_open's checks) and read its meta, processes, notes and
 * strings. *out is NULL on failure. */
kprof_status kp_event_source_open(const char *path, kp_event_source **out, kp_error *err);

/* Make every text the source holds what a table for people prints (kprof report, kprof diff):
 * strings (names), the meta's and the processes' texts and the notes, each escaped with
 * kp_str_append_escaped (control characters and bytes that are not UTF-8 as \n, \xNN: a name
 * cannot move the terminal's cursor or break a line). Call it right after opening, for text
 * output only: JSON and CSV escape in their own way from the raw bytes. OK, or NOMEM (the texts
 * then stay as they were, but for some of meta and processes already escaped). */
kprof_status kp_event_source_escape_text(kp_event_source *src, kp_error *err);

/* Close the source (NULL is a no-op). Its iterators must be closed first. */
void kp_event_source_close(kp_event_source *src);

/* The path it was opened with. */
const char *kp_event_source_path(const kp_event_source *src);

const kp_trace_meta *kp_event_source_meta(const kp_event_source *src);

/* The processes, by row id. */
const kp_trace_process *kp_event_source_processes(const kp_event_source *src, size_t *n);

/* The process row that stands for pid, NULL for a pid no row has. A pid can have several rows
 * (each image it exec'd is one, and a damaged file may hold any): the first (lowest row id)
 * that has a rank in a job (rank >= 0), else its first row. Which rows it holds and what each
 * says (rank, host, boot) are the caller's to read from the one returned; to go over every row
 * of a pid use kp_event_source_processes. A binary search in an index the source made when it
 * opened, each pid once: no lookup walks a pid's rows. */
const kp_trace_process *kp_event_source_process_of_pid(const kp_event_source *src, int64_t pid);

/* The clock pairs, in the order written (none before format 3). */
const kp_trace_clock *kp_event_source_clocks(const kp_event_source *src, size_t *n);

/* The text of string id (kp_event.name), with its length in *len (len may be NULL); NULL for 0
 * and for an id the trace has no string for. */
const char *kp_event_source_string(const kp_event_source *src, uint32_t id, size_t *len);

/* Every string by id: names[id] is the text or NULL, for id < *n (the table core/verdict.h's
 * timeline takes). A damaged file may hold any id: the table is bounded (trace_db.h's
 * kp_trace_db_string_slots), and an event naming an id beyond it has name 0. */
const char *const *kp_event_source_strings(const kp_event_source *src, size_t *n);

/* The events' own span: the earliest start and the latest end (0 and 0 without events), for a
 * trace whose meta does not say. */
kprof_status kp_event_source_span(kp_event_source *src, int64_t *first_start, int64_t *last_end,
                                  kp_error *err);

/* The largest row id of an event (0 without events): storage order runs from 1 to it, so a
 * reader can split the events in ranges (kp_event_filter.first_id, last_id). */
kprof_status kp_event_source_last_id(kp_event_source *src, int64_t *last_id, kp_error *err);

/* The host threads, sorted by (pid, tid), and the device queues, sorted by (pid, device,
 * stream); each once. The arrays live as long as the source. The first call of either (or the
 * first iterator with KP_EVENT_FIELD_LAUNCH) makes the source's index: one pass over the
 * events. */
kprof_status kp_event_source_threads(kp_event_source *src, const kp_trace_thread **out, size_t *n,
                                     kp_error *err);
kprof_status kp_event_source_queues(kp_event_source *src, const kp_trace_queue **out, size_t *n,
                                    kp_error *err);

/* 1 when the trace has device operations and every one is OpenCL's (whose devices may be CPUs:
 * reports then say "device" and "queue", not "GPU" and "stream"); 0 otherwise, and when the
 * index cannot be made. Makes the index as above. */
int kp_event_source_opencl_only(kp_event_source *src);

/* ---- events --------------------------------------------------------------------------------- */

/* What an event carries besides the core (kind, name, process row, tid, start, end,
 * correlation), which every event has. Each column costs a million-event pass some 0.03 s: ask
 * for what is used (fields not asked for are zero). */
enum {
    KP_EVENT_FIELD_ROW = 1u << 0,     /* kp_trace_event.id, the row (storage order) */
    KP_EVENT_FIELD_PID = 1u << 1,     /* e.pid */
    KP_EVENT_FIELD_DOMAIN = 1u << 2,  /* e.domain */
    KP_EVENT_FIELD_STREAM = 1u << 3,  /* e.device, e.stream (device ops) */
    KP_EVENT_FIELD_QUEUE = 1u << 4,   /* e.queued_ns, e.submitted_ns (device ops) */
    KP_EVENT_FIELD_CALL = 1u << 5,    /* e.status, and whether a call launched device work */
    KP_EVENT_FIELD_KERNEL = 1u << 6,  /* launch geometry, registers, shared and local memory */
    KP_EVENT_FIELD_PAYLOAD = 1u << 7, /* e.bytes and e.copy_kind (copies, fills), e.range_id */
    KP_EVENT_FIELD_LAUNCH = 1u << 8,  /* device ops: the start of the call that launched them */
    KP_EVENT_FIELD_METRICS = 1u << 9, /* e.metrics (flops, bytes) and the user keys (metrics) */
    KP_EVENT_FIELD_ALL = 0x3ffu
};

typedef enum kp_event_order {
    KP_EVENT_ORDER_STORAGE, /* by row id: as the ingest wrote them (the cheapest) */
    KP_EVENT_ORDER_START    /* by start time; events that start together in storage order */
} kp_event_order;

/* Which events, in which order, with what. Zero it, then set what matters: all events in
 * storage order with the core fields. */
typedef struct kp_event_filter {
    unsigned kind_flags; /* kinds having any of these KP_EVENT_F_* flags ... */
    uint32_t kinds;      /* ... or these kinds (bit 1u << kind); both 0: every event, an
                            unknown kind (KP_EVENT_NONE) included */
    kp_event_order order;
    int64_t first_id, last_id; /* rows first_id..last_id only; last_id 0: to the end */
    unsigned fields;           /* KP_EVENT_FIELD_* */
    unsigned flags;            /* KP_EVENT_ITER_* */
} kp_event_filter;

enum {
    KP_EVENT_ITER_OWN_CONNECTION = 1u << 0 /* read through a connection of its own (see the
                                              top: another thread may step it) */
};

/* What a trace says of an event that the event model has no field or flag for. */
enum {
    KP_TRACE_HAS_BYTES = 1u << 0,    /* e.bytes and e.copy_kind (copies and fills) */
    KP_TRACE_HAS_RANGE_ID = 1u << 1, /* e.range_id (ranges and marks) */
    KP_TRACE_HAS_STATUS = 1u << 2,   /* e.status */
    KP_TRACE_LAUNCHED = 1u << 3,     /* a call that launched device work recorded in the trace */
    KP_TRACE_HAS_LAUNCH = 1u << 4    /* launch_start_ns (KP_EVENT_FIELD_LAUNCH) */
};

/* A user metric of an event (a key other than flops and bytes; the trace's metrics table). */
typedef struct kp_trace_metric {
    int64_t event; /* the event's row (kp_trace_event.id) */
    uint32_t key;  /* the key's string id (kp_event_source_string); 0 when the trace has none */
    double value;  /* finite */
} kp_trace_metric;

typedef struct kp_trace_event {
    kp_event e;              /* e.process is the processes row; e.name a string id */
    int64_t id;              /* its row: storage order (KP_EVENT_FIELD_ROW) */
    unsigned has;            /* KP_TRACE_* */
    int64_t launch_start_ns; /* device ops: when the call that launched it started */
    /* Its user metrics (KP_EVENT_FIELD_METRICS), each key once (a key written twice: its last
     * value), in the source's memory (valid while it is open); NULL with nmetrics 0 for none. */
    const kp_trace_metric *metrics;
    size_t nmetrics;
} kp_trace_event;

/* 1 when the trace may hold metrics (flops, bytes, user keys): its meta counts some, or it has
 * the columns and does not say. 0 for a trace without (a version 1 trace among them), whose
 * readers can leave out what only metrics need. */
int kp_event_source_has_metrics(const kp_event_source *src);

/* The user metrics of the event of row event_id (kp_trace_event.id): *out and *n as
 * kp_trace_event.metrics and nmetrics (NULL and 0 when it has none). The first call (or the first
 * iterator with KP_EVENT_FIELD_METRICS) reads the trace's metrics table; each later call is a
 * binary search. Errors: as the iterators' (a damaged table is CORRUPT), NOMEM. */
kprof_status kp_event_source_metrics(kp_event_source *src, int64_t event_id,
                                     const kp_trace_metric **out, size_t *n, kp_error *err);

typedef struct kp_event_iter kp_event_iter;

/* Start reading the events filter selects (NULL: all, in storage order, the core fields). *out
 * is NULL on failure. */
kprof_status kp_event_iter_open(kp_event_source *src, const kp_event_filter *filter,
                                kp_event_iter **out, kp_error *err);

/* The next event into *ev: 1, or 0 at the end and when reading failed (kp_event_iter_close says
 * which). Fields not asked for are zero. */
int kp_event_iter_next(kp_event_iter *it, kp_trace_event *ev);

/* Close the iterator (NULL is a no-op, KPROF_OK): KPROF_OK when every event was read or reading
 * stopped early by choice, else why reading failed, in err. */
kprof_status kp_event_iter_close(kp_event_iter *it, kp_error *err);

#endif
