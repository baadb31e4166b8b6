/*
 * store.c — kprof's SQLite store of per-device measurements (see store.h).
 */
#include "store/store.h"
#include "base/env.h"
#include "base/util.h"
#include "store/trace_db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Each step below takes a store from one version to the next (KP_STORE_SCHEMA_VERSION is the
 * last): a new store runs them all, an older one the ones it lacks, in one transaction. */
struct kp_store {
    sqlite3 *db;
    int version;        /* PRAGMA user_version as opened (after any upgrade; a 3 reads as 2) */
    int has_fma;        /* ceilings has fma_gflops and fma_method */
    int stored_version; /* PRAGMA user_version as found (3 where version reads 2) */
};

/* Version 1: the measured bandwidth ceiling of each device (`kprof caps --measure`). */
static const char kp_store_schema_v1[] =
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
    "  measured_at INTEGER NOT NULL);";

/* Version 2: every measured result (`kprof history`, store/history.h) and the findings log
 * (`kprof notes`), with its full-text index kept in step by triggers, as SQLite's FTS5 page
 * shows for an external-content table. The FTS5 table is made on its own, so that an SQLite
 * built without FTS5 is named as the reason. */
/* What `notes import` looks a note up by (notes.c), so that each look-up is not a scan of the
 * table. Stores of schema 2 made before it was added get it on their next read-write open. */
#define KP_STORE_NOTES_AT_INDEX "CREATE INDEX IF NOT EXISTS notes_at ON notes(at, text)"

static const char kp_store_schema_v2_tables[] =
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"  /* 'run' | 'sweep' | 'bench' */
    "  at INTEGER NOT NULL," /* unix seconds */
    "  device TEXT, backend TEXT, device_key TEXT, driver TEXT, kprof_version TEXT,"
    "  kernel TEXT,"
    "  target TEXT,"
    "  source_path TEXT, source_hash TEXT,"
    "  options TEXT, grid TEXT, tg TEXT, buffers TEXT,"
    "  git_commit TEXT, git_dirty INTEGER,"
    "  median_ms REAL, min_ms REAL, nsamples INTEGER,"
    "  samples TEXT,"
    "  result TEXT NOT NULL);"
    "CREATE INDEX runs_kernel ON runs(kernel, id);"
    "CREATE TABLE notes ("
    "  id INTEGER PRIMARY KEY,"
    "  at INTEGER NOT NULL,"
    "  text TEXT NOT NULL,"
    "  kernel TEXT, device TEXT, grid TEXT, tg TEXT, median_ms REAL, git_commit TEXT,"
    "  made_from TEXT,"
    "  data TEXT);" KP_STORE_NOTES_AT_INDEX ";";
/* Columns added to ceilings without a new version (store.h): the FP32 FLOP peak (kprof's FMA
 * kernel) beside the bandwidth ceiling; a ceiling measured before has none (NULL) until
 * `kprof caps --measure` runs again. Each is added when missing. */
static const char *const kp_store_ceiling_columns[][2] = {
    {"fma_gflops", "ALTER TABLE ceilings ADD COLUMN fma_gflops REAL"},
    {"fma_method", "ALTER TABLE ceilings ADD COLUMN fma_method TEXT"},
};

static const char kp_store_schema_v2_fts[] =
    "CREATE VIRTUAL TABLE notes_fts USING fts5(text, kernel, content='notes', "
    "content_rowid='id');";
static const char kp_store_schema_v2_triggers[] =
    "CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN"
    "  INSERT INTO notes_fts(rowid, text, kernel) VALUES (new.id, new.text, new.kernel);"
    "END;"
    "CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN"
    "  INSERT INTO notes_fts(notes_fts, rowid, text, kernel)"
    "    VALUES ('delete', old.id, old.text, old.kernel);"
    "END;"
    "CREATE TRIGGER notes_au AFTER UPDATE ON notes BEGIN"
    "  INSERT INTO notes_fts(notes_fts, rowid, text, kernel)"
    "    VALUES ('delete', old.id, old.text, old.kernel);"
    "  INSERT INTO notes_fts(rowid, text, kernel) VALUES (new.id, new.text, new.kernel);"
    "END;";

/* The tables a store of each version has (index = version): what tells kprof's store from
 * another program's SQLite file that happens to carry the same user_version. */
static const char *const kp_store_tables[KP_STORE_SCHEMA_FMA_DEV + 1] = {
    NULL,
    "'ceilings'",
    "'ceilings','runs','notes','notes_fts'",
    "'ceilings','runs','notes','notes_fts'",
};
static const int kp_store_ntables[KP_STORE_SCHEMA_FMA_DEV + 1] = {0, 1, 4, 4};

