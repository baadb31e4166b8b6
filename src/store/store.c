/*
 * store.c — kprof's SQLite store of per-device measurements (see store.h).
 */
#include "store/store.h"
#include "core/env.h"
#include "core/util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KP_STORE_SCHEMA_VERSION 1

struct kp_store {
    sqlite3 *db;
};

static const char kp_store_schema[] =
    "CREATE TABLE IF NOT EXISTS ceilings ("
    "  device_key TEXT PRIMARY KEY," /* backend|name|platform */
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
    "CREATE TABLE IF NOT EXISTS notes ("
    "  id INTEGER PRIMARY KEY,"
    "  at INTEGER NOT NULL,"
    "  text TEXT NOT NULL,"
    "  kernel TEXT, device TEXT, grid TEXT, tg TEXT, median_ms REAL, git_commit TEXT,"
    "  made_from TEXT,"
    "  data TEXT);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(text, kernel, content='notes',"
    "  content_rowid='id');"
    "CREATE TRIGGER IF NOT EXISTS notes_ai AFTER INSERT ON notes BEGIN"
    "  INSERT INTO notes_fts(rowid, text, kernel) VALUES (new.id, new.text, new.kernel); END;"
    "CREATE TRIGGER IF NOT EXISTS notes_ad AFTER DELETE ON notes BEGIN"
    "  INSERT INTO notes_fts(notes_fts, rowid, text, kernel)"
    "  VALUES ('delete', old.id, old.text, old.kernel); END;"
    "CREATE TRIGGER IF NOT EXISTS notes_au AFTER UPDATE ON notes BEGIN"
    "  INSERT INTO notes_fts(notes_fts, rowid, text, kernel)"
    "  VALUES ('delete', old.id, old.text, old.kernel);"
    "  INSERT INTO notes_fts(rowid, text, kernel) VALUES (new.id, new.text, new.kernel); END;";

char *kp_store_path(char *buf, size_t n)
{
    const char *p = getenv(KP_ENV_STORE);
    if (p && *p) snprintf(buf, n, "%s", p);
    else if ((p = getenv("XDG_DATA_HOME")) && *p) snprintf(buf, n, "%s/kprof/kprof.db", p);
    else if ((p = getenv("HOME")) && *p) snprintf(buf, n, "%s/.local/share/kprof/kprof.db", p);
    else snprintf(buf, n, ".kprof/kprof.db");
    return buf;
}

void kp_store_device_key(const kp_device_info *dev, char *buf, size_t n)
{
    snprintf(buf, n, "%s|%s|%s", dev->backend, dev->name, dev->platform);
}

static kprof_status kp_store_fail(kp_store *s, kp_error *err, const char *path, const char *what)
{
    return kp_error_set(err, KPROF_IO, "store %s: %s: %s", path, what,
                        s && s->db ? sqlite3_errmsg(s->db) : "cannot open");
}

kprof_status kp_store_open(int readonly, kp_store **out, kp_error *err)
{
    *out = NULL;
    char path[4096];
    kp_store_path(path, sizeof path);
    if (readonly && !kp_path_exists(path))
        return kp_error_set(err, KPROF_NOT_FOUND, "no store at %s yet", path);
    if (!readonly) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            kprof_status st = kp_mkdir_p(dir, err);
            if (st != KPROF_OK) return st;
        }
    }
    kp_store *s = calloc(1, sizeof *s);
    if (!s) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    kprof_status st = KPROF_OK;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        st = kp_store_fail(s, err, path, "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    /* Refuse foreign files: a kprof store has our user_version, or is empty. */
    sqlite3_stmt *q = NULL;
    int version = -1, tables = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        sqlite3_finalize(q);
        st = kp_error_set(err, KPROF_CORRUPT, "%s is not a kprof store (not an SQLite database)",
                          path);
        goto fail;
    }
    version = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) ==
            SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        tables = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (version != KP_STORE_SCHEMA_VERSION && !(version == 0 && tables == 0)) {
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s is not a kprof store of schema %d (user_version %d, %d tables)", path,
                          KP_STORE_SCHEMA_VERSION, version, tables);
        goto fail;
    }
    if (!readonly && version == 0) {
        char sql[4096];
        snprintf(sql, sizeof sql, "BEGIN; %s PRAGMA user_version = %d; COMMIT;", kp_store_schema,
                 KP_STORE_SCHEMA_VERSION);
        if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            st = kp_store_fail(s, err, path, "cannot create the schema");
            goto fail;
        }
    }
    *out = s;
    return KPROF_OK;
fail:
    kp_store_close(s);
    return st;
}

struct sqlite3 *kp_store_db(kp_store *s)
{
    return s->db;
}

void kp_store_close(kp_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

kprof_status kp_store_put_ceiling(kp_store *s, const kp_device_info *dev, const kp_ceiling *c,
                                  kp_error *err)
{
    char key[1024], path[4096];
    kp_store_device_key(dev, key, sizeof key);
    sqlite3_stmt *q = NULL;
    const char *sql = "INSERT OR REPLACE INTO ceilings (device_key, backend, device, driver, "
                      "copy_gbs, copy_bytes, demo_add_gbs, demo_add_ms, demo_add_elements, method, "
                      "measured_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return kp_store_fail(s, err, kp_store_path(path, sizeof path), "cannot write");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, dev->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, dev->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, dev->driver, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(q, 5, c->copy_gbs);
    sqlite3_bind_int64(q, 6, (sqlite3_int64)c->copy_bytes);
    sqlite3_bind_double(q, 7, c->demo_add_gbs);
    sqlite3_bind_double(q, 8, c->demo_add_ms);
    sqlite3_bind_int64(q, 9, (sqlite3_int64)c->demo_add_elements);
    sqlite3_bind_text(q, 10, c->method, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 11, c->measured_at ? c->measured_at : (sqlite3_int64)time(NULL));
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return kp_store_fail(s, err, kp_store_path(path, sizeof path), "cannot write");
    return KPROF_OK;
}

int kp_store_get_ceiling(kp_store *s, const kp_device_info *dev, kp_ceiling *c)
{
    memset(c, 0, sizeof *c);
    char key[1024];
    kp_store_device_key(dev, key, sizeof key);
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT copy_gbs, copy_bytes, demo_add_gbs, demo_add_ms, demo_add_elements, "
                      "measured_at, driver, method FROM ceilings WHERE device_key = ?";
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    int found = -1;
    if (sqlite3_step(q) == SQLITE_ROW) {
        c->copy_gbs = sqlite3_column_double(q, 0);
        c->copy_bytes = (uint64_t)sqlite3_column_int64(q, 1);
        c->demo_add_gbs = sqlite3_column_double(q, 2);
        c->demo_add_ms = sqlite3_column_double(q, 3);
        c->demo_add_elements = (uint64_t)sqlite3_column_int64(q, 4);
        c->measured_at = sqlite3_column_int64(q, 5);
        const unsigned char *t = sqlite3_column_text(q, 6);
        snprintf(c->driver, sizeof c->driver, "%s", t ? (const char *)t : "");
        t = sqlite3_column_text(q, 7);
        snprintf(c->method, sizeof c->method, "%s", t ? (const char *)t : "");
        found = c->copy_gbs > 0 ? 0 : -1;
    }
    sqlite3_finalize(q);
    return found;
}

int kp_store_lookup_ceiling(const kp_device_info *dev, kp_ceiling *c)
{
    kp_store *s = NULL;
    if (kp_store_open(1, &s, NULL) != KPROF_OK) return -1;
    int rc = kp_store_get_ceiling(s, dev, c);
    kp_store_close(s);
    return rc;
}
