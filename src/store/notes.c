/*
 * notes.c — the findings log's SQL (see notes.h): add, list, search (FTS5, bm25), get, and a
 * batch import that skips notes already present, all or nothing.
 */
#include "store/notes.h"
#include "base/util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The columns every read selects, in kp_notes_row's order. */
#define KP_NOTES_COLUMNS                                                                           \
    "notes.id, notes.at, notes.text, notes.kernel, notes.device, notes.grid, notes.tg, "           \
    "notes.median_ms, notes.git_commit, notes.made_from, notes.data"

void kp_note_clear(kp_note *note)
{
    if (!note) return;
    free(note->text);
    free(note->kernel);
    free(note->device);
    free(note->grid);
    free(note->tg);
    free(note->git_commit);
    free(note->made_from);
    free(note->data);
    memset(note, 0, sizeof *note);
}

void kp_note_list_free(kp_note_list *list)
{
    if (!list) return;
    for (size_t i = 0; i < list->n; i++)
        kp_note_clear(&list->notes[i]);
    free(list->notes);
    free(list->scores);
    memset(list, 0, sizeof *list);
}

/* A heap copy of text with every ill-formed byte as U+FFFD; NULL stays NULL. NOMEM. */
static kprof_status kp_notes_utf8_copy(const char *text, char **out, kp_error *err)
{
    *out = NULL;
    if (!text) return KPROF_OK;
    kp_str s = {0};
    kp_str_append_utf8(&s, text, strlen(text));
    if (s.failed) {
        kp_str_free(&s);
        return kp_error_nomem(err);
    }
    *out = kp_str_take(&s);
    return *out ? KPROF_OK : kp_error_nomem(err);
}

kprof_status kp_note_normalize(kp_note *note, kp_error *err)
{
    char **fields[] = {&note->text, &note->kernel,     &note->device,    &note->grid,
                       &note->tg,   &note->git_commit, &note->made_from, &note->data};
    enum { NFIELDS = sizeof fields / sizeof fields[0] };
    char *copies[NFIELDS] = {0};
    for (size_t i = 0; i < NFIELDS; i++) {
        kprof_status st = kp_notes_utf8_copy(*fields[i], &copies[i], err);
        if (st != KPROF_OK) {
            for (size_t k = 0; k <= i; k++)
                free(copies[k]);
            return st;
        }
    }
    for (size_t i = 0; i < NFIELDS; i++) {
        free(*fields[i]);
        *fields[i] = copies[i];
    }
    return KPROF_OK;
}

/* A note's deep copy, normalised. */
static kprof_status kp_notes_copy(const kp_note *in, kp_note *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->id = in->id;
    out->at = in->at;
    out->median_ms = in->median_ms;
    out->has_median = in->has_median;
    const char *src[] = {in->text, in->kernel,     in->device,    in->grid,
                         in->tg,   in->git_commit, in->made_from, in->data};
    char **dst[] = {&out->text, &out->kernel,     &out->device,    &out->grid,
                    &out->tg,   &out->git_commit, &out->made_from, &out->data};
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        kprof_status st = kp_notes_utf8_copy(src[i], dst[i], err);
        if (st != KPROF_OK) {
            kp_note_clear(out);
            return st;
        }
    }
    return KPROF_OK;
}

static kprof_status kp_notes_sql_fail(kp_store *s, kp_error *err, const char *what)
{
    return kp_store_error(s, err, what);
}

static void kp_notes_bind_text(sqlite3_stmt *q, int index, const char *text)
{
    if (text)
        sqlite3_bind_text(q, index, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, index);
}

/* A column's text as a heap copy (NULL for NULL); NOMEM. */
static kprof_status kp_notes_column_text(sqlite3_stmt *q, int col, char **out, kp_error *err)
{
    *out = NULL;
    if (sqlite3_column_type(q, col) == SQLITE_NULL) return KPROF_OK;
    const unsigned char *t = sqlite3_column_text(q, col);
    int n = sqlite3_column_bytes(q, col);
    if (!t)
        return sqlite3_errcode(sqlite3_db_handle(q)) == SQLITE_NOMEM ? kp_error_nomem(err)
                                                                     : KPROF_OK;
    *out = malloc((size_t)n + 1);
    if (!*out) return kp_error_nomem(err);
    memcpy(*out, t, (size_t)n);
    (*out)[n] = '\0';
    return KPROF_OK;
}

