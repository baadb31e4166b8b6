/*
 * launch.c — running kernels on the CUDA backend: a kernel of a loaded program, its reflection
 * (the driver's limits and attributes, occupancy at a launch and the resource that limits it),
 * device buffers and the copies to and from them, binding a SPEC's arguments, and dispatches.
 * Dispatches run on the device's one non-blocking stream and are timed with CUDA events around
 * each launch, or by CUPTI's kernel records for a batch — device timestamps, never host clocks.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cupti_timer.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The function whose symbol begins with `prefix`, when exactly one does: kp_kernel_meta keeps
 * 1023 bytes of a symbol, and C++ template symbols can be longer. */
static CUfunction kp_cuda_function_by_prefix(CUmodule module, const char *prefix)
{
    unsigned int n = 0;
    CUfunction *fns = NULL, found = NULL;
    int matches = 0;
    if (kp_cu.cuModuleGetFunctionCount(&n, module) != CUDA_SUCCESS || n == 0) goto done;
    fns = calloc(n, sizeof *fns);
    if (!fns || kp_cu.cuModuleEnumerateFunctions(fns, n, module) != CUDA_SUCCESS) goto done;
    for (unsigned int i = 0; i < n; i++) {
        const char *name = NULL;
        if (kp_cu.cuFuncGetName(&name, fns[i]) == CUDA_SUCCESS && name &&
            strncmp(name, prefix, strlen(prefix)) == 0) {
            found = fns[i];
            matches++;
        }
    }
done:
    free(fns);
    return matches == 1 ? found : NULL;
}

kprof_status kp_cuda_kernel_create(kp_program *prog, const kp_kernel_meta *meta, kp_kernel **out,
                                   kp_error *err)
{
    *out = NULL;
    kprof_status st = kp_cuda_enter(prog->dev, err);
    if (st != KPROF_OK) return st;
    CUfunction f = NULL;
    CUresult rc = kp_cu.cuModuleGetFunction(&f, prog->module, meta->symbol);
    if (rc == CUDA_ERROR_NOT_FOUND && strlen(meta->symbol) == sizeof meta->symbol - 1) {
        f = kp_cuda_function_by_prefix(prog->module, meta->symbol);
        if (f) rc = CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS) {
        char text[320];
        kp_cuda_error_text(rc, text, sizeof text);
        return kp_error_set(err, rc == CUDA_ERROR_NOT_FOUND ? KPROF_NOT_FOUND : KPROF_BACKEND,
                            "cuda: kernel %s (symbol %s) is not in the module: %s", meta->name,
                            meta->symbol, text);
    }
    kp_kernel *k = calloc(1, sizeof *k);
    if (!k) return kp_error_nomem(err);
    k->dev = prog->dev;
    k->program = prog;
    k->function = f;
    kp_strlcpy(k->name, meta->name, sizeof k->name);
    kp_strlcpy(k->symbol, meta->symbol, sizeof k->symbol);
    k->nparams = meta->nparams;
    k->tg_rule = meta->tg_rule;
    memcpy(k->tg_rule_size, meta->tg_rule_size, sizeof k->tg_rule_size);
    for (int i = 0; i < meta->nparams && i < KP_SPEC_MAX_ARGS && meta->params; i++)
        k->param_size[i] = meta->params[i].size;
    *out = k;
    return KPROF_OK;
}

void kp_cuda_kernel_release(kp_kernel *k)
{
    if (!k) return;
    free(k->cupti_ns);
    free(k->cupti_start);
    free(k->raw);
    free(k);
}

/* ---- reflection and occupancy ------------------------------------------------------------ */

static int kp_cuda_func_attr(CUfunction f, CUfunction_attribute what)
{
    int v = 0;
    if (kp_cu.cuFuncGetAttribute(&v, what, f) != CUDA_SUCCESS) return 0;
    return v;
}

