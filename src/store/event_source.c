/*
 * event_source.c — reading a trace file (see event_source.h): the meta, processes, notes and
 * strings are read once when it opens; the events through prepared statements whose columns are
 * the groups a reader asks for; the tracks and the launching calls in one pass, made the first
 * time a reader needs them. Every query on a trace is here (the ingest that writes one is in
 * trace_ingest.c, kprof merge in trace_merge.c).
 */
#include "store/event_source.h"
#include "base/util.h"
#include "store/trace_db.h"

#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open-addressing set of keys of three int64 (the threads and the queues, found in a pass
 * over every event). Linear probing; cap a power of two, at most half full. */
typedef struct kp_src_set {
    int64_t (*keys)[3];
    unsigned char *used;
    size_t cap, n;
} kp_src_set;

static size_t kp_src_set_find(const kp_src_set *m, const int64_t key[3])
{
    uint64_t h = (uint64_t)key[0] * 0x9E3779B97F4A7C15ull ^
                 (uint64_t)key[1] * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)key[2] * 0x165667B19E3779F9ull;
    size_t i = (size_t)(h ^ h >> 29) & (m->cap - 1);
    while (m->used[i] && memcmp(m->keys[i], key, sizeof m->keys[i]) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* Add key (once): KPROF_OK, or NOMEM (the set as it was). */
static kprof_status kp_src_set_add(kp_src_set *m, const int64_t key[3], kp_error *err)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        kp_src_set bigger = {calloc(cap, sizeof *bigger.keys), calloc(cap, 1), cap, 0};
        if (!bigger.keys || !bigger.used) {
            free(bigger.keys);
            free(bigger.used);
            return kp_error_nomem(err);
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->used[i]) continue;
            size_t j = kp_src_set_find(&bigger, m->keys[i]);
            memcpy(bigger.keys[j], m->keys[i], sizeof bigger.keys[j]);
            bigger.used[j] = 1;
            bigger.n++;
        }
        free(m->keys);
        free(m->used);
        *m = bigger;
    }
    size_t i = kp_src_set_find(m, key);
    if (!m->used[i]) {
        m->used[i] = 1;
        memcpy(m->keys[i], key, sizeof m->keys[i]);
        m->n++;
    }
    return KPROF_OK;
}

static void kp_src_set_free(kp_src_set *m)
{
    free(m->keys);
    free(m->used);
    memset(m, 0, sizeof *m);
}

/* A launching call: the API calls by (process row, correlation), sorted, each key once with its
 * earliest start. Readers go through events in storage or time order, in which correlations
 * mostly rise: each iterator keeps its place in the array and gallops from there, so a lookup
 * is a step or two on memory just read (a hash table cost a cache miss per operation and twice
 * the memory). */
typedef struct kp_src_launch {
    int64_t process, correlation, start;
    int launched; /* device work of this key is in the trace */
} kp_src_launch;

