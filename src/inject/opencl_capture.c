/*
 * opencl_capture.c — the OpenCL side of `kprof trace --capture PATTERN[@N|@slowest]` (issue 26;
 * opencl_capture.h says what the layer calls when): one kernel launch of the traced program
 * written out as a capture folder (collect/capture.h) that `kprof run/bench/sweep NAME@N`
 * replays.
 *
 * What it keeps while a capture is asked for (under kp_clc.lock, a read-write lock: lookups read,
 * creations and last releases write):
 *   - every memory object the program makes (clCreateBuffer*, sub-buffers, images, pipes), with
 *     its size and kind, in a hash set: an 8-byte clSetKernelArg value that is one of them is a
 *     cl_mem, anything else is bytes passed by value;
 *   - every kernel object whose name matches the glob (matched once, at its creation), with a copy
 *     of each argument clSetKernelArg (or clSetKernelArgSVMPointer, clCloneKernel) gave it;
 *     kernels that do not match are not kept, so their launches cost one lookup that fails;
 *   - per matching name, how many launches it had (atomic: a launch counts under the read lock):
 *     @N counts the launches of one name, whatever kernel objects of that name made them;
 *   - how many user events (clCreateUserEvent) the program has made and not yet set.
 *
 * The chosen launch (the first, @N, or for @slowest the first launch after the window of the name
 * and geometry of the slowest one seen in it): wait until what it waits on and everything before it
 * on its queue is done (two markers on the queue, clEnqueueMarkerWithWaitList: the wait list, then
 * all before). That wait never blocks the program for good: a launch whose wait list holds a user
 * event not set yet is given up at once, and while any user event is unset (an earlier command may
 * wait on it, which only the program can set, after its enqueue returns) the markers are polled
 * for at most KP_CLC_READY_NS and the capture is given up ("the launch's inputs were not ready")
 * with the launch left alone; with none unset the wait is for real work, however long. Then read
 * the program's source (kernel.cl) or, without one, its binary for the queue's device
 * (program.bin), the build options, the kernel's work-group attributes, each argument (a value
 * with its bytes, a buffer as one allocation however many arguments pass it, retained until the
 * capture ends so that another thread's release cannot free it under the copies, __local memory
 * with its size) and the bytes of every buffer (blocking reads on the program's queue, straight to
 * the next layer's table: the trace does not see them); then the program's own launch, as it
 * asked, exactly once; a wait for that launch's event; the buffers again (the after-states, unless
 * --capture-no-after); the folder committed and the result announced (kp_capture_announce). The
 * program was held from the first wait to the commit (held_ns). Any failure before the launch
 * leaves the launch alone and the folder unmade; a failure after it, the same folder unmade:
 * kp_capture_out_abort, and the announcement says why. One capture per run: once a launch is
 * chosen nothing else is looked at. A program that ends (exit in another thread) while the capture
 * is being written: the exit hook says so and removes the temporary folder (kp_capture_out_abort)
 * when the capturing thread is not inside a file write; the capturing thread then stops quietly.
 *
 * Geometry: grid is the global size (work-items per dimension), tg the local size, offset the
 * global offset; dims is the program's work_dim and unused dimensions are 1. A launch with no local
 * size (the runtime chose the work-groups) has tg 0 0 0; it is not a missing item. The replay
 * (lab/replay.c, kp_lab_capture_launch) does not pass NULL again: it picks the largest power of
 * two work-group of at most 256 work-items in all that divides the grid, and warns that it chose
 * it, so the replay's groups may differ from the ones the runtime chose in the program.
 * dynamic_smem is the sum of the __local arguments' sizes; attributes: static_smem
 * CL_KERNEL_LOCAL_MEM_SIZE, local_bytes CL_KERNEL_PRIVATE_MEM_SIZE, max_threads
 * CL_KERNEL_WORK_GROUP_SIZE.
 *
 * Not captured (a not-captured line each, the rest captured): SVM pointers, sub-buffers, images,
 * pipes, samplers; a buffer over --capture-max-bytes or one the host may not read
 * (CL_MEM_HOST_NO_ACCESS: the read fails). Allocations in the manifest have address 0 (OpenCL has
 * no addresses); they are told apart here by their cl_mem.
 *
 * @slowest: the window starts at the first launch of a matching kernel (not at the program's start,
 * which may spend far longer than the window before its first kernel) and lasts window_s seconds.
 * Every matching launch inside it is timed from its event's CL_PROFILING_COMMAND_START/END (the
 * layer forces profiling on), read in a completion callback (clSetEventCallback) that keeps the
 * slowest under the lock: the program's enqueue does not wait for it (a launch waiting on a user
 * event the program sets after the enqueue would never complete), and a timed launch costs one
 * small allocation for the callback. The first matching launch after the window waits (at most
 * KP_CLC_READY_NS, once) for the window's callbacks still due, and from then on the slowest is
 * fixed (a later callback is dropped). After the window, the next launch of the slowest one's name
 * with the same global and local size and offset is captured. A run that ends before such a
 * launch, or before the launch @N, says so at exit (kp_writer_at_exit), with nothing written.
 *
 * Fork: a child captures nothing (its parent's objects are not its own).
 */
#define _GNU_SOURCE
#include "inject/opencl_capture.h"

#include "collect/capture.h"
#include "collect/writer.h"
#include "base/env.h"
#include "base/error.h"
#include "base/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

atomic_int kp_clc_on;

/* How long the capture waits, at most, for what a launch waits on while a user event is unset,
 * and (once) for the window's timing callbacks still due: 2 s. */
#define KP_CLC_READY_NS 2000000000ull

#define KP_CLC_TOMB ((void *)1) /* a removed entry: probing goes on past it */

/* An open-addressing hash set on a handle: memory objects (size, kind) and matching kernels
 * (value: their kp_clc_kernel). */
typedef struct kp_clc_entry {
    void *key; /* NULL: empty; KP_CLC_TOMB: removed */
    void *value;
    uint64_t size;
    int kind;
} kp_clc_entry;

typedef struct kp_clc_table {
    kp_clc_entry *e;
    size_t cap;  /* a power of two, or 0 */
    size_t used; /* live and removed entries */
    size_t live;
} kp_clc_table;

/* An argument as the program set it. */
enum { KP_CLC_ARG_VALUE = 1, KP_CLC_ARG_LOCAL = 2, KP_CLC_ARG_SVM = 3 };

typedef struct kp_clc_arg {
    unsigned char kind; /* 0: never set */
    uint32_t size;
    unsigned char *bytes; /* VALUE, SVM: size bytes (heap, cap of them) */
    uint32_t cap;
} kp_clc_arg;

typedef struct kp_clc_kernel {
    uint32_t name; /* slot in kp_clc.names */
    uint32_t nargs;
    kp_clc_arg *args;
    int too_many; /* an index past KP_CAPTURE_MAX_ARGS was set */
} kp_clc_kernel;

typedef struct kp_clc_name {
    char *text;
    _Atomic uint64_t launches; /* counted under the read lock */
} kp_clc_name;

/* The capture under way, between kp_clc_launch_begin and kp_clc_launch_finish. */
typedef struct kp_clc_job {
    kp_capture c;
    kp_capture_out *out;
    kp_error err;
    cl_mem mems[KP_CAPTURE_MAX_ALLOCS]; /* allocation j's buffer, retained (clRetainMemObject) */
    kp_clc_kernel args;                 /* the kernel's arguments, copied at the launch */
    uint64_t t0;                        /* when the program's hold began */
    int abandoned; /* under kp_clc_out_lock: the exit hook gave it up (and took out) */
} kp_clc_job;

