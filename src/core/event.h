/*
 * event.h — kprof's one event model. Everything kprof observes — a host API call, a kernel, a
 * copy, a fill, a wait, an NVTX range or mark, the collector's own cost — is one kp_event, and
 * what kinds of event there are is said once, in KP_EVENT_KIND_LIST: their numbers, names,
 * export categories and where they happen. The enum, the record kinds of collect/record.h, the
 * trace schema's `kinds` rows (store/trace_schema.c), the kind sets that the reports' and exports'
 * queries select, and docs/formats/trace.md's table (checked by tests/unit/test_event.c) all
 * follow from it. API domains (KP_DOMAIN_LIST) and copy directions (KP_COPY_KIND_LIST) get the
 * same treatment. No kind, domain or copy direction is numbered anywhere else.
 *
 * Header only: the injected collector (libkprof-inject.so) shares it without linking core.
 */
#ifndef KP_CORE_EVENT_H
#define KP_CORE_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where an event happens (bits; a kind may have several). */
enum {
    KP_EVENT_F_HOST_CALL = 1u << 0,  /* a host thread inside the GPU runtime: the host trace */
    KP_EVENT_F_DEVICE = 1u << 1,     /* on a device's stream or queue, launched by the host call
                                      * of the same process and correlation */
    KP_EVENT_F_ANNOTATION = 1u << 2, /* the program's own note on a host thread (NVTX) */
    KP_EVENT_F_INSTANT = 1u << 3,    /* no duration: end = start */
};

/* The events on a host thread's track. */
#define KP_EVENT_F_HOST_THREAD (KP_EVENT_F_HOST_CALL | KP_EVENT_F_ANNOTATION)

/*
 * X(id, NAME, name, category, flags, what) — one row per kind of event:
 *   id        its number in record files (kp_rec.kind) and in a trace's events.kind. Format 1 of
 *             both holds these numbers: never change or reuse one. Record kinds 1, 2 and 11..13
 *             are control records (collect/record.h checks that no event kind takes them).
 *   NAME      KP_EVENT_NAME here, KP_REC_NAME in collect/record.h
 *   name      the trace's kinds.name, the reports' JSON "kind"
 *   category  the exports' category (Chrome's "cat")
 *   flags     KP_EVENT_F_*
 *   what      one line for people; docs/formats/trace.md's kinds table says exactly this
 */
#define KP_EVENT_KIND_LIST(X)                                                                      \
    X(3, API, "api", "api", KP_EVENT_F_HOST_CALL,                                                  \
      "a host API call (CUDA runtime or driver, OpenCL)")                                          \
    X(4, KERNEL, "kernel", "kernel", KP_EVENT_F_DEVICE, "a kernel on the device")                  \
    X(5, MEMCPY, "memcpy", "memcpy", KP_EVENT_F_DEVICE, "a copy on the device")                    \
    X(6, MEMSET, "memset", "memset", KP_EVENT_F_DEVICE, "a fill on the device")                    \
    X(7, SYNC, "sync", "sync", KP_EVENT_F_HOST_CALL,                                               \
      "the host waiting for the device (CUPTI synchronization records, OpenCL calls that "         \
      "blocked)")                                                                                  \
    X(8, RANGE, "range", "nvtx", KP_EVENT_F_ANNOTATION,                                            \
      "an NVTX range, on the thread that opened it")                                               \
    X(9, MARK, "mark", "nvtx", KP_EVENT_F_ANNOTATION | KP_EVENT_F_INSTANT,                         \
      "an NVTX mark (instant; `end_ns = start_ns`)")                                               \
    X(10, OVERHEAD, "overhead", "overhead", 0, "the collector's own cost (CUPTI overhead records)")

typedef enum kp_event_kind {
    KP_EVENT_NONE = 0, /* not an event (an unknown number read from a file) */
#define KP_EVENT_ENUM_(id, NAME, name, category, flags, what) KP_EVENT_##NAME = id,
    KP_EVENT_KIND_LIST(KP_EVENT_ENUM_)
#undef KP_EVENT_ENUM_
} kp_event_kind;

