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
static int flushes, flush_fail_at; /* the flush fails on call flush_fail_at (1-based; 0: never) */

static void note(const char *what)
{
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof log_text - used, "%s%s", used ? " " : "", what);
}

static kprof_status fake_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns, kp_error *err)
{
    (void)k, (void)l, (void)err;
    note("D");
    *gpu_ns = 3000;
    return KPROF_OK;
}

static kprof_status fake_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns, char *timer,
                               size_t timer_n, kp_error *err)
{
    (void)k, (void)l, (void)err;
    char what[16];
    snprintf(what, sizeof what, "B%d", n);
    note(what);
    for (int i = 0; i < n; i++)
        gpu_ns[i] = 1000.0 * (i + 1);
    snprintf(timer, timer_n, "fake-clock");
    return KPROF_OK;
}

static kprof_status fake_flush(kp_device *dev, double *ns, kp_error *err)
{
    (void)dev;
    note("F");
    if (++flushes == flush_fail_at)
        return kp_error_set(err, KPROF_BACKEND, "the flush failed on purpose");
    *ns = 2000.0 * flushes;
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

int main(void)
{
    test_with_batch();
    test_dispatch_only();
    test_no_flush();
    TEST_DONE();
}
