/*
 * cl_app.c — an ordinary OpenCL program for the `kprof trace` tests: it links the ICD loader like
 * any application and knows nothing about kprof.
 *
 * It builds two kernels from a string (one takes a scalar argument), makes two in-order queues —
 * one asking for profiling and one not, so a trace shows that kprof forces it — and runs K
 * iterations (argv[1], default 100) of: write buffer, NDRange kernel with an application event
 * (whose profiling times it reads itself) and one without, copy buffer, fill buffer, read buffer,
 * then waits with clFinish or clWaitForEvents. It checks the numbers it reads back.
 *
 *   cl_app [K] [fork|crash|blocking]
 *     fork   before touching OpenCL, fork a child that makes its own context, runs a few kernels
 *            and exits 0; after K/2 iterations fork a second child that never touches OpenCL and
 *            calls exit(0) (a worker that inherits a live runtime and a live collector). The
 *            parent waits for both and fails if either did. (A child forked after the parent has
 *            initialised OpenCL cannot run kernels: PoCL's pthread driver waits forever on worker
 *            threads that do not exist in the child, and other runtimes are no better.)
 *     crash  die of SIGSEGV after K/2 iterations, with OpenCL work still queued
 *     blocking  each iteration's read is blocking (CL_TRUE) and ends it: no clFinish or
 *            clWaitForEvents on that queue (the host waits for the kernels inside the read)
 *
 * Prints nothing on success and exits 0; errors go to stderr with exit 1; no OpenCL device: 77.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define N     4096 /* floats per buffer */
#define LOCAL 64   /* work-group size of the kernels launched with one */
#define SCALE 3.0f /* the scalar argument */

