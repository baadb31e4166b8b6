/*
 * enospc.c — an LD_PRELOAD shim for the trace tests that makes the scratch folder "full": once
 * KPROF_TEST_KLOG_BYTES bytes have gone to files named *.klog in this process, write(2) to them
 * writes what still fits and then fails with ENOSPC, as a full disk does. Every other write passes
 * through untouched. (A real full tmpfs is tested too where a test may mount one.)
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

static int is_klog(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 6) return 0;
    target[n] = '\0';
    return strcmp(target + n - 5, ".klog") == 0;
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void *buf, size_t count)
{
    if (!real_write) {
        void *sym = dlsym(RTLD_NEXT, "write");
        memcpy(&real_write, &sym, sizeof sym);
    }
    const char *limit_text = getenv("KPROF_TEST_KLOG_BYTES");
    if (!limit_text || !is_klog(fd)) return real_write(fd, buf, count);
    long long limit = atoll(limit_text), room = limit - used;
    if (room <= 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t w = real_write(fd, buf, count < (size_t)room ? count : (size_t)room);
    if (w > 0) used += w;
    return w;
}
