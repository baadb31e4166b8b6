/*
 * result_file.c — the lab's result files read back (see result_file.h) with cJSON, through
 * json_file.h's strict reader.
 */
#include "lab/result_file.h"
#include "base/json_file.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kp_result_kind_of(const cJSON *doc, kp_result_kind *kind)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    const char *named = cJSON_IsString(k) ? k->valuestring : NULL;
    /* A run.json or sweep.json before their version 1 has no "kind": its members tell. */
    int sweep = cJSON_IsArray(points) && cJSON_GetObjectItemCaseSensitive(doc, "sizes_measured");
    int run = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "gpu_ms_median")) &&
              cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "threadgroup"));
    if (named && strcmp(named, "bench") == 0 && cJSON_IsArray(points))
        *kind = KP_RESULT_BENCH;
    else if ((!k || (named && strcmp(named, "sweep") == 0)) && sweep)
        *kind = KP_RESULT_SWEEP;
    else if ((!k || (named && strcmp(named, "run") == 0)) && run)
        *kind = KP_RESULT_RUN;
    else
        return 0;
    return 1;
}

kprof_status kp_result_check_version(const cJSON *doc, kp_result_kind kind, const char *path,
                                     kp_error *err)
{
    static const char *const names[] = {
        [KP_RESULT_RUN] = "run", [KP_RESULT_SWEEP] = "sweep", [KP_RESULT_BENCH] = "bench"};
    int want = kind == KP_RESULT_BENCH   ? KP_RESULT_BENCH_VERSION
               : kind == KP_RESULT_SWEEP ? KP_RESULT_SWEEP_VERSION
                                         : KP_RESULT_RUN_VERSION;
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    /* A run or sweep result from before their version 1: no "version", no "kind". */
    if (!version && kind != KP_RESULT_BENCH && !cJSON_GetObjectItemCaseSensitive(doc, "kind"))
        return KPROF_OK;
    if (cJSON_IsNumber(version) && version->valuedouble == want) return KPROF_OK;
    return kp_error_set(err, KPROF_CORRUPT, "%s: %s result version %g; this kprof reads version %d",
                        path, names[kind], cJSON_IsNumber(version) ? version->valuedouble : 0.0,
                        want);
}

kprof_status kp_result_file_read(const char *path, cJSON **doc, kp_result_kind *kind, kp_error *err)
{
    *doc = NULL;
    cJSON *d = NULL;
    kprof_status st = kp_json_file_read(path, "a run.json, sweep.json or bench.json", &d, err);
    if (st != KPROF_OK) return st;
    if (!cJSON_IsObject(d))
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s: not a result of kprof run, sweep or bench (JSON, but not an "
                          "object; expected a run.json, sweep.json or bench.json)",
                          path);
    else if (!kp_result_kind_of(d, kind))
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s: not a result of kprof run, sweep or bench (run.json, sweep.json, "
                          "bench.json or their --json output)",
                          path);
    else
        st = kp_result_check_version(d, *kind, path, err);
    if (st != KPROF_OK) {
        cJSON_Delete(d);
        return st;
    }
    *doc = d;
    return KPROF_OK;
}

void kp_bench_file_free(kp_bench_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->npoints; i++) {
        free(f->points[i].ms);
        free(f->points[i].mhz);
    }
    free(f->points);
    free(f);
}

const kp_bench_file_point *kp_bench_file_find(const kp_bench_file *f, const char *point, int cold)
{
    for (int i = 0; f && i < f->npoints; i++)
        if (f->points[i].cold == cold && strcmp(f->points[i].point, point) == 0)
            return &f->points[i];
    return NULL;
}

/* arr, a list of numbers not below 0, into a heap array. KPROF_OK; KPROF_CORRUPT when it is not
 * one ("PATH: point INDEX: "KEY" is not a list of WHAT"), KPROF_NOMEM (err filled either way). */
static kprof_status kp_bench_file_numbers(const cJSON *arr, double **out, size_t *n,
                                          const char *path, int index, const char *key,
                                          const char *what, kp_error *err)
{
    int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (count <= 0) goto corrupt;
    double *v = malloc((size_t)count * sizeof *v);
    if (!v) return kp_error_nomem(err);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0) {
            free(v);
            goto corrupt;
        }
        v[i++] = e->valuedouble;
    }
    *out = v;
    *n = (size_t)count;
    return KPROF_OK;
corrupt:
    return kp_error_set(err, KPROF_CORRUPT, "%s: point %d: \"%s\" is not a list of %s", path, index,
                        key, what);
}

