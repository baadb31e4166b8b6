/*
 * result_write.c — the lab's result files written (see result_file.h): run.json from a run's
 * result, sweep.json from a sweep, bench.json from a bench session's points, each as `kprof run
 * --json`, `kprof sweep --json` and `kprof bench --json` print it (docs/formats/results.md). A
 * run's numbers (in run.json and in every sweep point) are kp_run_result_json's (run_result.c).
 */
#define _GNU_SOURCE
#include "lab/result_file.h"

#include "base/json.h"
#include "core/judge.h"

#include <stdio.h>
#include <string.h>

/* ---- run.json ----------------------------------------------------------------------------- */

kprof_status kp_run_result_write(kp_str *s, const kp_run_file *r, kp_error *err)
{
    const kp_lab_info *info = r->info;
    kp_json j;
    kp_json_init(&j, s, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", KP_RESULT_RUN_VERSION);
    kp_json_string(&j, "kind", "run");
    kp_run_json_header(&j, info);
    kp_run_result_json(&j, r->run, KP_RUN_JSON_RUN);
    kp_json_int(&j, "iterations_asked", r->iters_asked);
    kp_json_double_or_null(&j, "time_budget_s", r->budget_s > 0, r->budget_s);
    kp_json_bool(&j, "time_budget_cut", r->run->iters < r->iters_asked);
    kp_json_object_begin(&j, "compile");
    kp_json_bool(&j, "cache_hit", info->cache_hit);
    kp_json_double(&j, "ms", info->compile_ms);
    kp_json_object_end(&j);
    kp_json_array_begin(&j, "readings");
    for (int i = 0; i < r->nreadings; i++) {
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "id", r->readings[i].id);
        kp_json_string(&j, "text", r->readings[i].text);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "buffers");
    for (int i = 0; i < r->ndigests; i++) {
        const kp_buffer_digest *d = &r->digests[i];
        char hash[24];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)d->hash);
        kp_json_object_begin(&j, NULL);
        kp_json_int(&j, "arg", d->arg);
        kp_json_string(&j, "name", d->name);
        kp_json_string(&j, "type", kp_type_name(d->type));
        kp_json_uint(&j, "count", d->count);
        kp_json_string(&j, "fnv1a64", hash);
        kp_json_double(&j, "sum", d->sum);
        kp_json_double(&j, "min", d->min);
        kp_json_double(&j, "max", d->max);
        kp_json_uint(&j, "nonfinite", d->nonfinite);
        kp_json_array_begin(&j, "first");
        for (int k = 0; k < d->nfirst; k++)
            kp_json_double(&j, NULL, d->first[k]);
        kp_json_array_end(&j);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    if (r->source) kp_hotspots_json(&j, "hotspots", r->hotspots, r->source_why);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    return s->failed ? kp_error_set(err, KPROF_NOMEM, "out of memory writing JSON") : KPROF_OK;
}

/* ---- bench.json ------------------------------------------------------------------------- */

/* The engine's reasons as a list of their names. */
static void kp_bench_json_reasons(kp_json *j, const char *key, unsigned reasons)
{
    kp_json_array_begin(j, key);
    for (unsigned bit = 1; bit && bit <= reasons; bit <<= 1)
        if (reasons & bit) kp_json_string(j, NULL, kp_judge_reason_name(bit));
    kp_json_array_end(j);
}

