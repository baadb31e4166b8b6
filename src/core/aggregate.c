/*
 * aggregate.c — key averages, call paths and the call tree of a stream of events (see
 * aggregate.h for what the numbers mean). One pass: each host thread keeps a stack of its open
 * ranges and calls, which gives every event its parent node as it arrives; device work finds its
 * call's node through a (process, correlation) map; durations go into the nodes at once, and
 * what depends on the whole subtree (GPU time attributed, inclusive metrics) is summed bottom-up
 * at finish. Nothing here keeps an event after it is placed, apart from the few that the join
 * and ties of start time make wait.
 */
#include "core/aggregate.h"
#include "base/error.h"
#include "core/busy.h"
#include "core/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open range or call on a thread's stack. */
typedef struct kp_agg_open {
    uint32_t node;
    int64_t start, end;
} kp_agg_open;

/* A thread's open stack is trimmed lazily: an element that ended by the last ordered start
 * (closed_by) is closed for good, but stays on the stack until it is on top (ranges may end out
 * of order); what is above the topmost open element has ended, so the placement of an ordered
 * event pops those and takes the top: each element is pushed and popped once, and placing n
 * nested ranges is O(n), not O(n^2) as a scan of the whole stack per event was. */
typedef struct kp_agg_thread {
    int64_t process, tid;
    kp_agg_open *open; /* outermost first; ended ones below the top until it is popped */
    size_t nopen, capopen;
    int64_t closed_by; /* the last ordered start placed here: what ended by it is closed */
    int trimmed;       /* closed_by is set */
} kp_agg_thread;

/* A host call that carries a correlation: where its device work goes. node 0 = empty slot. */
typedef struct kp_agg_call {
    int64_t process;
    uint64_t correlation;
    uint32_t node;
} kp_agg_call;

/* Device work whose call has not been seen (yet). */
typedef struct kp_agg_pending {
    int64_t process;
    uint64_t correlation;
    int64_t duration;
    double flops, bytes;
    uint32_t name;
    kp_event_kind kind;
    unsigned metrics; /* KP_AGG_*: which of flops and bytes it has */
} kp_agg_pending;

/* What an event brings of the metrics: flops, bytes (a bytes metric, or a copy's or a fill's
 * size), and KP_AGG_METRIC when it carried flops or a bytes metric (a size alone does not). */
enum { KP_AGG_FLOPS = 1u << 0, KP_AGG_BYTES = 1u << 1, KP_AGG_METRIC = 1u << 2 };

/* KP_AGG_METRIC for an event that carries flops or a bytes metric. */
static unsigned kp_agg_metric_of(const kp_event *e)
{
    return e->known & (KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES) ? KP_AGG_METRIC : 0;
}

/* An event held because others may start at the same nanosecond. */
typedef struct kp_agg_held {
    kp_event event;
    size_t order; /* arrival, for ties */
} kp_agg_held;

struct kp_aggregation {
    kp_aggregation_name_fn name_fn;
    void *name_ctx;
    kp_aggregation_observe_fn observe_fn; /* kp_aggregation_observe, or NULL */
    void *observe_ctx;
    kprof_status failed; /* KPROF_OK until an add or finish fails: the aggregation is spoilt */
    int finished;
    kp_aggregation_node *nodes;
    size_t nnodes, capnodes;
    uint32_t *node_slots; /* node ids by (parent, kind, name); 0 = empty */
    size_t capslots;
    kp_agg_thread *threads;
    size_t nthreads, capthreads;
    uint32_t *thread_slots; /* thread index + 1; 0 = empty */
    size_t capthread_slots;
    kp_agg_call *calls;
    size_t ncalls, capcalls; /* capcalls a power of two, at most half full */
    kp_agg_pending *pending;
    size_t npending, cappending;
    kp_agg_held *held;
    size_t nheld, capheld;
    int64_t held_start;
    int any_event;
    int64_t latest_start;
    uint32_t unattributed; /* the (unattributed) node, 0 until needed */
    uint64_t stack_steps;  /* open-stack elements looked at (kp_aggregation_stack_steps) */
    kp_busy busy, kernel_busy;
    kp_aggregation_totals totals;
};

/* Room for one more element of size sz in *v (capacity *cap). KPROF_OK or KPROF_NOMEM.
 * (The static helpers of this file return a status and fill no kp_error: their failures are out
 * of memory, or the observer's status; the public function that called them fills err once.) */
static kprof_status kp_agg_grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return KPROF_OK;
    size_t c = *cap ? *cap * 2 : 16;
    if (c > SIZE_MAX / sz) return KPROF_NOMEM;
    void *p = realloc(*v, c * sz);
    if (!p) return KPROF_NOMEM;
    *v = p;
    *cap = c;
    return KPROF_OK;
}

static uint64_t kp_agg_mix(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ c * 0x165667B19E3779F9ull;
    return h ^ h >> 29 ^ h >> 47;
}

