/* Kernels for bench/sweep.py: a memory-bound add and a register-heavy kernel whose maximum
 * threadgroup size the compiler lowers below the device's. */
extern "C" __global__ void stream_add(float *out, const float *a, const float *b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void heavy(float *out, const float *in, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a[160];
#pragma unroll
    for (int j = 0; j < 160; j++)
        a[j] = in[(i + j * 977u) % n];
#pragma unroll
    for (int it = 0; it < 4; it++) {
#pragma unroll
        for (int j = 0; j < 160; j++)
            a[j] = a[j] * a[(j + 7) % 160] + 1.0f;
    }
    float s = 0;
#pragma unroll
    for (int j = 0; j < 160; j++)
        s += a[j];
    out[i] = s;
}
