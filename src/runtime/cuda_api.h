/*
 * cuda_api.h — the CUDA driver API and NVRTC entry points kprof uses, as one list per library
 * that generates a table of function pointers filled at run time: libcuda.so.1 (or the library
 * named by KPROF_CUDA_LIBRARY) and libnvrtc (KPROF_NVRTC_LIBRARY). kprof never links either,
 * so it starts on a machine without them. Also: CUDA and NVRTC errors in words, and C++
 * symbol demangling through libstdc++'s __cxa_demangle, found with dlopen so libkprof stays C.
 *
 * cuda.h #defines many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the lists
 * below are expanded before they are stringified, so dlsym gets the real symbol and the table
 * fields carry the same expanded names: kp_cu.cuMemAlloc(...) reads as usual.
 */
#ifndef KP_CUDA_API_H
#define KP_CUDA_API_H

#include "base/error.h"

#include <cuda.h>
#include <cudaProfiler.h>
#include <nvrtc.h>

#include <stddef.h>

/* X(function) — driver entry points, typed from cuda.h's own declarations. All are required:
 * the newest (cuModuleEnumerateFunctions, cuFuncGetParamInfo, cuEventElapsedTime_v2) need a
 * CUDA 12.8 or newer driver. */
#define KP_CUDA_DRIVER_FUNCTIONS(X)                                                                \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem)                                                                            \
    X(cuDeviceGetPCIBusId)                                                                         \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuEventRecord)                                                                               \
    X(cuEventQuery)                                                                                \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime)                                                                          \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleLoadDataEx)                                                                          \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuModuleGetFunctionCount)                                                                    \
    X(cuModuleEnumerateFunctions)                                                                  \
    X(cuFuncGetName)                                                                               \
    X(cuFuncGetParamInfo)                                                                          \
    X(cuFuncGetAttribute)                                                                          \
    X(cuFuncSetAttribute)                                                                          \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                 \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemcpyHtoDAsync)                                                                           \
    X(cuMemcpyDtoHAsync)                                                                           \
    X(cuMemsetD32Async)                                                                            \
    X(cuLaunchKernel)                                                                              \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxGetDevice)                                                                              \
    X(cuCtxSynchronize)                                                                            \
    X(cuProfilerStart)                                                                             \
    X(cuProfilerStop)

/* X(function) — NVRTC entry points (all in NVRTC 12.0 and later). */
#define KP_CUDA_NVRTC_FUNCTIONS(X)                                                                 \
    X(nvrtcGetErrorString)                                                                         \
    X(nvrtcVersion)                                                                                \
    X(nvrtcGetNumSupportedArchs)                                                                   \
    X(nvrtcGetSupportedArchs)                                                                      \
    X(nvrtcCreateProgram)                                                                          \
    X(nvrtcDestroyProgram)                                                                         \
    X(nvrtcCompileProgram)                                                                         \
    X(nvrtcGetPTXSize)                                                                             \
    X(nvrtcGetPTX)                                                                                 \
    X(nvrtcGetCUBINSize)                                                                           \
    X(nvrtcGetCUBIN)                                                                               \
    X(nvrtcGetProgramLogSize)                                                                      \
    X(nvrtcGetProgramLog)                                                                          \
    X(nvrtcAddNameExpression)                                                                      \
    X(nvrtcGetLoweredName)

#define KP_CUDA_SLOT_(fn) __typeof__(fn) *fn;

typedef struct kp_cuda_driver_api {
    KP_CUDA_DRIVER_FUNCTIONS(KP_CUDA_SLOT_)
} kp_cuda_driver_api;

typedef struct kp_cuda_nvrtc_api {
    KP_CUDA_NVRTC_FUNCTIONS(KP_CUDA_SLOT_)
} kp_cuda_nvrtc_api;

#undef KP_CUDA_SLOT_

/* The loaded tables; kp_cu is valid after kp_cuda_load() returned KPROF_OK, kp_nvrtc after
 * kp_cuda_nvrtc_load() returned KPROF_OK. */
extern kp_cuda_driver_api kp_cu;
extern kp_cuda_nvrtc_api kp_nvrtc;

/* Load the driver library once (thread-safe; cuInit is the caller's). KPROF_OK, or
 * KPROF_UNAVAILABLE with the reason in err ("libcuda.so.1 not found"). */
kprof_status kp_cuda_load(kp_error *err);

/* Load NVRTC once (thread-safe), only when a .cu source is built. KPROF_OK, or
 * KPROF_UNAVAILABLE with the reason in err. */
kprof_status kp_cuda_nvrtc_load(kp_error *err);

/* "CUDA_ERROR_ILLEGAL_ADDRESS" — from the driver when it is loaded and knows the code, else
 * from kprof's own list, else "CUDA_ERROR_UNKNOWN_CODE". Static or thread-local storage. */
const char *kp_cuda_result_name(CUresult rc);

/* "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered" into buf. */
void kp_cuda_error_text(CUresult rc, char *buf, size_t n);

/* "NVRTC_ERROR_COMPILATION (6)" plus NVRTC's own text when it differs from the name. */
void kp_cuda_nvrtc_error_text(nvrtcResult rc, char *buf, size_t n);

/* What a CUDA error means for kprof: FAULT for errors a kernel raised (they leave the context
 * unusable), INVALID for launch configurations the device refuses, NOMEM, COMPILE for images
 * the driver cannot load or JIT, UNAVAILABLE for a missing or unusable device, else BACKEND. */
kprof_status kp_cuda_result_status(CUresult rc);

#endif
