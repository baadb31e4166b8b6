/*
 * cuda.c — the CUDA backend: devices through the driver API (libcuda, loaded at run time),
 * CUDA C++ compiled with NVRTC to a cubin for the device (PTX kept beside it), .ptx JIT-loaded
 * and .cubin loaded as they are. Kernels and their parameters come from the module itself
 * (cuModuleEnumerateFunctions, cuFuncGetParamInfo), named the way a user types them and typed
 * from the source's declarations where it has them. Dispatches run on one non-blocking stream
 * and are timed with CUDA events — device timestamps, never host clocks.
 *
 * A kernel fault leaves the CUDA context unusable: every later call fails the same way. The
 * device remembers the fault, refuses further work naming it, and its release functions skip
 * the calls that would fail, so tearing down after a fault neither hangs nor crashes.
 */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "runtime/cuda_api.h"
#include "backend/cuda/cuda_parse.h"
#include "backend/cuda/cupti_timer.h"
#include "backend/cuda/occupancy.h"
#include "core/demangle.h"
#include "core/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KP_CUDA_MAX_DEVICES   64
#define KP_CUDA_JIT_LOG_BYTES 16384

struct kp_device {
    CUdevice id;
    CUcontext context; /* the device's primary context, retained */
    CUstream stream;   /* non-blocking: no implicit ordering with the legacy stream */
    CUevent start, end;
    int arch; /* compute capability as 90 for 9.0 */
    int sm_count;
    uint64_t global_mem;
    int max_grid[3];
    kp_cuda_occ_device occ; /* what the occupancy arithmetic needs */
    int poisoned;           /* a kernel faulted: the context refuses all further work */
    char fault[384];        /* that fault, for the refusals */
};

struct kp_program {
    kp_device *dev;
    CUmodule module;
};

struct kp_kernel {
    kp_device *dev;
    CUfunction function;
    char name[512];
    char symbol[1024];                     /* as CUPTI names it in kernel records */
    double *cupti_ns;                      /* dispatch_batch's CUPTI durations */
    int cupti_capacity;
    int nparams;                           /* -1 when the driver could not count them */
    uint32_t param_size[KP_SPEC_MAX_ARGS]; /* bytes per parameter, 0 = unknown */
    uint64_t dyn_limit;                    /* MAX_DYNAMIC_SHARED_SIZE_BYTES as set by kprof */
    kp_tg_rule tg_rule;                    /* from the kernel's meta (PTX or cubin) */
    uint64_t tg_rule_size[3];
    int bound;
    void *args[KP_SPEC_MAX_ARGS];      /* cuLaunchKernel's kernelParams: into values[] */
    uint64_t values[KP_SPEC_MAX_ARGS]; /* device pointers and scalar bytes */
};

struct kp_buffer {
    kp_device *dev;
    CUdeviceptr ptr;
    uint64_t bytes;
};

/* Devices, enumerated once after cuInit. */
static struct {
    pthread_once_t once;
    int count;
    CUdevice device[KP_CUDA_MAX_DEVICES];
    char why[512];
    int ok;
} kp_cuda_devices = {.once = PTHREAD_ONCE_INIT};

static void kp_cuda_enumerate(void)
{
    char text[320];
    if (kp_cuda_load(kp_cuda_devices.why, sizeof kp_cuda_devices.why) != 0) return;
    CUresult rc = kp_cu.cuInit(0);
    if (rc != CUDA_SUCCESS) {
        kp_cuda_error_text(rc, text, sizeof text);
        snprintf(kp_cuda_devices.why, sizeof kp_cuda_devices.why, "cuInit failed: %s", text);
        return;
    }
    int n = 0;
    rc = kp_cu.cuDeviceGetCount(&n);
    if (rc != CUDA_SUCCESS) {
        kp_cuda_error_text(rc, text, sizeof text);
        snprintf(kp_cuda_devices.why, sizeof kp_cuda_devices.why, "cuDeviceGetCount failed: %s",
                 text);
        return;
    }
    for (int i = 0; i < n && kp_cuda_devices.count < KP_CUDA_MAX_DEVICES; i++) {
        CUdevice d = 0;
        if (kp_cu.cuDeviceGet(&d, i) == CUDA_SUCCESS)
            kp_cuda_devices.device[kp_cuda_devices.count++] = d;
    }
    if (kp_cuda_devices.count == 0) {
        snprintf(kp_cuda_devices.why, sizeof kp_cuda_devices.why,
                 "the CUDA driver loaded but found no CUDA device");
        return;
    }
    kp_cuda_devices.ok = 1;
}

static kprof_status kp_cuda_probe(char *reason, size_t n)
{
    pthread_once(&kp_cuda_devices.once, kp_cuda_enumerate);
    if (kp_cuda_devices.ok) return KPROF_OK;
    snprintf(reason, n, "%s", kp_cuda_devices.why);
    return KPROF_UNAVAILABLE;
}

static int kp_cuda_device_count(void)
{
    pthread_once(&kp_cuda_devices.once, kp_cuda_enumerate);
    return kp_cuda_devices.ok ? kp_cuda_devices.count : 0;
}

static int kp_cuda_attr(CUdevice d, CUdevice_attribute what)
{
    int v = 0;
    if (kp_cu.cuDeviceGetAttribute(&v, what, d) != CUDA_SUCCESS) return 0;
    return v;
}

/* The kernel module's version ("580.159.04") from /proc/driver/nvidia/version, where the
 * container shows it; "" otherwise. */
static void kp_cuda_module_version(char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
            if (isdigit((unsigned char)tok[0]) && strchr(tok, '.')) {
                snprintf(out, n, "%s", tok);
                break;
            }
        }
    }
    fclose(f);
}

