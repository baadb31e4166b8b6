/*
 * cuda.c — the CUDA backend's function table, the one name (kp_cuda_backend, backend.h) the rest
 * of kprof knows it by. Devices come through the driver API (libcuda) and CUDA C++ is compiled
 * with NVRTC, both loaded at run time (src/runtime/cuda_api.c), so one build runs with or
 * without them. The work is split by concern: device.c (devices, errors and faults), compile.c
 * (NVRTC, PTX and cubin, modules, program metadata), launch.c (kernels, reflection and
 * occupancy, memory, binding, timed dispatches), flush.c (the cold-cache flush), counters.c
 * (hardware counters through CUPTI's Range Profiler) and pcsample.c (PC sampling, PCs to source
 * lines); cuda_internal.h is what they share.
 */
#include "backend/cuda/cuda_internal.h"

const kp_backend_ops kp_cuda_backend = {
    .name = "cuda",
    .api = "CUDA",
    .source_lang = KP_LANG_CUDA,
    .kernels_in_process = 0, /* a GPU: a faulting kernel is an error the driver returns */
    .probe = kp_cuda_probe,
    .device_count = kp_cuda_device_count,
    .device_info = kp_cuda_device_info,
    .open = kp_cuda_open,
    .close = kp_cuda_close,
    .build = kp_cuda_build,
    .load = kp_cuda_load_binary,
    .program_release = kp_cuda_program_release,
    .kernel_create = kp_cuda_kernel_create,
    .kernel_release = kp_cuda_kernel_release,
    .reflect = kp_cuda_reflect,
    .alloc = kp_cuda_alloc,
    .write = kp_cuda_write,
    .read = kp_cuda_read,
    .free = kp_cuda_free,
    .bind = kp_cuda_bind,
    .bind_capture = kp_cuda_bind_capture,
    .dispatch = kp_cuda_dispatch,
    .dispatch_batch = kp_cuda_dispatch_batch,
    .flush_cache = kp_cuda_flush_cache,
    .flush_kernel = KP_CUDA_L2_FLUSH_KERNEL,
    .counters = kp_cuda_counters,
    .counter_list = kp_cuda_counter_list,
    .pc_sample = kp_cuda_pc_sample,
};