static int64_t kp_agg_duration(const kp_event *e)
{
    return e->end_ns > e->start_ns ? kp_ns_diff(e->end_ns, e->start_ns) : 0;
}

kp_aggregation *kp_aggregation_create(kp_aggregation_name_fn name, void *ctx)
{
    kp_aggregation *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->name_fn = name;
    a->name_ctx = ctx;
    a->capnodes = 64;
    a->nodes = calloc(a->capnodes, sizeof *a->nodes);
    a->capslots = 128;
    a->node_slots = calloc(a->capslots, sizeof *a->node_slots);
    if (!a->nodes || !a->node_slots) {
        kp_aggregation_destroy(a);
        return NULL;
    }
    a->nnodes = 1; /* the root: zeroed, kind NONE, depth 0 */
    return a;
}

void kp_aggregation_destroy(kp_aggregation *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->nthreads; i++)
        free(a->threads[i].open);
    free(a->threads);
    free(a->thread_slots);
    free(a->nodes);
    free(a->node_slots);
    free(a->calls);
    free(a->pending);
    free(a->held);
    free(a);
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static size_t kp_agg_node_slot(const kp_aggregation *a, uint32_t parent, kp_event_kind kind,
                               uint32_t name)
{
    size_t mask = a->capslots - 1;
    size_t i = (size_t)kp_agg_mix(parent, (uint64_t)kind, name) & mask;
    for (;;) {
        uint32_t id = a->node_slots[i];
        if (!id) return i;
        const kp_aggregation_node *n = &a->nodes[id];
        if (n->parent == parent && n->kind == kind && n->name == name) return i;
        i = (i + 1) & mask;
    }
}

static kprof_status kp_agg_rehash(kp_aggregation *a)
{
    size_t cap = a->capslots * 2;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return KPROF_NOMEM;
    free(a->node_slots);
    a->node_slots = slots;
    a->capslots = cap;
    for (size_t id = 1; id < a->nnodes; id++) {
        const kp_aggregation_node *n = &a->nodes[id];
        a->node_slots[kp_agg_node_slot(a, n->parent, n->kind, n->name)] = (uint32_t)id;
    }
    return KPROF_OK;
}

/* The node (parent, kind, name), made when new; paths deeper than the limit are folded. 0 when
 * out of memory (0 is the root, never a child). */
static uint32_t kp_agg_child(kp_aggregation *a, uint32_t parent, kp_event_kind kind, uint32_t name)
{
    if (a->nodes[parent].depth >= KP_AGGREGATION_MAX_DEPTH) {
        while (a->nodes[parent].depth >= KP_AGGREGATION_MAX_DEPTH)
            parent = a->nodes[parent].parent;
        a->totals.folded++;
    }
    size_t slot = kp_agg_node_slot(a, parent, kind, name);
    if (a->node_slots[slot]) return a->node_slots[slot];
    if (a->nnodes >= UINT32_MAX) return 0;
    if ((a->nnodes + 1) * 2 > a->capslots) {
        if (kp_agg_rehash(a) != 0) return 0;
        slot = kp_agg_node_slot(a, parent, kind, name);
    }
    if (kp_agg_grow((void **)&a->nodes, &a->capnodes, a->nnodes, sizeof *a->nodes) != 0) return 0;
    uint32_t id = (uint32_t)a->nnodes++;
    kp_aggregation_node *n = &a->nodes[id];
    memset(n, 0, sizeof *n);
    n->parent = parent;
    n->depth = a->nodes[parent].depth + 1;
    n->kind = kind;
    n->name = name;
    n->next_sibling = a->nodes[parent].first_child; /* ordered at finish */
    a->nodes[parent].first_child = id;
    a->node_slots[slot] = id;
    return id;
}

/* One event of duration d in node id (host: inclusive and exclusive time; device: GPU time),
 * with the metrics `metrics` (KP_AGG_*) says it has. KPROF_OK, or the observer's failure. */
static kprof_status kp_agg_count(kp_aggregation *a, uint32_t id, int64_t d, int device,
                                 double flops, double bytes, unsigned metrics)
{
    kp_aggregation_stats *s = &a->nodes[id].stats;
    if (!s->count || d < s->min_ns) s->min_ns = d;
    if (!s->count || d > s->max_ns) s->max_ns = d;
    s->count++;
    s->duration_ns = kp_i64_add_sat(s->duration_ns, d);
    s->sum_sq_ns += (double)d * (double)d;
    if (device) {
        s->gpu_self_ns = kp_i64_add_sat(s->gpu_self_ns, d);
    } else {
        s->inclusive_ns = kp_i64_add_sat(s->inclusive_ns, d);
        s->exclusive_ns = kp_i64_add_sat(s->exclusive_ns, d);
    }
    s->flops += flops;
    s->bytes += bytes;
    if (metrics & KP_AGG_FLOPS) s->flops_ns = kp_i64_add_sat(s->flops_ns, d);
    if (metrics & KP_AGG_BYTES) s->bytes_ns = kp_i64_add_sat(s->bytes_ns, d);
    s->flops_events += (metrics & KP_AGG_FLOPS) != 0;
    s->bytes_events += (metrics & KP_AGG_BYTES) != 0;
    s->metric_events += (metrics & KP_AGG_METRIC) != 0;
    return a->observe_fn ? a->observe_fn(a->observe_ctx, id, d) : KPROF_OK;
}

