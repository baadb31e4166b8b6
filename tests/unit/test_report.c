/* test_report.c — kprof report's model (analysis/report.h) on a recorded job's trace
 * (tests/data/trace-job.kprof: two ranks with NVTX steps, NCCL all-reduces): its tables are the
 * key averages kp_trace_aggregate gives `--by name` (one engine, not two), its collectives a table
 * apart from the compute kernels, and the header's counts what the trace holds. The printed forms
 * are pinned by cli.golden. */
#include "analysis/report.h"
#include "analysis/trace_aggregate.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JOB KPROF_SOURCE_DIR "/tests/data/trace-job.kprof"

/* The by-name row of kind `kind` named `name` in a, or NULL. */
static const kp_aggregation_row *by_name(const kp_aggregation_row *rows, size_t n,
                                         kp_event_source *src, kp_event_kind kind, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *text = kp_event_source_string(src, rows[i].name, NULL);
        if (rows[i].kind == kind && text && strcmp(text, name) == 0) return &rows[i];
    }
    return NULL;
}

/* Every row of a table is the aggregation's row of its name and kind: the same count, total,
 * min and max. */
static void check_table(const kp_report_table *t, const kp_aggregation_row *rows, size_t n,
                        kp_event_source *src, kp_event_kind kind)
{
    for (int i = 0; i < t->n; i++) {
        const kp_report_row *g = &t->rows[i];
        const kp_aggregation_row *a = by_name(rows, n, src, kind, g->name);
        if (!a && kind == KP_EVENT_KERNEL) a = by_name(rows, n, src, KP_EVENT_MEMCPY, g->name);
        CHECK(a != NULL);
        if (!a) continue;
        CHECK_INT(g->calls, a->stats.count);
        CHECK_NEAR(g->total, (double)a->stats.duration_ns / 1e9, 0);
        CHECK_NEAR(g->min, (double)a->stats.min_ns / 1e9, 0);
        CHECK_NEAR(g->max, (double)a->stats.max_ns / 1e9, 0);
        if (i) CHECK(t->rows[i - 1].total >= g->total); /* largest first */
    }
}

int main(void)
{
    kp_error err = {0};
    kp_event_source *src = NULL;
    CHECK_INT(kp_event_source_open(JOB, &src, &err), KPROF_OK);
    kp_report r;
    CHECK_INT(kp_report_load(&r, src, "job.kprof", 0, &err), KPROF_OK);
    CHECK_INT(r.events, 225);
    CHECK_INT(r.processes, 3);
    CHECK_INT(r.ops_without_call, 0);
    CHECK_INT(r.calls_without_work, 0);
    CHECK_INT(r.launch.n, 102);
    CHECK(r.is_job);
    CHECK_INT(r.job.nranked, 2);
    CHECK_INT(r.host.n, 3);
    CHECK_INT(r.device.n, 2);
    CHECK_INT(r.collectives.n, 1);
    CHECK_INT(r.nvtx.n, 1);
    CHECK_STR(r.collectives.rows[0].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    CHECK_INT(r.collectives.rows[0].calls, 20);
    for (int i = 0; i < r.device.n; i++)
        CHECK(strcmp(r.device.rows[i].name, r.collectives.rows[0].name) != 0);
    CHECK_STR(r.nvtx.rows[0].name, "step");
    CHECK_INT(r.nvtx.rows[0].calls, 20);
    CHECK(!r.host.metrics && !r.device.metrics); /* no metrics in the trace */
    double host = 0;
    for (int i = 0; i < r.host.n; i++)
        host += r.host.rows[i].total;
    CHECK_NEAR(r.host_total, host, 0);

    /* The same numbers as the key averages of `--by name`, from their own pass. */
    kp_event_source *src2 = NULL;
    kp_aggregation *a = NULL;
    kp_aggregation_row *rows = NULL;
    size_t n = 0;
    CHECK_INT(kp_event_source_open(JOB, &src2, &err), KPROF_OK);
    CHECK_INT(kp_trace_aggregate(src2, 0, &a, &err), KPROF_OK);
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    check_table(&r.host, rows, n, src2, KP_EVENT_API);
    check_table(&r.device, rows, n, src2, KP_EVENT_KERNEL);
    check_table(&r.collectives, rows, n, src2, KP_EVENT_KERNEL);
    check_table(&r.nvtx, rows, n, src2, KP_EVENT_RANGE);
    free(rows);
    kp_aggregation_destroy(a);
    kp_event_source_close(src2);
    kp_report_free(&r);
    kp_report_free(&r); /* freed is zeroed: again is fine */

    if (kp_test_failures) fprintf(stderr, "%d failure(s)\n", kp_test_failures);
    return kp_test_failures != 0;
}