/* A timed launch of the window, for its completion callback. */
typedef struct kp_clc_timing {
    uint32_t name;
    uint64_t launch;
    cl_uint dims;
    uint64_t global[3], local[3], offset[3];
} kp_clc_timing;

/* The job being written and its folder (job->out): the capturing thread holds it around every
 * write into the folder, the exit hook to take the folder away from it. */
static pthread_mutex_t kp_clc_out_lock = PTHREAD_MUTEX_INITIALIZER;
static kp_clc_job *_Atomic kp_clc_writing; /* set and cleared under kp_clc_out_lock */

static struct {
    pthread_rwlock_t lock;
    kp_capture_pattern pattern;
    char dir[4096];
    int replace;
    kp_clc_table mems, kernels;
    atomic_size_t matching; /* kernels.live, read without the lock */
    kp_clc_name *names;
    size_t nnames, names_cap;
    int chosen;            /* a launch was chosen for the capture (or the capture was given up) */
    atomic_int user_unset; /* user events made and not yet set (while the capture is on) */
    /* @slowest */
    _Atomic uint64_t window_start; /* ns; 0 before the first matching launch */
    _Atomic uint64_t window_launches;
    atomic_int timing;  /* timing callbacks registered and not yet run */
    atomic_int settled; /* the window's timings are in: the slowest is fixed */
    int have_slowest;
    int64_t slowest_ns;
    uint32_t slowest_name;
    uint64_t slowest_launch;
    cl_uint slowest_dims;
    uint64_t slowest_global[3], slowest_local[3], slowest_offset[3];
} kp_clc = {.lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP};

#define KP_CLC_READ()  pthread_rwlock_rdlock(&kp_clc.lock)
#define KP_CLC_WRITE() pthread_rwlock_wrlock(&kp_clc.lock)
#define KP_CLC_DONE()  pthread_rwlock_unlock(&kp_clc.lock)

static void kp_clc_nap(unsigned *us)
{
    struct timespec ts = {0, (long)*us * 1000};
    nanosleep(&ts, NULL);
    if (*us < 1000) *us *= 2;
}

/* ---- the hash sets (caller holds kp_clc.lock: writing for put and remove) ---- */

