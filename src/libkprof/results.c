/*
 * results.c — a session's result (kprof_result_* in include/kprof.h): its trace, read through
 * the event source and analysis/trace_aggregate.h exactly as `kprof report --tree` and `--by` read
 * one, and turned into the public rows and nodes (export/calltree.h's numbers); the
 * chronological events and per-name distributions from the same source; the views as text
 * (export/calltree.h's tables); and the exports through export/export.h, the code of `kprof
 * export`. A result owns its scratch folder and removes it with itself.
 */
#define _GNU_SOURCE
#include "collect/session.h"
#include "core/format.h"
#include "base/outfile.h"
#include "core/stats.h"
#include "base/util.h"
#include "export/calltree.h"
#include "export/export.h"
#include "libkprof/libkprof_internal.h"
#include "store/event_source.h"
#include "analysis/trace_aggregate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KP_RESULT_LABEL "the in-process session" /* how the views and exports name the trace */

/* include/kprof.h keeps its own copies of core's lists (a public header includes nothing of
 * src/): kprof_group is kp_aggregation_group, value for value, and every kprof_format but the
 * trace is one of export/export.h's (kprof_result_write's table). */
_Static_assert((int)KPROF_BY_NAME == (int)KP_AGGREGATION_GROUP_NAME &&
                   (int)KPROF_BY_PATH == (int)KP_AGGREGATION_GROUP_PATH &&
                   (int)KPROF_GROUP_COUNT_ == (int)KP_AGGREGATION_GROUP_COUNT,
               "kprof_group and kp_aggregation_group differ");
_Static_assert((int)KPROF_FORMAT_COUNT_ == 1 + (int)KP_EXPORT_FORMAT_COUNT,
               "a kprof_format without its export, or an export without its kprof_format");

struct kprof_result {
    char dir[PATH_MAX];
    char trace[PATH_MAX + 64];
    kp_event_source *src;
    kp_aggregation *agg; /* reads src's names: destroyed first */
    kprof_summary summary;
    kprof_row *rows[KPROF_GROUP_COUNT_];
    size_t nrows[KPROF_GROUP_COUNT_];
    kprof_node *nodes;
    size_t nnodes;
    kprof_distribution *dists;
    size_t ndists;
    int dists_made;
    char **texts; /* what the result owns besides: paths and made-up names */
    size_t ntexts, texts_cap;
    int keep; /* 1: destroy leaves the scratch folder and its trace (KPROF=1 could not save) */
};

