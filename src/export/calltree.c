/*
 * calltree.c — the call tree and key averages of a finished aggregation as text, JSON and CSV
 * (see calltree.h). The tree holds one node per distinct call path, not per event, so what is
 * shown is chosen first (a list of nodes in the order shown) and then written in one pass per
 * format; recursion is bounded by KP_AGGREGATION_MAX_DEPTH.
 */
#include "export/calltree.h"
#include "core/format.h"
#include "export/csv.h"
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One line of the tree as shown: a node, or (more) the "… N more" line closing the children of
 * `node` that --top left out. */
typedef struct kp_ct_entry {
    uint32_t node;
    uint32_t not_shown; /* children of node left out (--top, --depth) */
    int more;
} kp_ct_entry;

typedef struct kp_ct_list {
    kp_ct_entry *v;
    size_t n, cap;
    int failed;
} kp_ct_list;

static size_t kp_ct_push(kp_ct_list *l, kp_ct_entry e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        kp_ct_entry *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = 1;
            return SIZE_MAX;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = e;
    return l->n++;
}

/* The children of parent that the view shows, each followed by its own; returns how many it
 * leaves out. */
static uint32_t kp_ct_collect(const kp_aggregation *a, const kp_calltree_view *v, uint32_t parent,
                              kp_ct_list *l)
{
    const kp_aggregation_node *p = kp_aggregation_get_node(a, parent);
    int deeper = !v->depth || p->depth < v->depth;
    uint32_t all = 0, shown = 0;
    for (uint32_t id = p->first_child; id; id = kp_aggregation_get_node(a, id)->next_sibling) {
        all++;
        if (!deeper || (v->top && shown >= v->top)) continue;
        shown++;
        size_t at = kp_ct_push(l, (kp_ct_entry){id, 0, 0});
        if (at == SIZE_MAX) return 0;
        uint32_t left_out = kp_ct_collect(a, v, id, l);
        if (!l->failed) l->v[at].not_shown = left_out;
    }
    if (deeper && shown < all) kp_ct_push(l, (kp_ct_entry){parent, all - shown, 1});
    return all - shown;
}

/* ---- numbers --------------------------------------------------------------------------------- */

typedef kp_calltree_numbers kp_ct_numbers;

static double kp_ct_s(int64_t ns)
{
    return (double)ns / 1e9;
}

static void kp_ct_numbers_of(const kp_aggregation_stats *s, kp_event_kind kind, kp_ct_numbers *n)
{
    memset(n, 0, sizeof *n);
    n->calls = s->count;
    n->device_ops = s->device_ops;
    n->total = kp_aggregation_sort_value(s, kind, KP_AGGREGATION_SORT_TOTAL) / 1e9;
    n->self = kp_aggregation_sort_value(s, kind, KP_AGGREGATION_SORT_SELF) / 1e9;
    n->inclusive = kp_ct_s(s->inclusive_ns);
    n->exclusive = kp_ct_s(s->exclusive_ns);
    n->gpu = kp_ct_s(s->gpu_ns);
    n->gpu_self = kp_ct_s(s->gpu_self_ns);
    n->flops = s->flops;
    n->bytes = s->bytes;
    n->has_gflop_per_s = kp_aggregation_rate(s->flops, s->flops_ns, &n->gflop_per_s) == 0;
    n->has_gb_per_s = kp_aggregation_rate(s->bytes, s->bytes_ns, &n->gb_per_s) == 0;
    if (kp_event_kind_flags(kind) & KP_EVENT_F_DEVICE) {
        n->has_dev_gflop_per_s = n->has_gflop_per_s;
        n->dev_gflop_per_s = n->gflop_per_s;
        n->has_dev_gb_per_s = n->has_gb_per_s;
        n->dev_gb_per_s = n->gb_per_s;
    } else if (s->gpu_ns > 0) { /* per ns is GFLOP per s, GB per s */
        n->has_dev_gflop_per_s = s->flops != 0;
        n->dev_gflop_per_s = s->flops / (double)s->gpu_ns;
        n->has_dev_gb_per_s = s->bytes != 0;
        n->dev_gb_per_s = s->bytes / (double)s->gpu_ns;
    }
    if (s->count) {
        double count = (double)s->count, sum = (double)s->duration_ns;
        n->min = kp_ct_s(s->min_ns);
        n->max = kp_ct_s(s->max_ns);
        n->mean = sum / count / 1e9;
        double var = count > 1 ? (s->sum_sq_ns - sum * sum / count) / (count - 1) : 0;
        n->std = var > 0 ? sqrt(var) / 1e9 : 0;
    }
}