/* Dynamic shared memory beyond the default 48 KiB must be asked for per kernel. */
static kprof_status kp_cuda_allow_dynamic_smem(kp_kernel *k, uint64_t bytes, kp_error *err)
{
    const kp_cuda_occ_device *o = &k->dev->occ;
    if (bytes <= k->dyn_limit || bytes <= o->smem_per_block) return KPROF_OK;
    uint64_t static_smem =
        (uint64_t)kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    uint64_t most =
        o->smem_per_block_optin > static_smem ? o->smem_per_block_optin - static_smem : 0;
    if (bytes > most)
        return kp_error_set(err, KPROF_INVALID,
                            "--smem %llu bytes is more than kernel %s can take: at most %llu "
                            "bytes of dynamic shared memory (%llu per block with opt-in, less "
                            "%llu static)",
                            (unsigned long long)bytes, k->name, (unsigned long long)most,
                            (unsigned long long)o->smem_per_block_optin,
                            (unsigned long long)static_smem);
    CUresult rc = kp_cu.cuFuncSetAttribute(
        k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
    if (rc != CUDA_SUCCESS) {
        char text[320];
        kp_cuda_error_text(rc, text, sizeof text);
        return kp_error_set(err, KPROF_INVALID,
                            "--smem %llu bytes: kernel %s cannot have that much dynamic shared "
                            "memory: %s",
                            (unsigned long long)bytes, k->name, text);
    }
    k->dyn_limit = bytes;
    return KPROF_OK;
}

kprof_status kp_cuda_reflect(kp_kernel *k, const kp_launch *launch, kp_reflection *r, kp_error *err)
{
    memset(r, 0, sizeof *r);
    kp_device *dev = k->dev;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) return st;
    int max_threads = 0;
    CUresult rc = kp_cu.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                           k->function);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuFuncGetAttribute", rc);
    /* The driver's number already holds __launch_bounds__/.maxntid/.reqntid (and registers);
     * the rule from the PTX or cubin says which of them it is, and the shape. */
    r->max_tg = (uint64_t)max_threads;
    r->tg_rule = k->tg_rule;
    memcpy(r->tg_rule_size, k->tg_rule_size, sizeof r->tg_rule_size);
    if (k->tg_rule == KP_TG_RULE_REQUIRED)
        r->tg_rule_from = ".reqntid";
    else if (k->tg_rule == KP_TG_RULE_MAX)
        r->tg_rule_from = "__launch_bounds__ / .maxntid";
    r->preferred_multiple = (uint64_t)dev->occ.warp_size;
    r->static_local = (uint64_t)kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    r->private_bytes = (uint64_t)kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    r->registers = kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_NUM_REGS);
    r->have_registers = 1;
    r->const_bytes = (uint64_t)kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
    r->ptx_version = kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_PTX_VERSION);
    r->binary_version = kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    /* kprof opts in to more than 48 KiB on its own, so the kernel's real ceiling is the
     * opt-in limit less its static shared memory. */
    uint64_t dyn_attr =
        (uint64_t)kp_cuda_func_attr(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    uint64_t optin = dev->occ.smem_per_block_optin;
    r->max_dynamic_local = optin > r->static_local ? optin - r->static_local : 0;
    if (dyn_attr > r->max_dynamic_local) r->max_dynamic_local = dyn_attr;

    uint64_t threads = kp_launch_tg_threads(launch);
    st = kp_cuda_allow_dynamic_smem(k, launch->dyn_local, err);
    if (st != KPROF_OK) return st;
    if (threads == 0 || threads > (uint64_t)max_threads) return KPROF_OK; /* refused later */
    int blocks = 0;
    rc = kp_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k->function, (int)threads,
                                                           (size_t)launch->dyn_local);
    if (rc != CUDA_SUCCESS) return KPROF_OK; /* occupancy is a bonus, not a requirement */
    kp_cuda_occ_kernel ko = {
        .max_threads = max_threads,
        .registers = r->registers,
        .static_smem = r->static_local,
        .max_dynamic_smem = (uint64_t)kp_cuda_func_attr(
            k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
    };
    kp_cuda_occ_limits limits;
    kp_cuda_occupancy_limits(&dev->occ, &ko, threads, launch->dyn_local, &limits);
    /* The driver's number wins; the arithmetic names the resource that sets it. */
    r->have_occupancy = 1;
    r->blocks_per_sm = blocks;
    r->occupancy = kp_cuda_occupancy_fraction(blocks, threads, dev->occ.warp_size,
                                              dev->occ.max_threads_per_sm);
    kp_strlcpy(r->limiter, kp_cuda_occupancy_limiter(&limits, blocks), sizeof r->limiter);
    return KPROF_OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

kprof_status kp_cuda_alloc(kp_device *dev, uint64_t bytes, kp_buffer **out, kp_error *err)
{
    *out = NULL;
    CUdeviceptr ptr = 0;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto fail;
    if (dev->global_mem && bytes > dev->global_mem) {
        st = kp_error_set(err, KPROF_NOMEM,
                          "cuda: a buffer of %llu bytes is larger than the device's memory (%llu "
                          "bytes)",
                          (unsigned long long)bytes, (unsigned long long)dev->global_mem);
        goto fail;
    }
    CUresult rc = kp_cu.cuMemAlloc(&ptr, (size_t)(bytes ? bytes : 1));
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        char text[320];
        kp_cuda_error_text(rc, text, sizeof text);
        ptr = 0;
        st = kp_error_set(err, KPROF_NOMEM, "cuda: cannot allocate %llu bytes of device memory: %s",
                          (unsigned long long)bytes, text);
        goto fail;
    }
    if (rc != CUDA_SUCCESS) {
        ptr = 0;
        st = kp_cuda_fail(dev, err, "cuMemAlloc", rc);
        goto fail;
    }
    kp_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        st = kp_error_nomem(err);
        goto fail;
    }
    b->dev = dev;
    b->ptr = ptr;
    b->bytes = bytes;
    *out = b;
    return KPROF_OK;
