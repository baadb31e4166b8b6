/*
 * cuda_capture.c — `kprof trace --capture` for CUDA programs (cuda_capture.h): CUPTI's callback
 * API, subscribed only when KPROF_CAPTURE asks, delivers
 *   - every module load (CUPTI_CBID_RESOURCE_MODULE_LOADED, lazily loaded modules included, as
 *     they load): the image is copied when it can hold a kernel the pattern names (a cubin whose
 *     symbol table has a matching function; fatbin and PTX images are kept whole), and dropped
 *     when the module unloads;
 *   - every cuLaunchKernel(_ptsz), cuLaunchKernelEx(_ptsz) and cuLaunchCooperativeKernel(_ptsz),
 *     at API enter and exit.
 * A launch's function is looked up once in a small open-addressing table (CUfunction -> the
 * matching symbol or "no"): a launch that does not match costs one probe under a mutex, and
 * once the capture is written every launch returns at a flag's test.
 *
 * At the chosen launch, in the launching thread, at enter: the context is synchronized, the
 * parameters are read (cuFuncGetParamInfo's layout; kernelParams or the `extra` buffer), every
 * 8-byte word of every parameter is asked whether it points into device memory
 * (cuMemGetAddressRange, then cuPointerGetAttribute for managed and host memory), each such
 * allocation is copied (its before-state); the launch goes; at exit the context is synchronized
 * again and the after-states are copied; then the folder is committed and announced
 * (collect/capture.h). @slowest times each matching launch of the window (but a kernel's first,
 * which pays its module's lazy load) with an event pair on its stream, and captures the next launch
 * of the slowest one's symbol with its geometry.
 *
 * The capture's own driver calls (synchronizations, copies, attribute queries) go through
 * libcuda, so CUPTI's activity records show them among the program's driver API calls; they lie
 * inside the time the capture says it held the program. A thread-local flag keeps any launch
 * callback they might cause from being taken for the program's.
 */
#define _GNU_SOURCE
#include "inject/cuda_capture.h"
#include "base/env.h"
#include "base/util.h"
#include "collect/capture.h"
#include "core/demangle.h"
#include "runtime/cupti_api.h"
#include "runtime/dynlib.h"

#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KP_CAP_STR_(x)  #x
#define KP_CAP_XSTR_(x) KP_CAP_STR_(x)

/* ---- the driver and CUPTI functions the capture calls, found at run time ---- */

/* Expanded before being stringified, so cuda.h's versioned names (cuMemcpyDtoH -> _v2) are the
 * symbols looked up, as runtime/cuda_api.h does. */
#define KP_CAP_DRIVER(X)                                                                           \
    X(cuCtxSynchronize)                                                                            \
    X(cuCtxGetDevice)                                                                              \
    X(cuDeviceGetName)                                                                             \
    X(cuFuncGetName)                                                                               \
    X(cuFuncGetParamInfo)                                                                          \
    X(cuKernelGetParamInfo)                                                                        \
    X(cuFuncGetAttribute)                                                                          \
    X(cuKernelGetAttribute)                                                                        \
    X(cuMemGetAddressRange)                                                                        \
    X(cuPointerGetAttribute)                                                                       \
    X(cuMemcpyDtoH)                                                                                \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuEventRecord)                                                                               \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime)                                                                          \
    X(cuTexObjectGetResourceDesc)                                                                  \
    X(cuSurfObjectGetResourceDesc)                                                                 \
    X(cuGetErrorName)

#define KP_CAP_CUPTI(X)                                                                            \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiEnableCallback)

#define KP_CAP_SLOT_(fn) __typeof__(fn) *fn;
#define KP_CAP_NAME_(fn) KP_CAP_XSTR_(fn),
static struct {
    KP_CAP_DRIVER(KP_CAP_SLOT_)
} kp_cd;
static struct {
    KP_CAP_CUPTI(KP_CAP_SLOT_)
} kp_cc;
static const char *const kp_cd_names[] = {KP_CAP_DRIVER(KP_CAP_NAME_)};
static const char *const kp_cc_names[] = {KP_CAP_CUPTI(KP_CAP_NAME_)};
#undef KP_CAP_SLOT_
#undef KP_CAP_NAME_

static const char *const kp_cd_libs[] = {"libcuda.so.1", "libcuda.so", NULL};