/* Keep a copy of text (n bytes) in the result: NULL when memory ran out. */
static const char *kp_result_keep(kprof_result *r, const char *text, size_t n)
{
    if (r->ntexts == r->texts_cap) {
        size_t cap = r->texts_cap ? r->texts_cap * 2 : 64;
        char **t = realloc(r->texts, cap * sizeof *t);
        if (!t) return NULL;
        r->texts = t;
        r->texts_cap = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return NULL;
    memcpy(copy, text, n);
    copy[n] = '\0';
    r->texts[r->ntexts++] = copy;
    return copy;
}

/* A node's label, owned by the source or the result. */
static const char *kp_result_name(kprof_result *r, uint32_t node)
{
    char buf[32];
    const char *name = kp_aggregation_name(r->agg, node, buf, sizeof buf);
    return name == buf ? kp_result_keep(r, buf, strlen(buf)) : name;
}

/* A node's path "a/b/c", owned by the result. */
static const char *kp_result_path(kprof_result *r, uint32_t node)
{
    kp_str s = {0};
    kp_aggregation_path(r->agg, node, &s);
    const char *kept = s.failed ? NULL : kp_result_keep(r, s.data ? s.data : "", s.len);
    kp_str_free(&s);
    return kept;
}

/* The rates a row or node gives: for a call or range that launched device work (a rate over
 * device time exists), that rate, with the host-time figure kept in *host_*; otherwise the
 * host-time figure (device work: over its own device time) and *host_* 0 for device work. */
static void kp_result_rates(kp_event_kind kind, const kp_calltree_numbers *num, double host_flops,
                            double host_bytes, double *gflops, double *gb, double *host_gflops,
                            double *host_gb)
{
    int device = (kp_event_kind_flags(kind) & KP_EVENT_F_DEVICE) != 0;
    *gflops = !device && num->has_dev_gflop_per_s ? num->dev_gflop_per_s : host_flops;
    *gb = !device && num->has_dev_gb_per_s ? num->dev_gb_per_s : host_bytes;
    *host_gflops = device ? 0 : host_flops;
    *host_gb = device ? 0 : host_bytes;
}

static double kp_per_s(double amount, double seconds)
{
    return amount > 0 && seconds > 0 ? amount / seconds / 1e9 : 0.0;
}

kprof_status kp_result_open(const char *dir, const char *trace, uint64_t dropped, int64_t start_ns,
                            int64_t end_ns, kprof_result **out, kp_error *err)
{
    *out = NULL;
    kprof_result *r = calloc(1, sizeof *r);
    if (!r) return kp_error_nomem(err);
    kp_strlcpy(r->dir, dir, sizeof r->dir);
    kp_strlcpy(r->trace, trace, sizeof r->trace);
    kprof_status st = kp_event_source_open(trace, &r->src, err);
    if (st == KPROF_OK) st = kp_trace_aggregate(r->src, 0, &r->agg, err);
    const kp_trace_thread *threads = NULL;
    size_t nthreads = 0;
    if (st == KPROF_OK) st = kp_event_source_threads(r->src, &threads, &nthreads, err);
    if (st != KPROF_OK) {
        kp_aggregation_destroy(r->agg);
        kp_event_source_close(r->src);
        free(r);
        return st;
    }
    const kp_aggregation_totals *t = kp_aggregation_get_totals(r->agg);
    r->summary.events = t->events;
    r->summary.dropped = dropped;
    r->summary.threads = (unsigned)nthreads;
    r->summary.start_ns = start_ns;
    r->summary.end_ns = end_ns;
    r->summary.host_s = (double)kp_aggregation_get_node(r->agg, 0)->stats.inclusive_ns / 1e9;
    *out = r;
    return KPROF_OK;
}

void kprof_result_destroy(kprof_result *r)
{
    if (!r) return;
    kp_aggregation_destroy(r->agg);
    kp_event_source_close(r->src);
    for (int g = 0; g < KPROF_GROUP_COUNT_; g++)
        free(r->rows[g]);
    free(r->nodes);
    free(r->dists);
    for (size_t i = 0; i < r->ntexts; i++)
        free(r->texts[i]);
    free(r->texts);
    if (!r->keep) kp_session_remove(r->dir); /* the trace, run.txt, record files a test kept */
    free(r);
}

const char *kp_libkprof_result_dir(const kprof_result *r)
{
    return r ? r->dir : NULL;
}

const char *kp_libkprof_result_keep_trace(kprof_result *r)
{
    r->keep = 1;
    return r->trace;
}

kprof_status kprof_result_summary(const kprof_result *r, kprof_summary *out)
{
    if (!r || !out)
        return kp_libkprof_fail("kprof_result_summary", KPROF_INVALID, "result or out is NULL");
    if (out->size == 0)
        return kp_libkprof_fail("kprof_result_summary", KPROF_INVALID,
                                "out->size is 0 (use KPROF_SUMMARY_INIT)");
    kp_sized_copy(out, &r->summary, sizeof r->summary);
    return KPROF_OK;
}

/* ---- key averages and the tree --------------------------------------------------------------- */

/* How the table getters begin: *first and *n zeroed; OK to go on, or INVALID (kprof_last_error
 * says `why`) for a NULL result, first or n, or an argument the caller found wrong (ok 0). */
static kprof_status kp_result_table_args(const char *fn, const kprof_result *r, const void *first,
                                         size_t *n, int ok, const char *why)
{
    if (first) *(const void **)first = NULL;
    if (n) *n = 0;
    if (r && first && n && ok) return KPROF_OK;
    return kp_libkprof_fail(fn, KPROF_INVALID, why);
}

/* The accessors: element i in this library's stride (kprof.h's "Structs that grow"). */
const kprof_row *kprof_row_at(const kprof_row *rows, size_t i)
{
    return rows ? rows + i : NULL;
}

const kprof_node *kprof_node_at(const kprof_node *nodes, size_t i)
{
    return nodes ? nodes + i : NULL;
}

const kprof_distribution *kprof_distribution_at(const kprof_distribution *dists, size_t i)
{
    return dists ? dists + i : NULL;
}

kprof_status kprof_result_key_averages(kprof_result *r, kprof_group by, const kprof_row **first,
                                       size_t *n)
{
    static const char fn[] = "kprof_result_key_averages";
    kprof_status st = kp_result_table_args(fn, r, first, n, (unsigned)by < KPROF_GROUP_COUNT_,
                                           "result, rows or n is NULL, or `by` is no kprof_group");
    if (st != KPROF_OK) return st;
    if (r->rows[by]) {
        *first = r->rows[by];
        *n = r->nrows[by];
        return KPROF_OK;
    }
    kp_aggregation_row *rows = NULL;
    size_t count = 0;
    if (kp_aggregation_rows(r->agg, (kp_aggregation_group)by, &rows, &count, NULL) != KPROF_OK)
        goto nomem;
    if (count == 0) return KPROF_OK;
    kp_aggregation_select(rows, count, KP_AGGREGATION_SORT_TOTAL, 0);
    kprof_row *out = calloc(count, sizeof *out);
    if (!out) goto nomem;
    for (size_t i = 0; i < count; i++) {
        const kp_aggregation_row *a = &rows[i];
        kp_calltree_numbers num;
        kp_calltree_numbers_of(&a->stats, a->kind, &num);
        kprof_row *o = &out[i];
        o->size = sizeof *o;
        o->kind = kp_calltree_kind(a->kind);
        o->name = kp_result_name(r, a->node);
        o->path = by == KPROF_BY_PATH ? kp_result_path(r, a->node) : o->name;
        if (!o->name || !o->path) {
            free(out);
            goto nomem;
        }
        o->calls = num.calls;
        o->total_s = num.total;
        o->self_s = num.self;
        o->min_s = num.min;
        o->mean_s = num.mean;
        o->max_s = num.max;
        o->std_s = num.std;
        o->gpu_s = num.gpu;
        o->flops = num.flops;
        o->bytes = num.bytes;
        /* Over host time; where a scope (or call) launched device work, over the device time
         * attributed to it, the host figure beside it (item: what its kernels ran at). */
        o->host_gflops_per_s = kp_per_s(num.flops, num.total);
        o->host_gb_per_s = kp_per_s(num.bytes, num.total);
        kp_result_rates(a->kind, &num, o->host_gflops_per_s, o->host_gb_per_s, &o->gflops_per_s,
                        &o->gb_per_s, &o->host_gflops_per_s, &o->host_gb_per_s);
    }
    free(rows);
    r->rows[by] = out;
    r->nrows[by] = count;
    *first = out;
    *n = count;
    return KPROF_OK;
nomem:
    free(rows);
    return kp_libkprof_nomem(fn);
}

kprof_status kprof_result_tree(kprof_result *r, const kprof_node **first, size_t *n)
{
    static const char fn[] = "kprof_result_tree";
    kprof_status st = kp_result_table_args(fn, r, first, n, 1, "result, nodes or n is NULL");
    if (st != KPROF_OK) return st;
    if (r->nodes) {
        *first = r->nodes;
        *n = r->nnodes;
        return KPROF_OK;
    }
    size_t count = kp_aggregation_node_count(r->agg);
    kprof_node *nodes = calloc(count, sizeof *nodes);
    uint32_t *order = malloc(count * sizeof *order); /* preorder: our index -> node id */
    size_t *index = malloc(count * sizeof *index);   /* node id -> our index */
    if (!nodes || !order || !index) goto nomem;
    /* Depth first, children in the order kp_aggregation_finish gave them (largest total first;
     * nothing here orders them otherwise), so a parent comes before its children: down to the
     * first child, else on to the next sibling of the nearest node that has one. */
    size_t used = 0;
    uint32_t id = 0;
    for (;;) {
        const kp_aggregation_node *a = kp_aggregation_get_node(r->agg, id);
        index[id] = used;
        order[used++] = id;
        if (a->first_child) {
            id = a->first_child;
            continue;
        }
        while (id && !kp_aggregation_get_node(r->agg, id)->next_sibling)
            id = kp_aggregation_get_node(r->agg, id)->parent;
        if (!id) break;
        id = kp_aggregation_get_node(r->agg, id)->next_sibling;
    }
    for (size_t i = 0; i < used; i++) {
        const kp_aggregation_node *a = kp_aggregation_get_node(r->agg, order[i]);
        kprof_node *o = &nodes[i];
        o->size = sizeof *o;
        kp_calltree_numbers num;
        kp_calltree_numbers_of(&a->stats, a->kind, &num);
        o->parent = order[i] ? index[a->parent] : 0;
        o->first_child = a->first_child ? index[a->first_child] : 0;
        o->next_sibling = a->next_sibling ? index[a->next_sibling] : 0;
        o->depth = a->depth;
        o->kind = order[i] ? kp_calltree_kind(a->kind) : "root";
        o->name = order[i] ? kp_result_name(r, order[i]) : "";
        o->path = order[i] ? kp_result_path(r, order[i]) : "";
        if (!o->name || !o->path) goto nomem;
        o->calls = num.calls;
        o->inclusive_s = num.inclusive;
        o->exclusive_s = num.exclusive;
        o->min_s = num.min;
        o->mean_s = num.mean;
        o->max_s = num.max;
        o->std_s = num.std;
        o->gpu_s = num.gpu;
        o->flops = num.flops;
        o->bytes = num.bytes;
        o->flops_inclusive = a->stats.flops_inclusive;
        o->bytes_inclusive = a->stats.bytes_inclusive;
        o->host_gflops_per_s = kp_per_s(num.flops, num.inclusive);
        o->host_gb_per_s = kp_per_s(num.bytes, num.inclusive);
        kp_result_rates(a->kind, &num, o->host_gflops_per_s, o->host_gb_per_s, &o->gflops_per_s,
                        &o->gb_per_s, &o->host_gflops_per_s, &o->host_gb_per_s);
    }
    free(order);
    free(index);
    r->nodes = nodes;
    r->nnodes = used;
    *first = nodes;
    *n = used;
    return KPROF_OK;
nomem:
    free(nodes);
    free(order);
    free(index);
    return kp_libkprof_nomem(fn);
}

/* ---- events and distributions ---------------------------------------------------------------- */

/* Read every event in order of start: fn(ctx, event) for each until it returns nonzero. */
static kprof_status kp_result_each(kprof_result *r, int (*fn)(void *, const kp_trace_event *),
                                   void *ctx, kp_error *err)
{
    kp_event_filter filter = {.order = KP_EVENT_ORDER_START,
                              .fields = KP_EVENT_FIELD_PID | KP_EVENT_FIELD_PAYLOAD};
    kp_event_iter *it = NULL;
    kprof_status st = kp_event_iter_open(r->src, &filter, &it, err);
    if (st != KPROF_OK) return st;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev))
        if (fn(ctx, &ev)) break;
    return kp_event_iter_close(it, err);
}