static size_t kp_clc_hash(const void *key, size_t cap)
{
    return (size_t)(((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static kp_clc_entry *kp_clc_find(kp_clc_table *t, const void *key)
{
    if (!t->cap || !key || key == KP_CLC_TOMB) return NULL;
    for (size_t i = kp_clc_hash(key, t->cap), n = 0; n < t->cap; i = (i + 1) & (t->cap - 1), n++) {
        if (t->e[i].key == key) return &t->e[i];
        if (!t->e[i].key) return NULL;
    }
    return NULL;
}

/* Rehash into a table sized for the live entries (removed ones dropped). 0, or -1 out of memory. */
static int kp_clc_rehash(kp_clc_table *t)
{
    size_t cap = 64;
    while (cap < (t->live + 1) * 4)
        cap *= 2;
    kp_clc_entry *e = calloc(cap, sizeof *e);
    if (!e) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].key || t->e[i].key == KP_CLC_TOMB) continue;
        size_t j = kp_clc_hash(t->e[i].key, cap);
        while (e[j].key)
            j = (j + 1) & (cap - 1);
        e[j] = t->e[i];
    }
    free(t->e);
    t->e = e;
    t->cap = cap;
    t->used = t->live;
    return 0;
}

/* key's entry, made (zeroed) when absent; NULL out of memory. */
static kp_clc_entry *kp_clc_put(kp_clc_table *t, void *key)
{
    kp_clc_entry *e = kp_clc_find(t, key);
    if (e) return e;
    if ((t->used + 1) * 2 > t->cap && kp_clc_rehash(t) != 0) return NULL;
    size_t i = kp_clc_hash(key, t->cap);
    while (t->e[i].key && t->e[i].key != KP_CLC_TOMB)
        i = (i + 1) & (t->cap - 1);
    if (!t->e[i].key) t->used++;
    t->live++;
    t->e[i] = (kp_clc_entry){.key = key};
    return &t->e[i];
}

static void kp_clc_remove(kp_clc_table *t, kp_clc_entry *e)
{
    *e = (kp_clc_entry){.key = KP_CLC_TOMB};
    t->live--;
}

static void kp_clc_kernel_free(kp_clc_kernel *k)
{
    if (!k) return;
    for (uint32_t i = 0; i < k->nargs; i++)
        free(k->args[i].bytes);
    free(k->args);
    k->args = NULL;
    k->nargs = 0;
}

/* Deep copy of src's arguments into dst (zeroed). 0, or -1 out of memory (dst freed). */
static int kp_clc_kernel_copy(kp_clc_kernel *dst, const kp_clc_kernel *src)
{
    *dst = (kp_clc_kernel){.name = src->name, .too_many = src->too_many};
    if (!src->nargs) return 0;
    dst->args = calloc(src->nargs, sizeof *dst->args);
    if (!dst->args) return -1;
    dst->nargs = src->nargs;
    for (uint32_t i = 0; i < src->nargs; i++) {
        dst->args[i] = src->args[i];
        dst->args[i].bytes = NULL;
        dst->args[i].cap = 0;
        if (src->args[i].bytes && src->args[i].size) {
            dst->args[i].bytes = malloc(src->args[i].size);
            if (!dst->args[i].bytes) {
                kp_clc_kernel_free(dst);
                return -1;
            }
            memcpy(dst->args[i].bytes, src->args[i].bytes, src->args[i].size);
            dst->args[i].cap = src->args[i].size;
        }
    }
    return 0;
}

static void kp_clc_drop_kernel_locked(kp_clc_entry *e)
{
    kp_clc_kernel *k = e->value;
    kp_clc_kernel_free(k);
    free(k);
    kp_clc_remove(&kp_clc.kernels, e);
    atomic_store_explicit(&kp_clc.matching, kp_clc.kernels.live, memory_order_relaxed);
}

/* The slot of a matching name, added when new; UINT32_MAX out of memory. */
static uint32_t kp_clc_name_locked(const char *text)
{
    for (size_t i = 0; i < kp_clc.nnames; i++)
        if (strcmp(kp_clc.names[i].text, text) == 0) return (uint32_t)i;
    if (kp_clc.nnames == kp_clc.names_cap) {
        size_t cap = kp_clc.names_cap ? kp_clc.names_cap * 2 : 8;
        kp_clc_name *n = realloc(kp_clc.names, cap * sizeof *n);
        if (!n) return UINT32_MAX;
        kp_clc.names = n;
        kp_clc.names_cap = cap;
    }
    char *copy = strdup(text);
    if (!copy) return UINT32_MAX;
    kp_clc.names[kp_clc.nnames].text = copy;
    atomic_init(&kp_clc.names[kp_clc.nnames].launches, 0);
    return (uint32_t)kp_clc.nnames++;
}

/* ---- the environment, fork, exit ---- */

static void kp_clc_child(void)
{
    atomic_store(&kp_clc_on, 0);
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    kp_clc.lock = fresh;
    pthread_mutex_t fresh_out = PTHREAD_MUTEX_INITIALIZER;
    kp_clc_out_lock = fresh_out;
    atomic_store(&kp_clc_writing, NULL);
}

static void kp_clc_atfork_once(void)
{
    pthread_atfork(NULL, NULL, kp_clc_child);
}

/* The program ends while another thread writes the capture: say so, and take its temporary folder
 * away (kp_capture_out_abort) unless that thread stays inside a file write for KP_CLC_READY_NS
 * (then the folder may be left, and the line says where). */
static void kp_clc_exit_writing(void)
{
    uint64_t t0 = kp_now_ns();
    unsigned nap = 50;
    int locked = 0;
    for (;;) {
        locked = pthread_mutex_trylock(&kp_clc_out_lock) == 0;
        if (locked || kp_now_ns() - t0 >= KP_CLC_READY_NS) break;
        kp_clc_nap(&nap);
    }
    kp_clc_job *job = atomic_load(&kp_clc_writing);
    if (!job || (locked && job->abandoned)) {
        if (locked) pthread_mutex_unlock(&kp_clc_out_lock);
        return; /* done (or failed) and announced by its thread, or committing now */
    }
    kp_capture *c = calloc(1, sizeof *c);
    if (!c) {
        if (locked) pthread_mutex_unlock(&kp_clc_out_lock);
        return;
    }
    kp_capture_init(c);
    kp_capture_out *out = NULL;
    if (locked) {
        snprintf(c->api, sizeof c->api, "opencl");
        snprintf(c->kernel, sizeof c->kernel, "%s", job->c.kernel);
        snprintf(c->symbol, sizeof c->symbol, "%s", job->c.symbol);
        c->launch = job->c.launch;
        c->select = job->c.select;
        job->abandoned = 1;
        out = job->out;
        job->out = NULL;
        atomic_store(&kp_clc_writing, NULL);
        pthread_mutex_unlock(&kp_clc_out_lock);
    } else {
        /* job's fields are being written only in its folder's files: its names are set */
        snprintf(c->api, sizeof c->api, "opencl");
        snprintf(c->kernel, sizeof c->kernel, "%s", job ? job->c.kernel : kp_clc.pattern.glob);
        snprintf(c->symbol, sizeof c->symbol, "%s", c->kernel);
        c->launch = job ? job->c.launch : 0;
        c->select = kp_clc.pattern.select;
    }
    kp_capture_out_abort(out);
    kp_error err = {0};
    char folder[256];
    kp_capture_folder_name(c->kernel, c->launch, folder, sizeof folder);
    if (locked)
        kp_error_set(&err, KPROF_BACKEND,
                     "the program ended while the capture of launch %llu was being written: "
                     "nothing was written",
                     (unsigned long long)c->launch);
    else
        kp_error_set(&err, KPROF_BACKEND,
                     "the program ended while the capture of launch %llu was being written, "
                     "inside a file write: its temporary folder (.%s.tmp-%ld in %s) may be "
                     "left; remove it",
                     (unsigned long long)c->launch, folder, (long)getpid(), kp_clc.dir);
    kp_capture_announce(c, NULL, &err);
    kp_error_clear(&err);
    kp_capture_release(c);
    free(c);
}

/* A capture that was asked for and never happened, or is still being written, said at exit. */
static void kp_clc_exit(void)
{
    KP_CLC_WRITE();
    int chosen = kp_clc.chosen;
    kp_clc.chosen = 1; /* from here on the tables are this function's alone */
    KP_CLC_DONE();
    if (chosen) {
        kp_clc_exit_writing();
        return;
    }
    if (!atomic_load(&kp_clc_on)) return;
    atomic_store(&kp_clc_on, 0);
    const kp_capture_pattern *p = &kp_clc.pattern;
    uint64_t most = 0, total = 0;
    const char *busiest = NULL;
    for (size_t i = 0; i < kp_clc.nnames; i++) {
        uint64_t n = atomic_load(&kp_clc.names[i].launches);
        total += n;
        if (n > most) {
            most = n;
            busiest = kp_clc.names[i].text;
        }
    }
    kp_capture *c = calloc(1, sizeof *c);
    if (!c) return;
    kp_capture_init(c);
    snprintf(c->api, sizeof c->api, "opencl");
    snprintf(c->kernel, sizeof c->kernel, "%s", busiest ? busiest : p->glob);
    snprintf(c->symbol, sizeof c->symbol, "%s", c->kernel);
    c->launch = p->select == KP_CAPTURE_SLOWEST ? kp_clc.slowest_launch : p->nth;
    c->select = p->select;
    kp_error err = {0};
    if (total == 0)
        kp_error_set(&err, KPROF_NOT_FOUND, "no OpenCL kernel matching '%s' was launched", p->glob);
    else if (p->select != KP_CAPTURE_SLOWEST)
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "'%s' was launched %llu time%s: there was no launch %llu to capture", busiest,
                     (unsigned long long)most, most == 1 ? "" : "s", (unsigned long long)p->nth);
    else if (!kp_clc.have_slowest)
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "none of the %llu launches of kernels matching '%s' in the %g s window "
                     "could be timed (their queues give no profiling times)",
                     (unsigned long long)kp_clc.window_launches, p->glob, p->window_s);
    else {
        snprintf(c->kernel, sizeof c->kernel, "%s", kp_clc.names[kp_clc.slowest_name].text);
        snprintf(c->symbol, sizeof c->symbol, "%s", c->kernel);
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "the slowest launch in the %g s window was launch %llu of '%s' (%lld ns), "
                     "and no launch of it with the same geometry came after the window",
                     p->window_s, (unsigned long long)kp_clc.slowest_launch, c->kernel,
                     (long long)kp_clc.slowest_ns);
    }
    kp_capture_announce(c, NULL, &err);
    kp_error_clear(&err);
    kp_capture_release(c);
    free(c);
}

void kp_clc_init(void)
{
    kp_error err = {0};
    int asked = kp_capture_pattern_env(&kp_clc.pattern, &err);
    if (asked < 0) {
        fprintf(stderr, "kprof: error: --capture: %s; nothing is captured\n", err.message);
        kp_error_clear(&err);
        return;
    }
    if (asked == 0) return;
    const char *dir = getenv(KP_ENV_CAPTURE_DIR);
    if (dir && *dir) {
        snprintf(kp_clc.dir, sizeof kp_clc.dir, "%s", dir);
    } else {
        const char *home = getenv(KP_ENV_HOME);
        snprintf(kp_clc.dir, sizeof kp_clc.dir, "%s/kernels", home && *home ? home : ".kprof");
    }
    const char *force = getenv(KP_ENV_CAPTURE_FORCE);
    kp_clc.replace = force && strcmp(force, "1") == 0;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, kp_clc_atfork_once);
    kp_writer_at_exit(kp_clc_exit);
    atomic_store(&kp_clc_on, 1);
}

/* ---- memory objects and kernels ---- */

void kp_clc_mem_created(cl_mem mem, size_t size, int kind)
{
    if (!mem) return;
    KP_CLC_WRITE();
    kp_clc_entry *e = kp_clc_put(&kp_clc.mems, mem); /* out of memory: read as a value later */
    if (e) {
        e->size = size;
        e->kind = kind;
    }
    KP_CLC_DONE();
}

void kp_clc_mem_releasing(cl_mem mem)
{
    cl_uint references = 0;
    if (!mem || !kp_cl_next.clGetMemObjectInfo ||
        kp_cl_next.clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof references, &references,
                                      NULL) != CL_SUCCESS ||
        references != 1)
        return;
    KP_CLC_WRITE();
    kp_clc_entry *e = kp_clc_find(&kp_clc.mems, mem);
    if (e) kp_clc_remove(&kp_clc.mems, e);
    KP_CLC_DONE();
}