/* Whether ceilings has every column of kp_store_ceiling_columns. */
static int kp_store_has_fma(kp_store *s)
{
    for (size_t i = 0; i < sizeof kp_store_ceiling_columns / sizeof kp_store_ceiling_columns[0];
         i++)
        if (!kp_trace_db_has_column(s->db, "main", "ceilings", kp_store_ceiling_columns[i][0]))
            return 0;
    return 1;
}

char *kp_store_path(char *buf, size_t n)
{
    const char *p = getenv(KP_ENV_STORE);
    if (p && *p)
        snprintf(buf, n, "%s", p);
    else if ((p = getenv("XDG_DATA_HOME")) && *p)
        snprintf(buf, n, "%s/kprof/kprof.db", p);
    else if ((p = getenv("HOME")) && *p)
        snprintf(buf, n, "%s/.local/share/kprof/kprof.db", p);
    else
        snprintf(buf, n, ".kprof/kprof.db");
    return buf;
}

void kp_store_device_key(const kp_device_info *dev, char *buf, size_t n)
{
    snprintf(buf, n, "%s|%s|%s", dev->backend, dev->name, dev->platform);
}

/* How long an open waits for another kprof's (or program's) lock on the store. */
#define KP_STORE_BUSY_MS 5000

/* A failure of SQLite on the store, by its (primary) result code, as one sentence that names
 * the store and what to do (kp_store_error). Only SQLITE_NOTADB means the file is not a
 * database; SQLITE_CORRUPT, and an error of kprof's own fixed SQL against a store whose tables
 * it checked (a missing column or table, a full-text index whose constructor fails), mean a
 * damaged store: CORRUPT (exit 2), as any damaged input. A store kprof may not write, or cannot
 * open or create, says so (IO: the disk or the permissions, not the file's content); a lock
 * held past KP_STORE_BUSY_MS is "busy" (IO: try again); the rest is the store's own I/O or
 * SQLite error, named as SQLite names it. */
static kprof_status kp_store_fail_rc(kp_store *s, kp_error *err, const char *path, const char *what,
                                     int rc)
{
    const char *msg = s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s is not a kprof store (not an SQLite database); it is left as it "
                            "is: point KPROF_STORE elsewhere, or move it aside and kprof makes a "
                            "new store",
                            path);
    case SQLITE_CORRUPT:
    case SQLITE_ERROR:
    case SQLITE_SCHEMA:
    case SQLITE_MISMATCH:
    case SQLITE_FORMAT:
        return kp_error_set(err, KPROF_CORRUPT,
                            "store %s is damaged (%s: %s): move it aside (kprof then makes a new "
                            "store) or point KPROF_STORE elsewhere",
                            path, what, msg);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return kp_error_set(err, KPROF_IO,
                            "store %s cannot be written (%s: %s): make it and its folder "
                            "writable, or point KPROF_STORE at a file that can be",
                            path, what, msg);
    case SQLITE_CANTOPEN:
        return kp_error_set(err, KPROF_IO,
                            "store %s cannot be opened (%s: %s): check that it and its folder may "
                            "be read and written, or point KPROF_STORE elsewhere",
                            path, what, msg);
    case SQLITE_FULL:
        return kp_error_set(err, KPROF_IO, "store %s cannot be written: the disk is full (%s: %s)",
                            path, what, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return kp_error_set(err, KPROF_IO,
                            "the store is busy: %s: %s (another program held it for more than "
                            "%d s; try again)",
                            path, msg, KP_STORE_BUSY_MS / 1000);
    default:
        return kp_error_set(err, KPROF_IO, "store %s: %s: %s", path, what, msg);
    }
}

static kprof_status kp_store_fail(kp_store *s, kp_error *err, const char *path, const char *what)
{
    return kp_store_fail_rc(s, err, path, what,
                            s && s->db ? sqlite3_extended_errcode(s->db) : SQLITE_CANTOPEN);
}

kprof_status kp_store_error(kp_store *s, kp_error *err, const char *what)
{
    char path[4096];
    return kp_store_fail(s, err, kp_store_path(path, sizeof path), what);
}

/* Whether a file SQLite reads as empty (user_version 0, no schema) is not empty and does not
 * start as every SQLite database does: SQLite reads a file shorter than its header as a new
 * database (and a 1-byte one as of size 0), and would write its schema over a file it was
 * never given. Called with a lock on the store held (inside a transaction, after a read), so
 * no writer is changing it; the bytes are read through SQLite's own file handle, since closing
 * another descriptor of the file would drop SQLite's POSIX locks on it. */
