/*
 * trace_verdict.c — a trace's verdicts from its events (see trace_verdict.h): the report's
 * rules for feeding core/verdict.h's timeline, kept in one place.
 */
#include "analysis/trace_verdict.h"
#include "core/host_calls.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

kprof_status kp_trace_verdicts_begin(kp_event_source *src, kp_trace_verdicts *v, kp_error *err)
{
    memset(v, 0, sizeof *v);
    const kp_trace_meta *m = kp_event_source_meta(src);
    int64_t start = m->start_ns, end = m->end_ns;
    if (end <= start) { /* no meta: the span of the events */
        kprof_status st = kp_event_source_span(src, &start, &end, err);
        if (st != KPROF_OK) return st;
    }
    v->start_ns = start;
    v->end_ns = end > start ? end : start;
    size_t nnames;
    const char *const *names = kp_event_source_strings(src, &nnames);
    v->timeline = kp_timeline_create(v->start_ns, v->end_ns, names, nnames);
    if (!v->timeline) return kp_error_nomem(err);
    return KPROF_OK;
}

kprof_status kp_trace_verdicts_add(kp_trace_verdicts *v, const kp_trace_event *ev,
                                   unsigned call_flags, int raw, kp_error *err)
{
    const kp_event *e = &ev->e;
    if (e->domain == KP_DOMAIN_OPENCL) v->api |= KP_API_OPENCL;
    switch (e->kind) {
    case KP_EVENT_API: {
        if (e->domain == KP_DOMAIN_CUDA_RUNTIME || e->domain == KP_DOMAIN_CUDA_DRIVER)
            v->api |= KP_API_CUDA;
        int hidden = !raw && (call_flags & KP_HOST_CALL_POLLING);
        int sync = (call_flags & KP_HOST_CALL_SYNC) != 0;
        if (hidden && !sync) return KPROF_OK;
        return kp_timeline_add_call(v->timeline, e->start_ns, e->end_ns, e->name, sync, err);
    }
    case KP_EVENT_KERNEL:
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET:
        return kp_timeline_add_op(v->timeline, e->start_ns, e->end_ns, e->name,
                                  e->kind == KP_EVENT_KERNEL, err);
    case KP_EVENT_SYNC:
        return kp_timeline_add_wait(v->timeline, e->start_ns, e->end_ns, e->name, err);
    case KP_EVENT_RANGE: {
        /* A thread is (process row, tid): ranges nest per thread. */
        int64_t thread = (int64_t)((uint64_t)e->process << 32 | (uint32_t)e->tid);
        return kp_timeline_add_range(v->timeline, e->start_ns, e->end_ns, e->name, thread, err);
    }
    default:
        return KPROF_OK;
    }
}

kprof_status kp_trace_verdicts_finish(kp_trace_verdicts *v, kp_error *err)
{
    kp_timeline_set_api(v->timeline, v->api);
    kprof_status st = kp_timeline_prepare(v->timeline, err);
    if (st == KPROF_OK)
        st = kp_timeline_window(v->timeline, v->start_ns, v->end_ns, &v->wall_in, err);
    if (st != KPROF_OK) return st;
    kp_verdict_compute(&v->wall_in, &v->wall);
    v->has_active = kp_timeline_active(v->timeline, &v->active_start_ns, &v->active_end_ns);
    if (v->has_active) {
        st = kp_timeline_window(v->timeline, v->active_start_ns, v->active_end_ns, &v->active_in,
                                err);
        if (st != KPROF_OK) return st;
        kp_verdict_compute(&v->active_in, &v->active);
    }
    return kp_timeline_ranges(v->timeline, &v->ranges, &v->nranges, err);
}

kprof_status kp_trace_verdicts_read(kp_event_source *src, int raw, kp_trace_verdicts *v,
                                    kp_error *err)
{
    kp_event_iter *it = NULL;
    unsigned char *flags = NULL;
    kprof_status st = kp_trace_verdicts_begin(src, v, err);
    if (st != KPROF_OK) goto done;
    size_t nnames;
    const char *const *names = kp_event_source_strings(src, &nnames);
    flags = calloc(nnames ? nnames : 1, 1); /* by string id: KP_HOST_CALL_* */
    if (!flags) goto nomem;
    for (size_t id = 0; id < nnames; id++)
        flags[id] = (unsigned char)kp_host_call_flags(names[id]);
    kp_event_filter filter = {.fields = KP_EVENT_FIELD_DOMAIN};
    st = kp_event_iter_open(src, &filter, &it, err);
    if (st != KPROF_OK) goto done;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev)) /* e.name is 0 beyond the strings: flags[0] is safe */
        if ((st = kp_trace_verdicts_add(v, &ev, flags[ev.e.name], raw, err)) != KPROF_OK) goto done;
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st == KPROF_OK) st = kp_trace_verdicts_finish(v, err);
    goto done;
nomem:
    st = kp_error_nomem(err);
done:
    kp_event_iter_close(it, NULL);
    free(flags);
    if (st != KPROF_OK) kp_trace_verdicts_free(v);
    return st;
}

void kp_trace_verdicts_free(kp_trace_verdicts *v)
{
    if (!v) return;
    free(v->ranges);
    kp_timeline_destroy(v->timeline);
    memset(v, 0, sizeof *v);
}
