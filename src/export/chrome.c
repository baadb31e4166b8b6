/*
 * chrome.c — a trace as Chrome Trace Event JSON (the object form), which Perfetto and
 * chrome://tracing open: a process per traced process with its host threads (API calls, NVTX
 * ranges as slices, marks as instants), a process per (traced process, GPU) with one track per
 * stream or queue, and a flow arrow from each API call to the device work it launched (v2 flows:
 * bind_id with flow_out on the call, flow_in on the kernel). Times are microseconds from the
 * trace's start. Written straight to a file, so a million events need little memory.
 */
#define _GNU_SOURCE
#include "export/chrome.h"
#include "core/event.h"
#include "export/json.h"
#include "store/trace_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* A synthetic pid per (process, device), clear of real pids. */
static int64_t kp_gpu_pid(int64_t pid, int64_t device)
{
    /* Unsigned: a pid from a damaged file must not overflow. */
    return (int64_t)((1ull << 30) + (uint64_t)pid * 16 + (uint64_t)(device & 15));
}

/* Flow ids: the process row and the correlation, below 2^53 so JavaScript keeps them exact. */
static uint64_t kp_flow_id(int64_t process, int64_t corr)
{
    return ((uint64_t)process << 30) + ((uint64_t)corr & ((1u << 30) - 1));
}

/* The events go through a buffer of our own, without printf or stdio's per-call work: the
 * export writes millions of numbers. With a FILE it drains there every KP_OUT_CHUNK bytes;
 * without one it grows and keeps everything (the second half of a threaded export). */
#define KP_OUT_CHUNK (1u << 20)

typedef struct kp_out {
    FILE *f;
    char *buf;
    size_t len, cap;
    int failed; /* out of memory */
} kp_out;

static void kp_out_drain(kp_out *o)
{
    if (o->f && o->len) fwrite_unlocked(o->buf, 1, o->len, o->f);
    if (o->f) o->len = 0;
}

/* Room for n more bytes; 0 when there is none (memory is out, and the output is marked failed). */
static int kp_out_room(kp_out *o, size_t n)
{
    if (o->len + n <= o->cap) return 1;
    kp_out_drain(o);
    if (o->len + n <= o->cap) return 1;
    size_t cap = o->cap ? o->cap : KP_OUT_CHUNK;
    while (cap < o->len + n) cap *= 2;
    char *b = realloc(o->buf, cap);
    if (!b) {
        o->failed = 1;
        return 0;
    }
    o->buf = b;
    o->cap = cap;
    return 1;
}

static void kp_out_bytes(kp_out *o, const char *p, size_t n)
{
    if (!kp_out_room(o, n)) return;
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void kp_put(kp_out *o, const char *s)
{
    kp_out_bytes(o, s, strlen(s));
}

/* A string literal, its length known at compile time. */
#define KP_PUT_LIT(o, lit) kp_out_bytes((o), (lit), sizeof(lit) - 1)

static void kp_put_u64(kp_out *o, uint64_t v)
{
    char b[24];
    int i = 24;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    kp_out_bytes(o, b + i, (size_t)(24 - i));
}

static void kp_put_i64(kp_out *o, int64_t v)
{
    if (v < 0) {
        KP_PUT_LIT(o, "-");
        kp_put_u64(o, (uint64_t)(-(v + 1)) + 1);
    } else {
        kp_put_u64(o, (uint64_t)v);
    }
}

/* ns as µs with three decimals. */
static void kp_put_us(kp_out *o, int64_t ns_signed)
{
    uint64_t ns = (uint64_t)ns_signed;
    if (ns_signed < 0) {
        KP_PUT_LIT(o, "-");
        ns = 0 - ns; /* INT64_MIN too */
    }
    kp_put_u64(o, ns / 1000);
    char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                    (char)('0' + ns % 10)};
    kp_out_bytes(o, frac, sizeof frac);
}

static void kp_quote(FILE *f, const char *text)
{
    kp_str s = {0};
    kp_json_quote(&s, text ? text : "");
    fputs(s.data ? s.data : "\"\"", f);
    kp_str_free(&s);
}

static kprof_status kp_chrome_fail(sqlite3 *db, kp_error *err)
{
    return kp_trace_db_read_error(sqlite3_db_filename(db, "main"), sqlite3_extended_errcode(db),
                                  sqlite3_errmsg(db), err);
}

/* Events with ids lo..hi, each after ",\n" (the metadata comes first). 0, or -1 when SQLite
 * failed (its message is on db). */
/* Names are JSON-quoted once, with their lengths: every event writes one. */
static const kp_str kp_unknown_name = {.data = "\"?\"", .len = 3};