static kprof_status kp_cuda_device_info(int index, kp_device_info *info, kp_error *err)
{
    memset(info, 0, sizeof *info);
    if (index < 0 || index >= kp_cuda_device_count())
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: device %d does not exist", index);
    CUdevice d = kp_cuda_devices.device[index];
    kp_strlcpy(info->backend, "cuda", sizeof info->backend);
    info->index = index;
    if (kp_cu.cuDeviceGetName(info->name, (int)sizeof info->name, d) != CUDA_SUCCESS)
        snprintf(info->name, sizeof info->name, "CUDA device %d", index);
    info->name[sizeof info->name - 1] = '\0';
    kp_strlcpy(info->vendor, "NVIDIA", sizeof info->vendor);
    int api = 0;
    kp_cu.cuDriverGetVersion(&api);
    char module[64];
    kp_cuda_module_version(module, sizeof module);
    snprintf(info->platform, sizeof info->platform, "CUDA %d.%d", api / 1000, api % 1000 / 10);
    if (module[0])
        snprintf(info->driver, sizeof info->driver, "%s (CUDA %d.%d)", module, api / 1000,
                 api % 1000 / 10);
    else
        snprintf(info->driver, sizeof info->driver, "CUDA %d.%d", api / 1000, api % 1000 / 10);
    int major = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(info->version, sizeof info->version, "compute capability %d.%d", major, minor);
    info->is_gpu = 1;
    info->compute_units = (uint32_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info->max_tg = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    info->max_tg_dims[0] = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    info->max_tg_dims[1] = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    info->max_tg_dims[2] = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    info->exec_width = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    info->local_mem = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    size_t total = 0;
    if (kp_cu.cuDeviceTotalMem(&total, d) != CUDA_SUCCESS) total = 0;
    info->global_mem = total;
    info->max_alloc = total;
    info->timer_resolution_ns = 500; /* cuEventElapsedTime: about half a microsecond */
    info->profiling = 1;
    /* CUDA rounds the grid up to whole blocks; kernels guard their tail. */
    info->uniform_groups = 0;

    int clock_khz = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    int mem_khz = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    int bus_bits = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    /* Double data rate: two transfers per memory clock over the whole bus. */
    if (mem_khz > 0 && bus_bits > 0)
        info->peak_bandwidth_gbs = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    else
        snprintf(info->peak_bandwidth_reason, sizeof info->peak_bandwidth_reason,
                 "the CUDA driver reports no memory clock or bus width for this device");

    char pci[32] = "";
    if (kp_cu.cuDeviceGetPCIBusId(pci, (int)sizeof pci, d) != CUDA_SUCCESS) pci[0] = '\0';
    pci[sizeof pci - 1] = '\0';
    kp_device_fact_add(info, "compute_capability", "compute capability", 0, "%d.%d", major, minor);
    kp_device_fact_add(info, "sm_count", "SMs", 1, "%u", info->compute_units);
    kp_device_fact_add(info, "clock_mhz", "clock (MHz)", 1, "%d", clock_khz / 1000);
    kp_device_fact_add(info, "memory_clock_mhz", "memory clock (MHz)", 1, "%d", mem_khz / 1000);
    kp_device_fact_add(info, "memory_bus_width_bits", "memory bus width (bits)", 1, "%d", bus_bits);
    int l2 = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    info->cache_bytes = l2 > 0 ? (uint64_t)l2 : 0;
    kp_device_fact_add(info, "l2_bytes", "L2 cache", KP_FACT_BYTES, "%d", l2);
    kp_device_fact_add(info, "max_threads_per_sm", "max threads per SM", 1, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
    kp_device_fact_add(info, "registers_per_sm", "registers per SM", 1, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR));
    kp_device_fact_add(info, "registers_per_block", "registers per block", 1, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK));
    kp_device_fact_add(info, "shared_memory_per_block_optin", "opt-in shared memory/block",
                       KP_FACT_BYTES, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    kp_device_fact_add(info, "shared_memory_per_sm", "shared memory per SM", KP_FACT_BYTES, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
    kp_device_fact_add(info, "max_blocks_per_sm", "max blocks per SM", 1, "%d",
                       kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR));
    kp_device_fact_add(info, "driver_version", "CUDA driver API", 0, "%d.%d", api / 1000,
                       api % 1000 / 10);
    if (pci[0]) kp_device_fact_add(info, "pci_bus_id", "PCI bus id", 0, "%s", pci);
    return KPROF_OK;
}

/* ---- errors ----------------------------------------------------------------------------- */

static void kp_cuda_poison(kp_device *dev, const char *text)
{
    if (!dev || dev->poisoned) return;
    dev->poisoned = 1;
    snprintf(dev->fault, sizeof dev->fault, "%s", text);
}

/* A failed driver call: its name and the error in words. Faults poison the device. */
static kprof_status kp_cuda_fail(kp_device *dev, kp_error *err, const char *what, CUresult rc)
{
    char text[320];
    kp_cuda_error_text(rc, text, sizeof text);
    kprof_status st = kp_cuda_result_status(rc);
    if (st == KPROF_FAULT) {
        kp_cuda_poison(dev, text);
        return kp_error_set(err, st, "cuda: %s failed after a kernel fault: %s", what, text);
    }
    if (st != KPROF_NOMEM && st != KPROF_UNAVAILABLE) st = KPROF_BACKEND;
    return kp_error_set(err, st, "cuda: %s failed: %s", what, text);
}

/* Make the device's context current on this thread, unless a fault has spoiled it. */
static kprof_status kp_cuda_enter(kp_device *dev, kp_error *err)
{
    if (dev->poisoned)
        return kp_error_set(err, KPROF_FAULT,
                            "cuda: the device cannot run anything more after an earlier kernel "
                            "fault (%s)",
                            dev->fault);
    CUresult rc = kp_cu.cuCtxSetCurrent(dev->context);
    return rc == CUDA_SUCCESS ? KPROF_OK : kp_cuda_fail(dev, err, "cuCtxSetCurrent", rc);
}

/* ---- devices ----------------------------------------------------------------------------- */

static void kp_cuda_close(kp_device *dev)
{
    if (!dev) return;
    if (dev->context && !dev->poisoned && kp_cu.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) {
        if (dev->end) kp_cu.cuEventDestroy(dev->end);
        if (dev->start) kp_cu.cuEventDestroy(dev->start);
        if (dev->stream) kp_cu.cuStreamDestroy(dev->stream);
    }
    if (dev->context) {
        kp_cu.cuCtxSetCurrent(NULL);
        kp_cu.cuDevicePrimaryCtxRelease(dev->id);
    }
    free(dev);
}

static void kp_cuda_read_limits(kp_device *dev)
{
    CUdevice d = dev->id;
    kp_cuda_occ_device *o = &dev->occ;
    o->cc_major = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    o->cc_minor = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    o->warp_size = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    o->max_threads_per_block = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    o->max_threads_per_sm = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    o->max_blocks_per_sm = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    o->regs_per_sm = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    o->regs_per_block = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    o->smem_per_sm =
        (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    o->smem_per_block = (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    o->smem_per_block_optin =
        (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    o->smem_reserved_per_block =
        (uint64_t)kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    if (o->smem_per_block_optin < o->smem_per_block) o->smem_per_block_optin = o->smem_per_block;
    dev->arch = o->cc_major * 10 + o->cc_minor;
    dev->max_grid[0] = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    dev->max_grid[1] = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    dev->max_grid[2] = kp_cuda_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    size_t total = 0;
    if (kp_cu.cuDeviceTotalMem(&total, d) == CUDA_SUCCESS) dev->global_mem = total;
}

static kprof_status kp_cuda_open(int index, kp_device **out, kp_error *err)
{
    *out = NULL;
    if (index < 0 || index >= kp_cuda_device_count())
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: device %d does not exist", index);
    kprof_status st = KPROF_OK;
    CUresult rc = CUDA_SUCCESS;
    kp_device *dev = calloc(1, sizeof *dev);
    if (!dev) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    dev->id = kp_cuda_devices.device[index];
    rc = kp_cu.cuDevicePrimaryCtxRetain(&dev->context, dev->id);
    if (rc != CUDA_SUCCESS) {
        dev->context = NULL;
        st = kp_cuda_fail(dev, err, "cuDevicePrimaryCtxRetain", rc);
        goto fail;
    }
    rc = kp_cu.cuCtxSetCurrent(dev->context);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(dev, err, "cuCtxSetCurrent", rc);
        goto fail;
    }
    rc = kp_cu.cuStreamCreate(&dev->stream, CU_STREAM_NON_BLOCKING);
    if (rc != CUDA_SUCCESS) {
        dev->stream = NULL;
        st = kp_cuda_fail(dev, err, "cuStreamCreate", rc);
        goto fail;
    }
    rc = kp_cu.cuEventCreate(&dev->start, CU_EVENT_DEFAULT);
    if (rc != CUDA_SUCCESS) {
        dev->start = NULL;
        st = kp_cuda_fail(dev, err, "cuEventCreate", rc);
        goto fail;
    }
    rc = kp_cu.cuEventCreate(&dev->end, CU_EVENT_DEFAULT);
    if (rc != CUDA_SUCCESS) {
        dev->end = NULL;
        st = kp_cuda_fail(dev, err, "cuEventCreate", rc);
        goto fail;
    }
    kp_cuda_read_limits(dev);
    dev->sm_count = kp_cuda_attr(dev->id, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    *out = dev;
    return KPROF_OK;
fail:
    kp_cuda_close(dev);
    return st;
}

/* ---- modules ----------------------------------------------------------------------------- */

/* Load a cubin or NUL-terminated PTX into the current context, with the JIT's logs. On
 * success *info_log (when asked for) is the JIT's info log or NULL. `what` names the image in
 * messages ("k.ptx", "the cached binary"). */
static kprof_status kp_cuda_module_load(kp_device *dev, const char *what, int ptx,
                                        const void *image, CUmodule *module, char **info_log,
                                        kp_error *err)
{
    *module = NULL;
    if (info_log) *info_log = NULL;
    kprof_status st = KPROF_OK;
    char *error_log = calloc(1, KP_CUDA_JIT_LOG_BYTES);
    char *info = calloc(1, KP_CUDA_JIT_LOG_BYTES);
    if (!error_log || !info) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)(KP_CUDA_JIT_LOG_BYTES - 1), info,
                      (void *)(uintptr_t)(KP_CUDA_JIT_LOG_BYTES - 1)};
    CUresult rc = kp_cu.cuModuleLoadDataEx(module, image, 4, options, values);
    if (rc != CUDA_SUCCESS) {
        *module = NULL;
        char text[320];
        kp_cuda_error_text(rc, text, sizeof text);
        kprof_status kind = kp_cuda_result_status(rc);
        if (kind == KPROF_COMPILE) {
            if (ptx)
                st = kp_error_set(err, KPROF_COMPILE, "%s: PTX JIT compile failed: %s", what, text);
            else
                st = kp_error_set(err, KPROF_COMPILE,
                                  "%s: the driver cannot load this cubin: %s (the device is "
                                  "sm_%d)",
                                  what, text, dev->arch);
            kp_rstrip(error_log);
            if (error_log[0]) {
                kp_error_take_log(err, error_log);
                error_log = NULL;
            }
        } else {
            st = kp_cuda_fail(dev, err, "cuModuleLoadDataEx", rc);
        }
        goto done;
    }
    kp_rstrip(info);
    if (info_log && info[0]) {
        *info_log = info;
        info = NULL;
    }
done:
    free(error_log);
    free(info);
    return st;
}

/* ---- kernels and parameters ------------------------------------------------------------- */

typedef struct kp_cuda_naming {
    const kp_cuda_decls *decls; /* from the source; may be empty */
    const char *entry;          /* what the user asked for ("" = nothing) */
    const char *lowered;        /* NVRTC's symbol for entry when registered, else "" */
} kp_cuda_naming;

static kprof_status kp_cuda_kernel_meta(CUfunction f, const kp_cuda_naming *nm, kp_kernel_meta *m,
                                        int *order, kp_error *err)
{
    memset(m, 0, sizeof *m);
    *order = 1 << 30;
    kprof_status st = KPROF_OK;
    kp_cuda_decl_param *dparams = NULL;
    int ndparams = 0;
    char *demangled = NULL, *ptext = NULL;
    const char *symbol = NULL;
    CUresult rc = kp_cu.cuFuncGetName(&symbol, f);
    if (rc != CUDA_SUCCESS || !symbol) {
        st = kp_cuda_fail(NULL, err, "cuFuncGetName", rc);
        goto done;
    }
    kp_strlcpy(m->symbol, symbol, sizeof m->symbol);

    /* Count the parameters: the driver answers INVALID_VALUE past the last one. */
    int count = 0;
    for (; count < 4096; count++) {
        size_t offset = 0, size = 0;
        rc = kp_cu.cuFuncGetParamInfo(f, (size_t)count, &offset, &size);
        if (rc != CUDA_SUCCESS) break;
    }
    m->nparams = (rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_SUCCESS) ? count : -1;

    /* The name a user types. */
    demangled = malloc(2048);
    ptext = malloc(2048);
    if (!demangled || !ptext) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    int mangled = kp_demangle(symbol, demangled, 2048) == 0;
    char user[256] = "";
    ptext[0] = '\0';
    if (mangled && kp_cuda_split_demangled(demangled, user, sizeof user, ptext, 2048) != 0)
        kp_strlcpy(user, demangled, sizeof user);
    if (nm->lowered[0] && strcmp(symbol, nm->lowered) == 0)
        kp_strlcpy(m->name, nm->entry, sizeof m->name);
    else if (mangled)
        kp_strlcpy(m->name, user, sizeof m->name);
    else
        kp_strlcpy(m->name, symbol, sizeof m->name);

    if (m->nparams <= 0) goto done;
    m->params = calloc((size_t)m->nparams, sizeof *m->params);
    if (!m->params) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    /* Types from the mangled name, names (and the spelling the user wrote) from the source. */
    if (mangled && kp_cuda_parse_param_list(ptext, strlen(ptext), 0, &dparams, &ndparams) != 0) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    int have_types = mangled && ndparams == m->nparams;
    char pointers[KP_SPEC_MAX_ARGS * 16 + 1];
    if (have_types && m->nparams < (int)sizeof pointers) {
        for (int i = 0; i < m->nparams; i++)
            pointers[i] = dparams[i].pointer ? '1' : '0';
        pointers[m->nparams] = '\0';
    } else {
        have_types = 0;
    }
    char base[256];
    kp_cuda_base_name(mangled ? user : symbol, base, sizeof base);
    const kp_cuda_decl *decl =
        kp_cuda_decl_find(nm->decls, base, m->nparams, have_types ? pointers : NULL);
    if (decl) *order = decl->order;
    /* A template instance's source spells its parameters with template parameters ("T*"); the
     * mangled name has the concrete types. */
    int instance = mangled && strchr(user, '<') != NULL;
    for (int i = 0; i < m->nparams; i++) {
        kp_param *p = &m->params[i];
        size_t offset = 0, size = 0;
        if (kp_cu.cuFuncGetParamInfo(f, (size_t)i, &offset, &size) == CUDA_SUCCESS)
            p->size = (uint32_t)size;
        const kp_cuda_decl_param *src = decl ? &decl->params[i] : NULL;
        const kp_cuda_decl_param *typed = have_types ? &dparams[i] : NULL;
        if (!src && !typed) {
            p->kind = KP_PARAM_UNKNOWN;
            continue;
        }
        if (src) kp_strlcpy(p->name, src->name, sizeof p->name);
        const kp_cuda_decl_param *type_from = src && !(instance && typed) ? src : typed;
        kp_strlcpy(p->type_name, type_from->type_name, sizeof p->type_name);
        int pointer = src ? src->pointer : typed->pointer;
        p->kind = pointer ? KP_PARAM_GLOBAL : KP_PARAM_VALUE;
    }
done:
    free(dparams);
    free(demangled);
    free(ptext);
    if (st != KPROF_OK) {
        free(m->params);
        m->params = NULL;
    }
    return st;
}

/* Names a user can type for every kernel: overloads, which share a name, go by their symbol
 * (a plain identifier, so --entry takes it as it is), and a plain identifier the user asked for
 * names the one kernel whose unqualified name it is ("twice" for ns::twice). */
static void kp_cuda_meta_names(kp_program_meta *meta, const kp_cuda_naming *nm, char *duplicate)
{
    for (int i = 0; i < meta->nkernels; i++) {
        duplicate[i] = 0;
        for (int j = 0; j < meta->nkernels; j++)
            if (j != i && strcmp(meta->kernels[j].name, meta->kernels[i].name) == 0)
                duplicate[i] = 1;
    }
    for (int i = 0; i < meta->nkernels; i++)
        if (duplicate[i])
            kp_strlcpy(meta->kernels[i].name, meta->kernels[i].symbol,
                       sizeof meta->kernels[i].name);
    if (!kp_cuda_is_identifier(nm->entry) || kp_program_meta_find(meta, nm->entry)) return;
    kp_kernel_meta *only = NULL;
    for (int i = 0; i < meta->nkernels; i++) {
        char base[256];
        kp_cuda_base_name(meta->kernels[i].name, base, sizeof base);
        if (strcmp(base, nm->entry) != 0) continue;
        if (only) return; /* ambiguous: leave the full names */
        only = &meta->kernels[i];
    }
    if (only) kp_strlcpy(only->name, nm->entry, sizeof only->name);
}

static kprof_status kp_cuda_program_meta(CUmodule module, const kp_cuda_naming *nm,
                                         kp_program_meta *meta, kp_error *err)
{
    memset(meta, 0, sizeof *meta);
    kprof_status st = KPROF_OK;
    CUfunction *fns = NULL;
    int *order = NULL;
    char *duplicate = NULL;
    unsigned int n = 0;
    CUresult rc = kp_cu.cuModuleGetFunctionCount(&n, module);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(NULL, err, "cuModuleGetFunctionCount", rc);
        goto done;
    }
    if (n == 0) goto done;
    fns = calloc(n, sizeof *fns);
    order = calloc(n, sizeof *order);
    duplicate = calloc(n, sizeof *duplicate);
    meta->kernels = calloc(n, sizeof *meta->kernels);
    if (!fns || !order || !duplicate || !meta->kernels) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    rc = kp_cu.cuModuleEnumerateFunctions(fns, n, module);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(NULL, err, "cuModuleEnumerateFunctions", rc);
        goto done;
    }
    for (unsigned int i = 0; i < n; i++) {
        st = kp_cuda_kernel_meta(fns[i], nm, &meta->kernels[meta->nkernels], &order[meta->nkernels],
                                 err);
        if (st != KPROF_OK) goto done;
        meta->nkernels++;
    }
    kp_cuda_meta_names(meta, nm, duplicate);
    /* Source order where the source declares them, then by name: stable across runs. */
    for (int i = 1; i < meta->nkernels; i++) {
        for (int j = i; j > 0; j--) {
            kp_kernel_meta *a = &meta->kernels[j - 1], *b = &meta->kernels[j];
            if (order[j - 1] < order[j] ||
                (order[j - 1] == order[j] && strcmp(a->name, b->name) <= 0))
                break;
            kp_kernel_meta t = *a;
            *a = *b;
            *b = t;
            int o = order[j - 1];
            order[j - 1] = order[j];
            order[j] = o;
        }
    }
done:
    if (st != KPROF_OK) kp_program_meta_free(meta);
    free(fns);
    free(order);
    free(duplicate);
    return st;
}

