/* test_counters.c — hardware counters in the lab (lab/counters.h) on a backend of the test's own
 * whose counters op answers from a table, as a device that knows some metric names and not
 * others: what is asked for (every alternative of the standard set and the raw names, each
 * once), what is taken (the first alternative the device evaluates, scaled), raw names the
 * device lacks, the unavailable and fatal paths, --counters LIST's grammar; then the figures
 * and readings that follow, with exact numbers (core/readings.c): measured GB/s against the
 * ceiling, measured against estimated bytes, FLOPs, intensity, the roofline and the bound. */
#include "lab/counters.h"
#include "lab/lab_internal.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB (1024.0 * 1024.0)

/* ---- a device that knows some metrics ------------------------------------------------------- */

typedef struct fake_metric {
    const char *name;
    double value;
} fake_metric;

static const fake_metric *device_metrics;
static size_t device_nmetrics;
static kprof_status fake_status; /* what the op returns */
static size_t asked_n;           /* how many names the last call asked for */
static char asked[8192];         /* the names, space-separated */
static int calls;
static size_t first_n; /* ... and the first call's */
static char first[8192];
static double second_write = -1; /* >= 0: dram__bytes_write.sum's value from the second call on
                                    (a reading without the replay's restores) */
static kprof_status second_status = KPROF_OK; /* what the second call (DRAM alone) returns */

static kprof_status fake_counters(kp_kernel *k, const kp_launch *l, const char *const *metrics,
                                  size_t n, double *values, unsigned char *bad, kp_error *err)
{
    (void)k, (void)l;
    calls++;
    asked_n = n;
    asked[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(asked);
        snprintf(asked + used, sizeof asked - used, "%s%s", i ? " " : "", metrics[i]);
    }
    if (fake_status == KPROF_UNAVAILABLE)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "no profiling permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)\n"
                            "see NVIDIA's ERR_NVGPUCTRPERM page");
    if (fake_status != KPROF_OK) return kp_error_set(err, fake_status, "the kernel faulted");
    if (calls > 1 && second_status != KPROF_OK)
        return kp_error_set(err, second_status, "CUPTI said no\nto a second session");
    if (calls == 1) {
        first_n = asked_n;
        memcpy(first, asked, sizeof first);
    }
    for (size_t i = 0; i < n; i++) {
        values[i] = NAN;
        bad[i] = 1;
        for (size_t m = 0; m < device_nmetrics; m++)
            if (strcmp(device_metrics[m].name, metrics[i]) == 0) {
                values[i] = device_metrics[m].value;
                bad[i] = 0;
            }
        if (calls > 1 && second_write >= 0 && strcmp(metrics[i], "dram__bytes_write.sum") == 0)
            values[i] = second_write;
    }
    return KPROF_OK;
}

static void fake_close(kp_device *dev)
{
    (void)dev;
}
static void fake_program_release(kp_program *p)
{
    (void)p;
}
static void fake_kernel_release(kp_kernel *k)
{
    (void)k;
}
static void fake_free(kp_buffer *b)
{
    (void)b;
}

static const kp_backend_ops with_counters = {.name = "fake",
                                             .counters = fake_counters,
                                             .close = fake_close,
                                             .program_release = fake_program_release,
                                             .kernel_release = fake_kernel_release,
                                             .free = fake_free};
static const kp_backend_ops without_counters = {.name = "plain",
                                                .close = fake_close,
                                                .program_release = fake_program_release,
                                                .kernel_release = fake_kernel_release,
                                                .free = fake_free};

static const kp_launch launch = {.dims = 1, .grid = {1024, 1, 1}, .tg = {256, 1, 1}};

static kp_lab *fake_lab(const kp_backend_ops *ops)
{
    kp_lab *lab = calloc(1, sizeof *lab);
    lab->impl = &kp_lab_local;
    lab->ops = ops;
    lab->info.ops = ops;
    calls = 0;
    fake_status = KPROF_OK;
    return lab;
}

/* A Hopper-like device: the standard names but the first tensor alternative, plus one raw. */
static const fake_metric hopper[] = {
    {"dram__bytes_read.sum", 3 * MIB},
    {"dram__bytes_write.sum", 1 * MIB},
    {"lts__t_sectors_op_read.sum", 1000},
    {"lts__t_sectors_op_write.sum", 10},
    {"lts__t_sector_hit_rate.pct", 12.5},
    {"l1tex__t_sector_hit_rate.pct", 0},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", 87.25},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 45},
    {"sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", 12},
    {"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", 30},
    {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", 0},
    {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 99},
    {"smsp__inst_executed.sum", 123456},
    {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 1000000},
    {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 200000},
    {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 300000},
    {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 1000},
    {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 0},
    {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 0},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 42},
};

