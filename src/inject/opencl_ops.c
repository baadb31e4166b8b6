/*
 * opencl_ops.c — device operations enqueued through the OpenCL layer, from enqueue to record.
 *
 * Every tracked enqueue leaves one pending entry: its event (one reference held here) and what
 * the record needs (kind, name, bytes, geometry, queue, correlation, when the host enqueued it).
 * Entries live in one growable array, oldest first, so the only allocation on the enqueue path is
 * the array's occasional growth. They are read — execution status first, then the four profiling
 * times — on three occasions: a bounded look at the oldest ones after every wrapped enqueue, all
 * of them after clFinish and clWaitForEvents, and at process exit.
 *
 * Reading calls into the runtime, and that happens outside the list lock: a second lock (`drain`)
 * lets one thread at a time read. Only that thread removes entries and other threads only append,
 * so the indices it copied stay valid while it works without the list lock.
 *
 * Clocks: device timestamps count on the device's clock. Each queue has an offset onto
 * CLOCK_MONOTONIC, set by the first of its operations whose times are read (on an in-order queue,
 * its first enqueue): the host time when that enqueue call began minus its
 * CL_PROFILING_COMMAND_QUEUED, so QUEUED lines up with the enqueue. The device stamps QUEUED
 * somewhere inside the call, though, and a queue's first enqueue is often slow (PoCL: 30-60 us),
 * which would put the whole queue that much early; and the device clock drifts against
 * CLOCK_MONOTONIC (PoCL counts CLOCK_MONOTONIC_RAW, which NTP does not slew). So every later
 * operation moves the offset by the least amount that puts its QUEUED inside its own enqueue call.
 * Starting from the earliest admissible value, the offset in practice only grows, by a few
 * microseconds in all, which cannot reorder the operations of an in-order queue.
 * The rule is core/clock_offset.h's kp_device_clock, which the lab's OpenCL backend maps its
 * timed dispatches with too.
 *
 * Fork: a child cannot use its parent's events (runtimes do not survive fork), so it forgets the
 * pending entries without touching them, and defines its strings again in its own file if it
 * records at all.
 */
#include "inject/opencl_ops.h"
#include "inject/program_hooks.h"

#include "collect/writer.h"
#include "base/error.h"
#include "core/clock_offset.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define KP_CL_MAX_PENDING   (1u << 16) /* beyond this, enqueues go untracked (counted dropped) */
#define KP_CL_CHUNK         32         /* entries read per pass without the list lock */
#define KP_CL_POLL_LOOK     32         /* a poll looks at most at this many of the oldest ... */
#define KP_CL_POLL_PATIENCE 2          /* ... and stops after this many that are not complete */

typedef struct kp_cl_queue {
    cl_command_queue handle; /* NULL once the application released it for good */
    uint32_t device;         /* index in kp_ops.devices */
    int profiled;            /* its events carry profiling times */
    kp_device_clock clock;   /* its device clock on CLOCK_MONOTONIC (core/clock_offset.h) */
} kp_cl_queue;

typedef struct kp_cl_kernel_name {
    cl_kernel kernel;   /* NULL = empty slot */
    uint32_t name;      /* string id; 0 = look it up again */
    uint32_t reflected; /* the devices whose reflection was recorded (kp_cl_device_bit) */
} kp_cl_kernel_name;

static struct {
    pthread_mutex_t lock;  /* ops, queues, live, devices, kernels */
    pthread_mutex_t drain; /* held by the one thread reading events */
    kp_cl_op *ops;         /* pending, oldest first */
    size_t nops, ops_cap;
    atomic_size_t npending; /* nops, readable without the lock */
    kp_cl_queue *queues;    /* every queue seen; a slot is never reused */
    size_t nqueues, queues_cap;
    uint32_t *live; /* slots whose handle is still the application's */
    size_t nlive, live_cap;
    cl_device_id *devices; /* in the order first seen: the records' device index */
    size_t ndevices, devices_cap;
    kp_cl_kernel_name *kernels; /* open addressing on the handle; capacity a power of two */
    size_t nkernels, kernels_cap;
    atomic_uint_fast64_t correlation; /* last id handed out */
    atomic_uint generation;           /* bumped in a forked child: string caches go stale */
    atomic_int recording;             /* the writer runs in this process */
    atomic_int restart;               /* forked: start the writer on the next call */
    atomic_int exiting;               /* the exit drain ran: track nothing more */
    _Atomic uint64_t transfer_names[KP_CL_WHAT_COUNT];
} kp_ops = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .drain = PTHREAD_MUTEX_INITIALIZER,
    .generation = 1,
};

