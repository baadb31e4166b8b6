/*
 * opencl_layer.c — the OpenCL collector of `kprof trace`: an ICD-loader layer that the loader
 * puts between an unmodified program and its OpenCL runtime when OPENCL_LAYERS names
 * libkprof-inject.so.
 *
 * The loader calls clGetLayerInfo and clInitLayer once, from inside the program's first OpenCL
 * call, handing over the dispatch table of what comes next (the next layer or the loader itself).
 * clInitLayer starts the record writer and returns a copy of that table in which the calls below
 * point at wrappers; when the writer cannot start (KPROF_TRACE_DIR unset) the copy is returned
 * untouched and the layer costs nothing. Every wrapper records its call as a KP_REC_API record
 * (name, start/end on CLOCK_MONOTONIC, thread, status = the cl_int result or errcode_ret). A
 * call that made the host wait for the device through its blocking flag (a read, write or map
 * with CL_TRUE) also gets a KP_REC_SYNC record of the same thread, times and correlation: the
 * host waited in it, so readers count it with clFinish and clWaitForEvents (which their names
 * say) as host synchronization, not as the transfer's cost.
 *
 * Profiling is forced on: CL_QUEUE_PROFILING_ENABLE is ORed into the properties of both
 * queue-creation calls (if a device refuses the property, the queue is made as the program asked
 * and its operations are counted as dropped). Each enqueue of a kernel, read, write, copy or fill
 * gets a correlation id shared with its API record and, where the program passed no event, an
 * event of the layer's own; opencl_ops.c reads the event's times once it completes and writes the
 * device record. The program's own events keep working, profiling times included.
 *
 * Calls into the runtime go straight to the next table, never back through the loader, so the
 * wrappers never see the layer's own calls.
 *
 * `kprof trace --capture` (KPROF_CAPTURE): the memory-object, kernel, argument and launch
 * wrappers also tell opencl_capture.c what the program made and set, and the launch it picks is
 * written out as a capture folder around the program's own enqueue. Without KPROF_CAPTURE that is
 * one relaxed load per wrapper (kp_clc_active).
 *
 * Loaders without layer support (the Khronos loader that CUDA ships, older ocl-icd) never call
 * clInitLayer; for them `kprof trace` also LD_PRELOADs this library, whose exported clXxx symbols
 * are the same wrappers. On their first call the loader is initialised (clGetPlatformIDs): if
 * that ran clInitLayer, the wrappers go to the layer's next table (recording once, skipping the
 * loader's second trip through the layer); otherwise kp_cl_next is filled with the loader's
 * exported functions and the wrappers record in front of the loader. A program that dlopens the
 * loader and looks functions up itself is seen only through the layer.
 */
#define _GNU_SOURCE /* RTLD_NEXT, dladdr, dl_iterate_phdr */
#include "inject/opencl_ops.h"
#include "inject/opencl_bench.h"
#include "inject/opencl_capture.h"

#include "collect/writer.h"
#include "base/util.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define KP_CL_EXPORT __attribute__((visibility("default")))

/* X(function) — every call the layer wraps; each has a kp_wrap_<function> below. */
#define KP_CL_WRAPPED(X)                                                                           \
    X(clCreateContext)                                                                             \
    X(clReleaseContext)                                                                            \
    X(clCreateCommandQueue)                                                                        \
    X(clCreateCommandQueueWithProperties)                                                          \
    X(clReleaseCommandQueue)                                                                       \
    X(clCreateBuffer)                                                                              \
    X(clCreateBufferWithProperties)                                                                \
    X(clCreateSubBuffer)                                                                           \
    X(clCreateImage)                                                                               \
    X(clCreateImageWithProperties)                                                                 \
    X(clCreateImage2D)                                                                             \
    X(clCreateImage3D)                                                                             \
    X(clCreatePipe)                                                                                \
    X(clReleaseMemObject)                                                                          \
    X(clCreateProgramWithSource)                                                                   \
    X(clBuildProgram)                                                                              \
    X(clReleaseProgram)                                                                            \
    X(clCreateKernel)                                                                              \
    X(clCreateKernelsInProgram)                                                                    \
    X(clCloneKernel)                                                                               \
    X(clSetKernelArg)                                                                              \
    X(clSetKernelArgSVMPointer)                                                                    \
    X(clReleaseKernel)                                                                             \
    X(clEnqueueNDRangeKernel)                                                                      \
    X(clEnqueueTask)                                                                               \
    X(clEnqueueReadBuffer)                                                                         \
    X(clEnqueueWriteBuffer)                                                                        \
    X(clEnqueueCopyBuffer)                                                                         \
    X(clEnqueueReadBufferRect)                                                                     \
    X(clEnqueueWriteBufferRect)                                                                    \
    X(clEnqueueCopyBufferRect)                                                                     \
    X(clEnqueueFillBuffer)                                                                         \
    X(clEnqueueMapBuffer)                                                                          \
    X(clEnqueueReadImage)                                                                          \
    X(clEnqueueWriteImage)                                                                         \
    X(clEnqueueMapImage)                                                                           \
    X(clEnqueueUnmapMemObject)                                                                     \
    X(clFlush)                                                                                     \
    X(clFinish)                                                                                    \
    X(clWaitForEvents)                                                                             \
    X(clCreateUserEvent)                                                                           \
    X(clSetUserEventStatus)                                                                        \
    X(clReleaseEvent)                                                                              \
    X(clGetEventProfilingInfo)

typedef enum kp_cl_function {
#define KP_CL_ENUM_(fn) KP_CL_FN_##fn,
    KP_CL_WRAPPED(KP_CL_ENUM_)
#undef KP_CL_ENUM_
        KP_CL_FN_COUNT
} kp_cl_function;

static const char *const kp_cl_function_names[KP_CL_FN_COUNT] = {
#define KP_CL_NAME_(fn) [KP_CL_FN_##fn] = #fn,
    KP_CL_WRAPPED(KP_CL_NAME_)
#undef KP_CL_NAME_
};

static _Atomic uint64_t kp_cl_function_ids[KP_CL_FN_COUNT]; /* string ids, see kp_cl_string */

static cl_icd_dispatch kp_cl_layer; /* what the loader calls: kp_cl_next with wrappers in it */

static int kp_cl_wrapped; /* clInitLayer put the wrappers in the loader's chain */