typedef struct kp_events_ctx {
    kprof_result *r;
    kprof_event_fn fn;
    void *ctx;
} kp_events_ctx;

static int kp_events_one(void *p, const kp_trace_event *ev)
{
    kp_events_ctx *c = p;
    kprof_event e = {.size = sizeof e};
    const char *kind = kp_event_kind_name(ev->e.kind);
    const char *name = kp_event_source_string(c->r->src, ev->e.name, NULL);
    e.kind = kind ? kind : "?";
    e.name = name ? name : "";
    e.start_ns = ev->e.start_ns;
    e.end_ns = ev->e.end_ns;
    e.pid = ev->e.pid;
    e.tid = ev->e.tid;
    e.id = ev->e.range_id;
    return c->fn(&e, c->ctx);
}

kprof_status kprof_result_events(kprof_result *r, kprof_event_fn fn, void *ctx)
{
    if (!r || !fn)
        return kp_libkprof_fail("kprof_result_events", KPROF_INVALID, "result or fn is NULL");
    kp_error err = {0};
    kp_events_ctx c = {r, fn, ctx};
    kprof_status st = kp_result_each(r, kp_events_one, &c, &err);
    return st == KPROF_OK ? st : kp_libkprof_fail_err("kprof_result_events", &err);
}

/* One name's durations while they are gathered. */
typedef struct kp_dist_acc {
    int kind;
    uint32_t name;
    double *v; /* s */
    size_t n, cap;
    double flops, bytes;
} kp_dist_acc;