/* The names of device operations that have no kernel name. */
static const char *const kp_cl_transfer_text[KP_CL_WHAT_COUNT] = {
    [KP_CL_KERNEL] = "[OpenCL kernel]", /* a kernel whose name cannot be read */
    [KP_CL_READ] = "[OpenCL read]",     /* KP_COPY_DTOH */
    [KP_CL_WRITE] = "[OpenCL write]",   /* KP_COPY_HTOD */
    [KP_CL_COPY] = "[OpenCL copy]",     /* KP_COPY_DTOD */
    [KP_CL_FILL] = "[OpenCL fill]",     /* KP_REC_MEMSET */
};

/* Defined here, filled by the layer (opencl_layer.c): the tracker calls the runtime through it
 * and so needs nothing of the layer's. */
cl_icd_dispatch kp_cl_next;

int kp_cl_recording(void)
{
    if (atomic_load_explicit(&kp_ops.restart, memory_order_relaxed) &&
        atomic_exchange(&kp_ops.restart, 0)) {
        int started = kp_writer_start("opencl", NULL) == KPROF_OK;
        if (started) { /* a fork cleared the parent's hooks */
            kp_writer_at_exit(kp_cl_ops_exit);
            kp_writer_at_crash(kp_cl_ops_crash);
        }
        atomic_store(&kp_ops.recording, started);
    }
    return atomic_load_explicit(&kp_ops.recording, memory_order_relaxed);
}

uint32_t kp_cl_string(_Atomic uint64_t *cache, const char *text)
{
    uint64_t generation = atomic_load_explicit(&kp_ops.generation, memory_order_relaxed);
    uint64_t cached = atomic_load_explicit(cache, memory_order_relaxed);
    if (cached >> 32 == generation && (uint32_t)cached) return (uint32_t)cached;
    uint32_t id = kp_writer_string(text);
    if (id) atomic_store_explicit(cache, generation << 32 | id, memory_order_relaxed);
    return id;
}

/* Grow an array to hold at least `need` elements. KPROF_OK, or KPROF_NOMEM with err filled
 * (the layer's callers pass NULL: what is lost is counted as dropped, the program goes on). */
static kprof_status kp_cl_reserve(void **array, size_t *cap, size_t need, size_t size,
                                  kp_error *err)
{
    if (need <= *cap) return KPROF_OK;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*array, n * size);
    if (!p) return kp_error_nomem(err);
    *array = p;
    *cap = n;
    return KPROF_OK;
}

/* ---- queues and devices (caller holds kp_ops.lock) ---- */

static uint32_t kp_cl_device_index_locked(cl_device_id device)
{
    for (size_t i = 0; i < kp_ops.ndevices; i++)
        if (kp_ops.devices[i] == device) return (uint32_t)i;
    if (kp_cl_reserve((void **)&kp_ops.devices, &kp_ops.devices_cap, kp_ops.ndevices + 1,
                      sizeof *kp_ops.devices, NULL) != KPROF_OK)
        return 0;
    kp_ops.devices[kp_ops.ndevices] = device;
    return (uint32_t)kp_ops.ndevices++;
}

/* The live slot of this handle, or -1. */
static long kp_cl_live_find_locked(cl_command_queue queue)
{
    for (size_t i = kp_ops.nlive; i-- > 0;)
        if (kp_ops.queues[kp_ops.live[i]].handle == queue) return (long)i;
    return -1;
}

static void kp_cl_live_drop_locked(long i)
{
    kp_ops.queues[kp_ops.live[i]].handle = NULL;
    kp_ops.live[i] = kp_ops.live[--kp_ops.nlive];
}

