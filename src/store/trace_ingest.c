/*
 * trace_ingest.c — the ingest: collectors' record files (collect/record.h) into a new trace
 * file (see trace_ingest.h), while the program runs and once it has ended.
 */
#define _GNU_SOURCE
#include "store/trace_ingest.h"
#include "collect/capture.h"
#include "base/util.h"
#include "collect/record.h"
#include "core/demangle.h"
#include "store/trace_db.h"
#include "store/trace_schema.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One record file being ingested: how far, its strings, its process row. */
typedef struct kp_ingest_part {
    char *name;      /* in the folder */
    int fd;          /* -1 until opened */
    uint64_t offset; /* bytes ingested: whole records up to here */
    int64_t process; /* its row (0 until inserted) */
    kp_rec header;   /* the first record (header.magic 0 until read) */
    kp_rec job;      /* its KP_REC_PROCESS (job.magic 0: none) */
    kp_rec end_rec;  /* its KP_REC_END (end_rec.magic 0: none) */
    char collector[32];
    char **strings; /* local id -> text (heap, NUL-terminated), with its length */
    size_t *string_lens;
    int64_t *map, *kmap; /* local id -> trace string id (kernels demangled), 0 = not yet */
    uint32_t nstrings;   /* slots */
    uint64_t events, dropped, end_ns;
    int truncated, empty;
    /* Events whose name was not defined yet when they went in: a thread's buffer may reach the
     * file before that of the thread that defined the string (a range ended on another thread).
     * Named at the end, when the whole file has been read. */
    struct kp_ingest_fixup {
        int64_t row;
        uint32_t local;
        int kernel;
    } * fixups;
    size_t nfixups, fixups_cap;
    kp_rec *notes; /* its notes, in file order */
    size_t nnotes, notes_cap;
    /* The event record read last, which the metric records after it belong to (record.h): its
     * kind (0: none yet, or a record other than a string definition came since), its place in
     * the ingest's row buffer while it waits there (-1 once inserted), and its row once
     * inserted. */
    int last_kind;
    long last_pending;
    int64_t last_row;
    /* Metrics whose key was not defined yet when they were read (a string another thread's
     * buffer defines later, as for names above): applied at the end. */
    struct kp_ingest_metric_fixup {
        int64_t row;
        uint32_t local;
        double value;
    } * metric_fixups;
    size_t nmetric_fixups, metric_fixups_cap;
    uint64_t metrics_orphaned; /* metric records with no event of their kind right before them */
    uint64_t metrics_invalid;  /* ... whose value cannot be one (not finite; negative flops or
                                  bytes) or whose key was never defined */
} kp_ingest_part;

/* A user metric (or one whose key is not defined yet) of a row still in the row buffer: it goes
 * into the metrics table once its row is in and has an id. */
typedef struct kp_ingest_pending_metric {
    size_t row; /* index in the row buffer */
    kp_ingest_part *part;
    uint32_t local; /* the key's string id in the part */
    int64_t key;    /* its id in the trace, 0 while the part has not defined it */
    double value;
} kp_ingest_pending_metric;

struct kp_trace_ingest {
    sqlite3 *db;
    sqlite3_stmt *ins_event, *ins_string, *get_string, *ins_process, *upd_process, *upd_job,
        *ins_clock, *ins_note, *upd_name, *ins_kernel_info;
    sqlite3_stmt *ins_events; /* KP_INGEST_ROWS rows at once */
    /* The same two with the metric columns, for rows that carry flops or bytes. */
    sqlite3_stmt *ins_event_metrics, *ins_events_metrics;
    sqlite3_stmt *ins_metric, *upd_flops, *upd_metric_bytes;
    struct kp_ingest_row *rows; /* KP_INGEST_ROWS, waiting */
    size_t nrows;
    int rows_metrics;        /* a row waiting carries flops or metric bytes */
    int metric_columns;      /* events has them (kp_trace_schema_add_metric_columns) */
    char *ins_metric_sql[2]; /* the INSERTs with them, one row and many */
    kp_ingest_pending_metric *pending_metrics; /* of the rows waiting */
    size_t npending_metrics, pending_metrics_cap;
    const volatile sig_atomic_t *cancel;
    kp_ingest_part *parts;
    size_t nparts, cap;
    unsigned char *buf; /* reading */
    size_t buf_cap;
    kp_trace_summary sum;
    int one_process; /* kp_trace_run.one_process: every part is of one process image */
    struct {
        int64_t process;
        uint64_t pid;
        uint64_t events, dropped, end;
        int truncated, unclean, parts;
    } one;          /* with one_process: its row and its parts' sums */
    kp_error error; /* the first failure, kept for kp_trace_ingest_finish */
    kprof_status status;
};

typedef struct kp_trace_ingest kp_ingest;

#define KP_INGEST_COLUMNS 27 /* of events, all but id and the two metric columns */
#define KP_INGEST_ROWS    32 /* rows per INSERT */

typedef struct kp_ingest_row {
    int64_t v[KP_INGEST_COLUMNS];
    uint32_t nulls;        /* bit c: column c is NULL */
    kp_ingest_part *fixup; /* the part whose fixup this row is, or NULL */
    size_t fixup_index;
    kp_ingest_part *part;       /* the part it came from */
    double flops, metric_bytes; /* its metrics (record.h's KP_REC_METRIC), where has_* */
    unsigned char has_flops, has_metric_bytes;
    int64_t id; /* its id, once inserted */
} kp_ingest_row;

/* What a metric's key is (record.h: "flops" and "bytes" are the event model's own). */
typedef enum kp_ingest_key {
    KP_INGEST_KEY_UNDEFINED, /* the part has not defined the string (yet) */
    KP_INGEST_KEY_FLOPS,
    KP_INGEST_KEY_BYTES,
    KP_INGEST_KEY_USER
} kp_ingest_key;

/* SQLite's progress callback: non-zero stops the statement (SQLITE_INTERRUPT). */
static int kp_ingest_cancelled(void *flag)
{
    return flag && *(const volatile sig_atomic_t *)flag;
}

/* The trace's SQLite failed at what: NOMEM when it ran out of memory, else IO with SQLite's
 * message and the system's reason. The first failure wins (m->status, m->error). */
static kprof_status kp_db_fail(kp_ingest *m, const char *what)
{
    if (m->status != KPROF_OK) return m->status;
    if (sqlite3_errcode(m->db) == SQLITE_NOMEM) return m->status = kp_error_nomem(&m->error);
    int sys = sqlite3_system_errno(m->db); /* the system's reason, where there is one */
    m->status = kp_error_set(&m->error, KPROF_IO, "writing the trace: %s: %s%s%s%s", what,
                             sqlite3_errmsg(m->db), sys ? " (" : "", sys ? strerror(sys) : "",
                             sys ? ")" : "");
    return m->status;
}

static kprof_status kp_ingest_nomem(kp_ingest *m, const char *what)
{
    if (m->status == KPROF_OK)
        m->status = kp_error_set(&m->error, KPROF_NOMEM, "out of memory merging %s", what);
    return m->status;
}

/* The global id of a string (inserted when new). 0 on failure. */
static int64_t kp_ingest_string(kp_ingest *m, const char *text, size_t len)
{
    sqlite3_reset(m->ins_string);
    sqlite3_bind_text(m->ins_string, 1, text, (int)len, SQLITE_TRANSIENT);
    sqlite3_step(m->ins_string);
    sqlite3_reset(m->get_string);
    sqlite3_bind_text(m->get_string, 1, text, (int)len, SQLITE_TRANSIENT);
    int64_t id = 0;
    if (sqlite3_step(m->get_string) == SQLITE_ROW) id = sqlite3_column_int64(m->get_string, 0);
    return id;
}

