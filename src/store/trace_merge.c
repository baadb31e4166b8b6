/*
 * trace_merge.c — several trace files into one (`kprof merge`; see trace_merge.h for what is
 * merged and how hosts are put on one time base). First every input is opened with the trace
 * checks and what the merge needs to decide is read from it (meta, clock pairs, pids); then the
 * hosts and their shifts, and each input's pid shift, are decided; then the output is written
 * with one ATTACH and a few INSERT ... SELECT per input, so the rows never pass through C.
 */
#define _GNU_SOURCE
#include "store/trace_merge.h"
#include "base/util.h"
#include "store/trace_db.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- what the merge reads of each input first --------------------------------------------- */

typedef struct kp_merge_input {
    const char *path;
    dev_t dev;
    ino_t ino;
    int64_t version; /* PRAGMA user_version */
    char *command, *collectors, *host, *boot_id;
    int64_t start_ns, end_ns; /* meta; has_start/has_end say whether it said */
    int has_start, has_end;
    int64_t exit_status; /* meta; -1 unknown (absent too) */
    int64_t dropped;
    int64_t metrics; /* meta; -1 when it does not say */
    kp_clock_pair *pairs;
    size_t npairs;
    int64_t *pids; /* processes.pid, sorted, each once (0, no pid, left out) */
    size_t npids;
    size_t host_index;
    int64_t pid_shift;
    kp_merged_pid *renumbered; /* its pids given new ids instead of a shift (NULL: none; the
                                  result's renumbered owns it) */
    size_t nrenumbered;
    struct kp_merge_inner_host {       /* its hosts table: an input that is a merged trace */
        char *host, *boot_id, *inputs; /* NULL where it says none */
        int64_t offset_ns, uncertainty_ns, pairs;
        int known; /* uncertainty_ns is not NULL */
    } * inner;
    size_t ninner;
} kp_merge_input;

static void kp_merge_input_free(kp_merge_input *in)
{
    free(in->command);
    free(in->collectors);
    free(in->host);
    free(in->boot_id);
    free(in->pairs);
    free(in->pids);
    for (size_t i = 0; i < in->ninner; i++) {
        free(in->inner[i].host);
        free(in->inner[i].boot_id);
        free(in->inner[i].inputs);
    }
    free(in->inner);
}

/* A query on an input (or the output) failed: the error names the file. */
static kprof_status kp_merge_sql_error(sqlite3 *db, const char *path, kp_error *err)
{
    return kp_trace_db_read_error(path, sqlite3_extended_errcode(db), sqlite3_errmsg(db), err);
}

static char *kp_merge_strdup_col(sqlite3_stmt *q, int col)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    return strdup(t ? (const char *)t : "");
}

static char *kp_merge_strdup_or_null(sqlite3_stmt *q, int col)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    return t ? strdup((const char *)t) : NULL;
}

/* The one non-empty value of a text column that every row giving one agrees on, else "". */
static char *kp_merge_only_value(sqlite3 *db, const char *column)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT %s FROM processes WHERE %s IS NOT NULL AND %s <> '' LIMIT 2", column,
             column, column);
    sqlite3_stmt *q = NULL;
    char *value = NULL;
    int rows = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            if (rows++ == 0) value = kp_merge_strdup_col(q, 0);
        }
    }
    sqlite3_finalize(q);
    if (rows != 1) {
        free(value);
        value = NULL;
    }
    return value ? value : strdup("");
}

static int kp_merge_cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Open an input with the trace checks and read its meta, clock pairs and pids. */
static kprof_status kp_merge_read_input(kp_merge_input *in, kp_error *err)
{
    sqlite3 *db = NULL;
    kprof_status st = kp_trace_db_open(in->path, &db, err);
    if (st != KPROF_OK) return st;
    sqlite3_stmt *q = NULL;
    in->version = kp_trace_db_scalar(db, "PRAGMA user_version", 0);
    in->exit_status = -1;
    in->metrics = -1;
    int rc;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &q, NULL) != SQLITE_OK)
        goto sql_fail;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(q, 0);
        if (!key || sqlite3_column_type(q, 1) == SQLITE_NULL) continue;
        int64_t v = sqlite3_column_int64(q, 1);
        char **text = strcmp(key, "command") == 0      ? &in->command
                      : strcmp(key, "collectors") == 0 ? &in->collectors
                      : strcmp(key, "host") == 0       ? &in->host
                      : strcmp(key, "boot_id") == 0    ? &in->boot_id
                                                       : NULL;
        if (text) {
            free(*text);
            if (!(*text = kp_merge_strdup_col(q, 1))) goto nomem;
        } else if (strcmp(key, "start_ns") == 0) {
            in->start_ns = v;
            in->has_start = 1;
        } else if (strcmp(key, "end_ns") == 0) {
            in->end_ns = v;
            in->has_end = 1;
        } else if (strcmp(key, "exit_status") == 0) {
            in->exit_status = v;
        } else if (strcmp(key, "dropped") == 0) {
            in->dropped = v > 0 ? v : 0;
        } else if (strcmp(key, "metrics") == 0) {
            in->metrics = v > 0 ? v : 0;
        }
    }
    if (rc != SQLITE_DONE) goto sql_fail;
    sqlite3_finalize(q);
    q = NULL;
    int job = kp_trace_db_has_column(db, "main", "processes", "boot_id");
    /* A trace that does not say its boot in the meta: the one its processes share. */
    if ((!in->boot_id || !*in->boot_id) && job) {
        free(in->boot_id);
        in->boot_id = kp_merge_only_value(db, "boot_id");
    }
    if ((!in->host || !*in->host) && job) {
        free(in->host);
        in->host = kp_merge_only_value(db, "host");
    }
    char **texts[] = {&in->command, &in->collectors, &in->host, &in->boot_id};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        if (!*texts[i] && !(*texts[i] = strdup(""))) goto nomem;
    if (kp_trace_db_has_table(db, "main", "clocks")) {
        size_t cap = 0;
        if (sqlite3_prepare_v2(db,
                               "SELECT mono_ns, real_ns, uncertainty_ns FROM clocks "
                               "WHERE mono_ns IS NOT NULL AND real_ns IS NOT NULL ORDER BY rowid",
                               -1, &q, NULL) != SQLITE_OK)
            goto sql_fail;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (in->npairs == cap) {
                cap = cap ? cap * 2 : 16;
                kp_clock_pair *v = realloc(in->pairs, cap * sizeof *v);
                if (!v) goto nomem;
                in->pairs = v;
            }
            in->pairs[in->npairs++] = (kp_clock_pair){
                sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2)};
        }
        if (rc != SQLITE_DONE) goto sql_fail;
        sqlite3_finalize(q);
        q = NULL;
    }
    /* A merged trace: its hosts, carried into the output's (kp_merge_write_hosts). */
    if (kp_trace_db_has_table(db, "main", "hosts")) {
        size_t cap = 0;
        if (sqlite3_prepare_v2(db,
                               "SELECT host, boot_id, offset_ns, uncertainty_ns, pairs, inputs "
                               "FROM hosts ORDER BY id",
                               -1, &q, NULL) != SQLITE_OK)
            goto sql_fail;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (in->ninner == cap) {
                cap = cap ? cap * 2 : 4;
                struct kp_merge_inner_host *v = realloc(in->inner, cap * sizeof *v);
                if (!v) goto nomem;
                in->inner = v;
            }
            struct kp_merge_inner_host *h = &in->inner[in->ninner++];
            memset(h, 0, sizeof *h);
            h->host = kp_merge_strdup_or_null(q, 0);
            h->boot_id = kp_merge_strdup_or_null(q, 1);
            h->inputs = kp_merge_strdup_or_null(q, 5);
            if ((!h->host && sqlite3_column_type(q, 0) != SQLITE_NULL) ||
                (!h->boot_id && sqlite3_column_type(q, 1) != SQLITE_NULL) ||
                (!h->inputs && sqlite3_column_type(q, 5) != SQLITE_NULL))
                goto nomem;
            h->offset_ns = sqlite3_column_int64(q, 2);
            h->known = sqlite3_column_type(q, 3) != SQLITE_NULL;
            h->uncertainty_ns = sqlite3_column_int64(q, 3);
            h->pairs = sqlite3_column_int64(q, 4);
        }
        if (rc != SQLITE_DONE) goto sql_fail;
        sqlite3_finalize(q);
        q = NULL;
    }
    size_t cap = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT pid FROM processes WHERE pid IS NOT NULL AND pid <> 0",
                           -1, &q, NULL) != SQLITE_OK)
        goto sql_fail;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (in->npids == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *v = realloc(in->pids, cap * sizeof *v);
            if (!v) goto nomem;
            in->pids = v;
        }
        in->pids[in->npids++] = sqlite3_column_int64(q, 0);
    }
    if (rc != SQLITE_DONE) goto sql_fail;
    sqlite3_finalize(q);
    if (in->npids) qsort(in->pids, in->npids, sizeof *in->pids, kp_merge_cmp_i64);
    sqlite3_close(db);
    return KPROF_OK;
