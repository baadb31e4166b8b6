/*
 * notes.h — what a note of the findings log (store/notes.h keeps them) is made from and how it
 * travels: a note made from a lab result (run.json, sweep.json or bench.json, read through
 * lab/result_file.h) or from a run of kprof's history (store/history.h), carrying the kernel,
 * device, grid, threadgroup, median and commit, and what else the source said in the note's
 * `data` (a JSON object); a note as JSON (`kprof notes --json`, the export file); the export
 * file written, and read back with every note checked before any is added; the documents of
 * `kprof notes ... --json`. Nothing here prints or opens the store; tools/kprof/cmd_notes.c
 * does.
 */
#ifndef KP_ANALYSIS_NOTES_H
#define KP_ANALYSIS_NOTES_H

#include "base/error.h"
#include "base/json.h"
#include "store/notes.h"

#include <stddef.h>
#include <stdint.h>

/* The export file's kind and version: an import reads this version only. */
#define KP_NOTES_FILE_KIND    "kprof-notes"
#define KP_NOTES_FILE_VERSION 1

/* A note's time for people ("2026-05-01 14:03", local time) or (iso) in ISO 8601 UTC
 * ("2026-05-01T12:03:00Z"); "" when the time cannot be shown. */
void kp_note_time(int64_t at, int iso, char *buf, size_t n);

/* Fill note's evidence (kernel, device, grid, tg, median, commit, made_from, data; its text and
 * time are the caller's) from `from`: a history reference ("17", "@0", "@-1") or else a result
 * file. A file's note keeps its real path as made_from and the commit of the work tree holding
 * it; a sweep gives its best point (or, none marked, its fastest), a bench its first point's
 * first kernel. kernel (may be NULL) must be what the source measured: INVALID otherwise (a
 * bench result: the kernel of its first point with that entry or label). CORRUPT for a file
 * that is not a result (lab/result_file.h's messages); NOT_FOUND for a run not in the history.
 * On failure the note may hold some fields: kp_note_clear it. */
kprof_status kp_note_make(const char *from, const char *kernel, kp_note *note, kp_error *err);

/* One note as a JSON object (a member of an array: no key): id (with_id; an export leaves it
 * out, ids are one store's), at, time (ISO), text, kernel, device, grid, tg, median_ms,
 * git_commit, made_from, data (the object, or the text when it is not one), and score when not
 * NULL. */
void kp_note_json(kp_json *j, const kp_note *n, int with_id, const double *score);

/* The note's data, when it is a JSON object, written indented into out (kp_json_finish's closing
 * newline included): 1; 0 when the note has no data or its data is not an object (out as it
 * was). */
int kp_note_data_json(const kp_note *n, kp_str *out);

/* The export file of these notes (kind KP_NOTES_FILE_KIND, version, kprof_version, notes
 * without ids) into doc (doc->failed when out of memory). */
void kp_notes_export_json(kp_str *doc, const kp_note_list *list);

/* The documents of `kprof notes ... --json`, each one indented JSON value ending in a newline,
 * appended to doc; NOMEM ("out of memory") when doc could not grow.
 * kp_notes_list_json (list, search): {"query" (only when query is not NULL), "count", "notes":
 * each note as kp_note_json with its id, and its score when the list has scores}. */
kprof_status kp_notes_list_json(kp_str *doc, const kp_note_list *list, const char *query,
                                kp_error *err);

/* (add, show) the one note, as kp_note_json with its id. */
kprof_status kp_note_doc_json(kp_str *doc, const kp_note *n, kp_error *err);

/* (export) {"file": where the export went, "exported": how many notes}. */
kprof_status kp_notes_exported_json(kp_str *doc, const char *file, size_t exported, kp_error *err);

/* (import) {"file", "notes": how many the file held, "added", "already_present": the rest}. */
kprof_status kp_notes_imported_json(kp_str *doc, const char *file, size_t notes, size_t added,
                                    kp_error *err);

/* Read an export file: every note into *notes (heap; *n of them; kp_note_clear each, then
 * free): CORRUPT naming the file and what is wrong (not JSON, not an export, another version,
 * a note without text or time, a member of the wrong type, data nested too deep) before any is
 * returned. */
kprof_status kp_notes_import_read(const char *path, kp_note **notes, size_t *n, kp_error *err);

#endif
