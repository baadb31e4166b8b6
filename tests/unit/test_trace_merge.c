/* test_trace_merge.c — the clock estimate of `kprof merge` (store/trace_merge.h): a host's
 * REALTIME − MONOTONIC offset is the middle of its pairs' range, known within the worst pair's
 * uncertainty plus half that range; pairs that cannot be one are left out; nothing wraps; the
 * shift between two hosts is the difference of their offsets, known within the sum. And the
 * files: a merged trace has the tables and meta keys `kprof trace` writes (one schema, one key
 * list), plus its own; a pid no system gives is refused at once. The schema's writers
 * (store/trace_schema.h) give a status and name the file they could not write. */
#define _GNU_SOURCE
#include "store/trace_db.h"
#include "store/trace_merge.h"
#include "store/trace_schema.h"
#include "test.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_none(void)
{
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(NULL, 0, &o), 0);
    CHECK_INT(o.pairs, 0);
    kp_clock_pair unread[] = {{1000, 0, 5}, {2000, -7, 5}, {3000, 5000, -1}};
    CHECK_INT(kp_clock_offset_estimate(unread, 3, &o), 0); /* real 0 or negative; u < 0 */
    CHECK_INT(o.pairs, 0);
    CHECK_INT(o.offset_ns, 0);
}

static void test_one_pair(void)
{
    kp_clock_pair p = {.mono_ns = 5000000000, .real_ns = 1700000000123456789, .uncertainty_ns = 40};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(&p, 1, &o), 1);
    CHECK_INT(o.pairs, 1);
    CHECK_INT(o.offset_ns, 1700000000123456789 - 5000000000);
    CHECK_INT(o.spread_ns, 0);
    CHECK_INT(o.uncertainty_ns, 40);
}

static void test_spread(void)
{
    /* Three pairs whose offsets are 1000, 1100 and 1201 (a clock slewed during the run): the
     * middle of 1000..1201 (1100, rounded down), within the worst pair's 9 plus half of 201
     * rounded up (101). Every pair lies within that of the estimate. */
    kp_clock_pair p[] = {{100, 1100, 5}, {200, 1300, 9}, {300, 1501, 3}, {400, 0, 1000000}};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(p, 4, &o), 1);
    CHECK_INT(o.pairs, 3); /* the unread one left out, its uncertainty too */
    CHECK_INT(o.spread_ns, 201);
    CHECK_INT(o.offset_ns, 1100);
    CHECK_INT(o.uncertainty_ns, 9 + 101);
    for (int i = 0; i < 3; i++) {
        int64_t d = p[i].real_ns - p[i].mono_ns;
        CHECK(d - o.offset_ns <= o.uncertainty_ns && o.offset_ns - d <= o.uncertainty_ns);
    }
    /* Order does not matter. */
    kp_clock_pair r[] = {p[2], p[0], p[1]};
    kp_clock_offset o2;
    CHECK_INT(kp_clock_offset_estimate(r, 3, &o2), 1);
    CHECK_INT(o2.offset_ns, o.offset_ns);
    CHECK_INT(o2.uncertainty_ns, o.uncertainty_ns);
}

static void test_no_wrap(void)
{
    /* A difference beyond int64 (an edited file) is no pair; a range beyond it saturates. */
    kp_clock_pair bad[] = {{-INT64_MAX, INT64_MAX, 1}, {10, 20, 1}};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(bad, 2, &o), 1);
    CHECK_INT(o.pairs, 1);
    CHECK_INT(o.offset_ns, 10);
    kp_clock_pair far[] = {{INT64_MAX - 1, 1, 0}, {-(INT64_MAX / 2), INT64_MAX / 2, INT64_MAX}};
    CHECK_INT(kp_clock_offset_estimate(far, 2, &o), 1);
    CHECK_INT(o.pairs, 2);
    CHECK_INT(o.spread_ns, INT64_MAX);
    CHECK_INT(o.uncertainty_ns, INT64_MAX);
}

