/*
 * kprof.h — the public interface of libkprof, the GPU kernel profiler.
 *
 * This header is the specification. Every function says what it takes, who owns what, whether
 * it is thread-safe and what it returns. The library never calls exit() and never prints unless
 * a function says so.
 *
 * What is here: versioning and the status codes every kprof function and the `kprof`
 * command-line tool share, and the in-process profiler — sessions, scopes with metrics, results
 * (key averages, the call tree, events, distributions, exports) and time-budgeted repeats. The
 * kernel lab (caps, isolate, run) is reached through the `kprof` tool.
 *
 * Link with -lkprof (libkprof.so or libkprof.a; pthreads, libdl, libm and SQLite come with it).
 * Define KPROF_DISABLE before including this header (or with -DKPROF_DISABLE) and kprof compiles
 * out: the instrumentation — KPROF_SCOPE and the other scope macros, the kprof_scope_* inline
 * functions — to nothing, and every other function to an inline no-op (see "KPROF_DISABLE" at
 * the end of this header for what each returns): no code, no reference to libkprof, no -lkprof.
 */
#ifndef KPROF_H
#define KPROF_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libkprof.so exports: the functions of this header, and nothing else. Under KPROF_DISABLE
 * every function of this header is instead a static inline no-op defined at its end (inlined even
 * at -O0: no code and no symbol where it is called). */
#if defined(KPROF_DISABLE) && defined(__GNUC__)
#define KPROF_API static inline __attribute__((always_inline, unused))
#elif defined(KPROF_DISABLE)
#define KPROF_API static inline
#elif defined(__GNUC__)
#define KPROF_API __attribute__((visibility("default")))
#else
#define KPROF_API
#endif

#define KPROF_VERSION_MAJOR  0
#define KPROF_VERSION_MINOR  1
#define KPROF_VERSION_PATCH  0
#define KPROF_VERSION_STRING "0.1.0"

/*
 * Structs that grow. Later versions of libkprof add fields at the end of its structs without
 * breaking a program compiled against this header, in two ways:
 *
 * - A struct the caller fills or gives the library to fill (the options structs, kprof_summary,
 *   kprof_benchmark_result, kprof_comparison) starts with `size`, which the caller sets to its
 *   sizeof as the caller's header had it (the *_INIT macros do). The library reads and writes the
 *   fields inside `size` and nothing past it; a field of a newer header that the library does
 *   not know keeps its default (options) or what the caller put there (results). size 0, or
 *   larger than the library's struct for an options struct, is INVALID.
 * - An array the library returns (kprof_row, kprof_node, kprof_distribution) is stepped through
 *   with its accessor, kprof_row_at(rows, i) and the like, never rows[i]: the library's elements
 *   may be larger than the caller's sizeof. Each element, and each kprof_event a callback is
 *   given, starts with `size`: its sizeof as the library built it. A field the library may not
 *   have (newer than the oldest library a program runs with) is read after KPROF_HAS(type, p,
 *   field) says it is there.
 *
 * Getters return a status and give what they found through out-parameters, so that "nothing
 * there" (OK, *n = 0) and "failed" (a status, kprof_last_error saying why) differ.
 */
#define KPROF_HAS(type, p, field)                                                                  \
    ((p)->size >= offsetof(type, field) + sizeof(((const type *)0)->field))

/*
 * Status codes. One list generates the enum, kprof_strerror() and kprof_status_name().
 * X(NAME, exit code of the kprof tool, text)
 *
 * Exit codes of the `kprof` tool: 0 ok, 1 runtime failure (memory, a real I/O error, a
 * backend error, an output that cannot be written), 2 usage error or bad input (every bad input
 * file: missing, a folder, a FIFO or device, damaged, truncated, foreign, of another format
 * version; an output kprof refuses), 3 backend or device unavailable, 4 kernel fault, compile
 * failure or timeout, 5 a regression past the gate (`--fail-if-slower P` of bench and diff:
 * KPROF_REGRESSION, which no library call returns), and 128 + N for a command ended by signal N
 * (SIGINT, SIGTERM, SIGHUP; `kprof trace` after merging what was recorded).
 */
#define KPROF_STATUS_LIST(X)                                                                       \
    X(OK, 0, "success")                                                                            \
    X(INVALID, 2, "invalid argument or input")                                                     \
    X(NOT_FOUND, 2, "not found")                                                                   \
    X(UNAVAILABLE, 3, "backend or device unavailable")                                             \
    X(COMPILE, 4, "kernel compile failure")                                                        \
    X(FAULT, 4, "kernel fault")                                                                    \
    X(TIMEOUT, 4, "kernel timed out")                                                              \
    X(NOMEM, 1, "allocation failure")                                                              \
    X(IO, 1, "input/output error")                                                                 \
    X(CORRUPT, 2, "file corrupt or of the wrong format")                                           \
    X(BACKEND, 1, "backend runtime failure")                                                       \
    X(REGRESSION, 5, "a regression past the gate")

typedef enum kprof_status {
#define KPROF_STATUS_ENUM_(name, code, text) KPROF_##name,
    KPROF_STATUS_LIST(KPROF_STATUS_ENUM_)
#undef KPROF_STATUS_ENUM_
        KPROF_STATUS_COUNT_
} kprof_status;

/* Fixed English text for a status ("kernel fault"). Never NULL; unknown values give
 * "unknown status". Thread-safe. */
KPROF_API const char *kprof_strerror(kprof_status status);

/* The enum's name without prefix ("FAULT"). Never NULL. Thread-safe. */
KPROF_API const char *kprof_status_name(kprof_status status);

/* The exit code the `kprof` tool uses for a status (see the list above). */
KPROF_API int kprof_status_exit_code(kprof_status status);

/* The library's version string, e.g. "0.1.0". Static storage. Thread-safe. */
KPROF_API const char *kprof_version(void);

/* What failed in the last kprof_* call on this thread that returned an error (or NULL), in one
 * line naming what was wrong and where ("kprof_start: the cuda collector is not available in
 * this build yet: ..."); "" when none has failed. Owned by the library, valid until the next
 * failing call on the same thread. Never NULL. Thread-safe (each thread has its own). */
KPROF_API const char *kprof_last_error(void);

