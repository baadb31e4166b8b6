/*
 * lab_internal.h — what the files of the kernel lab share, and nothing outside src/lab includes:
 * the session (struct kp_lab), the table of what a session does on its device (kp_lab_impl) and
 * the functions one file of the session calls in another.
 *
 * lab.c is the session's front (open, measure within a budget, finish, close): it calls every
 * device operation through lab->impl, never asking where the session runs. Two implementations
 * fill the table: lab_local.c runs the session in this process (calling the backend), isolate.c
 * in a child process (a proxy over its socket; the child itself runs lab_local.c's). compile.c
 * compiles through the cache; arguments.c checks a SPEC against the kernel's parameters and
 * binds it; launch.c checks and reflects a launch.
 *
 *   lab.c ──> kp_lab_impl ──> lab_local.c  (kp_lab_local)
 *                         └─> isolate.c    (kp_lab_remote) ──child──> lab_local.c
 */
#ifndef KP_LAB_INTERNAL_H
#define KP_LAB_INTERNAL_H

#include "lab/lab.h"

typedef struct kp_lab_child kp_lab_child; /* isolate.c: the child process and the socket to it */

/* What a session does on its device, wherever it runs. Each operation means what lab.h says of
 * the kp_lab_* function of the same name (lab.c checks the arguments it documents first). An
 * operation left NULL is one the session cannot do where it runs (counters and PC samples are
 * read only in this process). */
typedef struct kp_lab_impl {
    const char *where; /* "here", "child": for messages and tests */
    kprof_status (*use_kernel)(kp_lab *lab, const char *entry, kp_error *err);
    kprof_status (*check_launch)(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                 kp_error *err);
    kprof_status (*reflect)(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                            kp_error *err);
    /* spans: NULL, or warmup + iters of them, the warm-ups' first (lab.c logs them). */
    kprof_status (*measure)(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                            double *samples_ms, kp_dispatch_span *spans, kp_error *err);
    /* n >= 1 (lab.c refuses fewer). spans: NULL, or n of them hot; cold 2n, each flush's before
     * its sample's (flush i at 2i, sample i at 2i + 1). */
    kprof_status (*sample)(kp_lab *lab, const kp_launch *launch, int n, int cold,
                           double *samples_ms, double *flush_ms, kp_dispatch_span *spans,
                           kp_error *err);
    kprof_status (*digest)(kp_lab *lab, kp_buffer_digest *out, int max, int *n, kp_error *err);
    /* The backend's counters (kp_backend_ops.counters) of one dispatch of the session's kernel;
     * NULL where they cannot be read. */
    kprof_status (*counters)(kp_lab *lab, const kp_launch *launch, const char *const *metrics,
                             size_t n, double *values, unsigned char *bad, kp_error *err);
    /* The backend's PC sampler (kp_backend_ops.pc_sample) over the session's kernel; NULL where
     * it cannot run. */
    kprof_status (*pc_sample)(kp_lab *lab, const kp_launch *launch, int dispatches,
                              kp_pc_samples *out, kp_error *err);
    kprof_status (*finish)(kp_lab *lab, kp_error *err);
    int (*pid)(const kp_lab *lab);     /* kp_lab_pid */
    int (*is_void)(const kp_lab *lab); /* kp_lab_is_void */
    void (*close)(kp_lab *lab);        /* releases everything, lab included (never NULL) */
} kp_lab_impl;

struct kp_lab {
    const kp_lab_impl *impl; /* where the session runs: kp_lab_local or kp_lab_remote */
    kp_lab_info info;
    /* A session in this process (kp_lab_local): the backend's objects. */
    const kp_backend_ops *ops;
    kp_device *dev;
    kp_program *program;
    kp_program_meta meta;
    kp_kernel *kernel;
    kp_spec spec; /* both: a remote session parses it too (a fault's message reads it) */
    kp_buffer *buffers[KP_SPEC_MAX_ARGS];
    int bound;           /* buffers exist and are bound to the kernel */
    kp_capture *capture; /* a replayed capture (info.replay): its arguments bind the kernel */
    /* A session in a child process (kp_lab_remote). */
    kp_lab_child *child;
    kp_lab_log *log; /* kp_lab_set_log's, or NULL (both) */
};

/* ---- lab_local.c: the session in this process ---------------------------------------------- */

/* The table of a session in this process (what the child of a remote session runs too). A test
 * may make a kp_lab of its own with calloc, set impl to &kp_lab_local, ops and what it needs. */
extern const kp_lab_impl kp_lab_local;

/* Open the session here: resolve, choose the device, compile, reflect, check and bind. */
kprof_status kp_lab_local_open(const kp_lab_options *opts, kp_lab **out, kp_error *err);

/* NAME|FILE -> info->source_path (and info->kernel_dir for a NAME). */
kprof_status kp_lab_resolve(const kp_lab_options *opts, kp_lab_info *info, kp_error *err);

/* ---- replay.c: a captured launch as the session's arguments ------------------------------ */

/* The capture a session replays: opts->capture, else the target when it resolves to a capture
 * folder. *out NULL (and OK) when there is none; else the capture (free with
 * kp_lab_capture_free) and dir its folder. INVALID when --buffers is given with one. */