/* The text of a part's local string id ("" when unknown). */
static const char *kp_part_string(const kp_ingest_part *p, uint32_t id, size_t *len)
{
    if (id == 0 || id >= p->nstrings || !p->strings[id]) {
        *len = 0;
        return "";
    }
    *len = p->string_lens[id];
    return p->strings[id];
}

/* A record's name as a global string id; kernels are demangled once per local id. */
static int64_t kp_ingest_name(kp_ingest *m, kp_ingest_part *p, uint32_t local, int demangle)
{
    if (local == 0 || local >= p->nstrings || !p->strings[local]) return 0;
    int64_t *map = demangle ? p->kmap : p->map;
    if (map[local]) return map[local];
    size_t len;
    const char *text = kp_part_string(p, local, &len);
    char out[KP_DEMANGLE_NAME_BYTES];
    if (demangle && kp_demangle_name(text, len, out, sizeof out)) {
        map[local] = kp_ingest_string(m, out, strlen(out));
    } else {
        map[local] = kp_ingest_string(m, text, len);
    }
    return map[local];
}

/* Keep a string definition (a later one of the same id replaces it: a batch re-sent after a
 * failed write defines its strings again). KPROF_OK, or NOMEM (the ingest's error, naming the
 * part). */
static kprof_status kp_part_define(kp_ingest *m, kp_ingest_part *p, uint32_t id, const char *text,
                                   size_t len)
{
    if (id == 0 || id == UINT32_MAX) return KPROF_OK;
    if (id >= p->nstrings) {
        size_t n = p->nstrings ? p->nstrings : 64;
        while (n <= id)
            n *= 2;
        char **s = realloc(p->strings, n * sizeof *s);
        if (s) p->strings = s;
        size_t *l = realloc(p->string_lens, n * sizeof *l);
        if (l) p->string_lens = l;
        int64_t *a = realloc(p->map, n * sizeof *a);
        if (a) p->map = a;
        int64_t *b = realloc(p->kmap, n * sizeof *b);
        if (b) p->kmap = b;
        if (!s || !l || !a || !b) return kp_ingest_nomem(m, p->name);
        for (size_t i = p->nstrings; i < n; i++) {
            p->strings[i] = NULL;
            p->string_lens[i] = 0;
            p->map[i] = p->kmap[i] = 0;
        }
        p->nstrings = (uint32_t)n;
    }
    char *copy = malloc(len + 1);
    if (!copy) return kp_ingest_nomem(m, p->name);
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(p->strings[id]);
    p->strings[id] = copy;
    p->string_lens[id] = len;
    p->map[id] = p->kmap[id] = 0;
    return KPROF_OK;
}

/* The process row of a part, made the first time a record needs it (or at the end): its
 * counters are filled in by kp_part_close. */
static int64_t kp_part_process(kp_ingest *m, kp_ingest_part *p)
{
    if (p->process) return p->process;
    /* One process image: the parts of the first part's pid (a child the program forked or
     * started writes parts of its own pid: processes of their own). */
    if (m->one_process && m->one.process && p->header.magic && p->header.id == m->one.pid)
        return p->process = m->one.process;
    const kp_rec *h = p->header.magic ? &p->header : NULL;
    sqlite3_stmt *q = m->ins_process;
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, h ? (int64_t)h->id : 0);
    sqlite3_bind_int64(q, 2, h ? (int64_t)h->aux : 0);
    size_t clen = 0;
    const char *cmd = h ? kp_part_string(p, h->name, &clen) : "";
    sqlite3_bind_text(q, 3, cmd, (int)clen, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, p->collector, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, h ? (int64_t)h->start : 0);
    if (sqlite3_step(q) != SQLITE_DONE) {
        kp_db_fail(m, "processes");
        return 0;
    }
    p->process = sqlite3_last_insert_rowid(m->db);
    if (m->one_process && !m->one.process) {
        m->one.process = p->process;
        m->one.pid = h ? h->id : 0;
    }
    return p->process;
}

static void kp_ingest_add_note(kp_trace_summary *sum, const char *text, size_t len)
{
    size_t used = strlen(sum->notes);
    if (used + len + 2 < sizeof sum->notes)
        snprintf(sum->notes + used, sizeof sum->notes - used, "%.*s\n", (int)len, text);
}

/* Give events its metric columns (kp_trace_schema_add_metric_columns), once: KPROF_OK, or the
 * ingest's status (m->status, m->error). No statement may be running while the schema changes:
 * they are all reset (each is re-bound before it runs, and SQLite prepares them again for the new
 * schema). */
