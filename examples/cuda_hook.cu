// cuda_hook.cu — libkprof with CUDA: scopes around the steps of a program, the CUDA collector
// recording its kernels in-process, and a kernel hook that gives every saxpy launch its work, so
// the results show the kernel's GFLOP/s and GB/s on the device without touching the launches.
//
//   nvcc -O2 -arch=sm_90 cuda_hook.cu -lkprof -o cuda_hook && ./cuda_hook [OUT.kprof]
#include <kprof.h>

#include <cstdio>

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// The work of one launch from its geometry: 2 flops and 12 bytes (x read, y read and written)
// an element; the launch covers grid x block elements.
static int saxpy_work(void *, const kprof_launch *l, double *flops, double *bytes)
{
    double n = (double)l->grid[0] * l->block[0];
    *flops = 2 * n;
    *bytes = 12 * n;
    return KPROF_WORK_FLOPS | KPROF_WORK_BYTES;
}

int main(int argc, char **argv)
{
    const int n = 1 << 24, block = 256;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    cudaMemset(y, 0, n * sizeof(float));

    kprof_options o = KPROF_OPTIONS_INIT;
    o.collectors = KPROF_COLLECT_SCOPES | KPROF_COLLECT_CUDA;
    if (kprof_start(&o) != KPROF_OK) { // e.g. under another profiler: say why, keep the scopes
        fprintf(stderr, "cuda_hook: %s\n", kprof_last_error());
        o.collectors = KPROF_COLLECT_SCOPES;
        kprof_start(&o);
    }
    kprof_kernel_hook("saxpy", saxpy_work, nullptr);
    for (int step = 0; step < 10; step++) {
        KPROF_SCOPE("step");
        saxpy<<<n / block, block>>>(2.0f, x, y, n);
        cudaDeviceSynchronize();
    }
    kprof_result *r = nullptr;
    kprof_stop(&r);
    kprof_result_print(r, KPROF_VIEW_BY_NAME, stdout); // saxpy's GFLOP/s and GB/s among them
    if (argc > 1) kprof_result_write(r, KPROF_FORMAT_TRACE, argv[1], KPROF_WRITE_FORCE);
    kprof_result_destroy(r);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
