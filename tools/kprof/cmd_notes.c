/*
 * cmd_notes.c — `kprof notes add|list|search|show|export|import`: the findings log. A note is a
 * short text kept in kprof's store (store/notes.h) with the evidence it was made from: `--from`
 * a run.json, sweep.json or bench.json (read with cJSON through json_file.h) or a run of the
 * history (store/history.h) gives it the kernel, device, grid, threadgroup, median and commit, and
 * keeps what else the source said in the note's `data` (a JSON object). Notes travel between stores
 * as one JSON file (`export`, `import`), written with kprof's own JSON writer through
 * core/outfile and read back through json_file.h; an import checks every note before it adds any.
 */
#define _GNU_SOURCE
#include "core/format.h"
#include "base/git.h"
#include "base/outfile.h"
#include "base/util.h"
#include "base/json.h"
#include "store/history.h"
#include "store/notes.h"
#include "store/store.h"
#include "tools/kprof/cli.h"
#include "base/json_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The export file's kind and version: `import` reads this version only. */
#define KP_NOTES_FILE_KIND    "kprof-notes"
#define KP_NOTES_FILE_VERSION 1

/* The options each subcommand takes. */
enum {
    KP_NOTES_OPT_FROM = 1u,
    KP_NOTES_OPT_KERNEL = 2u,
    KP_NOTES_OPT_JSON = 4u,
    KP_NOTES_OPT_FORCE = 8u,
};

typedef struct kp_notes_args {
    const char *sub;    /* "add", "list", ... */
    const char *from;   /* --from */
    const char *kernel; /* --kernel */
    int json, force;
    int npos; /* positional arguments after the subcommand */
    char **pos;
} kp_notes_args;

/* ---- small pieces ------------------------------------------------------------------------- */

static char *kp_notes_strdup(const char *text)
{
    return text ? strdup(text) : NULL;
}

/* A note's time for people ("2026-05-01 14:03", local time) or in ISO 8601 UTC. */
static void kp_notes_time(int64_t at, int iso, char *buf, size_t n)
{
    time_t t = (time_t)at;
    struct tm tm;
    buf[0] = '\0';
    if (iso ? gmtime_r(&t, &tm) == NULL : localtime_r(&t, &tm) == NULL) return;
    strftime(buf, n, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M", &tm);
}

/* Print text on one line, control characters and stray bytes escaped (a note's text, a device
 * name: whatever a file held cannot move the terminal's cursor). */
static void kp_notes_put(FILE *f, const char *text)
{
    kp_str s = {0};
    kp_str_append_escaped(&s, text ? text : "", text ? strlen(text) : 0);
    fputs(s.data ? s.data : "", f);
    kp_str_free(&s);
}

/* Print a multi-line text, each line indented and escaped as kp_notes_put. */
static void kp_notes_put_lines(FILE *f, const char *indent, const char *text)
{
    const char *p = text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        kp_str s = {0};
        kp_str_append_escaped(&s, p, n);
        fprintf(f, "%s%s\n", indent, s.data ? s.data : "");
        kp_str_free(&s);
        if (!nl) break;
        p = nl + 1;
    }
}

/* ---- cJSON to kprof's JSON writer ---------------------------------------------------------- */

/* Write a cJSON value through kp_json: numbers that are whole (and exact in a double) as
 * integers, strings through kp_json's escaper (so a stray byte a file held comes out as valid
 * UTF-8). */
static void kp_notes_emit(kp_json *j, const char *key, const cJSON *v)
{
    if (cJSON_IsObject(v)) {
        kp_json_object_begin(j, key);
        const cJSON *c;
        cJSON_ArrayForEach(c, v) kp_notes_emit(j, c->string ? c->string : "", c);
        kp_json_object_end(j);
    } else if (cJSON_IsArray(v)) {
        kp_json_array_begin(j, key);
        const cJSON *c;
        cJSON_ArrayForEach(c, v) kp_notes_emit(j, NULL, c);
        kp_json_array_end(j);
    } else if (cJSON_IsString(v)) {
        kp_json_string(j, key, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0)
            kp_json_int(j, key, (int64_t)d);
        else
            kp_json_double(j, key, d);
    } else if (cJSON_IsBool(v)) {
        kp_json_bool(j, key, cJSON_IsTrue(v));
    } else {
        kp_json_null(j, key);
    }
}

/* Copy obj's members named in keys (those present) into the object j has open. */
static void kp_notes_copy_keys(kp_json *j, const cJSON *obj, const char *const *keys)
{
    for (; *keys; keys++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, *keys);
        if (v) kp_notes_emit(j, *keys, v);
    }
}

/* Copy every member of obj but those named in skip. */
static void kp_notes_copy_except(kp_json *j, const cJSON *obj, const char *const *skip)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, obj)
    {
        int skipped = 0;
        for (const char *const *k = skip; *k && !skipped; k++)
            skipped = c->string && strcmp(c->string, *k) == 0;
        if (!skipped && c->string) kp_notes_emit(j, c->string, c);
    }
}

/* ---- the JSON of a note --------------------------------------------------------------------- */

