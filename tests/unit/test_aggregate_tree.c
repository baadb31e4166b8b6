/*
 * test_aggregate_tree.c — core/aggregate.c (key averages, call paths, the call tree, GPU busy)
 * and core/busy.h on synthetic event streams whose every number is known: nested ranges on two
 * threads, a kernel that runs after its range closed, device work whose call is missing or comes
 * late, ranges that end out of order, ties of start time, events out of order, thousands of paths
 * and paths deeper than the limit.
 */
#include "core/aggregate.h"
#include "core/busy.h"
#include "export/hatchet.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

enum {
    N_NONE,
    N_STEP,
    N_FWD,
    N_LAUNCH,
    N_MEMCPY_CALL,
    N_GEMM,
    N_RELU,
    N_HTOD,
    N_A,
    N_B,
    N_C,
    N_D,
    N_DRIVER,
    N_BAD,
    N_COUNT
};

static const char *const names[N_COUNT] = {
    "",  "step", "fwd", "cudaLaunchKernel", "cudaMemcpy",  "gemm", "relu", "[memcpy HtoD]", "A",
    "B", "C",    "D",   "cuLaunchKernel",   "bad\xff\xc3("};

static const char *name_of(void *ctx, uint32_t id)
{
    (void)ctx;
    return id < N_COUNT ? names[id] : NULL;
}

static kp_event ev(kp_event_kind kind, uint32_t name, int64_t s, int64_t e, int64_t tid,
                   uint64_t corr)
{
    kp_event x;
    memset(&x, 0, sizeof x);
    x.kind = kind;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.process = 1;
    x.pid = 100;
    x.tid = tid;
    if (corr) {
        x.correlation = corr;
        x.known |= KP_EVENT_HAS_CORRELATION;
    }
    return x;
}

/* Feed events sorted by start (stable: ties keep the order given). */
static void feed_sorted(kp_aggregation *a, kp_event *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        kp_event x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].start_ns > x.start_ns) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    for (size_t i = 0; i < n; i++)
        CHECK_INT(kp_aggregation_add(a, &v[i], NULL), 0);
}

/* The node at path ("step/fwd/cudaLaunchKernel"), or NULL. */
static const kp_aggregation_node *find(const kp_aggregation *a, const char *path)
{
    for (uint32_t id = 1; id < kp_aggregation_node_count(a); id++) {
        kp_str s = {0};
        kp_aggregation_path(a, id, &s);
        int same = s.data && strcmp(s.data, path) == 0;
        kp_str_free(&s);
        if (same) return kp_aggregation_get_node(a, id);
    }
    fprintf(stderr, "no node %s\n", path);
    return NULL;
}

static uint64_t children(const kp_aggregation *a, const kp_aggregation_node *n)
{
    uint64_t k = 0;
    for (uint32_t c = n->first_child; c; c = kp_aggregation_get_node(a, c)->next_sibling)
        k++;
    return k;
}

#define CHECK_NODE(a, path, count_, inc, exc, gpu)                                                 \
    do {                                                                                           \
        const kp_aggregation_node *n_ = find(a, path);                                             \
        CHECK(n_ != NULL);                                                                         \
        if (n_) {                                                                                  \
            CHECK_INT(n_->stats.count, count_);                                                    \
            CHECK_INT(n_->stats.inclusive_ns, inc);                                                \
            CHECK_INT(n_->stats.exclusive_ns, exc);                                                \
            CHECK_INT(n_->stats.gpu_ns, gpu);                                                      \
        }                                                                                          \
    } while (0)