/* A new slot for queue; UINT32_MAX when out of memory. */
static uint32_t kp_cl_queue_add_locked(cl_command_queue queue, cl_device_id device, int profiled)
{
    if (kp_cl_reserve((void **)&kp_ops.queues, &kp_ops.queues_cap, kp_ops.nqueues + 1,
                      sizeof *kp_ops.queues, NULL) != KPROF_OK ||
        kp_cl_reserve((void **)&kp_ops.live, &kp_ops.live_cap, kp_ops.nlive + 1,
                      sizeof *kp_ops.live, NULL) != KPROF_OK)
        return UINT32_MAX;
    uint32_t slot = (uint32_t)kp_ops.nqueues++;
    kp_ops.queues[slot] = (kp_cl_queue){
        .handle = queue, .device = kp_cl_device_index_locked(device), .profiled = profiled};
    kp_ops.live[kp_ops.nlive++] = slot;
    return slot;
}

uint32_t kp_cl_queue_created(cl_command_queue queue, cl_device_id device, int profiled)
{
    pthread_mutex_lock(&kp_ops.lock);
    long old = kp_cl_live_find_locked(queue);
    if (old >= 0) kp_cl_live_drop_locked(old); /* that queue is gone: its address is reused */
    uint32_t slot = kp_cl_queue_add_locked(queue, device, profiled);
    pthread_mutex_unlock(&kp_ops.lock);
    return slot == UINT32_MAX ? 0 : slot + 1;
}

void kp_cl_queue_releasing(cl_command_queue queue)
{
    cl_uint references = 0;
    if (!kp_cl_next.clGetCommandQueueInfo ||
        kp_cl_next.clGetCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof references,
                                         &references, NULL) != CL_SUCCESS ||
        references != 1)
        return;
    pthread_mutex_lock(&kp_ops.lock);
    long i = kp_cl_live_find_locked(queue);
    if (i >= 0) kp_cl_live_drop_locked(i);
    pthread_mutex_unlock(&kp_ops.lock);
}

/* The slot of a queue created before the layer saw it (through an extension entry point, say):
 * ask the runtime what it is. UINT32_MAX when that fails. */
static uint32_t kp_cl_queue_adopt(cl_command_queue queue, int *profiled)
{
    cl_device_id device = NULL;
    cl_command_queue_properties properties = 0;
    if (kp_cl_next.clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL) !=
            CL_SUCCESS ||
        kp_cl_next.clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties,
                                         NULL) != CL_SUCCESS)
        return UINT32_MAX;
    pthread_mutex_lock(&kp_ops.lock);
    long i = kp_cl_live_find_locked(queue);
    uint32_t slot =
        i >= 0 ? kp_ops.live[i]
               : kp_cl_queue_add_locked(queue, device, !!(properties & CL_QUEUE_PROFILING_ENABLE));
    *profiled = slot != UINT32_MAX && kp_ops.queues[slot].profiled;
    pthread_mutex_unlock(&kp_ops.lock);
    return slot;
}

/* ---- kernel names (caller holds kp_ops.lock) ---- */

