/*
 * capture.h — a captured kernel launch (issue 26): the kernel folder `kprof trace --capture`
 * writes from inside a running program and the lab replays (`kprof run/bench/sweep NAME@N`).
 * The injected collectors (src/inject: OpenCL layer, CUDA/CUPTI) write it; the lab reads it.
 * docs/formats/capture.md documents the files for users.
 *
 * A capture folder <kernels>/<NAME>@<N>/ (kernels: $KPROF_HOME/kernels or --capture-dir) holds:
 *   capture.json        the manifest: what was launched, how, with what (below); written last
 *   kernel.cl           OpenCL: the program's source (clGetProgramInfo CL_PROGRAM_SOURCE), or
 *   program.bin         OpenCL: the program's binary for the device, when it had no source
 *   kernel.cubin        CUDA: the module image the function came from, as CUPTI's module-load
 *   kernel.fatbin         callback handed it over (one of the three, by its kind)
 *   kernel.ptx
 *   alloc-<J>.before    allocation J's bytes just before the launch
 *   alloc-<J>.after     ... and just after it (unless --capture-no-after)
 *   not-captured.txt    one line per thing not captured and why ("" file when nothing is missing)
 * The folder is made under a temporary name (.NAME@N.tmp-PID-XXXXXX) and renamed into place only
 * once whole, so a failed capture (full disk, unwritable folder) leaves nothing behind.
 *
 * The manifest, "kprof_capture": 1:
 *   api "cuda"|"opencl", kernel (the name `kprof report` shows), symbol (mangled name / OpenCL
 *   function name), launch (1-based: the N-th launch of that kernel), selector ("first", "N",
 *   "slowest"), device, command, pid, captured_at (ISO-8601 UTC), held_ns (how long the capture
 *   held the program), code {kind: cubin|fatbin|ptx|opencl-source|opencl-binary, file,
 *   build_options}, geometry {dims, grid[3] in threads (kprof's --grid), tg[3] (--tg), offset[3]
 *   (OpenCL global offset), dynamic_smem}, attributes {registers, static_smem, local_bytes,
 *   max_threads, ...: as known}, args [{index, size, kind value|mem|local, hex (value bytes),
 *   alloc (mem: the allocation J)}], allocs [{id, bytes, address (original, for messages), arg
 *   (first argument pointing into it), name, before, after (file names, null: not copied)}],
 *   pointers [{arg, at (byte offset inside the argument), alloc, offset (from the allocation's
 *   start)}], not_captured [text...], slowest {window_s, launches, slowest_ns, slowest_launch}
 *   (selector slowest only), after (1: after-states were copied).
 */
#ifndef KP_COLLECT_CAPTURE_H
#define KP_COLLECT_CAPTURE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define KP_CAPTURE_MAX_ARGS     256
#define KP_CAPTURE_MAX_ALLOCS   256
#define KP_CAPTURE_MAX_POINTERS 1024
#define KP_CAPTURE_MAX_MISSING  64
#define KP_CAPTURE_MAX_ARG_SIZE 32768 /* CUDA's largest parameter space (32 KiB on 12.1+) */

/* Default --capture-max-bytes (per allocation) and --capture-window. */
#define KP_CAPTURE_DEFAULT_MAX_BYTES (4ull << 30)
#define KP_CAPTURE_DEFAULT_WINDOW_S  10.0

/* ---- the pattern: PATTERN[@N|@slowest] ----------------------------------------------------- */

typedef enum kp_capture_select {
    KP_CAPTURE_FIRST = 0,   /* no @: the first launch */
    KP_CAPTURE_NTH = 1,     /* @N */
    KP_CAPTURE_SLOWEST = 2, /* @slowest */
} kp_capture_select;

typedef struct kp_capture_pattern {
    char glob[512];     /* fnmatch(3) glob, no flags */
    int select;         /* kp_capture_select */
    uint64_t nth;       /* @N (1-based); 1 for FIRST */
    double window_s;    /* @slowest's window */
    uint64_t max_bytes; /* per allocation */
    int after;          /* copy after-states (default 1) */
    /* The glob's longest run of identifier characters that is no C++ keyword or builtin type
     * ("softmax" of "*native::softmax*"), "" when it has none of 3 or more: every name the glob
     * matches holds it, and so does its mangled symbol (identifiers are mangled verbatim), so a
     * symbol without it needs no demangling (kp_capture_may_match). */
    char literal[128];
} kp_capture_pattern;

/* Parse "PATTERN[@N|@slowest]". INVALID with a sentence for an empty glob, "@" with nothing,
 * "@0", "@x", "@-1", a glob longer than the field, a glob with a control character. window,
 * max_bytes and after get their defaults. */
kprof_status kp_capture_pattern_parse(const char *text, kp_capture_pattern *out, kp_error *err);

/* The pattern from the environment `kprof trace --capture` sets (KPROF_CAPTURE and its
 * companions, base/env.h): 1 and *out filled when a capture is asked for, 0 when not, -1 (err
 * says why) when what is set is bad (the collector then writes that line on stderr and captures
 * nothing). */