/* Set once kp_cl_next is filled, by clInitLayer (layer mode) or kp_cl_preload_init. */
static atomic_int kp_cl_ready;
static pthread_once_t kp_cl_preload_once = PTHREAD_ONCE_INIT;
static void kp_cl_preload_init(void);

/* Reached through an LD_PRELOADed export before any loader handed us a table: find the loader's
 * own entry points first (see "LD_PRELOAD" below). */
static inline void kp_cl_ensure(void)
{
    if (!atomic_load_explicit(&kp_cl_ready, memory_order_acquire))
        pthread_once(&kp_cl_preload_once, kp_cl_preload_init);
}

/* An object-making call that has nothing to call: fail as such calls fail. */
static void *kp_cl_missing(cl_int *errcode_ret)
{
    if (errcode_ret) *errcode_ret = CL_INVALID_OPERATION;
    return NULL;
}

/* Every wrapper starts here: the next layer's table, once it is filled (kp_cl_ensure). The
 * wrapper checks its own entry and returns its failure explicitly when it is missing (an export
 * called where no OpenCL loader could be found, e.g. a program testing a weak reference), so the
 * call fails instead of crashing. */
static inline const cl_icd_dispatch *kp_cl_enter(void)
{
    kp_cl_ensure();
    return &kp_cl_next;
}

/* One KP_REC_API record. */
static void kp_cl_api(kp_cl_function fn, uint64_t start, uint64_t end, cl_int status,
                      uint64_t correlation)
{
    if (!kp_cl_recording()) return;
    kp_rec r = {.kind = KP_REC_API,
                .domain = KP_DOMAIN_OPENCL,
                .name = kp_cl_string(&kp_cl_function_ids[fn], kp_cl_function_names[fn]),
                .tid = kp_writer_tid(),
                .start = start,
                .end = end,
                .correlation = correlation,
                .status = status};
    kp_writer_emit(&r);
    /* Runtimes load compilers and device drivers here, which install crash handlers of their
     * own in front of the writer's (PoCL's LLVM at the first build): put it back in front. */
    if (fn == KP_CL_FN_clCreateContext || fn == KP_CL_FN_clBuildProgram) kp_writer_checkpoint();
}