static size_t kp_cl_kernel_hash(cl_kernel kernel, size_t cap)
{
    return (size_t)(((uintptr_t)kernel >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static kp_cl_kernel_name *kp_cl_kernel_slot_locked(cl_kernel kernel)
{
    if (!kp_ops.kernels_cap) return NULL;
    for (size_t i = kp_cl_kernel_hash(kernel, kp_ops.kernels_cap);;
         i = (i + 1) & (kp_ops.kernels_cap - 1)) {
        kp_cl_kernel_name *e = &kp_ops.kernels[i];
        if (e->kernel == kernel || e->kernel == NULL) return e;
    }
}

static void kp_cl_kernel_store_locked(cl_kernel kernel, uint32_t name)
{
    if ((kp_ops.nkernels + 1) * 2 > kp_ops.kernels_cap) {
        size_t cap = kp_ops.kernels_cap ? kp_ops.kernels_cap * 2 : 64;
        kp_cl_kernel_name *table = calloc(cap, sizeof *table);
        if (!table) return; /* not cached: looked up again next time */
        kp_cl_kernel_name *old = kp_ops.kernels;
        size_t old_cap = kp_ops.kernels_cap;
        kp_ops.kernels = table;
        kp_ops.kernels_cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].kernel) *kp_cl_kernel_slot_locked(old[i].kernel) = old[i];
        free(old);
    }
    kp_cl_kernel_name *e = kp_cl_kernel_slot_locked(kernel);
    if (!e->kernel) kp_ops.nkernels++;
    e->reflected = 0; /* a name stored anew: a new kernel, or a new file that must say it again */
    e->kernel = kernel;
    e->name = name;
}

/* A device's bit in kp_cl_kernel_name.reflected: one each for the first 31 devices, one shared
 * by the rest (a kernel is then reflected on the first of those only). */
static uint32_t kp_cl_device_bit(uint32_t device_index)
{
    return 1u << (device_index < 31 ? device_index : 31);
}

/* The kernel's reflection on device (record.h: KP_REC_KERNEL_INFO), written once per kernel
 * and device: at the first launch there, never again on the enqueue path after it (the cache
 * entry remembers the devices). The queries' failures leave the
 * record out (nothing made up). */
static void kp_cl_kernel_reflect(cl_kernel kernel, uint32_t name, uint32_t device_index)
{
    pthread_mutex_lock(&kp_ops.lock);
    kp_cl_kernel_name *e = kp_cl_kernel_slot_locked(kernel);
    uint32_t bit = kp_cl_device_bit(device_index);
    int known = !e || (e->kernel == kernel && (e->reflected & bit));
    cl_device_id device = device_index < kp_ops.ndevices ? kp_ops.devices[device_index] : NULL;
    if (!known && e->kernel == kernel) e->reflected |= bit;
    pthread_mutex_unlock(&kp_ops.lock);
    if (known || !device || !kp_cl_next.clGetKernelWorkGroupInfo) return;
    cl_ulong local = 0, priv = 0;
    size_t max_group = 0, multiple = 0;
    if (kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE,
                                            sizeof max_group, &max_group, NULL) != CL_SUCCESS ||
        kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local,
                                            &local, NULL) != CL_SUCCESS ||
        kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv,
                                            &priv, NULL) != CL_SUCCESS ||
        kp_cl_next.clGetKernelWorkGroupInfo(kernel, device,
                                            CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                            sizeof multiple, &multiple, NULL) != CL_SUCCESS ||
        max_group == 0)
        return;
    kp_rec r;
    memset(&r, 0, sizeof r);
    r.kind = KP_REC_KERNEL_INFO;
    r.domain = KP_DOMAIN_OPENCL;
    r.name = name;
    r.device = device_index;
    r.static_smem = local > UINT32_MAX ? UINT32_MAX : (uint32_t)local;
    r.local_mem = priv > UINT32_MAX ? UINT32_MAX : (uint32_t)priv;
    r.bytes = max_group;
    r.aux = multiple > UINT32_MAX ? UINT32_MAX : (uint32_t)multiple;
    kp_writer_emit(&r);
}

void kp_cl_kernel_created(cl_kernel kernel)
{
    pthread_mutex_lock(&kp_ops.lock);
    kp_cl_kernel_name *e = kernel ? kp_cl_kernel_slot_locked(kernel) : NULL;
    if (e && e->kernel) e->name = e->reflected = 0;
    pthread_mutex_unlock(&kp_ops.lock);
}

/* CL_KERNEL_FUNCTION_NAME, in small (n bytes) or, when longer, on the heap (free it when it
 * is not small); NULL when it cannot be read. */
static char *kp_cl_kernel_text(cl_kernel kernel, char *small, size_t n)
{
    size_t len = 0;
    if (kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
        return NULL;
    char *text = len > n ? malloc(len) : small;
    if (!text) return NULL;
    if (kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, len, text, NULL) !=
        CL_SUCCESS) {
        if (text != small) free(text);
        return NULL;
    }
    text[len - 1] = '\0';
    return text;
}

