/*
 * cmd_caps.c — `kprof caps`: every backend and device with its limits, or why a backend cannot
 * run, for people (a panel per device) or scripts (--json); `--measure` measures a device's
 * bandwidth ceiling and FP32 FLOP peak; `--counters` lists the hardware counters (metric names)
 * a device offers to `kprof run --counters LIST`. What is gathered and its JSON are
 * lab/caps.c's (the measuring lab/ceiling.c's, the counters lab/counters.c's); this file parses,
 * looks up the stored ceilings (the store is above the lab), and prints the text panels.
 */
#include "core/format.h"
#include "base/env.h"
#include "base/json.h"
#include "export/text.h"
#include "lab/caps.h"
#include "lab/ceiling.h"
#include "lab/counters.h"
#include "store/store.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One "  label   value" row of a device panel, the values in one column. */
static void kp_caps_row(int width, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void kp_caps_row(int width, const char *label, const char *fmt, ...)
{
    printf("  %-*s ", width, label);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static const char kp_caps_label_profiling[] = "profiling (device timestamps)";
static const char kp_caps_label_peak[] = "peak bandwidth (datasheet)";

static void kp_caps_print_device(const kp_device_info *d)
{
    char a[64];
    FILE *o = stdout;
    /* The widest label sets the value column, the backend's own facts included. */
    int w = (int)strlen(kp_caps_label_profiling);
    if ((int)strlen(kp_caps_label_peak) > w) w = (int)strlen(kp_caps_label_peak);
    for (int i = 0; i < d->nfacts; i++)
        if ((int)strlen(d->facts[i].label) > w) w = (int)strlen(d->facts[i].label);
    printf("%s%s device %d: %s%s\n", kp_text_bold(o), d->backend, d->index, d->name,
           kp_text_reset(o));
    kp_caps_row(w, "vendor", "%s", d->vendor);
    kp_caps_row(w, "platform", "%s", d->platform);
    kp_caps_row(w, "version", "%s", d->version);
    kp_caps_row(w, "driver", "%s", d->driver);
    kp_caps_row(w, "compute units", "%u", d->compute_units);
    kp_caps_row(w, "max threadgroup size", "%llu", (unsigned long long)d->max_tg);
    kp_caps_row(w, "threadgroup (local) memory", "%s", kp_format_bytes(d->local_mem, a, sizeof a));
    kp_caps_row(w, "global memory", "%s", kp_format_bytes(d->global_mem, a, sizeof a));
    if (d->max_alloc)
        kp_caps_row(w, "largest allocation", "%s", kp_format_bytes(d->max_alloc, a, sizeof a));
    if (d->exec_width) kp_caps_row(w, "execution width", "%llu", (unsigned long long)d->exec_width);
    kp_caps_row(w, "timer resolution", "%g ns", d->timer_resolution_ns);
    kp_caps_row(w, kp_caps_label_profiling, "%s", d->profiling ? "yes" : "no");
    if (d->kernels_in_process)
        kp_caps_row(w, "kernels run in", "%s", "kprof's own process (sessions run in a child)");
    if (d->peak_bandwidth_gbs > 0)
        kp_caps_row(w, kp_caps_label_peak, "%.0f GB/s", d->peak_bandwidth_gbs);
    else
        kp_caps_row(w, kp_caps_label_peak, "unknown: %s",
                    d->peak_bandwidth_reason[0] ? d->peak_bandwidth_reason
                                                : "the backend reports no datasheet peak");
    for (int i = 0; i < d->nfacts; i++) {
        const kp_fact *f = &d->facts[i];
        if (f->numeric == KP_FACT_BYTES)
            kp_caps_row(w, f->label, "%s",
                        kp_format_bytes(strtoull(f->value, NULL, 10), a, sizeof a));
        else
            kp_caps_row(w, f->label, "%s", f->value);
    }
    kp_ceiling c;
    if (kp_cli_ceiling(d, &c) == 0) {
        char when[32] = "at an unknown time";
        time_t t = (time_t)c.measured_at;
        struct tm tm;
        if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d", &tm);
        kp_caps_row(w, "bandwidth ceiling", "%.0f GB/s (measured %s: %s)", c.copy_gbs, when,
                    c.method);
        if (c.fma_gflops > 0)
            kp_caps_row(w, "FLOP peak (FP32)", "%.0f GFLOP/s (%s)", c.fma_gflops, c.fma_method);
        else
            kp_caps_row(w, "FLOP peak (FP32)",
                        "not measured yet (measured before kprof measured it: kprof caps "
                        "--measure)");
    } else {
        kp_caps_row(w, "bandwidth ceiling", "not measured yet (kprof caps --measure)");
    }
}

static void kp_caps_progress(const kp_ceiling_point *p, int done, int total, void *user)
{
    (void)user;
    if (!isatty(fileno(stderr))) return;
    if (p->gflops > 0)
        fprintf(stderr, "\r\033[Kmeasuring: %d/%d %s %.0f GFLOP/s", done, total, p->kernel,
                p->gflops);
    else
        fprintf(stderr, "\r\033[Kmeasuring: %d/%d %s %llu MiB %.0f GB/s", done, total, p->kernel,
                (unsigned long long)(p->bytes >> 20), p->run.gbps);
    if (done == total) fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* The seconds a plan should take here: at the ceiling and peak stored for the device, if any. */
static double kp_caps_plan_seconds(const kp_ceiling_result *r)
{
    kp_ceiling c;
    if (kp_cli_ceiling(&r->device, &c) == 0)
        return kp_ceiling_plan_seconds(&r->plan, c.copy_gbs, c.fma_gflops);
    return kp_ceiling_plan_seconds(&r->plan, 0, 0);
}

/* `kprof caps --measure`: plan, say what will be measured, measure, store, report. With
 * dry_run: plan and say, nothing else. */
static int kp_caps_measure(const char *backend, int device, uint64_t max_bytes, int iters, int json,
                           int dry_run)
{
    kp_error err = {0};
    kp_ceiling_result *r = calloc(1, sizeof *r);
    if (!r) {
        kp_error_nomem(&err);
        return kp_cli_fail(&err);
    }
    kp_ceiling_options o = {.backend = backend,
                            .device = device,
                            .max_bytes = max_bytes,
                            .iters = iters,
                            .progress = kp_caps_progress};
    kp_store *store = NULL;
    kp_str plan = {0};
    kprof_status st = kp_ceiling_prepare(&o, r, &err);
    if (st == KPROF_OK) kp_caps_plan_text(&plan, r, kp_caps_plan_seconds(r));
    if (st == KPROF_OK && plan.failed) st = kp_error_nomem(&err);
    /* Open the store before measuring: a bad store should fail before minutes of measuring. */
    if (st == KPROF_OK && !dry_run) st = kp_store_open(0, &store, &err);
    if (st == KPROF_OK && !dry_run) {
        fprintf(stderr, "kprof: measuring %s\n", plan.data);
        if (r->plan.in_cache) {
            char a[64], b[64];
            fprintf(stderr,
                    "kprof: warning: the largest buffer this device allows (%s) is smaller than "
                    "its %s last-level cache: the ceiling measured is partly the cache's\n",
                    kp_format_bytes(r->plan.sizes[r->plan.nsizes - 1], a, sizeof a),
                    kp_format_bytes(r->plan.cache_bytes, b, sizeof b));
        }
        fflush(stderr);
        st = kp_ceiling_measure(&o, r, &err);
    }
    if (st == KPROF_OK && !dry_run) st = kp_store_put_ceiling(store, &r->device, &r->ceiling, &err);
    kp_store_close(store);
    if (st != KPROF_OK) {
        free(r);
        kp_str_free(&plan);
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    char path[4096];
    kp_store_path(path, sizeof path);
    if (json) {
        kp_str s = {0};
        kp_json j;
        kp_json_init(&j, &s, 1);
        kp_caps_json_measure(&j, r, kp_caps_plan_seconds(r), dry_run, path);
        kp_json_finish(&j);
        if (s.failed) {
            kp_str_free(&s);
            free(r);
            kp_str_free(&plan);
            return kp_cli_nomem();
        }
        fputs(s.data ? s.data : "", stdout);
        kp_str_free(&s);
    } else if (dry_run) {
        printf("would measure %s (nothing measured or stored: --dry-run)\n", plan.data);
    } else {
        printf("%s (%s device %d): bandwidth ceiling\n", r->device.name, r->device.backend,
               r->device.index);
        printf("  %-16s %10s %10s %10s %10s\n", "kernel", "MiB", "best", "median", "GB/s");
        for (int i = 0; i < r->npoints; i++) {
            const kp_ceiling_point *p = &r->points[i];
            if (p->gflops > 0) continue; /* the FLOP peak: its own line below */
            char best[64], median[64];
            printf("  %-16s %10llu %s %s %10.1f\n", p->kernel, (unsigned long long)(p->bytes >> 20),
                   kp_format_ms_cell(p->run.stats.min, 10, best, sizeof best),
                   kp_format_ms_cell(p->run.stats.median, 10, median, sizeof median), p->run.gbps);
        }
        printf("ceiling: %.0f GB/s (%s)", r->ceiling.copy_gbs, r->ceiling.method);
        if (r->device.peak_bandwidth_gbs > 0)
            printf(", %.0f%% of the datasheet peak %.0f GB/s",
                   100 * r->ceiling.copy_gbs / r->device.peak_bandwidth_gbs,
                   r->device.peak_bandwidth_gbs);
        char when[64];
        printf("\ndemo_add: %.0f GB/s touched at %llu elements (%s)\n", r->ceiling.demo_add_gbs,
               (unsigned long long)r->ceiling.demo_add_elements,
               kp_format_ms(r->ceiling.demo_add_ms, when, sizeof when));
        if (r->ceiling.fma_gflops > 0)
            printf("FLOP peak (FP32): %.0f GFLOP/s (%s)\n", r->ceiling.fma_gflops,
                   r->ceiling.fma_method);
        printf("stored in %s; kprof run reports GB/s against it\n", path);
    }
    kp_str_free(&plan);
    free(r);
    return 0;
}

/* What kp_caps_counters collects, metric by metric. */
typedef struct kp_caps_metrics {
    kp_str text; /* "  name  description" lines */
    kp_json json;
    int count;
    int as_json;
} kp_caps_metrics;

static void kp_caps_metric(const char *name, const char *what, void *ctx)
{
    kp_caps_metrics *m = ctx;
    m->count++;
    if (m->as_json) {
        kp_json_object_begin(&m->json, NULL);
        kp_json_string(&m->json, "name", name);
        kp_json_string(&m->json, "description", what && *what ? what : NULL);
        kp_json_object_end(&m->json);
    } else if (what && *what) {
        kp_str_printf_escaped(&m->text, "  %-64s %s\n", name, what);
    } else {
        kp_str_printf_escaped(&m->text, "  %s\n", name);
    }
}

/* `kprof caps --counters`: the metric names the chosen device offers (what `kprof run
 * --counters LIST` takes). A device without counters gets one line on stderr saying why, and
 * exit 0, as `run --counters` does. */
static int kp_caps_counters(const char *backend, int device, int json)
{
    kp_error err = {0};
    kp_device_info *info = calloc(1, sizeof *info);
    kp_caps_metrics *m = calloc(1, sizeof *m);
    kp_str out = {0};
    kp_error why = {0};
    int rc = 0;
    if (!info || !m) {
        free(info);
        free(m);
        kp_error_nomem(&err);
        return kp_cli_fail(&err);
    }
    m->as_json = json;
    kp_json_init(&m->json, &out, 1);
    kp_json_object_begin(&m->json, NULL);
    kp_json_string(&m->json, "kprof_version", KPROF_VERSION_STRING);
    kp_json_array_begin(&m->json, "metrics");
    kprof_status st = kp_counters_list(backend, device, info, kp_caps_metric, m, &why, &err);
    if (st != KPROF_OK) {
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        goto done;
    }
    if (why.status) fprintf(stderr, "kprof: counters: %s\n", why.message);
    if (json) {
        kp_json_array_end(&m->json);
        kp_json_string(&m->json, "backend", info->backend);
        kp_json_int(&m->json, "index", info->index);
        kp_json_string(&m->json, "device", info->name);
        kp_json_bool(&m->json, "available", !why.status);
        kp_json_string(&m->json, "reason", why.status ? why.message : NULL);
        kp_json_int(&m->json, "count", m->count);
        kp_json_object_end(&m->json);
        kp_json_finish(&m->json);
        if (out.failed) {
            kp_error_set(&err, KPROF_NOMEM, "out of memory writing JSON");
            rc = kp_cli_fail(&err);
            goto done;
        }
        fputs(out.data, stdout);
    } else if (!why.status) {
        printf("%s (%s device %d): %d hardware counters (ncu's metric names; kprof run "
               "--counters LIST takes any of them)\n",
               info->name, info->backend, info->index, m->count);
        if (m->text.failed) {
            kp_error_nomem(&err);
            rc = kp_cli_fail(&err);
            goto done;
        }
        fputs(m->text.data ? m->text.data : "", stdout);
    }
done:
    kp_error_clear(&why);
    kp_str_free(&out);
    kp_str_free(&m->text);
    free(m);
    free(info);
    return rc;
}

int kp_cmd_caps(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"backend", required_argument, NULL, 'b'},
        {"measure", no_argument, NULL, 'm'},
        {"device", required_argument, NULL, 'd'},
        {"max-bytes", required_argument, NULL, 'M'},
        {"iters", required_argument, NULL, 'n'},
        {"dry-run", no_argument, NULL, 'r'},
        {"counters", no_argument, NULL, 'C'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, measure = 0, device = -1, iters = 0, dry_run = 0, counters = 0;
    uint64_t max_bytes = 0, v;
    const char *only = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'b':
            only = optarg;
            break;
        case 'm':
            measure = 1;
            break;
        case 'r':
            dry_run = 1;
            break;
        case 'C':
            counters = 1;
            break;
        case 'd':
            if (kp_parse_size(optarg, &v) != 0 || v > 1 << 20)
                return kp_cli_usage_error("caps", "--device '%s': expected a device number",
                                          optarg);
            device = (int)v;
            break;
        case 'M':
            if (kp_parse_size(optarg, &max_bytes) != 0 || max_bytes < (1 << 20))
                return kp_cli_usage_error("caps", "--max-bytes '%s': expected at least 1M", optarg);
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 100000)
                return kp_cli_usage_error("caps", "--iters '%s': expected 1 to 100000", optarg);
            iters = (int)v;
            break;
        case ':':
            return kp_cli_usage_error("caps", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("caps", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return kp_cli_usage_error("caps", "unexpected argument '%s'", argv[optind]);
    /* The names every command accepts, from --backend or KPROF_BACKEND; the list shows every
     * backend whatever KPROF_BACKEND chooses, but a name no command would take is refused. */
    kp_error err = {0};
    if ((only && kp_backend_name_check(only, "--backend", &err) != KPROF_OK) ||
        (!only && kp_backend_env() &&
         kp_backend_name_check(kp_backend_env(), KP_ENV_BACKEND, &err) != KPROF_OK)) {
        int rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    if (only && strcmp(only, "auto") == 0 && !measure) only = NULL;

    if (measure && counters)
        return kp_cli_usage_error("caps", "--measure and --counters are two commands: give one");
    if (measure) return kp_caps_measure(only, device, max_bytes, iters, json, dry_run);
    if (counters && (max_bytes || iters || dry_run))
        return kp_cli_usage_error("caps", "--max-bytes, --iters and --dry-run go with --measure");
    if (counters) return kp_caps_counters(only, device, json);
    if (device >= 0 || max_bytes || iters || dry_run)
        return kp_cli_usage_error("caps", "--device, --max-bytes, --iters and --dry-run go with "
                                          "--measure (--device with --counters too)");

    kp_caps_backend backends[KP_BACKEND_NKNOWN];
    int nb = 0, ndev = 0;
    const char *name;
    for (int i = 0; (name = kp_backend_known_name(i)) != NULL; i++) {
        if (only && strcmp(only, name) != 0) continue;
        kp_caps_collect(&backends[nb], name);
        ndev += backends[nb].ndevices;
        nb++;
    }

    if (json) {
        kp_str s = {0};
        kp_json j;
        kp_json_init(&j, &s, 1);
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "kprof_version", KPROF_VERSION_STRING);
        kp_json_array_begin(&j, "backends");
        for (int i = 0; i < nb; i++) {
            kp_json_object_begin(&j, NULL);
            kp_json_string(&j, "name", backends[i].name);
            kp_json_bool(&j, "built", backends[i].built);
            kp_json_bool(&j, "available", backends[i].available);
            kp_json_string(&j, "reason", backends[i].available ? NULL : backends[i].reason);
            kp_json_array_begin(&j, "devices");
            for (int d = 0; d < backends[i].ndevices; d++) {
                kp_ceiling ceiling;
                const kp_device_info *dev = &backends[i].devices[d];
                kp_caps_json_device(&j, dev, kp_cli_ceiling(dev, &ceiling) == 0 ? &ceiling : NULL);
            }
            kp_json_array_end(&j);
            kp_json_object_end(&j);
        }
        kp_json_array_end(&j);
        kp_json_object_end(&j);
        kp_json_finish(&j);
        fputs(s.data ? s.data : "", stdout);
        kp_str_free(&s);
    } else {
        for (int i = 0; i < nb; i++) {
            if (!backends[i].available) {
                printf("%s: unavailable: %s\n", backends[i].name, backends[i].reason);
                continue;
            }
            for (int d = 0; d < backends[i].ndevices; d++) {
                kp_caps_print_device(&backends[i].devices[d]);
                printf("\n");
            }
        }
    }
    for (int i = 0; i < nb; i++)
        kp_caps_backend_free(&backends[i]);
    if (ndev == 0) {
        if (!json) fprintf(stderr, "kprof: error: no usable device on this machine\n");
        return 3;
    }
    return 0;
}