int kp_capture_pattern_env(kp_capture_pattern *out, kp_error *err);

/* Whether a kernel's name (demangled, as the report shows it), its base name (the folder's NAME:
 * "softmax" for "void at::native::softmax<float>(float*)") or its symbol (mangled) matches the
 * glob. Either may be NULL. */
int kp_capture_match(const kp_capture_pattern *p, const char *name, const char *symbol);

/* Whether a mangled symbol may match at all: 0 when it lacks the pattern's literal (then neither
 * it nor its demangled name matches), 1 otherwise. A strstr: what the collectors ask of every
 * function of a loaded module before demangling it. */
int kp_capture_may_match(const kp_capture_pattern *p, const char *symbol);

/* The folder's NAME for a kernel: the name's base (a demangled C++ name loses its return type,
 * namespaces, template arguments and parameters: "void at::native::softmax<float>(float*)" ->
 * "softmax"), with any byte outside [A-Za-z0-9_.-] made '_', at most 80 bytes, never starting
 * with '.' or '-', then "@N". */
void kp_capture_folder_name(const char *kernel, uint64_t launch, char *buf, size_t n);

/* ---- what a capture holds ------------------------------------------------------------------ */

typedef enum kp_capture_arg_kind {
    KP_CAPTURE_VALUE = 0, /* bytes passed by value (pointers inside: kp_capture_ptr) */
    KP_CAPTURE_MEM = 1,   /* OpenCL: a cl_mem (the whole allocation alloc) */
    KP_CAPTURE_LOCAL = 2, /* OpenCL: __local memory of size bytes */
} kp_capture_arg_kind;

typedef struct kp_capture_arg {
    int kind;             /* kp_capture_arg_kind */
    uint32_t size;        /* bytes */
    unsigned char *bytes; /* VALUE: size bytes (owned); NULL otherwise */
    int alloc;            /* MEM: the allocation; -1 otherwise */
} kp_capture_arg;

typedef struct kp_capture_alloc {
    uint64_t bytes;
    uint64_t address; /* where it was in the program (CUDA: device address; OpenCL: 0) */
    int arg;          /* first argument that points into it */
    char name[64];    /* the parameter's name when known, else "arg<i>" */
    char before[32];  /* file names in the folder; "" when not copied */
    char after[32];
} kp_capture_alloc;

/* A pointer passed by value: argument arg's bytes at offset `at` hold an 8-byte device address
 * of allocation alloc plus offset. The replay writes the new address there. */
typedef struct kp_capture_ptr {
    uint32_t arg, at;
    uint32_t alloc;
    uint64_t offset;
} kp_capture_ptr;

typedef struct kp_capture {
    char api[8];       /* "cuda", "opencl" */
    char kernel[1024]; /* name as reported (demangled) */
    char symbol[1024]; /* mangled / function name: what the replay looks up */
    uint64_t launch;   /* 1-based */
    int select;        /* kp_capture_select that chose it */
    char device[256];
    char command[2048];
    int64_t pid;
    char captured_at[32]; /* ISO-8601 UTC; filled by kp_capture_out_commit when "" */
    int64_t held_ns;      /* the program waited this long for the capture */
    /* code */
    char code_kind[16]; /* cubin fatbin ptx opencl-source opencl-binary */
    char code_file[32]; /* in the folder */
    char build_options[2048];
    /* geometry, in kprof's vocabulary: grid = total threads per dimension, tg = per group */
    int dims;
    uint64_t grid[3], tg[3], offset[3];
    uint64_t dynamic_smem;
    /* attributes: -1 where unknown */
    int64_t registers, static_smem, local_bytes, max_threads, const_bytes;
    int after; /* after-states copied */
    int nargs;
    kp_capture_arg args[KP_CAPTURE_MAX_ARGS];
    int nallocs;
    kp_capture_alloc allocs[KP_CAPTURE_MAX_ALLOCS];
    int nptrs;
    kp_capture_ptr ptrs[KP_CAPTURE_MAX_POINTERS];
    int nmissing;
    char missing[KP_CAPTURE_MAX_MISSING][256]; /* what was not captured and why */
    int missing_more; /* lines past the list: its last line says how many */
    /* @slowest */
    double window_s;
    uint64_t window_launches, slowest_launch;
    int64_t slowest_ns;
} kp_capture;

/* Initialise (zeroes; attributes -1; after 1). */
void kp_capture_init(kp_capture *c);
/* Free what the arguments own; c itself is the caller's. NULL is a no-op. */
void kp_capture_release(kp_capture *c);

/* Add a missing-thing line (printf-style). Kept in order; past the limit the last line says how
 * many more. */