/* One note as JSON. with_id: the store's id (an export leaves it out: ids are one store's). */
static void kp_notes_json_note(kp_json *j, const kp_note *n, int with_id, const double *score)
{
    char when[64];
    kp_json_object_begin(j, NULL);
    if (with_id) kp_json_int(j, "id", n->id);
    kp_json_int(j, "at", n->at);
    kp_notes_time(n->at, 1, when, sizeof when);
    kp_json_string(j, "time", when);
    kp_json_string(j, "text", n->text);
    kp_json_string(j, "kernel", n->kernel);
    kp_json_string(j, "device", n->device);
    kp_json_string(j, "grid", n->grid);
    kp_json_string(j, "tg", n->tg);
    if (n->has_median)
        kp_json_double(j, "median_ms", n->median_ms);
    else
        kp_json_null(j, "median_ms");
    kp_json_string(j, "git_commit", n->git_commit);
    kp_json_string(j, "made_from", n->made_from);
    cJSON *data = n->data ? cJSON_Parse(n->data) : NULL;
    if (cJSON_IsObject(data))
        kp_notes_emit(j, "data", data);
    else if (n->data)
        kp_json_string(j, "data", n->data); /* not kprof's: keep it as text */
    else
        kp_json_null(j, "data");
    cJSON_Delete(data);
    if (score) kp_json_double(j, "score", *score);
    kp_json_object_end(j);
}

/* Print a JSON document (kp_json_finish ended it with a newline) to stdout; free it. */
static int kp_notes_print_json(kp_str *s)
{
    if (s->failed) {
        kp_str_free(s);
        fprintf(stderr, "kprof: error: out of memory\n");
        return 1;
    }
    fputs(s->data ? s->data : "", stdout);
    kp_str_free(s);
    return 0;
}

static int kp_notes_json_list(const kp_note_list *list, const char *query)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 1);
    kp_json_object_begin(&j, NULL);
    if (query) kp_json_string(&j, "query", query);
    kp_json_int(&j, "count", (int64_t)list->n);
    kp_json_array_begin(&j, "notes");
    for (size_t i = 0; i < list->n; i++)
        kp_notes_json_note(&j, &list->notes[i], 1, list->scores ? &list->scores[i] : NULL);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    return kp_notes_print_json(&s);
}

static int kp_notes_json_one(const kp_note *n)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 1);
    kp_notes_json_note(&j, n, 1, NULL);
    kp_json_finish(&j);
    return kp_notes_print_json(&s);
}

/* ---- for people ---------------------------------------------------------------------------- */

/* "demo_add · grid 4096 · tg 64 · 851 ns · DEVICE": what a note carries, on one line. */
static void kp_notes_put_evidence(FILE *f, const kp_note *n)
{
    const char *sep = "";
    if (n->kernel) {
        kp_notes_put(f, n->kernel);
        sep = " · ";
    }
    if (n->grid) {
        fprintf(f, "%sgrid ", sep);
        kp_notes_put(f, n->grid);
        sep = " · ";
    }
    if (n->tg) {
        fprintf(f, "%stg ", sep);
        kp_notes_put(f, n->tg);
        sep = " · ";
    }
    if (n->has_median) {
        char d[32];
        fprintf(f, "%s%s", sep, kp_format_duration(n->median_ms / 1e3, d, sizeof d));
        sep = " · ";
    }
    if (n->device) {
        fputs(sep, f);
        kp_notes_put(f, n->device);
    }
}

static void kp_notes_print_row(const kp_note *n)
{
    char when[64];
    kp_notes_time(n->at, 0, when, sizeof when);
    printf("#%lld  %s", (long long)n->id, when);
    if (n->kernel || n->grid || n->tg || n->has_median || n->device) {
        fputs("  ", stdout);
        kp_notes_put_evidence(stdout, n);
    }
    fputc('\n', stdout);
    kp_notes_put_lines(stdout, "    ", n->text);
}

static void kp_notes_print_field(const char *name, const char *value)
{
    if (!value) return;
    printf("%-10s ", name);
    kp_notes_put(stdout, value);
    fputc('\n', stdout);
}

static void kp_notes_print_note(const kp_note *n)
{
    char when[64], iso[64];
    kp_notes_time(n->at, 0, when, sizeof when);
    kp_notes_time(n->at, 1, iso, sizeof iso);
    printf("note %lld  %s (%s)\n", (long long)n->id, when, iso);
    kp_notes_print_field("kernel", n->kernel);
    kp_notes_print_field("device", n->device);
    kp_notes_print_field("grid", n->grid);
    kp_notes_print_field("tg", n->tg);
    if (n->has_median) {
        char d[32];
        printf("%-10s %s\n", "median", kp_format_duration(n->median_ms / 1e3, d, sizeof d));
    }
    kp_notes_print_field("commit", n->git_commit);
    kp_notes_print_field("made from", n->made_from);
    fputc('\n', stdout);
    kp_notes_put_lines(stdout, "    ", n->text);
    cJSON *data = n->data ? cJSON_Parse(n->data) : NULL;
    if (cJSON_IsObject(data)) {
        kp_str s = {0};
        kp_json j;
        kp_json_init(&j, &s, 1);
        kp_notes_emit(&j, NULL, data);
        kp_json_finish(&j);
        printf("\ndata:\n");
        if (s.data) {
            kp_rstrip(s.data); /* the writer's closing newline */
            kp_notes_put_lines(stdout, "  ", s.data);
        }
        kp_str_free(&s);
    }
    cJSON_Delete(data);
}

/* ---- what a note is made from --------------------------------------------------------------- */

/* "17" or "@0", "@-1": a run of the history; anything else is a file. */
static int kp_notes_is_history_ref(const char *ref)
{
    int64_t id, back;
    return kp_history_parse_ref(ref, &id, &back) == 0;
}

