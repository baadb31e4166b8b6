/*
 * trace_aggregate.c — a trace into a finished aggregation (see trace_aggregate.h): one pass over
 * the events in order of start, which the aggregate needs to find each call's enclosing ranges.
 */
#include "analysis/trace_aggregate.h"
#include "core/host_calls.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kp_trace_aggregate_name(void *ctx, uint32_t id)
{
    return kp_event_source_string(ctx, id, NULL);
}

/* ---- launch shapes ---------------------------------------------------------------------- */

const kp_trace_shape *kp_trace_shape_of(const kp_trace_shapes *sh, uint32_t name)
{
    if (!sh || name < sh->base || name - sh->base >= sh->n) return NULL;
    return &sh->shape[name - sh->base];
}

const char *kp_trace_shapes_name(const kp_trace_shapes *sh, uint32_t name)
{
    const kp_trace_shape *s = kp_trace_shape_of(sh, name);
    return s ? s->label : kp_event_source_string(sh->src, name, NULL);
}

static const char *kp_trace_shapes_name_fn(void *ctx, uint32_t id)
{
    return kp_trace_shapes_name(ctx, id);
}

void kp_trace_shapes_free(kp_trace_shapes *sh)
{
    if (!sh) return;
    for (size_t i = 0; i < sh->n; i++)
        free(sh->shape[i].label);
    free(sh->shape);
    free(sh->slots_);
    memset(sh, 0, sizeof *sh);
}

/* e's shape: what of its geometry the trace says, the rest zero. */
static kp_trace_shape kp_trace_shape_from(const kp_event *e)
{
    kp_trace_shape s;
    memset(&s, 0, sizeof s);
    s.name = e->name;
    s.known = e->known & (KP_EVENT_HAS_GEOMETRY | KP_EVENT_HAS_SHARED);
    if (s.known & KP_EVENT_HAS_GEOMETRY)
        for (int d = 0; d < 3; d++) {
            s.grid[d] = e->grid[d];
            s.group[d] = e->group[d];
        }
    if (s.known & KP_EVENT_HAS_SHARED) s.dynamic_shared = e->dynamic_shared;
    return s;
}

static int kp_trace_shape_same(const kp_trace_shape *a, const kp_trace_shape *b)
{
    if (a->name != b->name || a->known != b->known || a->dynamic_shared != b->dynamic_shared)
        return 0;
    for (int d = 0; d < 3; d++)
        if (a->grid[d] != b->grid[d] || a->group[d] != b->group[d]) return 0;
    return 1;
}

static uint64_t kp_trace_shape_hash(const kp_trace_shape *s)
{
    uint64_t h = 0xcbf29ce484222325ull,
             v[9] = {s->name,     s->known,    s->grid[0],  s->grid[1],       s->grid[2],
                     s->group[0], s->group[1], s->group[2], s->dynamic_shared};
    for (int i = 0; i < 9; i++)
        h = (h ^ v[i]) * 0x100000001b3ull;
    return h ^ h >> 31;
}

/* "4096", "64x32", "8x8x4": the dimensions, trailing 1s left out (the CLI's --grid form). */
static void kp_trace_shape_dims(char *buf, size_t n, const uint64_t v[3])
{
    int dims = v[2] != 1 ? 3 : v[1] != 1 ? 2 : 1;
    if (dims == 1)
        snprintf(buf, n, "%" PRIu64, v[0]);
    else if (dims == 2)
        snprintf(buf, n, "%" PRIu64 "x%" PRIu64, v[0], v[1]);
    else
        snprintf(buf, n, "%" PRIu64 "x%" PRIu64 "x%" PRIu64, v[0], v[1], v[2]);
}

/* The shape's label: "NAME  grid 65536 tg 256 smem 0" (tg auto: the runtime chose the group
 * size; what the trace does not say is left out). Heap, or NULL out of memory. */
static char *kp_trace_shape_label(const kp_trace_shape *s, const char *name)
{
    char grid[80] = "", tg[80] = "", smem[40] = "";
    if (s->known & KP_EVENT_HAS_GEOMETRY) {
        uint64_t group[3] = {s->group[0], s->group[1], s->group[2]};
        char g[64], t[64];
        kp_trace_shape_dims(g, sizeof g, s->grid);
        if (group[0] == 0)
            snprintf(t, sizeof t, "auto");
        else
            kp_trace_shape_dims(t, sizeof t, group);
        snprintf(grid, sizeof grid, "  grid %s", g);
        snprintf(tg, sizeof tg, " tg %s", t);
    }
    if (s->known & KP_EVENT_HAS_SHARED)
        snprintf(smem, sizeof smem, "%ssmem %" PRIu64, grid[0] ? " " : "  ", s->dynamic_shared);
    size_t len = strlen(name) + strlen(grid) + strlen(tg) + strlen(smem) + 1;
    char *label = malloc(len);
    if (label) snprintf(label, len, "%s%s%s%s", name, grid, tg, smem);
    return label;
}