static kprof_status kp_ingest_metric_columns(kp_ingest *m)
{
    if (m->metric_columns) return KPROF_OK;
    if (m->status != KPROF_OK) return m->status;
    for (sqlite3_stmt *q = sqlite3_next_stmt(m->db, NULL); q; q = sqlite3_next_stmt(m->db, q))
        sqlite3_reset(q);
    if (kp_trace_schema_add_metric_columns(m->db, NULL, NULL) != KPROF_OK ||
        sqlite3_prepare_v2(m->db, m->ins_metric_sql[0], -1, &m->ins_event_metrics, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(m->db, m->ins_metric_sql[1], -1, &m->ins_events_metrics, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "UPDATE events SET flops = ? WHERE id = ?", -1, &m->upd_flops,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "UPDATE events SET metric_bytes = ? WHERE id = ?", -1,
                           &m->upd_metric_bytes, NULL) != SQLITE_OK)
        return kp_db_fail(m, "events' metric columns");
    m->metric_columns = 1;
    return KPROF_OK;
}

/* A metric's key, from its string id in the part. */
static kp_ingest_key kp_ingest_key_of(const kp_ingest_part *p, uint32_t local)
{
    if (local == 0 || local >= p->nstrings || !p->strings[local]) return KP_INGEST_KEY_UNDEFINED;
    if (strcmp(p->strings[local], "flops") == 0 && p->string_lens[local] == 5)
        return KP_INGEST_KEY_FLOPS;
    if (strcmp(p->strings[local], "bytes") == 0 && p->string_lens[local] == 5)
        return KP_INGEST_KEY_BYTES;
    return KP_INGEST_KEY_USER;
}

/* Keep a metric whose key the part has not defined yet, for kp_part_finish. */
static void kp_part_metric_fixup(kp_ingest *m, kp_ingest_part *p, int64_t row, uint32_t local,
                                 double value)
{
    if (p->nmetric_fixups == p->metric_fixups_cap) {
        size_t cap = p->metric_fixups_cap ? p->metric_fixups_cap * 2 : 16;
        struct kp_ingest_metric_fixup *f = realloc(p->metric_fixups, cap * sizeof *f);
        if (!f) {
            kp_ingest_nomem(m, p->name);
            return;
        }
        p->metric_fixups = f;
        p->metric_fixups_cap = cap;
    }
    p->metric_fixups[p->nmetric_fixups++] = (struct kp_ingest_metric_fixup){row, local, value};
}

/* A metric of an event row already inserted: flops and bytes into its columns, a user key into
 * the metrics table, a key not defined yet kept for the end. */
static void kp_ingest_metric_of_row(kp_ingest *m, kp_ingest_part *p, int64_t row, uint32_t local,
                                    double value)
{
    kp_ingest_key key = kp_ingest_key_of(p, local);
    sqlite3_stmt *q = NULL;
    int64_t user = 0;
    switch (key) {
    case KP_INGEST_KEY_UNDEFINED:
        kp_part_metric_fixup(m, p, row, local, value);
        return;
    case KP_INGEST_KEY_FLOPS:
    case KP_INGEST_KEY_BYTES:
        if (kp_ingest_metric_columns(m) != KPROF_OK) return;
        q = key == KP_INGEST_KEY_FLOPS ? m->upd_flops : m->upd_metric_bytes;
        break;
    case KP_INGEST_KEY_USER:
        if (!(user = kp_ingest_name(m, p, local, 0))) {
            kp_db_fail(m, "strings");
            return;
        }
        q = m->ins_metric;
        break;
    }
    sqlite3_reset(q);
    if (key == KP_INGEST_KEY_USER) {
        sqlite3_bind_int64(q, 1, row);
        sqlite3_bind_int64(q, 2, user);
        sqlite3_bind_double(q, 3, value);
    } else {
        sqlite3_bind_double(q, 1, value);
        sqlite3_bind_int64(q, 2, row);
    }
    if (sqlite3_step(q) != SQLITE_DONE) {
        kp_db_fail(m, key == KP_INGEST_KEY_USER ? "metrics" : "events");
        return;
    }
    m->sum.metrics++;
}

/* Rows wait here and go in KP_INGEST_ROWS at a time, one statement for all of them: a
 * statement per row cost half the ingest in SQLite's per-statement work and the bind calls.
 * Rows with metrics go in through statements that name the two metric columns; the others
 * leave them out (NULL), so a trace without metrics binds nothing more than before. */
static kprof_status kp_ingest_flush_rows(kp_ingest *m)
{
    if (m->nrows == 0 || m->status != KPROF_OK) {
        m->nrows = 0;
        m->npending_metrics = 0;
        m->rows_metrics = 0;
        return m->status;
    }
    int full = m->nrows == KP_INGEST_ROWS;
    size_t n = full ? KP_INGEST_ROWS : 1;
    for (size_t first = 0; first < m->nrows; first += n) {
        const kp_ingest_row *head = &m->rows[first];
        int metrics = full ? m->rows_metrics : head->has_flops || head->has_metric_bytes;
        sqlite3_stmt *q = full ? (metrics ? m->ins_events_metrics : m->ins_events)
                               : (metrics ? m->ins_event_metrics : m->ins_event);
        int columns = KP_INGEST_COLUMNS + (metrics ? 2 : 0);
        sqlite3_reset(q);
        for (size_t i = 0; i < n; i++) {
            const kp_ingest_row *row = &m->rows[first + i];
            int base = (int)i * columns + 1;
            for (int c = 0; c < KP_INGEST_COLUMNS; c++) {
                if (row->nulls & (1u << c))
                    sqlite3_bind_null(q, base + c);
                else
                    sqlite3_bind_int64(q, base + c, row->v[c]);
            }
            if (!metrics) continue;
            if (row->has_flops)
                sqlite3_bind_double(q, base + KP_INGEST_COLUMNS, row->flops);
            else
                sqlite3_bind_null(q, base + KP_INGEST_COLUMNS);
            if (row->has_metric_bytes)
                sqlite3_bind_double(q, base + KP_INGEST_COLUMNS + 1, row->metric_bytes);
            else
                sqlite3_bind_null(q, base + KP_INGEST_COLUMNS + 1);
        }
        if (sqlite3_step(q) != SQLITE_DONE) {
            m->nrows = 0;
            m->npending_metrics = 0;
            m->rows_metrics = 0;
            return kp_db_fail(m, "events");
        }
        /* The rows took consecutive ids ending at the last one inserted. */
        int64_t last = sqlite3_last_insert_rowid(m->db);
        for (size_t i = 0; i < n; i++) {
            kp_ingest_row *row = &m->rows[first + i];
            row->id = last - (int64_t)(n - 1 - i);
            if (row->fixup) row->fixup->fixups[row->fixup_index].row = row->id;
            kp_ingest_part *p = row->part;
            if (p && p->last_pending == (long)(first + i)) { /* a later metric finds it here */
                p->last_pending = -1;
                p->last_row = row->id;
            }
        }
    }
    /* The user metrics of the rows just inserted, now that they have ids. */
    for (size_t i = 0; i < m->npending_metrics && m->status == KPROF_OK; i++) {
        const kp_ingest_pending_metric *pm = &m->pending_metrics[i];
        int64_t row = m->rows[pm->row].id;
        if (!pm->key) {
            /* Defined since (later in the same read), or still not: decide again. */
            kp_ingest_metric_of_row(m, pm->part, row, pm->local, pm->value);
            continue;
        }
        sqlite3_stmt *q = m->ins_metric;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, row);
        sqlite3_bind_int64(q, 2, pm->key);
        sqlite3_bind_double(q, 3, pm->value);
        if (sqlite3_step(q) != SQLITE_DONE)
            kp_db_fail(m, "metrics");
        else
            m->sum.metrics++;
    }
    m->npending_metrics = 0;
    m->nrows = 0;
    m->rows_metrics = 0;
    return m->status;
}

/* A metric record (record.h's KP_REC_METRIC): a metric of the event record read last in the
 * same part, if that is an event of the kind the record names. It goes on the event's row while
 * the row waits in the buffer (the writer appends an event and its metrics in one piece, so it
 * nearly always does), else onto the row already inserted. */
static void kp_part_metric(kp_ingest *m, kp_ingest_part *p, const kp_rec *r)
{
    double value;
    memcpy(&value, &r->bytes, sizeof value); /* IEEE-754 bits, as the writer stored them */
    if (!p->last_kind || r->aux != (uint32_t)p->last_kind ||
        (p->last_pending < 0 && !p->last_row)) {
        p->metrics_orphaned++;
        return;
    }
    kp_ingest_key key = kp_ingest_key_of(p, r->name);
    if (!isfinite(value) ||
        ((key == KP_INGEST_KEY_FLOPS || key == KP_INGEST_KEY_BYTES) && value < 0)) {
        p->metrics_invalid++;
        return;
    }
    if (p->last_pending < 0) {
        kp_ingest_metric_of_row(m, p, p->last_row, r->name, value);
        return;
    }
    kp_ingest_row *row = &m->rows[p->last_pending];
    if (key == KP_INGEST_KEY_FLOPS || key == KP_INGEST_KEY_BYTES) {
        if (kp_ingest_metric_columns(m) != KPROF_OK) return;
        /* A key given twice: the last value counts. */
        unsigned char *has = key == KP_INGEST_KEY_FLOPS ? &row->has_flops : &row->has_metric_bytes;
        if (!*has) m->sum.metrics++;
        *has = 1;
        *(key == KP_INGEST_KEY_FLOPS ? &row->flops : &row->metric_bytes) = value;
        m->rows_metrics = 1;
        return;
    }
    int64_t user = key == KP_INGEST_KEY_USER ? kp_ingest_name(m, p, r->name, 0) : 0;
    if (key == KP_INGEST_KEY_USER && !user) {
        kp_db_fail(m, "strings");
        return;
    }
    if (m->npending_metrics == m->pending_metrics_cap) {
        size_t cap = m->pending_metrics_cap ? m->pending_metrics_cap * 2 : 64;
        kp_ingest_pending_metric *v = realloc(m->pending_metrics, cap * sizeof *v);
        if (!v) {
            kp_ingest_nomem(m, p->name);
            return;
        }
        m->pending_metrics = v;
        m->pending_metrics_cap = cap;
    }
    m->pending_metrics[m->npending_metrics++] =
        (kp_ingest_pending_metric){(size_t)p->last_pending, p, r->name, user, value};
}