sql_fail:
    st = kp_merge_sql_error(db, in->path, err);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return st;
nomem:
    sqlite3_finalize(q);
    sqlite3_close(db);
    return kp_error_set(err, KPROF_NOMEM, "out of memory reading %s", in->path);
}

/* ---- hosts, shifts and pids ----------------------------------------------------------------- */

/* "12.3 µs": a duration for a person, to two or three figures. */
static void kp_merge_format_span(int64_t ns, char *out, size_t n)
{
    double v = (double)ns;
    if (ns < 1000)
        snprintf(out, n, "%" PRId64 " ns", ns);
    else if (ns < 1000000)
        snprintf(out, n, "%.1f µs", v / 1e3);
    else if (ns < 1000000000)
        snprintf(out, n, "%.1f ms", v / 1e6);
    else
        snprintf(out, n, "%.3f s", v / 1e9);
}

/* "+12.345678901 s", exact to the nanosecond. */
static void kp_merge_format_shift(int64_t ns, char *out, size_t n)
{
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(out, n, "%c%" PRIu64 ".%09" PRIu64 " s", ns < 0 ? '-' : '+', mag / 1000000000u,
             mag % 1000000000u);
}

static kprof_status kp_merge_add_note(kp_merged_trace *res, kp_str *text, kp_error *err)
{
    char **v = realloc(res->notes, (res->nnotes + 1) * sizeof *v);
    char *t = kp_str_take(text);
    if (!v || !t) {
        if (v) res->notes = v;
        free(t);
        return kp_error_nomem(err);
    }
    res->notes = v;
    res->notes[res->nnotes++] = t;
    return KPROF_OK;
}

/* How a note names a host: its name (with its boot when another host of the merge has the same
 * name), else its boot, then its inputs ("b.kprof", "b0.kprof, +3 more"). */
static void kp_merge_host_label(const kp_merged_trace *res, const kp_merge_input *inputs, size_t h,
                                kp_str *out)
{
    const kp_merged_host *host = &res->hosts[h];
    int same_name = 0;
    for (size_t i = 0; i < res->nhosts; i++)
        if (i != h && *host->host && strcmp(res->hosts[i].host, host->host) == 0) same_name = 1;
    if (*host->host) {
        kp_str_printf_escaped(out, "host %s", host->host);
        if (same_name && *host->boot_id) kp_str_printf_escaped(out, " (boot %.8s)", host->boot_id);
    } else if (*host->boot_id) {
        kp_str_printf_escaped(out, "the host of boot %.8s", host->boot_id);
    } else {
        kp_str_append(out, "an unnamed host");
    }
    kp_str_printf_escaped(out, " (%s", inputs[host->inputs[0]].path);
    if (host->ninputs > 1) kp_str_printf(out, ", +%zu more", host->ninputs - 1);
    kp_str_append(out, ")");
}

/* Group the inputs into hosts, estimate each host's offset and decide its shift; the notes that
 * say what was applied. */
static kprof_status kp_merge_plan_hosts(kp_merge_input *inputs, size_t n, size_t reference,
                                        kp_merged_trace *res, kp_error *err)
{
    res->hosts = calloc(n, sizeof *res->hosts); /* at most one per input */
    if (!res->hosts) return kp_error_nomem(err);
    for (size_t i = 0; i < n; i++) {
        size_t h = res->nhosts;
        if (*inputs[i].boot_id)
            for (size_t j = 0; j < res->nhosts; j++)
                if (strcmp(res->hosts[j].boot_id, inputs[i].boot_id) == 0) h = j;
        kp_merged_host *host = &res->hosts[h];
        if (h == res->nhosts) {
            res->nhosts++;
            host->host = strdup(inputs[i].host);
            host->boot_id = strdup(inputs[i].boot_id);
            host->inputs = calloc(n, sizeof *host->inputs);
            if (!host->host || !host->boot_id || !host->inputs) return kp_error_nomem(err);
        } else if (!*host->host && *inputs[i].host) {
            free(host->host);
            if (!(host->host = strdup(inputs[i].host))) return kp_error_nomem(err);
        }
        host->inputs[host->ninputs++] = i;
        host->pairs += inputs[i].npairs;
        inputs[i].host_index = h;
    }
    /* Each host's offset, from the pairs of all its inputs. */
    kp_clock_offset *offsets = calloc(res->nhosts, sizeof *offsets);
    int *have = calloc(res->nhosts, sizeof *have);
    if (!offsets || !have) {
        free(offsets);
        free(have);
        return kp_error_nomem(err);
    }
    kprof_status st = KPROF_OK;
    for (size_t h = 0; h < res->nhosts && st == KPROF_OK; h++) {
        kp_merged_host *host = &res->hosts[h];
        kp_clock_pair *all = malloc((host->pairs ? host->pairs : 1) * sizeof *all);
        if (!all) {
            st = kp_error_nomem(err);
            break;
        }
        size_t k = 0;
        for (size_t i = 0; i < host->ninputs; i++) {
            const kp_merge_input *in = &inputs[host->inputs[i]];
            if (in->npairs) memcpy(all + k, in->pairs, in->npairs * sizeof *all);
            k += in->npairs;
        }
        have[h] = kp_clock_offset_estimate(all, k, &offsets[h]);
        host->pairs = offsets[h].pairs; /* the usable ones */
        free(all);
    }
    size_t ref = inputs[reference].host_index;
    res->reference = reference;
    for (size_t h = 0; h < res->nhosts && st == KPROF_OK; h++) {
        kp_merged_host *host = &res->hosts[h];
        kp_str note = {0}, label = {0}, ref_label = {0};
        kp_merge_host_label(res, inputs, h, &label);
        kp_merge_host_label(res, inputs, ref, &ref_label);
        if (h == ref) {
            host->reference = host->known = 1;
            host->offset_ns = host->uncertainty_ns = 0;
        } else if (have[h] && have[ref]) {
            host->known = 1;
            host->offset_ns =
                kp_clock_offset_shift(&offsets[h], &offsets[ref], &host->uncertainty_ns);
            char shift[64], within[64];
            kp_merge_format_shift(host->offset_ns, shift, sizeof shift);
            kp_merge_format_span(host->uncertainty_ns, within, sizeof within);
            kp_str_printf(&note,
                          "%s: shifted by %s ± %s from %zu clock pairs onto the time base of "
                          "%s; assumes the hosts' CLOCK_REALTIME agree (NTP/PTP)",
                          label.data ? label.data : "", shift, within, host->pairs,
                          ref_label.data ? ref_label.data : "");
        } else {
            host->offset_ns = 0;
            host->uncertainty_ns = -1;
            int old = 1;
            for (size_t i = 0; i < host->ninputs; i++)
                if (inputs[host->inputs[i]].version >= 3) old = 0;
            if (!have[h])
                kp_str_printf(&note,
                              "%s: no clock pairs (%s): its offset from %s is unknown and taken "
                              "as 0; its times line up with the others only if it ran on the "
                              "same boot of the same host",
                              label.data ? label.data : "",
                              old ? "trace format 1 or 2 records none" : "its traces hold none",
                              ref_label.data ? ref_label.data : "");
            else
                kp_str_printf(&note,
                              "%s: not shifted: the reference, %s, has no clock pairs, so the "
                              "offset between them is unknown and taken as 0",
                              label.data ? label.data : "", ref_label.data ? ref_label.data : "");
        }
        kp_str_free(&label);
        kp_str_free(&ref_label);
        if (note.failed)
            st = kp_error_nomem(err);
        else if (note.data)
            st = kp_merge_add_note(res, &note, err);
        kp_str_free(&note);
    }
    free(offsets);
    free(have);
    return st;
}

