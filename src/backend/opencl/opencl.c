/*
 * opencl.c — the OpenCL backend: every platform's devices through the ICD loader, programs
 * compiled from OpenCL C at run time (with kernel argument info, so SPECs are checked against
 * the kernel's declaration), buffers, and dispatches timed with profiling events — the
 * device's own START/END timestamps, never host clocks; and a cache flush between dispatches
 * (a kernel of kprof's own reading twice the device's global memory cache).
 */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "backend/opencl/opencl.h"
#include "runtime/cl_api.h"
#include "base/util.h"
#include "core/clock_offset.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KP_CL_MAX_DEVICES 64

struct kp_device {
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;
    cl_command_queue queue;
    uint64_t max_alloc;
    kp_device_clock clock; /* the queue's device clock on CLOCK_MONOTONIC (clock_offset.h) */
    /* The cache flush (kp_cl_flush_cache), made on its first use. */
    cl_program flush_program;
    cl_kernel flush_kernel; /* NULL until the flush is ready */
    cl_mem flush_scratch;   /* flush_bytes the kernel reads */
    cl_mem flush_sink;      /* 4 bytes it never writes */
    uint64_t flush_bytes;
    size_t flush_items; /* the flush's global size */
};

struct kp_program {
    kp_device *dev;
    cl_program program;
};

struct kp_kernel {
    kp_device *dev;
    cl_kernel kernel;
    char name[256];
    cl_ulong static_local; /* CL_KERNEL_LOCAL_MEM_SIZE before any argument was set */
};

struct kp_buffer {
    kp_device *dev;
    cl_mem mem;
    uint64_t bytes;
};

/* Devices of every platform, enumerated once. */
static struct {
    pthread_once_t once;
    int count;
    cl_platform_id platform[KP_CL_MAX_DEVICES];
    cl_device_id device[KP_CL_MAX_DEVICES];
    char why[512];
    int ok;
} kp_cl_devices = {.once = PTHREAD_ONCE_INIT};

static void kp_cl_enumerate(void)
{
    kp_error why = {0};
    if (kp_cl_load(&why) != KPROF_OK) {
        kp_strlcpy(kp_cl_devices.why, why.message, sizeof kp_cl_devices.why);
        kp_error_clear(&why);
        return;
    }
    cl_uint nplat = 0;
    cl_int rc = kp_cl.clGetPlatformIDs(0, NULL, &nplat);
    if (rc == -1001 || (rc == CL_SUCCESS && nplat == 0)) {
        snprintf(kp_cl_devices.why, sizeof kp_cl_devices.why,
                 "no OpenCL platform found (no ICD registered in /etc/OpenCL/vendors or "
                 "$OCL_ICD_VENDORS; install e.g. Debian's pocl-opencl-icd)");
        return;
    }
    if (rc != CL_SUCCESS) {
        snprintf(kp_cl_devices.why, sizeof kp_cl_devices.why, "clGetPlatformIDs failed: %s",
                 kp_cl_error_name(rc));
        return;
    }
    cl_platform_id plats[16];
    if (nplat > 16) nplat = 16;
    kp_cl.clGetPlatformIDs(nplat, plats, NULL);
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        if (kp_cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS)
            continue;
        cl_device_id devs[KP_CL_MAX_DEVICES];
        if (ndev > KP_CL_MAX_DEVICES) ndev = KP_CL_MAX_DEVICES;
        if (kp_cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < ndev && kp_cl_devices.count < KP_CL_MAX_DEVICES; d++) {
            kp_cl_devices.platform[kp_cl_devices.count] = plats[p];
            kp_cl_devices.device[kp_cl_devices.count] = devs[d];
            kp_cl_devices.count++;
        }
    }
    if (kp_cl_devices.count == 0) {
        snprintf(kp_cl_devices.why, sizeof kp_cl_devices.why,
                 "OpenCL platforms found but they have no devices");
        return;
    }
    kp_cl_devices.ok = 1;
}

static kprof_status kp_cl_probe(kp_error *err)
{
    pthread_once(&kp_cl_devices.once, kp_cl_enumerate);
    if (kp_cl_devices.ok) return KPROF_OK;
    return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_cl_devices.why);
}

static int kp_cl_device_count(void)
{
    pthread_once(&kp_cl_devices.once, kp_cl_enumerate);
    return kp_cl_devices.ok ? kp_cl_devices.count : 0;
}

