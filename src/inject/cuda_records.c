/*
 * cuda_records.c — CUPTI activity records as kp_rec (see cuda_records.h). Runs for every
 * record, so it neither allocates nor locks; the names it returns are string literals.
 */
#include "inject/cuda_records.h"

#include <stdio.h>
#include <string.h>

/* "_v" followed by digits and nothing else. */
static int kp_is_version_suffix(const char *s)
{
    if (s[0] != '_' || s[1] != 'v' || !s[2]) return 0;
    for (s += 2; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

size_t kp_cuda_trace_api_name(const char *cupti_name, char *out, size_t out_n)
{
    if (!out_n) return 0;
    snprintf(out, out_n, "%s", cupti_name ? cupti_name : "");
    size_t len = strlen(out);
    /* Suffixes stack ("cudaMemcpy_ptds_v7000", "cuMemcpyHtoD_v2_ptds"): peel until none is
     * left, and never peel a name down to nothing. */
    for (;;) {
        if (len > 5 &&
            (strcmp(out + len - 5, "_ptds") == 0 || strcmp(out + len - 5, "_ptsz") == 0)) {
            len -= 5;
            out[len] = '\0';
            continue;
        }
        char *underscore = strrchr(out, '_');
        if (underscore && underscore != out && kp_is_version_suffix(underscore)) {
            *underscore = '\0';
            len = (size_t)(underscore - out);
            continue;
        }
        return len;
    }
}

/* CUPTI's copy kinds: kprof's direction and the name the report shows. */
static const struct {
    uint32_t direction;
    const char *name;
} kp_copy_kinds[] = {
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOD] = {KP_COPY_HTOD, "[CUDA memcpy HtoD]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOH] = {KP_COPY_DTOH, "[CUDA memcpy DtoH]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOA] = {KP_COPY_HTOD, "[CUDA memcpy HtoA]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOH] = {KP_COPY_DTOH, "[CUDA memcpy AtoH]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOA] = {KP_COPY_DTOD, "[CUDA memcpy AtoA]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_ATOD] = {KP_COPY_DTOD, "[CUDA memcpy AtoD]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOA] = {KP_COPY_DTOD, "[CUDA memcpy DtoA]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_DTOD] = {KP_COPY_DTOD, "[CUDA memcpy DtoD]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_HTOH] = {KP_COPY_HTOH, "[CUDA memcpy HtoH]"},
    [CUPTI_ACTIVITY_MEMCPY_KIND_PTOP] = {KP_COPY_PEER, "[CUDA memcpy PtoP]"},
};

static int kp_copy_kind_known(uint32_t copy_kind)
{
    return copy_kind < sizeof kp_copy_kinds / sizeof kp_copy_kinds[0] &&
           kp_copy_kinds[copy_kind].name;
}

uint32_t kp_cuda_trace_copy_direction(uint32_t copy_kind)
{
    return kp_copy_kind_known(copy_kind) ? kp_copy_kinds[copy_kind].direction : KP_COPY_UNKNOWN;
}

const char *kp_cuda_trace_copy_name(uint32_t copy_kind)
{
    return kp_copy_kind_known(copy_kind) ? kp_copy_kinds[copy_kind].name : "[CUDA memcpy]";
}

const char *kp_cuda_trace_sync_name(uint32_t sync_type)
{
    switch (sync_type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
        return "[sync: event]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        return "[sync: stream wait event]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
        return "[sync: stream]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
        return "[sync: context]";
    default:
        return "[sync]";
    }
}

const char *kp_cuda_trace_overhead_name(uint32_t overhead_kind)
{
    switch (overhead_kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "[CUPTI overhead: driver compiler]";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "[CUPTI overhead: buffer flush]";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "[CUPTI overhead: instrumentation]";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "[CUPTI overhead: resource]";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
        return "[CUPTI overhead: module loading]";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
        return "[CUPTI overhead: lazy function loading]";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
        return "[CUPTI overhead: command buffer full]";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
        return "[CUPTI overhead: activity buffer request]";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
        return "[CUPTI overhead: unified memory tracing setup]";
    default:
        return "[CUPTI overhead]";
    }
}

static uint32_t kp_non_negative(int32_t v)
{
    return v > 0 ? (uint32_t)v : 0;
}

/* What every timed record starts with: 1, or 0 when CUPTI left it untimed (both times 0: no
 * record, and no failure). */
static int kp_rec_timed(kp_rec *r, uint16_t kind, uint64_t start, uint64_t end,
                        uint64_t correlation)
{
    memset(r, 0, sizeof *r);
    if (start == 0 && end == 0) return 0;
    r->kind = kind;
    r->start = start;
    r->end = end;
    r->correlation = correlation;
    return 1;
}

int kp_cuda_trace_kernel(const CUpti_ActivityKernel10 *k, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_KERNEL, k->start, k->end, k->correlationId)) return 0;
    r->queued = k->queued;
    r->submitted = k->submitted;
    r->device = k->deviceId;
    r->stream = k->streamId;
    r->grid[0] = k->gridX;
    r->grid[1] = k->gridY;
    r->grid[2] = k->gridZ;
    r->block[0] = k->blockX;
    r->block[1] = k->blockY;
    r->block[2] = k->blockZ;
    r->registers = k->registersPerThread;
    r->static_smem = kp_non_negative(k->staticSharedMemory);
    r->dynamic_smem = kp_non_negative(k->dynamicSharedMemory);
    r->local_mem = k->localMemoryPerThread;
    return 1;
}

