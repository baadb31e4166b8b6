/*
 * caps.c — what `kprof caps` reports: the backends and their devices gathered, and the JSON of
 * devices and of ceiling plans and measurements (caps.h).
 */
#include "lab/caps.h"

#include "core/format.h"

#include <stdlib.h>
#include <string.h>

void kp_caps_collect(kp_caps_backend *b, const char *name)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    const kp_backend_ops *ops = kp_backend_find(name);
    if (!ops) {
        snprintf(b->reason, sizeof b->reason,
                 "not built into this kprof (no %s headers when it was compiled)",
                 kp_backend_api(name));
        return;
    }
    b->built = 1;
    kp_error why = {0};
    if (ops->probe(&why) != KPROF_OK) {
        kp_strlcpy(b->reason, why.message, sizeof b->reason);
        kp_error_clear(&why);
        return;
    }
    int n = ops->device_count();
    if (n > KP_CAPS_MAX_DEVICES) n = KP_CAPS_MAX_DEVICES;
    b->devices = calloc((size_t)(n > 0 ? n : 1), sizeof *b->devices);
    if (!b->devices) {
        kp_error nomem = {0};
        kp_error_nomem(&nomem);
        kp_strlcpy(b->reason, nomem.message, sizeof b->reason);
        return;
    }
    for (int i = 0; i < n; i++) {
        kp_error err = {0};
        if (ops->device_info(i, &b->devices[b->ndevices], &err) == KPROF_OK) b->ndevices++;
        kp_error_clear(&err);
    }
    b->available = b->ndevices > 0;
    if (!b->available && !b->reason[0]) snprintf(b->reason, sizeof b->reason, "no devices found");
}

void kp_caps_backend_free(kp_caps_backend *b)
{
    free(b->devices);
    b->devices = NULL;
    b->ndevices = 0;
}

const char *kp_caps_peak_reason(const kp_device_info *d)
{
    return d->peak_bandwidth_reason[0] ? d->peak_bandwidth_reason
                                       : "the backend reports no datasheet peak";
}

void kp_caps_json_peak(kp_json *j, const kp_device_info *d)
{
    if (d->peak_bandwidth_gbs > 0) {
        kp_json_double(j, "peak_bandwidth_gbs", d->peak_bandwidth_gbs);
        kp_json_null(j, "peak_bandwidth_reason");
    } else {
        kp_json_null(j, "peak_bandwidth_gbs");
        kp_json_string(j, "peak_bandwidth_reason", kp_caps_peak_reason(d));
    }
}

void kp_caps_json_device(kp_json *j, const kp_device_info *d, const kp_ceiling *c)
{
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "backend", d->backend);
    kp_json_int(j, "index", d->index);
    kp_json_string(j, "name", d->name);
    kp_json_string(j, "vendor", d->vendor);
    kp_json_string(j, "platform", d->platform);
    kp_json_string(j, "version", d->version);
    kp_json_string(j, "driver", d->driver);
    kp_json_bool(j, "is_gpu", d->is_gpu);
    kp_json_bool(j, "kernels_in_process", d->kernels_in_process);
    kp_json_uint(j, "compute_units", d->compute_units);
    kp_json_uint(j, "max_threadgroup_size", d->max_tg);
    kp_json_array_begin(j, "max_threadgroup_dims");
    for (int i = 0; i < 3; i++)
        kp_json_uint(j, NULL, d->max_tg_dims[i]);
    kp_json_array_end(j);
    kp_json_uint(j, "threadgroup_memory_bytes", d->local_mem);
    kp_json_uint(j, "global_memory_bytes", d->global_mem);
    kp_json_uint(j, "max_allocation_bytes", d->max_alloc);
    kp_json_uint(j, "execution_width", d->exec_width);
    kp_json_double(j, "timer_resolution_ns", d->timer_resolution_ns);
    kp_json_bool(j, "profiling", d->profiling);
    kp_caps_json_peak(j, d);
    for (int i = 0; i < d->nfacts; i++) {
        const kp_fact *f = &d->facts[i];
        if (f->numeric)
            kp_json_double(j, f->key, strtod(f->value, NULL));
        else
            kp_json_string(j, f->key, f->value);
    }
    if (c) {
        kp_json_object_begin(j, "measured_ceiling");
        kp_json_double(j, "copy_gb_per_s", c->copy_gbs);
        kp_json_uint(j, "copy_bytes", c->copy_bytes);
        kp_json_double(j, "demo_add_gb_per_s", c->demo_add_gbs);
        kp_json_double(j, "demo_add_ms", c->demo_add_ms);
        kp_json_int(j, "measured_at", c->measured_at);
        kp_json_string(j, "method", c->method);
        if (c->fma_gflops > 0) {
            kp_json_double(j, "fma_gflop_per_s", c->fma_gflops);
            kp_json_string(j, "fma_method", c->fma_method);
        } else {
            kp_json_null(j, "fma_gflop_per_s");
            kp_json_null(j, "fma_method");
        }
        kp_json_object_end(j);
    } else {
        kp_json_null(j, "measured_ceiling");
    }
    kp_json_object_end(j);
}

