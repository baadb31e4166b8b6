/*
 * pcsample.c — PC sampling for the CUDA backend (kp_backend_ops.pc_sample, `kprof run --source`):
 * CUPTI's PC Sampling API (cupti_pcsampling.h, through runtime/cupti_pcsampling_api.h), kernels
 * serialized, over dispatches of one kernel made for the sampling alone; then each sampled PC
 * mapped to a source file and line through the program's cubin, whose line table -lineinfo put
 * there, with cuptiGetSassToSourceCorrelation (in libcupti itself since CUDA 11.3).
 *
 * The sequence, as cupti_pcsampling.h and NVIDIA's pc_sampling_start_stop sample give it:
 *   enable on the context; the stall reasons (how many, their names and indexes); configure
 *   (kernel-serialized collection, start/stop control, every stall reason, and the buffer
 *   CUPTI fills on its own); load the program's image again as a module of its own; start;
 *   the dispatches, each waited for and drained with GetData into a second buffer (CUPTI
 *   writes into the configured one by itself, so reading into it would overwrite records);
 *   stop; drain again; disable, after which CUPTI leaves what it still held in the configured
 *   buffer; unload the module. GetData is called until it returns no records and says none
 *   remain. A PC is kept once (core/pcsample.h) however many records name it, so the line
 *   mapping runs once per distinct PC.
 *
 * Why the module is loaded again: CUPTI learns a module's functions and cubin when the module
 * is loaded; the session's own module was loaded long before sampling was enabled (even
 * before CUPTI was), and a PC of a module CUPTI never saw loaded cannot be put in a function.
 * Loading the same image after enabling makes that certain, at the cost of one module load.
 * The kernel's arguments are the bound ones; module-scope variables start from the image's
 * initial values, as the session's did.
 *
 * Every CUPTI failure becomes UNAVAILABLE with CUPTI's words and, where kprof knows it, what
 * to do (permission, another profiler): --source is an extra, and the run goes on without it.
 * Strings CUPTI allocates for the records' function names are left to CUPTI's process: the
 * header says they may be shared with activity records, which kprof's CUPTI timer may still
 * be reading, so freeing them here could free a name in use.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "base/util.h"
#include "runtime/cupti_api.h"
#include "runtime/cupti_pcsampling_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_PCS_RECORDS     4096       /* PC records per buffer */
#define KP_PCS_SCRATCH     (8u << 20) /* CUPTI's own buffer: ~45000 PCs, every reason */
#define KP_PCS_DRAIN_CALLS 100000     /* GetData calls before a drain gives up */
#define KP_PCS_MAX_RANGES  4096       /* ranges whose totals are kept */

/* A buffer CUPTI writes PC records into: records and their stall reason slots, preallocated. */
typedef struct kp_pcs_buffer {
    CUpti_PCSamplingData data;
    CUpti_PCSamplingPCData *records;
    CUpti_PCSamplingStallReason *reasons; /* KP_PCS_RECORDS x nreasons */
    size_t nreasons;
} kp_pcs_buffer;

/* What one sampling session gathers besides the PCs. */
typedef struct kp_pcs_state {
    CUcontext ctx;
    const uint32_t *reason_index; /* CUPTI's index of each reason, in out->reasons order */
    size_t nreasons;
    kp_pcs_buffer read;    /* GetData's */
    kp_pcs_buffer kept;    /* the configured one, filled by CUPTI itself */
    uint64_t cubin_crc;    /* cuptiGetCubinCrc of the program's cubin; 0 = none */
    uint64_t crc_mismatch; /* records naming another cubin */
    int hardware_full;     /* a drain found the hardware buffer full */
    size_t nranges;        /* per range CUPTI reports: the largest totals seen */
    uint64_t range_id[KP_PCS_MAX_RANGES];
    uint64_t range_total[KP_PCS_MAX_RANGES];
    uint64_t range_dropped[KP_PCS_MAX_RANGES];
} kp_pcs_state;

/* A CUPTI failure as the one-line reason --source prints: the call, CUPTI's words, and what to
 * do where kprof knows. Always UNAVAILABLE (see the file's comment). */
