/*
 * run_result.c — a run's numbers (see run_result.h): computed from the timings, and written to
 * JSON by one function in the forms users and scripts already read. The forms are tables of
 * (number, key) below, side by side: where two forms give the same number different keys, or one
 * key two numbers, the tables show it and the comments say so. The keys are kept as they were
 * until someone decides to change them.
 */
#include "lab/run_result.h"

#include <stdio.h>
#include <string.h>

void kp_run_result_time(kp_run_result *r, const double *samples_ms, size_t n, double *scratch)
{
    kp_stats_compute(samples_ms, n, scratch, &r->stats);
    /* kp_stats_compute leaves scratch sorted. */
    r->p10 = kp_quantile_sorted(scratch, n, 0.10);
    r->p90 = kp_quantile_sorted(scratch, n, 0.90);
}

void kp_run_result_bandwidth(kp_run_result *r, uint64_t bytes, int bytes_assumed,
                             double ceiling_gbs)
{
    r->bytes = bytes;
    r->bytes_assumed = bytes_assumed;
    r->ceiling_gbs = ceiling_gbs;
    r->gbps = r->stats.median > 0 ? (double)r->bytes / (r->stats.median * 1e-3) / 1e9 : 0;
}

double kp_run_result_ceiling_percent(const kp_run_result *r)
{
    return r->ceiling_gbs > 0 ? 100 * r->gbps / r->ceiling_gbs : 0;
}

void kp_run_result_read(kp_run_result *r, const kp_device_info *dev, uint64_t working_set,
                        uint64_t grid_bytes, uint64_t grid_threads)
{
    r->readings_in = (kp_readings_input){
        .median_ms = r->stats.median,
        .gbps = r->gbps,
        .bytes_assumed = r->bytes_assumed,
        .bytes = r->bytes,
        .working_set = working_set,
        .grid_bytes = grid_bytes,
        .grid_threads = grid_threads,
        .cache_bytes = dev->cache_bytes,
        .ceiling_gbs = r->ceiling_gbs,
        /* A maximum the kernel declares is no sign of register pressure. */
        .kernel_max_tg = kp_reflection_limit_declared(&r->refl) ? 0 : r->refl.max_tg,
        .device_max_tg = dev->max_tg,
        .static_local = r->refl.static_local,
        .device_local = dev->local_mem,
        .have_occupancy = r->refl.have_occupancy,
        .occupancy = r->refl.occupancy,
        .limiter = r->refl.limiter,
        /* A kernel that takes one size only has nothing to sweep. */
        .single_tg = r->refl.tg_rule != KP_TG_RULE_REQUIRED,
        .not_gpu = !dev->is_gpu,
    };
    if (r->counters) kp_counters_apply(r->counters, r->peak_gflops, &r->readings_in);
    kp_readings_compute(&r->readings_in, &r->readings);
}

void kp_run_json_header(kp_json *j, const kp_lab_info *info)
{
    kp_json_string(j, "kprof_version", KPROF_VERSION_STRING);
    kp_json_object_begin(j, "device");
    kp_json_string(j, "name", info->device.name);
    kp_json_int(j, "index", info->device.index);
    kp_json_string(j, "vendor", info->device.vendor);
    kp_json_string(j, "driver", info->device.driver);
    kp_json_string(j, "platform", info->device.platform);
    kp_json_object_end(j);
    kp_json_string(j, "backend", info->device.backend);
    kp_json_string(j, "source", info->source_path);
    kp_json_string(j, "entry", info->kernel->name);
    kp_json_string(j, "timer", info->timer);
    if (!info->replay) return;
    /* A replayed capture: where it came from, and its output check (once, at the captured
     * geometry, before the timed dispatches). */
    kp_json_string(j, "capture", info->replay_dir);
    kp_json_object_begin(j, "replay_check");
    kp_json_bool(j, "checked", info->replay_check.have);
    kp_json_bool(j, "identical", info->replay_check.have && info->replay_check.differing == 0);
    kp_json_uint(j, "bytes", info->replay_check.bytes);
    kp_json_uint(j, "differing", info->replay_check.differing);
    kp_json_string(j, "worst", info->replay_worst[0] ? info->replay_worst : NULL);
    kp_json_uint(j, "worst_differing", info->replay_check.worst_bytes);
    kp_json_string(j, "text", info->replay_text);
    kp_json_int(j, "not_captured", info->replay_missing);
    kp_json_object_end(j);
}

