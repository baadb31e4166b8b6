/*
 * opencl_capture.c — the OpenCL side of `kprof trace --capture PATTERN[@N|@slowest]` (issue 26;
 * opencl_capture.h says what the layer calls when): one kernel launch of the traced program
 * written out as a capture folder (collect/capture.h) that `kprof run/bench/sweep NAME@N`
 * replays.
 *
 * What it keeps while a capture is asked for (all under kp_clc.lock):
 *   - every memory object the program makes (clCreateBuffer*, sub-buffers, images, pipes), with
 *     its size and kind, in a hash set: an 8-byte clSetKernelArg value that is one of them is a
 *     cl_mem, anything else is bytes passed by value;
 *   - every kernel object whose name matches the glob (matched once, at its creation), with a copy
 *     of each argument clSetKernelArg (or clSetKernelArgSVMPointer, clCloneKernel) gave it;
 *     kernels that do not match are not kept, so their launches cost one lookup that fails;
 *   - per matching name, how many launches it had: @N counts the launches of one name, whatever
 *     kernel objects of that name made them.
 *
 * The chosen launch (the first, @N, or for @slowest the first launch after the window of the name
 * and geometry of the slowest one seen in it): wait for what it waits on and clFinish its queue;
 * read the program's source (kernel.cl) or, without one, its binary for the queue's device
 * (program.bin), the build options, the kernel's work-group attributes, each argument (a value
 * with its bytes, a buffer as one allocation however many arguments pass it, __local memory with
 * its size) and the bytes of every buffer (blocking reads on the program's queue, straight to the
 * next layer's table: the trace does not see them); then the program's own launch, as it asked,
 * exactly once; clFinish; the buffers again (the after-states, unless --capture-no-after); the
 * folder committed and the result announced (kp_capture_announce). The program was held from the
 * first clFinish to the commit (held_ns). Any failure before the launch leaves the launch alone
 * and the folder unmade; a failure after it, the same folder unmade: kp_capture_out_abort, and the
 * announcement says why. One capture per run: once a launch is chosen nothing else is looked at.
 *
 * Geometry: grid is the global size (work-items per dimension), tg the local size, offset the
 * global offset; dims is the program's work_dim and unused dimensions are 1. A launch with no local
 * size (the runtime chose the work-groups) has tg 0 0 0: the replay passes NULL again, which on the
 * same runtime and device makes the same choice; it is not a missing item. dynamic_smem is the
 * sum of the __local arguments' sizes; attributes: static_smem CL_KERNEL_LOCAL_MEM_SIZE,
 * local_bytes CL_KERNEL_PRIVATE_MEM_SIZE, max_threads CL_KERNEL_WORK_GROUP_SIZE.
 *
 * Not captured (a not-captured line each, the rest captured): SVM pointers, sub-buffers, images,
 * pipes, samplers; a buffer over --capture-max-bytes or one the host may not read
 * (CL_MEM_HOST_NO_ACCESS: the read fails). Allocations in the manifest have address 0 (OpenCL has
 * no addresses); they are told apart here by their cl_mem.
 *
 * @slowest: the window starts at the first launch of a matching kernel (not at the program's start,
 * which may spend far longer than the window before its first kernel) and lasts window_s seconds.
 * Every matching launch inside it is timed from its event's CL_PROFILING_COMMAND_START/END (the
 * layer forces profiling on): the layer waits for it, so the window serialises those launches.
 * After the window, the next launch of the slowest one's name with the same global and local size
 * and offset is captured. A run that ends before such a launch, or before the launch @N, says so at
 * exit (kp_writer_at_exit), with nothing written.
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
#include <unistd.h>

atomic_int kp_clc_on;

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
    uint64_t launches;
} kp_clc_name;

/* The capture under way, between kp_clc_launch_begin and kp_clc_launch_finish. */
typedef struct kp_clc_job {
    kp_capture c;
    kp_capture_out *out;
    kp_error err;
    cl_mem mems[KP_CAPTURE_MAX_ALLOCS]; /* allocation j's buffer */
    kp_clc_kernel args;                 /* the kernel's arguments, copied at the launch */
    uint64_t t0;                        /* when the program's hold began */
} kp_clc_job;