typedef struct kp_dists_ctx {
    kp_dist_acc *accs;
    size_t n, cap;
    uint32_t *slots; /* open addressing by (kind, name): index + 1 */
    size_t nslots;
    int failed;
} kp_dists_ctx;

static kp_dist_acc *kp_dist_find(kp_dists_ctx *c, int kind, uint32_t name)
{
    if (c->n * 2 >= c->nslots) {
        size_t cap = c->nslots ? c->nslots * 2 : 64;
        uint32_t *t = calloc(cap, sizeof *t);
        if (!t) return NULL;
        for (size_t i = 0; i < c->n; i++) {
            size_t h = ((size_t)c->accs[i].name * 31 + (size_t)c->accs[i].kind) & (cap - 1);
            while (t[h])
                h = (h + 1) & (cap - 1);
            t[h] = (uint32_t)i + 1;
        }
        free(c->slots);
        c->slots = t;
        c->nslots = cap;
    }
    size_t h = ((size_t)name * 31 + (size_t)kind) & (c->nslots - 1);
    while (c->slots[h]) {
        kp_dist_acc *a = &c->accs[c->slots[h] - 1];
        if (a->kind == kind && a->name == name) return a;
        h = (h + 1) & (c->nslots - 1);
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        kp_dist_acc *t = realloc(c->accs, cap * sizeof *t);
        if (!t) return NULL;
        c->accs = t;
        c->cap = cap;
    }
    c->accs[c->n] = (kp_dist_acc){.kind = kind, .name = name};
    c->slots[h] = (uint32_t)++c->n;
    return &c->accs[c->n - 1];
}

