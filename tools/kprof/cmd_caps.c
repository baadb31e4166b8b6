/*
 * cmd_caps.c — `kprof caps`: every backend and device with its limits, or why a backend cannot
 * run, for people (a panel per device) or scripts (--json).
 */
#include "core/format.h"
#include "export/json.h"
#include "export/text.h"
#include "lab/ceiling.h"
#include "store/store.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KP_CAPS_MAX_DEVICES 64

typedef struct kp_caps_backend {
    const char *name;
    int built;           /* compiled into this kprof */
    int available;
    char reason[512];
    int ndevices;
    kp_device_info *devices; /* heap */
} kp_caps_backend;

static void kp_caps_collect(kp_caps_backend *b, const char *name)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    const kp_backend_ops *ops = kp_backend_find(name);
    if (!ops) {
        snprintf(b->reason, sizeof b->reason,
                 "not built into this kprof (no %s headers when it was compiled)",
                 strcmp(name, "cuda") == 0 ? "CUDA" : "OpenCL");
        return;
    }
    b->built = 1;
    if (ops->probe(b->reason, sizeof b->reason) != KPROF_OK) return;
    int n = ops->device_count();
    if (n > KP_CAPS_MAX_DEVICES) n = KP_CAPS_MAX_DEVICES;
    b->devices = calloc((size_t)(n > 0 ? n : 1), sizeof *b->devices);
    if (!b->devices) {
        snprintf(b->reason, sizeof b->reason, "out of memory");
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

static void kp_caps_print_device(const kp_device_info *d)
{
    char a[64], b[64];
    FILE *o = stdout;
    printf("%s%s device %d: %s%s\n", kp_text_bold(o), d->backend, d->index, d->name,
           kp_text_reset(o));
    printf("  %-28s %s\n", "vendor", d->vendor);
    printf("  %-28s %s\n", "platform", d->platform);
    printf("  %-28s %s\n", "version", d->version);
    printf("  %-28s %s\n", "driver", d->driver);
    printf("  %-28s %u\n", "compute units", d->compute_units);
    printf("  %-28s %llu\n", "max threadgroup size", (unsigned long long)d->max_tg);
    printf("  %-28s %s\n", "threadgroup (local) memory",
           kp_format_bytes(d->local_mem, a, sizeof a));
    printf("  %-28s %s\n", "global memory", kp_format_bytes(d->global_mem, b, sizeof b));
    if (d->max_alloc)
        printf("  %-28s %s\n", "largest allocation", kp_format_bytes(d->max_alloc, a, sizeof a));
    if (d->exec_width) printf("  %-28s %llu\n", "execution width", (unsigned long long)d->exec_width);
    printf("  %-28s %g ns\n", "timer resolution", d->timer_resolution_ns);
    printf("  %-28s %s\n", "profiling (device timestamps)", d->profiling ? "yes" : "no");
    if (d->kernels_in_process)
        printf("  %-28s %s\n", "kernels run in", "kprof's own process (sessions run in a child)");
    if (d->peak_bandwidth_gbs > 0)
        printf("  %-28s %.0f GB/s\n", "peak bandwidth (datasheet)", d->peak_bandwidth_gbs);
    for (int i = 0; i < d->nfacts; i++)
        printf("  %-28s %s\n", d->facts[i].label, d->facts[i].value);
    kp_ceiling c;
    if (kp_store_lookup_ceiling(d, &c) == 0) {
        char when[32] = "at an unknown time";
        time_t t = (time_t)c.measured_at;
        struct tm tm;
        if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d", &tm);
        printf("  %-28s %.0f GB/s (measured %s: %s)\n", "bandwidth ceiling", c.copy_gbs, when,
               c.method);
    } else {
        printf("  %-28s not measured yet (kprof caps --measure)\n", "bandwidth ceiling");
    }
}

static void kp_caps_json_device(kp_json *j, const kp_device_info *d)
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
    for (int i = 0; i < 3; i++) kp_json_uint(j, NULL, d->max_tg_dims[i]);
    kp_json_array_end(j);
    kp_json_uint(j, "threadgroup_memory_bytes", d->local_mem);
    kp_json_uint(j, "global_memory_bytes", d->global_mem);
    kp_json_uint(j, "max_allocation_bytes", d->max_alloc);
    kp_json_uint(j, "execution_width", d->exec_width);
    kp_json_double(j, "timer_resolution_ns", d->timer_resolution_ns);
    kp_json_bool(j, "profiling", d->profiling);
    if (d->peak_bandwidth_gbs > 0) kp_json_double(j, "peak_bandwidth_gbs", d->peak_bandwidth_gbs);
    for (int i = 0; i < d->nfacts; i++) {
        const kp_fact *f = &d->facts[i];
        if (f->numeric) kp_json_double(j, f->key, strtod(f->value, NULL));
        else kp_json_string(j, f->key, f->value);
    }
    kp_ceiling c;
    if (kp_store_lookup_ceiling(d, &c) == 0) {
        kp_json_object_begin(j, "measured_ceiling");
        kp_json_double(j, "copy_gb_per_s", c.copy_gbs);
        kp_json_uint(j, "copy_bytes", c.copy_bytes);
        kp_json_double(j, "demo_add_gb_per_s", c.demo_add_gbs);
        kp_json_double(j, "demo_add_ms", c.demo_add_ms);
        kp_json_int(j, "measured_at", c.measured_at);
        kp_json_string(j, "method", c.method);
        kp_json_object_end(j);
    } else {
        kp_json_null(j, "measured_ceiling");
    }
    kp_json_object_end(j);
}