static int count_words(const char *s, const char *word)
{
    int n = 0;
    size_t len = strlen(word);
    for (const char *p = s; (p = strstr(p, word)); p += len)
        if ((p == s || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) n++;
    return n;
}

static void test_read_standard_and_raw(void)
{
    device_metrics = hopper;
    device_nmetrics = sizeof hopper / sizeof hopper[0];
    kp_lab *lab = fake_lab(&with_counters);
    kp_counters c = {0};
    kp_error err = {0};
    CHECK_INT(kp_counters_parse_list("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,"
                                     "no_such__metric.sum,dram__bytes_read.sum",
                                     &c, &err),
              KPROF_OK);
    CHECK_INT(c.nraw, 3);
    CHECK_INT(kp_lab_counters_check(lab, NULL), KPROF_OK);
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    /* One replayed dispatch for everything, then one for the DRAM traffic alone (one pass, no
     * restore before it: kp_lab_counters_dram). */
    CHECK_INT(calls, 2);
    CHECK_STR(asked, "dram__bytes_read.sum dram__bytes_write.sum");
    CHECK_INT(c.read, 1);
    CHECK_INT(c.have, 1);
    /* Asked: the 21 items' 24 names (the tensor pipe has 4), and the 2 raw names not among
     * them; each name once. */
    CHECK_INT(first_n, 24 + 2);
    CHECK_INT(count_words(first, "dram__bytes_read.sum"), 1);
    CHECK_INT(count_words(first, "no_such__metric.sum"), 1);
    CHECK_INT(count_words(first, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
              1);
    /* Scaled: L2 sectors are 32 bytes. */
    CHECK_NEAR(c.v[KP_COUNTER_DRAM_READ].value, 3 * MIB, 0);
    CHECK_NEAR(c.v[KP_COUNTER_L2_READ].value, 32000, 0);
    {
        /* The DRAM-only reading wins over the multi-pass one (restores' write-backs). */
        second_write = 0.5 * MIB;
        kp_counters again = c;
        calls = 0;
        CHECK_INT(kp_lab_counters(lab, &launch, &again, &err), KPROF_OK);
        CHECK_INT(calls, 2);
        CHECK_NEAR(again.v[KP_COUNTER_DRAM_WRITE].value, 0.5 * MIB, 0);
        CHECK_NEAR(again.v[KP_COUNTER_DRAM_READ].value, 3 * MIB, 0);
        second_write = -1;
        calls = 2;
    }
    CHECK_NEAR(c.v[KP_COUNTER_L2_WRITE].value, 320, 0);
    CHECK_STR(c.v[KP_COUNTER_L2_READ].metric, "lts__t_sectors_op_read.sum");
    CHECK_NEAR(c.v[KP_COUNTER_OCCUPANCY].value, 87.25, 0);
    /* The first tensor alternative the device evaluates: gmma (0%), not hmma after it. */
    CHECK_INT(c.v[KP_COUNTER_PIPE_TENSOR].known, 1);
    CHECK_NEAR(c.v[KP_COUNTER_PIPE_TENSOR].value, 0, 0);
    CHECK_STR(c.v[KP_COUNTER_PIPE_TENSOR].metric,
              "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
    /* fp16 counters are not on this device: unknown, named by their metric. */
    CHECK_INT(c.v[KP_COUNTER_HFMA].known, 0);
    CHECK_STR(c.v[KP_COUNTER_HFMA].metric, "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum");
    /* Raw names: as the device gives them, or not on it. */
    CHECK_INT(c.raw[0].known, 1);
    CHECK_NEAR(c.raw[0].value, 42, 0);
    CHECK_INT(c.raw[1].known, 0);
    CHECK_INT(c.raw[2].known, 1);
    CHECK_NEAR(c.raw[2].value, 3 * MIB, 0);
    /* The busiest pipe of FMA 12, ALU 30, tensor 0. */
    CHECK_INT(kp_counters_top_pipe(&c), KP_COUNTER_PIPE_ALU);
    kp_counters_flops f;
    kp_counters_flops_of(&c, &f);
    CHECK_INT(f.have, 1);
    CHECK_INT(f.fp32_known, 1);
    CHECK_NEAR(f.fp32, 2 * 1000000.0 + 200000 + 300000, 0);
    CHECK_INT(f.fp64_known, 1);
    CHECK_NEAR(f.fp64, 2000, 0);
    /* No fp16 counters on this device: unknown, not 0 FLOPs. */
    CHECK_INT(f.fp16_known, 0);
    CHECK_NEAR(f.total, 2502000, 0);
    /* A precision partly read is unknown, not undercounted: dmul missing. */
    c.v[KP_COUNTER_DMUL].known = 0;
    kp_counters_flops_of(&c, &f);
    CHECK_INT(f.fp64_known, 0);
    CHECK_NEAR(f.fp64, 0, 0);
    CHECK_NEAR(f.total, 2500000, 0);
    /* The DRAM-only pass ran: no note. */
    char note[700];
    CHECK_STR(kp_counters_dram_note(&c, note, sizeof note), "");
    kp_lab_close(lab);
}

/* The DRAM-only pass fails for a reason that does not end the run: the multi-pass figure
 * stands, marked; a fault in it still ends the run. */
static void test_dram_pass_fails(void)
{
    device_metrics = hopper;
    device_nmetrics = sizeof hopper / sizeof hopper[0];
    kp_lab *lab = fake_lab(&with_counters);
    kp_counters c = {0};
    kp_error err = {0};
    char note[700];
    second_status = KPROF_BACKEND;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_INT(calls, 2);
    CHECK_INT(c.have, 1);
    CHECK_INT(c.v[KP_COUNTER_DRAM_WRITE].known, 1);
    CHECK_NEAR(c.v[KP_COUNTER_DRAM_WRITE].value, 1 * MIB, 0);
    CHECK_STR(c.dram_why, "CUPTI said no;to a second session");
    CHECK_STR(kp_counters_dram_note(&c, note, sizeof note),
              "DRAM writes include the replay's restores (the DRAM-only pass could not run: "
              "CUPTI said no;to a second session)");
    /* In the JSON, beside the values. */
    kp_readings_input in = {.median_ms = 1};
    kp_readings r;
    kp_counters_apply(&c, 0, &in);
    kp_readings_compute(&in, &r);
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_counters_json(&j, "counters", &c, &in, &r);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_CONTAINS(s.data, "\"dram_note\":\"DRAM writes include the replay's restores (the "
                           "DRAM-only pass could not run: CUPTI said no;to a second session)\"");
    kp_str_free(&s);
    /* Read again, the pass running: the mark goes. */
    second_status = KPROF_OK;
    calls = 0;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_STR(c.dram_why, "");
    CHECK_STR(kp_counters_dram_note(&c, note, sizeof note), "");
    /* UNAVAILABLE there is as good a reason; a fault ends the run. */
    second_status = KPROF_UNAVAILABLE;
    calls = 0;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_CONTAINS(kp_counters_dram_note(&c, note, sizeof note), "could not run: CUPTI said no");
    second_status = KPROF_FAULT;
    calls = 0;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_FAULT);
    kp_error_clear(&err);
    second_status = KPROF_OK;
    kp_lab_close(lab);
}

static void test_unavailable_and_fatal(void)
{
    kp_error err = {0};
    kp_counters c = {0};
    /* No op (OpenCL): OK, nothing asked, the reason kept. */
    kp_lab *lab = fake_lab(&without_counters);
    kp_error why = {0};
    CHECK_INT(kp_lab_counters_check(lab, &why), KPROF_UNAVAILABLE);
    CHECK_CONTAINS(why.message, "the plain backend reads no hardware counters");
    kp_error_clear(&why);
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_INT(c.read, 1);
    CHECK_INT(c.have, 0);
    CHECK_INT(calls, 0);
    CHECK_CONTAINS(c.why_not, "the plain backend reads no hardware counters");
    CHECK_INT(err.status, KPROF_OK);
    kp_lab_close(lab);

    /* The backend says UNAVAILABLE: OK, its reason in one line. */
    lab = fake_lab(&with_counters);
    fake_status = KPROF_UNAVAILABLE;
    memset(&c, 0, sizeof c);
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_INT(c.have, 0);
    CHECK_STR(c.why_not, "no profiling permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);see "
                         "NVIDIA's ERR_NVGPUCTRPERM page");
    CHECK_INT(err.status, KPROF_OK);
    /* A backend failure setting them up is no reason to stop the run either. */
    fake_status = KPROF_BACKEND;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_OK);
    CHECK_INT(c.have, 0);
    CHECK_STR(c.why_not, "the kernel faulted");
    /* A fault or a timeout ends the run, as a dispatch's would. */
    fake_status = KPROF_FAULT;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_FAULT);
    CHECK_CONTAINS(err.message, "the kernel faulted");
    kp_error_clear(&err);
    fake_status = KPROF_TIMEOUT;
    CHECK_INT(kp_lab_counters(lab, &launch, &c, &err), KPROF_TIMEOUT);
    kp_error_clear(&err);
    kp_lab_close(lab);
}