/* ==== the in-process profiler ==================================================================
 *
 * A SESSION records from kprof_start to kprof_stop, in one process: the scopes every thread opens
 * and closes; with KPROF_COLLECT_CUDA the process's CUDA work (API calls, kernels, copies,
 * fills, syncs: CUPTI's activity records, as `kprof trace` takes them); with
 * KPROF_COLLECT_OPENCL its OpenCL calls and device work (through libkprof-inject.so as an OpenCL
 * layer, as `kprof trace` takes them: the ICD loader takes the layer in at the program's first
 * OpenCL call, so start the first session before it, or use KPROF=1). kprof_stop turns
 * what was recorded into a RESULT: key averages by name or by call path, the call tree, the
 * chronological events, per-name distributions, and exports — a `.kprof` trace that `kprof
 * report` and `kprof export` read like any other, Chrome trace JSON, Perfetto, Hatchet, the call
 * tree as JSON or CSV. One session at a time per process.
 *
 * KPROF=1 in the environment starts a session when libkprof is loaded (options: the defaults;
 * KPROF_COLLECT=scopes,cuda,opencl,nvtx names its collectors)
 * and, when the program exits (returns from main or calls exit()), stops it and saves its trace
 * to $KPROF_OUTPUT (which may hold `kprof trace -o`'s per-rank patterns: %r the rank, %l the local
 * rank, %p the pid, %h the host, %q{VAR} a variable, %% a %; one that cannot be expanded is said
 * on stderr and the default name used) — or, unset, to kprof-PID.kprof in the working folder —
 * never over an existing file: when the name is taken, the first free NAME-1.kprof, NAME-2.kprof,
 * ... is used instead; a folder gets the trace inside it (FOLDER/kprof-PID.kprof); a device, FIFO
 * or socket is refused. When the trace cannot be saved there (a missing folder, a read-only or full
 * file system, a name too long, a refused one) it is kept whole in the scratch folder
 * ($TMPDIR/kprof-PID-XXXXXX/session.kprof) and the error line says so.
 * It says where on standard error (names escaped), in one line ("kprof: saved 1200 events to
 * kprof-4242.kprof"), the one time this library prints by itself: KPROF=1 asked for it. A program
 * that calls kprof_stop itself ends that session (nothing is saved at exit then). A forked child
 * does not record (its copy of the session is abandoned); a program it execs that loads libkprof
 * starts one of its own. A session the program started itself and left running when it exits is
 * stopped and discarded (nothing asked for its trace). A session still running when the program
 * ends by other means (_exit, a signal) leaves its records in its scratch folder
 * ($TMPDIR/kprof-PID-XXXXXX), which `kprof trace --merge DIR -o FILE` turns into a trace.
 *
 * Neither libkprof nor a library holding KPROF_SCOPE sites may be unloaded (dlclose) while a
 * session runs: the session reads the sites, and its drain thread runs libkprof's code.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, as in every kprof trace. Scopes read a cheaper clock on
 * their hot path — the CPU's time-stamp counter where the kernel keeps time with it — and the
 * session maps it onto CLOCK_MONOTONIC when it collects the records (KPROF_CLOCK=monotonic makes
 * scopes read clock_gettime instead).
 */

/* Collectors: X(NAME, bit, name, what). A session records what its options' `collectors` name.
 * NVTX (the program's NVTX ranges and marks, through libkprof-inject.so as its NVTX injection,
 * as `kprof trace` records them: start the first session before the program's first NVTX call)
 * comes with CUDA and OPENCL unless it cannot run (under `kprof trace`, beside another NVTX
 * injection: then a note in the trace says why); asked for itself, it fails kprof_start there. */
#define KPROF_COLLECTOR_LIST(X)                                                                    \
    X(SCOPES, 0, "scopes", "the scopes of this header (KPROF_SCOPE, kprof_scope_begin)")           \
    X(CUDA, 1, "cuda", "CUDA API calls, kernels, copies, fills and syncs, in-process (CUPTI)")     \
    X(OPENCL, 2, "opencl", "OpenCL calls, kernels, copies and fills, in-process (a layer)")        \
    X(NVTX, 3, "nvtx", "the program's NVTX ranges and marks (on with cuda or opencl)")

enum {
#define KPROF_COLLECT_ENUM_(NAME, bit, name, what) KPROF_COLLECT_##NAME = 1u << (bit),
    KPROF_COLLECTOR_LIST(KPROF_COLLECT_ENUM_)
#undef KPROF_COLLECT_ENUM_
};

/* A session's options. Sized, so that later versions can add fields: set `size` (use
 * KPROF_OPTIONS_INIT), then what matters; fields past `size` take their defaults. */
typedef struct kprof_options {
    unsigned size;           /* sizeof(kprof_options) */
    unsigned collectors;     /* KPROF_COLLECT_* bits; the scopes always record (SCOPES implied) */
    unsigned ring_entries;   /* scopes a thread holds before they must be collected (32 bytes
                                each, per thread that opens scopes); 0: 32768. Rounded up to a
                                power of two, at least 64. A thread whose buffer is full
                                collects it itself (slower, never lost). A thread keeps the
                                buffer it got in its first session. */
    const char *scratch_dir; /* where the session keeps its record files and its result's
                                trace; NULL: $TMPDIR, else /tmp. Copied. */
} kprof_options;

/* clang-format off */
#define KPROF_OPTIONS_INIT {sizeof(kprof_options), 0u, 0u, NULL}
/* clang-format on */

typedef struct kprof_result kprof_result;

/* Start a session. options: NULL for the defaults; not kept (copied). Thread-safe; the first call
 * in a process measures the time-stamp counter's rate (about 2 ms).
 * Returns OK; INVALID when a session is already running (the message says whether KPROF=1
 * started it) or the options are malformed (size 0 or larger than this header's, an unknown
 * collector bit); UNAVAILABLE when a collector asked for cannot run here, the message saying why:
 * OpenCL needs libkprof-inject.so beside libkprof (or KPROF_INJECT_LIBRARY) and stands aside
 * under `kprof trace` (whose collector records OpenCL); CUDA needs the CUDA driver and CUPTI, and
 * stands aside when another CUDA injection (`kprof trace`, Nsight Systems, Nsight Compute:
 * CUDA_INJECTION64_PATH) or another CUPTI client holds CUPTI — "kprof's own CUDA collection is
 * off", never silently; IO when the scratch folder cannot be made;
 * NOMEM. On failure nothing is recording. */
KPROF_API kprof_status kprof_start(const kprof_options *options);

/* Stop the session and collect what it recorded: every thread's scopes that began after
 * kprof_start and ended before kprof_stop are in the result (a scope still open, or one that
 * ends on a thread racing this call, is not). *result: the new result (the caller destroys it),
 * or NULL on failure; result may be NULL to discard the session (nothing is merged then).
 * Thread-safe; may be called from any thread, while other threads keep opening scopes (they stop
 * recording).
 * Returns OK; INVALID when no session is running; IO when the records cannot be written or
 * merged (a full disk: the message names the folder); NOMEM. The session is over whatever the
 * result. */
KPROF_API kprof_status kprof_stop(kprof_result **result);

/* 1 while a session is recording in this process, else 0. Thread-safe. */
KPROF_API int kprof_recording(void);

/* A copy of text that lives until the process ends: for a scope name built at run time (the
 * scope calls keep the pointer, not the text). The same text gives the same pointer. NULL when
 * text is NULL or memory ran out. Thread-safe (takes a lock: not for a hot loop). */
KPROF_API const char *kprof_intern(const char *text);

/* ---- scopes -----------------------------------------------------------------------------------
 *
 * A scope times a region of one thread. KPROF_SCOPE("name") times the rest of the enclosing
 * block (C: GCC's and Clang's cleanup attribute; C++: an RAII object); kprof_scope_begin and
 * kprof_scope_end time any stretch of one thread. Scopes nest: the result derives each scope's
 * call path ("step/forward/gemm") from the scopes open on its thread, by time.
 *
 * Metrics: KPROF_SCOPE_WORK("name", flops, bytes) says how much work the scope does, and
 * kprof_scope_metric(&scope, "key", value) adds any metric; "flops" and "bytes" make the results'
 * GFLOP/s and GB/s, other keys go into the trace as they are. A metric belongs to the scope it is
 * given to; give it on the scope's own thread, before the scope ends.
 *
 * Cost: when no session is recording, opening and closing a scope is one relaxed load of a
 * global flag and two branches (bench/scopes.c counts the instructions): no call, no allocation,
 * no thread-local storage touched; KPROF_SCOPE_WORK does not even evaluate its flops and bytes.
 * When recording,
 * a scope reads the clock twice and appends 32 bytes to its thread's buffer: no lock, no
 * allocation (but for a thread's first scope of a session, which makes its buffer).
 * docs/guide/library.md gives the measured figures.
 *
 * Names: a KPROF_SCOPE name must be a string literal (or other static storage); the pointer
 * given to kprof_scope_begin and the keys of kprof_scope_metric must stay valid until kprof_stop
 * returns — use kprof_intern for text built at run time.
 *
 * Thread safety: any thread may open scopes at any time, with or without a session; a scope
 * belongs to the thread that opened it (end it and give it metrics there). Not from a signal
 * handler: a handler's scope would interrupt its own thread's append.
 */

