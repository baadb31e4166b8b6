/* Kernels for bench/counters_vs_ncu.py: `kprof run --counters` side by side with `ncu --metrics`
 * on the same dispatches, each kernel chosen for what its counters must show.
 *
 *   triad        memory-bound: a[i] = b[i] + s * c[i] over three arrays far beyond the L2;
 *                DRAM bytes = the buffers' bytes (3 x n x 4): measured ~ estimated
 *   fma_loop     compute-bound: 8 independent FMA chains of `iters` steps per thread, almost no
 *                memory traffic; FP32 FLOPs = threads x iters x 16 exactly
 *   l2_reread    cache-friendly: every thread reads `reps` elements of a small buffer that stays
 *                in the L2 (8 MiB on a 50-60 MiB L2), coalesced; L2 hit rate near 100%, DRAM
 *                traffic the small buffer once plus the output
 *   stride2      every element of `in` read twice, by threads n/2 apart in the grid (so the
 *                second read is long after the L2 evicted the first): DRAM bytes ~ 2x the
 *                buffers' bytes; the output is one float, written only by a value the random
 *                fill never gives, so the compiler keeps the reads
 */

extern "C" __global__ void triad(float *__restrict__ a, const float *__restrict__ b,
                                 const float *__restrict__ c, float s, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) a[i] = b[i] + s * c[i];
}

extern "C" __global__ void fma_loop(float *__restrict__ out, unsigned iters)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float b = 0.999f - (float)(i & 7) * 1e-6f, c = 1e-3f;
    float x0 = (float)(i & 1023) * 1e-6f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
    float x4 = x0 + 0.4f, x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f;
#pragma unroll 16
    for (unsigned k = 0; k < iters; k++) {
        x0 = fmaf(x0, b, c);
        x1 = fmaf(x1, b, c);
        x2 = fmaf(x2, b, c);
        x3 = fmaf(x3, b, c);
        x4 = fmaf(x4, b, c);
        x5 = fmaf(x5, b, c);
        x6 = fmaf(x6, b, c);
        x7 = fmaf(x7, b, c);
    }
    out[i] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

extern "C" __global__ void l2_reread(float *__restrict__ out, const float *__restrict__ small,
                                     unsigned n_small, unsigned reps)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (unsigned k = 0; k < reps; k++)
        acc += small[(unsigned)((i + (unsigned long long)k * 65536u) % n_small)];
    out[i] = acc;
}

extern "C" __global__ void stride2(float *__restrict__ out, const float *__restrict__ in,
                                   unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long j = i + n / 2;
    if (j >= n) j -= n; /* (i + n/2) mod n, without a 64-bit division */
    float v = in[i] + in[j];
    if (v == -12345.0f) out[0] = v;
}
