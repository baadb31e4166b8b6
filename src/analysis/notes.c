/*
 * notes.c — notes made from results and history runs, notes as JSON, the export file (see
 * notes.h). cJSON for what is read (lab/result_file.h, base/json_file.h), kprof's JSON writer
 * for what is written.
 */
#define _GNU_SOURCE
#include "analysis/notes.h"
#include "base/git.h"
#include "base/json_file.h"
#include "base/util.h"
#include "lab/result_file.h"
#include "store/history.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *kp_notes_strdup(const char *text)
{
    return text ? strdup(text) : NULL;
}

/* A note's time for people ("2026-05-01 14:03", local time) or in ISO 8601 UTC. */
void kp_note_time(int64_t at, int iso, char *buf, size_t n)
{
    time_t t = (time_t)at;
    struct tm tm;
    buf[0] = '\0';
    if (iso ? gmtime_r(&t, &tm) == NULL : localtime_r(&t, &tm) == NULL) return;
    strftime(buf, n, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M", &tm);
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

void kp_note_json(kp_json *j, const kp_note *n, int with_id, const double *score)
{
    char when[64];
    kp_json_object_begin(j, NULL);
    if (with_id) kp_json_int(j, "id", n->id);
    kp_json_int(j, "at", n->at);
    kp_note_time(n->at, 1, when, sizeof when);
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

/* ---- what a note is made from --------------------------------------------------------------- */

/* "17" or "@0", "@-1": a run of the history; anything else is a file. */
static int kp_notes_is_history_ref(const char *ref)
{
    int64_t id, back;
    return kp_history_parse_ref(ref, &id, &back, NULL) == KPROF_OK;
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

/* Fill note from the parsed file: kernel, device, grid, tg, median and data. */
static kprof_status kp_notes_read_doc(const cJSON *doc, kp_result_kind source, const char *path,
                                      const char *kernel, kp_note *note, kp_error *err)
{
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kprof_status st = KPROF_OK;
    const cJSON *grid = cJSON_GetObjectItemCaseSensitive(doc, "grid"), *tg = NULL, *point = NULL;
    const cJSON *medians_from = NULL;
    const char *median_key = NULL, *measured = kp_notes_string(doc, "entry");
    if (source == KP_RESULT_RUN) {
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
    } else if (source == KP_RESULT_SWEEP) {
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
    if (source != KP_RESULT_BENCH) {
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
    kp_result_kind kind;
    kprof_status st = kp_result_file_read(path, &doc, &kind, err);
    if (st != KPROF_OK) return st;
    st = kp_notes_read_doc(doc, kind, path, kernel, note, err);
    cJSON_Delete(doc);
    if (st != KPROF_OK) return st;
    /* Where it came from, as a path that still says so from elsewhere; the commit of the work
     * tree holding it (the kernel's own project, for a kernel folder inside one). */
    char real[PATH_MAX];
    note->made_from = strdup(realpath(path, real) ? real : path);
    if (!note->made_from) return kp_error_nomem(err);
    char commit[65];
    /* none: a note without a commit */
    if (kp_git_head_of(note->made_from, commit, sizeof commit)) {
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

/* The string obj[key] copied into *out (NULL when absent or null). KPROF_OK; KPROF_CORRUPT when
 * it is no string, KPROF_NOMEM (note `index` of path, err filled either way). */
static kprof_status kp_notes_import_string(const cJSON *obj, const char *key, char **out,
                                           const char *path, int index, kp_error *err)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return KPROF_OK;
    if (!cJSON_IsString(v))
        return kp_error_set(err, KPROF_CORRUPT, "%s: note %d: \"%s\" is not a string or null", path,
                            index, key);
    *out = strdup(v->valuestring);
    return *out ? KPROF_OK : kp_error_nomem(err);
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
        st = kp_notes_import_string(o, keys[i], fields[i], path, index, err);
        if (st != KPROF_OK) goto fail;
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

/* ---- the entry points ----------------------------------------------------------------------- */

kprof_status kp_note_make(const char *from, const char *kernel, kp_note *note, kp_error *err)
{
    if (kp_notes_is_history_ref(from)) return kp_notes_from_history(from, kernel, note, err);
    return kp_notes_from_file(from, kernel, note, err);
}

int kp_note_data_json(const kp_note *n, kp_str *out)
{
    cJSON *data = n->data ? cJSON_Parse(n->data) : NULL;
    int is_object = cJSON_IsObject(data);
    if (is_object) {
        kp_json j;
        kp_json_init(&j, out, 1);
        kp_notes_emit(&j, NULL, data);
        kp_json_finish(&j);
    }
    cJSON_Delete(data);
    return is_object;
}

void kp_notes_export_json(kp_str *doc, const kp_note_list *list)
{
    kp_json j;
    kp_json_init(&j, doc, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "kind", KP_NOTES_FILE_KIND);
    kp_json_int(&j, "version", KP_NOTES_FILE_VERSION);
    kp_json_string(&j, "kprof_version", KPROF_VERSION_STRING);
    kp_json_array_begin(&j, "notes");
    for (size_t i = 0; i < list->n; i++)
        kp_note_json(&j, &list->notes[i], 0, NULL);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    kp_json_finish(&j);
}

/* End j's document: NOMEM when doc could not grow. */
static kprof_status kp_notes_doc_end(kp_json *j, kp_error *err)
{
    return kp_json_finish(j) != 0 ? kp_error_nomem(err) : KPROF_OK;
}

kprof_status kp_notes_list_json(kp_str *doc, const kp_note_list *list, const char *query,
                                kp_error *err)
{
    kp_json j;
    kp_json_init(&j, doc, 1);
    kp_json_object_begin(&j, NULL);
    if (query) kp_json_string(&j, "query", query);
    kp_json_int(&j, "count", (int64_t)list->n);
    kp_json_array_begin(&j, "notes");
    for (size_t i = 0; i < list->n; i++)
        kp_note_json(&j, &list->notes[i], 1, list->scores ? &list->scores[i] : NULL);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    return kp_notes_doc_end(&j, err);
}

kprof_status kp_note_doc_json(kp_str *doc, const kp_note *n, kp_error *err)
{
    kp_json j;
    kp_json_init(&j, doc, 1);
    kp_note_json(&j, n, 1, NULL);
    return kp_notes_doc_end(&j, err);
}

kprof_status kp_notes_exported_json(kp_str *doc, const char *file, size_t exported, kp_error *err)
{
    kp_json j;
    kp_json_init(&j, doc, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "file", file);
    kp_json_int(&j, "exported", (int64_t)exported);
    kp_json_object_end(&j);
    return kp_notes_doc_end(&j, err);
}

kprof_status kp_notes_imported_json(kp_str *doc, const char *file, size_t notes, size_t added,
                                    kp_error *err)
{
    kp_json j;
    kp_json_init(&j, doc, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "file", file);
    kp_json_int(&j, "notes", (int64_t)notes);
    kp_json_int(&j, "added", (int64_t)added);
    kp_json_int(&j, "already_present", (int64_t)(notes - added));
    kp_json_object_end(&j);
    return kp_notes_doc_end(&j, err);
}

kprof_status kp_notes_import_read(const char *path, kp_note **out, size_t *nout, kp_error *err)
{
    *out = NULL;
    *nout = 0;
    cJSON *doc = NULL;
    kp_note *notes = NULL;
    size_t n = 0;
    kprof_status st = kp_json_file_read(path, "notes from kprof notes export", &doc, err);
    if (st != KPROF_OK) return st;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "notes");
    if (!cJSON_IsObject(doc)) {
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s: not notes from kprof notes export (JSON, but not an object)", path);
        goto fail;
    }
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, KP_NOTES_FILE_KIND) != 0 ||
        !cJSON_IsArray(list)) {
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s: not notes from kprof notes export (no \"kind\": \"%s\" with "
                          "\"notes\")",
                          path, KP_NOTES_FILE_KIND);
        goto fail;
    }
    if (!cJSON_IsNumber(version) || version->valuedouble != KP_NOTES_FILE_VERSION) {
        st = kp_error_set(
            err, KPROF_CORRUPT, "%s: notes file version %g; this kprof reads version %d", path,
            cJSON_IsNumber(version) ? version->valuedouble : 0.0, KP_NOTES_FILE_VERSION);
        goto fail;
    }
    int count = cJSON_GetArraySize(list);
    notes = calloc(count > 0 ? (size_t)count : 1, sizeof *notes);
    if (!notes) {
        st = kp_error_nomem(err);
        goto fail;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, list)
    {
        st = kp_notes_import_note(o, path, (int)n + 1, &notes[n], err);
        if (st != KPROF_OK) goto fail;
        n++;
    }
    cJSON_Delete(doc);
    *out = notes;
    *nout = n;
    return KPROF_OK;
fail:
    for (size_t i = 0; i < n; i++)
        kp_note_clear(&notes[i]);
    free(notes);
    cJSON_Delete(doc);
    return st;
}
