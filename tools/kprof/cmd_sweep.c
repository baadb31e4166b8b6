/*
 * cmd_sweep.c — `kprof run --sweep-tg` and its alias `kprof sweep`: one kernel at a fixed grid
 * across threadgroup sizes, as a table (median and min GPU ms, ~GB/s, % of the measured
 * ceiling, occupancy and its limiter on CUDA, the best point and its ties), JSON (sweep.json in
 * the kernel folder) and an SVG plot.
 */
#include "core/format.h"
#include "core/outfile.h"
#include "core/readings.h"
#include "export/json.h"
#include "export/svg.h"
#include "export/text.h"
#include "lab/sweep.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct kp_sweep_run {
    const kp_lab_info *info;
    kp_sweep_point points[KP_SWEEP_MAX_POINTS];
    int npoints;
    int best;
    uint64_t bytes;
    int bytes_assumed;
    double ceiling_gbs;
    uint64_t kernel_max_tg;
    uint64_t static_local;
    int iters, warmup;
    char skipped[512]; /* default sizes left out (non-multiples of the grid) */
    kp_reading_line warnings[4];
    int nwarnings;
} kp_sweep_run;

static void kp_tg_label(const kp_sweep_point *p, char *buf, size_t n)
{
    kp_dims_text(p->launch.tg, p->launch.dims, buf, n);
}

static void kp_sweep_print(const kp_sweep_run *s, int measured_only)
{
    const kp_lab_info *info = s->info;
    FILE *o = stdout;
    const char *B = kp_text_bold(o), *R = kp_text_reset(o), *D = kp_text_dim(o);
    char g[64];
    kp_dims_text(s->points[0].launch.grid, s->points[0].launch.dims, g, sizeof g);
    printf("%s%s%s on %s %s(%s device %d)%s, grid %s, %d timed after %d warm-up%s per point\n",
           B, info->kernel->name, R, info->device.name, D, info->device.backend,
           info->device.index, R, g, s->iters, s->warmup, s->warmup == 1 ? "" : "s");
    int occ = 0;
    for (int i = 0; i < s->npoints; i++) occ |= s->points[i].refl.have_occupancy;
    printf("  %-12s %14s %12s %10s", "tg", "GPU ms median", "min", "~GB/s");
    if (s->ceiling_gbs > 0) printf(" %9s", "% ceiling");
    if (occ) printf("  %-24s", "occupancy (limiter)");
    printf("\n");
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (measured_only && !p->measured) continue;
        char tg[48];
        kp_tg_label(p, tg, sizeof tg);
        if (!p->measured) {
            printf("  %-12s %14s\n", tg, "-");
            continue;
        }
        printf("  %-12s %s%14.4f%s %12.4f %10.1f", tg, p->best ? B : "", p->stats.median,
               p->best ? R : "", p->stats.min, p->gbps);
        if (s->ceiling_gbs > 0) printf(" %8.0f%%", p->ceiling_pct);
        if (occ) {
            char cell[64] = "-";
            if (p->refl.have_occupancy)
                snprintf(cell, sizeof cell, "%3.0f%% (%s)", 100 * p->refl.occupancy,
                         p->refl.limiter);
            printf("  %-24s", cell);
        }
        if (p->best) printf("  %s◀ best%s", B, R);
        else if (p->tie) printf("  ◀ tie (within the spread)");
        printf("\n");
    }
    if (s->skipped[0]) printf("  left out: %s\n", s->skipped);
    for (int i = 0; i < s->nwarnings; i++) printf("  ! %s\n", s->warnings[i].text);
    if (s->best >= 0) {
        int ties = 0;
        for (int i = 0; i < s->npoints; i++) ties += s->points[i].tie;
        char tg[48];
        kp_tg_label(&s->points[s->best], tg, sizeof tg);
        if (ties)
            printf("  best tg %s; %d other size%s within the measured spread (p10..p90): a "
                   "tie, not a difference\n",
                   tg, ties, ties == 1 ? " is" : "s are");
        else
            printf("  best tg %s\n", tg);
    }
}

