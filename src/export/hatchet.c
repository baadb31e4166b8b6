/*
 * hatchet.c — the aggregate's call tree in Hatchet's literal format (see hatchet.h). The tree
 * holds one node per distinct call path, not per event, so the document is built in memory and
 * written at once; recursion is bounded by KP_AGGREGATION_MAX_DEPTH.
 */
#include "export/hatchet.h"
#include "base/json.h"

#include <string.h>

static double kp_hatchet_s(int64_t ns)
{
    return (double)ns / 1e9;
}

static void kp_hatchet_metrics(kp_json *j, const kp_aggregation_stats *s)
{
    kp_json_object_begin(j, "metrics");
    kp_json_double(j, "time (inc)", kp_hatchet_s(s->inclusive_ns));
    kp_json_double(j, "time", kp_hatchet_s(s->exclusive_ns));
    kp_json_uint(j, "calls", s->count);
    kp_json_double(j, "gpu_time (inc)", kp_hatchet_s(s->gpu_ns));
    kp_json_double(j, "gpu_time", kp_hatchet_s(s->gpu_self_ns));
    kp_json_double(j, "flops (inc)", s->flops_inclusive);
    kp_json_double(j, "flops", s->flops);
    kp_json_double(j, "bytes (inc)", s->bytes_inclusive);
    kp_json_double(j, "bytes", s->bytes);
    kp_json_object_end(j);
}

static void kp_hatchet_frame(kp_json *j, const char *name, const char *type)
{
    kp_json_object_begin(j, "frame");
    kp_json_string(j, "name", name);
    kp_json_string(j, "type", type);
    kp_json_object_end(j);
}

static void kp_hatchet_children(kp_json *j, const kp_aggregation *a, uint32_t parent)
{
    const kp_aggregation_node *p = kp_aggregation_get_node(a, parent);
    kp_json_array_begin(j, "children");
    for (uint32_t id = p->first_child; id; id = kp_aggregation_get_node(a, id)->next_sibling) {
        const kp_aggregation_node *n = kp_aggregation_get_node(a, id);
        char buf[24];
        const char *type = n->kind == KP_EVENT_NONE ? "unattributed" : kp_event_kind_name(n->kind);
        kp_json_object_begin(j, NULL);
        kp_hatchet_frame(j, kp_aggregation_name(a, id, buf, sizeof buf), type ? type : "?");
        kp_hatchet_metrics(j, &n->stats);
        if (n->first_child) kp_hatchet_children(j, a, id);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
}

kprof_status kp_hatchet_write(const kp_aggregation *a, const char *root, kp_str *out, kp_error *err)
{
    kp_json j;
    kp_json_init(&j, out, 0);
    kp_json_array_begin(&j, NULL);
    kp_json_object_begin(&j, NULL);
    kp_hatchet_frame(&j, root ? root : KP_HATCHET_ROOT, "root");
    /* The root: sums over the top level (the aggregate's root holds the inclusive ones). */
    kp_aggregation_stats sum = kp_aggregation_get_node(a, 0)->stats;
    sum.count = 0;
    sum.exclusive_ns = sum.gpu_self_ns = 0;
    sum.flops = sum.bytes = 0;
    kp_hatchet_metrics(&j, &sum);
    kp_hatchet_children(&j, a, 0);
    kp_json_object_end(&j);
    kp_json_array_end(&j);
    int rc = kp_json_finish(&j);
    kp_str_append(out, "\n");
    return rc == 0 && !out->failed ? KPROF_OK : kp_error_nomem(err);
}

kprof_status kp_export_hatchet(const kp_aggregation *a, const char *root, FILE *f, kp_error *err)
{
    kp_str s = {0};
    kprof_status st = kp_hatchet_write(a, root, &s, err);
    if (st != KPROF_OK) {
        kp_str_free(&s);
        return st;
    }
    size_t len = s.len, wrote = fwrite(s.data, 1, len, f);
    kp_str_free(&s);
    if (wrote != len || fflush(f) != 0 || ferror(f))
        return kp_error_set(err, KPROF_IO, "writing the Hatchet export failed");
    return KPROF_OK;
}