/* A side's shape: its blocks, halves, modes, and why its run is not stable (if it is not). */
static void kp_bench_json_shape(kp_json *j, const char *key, const kp_shape *sh, double busy,
                                double threshold)
{
    kp_json_object_begin(j, key);
    kp_json_uint(j, "block", sh->block);
    kp_json_uint(j, "blocks", sh->blocks);
    kp_json_double(j, "acf1", sh->acf1);
    if (sh->have_halves) {
        kp_json_array_begin(j, "halves_ms");
        kp_json_double(j, NULL, sh->half[0].value);
        kp_json_double(j, NULL, sh->half[1].value);
        kp_json_array_end(j);
    }
    kp_json_bool(j, "drifting", sh->drifting);
    kp_json_array_begin(j, "modes");
    for (int m = 0; m < sh->modes && sh->modes == 2; m++) {
        kp_json_object_begin(j, NULL);
        kp_json_double(j, "at_ms", sh->mode[m]);
        kp_json_double(j, "share", sh->mode_share[m]);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_bench_json_reasons(j, "unstable",
                          kp_judge_unstable(sh, busy, KP_JUDGE_BUSY_LIMIT, threshold));
    kp_json_object_end(j);
}

static void kp_bench_json_side(kp_json *j, const kp_bench_session *bs,
                               const kp_bench_result_meta *m, const kp_bench_row *row,
                               const kp_bench_side *s, const kp_counters *c, const char *label,
                               const char *source, const char *entry)
{
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "label", label);
    kp_json_string(j, "source", source);
    kp_json_string(j, "entry", entry);
    kp_json_double(j, "median_ms", s->median.value);
    kp_json_array_begin(j, "ci_ms");
    kp_json_double(j, NULL, s->median.lo);
    kp_json_double(j, NULL, s->median.hi);
    kp_json_array_end(j);
    kp_json_double(j, "min_ms", s->stats.min);
    kp_json_double(j, "p90_ms", s->stats.p90);
    kp_json_double(j, "max_ms", s->stats.max);
    kp_json_double(j, "mean_ms", s->stats.mean);
    kp_json_double(j, "stddev_ms", s->stats.stddev);
    kp_json_double(j, "noise", s->noise);
    kp_json_double(j, "rsd", s->rsd);
    kp_json_uint(j, "samples", s->n);
    kp_json_uint(j, "taken", s->taken);
    kp_json_uint(j, "rounds", s->rounds);
    kp_json_uint(j, "throttled", s->throttled);
    kp_json_double(j, "gpu_time_s", s->gpu_s);
    kp_bench_json_shape(j, "shape", &s->shape, row->outcome.busy_cpus, bs->plan->cfg.threshold);
    if (s->nruns >= 2) {
        kp_json_array_begin(j, "run_medians_ms");
        for (int k = 0; k < s->nruns; k++)
            kp_json_double(j, NULL, s->run_median[k]);
        kp_json_array_end(j);
    }
    if (row->cold) kp_json_double(j, "flush_ms", s->flush_ms);
    if (s->clock_mhz > 0) {
        kp_json_double(j, "clock_mhz", s->clock_mhz);
        kp_json_double(j, "min_clock_mhz", s->min_clock_mhz);
        kp_json_double(j, "default_clock_mhz", s->default_clock_mhz);
    } else {
        kp_json_null(j, "clock_mhz");
        kp_json_string(j, "clock_note", s->clock_note);
    }
    kp_json_double(j, "gbps", kp_bench_row_gbps(row, s));
    if (row->flops > 0) kp_json_double(j, "gflops", kp_bench_row_gflops(row, s));
    kp_json_array_begin(j, "samples_ms");
    for (size_t i = 0; i < s->n; i++)
        kp_json_double(j, NULL, s->ms[i]);
    kp_json_array_end(j);
    if (s->mhz && s->clock_mhz > 0) {
        kp_json_array_begin(j, "clock_samples_mhz");
        for (size_t i = 0; i < s->n; i++)
            kp_json_double(j, NULL, s->mhz[i]);
        kp_json_array_end(j);
    }
    if (c) {
        kp_readings_input in;
        kp_readings rd;
        kp_bench_row_readings(row, s, c, m->ceiling_gbs, m->peak_gflops,
                              bs->info.device.cache_bytes, &in, &rd);
        kp_counters_json(j, "counters", c, &in, &rd);
    }
    kp_json_object_end(j);
}

