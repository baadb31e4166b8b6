/*
 * cl_api.h — the OpenCL entry points kprof uses, as one list that generates a table of
 * function pointers filled from the ICD loader at run time (libOpenCL.so.1, or the library
 * named by KPROF_OPENCL_LIBRARY). kprof never links libOpenCL, so it starts without it.
 */
#ifndef KP_CL_API_H
#define KP_CL_API_H

#include "base/error.h"

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stddef.h>

/* X(function) — every entry point, typed from the Khronos header's own declaration. */
#define KP_CL_FUNCTIONS(X)                                                                         \
    X(clGetPlatformIDs)                                                                            \
    X(clGetPlatformInfo)                                                                           \
    X(clGetDeviceIDs)                                                                              \
    X(clGetDeviceInfo)                                                                             \
    X(clCreateContext)                                                                             \
    X(clReleaseContext)                                                                            \
    X(clCreateCommandQueue)                                                                        \
    X(clReleaseCommandQueue)                                                                       \
    X(clCreateProgramWithSource)                                                                   \
    X(clCreateProgramWithBinary)                                                                   \
    X(clBuildProgram)                                                                              \
    X(clGetProgramBuildInfo)                                                                       \
    X(clGetProgramInfo)                                                                            \
    X(clReleaseProgram)                                                                            \
    X(clCreateKernel)                                                                              \
    X(clCreateKernelsInProgram)                                                                    \
    X(clGetKernelInfo)                                                                             \
    X(clGetKernelArgInfo)                                                                          \
    X(clGetKernelWorkGroupInfo)                                                                    \
    X(clSetKernelArg)                                                                              \
    X(clReleaseKernel)                                                                             \
    X(clCreateBuffer)                                                                              \
    X(clReleaseMemObject)                                                                          \
    X(clEnqueueWriteBuffer)                                                                        \
    X(clEnqueueReadBuffer)                                                                         \
    X(clEnqueueNDRangeKernel)                                                                      \
    X(clWaitForEvents)                                                                             \
    X(clGetEventInfo)                                                                              \
    X(clGetEventProfilingInfo)                                                                     \
    X(clReleaseEvent)                                                                              \
    X(clFlush)                                                                                     \
    X(clFinish)

typedef struct kp_cl_api {
#define KP_CL_SLOT_(fn) __typeof__(fn) *fn;
    KP_CL_FUNCTIONS(KP_CL_SLOT_)
#undef KP_CL_SLOT_
} kp_cl_api;

/* The loaded table; valid after kp_cl_load() returned KPROF_OK. */
extern kp_cl_api kp_cl;

/* Load once (thread-safe). KPROF_OK, or KPROF_UNAVAILABLE with the reason in err. */
kprof_status kp_cl_load(kp_error *err);

/* "CL_INVALID_VALUE" for -30, "CL_ERROR(-9999)" for unknown codes. Static storage. */
const char *kp_cl_error_name(cl_int code);

#endif