static int kp_dists_one(void *p, const kp_trace_event *ev)
{
    kp_dists_ctx *c = p;
    unsigned flags = kp_event_kind_flags(ev->e.kind);
    if (!flags || (flags & KP_EVENT_F_INSTANT) || ev->e.kind == KP_EVENT_SYNC) return 0;
    kp_dist_acc *a = kp_dist_find(c, ev->e.kind, ev->e.name);
    if (a && a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        double *t = realloc(a->v, cap * sizeof *t);
        if (t) {
            a->v = t;
            a->cap = cap;
        }
    }
    if (!a || a->n == a->cap) {
        c->failed = 1;
        return 1;
    }
    a->v[a->n++] = (double)kp_ns_diff(ev->e.end_ns, ev->e.start_ns) / 1e9;
    if (ev->e.known & KP_EVENT_HAS_FLOPS) a->flops += ev->e.metrics.flops;
    if (ev->e.known & KP_EVENT_HAS_METRIC_BYTES) a->bytes += ev->e.metrics.bytes;
    return 0;
}

static int kp_dist_cmp(const void *pa, const void *pb)
{
    const kprof_distribution *a = pa, *b = pb;
    if (a->total_s != b->total_s) return a->total_s > b->total_s ? -1 : 1;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->kind, b->kind);
}

