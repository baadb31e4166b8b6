/*
 * lab.h — the kernel lab: one kernel in isolation, compiled at run time, bound to deterministic
 * buffers and timed with device timestamps. `kprof run`, the sweep and caps --measure are thin
 * layers over a kp_lab session:
 *
 *   kp_lab_open      resolve NAME|FILE, choose backend and device, compile (through the cache),
 *                    reflect, check the SPEC against the kernel's parameters, fill and bind
 *   kp_lab_measure   warm-ups, then timed dispatches at a launch geometry
 *   kp_lab_sample    timed dispatches with no warm-up, hot or each after a cache flush (cold)
 *   kp_lab_clock     the device's SM clock now, read in kprof's own process (clock.c)
 *   kp_lab_digest    read every buffer back and summarise it
 *   kp_lab_finish    release the device, and say whether what was measured stands
 *   kp_lab_close     release everything
 *
 * Where the backend may run kernels inside kprof's own process (kp_backend_ops.
 * kernels_in_process: OpenCL, whose CPU devices do), the session runs in a child process
 * (isolate.c): a kernel that faults or corrupts memory kills the child, not kprof, and the
 * call under way returns FAULT naming the kernel, the signal and the likely cause. Such a
 * session must be opened before the runtime is loaded in this process (kp_lab_device chooses a
 * device without loading it), and the caller must not report anything it measured before
 * kp_lab_finish returns OK. Nothing here prints.
 */
#ifndef KP_LAB_H
#define KP_LAB_H

#include "backend/backend.h"
#include "collect/capture.h"
#include "core/readings.h"
#include "core/spec.h"
#include "core/stats.h"

typedef struct kp_lab_options {
    const char *target;  /* NAME of a kernel folder, or a FILE */
    const char *entry;   /* kernel to run; NULL: the file's only kernel */
    const char *buffers; /* SPEC */
    const char *backend; /* "opencl", "cuda", "auto" or NULL (KPROF_BACKEND) */
    int device;          /* -1: KPROF_DEVICE or auto */
    const char *options; /* extra compiler options ("-DN=4 -I inc"), or NULL */
    /* Instead of target: a source held in memory (kprof's own kernels). */
    const char *source_text;
    size_t source_len;
    int source_lang;         /* kp_lang */
    const char *source_name; /* shown in messages, e.g. "kprof:copy.cu" */
    /* A captured launch (collect/capture.h) whose arguments and buffers bind the kernel instead
     * of a SPEC: a NAME@N or a folder. A target that is itself a capture folder needs nothing
     * here; a bench A/B gives its capture to the edited side this way. buffers must be NULL. */
    const char *capture;
} kp_lab_options;

typedef struct kp_buffer_digest {
    int arg;       /* SPEC position, 0-based */
    char name[64]; /* parameter name when known */
    kp_type type;
    uint64_t count;
    uint64_t hash; /* FNV-1a 64 of the bytes */
    double sum, min, max;
    uint64_t nonfinite; /* NaN/Inf elements (floats) */
    int nfirst;
    double first[4];
} kp_buffer_digest;

typedef struct kp_lab kp_lab; /* an open session */

typedef struct kp_lab_info {
    const kp_backend_ops *ops;
    kp_device_info device;
    char source_path[4096];
    char kernel_dir[4096]; /* "" when the target was a FILE */
    const kp_kernel_meta *kernel;
    const kp_spec *spec;
    int cache_hit;         /* the binary came from the compile cache */
    double compile_ms;     /* host time to build or load */
    uint64_t buffer_bytes; /* sum of buffer sizes */
    char timer[160];       /* the clock of the last measurement ("opencl-profiling", "cupti") */
    char warning[512];     /* something the caller should tell the user, or "" */
    /* A replayed capture (the target is a capture folder, or kp_lab_options.capture): the
     * session's SPEC is one u8 buffer per captured allocation (then one local item per __local
     * argument), bound as the program bound them, each holding its before-state. At open, one
     * dispatch at the captured geometry is compared with the captured after-state (replay_check,
     * replay_text); the timed dispatches that follow start from what that dispatch left, as
     * ncu's kernel replay does. */
    int replay;
    char replay_dir[4096];         /* the capture folder */
    kp_launch replay_launch;       /* the captured geometry (dims, grid, tg, dyn_local) */
    kp_capture_check replay_check; /* the output check at the captured geometry */
    char replay_text[512];         /* kp_capture_check_text's sentence */
    char replay_worst[64];         /* the allocation with the most differing bytes, or "" */
    int replay_missing;            /* lines of what the capture did not hold (not-captured.txt) */
    char replay_missing_lines[4][256]; /* the first of them */
} kp_lab_info;

