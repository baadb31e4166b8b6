/* test_lab_sample.c — kp_lab_sample's bookkeeping, on a backend of the test's own that logs what
 * it is asked to do: hot samples are one batch as kp_lab_measure takes them; cold ones flush
 * before each dispatch, which is timed alone with the same clock; the flush times come back;
 * a backend without a flush, a failing flush and a bad count are refused. (On a real device:
 * test_lab_opencl.c and tests/programs/lab_sample_cuda.c.) */
#include "lab/lab_internal.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

static char log_text[256];
static int flushes, flush_fail_at;   /* the flush fails on call flush_fail_at (1-based; 0: never) */
static int64_t fake_clock = 1000000; /* the fakes' host clock (ns): each operation starts 100 ns
                                        after the last one ended */

static void fake_span(kp_dispatch_span *span, double ns)
{
    fake_clock += 100;
    if (span) *span = kp_dispatch_span_at(fake_clock, ns);
    fake_clock += (int64_t)llround(ns);
}

static void note(const char *what)
{
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof log_text - used, "%s%s", used ? " " : "", what);
}

static kprof_status fake_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns,
                                  kp_dispatch_span *span, kp_error *err)
{
    (void)k, (void)l, (void)err;
    note("D");
    *gpu_ns = 3000;
    fake_span(span, *gpu_ns);
    return KPROF_OK;
}

static kprof_status fake_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns,
                               kp_dispatch_span *spans, char *timer, size_t timer_n, kp_error *err)
{
    (void)k, (void)l, (void)err;
    char what[16];
    snprintf(what, sizeof what, "B%d", n);
    note(what);
    for (int i = 0; i < n; i++) {
        gpu_ns[i] = 1000.0 * (i + 1);
        fake_span(spans ? &spans[i] : NULL, gpu_ns[i]);
    }
    snprintf(timer, timer_n, "fake-clock");
    return KPROF_OK;
}

static kprof_status fake_flush(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err)
{
    (void)dev;
    note("F");
    if (++flushes == flush_fail_at)
        return kp_error_set(err, KPROF_BACKEND, "the flush failed on purpose");
    *ns = 2000.0 * flushes;
    fake_span(span, *ns);
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

static const kp_launch launch = {.dims = 1, .grid = {64, 1, 1}, .tg = {64, 1, 1}};

static kp_lab *fake_lab(const kp_backend_ops *ops)
{
    kp_lab *lab = calloc(1, sizeof *lab);
    lab->impl = &kp_lab_local;
    lab->ops = ops;
    lab->info.ops = ops;
    log_text[0] = '\0';
    flushes = flush_fail_at = 0;
    return lab;
}

/* A backend with dispatch_batch: hot is one batch; cold, a flush and a batch of one each. */
static void test_with_batch(void)
{
    const kp_backend_ops ops = {.name = "fake",
                                .dispatch = fake_dispatch,
                                .dispatch_batch = fake_batch,
                                .flush_cache = fake_flush,
                                .close = fake_close,
                                .program_release = fake_program_release,
                                .kernel_release = fake_kernel_release,
                                .free = fake_free};
    kp_error err = {0};
    double s[3], f[3] = {9, 9, 9};
    kp_lab *lab = fake_lab(&ops);
    CHECK_INT(kp_lab_sample(lab, &launch, 3, 0, s, f, &err), KPROF_OK);
    CHECK_STR(log_text, "B3");
    CHECK_NEAR(s[0], 0.001, 1e-12);
    CHECK_NEAR(s[2], 0.003, 1e-12);
    CHECK_NEAR(f[0], 0, 0); /* hot: no flush */
    CHECK_NEAR(f[2], 0, 0);
    CHECK_STR(lab->info.timer, "fake-clock");

    lab->info.timer[0] = '\0';
    log_text[0] = '\0';
    CHECK_INT(kp_lab_sample(lab, &launch, 3, 1, s, f, &err), KPROF_OK);
    CHECK_STR(log_text, "F B1 F B1 F B1");
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(s[i], 0.001, 1e-12); /* each dispatch timed alone */
    CHECK_NEAR(f[0], 0.002, 1e-12);
    CHECK_NEAR(f[1], 0.004, 1e-12);
    CHECK_NEAR(f[2], 0.006, 1e-12);
    CHECK_STR(lab->info.timer, "fake-clock");

    /* flush_ms may be NULL. */
    log_text[0] = '\0';
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 1, s, NULL, &err), KPROF_OK);
    CHECK_STR(log_text, "F B1 F B1");

    /* A flush that fails stops the samples and says why. */
    log_text[0] = '\0';
    flushes = 0;
    flush_fail_at = 2;
    CHECK_INT(kp_lab_sample(lab, &launch, 3, 1, s, f, &err), KPROF_BACKEND);
    CHECK_STR(log_text, "F B1 F");
    CHECK_CONTAINS(err.message, "on purpose");
    kp_error_clear(&err);

    CHECK_INT(kp_lab_sample(lab, &launch, 0, 0, s, f, &err), KPROF_INVALID);
    kp_error_clear(&err);
    kp_lab_close(lab);
}

