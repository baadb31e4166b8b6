/*
 * backend.h — the function table every compute backend fills (OpenCL, CUDA; Metal would be a
 * third), and how a backend and device are chosen.
 *
 * The plain records that cross it (device facts, kernel metadata, launches, reflection) are in
 * core/device.h, so that layers that only read them need not see the table.
 *
 * A backend is one `const kp_backend_ops` with designated initializers. It loads its runtime
 * with dlopen on first use, so one kprof binary starts on a machine with either runtime, both
 * or neither. probe() says whether it can run and, if not, why — in words `kprof caps` prints
 * as they are ("libcuda.so.1 not found").
 *
 * Ownership: objects a backend returns (device, program, kernel, buffer) belong to the caller
 * until passed to the matching release function; release(NULL) is a no-op. Backends never
 * print and never exit; every failure is a kprof_status with a kp_error message naming the
 * native error (its name and number kept).
 */
#ifndef KP_BACKEND_H
#define KP_BACKEND_H

#include "core/device.h"
#include "base/error.h"
#include "core/pcsample.h"
#include "core/spec.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kp_device kp_device;   /* an opened device (context + queue/stream) */
typedef struct kp_program kp_program; /* a compiled module */
typedef struct kp_kernel kp_kernel;   /* one entry point, with its bound arguments */
typedef struct kp_buffer kp_buffer;   /* device memory */

/* When one dispatch ran, on this host's CLOCK_MONOTONIC in ns: the device's own start and end
 * stamps mapped onto it (OpenCL: CL_PROFILING_COMMAND_START/END through the queue's
 * kp_device_clock, core/clock_offset.h, as `kprof trace` maps them; CUDA's CUPTI timer: its
 * kernel records, whose clock is kprof's own, kp_now_ns), or, where the clock has no timestamps
 * (CUDA's event timer), the host clock when the dispatch was launched. Always end − start ==
 * llround(the dispatch's gpu_ns): the duration the lab reports, to the nanosecond. */
typedef struct kp_dispatch_span {
    int64_t start_ns, end_ns;
} kp_dispatch_span;

/* The span of a dispatch that started at start_ns (host clock) and took gpu_ns. */
static inline kp_dispatch_span kp_dispatch_span_at(int64_t start_ns, double gpu_ns)
{
    kp_dispatch_span s = {start_ns, start_ns + (int64_t)llround(gpu_ns)};
    return s;
}

/* Arguments given as bytes rather than as a SPEC: a launch captured from a running program
 * (collect/capture.h), replayed by the lab (lab/replay.c converts a capture into these; the
 * backend layer sits below the capture format). Argument i is args[i]: VALUE passes size bytes
 * (pointers inside them are patched, see kp_raw_ptr), BUFFER the whole of buffers[buffer],
 * LOCAL size bytes of local (OpenCL __local) memory. */
typedef enum kp_raw_arg_kind {
    KP_RAW_VALUE = 0,  /* == KP_CAPTURE_VALUE */
    KP_RAW_BUFFER = 1, /* == KP_CAPTURE_MEM */
    KP_RAW_LOCAL = 2,  /* == KP_CAPTURE_LOCAL */
} kp_raw_arg_kind;

typedef struct kp_raw_arg {
    int kind;                   /* kp_raw_arg_kind */
    uint32_t size;              /* bytes */
    const unsigned char *bytes; /* VALUE: size bytes; NULL otherwise */
    int buffer;                 /* BUFFER: index into buffers; -1 otherwise */
} kp_raw_arg;

/* An 8-byte device address inside a VALUE argument: the bytes of argument `arg` at offset `at`
 * become buffers[buffer]'s address plus offset (CUDA: structs of pointers passed by value). */
typedef struct kp_raw_ptr {
    uint32_t arg, at, buffer;
    uint64_t offset;
} kp_raw_ptr;

typedef struct kp_raw_args {
    int nargs; /* at most KP_SPEC_MAX_ARGS */
    const kp_raw_arg *args;
    int nptrs;
    const kp_raw_ptr *ptrs;
} kp_raw_args;