void kp_aggregation_observe(kp_aggregation *a, kp_aggregation_observe_fn fn, void *ctx)
{
    a->observe_fn = fn;
    a->observe_ctx = ctx;
}

/* ---- host threads ---------------------------------------------------------------------------- */

static kp_agg_thread *kp_agg_thread_of(kp_aggregation *a, int64_t process, int64_t tid)
{
    if ((a->nthreads + 1) * 2 > a->capthread_slots) {
        size_t cap = a->capthread_slots ? a->capthread_slots * 2 : 64;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return NULL;
        for (size_t t = 0; t < a->nthreads; t++) {
            size_t i = (size_t)kp_agg_mix((uint64_t)a->threads[t].process,
                                          (uint64_t)a->threads[t].tid, 1) &
                       (cap - 1);
            while (slots[i])
                i = (i + 1) & (cap - 1);
            slots[i] = (uint32_t)t + 1;
        }
        free(a->thread_slots);
        a->thread_slots = slots;
        a->capthread_slots = cap;
    }
    size_t mask = a->capthread_slots - 1;
    size_t i = (size_t)kp_agg_mix((uint64_t)process, (uint64_t)tid, 1) & mask;
    while (a->thread_slots[i]) {
        kp_agg_thread *t = &a->threads[a->thread_slots[i] - 1];
        if (t->process == process && t->tid == tid) return t;
        i = (i + 1) & mask;
    }
    if (a->nthreads >= UINT32_MAX - 1 ||
        kp_agg_grow((void **)&a->threads, &a->capthreads, a->nthreads, sizeof *a->threads) != 0)
        return NULL;
    kp_agg_thread *t = &a->threads[a->nthreads];
    memset(t, 0, sizeof *t);
    t->process = process;
    t->tid = tid;
    a->thread_slots[i] = (uint32_t)++a->nthreads;
    return t;
}

/* Remember the node of a call that carries a correlation; the first call of a pair stays. */
static kprof_status kp_agg_call_put(kp_aggregation *a, int64_t process, uint64_t correlation,
                                    uint32_t node)
{
    if ((a->ncalls + 1) * 2 > a->capcalls) {
        size_t cap = a->capcalls ? a->capcalls * 2 : 1024;
        kp_agg_call *slots = calloc(cap, sizeof *slots);
        if (!slots) return KPROF_NOMEM;
        for (size_t k = 0; k < a->capcalls; k++) {
            if (!a->calls[k].node) continue;
            size_t i =
                (size_t)kp_agg_mix((uint64_t)a->calls[k].process, a->calls[k].correlation, 2) &
                (cap - 1);
            while (slots[i].node)
                i = (i + 1) & (cap - 1);
            slots[i] = a->calls[k];
        }
        free(a->calls);
        a->calls = slots;
        a->capcalls = cap;
    }
    size_t mask = a->capcalls - 1;
    size_t i = (size_t)kp_agg_mix((uint64_t)process, correlation, 2) & mask;
    while (a->calls[i].node) {
        if (a->calls[i].process == process && a->calls[i].correlation == correlation)
            return KPROF_OK;
        i = (i + 1) & mask;
    }
    a->calls[i] = (kp_agg_call){process, correlation, node};
    a->ncalls++;
    return KPROF_OK;
}

static uint32_t kp_agg_call_get(const kp_aggregation *a, int64_t process, uint64_t correlation)
{
    if (!a->capcalls) return 0;
    size_t mask = a->capcalls - 1;
    size_t i = (size_t)kp_agg_mix((uint64_t)process, correlation, 2) & mask;
    while (a->calls[i].node) {
        if (a->calls[i].process == process && a->calls[i].correlation == correlation)
            return a->calls[i].node;
        i = (i + 1) & mask;
    }
    return 0;
}

/* Place a range or call on its thread. ordered: nothing fed so far started later, so the stack
 * can be trimmed to what is open at its start and it can become a parent itself. */