kprof_status kp_lab_capture_load(const kp_lab_options *opts, kp_capture **out, char *dir, size_t n,
                                 kp_error *err);
void kp_lab_capture_free(kp_capture *c); /* NULL is a no-op */

/* Whether a resolved source is a captured OpenCL program's binary (<capture>/program.bin). */
int kp_lab_is_program_binary(const char *source_path);
/* The language of a resolved source: kp_lang_from_path, and OpenCL C for a program.bin. */
int kp_lab_source_lang(const char *source_path);
/* A captured OpenCL program's binary (program.bin) loaded for the session's device instead of a
 * compile: lab->program, and lab->meta holding the capture's kernel alone (its parameters
 * uncounted: bind_capture checks the count against the kernel). */
kprof_status kp_lab_capture_load_binary(kp_lab *lab, const char *binary, size_t len, kp_error *err);

/* The launch a capture replays at: its dims, grid, tg and (CUDA) dynamic shared memory. Where
 * the program let the runtime choose the group size (OpenCL: no local size, tg 0), the largest
 * power of two of at most 256 threads that divides the grid: 1 is returned then, else 0. */
int kp_lab_capture_launch(const kp_capture *c, kp_launch *l);

/* The device a capture was made on: the index of the first device of the capture's backend (or
 * `backend`, when given and not "auto") whose name is the manifest's device; -1 (the usual
 * choice) when none is, or the backend cannot run here. */
int kp_lab_capture_device(const kp_capture *c, const char *backend);

/* The SPEC a capture stands for: one u8 buffer per allocation (item j = allocation j), then one
 * local item per __local argument. INVALID past KP_SPEC_MAX_ARGS. */
kprof_status kp_lab_capture_spec(const kp_capture *c, kp_spec *spec, kp_error *err);

/* The kernel takes what the capture passes: as many parameters, each of the captured size (where
 * the kernel says) and of the captured kind (buffer, local, value). INVALID naming the first that
 * differs. */
kprof_status kp_lab_capture_check_kernel(const kp_capture *c, const kp_kernel_meta *k,
                                         kp_error *err);

/* Bind the capture's arguments to kernel (lab->buffers made). */
kprof_status kp_lab_capture_bind_kernel(kp_lab *lab, kp_kernel *kernel, kp_error *err);

/* Allocate every captured allocation, write its before-state, bind (lab->bound), then one
 * dispatch at the captured geometry read back and compared with the after-states: info.replay_*
 * filled. On failure the buffers made so far stay in lab->buffers for kp_lab_close. */
kprof_status kp_lab_capture_bind(kp_lab *lab, kp_error *err);

/* ---- isolate.c: the session in a child process --------------------------------------------- */

/* The table of a session in a child process: every operation is a request to the child. */
extern const kp_lab_impl kp_lab_remote;

/* Fork the child and open the session in it (kp_lab_local_open there). The session's info is
 * the child's, with info.kernel pointing into the child handle and info.spec at the session's
 * own parsed SPEC. On failure nothing is left running. */
kprof_status kp_lab_remote_open(const kp_lab_options *opts, kp_lab **out, kp_error *err);

/* kp_lab_device's work in a child: choose the device and describe it there. */
kprof_status kp_lab_remote_device(const char *backend, int device, int lang,
                                  const kp_backend_ops **ops, int *index, kp_device_info *info,
                                  kp_error *err);

/* ---- launch.c ------------------------------------------------------------------------------ */

/* kp_lab_check_launch and kp_lab_reflect for a session in this process (kp_lab_local's). */
kprof_status kp_lab_local_check_launch(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                       kp_error *err);
kprof_status kp_lab_local_reflect(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                  kp_error *err);

/* ---- compile.c ----------------------------------------------------------------------------- */

/* Compile the session's source through the cache into lab->program and lab->meta; dumps with
 * KPROF_DUMP_DIR; keeps the source, options and log of a failed compile in a folder. */
kprof_status kp_lab_compile(kp_lab *lab, const kp_source *src, kp_error *err);

/* A hash of the files the source includes, so an edited header misses the compile cache. */
uint64_t kp_lab_includes_hash(const kp_source *src);

/* Walk every file the source includes that kprof can find (beside the source, or in an -I
 * folder of the options); the bodies go to `bodies` when it is not NULL. 0 when none was found,
 * else their hash. */
uint64_t kp_lab_walk_source(const kp_source *src, kp_str *bodies);

/* ---- arguments.c --------------------------------------------------------------------------- */

/* Parameters passed by value whose type is a struct or union become KP_PARAM_STRUCT or
 * KP_PARAM_UNION (is_text: the source is text kprof may read for their declarations). */
void kp_lab_mark_aggregates(kp_program_meta *meta, const kp_source *src, int is_text);

/* Allocate, fill and write the SPEC's buffers and bind them to lab->kernel. On failure the
 * buffers made so far stay in lab->buffers for kp_lab_close. */
kprof_status kp_lab_bind_buffers(kp_lab *lab, kp_error *err);

#endif