/* "a, b and c" of byte sizes. */
static void kp_caps_sizes_text(kp_str *s, const kp_ceiling_plan *plan)
{
    char a[64];
    for (int i = 0; i < plan->nsizes; i++)
        kp_str_printf(s, "%s%s",
                      i == 0                  ? ""
                      : i == plan->nsizes - 1 ? " and "
                                              : ", ",
                      kp_format_bytes(plan->sizes[i], a, sizeof a));
}

void kp_caps_plan_text(kp_str *s, const kp_ceiling_result *r, double secs)
{
    const kp_ceiling_plan *plan = &r->plan;
    char a[64];
    kp_str_printf_escaped(s, "the bandwidth ceiling of %s", r->device.name);
    kp_str_printf(s, " (%s device %d, %s, ", r->device.backend, r->device.index,
                  plan->gpu ? "a GPU" : "not a GPU");
    if (plan->cache_bytes)
        kp_str_printf(s, "%s last-level cache): ", kp_format_bytes(plan->cache_bytes, a, sizeof a));
    else
        kp_str_append(s, "last-level cache unknown): ");
    for (int i = 0; i < plan->nvariants; i++)
        kp_str_printf(s, "%s%s",
                      i == 0                     ? ""
                      : i == plan->nvariants - 1 ? " and "
                                                 : ", ",
                      kp_ceiling_variant(i));
    kp_str_append(s, " over ");
    kp_caps_sizes_text(s, plan);
    kp_str_printf(s, " buffer%s", plan->nsizes == 1 ? "" : "s");
    if (plan->cap == KP_CEILING_CAP_MAX_BYTES)
        kp_str_append(s, " (cut to --max-bytes)");
    else if (plan->cap == KP_CEILING_CAP_DEVICE)
        kp_str_append(s, " (cut to the device's largest allocation or a quarter of its memory)");
    else if (plan->cap == KP_CEILING_CAP_CPU)
        kp_str_append(s, " (a CPU's at most, or its cache's size: source and destination "
                         "together exceed the cache)");
    else if (plan->cache_bytes)
        kp_str_printf(s, " (the first at least %dx the cache)", plan->cache_factor);
    kp_str_printf(s,
                  ", then demo_add over %s, then the FP32 FLOP peak with fma_f32 (%llu threads x "
                  "%u iterations, %.3g GFLOP a dispatch); %d points, each the best of %d timed "
                  "dispatch%s after %d warm-up%s",
                  kp_format_bytes(plan->sizes[plan->nsizes - 1], a, sizeof a),
                  (unsigned long long)plan->fma_threads, (unsigned)plan->fma_iters,
                  kp_ceiling_fma_flops(plan) / 1e9, plan->npoints, plan->iters,
                  plan->iters == 1 ? "" : "es", plan->warmup, plan->warmup == 1 ? "" : "s");
    kp_str_printf(s, "; about %.0f s on an idle machine", secs < 1 ? 1 : secs);
}

