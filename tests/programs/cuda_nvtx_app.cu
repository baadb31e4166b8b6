/* cuda_nvtx_app.cu — a CUDA program that knows nothing of kprof: N steps, each an NVTX range
 * "step" around one kernel launch, then a mark "done". gpu.inproc_cuda runs it under KPROF=1
 * (libkprof preloaded) and under kprof trace: both must record each range and mark once.
 *   cuda_nvtx_app STEPS */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>

__global__ void bump(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 10, n = 1 << 16;
    float *x = NULL;
    if (cudaMalloc(&x, n * sizeof *x) != cudaSuccess) return 1;
    nvtxRangePushA("app");
    for (int s = 0; s < steps; s++) {
        nvtxRangePushA("step");
        bump<<<n / 256, 256>>>(x, n);
        nvtxRangePop();
    }
    cudaDeviceSynchronize();
    nvtxMarkA("done");
    nvtxRangePop();
    cudaFree(x);
    printf("ok\n");
    return 0;
}