void kp_clc_user_event(int made)
{
    if (made) {
        atomic_fetch_add(&kp_clc.user_unset, 1);
        return;
    }
    int n = atomic_load(&kp_clc.user_unset); /* one made before the capture was on: not counted */
    while (n > 0 && !atomic_compare_exchange_weak(&kp_clc.user_unset, &n, n - 1))
        ;
}

/* CL_KERNEL_FUNCTION_NAME on the heap; NULL when it cannot be read. */
static char *kp_clc_kernel_name(cl_kernel kernel)
{
    size_t len = 0;
    if (!kp_cl_next.clGetKernelInfo ||
        kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
        return NULL;
    char *text = malloc(len + 1);
    if (!text) return NULL;
    if (kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, len, text, NULL) !=
        CL_SUCCESS) {
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

void kp_clc_kernel_created(cl_kernel kernel)
{
    if (!kernel) return;
    char *name = kp_clc_kernel_name(kernel);
    int match = name && kp_capture_match(&kp_clc.pattern, name, NULL);
    KP_CLC_WRITE();
    kp_clc_entry *e = kp_clc_find(&kp_clc.kernels, kernel);
    if (e) kp_clc_drop_kernel_locked(e); /* that kernel is gone: its address is reused */
    if (match && !kp_clc.chosen) {
        uint32_t slot = kp_clc_name_locked(name);
        kp_clc_kernel *k = slot == UINT32_MAX ? NULL : calloc(1, sizeof *k);
        e = k ? kp_clc_put(&kp_clc.kernels, kernel) : NULL;
        if (e) {
            k->name = slot;
            e->value = k;
            atomic_store_explicit(&kp_clc.matching, kp_clc.kernels.live, memory_order_relaxed);
        } else {
            free(k); /* out of memory: this kernel goes unseen */
        }
    }
    KP_CLC_DONE();
    free(name);
}

void kp_clc_kernel_cloned(cl_kernel from, cl_kernel kernel)
{
    if (!kernel) return;
    KP_CLC_WRITE();
    kp_clc_entry *e = kp_clc_find(&kp_clc.kernels, kernel);
    if (e) kp_clc_drop_kernel_locked(e);
    kp_clc_entry *src = kp_clc_find(&kp_clc.kernels, from);
    if (src && !kp_clc.chosen) {
        kp_clc_kernel *k = malloc(sizeof *k);
        if (k && kp_clc_kernel_copy(k, src->value) == 0 &&
            (e = kp_clc_put(&kp_clc.kernels, kernel)) != NULL) {
            e->value = k;
            atomic_store_explicit(&kp_clc.matching, kp_clc.kernels.live, memory_order_relaxed);
        } else if (k) {
            kp_clc_kernel_free(k);
            free(k);
        }
    }
    KP_CLC_DONE();
}

void kp_clc_kernel_releasing(cl_kernel kernel)
{
    cl_uint references = 0;
    if (!atomic_load_explicit(&kp_clc.matching, memory_order_relaxed) || !kernel ||
        kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof references,
                                   &references, NULL) != CL_SUCCESS ||
        references != 1)
        return;
    KP_CLC_WRITE();
    kp_clc_entry *e = kp_clc_find(&kp_clc.kernels, kernel);
    if (e) kp_clc_drop_kernel_locked(e);
    KP_CLC_DONE();
}

/* Keep argument index of kernel as kind with size bytes (value NULL: none). */
static void kp_clc_keep_arg(cl_kernel kernel, cl_uint index, int kind, size_t size,
                            const void *value)
{
    if (!atomic_load_explicit(&kp_clc.matching, memory_order_relaxed)) return;
    KP_CLC_READ(); /* a kernel's arguments are set by one thread at a time (OpenCL) */
    kp_clc_entry *e = kp_clc_find(&kp_clc.kernels, kernel);
    kp_clc_kernel *k = e ? e->value : NULL;
    if (!k) goto done;
    if (index >= KP_CAPTURE_MAX_ARGS || size > UINT32_MAX) {
        k->too_many = 1;
        goto done;
    }
    if (index >= k->nargs) {
        kp_clc_arg *args = realloc(k->args, (index + 1) * sizeof *args);
        if (!args) goto done;
        memset(args + k->nargs, 0, (index + 1 - k->nargs) * sizeof *args);
        k->args = args;
        k->nargs = index + 1;
    }
    kp_clc_arg *a = &k->args[index];
    if (value && size > a->cap) {
        unsigned char *bytes = realloc(a->bytes, size);
        if (!bytes) {
            a->kind = 0; /* unknown now: a capture of this kernel fails saying so */
            goto done;
        }
        a->bytes = bytes;
        a->cap = (uint32_t)size;
    }
    if (value && size) memcpy(a->bytes, value, size);
    a->kind = (unsigned char)kind;
    a->size = (uint32_t)size;
done:
    KP_CLC_DONE();
}

void kp_clc_arg_set(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    kp_clc_keep_arg(kernel, index, value ? KP_CLC_ARG_VALUE : KP_CLC_ARG_LOCAL, size, value);
}

void kp_clc_arg_svm(cl_kernel kernel, cl_uint index, const void *pointer)
{
    kp_clc_keep_arg(kernel, index, KP_CLC_ARG_SVM, sizeof pointer, &pointer);
}

/* ---- the capture ---- */

/* A fixed-size answer of clGetKernelArgInfo; 0 when the runtime has none (built without
 * -cl-kernel-arg-info, say). */
static int kp_clc_arg_info(cl_kernel kernel, cl_uint i, cl_kernel_arg_info what, void *out,
                           size_t n)
{
    size_t got = 0;
    if (!kp_cl_next.clGetKernelArgInfo ||
        kp_cl_next.clGetKernelArgInfo(kernel, i, what, n, out, &got) != CL_SUCCESS)
        return 0;
    return 1;
}

/* The launch's arguments, as the program set them, into c (allocations for the buffers). */
static kprof_status kp_clc_args(kp_clc_job *job, cl_kernel kernel)
{
    kp_capture *c = &job->c;
    kp_error *err = &job->err;
    kp_clc_kernel *k = &job->args;
    if (k->too_many)
        return kp_error_set(err, KPROF_INVALID,
                            "the program set an argument index past %d, kprof's limit",
                            KP_CAPTURE_MAX_ARGS - 1);
    cl_uint n = 0;
    if (kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL) != CL_SUCCESS)
        n = k->nargs;
    if (n > KP_CAPTURE_MAX_ARGS)
        return kp_error_set(err, KPROF_INVALID, "the kernel has %u arguments, over kprof's %d", n,
                            KP_CAPTURE_MAX_ARGS);
    uint64_t local_bytes = 0;
    for (cl_uint i = 0; i < n; i++) {
        const kp_clc_arg *a = i < k->nargs ? &k->args[i] : NULL;
        if (!a || !a->kind)
            return kp_error_set(err, KPROF_INVALID,
                                "argument %u of the launch was never set (or could not be kept)",
                                i);
        char name[64] = "";
        if (!kp_clc_arg_info(kernel, i, CL_KERNEL_ARG_NAME, name, sizeof name) || !name[0])
            snprintf(name, sizeof name, "arg%u", i);
        name[sizeof name - 1] = '\0';
        cl_kernel_arg_address_qualifier space = 0;
        kp_clc_arg_info(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, &space, sizeof space);
        char type[256] = "";
        kp_clc_arg_info(kernel, i, CL_KERNEL_ARG_TYPE_NAME, type, sizeof type);
        type[sizeof type - 1] = '\0';
        int pointer =
            space == CL_KERNEL_ARG_ADDRESS_GLOBAL || space == CL_KERNEL_ARG_ADDRESS_CONSTANT;
        int idx;
        if (a->kind == KP_CLC_ARG_LOCAL && pointer) {
            /* a NULL arg_value for a buffer argument: a NULL buffer, passed as zero bytes */
            static const unsigned char zero[sizeof(cl_mem)];
            if (a->size != sizeof(cl_mem))
                return kp_error_set(err, KPROF_INVALID,
                                    "argument %u (%s) is a buffer set with %u bytes", i, name,
                                    a->size);
            idx = kp_capture_add_value(c, zero, a->size, err);
        } else if (a->kind == KP_CLC_ARG_LOCAL) {
            idx = kp_capture_add_local(c, a->size, err);
            local_bytes += a->size;
        } else if (a->kind == KP_CLC_ARG_SVM) {
            idx = kp_capture_add_value(c, a->bytes, a->size, err);
            kp_capture_missing(c,
                               "argument %u (%s): the memory behind an SVM pointer "
                               "(clSetKernelArgSVMPointer)",
                               i, name);
        } else {
            cl_mem mem = NULL;
            int kind = 0, j = -1;
            uint64_t size = 0;
            if (a->size == sizeof mem) {
                memcpy(&mem, a->bytes, sizeof mem);
                for (int m = 0; m < c->nallocs && j < 0 && mem; m++)
                    if (job->mems[m] == mem) j = m;
            }
            if (j >= 0) {
                kind = KP_CLC_BUFFER; /* already an allocation (and retained) */
            } else if (a->size == sizeof mem) {
                /* Retained under the lock, before another thread's last release can remove it
                 * (kp_clc_mem_releasing writes): the copies read it until the capture ends. */
                KP_CLC_READ();
                const kp_clc_entry *e = kp_clc_find(&kp_clc.mems, mem);
                if (e) {
                    kind = e->kind;
                    size = e->size;
                    if (kind == KP_CLC_BUFFER && (!kp_cl_next.clRetainMemObject ||
                                                  kp_cl_next.clRetainMemObject(mem) != CL_SUCCESS))
                        kind = 0;
                }
                KP_CLC_DONE();
            }
            if (kind == KP_CLC_BUFFER) {
                if (j < 0) {
                    /* A key of its own per buffer (OpenCL has no addresses; 0 in the manifest) */
                    j = kp_capture_add_alloc(c, (uint64_t)(c->nallocs + 1) << 40, size, (int)i,
                                             name, err);
                    if (j < 0) {
                        kp_cl_next.clReleaseMemObject(mem);
                        return err->status ? err->status : KPROF_INVALID;
                    }
                    job->mems[j] = mem;
                    snprintf(c->allocs[j].before, sizeof c->allocs[j].before, "alloc-%d.before", j);
                    snprintf(c->allocs[j].after, sizeof c->allocs[j].after, "alloc-%d.after", j);
                }
                idx = kp_capture_add_mem(c, j, err);
            } else {
                idx = kp_capture_add_value(c, a->bytes, a->size, err);
                static const unsigned char zero[sizeof(cl_mem)];
                if (kind)
                    kp_capture_missing(c, "argument %u (%s): %s", i, name,
                                       kind == KP_CLC_SUB_BUFFER
                                           ? "a sub-buffer (clCreateSubBuffer)"
                                       : kind == KP_CLC_IMAGE ? "an image"
                                                              : "a pipe");
                else if (strstr(type, "sampler_t"))
                    kp_capture_missing(c, "argument %u (%s): a sampler", i, name);
                else if (strstr(type, "image") || strstr(type, "pipe"))
                    kp_capture_missing(c, "argument %u (%s): a %s", i, name, type);
                else if (pointer && !(a->size == sizeof zero && !memcmp(a->bytes, zero, a->size)))
                    kp_capture_missing(c,
                                       "argument %u (%s): a memory object made where the layer "
                                       "did not see it",
                                       i, name);
            }
        }
        if (idx < 0) return err->status ? err->status : KPROF_INVALID;
    }
    c->dynamic_smem = local_bytes;
    return KPROF_OK;
}