kprof_status kp_bench_file_read(const char *path, kp_bench_file **out, kp_error *err)
{
    *out = NULL;
    cJSON *doc = NULL;
    kprof_status st = kp_json_file_read(path, "a bench.json from `kprof bench`", &doc, err);
    if (st != KPROF_OK) return st;
    kp_bench_file *f = calloc(1, sizeof *f);
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(doc, "device");
    kp_result_kind kind;
    if (!f) {
        st = kp_error_nomem(err);
        goto done;
    }
    if (!kp_result_kind_of(doc, &kind) || kind != KP_RESULT_BENCH) {
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s: not a `kprof bench` result (no \"kind\": \"bench\" with "
                          "\"points\")",
                          path);
        goto done;
    }
    st = kp_result_check_version(doc, kind, path, err);
    if (st != KPROF_OK) goto done;
    if (cJSON_IsString(device)) kp_strlcpy(f->device, device->valuestring, sizeof f->device);
    int count = cJSON_GetArraySize(points);
    f->points = calloc(count > 0 ? (size_t)count : 1, sizeof *f->points);
    if (!f->points) {
        st = kp_error_nomem(err);
        goto done;
    }
    const cJSON *p;
    int index = 0;
    cJSON_ArrayForEach(p, points)
    {
        index++;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "point");
        const cJSON *cache = cJSON_GetObjectItemCaseSensitive(p, "cache");
        const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(p, "kernels");
        int nk = cJSON_IsArray(kernels) ? cJSON_GetArraySize(kernels) : 0;
        if (!cJSON_IsString(name) || !cJSON_IsString(cache) || nk < 1 ||
            (strcmp(cache->valuestring, "hot") != 0 && strcmp(cache->valuestring, "cold") != 0)) {
            st = kp_error_set(err, KPROF_CORRUPT,
                              "%s: point %d lacks \"point\", \"cache\" (hot or cold) or "
                              "\"kernels\"",
                              path, index);
            goto done;
        }
        const cJSON *k = cJSON_GetArrayItem(kernels, nk - 1);
        kp_bench_file_point *fp = &f->points[f->npoints];
        kp_strlcpy(fp->point, name->valuestring, sizeof fp->point);
        fp->cold = strcmp(cache->valuestring, "cold") == 0;
        st = kp_bench_file_numbers(cJSON_GetObjectItemCaseSensitive(k, "samples_ms"), &fp->ms,
                                   &fp->n, path, index, "samples_ms", "times (ms)", err);
        if (st != KPROF_OK) goto done;
        f->npoints++;
        const cJSON *entry = cJSON_GetObjectItemCaseSensitive(k, "entry");
        const cJSON *source = cJSON_GetObjectItemCaseSensitive(k, "source");
        if (cJSON_IsString(entry)) kp_strlcpy(fp->entry, entry->valuestring, sizeof fp->entry);
        if (cJSON_IsString(source)) kp_strlcpy(fp->source, source->valuestring, sizeof fp->source);
        const cJSON *rounds = cJSON_GetObjectItemCaseSensitive(k, "rounds");
        if (cJSON_IsNumber(rounds) && rounds->valuedouble >= 1 &&
            rounds->valuedouble <= (double)fp->n)
            fp->rounds = (size_t)rounds->valuedouble;
        /* --repeat: the sessions' medians (optional; ignored when not a list of times, but
         * running out of memory is a failure). */
        double *runs = NULL;
        size_t nr = 0;
        const cJSON *rm = cJSON_GetObjectItemCaseSensitive(k, "run_medians_ms");
        kprof_status got = rm ? kp_bench_file_numbers(rm, &runs, &nr, path, index, "run_medians_ms",
                                                      "times (ms)", NULL)
                              : KPROF_CORRUPT;
        if (got == KPROF_NOMEM) {
            st = kp_error_nomem(err);
            goto done;
        }
        if (got == KPROF_OK) {
            for (size_t i = 0; i < nr && fp->nruns < KP_BENCH_MAX_REPEAT; i++)
                if (runs[i] > 0) fp->run_median[fp->nruns++] = runs[i];
        }
        free(runs);
        const cJSON *clk = cJSON_GetObjectItemCaseSensitive(k, "clock_samples_mhz");
        size_t nc = 0;
        if (clk) {
            st = kp_bench_file_numbers(clk, &fp->mhz, &nc, path, index, "clock_samples_mhz",
                                       "clock readings (MHz)", NULL);
            if (st == KPROF_NOMEM) {
                kp_error_nomem(err);
                goto done;
            }
        }
        if (clk && (st != KPROF_OK || nc != fp->n)) {
            free(fp->mhz);
            fp->mhz = NULL;
            st = kp_error_set(err, KPROF_CORRUPT,
                              "%s: point %d: \"clock_samples_mhz\" does not match its samples",
                              path, index);
            goto done;
        }
    }
done:
    cJSON_Delete(doc);
    if (st != KPROF_OK) {
        kp_bench_file_free(f);
        return st;
    }
    *out = f;
    return KPROF_OK;
}
