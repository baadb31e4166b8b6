/*
 * trace_db.c — writing a trace file from collectors' record files, and opening one to read
 * (see trace_db.h and docs/trace-format.md for the schema).
 */
#define _GNU_SOURCE
#include "store/trace_db.h"
#include "collect/reader.h"
#include "core/demangle.h"
#include "core/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kp_trace_schema[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE kinds (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE domains (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE strings (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
    "CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, command TEXT,"
    " collector TEXT, start_ns INTEGER, end_ns INTEGER, clean_exit INTEGER, events INTEGER,"
    " dropped INTEGER, truncated INTEGER);"
    "CREATE TABLE notes (process INTEGER REFERENCES processes(id), time_ns INTEGER, text TEXT);"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
    " process INTEGER REFERENCES processes(id), pid INTEGER, tid INTEGER,"
    " name INTEGER REFERENCES strings(id), domain INTEGER, start_ns INTEGER, end_ns INTEGER,"
    " queued_ns INTEGER, submitted_ns INTEGER, correlation INTEGER, device INTEGER,"
    " stream INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER,"
    " block_y INTEGER, block_z INTEGER, registers INTEGER, static_smem INTEGER,"
    " dynamic_smem INTEGER, local_mem INTEGER, bytes INTEGER, copy_kind INTEGER,"
    " range_id INTEGER, status INTEGER, launched INTEGER);"
    "CREATE VIEW event_view AS SELECT e.id, k.name AS kind, e.process, e.pid, e.tid,"
    " s.text AS name,"
    " e.start_ns, e.end_ns, e.end_ns - e.start_ns AS duration_ns, e.correlation, e.device,"
    " e.stream, e.bytes FROM events e JOIN kinds k ON k.id = e.kind"
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

static const char kp_trace_indexes[] = "CREATE INDEX events_start ON events(start_ns);"
                                       "CREATE INDEX events_kind_name ON events(kind, name);"
                                       "CREATE INDEX events_correlation ON events(process, correlation);";

typedef struct kp_merge {
    sqlite3 *db;
    sqlite3_stmt *ins_event, *ins_string, *get_string, *ins_process, *ins_note, *set_meta;
    kp_error *err;
} kp_merge;

static kprof_status kp_db_fail(kp_merge *m, const char *what)
{
    int sys = sqlite3_system_errno(m->db); /* the system's reason, where there is one */
    return kp_error_set(m->err, KPROF_IO, "writing the trace: %s: %s%s%s%s", what,
                        sqlite3_errmsg(m->db), sys ? " (" : "", sys ? strerror(sys) : "",
                        sys ? ")" : "");
}

/* The global id of a string (inserted when new). 0 on failure. */
static int64_t kp_merge_string(kp_merge *m, const char *text, size_t len)
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

/* A record's name as a global string id; kernels are demangled once per local id. */
static int64_t kp_merge_name(kp_merge *m, const kp_klog *log, int64_t *map, uint32_t local,
                             int demangle)
{
    if (local == 0 || local >= log->nstrings) return 0;
    if (map[local]) return map[local];
    size_t len;
    const char *text = kp_klog_string(log, local, &len);
    if (demangle && len > 2 && text[0] == '_' && text[1] == 'Z' && len < 4096) {
        char raw[4096], out[8192];
        memcpy(raw, text, len);
        raw[len] = '\0';
        kp_demangle(raw, out, sizeof out);
        map[local] = kp_merge_string(m, out, strlen(out));
    } else {
        map[local] = kp_merge_string(m, text, len);
    }
    return map[local];
}

/* An open-addressing set of correlation ids (0 is never stored). */
typedef struct kp_corrset {
    uint64_t *slots;
    size_t cap, n;
} kp_corrset;