/* The program's code for device: its source, else its binary for that device (heap, *len
 * bytes), and the code's kind and file in c. */
static kprof_status kp_clc_code(kp_clc_job *job, cl_kernel kernel, cl_device_id device,
                                unsigned char **code, size_t *len)
{
    kp_capture *c = &job->c;
    kp_error *err = &job->err;
    cl_program program = NULL;
    *code = NULL;
    *len = 0;
    if (kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof program, &program, NULL) !=
            CL_SUCCESS ||
        !program)
        return kp_error_set(err, KPROF_BACKEND, "the kernel's program cannot be read");
    size_t n = 0;
    if (kp_cl_next.clGetProgramInfo &&
        kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_SOURCE, 0, NULL, &n) == CL_SUCCESS &&
        n > 1) {
        unsigned char *text = malloc(n);
        if (!text) return kp_error_nomem(err);
        if (kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_SOURCE, n, text, NULL) != CL_SUCCESS) {
            free(text);
            return kp_error_set(err, KPROF_BACKEND, "the program's source cannot be read");
        }
        *code = text;
        *len = strnlen((const char *)text, n);
        snprintf(c->code_kind, sizeof c->code_kind, "opencl-source");
        snprintf(c->code_file, sizeof c->code_file, "kernel.cl");
    } else {
        cl_uint ndev = 0;
        if (!kp_cl_next.clGetProgramInfo ||
            kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev,
                                        NULL) != CL_SUCCESS ||
            ndev == 0 || ndev > 256)
            return kp_error_set(err, KPROF_BACKEND, "the program has no source and no devices");
        cl_device_id devs[256];
        size_t sizes[256];
        unsigned char *bins[256] = {0};
        if (kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_DEVICES, ndev * sizeof *devs, devs,
                                        NULL) != CL_SUCCESS ||
            kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, ndev * sizeof *sizes,
                                        sizes, NULL) != CL_SUCCESS)
            return kp_error_set(err, KPROF_BACKEND, "the program's binaries cannot be read");
        cl_uint d = 0;
        while (d < ndev && devs[d] != device)
            d++;
        if (d == ndev || sizes[d] == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "the program has no source, and no binary for the queue's device");
        bins[d] = malloc(sizes[d]);
        if (!bins[d]) return kp_error_nomem(err);
        if (kp_cl_next.clGetProgramInfo(program, CL_PROGRAM_BINARIES, ndev * sizeof *bins, bins,
                                        NULL) != CL_SUCCESS) {
            free(bins[d]);
            return kp_error_set(err, KPROF_BACKEND, "the program's binary cannot be read");
        }
        *code = bins[d];
        *len = sizes[d];
        snprintf(c->code_kind, sizeof c->code_kind, "opencl-binary");
        snprintf(c->code_file, sizeof c->code_file, "program.bin");
    }
    n = 0;
    if (kp_cl_next.clGetProgramBuildInfo &&
        kp_cl_next.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, 0, NULL, &n) ==
            CL_SUCCESS &&
        n > 0) {
        if (n > sizeof c->build_options) {
            free(*code);
            *code = NULL;
            return kp_error_set(err, KPROF_INVALID,
                                "the program's build options are longer than %zu bytes",
                                sizeof c->build_options - 1);
        }
        if (kp_cl_next.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_OPTIONS, n,
                                             c->build_options, NULL) != CL_SUCCESS)
            c->build_options[0] = '\0';
        c->build_options[sizeof c->build_options - 1] = '\0';
    }
    return KPROF_OK;
}