/* "4096x4096" from a JSON array of whole positive numbers; NULL when it is not one. */
static char *kp_notes_dims(const cJSON *arr)
{
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (n < 1 || n > 3) return NULL;
    char buf[96] = "";
    size_t len = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 1) || e->valuedouble > 1e15 ||
            e->valuedouble != floor(e->valuedouble))
            return NULL;
        len +=
            (size_t)snprintf(buf + len, sizeof buf - len, "%s%.0f", len ? "x" : "", e->valuedouble);
    }
    return strdup(buf);
}

static const char *kp_notes_string(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A finite number >= 0 at key into *out: 1 found, 0 not. */
static int kp_notes_number(const cJSON *obj, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) return 0;
    *out = v->valuedouble;
    return 1;
}

/* The device's name: a string (bench.json) or an object with "name" (run.json, sweep.json). */
static const char *kp_notes_device(const cJSON *doc)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "device");
    if (cJSON_IsString(d)) return d->valuestring;
    return kp_notes_string(d, "name");
}

/* --kernel against the kernel a source measured: the note must be about what was measured. */
static kprof_status kp_notes_kernel_check(const char *want, const char *measured,
                                          const char *source, kp_error *err)
{
    if (!want || (measured && strcmp(want, measured) == 0)) return KPROF_OK;
    return kp_error_set(err, KPROF_INVALID,
                        "--kernel %s: %s measured %s (leave --kernel out, or give a result "
                        "of %s)",
                        want, source, measured ? measured : "no named kernel", want);
}

/* The members of run.json and sweep.json a note keeps in its data (beyond its columns). */
// clang-format off
static const char *const kp_notes_run_keys[] = {
    "kprof_version", "backend", "timer", "source", "iterations", "warmup", "gpu_ms_min",
    "gpu_ms_p90", "gpu_ms_max", "gpu_ms_mean", "gpu_ms_stddev", "bytes",
    "bytes_assumed_once_per_element", "approx_gb_per_s", "ceiling_gb_per_s", "ceiling_percent",
    "working_set_bytes", "grid_touch_bytes", "last_level_cache_bytes", "not_dram_reasons",
    "reflection", NULL};
static const char *const kp_notes_sweep_keys[] = {
    "kprof_version", "backend", "timer", "source", "complete", "iterations", "warmup", "bytes",
    "bytes_assumed_once_per_element", "ceiling_gb_per_s", "kernel_max_threadgroup_size",
    "device_max_threadgroup_size", "threadgroup_rule", "sizes_measured", "compared", "warnings",
    NULL};
// clang-format on
/* bench.json's top level, and what of its kernel a note leaves out (every sample). */
static const char *const kp_notes_bench_keys[] = {"backend", "timer", "device_index", "config",
                                                  NULL};
static const char *const kp_notes_bench_kernel_skip[] = {"samples_ms", "clock_samples_mhz", NULL};

/* The device driver and platform of run.json's and sweep.json's "device" object. */
static void kp_notes_device_extra(kp_json *j, const cJSON *doc)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "device");
    if (!cJSON_IsObject(d)) return;
    static const char *const keys[] = {"index", "vendor", "driver", "platform", NULL};
    kp_json_object_begin(j, "device");
    kp_notes_copy_keys(j, d, keys);
    kp_json_object_end(j);
}

typedef enum kp_notes_source { KP_NOTES_RUN, KP_NOTES_SWEEP, KP_NOTES_BENCH } kp_notes_source;

