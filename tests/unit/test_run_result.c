/* test_run_result.c — a run's numbers: computed from timings, and the three JSON forms they are
 * written in (run.json, a sweep point, a ceiling point) pinned key by key, in order; with
 * --counters, their "counters" last in run.json and in a sweep point, read into the readings. */
#include "lab/run_result.h"
#include "test.h"

#include <stdlib.h>

/* The members one form writes, as the compact JSON of an object holding nothing else. */
static char *form_json(const kp_run_result *r, kp_run_json_form form)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_run_result_json(&j, r, form);
    kp_json_object_end(&j);
    CHECK_INT(kp_json_finish(&j), 0);
    return kp_str_take(&s);
}

static double samples[4] = {1, 0.25, 2, 0.75};

/* Every number set, to values JSON writes exactly. */
static kp_run_result full(void)
{
    kp_run_result r;
    memset(&r, 0, sizeof r);
    r.launch = (kp_launch){.dims = 2, .grid = {1024, 64, 1}, .tg = {32, 4, 1}};
    r.iters = 4;
    r.warmup = 2;
    r.samples = samples;
    r.stats = (kp_stats){
        .n = 4, .min = 0.25, .max = 2, .mean = 1, .stddev = 0.5, .median = 0.75, .p90 = 1.5};
    r.p10 = 0.375;
    r.p90 = 1.75;
    r.bytes = 1048576;
    r.bytes_assumed = 1;
    r.gbps = 1.5;
    r.ceiling_gbs = 3;
    r.refl.max_tg = 256;
    r.refl.tg_rule = KP_TG_RULE_MAX;
    r.refl.tg_rule_size[0] = 256;
    r.refl.tg_rule_size[1] = r.refl.tg_rule_size[2] = 1;
    r.refl.tg_rule_from = "__launch_bounds__ / .maxntid";
    r.refl.preferred_multiple = 32;
    r.refl.static_local = 1024;
    r.refl.have_registers = 1;
    r.refl.registers = 32;
    r.refl.const_bytes = 8;
    r.refl.ptx_version = 80;
    r.refl.binary_version = 90;
    r.refl.have_occupancy = 1;
    r.refl.occupancy = 0.5;
    r.refl.blocks_per_sm = 4;
    snprintf(r.refl.limiter, sizeof r.refl.limiter, "registers");
    r.readings_in.working_set = 3145728;
    r.readings_in.grid_bytes = 262144;
    r.readings_in.device_max_tg = 1024;
    r.readings.grid_short = 1;
    r.readings.fits_cache = 1;
    return r;
}

static void test_forms(void)
{
    kp_run_result r = full();
    char *s = form_json(&r, KP_RUN_JSON_RUN);
    CHECK_STR(s, "{\"grid\":[1024,64],\"threadgroup\":[32,4],\"iterations\":4,\"warmup\":2,"
                 "\"gpu_ms_median\":0.75,\"gpu_ms_min\":0.25,\"gpu_ms_p90\":1.5,\"gpu_ms_max\":2,"
                 "\"gpu_ms_mean\":1,\"gpu_ms_stddev\":0.5,\"gpu_ms_samples\":[1,0.25,2,0.75],"
                 "\"bytes\":1048576,\"bytes_assumed_once_per_element\":true,"
                 "\"approx_gb_per_s\":1.5,\"ceiling_gb_per_s\":3,\"ceiling_percent\":50,"
                 "\"working_set_bytes\":3145728,\"grid_touch_bytes\":262144,"
                 "\"last_level_cache_bytes\":null,\"not_dram_reasons\":[\"grid_short\","
                 "\"fits_cache\"],\"reflection\":{\"max_threadgroup_size\":256,"
                 "\"device_max_threadgroup_size\":1024,\"threadgroup_rule\":{\"kind\":\"max\","
                 "\"size\":[256,1,1],\"threads\":256,\"from\":\"__launch_bounds__ / .maxntid\"},"
                 "\"preferred_multiple\":32,\"static_local_bytes\":1024,"
                 "\"dynamic_local_bytes\":0,\"private_bytes\":0,\"registers\":32,"
                 "\"const_bytes\":8,\"ptx_version\":80,\"binary_version\":90,\"occupancy\":0.5,"
                 "\"blocks_per_sm\":4,\"occupancy_limiter\":\"registers\"}}");
    free(s);
    /* A sweep point's gpu_ms_p90 is the interpolated one; its occupancy sits at the top; its
     * iterations are its own (the time budget may cut a slow point's). */
    s = form_json(&r, KP_RUN_JSON_SWEEP_POINT);
    CHECK_STR(s, "{\"threadgroup\":[32,4],\"threads\":128,\"iterations\":4,\"gpu_ms_median\":0.75,"
                 "\"gpu_ms_min\":0.25,\"gpu_ms_p10\":0.375,\"gpu_ms_p90\":1.75,"
                 "\"approx_gb_per_s\":1.5,\"ceiling_percent\":50,\"occupancy\":0.5,"
                 "\"occupancy_limiter\":\"registers\"}");
    free(s);
    r.launch = (kp_launch){.dims = 1, .grid = {4096, 1, 1}, .tg = {256, 1, 1}};
    s = form_json(&r, KP_RUN_JSON_CEILING_POINT);
    CHECK_STR(s, "{\"tg\":256,\"best_ms\":0.25,\"median_ms\":0.75,\"gb_per_s\":1.5}");
    free(s);
}

/* What is absent: no ceiling (null in run.json, no share anywhere), no occupancy, no
 * registers, no threadgroup rule, a cache that is known. */