/* A backend with dispatch alone: every sample is a dispatch, timed by profiling events. */
static void test_dispatch_only(void)
{
    const kp_backend_ops ops = {.name = "fake",
                                .dispatch = fake_dispatch,
                                .flush_cache = fake_flush,
                                .close = fake_close,
                                .program_release = fake_program_release,
                                .kernel_release = fake_kernel_release,
                                .free = fake_free};
    kp_error err = {0};
    double s[2], f[2];
    kp_lab *lab = fake_lab(&ops);
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 0, s, f, &err), KPROF_OK);
    CHECK_STR(log_text, "D D");
    CHECK_STR(lab->info.timer, "fake-profiling-events");
    log_text[0] = '\0';
    lab->info.timer[0] = '\0';
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 1, s, f, &err), KPROF_OK);
    CHECK_STR(log_text, "F D F D");
    CHECK_NEAR(s[1], 0.003, 1e-12);
    CHECK_NEAR(f[1], 0.004, 1e-12);
    CHECK_STR(lab->info.timer, "fake-profiling-events");
    kp_lab_close(lab);
}

/* A backend without a flush: hot samples work, cold ones are refused with the reason. */
static void test_no_flush(void)
{
    const kp_backend_ops ops = {.name = "fake",
                                .dispatch = fake_dispatch,
                                .dispatch_batch = fake_batch,
                                .close = fake_close,
                                .program_release = fake_program_release,
                                .kernel_release = fake_kernel_release,
                                .free = fake_free};
    kp_error err = {0};
    double s[2], f[2];
    kp_lab *lab = fake_lab(&ops);
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 0, s, f, &err), KPROF_OK);
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 1, s, f, &err), KPROF_UNAVAILABLE);
    CHECK_CONTAINS(err.message, "fake backend cannot flush the device's cache");
    CHECK_STR(log_text, "B2"); /* nothing ran for the refused call */
    kp_error_clear(&err);
    kp_lab_close(lab);
}

/* With a log set, every dispatch — warm-up, timed, a cold sample's flush — leaves its span and
 * tag: durations are the samples to the nanosecond, timed ones are numbered on across calls,
 * warm-ups count down to the timed ones, a flush has its sample's number and the flush kernel's
 * name; a call that fails logs nothing; the log grows before a call that does not fit. */