/* A call site of KPROF_SCOPE: static, one per site (the macro declares it). */
typedef struct kprof_scope_site {
    const char *name; /* the scope's name: static storage */
    const char *file; /* where the site is */
    int line;
    unsigned long long cache_; /* kprof's: the name's id in the current session */
} kprof_scope_site;

/* An open scope: a small value on the stack, never allocated. Its fields are kprof's. */
typedef struct kprof_scope {
    const void *what_;         /* its site, or its name (kprof_scope_begin) */
    unsigned long long start_; /* when it opened, in ticks; 0: not recording */
} kprof_scope;

#ifndef KPROF_DISABLE
/* Nonzero while a session records scopes. For the inline functions below, which read it with
 * one relaxed load; not for programs to read or write. */
extern KPROF_API int kprof_scopes_on_;

/* The out-of-line halves of the inline functions below (called only while recording). */
KPROF_API unsigned long long kprof_scope_open_(void);
KPROF_API void kprof_scope_close_(const void *what, unsigned long long start);
KPROF_API void kprof_scope_metric_(const void *what, unsigned long long start, const char *key,
                                   double value);
KPROF_API void kprof_scope_work_(const void *what, unsigned long long start, double flops,
                                 double bytes);
#endif

#define KPROF_SCOPE_NAMED_ (1ull << 63) /* start_ bit: what_ is a name, not a site */

#if defined(__GNUC__)
#define KPROF_UNLIKELY_(x)  __builtin_expect(!!(x), 0)
#define KPROF_RECORDING_()  __atomic_load_n(&kprof_scopes_on_, __ATOMIC_RELAXED)
#define KPROF_MAYBE_UNUSED_ __attribute__((unused))
#else
#define KPROF_UNLIKELY_(x) (x)
#define KPROF_RECORDING_() (*(volatile int *)&kprof_scopes_on_)
#define KPROF_MAYBE_UNUSED_
#endif

#ifndef KPROF_DISABLE

/* Open a scope at a site (what KPROF_SCOPE does). */
static inline kprof_scope kprof_scope_enter(kprof_scope_site *site)
{
    kprof_scope s;
    s.what_ = site;
    s.start_ = 0;
    if (KPROF_UNLIKELY_(KPROF_RECORDING_())) s.start_ = kprof_scope_open_();
    return s;
}

/* Open a scope named name (kept as a pointer: see "Names" above). End it with kprof_scope_end
 * on the same thread. */
static inline kprof_scope kprof_scope_begin(const char *name)
{
    kprof_scope s;
    s.what_ = name;
    s.start_ = 0;
    if (KPROF_UNLIKELY_(KPROF_RECORDING_())) {
        unsigned long long t = kprof_scope_open_();
        s.start_ = t ? t | KPROF_SCOPE_NAMED_ : 0;
    }
    return s;
}

/* End a scope (a second end of the same scope does nothing). */
static inline void kprof_scope_end(kprof_scope *scope)
{
    if (KPROF_UNLIKELY_(scope->start_ != 0)) kprof_scope_close_(scope->what_, scope->start_);
    scope->start_ = 0;
}

/* A metric of an open scope: key "flops", "bytes" or any other (static storage, see above). */
static inline void kprof_scope_metric(const kprof_scope *scope, const char *key, double value)
{
    if (KPROF_UNLIKELY_(scope->start_ != 0))
        kprof_scope_metric_(scope->what_, scope->start_, key, value);
}

/* The work an open scope does: its "flops" and "bytes" metrics at once. */
static inline void kprof_scope_work(const kprof_scope *scope, double flops, double bytes)
{
    if (KPROF_UNLIKELY_(scope->start_ != 0))
        kprof_scope_work_(scope->what_, scope->start_, flops, bytes);
}

/* KPROF_SCOPE's cleanup. */
static inline void kprof_scope_cleanup_(kprof_scope *scope)
{
    if (KPROF_UNLIKELY_(scope->start_ != 0)) kprof_scope_close_(scope->what_, scope->start_);
}

/* KPROF_DISABLE: the same calls, as macros that do nothing (no code, no symbol, even at -O0);
 * their arguments are evaluated, as a function's would be, and then dropped. */
#else

#ifdef __cplusplus
#define KPROF_SCOPE_NONE_(what) (kprof_scope{(what), 0ull})
#else
#define KPROF_SCOPE_NONE_(what) ((kprof_scope){(what), 0ull})
#endif
#define kprof_scope_enter(site)               KPROF_SCOPE_NONE_(site)
#define kprof_scope_begin(name)               KPROF_SCOPE_NONE_(name)
#define kprof_scope_end(scope)                ((void)(scope))
#define kprof_scope_metric(scope, key, value) ((void)(scope), (void)(key), (void)(value))
#define kprof_scope_work(scope, flops, bytes) ((void)(scope), (void)(flops), (void)(bytes))

#endif /* KPROF_DISABLE */

#define KPROF_CAT2_(a, b) a##b
#define KPROF_CAT_(a, b)  KPROF_CAT2_(a, b)

/*
 * KPROF_SCOPE("name");                         the rest of the block is a scope
 * KPROF_SCOPE_WORK("name", flops, bytes);      ... that does this much work
 * KPROF_SCOPE_AS(var, "name");                 ... held in variable var, for kprof_scope_metric
 *                                              (&var, "key", value)
 * Each is a declaration: write it inside a block, where a declaration may go. With KPROF_DISABLE
 * KPROF_SCOPE and KPROF_SCOPE_WORK vanish (their arguments are not evaluated) and KPROF_SCOPE_AS
 * declares a scope that records nothing.
 */
#if defined(KPROF_DISABLE)
#define KPROF_SCOPE(name)
#define KPROF_SCOPE_WORK(name, flops, bytes)
#define KPROF_SCOPE_AS(var, name) KPROF_MAYBE_UNUSED_ kprof_scope var = {0, 0}
#elif defined(__cplusplus)
#define KPROF_SCOPE_AS(var, name)                                                                  \
    static kprof_scope_site KPROF_CAT_(var, _site_) = {name, __FILE__, __LINE__, 0};               \
    kprof::scope var(&KPROF_CAT_(var, _site_))
#elif defined(__GNUC__)
#define KPROF_SCOPE_AS(var, name)                                                                  \
    static kprof_scope_site KPROF_CAT_(var, _site_) = {name, __FILE__, __LINE__, 0};               \
    kprof_scope var __attribute__((cleanup(kprof_scope_cleanup_), unused)) =                       \
        kprof_scope_enter(&KPROF_CAT_(var, _site_))
#endif
#if defined(KPROF_SCOPE_AS) && !defined(KPROF_DISABLE)
#define KPROF_SCOPE_ID_(n, name) KPROF_SCOPE_AS(KPROF_CAT_(kprof_scope_, n), name)
#define KPROF_SCOPE_WORK_ID_(n, name, flops, bytes)                                                \
    KPROF_SCOPE_AS(KPROF_CAT_(kprof_scope_, n), name);                                             \
    if (KPROF_UNLIKELY_(KPROF_CAT_(kprof_scope_, n).start_ != 0))                                  \
    kprof_scope_work_(KPROF_CAT_(kprof_scope_, n).what_, KPROF_CAT_(kprof_scope_, n).start_,       \
                      (double)(flops), (double)(bytes))
#define KPROF_SCOPE(name)                    KPROF_SCOPE_ID_(__COUNTER__, name)
#define KPROF_SCOPE_WORK(name, flops, bytes) KPROF_SCOPE_WORK_ID_(__COUNTER__, name, flops, bytes)
#endif

