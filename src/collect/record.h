/*
 * record.h — the records an injected collector writes while a traced program runs, one file per
 * process image (<KPROF_TRACE_DIR>/<pid>-<collector>-<start ns>.klog), and that `kprof trace`
 * merges into an SQLite trace file when the program ends.
 *
 * A file is a sequence of fixed-size records (kp_rec, 128 bytes, host byte order), each starting
 * with KP_REC_MAGIC; a KP_REC_STRING record is followed by its text, padded to 8 bytes. Writers
 * append whole batches with write(2), so a crash leaves a readable prefix: a reader stops at the
 * first record that is cut short or lacks the magic. Times are CLOCK_MONOTONIC nanoseconds.
 */
#ifndef KP_COLLECT_RECORD_H
#define KP_COLLECT_RECORD_H

#include "core/event.h"

#include <stdint.h>

#define KP_REC_MAGIC 0x3152504bu /* "KPR1" */

/* Record kinds: control records, and the event kinds of core/event.h, whose numbers (3..10)
 * they take as they are. */
typedef enum kp_rec_kind {
    KP_REC_HEADER = 1,   /* first record: id = pid, aux = ppid, start = when, name = command line;
                          * counters updated in place while the process runs (a shared mapping):
                          * bytes = records dropped before reaching the writer (full buffers,
                          * device work never seen complete), queued = records lost to failed
                          * writes, status = errno of the first failed write, end = when the
                          * process ended cleanly (0 until then), submitted = the bytes of the
                          * file, from its start, that are whole batches: `kprof trace` merges
                          * up to there while the program runs (0: not kept; merged at the end) */
    KP_REC_STRING = 2,   /* name = string id, bytes = length; the text follows */
    KP_REC_DROPPED = 11, /* bytes = records lost (no buffer, full ring), where the header's
                          * counters could not be mapped */
    KP_REC_NOTE = 12,    /* name = something the user should be told (another profiler present) */
    KP_REC_END = 13,     /* the process ended cleanly: start = when (CLOCK_MONOTONIC), end = the
                          * CLOCK_REALTIME read with it, bytes = the pair's uncertainty (ns);
                          * end 0: no pair (base/job.h: kp_clock_pair) */
    KP_REC_METRIC = 14,  /* a metric of the event record right before it in the file (the
                          * writer appends an event and its metrics in one piece, so nothing
                          * comes between): name = the key's string id ("flops" and "bytes" are
                          * the model's own metrics, kp_event.metrics; any other is a user key),
                          * bytes = the value as IEEE-754 double bits, aux = the event's kind
                          * (a check: a metric whose event is not there is dropped) */
    KP_REC_PROCESS = 15, /* right after the header: where the process stands in a job and its
                          * clocks (base/job.h): domain = kp_launcher; grid = rank, local rank,
                          * world size; block = local world size, node, restart count (-1
                          * unknown); name = the host name's string id; id = the boot id's
                          * string id; start = CLOCK_MONOTONIC, end = CLOCK_REALTIME read with
                          * it, bytes = the pair's uncertainty (ns) */
    KP_REC_KERNEL_INFO = 16, /* an OpenCL kernel's reflection on a device, once per kernel
                              * name and device a process launched (at its first launch there):
                              * name = the kernel's string id, device = its index (as the
                              * kernels' records), static_smem = CL_KERNEL_LOCAL_MEM_SIZE (local
                              * memory per work-group, bytes), local_mem =
                              * CL_KERNEL_PRIVATE_MEM_SIZE (private memory per work-item,
                              * bytes), bytes = CL_KERNEL_WORK_GROUP_SIZE (the kernel's largest
                              * work-group on the device), aux =
                              * CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
    KP_REC_KIND_COUNT,       /* every kind is below it */
/* The events, each record holding:
 *   API       a host API call: domain = KP_DOMAIN_*, status = its return value
 *   KERNEL    a kernel on the device: grid, block, registers, shared and local memory
 *   MEMCPY    a copy on the device: bytes, aux = KP_COPY_*
 *   MEMSET    a fill on the device: bytes
 *   SYNC      the host waiting for the device (CUPTI synchronization records; OpenCL: a call
 *             that blocked, a read, write or map with CL_TRUE: its name, tid, start, end and
 *             correlation are the call's)
 *   RANGE     an NVTX range: start..end on tid, id = range id
 *   MARK      an NVTX mark (instant): start, end = start, id = range id
 *   OVERHEAD  the collector's own cost (CUPTI overhead records): aux = CUPTI's kind */
#define KP_REC_EVENT_(id, NAME, name, category, flags, what) KP_REC_##NAME = KP_EVENT_##NAME,
    KP_EVENT_KIND_LIST(KP_REC_EVENT_)
#undef KP_REC_EVENT_
} kp_rec_kind;

/* The file format keeps its numbers: an event kind added to core/event.h must take a number
 * no control record has (or the record format's version, KP_REC_MAGIC, must change). */
#define KP_REC_CHECK_(id, NAME, name, category, flags, what)                                       \
    _Static_assert(id > KP_REC_STRING && id < KP_REC_DROPPED,                                      \
                   "event kind " #NAME " takes the number of a control record");
KP_EVENT_KIND_LIST(KP_REC_CHECK_)
#undef KP_REC_CHECK_

typedef struct kp_rec {
    uint32_t magic;          /* KP_REC_MAGIC */
    uint16_t kind;           /* kp_rec_kind */
    uint16_t domain;         /* KP_DOMAIN_* */
    uint32_t name;           /* string id; 0 = none */
    uint32_t tid;            /* host thread: gettid (CUPTI is set to report these) */
    uint64_t start, end;     /* ns, CLOCK_MONOTONIC */
    uint64_t queued;         /* device ops: when the host enqueued it (0 = unknown) */
    uint64_t submitted;      /* device ops: when it reached the device (0 = unknown) */
    uint64_t correlation;    /* host call <-> its device op */
    uint32_t device, stream; /* device op: device, stream or queue; SYNC: 0xFFFFFFFF = none */
    int32_t grid[3];         /* kernels: threadgroups per dimension (work-items when block 0);
                              * kp_event counts threads (kp_event_set_groups converts) */
    int32_t block[3];        /* kernels: threads per threadgroup; 0 = chosen by the runtime */
    uint32_t registers;      /* per thread (0 = unknown) */
    uint32_t static_smem;    /* bytes */
    uint32_t dynamic_smem;   /* bytes */
    uint32_t local_mem;      /* bytes per thread */
    uint64_t bytes;          /* copies, fills; STRING: text length; DROPPED: count */
    uint64_t id;             /* HEADER: pid; RANGE/MARK: range id */
    int32_t status;          /* API: return value; OpenCL device ops: execution status */
    uint32_t aux;            /* HEADER: ppid; MEMCPY: KP_COPY_*; OVERHEAD: CUPTI's kind */
} kp_rec;

_Static_assert(sizeof(kp_rec) == 128, "kp_rec is a 128-byte on-disk record");

#endif