/* One record of a part into the trace. */
static void kp_part_record(kp_ingest *m, kp_ingest_part *p, const kp_rec *r)
{
    if (r->kind == KP_REC_METRIC) {
        kp_part_metric(m, p, r);
        return;
    }
    p->last_kind = 0; /* metrics after this record belong to no event, unless it is one */
    switch (r->kind) {
    case KP_REC_HEADER:
        if (!p->header.magic) p->header = *r;
        return;
    case KP_REC_END:
        p->end_ns = r->start;
        p->end_rec = *r;
        return;
    case KP_REC_PROCESS:
        if (!p->job.magic) p->job = *r;
        return;
    case KP_REC_DROPPED:
        p->dropped += r->bytes;
        return;
    case KP_REC_KERNEL_INFO: { /* its own table: one row per process, device and kernel */
        int64_t process = kp_part_process(m, p);
        int64_t name = kp_ingest_name(m, p, r->name, 1);
        if (!process || !name || m->status != KPROF_OK) return;
        sqlite3_stmt *q = m->ins_kernel_info;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, process);
        sqlite3_bind_int64(q, 2, r->device);
        sqlite3_bind_int64(q, 3, name);
        sqlite3_bind_int64(q, 4, r->static_smem);
        sqlite3_bind_int64(q, 5, r->local_mem);
        sqlite3_bind_int64(q, 6, (int64_t)r->bytes);
        sqlite3_bind_int64(q, 7, r->aux);
        if (sqlite3_step(q) != SQLITE_DONE) kp_db_fail(m, "kernel_info");
        return;
    }
    case KP_REC_NOTE: /* at the end, when its text has surely been read */
        if (p->nnotes == p->notes_cap) {
            size_t cap = p->notes_cap ? p->notes_cap * 2 : 8;
            kp_rec *n = realloc(p->notes, cap * sizeof *n);
            if (!n) {
                kp_ingest_nomem(m, p->name);
                return;
            }
            p->notes = n;
            p->notes_cap = cap;
        }
        p->notes[p->nnotes++] = *r;
        return;
    default:
        break;
    }
    if (!kp_event_kind_valid(r->kind)) return;
    int64_t process = kp_part_process(m, p);
    if (!process) return;
    if (m->nrows == KP_INGEST_ROWS && kp_ingest_flush_rows(m) != KPROF_OK) return;
    kp_ingest_row *row = &m->rows[m->nrows];
    row->nulls = 0;
    row->fixup = NULL;
    row->part = p;
    row->has_flops = row->has_metric_bytes = 0;
    int64_t *v = row->v;
    int c = 0;
#define KP_SET_(x) (v[c++] = (x))
#define KP_NULL_() (row->nulls |= 1u << c, v[c++] = 0)
    int kernel = r->kind == KP_REC_KERNEL;
    KP_SET_(r->kind);
    KP_SET_(process);
    KP_SET_(p->header.magic ? (int64_t)p->header.id : 0);
    KP_SET_(r->tid);
    int64_t name = kp_ingest_name(m, p, r->name, kernel);
    if (name)
        KP_SET_(name);
    else
        KP_NULL_();
    KP_SET_(r->domain);
    KP_SET_((int64_t)r->start);
    KP_SET_((int64_t)(r->end ? r->end : r->start));
    int device_op = kp_event_kind_on_device(r->kind);
    if (r->queued)
        KP_SET_((int64_t)r->queued);
    else
        KP_NULL_();
    if (r->submitted)
        KP_SET_((int64_t)r->submitted);
    else
        KP_NULL_();
    if (r->correlation)
        KP_SET_((int64_t)r->correlation);
    else
        KP_NULL_();
    if (device_op) {
        KP_SET_((int64_t)r->device);
        KP_SET_((int64_t)r->stream);
    } else {
        KP_NULL_();
        KP_NULL_();
    }
    for (int d = 0; d < 3; d++) {
        if (kernel)
            KP_SET_(r->grid[d]);
        else
            KP_NULL_();
    }
    for (int d = 0; d < 3; d++) {
        if (kernel)
            KP_SET_(r->block[d]);
        else
            KP_NULL_();
    }
    if (kernel && r->domain != KP_DOMAIN_OPENCL) {
        /* CUDA: registers 0 means CUPTI did not say; memory sizes of 0 are real. OpenCL
         * knows none of the four (NULL, never a made-up 0). */
        if (r->registers)
            KP_SET_((int64_t)r->registers);
        else
            KP_NULL_();
        KP_SET_((int64_t)r->static_smem);
        KP_SET_((int64_t)r->dynamic_smem);
        KP_SET_((int64_t)r->local_mem);
    } else {
        for (int k = 0; k < 4; k++)
            KP_NULL_();
    }
    if (r->kind == KP_REC_MEMCPY || r->kind == KP_REC_MEMSET) {
        KP_SET_((int64_t)r->bytes);
        KP_SET_(r->kind == KP_REC_MEMCPY ? (int64_t)r->aux : 0);
    } else {
        KP_NULL_();
        KP_NULL_();
    }
    if (r->kind == KP_REC_RANGE || r->kind == KP_REC_MARK)
        KP_SET_((int64_t)r->id);
    else
        KP_NULL_();
    if (r->kind == KP_REC_API)
        KP_SET_(r->status);
    else
        KP_NULL_();
#undef KP_SET_
#undef KP_NULL_
    if (!name && r->name) { /* not defined yet: named at the end, its row id known at the flush */
        if (p->nfixups == p->fixups_cap) {
            size_t cap = p->fixups_cap ? p->fixups_cap * 2 : 64;
            struct kp_ingest_fixup *f = realloc(p->fixups, cap * sizeof *f);
            if (!f) {
                kp_ingest_nomem(m, p->name);
                return;
            }
            p->fixups = f;
            p->fixups_cap = cap;
        }
        p->fixups[p->nfixups] = (struct kp_ingest_fixup){0, r->name, kernel};
        row->fixup = p;
        row->fixup_index = p->nfixups++;
    }
    p->last_kind = r->kind;
    p->last_pending = (long)m->nrows;
    p->last_row = 0;
    m->nrows++;
    p->events++;
    m->sum.events++;
    m->sum.device_events += device_op;
}

#define KP_INGEST_CHUNK (4u << 20) /* bytes read at a time */

/* Ingest a part's whole records from its offset up to limit (the file's size at the end, or
 * what its writer has marked whole while it runs). final: a record that is not whole or not a
 * record ends the part (a crash cut it; the rest is garbage). */
