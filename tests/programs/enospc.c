/*
 * enospc.c — an LD_PRELOAD shim for the trace tests that makes the scratch folder "full": once
 * KPROF_TEST_KLOG_BYTES bytes have gone to files named *.klog in this process, write(2) to them
 * writes what still fits and then fails with ENOSPC, as a full disk does. Every other write passes
 * through untouched. (A real full tmpfs is tested too where a test may mount one.)
 * KPROF_TEST_CAPTURE_BYTES does the same for the files of a capture folder being written (inside a
 * folder named .NAME@N.tmp-PID, collect/capture.h), for the `kprof trace --capture` tests.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void *, size_t);
static long long used;

/* What fd is: 1 a record file (*.klog), 2 a file in a capture folder being written, else 0. */
static int what_file(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 6) return 0;
    target[n] = '\0';
    if (strcmp(target + n - 5, ".klog") == 0) return 1;
    const char *tmp = strstr(target, ".tmp-");
    return tmp && strchr(tmp, '/') && strstr(target, "/.") && strchr(target, '@') ? 2 : 0;
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void *buf, size_t count)
{
    if (!real_write) {
        void *sym = dlsym(RTLD_NEXT, "write");
        memcpy(&real_write, &sym, sizeof sym);
    }
    const char *klog = getenv("KPROF_TEST_KLOG_BYTES"),
               *capture = getenv("KPROF_TEST_CAPTURE_BYTES");
    int what = klog || capture ? what_file(fd) : 0;
    const char *limit_text = what == 1 ? klog : what == 2 ? capture : NULL;
    if (!limit_text) return real_write(fd, buf, count);
    long long limit = atoll(limit_text), room = limit - used;
    if (room <= 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t w = real_write(fd, buf, count < (size_t)room ? count : (size_t)room);
    if (w > 0) used += w;
    return w;
}