/* Two threads of nested ranges, calls under them, device work joined by correlation. */
static void test_two_threads(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    CHECK(a != NULL);
    kp_event v[] = {
        /* thread 1 */
        ev(KP_EVENT_RANGE, N_STEP, 0, 100, 1, 0), ev(KP_EVENT_RANGE, N_FWD, 10, 60, 1, 0),
        ev(KP_EVENT_API, N_LAUNCH, 20, 30, 1, 1), ev(KP_EVENT_API, N_MEMCPY_CALL, 40, 55, 1, 2),
        ev(KP_EVENT_API, N_LAUNCH, 70, 80, 1, 3),
        /* thread 2: the same path names, its own instances */
        ev(KP_EVENT_RANGE, N_STEP, 5, 45, 2, 0), ev(KP_EVENT_API, N_LAUNCH, 10, 15, 2, 4),
        /* device */
        ev(KP_EVENT_KERNEL, N_GEMM, 35, 135, 0, 1), ev(KP_EVENT_MEMCPY, N_HTOD, 42, 52, 0, 2),
        ev(KP_EVENT_KERNEL, N_RELU, 85, 95, 0, 3), ev(KP_EVENT_KERNEL, N_GEMM, 20, 40, 0, 4),
        ev(KP_EVENT_MEMCPY, N_HTOD, 150, 160, 0, 0), /* no correlation: unattributed */
    };
    v[8].bytes = 4096; /* a copy without a bytes metric counts its size */
    v[8].known |= KP_EVENT_HAS_BYTES;
    feed_sorted(a, v, sizeof v / sizeof v[0]);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);

    /* step: t1 100 - fwd 50 - launch 10 = 40 own; t2 40 - launch 5 = 35 own */
    CHECK_NODE(a, "step", 2, 140, 75, 140);
    CHECK_NODE(a, "step/fwd", 1, 50, 25, 110);
    CHECK_NODE(a, "step/fwd/cudaLaunchKernel", 1, 10, 10, 100);
    CHECK_NODE(a, "step/fwd/cudaMemcpy", 1, 15, 15, 10);
    CHECK_NODE(a, "step/cudaLaunchKernel", 2, 15, 15, 30);
    CHECK_NODE(a, "step/fwd/cudaLaunchKernel/gemm", 1, 0, 0, 100);
    CHECK_NODE(a, "step/cudaLaunchKernel/gemm", 1, 0, 0, 20);
    CHECK_NODE(a, "step/cudaLaunchKernel/relu", 1, 0, 0, 10);
    CHECK_NODE(a, "(unattributed)", 0, 0, 0, 10);
    CHECK_NODE(a, "(unattributed)/[memcpy HtoD]", 1, 0, 0, 10);
    const kp_aggregation_node *k = find(a, "step/fwd/cudaLaunchKernel/gemm");
    if (k) {
        CHECK_INT(k->kind, KP_EVENT_KERNEL);
        CHECK_INT(k->stats.gpu_self_ns, 100);
        CHECK_INT(k->stats.duration_ns, 100);
        CHECK_INT(k->depth, 4);
    }
    const kp_aggregation_node *copy = find(a, "step/fwd/cudaMemcpy/[memcpy HtoD]");
    if (copy) CHECK_NEAR(copy->stats.bytes, 4096, 0);
    const kp_aggregation_node *step = find(a, "step");
    if (step) {
        CHECK_INT(step->stats.device_ops, 4);
        CHECK_NEAR(step->stats.bytes_inclusive, 4096, 0);
        CHECK_INT(children(a, step), 2);
    }
    /* The root: top-level sums; its children ordered by total (step 140, then unattributed). */
    const kp_aggregation_node *root = kp_aggregation_get_node(a, 0);
    CHECK_INT(root->stats.inclusive_ns, 140);
    CHECK_INT(root->stats.gpu_ns, 150);
    CHECK_INT(root->stats.device_ops, 5);
    CHECK(root->first_child && root->first_child == (uint32_t)(step - root));
    char buf[24];
    CHECK_STR(kp_aggregation_name(a, kp_aggregation_get_node(a, root->first_child)->next_sibling,
                                  buf, sizeof buf),
              "(unattributed)");
    /* step's children by total: fwd (50), then cudaLaunchKernel (15). */
    if (step) {
        CHECK_STR(kp_aggregation_name(a, step->first_child, buf, sizeof buf), "fwd");
        CHECK(kp_aggregation_order(a, KP_AGGREGATION_SORT_GPU, NULL) == 0);
        CHECK_STR(kp_aggregation_name(a, step->first_child, buf, sizeof buf), "fwd"); /* 110 > 30 */
        CHECK(kp_aggregation_order(a, KP_AGGREGATION_SORT_CALLS, NULL) == 0);
        CHECK_STR(kp_aggregation_name(a, step->first_child, buf, sizeof buf), "cudaLaunchKernel");
    }

    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    CHECK_INT(t->events, 12);
    CHECK_INT(t->calls, 4);
    CHECK_INT(t->ranges, 3);
    CHECK_INT(t->device_ops, 5);
    CHECK_INT(t->kernels, 3);
    CHECK_INT(t->small_kernels, 3);
    CHECK_INT(t->ops_without_call, 1);
    CHECK_INT(t->gpu_busy_ns, 125);    /* [20,135] and [150,160] */
    CHECK_INT(t->kernel_busy_ns, 115); /* [20,135] */
    CHECK_INT(t->active_start_ns, 20);
    CHECK_INT(t->active_end_ns, 160);
    CHECK_INT(t->host_api_ns, 40);
    CHECK_INT(t->first_ns, 0);
    CHECK_INT(t->last_ns, 160);
    CHECK_INT(t->unordered, 0);
    CHECK_INT(t->folded, 0);

    /* Key averages by name: one row per (kind, name); gemm's two nodes merged. */
    kp_aggregation_row *rows = NULL;
    size_t n = 0;
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    CHECK_INT(n, 7); /* step fwd cudaLaunchKernel cudaMemcpy gemm relu [memcpy HtoD] */
    size_t kept = kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_TOTAL, 3);
    CHECK_INT(kept, 3);
    CHECK_INT(rows[0].name, N_STEP); /* 140 */
    CHECK_INT(rows[1].name, N_GEMM); /* 120 of device time */
    CHECK_INT(rows[2].name, N_FWD);  /* 50 */
    CHECK_INT(rows[1].stats.count, 2);
    CHECK_INT(rows[1].stats.min_ns, 20);
    CHECK_INT(rows[1].stats.max_ns, 100);
    CHECK_NEAR(rows[1].stats.sum_sq_ns, 100.0 * 100 + 20.0 * 20, 0);
    kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_CALLS, 0);
    CHECK_INT(rows[0].name, N_LAUNCH); /* 3 calls */
    CHECK_INT(rows[0].stats.count, 3);
    CHECK_INT(rows[0].stats.inclusive_ns, 25);
    CHECK_INT(rows[0].stats.exclusive_ns, 25);
    CHECK_INT(rows[0].stats.gpu_ns, 130);
    kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_SELF, 0);
    CHECK_INT(rows[0].name, N_GEMM); /* 120 device */
    CHECK_INT(rows[1].name, N_STEP); /* 75 own */
    kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_GPU, 0);
    CHECK_INT(rows[0].name, N_STEP);   /* 140 */
    CHECK_INT(rows[1].name, N_LAUNCH); /* 130 */
    free(rows);

    /* By path: one row per node but the root. */
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_PATH, &rows, &n, NULL), 0);
    CHECK_INT(n, kp_aggregation_node_count(a) - 1);
    CHECK_INT(n, 11);
    kept = kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_GPU, 2);
    CHECK_INT(kept, 2);
    kp_str p = {0};
    kp_aggregation_path(a, rows[0].node, &p);
    CHECK_STR(p.data, "step");
    kp_str_free(&p);
    kp_aggregation_path(a, rows[1].node, &p);
    CHECK_STR(p.data, "step/fwd");
    kp_str_free(&p);
    free(rows);
    kp_aggregation_destroy(a);
}

