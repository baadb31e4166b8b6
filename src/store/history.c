/*
 * history.c — the `runs` table of kprof's store: recording a reported result, listing them,
 * finding one by reference (history.h). The only SQL about runs.
 */
#include "store/history.h"
#include "base/json.h"
#include "store/store.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The columns a kp_history_run holds, in the order kp_history_row reads them. */
#define KP_HISTORY_COLUMNS                                                                         \
    "id, kind, at, device, backend, device_key, driver, kprof_version, kernel, target, "           \
    "source_path, source_hash, options, grid, tg, buffers, git_commit, git_dirty, median_ms, "     \
    "min_ms, nsamples"
#define KP_HISTORY_NCOLUMNS 21

static kprof_status kp_history_sql_fail(kp_store *s, kp_error *err, const char *what)
{
    return kp_store_error(s, err, what);
}

/* Bind text, NULL for NULL or (when empty_is_null) "". */
static void kp_history_bind_text(sqlite3_stmt *q, int at, const char *text, int empty_is_null)
{
    if (!text || (empty_is_null && !*text))
        sqlite3_bind_null(q, at);
    else
        sqlite3_bind_text(q, at, text, -1, SQLITE_TRANSIENT);
}

/* samples as a JSON array, compact: "[0.0123,0.0125]". NULL on allocation failure. */
static char *kp_history_samples_json(const double *samples, size_t n)
{
    kp_str s = {0};
    kp_str_append(&s, "[");
    for (size_t i = 0; i < n; i++) {
        char num[40];
        kp_json_format_double(samples[i], num, sizeof num);
        if (i) kp_str_append(&s, ",");
        kp_str_append(&s, num);
    }
    kp_str_append(&s, "]");
    if (s.failed) {
        kp_str_free(&s);
        return NULL;
    }
    return kp_str_take(&s);
}

/* Run id's samples column back into doubles ("null" is NaN): CORRUPT when it is not an array of
 * numbers, NOMEM. */
static kprof_status kp_history_samples_parse(const char *text, int64_t id, double **out, size_t *n,
                                             kp_error *err)
{
    *out = NULL;
    *n = 0;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    size_t cap = 0, count = 0;
    double *v = NULL;
    if (*p++ != '[') goto bad;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ']' && count == 0) {
            p++;
            break;
        }
        double x;
        if (strncmp(p, "null", 4) == 0) {
            x = NAN;
            p += 4;
        } else {
            char *end = NULL;
            errno = 0;
            x = strtod(p, &end);
            if (end == p) goto bad;
            p = end;
        }
        if (count == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            double *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                free(v);
                return kp_error_nomem(err);
            }
            v = nv;
            cap = ncap;
        }
        v[count++] = x;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ']') {
            p++;
            break;
        }
        goto bad;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p) goto bad;
    *out = v;
    *n = count;
    return KPROF_OK;
bad:
    free(v);
    return kp_error_set(err, KPROF_CORRUPT,
                        "run %lld of the history: its samples are not a JSON array of numbers",
                        (long long)id);
}

kprof_status kp_history_record(const kp_history_run *r, const double *samples, size_t n,
                               const char *result_json, int64_t *id_out, kp_error *err)
{
    kp_store *s = NULL;
    sqlite3_stmt *q = NULL;
    char *samples_text = NULL;
    kprof_status st = kp_store_open(0, &s, err);
    if (st != KPROF_OK) return st;
    if (samples && n) {
        samples_text = kp_history_samples_json(samples, n);
        if (!samples_text) {
            st = kp_error_nomem(err);
            goto done;
        }
    }
    const char *sql =
        "INSERT INTO runs (kind, at, device, backend, device_key, driver, kprof_version, kernel, "
        "target, source_path, source_hash, options, grid, tg, buffers, git_commit, git_dirty, "
        "median_ms, min_ms, nsamples, samples, result) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = kp_history_sql_fail(s, err, "cannot record the run");
        goto done;
    }
    int no_tree = r->git_dirty < 0 || !r->git_commit[0];
    kp_history_bind_text(q, 1, r->kind, 0);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)kp_unix_now());
    kp_history_bind_text(q, 3, r->device, 0);
    kp_history_bind_text(q, 4, r->backend, 0);
    kp_history_bind_text(q, 5, r->device_key, 0);
    kp_history_bind_text(q, 6, r->driver, 0);
    kp_history_bind_text(q, 7, r->kprof_version, 0);
    kp_history_bind_text(q, 8, r->kernel, 0);
    kp_history_bind_text(q, 9, r->target, 0);
    kp_history_bind_text(q, 10, r->source_path, 1);
    kp_history_bind_text(q, 11, r->source_hash, 1);
    kp_history_bind_text(q, 12, r->options, 0);
    kp_history_bind_text(q, 13, r->grid, 0);
    kp_history_bind_text(q, 14, r->tg, 0);
    kp_history_bind_text(q, 15, r->buffers, 0);
    kp_history_bind_text(q, 16, no_tree ? NULL : r->git_commit, 0);
    if (no_tree)
        sqlite3_bind_null(q, 17);
    else
        sqlite3_bind_int(q, 17, r->git_dirty ? 1 : 0);
    sqlite3_bind_double(q, 18, r->median_ms);
    sqlite3_bind_double(q, 19, r->min_ms);
    sqlite3_bind_int64(q, 20, (sqlite3_int64)r->nsamples);
    kp_history_bind_text(q, 21, samples_text, 0);
    sqlite3_bind_text(q, 22, result_json ? result_json : "null", -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE) {
        st = kp_history_sql_fail(s, err, "cannot record the run");
        goto done;
    }
    if (id_out) *id_out = (int64_t)sqlite3_last_insert_rowid(kp_store_db(s));