/* Whether the views show rates: the events fed carried metrics. Without, every output is what it
 * was before metrics existed (no column, key or header more). */
static int kp_ct_rates(const kp_aggregation *a)
{
    return kp_aggregation_get_totals(a)->metric_events > 0;
}

static const char *kp_ct_kind(kp_event_kind kind)
{
    if (kind == KP_EVENT_NONE) return "unattributed";
    const char *name = kp_event_kind_name(kind);
    return name ? name : "?";
}

/* The node's labels from the top level down: chain[0] is the top-level node. */
static size_t kp_ct_chain(const kp_aggregation *a, uint32_t id,
                          uint32_t chain[KP_AGGREGATION_MAX_DEPTH + 1])
{
    size_t n = 0;
    for (uint32_t at = id; at && n < KP_AGGREGATION_MAX_DEPTH + 1;
         at = kp_aggregation_get_node(a, at)->parent)
        chain[n++] = at;
    for (size_t i = 0; i < n / 2; i++) {
        uint32_t t = chain[i];
        chain[i] = chain[n - 1 - i];
        chain[n - 1 - i] = t;
    }
    return n;
}

static const char *kp_ct_sort_words(kp_aggregation_sort sort, int opencl_only)
{
    switch (sort) {
    case KP_AGGREGATION_SORT_SELF:
        return "self time";
    case KP_AGGREGATION_SORT_GPU:
        return opencl_only ? "device time" : "GPU time";
    case KP_AGGREGATION_SORT_CALLS:
        return "calls";
    default:
        return "total time";
    }
}

/* ---- text ------------------------------------------------------------------------------------ */

/* text right-aligned in width columns (a column per character, not per byte: "µs"). */
static void kp_ct_pad(kp_str *out, const char *text, int width)
{
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        chars += (*p & 0xC0) != 0x80;
    for (; chars < width; chars++)
        kp_str_append(out, " ");
    kp_str_append(out, text);
}

static void kp_ct_pad_time(kp_str *out, int has, double s, int width)
{
    char buf[32];
    kp_ct_pad(out, has ? kp_format_duration(s, buf, sizeof buf) : "-", width);
}

/* A rate right-aligned, "-" where there is none. */
static void kp_ct_pad_rate(kp_str *out, int has, double v, int width)
{
    char buf[40];
    kp_ct_pad(out, has ? kp_format_rate(v, buf, sizeof buf) : "-", width);
}

/* A call or range with metrics that launched device work: its rates over device time differ
 * from those over its host time, and the tables show both, labelled ("Dev GFLOP/s", "Host
 * GFLOP/s"); without any, one column over each row's own time ("GFLOP/s"), as before. */
static int kp_ct_splits(const kp_aggregation_stats *s, kp_event_kind kind)
{
    return !(kp_event_kind_flags(kind) & KP_EVENT_F_DEVICE) && s->gpu_ns > 0 &&
           (s->flops != 0 || s->bytes != 0);
}

static const char *const kp_ct_rate_heads[2][2] = {{"GFLOP/s", "Dev GFLOP/s"},
                                                   {"GB/s", "Dev GB/s"}};

/* The rate cells of one row: over its own time, or (split) device time then host time. */
static void kp_ct_pad_rates(kp_str *out, const kp_ct_numbers *num, int bytes, int split,
                            int device_kind)
{
    double value = bytes ? num->bytes : num->flops;
    int has = value != 0 && (bytes ? num->has_gb_per_s : num->has_gflop_per_s);
    double rate = bytes ? num->gb_per_s : num->gflop_per_s;
    kp_str_append(out, "  ");
    if (!split) {
        kp_ct_pad_rate(out, has, rate, 8);
        return;
    }
    kp_ct_pad_rate(out, value != 0 && (bytes ? num->has_dev_gb_per_s : num->has_dev_gflop_per_s),
                   bytes ? num->dev_gb_per_s : num->dev_gflop_per_s, bytes ? 8 : 11);
    kp_str_append(out, "  ");
    kp_ct_pad_rate(out, has && !device_kind, rate, bytes ? 9 : 12);
}

