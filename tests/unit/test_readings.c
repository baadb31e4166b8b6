/* test_readings.c — the bandwidth reading's decision table (kp_readings_compute: the share of the
 * ceiling and the sizes decide; never "bandwidth-bound" above the ceiling or when the sizes say
 * the figure is not DRAM traffic), and that the sentences name the reasons the flags hold. */
#include "core/readings.h"
#include "test.h"

#define MIB (1024ULL * 1024)

/* A kernel over three buffers of 64 MiB on a device with a 32 MiB cache, the grid covering
 * them, no --bytes: the only thing a case changes is what it is about. */
static kp_readings_input base(double percent_of_ceiling)
{
    kp_readings_input in = {
        .median_ms = 1,
        .ceiling_gbs = 100,
        .gbps = percent_of_ceiling,
        .bytes_assumed = 1,
        .bytes = 3 * 64 * MIB,
        .working_set = 3 * 64 * MIB,
        .grid_bytes = 3 * 64 * MIB,
        .grid_threads = 16 * MIB,
        .cache_bytes = 32 * MIB,
        .kernel_max_tg = 1024,
        .device_max_tg = 1024,
    };
    return in;
}

static int has_id(const kp_reading_line *l, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(l[i].id, id) == 0) return 1;
    return 0;
}

static const char *text_of(const kp_reading_line *l, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(l[i].id, id) == 0) return l[i].text;
    return NULL;
}

static int any_says_bandwidth_bound(const kp_reading_line *l, int n)
{
    for (int i = 0; i < n; i++)
        if (strstr(l[i].text, "bandwidth-bound") && !strstr(l[i].text, "not bandwidth-bound"))
            return 1;
    return 0;
}

typedef struct row {
    const char *what;
    double percent;       /* of the ceiling */
    int bytes_given;      /* --bytes */
    uint64_t working_set; /* 0: base */
    uint64_t grid_bytes;  /* 0: base (the grid covers the buffers) */
    uint64_t cache;       /* (uint64_t)-1: base; 0: unknown */
    kp_bandwidth_reading expect;
    int grid_short, fits_cache, bytes_overstate, unexplained;
    const char *id;
} row;

#define BASE_CACHE ((uint64_t)-1)

static const row table[] = {
    /* DRAM-sized, grid covers: the share decides. */
    {"below 70%", 50, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_BELOW, 0, 0, 0, 0, "bandwidth"},
    {"just under 70%", 69.9, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_BELOW, 0, 0, 0, 0, "bandwidth"},
    {"70%", 70, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_BOUND, 0, 0, 0, 0, "bandwidth_bound"},
    {"95%", 95, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_BOUND, 0, 0, 0, 0, "bandwidth_bound"},
    {"110% (noise)", 110, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_BOUND, 0, 0, 0, 0, "bandwidth_bound"},
    {"111%: above, nothing in the sizes explains it", 111, 0, 0, 0, BASE_CACHE, KP_BANDWIDTH_ABOVE,
     0, 0, 0, 1, "above_ceiling"},
    {"above, cache unknown", 150, 0, 0, 0, 0, KP_BANDWIDTH_ABOVE, 0, 0, 0, 1, "above_ceiling"},
    {"near, cache unknown", 90, 0, 0, 0, 0, KP_BANDWIDTH_BOUND, 0, 0, 0, 0, "bandwidth_bound"},
    /* The issue's first case: grid 3000, three 1M-element f32 buffers: 12492%. */
    {"grid 3000 over 1M buffers", 12492, 0, 12 * MIB, 3000 * 4 * 3, BASE_CACHE, KP_BANDWIDTH_ABOVE,
     1, 1, 0, 0, "above_ceiling"},
    {"grid short and near the ceiling", 90, 0, 0, 64 * MIB, BASE_CACHE, KP_BANDWIDTH_NOT_DRAM, 1, 0,
     0, 0, "not_dram"},
    {"grid short, below", 30, 0, 0, 64 * MIB, BASE_CACHE, KP_BANDWIDTH_BELOW, 1, 0, 0, 0,
     "bandwidth"},
    /* The issue's second case: an 8 MiB working set inside the last-level cache: 123%. */
    {"8 MiB working set in the cache, 123%", 123, 0, 8 * MIB, 8 * MIB, BASE_CACHE,
     KP_BANDWIDTH_ABOVE, 0, 1, 0, 0, "above_ceiling"},
    {"in the cache and near the ceiling", 85, 0, 8 * MIB, 8 * MIB, BASE_CACHE,
     KP_BANDWIDTH_NOT_DRAM, 0, 1, 0, 0, "not_dram"},
    {"exactly the cache's size", 90, 0, 32 * MIB, 32 * MIB, BASE_CACHE, KP_BANDWIDTH_NOT_DRAM, 0, 1,
     0, 0, "not_dram"},
    {"one byte more than the cache", 90, 0, 32 * MIB + 1, 32 * MIB + 1, BASE_CACHE,
     KP_BANDWIDTH_BOUND, 0, 0, 0, 0, "bandwidth_bound"},
    /* --bytes: the user's figure; the grid's reach no longer counts. */
    {"--bytes, near", 90, 1, 0, 64 * MIB, BASE_CACHE, KP_BANDWIDTH_BOUND, 0, 0, 0, 0,
     "bandwidth_bound"},
    {"--bytes, above", 200, 1, 0, 0, BASE_CACHE, KP_BANDWIDTH_ABOVE, 0, 0, 1, 0, "above_ceiling"},
    {"--bytes, above, in the cache", 200, 1, 8 * MIB, 8 * MIB, BASE_CACHE, KP_BANDWIDTH_ABOVE, 0, 1,
     0, 0, "above_ceiling"},
};