/* A write into the capture's folder (open: job->out made first), under kp_clc_out_lock; one the
 * exit hook gave up fails. */
static kprof_status kp_clc_write(kp_clc_job *job, int open, const char *file, const void *data,
                                 size_t len)
{
    pthread_mutex_lock(&kp_clc_out_lock);
    kprof_status st;
    if (job->abandoned) {
        st = kp_error_set(&job->err, KPROF_BACKEND, "the program ended during the capture");
    } else if (open) {
        char folder[256];
        kp_capture_folder_name(job->c.kernel, job->c.launch, folder, sizeof folder);
        st = kp_capture_out_open(kp_clc.dir, folder, &job->out, &job->err);
    } else {
        st = kp_capture_out_blob(job->out, file, data, len, &job->err);
    }
    pthread_mutex_unlock(&kp_clc_out_lock);
    return st;
}

/* Copy allocation j's bytes (after: its after-state) from the device into its file. A read the
 * runtime refuses is a not-captured line (the state's file name cleared), not a failure. */
static kprof_status kp_clc_copy(kp_clc_job *job, cl_command_queue queue, int j, int after)
{
    kp_capture *c = &job->c;
    kp_capture_alloc *a = &c->allocs[j];
    char *file = after ? a->after : a->before;
    if (!file[0]) return KPROF_OK;
    void *bytes = malloc(a->bytes ? a->bytes : 1);
    if (!bytes) {
        kp_capture_missing(c, "allocation %d (%s, %llu bytes): out of memory to copy it", j,
                           a->name, (unsigned long long)a->bytes);
        a->after[0] = '\0';
        if (!after) a->before[0] = '\0';
        return KPROF_OK;
    }
    cl_int rc = kp_cl_next.clEnqueueReadBuffer(queue, job->mems[j], CL_TRUE, 0, a->bytes, bytes, 0,
                                               NULL, NULL);
    if (rc != CL_SUCCESS) {
        kp_capture_missing(c,
                           "allocation %d (%s, %llu bytes): its %s-state, which the host may "
                           "not read (clEnqueueReadBuffer: OpenCL error %d)",
                           j, a->name, (unsigned long long)a->bytes, after ? "after" : "before",
                           (int)rc);
        free(bytes);
        a->after[0] = '\0';
        if (!after) a->before[0] = '\0';
        return KPROF_OK;
    }
    kprof_status st = kp_clc_write(job, 0, file, bytes, a->bytes);
    free(bytes);
    return st;
}

static void kp_clc_job_free(kp_clc_job *job)
{
    pthread_mutex_lock(&kp_clc_out_lock);
    if (atomic_load(&kp_clc_writing) == job) atomic_store(&kp_clc_writing, NULL);
    kp_capture_out *out = job->out;
    job->out = NULL;
    pthread_mutex_unlock(&kp_clc_out_lock);
    kp_capture_out_abort(out);
    for (int j = 0; j < KP_CAPTURE_MAX_ALLOCS; j++)
        if (job->mems[j]) kp_cl_next.clReleaseMemObject(job->mems[j]);
    kp_capture_release(&job->c);
    kp_clc_kernel_free(&job->args);
    kp_error_clear(&job->err);
    free(job);
}

/* The capture failed: nothing written, the failure announced (unless the exit hook gave it up and
 * said so). */
static void kp_clc_failed(kp_clc_job *job)
{
    pthread_mutex_lock(&kp_clc_out_lock);
    int abandoned = job->abandoned;
    pthread_mutex_unlock(&kp_clc_out_lock);
    if (!job->err.status) kp_error_set(&job->err, KPROF_BACKEND, "unknown failure");
    if (!abandoned) kp_capture_announce(&job->c, NULL, &job->err);
    kp_clc_job_free(job);
}

#define KP_CLC_NOT_READY                                                                           \
    "the launch's inputs were not ready: it waits on an event the program sets later"

/* Whether events[0..n) are all complete: 1 yes, 0 not yet, -1 one failed (err set). */
static int kp_clc_complete(cl_uint n, const cl_event *events, kp_error *err)
{
    int all = 1;
    for (cl_uint i = 0; i < n; i++) {
        cl_int status = CL_COMPLETE;
        if (kp_cl_next.clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                      &status, NULL) != CL_SUCCESS) {
            kp_error_set(err, KPROF_BACKEND, "an event the launch waits on cannot be read");
            return -1;
        }
        if (status < 0) {
            kp_error_set(err, KPROF_BACKEND,
                         "a command the launch waits on failed (OpenCL error %d): there is "
                         "nothing to capture",
                         (int)status);
            return -1;
        }
        if (status != CL_COMPLETE) all = 0;
    }
    return all;
}

/* Wait until what the launch waits on (wait_list) and everything before it on queue are done,
 * without blocking the program for good: a user event in the wait list not set yet fails at
 * once; while any user event is unset, at most KP_CLC_READY_NS of polling; else a plain wait. */