/* CL_KERNEL_FUNCTION_NAME as a string id (0 when it cannot be read). */
static uint32_t kp_cl_kernel_fetch_name(cl_kernel kernel)
{
    char small[256];
    char *text = kp_cl_kernel_text(kernel, small, sizeof small);
    uint32_t id = text ? kp_writer_string(text) : 0;
    if (text != small) free(text);
    return id;
}

/* ---- kernel hooks (the program's, inject/program_hooks.h) ---- */

void kp_cl_op_work(kp_cl_op *op, cl_kernel kernel)
{
    if (!kernel || !kp_program_hooks_any()) return;
    char small[256];
    char *text = kp_cl_kernel_text(kernel, small, sizeof small);
    if (!text) return;
    unsigned grid[3], block[3];
    for (int d = 0; d < 3; d++) {
        grid[d] = (unsigned)op->grid[d];
        block[d] = (unsigned)op->block[d];
    }
    op->work = (unsigned)kp_program_hooks_work(text, grid, block, &op->flops, &op->work_bytes);
    if (text != small) free(text);
}

/* ---- enqueue ---- */

int kp_cl_op_begin(kp_cl_op *op, cl_command_queue queue, kp_cl_what what, cl_kernel kernel)
{
    memset(op, 0, sizeof *op);
    op->correlation = atomic_fetch_add_explicit(&kp_ops.correlation, 1, memory_order_relaxed) + 1;
    if (!kp_cl_recording() || atomic_load_explicit(&kp_ops.exiting, memory_order_relaxed)) return 0;
    op->kind = what == KP_CL_KERNEL ? KP_REC_KERNEL
               : what == KP_CL_FILL ? KP_REC_MEMSET
                                    : KP_REC_MEMCPY;
    op->copy = what == KP_CL_READ    ? KP_COPY_DTOH
               : what == KP_CL_WRITE ? KP_COPY_HTOD
               : what == KP_CL_COPY  ? KP_COPY_DTOD
                                     : KP_COPY_UNKNOWN;

    if (!queue) return 0; /* the call will fail: nothing to count */

    pthread_mutex_lock(&kp_ops.lock);
    int full = kp_ops.nops >= KP_CL_MAX_PENDING;
    long live = kp_cl_live_find_locked(queue);
    uint32_t slot = live >= 0 ? kp_ops.live[live] : UINT32_MAX;
    int profiled = slot != UINT32_MAX && kp_ops.queues[slot].profiled;
    kp_cl_kernel_name *cached =
        what == KP_CL_KERNEL && kernel ? kp_cl_kernel_slot_locked(kernel) : NULL;
    uint32_t name = cached && cached->kernel == kernel ? cached->name : 0;
    uint32_t reflected = cached && cached->kernel == kernel ? cached->reflected : 0;
    uint32_t device = slot != UINT32_MAX ? kp_ops.queues[slot].device : 0;
    pthread_mutex_unlock(&kp_ops.lock);

    if (slot == UINT32_MAX) slot = kp_cl_queue_adopt(queue, &profiled);
    if (full || slot == UINT32_MAX || !profiled) { /* a device operation kprof cannot time */
        kp_writer_dropped(1);
        return 0;
    }
    op->queue = slot;

    if (what == KP_CL_KERNEL && kernel && !name) {
        reflected = 0; /* the name is stored anew, and with it the reflection said again */
        name = kp_cl_kernel_fetch_name(kernel);
        if (name) {
            pthread_mutex_lock(&kp_ops.lock);
            kp_cl_kernel_store_locked(kernel, name);
            pthread_mutex_unlock(&kp_ops.lock);
        }
    }
    /* The first launch of this kernel on this queue's device: its reflection, once. */
    if (what == KP_CL_KERNEL && kernel && name && !(reflected & kp_cl_device_bit(device))) {
        pthread_mutex_lock(&kp_ops.lock);
        device = kp_ops.queues[slot].device; /* an adopted queue's, now known */
        pthread_mutex_unlock(&kp_ops.lock);
        kp_cl_kernel_reflect(kernel, name, device);
    }
    if (!name) name = kp_cl_string(&kp_ops.transfer_names[what], kp_cl_transfer_text[what]);
    op->name = name;
    return 1;
}