fail:
    if (ptr) kp_cu.cuMemFree(ptr);
    return st;
}

/* Copies go on kprof's own stream, so they are ordered with its kernels (a plain cuMemcpy runs
 * on the legacy stream, which a non-blocking stream does not wait for). */
kprof_status kp_cuda_write(kp_buffer *b, const void *src, uint64_t bytes, kp_error *err)
{
    kp_device *dev = b->dev;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK || bytes == 0) return st;
    CUresult rc = kp_cu.cuMemcpyHtoDAsync(b->ptr, src, (size_t)bytes, dev->stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuStreamSynchronize(dev->stream);
    return rc == CUDA_SUCCESS ? KPROF_OK
                              : kp_cuda_fail(dev, err, "copying to the device (cuMemcpyHtoD)", rc);
}

kprof_status kp_cuda_read(kp_buffer *b, void *dst, uint64_t bytes, kp_error *err)
{
    kp_device *dev = b->dev;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK || bytes == 0) return st;
    CUresult rc = kp_cu.cuMemcpyDtoHAsync(dst, b->ptr, (size_t)bytes, dev->stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuStreamSynchronize(dev->stream);
    return rc == CUDA_SUCCESS
               ? KPROF_OK
               : kp_cuda_fail(dev, err, "copying from the device (cuMemcpyDtoH)", rc);
}

void kp_cuda_free(kp_buffer *b)
{
    if (!b) return;
    if (!b->dev->poisoned && kp_cu.cuCtxSetCurrent(b->dev->context) == CUDA_SUCCESS)
        kp_cu.cuMemFree(b->ptr);
    free(b);
}

/* ---- binding and dispatch ---------------------------------------------------------------- */