done:
    sqlite3_finalize(q);
    free(samples_text);
    kp_store_close(s);
    return st;
}

static void kp_history_text(sqlite3_stmt *q, int col, char *dst, size_t n)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    kp_strlcpy(dst, t ? (const char *)t : "", n);
}

/* Read the KP_HISTORY_COLUMNS of the current row. */
static void kp_history_row(sqlite3_stmt *q, kp_history_run *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(q, 0);
    kp_history_text(q, 1, r->kind, sizeof r->kind);
    r->at = sqlite3_column_int64(q, 2);
    kp_history_text(q, 3, r->device, sizeof r->device);
    kp_history_text(q, 4, r->backend, sizeof r->backend);
    kp_history_text(q, 5, r->device_key, sizeof r->device_key);
    kp_history_text(q, 6, r->driver, sizeof r->driver);
    kp_history_text(q, 7, r->kprof_version, sizeof r->kprof_version);
    kp_history_text(q, 8, r->kernel, sizeof r->kernel);
    kp_history_text(q, 9, r->target, sizeof r->target);
    kp_history_text(q, 10, r->source_path, sizeof r->source_path);
    kp_history_text(q, 11, r->source_hash, sizeof r->source_hash);
    kp_history_text(q, 12, r->options, sizeof r->options);
    kp_history_text(q, 13, r->grid, sizeof r->grid);
    kp_history_text(q, 14, r->tg, sizeof r->tg);
    kp_history_text(q, 15, r->buffers, sizeof r->buffers);
    kp_history_text(q, 16, r->git_commit, sizeof r->git_commit);
    r->git_dirty = sqlite3_column_type(q, 17) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 17) != 0;
    if (!r->git_commit[0]) r->git_dirty = -1;
    r->median_ms = sqlite3_column_double(q, 18);
    r->min_ms = sqlite3_column_double(q, 19);
    r->nsamples = sqlite3_column_int64(q, 20);
}

/* Open the store to read: *s NULL (and OK) when there is no store, or no history in it yet. */
static kprof_status kp_history_open_read(kp_store **s, kp_error *err)
{
    kp_error e = {0};
    kprof_status st = kp_store_open(1, s, &e);
    if (st == KPROF_NOT_FOUND) {
        kp_error_clear(&e);
        *s = NULL;
        return KPROF_OK;
    }
    if (st != KPROF_OK) {
        kp_error_move(err, &e); /* the store's own message, as it is */
        return st;
    }
    if (kp_store_version(*s) < 2) { /* an empty file, or a schema-1 store: no runs yet */
        kp_store_close(*s);
        *s = NULL;
    }
    return KPROF_OK;
}

static kprof_status kp_history_samples_of(sqlite3_stmt *q, int col, int64_t id, double **out,
                                          size_t *n, kp_error *err)
{
    *out = NULL;
    *n = 0;
    const unsigned char *t = sqlite3_column_text(q, col);
    if (!t) return KPROF_OK;
    return kp_history_samples_parse((const char *)t, id, out, n, err);
}

