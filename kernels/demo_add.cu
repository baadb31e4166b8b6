/* demo_add — kprof's template kernel: out[i] = a[i] + b[i] for i < n.
 *
 *   kprof run NAME --entry demo_add --grid 1048576 --tg 256 \
 *       --buffers f32:1048576,f32:1048576,f32:1048576,u32=1048576
 */
extern "C" __global__ void demo_add(float *out, const float *a, const float *b, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
