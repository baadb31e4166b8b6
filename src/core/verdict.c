/*
 * verdict.c — the submission-economics verdict (see verdict.h): a timeline's windows as numbers,
 * the analysis of those numbers against named thresholds, and the prose, in that order and in
 * separate functions. The thresholds follow the seeds: dispatches under 0.05 ms are
 * submission-dominated; kernels under 15% of the wall cannot move the headline; a GPU idle half
 * the wall is not kernel-bound — and, since a training script's start-up alone can idle the GPU
 * for seconds, an idle GPU is launch-bound only when launches come fast and close together.
 */
#include "core/verdict.h"
#include "core/busy.h"
#include "base/util.h"
#include "core/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* end - start in ns, saturating instead of overflowing (damaged or hostile timestamps). */
static double kp_ns_to_s(int64_t ns)
{
    return (double)ns / 1e9;
}

/* ---- names ---------------------------------------------------------------------------------- */

const char *kp_verdict_name(kp_verdict_kind kind)
{
    switch (kind) {
    case KP_VERDICT_NO_DEVICE:
        return "no-device-activity";
    case KP_VERDICT_LAUNCH_BOUND:
        return "launch-bound";
    case KP_VERDICT_SYNC_BOUND:
        return "sync-bound";
    case KP_VERDICT_HOST_BOUND:
        return "host-bound";
    case KP_VERDICT_KERNELS_MINOR:
        return "kernels-minor";
    case KP_VERDICT_DEVICE_BOUND:
        return "device-bound";
    default:
        return "mixed";
    }
}

const char *kp_verdict_gap_place_name(kp_gap_place place)
{
    switch (place) {
    case KP_GAP_WHOLE:
        return "whole-window";
    case KP_GAP_BEFORE_FIRST:
        return "before-first";
    case KP_GAP_BETWEEN:
        return "between";
    case KP_GAP_AFTER_LAST:
        return "after-last";
    default:
        return "none";
    }
}

const char *kp_verdict_advice_name(unsigned bit)
{
    switch (bit) {
    case KP_ADVICE_FEWER_LAUNCHES:
        return "fewer-launches";
    case KP_ADVICE_CUDA_GRAPHS:
        return "cuda-graphs";
    case KP_ADVICE_FEWER_WAITS:
        return "fewer-waits";
    case KP_ADVICE_HOST_WORK:
        return "host-work";
    case KP_ADVICE_BUILD_ONCE:
        return "build-once";
    case KP_ADVICE_NAMED_CALL:
        return "named-call";
    case KP_ADVICE_TRANSFERS:
        return "transfers";
    case KP_ADVICE_KERNELS:
        return "kernels";
    default:
        return NULL;
    }
}

/* Calls that build, compile or load a GPU program: where they are the headline, the advice is to
 * do that once (or ahead of time), not to tune a kernel. */
static const char *const kp_build_calls[] = {"clBuildProgram",
                                             "clCompileProgram",
                                             "clLinkProgram",
                                             "nvrtcCompileProgram",
                                             "cuModuleLoad",
                                             "cuModuleLoadData",
                                             "cuModuleLoadDataEx",
                                             "cuModuleLoadFatBinary",
                                             "cuLibraryLoadData",
                                             "cuLibraryLoadFromFile",
                                             "cuLinkComplete",
                                             "cuLinkAddData",
                                             "cudaLibraryLoadData",
                                             "cudaLibraryLoadFromFile",
                                             NULL};

int kp_verdict_is_build_call(const char *name)
{
    if (!name) return 0;
    for (int i = 0; kp_build_calls[i]; i++)
        if (strcmp(name, kp_build_calls[i]) == 0) return 1;
    return 0;
}

/* ---- the analysis ---------------------------------------------------------------------------- */

