/* test_history.c — kprof's store and its history without a device: a schema-1 store (exactly
 * the schema and user_version kprof wrote before the history) upgraded to 2 keeping its
 * ceilings, read as it is by a read-only open; the FP32 FLOP peak's columns added to a schema-2
 * store without a new version, and a development build's schema 3 read as 2 and written back
 * as 2; the peak kept beside a ceiling, and a ceiling stored without one; a store of a newer
 * schema and foreign files
 * refused byte for byte untouched; results recorded and read back (kp_history_record, _list,
 * _each, _get by id, @0 and @-N), their samples and JSON exact; references parsed. Each check
 * points KPROF_STORE at a file of its own in a scratch folder. */
#define _GNU_SOURCE
#include "store/history.h"
#include "store/store.h"
#include "base/util.h"
#include "test.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

static char scratch[4096];

/* Point KPROF_STORE at scratch/name (removed first) and return the path. */
static const char *store_at(const char *name)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    unlink(path);
    setenv("KPROF_STORE", path, 1);
    return path;
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sql failed: %s: %s\n", sql, msg ? msg : "?");
        kp_test_failures++;
    }
    sqlite3_free(msg);
    sqlite3_close(db);
}

static long long query_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    long long v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static char *read_all(const char *path, size_t *len)
{
    char *data = NULL;
    if (kp_file_read(path, &data, len, NULL) != KPROF_OK) return NULL;
    return data;
}

/* The store kprof 0.1 wrote: the ceilings table of schema 1, with one device's ceiling. Spelled
 * out here rather than taken from store.c on purpose: it pins the file an old kprof left on
 * disk, so that a change to store.c's copy of schema 1 cannot pass unnoticed. */
static const char v1_store[] =
    "CREATE TABLE IF NOT EXISTS ceilings ("
    "  device_key TEXT PRIMARY KEY,"
    "  backend TEXT NOT NULL,"
    "  device TEXT NOT NULL,"
    "  driver TEXT,"
    "  copy_gbs REAL NOT NULL,"
    "  copy_bytes INTEGER,"
    "  demo_add_gbs REAL,"
    "  demo_add_ms REAL,"
    "  demo_add_elements INTEGER,"
    "  method TEXT,"
    "  measured_at INTEGER NOT NULL);"
    "PRAGMA user_version = 1;"
    "INSERT INTO ceilings VALUES ('opencl|Dev 1|Plat', 'opencl', 'Dev 1', '3.1', 123.5, 67108864, "
    "  99.25, 0.5, 16777216, 'copy kernels', 1700000000);";

static kp_device_info dev1(void)
{
    kp_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.backend, sizeof d.backend, "opencl");
    snprintf(d.name, sizeof d.name, "Dev 1");
    snprintf(d.platform, sizeof d.platform, "Plat");
    return d;
}

static void check_v1_ceiling(kp_store *s)
{
    kp_device_info d = dev1();
    kp_ceiling c;
    CHECK_INT(kp_store_get_ceiling(s, &d, &c, NULL), KPROF_OK);
    CHECK_NEAR(c.copy_gbs, 123.5, 0);
    CHECK_INT(c.copy_bytes, 67108864);
    CHECK_NEAR(c.demo_add_gbs, 99.25, 0);
    CHECK_INT(c.measured_at, 1700000000);
    CHECK_STR(c.driver, "3.1");
    CHECK_STR(c.method, "copy kernels");
    /* Measured before kprof measured a FLOP peak: none. */
    CHECK_NEAR(c.fma_gflops, 0, 0);
    CHECK_STR(c.fma_method, "");
}