static kp_dynlib_table kp_cd_table = {
    .libname = "libcuda",
    .libs = kp_cd_libs,
    .env = KP_ENV_CUDA_LIBRARY,
    .symbols = kp_cd_names,
    .slots = (void **)&kp_cd,
    .count = sizeof kp_cd_names / sizeof kp_cd_names[0],
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static kp_dynlib_table kp_cc_table = {
    .libname = "libcupti",
    .libs = kp_cupti_libs,
    .env = KP_ENV_CUPTI_LIBRARY,
    .symbols = kp_cc_names,
    .slots = (void **)&kp_cc,
    .count = sizeof kp_cc_names / sizeof kp_cc_names[0],
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- state ---- */

#define KP_CAP_MODULE_BYTES (2ull << 30) /* module images kept at most, in all */

typedef struct kp_cap_module {
    uint32_t id;   /* CUPTI's moduleId */
    CUcontext ctx; /* the context it was loaded into */
    int kind;      /* KP_CAP_CUBIN ... */
    void *data;    /* a copy of the image */
    size_t size;
} kp_cap_module;

enum { KP_CAP_CUBIN = 0, KP_CAP_FATBIN = 1, KP_CAP_PTX = 2, KP_CAP_UNKNOWN = 3 };
static const char *const kp_cap_kind_names[] = {"cubin", "fatbin", "ptx", "cubin"};
static const char *const kp_cap_kind_files[] = {"kernel.cubin", "kernel.fatbin", "kernel.ptx",
                                                "kernel.cubin"};

/* A kernel symbol that matches the pattern: its launches are counted. */
typedef struct kp_cap_symbol {
    char *symbol; /* mangled */
    char *name;   /* demangled, as the report shows it */
    uint64_t launches;
} kp_cap_symbol;

/* One entry of the CUfunction table: sym >= 0 the matching symbol, -1 no match. */
typedef struct kp_cap_fn {
    CUfunction f;
    int32_t sym;
} kp_cap_fn;

/* A launch as the callbacks see it, whichever API made it. */
typedef struct kp_cap_launch {
    CUfunction f;
    unsigned grid[3], block[3], smem;
    CUstream stream;
    void **params;
    void **extra;
    int cooperative; /* cuLaunchCooperativeKernel, or the COOPERATIVE attribute */
    unsigned cluster[3];
    int ptsz; /* a per-thread-default-stream variant: stream 0 means CU_STREAM_PER_THREAD */
} kp_cap_launch;

/* A capture in progress, from API enter to exit (one at a time). */
typedef struct kp_cap_work {
    kp_capture c;
    kp_capture_out *out;
    CUcontext ctx;  /* the launch's */
    int code_later; /* the module image was not there at enter: look again at exit */
    uint64_t held_ns, resumed_ns;
    kp_error err;
    int failed;
} kp_cap_work;

static struct {
    pthread_mutex_t lock;
    _Atomic unsigned generation; /* bumped when the function table is forgotten (an unload) */
    int armed;
    atomic_int done; /* captured or given up: every launch returns at once */
    kp_capture_pattern pattern;
    char kernels_dir[4096];
    int replace;
    CUpti_SubscriberHandle subscriber;

    kp_cap_module *modules;
    size_t nmodules, cap_modules, module_bytes;
    uint64_t modules_dropped; /* over KP_CAP_MODULE_BYTES */

    kp_cap_fn *fns; /* open addressing, capacity a power of two, f == NULL: empty */
    size_t nfns, cap_fns;
    kp_cap_symbol *symbols;
    size_t nsymbols, cap_symbols;

    int busy; /* a capture is between its enter and exit */

    /* @slowest */
    uint64_t window_start_ns; /* 0: no matching launch yet */
    uint64_t timed;
    int64_t slowest_ns;
    int32_t slowest_sym;
    uint64_t slowest_launch;
    unsigned slowest_grid[3], slowest_block[3], slowest_smem;
} kp_cap = {
    /* Recursive: a lazily loaded module's load callback comes on the thread that holds the
     * lock while naming a function (cuFuncGetName loads it). */
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .slowest_sym = -1,
};

/* Per thread: inside the capture's own calls; the capture or timing begun at this thread's
 * launch enter, finished at its exit. */
static _Thread_local int kp_cap_inside;
static _Thread_local kp_cap_work *kp_cap_pending;
static _Thread_local int kp_cap_timing; /* 1: ev[0] recorded at enter for symbol timing_sym */
static _Thread_local int32_t kp_cap_timing_sym;
static _Thread_local uint64_t kp_cap_timing_launch;
static _Thread_local CUevent kp_cap_ev[2];
static _Thread_local CUcontext kp_cap_ev_ctx;
/* The last function this thread launched that does not match, and the table's generation then. */
static _Thread_local CUfunction kp_cap_last_miss;
static _Thread_local unsigned kp_cap_last_gen;

/* The driver's name of an error ("CUDA_ERROR_INVALID_VALUE"): static text, so that the
 * capture keeps no buffer per thread (libkprof.so, which links this file, must keep its TLS
 * block small: tests/cli/test_exports.py). */
static const char *kp_cap_cu_text(CUresult rc)
{
    const char *s = NULL;
    if (kp_cd.cuGetErrorName) kp_cd.cuGetErrorName(rc, &s);
    return s ? s : "an unknown CUDA error";
}

/* ---- module images ---- */

static int kp_cap_image_kind(const void *data, size_t size)
{
    const unsigned char *p = data;
    if (size >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return KP_CAP_CUBIN;
    if (size >= 4) {
        uint32_t magic;
        memcpy(&magic, p, 4);
        if (magic == 0xBA55ED50u) return KP_CAP_FATBIN;
    }
    /* PTX is text: ".version", comments, directives. */
    size_t n = size < 4096 ? size : 4096, text = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n' || p[i] == '\t' || p[i] == '\r' || (p[i] >= 0x20 && p[i] < 0x7f) ||
            (p[i] == 0 && i + 1 == size))
            text++;
    if (n && text == n && memmem(p, size, ".version", 8)) return KP_CAP_PTX;
    return KP_CAP_UNKNOWN;
}

/* Walk a 64-bit little-endian ELF image's function symbols: fn(ctx, name) for each until it
 * returns nonzero (that value returned); -1 when the image is no ELF that can be read. */
static int kp_cap_elf_functions(const void *data, size_t size, int (*fn)(void *, const char *),
                                void *ctx)
{
    const unsigned char *b = data;
    if (size < sizeof(Elf64_Ehdr) || b[EI_CLASS] != ELFCLASS64 || b[EI_DATA] != ELFDATA2LSB)
        return -1;
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
        (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
        return -1;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, b + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum) continue;
        Elf64_Shdr st;
        memcpy(&st, b + eh.e_shoff + (uint64_t)sh.sh_link * sizeof st, sizeof st);
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || st.sh_offset > size ||
            st.sh_size > size - st.sh_offset || st.sh_size == 0)
            continue;
        const char *strs = (const char *)b + st.sh_offset;
        for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= sh.sh_size; at += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, b + sh.sh_offset + at, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= st.sh_size) continue;
            const char *name = strs + sym.st_name;
            if (!memchr(name, 0, st.sh_size - sym.st_name)) continue;
            int r = fn(ctx, name);
            if (r) return r;
        }
    }
    return 0;
}

/* A kernel's name as `kprof report` shows it (core/demangle.h), so that a pattern copied from
 * the report matches. */
#define KP_CAP_NAME_BYTES KP_DEMANGLE_NAME_BYTES

static void kp_cap_report_name(const char *symbol, char *name, size_t n)
{
    if (!kp_demangle_name(symbol, strlen(symbol), name, n)) kp_strlcpy(name, symbol, n);
}

static int kp_cap_symbol_matches(void *ctx, const char *symbol)
{
    (void)ctx;
    /* Most functions of a module cannot match: a strstr, not a demangling, says so. */
    if (!kp_capture_may_match(&kp_cap.pattern, symbol)) return 0;
    char name[KP_CAP_NAME_BYTES];
    kp_cap_report_name(symbol, name, sizeof name);
    return kp_capture_match(&kp_cap.pattern, name, symbol) ? 1 : 0;
}

static int kp_cap_symbol_is(void *ctx, const char *symbol)
{
    return strcmp(symbol, (const char *)ctx) == 0 ? 1 : 0;
}

/* A module loaded: keep a copy when it may hold a kernel the pattern names. */
static void kp_cap_module_loaded(CUcontext ctx, const CUpti_ModuleResourceData *m)
{
    if (!m || !m->pCubin || !m->cubinSize) return;
    int kind = kp_cap_image_kind(m->pCubin, m->cubinSize);
    /* A cubin none of whose functions match is of no use to the capture. */
    if (kind == KP_CAP_CUBIN &&
        kp_cap_elf_functions(m->pCubin, m->cubinSize, kp_cap_symbol_matches, NULL) == 0)
        return;
    pthread_mutex_lock(&kp_cap.lock);
    if (kp_cap.module_bytes + m->cubinSize > KP_CAP_MODULE_BYTES) {
        kp_cap.modules_dropped++;
        pthread_mutex_unlock(&kp_cap.lock);
        return;
    }
    if (kp_cap.nmodules == kp_cap.cap_modules) {
        size_t n = kp_cap.cap_modules ? kp_cap.cap_modules * 2 : 16;
        kp_cap_module *grown = realloc(kp_cap.modules, n * sizeof *grown);
        if (!grown) {
            kp_cap.modules_dropped++;
            pthread_mutex_unlock(&kp_cap.lock);
            return;
        }
        kp_cap.modules = grown;
        kp_cap.cap_modules = n;
    }
    void *copy = malloc(m->cubinSize);
    if (!copy) {
        kp_cap.modules_dropped++;
        pthread_mutex_unlock(&kp_cap.lock);
        return;
    }
    memcpy(copy, m->pCubin, m->cubinSize);
    kp_cap.modules[kp_cap.nmodules++] = (kp_cap_module){
        .id = m->moduleId, .ctx = ctx, .kind = kind, .data = copy, .size = m->cubinSize};
    kp_cap.module_bytes += m->cubinSize;
    pthread_mutex_unlock(&kp_cap.lock);
}