/* ---- results ----------------------------------------------------------------------------------
 *
 * A result is what one session recorded, read from its trace (a `.kprof` file in the session's
 * scratch folder, removed with the result) exactly as `kprof report` reads one: the same numbers,
 * the same call tree. It owns everything its functions return (rows, nodes, names); those stay
 * valid until kprof_result_destroy. A result is used by one thread at a time (the first call of
 * each view computes it and keeps it); different results are independent.
 *
 * Kinds (the `kind` fields): "range" for scopes (and NVTX ranges); "api", "kernel", "memcpy",
 * "memset" for the CUDA and OpenCL collectors' events; "unattributed" for device work whose call
 * was not recorded. Times in seconds unless a name says ns.
 */

/* The whole session. Sized (use KPROF_SUMMARY_INIT; see "Structs that grow"). */
typedef struct kprof_summary {
    unsigned size;              /* sizeof(kprof_summary), set by the caller */
    unsigned long long events;  /* events recorded: scopes (and calls, device work) */
    unsigned long long dropped; /* events lost on the way (memory, a full disk): counted, never
                                   silent; 0 when the result is whole */
    unsigned threads;           /* threads that recorded anything */
    long long start_ns, end_ns; /* kprof_start and kprof_stop, CLOCK_MONOTONIC */
    double host_s;              /* the top-level scopes' time, all threads summed */
} kprof_summary;

/* clang-format off */
#define KPROF_SUMMARY_INIT {sizeof(kprof_summary), 0ull, 0ull, 0u, 0ll, 0ll, 0.0}
/* clang-format on */

/* Fill *out's fields inside out->size. OK, or INVALID for a NULL argument or out->size 0. */
KPROF_API kprof_status kprof_result_summary(const kprof_result *result, kprof_summary *out);

/* Key averages: X(NAME, name). BY_NAME: one row per (kind, name), every call path together;
 * BY_PATH: one row per call path. */
#define KPROF_GROUP_LIST(X)                                                                        \
    X(NAME, "name")                                                                                \
    X(PATH, "path")

typedef enum kprof_group {
#define KPROF_GROUP_ENUM_(NAME, name) KPROF_BY_##NAME,
    KPROF_GROUP_LIST(KPROF_GROUP_ENUM_)
#undef KPROF_GROUP_ENUM_
        KPROF_GROUP_COUNT_
} kprof_group;

/* A row of key averages. An element of an array: step through it with kprof_row_at. */
typedef struct kprof_row {
    size_t size;                        /* sizeof(kprof_row) as the library built it */
    const char *kind;                   /* see "Kinds" above */
    const char *name;                   /* its name */
    const char *path;                   /* BY_PATH: the names from the top level down joined by "/"
                                           ("step/forward"); BY_NAME: the name */
    unsigned long long calls;           /* events: scope instances, calls, device operations */
    double total_s;                     /* their durations summed */
    double self_s;                      /* of it, not inside child scopes (host events) */
    double min_s, mean_s, max_s, std_s; /* one event's duration (std: sample standard
                                           deviation, 0 for one event) */
    double gpu_s;             /* device time attributed to it and below (later collectors) */
    double flops, bytes;      /* its events' "flops" and "bytes" metrics, summed */
    double gflops_per_s;      /* flops / total_s / 1e9 (0 without flops or time); for a scope or
                                 call that launched device work (gpu_s > 0), flops / gpu_s / 1e9:
                                 what its device work ran at */
    double gb_per_s;          /* bytes, likewise */
    double host_gflops_per_s; /* a scope's or call's flops / total_s / 1e9, its host time (the
                                 same as gflops_per_s where it launched no device work); 0 for
                                 device work */
    double host_gb_per_s;     /* bytes, likewise */
} kprof_row;

/* The key averages grouped by `by`, largest total first: *rows the first (owned by the result;
 * step with kprof_row_at), *n how many. OK (*rows NULL and *n 0 when there are none); INVALID (a
 * NULL argument, `by` no kprof_group); NOMEM. On failure *rows is NULL and *n 0 (where they are
 * not NULL). */
KPROF_API kprof_status kprof_result_key_averages(kprof_result *result, kprof_group by,
                                                 const kprof_row **rows, size_t *n);

/* Row i of an array kprof_result_key_averages gave (i < its n: not checked), in the library's
 * stride. NULL when rows is NULL. Thread-safe. */
KPROF_API const kprof_row *kprof_row_at(const kprof_row *rows, size_t i);

/* A node of the call tree: one call path, every instance on every thread added up. An element
 * of an array: step through it with kprof_node_at (parent, first_child and next_sibling are
 * indices for it). */
typedef struct kprof_node {
    size_t size;         /* sizeof(kprof_node) as the library built it */
    size_t parent;       /* its parent's index (0: a top-level node; node 0 is the root) */
    size_t first_child;  /* 0: none; children are in order of total time, largest first */
    size_t next_sibling; /* 0: none */
    unsigned depth;      /* 0: the root, 1: the top level */
    const char *kind;    /* "root" for node 0, else see "Kinds" */
    const char *name;
    const char *path; /* the names from the top level down joined by "/" ("" for the root) */
    unsigned long long calls;
    double inclusive_s; /* host time of its instances */
    double exclusive_s; /* ... not inside its children */
    double min_s, mean_s, max_s, std_s;
    double gpu_s;                            /* device time attributed (later collectors) */
    double flops, bytes;                     /* its own events' metrics */
    double flops_inclusive, bytes_inclusive; /* with everything below it */
    double gflops_per_s; /* flops / inclusive_s / 1e9; where it launched device work (gpu_s >
                            0), flops / gpu_s / 1e9, as kprof_row's */
    double gb_per_s;     /* bytes, likewise */
    double host_gflops_per_s, host_gb_per_s; /* over inclusive_s, as kprof_row's */
} kprof_node;

/* The call tree: *nodes the root (node 0: its numbers are the top level's sums; owned by the
 * result; step with kprof_node_at), every node's parent before it; *n how many, the root
 * included (at least 1). OK; INVALID (a NULL argument); NOMEM. On failure *nodes is NULL and *n
 * 0 (where they are not NULL). */
KPROF_API kprof_status kprof_result_tree(kprof_result *result, const kprof_node **nodes, size_t *n);

/* Node i of the array kprof_result_tree gave (i < its n: not checked), in the library's stride.
 * NULL when nodes is NULL. Thread-safe. */
KPROF_API const kprof_node *kprof_node_at(const kprof_node *nodes, size_t i);

/* One event, in the chronological list. */
typedef struct kprof_event {
    size_t size; /* sizeof(kprof_event) as the library built it */
    const char *kind;
    const char *name;
    long long start_ns, end_ns; /* CLOCK_MONOTONIC */
    long long pid, tid;         /* the process and the kernel thread id (gettid) */
    unsigned long long id;      /* a scope's id, unique in its process */
} kprof_event;

/* Called for each event in order of start; return nonzero to stop early. e is valid during the
 * call only. */
typedef int (*kprof_event_fn)(const kprof_event *e, void *ctx);

/* Call fn for every event of the result in order of start (events starting together in the
 * order they were recorded). OK (also when fn stopped early); INVALID for a NULL argument; NOMEM;
 * CORRUPT or IO when the result's trace cannot be read. */
KPROF_API kprof_status kprof_result_events(kprof_result *result, kprof_event_fn fn, void *ctx);

/* The distribution of one name's durations: Enigma's benchmark summary. An element of an array:
 * step through it with kprof_distribution_at. */