kprof_status kp_cuda_bind(kp_kernel *k, const kp_spec *spec, kp_buffer *const *buffers,
                          kp_error *err)
{
    k->bound = 0;
    if (k->nparams >= 0 && spec->count != k->nparams)
        return kp_error_set(err, KPROF_INVALID, "--buffers has %d item%s but %s takes %d",
                            spec->count, spec->count == 1 ? "" : "s", k->name, k->nparams);
    for (int i = 0; i < spec->count && i < KP_SPEC_MAX_ARGS; i++) {
        const kp_arg_spec *a = &spec->args[i];
        uint32_t want = i < k->nparams ? k->param_size[i] : 0;
        size_t have = 0;
        switch (a->kind) {
        case KP_ARG_LOCAL:
            return kp_error_set(err, KPROF_INVALID,
                                "--buffers item %d '%s': CUDA kernels take no local-memory "
                                "arguments; give dynamic shared memory with --smem BYTES "
                                "(extern __shared__ in the kernel) and drop the item",
                                i + 1, a->text);
        case KP_ARG_BUFFER:
            if (!buffers || !buffers[i])
                return kp_error_set(err, KPROF_INVALID,
                                    "cuda: --buffers item %d '%s' has no buffer to bind", i + 1,
                                    a->text);
            have = sizeof(CUdeviceptr);
            k->values[i] = (uint64_t)buffers[i]->ptr;
            break;
        case KP_ARG_SCALAR:
            have = kp_type_size(a->type);
            k->values[i] = 0;
            memcpy(&k->values[i], a->value, have);
            break;
        }
        /* The driver copies as many bytes as the parameter has: never let it read past ours. */
        if (want && want != have)
            return kp_error_set(err, KPROF_INVALID,
                                "--buffers item %d '%s' passes %zu bytes but parameter %d of %s "
                                "takes %u",
                                i + 1, a->text, have, i + 1, k->name, want);
        k->args[i] = &k->values[i];
    }
    k->bound = 1;
    return KPROF_OK;
}

/* A captured launch's parameters: the captured bytes of each, every device address inside them
 * (kp_raw_ptr) replaced by the new buffer's address plus the captured offset, a whole-buffer
 * argument (KP_RAW_BUFFER) by the buffer's address; kernelParams[i] points at parameter i in
 * one heap block the kernel keeps (cuLaunchKernel copies from it at each launch). */
kprof_status kp_cuda_bind_capture(kp_kernel *k, const kp_raw_args *args, kp_buffer *const *buffers,
                                  kp_error *err)
{
    k->bound = 0;
    if (args->nargs > KP_SPEC_MAX_ARGS)
        return kp_error_set(err, KPROF_INVALID,
                            "cuda: the capture has %d arguments; kprof binds at most %d",
                            args->nargs, KP_SPEC_MAX_ARGS);
    if (k->nparams >= 0 && args->nargs != k->nparams)
        return kp_error_set(err, KPROF_INVALID,
                            "cuda: the capture has %d argument%s but %s takes %d", args->nargs,
                            args->nargs == 1 ? "" : "s", k->name, k->nparams);
    size_t off[KP_SPEC_MAX_ARGS], total = 0;
    for (int i = 0; i < args->nargs; i++) {
        const kp_raw_arg *a = &args->args[i];
        uint32_t size = a->kind == KP_RAW_BUFFER ? (uint32_t)sizeof(CUdeviceptr) : a->size;
        if (a->kind == KP_RAW_LOCAL)
            return kp_error_set(err, KPROF_INVALID,
                                "cuda: captured argument %d of %s is local memory, which CUDA "
                                "kernels do not take",
                                i + 1, k->name);
        uint32_t want = i < k->nparams ? k->param_size[i] : 0;
        if (want && want != size)
            return kp_error_set(err, KPROF_INVALID,
                                "cuda: captured argument %d passes %u bytes but parameter %d of "
                                "%s takes %u",
                                i + 1, (unsigned)size, i + 1, k->name, (unsigned)want);
        off[i] = total;
        total += ((size_t)size + 15) & ~(size_t)15;
    }
    unsigned char *raw = calloc(1, total ? total : 1);
    if (!raw) return kp_error_nomem(err);
    for (int i = 0; i < args->nargs; i++) {
        const kp_raw_arg *a = &args->args[i];
        if (a->kind == KP_RAW_BUFFER) {
            if (!buffers || a->buffer < 0 || !buffers[a->buffer]) {
                free(raw);
                return kp_error_set(err, KPROF_INVALID,
                                    "cuda: captured argument %d of %s has no buffer to bind", i + 1,
                                    k->name);
            }
            uint64_t addr = (uint64_t)buffers[a->buffer]->ptr;
            memcpy(raw + off[i], &addr, sizeof addr);
        } else if (a->size && a->bytes) {
            memcpy(raw + off[i], a->bytes, a->size);
        }
    }
    for (int p = 0; p < args->nptrs; p++) {
        const kp_raw_ptr *q = &args->ptrs[p];
        if ((int)q->arg >= args->nargs || args->args[q->arg].kind != KP_RAW_VALUE ||
            (uint64_t)q->at + 8 > args->args[q->arg].size || !buffers || !buffers[q->buffer]) {
            free(raw);
            return kp_error_set(err, KPROF_INVALID,
                                "cuda: captured pointer %d (argument %u, byte %u) is outside its "
                                "argument or names no buffer",
                                p + 1, (unsigned)q->arg + 1, (unsigned)q->at);
        }
        uint64_t addr = (uint64_t)buffers[q->buffer]->ptr + q->offset;
        memcpy(raw + off[q->arg] + q->at, &addr, sizeof addr);
    }
    free(k->raw);
    k->raw = raw;
    for (int i = 0; i < args->nargs; i++)
        k->args[i] = raw + off[i];
    k->bound = 1;
    return KPROF_OK;
}