static void kp_cl_info_str(cl_device_id d, cl_device_info what, char *out, size_t n)
{
    out[0] = '\0';
    if (kp_cl.clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[n - 1] = '\0';
    kp_rstrip(out);
}

static uint64_t kp_cl_info_u64(cl_device_id d, cl_device_info what)
{
    cl_ulong v = 0;
    if (kp_cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return 0;
    return v;
}

static uint64_t kp_cl_info_uint(cl_device_id d, cl_device_info what)
{
    cl_uint v = 0;
    if (kp_cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return 0;
    return v;
}

static uint64_t kp_cl_info_size(cl_device_id d, cl_device_info what)
{
    size_t v = 0;
    if (kp_cl.clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return 0;
    return v;
}

static kprof_status kp_cl_device_info(int index, kp_device_info *info, kp_error *err)
{
    memset(info, 0, sizeof *info);
    if (index < 0 || index >= kp_cl_device_count())
        return kp_error_set(err, KPROF_UNAVAILABLE, "opencl: device %d does not exist", index);
    cl_device_id d = kp_cl_devices.device[index];
    cl_platform_id p = kp_cl_devices.platform[index];
    kp_strlcpy(info->backend, "opencl", sizeof info->backend);
    info->index = index;
    kp_cl_info_str(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    kp_cl_info_str(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    kp_cl_info_str(d, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    kp_cl_info_str(d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    if (kp_cl.clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof info->platform, info->platform, NULL) !=
        CL_SUCCESS)
        info->platform[0] = '\0';
    info->platform[sizeof info->platform - 1] = '\0';
    cl_device_type type = 0;
    kp_cl.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    info->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    /* A CPU device (PoCL, Intel's CPU runtime) runs kernels on threads of the calling process. */
    info->kernels_in_process = (type & CL_DEVICE_TYPE_CPU) != 0;
    info->compute_units = (uint32_t)kp_cl_info_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS);
    info->max_tg = kp_cl_info_size(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    size_t dims[3] = {0, 0, 0};
    kp_cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL);
    for (int i = 0; i < 3; i++)
        info->max_tg_dims[i] = dims[i];
    info->local_mem = kp_cl_info_u64(d, CL_DEVICE_LOCAL_MEM_SIZE);
    info->global_mem = kp_cl_info_u64(d, CL_DEVICE_GLOBAL_MEM_SIZE);
    info->max_alloc = kp_cl_info_u64(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    info->timer_resolution_ns = (double)kp_cl_info_size(d, CL_DEVICE_PROFILING_TIMER_RESOLUTION);
    cl_command_queue_properties qp = 0;
    kp_cl.clGetDeviceInfo(d, CL_DEVICE_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    info->profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
    /* kprof builds OpenCL C with the default language version (1.2), which needs uniform
     * work-groups whatever the device could do with CL 2.0 non-uniform groups. */
    info->uniform_groups = 1;

    char text[256];
    const char *tname = (type & CL_DEVICE_TYPE_GPU)           ? "GPU"
                        : (type & CL_DEVICE_TYPE_CPU)         ? "CPU"
                        : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                              : "other";
    kp_device_fact_add(info, "type", "type", 0, "%s", tname);
    kp_cl_info_str(d, CL_DEVICE_OPENCL_C_VERSION, text, sizeof text);
    kp_device_fact_add(info, "opencl_c_version", "OpenCL C", 0, "%s", text);
    kp_device_fact_add(info, "max_clock_mhz", "max clock (MHz)", 1, "%llu",
                       (unsigned long long)kp_cl_info_uint(d, CL_DEVICE_MAX_CLOCK_FREQUENCY));
    kp_device_fact_add(info, "max_work_item_sizes", "max work-item sizes", 0, "%zux%zux%zu",
                       dims[0], dims[1], dims[2]);
    info->cache_bytes = kp_cl_info_u64(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
    snprintf(info->peak_bandwidth_reason, sizeof info->peak_bandwidth_reason,
             "OpenCL reports no memory clock or bus width to compute it from");
    kp_device_fact_add(info, "global_mem_cache_bytes", "global memory cache", KP_FACT_BYTES, "%llu",
                       (unsigned long long)info->cache_bytes);
    kp_device_fact_add(info, "address_bits", "address bits", 1, "%llu",
                       (unsigned long long)kp_cl_info_uint(d, CL_DEVICE_ADDRESS_BITS));
    kp_device_fact_add(info, "double_precision", "double precision", 0, "%s",
                       kp_cl_info_u64(d, CL_DEVICE_DOUBLE_FP_CONFIG) ? "yes" : "no");
    return KPROF_OK;
}

static kprof_status kp_cl_fail(kp_error *err, const char *what, cl_int rc)
{
    kprof_status st = KPROF_BACKEND;
    if (rc == CL_OUT_OF_HOST_MEMORY || rc == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
        rc == CL_INVALID_BUFFER_SIZE)
        st = KPROF_NOMEM;
    return kp_error_set(err, st, "opencl: %s failed: %s (%d)", what, kp_cl_error_name(rc), (int)rc);
}

static kprof_status kp_cl_open(int index, kp_device **out, kp_error *err)
{
    *out = NULL;
    if (index < 0 || index >= kp_cl_device_count())
        return kp_error_set(err, KPROF_UNAVAILABLE, "opencl: device %d does not exist", index);
    kp_device *dev = calloc(1, sizeof *dev);
    if (!dev) return kp_error_nomem(err);
    dev->platform = kp_cl_devices.platform[index];
    dev->id = kp_cl_devices.device[index];
    dev->max_alloc = kp_cl_info_u64(dev->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    cl_int rc = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
    dev->context = kp_cl.clCreateContext(props, 1, &dev->id, NULL, NULL, &rc);
    if (!dev->context) {
        free(dev);
        return kp_cl_fail(err, "clCreateContext", rc);
    }
    dev->queue = kp_cl.clCreateCommandQueue(dev->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (!dev->queue) {
        kp_cl.clReleaseContext(dev->context);
        free(dev);
        return kp_cl_fail(err, "clCreateCommandQueue (with profiling)", rc);
    }
    *out = dev;
    return KPROF_OK;
}

static void kp_cl_flush_release(kp_device *dev);

static void kp_cl_close(kp_device *dev)
{
    if (!dev) return;
    kp_cl_flush_release(dev);
    kp_cl.clReleaseCommandQueue(dev->queue);
    kp_cl.clReleaseContext(dev->context);
    free(dev);
}

/* A runtime that ignores the #line directive kprof puts first (NVIDIA's names the source
 * "<kernel>"; seen on the H200, 2026-11-30) cites "<kernel>:LINE:COL:", one line below the
 * user's: name the user's file and the user's line. Returns a new log (heap) or NULL when
 * nothing needs rewriting. */
char *kp_cl_log_name_source(const char *log, const char *path)
{
    static const char tag[] = "<kernel>:";
    if (!path || !*path || !strstr(log, tag)) return NULL;
    kp_str out = {0};
    for (const char *p = log; *p;) {
        const char *hit = strstr(p, tag);
        if (!hit) {
            kp_str_append(&out, p);
            break;
        }
        kp_str_append_n(&out, p, (size_t)(hit - p));
        char *end = NULL;
        long line = strtol(hit + sizeof tag - 1, &end, 10);
        if (end != hit + sizeof tag - 1 && *end == ':' && line > 1) {
            kp_str_printf(&out, "%s:%ld", path, line - 1);
            p = end;
        } else {
            kp_str_append_n(&out, hit, sizeof tag - 1);
            p = hit + sizeof tag - 1;
        }
    }
    return out.failed ? (kp_str_free(&out), NULL) : kp_str_take(&out);
}

/* The build log, its source named as the user's file where the runtime did not (path may be
 * NULL: a binary). */
static char *kp_cl_build_log(kp_device *dev, cl_program prog, const char *path)
{
    size_t n = 0;
    if (kp_cl.clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) !=
            CL_SUCCESS ||
        n == 0)
        return NULL;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (kp_cl.clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) !=
        CL_SUCCESS) {
        free(log);
        return NULL;
    }
    log[n] = '\0';
    kp_rstrip(log);
    char *named = kp_cl_log_name_source(log, path);
    if (named) {
        free(log);
        log = named;
    }
    return log;
}

/* By-value sizes of OpenCL C scalar and vector types ("uint", "float4"); 0 when unknown. */
static uint32_t kp_cl_type_size(const char *type)
{
    static const struct {
        const char *name;
        uint32_t size;
    } base[] = {{"char", 1}, {"uchar", 1}, {"short", 2},  {"ushort", 2},      {"int", 4},
                {"uint", 4}, {"long", 8},  {"ulong", 8},  {"float", 4},       {"double", 8},
                {"half", 2}, {"bool", 1},  {"size_t", 8}, {"unsigned int", 4}};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        size_t len = strlen(base[i].name);
        if (strncmp(type, base[i].name, len) != 0) continue;
        const char *rest = type + len;
        if (!*rest) return base[i].size;
        int width = atoi(rest);
        if (width == 2 || width == 4 || width == 8 || width == 16)
            return base[i].size * (uint32_t)width;
        if (width == 3) return base[i].size * 4;
    }
    return 0;
}

static kprof_status kp_cl_kernel_meta(cl_kernel k, kp_kernel_meta *m, kp_error *err)
{
    memset(m, 0, sizeof *m);
    size_t name_len = 0;
    if (kp_cl.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &name_len) == CL_SUCCESS &&
        name_len > sizeof m->name)
        return kp_error_set(err, KPROF_INVALID,
                            "a kernel's name is %zu characters long; kprof takes up to %zu",
                            name_len - 1, sizeof m->name - 1);
    if (kp_cl.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof m->name, m->name, NULL) !=
        CL_SUCCESS)
        return kp_error_set(err, KPROF_BACKEND, "opencl: cannot read a kernel's name");
    m->name[sizeof m->name - 1] = '\0';
    kp_strlcpy(m->symbol, m->name, sizeof m->symbol);
    cl_uint nargs = 0;
    kp_cl.clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    m->nparams = (int)nargs;
    if (nargs == 0) return KPROF_OK;
    m->params = calloc(nargs, sizeof *m->params);
    if (!m->params) return kp_error_nomem(err);
    for (cl_uint i = 0; i < nargs; i++) {
        kp_param *p = &m->params[i];
        cl_kernel_arg_address_qualifier aq = 0;
        if (kp_cl.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL) !=
            CL_SUCCESS) {
            p->kind = KP_PARAM_UNKNOWN;
            continue;
        }
        kp_cl.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof p->type_name, p->type_name,
                                 NULL);
        p->type_name[sizeof p->type_name - 1] = '\0';
        kp_cl.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_NAME, sizeof p->name, p->name, NULL);
        p->name[sizeof p->name - 1] = '\0';
        /* Images (reported as global), samplers, pipes and queues cannot be bound from a SPEC. */
        if (strncmp(p->type_name, "image", 5) == 0 || strcmp(p->type_name, "sampler_t") == 0 ||
            strncmp(p->type_name, "pipe", 4) == 0 || strcmp(p->type_name, "queue_t") == 0 ||
            strcmp(p->type_name, "clk_event_t") == 0) {
            p->kind = KP_PARAM_OPAQUE;
            continue;
        }
        switch (aq) {
        case CL_KERNEL_ARG_ADDRESS_GLOBAL:
            p->kind = KP_PARAM_GLOBAL;
            p->size = 8;
            break;
        case CL_KERNEL_ARG_ADDRESS_CONSTANT:
            p->kind = KP_PARAM_CONSTANT;
            p->size = 8;
            break;
        case CL_KERNEL_ARG_ADDRESS_LOCAL:
            p->kind = KP_PARAM_LOCAL;
            break;
        default:
            /* A private pointer cannot be a kernel argument, so private means by value. */
            p->kind = KP_PARAM_VALUE;
            p->size = kp_cl_type_size(p->type_name);
            break;
        }
    }
    return KPROF_OK;
}

static kprof_status kp_cl_program_meta(cl_program prog, kp_program_meta *meta, kp_error *err)
{
    memset(meta, 0, sizeof *meta);
    cl_uint n = 0;
    cl_int rc = kp_cl.clCreateKernelsInProgram(prog, 0, NULL, &n);
    if (rc != CL_SUCCESS) return kp_cl_fail(err, "clCreateKernelsInProgram", rc);
    if (n == 0) return KPROF_OK;
    cl_kernel *ks = calloc(n, sizeof *ks);
    meta->kernels = calloc(n, sizeof *meta->kernels);
    if (!ks || !meta->kernels) {
        free(ks);
        return kp_error_nomem(err);
    }
    kprof_status st = KPROF_OK;
    rc = kp_cl.clCreateKernelsInProgram(prog, n, ks, NULL);
    if (rc != CL_SUCCESS) {
        st = kp_cl_fail(err, "clCreateKernelsInProgram", rc);
        n = 0;
    }
    for (cl_uint i = 0; i < n; i++) {
        if (st == KPROF_OK) {
            st = kp_cl_kernel_meta(ks[i], &meta->kernels[meta->nkernels], err);
            if (st == KPROF_OK) meta->nkernels++;
        }
        kp_cl.clReleaseKernel(ks[i]);
    }
    free(ks);
    if (st != KPROF_OK) kp_program_meta_free(meta);
    return st;
}

static kprof_status kp_cl_get_binary(kp_device *dev, cl_program prog, unsigned char **binary,
                                     size_t *len)
{
    (void)dev;
    *binary = NULL;
    *len = 0;
    size_t size = 0;
    if (kp_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return KPROF_OK; /* not serialisable here: simply not cached */
    unsigned char *bin = malloc(size);
    if (!bin) return KPROF_OK;
    unsigned char *bins[1] = {bin};
    if (kp_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS) {
        free(bin);
        return KPROF_OK;
    }
    *binary = bin;
    *len = size;
    return KPROF_OK;
}

static kprof_status kp_cl_build(kp_device *dev, const kp_source *src, kp_program **out,
                                kp_build_output *products, kp_error *err)
{
    *out = NULL;
    memset(products, 0, sizeof *products);
    products->binary_ext = "bin";
    kp_program_meta *meta = &products->meta;
    if (src->lang != KP_LANG_OPENCL_C)
        return kp_error_set(err, KPROF_INVALID, "opencl: %s is not OpenCL C", src->path);
    cl_int rc = CL_SUCCESS;
    /* The runtime compiles a temporary copy of the source (PoCL's
     * ~/.cache/pocl/kcache/tempfile_XXXXXX.cl) and its log would cite that file: a #line
     * directive names the user's instead, keeping every line and column. */
    kp_str named = {0};
    int plain_path = 1;
    for (const char *c = src->path; *c; c++)
        plain_path &= (unsigned char)*c >= 0x20 && *c != 0x7f;
    if (plain_path && src->path[0]) {
        kp_str_append(&named, "#line 1 \"");
        for (const char *c = src->path; *c; c++) {
            if (*c == '"' || *c == '\\') kp_str_append_n(&named, "\\", 1);
            kp_str_append_n(&named, c, 1);
        }
        kp_str_append(&named, "\"\n");
    }
    const char *texts[2] = {named.data ? named.data : "", src->text};
    size_t lens[2] = {named.len, src->len};
    if (named.failed) {
        kp_str_free(&named);
        return kp_error_nomem(err);
    }
    cl_program prog = kp_cl.clCreateProgramWithSource(dev->context, 2, texts, lens, &rc);
    kp_str_free(&named);
    if (!prog) return kp_cl_fail(err, "clCreateProgramWithSource", rc);
    kp_str opts = {0};
    kp_str_printf(&opts, "-cl-kernel-arg-info %s", src->options ? src->options : "");
    if (opts.failed) {
        kp_cl.clReleaseProgram(prog);
        return kp_error_nomem(err);
    }
    rc = kp_cl.clBuildProgram(prog, 1, &dev->id, opts.data, NULL, NULL);
    products->options = kp_str_take(&opts);
    if (rc != CL_SUCCESS) {
        char *log = kp_cl_build_log(dev, prog, plain_path && src->path[0] ? src->path : NULL);
        kp_cl.clReleaseProgram(prog);
        if (rc == CL_BUILD_PROGRAM_FAILURE || rc == CL_INVALID_BUILD_OPTIONS) {
            kp_error_set(err, KPROF_COMPILE, "%s: OpenCL C compile failed (%s)", src->path,
                         kp_cl_error_name(rc));
            kp_error_take_log(err, log);
            return KPROF_COMPILE;
        }
        free(log);
        return kp_cl_fail(err, "clBuildProgram", rc);
    }
    products->log = kp_cl_build_log(dev, prog, plain_path && src->path[0] ? src->path : NULL);
    kprof_status st = kp_cl_program_meta(prog, meta, err);
    if (st != KPROF_OK) {
        kp_cl.clReleaseProgram(prog);
        kp_build_output_free(products);
        return st;
    }
    kp_cl_get_binary(dev, prog, &products->binary, &products->binary_len);
    kp_program *p = calloc(1, sizeof *p);
    if (!p) {
        kp_cl.clReleaseProgram(prog);
        kp_build_output_free(products);
        return kp_error_nomem(err);
    }
    p->dev = dev;
    p->program = prog;
    *out = p;
    return KPROF_OK;
}

static kprof_status kp_cl_load_binary(kp_device *dev, const unsigned char *binary, size_t len,
                                      kp_program **out, kp_error *err)
{
    *out = NULL;
    cl_int rc = CL_SUCCESS, status = CL_SUCCESS;
    cl_program prog =
        kp_cl.clCreateProgramWithBinary(dev->context, 1, &dev->id, &len, &binary, &status, &rc);
    if (!prog) return kp_cl_fail(err, "clCreateProgramWithBinary", rc);
    rc = kp_cl.clBuildProgram(prog, 1, &dev->id, NULL, NULL, NULL);
    if (rc != CL_SUCCESS) {
        kp_cl.clReleaseProgram(prog);
        return kp_cl_fail(err, "clBuildProgram (cached binary)", rc);
    }
    kp_program *p = calloc(1, sizeof *p);
    if (!p) {
        kp_cl.clReleaseProgram(prog);
        return kp_error_nomem(err);
    }
    p->dev = dev;
    p->program = prog;
    *out = p;
    return KPROF_OK;
}

static void kp_cl_program_release(kp_program *p)
{
    if (!p) return;
    kp_cl.clReleaseProgram(p->program);
    free(p);
}

static kprof_status kp_cl_kernel_create(kp_program *prog, const kp_kernel_meta *meta,
                                        kp_kernel **out, kp_error *err)
{
    *out = NULL;
    cl_int rc = CL_SUCCESS;
    cl_kernel k = kp_cl.clCreateKernel(prog->program, meta->symbol, &rc);
    if (!k) return kp_cl_fail(err, "clCreateKernel", rc);
    kp_kernel *kk = calloc(1, sizeof *kk);
    if (!kk) {
        kp_cl.clReleaseKernel(k);
        return kp_error_nomem(err);
    }
    kk->dev = prog->dev;
    kk->kernel = k;
    kp_strlcpy(kk->name, meta->name, sizeof kk->name);
    /* CL_KERNEL_LOCAL_MEM_SIZE counts the __local arguments set so far as well as the
     * kernel's own __local variables; with no argument set yet (an unset __local argument
     * counts 0 bytes) it is the kernel's static local memory alone. */
    kp_cl.clGetKernelWorkGroupInfo(k, prog->dev->id, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof kk->static_local, &kk->static_local, NULL);
    *out = kk;
    return KPROF_OK;
}

static void kp_cl_kernel_release(kp_kernel *k)
{
    if (!k) return;
    kp_cl.clReleaseKernel(k->kernel);
    free(k);
}

static kprof_status kp_cl_reflect(kp_kernel *k, const kp_launch *launch, kp_reflection *r,
                                  kp_error *err)
{
    (void)launch;
    memset(r, 0, sizeof *r);
    size_t wg = 0, mult = 0, reqd[3] = {0, 0, 0};
    cl_ulong priv = 0;
    cl_int rc = kp_cl.clGetKernelWorkGroupInfo(k->kernel, k->dev->id, CL_KERNEL_WORK_GROUP_SIZE,
                                               sizeof wg, &wg, NULL);
    if (rc != CL_SUCCESS) return kp_cl_fail(err, "clGetKernelWorkGroupInfo", rc);
    kp_cl.clGetKernelWorkGroupInfo(k->kernel, k->dev->id,
                                   CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult,
                                   NULL);
    kp_cl.clGetKernelWorkGroupInfo(k->kernel, k->dev->id, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv,
                                   &priv, NULL);
    /* __attribute__((reqd_work_group_size(X, Y, Z))): (0, 0, 0) when the kernel has none.
     * CL_KERNEL_WORK_GROUP_SIZE does not take it into account (PoCL reports 4096 for a kernel
     * that only runs at 64), so the kernel's maximum is lowered to it here. */
    rc = kp_cl.clGetKernelWorkGroupInfo(k->kernel, k->dev->id, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                                        sizeof reqd, reqd, NULL);
    if (rc == CL_SUCCESS && reqd[0] && reqd[1] && reqd[2]) {
        r->tg_rule = KP_TG_RULE_REQUIRED;
        r->tg_rule_from = "reqd_work_group_size";
        uint64_t threads = 1;
        for (int d = 0; d < 3; d++) {
            r->tg_rule_size[d] = reqd[d];
            threads *= reqd[d];
        }
        if (!wg || threads < wg) wg = (size_t)threads;
    }
    r->max_tg = wg;
    r->preferred_multiple = mult;
    r->static_local = k->static_local;
    r->private_bytes = priv;
    return KPROF_OK;
}

static kprof_status kp_cl_alloc(kp_device *dev, uint64_t bytes, kp_buffer **out, kp_error *err)
{
    *out = NULL;
    if (dev->max_alloc && bytes > dev->max_alloc)
        return kp_error_set(err, KPROF_NOMEM,
                            "opencl: a buffer of %llu bytes exceeds the device's largest "
                            "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu bytes)",
                            (unsigned long long)bytes, (unsigned long long)dev->max_alloc);
    cl_int rc = CL_SUCCESS;
    cl_mem mem = kp_cl.clCreateBuffer(dev->context, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &rc);
    if (!mem) return kp_cl_fail(err, "clCreateBuffer", rc);
    kp_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        kp_cl.clReleaseMemObject(mem);
        return kp_error_nomem(err);
    }
    b->dev = dev;
    b->mem = mem;
    b->bytes = bytes;
    *out = b;
    return KPROF_OK;
}

static kprof_status kp_cl_write(kp_buffer *b, const void *src, uint64_t bytes, kp_error *err)
{
    cl_int rc = kp_cl.clEnqueueWriteBuffer(b->dev->queue, b->mem, CL_TRUE, 0, (size_t)bytes, src, 0,
                                           NULL, NULL);
    return rc == CL_SUCCESS ? KPROF_OK : kp_cl_fail(err, "clEnqueueWriteBuffer", rc);
}

static kprof_status kp_cl_read(kp_buffer *b, void *dst, uint64_t bytes, kp_error *err)
{
    cl_int rc = kp_cl.clEnqueueReadBuffer(b->dev->queue, b->mem, CL_TRUE, 0, (size_t)bytes, dst, 0,
                                          NULL, NULL);
    return rc == CL_SUCCESS ? KPROF_OK : kp_cl_fail(err, "clEnqueueReadBuffer", rc);
}

static void kp_cl_free(kp_buffer *b)
{
    if (!b) return;
    kp_cl.clReleaseMemObject(b->mem);
    free(b);
}

static kprof_status kp_cl_bind(kp_kernel *k, const kp_spec *spec, kp_buffer *const *buffers,
                               kp_error *err)
{
    for (int i = 0; i < spec->count; i++) {
        const kp_arg_spec *a = &spec->args[i];
        cl_int rc;
        if (a->kind == KP_ARG_BUFFER)
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, sizeof(cl_mem), &buffers[i]->mem);
        else if (a->kind == KP_ARG_SCALAR)
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, kp_type_size(a->type), a->value);
        else
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, (size_t)a->local_bytes, NULL);
        if (rc != CL_SUCCESS)
            return kp_error_set(err, KPROF_INVALID,
                                "opencl: argument %d ('%s') of %s was refused: %s (%d)", i + 1,
                                a->text, k->name, kp_cl_error_name(rc), (int)rc);
    }
    return KPROF_OK;
}

