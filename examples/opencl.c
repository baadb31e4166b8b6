/*
 * opencl.c — libkprof around OpenCL work: a session that records the scopes and, in-process, the
 * program's OpenCL calls and kernels with their device times (KPROF_COLLECT_OPENCL: started
 * before the program's first OpenCL call, as the loader takes kprof's layer in there). Each step
 * is a scope with the work it does (n flops, 12n bytes of a vector add); the kernel it launches
 * falls under it, and a kernel hook gives the kernel the same work (its device GFLOP/s and GB/s;
 * under `kprof trace` too). Under `kprof trace`, which records OpenCL itself, the in-process
 * collector stands aside (kprof_start says so) and the scopes alone record here.
 *
 *   example_opencl [OUT.kprof]   prints the key averages by path; saves the trace to OUT.
 *   Exit 77 when there is no OpenCL device.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <kprof.h>

#include <stdio.h>
#include <stdlib.h>

static const char *source =
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n";

#define N (1 << 20)

/* The kernel's work from its launch, for every vadd enqueued (a kernel hook: no change at the
 * call sites): one add and 12 bytes an element. With no local size given, the runtime chose the
 * work-groups: block is 0 and grid counts the work-items. */
static int vadd_work(void *ctx, const kprof_launch *l, double *flops, double *bytes)
{
    (void)ctx;
    double n = (double)l->grid[0] * (l->block[0] ? l->block[0] : 1);
    *flops = n;
    *bytes = 12 * n;
    return KPROF_WORK_FLOPS | KPROF_WORK_BYTES;
}

int main(int argc, char **argv)
{
    kprof_options o = KPROF_OPTIONS_INIT;
    o.collectors = KPROF_COLLECT_SCOPES | KPROF_COLLECT_OPENCL;
    if (kprof_start(&o) != KPROF_OK) { /* say why, and keep the scopes */
        fprintf(stderr, "example_opencl: %s\n", kprof_last_error());
        o.collectors = KPROF_COLLECT_SCOPES;
        if (kprof_start(&o) != KPROF_OK) {
            fprintf(stderr, "example_opencl: %s\n", kprof_last_error());
            return 1;
        }
    }
    kprof_kernel_hook("vadd", vadd_work, NULL);
    cl_platform_id platform;
    cl_device_id device;
    cl_uint count = 0;
    if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "example_opencl: no OpenCL device\n");
        kprof_stop(NULL);
        return 77;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    if (clBuildProgram(prog, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
        fprintf(stderr, "example_opencl: the kernel did not build\n");
        return 1;
    }
    cl_kernel k = clCreateKernel(prog, "vadd", &err);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    float zero = 0;
    clEnqueueFillBuffer(q, a, &zero, sizeof zero, 0, N * sizeof(float), 0, NULL, NULL);
    clEnqueueFillBuffer(q, b, &zero, sizeof zero, 0, N * sizeof(float), 0, NULL, NULL);
    clSetKernelArg(k, 0, sizeof a, &a);
    clSetKernelArg(k, 1, sizeof b, &b);
    clSetKernelArg(k, 2, sizeof c, &c);
    clFinish(q);

    for (int step = 0; step < 5; step++) {
        KPROF_SCOPE("step");
        size_t global = N;
        {
            KPROF_SCOPE_WORK("vadd", (double)N, 12.0 * N); /* one add; two reads, one write */
            clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
            clFinish(q);
        }
    }
    kprof_result *r = NULL;
    if (kprof_stop(&r) != KPROF_OK) {
        fprintf(stderr, "example_opencl: %s\n", kprof_last_error());
        return 1;
    }
    kprof_result_print(r, KPROF_VIEW_BY_PATH, stdout);
    int rc = 0;
    if (argc > 1 &&
        kprof_result_write(r, KPROF_FORMAT_TRACE, argv[1], KPROF_WRITE_FORCE) != KPROF_OK) {
        fprintf(stderr, "example_opencl: %s\n", kprof_last_error());
        rc = 1;
    }
    kprof_result_destroy(r);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return rc;
}