void kp_run_json_tg_rule(kp_json *j, const kp_reflection *r)
{
    if (r->tg_rule == KP_TG_RULE_NONE) {
        kp_json_null(j, "threadgroup_rule");
        return;
    }
    kp_json_object_begin(j, "threadgroup_rule");
    kp_json_string(j, "kind", r->tg_rule == KP_TG_RULE_REQUIRED ? "required" : "max");
    kp_json_array_begin(j, "size");
    for (int d = 0; d < 3; d++)
        kp_json_uint(j, NULL, r->tg_rule_size[d]);
    kp_json_array_end(j);
    kp_json_uint(j, "threads", kp_tg_rule_threads(r));
    kp_json_string(j, "from", r->tg_rule_from ? r->tg_rule_from : "");
    kp_json_object_end(j);
}

/* A number of a run, as JSON can carry it. Numbers that only exist some of the time (a
 * ceiling's share, occupancy) leave their key out when absent unless they say null. */
typedef enum kp_run_number {
    KP_RUN_GRID,                /* [x, y, z]: the launch's dimensions only */
    KP_RUN_THREADGROUP,         /* [x, y, z] likewise */
    KP_RUN_THREADGROUP_X,       /* the first dimension alone, a number (1-D launches) */
    KP_RUN_THREADS,             /* threads per threadgroup */
    KP_RUN_ITERATIONS,          /* timed dispatches */
    KP_RUN_WARMUP,              /* untimed dispatches before them */
    KP_RUN_MEDIAN_MS,           /* stats.median */
    KP_RUN_MIN_MS,              /* stats.min: the fastest dispatch */
    KP_RUN_P10_MS,              /* p10, interpolated */
    KP_RUN_P90_MS,              /* stats.p90, the order statistic */
    KP_RUN_P90_INTERPOLATED_MS, /* p90, interpolated */
    KP_RUN_MAX_MS,              /* stats.max */
    KP_RUN_MEAN_MS,             /* stats.mean */
    KP_RUN_STDDEV_MS,           /* stats.stddev */
    KP_RUN_SAMPLES_MS,          /* [every timing in dispatch order] */
    KP_RUN_BYTES,               /* bytes per dispatch */
    KP_RUN_BYTES_ASSUMED,       /* bool */
    KP_RUN_GB_PER_S,            /* gbps */
    KP_RUN_CEILING_GB_PER_S,    /* the ceiling, or null */
    KP_RUN_CEILING_PERCENT,     /* gbps's share of it; left out without one */
    KP_RUN_WORKING_SET,         /* readings: the buffers' total bytes */
    KP_RUN_GRID_TOUCH,          /* readings: what the grid touches */
    KP_RUN_CACHE_BYTES,         /* readings: the last-level cache, or null */
    KP_RUN_NOT_DRAM_REASONS,    /* readings: ["grid_short", ...] */
    KP_RUN_REFLECTION,          /* an object: the kernel's limits, memory and occupancy */
    KP_RUN_OCCUPANCY,           /* theoretical occupancy, 0..1; left out without it */
    KP_RUN_OCCUPANCY_LIMITER,   /* the resource that limits it; left out without it */
    KP_RUN_COUNTERS,            /* an object (lab/counters.h); left out when not asked for */
} kp_run_number;

typedef struct kp_run_key {
    kp_run_number number;
    const char *key;
} kp_run_key;

/* run.json, between its header and its "compile". */
static const kp_run_key kp_run_form_run[] = {
    {KP_RUN_GRID, "grid"},
    {KP_RUN_THREADGROUP, "threadgroup"},
    {KP_RUN_ITERATIONS, "iterations"},
    {KP_RUN_WARMUP, "warmup"},
    {KP_RUN_MEDIAN_MS, "gpu_ms_median"},
    {KP_RUN_MIN_MS, "gpu_ms_min"},
    {KP_RUN_P90_MS, "gpu_ms_p90"}, /* the order statistic; a sweep point's is interpolated */
    {KP_RUN_MAX_MS, "gpu_ms_max"},
    {KP_RUN_MEAN_MS, "gpu_ms_mean"},
    {KP_RUN_STDDEV_MS, "gpu_ms_stddev"},
    {KP_RUN_SAMPLES_MS, "gpu_ms_samples"},
    {KP_RUN_BYTES, "bytes"},
    {KP_RUN_BYTES_ASSUMED, "bytes_assumed_once_per_element"},
    {KP_RUN_GB_PER_S, "approx_gb_per_s"},
    {KP_RUN_CEILING_GB_PER_S, "ceiling_gb_per_s"},
    {KP_RUN_CEILING_PERCENT, "ceiling_percent"},
    /* The sizes the bandwidth reading weighs, and the reasons it found that ~GB/s touched is
     * not DRAM traffic (whatever the share of the ceiling). */
    {KP_RUN_WORKING_SET, "working_set_bytes"},
    {KP_RUN_GRID_TOUCH, "grid_touch_bytes"},
    {KP_RUN_CACHE_BYTES, "last_level_cache_bytes"},
    {KP_RUN_NOT_DRAM_REASONS, "not_dram_reasons"},
    {KP_RUN_REFLECTION, "reflection"}, /* occupancy inside it; a sweep point's at its top */
    {KP_RUN_COUNTERS, "counters"},
};