static int kp_merge_pid_taken(const int64_t *taken, size_t n, int64_t pid)
{
    return bsearch(&pid, taken, n, sizeof *taken, kp_merge_cmp_i64) != NULL;
}

/* Each input's pids: as they are unless a pid of it is one an earlier input's process has
 * (as the output has it); then moved by the smallest k·KP_MERGE_PID_STRIDE that makes all of
 * them distinct from those, or, where that would take a pid past INT32_MAX (Perfetto's pids are
 * int32; Chrome trace readers take them as uint32), given the smallest free ids instead. A pid
 * below 0 or near the top of the int64 range is no pid: the input is refused as damaged. */
static kprof_status kp_merge_plan_pids(kp_merge_input *inputs, size_t n, kp_merged_trace *res,
                                       kp_error *err)
{
    res->ninputs = n;
    res->pid_shift = calloc(n ? n : 1, sizeof *res->pid_shift);
    res->renumbered = calloc(n ? n : 1, sizeof *res->renumbered);
    res->nrenumbered = calloc(n ? n : 1, sizeof *res->nrenumbered);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += inputs[i].npids;
    int64_t *taken = malloc((total ? total : 1) * sizeof *taken);
    if (!res->pid_shift || !res->renumbered || !res->nrenumbered || !taken) {
        free(taken);
        return kp_error_nomem(err);
    }
    /* Every pid stays clear of the int64 limit whatever an input's shift (n strides at most). */
    int64_t limit = INT64_MAX - (int64_t)(n + 1) * KP_MERGE_PID_STRIDE;
    for (size_t i = 0; i < n; i++) {
        const kp_merge_input *in = &inputs[i];
        if (in->npids && (in->pids[0] < 0 || in->pids[in->npids - 1] >= limit)) {
            free(taken);
            return kp_error_set(err, KPROF_CORRUPT,
                                "%s is damaged or truncated (pids out of range: pid %" PRId64 ")",
                                in->path, in->pids[0] < 0 ? in->pids[0] : in->pids[in->npids - 1]);
        }
    }
    size_t ntaken = 0;
    kprof_status st = KPROF_OK;
    for (size_t i = 0; i < n && st == KPROF_OK; i++) {
        kp_merge_input *in = &inputs[i];
        int64_t clash = 0;
        size_t clash_with = 0;
        int clashes = 0;
        for (size_t p = 0; p < in->npids && !clashes; p++) {
            if (!kp_merge_pid_taken(taken, ntaken, in->pids[p])) continue;
            clashes = 1;
            clash = in->pids[p];
            for (size_t j = i; j-- > 0;) { /* the first input that has it (as it has it now) */
                int found = 0;
                if (inputs[j].renumbered) {
                    for (size_t r = 0; r < inputs[j].nrenumbered && !found; r++)
                        found = inputs[j].renumbered[r].pid == clash;
                } else {
                    int64_t was = clash - inputs[j].pid_shift;
                    found = inputs[j].npids && bsearch(&was, inputs[j].pids, inputs[j].npids,
                                                       sizeof was, kp_merge_cmp_i64);
                }
                if (found) clash_with = j;
            }
        }
        kp_str note = {0};
        if (clashes) {
            /* At most INT32_MAX / STRIDE tries: past that, a pid would not fit int32. */
            int64_t top = in->pids[in->npids - 1];
            for (int64_t k = 1; top + k * KP_MERGE_PID_STRIDE <= INT32_MAX && !in->pid_shift; k++) {
                int64_t shift = k * KP_MERGE_PID_STRIDE;
                int ok = 1;
                for (size_t p = 0; p < in->npids && ok; p++)
                    ok = !kp_merge_pid_taken(taken, ntaken, in->pids[p] + shift);
                if (ok) in->pid_shift = shift;
            }
            if (in->pid_shift) {
                kp_str_printf_escaped(&note,
                                      "%s: pids shifted by +%" PRId64 " (pid %" PRId64
                                      " is also a process of %s): processes.os_pid keeps the "
                                      "pids the system gave",
                                      in->path, in->pid_shift, clash, inputs[clash_with].path);
            } else {
                /* The smallest ids no process has yet, in the pids' order. */
                in->renumbered = calloc(in->npids, sizeof *in->renumbered);
                if (!in->renumbered) {
                    st = kp_error_nomem(err);
                    break;
                }
                int64_t next = 1;
                for (size_t p = 0; p < in->npids; p++) {
                    while (kp_merge_pid_taken(taken, ntaken, next))
                        next++;
                    in->renumbered[in->nrenumbered++] = (kp_merged_pid){in->pids[p], next++};
                }
                kp_str_printf_escaped(&note,
                                      "%s: pids given the smallest free ids, from %" PRId64
                                      " (pid %" PRId64 " is also a process of %s, and a shift "
                                      "by a multiple of %d would take them past %d, the largest "
                                      "pid trace viewers read): processes.os_pid keeps the pids "
                                      "the system gave",
                                      in->path, in->renumbered[0].pid, clash,
                                      inputs[clash_with].path, KP_MERGE_PID_STRIDE, INT32_MAX);
            }
            st = note.failed ? kp_error_nomem(err) : kp_merge_add_note(res, &note, err);
            kp_str_free(&note);
        }
        res->pid_shift[i] = in->pid_shift;
        res->renumbered[i] = in->renumbered;
        res->nrenumbered[i] = in->nrenumbered;
        for (size_t p = 0; p < in->npids; p++)
            taken[ntaken++] = in->renumbered ? in->renumbered[p].pid : in->pids[p] + in->pid_shift;
        qsort(taken, ntaken, sizeof *taken, kp_merge_cmp_i64);
    }
    free(taken);
    return st;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* The output being written, and where its ids go on from. */
typedef struct kp_merge_out {
    sqlite3 *db;
    const char *path;
    int64_t next_process, next_event; /* the first free row id of each */
    kp_merged_trace *res;
} kp_merge_out;

/* The error of the statement on the output that just failed: blamed on the input being copied
 * (`path`: damaged, truncated, unreadable) unless the output could not be written (a full disk:
 * IO, naming the output) or no input was being read (path NULL). */
static kprof_status kp_merge_fail(kp_merge_out *o, const char *path, kp_error *err)
{
    int code = sqlite3_extended_errcode(o->db);
    if ((code & 0xff) == SQLITE_NOMEM) return kp_error_nomem(err);
    if ((code & 0xff) == SQLITE_FULL || !path)
        return kp_error_set(err, KPROF_IO, "cannot write %s: %s", o->path, sqlite3_errmsg(o->db));
    return kp_merge_sql_error(o->db, path, err);
}

/* Run SQL text on the output (kp_merge_fail on failure); *changes: the rows the last statement
 * wrote (changes may be NULL). */
static kprof_status kp_merge_exec(kp_merge_out *o, const char *sql, const char *path, int *changes,
                                  kp_error *err)
{
    if (sqlite3_exec(o->db, sql, NULL, NULL, NULL) != SQLITE_OK) return kp_merge_fail(o, path, err);
    if (changes) *changes = sqlite3_changes(o->db);
    return KPROF_OK;
}

/* "file:/abs/path?mode=ro", every byte but the unreserved ones percent-encoded: SQLite reads
 * the input read-only, whatever characters its name holds. */
static char *kp_merge_uri(const char *path)
{
    char *abs = realpath(path, NULL);
    if (!abs) return NULL;
    kp_str s = {0};
    kp_str_append(&s, "file:");
    for (const unsigned char *p = (const unsigned char *)abs; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p)) {
            char c[2] = {(char)*p, 0};
            kp_str_append(&s, c);
        } else {
            kp_str_printf(&s, "%%%02X", *p);
        }
    }
    kp_str_append(&s, "?mode=ro");
    free(abs);
    if (s.failed) {
        kp_str_free(&s);
        return NULL;
    }
    return kp_str_take(&s);
}