static void kp_part_read(kp_ingest *m, kp_ingest_part *p, uint64_t limit, int final)
{
    while (p->offset < limit && m->status == KPROF_OK) {
        if (kp_ingest_cancelled((void *)m->cancel)) return;
        size_t want =
            limit - p->offset > KP_INGEST_CHUNK ? KP_INGEST_CHUNK : (size_t)(limit - p->offset);
        if (want > m->buf_cap) {
            unsigned char *b = realloc(m->buf, want);
            if (!b) {
                kp_ingest_nomem(m, p->name);
                return;
            }
            m->buf = b;
            m->buf_cap = want;
        }
        ssize_t got = pread(p->fd, m->buf, want, (off_t)p->offset);
        if (got <= 0) { /* shorter than it was: nothing more to read */
            if (final) p->truncated = 1;
            return;
        }
        size_t n = (size_t)got, pos = 0;
        int bad = 0;
        while (pos + sizeof(kp_rec) <= n && m->status == KPROF_OK) {
            kp_rec r;
            memcpy(&r, m->buf + pos, sizeof r);
            if (r.magic != KP_REC_MAGIC || r.kind == 0 || r.kind >= KP_REC_KIND_COUNT) {
                bad = 1;
                break;
            }
            size_t step = sizeof r;
            if (r.kind == KP_REC_STRING) {
                if (r.bytes > limit) {
                    bad = 1;
                    break;
                }
                step += ((size_t)r.bytes + 7) & ~(size_t)7;
                if (pos + step > n) break; /* the rest of it comes with the next read */
                if (kp_part_define(m, p, r.name, (const char *)m->buf + pos + sizeof r,
                                   (size_t)r.bytes) != KPROF_OK)
                    return;
            } else {
                kp_part_record(m, p, &r);
            }
            pos += step;
        }
        if (pos == 0) {
            /* Not one whole record here: a string longer than the chunk (read it whole), or the
             * end of what is there. */
            kp_rec r;
            if (!bad && n >= sizeof r) {
                memcpy(&r, m->buf, sizeof r);
                size_t step = sizeof r + (((size_t)r.bytes + 7) & ~(size_t)7);
                if (r.kind == KP_REC_STRING && p->offset + step <= limit && step > want) {
                    unsigned char *b = realloc(m->buf, step);
                    if (!b) {
                        kp_ingest_nomem(m, p->name);
                        return;
                    }
                    m->buf = b;
                    m->buf_cap = step;
                    if (pread(p->fd, m->buf, step, (off_t)p->offset) == (ssize_t)step) {
                        if (kp_part_define(m, p, r.name, (const char *)m->buf + sizeof r,
                                           (size_t)r.bytes) != KPROF_OK)
                            return;
                        p->offset += step;
                        continue;
                    }
                }
            }
            if (final) p->truncated = 1;
            return;
        }
        p->offset += pos;
        if (bad || (n < want && pos < n)) {
            if (final) p->truncated = 1;
            if (bad) return;
        }
        if (n < want) return; /* the file ended before limit */
    }
}

/* Open a part's file (once): KPROF_OK, or IO naming it ("DIR/NAME: why"; a poll passes err NULL
 * and tries again later). */
static kprof_status kp_part_open(kp_ingest_part *p, const char *dir, kp_error *err)
{
    if (p->fd >= 0) return KPROF_OK;
    char full[PATH_MAX + 256];
    snprintf(full, sizeof full, "%s/%s", dir, p->name);
    p->fd = open(full, O_RDONLY | O_CLOEXEC);
    if (p->fd < 0) return kp_error_set(err, KPROF_IO, "%s/%s: %s", dir, p->name, strerror(errno));
    return KPROF_OK;
}

/* Whether the part's header can be read as its writer keeps it now (its counters change while it
 * runs): 1 with it in *h; 0 when it is not whole (yet), which is no failure. */
static int kp_part_header(const kp_ingest_part *p, kp_rec *h)
{
    return pread(p->fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && h->magic == KP_REC_MAGIC &&
           h->kind == KP_REC_HEADER;
}

static void kp_part_free(kp_ingest_part *p)
{
    if (p->fd >= 0) close(p->fd);
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->string_lens);
    free(p->map);
    free(p->kmap);
    free(p->fixups);
    free(p->metric_fixups);
    free(p->notes);
    free(p->name);
}

static int kp_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Find the folder's record files that are new since the last look: KPROF_OK; IO when the folder
 * cannot be read ("cannot read DIR: why" in err; nothing found); the ingest's NOMEM. */
static kprof_status kp_ingest_scan(kp_ingest *m, const char *dir, kp_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return kp_error_set(err, KPROF_IO, "cannot read %s: %s", dir, strerror(errno));
    char **found = NULL;
    size_t nfound = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".klog") != 0) continue;
        int known = 0;
        for (size_t i = 0; i < m->nparts && !known; i++)
            known = strcmp(m->parts[i].name, de->d_name) == 0;
        if (known) continue;
        if (nfound == cap) {
            cap = cap ? cap * 2 : 16;
            char **nf = realloc(found, cap * sizeof *nf);
            if (!nf) {
                kp_ingest_nomem(m, dir); /* the files found so far are still taken */
                break;
            }
            found = nf;
        }
        if ((found[nfound] = strdup(de->d_name)) != NULL)
            nfound++;
        else
            kp_ingest_nomem(m, dir);
    }
    closedir(d);
    /* New files in a stable order: the name starts with the pid. */
    if (nfound > 1) qsort(found, nfound, sizeof *found, kp_cmp_str);
    for (size_t i = 0; i < nfound; i++) {
        if (m->nparts == m->cap) {
            size_t ncap = m->cap ? m->cap * 2 : 16;
            kp_ingest_part *np = realloc(m->parts, ncap * sizeof *np);
            if (!np) {
                for (size_t j = i; j < nfound; j++)
                    free(found[j]);
                kp_ingest_nomem(m, dir);
                break;
            }
            m->parts = np;
            m->cap = ncap;
        }
        kp_ingest_part *p = &m->parts[m->nparts++];
        memset(p, 0, sizeof *p);
        p->fd = -1;
        p->last_pending = -1;
        p->name = found[i];
        const char *dash = strchr(p->name, '-');
        if (dash) sscanf(dash + 1, "%31[^-.]", p->collector);
    }
    free(found);
    return m->status;
}

kprof_status kp_trace_ingest_poll(kp_trace_ingest *m, const char *dir)
{
    if (m->status != KPROF_OK) return m->status;
    /* A folder or a part that cannot be read now is no failure yet: looked at again at the end. */
    if (kp_ingest_scan(m, dir, NULL) != KPROF_OK) return m->status;
    for (size_t i = 0; i < m->nparts && m->status == KPROF_OK; i++) {
        kp_ingest_part *p = &m->parts[i];
        kp_rec h;
        if (kp_part_open(p, dir, NULL) != KPROF_OK || !kp_part_header(p, &h)) continue;
        /* The writer's mark: whole batches only (0 where it keeps none: ingested at the end). */
        uint64_t whole = __atomic_load_n(&h.submitted, __ATOMIC_ACQUIRE);
        if (whole > p->offset) kp_part_read(m, p, whole, 0);
    }
    return kp_ingest_flush_rows(m);
}

kprof_status kp_trace_ingest_poll_fn(void *ingest, const char *dir)
{
    return kp_trace_ingest_poll(ingest, dir);
}

/* The rest of a part, and its process row's counters. */
static void kp_part_close(kp_ingest *m, kp_ingest_part *p, const char *dir)
{
    kp_trace_summary *sum = &m->sum;
    struct stat st;
    kprof_status opened = kp_part_open(p, dir, &m->error);
    if (opened == KPROF_OK && fstat(p->fd, &st) != 0)
        opened = kp_error_set(&m->error, KPROF_IO, "%s/%s: %s", dir, p->name, strerror(errno));
    if (opened != KPROF_OK) {
        m->status = opened;
        return;
    }
    if (st.st_size == 0) { /* the process could not even write its header (record.h) */
        sum->unrecorded++;
        p->empty = 1;
        return;
    }
    kp_part_read(m, p, (uint64_t)st.st_size, 1);
    if (m->status != KPROF_OK || kp_ingest_cancelled((void *)m->cancel)) return;
    if (p->offset != (uint64_t)st.st_size) p->truncated = 1;
    int64_t process = kp_part_process(m, p); /* in file order, whether or not it had events */
    (void)process;
}

