/*
 * cl_capture_app.c — an ordinary OpenCL program for the `kprof trace --capture` tests
 * (tests/cli/test_capture_opencl.py): several kernels in one program, one reading a buffer that
 * another wrote, and every buffer's bytes written to files just before and just after each launch,
 * so a test can compare a capture folder with what the program itself saw. It knows nothing about
 * kprof.
 *
 *   cl_capture_app basic OUTDIR
 *     fill(a, 7)                      a[i] = (i * 7) % 97, the runtime choosing the work-groups
 *     scale(a, b, 1.5f) x3: 1.5 2.5 3.5   b[i] = a[i] * s + b[i] (b's old bytes matter); the third
 *                                       launch through a clone (clCloneKernel) given only s
 *     group_sum(b, c, __local[LOCAL])  c[g] = the sum of b over work-group g (LOCAL items)
 *     twice(d, d)                     the same buffer for both arguments: d[i] = d[i] * 2 + 1
 *     maybe_add(d, NULL)              a NULL buffer argument: d[i] += 1
 *     twice(sub, d)                   a sub-buffer of a (its first quarter) as p: d[i] = a[i] * 2 +
 * 1 built with -cl-kernel-arg-info, so the runtime can name the arguments cl_capture_app binary
 * OUTDIR the program built again from its own binary (clCreateProgramWithBinary, which it writes to
 *     OUTDIR/program.bin), then scale(a, b, 1.5f) and scale(a, b, 2.5f) from it
 *   cl_capture_app svm OUTDIR
 *     twice(svm, d): p an SVM allocation (clSetKernelArgSVMPointer), d[i] = svm[i] * 2 + 1; exits
 *     77 where the device has no SVM
 *   cl_capture_app slowest OUTDIR WINDOW_S
 *     spin launched on 64 and on 1<<18 work-items (the second far slower), then, once WINDOW_S
 *     and half a second more have passed since the first launch, on 64 and 1<<18 again
 *   cl_capture_app user OUTDIR
 *     user events the program sets only after its enqueue returned: fill(a, 7) waiting on one
 *     (fill@1); then fill(a, 7) waiting on another (fill@2) and, behind it on the in-order queue
 *     with no wait list, scale(a, b, 1.5f) (scale@1), the event set after both were enqueued
 *
 * Before launch K of kernel NAME it writes OUTDIR/NAME@K.BUF.before for every buffer BUF (a b c d,
 * or x), and after it (clFinish) OUTDIR/NAME@K.BUF.after; OUTDIR/launches lists NAME@K lines in
 * order. Exits 0; errors go to stderr with exit 1; no OpenCL device: 77.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N     4096 /* floats per buffer */
#define LOCAL 64   /* group_sum's work-group size */
#define BIG   (1 << 18)

static const char kernel_source[] =
    "__kernel void fill(__global float *a, uint seed)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = (float)((i * seed) % 97);\n"
    "}\n"
    "__kernel void scale(__global const float *in, __global float *out, float s)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * s + out[i];\n"
    "}\n"
    "__kernel void group_sum(__global const float *in, __global float *out, __local float *tmp)\n"
    "{\n"
    "    size_t l = get_local_id(0), n = get_local_size(0);\n"
    "    tmp[l] = in[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (l == 0) {\n"
    "        float sum = 0.0f;\n"
    "        for (size_t k = 0; k < n; k++) sum += tmp[k];\n"
    "        out[get_group_id(0)] = sum;\n"
    "    }\n"
    "}\n"
    "__kernel void twice(__global float *p, __global float *q)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    q[i] = p[i] * 2.0f + 1.0f;\n"
    "}\n"
    "__kernel void maybe_add(__global float *p, __global const float *opt)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    p[i] += opt ? opt[i] : 1.0f;\n"
    "}\n"
    "__kernel void spin(__global float *x, uint iters)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    float v = x[i];\n"
    "    for (uint k = 0; k < iters; k++) v = v * 0.999f + 1.0f;\n"
    "    x[i] = v;\n"
    "}\n";

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int check_rc_ = (call);                                                                 \
        if (check_rc_ != CL_SUCCESS) {                                                             \
            fprintf(stderr, "cl_capture_app: %s failed: %d (line %d)\n", #call, check_rc_,         \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct buffer {
    const char *name;
    cl_mem mem;
    size_t bytes;
} buffer;

static cl_context context;
static cl_command_queue queue;
static const char *outdir;
static buffer buffers[4];
static int nbuffers;
static FILE *launches;

static cl_kernel kernel(cl_program program, const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(program, name, &err);
    CHECK(err);
    return k;
}

static void add_buffer(const char *name, size_t bytes)
{
    cl_int err;
    static float zeros[BIG];
    buffers[nbuffers] = (buffer){.name = name, .bytes = bytes};
    buffers[nbuffers].mem =
        clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, zeros, &err);
    CHECK(err);
    nbuffers++;
}

