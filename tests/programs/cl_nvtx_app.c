/*
 * cl_nvtx_app.c — a program with NVTX ranges and marks for the `kprof trace` tests: built with
 * OpenCL as cl_nvtx_app (CL_NVTX_APP_OPENCL) and without as nvtx_app, which touches no GPU at
 * all. It uses the header-only NVTX v3 of the CUDA toolkit and knows nothing about kprof.
 *
 * What it does, in this order (names as a trace shows them):
 *   push "app"; push "setup" (both before the first OpenCL call); [OpenCL: context, queue,
 *   program]; pop "setup"; mark "checkpoint";
 *   3 times: push "iteration", push "kernel", [OpenCL: a kernel and clFinish], pop, pop;
 *   start "async"; a second thread pushes and pops "worker", then ends "async";
 *   push W "größe ✓ 测试 😀", pop; mark W "mark é";
 *   push Ex with a wide message "ex wide ü", pop;
 *   domain "kp-domain": a string "registered" registered in it; push Ex (registered) in the
 *   domain — level 0 of its own stack while "app" is open — and mark Ex "domain mark" there,
 *   then push "inner" in the default domain, pop the domain's range (from under "inner"), pop
 *   "inner";
 *   wide domain "wide-domain å": start Ex with a registered wide string "wide registered ß",
 *   end it; destroy both domains; pop "app".
 * Every push and pop checks the level NVTX returns where a tool is attached (without one, NVTX
 * returns NVTX_NO_PUSH_POP_TRACKING), and prints "cl_nvtx_app: level: …" on stderr where it
 * differs; that is for the test to judge (kprof's NVTX collector must return NVTX's levels).
 *
 *   cl_nvtx_app [full|fork|open]
 *     full  the above (the default)
 *     fork  after pushing "app", fork a child that pushes "child" (level 0: it starts fresh),
 *           pops it, marks "child mark" and exits 0; then the above
 *     open  the above, but "app" is never popped and "never ended" is started and never ended
 *
 * Prints "main_tid=N worker_tid=M" on stdout; errors go to stderr with exit 1; no OpenCL
 * device: 77.
 */
#define _GNU_SOURCE
#include <nvToolsExt.h>

#if CL_NVTX_APP_OPENCL
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

/* A push or pop returned `got`; `want` is right, and so is "no tool attached". */
static void level(int got, int want, const char *what)
{
    if (got == NVTX_NO_PUSH_POP_TRACKING || got == want) return;
    fprintf(stderr, "cl_nvtx_app: level: %s returned %d, expected %d\n", what, got, want);
}

static long thread_id(void)
{
    return (long)syscall(SYS_gettid);
}

static nvtxEventAttributes_t attributes(int type)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = type;
    return a;
}

#if CL_NVTX_APP_OPENCL
static const char kernel_source[] = "__kernel void add_one(__global float *x)\n"
                                    "{\n"
                                    "    x[get_global_id(0)] += 1.0f;\n"
                                    "}\n";

typedef struct cl {
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem buffer;
} cl;