static void test_v1_upgraded(void)
{
    const char *path = store_at("v1.db");
    exec_sql(path, v1_store);
    kp_error err = {0};
    kp_store *s = NULL;
    /* Read-only: read as it is, not upgraded, no history yet. */
    CHECK_INT(kp_store_open(1, &s, &err), KPROF_OK);
    if (s) {
        CHECK_INT(kp_store_version(s), 1);
        check_v1_ceiling(s);
    }
    kp_store_close(s);
    s = NULL;
    CHECK_INT(query_int(path, "PRAGMA user_version"), 1);
    kp_history_run *runs = NULL;
    size_t n = 7;
    CHECK_INT(kp_history_list(NULL, 0, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 0);
    CHECK(runs == NULL);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 1);
    /* Read-write: upgraded to 2 in place (with the FLOP peak's columns), the ceiling kept. */
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    if (s) {
        CHECK_INT(kp_store_version(s), 2);
        check_v1_ceiling(s);
    }
    kp_store_close(s);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 2);
    CHECK_INT(query_int(path, "SELECT count(*) FROM pragma_table_info('ceilings') WHERE name IN "
                              "('fma_gflops', 'fma_method')"),
              2);
    CHECK_INT(query_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('ceilings', "
                              "'runs', 'runs_kernel', 'notes', 'notes_fts', 'notes_ai', "
                              "'notes_ad', 'notes_au')"),
              8);
    CHECK_INT(query_int(path, "SELECT count(*) FROM ceilings"), 1);
    /* The triggers keep the full-text index in step with notes. */
    exec_sql(path, "INSERT INTO notes (at, text, kernel) VALUES (1, 'coalesced loads win', 'k');"
                   "INSERT INTO notes (at, text, kernel) VALUES (2, 'bank conflicts', 'k');"
                   "UPDATE notes SET text = 'padding fixed the bank conflicts' WHERE id = 2;"
                   "DELETE FROM notes WHERE id = 1;");
    CHECK_INT(query_int(path, "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'padding'"), 1);
    CHECK_INT(query_int(path, "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'coalesced'"),
              0);
    /* Opening it again changes nothing. */
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    kp_store_close(s);
    CHECK_INT(query_int(path, "SELECT count(*) FROM ceilings"), 1);
    kp_error_clear(&err);
}

/* Recording into a schema-1 store upgrades it too: the ceiling stays beside the run. */
static void test_v1_record(void)
{
    const char *path = store_at("v1-record.db");
    exec_sql(path, v1_store);
    kp_history_run r = {.git_dirty = -1};
    snprintf(r.kind, sizeof r.kind, "run");
    snprintf(r.kernel, sizeof r.kernel, "k");
    int64_t id = 0;
    kp_error err = {0};
    CHECK_INT(kp_history_record(&r, NULL, 0, "{}", &id, &err), KPROF_OK);
    CHECK_INT(id, 1);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 2);
    CHECK_INT(query_int(path, "SELECT count(*) FROM ceilings"), 1);
    CHECK_INT(query_int(path, "SELECT count(*) FROM runs"), 1);
    kp_error_clear(&err);
}

/* The FP32 FLOP peak is kept beside the bandwidth ceiling; a ceiling put without one (0) reads
 * back without one, and replaces an earlier peak (both were measured together). */
static void test_fma_peak(void)
{
    store_at("fma.db");
    kp_error err = {0};
    kp_store *s = NULL;
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    if (!s) return;
    kp_device_info d = dev1();
    kp_ceiling c = {
        .copy_gbs = 3900, .copy_bytes = 1 << 30, .measured_at = 1800000000, .fma_gflops = 61234.5};
    snprintf(c.method, sizeof c.method, "copies");
    snprintf(c.fma_method, sizeof c.fma_method, "fma_f32");
    CHECK_INT(kp_store_put_ceiling(s, &d, &c, &err), KPROF_OK);
    kp_ceiling back;
    CHECK_INT(kp_store_get_ceiling(s, &d, &back, NULL), KPROF_OK);
    CHECK_NEAR(back.copy_gbs, 3900, 0);
    CHECK_NEAR(back.fma_gflops, 61234.5, 0);
    CHECK_STR(back.fma_method, "fma_f32");
    c.fma_gflops = 0;
    CHECK_INT(kp_store_put_ceiling(s, &d, &c, &err), KPROF_OK);
    CHECK_INT(kp_store_get_ceiling(s, &d, &back, NULL), KPROF_OK);
    CHECK_NEAR(back.fma_gflops, 0, 0);
    CHECK_STR(back.fma_method, "");
    /* Another device has none: NOT_FOUND, told from a store that cannot be read. */
    kp_device_info other = d;
    snprintf(other.name, sizeof other.name, "Dev 2");
    CHECK_INT(kp_store_get_ceiling(s, &other, &back, &err), KPROF_NOT_FOUND);
    CHECK_CONTAINS(err.message, "no bandwidth ceiling is stored for opencl|Dev 2|Plat");
    kp_error_clear(&err);
    kp_store_close(s);
    CHECK_INT(kp_store_lookup_ceiling(&other, &back, &err), KPROF_NOT_FOUND);
    kp_error_clear(&err);
    CHECK_INT(kp_store_lookup_ceiling(&d, &back, &err), KPROF_OK);
    CHECK_NEAR(back.copy_gbs, 3900, 0);
    kp_error_clear(&err);
}