static int kp_src_cmp_launch(const void *x, const void *y)
{
    const kp_src_launch *a = x, *b = y;
    if (a->process != b->process) return a->process < b->process ? -1 : 1;
    if (a->correlation != b->correlation) return a->correlation < b->correlation ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* Whether a's key is below (process, correlation). */
static int kp_src_launch_below(const kp_src_launch *a, int64_t process, int64_t correlation)
{
    return a->process < process || (a->process == process && a->correlation < correlation);
}

/* The start of the call of (process, correlation) in v[0..n), from *place (updated): 1, or 0
 * when there is none. */
static int kp_src_launch_find(const kp_src_launch *v, size_t n, size_t *place, int64_t process,
                              int64_t correlation, int64_t *start)
{
    if (!n) return 0;
    /* The first entry not below the key lies in [lo, hi]: gallop from the place to bound it. */
    size_t at = *place < n ? *place : n - 1, lo, hi, step = 1;
    if (kp_src_launch_below(&v[at], process, correlation)) {
        lo = at + 1;
        hi = at + 1;
        while (hi < n && kp_src_launch_below(&v[hi], process, correlation)) {
            lo = hi + 1;
            hi = step < n - hi ? hi + step : n;
            step *= 2;
        }
    } else {
        hi = at;
        lo = at;
        while (lo > 0 && !kp_src_launch_below(&v[lo - 1], process, correlation)) {
            hi = lo - 1;
            lo = step < lo ? lo - step : 0;
            step *= 2;
        }
    }
    while (lo < hi) { /* binary search in [lo, hi] */
        size_t mid = lo + (hi - lo) / 2;
        if (kp_src_launch_below(&v[mid], process, correlation))
            lo = mid + 1;
        else
            hi = mid;
    }
    *place = lo;
    if (lo == n || v[lo].process != process || v[lo].correlation != correlation) return 0;
    *start = v[lo].start;
    return 1;
}

/* A pid and the index (in processes) of the row that stands for it
 * (kp_event_source_process_of_pid). */
typedef struct kp_src_pid {
    int64_t pid;
    size_t index;
} kp_src_pid;

/* A row of kernel_info: an OpenCL kernel's reflection on a device, in a process. */
typedef struct kp_src_kernel_info {
    int64_t process, device, name;
    uint64_t local_mem, private_mem;
    uint32_t max_group, multiple;
} kp_src_kernel_info;

static int kp_src_cmp_kinfo(const void *x, const void *y)
{
    const kp_src_kernel_info *a = x, *b = y;
    if (a->process != b->process) return a->process < b->process ? -1 : 1;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

struct kp_event_source {
    sqlite3 *db;
    char *path;
    kp_trace_meta meta;
    char *meta_text[5]; /* command, collectors, kprof_version, host, boot_id (heap) */
    kp_trace_clock *clocks;
    size_t nclocks;
    char **notes;
    kp_trace_process *processes;
    size_t nprocesses;
    kp_src_pid *by_pid; /* each pid once, ascending, with the row that stands for it */
    size_t nby_pid;
    char *strings;           /* every text, NUL-terminated, one after the other */
    const char **names;      /* by id, into strings */
    uint32_t *name_len;      /* by id */
    size_t nnames;           /* slots */
    int indexed;             /* the pass below was made */
    kp_src_launch *launches; /* sorted, each key once */
    size_t nlaunches;
    kp_trace_thread *threads;
    size_t nthreads;
    kp_trace_queue *queues;
    size_t nqueues;
    uint64_t opencl_ops, other_ops; /* device operations of OpenCL, of any other domain */
    kp_src_kernel_info *kinfo;      /* the kernel_info table (OpenCL reflection), sorted */
    size_t nkinfo;
    /* Metrics: what the trace may hold (events' flops and metric_bytes columns, the metrics
     * table: both absent from version 1, both skipped when the meta says it has no metric), and
     * the user metrics, read the first time a reader asks, sorted by event. */
    int metric_columns, metric_table;
    int64_t meta_metrics; /* the meta's count of metric values; -1 when it does not say */
    int metrics_loaded;
    kp_trace_metric *metrics;
    size_t nmetrics;
};

static kprof_status kp_src_fail(const kp_event_source *src, sqlite3 *db, kp_error *err)
{
    return kp_trace_db_read_error(src->path, sqlite3_extended_errcode(db), sqlite3_errmsg(db), err);
}

static kprof_status kp_src_nomem(kp_error *err)
{
    return kp_error_nomem(err);
}

/* A text column as a heap string ("" for NULL); NULL when out of memory. */
static char *kp_src_text(sqlite3_stmt *q, int col)
{
    const char *t = (const char *)sqlite3_column_text(q, col);
    return strdup(t ? t : "");
}

/* Numbers a damaged file may hold, into the event model's fields: saturated, never wrapped. */
static uint32_t kp_src_u32(int64_t v)
{
    return v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint64_t kp_src_u64(int64_t v)
{
    return v < 0 ? 0 : (uint64_t)v;
}

static int kp_src_null(sqlite3_stmt *q, int col)
{
    return sqlite3_column_type(q, col) == SQLITE_NULL;
}

static kprof_status kp_src_load_meta(kp_event_source *src, kp_error *err)
{
    static const char *const text_keys[] = {"command", "collectors", "kprof_version", "host",
                                            "boot_id"};
    enum { ntext = sizeof text_keys / sizeof *text_keys };
    sqlite3_stmt *q = NULL;
    kp_trace_meta *m = &src->meta;
    m->exit_status = -1;
    src->meta_metrics = -1;
    if (sqlite3_prepare_v2(src->db, "SELECT key, value FROM meta", -1, &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(q, 0);
        const char *value = (const char *)sqlite3_column_text(q, 1);
        if (!key) continue;
        if (!value) value = "";
        for (int i = 0; i < ntext; i++) {
            if (strcmp(key, text_keys[i]) != 0 || src->meta_text[i]) continue;
            if (!(src->meta_text[i] = strdup(value))) {
                sqlite3_finalize(q);
                return kp_src_nomem(err);
            }
        }
        if (strcmp(key, "start_ns") == 0)
            m->start_ns = strtoll(value, NULL, 10);
        else if (strcmp(key, "end_ns") == 0)
            m->end_ns = strtoll(value, NULL, 10);
        else if (strcmp(key, "exit_status") == 0)
            m->exit_status = strtoll(value, NULL, 10);
        else if (strcmp(key, "dropped") == 0)
            m->dropped = kp_src_u64(strtoll(value, NULL, 10));
        else if (strcmp(key, "metrics") == 0)
            src->meta_metrics = strtoll(value, NULL, 10);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return kp_src_fail(src, src->db, err);
    for (int i = 0; i < ntext; i++)
        if (!src->meta_text[i] && !(src->meta_text[i] = strdup(""))) return kp_src_nomem(err);
    m->command = src->meta_text[0];
    m->collectors = src->meta_text[1];
    m->kprof_version = src->meta_text[2];
    m->host = src->meta_text[3];
    m->boot_id = src->meta_text[4];

    /* Notes: each text once, in the order first written. */
    if (sqlite3_prepare_v2(src->db, "SELECT text FROM notes GROUP BY text ORDER BY MIN(rowid)", -1,
                           &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    size_t cap = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(q, 0);
        if (!text || !*text) continue;
        if (m->nnotes == cap) {
            cap = cap ? cap * 2 : 8;
            char **notes = realloc(src->notes, cap * sizeof *notes);
            if (!notes) break;
            src->notes = notes;
        }
        if (!(src->notes[m->nnotes] = strdup(text))) break;
        m->nnotes++;
        m->notes = (const char *const *)src->notes;
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW) return kp_src_nomem(err);
    if (rc != SQLITE_DONE) return kp_src_fail(src, src->db, err);
    return KPROF_OK;
}

/* An INTEGER column that may be NULL: -1 then (and for what does not fit an int), the value
 * kp_trace_process says is unknown (a rank the launcher did not give); not a failure. */
static int kp_src_int_or_unknown(sqlite3_stmt *q, int col)
{
    if (kp_src_null(q, col)) return -1;
    int64_t v = sqlite3_column_int64(q, col);
    return v < 0 || v > INT_MAX ? -1 : (int)v;
}

static kprof_status kp_src_load_processes(kp_event_source *src, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    /* The job's columns and the clocks table came with format 3. */
    int job = kp_trace_db_has_column(src->db, NULL, "processes", "boot_id");
    if (sqlite3_prepare_v2(
            src->db,
            job ? "SELECT id, pid, ppid, command, collector, start_ns, end_ns, "
                  "clean_exit, truncated, events, dropped, launcher, rank, "
                  "local_rank, world_size, local_world_size, node, restart, host, "
                  "boot_id FROM processes ORDER BY id"
                : "SELECT id, pid, ppid, command, collector, start_ns, end_ns, "
                  "clean_exit, truncated, events, dropped FROM processes ORDER BY id",
            -1, &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (src->nprocesses == cap) {
            cap = cap ? cap * 2 : 8;
            kp_trace_process *p = realloc(src->processes, cap * sizeof *p);
            if (!p) break;
            src->processes = p;
        }
        kp_trace_process *p = &src->processes[src->nprocesses];
        memset(p, 0, sizeof *p);
        p->command = kp_src_text(q, 3);
        p->collector = kp_src_text(q, 4);
        p->launcher = job ? kp_src_text(q, 11) : strdup("");
        p->host = job ? kp_src_text(q, 18) : strdup("");
        p->boot_id = job ? kp_src_text(q, 19) : strdup("");
        src->nprocesses++; /* its strings are freed with it, whatever happens next */
        if (!p->command || !p->collector || !p->launcher || !p->host || !p->boot_id) break;
        p->id = sqlite3_column_int64(q, 0);
        p->pid = sqlite3_column_int64(q, 1);
        p->ppid = sqlite3_column_int64(q, 2);
        p->start_ns = sqlite3_column_int64(q, 5);
        p->ended = !kp_src_null(q, 6);
        p->end_ns = sqlite3_column_int64(q, 6);
        p->clean_exit = sqlite3_column_int64(q, 7) != 0;
        p->truncated = sqlite3_column_int64(q, 8) != 0;
        p->events = sqlite3_column_int64(q, 9);
        p->dropped = sqlite3_column_int64(q, 10);
        int *known[] = {&p->rank, &p->local_rank, &p->world_size, &p->local_world_size,
                        &p->node, &p->restart};
        for (int i = 0; i < 6; i++)
            *known[i] = job ? kp_src_int_or_unknown(q, 12 + i) : -1;
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW) return kp_src_nomem(err);
    if (rc != SQLITE_DONE) return kp_src_fail(src, src->db, err);
    if (!job) return KPROF_OK;
    if (sqlite3_prepare_v2(src->db,
                           "SELECT process, mono_ns, real_ns, uncertainty_ns FROM clocks "
                           "ORDER BY rowid",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    cap = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (src->nclocks == cap) {
            cap = cap ? cap * 2 : 16;
            kp_trace_clock *c = realloc(src->clocks, cap * sizeof *c);
            if (!c) break;
            src->clocks = c;
        }
        src->clocks[src->nclocks++] =
            (kp_trace_clock){.process = kp_src_null(q, 0) ? 0 : sqlite3_column_int64(q, 0),
                             .mono_ns = sqlite3_column_int64(q, 1),
                             .real_ns = sqlite3_column_int64(q, 2),
                             .uncertainty_ns = sqlite3_column_int64(q, 3)};
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_ROW) return kp_src_nomem(err);
    return rc == SQLITE_DONE ? KPROF_OK : kp_src_fail(src, src->db, err);
}

static int kp_src_cmp_pid(const void *x, const void *y)
{
    const kp_src_pid *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The processes by pid, each pid once with the row that stands for it: its first with a rank,
 * else its first (rows are in id order). */
static kprof_status kp_src_index_pids(kp_event_source *src, kp_error *err)
{
    size_t n = src->nprocesses;
    src->by_pid = calloc(n ? n : 1, sizeof *src->by_pid);
    if (!src->by_pid) return kp_src_nomem(err);
    for (size_t i = 0; i < n; i++)
        src->by_pid[i] = (kp_src_pid){src->processes[i].pid, i};
    qsort(src->by_pid, n, sizeof *src->by_pid, kp_src_cmp_pid);
    size_t kept = 0;
    for (size_t i = 0; i < n;) {
        size_t first = i, pick = i;
        for (; i < n && src->by_pid[i].pid == src->by_pid[first].pid; i++)
            if (src->processes[src->by_pid[pick].index].rank < 0 &&
                src->processes[src->by_pid[i].index].rank >= 0)
                pick = i;
        src->by_pid[kept++] = src->by_pid[pick];
    }
    src->nby_pid = kept;
    return KPROF_OK;
}

const kp_trace_process *kp_event_source_process_of_pid(const kp_event_source *src, int64_t pid)
{
    size_t lo = 0, hi = src->nby_pid;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (src->by_pid[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < src->nby_pid && src->by_pid[lo].pid == pid ? &src->processes[src->by_pid[lo].index]
                                                           : NULL;
}

/* The hosts' clock uncertainty (kp_trace_meta.clock_uncertainty_ns) from a merged trace's hosts
 * table; 0 without one. */
static kprof_status kp_src_load_hosts(kp_event_source *src, kp_error *err)
{
    kp_trace_meta *m = &src->meta;
    m->clock_uncertainty_ns = 0;
    if (kp_trace_db_scalar(src->db,
                           "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                           "name = 'hosts'",
                           0) != 1)
        return KPROF_OK;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(src->db,
                           "SELECT COUNT(*), SUM(uncertainty_ns IS NULL OR uncertainty_ns < 0), "
                           "MAX(uncertainty_ns) FROM hosts",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_int64(q, 0) > 1) {
        /* The reference's row says 0: the largest is a shifted host's. */
        if (sqlite3_column_int64(q, 1) > 0)
            m->clock_uncertainty_ns = -1;
        else
            m->clock_uncertainty_ns = sqlite3_column_int64(q, 2);
    }
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? KPROF_OK : kp_src_fail(src, src->db, err);
}

const kp_trace_clock *kp_event_source_clocks(const kp_event_source *src, size_t *n)
{
    *n = src->nclocks;
    return src->clocks;
}

/* Every string, read once into one buffer: readers look names up by id, never per row. */
static kprof_status kp_src_load_strings(kp_event_source *src, kp_error *err)
{
    int64_t slots = kp_trace_db_string_slots(src->db);
    if (slots > (int64_t)UINT32_MAX) slots = UINT32_MAX; /* kp_event.name is 32 bits */
    src->nnames = (size_t)slots;
    src->names = calloc(src->nnames, sizeof *src->names);
    src->name_len = calloc(src->nnames, sizeof *src->name_len);
    size_t *offset = calloc(src->nnames, sizeof *offset); /* + 1: 0 is none */
    kp_str text = {0};
    sqlite3_stmt *q = NULL;
    kprof_status st = KPROF_OK;
    int rc = SQLITE_DONE;
    if (!src->names || !src->name_len || !offset) {
        st = kp_src_nomem(err);
        goto done;
    }
    if (sqlite3_prepare_v2(src->db, "SELECT id, text FROM strings", -1, &q, NULL) != SQLITE_OK) {
        st = kp_src_fail(src, src->db, err);
        goto done;
    }
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        const char *t = (const char *)sqlite3_column_text(q, 1);
        if (id <= 0 || id >= slots || !t) continue;
        size_t len = strlen(t); /* as a C string: what every reader prints */
        offset[id] = text.len + 1;
        src->name_len[id] = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
        kp_str_append_n(&text, t, len);
        kp_str_append_n(&text, "", 1); /* the NUL between texts */
    }
    if (rc != SQLITE_DONE) {
        st = kp_src_fail(src, src->db, err);
        goto done;
    }
    if (text.failed) {
        st = kp_src_nomem(err);
        goto done;
    }
    src->strings = text.data;
    text.data = NULL;
    for (size_t id = 0; id < src->nnames; id++)
        if (offset[id]) src->names[id] = src->strings + offset[id] - 1;
done:
    sqlite3_finalize(q);
    kp_str_free(&text);
    free(offset);
    return st;
}

/* Whether the trace's events have metric columns and it has a metrics table worth reading:
 * neither in version 1, and neither read when the meta says the trace holds no metric (the
 * columns then cost a million-event reader nothing). */
static kprof_status kp_src_metric_schema(kp_event_source *src, kp_error *err)
{
    (void)err; /* a query that fails here reads as "no metrics"; the events' own say more */
    int none = src->meta_metrics == 0;
    src->metric_columns = !none && kp_trace_db_has_column(src->db, NULL, "events", "flops") &&
                          kp_trace_db_has_column(src->db, NULL, "events", "metric_bytes");
    src->metric_table = !none && kp_trace_db_has_table(src->db, NULL, "metrics");
    return KPROF_OK;
}

/* *text (heap, or NULL) replaced by its escaped copy: KPROF_OK, or NOMEM (text unchanged). */
static kprof_status kp_src_escape_heap(char **text, kp_error *err)
{
    if (!*text) return KPROF_OK;
    kp_str s = {0};
    kp_str_append_escaped(&s, *text, strlen(*text));
    kp_str_append_n(&s, "", 0); /* "" stays a string, not NULL */
    if (s.failed || !s.data) {
        kp_str_free(&s);
        return kp_src_nomem(err);
    }
    free(*text);
    *text = s.data;
    return KPROF_OK;
}

kprof_status kp_event_source_escape_text(kp_event_source *src, kp_error *err)
{
    kp_str all = {0};
    size_t *offset = calloc(src->nnames ? src->nnames : 1, sizeof *offset);
    if (!offset) return kp_src_nomem(err);
    for (size_t id = 0; id < src->nnames; id++) {
        if (!src->names[id]) continue;
        offset[id] = all.len + 1;
        kp_str_append_escaped(&all, src->names[id], src->name_len[id]);
        size_t len = all.len - (offset[id] - 1);
        src->name_len[id] = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
        kp_str_append_n(&all, "", 1);
    }
    kprof_status st = all.failed ? kp_src_nomem(err) : KPROF_OK;
    for (size_t i = 0; st == KPROF_OK && i < sizeof src->meta_text / sizeof *src->meta_text; i++)
        st = kp_src_escape_heap(&src->meta_text[i], err);
    for (size_t i = 0; st == KPROF_OK && i < src->meta.nnotes; i++)
        st = kp_src_escape_heap(&src->notes[i], err);
    for (size_t i = 0; st == KPROF_OK && i < src->nprocesses; i++) {
        kp_trace_process *p = &src->processes[i];
        char **texts[] = {(char **)&p->command, (char **)&p->collector, (char **)&p->launcher,
                          (char **)&p->host, (char **)&p->boot_id};
        for (size_t k = 0; st == KPROF_OK && k < sizeof texts / sizeof *texts; k++)
            st = kp_src_escape_heap(texts[k], err);
    }
    if (st == KPROF_OK) {
        free(src->strings);
        src->strings = all.data;
        all.data = NULL;
        for (size_t id = 0; id < src->nnames; id++)
            if (offset[id]) src->names[id] = src->strings + offset[id] - 1;
    }
    kp_str_free(&all);
    free(offset);
    kp_trace_meta *m = &src->meta; /* the meta's texts point at meta_text */
    m->command = src->meta_text[0];
    m->collectors = src->meta_text[1];
    m->kprof_version = src->meta_text[2];
    m->host = src->meta_text[3];
    m->boot_id = src->meta_text[4];
    return st;
}

/* The kernel_info table (traces before it have none: no reflection, as before), sorted for
 * the iterator's lookups. A table that cannot be read reads as none. */
static void kp_src_kernel_info_load(kp_event_source *src)
{
    if (!kp_trace_db_has_table(src->db, NULL, "kernel_info")) return;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(src->db,
                           "SELECT process, device, name, local_mem, private_mem, max_group_size, "
                           "group_multiple FROM kernel_info",
                           -1, &q, NULL) != SQLITE_OK)
        return;
    size_t cap = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        if (src->nkinfo == cap) {
            cap = cap ? cap * 2 : 16;
            kp_src_kernel_info *v = realloc(src->kinfo, cap * sizeof *v);
            if (!v) break;
            src->kinfo = v;
        }
        src->kinfo[src->nkinfo++] = (kp_src_kernel_info){sqlite3_column_int64(q, 0),
                                                         sqlite3_column_int64(q, 1),
                                                         sqlite3_column_int64(q, 2),
                                                         kp_src_u64(sqlite3_column_int64(q, 3)),
                                                         kp_src_u64(sqlite3_column_int64(q, 4)),
                                                         kp_src_u32(sqlite3_column_int64(q, 5)),
                                                         kp_src_u32(sqlite3_column_int64(q, 6))};
    }
    sqlite3_finalize(q);
    if (src->nkinfo > 1) qsort(src->kinfo, src->nkinfo, sizeof *src->kinfo, kp_src_cmp_kinfo);
}

kprof_status kp_event_source_open(const char *path, kp_event_source **out, kp_error *err)
{
    *out = NULL;
    kp_event_source *src = calloc(1, sizeof *src);
    if (!src) return kp_src_nomem(err);
    kprof_status st = kp_trace_db_open(path, &src->db, err);
    if (st == KPROF_OK && !(src->path = strdup(path))) st = kp_src_nomem(err);
    if (st == KPROF_OK) st = kp_src_load_meta(src, err);
    if (st == KPROF_OK) st = kp_src_load_processes(src, err);
    if (st == KPROF_OK) st = kp_src_index_pids(src, err);
    if (st == KPROF_OK) st = kp_src_load_hosts(src, err);
    if (st == KPROF_OK) st = kp_src_load_strings(src, err);
    if (st == KPROF_OK) st = kp_src_metric_schema(src, err);
    if (st == KPROF_OK) kp_src_kernel_info_load(src);
    if (st != KPROF_OK) {
        kp_event_source_close(src);
        return st;
    }
    *out = src;
    return KPROF_OK;
}

void kp_event_source_close(kp_event_source *src)
{
    if (!src) return;
    sqlite3_close(src->db);
    free(src->path);
    for (size_t i = 0; i < sizeof src->meta_text / sizeof *src->meta_text; i++)
        free(src->meta_text[i]);
    free(src->clocks);
    for (size_t i = 0; i < src->meta.nnotes; i++)
        free(src->notes[i]);
    free(src->notes);
    for (size_t i = 0; i < src->nprocesses; i++) {
        free((char *)src->processes[i].command);
        free((char *)src->processes[i].collector);
        free((char *)src->processes[i].launcher);
        free((char *)src->processes[i].host);
        free((char *)src->processes[i].boot_id);
    }
    free(src->processes);
    free(src->by_pid);
    free(src->strings);
    free(src->names);
    free(src->name_len);
    free(src->launches);
    free(src->threads);
    free(src->kinfo);
    free(src->queues);
    free(src->metrics);
    free(src);
}

const char *kp_event_source_path(const kp_event_source *src)
{
    return src->path;
}

const kp_trace_meta *kp_event_source_meta(const kp_event_source *src)
{
    return &src->meta;
}

const kp_trace_process *kp_event_source_processes(const kp_event_source *src, size_t *n)
{
    *n = src->nprocesses;
    return src->processes;
}

const char *kp_event_source_string(const kp_event_source *src, uint32_t id, size_t *len)
{
    const char *text = id < src->nnames ? src->names[id] : NULL;
    if (len) *len = text ? src->name_len[id] : 0;
    return text;
}

const char *const *kp_event_source_strings(const kp_event_source *src, size_t *n)
{
    *n = src->nnames;
    return src->names;
}

/* The first column of a one-number query into *v (left alone for NULL or no row): KPROF_OK, or
 * the trace's read error (kp_src_fail). */
static kprof_status kp_src_scalar(kp_event_source *src, const char *sql, int64_t *v, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(src->db, sql, -1, &q, NULL) == SQLITE_OK) {
        int rc = sqlite3_step(q);
        if (rc == SQLITE_ROW && !kp_src_null(q, 0)) *v = sqlite3_column_int64(q, 0);
        ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
    }
    sqlite3_finalize(q);
    return ok ? KPROF_OK : kp_src_fail(src, src->db, err);
}

kprof_status kp_event_source_span(kp_event_source *src, int64_t *first_start, int64_t *last_end,
                                  kp_error *err)
{
    /* Two queries: MIN(start_ns) alone is one step down the index on start_ns. */
    kprof_status st = KPROF_OK;
    if (first_start) {
        *first_start = 0;
        st = kp_src_scalar(src, "SELECT MIN(start_ns) FROM events", first_start, err);
    }
    if (last_end && st == KPROF_OK) {
        *last_end = 0;
        st = kp_src_scalar(src, "SELECT MAX(end_ns) FROM events", last_end, err);
    }
    return st;
}

kprof_status kp_event_source_last_id(kp_event_source *src, int64_t *last_id, kp_error *err)
{
    *last_id = 0;
    kprof_status st = kp_src_scalar(src, "SELECT MAX(id) FROM events", last_id, err);
    if (st != KPROF_OK) return st;
    if (*last_id < 0) *last_id = 0;
    return KPROF_OK;
}

static int kp_src_cmp_thread(const void *x, const void *y)
{
    const kp_trace_thread *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

static int kp_src_cmp_queue(const void *x, const void *y)
{
    const kp_trace_queue *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

/* The source's index, made once: the launching calls by (process, correlation), the host
 * threads and the device queues, in one pass over the events (a query per device operation
 * cost more than the rest of an export). */
static kprof_status kp_src_index(kp_event_source *src, kp_error *err)
{
    if (src->indexed) return KPROF_OK;
    sqlite3_stmt *q = NULL;
    kp_src_set threads = {0}, queues = {0};
    size_t cap = 0;
    int64_t(*device)[2] = NULL; /* (process, correlation) of each device operation */
    size_t ndevice = 0, device_cap = 0;
    kprof_status st = KPROF_OK;
    int rc;
    if (sqlite3_prepare_v2(src->db,
                           "SELECT kind, pid, tid, device, stream, process, correlation, start_ns, "
                           "domain FROM events",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    src->opencl_ops = src->other_ops = 0; /* a pass that failed before counted some */
    int64_t last_thread[2] = {0, 0}, last_queue[3] = {0, 0, 0};
    int have_thread = 0, have_queue = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        unsigned flags = kp_event_kind_flags(sqlite3_column_int(q, 0));
        int64_t pid = sqlite3_column_int64(q, 1);
        if (flags & KP_EVENT_F_HOST_THREAD) {
            int64_t key[3] = {pid, sqlite3_column_int64(q, 2), 0};
            /* Runs of one thread are the rule: skip the map for them. */
            if (!have_thread || key[0] != last_thread[0] || key[1] != last_thread[1]) {
                if ((st = kp_src_set_add(&threads, key, err)) != KPROF_OK) goto done;
                last_thread[0] = key[0];
                last_thread[1] = key[1];
                have_thread = 1;
            }
        }
        if (flags & KP_EVENT_F_DEVICE) {
            /* The domain rides in the device's key above its 32 bits: an OpenCL queue is
             * named apart from a CUDA stream of the same numbers. */
            int opencl = sqlite3_column_int(q, 8) == KP_DOMAIN_OPENCL;
            if (opencl)
                src->opencl_ops++;
            else
                src->other_ops++;
            int64_t key[3] = {pid,
                              (int64_t)kp_src_u32(sqlite3_column_int64(q, 3)) |
                                  (opencl ? INT64_C(1) << 32 : 0),
                              kp_src_u32(sqlite3_column_int64(q, 4))};
            if (!have_queue || memcmp(key, last_queue, sizeof key) != 0) {
                if ((st = kp_src_set_add(&queues, key, err)) != KPROF_OK) goto done;
                memcpy(last_queue, key, sizeof key);
                have_queue = 1;
            }
        }
        if (sqlite3_column_int(q, 0) == KP_EVENT_API && !kp_src_null(q, 6)) {
            if (src->nlaunches == cap) {
                cap = cap ? cap * 2 : 4096;
                kp_src_launch *v = realloc(src->launches, cap * sizeof *v);
                if (!v) goto nomem;
                src->launches = v;
            }
            src->launches[src->nlaunches++] =
                (kp_src_launch){sqlite3_column_int64(q, 5), sqlite3_column_int64(q, 6),
                                sqlite3_column_int64(q, 7), 0};
        } else if ((flags & KP_EVENT_F_DEVICE) && !kp_src_null(q, 6)) {
            if (ndevice == device_cap) {
                device_cap = device_cap ? device_cap * 2 : 4096;
                int64_t(*v)[2] = realloc(device, device_cap * sizeof *v);
                if (!v) goto nomem;
                device = v;
            }
            device[ndevice][0] = sqlite3_column_int64(q, 5);
            device[ndevice][1] = sqlite3_column_int64(q, 6);
            ndevice++;
        }
    }
    if (rc != SQLITE_DONE) {
        st = kp_src_fail(src, src->db, err);
        goto done;
    }
    src->threads = calloc(threads.n ? threads.n : 1, sizeof *src->threads);
    src->queues = calloc(queues.n ? queues.n : 1, sizeof *src->queues);
    if (!src->threads || !src->queues) goto nomem;
    for (size_t i = 0; i < threads.cap; i++)
        if (threads.used[i])
            src->threads[src->nthreads++] =
                (kp_trace_thread){threads.keys[i][0], threads.keys[i][1]};
    for (size_t i = 0; i < queues.cap; i++)
        if (queues.used[i])
            src->queues[src->nqueues++] =
                (kp_trace_queue){queues.keys[i][0], (uint32_t)queues.keys[i][1],
                                 (uint32_t)queues.keys[i][2], (int)(queues.keys[i][1] >> 32)};
    /* The calls by key, earliest first, then each key once. Usually in order already. */
    for (size_t i = 1; i < src->nlaunches; i++) {
        if (kp_src_cmp_launch(&src->launches[i - 1], &src->launches[i]) > 0) {
            qsort(src->launches, src->nlaunches, sizeof *src->launches, kp_src_cmp_launch);
            break;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < src->nlaunches; i++) {
        const kp_src_launch *l = &src->launches[i];
        if (kept && src->launches[kept - 1].process == l->process &&
            src->launches[kept - 1].correlation == l->correlation)
            continue;
        src->launches[kept++] = *l;
    }
    src->nlaunches = kept;
    /* Which calls launched device work that is in the trace: the keys device work carries. */
    size_t place = 0;
    for (size_t i = 0; i < ndevice; i++) {
        int64_t start;
        if (kp_src_launch_find(src->launches, src->nlaunches, &place, device[i][0], device[i][1],
                               &start))
            src->launches[place].launched = 1;
    }
    qsort(src->threads, src->nthreads, sizeof *src->threads, kp_src_cmp_thread);
    qsort(src->queues, src->nqueues, sizeof *src->queues, kp_src_cmp_queue);
    src->indexed = 1;
    goto done;
nomem:
    st = kp_src_nomem(err);
done:
    sqlite3_finalize(q);
    free(device);
    kp_src_set_free(&threads);
    kp_src_set_free(&queues);
    if (st != KPROF_OK) { /* all or nothing: a later call tries again */
        free(src->launches);
        src->launches = NULL;
        src->nlaunches = 0;
        free(src->threads);
        free(src->queues);
        src->threads = NULL;
        src->queues = NULL;
        src->nthreads = src->nqueues = 0;
    }
    return st;
}

kprof_status kp_event_source_threads(kp_event_source *src, const kp_trace_thread **out, size_t *n,
                                     kp_error *err)
{
    kprof_status st = kp_src_index(src, err);
    *out = src->threads;
    *n = src->nthreads;
    return st;
}

int kp_event_source_opencl_only(kp_event_source *src)
{
    kp_error err = {0};
    kprof_status st = kp_src_index(src, &err);
    kp_error_clear(&err);
    return st == KPROF_OK && src->opencl_ops > 0 && src->other_ops == 0;
}

kprof_status kp_event_source_queues(kp_event_source *src, const kp_trace_queue **out, size_t *n,
                                    kp_error *err)
{
    kprof_status st = kp_src_index(src, err);
    *out = src->queues;
    *n = src->nqueues;
    return st;
}

/* ---- metrics -------------------------------------------------------------------------------- */

/* A user metric while the table is sorted: its place in the table, so that of a key written
 * twice for one event the later stays. */
typedef struct kp_src_metric_at {
    kp_trace_metric m;
    size_t at;
    int later; /* the same key comes again for the event: that value counts, not this one */
} kp_src_metric_at;

static int kp_src_cmp_metric(const void *x, const void *y)
{
    const kp_src_metric_at *a = x, *b = y;
    if (a->m.event != b->m.event) return a->m.event < b->m.event ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

static int kp_src_cmp_metric_key(const void *x, const void *y)
{
    const kp_src_metric_at *a = x, *b = y;
    if (a->m.key != b->m.key) return a->m.key < b->m.key ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

/* Mark in v[0..n), one event's metrics in the order written, those whose key comes again. A few
 * are compared pair by pair; many (a damaged or hostile file) are sorted, so no file makes this
 * quadratic. */
static void kp_src_metric_mark_later(kp_src_metric_at *v, size_t n)
{
    if (n <= 16) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n && !v[i].later; j++)
                v[i].later = v[j].m.key == v[i].m.key;
        return;
    }
    qsort(v, n, sizeof *v, kp_src_cmp_metric_key);
    for (size_t i = 0; i + 1 < n; i++)
        v[i].later = v[i + 1].m.key == v[i].m.key;
    qsort(v, n, sizeof *v, kp_src_cmp_metric);
}

/* The metrics table, once: by event, in the order written, each (event, key) once. */
static kprof_status kp_src_load_metrics(kp_event_source *src, kp_error *err)
{
    if (src->metrics_loaded || !src->metric_table) {
        src->metrics_loaded = 1;
        return KPROF_OK;
    }
    sqlite3_stmt *q = NULL;
    kp_src_metric_at *v = NULL;
    size_t n = 0, cap = 0;
    int sorted = 1, rc;
    kprof_status st = KPROF_OK;
    if (sqlite3_prepare_v2(src->db, "SELECT event, key, value FROM metrics", -1, &q, NULL) !=
        SQLITE_OK)
        return kp_src_fail(src, src->db, err);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        double value = sqlite3_column_double(q, 2);
        if (kp_src_null(q, 0) || kp_src_null(q, 2) || !isfinite(value)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            kp_src_metric_at *w = realloc(v, cap * sizeof *w);
            if (!w) {
                st = kp_src_nomem(err);
                goto done;
            }
            v = w;
        }
        int64_t key = sqlite3_column_int64(q, 1);
        v[n].m.event = sqlite3_column_int64(q, 0);
        v[n].m.key = key > 0 && (uint64_t)key < src->nnames ? (uint32_t)key : 0;
        v[n].m.value = value;
        v[n].at = n;
        v[n].later = 0;
        if (n && v[n].m.event < v[n - 1].m.event) sorted = 0;
        n++;
    }
    if (rc != SQLITE_DONE) {
        st = kp_src_fail(src, src->db, err);
        goto done;
    }
    /* Written in event order by the ingest (rows and their metrics go in together): the sort is
     * for a file made otherwise. */
    if (!sorted) qsort(v, n, sizeof *v, kp_src_cmp_metric);
    src->metrics = malloc((n ? n : 1) * sizeof *src->metrics);
    if (!src->metrics) {
        st = kp_src_nomem(err);
        goto done;
    }
    for (size_t first = 0, end; first < n; first = end) {
        for (end = first + 1; end < n && v[end].m.event == v[first].m.event;)
            end++;
        kp_src_metric_mark_later(v + first, end - first);
        for (size_t i = first; i < end; i++)
            if (!v[i].later) src->metrics[src->nmetrics++] = v[i].m;
    }
    src->metrics_loaded = 1;
done:
    sqlite3_finalize(q);
    free(v);
    return st;
}

/* The first metric of v[0..n) whose event is not below id, galloping from *place (updated); n
 * when there is none. Readers go by rising ids (storage order) or nearly (by start). */
static size_t kp_src_metric_find(const kp_trace_metric *v, size_t n, size_t *place, int64_t id)
{
    if (!n) return 0;
    size_t at = *place < n ? *place : n - 1, lo, hi, step = 1;
    if (v[at].event < id) {
        lo = hi = at + 1;
        while (hi < n && v[hi].event < id) {
            lo = hi + 1;
            hi = step < n - hi ? hi + step : n;
            step *= 2;
        }
    } else {
        lo = hi = at;
        while (lo > 0 && v[lo - 1].event >= id) {
            hi = lo - 1;
            lo = step < lo ? lo - step : 0;
            step *= 2;
        }
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].event < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *place = lo;
    return lo;
}

/* The run of v's metrics of event id, from *place: its first and how many. */
static const kp_trace_metric *kp_src_metrics_of(const kp_trace_metric *v, size_t n, size_t *place,
                                                int64_t id, size_t *count)
{
    size_t first = kp_src_metric_find(v, n, place, id), last = first;
    while (last < n && v[last].event == id)
        last++;
    *count = last - first;
    return last > first ? &v[first] : NULL;
}

int kp_event_source_has_metrics(const kp_event_source *src)
{
    return src->metric_columns || src->metric_table;
}

kprof_status kp_event_source_metrics(kp_event_source *src, int64_t event_id,
                                     const kp_trace_metric **out, size_t *n, kp_error *err)
{
    *out = NULL;
    *n = 0;
    kprof_status st = kp_src_load_metrics(src, err);
    if (st != KPROF_OK) return st;
    size_t place = src->nmetrics / 2;
    *out = kp_src_metrics_of(src->metrics, src->nmetrics, &place, event_id, n);
    return KPROF_OK;
}

/* ---- events --------------------------------------------------------------------------------- */

/* The columns every event has, then the groups a reader may ask for, in this order. */
#define KP_SRC_CORE "kind, name, process, tid, start_ns, end_ns, correlation"
enum { KP_SRC_CORE_COLUMNS = 7 };
enum {
    KP_SRC_ROW,
    KP_SRC_PID,
    KP_SRC_DOMAIN,
    KP_SRC_STREAM,
    KP_SRC_QUEUE,
    KP_SRC_CALL,
    KP_SRC_KERNEL,
    KP_SRC_PAYLOAD,
    KP_SRC_METRICS,
    KP_SRC_GROUPS
};
static const struct {
    unsigned field;
    const char *columns;
    int count;
} kp_src_groups[KP_SRC_GROUPS] = {
    [KP_SRC_ROW] = {KP_EVENT_FIELD_ROW, ", id", 1},
    [KP_SRC_PID] = {KP_EVENT_FIELD_PID, ", pid", 1},
    [KP_SRC_DOMAIN] = {KP_EVENT_FIELD_DOMAIN, ", domain", 1},
    [KP_SRC_STREAM] = {KP_EVENT_FIELD_STREAM, ", device, stream", 2},
    [KP_SRC_QUEUE] = {KP_EVENT_FIELD_QUEUE, ", queued_ns, submitted_ns", 2},
    [KP_SRC_CALL] = {KP_EVENT_FIELD_CALL, ", status", 1},
    [KP_SRC_KERNEL] = {KP_EVENT_FIELD_KERNEL,
                       ", grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, "
                       "static_smem, dynamic_smem, local_mem",
                       10},
    [KP_SRC_PAYLOAD] = {KP_EVENT_FIELD_PAYLOAD, ", bytes, copy_kind, range_id", 3},
    [KP_SRC_METRICS] = {KP_EVENT_FIELD_METRICS, ", flops, metric_bytes", 2},
};

struct kp_event_iter {
    const kp_event_source *src;
    sqlite3 *db; /* the source's, or its own */
    int own;     /* db is its own */
    sqlite3_stmt *q;
    unsigned fields;
    int col[KP_SRC_GROUPS]; /* the first column of each group asked for, else -1 */
    size_t launch_place;    /* where the last launching call was found */
    size_t call_place;      /* the same, for the calls' own lookups */
    int user_metrics;       /* the trace has user metrics and the reader asked for them */
    int id_col;             /* the row's column (for the user metrics), else -1 */
    size_t metric_place;    /* where the last event's user metrics were found */
    int done;
    int code; /* SQLite's error when reading failed, else 0 */
    char message[256];
};

kprof_status kp_event_iter_open(kp_event_source *src, const kp_event_filter *filter,
                                kp_event_iter **out, kp_error *err)
{
    static const kp_event_filter all = {0};
    const kp_event_filter *f = filter ? filter : &all;
    *out = NULL;
    kprof_status st = KPROF_OK;
    if ((f->fields & (KP_EVENT_FIELD_LAUNCH | KP_EVENT_FIELD_CALL)) &&
        (st = kp_src_index(src, err)) != KPROF_OK)
        return st;
    if ((f->fields & KP_EVENT_FIELD_METRICS) && (st = kp_src_load_metrics(src, err)) != KPROF_OK)
        return st;
    kp_event_iter *it = calloc(1, sizeof *it);
    if (!it) return kp_src_nomem(err);
    it->src = src;
    it->fields = f->fields;
    it->db = src->db;
    it->user_metrics = (f->fields & KP_EVENT_FIELD_METRICS) && src->nmetrics > 0;
    it->id_col = -1;
    kp_str sql = {0};
    kp_str_append(&sql, "SELECT " KP_SRC_CORE);
    int col = KP_SRC_CORE_COLUMNS;
    for (int g = 0; g < KP_SRC_GROUPS; g++) {
        it->col[g] = -1;
        if (!(f->fields & kp_src_groups[g].field)) continue;
        if (g == KP_SRC_METRICS && !src->metric_columns) continue; /* none: nothing to read */
        kp_str_append(&sql, kp_src_groups[g].columns);
        it->col[g] = col;
        col += kp_src_groups[g].count;
    }
    if (it->user_metrics) { /* the row finds them */
        it->id_col = it->col[KP_SRC_ROW];
        if (it->id_col < 0) {
            kp_str_append(&sql, ", id");
            it->id_col = col++;
        }
    }
    kp_str_append(&sql, " FROM events");
    const char *where = " WHERE ";
    if (f->kind_flags || f->kinds) {
        kp_str_append(&sql, " WHERE kind IN (");
        const char *sep = "";
#define KP_SRC_KIND_(id, NAME, name, category, flags, what)                                        \
    if ((f->kind_flags & (flags)) || (id < 32 && (f->kinds & (1u << (id & 31))))) {                \
        kp_str_printf(&sql, "%s%d", sep, id);                                                      \
        sep = ",";                                                                                 \
    }
        KP_EVENT_KIND_LIST(KP_SRC_KIND_)
#undef KP_SRC_KIND_
        if (!*sep) kp_str_append(&sql, "NULL"); /* no kind matches: nothing */
        kp_str_append(&sql, ")");
        where = " AND ";
    }
    if (f->first_id > 1 || f->last_id > 0)
        kp_str_printf(&sql, "%sid BETWEEN %lld AND %lld", where, (long long)f->first_id,
                      (long long)(f->last_id > 0 ? f->last_id : INT64_MAX));
    kp_str_append(&sql,
                  f->order == KP_EVENT_ORDER_START ? " ORDER BY start_ns, id" : " ORDER BY id");
    if (sql.failed) {
        st = kp_src_nomem(err);
        goto fail;
    }
    if (f->flags & KP_EVENT_ITER_OWN_CONNECTION) {
        /* The file passed kp_trace_db_open's checks when the source opened. */
        if (sqlite3_open_v2(src->path, &it->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK) {
            st = it->db ? kp_src_fail(src, it->db, err) : kp_src_nomem(err);
            sqlite3_close(it->db);
            goto fail;
        }
        it->own = 1;
    }
    if (sqlite3_prepare_v2(it->db, sql.data, -1, &it->q, NULL) != SQLITE_OK) {
        st = kp_src_fail(src, it->db, err);
        goto fail;
    }
    kp_str_free(&sql);
    *out = it;
    return KPROF_OK;
fail:
    if (it->own) sqlite3_close(it->db);
    kp_str_free(&sql);
    free(it);
    return st;
}

int kp_event_iter_next(kp_event_iter *it, kp_trace_event *ev)
{
    if (it->done) return 0;
    sqlite3_stmt *q = it->q;
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        it->done = 1;
        if (rc != SQLITE_DONE) {
            it->code = sqlite3_extended_errcode(it->db);
            if (!it->code) it->code = rc;
            snprintf(it->message, sizeof it->message, "%s", sqlite3_errmsg(it->db));
        }
        return 0;
    }
    memset(ev, 0, sizeof *ev);
    kp_event *e = &ev->e;
    int kind = sqlite3_column_int(q, 0);
    e->kind = kp_event_kind_valid(kind) ? (kp_event_kind)kind : KP_EVENT_NONE;
    int64_t name = sqlite3_column_int64(q, 1);
    e->name = name > 0 && (uint64_t)name < it->src->nnames ? (uint32_t)name : 0;
    e->process = sqlite3_column_int64(q, 2);
    e->tid = sqlite3_column_int64(q, 3);
    e->start_ns = sqlite3_column_int64(q, 4);
    e->end_ns = sqlite3_column_int64(q, 5);
    if (!kp_src_null(q, 6)) {
        e->correlation = (uint64_t)sqlite3_column_int64(q, 6); /* as stored, bit for bit */
        e->known |= KP_EVENT_HAS_CORRELATION;
    }
    const int *col = it->col;
    int c;
    if ((c = col[KP_SRC_ROW]) >= 0) ev->id = sqlite3_column_int64(q, c);
    if ((c = col[KP_SRC_PID]) >= 0) e->pid = sqlite3_column_int64(q, c);
    if ((c = col[KP_SRC_DOMAIN]) >= 0) {
        int64_t domain = sqlite3_column_int64(q, c);
        e->domain = domain < 0 || domain > UINT16_MAX ? 0 : (uint16_t)domain;
    }
    if ((c = col[KP_SRC_STREAM]) >= 0) {
        e->device = kp_src_u32(sqlite3_column_int64(q, c));
        e->stream = kp_src_u32(sqlite3_column_int64(q, c + 1));
    }
    if ((c = col[KP_SRC_QUEUE]) >= 0) {
        if (!kp_src_null(q, c)) {
            e->queued_ns = sqlite3_column_int64(q, c);
            e->known |= KP_EVENT_HAS_QUEUED;
        }
        if (!kp_src_null(q, c + 1)) {
            e->submitted_ns = sqlite3_column_int64(q, c + 1);
            e->known |= KP_EVENT_HAS_SUBMITTED;
        }
    }
    if ((c = col[KP_SRC_CALL]) >= 0) {
        if (!kp_src_null(q, c)) {
            int64_t status = sqlite3_column_int64(q, c);
            e->status = status < INT32_MIN   ? INT32_MIN
                        : status > INT32_MAX ? INT32_MAX
                                             : (int32_t)status;
            ev->has |= KP_TRACE_HAS_STATUS;
        }
        int64_t start;
        if (e->kind == KP_EVENT_API && (e->known & KP_EVENT_HAS_CORRELATION) &&
            kp_src_launch_find(it->src->launches, it->src->nlaunches, &it->call_place, e->process,
                               (int64_t)e->correlation, &start) &&
            it->src->launches[it->call_place].launched)
            ev->has |= KP_TRACE_LAUNCHED;
    }
    if ((c = col[KP_SRC_KERNEL]) >= 0 && e->kind == KP_EVENT_KERNEL) {
        if (!kp_src_null(q, c)) { /* the trace counts threadgroups: the model counts threads */
            int64_t groups[3], group[3];
            for (int d = 0; d < 3; d++) {
                groups[d] = sqlite3_column_int64(q, c + d);
                group[d] = sqlite3_column_int64(q, c + 3 + d);
            }
            kp_event_set_groups(e, groups, group);
        }
        if (!kp_src_null(q, c + 6)) {
            e->registers = kp_src_u32(sqlite3_column_int64(q, c + 6));
            e->known |= KP_EVENT_HAS_REGISTERS;
        }
        if (!kp_src_null(q, c + 7) && !kp_src_null(q, c + 8)) {
            e->static_shared = kp_src_u64(sqlite3_column_int64(q, c + 7));
            e->dynamic_shared = kp_src_u64(sqlite3_column_int64(q, c + 8));
            e->known |= KP_EVENT_HAS_SHARED;
        }
        if (!kp_src_null(q, c + 9)) {
            e->local_mem = kp_src_u32(sqlite3_column_int64(q, c + 9));
            e->known |= KP_EVENT_HAS_LOCAL;
        }
        /* An OpenCL kernel's reflection on its device, kept once per kernel and device. */
        const kp_event_source *src = it->src;
        if (src->nkinfo && col[KP_SRC_STREAM] >= 0) {
            kp_src_kernel_info key = {.process = e->process, .device = e->device, .name = e->name};
            const kp_src_kernel_info *k =
                bsearch(&key, src->kinfo, src->nkinfo, sizeof key, kp_src_cmp_kinfo);
            if (k) {
                e->max_threads_per_group = k->max_group;
                e->group_multiple = k->multiple;
                e->cl_local_mem = k->local_mem;
                e->cl_private_mem = k->private_mem;
                e->known |= KP_EVENT_HAS_MAX_THREADS | KP_EVENT_HAS_CL_REFLECTION;
            }
        }
    }
    if ((c = col[KP_SRC_PAYLOAD]) >= 0) {
        if (!kp_src_null(q, c)) {
            e->bytes = kp_src_u64(sqlite3_column_int64(q, c));
            int64_t copy = sqlite3_column_int64(q, c + 1);
            e->copy_kind = copy >= 0 && copy <= UINT16_MAX && kp_copy_kind_name((int)copy)
                               ? (uint16_t)copy
                               : KP_COPY_UNKNOWN;
            ev->has |= KP_TRACE_HAS_BYTES;
            e->known |= KP_EVENT_HAS_BYTES;
        }
        if (!kp_src_null(q, c + 2)) {
            e->range_id = (uint64_t)sqlite3_column_int64(q, c + 2);
            ev->has |= KP_TRACE_HAS_RANGE_ID;
        }
    }
    if ((c = col[KP_SRC_METRICS]) >= 0) {
        /* A value no count can be (a damaged file's) stays unknown. */
        double flops = sqlite3_column_double(q, c), bytes = sqlite3_column_double(q, c + 1);
        if (!kp_src_null(q, c) && isfinite(flops) && flops >= 0) {
            e->metrics.flops = flops;
            e->known |= KP_EVENT_HAS_FLOPS;
        }
        if (!kp_src_null(q, c + 1) && isfinite(bytes) && bytes >= 0) {
            e->metrics.bytes = bytes;
            e->known |= KP_EVENT_HAS_METRIC_BYTES;
        }
    }
    if (it->user_metrics)
        ev->metrics = kp_src_metrics_of(it->src->metrics, it->src->nmetrics, &it->metric_place,
                                        sqlite3_column_int64(q, it->id_col), &ev->nmetrics);
    if ((it->fields & KP_EVENT_FIELD_LAUNCH) && kp_event_kind_on_device(e->kind) &&
        (e->known & KP_EVENT_HAS_CORRELATION)) {
        if (kp_src_launch_find(it->src->launches, it->src->nlaunches, &it->launch_place, e->process,
                               (int64_t)e->correlation, &ev->launch_start_ns))
            ev->has |= KP_TRACE_HAS_LAUNCH;
    }
    return 1;
}

kprof_status kp_event_iter_close(kp_event_iter *it, kp_error *err)
{
    if (!it) return KPROF_OK;
    kprof_status st = KPROF_OK;
    if (it->code) st = kp_trace_db_read_error(it->src->path, it->code, it->message, err);
    sqlite3_finalize(it->q);
    if (it->own) sqlite3_close(it->db);
    free(it);
    return st;
}