static void test_parse_list(void)
{
    kp_counters c = {0};
    kp_error err = {0};
    CHECK_INT(
        kp_counters_parse_list("a__b.sum,c__d.avg.pct_of_peak_sustained_active,a__b.sum", &c, &err),
        KPROF_OK);
    CHECK_INT(c.nraw, 2); /* a name given twice is kept once */
    CHECK_STR(c.raw[1].name, "c__d.avg.pct_of_peak_sustained_active");
    /* Malformed: empty items, a bad character, nothing at all. */
    static const char *const bad[] = {"", ",", "a__b,,c", "a__b,", ",a__b", "a__b c", "a__b;c"};
    static const char *const says[] = {"is empty",        "item 1 is empty", "item 2 is empty",
                                       "item 2 is empty", "item 1 is empty", "holds ' '",
                                       "holds ';'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_counters d = {0};
        CHECK_INT(kp_counters_parse_list(bad[i], &d, &err), KPROF_INVALID);
        CHECK_CONTAINS(err.message, says[i]);
        kp_error_clear(&err);
    }
    /* Too long a name, too many names. */
    char longname[KP_COUNTER_NAME_MAX + 8];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    kp_counters d = {0};
    CHECK_INT(kp_counters_parse_list(longname, &d, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "more than a metric name's");
    kp_error_clear(&err);
    char many[4096] = "";
    for (int i = 0; i <= KP_COUNTERS_MAX_RAW; i++) {
        size_t used = strlen(many);
        snprintf(many + used, sizeof many - used, "%sm__%d.sum", i ? "," : "", i);
    }
    memset(&d, 0, sizeof d);
    CHECK_INT(kp_counters_parse_list(many, &d, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "more than 32 metric names");
    kp_error_clear(&err);
}

/* ---- the figures and readings ---------------------------------------------------------------- */

/* Counters as kp_lab_counters leaves them, from a table of the standard items' values. */
static kp_counters counters_of(double dram_read, double dram_write, double ffma, double sm_pct)
{
    kp_counters c = {.read = 1, .have = 1};
    for (int id = 0; id < KP_COUNTER_COUNT_; id++)
        c.v[id] = (kp_counter_value){1, 0, kp_counter_metric((kp_counter_id)id, 0)};
    c.v[KP_COUNTER_DRAM_READ].value = dram_read;
    c.v[KP_COUNTER_DRAM_WRITE].value = dram_write;
    c.v[KP_COUNTER_FFMA].value = ffma;
    c.v[KP_COUNTER_SM_THROUGHPUT].value = sm_pct;
    return c;
}

/* A run of 4 MiB of buffers (the estimate), its median 0.004194304 ms: 4 MiB of DRAM traffic
 * is then exactly 1000 GB/s. Ceiling 1250 GB/s, FP32 peak 50000 GFLOP/s: ridge 40 FLOP/byte.
 * The buffers are larger than the 2 MiB cache: the counters' cold DRAM bytes are the timed
 * dispatches' traffic (test_fits_cache has data that fits). */
static kp_readings_input run_input(void)
{
    kp_readings_input in = {
        .median_ms = 0.004194304,
        .gbps = 1000,
        .bytes_assumed = 1,
        .bytes = 4 * 1024 * 1024,
        .working_set = 4 * 1024 * 1024,
        .grid_bytes = 4 * 1024 * 1024,
        .grid_threads = 1 << 20,
        .cache_bytes = 2 * 1024 * 1024,
        .ceiling_gbs = 1250,
    };
    return in;
}

static const char *line_of(const kp_reading_line *l, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(l[i].id, id) == 0) return l[i].text;
    return NULL;
}

static void test_memory_bound_and_twice_the_bytes(void)
{
    /* 6 MiB read + 2 MiB written where the buffers hold 4 MiB: 2x the estimate, 2000 GB/s. */
    kp_counters c = counters_of(6 * MIB, 2 * MIB, 1048576, 20);
    kp_readings_input in = run_input();
    in.ceiling_gbs = 2500;
    kp_counters_apply(&c, 50000, &in);
    CHECK_INT(in.measured.have_dram, 1);
    CHECK_INT(in.measured.have_flops, 1);
    CHECK_NEAR(in.measured.flops, 2 * 1048576.0, 0);
    kp_readings r;
    kp_readings_compute(&in, &r);
    CHECK_INT(r.measured, 1);
    CHECK_NEAR(r.dram_bytes, 8 * MIB, 0);
    CHECK_NEAR(r.measured_gbps, 2000, 1e-9);
    CHECK_NEAR(r.measured_fraction, 0.8, 1e-12);
    CHECK_INT(r.fits_cache, 0);
    CHECK_INT(r.dram_cold, 0);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_BOUND);
    CHECK_INT(r.bandwidth_bound, 1);
    CHECK_INT(r.traffic, KP_TRAFFIC_MORE);
    CHECK_NEAR(r.bytes_ratio, 2.0, 0);
    CHECK_NEAR(r.gflops, 2 * 1048576.0 / 0.004194304e-3 / 1e9, 1e-9); /* 500 */
    CHECK_NEAR(r.intensity, 0.25, 0);                                 /* 2 MFLOP / 8 MiB */
    CHECK_NEAR(r.ridge, 20, 0);
    CHECK_NEAR(r.attainable_gflops, 625, 1e-9); /* 0.25 x 2500 */
    CHECK_NEAR(r.flop_fraction, 0.01, 1e-12);
    CHECK_INT(r.bound, KP_BOUND_MEMORY);
    kp_reading_line l[16];
    int n = kp_readings_describe(&in, &r, l, 16);
    CHECK_STR(line_of(l, n, "bandwidth_bound"),
              "Measured DRAM traffic, 2000 GB/s (6 MiB read + 2 MiB written per dispatch), is 80% "
              "of this device's measured ceiling (2500 GB/s): bandwidth-bound. Fewer passes, "
              "smaller elements and better locality help; more math per byte is free.");
    CHECK_STR(line_of(l, n, "traffic_more"),
              "The kernel moves 2.0× the bytes its buffers hold (8 MiB of DRAM traffic measured "
              "per dispatch, 4 MiB estimated): uncoalesced or repeated reads.");
    CHECK_CONTAINS(line_of(l, n, "roofline"),
                   "Roofline: 0.25 FLOP/byte (0.002097 GFLOP over 8 MiB of DRAM traffic, 500 "
                   "GFLOP/s); the ridge is 20 FLOP/byte (FP32 peak 50000 GFLOP/s over the 2500 "
                   "GB/s ceiling): memory-bound, at 80% of the bandwidth roof.");
    /* The estimate's caveat gives way to the measurement. */
    CHECK(line_of(l, n, "bytes_assumed") == NULL);
    CHECK(line_of(l, n, "not_dram") == NULL);
}