static int32_t kp_cl_clamp(size_t n)
{
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

/* The KP_REC_SYNC record of a call that blocked (see the top of this file): the same name,
 * thread, interval and correlation as the call's KP_REC_API record, written right after it. */
static void kp_cl_waited(kp_cl_function fn, uint64_t start, uint64_t end, uint64_t correlation)
{
    if (!kp_cl_recording()) return;
    kp_rec r = {.kind = KP_REC_SYNC,
                .domain = KP_DOMAIN_OPENCL,
                .name = kp_cl_string(&kp_cl_function_ids[fn], kp_cl_function_names[fn]),
                .tid = kp_writer_tid(),
                .start = start,
                .end = end,
                .correlation = correlation,
                .stream = UINT32_MAX};
    kp_writer_emit(&r);
}

/* Launch geometry: work-groups per dimension and the work-group size. Without a local size the
 * runtime picks the group size, which no query reveals: block is 0 and grid holds work-items. */
static void kp_cl_geometry(kp_cl_op *op, cl_uint dims, const size_t *global, const size_t *local)
{
    for (cl_uint d = 0; d < 3; d++) {
        size_t g = global && d < dims ? global[d] : 1;
        if (local) {
            size_t l = d < dims ? local[d] : 1;
            op->block[d] = kp_cl_clamp(l);
            op->grid[d] = kp_cl_clamp(l ? (g + l - 1) / l : 0); /* non-uniform groups round up */
        } else {
            op->block[d] = 0;
            op->grid[d] = kp_cl_clamp(g);
        }
    }
}

/* The program synchronised with the device (clFinish, clWaitForEvents, a blocking read, write or
 * map): record every completed operation and write them out now, so that a program that aborts
 * after it keeps what it completed. */
static void kp_cl_sync_point(void)
{
    kp_cl_ops_drain();
    kp_writer_checkpoint();
}

/* Look at older operations: all of them after a call that synchronised, else what is done. */
static void kp_cl_settle(int synchronised)
{
    if (synchronised)
        kp_cl_sync_point();
    else
        kp_cl_ops_poll();
}

/* Before the real enqueue: the tracker's operation (kp_cl_op_begin) and whether a
 * kprof_benchmark run is open, both kept in op for kp_cl_event_arg and kp_cl_enqueued.
 * Returns op->tracked. */
static int kp_cl_begin(kp_cl_op *op, cl_command_queue queue, kp_cl_what what, cl_kernel kernel)
{
    op->tracked = (unsigned char)kp_cl_op_begin(op, queue, what, kernel);
    op->bench = (unsigned char)kp_cl_bench_open();
    return op->tracked;
}

/* The event argument the real enqueue gets: the application's, else one of our own where the
 * tracker or a benchmark run wants the operation's event. */
static cl_event *kp_cl_event_arg(const kp_cl_op *op, cl_event *app_event, cl_event *own)
{
    return (op->tracked || op->bench) && !app_event ? own : app_event;
}

/* Right after the real enqueue: its API record, the hand-over of a tracked operation's event,
 * and a look at older ones. */
static void kp_cl_enqueued(kp_cl_function fn, kp_cl_op *op, cl_int rc, const cl_event *app_event,
                           cl_event own_event, cl_bool blocking)
{
    const int tracked = op->tracked;
    op->host_return = kp_now_ns();
    kp_cl_api(fn, op->host_enqueue, op->host_return, rc, op->correlation);
    if (blocking && rc == CL_SUCCESS)
        kp_cl_waited(fn, op->host_enqueue, op->host_return, op->correlation);
    /* A benchmark's run takes its reference first (the tracker may release its own at once):
     * the event of our own is the run's alone when the tracker does not keep it. */
    if (op->bench && rc == CL_SUCCESS && (app_event ? *app_event : own_event))
        kp_cl_bench_add(app_event ? *app_event : own_event, app_event != NULL || tracked);
    if (tracked && rc == CL_SUCCESS)
        kp_cl_op_commit(op, app_event ? *app_event : own_event, app_event != NULL);
    kp_cl_settle(blocking && rc == CL_SUCCESS);
}

/* A call with nothing to do but an API record: the wrapper of fn(params), calling the next
 * fn(args). _OBJ: fn makes an object of type T and reports through errcode_ret, the last
 * parameter, which args leave out. */
#define KP_CL_TIMED(fn, params, args)                                                              \
    static cl_int CL_API_CALL kp_wrap_##fn params                                                  \
    {                                                                                              \
        if (!kp_cl_enter()->fn) return CL_INVALID_OPERATION;                                       \
        uint64_t t0 = kp_now_ns();                                                                 \
        cl_int rc = kp_cl_next.fn args;                                                            \
        kp_cl_api(KP_CL_FN_##fn, t0, kp_now_ns(), rc, 0);                                          \
        return rc;                                                                                 \
    }

#define KP_CL_TIMED_OBJ(T, fn, params, args)                                                       \
    static T CL_API_CALL kp_wrap_##fn params                                                       \
    {                                                                                              \
        if (!kp_cl_enter()->fn) return kp_cl_missing(errcode_ret);                                 \
        cl_int err = CL_SUCCESS;                                                                   \
        uint64_t t0 = kp_now_ns();                                                                 \
        T made = kp_cl_next.fn(KP_CL_UNPAREN args, &err);                                          \
        kp_cl_api(KP_CL_FN_##fn, t0, kp_now_ns(), err, 0);                                         \
        if (errcode_ret) *errcode_ret = err;                                                       \
        return made;                                                                               \
    }
#define KP_CL_UNPAREN(...) __VA_ARGS__

/* KP_CL_TIMED_OBJ for a memory object: what it is, for a capture (opencl_capture.h). */
#define KP_CL_TIMED_MEM(fn, params, args, size, kind)                                              \
    static cl_mem CL_API_CALL kp_wrap_##fn params                                                  \
    {                                                                                              \
        if (!kp_cl_enter()->fn) return kp_cl_missing(errcode_ret);                                 \
        cl_int err = CL_SUCCESS;                                                                   \
        uint64_t t0 = kp_now_ns();                                                                 \
        cl_mem made = kp_cl_next.fn(KP_CL_UNPAREN args, &err);                                     \
        kp_cl_api(KP_CL_FN_##fn, t0, kp_now_ns(), err, 0);                                         \
        if (made && kp_clc_active()) kp_clc_mem_created(made, size, kind);                         \
        if (errcode_ret) *errcode_ret = err;                                                       \
        return made;                                                                               \
    }

/* ---- contexts, queues, memory, programs, kernels: API records only ---- */

KP_CL_TIMED_OBJ(cl_context, clCreateContext,
                (const cl_context_properties *properties, cl_uint num_devices,
                 const cl_device_id *devices,
                 void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                 void *user_data, cl_int *errcode_ret),
                (properties, num_devices, devices, notify, user_data))

KP_CL_TIMED(clReleaseContext, (cl_context context), (context))

static cl_command_queue CL_API_CALL
kp_wrap_clCreateCommandQueue(cl_context context, cl_device_id device,
                             cl_command_queue_properties properties, cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clCreateCommandQueue) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    int recording = kp_cl_recording();
    int profiled = !!(properties & CL_QUEUE_PROFILING_ENABLE);
    /* Profiling on while recording, and while a libkprof session may start recording later:
     * a queue made without it could not be timed then. */
    int force = (recording || kp_cl_wrapped) && !profiled;
    uint64_t t0 = kp_now_ns();
    cl_command_queue q = kp_cl_next.clCreateCommandQueue(
        context, device, properties | (force ? CL_QUEUE_PROFILING_ENABLE : 0), &err);
    if (q && force) profiled = 1;
    if (!q && force) /* the device refuses profiling here: make what the program asked for */
        q = kp_cl_next.clCreateCommandQueue(context, device, properties, &err);
    uint64_t t1 = kp_now_ns();
    if (q && recording) kp_cl_queue_created(q, device, profiled);
    kp_cl_api(KP_CL_FN_clCreateCommandQueue, t0, t1, err, 0);
    if (errcode_ret) *errcode_ret = err;
    return q;
}

static cl_command_queue CL_API_CALL kp_wrap_clCreateCommandQueueWithProperties(
    cl_context context, cl_device_id device, const cl_queue_properties *properties,
    cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clCreateCommandQueueWithProperties) return kp_cl_missing(errcode_ret);
    /* The program's (name, value) pairs, with CL_QUEUE_PROFILING_ENABLE ORed into
     * CL_QUEUE_PROPERTIES, or that pair added. */
    cl_queue_properties stack[64], *forced = NULL;
    size_t pairs = 0;
    while (properties && properties[2 * pairs] != 0)
        pairs++;
    int recording = kp_cl_recording();
    if (recording || kp_cl_wrapped)
        forced = 2 * pairs + 3 <= 64 ? stack : malloc((2 * pairs + 3) * sizeof *forced);
    if (forced) {
        int found = 0;
        if (pairs) memcpy(forced, properties, 2 * pairs * sizeof *forced);
        for (size_t i = 0; i < pairs; i++) {
            if (forced[2 * i] == CL_QUEUE_PROPERTIES) {
                forced[2 * i + 1] |= CL_QUEUE_PROFILING_ENABLE;
                found = 1;
            }
        }
        size_t n = 2 * pairs;
        if (!found) {
            forced[n++] = CL_QUEUE_PROPERTIES;
            forced[n++] = CL_QUEUE_PROFILING_ENABLE;
        }
        forced[n] = 0;
    }

    cl_int err = CL_SUCCESS;
    int profiled = 1;
    uint64_t t0 = kp_now_ns();
    cl_command_queue q = kp_cl_next.clCreateCommandQueueWithProperties(
        context, device, forced ? forced : properties, &err);
    if (!q && forced) {
        q = kp_cl_next.clCreateCommandQueueWithProperties(context, device, properties, &err);
        profiled = 0;
        for (size_t i = 0; i < pairs; i++)
            if (properties[2 * i] == CL_QUEUE_PROPERTIES &&
                (properties[2 * i + 1] & CL_QUEUE_PROFILING_ENABLE))
                profiled = 1;
    }
    uint64_t t1 = kp_now_ns();
    if (forced && forced != stack) free(forced);
    if (q && recording) kp_cl_queue_created(q, device, profiled);
    kp_cl_api(KP_CL_FN_clCreateCommandQueueWithProperties, t0, t1, err, 0);
    if (errcode_ret) *errcode_ret = err;
    return q;
}

static cl_int CL_API_CALL kp_wrap_clReleaseCommandQueue(cl_command_queue queue)
{
    if (!kp_cl_enter()->clReleaseCommandQueue) return CL_INVALID_OPERATION;
    kp_cl_queue_releasing(queue);
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clReleaseCommandQueue(queue);
    kp_cl_api(KP_CL_FN_clReleaseCommandQueue, t0, kp_now_ns(), rc, 0);
    return rc;
}

KP_CL_TIMED_MEM(clCreateBuffer,
                (cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                 cl_int *errcode_ret),
                (context, flags, size, host_ptr), size, KP_CLC_BUFFER)

KP_CL_TIMED_MEM(clCreateBufferWithProperties,
                (cl_context context, const cl_mem_properties *properties, cl_mem_flags flags,
                 size_t size, void *host_ptr, cl_int *errcode_ret),
                (context, properties, flags, size, host_ptr), size, KP_CLC_BUFFER)

KP_CL_TIMED_MEM(clCreateSubBuffer,
                (cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type, const void *info,
                 cl_int *errcode_ret),
                (buffer, flags, type, info), 0, KP_CLC_SUB_BUFFER)

KP_CL_TIMED_MEM(clCreateImage,
                (cl_context context, cl_mem_flags flags, const cl_image_format *format,
                 const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret),
                (context, flags, format, desc, host_ptr), 0, KP_CLC_IMAGE)

KP_CL_TIMED_MEM(clCreateImageWithProperties,
                (cl_context context, const cl_mem_properties *properties, cl_mem_flags flags,
                 const cl_image_format *format, const cl_image_desc *desc, void *host_ptr,
                 cl_int *errcode_ret),
                (context, properties, flags, format, desc, host_ptr), 0, KP_CLC_IMAGE)

KP_CL_TIMED_MEM(clCreateImage2D,
                (cl_context context, cl_mem_flags flags, const cl_image_format *format,
                 size_t width, size_t height, size_t row_pitch, void *host_ptr,
                 cl_int *errcode_ret),
                (context, flags, format, width, height, row_pitch, host_ptr), 0, KP_CLC_IMAGE)

KP_CL_TIMED_MEM(clCreateImage3D,
                (cl_context context, cl_mem_flags flags, const cl_image_format *format,
                 size_t width, size_t height, size_t depth, size_t row_pitch, size_t slice_pitch,
                 void *host_ptr, cl_int *errcode_ret),
                (context, flags, format, width, height, depth, row_pitch, slice_pitch, host_ptr), 0,
                KP_CLC_IMAGE)

KP_CL_TIMED_MEM(clCreatePipe,
                (cl_context context, cl_mem_flags flags, cl_uint packet_size, cl_uint max_packets,
                 const cl_pipe_properties *properties, cl_int *errcode_ret),
                (context, flags, packet_size, max_packets, properties), 0, KP_CLC_PIPE)

static cl_int CL_API_CALL kp_wrap_clReleaseMemObject(cl_mem memobj)
{
    if (!kp_cl_enter()->clReleaseMemObject) return CL_INVALID_OPERATION;
    if (kp_clc_active()) kp_clc_mem_releasing(memobj);
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clReleaseMemObject(memobj);
    kp_cl_api(KP_CL_FN_clReleaseMemObject, t0, kp_now_ns(), rc, 0);
    return rc;
}

KP_CL_TIMED_OBJ(cl_program, clCreateProgramWithSource,
                (cl_context context, cl_uint count, const char **strings, const size_t *lengths,
                 cl_int *errcode_ret),
                (context, count, strings, lengths))

KP_CL_TIMED(clBuildProgram,
            (cl_program program, cl_uint num_devices, const cl_device_id *devices,
             const char *options, void(CL_CALLBACK *notify)(cl_program, void *), void *user_data),
            (program, num_devices, devices, options, notify, user_data))

KP_CL_TIMED(clReleaseProgram, (cl_program program), (program))

static cl_kernel CL_API_CALL kp_wrap_clCreateKernel(cl_program program, const char *kernel_name,
                                                    cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clCreateKernel) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    uint64_t t0 = kp_now_ns();
    cl_kernel k = kp_cl_next.clCreateKernel(program, kernel_name, &err);
    uint64_t t1 = kp_now_ns();
    if (k) kp_cl_kernel_created(k);
    if (k && kp_clc_active()) kp_clc_kernel_created(k);
    kp_cl_api(KP_CL_FN_clCreateKernel, t0, t1, err, 0);
    if (errcode_ret) *errcode_ret = err;
    return k;
}

static cl_int CL_API_CALL kp_wrap_clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                                           cl_kernel *kernels,
                                                           cl_uint *num_kernels_ret)
{
    if (!kp_cl_enter()->clCreateKernelsInProgram) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clCreateKernelsInProgram(program, num_kernels, kernels, num_kernels_ret);
    uint64_t t1 = kp_now_ns();
    if (rc == CL_SUCCESS && kernels)
        for (cl_uint i = 0; i < num_kernels; i++)
            if (kernels[i]) {
                kp_cl_kernel_created(kernels[i]);
                if (kp_clc_active()) kp_clc_kernel_created(kernels[i]);
            }
    kp_cl_api(KP_CL_FN_clCreateKernelsInProgram, t0, t1, rc, 0);
    return rc;
}