static void kp_ct_rate_head(kp_str *out, int bytes, int split)
{
    if (!split)
        kp_str_printf(out, "  %8s", kp_ct_rate_heads[bytes][0]);
    else
        kp_str_printf(out, "  %*s  %*s", bytes ? 8 : 11, kp_ct_rate_heads[bytes][1], bytes ? 9 : 12,
                      bytes ? "Host GB/s" : "Host GFLOP/s");
}

/* Flops and bytes cells: "-" for none. */
static void kp_ct_pad_flops(kp_str *out, double v, int width)
{
    char buf[40];
    kp_ct_pad(out, v != 0 ? kp_format_si(v, buf, sizeof buf) : "-", width);
}

static void kp_ct_pad_bytes(kp_str *out, double v, int width)
{
    char buf[40];
    kp_ct_pad(
        out, v > 0 ? kp_format_bytes(v >= 1.8e19 ? UINT64_MAX : (uint64_t)v, buf, sizeof buf) : "-",
        width);
}

static void kp_ct_pad_count(kp_str *out, uint64_t v, int dash_for_zero, int width)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    kp_ct_pad(out, dash_for_zero && !v ? "-" : buf, width);
}

/* A name as text: on one line and valid UTF-8 whatever bytes it held (a control character or a
 * byte that is not UTF-8 as \n or \xNN, as in error messages). */
static void kp_ct_text_name(kp_str *out, const char *name)
{
    kp_str_append_escaped(out, name, strlen(name));
}

/* The lines above a table: what it is (summary: how many rows, in which order), the trace's
 * totals, whether polling calls are in it, and what the aggregate had to bend. */
static void kp_ct_text_header(const kp_aggregation *a, const kp_calltree_view *v, const char *what,
                              const char *summary, kp_str *out)
{
    kp_str_append(out, what);
    kp_str_append(out, " of ");
    kp_ct_text_name(out, v->trace ? v->trace : "");
    if (v->command && *v->command) {
        kp_str_append(out, " (");
        kp_ct_text_name(out, v->command);
        kp_str_append(out, ")");
    }
    kp_str_printf(out, ": %s\n", summary);
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    const kp_aggregation_stats *root = &kp_aggregation_get_node(a, 0)->stats;
    char host[32], gpu[32], busy[32];
    kp_str_printf(out,
                  "Host time %s in top-level calls and ranges; %s time %s attributed over %llu "
                  "device operation%s",
                  kp_format_duration(kp_ct_s(root->inclusive_ns), host, sizeof host),
                  v->opencl_only ? "device" : "GPU",
                  kp_format_duration(kp_ct_s(root->gpu_ns), gpu, sizeof gpu),
                  (unsigned long long)t->device_ops, t->device_ops == 1 ? "" : "s");
    if (t->ops_without_call)
        kp_str_printf(out, " (%llu with no recorded launching call, under %s)",
                      (unsigned long long)t->ops_without_call, KP_AGGREGATION_UNATTRIBUTED);
    kp_str_printf(out, "; %s busy %s\n", v->opencl_only ? "device" : "GPU",
                  kp_format_duration(kp_ct_s(t->gpu_busy_ns), busy, sizeof busy));
    kp_str_append(out, v->polling_calls
                           ? "Polling and query calls included (--raw)\n"
                           : "Polling and query calls left out, their time their caller's own "
                             "(--raw includes them)\n");
    if (t->folded)
        kp_str_printf(out, "Note: %llu event%s deeper than %d levels placed at that depth\n",
                      (unsigned long long)t->folded, t->folded == 1 ? "" : "s",
                      KP_AGGREGATION_MAX_DEPTH);
    if (t->ends_before_start) {
        char note[160];
        kp_str_printf(out, "Note: %s\n",
                      kp_format_ends_before_start(t->ends_before_start, note, sizeof note));
    }
    if (t->unordered)
        kp_str_printf(out,
                      "Note: %llu event%s started before one read earlier (placed as well as "
                      "could be)\n",
                      (unsigned long long)t->unordered, t->unordered == 1 ? "" : "s");
    kp_str_append(out, "\n");
}