static void test_table(void)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const row *t = &table[i];
        kp_readings_input in = base(t->percent);
        if (t->working_set) in.working_set = in.bytes = t->working_set;
        if (t->grid_bytes) in.grid_bytes = t->grid_bytes;
        if (t->cache != BASE_CACHE) in.cache_bytes = t->cache;
        if (t->bytes_given) {
            in.bytes_assumed = 0;
            in.bytes = 100 * MIB;
        }
        kp_readings r;
        kp_readings_compute(&in, &r);
        kp_reading_line lines[16];
        int n = kp_readings_describe(&in, &r, lines, 16);
        int failures = kp_test_failures;
        CHECK_INT(r.bandwidth, t->expect);
        CHECK_INT(r.bandwidth_bound, t->expect == KP_BANDWIDTH_BOUND);
        CHECK_INT(r.grid_short, t->grid_short);
        CHECK_INT(r.fits_cache, t->fits_cache);
        CHECK_INT(r.bytes_overstate, t->bytes_overstate);
        CHECK_INT(r.unexplained, t->unexplained);
        CHECK(has_id(lines, n, t->id));
        CHECK_INT(any_says_bandwidth_bound(lines, n), t->expect == KP_BANDWIDTH_BOUND);
        const char *text = text_of(lines, n, t->id);
        /* The prose names each reason the analysis found. */
        if (t->expect == KP_BANDWIDTH_ABOVE || t->expect == KP_BANDWIDTH_NOT_DRAM) {
            if (t->grid_short) CHECK_CONTAINS(text, "threads touches at most");
            if (t->fits_cache) CHECK_CONTAINS(text, "fits in the device's 32 MiB last-level cache");
            if (t->bytes_overstate) CHECK_CONTAINS(text, "--bytes 100 MiB is more than");
            if (t->unexplained) CHECK_CONTAINS(text, "ceiling was measured low");
        }
        if (t->expect == KP_BANDWIDTH_ABOVE) CHECK_CONTAINS(text, "cannot be DRAM traffic");
        if (kp_test_failures != failures) fprintf(stderr, "  (in the case: %s)\n", t->what);
    }
}

static void test_issue_sentences(void)
{
    /* Grid 3,000 with 1M-element buffers: the figure the issue quoted. */
    kp_readings_input in = base(1391);
    in.ceiling_gbs = 11.14;
    in.working_set = in.bytes = 3 * 4 * MIB;
    in.grid_bytes = 3 * 3000 * 4;
    in.grid_threads = 3000;
    kp_readings r;
    kp_readings_compute(&in, &r);
    kp_reading_line lines[16];
    int n = kp_readings_describe(&in, &r, lines, 16);
    const char *t = text_of(lines, n, "above_ceiling");
    CHECK_CONTAINS(t, "~1391 GB/s is 12487% of this device's measured ceiling (11 GB/s)");
    CHECK_CONTAINS(t, "A grid of 3000 threads touches at most 35.16 KiB of the 12 MiB its "
                      "buffers hold");
    CHECK_CONTAINS(t, "The data it can touch (35.16 KiB) fits in the device's 32 MiB");
    CHECK(!has_id(lines, n, "bandwidth_bound"));
}

static void test_no_ceiling(void)
{
    kp_readings_input in = base(0);
    in.ceiling_gbs = 0;
    in.gbps = 5000;
    kp_readings r;
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_NO_CEILING);
    CHECK_INT(r.have_ceiling, 0);
    kp_reading_line lines[16];
    int n = kp_readings_describe(&in, &r, lines, 16);
    CHECK(has_id(lines, n, "no_ceiling"));
    CHECK(!any_says_bandwidth_bound(lines, n));
}

int main(void)
{
    test_table();
    test_issue_sentences();
    test_no_ceiling();
    return kp_test_failures ? 1 : 0;
}
