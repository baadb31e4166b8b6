/*
 * trace_db.h — the trace file (*.kprof): an SQLite database with a documented schema
 * (docs/formats/trace.md) that every report and export reads. `kprof trace` writes it from the
 * per-process record files its collectors left (the ingest: store/trace_ingest.h, on the schema
 * of store/trace_schema.h); readers open it read-only here and refuse anything that is not a
 * kprof trace with a clear error. This header includes the other two: it is the one the store's
 * users include.
 */
#ifndef KP_STORE_TRACE_DB_H
#define KP_STORE_TRACE_DB_H

#include "base/error.h"
#include "store/trace_ingest.h"
#include "store/trace_schema.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Open a trace read-only, checking it is one: NOT_FOUND or INVALID (kp_input_check) unless it
 * is a regular file, so a FIFO is refused without blocking; CORRUPT with the reason when it is
 * not a kprof trace, is one of a format version this kprof does not read (it reads
 * KP_TRACE_FORMAT_OLDEST .. KP_TRACE_FORMAT_VERSION; the error names both), or is cut short. The
 * file is read, never mapped: a
 * trace that shrinks while it is read is reported (kp_trace_db_read_error), not a SIGBUS. */
kprof_status kp_trace_db_open(const char *path, sqlite3 **db, kp_error *err);

/* How many slots a table of names indexed by string id needs: MAX(id) + 1 of the strings
 * table, at least 1. A damaged or edited file may hold any id: the count is bounded by the
 * number of strings (twice it, plus 65536), and ids beyond it read as unknown names. */
int64_t kp_trace_db_string_slots(sqlite3 *db);

/* The error for a query on an open trace that failed (sqlite_code and message from
 * sqlite3_errcode/errmsg): CORRUPT "PATH is damaged or truncated (...)" for anything the file's
 * contents explain, a file that shrank while it was read included; NOMEM and IO (exit 1) only
 * for memory and real I/O errors. path may be NULL (the text then says "the trace"). */
kprof_status kp_trace_db_read_error(const char *path, int sqlite_code, const char *message,
                                    kp_error *err);

/* The first column of the first row of sql (a one-number query), or fallback when there is none
 * or the query fails. */
int64_t kp_trace_db_scalar(sqlite3 *db, const char *sql, int64_t fallback);

/* A meta value as text ("" when absent), or as an integer. */
void kp_trace_db_meta(sqlite3 *db, const char *key, char *out, size_t n);
int64_t kp_trace_db_meta_int(sqlite3 *db, const char *key);

#endif