/* A clone has its source's name and the arguments set on it so far. */
static cl_kernel CL_API_CALL kp_wrap_clCloneKernel(cl_kernel source, cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clCloneKernel) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    uint64_t t0 = kp_now_ns();
    cl_kernel k = kp_cl_next.clCloneKernel(source, &err);
    uint64_t t1 = kp_now_ns();
    if (k) kp_cl_kernel_created(k);
    if (k && kp_clc_active()) kp_clc_kernel_cloned(source, k);
    kp_cl_api(KP_CL_FN_clCloneKernel, t0, t1, err, 0);
    if (errcode_ret) *errcode_ret = err;
    return k;
}

static cl_int CL_API_CALL kp_wrap_clSetKernelArg(cl_kernel kernel, cl_uint arg_index,
                                                 size_t arg_size, const void *arg_value)
{
    if (!kp_cl_enter()->clSetKernelArg) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clSetKernelArg(kernel, arg_index, arg_size, arg_value);
    kp_cl_api(KP_CL_FN_clSetKernelArg, t0, kp_now_ns(), rc, 0);
    if (rc == CL_SUCCESS && kp_clc_active()) kp_clc_arg_set(kernel, arg_index, arg_size, arg_value);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clSetKernelArgSVMPointer(cl_kernel kernel, cl_uint arg_index,
                                                           const void *arg_value)
{
    if (!kp_cl_enter()->clSetKernelArgSVMPointer) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clSetKernelArgSVMPointer(kernel, arg_index, arg_value);
    kp_cl_api(KP_CL_FN_clSetKernelArgSVMPointer, t0, kp_now_ns(), rc, 0);
    if (rc == CL_SUCCESS && kp_clc_active()) kp_clc_arg_svm(kernel, arg_index, arg_value);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clReleaseKernel(cl_kernel kernel)
{
    if (!kp_cl_enter()->clReleaseKernel) return CL_INVALID_OPERATION;
    if (kp_clc_active()) kp_clc_kernel_releasing(kernel);
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clReleaseKernel(kernel);
    kp_cl_api(KP_CL_FN_clReleaseKernel, t0, kp_now_ns(), rc, 0);
    return rc;
}

/* ---- enqueues of device operations ---- */

static cl_int CL_API_CALL kp_wrap_clEnqueueNDRangeKernel(
    cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
    const size_t *global_size, const size_t *local_size, cl_uint num_events,
    const cl_event *wait_list, cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueNDRangeKernel) return CL_INVALID_OPERATION;
    kp_clc_launch cap = {0};
    if (kp_clc_active())
        kp_clc_launch_begin(&cap, queue, kernel, work_dim, global_offset, global_size, local_size,
                            num_events, wait_list);
    kp_cl_op op;
    cl_event own = NULL, timed = NULL;
    if (kp_cl_begin(&op, queue, KP_CL_KERNEL, kernel)) {
        kp_cl_geometry(&op, work_dim, global_size, local_size);
        kp_cl_op_work(&op, kernel);
    }
    cl_event *event_arg = kp_cl_event_arg(&op, event, &own);
    if (cap.mode && !event_arg) event_arg = &timed; /* @slowest times it; a capture waits on it */
    op.host_enqueue = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueNDRangeKernel(queue, kernel, work_dim, global_offset, global_size,
                                          local_size, num_events, wait_list, event_arg);
    if (cap.mode)
        kp_clc_launch_enqueued(&cap, rc, rc == CL_SUCCESS && event_arg ? *event_arg : NULL);
    kp_cl_enqueued(KP_CL_FN_clEnqueueNDRangeKernel, &op, rc, event, own, CL_FALSE);
    if (timed) kp_cl_next.clReleaseEvent(timed);
    if (cap.mode) kp_clc_launch_finish(&cap, rc);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueTask(cl_command_queue queue, cl_kernel kernel,
                                                cl_uint num_events, const cl_event *wait_list,
                                                cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueTask) return CL_INVALID_OPERATION;
    const size_t one = 1;
    kp_clc_launch cap = {0};
    if (kp_clc_active())
        kp_clc_launch_begin(&cap, queue, kernel, 1, NULL, &one, &one, num_events, wait_list);
    kp_cl_op op;
    cl_event own = NULL, timed = NULL;
    if (kp_cl_begin(&op, queue, KP_CL_KERNEL, kernel)) {
        kp_cl_geometry(&op, 1, &one, &one);
        kp_cl_op_work(&op, kernel);
    }
    cl_event *event_arg = kp_cl_event_arg(&op, event, &own);
    if (cap.mode && !event_arg) event_arg = &timed;
    op.host_enqueue = kp_now_ns();
    cl_int rc = kp_cl_next.clEnqueueTask(queue, kernel, num_events, wait_list, event_arg);
    if (cap.mode)
        kp_clc_launch_enqueued(&cap, rc, rc == CL_SUCCESS && event_arg ? *event_arg : NULL);
    kp_cl_enqueued(KP_CL_FN_clEnqueueTask, &op, rc, event, own, CL_FALSE);
    if (timed) kp_cl_next.clReleaseEvent(timed);
    if (cap.mode) kp_clc_launch_finish(&cap, rc);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer,
                                                      cl_bool blocking, size_t offset, size_t size,
                                                      void *ptr, cl_uint num_events,
                                                      const cl_event *wait_list, cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueReadBuffer) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_READ, NULL);
    op.bytes = size;
    op.host_enqueue = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueReadBuffer(queue, buffer, blocking, offset, size, ptr, num_events,
                                       wait_list, kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueReadBuffer, &op, rc, event, own, blocking);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer,
                                                       cl_bool blocking, size_t offset, size_t size,
                                                       const void *ptr, cl_uint num_events,
                                                       const cl_event *wait_list, cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueWriteBuffer) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_WRITE, NULL);
    op.bytes = size;
    op.host_enqueue = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, num_events,
                                        wait_list, kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueWriteBuffer, &op, rc, event, own, blocking);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src,
                                                      cl_mem dst, size_t src_offset,
                                                      size_t dst_offset, size_t size,
                                                      cl_uint num_events, const cl_event *wait_list,
                                                      cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueCopyBuffer) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_COPY, NULL);
    op.bytes = size;
    op.host_enqueue = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size, num_events,
                                       wait_list, kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueCopyBuffer, &op, rc, event, own, CL_FALSE);
    return rc;
}