void kp_verdict_compute(const kp_verdict_input *in, kp_verdict *v)
{
    memset(v, 0, sizeof *v);
    double wall = in->wall_s > 0 ? in->wall_s : 1e-9;
    v->busy_fraction = in->gpu_busy_s / wall;
    v->idle_fraction = v->busy_fraction < 1 ? 1 - v->busy_fraction : 0;
    v->kernel_fraction = in->kernel_busy_s / wall;
    v->sync_fraction = in->host_sync_s / wall;
    v->host_api_fraction = in->host_api_s / wall;
    v->launches_per_s = (double)in->kernels / wall;
    v->small_fraction = in->kernels ? (double)in->small_kernels / (double)in->kernels : 0;
    v->gap_fraction = in->longest_gap_s / wall;
    v->idle = v->idle_fraction >= KP_VERDICT_IDLE;
    v->high_launch_rate = v->launches_per_s >= KP_VERDICT_LAUNCH_RATE;
    v->enough_launches = in->kernels >= KP_VERDICT_MIN_LAUNCHES;
    v->short_kernels = in->kernels > 0 && v->small_fraction >= KP_VERDICT_SMALL_SHARE;
    double idle_s = in->wall_s - in->gpu_busy_s;
    v->short_gaps = idle_s > 0 && in->short_gap_idle_s >= KP_VERDICT_SHORT_GAP_SHARE * idle_s;
    v->named_call = -1;
    for (int i = 0; i < in->ncalls && i < KP_VERDICT_TOP_CALLS; i++) {
        if (!in->calls[i].sync && in->calls[i].total_s / wall >= KP_VERDICT_CALL_NAMED) {
            v->named_call = i;
            break;
        }
    }

    if (in->gpu_busy_s <= 0 && in->device_ops == 0 && in->kernels == 0) {
        v->kind = KP_VERDICT_NO_DEVICE;
    } else if (v->idle && v->high_launch_rate && v->enough_launches && v->short_kernels &&
               v->short_gaps) {
        v->kind = KP_VERDICT_LAUNCH_BOUND;
        v->advice |= KP_ADVICE_FEWER_LAUNCHES;
        if (in->api & KP_API_CUDA) v->advice |= KP_ADVICE_CUDA_GRAPHS;
    } else if (v->idle && v->sync_fraction >= KP_VERDICT_SYNC) {
        v->kind = KP_VERDICT_SYNC_BOUND;
        v->advice |= KP_ADVICE_FEWER_WAITS;
    } else if (v->idle) {
        v->kind = KP_VERDICT_HOST_BOUND;
        v->advice |= KP_ADVICE_HOST_WORK;
    } else if (v->kernel_fraction < KP_VERDICT_MINOR_KERNELS) {
        v->kind = KP_VERDICT_KERNELS_MINOR;
        v->advice |= KP_ADVICE_TRANSFERS;
    } else if (v->busy_fraction >= KP_VERDICT_DEVICE_BUSY) {
        v->kind = KP_VERDICT_DEVICE_BOUND;
        v->advice |= KP_ADVICE_KERNELS;
    } else {
        v->kind = KP_VERDICT_MIXED;
        v->advice |= KP_ADVICE_KERNELS | KP_ADVICE_HOST_WORK;
    }
    if (v->named_call >= 0) {
        v->advice |= KP_ADVICE_NAMED_CALL;
        if (kp_verdict_is_build_call(in->calls[v->named_call].name))
            v->advice |= KP_ADVICE_BUILD_ONCE;
    }
}

/* ---- the prose ------------------------------------------------------------------------------- */

typedef struct kp_text {
    char *buf;
    size_t n, len;
} kp_text;