static void kp_bench_json_comparison(kp_json *j, const char *key, const kp_bench_outcome *o,
                                     const kp_bench_config *cfg)
{
    kp_json_object_begin(j, key);
    kp_json_double(j, "ratio", o->ratio.value);
    kp_json_array_begin(j, "ci");
    kp_json_double(j, NULL, o->ratio.lo);
    kp_json_double(j, NULL, o->ratio.hi);
    kp_json_array_end(j);
    kp_json_double(j, "threshold", cfg->threshold);
    kp_json_bool(j, "paired", o->paired);
    kp_json_string(j, "time_verdict", kp_compare_verdict_name(o->verdict));
    if (o->have_cycles) {
        kp_json_double(j, "cycles_ratio", o->cycles_ratio.value);
        kp_json_array_begin(j, "cycles_ci");
        kp_json_double(j, NULL, o->cycles_ratio.lo);
        kp_json_double(j, NULL, o->cycles_ratio.hi);
        kp_json_array_end(j);
        kp_json_string(j, "cycles_verdict", kp_compare_verdict_name(o->cycles_verdict));
    } else {
        kp_json_null(j, "cycles_ratio");
    }
    kp_json_string(j, "verdict", kp_compare_verdict_name(o->final_verdict));
    kp_json_string(j, "interval_verdict", kp_compare_verdict_name(o->judgement.interval_verdict));
    kp_bench_json_reasons(j, "reasons", o->judgement.reasons);
    kp_json_string(j, "reason", o->judgement.reason);
    kp_json_array_begin(j, "sample_ci");
    kp_json_double(j, NULL, o->judgement.sample_ratio.lo);
    kp_json_double(j, NULL, o->judgement.sample_ratio.hi);
    kp_json_array_end(j);
    kp_json_bool(j, "across_runs", o->across_runs);
    kp_json_bool(j, "separate_sessions", o->separate_sessions);
    kp_json_int(j, "runs", o->judgement.runs);
    kp_json_bool(j, "one_run_a_side", (o->judgement.notes & KP_JUDGE_NOTE_ONE_RUN) != 0);
    kp_json_double_or_null(j, "busy_cpus", o->busy_cpus >= 0, o->busy_cpus);
    kp_json_object_end(j);
}

