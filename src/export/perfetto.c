/*
 * perfetto.c — a trace as a native Perfetto trace: a `Trace` message, which is a sequence of
 * `TracePacket`s (field 1), encoded with export/protobuf.h against perfetto's public protos
 * (trace_packet.proto, track_descriptor.proto, track_event.proto, interned_data.proto,
 * clock_snapshot.proto). What goes in:
 *
 *   - a ClockSnapshot naming CLOCK_MONOTONIC (BUILTIN_CLOCK_MONOTONIC, 3) the trace's clock, and
 *     TracePacketDefaults giving every packet that clock: times are the trace's own nanoseconds,
 *     unchanged;
 *   - one packet sequence (trusted_packet_sequence_id 1) whose first packet clears the
 *     incremental state (SEQ_INCREMENTAL_STATE_CLEARED) and interns the categories and the
 *     argument names; event names are interned (iid = the trace's string id) in the packet that
 *     first uses them, and every later packet says it needs that state;
 *   - a TrackDescriptor per process (ProcessDescriptor: pid, the command; the pid as
 *     export/pid_map.h writes it, so it fits the field's 32 bits), per host thread
 *     (ThreadDescriptor: pid, tid), per device under its process ("GPU 0"; an OpenCL one
 *     "device 0") and per stream or queue under its device ("GPU 0 · stream 7", "device 0 ·
 *     queue 1"), each written just before its first event; a
 *     process with a rank in a distributed job (base/job.h) is named "rank 1 · pid 4242
 *     (python train.py)", its device and stream tracks "rank 1 · GPU 1" and "rank 1 · GPU 1 ·
 *     stream 7";
 *   - a slice (TYPE_SLICE_BEGIN, then TYPE_SLICE_END) per API call, kernel, copy, fill, sync,
 *     NVTX range and overhead record, an instant (TYPE_INSTANT) per NVTX mark; host events on
 *     their thread's track, device work on its stream's; the arguments the Chrome export
 *     carries as debug annotations (grid, block or global size, registers, shared bytes,
 *     bytes, correlation, NVTX range id, and the queue and launch waits in ns; the metrics:
 *     flops, bytes, gflop_per_s and gb_per_s over the slice's time, each user key by its name);
 *   - a flow from each API call to the device work it launched (flow_ids on the call,
 *     terminating_flow_ids on the work), paired as the Chrome export pairs them: same process
 *     row and correlation.
 *
 * Perfetto nests the slices of a track by their begin and end order, so the packets are written
 * in time order: events are read by start time (the longer first, so an enclosing range comes
 * before what it encloses), and each slice's end waits in a heap until the next event starts
 * after it. A slice that overlaps one still open on its track without nesting inside it (two
 * kernels on one OpenCL out-of-order queue, damaged times) goes to an overflow track under that
 * track ("(overlap 1)"), so no end ever closes the wrong slice. Output is handed to a kp_output
 * in chunks of about a MiB: memory holds the names, the tracks and the slices open at once,
 * never the events.
 *
 * kp_perfetto_read is the only code that reads the trace, through the event source
 * (store/event_source.h), on a second thread while this one encodes and writes.
 */
#define _GNU_SOURCE
#include "export/perfetto.h"
#include "core/event.h"
#include "base/util.h"
#include "export/pid_map.h"
#include "export/protobuf.h"
#include "store/event_source.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- What the reader hands over --------------------------------------------------------- */

/* One event, as the export needs it: what an event source will give. */
typedef struct kp_pf_event {
    int64_t id;                /* its row: orders events that start and end together */
    int kind;                  /* KP_EVENT_* (core/event.h) */
    int64_t pid, tid, process; /* pid: as written (export/pid_map.h); process: its row in the
                                  trace (correlations are per row) */
    int64_t start_ns, end_ns;  /* CLOCK_MONOTONIC */
    int64_t name;              /* strings.id */
    int has_correlation;
    int64_t correlation;
    int64_t device, stream;    /* device work */
    int64_t domain;            /* KP_DOMAIN_OPENCL: a queue, not a stream */
    int launched;              /* an API call whose device work is in the trace */
    int has_grid;              /* kernels: grid and block known */
    int64_t grid[3], block[3]; /* block 0: no local size, grid holds the work-items */
    int has_registers, has_shared, has_bytes, has_range;
    int64_t registers, shared_bytes, bytes, range_id;
    int has_reflection;    /* an OpenCL kernel's reflection on its device */
    int64_t reflection[4]; /* max threadgroup size, preferred multiple, local, private bytes */
    int has_wait[3];       /* device work: start minus when it was queued, submitted, */
    int64_t wait_ns[3];    /* and when the call that launched it began */
    int has_flops, has_metric_bytes; /* its metrics; a bytes metric stands for a copy's size */
    double flops, metric_bytes;
    const kp_trace_metric *metrics; /* its user metrics, in the source's memory */
    size_t nmetrics;
} kp_pf_event;

/* What kp_perfetto_read calls, in this order: begin once, every string, every process (id: its
 * pid as written; pid: the trace's), then every event in time order. A callback that fails sets
 * the error and stops the reading. */
typedef struct kp_pf_visitor {
    kprof_status (*begin)(void *ctx, int64_t start_ns, int64_t string_slots);
    kprof_status (*string)(void *ctx, int64_t id, const char *text, size_t len);
    kprof_status (*process)(void *ctx, int64_t id, int64_t pid, int rank, const char *command,
                            size_t len);
    kprof_status (*event)(void *ctx, const kp_pf_event *ev);
} kp_pf_visitor;

/* Events that start together: the longer first, so that a slice encloses those it holds, and an
 * NVTX range before the call it holds that lasts as long; then storage order. */
static int kp_pf_event_order(const void *x, const void *y)
{
    const kp_pf_event *a = x, *b = y;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
    int ar = a->kind != KP_EVENT_RANGE, br = b->kind != KP_EVENT_RANGE;
    if (ar != br) return ar - br;
    return (a->id > b->id) - (a->id < b->id);
}

/* One event of the source as the writer takes it (the trace's own conventions: grid counts
 * threadgroups, or work-items where the runtime chose the group size). */