kprof_status kprof_result_distributions(kprof_result *r, const kprof_distribution **first,
                                        size_t *n)
{
    static const char fn[] = "kprof_result_distributions";
    kprof_status st = kp_result_table_args(fn, r, first, n, 1, "result, dists or n is NULL");
    if (st != KPROF_OK) return st;
    if (r->dists_made) {
        *first = r->dists;
        *n = r->ndists;
        return KPROF_OK;
    }
    kp_error err = {0};
    kp_dists_ctx c = {0};
    kprof_distribution *out = NULL;
    double *scratch = NULL;
    st = kp_result_each(r, kp_dists_one, &c, &err);
    if (st == KPROF_OK && c.failed) st = kp_error_nomem(&err);
    size_t most = 0;
    for (size_t i = 0; i < c.n; i++)
        if (c.accs[i].n > most) most = c.accs[i].n;
    if (st == KPROF_OK && c.n) {
        out = calloc(c.n, sizeof *out);
        scratch = malloc((most ? most : 1) * sizeof *scratch);
        if (!out || !scratch) st = kp_error_nomem(&err);
    }
    for (size_t i = 0; st == KPROF_OK && i < c.n; i++) {
        kp_dist_acc *a = &c.accs[i];
        kprof_distribution *d = &out[i];
        d->size = sizeof *d;
        kp_stats stats;
        kp_stats_compute(a->v, a->n, scratch, &stats);
        const char *kind = kp_event_kind_name(a->kind);
        const char *name = kp_event_source_string(r->src, a->name, NULL);
        d->kind = kind ? kind : "?";
        d->name = name ? name : "";
        d->count = a->n;
        d->min_s = stats.min;
        d->p50_s = stats.median;
        d->p90_s = stats.p90;
        d->max_s = stats.max;
        d->mean_s = stats.mean;
        d->std_s = stats.stddev;
        d->total_s = stats.mean * (double)a->n;
        d->flops = a->n ? a->flops / (double)a->n : 0;
        d->bytes = a->n ? a->bytes / (double)a->n : 0;
    }
    for (size_t i = 0; i < c.n; i++)
        free(c.accs[i].v);
    size_t count = c.n;
    free(c.accs);
    free(c.slots);
    free(scratch);
    if (st != KPROF_OK) {
        free(out);
        return kp_libkprof_fail_err(fn, &err);
    }
    if (count) qsort(out, count, sizeof *out, kp_dist_cmp);
    r->dists = out;
    r->ndists = count;
    r->dists_made = 1;
    *first = out;
    *n = count;
    return KPROF_OK;
}

/* ---- text ------------------------------------------------------------------------------------ */

/* Enigma's benchmark summary, one line per name. OK, or why the distributions could not be made
 * (kprof_last_error says it). */
static kprof_status kp_render_distributions(kprof_result *r, kp_str *out)
{
    size_t n;
    const kprof_distribution *d;
    kprof_status st = kprof_result_distributions(r, &d, &n);
    if (st != KPROF_OK) return st;
    if (n == 0) kp_str_append(out, "(no events recorded)\n");
    for (size_t i = 0; i < n; i++) {
        char t[5][32];
        kp_str_append_escaped(out, d[i].name, strlen(d[i].name));
        kp_str_printf(out, ": %llu call%s  min %s  p50 %s  mean %s  p90 %s  max %s", d[i].count,
                      d[i].count == 1 ? "" : "s", kp_format_duration(d[i].min_s, t[0], sizeof t[0]),
                      kp_format_duration(d[i].p50_s, t[1], sizeof t[1]),
                      kp_format_duration(d[i].mean_s, t[2], sizeof t[2]),
                      kp_format_duration(d[i].p90_s, t[3], sizeof t[3]),
                      kp_format_duration(d[i].max_s, t[4], sizeof t[4]));
        if (d[i].flops > 0 && d[i].p50_s > 0)
            kp_str_printf(out, "  %s GFLOP/s (p50)",
                          kp_format_2dp(d[i].flops / d[i].p50_s / 1e9, t[0], sizeof t[0]));
        if (d[i].bytes > 0 && d[i].p50_s > 0)
            kp_str_printf(out, "  %s GB/s (p50)",
                          kp_format_2dp(d[i].bytes / d[i].p50_s / 1e9, t[0], sizeof t[0]));
        kp_str_append(out, "\n");
    }
    return KPROF_OK;
}