/* The row q is on (KP_NOTES_COLUMNS from column 0) into note; NOMEM (note left empty). */
static kprof_status kp_notes_row(sqlite3_stmt *q, kp_note *note, kp_error *err)
{
    memset(note, 0, sizeof *note);
    note->id = sqlite3_column_int64(q, 0);
    note->at = sqlite3_column_int64(q, 1);
    note->has_median = sqlite3_column_type(q, 7) != SQLITE_NULL;
    note->median_ms = note->has_median ? sqlite3_column_double(q, 7) : 0;
    const int cols[] = {2, 3, 4, 5, 6, 8, 9, 10};
    char **dst[] = {&note->text, &note->kernel,     &note->device,    &note->grid,
                    &note->tg,   &note->git_commit, &note->made_from, &note->data};
    kprof_status st = KPROF_OK;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0] && st == KPROF_OK; i++)
        st = kp_notes_column_text(q, cols[i], dst[i], err);
    if (st == KPROF_OK && !note->text) {
        note->text = calloc(1, 1); /* NOT NULL in the schema; never NULL here */
        if (!note->text) st = kp_error_nomem(err);
    }
    if (st != KPROF_OK) kp_note_clear(note);
    return st;
}

/* Step q to the end, collecting its rows (score_col >= 0: each row's score from that column). */
static kprof_status kp_notes_collect(kp_store *s, sqlite3_stmt *q, int score_col, kp_note_list *out,
                                     kp_error *err)
{
    size_t cap = 0;
    kprof_status st = KPROF_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            kp_note *notes = realloc(out->notes, ncap * sizeof *notes);
            if (!notes) goto nomem;
            out->notes = notes;
            if (score_col >= 0) {
                double *scores = realloc(out->scores, ncap * sizeof *scores);
                if (!scores) goto nomem;
                out->scores = scores;
            }
            cap = ncap;
        }
        st = kp_notes_row(q, &out->notes[out->n], err);
        if (st != KPROF_OK) return st;
        if (score_col >= 0) out->scores[out->n] = sqlite3_column_double(q, score_col);
        out->n++;
    }
    if (rc != SQLITE_DONE) st = kp_notes_sql_fail(s, err, "cannot read the notes");
    return st;
nomem:
    return kp_error_nomem(err);
}

static kprof_status kp_notes_insert(kp_store *s, const kp_note *n, int64_t *id, kp_error *err)
{
    sqlite3_stmt *q = NULL;
    const char *sql = "INSERT INTO notes (at, text, kernel, device, grid, tg, median_ms, "
                      "git_commit, made_from, data) VALUES (?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
        return kp_notes_sql_fail(s, err, "cannot add a note");
    sqlite3_bind_int64(q, 1, n->at > 0 ? n->at : (sqlite3_int64)kp_unix_now());
    kp_notes_bind_text(q, 2, n->text);
    kp_notes_bind_text(q, 3, n->kernel);
    kp_notes_bind_text(q, 4, n->device);
    kp_notes_bind_text(q, 5, n->grid);
    kp_notes_bind_text(q, 6, n->tg);
    if (n->has_median)
        sqlite3_bind_double(q, 7, n->median_ms);
    else
        sqlite3_bind_null(q, 7);
    kp_notes_bind_text(q, 8, n->git_commit);
    kp_notes_bind_text(q, 9, n->made_from);
    kp_notes_bind_text(q, 10, n->data);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return kp_notes_sql_fail(s, err, "cannot add a note");
    if (id) *id = sqlite3_last_insert_rowid(kp_store_db(s));
    return KPROF_OK;
}

kprof_status kp_notes_add(kp_store *s, const kp_note *note, int64_t *id, kp_error *err)
{
    if (!note->text || !*note->text)
        return kp_error_set(err, KPROF_INVALID, "a note needs some text");
    kp_note copy;
    kprof_status st = kp_notes_copy(note, &copy, err);
    if (st != KPROF_OK) return st;
    st = kp_notes_insert(s, &copy, id, err);
    kp_note_clear(&copy);
    return st;
}

kprof_status kp_notes_list(kp_store *s, const char *kernel, kp_note_list *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    char *key = NULL;
    kprof_status st = kp_notes_utf8_copy(kernel, &key, err);
    if (st != KPROF_OK) return st;
    sqlite3_stmt *q = NULL;
    const char *sql = key ? "SELECT " KP_NOTES_COLUMNS " FROM notes WHERE kernel = ? "
                            "ORDER BY at, id"
                          : "SELECT " KP_NOTES_COLUMNS " FROM notes ORDER BY at, id";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = kp_notes_sql_fail(s, err, "cannot read the notes");
        goto done;
    }
    if (key) sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    st = kp_notes_collect(s, q, -1, out, err);
done:
    sqlite3_finalize(q);
    free(key);
    if (st != KPROF_OK) kp_note_list_free(out);
    return st;
}

/* Whether an SQLITE_ERROR at the first step of a search is FTS5's about the words of the
 * MATCH ("fts5: syntax error near ...", "unterminated string", "no such column: X" for a
 * column filter), not about the store: a full-text index whose tables are gone fails so. */
static int kp_notes_query_error(const char *msg)
{
    return strncmp(msg, "no such table", 13) != 0 && !strstr(msg, "vtable constructor failed");
}