static void kp_pf_from_source(const kp_trace_event *t, kp_pf_event *e)
{
    const kp_event *ev = &t->e;
    memset(e, 0, sizeof *e);
    e->id = t->id;
    e->kind = ev->kind;
    e->pid = ev->pid;
    e->tid = ev->tid;
    e->process = ev->process;
    e->start_ns = ev->start_ns;
    e->end_ns = ev->end_ns;
    e->name = ev->name;
    e->has_correlation = (ev->known & KP_EVENT_HAS_CORRELATION) != 0;
    e->correlation = (int64_t)ev->correlation;
    e->has_bytes = (t->has & KP_TRACE_HAS_BYTES) != 0;
    e->bytes = e->has_bytes ? (int64_t)(ev->bytes > INT64_MAX ? INT64_MAX : ev->bytes) : 0;
    if (ev->kind == KP_EVENT_API) e->launched = (t->has & KP_TRACE_LAUNCHED) != 0;
    e->has_flops = (ev->known & KP_EVENT_HAS_FLOPS) != 0;
    e->flops = ev->metrics.flops;
    e->has_metric_bytes = (ev->known & KP_EVENT_HAS_METRIC_BYTES) != 0;
    e->metric_bytes = ev->metrics.bytes;
    e->metrics = t->metrics;
    e->nmetrics = t->nmetrics;
    if (ev->kind == KP_EVENT_RANGE) {
        e->has_range = (t->has & KP_TRACE_HAS_RANGE_ID) != 0;
        e->range_id = (int64_t)ev->range_id;
    }
    if (kp_event_kind_on_device(ev->kind)) {
        e->device = ev->device;
        e->stream = ev->stream;
        e->domain = ev->domain;
        if ((e->has_wait[0] = (ev->known & KP_EVENT_HAS_QUEUED) != 0))
            e->wait_ns[0] = kp_ns_diff(ev->start_ns, ev->queued_ns);
        if ((e->has_wait[1] = (ev->known & KP_EVENT_HAS_SUBMITTED) != 0))
            e->wait_ns[1] = kp_ns_diff(ev->start_ns, ev->submitted_ns);
        if ((e->has_wait[2] = (t->has & KP_TRACE_HAS_LAUNCH) != 0))
            e->wait_ns[2] = kp_ns_diff(ev->start_ns, t->launch_start_ns);
    }
    if (ev->kind == KP_EVENT_KERNEL && (ev->known & KP_EVENT_HAS_GEOMETRY)) {
        e->has_grid = 1;
        uint64_t groups[3];
        kp_event_groups(ev, groups);
        for (int c = 0; c < 3; c++) {
            uint64_t g = kp_event_runtime_groups(ev) ? ev->grid[c] : groups[c];
            e->grid[c] = g > INT64_MAX ? INT64_MAX : (int64_t)g;
            e->block[c] = ev->group[c];
        }
        if ((e->has_registers = (ev->known & KP_EVENT_HAS_REGISTERS) != 0))
            e->registers = ev->registers;
        if ((e->has_shared = (ev->known & KP_EVENT_HAS_SHARED) != 0)) {
            uint64_t sum = ev->static_shared + ev->dynamic_shared;
            e->shared_bytes = sum < ev->static_shared || sum > INT64_MAX ? INT64_MAX : (int64_t)sum;
        }
        if ((e->has_reflection = (ev->known & KP_EVENT_HAS_CL_REFLECTION) != 0)) {
            e->reflection[0] = ev->max_threads_per_group;
            e->reflection[1] = ev->group_multiple;
            e->reflection[2] = ev->cl_local_mem > INT64_MAX ? INT64_MAX : (int64_t)ev->cl_local_mem;
            e->reflection[3] =
                ev->cl_private_mem > INT64_MAX ? INT64_MAX : (int64_t)ev->cl_private_mem;
        }
    }
}

/* Hand a group of events that start together to the visitor, in order. */
static kprof_status kp_pf_read_group(kp_pf_event *group, size_t n, const kp_pf_visitor *v,
                                     void *ctx)
{
    if (n > 1) qsort(group, n, sizeof *group, kp_pf_event_order);
    for (size_t i = 0; i < n; i++) {
        kprof_status st = v->event(ctx, &group[i]);
        if (st != KPROF_OK) return st;
    }
    return KPROF_OK;
}

/* The trace, read through the event source: begin, the strings, the processes (each pid once,
 * by the row that stands for it: kp_event_source_process_of_pid), then the events by start time
 * (kp_pf_event_order for those that start together), each device operation with the start of
 * the call that launched it; pids as export/pid_map.h writes them. */
static kprof_status kp_perfetto_read(kp_event_source *src, const kp_pf_visitor *v, void *ctx,
                                     kp_error *err)
{
    const kp_trace_meta *meta = kp_event_source_meta(src);
    int64_t t0 = meta->start_ns, last_end = 0;
    kprof_status st = KPROF_OK;
    if (t0 == 0 && (st = kp_event_source_span(src, &t0, &last_end, err)) != KPROF_OK) return st;
    size_t nstrings = 0;
    kp_event_source_strings(src, &nstrings);
    st = v->begin(ctx, t0, (int64_t)nstrings);
    for (size_t id = 1; st == KPROF_OK && id < nstrings; id++) {
        size_t len = 0;
        const char *text = kp_event_source_string(src, (uint32_t)id, &len);
        if (text) st = v->string(ctx, (int64_t)id, text, len);
    }
    kp_pid_map pids = {0};
    if (st == KPROF_OK) st = kp_pid_map_make(&pids, src, 0, err);
    size_t nprocs = 0;
    const kp_trace_process *procs = kp_event_source_processes(src, &nprocs);
    for (size_t i = 0; st == KPROF_OK && i < nprocs; i++) {
        const kp_trace_process *p = kp_event_source_process_of_pid(src, procs[i].pid);
        if (p == &procs[i])
            st = v->process(ctx, kp_pid_map_pid(&pids, p->pid), p->pid, p->rank, p->command,
                            strlen(p->command));
    }
    if (st != KPROF_OK) {
        kp_pid_map_free(&pids);
        return st;
    }

    kp_event_filter filter = {
        .order = KP_EVENT_ORDER_START,
        .fields = KP_EVENT_FIELD_ROW | KP_EVENT_FIELD_PID | KP_EVENT_FIELD_DOMAIN |
                  KP_EVENT_FIELD_STREAM | KP_EVENT_FIELD_QUEUE | KP_EVENT_FIELD_CALL |
                  KP_EVENT_FIELD_KERNEL | KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_LAUNCH |
                  KP_EVENT_FIELD_METRICS,
    };
    kp_event_iter *it = NULL;
    if ((st = kp_event_iter_open(src, &filter, &it, err)) != KPROF_OK) {
        kp_pid_map_free(&pids);
        return st;
    }
    kp_pf_event *group = NULL;
    int64_t last_pid = 0, last_id = kp_pid_map_pid(&pids, 0);
    size_t ngroup = 0, capgroup = 0;
    kp_trace_event t;
    while (st == KPROF_OK && kp_event_iter_next(it, &t) == 1) {
        if (ngroup > 0 && group[0].start_ns != t.e.start_ns) {
            st = kp_pf_read_group(group, ngroup, v, ctx);
            ngroup = 0;
            if (st != KPROF_OK) break;
        }
        if (ngroup == capgroup) {
            size_t cap = capgroup ? capgroup * 2 : 16;
            kp_pf_event *g = realloc(group, cap * sizeof *g);
            if (!g) {
                st = kp_error_nomem(err);
                break;
            }
            group = g;
            capgroup = cap;
        }
        if (t.e.pid != last_pid) {
            last_pid = t.e.pid;
            last_id = kp_pid_map_pid(&pids, t.e.pid);
        }
        kp_pf_from_source(&t, &group[ngroup]);
        group[ngroup++].pid = last_id;
    }
    kprof_status read = kp_event_iter_close(it, err);
    if (st == KPROF_OK) st = read;
    if (st == KPROF_OK) st = kp_pf_read_group(group, ngroup, v, ctx);
    free(group);
    kp_pid_map_free(&pids);
    return st;
}

/* ---- Perfetto's field numbers and values (protos/perfetto/trace/...) --------------------- */

enum { KP_PF_TRACE_PACKET = 1 }; /* Trace.packet */

enum { /* TracePacket */
       KP_PF_PACKET_CLOCK_SNAPSHOT = 6,
       KP_PF_PACKET_TIMESTAMP = 8,
       KP_PF_PACKET_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
       KP_PF_PACKET_TRACK_EVENT = 11,
       KP_PF_PACKET_INTERNED_DATA = 12,
       KP_PF_PACKET_SEQUENCE_FLAGS = 13,
       KP_PF_PACKET_DEFAULTS = 59, /* trace_packet_defaults */
       KP_PF_PACKET_TRACK_DESCRIPTOR = 60,
       KP_PF_PACKET_FIRST_ON_SEQUENCE = 87
};

enum { KP_PF_SEQ_INCREMENTAL_STATE_CLEARED = 1, KP_PF_SEQ_NEEDS_INCREMENTAL_STATE = 2 };