/* A kind's name ("kernel"), or NULL for a number that is no kind. The switches below are made
 * from the list, so two kinds with one number do not compile. */
static inline const char *kp_event_kind_name(int kind)
{
    switch (kind) {
#define KP_EVENT_CASE_(id, NAME, name, category, flags, what)                                      \
    case id:                                                                                       \
        return name;
        KP_EVENT_KIND_LIST(KP_EVENT_CASE_)
#undef KP_EVENT_CASE_
    default:
        return NULL;
    }
}

/* Its export category ("nvtx" for ranges and marks), or NULL. */
static inline const char *kp_event_kind_category(int kind)
{
    switch (kind) {
#define KP_EVENT_CASE_(id, NAME, name, category, flags, what)                                      \
    case id:                                                                                       \
        return category;
        KP_EVENT_KIND_LIST(KP_EVENT_CASE_)
#undef KP_EVENT_CASE_
    default:
        return NULL;
    }
}

/* Its KP_EVENT_F_* flags; 0 for a number that is no kind. */
static inline unsigned kp_event_kind_flags(int kind)
{
    switch (kind) {
#define KP_EVENT_CASE_(id, NAME, name, category, flags, what)                                      \
    case id:                                                                                       \
        return (unsigned)(flags);
        KP_EVENT_KIND_LIST(KP_EVENT_CASE_)
#undef KP_EVENT_CASE_
    default:
        return 0;
    }
}

/* Its line for people, or NULL. */
static inline const char *kp_event_kind_what(int kind)
{
    switch (kind) {
#define KP_EVENT_CASE_(id, NAME, name, category, flags, what)                                      \
    case id:                                                                                       \
        return what;
        KP_EVENT_KIND_LIST(KP_EVENT_CASE_)
#undef KP_EVENT_CASE_
    default:
        return NULL;
    }
}

static inline int kp_event_kind_valid(int kind)
{
    return kp_event_kind_name(kind) != NULL;
}

/* A kernel, copy or fill: an operation on a device. */
static inline int kp_event_kind_on_device(int kind)
{
    return (kp_event_kind_flags(kind) & KP_EVENT_F_DEVICE) != 0;
}

/* The ids of the kinds having any of flags, comma-separated in the list's order ("4,5,6"), for
 * a query's IN (...). buf of n bytes (64 hold every kind); returns buf. */
static inline const char *kp_event_kind_ids(unsigned flags, char *buf, size_t n)
{
    size_t used = 0;
    if (n) buf[0] = '\0';
#define KP_EVENT_ID_(id, NAME, name, category, kind_flags, what)                                   \
    if ((flags & (kind_flags)) != 0u && used < n) {                                                \
        int w = snprintf(buf + used, n - used, "%s%d", used ? "," : "", id);                       \
        used += w > 0 ? (size_t)w : 0;                                                             \
    }
    KP_EVENT_KIND_LIST(KP_EVENT_ID_)
#undef KP_EVENT_ID_
    return buf;
}

/*
 * API domains: X(id, NAME, name) — what made a call or a record (kp_rec.domain, events.domain,
 * the trace's domains table). NONE is a record no API names (CUDA's device operations); SCOPE a
 * range of libkprof's scopes (KPROF_SCOPE), as NVTX is one of NVTX's.
 */
#define KP_DOMAIN_LIST(X)                                                                          \
    X(0, NONE, "")                                                                                 \
    X(1, CUDA_RUNTIME, "cuda_runtime")                                                             \
    X(2, CUDA_DRIVER, "cuda_driver")                                                               \
    X(3, OPENCL, "opencl")                                                                         \
    X(4, NVTX, "nvtx")                                                                             \
    X(5, SCOPE, "scope")

typedef enum kp_domain {
#define KP_DOMAIN_ENUM_(id, NAME, name) KP_DOMAIN_##NAME = id,
    KP_DOMAIN_LIST(KP_DOMAIN_ENUM_)
#undef KP_DOMAIN_ENUM_
} kp_domain;

