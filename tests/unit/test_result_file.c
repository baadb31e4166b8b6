/* test_result_file.c — the lab's result files read back (src/lab/result_file.h): which of run,
 * sweep and bench a file is, bench.json's version, a bench result's points; and a note made from
 * a result and an export file read back (src/analysis/notes.h); a bench session written as
 * bench.json and read back; a sweep written as sweep.json and parsed back. */
#include "analysis/notes.h"
#include "lab/result_file.h"
#include "test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/kprof-test-result-XXXXXX";

/* Write text to dir/name; the path (static, until the next call). */
static const char *put(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static const char *const bench_v1 =
    "{\"version\": 1, \"kind\": \"bench\", \"device\": \"Fake GPU\", \"points\": ["
    "{\"point\": \"N=1M\", \"cache\": \"hot\", \"grid\": [1024], \"tg\": [64], \"kernels\": ["
    "{\"entry\": \"k\", \"source\": \"k.cl\", \"median_ms\": 1.5, \"rounds\": 2,"
    " \"samples_ms\": [1, 2, 1.5, 1.5]}]},"
    "{\"point\": \"N=1M\", \"cache\": \"cold\", \"kernels\": ["
    "{\"entry\": \"k\", \"samples_ms\": [3, 3], \"run_medians_ms\": [3, 2.5]}]}]}";

static void test_kinds(void)
{
    static const struct {
        const char *text;
        int kind; /* -1: not a result */
    } cases[] = {
        {"{\"gpu_ms_median\": 1, \"threadgroup\": [64]}", KP_RESULT_RUN},
        {"{\"points\": [], \"sizes_measured\": 0}", KP_RESULT_SWEEP},
        {"{\"kind\": \"bench\", \"version\": 1, \"points\": []}", KP_RESULT_BENCH},
        {"{\"version\": 1, \"kind\": \"run\", \"gpu_ms_median\": 1, \"threadgroup\": [64]}",
         KP_RESULT_RUN},
        {"{\"version\": 1, \"kind\": \"sweep\", \"points\": [], \"sizes_measured\": 0}",
         KP_RESULT_SWEEP},
        {"{\"kind\": \"sweep\", \"gpu_ms_median\": 1, \"threadgroup\": [64]}", -1},
        {"{\"kind\": \"bench\", \"gpu_ms_median\": 1, \"threadgroup\": [64]}", -1},
        {"{\"points\": []}", -1},
        {"{}", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *doc = cJSON_Parse(cases[i].text);
        kp_result_kind kind = KP_RESULT_RUN;
        int known = kp_result_kind_of(doc, &kind);
        CHECK_INT(known ? (int)kind : -1, cases[i].kind);
        cJSON_Delete(doc);
    }
}

static void test_read(void)
{
    kp_error err = {0};
    cJSON *doc = NULL;
    kp_result_kind kind;
    CHECK_INT(kp_result_file_read(put("b.json", bench_v1), &doc, &kind, &err), KPROF_OK);
    CHECK_INT(kind, KP_RESULT_BENCH);
    cJSON_Delete(doc);
    /* Another version, whichever reader. */
    const char *v2 = put("v2.json", "{\"version\": 2, \"kind\": \"bench\", \"points\": []}");
    CHECK_INT(kp_result_file_read(v2, &doc, &kind, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "bench result version 2; this kprof reads version 1");
    CHECK(doc == NULL);
    kp_error_clear(&err);
    kp_bench_file *f = NULL;
    CHECK_INT(kp_bench_file_read(v2, &f, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "bench result version 2");
    CHECK(f == NULL);
    kp_error_clear(&err);
    /* run.json and sweep.json: version 1, or none (a kprof before it); another is refused. */
    CHECK_INT(kp_result_file_read(put("r1.json", "{\"version\": 1, \"kind\": \"run\", "
                                                 "\"gpu_ms_median\": 1, \"threadgroup\": [64]}"),
                                  &doc, &kind, &err),
              KPROF_OK);
    CHECK_INT(kind, KP_RESULT_RUN);
    cJSON_Delete(doc);
    CHECK_INT(kp_result_file_read(put("r0.json", "{\"gpu_ms_median\": 1, \"threadgroup\": [64]}"),
                                  &doc, &kind, &err),
              KPROF_OK);
    CHECK_INT(kind, KP_RESULT_RUN);
    cJSON_Delete(doc);
    CHECK_INT(kp_result_file_read(put("s2.json", "{\"version\": 2, \"kind\": \"sweep\", "
                                                 "\"points\": [], \"sizes_measured\": 0}"),
                                  &doc, &kind, &err),
              KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "sweep result version 2; this kprof reads version 1");
    CHECK(doc == NULL);
    kp_error_clear(&err);
    /* Not an object; not a result. */
    CHECK_INT(kp_result_file_read(put("a.json", "[1]"), &doc, &kind, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "JSON, but not an object");
    kp_error_clear(&err);
    CHECK_INT(kp_result_file_read(put("o.json", "{\"x\": 1}"), &doc, &kind, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "not a result of kprof run, sweep or bench");
    kp_error_clear(&err);
    CHECK_INT(kp_bench_file_read(put("r.json", "{\"gpu_ms_median\": 1, \"threadgroup\": [64]}"), &f,
                                 &err),
              KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "not a `kprof bench` result");
    kp_error_clear(&err);
}

static void test_bench_points(void)
{
    kp_error err = {0};
    kp_bench_file *f = NULL;
    CHECK_INT(kp_bench_file_read(put("b.json", bench_v1), &f, &err), KPROF_OK);
    if (!f) return;
    CHECK_STR(f->device, "Fake GPU");
    CHECK_INT(f->npoints, 2);
    const kp_bench_file_point *hot = kp_bench_file_find(f, "N=1M", 0);
    const kp_bench_file_point *cold = kp_bench_file_find(f, "N=1M", 1);
    CHECK(hot && cold && hot != cold);
    if (hot && cold) {
        CHECK_INT(hot->n, 4);
        CHECK_INT(hot->rounds, 2);
        CHECK_STR(hot->entry, "k");
        CHECK_STR(hot->source, "k.cl");
        CHECK_INT(cold->nruns, 2);
        CHECK_NEAR(cold->run_median[1], 2.5, 0);
    }
    CHECK(kp_bench_file_find(f, "N=2M", 0) == NULL);
    kp_bench_file_free(f);
}

/* What kp_bench_result_write writes, kp_bench_file_read reads: the point, its cache state, the
 * samples, the kernel's entry and source. */
static void test_bench_round_trip(void)
{
    kp_error err = {0};
    kp_bench_plan plan = {.grid = "N", .tg = "64", .naxes = 1};
    kp_strlcpy(plan.axes[0].name, "N", sizeof plan.axes[0].name);
    kp_bench_row row = {.cold = 1, .nsides = 1, .bytes = 4096};
    row.vars.n = 1;
    kp_strlcpy(row.vars.v[0].name, "N", sizeof row.vars.v[0].name);
    kp_strlcpy(row.vars.v[0].text, "1K", sizeof row.vars.v[0].text);
    row.vars.v[0].value = 1024;
    row.vars.v[0].numeric = 1;
    row.launch.dims = 1;
    row.launch.grid[0] = 1024;
    row.launch.tg[0] = 64;
    kp_bench_outcome_init(&row.outcome);
    const double ms[] = {1.0, 1.25, 1.5, 1.25, 1.0};
    CHECK_INT(kp_bench_side_add(&row.side[0], ms, NULL, 5, &err), KPROF_OK);
    CHECK_INT(kp_bench_summarise(&row.side[0], &err), KPROF_OK);
    kp_bench_session s = {.plan = &plan, .rows = &row, .nrows = 1};
    kp_strlcpy(s.info.device.name, "Fake GPU", sizeof s.info.device.name);
    kp_strlcpy(s.entry_name[0], "k", sizeof s.entry_name[0]);
    kp_strlcpy(s.source[0], "k.cl", sizeof s.source[0]);
    kp_bench_result_meta meta = {.fail_if_slower = -1};
    kp_str out = {0};
    CHECK_INT(kp_bench_result_write(&out, &s, &meta, &err), KPROF_OK);
    kp_bench_file *f = NULL;
    CHECK_INT(kp_bench_file_read(put("w.json", out.data ? out.data : ""), &f, &err), KPROF_OK);
    if (f) {
        CHECK_STR(f->device, "Fake GPU");
        const kp_bench_file_point *p = kp_bench_file_find(f, "N=1024", 1); /* numbers as numbers */
        CHECK(p != NULL);
        if (p) {
            CHECK_INT(p->n, 5);
            CHECK_NEAR(p->ms[2], 1.5, 0);
            CHECK_STR(p->entry, "k");
            CHECK_STR(p->source, "k.cl");
        }
    }
    CHECK(strstr(out.data ? out.data : "", "fails_gate") == NULL); /* not asked */
    kp_bench_file_free(f);
    kp_str_free(&out);
    kp_bench_side_free(&row.side[0]);
}

static void test_notes(void)
{
    kp_error err = {0};
    kp_note note = {0};
    CHECK_INT(kp_note_make(put("b.json", bench_v1), NULL, &note, &err), KPROF_OK);
    CHECK_STR(note.kernel, "k");
    CHECK_STR(note.device, "Fake GPU");
    CHECK_STR(note.grid, "1024");
    CHECK_STR(note.tg, "64");
    CHECK(note.has_median && note.median_ms == 1.5);
    CHECK_CONTAINS(note.data, "\"from\":\"bench\"");
    CHECK(strstr(note.data, "samples_ms") == NULL); /* every sample is left out */
    kp_note_clear(&note);
    CHECK_INT(kp_note_make(put("b.json", bench_v1), "other", &note, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "--kernel other");
    kp_error_clear(&err);
    kp_note_clear(&note);
    /* An export written, read back. */
    kp_note n = {.at = 1700000000,
                 .text = "found it",
                 .kernel = "k",
                 .median_ms = 2,
                 .has_median = 1,
                 .data = "{\"from\":\"run\"}"};
    kp_note_list list = {.notes = &n, .n = 1};
    kp_str doc = {0};
    kp_notes_export_json(&doc, &list);
    CHECK(!doc.failed);
    kp_note *back = NULL;
    size_t nback = 0;
    CHECK_INT(kp_notes_import_read(put("n.json", doc.data ? doc.data : ""), &back, &nback, &err),
              KPROF_OK);
    CHECK_INT(nback, 1);
    if (nback == 1) {
        CHECK_STR(back[0].text, "found it");
        CHECK_STR(back[0].kernel, "k");
        CHECK_STR(back[0].data, "{\"from\":\"run\"}");
        CHECK_INT(back[0].at, 1700000000);
        kp_note_clear(&back[0]);
    }
    free(back);
    kp_str_free(&doc);
    CHECK_INT(kp_notes_import_read(put("n2.json", "{\"kind\": \"kprof-notes\", \"version\": 2, "
                                                  "\"notes\": []}"),
                                   &back, &nback, &err),
              KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "notes file version 2");
    kp_error_clear(&err);
}

/* sweep.json written from a synthetic sweep (kp_sweep_result_write) and parsed back: its kind
 * and version, what it says of the sweep, the measured points only, best, tie and --tg. */
static void test_sweep_write(void)
{
    static kp_sweep s; /* large: not on the stack */
    memset(&s, 0, sizeof s);
    kp_kernel_meta kernel = {.nparams = 0};
    kp_strlcpy(kernel.name, "scale", sizeof kernel.name);
    s.info.kernel = &kernel;
    kp_strlcpy(s.info.device.name, "Fake GPU", sizeof s.info.device.name);
    kp_strlcpy(s.info.device.backend, "opencl", sizeof s.info.device.backend);
    kp_strlcpy(s.info.source_path, "k.cl", sizeof s.info.source_path);
    kp_strlcpy(s.info.timer, "opencl-profiling", sizeof s.info.timer);
    s.info.device.max_tg = 1024;
    s.npoints = 3;
    s.iters = 10;
    s.warmup = 2;
    s.bytes = 4096;
    s.bytes_assumed = 1;
    s.kernel_max_tg = 512;
    s.best = 1;
    s.your_tg = 2;
    const uint64_t tgs[3] = {64, 128, 256};
    const double medians[3] = {2.0, 1.0, 0};
    for (int i = 0; i < 3; i++) {
        kp_sweep_point *p = &s.points[i];
        p->run.launch.dims = 1;
        p->run.launch.grid[0] = 1024;
        p->run.launch.tg[0] = tgs[i];
        p->threads = tgs[i];
        p->measured = i < 2; /* the third, --tg's, was not measured: it stopped part-way */
        p->run.iters = i == 0 ? 10 : 4; /* the second cut by the time budget */
        p->run.stats.median = medians[i];
        p->run.stats.min = medians[i];
    }
    s.points[1].best = 1;
    s.points[0].tie = 1;
    s.points[0].have_ci = 1;
    s.points[0].median_ci.lo = 0.75;
    s.points[0].median_ci.hi = 2.5;
    s.nwarnings = 1;
    kp_strlcpy(s.warnings[0].id, "register_pressure", sizeof s.warnings[0].id);
    kp_strlcpy(s.warnings[0].text, "many registers", sizeof s.warnings[0].text);

    kp_error err = {0};
    kp_str out = {0};
    CHECK_INT(kp_sweep_result_write(&out, &s, 0, "SIGINT", &err), KPROF_OK);
    cJSON *doc = cJSON_Parse(out.data ? out.data : "");
    CHECK(doc != NULL);
    kp_result_kind kind = KP_RESULT_RUN;
    CHECK_INT(kp_result_kind_of(doc, &kind), 1);
    CHECK_INT(kind, KP_RESULT_SWEEP);
    CHECK_INT(kp_result_check_version(doc, KP_RESULT_SWEEP, "sweep.json", &err), KPROF_OK);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "version");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == KP_RESULT_SWEEP_VERSION);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "kind")), "sweep");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "entry")), "scale");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "backend")), "opencl");
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(doc, "device");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dev, "name")), "Fake GPU");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "complete")));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "signal")), "SIGINT");
    const cJSON *grid = cJSON_GetObjectItemCaseSensitive(doc, "grid");
    CHECK_INT(cJSON_GetArraySize(grid), 1);
    CHECK_INT(cJSON_GetArrayItem(grid, 0)->valuedouble, 1024);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "iterations")->valuedouble, 10);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "warmup")->valuedouble, 2);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "time_budget_s")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "time_budget_cut")));
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "bytes")->valuedouble, 4096);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "bytes_assumed_once_per_element")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "ceiling_gb_per_s")));
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "kernel_max_threadgroup_size")->valuedouble,
              512);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "threadgroup_rule")));
    const cJSON *yours = cJSON_GetObjectItemCaseSensitive(doc, "your_threadgroup");
    CHECK(cJSON_IsArray(yours) && cJSON_GetArrayItem(yours, 0)->valuedouble == 256);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "sizes_planned")->valuedouble, 3);
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(doc, "sizes_measured")->valuedouble, 2);
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    CHECK_INT(cJSON_GetArraySize(points), 2); /* the measured ones */
    const cJSON *p0 = cJSON_GetArrayItem(points, 0), *p1 = cJSON_GetArrayItem(points, 1);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p0, "best")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p0, "tie")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p1, "best")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p1, "tie")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p1, "your_tg")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p0, "above_ceiling_reason")));
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(p0, "gpu_ms_median_ci_low");
    CHECK(cJSON_IsNumber(lo) && lo->valuedouble == 0.75);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p1, "gpu_ms_median_ci_high")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "compared")));
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(doc, "best_threadgroup");
    CHECK(cJSON_IsArray(best) && cJSON_GetArrayItem(best, 0)->valuedouble == 128);
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(doc, "warnings");
    CHECK_INT(cJSON_GetArraySize(warnings), 1);
    CHECK_STR(cJSON_GetStringValue(
                  cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(warnings, 0), "id")),
              "register_pressure");
    cJSON_Delete(doc);
    kp_str_free(&out);

    /* Complete, no signal, --tg measured, one point only: no comparison, no best. */
    s.points[2].measured = 1;
    s.points[2].run.stats.median = 3.0;
    s.points[2].run.iters = 10;
    s.points[0].measured = s.points[1].measured = 0;
    s.points[1].best = s.points[0].tie = 0;
    s.best = -1;
    CHECK_INT(kp_sweep_result_write(&out, &s, 1, NULL, &err), KPROF_OK);
    doc = cJSON_Parse(out.data ? out.data : "");
    CHECK(doc != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "complete")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "signal")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "time_budget_cut")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "compared")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "best_threadgroup")));
    points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    CHECK_INT(cJSON_GetArraySize(points), 1);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(points, 0), "your_tg")));
    cJSON_Delete(doc);
    kp_str_free(&out);
    kp_error_clear(&err);
}

