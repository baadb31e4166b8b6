/*
 * host_calls.c — the lists behind kp_host_call_flags (see host_calls.h).
 */
#include "core/host_calls.h"

#include <string.h>

/* Calls hidden unless --raw: polling, queries and bookkeeping (CUDA.jl's list, plus OpenCL's). */
static const char *const kp_polling_calls[] = {"cuCtxGetCurrent",
                                               "cuCtxSetCurrent",
                                               "cuCtxGetDevice",
                                               "cuCtxPushCurrent",
                                               "cuCtxPopCurrent",
                                               "cuStreamQuery",
                                               "cuEventQuery",
                                               "cuDeviceGet",
                                               "cuDeviceGetAttribute",
                                               "cuDeviceGetCount",
                                               "cuDriverGetVersion",
                                               "cuGetProcAddress",
                                               "cuPointerGetAttribute",
                                               "cuPointerGetAttributes",
                                               "cuCtxGetId",
                                               "cuStreamGetCaptureInfo",
                                               "cuStreamIsCapturing",
                                               "cuGetExportTable",
                                               "cudaGetLastError",
                                               "cudaPeekAtLastError",
                                               "cudaGetDevice",
                                               "cudaGetDeviceCount",
                                               "cudaDeviceGetAttribute",
                                               "cudaStreamIsCapturing",
                                               "cudaStreamGetCaptureInfo",
                                               "cudaGetDriverEntryPoint",
                                               "cudaGetDriverEntryPointByVersion",
                                               "cudaStreamQuery",
                                               "cudaEventQuery",
                                               "clGetEventInfo",
                                               "clGetDeviceInfo",
                                               "clGetPlatformInfo",
                                               "clGetKernelInfo",
                                               "clGetEventProfilingInfo",
                                               "clGetPlatformIDs",
                                               "clGetDeviceIDs",
                                               "clGetProgramBuildInfo",
                                               "clGetProgramInfo",
                                               "clGetMemObjectInfo",
                                               "clRetainEvent",
                                               "clReleaseEvent",
                                               NULL};

/* Calls in which the host waits for the device. */
static const char *const kp_sync_calls[] = {"cudaDeviceSynchronize", "cudaStreamSynchronize",
                                            "cudaEventSynchronize",  "cudaMemcpy",
                                            "cuCtxSynchronize",      "cuStreamSynchronize",
                                            "cuEventSynchronize",    "cuMemcpyDtoH",
                                            "cuMemcpyHtoD",          "clFinish",
                                            "clWaitForEvents",       NULL};

/* Calls that put work on a device (name prefixes, so every variant counts: _v2, _ptsz, Async,
 * Ex, Rect). Those of OpenCL are the enqueues kprof's layer times. */
static const char *const kp_launch_prefixes[] = {"cudaLaunch",
                                                 "cuLaunch",
                                                 "cudaGraphLaunch",
                                                 "cuGraphLaunch",
                                                 "cudaMemcpy",
                                                 "cuMemcpy",
                                                 "cudaMemset",
                                                 "cuMemset",
                                                 "clEnqueueNDRangeKernel",
                                                 "clEnqueueTask",
                                                 "clEnqueueReadBuffer",
                                                 "clEnqueueWriteBuffer",
                                                 "clEnqueueCopyBuffer",
                                                 "clEnqueueFillBuffer",
                                                 NULL};

/* ... except these, whose work runs on the host. */
static const char *const kp_host_launches[] = {"cudaLaunchHostFunc", "cuLaunchHostFunc", NULL};

static int kp_in_list(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(name, list[i]) == 0) return 1;
    return 0;
}

static int kp_launches_device_work(const char *name)
{
    if (kp_in_list(name, kp_host_launches)) return 0;
    for (int i = 0; kp_launch_prefixes[i]; i++)
        if (strncmp(name, kp_launch_prefixes[i], strlen(kp_launch_prefixes[i])) == 0) return 1;
    return 0;
}

unsigned kp_host_call_flags(const char *name)
{
    if (!name) return 0;
    unsigned flags = 0;
    if (kp_in_list(name, kp_polling_calls)) flags |= KP_HOST_CALL_POLLING;
    if (kp_in_list(name, kp_sync_calls)) flags |= KP_HOST_CALL_SYNC;
    if (kp_launches_device_work(name)) flags |= KP_HOST_CALL_LAUNCH;
    return flags;
}