/* A launch inside a range whose kernel runs after the range closed, during another range: the
 * kernel belongs to the launching call's path. */
static void test_kernel_after_range(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_A, 0, 10, 1, 0),
        ev(KP_EVENT_API, N_LAUNCH, 2, 4, 1, 7),
        ev(KP_EVENT_RANGE, N_B, 20, 100, 1, 0),
        ev(KP_EVENT_KERNEL, N_GEMM, 50, 80, 0, 7),
    };
    feed_sorted(a, v, 4);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_NODE(a, "A", 1, 10, 8, 30);
    CHECK_NODE(a, "A/cudaLaunchKernel", 1, 2, 2, 30);
    CHECK_NODE(a, "A/cudaLaunchKernel/gemm", 1, 0, 0, 30);
    CHECK_NODE(a, "B", 1, 80, 80, 0);
    CHECK_INT(kp_aggregation_node_count(a), 5);
    kp_aggregation_destroy(a);
}

/* Device work whose call is missing (an unknown correlation, none at all), and device work that
 * arrives before its call (clock skew): that one still joins its call. Correlations are per
 * process: process 2's correlation 5 is not process 1's. */
static void test_missing_and_late_calls(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_KERNEL, N_GEMM, 5, 6, 0, 5), /* before its call */
        ev(KP_EVENT_API, N_LAUNCH, 7, 9, 1, 5),
        ev(KP_EVENT_KERNEL, N_RELU, 10, 13, 0, 99), /* no call of correlation 99 */
        ev(KP_EVENT_KERNEL, N_RELU, 20, 21, 0, 0),  /* no correlation */
        ev(KP_EVENT_KERNEL, N_GEMM, 30, 34, 0, 5),  /* process 2, correlation 5: no call */
    };
    v[4].process = 2;
    feed_sorted(a, v, 5);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_NODE(a, "cudaLaunchKernel", 1, 2, 2, 1);
    CHECK_NODE(a, "cudaLaunchKernel/gemm", 1, 0, 0, 1);
    CHECK_NODE(a, "(unattributed)", 0, 0, 0, 8);
    CHECK_NODE(a, "(unattributed)/relu", 2, 0, 0, 4);
    CHECK_NODE(a, "(unattributed)/gemm", 1, 0, 0, 4);
    CHECK_INT(kp_aggregation_get_totals(a)->ops_without_call, 3);
    /* The device table by name: unattributed work counts there like any other. */
    kp_aggregation_row *rows = NULL;
    size_t n = 0;
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    CHECK_INT(n, 3); /* cudaLaunchKernel, gemm, relu: (unattributed) is no name */
    kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_TOTAL, 0);
    CHECK_INT(rows[0].name, N_GEMM);
    CHECK_INT(rows[0].stats.duration_ns, 5);
    CHECK_INT(rows[0].stats.count, 2);
    free(rows);
    kp_aggregation_destroy(a);
}

/* Ranges that end out of order (start/end ranges, not push/pop): A [0,10], B [5,15]. B is A's
 * child; what starts in B after A ended stays under A/B; A loses only B's part inside it. */
static void test_out_of_order_ends(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_A, 0, 10, 1, 0), ev(KP_EVENT_RANGE, N_B, 5, 15, 1, 0),
        ev(KP_EVENT_API, N_D, 7, 8, 1, 0),    ev(KP_EVENT_API, N_C, 12, 13, 1, 0),
        ev(KP_EVENT_API, N_D, 16, 18, 1, 0), /* after both: top level */
    };
    feed_sorted(a, v, 5);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_NODE(a, "A", 1, 10, 5, 0);
    CHECK_NODE(a, "A/B", 1, 10, 8, 0);
    CHECK_NODE(a, "A/B/D", 1, 1, 1, 0);
    CHECK_NODE(a, "A/B/C", 1, 1, 1, 0);
    CHECK_NODE(a, "D", 1, 2, 2, 0);
    kp_aggregation_destroy(a);
}

/* Events of one start time in any order: the longest is the parent. A driver call inside a
 * runtime call is its child. */
