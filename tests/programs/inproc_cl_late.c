/*
 * inproc_cl_late.c — libkprof's OpenCL collector when the loader takes the layer in outside a
 * session (tests/cli/test_inproc.py): a session that asks for OpenCL and sees none, then OpenCL
 * used with no session (the layer loads then, with nowhere to record), then a second session
 * whose kernels must be recorded.
 *
 *   inproc_cl_late OUT.kprof    exit 77 without an OpenCL device
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <kprof.h>

#include <stdio.h>

static const char *source = "__kernel void late(__global float *a) {\n"
                            "    a[get_global_id(0)] += 1.0f;\n"
                            "}\n";

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    kprof_options o = KPROF_OPTIONS_INIT;
    o.collectors = KPROF_COLLECT_SCOPES | KPROF_COLLECT_OPENCL;
    if (kprof_start(&o) != KPROF_OK || kprof_stop(NULL) != KPROF_OK) { /* no OpenCL in it */
        fprintf(stderr, "inproc_cl_late: %s\n", kprof_last_error());
        return 1;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_uint count = 0;
    if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "inproc_cl_late: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    if (clBuildProgram(prog, 1, &device, "", NULL, NULL) != CL_SUCCESS) return 1;
    cl_kernel k = clCreateKernel(prog, "late", &err);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1024 * sizeof(float), NULL, &err);
    clSetKernelArg(k, 0, sizeof a, &a);
    size_t global = 1024;
    clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL); /* no session */
    clFinish(q);
    if (kprof_start(&o) != KPROF_OK) {
        fprintf(stderr, "inproc_cl_late: %s\n", kprof_last_error());
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        KPROF_SCOPE("step");
        clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
        clFinish(q);
    }
    kprof_result *r = NULL;
    int rc = kprof_stop(&r) == KPROF_OK &&
                     kprof_result_write(r, KPROF_FORMAT_TRACE, argv[1], KPROF_WRITE_FORCE) == KPROF_OK
                 ? 0
                 : 1;
    if (rc) fprintf(stderr, "inproc_cl_late: %s\n", kprof_last_error());
    kprof_result_destroy(r);
    clReleaseMemObject(a);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return rc;
}
