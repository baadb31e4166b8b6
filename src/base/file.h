/*
 * file.h — whole files: read one (bounded), write one atomically (temp + rename, so a reader never
 * sees half a file), the check every input file passes, and recursive mkdir. Apart from util.h so
 * that util (strings, which error.c formats with) does not need error.c: these report through
 * kp_error and sit above both.
 */
#ifndef KP_BASE_FILE_H
#define KP_BASE_FILE_H

#include "base/error.h"

#include <stddef.h>

/* Read a whole regular file of at most KP_FILE_READ_MAX bytes. *out is heap, NUL-terminated;
 * *len excludes the NUL. NOT_FOUND when the file does not exist, INVALID when the path is not
 * a regular file or too large, IO on other failures. */
#define KP_FILE_READ_MAX (1ULL << 30)
kprof_status kp_file_read(const char *path, char **out, size_t *len, kp_error *err);

/* The check every input file passes before it is opened: OK for a regular file (symbolic links
 * followed); NOT_FOUND when nothing is there; INVALID naming what it is for a folder, a FIFO, a
 * device or a socket. It only stats, so a FIFO is refused without blocking. `what` names the
 * input in the message ("a trace"; NULL: "a file"). */
kprof_status kp_input_check(const char *path, const char *what, kp_error *err);

/* Write a whole file atomically: a temporary file beside it, fsync-free rename over the
 * target. On failure nothing is left at `path` that was not there before. */
kprof_status kp_file_write_atomic(const char *path, const void *data, size_t len, kp_error *err);

/* mkdir -p with mode 0777 & ~umask. */
kprof_status kp_mkdir_p(const char *path, kp_error *err);

/* Remove a folder kprof made and the files in it (one level: what a trace's record folder or a
 * capture folder holds; an entry that is a symbolic link is removed, never followed; a
 * subfolder is left, and then the folder too). Best effort: nothing is said. */
void kp_dir_remove(const char *dir);

#endif