static void kp_cap_module_unloading(const CUpti_ModuleResourceData *m)
{
    if (!m) return;
    pthread_mutex_lock(&kp_cap.lock);
    /* Its functions' handles may be handed out again for other functions: forget every
     * function's answer (they are looked up again; the launch counts are per symbol). */
    if (kp_cap.fns) memset(kp_cap.fns, 0, kp_cap.cap_fns * sizeof *kp_cap.fns);
    kp_cap.nfns = 0;
    atomic_fetch_add_explicit(&kp_cap.generation, 1, memory_order_release); /* threads' caches */
    for (size_t i = 0; i < kp_cap.nmodules; i++) {
        if (kp_cap.modules[i].id != m->moduleId) continue;
        free(kp_cap.modules[i].data);
        kp_cap.module_bytes -= kp_cap.modules[i].size;
        kp_cap.modules[i] = kp_cap.modules[--kp_cap.nmodules];
        break;
    }
    pthread_mutex_unlock(&kp_cap.lock);
}

/* The image most likely to hold symbol: a cubin that defines it (in ctx first, the latest
 * loaded first), else a PTX or fatbin image whose bytes hold the name. Caller holds the lock.
 * -1: none. */
static long kp_cap_find_module(CUcontext ctx, const char *symbol)
{
    long best = -1;
    int best_rank = 0;
    size_t len = strlen(symbol);
    for (size_t k = kp_cap.nmodules; k-- > 0;) {
        const kp_cap_module *m = &kp_cap.modules[k];
        int rank = 0;
        if (m->kind == KP_CAP_CUBIN || m->kind == KP_CAP_UNKNOWN) {
            if (kp_cap_elf_functions(m->data, m->size, kp_cap_symbol_is, (void *)symbol) == 1)
                rank = 4;
        } else if (len && memmem(m->data, m->size, symbol, len)) {
            rank = 2;
        }
        if (!rank) continue;
        if (m->ctx == ctx) rank++;
        if (rank > best_rank) {
            best_rank = rank;
            best = (long)k;
        }
    }
    return best;
}

/* ---- the CUfunction table ---- */

static size_t kp_cap_hash(CUfunction f)
{
    uint64_t x = (uint64_t)(uintptr_t)f;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot of f (found, or the empty one where it goes). Caller holds the lock; cap_fns > 0. */
static kp_cap_fn *kp_cap_fn_slot(CUfunction f)
{
    size_t mask = kp_cap.cap_fns - 1;
    for (size_t i = kp_cap_hash(f) & mask;; i = (i + 1) & mask)
        if (kp_cap.fns[i].f == f || kp_cap.fns[i].f == NULL) return &kp_cap.fns[i];
}

/* Add f -> sym, growing the table at half full. 0 when out of memory (f is then looked up
 * again on its next launch). Caller holds the lock. */
static int kp_cap_fn_add(CUfunction f, int32_t sym)
{
    if ((kp_cap.nfns + 1) * 2 > kp_cap.cap_fns) {
        size_t n = kp_cap.cap_fns ? kp_cap.cap_fns * 2 : 1024;
        kp_cap_fn *grown = calloc(n, sizeof *grown);
        if (!grown) return 0;
        kp_cap_fn *old = kp_cap.fns;
        size_t old_n = kp_cap.cap_fns;
        kp_cap.fns = grown;
        kp_cap.cap_fns = n;
        for (size_t i = 0; i < old_n; i++)
            if (old[i].f) *kp_cap_fn_slot(old[i].f) = old[i];
        free(old);
    }
    kp_cap_fn *s = kp_cap_fn_slot(f);
    if (!s->f) kp_cap.nfns++;
    s->f = f;
    s->sym = sym;
    return 1;
}

/* The matching symbol of a mangled name, added when new; -1 when out of memory. Lock held. */
static int32_t kp_cap_symbol_of(const char *symbol, const char *name)
{
    for (size_t i = 0; i < kp_cap.nsymbols; i++)
        if (strcmp(kp_cap.symbols[i].symbol, symbol) == 0) return (int32_t)i;
    if (kp_cap.nsymbols == kp_cap.cap_symbols) {
        size_t n = kp_cap.cap_symbols ? kp_cap.cap_symbols * 2 : 8;
        kp_cap_symbol *grown = realloc(kp_cap.symbols, n * sizeof *grown);
        if (!grown) return -1;
        kp_cap.symbols = grown;
        kp_cap.cap_symbols = n;
    }
    char *s = strdup(symbol), *d = strdup(name);
    if (!s || !d) {
        free(s);
        free(d);
        return -1;
    }
    kp_cap.symbols[kp_cap.nsymbols] = (kp_cap_symbol){.symbol = s, .name = d};
    return (int32_t)kp_cap.nsymbols++;
}

/* f's answer from the table: 1 and *sym (its symbol, or -1: it does not match) when f was
 * looked up before. Lock held. */
static int kp_cap_probe(CUfunction f, int32_t *sym)
{
    if (!kp_cap.cap_fns) return 0;
    kp_cap_fn *s = kp_cap_fn_slot(f);
    if (s->f != f) return 0;
    *sym = s->sym;
    return 1;
}

/* Whether f matches, answered once per function: its name (the launch's hint, else
 * cuFuncGetName) and the pattern, WITHOUT the lock — naming a function can load its module, and
 * the module-load callback of another thread takes the lock while the driver holds its own —
 * then added to the table under it (another thread may have added it meanwhile). Returns with
 * the lock held: the symbol, or -1. */
static int32_t kp_cap_resolve(CUfunction f, const char *symbol_hint)
{
    const char *symbol = symbol_hint;
    if (!symbol || !*symbol) {
        symbol = NULL;
        kp_cap_inside++;
        if (kp_cd.cuFuncGetName(&symbol, f) != CUDA_SUCCESS) symbol = NULL;
        kp_cap_inside--;
    }
    int matched = 0;
    char name[KP_CAP_NAME_BYTES];
    name[0] = '\0';
    if (symbol && kp_capture_may_match(&kp_cap.pattern, symbol)) {
        kp_cap_report_name(symbol, name, sizeof name);
        matched = kp_capture_match(&kp_cap.pattern, name, symbol);
    }
    pthread_mutex_lock(&kp_cap.lock);
    int32_t sym = -1;
    if (kp_cap_probe(f, &sym)) return sym;
    if (matched) sym = kp_cap_symbol_of(symbol, name);
    kp_cap_fn_add(f, sym);
    return sym;
}

/* ---- reading a launch ---- */

/* The launch's fields from the callback's parameters; 0 for a callback that is no launch. */
static int kp_cap_read_launch(CUpti_CallbackId cbid, const void *params, kp_cap_launch *l)
{
    memset(l, 0, sizeof *l);
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        const cuLaunchKernel_params *p = params;
        *l = (kp_cap_launch){.f = p->f,
                             .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                             .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                             .smem = p->sharedMemBytes,
                             .stream = p->hStream,
                             .params = p->kernelParams,
                             .extra = p->extra,
                             .ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz};
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        const cuLaunchCooperativeKernel_params *p = params;
        *l =
            (kp_cap_launch){.f = p->f,
                            .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                            .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                            .smem = p->sharedMemBytes,
                            .stream = p->hStream,
                            .params = p->kernelParams,
                            .cooperative = 1,
                            .ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const cuLaunchKernelEx_params *p = params;
        if (!p->config) return 0;
        const CUlaunchConfig *c = p->config;
        *l = (kp_cap_launch){.f = p->f,
                             .grid = {c->gridDimX, c->gridDimY, c->gridDimZ},
                             .block = {c->blockDimX, c->blockDimY, c->blockDimZ},
                             .smem = c->sharedMemBytes,
                             .stream = c->hStream,
                             .params = p->kernelParams,
                             .extra = p->extra,
                             .ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
        for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {
            if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
                l->cooperative = 1;
            if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
                l->cluster[0] = c->attrs[i].value.clusterDim.x;
                l->cluster[1] = c->attrs[i].value.clusterDim.y;
                l->cluster[2] = c->attrs[i].value.clusterDim.z;
            }
        }
        return 1;
    }
    default:
        return 0;
    }
}