/* Fill note from the parsed file: kernel, device, grid, tg, median and data. */
static kprof_status kp_notes_read_doc(const cJSON *doc, const char *path, const char *kernel,
                                      kp_note *note, kp_error *err)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    kp_notes_source source;
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "bench") == 0 && cJSON_IsArray(points))
        source = KP_NOTES_BENCH;
    else if (!kind && cJSON_IsArray(points) &&
             cJSON_GetObjectItemCaseSensitive(doc, "sizes_measured"))
        source = KP_NOTES_SWEEP;
    else if (!kind && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "gpu_ms_median")) &&
             cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "threadgroup")))
        source = KP_NOTES_RUN;
    else
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s: not a result of kprof run, sweep or bench (run.json, sweep.json, "
                            "bench.json or their --json output)",
                            path);

    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kprof_status st = KPROF_OK;
    const cJSON *grid = cJSON_GetObjectItemCaseSensitive(doc, "grid"), *tg = NULL, *point = NULL;
    const cJSON *medians_from = NULL;
    const char *median_key = NULL, *measured = kp_notes_string(doc, "entry");
    if (source == KP_NOTES_RUN) {
        kp_json_string(&j, "from", "run");
        kp_notes_copy_keys(&j, doc, kp_notes_run_keys);
        kp_notes_device_extra(&j, doc);
        const cJSON *readings = cJSON_GetObjectItemCaseSensitive(doc, "readings");
        if (cJSON_IsArray(readings)) {
            kp_json_array_begin(&j, "readings"); /* their ids: the text is kprof's own */
            const cJSON *r;
            cJSON_ArrayForEach(r, readings)
            {
                const char *id = kp_notes_string(r, "id");
                if (id) kp_json_string(&j, NULL, id);
            }
            kp_json_array_end(&j);
        }
        tg = cJSON_GetObjectItemCaseSensitive(doc, "threadgroup");
        medians_from = doc;
        median_key = "gpu_ms_median";
    } else if (source == KP_NOTES_SWEEP) {
        /* The best point; without one (a single size, an interrupted sweep) the fastest. */
        const cJSON *p, *fastest = NULL;
        double best_ms = INFINITY, ms;
        cJSON_ArrayForEach(p, points)
        {
            if (!kp_notes_number(p, "gpu_ms_median", &ms)) continue;
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "best"))) point = p;
            if (ms < best_ms) {
                best_ms = ms;
                fastest = p;
            }
        }
        int marked = point != NULL;
        if (!point) point = fastest;
        if (!point) {
            st = kp_error_set(err, KPROF_CORRUPT, "%s: a sweep without a measured point", path);
            goto done;
        }
        kp_json_string(&j, "from", "sweep");
        kp_notes_copy_keys(&j, doc, kp_notes_sweep_keys);
        kp_notes_device_extra(&j, doc);
        kp_json_bool(&j, "best", marked); /* false: no point was marked best; the fastest */
        kp_json_object_begin(&j, "point");
        static const char *const skip[] = {"threadgroup", "gpu_ms_median", NULL};
        kp_notes_copy_except(&j, point, skip);
        kp_json_object_end(&j);
        kp_json_array_begin(&j, "curve"); /* every size's median: the occupancy curve */
        cJSON_ArrayForEach(p, points)
        {
            char *t = kp_notes_dims(cJSON_GetObjectItemCaseSensitive(p, "threadgroup"));
            kp_json_object_begin(&j, NULL);
            kp_json_string(&j, "tg", t);
            if (kp_notes_number(p, "gpu_ms_median", &ms))
                kp_json_double(&j, "median_ms", ms);
            else
                kp_json_null(&j, "median_ms");
            kp_json_object_end(&j);
            free(t);
        }
        kp_json_array_end(&j);
        tg = cJSON_GetObjectItemCaseSensitive(point, "threadgroup");
        medians_from = point;
        median_key = "gpu_ms_median";
    } else {
        /* The first point; its first kernel, or the one --kernel names. */
        point = cJSON_GetArrayItem(points, 0);
        const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(point, "kernels");
        if (!cJSON_IsObject(point) || !cJSON_IsArray(kernels) || cJSON_GetArraySize(kernels) < 1) {
            st = kp_error_set(err, KPROF_CORRUPT, "%s: a bench result without a measured point",
                              path);
            goto done;
        }
        const cJSON *k = NULL, *each;
        cJSON_ArrayForEach(each, kernels)
        {
            const char *entry = kp_notes_string(each, "entry");
            const char *label = kp_notes_string(each, "label");
            if (!kernel || (entry && strcmp(entry, kernel) == 0) ||
                (label && *label && strcmp(label, kernel) == 0)) {
                k = each;
                break;
            }
        }
        if (!k) {
            kp_str names = {0};
            cJSON_ArrayForEach(each, kernels)
            {
                const char *entry = kp_notes_string(each, "entry");
                kp_str_printf(&names, "%s%s", names.len ? ", " : "", entry ? entry : "?");
            }
            st = kp_error_set(err, KPROF_INVALID, "--kernel %s: %s's first point measured %s",
                              kernel, path, names.data ? names.data : "no kernel");
            kp_str_free(&names);
            goto done;
        }
        measured = kp_notes_string(k, "entry");
        kp_json_string(&j, "from", "bench");
        kp_notes_copy_keys(&j, doc, kp_notes_bench_keys);
        static const char *const point_keys[] = {"point",         "axes",  "cache", "bytes",
                                                 "bytes_assumed", "flops", "stop",  "wall_s",
                                                 "comparison",    NULL};
        kp_notes_copy_keys(&j, point, point_keys);
        kp_json_int(&j, "points", cJSON_GetArraySize(points));
        kp_json_int(&j, "kernels", cJSON_GetArraySize(kernels));
        kp_json_object_begin(&j, "kernel");
        kp_notes_copy_except(&j, k, kp_notes_bench_kernel_skip);
        kp_json_object_end(&j);
        grid = cJSON_GetObjectItemCaseSensitive(point, "grid");
        tg = cJSON_GetObjectItemCaseSensitive(point, "tg");
        medians_from = k;
        median_key = "median_ms";
    }
    if (source != KP_NOTES_BENCH) {
        st = kp_notes_kernel_check(kernel, measured, path, err);
        if (st != KPROF_OK) goto done;
    }
    kp_json_object_end(&j);
    if (kp_json_finish(&j) != 0 || s.failed) {
        st = kp_error_set(err, s.failed ? KPROF_NOMEM : KPROF_CORRUPT,
                          "%s: cannot keep what it holds (nested too deep)", path);
        goto done;
    }
    const char *device = kp_notes_device(doc);
    note->kernel = kp_notes_strdup(measured);
    note->device = kp_notes_strdup(device);
    note->grid = kp_notes_dims(grid);
    note->tg = kp_notes_dims(tg);
    note->has_median = kp_notes_number(medians_from, median_key, &note->median_ms);
    note->data = kp_str_take(&s);
    if ((measured && !note->kernel) || (device && !note->device) || !note->data)
        st = kp_error_nomem(err);
done:
    kp_str_free(&s);
    return st;
}