/* Every buffer's bytes into OUTDIR/LAUNCH.BUF.SUFFIX. */
static void dump(const char *launch, const char *suffix)
{
    static unsigned char bytes[BIG * sizeof(float)];
    CHECK(clFinish(queue));
    for (int b = 0; b < nbuffers; b++) {
        CHECK(clEnqueueReadBuffer(queue, buffers[b].mem, CL_TRUE, 0, buffers[b].bytes, bytes, 0,
                                  NULL, NULL));
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.%s.%s", outdir, launch, buffers[b].name, suffix);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(bytes, 1, buffers[b].bytes, f) != buffers[b].bytes || fclose(f) != 0) {
            fprintf(stderr, "cl_capture_app: cannot write %s\n", path);
            exit(1);
        }
    }
}

/* Launch k (its K-th launch is `launch`, "NAME@K") with the buffers dumped around it. */
static void launch(cl_kernel k, const char *name, const size_t *global, const size_t *local)
{
    static int counts[8];
    static const char *names[8];
    int slot = 0;
    while (names[slot] && strcmp(names[slot], name) != 0)
        slot++;
    names[slot] = name;
    char id[128];
    snprintf(id, sizeof id, "%s@%d", name, ++counts[slot]);
    dump(id, "before");
    CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, global, local, 0, NULL, NULL));
    dump(id, "after");
    fprintf(launches, "%s\n", id);
    fflush(launches);
}