/* A launch or wait error: faults poison the device; refused configurations are INVALID. */
static kprof_status kp_cuda_kernel_error(kp_kernel *k, CUresult rc, kp_error *err)
{
    char text[320];
    kp_cuda_error_text(rc, text, sizeof text);
    switch (kp_cuda_result_status(rc)) {
    case KPROF_FAULT:
        kp_cuda_poison(k->dev, text);
        return kp_error_set(err, KPROF_FAULT, "kernel %s faulted: %s", k->name, text);
    case KPROF_INVALID:
        return kp_error_set(err, KPROF_INVALID, "cuda: the device refused to launch %s: %s%s",
                            k->name, text,
                            rc == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                                ? " (too many registers for this threadgroup size: try a "
                                  "smaller --tg)"
                                : "");
    case KPROF_NOMEM:
        return kp_error_set(err, KPROF_NOMEM, "cuda: kernel %s: %s", k->name, text);
    default:
        return kp_error_set(err, KPROF_BACKEND, "cuda: kernel %s failed: %s", k->name, text);
    }
}

typedef struct kp_cuda_waiter {
    CUevent ev;
    CUresult rc;
} kp_cuda_waiter;

/* kp_poll_until's poll: 1 done, -1 failed (result in rc), 0 still running. */
static int kp_cuda_event_poll(void *ctx)
{
    kp_cuda_waiter *w = ctx;
    w->rc = kp_cu.cuEventQuery(w->ev);
    return w->rc == CUDA_SUCCESS ? 1 : w->rc == CUDA_ERROR_NOT_READY ? 0 : -1;
}

static kprof_status kp_cuda_wait(kp_kernel *k, double timeout_s, kp_error *err)
{
    kp_device *dev = k->dev;
    if (timeout_s <= 0) {
        CUresult rc = kp_cu.cuEventSynchronize(dev->end);
        return rc == CUDA_SUCCESS ? KPROF_OK : kp_cuda_kernel_error(k, rc, err);
    }
    kp_cuda_waiter w = {dev->end, CUDA_SUCCESS};
    int r = kp_poll_until(kp_cuda_event_poll, &w, timeout_s);
    if (r == 1) return KPROF_OK;
    if (r < 0) return kp_cuda_kernel_error(k, w.rc, err);
    return kp_error_set(err, KPROF_TIMEOUT,
                        "kernel %s is still running after %g s (--timeout); kprof stopped waiting",
                        k->name, timeout_s);
}

/* Everything a dispatch needs before its launch, checked once for any number of them: the
 * context current, the arguments bound, blocks and threads per dimension within the device's
 * limits, the dynamic shared memory allowed. */
