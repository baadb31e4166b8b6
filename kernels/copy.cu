/* copy kernels — what `kprof caps --measure` times to find the device's bandwidth ceiling.
 * Each copies n4 float4 elements from src to dst; bytes moved = 32 * n4 (read + write). The
 * variants differ only in how much each thread keeps in flight; the ceiling is the best. */
extern "C" __global__ void copy_f4(float4 *__restrict__ dst, const float4 *__restrict__ src,
                                   unsigned long long n4)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n4) dst[i] = src[i];
}

/* Four float4 per thread, all loads issued before the stores, streaming stores. The grid is
 * n4 / 4 threads. */
extern "C" __global__ void copy_f4x4(float4 *__restrict__ dst, const float4 *__restrict__ src,
                                     unsigned long long n4)
{
    unsigned long long base = blockIdx.x * (unsigned long long)blockDim.x * 4 + threadIdx.x;
    float4 v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        unsigned long long j = base + (unsigned long long)k * blockDim.x;
        if (j < n4) v[k] = __ldg(&src[j]);
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
        unsigned long long j = base + (unsigned long long)k * blockDim.x;
        if (j < n4) __stcs(&dst[j], v[k]);
    }
}

/* Grid-stride loop over the whole array with a grid of a few blocks per SM. */
extern "C" __global__ void copy_f4_stride(float4 *__restrict__ dst, const float4 *__restrict__ src,
                                          unsigned long long n4)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += stride)
        dst[i] = __ldg(&src[i]);
}