static kprof_status kp_agg_place_host(kp_aggregation *a, const kp_event *e, int ordered)
{
    kp_agg_thread *t = kp_agg_thread_of(a, e->process, e->tid);
    if (!t) return KPROF_NOMEM;
    int64_t s = e->start_ns, f = e->end_ns > s ? e->end_ns : s;
    const kp_agg_open *parent = NULL;
    if (ordered) {
        /* What ended by s is closed for good, wherever it is in the stack; the top that is still
         * open contains s and started last of what is open. Closed ones below it wait. */
        while (t->nopen && t->open[t->nopen - 1].end <= s) {
            t->nopen--;
            a->stack_steps++;
        }
        t->closed_by = s;
        t->trimmed = 1;
        if (t->nopen) parent = &t->open[t->nopen - 1];
        a->stack_steps++;
    } else {
        for (size_t i = t->nopen; i-- > 0;) {
            const kp_agg_open *o = &t->open[i];
            a->stack_steps++;
            if (t->trimmed && o->end <= t->closed_by) continue; /* closed, not yet popped */
            if (o->start <= s && s < o->end) {
                parent = o;
                break;
            }
        }
    }
    uint32_t parent_node = parent ? parent->node : 0;
    uint32_t id = kp_agg_child(a, parent_node, e->kind, e->name);
    if (!id) return KPROF_NOMEM;
    int64_t d = kp_ns_diff(f, s);
    kprof_status st = kp_agg_count(
        a, id, d, 0, e->known & KP_EVENT_HAS_FLOPS ? e->metrics.flops : 0,
        e->known & KP_EVENT_HAS_METRIC_BYTES ? e->metrics.bytes : 0,
        (e->known & KP_EVENT_HAS_FLOPS ? KP_AGG_FLOPS : 0) |
            (e->known & KP_EVENT_HAS_METRIC_BYTES ? KP_AGG_BYTES : 0) | kp_agg_metric_of(e));
    if (st != KPROF_OK) return st;
    if (parent) { /* the parent's own time loses the part of this one inside it */
        int64_t inside = kp_ns_diff(f < parent->end ? f : parent->end, s);
        kp_aggregation_stats *ps = &a->nodes[parent->node].stats;
        ps->exclusive_ns = inside > 0 ? ps->exclusive_ns - inside : ps->exclusive_ns;
    }
    if (e->kind == KP_EVENT_API) {
        a->totals.calls++;
        a->totals.host_api_ns = kp_i64_add_sat(a->totals.host_api_ns, d);
        if ((e->known & KP_EVENT_HAS_CORRELATION) &&
            kp_agg_call_put(a, e->process, e->correlation, id) != KPROF_OK)
            return KPROF_NOMEM;
    } else {
        a->totals.ranges++;
    }
    if (ordered && f > s) {
        if (kp_agg_grow((void **)&t->open, &t->capopen, t->nopen, sizeof *t->open) != KPROF_OK)
            return KPROF_NOMEM;
        t->open[t->nopen++] = (kp_agg_open){id, s, f};
    }
    return KPROF_OK;
}

static int kp_cmp_held(const void *x, const void *y)
{
    const kp_agg_held *a = x, *b = y;
    if (a->event.end_ns != b->event.end_ns)
        return (a->event.end_ns < b->event.end_ns) - (a->event.end_ns > b->event.end_ns);
    return (a->order > b->order) - (a->order < b->order);
}

/* Place the events that started at held_start, the longest first: an enclosing range that
 * starts with its first call is then that call's parent. */
static kprof_status kp_agg_flush(kp_aggregation *a)
{
    if (a->nheld > 1) qsort(a->held, a->nheld, sizeof *a->held, kp_cmp_held);
    for (size_t i = 0; i < a->nheld; i++) {
        kprof_status st = kp_agg_place_host(a, &a->held[i].event, 1);
        if (st != KPROF_OK) return st;
    }
    a->nheld = 0;
    return KPROF_OK;
}

/* ---- device work ----------------------------------------------------------------------------- */

static kprof_status kp_agg_place_device(kp_aggregation *a, uint32_t call, kp_event_kind kind,
                                        uint32_t name, int64_t d, double flops, double bytes,
                                        unsigned metrics)
{
    if (!call) {
        if (!a->unattributed) {
            a->unattributed = kp_agg_child(a, 0, KP_EVENT_NONE, 0);
            if (!a->unattributed) return KPROF_NOMEM;
        }
        call = a->unattributed;
        a->totals.ops_without_call++;
    }
    uint32_t id = kp_agg_child(a, call, kind, name);
    if (!id) return KPROF_NOMEM;
    return kp_agg_count(a, id, d, 1, flops, bytes, metrics);
}