static int kp_store_foreign_bytes(kp_store *s, const char *path)
{
    static const char magic[16] = "SQLite format 3";
    struct stat sb;
    sqlite3_file *f = NULL;
    if (stat(path, &sb) != 0 || sb.st_size <= 0) return 0;
    if (sb.st_size < (off_t)sizeof magic) return 1;
    if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods)
        return 0;
    char head[sizeof magic];
    if (f->pMethods->xRead(f, head, (int)sizeof head, 0) != SQLITE_OK) return 0;
    return memcmp(head, magic, sizeof magic) != 0;
}

/* One integer from a query into *v: SQLITE_OK, or SQLite's result code of the failure. */
static int kp_store_int(sqlite3 *db, const char *sql, int *v)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int(q, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_ERROR; /* no row: not what was asked */
        }
    }
    sqlite3_finalize(q);
    return rc;
}

/* What the file holds: its user_version, its number of schema objects, and whether it has the
 * tables of that version. CORRUPT for anything kprof must not touch: not SQLite, another
 * program's database, or a store of a schema newer than this kprof knows. */
static kprof_status kp_store_check(kp_store *s, const char *path, int *tables, kp_error *err)
{
    int version = -1, rc = kp_store_int(s->db, "PRAGMA user_version", &version);
    if (rc != SQLITE_OK) return kp_store_fail_rc(s, err, path, "cannot read", rc);
    rc = kp_store_int(s->db, "SELECT count(*) FROM sqlite_master", tables);
    if (rc != SQLITE_OK) return kp_store_fail_rc(s, err, path, "cannot read", rc);
    if (version > KP_STORE_SCHEMA_FMA_DEV)
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s is a kprof store of schema %d, newer than this kprof (%s) knows "
                            "(%d): written by a newer kprof? It is left as it is; use that kprof, "
                            "or point KPROF_STORE elsewhere",
                            path, version, KPROF_VERSION_STRING, KP_STORE_SCHEMA_VERSION);
    if (version == 0 && *tables != 0)
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s is not a kprof store (an SQLite database of %d other tables)", path,
                            *tables);
    if (version == 0 && kp_store_foreign_bytes(s, path))
        return kp_store_fail_rc(s, err, path, "cannot read", SQLITE_NOTADB);
    if (version > 0) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (%s)",
                 kp_store_tables[version]);
        int have = -1;
        rc = kp_store_int(s->db, sql, &have);
        if (rc != SQLITE_OK) return kp_store_fail_rc(s, err, path, "cannot read", rc);
        if (have != kp_store_ntables[version])
            return kp_error_set(err, KPROF_CORRUPT,
                                "%s is not a kprof store (user_version %d, but not the tables of "
                                "kprof's schema %d)",
                                path, version, version);
    }
    s->stored_version = version;
    s->version = version == KP_STORE_SCHEMA_FMA_DEV ? KP_STORE_SCHEMA_VERSION : version;
    s->has_fma = version > 0 && kp_store_has_fma(s);
    return KPROF_OK;
}

/* kp_store_check in a read transaction of its own: its reads (the version, then the tables)
 * see one state of the file, never a version read before another kprof made the schema and
 * the tables read after ("an SQLite database of 14 other tables"). */