/* ---- building ---------------------------------------------------------------------------- */

static char *kp_cuda_nvrtc_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (kp_nvrtc.nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (kp_nvrtc.nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    log[n] = '\0';
    kp_rstrip(log);
    if (!log[0]) {
        free(log);
        return NULL;
    }
    return log;
}

static kprof_status kp_cuda_nvrtc_fail(kp_error *err, const char *path, const char *what,
                                       nvrtcResult rc)
{
    char text[160];
    kp_cuda_nvrtc_error_text(rc, text, sizeof text);
    kprof_status st = rc == NVRTC_ERROR_OUT_OF_MEMORY ? KPROF_NOMEM : KPROF_BACKEND;
    return kp_error_set(err, st, "cuda: %s: %s failed: %s", path, what, text);
}

/* The -arch option for this device: its own sm_XY when NVRTC knows it, else the newest one
 * below of the same major version (binary compatible), else PTX for the driver to JIT. */
static kprof_status kp_cuda_arch_option(kp_device *dev, const char *path, char *out, size_t n,
                                        kp_error *err)
{
    int count = 0;
    int *archs = NULL;
    kprof_status st = KPROF_OK;
    nvrtcResult rc = kp_nvrtc.nvrtcGetNumSupportedArchs(&count);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, path, "nvrtcGetNumSupportedArchs", rc);
        goto done;
    }
    archs = calloc((size_t)(count > 0 ? count : 1), sizeof *archs);
    if (!archs) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    rc = kp_nvrtc.nvrtcGetSupportedArchs(archs);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, path, "nvrtcGetSupportedArchs", rc);
        goto done;
    }
    int arch = kp_cuda_pick_arch(archs, count, dev->arch);
    if (arch < 0) {
        int major = 0, minor = 0;
        kp_nvrtc.nvrtcVersion(&major, &minor);
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "cuda: %s: NVRTC %d.%d cannot compile for sm_%d or any older "
                          "architecture (its oldest is sm_%d)",
                          path, major, minor, dev->arch, count > 0 ? archs[0] : 0);
        goto done;
    }
    if (arch / 10 == dev->arch / 10)
        snprintf(out, n, "-arch=sm_%d", arch);
    else
        snprintf(out, n, "-arch=compute_%d", arch);
