// inproc_cuda.cu — a CUDA program that profiles itself with libkprof, for
// tests/gpu/test_inproc_cuda.py (built there with nvcc against the build's libkprof.so). Modes:
//
//   inproc_cuda profile OUT N   a session with scopes and the CUDA collector: N "step" scopes,
//                               each a saxpy over 1M floats whose work a kernel hook gives
//                               (2 flops and 12 bytes an element); the trace saved to OUT. Prints
//                               "cuda: STATUS: message" (the collector's start) and "saved OUT".
//                               With the CUDA collector refused (under `kprof trace`), the scopes
//                               still record and the kernels run as before.
//   inproc_cuda bench [cold]    kprof_benchmark of a callback launching 20 saxpys (cold: the L2
//                               flushed before each run, the work given for GB/s and GFLOP/s): one
//                               line of "key value" pairs (runs kernels min p50 p90 max mean busy
//                               wall lo hi, ns; noise discarded samples_n samples_in_range stop
//                               flush gbps gflops).
//   inproc_cuda compare         kprof_benchmark_compare of 20 saxpys against the same 20, then
//                               against 80: a line each, "compare-same|compare-four verdict V
//                               ratio R lo L hi H reasons N a_runs A b_runs B".
//   inproc_cuda errors          kprof_benchmark of a callback that launches nothing: its error.
//   inproc_cuda capture         a saxpy, then kprof_capture_begin("region"), two saxpys,
//                               kprof_capture_end(): for a profiler that captures from there.
#include <kprof.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define N_ELEMENTS (1 << 20)
#define BLOCK      256

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// The kernel's own arithmetic: one multiply and one add per element; x read, y read and written.
static int saxpy_work(void *ctx, const kprof_launch *launch, double *flops, double *bytes)
{
    (void)ctx;
    double n = (double)launch->grid[0] * launch->block[0]; // the launch covers n exactly
    *flops = 2.0 * n;
    *bytes = 12.0 * n;
    return KPROF_WORK_FLOPS | KPROF_WORK_BYTES;
}

static float *x, *y;

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "inproc_cuda: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static void launch_saxpy()
{
    saxpy<<<N_ELEMENTS / BLOCK, BLOCK>>>(2.0f, x, y, N_ELEMENTS);
}

static void twenty(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++)
        launch_saxpy();
}

static void eighty(void *arg)
{
    (void)arg;
    for (int i = 0; i < 80; i++)
        launch_saxpy();
}

static void nothing(void *arg)
{
    (void)arg;
}

static const char *const verdict_names[] = {"SAME", "FASTER", "SLOWER", "UNSURE"};