static void test_ties_and_nested_calls(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_API, N_DRIVER, 0, 4, 1, 0), /* given first, shortest */
        ev(KP_EVENT_API, N_LAUNCH, 0, 6, 1, 3),  ev(KP_EVENT_RANGE, N_STEP, 0, 10, 1, 0),
        ev(KP_EVENT_RANGE, N_FWD, 0, 0, 1, 0),   /* an empty range: placed, never a parent */
        ev(KP_EVENT_KERNEL, N_GEMM, 0, 2, 0, 3), /* same start as its call */
        ev(KP_EVENT_API, N_DRIVER, 2, 3, 1, 0),  /* inside the driver call: its child */
    };
    for (size_t i = 0; i < 6; i++)
        CHECK_INT(kp_aggregation_add(a, &v[i], NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_NODE(a, "step", 1, 10, 4, 2);
    CHECK_NODE(a, "step/cudaLaunchKernel", 1, 6, 2, 2);
    CHECK_NODE(a, "step/cudaLaunchKernel/cuLaunchKernel", 1, 4, 3, 0);
    CHECK_NODE(a, "step/cudaLaunchKernel/cuLaunchKernel/cuLaunchKernel", 1, 1, 1, 0);
    CHECK_NODE(a, "step/cudaLaunchKernel/cuLaunchKernel/fwd", 1, 0, 0, 0);
    CHECK_NODE(a, "step/cudaLaunchKernel/gemm", 1, 0, 0, 2);
    CHECK_INT(kp_aggregation_get_totals(a)->unordered, 0);
    CHECK_INT(kp_aggregation_get_totals(a)->ops_without_call, 0);
    kp_aggregation_destroy(a);
}

/* An event that starts before one already fed: counted, and placed inside what contains it. */
static void test_unordered(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_STEP, 0, 100, 1, 0),
        ev(KP_EVENT_API, N_LAUNCH, 50, 60, 1, 0),
        ev(KP_EVENT_API, N_C, 20, 30, 1, 0), /* late */
        ev(KP_EVENT_API, N_D, 70, 75, 1, 0),
    };
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(kp_aggregation_add(a, &v[i], NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_aggregation_get_totals(a)->unordered, 1);
    CHECK_NODE(a, "step", 1, 100, 75, 0);
    CHECK_NODE(a, "step/C", 1, 10, 10, 0);
    CHECK_NODE(a, "step/D", 1, 5, 5, 0);
    kp_aggregation_destroy(a);
}

/* Ranges nested 100k deep (issue 23): placing them looks at each open element a bounded number
 * of times, not at the whole stack per event (which was quadratic: 5e9 steps here). A call in
 * the innermost range and one after all closed land where they belong. */
static void test_deep_nesting_is_linear(void)
{
    enum { DEPTH = 100000 };
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    for (int64_t i = 0; i < DEPTH; i++) {
        kp_event r = ev(KP_EVENT_RANGE, i % 2 ? N_B : N_A, i, 4 * DEPTH - i, 1, 0);
        CHECK_INT(kp_aggregation_add(a, &r, NULL), 0);
    }
    kp_event call = ev(KP_EVENT_API, N_C, DEPTH, DEPTH + 1, 1, 0);
    kp_event after = ev(KP_EVENT_API, N_D, 4 * DEPTH, 4 * DEPTH + 1, 1, 0);
    CHECK_INT(kp_aggregation_add(a, &call, NULL), 0);
    CHECK_INT(kp_aggregation_add(a, &after, NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    uint64_t steps = kp_aggregation_stack_steps(a);
    CHECK(steps <= 3 * (uint64_t)DEPTH);
    if (steps > 3 * (uint64_t)DEPTH)
        fprintf(stderr, "stack steps %llu\n", (unsigned long long)steps);
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    CHECK_INT(t->folded, DEPTH - KP_AGGREGATION_MAX_DEPTH + 1); /* the ranges and the call */
    CHECK_INT(t->unordered, 0);
    CHECK_NODE(a, "D", 1, 1, 1, 0);
    kp_aggregation_destroy(a);
}

/* An event out of order after ranges that ended out of order: what closed before the last
 * ordered start stays closed, though the stack keeps it below an open range until that closes. */
static void test_unordered_after_out_of_order_ends(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_A, 0, 10, 1, 0),   ev(KP_EVENT_RANGE, N_B, 5, 15, 1, 0),
        ev(KP_EVENT_API, N_C, 12, 13, 1, 0),    /* A has ended; B is open */
        ev(KP_EVENT_API, N_FWD, 14, 15, 1, 0),  /* a later start: C is placed, the stack trimmed */
        ev(KP_EVENT_API, N_D, 3, 4, 1, 0),      /* late, inside A, which is closed: top level */
        ev(KP_EVENT_API, N_LAUNCH, 8, 9, 1, 0), /* late, inside B, still open: under it */
    };
    for (size_t i = 0; i < 6; i++)
        CHECK_INT(kp_aggregation_add(a, &v[i], NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_aggregation_get_totals(a)->unordered, 2);
    CHECK_NODE(a, "A/B/C", 1, 1, 1, 0);
    CHECK_NODE(a, "A/B/fwd", 1, 1, 1, 0);
    CHECK_NODE(a, "D", 1, 1, 1, 0);
    CHECK_NODE(a, "A/B/cudaLaunchKernel", 1, 1, 1, 0);
    kp_aggregation_destroy(a);
}

/* A copy's size counts as its bytes only where it is known (KP_EVENT_HAS_BYTES): a copy of
 * unknown size carries no bytes (the report's "-"), one of size 0 carries 0 bytes ("0 B"). */
static void test_copy_size_known(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_API, N_MEMCPY_CALL, 0, 10, 1, 1), ev(KP_EVENT_MEMCPY, N_HTOD, 2, 4, 0, 1),
        ev(KP_EVENT_API, N_LAUNCH, 20, 30, 1, 2),     ev(KP_EVENT_MEMSET, N_HTOD, 22, 24, 0, 2),
        ev(KP_EVENT_API, N_LAUNCH, 40, 50, 1, 3),     ev(KP_EVENT_MEMSET, N_HTOD, 42, 44, 0, 3),
    };
    v[1].bytes = 4096;                /* HAS_BYTES not set: a size the source did not know */
    v[3].known |= KP_EVENT_HAS_BYTES; /* known, and 0 */
    v[5].bytes = 100;
    v[5].known |= KP_EVENT_HAS_BYTES;
    feed_sorted(a, v, sizeof v / sizeof v[0]);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    const kp_aggregation_node *unknown = find(a, "cudaMemcpy/[memcpy HtoD]");
    const kp_aggregation_node *known = find(a, "cudaLaunchKernel/[memcpy HtoD]");
    CHECK(unknown && known);
    if (unknown && known) {
        CHECK_INT(unknown->stats.bytes_events, 0);
        CHECK_NEAR(unknown->stats.bytes, 0, 0);
        CHECK_INT(unknown->stats.bytes_ns, 0);
        CHECK_INT(known->stats.bytes_events, 2);
        CHECK_NEAR(known->stats.bytes, 100, 0);
        CHECK_INT(known->stats.bytes_ns, 4);
    }
    kp_aggregation_destroy(a);
}