static void test_traffic_tolerance(void)
{
    kp_readings_input in = run_input();
    kp_readings r;
    /* 20% apart is not "more than 20%"; 0.5x is less. */
    static const struct {
        double mib;
        kp_traffic_reading want;
    } rows[] = {{4.8, KP_TRAFFIC_MATCHES},
                {4.9, KP_TRAFFIC_MORE},
                {3.2, KP_TRAFFIC_MATCHES},
                {3.1, KP_TRAFFIC_LESS},
                {2.0, KP_TRAFFIC_LESS}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        kp_counters c = counters_of(rows[i].mib * MIB, 0, 0, 0);
        kp_counters_apply(&c, 0, &in);
        kp_readings_compute(&in, &r);
        CHECK_INT(r.traffic, rows[i].want);
    }
    kp_reading_line l[16];
    int n = kp_readings_describe(&in, &r, l, 16); /* the last: 2 MiB, 0.5x */
    CHECK_STR(line_of(l, n, "traffic_less"),
              "The kernel moves 0.5× the bytes its buffers hold (2 MiB of DRAM traffic measured "
              "per dispatch, 4 MiB estimated): it touches part of its buffers, or hits in cache.");
    /* --bytes: the estimate is the user's. */
    in.bytes_assumed = 0;
    kp_readings_compute(&in, &r);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "traffic_less"), "0.5× the bytes --bytes gives");
    CHECK_CONTAINS(line_of(l, n, "traffic_less"), "--bytes overstates what reaches memory");
    kp_counters c = counters_of(4 * MIB, 0, 0, 0);
    in.bytes_assumed = 1;
    kp_counters_apply(&c, 0, &in);
    kp_readings_compute(&in, &r);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_STR(line_of(l, n, "traffic_matches"),
              "Measured DRAM traffic (4 MiB per dispatch) is within 20% of the bytes its buffers "
              "hold (4 MiB, 1.00×): the once-per-element estimate holds for this kernel.");
}