static void test_shift(void)
{
    /* Host B's monotonic clock is 12.345678901 s behind A's, REALTIME the same: B's offset is
     * larger by that, and B's times move forward by it. */
    kp_clock_pair a[] = {{1000000000, 1700000000000000000, 20},
                         {2000000000, 1700000001000000000, 30}};
    kp_clock_pair b[2];
    for (int i = 0; i < 2; i++)
        b[i] = (kp_clock_pair){a[i].mono_ns - 12345678901, a[i].real_ns, a[i].uncertainty_ns};
    kp_clock_offset oa, ob;
    CHECK_INT(kp_clock_offset_estimate(a, 2, &oa), 1);
    CHECK_INT(kp_clock_offset_estimate(b, 2, &ob), 1);
    int64_t u = -1;
    CHECK_INT(kp_clock_offset_shift(&ob, &oa, &u), 12345678901);
    CHECK_INT(u, 60);
    CHECK_INT(kp_clock_offset_shift(&oa, &ob, NULL), -12345678901);
    CHECK_INT(kp_clock_offset_shift(&oa, &oa, &u), 0);
    /* Saturating, not wrapping. */
    kp_clock_offset hi = {.offset_ns = INT64_MAX, .uncertainty_ns = INT64_MAX};
    kp_clock_offset lo = {.offset_ns = INT64_MIN + 1, .uncertainty_ns = 5};
    CHECK_INT(kp_clock_offset_shift(&hi, &lo, &u), INT64_MAX);
    CHECK_INT(u, INT64_MAX);
}

/* The text of one query's rows, "a|b\n..." (the caller frees). */
static char *query_text(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK)
        while (sqlite3_step(q) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(q); c++) {
                const unsigned char *t = sqlite3_column_text(q, c);
                fprintf(f, "%s%s", c ? "|" : "", t ? (const char *)t : "NULL");
            }
            fputc('\n', f);
        }
    sqlite3_finalize(q);
    sqlite3_close(db);
    fclose(f);
    return out;
}