typedef struct kprof_distribution {
    size_t size; /* sizeof(kprof_distribution) as the library built it */
    const char *kind;
    const char *name;
    unsigned long long count;
    double min_s;
    double p50_s; /* sorted[count / 2] */
    double p90_s; /* sorted[min(count - 1, floor(0.9 count))] */
    double max_s, mean_s, std_s, total_s;
    double flops, bytes; /* metrics per event: the name's events' sum / count (0 without) */
} kprof_distribution;

/* One distribution per (kind, name), largest total first: *dists the first (owned by the result;
 * step with kprof_distribution_at), *n how many. OK (*dists NULL and *n 0 when there are none);
 * INVALID (a NULL argument); NOMEM; CORRUPT or IO when the result's trace cannot be read. On
 * failure *dists is NULL and *n 0 (where they are not NULL). */
KPROF_API kprof_status kprof_result_distributions(kprof_result *result,
                                                  const kprof_distribution **dists, size_t *n);

/* Distribution i of the array kprof_result_distributions gave (i < its n: not checked), in the
 * library's stride. NULL when dists is NULL. Thread-safe. */
KPROF_API const kprof_distribution *kprof_distribution_at(const kprof_distribution *dists,
                                                          size_t i);

/* What kprof_result_print writes: X(NAME, name). TREE, BY_NAME and BY_PATH are the tables of
 * `kprof report --tree`, `--by name` and `--by path`; DISTRIBUTIONS one line per name:
 * `name: N calls  min  p50  mean  p90  max  [GFLOP/s (p50)] [GB/s (p50)]`. */
#define KPROF_VIEW_LIST(X)                                                                         \
    X(TREE, "tree")                                                                                \
    X(BY_NAME, "by-name")                                                                          \
    X(BY_PATH, "by-path")                                                                          \
    X(DISTRIBUTIONS, "distributions")

typedef enum kprof_view {
#define KPROF_VIEW_ENUM_(NAME, name) KPROF_VIEW_##NAME,
    KPROF_VIEW_LIST(KPROF_VIEW_ENUM_)
#undef KPROF_VIEW_ENUM_
        KPROF_VIEW_COUNT_
} kprof_view;

/* Write a view of the result as text to out (a table for people; exports are for scripts).
 * OK; INVALID for a NULL argument or an unknown view; NOMEM; IO when writing failed. */
KPROF_API kprof_status kprof_result_print(kprof_result *result, kprof_view view, FILE *out);

/* Formats a result is written in: X(NAME, name, what). */
#define KPROF_FORMAT_LIST(X)                                                                       \
    X(TRACE, "kprof", "the .kprof trace (SQLite): kprof report, kprof export, sqlite3 read it")    \
    X(CHROME, "chrome", "Chrome trace event JSON (Perfetto UI, chrome://tracing)")                 \
    X(PERFETTO, "perfetto", "a native Perfetto trace (.pftrace)")                                  \
    X(HATCHET, "hatchet", "the call tree in Hatchet's literal format")                             \
    X(JSON, "json", "the call tree as JSON (what kprof report --tree --json prints)")              \
    X(CSV, "csv", "the call tree as CSV (what kprof report --tree --csv prints)")                  \
    X(HTML, "html", "one offline HTML page: verdicts, tables, call tree, histograms, timeline")

typedef enum kprof_format {
#define KPROF_FORMAT_ENUM_(NAME, name, what) KPROF_FORMAT_##NAME,
    KPROF_FORMAT_LIST(KPROF_FORMAT_ENUM_)
#undef KPROF_FORMAT_ENUM_
        KPROF_FORMAT_COUNT_
} kprof_format;

#define KPROF_WRITE_FORCE 1u /* kprof_result_write: replace an existing file */

/* Write the result to path in format, as `kprof export` writes it (the same code): to a
 * temporary file beside path, renamed over it only when whole; "-" for standard output. An
 * existing file is replaced only with KPROF_WRITE_FORCE. OK; INVALID for a NULL argument, an
 * unknown format, or a path kprof refuses (a folder, an existing file without the flag; the
 * message says which); IO when writing failed; NOMEM. Nothing half-written is left on failure. */
KPROF_API kprof_status kprof_result_write(kprof_result *result, kprof_format format,
                                          const char *path, unsigned flags);

/* Free a result and remove its trace and scratch folder. NULL is a no-op. */
KPROF_API void kprof_result_destroy(kprof_result *result);

/* ---- repeats (Metal.jl's @bprofile) -----------------------------------------------------------
 */

/* A workload: called again and again on the calling thread. */
typedef void (*kprof_workload_fn)(void *arg);

typedef struct kprof_repeat_options {
    unsigned size;                     /* sizeof(kprof_repeat_options) */
    unsigned warmup;                   /* untimed calls before the session (1 with
                                          KPROF_REPEAT_OPTIONS_INIT; 0: none) */
    unsigned long long max_iterations; /* stop after this many timed calls too; 0: no limit */
    const char *name;                  /* the scope each timed call is profiled as (static
                                          storage); NULL: "iteration" */
    const kprof_options *session;      /* the session's options; NULL: the defaults */
} kprof_repeat_options;

/* clang-format off */
#define KPROF_REPEAT_OPTIONS_INIT {sizeof(kprof_repeat_options), 1u, 0ull, NULL, NULL}
/* clang-format on */

/* Run fn(arg) `warmup` times untimed, then start a session and call it, each call a scope named
 * options->name, until budget_s seconds have passed since the first timed call began (checked
 * after each call: at least one call, however long) or max_iterations calls were made; stop and
 * return the session's result in *result. The scopes fn opens are recorded inside each
 * iteration's: kprof_result_distributions gives the iterations' distribution (count, min, p50,
 * p90, max, mean) and every scope name's inside, kprof_result_print(.., KPROF_VIEW_DISTRIBUTIONS,
 * ..) prints them.
 * options: NULL for KPROF_REPEAT_OPTIONS_INIT's values. Returns OK; INVALID for a NULL fn or
 * result, a budget that is not a positive number, malformed options, or a session already
 * running; as kprof_start and kprof_stop otherwise. */
KPROF_API kprof_status kprof_profile_repeat(kprof_workload_fn fn, void *arg, double budget_s,
                                            const kprof_repeat_options *options,
                                            kprof_result **result);

/* ---- CUDA: kernel hooks, the capture hand-off, kprof_benchmark -------------------------------
 *
 * These need a libkprof built with CUDA (cuda.h where it was built) and, at run time, the CUDA
 * driver and CUPTI; without them each returns KPROF_UNAVAILABLE and says why.
 */

/* A kernel launch as a kernel hook sees it. */
typedef struct kprof_launch {
    const char *kernel; /* its name as CUDA has it: mangled for a C++ kernel ("_Z4vaddPfS_S_i") */
    unsigned grid[3];   /* blocks per dimension */
    unsigned block[3];  /* threads per block */
} kprof_launch;

enum { KPROF_WORK_FLOPS = 1u << 0, KPROF_WORK_BYTES = 1u << 1 };

/* The work one launch did: set *flops and/or *bytes (finite, >= 0) and return which
 * (KPROF_WORK_FLOPS | KPROF_WORK_BYTES); 0 for none. */
typedef int (*kprof_work_fn)(void *ctx, const kprof_launch *launch, double *flops, double *bytes);