enum { /* ClockSnapshot, ClockSnapshot.Clock, TracePacketDefaults */
       KP_PF_SNAPSHOT_CLOCKS = 1,
       KP_PF_SNAPSHOT_PRIMARY_CLOCK = 2,
       KP_PF_CLOCK_ID = 1,
       KP_PF_CLOCK_TIMESTAMP = 2,
       KP_PF_DEFAULTS_CLOCK_ID = 58,
       KP_PF_BUILTIN_CLOCK_MONOTONIC = 3
};

enum { /* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
       KP_PF_TRACK_UUID = 1,
       KP_PF_TRACK_NAME = 2,
       KP_PF_TRACK_PROCESS = 3,
       KP_PF_TRACK_THREAD = 4,
       KP_PF_TRACK_PARENT_UUID = 5,
       KP_PF_TRACK_CHILD_ORDERING = 11,
       KP_PF_TRACK_SIBLING_ORDER_RANK = 12,
       KP_PF_CHILD_ORDERING_EXPLICIT = 3,
       KP_PF_PROCESS_PID = 1,
       KP_PF_PROCESS_NAME = 6,
       KP_PF_THREAD_PID = 1,
       KP_PF_THREAD_TID = 2,
       KP_PF_THREAD_NAME = 5
};

enum { /* TrackEvent, DebugAnnotation */
       KP_PF_EVENT_CATEGORY_IIDS = 3,
       KP_PF_EVENT_DEBUG_ANNOTATIONS = 4,
       KP_PF_EVENT_TYPE = 9,
       KP_PF_EVENT_NAME_IID = 10,
       KP_PF_EVENT_TRACK_UUID = 11,
       KP_PF_EVENT_NAME = 23,
       KP_PF_EVENT_FLOW_IDS = 47,
       KP_PF_EVENT_TERMINATING_FLOW_IDS = 48,
       KP_PF_TYPE_SLICE_BEGIN = 1,
       KP_PF_TYPE_SLICE_END = 2,
       KP_PF_TYPE_INSTANT = 3,
       KP_PF_ANNOTATION_NAME_IID = 1,
       KP_PF_ANNOTATION_INT_VALUE = 4,
       KP_PF_ANNOTATION_DOUBLE_VALUE = 5,
       KP_PF_ANNOTATION_NAME = 10,
       KP_PF_ANNOTATION_ARRAY_VALUES = 12
};

enum { /* InternedData; each entry is {iid = 1, name = 2} */
       KP_PF_INTERNED_CATEGORIES = 1,
       KP_PF_INTERNED_EVENT_NAMES = 2,
       KP_PF_INTERNED_ANNOTATION_NAMES = 3,
       KP_PF_INTERNED_IID = 1,
       KP_PF_INTERNED_NAME = 2
};

/* Categories, interned in the first packet (iid = the enum's value): the export categories of
 * event.h's kind list, in its order, and "other" — what a kind whose category is missing here
 * would come out as (tests/cli/test_perfetto.py checks each kind's category). */
#define KP_PF_CATEGORY_LIST(X)                                                                     \
    X(API, "api")                                                                                  \
    X(KERNEL, "kernel")                                                                            \
    X(MEMCPY, "memcpy")                                                                            \
    X(MEMSET, "memset")                                                                            \
    X(SYNC, "sync")                                                                                \
    X(NVTX, "nvtx")                                                                                \
    X(OVERHEAD, "overhead")                                                                        \
    X(OTHER, "other")
#define KP_PF_ENUM(name, text) KP_PF_CAT_##name,
enum { KP_PF_CAT_NONE, KP_PF_CATEGORY_LIST(KP_PF_ENUM) KP_PF_CAT_COUNT };
#undef KP_PF_ENUM
#define KP_PF_TEXT(name, text) text,
static const char *const kp_pf_categories[KP_PF_CAT_COUNT] = {NULL,
                                                              KP_PF_CATEGORY_LIST(KP_PF_TEXT)};

/* A kind's category (event.h's list names it) as its iid here; "other" for what the list does
 * not know. */
static uint64_t kp_pf_category(int kind)
{
    const char *name = kp_event_kind_category(kind);
    for (int i = 1; name && i < KP_PF_CAT_COUNT; i++)
        if (strcmp(kp_pf_categories[i], name) == 0) return (uint64_t)i;
    return KP_PF_CAT_OTHER;
}

/* Argument names (debug annotations), interned in the first packet (iid = the enum's value). */
#define KP_PF_ARG_LIST(X)                                                                          \
    X(CORRELATION, "correlation")                                                                  \
    X(GRID, "grid")                                                                                \
    X(BLOCK, "block")                                                                              \
    X(GLOBAL_SIZE, "global_size")                                                                  \
    X(REGISTERS, "registers")                                                                      \
    X(SHARED_BYTES, "shared_bytes")                                                                \
    X(MAX_THREADGROUP_SIZE, "max_threadgroup_size")                                                \
    X(PREFERRED_MULTIPLE, "preferred_multiple")                                                    \
    X(STATIC_LOCAL_BYTES, "static_local_bytes")                                                    \
    X(PRIVATE_BYTES, "private_bytes")                                                              \
    X(QUEUED_TO_START, "queued_to_start_ns")                                                       \
    X(SUBMITTED_TO_START, "submitted_to_start_ns")                                                 \
    X(LAUNCH_TO_START, "launch_to_start_ns")                                                       \
    X(BYTES, "bytes")                                                                              \
    X(RANGE_ID, "range_id")                                                                        \
    X(FLOPS, "flops")                                                                              \
    X(GFLOP_PER_S, "gflop_per_s")                                                                  \
    X(GB_PER_S, "gb_per_s")
#define KP_PF_ENUM(name, text) KP_PF_ARG_##name,
enum { KP_PF_ARG_NONE, KP_PF_ARG_LIST(KP_PF_ENUM) KP_PF_ARG_COUNT };
#undef KP_PF_ENUM
static const char *const kp_pf_arg_names[KP_PF_ARG_COUNT] = {NULL, KP_PF_ARG_LIST(KP_PF_TEXT)};
#undef KP_PF_TEXT

#define KP_PF_SEQUENCE 1 /* our one packet sequence */

/* ---- The writer -------------------------------------------------------------------------- */

enum { KP_PF_PROCESS, KP_PF_THREAD, KP_PF_DEVICE, KP_PF_STREAM };

typedef struct kp_pf_track {
    uint64_t uuid;     /* TrackDescriptor.uuid: its index + 1 */
    int type;          /* KP_PF_PROCESS ... */
    int64_t pid, a, b; /* thread: a = tid; device: a = device; stream: a = device, b = stream */
    int lane;          /* 0: the track itself; 1, 2...: its overflow tracks */
    int rank;          /* its process's rank in a job, -1 none (process tracks) */
    int32_t overflow;  /* index of the next lane, -1 none yet */
    int64_t *open;     /* ends of the slices open on it, the innermost last */
    size_t nopen, capopen;
} kp_pf_track;

/* A slice's end, waiting for its time: ordered by end, then inner (later start, later begin)
 * before outer, which is the order each track's open slices close in. */
typedef struct kp_pf_pending {
    int64_t end, start;
    uint64_t seq;  /* begin order */
    int32_t track; /* the lane it is open on */
} kp_pf_pending;

typedef struct kp_pf_writer {
    kp_pb pb;
    kp_output *out;
    kp_error *err;
    kp_str *names;           /* by string id, valid UTF-8 */
    unsigned char *interned; /* 1 once a name's iid was written */
    int64_t nnames;
    kp_pf_track *tracks;
    size_t ntracks, captracks;
    int32_t *slots; /* hash of the tracks that are not lanes: index + 1, 0 empty */
    size_t nslots;
    kp_pf_pending *heap;
    size_t nheap, capheap;
    uint64_t seq;
} kp_pf_writer;

