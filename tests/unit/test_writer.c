/* test_writer.c — the record writer that injected collectors use: records and strings reach the
 * file and read back; a crash still runs the collectors' crash hooks and flushes; a forked
 * child writes nothing of its parent's; writes that fail (a full disk) are cut off and counted,
 * and the names they defined still resolve. */
#define _GNU_SOURCE
#include "collect/reader.h"
#include "collect/writer.h"
#include "base/util.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The disk is full while this is set: write(2) — which only the writer calls in this program —
 * writes half of a large request and then fails with ENOSPC, as a full disk does. */
static int disk_full;

ssize_t write(int fd, const void *buf, size_t count)
{
    static int half_written;
    if (disk_full) {
        if (!half_written && count > 256) {
            half_written = 1;
            return syscall(SYS_write, fd, buf, count / 2);
        }
        errno = ENOSPC;
        return -1;
    }
    half_written = 0;
    return syscall(SYS_write, fd, buf, count);
}

static void crash_hook(void)
{
    kp_writer_note("crash hook ran");
}

/* Leaves a file named after the process it ran in, in $KPROF_HOOK_DIR. */
static void exit_hook(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/exit-hook-%ld", getenv("KPROF_HOOK_DIR"), (long)getpid());
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

static int count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        n += strstr(de->d_name, part) != NULL;
    if (d) closedir(d);
    return n;
}

/* The one .klog file in dir, read; 0 when there is exactly one. */
static int read_only_file(const char *dir, kp_klog *log)
{
    DIR *d = opendir(dir);
    char path[4096] = "";
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".klog")) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            n++;
        }
    }
    if (d) closedir(d);
    if (n != 1) return -1;
    kp_error err = {0};
    return kp_klog_open(path, log, &err) == KPROF_OK ? 0 : -1;
}

static int has_note(const kp_klog *log, const char *text)
{
    for (size_t i = 0; i < log->nrecords; i++) {
        if (log->records[i]->kind != KP_REC_NOTE) continue;
        size_t len;
        const char *s = kp_klog_string(log, log->records[i]->name, &len);
        if (len == strlen(text) && memcmp(s, text, len) == 0) return 1;
    }
    return 0;
}

static pid_t child(const char *dir, int crash)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    setenv("KPROF_TRACE_DIR", dir, 1);
    if (kp_writer_start("test", NULL) != KPROF_OK) _exit(3);
    kp_writer_at_crash(crash_hook);
    kp_writer_at_exit(exit_hook);
    for (int i = 0; i < 1000; i++) {
        kp_rec r = {.kind = KP_REC_KERNEL, .start = kp_now_ns(), .correlation = (uint64_t)i};
        r.end = r.start + 1;
        r.name = kp_writer_string(i % 2 ? "odd" : "even");
        kp_writer_emit(&r);
    }
    if (crash) raise(SIGSEGV);
    /* Many distinct names (NVTX ranges named per step): each is defined once, however often
     * it comes back, past the string table's first size. */
    uint32_t first = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 20000; i++) {
            char name[32];
            snprintf(name, sizeof name, "step %d", i);
            uint32_t id = kp_writer_string(name);
            if (i == 0 && round == 0) first = id;
            if (i == 0 && round == 1 && id != first) _exit(4);
        }
    }
    /* A forked grandchild that exits must not write its parent's unflushed records; one whose
     * collector starts the writer again (elsewhere) runs none of its parent's hooks. */
    pid_t g = fork();
    if (g == 0) _exit(0);
    waitpid(g, NULL, 0);
    g = fork();
    if (g == 0) {
        setenv("KPROF_TRACE_DIR", getenv("KPROF_HOOK_DIR"), 1);
        if (kp_writer_start("test", NULL) != KPROF_OK) _exit(3);
        exit(0);
    }
    waitpid(g, NULL, 0);
    exit(0); /* atexit: end record and the final flush */
}

/* A child that fills its buffer, flushes while the disk is full (the batch fails half-way),
 * then records more once there is room again, naming kernels defined in the failed batch. */
static pid_t full_disk_child(const char *dir)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    setenv("KPROF_TRACE_DIR", dir, 1);
    if (kp_writer_start("test", NULL) != KPROF_OK) _exit(3);
    for (int round = 0; round < 2; round++) {
        disk_full = round == 0;
        for (int i = 0; i < 300; i++) {
            char name[32];
            snprintf(name, sizeof name, "kernel %d", i % 100);
            kp_rec r = {.kind = KP_REC_KERNEL, .start = kp_now_ns(), .correlation = (uint64_t)i};
            r.end = r.start + 1;
            r.name = kp_writer_string(name);
            kp_writer_emit(&r);
        }
        kp_writer_dropped(7); /* counted in the header, whatever the disk */
        kp_writer_flush();
    }
    exit(0);
}

