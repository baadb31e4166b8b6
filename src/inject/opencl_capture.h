/*
 * opencl_capture.h — `kprof trace --capture PATTERN[@N|@slowest]` in the OpenCL layer (issue
 * 26): the layer's wrappers (opencl_layer.c) tell the capture (opencl_capture.c) about buffers,
 * kernels, arguments and launches; at the chosen launch it writes a capture folder
 * (collect/capture.h) with the program's source or binary, the geometry, every argument and the
 * bytes of every buffer before and after the launch.
 *
 * Off (no KPROF_CAPTURE in the environment, or a bad one: one stderr line) every call below is
 * one relaxed load in the wrapper (kp_clc_active) and nothing more; so is every call once the
 * capture was made or given up. On, a kernel's name is matched once, when it is created (under
 * the write lock); while no matching kernel exists launches and clSetKernelArg cost nothing more,
 * and once one exists every launch and clSetKernelArg costs one hash lookup under the read side
 * of a read-write lock (threads do not wait for each other there; a creation or last release
 * holds them up briefly). Every clReleaseMemObject costs one clGetMemObjectInfo
 * (CL_MEM_REFERENCE_COUNT: a call into the runtime) and, at the program's last reference, the
 * write lock to forget the buffer; clReleaseKernel the same (clGetKernelInfo) once a matching
 * kernel exists. In @slowest's window a matching launch costs one small allocation and a
 * completion callback (clSetEventCallback) that times it; nothing waits for it.
 *
 * Threads: every function may be called from any application thread.
 */
#ifndef KP_INJECT_OPENCL_CAPTURE_H
#define KP_INJECT_OPENCL_CAPTURE_H

#include "inject/opencl_ops.h"

#include <stdatomic.h>
#include <stdint.h>

/* 1 while a capture is asked for and not yet made (or failed). */
extern atomic_int kp_clc_on;

static inline int kp_clc_active(void)
{
    return atomic_load_explicit(&kp_clc_on, memory_order_relaxed);
}

/* Read the environment once the layer's next table is filled; registers the exit hook that
 * reports a capture that never happened (call after the writer started). */
void kp_clc_init(void);

/* What a memory object is, for the registry. */
enum {
    KP_CLC_BUFFER = 1,     /* clCreateBuffer(WithProperties): captured */
    KP_CLC_SUB_BUFFER = 2, /* clCreateSubBuffer: not captured */
    KP_CLC_IMAGE = 3,      /* clCreateImage*: not captured */
    KP_CLC_PIPE = 4,       /* clCreatePipe: not captured */
};

/* A memory object was made (its size in bytes: buffers) / is losing the program's last
 * reference (call before the real release). */
void kp_clc_mem_created(cl_mem mem, size_t size, int kind);
void kp_clc_mem_releasing(cl_mem mem);

/* A kernel object was made (its name is matched now) / made by clCloneKernel from `from` (its
 * arguments copied, as the clone's are) / is losing the last reference. */
void kp_clc_kernel_created(cl_kernel kernel);
void kp_clc_kernel_cloned(cl_kernel from, cl_kernel kernel);
void kp_clc_kernel_releasing(cl_kernel kernel);

/* clSetKernelArg succeeded (value NULL: __local memory of size bytes) / clSetKernelArgSVMPointer
 * succeeded (not captured: said so if this kernel is captured). */
void kp_clc_arg_set(cl_kernel kernel, cl_uint index, size_t size, const void *value);
void kp_clc_arg_svm(cl_kernel kernel, cl_uint index, const void *pointer);

/* clCreateUserEvent made one (made 1) / clSetUserEventStatus set one (made 0): while any is
 * unset, the capture's wait for a launch's inputs is bounded (an earlier command may wait on an
 * event only the program sets, after its enqueue returns). */
void kp_clc_user_event(int made);

/* One kernel launch, from kp_clc_launch_begin to kp_clc_launch_finish. */
typedef struct kp_clc_launch {
    int mode; /* 0: nothing to do; KP_CLC_TIME: time it (@slowest's window); KP_CLC_CAPTURE */
    cl_command_queue queue;
    cl_event event;         /* the launch's event, retained (kp_clc_launch_enqueued) */
    struct kp_clc_job *job; /* KP_CLC_CAPTURE: the capture under way (opencl_capture.c's) */
    uint32_t name;          /* the kernel name's slot */
    uint64_t launch;        /* the launch's number among that name's (1-based) */
    cl_uint dims;           /* the geometry as the program gave it; local 0: NULL */
    uint64_t global[3], local[3], offset[3];
} kp_clc_launch;

enum { KP_CLC_TIME = 1, KP_CLC_CAPTURE = 2 };

/* Before the program's enqueue (call only when kp_clc_active()): count the launch and decide.
 * For the chosen launch the queue is finished and the buffers' before-states copied here. Returns
 * l->mode; with a mode the caller passes an event pointer to the real enqueue (the program's, or
 * one of its own it releases after kp_clc_launch_end) and calls kp_clc_launch_end. task: 1 for
 * clEnqueueTask (dims 1, one work-item in one group). */
int kp_clc_launch_begin(kp_clc_launch *l, cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                        const size_t *offset, const size_t *global, const size_t *local,
                        cl_uint num_events, const cl_event *wait_list);

/* Right after the real enqueue returned rc with event (NULL when it failed): keep the event
 * (retained; the caller's API record comes first, then kp_clc_launch_finish). */
void kp_clc_launch_enqueued(kp_clc_launch *l, cl_int rc, cl_event event);

/* After the enqueue's own bookkeeping: have a timed launch's times read when it completes
 * (clSetEventCallback; no wait here), or finish a capture (a wait for the launch's event, the
 * after-states, the folder committed, announced). */
void kp_clc_launch_finish(kp_clc_launch *l, cl_int rc);

#endif
