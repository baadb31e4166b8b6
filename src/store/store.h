/*
 * store.h — kprof's own SQLite database for what it learns about this machine: the measured
 * bandwidth ceiling of each device (`kprof caps --measure`), which `kprof run` reports GB/s
 * against; every measured result (`kprof history`, store/history.h); the findings log
 * (`kprof notes`).
 *
 * Location: $KPROF_STORE (a file path), else $XDG_DATA_HOME/kprof/kprof.db, else
 * ~/.local/share/kprof/kprof.db. The schema is versioned in PRAGMA user_version:
 *   1  ceilings
 *   2  + runs (with index runs_kernel), notes, notes_fts (FTS5, external content) and the
 *      three triggers that keep notes_fts in step with notes
 * Columns added to a table kprof already has do not change the version, so that an older kprof
 * (which names the columns it reads and writes) still opens the store: a read-write open adds
 * the missing ones, a read checks for them (pragma_table_info):
 *   ceilings.fma_gflops, ceilings.fma_method: the FP32 FLOP peak beside the bandwidth ceiling
 *      (the compute roof of `kprof run --counters`' roofline); NULL where not measured.
 * Version 3 was written for a while by a development build for those two columns alone: a
 * store at 3 is read as a 2 that has them, and a read-write open writes user_version 2 back
 * (so that an older kprof opens it again). A later schema must therefore skip 3 and take 4.
 * A read-write open creates the schema in a new or empty file and upgrades an older store in
 * one transaction, keeping everything in it; a read-only open reads any known version as it
 * is. A file that is not a kprof store, or a store of a newer schema than this kprof knows, is
 * refused (CORRUPT, naming which) and never modified, as is a non-empty file that does not
 * begin as SQLite does (SQLite itself reads a 1-byte file as a new database). Two kprofs
 * making one new store make it once: the schema is made in one transaction under the write
 * lock, the checks read one state of the file, and a read of an empty file waits for a writer
 * that holds the lock. The SQL lives in src/store/ alone.
 */
#ifndef KP_STORE_STORE_H
#define KP_STORE_STORE_H

#include "core/device.h"
#include "lab/ceiling.h" /* kp_ceiling, the record kept per device */

#include <stdint.h>

/* The schema this kprof writes (PRAGMA user_version). */
#define KP_STORE_SCHEMA_VERSION 2
/* The version a development build wrote for the FLOP peak's columns: read as 2 (above). */
#define KP_STORE_SCHEMA_FMA_DEV 3

typedef struct kp_store kp_store;

/* Open (creating when missing, upgrading when older) the store. readonly=1 never creates nor
 * upgrades (it may roll back a crashed writer's journal, as SQLite must): NOT_FOUND when
 * absent. INVALID when the path is not a regular file (a folder, a FIFO, a device); CORRUPT for
 * a file that is not SQLite, another program's database, a damaged one or a newer schema; IO
 * when the file cannot be opened, created or upgraded, or is locked past 5 s ("the store is
 * busy"; the message says why: a read-only place, an SQLite without FTS5). */
kprof_status kp_store_open(int readonly, kp_store **out, kp_error *err);
/* s may be NULL. */
void kp_store_close(kp_store *s);
/* The schema version of the open store (0 for an empty file opened read-only; an older
 * version where a read-only open found one; a development build's 3 reads as 2): below 2
 * there is no history to read. */
int kp_store_version(const kp_store *s);
/* The SQLite handle, for src/store's own files (history.c, notes) and nothing else. */
struct sqlite3 *kp_store_db(kp_store *s);
/* The last SQLite failure on s as one sentence naming the store and what to do; `what` says
 * what was being done ("cannot read the notes"). CORRUPT for a damaged store (a missing table
 * or column, a malformed image, a broken full-text index) or a file that is not SQLite; IO for
 * one that cannot be written, opened or created, a full disk, a lock held past 5 s. For
 * src/store's own files. */
kprof_status kp_store_error(kp_store *s, kp_error *err, const char *what);
/* The path the store is (or would be) at. Returns buf. */
char *kp_store_path(char *buf, size_t n);

/* The key of a device in the store: backend, name and platform. */
void kp_store_device_key(const kp_device_info *dev, char *buf, size_t n);

kprof_status kp_store_put_ceiling(kp_store *s, const kp_device_info *dev, const kp_ceiling *c,
                                  kp_error *err);
/* KPROF_OK and *c when a ceiling is stored for dev; NOT_FOUND when none; the store's error
 * (kp_store_error's words: CORRUPT, IO) when the ceilings cannot be read. */
kprof_status kp_store_get_ceiling(kp_store *s, const kp_device_info *dev, kp_ceiling *c,
                                  kp_error *err);

/* The ceiling for dev from the default store, without creating it: KPROF_OK found; NOT_FOUND
 * none (no store, or none stored for dev); else the store is there but cannot be read (damaged,
 * foreign, unreadable: CORRUPT or IO), *err saying why in kp_store_error's words, for a warning
 * — a measurement goes on without its ceiling. */
kprof_status kp_store_lookup_ceiling(const kp_device_info *dev, kp_ceiling *c, kp_error *err);

#endif
