/*
 * opencl_ops.h — what the OpenCL layer (opencl_layer.c) shares with the device-operation tracker
 * (opencl_ops.c): the next layer's dispatch table, and the calls that turn an enqueue into a
 * pending operation and, once its event is complete, into a KP_REC_KERNEL / MEMCPY / MEMSET
 * record on the host clock.
 *
 * Threads: every function here may be called from any application thread at any time.
 */
#ifndef KP_INJECT_OPENCL_OPS_H
#define KP_INJECT_OPENCL_OPS_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl_layer.h>

#include <stdint.h>

/* The dispatch table the layer calls through (the next layer, or the loader's): every entry the
 * loader offered, NULL past them. Written once by the layer (clInitLayer, or the preload path)
 * before any wrapper can run; defined in opencl_ops.c, so the tracker depends on nothing of the
 * layer's. */
extern cl_icd_dispatch kp_cl_next;

/* A device operation between its enqueue and the moment its times are read. */
typedef struct kp_cl_op {
    cl_event event;        /* one reference held by the tracker */
    uint64_t correlation;  /* shared with the enqueue's KP_REC_API record */
    uint64_t host_enqueue; /* CLOCK_MONOTONIC ns when the enqueue call began ... */
    uint64_t host_return;  /* ... and when it returned */
    uint64_t bytes;        /* copies and fills */
    uint32_t name;         /* string id: kernel function name, "[OpenCL read]", ... */
    uint32_t queue;        /* slot in the queue table (the record's stream is slot + 1) */
    uint16_t kind;         /* KP_REC_KERNEL, KP_REC_MEMCPY or KP_REC_MEMSET */
    uint16_t copy;         /* KP_COPY_* for MEMCPY */
    int32_t grid[3];       /* kernels: work-groups per dimension (work-items when block is 0) */
    int32_t block[3];      /* kernels: work-group size; 0 when the runtime chooses it */
    unsigned work;         /* kernels: KP_CL_WORK_* of the program's kernel hook (libkprof) */
    double flops, work_bytes;
    unsigned char tracked; /* the layer's: kp_cl_op_begin's answer ... */
    unsigned char bench;   /* ... and a kprof_benchmark run open (opencl_bench.h) */
} kp_cl_op;

enum { KP_CL_WORK_FLOPS = 1, KP_CL_WORK_BYTES = 2 };

/* A kernel launch's work, as the program's libkprof kernel hook gives it (kprof_kernel_hook:
 * found in the process by name, so under `kprof trace` and in a libkprof session alike), into
 * op->work, flops and work_bytes. Nothing when the program has no hook: one load. Call after
 * the op's geometry is set. */
void kp_cl_op_work(kp_cl_op *op, cl_kernel kernel);

/* What an enqueue does, for kp_cl_op_begin. */
typedef enum kp_cl_what {
    KP_CL_KERNEL, /* clEnqueueNDRangeKernel, clEnqueueTask */
    KP_CL_READ,   /* device -> host */
    KP_CL_WRITE,  /* host -> device */
    KP_CL_COPY,   /* device -> device */
    KP_CL_FILL,
    KP_CL_WHAT_COUNT
} kp_cl_what;

/* Set up the tracker after the writer started. Registers the fork handler. */
void kp_cl_ops_init(void);

/* A queue the application just created: a new stream index, whatever queue that address named
 * before. `profiled` says whether its events carry times. Returns the stream index. */
uint32_t kp_cl_queue_created(cl_command_queue queue, cl_device_id device, int profiled);

/* The application is dropping a reference to this queue (call before the real release). */
void kp_cl_queue_releasing(cl_command_queue queue);

/* A kernel object was just created at this address: forget any name cached for it. */
void kp_cl_kernel_created(cl_kernel kernel);

/* Begin tracking an enqueue: fills op (correlation, kind, queue slot, name). kernel is used for
 * KP_CL_KERNEL only. Returns 1 when the enqueue should be tracked — the caller then fills bytes or
 * geometry, sets host_enqueue just before the real call and host_return just after, passes it an
 * event pointer and gives the event to kp_cl_op_commit — and 0 when it should not (not recording,
 * queue without profiling, too many pending); op->correlation is set either way, for the API
 * record. */
int kp_cl_op_begin(kp_cl_op *op, cl_command_queue queue, kp_cl_what what, cl_kernel kernel);

/* The enqueue succeeded and produced `event`. take_reference: 1 when the event is the
 * application's (the tracker retains it), 0 when the layer substituted its own (the tracker owns
 * that reference). */
void kp_cl_op_commit(const kp_cl_op *op, cl_event event, int take_reference);

/* Cheap check after an enqueue: record the oldest operations that have completed; gives up at
 * the first few that have not, and at once when another thread is already checking. */
void kp_cl_ops_poll(void);

/* After a synchronisation (clFinish, clWaitForEvents, a blocking read, write or map): record
 * every completed operation. */
void kp_cl_ops_drain(void);

/* At process exit (kp_writer_at_exit): record what completes within a short grace period, count
 * the rest as dropped; never waits on the runtime. */
void kp_cl_ops_exit(void);

/* libkprof's in-process sessions (opencl_layer.c's kprof_inject_opencl_*): end one (completed
 * work recorded, pending work counted as dropped, tracking off) and start the next (string
 * caches stale, tracking on; the writer already started in its folder). */
void kp_cl_ops_session_stop(void);
void kp_cl_ops_session_start(void);

/* From the writer's crash handler (kp_writer_at_crash): count what is still pending as dropped;
 * async-signal-safe, calls nothing in the runtime. */
void kp_cl_ops_crash(void);

/* The string id of text, cached in *cache for this process (a forked child defines its strings
 * again in its own file). A zeroed cache is empty. Returns 0 when not recording. */
uint32_t kp_cl_string(_Atomic uint64_t *cache, const char *text);

/* 1 while this process records; restarts the writer in a forked child on its first OpenCL call. */
int kp_cl_recording(void);

#endif