static void print_comparison(const char *name, const kprof_comparison *c,
                             const kprof_benchmark_result *a, const kprof_benchmark_result *b)
{
    printf("%s verdict %s ratio %.17g lo %.17g hi %.17g reasons %u a_runs %u b_runs %u\n", name,
           verdict_names[c->verdict], c->ratio, c->lo, c->hi, c->reasons, a->runs, b->runs);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    check(cudaMalloc(&x, N_ELEMENTS * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, N_ELEMENTS * sizeof(float)), "cudaMalloc");
    check(cudaMemset(x, 0, N_ELEMENTS * sizeof(float)), "cudaMemset");
    check(cudaMemset(y, 0, N_ELEMENTS * sizeof(float)), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

    if (strcmp(mode, "profile") == 0 && argc > 3) {
        int steps = atoi(argv[3]);
        kprof_options o = KPROF_OPTIONS_INIT;
        o.collectors = KPROF_COLLECT_SCOPES | KPROF_COLLECT_CUDA;
        kprof_status st = kprof_start(&o);
        printf("cuda: %s: %s\n", kprof_status_name(st), st == KPROF_OK ? "" : kprof_last_error());
        if (st != KPROF_OK) { // the CUDA collector refused: record the scopes alone
            o.collectors = KPROF_COLLECT_SCOPES;
            st = kprof_start(&o);
            if (st != KPROF_OK) {
                fprintf(stderr, "inproc_cuda: kprof_start: %s\n", kprof_last_error());
                return 1;
            }
        }
        if (kprof_kernel_hook("saxpy", saxpy_work, NULL) != KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_kernel_hook: %s\n", kprof_last_error());
            return 1;
        }
        for (int i = 0; i < steps; i++) {
            KPROF_SCOPE("step");
            launch_saxpy();
            check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        }
        kprof_result *r = NULL;
        if (kprof_stop(&r) != KPROF_OK ||
            kprof_result_write(r, KPROF_FORMAT_TRACE, argv[2], KPROF_WRITE_FORCE) != KPROF_OK) {
            fprintf(stderr, "inproc_cuda: %s\n", kprof_last_error());
            return 1;
        }
        kprof_result_destroy(r);
        printf("saved %s\n", argv[2]);
        return 0;
    }
    if (strcmp(mode, "bench") == 0) {
        kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
        static double samples[1000];
        o.samples = samples;
        o.samples_cap = 1000;
        if (argc > 2 && strcmp(argv[2], "cold") == 0) {
            o.cache = KPROF_CACHE_COLD;
            o.flops = 20 * 2.0 * N_ELEMENTS;
            o.bytes = 20 * 12.0 * N_ELEMENTS;
        }
        kprof_benchmark_result b = KPROF_BENCHMARK_RESULT_INIT;
        if (kprof_benchmark(twenty, NULL, &o, &b) != KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_benchmark: %s\n", kprof_last_error());
            return 1;
        }
        int in_range = 1;
        for (unsigned i = 0; i < b.samples_n; i++)
            if (samples[i] < b.min_ns || samples[i] > b.max_ns) in_range = 0;
        printf("runs %u kernels %u min %.0f p50 %.0f p90 %.0f max %.0f mean %.0f busy %.0f wall "
               "%.0f lo %.0f hi %.0f noise %.6g discarded %u samples_n %u samples_in_range %d "
               "stop %s flush %.0f gbps %.6g gflops %.6g\n",
               b.runs, b.kernels, b.min_ns, b.p50_ns, b.p90_ns, b.max_ns, b.mean_ns,
               b.busy_p50_ns, b.wall_p50_ns, b.lo_ns, b.hi_ns, b.noise, b.discarded, b.samples_n,
               in_range, b.stop, b.flush_ns, b.gbps, b.gflops);
        return 0;
    }
    if (strcmp(mode, "compare") == 0) {
        kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
        o.budget_s = 3;
        kprof_benchmark_result a = KPROF_BENCHMARK_RESULT_INIT, b = KPROF_BENCHMARK_RESULT_INIT;
        kprof_comparison c = KPROF_COMPARISON_INIT;
        if (kprof_benchmark_compare(twenty, NULL, twenty, NULL, &o, NULL, &a, &b, &c) !=
            KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_benchmark_compare: %s\n", kprof_last_error());
            return 1;
        }
        print_comparison("compare-same", &c, &a, &b);
        if (kprof_benchmark_compare(twenty, NULL, eighty, NULL, &o, NULL, &a, &b, &c) !=
            KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_benchmark_compare: %s\n", kprof_last_error());
            return 1;
        }
        print_comparison("compare-four", &c, &a, &b);
        return 0;
    }
    if (strcmp(mode, "errors") == 0) {
        kprof_benchmark_result b = KPROF_BENCHMARK_RESULT_INIT;
        kprof_status st = kprof_benchmark(nothing, NULL, NULL, &b);
        printf("nothing %s: %s\n", kprof_status_name(st), kprof_last_error());
        return 0;
    }
    if (strcmp(mode, "capture") == 0) {
        launch_saxpy();
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        if (kprof_capture_begin("region") != KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_capture_begin: %s\n", kprof_last_error());
            return 1;
        }
        launch_saxpy();
        launch_saxpy();
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        if (kprof_capture_end() != KPROF_OK) {
            fprintf(stderr, "inproc_cuda: kprof_capture_end: %s\n", kprof_last_error());
            return 1;
        }
        printf("captured\n");
        return 0;
    }
    fprintf(stderr, "usage: inproc_cuda profile OUT N | bench [cold] | compare | errors | capture\n");
    return 2;
}
