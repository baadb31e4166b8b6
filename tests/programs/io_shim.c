/*
 * io_shim.c — an LD_PRELOAD library for the trace-integrity tests: it does something to kprof at
 * a point that depends only on what kprof does, never on timing.
 *
 *   KPROF_SHIM_AT      read:N  at the Nth pread of $KPROF_SHIM_FILE (past the checks of opening
 *                              a trace: in the middle of reading it)
 *                      write   at the first fwrite of 64 KiB or more (the Chrome export writing
 *                              its events, in the middle of its work)
 *   KPROF_SHIM_ACTION  shrink  truncate $KPROF_SHIM_FILE to an eighth, as another process
 *                              cutting the file would (a reader that maps the file then touches
 *                              pages that are gone and dies of SIGBUS)
 *                      pause   create $KPROF_SHIM_READY and wait for a signal, so a test can
 *                              signal kprof while it is inside its work
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static int shim_done;
static long shim_reads;

/* 1 when fd is $KPROF_SHIM_FILE. */
static int shim_is_target(int fd)
{
    const char *path = getenv("KPROF_SHIM_FILE");
    struct stat a, b;
    return path && fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static void shim_act(void)
{
    if (shim_done) return;
    shim_done = 1;
    const char *action = getenv("KPROF_SHIM_ACTION");
    if (action && strcmp(action, "shrink") == 0) {
        const char *path = getenv("KPROF_SHIM_FILE");
        struct stat st;
        if (!path || stat(path, &st) != 0 || truncate(path, st.st_size / 8) != 0) _exit(99);
    } else if (action && strcmp(action, "pause") == 0) {
        const char *ready = getenv("KPROF_SHIM_READY");
        int fd = ready ? open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
        if (fd < 0) _exit(99);
        close(fd);
        for (;;)
            pause(); /* until a signal ends the process */
    }
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    static ssize_t (*next)(int, void *, size_t, off_t);
    if (!next) next = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    const char *at = getenv("KPROF_SHIM_AT");
    if (!shim_done && at && strncmp(at, "read:", 5) == 0 && shim_is_target(fd) &&
        ++shim_reads >= atol(at + 5))
        shim_act();
    return next(fd, buf, n, off);
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    return pread64(fd, buf, n, off);
}

static void shim_on_write(size_t bytes)
{
    const char *at = getenv("KPROF_SHIM_AT");
    if (!shim_done && bytes >= 65536 && at && strcmp(at, "write") == 0) shim_act();
}

#undef fwrite_unlocked /* a macro in glibc's optimized stdio.h */
EXPORT size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
    static size_t (*next)(const void *, size_t, size_t, FILE *);
    if (!next)
        next = (size_t(*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite_unlocked");
    shim_on_write(size * n);
    return next(p, size, n, f);
}

EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    static size_t (*next)(const void *, size_t, size_t, FILE *);
    if (!next) next = (size_t(*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
    shim_on_write(size * n);
    return next(p, size, n, f);
}