/* complete: 0 when the sweep stopped part-way (a fault, a timeout): the points measured so far. */
static void kp_sweep_json(kp_str *out, const kp_sweep_run *s, int complete)
{
    const kp_lab_info *info = s->info;
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_run_json_header(&j, info);
    kp_json_bool(&j, "complete", complete);
    kp_json_array_begin(&j, "grid");
    for (int d = 0; d < s->points[0].launch.dims; d++)
        kp_json_uint(&j, NULL, s->points[0].launch.grid[d]);
    kp_json_array_end(&j);
    kp_json_int(&j, "iterations", s->iters);
    kp_json_int(&j, "warmup", s->warmup);
    kp_json_uint(&j, "bytes", s->bytes);
    kp_json_bool(&j, "bytes_assumed_once_per_element", s->bytes_assumed);
    if (s->ceiling_gbs > 0) kp_json_double(&j, "ceiling_gb_per_s", s->ceiling_gbs);
    else kp_json_null(&j, "ceiling_gb_per_s");
    kp_json_uint(&j, "kernel_max_threadgroup_size", s->kernel_max_tg);
    kp_json_uint(&j, "device_max_threadgroup_size", info->device.max_tg);
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_json_object_begin(&j, NULL);
        kp_json_array_begin(&j, "threadgroup");
        for (int d = 0; d < p->launch.dims; d++) kp_json_uint(&j, NULL, p->launch.tg[d]);
        kp_json_array_end(&j);
        kp_json_uint(&j, "threads", p->threads);
        kp_json_double(&j, "gpu_ms_median", p->stats.median);
        kp_json_double(&j, "gpu_ms_min", p->stats.min);
        kp_json_double(&j, "gpu_ms_p10", p->p10);
        kp_json_double(&j, "gpu_ms_p90", p->p90q);
        kp_json_double(&j, "approx_gb_per_s", p->gbps);
        if (s->ceiling_gbs > 0) kp_json_double(&j, "ceiling_percent", p->ceiling_pct);
        if (p->refl.have_occupancy) {
            kp_json_double(&j, "occupancy", p->refl.occupancy);
            kp_json_string(&j, "occupancy_limiter", p->refl.limiter);
        }
        kp_json_bool(&j, "best", p->best);
        kp_json_bool(&j, "tie", p->tie);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    if (s->best >= 0) {
        kp_json_array_begin(&j, "best_threadgroup");
        const kp_sweep_point *b = &s->points[s->best];
        for (int d = 0; d < b->launch.dims; d++) kp_json_uint(&j, NULL, b->launch.tg[d]);
        kp_json_array_end(&j);
    }
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
}

static kprof_status kp_sweep_plot(const kp_sweep_run *s, kp_output *out, kp_error *err)
{
    kp_plot_point *pts = calloc((size_t)s->npoints, sizeof *pts);
    if (!pts) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < s->npoints; i++) {
        const kp_sweep_point *p = &s->points[i];
        if (!p->measured) continue;
        kp_tg_label(p, pts[n].label, sizeof pts[n].label);
        pts[n].median_ms = p->stats.median;
        pts[n].min_ms = p->stats.min;
        pts[n].occupancy = p->refl.have_occupancy ? p->refl.occupancy : -1;
        pts[n].best = p->best;
        pts[n].tie = p->tie;
        n++;
    }
    char title[1024];
    char g[64];
    kp_dims_text(s->points[0].launch.grid, s->points[0].launch.dims, g, sizeof g);
    snprintf(title, sizeof title, "%s on %s, grid %s", s->info->kernel->name,
             s->info->device.name, g);
    char *svg = n ? kp_svg_sweep(title, pts, n) : NULL;
    free(pts);
    if (!svg) return kp_error_set(err, KPROF_NOMEM, "no points to plot, or out of memory");
    kprof_status st = kp_output_write(out, svg, strlen(svg), err);
    free(svg);
    if (st == KPROF_OK) st = kp_output_commit(out, err);
    return st;
}