static int kp_chrome_events(sqlite3 *db, int64_t lo, int64_t hi, const kp_str *names,
                            int64_t nnames, int64_t t0, kp_out *f)
{
    sqlite3_stmt *q = NULL;
    int rc;
    char sql[1024], device[64];
    /* Columns 22..24: the device operation's start minus when it was queued, submitted and
     * when the call that launched it (same process and correlation) began. */
    snprintf(sql, sizeof sql,
             "SELECT kind, pid, tid, start_ns, end_ns, correlation, device, stream, name, grid_x, "
             "grid_y, grid_z, block_x, block_y, block_z, registers, static_smem, dynamic_smem, "
             "bytes, range_id, launched, process, start_ns - queued_ns, start_ns - submitted_ns, "
             "CASE WHEN kind IN (%s) AND correlation IS NOT NULL THEN start_ns - (SELECT "
             "MIN(a.start_ns) FROM events a WHERE a.process = e.process AND a.correlation = "
             "e.correlation AND a.kind = %d) END FROM events e WHERE id BETWEEN ? AND ?",
             kp_event_kind_ids(KP_EVENT_F_DEVICE, device, sizeof device), KP_EVENT_API);
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int64(q, 1, lo);
    sqlite3_bind_int64(q, 2, hi);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int kind = sqlite3_column_int(q, 0);
        int64_t pid = sqlite3_column_int64(q, 1), tid = sqlite3_column_int64(q, 2);
        int64_t t_start = kp_ns_diff(sqlite3_column_int64(q, 3), t0);
        int64_t t_dur = kp_ns_diff(sqlite3_column_int64(q, 4), sqlite3_column_int64(q, 3));
        int has_corr = sqlite3_column_type(q, 5) != SQLITE_NULL;
        int64_t corr = sqlite3_column_int64(q, 5);
        int64_t name_id = sqlite3_column_int64(q, 8);
        const kp_str *name = name_id > 0 && name_id < nnames && names[name_id].data
                                 ? &names[name_id]
                                 : &kp_unknown_name;
        unsigned flags = kp_event_kind_flags(kind);
        int device_op = (flags & KP_EVENT_F_DEVICE) != 0;
        int instant = (flags & KP_EVENT_F_INSTANT) != 0;
        const char *cat = kp_event_kind_category(kind);
        if (!cat) cat = "other";
        int64_t epid = device_op ? kp_gpu_pid(pid, sqlite3_column_int64(q, 6)) : pid;
        int64_t etid = device_op ? sqlite3_column_int64(q, 7) : tid;
        KP_PUT_LIT(f, ",\n");
        kp_put(f, instant ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"" : "{\"ph\":\"X\",\"cat\":\"");
        kp_put(f, cat);
        KP_PUT_LIT(f, "\",\"pid\":");
        kp_put_i64(f, epid);
        KP_PUT_LIT(f, ",\"tid\":");
        kp_put_i64(f, etid);
        KP_PUT_LIT(f, ",\"ts\":");
        kp_put_us(f, t_start);
        if (!instant) {
            KP_PUT_LIT(f, ",\"dur\":");
            kp_put_us(f, t_dur);
        }
        KP_PUT_LIT(f, ",\"name\":");
        kp_out_bytes(f, name->data, name->len);
        if (instant) {
            KP_PUT_LIT(f, "}");
            continue;
        }
        /* Correlations are numbered per collector: a process image is the scope. */
        uint64_t flow = has_corr ? kp_flow_id(sqlite3_column_int64(q, 21), corr) : 0;
        int launched_by = has_corr && device_op; /* the call that launched it is known */
        int has_grid = kind == KP_EVENT_KERNEL && sqlite3_column_type(q, 9) != SQLITE_NULL;
        int has_bytes = sqlite3_column_type(q, 18) != SQLITE_NULL;
        int has_range = kind == KP_EVENT_RANGE && sqlite3_column_type(q, 19) != SQLITE_NULL;
        int has_waits = device_op && (sqlite3_column_type(q, 22) != SQLITE_NULL ||
                                      sqlite3_column_type(q, 23) != SQLITE_NULL ||
                                      sqlite3_column_type(q, 24) != SQLITE_NULL);
        if (launched_by) {
            KP_PUT_LIT(f, ",\"bind_id\":");
            kp_put_u64(f, flow);
            KP_PUT_LIT(f, ",\"flow_in\":true");
        } else if (has_corr && kind == KP_EVENT_API && sqlite3_column_int(q, 20)) {
            KP_PUT_LIT(f, ",\"bind_id\":");
            kp_put_u64(f, flow);
            KP_PUT_LIT(f, ",\"flow_out\":true");
        }
        /* Only what the event has: an empty args object would cost 10 bytes a million times. */
        if (!launched_by && !has_grid && !has_bytes && !has_range && !has_waits) {
            KP_PUT_LIT(f, "}");
            continue;
        }
        KP_PUT_LIT(f, ",\"args\":{");
        const char *sep = "";
        /* A call's correlation is in its flow; device work carries it for people to read. */
        if (launched_by) {
            KP_PUT_LIT(f, "\"correlation\":");
            kp_put_i64(f, corr);
            sep = ",";
        }
        if (has_grid && sqlite3_column_int64(q, 12) == 0) {
            /* No local size: the runtime chose the groups, which no query reveals; grid holds
             * the work-items. What is not known is null, not a made-up number. */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"grid\":null,\"block\":null,\"global_size\":[");
            for (int c = 0; c < 3; c++) {
                if (c) KP_PUT_LIT(f, ",");
                kp_put_i64(f, sqlite3_column_int64(q, 9 + c));
            }
            KP_PUT_LIT(f, "]");
            sep = ",";
        } else if (has_grid) {
            static const char *const keys[] = {"\"grid\":[", ",", ",", "],\"block\":[", ",", ","};
            kp_put(f, sep);
            for (int c = 0; c < 6; c++) {
                kp_put(f, keys[c]);
                kp_put_i64(f, sqlite3_column_int64(q, 9 + c));
            }
            KP_PUT_LIT(f, "]");
            sep = ",";
        }
        if (has_grid && sqlite3_column_type(q, 15) != SQLITE_NULL) { /* OpenCL: unknown */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"registers\":");
            kp_put_i64(f, sqlite3_column_int64(q, 15));
            sep = ",";
        }
        if (has_grid && sqlite3_column_type(q, 16) != SQLITE_NULL &&
            sqlite3_column_type(q, 17) != SQLITE_NULL) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"shared_bytes\":");
            kp_put_i64(f, kp_i64_add_sat(sqlite3_column_int64(q, 16), sqlite3_column_int64(q, 17)));
            sep = ",";
        }
        /* Launch latency and queue waits, where the trace has them. */
        static const char *const waits[] = {
            "\"queued_to_start_us\":", "\"submitted_to_start_us\":", "\"launch_to_start_us\":"};
        for (int c = 0; has_waits && c < 3; c++) {
            if (sqlite3_column_type(q, 22 + c) == SQLITE_NULL) continue;
            kp_put(f, sep);
            kp_put(f, waits[c]);
            int64_t ns = sqlite3_column_int64(q, 22 + c);
            kp_put_us(f, ns == INT64_MIN ? INT64_MIN + 1 : ns); /* kp_put_us negates */
            sep = ",";
        }
        if (has_bytes) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"bytes\":");
            kp_put_i64(f, sqlite3_column_int64(q, 18));
            sep = ",";
        }
        if (has_range) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"range_id\":");
            kp_put_i64(f, sqlite3_column_int64(q, 19));
        }
        KP_PUT_LIT(f, "}}");
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The upper half of the events, on a second connection and core, into memory (a temporary file
 * cost a fifth of the export in the kernel's copies: written once, read back, written again). */
typedef struct kp_chrome_half {
    const char *path;
    int64_t lo, hi, t0, nnames;
    const kp_str *names;
    kp_out out; /* no FILE: it keeps everything */
    int failed;
    int code; /* SQLite's error code when failed */
    char why[256];
} kp_chrome_half;

static void *kp_chrome_half_run(void *p)
{
    kp_chrome_half *h = p;
    sqlite3 *db = NULL;
    h->failed = 1;
    if (sqlite3_open_v2(h->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) ==
        SQLITE_OK) {
        h->failed = kp_chrome_events(db, h->lo, h->hi, h->names, h->nnames, h->t0, &h->out) != 0;
    }
    snprintf(h->why, sizeof h->why, "%s", db ? sqlite3_errmsg(db) : "cannot open the trace");
    h->code = db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
    sqlite3_close(db);
    return NULL;
}

kprof_status kp_export_chrome(sqlite3 *db, FILE *f, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    int64_t t0 = kp_trace_db_meta_int(db, "start_ns");
    if (t0 == 0) t0 = kp_trace_db_scalar(db, "SELECT MIN(start_ns) FROM events", 0);
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"kprof " KPROF_VERSION_STRING
          "\"},\"traceEvents\":[\n",
          f);
    /* Events always follow a process's name record (every event has a process row), so the
     * event writers can start every record with ",\n". */
    int first = 1;
#define KP_SEP() (first ? (first = 0, "") : ",\n")

    /* Names: processes, their threads, GPU tracks. */
    if (sqlite3_prepare_v2(db, "SELECT pid, command FROM processes GROUP BY pid", -1, &q, NULL) !=
        SQLITE_OK)
        return kp_chrome_fail(db, err);
    while (sqlite3_step(q) == SQLITE_ROW) {
        char name[600];
        snprintf(name, sizeof name, "%lld %s", (long long)sqlite3_column_int64(q, 0),
                 (const char *)sqlite3_column_text(q, 1));
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":",
                KP_SEP(), (long long)sqlite3_column_int64(q, 0));
        kp_quote(f, name);
        fputs("}}", f);
    }
    sqlite3_finalize(q);
    char sql[256], kinds[64];
    snprintf(sql, sizeof sql, "SELECT DISTINCT pid, tid FROM events WHERE kind IN (%s)",
             kp_event_kind_ids(KP_EVENT_F_HOST_THREAD, kinds, sizeof kinds));
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) return kp_chrome_fail(db, err);
    while (sqlite3_step(q) == SQLITE_ROW)
        fprintf(f,
                "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{"
                "\"name\":\"host thread %lld\"}}",
                KP_SEP(), (long long)sqlite3_column_int64(q, 0),
                (long long)sqlite3_column_int64(q, 1), (long long)sqlite3_column_int64(q, 1));
    sqlite3_finalize(q);
    snprintf(sql, sizeof sql, "SELECT DISTINCT pid, device, stream FROM events WHERE kind IN (%s)",
             kp_event_kind_ids(KP_EVENT_F_DEVICE, kinds, sizeof kinds));
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) return kp_chrome_fail(db, err);
    int64_t last_gpu = -1;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(q, 0), dev = sqlite3_column_int64(q, 1);
        int64_t stream = sqlite3_column_int64(q, 2), gp = kp_gpu_pid(pid, dev);
        if (gp != last_gpu)
            fprintf(f,
                    "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":"
                    "\"GPU %lld (pid %lld)\"}}",
                    KP_SEP(), (long long)gp, (long long)dev, (long long)pid);
        last_gpu = gp;
        fprintf(f,
                "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{"
                "\"name\":\"stream %lld\"}}",
                KP_SEP(), (long long)gp, (long long)stream, (long long)stream);
    }
    sqlite3_finalize(q);

    /* Events in storage order (the format needs no order), names by id. */
    int64_t nnames = kp_trace_db_string_slots(db);
    kp_str *names = calloc((size_t)(nnames > 0 ? nnames : 1), sizeof *names);
    if (!names) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    if (sqlite3_prepare_v2(db, "SELECT id, text FROM strings", -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (id >= 0 && id < nnames) {
                kp_json_quote(&names[id], (const char *)sqlite3_column_text(q, 1));
            }
        }
    }
    sqlite3_finalize(q);
    kprof_status st = KPROF_OK;
    int64_t max_id = kp_trace_db_scalar(db, "SELECT COALESCE(MAX(id), 0) FROM events", 0);
    /* Two halves on two cores when the trace is large: the export is CPU-bound. */
    kp_chrome_half half = {.path = sqlite3_db_filename(db, "main"), .lo = max_id / 2 + 1,
                           .hi = max_id, .t0 = t0, .nnames = nnames, .names = names};
    pthread_t worker;
    int threaded = max_id > 200000 && half.path && *half.path &&
                   pthread_create(&worker, NULL, kp_chrome_half_run, &half) == 0;
    kp_out main_out = {.f = f};
    if (kp_chrome_events(db, 1, threaded ? max_id / 2 : max_id, names, nnames, t0, &main_out) !=
        0)
        st = kp_chrome_fail(db, err);
    kp_out_drain(&main_out);
    if (main_out.failed && st == KPROF_OK) st = kp_error_set(err, KPROF_NOMEM, "out of memory");
    if (threaded) {
        pthread_join(worker, NULL);
        if (half.failed && st == KPROF_OK)
            st = kp_trace_db_read_error(half.path, half.code, half.why, err);
        if (half.out.failed && st == KPROF_OK)
            st = kp_error_set(err, KPROF_NOMEM, "out of memory for the export's second half");
        if (st == KPROF_OK && half.out.len) fwrite_unlocked(half.out.buf, 1, half.out.len, f);
    }
    free(main_out.buf);
    free(half.out.buf);
    for (int64_t i = 0; i < nnames; i++)
        kp_str_free(&names[i]);
    free(names);
    if (st != KPROF_OK) return st;
    fputs("\n]}\n", f);
#undef KP_SEP
    return ferror(f) ? kp_error_set(err, KPROF_IO, "writing the export failed") : KPROF_OK;
}
