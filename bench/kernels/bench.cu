/* Kernels for bench/bench_kernel.py: `kprof bench` against triton's do_bench, Nsight Compute and
 * itself. The same source is compiled by kprof (NVRTC) and by cupy (RawModule), so both time the
 * same code.
 *
 *   stream_add           memory-bound; n picks the time (~20 us at n ~ 5M on an H200, ~200 us at
 *                        n ~ 57M)
 *   fma_work10/11        compute-bound A/B pair: one dependent FMA chain per thread of 10*K and
 *                        11*K steps, so B does 10% more work than A
 *   fma_long             compute-bound, length set by the scalar `iters` (the script calibrates it
 *                        to ~1 ms at grid 1048576, tg 256)
 */
#define K     1024
#define FMA_A 0.999f
#define FMA_B 0.5f

extern "C" __global__ void stream_add(float *out, const float *a, const float *b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

/* `steps` dependent FMAs (x = x*a + b): each needs the one before, so nothing folds them away
 * (no fast-math) and the time is the steps' count at full occupancy. */
static __device__ __forceinline__ float fma_chain(float x, unsigned int steps)
{
#pragma unroll 8
    for (unsigned int k = 0; k < steps; k++)
        x = fmaf(x, FMA_A, FMA_B);
    return x;
}

extern "C" __global__ void fma_work10(float *out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fma_chain((float)i * 1e-6f, 10u * K);
}

extern "C" __global__ void fma_work11(float *out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fma_chain((float)i * 1e-6f, 11u * K);
}

/* Four independent chains of `iters` FMAs per thread (out must hold the grid's threads). */
extern "C" __global__ void fma_long(float *out, unsigned int iters)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x0 = (float)i * 1e-6f, x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
    for (unsigned int k = 0; k < iters; k++) {
        x0 = fmaf(x0, FMA_A, FMA_B);
        x1 = fmaf(x1, FMA_A, FMA_B);
        x2 = fmaf(x2, FMA_A, FMA_B);
        x3 = fmaf(x3, FMA_A, FMA_B);
    }
    out[i] = x0 + x1 + x2 + x3;
}
