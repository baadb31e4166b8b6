/* fma_f32 — what `kprof caps --measure` times to find the device's FP32 FLOP peak, the compute
 * roof of `kprof run --counters`' roofline. Each thread runs 8 independent chains of
 * iters fused multiply-adds (a = a * b + c: 2 FLOPs each), so a dispatch does
 * threads x iters x 16 FLOPs; the final sum (7 adds per thread) is not counted. The chains
 * converge to c / (1 - b), so no value overflows or turns denormal however long they run. */
extern "C" __global__ void fma_f32(float *__restrict__ out, unsigned iters)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float b = 0.999f - (float)(i & 7) * 1e-6f, c = 1e-3f;
    float a0 = (float)(i & 1023) * 1e-6f, a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f;
    float a4 = a0 + 0.4f, a5 = a0 + 0.5f, a6 = a0 + 0.6f, a7 = a0 + 0.7f;
#pragma unroll 16
    for (unsigned k = 0; k < iters; k++) {
        a0 = fmaf(a0, b, c);
        a1 = fmaf(a1, b, c);
        a2 = fmaf(a2, b, c);
        a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c);
        a5 = fmaf(a5, b, c);
        a6 = fmaf(a6, b, c);
        a7 = fmaf(a7, b, c);
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