static kprof_status kp_notes_from_file(const char *path, const char *kernel, kp_note *note,
                                       kp_error *err)
{
    cJSON *doc = NULL;
    kprof_status st = kp_json_file_read(path, "a run.json, sweep.json or bench.json", &doc, err);
    if (st != KPROF_OK) return st;
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s: not a result of kprof run, sweep or bench (JSON, but not an "
                            "object; expected a run.json, sweep.json or bench.json)",
                            path);
    }
    st = kp_notes_read_doc(doc, path, kernel, note, err);
    cJSON_Delete(doc);
    if (st != KPROF_OK) return st;
    /* Where it came from, as a path that still says so from elsewhere; the commit of the work
     * tree holding it (the kernel's own project, for a kernel folder inside one). */
    char real[PATH_MAX];
    note->made_from = strdup(realpath(path, real) ? real : path);
    if (!note->made_from) return kp_error_nomem(err);
    char commit[65];
    /* none: a note without a commit */
    if (kp_git_head_of(note->made_from, commit, sizeof commit) == 0) {
        note->git_commit = strdup(commit);
        if (!note->git_commit) return kp_error_nomem(err);
    }
    return KPROF_OK;
}

static kprof_status kp_notes_from_history(const char *ref, const char *kernel, kp_note *note,
                                          kp_error *err)
{
    kp_history_run run;
    kprof_status st = kp_history_get(ref, &run, NULL, NULL, NULL, err);
    if (st != KPROF_OK) return st;
    char from[64];
    snprintf(from, sizeof from, "history:%lld", (long long)run.id);
    st = kp_notes_kernel_check(kernel, run.kernel[0] ? run.kernel : NULL, from, err);
    if (st != KPROF_OK) return st;
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "from", "history");
    kp_json_int(&j, "history_id", run.id);
    kp_json_string(&j, "kind", run.kind);
    kp_json_int(&j, "measured_at", run.at);
    kp_json_string(&j, "backend", run.backend);
    kp_json_string(&j, "device_key", run.device_key);
    kp_json_string(&j, "driver", run.driver);
    kp_json_string(&j, "kprof_version", run.kprof_version);
    kp_json_string(&j, "target", run.target);
    kp_json_string(&j, "source", run.source_path);
    kp_json_string(&j, "source_hash", run.source_hash);
    kp_json_string(&j, "options", run.options);
    kp_json_string(&j, "buffers", run.buffers);
    if (run.git_dirty < 0)
        kp_json_null(&j, "git_dirty"); /* no work tree */
    else
        kp_json_bool(&j, "git_dirty", run.git_dirty);
    kp_json_double(&j, "min_ms", run.min_ms);
    kp_json_int(&j, "samples", run.nsamples);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    note->kernel = run.kernel[0] ? strdup(run.kernel) : NULL;
    note->device = run.device[0] ? strdup(run.device) : NULL;
    note->grid = run.grid[0] ? strdup(run.grid) : NULL;
    note->tg = run.tg[0] ? strdup(run.tg) : NULL;
    note->git_commit = run.git_commit[0] ? strdup(run.git_commit) : NULL;
    note->median_ms = run.median_ms;
    note->has_median = isfinite(run.median_ms) && run.median_ms > 0;
    note->made_from = strdup(from);
    note->data = kp_str_take(&s);
    kp_str_free(&s);
    if (!note->made_from || !note->data) return kp_error_nomem(err);
    return KPROF_OK;
}

/* ---- the store ------------------------------------------------------------------------------ */

/* Open the store to read: *s stays NULL (and OK) when there is none yet, or when it is of a
 * schema before notes (1; an empty file is 0) — no notes. */
static kprof_status kp_notes_open_read(kp_store **s, kp_error *err)
{
    kprof_status st = kp_store_open(1, s, err);
    if (st == KPROF_OK && kp_store_version(*s) < 2) {
        kp_store_close(*s);
        *s = NULL;
        return KPROF_OK;
    }
    if (st != KPROF_NOT_FOUND) return st;
    kp_error_clear(err); /* a fresh error, set just now: no store is no notes */
    return KPROF_OK;
}

/* ---- the subcommands ------------------------------------------------------------------------ */

/* TEXT '-': standard input, trailing newlines and spaces dropped. */
static char *kp_notes_read_stdin(void)
{
    kp_str s = {0};
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, stdin)) > 0)
        kp_str_append_n(&s, buf, got);
    if (ferror(stdin) || s.failed) {
        kp_str_free(&s);
        return NULL;
    }
    char *text = kp_str_take(&s);
    if (text) kp_rstrip(text);
    return text;
}