done:
    free(archs);
    return st;
}

/* NVRTC: CUDA C++ -> cubin (or PTX) into products; lowered[] gets the entry's symbol when it
 * was registered as a name expression. */
static kprof_status kp_cuda_compile(kp_device *dev, const kp_source *src, kp_build_output *products,
                                    char *lowered, size_t lowered_n, kp_error *err)
{
    kprof_status st = KPROF_OK;
    nvrtcResult rc = NVRTC_SUCCESS;
    nvrtcProgram prog = NULL;
    char *text = NULL, *words_copy = NULL, *include_dir = NULL, *log = NULL;
    const char **words = NULL, **argv = NULL;
    int nwords = 0, argc = 0;
    char why[512], arch[32];
    lowered[0] = '\0';
    if (kp_cuda_nvrtc_load(why, sizeof why) != 0) {
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "cuda: cannot compile %s: %s (NVRTC compiles .cu sources; .ptx and "
                          ".cubin files run without it)",
                          src->path, why);
        goto done;
    }
    if (kp_cuda_split_options(src->options, &words_copy, &words, &nwords) != 0) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    /* The user's own -arch wins over the device's. */
    int user_arch = 0;
    for (int i = 0; i < nwords; i++)
        if (strncmp(words[i], "-arch", 5) == 0 || strncmp(words[i], "--gpu-architecture", 18) == 0)
            user_arch = 1;
    if (!user_arch) {
        st = kp_cuda_arch_option(dev, src->path, arch, sizeof arch, err);
        if (st != KPROF_OK) goto done;
    }
    text = malloc(src->len + 1);
    argv = calloc((size_t)nwords + 4, sizeof *argv);
    if (!text || !argv) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    memcpy(text, src->text, src->len);
    text[src->len] = '\0';
    if (!user_arch) argv[argc++] = arch;
    argv[argc++] = "-lineinfo";
    /* #include "x.h" beside the source, as nvcc finds it. */
    const char *slash = strrchr(src->path, '/');
    if (slash) {
        kp_str inc = {0};
        kp_str_printf(&inc, "-I%.*s", (int)(slash - src->path), src->path);
        include_dir = kp_str_take(&inc);
        if (!include_dir) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto done;
        }
        argv[argc++] = include_dir;
    }
    for (int i = 0; i < nwords; i++)
        argv[argc++] = words[i];

    rc = kp_nvrtc.nvrtcCreateProgram(&prog, text, src->path, 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) {
        prog = NULL;
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcCreateProgram", rc);
        goto done;
    }
    int registered = src->entry && src->entry[0] && !kp_cuda_is_identifier(src->entry);
    if (registered) {
        rc = kp_nvrtc.nvrtcAddNameExpression(prog, src->entry);
        if (rc != NVRTC_SUCCESS) {
            char t[160];
            kp_cuda_nvrtc_error_text(rc, t, sizeof t);
            st = kp_error_set(err, KPROF_INVALID, "--entry '%s' is not a name NVRTC accepts: %s",
                              src->entry, t);
            goto done;
        }
    }
    kp_str used = {0};
    for (int i = 0; i < argc; i++) kp_str_printf(&used, "%s%s", i ? " " : "", argv[i]);
    products->options = kp_str_take(&used);
    rc = kp_nvrtc.nvrtcCompileProgram(prog, argc, argv);
    log = kp_cuda_nvrtc_log(prog);
    if (rc != NVRTC_SUCCESS) {
        if (rc == NVRTC_ERROR_COMPILATION) {
            kp_error_set(err, KPROF_COMPILE, "%s: NVRTC compile failed", src->path);
        } else {
            char t[160];
            kp_cuda_nvrtc_error_text(rc, t, sizeof t);
            kp_error_set(err, KPROF_COMPILE, "%s: NVRTC compile failed: %s", src->path, t);
        }
        kp_error_take_log(err, log);
        log = NULL;
        st = KPROF_COMPILE;
        goto done;
    }
    size_t ptx_size = 0, cubin_size = 0;
    rc = kp_nvrtc.nvrtcGetPTXSize(prog, &ptx_size);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetPTXSize", rc);
        goto done;
    }
    products->ptx = calloc(1, ptx_size + 1);
    if (!products->ptx) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto done;
    }
    rc = kp_nvrtc.nvrtcGetPTX(prog, products->ptx);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetPTX", rc);
        goto done;
    }
    /* Compiled for a virtual architecture, there is no cubin: size 0 (or an error). */
    if (kp_nvrtc.nvrtcGetCUBINSize(prog, &cubin_size) != NVRTC_SUCCESS) cubin_size = 0;
    if (cubin_size > 0) {
        products->binary = malloc(cubin_size);
        if (!products->binary) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto done;
        }
        rc = kp_nvrtc.nvrtcGetCUBIN(prog, (char *)products->binary);
        if (rc != NVRTC_SUCCESS) {
            st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetCUBIN", rc);
            goto done;
        }
        products->binary_len = cubin_size;
        products->binary_ext = "cubin";
    } else {
        size_t len = strlen(products->ptx) + 1;
        products->binary = malloc(len);
        if (!products->binary) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto done;
        }
        memcpy(products->binary, products->ptx, len);
        products->binary_len = len;
        products->binary_ext = "ptx";
    }
    if (registered) {
        const char *low = NULL;
        rc = kp_nvrtc.nvrtcGetLoweredName(prog, src->entry, &low);
        if (rc == NVRTC_SUCCESS && low) kp_strlcpy(lowered, low, lowered_n);
    }
    products->log = log;
    log = NULL;
