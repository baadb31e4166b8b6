/*
 * outfile.h — every file kprof writes that a user names (exports, --plot, run.json and
 * sweep.json in a kernel folder, the trace of `kprof trace -o`) goes through here, so that one
 * set of rules holds everywhere (DESIGN.md, "Files"):
 *
 *   - an output is checked and opened before any work is done: a folder, a block device, a
 *     socket, an output that is one of the inputs (same device and inode), or an existing
 *     regular file without KP_OUTPUT_FORCE are refused with a clear error (INVALID, exit 2);
 *     one that cannot be written, whatever the cause — its folder missing, a path through a
 *     regular file, no permission, a read-only or full file system — is IO (exit 1), found
 *     at open where it can be (the temporary is made then) and else at commit;
 *   - a symbolic link is followed to its target (a dangling one to the file it names), and the
 *     target is what gets written: the link itself is never replaced;
 *   - a regular file (or a new one) is written to a temporary file beside it, created with
 *     O_EXCL, and renamed over the target only at kp_output_commit: the target is whole or
 *     untouched. A target that did not exist at open is not replaced if something appears there
 *     meanwhile (renameat2 RENAME_NOREPLACE where the file system has it);
 *   - `-` (standard output), FIFOs and character devices (/dev/null, /dev/full, a terminal,
 *     /dev/stdout as a pipe) are written in place: there is nothing to rename over;
 *   - every temporary still open is registered, so a signal handler can remove them all with
 *     kp_output_unlink_all (async-signal-safe).
 *
 * Not thread-safe: open, commit and abort an output from one thread (other threads may run).
 */
#ifndef KP_BASE_OUTFILE_H
#define KP_BASE_OUTFILE_H

#include "base/error.h"

#include <stddef.h>
#include <stdio.h>

/* Flags of kp_output_open. FORCE: replace an existing regular file (the user gave --force).
 * SEEKABLE: refuse '-', FIFOs and devices, for a writer that needs a regular file it can reopen
 * by name and seek in (SQLite). */
#define KP_OUTPUT_FORCE    1u
#define KP_OUTPUT_SEEKABLE 2u

typedef struct kp_output {
    char path[4096]; /* the target as resolved (a symlink followed to its target); "-" for
                        standard output */
    char tmp[4200];  /* temporary file beside it ("" when written directly) */
    int fd;          /* open for writing: the temporary, or the device/FIFO/stdout (a
                        duplicate of 1 for '-'); -1 once closed */
    int direct;      /* 1: '-', a FIFO or a character device, written in place */
    FILE *stream;    /* kp_output_stream's stdio stream over fd, or NULL */
    int write_errno; /* errno of the first failed write, 0 while none failed */
    int replaces;    /* 1: the target existed (a regular file) and --force replaces it */
    int slot;        /* the temporary's place in the signal-safe list; -1 none */
    int active;      /* 1 between a successful open and commit or abort */
} kp_output;

/* Check and open an output before any work is done (see above). flags: KP_OUTPUT_*. inputs: a
 * NULL-terminated list of the command's input paths (may be NULL); an output that is one of
 * them is refused. On failure o is left inactive (kp_output_abort is a harmless no-op) and err
 * says why: INVALID for a refused output (exit 2), IO when it cannot be written (exit 1: the
 * temporary cannot be created — a missing folder, a path through a file, permissions, a full or
 * read-only file system). */
kprof_status kp_output_open(kp_output *o, const char *path, unsigned flags,
                            const char *const *inputs, kp_error *err);

/* A stdio stream over o->fd, made once and owned by o (commit and abort close it); o must not
 * move while it is open. NULL when out of memory. The first write error's errno is kept in
 * o->write_errno, and commit reports it ("cannot write /dev/full: No space left on device"). */
FILE *kp_output_stream(kp_output *o);

/* Write all of data to o->fd (or its stream, when one was made). IO on a write error. */
kprof_status kp_output_write(kp_output *o, const void *data, size_t len, kp_error *err);

/* For a writer that writes by name (SQLite opens o->tmp itself): close o's descriptor first, so
 * closing it later cannot drop the writer's POSIX locks. The temporary stays registered and
 * commit still renames it. */
void kp_output_close_fd(kp_output *o);

/* Finish: flush and close (a write error found now is IO, naming the file and why), then
 * rename the temporary over the target. On failure the temporary is removed and the target is
 * untouched. o is inactive afterwards whatever the result. */
kprof_status kp_output_commit(kp_output *o, kp_error *err);

/* Give up: close and remove the temporary (a direct output keeps what was written). Idempotent;
 * a no-op on a zeroed or already finished kp_output. */
void kp_output_abort(kp_output *o);

/* Remove every temporary still open. Async-signal-safe (unlink only): for signal handlers and
 * for paths that leave with _exit. */
void kp_output_unlink_all(void);

/* A whole buffer as one output: open, write, commit (abort on failure). */
kprof_status kp_output_write_file(const char *path, unsigned flags, const char *const *inputs,
                                  const void *data, size_t len, kp_error *err);

/* 1 when paths a and b name one file: the same device and inode when both exist, else (neither
 * exists yet) the same name once their folders are resolved (symbolic links, "..", "./"). */
int kp_output_same_file(const char *a, const char *b);

/* The output's name for messages: its path, or "standard output" for '-'. */
const char *kp_output_name(const kp_output *o);

#endif