/* Fill in a process row's counters: KPROF_OK, or the ingest's status (it failed). */
static kprof_status kp_ingest_update_process(kp_ingest *m, int64_t process, uint64_t clean_end,
                                             uint64_t events, uint64_t dropped, int truncated)
{
    sqlite3_stmt *q = m->upd_process;
    sqlite3_reset(q);
    if (clean_end)
        sqlite3_bind_int64(q, 1, (int64_t)clean_end);
    else
        sqlite3_bind_null(q, 1);
    sqlite3_bind_int(q, 2, clean_end != 0);
    sqlite3_bind_int64(q, 3, (int64_t)events);
    sqlite3_bind_int64(q, 4, (int64_t)dropped);
    sqlite3_bind_int(q, 5, truncated);
    sqlite3_bind_int64(q, 6, process);
    if (sqlite3_step(q) != SQLITE_DONE) return kp_db_fail(m, "processes");
    return KPROF_OK;
}

/* A clock pair (base/job.h) of a process row, or of the whole run (process 0: kprof's own). */
static void kp_ingest_clock(kp_ingest *m, int64_t process, int64_t mono, int64_t real,
                            int64_t uncertainty)
{
    sqlite3_stmt *q = m->ins_clock;
    sqlite3_reset(q);
    if (process)
        sqlite3_bind_int64(q, 1, process);
    else
        sqlite3_bind_null(q, 1);
    sqlite3_bind_int64(q, 2, mono);
    sqlite3_bind_int64(q, 3, real);
    sqlite3_bind_int64(q, 4, uncertainty);
    if (sqlite3_step(q) != SQLITE_DONE) kp_db_fail(m, "clocks");
}

static void kp_bind_known(sqlite3_stmt *q, int col, int32_t v)
{
    if (v >= 0)
        sqlite3_bind_int(q, col, v);
    else
        sqlite3_bind_null(q, col);
}

/* A part's place in a job (record.h: KP_REC_PROCESS) and its clock pairs, on its row. */
static void kp_part_job(kp_ingest *m, kp_ingest_part *p, int64_t process)
{
    const kp_rec *j = &p->job;
    if (j->magic && m->status == KPROF_OK) {
        sqlite3_stmt *q = m->upd_job;
        sqlite3_reset(q);
        sqlite3_clear_bindings(q);
        const char *launcher = kp_launcher_name((kp_launcher)j->domain);
        if (*launcher) sqlite3_bind_text(q, 1, launcher, -1, SQLITE_STATIC);
        kp_bind_known(q, 2, j->grid[0]);
        kp_bind_known(q, 3, j->grid[1]);
        kp_bind_known(q, 4, j->grid[2]);
        kp_bind_known(q, 5, j->block[0]);
        kp_bind_known(q, 6, j->block[1]);
        kp_bind_known(q, 7, j->block[2]);
        size_t len;
        const char *host = j->name ? kp_part_string(p, j->name, &len) : NULL;
        if (host && len) sqlite3_bind_text(q, 8, host, (int)len, SQLITE_TRANSIENT);
        const char *boot =
            j->id && j->id <= UINT32_MAX ? kp_part_string(p, (uint32_t)j->id, &len) : NULL;
        if (boot && len) sqlite3_bind_text(q, 9, boot, (int)len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 10, process);
        if (sqlite3_step(q) != SQLITE_DONE) kp_db_fail(m, "processes");
        if (j->start && j->end && m->status == KPROF_OK)
            kp_ingest_clock(m, process, (int64_t)j->start, (int64_t)j->end, (int64_t)j->bytes);
    }
    const kp_rec *e = &p->end_rec;
    if (e->magic && e->start && e->end && m->status == KPROF_OK)
        kp_ingest_clock(m, process, (int64_t)e->start, (int64_t)e->end, (int64_t)e->bytes);
}

/* A part read to its end (and every row in): its notes, the names defined late, its process
 * row's counters. */
static void kp_part_finish(kp_ingest *m, kp_ingest_part *p)
{
    if (p->empty) return;
    kp_trace_summary *sum = &m->sum;
    kp_rec h;
    int have_header = p->header.magic && kp_part_header(p, &h);
    uint64_t dropped = p->dropped, lost = 0, clean_end = p->end_ns;
    if (have_header) { /* the counters the writer kept in its header (record.h) */
        dropped += h.bytes;
        if (!clean_end) clean_end = h.end; /* its end record could not be written */
        lost = h.queued;
        if (lost && !sum->write_errno) sum->write_errno = h.status;
    }
    dropped += lost;
    int64_t process = kp_part_process(m, p);
    if (!process) return;
    kp_part_job(m, p, process);
    for (size_t i = 0; i < p->nnotes && m->status == KPROF_OK; i++) {
        size_t len;
        const char *text = kp_part_string(p, p->notes[i].name, &len);
        sqlite3_reset(m->ins_note);
        sqlite3_bind_int64(m->ins_note, 1, process);
        sqlite3_bind_int64(m->ins_note, 2, (int64_t)p->notes[i].start);
        sqlite3_bind_text(m->ins_note, 3, text, (int)len, SQLITE_TRANSIENT);
        if (sqlite3_step(m->ins_note) != SQLITE_DONE) kp_db_fail(m, "notes");
        kp_ingest_add_note(&m->sum, text, len);
    }
    for (size_t i = 0; i < p->nfixups && m->status == KPROF_OK; i++) {
        int64_t name = kp_ingest_name(m, p, p->fixups[i].local, p->fixups[i].kernel);
        if (!name) continue; /* never defined: the event stays nameless, as it was */
        sqlite3_reset(m->upd_name);
        sqlite3_bind_int64(m->upd_name, 1, name);
        sqlite3_bind_int64(m->upd_name, 2, p->fixups[i].row);
        if (sqlite3_step(m->upd_name) != SQLITE_DONE) kp_db_fail(m, "events");
    }
    for (size_t i = 0; i < p->nmetric_fixups && m->status == KPROF_OK; i++) {
        const struct kp_ingest_metric_fixup *f = &p->metric_fixups[i];
        kp_ingest_key key = kp_ingest_key_of(p, f->local);
        if (key == KP_INGEST_KEY_UNDEFINED ||
            ((key == KP_INGEST_KEY_FLOPS || key == KP_INGEST_KEY_BYTES) && f->value < 0))
            p->metrics_invalid++; /* never defined, or not a count after all */
        else
            kp_ingest_metric_of_row(m, p, f->row, f->local, f->value);
    }
    p->nmetric_fixups = 0;
    int shared = m->one_process && process == m->one.process;
    if (shared) { /* one row for the image's parts: their sums, once all are in */
        m->one.events += p->events;
        m->one.dropped += dropped;
        m->one.truncated |= p->truncated;
        m->one.unclean |= clean_end == 0;
        if (clean_end > m->one.end) m->one.end = clean_end;
        m->one.parts++;
    } else if (kp_ingest_update_process(m, process, clean_end, p->events, dropped, p->truncated) !=
               KPROF_OK) {
        return;
    }
    if (!shared) sum->processes++;
    sum->dropped += dropped;
    sum->lost_writes += lost;
    sum->truncated_parts += p->truncated;
    sum->metrics_orphaned += p->metrics_orphaned;
    sum->metrics_invalid += p->metrics_invalid;
    if (!shared) sum->unclean += clean_end == 0;
}

/* A note of the whole trace (no process): in the notes table and the summary's notes. */
static void kp_ingest_note(kp_ingest *m, const char *text)
{
    sqlite3_reset(m->ins_note);
    sqlite3_bind_null(m->ins_note, 1);
    sqlite3_bind_null(m->ins_note, 2);
    sqlite3_bind_text(m->ins_note, 3, text, -1, SQLITE_TRANSIENT);
    sqlite3_step(m->ins_note);
    kp_ingest_add_note(&m->sum, text, strlen(text));
}