done:
    if (prog) kp_nvrtc.nvrtcDestroyProgram(&prog);
    free(log);
    free(text);
    free(words_copy);
    free(words);
    free(argv);
    free(include_dir);
    return st;
}

/* The image a .ptx or .cubin file gives: its bytes, PTX with a terminating NUL. */
static kprof_status kp_cuda_copy_image(const kp_source *src, kp_build_output *products,
                                       kp_error *err)
{
    int ptx = src->lang == KP_LANG_PTX;
    size_t len = src->len;
    if (ptx && (len == 0 || src->text[len - 1] != '\0')) len++;
    if (len == 0) return kp_error_set(err, KPROF_INVALID, "%s: the file is empty", src->path);
    char why[256];
    if (!ptx && kp_cuda_image_check((const unsigned char *)src->text, src->len, why, sizeof why))
        return kp_error_set(err, KPROF_INVALID, "%s: %s", src->path, why);
    products->binary = calloc(1, len);
    if (!products->binary) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    memcpy(products->binary, src->text, src->len);
    products->binary_len = len;
    products->binary_ext = ptx ? "ptx" : "cubin";
    return KPROF_OK;
}

/* A .ptx or .cubin names no parameters. When the .cu it came from sits beside it under the
 * same stem (kprof's dumps leave it so), its declarations name and type them. */