kprof_status kp_bench_result_write(kp_str *out, const kp_bench_session *bs,
                                   const kp_bench_result_meta *m, kp_error *err)
{
    const kp_bench_plan *plan = bs->plan;
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "bench");
    kp_json_string(&j, "device", bs->info.device.name);
    kp_json_string(&j, "backend", bs->info.device.backend);
    kp_json_int(&j, "device_index", bs->info.device.index);
    kp_json_string(&j, "timer", bs->info.timer);
    if (plan->replay && bs->info.replay) { /* a captured launch: each side's output check */
        kp_json_object_begin(&j, "replay");
        kp_json_string(&j, "capture", bs->info.replay_dir);
        kp_json_array_begin(&j, "checks");
        for (int s = 0; s < 2; s++)
            if (bs->replay_text[s][0]) kp_json_string(&j, NULL, bs->replay_text[s]);
        kp_json_array_end(&j);
        kp_json_bool(&j, "identical",
                     bs->info.replay_check.have && bs->info.replay_check.differing == 0);
        kp_json_object_end(&j);
    }
    kp_json_object_begin(&j, "config");
    kp_json_double(&j, "max_noise", plan->cfg.max_noise);
    kp_json_double(&j, "min_time_s", plan->cfg.min_time_s);
    kp_json_int(&j, "min_samples", plan->cfg.min_samples);
    kp_json_double(&j, "timeout_s", plan->cfg.timeout_s);
    kp_json_int(&j, "warmup", plan->cfg.warmup);
    kp_json_double(&j, "throttle_fraction", plan->cfg.throttle_fraction);
    kp_json_double(&j, "threshold", plan->cfg.threshold);
    kp_json_string(&j, "grid", plan->grid);
    kp_json_string(&j, "tg", plan->tg);
    kp_json_string(&j, "buffers", plan->buffers);
    kp_json_string(&j, "bytes", plan->bytes_expr);
    kp_json_string(&j, "flops", plan->flops_expr);
    kp_json_string(&j, "compare", m->compare_file);
    kp_json_object_end(&j);
    kp_json_array_begin(&j, "axes");
    for (int i = 0; i < plan->naxes; i++) {
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "name", plan->axes[i].name);
        kp_json_array_begin(&j, "values");
        for (int k = 0; k < plan->axes[i].nvalues; k++)
            kp_json_string(&j, NULL, plan->axes[i].values[k].text);
        kp_json_array_end(&j);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < bs->nrows; i++) {
        const kp_bench_row *row = &bs->rows[i];
        kp_json_object_begin(&j, NULL);
        char vt[256];
        kp_bench_vars_text(&row->vars, vt, sizeof vt);
        kp_json_string(&j, "point", vt);
        kp_json_object_begin(&j, "axes");
        for (int k = 0; k < row->vars.n; k++) {
            const kp_var *v = &row->vars.v[k];
            if (v->numeric)
                kp_json_double(&j, v->name, v->value);
            else
                kp_json_string(&j, v->name, v->text);
        }
        kp_json_object_end(&j);
        kp_json_string(&j, "cache", row->cold ? "cold" : "hot");
        kp_json_array_begin(&j, "grid");
        for (int d = 0; d < row->launch.dims; d++)
            kp_json_uint(&j, NULL, row->launch.grid[d]);
        kp_json_array_end(&j);
        kp_json_array_begin(&j, "tg");
        for (int d = 0; d < row->launch.dims; d++)
            kp_json_uint(&j, NULL, row->launch.tg[d]);
        kp_json_array_end(&j);
        kp_json_uint(&j, "bytes", row->bytes);
        kp_json_bool(&j, "bytes_assumed", row->bytes_assumed);
        if (row->flops > 0) kp_json_double(&j, "flops", row->flops);
        kp_json_string(&j, "stop", kp_bench_stop_name(row->outcome.stop));
        kp_json_double(&j, "wall_s", row->outcome.wall_s);
        /* The CPUs other processes took while this point was measured (whatever the device),
         * and the host's. */
        kp_json_double_or_null(&j, "other_cpus", row->outcome.measured_busy_cpus >= 0,
                               row->outcome.measured_busy_cpus);
        kp_json_double(&j, "host_cpus", row->outcome.ncpus);
        kp_json_array_begin(&j, "kernels");
        for (int s = 0; s < row->nsides; s++)
            kp_bench_json_side(&j, bs, m, row, &row->side[s], row->counters[s],
                               row->nsides == 2 ? (s ? "B" : "A") : "", bs->source[s],
                               bs->entry_name[s]);
        kp_json_array_end(&j);
        if (row->nsides == 2)
            kp_bench_json_comparison(&j, "comparison", &row->outcome, &plan->cfg);
        else if (row->have_old)
            kp_bench_json_comparison(&j, "comparison", &row->old_outcome, &plan->cfg);
        else
            kp_json_null(&j, "comparison");
        if (m->fail_if_slower >= 0) kp_json_bool(&j, "fails_gate", row->slower_gate);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
    return out->failed ? kp_error_set(err, KPROF_NOMEM, "out of memory writing JSON") : KPROF_OK;
}

/* ---- sweep.json ------------------------------------------------------------------------- */

int kp_sweep_above_ceiling(const kp_sweep_point *p, char *buf, size_t n)
{
    if (!p->measured || p->run.readings.bandwidth != KP_BANDWIDTH_ABOVE) return 0;
    kp_readings_input in = p->run.readings_in;
    in.limiter = p->run.refl.limiter; /* the point was copied: read its own (run_result.h) */
    kp_reading_line lines[16];
    int nl = kp_readings_describe(&in, &p->run.readings, lines, 16);
    for (int k = 0; k < nl; k++)
        if (strcmp(lines[k].id, "above_ceiling") == 0) {
            snprintf(buf, n, "%s", lines[k].text);
            return 1;
        }
    return 0;
}

static void kp_sweep_json_tg(kp_json *j, const char *key, const kp_sweep_point *p)
{
    kp_json_array_begin(j, key);
    for (int d = 0; d < p->run.launch.dims; d++)
        kp_json_uint(j, NULL, p->run.launch.tg[d]);
    kp_json_array_end(j);
}