int kp_cuda_trace_api(const CUpti_ActivityAPI *a, int driver, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_API, a->start, a->end, a->correlationId)) return 0;
    r->domain = driver ? KP_DOMAIN_CUDA_DRIVER : KP_DOMAIN_CUDA_RUNTIME;
    r->tid = a->threadId;
    r->status = (int32_t)a->returnValue;
    return 1;
}

int kp_cuda_trace_memcpy(const CUpti_ActivityMemcpy6 *m, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_MEMCPY, m->start, m->end, m->correlationId)) return 0;
    r->device = m->deviceId;
    r->stream = m->streamId;
    r->bytes = m->bytes;
    r->aux = kp_cuda_trace_copy_direction(m->copyKind);
    return 1;
}

int kp_cuda_trace_memset(const CUpti_ActivityMemset4 *m, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_MEMSET, m->start, m->end, m->correlationId)) return 0;
    r->device = m->deviceId;
    r->stream = m->streamId;
    r->bytes = m->bytes;
    return 1;
}

int kp_cuda_trace_sync(const CUpti_ActivitySynchronization2 *s, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_SYNC, s->start, s->end, s->correlationId)) return 0;
    r->stream = s->streamId; /* CUPTI_SYNCHRONIZATION_INVALID_VALUE for a context wait */
    r->status = (int32_t)s->returnValue;
    return 1;
}

uint32_t kp_cuda_trace_object_thread(CUpti_ActivityObjectKind kind,
                                     const CUpti_ActivityObjectKindId *id)
{
    return kind == CUPTI_ACTIVITY_OBJECT_THREAD ? id->pt.threadId : 0;
}

int kp_cuda_trace_overhead(const CUpti_ActivityOverhead3 *o, kp_rec *r)
{
    if (!kp_rec_timed(r, KP_REC_OVERHEAD, o->start, o->end, o->correlationId)) return 0;
    r->aux = (uint32_t)o->overheadKind;
    r->tid = kp_cuda_trace_object_thread(o->objectKind, &o->objectId);
    switch (o->objectKind) {
    case CUPTI_ACTIVITY_OBJECT_DEVICE:
    case CUPTI_ACTIVITY_OBJECT_CONTEXT:
        r->device = o->objectId.dcs.deviceId;
        break;
    case CUPTI_ACTIVITY_OBJECT_STREAM:
        r->device = o->objectId.dcs.deviceId;
        r->stream = o->objectId.dcs.streamId;
        break;
    default:
        break;
    }
    return 1;
}

void kp_cuda_trace_context_learn(kp_cuda_trace_contexts *t, uint32_t context, uint32_t device)
{
    uint32_t key = context + 1;
    if (key == 0) return; /* CUPTI_INVALID_CONTEXT_ID */
    for (int i = 0; i < KP_CUDA_TRACE_CONTEXTS; i++) {
        if (t->context[i] == key) {
            t->device[i] = device;
            return;
        }
        if (t->context[i] == 0) {
            t->context[i] = key;
            t->device[i] = device;
            return;
        }
    }
}

uint32_t kp_cuda_trace_context_device(const kp_cuda_trace_contexts *t, uint32_t context)
{
    uint32_t key = context + 1;
    for (int i = 0; i < KP_CUDA_TRACE_CONTEXTS && t->context[i]; i++)
        if (t->context[i] == key) return t->device[i];
    return 0;
}
