/*
 * device.h — the plain records about devices and kernels that the backends fill and every other
 * layer reads: a device's facts, a kernel source and the compiled program's metadata (its
 * kernels and their parameters), a launch's geometry, and a kernel's reflection at a launch.
 * No function table and no runtime here (backend/backend.h has those), so the store, the lab's
 * results and the CLI's printing can use them without seeing a backend.
 */
#ifndef KP_CORE_DEVICE_H
#define KP_CORE_DEVICE_H

#include "core/spec.h"

#include <stddef.h>
#include <stdint.h>

/* One extra fact a backend reports about a device (shown by `kprof caps`, kept in --json). */
typedef struct kp_fact {
    char key[40];    /* JSON key, snake_case */
    char label[48];  /* what a person reads */
    char value[160]; /* formatted value */
    int numeric;     /* kp_fact_kind: how the value is written */
} kp_fact;

/* How a fact's value is written: text (a JSON string), a number, or a number of bytes (a JSON
 * number; `kprof caps` shows it as "32 MiB"). */
typedef enum kp_fact_kind { KP_FACT_TEXT, KP_FACT_NUMBER, KP_FACT_BYTES } kp_fact_kind;

#define KP_MAX_FACTS 48

typedef struct kp_device_info {
    char backend[16]; /* "opencl", "cuda" */
    int index;        /* the backend's device number (--device N) */
    char name[256];   /* "NVIDIA H200", "pthread-haswell-AMD EPYC" */
    char vendor[128];
    char driver[128];        /* driver version */
    char platform[256];      /* OpenCL platform name; CUDA: "CUDA <driver api version>" */
    char version[128];       /* device API version ("OpenCL 3.0 ...", "compute capability 9.0") */
    char pci_bus_id[32];     /* CUDA: "0000:3B:00.0" (cuDeviceGetPCIBusId), what NVML finds the
                                device by; "" where the backend does not say (OpenCL) */
    int is_gpu;              /* a GPU (auto prefers these) */
    int kernels_in_process;  /* its kernels run inside kprof's own process (a CPU device such
                                as PoCL's): a kernel that faults takes the process with it */
    uint32_t compute_units;  /* SMs / compute units */
    uint64_t max_tg;         /* max threads per threadgroup */
    uint64_t max_tg_dims[3]; /* max threads per threadgroup per dimension */
    uint64_t exec_width;     /* warp size / preferred work-group multiple */
    uint64_t local_mem;      /* threadgroup (local/shared) memory per group, bytes */
    uint64_t global_mem;     /* bytes */
    uint64_t max_alloc;      /* largest single allocation, bytes (0 = unknown) */
    double timer_resolution_ns; /* device timestamp resolution */
    int profiling;              /* device timestamps available */
    int uniform_groups;         /* grid must be a multiple of tg in each dimension */
    uint64_t cache_bytes;       /* last-level cache before memory (CUDA: L2; OpenCL: the global
                                   memory cache), bytes; 0 = unknown */
    double peak_bandwidth_gbs;  /* datasheet-style peak (0 = unknown) */
    /* Why peak_bandwidth_gbs is unknown, when it is ("" otherwise). */
    char peak_bandwidth_reason[160];
    int nfacts;
    kp_fact facts[KP_MAX_FACTS]; /* backend-specific extras, in display order */
} kp_device_info;

/* Source languages kprof compiles. */
typedef enum kp_lang {
    KP_LANG_OPENCL_C,
    KP_LANG_CUDA,
    KP_LANG_PTX,
    KP_LANG_CUBIN,
    KP_LANG_COUNT
} kp_lang;

/* The file extension of a language: "cl", "cu", "ptx", "cubin". A kernel folder holds
 * kernel.<extension>. */
const char *kp_lang_extension(kp_lang lang);

typedef struct kp_source {
    const char *path; /* where it came from (for messages and compiler diagnostics) */
    const char *text; /* source text (or binary for cubin) */
    size_t len;       /* bytes of text */
    kp_lang lang;
    const char *options;    /* user compiler options ("-DN=4 -I dir"); may be "" */
    const char *entry;      /* the kernel wanted; CUDA: also registered as a name expression */
    uint64_t includes_hash; /* contents of the files it includes (0: none found) */
} kp_source;

/* What a kernel parameter is, as far as the backend can tell. */
typedef enum kp_param_kind {
    KP_PARAM_UNKNOWN,  /* the backend cannot say: only the count is checked */
    KP_PARAM_GLOBAL,   /* pointer to global/device memory: a buffer */
    KP_PARAM_CONSTANT, /* pointer to constant memory: a buffer */
    KP_PARAM_LOCAL,    /* pointer to local/threadgroup memory: local:BYTES */
    KP_PARAM_VALUE,    /* passed by value: TYPE=VALUE */
    KP_PARAM_OPAQUE,   /* an image, sampler, pipe or queue: kprof cannot bind it */
    /* Passed by value but not one scalar: kprof cannot fill these (yet). Set by the lab from the
     * type's name and the source (lab/struct_types.h), never by a backend nor kept in the cache. */
    KP_PARAM_STRUCT, /* a struct or class */
    KP_PARAM_UNION   /* a union */
} kp_param_kind;

typedef struct kp_param {
    kp_param_kind kind;
    uint32_t size;      /* bytes passed (by-value size; 8 for a pointer); 0 = unknown */
    char name[64];      /* "a", or "" when unknown */
    char type_name[64]; /* "float*", "uint", "float4*", or "" when unknown */
} kp_param;