/* A captured launch's arguments: value bytes as clSetKernelArg was given them, a cl_mem for each
 * buffer argument, (size, NULL) for __local memory. OpenCL passes no device addresses by value
 * (no SVM here), so a pointer to patch is refused. */
static kprof_status kp_cl_bind_capture(kp_kernel *k, const kp_raw_args *args,
                                       kp_buffer *const *buffers, kp_error *err)
{
    if (args->nptrs > 0)
        return kp_error_set(err, KPROF_INVALID,
                            "opencl: %s: the capture holds device addresses inside by-value "
                            "arguments, which OpenCL replays cannot patch",
                            k->name);
    cl_uint nargs = 0;
    if (kp_cl.clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) ==
            CL_SUCCESS &&
        (int)nargs != args->nargs)
        return kp_error_set(err, KPROF_INVALID,
                            "opencl: the capture has %d argument%s but %s takes %u", args->nargs,
                            args->nargs == 1 ? "" : "s", k->name, (unsigned)nargs);
    for (int i = 0; i < args->nargs; i++) {
        const kp_raw_arg *a = &args->args[i];
        cl_int rc;
        if (a->kind == KP_RAW_BUFFER && a->buffer < 0) {
            /* The program passed no buffer (a NULL cl_mem): so does the replay. */
            cl_mem none = NULL;
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, sizeof(cl_mem), &none);
        } else if (a->kind == KP_RAW_BUFFER) {
            if (!buffers || !buffers[a->buffer])
                return kp_error_set(err, KPROF_INVALID,
                                    "opencl: captured argument %d of %s has no buffer to bind",
                                    i + 1, k->name);
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, sizeof(cl_mem),
                                      &buffers[a->buffer]->mem);
        } else if (a->kind == KP_RAW_VALUE) {
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, a->size, a->bytes);
        } else {
            rc = kp_cl.clSetKernelArg(k->kernel, (cl_uint)i, a->size, NULL);
        }
        if (rc != CL_SUCCESS)
            return kp_error_set(
                err, KPROF_INVALID,
                "opencl: captured argument %d (%u bytes) of %s was refused: %s (%d)", i + 1,
                (unsigned)a->size, k->name, kp_cl_error_name(rc), (int)rc);
    }
    return KPROF_OK;
}