static uint64_t kp_cl_region_bytes(const size_t *region)
{
    return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueReadBufferRect(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking, const size_t *buffer_origin,
    const size_t *host_origin, const size_t *region, size_t buffer_row_pitch,
    size_t buffer_slice_pitch, size_t host_row_pitch, size_t host_slice_pitch, void *ptr,
    cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueReadBufferRect) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_READ, NULL);
    op.bytes = kp_cl_region_bytes(region);
    op.host_enqueue = kp_now_ns();
    cl_int rc = kp_cl_next.clEnqueueReadBufferRect(
        queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
        buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, num_events, wait_list,
        kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueReadBufferRect, &op, rc, event, own, blocking);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueWriteBufferRect(
    cl_command_queue queue, cl_mem buffer, cl_bool blocking, const size_t *buffer_origin,
    const size_t *host_origin, const size_t *region, size_t buffer_row_pitch,
    size_t buffer_slice_pitch, size_t host_row_pitch, size_t host_slice_pitch, const void *ptr,
    cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueWriteBufferRect) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_WRITE, NULL);
    op.bytes = kp_cl_region_bytes(region);
    op.host_enqueue = kp_now_ns();
    cl_int rc = kp_cl_next.clEnqueueWriteBufferRect(
        queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
        buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, num_events, wait_list,
        kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueWriteBufferRect, &op, rc, event, own, blocking);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueCopyBufferRect(
    cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
    const size_t *dst_origin, const size_t *region, size_t src_row_pitch, size_t src_slice_pitch,
    size_t dst_row_pitch, size_t dst_slice_pitch, cl_uint num_events, const cl_event *wait_list,
    cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueCopyBufferRect) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_COPY, NULL);
    op.bytes = kp_cl_region_bytes(region);
    op.host_enqueue = kp_now_ns();
    cl_int rc = kp_cl_next.clEnqueueCopyBufferRect(
        queue, src, dst, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch,
        dst_row_pitch, dst_slice_pitch, num_events, wait_list, kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueCopyBufferRect, &op, rc, event, own, CL_FALSE);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer,
                                                      const void *pattern, size_t pattern_size,
                                                      size_t offset, size_t size,
                                                      cl_uint num_events, const cl_event *wait_list,
                                                      cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueFillBuffer) return CL_INVALID_OPERATION;
    kp_cl_op op;
    cl_event own = NULL;
    kp_cl_begin(&op, queue, KP_CL_FILL, NULL);
    op.bytes = size;
    op.host_enqueue = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueFillBuffer(queue, buffer, pattern, pattern_size, offset, size,
                                       num_events, wait_list, kp_cl_event_arg(&op, event, &own));
    kp_cl_enqueued(KP_CL_FN_clEnqueueFillBuffer, &op, rc, event, own, CL_FALSE);
    return rc;
}