/* Give every launch of a kernel its work, without touching the call sites: while a session
 * records CUDA (KPROF_COLLECT_CUDA), each launch of `kernel` carries fn's flops and bytes as
 * metrics, which the results and `kprof report` turn into GFLOP/s and GB/s (device time).
 * `kernel` names it as CUDA does, or demangled, or demangled without its parameter list:
 * "vadd", "vadd(float*, float*, float*, int)" and "_Z4vaddPfS_S_i" all name the same kernel.
 * OpenCL kernels (a session's OpenCL collector, or `kprof trace` of the program) get their work
 * the same way, by their function name: grid is then work-groups per dimension and block the
 * work-group size, or block 0 and grid the work-items when the runtime chose the group size;
 * the hook runs on the enqueuing thread, at the enqueue (each hooked launch also queries its
 * kernel's name once).
 * fn NULL removes the hook. ctx is passed to fn as it is (the caller keeps it alive while the
 * hook is set). fn is called on kprof's collector thread, not the launching one, some time after
 * the launch (when CUPTI delivers the kernel's record, before kprof_stop returns): it must be
 * thread-safe, quick, and must not call CUDA or kprof. Up to 256 kernels have hooks at once.
 * Thread-safe. Returns OK; INVALID (no name; too many hooks); NOMEM. */
KPROF_API kprof_status kprof_kernel_hook(const char *kernel, kprof_work_fn fn, void *ctx);

/* Not for programs: how libkprof-inject.so's OpenCL layer (in a session, or under `kprof trace`)
 * finds the hooks. The count of kernels with a hook, and the work of one launch (0, or
 * KPROF_WORK_* of what it set). */
#ifndef KPROF_DISABLE
extern KPROF_API int kprof_kernel_hooks_;
KPROF_API int kprof_kernel_work_(const char *name, const unsigned grid[3], const unsigned block[3],
                                 double *flops, double *bytes);
#endif

/* Hand a region to an external profiler (Enigma's capture): kprof_capture_begin calls
 * cuProfilerStart (Nsight Systems' `--capture-range=cudaProfilerApi`, Nsight Compute's
 * `--profile-from-start off`) and opens an NVTX range named `name` (nsys `--capture-range=nvtx
 * --nvtx-capture=name`); kprof_capture_end closes both. Captures do not nest. Call it on a thread
 * with a current CUDA context (after the program's first CUDA call). An external profiler holds
 * CUPTI: kprof's own CUDA collection cannot run beside it, and kprof_start with
 * KPROF_COLLECT_CUDA says so (UNAVAILABLE, "another CUPTI subscriber ... kprof's own CUDA
 * collection is off") rather than record nothing. Thread-safe. Returns OK; INVALID (no name, a
 * capture already open / none open, no CUDA context); UNAVAILABLE (no CUDA). */
KPROF_API kprof_status kprof_capture_begin(const char *name);
KPROF_API kprof_status kprof_capture_end(void);

/* kprof_benchmark and kprof_benchmark_compare: see "benchmarking a callback" below. */

/* ---- comparing two sets of samples: kprof's comparison engine --------------------------------
 * The one kprof bench and kprof diff use (src/core/judge.h): is B faster than A, slower, the
 * same, or can the samples not say? UNSURE comes with its reasons, as bits and in words. */

typedef enum kprof_verdict {
    KPROF_VERDICT_SAME,   /* the ratio's interval lies inside [1 - threshold, 1 + threshold] */
    KPROF_VERDICT_FASTER, /* wholly below it */
    KPROF_VERDICT_SLOWER, /* wholly above it */
    KPROF_VERDICT_UNSURE  /* the samples cannot say: `reasons` says why */
} kprof_verdict;

/* Why a comparison is UNSURE (bits of kprof_comparison.reasons). */
#define KPROF_UNSURE_STRADDLES (1u << 0) /* the interval straddles an edge of the band */
#define KPROF_UNSURE_FEW       (1u << 1) /* fewer than 10 independent blocks of samples a side */
#define KPROF_UNSURE_DRIFT     (1u << 2) /* a side (paired: the ratio) drifted between halves */
#define KPROF_UNSURE_MODES     (1u << 3) /* two modes whose mix moves a median */
#define KPROF_UNSURE_BUSY      (1u << 4) /* the machine was busy and the noise past threshold */
#define KPROF_UNSURE_SMALL     (1u << 5) /* the effect is under min_effect */
#define KPROF_UNSURE_ONE_RUN   (1u << 6) /* across runs, one run a side, not clear by 3% more */
#define KPROF_UNSURE_RUNS      (1u << 7) /* the spread between runs covers the effect */
#define KPROF_UNSURE_CLOCK                                                                         \
    (1u << 8)                          /* kprof_benchmark_compare: the GPU clock's cycles do not   \
                                          confirm the time's verdict (NVML) */
#define KPROF_UNSURE_INVALID (1u << 9) /* a side has no positive median: nothing to compare */

/* How to compare. Sized (use KPROF_COMPARE_OPTIONS_INIT). */
typedef struct kprof_compare_options {
    unsigned size;     /* sizeof(kprof_compare_options) */
    double threshold;  /* the SAME band, a fraction (default 0.01: +-1%) */
    int paired;        /* a[i] and b[i] were taken back to back (default 0) */
    int across_runs;   /* A and B come from separate runs (default 0) */
    double min_effect; /* |median(B) - median(A)| under this is too small, in the samples'
                          unit (default 0: none) */
    size_t batch;      /* the samples came in batches of this many (default 1) */
    double busy_cpus;  /* CPUs other work took meanwhile (default -1: unknown) */
} kprof_compare_options;

#define KPROF_COMPARE_OPTIONS_INIT                                                                 \
    {                                                                                              \
        sizeof(kprof_compare_options), 0.01, 0, 0, 0.0, 1u, -1.0                                   \
    }

/* What kprof_compare found. Sized (use KPROF_COMPARISON_INIT; see "Structs that grow"). */
typedef struct kprof_comparison {
    unsigned size; /* sizeof(kprof_comparison), set by the caller */
    kprof_verdict verdict;
    double ratio, lo, hi; /* median(B) / median(A) and its 95% interval */
    unsigned reasons;     /* KPROF_UNSURE_* bits; 0 unless UNSURE */
    char reason[400];     /* the reasons (or a verdict's notes) in words, "" when none */
} kprof_comparison;

/* clang-format off */
#define KPROF_COMPARISON_INIT {sizeof(kprof_comparison), KPROF_VERDICT_SAME, 0, 0, 0, 0u, ""}
/* clang-format on */

/* Compare samples b[0..nb) with a[0..na) (any one unit, each side in the order taken; options
 * NULL: the defaults). Deterministic: the same samples give the same answer. Returns OK (*out's
 * fields inside out->size filled: a side with no positive median is UNSURE, saying so); INVALID
 * (no a, b or out, out->size 0, an empty side, paired with na != nb, a NaN, a bad option); NOMEM.
 * Needs no session. */
KPROF_API kprof_status kprof_compare(const double *a, size_t na, const double *b, size_t nb,
                                     const kprof_compare_options *options, kprof_comparison *out);