/* Flops and bytes metrics, exclusive and inclusive, and the time their rates are over: only
 * that of the events that carry them (the second step has none and dilutes nothing). */
static void test_metrics(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_STEP, 0, 10, 1, 0),  ev(KP_EVENT_API, N_LAUNCH, 1, 2, 1, 1),
        ev(KP_EVENT_KERNEL, N_GEMM, 3, 4, 0, 1),  ev(KP_EVENT_MEMSET, N_HTOD, 5, 6, 0, 0),
        ev(KP_EVENT_RANGE, N_STEP, 20, 60, 1, 0),
    };
    v[0].metrics.flops = 1e6;
    v[0].known |= KP_EVENT_HAS_FLOPS;
    v[2].metrics.flops = 2e6;
    v[2].metrics.bytes = 512;
    v[2].known |= KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES;
    v[3].bytes = 64;
    v[3].known |= KP_EVENT_HAS_BYTES;
    feed_sorted(a, v, 5);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    const kp_aggregation_node *step = find(a, "step");
    const kp_aggregation_node *gemm = find(a, "step/cudaLaunchKernel/gemm");
    const kp_aggregation_node *fill = find(a, "(unattributed)/[memcpy HtoD]");
    CHECK(step && gemm && fill);
    if (step && gemm && fill) {
        CHECK_NEAR(step->stats.flops, 1e6, 0);
        CHECK_NEAR(step->stats.flops_inclusive, 3e6, 0);
        CHECK_NEAR(step->stats.bytes, 0, 0);
        CHECK_NEAR(step->stats.bytes_inclusive, 512, 0);
        CHECK_NEAR(gemm->stats.flops, 2e6, 0);
        CHECK_NEAR(fill->stats.bytes, 64, 0);
        CHECK_INT(fill->kind, KP_EVENT_MEMSET);
        CHECK_INT(step->stats.count, 2);
        CHECK_INT(step->stats.duration_ns, 50);
        CHECK_INT(step->stats.flops_ns, 10); /* the first step's time only */
        CHECK_INT(step->stats.bytes_ns, 0);
        CHECK_INT(gemm->stats.flops_ns, 1);
        CHECK_INT(gemm->stats.bytes_ns, 1);
        CHECK_INT(fill->stats.bytes_ns, 1); /* a fill's size counts as its bytes */
        CHECK_INT(fill->stats.flops_ns, 0);
        double rate = 0;
        CHECK_INT(kp_aggregation_rate(step->stats.flops, step->stats.flops_ns, &rate), 0);
        CHECK_NEAR(rate, 1e5, 0); /* 1e6 flops in 10 ns: 1e5 GFLOP/s */
        CHECK_INT(kp_aggregation_rate(step->stats.bytes, step->stats.bytes_ns, &rate), -1);
        /* The events that carry each (the report's "-" or a number): a fill's size is bytes,
         * not a metric (no metric columns for it alone). */
        CHECK_INT(step->stats.flops_events, 1);
        CHECK_INT(step->stats.bytes_events, 0);
        CHECK_INT(step->stats.metric_events, 1);
        CHECK_INT(gemm->stats.flops_events, 1);
        CHECK_INT(gemm->stats.bytes_events, 1);
        CHECK_INT(gemm->stats.metric_events, 1);
        CHECK_INT(fill->stats.flops_events, 0);
        CHECK_INT(fill->stats.bytes_events, 1);
        CHECK_INT(fill->stats.metric_events, 0);
    }
    CHECK_INT(kp_aggregation_get_totals(a)->metric_events, 2);
    /* By name, the rows merge the times too. */
    kp_aggregation_row *rows = NULL;
    size_t n = 0;
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].kind == KP_EVENT_KERNEL) CHECK_INT(rows[i].stats.flops_ns, 1);
        if (rows[i].kind == KP_EVENT_RANGE) CHECK_INT(rows[i].stats.flops_ns, 10);
        if (rows[i].kind == KP_EVENT_RANGE) CHECK_INT(rows[i].stats.flops_events, 1);
        if (rows[i].kind == KP_EVENT_RANGE) CHECK_INT(rows[i].stats.metric_events, 1);
    }
    free(rows);
    kp_aggregation_destroy(a);
    /* Without metrics, none are counted. */
    a = kp_aggregation_create(name_of, NULL);
    kp_event plain = ev(KP_EVENT_RANGE, N_STEP, 0, 10, 1, 0);
    CHECK_INT(kp_aggregation_add(a, &plain, NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_aggregation_get_totals(a)->metric_events, 0);
    kp_aggregation_destroy(a);
}