/* Map and unmap: API records (their device side is a runtime detail: often no copy at all). */
static void *CL_API_CALL kp_wrap_clEnqueueMapBuffer(cl_command_queue queue, cl_mem buffer,
                                                    cl_bool blocking, cl_map_flags flags,
                                                    size_t offset, size_t size, cl_uint num_events,
                                                    const cl_event *wait_list, cl_event *event,
                                                    cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clEnqueueMapBuffer) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    uint64_t t0 = kp_now_ns();
    void *p = kp_cl_next.clEnqueueMapBuffer(queue, buffer, blocking, flags, offset, size,
                                            num_events, wait_list, event, &err);
    uint64_t t1 = kp_now_ns();
    kp_cl_api(KP_CL_FN_clEnqueueMapBuffer, t0, t1, err, 0);
    if (blocking && p) kp_cl_waited(KP_CL_FN_clEnqueueMapBuffer, t0, t1, 0);
    if (errcode_ret) *errcode_ret = err;
    kp_cl_settle(blocking && p);
    return p;
}

/* Images: API records (no device record: kprof times buffer transfers), and the wait of a
 * blocking one. */
static cl_int CL_API_CALL kp_wrap_clEnqueueReadImage(cl_command_queue queue, cl_mem image,
                                                     cl_bool blocking, const size_t *origin,
                                                     const size_t *region, size_t row_pitch,
                                                     size_t slice_pitch, void *ptr,
                                                     cl_uint num_events, const cl_event *wait_list,
                                                     cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueReadImage) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clEnqueueReadImage(queue, image, blocking, origin, region, row_pitch,
                                              slice_pitch, ptr, num_events, wait_list, event);
    uint64_t t1 = kp_now_ns();
    kp_cl_api(KP_CL_FN_clEnqueueReadImage, t0, t1, rc, 0);
    if (blocking && rc == CL_SUCCESS) kp_cl_waited(KP_CL_FN_clEnqueueReadImage, t0, t1, 0);
    kp_cl_settle(blocking && rc == CL_SUCCESS);
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueWriteImage(cl_command_queue queue, cl_mem image,
                                                      cl_bool blocking, const size_t *origin,
                                                      const size_t *region, size_t input_row_pitch,
                                                      size_t input_slice_pitch, const void *ptr,
                                                      cl_uint num_events, const cl_event *wait_list,
                                                      cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueWriteImage) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueWriteImage(queue, image, blocking, origin, region, input_row_pitch,
                                       input_slice_pitch, ptr, num_events, wait_list, event);
    uint64_t t1 = kp_now_ns();
    kp_cl_api(KP_CL_FN_clEnqueueWriteImage, t0, t1, rc, 0);
    if (blocking && rc == CL_SUCCESS) kp_cl_waited(KP_CL_FN_clEnqueueWriteImage, t0, t1, 0);
    kp_cl_settle(blocking && rc == CL_SUCCESS);
    return rc;
}

static void *CL_API_CALL kp_wrap_clEnqueueMapImage(cl_command_queue queue, cl_mem image,
                                                   cl_bool blocking, cl_map_flags flags,
                                                   const size_t *origin, const size_t *region,
                                                   size_t *row_pitch, size_t *slice_pitch,
                                                   cl_uint num_events, const cl_event *wait_list,
                                                   cl_event *event, cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clEnqueueMapImage) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    uint64_t t0 = kp_now_ns();
    void *p = kp_cl_next.clEnqueueMapImage(queue, image, blocking, flags, origin, region, row_pitch,
                                           slice_pitch, num_events, wait_list, event, &err);
    uint64_t t1 = kp_now_ns();
    kp_cl_api(KP_CL_FN_clEnqueueMapImage, t0, t1, err, 0);
    if (blocking && p) kp_cl_waited(KP_CL_FN_clEnqueueMapImage, t0, t1, 0);
    if (errcode_ret) *errcode_ret = err;
    kp_cl_settle(blocking && p);
    return p;
}

static cl_int CL_API_CALL kp_wrap_clEnqueueUnmapMemObject(cl_command_queue queue, cl_mem memobj,
                                                          void *mapped, cl_uint num_events,
                                                          const cl_event *wait_list,
                                                          cl_event *event)
{
    if (!kp_cl_enter()->clEnqueueUnmapMemObject) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc =
        kp_cl_next.clEnqueueUnmapMemObject(queue, memobj, mapped, num_events, wait_list, event);
    kp_cl_api(KP_CL_FN_clEnqueueUnmapMemObject, t0, kp_now_ns(), rc, 0);
    kp_cl_ops_poll();
    return rc;
}

