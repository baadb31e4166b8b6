/*
 * cuda_capture_app.cu — a CUDA program for `kprof trace --capture` tests (issue 26): kernels whose
 * launches a capture must reproduce, and the program's own record of what they read and wrote,
 * for the test to compare a capture folder's bytes with.
 *
 *   cuda_capture_app OUTDIR [slowest]
 *
 * Kernels:
 *   kp_cap_axpy (extern "C"): y[i] += a * x[i] over n floats, launched 4 times (a = 1, 2, 3, 4) at
 *     n = 1 << 20, 256 threads per block. y points 256 bytes into a larger allocation (as a
 *     caching allocator's blocks do), x is an allocation of its own.
 *   kp_cap_pairs (C++, mangled): takes a struct of two pointers, an int and a float by value
 *     (as PyTorch's multi-tensor kernels take theirs) and writes out[r][c] = in[r][c] * scale +
 *     r, over a 512 x 256 matrix on a 2-D grid of 16 x 16 blocks; launched once.
 *
 * Files in OUTDIR (raw little-endian bytes): x.bin (x), y0.bin (y before any launch), y1.bin ..
 * y4.bin (y after launch k of kp_cap_axpy), in.bin and out.bin (kp_cap_pairs' input and its
 * output), and geometry.txt ("axpy n block" and "pairs rows cols bx by" lines).
 *
 * slowest: instead, kp_cap_axpy is launched at n = 1024 three times, at n = 1 << 24 once (launch
 * 4), at 1024 once more, then after sleeping 1.5 s at 1024 (launch 6) and at 1 << 24 (launch 7):
 * with a 1 s window, @slowest must time launch 4 as the slowest and capture launch 7. Writes
 * ybig-before.bin and ybig-after.bin (y around launch 7, first 1 << 24 floats).
 *
 * Prints "cuda_capture_app: ok" on success; exits 1 on a CUDA error, 2 on bad usage.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "cuda_capture_app: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

extern "C" __global__ void kp_cap_axpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

struct Pair {
    const float *in;
    float *out;
    int cols;
    float scale;
};

__global__ void kp_cap_pairs(Pair p)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    p.out[r * p.cols + c] = p.in[r * p.cols + c] * p.scale + (float)r;
}

static const char *outdir;

static void save(const char *name, const void *dev, size_t bytes)
{
    void *host = malloc(bytes);
    if (!host) {
        fprintf(stderr, "cuda_capture_app: out of memory\n");
        exit(1);
    }
    CHECK_CUDA(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(host, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "cuda_capture_app: cannot write %s\n", path);
        exit(1);
    }
    free(host);
}

static void fill(float *dev, size_t n, float base)
{
    float *host = (float *)malloc(n * sizeof(float));
    if (!host) exit(1);
    for (size_t i = 0; i < n; i++)
        host[i] = base + (float)(i % 1000) * 0.25f;
    CHECK_CUDA(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
    free(host);
}

static int run_slowest(void)
{
    const int big = 1 << 24, small = 1024;
    float *x, *y;
    CHECK_CUDA(cudaMalloc(&x, big * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, big * sizeof(float)));
    fill(x, big, 1.0f);
    fill(y, big, 0.0f);
    int sizes[] = {small, small, small, big, small};
    for (int k = 0; k < 5; k++) {
        kp_cap_axpy<<<(sizes[k] + 255) / 256, 256>>>(y, x, 1.0f, sizes[k]);
        CHECK_CUDA(cudaGetLastError());
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    usleep(1500 * 1000);
    kp_cap_axpy<<<small / 256, 256>>>(y, x, 1.0f, small);
    CHECK_CUDA(cudaDeviceSynchronize());
    save("ybig-before.bin", y, big * sizeof(float));
    kp_cap_axpy<<<big / 256, 256>>>(y, x, 2.0f, big);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    save("ybig-after.bin", y, big * sizeof(float));
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(y));
    printf("cuda_capture_app: ok slowest\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_capture_app OUTDIR [slowest]\n");
        return 2;
    }
    outdir = argv[1];
    if (argc > 2 && strcmp(argv[2], "slowest") == 0) return run_slowest();

    const int n = 1 << 20, block = 256;
    float *x, *ybase;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&ybase, n * sizeof(float) + 4096));
    float *y = ybase + 64; /* 256 bytes in */
    CHECK_CUDA(cudaMemset(ybase, 0, n * sizeof(float) + 4096));
    fill(x, n, 1.0f);
    fill(y, n, 0.5f);
    save("x.bin", x, n * sizeof(float));
    save("y0.bin", y, n * sizeof(float));
    for (int k = 1; k <= 4; k++) {
        kp_cap_axpy<<<n / block, block>>>(y, x, (float)k, n);
        CHECK_CUDA(cudaGetLastError());
        char name[32];
        snprintf(name, sizeof name, "y%d.bin", k);
        save(name, y, n * sizeof(float));
    }

    const int rows = 512, cols = 256;
    float *in, *out;
    CHECK_CUDA(cudaMalloc(&in, rows * cols * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&out, rows * cols * sizeof(float)));
    fill(in, rows * cols, 2.0f);
    CHECK_CUDA(cudaMemset(out, 0, rows * cols * sizeof(float)));
    Pair p = {in, out, cols, 1.5f};
    kp_cap_pairs<<<dim3(cols / 16, rows / 16), dim3(16, 16)>>>(p);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    save("in.bin", in, rows * cols * sizeof(float));
    save("out.bin", out, rows * cols * sizeof(float));

    char path[4096];
    snprintf(path, sizeof path, "%s/geometry.txt", outdir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "axpy %d %d\npairs %d %d 16 16\n", n, block, rows, cols);
    fclose(f);
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(ybase));
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(out));
    printf("cuda_capture_app: ok\n");
    return 0;
}