static kprof_status kp_clc_ready(cl_command_queue queue, cl_uint num_events,
                                 const cl_event *wait_list, kp_error *err)
{
    if (!wait_list) num_events = 0;
    for (cl_uint i = 0; i < num_events; i++) {
        cl_command_type type = 0;
        cl_int status = CL_COMPLETE;
        if (kp_cl_next.clGetEventInfo(wait_list[i], CL_EVENT_COMMAND_TYPE, sizeof type, &type,
                                      NULL) == CL_SUCCESS &&
            type == CL_COMMAND_USER &&
            kp_cl_next.clGetEventInfo(wait_list[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                                      sizeof status, &status, NULL) == CL_SUCCESS &&
            status > CL_COMPLETE)
            return kp_error_set(err, KPROF_INVALID,
                                KP_CLC_NOT_READY " (a user event in its wait list, not set yet)");
    }
    /* Markers: the wait list's, then one after everything before the launch on the queue (an
     * out-of-order queue's marker with a wait list waits for that list alone). */
    cl_event first = NULL, all = NULL;
    cl_int rc = CL_INVALID_OPERATION;
    if (kp_cl_next.clEnqueueMarkerWithWaitList) {
        rc = num_events
                 ? kp_cl_next.clEnqueueMarkerWithWaitList(queue, num_events, wait_list, &first)
                 : CL_SUCCESS;
        if (rc == CL_SUCCESS) rc = kp_cl_next.clEnqueueMarkerWithWaitList(queue, 0, NULL, &all);
        if (first) kp_cl_next.clReleaseEvent(first);
    }
    if (rc != CL_SUCCESS) {
        /* No markers (OpenCL 1.1): the wait list and clFinish, which only user events can hold
         * up for good. */
        if (atomic_load(&kp_clc.user_unset) > 0)
            return kp_error_set(err, KPROF_INVALID,
                                "the program has user events not set yet, and the runtime has no "
                                "clEnqueueMarkerWithWaitList to tell whether the launch waits "
                                "on them");
        if (num_events && kp_cl_next.clWaitForEvents(num_events, wait_list) != CL_SUCCESS)
            return kp_error_set(err, KPROF_BACKEND, "the launch's wait list failed");
        rc = kp_cl_next.clFinish(queue);
        if (rc != CL_SUCCESS)
            return kp_error_set(err, KPROF_BACKEND, "clFinish before the launch: OpenCL error %d",
                                (int)rc);
        return KPROF_OK;
    }
    kp_cl_next.clFlush(queue);
    kprof_status st = KPROF_OK;
    uint64_t t0 = kp_now_ns();
    unsigned nap = 20;
    for (;;) {
        int done = kp_clc_complete(1, &all, err);
        if (done < 0) {
            st = err->status;
            break;
        }
        if (done) break;
        if (atomic_load(&kp_clc.user_unset) <= 0) {
            /* Nothing only the program can complete is pending: what is left is real work. */
            if (kp_cl_next.clWaitForEvents(1, &all) != CL_SUCCESS &&
                kp_clc_complete(1, &all, err) >= 0)
                kp_error_set(err, KPROF_BACKEND, "the wait before the launch failed");
            st = err->status;
            break;
        }
        if (kp_now_ns() - t0 >= KP_CLC_READY_NS) {
            st = kp_error_set(err, KPROF_INVALID,
                              KP_CLC_NOT_READY
                              " (a command before it on its queue, or in its "
                              "wait list, was not done after %g s while the program has a user "
                              "event not set)",
                              (double)KP_CLC_READY_NS / 1e9);
            break;
        }
        kp_clc_nap(&nap);
    }
    kp_cl_next.clReleaseEvent(all);
    return st;
}

/* Everything up to the program's launch; KPROF_OK or job->err set. */
static kprof_status kp_clc_before(kp_clc_job *job, const kp_clc_launch *l, cl_kernel kernel,
                                  cl_uint num_events, const cl_event *wait_list)
{
    kp_capture *c = &job->c;
    kp_error *err = &job->err;
    cl_command_queue queue = l->queue;
    kprof_status st = kp_clc_ready(queue, num_events, wait_list, err);
    if (st != KPROF_OK) return st;
    cl_device_id device = NULL;
    if (kp_cl_next.clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, NULL) !=
        CL_SUCCESS)
        return kp_error_set(err, KPROF_BACKEND, "the launch's queue has no device");
    if (kp_cl_next.clGetDeviceInfo &&
        kp_cl_next.clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof c->device, c->device, NULL) !=
            CL_SUCCESS)
        c->device[0] = '\0';
    c->device[sizeof c->device - 1] = '\0';
    kp_command_line(c->command, sizeof c->command);
    c->pid = (int64_t)getpid();
    c->dims = (int)l->dims;
    for (int d = 0; d < 3; d++) {
        c->grid[d] = l->global[d];
        c->tg[d] = l->local[d];
        c->offset[d] = l->offset[d];
    }
    size_t wg = 0;
    cl_ulong local = 0, priv = 0;
    if (kp_cl_next.clGetKernelWorkGroupInfo) {
        if (kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE,
                                                sizeof wg, &wg, NULL) == CL_SUCCESS)
            c->max_threads = (int64_t)wg;
        if (kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_LOCAL_MEM_SIZE,
                                                sizeof local, &local, NULL) == CL_SUCCESS)
            c->static_smem = (int64_t)local;
        if (kp_cl_next.clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_PRIVATE_MEM_SIZE,
                                                sizeof priv, &priv, NULL) == CL_SUCCESS)
            c->local_bytes = (int64_t)priv;
    }
    st = kp_clc_args(job, kernel);
    if (st != KPROF_OK) return st;
    unsigned char *code = NULL;
    size_t len = 0;
    st = kp_clc_code(job, kernel, device, &code, &len);
    if (st != KPROF_OK) return st;
    st = kp_clc_write(job, 1, NULL, NULL, 0);
    if (st == KPROF_OK) st = kp_clc_write(job, 0, c->code_file, code, len);
    free(code);
    for (int j = 0; j < c->nallocs && st == KPROF_OK; j++) {
        kp_capture_alloc *a = &c->allocs[j];
        a->address = 0;
        if (a->bytes > kp_clc.pattern.max_bytes) {
            kp_capture_missing(c,
                               "allocation %d (%s): %llu bytes, over --capture-max-bytes "
                               "(%llu)",
                               j, a->name, (unsigned long long)a->bytes,
                               (unsigned long long)kp_clc.pattern.max_bytes);
            a->before[0] = a->after[0] = '\0';
            continue;
        }
        if (!kp_clc.pattern.after) a->after[0] = '\0';
        st = kp_clc_copy(job, queue, j, 0);
    }
    return st;
}

/* The first launch after the window: wait (at most KP_CLC_READY_NS) for the window's timing
 * callbacks still due, then fix the slowest. */
static void kp_clc_settle(void)
{
    uint64_t t0 = kp_now_ns();
    unsigned nap = 20;
    while (atomic_load(&kp_clc.timing) > 0 && kp_now_ns() - t0 < KP_CLC_READY_NS)
        kp_clc_nap(&nap);
    atomic_store(&kp_clc.settled, 1);
}

/* Whether launch l has the slowest one's name and geometry (caller holds kp_clc.lock). */
static int kp_clc_is_slowest(const kp_clc_launch *l)
{
    return kp_clc.have_slowest && l->name == kp_clc.slowest_name &&
           l->dims == kp_clc.slowest_dims &&
           !memcmp(l->global, kp_clc.slowest_global, sizeof l->global) &&
           !memcmp(l->local, kp_clc.slowest_local, sizeof l->local) &&
           !memcmp(l->offset, kp_clc.slowest_offset, sizeof l->offset);
}