static void test_bounds(void)
{
    kp_readings_input in = run_input(); /* ceiling 1250 GB/s; 4 MiB = 1000 GB/s */
    kp_readings r;
    kp_reading_line l[16];
    int n;
    /* Compute-bound: 0.4 MiB of traffic (8% of the roof), FLOPs at 80% of a 1000 GFLOP/s peak:
     * 0.8 x 1000e9 x 0.004194304e-3 s = 3355443.2 FLOPs, from ffma x 2. */
    kp_counters c = counters_of(0.4 * MIB, 0, 3355443.2 / 2, 10);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_NEAR(r.flop_fraction, 0.8, 1e-9);
    CHECK_INT(r.bound, KP_BOUND_COMPUTE);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_BELOW);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "roofline"), ": compute-bound, at 80% of the FP32 peak.");
    CHECK_CONTAINS(line_of(l, n, "bandwidth"), "is 8% of this device's measured ceiling");
    CHECK_CONTAINS(line_of(l, n, "bandwidth"), "not bandwidth-bound.");
    /* Compute-bound through the SM's pipes (integer work): SM throughput 75%, FLOPs nil. */
    c = counters_of(0.4 * MIB, 0, 0, 75);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bound, KP_BOUND_COMPUTE);
    CHECK_INT(r.compute_from_sm, 1);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "roofline"),
                   ": compute-bound, the SM's pipes 75% busy (SM throughput), not on FP32 "
                   "arithmetic.");
    /* Near both roofs: the nearer wins (memory 80% against compute 75%). */
    c = counters_of(5 * MIB, 0, 0, 75);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bound, KP_BOUND_MEMORY);
    /* Latency-bound: 0.8 MiB (16%), FLOPs 1% of the peak, SM 20%: all under 30%. */
    c = counters_of(0.8 * MIB, 0, 0.01 * 1000e9 * 0.004194304e-3 / 2, 20);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_NEAR(r.measured_fraction, 0.16, 1e-12);
    CHECK_NEAR(r.compute_fraction, 0.20, 1e-12);
    CHECK_INT(r.bound, KP_BOUND_LATENCY);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "roofline"),
                   ": latency-bound, far under both roofs (16% of the bandwidth roof, 20% of the "
                   "compute roof, both under 30%)");
    /* Between: 50% of the bandwidth roof, compute 20%. */
    c = counters_of(2.5 * MIB, 0, 0, 20);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bound, KP_BOUND_BETWEEN);
    /* No compute roof known at all (no FLOP peak, SM throughput not read): no bound. */
    c = counters_of(0.8 * MIB, 0, 0, 0);
    c.v[KP_COUNTER_SM_THROUGHPUT].known = 0;
    kp_counters_apply(&c, 0, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bound, KP_BOUND_UNKNOWN);
    CHECK_INT(r.have_ridge, 0);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "roofline"), "no measured FLOP peak for this device yet");
    /* No ceiling: no bandwidth reading from the counters, and no bound. */
    in.ceiling_gbs = 0;
    c = counters_of(5 * MIB, 0, 0, 20);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_NO_CEILING);
    CHECK_INT(r.bound, KP_BOUND_UNKNOWN);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK(line_of(l, n, "no_ceiling") != NULL);
    CHECK_CONTAINS(line_of(l, n, "roofline"), "no bound without a measured bandwidth ceiling");
    /* Measured above 110% of the ceiling: still bandwidth-bound, the ceiling was low. */
    in.ceiling_gbs = 800;
    c = counters_of(4 * MIB, 0, 0, 20);
    kp_counters_apply(&c, 1000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_BOUND);
    CHECK_INT(r.ceiling_low, 1);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "bandwidth_bound"), "the ceiling was measured low");
}