kprof_status kp_lab_open(const kp_lab_options *opts, kp_lab **out, kp_error *err);

/* What the command line needs of a target that is a captured launch before it opens a session
 * (the launch's defaults). */
typedef struct kp_lab_capture_target {
    kp_launch launch;   /* dims, grid, tg, dyn_local as captured (timeout_s 0, timer AUTO) */
    char api[8];        /* "cuda", "opencl" */
    char kernel[1024];  /* the name the trace reported */
    char symbol[1024];  /* the entry the replay runs */
    char code_kind[16]; /* cubin fatbin ptx opencl-source opencl-binary */
    char dir[4096];     /* the capture folder */
} kp_lab_capture_target;

/* 1 when target (a NAME, as kp_lab_open resolves it) is a capture folder, *out filled; 0 when it
 * is not (or does not resolve: kp_lab_open says why); -1 with err (CORRUPT, INVALID) when it is
 * one kprof cannot read. */
int kp_lab_capture_target_read(const char *target, kp_lab_capture_target *out, kp_error *err);

/* Whether compiler options ("-DN=4 -I inc") can be given to a compiler: every -D (attached or
 * the next word) names a macro (a letter or '_' first), every -I a folder. An empty or blank
 * value would reach the compiler as a bare "-D"/"-I" (which crashed PoCL inside the session):
 * INVALID with a sentence saying what to write. kp_lab_open checks opts->options with it before
 * anything runs; the CLI checks its flags with it while parsing. OK for NULL or "". */
kprof_status kp_lab_check_options(const char *options, kp_error *err);

/* Choose a device as kp_backend_choose does (backend, device, lang alike) and describe it, in a
 * child process where the backend may run kernels in kprof's own process, so that its runtime
 * stays unloaded here and a kp_lab_open can follow. */
kprof_status kp_lab_device(const char *backend, int device, int lang, const kp_backend_ops **ops,
                           int *index, kp_device_info *info, kp_error *err);

/* Switch the session to another kernel of the same program with the same SPEC (its buffers are
 * kept and bound to it). */
kprof_status kp_lab_use_kernel(kp_lab *lab, const char *entry, kp_error *err);
const kp_lab_info *kp_lab_get_info(const kp_lab *lab);

/* The process the session's kernels run in when it is not kprof's own (a child: isolate.c), else
 * 0: its CPU time is kprof's, not other work's (core/judge.h's kp_cpuload). */
int kp_lab_pid(const kp_lab *lab);

/* Check a launch against the device and the kernel (sizes, maxima, uniform groups) and reflect
 * the kernel at it (occupancy depends on tg). INVALID names what is wrong. */
kprof_status kp_lab_check_launch(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                 kp_error *err);

/* Reflect the kernel at a launch without checking it: the backend's reflection plus the
 * launch's dynamic threadgroup memory (local:BYTES arguments, --smem). */
kprof_status kp_lab_reflect(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                            kp_error *err);

/* Check a launch's threadgroup against the kernel's compile-time rule (reflection's tg_rule):
 * a required shape must be matched exactly, a declared maximum not exceeded. INVALID names the
 * rule, where it comes from and the --tg to use. Pure (exposed for tests). */
kprof_status kp_lab_check_tg_rule(const kp_reflection *r, const kp_launch *launch,
                                  const char *kernel_name, kp_error *err);

/* Threads the rule's shape holds (0 for none). */
uint64_t kp_tg_rule_threads(const kp_reflection *r);

/* 1 when the kernel's maximum threadgroup size is the one its declaration sets (so a maximum
 * below the device's is not register pressure). */
int kp_reflection_limit_declared(const kp_reflection *r);

/* "64", "32x2", "8x8x4": trailing 1s dropped, but at least min_dims dimensions. */
void kp_tg_shape_text(const uint64_t v[3], int min_dims, char *buf, size_t n);

/* The rule for people: "required group size 64 (reqd_work_group_size)", "max 256
 * (__launch_bounds__ / .maxntid)", or "" when the kernel has none. */
void kp_tg_rule_text(const kp_reflection *r, char *buf, size_t n);