/* The events' columns as the output has them, and what an input's value becomes. */
typedef enum { KP_COL_PLAIN, KP_COL_TIME, KP_COL_PROCESS, KP_COL_PID, KP_COL_STRING } kp_col_kind;

static const struct kp_merge_column {
    const char *name;
    kp_col_kind kind;
} kp_merge_event_columns[] = {
    {"kind", KP_COL_PLAIN},         {"process", KP_COL_PROCESS},    {"pid", KP_COL_PID},
    {"tid", KP_COL_PLAIN},          {"name", KP_COL_STRING},        {"domain", KP_COL_PLAIN},
    {"start_ns", KP_COL_TIME},      {"end_ns", KP_COL_TIME},        {"queued_ns", KP_COL_TIME},
    {"submitted_ns", KP_COL_TIME},  {"correlation", KP_COL_PLAIN},  {"device", KP_COL_PLAIN},
    {"stream", KP_COL_PLAIN},       {"grid_x", KP_COL_PLAIN},       {"grid_y", KP_COL_PLAIN},
    {"grid_z", KP_COL_PLAIN},       {"block_x", KP_COL_PLAIN},      {"block_y", KP_COL_PLAIN},
    {"block_z", KP_COL_PLAIN},      {"registers", KP_COL_PLAIN},    {"static_smem", KP_COL_PLAIN},
    {"dynamic_smem", KP_COL_PLAIN}, {"local_mem", KP_COL_PLAIN},    {"bytes", KP_COL_PLAIN},
    {"copy_kind", KP_COL_PLAIN},    {"range_id", KP_COL_PLAIN},     {"status", KP_COL_PLAIN},
    {"flops", KP_COL_PLAIN},        {"metric_bytes", KP_COL_PLAIN},
};

static const struct kp_merge_column kp_merge_process_columns[] = {
    {"pid", KP_COL_PID},          {"ppid", KP_COL_PID},         {"command", KP_COL_PLAIN},
    {"collector", KP_COL_PLAIN},  {"start_ns", KP_COL_TIME},    {"end_ns", KP_COL_TIME},
    {"clean_exit", KP_COL_PLAIN}, {"events", KP_COL_PLAIN},     {"dropped", KP_COL_PLAIN},
    {"truncated", KP_COL_PLAIN},  {"launcher", KP_COL_PLAIN},   {"rank", KP_COL_PLAIN},
    {"local_rank", KP_COL_PLAIN}, {"world_size", KP_COL_PLAIN}, {"local_world_size", KP_COL_PLAIN},
    {"node", KP_COL_PLAIN},       {"restart", KP_COL_PLAIN},    {"host", KP_COL_PLAIN},
    {"boot_id", KP_COL_PLAIN},
};

/* Append "name, ..." and the SELECT's expressions for columns (from alias a) to names and
 * values; a column the input lacks is NULL. Strings go through the map, joined as s; pids
 * through temp.kp_pid_map when pid_map (the input's pids renumbered), else moved by dpid. */
static void kp_merge_columns(sqlite3 *db, const char *table, const struct kp_merge_column *cols,
                             size_t ncols, const char *a, int64_t shift, int64_t dpid, int pid_map,
                             int64_t dprocess, kp_str *names, kp_str *values)
{
    for (size_t c = 0; c < ncols; c++) {
        const char *n = cols[c].name;
        kp_str_printf(names, ", %s", n);
        if (!kp_trace_db_has_column(db, "src", table, n)) {
            kp_str_append(values, ", NULL");
            continue;
        }
        kp_col_kind kind = cols[c].kind;
        if ((kind == KP_COL_TIME && shift == 0) || (kind == KP_COL_PID && dpid == 0 && !pid_map))
            kind = KP_COL_PLAIN; /* as it is: nothing to add, row by row */
        switch (kind) {
        case KP_COL_PLAIN:
            kp_str_printf(values, ", %s.%s", a, n);
            break;
        case KP_COL_TIME:
            kp_str_printf(values, ", %s.%s + %" PRId64, a, n, shift);
            break;
        case KP_COL_PROCESS:
            kp_str_printf(values, ", %s.%s + %" PRId64, a, n, dprocess);
            break;
        case KP_COL_PID:   /* a ppid of 0 or NULL (none) stays as it is */
            if (pid_map) { /* as does one that is no process of the input */
                kp_str_printf(values,
                              ", COALESCE((SELECT new FROM temp.kp_pid_map WHERE old = %s.%s), "
                              "%s.%s)",
                              a, n, a, n);
                break;
            }
            kp_str_printf(values,
                          ", CASE WHEN %s.%s IS NULL OR %s.%s = 0 THEN %s.%s ELSE %s.%s + %" PRId64
                          " END",
                          a, n, a, n, a, n, a, n, dpid);
            break;
        case KP_COL_STRING:
            kp_str_append(values, ", s.new");
            break;
        }
    }
}

/* Two int64 of a query on the attached input: 0, or -1 with the error set. */
static kprof_status kp_merge_range(kp_merge_out *o, const char *sql, const char *path, int64_t *lo,
                                   int64_t *hi, int *any, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    *any = 0;
    if (sqlite3_prepare_v2(o->db, sql, -1, &q, NULL) != SQLITE_OK)
        return kp_merge_sql_error(o->db, path, err);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
        *lo = sqlite3_column_int64(q, 0);
        *hi = sqlite3_column_int64(q, 1);
        *any = 1;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return kp_merge_sql_error(o->db, path, err);
    return KPROF_OK;
}