static kprof_status kp_agg_device(kp_aggregation *a, const kp_event *e)
{
    int64_t d = kp_agg_duration(e);
    int64_t end = e->end_ns > e->start_ns ? e->end_ns : e->start_ns;
    double flops = e->known & KP_EVENT_HAS_FLOPS ? e->metrics.flops : 0;
    /* A copy's or a fill's size, when known, counts as its bytes (aggregate.h): it has them. */
    int size = e->kind != KP_EVENT_KERNEL && (e->known & KP_EVENT_HAS_BYTES);
    double bytes = e->known & KP_EVENT_HAS_METRIC_BYTES ? e->metrics.bytes
                   : size                               ? (double)e->bytes
                                                        : 0;
    unsigned metrics = (e->known & KP_EVENT_HAS_FLOPS ? KP_AGG_FLOPS : 0) |
                       ((e->known & KP_EVENT_HAS_METRIC_BYTES) || size ? KP_AGG_BYTES : 0) |
                       kp_agg_metric_of(e);
    kp_aggregation_totals *t = &a->totals;
    t->device_ops++;
    kp_busy_add(&a->busy, e->start_ns, end);
    if (e->kind == KP_EVENT_KERNEL) {
        t->kernels++;
        if (d < (int64_t)(KP_VERDICT_SMALL_DISPATCH_S * 1e9 + 0.5)) t->small_kernels++;
        kp_busy_add(&a->kernel_busy, e->start_ns, end);
    }
    if (t->device_ops == 1 || e->start_ns < t->active_start_ns) t->active_start_ns = e->start_ns;
    if (t->device_ops == 1 || end > t->active_end_ns) t->active_end_ns = end;
    if (!(e->known & KP_EVENT_HAS_CORRELATION))
        return kp_agg_place_device(a, 0, e->kind, e->name, d, flops, bytes, metrics);
    uint32_t call = kp_agg_call_get(a, e->process, e->correlation);
    if (call) return kp_agg_place_device(a, call, e->kind, e->name, d, flops, bytes, metrics);
    /* Its call may still come (clock skew, a tie of start times): decide at finish. */
    if (kp_agg_grow((void **)&a->pending, &a->cappending, a->npending, sizeof *a->pending) !=
        KPROF_OK)
        return KPROF_NOMEM;
    a->pending[a->npending++] =
        (kp_agg_pending){e->process, e->correlation, d, flops, bytes, e->name, e->kind, metrics};
    return KPROF_OK;
}

/* Spoil the aggregation with st (KPROF_NOMEM, or what the observer returned) and say so in err.
 * Returns st. */
static kprof_status kp_agg_fail(kp_aggregation *a, kprof_status st, kp_error *err)
{
    a->failed = st;
    if (st == KPROF_NOMEM) return kp_error_nomem(err);
    return kp_error_set(err, st, "aggregation: the observer of its instances failed");
}

/* Why a spoilt or finished aggregation takes no more (add, finish). */
static kprof_status kp_agg_refuse(const kp_aggregation *a, const char *what, kp_error *err)
{
    if (a->failed)
        return kp_error_set(err, a->failed, "aggregation: %s after an earlier failure", what);
    return kp_error_set(err, KPROF_INVALID, "aggregation: %s after kp_aggregation_finish", what);
}

/* ---- feeding --------------------------------------------------------------------------------- */

kprof_status kp_aggregation_add(kp_aggregation *a, const kp_event *e, kp_error *err)
{
    if (a->failed || a->finished) return kp_agg_refuse(a, "an event fed", err);
    kp_aggregation_totals *t = &a->totals;
    int64_t end = e->end_ns > e->start_ns ? e->end_ns : e->start_ns;
    if (!t->events || e->start_ns < t->first_ns) t->first_ns = e->start_ns;
    if (!t->events || end > t->last_ns) t->last_ns = end;
    t->events++;
    if (e->end_ns < e->start_ns) t->ends_before_start++;
    if (e->known & (KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES)) t->metric_events++;
    int ordered = !a->any_event || e->start_ns >= a->latest_start;
    if (!ordered) {
        t->unordered++;
    } else {
        if (a->nheld && e->start_ns > a->held_start) {
            kprof_status st = kp_agg_flush(a);
            if (st != KPROF_OK) return kp_agg_fail(a, st, err);
        }
        a->latest_start = e->start_ns;
        a->any_event = 1;
    }
    kprof_status rc = KPROF_OK;
    switch (e->kind) {
    case KP_EVENT_API:
    case KP_EVENT_RANGE:
        if (!ordered) {
            rc = kp_agg_place_host(a, e, 0);
            break;
        }
        if (kp_agg_grow((void **)&a->held, &a->capheld, a->nheld, sizeof *a->held) != KPROF_OK)
            return kp_agg_fail(a, KPROF_NOMEM, err);
        a->held[a->nheld] = (kp_agg_held){*e, a->nheld};
        a->nheld++;
        a->held_start = e->start_ns;
        break;
    case KP_EVENT_KERNEL:
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET:
        rc = kp_agg_device(a, e);
        break;
    case KP_EVENT_SYNC:
        t->wait_ns = kp_i64_add_sat(t->wait_ns, kp_agg_duration(e));
        break;
    default:
        t->ignored++;
        break;
    }
    if (rc != KPROF_OK) return kp_agg_fail(a, rc, err);
    return KPROF_OK;
}

/* ---- finishing ------------------------------------------------------------------------------- */