static CUstream kp_cap_stream(const kp_cap_launch *l)
{
    return (l->ptsz && l->stream == NULL) ? CU_STREAM_PER_THREAD : l->stream;
}

/* The `extra` argument's packed parameter buffer, or NULL. */
static const unsigned char *kp_cap_extra_buffer(void **extra, size_t *size)
{
    const unsigned char *buf = NULL;
    *size = 0;
    for (size_t i = 0; extra && i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *size = *(const size_t *)extra[i + 1];
    }
    return buf;
}

/* ---- the capture ---- */

/* A parameter's place and size. A launch of a cuLibrary kernel may hand over its CUkernel as the
 * CUfunction (the driver accepts either): cuFuncGetParamInfo refuses that handle, and
 * cuKernelGetParamInfo then answers. */
static CUresult kp_cap_param_info(CUfunction f, size_t i, size_t *off, size_t *size)
{
    CUresult rc = kp_cd.cuFuncGetParamInfo(f, i, off, size);
    if (rc == CUDA_ERROR_INVALID_HANDLE &&
        kp_cd.cuKernelGetParamInfo((CUkernel)(void *)f, i, off, size) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    return rc;
}

/* A device allocation argument `arg`'s word at `at` points into: added with its pointer, or a
 * not-captured line. `word` is the word's value. 0 when it points into no memory the driver
 * knows (a plain value), 1 otherwise. */
static int kp_cap_pointer(kp_cap_work *w, uint32_t arg, uint32_t at, uint64_t word)
{
    kp_capture *c = &w->c;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    if (word == 0 || kp_cd.cuMemGetAddressRange(&base, &bytes, (CUdeviceptr)word) != CUDA_SUCCESS)
        return 0;
    unsigned int managed = 0, type = 0;
    if (kp_cd.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)word) !=
        CUDA_SUCCESS)
        managed = 0;
    if (kp_cd.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)word) !=
        CUDA_SUCCESS)
        type = 0;
    char where[48];
    if (at)
        snprintf(where, sizeof where, "argument %u (the word at +%u)", arg, at);
    else
        snprintf(where, sizeof where, "argument %u", arg);
    if (managed) {
        kp_capture_missing(c,
                           "%s points into managed (unified) memory at 0x%llx (%zu bytes): "
                           "not copied",
                           where, (unsigned long long)base, bytes);
        return 1;
    }
    if (type != CU_MEMORYTYPE_DEVICE) {
        kp_capture_missing(c, "%s points into %s memory at 0x%llx (%zu bytes): not copied", where,
                           type == CU_MEMORYTYPE_HOST ? "mapped host" : "non-device",
                           (unsigned long long)base, bytes);
        return 1;
    }
    if ((uint64_t)bytes > kp_cap.pattern.max_bytes) {
        kp_capture_missing(c,
                           "%s points into an allocation of %zu bytes at 0x%llx, over "
                           "--capture-max-bytes (%llu): not copied",
                           where, bytes, (unsigned long long)base,
                           (unsigned long long)kp_cap.pattern.max_bytes);
        return 1;
    }
    char name[64];
    if (at)
        snprintf(name, sizeof name, "arg%u+%u", arg, at);
    else
        snprintf(name, sizeof name, "arg%u", arg);
    kp_error err = {0};
    int j = kp_capture_add_alloc(c, (uint64_t)base, (uint64_t)bytes, (int)arg, name, &err);
    if (j < 0 || kp_capture_add_ptr(c, arg, at, (uint32_t)j, word - (uint64_t)base, &err) < 0) {
        kp_capture_missing(c, "%s points to 0x%llx: %s", where, (unsigned long long)word,
                           err.message[0] ? err.message : "too many pointers");
        kp_error_clear(&err);
    }
    return 1;
}

/* Whether a small nonzero word names a texture or surface object (handles are small integers,
 * which a plain integer argument may equal: then the line is a caution, not a certainty). */
static void kp_cap_texture(kp_cap_work *w, uint32_t arg, uint32_t at, uint64_t word)
{
    if (word == 0 || word > 0xffffffffull) return;
    CUDA_RESOURCE_DESC desc;
    if (kp_cd.cuTexObjectGetResourceDesc(&desc, (CUtexObject)word) == CUDA_SUCCESS)
        kp_capture_missing(&w->c,
                           "argument %u (+%u) holds %llu, which is a texture object's handle in "
                           "this program: textures are not captured",
                           arg, at, (unsigned long long)word);
    else if (kp_cd.cuSurfObjectGetResourceDesc(&desc, (CUsurfObject)word) == CUDA_SUCCESS)
        kp_capture_missing(&w->c,
                           "argument %u (+%u) holds %llu, which is a surface object's handle in "
                           "this program: surfaces are not captured",
                           arg, at, (unsigned long long)word);
}