static const char kernel_source[] = "__kernel void scale(__global float *x, float a)\n"
                                    "{\n"
                                    "    size_t i = get_global_id(0);\n"
                                    "    x[i] = x[i] * a;\n"
                                    "}\n"
                                    "__kernel void add_one(__global float *x)\n"
                                    "{\n"
                                    "    size_t i = get_global_id(0);\n"
                                    "    x[i] = x[i] + 1.0f;\n"
                                    "}\n";

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int check_rc_ = (call);                                                                 \
        if (check_rc_ != CL_SUCCESS) {                                                             \
            fprintf(stderr, "cl_app: %s failed: %d (line %d)\n", #call, check_rc_, __LINE__);      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#define CHECK_ERR(what, err)                                                                       \
    do {                                                                                           \
        if ((err) != CL_SUCCESS) {                                                                 \
            fprintf(stderr, "cl_app: %s failed: %d (line %d)\n", what, (int)(err), __LINE__);      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

typedef struct app {
    cl_device_id device;
    cl_context context;
    cl_program program;
    cl_kernel scale, add_one;
} app;

static int find_device(cl_device_id *device)
{
    cl_platform_id platforms[8];
    cl_uint nplatforms = 0;
    if (clGetPlatformIDs(8, platforms, &nplatforms) != CL_SUCCESS || nplatforms == 0) return -1;
    if (nplatforms > 8) nplatforms = 8;
    for (cl_uint i = 0; i < nplatforms; i++) {
        cl_uint ndevices = 0;
        if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, device, &ndevices) == CL_SUCCESS &&
            ndevices > 0)
            return 0;
    }
    return -1;
}

/* Context, program and the two kernels on this device. */
static int app_open(app *a)
{
    cl_int err;
    a->context = clCreateContext(NULL, 1, &a->device, NULL, NULL, &err);
    CHECK_ERR("clCreateContext", err);
    const char *src = kernel_source;
    a->program = clCreateProgramWithSource(a->context, 1, &src, NULL, &err);
    CHECK_ERR("clCreateProgramWithSource", err);
    err = clBuildProgram(a->program, 1, &a->device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(a->program, a->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                              NULL);
        fprintf(stderr, "cl_app: clBuildProgram failed: %d\n%s\n", err, log);
        return 1;
    }
    a->scale = clCreateKernel(a->program, "scale", &err);
    CHECK_ERR("clCreateKernel(scale)", err);
    a->add_one = clCreateKernel(a->program, "add_one", &err);
    CHECK_ERR("clCreateKernel(add_one)", err);
    return 0;
}

static void app_close(app *a)
{
    if (a->add_one) clReleaseKernel(a->add_one);
    if (a->scale) clReleaseKernel(a->scale);
    if (a->program) clReleaseProgram(a->program);
    if (a->context) clReleaseContext(a->context);
}

/* The first forked child: device, context, queue and program of its own, a few kernels, a
 * read-back check. */
static int child_main(void)
{
    app a = {0};
    if (find_device(&a.device) != 0) {
        fprintf(stderr, "cl_app: child: no OpenCL device\n");
        return 1;
    }
    if (app_open(&a) != 0) return 1;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(a.context, a.device, 0, &err);
    CHECK_ERR("clCreateCommandQueue(child)", err);
    static float host[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    cl_mem buf = clCreateBuffer(a.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host,
                                host, &err);
    CHECK_ERR("clCreateBuffer(child)", err);
    size_t global = N;
    CHECK(clSetKernelArg(a.add_one, 0, sizeof buf, &buf));
    for (int k = 0; k < 3; k++)
        CHECK(clEnqueueNDRangeKernel(q, a.add_one, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clFinish(q));
    for (int i = 0; i < N; i++) {
        if (host[i] != (float)i + 3.0f) {
            fprintf(stderr, "cl_app: child read %g at %d, expected %g\n", host[i], i,
                    (float)i + 3.0f);
            return 1;
        }
    }
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    app_close(&a);
    return 0;
}

/* A real fault, not raise(SIGSEGV): PoCL loads LLVM, whose SIGSEGV handler restores the previous
 * handlers and returns, expecting the faulting instruction to fault again; after raise() nothing
 * does, and the program would carry on. Both the pointer and the store are volatile, so the
 * compiler neither drops the store (GCC -O2 did) nor, seeing a null pointer, puts a trap (SIGILL)
 * there. */
static void crash(void)
{
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}

/* Fork; the child runs body() (NULL: nothing) and leaves through exit(), so atexit handlers run. */
static pid_t fork_child(int (*body)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) perror("cl_app: fork");
    if (pid == 0) exit(body ? body() : 0);
    return pid;
}

static int wait_child(pid_t pid)
{
    int status = 0;
    if (pid <= 0) return 1;
    if (waitpid(pid, &status, 0) < 0) {
        perror("cl_app: waitpid");
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cl_app: child %ld failed (status 0x%x)\n", (long)pid, status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
    const char *mode = argc > 2 ? argv[2] : "";
    if (iterations < 1 || (*mode && strcmp(mode, "fork") != 0 && strcmp(mode, "crash") != 0 &&
                           strcmp(mode, "blocking") != 0)) {
        fprintf(stderr, "usage: cl_app [ITERATIONS] [fork|crash|blocking]\n");
        return 2;
    }

    int forking = strcmp(mode, "fork") == 0;
    int blocking = strcmp(mode, "blocking") == 0;
    pid_t kernel_child = forking ? fork_child(child_main) : 0;
    pid_t idle_child = 0;

    app a = {0};
    if (find_device(&a.device) != 0) {
        fprintf(stderr, "cl_app: no OpenCL device\n");
        return 77;
    }
    if (app_open(&a) != 0) return 1;

    cl_int err;
    /* q0 asks for profiling through the 2.0 entry point; q1 asks for nothing (1.2 entry point). */
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q0 = clCreateCommandQueueWithProperties(a.context, a.device, props, &err);
    CHECK_ERR("clCreateCommandQueueWithProperties", err);
    cl_command_queue q1 = clCreateCommandQueue(a.context, a.device, 0, &err);
    CHECK_ERR("clCreateCommandQueue", err);

    const size_t bytes = N * sizeof(float);
    cl_mem src = clCreateBuffer(a.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_ERR("clCreateBuffer(src)", err);
    cl_mem dst = clCreateBuffer(a.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_ERR("clCreateBuffer(dst)", err);
    cl_mem other = clCreateBuffer(a.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_ERR("clCreateBuffer(other)", err);

    float scalar = SCALE;
    CHECK(clSetKernelArg(a.scale, 0, sizeof src, &src));
    CHECK(clSetKernelArg(a.scale, 1, sizeof scalar, &scalar));
    CHECK(clSetKernelArg(a.add_one, 0, sizeof other, &other));

    static float in[N], out[N];
    const size_t global = N, local = LOCAL;
    const float zero = 0.0f;
    for (long it = 0; it < iterations; it++) {
        for (int i = 0; i < N; i++)
            in[i] = (float)(i + it);

        CHECK(clEnqueueWriteBuffer(q0, src, CL_FALSE, 0, bytes, in, 0, NULL, NULL));
        cl_event kernel_event = NULL;
        CHECK(
            clEnqueueNDRangeKernel(q0, a.scale, 1, NULL, &global, &local, 0, NULL, &kernel_event));
        /* No event, no local size, on the queue that did not ask for profiling. */
        CHECK(clEnqueueNDRangeKernel(q1, a.add_one, 1, NULL, &global, NULL, 0, NULL, NULL));
        CHECK(clEnqueueCopyBuffer(q0, src, dst, 0, 0, bytes, 0, NULL, NULL));
        CHECK(clEnqueueFillBuffer(q1, other, &zero, sizeof zero, 0, bytes, 0, NULL, NULL));
        cl_event read_event = NULL;
        CHECK(clEnqueueReadBuffer(q0, dst, blocking ? CL_TRUE : CL_FALSE, 0, bytes, out, 0, NULL,
                                  &read_event));
        if (it == iterations / 2) { /* with work in flight */
            if (forking) idle_child = fork_child(NULL);
            if (strcmp(mode, "crash") == 0) crash();
        }
        if (blocking) {
            /* the read waited */
        } else if (it % 2) {
            CHECK(clWaitForEvents(1, &read_event));
        } else {
            CHECK(clFlush(q0));
            CHECK(clFinish(q0));
        }
        CHECK(clFinish(q1));

        /* The application's own profiling still works on the queue that asked for it. */
        cl_ulong start = 0, end = 0;
        CHECK(clGetEventProfilingInfo(kernel_event, CL_PROFILING_COMMAND_START, sizeof start,
                                      &start, NULL));
        CHECK(clGetEventProfilingInfo(kernel_event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                      NULL));
        if (end < start) {
            fprintf(stderr, "cl_app: kernel ended (%llu) before it started (%llu)\n",
                    (unsigned long long)end, (unsigned long long)start);
            return 1;
        }
        CHECK(clReleaseEvent(kernel_event));
        CHECK(clReleaseEvent(read_event));

        for (int i = 0; i < N; i++) {
            float want = (float)(i + it) * SCALE;
            if (out[i] != want) {
                fprintf(stderr, "cl_app: iteration %ld read %g at %d, expected %g\n", it, out[i], i,
                        want);
                return 1;
            }
        }
    }

    /* A task, and a map/unmap round trip, once. */
    CHECK(clEnqueueTask(q1, a.add_one, 0, NULL, NULL));
    float *mapped =
        clEnqueueMapBuffer(q0, dst, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
    CHECK_ERR("clEnqueueMapBuffer", err);
    float first = mapped[1];
    CHECK(clEnqueueUnmapMemObject(q0, dst, mapped, 0, NULL, NULL));
    CHECK(clFinish(q0));
    CHECK(clFinish(q1));
    if (first != (float)(1 + iterations - 1) * SCALE) {
        fprintf(stderr, "cl_app: mapped %g, expected %g\n", first,
                (float)(1 + iterations - 1) * SCALE);
        return 1;
    }

    CHECK(clReleaseMemObject(other));
    CHECK(clReleaseMemObject(dst));
    CHECK(clReleaseMemObject(src));
    CHECK(clReleaseCommandQueue(q1));
    CHECK(clReleaseCommandQueue(q0));
    app_close(&a);
    if (forking && (wait_child(kernel_child) != 0 || wait_child(idle_child) != 0)) return 1;
    return 0;
}