static long long fma_columns(const char *path)
{
    return query_int(path, "SELECT count(*) FROM pragma_table_info('ceilings') WHERE name IN "
                           "('fma_gflops', 'fma_method')");
}

/* A schema-2 store as a kprof before the FLOP peak left it (no fma_* columns): read as it is
 * (no peak), given the columns by a read-write open at user_version 2, which an older kprof
 * still opens. */
static void test_v2_without_fma(void)
{
    const char *path = store_at("v2-old.db");
    exec_sql(path, v1_store);
    kp_error err = {0};
    kp_store *s = NULL;
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    kp_store_close(s);
    s = NULL;
    exec_sql(path, "ALTER TABLE ceilings DROP COLUMN fma_gflops;"
                   "ALTER TABLE ceilings DROP COLUMN fma_method;");
    CHECK_INT(fma_columns(path), 0);
    CHECK_INT(kp_store_open(1, &s, &err), KPROF_OK);
    if (s) {
        CHECK_INT(kp_store_version(s), 2);
        check_v1_ceiling(s);
    }
    kp_store_close(s);
    s = NULL;
    CHECK_INT(fma_columns(path), 0); /* a read adds nothing */
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    if (s) {
        CHECK_INT(kp_store_version(s), 2);
        kp_device_info d = dev1();
        kp_ceiling c = {.copy_gbs = 10, .fma_gflops = 77};
        snprintf(c.fma_method, sizeof c.fma_method, "fma_f32");
        CHECK_INT(kp_store_put_ceiling(s, &d, &c, &err), KPROF_OK);
        kp_ceiling back;
        CHECK_INT(kp_store_get_ceiling(s, &d, &back, NULL), KPROF_OK);
        CHECK_NEAR(back.fma_gflops, 77, 0);
    }
    kp_store_close(s);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 2);
    CHECK_INT(fma_columns(path), 2);
    kp_error_clear(&err);
}

/* A store a development build left at user_version 3 (schema 2 + the fma_* columns): opened,
 * read as 2 with its peak, and written back as 2 by a read-write open. */
static void test_dev_v3(void)
{
    const char *path = store_at("v3-dev.db");
    kp_error err = {0};
    kp_store *s = NULL;
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    if (s) {
        kp_device_info d = dev1();
        kp_ceiling c = {.copy_gbs = 10, .fma_gflops = 55.5};
        snprintf(c.fma_method, sizeof c.fma_method, "fma_f32");
        CHECK_INT(kp_store_put_ceiling(s, &d, &c, &err), KPROF_OK);
    }
    kp_store_close(s);
    exec_sql(path, "PRAGMA user_version = 3");
    for (int readonly = 1; readonly >= 0; readonly--) {
        s = NULL;
        CHECK_INT(kp_store_open(readonly, &s, &err), KPROF_OK);
        if (s) {
            CHECK_INT(kp_store_version(s), 2);
            kp_device_info d = dev1();
            kp_ceiling back;
            CHECK_INT(kp_store_get_ceiling(s, &d, &back, NULL), KPROF_OK);
            CHECK_NEAR(back.fma_gflops, 55.5, 0);
            CHECK_STR(back.fma_method, "fma_f32");
        }
        kp_store_close(s);
        CHECK_INT(query_int(path, "PRAGMA user_version"), readonly ? 3 : 2);
    }
    /* 4 is newer than this kprof: refused. */
    exec_sql(path, "PRAGMA user_version = 4");
    s = NULL;
    CHECK_INT(kp_store_open(1, &s, &err), KPROF_CORRUPT);
    kp_store_close(s);
    kp_error_clear(&err);
}

static void test_empty_file(void)
{
    const char *path = store_at("empty.db");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    kp_error err = {0};
    kp_store *s = NULL;
    CHECK_INT(kp_store_open(1, &s, &err), KPROF_OK); /* read-only: nothing yet, nothing made */
    kp_store_close(s);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 0);
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_OK);
    if (s) CHECK_INT(kp_store_version(s), 2);
    kp_store_close(s);
    CHECK_INT(query_int(path, "PRAGMA user_version"), 2);
    CHECK_INT(query_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name "
                              "IN ('ceilings', 'runs', 'notes', 'notes_fts')"),
              4);
    kp_error_clear(&err);
}

/* A file kprof must not touch: every way in is refused (CORRUPT, saying why) and its bytes
 * stay as they were. */
