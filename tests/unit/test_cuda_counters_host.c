/*
 * test_cuda_counters_host.c — the host side of the CUDA backend's hardware counters, which
 * needs no GPU: CUPTI's host API on a chip named, not found (counters.c).
 *
 *   test_cuda_counters_host           metric checking and scheduling for GH100 (the H200's
 *                                     chip), and the metric list; skipped (77) where no
 *                                     libcupti of 12.6 or newer loads (or in an ASan
 *                                     build, where kprof refuses the real libcupti's profiler)
 *   test_cuda_counters_host missing   KPROF_CUPTI_LIBRARY names no file: UNAVAILABLE, saying so
 *   test_cuda_counters_host old       KPROF_CUPTI_LIBRARY names a library without the Range
 *                                     Profiler: UNAVAILABLE, naming the CUPTI it needs
 */
#include "backend/cuda/cuda_internal.h"
#include "tests/unit/test.h"

#include <math.h>
#include <stdlib.h>

#define CHIP "GH100"

typedef struct listed {
    size_t count;
    int dram_read_sum, dram_read_per_second, dram_read_bare, hit_rate, sm_throughput, warps_active;
    char dram_read_what[256];
} listed;

static void collect(const char *name, const char *what, void *ctx)
{
    listed *l = ctx;
    l->count++;
    if (strcmp(name, "dram__bytes_read.sum") == 0) {
        l->dram_read_sum++;
        snprintf(l->dram_read_what, sizeof l->dram_read_what, "%s", what);
    }
    l->dram_read_per_second += strcmp(name, "dram__bytes_read.sum.per_second") == 0;
    l->dram_read_bare += strcmp(name, "dram__bytes_read") == 0;
    l->hit_rate += strcmp(name, "lts__t_sector_hit_rate.pct") == 0;
    l->sm_throughput += strcmp(name, "sm__throughput.avg.pct_of_peak_sustained_elapsed") == 0;
    l->warps_active += strcmp(name, "sm__warps_active.avg.pct_of_peak_sustained_active") == 0;
}

/* The names the lab asks for, mixed with ones CUPTI refuses: each is judged alone, the good
 * ones scheduled together, and nothing crashes (one bad name among several in a single
 * ConfigAddMetrics crashes CUPTI 13.0). */
static void test_plan(void)
{
    const char *metrics[] = {
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "kprof__made_up.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "dram__bytes_read", /* a base metric without its rollup */
        "lts__t_sector_hit_rate.pct",
        "",
        NULL,
        "dram__bytes_read.sum", /* asked twice: scheduled once */
        "dram__bytes_read.sum ",
    };
    size_t n = sizeof metrics / sizeof metrics[0];
    unsigned char bad[sizeof metrics / sizeof metrics[0]];
    memset(bad, 7, sizeof bad);
    kp_error err = {0};
    kp_cuda_counter_plan *plan = NULL;
    CHECK_INT(kp_cuda_counter_plan_make(CHIP, NULL, metrics, n, bad, &plan, &err), KPROF_OK);
    if (!plan) {
        fprintf(stderr, "plan: %s\n", err.message);
        kp_error_clear(&err);
        return;
    }
    const unsigned char expect[] = {0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1};
    for (size_t i = 0; i < n; i++) {
        if (bad[i] != expect[i])
            fprintf(stderr, "metric %zu '%s': bad %d, expected %d\n", i,
                    metrics[i] ? metrics[i] : "(null)", bad[i], expect[i]);
        CHECK_INT(bad[i], expect[i]);
    }
    CHECK_INT(kp_cuda_counter_plan_count(plan), 5);
    size_t passes = kp_cuda_counter_plan_passes(plan);
    printf("GH100: 5 metrics in %zu passes\n", passes);
    CHECK(passes >= 1 && passes < 64);
    kp_cuda_counter_plan_free(plan);

    /* Only refused names: an empty plan, no passes, every one bad. */
    const char *none[] = {"kprof__made_up.sum", "dram__bytes_read"};
    unsigned char bad2[2] = {0, 0};
    CHECK_INT(kp_cuda_counter_plan_make(CHIP, NULL, none, 2, bad2, &plan, &err), KPROF_OK);
    CHECK_INT(kp_cuda_counter_plan_count(plan), 0);
    CHECK_INT(kp_cuda_counter_plan_passes(plan), 0);
    CHECK_INT(bad2[0], 1);
    CHECK_INT(bad2[1], 1);
    kp_cuda_counter_plan_free(plan);
    kp_cuda_counter_plan_free(NULL);
}

