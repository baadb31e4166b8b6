/*
 * trace_aggregate.c — a trace into a finished aggregation (see trace_aggregate.h): one pass over
 * the events in order of start, which the aggregate needs to find each call's enclosing ranges.
 */
#include "store/trace_aggregate.h"
#include "core/host_calls.h"

#include <stdlib.h>
#include <string.h>

static const char *kp_trace_aggregate_name(void *ctx, uint32_t id)
{
    return kp_event_source_string(ctx, id, NULL);
}

void kp_trace_instances_free(kp_trace_instances *in)
{
    if (!in) return;
    for (size_t i = 0; i < in->nnodes; i++)
        free(in->ns[i]);
    free(in->ns);
    free(in->n);
    free(in->cap_);
    memset(in, 0, sizeof *in);
}

/* Room for nodes 0 .. nodes-1 in the lists (those new, empty); nnodes becomes at least nodes.
 * 0, or -1 when out of memory (the lists are then as they were, with maybe more room). */
static int kp_trace_instances_reserve(kp_trace_instances *in, size_t nodes)
{
    if (nodes > in->cap_nodes_) {
        size_t cap = in->cap_nodes_ ? in->cap_nodes_ : 64;
        while (cap < nodes)
            cap *= 2;
        int64_t **ns = realloc(in->ns, cap * sizeof *ns);
        if (ns) in->ns = ns;
        size_t *n = realloc(in->n, cap * sizeof *n);
        if (n) in->n = n;
        size_t *c = realloc(in->cap_, cap * sizeof *c);
        if (c) in->cap_ = c;
        if (!ns || !n || !c) return -1;
        for (size_t i = in->cap_nodes_; i < cap; i++) {
            in->ns[i] = NULL;
            in->n[i] = in->cap_[i] = 0;
        }
        in->cap_nodes_ = cap;
    }
    if (nodes > in->nnodes) in->nnodes = nodes;
    return 0;
}

/* The aggregation's observer: one instance of node id into its list. */
static int kp_trace_instances_add(void *ctx, uint32_t id, int64_t duration_ns)
{
    kp_trace_instances *in = ctx;
    if (kp_trace_instances_reserve(in, (size_t)id + 1) != 0) return -1;
    if (in->n[id] == in->cap_[id]) {
        size_t cap = in->cap_[id] ? in->cap_[id] * 2 : 8;
        int64_t *v = realloc(in->ns[id], cap * sizeof *v);
        if (!v) return -1;
        in->ns[id] = v;
        in->cap_[id] = cap;
    }
    in->ns[id][in->n[id]++] = duration_ns;
    return 0;
}

kprof_status kp_trace_aggregate(kp_event_source *src, unsigned flags, kp_aggregation **out,
                                kp_error *err)
{
    return kp_trace_aggregate_instances(src, flags, out, NULL, err);
}

kprof_status kp_trace_aggregate_instances(kp_event_source *src, unsigned flags,
                                          kp_aggregation **out, kp_trace_instances *instances,
                                          kp_error *err)
{
    *out = NULL;
    if (instances) memset(instances, 0, sizeof *instances);
    size_t nnames;
    const char *const *names = kp_event_source_strings(src, &nnames);
    kp_event_iter *it = NULL;
    kprof_status st = KPROF_OK;
    unsigned char *hidden = calloc(nnames ? nnames : 1, 1); /* by string id: left out */
    kp_aggregation *a = kp_aggregation_create(kp_trace_aggregate_name, src);
    if (!hidden || !a) goto nomem;
    if (instances) kp_aggregation_observe(a, kp_trace_instances_add, instances);
    if (!(flags & KP_TRACE_AGGREGATE_POLLING))
        for (size_t id = 0; id < nnames; id++)
            hidden[id] = (kp_host_call_flags(names[id]) & KP_HOST_CALL_POLLING) != 0;
    /* Every kind, not only those placed: a filter on kinds would make SQLite sort the events
     * rather than walk its index on start_ns. PAYLOAD gives copies and fills their bytes,
     * METRICS the flops and bytes the events carry (nothing to read in a trace without). */
    kp_event_filter filter = {.order = KP_EVENT_ORDER_START,
                              .fields = KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_METRICS};
    st = kp_event_iter_open(src, &filter, &it, err);
    if (st != KPROF_OK) goto fail;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev)) {
        /* e.name is 0 for an id beyond the strings table, so it indexes hidden safely. */
        if (ev.e.kind == KP_EVENT_API && hidden[ev.e.name]) continue;
        if (kp_aggregation_add(a, &ev.e) != 0) goto nomem;
    }
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st != KPROF_OK) goto fail;
    if (kp_aggregation_finish(a) != 0) goto nomem;
    /* Every node has its list, those without instances (the root, (unattributed)) too. */
    if (instances && kp_trace_instances_reserve(instances, kp_aggregation_node_count(a)) != 0)
        goto nomem;
    free(hidden);
    *out = a;
    return KPROF_OK;
nomem:
    st = kp_error_set(err, KPROF_NOMEM, "out of memory");
fail:
    kp_event_iter_close(it, NULL);
    kp_aggregation_destroy(a);
    free(hidden);
    kp_trace_instances_free(instances);
    return st;
}
