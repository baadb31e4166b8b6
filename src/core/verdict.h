/*
 * verdict.h — is the kernel even the problem? The submission-economics verdict of a traced
 * program, in three passes kept apart as in readings.h (and Redis's latency doctor):
 *
 *   1. the timeline (kp_timeline): device operations, host API calls and NVTX ranges, from which
 *      the numbers of a window follow — the whole wall, the active window (first to last device
 *      operation), or every top-level NVTX range of one name (kp_verdict_input);
 *   2. the analysis (kp_verdict_compute): flags, fractions and advice from those numbers, against
 *      the named thresholds below (kp_verdict);
 *   3. the prose (kp_verdict_describe): the sentence a person reads, rendered from 1 and 2.
 *
 * The rules, in order (the first that holds wins):
 *   no device work in the window                                    -> no-device-activity
 *   GPU idle >= KP_VERDICT_IDLE, >= KP_VERDICT_LAUNCH_RATE launches/s, >= KP_VERDICT_MIN_LAUNCHES
 *     launches, >= KP_VERDICT_SMALL_SHARE of them under KP_VERDICT_SMALL_DISPATCH_S, and short
 *     gaps (<= KP_VERDICT_SHORT_GAP_S) between device operations holding at least
 *     KP_VERDICT_SHORT_GAP_SHARE of the idle time                  -> launch-bound
 *   GPU idle >= KP_VERDICT_IDLE and host waits >= KP_VERDICT_SYNC   -> sync-bound
 *   GPU idle >= KP_VERDICT_IDLE                                     -> host-bound (the largest
 *     host calls and the longest idle stretch, with where it lies, say what the host was doing)
 *   kernels < KP_VERDICT_MINOR_KERNELS of the window                -> kernels-minor
 *   GPU busy >= KP_VERDICT_DEVICE_BUSY                              -> device-bound
 *   otherwise                                                       -> mixed
 * Whatever the kind, one host call (not a synchronizing one) taking >= KP_VERDICT_CALL_NAMED of
 * the window is named, with
 * advice that fits it (a program build: build once and reuse the binary). Advice fits the API:
 * CUDA graphs only where the program used CUDA.
 */
#ifndef KP_CORE_VERDICT_H
#define KP_CORE_VERDICT_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define KP_VERDICT_SMALL_DISPATCH_S 50e-6  /* a dispatch shorter than this is launch-dominated */
#define KP_VERDICT_IDLE             0.5    /* GPU idle this share of the window: not device-bound */
#define KP_VERDICT_LAUNCH_RATE      1000.0 /* launches/s from which their cost can be the limit */
#define KP_VERDICT_MIN_LAUNCHES     100    /* fewer launches say nothing about launch cost */
#define KP_VERDICT_SMALL_SHARE      0.5    /* share of dispatches under 0.05 ms: short kernels */
#define KP_VERDICT_SHORT_GAP_S      100e-6 /* a gap this short: launched back to back */
#define KP_VERDICT_SHORT_GAP_SHARE  0.5    /* share of the idle time in short gaps: launch-bound */
#define KP_VERDICT_SYNC             0.3    /* host waiting on the device this share: sync-bound */
#define KP_VERDICT_MINOR_KERNELS    0.15   /* kernels under this share cannot move the headline */
#define KP_VERDICT_DEVICE_BUSY      0.8    /* GPU busy this share: device-bound */
#define KP_VERDICT_CALL_NAMED       0.2    /* one host call this share of the window is named */
#define KP_VERDICT_TOP_CALLS        3      /* largest host calls a verdict lists */

/* The APIs a trace shows (bits): the advice names only what the program can use. */
enum { KP_API_CUDA = 1, KP_API_OPENCL = 2 };

/* What the text calls the device: "GPU", or "device" (capital: "Device") where the program used
 * OpenCL alone, whose devices may be CPUs (PoCL). */
const char *kp_verdict_device_word(unsigned api, int capital);

/* Where a window's longest idle stretch lies. */
typedef enum kp_gap_place {
    KP_GAP_NONE,         /* no idle time at all */
    KP_GAP_WHOLE,        /* no device work in the window: all of it is idle */
    KP_GAP_BEFORE_FIRST, /* from the window's start to its first device operation */
    KP_GAP_BETWEEN,      /* between two device operations */
    KP_GAP_AFTER_LAST    /* from the last device operation to the window's end */
} kp_gap_place;