/* Copy every allocation's before (after = 0) or after state into the folder. */
static kprof_status kp_cap_copy_states(kp_cap_work *w, int after)
{
    kp_capture *c = &w->c;
    for (int j = 0; j < c->nallocs; j++) {
        kp_capture_alloc *a = &c->allocs[j];
        void *host = malloc(a->bytes ? a->bytes : 1);
        if (!host)
            return kp_error_set(&w->err, KPROF_NOMEM,
                                "out of host memory copying allocation %d (%llu bytes)", j,
                                (unsigned long long)a->bytes);
        CUresult rc = kp_cd.cuMemcpyDtoH(host, (CUdeviceptr)a->address, a->bytes);
        if (rc != CUDA_SUCCESS) {
            free(host);
            return kp_error_set(&w->err, KPROF_BACKEND,
                                "copying allocation %d (%llu bytes at 0x%llx) to the host: %s", j,
                                (unsigned long long)a->bytes, (unsigned long long)a->address,
                                kp_cap_cu_text(rc));
        }
        if (!after) {
            /* Pointers stored inside device memory are not relocated by the replay: say so when
             * this allocation holds words that point into one the capture copied. */
            uint64_t lo = UINT64_MAX, hi = 0, found = 0;
            for (int k = 0; k < c->nallocs; k++) {
                if (c->allocs[k].address < lo) lo = c->allocs[k].address;
                if (c->allocs[k].address + c->allocs[k].bytes > hi)
                    hi = c->allocs[k].address + c->allocs[k].bytes;
            }
            const unsigned char *p = host;
            for (uint64_t at = 0; at + 8 <= a->bytes; at += 8) {
                uint64_t v;
                memcpy(&v, p + at, 8);
                if (v < lo || v >= hi) continue;
                for (int k = 0; k < c->nallocs; k++)
                    if (v >= c->allocs[k].address &&
                        v < c->allocs[k].address + c->allocs[k].bytes) {
                        found++;
                        break;
                    }
            }
            if (found)
                kp_capture_missing(c,
                                   "allocation %d ('%s') holds %llu 8-byte words that look like "
                                   "addresses inside captured allocations: pointers stored in "
                                   "device memory are not relocated by the replay",
                                   j, a->name, (unsigned long long)found);
        }
        char file[32];
        snprintf(file, sizeof file, "alloc-%d.%s", j, after ? "after" : "before");
        kprof_status st = kp_capture_out_blob(w->out, file, host, a->bytes, &w->err);
        free(host);
        if (st != KPROF_OK) return st;
        kp_strlcpy(after ? a->after : a->before, file, sizeof a->before);
    }
    return KPROF_OK;
}

static void kp_cap_command(kp_capture *c)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return;
    size_t n = fread(c->command, 1, sizeof c->command - 1, f);
    fclose(f);
    c->command[n] = '\0';
    for (size_t i = 0; i + 1 < n; i++)
        if (c->command[i] == '\0') c->command[i] = ' ';
}

/* The module image holding the function into the folder: 1 written, 0 not (yet) handed over,
 * -1 on a write failure (w->err says why). */
static int kp_cap_code(kp_cap_work *w)
{
    kp_capture *c = &w->c;
    /* The image is copied under the lock and written after it: no launching thread or module
     * load waits for the disk. */
    void *data = NULL;
    size_t size = 0;
    pthread_mutex_lock(&kp_cap.lock);
    long mi = kp_cap_find_module(w->ctx, c->symbol);
    if (mi >= 0) {
        const kp_cap_module *m = &kp_cap.modules[mi];
        kp_strlcpy(c->code_kind, kp_cap_kind_names[m->kind], sizeof c->code_kind);
        kp_strlcpy(c->code_file, kp_cap_kind_files[m->kind], sizeof c->code_file);
        data = malloc(m->size ? m->size : 1);
        if (data) memcpy(data, m->data, m->size);
        size = m->size;
    }
    pthread_mutex_unlock(&kp_cap.lock);
    if (mi < 0) return 0;
    if (!data) {
        kp_error_nomem(&w->err);
        return -1;
    }
    kprof_status st = kp_capture_out_blob(w->out, c->code_file, data, size, &w->err);
    free(data);
    return st == KPROF_OK ? 1 : -1;
}

/* Everything up to the launch: the folder opened, the code, geometry, attributes, arguments and
 * before-states. On failure w->failed is set and w->err says why. Runs with kp_cap_inside set. */
static void kp_cap_begin(kp_cap_work *w, const kp_cap_launch *l, CUcontext ctx, int32_t sym,
                         uint64_t launch)
{
    kp_capture *c = &w->c;
    uint64_t t0 = kp_now_ns();
    kp_capture_init(c);
    kp_strlcpy(c->api, "cuda", sizeof c->api);
    pthread_mutex_lock(&kp_cap.lock);
    kp_strlcpy(c->kernel, kp_cap.symbols[sym].name, sizeof c->kernel);
    kp_strlcpy(c->symbol, kp_cap.symbols[sym].symbol, sizeof c->symbol);
    pthread_mutex_unlock(&kp_cap.lock);
    c->launch = launch;
    c->select = kp_cap.pattern.select;
    c->pid = (int64_t)getpid();
    c->after = kp_cap.pattern.after;
    kp_cap_command(c);

    /* The state the launch starts from: everything queued before it done. */
    CUresult rc = kp_cd.cuCtxSynchronize();
    if (rc != CUDA_SUCCESS) {
        kp_error_set(&w->err, KPROF_BACKEND, "synchronizing before the launch: %s",
                     kp_cap_cu_text(rc));
        goto fail;
    }

    char folder[256];
    kp_capture_folder_name(c->kernel, launch, folder, sizeof folder);
    if (kp_capture_out_open(kp_cap.kernels_dir, folder, &w->out, &w->err) != KPROF_OK) goto fail;

    CUdevice dev = 0;
    int have_dev = kp_cd.cuCtxGetDevice(&dev) == CUDA_SUCCESS;
    if (have_dev) kp_cd.cuDeviceGetName(c->device, (int)sizeof c->device, dev);

    /* Geometry in kprof's vocabulary: total threads per dimension, threads per group. */
    c->dims = (l->grid[2] > 1 || l->block[2] > 1) ? 3 : (l->grid[1] > 1 || l->block[1] > 1) ? 2 : 1;
    for (int i = 0; i < 3; i++) {
        c->grid[i] = (uint64_t)l->grid[i] * l->block[i];
        c->tg[i] = l->block[i];
        c->offset[i] = 0;
    }
    c->dynamic_smem = l->smem;
    static const struct {
        CUfunction_attribute a;
        size_t off;
    } attrs[] = {
        {CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(kp_capture, registers)},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(kp_capture, static_smem)},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(kp_capture, local_bytes)},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(kp_capture, max_threads)},
        {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(kp_capture, const_bytes)},
    };
    /* A cuLibrary kernel's launch may pass its CUkernel (as for the parameters): then the
     * kernel's attributes on the context's device. */
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        CUresult got = kp_cd.cuFuncGetAttribute(&v, attrs[i].a, l->f);
        if (got != CUDA_SUCCESS && have_dev)
            got = kp_cd.cuKernelGetAttribute(&v, attrs[i].a, (CUkernel)(void *)l->f, dev);
        if (got == CUDA_SUCCESS) *(int64_t *)(void *)((char *)c + attrs[i].off) = v;
    }
    if (l->cooperative)
        kp_capture_missing(c, "cooperative launch: the replay launches it as an ordinary launch, "
                              "so grid-wide synchronization inside it is not reproduced");
    if (l->cluster[0] * (l->cluster[1] ? l->cluster[1] : 1) * (l->cluster[2] ? l->cluster[2] : 1) >
        1)
        kp_capture_missing(c,
                           "thread-block clusters of %ux%ux%u: the replay launches without the "
                           "cluster attribute",
                           l->cluster[0], l->cluster[1], l->cluster[2]);

    /* The code; a lazily loaded module may load only inside the launch (cuLibrary kernels): then
     * at its exit. */
    w->ctx = ctx;
    int code = kp_cap_code(w);
    if (code < 0) goto fail;
    w->code_later = code == 0;

    /* The parameters: cuFuncGetParamInfo's layout, until it says there are no more. */
    size_t extra_size = 0;
    const unsigned char *extra = l->params ? NULL : kp_cap_extra_buffer(l->extra, &extra_size);
    for (size_t i = 0; i < KP_CAPTURE_MAX_ARGS; i++) {
        size_t off = 0, size = 0;
        rc = kp_cap_param_info(l->f, i, &off, &size);
        if (rc != CUDA_SUCCESS) {
            if (i == 0 && rc != CUDA_ERROR_INVALID_VALUE) {
                kp_error_set(&w->err, KPROF_BACKEND,
                             "cuFuncGetParamInfo could not give the parameter layout: %s",
                             kp_cap_cu_text(rc));
                goto fail;
            }
            break;
        }
        const void *bytes = NULL;
        if (l->params)
            bytes = l->params[i];
        else if (extra && off + size <= extra_size)
            bytes = extra + off;
        if (!bytes || size > KP_CAPTURE_MAX_ARG_SIZE) {
            kp_error_set(&w->err, KPROF_BACKEND,
                         "parameter %zu (%zu bytes at +%zu) could not be read from the launch", i,
                         size, off);
            goto fail;
        }
        int a = kp_capture_add_value(c, bytes, (uint32_t)size, &w->err);
        if (a < 0) goto fail;
        /* Every aligned 8-byte word: a pointer parameter, or a pointer inside a struct passed
         * by value. */
        for (size_t at = 0; at + 8 <= size; at += 8) {
            uint64_t word;
            memcpy(&word, (const unsigned char *)bytes + at, 8);
            if (!kp_cap_pointer(w, (uint32_t)a, (uint32_t)at, word))
                kp_cap_texture(w, (uint32_t)a, (uint32_t)at, word);
        }
    }
    if (kp_cap_copy_states(w, 0) != KPROF_OK) goto fail;
    w->held_ns = (int64_t)(kp_now_ns() - t0);
    return;