static void kp_ct_text_tree(const kp_aggregation *a, const kp_calltree_view *v, const kp_ct_list *l,
                            kp_str *out)
{
    kp_str summary = {0};
    size_t paths = kp_aggregation_node_count(a) - 1;
    kp_str_printf(&summary, "%zu call path%s, children by %s", paths, paths == 1 ? "" : "s",
                  kp_ct_sort_words(v->sort, v->opencl_only));
    if (v->top) kp_str_printf(&summary, " (the first %zu of each)", v->top);
    if (v->depth) kp_str_printf(&summary, ", %u level%s shown", v->depth, v->depth == 1 ? "" : "s");
    if (summary.failed) out->failed = 1;
    kp_ct_text_header(a, v, "Call tree", summary.data ? summary.data : "", out);
    kp_str_free(&summary);
    if (kp_aggregation_node_count(a) < 2) {
        kp_str_append(out, "  (no calls, ranges or device work recorded)\n");
        return;
    }
    /* With metrics: each node's own flops and bytes and their rates, where any node shown has
     * them. */
    int flops = 0, bytes = 0, split = 0;
    for (size_t i = 0; i < l->n && kp_ct_rates(a); i++) {
        if (l->v[i].more) continue;
        const kp_aggregation_node *nd = kp_aggregation_get_node(a, l->v[i].node);
        flops |= nd->stats.flops != 0;
        bytes |= nd->stats.bytes != 0;
        split |= kp_ct_splits(&nd->stats, nd->kind);
    }
    kp_str_printf(out, "  %8s  %10s  %10s  %10s  %8s", "Calls", "Host incl", "Host excl",
                  v->opencl_only ? "Device" : "GPU", "Dev ops");
    if (flops) {
        kp_str_printf(out, "  %10s", "Flops");
        kp_ct_rate_head(out, 0, split);
    }
    if (bytes) {
        kp_str_printf(out, "  %10s", "Bytes");
        kp_ct_rate_head(out, 1, split);
    }
    kp_str_printf(out, "  %-7s Name\n", "Kind");
    for (size_t i = 0; i < l->n; i++) {
        const kp_ct_entry *e = &l->v[i];
        const kp_aggregation_node *node = kp_aggregation_get_node(a, e->node);
        if (e->more) {
            /* At the depth of the children it stands for. */
            kp_str_printf(out, "  %8s  %10s  %10s  %10s  %8s", "", "", "", "", "");
            if (flops) kp_str_printf(out, "  %10s  %*s", "", split ? 25 : 8, "");
            if (bytes) kp_str_printf(out, "  %10s  %*s", "", split ? 19 : 8, "");
            kp_str_printf(out, "  %-7s ", "");
            for (uint32_t d = 1; d <= node->depth; d++)
                kp_str_append(out, "  ");
            kp_str_printf(out, "… %u more\n", e->not_shown);
            continue;
        }
        const kp_aggregation_stats *s = &node->stats;
        int host = node->kind == KP_EVENT_API || node->kind == KP_EVENT_RANGE;
        kp_str_append(out, "  ");
        kp_ct_pad_count(out, s->count, 1, 8);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, host, kp_ct_s(s->inclusive_ns), 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, host, kp_ct_s(s->exclusive_ns), 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, s->device_ops > 0, kp_ct_s(s->gpu_ns), 10);
        kp_str_append(out, "  ");
        kp_ct_pad_count(out, s->device_ops, 1, 8);
        if (flops || bytes) {
            kp_ct_numbers num;
            kp_ct_numbers_of(s, node->kind, &num);
            int device_kind = (kp_event_kind_flags(node->kind) & KP_EVENT_F_DEVICE) != 0;
            if (flops) {
                kp_str_append(out, "  ");
                kp_ct_pad_flops(out, num.flops, 10);
                kp_ct_pad_rates(out, &num, 0, split, device_kind);
            }
            if (bytes) {
                kp_str_append(out, "  ");
                kp_ct_pad_bytes(out, num.bytes, 10);
                kp_ct_pad_rates(out, &num, 1, split, device_kind);
            }
        }
        kp_str_printf(out, "  %-7s ", node->kind == KP_EVENT_NONE ? "-" : kp_ct_kind(node->kind));
        for (uint32_t d = 1; d < node->depth; d++)
            kp_str_append(out, "  ");
        char buf[24];
        kp_ct_text_name(out, kp_aggregation_name(a, e->node, buf, sizeof buf));
        kp_str_append(out, "\n");
    }
}