static kprof_status kp_cuda_prepare(kp_kernel *k, const kp_launch *l, unsigned int blocks[3],
                                    unsigned int threads[3], kp_error *err)
{
    kp_device *dev = k->dev;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) return st;
    if (!k->bound && k->nparams != 0)
        return kp_error_set(err, KPROF_INVALID, "cuda: kernel %s has no arguments bound", k->name);
    for (int d = 0; d < 3; d++)
        blocks[d] = threads[d] = 1;
    for (int d = 0; d < l->dims && d < 3; d++) {
        if (l->tg[d] == 0 || l->grid[d] == 0)
            return kp_error_set(err, KPROF_INVALID, "grid and tg must be at least 1");
        uint64_t b = (l->grid[d] + l->tg[d] - 1) / l->tg[d];
        if (l->tg[d] > (uint64_t)dev->occ.max_threads_per_block)
            return kp_error_set(err, KPROF_INVALID,
                                "tg %llu in dimension %c is above the device's %d threads per "
                                "block",
                                (unsigned long long)l->tg[d], "xyz"[d],
                                dev -> occ.max_threads_per_block);
        if (b > (uint64_t)(dev->max_grid[d] > 0 ? dev->max_grid[d] : 65535))
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu / tg %llu needs %llu blocks in dimension %c; the "
                                "device allows %d",
                                (unsigned long long)l->grid[d], (unsigned long long)l->tg[d],
                                (unsigned long long)b, "xyz"[d], dev -> max_grid[d]);
        blocks[d] = (unsigned int)b;
        threads[d] = (unsigned int)l->tg[d];
    }
    return kp_cuda_allow_dynamic_smem(k, l->dyn_local, err);
}

/* One prepared launch between two events, waited for: its GPU time in ns, rounded to the
 * nanosecond (the events' own resolution is about 0.5 us) so that a span holds it exactly. Events
 * carry no timestamps: span (may be NULL) starts at the host clock read just before the launch
 * and lasts that GPU time. The dispatch path. */
static kprof_status kp_cuda_launch_timed(kp_kernel *k, const kp_launch *l,
                                         const unsigned int blocks[3],
                                         const unsigned int threads[3], double *gpu_ns,
                                         kp_dispatch_span *span, kp_error *err)
{
    kp_device *dev = k->dev;
    int64_t host_start = span ? (int64_t)kp_now_ns() : 0; /* read only when a span is asked */
    CUresult rc = kp_cu.cuEventRecord(dev->start, dev->stream);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuEventRecord", rc);
    rc = kp_cu.cuLaunchKernel(k->function, blocks[0], blocks[1], blocks[2], threads[0], threads[1],
                              threads[2], (unsigned int)l->dyn_local, dev->stream, k->args, NULL);
    if (rc != CUDA_SUCCESS) return kp_cuda_kernel_error(k, rc, err);
    rc = kp_cu.cuEventRecord(dev->end, dev->stream);
    if (rc != CUDA_SUCCESS) return kp_cuda_kernel_error(k, rc, err);
    kprof_status st = kp_cuda_wait(k, l->timeout_s, err);
    if (st != KPROF_OK) return st;
    float ms = 0;
    rc = kp_cu.cuEventElapsedTime(&ms, dev->start, dev->end);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(dev, err, "cuEventElapsedTime", rc);
    *gpu_ns = round((double)ms * 1e6);
    if (span) *span = kp_dispatch_span_at(host_start, *gpu_ns);
    return KPROF_OK;
}

kprof_status kp_cuda_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns,
                              kp_dispatch_span *span, kp_error *err)
{
    unsigned int blocks[3], threads[3];
    kprof_status st = kp_cuda_prepare(k, l, blocks, threads, err);
    return st == KPROF_OK ? kp_cuda_launch_timed(k, l, blocks, threads, gpu_ns, span, err) : st;
}

#define KP_CUPTI_CONCURRENT_BLOCKS_PER_SM 128
#define KP_CUPTI_CHUNK                    16384

/* n dispatches timed by CUPTI kernel records (the GPU's own start/end of each kernel), or by
 * the events around each launch when CUPTI cannot be had or is not asked for. */