/*
 * The session's dispatches as events. With a log set (kp_lab_set_log), every dispatch the
 * session makes — warm-up, timed, and a cold sample's cache flush, wherever the session runs —
 * leaves one entry: when it ran on the host's CLOCK_MONOTONIC (kp_dispatch_span, backend.h: the
 * device's timestamps mapped onto it; end − start is the sample to the nanosecond) and what it
 * was (kp_lab_tag). The entries' storage is made with the log (and grown, where a call's
 * dispatches do not fit, before that call dispatches anything), so nothing is allocated while
 * dispatching; a call that cannot be logged (out of memory) is counted in `lost`.
 * lab_trace.h turns a log into a trace's records.
 */
typedef enum kp_lab_role {
    KP_LAB_WARMUP = 0, /* an untimed warm-up dispatch */
    KP_LAB_TIMED = 1,  /* a timed dispatch: one sample */
    KP_LAB_FLUSH = 2,  /* the backend's cache flush before a cold sample */
} kp_lab_role;

/* What was dispatched: a kernel at a launch (the flush: the backend's flush kernel, with no
 * launch geometry it tells), its reflection there, and the work it did where known. */
typedef struct kp_lab_site {
    char kernel[256];
    int have_launch; /* 0 for the flush */
    kp_launch launch;
    int have_refl;
    kp_reflection refl;  /* kp_lab_reflect at the launch (its pointers to static text only) */
    double flops, bytes; /* per dispatch, NAN where unknown (the log's when the site was made) */
} kp_lab_site;

typedef struct kp_lab_tag {
    int32_t role;      /* kp_lab_role */
    int32_t site;      /* its kp_lab_site in the log */
    int64_t iteration; /* timed: how many timed dispatches the log held before it (a run's
                          sample i is iteration i); a flush: its cold sample's; warm-up: −k for
                          the k-th last warm-up before the timed ones of its call */
} kp_lab_tag;

typedef struct kp_lab_log {
    kp_dispatch_span *spans; /* [cap] */
    kp_lab_tag *tags;        /* [cap] */
    size_t cap, n;           /* entries made, entries used */
    uint64_t lost;           /* dispatches not logged: no room */
    int64_t timed;           /* timed dispatches logged */
    kp_lab_site *sites;
    size_t nsites, sites_cap;
    double flops, bytes; /* the work of the sites made from now on, NAN: unknown (the caller
                            sets them: --bytes, the lab's byte estimate, a bench's --flops) */
    int warming; /* set by the caller: kp_lab_sample's dispatches are warm-ups (a bench's) */
} kp_lab_log;

/* Make a log of cap entries (flops and bytes unknown). NOMEM. */
kprof_status kp_lab_log_init(kp_lab_log *log, size_t cap, kp_error *err);
void kp_lab_log_free(kp_lab_log *log); /* NULL is a no-op */

/* Log the session's dispatches into log from now on (NULL: stop). The log is the caller's and
 * may go on from one session to the next (a bench's repeats). */
void kp_lab_set_log(kp_lab *lab, kp_lab_log *log);
kp_lab_log *kp_lab_get_log(const kp_lab *lab); /* NULL: none */

/* warmup untimed dispatches, then iters timed ones: samples_ms[0..iters) in milliseconds. */
kprof_status kp_lab_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                            double *samples_ms, kp_error *err);

/* kp_lab_measure under a time budget: warmup untimed dispatches and one timed one, then as many
 * more of the iters timed ones as the budget allows at what those took (wall clock per dispatch,
 * or the timed one's device time when more), at least 1; *timed says how many ran
 * (samples_ms[0..*timed)). budget_s <= 0: no budget, kp_lab_measure itself. */
kprof_status kp_lab_measure_within(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                                   double budget_s, double *samples_ms, int *timed, kp_error *err);

/* How many of iters timed dispatches a budget of budget_s seconds allows when spent_s has gone
 * on the first `timed` of them (and any warm-ups) and a dispatch takes per_dispatch_s: timed plus
 * what fits in what is left, at most iters and at least max(timed, 1). budget_s <= 0 or an
 * unknown cost (per_dispatch_s <= 0): iters. Pure (exposed for tests). */
int kp_lab_budget_iters(int iters, int timed, double per_dispatch_s, double spent_s,
                        double budget_s);