static void kp_ct_text_rows(const kp_aggregation *a, const kp_calltree_view *v,
                            const kp_aggregation_row *rows, size_t shown, size_t n, kp_str *out)
{
    int by_path = v->group == KP_AGGREGATION_GROUP_PATH;
    kp_str summary = {0};
    kp_str_printf(&summary, "%zu row%s by %s", n, n == 1 ? "" : "s",
                  kp_ct_sort_words(v->sort, v->opencl_only));
    if (shown < n) kp_str_printf(&summary, ", the first %zu shown", shown);
    if (summary.failed) out->failed = 1;
    kp_ct_text_header(a, v, by_path ? "Key averages by call path" : "Key averages by name",
                      summary.data ? summary.data : "", out);
    kp_str_free(&summary);
    if (!n) {
        kp_str_append(out, "  (no calls, ranges or device work recorded)\n");
        return;
    }
    int flops = 0, bytes = 0, split = 0;
    int rates = kp_ct_rates(a); /* the rates too, where the trace has metrics */
    for (size_t i = 0; i < shown; i++) {
        flops |= rows[i].stats.flops != 0;
        bytes |= rows[i].stats.bytes != 0;
        split |= rates && kp_ct_splits(&rows[i].stats, rows[i].kind);
    }
    kp_str_printf(out, "  %-7s %8s  %10s  %10s  %10s  %10s  %10s  %10s", "Kind", "Calls", "Total",
                  "Self", v->opencl_only ? "Device" : "GPU", "Min", "Mean", "Max");
    if (flops) kp_str_printf(out, "  %10s", "Flops");
    if (flops && rates) kp_ct_rate_head(out, 0, split);
    if (bytes) kp_str_printf(out, "  %10s", "Bytes");
    if (bytes && rates) kp_ct_rate_head(out, 1, split);
    kp_str_printf(out, "  %s\n", by_path ? "Path" : "Name");
    kp_str path = {0};
    for (size_t i = 0; i < shown; i++) {
        const kp_aggregation_row *r = &rows[i];
        kp_ct_numbers num;
        kp_ct_numbers_of(&r->stats, r->kind, &num);
        kp_str_printf(out, "  %-7s ", r->kind == KP_EVENT_NONE ? "-" : kp_ct_kind(r->kind));
        kp_ct_pad_count(out, num.calls, 1, 8);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, 1, num.total, 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, 1, num.self, 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, r->stats.device_ops > 0, num.gpu, 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, num.calls > 0, num.min, 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, num.calls > 0, num.mean, 10);
        kp_str_append(out, "  ");
        kp_ct_pad_time(out, num.calls > 0, num.max, 10);
        if (flops) {
            kp_str_append(out, "  ");
            kp_ct_pad_flops(out, num.flops, 10);
        }
        int device_kind = (kp_event_kind_flags(r->kind) & KP_EVENT_F_DEVICE) != 0;
        if (flops && rates) kp_ct_pad_rates(out, &num, 0, split, device_kind);
        if (bytes) {
            kp_str_append(out, "  ");
            kp_ct_pad_bytes(out, num.bytes, 10);
        }
        if (bytes && rates) kp_ct_pad_rates(out, &num, 1, split, device_kind);
        kp_str_append(out, "  ");
        path.len = 0;
        if (path.data) path.data[0] = '\0';
        if (by_path) {
            kp_aggregation_path(a, r->node, &path);
        } else {
            char id[24];
            kp_str_append(&path, kp_aggregation_name(a, r->node, id, sizeof id));
        }
        if (path.failed) out->failed = 1;
        kp_ct_text_name(out, path.data ? path.data : "");
        kp_str_append(out, "\n");
    }
    kp_str_free(&path);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void kp_ct_json_numbers(kp_json *j, const kp_aggregation_stats *s, kp_event_kind kind,
                               int rates)
{
    kp_ct_numbers n;
    kp_ct_numbers_of(s, kind, &n);
    kp_json_uint(j, "calls", n.calls);
    kp_json_double(j, "total_s", n.total);
    kp_json_double(j, "self_s", n.self);
    kp_json_double(j, "inclusive_s", n.inclusive);
    kp_json_double(j, "exclusive_s", n.exclusive);
    kp_json_double(j, "gpu_s", n.gpu);
    kp_json_double(j, "gpu_self_s", n.gpu_self);
    kp_json_uint(j, "device_ops", n.device_ops);
    const char *keys[] = {"min_s", "mean_s", "max_s", "std_s"};
    double values[] = {n.min, n.mean, n.max, n.std};
    for (int i = 0; i < 4; i++) {
        if (n.calls)
            kp_json_double(j, keys[i], values[i]);
        else
            kp_json_null(j, keys[i]);
    }
    kp_json_double(j, "flops", n.flops);
    kp_json_double(j, "bytes", n.bytes);
    if (!rates) return;
    if (n.flops != 0 && n.has_gflop_per_s)
        kp_json_double(j, "gflop_per_s", n.gflop_per_s);
    else
        kp_json_null(j, "gflop_per_s");
    if (n.bytes != 0 && n.has_gb_per_s)
        kp_json_double(j, "gb_per_s", n.gb_per_s);
    else
        kp_json_null(j, "gb_per_s");
    /* Over device time (see kp_calltree_numbers): a range's that launched device work. */
    if (n.flops != 0 && n.has_dev_gflop_per_s)
        kp_json_double(j, "device_gflop_per_s", n.dev_gflop_per_s);
    else
        kp_json_null(j, "device_gflop_per_s");
    if (n.bytes != 0 && n.has_dev_gb_per_s)
        kp_json_double(j, "device_gb_per_s", n.dev_gb_per_s);
    else
        kp_json_null(j, "device_gb_per_s");
}