kprof_status kp_cuda_dispatch_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns,
                                    kp_dispatch_span *spans, char *timer, size_t timer_n,
                                    kp_error *err)
{
    char why[400] = "";
    int cupti = 0;
    unsigned int blocks[3], threads[3];
    kprof_status st = kp_cuda_prepare(k, l, blocks, threads, err);
    if (st != KPROF_OK) return st;
    /* CUPTI's concurrent-kernel records cost time per block (on an H200: +0.2 us at 16K
     * blocks, +3 us at 64K, +100 us at 1.5M); its serialized records cost ~0.5 us per kernel
     * whatever the grid. Small grids get the first, large grids the second (bench/fidelity.py
     * --blocks-probe measures the crossover). */
    uint64_t total_blocks = (uint64_t)blocks[0] * blocks[1] * blocks[2];
    int concurrent = total_blocks <= (uint64_t)KP_CUPTI_CONCURRENT_BLOCKS_PER_SM *
                                         (uint64_t)(k->dev->sm_count > 0 ? k->dev->sm_count : 1);
    if (l->timer != KP_TIMER_EVENTS) {
        kp_error enable = {0};
        if (kp_cupti_timer_enable(concurrent, &enable) == KPROF_OK) cupti = 1;
        kp_strlcpy(why, enable.message, sizeof why);
        kp_error_clear(&enable);
        if (!cupti && l->timer == KP_TIMER_CUPTI)
            return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: --timer cupti: %s", why);
    }
    if (cupti && k->cupti_capacity < n) {
        double *p = realloc(k->cupti_ns, (size_t)n * sizeof *p);
        if (p) k->cupti_ns = p;
        uint64_t *q = p ? realloc(k->cupti_start, (size_t)n * sizeof *q) : NULL;
        if (!q) return kp_error_nomem(err);
        k->cupti_start = q;
        k->cupti_capacity = n;
    }
    if (cupti) kp_cupti_timer_take(k->symbol, k->cupti_ns, NULL, 0, NULL); /* drop older ones */
    /* Records are drained every KP_CUPTI_CHUNK dispatches, well inside the timer's ring. */
    int got = 0;
    uint64_t dropped = 0, lost = 0;
    for (int done = 0; done < n;) {
        int chunk = n - done < KP_CUPTI_CHUNK ? n - done : KP_CUPTI_CHUNK;
        for (int i = done; i < done + chunk; i++) {
            st = kp_cuda_launch_timed(k, l, blocks, threads, &gpu_ns[i], spans ? &spans[i] : NULL,
                                      err);
            if (st != KPROF_OK) return st;
        }
        if (cupti) {
            got += kp_cupti_timer_take(k->symbol, k->cupti_ns + got, k->cupti_start + got,
                                       done + chunk - got, &lost);
            dropped += lost;
        }
        done += chunk;
    }
    if (!cupti) {
        if (l->timer == KP_TIMER_EVENTS)
            snprintf(timer, timer_n, "events");
        else
            snprintf(timer, timer_n, "events (CUPTI: %s)", why);
        return KPROF_OK;
    }
    if (got != n) {
        if (l->timer == KP_TIMER_CUPTI)
            return kp_error_set(err, KPROF_BACKEND,
                                "cuda: CUPTI delivered %d kernel records for %d dispatches of %s "
                                "(%llu dropped)",
                                got, n, k->name, (unsigned long long)dropped);
        snprintf(timer, timer_n, "events (CUPTI delivered %d of %d records)", got, n);
        return KPROF_OK;
    }
    memcpy(gpu_ns, k->cupti_ns, (size_t)n * sizeof *gpu_ns);
    /* The records' own start, on kprof's clock (cupti_timer.h), replaces the host's guess. */
    for (int i = 0; spans && i < n; i++)
        spans[i] = kp_dispatch_span_at((int64_t)k->cupti_start[i], gpu_ns[i]);
    snprintf(timer, timer_n, "cupti (%s kernel records)", kp_cupti_timer_kind());
    return KPROF_OK;
}