typedef struct kp_backend_ops {
    const char *name; /* "opencl", "cuda" */
    const char *api;  /* the API's name for people: "OpenCL", "CUDA" */
    /* The language of the kernel source it compiles (KP_LANG_OPENCL_C, KP_LANG_CUDA): kprof's
     * own kernels are run in it, and `kprof isolate` writes a kernel folder's source in it. */
    kp_lang source_lang;
    /* 1 when some of its devices run kernels inside kprof's own process (their
     * kp_device_info.kernels_in_process says which). Known without loading the runtime: the lab
     * reads it before anything is loaded, to run such sessions in a child process (lab.h). */
    int kernels_in_process;

    /* Can this backend run here? OK = yes; otherwise UNAVAILABLE with the reason in err (the
     * words `kprof caps` prints). */
    kprof_status (*probe)(kp_error *err);
    /* Number of devices (after a successful probe). */
    int (*device_count)(void);
    kprof_status (*device_info)(int index, kp_device_info *out, kp_error *err);

    kprof_status (*open)(int index, kp_device **out, kp_error *err);
    void (*close)(kp_device *dev);

    /* Compile source for the opened device. On success: the program and what the build
     * produced (binary for the cache, PTX, log, the kernels and their parameters). On a compile
     * failure: COMPILE with the compiler's log in err->log. */
    kprof_status (*build)(kp_device *dev, const kp_source *src, kp_program **out,
                          kp_build_output *products, kp_error *err);
    /* Load a binary earlier returned by build (from the cache). */
    kprof_status (*load)(kp_device *dev, const unsigned char *binary, size_t len, kp_program **out,
                         kp_error *err);
    void (*program_release)(kp_program *prog);

    /* Create the kernel named by meta (symbol). */
    kprof_status (*kernel_create)(kp_program *prog, const kp_kernel_meta *meta, kp_kernel **out,
                                  kp_error *err);
    void (*kernel_release)(kp_kernel *k);
    kprof_status (*reflect)(kp_kernel *k, const kp_launch *launch, kp_reflection *out,
                            kp_error *err);

    kprof_status (*alloc)(kp_device *dev, uint64_t bytes, kp_buffer **out, kp_error *err);
    kprof_status (*write)(kp_buffer *buf, const void *src, uint64_t bytes, kp_error *err);
    kprof_status (*read)(kp_buffer *buf, void *dst, uint64_t bytes, kp_error *err);
    void (*free)(kp_buffer *buf);

    /* Bind the SPEC's arguments: buffers[i] is the buffer for spec item i (NULL for scalars
     * and local memory). */
    kprof_status (*bind)(kp_kernel *k, const kp_spec *spec, kp_buffer *const *buffers,
                         kp_error *err);
    /* Bind arguments given as bytes (kp_raw_args: a captured launch's), buffers[j] the buffer
     * of the capture's allocation j. The argument count and every size must be the kernel's
     * (INVALID naming the argument otherwise); every kp_raw_ptr must lie inside its VALUE
     * argument. The bytes are copied: args may go after the call. */
    kprof_status (*bind_capture)(kp_kernel *k, const kp_raw_args *args, kp_buffer *const *buffers,
                                 kp_error *err);
    /* One dispatch, waited for; *gpu_ns is its duration from device timestamps. span (may be
     * NULL) receives when it ran (kp_dispatch_span). */
    kprof_status (*dispatch)(kp_kernel *k, const kp_launch *launch, double *gpu_ns,
                             kp_dispatch_span *span, kp_error *err);
    /* Optional: n dispatches, each waited for, timed with launch->timer; gpu_ns[0..n). spans
     * (NULL, or n of them, filled by the caller's storage: nothing is allocated per dispatch)
     * receive when each ran. timer receives what timed them ("cupti", "events", or "events
     * (CUPTI: reason)"). Without it the lab calls dispatch n times. */
    kprof_status (*dispatch_batch)(kp_kernel *k, const kp_launch *launch, int n, double *gpu_ns,
                                   kp_dispatch_span *spans, char *timer, size_t timer_n,
                                   kp_error *err);
    /* Optional: leave the device's last-level cache cold for the next dispatch: a kernel of the
     * backend's own reads a scratch buffer of 2 x kp_device_info.cache_bytes (at least 8 MiB;
     * allocated on first use, kept with the device, freed at close), so the cache holds clean
     * lines of nothing the measured kernel uses (a write/fill would leave dirty lines whose
     * write-back the measured kernel would pay). Waited for. *ns: the flush's own device time.
     * Its kernel never appears among the measured kernel's timings (dispatch_batch takes only
     * records of its own kernel). span (may be NULL) receives when the flush ran, as a
     * dispatch's. UNAVAILABLE (with a reason) when the device cannot. */
    kprof_status (*flush_cache)(kp_device *dev, double *ns, kp_dispatch_span *span, kp_error *err);
    /* Optional: the name of the flush_cache kernel ("kprof_cache_flush"), as the lab's trace
     * names the flush's events. */
    const char *flush_kernel;
    /* Optional: hardware counters of one dispatch of k with launch (issue 16), through the
     * vendor's profiler (CUDA: CUPTI's Range Profiler, kernel replay: the dispatch is replayed
     * as many times as the metrics need passes, device memory saved and restored between, so
     * its buffers end as after one dispatch; none of its runs is a timing). metrics: n metric
     * names in ncu's spelling ("dram__bytes_read.sum"); values[i] receives metric i, NAN where
     * the device has no such metric or it could not be evaluated (then, if bad is not NULL,
     * bad[i] = 1). UNAVAILABLE with a one-line reason (no profiling permission, another
     * profiler holds the counters, the profiler library is missing) — the caller goes on with
     * the timing. Missing op: the backend has no counters (OpenCL).
     * The dispatch starts from a cold last-level cache (as ncu's default), runs even when no
     * name is valid, and fails as dispatch does (FAULT, TIMEOUT, INVALID). Call it on its own,
     * before or after the timed dispatches, never between a dispatch_batch's: on CUDA it
     * switches the CUPTI timer's records off, and the next dispatch_batch switches them on. */
    kprof_status (*counters)(kp_kernel *k, const kp_launch *launch, const char *const *metrics,
                             size_t n, double *values, unsigned char *bad, kp_error *err);
    /* Optional: the metric names the device offers (`kprof caps --counters`): fn once per
     * metric, with a one-line description ("" when none). */
    kprof_status (*counter_list)(kp_device *dev,
                                 void (*fn)(const char *name, const char *what, void *ctx),
                                 void *ctx, kp_error *err);
    /* Optional: where a kernel's warps spend their time, by PC (issue 16, `kprof run --source`):
     * the vendor's PC sampler (CUDA: CUPTI's PC Sampling API, kernels serialized) over
     * `dispatches` dispatches of k with launch, each waited for, made for the sampling alone
     * (none is a timing; the buffers end as after that many more dispatches). Every sampled PC
     * is mapped to a source file and line through the binary's line info where it has some
     * (kprof compiles CUDA C++ with -lineinfo; a program loaded as PTX has none to give). out
     * (zeroed first; the caller frees it with kp_pc_samples_free, also after a failure) gets
     * the PCs with their samples per stall reason, under the sampler's own reason names.
     * UNAVAILABLE with a one-line reason (no profiling permission, another profiler holds the
     * sampler, the device or the CUPTI library cannot sample) — the caller goes on without.
     * A kernel fault or timeout in those dispatches is reported as dispatch reports it.
     * Missing op: the backend has no PC sampling (OpenCL). */
    kprof_status (*pc_sample)(kp_kernel *k, const kp_launch *launch, int dispatches,
                              kp_pc_samples *out, kp_error *err);
} kp_backend_ops;

