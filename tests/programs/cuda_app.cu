/*
 * cuda_app.cu — a small CUDA program for `kprof trace` tests: everything the CUDA collector
 * records, in a known amount.
 *
 *   cuda_app [N] [fork] [crash]
 *
 * Launches the extern "C" kernel `kp_plain_add` and the templated kernel `kp_scale<float, 2>`
 * N times each (default 1000) inside the NVTX range "outer", every tenth pair also inside the
 * range "inner"; copies host to device and back (cudaMemcpy), fills with cudaMemset, waits with
 * cudaDeviceSynchronize and cudaStreamSynchronize, and marks "checkpoint" (an NVTX mark).
 * The range "setup" opens before the first CUDA call and closes after it: kprof's NVTX
 * collector starts at the first NVTX call, so ranges that precede CUDA are recorded too.
 *
 *   fork   after CUDA is initialised, forks a child that exits without a CUDA call: the trace
 *          must not hang (a child that flushes CUPTI at exit can).
 *   crash  after N/2 launches of each kernel and a device synchronisation, raises SIGSEGV: the
 *          trace must still hold the kernels launched before it.
 *
 * Prints one line "cuda_app: ok N=<n> kernels=<2n> ..." on success; exits 1 on a CUDA error.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "cuda_app: %s failed: %s\n", #call, cudaGetErrorString(err_));         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

extern "C" __global__ void kp_plain_add(float *x, const float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

template <typename T, int Factor> __global__ void kp_scale(T *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= (T)Factor;
}

int main(int argc, char **argv)
{
    int n = 1000, do_fork = 0, do_crash = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "fork") == 0)
            do_fork = 1;
        else if (strcmp(argv[i], "crash") == 0)
            do_crash = 1;
        else if (atoi(argv[i]) > 0)
            n = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: cuda_app [N] [fork] [crash]\n");
            return 2;
        }
    }

    const int elems = 1 << 16, block = 256, grid = (elems + block - 1) / block;
    const size_t bytes = elems * sizeof(float);
    float *host = (float *)malloc(bytes);
    if (!host) return 1;
    for (int i = 0; i < elems; i++)
        host[i] = (float)i;

    nvtxRangePushA("setup");
    CHECK_CUDA(cudaFree(0));
    nvtxRangePop();

    if (do_fork) {
        fflush(stdout);
        pid_t child = fork();
        if (child < 0) {
            perror("cuda_app: fork");
            return 1;
        }
        if (child == 0) exit(0); /* no CUDA in the child; exit() runs the atexit handlers */
        int status = 0;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "cuda_app: the forked child did not exit cleanly\n");
            return 1;
        }
    }

    float *x = NULL, *y = NULL;
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_CUDA(cudaMalloc(&x, bytes));
    CHECK_CUDA(cudaMalloc(&y, bytes));

    nvtxRangePushA("outer");
    CHECK_CUDA(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(y, 0, bytes));
    for (int i = 0; i < n; i++) {
        int inner = i % 10 == 0;
        if (inner) nvtxRangePushA("inner");
        kp_plain_add<<<grid, block, 0, stream>>>(x, y, elems);
        kp_scale<float, 2><<<grid, block, 0, stream>>>(y, elems);
        if (inner) nvtxRangePop();
        if (do_crash && i + 1 == n / 2) {
            CHECK_CUDA(cudaGetLastError());
            CHECK_CUDA(cudaDeviceSynchronize());
            printf("cuda_app: crashing after %d launches of each kernel\n", i + 1);
            fflush(stdout);
            raise(SIGSEGV);
        }
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    nvtxMarkA("checkpoint");
    CHECK_CUDA(cudaMemcpy(host, x, bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaDeviceSynchronize());
    nvtxRangePop();

    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaStreamDestroy(stream));
    free(host);
    printf("cuda_app: ok N=%d kernels=%d copies=2 memsets=1 ranges=%d fork=%d\n", n, 2 * n,
           1 + (n + 9) / 10, do_fork);
    return 0;
}