static int kp_notes_cmd_add(const kp_notes_args *a)
{
    if (a->npos < 1) return kp_cli_usage_error("notes", "notes add: give the note's TEXT");
    if (a->npos > 1)
        return kp_cli_usage_error("notes", "notes add: one TEXT (quote it): unexpected '%s'",
                                  a->pos[1]);
    kp_note note = {0}, stored = {0};
    kp_error err = {0};
    kp_store *s = NULL;
    int64_t id = 0;
    int rc = 0;
    kprof_status st = KPROF_OK;
    note.text = strcmp(a->pos[0], "-") == 0 ? kp_notes_read_stdin() : strdup(a->pos[0]);
    if (!note.text) {
        kp_error_set(&err, KPROF_IO, "cannot read the note from standard input");
        goto fail;
    }
    if (!*note.text) {
        rc = kp_cli_usage_error("notes", "notes add: the note's text is empty");
        goto done;
    }
    if (a->from && kp_notes_is_history_ref(a->from))
        st = kp_notes_from_history(a->from, a->kernel, &note, &err);
    else if (a->from)
        st = kp_notes_from_file(a->from, a->kernel, &note, &err);
    else if (a->kernel && !(note.kernel = strdup(a->kernel)))
        st = kp_error_nomem(&err);
    if (st != KPROF_OK) goto fail;
    note.at = (int64_t)time(NULL);
    if (kp_store_open(0, &s, &err) != KPROF_OK || kp_notes_add(s, &note, &id, &err) != KPROF_OK)
        goto fail;
    if (kp_notes_get(s, id, &stored, &err) != KPROF_OK) goto fail;
    if (a->json) {
        rc = kp_notes_json_one(&stored);
    } else {
        printf("note %lld added", (long long)stored.id);
        if (stored.kernel || stored.grid || stored.tg || stored.has_median || stored.device) {
            fputs(": ", stdout);
            kp_notes_put_evidence(stdout, &stored);
        }
        if (stored.git_commit) printf(" · commit %.12s", stored.git_commit);
        fputc('\n', stdout);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_error_clear(&err);
    kp_note_clear(&stored);
    kp_note_clear(&note);
    kp_store_close(s);
    return rc;
}

static int kp_notes_cmd_list(const kp_notes_args *a)
{
    if (a->npos > 0)
        return kp_cli_usage_error("notes", "notes list: unexpected '%s' (--kernel NAME filters)",
                                  a->pos[0]);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    int rc = 0;
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_list(s, a->kernel, &list, &err) != KPROF_OK)) {
        rc = kp_cli_fail(&err);
        goto done;
    }
    if (a->json) {
        rc = kp_notes_json_list(&list, NULL);
    } else if (list.n == 0) {
        printf("no notes");
        if (a->kernel) {
            fputs(" of kernel ", stdout);
            kp_notes_put(stdout, a->kernel);
        }
        printf(" (kprof notes add TEXT writes one)\n");
    } else {
        for (size_t i = 0; i < list.n; i++)
            kp_notes_print_row(&list.notes[i]);
    }
done:
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

static int kp_notes_cmd_search(const kp_notes_args *a)
{
    if (a->npos < 1) return kp_cli_usage_error("notes", "notes search: give WORDS to look for");
    kp_str query = {0};
    for (int i = 0; i < a->npos; i++)
        kp_str_printf(&query, "%s%s", i ? " " : "", a->pos[i]);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    int rc = 0;
    if (query.failed) {
        kp_error_nomem(&err);
        goto fail;
    }
    if (!query.data || !*query.data) {
        rc = kp_cli_usage_error("notes", "notes search: give WORDS to look for");
        goto done;
    }
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_search(s, query.data, &list, &err) != KPROF_OK))
        goto fail;
    if (a->json) {
        rc = kp_notes_json_list(&list, query.data);
    } else if (list.n == 0) {
        fputs("no note matches: ", stdout);
        kp_notes_put(stdout, query.data);
        fputc('\n', stdout);
    } else {
        for (size_t i = 0; i < list.n; i++)
            kp_notes_print_row(&list.notes[i]);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    kp_str_free(&query);
    return rc;
}

static int kp_notes_cmd_show(const kp_notes_args *a)
{
    if (a->npos != 1)
        return kp_cli_usage_error("notes", "notes show: give one note ID (kprof notes list "
                                           "shows them)");
    const char *text = a->pos[0];
    char *end = NULL;
    errno = 0;
    long long id = strtoll(text, &end, 10);
    if (errno || end == text || *end || id < 1 || text[0] < '0' || text[0] > '9')
        return kp_cli_usage_error("notes",
                                  "notes show: '%s' is not a note ID (a number from "
                                  "kprof notes list)",
                                  text);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note note = {0};
    int rc = 0;
    if (kp_notes_open_read(&s, &err) != KPROF_OK) goto fail;
    if (!s) {
        kp_error_set(&err, KPROF_NOT_FOUND, "no note %lld (there are no notes yet)", id);
        goto fail;
    }
    if (kp_notes_get(s, id, &note, &err) != KPROF_OK) goto fail;
    if (a->json)
        rc = kp_notes_json_one(&note);
    else
        kp_notes_print_note(&note);
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_note_clear(&note);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

static int kp_notes_cmd_export(const kp_notes_args *a)
{
    if (a->npos != 1)
        return kp_cli_usage_error("notes", "notes export: give one FILE ('-': standard output)");
    const char *path = a->pos[0];
    if (a->json && strcmp(path, "-") == 0)
        return kp_cli_usage_error("notes", "notes export - writes the notes' JSON to standard "
                                           "output: leave --json out");
    char store_path[4096];
    kp_store_path(store_path, sizeof store_path);
    const char *inputs[] = {store_path, NULL};
    kp_output out = {0};
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    kp_str doc = {0};
    int rc = 0;
    if (kp_output_open(&out, path, a->force ? KP_OUTPUT_FORCE : 0, inputs, &err) != KPROF_OK)
        goto fail;
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_list(s, NULL, &list, &err) != KPROF_OK))
        goto fail;
    kp_json j;
    kp_json_init(&j, &doc, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "kind", KP_NOTES_FILE_KIND);
    kp_json_int(&j, "version", KP_NOTES_FILE_VERSION);
    kp_json_string(&j, "kprof_version", KPROF_VERSION_STRING);
    kp_json_array_begin(&j, "notes");
    for (size_t i = 0; i < list.n; i++)
        kp_notes_json_note(&j, &list.notes[i], 0, NULL);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    if (doc.failed) {
        kp_error_nomem(&err);
        goto fail;
    }
    if (kp_output_write(&out, doc.data, doc.len, &err) != KPROF_OK ||
        kp_output_commit(&out, &err) != KPROF_OK)
        goto fail;
    if (a->json) {
        kp_str s2 = {0};
        kp_json jj;
        kp_json_init(&jj, &s2, 1);
        kp_json_object_begin(&jj, NULL);
        kp_json_string(&jj, "file", out.path);
        kp_json_int(&jj, "exported", (int64_t)list.n);
        kp_json_object_end(&jj);
        kp_json_finish(&jj);
        rc = kp_notes_print_json(&s2);
    } else if (strcmp(path, "-") != 0) {
        printf("exported %zu note%s to ", list.n, list.n == 1 ? "" : "s");
        kp_notes_put(stdout, out.path);
        fputc('\n', stdout);
    }
    goto done;