/* 0, 77 without a device, 1 on failure. */
static int cl_open(cl *c)
{
    cl_platform_id platforms[8];
    cl_uint nplatforms = 0;
    cl_device_id device = NULL;
    if (clGetPlatformIDs(8, platforms, &nplatforms) != CL_SUCCESS) nplatforms = 0;
    for (cl_uint i = 0; i < nplatforms && i < 8 && !device; i++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS || !n)
            device = NULL;
    }
    if (!device) {
        fprintf(stderr, "cl_nvtx_app: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    c->context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS) goto fail;
    c->queue = clCreateCommandQueue(c->context, device, 0, &err);
    if (err != CL_SUCCESS) goto fail;
    const char *src = kernel_source;
    c->program = clCreateProgramWithSource(c->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) goto fail;
    err = clBuildProgram(c->program, 1, &device, "", NULL, NULL);
    if (err != CL_SUCCESS) goto fail;
    c->kernel = clCreateKernel(c->program, "add_one", &err);
    if (err != CL_SUCCESS) goto fail;
    c->buffer = clCreateBuffer(c->context, CL_MEM_READ_WRITE, 1024 * sizeof(float), NULL, &err);
    if (err != CL_SUCCESS) goto fail;
    err = clSetKernelArg(c->kernel, 0, sizeof c->buffer, &c->buffer);
    if (err != CL_SUCCESS) goto fail;
    return 0;
fail:
    fprintf(stderr, "cl_nvtx_app: OpenCL setup failed: %d\n", (int)err);
    return 1;
}

static int cl_run(cl *c)
{
    size_t global = 1024;
    cl_int err = clEnqueueNDRangeKernel(c->queue, c->kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(c->queue);
    if (err != CL_SUCCESS) fprintf(stderr, "cl_nvtx_app: kernel failed: %d\n", (int)err);
    return err == CL_SUCCESS ? 0 : 1;
}

static void cl_close(cl *c)
{
    clReleaseMemObject(c->buffer);
    clReleaseKernel(c->kernel);
    clReleaseProgram(c->program);
    clReleaseCommandQueue(c->queue);
    clReleaseContext(c->context);
}
#endif

static long worker_tid;

/* Pushes and pops a range of its own, then ends the range main started. */
static void *worker(void *arg)
{
    nvtxRangeId_t async = *(nvtxRangeId_t *)arg;
    worker_tid = thread_id();
    level(nvtxRangePushA("worker"), 0, "push worker");
    level(nvtxRangePop(), 0, "pop worker");
    nvtxRangeEnd(async);
    return NULL;
}

static int fork_child(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("cl_nvtx_app: fork");
        return 1;
    }
    if (pid == 0) {
        level(nvtxRangePushA("child"), 0, "push child"); /* the parent's "app" is not ours */
        level(nvtxRangePop(), 0, "pop child");
        nvtxMarkA("child mark");
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cl_nvtx_app: child failed (status 0x%x)\n", status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "full";
    if (strcmp(mode, "full") != 0 && strcmp(mode, "fork") != 0 && strcmp(mode, "open") != 0) {
        fprintf(stderr, "usage: cl_nvtx_app [full|fork|open]\n");
        return 2;
    }

    level(nvtxRangePushA("app"), 0, "push app");
    if (strcmp(mode, "fork") == 0 && fork_child() != 0) return 1;
    level(nvtxRangePushA("setup"), 1, "push setup");
#if CL_NVTX_APP_OPENCL
    cl c = {0};
    int rc = cl_open(&c);
    if (rc != 0) return rc;
#endif
    level(nvtxRangePop(), 1, "pop setup");
    nvtxMarkA("checkpoint");

    for (int i = 0; i < 3; i++) {
        level(nvtxRangePushA("iteration"), 1, "push iteration");
        level(nvtxRangePushA("kernel"), 2, "push kernel");
#if CL_NVTX_APP_OPENCL
        if (cl_run(&c) != 0) return 1;
#endif
        level(nvtxRangePop(), 2, "pop kernel");
        level(nvtxRangePop(), 1, "pop iteration");
    }

    /* A start/end range ended by another thread. */
    nvtxRangeId_t async = nvtxRangeStartA("async");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &async) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "cl_nvtx_app: thread failed\n");
        return 1;
    }

    /* Wide text: Latin-1, a symbol, CJK and a character outside the BMP. */
    level(nvtxRangePushW(L"gr\u00f6\u00dfe \u2713 \u6d4b\u8bd5 \U0001F600"), 1, "push W");
    level(nvtxRangePop(), 1, "pop W");
    nvtxMarkW(L"mark \u00e9");
    nvtxEventAttributes_t a = attributes(NVTX_MESSAGE_TYPE_UNICODE);
    a.message.unicode = L"ex wide \u00fc";
    level(nvtxRangePushEx(&a), 1, "push Ex");
    level(nvtxRangePop(), 1, "pop Ex");

    /* A domain with a registered string; its stack is its own. */
    nvtxDomainHandle_t domain = nvtxDomainCreateA("kp-domain");
    a = attributes(NVTX_MESSAGE_TYPE_REGISTERED);
    a.message.registered = nvtxDomainRegisterStringA(domain, "registered");
    level(nvtxDomainRangePushEx(domain, &a), 0, "push in kp-domain");
    a = attributes(NVTX_MESSAGE_TYPE_ASCII);
    a.message.ascii = "domain mark";
    nvtxDomainMarkEx(domain, &a);
    level(nvtxRangePushA("inner"), 1, "push inner");
    level(nvtxDomainRangePop(domain), 0, "pop in kp-domain");
    level(nvtxRangePop(), 1, "pop inner");

    nvtxDomainHandle_t wide = nvtxDomainCreateW(L"wide-domain \u00e5");
    a = attributes(NVTX_MESSAGE_TYPE_REGISTERED);
    a.message.registered = nvtxDomainRegisterStringW(wide, L"wide registered \u00df");
    nvtxRangeId_t id = nvtxDomainRangeStartEx(wide, &a);
    nvtxDomainRangeEnd(wide, id);
    nvtxDomainDestroy(domain);
    nvtxDomainDestroy(wide);

#if CL_NVTX_APP_OPENCL
    cl_close(&c);
#endif
    if (strcmp(mode, "open") == 0) {
        nvtxRangeStartA("never ended");
    } else {
        level(nvtxRangePop(), 0, "pop app");
    }
    printf("main_tid=%ld worker_tid=%ld\n", thread_id(), worker_tid);
    return 0;
}
