/*
 * notes.h — the findings log (`kprof notes`): short texts kept in kprof's store, each carrying
 * what it was made from — the kernel, device, grid, threadgroup, median and commit of a run,
 * sweep, bench or history record — so a finding keeps its evidence beside it. Notes are found by
 * kernel, by full-text search (SQLite FTS5 over the text and the kernel, best match first) and
 * by id, and travel between stores as a JSON file (the CLI writes and reads it; here they are
 * added as a batch, all or nothing).
 *
 * The tables are the store's (store.c, schema 2): notes, and notes_fts, an external-content
 * FTS5 index kept in step by triggers. Every function takes an open store; none prints.
 *
 * Text: every string a note is given is stored as valid UTF-8 — a byte that is not well-formed
 * UTF-8 becomes U+FFFD on the way in (kp_note_normalize) — so what is stored is exactly what an
 * export writes and an import reads back, and a note found by its text, time and kernel is the
 * same note in every store.
 */
#ifndef KP_STORE_NOTES_H
#define KP_STORE_NOTES_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_note {
    int64_t id;       /* the store's id; 0 for a note not stored yet */
    int64_t at;       /* when it was written, unix seconds */
    char *text;       /* the finding, never NULL in a valid note; may hold newlines */
    char *kernel;     /* the kernel it is about, or NULL */
    char *device;     /* the device its numbers came from, or NULL */
    char *grid;       /* "1048576", "4096x4096", or NULL */
    char *tg;         /* threadgroup, "256", "16x16", or NULL */
    double median_ms; /* the median device time, ms; meaningful when has_median */
    int has_median;
    char *git_commit; /* the commit the numbers were measured at, or NULL */
    char *made_from;  /* a file path, "history:ID", or NULL */
    char *data;       /* a JSON object (text): what the note carries beyond the columns; NULL */
} kp_note;
/* Every char * of a kp_note is heap (malloc) and owned by the note: kp_note_clear frees them. */

typedef struct kp_note_list {
    kp_note *notes;
    double *scores; /* kp_notes_search: bm25 of each note (lower is a better match); else NULL */
    size_t n;
} kp_note_list;

/* Free what the note holds and zero it. NULL is fine. */
void kp_note_clear(kp_note *note);
void kp_note_list_free(kp_note_list *list); /* frees the items, zeroes the list; NULL is fine */

/* Replace every byte of the note's strings that is not well-formed UTF-8 by U+FFFD. NOMEM when
 * a string cannot be copied (the note is left as it was). Add and import do it themselves. */
kprof_status kp_note_normalize(kp_note *note, kp_error *err);

/* Store a note (normalised as above; note->id and ->at are left alone: at 0 becomes now).
 * *id (may be NULL) gets its id. INVALID when the text is empty. */
kprof_status kp_notes_add(kp_store *s, const kp_note *note, int64_t *id, kp_error *err);

/* Every note, oldest first (by time, then id); only those of kernel when it is not NULL (exact
 * match, after the same normalisation as a note's). */
kprof_status kp_notes_list(kp_store *s, const char *kernel, kp_note_list *out, kp_error *err);

/* The notes an FTS5 query matches in their text or kernel, best first (bm25, then id). The
 * query is FTS5's syntax: words (all must match), "a phrase", OR, NOT, prefix*, kernel:NAME.
 * A query FTS5 cannot parse is INVALID (exit 2), naming the query and what SQLite said. */
kprof_status kp_notes_search(kp_store *s, const char *query, kp_note_list *out, kp_error *err);

/* One note by id: NOT_FOUND naming it when there is none. */
kprof_status kp_notes_get(kp_store *s, int64_t id, kp_note *out, kp_error *err);

/* Add notes[0..n) in one transaction, skipping each already present — the same text, time and
 * kernel (both NULL counts as the same) — in the store or earlier in the batch. *added counts
 * those added (may be NULL). Every note must be valid (non-empty text, at > 0), checked before
 * any is added; on any failure nothing is added. */
kprof_status kp_notes_import(kp_store *s, const kp_note *notes, size_t n, size_t *added,
                             kp_error *err);

#endif
