/*
 * cuda_internal.h — what the files of the CUDA backend share, and nothing outside it includes:
 * the backend's objects (device, program, kernel, buffer) and the functions one file of the
 * backend calls in another. device.c opens devices and turns driver errors into kprof's;
 * compile.c builds and loads programs; launch.c makes kernels, reflects, moves memory, binds
 * and times dispatches; flush.c leaves the L2 cold between them (with l2_flush.c's kernel, which
 * kprof_benchmark's CUDA timer shares); counters.c reads hardware counters of one dispatch
 * through CUPTI's Range Profiler; pcsample.c samples a kernel's PCs and maps them to source
 * lines; cuda.c puts them in the kp_cuda_backend table (backend.h), the only name the rest of
 * kprof knows.
 */
#ifndef KP_BACKEND_CUDA_INTERNAL_H
#define KP_BACKEND_CUDA_INTERNAL_H

#include "backend/backend.h"
#include "backend/cuda/l2_flush.h"
#include "backend/cuda/occupancy.h"
#include "runtime/cuda_api.h"

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
    kp_cuda_l2_flush flush; /* flush.c: the cache flush (l2_flush.h), made on its first use */
};

struct kp_program {
    kp_device *dev;
    CUmodule module;
    unsigned char *image; /* a copy of what the module was loaded from (cubin, or PTX with its
                             NUL): PC sampling maps PCs to lines through it (pcsample.c) */
    size_t image_len;
    int image_ptx; /* the image is PTX the driver compiled: it has no line table to read */
};

struct kp_kernel {
    kp_device *dev;
    const kp_program *program; /* the program it came from (released after its kernels) */
    CUfunction function;
    char name[512];
    char symbol[1024];     /* as CUPTI names it in kernel records */
    double *cupti_ns;      /* dispatch_batch's CUPTI durations */
    uint64_t *cupti_start; /* ... and starts (kprof's clock), cupti_capacity of each */
    int cupti_capacity;
    int nparams;                           /* -1 when the driver could not count them */
    uint32_t param_size[KP_SPEC_MAX_ARGS]; /* bytes per parameter, 0 = unknown */
    uint64_t dyn_limit;                    /* MAX_DYNAMIC_SHARED_SIZE_BYTES as set by kprof */
    kp_tg_rule tg_rule;                    /* from the kernel's meta (PTX or cubin) */
    uint64_t tg_rule_size[3];
    int bound;
    void *args[KP_SPEC_MAX_ARGS];      /* cuLaunchKernel's kernelParams: into values[] */
    uint64_t values[KP_SPEC_MAX_ARGS]; /* device pointers and scalar bytes */
    unsigned char *raw; /* bind_capture's parameter bytes (args[] point into it), or NULL */
};

struct kp_buffer {
    kp_device *dev;
    CUdeviceptr ptr;
    uint64_t bytes;
};

/* ---- device.c ------------------------------------------------------------------------------ */

kprof_status kp_cuda_probe(kp_error *err);
int kp_cuda_device_count(void);
kprof_status kp_cuda_device_info(int index, kp_device_info *info, kp_error *err);
kprof_status kp_cuda_open(int index, kp_device **out, kp_error *err);
void kp_cuda_close(kp_device *dev);

/* Remember a kernel fault on the device: from then on it refuses all work, naming the fault. */
void kp_cuda_poison(kp_device *dev, const char *text);
/* A failed driver call: its name and the error in words. Faults poison the device. */
kprof_status kp_cuda_fail(kp_device *dev, kp_error *err, const char *what, CUresult rc);
/* Make the device's context current on this thread, unless a fault has spoiled it. */
kprof_status kp_cuda_enter(kp_device *dev, kp_error *err);
/* Free the cache flush's module and scratch (flush.c makes them; the device's context current);
 * harmless when none. */
void kp_cuda_flush_release(kp_device *dev);

/* ---- compile.c ----------------------------------------------------------------------------- */

kprof_status kp_cuda_build(kp_device *dev, const kp_source *src, kp_program **out,
                           kp_build_output *products, kp_error *err);
kprof_status kp_cuda_load_binary(kp_device *dev, const unsigned char *binary, size_t len,
                                 kp_program **out, kp_error *err);
void kp_cuda_program_release(kp_program *p);

/* ---- launch.c ------------------------------------------------------------------------------ */

kprof_status kp_cuda_kernel_create(kp_program *prog, const kp_kernel_meta *meta, kp_kernel **out,
                                   kp_error *err);
