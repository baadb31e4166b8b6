/*
 * trace_aggregate.c — a trace into a finished aggregation (see trace_aggregate.h): one pass over
 * the events in order of start, which the aggregate needs to find each call's enclosing ranges.
 */
#include "store/trace_aggregate.h"
#include "core/host_calls.h"

#include <stdlib.h>

static const char *kp_trace_aggregate_name(void *ctx, uint32_t id)
{
    return kp_event_source_string(ctx, id, NULL);
}

kprof_status kp_trace_aggregate(kp_event_source *src, unsigned flags, kp_aggregation **out,
                                kp_error *err)
{
    *out = NULL;
    size_t nnames;
    const char *const *names = kp_event_source_strings(src, &nnames);
    kp_event_iter *it = NULL;
    kprof_status st = KPROF_OK;
    unsigned char *hidden = calloc(nnames ? nnames : 1, 1); /* by string id: left out */
    kp_aggregation *a = kp_aggregation_create(kp_trace_aggregate_name, src);
    if (!hidden || !a) goto nomem;
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
    free(hidden);
    *out = a;
    return KPROF_OK;
nomem:
    st = kp_error_set(err, KPROF_NOMEM, "out of memory");
fail:
    kp_event_iter_close(it, NULL);
    kp_aggregation_destroy(a);
    free(hidden);
    return st;
}