kprof_status kp_notes_search(kp_store *s, const char *query, kp_note_list *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    if (!query || !*query) return kp_error_set(err, KPROF_INVALID, "give words to search for");
    char *match = NULL;
    kprof_status st = kp_notes_utf8_copy(query, &match, err);
    if (st != KPROF_OK) return st;
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT " KP_NOTES_COLUMNS ", bm25(notes_fts) AS score FROM notes_fts "
                      "JOIN notes ON notes.id = notes_fts.rowid WHERE notes_fts MATCH ? "
                      "ORDER BY score, notes.id";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = kp_notes_sql_fail(s, err, "cannot search the notes");
        goto done;
    }
    sqlite3_bind_text(q, 1, match, -1, SQLITE_TRANSIENT);
    kp_error step = {0};
    st = kp_notes_collect(s, q, 11, out, &step);
    /* FTS5 reports a query it cannot parse ("fts5: syntax error near ...", "no such column")
     * as a plain SQLITE_ERROR at the first step: that is the user's query, not the store (a
     * damaged store fails otherwise, or at the prepare above). */
    if (st != KPROF_OK && sqlite3_errcode(kp_store_db(s)) == SQLITE_ERROR &&
        kp_notes_query_error(sqlite3_errmsg(kp_store_db(s))))
        st = kp_error_set(err, KPROF_INVALID,
                          "cannot search for '%s': %s (FTS5 query syntax: words, \"a phrase\", "
                          "OR, NOT, prefix*, kernel:NAME; quote a word holding other "
                          "characters: '\"tg-256\"')",
                          query, sqlite3_errmsg(kp_store_db(s)));
    else if (st != KPROF_OK)
        kp_error_move(err, &step); /* hand it over, its log included */
    kp_error_clear(&step);
done:
    sqlite3_finalize(q);
    free(match);
    if (st != KPROF_OK) kp_note_list_free(out);
    return st;
}

kprof_status kp_notes_get(kp_store *s, int64_t id, kp_note *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT " KP_NOTES_COLUMNS " FROM notes WHERE id = ?";
    if (sqlite3_prepare_v2(kp_store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
        return kp_notes_sql_fail(s, err, "cannot read the notes");
    sqlite3_bind_int64(q, 1, id);
    kprof_status st = KPROF_OK;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        st = kp_notes_row(q, out, err);
    } else if (rc == SQLITE_DONE) {
        st = kp_error_set(err, KPROF_NOT_FOUND, "no note %lld (kprof notes list shows them)",
                          (long long)id);
    } else {
        st = kp_notes_sql_fail(s, err, "cannot read the notes");
    }
    sqlite3_finalize(q);
    return st;
}

/* Whether a note with this text, time and kernel is stored (q: the import's SELECT): *present
 * 1 or 0, or the store's error. */
static kprof_status kp_notes_present(kp_store *s, sqlite3_stmt *q, const kp_note *n, int *present,
                                     kp_error *err)
{
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    sqlite3_bind_text(q, 1, n->text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 2, n->at);
    kp_notes_bind_text(q, 3, n->kernel);
    int rc = sqlite3_step(q);
    *present = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return kp_notes_sql_fail(s, err, "cannot read the notes");
    return KPROF_OK;
}

kprof_status kp_notes_import(kp_store *s, const kp_note *notes, size_t n, size_t *added,
                             kp_error *err)
{
    if (added) *added = 0;
    for (size_t i = 0; i < n; i++) {
        if (!notes[i].text || !*notes[i].text)
            return kp_error_set(err, KPROF_INVALID, "note %zu has no text", i + 1);
        if (notes[i].at <= 0)
            return kp_error_set(err, KPROF_INVALID, "note %zu has no time", i + 1);
    }
    sqlite3 *db = kp_store_db(s);
    sqlite3_stmt *q = NULL;
    kp_note copy = {0};
    size_t count = 0;
    kprof_status st = KPROF_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return kp_notes_sql_fail(s, err, "cannot start adding the notes");
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM notes WHERE text = ? AND at = ? AND kernel IS ? "
                           "LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK) {
        st = kp_notes_sql_fail(s, err, "cannot read the notes");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        st = kp_notes_copy(&notes[i], &copy, err);
        if (st != KPROF_OK) goto fail;
        int present = 0;
        st = kp_notes_present(s, q, &copy, &present, err);
        if (st != KPROF_OK) goto fail;
        if (!present) {
            st = kp_notes_insert(s, &copy, NULL, err);
            if (st != KPROF_OK) goto fail;
            count++;
        }
        kp_note_clear(&copy);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = kp_notes_sql_fail(s, err, "cannot add the notes");
        goto fail;
    }
    if (added) *added = count;
    return KPROF_OK;
fail:
    kp_note_clear(&copy);
    sqlite3_finalize(q);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}