static kprof_status kp_store_check_now(kp_store *s, const char *path, int *tables, kp_error *err)
{
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return kp_store_fail(s, err, path, "cannot read");
    kprof_status st = kp_store_check(s, path, tables, err);
    sqlite3_exec(s->db, st == KPROF_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    return st;
}

/* Whether a read-write open has anything to do: an older schema, a missing column, or a
 * development build's user_version 3 to write back as 2. */
static int kp_store_needs_upgrade(const kp_store *s)
{
    return s->version < KP_STORE_SCHEMA_VERSION || !s->has_fma ||
           s->stored_version != KP_STORE_SCHEMA_VERSION;
}

/* Bring a store of an older schema (0: a new, empty file) up to KP_STORE_SCHEMA_VERSION in one
 * transaction: it is all done or, on any failure, nothing is (the old store stays as it was).
 * The write lock is taken first and the version read again under it, so two kprofs opening one
 * old store at once upgrade it once. */
static kprof_status kp_store_upgrade(kp_store *s, const char *path, kp_error *err)
{
    kprof_status st = KPROF_OK;
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return kp_store_fail(s, err, path, "cannot upgrade the store");
    int tables = 0;
    st = kp_store_check(s, path, &tables, err);
    if (st == KPROF_OK && s->version < 1 &&
        sqlite3_exec(s->db, kp_store_schema_v1, NULL, NULL, NULL) != SQLITE_OK)
        st = kp_store_fail(s, err, path, "cannot create the schema");
    if (st == KPROF_OK && s->version < 2) {
        if (sqlite3_exec(s->db, kp_store_schema_v2_tables, NULL, NULL, NULL) != SQLITE_OK)
            st = kp_store_fail(s, err, path, "cannot add the history and notes tables");
        else if (sqlite3_exec(s->db, kp_store_schema_v2_fts, NULL, NULL, NULL) != SQLITE_OK)
            st = kp_error_set(err, KPROF_IO,
                              "store %s: cannot create the notes' full-text index: %s (this "
                              "SQLite, %s, needs FTS5, which Debian's and most builds have); the "
                              "store is left as it was",
                              path, sqlite3_errmsg(s->db), sqlite3_libversion());
        else if (sqlite3_exec(s->db, kp_store_schema_v2_triggers, NULL, NULL, NULL) != SQLITE_OK)
            st = kp_store_fail(s, err, path, "cannot add the notes' index triggers");
    }
    for (size_t i = 0;
         st == KPROF_OK && i < sizeof kp_store_ceiling_columns / sizeof kp_store_ceiling_columns[0];
         i++)
        if (!kp_trace_db_has_column(s->db, "main", "ceilings", kp_store_ceiling_columns[i][0]) &&
            sqlite3_exec(s->db, kp_store_ceiling_columns[i][1], NULL, NULL, NULL) != SQLITE_OK)
            st = kp_store_fail(s, err, path, "cannot add the FLOP peak to the ceilings");
    if (st == KPROF_OK && s->stored_version != KP_STORE_SCHEMA_VERSION) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", KP_STORE_SCHEMA_VERSION);
        if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
            st = kp_store_fail(s, err, path, "cannot upgrade the store");
    }
    if (st == KPROF_OK && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        st = kp_store_fail(s, err, path, "cannot upgrade the store");
    if (st != KPROF_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return st;
    }
    s->version = s->stored_version = KP_STORE_SCHEMA_VERSION;
    s->has_fma = 1;
    return KPROF_OK;
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
            kp_error made = {0};
            if (kp_mkdir_p(dir, &made) != KPROF_OK) {
                /* made's message is escaped already: added as it is */
                kprof_status st = made.status;
                if (err && err->status == KPROF_OK) {
                    kp_error_set(err, st, "store %s cannot be written (", path);
                    kp_error_append_lines(err, made.message);
                    kp_error_append(err, "): point KPROF_STORE at a file that can be");
                }
                kp_error_clear(&made);
                return st;
            }
        }
    }
    /* Only a regular file (or, to write, none yet) is a store: SQLite would wait forever on a
     * FIFO, and a device or socket is no database either. */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return kp_error_set(err, KPROF_INVALID, "store %s %s: KPROF_STORE names the store's file",
                            path,
                            S_ISDIR(sb.st_mode)    ? "is a folder"
                            : S_ISFIFO(sb.st_mode) ? "is a FIFO, not a regular file"
                            : S_ISCHR(sb.st_mode)  ? "is a character device, not a regular file"
                            : S_ISBLK(sb.st_mode)  ? "is a block device, not a regular file"
                            : S_ISSOCK(sb.st_mode) ? "is a socket, not a regular file"
                                                   : "is not a regular file");
    kp_store *s = calloc(1, sizeof *s);
    if (!s) return kp_error_nomem(err);
    /* Reads open read-write too, without creating: a journal left by a writer that crashed
     * ("hot") is then rolled back, as SQLite must before anyone reads; a read-only open could
     * not, and would fail. Nothing else is written by a read (an older schema is read as it is).
     * A file the user may not write is opened read-only by SQLite itself. */
    int flags = SQLITE_OPEN_READWRITE | (readonly ? 0 : SQLITE_OPEN_CREATE);
    kprof_status st = KPROF_OK;
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK && (rc & 0xff) == SQLITE_CANTOPEN && !readonly) {
        st = kp_error_set(err, KPROF_IO,
                          "store %s cannot be written (cannot create it: %s): its folder must be "
                          "writable (not on a read-only file system), or point KPROF_STORE at a "
                          "file that can be",
                          path, sqlite3_errmsg(s->db));
        goto fail;
    }
    if (rc != SQLITE_OK) {
        st = kp_store_fail_rc(s, err, path, "cannot open", rc);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, KP_STORE_BUSY_MS);
    /* Refuse what is not ours, or newer than us, before anything is written. */
    int tables = 0;
    st = kp_store_check_now(s, path, &tables, err);
    if (st != KPROF_OK) goto fail;
    /* An empty file may be a store another kprof is making right now (its schema in one
     * transaction under the write lock): a read waits for that lock (BEGIN IMMEDIATE writes
     * nothing) and looks again, so that it reads the schema made, not the empty file. A file it
     * may not write is read as it is. */
    if (readonly && s->stored_version == 0 &&
        sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        st = kp_store_check_now(s, path, &tables, err);
        if (st != KPROF_OK) goto fail;
    }
    /* Read-only opens read an older store as it is (a schema-1 store has no history yet). */
    if (!readonly && kp_store_needs_upgrade(s)) {
        st = kp_store_upgrade(s, path, err);
        if (st != KPROF_OK) goto fail;
    }
    /* A schema-2 store made before notes_at: add it (a no-op when it is there). Nothing is
     * lost without it but speed, so a failure here is no failure of the open. */
    if (!readonly && s->version >= 2)
        sqlite3_exec(s->db, KP_STORE_NOTES_AT_INDEX, NULL, NULL, NULL);
    *out = s;
    return KPROF_OK;