kprof_status kp_history_each(const char *kernel, int limit, int with_samples, kp_history_visit fn,
                             void *user, kp_error *err)
{
    kp_store *s = NULL;
    sqlite3_stmt *q = NULL;
    kprof_status st = kp_history_open_read(&s, err);
    if (st != KPROF_OK || !s) return st;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT " KP_HISTORY_COLUMNS ", samples FROM runs %s ORDER BY id DESC "
             "LIMIT ?",
             kernel ? "WHERE kernel = ?" : "");
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = kp_history_sql_fail(s, err, "cannot read the history");
        goto done;
    }
    int at = 1;
    if (kernel) sqlite3_bind_text(q, at++, kernel, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, at, limit > 0 ? (sqlite3_int64)limit : -1);
    for (;;) {
        int rc = sqlite3_step(q);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) {
            st = kp_history_sql_fail(s, err, "cannot read the history");
            break;
        }
        kp_history_run r;
        kp_history_row(q, &r);
        double *samples = NULL;
        size_t n = 0;
        if (with_samples) {
            st = kp_history_samples_of(q, KP_HISTORY_NCOLUMNS, r.id, &samples, &n, err);
            if (st != KPROF_OK) break;
        }
        int stop = fn(&r, samples, n, user);
        free(samples);
        if (stop) break;
    }
done:
    sqlite3_finalize(q);
    kp_store_close(s);
    return st;
}

typedef struct kp_history_collect {
    kp_history_run *runs;
    size_t n, cap;
    int failed;
} kp_history_collect;

static int kp_history_collect_one(const kp_history_run *r, const double *samples, size_t n,
                                  void *user)
{
    (void)samples;
    (void)n;
    kp_history_collect *c = user;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        kp_history_run *runs = realloc(c->runs, cap * sizeof *runs);
        if (!runs) {
            c->failed = 1;
            return 1;
        }
        c->runs = runs;
        c->cap = cap;
    }
    c->runs[c->n++] = *r;
    return 0;
}

kprof_status kp_history_list(const char *kernel, int limit, kp_history_run **out, size_t *n,
                             kp_error *err)
{
    kp_history_collect c = {0};
    *out = NULL;
    *n = 0;
    kprof_status st = kp_history_each(kernel, limit, 0, kp_history_collect_one, &c, err);
    if (st == KPROF_OK && c.failed) st = kp_error_nomem(err);
    if (st != KPROF_OK) {
        free(c.runs);
        return st;
    }
    *out = c.runs;
    *n = c.n;
    return KPROF_OK;
}

/* Whether p is a count: digits only, no sign, no leading junk, at most INT64_MAX; 1 with the
 * value in *out, else 0 (kp_history_parse_ref says what was wrong). */
static int kp_history_parse_count(const char *p, int64_t *out)
{
    if (!*p) return 0;
    int64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (v > (INT64_MAX - (*p - '0')) / 10) return 0;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 1;
}

kprof_status kp_history_parse_ref(const char *ref, int64_t *id, int64_t *back, kp_error *err)
{
    *id = 0;
    *back = -1;
    int64_t v = 0;
    if (!ref) goto bad;
    if (ref[0] != '@') {
        if (!kp_history_parse_count(ref, id) || *id <= 0) goto bad;
        return KPROF_OK;
    }
    const char *p = ref + 1;
    int minus = *p == '-';
    if (minus) p++;
    if (!kp_history_parse_count(p, &v)) goto bad;
    if (!minus && v != 0) goto bad; /* "@3": counting goes back, @-3 */
    *back = v;
    return KPROF_OK;
bad:
    *id = 0;
    return kp_error_set(err, KPROF_INVALID,
                        "'%s' is not a run of the history: give its id (17, as kprof history "
                        "lists it) or @0 (the newest), @-1 (the one before), ...",
                        ref ? ref : "");
}