static struct {
    pthread_mutex_t lock;
    kp_capture_pattern pattern;
    char dir[4096];
    int replace;
    kp_clc_table mems, kernels;
    atomic_size_t matching; /* kernels.live, read without the lock */
    kp_clc_name *names;
    size_t nnames, names_cap;
    int chosen; /* a launch was chosen for the capture (or the capture was given up) */
    /* @slowest */
    uint64_t window_start; /* ns; 0 before the first matching launch */
    uint64_t window_launches;
    int have_slowest;
    int64_t slowest_ns;
    uint32_t slowest_name;
    uint64_t slowest_launch;
    cl_uint slowest_dims;
    uint64_t slowest_global[3], slowest_local[3], slowest_offset[3];
} kp_clc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the hash sets (caller holds kp_clc.lock) ---- */

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
    kp_clc.names[kp_clc.nnames] = (kp_clc_name){.text = copy};
    return (uint32_t)kp_clc.nnames++;
}

/* ---- the environment, fork, exit ---- */

static void kp_clc_child(void)
{
    atomic_store(&kp_clc_on, 0);
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    kp_clc.lock = fresh;
}

static void kp_clc_atfork_once(void)
{
    pthread_atfork(NULL, NULL, kp_clc_child);
}

/* A capture that was asked for and never happened, said at exit. */
static void kp_clc_exit(void)
{
    if (!atomic_load(&kp_clc_on)) return;
    pthread_mutex_lock(&kp_clc.lock);
    int chosen = kp_clc.chosen;
    kp_clc.chosen = 1; /* from here on the tables are this function's alone */
    pthread_mutex_unlock(&kp_clc.lock);
    if (chosen) return;
    atomic_store(&kp_clc_on, 0);
    const kp_capture_pattern *p = &kp_clc.pattern;
    uint64_t most = 0, total = 0;
    const char *busiest = NULL;
    for (size_t i = 0; i < kp_clc.nnames; i++) {
        total += kp_clc.names[i].launches;
        if (kp_clc.names[i].launches > most) {
            most = kp_clc.names[i].launches;
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
    pthread_mutex_lock(&kp_clc.lock);
    kp_clc_entry *e = kp_clc_put(&kp_clc.mems, mem); /* out of memory: read as a value later */
    if (e) {
        e->size = size;
        e->kind = kind;
    }
    pthread_mutex_unlock(&kp_clc.lock);
}

void kp_clc_mem_releasing(cl_mem mem)
{
    cl_uint references = 0;
    if (!mem || !kp_cl_next.clGetMemObjectInfo ||
        kp_cl_next.clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof references, &references,
                                      NULL) != CL_SUCCESS ||
        references != 1)
        return;
    pthread_mutex_lock(&kp_clc.lock);
    kp_clc_entry *e = kp_clc_find(&kp_clc.mems, mem);
    if (e) kp_clc_remove(&kp_clc.mems, e);
    pthread_mutex_unlock(&kp_clc.lock);
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
    pthread_mutex_lock(&kp_clc.lock);
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
    pthread_mutex_unlock(&kp_clc.lock);
    free(name);
}

void kp_clc_kernel_cloned(cl_kernel from, cl_kernel kernel)
{
    if (!kernel) return;
    pthread_mutex_lock(&kp_clc.lock);
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
    pthread_mutex_unlock(&kp_clc.lock);
}

void kp_clc_kernel_releasing(cl_kernel kernel)
{
    cl_uint references = 0;
    if (!atomic_load_explicit(&kp_clc.matching, memory_order_relaxed) || !kernel ||
        kp_cl_next.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof references,
                                   &references, NULL) != CL_SUCCESS ||
        references != 1)
        return;
    pthread_mutex_lock(&kp_clc.lock);
    kp_clc_entry *e = kp_clc_find(&kp_clc.kernels, kernel);
    if (e) kp_clc_drop_kernel_locked(e);
    pthread_mutex_unlock(&kp_clc.lock);
}