/* Thousands of distinct paths on many threads; memory per node, every number still exact. */
static void test_many_paths(void)
{
    enum { PATHS = 3000, REPEAT = 4 };
    kp_aggregation *a = kp_aggregation_create(NULL, NULL); /* names print as #ID */
    uint64_t corr = 1;
    for (int r = 0; r < REPEAT; r++) {
        for (int i = 0; i < PATHS; i++) {
            int64_t t0 = ((int64_t)r * PATHS + i) * 100;
            kp_event range = ev(KP_EVENT_RANGE, 1000 + (uint32_t)i, t0, t0 + 50, i % 7, 0);
            kp_event call = ev(KP_EVENT_API, N_LAUNCH, t0 + 10, t0 + 20, i % 7, corr);
            kp_event kernel = ev(KP_EVENT_KERNEL, N_GEMM, t0 + 30, t0 + 90, 0, corr);
            corr++;
            CHECK_INT(kp_aggregation_add(a, &range, NULL), 0);
            CHECK_INT(kp_aggregation_add(a, &call, NULL), 0);
            CHECK_INT(kp_aggregation_add(a, &kernel, NULL), 0);
        }
    }
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_aggregation_node_count(a), 1 + 3 * PATHS);
    const kp_aggregation_node *root = kp_aggregation_get_node(a, 0);
    CHECK_INT(root->stats.inclusive_ns, (int64_t)PATHS * REPEAT * 50);
    CHECK_INT(root->stats.gpu_ns, (int64_t)PATHS * REPEAT * 60);
    CHECK_INT(children(a, root), PATHS);
    for (uint32_t c = root->first_child; c; c = kp_aggregation_get_node(a, c)->next_sibling) {
        const kp_aggregation_node *n = kp_aggregation_get_node(a, c);
        if (n->stats.count != REPEAT || n->stats.exclusive_ns != REPEAT * 40 ||
            n->stats.gpu_ns != REPEAT * 60) {
            CHECK(0);
            break;
        }
    }
    char buf[24];
    CHECK_STR(kp_aggregation_name(a, root->first_child, buf, sizeof buf), "#1000");
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    CHECK_INT(t->kernel_busy_ns, (int64_t)PATHS * REPEAT * 60);
    CHECK_INT(t->ops_without_call, 0);
    kp_aggregation_row *rows = NULL;
    size_t n = 0;
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    CHECK_INT(n, PATHS + 2);
    kp_aggregation_select(rows, n, KP_AGGREGATION_SORT_TOTAL, 0);
    CHECK_INT(rows[0].name, N_GEMM);
    CHECK_INT(rows[0].stats.count, PATHS * REPEAT);
    free(rows);
    kp_aggregation_destroy(a);
}

/* Paths deeper than the limit fold onto its last level; the Hatchet export still writes them. */
static void test_depth_limit(void)
{
    enum { DEPTH = KP_AGGREGATION_MAX_DEPTH + 10 };
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    for (int i = 0; i < DEPTH; i++) {
        kp_event r = ev(KP_EVENT_RANGE, N_A, i, 1000 - i, 1, 0);
        CHECK_INT(kp_aggregation_add(a, &r, NULL), 0);
    }
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    CHECK_INT(t->folded, 10);
    CHECK_INT(kp_aggregation_node_count(a), 1 + KP_AGGREGATION_MAX_DEPTH);
    uint32_t deepest = (uint32_t)kp_aggregation_node_count(a) - 1;
    const kp_aggregation_node *n = kp_aggregation_get_node(a, deepest);
    CHECK_INT(n->depth, KP_AGGREGATION_MAX_DEPTH);
    CHECK_INT(n->stats.count, 11); /* its own event and the ten folded onto it */
    /* Inclusive time still sums: every level's instances are counted once somewhere. */
    int64_t total = 0;
    for (uint32_t id = 1; id < kp_aggregation_node_count(a); id++)
        total += kp_aggregation_get_node(a, id)->stats.exclusive_ns;
    CHECK_INT(total, 1000); /* the outermost range's length: the levels' own parts */
    kp_str s = {0};
    CHECK_INT(kp_hatchet_write(a, NULL, &s, NULL), 0);
    kp_str_free(&s);
    kp_aggregation_destroy(a);
}

