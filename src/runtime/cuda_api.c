/*
 * cuda_api.c — fills the CUDA driver and NVRTC function tables (see cuda_api.h), names their
 * errors and sorts them into kprof statuses, and demangles C++ kernel symbols.
 */
#define _GNU_SOURCE
#include "runtime/cuda_api.h"
#include "base/env.h"
#include "runtime/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_CUDA_STR_(x)  #x
#define KP_CUDA_XSTR_(x) KP_CUDA_STR_(x)

kp_cuda_driver_api kp_cu;
kp_cuda_nvrtc_api kp_nvrtc;

static const char *const kp_cuda_libs[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const kp_cuda_names[] = {
#define KP_CUDA_NAME_(fn) KP_CUDA_XSTR_(fn),
    KP_CUDA_DRIVER_FUNCTIONS(KP_CUDA_NAME_)
#undef KP_CUDA_NAME_
};

static kp_dynlib_table kp_cuda_table = {
    .libname = "libcuda",
    .libs = kp_cuda_libs,
    .env = KP_ENV_CUDA_LIBRARY,
    .symbols = kp_cuda_names,
    .slots = (void **)&kp_cu,
    .count = sizeof kp_cuda_names / sizeof kp_cuda_names[0],
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static const char *const kp_nvrtc_libs[] = {"libnvrtc.so.13",
                                            "libnvrtc.so.12",
                                            "libnvrtc.so",
                                            "/usr/local/cuda/lib64/libnvrtc.so.13",
                                            "/usr/local/cuda/lib64/libnvrtc.so",
                                            NULL};
static const char *const kp_nvrtc_names[] = {
#define KP_CUDA_NAME_(fn) KP_CUDA_XSTR_(fn),
    KP_CUDA_NVRTC_FUNCTIONS(KP_CUDA_NAME_)
#undef KP_CUDA_NAME_
};

static kp_dynlib_table kp_nvrtc_table = {
    .libname = "libnvrtc",
    .libs = kp_nvrtc_libs,
    .env = KP_ENV_NVRTC_LIBRARY,
    .symbols = kp_nvrtc_names,
    .slots = (void **)&kp_nvrtc,
    .count = sizeof kp_nvrtc_names / sizeof kp_nvrtc_names[0],
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

kprof_status kp_cuda_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_cuda_table, err);
}

kprof_status kp_cuda_nvrtc_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_nvrtc_table, err);
}

/* X(code, kprof status) — the CUDA errors kprof tells apart. A kernel's own faults are sticky:
 * after one, every call on the context fails the same way. */
