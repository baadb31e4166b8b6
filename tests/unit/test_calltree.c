/*
 * test_calltree.c — the call tree's views (export/calltree.c) over an aggregation built here
 * from events, the CSV field (export/csv.c) and the host call classes (core/host_calls.c): what
 * --depth and --top leave out and say they left out, names that need quoting or are not UTF-8,
 * an empty tree, and which calls are polls.
 */
#include "core/aggregate.h"
#include "core/host_calls.h"
#include "export/calltree.h"
#include "export/csv.h"
#include "test.h"

#include <stdlib.h>

enum { OUTER = 1, INNER, LAUNCH, KERNEL_A, KERNEL_B, ODD, NAMES };
static const char *const names[NAMES] = {"",        "outer", "inner",        "cudaLaunchKernel",
                                         "k,\"a\"", "kb",    "bad\xff\nname"};

static const char *name_of(void *ctx, uint32_t id)
{
    (void)ctx;
    return id < NAMES ? names[id] : NULL;
}

static kp_event ev(kp_event_kind kind, uint32_t name, int64_t start_us, int64_t end_us,
                   uint64_t corr)
{
    kp_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.name = name;
    e.start_ns = start_us * 1000;
    e.end_ns = end_us * 1000;
    e.process = 1;
    e.tid = 1;
    if (corr) {
        e.correlation = corr;
        e.known |= KP_EVENT_HAS_CORRELATION;
    }
    return e;
}

/* outer [0,100] > inner [10,50] > 2 launches (k,"a" twice) and 1 launch (kb); a range with an odd
 * name at the top level [200,210]. */
static kp_aggregation *build(void)
{
    kp_event v[] = {
        ev(KP_EVENT_RANGE, OUTER, 0, 100, 0), ev(KP_EVENT_RANGE, INNER, 10, 50, 0),
        ev(KP_EVENT_API, LAUNCH, 11, 12, 1),  ev(KP_EVENT_KERNEL, KERNEL_A, 13, 23, 1),
        ev(KP_EVENT_API, LAUNCH, 20, 21, 2),  ev(KP_EVENT_KERNEL, KERNEL_A, 24, 34, 2),
        ev(KP_EVENT_API, LAUNCH, 30, 31, 3),  ev(KP_EVENT_KERNEL, KERNEL_B, 35, 36, 3),
        ev(KP_EVENT_API, LAUNCH, 60, 61, 4),  ev(KP_EVENT_KERNEL, KERNEL_B, 62, 63, 4),
        ev(KP_EVENT_RANGE, ODD, 200, 210, 0),
    };
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    for (size_t i = 0; a && i < sizeof v / sizeof v[0]; i++)
        CHECK_INT(kp_aggregation_add(a, &v[i], NULL), 0);
    if (a) CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    return a;
}

