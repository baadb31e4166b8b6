/*
 * inproc_bench.c — kprof_benchmark and kprof_benchmark_compare of real OpenCL kernels in-process
 * (tests/cli/test_inproc_bench.py): callbacks that enqueue kernels on PoCL, as a pyopencl program
 * does, timed through kprof's OpenCL layer. Prints one line per case, "NAME key=value ...", or
 * "NAME STATUS: kprof_last_error()" for the error cases.
 *
 *   inproc_bench session   a session with KPROF_COLLECT_OPENCL before the first OpenCL call,
 *                          stopped at once (the layer stays in the loader's chain): every case
 *   inproc_bench running   the session (KPROF=1 KPROF_COLLECT=opencl, or one started here) still
 *                          recording while a hot benchmark runs
 *   inproc_bench never     no session before OpenCL: the benchmark must say it cannot time
 *
 * Exit 77 without an OpenCL device, 1 when the OpenCL setup fails.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <kprof.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `iters` rounds of a multiply-add per work-item: the work grows with iters alone. */
static const char *source = "__kernel void spin(__global float *a, int iters) {\n"
                            "    size_t i = get_global_id(0);\n"
                            "    float x = a[i];\n"
                            "    for (int k = 0; k < iters; k++) x = x * 0.999f + 0.5f;\n"
                            "    a[i] = x;\n"
                            "}\n"
                            "__kernel void spin_copy(__global float *a, int iters) {\n"
                            "    size_t i = get_global_id(0);\n"
                            "    float x = a[i];\n"
                            "    for (int k = 0; k < iters; k++) x = x * 0.999f + 0.5f;\n"
                            "    a[i] = x;\n"
                            "}\n";

#define ITEMS 4096
#define ITERS 400

typedef struct job {
    cl_command_queue queue;
    cl_kernel kernel;
    int own_event; /* pass an event and release it, as pyopencl does */
} job;

static void run_job(void *arg)
{
    job *j = arg;
    size_t global = ITEMS;
    cl_event e = NULL;
    clEnqueueNDRangeKernel(j->queue, j->kernel, 1, NULL, &global, NULL, 0, NULL,
                           j->own_event ? &e : NULL);
    if (e) clReleaseEvent(e);
}

static void nothing(void *arg)
{
    (void)arg;
}

static void print_result(const char *name, kprof_status st, const kprof_benchmark_result *r,
                         const double *samples)
{
    if (st != KPROF_OK) {
        printf("%s %s: %s\n", name, kprof_status_name(st), kprof_last_error());
        return;
    }
    int in_range = 1;
    for (unsigned i = 0; i < r->samples_n; i++)
        if (samples && (samples[i] < r->min_ns || samples[i] > r->max_ns)) in_range = 0;
    printf("%s runs=%u kernels=%u min=%.17g p50=%.17g p90=%.17g max=%.17g mean=%.17g "
           "busy=%.17g wall=%.17g lo=%.17g hi=%.17g noise=%.17g discarded=%u samples_n=%u "
           "samples_in_range=%d stop=%s flush=%.17g gbps=%.17g gflops=%.17g\n",
           name, r->runs, r->kernels, r->min_ns, r->p50_ns, r->p90_ns, r->max_ns, r->mean_ns,
           r->busy_p50_ns, r->wall_p50_ns, r->lo_ns, r->hi_ns, r->noise, r->discarded, r->samples_n,
           in_range, r->stop, r->flush_ns, r->gbps, r->gflops);
}