static int kp_cuda_sibling_decls(const char *path, kp_cuda_decls *decls)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash)) return 0;
    kp_str cu = {0};
    kp_str_printf(&cu, "%.*s.cu", (int)(dot - path), path);
    if (cu.failed) {
        kp_str_free(&cu);
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (kp_file_read(cu.data, &text, &len, NULL) == KPROF_OK)
        rc = kp_cuda_parse_kernels(text, len, decls);
    free(text);
    kp_str_free(&cu);
    return rc;
}

/* Each kernel's compile-time block rule (.reqntid or .maxntid), read from the PTX NVRTC made or
 * the .ptx given, else from the cubin's .nv.info records. cuFuncGetAttribute cannot say it:
 * CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK is one number that folds .maxntid, .reqntid and the
 * register limit together, with no shape and no word on whether the size is required or only a
 * ceiling; the CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_* attributes are about clusters of blocks,
 * not a block's threads. A fatbin gives nothing here: the driver's number still bounds it. */
static void kp_cuda_meta_tg_rules(const kp_build_output *products, kp_program_meta *meta)
{
    const char *ptx = products->ptx;
    size_t ptx_len = ptx ? strlen(ptx) : 0;
    int is_ptx = products->binary_ext && strcmp(products->binary_ext, "ptx") == 0;
    if (!ptx && is_ptx && products->binary) {
        ptx = (const char *)products->binary;
        ptx_len = strnlen(ptx, products->binary_len);
    }
    for (int i = 0; i < meta->nkernels; i++) {
        kp_kernel_meta *k = &meta->kernels[i];
        int rule = ptx ? kp_cuda_ptx_ntid(ptx, ptx_len, k->symbol, k->tg_rule_size)
                       : kp_cuda_cubin_ntid(products->binary, products->binary_len, k->symbol,
                                            k->tg_rule_size);
        k->tg_rule = rule == KP_CUDA_NTID_REQUIRED ? KP_TG_RULE_REQUIRED
                     : rule == KP_CUDA_NTID_MAX    ? KP_TG_RULE_MAX
                                                   : KP_TG_RULE_NONE;
    }
}

