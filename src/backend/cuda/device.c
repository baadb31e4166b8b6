/*
 * device.c — the CUDA backend's devices: enumerated once through the driver API (libcuda,
 * loaded at run time), probed (or the reason there are none), described for `kprof caps`, and
 * opened: the primary context retained, one non-blocking stream and the two events that time
 * dispatches on it.
 *
 * Driver errors become kprof's here too. A kernel fault leaves the CUDA context unusable: every
 * later call fails the same way. The device remembers the fault (kp_cuda_poison), refuses
 * further work naming it (kp_cuda_enter), and the release functions of every file of the backend
 * skip the calls that would fail, so tearing down after a fault neither hangs nor crashes.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "base/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_CUDA_MAX_DEVICES 64

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
    kp_error why = {0};
    if (kp_cuda_load(&why) != KPROF_OK) {
        kp_strlcpy(kp_cuda_devices.why, why.message, sizeof kp_cuda_devices.why);
        kp_error_clear(&why);
        return;
    }
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

kprof_status kp_cuda_probe(kp_error *err)
{
    pthread_once(&kp_cuda_devices.once, kp_cuda_enumerate);
    if (kp_cuda_devices.ok) return KPROF_OK;
    return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_cuda_devices.why);
}

int kp_cuda_device_count(void)
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

kprof_status kp_cuda_device_info(int index, kp_device_info *info, kp_error *err)
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
    kp_strlcpy(info->pci_bus_id, pci, sizeof info->pci_bus_id);
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

void kp_cuda_poison(kp_device *dev, const char *text)
{
    if (!dev || dev->poisoned) return;
    dev->poisoned = 1;
    snprintf(dev->fault, sizeof dev->fault, "%s", text);
}

/* A failed driver call: its name and the error in words. Faults poison the device. */
kprof_status kp_cuda_fail(kp_device *dev, kp_error *err, const char *what, CUresult rc)
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
kprof_status kp_cuda_enter(kp_device *dev, kp_error *err)
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

/* Here, not in flush.c, so that closing a device calls nothing of the flush's (flush.c calls
 * device.c, not the other way). */
void kp_cuda_flush_release(kp_device *dev)
{
    kp_cuda_l2_flush_free(&dev->flush);
}

void kp_cuda_close(kp_device *dev)
{
    if (!dev) return;
    if (dev->context && !dev->poisoned && kp_cu.cuCtxSetCurrent(dev->context) == CUDA_SUCCESS) {
        kp_cuda_flush_release(dev);
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

kprof_status kp_cuda_open(int index, kp_device **out, kp_error *err)
{
    *out = NULL;
    if (index < 0 || index >= kp_cuda_device_count())
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuda: device %d does not exist", index);
    kprof_status st = KPROF_OK;
    CUresult rc = CUDA_SUCCESS;
    kp_device *dev = calloc(1, sizeof *dev);
    if (!dev) return kp_error_nomem(err);
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