fail:
    kp_store_close(s);
    return st;
}

int kp_store_version(const kp_store *s)
{
    return s->version;
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
                      "measured_at, fma_gflops, fma_method) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)";
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
    sqlite3_bind_int64(q, 11, c->measured_at ? c->measured_at : (sqlite3_int64)kp_unix_now());
    if (c->fma_gflops > 0) {
        sqlite3_bind_double(q, 12, c->fma_gflops);
        sqlite3_bind_text(q, 13, c->fma_method, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_null(q, 12);
        sqlite3_bind_null(q, 13);
    }
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return kp_store_fail(s, err, kp_store_path(path, sizeof path), "cannot write");
    return KPROF_OK;
}

kprof_status kp_store_get_ceiling(kp_store *s, const kp_device_info *dev, kp_ceiling *c,
                                  kp_error *err)
{
    memset(c, 0, sizeof *c);
    char key[1024];
    kp_store_device_key(dev, key, sizeof key);
    sqlite3_stmt *q = NULL;
    /* A store read as it is (read-only opens do not upgrade) may predate the FLOP peak. */
    const char *sql = s->has_fma ? "SELECT copy_gbs, copy_bytes, demo_add_gbs, demo_add_ms, "
                                   "demo_add_elements, measured_at, driver, method, fma_gflops, "
                                   "fma_method FROM ceilings WHERE device_key = ?"
                                 : "SELECT copy_gbs, copy_bytes, demo_add_gbs, demo_add_ms, "
                                   "demo_add_elements, measured_at, driver, method FROM ceilings "
                                   "WHERE device_key = ?";
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return kp_store_error(s, err, "cannot read the bandwidth ceiling");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    int found = 0;
    int step = sqlite3_step(q);
    kprof_status st = KPROF_OK;
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        st = kp_store_error(s, err, "cannot read the bandwidth ceiling");
    if (step == SQLITE_ROW) {
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
        if (s->has_fma) {
            c->fma_gflops = sqlite3_column_double(q, 8); /* NULL reads as 0: none */
            t = sqlite3_column_text(q, 9);
            snprintf(c->fma_method, sizeof c->fma_method, "%s", t ? (const char *)t : "");
        }
        found = c->copy_gbs > 0;
    }
    sqlite3_finalize(q);
    if (st == KPROF_OK && !found)
        st = kp_error_set(err, KPROF_NOT_FOUND,
                          "no bandwidth ceiling is stored for %s (kprof caps --measure measures "
                          "one)",
                          key);
    return st;
}

kprof_status kp_store_lookup_ceiling(const kp_device_info *dev, kp_ceiling *c, kp_error *err)
{
    memset(c, 0, sizeof *c);
    kp_store *s = NULL;
    kprof_status st = kp_store_open(1, &s, err);
    if (st != KPROF_OK) return st; /* NOT_FOUND: no store, so no ceiling */
    /* An empty file (a store being made) or one from before the ceilings: none yet. */
    if (kp_store_version(s) == 0 || !kp_trace_db_has_table(s->db, "main", "ceilings")) {
        kp_store_close(s);
        return kp_error_set(err, KPROF_NOT_FOUND, "the store holds no bandwidth ceilings yet");
    }
    st = kp_store_get_ceiling(s, dev, c, err);
    kp_store_close(s);
    return st;
}