/* What a kernel's own declaration says about its threadgroup size, fixed when it was compiled. */
typedef enum kp_tg_rule {
    KP_TG_RULE_NONE,     /* nothing: any size up to the kernel's maximum */
    KP_TG_RULE_REQUIRED, /* exactly this shape (OpenCL reqd_work_group_size, PTX .reqntid) */
    KP_TG_RULE_MAX       /* at most this many threads, the product of the shape (CUDA
                            __launch_bounds__, PTX .maxntid) */
} kp_tg_rule;

typedef struct kp_kernel_meta {
    char name[512];    /* entry-point name as the user writes it */
    char symbol[1024]; /* the symbol in the binary (lowered/mangled name for CUDA C++) */
    int nparams;       /* -1 when the backend cannot count them */
    kp_param *params;
    /* CUDA: the compile-time threadgroup rule read from the PTX or the cubin at build time and
     * kept in the compile cache (the driver API does not expose it; see cuda/compile.c). OpenCL
     * asks the runtime instead (CL_KERNEL_COMPILE_WORK_GROUP_SIZE) and leaves these 0. */
    kp_tg_rule tg_rule;
    uint64_t tg_rule_size[3];
} kp_kernel_meta;

/* What a compiled program holds: its kernels and their parameters. Kept beside the cached
 * binary, so a cache hit needs no compiler. Heap; kp_program_meta_free() releases. */
typedef struct kp_program_meta {
    int nkernels;
    kp_kernel_meta *kernels;
} kp_program_meta;

/* Append a fact to info (ignored when full). */
void kp_device_fact_add(kp_device_info *info, const char *key, const char *label, int numeric,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void kp_program_meta_free(kp_program_meta *meta);

/* What a build produced besides the program. Zero-initialise; kp_build_output_free(). */
typedef struct kp_build_output {
    unsigned char *binary; /* loadable by ops->load; heap; NULL when not serialisable */
    size_t binary_len;
    const char *binary_ext; /* file extension for dumps: "bin" (OpenCL), "cubin" */
    char *ptx;              /* CUDA: PTX text; heap or NULL */
    char *log;              /* compiler log even on success (warnings); heap or NULL */
    char *options;          /* compiler options actually used, one line; heap or NULL */
    kp_program_meta meta;   /* kernels and parameters */
} kp_build_output;

void kp_build_output_free(kp_build_output *out);
const kp_kernel_meta *kp_program_meta_find(const kp_program_meta *meta, const char *name);

/* Which device clock times dispatches (CUDA has two; OpenCL has profiling events only). */
typedef enum kp_timer {
    KP_TIMER_AUTO,   /* the backend's best available: CUPTI kernel records, else CUDA events */
    KP_TIMER_EVENTS, /* CUDA events recorded around each launch */
    KP_TIMER_CUPTI   /* CUPTI kernel activity records (start/end the GPU stamps on the kernel) */
} kp_timer;

typedef struct kp_launch {
    int dims;           /* 1, 2 or 3 */
    uint64_t grid[3];   /* total threads per dimension */
    uint64_t tg[3];     /* threads per threadgroup per dimension */
    uint64_t dyn_local; /* dynamic shared memory bytes (CUDA --smem) */
    double timeout_s;   /* a dispatch still running after this is reported (0 = none) */
    kp_timer timer;     /* clock for timed dispatches */
} kp_launch;

uint64_t kp_launch_tg_threads(const kp_launch *l);

/* Per-kernel limits and resource use, from the compiled kernel. Fields a backend cannot fill
 * stay 0 and their have_ flag says so. */
typedef struct kp_reflection {
    uint64_t max_tg;             /* kernel's max threads per threadgroup: every limit together
                                    (runtime, registers, the tg_rule below) */
    kp_tg_rule tg_rule;          /* what the kernel's declaration fixes at compile time */
    uint64_t tg_rule_size[3];    /* REQUIRED: the shape; MAX: the bound's extents (x, y, z) */
    const char *tg_rule_from;    /* where it comes from, for people: "reqd_work_group_size",
                                    ".reqntid", "__launch_bounds__ / .maxntid"; NULL for NONE */
    uint64_t preferred_multiple; /* execution width / preferred group multiple */
    uint64_t static_local;       /* static threadgroup (shared/local) memory, bytes: what the
                                    kernel declares itself, never its local:BYTES arguments */
    uint64_t dynamic_local;      /* dynamic threadgroup memory at this launch, bytes: local:BYTES
                                    arguments and CUDA --smem (filled by the lab, not the
                                    backend) */
    uint64_t private_bytes;      /* private memory per thread (OpenCL); local/spill (CUDA) */
    int have_registers;
    int registers; /* per thread */
    uint64_t const_bytes;
    int ptx_version, binary_version; /* e.g. 90 */
    uint64_t max_dynamic_local;      /* CUDA: max dynamic shared memory this kernel may take */
    int have_occupancy;
    double occupancy; /* theoretical, 0..1, at the launch's tg */
    int blocks_per_sm;
    char limiter[32]; /* "registers", "shared memory", "warps", "blocks" */
} kp_reflection;

/* The language of a kernel file from its extension (cl, cu, ptx, cubin; fatbin is CUBIN): a
 * kp_lang, or -1. */
int kp_lang_from_path(const char *path);
/* The backend that runs a language: "opencl" or "cuda". */
const char *kp_lang_backend(kp_lang lang);

#endif