static void print_compare(const char *name, kprof_status st, const kprof_comparison *c,
                          const kprof_benchmark_result *a, const kprof_benchmark_result *b)
{
    if (st != KPROF_OK) {
        printf("%s %s: %s\n", name, kprof_status_name(st), kprof_last_error());
        return;
    }
    static const char *const verdicts[] = {"SAME", "FASTER", "SLOWER", "UNSURE"};
    char reason[sizeof c->reason];
    snprintf(reason, sizeof reason, "%s", c->reason);
    for (char *p = reason; *p; p++)
        if (*p == ' ') *p = '_';
    printf("%s verdict=%s ratio=%.17g lo=%.17g hi=%.17g reasons=%u a_runs=%u b_runs=%u "
           "a_p50=%.17g b_p50=%.17g a_stop=%s reason=%s\n",
           name, verdicts[c->verdict], c->ratio, c->lo, c->hi, c->reasons, a->runs, b->runs,
           a->p50_ns, b->p50_ns, a->stop, reason[0] ? reason : "-");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "session";
    int keep_session = strcmp(mode, "running") == 0;
    kprof_options o = KPROF_OPTIONS_INIT;
    o.collectors = KPROF_COLLECT_SCOPES | KPROF_COLLECT_OPENCL;
    if (strcmp(mode, "never") != 0 && !kprof_recording() && kprof_start(&o) != KPROF_OK) {
        fprintf(stderr, "inproc_bench: %s\n", kprof_last_error());
        return 1;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_uint count = 0;
    if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "inproc_bench: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = ctx ? clCreateCommandQueue(ctx, device, 0, &err) : NULL;
    cl_program prog = q ? clCreateProgramWithSource(ctx, 1, &source, NULL, &err) : NULL;
    if (!prog || clBuildProgram(prog, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
        fprintf(stderr, "inproc_bench: OpenCL setup failed (%d)\n", err);
        return 1;
    }
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ITEMS * sizeof(float), NULL, &err);
    float zeros[ITEMS] = {0};
    clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL);
    cl_kernel k[3] = {clCreateKernel(prog, "spin", &err), clCreateKernel(prog, "spin_copy", &err),
                      clCreateKernel(prog, "spin", &err)};
    int iters[3] = {ITERS, ITERS, 4 * ITERS};
    for (int i = 0; i < 3; i++) {
        clSetKernelArg(k[i], 0, sizeof buf, &buf);
        clSetKernelArg(k[i], 1, sizeof iters[i], &iters[i]);
    }
    job a = {q, k[0], 0}, copy = {q, k[1], 1}, four = {q, k[2], 0};
    if (!keep_session && kprof_recording() && kprof_stop(NULL) != KPROF_OK) {
        fprintf(stderr, "inproc_bench: %s\n", kprof_last_error());
        return 1;
    }

    kprof_benchmark_options bo = KPROF_BENCHMARK_OPTIONS_INIT;
    bo.collector = KPROF_COLLECT_OPENCL;
    bo.budget_s = 2;
    bo.max_runs = 2000;
    double samples[4096];
    bo.samples = samples;
    bo.samples_cap = 4096;
    bo.flops = 2.0 * ITEMS * ITERS;
    bo.bytes = 2.0 * ITEMS * sizeof(float);
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    print_result("hot", kprof_benchmark(run_job, &a, &bo, &r), &r, samples);
    if (strcmp(mode, "session") != 0) return 0;

    kprof_benchmark_options cold = bo;
    cold.cache = KPROF_CACHE_COLD;
    cold.max_runs = 200;
    cold.budget_s = 1;
    cold.samples = NULL;
    cold.samples_cap = 0;
    kprof_benchmark_result rc = KPROF_BENCHMARK_RESULT_INIT;
    print_result("cold", kprof_benchmark(run_job, &a, &cold, &rc), &rc, NULL);

    kprof_benchmark_options cmp = bo;
    cmp.budget_s = 4;
    cmp.samples = NULL;
    cmp.samples_cap = 0;
    kprof_benchmark_result ra = KPROF_BENCHMARK_RESULT_INIT, rb = KPROF_BENCHMARK_RESULT_INIT;
    kprof_comparison c = KPROF_COMPARISON_INIT;
    print_compare("same",
                  kprof_benchmark_compare(run_job, &a, run_job, &copy, &cmp, NULL, &ra, &rb, &c),
                  &c, &ra, &rb);
    print_compare("four",
                  kprof_benchmark_compare(run_job, &a, run_job, &four, &cmp, NULL, &ra, &rb, &c),
                  &c, &ra, &rb);

    /* Errors, each a clear line. */
    kprof_benchmark_result e = KPROF_BENCHMARK_RESULT_INIT;
    print_result("no-callback", kprof_benchmark(NULL, NULL, &bo, &e), &e, NULL);
    kprof_benchmark_result zero = {0};
    print_result("result-size-0", kprof_benchmark(run_job, &a, &bo, &zero), &zero, NULL);
    kprof_benchmark_options bad = bo;
    bad.size = 0;
    print_result("options-size-0", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    bad = bo;
    bad.max_noise = 2;
    print_result("bad-noise", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    bad = bo;
    bad.collector = 1u << 7;
    print_result("bad-collector", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    bad = bo;
    bad.budget_s = -1;
    print_result("bad-budget", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    bad = bo;
    bad.samples = NULL;
    print_result("cap-without-samples", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    bad = bo;
    bad.cache = (kprof_cache)5;
    print_result("bad-cache", kprof_benchmark(run_job, &a, &bad, &e), &e, NULL);
    print_result("no-device-work", kprof_benchmark(nothing, NULL, &bo, &e), &e, NULL);
    print_compare("compare-no-b",
                  kprof_benchmark_compare(run_job, &a, NULL, NULL, &cmp, NULL, &ra, &rb, &c), &c,
                  &ra, &rb);

    for (int i = 0; i < 3; i++)
        clReleaseKernel(k[i]);
    clReleaseMemObject(buf);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