/* Keep argument index of kernel as kind with size bytes (value NULL: none). */
static void kp_clc_keep_arg(cl_kernel kernel, cl_uint index, int kind, size_t size,
                            const void *value)
{
    if (!atomic_load_explicit(&kp_clc.matching, memory_order_relaxed)) return;
    pthread_mutex_lock(&kp_clc.lock);
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
    pthread_mutex_unlock(&kp_clc.lock);
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
            int kind = 0;
            uint64_t size = 0;
            if (a->size == sizeof mem) {
                memcpy(&mem, a->bytes, sizeof mem);
                pthread_mutex_lock(&kp_clc.lock);
                const kp_clc_entry *e = kp_clc_find(&kp_clc.mems, mem);
                if (e) {
                    kind = e->kind;
                    size = e->size;
                }
                pthread_mutex_unlock(&kp_clc.lock);
            }
            if (kind == KP_CLC_BUFFER) {
                int j = -1;
                for (int m = 0; m < c->nallocs && j < 0; m++)
                    if (job->mems[m] == mem) j = m;
                if (j < 0) {
                    /* A key of its own per buffer (OpenCL has no addresses; 0 in the manifest) */
                    j = kp_capture_add_alloc(c, (uint64_t)(c->nallocs + 1) << 40, size, (int)i,
                                             name, err);
                    if (j < 0) return err->status ? err->status : KPROF_INVALID;
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
    kprof_status st = kp_capture_out_blob(job->out, file, bytes, a->bytes, &job->err);
    free(bytes);
    return st;
}

static void kp_clc_job_free(kp_clc_job *job)
{
    kp_capture_out_abort(job->out);
    kp_capture_release(&job->c);
    kp_clc_kernel_free(&job->args);
    kp_error_clear(&job->err);
    free(job);
}

/* The capture failed: nothing written, the failure announced. */
static void kp_clc_failed(kp_clc_job *job)
{
    if (!job->err.status) kp_error_set(&job->err, KPROF_BACKEND, "unknown failure");
    kp_capture_announce(&job->c, NULL, &job->err);
    kp_clc_job_free(job);
}

/* Everything up to the program's launch; KPROF_OK or job->err set. */
static kprof_status kp_clc_before(kp_clc_job *job, const kp_clc_launch *l, cl_kernel kernel,
                                  cl_uint num_events, const cl_event *wait_list)
{
    kp_capture *c = &job->c;
    kp_error *err = &job->err;
    cl_command_queue queue = l->queue;
    /* What the launch waits for is part of its before-state: a user event the program has not
     * completed yet would make this wait forever. */
    if (num_events && wait_list) {
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
                                    "the launch waits on a user event the program has not set "
                                    "yet: its inputs are not ready to copy");
        }
        if (kp_cl_next.clWaitForEvents(num_events, wait_list) != CL_SUCCESS)
            return kp_error_set(err, KPROF_BACKEND, "the launch's wait list failed");
    }
    cl_int rc = kp_cl_next.clFinish(queue);
    if (rc != CL_SUCCESS)
        return kp_error_set(err, KPROF_BACKEND, "clFinish before the launch: OpenCL error %d",
                            (int)rc);
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
    kprof_status st = kp_clc_args(job, kernel);
    if (st != KPROF_OK) return st;
    unsigned char *code = NULL;
    size_t len = 0;
    st = kp_clc_code(job, kernel, device, &code, &len);
    if (st != KPROF_OK) return st;
    char folder[256];
    kp_capture_folder_name(c->kernel, c->launch, folder, sizeof folder);
    st = kp_capture_out_open(kp_clc.dir, folder, &job->out, err);
    if (st == KPROF_OK) st = kp_capture_out_blob(job->out, c->code_file, code, len, err);
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
    kp_clc_job *job = NULL;
    int nomem = 0;
    pthread_mutex_lock(&kp_clc.lock);
    kp_clc_entry *e = kp_clc.chosen ? NULL : kp_clc_find(&kp_clc.kernels, kernel);
    if (!e) {
        pthread_mutex_unlock(&kp_clc.lock);
        return 0;
    }
    kp_clc_kernel *k = e->value;
    const kp_capture_pattern *p = &kp_clc.pattern;
    l->name = k->name;
    l->launch = ++kp_clc.names[k->name].launches;
    if (p->select != KP_CAPTURE_SLOWEST) {
        if (l->launch == p->nth) l->mode = KP_CLC_CAPTURE;
    } else {
        uint64_t now = kp_now_ns();
        if (!kp_clc.window_start) kp_clc.window_start = now;
        if ((double)(now - kp_clc.window_start) <= p->window_s * 1e9) {
            l->mode = KP_CLC_TIME;
            kp_clc.window_launches++;
        } else if (kp_clc.have_slowest && k->name == kp_clc.slowest_name &&
                   l->dims == kp_clc.slowest_dims &&
                   !memcmp(l->global, kp_clc.slowest_global, sizeof l->global) &&
                   !memcmp(l->local, kp_clc.slowest_local, sizeof l->local) &&
                   !memcmp(l->offset, kp_clc.slowest_offset, sizeof l->offset)) {
            l->mode = KP_CLC_CAPTURE;
        }
    }
    if (l->mode == KP_CLC_CAPTURE) {
        kp_clc.chosen = 1;
        job = calloc(1, sizeof *job);
        if (job) {
            kp_capture_init(&job->c);
            if (kp_clc_kernel_copy(&job->args, k) != 0) nomem = 1;
            snprintf(job->c.kernel, sizeof job->c.kernel, "%s", kp_clc.names[k->name].text);
            job->c.slowest_ns = kp_clc.slowest_ns;
            job->c.slowest_launch = kp_clc.slowest_launch;
            job->c.window_launches = kp_clc.window_launches;
        }
    }
    pthread_mutex_unlock(&kp_clc.lock);
    if (l->mode != KP_CLC_CAPTURE) return l->mode;
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
    if (l->mode == KP_CLC_TIME && rc == CL_SUCCESS && event &&
        kp_cl_next.clRetainEvent(event) == CL_SUCCESS)
        l->event = event;
}