/* The name id of e's shape into *out, the shape added when new; e's own name when it is no
 * kernel or has no geometry to key by. KPROF_OK, or KPROF_NOMEM (this file's static helpers
 * fail only for memory and fill no kp_error: their caller does, once). */
static kprof_status kp_trace_shapes_key(kp_trace_shapes *sh, const kp_event *e, uint32_t *out)
{
    *out = e->name;
    if (e->kind != KP_EVENT_KERNEL || !(e->known & (KP_EVENT_HAS_GEOMETRY | KP_EVENT_HAS_SHARED)))
        return KPROF_OK;
    kp_trace_shape s = kp_trace_shape_from(e);
    if ((sh->n + 1) * 2 > sh->nslots_) { /* rehash at half full */
        size_t cap = sh->nslots_ ? sh->nslots_ * 2 : 64;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return KPROF_NOMEM;
        for (size_t i = 0; i < sh->n; i++) {
            size_t at = kp_trace_shape_hash(&sh->shape[i]) & (cap - 1);
            while (slots[at])
                at = (at + 1) & (cap - 1);
            slots[at] = (uint32_t)i + 1;
        }
        free(sh->slots_);
        sh->slots_ = slots;
        sh->nslots_ = cap;
    }
    size_t at = kp_trace_shape_hash(&s) & (sh->nslots_ - 1);
    for (; sh->slots_[at]; at = (at + 1) & (sh->nslots_ - 1))
        if (kp_trace_shape_same(&sh->shape[sh->slots_[at] - 1], &s)) {
            *out = sh->base + sh->slots_[at] - 1;
            return KPROF_OK;
        }
    if ((uint64_t)sh->base + sh->n >= UINT32_MAX) return KPROF_OK; /* no id left: by name */
    if (sh->n == sh->cap_) {
        size_t cap = sh->cap_ ? sh->cap_ * 2 : 16;
        kp_trace_shape *v = realloc(sh->shape, cap * sizeof *v);
        if (!v) return KPROF_NOMEM;
        sh->shape = v;
        sh->cap_ = cap;
    }
    const char *name = kp_event_source_string(sh->src, e->name, NULL);
    char num[24];
    if (!name) snprintf(num, sizeof num, "#%u", e->name);
    s.label = kp_trace_shape_label(&s, name ? name : num);
    if (!s.label) return KPROF_NOMEM;
    sh->shape[sh->n] = s;
    sh->slots_[at] = (uint32_t)sh->n + 1;
    *out = sh->base + (uint32_t)sh->n;
    sh->n++;
    return KPROF_OK;
}

/* ---- instances -------------------------------------------------------------------------- */

void kp_trace_instances_free(kp_trace_instances *in)
{
    if (!in) return;
    for (size_t i = 0; i < in->nnodes; i++) {
        free(in->ns[i]);
        free(in->seq[i]);
    }
    free(in->ns);
    free(in->seq);
    free(in->n);
    free(in->cap_);
    memset(in, 0, sizeof *in);
}

/* Room for nodes 0 .. nodes-1 in the lists (those new, empty); nnodes becomes at least nodes.
 * KPROF_OK, or KPROF_NOMEM (the lists are then as they were, with maybe more room). */
static kprof_status kp_trace_instances_reserve(kp_trace_instances *in, size_t nodes)
{
    if (nodes > in->cap_nodes_) {
        size_t cap = in->cap_nodes_ ? in->cap_nodes_ : 64;
        while (cap < nodes)
            cap *= 2;
        int64_t **ns = realloc(in->ns, cap * sizeof *ns);
        if (ns) in->ns = ns;
        uint64_t **seq = realloc(in->seq, cap * sizeof *seq);
        if (seq) in->seq = seq;
        size_t *n = realloc(in->n, cap * sizeof *n);
        if (n) in->n = n;
        size_t *c = realloc(in->cap_, cap * sizeof *c);
        if (c) in->cap_ = c;
        if (!ns || !seq || !n || !c) return KPROF_NOMEM;
        for (size_t i = in->cap_nodes_; i < cap; i++) {
            in->ns[i] = NULL;
            in->seq[i] = NULL;
            in->n[i] = in->cap_[i] = 0;
        }
        in->cap_nodes_ = cap;
    }
    if (nodes > in->nnodes) in->nnodes = nodes;
    return KPROF_OK;
}

/* The aggregation's observer: one instance of node id into its list. KPROF_OK, or KPROF_NOMEM
 * (the aggregation says "out of memory"). */
static kprof_status kp_trace_instances_add(void *ctx, uint32_t id, int64_t duration_ns)
{
    kp_trace_instances *in = ctx;
    if (kp_trace_instances_reserve(in, (size_t)id + 1) != KPROF_OK) return KPROF_NOMEM;
    if (in->n[id] == in->cap_[id]) {
        size_t cap = in->cap_[id] ? in->cap_[id] * 2 : 8;
        int64_t *v = realloc(in->ns[id], cap * sizeof *v);
        if (v) in->ns[id] = v;
        uint64_t *q = realloc(in->seq[id], cap * sizeof *q);
        if (q) in->seq[id] = q;
        if (!v || !q) return KPROF_NOMEM;
        in->cap_[id] = cap;
    }
    in->seq[id][in->n[id]] = in->placed_++;
    in->ns[id][in->n[id]++] = duration_ns;
    return KPROF_OK;
}

