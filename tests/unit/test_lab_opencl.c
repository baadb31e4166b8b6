/* test_lab_opencl.c — kp_lab_sample and kp_lab_clock on a real OpenCL device (PoCL on the CPU
 * here; the session runs in a child process, so every call crosses the socket): hot and cold
 * samples are all positive, the flushes' own times too, every cold sample follows a flush of its
 * own (the flush evicted the kernel's data), both were timed by the same clock, and an OpenCL
 * session reads no clock and says so. Skipped (77), with the reason, where no OpenCL device exists.
 * Runs with its own compile cache and kernel home. */
#define _GNU_SOURCE
#include "lab/lab.h"
#include "test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef KPROF_SOURCE_DIR
#error "KPROF_SOURCE_DIR: the tree whose kernels/demo_add.cl is run"
#endif

#define N 16

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The fastest of the samples: noise (other processes, the CPU's own) only ever adds time. */
static double fastest(const double *v)
{
    double m = v[0];
    for (int i = 1; i < N; i++)
        if (v[i] < m) m = v[i];
    return m;
}

int main(void)
{
    char scratch[] = "/tmp/kprof-test-lab-opencl-XXXXXX";
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("KPROF_CACHE_DIR", scratch, 1);
    setenv("KPROF_HOME", scratch, 1);

    kp_lab_options opts = {
        .target = KPROF_SOURCE_DIR "/kernels/demo_add.cl",
        .entry = "demo_add",
        .buffers = "f32:262144,f32:262144,f32:262144,u32=262144",
        .backend = "opencl",
        .device = -1,
    };
    kp_error err = {0};
    kp_lab *lab = NULL;
    kprof_status st = kp_lab_open(&opts, &lab, &err);
    if (st == KPROF_UNAVAILABLE) {
        printf("skipped: no OpenCL device: %s\n", err.message);
        kp_error_clear(&err);
        nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
        return 77;
    }
    CHECK_INT(st, KPROF_OK);
    if (st != KPROF_OK) {
        fprintf(stderr, "kp_lab_open: %s\n", err.message);
        kp_error_clear(&err);
        nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
        TEST_DONE();
    }
    const kp_lab_info *info = kp_lab_get_info(lab);
    printf("device: %s (global memory cache %llu bytes)\n", info->device.name,
           (unsigned long long)info->device.cache_bytes);
    CHECK_STR(info->device.pci_bus_id, ""); /* OpenCL does not say */

    kp_launch launch = {.dims = 1, .grid = {262144, 1, 1}, .tg = {64, 1, 1}};
    kp_reflection refl;
    CHECK_INT(kp_lab_check_launch(lab, &launch, &refl, &err), KPROF_OK);

    double hot[N], cold[N], flush[N], hot_flush[N];
    for (int i = 0; i < N; i++)
        hot_flush[i] = -1;
    CHECK_INT(kp_lab_sample(lab, &launch, N, 0, hot, hot_flush, &err), KPROF_OK);
    char hot_timer[sizeof info->timer];
    snprintf(hot_timer, sizeof hot_timer, "%s", info->timer);
    CHECK_STR(hot_timer, "opencl-profiling-events");
    /* The cold samples are logged: each comes right after a flush of its own, which ends
     * before it starts (what makes it cold, whatever the machine's speed). */
    kp_lab_log log;
    CHECK_INT(kp_lab_log_init(&log, 2 * N, &err), KPROF_OK);
    kp_lab_set_log(lab, &log);
    CHECK_INT(kp_lab_sample(lab, &launch, N, 1, cold, flush, &err), KPROF_OK);
    kp_lab_set_log(lab, NULL);
    CHECK_INT(log.n, 2 * N);
    for (size_t i = 0; i + 1 < log.n && log.n == 2 * N; i += 2) {
        CHECK_INT(log.tags[i].role, KP_LAB_FLUSH);
        CHECK_INT(log.tags[i + 1].role, KP_LAB_TIMED);
        CHECK(log.spans[i].end_ns <= log.spans[i + 1].start_ns);
    }
    kp_lab_log_free(&log);
    if (err.status != KPROF_OK) fprintf(stderr, "kp_lab_sample: %s\n", err.message);
    CHECK_STR(info->timer, hot_timer);
    for (int i = 0; i < N; i++) {
        printf("sample %d: hot %.4f ms, cold %.4f ms after a flush of %.4f ms\n", i, hot[i],
               cold[i], flush[i]);
        CHECK(hot[i] > 0);
        CHECK(cold[i] > 0);
        CHECK(flush[i] > 0);
        CHECK_NEAR(hot_flush[i], 0, 0);
    }
    /* The flush reads at least 8 MiB: no device reads that in under a microsecond. */
    CHECK(flush[N - 1] > 0.001);
    /* And it works: the kernel's 3 MiB, in the cache when hot, come from memory when cold. */
    double fh = fastest(hot), fc = fastest(cold);
    printf("fastest: hot %.4f ms, cold %.4f ms\n", fh, fc);
    /* Printed, not asserted: which is faster depends on the machine's load (the log above checks
     * that every cold sample had its flush). */
    /* Without flush_ms, and once more, hot: the session carries on after cold samples. */
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 1, cold, NULL, &err), KPROF_OK);
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 0, hot, NULL, &err), KPROF_OK);
    CHECK_INT(kp_lab_sample(lab, &launch, 0, 1, cold, flush, &err), KPROF_INVALID);
    kp_error_clear(&err);

    kp_clock_reading clock;
    memset(&clock, 0x5a, sizeof clock);
    kp_lab_clock(lab, &clock);
    CHECK_INT(clock.have, 0);
    CHECK_CONTAINS(clock.why_not, "opencl devices: kprof reads no clock");

    /* The samples stand only once the child exited cleanly. */
    CHECK_INT(kp_lab_finish(lab, &err), KPROF_OK);
    if (err.status != KPROF_OK) fprintf(stderr, "kp_lab_finish: %s\n", err.message);
    kp_error_clear(&err);
    kp_lab_close(lab);
    nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    TEST_DONE();
}
