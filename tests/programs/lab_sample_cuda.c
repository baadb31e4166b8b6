/* lab_sample_cuda.c — kp_lab_sample and kp_lab_clock on a CUDA GPU (ctest: gpu.lab_sample_cuda).
 *
 * Opens a lab on kernels/demo_add.cu with three 4 MiB buffers (12 MiB: inside any recent L2),
 * takes 20 cold and 20 hot samples and checks: every sample and every flush time is positive;
 * hot and cold samples came from the same clock (info.timer); the cold median is above the hot
 * one (cold reads come from DRAM, hot ones from the L2 — the point of the flush); and NVML
 * reads the SM clock, a default clock and the reasons. It prints what it saw. Exit 0 passed,
 * 1 failed, 77 skipped (no CUDA device, with the reason).
 *
 *   lab_sample_cuda [SOURCE_DIR]   (default: the tree it was built from)
 */
#define _GNU_SOURCE
#include "lab/lab.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KPROF_SOURCE_DIR
#error "KPROF_SOURCE_DIR: the tree whose kernels/demo_add.cu is run"
#endif

#define N        20
#define ELEMENTS 1048576

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAILED: %s: ", #cond);                                                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[N];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    const char *tree = argc > 1 ? argv[1] : KPROF_SOURCE_DIR;
    char source[4096];
    snprintf(source, sizeof source, "%s/kernels/demo_add.cu", tree);
    char scratch[] = "/tmp/kprof-lab-sample-cuda-XXXXXX";
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("KPROF_CACHE_DIR", scratch, 1);
    setenv("KPROF_HOME", scratch, 1);
    char spec[128];
    snprintf(spec, sizeof spec, "f32:%d,f32:%d,f32:%d,u32=%d", ELEMENTS, ELEMENTS, ELEMENTS,
             ELEMENTS);
    kp_lab_options opts = {
        .target = source, .entry = "demo_add", .buffers = spec, .backend = "cuda", .device = -1};
    kp_error err = {0};
    kp_lab *lab = NULL;
    kprof_status st = kp_lab_open(&opts, &lab, &err);
    if (st == KPROF_UNAVAILABLE) {
        printf("skipped: no CUDA device: %s\n", err.message);
        kp_error_clear(&err);
        nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
        return 77;
    }
    if (st != KPROF_OK) {
        fprintf(stderr, "FAILED: kp_lab_open: %s\n", err.message);
        kp_error_clear(&err);
        nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
        return 1;
    }
    const kp_lab_info *info = kp_lab_get_info(lab);
    printf("device: %s, PCI bus id %s, L2 %llu bytes\n", info->device.name, info->device.pci_bus_id,
           (unsigned long long)info->device.cache_bytes);
    EXPECT(info->device.pci_bus_id[0] != '\0', "the CUDA backend gave no PCI bus id");

    kp_launch launch = {.dims = 1, .grid = {ELEMENTS, 1, 1}, .tg = {256, 1, 1}};
    kp_reflection refl;
    st = kp_lab_check_launch(lab, &launch, &refl, &err);
    EXPECT(st == KPROF_OK, "kp_lab_check_launch: %s", err.message);

    kp_clock_reading before, after;
    kp_lab_clock(lab, &before);
    double cold[N], flush[N], hot[N];
    char cold_timer[sizeof info->timer] = "";
    st = kp_lab_sample(lab, &launch, N, 1, cold, flush, &err);
    EXPECT(st == KPROF_OK, "kp_lab_sample cold: %s", err.message);
    snprintf(cold_timer, sizeof cold_timer, "%s", info->timer);
    st = kp_lab_sample(lab, &launch, N, 0, hot, NULL, &err);
    EXPECT(st == KPROF_OK, "kp_lab_sample hot: %s", err.message);
    kp_lab_clock(lab, &after);
    printf("timer: cold %s, hot %s\n", cold_timer, info->timer);
    EXPECT(strcmp(cold_timer, info->timer) == 0, "hot and cold samples had different clocks");
    for (int i = 0; i < N; i++) {
        printf("sample %2d: cold %.4f ms (after a flush of %.4f ms), hot %.4f ms\n", i, cold[i],
               flush[i], hot[i]);
        EXPECT(cold[i] > 0 && hot[i] > 0, "sample %d is not positive", i);
        EXPECT(flush[i] > 0, "flush %d took no time", i);
    }
    double mc = median(cold, N), mh = median(hot, N);
    printf("median: cold %.4f ms, hot %.4f ms (cold/hot %.2f), flush %.4f ms\n", mc, mh,
           mh > 0 ? mc / mh : 0, median(flush, N));
    EXPECT(mc > mh,
           "cold median %.4f ms is not above hot median %.4f ms: the flush left the "
           "kernel's data in the L2",
           mc, mh);

    const kp_clock_reading *r[2] = {&before, &after};
    for (int i = 0; i < 2; i++) {
        char reasons[256];
        kp_clock_reasons_text(r[i]->reasons, reasons, sizeof reasons);
        if (r[i]->have)
            printf("clock %s: SM %.0f MHz, default %.0f MHz, reasons 0x%llx (%s)\n",
                   i ? "after" : "before", r[i]->sm_mhz, r[i]->default_mhz,
                   (unsigned long long)r[i]->reasons, reasons[0] ? reasons : "none");
        else
            printf("clock %s: not read: %s\n", i ? "after" : "before", r[i]->why_not);
        EXPECT(r[i]->have, "kp_lab_clock read no clock: %s", r[i]->why_not);
        EXPECT(r[i]->sm_mhz > 0 && r[i]->default_mhz > 0, "a clock of 0 MHz");
    }

    st = kp_lab_finish(lab, &err);
    EXPECT(st == KPROF_OK, "kp_lab_finish: %s", err.message);
    kp_error_clear(&err);
    kp_lab_close(lab);
    nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    printf("%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