static int kp_corrset_add(kp_corrset *s, uint64_t id)
{
    if (!id) return 0;
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t j = (size_t)(s->slots[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
    while (s->slots[i] && s->slots[i] != id) i = (i + 1) & (s->cap - 1);
    if (!s->slots[i]) {
        s->slots[i] = id;
        s->n++;
    }
    return 0;
}

static int kp_corrset_has(const kp_corrset *s, uint64_t id)
{
    if (!s->cap) return 0;
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
    while (s->slots[i]) {
        if (s->slots[i] == id) return 1;
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

static kprof_status kp_merge_file(kp_merge *m, const char *path, const char *collector,
                                  kp_trace_summary *sum)
{
    kp_klog log;
    kprof_status st = kp_klog_open(path, &log, m->err);
    if (st != KPROF_OK) return st;
    if (log.size == 0) { /* the process could not even write its header (record.h) */
        sum->unrecorded++;
        kp_klog_close(&log);
        return KPROF_OK;
    }
    kp_corrset launched = {0};
    int64_t *map = calloc(log.nstrings ? log.nstrings : 1, sizeof *map);
    int64_t *kmap = calloc(log.nstrings ? log.nstrings : 1, sizeof *kmap);
    if (!map || !kmap) {
        free(map);
        free(kmap);
        kp_klog_close(&log);
        return kp_error_set(m->err, KPROF_NOMEM, "out of memory merging %s", path);
    }
    /* The process row first: header, end, drops. */
    const kp_rec *header = NULL, *end = NULL;
    uint64_t dropped = 0, events = 0, lost = 0;
    for (size_t i = 0; i < log.nrecords; i++) {
        const kp_rec *r = log.records[i];
        if (r->kind == KP_REC_HEADER && !header) header = r;
        else if (r->kind == KP_REC_END) end = r;
        else if (r->kind == KP_REC_DROPPED) dropped += r->bytes;
        else if (kp_event_kind_valid(r->kind))
            events++;
    }
    uint64_t clean_end = end ? end->start : 0;
    if (header) { /* the counters the writer kept in its header (record.h) */
        dropped += header->bytes;
        if (!clean_end) clean_end = header->end; /* its end record could not be written */
        lost = header->queued;
        if (lost && !sum->write_errno) sum->write_errno = header->status;
    }
    dropped += lost;
    sqlite3_stmt *q = m->ins_process;
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, header ? (int64_t)header->id : 0);
    sqlite3_bind_int64(q, 2, header ? (int64_t)header->aux : 0);
    size_t clen = 0;
    const char *cmd = header ? kp_klog_string(&log, header->name, &clen) : "";
    sqlite3_bind_text(q, 3, cmd, (int)clen, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, collector, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, header ? (int64_t)header->start : 0);
    if (clean_end) sqlite3_bind_int64(q, 6, (int64_t)clean_end);
    else sqlite3_bind_null(q, 6);
    sqlite3_bind_int(q, 7, clean_end != 0);
    sqlite3_bind_int64(q, 8, (int64_t)events);
    sqlite3_bind_int64(q, 9, (int64_t)dropped);
    sqlite3_bind_int(q, 10, log.truncated);
    if (sqlite3_step(q) != SQLITE_DONE) {
        st = kp_db_fail(m, "processes");
        goto done;
    }
    int64_t process = sqlite3_last_insert_rowid(m->db);
    /* The correlations of this process's device work: the calls that launched it. */
    for (size_t i = 0; i < log.nrecords; i++) {
        const kp_rec *r = log.records[i];
        if (kp_event_kind_on_device(r->kind) && r->correlation &&
            kp_corrset_add(&launched, r->correlation) != 0) {
            st = kp_error_set(m->err, KPROF_NOMEM, "out of memory merging %s", path);
            goto done;
        }
    }
    int64_t pid = header ? (int64_t)header->id : 0;
    sum->processes++;
    sum->dropped += dropped;
    sum->lost_writes += lost;
    sum->truncated_parts += log.truncated;
    sum->unclean += clean_end == 0;

    for (size_t i = 0; i < log.nrecords; i++) {
        const kp_rec *r = log.records[i];
        if (r->kind == KP_REC_NOTE) {
            size_t len;
            const char *text = kp_klog_string(&log, r->name, &len);
            sqlite3_reset(m->ins_note);
            sqlite3_bind_int64(m->ins_note, 1, process);
            sqlite3_bind_int64(m->ins_note, 2, (int64_t)r->start);
            sqlite3_bind_text(m->ins_note, 3, text, (int)len, SQLITE_TRANSIENT);
            sqlite3_step(m->ins_note);
            size_t used = strlen(sum->notes);
            if (used + len + 2 < sizeof sum->notes)
                snprintf(sum->notes + used, sizeof sum->notes - used, "%.*s\n", (int)len, text);
            continue;
        }
        if (!kp_event_kind_valid(r->kind)) continue;
        int kernel = r->kind == KP_REC_KERNEL;
        sqlite3_stmt *e = m->ins_event;
        sqlite3_reset(e);
        int c = 1;
        sqlite3_bind_int(e, c++, r->kind);
        sqlite3_bind_int64(e, c++, process);
        sqlite3_bind_int64(e, c++, pid);
        sqlite3_bind_int64(e, c++, r->tid);
        int64_t name = kp_merge_name(m, &log, kernel ? kmap : map, r->name, kernel);
        if (name) sqlite3_bind_int64(e, c++, name);
        else sqlite3_bind_null(e, c++);
        sqlite3_bind_int(e, c++, r->domain);
        sqlite3_bind_int64(e, c++, (int64_t)r->start);
        sqlite3_bind_int64(e, c++, (int64_t)(r->end ? r->end : r->start));
        int device_op = kp_event_kind_on_device(r->kind);
        if (r->queued) sqlite3_bind_int64(e, c++, (int64_t)r->queued);
        else sqlite3_bind_null(e, c++);
        if (r->submitted) sqlite3_bind_int64(e, c++, (int64_t)r->submitted);
        else sqlite3_bind_null(e, c++);
        if (r->correlation) sqlite3_bind_int64(e, c++, (int64_t)r->correlation);
        else sqlite3_bind_null(e, c++);
        if (device_op) {
            sqlite3_bind_int(e, c++, (int)r->device);
            sqlite3_bind_int(e, c++, (int)r->stream);
        } else {
            sqlite3_bind_null(e, c++);
            sqlite3_bind_null(e, c++);
        }
        for (int d = 0; d < 3; d++) {
            if (kernel) sqlite3_bind_int(e, c++, r->grid[d]);
            else sqlite3_bind_null(e, c++);
        }
        for (int d = 0; d < 3; d++) {
            if (kernel) sqlite3_bind_int(e, c++, r->block[d]);
            else sqlite3_bind_null(e, c++);
        }
        if (kernel && r->domain != KP_DOMAIN_OPENCL) {
            /* CUDA: registers 0 means CUPTI did not say; memory sizes of 0 are real. OpenCL
             * knows none of the four (NULL, never a made-up 0). */
            if (r->registers)
                sqlite3_bind_int64(e, c++, (int64_t)r->registers);
            else
                sqlite3_bind_null(e, c++);
            sqlite3_bind_int64(e, c++, (int64_t)r->static_smem);
            sqlite3_bind_int64(e, c++, (int64_t)r->dynamic_smem);
            sqlite3_bind_int64(e, c++, (int64_t)r->local_mem);
        } else {
            for (int k = 0; k < 4; k++) sqlite3_bind_null(e, c++);
        }
        if (r->kind == KP_REC_MEMCPY || r->kind == KP_REC_MEMSET) {
            sqlite3_bind_int64(e, c++, (int64_t)r->bytes);
            sqlite3_bind_int(e, c++, r->kind == KP_REC_MEMCPY ? (int)r->aux : 0);
        } else {
            sqlite3_bind_null(e, c++);
            sqlite3_bind_null(e, c++);
        }
        if (r->kind == KP_REC_RANGE || r->kind == KP_REC_MARK) sqlite3_bind_int64(e, c++, (int64_t)r->id);
        else sqlite3_bind_null(e, c++);
        if (r->kind == KP_REC_API) {
            sqlite3_bind_int(e, c++, r->status);
            sqlite3_bind_int(e, c++, r->correlation && kp_corrset_has(&launched, r->correlation));
        } else {
            sqlite3_bind_null(e, c++);
            sqlite3_bind_null(e, c++);
        }
        if (sqlite3_step(e) != SQLITE_DONE) {
            st = kp_db_fail(m, "events");
            goto done;
        }
        sum->events++;
        sum->device_events += device_op;
    }
done:
    free(map);
    free(kmap);
    free(launched.slots);
    kp_klog_close(&log);
    return st;
}

/* A note of the whole trace (no process): in the notes table and the summary's notes. */
static void kp_merge_note(kp_merge *m, kp_trace_summary *sum, const char *text)
{
    sqlite3_reset(m->ins_note);
    sqlite3_bind_null(m->ins_note, 1);
    sqlite3_bind_null(m->ins_note, 2);
    sqlite3_bind_text(m->ins_note, 3, text, -1, SQLITE_TRANSIENT);
    sqlite3_step(m->ins_note);
    size_t used = strlen(sum->notes), len = strlen(text);
    if (used + len + 2 < sizeof sum->notes)
        snprintf(sum->notes + used, sizeof sum->notes - used, "%s\n", text);
}

/* What the collectors could not write to the folder of record files, said in the trace. */
static void kp_merge_loss_notes(kp_merge *m, const char *dir, kp_trace_summary *sum)
{
    char text[1024];
    if (sum->lost_writes) {
        snprintf(text, sizeof text,
                 "%llu records could not be written to %s (%s) and are counted as dropped: the "
                 "trace is incomplete",
                 (unsigned long long)sum->lost_writes, dir,
                 sum->write_errno ? strerror(sum->write_errno) : "write failed");
        kp_merge_note(m, sum, text);
    }
    if (sum->unrecorded) {
        snprintf(text, sizeof text,
                 "%d process%s could not write any record to %s (full or unwritable): what %s "
                 "did is missing from the trace",
                 sum->unrecorded, sum->unrecorded == 1 ? "" : "es", dir,
                 sum->unrecorded == 1 ? "it" : "they");
        kp_merge_note(m, sum, text);
    }
}

static int kp_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void kp_merge_meta(kp_merge *m, const char *key, const char *value)
{
    sqlite3_reset(m->set_meta);
    sqlite3_bind_text(m->set_meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(m->set_meta, 2, value, -1, SQLITE_TRANSIENT);
    sqlite3_step(m->set_meta);
}

static void kp_merge_meta_int(kp_merge *m, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    kp_merge_meta(m, key, buf);
}

/* SQLite's progress callback: non-zero stops the statement (SQLITE_INTERRUPT). */
static int kp_merge_cancelled(void *flag)
{
    return flag && *(const volatile sig_atomic_t *)flag;
}

kprof_status kp_trace_db_write(const char *path, const char *dir, const kp_trace_run *run,
                               const volatile sig_atomic_t *cancel, kp_trace_summary *sum,
                               kp_error *err)
{
    memset(sum, 0, sizeof *sum);
    kp_merge m = {.err = err};
    kprof_status st = KPROF_OK;
    char **files = NULL;
    size_t nfiles = 0, cap = 0;
    if (sqlite3_open_v2(path, &m.db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        st = kp_error_set(err, KPROF_IO, "cannot create %s: %s", path,
                          m.db ? sqlite3_errmsg(m.db) : "out of memory");
        goto fail;
    }
    sqlite3_progress_handler(m.db, 4096, kp_merge_cancelled, (void *)cancel);
    char pragmas[384];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-131072;"
             "PRAGMA temp_store=MEMORY; PRAGMA application_id=%d;"
             "PRAGMA user_version=%d;",
             KP_TRACE_APPLICATION_ID, KP_TRACE_FORMAT_VERSION);
    if (sqlite3_exec(m.db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(m.db, kp_trace_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(m.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        kp_trace_named_rows(m.db, "kinds", kp_trace_kinds,
                            sizeof kp_trace_kinds / sizeof *kp_trace_kinds) != SQLITE_OK ||
        kp_trace_named_rows(m.db, "domains", kp_trace_domains,
                            sizeof kp_trace_domains / sizeof *kp_trace_domains) != SQLITE_OK) {
        st = kp_db_fail(&m, "schema");
        goto fail;
    }
    const char *ins_event = "INSERT INTO events (kind, process, pid, tid, name, domain, start_ns, "
                            "end_ns, queued_ns, submitted_ns, correlation, device, stream, grid_x, "
                            "grid_y, grid_z, block_x, block_y, block_z, registers, static_smem, "
                            "dynamic_smem, local_mem, bytes, copy_kind, range_id, status, launched) VALUES "
                            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(m.db, ins_event, -1, &m.ins_event, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m.db, "INSERT OR IGNORE INTO strings (text) VALUES (?)", -1,
                           &m.ins_string, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m.db, "SELECT id FROM strings WHERE text = ?", -1, &m.get_string,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m.db,
                           "INSERT INTO processes (pid, ppid, command, collector, start_ns, "
                           "end_ns, clean_exit, events, dropped, truncated) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?)",
                           -1, &m.ins_process, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m.db, "INSERT INTO notes (process, time_ns, text) VALUES (?,?,?)", -1,
                           &m.ins_note, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m.db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)", -1,
                           &m.set_meta, NULL) != SQLITE_OK) {
        st = kp_db_fail(&m, "statements");
        goto fail;
    }
    /* The record files, in a stable order. */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            size_t len = strlen(de->d_name);
            if (len < 6 || strcmp(de->d_name + len - 5, ".klog") != 0) continue;
            if (nfiles == cap) {
                cap = cap ? cap * 2 : 16;
                char **nf = realloc(files, cap * sizeof *nf);
                if (!nf) break;
                files = nf;
            }
            files[nfiles++] = strdup(de->d_name);
        }
        closedir(d);
    }
    if (nfiles > 1) qsort(files, nfiles, sizeof *files, kp_cmp_str);
    for (size_t i = 0; i < nfiles && st == KPROF_OK; i++) {
        if (kp_merge_cancelled((void *)cancel)) break;
        char full[4400], collector[32] = "";
        snprintf(full, sizeof full, "%s/%s", dir, files[i]);
        const char *dash = strchr(files[i], '-');
        if (dash) sscanf(dash + 1, "%31[^-.]", collector);
        st = kp_merge_file(&m, full, collector, sum);
    }
    if (st != KPROF_OK) goto fail;
    kp_merge_loss_notes(&m, dir, sum);
    kp_merge_meta(&m, "format", "kprof-trace");
    kp_merge_meta_int(&m, "format_version", KP_TRACE_FORMAT_VERSION);
    kp_merge_meta(&m, "kprof_version", KPROF_VERSION_STRING);
    kp_merge_meta(&m, "command", run->command ? run->command : "");
    /* A run whose end kprof never saw (it was killed; `kprof trace --merge` finishes it) ends
     * with its last record, and its exit status is unknown (-1). */
    uint64_t end_ns = run->end_ns;
    if (!end_ns) end_ns = (uint64_t)kp_trace_db_scalar(m.db, "SELECT MAX(end_ns) FROM events", 0);
    if (end_ns < run->start_ns) end_ns = run->start_ns;
    kp_merge_meta_int(&m, "start_ns", (int64_t)run->start_ns);
    kp_merge_meta_int(&m, "end_ns", (int64_t)end_ns);
    kp_merge_meta_int(&m, "exit_status", run->exit_status);
    kp_merge_meta(&m, "collectors", run->collectors ? run->collectors : "");
    kp_merge_meta_int(&m, "dropped", (int64_t)sum->dropped);
    kp_merge_meta_int(&m, "clock", 1); /* CLOCK_MONOTONIC */
    if (sqlite3_exec(m.db, kp_trace_indexes, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(m.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = kp_db_fail(&m, "commit");
        goto fail;
    }
fail:
    sqlite3_finalize(m.ins_event);
    sqlite3_finalize(m.ins_string);
    sqlite3_finalize(m.get_string);
    sqlite3_finalize(m.ins_process);
    sqlite3_finalize(m.ins_note);
    sqlite3_finalize(m.set_meta);
    if (m.db && sqlite3_close(m.db) != SQLITE_OK && st == KPROF_OK)
        st = kp_error_set(err, KPROF_IO, "cannot close %s", path);
    for (size_t i = 0; i < nfiles; i++) free(files[i]);
    free(files);
    if (kp_merge_cancelled((void *)cancel)) { /* whatever SQLite said of it, this is what happened */
        kp_error_clear(err);
        st = kp_error_set(err, KPROF_IO, "the merge was interrupted");
    }
    return st;
}

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
        kp_error_set(err, KPROF_CORRUPT, "%s: cannot open: %s", path,
                     db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return KPROF_CORRUPT;
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
    if (version != KP_TRACE_FORMAT_VERSION) {
        kp_error_set(err, KPROF_CORRUPT, "%s is a kprof trace of format %lld; this kprof reads %d",
                     path, (long long)version, KP_TRACE_FORMAT_VERSION);
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