static void check_refused(const char *path, const char *why)
{
    size_t len0 = 0, len1 = 0;
    char *before = read_all(path, &len0);
    CHECK(before != NULL);
    kp_error err = {0};
    kp_store *s = NULL;
    CHECK_INT(kp_store_open(0, &s, &err), KPROF_CORRUPT);
    CHECK(s == NULL);
    CHECK_CONTAINS(err.message, why);
    kp_error_clear(&err);
    CHECK_INT(kp_store_open(1, &s, &err), KPROF_CORRUPT);
    kp_error_clear(&err);
    kp_history_run r = {.git_dirty = -1};
    snprintf(r.kind, sizeof r.kind, "run");
    double one = 1.0;
    CHECK_INT(kp_history_record(&r, &one, 1, "{}", NULL, &err), KPROF_CORRUPT);
    kp_error_clear(&err);
    kp_history_run *runs = NULL;
    size_t n = 0;
    CHECK_INT(kp_history_list(NULL, 0, &runs, &n, &err), KPROF_CORRUPT);
    kp_error_clear(&err);
    kp_history_run got;
    CHECK_INT(kp_history_get("@0", &got, NULL, NULL, NULL, &err), KPROF_CORRUPT);
    kp_error_clear(&err);
    kp_device_info d = dev1();
    kp_ceiling c;
    /* The ceiling's look-up (run, sweep, bench, caps) says it could not read it, and why. */
    CHECK_INT(kp_store_lookup_ceiling(&d, &c, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, why);
    kp_error_clear(&err);
    char *after = read_all(path, &len1);
    CHECK(after != NULL);
    CHECK_INT(len1, len0);
    CHECK(before && after && len0 == len1 && memcmp(before, after, len0) == 0);
    free(before);
    free(after);
}

static void test_refused(void)
{
    const char *path = store_at("v99.db");
    exec_sql(path, v1_store);
    exec_sql(path, "PRAGMA user_version = 99");
    check_refused(path, "schema 99, newer than this kprof");

    path = store_at("foreign.db");
    exec_sql(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT);"
                   "INSERT INTO photos (name) VALUES ('cat');");
    check_refused(path, "not a kprof store");

    path = store_at("foreign-v1.db"); /* another program's user_version 1 */
    exec_sql(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY); PRAGMA user_version = 1;");
    check_refused(path, "not a kprof store");

    path = store_at("text.db");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("this is not SQLite at all, but it is long enough to look like a header......\n", f);
        fclose(f);
    }
    check_refused(path, "not an SQLite database");
}

static kp_history_run make_run(const char *kind, const char *kernel, double median)
{
    kp_history_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
    snprintf(r.device, sizeof r.device, "Dev 1");
    snprintf(r.backend, sizeof r.backend, "opencl");
    snprintf(r.device_key, sizeof r.device_key, "opencl|Dev 1|Plat");
    snprintf(r.driver, sizeof r.driver, "3.1");
    snprintf(r.kprof_version, sizeof r.kprof_version, "0.1.0");
    snprintf(r.target, sizeof r.target, "%s.cl", kernel);
    snprintf(r.source_path, sizeof r.source_path, "/src/%s.cl", kernel);
    snprintf(r.source_hash, sizeof r.source_hash, "0123456789abcdef");
    snprintf(r.options, sizeof r.options, "-DN=4");
    snprintf(r.grid, sizeof r.grid, "4096x2");
    snprintf(r.tg, sizeof r.tg, "64x2");
    snprintf(r.buffers, sizeof r.buffers, "f32:8192");
    r.git_dirty = -1;
    r.median_ms = median;
    r.min_ms = median / 2;
    return r;
}

static int count_visits(const kp_history_run *r, const double *samples, size_t n, void *user)
{
    (void)r;
    (void)samples;
    (void)n;
    return ++*(int *)user >= 2; /* stop after two */
}