static void kp_text_add(kp_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void kp_text_add(kp_text *t, const char *fmt, ...)
{
    if (t->len + 1 >= t->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->buf + t->len, t->n - t->len, fmt, ap);
    va_end(ap);
    if (w > 0) t->len += (size_t)w < t->n - t->len ? (size_t)w : t->n - t->len - 1;
}

/* A name short enough for a sentence: C++ signatures run to hundreds of characters. */
static const char *kp_short_name(const char *name, char *buf, size_t n)
{
    if (!name) return "?";
    size_t len = strlen(name);
    if (len < n) return name;
    size_t keep = n > 4 ? n - 4 : 0; /* room for "…" (3 bytes) and the NUL */
    while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
        keep--; /* whole characters */
    snprintf(buf, n, "%.*s…", (int)keep, name);
    return buf;
}

/* A percentage with three significant digits: 99.8%, 0.2%, 40%. */
static const char *kp_pct(double fraction, char *buf, size_t n)
{
    snprintf(buf, n, "%.3g%%", 100 * fraction);
    return buf;
}

void kp_verdict_gap_text(const kp_verdict_input *in, char *out, size_t n)
{
    char a[96], b[96];
    out[0] = '\0';
    switch (in->longest_gap_place) {
    case KP_GAP_WHOLE:
        snprintf(out, n, "the whole window (no device work in it)");
        break;
    case KP_GAP_BEFORE_FIRST:
        if (in->gap_before_kernel)
            snprintf(out, n, "before the first kernel");
        else
            snprintf(out, n, "before the first device operation (%s)",
                     kp_short_name(in->gap_before, a, sizeof a));
        break;
    case KP_GAP_BETWEEN:
        snprintf(out, n, "between %s and %s", kp_short_name(in->gap_after, a, sizeof a),
                 kp_short_name(in->gap_before, b, sizeof b));
        break;
    case KP_GAP_AFTER_LAST:
        if (in->gap_after_kernel)
            snprintf(out, n, "after the last kernel");
        else
            snprintf(out, n, "after the last device operation (%s)",
                     kp_short_name(in->gap_after, a, sizeof a));
        break;
    default:
        break;
    }
}

/* What the host did: its longest idle stretch and its largest GPU calls. */
static void kp_describe_host(kp_text *t, const kp_verdict_input *in, const kp_verdict *v,
                             const char *window, int64_t trace_start_ns)
{
    char gap[320], d[32], at[32], p[16], name[96];
    if (in->longest_gap_place != KP_GAP_NONE && in->longest_gap_place != KP_GAP_WHOLE &&
        in->longest_gap_s > 0) {
        kp_verdict_gap_text(in, gap, sizeof gap);
        kp_text_add(t, " The longest idle stretch, %s (%s of %s), is %s",
                    kp_format_duration(in->longest_gap_s, d, sizeof d),
                    kp_pct(v->gap_fraction, p, sizeof p), window, gap);
        if (in->longest_gap_place == KP_GAP_BETWEEN) /* where in the trace */
            kp_text_add(
                t, ", %s into the trace",
                kp_format_duration(kp_ns_to_s(kp_ns_diff(in->longest_gap_at_ns, trace_start_ns)),
                                   at, sizeof at));
        kp_text_add(t, ".");
    }
    if (in->ncalls == 0) {
        kp_text_add(t,
                    " No host %s calls were recorded in it: the host's time went to its own "
                    "work (start-up, computation, I/O).",
                    in->api == KP_API_OPENCL ? "OpenCL" : "GPU");
        return;
    }
    const char *calls_word = in->api == KP_API_OPENCL ? "OpenCL" : "GPU";
    kp_text_add(t, " The host's largest %s calls:", calls_word);
    for (int i = 0; i < in->ncalls; i++)
        kp_text_add(t, "%s %s %s", i ? "," : "",
                    kp_short_name(in->calls[i].name, name, sizeof name),
                    kp_format_duration(in->calls[i].total_s, d, sizeof d));
    kp_text_add(t, "; %s calls took %s of %s", calls_word,
                kp_pct(v->host_api_fraction, p, sizeof p), window);
    if (v->host_api_fraction < 0.5)
        kp_text_add(t, ", the rest went to the host's own work (start-up, computation, I/O).");
    else
        kp_text_add(t, ".");
}

/* Where the kernels are the question: which kernel took the most device time. */
static void kp_describe_top_kernel(kp_text *t, const kp_verdict_input *in)
{
    char name[96], d[32], p[16];
    if (!in->top_kernel || in->top_kernel_s <= 0 || in->device_op_s <= 0) return;
    kp_text_add(t, " The kernel of most device time: %s, %s (%s of the device time).",
                kp_short_name(in->top_kernel, name, sizeof name),
                kp_format_duration(in->top_kernel_s, d, sizeof d),
                kp_pct(in->top_kernel_s / in->device_op_s, p, sizeof p));
}

const char *kp_verdict_device_word(unsigned api, int capital)
{
    if (api == KP_API_OPENCL) return capital ? "Device" : "device";
    return "GPU";
}

void kp_verdict_describe(const kp_verdict_input *in, const kp_verdict *v, const char *window,
                         int64_t trace_start_ns, char *out, size_t n)
{
    kp_text t = {out, n, 0};
    if (n == 0) return;
    out[0] = '\0';
    char p1[16], p2[16], d[32], name[96];
    const char *gpu = kp_verdict_device_word(in->api, 1);
    const char *gpu_lower = kp_verdict_device_word(in->api, 0);
    switch (v->kind) {
    case KP_VERDICT_NO_DEVICE:
        kp_text_add(&t, "No %s work ran in %s: nothing here is a kernel's cost.", gpu_lower,
                    window);
        break;
    case KP_VERDICT_LAUNCH_BOUND:
        kp_text_add(&t,
                    "%s idle %s of %s with %.0f launches/s, %s of them under 0.05 ms and %s "
                    "apart (median gap): launch-bound; kernel tuning cannot move the headline. "
                    "Fewer, larger launches (%s) come first.",
                    gpu, kp_pct(v->idle_fraction, p1, sizeof p1), window, v->launches_per_s,
                    kp_pct(v->small_fraction, p2, sizeof p2),
                    kp_format_duration(in->median_gap_s, d, sizeof d),
                    v->advice & KP_ADVICE_CUDA_GRAPHS ? "fusion, CUDA graphs"
                                                      : "fusion, more work per launch");
        break;
    case KP_VERDICT_SYNC_BOUND:
        kp_text_add(&t,
                    "%s idle %s of %s while the host waits on it %s of it: "
                    "synchronization-bound; remove waits and overlap host work before tuning "
                    "kernels.",
                    gpu, kp_pct(v->idle_fraction, p1, sizeof p1), window,
                    kp_pct(v->sync_fraction, p2, sizeof p2));
        break;
    case KP_VERDICT_HOST_BOUND:
        kp_text_add(&t, "%s idle %s of %s with %.0f launches/s", gpu,
                    kp_pct(v->idle_fraction, p1, sizeof p1), window, v->launches_per_s);
        if (in->gaps > 0)
            kp_text_add(&t, " and a median gap of %s between device operations",
                        kp_format_duration(in->median_gap_s, d, sizeof d));
        kp_text_add(&t, ": host-bound%s; kernel tuning cannot move the headline.",
                    in->kernels > 0 ? ", not launch-bound" : "");
        kp_describe_host(&t, in, v, window, trace_start_ns);
        break;
    case KP_VERDICT_KERNELS_MINOR:
        kp_text_add(&t,
                    "Kernels take %s of %s (%s busy %s, the rest copies and fills): kernel "
                    "tuning cannot move the headline; attack the transfers first.",
                    kp_pct(v->kernel_fraction, p1, sizeof p1), window, gpu_lower,
                    kp_pct(v->busy_fraction, p2, sizeof p2));
        break;
    case KP_VERDICT_DEVICE_BOUND:
        kp_text_add(&t,
                    "%s busy %s of %s: device-bound; the top of the device table is the "
                    "headline.",
                    gpu, kp_pct(v->busy_fraction, p1, sizeof p1), window);
        kp_describe_top_kernel(&t, in);
        break;
    default: {
        char gap[320] = "";
        kp_verdict_gap_text(in, gap, sizeof gap);
        kp_text_add(&t,
                    "%s busy %s of %s: mixed; the device table and the %llu gaps between device "
                    "work (the longest %s%s%s) both matter.",
                    gpu, kp_pct(v->busy_fraction, p1, sizeof p1), window,
                    (unsigned long long)in->gaps,
                    kp_format_duration(in->longest_gap_s, d, sizeof d), *gap ? ", " : "", gap);
        kp_describe_top_kernel(&t, in);
        break;
    }
    }
    if (v->named_call >= 0 && v->named_call < in->ncalls) {
        const kp_verdict_call *c = &in->calls[v->named_call];
        const char *cn = kp_short_name(c->name, name, sizeof name);
        kp_text_add(&t, " %s took %s of %s (%llu call%s, %s): ", cn,
                    kp_pct(c->total_s / (in->wall_s > 0 ? in->wall_s : 1e-9), p1, sizeof p1),
                    window, (unsigned long long)c->calls, c->calls == 1 ? "" : "s",
                    kp_format_duration(c->total_s, d, sizeof d));
        if (!(v->advice & KP_ADVICE_BUILD_ONCE))
            kp_text_add(&t, "that call, not a kernel, is the headline.");
        else if (strncmp(c->name, "cl", 2) == 0)
            kp_text_add(&t, "build the program once and reuse its binary (clGetProgramInfo "
                            "CL_PROGRAM_BINARIES, then clCreateProgramWithBinary).");
        else if (strncmp(c->name, "nvrtc", 5) == 0)
            kp_text_add(&t, "compile once and cache the cubin, or compile ahead of time for "
                            "this GPU.");
        else
            kp_text_add(&t, "load a cubin built for this GPU rather than PTX the driver "
                            "compiles, or load modules once.");
    }
}

/* ---- the timeline ---------------------------------------------------------------------------- */

typedef struct kp_tl_op {
    int64_t s, e;
    uint32_t name;
    int kernel;
} kp_tl_op;

typedef struct kp_tl_call {
    int64_t s, e;
    uint32_t name;
    int sync;
} kp_tl_call;

typedef struct kp_tl_range {
    int64_t s, e;
    uint32_t name;
    int64_t thread;
} kp_tl_range;

/* A stretch of the union of device intervals: the operations that open and close it. */
typedef struct kp_tl_busy {
    int64_t s, e;
    size_t first, last; /* indices in ops */
} kp_tl_busy;

struct kp_timeline {
    int64_t start, end;
    const char *const *names;
    size_t nnames;
    unsigned api;
    kp_tl_op *ops;
    size_t nops, capops;
    kp_tl_call *calls;
    size_t ncalls, capcalls;
    kp_tl_call *waits;
    size_t nwaits, capwaits;
    kp_tl_range *ranges;
    size_t nranges, capranges;
    /* kp_timeline_prepare */
    kp_tl_busy *busy; /* disjoint, ascending */
    size_t nbusy;
    kp_tl_busy *kbusy; /* the same for kernels alone */
    size_t nkbusy;
    uint64_t *kernels_before, *small_before; /* counts over ops[0..i) */
};

/* Room for one more element of size sz in *v (capacity *cap). KPROF_OK, or KPROF_NOMEM. (The
 * timeline's static helpers fail only for memory and fill no kp_error: the public function that
 * called them fills err once.) */
static kprof_status kp_grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return KPROF_OK;
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*v, c * sz);
    if (!p) return KPROF_NOMEM;
    *v = p;
    *cap = c;
    return KPROF_OK;
}