/* The row id shift that moves an input's ids lo..hi to start at *next; *next moves past them.
 * CORRUPT when they cannot move (ids near the ends of the int64 range: an edited file). */
static kprof_status kp_merge_id_shift(int64_t lo, int64_t hi, int64_t *next, int64_t *delta,
                                      const char *path, const char *table, kp_error *err)
{
    int64_t last;
    if (__builtin_sub_overflow(*next, lo, delta) || __builtin_add_overflow(hi, *delta, &last) ||
        last == INT64_MAX)
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s is damaged or truncated (row ids of %s out of range)", path, table);
    *next = last + 1;
    return KPROF_OK;
}

/* A column of the attached input and what is added to it as it is copied. */
typedef struct kp_merge_move {
    const char *table, *column;
    int64_t delta;
    int time; /* a time (delta: its host's shift), else an id or a pid */
} kp_merge_move;

/* SQLite turns an integer sum that overflows into a REAL: check, with one scan per table that
 * stops at the first such value, that every value of the moved columns stays an int64 once
 * moved (a value past the bound, a REAL or TEXT one beyond it included, is out of range).
 * CORRUPT naming the input and the column when one would not: only an edited or damaged file
 * holds such times, ids or pids. */
static kprof_status kp_merge_check_moves(kp_merge_out *o, const char *path,
                                         const kp_merge_move *moves, size_t n, kp_error *err)
{
    kprof_status st = KPROF_OK;
    for (size_t i = 0; i < n && st == KPROF_OK;) {
        const char *table = moves[i].table;
        size_t end = i;
        while (end < n && strcmp(moves[end].table, table) == 0)
            end++;
        kp_str cond = {0}, which = {0}, sql = {0};
        size_t cols[16], ncols = 0;
        if (kp_trace_db_has_table(o->db, "src", table))
            for (size_t m = i; m < end && ncols < 16; m++) {
                int64_t d = moves[m].delta;
                if (d == 0 || !kp_trace_db_has_column(o->db, "src", table, moves[m].column))
                    continue;
                /* v + d overflows when v > INT64_MAX - d (d > 0), v < INT64_MIN - d (d < 0). */
                kp_str c = {0};
                kp_str_printf(&c, "%s %c %" PRId64, moves[m].column, d > 0 ? '>' : '<',
                              d > 0 ? INT64_MAX - d : INT64_MIN - d);
                kp_str_printf(&cond, "%s%s", ncols ? " OR " : "", c.data ? c.data : "");
                kp_str_printf(&which, " WHEN %s THEN %zu", c.data ? c.data : "", ncols);
                if (c.failed) cond.failed = 1;
                kp_str_free(&c);
                cols[ncols++] = m;
            }
        if (ncols)
            kp_str_printf(&sql, "SELECT CASE%s END FROM src.%s WHERE %s LIMIT 1", which.data, table,
                          cond.data);
        sqlite3_stmt *q = NULL;
        if (cond.failed || which.failed || sql.failed) {
            st = kp_error_nomem(err);
        } else if (ncols) {
            int rc = sqlite3_prepare_v2(o->db, sql.data, -1, &q, NULL);
            if (rc == SQLITE_OK) rc = sqlite3_step(q);
            if (rc == SQLITE_ROW) {
                int64_t c = sqlite3_column_int64(q, 0);
                const kp_merge_move *m = &moves[cols[c >= 0 && (size_t)c < ncols ? c : 0]];
                char by[64];
                if (m->time)
                    kp_merge_format_shift(m->delta, by, sizeof by);
                else
                    snprintf(by, sizeof by, "%+" PRId64, m->delta);
                st = kp_error_set(err, KPROF_CORRUPT,
                                  "%s is damaged or truncated (%s.%s out of range: moved by %s "
                                  "it leaves the int64 range)",
                                  path, m->table, m->column, by);
            } else if (rc != SQLITE_DONE) {
                st = kp_merge_sql_error(o->db, path, err);
            }
        }
        sqlite3_finalize(q);
        kp_str_free(&cond);
        kp_str_free(&which);
        kp_str_free(&sql);
        i = end;
    }
    return st;
}