kprof_status kp_history_get(const char *ref, kp_history_run *out, double **samples,
                            size_t *nsamples, char **result_json, kp_error *err)
{
    kp_store *s = NULL;
    sqlite3_stmt *q = NULL;
    if (samples) *samples = NULL;
    if (nsamples) *nsamples = 0;
    if (result_json) *result_json = NULL;
    memset(out, 0, sizeof *out);
    int64_t id, back;
    kprof_status st = kp_history_parse_ref(ref, &id, &back, err);
    if (st != KPROF_OK) return st;
    st = kp_history_open_read(&s, err);
    if (st != KPROF_OK) return st;
    if (!s) {
        char path[4096];
        return kp_error_set(err, KPROF_NOT_FOUND,
                            "no run %s in the history: nothing is recorded yet (no history in %s)",
                            ref, kp_store_path(path, sizeof path));
    }
    const char *sql = id > 0 ? "SELECT " KP_HISTORY_COLUMNS ", samples, result FROM runs WHERE "
                               "id = ?"
                             : "SELECT " KP_HISTORY_COLUMNS ", samples, result FROM runs ORDER "
                               "BY id DESC LIMIT 1 OFFSET ?";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = kp_history_sql_fail(s, err, "cannot read the history");
        goto done;
    }
    sqlite3_bind_int64(q, 1, id > 0 ? id : back);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(q);
        q = NULL;
        /* Say how many there are, so "@-5" of three runs explains itself. */
        int64_t count = 0;
        if (sqlite3_prepare_v2(kp_store_db(s), "SELECT count(*) FROM runs", -1, &q, NULL) ==
                SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            count = sqlite3_column_int64(q, 0);
        st = kp_error_set(err, KPROF_NOT_FOUND,
                          "no run %s in the history (it holds %lld run%s; kprof history lists "
                          "them)",
                          ref, (long long)count, count == 1 ? "" : "s");
        goto done;
    }
    if (rc != SQLITE_ROW) {
        st = kp_history_sql_fail(s, err, "cannot read the history");
        goto done;
    }
    kp_history_row(q, out);
    if (samples) {
        size_t n = 0;
        st = kp_history_samples_of(q, KP_HISTORY_NCOLUMNS, out->id, samples, &n, err);
        if (st != KPROF_OK) goto done;
        if (nsamples) *nsamples = n;
    }
    if (result_json) {
        const unsigned char *t = sqlite3_column_text(q, KP_HISTORY_NCOLUMNS + 1);
        *result_json = strdup(t ? (const char *)t : "null");
        if (!*result_json) st = kp_error_nomem(err);
    }
done:
    if (st != KPROF_OK && samples) {
        free(*samples);
        *samples = NULL;
        if (nsamples) *nsamples = 0;
    }
    sqlite3_finalize(q);
    kp_store_close(s);
    return st;
}

/* ---- `kprof history --json`
 * --------------------------------------------------------------------------------- */

static void kp_history_json_text(kp_json *j, const char *key, const char *text)
{
    if (text[0])
        kp_json_string(j, key, text);
    else
        kp_json_null(j, key);
}

static int kp_history_json_add(const kp_history_run *r, const double *samples, size_t n, void *user)
{
    kp_json *j = user;
    kp_json_object_begin(j, NULL);
    kp_json_int(j, "id", r->id);
    kp_json_string(j, "kind", r->kind);
    kp_json_int(j, "at", r->at);
    kp_json_string(j, "device", r->device);
    kp_json_string(j, "backend", r->backend);
    kp_json_string(j, "device_key", r->device_key);
    kp_json_string(j, "driver", r->driver);
    kp_json_string(j, "kprof_version", r->kprof_version);
    kp_json_string(j, "kernel", r->kernel);
    kp_json_string(j, "target", r->target);
    kp_history_json_text(j, "source_path", r->source_path);
    kp_history_json_text(j, "source_hash", r->source_hash);
    kp_json_string(j, "options", r->options);
    kp_json_string(j, "grid", r->grid);
    kp_json_string(j, "tg", r->tg);
    kp_json_string(j, "buffers", r->buffers);
    if (r->git_dirty < 0 || !r->git_commit[0]) {
        kp_json_null(j, "git_commit");
        kp_json_null(j, "git_dirty");
    } else {
        kp_json_string(j, "git_commit", r->git_commit);
        kp_json_bool(j, "git_dirty", r->git_dirty);
    }
    kp_json_double(j, "median_ms", r->median_ms);
    kp_json_double(j, "min_ms", r->min_ms);
    kp_json_int(j, "nsamples", r->nsamples);
    if (samples) {
        kp_json_array_begin(j, "samples");
        for (size_t i = 0; i < n; i++)
            kp_json_double(j, NULL, samples[i]);
        kp_json_array_end(j);
    } else {
        kp_json_null(j, "samples");
    }
    kp_json_object_end(j);
    return 0;
}

kprof_status kp_history_json(const char *kernel, int limit, kp_str *out, kp_error *err)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_array_begin(&j, NULL);
    kprof_status st = kp_history_each(kernel, limit, 1, kp_history_json_add, &j, err);
    kp_json_array_end(&j);
    kprof_status written = kp_json_finish(&j);
    if (written == KPROF_NOMEM && st == KPROF_OK) st = kp_error_nomem(err);
    if (written != KPROF_OK && st == KPROF_OK)
        st = kp_error_set(err, written, "the history's JSON was left unbalanced");
    return st;
}