/* Data that fits in the L2, timed warm (run, sweep, hot bench rows): the counters' dispatch
 * began with a cold L2 (as ncu's), so its DRAM bytes over the warm median are no rate: no
 * measured GB/s, no bandwidth reading, no "ceiling low", no memory bound. Timed cold (a cold
 * bench row), they are the timed dispatches' traffic again. */
static void test_fits_cache(void)
{
    kp_readings_input in = run_input();
    in.cache_bytes = 64 * 1024 * 1024; /* the 4 MiB of buffers fit */
    in.ceiling_gbs = 800;              /* 4 MiB cold would be 125% of it: "ceiling low" */
    kp_counters c = counters_of(3 * MIB, 1 * MIB, 1048576, 20);
    kp_counters_apply(&c, 50000, &in);
    kp_readings r;
    kp_readings_compute(&in, &r);
    CHECK_INT(r.fits_cache, 1);
    CHECK_INT(r.dram_cold, 1);
    CHECK_INT(r.measured, 0);
    CHECK_NEAR(r.dram_bytes, 4 * MIB, 0);
    CHECK_NEAR(r.measured_gbps, 0, 0);
    CHECK_NEAR(r.measured_fraction, 0, 0);
    CHECK_INT(r.ceiling_low, 0);
    CHECK_INT(r.bandwidth_bound, 0);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_ABOVE); /* the estimate's: 1000 GB/s over 800 */
    CHECK_INT(r.have_intensity, 0);
    CHECK_INT(r.bound, KP_BOUND_UNKNOWN);
    CHECK_INT(r.traffic, KP_TRAFFIC_MATCHES); /* the bytes themselves still compare */
    kp_reading_line l[16];
    int n = kp_readings_describe(&in, &r, l, 16);
    CHECK_STR(line_of(l, n, "dram_cold"),
              "DRAM bytes as from a cold L2, as ncu reads them (3 MiB read + 1 MiB written per "
              "dispatch); the timed dispatches ran with a warm L2, and the data it can touch "
              "(4 MiB) fits in the device's 64 MiB last-level cache: no measured GB/s, bandwidth "
              "reading or memory bound follows (`kprof bench --cache cold` times it from a cold "
              "cache).");
    CHECK(line_of(l, n, "bandwidth_bound") == NULL);
    CHECK(line_of(l, n, "roofline") == NULL);
    CHECK_CONTAINS(line_of(l, n, "above_ceiling"), "fits in the device's 64 MiB last-level cache");
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_counters_json(&j, "counters", &c, &in, &r);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_CONTAINS(s.data, "\"dram_bytes\":4194304,\"dram_cold_l2_only\":true,"
                           "\"dram_cold_l2_note\":\"DRAM bytes as from a cold L2, as ncu reads "
                           "them; the timed dispatches ran with a warm L2");
    CHECK_CONTAINS(s.data, "\"measured_gb_per_s\":null");
    CHECK_CONTAINS(s.data, "\"ceiling_percent\":null");
    CHECK_CONTAINS(s.data, "\"bound\":\"unknown\"");
    kp_str_free(&s);
    /* Compute-bound all the same: the compute roof is the warm timing's. */
    c = counters_of(3 * MIB, 1 * MIB, 0, 80);
    kp_counters_apply(&c, 50000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.bound, KP_BOUND_COMPUTE);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK_CONTAINS(line_of(l, n, "dram_cold"),
                   " Compute-bound: the SM's pipes 80% busy (SM throughput).");
    /* A cold bench row: the timed dispatches began cold too: measured, and the ceiling low. */
    in.timed_cold = 1;
    c = counters_of(3 * MIB, 1 * MIB, 1048576, 20);
    kp_counters_apply(&c, 50000, &in);
    kp_readings_compute(&in, &r);
    CHECK_INT(r.dram_cold, 0);
    CHECK_INT(r.measured, 1);
    CHECK_NEAR(r.measured_gbps, 1000, 1e-9);
    CHECK_INT(r.bandwidth, KP_BANDWIDTH_BOUND);
    CHECK_INT(r.ceiling_low, 1);
    CHECK_INT(r.bound, KP_BOUND_MEMORY);
    n = kp_readings_describe(&in, &r, l, 16);
    CHECK(line_of(l, n, "dram_cold") == NULL);
    CHECK_CONTAINS(line_of(l, n, "bandwidth_bound"), "the ceiling was measured low");
    /* Hot again, but larger than the cache: measured as before. */
    in.timed_cold = 0;
    in.cache_bytes = 2 * 1024 * 1024;
    kp_readings_compute(&in, &r);
    CHECK_INT(r.dram_cold, 0);
    CHECK_INT(r.measured, 1);
    CHECK_INT(r.ceiling_low, 1);
}