static void kp_caps_progress(const kp_ceiling_point *p, int done, int total, void *user)
{
    (void)user;
    if (!isatty(fileno(stderr))) return;
    fprintf(stderr, "\r\033[Kmeasuring: %d/%d %s %llu MiB %.0f GB/s", done, total, p->kernel,
            (unsigned long long)(p->bytes >> 20), p->gbs);
    if (done == total) fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* `kprof caps --measure`: measure, store, report. */
static int kp_caps_measure(const char *backend, int device, uint64_t max_bytes, int iters,
                           int json)
{
    kp_error err = {0};
    kp_ceiling_result *r = calloc(1, sizeof *r);
    if (!r) {
        kp_error_set(&err, KPROF_NOMEM, "out of memory");
        return kp_cli_fail(&err);
    }
    kp_ceiling_options o = {.backend = backend, .device = device, .max_bytes = max_bytes,
                            .iters = iters, .progress = kp_caps_progress};
    /* Open the store first: a bad store should fail before minutes of measuring. */
    kp_store *store = NULL;
    kprof_status st = kp_store_open(0, &store, &err);
    if (st == KPROF_OK) st = kp_ceiling_measure(&o, r, &err);
    if (st == KPROF_OK) st = kp_store_put_ceiling(store, &r->device, &r->ceiling, &err);
    kp_store_close(store);
    if (st != KPROF_OK) {
        free(r);
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
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "backend", r->device.backend);
        kp_json_int(&j, "index", r->device.index);
        kp_json_string(&j, "device", r->device.name);
        kp_json_double(&j, "ceiling_gb_per_s", r->ceiling.copy_gbs);
        kp_json_uint(&j, "ceiling_bytes", r->ceiling.copy_bytes);
        kp_json_double(&j, "demo_add_gb_per_s", r->ceiling.demo_add_gbs);
        kp_json_double(&j, "demo_add_ms", r->ceiling.demo_add_ms);
        kp_json_double(&j, "peak_bandwidth_gbs", r->device.peak_bandwidth_gbs);
        kp_json_string(&j, "method", r->ceiling.method);
        kp_json_string(&j, "store", path);
        kp_json_array_begin(&j, "points");
        for (int i = 0; i < r->npoints; i++) {
            const kp_ceiling_point *p = &r->points[i];
            kp_json_object_begin(&j, NULL);
            kp_json_string(&j, "kernel", p->kernel);
            kp_json_uint(&j, "bytes", p->bytes);
            kp_json_uint(&j, "tg", p->tg);
            kp_json_double(&j, "best_ms", p->best_ms);
            kp_json_double(&j, "median_ms", p->median_ms);
            kp_json_double(&j, "gb_per_s", p->gbs);
            kp_json_object_end(&j);
        }
        kp_json_array_end(&j);
        kp_json_object_end(&j);
        kp_json_finish(&j);
        fputs(s.data ? s.data : "", stdout);
        kp_str_free(&s);
    } else {
        printf("%s (%s device %d): bandwidth ceiling\n", r->device.name, r->device.backend,
               r->device.index);
        printf("  %-16s %10s %10s %10s %10s\n", "kernel", "MiB", "best ms", "median ms", "GB/s");
        for (int i = 0; i < r->npoints; i++) {
            const kp_ceiling_point *p = &r->points[i];
            printf("  %-16s %10llu %10.4f %10.4f %10.1f\n", p->kernel,
                   (unsigned long long)(p->bytes >> 20), p->best_ms, p->median_ms, p->gbs);
        }
        printf("ceiling: %.0f GB/s (%s)", r->ceiling.copy_gbs, r->ceiling.method);
        if (r->device.peak_bandwidth_gbs > 0)
            printf(", %.0f%% of the datasheet peak %.0f GB/s",
                   100 * r->ceiling.copy_gbs / r->device.peak_bandwidth_gbs,
                   r->device.peak_bandwidth_gbs);
        printf("\ndemo_add: %.0f GB/s touched at %llu elements (%.4f ms)\n",
               r->ceiling.demo_add_gbs, (unsigned long long)r->ceiling.demo_add_elements,
               r->ceiling.demo_add_ms);
        printf("stored in %s; kprof run reports GB/s against it\n", path);
    }
    free(r);
    return 0;
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
        {NULL, 0, NULL, 0},
    };
    int json = 0, measure = 0, device = -1, iters = 20;
    uint64_t max_bytes = 0, v;
    const char *only = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'b': only = optarg; break;
        case 'm': measure = 1; break;
        case 'd':
            if (kp_parse_size(optarg, &v) != 0 || v > 1 << 20)
                return kp_cli_usage_error("caps", "--device '%s': expected a device number",
                                          optarg);
            device = (int)v;
            break;
        case 'M':
            if (kp_parse_size(optarg, &max_bytes) != 0 || max_bytes < (1 << 20))
                return kp_cli_usage_error("caps", "--max-bytes '%s': expected at least 1M",
                                          optarg);
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 100000)
                return kp_cli_usage_error("caps", "--iters '%s': expected 1 to 100000", optarg);
            iters = (int)v;
            break;
        case ':': return kp_cli_usage_error("caps", "%s needs a value", argv[optind - 1]);
        default: return kp_cli_usage_error("caps", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return kp_cli_usage_error("caps", "unexpected argument '%s'", argv[optind]);
    static const char *const names[] = {"cuda", "opencl"};
    if (only && strcmp(only, "cuda") != 0 && strcmp(only, "opencl") != 0)
        return kp_cli_usage_error("caps", "--backend '%s' is not a backend (opencl or cuda)", only);

    if (measure) return kp_caps_measure(only, device, max_bytes, iters, json);
    if (device >= 0 || max_bytes || iters != 20)
        return kp_cli_usage_error("caps", "--device, --max-bytes and --iters go with --measure");

    kp_caps_backend backends[2];
    int nb = 0, ndev = 0;
    for (int i = 0; i < 2; i++) {
        if (only && strcmp(only, names[i]) != 0) continue;
        kp_caps_collect(&backends[nb], names[i]);
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
            for (int d = 0; d < backends[i].ndevices; d++)
                kp_caps_json_device(&j, &backends[i].devices[d]);
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
    for (int i = 0; i < nb; i++) free(backends[i].devices);
    if (ndev == 0) {
        if (!json) fprintf(stderr, "kprof: error: no usable device on this machine\n");
        return 3;
    }
    return 0;
}