static char *render(kp_aggregation *a, const kp_calltree_view *v, kp_calltree_format f)
{
    kp_str s = {0};
    CHECK_INT(kp_calltree_render(a, v, f, &s, NULL), 0);
    return kp_str_take(&s);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void test_views(void)
{
    kp_aggregation *a = build();
    CHECK(a != NULL);
    if (!a) return;
    kp_calltree_view v = {.trace = "t.kprof", .command = "prog"};
    /* The whole tree: outer, inner, launch, k,"a", kb; outer's own launch and kb; the odd range. */
    char *csv = render(a, &v, KP_CALLTREE_CSV);
    CHECK_INT(count(csv, "\n"), 1 + 8 + 2); /* the odd name's newline, in name and path */
    CHECK_CONTAINS(csv, "\"k,\"\"a\"\"\""); /* quoted, quotes doubled */
    CHECK_CONTAINS(csv, "\"outer/inner/cudaLaunchKernel/k,\"\"a\"\"\"");
    CHECK_CONTAINS(csv, "range,\"bad\xef\xbf\xbd\nname\","); /* U+FFFD, newline quoted */
    free(csv);
    char *json = render(a, &v, KP_CALLTREE_JSON);
    CHECK_CONTAINS(json, "\"name\": \"bad\\u00ff\\nname\"");
    CHECK_CONTAINS(json, "\"top_level_not_shown\": 0");
    CHECK_CONTAINS(json, "\"call_paths\": 8");
    free(json);
    /* --depth 2: outer, its two children and the odd range; inner and outer's launch each say
     * one child is not shown. */
    v.depth = 2;
    csv = render(a, &v, KP_CALLTREE_CSV);
    CHECK_INT(count(csv, "\n"), 1 + 4 + 2);
    CHECK_CONTAINS(csv, ",outer/inner,1,");
    CHECK(strstr(csv, "outer/inner/") == NULL);
    CHECK_INT(count(csv, ",1\n"), 2); /* children_not_shown, the last column */
    free(csv);
    /* --top 1: one child per node, "… N more" lines in the text, counts in the JSON. */
    v.depth = 0;
    v.top = 1;
    char *text = render(a, &v, KP_CALLTREE_TEXT);
    /* the odd range, outer's launch, and kb under inner's launch */
    CHECK_INT(count(text, "… 1 more\n"), 3);
    CHECK_CONTAINS(text, "(the first 1 of each)");
    json = render(a, &v, KP_CALLTREE_JSON);
    CHECK_CONTAINS(json, "\"top_level_not_shown\": 1");
    CHECK_CONTAINS(json, "\"top\": 1");
    free(json);
    CHECK(strstr(text, "bad\\xff\\nname") == NULL); /* --top 1 left it out */
    free(text);
    v.top = 0;
    text = render(a, &v, KP_CALLTREE_TEXT);
    CHECK_CONTAINS(text, "  bad\\xff\\nname\n"); /* one line, escaped */
    free(text);
    /* Key averages by name: the kernels of one name together; --top 2 rows of 6. */
    kp_calltree_view by = {.key_averages = 1, .group = KP_AGGREGATION_GROUP_NAME, .top = 2};
    json = render(a, &by, KP_CALLTREE_JSON);
    CHECK_CONTAINS(json, "\"rows_in_all\": 6");
    CHECK_INT(count(json, "\"kind\":"), 2);
    free(json);
    by.top = 0;
    by.sort = KP_AGGREGATION_SORT_CALLS;
    csv = render(a, &by, KP_CALLTREE_CSV);
    CHECK(strncmp(csv, "kind,name,calls,", 16) == 0);
    CHECK_CONTAINS(csv, "\napi,cudaLaunchKernel,4,"); /* 4 calls: first by calls */
    free(csv);
    kp_aggregation_destroy(a);
}

/* Rates: none in any view of a stream without metrics (the build above); with them, each node's
 * flops and bytes per second of its own events' time that carry them, null where it has none. */
static void test_rates(void)
{
    kp_aggregation *a = build();
    kp_calltree_view v = {.trace = "t.kprof"};
    kp_calltree_view by = {.key_averages = 1, .group = KP_AGGREGATION_GROUP_NAME};
    char *out[4] = {render(a, &v, KP_CALLTREE_TEXT), render(a, &v, KP_CALLTREE_JSON),
                    render(a, &v, KP_CALLTREE_CSV), render(a, &by, KP_CALLTREE_TEXT)};
    for (int i = 0; i < 4; i++) {
        CHECK(strstr(out[i], "GFLOP/s") == NULL && strstr(out[i], "gflop_per_s") == NULL);
        CHECK(strstr(out[i], "GB/s") == NULL && strstr(out[i], "gb_per_s") == NULL);
        free(out[i]);
    }
    kp_aggregation_destroy(a);

    /* inner [10,50] with 8e4 flops (2 GFLOP/s over its 40 µs); its kernel k,"a" twice, 10 µs
     * each, with 1e5 flops and 5e4 bytes each (10 GFLOP/s, 5 GB/s). */
    kp_event e[] = {ev(KP_EVENT_RANGE, INNER, 10, 50, 0), ev(KP_EVENT_API, LAUNCH, 11, 12, 1),
                    ev(KP_EVENT_KERNEL, KERNEL_A, 13, 23, 1), ev(KP_EVENT_API, LAUNCH, 20, 21, 2),
                    ev(KP_EVENT_KERNEL, KERNEL_A, 24, 34, 2)};
    e[0].metrics.flops = 8e4;
    e[0].known |= KP_EVENT_HAS_FLOPS;
    for (int i = 2; i <= 4; i += 2) {
        e[i].metrics.flops = 1e5;
        e[i].metrics.bytes = 5e4;
        e[i].known |= KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES;
    }
    a = kp_aggregation_create(name_of, NULL);
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        CHECK_INT(kp_aggregation_add(a, &e[i], NULL), 0);
    CHECK_INT(kp_aggregation_finish(a, NULL), 0);
    char *json = render(a, &v, KP_CALLTREE_JSON);
    CHECK_CONTAINS(json, "\"flops\": 80000,\n      \"bytes\": 0,\n      \"gflop_per_s\": 2,\n"
                         "      \"gb_per_s\": null");
    CHECK_CONTAINS(json, "\"flops\": 200000,\n      \"bytes\": 100000,\n      \"gflop_per_s\": "
                         "10,\n      \"gb_per_s\": 5");
    CHECK_INT(count(json, "\"gflop_per_s\": null"), 1); /* the launch call */
    free(json);
    char *csv = render(a, &v, KP_CALLTREE_CSV);
    CHECK_CONTAINS(csv, ",flops,bytes,gflop_per_s,gb_per_s,children_not_shown\n");
    CHECK_CONTAINS(csv, ",80000,0,2,,0\n");
    CHECK_CONTAINS(csv, ",200000,100000,10,5,0\n");
    free(csv);
    char *text = render(a, &v, KP_CALLTREE_TEXT);
    /* A node that launched device work: its throughput over its device time (80 k flops in
     * 20 us), the host-time figure beside it (over 40 us). */
    CHECK_CONTAINS(text, "     Flops  Dev GFLOP/s  Host GFLOP/s       Bytes  Dev GB/s  Host GB/s  "
                         "Kind");
    CHECK_CONTAINS(text, "    80 k         4.00          2.00           -         -          -  "
                         "range");
    CHECK_CONTAINS(text, "   200 k         10.0             -   97.66 KiB      5.00          -  "
                         "kernel");
    free(text);
    text = render(a, &by, KP_CALLTREE_TEXT);
    CHECK_CONTAINS(text, "GFLOP/s");
    CHECK_CONTAINS(text, "GB/s");
    free(text);
    kp_aggregation_destroy(a);
}

static void test_empty(void)
{
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    CHECK(a && kp_aggregation_finish(a, NULL) == 0);
    kp_calltree_view v = {0};
    char *text = render(a, &v, KP_CALLTREE_TEXT);
    CHECK_CONTAINS(text, "(no calls, ranges or device work recorded)");
    free(text);
    char *json = render(a, &v, KP_CALLTREE_JSON);
    CHECK_CONTAINS(json, "\"nodes\": []");
    CHECK_CONTAINS(json, "\"depth\": null");
    free(json);
    kp_aggregation_destroy(a);
}

static void test_csv_field(void)
{
    const struct {
        const char *in, *out;
    } cases[] = {{"plain", "plain"},
                 {"a,b", "\"a,b\""},
                 {"say \"hi\"", "\"say \"\"hi\"\"\""},
                 {"two\nlines", "\"two\nlines\""},
                 {"cr\r", "\"cr\r\""},
                 {"\xff", "\xef\xbf\xbd"},
                 {"", ""},
                 {NULL, ""}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kp_str s = {0};
        kp_csv_field(&s, cases[i].in);
        CHECK_STR(s.data ? s.data : "", cases[i].out);
        kp_str_free(&s);
    }
}

static void test_host_calls(void)
{
    CHECK_INT(kp_host_call_flags("cudaGetLastError"), KP_HOST_CALL_POLLING);
    CHECK_INT(kp_host_call_flags("clGetEventInfo"), KP_HOST_CALL_POLLING);
    CHECK_INT(kp_host_call_flags("cudaMemcpy"), KP_HOST_CALL_SYNC | KP_HOST_CALL_LAUNCH);
    CHECK_INT(kp_host_call_flags("cudaMemcpyAsync"), KP_HOST_CALL_LAUNCH);
    CHECK_INT(kp_host_call_flags("cuLaunchKernel_ptsz"), KP_HOST_CALL_LAUNCH);
    CHECK_INT(kp_host_call_flags("cudaLaunchHostFunc"), 0);
    CHECK_INT(kp_host_call_flags("clFinish"), KP_HOST_CALL_SYNC);
    CHECK_INT(kp_host_call_flags("cudaMalloc"), 0);
    CHECK_INT(kp_host_call_flags(NULL), 0);
}

int main(void)
{
    test_views();
    test_rates();
    test_empty();
    test_csv_field();
    test_host_calls();
    TEST_DONE();
}