kprof_status kp_sweep_result_write(kp_str *out, const kp_sweep *s, int complete, const char *signal,
                                   kp_error *err)
{
    const kp_lab_info *info = &s->info;
    int measured = 0;
    for (int i = 0; i < s->npoints; i++)
        measured += s->points[i].measured;
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", KP_RESULT_SWEEP_VERSION);
    kp_json_string(&j, "kind", "sweep");
    kp_run_json_header(&j, info);
    kp_json_bool(&j, "complete", complete);
    kp_json_string(&j, "signal", signal); /* NULL: null */
    kp_json_array_begin(&j, "grid");
    for (int d = 0; d < s->points[0].run.launch.dims; d++)
        kp_json_uint(&j, NULL, s->points[0].run.launch.grid[d]);
    kp_json_array_end(&j);
    kp_json_int(&j, "iterations", s->iters); /* asked; each point's "iterations" ran */
    kp_json_int(&j, "warmup", s->warmup);
    double budget = s->cfg.budget_s;
    kp_json_double_or_null(&j, "time_budget_s", budget > 0, budget);
    int cut = 0;
    for (int i = 0; i < s->npoints; i++)
        cut |= s->points[i].measured && s->points[i].run.iters < s->iters;
    kp_json_bool(&j, "time_budget_cut", cut);
    kp_json_uint(&j, "bytes", s->bytes);
    kp_json_bool(&j, "bytes_assumed_once_per_element", s->bytes_assumed);
    kp_json_double_or_null(&j, "ceiling_gb_per_s", s->ceiling_gbs > 0, s->ceiling_gbs);
    kp_json_uint(&j, "kernel_max_threadgroup_size", s->kernel_max_tg);
    kp_json_uint(&j, "device_max_threadgroup_size", info->device.max_tg);
    kp_run_json_tg_rule(&j, &s->refl);
    kp_json_uint(&j, "static_local_bytes", s->refl.static_local);
    kp_json_uint(&j, "dynamic_local_bytes", s->refl.dynamic_local);
    if (s->your_tg >= 0)
        kp_sweep_json_tg(&j, "your_threadgroup", &s->points[s->your_tg]);
    else
        kp_json_null(&j, "your_threadgroup");
    kp_json_int(&j, "sizes_planned", s->npoints);
    kp_json_int(&j, "sizes_measured", measured);
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_json_object_begin(&j, NULL);
        kp_run_result_json(&j, &p->run, KP_RUN_JSON_SWEEP_POINT);
        kp_json_bool(&j, "best", p->best);
        kp_json_bool(&j, "tie", p->tie);
        kp_json_bool(&j, "your_tg", i == s->your_tg);
        char why[sizeof((kp_reading_line *)0)->text];
        int above = kp_sweep_above_ceiling(p, why, sizeof why); /* `kprof run`'s reading */
        kp_json_string(&j, "above_ceiling_reason", above ? why : NULL);
        /* The median's 95% interval: what "tie" compares. */
        kp_json_double_or_null(&j, "gpu_ms_median_ci_low", p->have_ci, p->median_ci.lo);
        kp_json_double_or_null(&j, "gpu_ms_median_ci_high", p->have_ci, p->median_ci.hi);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    /* Fewer than two sizes measured: no comparison, so no best (best_threadgroup null). */
    kp_json_bool(&j, "compared", measured >= 2);
    if (s->best >= 0)
        kp_sweep_json_tg(&j, "best_threadgroup", &s->points[s->best]);
    else
        kp_json_null(&j, "best_threadgroup");
    kp_json_array_begin(&j, "warnings");
    for (int i = 0; i < s->nwarnings; i++) {
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "id", s->warnings[i].id);
        kp_json_string(&j, "text", s->warnings[i].text);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    return out->failed ? kp_error_set(err, KPROF_NOMEM, "out of memory writing JSON") : KPROF_OK;
}