/* The Hatchet document: shape, every metric on every node, names made valid UTF-8. */
static void test_hatchet(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event v[] = {
        ev(KP_EVENT_RANGE, N_BAD, 0, 2000000000, 1, 0),
        ev(KP_EVENT_API, N_LAUNCH, 1000, 501000, 1, 1),
        ev(KP_EVENT_KERNEL, N_GEMM, 600000, 1600000, 0, 1),
    };
    feed_sorted(a, v, 3);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    kp_str s = {0};
    CHECK_INT(kp_hatchet_write(a, "my \"prog\"", &s, NULL), 0);
    CHECK_STR(s.data,
              "[{\"frame\":{\"name\":\"my \\\"prog\\\"\",\"type\":\"root\"},\"metrics\":{"
              "\"time (inc)\":2,\"time\":0,\"calls\":0,\"gpu_time (inc)\":0.001,\"gpu_time\":0,"
              "\"flops (inc)\":0,\"flops\":0,\"bytes (inc)\":0,\"bytes\":0},\"children\":["
              "{\"frame\":{\"name\":\"bad\\u00ff\\u00c3(\",\"type\":\"range\"},\"metrics\":{"
              "\"time (inc)\":2,\"time\":1.9995,\"calls\":1,\"gpu_time (inc)\":0.001,"
              "\"gpu_time\":0,\"flops (inc)\":0,\"flops\":0,\"bytes (inc)\":0,\"bytes\":0},"
              "\"children\":[{\"frame\":{\"name\":\"cudaLaunchKernel\",\"type\":\"api\"},"
              "\"metrics\":{\"time (inc)\":0.0005,\"time\":0.0005,\"calls\":1,"
              "\"gpu_time (inc)\":0.001,\"gpu_time\":0,\"flops (inc)\":0,\"flops\":0,"
              "\"bytes (inc)\":0,\"bytes\":0},\"children\":[{\"frame\":{\"name\":\"gemm\","
              "\"type\":\"kernel\"},\"metrics\":{\"time (inc)\":0,\"time\":0,\"calls\":1,"
              "\"gpu_time (inc)\":0.001,\"gpu_time\":0.001,\"flops (inc)\":0,\"flops\":0,"
              "\"bytes (inc)\":0,\"bytes\":0}}]}]}]}]\n");
    kp_str_free(&s);
    kp_aggregation_destroy(a);

    /* An empty aggregation still makes a document Hatchet loads: the root alone. */
    a = kp_aggregation_create(name_of, NULL);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_hatchet_write(a, NULL, &s, NULL), 0);
    CHECK_CONTAINS(s.data, "{\"name\":\"kprof\",\"type\":\"root\"}");
    CHECK_CONTAINS(s.data, "\"children\":[]");
    kp_str_free(&s);
    kp_aggregation_destroy(a);
}

