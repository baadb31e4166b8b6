/*
 * history.h — every measured result kprof reported, kept in the store (store.h, table `runs`):
 * `kprof run`, `kprof sweep` and `kprof bench` record one row each time they report a result,
 * with the device and driver, kprof's version, the kernel's source (its path and FNV-1a 64 hash),
 * the options and geometry, the git commit and dirty flag of the source's work tree, the main
 * measurement's numbers and samples, and the whole result's JSON as --json prints it.
 * `kprof history` lists them; `kprof diff` and `kprof notes` find one by reference.
 *
 * Every function opens the store and closes it before returning, so the store is never held
 * open across a measurement. Reading never creates or upgrades a store: with no store, or one of
 * schema 1, there is simply no run yet. Nothing here prints.
 */
#ifndef KP_STORE_HISTORY_H
#define KP_STORE_HISTORY_H

#include "base/error.h"
#include "base/util.h"

#include <stddef.h>
#include <stdint.h>

/* One recorded result: the row of `runs` but its samples and result JSON. Text columns that are
 * NULL in the store read as "" (git_dirty as -1). */
typedef struct kp_history_run {
    int64_t id;           /* rowid; set by kp_history_record */
    char kind[8];         /* "run" | "sweep" | "bench" */
    int64_t at;           /* unix seconds (ignored when recording: now) */
    char device[256];     /* device name */
    char backend[16];     /* "opencl" | "cuda" */
    char device_key[512]; /* backend|name|platform (kp_store_device_key) */
    char driver[128];     /* driver version */
    char kprof_version[32];
    char kernel[256];         /* the entry's name */
    char target[1024];        /* NAME or FILE as the user gave it */
    char source_path[4096];   /* the source file, absolute where it could be resolved */
    char source_hash[17];     /* 16 hex digits: FNV-1a 64 of the source file's bytes; "" unknown */
    char options[1024];       /* compiler options as given ("" none) */
    char grid[64];            /* "4096", "64x32" */
    char tg[64];              /* threadgroup, same form */
    char buffers[1024];       /* the SPEC */
    char git_commit[65];      /* HEAD of the source's work tree, or "" */
    int git_dirty;            /* 1 changed, 0 clean, -1: no work tree (git_commit "") */
    double median_ms, min_ms; /* of the main measurement */
    int64_t nsamples;         /* its sample count */
} kp_history_run;

/* Record a result; samples may be NULL (n 0). The store is opened (created, upgraded) and
 * closed here. r->id and r->at are ignored (at is now); the new row's id goes to *id_out (may be
 * NULL). IO/CORRUPT/NOMEM with the store's path and reason when it cannot be written. */
kprof_status kp_history_record(const kp_history_run *r, const double *samples, size_t n,
                               const char *result_json, int64_t *id_out, kp_error *err);

/* Runs newest first; kernel NULL for all; limit 0 for all. *out is heap (free()), *n its
 * length; with no run, *out NULL and *n 0 (OK). CORRUPT for a foreign or newer store. */
kprof_status kp_history_list(const char *kernel, int limit, kp_history_run **out, size_t *n,
                             kp_error *err);

/* Visit the runs newest first (kernel NULL: all; limit 0: all), one row at a time, with the
 * samples when with_samples (else NULL, 0). fn returns non-zero to stop. The row and samples
 * are valid during the call only. kp_history_list is this, collected. */
typedef int (*kp_history_visit)(const kp_history_run *r, const double *samples, size_t nsamples,
                                void *user);
kprof_status kp_history_each(const char *kernel, int limit, int with_samples, kp_history_visit fn,
                             void *user, kp_error *err);

/* `kprof history --json`: append to out the runs (kernel NULL: all; limit 0: all) newest first
 * as one indented JSON array, each run an object of every column of the store's `runs` but the
 * result JSON, with its samples (null when none); "" names (source_path, source_hash) and an
 * unknown git state are null. kp_history_each's errors; NOMEM when out could not grow. */
kprof_status kp_history_json(const char *kernel, int limit, kp_str *out, kp_error *err);

/* One run by reference: "17" (an id), "@0" (the newest), "@-1" (the one before), ...;
 * NOT_FOUND naming the reference when none; INVALID for a reference of another form.
 * samples/result may be NULL when not wanted; heap otherwise (*samples NULL when the run has
 * none). */
kprof_status kp_history_get(const char *ref, kp_history_run *out, double **samples,
                            size_t *nsamples, char **result_json, kp_error *err);

/* Parse a reference: *id > 0 for "17", else *back >= 0 for "@0", "@-1" (back 1), ... KPROF_OK,
 * or INVALID naming the reference and the forms it may take (exposed for tests and for commands
 * that take either a file or a run: they pass err NULL and ask only whether it is KPROF_OK). */
kprof_status kp_history_parse_ref(const char *ref, int64_t *id, int64_t *back, kp_error *err);

#endif