static void test_unknown_chip(void)
{
    const char *metrics[] = {"dram__bytes_read.sum"};
    kp_error err = {0};
    kp_cuda_counter_plan *plan = NULL;
    CHECK_INT(kp_cuda_counter_plan_make("KPROF999", NULL, metrics, 1, NULL, &plan, &err),
              KPROF_UNAVAILABLE);
    CHECK(plan == NULL);
    CHECK_CONTAINS(err.message, "does not know chip 'KPROF999'");
    kp_error_clear(&err);
    listed l = {0};
    CHECK_INT(kp_cuda_counter_list_chip("KPROF999", NULL, collect, &l, &err), KPROF_UNAVAILABLE);
    CHECK_INT(l.count, 0);
    kp_error_clear(&err);
}

/* The list: base metrics with rollups and % of peak, ratios as .pct, descriptions kept; not
 * the per-second and peak-rate submetrics, not a bare base name. */
static void test_list(void)
{
    listed l = {0};
    kp_error err = {0};
    CHECK_INT(kp_cuda_counter_list_chip(CHIP, NULL, collect, &l, &err), KPROF_OK);
    printf("GH100: %zu metric names listed\n", l.count);
    CHECK(l.count > 1000);
    CHECK_INT(l.dram_read_sum, 1);
    CHECK_CONTAINS(l.dram_read_what, "DRAM");
    CHECK_INT(l.dram_read_per_second, 0);
    CHECK_INT(l.dram_read_bare, 0);
    CHECK_INT(l.hit_rate, 1);
    CHECK_INT(l.sm_throughput, 1);
    CHECK_INT(l.warps_active, 1);
    kp_error_clear(&err);
}

/* KPROF_CUPTI_LIBRARY is set by ctest for these; the table loads once per process. */
static int test_not_loadable(const char *how)
{
    const char *metrics[] = {"dram__bytes_read.sum"};
    unsigned char bad[1] = {0};
    kp_error err = {0};
    kp_cuda_counter_plan *plan = NULL;
    CHECK_INT(kp_cuda_counter_plan_make(CHIP, NULL, metrics, 1, bad, &plan, &err),
              KPROF_UNAVAILABLE);
    CHECK(plan == NULL);
    CHECK_CONTAINS(err.message, "GPU counters unavailable");
    if (strcmp(how, "missing") == 0) {
        CHECK_CONTAINS(err.message, "KPROF_CUPTI_LIBRARY");
        CHECK_CONTAINS(err.message, "could not be loaded");
    } else {
        CHECK_CONTAINS(err.message, "libcupti lacks cupti");
        CHECK_CONTAINS(err.message, "CUPTI 12.6 or newer is needed");
    }
    printf("%s: %s\n", how, err.message);
    kp_error_clear(&err);
    listed l = {0};
    CHECK_INT(kp_cuda_counter_list_chip(CHIP, NULL, collect, &l, &err), KPROF_UNAVAILABLE);
    CHECK_CONTAINS(err.message, "GPU counters unavailable");
    kp_error_clear(&err);
    return kp_test_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) return test_not_loadable(argv[1]);
    /* Where no libcupti of 12.6 or newer loads there is nothing to test here. */
    const char *metrics[] = {"dram__bytes_read.sum"};
    kp_error err = {0};
    kp_cuda_counter_plan *plan = NULL;
    kprof_status st = kp_cuda_counter_plan_make(CHIP, NULL, metrics, 1, NULL, &plan, &err);
    kp_cuda_counter_plan_free(plan);
    if (st == KPROF_UNAVAILABLE && strstr(err.message, "GPU counters unavailable")) {
        printf("skipped: %s\n", err.message);
        kp_error_clear(&err);
        return 77;
    }
    kp_error_clear(&err);
    test_plan();
    test_unknown_chip();
    test_list();
    return kp_test_failures ? 1 : 0;
}