static kprof_status kp_pf_sink(void *ctx, const void *data, size_t len)
{
    kp_pf_writer *w = ctx;
    return kp_output_write(w->out, data, len, w->err);
}

/* The error for a failed encoder (the sink set its own). */
static kprof_status kp_pf_check(kp_pf_writer *w)
{
    switch (w->pb.failed) {
    case KP_PB_OK:
        return KPROF_OK;
    case KP_PB_NOMEM:
        return kp_error_nomem(w->err);
    case KP_PB_SINK_FAILED:
        return w->err->status != KPROF_OK
                   ? w->err->status
                   : kp_error_set(w->err, KPROF_IO, "writing the export failed");
    default:
        return kp_error_set(w->err, KPROF_IO, "internal error: the Perfetto encoder was misused");
    }
}

static kprof_status kp_pf_nomem(kp_pf_writer *w)
{
    return kp_error_nomem(w->err);
}

/* Open a packet on our sequence; needs_state: it uses interned data. */
static void kp_pf_packet_begin(kp_pf_writer *w, int needs_state)
{
    kp_pb_begin(&w->pb, KP_PF_TRACE_PACKET);
    kp_pb_varint(&w->pb, KP_PF_PACKET_SEQUENCE_ID, KP_PF_SEQUENCE);
    if (needs_state)
        kp_pb_varint(&w->pb, KP_PF_PACKET_SEQUENCE_FLAGS, KP_PF_SEQ_NEEDS_INCREMENTAL_STATE);
}

/* Times from a file may be anything: the wire's timestamps are unsigned. */
static uint64_t kp_pf_time(int64_t ns)
{
    return ns < 0 ? 0 : (uint64_t)ns;
}

static void kp_pf_interned(kp_pb *pb, uint32_t field, uint64_t iid, const char *name, size_t len)
{
    kp_pb_begin(pb, field);
    kp_pb_varint(pb, KP_PF_INTERNED_IID, iid);
    kp_pb_bytes(pb, KP_PF_INTERNED_NAME, name, len);
    kp_pb_end(pb);
}

static kprof_status kp_pf_begin(void *ctx, int64_t start_ns, int64_t string_slots)
{
    kp_pf_writer *w = ctx;
    w->nnames = string_slots > 0 ? string_slots : 1;
    w->names = calloc((size_t)w->nnames, sizeof *w->names);
    w->interned = calloc((size_t)w->nnames, 1);
    if (!w->names || !w->interned) return kp_pf_nomem(w);
    kp_pb *pb = &w->pb;
    /* The clock: CLOCK_MONOTONIC is the trace's, so its times need no conversion. */
    kp_pf_packet_begin(w, 0);
    kp_pb_begin(pb, KP_PF_PACKET_CLOCK_SNAPSHOT);
    kp_pb_begin(pb, KP_PF_SNAPSHOT_CLOCKS);
    kp_pb_varint(pb, KP_PF_CLOCK_ID, KP_PF_BUILTIN_CLOCK_MONOTONIC);
    kp_pb_varint(pb, KP_PF_CLOCK_TIMESTAMP, kp_pf_time(start_ns));
    kp_pb_end(pb);
    kp_pb_varint(pb, KP_PF_SNAPSHOT_PRIMARY_CLOCK, KP_PF_BUILTIN_CLOCK_MONOTONIC);
    kp_pb_end(pb);
    kp_pb_end(pb);
    /* The sequence starts: its defaults, the categories and the argument names. */
    kp_pf_packet_begin(w, 0);
    kp_pb_varint(pb, KP_PF_PACKET_SEQUENCE_FLAGS, KP_PF_SEQ_INCREMENTAL_STATE_CLEARED);
    kp_pb_varint(pb, KP_PF_PACKET_FIRST_ON_SEQUENCE, 1);
    kp_pb_begin(pb, KP_PF_PACKET_DEFAULTS);
    kp_pb_varint(pb, KP_PF_DEFAULTS_CLOCK_ID, KP_PF_BUILTIN_CLOCK_MONOTONIC);
    kp_pb_end(pb);
    kp_pb_begin(pb, KP_PF_PACKET_INTERNED_DATA);
    for (int i = 1; i < KP_PF_CAT_COUNT; i++)
        kp_pf_interned(pb, KP_PF_INTERNED_CATEGORIES, (uint64_t)i, kp_pf_categories[i],
                       strlen(kp_pf_categories[i]));
    for (int i = 1; i < KP_PF_ARG_COUNT; i++)
        kp_pf_interned(pb, KP_PF_INTERNED_ANNOTATION_NAMES, (uint64_t)i, kp_pf_arg_names[i],
                       strlen(kp_pf_arg_names[i]));
    kp_pb_end(pb);
    kp_pb_end(pb);
    return kp_pf_check(w);
}

static kprof_status kp_pf_string(void *ctx, int64_t id, const char *text, size_t len)
{
    kp_pf_writer *w = ctx;
    if (id <= 0 || id >= w->nnames) return KPROF_OK; /* read as an unknown name */
    kp_str *s = &w->names[id];
    s->len = 0;
    kp_str_append_utf8(s, text, len);
    if (!s->data) kp_str_append(s, ""); /* an empty name is still a name */
    return s->failed ? kp_pf_nomem(w) : KPROF_OK;
}

/* ---- Tracks ------------------------------------------------------------------------------ */

