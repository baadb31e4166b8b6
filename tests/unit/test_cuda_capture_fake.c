/*
 * test_cuda_capture_fake.c — the CUDA capture (src/inject/cuda_capture.c, `kprof trace
 * --capture`) driven through its CUPTI callbacks against fake_cuda_capture (one library standing
 * in for libcuda and libcupti: KPROF_CUDA_LIBRARY, KPROF_CUPTI_LIBRARY), whose "device memory"
 * is host memory the test registers: no GPU, no driver. The folder it writes is read back with
 * the lab's reader (collect/capture.h), so the writer's contract is checked too.
 *
 * Each scenario runs in a child process of its own (the capture is one per process):
 *   nth        @2 of a kernel with two pointer arguments (one 256 bytes into its allocation):
 *              launches of another kernel cost one name lookup in all; the module image, the
 *              geometry, the attributes, the arguments, the pointers and the before/after bytes;
 *              later launches leave it alone; captures.tsv says "ok".
 *   struct     a struct passed by value through `extra` holding two device pointers, a managed
 *              pointer and a texture handle; a pointer stored inside device memory: what is
 *              copied, and one not-captured line for each thing that is not.
 *   slowest    @slowest over a window: the slowest launch's symbol and geometry captured after
 *              it, with the window's figures.
 *   failures   a kernel never launched, a launch that never came, a launch that failed, a copy
 *              that failed, an unwritable folder, another CUPTI subscriber, a bad pattern: each
 *              a failed line, nothing left in the kernels folder.
 */
#define _GNU_SOURCE
#include "collect/capture.h"
#include "base/util.h"
#include "inject/cuda_capture.h"
#include "tests/unit/test.h"

#include <cupti.h>

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void (*fake_alloc)(void *base, size_t size, unsigned type, unsigned managed);
static void (*fake_function)(CUfunction f, const char *name, size_t n, const size_t *offset,
                             const size_t *size, int regs);
static CUpti_CallbackFunc (*fake_callback)(void);
static void (*fake_elapsed)(const float *ms, int n);
static void (*fake_fail)(const char *name, int code);
static int (*fake_calls)(const char *name);

static char root[1024];

static void load_fake(void)
{
    const char *lib = getenv("KPROF_CUDA_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    if (!h) {
        fprintf(stderr, "fake_cuda_capture not loaded (KPROF_CUDA_LIBRARY=%s): %s\n",
                lib ? lib : "", dlerror());
        exit(1);
    }
    *(void **)&fake_alloc = dlsym(h, "fake_cap_alloc");
    *(void **)&fake_function = dlsym(h, "fake_cap_function");
    *(void **)&fake_callback = dlsym(h, "fake_cap_callback");
    *(void **)&fake_elapsed = dlsym(h, "fake_cap_elapsed");
    *(void **)&fake_fail = dlsym(h, "fake_cap_fail");
    *(void **)&fake_calls = dlsym(h, "fake_cap_calls");
    if (!fake_alloc || !fake_function || !fake_callback || !fake_elapsed || !fake_fail ||
        !fake_calls) {
        fprintf(stderr, "fake_cuda_capture lacks its controls\n");
        exit(1);
    }
}

/* ---- helpers ---- */

/* A minimal 64-bit ELF image whose symbol table holds one function, `sym`. */
static size_t make_cubin(unsigned char *buf, size_t cap, const char *sym)
{
    memset(buf, 0, cap);
    size_t len = strlen(sym);
    size_t str_off = sizeof(Elf64_Ehdr), str_size = len + 2;
    size_t sym_off = (str_off + str_size + 7) & ~(size_t)7, sym_size = 2 * sizeof(Elf64_Sym);
    size_t sh_off = sym_off + sym_size, total = sh_off + 3 * sizeof(Elf64_Shdr);
    if (total > cap) return 0;
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = 190; /* EM_CUDA */
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = sh_off;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    memcpy(buf, &eh, sizeof eh);
    memcpy(buf + str_off + 1, sym, len);
    Elf64_Sym s = {.st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)};
    memcpy(buf + sym_off + sizeof(Elf64_Sym), &s, sizeof s);
    Elf64_Shdr sh[3] = {{0}};
    sh[1] = (Elf64_Shdr){.sh_type = SHT_SYMTAB,
                         .sh_offset = sym_off,
                         .sh_size = sym_size,
                         .sh_link = 2,
                         .sh_entsize = sizeof(Elf64_Sym)};
    sh[2] = (Elf64_Shdr){.sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = str_size};
    memcpy(buf + sh_off, sh, sizeof sh);
    return total;
}

