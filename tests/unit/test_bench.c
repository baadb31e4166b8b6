/* test_bench.c — kprof bench's measuring loop (lab/bench.h) on a backend of the test's own whose
 * kernels take a set time with deterministic noise, and fake_nvml's clocks (at the PCI bus id it
 * knows): one kernel stops on its noise with the clock read at every sample; batches read below
 * the throttle fraction are discarded, counted and their reasons kept; a GPU throttled throughout
 * leaves nothing to report; a kernel 10% slower is SLOWER in time and in cycles, one against
 * itself SAME; an earlier run's samples compare unpaired. Synthetic shapes the comparison engine
 * must see through: samples with two modes, a kernel that drifts while the other does not, and a
 * host busy with other work on a device whose kernels run on its CPUs — each UNSURE with its
 * reason, never DECIDED. A plan's points set up from their axes (no device). */
#define _GNU_SOURCE
#include "lab/bench.h"
#include "lab/lab_internal.h"
#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A kernel: its base time (ns), relative noise, drift per sample taken (relative), and a second
 * mode: a share of the samples taking `high` times as long. */
typedef struct fake_kernel {
    double base, noise, drift, high, high_share;
    size_t calls;
} fake_kernel;

static uint64_t lcg = 12345;

static double uniform(void)
{
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) / 9007199254740992.0; /* [0, 1) */
}

static double noise(void)
{
    return uniform() * 2 - 1; /* [-1, 1) */
}

static kprof_status fake_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns,
                               kp_dispatch_span *spans, char *timer, size_t timer_n, kp_error *err)
{
    (void)l, (void)err, (void)spans;
    fake_kernel *f = (fake_kernel *)k;
    for (int i = 0; i < n; i++) {
        double t = f->base * (1 + f->noise * noise()) * (1 + f->drift * (double)f->calls++);
        if (f->high_share > 0 && uniform() < f->high_share) t *= f->high;
        gpu_ns[i] = t;
    }
    snprintf(timer, timer_n, "fake-clock");
    return KPROF_OK;
}

static kprof_status fake_dispatch(kp_kernel *k, const kp_launch *l, double *ns,
                                  kp_dispatch_span *span, kp_error *err)
{
    char t[16];
    return fake_batch(k, l, 1, ns, span, t, sizeof t, err);
}

static kprof_status fake_flush(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err)
{
    (void)dev, (void)err, (void)span;
    *ns = 50000;
    return KPROF_OK;
}