static uint64_t kp_pf_hash(int type, int64_t pid, int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)type * 0x9e3779b97f4a7c15ull;
    int64_t parts[3] = {pid, a, b};
    for (int i = 0; i < 3; i++) {
        h ^= (uint64_t)parts[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return h;
}

/* The track of this key (not a lane), or -1. */
static int32_t kp_pf_track_find(const kp_pf_writer *w, int type, int64_t pid, int64_t a, int64_t b)
{
    if (!w->nslots) return -1;
    for (size_t i = kp_pf_hash(type, pid, a, b) & (w->nslots - 1);; i = (i + 1) & (w->nslots - 1)) {
        int32_t s = w->slots[i];
        if (!s) return -1;
        const kp_pf_track *t = &w->tracks[s - 1];
        if (t->type == type && t->pid == pid && t->a == a && t->b == b) return s - 1;
    }
}

/* The track helpers below fail only for memory: they return KPROF_NOMEM and fill no kp_error;
 * their caller says so once (kp_pf_nomem). */
static kprof_status kp_pf_slots_insert(kp_pf_writer *w, int32_t index)
{
    if ((size_t)index + 1 > w->nslots / 2) { /* keep the table at most half full */
        size_t n = w->nslots ? w->nslots * 2 : 64;
        int32_t *slots = calloc(n, sizeof *slots);
        if (!slots) return KPROF_NOMEM;
        for (size_t i = 0; i < w->nslots; i++) {
            int32_t s = w->slots[i];
            if (!s) continue;
            const kp_pf_track *t = &w->tracks[s - 1];
            size_t j = kp_pf_hash(t->type, t->pid, t->a, t->b) & (n - 1);
            while (slots[j])
                j = (j + 1) & (n - 1);
            slots[j] = s;
        }
        free(w->slots);
        w->slots = slots;
        w->nslots = n;
    }
    const kp_pf_track *t = &w->tracks[index];
    size_t j = kp_pf_hash(t->type, t->pid, t->a, t->b) & (w->nslots - 1);
    while (w->slots[j])
        j = (j + 1) & (w->nslots - 1);
    w->slots[j] = index + 1;
    return KPROF_OK;
}

/* A new track into *out (its descriptor is the caller's to write). KPROF_OK or KPROF_NOMEM. */
static kprof_status kp_pf_track_add(kp_pf_writer *w, int type, int64_t pid, int64_t a, int64_t b,
                                    int lane, int32_t *out)
{
    if (w->ntracks == w->captracks) {
        size_t cap = w->captracks ? w->captracks * 2 : 64;
        kp_pf_track *t = realloc(w->tracks, cap * sizeof *t);
        if (!t) return KPROF_NOMEM;
        w->tracks = t;
        w->captracks = cap;
    }
    int32_t index = (int32_t)w->ntracks++;
    w->tracks[index] = (kp_pf_track){.uuid = (uint64_t)index + 1,
                                     .type = type,
                                     .pid = pid,
                                     .a = a,
                                     .b = b,
                                     .lane = lane,
                                     .rank = -1,
                                     .overflow = -1};
    if (lane == 0 && kp_pf_slots_insert(w, index) != KPROF_OK) return KPROF_NOMEM;
    *out = index;
    return KPROF_OK;
}

/* Track names; kp_pf_track_name gives a lane its base's name with "(overlap N)", and a
 * device's or stream's of a process with a rank "rank R · " first. */
static void kp_pf_track_name(const kp_pf_track *t, int opencl, int rank, char *out, size_t n)
{
    int k = 0;
    char prefix[32] = "";
    if (rank >= 0) snprintf(prefix, sizeof prefix, "rank %d · ", rank);
    switch (t->type) {
    case KP_PF_THREAD:
        k = snprintf(out, n, "host thread %lld", (long long)t->a);
        break;
    case KP_PF_DEVICE:
        k = snprintf(out, n, "%s%s %lld", prefix, opencl ? "device" : "GPU", (long long)t->a);
        break;
    default:
        k = snprintf(out, n, "%s%s %lld · %s %lld", prefix, opencl ? "device" : "GPU",
                     (long long)t->a, opencl ? "queue" : "stream", (long long)t->b);
        break;
    }
    if (t->lane > 0 && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, " (overlap %d)", t->lane);
}

/* The process track of pid (as written) into *out, made (with name as its name, when known) if
 * new. KPROF_OK or KPROF_NOMEM. */
static kprof_status kp_pf_process_track(kp_pf_writer *w, int64_t pid, int rank, const char *name,
                                        int32_t *out)
{
    int32_t index = *out = kp_pf_track_find(w, KP_PF_PROCESS, pid, 0, 0);
    if (index >= 0) return KPROF_OK;
    if (kp_pf_track_add(w, KP_PF_PROCESS, pid, 0, 0, 0, &index) != KPROF_OK) return KPROF_NOMEM;
    w->tracks[index].rank = rank;
    kp_pb *pb = &w->pb;
    kp_pf_packet_begin(w, 0);
    kp_pb_begin(pb, KP_PF_PACKET_TRACK_DESCRIPTOR);
    kp_pb_varint(pb, KP_PF_TRACK_UUID, w->tracks[index].uuid);
    kp_pb_begin(pb, KP_PF_TRACK_PROCESS);
    kp_pb_int64(pb, KP_PF_PROCESS_PID, (int32_t)pid);
    if (name) kp_pb_string(pb, KP_PF_PROCESS_NAME, name);
    kp_pb_end(pb);
    kp_pb_end(pb);
    kp_pb_end(pb);
    *out = index;
    return KPROF_OK;
}

/* A process's track, named by its command; with rank >= 0 "rank R · pid P (command)", and
 * "pid P (command)" where its pid is written as another id (export/pid_map.h). */
static kprof_status kp_pf_process(void *ctx, int64_t id, int64_t pid, int rank, const char *command,
                                  size_t len)
{
    kp_pf_writer *w = ctx;
    kp_str name = {0};
    int say_pid = rank >= 0 || id != pid;
    if (rank >= 0) kp_str_printf(&name, "rank %d · ", rank);
    if (say_pid) kp_str_printf(&name, "pid %lld (", (long long)pid);
    kp_str_append_utf8(&name, command, len);
    if (say_pid) kp_str_append(&name, ")");
    int32_t index;
    kprof_status st = name.failed
                          ? KPROF_NOMEM
                          : kp_pf_process_track(w, id, rank, name.data ? name.data : "", &index);
    kp_str_free(&name);
    if (st != KPROF_OK) return kp_pf_nomem(w);
    return kp_pf_check(w);
}

/* A track under parent (a device under its process, a stream under its device, a lane under
 * its thread or stream) into *out, its descriptor written. KPROF_OK or KPROF_NOMEM. */
static kprof_status kp_pf_child_track(kp_pf_writer *w, int type, int64_t pid, int64_t a, int64_t b,
                                      int lane, int32_t parent, int opencl, int32_t *out)
{
    int32_t index;
    if (kp_pf_track_add(w, type, pid, a, b, lane, &index) != KPROF_OK) return KPROF_NOMEM;
    const kp_pf_track *t = &w->tracks[index];
    int32_t process = kp_pf_track_find(w, KP_PF_PROCESS, pid, 0, 0);
    char name[160];
    kp_pf_track_name(t, opencl, process >= 0 ? w->tracks[process].rank : -1, name, sizeof name);
    kp_pb *pb = &w->pb;
    kp_pf_packet_begin(w, 0);
    kp_pb_begin(pb, KP_PF_PACKET_TRACK_DESCRIPTOR);
    kp_pb_varint(pb, KP_PF_TRACK_UUID, t->uuid);
    kp_pb_varint(pb, KP_PF_TRACK_PARENT_UUID, w->tracks[parent].uuid);
    kp_pb_string(pb, KP_PF_TRACK_NAME, name);
    if (type == KP_PF_DEVICE) /* its streams in number order, not by name ("10" < "7") */
        kp_pb_varint(pb, KP_PF_TRACK_CHILD_ORDERING, KP_PF_CHILD_ORDERING_EXPLICIT);
    if (type == KP_PF_STREAM && lane == 0)
        kp_pb_int64(pb, KP_PF_TRACK_SIBLING_ORDER_RANK,
                    b < INT32_MIN   ? INT32_MIN
                    : b > INT32_MAX ? INT32_MAX
                                    : b);
    kp_pb_end(pb);
    kp_pb_end(pb);
    *out = index;
    return KPROF_OK;
}

/* The track of a host thread into *out, made (under its process's) if new. */
static kprof_status kp_pf_thread_track(kp_pf_writer *w, int64_t pid, int64_t tid, int32_t *out)
{
    int32_t index = *out = kp_pf_track_find(w, KP_PF_THREAD, pid, tid, 0);
    if (index >= 0) return KPROF_OK;
    int32_t process;
    if (kp_pf_process_track(w, pid, -1, NULL, &process) != KPROF_OK ||
        kp_pf_track_add(w, KP_PF_THREAD, pid, tid, 0, 0, &index) != KPROF_OK)
        return KPROF_NOMEM;
    char name[64];
    kp_pf_track_name(&w->tracks[index], 0, -1, name, sizeof name);
    kp_pb *pb = &w->pb;
    kp_pf_packet_begin(w, 0);
    kp_pb_begin(pb, KP_PF_PACKET_TRACK_DESCRIPTOR);
    kp_pb_varint(pb, KP_PF_TRACK_UUID, w->tracks[index].uuid);
    kp_pb_begin(pb, KP_PF_TRACK_THREAD);
    kp_pb_int64(pb, KP_PF_THREAD_PID, (int32_t)pid);
    kp_pb_int64(pb, KP_PF_THREAD_TID, (int32_t)tid);
    kp_pb_string(pb, KP_PF_THREAD_NAME, name);
    kp_pb_end(pb);
    kp_pb_end(pb);
    kp_pb_end(pb);
    *out = index;
    return KPROF_OK;
}

/* The track of a device operation's stream into *out, made (under its device's, under its
 * process's) if new. */
static kprof_status kp_pf_stream_track(kp_pf_writer *w, const kp_pf_event *e, int32_t *out)
{
    *out = kp_pf_track_find(w, KP_PF_STREAM, e->pid, e->device, e->stream);
    if (*out >= 0) return KPROF_OK;
    int32_t device = kp_pf_track_find(w, KP_PF_DEVICE, e->pid, e->device, 0);
    if (device < 0) {
        int32_t process;
        if (kp_pf_process_track(w, e->pid, -1, NULL, &process) != KPROF_OK ||
            kp_pf_child_track(w, KP_PF_DEVICE, e->pid, e->device, 0, 0, process,
                              e->domain == KP_DOMAIN_OPENCL, &device) != KPROF_OK)
            return KPROF_NOMEM;
    }
    return kp_pf_child_track(w, KP_PF_STREAM, e->pid, e->device, e->stream, 0, device,
                             e->domain == KP_DOMAIN_OPENCL, out);
}

/* The lane of base's family where a slice ending at end nests, into *out: the first whose
 * innermost open slice encloses it, or has none. KPROF_OK or KPROF_NOMEM. */
static kprof_status kp_pf_lane(kp_pf_writer *w, int32_t base, int64_t end, int opencl, int32_t *out)
{
    int32_t t = base;
    for (;;) {
        const kp_pf_track *tr = &w->tracks[t];
        if (tr->nopen == 0 || tr->open[tr->nopen - 1] >= end) {
            *out = t;
            return KPROF_OK;
        }
        if (tr->overflow < 0) {
            const kp_pf_track *b = &w->tracks[base];
            int32_t lane;
            if (kp_pf_child_track(w, b->type, b->pid, b->a, b->b, tr->lane + 1, base, opencl,
                                  &lane) != KPROF_OK)
                return KPROF_NOMEM;
            w->tracks[t].overflow = lane;
        }
        t = w->tracks[t].overflow;
    }
}

/* ---- Slices ------------------------------------------------------------------------------ */

static int kp_pf_pending_before(const kp_pf_pending *x, const kp_pf_pending *y)
{
    if (x->end != y->end) return x->end < y->end;
    if (x->start != y->start) return x->start > y->start;
    return x->seq > y->seq;
}

static kprof_status kp_pf_push(kp_pf_writer *w, kp_pf_pending p)
{
    kp_pf_track *t = &w->tracks[p.track];
    if (t->nopen == t->capopen) {
        size_t cap = t->capopen ? t->capopen * 2 : 8;
        int64_t *o = realloc(t->open, cap * sizeof *o);
        if (!o) return KPROF_NOMEM;
        t->open = o;
        t->capopen = cap;
    }
    if (w->nheap == w->capheap) {
        size_t cap = w->capheap ? w->capheap * 2 : 256;
        kp_pf_pending *h = realloc(w->heap, cap * sizeof *h);
        if (!h) return KPROF_NOMEM;
        w->heap = h;
        w->capheap = cap;
    }
    t->open[t->nopen++] = p.end;
    size_t i = w->nheap++;
    while (i > 0 && kp_pf_pending_before(&p, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = p;
    return KPROF_OK;
}

/* Write the ends of every slice that ends at or before ns (all of them: INT64_MAX). */
static void kp_pf_close_until(kp_pf_writer *w, int64_t ns)
{
    while (w->nheap > 0 && w->heap[0].end <= ns) {
        kp_pf_pending top = w->heap[0], last = w->heap[--w->nheap];
        size_t i = 0;
        for (;;) { /* sift the last entry down from the root */
            size_t c = 2 * i + 1;
            if (c >= w->nheap) break;
            if (c + 1 < w->nheap && kp_pf_pending_before(&w->heap[c + 1], &w->heap[c])) c++;
            if (!kp_pf_pending_before(&w->heap[c], &last)) break;
            w->heap[i] = w->heap[c];
            i = c;
        }
        if (w->nheap > 0) w->heap[i] = last;
        kp_pf_track *t = &w->tracks[top.track];
        t->nopen--; /* the heap's order is each track's closing order: this is its innermost */
        kp_pb *pb = &w->pb;
        kp_pf_packet_begin(w, 1);
        kp_pb_varint(pb, KP_PF_PACKET_TIMESTAMP, kp_pf_time(top.end));
        kp_pb_begin(pb, KP_PF_PACKET_TRACK_EVENT);
        kp_pb_varint(pb, KP_PF_EVENT_TYPE, KP_PF_TYPE_SLICE_END);
        kp_pb_varint(pb, KP_PF_EVENT_TRACK_UUID, t->uuid);
        kp_pb_end(pb);
        kp_pb_end(pb);
    }
}

static void kp_pf_arg_int(kp_pb *pb, uint64_t iid, int64_t value)
{
    kp_pb_begin(pb, KP_PF_EVENT_DEBUG_ANNOTATIONS);
    kp_pb_varint(pb, KP_PF_ANNOTATION_NAME_IID, iid);
    kp_pb_int64(pb, KP_PF_ANNOTATION_INT_VALUE, value);
    kp_pb_end(pb);
}

static void kp_pf_arg_ints(kp_pb *pb, uint64_t iid, const int64_t *values, int n)
{
    kp_pb_begin(pb, KP_PF_EVENT_DEBUG_ANNOTATIONS);
    kp_pb_varint(pb, KP_PF_ANNOTATION_NAME_IID, iid);
    for (int i = 0; i < n; i++) {
        kp_pb_begin(pb, KP_PF_ANNOTATION_ARRAY_VALUES);
        kp_pb_int64(pb, KP_PF_ANNOTATION_INT_VALUE, values[i]);
        kp_pb_end(pb);
    }
    kp_pb_end(pb);
}

static void kp_pf_double_value(kp_pb *pb, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    kp_pb_fixed64(pb, KP_PF_ANNOTATION_DOUBLE_VALUE, bits);
}

static void kp_pf_arg_double(kp_pb *pb, uint64_t iid, double value)
{
    kp_pb_begin(pb, KP_PF_EVENT_DEBUG_ANNOTATIONS);
    kp_pb_varint(pb, KP_PF_ANNOTATION_NAME_IID, iid);
    kp_pf_double_value(pb, value);
    kp_pb_end(pb);
}

/* A user metric, named by its key: "user:KEY" where KEY is an argument kprof writes itself, so
 * no slice has an argument twice. */
static void kp_pf_arg_user(kp_pb *pb, const kp_str *key, double value)
{
    const char *text = key && key->data ? key->data : "?";
    int own = 0;
    for (int i = 1; i < KP_PF_ARG_COUNT && !own; i++)
        own = strcmp(text, kp_pf_arg_names[i]) == 0;
    kp_pb_begin(pb, KP_PF_EVENT_DEBUG_ANNOTATIONS);
    if (own) {
        kp_str name = {0};
        kp_str_printf(&name, "user:%s", text);
        kp_pb_bytes(pb, KP_PF_ANNOTATION_NAME, name.data ? name.data : "", name.len);
        kp_str_free(&name);
    } else {
        kp_pb_bytes(pb, KP_PF_ANNOTATION_NAME, text, key && key->data ? key->len : 1);
    }
    kp_pf_double_value(pb, value);
    kp_pb_end(pb);
}

/* Flow ids: the process row and the correlation (correlations are numbered per collector). */
static uint64_t kp_pf_flow_id(int64_t process, int64_t correlation)
{
    return (uint64_t)process << 40 | ((uint64_t)correlation & ((1ull << 40) - 1));
}

static kprof_status kp_pf_event_write(void *ctx, const kp_pf_event *e)
{
    kp_pf_writer *w = ctx;
    kp_pb *pb = &w->pb;
    int device_op = kp_event_kind_on_device(e->kind);
    int instant = e->kind == KP_EVENT_MARK;
    int64_t end = instant || e->end_ns < e->start_ns ? e->start_ns : e->end_ns;
    kp_pf_close_until(w, e->start_ns);
    int32_t track;
    kprof_status st = device_op ? kp_pf_stream_track(w, e, &track)
                                : kp_pf_thread_track(w, e->pid, e->tid, &track);
    if (st == KPROF_OK && !instant)
        st = kp_pf_lane(w, track, end, e->domain == KP_DOMAIN_OPENCL, &track);
    if (st != KPROF_OK) return kp_pf_nomem(w);

    int known = e->name > 0 && e->name < w->nnames && w->names[e->name].data;
    kp_pf_packet_begin(w, 1);
    kp_pb_varint(pb, KP_PF_PACKET_TIMESTAMP, kp_pf_time(e->start_ns));
    if (known && !w->interned[e->name]) {
        kp_pb_begin(pb, KP_PF_PACKET_INTERNED_DATA);
        kp_pf_interned(pb, KP_PF_INTERNED_EVENT_NAMES, (uint64_t)e->name, w->names[e->name].data,
                       w->names[e->name].len);
        kp_pb_end(pb);
        w->interned[e->name] = 1;
    }
    kp_pb_begin(pb, KP_PF_PACKET_TRACK_EVENT);
    kp_pb_varint(pb, KP_PF_EVENT_TYPE, instant ? KP_PF_TYPE_INSTANT : KP_PF_TYPE_SLICE_BEGIN);
    kp_pb_varint(pb, KP_PF_EVENT_TRACK_UUID, w->tracks[track].uuid);
    kp_pb_varint(pb, KP_PF_EVENT_CATEGORY_IIDS, kp_pf_category(e->kind));
    if (known)
        kp_pb_varint(pb, KP_PF_EVENT_NAME_IID, (uint64_t)e->name);
    else
        kp_pb_string(pb, KP_PF_EVENT_NAME, "?");
    if (!instant) {
        /* The arrow from a call to its device work, when both are in the trace. */
        if (e->kind == KP_EVENT_API && e->has_correlation && e->launched)
            kp_pb_fixed64(pb, KP_PF_EVENT_FLOW_IDS, kp_pf_flow_id(e->process, e->correlation));
        if (device_op && e->has_correlation && e->has_wait[2])
            kp_pb_fixed64(pb, KP_PF_EVENT_TERMINATING_FLOW_IDS,
                          kp_pf_flow_id(e->process, e->correlation));
        if (device_op && e->has_correlation)
            kp_pf_arg_int(pb, KP_PF_ARG_CORRELATION, e->correlation);
        if (e->has_grid && e->block[0] == 0) {
            /* No local size: the runtime chose the groups; grid holds the work-items. */
            kp_pf_arg_ints(pb, KP_PF_ARG_GLOBAL_SIZE, e->grid, 3);
        } else if (e->has_grid) {
            kp_pf_arg_ints(pb, KP_PF_ARG_GRID, e->grid, 3);
            kp_pf_arg_ints(pb, KP_PF_ARG_BLOCK, e->block, 3);
        }
        if (e->has_registers) kp_pf_arg_int(pb, KP_PF_ARG_REGISTERS, e->registers);
        if (e->has_shared) kp_pf_arg_int(pb, KP_PF_ARG_SHARED_BYTES, e->shared_bytes);
        for (int c = 0; e->has_reflection && c < 4; c++)
            kp_pf_arg_int(pb, KP_PF_ARG_MAX_THREADGROUP_SIZE + c, e->reflection[c]);
        for (int c = 0; c < 3; c++)
            if (e->has_wait[c]) kp_pf_arg_int(pb, KP_PF_ARG_QUEUED_TO_START + c, e->wait_ns[c]);
        if (e->has_metric_bytes) /* what it moved, by its metric */
            kp_pf_arg_double(pb, KP_PF_ARG_BYTES, e->metric_bytes);
        else if (e->has_bytes)
            kp_pf_arg_int(pb, KP_PF_ARG_BYTES, e->bytes);
        if (e->has_range) kp_pf_arg_int(pb, KP_PF_ARG_RANGE_ID, e->range_id);
        /* The metrics, and the rates over the slice's own time (per ns: GFLOP/s and GB/s). */
        int64_t ns = kp_ns_diff(end, e->start_ns);
        if (e->has_flops) {
            kp_pf_arg_double(pb, KP_PF_ARG_FLOPS, e->flops);
            if (ns > 0) kp_pf_arg_double(pb, KP_PF_ARG_GFLOP_PER_S, e->flops / (double)ns);
        }
        if (e->has_metric_bytes && ns > 0)
            kp_pf_arg_double(pb, KP_PF_ARG_GB_PER_S, e->metric_bytes / (double)ns);
        for (size_t i = 0; i < e->nmetrics; i++) {
            uint32_t key = e->metrics[i].key;
            kp_pf_arg_user(pb, key > 0 && key < w->nnames ? &w->names[key] : NULL,
                           e->metrics[i].value);
        }
    }
    kp_pb_end(pb);
    kp_pb_end(pb);
    if (!instant && kp_pf_push(w, (kp_pf_pending){.end = end,
                                                  .start = e->start_ns,
                                                  .seq = w->seq++,
                                                  .track = track}) != KPROF_OK)
        return kp_pf_nomem(w);
    return kp_pf_check(w);
}

/* ---- Reading on a second thread ---------------------------------------------------------- */

/* SQLite's stepping costs about as much as all the encoding: the trace is read on a thread of
 * its own, which hands what it read to the writer in batches through a few buffers, so the two
 * run on two cores and memory stays a few batches whatever the trace's size. The writer sees
 * the same calls in the same order as without the thread. */
#define KP_PF_BATCH   1024 /* items per batch */
#define KP_PF_BATCHES 6    /* batches in all: being filled, waiting, being written */

enum { KP_PF_ITEM_BEGIN, KP_PF_ITEM_STRING, KP_PF_ITEM_PROCESS, KP_PF_ITEM_EVENT };

typedef struct kp_pf_item {
    int type;        /* KP_PF_ITEM_* */
    int64_t a, b, c; /* begin: start, string slots; string: its id; process: its id, rank, pid */
    char *text;      /* string, process: a copy of the text, the writer's to free */
    size_t len;
    kp_pf_event event;
} kp_pf_item;

typedef struct kp_pf_batch {
    kp_pf_item item[KP_PF_BATCH];
    size_t n;
} kp_pf_batch;

typedef struct kp_pf_pipe {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    kp_pf_batch *empty[KP_PF_BATCHES], *full[KP_PF_BATCHES]; /* stacks; full is a ring */
    size_t nempty, full_head, nfull;
    kp_pf_batch *filling; /* the reader's */
    int done;             /* the reader has finished (read_status says how) */
    int stop;             /* the writer failed: read no more */
    kp_event_source *src;
    kprof_status read_status;
    kp_error read_err;
} kp_pf_pipe;

/* The reader's batch goes to the writer; the reader then waits for an empty one. 0, or -1 when
 * the writer stopped. */
static int kp_pf_pipe_pass(kp_pf_pipe *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->filling) {
        p->full[(p->full_head + p->nfull++) % KP_PF_BATCHES] = p->filling;
        p->filling = NULL;
        pthread_cond_broadcast(&p->changed);
    }
    while (!p->stop && p->nempty == 0)
        pthread_cond_wait(&p->changed, &p->lock);
    if (!p->stop) {
        p->filling = p->empty[--p->nempty];
        p->filling->n = 0;
    }
    int stop = p->stop;
    pthread_mutex_unlock(&p->lock);
    return stop ? -1 : 0;
}

static kprof_status kp_pf_pipe_add(kp_pf_pipe *p, const kp_pf_item *item)
{
    if (p->filling->n == KP_PF_BATCH && kp_pf_pipe_pass(p) != 0) {
        free(item->text);
        return kp_error_set(&p->read_err, KPROF_IO, "the export stopped");
    }
    p->filling->item[p->filling->n++] = *item;
    return KPROF_OK;
}

static kprof_status kp_pf_pipe_begin(void *ctx, int64_t start_ns, int64_t string_slots)
{
    return kp_pf_pipe_add(
        ctx, &(kp_pf_item){.type = KP_PF_ITEM_BEGIN, .a = start_ns, .b = string_slots});
}

/* An item that carries a text: item with a copy of text (the writer's to free). */
static kprof_status kp_pf_pipe_text(kp_pf_pipe *p, kp_pf_item item, const char *text, size_t len)
{
    if (!(item.text = malloc(len + 1))) return kp_error_nomem(&p->read_err);
    memcpy(item.text, text, len);
    item.text[len] = '\0';
    item.len = len;
    return kp_pf_pipe_add(p, &item);
}

static kprof_status kp_pf_pipe_string(void *ctx, int64_t id, const char *text, size_t len)
{
    return kp_pf_pipe_text(ctx, (kp_pf_item){.type = KP_PF_ITEM_STRING, .a = id}, text, len);
}

static kprof_status kp_pf_pipe_process(void *ctx, int64_t id, int64_t pid, int rank,
                                       const char *command, size_t len)
{
    return kp_pf_pipe_text(
        ctx, (kp_pf_item){.type = KP_PF_ITEM_PROCESS, .a = id, .b = rank, .c = pid}, command, len);
}

static kprof_status kp_pf_pipe_event(void *ctx, const kp_pf_event *e)
{
    kp_pf_pipe *p = ctx;
    if (p->filling->n == KP_PF_BATCH && kp_pf_pipe_pass(p) != 0)
        return kp_error_set(&p->read_err, KPROF_IO, "the export stopped");
    kp_pf_item *item = &p->filling->item[p->filling->n++];
    item->type = KP_PF_ITEM_EVENT;
    item->text = NULL;
    item->event = *e;
    return KPROF_OK;
}

static void *kp_pf_reader_run(void *arg)
{
    kp_pf_pipe *p = arg;
    static const kp_pf_visitor to_pipe = {.begin = kp_pf_pipe_begin,
                                          .string = kp_pf_pipe_string,
                                          .process = kp_pf_pipe_process,
                                          .event = kp_pf_pipe_event};
    kprof_status st = kp_perfetto_read(p->src, &to_pipe, p, &p->read_err);
    pthread_mutex_lock(&p->lock);
    if (p->filling) { /* the last batch (after a failure, the writer still frees its texts) */
        p->full[(p->full_head + p->nfull++) % KP_PF_BATCHES] = p->filling;
        p->filling = NULL;
    }
    p->read_status = st;
    p->done = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static kprof_status kp_pf_dispatch(const kp_pf_visitor *v, kp_pf_writer *w, kp_pf_item *item)
{
    switch (item->type) {
    case KP_PF_ITEM_BEGIN:
        return v->begin(w, item->a, item->b);
    case KP_PF_ITEM_STRING:
        return v->string(w, item->a, item->text, item->len);
    case KP_PF_ITEM_PROCESS:
        return v->process(w, item->a, item->c, (int)item->b, item->text, item->len);
    default:
        return v->event(w, &item->event);
    }
}

static void kp_pf_batch_free_texts(kp_pf_batch *b, size_t from)
{
    for (size_t i = from; i < b->n; i++) {
        free(b->item[i].text);
        b->item[i].text = NULL;
    }
}

/* Read the source on a second thread (which alone uses it meanwhile) and write what it reads with
 * v, *status the first failure's, the writer's before the reader's: 1. 0 when the thread could
 * not be had (nothing was done: the caller reads on its own thread instead). */
static int kp_pf_read_threaded(kp_event_source *src, const kp_pf_visitor *v, kp_pf_writer *w,
                               kprof_status *status)
{
    kp_pf_pipe *p = calloc(1, sizeof *p);
    kp_pf_batch *batches = calloc(KP_PF_BATCHES, sizeof *batches);
    pthread_t reader;
    if (!p || !batches) goto no_thread;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    p->src = src;
    for (int i = 1; i < KP_PF_BATCHES; i++)
        p->empty[p->nempty++] = &batches[i];
    p->filling = &batches[0];
    if (pthread_create(&reader, NULL, kp_pf_reader_run, p) != 0) {
        pthread_cond_destroy(&p->changed);
        pthread_mutex_destroy(&p->lock);
        goto no_thread;
    }
    kprof_status st = KPROF_OK;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (p->nfull == 0 && !p->done)
            pthread_cond_wait(&p->changed, &p->lock);
        kp_pf_batch *b = NULL;
        if (p->nfull > 0) {
            b = p->full[p->full_head];
            p->full_head = (p->full_head + 1) % KP_PF_BATCHES;
            p->nfull--;
        }
        pthread_mutex_unlock(&p->lock);
        if (!b) break; /* done, and everything written */
        for (size_t i = 0; i < b->n && st == KPROF_OK; i++) {
            st = kp_pf_dispatch(v, w, &b->item[i]);
            free(b->item[i].text);
            b->item[i].text = NULL;
        }
        kp_pf_batch_free_texts(b, 0);
        pthread_mutex_lock(&p->lock);
        p->empty[p->nempty++] = b;
        if (st != KPROF_OK) p->stop = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (st != KPROF_OK) break;
    }
    pthread_join(reader, NULL);
    for (size_t i = 0; i < p->nfull; i++) /* what a stopped writer left */
        kp_pf_batch_free_texts(p->full[(p->full_head + i) % KP_PF_BATCHES], 0);
    if (st == KPROF_OK && p->read_status != KPROF_OK) { /* the reader's error, as it is */
        st = p->read_status;
        if (w->err->status == KPROF_OK) {
            *w->err = p->read_err;
            p->read_err = (kp_error){0};
        }
    }
    kp_error_clear(&p->read_err);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
    free(batches);
    *status = st;
    return 1;
no_thread:
    free(p);
    free(batches);
    return 0;
}

kprof_status kp_export_perfetto(kp_event_source *src, kp_output *out, kp_error *err)
{
    kp_pf_writer w = {.out = out, .err = err};
    kp_pb_init(&w.pb, kp_pf_sink, &w);
    static const kp_pf_visitor visitor = {.begin = kp_pf_begin,
                                          .string = kp_pf_string,
                                          .process = kp_pf_process,
                                          .event = kp_pf_event_write};
    kprof_status st;
    if (!kp_pf_read_threaded(src, &visitor, &w, &st)) st = kp_perfetto_read(src, &visitor, &w, err);
    if (st == KPROF_OK) {
        kp_pf_close_until(&w, INT64_MAX);
        kp_pb_finish(&w.pb);
        st = kp_pf_check(&w);
    }
    kp_pb_free(&w.pb);
    for (int64_t i = 0; w.names && i < w.nnames; i++)
        kp_str_free(&w.names[i]);
    free(w.names);
    free(w.interned);
    for (size_t i = 0; i < w.ntracks; i++)
        free(w.tracks[i].open);
    free(w.tracks);
    free(w.slots);
    free(w.heap);
    return st;
}