static kprof_status kp_pcs_fail(kp_error *err, const char *what, CUptiResult r)
{
    const char *hint = "";
    switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        hint = ": no permission to profile this GPU (run as root, or load the NVIDIA driver "
               "with NVreg_RestrictProfilingToAdminUsers=0)";
        break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
        hint = ": another profiler (Nsight Compute, Nsight Systems, a CUPTI tool) holds the "
               "GPU's sampler";
        break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        hint = ": this device or setup has no PC sampling";
        break;
    default:
        break;
    }
    return kp_error_set(err, KPROF_UNAVAILABLE, "%s failed: %s%s", what, kp_cupti_result_text(r),
                        hint);
}

static void kp_pcs_buffer_reset(kp_pcs_buffer *b)
{
    b->data.size = sizeof b->data;
    b->data.collectNumPcs = KP_PCS_RECORDS;
    b->data.pPcData = b->records;
    b->data.totalNumPcs = 0;
    b->data.remainingNumPcs = 0;
    b->data.hardwareBufferFull = 0;
    for (size_t i = 0; i < KP_PCS_RECORDS; i++) {
        b->records[i].size = sizeof b->records[i];
        b->records[i].stallReasonCount = b->nreasons;
        b->records[i].stallReason = &b->reasons[i * b->nreasons];
    }
}

/* KPROF_OK, or KPROF_NOMEM with err filled (b then holds what was allocated, for
 * kp_pcs_buffer_free). */
static kprof_status kp_pcs_buffer_init(kp_pcs_buffer *b, size_t nreasons, kp_error *err)
{
    memset(b, 0, sizeof *b);
    b->records = calloc(KP_PCS_RECORDS, sizeof *b->records);
    b->reasons = calloc(KP_PCS_RECORDS * nreasons, sizeof *b->reasons);
    if (!b->records || !b->reasons) return kp_error_nomem(err);
    b->nreasons = nreasons;
    kp_pcs_buffer_reset(b);
    return KPROF_OK;
}

/* A timed-out session's state, kept reachable while CUPTI may still write into it (see the end
 * of kp_cuda_pc_sample). The caller leaves the process after a timeout: one slot is enough. */
static kp_pcs_state *volatile kp_pcs_parked;

static void kp_pcs_buffer_free(kp_pcs_buffer *b)
{
    free(b->records);
    free(b->reasons);
    memset(b, 0, sizeof *b);
}

/* CUPTI's totals are per range (a kernel, or a start/stop span); a range read in several
 * GetData calls is counted once, at the largest totals it reported. */
static void kp_pcs_note_range(kp_pcs_state *s, uint64_t range, uint64_t total, uint64_t dropped)
{
    size_t i = 0;
    while (i < s->nranges && s->range_id[i] != range)
        i++;
    if (i == s->nranges) {
        if (s->nranges == KP_PCS_MAX_RANGES) return;
        s->nranges++;
        s->range_id[i] = range;
        s->range_total[i] = s->range_dropped[i] = 0;
    }
    if (total > s->range_total[i]) s->range_total[i] = total;
    if (dropped > s->range_dropped[i]) s->range_dropped[i] = dropped;
}

/* Add the records of one buffer to out. The structs are packed: every field is copied out
 * before use, never referenced in place. KPROF_OK, or KPROF_NOMEM with err filled. */
static kprof_status kp_pcs_take(kp_pcs_state *s, const CUpti_PCSamplingData *d, kp_pc_samples *out,
                                kp_error *err)
{
    size_t n = d->totalNumPcs;
    if (n > KP_PCS_RECORDS) n = KP_PCS_RECORDS;
    if (n) kp_pcs_note_range(s, d->rangeId, d->totalSamples, d->droppedSamples);
    for (size_t i = 0; i < n; i++) {
        CUpti_PCSamplingPCData rec;
        memcpy(&rec, &d->pPcData[i], sizeof rec);
        if (s->cubin_crc && rec.cubinCrc != s->cubin_crc) s->crc_mismatch++;
        kp_pc_sample *pc = kp_pc_samples_at(out, rec.functionName, rec.pcOffset);
        if (!pc) return kp_error_nomem(err);
        size_t nstalls = rec.stallReasonCount < s->nreasons ? rec.stallReasonCount : s->nreasons;
        for (size_t j = 0; j < nstalls && rec.stallReason; j++) {
            CUpti_PCSamplingStallReason sr;
            memcpy(&sr, &rec.stallReason[j], sizeof sr);
            for (size_t slot = 0; slot < s->nreasons; slot++) {
                if (s->reason_index[slot] != sr.pcSamplingStallReasonIndex) continue;
                pc->stalls[slot] += sr.samples;
                break;
            }
        }
    }
    return KPROF_OK;
}