static kprof_status kp_cuda_build(kp_device *dev, const kp_source *src, kp_program **out,
                                  kp_build_output *products, kp_error *err)
{
    *out = NULL;
    memset(products, 0, sizeof *products);
    CUmodule module = NULL;
    kp_program *p = NULL;
    kp_cuda_decls decls = {0};
    char lowered[1024] = "";
    char *jit_log = NULL;
    kprof_status st = KPROF_OK;
    if (src->lang == KP_LANG_OPENCL_C) {
        st = kp_error_set(err, KPROF_INVALID,
                          "cuda: %s is OpenCL C; the cuda backend runs .cu, .ptx and .cubin",
                          src->path);
        goto fail;
    }
    st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto fail;
    if (src->lang == KP_LANG_CUDA) {
        st = kp_cuda_compile(dev, src, products, lowered, sizeof lowered, err);
        if (st != KPROF_OK) goto fail;
        if (kp_cuda_parse_kernels(src->text, src->len, &decls) != 0) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto fail;
        }
    } else {
        st = kp_cuda_copy_image(src, products, err);
        if (st != KPROF_OK) goto fail;
        if (kp_cuda_sibling_decls(src->path, &decls) != 0) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto fail;
        }
    }
    int ptx = strcmp(products->binary_ext, "ptx") == 0;
    st = kp_cuda_module_load(dev, src->lang == KP_LANG_CUDA ? "NVRTC output" : src->path, ptx,
                             products->binary, &module, &jit_log, err);
    if (st != KPROF_OK) goto fail;
    if (jit_log && !products->log) {
        products->log = jit_log;
        jit_log = NULL;
    }
    kp_cuda_naming nm = {
        .decls = &decls, .entry = src->entry ? src->entry : "", .lowered = lowered};
    st = kp_cuda_program_meta(module, &nm, &products->meta, err);
    if (st != KPROF_OK) goto fail;
    kp_cuda_meta_tg_rules(products, &products->meta);
    p = calloc(1, sizeof *p);
    if (!p) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto fail;
    }
    p->dev = dev;
    p->module = module;
    *out = p;
    kp_cuda_decls_free(&decls);
    free(jit_log);
    return KPROF_OK;
fail:
    if (module) kp_cu.cuModuleUnload(module);
    kp_cuda_decls_free(&decls);
    free(jit_log);
    kp_build_output_free(products);
    return st;
}

static kprof_status kp_cuda_load_binary(kp_device *dev, const unsigned char *binary, size_t len,
                                        kp_program **out, kp_error *err)
{
    *out = NULL;
    CUmodule module = NULL;
    kp_program *p = NULL;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto fail;
    if (len == 0) {
        st = kp_error_set(err, KPROF_CORRUPT, "cuda: the cached binary is empty");
        goto fail;
    }
    /* PTX is kept with its NUL; a cubin (or fatbin) is handed to the driver as it is. */
    int ptx = binary[len - 1] == '\0' && !(len >= 4 && memcmp(binary, "\177ELF", 4) == 0);
    st = kp_cuda_module_load(dev, "the cached binary", ptx, binary, &module, NULL, err);
    if (st != KPROF_OK) goto fail;
    p = calloc(1, sizeof *p);
    if (!p) {
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
        goto fail;
    }
    p->dev = dev;
    p->module = module;
    *out = p;
    return KPROF_OK;
fail:
    if (module) kp_cu.cuModuleUnload(module);
    return st;
}

static void kp_cuda_program_release(kp_program *p)
{
    if (!p) return;
    if (!p->dev->poisoned && kp_cu.cuCtxSetCurrent(p->dev->context) == CUDA_SUCCESS)
        kp_cu.cuModuleUnload(p->module);
    free(p);
}

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

static kprof_status kp_cuda_kernel_create(kp_program *prog, const kp_kernel_meta *meta,
                                          kp_kernel **out, kp_error *err)
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
    if (!k) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    k->dev = prog->dev;
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