/* What the collectors could not write to the folder of record files, said in the trace. */
static void kp_ingest_loss_notes(kp_ingest *m, const char *dir)
{
    const kp_trace_summary *sum = &m->sum;
    char text[1024];
    if (sum->lost_writes) {
        snprintf(text, sizeof text,
                 "%llu records could not be written to %s (%s) and are counted as dropped: the "
                 "trace is incomplete",
                 (unsigned long long)sum->lost_writes, dir,
                 sum->write_errno ? strerror(sum->write_errno) : "write failed");
        kp_ingest_note(m, text);
    }
    if (sum->metrics_orphaned || sum->metrics_invalid) {
        /* A writer's mistake, never the program's: say what was left out and why. */
        int used = snprintf(text, sizeof text, "metric records dropped:");
        if (sum->metrics_orphaned)
            used += snprintf(text + used, sizeof text - (size_t)used,
                             " %llu with no event of the kind they name right before them",
                             (unsigned long long)sum->metrics_orphaned);
        if (sum->metrics_invalid)
            snprintf(text + used, sizeof text - (size_t)used,
                     "%s %llu whose value is not finite (or is a negative count of flops or "
                     "bytes) or whose key was never defined",
                     sum->metrics_orphaned ? ";" : "", (unsigned long long)sum->metrics_invalid);
        kp_ingest_note(m, text);
    }
    if (sum->unrecorded) {
        snprintf(text, sizeof text,
                 "%d process%s could not write any record to %s (full or unwritable): what %s "
                 "did is missing from the trace",
                 sum->unrecorded, sum->unrecorded == 1 ? "" : "es", dir,
                 sum->unrecorded == 1 ? "it" : "they");
        kp_ingest_note(m, text);
    }
}

/* What `kprof trace --capture` captured (the collectors' captures.tsv, collect/capture.h): one
 * note of the trace per capture, which `kprof report` shows with the command that benchmarks it.
 * Not added to the summary's notes: the collector said it on stderr as it happened. */
static void kp_ingest_capture_notes(kp_ingest *m, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, KP_CAPTURE_LOG_FILE);
    char *text = NULL;
    size_t len = 0;
    kp_error scratch = {0};
    if (kp_file_read(path, &text, &len, &scratch) != KPROF_OK) {
        kp_error_clear(&scratch);
        return;
    }
    for (char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *f[6] = {0};
        int nf = 0;
        for (char *p = line; nf < 6; nf++) {
            f[nf] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                nf++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        if (nf < 6) {
            if (!nl) break;
            continue;
        }
        const char *folder = strrchr(f[0], '/') ? strrchr(f[0], '/') + 1 : f[0];
        kp_str note = {0};
        if (strcmp(f[4], "ok") == 0) {
            m->sum.captured++;
            kp_str_printf(&note,
                          "captured %s (launch %s of %s) into %s; the program was held %.1f ms "
                          "for it; benchmark it with `kprof bench %s`, replay it with `kprof run "
                          "%s`",
                          folder, f[2], f[1], f[0], strtod(f[3], NULL) / 1e6, folder, folder);
            if (strcmp(f[5], "0") != 0)
                kp_str_printf(&note, " (%s thing%s not captured: %s/not-captured.txt)", f[5],
                              strcmp(f[5], "1") == 0 ? "" : "s", f[0]);
        } else {
            m->sum.capture_failed++;
            kp_str_printf(&note, "capture of %s (launch %s of %s) %s", folder, f[2], f[1], f[4]);
        }
        if (note.data) {
            sqlite3_reset(m->ins_note);
            sqlite3_bind_null(m->ins_note, 1);
            sqlite3_bind_null(m->ins_note, 2);
            sqlite3_bind_text(m->ins_note, 3, note.data, -1, SQLITE_TRANSIENT);
            sqlite3_step(m->ins_note);
        }
        kp_str_free(&note);
        if (!nl) break;
    }
    free(text);
}

/* Hand the ingest's first failure to the caller's err (unless that holds one already). */
static kprof_status kp_ingest_take_error(kp_ingest *m, kp_error *err)
{
    if (err && err->status == KPROF_OK) {
        kp_error_clear(err);
        *err = m->error;
        m->error.log = NULL;
    }
    return m->status;
}

static void kp_ingest_free(kp_ingest *m)
{
    sqlite3_finalize(m->ins_event);
    sqlite3_finalize(m->ins_string);
    sqlite3_finalize(m->get_string);
    sqlite3_finalize(m->ins_process);
    sqlite3_finalize(m->upd_process);
    sqlite3_finalize(m->upd_job);
    sqlite3_finalize(m->ins_clock);
    sqlite3_finalize(m->ins_note);
    sqlite3_finalize(m->upd_name);
    sqlite3_finalize(m->ins_kernel_info);
    sqlite3_finalize(m->ins_events);
    sqlite3_finalize(m->ins_event_metrics);
    sqlite3_finalize(m->ins_events_metrics);
    sqlite3_finalize(m->ins_metric);
    sqlite3_finalize(m->upd_flops);
    sqlite3_finalize(m->upd_metric_bytes);
    sqlite3_close(m->db);
    free(m->rows);
    free(m->pending_metrics);
    free(m->ins_metric_sql[0]);
    free(m->ins_metric_sql[1]);
    kp_error_clear(&m->error);
    for (size_t i = 0; i < m->nparts; i++)
        kp_part_free(&m->parts[i]);
    free(m->parts);
    free(m->buf);
    free(m);
}