/* A writer that cannot start says why, with the status the caller acts on, and stays off. */
static void test_start_failures(const char *dir)
{
    kp_error err = {0};
    char *saved = getenv("KPROF_TRACE_DIR") ? strdup(getenv("KPROF_TRACE_DIR")) : NULL;
    unsetenv("KPROF_TRACE_DIR");
    CHECK_INT(kp_writer_start("test", &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "KPROF_TRACE_DIR is not set");
    kp_error_clear(&err);
    char missing[256];
    snprintf(missing, sizeof missing, "%s/no-such-folder", dir);
    errno = 0;
    CHECK_INT(kp_writer_start_in(missing, "test", 0, &err), KPROF_IO);
    CHECK_INT(errno, ENOENT); /* left for a caller that words the failure itself */
    CHECK_CONTAINS(err.message, "cannot write a record file in ");
    CHECK_CONTAINS(err.message, "no-such-folder: No such file or directory");
    kp_error_clear(&err);
    CHECK_INT(kp_writer_start_in("", "test", 0, &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_writer_start_in(missing, "test", 0, NULL), KPROF_IO);
    CHECK_INT(kp_writer_active(), 0);
    CHECK_INT(count_files(dir, ".klog"), 0);
    /* The reader: a folder is bad input, a missing file cannot be read. */
    kp_klog log;
    CHECK_INT(kp_klog_open(dir, &log, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "not a regular file");
    kp_error_clear(&err);
    CHECK_INT(kp_klog_open(missing, &log, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "No such file or directory");
    kp_error_clear(&err);
    if (saved) setenv("KPROF_TRACE_DIR", saved, 1);
    free(saved);
}

int main(void)
{
    char dir[] = "/tmp/kprof-writer-test-XXXXXX", hooks[] = "/tmp/kprof-writer-hooks-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(mkdtemp(hooks) != NULL);
    setenv("KPROF_HOOK_DIR", hooks, 1);
    test_start_failures(dir);
    int status = 0;
    waitpid(child(dir, 0), &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(count_files(hooks, "exit-hook-"), 1); /* the child's, not the grandchild's */
    kp_klog log;
    CHECK_INT(read_only_file(dir, &log), 0);
    size_t kernels = 0, ends = 0, headers = 0;
    for (size_t i = 0; i < log.nrecords; i++) {
        kernels += log.records[i]->kind == KP_REC_KERNEL;
        ends += log.records[i]->kind == KP_REC_END;
        headers += log.records[i]->kind == KP_REC_HEADER;
    }
    CHECK_INT(kernels, 1000);
    CHECK_INT(ends, 1);
    CHECK_INT(headers, 1);
    CHECK(log.nstrings < 20010); /* "even", "odd", the 20000 steps, the command line */
    CHECK(!log.truncated);
    size_t first = 0;
    while (first < log.nrecords && log.records[first]->kind != KP_REC_KERNEL)
        first++;
    size_t len;
    const char *name = kp_klog_string(&log, log.records[first]->name, &len);
    CHECK(len == 4 && memcmp(name, "even", 4) == 0);
    name = kp_klog_string(&log, log.records[first + 1]->name, &len);
    CHECK(len == 3 && memcmp(name, "odd", 3) == 0);
    kp_klog_close(&log);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f %s/*.klog", dir);
    CHECK_INT(system(cmd), 0);

    /* A crash: the hook runs, everything emitted is flushed, no end record, the signal stands. */
    waitpid(child(dir, 1), &status, 0);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's own SEGV handler runs after ours: it reports and exits non-zero. */
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
          (WIFEXITED(status) && WEXITSTATUS(status) != 0));
#else
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
#endif
    CHECK_INT(read_only_file(dir, &log), 0);
    kernels = ends = 0;
    for (size_t i = 0; i < log.nrecords; i++) {
        kernels += log.records[i]->kind == KP_REC_KERNEL;
        ends += log.records[i]->kind == KP_REC_END;
    }
    CHECK_INT(kernels, 1000);
    CHECK_INT(ends, 0);
    CHECK(has_note(&log, "crash hook ran"));
    kp_klog_close(&log);
    snprintf(cmd, sizeof cmd, "rm -f %s/*.klog", dir);
    CHECK_INT(system(cmd), 0);

    /* A full disk: the failed batch is cut off (the file stays whole), its 300 kernels are
     * counted as lost with the errno, the later ones are all there, and every name resolves
     * (the failed batch's definitions went out again), and the clean exit is known. */
    waitpid(full_disk_child(dir), &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(read_only_file(dir, &log), 0);
    CHECK(!log.truncated);
    kernels = 0;
    const kp_rec *header = NULL;
    int unnamed = 0;
    for (size_t i = 0; i < log.nrecords; i++) {
        const kp_rec *r = log.records[i];
        if (r->kind == KP_REC_HEADER) header = r;
        if (r->kind != KP_REC_KERNEL) continue;
        kernels++;
        kp_klog_string(&log, r->name, &len);
        unnamed += len == 0;
    }
    CHECK_INT(kernels, 300);
    CHECK_INT(unnamed, 0);
    CHECK(header != NULL);
    if (header) {
        CHECK_INT(header->queued, 300); /* lost to the failed write */
        CHECK_INT(header->status, ENOSPC);
        CHECK_INT(header->bytes, 14); /* dropped before the writer */
        CHECK(header->end != 0);
    }
    kp_klog_close(&log);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, hooks);
    CHECK_INT(system(cmd), 0);
    TEST_DONE();
}