kp_timeline *kp_timeline_create(int64_t start_ns, int64_t end_ns, const char *const *names,
                                size_t nnames)
{
    kp_timeline *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->start = start_ns;
    t->end = end_ns > start_ns ? end_ns : start_ns;
    t->names = names;
    t->nnames = nnames;
    return t;
}

void kp_timeline_set_api(kp_timeline *t, unsigned api)
{
    t->api = api;
}

void kp_timeline_destroy(kp_timeline *t)
{
    if (!t) return;
    free(t->ops);
    free(t->calls);
    free(t->waits);
    free(t->ranges);
    free(t->busy);
    free(t->kbusy);
    free(t->kernels_before);
    free(t->small_before);
    free(t);
}

static uint32_t kp_tl_name(const kp_timeline *t, uint32_t name)
{
    return name < t->nnames ? name : 0;
}

static const char *kp_tl_text(const kp_timeline *t, uint32_t name)
{
    return t->names && name < t->nnames && t->names[name] ? t->names[name] : "?";
}

kprof_status kp_timeline_add_op(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                int kernel, kp_error *err)
{
    if (kp_grow((void **)&t->ops, &t->capops, t->nops, sizeof *t->ops) != KPROF_OK)
        return kp_error_nomem(err);
    t->ops[t->nops++] = (kp_tl_op){start, end < start ? start : end, kp_tl_name(t, name), kernel};
    return KPROF_OK;
}

kprof_status kp_timeline_add_call(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                  int sync, kp_error *err)
{
    if (kp_grow((void **)&t->calls, &t->capcalls, t->ncalls, sizeof *t->calls) != KPROF_OK)
        return kp_error_nomem(err);
    t->calls[t->ncalls++] =
        (kp_tl_call){start, end < start ? start : end, kp_tl_name(t, name), sync};
    return KPROF_OK;
}