fail:
    kp_output_abort(&out);
    rc = kp_cli_fail(&err);
done:
    kp_str_free(&doc);
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

/* An optional string member: absent or null leaves *out NULL; -1 when it is something else. */
static int kp_notes_import_string(const cJSON *obj, const char *key, char **out)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return -1;
    *out = strdup(v->valuestring);
    return *out ? 0 : -2;
}

/* One note of an export file into note; CORRUPT naming what is wrong. */
static kprof_status kp_notes_import_note(const cJSON *o, const char *path, int index, kp_note *note,
                                         kp_error *err)
{
    memset(note, 0, sizeof *note);
    if (!cJSON_IsObject(o))
        return kp_error_set(err, KPROF_CORRUPT, "%s: note %d is not an object", path, index);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text");
    if (!cJSON_IsString(text) || !text->valuestring[0])
        return kp_error_set(err, KPROF_CORRUPT, "%s: note %d has no \"text\"", path, index);
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "at");
    if (!cJSON_IsNumber(at) || !(at->valuedouble >= 1) || at->valuedouble > 1e13 ||
        at->valuedouble != floor(at->valuedouble))
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s: note %d: \"at\" is not a time (whole unix seconds)", path, index);
    note->at = (int64_t)at->valuedouble;
    const cJSON *median = cJSON_GetObjectItemCaseSensitive(o, "median_ms");
    if (median && !cJSON_IsNull(median)) {
        if (!cJSON_IsNumber(median) || !isfinite(median->valuedouble) || median->valuedouble < 0)
            return kp_error_set(err, KPROF_CORRUPT,
                                "%s: note %d: \"median_ms\" is not a time (ms) or null", path,
                                index);
        note->median_ms = median->valuedouble;
        note->has_median = 1;
    }
    static const char *const keys[] = {"kernel", "device", "grid", "tg", "git_commit", "made_from"};
    char **fields[] = {&note->kernel, &note->device,     &note->grid,
                       &note->tg,     &note->git_commit, &note->made_from};
    kprof_status st = KPROF_OK;
    note->text = strdup(text->valuestring);
    if (!note->text) goto nomem;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int r = kp_notes_import_string(o, keys[i], fields[i]);
        if (r == -2) goto nomem;
        if (r < 0) {
            st = kp_error_set(err, KPROF_CORRUPT, "%s: note %d: \"%s\" is not a string or null",
                              path, index, keys[i]);
            goto fail;
        }
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    if (data && !cJSON_IsNull(data)) {
        if (!cJSON_IsObject(data)) {
            st = kp_error_set(err, KPROF_CORRUPT, "%s: note %d: \"data\" is not an object or null",
                              path, index);
            goto fail;
        }
        kp_str s = {0};
        kp_json j;
        kp_json_init(&j, &s, 0);
        kp_notes_emit(&j, NULL, data);
        int bad = kp_json_finish(&j) != 0;
        if (bad || s.failed) {
            kp_str_free(&s);
            if (!bad) goto nomem;
            st = kp_error_set(err, KPROF_CORRUPT, "%s: note %d: \"data\" is nested too deep", path,
                              index);
            goto fail;
        }
        note->data = kp_str_take(&s);
        if (!note->data) goto nomem;
    }
    return KPROF_OK;
nomem:
    st = kp_error_nomem(err);
fail:
    kp_note_clear(note);
    return st;
}