/* ---- benchmarking a callback: kprof bench's rules for the device work of any call ------------
 *
 * kprof_benchmark times the device work a callback launches, run by run, and stops by kprof
 * bench's rule (src/lab/bench.h: the noise of the median's block-aware interval, settled noise,
 * the budget, the run cap); kprof_benchmark_compare does so for two callbacks, interleaved, and
 * judges them with the comparison engine above. Whose work is timed is the options' collector:
 *
 * - KPROF_COLLECT_CUDA (the default): the CUDA work fn launches on the calling thread's current
 *   context (other threads' work meanwhile counts too), from CUPTI's device timestamps; each run
 *   is followed by a synchronize of the context and a reading of CUPTI's clock, and CUPTI's
 *   records are flushed once for a few milliseconds of runs, each record going to the run whose
 *   readings hold its start. Uses the session's CUDA collector when one records, else one of its
 *   own for the call. Needs a libkprof built with CUDA and, at run time, the CUDA driver and
 *   CUPTI, with no other CUPTI client (kprof trace, Nsight Systems, Nsight Compute). Cold: before
 *   every timed run, kprof bench's L2 flush (a kernel of kprof's own that reads a buffer twice
 *   the L2's size, leaving clean lines that the run does not pay to write back) and a
 *   synchronize (its records are not the run's).
 * - KPROF_COLLECT_OPENCL: the OpenCL work fn enqueues (any queue of the process, e.g. pyopencl's
 *   kernels), from the command queues' profiling timestamps, through libkprof-inject.so's OpenCL
 *   layer: each run ends with a clFinish of every queue that had work in it. The layer sees a
 *   program's OpenCL only when the ICD loader took it in at the program's first OpenCL call: a
 *   session (kprof_start with KPROF_COLLECT_OPENCL) started before that call, or KPROF=1 with
 *   the opencl collector (KPROF_COLLECT=opencl). Otherwise it is UNAVAILABLE, saying so. Cold:
 *   before every timed run, a write of a buffer twice the device's last-level cache on the queue
 *   the run used last (not timed).
 *
 * A cold benchmark's first flush needs the device the callback's work runs on: when no run has
 * shown it yet (warmup 0), one untimed call of the callback comes first.
 *
 * The throttle check (as kprof bench's): where NVML can read the GPU's SM clock (CUDA), a round
 * of runs taken while the clock was below its top is discarded and retaken (`discarded`). Not
 * for concurrent use with another kprof_benchmark or kprof_benchmark_compare.
 */

typedef enum kprof_cache {
    KPROF_CACHE_HOT = 0, /* runs back to back: the data stays in the caches */
    KPROF_CACHE_COLD = 1 /* the device's L2 (or last-level cache) flushed before every timed run */
} kprof_cache;

/* How kprof_benchmark runs a callback. Sized (use KPROF_BENCHMARK_OPTIONS_INIT). */
typedef struct kprof_benchmark_options {
    unsigned size;       /* sizeof(kprof_benchmark_options) */
    unsigned warmup;     /* untimed calls first (default 3) */
    unsigned min_runs;   /* timed calls at least (default 10; 0 counts as 1) */
    unsigned max_runs;   /* and at most (default 1000) */
    double budget_s;     /* stop after min_runs once this much wall time went (default 1.0) */
    kprof_cache cache;   /* COLD: the device's L2 flushed before every timed run (flush not timed);
                            default HOT */
    double max_noise;    /* kprof bench's stopping rule: after min_runs, stop once the median's
                            block-aware 95% interval half-width <= max_noise * median (default
                            0.005), or once the noise settled; 0: no noise rule (runs to budget_s
                            or max_runs) */
    unsigned collector;  /* KPROF_COLLECT_CUDA (default when 0) or KPROF_COLLECT_OPENCL: whose
                            device work is timed */
    double flops, bytes; /* per call, for GFLOP/s and GB/s (0: not given) */
    double *samples;     /* optional: receives the kept runs' span (ns), in order */
    size_t samples_cap;  /* its capacity */
} kprof_benchmark_options;

/* clang-format off */
#define KPROF_BENCHMARK_OPTIONS_INIT                                                               \
    {sizeof(kprof_benchmark_options), 3u, 10u, 1000u, 1.0, KPROF_CACHE_HOT, 0.005, 0u, 0.0, 0.0,   \
     NULL, 0u}
/* clang-format on */

/* The device time of a callback's work, run by run (Enigma's benchmark_kernel). Sized (use
 * KPROF_BENCHMARK_RESULT_INIT; see "Structs that grow"). */
typedef struct kprof_benchmark_result {
    unsigned size;    /* sizeof(kprof_benchmark_result), set by the caller */
    unsigned runs;    /* timed calls kept */
    unsigned kernels; /* device operations (kernels, copies, fills) in the last run */
    double min_ns, p50_ns, p90_ns, max_ns, mean_ns; /* per run: from its first device operation's
                                                       start to its last one's end (device
                                                       timestamps); p90 as kprof_distribution's */
    double busy_p50_ns;  /* per run, median: the operations' own durations summed (no gaps) */
    double wall_p50_ns;  /* per run, median: host time of the call and the wait after it */
    double lo_ns, hi_ns; /* p50_ns's 95% interval (block-aware, core/judge.h, as kprof bench) */
    double noise;        /* its relative half-width */
    unsigned discarded;  /* timed runs dropped: taken while the GPU clock was throttled (NVML, as
                            kprof bench; 0 where no clock can be read) */
    unsigned samples_n;  /* entries written to options->samples */
    char stop[16];       /* which rule stopped it: "noise", "settled", "budget", "runs",
                            "decided" (compare) */
    double flush_ns;     /* cold: median cost of one flush (0 hot) */
    double gbps, gflops; /* bytes / p50, flops / p50 (0 when not given) */
} kprof_benchmark_result;

/* clang-format off */
#define KPROF_BENCHMARK_RESULT_INIT                                                                \
    {sizeof(kprof_benchmark_result), 0u, 0u, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0u, 0u, "", 0, 0, 0}
/* clang-format on */

/* Time fn(arg): `warmup` untimed calls, then timed calls (each one run: fn, the wait for its
 * device work, its operations' device timestamps) until the stopping rule says enough — after
 * min_runs, the noise (max_noise, or settled), else budget_s of wall time, else max_runs — with
 * the flush before each timed run when cold. *out's fields inside out->size are filled on
 * success; options->samples, when given, gets the kept runs' spans (at most samples_cap).
 * options NULL: KPROF_BENCHMARK_OPTIONS_INIT's values. Returns OK; INVALID (no fn or out,
 * out->size 0, bad options: a size, a budget that is not 0 to 86400 s, max_noise not 0 to 1, an
 * unknown collector or cache, negative or non-finite flops/bytes, samples_cap without samples;
 * CUDA: no CUDA context; a run with no device work); UNAVAILABLE (CUDA: no driver or CUPTI,
 * another profiler holds CUPTI; OpenCL: libkprof-inject.so's layer is not in the program's
 * OpenCL chain, see above); FAULT and friends when the work failed (kprof_last_error says which
 * run). */
KPROF_API kprof_status kprof_benchmark(void (*fn)(void *arg), void *arg,
                                       const kprof_benchmark_options *options,
                                       kprof_benchmark_result *out);

/* fn_a and fn_b interleaved in batches (A's batch, B's batch, ...), pairs judged by the one
 * comparison engine (kprof_compare's, paired, its UNSURE and reasons included), stopping as
 * kprof bench does when comparing (DECIDED, noise, budget). a and b receive each side's result
 * (may be NULL), out the verdict: ratio = B's median over A's (B slower: above 1). options as
 * kprof_benchmark's, for both sides (samples: each side's kept spans, up to samples_cap / 2 a
 * side, A's at samples[0 .. a->samples_n), B's right after them); compare
 * NULL: KPROF_COMPARE_OPTIONS_INIT's threshold and min_effect (paired and batch are set here).
 * Returns OK; INVALID (no fn_a, fn_b or out, a size 0, bad options); as kprof_benchmark
 * otherwise. */
KPROF_API kprof_status kprof_benchmark_compare(void (*fn_a)(void *), void *arg_a,
                                               void (*fn_b)(void *), void *arg_b,
                                               const kprof_benchmark_options *options,
                                               const kprof_compare_options *compare,
                                               kprof_benchmark_result *a, kprof_benchmark_result *b,
                                               kprof_comparison *out);

/* ---- KPROF_DISABLE: every function a no-op ---------------------------------------------------
 * What each returns when kprof is compiled out: no session ever starts, so there is never a
 * result (every result function sees NULL and answers as it does for NULL); the status helpers
 * and kprof_version answer as the library would. kprof_last_error says "kprof is compiled out
 * (KPROF_DISABLE)". Arguments are evaluated, as a function's would be, and dropped. */