/* A domain's name ("cuda_driver"; "" for NONE), or NULL for a number that is none. */
static inline const char *kp_domain_name(int domain)
{
    switch (domain) {
#define KP_DOMAIN_CASE_(id, NAME, name)                                                            \
    case id:                                                                                       \
        return name;
        KP_DOMAIN_LIST(KP_DOMAIN_CASE_)
#undef KP_DOMAIN_CASE_
    default:
        return NULL;
    }
}

/*
 * Copy directions: X(id, NAME, name) — a copy's kp_rec.aux and events.copy_kind. UNKNOWN is a
 * direction the collector could not tell.
 */
#define KP_COPY_KIND_LIST(X)                                                                       \
    X(0, UNKNOWN, "unknown")                                                                       \
    X(1, HTOD, "HtoD")                                                                             \
    X(2, DTOH, "DtoH")                                                                             \
    X(3, DTOD, "DtoD")                                                                             \
    X(4, HTOH, "HtoH")                                                                             \
    X(5, PEER, "peer")

typedef enum kp_copy_kind {
#define KP_COPY_ENUM_(id, NAME, name) KP_COPY_##NAME = id,
    KP_COPY_KIND_LIST(KP_COPY_ENUM_)
#undef KP_COPY_ENUM_
} kp_copy_kind;

/* A direction's name ("HtoD"), or NULL for a number that is none. */
static inline const char *kp_copy_kind_name(int copy_kind)
{
    switch (copy_kind) {
#define KP_COPY_CASE_(id, NAME, name)                                                              \
    case id:                                                                                       \
        return name;
        KP_COPY_KIND_LIST(KP_COPY_CASE_)
#undef KP_COPY_CASE_
    default:
        return NULL;
    }
}

/*
 * kp_event — one event in memory, whatever observed it (a collector's record, the lab's timed
 * dispatch, a library scope). Zero it, then fill what is known; a field whose value may be
 * unknown says so through `known` (KP_EVENT_HAS_*), never through a made-up 0.
 *
 * Launch geometry has one meaning of grid: the TOTAL number of threads (work-items) per
 * dimension — the CLI's --grid, Metal's dispatchThreads, OpenCL's global size — and `group` the
 * threads per threadgroup (CUDA block, OpenCL work-group), 0 in every dimension when the program
 * left the group size to the runtime (OpenCL with no local size), which no query reveals. So a
 * grid is always known, even where the groups are not. Sources that count threadgroups instead
 * (CUDA's gridDim, CUPTI's records, and so a trace file's grid_x/y/z columns) are converted where
 * they come in, with kp_event_set_groups; kp_event_groups gives the count back for display.
 */
enum {
    KP_EVENT_HAS_REGISTERS = 1u << 0,      /* registers */
    KP_EVENT_HAS_SHARED = 1u << 1,         /* static_shared and dynamic_shared */
    KP_EVENT_HAS_LOCAL = 1u << 2,          /* local_mem */
    KP_EVENT_HAS_QUEUED = 1u << 3,         /* queued_ns */
    KP_EVENT_HAS_SUBMITTED = 1u << 4,      /* submitted_ns */
    KP_EVENT_HAS_CORRELATION = 1u << 5,    /* correlation */
    KP_EVENT_HAS_GEOMETRY = 1u << 6,       /* grid and group */
    KP_EVENT_HAS_OCCUPANCY = 1u << 7,      /* occupancy */
    KP_EVENT_HAS_MAX_THREADS = 1u << 8,    /* max_threads_per_group */
    KP_EVENT_HAS_FLOPS = 1u << 9,          /* metrics.flops */
    KP_EVENT_HAS_METRIC_BYTES = 1u << 10,  /* metrics.bytes */
    KP_EVENT_HAS_CL_REFLECTION = 1u << 11, /* cl_local_mem, cl_private_mem, group_multiple (and
                                              max_threads_per_group): an OpenCL kernel's */
    KP_EVENT_HAS_BYTES = 1u << 12          /* bytes: a copy's or a fill's size */
};