/* Copy one input (attached as src) into the output. */
static kprof_status kp_merge_copy_input(kp_merge_out *o, const kp_merge_input *in, int64_t shift,
                                        kp_error *err)
{
    const char *path = in->path;
    kprof_status st;
    int changes = 0;
    kp_str sql = {0}, names = {0}, values = {0};
    /* Strings: interned again, and the map from the input's ids to the output's. */
    st = kp_merge_exec(o,
                       "INSERT OR IGNORE INTO main.strings (text) SELECT text FROM src.strings "
                       "ORDER BY id;"
                       "DELETE FROM temp.kp_string_map;"
                       "INSERT INTO temp.kp_string_map (old, new) SELECT s.id, m.id FROM "
                       "src.strings s JOIN main.strings m ON m.text = s.text;",
                       path, NULL, err);
    int64_t plo = 0, phi = 0, elo = 0, ehi = 0, dprocess = 0, devent = 0;
    int pany = 0, eany = 0;
    if (st == KPROF_OK)
        st = kp_merge_range(o, "SELECT MIN(id), MAX(id) FROM src.processes", path, &plo, &phi,
                            &pany, err);
    if (st == KPROF_OK && pany)
        st = kp_merge_id_shift(plo, phi, &o->next_process, &dprocess, path, "processes", err);
    if (st == KPROF_OK)
        st = kp_merge_range(o, "SELECT MIN(id), MAX(id) FROM src.events", path, &elo, &ehi, &eany,
                            err);
    if (st == KPROF_OK && eany)
        st = kp_merge_id_shift(elo, ehi, &o->next_event, &devent, path, "events", err);
    if (st != KPROF_OK) goto done;
    /* Every sum below stays an integer, the meta's start and end too. */
    int pid_map = in->renumbered != NULL;
    int64_t dpid = pid_map ? 0 : in->pid_shift;
    const kp_merge_move moves[] = {
        {"processes", "start_ns", shift, 1}, {"processes", "end_ns", shift, 1},
        {"processes", "pid", dpid, 0},       {"processes", "ppid", dpid, 0},
        {"events", "start_ns", shift, 1},    {"events", "end_ns", shift, 1},
        {"events", "queued_ns", shift, 1},   {"events", "submitted_ns", shift, 1},
        {"events", "pid", dpid, 0},          {"events", "process", dprocess, 0},
        {"metrics", "event", devent, 0},     {"clocks", "process", dprocess, 0},
        {"clocks", "mono_ns", shift, 1},     {"notes", "process", dprocess, 0},
        {"notes", "time_ns", shift, 1},
    };
    st = kp_merge_check_moves(o, path, moves, sizeof moves / sizeof *moves, err);
    int64_t moved;
    if (st == KPROF_OK && ((in->has_start && __builtin_add_overflow(in->start_ns, shift, &moved)) ||
                           (in->has_end && __builtin_add_overflow(in->end_ns, shift, &moved)))) {
        char by[64];
        kp_merge_format_shift(shift, by, sizeof by);
        st = kp_error_set(err, KPROF_CORRUPT,
                          "%s is damaged or truncated (meta start_ns or end_ns out of range: "
                          "moved by %s it leaves the int64 range)",
                          path, by);
    }
    /* Renumbered pids: the map the pid columns go through. */
    if (st == KPROF_OK) st = kp_merge_exec(o, "DELETE FROM temp.kp_pid_map", path, NULL, err);
    if (st == KPROF_OK && pid_map) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(o->db, "INSERT INTO temp.kp_pid_map (old, new) VALUES (?,?)", -1, &q,
                               NULL) != SQLITE_OK)
            st = kp_merge_fail(o, NULL, err);
        for (size_t r = 0; r < in->nrenumbered && st == KPROF_OK; r++) {
            sqlite3_reset(q);
            sqlite3_bind_int64(q, 1, in->renumbered[r].os_pid);
            sqlite3_bind_int64(q, 2, in->renumbered[r].pid);
            if (sqlite3_step(q) != SQLITE_DONE) st = kp_merge_fail(o, NULL, err);
        }
        sqlite3_finalize(q);
    }
    if (st != KPROF_OK) goto done;
    /* Processes, with the pid the system gave (a merged input's own os_pid, when it has one). */
    kp_merge_columns(o->db, "processes", kp_merge_process_columns,
                     sizeof kp_merge_process_columns / sizeof *kp_merge_process_columns, "p", shift,
                     in->pid_shift, pid_map, dprocess, &names, &values);
    kp_str_printf(&sql,
                  "INSERT INTO main.processes (id%s, os_pid) SELECT p.id + %" PRId64 "%s, %s "
                  "FROM src.processes p ORDER BY p.id",
                  names.data, dprocess, values.data,
                  kp_trace_db_has_column(o->db, "src", "processes", "os_pid")
                      ? "COALESCE(p.os_pid, p.pid)"
                      : "p.pid");
    if (sql.failed || names.failed || values.failed) goto nomem;
    st = kp_merge_exec(o, sql.data, path, &changes, err);
    o->res->processes += (uint64_t)changes;
    kp_str_free(&sql);
    kp_str_free(&names);
    kp_str_free(&values);
    if (st != KPROF_OK) goto done;
    /* Events: the bulk of it. */
    kp_merge_columns(o->db, "events", kp_merge_event_columns,
                     sizeof kp_merge_event_columns / sizeof *kp_merge_event_columns, "e", shift,
                     in->pid_shift, pid_map, dprocess, &names, &values);
    kp_str_printf(&sql,
                  "INSERT INTO main.events (id%s) SELECT e.id + %" PRId64 "%s FROM src.events e "
                  "LEFT JOIN temp.kp_string_map s ON s.old = e.name ORDER BY e.id",
                  names.data, devent, values.data);
    if (sql.failed || names.failed || values.failed) goto nomem;
    st = kp_merge_exec(o, sql.data, path, &changes, err);
    o->res->events += (uint64_t)changes;
    kp_str_free(&sql);
    if (st != KPROF_OK) goto done;
    /* Metrics (format 2 on), clocks (format 3 on) and notes. */
    if (kp_trace_db_has_table(o->db, "src", "metrics")) {
        kp_str_printf(&sql,
                      "INSERT INTO main.metrics (event, key, value) SELECT m.event + %" PRId64
                      ", s.new, m.value FROM src.metrics m LEFT JOIN temp.kp_string_map s ON "
                      "s.old = m.key ORDER BY m.rowid",
                      devent);
        st = sql.failed ? KPROF_NOMEM : kp_merge_exec(o, sql.data, path, &changes, err);
        if (st == KPROF_NOMEM) goto nomem;
        kp_str_free(&sql);
        if (st != KPROF_OK) goto done;
    }
    if (kp_trace_db_has_table(o->db, "src", "clocks")) {
        kp_str_printf(&sql,
                      "INSERT INTO main.clocks (process, mono_ns, real_ns, uncertainty_ns) "
                      "SELECT process + %" PRId64 ", mono_ns + %" PRId64 ", real_ns, "
                      "uncertainty_ns FROM src.clocks ORDER BY rowid",
                      dprocess, shift);
        st = sql.failed ? KPROF_NOMEM : kp_merge_exec(o, sql.data, path, NULL, err);
        if (st == KPROF_NOMEM) goto nomem;
        kp_str_free(&sql);
        if (st != KPROF_OK) goto done;
    }
    /* OpenCL kernels' reflection (traces since it have a kernel_info table): its process and
     * name moved as the events' are. */
    if (kp_trace_db_has_table(o->db, "src", "kernel_info")) {
        kp_str_printf(&sql,
                      "INSERT OR IGNORE INTO main.kernel_info (process, device, name, local_mem, "
                      "private_mem, max_group_size, group_multiple) SELECT k.process + %" PRId64
                      ", k.device, s.new, k.local_mem, k.private_mem, k.max_group_size, "
                      "k.group_multiple FROM src.kernel_info k LEFT JOIN temp.kp_string_map s ON "
                      "s.old = k.name ORDER BY k.rowid",
                      dprocess);
        st = sql.failed ? KPROF_NOMEM : kp_merge_exec(o, sql.data, path, NULL, err);
        if (st == KPROF_NOMEM) goto nomem;
        kp_str_free(&sql);
        if (st != KPROF_OK) goto done;
    }
    /* Notes; one of the whole trace says which input it came from ("a.kprof: ..."): an input
     * that is a merged trace says what it shifted onto its own reference. */
    kp_str prefix = {0};
    kp_str_printf_escaped(&prefix, "%s: ", path);
    char *literal = prefix.failed ? NULL : sqlite3_mprintf("%Q", prefix.data);
    kp_str_free(&prefix);
    if (!literal) goto nomem;
    kp_str_printf(&sql,
                  "INSERT INTO main.notes (process, time_ns, text) SELECT process + %" PRId64
                  ", time_ns + %" PRId64 ", CASE WHEN process IS NULL THEN %s || text ELSE text "
                  "END FROM src.notes ORDER BY rowid",
                  dprocess, shift, literal);
    sqlite3_free(literal);
    st = sql.failed ? KPROF_NOMEM : kp_merge_exec(o, sql.data, path, NULL, err);
    if (st == KPROF_NOMEM) goto nomem;
done:
    kp_str_free(&sql);
    kp_str_free(&names);
    kp_str_free(&values);
    return st;
nomem:
    kp_str_free(&sql);
    kp_str_free(&names);
    kp_str_free(&values);
    return kp_error_nomem(err);
}

