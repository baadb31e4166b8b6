/* copy kernels — what `kprof caps --measure` times to find the device's bandwidth ceiling.
 * Each copies n4 float4 elements from src to dst; bytes moved = 32 * n4 (read + write). */
__kernel void copy_f4(__global float4 *dst, __global const float4 *src, ulong n4)
{
    size_t i = get_global_id(0);
    if (i < n4) dst[i] = src[i];
}

/* Four float4 per work-item, loads before stores. The grid is n4 / 4 work-items. */
__kernel void copy_f4x4(__global float4 *dst, __global const float4 *src, ulong n4)
{
    size_t l = get_local_size(0);
    size_t base = get_group_id(0) * l * 4 + get_local_id(0);
    float4 v[4];
    for (int k = 0; k < 4; k++)
        if (base + k * l < n4) v[k] = src[base + k * l];
    for (int k = 0; k < 4; k++)
        if (base + k * l < n4) dst[base + k * l] = v[k];
}

/* Grid-stride loop over the whole array with a small grid. */
__kernel void copy_f4_stride(__global float4 *dst, __global const float4 *src, ulong n4)
{
    size_t stride = get_global_size(0);
    for (size_t i = get_global_id(0); i < n4; i += stride) dst[i] = src[i];
}