typedef struct kp_cl_waiter {
    cl_event ev;
    cl_int rc;     /* clGetEventInfo's result */
    cl_int status; /* the command's execution status */
} kp_cl_waiter;

/* kp_poll_until's poll: 1 complete, -1 failed, 0 still running. */
static int kp_cl_event_poll(void *ctx)
{
    kp_cl_waiter *w = ctx;
    w->status = CL_QUEUED;
    w->rc = kp_cl.clGetEventInfo(w->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof w->status,
                                 &w->status, NULL);
    if (w->rc != CL_SUCCESS || w->status < 0) return -1;
    return w->status == CL_COMPLETE;
}

/* Wait for ev, polling when a timeout is set. */
static kprof_status kp_cl_wait(kp_kernel *k, cl_event ev, double timeout_s, kp_error *err)
{
    if (timeout_s <= 0) {
        cl_int rc = kp_cl.clWaitForEvents(1, &ev);
        if (rc == CL_SUCCESS) return KPROF_OK;
        return kp_error_set(err, KPROF_FAULT, "opencl: kernel %s failed: %s (%d)", k->name,
                            kp_cl_error_name(rc), (int)rc);
    }
    kp_cl.clFlush(k->dev->queue);
    kp_cl_waiter w = {.ev = ev};
    int r = kp_poll_until(kp_cl_event_poll, &w, timeout_s);
    if (r == 1) return KPROF_OK;
    if (r < 0 && w.rc != CL_SUCCESS) return kp_cl_fail(err, "clGetEventInfo", w.rc);
    if (r < 0)
        return kp_error_set(err, KPROF_FAULT, "opencl: kernel %s failed: %s (%d)", k->name,
                            kp_cl_error_name(w.status), (int)w.status);
    return kp_error_set(err, KPROF_TIMEOUT,
                        "kernel %s is still running after %g s (--timeout); kprof stopped waiting",
                        k->name, timeout_s);
}

