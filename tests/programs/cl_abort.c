/*
 * cl_abort.c — an OpenCL program that dies of abort() with its work done or still queued, for
 * the trace tests: nothing it completed before a synchronisation point may be lost, and what was
 * still pending must be counted as dropped.
 *
 *   cl_abort N after-finish   enqueue N kernels, clFinish, read the buffer back (blocking), abort
 *   cl_abort N pending        enqueue N kernels and abort at once, without waiting for them
 *
 * It builds its kernel before anything else, so a runtime that installs crash handlers of its own
 * at the first build (PoCL's LLVM does) has done so by then. Prints the value it read back
 * (after-finish) before aborting; exit 1 on an OpenCL error, 77 without a device.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS 4096

static const char source[] = "__kernel void bump(__global float *x)\n"
                             "{\n"
                             "    x[get_global_id(0)] += 1.0f;\n"
                             "}\n";

static int fail(const char *what, cl_int rc)
{
    fprintf(stderr, "cl_abort: %s failed: %d\n", what, (int)rc);
    return 1;
}

int main(int argc, char **argv)
{
    long n = argc > 2 ? strtol(argv[1], NULL, 10) : 0;
    int after_finish = argc > 2 && strcmp(argv[2], "after-finish") == 0;
    if (n < 1 || (!after_finish && (argc < 3 || strcmp(argv[2], "pending") != 0))) {
        fprintf(stderr, "usage: cl_abort N after-finish|pending\n");
        return 2;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_uint count = 0;
    if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &count) != CL_SUCCESS ||
        count == 0) {
        fprintf(stderr, "cl_abort: no OpenCL device\n");
        return 77;
    }
    cl_int rc;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateContext", rc);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateCommandQueue", rc);
    const char *text = source;
    cl_program program = clCreateProgramWithSource(context, 1, &text, NULL, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateProgramWithSource", rc);
    if ((rc = clBuildProgram(program, 1, &device, "", NULL, NULL)) != CL_SUCCESS)
        return fail("clBuildProgram", rc);
    cl_kernel kernel = clCreateKernel(program, "bump", &rc);
    if (rc != CL_SUCCESS) return fail("clCreateKernel", rc);
    static float data[ITEMS];
    cl_mem buffer =
        clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateBuffer", rc);
    if ((rc = clSetKernelArg(kernel, 0, sizeof buffer, &buffer)) != CL_SUCCESS)
        return fail("clSetKernelArg", rc);
    const size_t global = ITEMS, local = 64;
    for (long i = 0; i < n; i++)
        if ((rc = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL)) !=
            CL_SUCCESS)
            return fail("clEnqueueNDRangeKernel", rc);
    if (after_finish) {
        if ((rc = clFinish(queue)) != CL_SUCCESS) return fail("clFinish", rc);
        if ((rc = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof data, data, 0, NULL,
                                      NULL)) != CL_SUCCESS)
            return fail("clEnqueueReadBuffer", rc);
        printf("%g\n", data[0]);
        fflush(stdout);
    }
    abort();
}