fail:
    w->failed = 1;
    w->held_ns = (int64_t)(kp_now_ns() - t0);
}

/* After the launch: its after-states, then the folder committed and announced. */
static void kp_cap_end(kp_cap_work *w, CUresult launched)
{
    uint64_t t0 = kp_now_ns();
    char path[4096] = "";
    if (!w->failed && launched != CUDA_SUCCESS) {
        kp_error_set(&w->err, KPROF_BACKEND, "the launch itself failed: %s",
                     kp_cap_cu_text(launched));
        w->failed = 1;
    }
    if (!w->failed) {
        CUresult rc = kp_cd.cuCtxSynchronize();
        if (rc != CUDA_SUCCESS) {
            kp_error_set(&w->err, KPROF_FAULT, "the captured launch failed on the device: %s",
                         kp_cap_cu_text(rc));
            w->failed = 1;
        }
    }
    if (!w->failed && w->code_later) {
        int code = kp_cap_code(w);
        if (code < 0) w->failed = 1;
        if (code == 0) {
            pthread_mutex_lock(&kp_cap.lock);
            uint64_t dropped = kp_cap.modules_dropped;
            pthread_mutex_unlock(&kp_cap.lock);
            /* Nothing to replay: the reader refuses a folder without its code, and so does
             * this. */
            kp_error_set(&w->err, KPROF_NOT_FOUND,
                         "CUPTI did not hand over the module image holding %s while the capture "
                         "watched (%s), so there is nothing to replay",
                         w->c.symbol,
                         dropped ? "loaded before it started, or dropped: over 2 GiB of module "
                                   "images were kept"
                                 : "loaded before it started");
            w->failed = 1;
        }
    }
    if (!w->failed && w->c.after && kp_cap_copy_states(w, 1) != KPROF_OK) w->failed = 1;
    if (!w->c.after) /* --capture-no-after: the manifest names no after-state */
        for (int j = 0; j < w->c.nallocs; j++)
            w->c.allocs[j].after[0] = '\0';
    w->c.held_ns = w->held_ns + (int64_t)(kp_now_ns() - t0);
    if (!w->failed) {
        const char *force = getenv(KP_ENV_CAPTURE_FORCE);
        kprof_status st = kp_capture_out_commit(w->out, &w->c, force && strcmp(force, "1") == 0,
                                                path, sizeof path, &w->err);
        w->out = NULL; /* freed either way */
        if (st != KPROF_OK) w->failed = 1;
    }
    if (w->failed) {
        kp_capture_out_abort(w->out);
        w->out = NULL;
        kp_capture_announce(&w->c, NULL, &w->err);
    } else {
        kp_capture_announce(&w->c, path, NULL);
    }
    kp_error_clear(&w->err);
    kp_capture_release(&w->c);
}

/* ---- @slowest's timing ---- */