/* The scratch a flush_cache reads: 2 x the last-level cache, at least KP_FLUSH_MIN_BYTES. */
#define KP_FLUSH_MIN_BYTES (8ull << 20)
static inline uint64_t kp_flush_bytes(uint64_t cache_bytes)
{
    uint64_t twice = 2 * cache_bytes;
    return twice > KP_FLUSH_MIN_BYTES ? twice : KP_FLUSH_MIN_BYTES;
}

extern const kp_backend_ops kp_opencl_backend;
extern const kp_backend_ops kp_cuda_backend;

/* All backends compiled in, in preference order for `auto`. NULL-terminated. */
extern const kp_backend_ops *const kp_backends[];

const kp_backend_ops *kp_backend_find(const char *name);

/* How many backends kprof knows, built into this kprof or not. */
#define KP_BACKEND_NKNOWN 2

/* The i-th (0 up to KP_BACKEND_NKNOWN - 1) of every backend kprof knows, built into this kprof
 * or not, in preference order for auto ("cuda", then "opencl": kp_backends' order were every
 * backend built in); NULL for any other i. `kprof caps` lists them in this order. */
const char *kp_backend_known_name(int i);

/* The API's name for people ("CUDA", "OpenCL") of a backend kprof knows, built into this kprof
 * or not (its table's api when it is); "" for a name kprof does not know. */
const char *kp_backend_api(const char *name);

/* The one rule for a backend's name wherever a user gives one (--backend, KPROF_BACKEND, for
 * every command): "auto" or a backend kprof knows ("cuda", "opencl"), built into this kprof or
 * not. Otherwise INVALID: "<source> '<name>' is not a backend (choose opencl, cuda or auto)".
 * source names where the name came from ("--backend", "KPROF_BACKEND"). */
kprof_status kp_backend_name_check(const char *name, const char *source, kp_error *err);

/* KPROF_BACKEND when set and not empty, else NULL. */
const char *kp_backend_env(void);

/*
 * Device choice. `backend` is "opencl", "cuda", "auto" or NULL (then $KPROF_BACKEND, else
 * auto); `device` is a device number or -1 (then $KPROF_DEVICE, else auto). `lang` limits the
 * backends to those that run it (-1 for any). auto prefers a GPU (CUDA first, then an OpenCL
 * GPU), else the first OpenCL device (PoCL on the CPU). On failure: UNAVAILABLE naming every
 * backend that could not run and why, or INVALID for a bad name or a language mismatch.
 */
kprof_status kp_backend_choose(const char *backend, int device, int lang,
                               const kp_backend_ops **ops_out, int *index_out, kp_error *err);

/* Whether a session asked for with `backend` and `lang` (as kp_backend_choose takes them) may
 * land on a device that runs kernels in kprof's own process: from the table alone, loading no
 * runtime. An unknown backend name answers 0 (kp_backend_choose then says what is wrong). */
int kp_backend_may_run_in_process(const char *backend, int lang);

#endif