/* n timed dispatches at launch, no warm-up: hot (cold == 0) back to back exactly as
 * kp_lab_measure times them; cold: the device's cache flushed (kp_backend_ops.flush_cache,
 * untimed) before each, and each dispatch timed alone with the same clock as hot ones
 * (dispatch_batch with n = 1 where the backend has it, else dispatch), so hot and cold samples
 * compare. samples_ms[0..n) in ms; flush_ms[0..n) (may be NULL) the flushes' own device time
 * in ms (0 for hot samples). info.timer says the clock, as after kp_lab_measure. INVALID for
 * n < 1; UNAVAILABLE, saying why, when cold is asked of a backend or device that cannot flush
 * its cache; TIMEOUT and FAULT as kp_lab_measure. */
kprof_status kp_lab_sample(kp_lab *lab, const kp_launch *launch, int n, int cold,
                           double *samples_ms, double *flush_ms, kp_error *err);

/* The device's SM clock at one moment (kp_lab_clock). */
typedef struct kp_clock_reading {
    int have;           /* 1: sm_mhz, default_mhz and reasons were read */
    double sm_mhz;      /* the SM clock now */
    double default_mhz; /* the default (applications) SM clock, else the maximum: a clock below
                           75% of it counts as throttled */
    uint64_t reasons;   /* NVML's clock-event (throttle) reason bits now (kp_clock_reasons_text) */
    char why_not[160];  /* when !have: why ("OpenCL devices: kprof reads no clock",
                           "libnvidia-ml.so.1 not found") */
} kp_clock_reading;

/* Read the session device's SM clock now, through NVML in kprof's own process (NVML needs no
 * CUDA context, so this works whether the session runs here or in a child), initialised once,
 * lazily, the device found by its PCI bus id (kp_device_info.pci_bus_id). Cheap enough to call
 * around every batch of samples. Never fails: !have and why_not say why nothing was read. Not
 * thread-safe against itself on one session. */
void kp_lab_clock(kp_lab *lab, kp_clock_reading *out);

/* kp_lab_clock's work for any device NVML knows, by PCI bus id ("0000:3B:00.0"): exposed for
 * tests (KPROF_NVML_LIBRARY names the NVML to load). */
void kp_clock_read_pci(const char *pci_bus_id, kp_clock_reading *out);

/* The reasons in words, comma-separated, in bit order: "sw power cap, hw slowdown"; "" for
 * none. The idle and applications-clock bits are left out (they are not throttling); bits
 * kprof has no word for are shown as one hex mask ("other 0x800"). */
void kp_clock_reasons_text(uint64_t reasons, char *buf, size_t n);

/* What the grid of a launch can touch if each thread touches one element of each buffer (an
 * element as the kernel's parameter declares it: a float4* parameter takes 16 bytes per thread
 * of an f32 buffer): the sum over buffers of min(buffer bytes, threads x element bytes). The
 * readings compare it with the buffers' sizes. *threads is the grid's thread count. */
uint64_t kp_lab_grid_bytes(const kp_lab *lab, const kp_launch *launch, uint64_t *threads);

/* Read every buffer back and digest it: out[0..*n). */
kprof_status kp_lab_digest(kp_lab *lab, kp_buffer_digest *out, int max, int *n, kp_error *err);

/* End the session's work: a session in a child process releases the device there and the child
 * exits; FAULT when it died on the way (a kernel that wrote outside its buffers corrupts memory,
 * and the crash often comes at release), and then nothing the session measured may be
 * reported. A session in this process keeps its objects until kp_lab_close and returns OK.
 * After it only kp_lab_get_info and kp_lab_close may be called. */
kprof_status kp_lab_finish(kp_lab *lab, kp_error *err);

/* The process that ran the session's kernels died: everything the session measured is void
 * (not only the call that returned FAULT). */
int kp_lab_is_void(const kp_lab *lab);

/* Release everything. After KPROF_TIMEOUT the kernel may still run and teardown could wait on
 * it for ever: callers then leave the process instead (the CLI does). lab may be NULL. */
void kp_lab_close(kp_lab *lab);

/* The kernel's signature for messages: "demo_add(float* out, const float* a, ...)". */
void kp_lab_signature(const kp_kernel_meta *k, char *buf, size_t n);

/* Check a SPEC against kernel parameters (exposed for tests). */
kprof_status kp_lab_check_spec(const kp_spec *spec, const kp_kernel_meta *k, kp_error *err);

#endif