typedef struct kp_event {
    kp_event_kind kind;
    uint32_t name;            /* interned name id (0 = none) */
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC; device times mapped onto it; end = start for
                                 instants */
    uint32_t known;           /* KP_EVENT_HAS_* */
    uint16_t domain;          /* kp_domain: the API of a call, or the collector of a device op */
    uint16_t copy_kind;       /* kp_copy_kind (MEMCPY) */
    int64_t process;          /* the process image (a trace's processes.id), 0 = this one */
    int64_t pid, tid;         /* operating-system ids; device ops: the launching thread if known */
    uint32_t device;          /* device ops: device number */
    uint32_t stream;          /* device ops: CUDA stream id or OpenCL queue index */
    uint64_t correlation;     /* a host call and the device work it launched share it, within
                                 a process image */
    uint64_t call_path;       /* the path of ranges and scopes enclosing it (0 = none) */
    int64_t queued_ns;        /* device ops: when the host enqueued it */
    int64_t submitted_ns;     /* device ops: when it reached the device */
    /* Launch geometry and reflection (kernels). */
    uint64_t grid[3];               /* total threads per dimension (see above) */
    uint32_t group[3];              /* threads per threadgroup; all 0 = chosen by the runtime */
    uint32_t registers;             /* per thread */
    uint64_t static_shared;         /* threadgroup (shared) memory per group, bytes; 64 bits as
                                       a trace's columns, whose sum readers saturate */
    uint64_t dynamic_shared;        /* ... given at launch, bytes */
    uint32_t local_mem;             /* per thread, bytes */
    uint32_t max_threads_per_group; /* the kernel's limit on this device */
    uint32_t group_multiple;        /* OpenCL: the preferred work-group size multiple */
    uint64_t cl_local_mem;          /* OpenCL: local memory per work-group, bytes */
    uint64_t cl_private_mem;        /* OpenCL: private memory per work-item, bytes */
    double occupancy;               /* achieved or theoretical, 0..1 */
    uint64_t bytes;                 /* copies and fills: size (KP_EVENT_HAS_BYTES) */
    uint64_t range_id;              /* ranges and marks: unique within the process image */
    int32_t status;                 /* calls: return value; device ops: final status (0 = ok) */
    struct {
        double flops; /* floating-point operations the work did, as the user or model says */
        double bytes; /* bytes it moved */
    } metrics;
} kp_event;

/* Set a launch given as threadgroups per dimension and threads per group (CUDA's grid and
 * block, a trace's grid_x/y/z and block_x/y/z): grid becomes groups x group threads. With a
 * group of 0 (the runtime chose it), groups already counts threads (a trace's convention).
 * Numbers a damaged file may hold do not wrap: negative ones are 0, products saturate. */
static inline void kp_event_set_groups(kp_event *e, const int64_t groups[3], const int64_t group[3])
{
    int runtime = group[0] == 0;
    for (int i = 0; i < 3; i++) {
        uint64_t g = groups[i] > 0 ? (uint64_t)groups[i] : 0;
        uint64_t t = runtime || group[i] <= 0 ? 0 : (uint64_t)group[i];
        if (t > UINT32_MAX) t = UINT32_MAX;
        e->group[i] = (uint32_t)t;
        e->grid[i] = runtime ? g : t && g > UINT64_MAX / t ? UINT64_MAX : g * t;
    }
    e->known |= KP_EVENT_HAS_GEOMETRY;
}

/* Whether the runtime chose the group size (then only the grid is known). */
static inline int kp_event_runtime_groups(const kp_event *e)
{
    return e->group[0] == 0;
}

/* Threadgroups per dimension, rounded up (a last, partial group counts); 0 when the runtime
 * chose the group size. */
static inline void kp_event_groups(const kp_event *e, uint64_t out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = e->group[i] ? (e->grid[i] + e->group[i] - 1) / e->group[i] : 0;
}

#endif