/* ---- synchronisation and events ---- */

KP_CL_TIMED(clFlush, (cl_command_queue queue), (queue))

static cl_int CL_API_CALL kp_wrap_clFinish(cl_command_queue queue)
{
    if (!kp_cl_enter()->clFinish) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clFinish(queue);
    kp_cl_api(KP_CL_FN_clFinish, t0, kp_now_ns(), rc, 0);
    kp_cl_sync_point();
    return rc;
}

static cl_int CL_API_CALL kp_wrap_clWaitForEvents(cl_uint num_events, const cl_event *events)
{
    if (!kp_cl_enter()->clWaitForEvents) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clWaitForEvents(num_events, events);
    kp_cl_api(KP_CL_FN_clWaitForEvents, t0, kp_now_ns(), rc, 0);
    kp_cl_sync_point();
    return rc;
}

/* User events: the capture counts those not yet set (its wait for a launch's inputs is bounded
 * while one is: opencl_capture.h). */
static cl_event CL_API_CALL kp_wrap_clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
    if (!kp_cl_enter()->clCreateUserEvent) return kp_cl_missing(errcode_ret);
    cl_int err = CL_SUCCESS;
    uint64_t t0 = kp_now_ns();
    cl_event made = kp_cl_next.clCreateUserEvent(context, &err);
    kp_cl_api(KP_CL_FN_clCreateUserEvent, t0, kp_now_ns(), err, 0);
    if (made && kp_clc_active()) kp_clc_user_event(1);
    if (errcode_ret) *errcode_ret = err;
    return made;
}

static cl_int CL_API_CALL kp_wrap_clSetUserEventStatus(cl_event event, cl_int status)
{
    if (!kp_cl_enter()->clSetUserEventStatus) return CL_INVALID_OPERATION;
    uint64_t t0 = kp_now_ns();
    cl_int rc = kp_cl_next.clSetUserEventStatus(event, status);
    kp_cl_api(KP_CL_FN_clSetUserEventStatus, t0, kp_now_ns(), rc, 0);
    if (rc == CL_SUCCESS && kp_clc_active()) kp_clc_user_event(0);
    return rc;
}

KP_CL_TIMED(clReleaseEvent, (cl_event event), (event))

KP_CL_TIMED(clGetEventProfilingInfo,
            (cl_event event, cl_profiling_info param_name, size_t param_value_size,
             void *param_value, size_t *param_value_size_ret),
            (event, param_name, param_value_size, param_value, param_value_size_ret))

/* The next table has what the wrappers read events with. */
static int kp_cl_usable(void)
{
    return kp_cl_next.clGetEventInfo && kp_cl_next.clGetEventProfilingInfo &&
           kp_cl_next.clRetainEvent && kp_cl_next.clReleaseEvent && kp_cl_next.clGetKernelInfo &&
           kp_cl_next.clGetCommandQueueInfo;
}

/* Start recording once kp_cl_next is filled: 1 when the wrappers record, 0 when they only pass
 * through (no KPROF_TRACE_DIR, or the next table lacks what the wrappers read events with) — an
 * answer, not a failure: the program runs either way. */
static int kp_cl_start(void)
{
    if (!kp_cl_usable() || kp_writer_start("opencl", NULL) != KPROF_OK) return 0;
    kp_cl_ops_init();
    kp_writer_at_exit(kp_cl_ops_exit);
    kp_writer_at_crash(kp_cl_ops_crash);
    kp_clc_init(); /* `kprof trace --capture`: nothing unless asked for */
    return 1;
}

/* ---- libkprof's in-process sessions ----
 *
 * libkprof exports kprof_* alone, so it cannot be an OpenCL layer itself: a session that asks
 * for OpenCL (src/libkprof/opencl.c) puts this library into OPENCL_LAYERS with its folder in
 * KPROF_TRACE_DIR before the program's first OpenCL call, and the layer records into that folder
 * as under `kprof trace`. These two, found with dlsym, end that file at kprof_stop and start the
 * next session's. */

/* End the session's file: completed work written, pending work counted as dropped, the file
 * closed. 1 when the OpenCL layer was recording (it is in the loader's chain), else 0. */
KP_CL_EXPORT int kprof_inject_opencl_stop(void)
{
    if (!kp_writer_active()) return 0;
    /* The writer may be running for NVTX alone (the in-process NVTX collector shares it): the
     * OpenCL collector recorded something only where the loader took the layer in. */
    int recorded = kp_cl_wrapped;
    kp_cl_ops_session_stop();
    kp_writer_stop();
    return recorded;
}

/* Record into folder dir from now on (the layer must be in the loader's chain already). 0, or
 * -1 when it is not, or the file cannot be made. An entry point libkprof finds with dlsym as
 * int (*)(const char *): its 0/-1 is that ABI, kept so (libkprof says what failed). */
KP_CL_EXPORT int kprof_inject_opencl_start(const char *dir)
{
    if (!kp_cl_wrapped) return -1; /* not in the loader's chain as a layer */
    if (kp_writer_start_in(dir, "opencl", 0, NULL) != KPROF_OK) return -1;
    kp_cl_ops_init();
    kp_cl_ops_session_start();
    return 0;
}

/* ---- libkprof's kprof_benchmark (opencl_bench.h) ----
 *
 * A benchmark's run: begin, the program's callback enqueues, end (wait, times). These answer
 * only where the loader took the layer in (kp_cl_wrapped): elsewhere the layer sees no enqueue. */

KP_CL_EXPORT int kprof_inject_opencl_bench_begin(void)
{
    if (!kp_cl_wrapped) return -1;
    kp_cl_bench_begin();
    return 0;
}

KP_CL_EXPORT int kprof_inject_opencl_bench_end(kp_cl_bench_times *out)
{
    return kp_cl_bench_end(out);
}

KP_CL_EXPORT int kprof_inject_opencl_bench_flush(uint64_t *ns, uint64_t *bytes)
{
    return kp_cl_wrapped ? kp_cl_bench_flush(ns, bytes) : CL_INVALID_OPERATION;
}