kprof_status kp_aggregation_finish(kp_aggregation *a, kp_error *err)
{
    if (a->failed || a->finished) return kp_agg_refuse(a, "finished", err);
    kprof_status st = kp_agg_flush(a);
    if (st != KPROF_OK) return kp_agg_fail(a, st, err);
    for (size_t i = 0; i < a->npending; i++) {
        const kp_agg_pending *p = &a->pending[i];
        uint32_t call = kp_agg_call_get(a, p->process, p->correlation);
        st = kp_agg_place_device(a, call, p->kind, p->name, p->duration, p->flops, p->bytes,
                                 p->metrics);
        if (st != KPROF_OK) return kp_agg_fail(a, st, err);
    }
    free(a->pending);
    a->pending = NULL;
    a->npending = a->cappending = 0;
    /* Bottom-up: a child's id is always larger than its parent's. */
    for (size_t id = 1; id < a->nnodes; id++) {
        kp_aggregation_stats *s = &a->nodes[id].stats;
        if (s->exclusive_ns < 0) s->exclusive_ns = 0; /* saturated sums of hostile times */
        s->gpu_ns = s->gpu_self_ns;
        s->device_ops = kp_event_kind_on_device(a->nodes[id].kind) ? s->count : 0;
        s->flops_inclusive = s->flops;
        s->bytes_inclusive = s->bytes;
    }
    kp_aggregation_stats *root = &a->nodes[0].stats;
    for (size_t id = a->nnodes; id-- > 1;) {
        const kp_aggregation_node *n = &a->nodes[id];
        kp_aggregation_stats *p = &a->nodes[n->parent].stats;
        p->gpu_ns = kp_i64_add_sat(p->gpu_ns, n->stats.gpu_ns);
        p->device_ops += n->stats.device_ops;
        p->flops_inclusive += n->stats.flops_inclusive;
        p->bytes_inclusive += n->stats.bytes_inclusive;
        if (n->parent == 0)
            root->inclusive_ns = kp_i64_add_sat(root->inclusive_ns, n->stats.inclusive_ns);
    }
    a->totals.gpu_busy_ns = kp_busy_ns(&a->busy);
    a->totals.kernel_busy_ns = kp_busy_ns(&a->kernel_busy);
    a->finished = 1;
    if (kp_aggregation_order(a, KP_AGGREGATION_SORT_TOTAL, err) != KPROF_OK)
        return kp_agg_fail(a, KPROF_NOMEM, NULL); /* err holds it already */
    return KPROF_OK;
}

const kp_aggregation_totals *kp_aggregation_get_totals(const kp_aggregation *a)
{
    return &a->totals;
}

uint64_t kp_aggregation_stack_steps(const kp_aggregation *a)
{
    return a->stack_steps;
}

size_t kp_aggregation_node_count(const kp_aggregation *a)
{
    return a->nnodes;
}

const kp_aggregation_node *kp_aggregation_get_node(const kp_aggregation *a, uint32_t id)
{
    return id < a->nnodes ? &a->nodes[id] : NULL;
}

const char *kp_aggregation_name(const kp_aggregation *a, uint32_t id, char *buf, size_t n)
{
    if (id >= a->nnodes) return "?";
    const kp_aggregation_node *node = &a->nodes[id];
    if (id == 0) return "(root)";
    if (node->kind == KP_EVENT_NONE) return KP_AGGREGATION_UNATTRIBUTED;
    const char *text = a->name_fn ? a->name_fn(a->name_ctx, node->name) : NULL;
    if (text) return text;
    if (buf && n) snprintf(buf, n, "#%u", (unsigned)node->name);
    return buf && n ? buf : "?";
}

void kp_aggregation_path(const kp_aggregation *a, uint32_t id, kp_str *out)
{
    uint32_t chain[KP_AGGREGATION_MAX_DEPTH + 1];
    size_t n = 0;
    for (uint32_t at = id; at && at < a->nnodes && n < KP_AGGREGATION_MAX_DEPTH + 1;
         at = a->nodes[at].parent)
        chain[n++] = at;
    while (n-- > 0) {
        char buf[24];
        kp_str_append(out, kp_aggregation_name(a, chain[n], buf, sizeof buf));
        if (n) kp_str_append(out, "/");
    }
}

/* ---- sorting --------------------------------------------------------------------------------- */

const char *kp_aggregation_sort_name(kp_aggregation_sort key)
{
    switch (key) {
#define KP_AGG_SORT_CASE_(NAME, name, what)                                                        \
    case KP_AGGREGATION_SORT_##NAME:                                                               \
        return name;
        KP_AGGREGATION_SORT_LIST(KP_AGG_SORT_CASE_)
#undef KP_AGG_SORT_CASE_
    default:
        return NULL;
    }
}