/* A point of sweep.json, before its "best", "tie" and "your_tg". */
static const kp_run_key kp_run_form_sweep_point[] = {
    {KP_RUN_THREADGROUP, "threadgroup"},
    {KP_RUN_THREADS, "threads"},
    {KP_RUN_ITERATIONS, "iterations"}, /* timed dispatches: fewer where the time budget cut them */
    {KP_RUN_MEDIAN_MS, "gpu_ms_median"},
    {KP_RUN_MIN_MS, "gpu_ms_min"},
    {KP_RUN_P10_MS, "gpu_ms_p10"},
    {KP_RUN_P90_INTERPOLATED_MS, "gpu_ms_p90"}, /* run.json's gpu_ms_p90 is the order statistic */
    {KP_RUN_GB_PER_S, "approx_gb_per_s"},
    {KP_RUN_CEILING_PERCENT, "ceiling_percent"},
    {KP_RUN_OCCUPANCY, "occupancy"},
    {KP_RUN_OCCUPANCY_LIMITER, "occupancy_limiter"},
    {KP_RUN_COUNTERS, "counters"},
};

/* A point of `caps --measure --json`, after its "kernel" and "bytes" (one buffer's size, where
 * run.json's "bytes" is what a dispatch touches). Its names differ from the other two forms':
 * "tg" (a number) for "threadgroup" (an array), "best_ms" for "gpu_ms_min", "median_ms" for
 * "gpu_ms_median", and "gb_per_s" for "approx_gb_per_s" — figured over the fastest dispatch of a
 * copy (over the median for demo_add: ceiling.c), where approx_gb_per_s is over the median. */
static const kp_run_key kp_run_form_ceiling_point[] = {
    {KP_RUN_THREADGROUP_X, "tg"},
    {KP_RUN_MIN_MS, "best_ms"},
    {KP_RUN_MEDIAN_MS, "median_ms"},
    {KP_RUN_GB_PER_S, "gb_per_s"},
};

/* run.json's "reflection" object. */
static void kp_run_json_reflection(kp_json *j, const char *key, const kp_run_result *r)
{
    const kp_reflection *refl = &r->refl;
    kp_json_object_begin(j, key);
    kp_json_uint(j, "max_threadgroup_size", refl->max_tg);
    kp_json_uint(j, "device_max_threadgroup_size", r->readings_in.device_max_tg);
    kp_run_json_tg_rule(j, refl);
    kp_json_uint(j, "preferred_multiple", refl->preferred_multiple);
    kp_json_uint(j, "static_local_bytes", refl->static_local);
    kp_json_uint(j, "dynamic_local_bytes", refl->dynamic_local);
    kp_json_uint(j, "private_bytes", refl->private_bytes);
    if (refl->have_registers) {
        kp_json_int(j, "registers", refl->registers);
        kp_json_uint(j, "const_bytes", refl->const_bytes);
        kp_json_int(j, "ptx_version", refl->ptx_version);
        kp_json_int(j, "binary_version", refl->binary_version);
    }
    if (refl->have_occupancy) {
        kp_json_double(j, "occupancy", refl->occupancy);
        kp_json_int(j, "blocks_per_sm", refl->blocks_per_sm);
        kp_json_string(j, "occupancy_limiter", refl->limiter);
    }
    kp_json_object_end(j);
}