/* Without counters (or with counters that could not be read) nothing measured is used: the
 * readings are the estimate's, as before --counters existed. */
static void test_no_counters_changes_nothing(void)
{
    kp_readings_input in = run_input();
    in.cache_bytes = 0;
    kp_readings plain, with_unread;
    kp_readings_compute(&in, &plain);
    kp_counters c = {.read = 1, .have = 0};
    kp_counters_apply(&c, 1000, &in);
    CHECK_INT(in.measured.have_dram, 0);
    CHECK_NEAR(in.measured.peak_gflops, 0, 0);
    kp_readings_compute(&in, &with_unread);
    CHECK_INT(memcmp(&plain, &with_unread, sizeof plain), 0);
    CHECK_INT(plain.bandwidth, KP_BANDWIDTH_BOUND); /* 80% by the estimate */
    kp_reading_line l[16];
    int n = kp_readings_describe(&in, &plain, l, 16);
    CHECK(line_of(l, n, "bytes_assumed") != NULL);
    CHECK(line_of(l, n, "roofline") == NULL);
}

/* The number after "key": in compact JSON text (NAN when absent). */
static double json_number(const char *text, const char *key)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(text, pattern);
    return p ? strtod(p + strlen(pattern), NULL) : NAN;
}

static void test_json(void)
{
    kp_counters c = counters_of(6 * MIB, 2 * MIB, 1048576, 20);
    c.v[KP_COUNTER_HFMA].known = 0;
    snprintf(c.raw[0].name, sizeof c.raw[0].name, "no_such__metric.sum");
    c.nraw = 1;
    kp_readings_input in = run_input();
    in.ceiling_gbs = 2500;
    kp_counters_apply(&c, 50000, &in);
    kp_readings r;
    kp_readings_compute(&in, &r);
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_counters_json(&j, "counters", &c, &in, &r);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_CONTAINS(s.data, "\"available\":true");
    CHECK_CONTAINS(s.data, "\"dram_read_bytes\":6291456");
    CHECK_CONTAINS(s.data, "\"hfma\":null");
    /* fp16 partly read: null, not 0; fp64 read: its count. */
    CHECK_CONTAINS(s.data, "\"flops_fp64\":0,\"flops_fp16\":null");
    CHECK_CONTAINS(s.data, "\"dram_note\":null");
    CHECK_CONTAINS(s.data, "\"dram_cold_l2_only\":false,\"dram_cold_l2_note\":null");
    CHECK_CONTAINS(s.data,
                   "{\"name\":\"no_such__metric.sum\",\"available\":false,\"value\":null,\"note\":"
                   "\"not on this device\"}");
    CHECK_NEAR(json_number(s.data, "measured_gb_per_s"), 2000, 1e-9);
    CHECK_NEAR(json_number(s.data, "ceiling_percent"), 80, 1e-9);
    CHECK_NEAR(json_number(s.data, "gflop_per_s"), 500, 1e-9);
    CHECK_NEAR(json_number(s.data, "attainable_gflop_per_s"), 625, 1e-9);
    CHECK_CONTAINS(s.data, "\"measured_over_estimated\":2");
    CHECK_CONTAINS(s.data, "\"traffic\":\"more\"");
    CHECK_CONTAINS(s.data, "\"arithmetic_intensity\":0.25");
    CHECK_CONTAINS(s.data, "\"ridge_flop_per_byte\":20");
    CHECK_CONTAINS(s.data, "\"bound\":\"memory\"");
    kp_str_free(&s);
    /* Unavailable: the reason, nothing else. */
    kp_counters u = {.read = 1, .have = 0};
    snprintf(u.why_not, sizeof u.why_not, "no profiling permission");
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_counters_json(&j, "counters", &u, &in, &r);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_STR(s.data,
              "{\"counters\":{\"available\":false,\"reason\":\"no profiling permission\"}}");
    kp_str_free(&s);
}

int main(void)
{
    test_read_standard_and_raw();
    test_dram_pass_fails();
    test_unavailable_and_fatal();
    test_parse_list();
    test_memory_bound_and_twice_the_bytes();
    test_traffic_tolerance();
    test_bounds();
    test_fits_cache();
    test_no_counters_changes_nothing();
    test_json();
    TEST_DONE();
}