static int kp_notes_cmd_import(const kp_notes_args *a)
{
    if (a->npos != 1) return kp_cli_usage_error("notes", "notes import: give one FILE");
    const char *path = a->pos[0];
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note *notes = NULL;
    size_t n = 0, added = 0;
    cJSON *doc = NULL;
    int rc = 0;
    if (kp_json_file_read(path, "notes from kprof notes export", &doc, &err) != KPROF_OK) goto fail;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "notes");
    if (!cJSON_IsObject(doc)) {
        kp_error_set(&err, KPROF_CORRUPT,
                     "%s: not notes from kprof notes export (JSON, but not an object)", path);
        goto fail;
    }
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, KP_NOTES_FILE_KIND) != 0 ||
        !cJSON_IsArray(list)) {
        kp_error_set(&err, KPROF_CORRUPT,
                     "%s: not notes from kprof notes export (no \"kind\": \"%s\" with "
                     "\"notes\")",
                     path, KP_NOTES_FILE_KIND);
        goto fail;
    }
    if (!cJSON_IsNumber(version) || version->valuedouble != KP_NOTES_FILE_VERSION) {
        kp_error_set(&err, KPROF_CORRUPT, "%s: notes file version %g; this kprof reads version %d",
                     path, cJSON_IsNumber(version) ? version->valuedouble : 0.0,
                     KP_NOTES_FILE_VERSION);
        goto fail;
    }
    int count = cJSON_GetArraySize(list);
    notes = calloc(count > 0 ? (size_t)count : 1, sizeof *notes);
    if (!notes) {
        kp_error_nomem(&err);
        goto fail;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, list)
    {
        if (kp_notes_import_note(o, path, (int)n + 1, &notes[n], &err) != KPROF_OK) goto fail;
        n++;
    }
    if (kp_store_open(0, &s, &err) != KPROF_OK ||
        kp_notes_import(s, notes, n, &added, &err) != KPROF_OK)
        goto fail;
    if (a->json) {
        kp_str out = {0};
        kp_json j;
        kp_json_init(&j, &out, 1);
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "file", path);
        kp_json_int(&j, "notes", (int64_t)n);
        kp_json_int(&j, "added", (int64_t)added);
        kp_json_int(&j, "already_present", (int64_t)(n - added));
        kp_json_object_end(&j);
        kp_json_finish(&j);
        rc = kp_notes_print_json(&out);
    } else {
        printf("added %zu note%s from ", added, added == 1 ? "" : "s");
        kp_notes_put(stdout, path);
        if (n > added) printf(" (%zu already present)", n - added);
        fputc('\n', stdout);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    for (size_t i = 0; i < n; i++)
        kp_note_clear(&notes[i]);
    free(notes);
    cJSON_Delete(doc);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

/* ---- the command ---------------------------------------------------------------------------- */

typedef struct kp_notes_sub {
    const char *name;
    int (*run)(const kp_notes_args *a);
    unsigned options; /* KP_NOTES_OPT_* it takes */
} kp_notes_sub;

static const kp_notes_sub kp_notes_subs[] = {
    {"add", kp_notes_cmd_add, KP_NOTES_OPT_FROM | KP_NOTES_OPT_KERNEL | KP_NOTES_OPT_JSON},
    {"list", kp_notes_cmd_list, KP_NOTES_OPT_KERNEL | KP_NOTES_OPT_JSON},
    {"search", kp_notes_cmd_search, KP_NOTES_OPT_JSON},
    {"show", kp_notes_cmd_show, KP_NOTES_OPT_JSON},
    {"export", kp_notes_cmd_export, KP_NOTES_OPT_FORCE | KP_NOTES_OPT_JSON},
    {"import", kp_notes_cmd_import, KP_NOTES_OPT_JSON},
    {NULL, NULL, 0},
};

int kp_cmd_notes(int argc, char **argv)
{
    if (argc < 2)
        return kp_cli_usage_error("notes",
                                  "give what to do: add, list, search, show, export or import");
    const kp_notes_sub *sub = NULL;
    for (const kp_notes_sub *s = kp_notes_subs; s->name && !sub; s++)
        if (strcmp(s->name, argv[1]) == 0) sub = s;
    if (!sub)
        return kp_cli_usage_error("notes",
                                  "no notes command '%s' (add, list, search, show, export, "
                                  "import)",
                                  argv[1]);
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"kernel", required_argument, NULL, 'k'},
        {"json", no_argument, NULL, 'j'},
        {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    kp_notes_args a = {.sub = sub->name};
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(sub_argc, sub_argv, ":", longopts, NULL)) != -1) {
        unsigned opt = 0;
        const char *name = "";
        switch (c) {
        case 'f':
            a.from = optarg;
            opt = KP_NOTES_OPT_FROM;
            name = "--from";
            break;
        case 'k':
            a.kernel = optarg;
            opt = KP_NOTES_OPT_KERNEL;
            name = "--kernel";
            break;
        case 'j':
            a.json = 1;
            opt = KP_NOTES_OPT_JSON;
            name = "--json";
            break;
        case 'F':
            a.force = 1;
            opt = KP_NOTES_OPT_FORCE;
            name = "--force";
            break;
        case ':':
            return kp_cli_usage_error("notes", "%s needs a value", sub_argv[optind - 1]);
        default:
            /* A long one is the argument getopt just passed; a short one ("-5%" meant as a
             * TEXT) the character it stopped at. */
            if (strncmp(sub_argv[optind - 1], "--", 2) != 0 && optopt > 0 && optopt < 128)
                return kp_cli_usage_error("notes",
                                          "unknown option '-%c' (a TEXT starting with '-' goes "
                                          "after --)",
                                          optopt);
            return kp_cli_usage_error("notes",
                                      "unknown option '%s' (a TEXT starting with '-' "
                                      "goes after --)",
                                      sub_argv[optind - 1]);
        }
        if (!(sub->options & opt))
            return kp_cli_usage_error("notes", "notes %s takes no %s", sub->name, name);
    }
    if (a.kernel && !*a.kernel) return kp_cli_usage_error("notes", "--kernel needs a name");
    if (a.from && !*a.from) return kp_cli_usage_error("notes", "--from needs a file or run");
    a.npos = sub_argc - optind;
    a.pos = sub_argv + optind;
    return sub->run(&a);
}
