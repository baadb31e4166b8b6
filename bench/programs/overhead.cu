/* overhead.cu — the two programs of bench/trace_overhead.py.
 *   overhead launch N   N empty-ish kernels back to back (launch-bound), one sync at the end
 *   overhead kernel N   N kernels of about 5 ms each (kernel-bound), one sync at the end
 * Prints its own wall time (host clock around the work, after a warm-up launch). */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void tiny(float *x)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) x[0] += 1.0f;
}

__global__ void spin(float *x, long long cycles)
{
    long long start = clock64();
    float v = x[threadIdx.x];
    while (clock64() - start < cycles)
        v = v * 0.999f + 0.001f;
    x[threadIdx.x] = v;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: overhead launch|kernel N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    float *x;
    if (cudaMalloc(&x, 4096 * sizeof(float)) != cudaSuccess) return 1;
    cudaMemset(x, 0, 4096 * sizeof(float));
    tiny<<<1, 32>>>(x);
    cudaDeviceSynchronize();
    double t0 = now();
    if (strcmp(argv[1], "launch") == 0)
        for (int i = 0; i < n; i++)
            tiny<<<1, 32>>>(x);
    else
        for (int i = 0; i < n; i++)
            spin<<<132, 128>>>(x, 10000000LL); /* ~5 ms at 1.98 GHz */
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    printf("overhead: %s %d in %.3f s\n", argv[1], n, now() - t0);
    cudaFree(x);
    return 0;
}