/* A timed launch of the window: its device time, and the slowest kept. */
static void kp_clc_timed(kp_clc_launch *l)
{
    if (!l->event) return;
    cl_ulong start = 0, end = 0;
    if (kp_cl_next.clWaitForEvents(1, &l->event) == CL_SUCCESS &&
        kp_cl_next.clGetEventProfilingInfo(l->event, CL_PROFILING_COMMAND_START, sizeof start,
                                           &start, NULL) == CL_SUCCESS &&
        kp_cl_next.clGetEventProfilingInfo(l->event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                           NULL) == CL_SUCCESS &&
        end >= start) {
        int64_t ns = (int64_t)(end - start);
        pthread_mutex_lock(&kp_clc.lock);
        if (!kp_clc.chosen && (!kp_clc.have_slowest || ns > kp_clc.slowest_ns)) {
            kp_clc.have_slowest = 1;
            kp_clc.slowest_ns = ns;
            kp_clc.slowest_name = l->name;
            kp_clc.slowest_launch = l->launch;
            kp_clc.slowest_dims = l->dims;
            memcpy(kp_clc.slowest_global, l->global, sizeof l->global);
            memcpy(kp_clc.slowest_local, l->local, sizeof l->local);
            memcpy(kp_clc.slowest_offset, l->offset, sizeof l->offset);
        }
        pthread_mutex_unlock(&kp_clc.lock);
    }
    kp_cl_next.clReleaseEvent(l->event);
    l->event = NULL;
}

void kp_clc_launch_finish(kp_clc_launch *l, cl_int rc)
{
    if (l->mode == KP_CLC_TIME) {
        kp_clc_timed(l);
        return;
    }
    if (l->mode != KP_CLC_CAPTURE || !l->job) return;
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
    cl_int frc = kp_cl_next.clFinish(l->queue);
    if (frc != CL_SUCCESS) {
        kp_error_set(&job->err, KPROF_BACKEND, "clFinish after the launch: OpenCL error %d",
                     (int)frc);
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
    kp_capture_out *out = job->out;
    job->out = NULL; /* commit frees the writer either way */
    if (kp_capture_out_commit(out, c, kp_clc.replace, path, sizeof path, &job->err) != KPROF_OK) {
        kp_clc_failed(job);
        return;
    }
    kp_capture_announce(c, path, NULL);
    kp_clc_job_free(job);
}