#ifdef KPROF_DISABLE
#define KPROF_OFF_TEXT_ "kprof is compiled out (KPROF_DISABLE)"
KPROF_API const char *kprof_strerror(kprof_status status)
{
    switch (status) {
#define KPROF_OFF_TEXT_CASE_(name, code, text)                                                     \
    case KPROF_##name:                                                                             \
        return text;
        KPROF_STATUS_LIST(KPROF_OFF_TEXT_CASE_)
#undef KPROF_OFF_TEXT_CASE_
    default:
        return "unknown status";
    }
}
KPROF_API const char *kprof_status_name(kprof_status status)
{
    switch (status) {
#define KPROF_OFF_NAME_CASE_(name, code, text)                                                     \
    case KPROF_##name:                                                                             \
        return #name;
        KPROF_STATUS_LIST(KPROF_OFF_NAME_CASE_)
#undef KPROF_OFF_NAME_CASE_
    default:
        return "UNKNOWN";
    }
}
KPROF_API int kprof_status_exit_code(kprof_status status)
{
    switch (status) {
#define KPROF_OFF_CODE_CASE_(name, code, text)                                                     \
    case KPROF_##name:                                                                             \
        return code;
        KPROF_STATUS_LIST(KPROF_OFF_CODE_CASE_)
#undef KPROF_OFF_CODE_CASE_
    default:
        return 1;
    }
}
KPROF_API const char *kprof_version(void)
{
    return KPROF_VERSION_STRING;
}
KPROF_API const char *kprof_last_error(void)
{
    return KPROF_OFF_TEXT_;
}
/* UNAVAILABLE: kprof is not in this program. */
KPROF_API kprof_status kprof_start(const kprof_options *options)
{
    (void)options;
    return KPROF_UNAVAILABLE;
}
/* INVALID: no session is running; *result NULL. */
KPROF_API kprof_status kprof_stop(kprof_result **result)
{
    if (result) *result = NULL;
    return KPROF_INVALID;
}
KPROF_API int kprof_recording(void)
{
    return 0;
}
/* text itself (no copy is kept: nothing reads it). */
KPROF_API const char *kprof_intern(const char *text)
{
    return text;
}
KPROF_API kprof_status kprof_result_summary(const kprof_result *result, kprof_summary *out)
{
    (void)result, (void)out;
    return KPROF_INVALID;
}
KPROF_API kprof_status kprof_result_key_averages(kprof_result *result, kprof_group by,
                                                 const kprof_row **rows, size_t *n)
{
    (void)result, (void)by;
    if (rows) *rows = NULL;
    if (n) *n = 0;
    return KPROF_INVALID;
}
KPROF_API const kprof_row *kprof_row_at(const kprof_row *rows, size_t i)
{
    return rows ? rows + i : NULL;
}
KPROF_API kprof_status kprof_result_tree(kprof_result *result, const kprof_node **nodes, size_t *n)
{
    (void)result;
    if (nodes) *nodes = NULL;
    if (n) *n = 0;
    return KPROF_INVALID;
}
KPROF_API const kprof_node *kprof_node_at(const kprof_node *nodes, size_t i)
{
    return nodes ? nodes + i : NULL;
}
KPROF_API kprof_status kprof_result_events(kprof_result *result, kprof_event_fn fn, void *ctx)
{
    (void)result, (void)fn, (void)ctx;
    return KPROF_INVALID;
}
KPROF_API kprof_status kprof_result_distributions(kprof_result *result,
                                                  const kprof_distribution **dists, size_t *n)
{
    (void)result;
    if (dists) *dists = NULL;
    if (n) *n = 0;
    return KPROF_INVALID;
}
KPROF_API const kprof_distribution *kprof_distribution_at(const kprof_distribution *dists, size_t i)
{
    return dists ? dists + i : NULL;
}
KPROF_API kprof_status kprof_result_print(kprof_result *result, kprof_view view, FILE *out)
{
    (void)result, (void)view, (void)out;
    return KPROF_INVALID;
}
KPROF_API kprof_status kprof_result_write(kprof_result *result, kprof_format format,
                                          const char *path, unsigned flags)
{
    (void)result, (void)format, (void)path, (void)flags;
    return KPROF_INVALID;
}
KPROF_API void kprof_result_destroy(kprof_result *result)
{
    (void)result;
}
/* UNAVAILABLE, fn never called, *result NULL. */
KPROF_API kprof_status kprof_profile_repeat(kprof_workload_fn fn, void *arg, double budget_s,
                                            const kprof_repeat_options *options,
                                            kprof_result **result)
{
    (void)fn, (void)arg, (void)budget_s, (void)options;
    if (result) *result = NULL;
    return KPROF_UNAVAILABLE;
}
KPROF_API kprof_status kprof_kernel_hook(const char *kernel, kprof_work_fn fn, void *ctx)
{
    (void)kernel, (void)fn, (void)ctx;
    return KPROF_UNAVAILABLE;
}
KPROF_API kprof_status kprof_capture_begin(const char *name)
{
    (void)name;
    return KPROF_UNAVAILABLE;
}
KPROF_API kprof_status kprof_capture_end(void)
{
    return KPROF_UNAVAILABLE;
}
/* UNAVAILABLE, fn never called, *out untouched. */
KPROF_API kprof_status kprof_benchmark(void (*fn)(void *arg), void *arg,
                                       const kprof_benchmark_options *options,
                                       kprof_benchmark_result *out)
{
    (void)fn, (void)arg, (void)options, (void)out;
    return KPROF_UNAVAILABLE;
}
/* UNAVAILABLE, fn_a and fn_b never called, *a, *b and *out untouched. */
KPROF_API kprof_status kprof_benchmark_compare(void (*fn_a)(void *), void *arg_a,
                                               void (*fn_b)(void *), void *arg_b,
                                               const kprof_benchmark_options *options,
                                               const kprof_compare_options *compare,
                                               kprof_benchmark_result *a, kprof_benchmark_result *b,
                                               kprof_comparison *out)
{
    (void)fn_a, (void)arg_a, (void)fn_b, (void)arg_b, (void)options, (void)compare, (void)a,
        (void)b, (void)out;
    return KPROF_UNAVAILABLE;
}
/* UNAVAILABLE: the comparison engine is libkprof's. */
KPROF_API kprof_status kprof_compare(const double *a, size_t na, const double *b, size_t nb,
                                     const kprof_compare_options *options, kprof_comparison *out)
{
    (void)a, (void)na, (void)b, (void)nb, (void)options, (void)out;
    return KPROF_UNAVAILABLE;
}
#undef KPROF_OFF_TEXT_
#endif /* KPROF_DISABLE */

#ifdef __cplusplus
}

/* C++: kprof::scope, the RAII scope KPROF_SCOPE declares in C++ (header-only: libkprof exports
 * C functions alone). It is a kprof_scope, so &scope goes to kprof_scope_metric. */
namespace kprof
{
class scope : public kprof_scope
{
  public:
    explicit scope(kprof_scope_site *site) noexcept : kprof_scope(kprof_scope_enter(site)) {}
    explicit scope(const char *name) noexcept : kprof_scope(kprof_scope_begin(name)) {}
    ~scope()
    {
        kprof_scope_end(this);
    }
    void metric(const char *key, double value) const noexcept
    {
        kprof_scope_metric(this, key, value);
    }
    void work(double flops, double bytes) const noexcept
    {
        kprof_scope_work(this, flops, bytes);
    }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
};
} // namespace kprof
#endif
#endif /* KPROF_H */
