/*
 * trace_schema.c — the trace file's schema (see trace_schema.h and docs/formats/trace.md): its
 * tables, the events' metric columns, the views and the index, the kinds and domains rows, the
 * meta keys, and the probes by which readers tell older formats' tables and columns.
 */
#include "store/trace_schema.h"
#include "core/event.h"
#include "kprof.h" /* KPROF_VERSION_STRING */

#include <sqlite3.h>
#include <stdio.h>

/* rc (not SQLITE_OK) from writing the trace `name` through db: NOMEM when SQLite ran out of
 * memory, else IO ("cannot write NAME: SQLite's message", as every writer of a trace says it);
 * KPROF_OK for SQLITE_OK. */
static kprof_status kp_trace_schema_status(sqlite3 *db, int rc, const char *name, kp_error *err)
{
    if (rc == SQLITE_OK) return KPROF_OK;
    if ((rc & 0xff) == SQLITE_NOMEM) return kp_error_nomem(err);
    return kp_error_set(err, KPROF_IO, "cannot write %s: %s", name ? name : "the trace",
                        sqlite3_errmsg(db));
}

static const char kp_trace_schema[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE kinds (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE domains (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE strings (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
    "CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, command TEXT,"
    " collector TEXT, start_ns INTEGER, end_ns INTEGER, clean_exit INTEGER, events INTEGER,"
    " dropped INTEGER, truncated INTEGER, launcher TEXT, rank INTEGER, local_rank INTEGER,"
    " world_size INTEGER, local_world_size INTEGER, node INTEGER, restart INTEGER, host TEXT,"
    " boot_id TEXT);"
    "CREATE TABLE clocks (process INTEGER REFERENCES processes(id), mono_ns INTEGER,"
    " real_ns INTEGER, uncertainty_ns INTEGER);"
    "CREATE TABLE notes (process INTEGER REFERENCES processes(id), time_ns INTEGER, text TEXT);"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
    " process INTEGER REFERENCES processes(id), pid INTEGER, tid INTEGER,"
    " name INTEGER REFERENCES strings(id), domain INTEGER, start_ns INTEGER, end_ns INTEGER,"
    " queued_ns INTEGER, submitted_ns INTEGER, correlation INTEGER, device INTEGER,"
    " stream INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER,"
    " block_y INTEGER, block_z INTEGER, registers INTEGER, static_smem INTEGER,"
    " dynamic_smem INTEGER, local_mem INTEGER, bytes INTEGER, copy_kind INTEGER,"
    " range_id INTEGER, status INTEGER);"
    "CREATE TABLE metrics (event INTEGER REFERENCES events(id),"
    " key INTEGER REFERENCES strings(id), value REAL);"
    "CREATE TABLE kernel_info (process INTEGER REFERENCES processes(id), device INTEGER,"
    " name INTEGER REFERENCES strings(id), local_mem INTEGER, private_mem INTEGER,"
    " max_group_size INTEGER, group_multiple INTEGER, UNIQUE (process, device, name));";

/* The events' metric columns, added when the first flops or bytes metric arrives, or at the end:
 * the rows inserted before hold no field for them (they read as NULL), so a trace without
 * metrics stores not a byte more per event than one made before metrics existed (SQLite writes
 * every column of the table into a row, NULLs included, once the columns exist). */
static const char kp_trace_metric_columns[] = "ALTER TABLE events ADD COLUMN flops REAL;"
                                              "ALTER TABLE events ADD COLUMN metric_bytes REAL;";

/* Made at the end, when every column exists. */
static const char kp_trace_views[] =
    "CREATE VIEW event_view AS SELECT e.id, k.name AS kind, e.process, e.pid, e.tid,"
    " s.text AS name,"
    " e.start_ns, e.end_ns, e.end_ns - e.start_ns AS duration_ns, e.correlation, e.device,"
    " e.stream, e.bytes, e.flops, e.metric_bytes FROM events e JOIN kinds k ON k.id = e.kind"
    " LEFT JOIN strings s ON s.id = e.name;";

/* The rows of the kinds and domains tables: core/event.h's lists. */
typedef struct kp_named_id {
    int id;
    const char *name;
} kp_named_id;

static const kp_named_id kp_trace_kinds[] = {
#define KP_KIND_ROW_(id, NAME, name, category, flags, what) {id, name},
    KP_EVENT_KIND_LIST(KP_KIND_ROW_)
#undef KP_KIND_ROW_
};

static const kp_named_id kp_trace_domains[] = {
#define KP_DOMAIN_ROW_(id, NAME, name) {id, name},
    KP_DOMAIN_LIST(KP_DOMAIN_ROW_)
#undef KP_DOMAIN_ROW_
};

/* Fill a table of (id, name) rows: SQLITE_OK or SQLite's error. */
static int kp_trace_named_rows(sqlite3 *db, const char *table, const kp_named_id *rows, size_t n)
{
    char sql[64];
    sqlite3_stmt *q = NULL;
    snprintf(sql, sizeof sql, "INSERT INTO %s (id, name) VALUES (?,?)", table);
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        sqlite3_bind_int(q, 1, rows[i].id);
        sqlite3_bind_text(q, 2, rows[i].name, -1, SQLITE_STATIC);
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    return rc;
}

kprof_status kp_trace_schema_create_tables(sqlite3 *db, const char *name, kp_error *err)
{
    char pragmas[128];
    snprintf(pragmas, sizeof pragmas, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
             KP_TRACE_APPLICATION_ID, KP_TRACE_FORMAT_VERSION);
    int rc = sqlite3_exec(db, pragmas, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, kp_trace_schema, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = kp_trace_named_rows(db, "kinds", kp_trace_kinds,
                                 sizeof kp_trace_kinds / sizeof *kp_trace_kinds);
    if (rc == SQLITE_OK)
        rc = kp_trace_named_rows(db, "domains", kp_trace_domains,
                                 sizeof kp_trace_domains / sizeof *kp_trace_domains);
    return kp_trace_schema_status(db, rc, name, err);
}

/* Made before the first row, kept up as rows go in (while the program runs, for the live
 * merge): building it at the end cost as long as inserting the rows. */
static const char kp_trace_indexes[] = "CREATE INDEX events_start ON events(start_ns);";

kprof_status kp_trace_schema_add_metric_columns(sqlite3 *db, const char *name, kp_error *err)
{
    return kp_trace_schema_status(db, sqlite3_exec(db, kp_trace_metric_columns, NULL, NULL, NULL),
                                  name, err);
}

kprof_status kp_trace_schema_create_views(sqlite3 *db, const char *name, kp_error *err)
{
    return kp_trace_schema_status(db, sqlite3_exec(db, kp_trace_views, NULL, NULL, NULL), name,
                                  err);
}

kprof_status kp_trace_db_create(sqlite3 *db, const char *name, kp_error *err)
{
    kprof_status st = kp_trace_schema_create_tables(db, name, err);
    if (st == KPROF_OK) st = kp_trace_schema_add_metric_columns(db, name, err);
    if (st == KPROF_OK) st = kp_trace_schema_create_views(db, name, err);
    return st;
}

kprof_status kp_trace_db_create_index(sqlite3 *db, const char *name, kp_error *err)
{
    return kp_trace_schema_status(db, sqlite3_exec(db, kp_trace_indexes, NULL, NULL, NULL), name,
                                  err);
}

kprof_status kp_trace_db_write_meta(sqlite3 *db, const kp_trace_meta_keys *meta, const char *name,
                                    kp_error *err)
{
    char num[7][32];
    const int64_t nums[] = {KP_TRACE_FORMAT_VERSION,
                            meta->start_ns,
                            meta->end_ns,
                            meta->exit_status,
                            meta->dropped,
                            meta->metrics,
                            1 /* CLOCK_MONOTONIC */};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        snprintf(num[i], sizeof num[i], "%lld", (long long)nums[i]);
    const char *rows[][2] = {
        {"format", "kprof-trace"},
        {"format_version", num[0]},
        {"kprof_version", KPROF_VERSION_STRING},
        {"command", meta->command ? meta->command : ""},
        {"start_ns", num[1]},
        {"end_ns", num[2]},
        {"exit_status", num[3]},
        {"collectors", meta->collectors ? meta->collectors : ""},
        {"dropped", num[4]},
        {"metrics", num[5]},
        {"clock", num[6]},
        {"host", meta->host},
        {"boot_id", meta->boot_id},
        {"merged_from", meta->merged_from},
        {"device", meta->device},
    };
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO main.meta (key, value) VALUES (?,?)",
                                -1, &q, NULL);
    for (size_t i = 0; i < sizeof rows / sizeof *rows && rc == SQLITE_OK; i++) {
        if (!rows[i][1]) continue; /* not said */
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, rows[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, rows[i][1], -1, SQLITE_STATIC);
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    }
    kprof_status st = kp_trace_schema_status(db, rc, name, err); /* before finalize: its message */
    sqlite3_finalize(q);
    return st;
}

int kp_trace_db_has_column(sqlite3 *db, const char *schema, const char *table, const char *column)
{
    sqlite3_stmt *q = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1,
                           &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, schema ? schema : "main", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, column, -1, SQLITE_STATIC);
        has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 0;
    }
    sqlite3_finalize(q);
    return has;
}

int kp_trace_db_has_table(sqlite3 *db, const char *schema, const char *table)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM \"%s\".sqlite_master WHERE type = 'table' AND name = ?",
             schema ? schema : "main");
    sqlite3_stmt *q = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
        has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 0;
    }
    sqlite3_finalize(q);
    return has;
}