/* This thread's event pair, made in the current context. 0 when they cannot be. */
static int kp_cap_events(CUcontext ctx)
{
    if (kp_cap_ev[0] && kp_cap_ev_ctx == ctx) return 1;
    if (kp_cap_ev[0]) { /* another context: the old pair goes (an error if its context went) */
        kp_cd.cuEventDestroy(kp_cap_ev[0]);
        kp_cd.cuEventDestroy(kp_cap_ev[1]);
        kp_cap_ev[0] = kp_cap_ev[1] = NULL;
    }
    if (kp_cd.cuEventCreate(&kp_cap_ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        kp_cap_ev[0] = NULL;
        return 0;
    }
    if (kp_cd.cuEventCreate(&kp_cap_ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        kp_cd.cuEventDestroy(kp_cap_ev[0]);
        kp_cap_ev[0] = kp_cap_ev[1] = NULL;
        return 0;
    }
    kp_cap_ev_ctx = ctx;
    return 1;
}

static int kp_cap_same_geometry(const kp_cap_launch *l)
{
    for (int i = 0; i < 3; i++)
        if (l->grid[i] != kp_cap.slowest_grid[i] || l->block[i] != kp_cap.slowest_block[i])
            return 0;
    return l->smem == kp_cap.slowest_smem;
}

/* ---- the callbacks ---- */

static void kp_cap_fail_early(const char *what, uint64_t launch, const kp_error *err);

static void kp_cap_launch_enter(const CUpti_CallbackData *cb, const kp_cap_launch *l)
{
    /* The last function this thread launched that does not match, while no module has been
     * unloaded since: nothing to look up, no lock. */
    unsigned gen = atomic_load_explicit(&kp_cap.generation, memory_order_acquire);
    if (l->f == kp_cap_last_miss && gen == kp_cap_last_gen) return;
    pthread_mutex_lock(&kp_cap.lock);
    if (atomic_load(&kp_cap.done) || kp_cap.busy) {
        pthread_mutex_unlock(&kp_cap.lock);
        return;
    }
    int32_t sym = -1;
    if (!kp_cap_probe(l->f, &sym)) {
        pthread_mutex_unlock(&kp_cap.lock);
        sym = kp_cap_resolve(l->f, cb->symbolName); /* returns with the lock held */
        if (atomic_load(&kp_cap.done) || kp_cap.busy) {
            pthread_mutex_unlock(&kp_cap.lock);
            return;
        }
    }
    if (sym < 0) {
        pthread_mutex_unlock(&kp_cap.lock);
        kp_cap_last_miss = l->f;
        kp_cap_last_gen = gen;
        return;
    }
    uint64_t launch = ++kp_cap.symbols[sym].launches;
    int capture = 0, time_it = 0;
    const kp_capture_pattern *p = &kp_cap.pattern;
    if (p->select != KP_CAPTURE_SLOWEST) {
        capture = launch == (p->nth ? p->nth : 1);
    } else {
        uint64_t now = kp_now_ns();
        if (!kp_cap.window_start_ns) kp_cap.window_start_ns = now;
        /* A kernel's first launch is not timed: it pays its module's lazy load, which its
         * events bracket, and would pass for the slowest. */
        if ((double)(now - kp_cap.window_start_ns) < p->window_s * 1e9)
            time_it = launch > 1;
        else
            capture = kp_cap.slowest_sym == sym && kp_cap_same_geometry(l);
    }
    if (capture) kp_cap.busy = 1;
    pthread_mutex_unlock(&kp_cap.lock);

    kp_cap_inside++;
    if (time_it && kp_cap_events(cb->context) &&
        kp_cd.cuEventRecord(kp_cap_ev[0], kp_cap_stream(l)) == CUDA_SUCCESS) {
        kp_cap_timing = 1;
        kp_cap_timing_sym = sym;
        kp_cap_timing_launch = launch;
    }
    if (capture) {
        kp_cap_work *w = calloc(1, sizeof *w);
        if (!w) {
            char name[1024];
            pthread_mutex_lock(&kp_cap.lock);
            kp_strlcpy(name, kp_cap.symbols[sym].name, sizeof name);
            kp_cap.busy = 0;
            pthread_mutex_unlock(&kp_cap.lock);
            kp_error e = {0};
            kp_error_nomem(&e);
            kp_cap_fail_early(name, launch, &e);
            atomic_store(&kp_cap.done, 1);
        } else {
            kp_cap_begin(w, l, cb->context, sym, launch);
            if (kp_cap.pattern.select == KP_CAPTURE_SLOWEST) {
                pthread_mutex_lock(&kp_cap.lock);
                w->c.window_s = kp_cap.pattern.window_s;
                w->c.window_launches = kp_cap.timed;
                w->c.slowest_ns = kp_cap.slowest_ns;
                w->c.slowest_launch = kp_cap.slowest_launch;
                pthread_mutex_unlock(&kp_cap.lock);
            }
            kp_cap_pending = w;
        }
    }
    kp_cap_inside--;
}

static void kp_cap_launch_exit(const CUpti_CallbackData *cb, const kp_cap_launch *l)
{
    if (kp_cap_timing) {
        kp_cap_timing = 0;
        kp_cap_inside++;
        float ms = 0;
        int ok = kp_cd.cuEventRecord(kp_cap_ev[1], kp_cap_stream(l)) == CUDA_SUCCESS &&
                 kp_cd.cuEventSynchronize(kp_cap_ev[1]) == CUDA_SUCCESS &&
                 kp_cd.cuEventElapsedTime(&ms, kp_cap_ev[0], kp_cap_ev[1]) == CUDA_SUCCESS;
        kp_cap_inside--;
        CUresult launched =
            cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
        if (ok && launched == CUDA_SUCCESS) {
            int64_t ns = (int64_t)((double)ms * 1e6);
            pthread_mutex_lock(&kp_cap.lock);
            kp_cap.timed++;
            if (kp_cap.slowest_sym < 0 || ns > kp_cap.slowest_ns) {
                kp_cap.slowest_ns = ns;
                kp_cap.slowest_sym = kp_cap_timing_sym;
                kp_cap.slowest_launch = kp_cap_timing_launch;
                memcpy(kp_cap.slowest_grid, l->grid, sizeof l->grid);
                memcpy(kp_cap.slowest_block, l->block, sizeof l->block);
                kp_cap.slowest_smem = l->smem;
            }
            pthread_mutex_unlock(&kp_cap.lock);
        }
    }
    kp_cap_work *w = kp_cap_pending;
    if (!w) return;
    kp_cap_pending = NULL;
    kp_cap_inside++;
    CUresult launched =
        cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
    kp_cap_end(w, launched);
    kp_cap_inside--;
    free(w);
    atomic_store(&kp_cap.done, 1);
    /* The module images are of no more use: give their memory back to the program. */
    pthread_mutex_lock(&kp_cap.lock);
    kp_cap.busy = 0;
    for (size_t i = 0; i < kp_cap.nmodules; i++)
        free(kp_cap.modules[i].data);
    kp_cap.nmodules = 0;
    kp_cap.module_bytes = 0;
    pthread_mutex_unlock(&kp_cap.lock);
}

static void CUPTIAPI kp_cap_callback(void *userdata, CUpti_CallbackDomain domain,
                                     CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    if (!cbdata) return;
    /* A module the capture's own calls load (cuFuncGetAttribute on a lazily loaded function
     * loads its module) is taken all the same: only API callbacks of its own calls are not the
     * program's. */
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *r = cbdata;
        if (atomic_load(&kp_cap.done)) return;
        if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
            kp_cap_module_loaded(r->context, r->resourceDescriptor);
        else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING)
            kp_cap_module_unloading(r->resourceDescriptor);
        return;
    }
    if (kp_cap_inside || domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData *cb = cbdata;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (atomic_load(&kp_cap.done)) return;
        kp_cap_launch l;
        if (kp_cap_read_launch(cbid, cb->functionParams, &l)) kp_cap_launch_enter(cb, &l);
    } else if (kp_cap_timing || kp_cap_pending) {
        kp_cap_launch l;
        if (kp_cap_read_launch(cbid, cb->functionParams, &l)) kp_cap_launch_exit(cb, &l);
    }
}

/* ---- start and exit ---- */

/* A failure announced with no capture under way: the manifest is large (tens of KiB), so it is
 * not put on a thread's stack, which in a program's threads may be small. */
static kp_capture kp_cap_failure;
static pthread_mutex_t kp_cap_failure_lock = PTHREAD_MUTEX_INITIALIZER;

static void kp_cap_fail_early(const char *what, uint64_t launch, const kp_error *err)
{
    pthread_mutex_lock(&kp_cap_failure_lock);
    kp_capture_init(&kp_cap_failure);
    kp_strlcpy(kp_cap_failure.api, "cuda", sizeof kp_cap_failure.api);
    kp_strlcpy(kp_cap_failure.kernel, what, sizeof kp_cap_failure.kernel);
    kp_cap_failure.launch = launch;
    kp_capture_announce(&kp_cap_failure, NULL, err);
    kp_capture_release(&kp_cap_failure);
    pthread_mutex_unlock(&kp_cap_failure_lock);
}