static void test_absent(void)
{
    kp_run_result r = full();
    r.ceiling_gbs = 0;
    r.refl.have_occupancy = 0;
    r.refl.have_registers = 0;
    r.refl.tg_rule = KP_TG_RULE_NONE;
    r.readings_in.cache_bytes = 33554432;
    r.readings.grid_short = r.readings.fits_cache = 0;
    r.readings.unexplained = 1;
    char *s = form_json(&r, KP_RUN_JSON_RUN);
    CHECK_CONTAINS(s, "\"approx_gb_per_s\":1.5,\"ceiling_gb_per_s\":null,\"working_set_bytes\"");
    CHECK_CONTAINS(s,
                   "\"last_level_cache_bytes\":33554432,\"not_dram_reasons\":[\"above_ceiling\"]");
    CHECK_CONTAINS(s, "\"threadgroup_rule\":null,");
    CHECK_CONTAINS(s, "\"private_bytes\":0}}");
    free(s);
    s = form_json(&r, KP_RUN_JSON_SWEEP_POINT);
    CHECK_STR(s, "{\"threadgroup\":[32,4],\"threads\":128,\"iterations\":4,\"gpu_ms_median\":0.75,"
                 "\"gpu_ms_min\":0.25,\"gpu_ms_p10\":0.375,\"gpu_ms_p90\":1.75,"
                 "\"approx_gb_per_s\":1.5}");
    free(s);
}

/* --counters: "counters" closes run.json and a sweep point (never a ceiling point), and
 * kp_run_result_read takes the measured figures into the readings. */
static void test_counters(void)
{
    kp_run_result r = full();
    kp_counters unread = {.read = 1, .have = 0};
    snprintf(unread.why_not, sizeof unread.why_not, "no counters here");
    r.counters = &unread;
    char *s = form_json(&r, KP_RUN_JSON_RUN);
    CHECK_CONTAINS(s, "\"occupancy_limiter\":\"registers\"},\"counters\":{\"available\":false,"
                      "\"reason\":\"no counters here\"}}");
    free(s);
    s = form_json(&r, KP_RUN_JSON_SWEEP_POINT);
    CHECK_CONTAINS(s, "\"occupancy_limiter\":\"registers\",\"counters\":{\"available\":false");
    free(s);
    s = form_json(&r, KP_RUN_JSON_CEILING_POINT);
    CHECK(strstr(s, "counters") == NULL);
    free(s);
    /* Read: 3 MB of DRAM traffic at a 3 ms median is 1 GB/s, half a 2 GB/s ceiling; the FLOP
     * peak goes with it. */
    kp_counters c = {.read = 1, .have = 1};
    c.v[KP_COUNTER_DRAM_READ] = (kp_counter_value){1, 2000000, "dram__bytes_read.sum"};
    c.v[KP_COUNTER_DRAM_WRITE] = (kp_counter_value){1, 1000000, "dram__bytes_write.sum"};
    kp_run_result m;
    memset(&m, 0, sizeof m);
    m.stats.median = 3;
    kp_run_result_bandwidth(&m, 3000000, 1, 2);
    m.counters = &c;
    m.peak_gflops = 100;
    kp_device_info dev = {.max_tg = 256};
    kp_run_result_read(&m, &dev, 3000000, 3000000, 1000);
    CHECK_INT(m.readings_in.measured.have_dram, 1);
    CHECK_NEAR(m.readings_in.measured.peak_gflops, 100, 0);
    CHECK_NEAR(m.readings.measured_gbps, 1, 1e-12);
    CHECK_NEAR(m.readings.measured_fraction, 0.5, 1e-12);
    CHECK_INT(m.readings.traffic, KP_TRAFFIC_MATCHES);
    /* Without counters nothing measured enters the readings. */
    m.counters = NULL;
    kp_run_result_read(&m, &dev, 3000000, 3000000, 1000);
    CHECK_INT(m.readings_in.measured.have_dram, 0);
    CHECK_INT(m.readings.measured, 0);
}

static void test_compute(void)
{
    kp_run_result r;
    memset(&r, 0, sizeof r);
    double v[5] = {5, 1, 4, 2, 3}, scratch[5];
    kp_run_result_time(&r, v, 5, scratch);
    CHECK_NEAR(r.stats.median, 3, 0);
    CHECK_NEAR(r.stats.min, 1, 0);
    CHECK_NEAR(r.stats.p90, 5, 0); /* sorted[floor(0.9 n)] */
    CHECK_NEAR(r.p10, 1.4, 1e-12); /* interpolated */
    CHECK_NEAR(r.p90, 4.6, 1e-12);
    /* 3 MB at a 3 ms median: 1 GB/s; half a 2 GB/s ceiling. */
    kp_run_result_bandwidth(&r, 3000000, 1, 2);
    CHECK_INT(r.bytes, 3000000);
    CHECK(r.bytes_assumed);
    CHECK_NEAR(r.gbps, 1, 1e-12);
    CHECK_NEAR(kp_run_result_ceiling_percent(&r), 50, 1e-9);
    kp_run_result_bandwidth(&r, 3000000, 0, 0);
    CHECK_NEAR(kp_run_result_ceiling_percent(&r), 0, 0);
    r.stats.median = 0;
    kp_run_result_bandwidth(&r, 3000000, 0, 0);
    CHECK_NEAR(r.gbps, 0, 0);
}

int main(void)
{
    test_forms();
    test_absent();
    test_counters();
    test_compute();
    TEST_DONE();
}