/* id, parent, depth, kind, name and path of a node. */
static void kp_ct_json_place(kp_json *j, const kp_aggregation *a, uint32_t id)
{
    const kp_aggregation_node *node = kp_aggregation_get_node(a, id);
    char buf[24];
    kp_json_uint(j, "id", id);
    kp_json_uint(j, "parent", node->parent);
    kp_json_uint(j, "depth", node->depth);
    kp_json_string(j, "kind", kp_ct_kind(node->kind));
    kp_json_string(j, "name", kp_aggregation_name(a, id, buf, sizeof buf));
    uint32_t chain[KP_AGGREGATION_MAX_DEPTH + 1];
    size_t n = kp_ct_chain(a, id, chain);
    kp_json_array_begin(j, "path");
    for (size_t i = 0; i < n; i++)
        kp_json_string(j, NULL, kp_aggregation_name(a, chain[i], buf, sizeof buf));
    kp_json_array_end(j);
}

static void kp_ct_json_limit(kp_json *j, const char *key, size_t v)
{
    if (v)
        kp_json_uint(j, key, v);
    else
        kp_json_null(j, key);
}

static void kp_ct_json_head(kp_json *j, const kp_aggregation *a, const kp_calltree_view *v)
{
    kp_json_string(j, "trace", v->trace ? v->trace : "");
    kp_json_string(j, "command", v->command ? v->command : "");
    kp_json_string(j, "view", v->key_averages ? "key_averages" : "tree");
    if (v->key_averages) kp_json_string(j, "group", kp_aggregation_group_name(v->group));
    kp_json_string(j, "sort", kp_aggregation_sort_name(v->sort));
    if (!v->key_averages) kp_ct_json_limit(j, "depth", v->depth);
    kp_ct_json_limit(j, "top", v->top);
    kp_json_bool(j, "polling_calls", v->polling_calls);
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    const kp_aggregation_stats *root = &kp_aggregation_get_node(a, 0)->stats;
    kp_json_object_begin(j, "totals");
    kp_json_uint(j, "call_paths", kp_aggregation_node_count(a) - 1);
    kp_json_uint(j, "events", t->events);
    kp_json_double(j, "host_s", kp_ct_s(root->inclusive_ns));
    kp_json_double(j, "gpu_s", kp_ct_s(root->gpu_ns));
    kp_json_double(j, "gpu_busy_s", kp_ct_s(t->gpu_busy_ns));
    kp_json_uint(j, "device_ops", t->device_ops);
    kp_json_uint(j, "device_ops_without_call", t->ops_without_call);
    kp_json_uint(j, "folded", t->folded);
    kp_json_uint(j, "unordered", t->unordered);
    kp_json_object_end(j);
}