/* Misuse and the small functions. */
static void test_api(void)
{
    kp_aggregation_destroy(NULL);
    kp_aggregation_sort key;
    CHECK_INT(kp_aggregation_sort_parse("self", &key), 0);
    CHECK_INT(key, KP_AGGREGATION_SORT_SELF);
    CHECK_INT(kp_aggregation_sort_parse("gpu", &key), 0);
    CHECK_INT(key, KP_AGGREGATION_SORT_GPU);
    CHECK_INT(kp_aggregation_sort_parse("bogus", &key), -1);
    CHECK_INT(kp_aggregation_sort_parse(NULL, &key), -1);
    CHECK_STR(kp_aggregation_sort_name(KP_AGGREGATION_SORT_CALLS), "calls");
    kp_aggregation_group g;
    CHECK_INT(kp_aggregation_group_parse("path", &g), 0);
    CHECK_INT(g, KP_AGGREGATION_GROUP_PATH);
    CHECK_INT(kp_aggregation_group_parse("paths", &g), -1);
    CHECK_STR(kp_aggregation_group_name(KP_AGGREGATION_GROUP_NAME), "name");

    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    kp_event mark = ev(KP_EVENT_MARK, N_A, 5, 5, 1, 0);
    kp_event sync = ev(KP_EVENT_SYNC, N_NONE, 6, 9, 1, 0);
    kp_event backwards = ev(KP_EVENT_API, N_B, 20, 10, 1, 0); /* end before start: an instant */
    CHECK_INT(kp_aggregation_add(a, &mark, NULL), 0);
    CHECK_INT(kp_aggregation_add(a, &sync, NULL), 0);
    CHECK_INT(kp_aggregation_add(a, &backwards, NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    kp_error err = {0};
    CHECK_INT(kp_aggregation_finish(a, &err), KPROF_INVALID); /* once */
    CHECK_CONTAINS(err.message, "after kp_aggregation_finish");
    kp_error_clear(&err);
    CHECK_INT(kp_aggregation_add(a, &mark, NULL), KPROF_INVALID);
    const kp_aggregation_totals *t = kp_aggregation_get_totals(a);
    CHECK_INT(t->ignored, 1);
    CHECK_INT(t->wait_ns, 3);
    CHECK_NODE(a, "B", 1, 0, 0, 0);
    CHECK(kp_aggregation_get_node(a, 99) == NULL);
    char buf[24];
    CHECK_STR(kp_aggregation_name(a, 0, buf, sizeof buf), "(root)");
    kp_aggregation_row *rows = (kp_aggregation_row *)1;
    size_t n = 5;
    kp_aggregation_destroy(a);
    a = kp_aggregation_create(name_of, NULL);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(kp_aggregation_rows(a, KP_AGGREGATION_GROUP_NAME, &rows, &n, NULL), 0);
    CHECK(rows == NULL);
    CHECK_INT(n, 0);
    CHECK_INT(kp_aggregation_select(NULL, 0, KP_AGGREGATION_SORT_TOTAL, 3), 0);
    kp_aggregation_destroy(a);
}

/* core/busy.h: overlapping and touching intervals are one stretch; order matters. */
static void test_busy(void)
{
    kp_busy b = {0};
    CHECK_INT(kp_busy_ns(&b), 0);
    CHECK_INT(kp_busy_add(&b, 10, 20), KP_BUSY_OPENED);
    CHECK_INT(kp_busy_add(&b, 12, 18), KP_BUSY_INSIDE);
    CHECK_INT(kp_busy_add(&b, 15, 25), KP_BUSY_EXTENDED);
    CHECK_INT(kp_busy_add(&b, 25, 30), KP_BUSY_EXTENDED); /* touching */
    CHECK_INT(kp_busy_add(&b, 40, 50), KP_BUSY_OPENED);
    CHECK_INT(kp_busy_ns(&b), 30);
    CHECK_INT(b.stretches, 2);
    CHECK_INT(kp_busy_add(&b, 45, 40), KP_BUSY_INSIDE); /* end before start: an instant */
    CHECK_INT(b.unordered, 0);
    CHECK_INT(kp_busy_add(&b, 35, 42), KP_BUSY_EXTENDED); /* unordered, into the open stretch */
    CHECK_INT(kp_busy_ns(&b), 35);
    CHECK_INT(kp_busy_add(&b, 0, 5), KP_BUSY_INSIDE); /* unordered, before it: counted apart */
    CHECK_INT(kp_busy_ns(&b), 40);
    CHECK_INT(b.unordered, 2);
    kp_busy h = {0};
    kp_busy_add(&h, INT64_MIN, INT64_MAX);
    CHECK_INT(kp_busy_ns(&h), INT64_MAX); /* saturates */
}

/* The observer sees every instance once, in its node, with the duration the node sums: calls
 * held by ties of start, device work placed at finish (before its call, or never finding one)
 * and work placed at once alike. An observer that fails spoils the aggregation. */
typedef struct observed {
    uint64_t count[64];
    int64_t sum[64];
    int fail_after; /* fail the call after this many (< 0: never) */
    int calls;
} observed;

static kprof_status observe(void *ctx, uint32_t node, int64_t d)
{
    observed *o = ctx;
    if (o->fail_after >= 0 && o->calls >= o->fail_after) return KPROF_NOMEM;
    o->calls++;
    if (node < 64) {
        o->count[node]++;
        o->sum[node] += d;
    }
    return KPROF_OK;
}

static void test_observer(void)
{
    kp_event v[] = {
        ev(KP_EVENT_KERNEL, N_GEMM, 5, 6, 0, 5),    /* before its call: placed at finish */
        ev(KP_EVENT_API, N_LAUNCH, 7, 9, 1, 5),     /* held (a tie may follow) */
        ev(KP_EVENT_RANGE, N_STEP, 7, 30, 1, 0),    /* the tie: the longer is the parent */
        ev(KP_EVENT_KERNEL, N_RELU, 10, 13, 0, 99), /* no call of correlation 99 */
        ev(KP_EVENT_API, N_LAUNCH, 11, 14, 1, 6),   ev(KP_EVENT_KERNEL, N_RELU, 15, 25, 0, 6),
        ev(KP_EVENT_SYNC, N_NONE, 26, 28, 1, 0), /* not placed: not observed */
    };
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    observed o;
    memset(&o, 0, sizeof o);
    o.fail_after = -1;
    kp_aggregation_observe(a, observe, &o);
    feed_sorted(a, v, sizeof v / sizeof v[0]);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    CHECK_INT(o.calls, 6);
    for (uint32_t id = 0; id < kp_aggregation_node_count(a); id++) {
        const kp_aggregation_node *n = kp_aggregation_get_node(a, id);
        CHECK_INT(o.count[id], n->stats.count);
        CHECK_INT(o.sum[id], n->stats.duration_ns);
    }
    CHECK_NODE(a, "step/cudaLaunchKernel/relu", 1, 0, 0, 10);
    kp_aggregation_destroy(a);

    /* Failing on the third instance: an add or the finish fails, and nothing works after. */
    a = kp_aggregation_create(name_of, NULL);
    memset(&o, 0, sizeof o);
    o.fail_after = 2;
    kp_aggregation_observe(a, observe, &o);
    int failed = 0;
    kp_event w[sizeof v / sizeof v[0]];
    memcpy(w, v, sizeof v);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        failed |= kp_aggregation_add(a, &w[i], NULL) != 0;
    failed |= kp_aggregation_finish(a, NULL) != 0;
    CHECK(failed);
    kp_error err = {0};
    CHECK_INT(kp_aggregation_finish(a, &err), KPROF_NOMEM); /* the failure's status again */
    CHECK_CONTAINS(err.message, "after an earlier failure");
    kp_error_clear(&err);
    kp_aggregation_destroy(a);
}

int main(void)
{
    test_two_threads();
    test_kernel_after_range();
    test_missing_and_late_calls();
    test_out_of_order_ends();
    test_ties_and_nested_calls();
    test_unordered();
    test_deep_nesting_is_linear();
    test_unordered_after_out_of_order_ends();
    test_metrics();
    test_copy_size_known();
    test_many_paths();
    test_depth_limit();
    test_hatchet();
    test_api();
    test_busy();
    test_observer();
    TEST_DONE();
}