void kp_cl_op_commit(const kp_cl_op *op, cl_event event, int take_reference)
{
    if (!event) return;
    if (take_reference && kp_cl_next.clRetainEvent(event) != CL_SUCCESS) {
        kp_writer_dropped(1);
        return;
    }
    pthread_mutex_lock(&kp_ops.lock);
    int ok = kp_cl_reserve((void **)&kp_ops.ops, &kp_ops.ops_cap, kp_ops.nops + 1,
                           sizeof *kp_ops.ops, NULL) == KPROF_OK;
    if (ok) {
        kp_ops.ops[kp_ops.nops] = *op;
        kp_ops.ops[kp_ops.nops].event = event;
        kp_ops.nops++;
        atomic_store_explicit(&kp_ops.npending, kp_ops.nops, memory_order_relaxed);
    }
    pthread_mutex_unlock(&kp_ops.lock);
    if (!ok) {
        kp_cl_next.clReleaseEvent(event);
        kp_writer_dropped(1);
    }
}

/* ---- reading events ---- */

typedef struct kp_cl_times {
    cl_ulong queued, submit, start, end; /* device clock; 0 = not available */
} kp_cl_times;

/* The four times; 0 when START or END cannot be read. */
static int kp_cl_read_times(cl_event event, kp_cl_times *t)
{
    static const cl_profiling_info which[4] = {
        CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT, CL_PROFILING_COMMAND_START,
        CL_PROFILING_COMMAND_END};
    cl_ulong *out[4] = {&t->queued, &t->submit, &t->start, &t->end};
    for (int i = 0; i < 4; i++) {
        *out[i] = 0;
        if (kp_cl_next.clGetEventProfilingInfo(event, which[i], sizeof(cl_ulong), out[i], NULL) !=
            CL_SUCCESS)
            *out[i] = 0;
    }
    return t->start != 0 && t->end != 0;
}

/* The record of an operation, after moving its queue's offset so that the operation's QUEUED
 * falls inside its enqueue call (START after the call began, when QUEUED is not available).
 * Caller holds kp_ops.lock. */
static void kp_cl_record_locked(kp_rec *r, const kp_cl_op *op, const kp_cl_times *t, cl_int status)
{
    kp_cl_queue *q = &kp_ops.queues[op->queue];
    kp_device_clock_observe(&q->clock, op->host_enqueue, op->host_return, t->queued, t->start);
    memset(r, 0, sizeof *r);
    r->kind = op->kind;
    r->domain = KP_DOMAIN_OPENCL;
    r->name = op->name;
    r->start = kp_device_clock_map(&q->clock, t->start);
    r->end = kp_device_clock_map(&q->clock, t->end);
    r->queued = kp_device_clock_map(&q->clock, t->queued);
    r->submitted = kp_device_clock_map(&q->clock, t->submit);
    r->correlation = op->correlation;
    r->device = q->device;
    r->stream = op->queue + 1;
    memcpy(r->grid, op->grid, sizeof r->grid);
    memcpy(r->block, op->block, sizeof r->block);
    r->bytes = op->bytes;
    r->status = status; /* CL_COMPLETE, or the error the command ended with */
    r->aux = op->copy;
}

/* Read the oldest pending operations — at most `limit`, stopping after `patience` that have not
 * completed — and record the completed ones. Caller holds kp_ops.drain. Returns how many of
 * those looked at are still pending. */