void kp_caps_json_plan(kp_json *j, const kp_ceiling_plan *plan, double seconds)
{
    static const char *const capped[] = {NULL, "device", "max_bytes", "cpu"};
    kp_json_object_begin(j, "plan");
    kp_json_string(j, "sized_for", plan->gpu ? "gpu" : "cpu");
    if (plan->cache_bytes)
        kp_json_uint(j, "last_level_cache_bytes", plan->cache_bytes);
    else
        kp_json_null(j, "last_level_cache_bytes");
    kp_json_int(j, "cache_multiple", plan->cache_factor);
    kp_json_array_begin(j, "buffer_bytes");
    for (int i = 0; i < plan->nsizes; i++)
        kp_json_uint(j, NULL, plan->sizes[i]);
    kp_json_array_end(j);
    kp_json_string(j, "capped_by", capped[plan->cap]);
    kp_json_uint(j, "buffer_limit_bytes", plan->cap_bytes);
    kp_json_array_begin(j, "kernels");
    for (int i = 0; i < plan->nvariants; i++)
        kp_json_string(j, NULL, kp_ceiling_variant(i));
    kp_json_string(j, NULL, "demo_add");
    kp_json_string(j, NULL, "fma_f32");
    kp_json_array_end(j);
    kp_json_uint(j, "fma_threads", plan->fma_threads);
    kp_json_uint(j, "fma_iterations", plan->fma_iters);
    kp_json_int(j, "points", plan->npoints);
    kp_json_int(j, "iters", plan->iters);
    kp_json_int(j, "warmup", plan->warmup);
    kp_json_bool(j, "in_cache", plan->in_cache);
    kp_json_double(j, "expected_seconds", seconds);
    kp_json_object_end(j);
}

void kp_caps_json_measure(kp_json *j, const kp_ceiling_result *r, double seconds, int dry_run,
                          const char *store_path)
{
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "backend", r->device.backend);
    kp_json_int(j, "index", r->device.index);
    kp_json_string(j, "device", r->device.name);
    kp_json_bool(j, "dry_run", dry_run);
    kp_caps_json_plan(j, &r->plan, seconds);
    kp_caps_json_peak(j, &r->device);
    if (!dry_run) {
        kp_json_double(j, "ceiling_gb_per_s", r->ceiling.copy_gbs);
        kp_json_uint(j, "ceiling_bytes", r->ceiling.copy_bytes);
        kp_json_double(j, "demo_add_gb_per_s", r->ceiling.demo_add_gbs);
        kp_json_double(j, "demo_add_ms", r->ceiling.demo_add_ms);
        kp_json_string(j, "method", r->ceiling.method);
        if (r->ceiling.fma_gflops > 0)
            kp_json_double(j, "fma_gflop_per_s", r->ceiling.fma_gflops);
        else
            kp_json_null(j, "fma_gflop_per_s");
        kp_json_string(j, "fma_method", r->ceiling.fma_method);
        kp_json_string(j, "store", store_path);
        kp_json_array_begin(j, "points");
        for (int i = 0; i < r->npoints; i++) {
            const kp_ceiling_point *p = &r->points[i];
            kp_json_object_begin(j, NULL);
            kp_json_string(j, "kernel", p->kernel);
            kp_json_uint(j, "bytes", p->bytes);
            kp_run_result_json(j, &p->run, KP_RUN_JSON_CEILING_POINT);
            if (p->gflops > 0) kp_json_double(j, "gflop_per_s", p->gflops);
            kp_json_object_end(j);
        }
        kp_json_array_end(j);
    }
    kp_json_object_end(j);
}
