/*
 * trace_db.c — opening a trace file to read (see trace_db.h): the checks that it is a kprof
 * trace of a format this kprof reads and whole, the error for a failed query, and the small
 * queries every reader shares (meta values, one-number queries, the strings' slots).
 */
#include "store/trace_db.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int64_t kp_trace_db_scalar(sqlite3 *db, const char *sql, int64_t fallback)
{
    sqlite3_stmt *q = NULL;
    int64_t v = fallback;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
        sqlite3_column_type(q, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

kprof_status kp_trace_db_open(const char *path, sqlite3 **out, kp_error *err)
{
    *out = NULL;
    /* Only a regular file: SQLite would block for ever opening a FIFO. */
    kprof_status status = kp_input_check(path, "a trace", err);
    if (status != KPROF_OK) return status;
    sqlite3 *db = NULL;
    /* One thread reads: no SQLite mutexes (they cost ~6% of a large export). */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        /* No handle at all: SQLite could not allocate one. */
        status =
            db ? kp_error_set(err, KPROF_CORRUPT, "%s: cannot open: %s", path, sqlite3_errmsg(db))
               : kp_error_nomem(err);
        sqlite3_close(db);
        return status;
    }
    int64_t app = kp_trace_db_scalar(db, "PRAGMA application_id", -1);
    if (app != KP_TRACE_APPLICATION_ID) {
        /* Tell a damaged SQLite file from something else entirely by its magic. */
        char magic[16] = "";
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
        if (f) fclose(f);
        int sqlite_file = got == 16 && memcmp(magic, "SQLite format 3", 16) == 0;
        if (app < 0 && sqlite_file)
            kp_error_set(err, KPROF_CORRUPT, "%s is damaged or truncated (%s)", path,
                         sqlite3_errmsg(db));
        else
            kp_error_set(err, KPROF_CORRUPT, "%s is not a kprof trace (%s)", path,
                         app < 0 ? "not an SQLite database"
                                 : "an SQLite database of something else");
        sqlite3_close(db);
        return KPROF_CORRUPT;
    }
    int64_t version = kp_trace_db_scalar(db, "PRAGMA user_version", -1);
    if (version < KP_TRACE_FORMAT_OLDEST || version > KP_TRACE_FORMAT_VERSION) {
        kp_error_set(err, KPROF_CORRUPT,
                     "%s is a kprof trace of format %lld; this kprof reads formats %d to %d%s",
                     path, (long long)version, KP_TRACE_FORMAT_OLDEST, KP_TRACE_FORMAT_VERSION,
                     version > KP_TRACE_FORMAT_VERSION ? " (a newer kprof wrote it)" : "");
        sqlite3_close(db);
        return KPROF_CORRUPT;
    }
    /* Truncation: the header's page count must fit the file (reading every page with
     * quick_check would cost seconds on a large trace). Damage inside a page surfaces as
     * SQLITE_CORRUPT in the queries, which readers report as such. */
    int64_t pages = kp_trace_db_scalar(db, "PRAGMA page_count", -1);
    int64_t page_size = kp_trace_db_scalar(db, "PRAGMA page_size", -1);
    int64_t tables =
        kp_trace_db_scalar(db,
                           "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                           "AND name IN ('meta','strings','processes','events','notes')",
                           -1);
    struct stat st;
    if (pages < 0 || page_size <= 0 || stat(path, &st) != 0 ||
        (int64_t)st.st_size < pages * page_size || tables != 5) {
        kp_error_set(err, KPROF_CORRUPT, "%s is damaged or truncated (%s)", path,
                     tables != 5 ? "tables missing"
                                 : "the file is shorter than its own header says");
        sqlite3_close(db);
        return KPROF_CORRUPT;
    }
    /* No PRAGMA mmap_size: with the file mapped, a trace that shrinks while it is read (another
     * `kprof trace --force` over it, a copy cut short) kills the reader with SIGBUS. Read with
     * read(), a shrunk file is an SQLITE_CORRUPT or SQLITE_IOERR that readers report as a
     * damaged trace (see kp_trace_db_read_error). */
    sqlite3_exec(db, "PRAGMA cache_size = -65536;", NULL, NULL, NULL);
    *out = db;
    return KPROF_OK;
}

int64_t kp_trace_db_string_slots(sqlite3 *db)
{
    int64_t max_id = kp_trace_db_scalar(db, "SELECT COALESCE(MAX(id), 0) FROM strings", 0);
    int64_t count = kp_trace_db_scalar(db, "SELECT COUNT(*) FROM strings", 0);
    int64_t bound = count < (1ll << 40) ? count * 2 + 65536 : (1ll << 41);
    if (max_id < 0) max_id = 0;
    if (max_id > bound) max_id = bound;
    return max_id + 1;
}

kprof_status kp_trace_db_read_error(const char *path, int sqlite_code, const char *message,
                                    kp_error *err)
{
    const char *what = path && *path ? path : "the trace";
    int primary = sqlite_code & 0xff;
    if (primary == SQLITE_NOMEM)
        return kp_error_set(err, KPROF_NOMEM, "out of memory reading %s", what);
    if (primary == SQLITE_IOERR && sqlite_code != SQLITE_IOERR_SHORT_READ)
        return kp_error_set(err, KPROF_IO, "reading %s failed: %s", what, message);
    return kp_error_set(err, KPROF_CORRUPT, "%s is damaged or truncated (reading it failed: %s)",
                        what, message);
}

void kp_trace_db_meta(sqlite3 *db, const char *key, char *out, size_t n)
{
    out[0] = '\0';
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &q, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(q, 0);
        snprintf(out, n, "%s", t ? (const char *)t : "");
    }
    sqlite3_finalize(q);
}

int64_t kp_trace_db_meta_int(sqlite3 *db, const char *key)
{
    char buf[64];
    kp_trace_db_meta(db, key, buf, sizeof buf);
    return strtoll(buf, NULL, 10);
}