/* A point's lists of numbers: samples_ms must be one (CORRUPT, naming the point); a
 * run_medians_ms that is not one is ignored; clock_samples_mhz must match the samples. */
static void test_bench_lists(void)
{
    static const char *const head =
        "{\"version\": 1, \"kind\": \"bench\", \"points\": [{\"point\": \"p\", "
        "\"cache\": \"hot\", \"kernels\": [{";
    char text[512];
    kp_error err = {0};
    kp_bench_file *f = NULL;

    snprintf(text, sizeof text, "%s\"samples_ms\": [1, -2]}]}]}", head);
    const char *path = put("l.json", text);
    CHECK_INT(kp_bench_file_read(path, &f, &err), KPROF_CORRUPT);
    CHECK(f == NULL);
    CHECK_CONTAINS(err.message, ": point 1: \"samples_ms\" is not a list of times (ms)");
    kp_error_clear(&err);

    snprintf(text, sizeof text, "%s\"samples_ms\": []}]}]}", head);
    CHECK_INT(kp_bench_file_read(put("l.json", text), &f, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "\"samples_ms\" is not a list of times (ms)");
    kp_error_clear(&err);

    snprintf(text, sizeof text, "%s\"samples_ms\": [1, 2], \"run_medians_ms\": \"x\"}]}]}", head);
    CHECK_INT(kp_bench_file_read(put("l.json", text), &f, &err), KPROF_OK);
    if (f) {
        CHECK_INT(f->points[0].n, 2);
        CHECK_INT(f->points[0].nruns, 0);
    }
    kp_bench_file_free(f);
    f = NULL;

    snprintf(text, sizeof text, "%s\"samples_ms\": [1, 2], \"clock_samples_mhz\": [1500]}]}]}",
             head);
    CHECK_INT(kp_bench_file_read(put("l.json", text), &f, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, ": point 1: \"clock_samples_mhz\" does not match its samples");
    kp_error_clear(&err);
    snprintf(text, sizeof text,
             "%s\"samples_ms\": [1, 2], \"clock_samples_mhz\": [1500, null]}]}]}", head);
    CHECK_INT(kp_bench_file_read(put("l.json", text), &f, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "\"clock_samples_mhz\" does not match its samples");
    kp_error_clear(&err);
    snprintf(text, sizeof text,
             "%s\"samples_ms\": [1, 2], \"clock_samples_mhz\": [1500, 1400]}]}]}", head);
    CHECK_INT(kp_bench_file_read(put("l.json", text), &f, &err), KPROF_OK);
    if (f) CHECK_NEAR(f->points[0].mhz[1], 1400, 0);
    kp_bench_file_free(f);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    test_kinds();
    test_read();
    test_bench_points();
    test_bench_lists();
    test_bench_round_trip();
    test_notes();
    test_sweep_write();
    static const char *const names[] = {"b.json", "v2.json", "a.json", "o.json", "r.json",
                                        "n.json", "n2.json", "w.json", "l.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    TEST_DONE();
}