void kp_cuda_kernel_release(kp_kernel *k);
kprof_status kp_cuda_reflect(kp_kernel *k, const kp_launch *launch, kp_reflection *r,
                             kp_error *err);
kprof_status kp_cuda_alloc(kp_device *dev, uint64_t bytes, kp_buffer **out, kp_error *err);
kprof_status kp_cuda_write(kp_buffer *b, const void *src, uint64_t bytes, kp_error *err);
kprof_status kp_cuda_read(kp_buffer *b, void *dst, uint64_t bytes, kp_error *err);
void kp_cuda_free(kp_buffer *b);
kprof_status kp_cuda_bind_capture(kp_kernel *k, const kp_raw_args *args, kp_buffer *const *buffers,
                                  kp_error *err);
kprof_status kp_cuda_bind(kp_kernel *k, const kp_spec *spec, kp_buffer *const *buffers,
                          kp_error *err);
kprof_status kp_cuda_dispatch(kp_kernel *k, const kp_launch *l, double *gpu_ns,
                              kp_dispatch_span *span, kp_error *err);
kprof_status kp_cuda_dispatch_batch(kp_kernel *k, const kp_launch *l, int n, double *gpu_ns,
                                    kp_dispatch_span *spans, char *timer, size_t timer_n,
                                    kp_error *err);

/* ---- pcsample.c ---------------------------------------------------------------------------- */

/* kp_backend_ops.pc_sample: CUPTI's PC Sampling API over n dispatches, PCs mapped to lines. */
kprof_status kp_cuda_pc_sample(kp_kernel *k, const kp_launch *l, int dispatches, kp_pc_samples *out,
                               kp_error *err);
/* Give each PC of out the file and line a cubin's line table names for it (CUPTI's
 * cuptiGetSassToSourceCorrelation; kp_cupti_pcsampling_load must have succeeded). PCs it cannot
 * place keep no file; when none is placed, out->note says why. No device needed. */
void kp_cuda_pc_lines(const void *cubin, size_t cubin_len, kp_pc_samples *out);

/* ---- flush.c ------------------------------------------------------------------------------- */

/* kp_backend_ops.flush_cache: read twice the L2 with kprof's own kernel; *ns its GPU time. */
kprof_status kp_cuda_flush_cache(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err);

/* ---- counters.c ---------------------------------------------------------------------------- */

/* kp_backend_ops.counters: ncu-named metrics of one kernel-replayed dispatch (see counters.c
 * for the CUPTI sequence and the order it requires with dispatch_batch's CUPTI timer). */
kprof_status kp_cuda_counters(kp_kernel *k, const kp_launch *launch, const char *const *metrics,
                              size_t n, double *values, unsigned char *bad, kp_error *err);
/* kp_backend_ops.counter_list: the metrics the device's chip offers, with their descriptions. */
kprof_status kp_cuda_counter_list(kp_device *dev,
                                  void (*fn)(const char *name, const char *what, void *ctx),
                                  void *ctx, kp_error *err);

/* The host side of counters, which needs no GPU (tests run it on a chip name): */
typedef struct kp_cuda_counter_plan kp_cuda_counter_plan;
/* Check each of metrics[0..n) alone for `chip` (CUPTI's chip name, "GH100"; availability: the
 * device's counter availability image, or NULL), then schedule the distinct good ones in one
 * config image. bad[i] (when not NULL) = 1 for a name CUPTI refuses (unknown, no rollup, NULL
 * or empty). The plan keeps pointers to the caller's strings. UNAVAILABLE when libcupti is
 * missing or too old, or does not know the chip. */
kprof_status kp_cuda_counter_plan_make(const char *chip, const uint8_t *availability,
                                       const char *const *metrics, size_t n, unsigned char *bad,
                                       kp_cuda_counter_plan **out, kp_error *err);
/* Passes the config image needs (0 when no metric was good). */
size_t kp_cuda_counter_plan_passes(const kp_cuda_counter_plan *plan);
/* Distinct good metrics scheduled. */
size_t kp_cuda_counter_plan_count(const kp_cuda_counter_plan *plan);
void kp_cuda_counter_plan_free(kp_cuda_counter_plan *plan);
/* counter_list for a chip by name, without a device. */
kprof_status kp_cuda_counter_list_chip(const char *chip, const uint8_t *availability,
                                       void (*fn)(const char *name, const char *what, void *ctx),
                                       void *ctx, kp_error *err);

#endif