/* An event's QUEUED, START and END stamps: *ns its duration, and (when span is not NULL) when
 * it ran on the host clock, the device's clock mapped through dev->clock, which the event's
 * enqueue call (host_enqueue .. host_return, CLOCK_MONOTONIC) moves. */
static cl_int kp_cl_event_times(kp_device *dev, cl_event ev, uint64_t host_enqueue,
                                uint64_t host_return, double *ns, kp_dispatch_span *span)
{
    cl_ulong queued = 0, t0 = 0, t1 = 0;
    cl_int rc = kp_cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (rc == CL_SUCCESS)
        rc = kp_cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (rc != CL_SUCCESS) return rc;
    *ns = (double)(t1 - t0);
    if (span) {
        if (kp_cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued,
                                          NULL) != CL_SUCCESS)
            queued = 0;
        kp_device_clock_observe(&dev->clock, host_enqueue, host_return, queued, t0);
        *span = kp_dispatch_span_at((int64_t)kp_device_clock_map(&dev->clock, t0), *ns);
    }
    return CL_SUCCESS;
}

static kprof_status kp_cl_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns,
                                   kp_dispatch_span *span, kp_error *err)
{
    size_t grid[3], tg[3];
    for (int d = 0; d < l->dims; d++)
        grid[d] = (size_t)l->grid[d], tg[d] = (size_t)l->tg[d];
    cl_event ev = NULL;
    uint64_t host_enqueue = span ? kp_now_ns() : 0; /* the clock is read only for a span */
    cl_int rc = kp_cl.clEnqueueNDRangeKernel(k->dev->queue, k->kernel, (cl_uint)l->dims, NULL, grid,
                                             tg, 0, NULL, &ev);
    uint64_t host_return = span ? kp_now_ns() : 0;
    if (rc != CL_SUCCESS) {
        kprof_status st = rc == CL_INVALID_WORK_GROUP_SIZE || rc == CL_INVALID_KERNEL_ARGS ||
                                  rc == CL_INVALID_WORK_ITEM_SIZE ||
                                  rc == CL_INVALID_GLOBAL_WORK_SIZE
                              ? KPROF_INVALID
                              : KPROF_BACKEND;
        return kp_error_set(err, st, "opencl: launching %s failed: %s (%d)", k->name,
                            kp_cl_error_name(rc), (int)rc);
    }
    kprof_status st = kp_cl_wait(k, ev, l->timeout_s, err);
    if (st == KPROF_OK) {
        rc = kp_cl_event_times(k->dev, ev, host_enqueue, host_return, gpu_ns, span);
        if (rc != CL_SUCCESS) st = kp_cl_fail(err, "clGetEventProfilingInfo", rc);
    }
    if (st != KPROF_TIMEOUT) kp_cl.clReleaseEvent(ev);
    return st;
}

