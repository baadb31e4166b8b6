/*
 * inproc_cl_late.c — libkprof's OpenCL collector when the loader takes the layer in outside a
 * session (tests/cli/test_inproc.py): a session that asks for OpenCL and sees none, then OpenCL
 * used with no session (the layer loads then, with nowhere to record), then a second session
 * whose kernels must be recorded. Its "step" scopes carry work: it prints their key-average row's
 * rates (over the device time attributed to them, and over their host time) on stdout,
 * "step flops=F bytes=B gpu_s=G total_s=T gflops=R host_gflops=H gb=S host_gb=U".
 *
 *   inproc_cl_late OUT.kprof    exit 77 without an OpenCL device
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <kprof.h>

#include <stdio.h>
#include <string.h>

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
        KPROF_SCOPE_WORK("step", 1024.0, 8192.0);
        clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
        clFinish(q);
    }
    kprof_result *r = NULL;
    int rc = kprof_stop(&r) == KPROF_OK && kprof_result_write(r, KPROF_FORMAT_TRACE, argv[1],
                                                              KPROF_WRITE_FORCE) == KPROF_OK
                 ? 0
                 : 1;
    if (rc) fprintf(stderr, "inproc_cl_late: %s\n", kprof_last_error());
    size_t n = 0;
    const kprof_row *rows = NULL;
    if (!rc && kprof_result_key_averages(r, KPROF_BY_NAME, &rows, &n) != KPROF_OK) {
        fprintf(stderr, "inproc_cl_late: %s\n", kprof_last_error());
        rc = 1;
    }
    for (size_t i = 0; i < n; i++) {
        const kprof_row *row = kprof_row_at(rows, i);
        if (strcmp(row->name, "step") == 0)
            printf("step flops=%.17g bytes=%.17g gpu_s=%.17g total_s=%.17g gflops=%.17g "
                   "host_gflops=%.17g gb=%.17g host_gb=%.17g\n",
                   row->flops, row->bytes, row->gpu_s, row->total_s, row->gflops_per_s,
                   row->host_gflops_per_s, row->gb_per_s, row->host_gb_per_s);
    }
    kprof_result_destroy(r);
    clReleaseMemObject(a);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return rc;
}