static void kp_ct_json_tree(const kp_aggregation *a, const kp_calltree_view *v, const kp_ct_list *l,
                            uint32_t top_level_not_shown, kp_json *j)
{
    kp_json_object_begin(j, NULL);
    kp_ct_json_head(j, a, v);
    kp_json_uint(j, "top_level_not_shown", top_level_not_shown);
    kp_json_array_begin(j, "nodes");
    for (size_t i = 0; i < l->n; i++) {
        const kp_ct_entry *e = &l->v[i];
        if (e->more) continue;
        const kp_aggregation_node *node = kp_aggregation_get_node(a, e->node);
        kp_json_object_begin(j, NULL);
        kp_ct_json_place(j, a, e->node);
        kp_ct_json_numbers(j, &node->stats, node->kind, kp_ct_rates(a));
        kp_json_uint(j, "children_not_shown", e->not_shown);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_object_end(j);
}

static void kp_ct_json_rows(const kp_aggregation *a, const kp_calltree_view *v,
                            const kp_aggregation_row *rows, size_t shown, size_t n, kp_json *j)
{
    char buf[24];
    kp_json_object_begin(j, NULL);
    kp_ct_json_head(j, a, v);
    kp_json_uint(j, "rows_in_all", n);
    kp_json_array_begin(j, "rows");
    for (size_t i = 0; i < shown; i++) {
        const kp_aggregation_row *r = &rows[i];
        kp_json_object_begin(j, NULL);
        if (v->group == KP_AGGREGATION_GROUP_PATH) {
            kp_ct_json_place(j, a, r->node);
        } else {
            kp_json_string(j, "kind", kp_ct_kind(r->kind));
            kp_json_string(j, "name", kp_aggregation_name(a, r->node, buf, sizeof buf));
        }
        kp_ct_json_numbers(j, &r->stats, r->kind, kp_ct_rates(a));
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_object_end(j);
}

/* ---- CSV ------------------------------------------------------------------------------------- */

static const char kp_ct_csv_place_header[] = "id,parent,depth,kind,name,path,";
static const char kp_ct_csv_numbers_header[] =
    "calls,total_s,self_s,inclusive_s,exclusive_s,gpu_s,gpu_self_s,device_ops,min_s,mean_s,"
    "max_s,std_s,flops,bytes";
static const char kp_ct_csv_rates_header[] = ",gflop_per_s,gb_per_s";

static void kp_ct_csv_double(kp_str *out, double v)
{
    char buf[40];
    kp_json_format_double(v, buf, sizeof buf);
    kp_str_append(out, buf);
}

static void kp_ct_csv_numbers(kp_str *out, const kp_aggregation_stats *s, kp_event_kind kind,
                              int rates)
{
    kp_ct_numbers n;
    kp_ct_numbers_of(s, kind, &n);
    kp_str_printf(out, "%llu", (unsigned long long)n.calls);
    double times[] = {n.total, n.self, n.inclusive, n.exclusive, n.gpu, n.gpu_self};
    for (int i = 0; i < 6; i++) {
        kp_str_append(out, ",");
        kp_ct_csv_double(out, times[i]);
    }
    kp_str_printf(out, ",%llu", (unsigned long long)n.device_ops);
    double dist[] = {n.min, n.mean, n.max, n.std};
    for (int i = 0; i < 4; i++) {
        kp_str_append(out, ",");
        if (n.calls) kp_ct_csv_double(out, dist[i]);
    }
    kp_str_append(out, ",");
    kp_ct_csv_double(out, n.flops);
    kp_str_append(out, ",");
    kp_ct_csv_double(out, n.bytes);
    if (!rates) return;
    kp_str_append(out, ",");
    if (n.flops != 0 && n.has_gflop_per_s) kp_ct_csv_double(out, n.gflop_per_s);
    kp_str_append(out, ",");
    if (n.bytes != 0 && n.has_gb_per_s) kp_ct_csv_double(out, n.gb_per_s);
}

static void kp_ct_csv_place(kp_str *out, const kp_aggregation *a, uint32_t id, kp_str *path)
{
    const kp_aggregation_node *node = kp_aggregation_get_node(a, id);
    char buf[24];
    kp_str_printf(out, "%u,%u,%u,%s,", id, node->parent, node->depth, kp_ct_kind(node->kind));
    kp_csv_field(out, kp_aggregation_name(a, id, buf, sizeof buf));
    kp_str_append(out, ",");
    path->len = 0;
    if (path->data) path->data[0] = '\0';
    kp_aggregation_path(a, id, path);
    if (path->failed) out->failed = 1;
    kp_csv_field(out, path->data);
    kp_str_append(out, ",");
}

static void kp_ct_csv_tree(const kp_aggregation *a, const kp_ct_list *l, kp_str *out)
{
    kp_str path = {0};
    int rates = kp_ct_rates(a);
    kp_str_printf(out, "%s%s%s,children_not_shown\n", kp_ct_csv_place_header,
                  kp_ct_csv_numbers_header, rates ? kp_ct_csv_rates_header : "");
    for (size_t i = 0; i < l->n; i++) {
        const kp_ct_entry *e = &l->v[i];
        if (e->more) continue;
        const kp_aggregation_node *node = kp_aggregation_get_node(a, e->node);
        kp_ct_csv_place(out, a, e->node, &path);
        kp_ct_csv_numbers(out, &node->stats, node->kind, rates);
        kp_str_printf(out, ",%u\n", e->not_shown);
    }
    kp_str_free(&path);
}

static void kp_ct_csv_rows(const kp_aggregation *a, const kp_calltree_view *v,
                           const kp_aggregation_row *rows, size_t shown, kp_str *out)
{
    int by_path = v->group == KP_AGGREGATION_GROUP_PATH;
    kp_str path = {0};
    int rates = kp_ct_rates(a);
    kp_str_printf(out, "%s%s%s\n", by_path ? kp_ct_csv_place_header : "kind,name,",
                  kp_ct_csv_numbers_header, rates ? kp_ct_csv_rates_header : "");
    for (size_t i = 0; i < shown; i++) {
        const kp_aggregation_row *r = &rows[i];
        if (by_path) {
            kp_ct_csv_place(out, a, r->node, &path);
        } else {
            char buf[24];
            kp_str_printf(out, "%s,", kp_ct_kind(r->kind));
            kp_csv_field(out, kp_aggregation_name(a, r->node, buf, sizeof buf));
            kp_str_append(out, ",");
        }
        kp_ct_csv_numbers(out, &r->stats, r->kind, rates);
        kp_str_append(out, "\n");
    }
    kp_str_free(&path);
}

/* ---- the views ------------------------------------------------------------------------------- */

kprof_status kp_calltree_render(kp_aggregation *a, const kp_calltree_view *v,
                                kp_calltree_format format, kp_str *out, kp_error *err)
{
    int rc = 0;
    if (v->key_averages) {
        kp_aggregation_row *rows = NULL;
        size_t n = 0;
        kprof_status st = kp_aggregation_rows(a, v->group, &rows, &n, err);
        if (st != KPROF_OK) return st;
        size_t shown = kp_aggregation_select(rows, n, v->sort, v->top);
        if (format == KP_CALLTREE_TEXT) {
            kp_ct_text_rows(a, v, rows, shown, n, out);
        } else if (format == KP_CALLTREE_CSV) {
            kp_ct_csv_rows(a, v, rows, shown, out);
        } else {
            kp_json j;
            kp_json_init(&j, out, 1);
            kp_ct_json_rows(a, v, rows, shown, n, &j);
            rc = kp_json_finish(&j);
        }
        free(rows);
        return rc == 0 && !out->failed ? KPROF_OK : kp_error_nomem(err);
    }
    kprof_status st = kp_aggregation_order(a, v->sort, err);
    if (st != KPROF_OK) return st;
    kp_ct_list l = {0};
    uint32_t top_level_not_shown = kp_ct_collect(a, v, 0, &l);
    if (l.failed) {
        free(l.v);
        return kp_error_nomem(err);
    }
    if (format == KP_CALLTREE_TEXT) {
        kp_ct_text_tree(a, v, &l, out);
    } else if (format == KP_CALLTREE_CSV) {
        kp_ct_csv_tree(a, &l, out);
    } else {
        kp_json j;
        kp_json_init(&j, out, 1);
        kp_ct_json_tree(a, v, &l, top_level_not_shown, &j);
        rc = kp_json_finish(&j);
    }
    free(l.v);
    return rc == 0 && !out->failed ? KPROF_OK : kp_error_nomem(err);
}

kprof_status kp_calltree_write(kp_aggregation *a, const kp_calltree_view *view,
                               kp_calltree_format format, FILE *f, kp_error *err)
{
    kp_str s = {0};
    kprof_status st = kp_calltree_render(a, view, format, &s, err);
    if (st != KPROF_OK) {
        kp_str_free(&s);
        return st;
    }
    size_t len = s.len, wrote = len ? fwrite(s.data, 1, len, f) : 0;
    kp_str_free(&s);
    if (wrote != len || fflush(f) != 0 || ferror(f))
        return kp_error_set(err, KPROF_IO, "writing the call tree failed");
    return KPROF_OK;
}

void kp_calltree_numbers_of(const kp_aggregation_stats *s, kp_event_kind kind,
                            kp_calltree_numbers *out)
{
    kp_ct_numbers_of(s, kind, out);
}

const char *kp_calltree_kind(kp_event_kind kind)
{
    return kp_ct_kind(kind);
}