static void module_loaded(uint32_t id, const void *image, size_t size)
{
    CUpti_ModuleResourceData m = {.moduleId = id, .cubinSize = size, .pCubin = image};
    CUpti_ResourceData r = {.context = (CUcontext)(uintptr_t)0xc0, .resourceDescriptor = &m};
    fake_callback()(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &r);
}

static void module_unloading(uint32_t id)
{
    CUpti_ModuleResourceData m = {.moduleId = id};
    CUpti_ResourceData r = {.context = (CUcontext)(uintptr_t)0xc0, .resourceDescriptor = &m};
    fake_callback()(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &r);
}

/* One launch: its enter callback, then `kernel` (the device's work, done by the test), then its
 * exit callback with the launch's result. */
static void launch(CUfunction f, const char *symbol, unsigned gx, unsigned gy, unsigned bx,
                   unsigned by, void **params, void **extra, CUresult result,
                   void (*kernel)(void *), void *ctx)
{
    cuLaunchKernel_params p = {.f = f,
                               .gridDimX = gx,
                               .gridDimY = gy,
                               .gridDimZ = 1,
                               .blockDimX = bx,
                               .blockDimY = by,
                               .blockDimZ = 1,
                               .sharedMemBytes = 0,
                               .hStream = NULL,
                               .kernelParams = params,
                               .extra = extra};
    uint64_t corr = 0;
    CUresult ok = CUDA_SUCCESS;
    CUpti_CallbackData cb = {.callbackSite = CUPTI_API_ENTER,
                             .functionName = "cuLaunchKernel",
                             .functionParams = &p,
                             .functionReturnValue = &ok,
                             .symbolName = symbol,
                             .context = (CUcontext)(uintptr_t)0xc0,
                             .correlationData = &corr};
    CUpti_CallbackFunc fn = fake_callback();
    fn(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
    if (kernel && result == CUDA_SUCCESS) kernel(ctx);
    cb.callbackSite = CUPTI_API_EXIT;
    cb.functionReturnValue = &result;
    fn(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Entries in a folder other than . and .. (-1: no folder). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* The scenario's folders: its kernels folder and its trace record folder (captures.tsv). */
static char kernels[4096], record[4096], log_path[4200];

static void scenario_env(const char *name, const char *pattern)
{
    snprintf(kernels, sizeof kernels, "%s/%s/kernels", root, name);
    snprintf(record, sizeof record, "%s/%s/record", root, name);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0777);
    mkdir(record, 0777);
    snprintf(log_path, sizeof log_path, "%s/" KP_CAPTURE_LOG_FILE, record);
    setenv("KPROF_CAPTURE", pattern, 1);
    setenv("KPROF_CAPTURE_DIR", kernels, 1);
    setenv("KPROF_TRACE_DIR", record, 1);
}

/* ---- nth ---- */

#define N 1024

static float ybuf[N + 64], xbuf[N];

static void axpy(void *ctx)
{
    float a = *(float *)ctx;
    for (int i = 0; i < N; i++)
        ybuf[64 + i] += a * xbuf[i];
}

static void scenario_nth(void)
{
    scenario_env("nth", "kp_axpy@2");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CHECK(fake_callback() != NULL);
    CUfunction faxpy = (CUfunction)(uintptr_t)0x1000, fother = (CUfunction)(uintptr_t)0x2000;
    size_t off[4] = {0, 8, 16, 20}, size[4] = {8, 8, 4, 4};
    fake_function(faxpy, "kp_axpy", 4, off, size, 32);
    size_t off1[1] = {0}, size1[1] = {8};
    fake_function(fother, "kp_other", 1, off1, size1, 16);
    fake_alloc(ybuf, sizeof ybuf, CU_MEMORYTYPE_DEVICE, 0);
    fake_alloc(xbuf, sizeof xbuf, CU_MEMORYTYPE_DEVICE, 0);
    for (int i = 0; i < N; i++) {
        xbuf[i] = (float)i;
        ybuf[64 + i] = 0.5f * (float)i;
    }
    static unsigned char other_image[512], image[512];
    size_t other_len = make_cubin(other_image, sizeof other_image, "kp_other");
    size_t len = make_cubin(image, sizeof image, "kp_axpy");
    static const char ptx[] = ".version 8.0\n.target sm_90\n.entry kp_unrelated()\n{\n}\n";
    module_loaded(1, other_image, other_len);
    module_loaded(2, image, len);
    module_loaded(3, ptx, sizeof ptx);

    float *y = ybuf + 64, *x = xbuf;
    float a = 1.0f;
    int n = N;
    void *params[4] = {&y, &x, &a, &n};
    /* Another kernel, its name asked once (no symbol name from CUPTI), then only probed. */
    void *other_params[1] = {&x};
    for (int i = 0; i < 3; i++)
        launch(fother, NULL, 4, 1, 256, 1, other_params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK_INT(fake_calls("cuFuncGetName"), 1);
    CHECK_INT(fake_calls("cuMemGetAddressRange"), 0);
    /* A module unloaded: function handles may be reused, so each is looked up again. */
    module_unloading(1);
    launch(fother, NULL, 4, 1, 256, 1, other_params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK_INT(fake_calls("cuFuncGetName"), 2);

    launch(faxpy, "kp_axpy", N / 256, 1, 256, 1, params, NULL, CUDA_SUCCESS, axpy, &a);
    static float before[N], after[N];
    memcpy(before, y, sizeof before);
    a = 2.0f;
    launch(faxpy, "kp_axpy", N / 256, 1, 256, 1, params, NULL, CUDA_SUCCESS, axpy, &a);
    memcpy(after, y, sizeof after);
    a = 3.0f;
    launch(faxpy, "kp_axpy", N / 256, 1, 256, 1, params, NULL, CUDA_SUCCESS, axpy, &a);
    CHECK_INT(fake_calls("cuFuncGetName"), 2); /* kp_axpy's name came from CUPTI */

    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_axpy@2", kernels);
    CHECK_INT(entries(kernels), 1);
    CHECK(kp_capture_is_folder(dir));
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_STR(c->api, "cuda");
    CHECK_STR(c->kernel, "kp_axpy");
    CHECK_STR(c->symbol, "kp_axpy");
    CHECK_INT(c->launch, 2);
    CHECK_INT(c->select, KP_CAPTURE_NTH);
    CHECK_STR(c->device, "Fake H200");
    CHECK_INT(c->pid, getpid());
    CHECK(c->held_ns >= 0);
    CHECK_STR(c->code_kind, "cubin");
    CHECK_INT(c->dims, 1);
    CHECK_INT(c->grid[0], N);
    CHECK_INT(c->grid[1], 1);
    CHECK_INT(c->tg[0], 256);
    CHECK_INT(c->dynamic_smem, 0);
    CHECK_INT(c->registers, 32);
    CHECK_INT(c->max_threads, 1024);
    CHECK_INT(c->after, 1);
    CHECK_INT(c->nargs, 4);
    CHECK_INT(c->args[0].size, 8);
    CHECK_INT(c->args[2].size, 4);
    CHECK_INT(c->args[3].size, 4);
    float a2 = 0;
    if (c->args[2].bytes) memcpy(&a2, c->args[2].bytes, 4);
    CHECK(a2 == 2.0f);
    CHECK_INT(c->nptrs, 2);
    CHECK_INT(c->nallocs, 2);
    CHECK_INT(c->nmissing, 0);
    for (int k = 0; k < c->nptrs; k++) {
        const kp_capture_ptr *p = &c->ptrs[k];
        CHECK_INT(p->at, 0);
        CHECK_INT(p->offset, p->arg == 0 ? 256 : 0);
        CHECK_INT(c->allocs[p->alloc].bytes, p->arg == 0 ? sizeof ybuf : sizeof xbuf);
        CHECK_INT(c->allocs[p->alloc].address, (uintptr_t)(p->arg == 0 ? ybuf : xbuf));
    }
    /* The states: y before launch 2 and after it; x unchanged. */
    for (int k = 0; k < c->nptrs && c->nptrs == 2; k++) {
        const kp_capture_ptr *p = &c->ptrs[k];
        void *b = NULL, *af = NULL;
        CHECK_INT(kp_capture_read_state(dir, c, (int)p->alloc, 0, &b, &err), KPROF_OK);
        CHECK_INT(kp_capture_read_state(dir, c, (int)p->alloc, 1, &af, &err), KPROF_OK);
        if (b && af) {
            if (p->arg == 0) {
                CHECK(memcmp((char *)b + 256, before, sizeof before) == 0);
                CHECK(memcmp((char *)af + 256, after, sizeof after) == 0);
            } else {
                CHECK(memcmp(b, xbuf, sizeof xbuf) == 0);
                CHECK(memcmp(af, xbuf, sizeof xbuf) == 0);
            }
        }
        free(b);
        free(af);
    }
    /* The code: the image whose symbol table names kp_axpy, as handed over. */
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, c->code_file);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        static unsigned char got[1024];
        size_t got_len = fread(got, 1, sizeof got, f);
        fclose(f);
        CHECK_INT(got_len, len);
        CHECK(memcmp(got, image, len) == 0);
    }
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
    /* The record folder's line: ok, no missing things. */
    char *log = read_text(log_path);
    CHECK(log != NULL);
    CHECK_CONTAINS(log, "kp_axpy@2");
    CHECK_CONTAINS(log, "\tok\t0");
    kp_cuda_capture_exit(); /* done: no second line */
    log = read_text(log_path);
    CHECK(log && strchr(log, '\n') == log + strlen(log) - 1);
}

/* ---- struct ---- */

typedef struct {
    float *in, *out;
    float *managed;
    uint64_t texture;
    int cols;
    float scale;
} pairs_arg;

static uint64_t inbuf[64], outbuf[64], managed_buf[16];

static void pairs(void *ctx)
{
    (void)ctx;
    for (int i = 0; i < 64; i++)
        outbuf[i] = inbuf[i] * 3;
}

static void scenario_struct(void)
{
    scenario_env("struct", "kp_pairs*");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x3000;
    size_t off[1] = {0}, size[1] = {sizeof(pairs_arg)};
    fake_function(f, "_Z8kp_pairs4Pair", 1, off, size, 40);
    fake_alloc(inbuf, sizeof inbuf, CU_MEMORYTYPE_DEVICE, 0);
    fake_alloc(outbuf, sizeof outbuf, CU_MEMORYTYPE_DEVICE, 0);
    fake_alloc(managed_buf, sizeof managed_buf, CU_MEMORYTYPE_DEVICE, 1);
    static unsigned char image[512];
    module_loaded(9, image, make_cubin(image, sizeof image, "_Z8kp_pairs4Pair"));
    for (int i = 0; i < 64; i++)
        inbuf[i] = (uint64_t)i + 1;
    inbuf[5] = (uint64_t)(uintptr_t)&outbuf[2]; /* a pointer stored in device memory */
    pairs_arg arg = {(float *)inbuf, (float *)outbuf, (float *)managed_buf, 77, 64, 1.5f};
    /* The parameters through `extra`, as a packed buffer. */
    size_t arg_size = sizeof arg;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &arg, CU_LAUNCH_PARAM_BUFFER_SIZE, &arg_size,
                     CU_LAUNCH_PARAM_END};
    static uint64_t before_out[64];
    memcpy(before_out, outbuf, sizeof outbuf);
    launch(f, "_Z8kp_pairs4Pair", 4, 4, 16, 16, NULL, extra, CUDA_SUCCESS, pairs, NULL);

    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_pairs@1", kernels);
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_STR(c->symbol, "_Z8kp_pairs4Pair");
    CHECK_CONTAINS(c->kernel, "kp_pairs");
    CHECK_INT(c->dims, 2);
    CHECK_INT(c->grid[0], 64);
    CHECK_INT(c->grid[1], 64);
    CHECK_INT(c->tg[1], 16);
    CHECK_INT(c->nargs, 1);
    CHECK_INT(c->args[0].size, sizeof arg);
    CHECK(c->args[0].bytes && memcmp(c->args[0].bytes, &arg, sizeof arg) == 0);
    CHECK_INT(c->nptrs, 2);
    CHECK_INT(c->nallocs, 2);
    int in_alloc = -1, out_alloc = -1;
    for (int k = 0; k < c->nptrs; k++) {
        CHECK_INT(c->ptrs[k].arg, 0);
        CHECK_INT(c->ptrs[k].offset, 0);
        if (c->ptrs[k].at == 0) in_alloc = (int)c->ptrs[k].alloc;
        if (c->ptrs[k].at == 8) out_alloc = (int)c->ptrs[k].alloc;
    }
    CHECK(in_alloc >= 0 && out_alloc >= 0 && in_alloc != out_alloc);
    if (out_alloc >= 0) {
        void *b = NULL, *af = NULL;
        CHECK_INT(kp_capture_read_state(dir, c, out_alloc, 0, &b, &err), KPROF_OK);
        CHECK_INT(kp_capture_read_state(dir, c, out_alloc, 1, &af, &err), KPROF_OK);
        CHECK(b && memcmp(b, before_out, sizeof before_out) == 0);
        CHECK(af && memcmp(af, outbuf, sizeof outbuf) == 0);
        free(b);
        free(af);
    }
    /* Not captured: the managed pointer, the texture, the pointer stored in `in`: one line
     * each. */
    CHECK_INT(c->nmissing, 3);
    char all[KP_CAPTURE_MAX_MISSING * 260] = "";
    for (int i = 0; i < c->nmissing; i++) {
        strcat(all, c->missing[i]);
        strcat(all, "\n");
    }
    CHECK_CONTAINS(all, "argument 0 (the word at +16) points into managed");
    CHECK_CONTAINS(all, "texture");
    CHECK_CONTAINS(all, "pointers stored in device memory are not relocated");
    char path[4300];
    snprintf(path, sizeof path, "%s/not-captured.txt", dir);
    char *text = read_text(path);
    CHECK(text != NULL);
    CHECK_CONTAINS(text, "managed");
    char *log = read_text(log_path);
    CHECK_CONTAINS(log, "\tok\t3");
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
}

/* ---- slowest ---- */

static void scenario_slowest(void)
{
    scenario_env("slowest", "kp_axpy@slowest");
    setenv("KPROF_CAPTURE_WINDOW", "2", 1);
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    size_t off[4] = {0, 8, 16, 20}, size[4] = {8, 8, 4, 4};
    fake_function(f, "kp_axpy", 4, off, size, 32);
    fake_alloc(ybuf, sizeof ybuf, CU_MEMORYTYPE_DEVICE, 0);
    fake_alloc(xbuf, sizeof xbuf, CU_MEMORYTYPE_DEVICE, 0);
    static unsigned char image[512];
    module_loaded(1, image, make_cubin(image, sizeof image, "kp_axpy"));
    float *y = ybuf + 64, *x = xbuf;
    float a = 1.0f;
    int n = N;
    void *params[4] = {&y, &x, &a, &n};
    /* Inside the window (back to back): the first launch is not timed (it would pay a lazy
     * module load), then launch 3 at the second geometry is the slowest. */
    float ms[3] = {1.0f, 5.0f, 2.0f};
    fake_elapsed(ms, 3);
    launch(f, "kp_axpy", 8, 1, 128, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK_INT(fake_calls("cuEventRecord"), 0);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    launch(f, "kp_axpy", 8, 1, 128, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK_INT(fake_calls("cuEventRecord"), 6);
    CHECK_INT(entries(kernels), -1);
    usleep(2100 * 1000);
    /* After it: the first geometry is passed over, the slowest one's is captured. */
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK_INT(entries(kernels), -1);
    launch(f, "kp_axpy", 8, 1, 128, 1, params, NULL, CUDA_SUCCESS, axpy, &a);
    CHECK_INT(fake_calls("cuEventRecord"), 6); /* no timing after the window */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_axpy@6", kernels);
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_INT(c->launch, 6);
    CHECK_INT(c->select, KP_CAPTURE_SLOWEST);
    CHECK_INT(c->grid[0], 1024);
    CHECK_INT(c->tg[0], 128);
    CHECK_INT(c->slowest_launch, 3);
    CHECK_INT(c->slowest_ns, 5000000);
    CHECK_INT(c->window_launches, 3);
    CHECK(c->window_s == 2.0);
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
}

/* ---- failures ---- */

static int failed_line(const char *needle)
{
    char *log = read_text(log_path);
    if (!log) {
        fprintf(stderr, "no %s\n", log_path);
        return 0;
    }
    if (!strstr(log, "\tfailed: ") || !strstr(log, needle)) {
        fprintf(stderr, "captures.tsv: %s\n(wanted a failed line with \"%s\")\n", log, needle);
        return 0;
    }
    return 1;
}

static void axpy_setup(CUfunction f, void **params, float **y, float **x, float *a, int *n)
{
    size_t off[4] = {0, 8, 16, 20}, size[4] = {8, 8, 4, 4};
    fake_function(f, "kp_axpy", 4, off, size, 32);
    fake_alloc(ybuf, sizeof ybuf, CU_MEMORYTYPE_DEVICE, 0);
    fake_alloc(xbuf, sizeof xbuf, CU_MEMORYTYPE_DEVICE, 0);
    *y = ybuf + 64;
    *x = xbuf;
    *a = 1.0f;
    *n = N;
    params[0] = y;
    params[1] = x;
    params[2] = a;
    params[3] = n;
    static unsigned char image[512];
    module_loaded(1, image, make_cubin(image, sizeof image, "kp_axpy"));
}

static void scenario_no_module(void)
{
    scenario_env("no_module", "kp_axpy");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    size_t off[4] = {0, 8, 16, 20}, size[4] = {8, 8, 4, 4};
    fake_function(f, "kp_axpy", 4, off, size, 32);
    static unsigned char image[512];
    module_loaded(1, image, make_cubin(image, sizeof image, "kp_something_else"));
    float *y = ybuf, *x = xbuf, a = 1;
    int n = N;
    void *params[4] = {&y, &x, &a, &n};
    fake_alloc(ybuf, sizeof ybuf, CU_MEMORYTYPE_DEVICE, 0);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK(failed_line("did not hand over the module image holding kp_axpy"));
    CHECK_INT(entries(kernels), 0); /* nothing half-written */
}

/* A module loaded lazily, inside the launch itself (a cuLibrary kernel's first launch): its
 * image is taken at the launch's exit. */
static void load_during_launch(void *ctx)
{
    (void)ctx;
    static unsigned char image[512];
    module_loaded(4, image, make_cubin(image, sizeof image, "kp_axpy"));
}

static void scenario_lazy_module(void)
{
    scenario_env("lazy_module", "kp_axpy");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    size_t off[4] = {0, 8, 16, 20}, size[4] = {8, 8, 4, 4};
    fake_function(f, "kp_axpy", 4, off, size, 32);
    fake_alloc(ybuf, sizeof ybuf, CU_MEMORYTYPE_DEVICE, 0);
    float *y = ybuf, *x = xbuf, a = 1;
    int n = N;
    void *params[4] = {&y, &x, &a, &n};
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, load_during_launch, NULL);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_axpy@1", kernels);
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_STR(c->code_kind, "cubin");
    CHECK_INT(c->select, KP_CAPTURE_FIRST);
    CHECK_INT(c->nallocs, 1); /* x is no device memory here: a plain value */
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
}

static void scenario_never(void)
{
    scenario_env("never", "kp_nothing_like_it");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    kp_cuda_capture_exit();
    CHECK(failed_line("no kernel matching 'kp_nothing_like_it' was launched"));
    CHECK_INT(entries(kernels), -1);
}

static void scenario_too_few(void)
{
    scenario_env("too_few", "kp_axpy@5");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    kp_cuda_capture_exit();
    CHECK(failed_line("launched 2 times: launch 5 never came"));
}

static void scenario_launch_failed(void)
{
    scenario_env("launch_failed", "kp_axpy");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_ERROR_INVALID_VALUE, NULL, NULL);
    CHECK(failed_line("the launch itself failed"));
    CHECK_INT(entries(kernels), 0); /* made, and nothing half-written left in it */
    kp_cuda_capture_exit();         /* said once */
    char *log = read_text(log_path);
    CHECK(log && strchr(log, '\n') == log + strlen(log) - 1);
}

static void scenario_copy_failed(void)
{
    scenario_env("copy_failed", "kp_axpy");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    fake_fail("cuMemcpyDtoH", CUDA_ERROR_ILLEGAL_ADDRESS);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK(failed_line("CUDA_ERROR_ILLEGAL_ADDRESS"));
    CHECK_INT(entries(kernels), 0);
}

static void scenario_unwritable(void)
{
    scenario_env("unwritable", "kp_axpy");
    char file[4200];
    snprintf(file, sizeof file, "%s/unwritable/a-file", root);
    FILE *fp = fopen(file, "w");
    if (fp) fclose(fp);
    char below[4300];
    snprintf(below, sizeof below, "%s/kernels", file);
    setenv("KPROF_CAPTURE_DIR", below, 1);
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    CHECK(failed_line("failed: "));
    CHECK_INT(fake_calls("cuMemcpyDtoH"), 0); /* nothing copied for a folder never made */
}

static void scenario_other_subscriber(void)
{
    scenario_env("other_subscriber", "kp_axpy");
    fake_fail("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    CHECK_INT(kp_cuda_capture_start(NULL), 0);
    CHECK(failed_line("another CUPTI subscriber"));
    kp_cuda_capture_exit(); /* not armed: nothing more */
}

static void scenario_collection_off(void)
{
    scenario_env("collection_off", "kp_axpy");
    kp_error why = {0};
    kp_error_set(&why, KPROF_UNAVAILABLE, "CUPTI could not be loaded: no libcupti");
    CHECK_INT(kp_cuda_capture_start(&why), 0);
    CHECK(failed_line("no libcupti"));
    kp_error_clear(&why);
}

static void scenario_bad_pattern(void)
{
    scenario_env("bad_pattern", "kp_axpy@0");
    CHECK_INT(kp_cuda_capture_start(NULL), 0);
    CHECK(failed_line("failed: "));
    unsetenv("KPROF_CAPTURE");
    CHECK_INT(kp_cuda_capture_start(NULL), 0); /* not asked: nothing, no line */
}

/* ---- no after-state, an allocation over the limit ---- */

static void scenario_no_after_max_bytes(void)
{
    scenario_env("no_after", "kp_axpy@1");
    setenv("KPROF_CAPTURE_AFTER", "0", 1);
    setenv("KPROF_CAPTURE_MAX_BYTES", "4096", 1); /* x (4 KiB) passes, y (4 KiB + 256) not */
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;
    void *params[4];
    float *y, *x, a;
    int n;
    axpy_setup(f, params, &y, &x, &a, &n);
    launch(f, "kp_axpy", 4, 1, 256, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_axpy@1", kernels);
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_INT(c->after, 0);
    CHECK_INT(c->nallocs, 1);
    CHECK_INT(c->nptrs, 1);
    CHECK_INT(c->ptrs[0].arg, 1);
    CHECK_STR(c->allocs[0].after, "");
    CHECK(c->allocs[0].before[0] != '\0');
    CHECK_INT(c->nmissing, 1);
    CHECK_CONTAINS(c->missing[0], "over --capture-max-bytes (4096)");
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
}

/* ---- images nvcc made ---- */

/* With KPROF_TEST_CUBIN / KPROF_TEST_FATBIN (what nvcc makes of tests/programs/
 * cuda_capture_app.cu, where the build has nvcc): a real image, found by the kernel's symbol
 * (the cubin's symbol table; the fatbin's bytes) among images that do not hold it. */
static void real_image(const char *name, const char *env, const char *kind)
{
    const char *path = getenv(env);
    if (!path || !*path) {
        fprintf(stderr, "scenario %s: skipped: %s not set (no nvcc in the build)\n", name, env);
        return;
    }
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    static unsigned char image[1 << 20];
    size_t len = fread(image, 1, sizeof image, f);
    fclose(f);
    CHECK(len > 0 && len < sizeof image);
    scenario_env(name, "*kp_cap_pairs*");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    static unsigned char other[512];
    module_loaded(1, other, make_cubin(other, sizeof other, "_Z12kp_cap_pairs4Pair_not"));
    module_loaded(2, image, len);
    CUfunction fn = (CUfunction)(uintptr_t)0x4000;
    size_t off[1] = {0}, size[1] = {24};
    fake_function(fn, "_Z12kp_cap_pairs4Pair", 1, off, size, 16);
    unsigned char arg[24] = {0};
    void *params[1] = {arg};
    launch(fn, "_Z12kp_cap_pairs4Pair", 16, 32, 16, 16, params, NULL, CUDA_SUCCESS, NULL, NULL);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/kp_cap_pairs@1", kernels);
    kp_capture *c = calloc(1, sizeof *c);
    kp_error err = {0};
    CHECK_INT(kp_capture_read(dir, c, &err), KPROF_OK);
    if (err.status) fprintf(stderr, "%s\n", err.message);
    CHECK_STR(c->code_kind, kind);
    CHECK_STR(c->kernel, "kp_cap_pairs(Pair)");
    char code[4300];
    snprintf(code, sizeof code, "%s/%s", dir, c->code_file);
    struct stat st;
    CHECK(stat(code, &st) == 0 && (size_t)st.st_size == len);
    kp_capture_release(c);
    free(c);
    kp_error_clear(&err);
}

static void scenario_real_cubin(void)
{
    real_image("real_cubin", "KPROF_TEST_CUBIN", "cubin");
}

static void scenario_real_fatbin(void)
{
    real_image("real_fatbin", "KPROF_TEST_FATBIN", "fatbin");
}

/* ---- main ---- */

/* ---- cost ---- */

/* A launch that does not match costs a table probe: its function is named once, however often
 * it is launched, and nothing is written. The time per launch is printed (not asserted). */
static void scenario_cost(void)
{
    scenario_env("cost", "kp_no_such_kernel*");
    CHECK_INT(kp_cuda_capture_start(NULL), 1);
    CUfunction f = (CUfunction)(uintptr_t)0x3000;
    size_t off[1] = {0}, size[1] = {8};
    fake_function(f, "kp_other", 1, off, size, 32);
    void *p = NULL;
    void *params[1] = {&p};
    enum { LAUNCHES = 200000 };
    uint64_t t0 = kp_now_ns();
    for (int i = 0; i < LAUNCHES; i++)
        launch(f, NULL, 1, 1, 32, 1, params, NULL, CUDA_SUCCESS, NULL, NULL);
    uint64_t t1 = kp_now_ns();
    CHECK_INT(fake_calls("cuFuncGetName"), 1);
    CHECK_INT(fake_calls("cuCtxSynchronize"), 0);
    CHECK_INT(fake_calls("cuEventRecord"), 0);
    CHECK_INT(entries(kernels), -1);
    fprintf(stderr, "cost: %.1f ns per launch that does not match (fake CUPTI, this machine)\n",
            (double)(t1 - t0) / LAUNCHES);
}

static int run(const char *name, void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        load_fake();
        fn();
        fflush(NULL);
        _exit(kp_test_failures ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) fprintf(stderr, "scenario %s failed (status %d)\n", name, status);
    return ok ? 0 : 1;
}

int main(void)
{
    snprintf(root, sizeof root, "%s/kprof-cucap-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) return 1;
    unsetenv("KPROF_CAPTURE_WINDOW");
    unsetenv("KPROF_CAPTURE_AFTER");
    unsetenv("KPROF_CAPTURE_MAX_BYTES");
    unsetenv("KPROF_CAPTURE_FORCE");
    int failed = 0;
    failed += run("nth", scenario_nth);
    failed += run("struct", scenario_struct);
    failed += run("slowest", scenario_slowest);
    failed += run("no_after_max_bytes", scenario_no_after_max_bytes);
    failed += run("real_cubin", scenario_real_cubin);
    failed += run("real_fatbin", scenario_real_fatbin);
    failed += run("no_module", scenario_no_module);
    failed += run("lazy_module", scenario_lazy_module);
    failed += run("cost", scenario_cost);
    failed += run("never", scenario_never);
    failed += run("too_few", scenario_too_few);
    failed += run("launch_failed", scenario_launch_failed);
    failed += run("copy_failed", scenario_copy_failed);
    failed += run("unwritable", scenario_unwritable);
    failed += run("other_subscriber", scenario_other_subscriber);
    failed += run("collection_off", scenario_collection_off);
    failed += run("bad_pattern", scenario_bad_pattern);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (!failed && system(cmd) != 0) return 1;
    return failed ? 1 : 0;
}