static void kp_cuda_kernel_release(kp_kernel *k)
{
    if (!k) return;
    free(k->cupti_ns);
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

static kprof_status kp_cuda_reflect(kp_kernel *k, const kp_launch *launch, kp_reflection *r,
                                    kp_error *err)
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

static kprof_status kp_cuda_alloc(kp_device *dev, uint64_t bytes, kp_buffer **out, kp_error *err)
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
        st = kp_error_set(err, KPROF_NOMEM, "out of memory");
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
static kprof_status kp_cuda_write(kp_buffer *b, const void *src, uint64_t bytes, kp_error *err)
{
    kp_device *dev = b->dev;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK || bytes == 0) return st;
    CUresult rc = kp_cu.cuMemcpyHtoDAsync(b->ptr, src, (size_t)bytes, dev->stream);
    if (rc == CUDA_SUCCESS) rc = kp_cu.cuStreamSynchronize(dev->stream);
    return rc == CUDA_SUCCESS ? KPROF_OK
                              : kp_cuda_fail(dev, err, "copying to the device (cuMemcpyHtoD)", rc);
}

static kprof_status kp_cuda_read(kp_buffer *b, void *dst, uint64_t bytes, kp_error *err)
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

static void kp_cuda_free(kp_buffer *b)
{
    if (!b) return;
    if (!b->dev->poisoned && kp_cu.cuCtxSetCurrent(b->dev->context) == CUDA_SUCCESS)
        kp_cu.cuMemFree(b->ptr);
    free(b);
}

/* ---- binding and dispatch ---------------------------------------------------------------- */

static kprof_status kp_cuda_bind(kp_kernel *k, const kp_spec *spec, kp_buffer *const *buffers,
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
                                dev->occ.max_threads_per_block);
        if (b > (uint64_t)(dev->max_grid[d] > 0 ? dev->max_grid[d] : 65535))
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu / tg %llu needs %llu blocks in dimension %c; the "
                                "device allows %d",
                                (unsigned long long)l->grid[d], (unsigned long long)l->tg[d],
                                (unsigned long long)b, "xyz"[d], dev->max_grid[d]);
        blocks[d] = (unsigned int)b;
        threads[d] = (unsigned int)l->tg[d];
    }
    return kp_cuda_allow_dynamic_smem(k, l->dyn_local, err);
}

/* One prepared launch between two events, waited for: its GPU time in ns. The dispatch path. */
static kprof_status kp_cuda_launch_timed(kp_kernel *k, const kp_launch *l,
                                         const unsigned int blocks[3],
                                         const unsigned int threads[3], double *gpu_ns,
                                         kp_error *err)
{
    kp_device *dev = k->dev;
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
    *gpu_ns = (double)ms * 1e6;
    return KPROF_OK;
}

static kprof_status kp_cuda_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns,
                                     kp_error *err)
{
    unsigned int blocks[3], threads[3];
    kprof_status st = kp_cuda_prepare(k, l, blocks, threads, err);
    return st == KPROF_OK ? kp_cuda_launch_timed(k, l, blocks, threads, gpu_ns, err) : st;
}

#define KP_CUPTI_CONCURRENT_BLOCKS_PER_SM 128
#define KP_CUPTI_CHUNK 16384

/* n dispatches timed by CUPTI kernel records (the GPU's own start/end of each kernel), or by
 * the events around each launch when CUPTI cannot be had or is not asked for. */
static kprof_status kp_cuda_dispatch_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns,
                                           char *timer, size_t timer_n, kp_error *err)
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
        if (kp_cupti_timer_enable(concurrent, why, sizeof why) == 0) cupti = 1;
        else if (l->timer == KP_TIMER_CUPTI)
            return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: --timer cupti: %s", why);
    }
    if (cupti && k->cupti_capacity < n) {
        double *p = realloc(k->cupti_ns, (size_t)n * sizeof *p);
        if (!p) return kp_error_set(err, KPROF_NOMEM, "out of memory");
        k->cupti_ns = p;
        k->cupti_capacity = n;
    }
    if (cupti) kp_cupti_timer_take(k->symbol, k->cupti_ns, 0, NULL); /* drop older records */
    /* Records are drained every KP_CUPTI_CHUNK dispatches, well inside the timer's ring. */
    int got = 0;
    uint64_t dropped = 0, lost = 0;
    for (int done = 0; done < n;) {
        int chunk = n - done < KP_CUPTI_CHUNK ? n - done : KP_CUPTI_CHUNK;
        for (int i = done; i < done + chunk; i++) {
            st = kp_cuda_launch_timed(k, l, blocks, threads, &gpu_ns[i], err);
            if (st != KPROF_OK) return st;
        }
        if (cupti) {
            got += kp_cupti_timer_take(k->symbol, k->cupti_ns + got, done + chunk - got, &lost);
            dropped += lost;
        }
        done += chunk;
    }
    if (!cupti) {
        if (l->timer == KP_TIMER_EVENTS) snprintf(timer, timer_n, "events");
        else snprintf(timer, timer_n, "events (CUPTI: %s)", why);
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
    snprintf(timer, timer_n, "cupti (%s kernel records)", kp_cupti_timer_kind());
    return KPROF_OK;
}

const kp_backend_ops kp_cuda_backend = {
    .name = "cuda",
    .kernels_in_process = 0, /* a GPU: a faulting kernel is an error the driver returns */
    .probe = kp_cuda_probe,
    .device_count = kp_cuda_device_count,
    .device_info = kp_cuda_device_info,
    .open = kp_cuda_open,
    .close = kp_cuda_close,
    .build = kp_cuda_build,
    .load = kp_cuda_load_binary,
    .program_release = kp_cuda_program_release,
    .kernel_create = kp_cuda_kernel_create,
    .kernel_release = kp_cuda_kernel_release,
    .reflect = kp_cuda_reflect,
    .alloc = kp_cuda_alloc,
    .write = kp_cuda_write,
    .read = kp_cuda_read,
    .free = kp_cuda_free,
    .bind = kp_cuda_bind,
    .dispatch = kp_cuda_dispatch,
    .dispatch_batch = kp_cuda_dispatch_batch,
};