kprof_status kp_trace_ingest_open(const char *path, const volatile sig_atomic_t *cancel,
                                  kp_trace_ingest **out, kp_error *err)
{
    *out = NULL;
    kp_ingest *m = calloc(1, sizeof *m);
    if (!m) return kp_error_nomem(err);
    m->cancel = cancel;
    if (sqlite3_open_v2(path, &m->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        /* No handle at all: SQLite could not allocate one. */
        kprof_status st =
            m->db ? kp_error_set(err, KPROF_IO, "cannot create %s: %s", path, sqlite3_errmsg(m->db))
                  : kp_error_nomem(err);
        kp_ingest_free(m);
        return st;
    }
    sqlite3_progress_handler(m->db, 4096, kp_ingest_cancelled, (void *)cancel);
    /* The INSERTs of events: one row or KP_INGEST_ROWS, without or with the metric columns. */
    kp_str ins[2][2] = {{{0}}};
    for (int metrics = 0; metrics < 2; metrics++) {
        for (int rows = 0; rows < 2; rows++) {
            kp_str *q = &ins[metrics][rows];
            kp_str_append(q, "INSERT INTO events (kind, process, pid, tid, name, domain, start_ns, "
                             "end_ns, queued_ns, submitted_ns, correlation, device, stream, "
                             "grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, "
                             "static_smem, dynamic_smem, local_mem, bytes, copy_kind, range_id, "
                             "status");
            kp_str_append(q, metrics ? ", flops, metric_bytes) VALUES " : ") VALUES ");
            for (int r = 0; r < (rows ? KP_INGEST_ROWS : 1); r++) {
                kp_str_append(q, r ? ",(" : "(");
                for (int c = 0; c < KP_INGEST_COLUMNS + (metrics ? 2 : 0); c++)
                    kp_str_append(q, c ? ",?" : "?");
                kp_str_append(q, ")");
            }
        }
    }
    m->rows = calloc(KP_INGEST_ROWS, sizeof *m->rows);
    if (ins[0][0].failed || ins[0][1].failed || ins[1][0].failed || ins[1][1].failed || !m->rows) {
        for (int i = 0; i < 4; i++)
            kp_str_free(&ins[i / 2][i % 2]);
        kp_ingest_free(m);
        return kp_error_nomem(err);
    }
    int prepared = 0;
    if (sqlite3_exec(m->db,
                     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-131072;"
                     "PRAGMA temp_store=MEMORY;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(m->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        kp_trace_schema_create_tables(m->db, NULL, NULL) != KPROF_OK ||
        kp_trace_db_create_index(m->db, NULL, NULL) != KPROF_OK ||
        sqlite3_prepare_v2(m->db, ins[0][0].data, -1, &m->ins_event, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, ins[0][1].data, -1, &m->ins_events, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "INSERT INTO metrics (event, key, value) VALUES (?,?,?)", -1,
                           &m->ins_metric, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "INSERT OR IGNORE INTO strings (text) VALUES (?)", -1,
                           &m->ins_string, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "SELECT id FROM strings WHERE text = ?", -1, &m->get_string,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "INSERT INTO processes (pid, ppid, command, collector, start_ns) "
                           "VALUES (?,?,?,?,?)",
                           -1, &m->ins_process, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "UPDATE processes SET end_ns = ?, clean_exit = ?, events = ?, "
                           "dropped = ?, truncated = ? WHERE id = ?",
                           -1, &m->upd_process, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "UPDATE processes SET launcher = ?, rank = ?, local_rank = ?, "
                           "world_size = ?, local_world_size = ?, node = ?, restart = ?, "
                           "host = ?, boot_id = ? WHERE id = ?",
                           -1, &m->upd_job, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "INSERT INTO clocks (process, mono_ns, real_ns, uncertainty_ns) "
                           "VALUES (?,?,?,?)",
                           -1, &m->ins_clock, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "INSERT INTO notes (process, time_ns, text) VALUES (?,?,?)", -1,
                           &m->ins_note, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "UPDATE events SET name = ? WHERE id = ?", -1, &m->upd_name,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "INSERT OR REPLACE INTO kernel_info (process, device, name, local_mem, "
                           "private_mem, max_group_size, group_multiple) VALUES (?,?,?,?,?,?,?)",
                           -1, &m->ins_kernel_info, NULL) != SQLITE_OK ||
        !(prepared = 1)) {
        for (int i = 0; i < 4; i++)
            kp_str_free(&ins[i / 2][i % 2]);
        kp_db_fail(m, "schema");
        kprof_status st = kp_ingest_take_error(m, err);
        kp_ingest_free(m);
        return st;
    }
    (void)prepared;
    /* The INSERTs with the metric columns are prepared once the columns exist. */
    m->ins_metric_sql[0] = kp_str_take(&ins[1][0]);
    m->ins_metric_sql[1] = kp_str_take(&ins[1][1]);
    for (int i = 0; i < 4; i++)
        kp_str_free(&ins[i / 2][i % 2]);
    *out = m;
    return KPROF_OK;
}

kprof_status kp_trace_ingest_finish(kp_trace_ingest *m, const char *dir, const kp_trace_run *run,
                                    kp_trace_summary *sum, kp_error *err)
{
    m->one_process = run->one_process;
    if (m->status == KPROF_OK) m->status = kp_ingest_scan(m, dir, &m->error);
    for (size_t i = 0; i < m->nparts && m->status == KPROF_OK; i++) {
        if (kp_ingest_cancelled((void *)m->cancel)) break;
        kp_part_close(m, &m->parts[i], dir);
    }
    kp_ingest_flush_rows(m);
    for (size_t i = 0; i < m->nparts && m->status == KPROF_OK; i++) {
        if (kp_ingest_cancelled((void *)m->cancel)) break;
        kp_part_finish(m, &m->parts[i]);
    }
    if (m->status == KPROF_OK && m->one_process && m->one.process &&
        kp_ingest_update_process(m, m->one.process, m->one.unclean ? 0 : m->one.end, m->one.events,
                                 m->one.dropped, m->one.truncated) == KPROF_OK) {
        m->sum.processes++;
        m->sum.unclean += m->one.unclean;
    }
    if (m->status == KPROF_OK && !kp_ingest_cancelled((void *)m->cancel)) {
        kp_ingest_loss_notes(m, dir);
        kp_ingest_capture_notes(m, dir);
        /* A run whose end kprof never saw (it was killed; `kprof trace --merge` finishes it)
         * ends with its last record, and its exit status is unknown (-1). */
        uint64_t end_ns = run->end_ns;
        if (!end_ns)
            end_ns = (uint64_t)kp_trace_db_scalar(m->db, "SELECT MAX(end_ns) FROM events", 0);
        if (end_ns < run->start_ns) end_ns = run->start_ns;
        kp_trace_meta_keys meta = {
            .command = run->command,
            .collectors = run->collectors,
            .start_ns = (int64_t)run->start_ns,
            .end_ns = (int64_t)end_ns,
            .exit_status = run->exit_status,
            .dropped = (int64_t)m->sum.dropped,
            .metrics = (int64_t)m->sum.metrics,
            .host = run->host,
            .boot_id = run->boot_id,
            .device = run->device,
        };
        if (kp_trace_db_write_meta(m->db, &meta, NULL, NULL) != KPROF_OK) kp_db_fail(m, "meta");
        if (run->start_clock.real_ns)
            kp_ingest_clock(m, 0, run->start_clock.mono_ns, run->start_clock.real_ns,
                            run->start_clock.uncertainty_ns);
        if (run->end_clock.real_ns)
            kp_ingest_clock(m, 0, run->end_clock.mono_ns, run->end_clock.real_ns,
                            run->end_clock.uncertainty_ns);
        /* Every trace has the metric columns, added now if no metric came. */
        if (kp_ingest_metric_columns(m) == KPROF_OK &&
            kp_trace_schema_create_views(m->db, NULL, NULL) != KPROF_OK)
            kp_db_fail(m, "views");
        if (sqlite3_exec(m->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) kp_db_fail(m, "commit");
    }
    kprof_status st = m->status;
    if (st != KPROF_OK) kp_ingest_take_error(m, err);
    *sum = m->sum;
    sqlite3 *db = m->db;
    m->db = NULL;
    int cancelled = kp_ingest_cancelled((void *)m->cancel);
    kp_ingest_free(m); /* finalizes the statements: the connection can close */
    if (sqlite3_close(db) != SQLITE_OK && st == KPROF_OK)
        st = kp_error_set(err, KPROF_IO, "cannot close the trace");
    if (cancelled) { /* whatever SQLite said of it, this is what happened */
        kp_error_clear(err);
        st = kp_error_set(err, KPROF_IO, "the merge was interrupted");
    }
    return st;
}

uint64_t kp_trace_ingest_events(const kp_trace_ingest *m)
{
    return m ? m->sum.events : 0;
}

void kp_trace_ingest_abort(kp_trace_ingest *m)
{
    if (m) kp_ingest_free(m);
}

kprof_status kp_trace_ingest_dir(const char *path, const char *dir, const kp_trace_run *run,
                                 const volatile sig_atomic_t *cancel, kp_trace_summary *sum,
                                 kp_error *err)
{
    memset(sum, 0, sizeof *sum);
    kp_trace_ingest *m = NULL;
    kprof_status st = kp_trace_ingest_open(path, cancel, &m, err);
    if (st != KPROF_OK) return st;
    return kp_trace_ingest_finish(m, dir, run, sum, err);
}