KP_CL_EXPORT void kprof_inject_opencl_bench_close(void)
{
    kp_cl_bench_close();
}

/* ---- LD_PRELOAD: for loaders without layers ---- */

/* Where the loader's exported functions are: the next definitions after this library (the
 * loader linked by the program), else a loader already loaded out of the global scope (by a
 * plugin opened RTLD_LOCAL), under its usual names or, failing those, any other loaded object
 * that exports clGetPlatformIDs (vendored loaders in Python wheels carry hashed names). */
static void *kp_cl_loader;

static int kp_cl_find_loader(struct dl_phdr_info *info, size_t size, void *self_base)
{
    (void)size;
    if (!info->dlpi_name || !*info->dlpi_name || (void *)info->dlpi_addr == self_base) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h && dlsym(h, "clGetPlatformIDs")) {
        kp_cl_loader = h;
        return 1;
    }
    if (h) dlclose(h);
    return 0;
}

static void kp_cl_loader_open(void)
{
    if (dlsym(RTLD_NEXT, "clGetPlatformIDs")) {
        kp_cl_loader = RTLD_NEXT;
        return;
    }
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h && dlsym(h, "clGetPlatformIDs")) {
            kp_cl_loader = h;
            return;
        }
        if (h) dlclose(h);
    }
    Dl_info self;
    if (dladdr((void *)&kp_cl_loader, &self)) dl_iterate_phdr(kp_cl_find_loader, self.dli_fbase);
}

static void *kp_cl_loader_symbol(const char *name)
{
    return kp_cl_loader ? dlsym(kp_cl_loader, name) : NULL;
}

#define KP_CL_READS(X)                                                                             \
    X(clGetEventInfo)                                                                              \
    X(clRetainEvent)                                                                               \
    X(clGetKernelInfo)                                                                             \
    X(clGetKernelWorkGroupInfo)                                                                    \
    X(clGetCommandQueueInfo)                                                                       \
    X(clGetKernelArgInfo)                                                                          \
    X(clGetMemObjectInfo)                                                                          \
    X(clGetProgramInfo)                                                                            \
    X(clGetProgramBuildInfo)                                                                       \
    X(clGetDeviceInfo)                                                                             \
    X(clSetEventCallback)                                                                          \
    X(clEnqueueMarkerWithWaitList)                                                                 \
    X(clRetainMemObject)

static void kp_cl_preload_init(void)
{
    /* Make the loader initialise now: if it supports layers, clInitLayer runs in here. */
    kp_cl_loader_open();
    void *sym = kp_cl_loader_symbol("clGetPlatformIDs");
    cl_int (*get_platforms)(cl_uint, cl_platform_id *, cl_uint *) = NULL;
    memcpy(&get_platforms, &sym, sizeof sym);
    cl_uint n = 0;
    if (get_platforms) get_platforms(0, NULL, &n);
    if (atomic_load_explicit(&kp_cl_ready, memory_order_acquire)) return;
#define KP_CL_RESOLVE_(fn)                                                                         \
    sym = kp_cl_loader_symbol(#fn);                                                                \
    memcpy(&kp_cl_next.fn, &sym, sizeof sym);
    KP_CL_WRAPPED(KP_CL_RESOLVE_)
    KP_CL_READS(KP_CL_RESOLVE_)
#undef KP_CL_RESOLVE_
    kp_cl_start();
    atomic_store_explicit(&kp_cl_ready, 1, memory_order_release);
}

/* The exports an LD_PRELOAD puts in front of the loader's: the wrappers themselves. */
#define KP_CL_PRELOAD_(fn)                                                                         \
    extern __typeof__(kp_wrap_##fn) fn                                                             \
        __attribute__((alias("kp_wrap_" #fn), visibility("default")));
KP_CL_WRAPPED(KP_CL_PRELOAD_)
#undef KP_CL_PRELOAD_

/* ---- the layer's entry points ---- */

KP_CL_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                                            size_t param_value_size,
                                                            void *param_value,
                                                            size_t *param_value_size_ret)
{
    static const cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    static const char name[] = "kprof trace: OpenCL collector (libkprof-inject)";
    const void *value;
    size_t size;
    switch (param_name) {
    case CL_LAYER_API_VERSION:
        value = &version;
        size = sizeof version;
        break;
    case CL_LAYER_NAME:
        value = name;
        size = sizeof name;
        break;
    default:
        return CL_INVALID_VALUE;
    }
    if (param_value) {
        if (param_value_size < size) return CL_INVALID_VALUE;
        memcpy(param_value, value, size);
    }
    if (param_value_size_ret) *param_value_size_ret = size;
    return CL_SUCCESS;
}

KP_CL_EXPORT CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                         const cl_icd_dispatch *target_dispatch,
                                                         cl_uint *num_entries_ret,
                                                         const cl_icd_dispatch **layer_dispatch_ret)
{
    static int initialised;
    const size_t ours = sizeof(cl_icd_dispatch) / sizeof(void *);
    if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret) return CL_INVALID_VALUE;
    if (!initialised) {
        initialised = 1;
        /* The tables are arrays of function pointers in one order; the loader may know fewer
         * or more entries than these headers. Entries past what it offered stay NULL. */
        size_t available = num_entries < ours ? num_entries : ours;
        memcpy(&kp_cl_next, target_dispatch, available * sizeof(void *));
        kp_cl_layer = kp_cl_next;
        /* No OpenCL calls here: the loader is still initialising, inside the program's first
         * OpenCL call. */
        /* The wrappers go in whenever they can work, recording or not (they record only while
         * the writer runs): a libkprof session may start recording later
         * (kprof_inject_opencl_start). */
        kp_cl_start();
        if (kp_cl_usable()) {
#define KP_CL_INSTALL_(fn)                                                                         \
    if (offsetof(cl_icd_dispatch, fn) / sizeof(void *) < available && kp_cl_next.fn)               \
        kp_cl_layer.fn = kp_wrap_##fn;
            KP_CL_WRAPPED(KP_CL_INSTALL_)
#undef KP_CL_INSTALL_
            kp_cl_wrapped = 1;
        }
        atomic_store_explicit(&kp_cl_ready, 1, memory_order_release);
    }
    *num_entries_ret = (cl_uint)ours;
    *layer_dispatch_ret = &kp_cl_layer;
    return CL_SUCCESS;
}