int kp_clc_launch_begin(kp_clc_launch *l, cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                        const size_t *offset, const size_t *global, const size_t *local,
                        cl_uint num_events, const cl_event *wait_list)
{
    memset(l, 0, sizeof *l);
    if (!atomic_load_explicit(&kp_clc.matching, memory_order_relaxed)) return 0;
    l->queue = queue;
    l->dims = dims;
    for (cl_uint d = 0; d < 3; d++) {
        l->global[d] = global && d < dims ? global[d] : 1;
        l->local[d] = local ? (d < dims ? local[d] : 1) : 0;
        l->offset[d] = offset && d < dims ? offset[d] : 0;
    }
    const kp_capture_pattern *p = &kp_clc.pattern;
    /* Counted under the read lock; a candidate for the capture is decided under the write lock. */
    KP_CLC_READ();
    kp_clc_entry *e = kp_clc.chosen ? NULL : kp_clc_find(&kp_clc.kernels, kernel);
    if (!e) {
        KP_CLC_DONE();
        return 0;
    }
    kp_clc_kernel *k = e->value;
    l->name = k->name;
    l->launch = atomic_fetch_add(&kp_clc.names[k->name].launches, 1) + 1;
    int candidate = 0;
    if (p->select != KP_CAPTURE_SLOWEST) {
        candidate = l->launch == p->nth;
    } else {
        uint64_t now = kp_now_ns(), start = 0;
        if (atomic_compare_exchange_strong(&kp_clc.window_start, &start, now)) start = now;
        if (now < start || (double)(now - start) <= p->window_s * 1e9) {
            l->mode = KP_CLC_TIME;
            atomic_fetch_add(&kp_clc.window_launches, 1);
        } else {
            candidate = !atomic_load(&kp_clc.settled) || kp_clc_is_slowest(l);
        }
    }
    KP_CLC_DONE();
    if (!candidate) return l->mode;
    int slowest = p->select == KP_CAPTURE_SLOWEST;
    if (slowest && !atomic_load(&kp_clc.settled)) kp_clc_settle();
    kp_clc_job *job = NULL;
    int nomem = 0;
    KP_CLC_WRITE();
    e = kp_clc.chosen ? NULL : kp_clc_find(&kp_clc.kernels, kernel);
    if (e && (!slowest || kp_clc_is_slowest(l))) {
        k = e->value;
        kp_clc.chosen = 1;
        job = calloc(1, sizeof *job);
        if (job) {
            kp_capture_init(&job->c);
            if (kp_clc_kernel_copy(&job->args, k) != 0) nomem = 1;
            snprintf(job->c.kernel, sizeof job->c.kernel, "%s", kp_clc.names[k->name].text);
            job->c.slowest_ns = kp_clc.slowest_ns;
            job->c.slowest_launch = kp_clc.slowest_launch;
            job->c.window_launches = atomic_load(&kp_clc.window_launches);
        }
        l->mode = KP_CLC_CAPTURE;
    }
    KP_CLC_DONE();
    if (l->mode != KP_CLC_CAPTURE) return 0;
    atomic_store(&kp_clc_on, 0); /* one capture per run: nothing else is looked at */
    l->mode = 0;
    if (!job) {
        fprintf(stderr, "kprof: error: capture failed: out of memory\n");
        return 0;
    }
    kp_capture *c = &job->c;
    job->t0 = kp_now_ns();
    snprintf(c->api, sizeof c->api, "opencl");
    snprintf(c->symbol, sizeof c->symbol, "%s", c->kernel);
    c->launch = l->launch;
    c->select = p->select;
    c->after = p->after ? 1 : 0;
    if (p->select == KP_CAPTURE_SLOWEST) {
        c->window_s = p->window_s;
    } else {
        c->slowest_ns = 0;
        c->slowest_launch = c->window_launches = 0;
    }
    pthread_mutex_lock(&kp_clc_out_lock); /* from here the exit hook knows of it */
    atomic_store(&kp_clc_writing, job);
    pthread_mutex_unlock(&kp_clc_out_lock);
    if (nomem) kp_error_nomem(&job->err);
    if (nomem || kp_clc_before(job, l, kernel, num_events, wait_list) != KPROF_OK) {
        kp_clc_failed(job);
        return 0;
    }
    l->job = job;
    l->mode = KP_CLC_CAPTURE;
    return l->mode;
}

void kp_clc_launch_enqueued(kp_clc_launch *l, cl_int rc, cl_event event)
{
    if (l->mode && rc == CL_SUCCESS && event && kp_cl_next.clRetainEvent(event) == CL_SUCCESS)
        l->event = event;
}

/* A timed launch of the window is complete: its device time, and the slowest kept (runs on a
 * runtime thread, or in clSetEventCallback when it was already complete). */
static void CL_CALLBACK kp_clc_timed(cl_event event, cl_int status, void *data)
{
    kp_clc_timing *t = data;
    cl_ulong start = 0, end = 0;
    if (status == CL_COMPLETE &&
        kp_cl_next.clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                           NULL) == CL_SUCCESS &&
        kp_cl_next.clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                           NULL) == CL_SUCCESS &&
        end >= start) {
        int64_t ns = (int64_t)(end - start);
        KP_CLC_WRITE();
        if (!kp_clc.chosen && !atomic_load(&kp_clc.settled) &&
            (!kp_clc.have_slowest || ns > kp_clc.slowest_ns)) {
            kp_clc.have_slowest = 1;
            kp_clc.slowest_ns = ns;
            kp_clc.slowest_name = t->name;
            kp_clc.slowest_launch = t->launch;
            kp_clc.slowest_dims = t->dims;
            memcpy(kp_clc.slowest_global, t->global, sizeof t->global);
            memcpy(kp_clc.slowest_local, t->local, sizeof t->local);
            memcpy(kp_clc.slowest_offset, t->offset, sizeof t->offset);
        }
        KP_CLC_DONE();
    }
    kp_cl_next.clReleaseEvent(event);
    free(t);
    atomic_fetch_sub(&kp_clc.timing, 1);
}

/* Time a launch of the window when it completes, without waiting for it here. */
static void kp_clc_time(kp_clc_launch *l)
{
    cl_event event = l->event;
    l->event = NULL;
    if (!event) return;
    kp_clc_timing *t = kp_cl_next.clSetEventCallback ? malloc(sizeof *t) : NULL;
    if (t) {
        *t = (kp_clc_timing){.name = l->name, .launch = l->launch, .dims = l->dims};
        memcpy(t->global, l->global, sizeof t->global);
        memcpy(t->local, l->local, sizeof t->local);
        memcpy(t->offset, l->offset, sizeof t->offset);
        atomic_fetch_add(&kp_clc.timing, 1);
        if (kp_cl_next.clSetEventCallback(event, CL_COMPLETE, kp_clc_timed, t) == CL_SUCCESS)
            return; /* the callback releases the event */
        atomic_fetch_sub(&kp_clc.timing, 1);
        free(t);
    }
    kp_cl_next.clReleaseEvent(event); /* untimed */
}

void kp_clc_launch_finish(kp_clc_launch *l, cl_int rc)
{
    if (l->mode == KP_CLC_TIME) {
        kp_clc_time(l);
        return;
    }
    cl_event event = l->event;
    l->event = NULL;
    if (l->mode != KP_CLC_CAPTURE || !l->job) {
        if (event) kp_cl_next.clReleaseEvent(event);
        return;
    }
    kp_clc_job *job = l->job;
    kp_capture *c = &job->c;
    l->job = NULL;
    if (rc != CL_SUCCESS) {
        kp_error_set(&job->err, KPROF_BACKEND,
                     "the program's launch failed (OpenCL error %d): there is nothing to capture",
                     (int)rc);
        kp_clc_failed(job);
        return;
    }
    /* The launch's own event: what it waited on was complete, so this waits for it alone (a
     * clFinish would also wait for what other threads queued since). */
    cl_int frc = event ? kp_cl_next.clWaitForEvents(1, &event) : kp_cl_next.clFinish(l->queue);
    cl_int status = CL_COMPLETE;
    if (frc == CL_SUCCESS && event &&
        kp_cl_next.clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                  NULL) == CL_SUCCESS &&
        status < 0)
        frc = status;
    if (event) kp_cl_next.clReleaseEvent(event);
    if (frc != CL_SUCCESS) {
        kp_error_set(&job->err, KPROF_BACKEND, "waiting for the launch: OpenCL error %d", (int)frc);
        kp_clc_failed(job);
        return;
    }
    kprof_status st = KPROF_OK;
    for (int j = 0; j < c->nallocs && st == KPROF_OK; j++)
        st = kp_clc_copy(job, l->queue, j, 1);
    if (st != KPROF_OK) {
        kp_clc_failed(job);
        return;
    }
    c->held_ns = (int64_t)(kp_now_ns() - job->t0);
    char path[4096];
    pthread_mutex_lock(&kp_clc_out_lock);
    if (job->abandoned) {
        pthread_mutex_unlock(&kp_clc_out_lock);
        kp_clc_job_free(job); /* the exit hook said so */
        return;
    }
    kp_capture_out *out = job->out;
    job->out = NULL; /* commit frees the writer either way */
    st = kp_capture_out_commit(out, c, kp_clc.replace, path, sizeof path, &job->err);
    atomic_store(&kp_clc_writing, NULL); /* done, either way: announced below */
    pthread_mutex_unlock(&kp_clc_out_lock);
    if (st != KPROF_OK) {
        kp_clc_failed(job);
        return;
    }
    kp_capture_announce(c, path, NULL);
    kp_clc_job_free(job);
}