int kp_cuda_capture_start(const kp_error *collection)
{
    kp_error err = {0};
    int asked = kp_capture_pattern_env(&kp_cap.pattern, &err);
    if (asked == 0) return 0;
    /* Failures before any launch are named by the pattern (its glob and @N when it parsed). */
    const char *text = asked > 0 ? kp_cap.pattern.glob : getenv(KP_ENV_CAPTURE);
    uint64_t nth =
        asked > 0 && kp_cap.pattern.select != KP_CAPTURE_SLOWEST ? kp_cap.pattern.nth : 0;
    if (asked < 0) {
        kp_cap_fail_early(text ? text : "", 0, &err);
        kp_error_clear(&err);
        return 0;
    }
    if (collection) {
        kp_error_set(&err, KPROF_UNAVAILABLE, "kprof's CUDA collection is off: %s",
                     collection->message);
        kp_cap_fail_early(text, nth, &err);
        kp_error_clear(&err);
        return 0;
    }
    const char *dir = getenv(KP_ENV_CAPTURE_DIR);
    const char *home = getenv(KP_ENV_HOME);
    if (dir && *dir)
        kp_strlcpy(kp_cap.kernels_dir, dir, sizeof kp_cap.kernels_dir);
    else
        snprintf(kp_cap.kernels_dir, sizeof kp_cap.kernels_dir, "%s/kernels",
                 home && *home ? home : ".kprof");
    if (kp_dynlib_load_table(&kp_cd_table, &err) != KPROF_OK ||
        kp_dynlib_load_table(&kp_cc_table, &err) != KPROF_OK) {
        kp_cap_fail_early(text, nth, &err);
        kp_error_clear(&err);
        return 0;
    }
    /* The demangler loads the C++ runtime on first use: do that now, not inside a module-load
     * callback, where the driver may hold its locks while the loader takes its own. */
    char warm[64];
    kp_demangle("_Z1fv", warm, sizeof warm);
    CUptiResult r = kp_cc.cuptiSubscribe(&kp_cap.subscriber, kp_cap_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        kp_error_set(&err, KPROF_UNAVAILABLE,
                     r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                         ? "another CUPTI subscriber (Nsight Systems, Nsight Compute, a debugger, "
                           "the PyTorch profiler) holds CUPTI's callbacks, which the capture "
                           "needs (%s)"
                         : "CUPTI refused the capture's callbacks (%s)",
                     kp_cupti_result_text(r));
        kp_cap_fail_early(text, nth, &err);
        kp_error_clear(&err);
        return 0;
    }
    static const struct {
        CUpti_CallbackDomain domain;
        CUpti_CallbackId cbid;
    } cbs[] = {
        {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED},
        {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz},
    };
    for (size_t i = 0; i < sizeof cbs / sizeof cbs[0]; i++) {
        r = kp_cc.cuptiEnableCallback(1, kp_cap.subscriber, cbs[i].domain, cbs[i].cbid);
        if (r != CUPTI_SUCCESS && i < 3) { /* without modules or the plain launch: nothing */
            kp_error_set(&err, KPROF_UNAVAILABLE, "CUPTI refused the capture's callback %zu (%s)",
                         i, kp_cupti_result_text(r));
            kp_cc.cuptiUnsubscribe(kp_cap.subscriber);
            kp_cap_fail_early(text, nth, &err);
            kp_error_clear(&err);
            return 0;
        }
    }
    kp_cap.armed = 1; /* kp_cuda_exit calls kp_cuda_capture_exit */
    return 1;
}

void kp_cuda_capture_exit(void)
{
    if (!kp_cap.armed || atomic_exchange(&kp_cap.done, 1)) return;
    pthread_mutex_lock(&kp_cap_failure_lock);
    pthread_mutex_lock(&kp_cap.lock);
    kp_capture *cp = &kp_cap_failure;
    kp_capture_init(cp);
    kp_strlcpy(cp->api, "cuda", sizeof cp->api);
    kp_error err = {0};
    const kp_capture_pattern *p = &kp_cap.pattern;
    uint64_t most = 0;
    int32_t most_sym = -1;
    for (size_t i = 0; i < kp_cap.nsymbols; i++)
        if (kp_cap.symbols[i].launches > most) {
            most = kp_cap.symbols[i].launches;
            most_sym = (int32_t)i;
        }
    kp_strlcpy(cp->kernel, most_sym >= 0 ? kp_cap.symbols[most_sym].name : p->glob,
               sizeof cp->kernel);
    if (most_sym >= 0) kp_strlcpy(cp->symbol, kp_cap.symbols[most_sym].symbol, sizeof cp->symbol);
    cp->select = p->select;
    if (kp_cap.busy) {
        kp_error_set(&err, KPROF_BACKEND,
                     "the program ended while the capture of launch %llu was under way",
                     (unsigned long long)(most));
    } else if (most_sym < 0) {
        if (p->select != KP_CAPTURE_SLOWEST) cp->launch = p->nth;
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "no kernel matching '%s' was launched (launches replayed from a CUDA graph "
                     "do not pass the capture)",
                     p->glob);
    } else if (p->select != KP_CAPTURE_SLOWEST) {
        cp->launch = p->nth;
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "'%s' matched %s, launched %llu time%s: launch %llu never came", p->glob,
                     kp_cap.symbols[most_sym].name, (unsigned long long)most, most == 1 ? "" : "s",
                     (unsigned long long)p->nth);
    } else if (kp_cap.slowest_sym < 0) {
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "'%s' matched %s, but none of its %llu launches could be timed", p->glob,
                     kp_cap.symbols[most_sym].name, (unsigned long long)most);
    } else {
        cp->launch = kp_cap.slowest_launch;
        kp_strlcpy(cp->kernel, kp_cap.symbols[kp_cap.slowest_sym].name, sizeof cp->kernel);
        kp_strlcpy(cp->symbol, kp_cap.symbols[kp_cap.slowest_sym].symbol, sizeof cp->symbol);
        cp->window_s = p->window_s;
        cp->window_launches = kp_cap.timed;
        cp->slowest_ns = kp_cap.slowest_ns;
        cp->slowest_launch = kp_cap.slowest_launch;
        kp_error_set(&err, KPROF_NOT_FOUND,
                     "the slowest of %llu timed launches (launch %llu, %.3f ms) came inside the "
                     "%g s window, and no launch of it with that geometry followed the window "
                     "before the program ended: use a shorter --capture-window",
                     (unsigned long long)kp_cap.timed, (unsigned long long)kp_cap.slowest_launch,
                     (double)kp_cap.slowest_ns / 1e6, p->window_s);
    }
    pthread_mutex_unlock(&kp_cap.lock);
    kp_capture_announce(cp, NULL, &err);
    kp_error_clear(&err);
    kp_capture_release(cp);
    pthread_mutex_unlock(&kp_cap_failure_lock);
}