static void fake_close(kp_device *d)
{
    (void)d;
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

static const kp_backend_ops ops = {.name = "fake",
                                   .dispatch = fake_dispatch,
                                   .dispatch_batch = fake_batch,
                                   .flush_cache = fake_flush,
                                   .close = fake_close,
                                   .program_release = fake_program_release,
                                   .kernel_release = fake_kernel_release,
                                   .free = fake_free};

static kp_lab *fake_lab(fake_kernel *k)
{
    kp_lab *lab = calloc(1, sizeof *lab);
    lab->impl = &kp_lab_local;
    lab->ops = &ops;
    lab->info.ops = &ops;
    lab->kernel = (kp_kernel *)k;
    snprintf(lab->info.device.backend, sizeof lab->info.device.backend, "cuda");
    snprintf(lab->info.device.pci_bus_id, sizeof lab->info.device.pci_bus_id, "0000:3B:00.0");
    return lab;
}

static kp_bench_config config(void)
{
    kp_bench_config c;
    kp_bench_config_default(&c);
    c.min_time_s = 0.001; /* the fake's time is not spent: keep the floor small */
    /* The tests end on their samples and noise, not on the clock: a starved process (a loaded
     * machine, nice 19) took over 5 s for test_one_kernel's and stopped on the timeout. */
    c.timeout_s = 60;
    return c;
}

static void side(kp_bench_side *s, kp_lab *lab)
{
    memset(s, 0, sizeof *s);
    s->lab = lab;
    s->launch = (kp_launch){.dims = 1, .grid = {64, 1, 1}, .tg = {64, 1, 1}};
}

static void test_one_kernel(void)
{
    fake_kernel base = {.base = 100000, .noise = 0.01}; /* 0.1 ms */
    kp_lab *lab = fake_lab(&base);
    kp_bench_config c = config();
    kp_bench_side s;
    side(&s, lab);
    kp_bench_outcome o;
    kp_error err = {0};
    CHECK_INT(kp_bench_measure(&s, 1, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK_INT(o.stop, KP_BENCH_STOP_NOISE);
    CHECK(s.n >= 10);
    CHECK(s.noise <= 0.005);
    CHECK(s.median.lo <= s.median.value && s.median.value <= s.median.hi);
    CHECK_NEAR(s.median.value, 0.1, 0.001);
    CHECK_INT(s.throttled, 0);
    CHECK_INT(s.taken, s.n);
    CHECK(s.gpu_s >= c.min_time_s);
    /* The clock at every sample: fake_nvml's 1410 MHz, its default clock 1755. */
    CHECK(s.mhz != NULL);
    CHECK_NEAR(s.clock_mhz, 1410, 0);
    CHECK_NEAR(s.default_clock_mhz, 1755, 0);
    CHECK_NEAR(s.min_clock_mhz, 1410, 0);
    CHECK(!o.compared);
    kp_bench_side_free(&s);

    /* Cold: the flush's time counts toward the floor, and is kept. */
    c.cold = 1;
    c.min_time_s = 0.01;
    side(&s, lab);
    CHECK_INT(kp_bench_measure(&s, 1, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK_NEAR(s.flush_ms, 0.05, 1e-12);
    CHECK(s.gpu_s >= 0.01);
    double kernels_s = 0;
    for (size_t i = 0; i < s.n; i++)
        kernels_s += s.ms[i] / 1e3;
    CHECK(s.gpu_s > kernels_s * 1.4); /* each 0.1 ms sample came with 0.05 ms of flush */
    kp_bench_side_free(&s);
    kp_lab_close(lab);
}

static void test_throttled(void)
{
    fake_kernel base = {.base = 100000, .noise = 0.01};
    kp_lab *lab = fake_lab(&base);
    kp_bench_config c = config();
    kp_error err = {0};
    kp_bench_side s;
    kp_bench_outcome o;

    /* Every 8th clock reading dips to 900 MHz (51% of 1755): those batches go. */
    setenv("FAKE_NVML_MODE", "dip", 1);
    side(&s, lab);
    c.max_noise = 0.0005;
    c.min_time_s = 0.2; /* 0.01 s batches: some 20 rounds, 40 readings */
    CHECK_INT(kp_bench_measure(&s, 1, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(s.throttled > 0);
    CHECK(s.n > 0);
    CHECK_INT(s.taken, s.n + s.throttled);
    CHECK_NEAR(s.min_clock_mhz, 900, 0);
    CHECK(s.throttle_reasons & 0x8);
    for (size_t i = 0; i < s.n; i++) /* no kept sample was read at 900 */
        CHECK(s.mhz[i] > 1000);
    char words[160];
    kp_clock_reasons_text(s.throttle_reasons, words, sizeof words);
    CHECK(words[0] != '\0');
    kp_bench_side_free(&s);
    unsetenv("FAKE_NVML_MODE");

    /* A fraction above 1410/1755: every batch is throttled, nothing is left to report. */
    c = config();
    c.throttle_fraction = 0.9;
    c.timeout_s = 0.05;
    side(&s, lab);
    CHECK_INT(kp_bench_measure(&s, 1, &c, NULL, NULL, &o, &err), KPROF_BACKEND);
    CHECK_CONTAINS(err.message, "throttled");
    CHECK_INT(s.n, 0);
    CHECK(s.throttled > 0);
    kp_error_clear(&err);
    kp_bench_side_free(&s);
    kp_lab_close(lab);
}

static void test_compare(void)
{
    fake_kernel a_ns = {.base = 100000, .noise = 0.01}, b_ns = {.base = 110000, .noise = 0.01};
    kp_lab *la = fake_lab(&a_ns), *lb = fake_lab(&b_ns), *la2 = fake_lab(&a_ns);
    kp_bench_config c = config();
    kp_error err = {0};
    kp_bench_side s[2];
    kp_bench_outcome o;

    side(&s[0], la);
    side(&s[1], lb);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(o.compared && o.paired);
    CHECK_INT(o.stop, KP_BENCH_STOP_DECIDED);
    CHECK(s[0].rounds >= KP_BENCH_MIN_ROUNDS);
    CHECK_INT(s[0].n, s[1].n); /* pairs */
    CHECK_NEAR(o.ratio.value, s[1].median.value / s[0].median.value, 1e-12);
    CHECK_NEAR(o.ratio.value, 1.1, 0.01);
    CHECK(o.ratio.lo > 1.01);
    CHECK_INT(o.verdict, KP_COMPARE_SLOWER);
    CHECK(o.have_cycles);
    CHECK_INT(o.cycles_verdict, KP_COMPARE_SLOWER);
    CHECK_INT(o.final_verdict, KP_COMPARE_SLOWER);

    /* This run's A against the earlier B, unpaired: FASTER. */
    kp_bench_side old;
    memset(&old, 0, sizeof old);
    CHECK_INT(kp_bench_side_add(&old, s[1].ms, s[1].mhz, s[1].n, &err), KPROF_OK);
    old.rounds = s[1].rounds;
    CHECK_INT(kp_bench_summarise(&old, &err), KPROF_OK);
    kp_bench_outcome u;
    kp_bench_outcome_init(&u);
    CHECK_INT(kp_bench_compare(&old, &s[0], 0, &c, &u, &err), KPROF_OK);
    CHECK(!u.paired);
    /* Across runs, one run a side: 10% clears the band by the run allowance, and says what it
     * rests on. */
    CHECK_INT(u.final_verdict, KP_COMPARE_FASTER);
    CHECK(u.judgement.notes & KP_JUDGE_NOTE_ONE_RUN);
    kp_bench_side_free(&old);
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);

    /* The same kernel against itself: SAME, never FASTER or SLOWER. */
    side(&s[0], la);
    side(&s[1], la2);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK_INT(o.final_verdict, KP_COMPARE_SAME);
    CHECK(o.ratio.lo >= 0.99 && o.ratio.hi <= 1.01);
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);
    kp_lab_close(la);
    kp_lab_close(lb);
    kp_lab_close(la2);
}

/* Samples with two modes (40% of them 1.4 times as long): a kernel against itself is never
 * decided, and says why. */
static void test_two_modes(void)
{
    fake_kernel a = {.base = 100000, .noise = 0.002, .high = 1.4, .high_share = 0.4};
    fake_kernel b = a;
    kp_lab *la = fake_lab(&a), *lb = fake_lab(&b);
    kp_bench_config c = config();
    c.timeout_s = 60; /* ends on its sample count, whatever the machine's load */
    c.max_samples = 20000;
    kp_error err = {0};
    kp_bench_side s[2];
    kp_bench_outcome o;
    side(&s[0], la);
    side(&s[1], lb);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(o.stop != KP_BENCH_STOP_DECIDED);
    CHECK_INT(o.final_verdict, KP_COMPARE_UNSURE);
    CHECK(o.judgement.reasons & KP_JUDGE_MODES);
    CHECK_INT(s[0].shape.modes, 2);
    CHECK_NEAR(s[0].shape.mode[1] / s[0].shape.mode[0], 1.4, 0.02);
    /* (the modes' centres depend on how many samples the run took: 0.09999 or 0.1 ms) */
    CHECK_CONTAINS(o.judgement.reason, "two modes at 0.");
    CHECK_CONTAINS(o.judgement.reason, " and 0.14 ms");
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);
    /* One kernel: no noise stop on a median that two modes share. */
    side(&s[0], la);
    c.max_noise = 0.5;
    CHECK_INT(kp_bench_measure(s, 1, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(o.stop != KP_BENCH_STOP_NOISE);
    CHECK(kp_judge_unstable(&s[0].shape, -1, KP_JUDGE_BUSY_LIMIT, 0.01) & KP_JUDGE_MODES);
    kp_bench_side_free(&s[0]);
    kp_lab_close(la);
    kp_lab_close(lb);
}

/* B slows down as it runs (1% over every 1,000 samples), A does not: the pairs' ratio drifts,
 * and that is no verdict. */
static void test_drift(void)
{
    fake_kernel a = {.base = 100000, .noise = 0.002};
    fake_kernel b = {.base = 100000, .noise = 0.002, .drift = 1e-5};
    kp_lab *la = fake_lab(&a), *lb = fake_lab(&b);
    kp_bench_config c = config();
    c.timeout_s = 60; /* ends on its sample count, whatever the machine's load */
    c.max_samples = 8000;
    c.min_time_s = 0.5; /* the fake's time: some 5,000 samples a side before any stop */
    kp_error err = {0};
    kp_bench_side s[2];
    kp_bench_outcome o;
    side(&s[0], la);
    side(&s[1], lb);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(o.stop != KP_BENCH_STOP_DECIDED);
    CHECK_INT(o.final_verdict, KP_COMPARE_UNSURE);
    CHECK(o.judgement.reasons & (KP_JUDGE_DRIFT | KP_JUDGE_FEW));
    CHECK(o.judgement.have_q);
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);
    kp_lab_close(la);
    kp_lab_close(lb);
}

/* A device whose kernels run on the host's CPUs, the host busy with another process (a child
 * that spins, not the session's), and noisy samples: UNSURE, the machine named busy. */
static void test_busy_host(void)
{
    fake_kernel a = {.base = 100000, .noise = 0.6}, b = {.base = 100000, .noise = 0.6};
    kp_lab *la = fake_lab(&a), *lb = fake_lab(&b);
    la->info.device.kernels_in_process = lb->info.device.kernels_in_process = 1;
    pid_t spinner = fork();
    if (spinner == 0) {
        volatile unsigned long x = 0;
        for (;;)
            x++;
    }
    kp_bench_config c = config();
    c.timeout_s = 0.6;
    c.min_time_s = 0.3;
    kp_error err = {0};
    kp_bench_side s[2];
    kp_bench_outcome o;
    side(&s[0], la);
    side(&s[1], lb);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    kill(spinner, SIGKILL);
    waitpid(spinner, NULL, 0);
    CHECK(o.busy_cpus >= KP_JUDGE_BUSY_LIMIT);
    CHECK(o.measured_busy_cpus >= KP_JUDGE_BUSY_LIMIT);
    CHECK(o.stop != KP_BENCH_STOP_DECIDED);
    CHECK_INT(o.final_verdict, KP_COMPARE_UNSURE);
    CHECK(o.judgement.reasons & KP_JUDGE_BUSY);
    CHECK_CONTAINS(o.judgement.reason, "the machine was busy: ");
    CHECK_CONTAINS(o.judgement.reason, "CPUs taken by other work");
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);
    /* A GPU (kernels not on the host): the busy host is measured, not held against it. */
    la->info.device.kernels_in_process = lb->info.device.kernels_in_process = 0;
    side(&s[0], la);
    side(&s[1], lb);
    CHECK_INT(kp_bench_measure(s, 2, &c, NULL, NULL, &o, &err), KPROF_OK);
    CHECK(o.busy_cpus < 0);
    CHECK(!(o.judgement.reasons & KP_JUDGE_BUSY));
    kp_bench_side_free(&s[0]);
    kp_bench_side_free(&s[1]);
    kp_lab_close(la);
    kp_lab_close(lb);
}

/* A plan's points (no device): the first axis varies slowest, --grid, --tg, the SPEC, -D and the
 * formulas substituted at each point; a point's mistake names the point; the rows' GB/s and the
 * --fail-if-slower gate. */
static void test_plan_points(void)
{
    kp_bench_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.grid = "N";
    plan.tg = "64";
    plan.buffers = "f32:N,f32:N";
    plan.defines[plan.ndefines++] = "N";
    plan.defines[plan.ndefines++] = "T={N}/2";
    plan.options = " -Ifoo";
    plan.bytes_expr = "8*N";
    plan.naxes = 2;
    snprintf(plan.axes[0].name, sizeof plan.axes[0].name, "N");
    snprintf(plan.axes[1].name, sizeof plan.axes[1].name, "K");
    const char *ns[] = {"1024", "4096"}, *ks[] = {"1", "2", "3"};
    for (int i = 0; i < 2; i++) {
        kp_var *v = &plan.axes[0].values[plan.axes[0].nvalues++];
        snprintf(v->name, sizeof v->name, "N");
        snprintf(v->text, sizeof v->text, "%s", ns[i]);
        v->numeric = 1;
        v->value = atof(ns[i]);
    }
    for (int i = 0; i < 3; i++) {
        kp_var *v = &plan.axes[1].values[plan.axes[1].nvalues++];
        snprintf(v->name, sizeof v->name, "K");
        snprintf(v->text, sizeof v->text, "%s", ks[i]);
        v->numeric = 1;
        v->value = atof(ks[i]);
    }
    kp_error err = {0};
    CHECK_INT(kp_bench_check_points(&plan, 6, &err), KPROF_OK);
    kp_bench_setup p;
    CHECK_INT(kp_bench_point_setup(&plan, 4, &p, &err), KPROF_OK); /* N=4096 K=2 */
    char vt[256];
    kp_bench_vars_text(&p.vars, vt, sizeof vt);
    CHECK_STR(vt, "N=4096 K=2");
    CHECK_INT((int)p.launch.grid[0], 4096);
    CHECK_INT((int)p.launch.tg[0], 64);
    CHECK_INT(p.launch.dims, 1);
    CHECK_STR(p.buffers.data, "f32:4096,f32:4096");
    CHECK_CONTAINS(p.options.data, "-DN=4096");
    CHECK_CONTAINS(p.options.data, " -Ifoo");
    CHECK_NEAR(p.bytes, 8 * 4096.0, 1e-9);
    kp_bench_setup_free(&p);

    plan.tg = "64x2"; /* one dimension against two */
    CHECK_INT(kp_bench_point_setup(&plan, 0, &p, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "--grid has 1 dimension but --tg has 2");
    CHECK_CONTAINS(err.message, "(at the point N=1024 K=1)");
    kp_error_clear(&err);

    kp_bench_row rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].bytes = 2000000;
    rows[0].side[0].median.value = 1.0; /* 2 MB in 1 ms */
    CHECK_NEAR(kp_bench_row_gbps(&rows[0], &rows[0].side[0]), 2.0, 1e-9);
    CHECK_NEAR(kp_bench_row_gflops(&rows[0], &rows[0].side[0]), 0, 0);
    rows[0].nsides = 1;
    CHECK(kp_bench_row_comparison(&rows[0]) == NULL);
    rows[1].nsides = 2;
    CHECK(kp_bench_row_comparison(&rows[1]) == &rows[1].outcome);
    kp_bench_gate(rows, 2, -1); /* not asked: nothing marked */
    CHECK(!rows[0].slower_gate && !rows[1].slower_gate);
}

int main(void)
{
    test_plan_points();
    test_one_kernel();
    test_throttled();
    test_compare();
    test_two_modes();
    test_drift();
    test_busy_host();
    return kp_test_failures != 0;
}