/* ---- the cache flush ------------------------------------------------------------------------
 *
 * kp_backend_ops.flush_cache: read (never write: dirty lines would make the measured kernel pay
 * their write-back) a scratch twice CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, so the next dispatch finds
 * none of its data in the cache. For PoCL on a CPU that cache is the CPU's own last level. A GPU
 * reads best with a grid-stride loop (neighbouring work-items, neighbouring addresses); a CPU
 * runs a work-group's items one after the other, and reads best a contiguous run per item. The
 * sum is stored only when it equals an odd number, which a scratch of 0x01 bytes never sums to
 * (a multiple of 4), so the loads cannot be dropped and the kernel never writes. */

#define KP_CL_FLUSH_ITEMS_PER_UNIT 1024 /* 256 x 4 work-items per compute unit */
#define KP_CL_FLUSH_FILL_CHUNK     (1u << 20)

static const char kp_cl_flush_source[] =
    "__kernel void kprof_cache_flush(__global const uint4 *scratch, ulong count, uint contiguous,\n"
    "                                __global uint *sink)\n"
    "{\n"
    "    ulong id = get_global_id(0), items = get_global_size(0);\n"
    "    ulong first = id, end = count, step = items;\n"
    "    if (contiguous) {\n"
    "        ulong per = (count + items - 1) / items;\n"
    "        first = id * per;\n"
    "        end = min(count, first + per);\n"
    "        step = 1;\n"
    "    }\n"
    "    uint sum = 0;\n"
    "    for (ulong i = first; i < end; i += step) {\n"
    "        uint4 v = scratch[i];\n"
    "        sum += v.x + v.y + v.z + v.w;\n"
    "    }\n"
    "    if (sum == 0x7fc0ffedu) *sink = sum;\n"
    "}\n";