static void exec_on(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_files(void)
{
    char dir[] = "/tmp/kprof-test-merge-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char records[256], trace[256], copy[256], merged[256];
    snprintf(records, sizeof records, "%s/records", dir);
    snprintf(trace, sizeof trace, "%s/t.kprof", dir);
    snprintf(copy, sizeof copy, "%s/u.kprof", dir);
    snprintf(merged, sizeof merged, "%s/m.kprof", dir);
    CHECK_INT(mkdir(records, 0700), 0);
    kp_trace_run run = {.command = "prog",
                        .start_ns = 1000,
                        .end_ns = 5000,
                        .collectors = "cuda",
                        .host = "h",
                        .boot_id = "b"};
    kp_trace_summary sum;
    kp_error err = {0};
    CHECK_INT(kp_trace_ingest_dir(trace, records, &run, NULL, &sum, &err), KPROF_OK);
    kp_merged_trace res = {0};
    const char *one[] = {trace};
    CHECK_INT(kp_trace_files_merge(merged, one, 1, NULL, &res, &err), KPROF_OK);
    kp_merged_trace_free(&res);
    /* The same tables (the merge adds hosts and processes.os_pid), rows and meta keys. */
    const char *tables = "SELECT name, sql FROM sqlite_master WHERE name NOT IN ('hosts', "
                         "'processes', 'events_start') ORDER BY name";
    char *a = query_text(trace, tables), *b = query_text(merged, tables);
    CHECK(a && *a);
    CHECK_STR(b, a);
    free(a);
    free(b);
    a = query_text(trace, "SELECT * FROM kinds UNION ALL SELECT * FROM domains");
    b = query_text(merged, "SELECT * FROM kinds UNION ALL SELECT * FROM domains");
    CHECK_STR(b, a);
    free(a);
    free(b);
    const char *keys = "SELECT key FROM meta WHERE key <> 'merged_from' ORDER BY key";
    a = query_text(trace, keys);
    b = query_text(merged, keys);
    CHECK_CONTAINS(a, "boot_id\nclock\ncollectors\ncommand\ndropped\nend_ns\nexit_status\nformat\n"
                      "format_version\nhost\nkprof_version\nmetrics\nstart_ns\n");
    CHECK_STR(b, a);
    free(a);
    free(b);
    a = query_text(merged, "SELECT value FROM meta WHERE key IN ('merged_from', 'host') "
                           "ORDER BY key");
    char want[512];
    snprintf(want, sizeof want, "h\n%s\n", trace);
    CHECK_STR(a, want);
    free(a);
    /* The probes both readers use. */
    sqlite3 *db = NULL;
    CHECK_INT(kp_trace_db_open(merged, &db, &err), KPROF_OK);
    CHECK(kp_trace_db_has_table(db, NULL, "hosts"));
    CHECK(kp_trace_db_has_column(db, "main", "processes", "os_pid"));
    CHECK(kp_trace_db_has_column(db, NULL, "events", "flops"));
    CHECK(!kp_trace_db_has_column(db, NULL, "events", "os_pid"));
    CHECK(!kp_trace_db_has_column(db, NULL, "nothing", "pid"));
    CHECK(!kp_trace_db_has_table(db, "main", "nothing"));
    sqlite3_close(db);
    CHECK_INT(kp_trace_db_open(trace, &db, &err), KPROF_OK);
    CHECK(!kp_trace_db_has_table(db, NULL, "hosts"));
    CHECK(!kp_trace_db_has_column(db, NULL, "processes", "os_pid"));
    sqlite3_close(db);
    /* Two traces of one process whose pid is near the top of the int64 range: refused as
     * damaged at once (moving it clear of the other's would have searched 2^41 shifts). */
    exec_on(trace, "INSERT INTO processes (id, pid) VALUES (1, 9223372036854775000)");
    FILE *in = fopen(trace, "rb"), *out = fopen(copy, "wb");
    int c;
    while (in && out && (c = fgetc(in)) != EOF)
        fputc(c, out);
    if (in) fclose(in);
    if (out) fclose(out);
    const char *two[] = {trace, copy};
    unlink(merged);
    CHECK_INT(kp_trace_files_merge(merged, two, 2, NULL, &res, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "pids out of range");
    CHECK_CONTAINS(err.message, trace);
    kp_error_clear(&err);
    kp_merged_trace_free(&res);
    unlink(trace);
    unlink(copy);
    unlink(merged);
    rmdir(records);
    rmdir(dir);
}

/* The schema's writers give a status and say which file they could not write; a probe that
 * fails answers "no". */
static void test_schema_status(void)
{
    sqlite3 *db = NULL;
    kp_error err = {0};
    CHECK(sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK_INT(kp_trace_db_create(db, "new.kprof", &err), KPROF_OK);
    CHECK_INT(kp_trace_db_create_index(db, "new.kprof", &err), KPROF_OK);
    kp_trace_meta_keys meta = {.command = "prog", .collectors = "opencl"};
    CHECK_INT(kp_trace_db_write_meta(db, &meta, "new.kprof", &err), KPROF_OK);
    CHECK(kp_trace_db_has_table(db, "main", "events"));
    CHECK(kp_trace_db_has_column(db, NULL, "events", "flops"));
    CHECK(!kp_trace_db_has_table(db, "nosuchschema", "events"));
    /* The tables exist already: a second create fails, naming the file and SQLite's reason. */
    CHECK_INT(kp_trace_db_create(db, "new.kprof", &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "cannot write new.kprof: ");
    CHECK_CONTAINS(err.message, "already exists");
    kp_error_clear(&err);
    CHECK_INT(kp_trace_schema_create_views(db, NULL, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "cannot write the trace: ");
    kp_error_clear(&err);
    CHECK_INT(kp_trace_db_create_index(db, NULL, NULL), KPROF_IO); /* err may be NULL */
    sqlite3_close(db);
}

int main(void)
{
    test_none();
    test_one_pair();
    test_spread();
    test_no_wrap();
    test_shift();
    test_files();
    test_schema_status();
    TEST_DONE();
}
