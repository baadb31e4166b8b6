/*
 * trace_schema.h — the trace file's schema (docs/formats/trace.md): the format version this
 * kprof writes and the oldest it reads, making the tables of a new trace, the meta table's keys,
 * and the probes by which readers of older formats tell which tables and columns a trace has.
 * Its events.kind, events.domain and events.copy_kind are the numbers of core/event.h's lists
 * (the kinds and domains tables hold their names).
 */
#ifndef KP_STORE_TRACE_SCHEMA_H
#define KP_STORE_TRACE_SCHEMA_H

#include "base/error.h"

#include <sqlite3.h>
#include <stdint.h>

#define KP_TRACE_FORMAT_VERSION 3 /* what this kprof writes */
#define KP_TRACE_FORMAT_OLDEST  1 /* the oldest it reads (docs/formats/trace.md: what changed) */
#define KP_TRACE_APPLICATION_ID 0x4b50524f /* "KPRO" */

/* Every writer here returns KPROF_OK; or, when SQLite fails, NOMEM (it ran out of memory) or IO
 * with err saying "cannot write NAME: SQLite's message" (name: the trace file as the user knows
 * it, for the message; NULL says "the trace"). err may be NULL: SQLite's message stays in db for
 * a caller that words the failure itself. */

/* Make the tables of a new, empty trace of this format in db, for a writer that fills them in
 * bulk rather than from record files (store/trace_merge.h): application id and format version,
 * the schema with the events' metric columns, the kinds and domains rows and event_view; no
 * index (kp_trace_db_create_index, once the rows are in: one sort is cheaper than keeping the
 * index up row by row). */
kprof_status kp_trace_db_create(sqlite3 *db, const char *name, kp_error *err);
kprof_status kp_trace_db_create_index(sqlite3 *db, const char *name, kp_error *err);

/* The parts of kp_trace_db_create, for the ingest (store/trace_ingest.h), which makes them at
 * different times. create_tables: what every new trace starts with, whoever fills it in —
 * application id and format version, the tables, the kinds and domains rows; not the metric
 * columns, the views or the index. add_metric_columns: the events' flops and metric_bytes
 * columns (once). create_views: event_view, once every column exists. */
kprof_status kp_trace_schema_create_tables(sqlite3 *db, const char *name, kp_error *err);
kprof_status kp_trace_schema_add_metric_columns(sqlite3 *db, const char *name, kp_error *err);
kprof_status kp_trace_schema_create_views(sqlite3 *db, const char *name, kp_error *err);

/* The meta table's keys (docs/formats/trace.md), as `kprof trace` and `kprof merge` both write
 * them: format, format_version, kprof_version, command, start_ns, end_ns, exit_status,
 * collectors, dropped, metrics, clock (1: CLOCK_MONOTONIC), then host, boot_id, merged_from and
 * device where they are not NULL. NULL command or collectors write "". A status as above. */
typedef struct kp_trace_meta_keys {
    const char *command, *collectors;
    int64_t start_ns, end_ns, exit_status, dropped, metrics;
    const char *host, *boot_id; /* where it ran; NULL: not said */
    const char *merged_from;    /* kprof merge's inputs, one per line; NULL for a trace */
    const char *device;         /* the lab's device ("NAME (BACKEND device N)"); NULL: not said */
} kp_trace_meta_keys;
kprof_status kp_trace_db_write_meta(sqlite3 *db, const kp_trace_meta_keys *meta, const char *name,
                                    kp_error *err);

/* Whether a table of schema ("main", or an attached database's name; NULL: main) exists, and
 * whether it has a column: what readers of older formats probe (columns and tables that came
 * with a later format). 0 when the query fails: a probe answers whether, it does not fail. */
int kp_trace_db_has_table(sqlite3 *db, const char *schema, const char *table);
int kp_trace_db_has_column(sqlite3 *db, const char *schema, const char *table, const char *column);

#endif