#define KP_CUDA_RESULTS(X)                                                                         \
    X(CUDA_SUCCESS, OK)                                                                            \
    X(CUDA_ERROR_INVALID_VALUE, INVALID)                                                           \
    X(CUDA_ERROR_OUT_OF_MEMORY, NOMEM)                                                             \
    X(CUDA_ERROR_NOT_INITIALIZED, BACKEND)                                                         \
    X(CUDA_ERROR_DEINITIALIZED, BACKEND)                                                           \
    X(CUDA_ERROR_STUB_LIBRARY, UNAVAILABLE)                                                        \
    X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, UNAVAILABLE)                                          \
    X(CUDA_ERROR_DEVICE_UNAVAILABLE, UNAVAILABLE)                                                  \
    X(CUDA_ERROR_NO_DEVICE, UNAVAILABLE)                                                           \
    X(CUDA_ERROR_INVALID_DEVICE, UNAVAILABLE)                                                      \
    X(CUDA_ERROR_DEVICE_NOT_LICENSED, UNAVAILABLE)                                                 \
    X(CUDA_ERROR_INVALID_IMAGE, COMPILE)                                                           \
    X(CUDA_ERROR_INVALID_CONTEXT, BACKEND)                                                         \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, COMPILE)                                                       \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, FAULT)                                                         \
    X(CUDA_ERROR_INVALID_PTX, COMPILE)                                                             \
    X(CUDA_ERROR_NVLINK_UNCORRECTABLE, FAULT)                                                      \
    X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, COMPILE)                                                  \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, COMPILE)                                                 \
    X(CUDA_ERROR_JIT_COMPILATION_DISABLED, COMPILE)                                                \
    X(CUDA_ERROR_CONTAINED, FAULT)                                                                 \
    X(CUDA_ERROR_INVALID_SOURCE, COMPILE)                                                          \
    X(CUDA_ERROR_INVALID_HANDLE, BACKEND)                                                          \
    X(CUDA_ERROR_NOT_FOUND, NOT_FOUND)                                                             \
    X(CUDA_ERROR_NOT_READY, BACKEND)                                                               \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, FAULT)                                                           \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, INVALID)                                                 \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, FAULT)                                                            \
    X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, FAULT)                                             \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, BACKEND)                                                    \
    X(CUDA_ERROR_ASSERT, FAULT)                                                                    \
    X(CUDA_ERROR_HARDWARE_STACK_ERROR, FAULT)                                                      \
    X(CUDA_ERROR_ILLEGAL_INSTRUCTION, FAULT)                                                       \
    X(CUDA_ERROR_MISALIGNED_ADDRESS, FAULT)                                                        \
    X(CUDA_ERROR_INVALID_ADDRESS_SPACE, FAULT)                                                     \
    X(CUDA_ERROR_INVALID_PC, FAULT)                                                                \
    X(CUDA_ERROR_LAUNCH_FAILED, FAULT)                                                             \
    X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, INVALID)                                            \
    X(CUDA_ERROR_TENSOR_MEMORY_LEAK, FAULT)                                                        \
    X(CUDA_ERROR_NOT_PERMITTED, BACKEND)                                                           \
    X(CUDA_ERROR_NOT_SUPPORTED, BACKEND)                                                           \
    X(CUDA_ERROR_SYSTEM_NOT_READY, UNAVAILABLE)                                                    \
    X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, UNAVAILABLE)                                              \
    X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, UNAVAILABLE)                                      \
    X(CUDA_ERROR_INVALID_CLUSTER_SIZE, INVALID)                                                    \
    X(CUDA_ERROR_TIMEOUT, BACKEND)                                                                 \
    X(CUDA_ERROR_UNKNOWN, BACKEND)

const char *kp_cuda_result_name(CUresult rc)
{
    const char *name = NULL;
    if (kp_cuda_table.status == 0 && kp_cuda_table.done &&
        kp_cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    switch (rc) {
#define KP_CUDA_RESULT_NAME_(code, status)                                                         \
    case code:                                                                                     \
        return #code;
        KP_CUDA_RESULTS(KP_CUDA_RESULT_NAME_)
#undef KP_CUDA_RESULT_NAME_
    default:
        return "CUDA_ERROR_UNKNOWN_CODE";
    }
}

void kp_cuda_error_text(CUresult rc, char *buf, size_t n)
{
    const char *text = NULL;
    if (!kp_cuda_table.done || kp_cuda_table.status != 0 ||
        kp_cu.cuGetErrorString(rc, &text) != CUDA_SUCCESS)
        text = NULL;
    if (text && *text)
        snprintf(buf, n, "%s (%d): %s", kp_cuda_result_name(rc), (int)rc, text);
    else
        snprintf(buf, n, "%s (%d)", kp_cuda_result_name(rc), (int)rc);
}

void kp_cuda_nvrtc_error_text(nvrtcResult rc, char *buf, size_t n)
{
    const char *text =
        kp_nvrtc_table.done && kp_nvrtc_table.status == 0 ? kp_nvrtc.nvrtcGetErrorString(rc) : NULL;
    /* nvrtcGetErrorString answers with the enumerator's name itself. */
    snprintf(buf, n, "%s (%d)", text && *text ? text : "NVRTC_ERROR", (int)rc);
}

kprof_status kp_cuda_result_status(CUresult rc)
{
    switch (rc) {
#define KP_CUDA_RESULT_STATUS_(code, status)                                                       \
    case code:                                                                                     \
        return KPROF_##status;
        KP_CUDA_RESULTS(KP_CUDA_RESULT_STATUS_)
#undef KP_CUDA_RESULT_STATUS_
    default:
        return KPROF_BACKEND;
    }
}