/* The meta table of the output: see docs/formats/trace.md, "Merged traces". */
static kprof_status kp_merge_write_meta(kp_merge_out *o, const kp_merge_input *inputs, size_t n,
                                        kp_error *err)
{
    kp_merged_trace *res = o->res;
    kp_str command = {0}, collectors = {0}, from = {0};
    int64_t start = 0, end = 0, dropped = 0, metrics = 0, exit_status = 0;
    int have_start = 0, have_end = 0, unknown_exit = 0, failed_exit = 0, metrics_unsaid = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_merge_input *in = &inputs[i];
        int64_t shift = res->hosts[in->host_index].offset_ns;
        int seen = 0; /* commands: each once, in the order given */
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(inputs[j].command, in->command) == 0;
        if (!seen && *in->command) {
            if (command.len) kp_str_append(&command, "; ");
            kp_str_append(&command, in->command);
        }
        /* Collectors: the union, each once. */
        const char *c = in->collectors;
        while (*c) {
            size_t len = strcspn(c, ",");
            int have = 0;
            for (const char *h = collectors.data ? collectors.data : ""; *h && !have;) {
                size_t hl = strcspn(h, ",");
                have = hl == len && memcmp(h, c, len) == 0;
                h += hl + (h[hl] == ',');
            }
            if (!have && len) {
                if (collectors.len) kp_str_append(&collectors, ",");
                kp_str_append_n(&collectors, c, len);
            }
            c += len + (c[len] == ',');
        }
        if (in->has_start) {
            int64_t s = kp_i64_add_sat(in->start_ns, shift);
            if (!have_start || s < start) start = s;
            have_start = 1;
        }
        if (in->has_end) {
            int64_t e = kp_i64_add_sat(in->end_ns, shift);
            if (!have_end || e > end) end = e;
            have_end = 1;
        }
        if (in->exit_status < 0)
            unknown_exit = 1;
        else if (in->exit_status != 0 && !failed_exit) {
            exit_status = in->exit_status;
            failed_exit = 1;
        }
        dropped = kp_i64_add_sat(dropped, in->dropped);
        if (in->metrics < 0)
            metrics_unsaid = 1;
        else
            metrics = kp_i64_add_sat(metrics, in->metrics);
        if (i) kp_str_append(&from, "\n");
        kp_str_append(&from, in->path);
    }
    if (!failed_exit && unknown_exit) exit_status = -1;
    /* An input whose meta does not count its metrics (made before metrics were counted) may
     * still hold some: count what the output holds, so readers do not skip them. */
    if (metrics_unsaid)
        metrics = kp_trace_db_scalar(o->db,
                                     "SELECT (SELECT COUNT(flops) + COUNT(metric_bytes) FROM "
                                     "main.events) + (SELECT COUNT(*) FROM main.metrics)",
                                     0);
    if (!have_start) start = kp_trace_db_scalar(o->db, "SELECT MIN(start_ns) FROM main.events", 0);
    if (!have_end) end = kp_trace_db_scalar(o->db, "SELECT MAX(end_ns) FROM main.events", 0);
    if (end < start) end = start;
    res->metrics = (uint64_t)metrics;
    const kp_merged_host *ref = &res->hosts[inputs[res->reference].host_index];
    kprof_status st = KPROF_OK;
    if (command.failed || collectors.failed || from.failed) st = kp_error_nomem(err);
    kp_trace_meta_keys meta = {
        .command = command.data ? command.data : "",
        .collectors = collectors.data ? collectors.data : "",
        .start_ns = start,
        .end_ns = end,
        .exit_status = exit_status,
        .dropped = dropped,
        .metrics = metrics,
        .host = *ref->host ? ref->host : NULL,
        .boot_id = *ref->boot_id ? ref->boot_id : NULL,
        .merged_from = from.data ? from.data : "",
    };
    if (st == KPROF_OK) st = kp_trace_db_write_meta(o->db, &meta, o->path, err);
    kp_str_free(&command);
    kp_str_free(&collectors);
    kp_str_free(&from);
    return st;
}