int kp_aggregation_sort_parse(const char *name, kp_aggregation_sort *key)
{
    for (int k = 0; k < KP_AGGREGATION_SORT_COUNT; k++) {
        if (name && strcmp(name, kp_aggregation_sort_name((kp_aggregation_sort)k)) == 0) {
            *key = (kp_aggregation_sort)k;
            return 0;
        }
    }
    return -1;
}

double kp_aggregation_sort_value(const kp_aggregation_stats *s, kp_event_kind kind,
                                 kp_aggregation_sort key)
{
    int device = kp_event_kind_on_device(kind);
    switch (key) {
    case KP_AGGREGATION_SORT_TOTAL:
        /* (unattributed) has no time of its own: what it holds is device time. */
        return kind == KP_EVENT_NONE ? (double)s->gpu_ns : (double)s->duration_ns;
    case KP_AGGREGATION_SORT_SELF:
        return kind == KP_EVENT_NONE ? (double)s->gpu_ns
               : device              ? (double)s->gpu_self_ns
                                     : (double)s->exclusive_ns;
    case KP_AGGREGATION_SORT_GPU:
        return (double)s->gpu_ns;
    case KP_AGGREGATION_SORT_CALLS:
        return (double)s->count;
    default:
        return 0;
    }
}

/* What one sort compares: a group (the parent, when ordering children), then the key's value
 * descending, then the tie-breaks of aggregate.h. */
typedef struct kp_agg_key {
    uint32_t group;
    double value;
    int64_t duration;
    uint32_t name;
    uint32_t kind;
    uint32_t index;
} kp_agg_key;

static int kp_cmp_key(const void *x, const void *y)
{
    const kp_agg_key *a = x, *b = y;
    if (a->group != b->group) return (a->group > b->group) - (a->group < b->group);
    if (a->value != b->value) return (a->value < b->value) - (a->value > b->value);
    if (a->duration != b->duration)
        return (a->duration < b->duration) - (a->duration > b->duration);
    if (a->name != b->name) return (a->name > b->name) - (a->name < b->name);
    if (a->kind != b->kind) return (a->kind > b->kind) - (a->kind < b->kind);
    return (a->index > b->index) - (a->index < b->index);
}

static kp_agg_key kp_agg_key_of(const kp_aggregation_stats *s, kp_event_kind kind, uint32_t name,
                                uint32_t group, uint32_t index, kp_aggregation_sort key)
{
    kp_agg_key k = {group,          kp_aggregation_sort_value(s, kind, key),
                    s->duration_ns, name,
                    (uint32_t)kind, index};
    return k;
}

kprof_status kp_aggregation_order(kp_aggregation *a, kp_aggregation_sort key, kp_error *err)
{
    if (a->nnodes < 2) return KPROF_OK;
    kp_agg_key *keys = malloc((a->nnodes - 1) * sizeof *keys);
    if (!keys) return kp_error_nomem(err);
    for (size_t id = 1; id < a->nnodes; id++) {
        const kp_aggregation_node *n = &a->nodes[id];
        keys[id - 1] = kp_agg_key_of(&n->stats, n->kind, n->name, n->parent, (uint32_t)id, key);
    }
    qsort(keys, a->nnodes - 1, sizeof *keys, kp_cmp_key);
    for (size_t id = 0; id < a->nnodes; id++)
        a->nodes[id].first_child = a->nodes[id].next_sibling = 0;
    /* Link each parent's run back to front, so that first_child ends up first. */
    for (size_t i = a->nnodes - 1; i-- > 0;) {
        uint32_t id = keys[i].index;
        kp_aggregation_node *parent = &a->nodes[a->nodes[id].parent];
        a->nodes[id].next_sibling = parent->first_child;
        parent->first_child = id;
    }
    free(keys);
    return KPROF_OK;
}

/* ---- key averages ---------------------------------------------------------------------------- */

const char *kp_aggregation_group_name(kp_aggregation_group group)
{
    switch (group) {
#define KP_AGG_GROUP_CASE_(NAME, name)                                                             \
    case KP_AGGREGATION_GROUP_##NAME:                                                              \
        return name;
        KP_AGGREGATION_GROUP_LIST(KP_AGG_GROUP_CASE_)
#undef KP_AGG_GROUP_CASE_
    default:
        return NULL;
    }
}

int kp_aggregation_group_parse(const char *name, kp_aggregation_group *group)
{
    for (int g = 0; g < KP_AGGREGATION_GROUP_COUNT; g++) {
        if (name && strcmp(name, kp_aggregation_group_name((kp_aggregation_group)g)) == 0) {
            *group = (kp_aggregation_group)g;
            return 0;
        }
    }
    return -1;
}