typedef struct kp_verdict_call {
    const char *name; /* borrowed from the timeline's names */
    uint64_t calls;
    double total_s; /* inside the window */
    int sync;       /* the host waits for the device in it (never the named call: waiting is
                       what the device's time costs the host, not a cost of its own) */
} kp_verdict_call;

/* The numbers of one window (for NVTX ranges: of all instances of one name, summed). */
typedef struct kp_verdict_input {
    double wall_s;           /* the window's length */
    double gpu_busy_s;       /* union of kernel, copy and fill intervals, inside the window */
    double kernel_busy_s;    /* union of kernel intervals */
    double host_api_s;       /* host time in the API calls the report shows */
    double host_sync_s;      /* host time in synchronizing calls (else in sync records) */
    uint64_t kernels;        /* dispatches starting in the window */
    uint64_t small_kernels;  /* ... under KP_VERDICT_SMALL_DISPATCH_S */
    uint64_t device_ops;     /* kernels, copies and fills starting in the window */
    uint64_t gaps;           /* idle gaps between device operations (not the window's edges) */
    double median_gap_s;     /* their median; 0 when there are none */
    double short_gap_idle_s; /* idle time in those of them <= KP_VERDICT_SHORT_GAP_S */
    double longest_gap_s;    /* the longest idle stretch, the window's edges included */
    kp_gap_place longest_gap_place;
    int64_t longest_gap_at_ns; /* where it starts, on the trace's clock */
    const char *gap_after;     /* the operation it follows (BETWEEN, AFTER_LAST), else NULL */
    const char *gap_before;    /* the operation it precedes (BETWEEN, BEFORE_FIRST), else NULL */
    int gap_after_kernel, gap_before_kernel; /* those operations are kernels */
    const char *top_kernel; /* the kernel (by name) of the most device time, NULL for none */
    double top_kernel_s;    /* its device time: its dispatches starting in the window */
    double device_op_s;     /* every device operation's time (summed, not a union) */
    kp_verdict_call calls[KP_VERDICT_TOP_CALLS]; /* the largest host calls, largest first */
    int ncalls;
    unsigned api; /* KP_API_* */
} kp_verdict_input;

typedef enum kp_verdict_kind {
    KP_VERDICT_NO_DEVICE,
    KP_VERDICT_LAUNCH_BOUND,
    KP_VERDICT_SYNC_BOUND,
    KP_VERDICT_HOST_BOUND,
    KP_VERDICT_KERNELS_MINOR,
    KP_VERDICT_DEVICE_BOUND,
    KP_VERDICT_MIXED,
    KP_VERDICT_KIND_COUNT
} kp_verdict_kind;

/* What the verdict advises (bits). */
enum {
    KP_ADVICE_FEWER_LAUNCHES = 1 << 0, /* fuse kernels, more work per launch */
    KP_ADVICE_CUDA_GRAPHS = 1 << 1,    /* CUDA only */
    KP_ADVICE_FEWER_WAITS = 1 << 2,    /* remove synchronization, overlap host work */
    KP_ADVICE_HOST_WORK = 1 << 3,      /* find what the host does outside GPU calls */
    KP_ADVICE_BUILD_ONCE = 1 << 4,     /* the named call builds or loads a program */
    KP_ADVICE_NAMED_CALL = 1 << 5,     /* the named call is the headline */
    KP_ADVICE_TRANSFERS = 1 << 6,      /* copies and fills before kernels */
    KP_ADVICE_KERNELS = 1 << 7         /* the device table is the headline */
};

/* The analysis of one window. */
typedef struct kp_verdict {
    kp_verdict_kind kind;
    double busy_fraction;     /* GPU busy / window */
    double idle_fraction;     /* 1 - busy (not below 0) */
    double kernel_fraction;   /* kernel busy / window */
    double sync_fraction;     /* host sync / window */
    double host_api_fraction; /* host API / window */
    double launches_per_s;    /* kernels / window */
    double small_fraction;    /* dispatches under 0.05 ms / dispatches */
    double gap_fraction;      /* longest idle stretch / window */
    int idle;                 /* idle_fraction >= KP_VERDICT_IDLE */
    int high_launch_rate;     /* launches_per_s >= KP_VERDICT_LAUNCH_RATE */
    int enough_launches;      /* kernels >= KP_VERDICT_MIN_LAUNCHES */
    int short_kernels;        /* small_fraction >= KP_VERDICT_SMALL_SHARE */
    int short_gaps;           /* short gaps hold >= KP_VERDICT_SHORT_GAP_SHARE of the idle time */
    int named_call;           /* index in calls of a call >= KP_VERDICT_CALL_NAMED, or -1 */
    unsigned advice;          /* KP_ADVICE_* */
} kp_verdict;

