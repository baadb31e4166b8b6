/* demo_add — kprof's template kernel: out[i] = a[i] + b[i] for i < n.
 *
 *   kprof run NAME --entry demo_add --grid 1048576 --tg 256 \
 *       --buffers f32:1048576,f32:1048576,f32:1048576,u32=1048576
 */
__kernel void demo_add(__global float *out, __global const float *a, __global const float *b,
                       uint n)
{
    size_t i = get_global_id(0);
    if (i < n) out[i] = a[i] + b[i];
}