static size_t kp_cl_scan(size_t limit, size_t patience)
{
    kp_cl_op batch[KP_CL_CHUNK];
    kp_cl_times times[KP_CL_CHUNK];
    cl_int status[KP_CL_CHUNK];
    enum { KEEP, EMIT, DROP } fate[KP_CL_CHUNK];
    kp_rec recs[KP_CL_CHUNK];
    size_t index = 0, looked = 0, waiting = 0;
    uint64_t dropped = 0;
    int exiting = atomic_load(&kp_ops.exiting);

    while (looked < limit && waiting < patience) {
        pthread_mutex_lock(&kp_ops.lock);
        size_t n = kp_ops.nops > index ? kp_ops.nops - index : 0;
        if (n > KP_CL_CHUNK) n = KP_CL_CHUNK;
        if (n > limit - looked) n = limit - looked;
        memcpy(batch, kp_ops.ops + index, n * sizeof *batch);
        pthread_mutex_unlock(&kp_ops.lock);
        if (n == 0) break;

        size_t used = 0;
        for (; used < n && waiting < patience; used++) {
            cl_int s = CL_QUEUED;
            cl_int rc = kp_cl_next.clGetEventInfo(
                batch[used].event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
            if (rc != CL_SUCCESS) s = rc; /* cannot be asked: give up on it */
            status[used] = s;
            if (s > CL_COMPLETE) { /* queued, submitted or running */
                fate[used] = KEEP;
                waiting++;
                continue;
            }
            fate[used] = kp_cl_read_times(batch[used].event, &times[used]) ? EMIT : DROP;
        }

        pthread_mutex_lock(&kp_ops.lock);
        size_t kept = index;
        for (size_t j = 0; j < used; j++) {
            if (fate[j] == EMIT) kp_cl_record_locked(&recs[j], &batch[j], &times[j], status[j]);
            if (fate[j] == KEEP) kp_ops.ops[kept++] = kp_ops.ops[index + j];
        }
        size_t tail = kp_ops.nops - (index + used);
        memmove(kp_ops.ops + kept, kp_ops.ops + index + used, tail * sizeof *kp_ops.ops);
        kp_ops.nops = kept + tail;
        atomic_store_explicit(&kp_ops.npending, kp_ops.nops, memory_order_relaxed);
        pthread_mutex_unlock(&kp_ops.lock);

        for (size_t j = 0; j < used; j++) {
            if (fate[j] == KEEP) continue;
            if (fate[j] == EMIT && batch[j].work) { /* the kernel, then its work (record.h) */
                kp_rec r[3] = {recs[j]};
                size_t nr = 1;
                double v[2] = {batch[j].flops, batch[j].work_bytes};
                static const char *const keys[2] = {"flops", "bytes"};
                for (int k = 0; k < 2; k++) {
                    if (!(batch[j].work & (1u << k))) continue;
                    r[nr] = (kp_rec){.kind = KP_REC_METRIC,
                                     .name = kp_writer_string(keys[k]),
                                     .aux = KP_REC_KERNEL};
                    memcpy(&r[nr].bytes, &v[k], sizeof v[k]);
                    nr++;
                }
                kp_writer_emit_n(r, nr);
            } else if (fate[j] == EMIT) {
                kp_writer_emit(&recs[j]);
            } else {
                dropped++;
            }
            /* At exit the runtime may be on its way down: leave the references be. */
            if (!exiting) kp_cl_next.clReleaseEvent(batch[j].event);
        }
        index = kept;
        looked += used;
    }
    kp_writer_dropped(dropped);
    return waiting;
}

void kp_cl_ops_poll(void)
{
    if (atomic_load_explicit(&kp_ops.npending, memory_order_relaxed) == 0) return;
    if (pthread_mutex_trylock(&kp_ops.drain) != 0) return; /* another thread is at it */
    kp_cl_scan(KP_CL_POLL_LOOK, KP_CL_POLL_PATIENCE);
    pthread_mutex_unlock(&kp_ops.drain);
}

void kp_cl_ops_drain(void)
{
    if (atomic_load_explicit(&kp_ops.npending, memory_order_relaxed) == 0) return;
    pthread_mutex_lock(&kp_ops.drain);
    kp_cl_scan(SIZE_MAX, SIZE_MAX);
    pthread_mutex_unlock(&kp_ops.drain);
}

/* Runs from the writer's atexit hook, in the process that started the writer. One pass of
 * non-blocking questions (status, then times of what completed); what has not completed is
 * counted as dropped, and nothing waits. Waiting would be wrong: by now destructors registered
 * after the writer started have run — PoCL's LLVM registers some lazily, at the first kernel
 * compilation — so work still running in the runtime's threads may be about to crash, and a
 * program that raced its own exit would lose that race every time under kprof. No event is
 * released either: the process is going, and the runtime with it. */
void kp_cl_ops_exit(void)
{
    pthread_mutex_lock(&kp_ops.drain);
    atomic_store(&kp_ops.exiting, 1);
    kp_cl_scan(SIZE_MAX, SIZE_MAX);
    pthread_mutex_lock(&kp_ops.lock);
    uint64_t left = kp_ops.nops;
    kp_ops.nops = 0;
    atomic_store(&kp_ops.npending, 0);
    pthread_mutex_unlock(&kp_ops.lock);
    kp_writer_dropped(left);
    pthread_mutex_unlock(&kp_ops.drain);
}

/* From the writer's crash handler: what is still pending never completes as far as the trace
 * knows. No runtime call (the crash may be inside the runtime) and no lock: just the count. */
void kp_cl_ops_crash(void)
{
    kp_writer_dropped(atomic_load_explicit(&kp_ops.npending, memory_order_relaxed));
}

/* ---- fork ---- */

static void kp_cl_fork_prepare(void)
{
    pthread_mutex_lock(&kp_ops.drain);
    pthread_mutex_lock(&kp_ops.lock);
}

static void kp_cl_fork_parent(void)
{
    pthread_mutex_unlock(&kp_ops.lock);
    pthread_mutex_unlock(&kp_ops.drain);
}

/* The child is single-threaded here and owns both locks. Its parent's events belong to a runtime
 * whose threads did not come along: forget them without a call (the references leak, harmlessly).
 * String ids were defined in the parent's file: make every cache miss. */
static void kp_cl_fork_child(void)
{
    kp_ops.nops = 0;
    atomic_store(&kp_ops.npending, 0);
    for (size_t i = 0; i < kp_ops.kernels_cap; i++)
        kp_ops.kernels[i].name = 0;
    atomic_fetch_add(&kp_ops.generation, 1);
    if (atomic_load(&kp_ops.recording)) {
        atomic_store(&kp_ops.recording, 0);
        atomic_store(&kp_ops.restart, 1);
    }
    pthread_mutex_unlock(&kp_ops.lock);
    pthread_mutex_unlock(&kp_ops.drain);
}

/* An in-process session ends (libkprof's kprof_stop): what completed is recorded, what is still
 * pending counted as dropped, and nothing is tracked until the next session starts. */
void kp_cl_ops_session_stop(void)
{
    pthread_mutex_lock(&kp_ops.drain);
    kp_cl_scan(SIZE_MAX, SIZE_MAX);
    pthread_mutex_lock(&kp_ops.lock);
    uint64_t left = kp_ops.nops;
    kp_cl_op *ops = kp_ops.ops;
    kp_ops.ops = NULL; /* the next op makes a new array */
    kp_ops.ops_cap = 0;
    kp_ops.nops = 0;
    atomic_store(&kp_ops.npending, 0);
    atomic_store(&kp_ops.recording, 0);
    pthread_mutex_unlock(&kp_ops.lock);
    /* The program runs on: give back the references kept on what never completed. */
    for (uint64_t i = 0; i < left; i++)
        kp_cl_next.clReleaseEvent(ops[i].event);
    free(ops);
    kp_writer_dropped(left);
    pthread_mutex_unlock(&kp_ops.drain);
}

/* The next session starts (the writer already recording in its folder): string ids of the last
 * file go stale, kernel names are looked up again. */
void kp_cl_ops_session_start(void)
{
    pthread_mutex_lock(&kp_ops.lock);
    for (size_t i = 0; i < kp_ops.kernels_cap; i++)
        kp_ops.kernels[i].name = 0;
    atomic_fetch_add(&kp_ops.generation, 1);
    atomic_store(&kp_ops.exiting, 0);
    atomic_store(&kp_ops.recording, 1);
    pthread_mutex_unlock(&kp_ops.lock);
}

void kp_cl_ops_init(void)
{
    static int once;
    if (!once) {
        once = 1;
        pthread_atfork(kp_cl_fork_prepare, kp_cl_fork_parent, kp_cl_fork_child);
    }
    atomic_store(&kp_ops.recording, 1);
}