static void kp_cl_flush_release(kp_device *dev)
{
    if (dev->flush_kernel) kp_cl.clReleaseKernel(dev->flush_kernel);
    if (dev->flush_program) kp_cl.clReleaseProgram(dev->flush_program);
    if (dev->flush_scratch) kp_cl.clReleaseMemObject(dev->flush_scratch);
    if (dev->flush_sink) kp_cl.clReleaseMemObject(dev->flush_sink);
    dev->flush_kernel = NULL;
    dev->flush_program = NULL;
    dev->flush_scratch = dev->flush_sink = NULL;
}

/* Build the kernel, make and fill the scratch, set the arguments: the first time only. On
 * failure nothing is kept. */
static kprof_status kp_cl_flush_prepare(kp_device *dev, kp_error *err)
{
    if (dev->flush_kernel) return KPROF_OK;
    kprof_status st = KPROF_OK;
    cl_int rc = CL_SUCCESS;
    unsigned char *fill = NULL;
    uint64_t bytes = kp_flush_bytes(kp_cl_info_u64(dev->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE));
    /* A GPU's OpenCL may report a per-multiprocessor cache as its global memory cache (NVIDIA's
     * says 4 MiB on an H200, whose L2 is 60 MiB): on a GPU the scratch is at least 256 MiB,
     * what triton's do_bench clears, beyond any L2 made so far. */
    if ((kp_cl_info_u64(dev->id, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) && bytes < (256ull << 20))
        bytes = 256ull << 20;
    if (dev->max_alloc && bytes > dev->max_alloc) {
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "opencl: this device cannot flush its cache: the %llu-byte scratch "
                          "(twice its global memory cache) is larger than its largest "
                          "allocation (%llu bytes)",
                          (unsigned long long)bytes, (unsigned long long)dev->max_alloc);
        goto fail;
    }
    const char *text = kp_cl_flush_source;
    dev->flush_program = kp_cl.clCreateProgramWithSource(dev->context, 1, &text, NULL, &rc);
    if (!dev->flush_program) {
        st = kp_cl_fail(err, "clCreateProgramWithSource (kprof's cache flush)", rc);
        goto fail;
    }
    rc = kp_cl.clBuildProgram(dev->flush_program, 1, &dev->id, "", NULL, NULL);
    if (rc != CL_SUCCESS) {
        kp_error_set(err, KPROF_UNAVAILABLE,
                     "opencl: this device cannot flush its cache: building kprof's flush kernel "
                     "failed: %s (%d)",
                     kp_cl_error_name(rc), (int)rc);
        kp_error_take_log(err, kp_cl_build_log(dev, dev->flush_program, NULL));
        st = KPROF_UNAVAILABLE;
        goto fail;
    }
    dev->flush_kernel = kp_cl.clCreateKernel(dev->flush_program, "kprof_cache_flush", &rc);
    if (!dev->flush_kernel) {
        st = kp_cl_fail(err, "clCreateKernel (kprof's cache flush)", rc);
        goto fail;
    }
    dev->flush_scratch =
        kp_cl.clCreateBuffer(dev->context, CL_MEM_READ_ONLY, (size_t)bytes, NULL, &rc);
    if (dev->flush_scratch)
        dev->flush_sink = kp_cl.clCreateBuffer(dev->context, CL_MEM_WRITE_ONLY, 4, NULL, &rc);
    if (!dev->flush_scratch || !dev->flush_sink) {
        st = kp_cl_fail(err, "clCreateBuffer (the cache flush's scratch)", rc);
        goto fail;
    }
    /* Written once, here: pages never written may all map one page of zeros on a CPU device,
     * and reading them would then flush nothing. */
    fill = malloc(KP_CL_FLUSH_FILL_CHUNK);
    if (!fill) {
        st = kp_error_nomem(err);
        goto fail;
    }
    memset(fill, 0x01, KP_CL_FLUSH_FILL_CHUNK);
    for (uint64_t at = 0; at < bytes; at += KP_CL_FLUSH_FILL_CHUNK) {
        size_t n =
            bytes - at < KP_CL_FLUSH_FILL_CHUNK ? (size_t)(bytes - at) : KP_CL_FLUSH_FILL_CHUNK;
        rc = kp_cl.clEnqueueWriteBuffer(dev->queue, dev->flush_scratch, CL_TRUE, (size_t)at, n,
                                        fill, 0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            st = kp_cl_fail(err, "clEnqueueWriteBuffer (the cache flush's scratch)", rc);
            goto fail;
        }
    }
    cl_device_type type = 0;
    kp_cl.clGetDeviceInfo(dev->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    cl_uint units = (cl_uint)kp_cl_info_uint(dev->id, CL_DEVICE_MAX_COMPUTE_UNITS);
    cl_ulong count = bytes / 16;
    cl_uint contiguous = (type & CL_DEVICE_TYPE_CPU) != 0;
    dev->flush_items = (size_t)(units ? units : 1) * KP_CL_FLUSH_ITEMS_PER_UNIT;
    rc = kp_cl.clSetKernelArg(dev->flush_kernel, 0, sizeof(cl_mem), &dev->flush_scratch);
    if (rc == CL_SUCCESS) rc = kp_cl.clSetKernelArg(dev->flush_kernel, 1, sizeof count, &count);
    if (rc == CL_SUCCESS)
        rc = kp_cl.clSetKernelArg(dev->flush_kernel, 2, sizeof contiguous, &contiguous);
    if (rc == CL_SUCCESS)
        rc = kp_cl.clSetKernelArg(dev->flush_kernel, 3, sizeof(cl_mem), &dev->flush_sink);
    if (rc != CL_SUCCESS) {
        st = kp_cl_fail(err, "clSetKernelArg (kprof's cache flush)", rc);
        goto fail;
    }
    free(fill);
    dev->flush_bytes = bytes;
    return KPROF_OK;
fail:
    free(fill);
    kp_cl_flush_release(dev);
    return st;
}

static kprof_status kp_cl_flush_cache(kp_device *dev, double *ns, kp_dispatch_span *span,
                                      kp_error *err)
{
    *ns = 0;
    kprof_status st = kp_cl_flush_prepare(dev, err);
    if (st != KPROF_OK) return st;
    cl_event ev = NULL;
    size_t items = dev->flush_items;
    uint64_t host_enqueue = span ? kp_now_ns() : 0; /* the clock is read only for a span */
    cl_int rc = kp_cl.clEnqueueNDRangeKernel(dev->queue, dev->flush_kernel, 1, NULL, &items, NULL,
                                             0, NULL, &ev);
    uint64_t host_return = span ? kp_now_ns() : 0;
    if (rc != CL_SUCCESS) return kp_cl_fail(err, "launching kprof's cache flush", rc);
    rc = kp_cl.clWaitForEvents(1, &ev);
    if (rc == CL_SUCCESS) rc = kp_cl_event_times(dev, ev, host_enqueue, host_return, ns, span);
    kp_cl.clReleaseEvent(ev);
    if (rc != CL_SUCCESS) return kp_cl_fail(err, "the cache flush", rc);
    return KPROF_OK;
}

const kp_backend_ops kp_opencl_backend = {
    .name = "opencl",
    .api = "OpenCL",
    .source_lang = KP_LANG_OPENCL_C,
    .kernels_in_process = 1, /* CPU devices */
    .probe = kp_cl_probe,
    .device_count = kp_cl_device_count,
    .device_info = kp_cl_device_info,
    .open = kp_cl_open,
    .close = kp_cl_close,
    .build = kp_cl_build,
    .load = kp_cl_load_binary,
    .program_release = kp_cl_program_release,
    .kernel_create = kp_cl_kernel_create,
    .kernel_release = kp_cl_kernel_release,
    .reflect = kp_cl_reflect,
    .alloc = kp_cl_alloc,
    .write = kp_cl_write,
    .read = kp_cl_read,
    .free = kp_cl_free,
    .bind = kp_cl_bind,
    .bind_capture = kp_cl_bind_capture,
    .dispatch = kp_cl_dispatch,
    .flush_cache = kp_cl_flush_cache,
    .flush_kernel = "kprof_cache_flush",
};