void kp_aggregation_stats_merge(kp_aggregation_stats *into, const kp_aggregation_stats *s)
{
    if (s->count) {
        if (!into->count || s->min_ns < into->min_ns) into->min_ns = s->min_ns;
        if (!into->count || s->max_ns > into->max_ns) into->max_ns = s->max_ns;
    }
    into->count += s->count;
    into->duration_ns = kp_i64_add_sat(into->duration_ns, s->duration_ns);
    into->sum_sq_ns += s->sum_sq_ns;
    into->inclusive_ns = kp_i64_add_sat(into->inclusive_ns, s->inclusive_ns);
    into->exclusive_ns = kp_i64_add_sat(into->exclusive_ns, s->exclusive_ns);
    into->gpu_self_ns = kp_i64_add_sat(into->gpu_self_ns, s->gpu_self_ns);
    into->gpu_ns = kp_i64_add_sat(into->gpu_ns, s->gpu_ns);
    into->device_ops += s->device_ops;
    into->flops += s->flops;
    into->bytes += s->bytes;
    into->flops_inclusive += s->flops_inclusive;
    into->bytes_inclusive += s->bytes_inclusive;
    into->flops_ns = kp_i64_add_sat(into->flops_ns, s->flops_ns);
    into->bytes_ns = kp_i64_add_sat(into->bytes_ns, s->bytes_ns);
    into->flops_events += s->flops_events;
    into->bytes_events += s->bytes_events;
    into->metric_events += s->metric_events;
}

kprof_status kp_aggregation_rows(const kp_aggregation *a, kp_aggregation_group group,
                                 kp_aggregation_row **out, size_t *nout, kp_error *err)
{
    *out = NULL;
    *nout = 0;
    size_t cap = a->nnodes > 1 ? a->nnodes - 1 : 1;
    kp_aggregation_row *rows = malloc(cap * sizeof *rows);
    uint32_t *slots = NULL; /* by name: row index + 1 by (kind, name) */
    size_t capslots = 16, n = 0;
    while (capslots < cap * 2)
        capslots *= 2;
    if (group == KP_AGGREGATION_GROUP_NAME) slots = calloc(capslots, sizeof *slots);
    if (!rows || (group == KP_AGGREGATION_GROUP_NAME && !slots)) {
        free(rows);
        free(slots);
        return kp_error_nomem(err);
    }
    for (size_t id = 1; id < a->nnodes; id++) {
        const kp_aggregation_node *node = &a->nodes[id];
        if (group == KP_AGGREGATION_GROUP_PATH) {
            rows[n++] = (kp_aggregation_row){(uint32_t)id, node->kind, node->name, node->stats};
            continue;
        }
        if (node->kind == KP_EVENT_NONE) continue;
        size_t i = (size_t)kp_agg_mix((uint64_t)node->kind, node->name, 3) & (capslots - 1);
        while (slots[i] &&
               (rows[slots[i] - 1].kind != node->kind || rows[slots[i] - 1].name != node->name))
            i = (i + 1) & (capslots - 1);
        if (slots[i]) {
            kp_aggregation_stats_merge(&rows[slots[i] - 1].stats, &node->stats);
        } else {
            rows[n] = (kp_aggregation_row){(uint32_t)id, node->kind, node->name, node->stats};
            slots[i] = (uint32_t)++n;
        }
    }
    free(slots);
    if (!n) {
        free(rows);
        rows = NULL;
    }
    *out = rows;
    *nout = n;
    return KPROF_OK;
}

/* Rows compared under one key; the last tie-break is the row's node, unique among rows. */
static int kp_cmp_rows(const void *x, const void *y, kp_aggregation_sort key)
{
    const kp_aggregation_row *a = x, *b = y;
    kp_agg_key ka = kp_agg_key_of(&a->stats, a->kind, a->name, 0, a->node, key);
    kp_agg_key kb = kp_agg_key_of(&b->stats, b->kind, b->name, 0, b->node, key);
    return kp_cmp_key(&ka, &kb);
}

/* One comparator per key (qsort passes no context), so that selecting never allocates. */
#define KP_AGG_ROW_CMP_(NAME, name, what)                                                          \
    static int kp_cmp_rows_##NAME(const void *x, const void *y)                                    \
    {                                                                                              \
        return kp_cmp_rows(x, y, KP_AGGREGATION_SORT_##NAME);                                      \
    }
KP_AGGREGATION_SORT_LIST(KP_AGG_ROW_CMP_)
#undef KP_AGG_ROW_CMP_

size_t kp_aggregation_select(kp_aggregation_row *rows, size_t n, kp_aggregation_sort key,
                             size_t top)
{
    static int (*const cmp[])(const void *, const void *) = {
#define KP_AGG_ROW_CMP_REF_(NAME, name, what) [KP_AGGREGATION_SORT_##NAME] = kp_cmp_rows_##NAME,
        KP_AGGREGATION_SORT_LIST(KP_AGG_ROW_CMP_REF_)
#undef KP_AGG_ROW_CMP_REF_
    };
    if (n > 1 && (unsigned)key < KP_AGGREGATION_SORT_COUNT) qsort(rows, n, sizeof *rows, cmp[key]);
    return top && top < n ? top : n;
}