kprof_status kp_timeline_add_wait(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                  kp_error *err)
{
    if (kp_grow((void **)&t->waits, &t->capwaits, t->nwaits, sizeof *t->waits) != KPROF_OK)
        return kp_error_nomem(err);
    t->waits[t->nwaits++] = (kp_tl_call){start, end < start ? start : end, kp_tl_name(t, name), 1};
    return KPROF_OK;
}

kprof_status kp_timeline_add_range(kp_timeline *t, int64_t start, int64_t end, uint32_t name,
                                   int64_t thread, kp_error *err)
{
    if (kp_grow((void **)&t->ranges, &t->capranges, t->nranges, sizeof *t->ranges) != KPROF_OK)
        return kp_error_nomem(err);
    t->ranges[t->nranges++] =
        (kp_tl_range){start, end < start ? start : end, kp_tl_name(t, name), thread};
    return KPROF_OK;
}

static int kp_cmp_op(const void *x, const void *y)
{
    const kp_tl_op *a = x, *b = y;
    if (a->s != b->s) return (a->s > b->s) - (a->s < b->s);
    return (a->e > b->e) - (a->e < b->e);
}

static int kp_cmp_call(const void *x, const void *y)
{
    const kp_tl_call *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

/* The union of ops (kernels only, or all), as disjoint ascending stretches: core/busy.h's union
 * (the aggregate's too), keeping every stretch and the operations that open and close it. */
static kprof_status kp_tl_union(const kp_timeline *t, int kernels_only, kp_tl_busy **out,
                                size_t *nout)
{
    kp_tl_busy *v = NULL;
    size_t n = 0, cap = 0;
    kp_busy union_ = {0};
    for (size_t i = 0; i < t->nops; i++) {
        const kp_tl_op *o = &t->ops[i];
        if (kernels_only && !o->kernel) continue;
        kp_busy_step step = kp_busy_add(&union_, o->s, o->e);
        if (step == KP_BUSY_EXTENDED) {
            v[n - 1].e = union_.end;
            v[n - 1].last = i;
        } else if (step == KP_BUSY_OPENED) {
            if (kp_grow((void **)&v, &cap, n, sizeof *v) != KPROF_OK) {
                free(v);
                return KPROF_NOMEM;
            }
            v[n++] = (kp_tl_busy){o->s, o->e, i, i};
        }
    }
    *out = v;
    *nout = n;
    return KPROF_OK;
}

/* A call that has a wait record of its own (the same name, start and end: the collector saw it
 * block) is a synchronizing call. Both arrays sorted by start. */
static void kp_tl_mark_blocking(kp_timeline *t)
{
    size_t i = 0;
    for (size_t w = 0; w < t->nwaits; w++) {
        const kp_tl_call *wait = &t->waits[w];
        if (!wait->name) continue; /* a record of no call (CUPTI's) */
        while (i < t->ncalls && t->calls[i].s < wait->s)
            i++;
        for (size_t k = i; k < t->ncalls && t->calls[k].s == wait->s; k++)
            if (t->calls[k].e == wait->e && t->calls[k].name == wait->name) t->calls[k].sync = 1;
    }
}

kprof_status kp_timeline_prepare(kp_timeline *t, kp_error *err)
{
    if (t->nops > 1) qsort(t->ops, t->nops, sizeof *t->ops, kp_cmp_op);
    if (t->ncalls > 1) qsort(t->calls, t->ncalls, sizeof *t->calls, kp_cmp_call);
    if (t->nwaits > 1) qsort(t->waits, t->nwaits, sizeof *t->waits, kp_cmp_call);
    kp_tl_mark_blocking(t);
    free(t->busy);
    free(t->kbusy);
    free(t->kernels_before);
    free(t->small_before);
    t->busy = t->kbusy = NULL;
    t->kernels_before = calloc(t->nops + 1, sizeof *t->kernels_before);
    t->small_before = calloc(t->nops + 1, sizeof *t->small_before);
    if (!t->kernels_before || !t->small_before) return kp_error_nomem(err);
    int64_t small_ns = (int64_t)(KP_VERDICT_SMALL_DISPATCH_S * 1e9 + 0.5);
    for (size_t i = 0; i < t->nops; i++) {
        const kp_tl_op *o = &t->ops[i];
        t->kernels_before[i + 1] = t->kernels_before[i] + (o->kernel != 0);
        t->small_before[i + 1] =
            t->small_before[i] + (o->kernel && kp_ns_diff(o->e, o->s) < small_ns);
    }
    if (kp_tl_union(t, 0, &t->busy, &t->nbusy) != KPROF_OK ||
        kp_tl_union(t, 1, &t->kbusy, &t->nkbusy) != KPROF_OK)
        return kp_error_nomem(err);
    return KPROF_OK;
}

int kp_timeline_active(const kp_timeline *t, int64_t *start_ns, int64_t *end_ns)
{
    if (!t->nbusy) return 0;
    *start_ns = t->busy[0].s;
    *end_ns = t->busy[t->nbusy - 1].e;
    return 1;
}

/* Binary searches over arrays sorted by the compared field: the first element for which
 * `before` (an expression of `x`, the element) no longer holds. */
#define KP_LOWER_BOUND(name, type, before)                                                         \
    static size_t name(const type *v, size_t n, int64_t at)                                        \
    {                                                                                              \
        size_t lo = 0, hi = n;                                                                     \
        while (lo < hi) {                                                                          \
            size_t mid = lo + (hi - lo) / 2;                                                       \
            const type *x = &v[mid];                                                               \
            if (before)                                                                            \
                lo = mid + 1;                                                                      \
            else                                                                                   \
                hi = mid;                                                                          \
        }                                                                                          \
        return lo;                                                                                 \
    }

/* The first stretch ending after `at` (stretches are disjoint: their ends ascend too); the first
 * operation and the first call starting at or after `at`. */
KP_LOWER_BOUND(kp_busy_after, kp_tl_busy, x->e <= at)
KP_LOWER_BOUND(kp_ops_from, kp_tl_op, x->s < at)
KP_LOWER_BOUND(kp_calls_from, kp_tl_call, x->s < at)

/* Sums over one or more windows, then turned into a kp_verdict_input. */
typedef struct kp_acc {
    kp_verdict_input in;
    int64_t busy_ns, kbusy_ns, wall_ns, api_ns, sync_ns, wait_ns, short_gap_ns;
    double *gaps; /* inner gaps, s */
    size_t ngaps, capgaps;
    int64_t longest_ns;
    /* per-name host calls in the windows so far */
    int64_t *call_ns;
    uint64_t *call_n;
    unsigned char *call_sync;
    uint32_t *touched;
    size_t ntouched;
    /* per-name kernel time in the windows so far, and every device operation's */
    int64_t *kernel_ns;
    uint32_t *ktouched;
    size_t nktouched;
    int64_t op_ns;
} kp_acc;

static kprof_status kp_acc_init(kp_acc *a, size_t nnames)
{
    memset(a, 0, sizeof *a);
    size_t n = nnames ? nnames : 1;
    a->call_ns = calloc(n, sizeof *a->call_ns);
    a->call_n = calloc(n, sizeof *a->call_n);
    a->call_sync = calloc(n, sizeof *a->call_sync);
    a->touched = calloc(n, sizeof *a->touched);
    a->kernel_ns = calloc(n, sizeof *a->kernel_ns);
    a->ktouched = calloc(n, sizeof *a->ktouched);
    a->longest_ns = -1;
    return a->call_ns && a->call_n && a->call_sync && a->touched && a->kernel_ns && a->ktouched
               ? KPROF_OK
               : KPROF_NOMEM;
}

static void kp_acc_free(kp_acc *a)
{
    free(a->gaps);
    free(a->call_ns);
    free(a->call_n);
    free(a->call_sync);
    free(a->touched);
    free(a->kernel_ns);
    free(a->ktouched);
}

/* Back to empty, keeping the allocations. */
static void kp_acc_reset(kp_acc *a)
{
    for (size_t i = 0; i < a->ntouched; i++) {
        a->call_ns[a->touched[i]] = 0;
        a->call_n[a->touched[i]] = 0;
        a->call_sync[a->touched[i]] = 0;
    }
    for (size_t i = 0; i < a->nktouched; i++)
        a->kernel_ns[a->ktouched[i]] = 0;
    a->nktouched = 0;
    a->op_ns = 0;
    memset(&a->in, 0, sizeof a->in);
    a->busy_ns = a->kbusy_ns = a->wall_ns = a->api_ns = a->sync_ns = a->wait_ns = 0;
    a->short_gap_ns = 0;
    a->ngaps = a->ntouched = 0;
    a->longest_ns = -1;
}

static void kp_acc_gap(kp_acc *a, const kp_timeline *t, int64_t at, int64_t len, kp_gap_place place,
                       const kp_tl_op *after, const kp_tl_op *before)
{
    if (len <= a->longest_ns) return;
    a->longest_ns = len;
    a->in.longest_gap_place = place;
    a->in.longest_gap_at_ns = at;
    a->in.gap_after = after ? kp_tl_text(t, after->name) : NULL;
    a->in.gap_after_kernel = after && after->kernel;
    a->in.gap_before = before ? kp_tl_text(t, before->name) : NULL;
    a->in.gap_before_kernel = before && before->kernel;
}

static kprof_status kp_acc_add(kp_acc *a, const kp_timeline *t, int64_t ws, int64_t we)
{
    if (we < ws) we = ws;
    const int64_t short_ns = (int64_t)(KP_VERDICT_SHORT_GAP_S * 1e9 + 0.5);
    a->wall_ns = kp_i64_add_sat(a->wall_ns, kp_ns_diff(we, ws));
    /* Device busy and the idle gaps between, clipped to the window. */
    size_t i = kp_busy_after(t->busy, t->nbusy, ws);
    int64_t prev_end = ws;
    const kp_tl_busy *prev = NULL;
    for (; i < t->nbusy && t->busy[i].s < we; i++) {
        const kp_tl_busy *b = &t->busy[i];
        int64_t cs = b->s > ws ? b->s : ws, ce = b->e < we ? b->e : we;
        a->busy_ns = kp_i64_add_sat(a->busy_ns, kp_ns_diff(ce, cs));
        if (cs > prev_end) {
            int64_t len = kp_ns_diff(cs, prev_end);
            if (prev) {
                if (kp_grow((void **)&a->gaps, &a->capgaps, a->ngaps, sizeof *a->gaps) != KPROF_OK)
                    return KPROF_NOMEM;
                a->gaps[a->ngaps++] = kp_ns_to_s(len);
                a->in.gaps++;
                if (len <= short_ns) a->short_gap_ns = kp_i64_add_sat(a->short_gap_ns, len);
                kp_acc_gap(a, t, prev_end, len, KP_GAP_BETWEEN, &t->ops[prev->last],
                           &t->ops[b->first]);
            } else {
                kp_acc_gap(a, t, prev_end, len, KP_GAP_BEFORE_FIRST, NULL, &t->ops[b->first]);
            }
        }
        prev_end = ce;
        prev = b;
    }
    if (!prev && we > ws)
        kp_acc_gap(a, t, ws, kp_ns_diff(we, ws), KP_GAP_WHOLE, NULL, NULL);
    else if (prev && we > prev_end)
        kp_acc_gap(a, t, prev_end, kp_ns_diff(we, prev_end), KP_GAP_AFTER_LAST, &t->ops[prev->last],
                   NULL);
    for (i = kp_busy_after(t->kbusy, t->nkbusy, ws); i < t->nkbusy && t->kbusy[i].s < we; i++) {
        int64_t cs = t->kbusy[i].s > ws ? t->kbusy[i].s : ws;
        int64_t ce = t->kbusy[i].e < we ? t->kbusy[i].e : we;
        a->kbusy_ns = kp_i64_add_sat(a->kbusy_ns, kp_ns_diff(ce, cs));
    }
    /* Launches: the operations that start in the window. */
    size_t lo = kp_ops_from(t->ops, t->nops, ws), hi = kp_ops_from(t->ops, t->nops, we);
    a->in.device_ops += hi - lo;
    a->in.kernels += t->kernels_before[hi] - t->kernels_before[lo];
    a->in.small_kernels += t->small_before[hi] - t->small_before[lo];
    for (i = lo; i < hi; i++) { /* their time, up to the window's end: the top kernel's share */
        const kp_tl_op *o = &t->ops[i];
        int64_t d = kp_ns_diff(o->e < we ? o->e : we, o->s);
        a->op_ns = kp_i64_add_sat(a->op_ns, d);
        if (!o->kernel) continue;
        if (!a->kernel_ns[o->name] && d > 0) a->ktouched[a->nktouched++] = o->name;
        a->kernel_ns[o->name] = kp_i64_add_sat(a->kernel_ns[o->name], d);
    }
    /* Host calls that start in the window, up to its end. */
    for (i = kp_calls_from(t->calls, t->ncalls, ws); i < t->ncalls && t->calls[i].s < we; i++) {
        const kp_tl_call *c = &t->calls[i];
        int64_t d = kp_ns_diff(c->e < we ? c->e : we, c->s);
        a->api_ns = kp_i64_add_sat(a->api_ns, d);
        if (c->sync) a->sync_ns = kp_i64_add_sat(a->sync_ns, d);
        if (!a->call_n[c->name]) a->touched[a->ntouched++] = c->name;
        a->call_n[c->name]++;
        a->call_ns[c->name] = kp_i64_add_sat(a->call_ns[c->name], d);
        a->call_sync[c->name] |= c->sync != 0;
    }
    for (i = kp_calls_from(t->waits, t->nwaits, ws); i < t->nwaits && t->waits[i].s < we; i++)
        a->wait_ns = kp_i64_add_sat(
            a->wait_ns, kp_ns_diff(t->waits[i].e < we ? t->waits[i].e : we, t->waits[i].s));
    return KPROF_OK;
}

static int kp_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void kp_acc_finish(kp_acc *a, const kp_timeline *t, kp_verdict_input *out)
{
    kp_verdict_input *in = &a->in;
    in->wall_s = kp_ns_to_s(a->wall_ns);
    in->gpu_busy_s = kp_ns_to_s(a->busy_ns);
    in->kernel_busy_s = kp_ns_to_s(a->kbusy_ns);
    in->short_gap_idle_s = kp_ns_to_s(a->short_gap_ns);
    in->host_api_s = kp_ns_to_s(a->api_ns);
    /* Host waits: synchronizing calls; where the collector gave none, its sync records. */
    in->host_sync_s = kp_ns_to_s(a->sync_ns > 0 ? a->sync_ns : a->wait_ns);
    in->longest_gap_s = a->longest_ns > 0 ? kp_ns_to_s(a->longest_ns) : 0;
    if (a->longest_ns <= 0) in->longest_gap_place = KP_GAP_NONE;
    if (a->ngaps) {
        qsort(a->gaps, a->ngaps, sizeof *a->gaps, kp_cmp_double);
        in->median_gap_s = a->gaps[a->ngaps / 2];
    }
    int64_t top = 0;
    for (size_t k = 0; k < a->nktouched; k++) {
        uint32_t id = a->ktouched[k];
        if (a->kernel_ns[id] > top) {
            top = a->kernel_ns[id];
            in->top_kernel = kp_tl_text(t, id);
        }
    }
    in->top_kernel_s = kp_ns_to_s(top);
    in->device_op_s = kp_ns_to_s(a->op_ns);
    in->ncalls = 0;
    for (size_t k = 0; k < a->ntouched; k++) {
        uint32_t id = a->touched[k];
        kp_verdict_call c = {kp_tl_text(t, id), a->call_n[id], kp_ns_to_s(a->call_ns[id]),
                             a->call_sync[id]};
        int at = in->ncalls;
        while (at > 0 && in->calls[at - 1].total_s < c.total_s)
            at--;
        if (at >= KP_VERDICT_TOP_CALLS) continue;
        int last = in->ncalls < KP_VERDICT_TOP_CALLS ? in->ncalls : KP_VERDICT_TOP_CALLS - 1;
        memmove(&in->calls[at + 1], &in->calls[at], (size_t)(last - at) * sizeof *in->calls);
        in->calls[at] = c;
        if (in->ncalls < KP_VERDICT_TOP_CALLS) in->ncalls++;
    }
    in->api = t->api;
    *out = *in;
}

kprof_status kp_timeline_window(const kp_timeline *t, int64_t start_ns, int64_t end_ns,
                                kp_verdict_input *out, kp_error *err)
{
    kp_acc a;
    memset(out, 0, sizeof *out);
    if (kp_acc_init(&a, t->nnames) != KPROF_OK || kp_acc_add(&a, t, start_ns, end_ns) != KPROF_OK) {
        kp_acc_free(&a);
        return kp_error_nomem(err);
    }
    kp_acc_finish(&a, t, out);
    kp_acc_free(&a);
    return KPROF_OK;
}

static int kp_cmp_range_thread(const void *x, const void *y)
{
    const kp_tl_range *a = x, *b = y;
    if (a->thread != b->thread) return (a->thread > b->thread) - (a->thread < b->thread);
    if (a->s != b->s) return (a->s > b->s) - (a->s < b->s);
    return (a->e < b->e) - (a->e > b->e); /* the enclosing range first */
}

static int kp_cmp_range_name(const void *x, const void *y)
{
    const kp_tl_range *a = x, *b = y;
    if (a->name != b->name) return (a->name > b->name) - (a->name < b->name);
    return (a->s > b->s) - (a->s < b->s);
}

static int kp_cmp_range_verdict(const void *x, const void *y)
{
    const kp_range_verdict *a = x, *b = y;
    if (a->in.wall_s != b->in.wall_s)
        return (a->in.wall_s < b->in.wall_s) - (a->in.wall_s > b->in.wall_s);
    return strcmp(a->name, b->name);
}

kprof_status kp_timeline_ranges(const kp_timeline *t, kp_range_verdict **out, size_t *nout,
                                kp_error *err)
{
    *out = NULL;
    *nout = 0;
    if (!t->nranges) return KPROF_OK;
    kp_tl_range *top = malloc(t->nranges * sizeof *top);
    kp_range_verdict *res = NULL;
    size_t ntop = 0, nres = 0, capres = 0;
    kp_acc all, one;
    int ok_all = kp_acc_init(&all, t->nnames) == KPROF_OK;
    int ok_one = kp_acc_init(&one, t->nnames) == KPROF_OK;
    kprof_status rc = KPROF_NOMEM;
    if (!top || !ok_all || !ok_one) goto done;
    /* Top level: not inside an earlier range of the same thread. */
    memcpy(top, t->ranges, t->nranges * sizeof *top);
    qsort(top, t->nranges, sizeof *top, kp_cmp_range_thread);
    int64_t thread = 0, reach = 0;
    for (size_t i = 0; i < t->nranges; i++) {
        if (i == 0 || top[i].thread != thread || top[i].e > reach) {
            thread = top[i].thread;
            reach = top[i].e;
            top[ntop++] = top[i];
        }
    }
    qsort(top, ntop, sizeof *top, kp_cmp_range_name);
    for (size_t i = 0; i < ntop;) {
        size_t j = i;
        kp_acc_reset(&all);
        if (kp_grow((void **)&res, &capres, nres, sizeof *res) != KPROF_OK) goto done;
        kp_range_verdict *r = &res[nres++];
        memset(r, 0, sizeof *r);
        r->name = kp_tl_text(t, top[i].name);
        for (; j < ntop && top[j].name == top[i].name; j++) {
            kp_verdict_input in1;
            kp_verdict v1;
            kp_acc_reset(&one);
            if (kp_acc_add(&all, t, top[j].s, top[j].e) != KPROF_OK ||
                kp_acc_add(&one, t, top[j].s, top[j].e) != KPROF_OK)
                goto done;
            kp_acc_finish(&one, t, &in1);
            kp_verdict_compute(&in1, &v1);
            r->kinds[v1.kind]++;
            r->instances++;
        }
        kp_acc_finish(&all, t, &r->in);
        kp_verdict_compute(&r->in, &r->verdict);
        i = j;
    }
    if (nres > 1) qsort(res, nres, sizeof *res, kp_cmp_range_verdict);
    *out = res;
    *nout = nres;
    res = NULL;
    rc = KPROF_OK;
done:
    free(top);
    free(res);
    kp_acc_free(&all);
    kp_acc_free(&one);
    return rc == KPROF_OK ? KPROF_OK : kp_error_nomem(err);
}
