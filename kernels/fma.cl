/* fma_f32 — what `kprof caps --measure` times to find the device's FP32 FLOP peak (see fma.cu):
 * 8 independent chains of iters multiply-adds per work-item, threads x iters x 16 FLOPs per
 * dispatch. mad() lets a device without fused multiply-add hardware use its fastest a * b + c
 * (fma() would be a slow software routine there). */
__kernel void fma_f32(__global float *out, uint iters)
{
    size_t i = get_global_id(0);
    float b = 0.999f - (float)(i & 7) * 1e-6f, c = 1e-3f;
    float a0 = (float)(i & 1023) * 1e-6f, a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f;
    float a4 = a0 + 0.4f, a5 = a0 + 0.5f, a6 = a0 + 0.6f, a7 = a0 + 0.7f;
    for (uint k = 0; k < iters; k++) {
        a0 = mad(a0, b, c);
        a1 = mad(a1, b, c);
        a2 = mad(a2, b, c);
        a3 = mad(a3, b, c);
        a4 = mad(a4, b, c);
        a5 = mad(a5, b, c);
        a6 = mad(a6, b, c);
        a7 = mad(a7, b, c);
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