kprof_status kprof_result_print(kprof_result *r, kprof_view view, FILE *out)
{
    static const char fn[] = "kprof_result_print";
    if (!r || !out || (unsigned)view >= KPROF_VIEW_COUNT_)
        return kp_libkprof_fail(fn, KPROF_INVALID,
                                "result or out is NULL, or view is no kprof_view");
    kp_str s = {0};
    int rc = 0;
    if (view == KPROF_VIEW_DISTRIBUTIONS) {
        kprof_status made = kp_render_distributions(r, &s);
        if (made != KPROF_OK) {
            kp_str_free(&s);
            return made;
        }
    } else {
        kp_calltree_view v = {.key_averages = view != KPROF_VIEW_TREE,
                              .group = view == KPROF_VIEW_BY_PATH ? KP_AGGREGATION_GROUP_PATH
                                                                  : KP_AGGREGATION_GROUP_NAME,
                              .sort = KP_AGGREGATION_SORT_TOTAL,
                              .trace = KP_RESULT_LABEL,
                              .command = kp_event_source_meta(r->src)->command,
                              .opencl_only = kp_event_source_opencl_only(r->src)};
        rc = kp_calltree_render(r->agg, &v, KP_CALLTREE_TEXT, &s, NULL) != KPROF_OK;
    }
    kprof_status st = KPROF_OK;
    if (rc != 0 || s.failed) {
        st = kp_libkprof_nomem(fn);
    } else if (s.len && (fwrite(s.data, 1, s.len, out) != s.len || fflush(out) != 0)) {
        st = kp_libkprof_fail(fn, KPROF_IO, strerror(errno));
    }
    kp_str_free(&s);
    return st;
}

/* ---- writing --------------------------------------------------------------------------------- */

/* The trace itself, copied through core/outfile. */
static kprof_status kp_result_copy_trace(kprof_result *r, const char *path, unsigned flags,
                                         kp_error *err)
{
    kp_output out = {0};
    const char *inputs[] = {r->trace, NULL};
    kprof_status st =
        kp_output_open(&out, path, flags & KPROF_WRITE_FORCE ? KP_OUTPUT_FORCE : 0, inputs, err);
    if (st != KPROF_OK) return st;
    int fd = open(r->trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0) st = kp_error_set(err, KPROF_IO, "cannot read %s: %s", r->trace, strerror(errno));
    char buf[1 << 16];
    while (st == KPROF_OK) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            st = kp_error_set(err, KPROF_IO, "cannot read %s: %s", r->trace, strerror(errno));
        if (got <= 0) break;
        st = kp_output_write(&out, buf, (size_t)got, err);
    }
    if (fd >= 0) close(fd);
    if (st == KPROF_OK) return kp_output_commit(&out, err);
    kp_output_abort(&out);
    return st;
}

kprof_status kprof_result_write(kprof_result *r, kprof_format format, const char *path,
                                unsigned flags)
{
    static const char fn[] = "kprof_result_write";
    if (!r || !path || (unsigned)format >= KPROF_FORMAT_COUNT_)
        return kp_libkprof_fail(fn, KPROF_INVALID,
                                "result or path is NULL, or format is no kprof_format");
    struct stat st_path;
    if (!(flags & KPROF_WRITE_FORCE) && stat(path, &st_path) == 0 && S_ISREG(st_path.st_mode)) {
        kp_str m = {0};
        kp_str_printf_escaped(&m, "%s exists; pass KPROF_WRITE_FORCE to replace it", path);
        kprof_status st = kp_libkprof_fail(fn, KPROF_INVALID, m.data ? m.data : "the file exists");
        kp_str_free(&m);
        return st;
    }
    kp_error err = {0};
    kprof_status st;
    static const kp_export_format exports[] = {
        [KPROF_FORMAT_CHROME] = KP_EXPORT_CHROME,   [KPROF_FORMAT_PERFETTO] = KP_EXPORT_PERFETTO,
        [KPROF_FORMAT_HATCHET] = KP_EXPORT_HATCHET, [KPROF_FORMAT_JSON] = KP_EXPORT_JSON,
        [KPROF_FORMAT_CSV] = KP_EXPORT_CSV,         [KPROF_FORMAT_HTML] = KP_EXPORT_HTML};
    if (format == KPROF_FORMAT_TRACE)
        st = kp_result_copy_trace(r, path, flags, &err);
    else
        st = kp_export_file(r->trace, KP_RESULT_LABEL, exports[format], path,
                            flags & KPROF_WRITE_FORCE ? KP_EXPORT_FORCE : 0, &err);
    return st == KPROF_OK ? st : kp_libkprof_fail_err(fn, &err);
}