static void test_log(void)
{
    const kp_backend_ops ops = {.name = "fake",
                                .dispatch = fake_dispatch,
                                .dispatch_batch = fake_batch,
                                .flush_cache = fake_flush,
                                .flush_kernel = "fake_flush",
                                .close = fake_close,
                                .program_release = fake_program_release,
                                .kernel_release = fake_kernel_release,
                                .free = fake_free};
    kp_error err = {0};
    double s[4], f[4];
    kp_lab *lab = fake_lab(&ops);
    kp_lab_log log;
    CHECK_INT(kp_lab_log_init(&log, 4, &err), KPROF_OK);
    log.bytes = 4096;
    kp_lab_set_log(lab, &log);
    CHECK(kp_lab_get_log(lab) == &log);

    /* 2 warm-ups (3000 ns each, by dispatch) and 2 timed (1000, 2000 ns, one batch). */
    CHECK_INT(kp_lab_measure(lab, &launch, 2, 2, s, &err), KPROF_OK);
    CHECK_INT(log.n, 4);
    CHECK_INT(log.nsites, 1);
    CHECK_INT(log.sites[0].have_launch, 1);
    CHECK_INT(log.sites[0].launch.grid[0], 64);
    CHECK_INT(log.sites[0].have_refl, 0); /* the fake cannot reflect */
    CHECK_NEAR(log.sites[0].bytes, 4096, 0);
    CHECK(isnan(log.sites[0].flops));
    const int roles[4] = {KP_LAB_WARMUP, KP_LAB_WARMUP, KP_LAB_TIMED, KP_LAB_TIMED};
    const int64_t iters[4] = {-2, -1, 0, 1};
    const int64_t ns[4] = {3000, 3000, 1000, 2000};
    for (int i = 0; i < 4; i++) {
        CHECK_INT(log.tags[i].role, roles[i]);
        CHECK_INT(log.tags[i].iteration, iters[i]);
        CHECK_INT(log.tags[i].site, 0);
        CHECK_INT(log.spans[i].end_ns - log.spans[i].start_ns, ns[i]);
        if (i) CHECK(log.spans[i].start_ns >= log.spans[i - 1].end_ns); /* in order, no overlap */
    }
    CHECK_INT(llround(s[0] * 1e6), log.spans[2].end_ns - log.spans[2].start_ns);
    CHECK_INT(llround(s[1] * 1e6), log.spans[3].end_ns - log.spans[3].start_ns);

    /* Cold: a flush before each sample; the log (full) grows first. */
    flushes = 0;
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 1, s, f, &err), KPROF_OK);
    CHECK_INT(log.n, 8);
    CHECK(log.cap >= 8);
    CHECK_INT(log.lost, 0);
    CHECK_INT(log.nsites, 2);
    CHECK_STR(log.sites[1].kernel, "fake_flush");
    CHECK_INT(log.sites[1].have_launch, 0);
    CHECK_INT(log.tags[4].role, KP_LAB_FLUSH);
    CHECK_INT(log.tags[4].site, 1);
    CHECK_INT(log.tags[4].iteration, 2);
    CHECK_INT(log.tags[5].role, KP_LAB_TIMED);
    CHECK_INT(log.tags[5].site, 0);
    CHECK_INT(log.tags[5].iteration, 2);
    CHECK_INT(log.tags[7].iteration, 3);
    CHECK_INT(log.spans[4].end_ns - log.spans[4].start_ns, 2000); /* the flush's own time */
    CHECK_INT(log.spans[6].end_ns - log.spans[6].start_ns, 4000);
    CHECK_INT(log.spans[5].end_ns - log.spans[5].start_ns, llround(s[0] * 1e6));
    CHECK_INT(log.timed, 4);

    /* Warm-ups by kp_lab_sample (a bench's) count down, and are not timed ones. */
    log.warming = 1;
    CHECK_INT(kp_lab_sample(lab, &launch, 2, 0, s, f, &err), KPROF_OK);
    log.warming = 0;
    CHECK_INT(log.tags[8].role, KP_LAB_WARMUP);
    CHECK_INT(log.tags[8].iteration, -2);
    CHECK_INT(log.tags[9].iteration, -1);
    CHECK_INT(log.timed, 4);

    /* Another launch is another site; a call that fails logs nothing. */
    kp_launch other = launch;
    other.grid[0] = 128;
    CHECK_INT(kp_lab_sample(lab, &other, 1, 0, s, f, &err), KPROF_OK);
    CHECK_INT(log.nsites, 3);
    CHECK_INT(log.tags[10].site, 2);
    size_t before = log.n;
    flushes = 0;
    flush_fail_at = 1;
    CHECK_INT(kp_lab_sample(lab, &launch, 1, 1, s, f, &err), KPROF_BACKEND);
    kp_error_clear(&err);
    CHECK_INT(log.n, before);

    /* No log: nothing is logged. */
    kp_lab_set_log(lab, NULL);
    flush_fail_at = 0;
    CHECK_INT(kp_lab_measure(lab, &launch, 1, 1, s, &err), KPROF_OK);
    CHECK_INT(log.n, before);
    kp_lab_log_free(&log);
    kp_lab_close(lab);
}

int main(void)
{
    test_with_batch();
    test_dispatch_only();
    test_no_flush();
    test_log();
    TEST_DONE();
}