void kp_capture_missing(kp_capture *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Argument helpers for the collectors: a value argument with its bytes copied (NOMEM), a mem
 * argument, a local argument. Return the argument's index, -1 when full (err says so). */
int kp_capture_add_value(kp_capture *c, const void *bytes, uint32_t size, kp_error *err);
int kp_capture_add_mem(kp_capture *c, int alloc, kp_error *err);
int kp_capture_add_local(kp_capture *c, uint32_t size, kp_error *err);
/* The allocation holding [address, address + bytes): the existing one with that base address or
 * a new one (its files named alloc-J.before/.after). -1 when full. */
int kp_capture_add_alloc(kp_capture *c, uint64_t address, uint64_t bytes, int arg, const char *name,
                         kp_error *err);
int kp_capture_add_ptr(kp_capture *c, uint32_t arg, uint32_t at, uint32_t alloc, uint64_t offset,
                       kp_error *err);

/* ---- writing a capture folder ------------------------------------------------------------- */

typedef struct kp_capture_out kp_capture_out;

/* Start a capture folder in kernels_dir (made with its parents when missing): a temporary folder
 * .<folder>.tmp-<pid>-XXXXXX (mkdtemp) beside where <folder> will be. IO naming the folder and
 * errno's words when it cannot be made (unwritable, full disk). */
kprof_status kp_capture_out_open(const char *kernels_dir, const char *folder, kp_capture_out **out,
                                 kp_error *err);
/* Write one file of the folder (the code, an allocation's bytes). IO on a short write. */
kprof_status kp_capture_out_blob(kp_capture_out *o, const char *file, const void *data, size_t len,
                                 kp_error *err);
/* Write not-captured.txt and capture.json last, then rename the folder into place; an existing
 * folder of that name is replaced only when `replace` (else INVALID saying to use --force, and
 * nothing changes).
 * path receives the folder's final path. The writer is freed either way; on failure the
 * temporary folder is removed. */
kprof_status kp_capture_out_commit(kp_capture_out *o, const kp_capture *c, int replace, char *path,
                                   size_t n, kp_error *err);
/* Remove the temporary folder and free the writer. NULL is a no-op. */
void kp_capture_out_abort(kp_capture_out *o);

/* What became of a capture, said once by the collector that made it (or failed to): one stderr line
 * ("kprof: captured softmax@3 (launch 3 of softmax) in .kprof/kernels/softmax@3; the program was
 * held 12.3 ms; replay it with `kprof bench softmax@3`", or "kprof: error: capture of softmax@3
 * failed: <err>"), one stderr line per not-captured item ("kprof: capture softmax@3: not
 * captured: ..."), and one line appended to captures.tsv in the trace's record folder
 * ($KPROF_TRACE_DIR, when set), which `kprof trace` puts into the trace's meta (key `captures`)
 * for `kprof report`. path: the folder written (NULL on failure); failure: NULL on success. */
void kp_capture_announce(const kp_capture *c, const char *path, const kp_error *failure);

/* The file in the record folder, and its line: folder TAB kernel TAB launch TAB held_ns TAB
 * status ("ok" or "failed: <message>") TAB missing-count, one capture per line. */
#define KP_CAPTURE_LOG_FILE "captures.tsv"

/* ---- reading a capture folder ------------------------------------------------------------- */

/* 1 when dir holds a capture.json. */
int kp_capture_is_folder(const char *dir);

/* Read dir's capture.json into *c (kp_capture_init'ed first; kp_capture_release it). CORRUPT
 * naming the file and the field for a manifest that is not kprof's, a field out of range, an
 * argument whose hex is not its size, a pointer outside its argument or to an allocation that
 * is not there, a file named that is missing or of the wrong size (the replay would be wrong). */
kprof_status kp_capture_read(const char *dir, kp_capture *c, kp_error *err);

/* Read allocation j's before (after = 0) or after bytes from the folder into a malloc'ed buffer of
 * allocs[j].bytes. NOT_FOUND when that state was not copied. */
kprof_status kp_capture_read_state(const char *dir, const kp_capture *c, int j, int after,
                                   void **out, kp_error *err);

/* The replay's output check: how the state after a replayed launch compares with the captured
 * after-state, per allocation and in all. */
typedef struct kp_capture_check {
    int have;             /* 1: compared (after-states were captured) */
    uint64_t bytes;       /* compared in all */
    uint64_t differing;   /* bytes that differ in all */
    int worst;            /* allocation with the most differing bytes, -1: none */
    uint64_t worst_bytes; /* its differing bytes */
} kp_capture_check;

/* Count the bytes of got that differ from want (n bytes each). */
uint64_t kp_capture_diff_bytes(const void *got, const void *want, uint64_t n);

/* The check's sentence, sizes as kp_format_bytes writes them: "replay reproduces the program's
 * output: 12 MiB identical", "replay differs from the program's output in 1204 bytes of 'out'
 * (1204 in all, of 12 MiB): atomics or non-determinism?", or "no after-state was captured: the
 * replay's output is not checked". */
void kp_capture_check_text(const kp_capture *c, const kp_capture_check *k, char *buf, size_t n);

#endif