/* The user-event launches (mode user): each waits on an event set after its enqueue returned. */
static void user_events(cl_kernel fill, cl_kernel scale)
{
    cl_int err;
    size_t global = N;
    cl_uint seed = 7;
    float s = 1.5f;
    CHECK(clSetKernelArg(fill, 0, sizeof(cl_mem), &buffers[0].mem));
    CHECK(clSetKernelArg(fill, 1, sizeof seed, &seed));
    CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &buffers[0].mem));
    CHECK(clSetKernelArg(scale, 1, sizeof(cl_mem), &buffers[1].mem));
    CHECK(clSetKernelArg(scale, 2, sizeof s, &s));
    dump("fill@1", "before");
    cl_event go = clCreateUserEvent(context, &err);
    CHECK(err);
    CHECK(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, NULL, 1, &go, NULL));
    CHECK(clSetUserEventStatus(go, CL_COMPLETE));
    dump("fill@1", "after");
    fprintf(launches, "fill@1\n");
    CHECK(clReleaseEvent(go));
    dump("scale@1", "before");
    go = clCreateUserEvent(context, &err);
    CHECK(err);
    CHECK(clEnqueueNDRangeKernel(queue, fill, 1, NULL, &global, NULL, 1, &go, NULL));
    CHECK(clEnqueueNDRangeKernel(queue, scale, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clSetUserEventStatus(go, CL_COMPLETE));
    dump("scale@1", "after");
    fprintf(launches, "fill@2\nscale@1\n");
    CHECK(clReleaseEvent(go));
    fflush(launches);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3 ||
        (strcmp(argv[1], "basic") != 0 && strcmp(argv[1], "binary") != 0 &&
         strcmp(argv[1], "svm") != 0 && strcmp(argv[1], "slowest") != 0 &&
         strcmp(argv[1], "user") != 0) ||
        (strcmp(argv[1], "slowest") == 0 && argc < 4)) {
        fprintf(stderr,
                "usage: cl_capture_app basic|binary|svm|user OUTDIR | slowest OUTDIR WINDOW_S\n");
        return 2;
    }
    outdir = argv[2];
    char path[4096];
    snprintf(path, sizeof path, "%s/launches", outdir);
    launches = fopen(path, "w");
    if (!launches) {
        fprintf(stderr, "cl_capture_app: cannot write %s\n", path);
        return 1;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS || n == 0) {
        fprintf(stderr, "cl_capture_app: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    queue = clCreateCommandQueue(context, device, 0, &err);
    CHECK(err);
    const char *src = kernel_source;
    cl_program program = clCreateProgramWithSource(context, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(program, 1, &device, "-cl-fast-relaxed-math -cl-kernel-arg-info", NULL,
                         NULL));

    if (strcmp(argv[1], "binary") == 0) {
        size_t size = 0;
        CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
        unsigned char *binary = malloc(size);
        if (!binary) return 1;
        CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL));
        snprintf(path, sizeof path, "%s/program.bin", outdir);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(binary, 1, size, f) != size || fclose(f) != 0) return 1;
        const unsigned char *bin = binary;
        cl_int status;
        cl_program from_binary =
            clCreateProgramWithBinary(context, 1, &device, &size, &bin, &status, &err);
        CHECK(err);
        CHECK(status);
        CHECK(clBuildProgram(from_binary, 1, &device, "-DFROM_BINARY", NULL, NULL));
        free(binary);
        clReleaseProgram(program);
        program = from_binary;
        add_buffer("a", N * sizeof(float));
        add_buffer("b", N * sizeof(float));
        cl_kernel scale = kernel(program, "scale");
        size_t global = N;
        static const float scales[2] = {1.5f, 2.5f};
        for (int s = 0; s < 2; s++) {
            CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &buffers[0].mem));
            CHECK(clSetKernelArg(scale, 1, sizeof(cl_mem), &buffers[1].mem));
            CHECK(clSetKernelArg(scale, 2, sizeof(float), &scales[s]));
            launch(scale, "scale", &global, NULL);
        }
        clReleaseKernel(scale);
    } else if (strcmp(argv[1], "svm") == 0) {
        float *svm = clSVMAlloc(context, CL_MEM_READ_WRITE, N * sizeof(float), 0);
        if (!svm) {
            fprintf(stderr, "cl_capture_app: the device has no SVM\n");
            return 77;
        }
        add_buffer("d", N * sizeof(float));
        cl_kernel twice = kernel(program, "twice");
        size_t global = N;
        CHECK(clSetKernelArgSVMPointer(twice, 0, svm));
        CHECK(clSetKernelArg(twice, 1, sizeof(cl_mem), &buffers[0].mem));
        CHECK(clEnqueueSVMMemFill(queue, svm, &(float){3.0f}, sizeof(float), N * sizeof(float), 0,
                                  NULL, NULL));
        launch(twice, "twice", &global, NULL);
        clReleaseKernel(twice);
        clSVMFree(context, svm);
    } else if (strcmp(argv[1], "user") == 0) {
        add_buffer("a", N * sizeof(float));
        add_buffer("b", N * sizeof(float));
        cl_kernel fill = kernel(program, "fill"), scale = kernel(program, "scale");
        user_events(fill, scale);
        clReleaseKernel(scale);
        clReleaseKernel(fill);
    } else if (strcmp(argv[1], "basic") == 0) {
        add_buffer("a", N * sizeof(float));
        add_buffer("b", N * sizeof(float));
        add_buffer("c", N / LOCAL * sizeof(float));
        add_buffer("d", N * sizeof(float));
        cl_kernel fill = kernel(program, "fill"), scale = kernel(program, "scale"), scale2 = NULL,
                  group_sum = kernel(program, "group_sum"), twice = kernel(program, "twice");
        size_t global = N, local = LOCAL, quarter = N / 4;
        cl_uint seed = 7;
        CHECK(clSetKernelArg(fill, 0, sizeof(cl_mem), &buffers[0].mem));
        CHECK(clSetKernelArg(fill, 1, sizeof seed, &seed));
        launch(fill, "fill", &global, NULL);
        static const float scales[3] = {1.5f, 2.5f, 3.5f};
        for (int s = 0; s < 3; s++) {
            cl_kernel k = scale;
            if (s == 2) { /* a clone keeps the buffers set on scale: only the scalar is new */
                scale2 = clCloneKernel(scale, &err);
                CHECK(err);
                k = scale2;
            } else {
                CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &buffers[0].mem));
                CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &buffers[1].mem));
            }
            CHECK(clSetKernelArg(k, 2, sizeof(float), &scales[s]));
            launch(k, "scale", &global, &quarter);
        }
        CHECK(clSetKernelArg(group_sum, 0, sizeof(cl_mem), &buffers[1].mem));
        CHECK(clSetKernelArg(group_sum, 1, sizeof(cl_mem), &buffers[2].mem));
        CHECK(clSetKernelArg(group_sum, 2, LOCAL * sizeof(float), NULL));
        launch(group_sum, "group_sum", &global, &local);
        CHECK(clSetKernelArg(twice, 0, sizeof(cl_mem), &buffers[3].mem));
        CHECK(clSetKernelArg(twice, 1, sizeof(cl_mem), &buffers[3].mem));
        launch(twice, "twice", &global, NULL);
        cl_kernel maybe_add = kernel(program, "maybe_add");
        CHECK(clSetKernelArg(maybe_add, 0, sizeof(cl_mem), &buffers[3].mem));
        CHECK(clSetKernelArg(maybe_add, 1, sizeof(cl_mem), NULL));
        launch(maybe_add, "maybe_add", &global, NULL);
        cl_buffer_region region = {0, N / 4 * sizeof(float)};
        cl_mem sub = clCreateSubBuffer(buffers[0].mem, CL_MEM_READ_WRITE,
                                       CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        CHECK(err);
        CHECK(clSetKernelArg(twice, 0, sizeof(cl_mem), &sub));
        CHECK(clSetKernelArg(twice, 1, sizeof(cl_mem), &buffers[3].mem));
        launch(twice, "twice", &quarter, NULL);
        clReleaseMemObject(sub);
        clReleaseKernel(maybe_add);
        clReleaseKernel(twice);
        clReleaseKernel(group_sum);
        clReleaseKernel(scale2);
        clReleaseKernel(scale);
        clReleaseKernel(fill);
    } else {
        double window = atof(argv[3]);
        add_buffer("x", BIG * sizeof(float));
        cl_kernel spin = kernel(program, "spin");
        cl_uint iters = 400;
        CHECK(clSetKernelArg(spin, 0, sizeof(cl_mem), &buffers[0].mem));
        CHECK(clSetKernelArg(spin, 1, sizeof iters, &iters));
        size_t small = 64, big = BIG;
        double t0 = now_s();
        launch(spin, "spin", &small, NULL);
        launch(spin, "spin", &big, NULL);
        while (now_s() < t0 + window + 0.5) {
            struct timespec nap = {0, 50 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        launch(spin, "spin", &small, NULL);
        launch(spin, "spin", &big, NULL);
        clReleaseKernel(spin);
    }
    for (int b = 0; b < nbuffers; b++)
        clReleaseMemObject(buffers[b].mem);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    fclose(launches);
    return 0;
}