static void kp_run_json_number(kp_json *j, const kp_run_result *r, kp_run_number number,
                               const char *key)
{
    const kp_launch *l = &r->launch;
    switch (number) {
    case KP_RUN_GRID:
        kp_json_array_begin(j, key);
        for (int d = 0; d < l->dims; d++)
            kp_json_uint(j, NULL, l->grid[d]);
        kp_json_array_end(j);
        break;
    case KP_RUN_THREADGROUP:
        kp_json_array_begin(j, key);
        for (int d = 0; d < l->dims; d++)
            kp_json_uint(j, NULL, l->tg[d]);
        kp_json_array_end(j);
        break;
    case KP_RUN_THREADGROUP_X:
        kp_json_uint(j, key, l->tg[0]);
        break;
    case KP_RUN_THREADS:
        kp_json_uint(j, key, kp_launch_tg_threads(l));
        break;
    case KP_RUN_ITERATIONS:
        kp_json_int(j, key, r->iters);
        break;
    case KP_RUN_WARMUP:
        kp_json_int(j, key, r->warmup);
        break;
    case KP_RUN_MEDIAN_MS:
        kp_json_double(j, key, r->stats.median);
        break;
    case KP_RUN_MIN_MS:
        kp_json_double(j, key, r->stats.min);
        break;
    case KP_RUN_P10_MS:
        kp_json_double(j, key, r->p10);
        break;
    case KP_RUN_P90_MS:
        kp_json_double(j, key, r->stats.p90);
        break;
    case KP_RUN_P90_INTERPOLATED_MS:
        kp_json_double(j, key, r->p90);
        break;
    case KP_RUN_MAX_MS:
        kp_json_double(j, key, r->stats.max);
        break;
    case KP_RUN_MEAN_MS:
        kp_json_double(j, key, r->stats.mean);
        break;
    case KP_RUN_STDDEV_MS:
        kp_json_double(j, key, r->stats.stddev);
        break;
    case KP_RUN_SAMPLES_MS:
        kp_json_array_begin(j, key);
        for (int i = 0; r->samples && i < r->iters; i++)
            kp_json_double(j, NULL, r->samples[i]);
        kp_json_array_end(j);
        break;
    case KP_RUN_BYTES:
        kp_json_uint(j, key, r->bytes);
        break;
    case KP_RUN_BYTES_ASSUMED:
        kp_json_bool(j, key, r->bytes_assumed);
        break;
    case KP_RUN_GB_PER_S:
        kp_json_double(j, key, r->gbps);
        break;
    case KP_RUN_CEILING_GB_PER_S:
        if (r->ceiling_gbs > 0)
            kp_json_double(j, key, r->ceiling_gbs);
        else
            kp_json_null(j, key);
        break;
    case KP_RUN_CEILING_PERCENT:
        if (r->ceiling_gbs > 0) kp_json_double(j, key, kp_run_result_ceiling_percent(r));
        break;
    case KP_RUN_WORKING_SET:
        kp_json_uint(j, key, r->readings_in.working_set);
        break;
    case KP_RUN_GRID_TOUCH:
        kp_json_uint(j, key, r->readings_in.grid_bytes);
        break;
    case KP_RUN_CACHE_BYTES:
        if (r->readings_in.cache_bytes)
            kp_json_uint(j, key, r->readings_in.cache_bytes);
        else
            kp_json_null(j, key);
        break;
    case KP_RUN_NOT_DRAM_REASONS:
        kp_json_array_begin(j, key);
        if (r->readings.grid_short) kp_json_string(j, NULL, "grid_short");
        if (r->readings.fits_cache) kp_json_string(j, NULL, "fits_cache");
        if (r->readings.bytes_overstate) kp_json_string(j, NULL, "bytes_overstate");
        if (r->readings.unexplained) kp_json_string(j, NULL, "above_ceiling");
        kp_json_array_end(j);
        break;
    case KP_RUN_REFLECTION:
        kp_run_json_reflection(j, key, r);
        break;
    case KP_RUN_OCCUPANCY:
        if (r->refl.have_occupancy) kp_json_double(j, key, r->refl.occupancy);
        break;
    case KP_RUN_OCCUPANCY_LIMITER:
        if (r->refl.have_occupancy) kp_json_string(j, key, r->refl.limiter);
        break;
    case KP_RUN_COUNTERS:
        if (r->counters && r->counters->read)
            kp_counters_json(j, key, r->counters, &r->readings_in, &r->readings);
        break;
    }
}

void kp_run_result_json(kp_json *j, const kp_run_result *r, kp_run_json_form form)
{
    const kp_run_key *keys = kp_run_form_run;
    size_t n = sizeof kp_run_form_run / sizeof kp_run_form_run[0];
    if (form == KP_RUN_JSON_SWEEP_POINT) {
        keys = kp_run_form_sweep_point;
        n = sizeof kp_run_form_sweep_point / sizeof kp_run_form_sweep_point[0];
    } else if (form == KP_RUN_JSON_CEILING_POINT) {
        keys = kp_run_form_ceiling_point;
        n = sizeof kp_run_form_ceiling_point / sizeof kp_run_form_ceiling_point[0];
    }
    for (size_t i = 0; i < n; i++)
        kp_run_json_number(j, r, keys[i].number, keys[i].key);
}
