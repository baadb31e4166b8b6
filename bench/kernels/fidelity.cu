/* Kernels for bench/fidelity.py: one memory-bound (>= 1 ms at its size), one short (~10 us),
 * one compute-bound. Timed by kprof's CUPTI and event clocks and by Nsight Compute. */
extern "C" __global__ void stream_add(float *out, const float *a, const float *b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

/* Each thread runs `iters` dependent FMAs on four independent chains held in registers. */
extern "C" __global__ void fma_loop(float *out, const float *in, unsigned int iters)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x0 = in[i], x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
    for (unsigned int k = 0; k < iters; k++) {
        x0 = fmaf(x0, 0.9999f, 0.5f);
        x1 = fmaf(x1, 0.9999f, 0.5f);
        x2 = fmaf(x2, 0.9999f, 0.5f);
        x3 = fmaf(x3, 0.9999f, 0.5f);
    }
    out[i] = x0 + x1 + x2 + x3;
}