static void test_record_and_read(void)
{
    const char *path = store_at("history.db");
    kp_error err = {0};
    kp_history_run r1 = make_run("run", "add", 0.1);
    snprintf(r1.git_commit, sizeof r1.git_commit, "3d28a28ec4a19a8669510616a3a6806ceb786c3c");
    r1.git_dirty = 1;
    double s1[3] = {0.1, 0.30000000000000004, 1e-7};
    r1.nsamples = 3;
    kp_history_run r2 = make_run("sweep", "scale", 0.2);
    r2.git_dirty = 0; /* no commit: read back as no work tree */
    double s2[2] = {0.2, NAN};
    r2.nsamples = 2;
    kp_history_run r3 = make_run("bench", "add", 0.3);
    int64_t id1 = 0, id2 = 0, id3 = 0;
    CHECK_INT(kp_history_record(&r1, s1, 3, "{\"run\": 1}", &id1, &err), KPROF_OK);
    CHECK_INT(kp_history_record(&r2, s2, 2, "{\"run\": 2}", &id2, &err), KPROF_OK);
    CHECK_INT(kp_history_record(&r3, NULL, 0, "{\"run\": 3}", &id3, &err), KPROF_OK);
    CHECK_INT(id1, 1);
    CHECK_INT(id2, 2);
    CHECK_INT(id3, 3);
    CHECK_STR(err.message, "");
    CHECK_INT(query_int(path, "SELECT count(*) FROM runs WHERE git_commit IS NULL AND git_dirty "
                              "IS NULL"),
              2);
    CHECK_INT(query_int(path, "SELECT count(*) FROM runs WHERE samples IS NULL"), 1);

    kp_history_run *runs = NULL;
    size_t n = 0;
    CHECK_INT(kp_history_list(NULL, 0, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_INT(runs[0].id, 3);
        CHECK_INT(runs[1].id, 2);
        CHECK_INT(runs[2].id, 1);
        const kp_history_run *a = &runs[2];
        CHECK_STR(a->kind, "run");
        CHECK_STR(a->kernel, "add");
        CHECK_STR(a->device, "Dev 1");
        CHECK_STR(a->backend, "opencl");
        CHECK_STR(a->device_key, "opencl|Dev 1|Plat");
        CHECK_STR(a->driver, "3.1");
        CHECK_STR(a->kprof_version, "0.1.0");
        CHECK_STR(a->target, "add.cl");
        CHECK_STR(a->source_path, "/src/add.cl");
        CHECK_STR(a->source_hash, "0123456789abcdef");
        CHECK_STR(a->options, "-DN=4");
        CHECK_STR(a->grid, "4096x2");
        CHECK_STR(a->tg, "64x2");
        CHECK_STR(a->buffers, "f32:8192");
        CHECK_STR(a->git_commit, "3d28a28ec4a19a8669510616a3a6806ceb786c3c");
        CHECK_INT(a->git_dirty, 1);
        CHECK(a->median_ms == 0.1 && a->min_ms == 0.05);
        CHECK_INT(a->nsamples, 3);
        CHECK(a->at > 1700000000);
        CHECK_STR(runs[1].git_commit, "");
        CHECK_INT(runs[1].git_dirty, -1);
    }
    free(runs);
    CHECK_INT(kp_history_list("add", 0, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 2);
    if (n == 2) CHECK(runs[0].id == 3 && runs[1].id == 1);
    free(runs);
    CHECK_INT(kp_history_list(NULL, 1, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 1);
    if (n == 1) CHECK_INT(runs[0].id, 3);
    free(runs);
    CHECK_INT(kp_history_list("nothing", 0, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 0);
    free(runs);
    int visits = 0;
    CHECK_INT(kp_history_each(NULL, 0, 1, count_visits, &visits, &err), KPROF_OK);
    CHECK_INT(visits, 2);

    /* By reference, with samples and the result JSON. */
    kp_history_run got;
    double *samples = NULL;
    size_t ns = 0;
    char *json = NULL;
    CHECK_INT(kp_history_get("@0", &got, &samples, &ns, &json, &err), KPROF_OK);
    CHECK_INT(got.id, 3);
    CHECK(samples == NULL);
    CHECK_INT(ns, 0);
    CHECK_STR(json, "{\"run\": 3}");
    free(json);
    CHECK_INT(kp_history_get("@-1", &got, &samples, &ns, NULL, &err), KPROF_OK);
    CHECK_INT(got.id, 2);
    CHECK_STR(got.kind, "sweep");
    CHECK_INT(ns, 2);
    if (ns == 2) CHECK(samples[0] == 0.2 && isnan(samples[1]));
    free(samples);
    CHECK_INT(kp_history_get("1", &got, &samples, &ns, &json, &err), KPROF_OK);
    CHECK_INT(got.id, 1);
    CHECK_INT(ns, 3);
    if (ns == 3) CHECK(samples[0] == s1[0] && samples[1] == s1[1] && samples[2] == s1[2]);
    CHECK_STR(json, "{\"run\": 1}");
    free(samples);
    free(json);
    CHECK_INT(kp_history_get("@-2", &got, NULL, NULL, NULL, &err), KPROF_OK);
    CHECK_INT(got.id, 1);
    CHECK_STR(err.message, "");

    CHECK_INT(kp_history_get("@-3", &got, &samples, &ns, &json, &err), KPROF_NOT_FOUND);
    CHECK_CONTAINS(err.message, "no run @-3 in the history (it holds 3 runs");
    CHECK(samples == NULL && json == NULL);
    kp_error_clear(&err);
    CHECK_INT(kp_history_get("17", &got, NULL, NULL, NULL, &err), KPROF_NOT_FOUND);
    CHECK_CONTAINS(err.message, "no run 17 in the history");
    kp_error_clear(&err);
    static const char *const bad[] = {
        "", "@", "@1", "@-", "@--1", "0", "-1", "abc", "1x", "@-1x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(kp_history_get(bad[i], &got, NULL, NULL, NULL, &err), KPROF_INVALID);
        CHECK_CONTAINS(err.message, "is not a run of the history");
        kp_error_clear(&err);
    }
}

static void test_no_store(void)
{
    const char *path = store_at("absent/none.db");
    kp_error err = {0};
    kp_history_run *runs = NULL;
    size_t n = 5;
    CHECK_INT(kp_history_list(NULL, 0, &runs, &n, &err), KPROF_OK);
    CHECK_INT(n, 0);
    kp_history_run got;
    CHECK_INT(kp_history_get("@0", &got, NULL, NULL, NULL, &err), KPROF_NOT_FOUND);
    CHECK_CONTAINS(err.message, "no run @0 in the history: nothing is recorded yet");
    kp_error_clear(&err);
    CHECK(!kp_path_exists(path)); /* reading never creates */
    /* A store that cannot be written: its path is a folder, or under a file. */
    store_at("");
    kp_history_run r = make_run("run", "add", 1);
    CHECK_INT(kp_history_record(&r, NULL, 0, "{}", NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "is a folder");
    kp_error_clear(&err);
    char under[4200];
    snprintf(under, sizeof under, "%s/text.db/store.db", scratch);
    setenv("KPROF_STORE", under, 1);
    CHECK(kp_history_record(&r, NULL, 0, "{}", NULL, &err) != KPROF_OK);
    kp_error_clear(&err);
}

static void test_parse_ref(void)
{
    int64_t id, back;
    CHECK_INT(kp_history_parse_ref("17", &id, &back, NULL), KPROF_OK);
    CHECK(id == 17 && back == -1);
    CHECK_INT(kp_history_parse_ref("@0", &id, &back, NULL), KPROF_OK);
    CHECK(id == 0 && back == 0);
    CHECK_INT(kp_history_parse_ref("@-0", &id, &back, NULL), KPROF_OK);
    CHECK(id == 0 && back == 0);
    CHECK_INT(kp_history_parse_ref("@-12", &id, &back, NULL), KPROF_OK);
    CHECK(id == 0 && back == 12);
    CHECK_INT(kp_history_parse_ref("@+1", &id, &back, NULL), KPROF_INVALID);
    CHECK_INT(kp_history_parse_ref(" 1", &id, &back, NULL), KPROF_INVALID);
    CHECK_INT(kp_history_parse_ref(NULL, &id, &back, NULL), KPROF_INVALID);
    CHECK_INT(kp_history_parse_ref("9223372036854775807", &id, &back, NULL), KPROF_OK);
    CHECK(id == INT64_MAX);
    CHECK_INT(kp_history_parse_ref("9223372036854775808", &id, &back, NULL), KPROF_INVALID);
    /* The message names the reference and the forms a reference takes. */
    kp_error err = {0};
    CHECK_INT(kp_history_parse_ref("@3", &id, &back, &err), KPROF_INVALID);
    CHECK(id == 0 && back == -1);
    CHECK_CONTAINS(err.message, "'@3' is not a run of the history: give its id");
    kp_error_clear(&err);
    CHECK_INT(kp_history_parse_ref("0", &id, &back, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "'0' is not a run of the history");
    kp_error_clear(&err);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/kprof-history-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    test_parse_ref();
    test_v1_upgraded();
    test_v1_record();
    test_fma_peak();
    test_v2_without_fma();
    test_dev_v3();
    test_empty_file();
    test_refused();
    test_record_and_read();
    test_no_store();
    char cmd[4200 + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    TEST_DONE();
}