/* The one pass behind the entry points below: fn (when not NULL) sees every event read. */
static kprof_status kp_trace_aggregate_pass(kp_event_source *src, unsigned flags,
                                            kp_trace_shapes *shapes, kp_aggregation **out,
                                            kp_trace_instances *instances, unsigned fields,
                                            kp_trace_event_fn fn, void *ctx, kp_error *err);

kprof_status kp_trace_aggregate(kp_event_source *src, unsigned flags, kp_aggregation **out,
                                kp_error *err)
{
    return kp_trace_aggregate_pass(src, flags, NULL, out, NULL, 0, NULL, NULL, err);
}

kprof_status kp_trace_aggregate_each(kp_event_source *src, unsigned flags, unsigned fields,
                                     kp_trace_event_fn fn, void *ctx, kp_aggregation **out,
                                     kp_error *err)
{
    return kp_trace_aggregate_pass(src, flags, NULL, out, NULL, fields, fn, ctx, err);
}

kprof_status kp_trace_aggregate_instances(kp_event_source *src, unsigned flags,
                                          kp_trace_shapes *shapes, kp_aggregation **out,
                                          kp_trace_instances *instances, kp_error *err)
{
    return kp_trace_aggregate_pass(src, flags, shapes, out, instances, 0, NULL, NULL, err);
}

static kprof_status kp_trace_aggregate_pass(kp_event_source *src, unsigned flags,
                                            kp_trace_shapes *shapes, kp_aggregation **out,
                                            kp_trace_instances *instances, unsigned fields,
                                            kp_trace_event_fn fn, void *ctx, kp_error *err)
{
    *out = NULL;
    if (instances) memset(instances, 0, sizeof *instances);
    size_t nnames;
    const char *const *names = kp_event_source_strings(src, &nnames);
    if (shapes) {
        memset(shapes, 0, sizeof *shapes);
        shapes->src = src;
        shapes->base = nnames > 0 ? (uint32_t)nnames : 1;
    }
    kp_event_iter *it = NULL;
    kprof_status st = KPROF_OK;
    unsigned char *hidden = calloc(nnames ? nnames : 1, 1); /* by string id: left out */
    kp_aggregation *a = shapes ? kp_aggregation_create(kp_trace_shapes_name_fn, shapes)
                               : kp_aggregation_create(kp_trace_aggregate_name, src);
    if (!hidden || !a) goto nomem;
    if (instances) kp_aggregation_observe(a, kp_trace_instances_add, instances);
    if (!(flags & KP_TRACE_AGGREGATE_POLLING))
        for (size_t id = 0; id < nnames; id++)
            hidden[id] = (kp_host_call_flags(names[id]) & KP_HOST_CALL_POLLING) != 0;
    /* Every kind, not only those placed: a filter on kinds would make SQLite sort the events
     * rather than walk its index on start_ns. PAYLOAD gives copies and fills their bytes,
     * METRICS the flops and bytes the events carry (nothing to read in a trace without). */
    kp_event_filter filter = {.order = KP_EVENT_ORDER_START,
                              .fields = KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_METRICS |
                                        (shapes ? KP_EVENT_FIELD_KERNEL : 0u) | fields};
    st = kp_event_iter_open(src, &filter, &it, err);
    if (st != KPROF_OK) goto fail;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev)) {
        if (fn) fn(ctx, &ev);
        /* e.name is 0 for an id beyond the strings table, so it indexes hidden safely. */
        if (ev.e.kind == KP_EVENT_API && hidden[ev.e.name]) continue;
        uint32_t key;
        if (shapes && kp_trace_shapes_key(shapes, &ev.e, &key) != KPROF_OK) goto nomem;
        if (shapes) ev.e.name = key;
        if ((st = kp_aggregation_add(a, &ev.e, err)) != KPROF_OK) goto fail;
    }
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st != KPROF_OK) goto fail;
    if ((st = kp_aggregation_finish(a, err)) != KPROF_OK) goto fail;
    /* Every node has its list, those without instances (the root, (unattributed)) too. */
    if (instances &&
        kp_trace_instances_reserve(instances, kp_aggregation_node_count(a)) != KPROF_OK)
        goto nomem;
    free(hidden);
    *out = a;
    return KPROF_OK;
nomem:
    st = kp_error_nomem(err);
fail:
    kp_event_iter_close(it, NULL);
    kp_aggregation_destroy(a);
    free(hidden);
    kp_trace_instances_free(instances);
    kp_trace_shapes_free(shapes);
    return st;
}