/* GetData until CUPTI has nothing left (no records and none remaining). */
static kprof_status kp_pcs_drain(kp_pcs_state *s, kp_pc_samples *out, kp_error *err)
{
    CUpti_PCSamplingGetDataParams get = {
        .size = CUpti_PCSamplingGetDataParamsSize, .ctx = s->ctx, .pcSamplingData = &s->read.data};
    for (int calls = 0; calls < KP_PCS_DRAIN_CALLS; calls++) {
        kp_pcs_buffer_reset(&s->read);
        CUptiResult r = kp_cupti_pcs.cuptiPCSamplingGetData(&get);
        if (r == CUPTI_ERROR_OUT_OF_MEMORY) { /* the hardware buffer filled: samples lost */
            s->hardware_full = 1;
            return KPROF_OK;
        }
        if (r != CUPTI_SUCCESS) return kp_pcs_fail(err, "cuptiPCSamplingGetData", r);
        if (s->read.data.hardwareBufferFull) s->hardware_full = 1;
        kprof_status st = kp_pcs_take(s, &s->read.data, out, err);
        if (st != KPROF_OK) return st;
        if (s->read.data.totalNumPcs == 0 && s->read.data.remainingNumPcs == 0) return KPROF_OK;
    }
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "cuptiPCSamplingGetData still had records after %d calls",
                        KP_PCS_DRAIN_CALLS);
}

/* The stall reasons the device's sampler knows: their CUPTI indexes into s, names into out. */
static kprof_status kp_pcs_reasons(CUcontext ctx, uint32_t **index, kp_pc_samples *out,
                                   kp_error *err)
{
    *index = NULL;
    size_t n = 0;
    char **names = NULL;
    kprof_status st = KPROF_OK;
    CUpti_PCSamplingGetNumStallReasonsParams count = {
        .size = CUpti_PCSamplingGetNumStallReasonsParamsSize, .ctx = ctx, .numStallReasons = &n};
    CUptiResult r = kp_cupti_pcs.cuptiPCSamplingGetNumStallReasons(&count);
    if (r != CUPTI_SUCCESS) return kp_pcs_fail(err, "cuptiPCSamplingGetNumStallReasons", r);
    if (n == 0)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "CUPTI names no stall reasons for this device: its PC sampler is "
                            "not available here");
    *index = calloc(n, sizeof **index);
    names = calloc(n, sizeof *names);
    if (!*index || !names) {
        st = kp_error_nomem(err);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE + 1);
        if (!names[i]) {
            st = kp_error_nomem(err);
            goto done;
        }
    }
    CUpti_PCSamplingGetStallReasonsParams get = {
        .size = CUpti_PCSamplingGetStallReasonsParamsSize,
        .ctx = ctx,
        .numStallReasons = n,
        .stallReasonIndex = *index,
        .stallReasons = names,
    };
    r = kp_cupti_pcs.cuptiPCSamplingGetStallReasons(&get);
    if (r != CUPTI_SUCCESS) {
        st = kp_pcs_fail(err, "cuptiPCSamplingGetStallReasons", r);
        goto done;
    }
    st = kp_pc_samples_set_reasons(out, (const char *const *)names, n, err);
done:
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    if (st != KPROF_OK) {
        free(*index);
        *index = NULL;
    }
    return st;
}