static void kp_sweep_progress(const kp_sweep_point *p, int i, int n)
{
    if (!isatty(fileno(stderr))) return;
    char tg[48];
    kp_tg_label(p, tg, sizeof tg);
    if (i < n) fprintf(stderr, "\r\033[Ksweep: tg %s (%d/%d)", tg, i + 1, n);
    else fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* The sizes to sweep: --tg-list, or powers of two from the execution width to the kernel max. */
static kprof_status kp_sweep_points(kp_run_args *a, kp_lab *lab, kp_sweep_run *s, kp_error *err)
{
    const kp_lab_info *info = kp_lab_get_info(lab);
    kp_reflection refl;
    kp_launch probe = a->launch;
    for (int d = 0; d < 3; d++) probe.tg[d] = 1;
    kprof_status st = kp_lab_check_launch(lab, &probe, &refl, err);
    if (st != KPROF_OK) return st;
    s->kernel_max_tg = refl.max_tg ? refl.max_tg : info->device.max_tg;
    s->static_local = refl.static_local;
    if (a->tg_list)
        return kp_sweep_parse_list(a->tg_list, &a->launch, s->points, KP_SWEEP_MAX_POINTS,
                                   &s->npoints, err);
    if (a->launch.dims != 1)
        return kp_error_set(err, KPROF_INVALID,
                            "a %d-D grid needs its threadgroup shapes: give --tg-list, e.g. "
                            "8x8,16x16,32x8",
                            a->launch.dims);
    uint64_t start = info->device.exec_width ? info->device.exec_width : refl.preferred_multiple;
    uint64_t sizes[KP_SWEEP_MAX_POINTS];
    int n = kp_sweep_default_sizes(start ? start : 64, s->kernel_max_tg, sizes,
                                   KP_SWEEP_MAX_POINTS);
    kp_str skipped = {0};
    for (int i = 0; i < n; i++) {
        if (info->device.uniform_groups && a->launch.grid[0] % sizes[i] != 0) {
            kp_str_printf(&skipped, "%s%llu", skipped.len ? ", " : "",
                          (unsigned long long)sizes[i]);
            continue;
        }
        kp_sweep_point *p = &s->points[s->npoints++];
        memset(p, 0, sizeof *p);
        p->launch = a->launch;
        p->launch.tg[0] = sizes[i];
        p->threads = sizes[i];
    }
    if (skipped.len)
        snprintf(s->skipped, sizeof s->skipped,
                 "tg %s (grid %llu is not a multiple, and %s needs whole threadgroups)",
                 skipped.data, (unsigned long long)a->launch.grid[0], info->device.backend);
    kp_str_free(&skipped);
    if (s->npoints == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "no threadgroup size from %llu to %llu divides grid %llu: give "
                            "--tg-list or a grid that is a power of two",
                            (unsigned long long)start, (unsigned long long)s->kernel_max_tg,
                            (unsigned long long)a->launch.grid[0]);
    return KPROF_OK;
}

int kp_run_sweep(kp_run_args *a)
{
    kp_error err = {0};
    kp_lab *lab = NULL;
    kp_output plot = {0};
    kp_sweep_run *s = calloc(1, sizeof *s);
    double *samples = calloc((size_t)a->iters, sizeof *samples);
    double *scratch = calloc((size_t)a->iters, sizeof *scratch);
    int partial = 0;
    kprof_status st = KPROF_OK;
    if (!s || !samples || !scratch) {
        st = kp_error_set(&err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    s->best = -1;
    s->iters = a->iters;
    s->warmup = a->warmup;
    /* The plot's file is checked (and its temporary made) before the sweep runs. */
    const char *plot_inputs[] = {a->lab.target, NULL};
    if (a->plot)
        st = kp_output_open(&plot, a->plot, a->force ? KP_OUTPUT_FORCE : 0, plot_inputs, &err);
    if (st != KPROF_OK) goto done;
    st = kp_lab_open(&a->lab, &lab, &err);
    if (st != KPROF_OK) goto done;
    s->info = kp_lab_get_info(lab);
    st = kp_sweep_points(a, lab, s, &err);
    if (st != KPROF_OK) goto done;

    /* Every size is checked before anything runs; each bad one is named, one per line (the
     * line breaks are in the formats: arguments are escaped). */
    for (int i = 0; i < s->npoints; i++) {
        kp_error one = {0};
        if (kp_lab_check_launch(lab, &s->points[i].launch, &s->points[i].refl, &one) != KPROF_OK) {
            kp_error_set(&err, KPROF_INVALID, "the sweep cannot use these threadgroup sizes:");
            kp_error_append(&err, "\n  %s", one.message);
        }
        kp_error_clear(&one);
    }
    if (err.status != KPROF_OK) {
        st = err.status;
        goto done;
    }

    kp_ceiling ceiling;
    if (kp_store_lookup_ceiling(&s->info->device, &ceiling) == 0) s->ceiling_gbs = ceiling.copy_gbs;
    s->bytes_assumed = !a->have_bytes;
    s->bytes = a->have_bytes ? a->bytes : s->info->buffer_bytes;
    for (int i = 0; i < s->npoints; i++) {
        kp_sweep_point *p = &s->points[i];
        kp_sweep_progress(p, i, s->npoints);
        st = kp_lab_measure(lab, &p->launch, a->warmup, a->iters, samples, &err);
        if (st != KPROF_OK && kp_lab_is_void(lab)) goto done; /* no row measured stands */
        if (st != KPROF_OK) {
            char tg[48];
            kp_tg_label(p, tg, sizeof tg);
            kp_error_append(&err, " (at tg %s; the sweep stopped)", tg);
            partial = 1;
            break;
        }
        kp_sweep_summarise(p, samples, (size_t)a->iters, scratch);
        p->gbps = p->stats.median > 0 ? (double)s->bytes / (p->stats.median * 1e-3) / 1e9 : 0;
        if (s->ceiling_gbs > 0) p->ceiling_pct = 100 * p->gbps / s->ceiling_gbs;
    }
    kp_sweep_progress(&s->points[0], s->npoints, s->npoints);
    if (!partial && (st = kp_lab_finish(lab, &err)) != KPROF_OK) goto done; /* (lab.h) */
    s->best = kp_sweep_mark(s->points, s->npoints);

    /* The seed's warnings: register pressure and static shared memory near the limit. */
    kp_readings_input rin = {
        .kernel_max_tg = s->kernel_max_tg,
        .device_max_tg = s->info->device.max_tg,
        .static_local = s->static_local,
        .device_local = s->info->device.local_mem,
    };
    kp_readings r;
    kp_readings_compute(&rin, &r);
    kp_reading_line lines[16];
    int nl = kp_readings_describe(&rin, &r, lines, 16);
    for (int i = 0; i < nl && s->nwarnings < 4; i++)
        if (strcmp(lines[i].id, "register_pressure") == 0 ||
            strcmp(lines[i].id, "shared_memory_bound") == 0)
            s->warnings[s->nwarnings++] = lines[i];

    if (partial && !a->json) {
        kp_sweep_print(s, 1);
        goto done;
    }
    if (a->json) {
        kp_str out = {0};
        kp_sweep_json(&out, s, !partial);
        if (out.failed) {
            st = kp_error_set(&err, KPROF_NOMEM, "out of memory writing JSON");
            kp_str_free(&out);
            goto done;
        }
        fputs(out.data, stdout);
        if (!partial && s->info->kernel_dir[0]) {
            char path[4200];
            snprintf(path, sizeof path, "%s/sweep.json", s->info->kernel_dir);
            const char *inputs[] = {s->info->source_path, NULL};
            st = kp_output_write_file(path, KP_OUTPUT_FORCE, inputs, out.data, out.len, &err);
        }
        kp_str_free(&out);
    } else {
        kp_sweep_print(s, 0);
    }
    if (st == KPROF_OK && !partial && a->plot) {
        st = kp_sweep_plot(s, &plot, &err);
        if (st == KPROF_OK && !a->json) printf("  plot: %s\n", a->plot);
    }
done:
    kp_output_abort(&plot); /* after a commit, a no-op */
    free(samples);
    free(scratch);
    if (st == KPROF_TIMEOUT) kp_run_abandon(&err);
    kp_lab_close(lab);
    free(s);
    if (st != KPROF_OK) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}

int kp_cmd_sweep(int argc, char **argv)
{
    kp_run_args a = {0};
    a.sweep = 1;
    int rc = kp_run_parse(argc, argv, &a);
    if (rc == 0) rc = kp_run_sweep(&a);
    kp_str_free(&a.options);
    return rc;
}