void kp_verdict_compute(const kp_verdict_input *in, kp_verdict *out);

/* The sentence for a window, e.g. window = "the wall", "the active window", "the 30 'step'
 * ranges". trace_start_ns places the longest gap in time. Always NUL-terminates out. */
void kp_verdict_describe(const kp_verdict_input *in, const kp_verdict *v, const char *window,
                         int64_t trace_start_ns, char *out, size_t n);

/* Where the longest gap lies, in words: "before the first kernel", "between a and b", "after the
 * last device operation" ("" when there is no gap). */
void kp_verdict_gap_text(const kp_verdict_input *in, char *out, size_t n);

const char *kp_verdict_name(kp_verdict_kind kind);   /* "launch-bound" ... */
const char *kp_verdict_gap_place_name(kp_gap_place); /* "before-first", "between" ... */
/* The advice bit's stable id for JSON ("fewer-launches"), NULL for an unknown bit. */
const char *kp_verdict_advice_name(unsigned bit);
/* Whether a host call builds, compiles or loads a GPU program (clBuildProgram, nvrtc...). */
int kp_verdict_is_build_call(const char *name);

/* ---- the timeline ---------------------------------------------------------------------------- */

typedef struct kp_timeline kp_timeline;

/* A timeline of the traced command [start_ns, end_ns]. Names are ids into names[0..nnames),
 * which the caller keeps alive as long as the timeline and every verdict input made from it.
 * NULL when out of memory. */
kp_timeline *kp_timeline_create(int64_t start_ns, int64_t end_ns, const char *const *names,
                                size_t nnames);
void kp_timeline_destroy(kp_timeline *t); /* NULL is a no-op */

/* The APIs the program used (KP_API_* bits), for advice that fits them. */
void kp_timeline_set_api(kp_timeline *t, unsigned api);

/* What happened, in any order. Each returns KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_timeline_add_op(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                int kernel, kp_error *err);
/* A host API call; sync: the host waits for the device in it. Calls the report hides (polling)
 * are best left out: the verdict names the calls it is given. */
kprof_status kp_timeline_add_call(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                  int sync, kp_error *err);
/* A synchronization record (the collector saw the host wait), named as its record is (0 when
 * it has no name): host waits where no call says so. A call of the same name, start and end
 * (OpenCL's layer writes one for each call that blocked: a read, write or map with CL_TRUE) is
 * a synchronizing call, as if added with sync set: the host waited in it for the device's work,
 * which is the kernels' time, not the call's. */
kprof_status kp_timeline_add_wait(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                  kp_error *err);
/* An NVTX range on one host thread (thread: any number unique per process and thread). */
kprof_status kp_timeline_add_range(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                   int64_t thread, kp_error *err);

/* Sort and merge what was added; call once, after the last add and before the questions below.
 * KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_timeline_prepare(kp_timeline *t, kp_error *err);

/* The numbers of the window [start_ns, end_ns). KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_timeline_window(const kp_timeline *t, int64_t start_ns, int64_t end_ns,
                                kp_verdict_input *out, kp_error *err);

/* The active window: from the first device operation's start to the last one's end. 0 when
 * there is no device operation. */
int kp_timeline_active(const kp_timeline *t, int64_t *start_ns, int64_t *end_ns);

/* Every top-level NVTX range name (a range not inside another of its thread) with the verdict
 * over all its instances, and each instance's own verdict counted by kind. */
typedef struct kp_range_verdict {
    const char *name;
    uint64_t instances;
    kp_verdict_input in; /* all instances, summed */
    kp_verdict verdict;
    uint64_t kinds[KP_VERDICT_KIND_COUNT]; /* instances per kind */
} kp_range_verdict;

/* *out is heap (free() it), largest total time first; *n 0 when there are no ranges. KPROF_OK, or
 * KPROF_NOMEM (err filled). */
kprof_status kp_timeline_ranges(const kp_timeline *t, kp_range_verdict **out, size_t *n,
                                kp_error *err);

#endif