static kprof_status kp_pcs_configure(kp_pcs_state *s, uint32_t *reason_index, kp_error *err)
{
    CUpti_PCSamplingConfigurationInfo attrs[5];
    memset(attrs, 0, sizeof attrs);
    attrs[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    attrs[0].attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    attrs[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    attrs[1].attributeData.stallReasonData.stallReasonCount = s->nreasons;
    attrs[1].attributeData.stallReasonData.pStallReasonIndex = reason_index;
    attrs[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
    attrs[2].attributeData.scratchBufferSizeData.scratchBufferSize = KP_PCS_SCRATCH;
    attrs[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    attrs[3].attributeData.enableStartStopControlData.enableStartStopControl = 1;
    attrs[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    attrs[4].attributeData.samplingDataBufferData.samplingDataBuffer = &s->kept.data;
    /* The sampling period and the hardware buffer stay CUPTI's: a period it picks for the
     * device's SM count, a 512 MB buffer drained by its own threads. */
    CUpti_PCSamplingConfigurationInfoParams params = {
        .size = CUpti_PCSamplingConfigurationInfoParamsSize,
        .ctx = s->ctx,
        .numAttributes = sizeof attrs / sizeof attrs[0],
        .pPCSamplingConfigurationInfo = attrs,
    };
    CUptiResult r = kp_cupti_pcs.cuptiPCSamplingSetConfigurationAttribute(&params);
    if (r != CUPTI_SUCCESS) return kp_pcs_fail(err, "cuptiPCSamplingSetConfigurationAttribute", r);
    static const char *const what[] = {"collection mode", "stall reasons", "scratch buffer size",
                                       "start/stop control", "sampling data buffer"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        if (attrs[i].attributeStatus == CUPTI_SUCCESS) continue;
        char call[96];
        snprintf(call, sizeof call, "cuptiPCSamplingSetConfigurationAttribute (%s)", what[i]);
        return kp_pcs_fail(err, call, attrs[i].attributeStatus);
    }
    return KPROF_OK;
}

/* The kernel's function in a module of its own, loaded from the program's image now. */
static kprof_status kp_pcs_function(kp_kernel *k, CUmodule *module, CUfunction *fn, kp_error *err)
{
    *module = NULL;
    *fn = NULL;
    const char *symbol = NULL;
    CUresult rc = kp_cu.cuFuncGetName(&symbol, k->function);
    if (rc != CUDA_SUCCESS || !symbol) return kp_cuda_fail(k->dev, err, "cuFuncGetName", rc);
    rc = kp_cu.cuModuleLoadData(module, k->program->image);
    if (rc != CUDA_SUCCESS) {
        *module = NULL;
        return kp_cuda_fail(k->dev, err, "cuModuleLoadData (the program again, to sample it)", rc);
    }
    rc = kp_cu.cuModuleGetFunction(fn, *module, symbol);
    if (rc != CUDA_SUCCESS) return kp_cuda_fail(k->dev, err, "cuModuleGetFunction", rc);
    return KPROF_OK;
}

/* Each PC to a file and line through the cubin's line table (cuda_internal.h). */
void kp_cuda_pc_lines(const void *cubin, size_t cubin_len, kp_pc_samples *out)
{
    size_t mapped = 0;
    CUptiResult first_error = CUPTI_SUCCESS;
    for (size_t i = 0; i < out->n; i++) {
        kp_pc_sample *pc = &out->pcs[i];
        CUpti_GetSassToSourceCorrelationParams p = {
            .size = CUpti_GetSassToSourceCorrelationParamsSize,
            .cubin = cubin,
            .functionName = pc->function,
            .cubinSize = cubin_len,
            .pcOffset = pc->pc_offset,
        };
        CUptiResult r = kp_cupti_pcs.cuptiGetSassToSourceCorrelation(&p);
        if (r == CUPTI_SUCCESS && p.fileName && p.fileName[0] && p.lineNumber > 0) {
            kp_str path = {0};
            if (p.fileName[0] == '/' || !p.dirName || !p.dirName[0])
                kp_str_append(&path, p.fileName);
            else
                kp_str_printf(&path, "%s/%s", p.dirName, p.fileName);
            pc->file = kp_str_take(&path);
            if (pc->file) {
                pc->line = p.lineNumber;
                mapped++;
            }
        } else if (r != CUPTI_SUCCESS && first_error == CUPTI_SUCCESS) {
            first_error = r;
        }
        free(p.fileName);
        free(p.dirName);
    }
    if (out->n && mapped == 0)
        snprintf(out->note, sizeof out->note,
                 "no sampled PC has a source line (%s): was the kernel compiled without "
                 "-lineinfo?",
                 first_error != CUPTI_SUCCESS ? kp_cupti_result_text(first_error)
                                              : "the line table names none");
}

kprof_status kp_cuda_pc_sample(kp_kernel *k, const kp_launch *l, int dispatches, kp_pc_samples *out,
                               kp_error *err)
{
    memset(out, 0, sizeof *out);
    kp_device *dev = k->dev;
    const kp_program *prog = k->program;
    kp_pcs_state *s = NULL;
    uint32_t *reason_index = NULL;
    CUmodule module = NULL;
    int enabled = 0, started = 0;
    kprof_status st = KPROF_OK;
    CUptiResult r;
    if (dispatches < 1) {
        st = kp_error_set(err, KPROF_INVALID, "PC sampling: %d dispatches asked for", dispatches);
        goto done;
    }
    kp_error load = {0};
    if (kp_cupti_pcsampling_load(&load) != KPROF_OK) {
        st = kp_error_set(err, KPROF_UNAVAILABLE, "CUPTI: %s", load.message);
        kp_error_clear(&load);
        goto done;
    }
    if (dev->arch < 70) {
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "sm_%d: CUPTI's PC Sampling API needs compute capability 7.0 or newer",
                          dev->arch);
        goto done;
    }
    st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto done;
    s = calloc(1, sizeof *s);
    if (!s) {
        st = kp_error_nomem(err);
        goto done;
    }
    s->ctx = dev->context;

    CUpti_PCSamplingEnableParams enable = {.size = CUpti_PCSamplingEnableParamsSize,
                                           .ctx = dev->context};
    r = kp_cupti_pcs.cuptiPCSamplingEnable(&enable);
    if (r != CUPTI_SUCCESS) {
        st = kp_pcs_fail(err, "cuptiPCSamplingEnable", r);
        goto done;
    }
    enabled = 1;
    st = kp_pcs_reasons(dev->context, &reason_index, out, err);
    if (st != KPROF_OK) goto done;
    s->reason_index = reason_index;
    s->nreasons = out->nreasons;
    st = kp_pcs_buffer_init(&s->read, s->nreasons, err);
    if (st == KPROF_OK) st = kp_pcs_buffer_init(&s->kept, s->nreasons, err);
    if (st != KPROF_OK) goto done;
    st = kp_pcs_configure(s, reason_index, err);
    if (st != KPROF_OK) goto done;

    CUfunction fn = NULL;
    st = kp_pcs_function(k, &module, &fn, err);
    if (st != KPROF_OK) goto done;
    if (!prog->image_ptx) {
        CUpti_GetCubinCrcParams crc = {.size = CUpti_GetCubinCrcParamsSize,
                                       .cubinSize = prog->image_len,
                                       .cubin = prog->image};
        if (kp_cupti_pcs.cuptiGetCubinCrc(&crc) == CUPTI_SUCCESS) s->cubin_crc = crc.cubinCrc;
    }
    /* The kernel as the session bound it, launched through the new module's function. */
    kp_kernel sampled = *k;
    sampled.function = fn;
    sampled.dyn_limit = 0;
    sampled.cupti_ns = NULL;
    sampled.cupti_start = NULL;
    sampled.cupti_capacity = 0;

    CUpti_PCSamplingStartParams start = {.size = CUpti_PCSamplingStartParamsSize,
                                         .ctx = dev->context};
    r = kp_cupti_pcs.cuptiPCSamplingStart(&start);
    if (r != CUPTI_SUCCESS) {
        st = kp_pcs_fail(err, "cuptiPCSamplingStart", r);
        goto done;
    }
    started = 1;
    /* Drained after each kernel, as kernel-serialized collection suggests, so CUPTI never holds
     * more than one dispatch's records; the end of the range (stop) is the flush point the
     * start/stop control documents, so a drain refused inside the range is left to it. */
    int drain_each = 1;
    for (int i = 0; i < dispatches; i++) {
        double ns = 0;
        st = kp_cuda_dispatch(&sampled, l, &ns, NULL, err);
        if (st != KPROF_OK) goto done;
        out->dispatches++;
        if (!drain_each) continue;
        kp_error scratch = {0};
        st = kp_pcs_drain(s, out, &scratch);
        kp_error_clear(&scratch);
        if (st == KPROF_NOMEM) {
            st = kp_error_nomem(err);
            goto done;
        }
        if (st != KPROF_OK) drain_each = 0;
        st = KPROF_OK;
    }
    CUpti_PCSamplingStopParams stop = {.size = CUpti_PCSamplingStopParamsSize, .ctx = dev->context};
    started = 0;
    r = kp_cupti_pcs.cuptiPCSamplingStop(&stop);
    if (r != CUPTI_SUCCESS) {
        st = kp_pcs_fail(err, "cuptiPCSamplingStop", r);
        goto done;
    }
    st = kp_pcs_drain(s, out, err);
done:
    /* After a timeout the kernel may still run: CUPTI's teardown could wait on it, and the
     * caller leaves the process instead. What is kprof's alone is freed; the state holding the
     * buffer CUPTI was configured with (s->kept.data: CUPTI may still flush into it) is parked,
     * reachable, until the process ends, since nothing stopped CUPTI's sampling. */
    if (st == KPROF_TIMEOUT) {
        if (s) kp_pcs_buffer_free(&s->read);
        free(reason_index);
        if (enabled) {
            kp_pcs_parked = s;
        } else if (s) {
            kp_pcs_buffer_free(&s->kept);
            free(s);
        }
        return st;
    }
    if (started) {
        CUpti_PCSamplingStopParams halt = {.size = CUpti_PCSamplingStopParamsSize,
                                           .ctx = dev->context};
        kp_cupti_pcs.cuptiPCSamplingStop(&halt);
    }
    if (enabled) {
        CUpti_PCSamplingDisableParams disable = {.size = CUpti_PCSamplingDisableParamsSize,
                                                 .ctx = dev->context};
        r = kp_cupti_pcs.cuptiPCSamplingDisable(&disable);
        if (r != CUPTI_SUCCESS && st == KPROF_OK)
            st = kp_pcs_fail(err, "cuptiPCSamplingDisable", r);
        /* What CUPTI still held is now in the configured buffer. */
        if (st == KPROF_OK) st = kp_pcs_take(s, &s->kept.data, out, err);
    }
    if (module && !dev->poisoned) kp_cu.cuModuleUnload(module);
    if (st == KPROF_OK) {
        for (size_t i = 0; i < s->nranges; i++) {
            out->total_samples += s->range_total[i];
            out->dropped_samples += s->range_dropped[i];
        }
        if (prog->image_ptx)
            snprintf(out->note, sizeof out->note,
                     "the program was loaded as PTX and compiled by the driver: kprof has no "
                     "cubin whose line table maps its PCs to source lines");
        else
            kp_cuda_pc_lines(prog->image, prog->image_len, out);
        size_t len = strlen(out->note);
        if (s->hardware_full)
            snprintf(out->note + len, sizeof out->note - len,
                     "%sthe sampler's hardware buffer filled up: samples were lost",
                     len ? "; " : "");
        len = strlen(out->note);
        if (s->crc_mismatch)
            snprintf(out->note + len, sizeof out->note - len,
                     "%s%llu records name a cubin other than the program's (CRC differs): "
                     "their lines were read from the program's",
                     len ? "; " : "", (unsigned long long)s->crc_mismatch);
    }
    if (s) {
        kp_pcs_buffer_free(&s->read);
        kp_pcs_buffer_free(&s->kept);
    }
    free(s);
    free(reason_index);
    return st;
}