/* The hosts table and the notes of the whole trace. */
static kprof_status kp_merge_write_hosts(kp_merge_out *o, const kp_merge_input *inputs, size_t n,
                                         kp_error *err)
{
    kp_merged_trace *res = o->res;
    sqlite3_stmt *q = NULL;
    kprof_status st = KPROF_OK;
    if (sqlite3_prepare_v2(o->db,
                           "INSERT INTO main.hosts (id, host, boot_id, offset_ns, uncertainty_ns, "
                           "pairs, inputs) VALUES (?,?,?,?,?,?,?)",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_merge_fail(o, NULL, err);
    for (size_t h = 0; h < res->nhosts && st == KPROF_OK; h++) {
        const kp_merged_host *host = &res->hosts[h];
        kp_str paths = {0};
        for (size_t i = 0; i < host->ninputs; i++) {
            if (i) kp_str_append(&paths, "\n");
            kp_str_append(&paths, inputs[host->inputs[i]].path);
        }
        if (paths.failed) {
            kp_str_free(&paths);
            st = kp_error_nomem(err);
            break;
        }
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, (int64_t)h + 1);
        if (*host->host)
            sqlite3_bind_text(q, 2, host->host, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(q, 2);
        if (*host->boot_id)
            sqlite3_bind_text(q, 3, host->boot_id, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(q, 3);
        sqlite3_bind_int64(q, 4, host->offset_ns);
        if (host->known)
            sqlite3_bind_int64(q, 5, host->uncertainty_ns);
        else
            sqlite3_bind_null(q, 5);
        sqlite3_bind_int64(q, 6, (int64_t)host->pairs);
        sqlite3_bind_text(q, 7, paths.data ? paths.data : "", -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) != SQLITE_DONE) st = kp_merge_fail(o, NULL, err);
        kp_str_free(&paths);
    }
    /* Then the hosts of each input that is a merged trace: on this merge's time base now (its
     * shift plus the one this merge gave the input, the uncertainties summed), each of their
     * inputs named through it ("m.kprof: b.kprof"). */
    int64_t id = (int64_t)res->nhosts;
    for (size_t i = 0; i < n && st == KPROF_OK; i++) {
        const kp_merge_input *in = &inputs[i];
        const kp_merged_host *outer = &res->hosts[in->host_index];
        for (size_t h = 0; h < in->ninner && st == KPROF_OK; h++) {
            const struct kp_merge_inner_host *inner = &in->inner[h];
            int64_t offset;
            if (__builtin_add_overflow(inner->offset_ns, outer->offset_ns, &offset)) {
                st = kp_error_set(err, KPROF_CORRUPT,
                                  "%s is damaged or truncated (hosts.offset_ns out of range)",
                                  in->path);
                break;
            }
            kp_str paths = {0};
            const char *line = inner->inputs ? inner->inputs : "";
            do {
                size_t len = strcspn(line, "\n");
                if (paths.len) kp_str_append(&paths, "\n");
                kp_str_printf(&paths, "%s: ", in->path);
                kp_str_append_n(&paths, line, len);
                line += len + (line[len] == '\n');
            } while (*line);
            if (paths.failed) {
                kp_str_free(&paths);
                st = kp_error_nomem(err);
                break;
            }
            sqlite3_reset(q);
            sqlite3_bind_int64(q, 1, ++id);
            if (inner->host)
                sqlite3_bind_text(q, 2, inner->host, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(q, 2);
            if (inner->boot_id)
                sqlite3_bind_text(q, 3, inner->boot_id, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(q, 3);
            sqlite3_bind_int64(q, 4, offset);
            if (inner->known && outer->known)
                sqlite3_bind_int64(q, 5,
                                   kp_i64_add_sat(inner->uncertainty_ns, outer->uncertainty_ns));
            else
                sqlite3_bind_null(q, 5);
            sqlite3_bind_int64(q, 6, inner->pairs);
            sqlite3_bind_text(q, 7, paths.data, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(q) != SQLITE_DONE) st = kp_merge_fail(o, NULL, err);
            kp_str_free(&paths);
        }
    }
    sqlite3_finalize(q);
    q = NULL;
    if (st == KPROF_OK &&
        sqlite3_prepare_v2(o->db,
                           "INSERT INTO main.notes (process, time_ns, text) VALUES "
                           "(NULL, NULL, ?)",
                           -1, &q, NULL) != SQLITE_OK)
        return kp_merge_fail(o, NULL, err);
    for (size_t i = 0; i < res->nnotes && st == KPROF_OK; i++) {
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, res->notes[i], -1, SQLITE_STATIC);
        if (sqlite3_step(q) != SQLITE_DONE) st = kp_merge_fail(o, NULL, err);
    }
    sqlite3_finalize(q);
    return st;
}

static const char kp_merge_schema[] =
    "ALTER TABLE processes ADD COLUMN os_pid INTEGER;"
    "CREATE TABLE hosts (id INTEGER PRIMARY KEY, host TEXT, boot_id TEXT, offset_ns INTEGER,"
    " uncertainty_ns INTEGER, pairs INTEGER, inputs TEXT);"
    "CREATE TEMP TABLE kp_string_map (old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE kp_pid_map (old INTEGER PRIMARY KEY, new INTEGER);";

/* Write the output from the planned inputs. */
static kprof_status kp_merge_write(const char *out_path, kp_merge_input *inputs, size_t n,
                                   kp_merged_trace *res, kp_error *err)
{
    kp_merge_out o = {.path = out_path, .next_process = 1, .next_event = 1, .res = res};
    /* URIs on (the inputs are attached read-only by URI): a name of the output's own that looks
     * like one is not taken as one. */
    kp_str name = {0};
    if (strncmp(out_path, "file:", 5) == 0) kp_str_append(&name, "./");
    kp_str_append(&name, out_path);
    if (name.failed) {
        kp_str_free(&name);
        return kp_error_nomem(err);
    }
    int rc = sqlite3_open_v2(
        name.data, &o.db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL);
    kp_str_free(&name);
    kprof_status st = KPROF_OK;
    if (rc != SQLITE_OK) {
        /* No handle at all: SQLite could not allocate one. */
        st = o.db ? kp_error_set(err, KPROF_IO, "cannot create %s: %s", out_path,
                                 sqlite3_errmsg(o.db))
                  : kp_error_nomem(err);
        sqlite3_close(o.db);
        return st;
    }
    st = kp_merge_exec(&o,
                       "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                       "PRAGMA cache_size=-131072;",
                       NULL, NULL, err);
    if (st == KPROF_OK) st = kp_trace_db_create(o.db, o.path, err);
    if (st == KPROF_OK) st = kp_merge_exec(&o, kp_merge_schema, NULL, NULL, err);
    /* A transaction per input: SQLite attaches and detaches a database only outside one. */
    for (size_t i = 0; i < n && st == KPROF_OK; i++) {
        char *uri = kp_merge_uri(inputs[i].path);
        if (!uri) {
            st = errno == ENOMEM ? kp_error_nomem(err)
                                 : kp_error_set(err, KPROF_NOT_FOUND, "%s: %s", inputs[i].path,
                                                strerror(errno));
            break;
        }
        sqlite3_stmt *q = NULL;
        rc = sqlite3_prepare_v2(o.db, "ATTACH DATABASE ? AS src", -1, &q, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(q, 1, uri, -1, SQLITE_STATIC);
            rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(o.db);
        }
        if (rc != SQLITE_OK) st = kp_merge_sql_error(o.db, inputs[i].path, err);
        sqlite3_finalize(q);
        free(uri);
        if (st != KPROF_OK) break;
        st = kp_merge_exec(&o, "BEGIN", NULL, NULL, err);
        if (st == KPROF_OK)
            st = kp_merge_copy_input(&o, &inputs[i], res->hosts[inputs[i].host_index].offset_ns,
                                     err);
        if (st == KPROF_OK)
            st = kp_merge_exec(&o, "COMMIT", NULL, NULL, err);
        else
            sqlite3_exec(o.db, "ROLLBACK", NULL, NULL, NULL);
        kprof_status detach =
            kp_merge_exec(&o, "DETACH DATABASE src", NULL, NULL, st == KPROF_OK ? err : NULL);
        if (st == KPROF_OK) st = detach;
    }
    if (st == KPROF_OK) st = kp_merge_exec(&o, "BEGIN", NULL, NULL, err);
    if (st == KPROF_OK) st = kp_merge_write_meta(&o, inputs, n, err);
    if (st == KPROF_OK) st = kp_merge_write_hosts(&o, inputs, n, err);
    if (st == KPROF_OK) st = kp_trace_db_create_index(o.db, o.path, err);
    if (st == KPROF_OK) st = kp_merge_exec(&o, "COMMIT", NULL, NULL, err);
    if (sqlite3_close(o.db) != SQLITE_OK && st == KPROF_OK)
        st = kp_error_set(err, KPROF_IO, "cannot close %s", out_path);
    return st;
}

/* ---- the merge ---------------------------------------------------------------------------- */

kprof_status kp_trace_files_merge(const char *out_path, const char *const *paths, size_t n,
                                  const char *reference, kp_merged_trace *res, kp_error *err)
{
    if (n == 0) return kp_error_set(err, KPROF_INVALID, "no trace to merge");
    kp_merge_input *inputs = calloc(n, sizeof *inputs);
    if (!inputs) return kp_error_nomem(err);
    kprof_status st = KPROF_OK;
    for (size_t i = 0; i < n && st == KPROF_OK; i++) {
        inputs[i].path = paths[i];
        st = kp_merge_read_input(&inputs[i], err);
        struct stat sb;
        if (st == KPROF_OK && stat(paths[i], &sb) != 0)
            st = kp_error_set(err, KPROF_NOT_FOUND, "%s: %s", paths[i], strerror(errno));
        if (st != KPROF_OK) break;
        inputs[i].dev = sb.st_dev;
        inputs[i].ino = sb.st_ino;
        for (size_t j = 0; j < i && st == KPROF_OK; j++)
            if (inputs[j].dev == sb.st_dev && inputs[j].ino == sb.st_ino)
                st = strcmp(paths[i], paths[j]) == 0
                         ? kp_error_set(err, KPROF_INVALID,
                                        "%s is given twice: each trace is merged once", paths[i])
                         : kp_error_set(err, KPROF_INVALID,
                                        "%s is given twice (as %s and %s): each trace is merged "
                                        "once",
                                        paths[i], paths[j], paths[i]);
    }
    size_t ref = 0;
    if (st == KPROF_OK && reference) {
        struct stat sb;
        int found = 0;
        if (stat(reference, &sb) == 0)
            for (size_t i = 0; i < n && !found; i++)
                if (inputs[i].dev == sb.st_dev && inputs[i].ino == sb.st_ino) {
                    ref = i;
                    found = 1;
                }
        if (!found)
            st = kp_error_set(err, KPROF_INVALID,
                              "--reference %s: not one of the traces merged (the reference is "
                              "the input whose host is the time base)",
                              reference);
    }
    if (st == KPROF_OK) st = kp_merge_plan_hosts(inputs, n, ref, res, err);
    if (st == KPROF_OK) st = kp_merge_plan_pids(inputs, n, res, err);
    if (st == KPROF_OK) st = kp_merge_write(out_path, inputs, n, res, err);
    for (size_t i = 0; i < n; i++)
        kp_merge_input_free(&inputs[i]);
    free(inputs);
    return st;
}

void kp_merged_trace_free(kp_merged_trace *res)
{
    if (!res) return;
    for (size_t h = 0; h < res->nhosts; h++) {
        free(res->hosts[h].host);
        free(res->hosts[h].boot_id);
        free(res->hosts[h].inputs);
    }
    free(res->hosts);
    free(res->pid_shift);
    if (res->renumbered)
        for (size_t i = 0; i < res->ninputs; i++)
            free(res->renumbered[i]);
    free(res->renumbered);
    free(res->nrenumbered);
    for (size_t i = 0; i < res->nnotes; i++)
        free(res->notes[i]);
    free(res->notes);
    memset(res, 0, sizeof *res);
}
