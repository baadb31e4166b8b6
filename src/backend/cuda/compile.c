/*
 * compile.c — programs for the CUDA backend: CUDA C++ compiled with NVRTC to a cubin for the
 * device (PTX kept beside it), .ptx JIT-loaded and .cubin loaded as they are, each into a module
 * of the device's context with the JIT's logs. A program's metadata comes from the module itself
 * (cuModuleEnumerateFunctions, cuFuncGetParamInfo): kernels named the way a user types them,
 * parameters typed from the source's declarations where it has them (or those of the .cu beside
 * a .ptx or .cubin), and each kernel's compile-time block rule from the PTX or cubin.
 */
#define _GNU_SOURCE
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_parse.h"
#include "core/demangle.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_CUDA_JIT_LOG_BYTES 16384

/* ---- modules ----------------------------------------------------------------------------- */

/* Load a cubin or NUL-terminated PTX into the current context, with the JIT's logs. On
 * success *info_log (when asked for) is the JIT's info log or NULL. `what` names the image in
 * messages ("k.ptx", "the cached binary"). */
static kprof_status kp_cuda_module_load(kp_device *dev, const char *what, int ptx,
                                        const void *image, CUmodule *module, char **info_log,
                                        kp_error *err)
{
    *module = NULL;
    if (info_log) *info_log = NULL;
    kprof_status st = KPROF_OK;
    char *error_log = calloc(1, KP_CUDA_JIT_LOG_BYTES);
    char *info = calloc(1, KP_CUDA_JIT_LOG_BYTES);
    if (!error_log || !info) {
        st = kp_error_nomem(err);
        goto done;
    }
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)(KP_CUDA_JIT_LOG_BYTES - 1), info,
                      (void *)(uintptr_t)(KP_CUDA_JIT_LOG_BYTES - 1)};
    CUresult rc = kp_cu.cuModuleLoadDataEx(module, image, 4, options, values);
    if (rc != CUDA_SUCCESS) {
        *module = NULL;
        char text[320];
        kp_cuda_error_text(rc, text, sizeof text);
        kprof_status kind = kp_cuda_result_status(rc);
        if (kind == KPROF_COMPILE) {
            if (ptx)
                st = kp_error_set(err, KPROF_COMPILE, "%s: PTX JIT compile failed: %s", what, text);
            else
                st = kp_error_set(err, KPROF_COMPILE,
                                  "%s: the driver cannot load this cubin: %s (the device is "
                                  "sm_%d)",
                                  what, text, dev->arch);
            kp_rstrip(error_log);
            if (error_log[0]) {
                kp_error_take_log(err, error_log);
                error_log = NULL;
            }
        } else {
            st = kp_cuda_fail(dev, err, "cuModuleLoadDataEx", rc);
        }
        goto done;
    }
    kp_rstrip(info);
    if (info_log && info[0]) {
        *info_log = info;
        info = NULL;
    }
done:
    free(error_log);
    free(info);
    return st;
}

/* ---- kernels and parameters ------------------------------------------------------------- */

typedef struct kp_cuda_naming {
    const kp_cuda_decls *decls; /* from the source; may be empty */
    const char *entry;          /* what the user asked for ("" = nothing) */
    const char *lowered;        /* NVRTC's symbol for entry when registered, else "" */
} kp_cuda_naming;

static kprof_status kp_cuda_kernel_meta(CUfunction f, const kp_cuda_naming *nm, kp_kernel_meta *m,
                                        int *order, kp_error *err)
{
    memset(m, 0, sizeof *m);
    *order = 1 << 30;
    kprof_status st = KPROF_OK;
    kp_cuda_decl_param *dparams = NULL;
    int ndparams = 0;
    char *demangled = NULL, *ptext = NULL;
    const char *symbol = NULL;
    CUresult rc = kp_cu.cuFuncGetName(&symbol, f);
    if (rc != CUDA_SUCCESS || !symbol) {
        st = kp_cuda_fail(NULL, err, "cuFuncGetName", rc);
        goto done;
    }
    kp_strlcpy(m->symbol, symbol, sizeof m->symbol);

    /* Count the parameters: the driver answers INVALID_VALUE past the last one. */
    int count = 0;
    for (; count < 4096; count++) {
        size_t offset = 0, size = 0;
        rc = kp_cu.cuFuncGetParamInfo(f, (size_t)count, &offset, &size);
        if (rc != CUDA_SUCCESS) break;
    }
    m->nparams = (rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_SUCCESS) ? count : -1;

    /* The name a user types. */
    demangled = malloc(2048);
    ptext = malloc(2048);
    if (!demangled || !ptext) {
        st = kp_error_nomem(err);
        goto done;
    }
    int mangled = kp_demangle(symbol, demangled, 2048);
    char user[256] = "";
    ptext[0] = '\0';
    if (mangled && !kp_cuda_split_demangled(demangled, user, sizeof user, ptext, 2048))
        kp_strlcpy(user, demangled, sizeof user);
    if (nm->lowered[0] && strcmp(symbol, nm->lowered) == 0)
        kp_strlcpy(m->name, nm->entry, sizeof m->name);
    else if (mangled)
        kp_strlcpy(m->name, user, sizeof m->name);
    else
        kp_strlcpy(m->name, symbol, sizeof m->name);

    if (m->nparams <= 0) goto done;
    m->params = calloc((size_t)m->nparams, sizeof *m->params);
    if (!m->params) {
        st = kp_error_nomem(err);
        goto done;
    }
    /* Types from the mangled name, names (and the spelling the user wrote) from the source. */
    if (mangled) {
        st = kp_cuda_parse_param_list(ptext, strlen(ptext), 0, &dparams, &ndparams, err);
        if (st != KPROF_OK) goto done;
    }
    int have_types = mangled && ndparams == m->nparams;
    char pointers[KP_SPEC_MAX_ARGS * 16 + 1];
    if (have_types && m->nparams < (int)sizeof pointers) {
        for (int i = 0; i < m->nparams; i++)
            pointers[i] = dparams[i].pointer ? '1' : '0';
        pointers[m->nparams] = '\0';
    } else {
        have_types = 0;
    }
    char base[256];
    kp_cuda_base_name(mangled ? user : symbol, base, sizeof base);
    const kp_cuda_decl *decl =
        kp_cuda_decl_find(nm->decls, base, m->nparams, have_types ? pointers : NULL);
    if (decl) *order = decl->order;
    /* A template instance's source spells its parameters with template parameters ("T*"); the
     * mangled name has the concrete types. */
    int instance = mangled && strchr(user, '<') != NULL;
    for (int i = 0; i < m->nparams; i++) {
        kp_param *p = &m->params[i];
        size_t offset = 0, size = 0;
        if (kp_cu.cuFuncGetParamInfo(f, (size_t)i, &offset, &size) == CUDA_SUCCESS)
            p->size = (uint32_t)size;
        const kp_cuda_decl_param *src = decl ? &decl->params[i] : NULL;
        const kp_cuda_decl_param *typed = have_types ? &dparams[i] : NULL;
        if (!src && !typed) {
            p->kind = KP_PARAM_UNKNOWN;
            continue;
        }
        if (src) kp_strlcpy(p->name, src->name, sizeof p->name);
        const kp_cuda_decl_param *type_from = src && !(instance && typed) ? src : typed;
        kp_strlcpy(p->type_name, type_from->type_name, sizeof p->type_name);
        int pointer = src ? src->pointer : typed->pointer;
        p->kind = pointer ? KP_PARAM_GLOBAL : KP_PARAM_VALUE;
    }
done:
    free(dparams);
    free(demangled);
    free(ptext);
    if (st != KPROF_OK) {
        free(m->params);
        m->params = NULL;
    }
    return st;
}

/* Names a user can type for every kernel: overloads, which share a name, go by their symbol
 * (a plain identifier, so --entry takes it as it is), and a plain identifier the user asked for
 * names the one kernel whose unqualified name it is ("twice" for ns::twice). */
static void kp_cuda_meta_names(kp_program_meta *meta, const kp_cuda_naming *nm, char *duplicate)
{
    for (int i = 0; i < meta->nkernels; i++) {
        duplicate[i] = 0;
        for (int j = 0; j < meta->nkernels; j++)
            if (j != i && strcmp(meta->kernels[j].name, meta->kernels[i].name) == 0)
                duplicate[i] = 1;
    }
    for (int i = 0; i < meta->nkernels; i++)
        if (duplicate[i])
            kp_strlcpy(meta->kernels[i].name, meta->kernels[i].symbol,
                       sizeof meta->kernels[i].name);
    if (!kp_cuda_is_identifier(nm->entry) || kp_program_meta_find(meta, nm->entry)) return;
    kp_kernel_meta *only = NULL;
    for (int i = 0; i < meta->nkernels; i++) {
        char base[256];
        kp_cuda_base_name(meta->kernels[i].name, base, sizeof base);
        if (strcmp(base, nm->entry) != 0) continue;
        if (only) return; /* ambiguous: leave the full names */
        only = &meta->kernels[i];
    }
    if (only) kp_strlcpy(only->name, nm->entry, sizeof only->name);
}

static kprof_status kp_cuda_program_meta(CUmodule module, const kp_cuda_naming *nm,
                                         kp_program_meta *meta, kp_error *err)
{
    memset(meta, 0, sizeof *meta);
    kprof_status st = KPROF_OK;
    CUfunction *fns = NULL;
    int *order = NULL;
    char *duplicate = NULL;
    unsigned int n = 0;
    CUresult rc = kp_cu.cuModuleGetFunctionCount(&n, module);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(NULL, err, "cuModuleGetFunctionCount", rc);
        goto done;
    }
    if (n == 0) goto done;
    fns = calloc(n, sizeof *fns);
    order = calloc(n, sizeof *order);
    duplicate = calloc(n, sizeof *duplicate);
    meta->kernels = calloc(n, sizeof *meta->kernels);
    if (!fns || !order || !duplicate || !meta->kernels) {
        st = kp_error_nomem(err);
        goto done;
    }
    rc = kp_cu.cuModuleEnumerateFunctions(fns, n, module);
    if (rc != CUDA_SUCCESS) {
        st = kp_cuda_fail(NULL, err, "cuModuleEnumerateFunctions", rc);
        goto done;
    }
    for (unsigned int i = 0; i < n; i++) {
        st = kp_cuda_kernel_meta(fns[i], nm, &meta->kernels[meta->nkernels], &order[meta->nkernels],
                                 err);
        if (st != KPROF_OK) goto done;
        meta->nkernels++;
    }
    kp_cuda_meta_names(meta, nm, duplicate);
    /* Source order where the source declares them, then by name: stable across runs. */
    for (int i = 1; i < meta->nkernels; i++) {
        for (int j = i; j > 0; j--) {
            kp_kernel_meta *a = &meta->kernels[j - 1], *b = &meta->kernels[j];
            if (order[j - 1] < order[j] ||
                (order[j - 1] == order[j] && strcmp(a->name, b->name) <= 0))
                break;
            kp_kernel_meta t = *a;
            *a = *b;
            *b = t;
            int o = order[j - 1];
            order[j - 1] = order[j];
            order[j] = o;
        }
    }
done:
    if (st != KPROF_OK) kp_program_meta_free(meta);
    free(fns);
    free(order);
    free(duplicate);
    return st;
}

/* ---- building ---------------------------------------------------------------------------- */

static char *kp_cuda_nvrtc_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (kp_nvrtc.nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (kp_nvrtc.nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    log[n] = '\0';
    kp_rstrip(log);
    if (!log[0]) {
        free(log);
        return NULL;
    }
    return log;
}

static kprof_status kp_cuda_nvrtc_fail(kp_error *err, const char *path, const char *what,
                                       nvrtcResult rc)
{
    char text[160];
    kp_cuda_nvrtc_error_text(rc, text, sizeof text);
    kprof_status st = rc == NVRTC_ERROR_OUT_OF_MEMORY ? KPROF_NOMEM : KPROF_BACKEND;
    return kp_error_set(err, st, "cuda: %s: %s failed: %s", path, what, text);
}

/* The -arch option for this device: its own sm_XY when NVRTC knows it, else the newest one
 * below of the same major version (binary compatible), else PTX for the driver to JIT. */
static kprof_status kp_cuda_arch_option(kp_device *dev, const char *path, char *out, size_t n,
                                        kp_error *err)
{
    int count = 0;
    int *archs = NULL;
    kprof_status st = KPROF_OK;
    nvrtcResult rc = kp_nvrtc.nvrtcGetNumSupportedArchs(&count);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, path, "nvrtcGetNumSupportedArchs", rc);
        goto done;
    }
    archs = calloc((size_t)(count > 0 ? count : 1), sizeof *archs);
    if (!archs) {
        st = kp_error_nomem(err);
        goto done;
    }
    rc = kp_nvrtc.nvrtcGetSupportedArchs(archs);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, path, "nvrtcGetSupportedArchs", rc);
        goto done;
    }
    int arch = kp_cuda_pick_arch(archs, count, dev->arch);
    if (arch < 0) {
        int major = 0, minor = 0;
        kp_nvrtc.nvrtcVersion(&major, &minor);
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "cuda: %s: NVRTC %d.%d cannot compile for sm_%d or any older "
                          "architecture (its oldest is sm_%d)",
                          path, major, minor, dev->arch, count > 0 ? archs[0] : 0);
        goto done;
    }
    if (arch / 10 == dev->arch / 10)
        snprintf(out, n, "-arch=sm_%d", arch);
    else
        snprintf(out, n, "-arch=compute_%d", arch);
done:
    free(archs);
    return st;
}

/* NVRTC: CUDA C++ -> cubin (or PTX) into products; lowered[] gets the entry's symbol when it
 * was registered as a name expression. */
static kprof_status kp_cuda_compile(kp_device *dev, const kp_source *src, kp_build_output *products,
                                    char *lowered, size_t lowered_n, kp_error *err)
{
    kprof_status st = KPROF_OK;
    nvrtcResult rc = NVRTC_SUCCESS;
    nvrtcProgram prog = NULL;
    char *text = NULL, *words_copy = NULL, *include_dir = NULL, *log = NULL;
    const char **words = NULL, **argv = NULL;
    int nwords = 0, argc = 0;
    char arch[32];
    lowered[0] = '\0';
    kp_error load = {0};
    if (kp_cuda_nvrtc_load(&load) != KPROF_OK) {
        st = kp_error_set(err, KPROF_UNAVAILABLE,
                          "cuda: cannot compile %s: %s (NVRTC compiles .cu sources; .ptx and "
                          ".cubin files run without it)",
                          src->path, load.message);
        kp_error_clear(&load);
        goto done;
    }
    st = kp_cuda_split_options(src->options, &words_copy, &words, &nwords, err);
    if (st != KPROF_OK) goto done;
    /* The user's own -arch wins over the device's. */
    int user_arch = 0;
    for (int i = 0; i < nwords; i++)
        if (strncmp(words[i], "-arch", 5) == 0 || strncmp(words[i], "--gpu-architecture", 18) == 0)
            user_arch = 1;
    if (!user_arch) {
        st = kp_cuda_arch_option(dev, src->path, arch, sizeof arch, err);
        if (st != KPROF_OK) goto done;
    }
    text = malloc(src->len + 1);
    argv = calloc((size_t)nwords + 4, sizeof *argv);
    if (!text || !argv) {
        st = kp_error_nomem(err);
        goto done;
    }
    memcpy(text, src->text, src->len);
    text[src->len] = '\0';
    if (!user_arch) argv[argc++] = arch;
    argv[argc++] = "-lineinfo";
    /* #include "x.h" beside the source, as nvcc finds it. */
    const char *slash = strrchr(src->path, '/');
    if (slash) {
        kp_str inc = {0};
        kp_str_printf(&inc, "-I%.*s", (int)(slash - src->path), src->path);
        include_dir = kp_str_take(&inc);
        if (!include_dir) {
            st = kp_error_nomem(err);
            goto done;
        }
        argv[argc++] = include_dir;
    }
    for (int i = 0; i < nwords; i++)
        argv[argc++] = words[i];

    rc = kp_nvrtc.nvrtcCreateProgram(&prog, text, src->path, 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) {
        prog = NULL;
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcCreateProgram", rc);
        goto done;
    }
    int registered = src->entry && src->entry[0] && !kp_cuda_is_identifier(src->entry);
    if (registered) {
        rc = kp_nvrtc.nvrtcAddNameExpression(prog, src->entry);
        if (rc != NVRTC_SUCCESS) {
            char t[160];
            kp_cuda_nvrtc_error_text(rc, t, sizeof t);
            st = kp_error_set(err, KPROF_INVALID, "--entry '%s' is not a name NVRTC accepts: %s",
                              src->entry, t);
            goto done;
        }
    }
    kp_str used = {0};
    for (int i = 0; i < argc; i++)
        kp_str_printf(&used, "%s%s", i ? " " : "", argv[i]);
    products->options = kp_str_take(&used);
    rc = kp_nvrtc.nvrtcCompileProgram(prog, argc, argv);
    log = kp_cuda_nvrtc_log(prog);
    if (rc != NVRTC_SUCCESS) {
        if (rc == NVRTC_ERROR_COMPILATION) {
            kp_error_set(err, KPROF_COMPILE, "%s: NVRTC compile failed", src->path);
        } else {
            char t[160];
            kp_cuda_nvrtc_error_text(rc, t, sizeof t);
            kp_error_set(err, KPROF_COMPILE, "%s: NVRTC compile failed: %s", src->path, t);
        }
        kp_error_take_log(err, log);
        log = NULL;
        st = KPROF_COMPILE;
        goto done;
    }
    size_t ptx_size = 0, cubin_size = 0;
    rc = kp_nvrtc.nvrtcGetPTXSize(prog, &ptx_size);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetPTXSize", rc);
        goto done;
    }
    products->ptx = calloc(1, ptx_size + 1);
    if (!products->ptx) {
        st = kp_error_nomem(err);
        goto done;
    }
    rc = kp_nvrtc.nvrtcGetPTX(prog, products->ptx);
    if (rc != NVRTC_SUCCESS) {
        st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetPTX", rc);
        goto done;
    }
    /* Compiled for a virtual architecture, there is no cubin: size 0 (or an error). */
    if (kp_nvrtc.nvrtcGetCUBINSize(prog, &cubin_size) != NVRTC_SUCCESS) cubin_size = 0;
    if (cubin_size > 0) {
        products->binary = malloc(cubin_size);
        if (!products->binary) {
            st = kp_error_nomem(err);
            goto done;
        }
        rc = kp_nvrtc.nvrtcGetCUBIN(prog, (char *)products->binary);
        if (rc != NVRTC_SUCCESS) {
            st = kp_cuda_nvrtc_fail(err, src->path, "nvrtcGetCUBIN", rc);
            goto done;
        }
        products->binary_len = cubin_size;
        products->binary_ext = "cubin";
    } else {
        size_t len = strlen(products->ptx) + 1;
        products->binary = malloc(len);
        if (!products->binary) {
            st = kp_error_nomem(err);
            goto done;
        }
        memcpy(products->binary, products->ptx, len);
        products->binary_len = len;
        products->binary_ext = "ptx";
    }
    if (registered) {
        const char *low = NULL;
        rc = kp_nvrtc.nvrtcGetLoweredName(prog, src->entry, &low);
        if (rc == NVRTC_SUCCESS && low) kp_strlcpy(lowered, low, lowered_n);
    }
    products->log = log;
    log = NULL;
done:
    if (prog) kp_nvrtc.nvrtcDestroyProgram(&prog);
    free(log);
    free(text);
    free(words_copy);
    free(words);
    free(argv);
    free(include_dir);
    return st;
}

/* The image a .ptx or .cubin file gives: its bytes, PTX with a terminating NUL. */
static kprof_status kp_cuda_copy_image(const kp_source *src, kp_build_output *products,
                                       kp_error *err)
{
    int ptx = src->lang == KP_LANG_PTX;
    size_t len = src->len;
    if (ptx && (len == 0 || src->text[len - 1] != '\0')) len++;
    if (len == 0) return kp_error_set(err, KPROF_INVALID, "%s: the file is empty", src->path);
    kp_error bad = {0}; /* holds no log: nothing to clear */
    if (!ptx && kp_cuda_image_check((const unsigned char *)src->text, src->len, &bad) != KPROF_OK)
        return kp_error_set(err, KPROF_INVALID, "%s: %s", src->path, bad.message);
    products->binary = calloc(1, len);
    if (!products->binary) return kp_error_nomem(err);
    memcpy(products->binary, src->text, src->len);
    products->binary_len = len;
    products->binary_ext = ptx ? "ptx" : "cubin";
    return KPROF_OK;
}

/* A .ptx or .cubin names no parameters. When the .cu it came from sits beside it under the
 * same stem (kprof's dumps leave it so), its declarations name and type them. KPROF_OK (also
 * with no such .cu: decls stay empty), or KPROF_NOMEM with err filled. */
static kprof_status kp_cuda_sibling_decls(const char *path, kp_cuda_decls *decls, kp_error *err)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash)) return KPROF_OK;
    kp_str cu = {0};
    kp_str_printf(&cu, "%.*s.cu", (int)(dot - path), path);
    if (cu.failed) {
        kp_str_free(&cu);
        return kp_error_nomem(err);
    }
    char *text = NULL;
    size_t len = 0;
    kprof_status rc = KPROF_OK;
    if (kp_file_read(cu.data, &text, &len, NULL) == KPROF_OK)
        rc = kp_cuda_parse_kernels(text, len, decls, err);
    free(text);
    kp_str_free(&cu);
    return rc;
}

/* Each kernel's compile-time block rule (.reqntid or .maxntid), read from the PTX NVRTC made or
 * the .ptx given, else from the cubin's .nv.info records. cuFuncGetAttribute cannot say it:
 * CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK is one number that folds .maxntid, .reqntid and the
 * register limit together, with no shape and no word on whether the size is required or only a
 * ceiling; the CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_* attributes are about clusters of blocks,
 * not a block's threads. A fatbin gives nothing here: the driver's number still bounds it. */
static void kp_cuda_meta_tg_rules(const kp_build_output *products, kp_program_meta *meta)
{
    const char *ptx = products->ptx;
    size_t ptx_len = ptx ? strlen(ptx) : 0;
    int is_ptx = products->binary_ext && strcmp(products->binary_ext, "ptx") == 0;
    if (!ptx && is_ptx && products->binary) {
        ptx = (const char *)products->binary;
        ptx_len = strnlen(ptx, products->binary_len);
    }
    for (int i = 0; i < meta->nkernels; i++) {
        kp_kernel_meta *k = &meta->kernels[i];
        int rule = ptx ? kp_cuda_ptx_ntid(ptx, ptx_len, k->symbol, k->tg_rule_size)
                       : kp_cuda_cubin_ntid(products->binary, products->binary_len, k->symbol,
                                            k->tg_rule_size);
        k->tg_rule = rule == KP_CUDA_NTID_REQUIRED ? KP_TG_RULE_REQUIRED
                     : rule == KP_CUDA_NTID_MAX    ? KP_TG_RULE_MAX
                                                   : KP_TG_RULE_NONE;
    }
}

/* A program for a loaded module, keeping a copy of the image it was loaded from (PC sampling
 * reads the cubin's line table, and loads the image again: pcsample.c). */
static kp_program *kp_cuda_program_new(kp_device *dev, CUmodule module, const void *image,
                                       size_t len, int ptx)
{
    kp_program *p = calloc(1, sizeof *p);
    unsigned char *copy = malloc(len ? len : 1);
    if (!p || !copy) {
        free(p);
        free(copy);
        return NULL;
    }
    memcpy(copy, image, len);
    p->dev = dev;
    p->module = module;
    p->image = copy;
    p->image_len = len;
    p->image_ptx = ptx;
    return p;
}

kprof_status kp_cuda_build(kp_device *dev, const kp_source *src, kp_program **out,
                           kp_build_output *products, kp_error *err)
{
    *out = NULL;
    memset(products, 0, sizeof *products);
    CUmodule module = NULL;
    kp_program *p = NULL;
    kp_cuda_decls decls = {0};
    char lowered[1024] = "";
    char *jit_log = NULL;
    kprof_status st = KPROF_OK;
    if (src->lang == KP_LANG_OPENCL_C) {
        st = kp_error_set(err, KPROF_INVALID,
                          "cuda: %s is OpenCL C; the cuda backend runs .cu, .ptx and .cubin",
                          src->path);
        goto fail;
    }
    st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto fail;
    if (src->lang == KP_LANG_CUDA) {
        st = kp_cuda_compile(dev, src, products, lowered, sizeof lowered, err);
        if (st != KPROF_OK) goto fail;
        st = kp_cuda_parse_kernels(src->text, src->len, &decls, err);
        if (st != KPROF_OK) goto fail;
    } else {
        st = kp_cuda_copy_image(src, products, err);
        if (st != KPROF_OK) goto fail;
        st = kp_cuda_sibling_decls(src->path, &decls, err);
        if (st != KPROF_OK) goto fail;
    }
    int ptx = strcmp(products->binary_ext, "ptx") == 0;
    st = kp_cuda_module_load(dev, src->lang == KP_LANG_CUDA ? "NVRTC output" : src->path, ptx,
                             products->binary, &module, &jit_log, err);
    if (st != KPROF_OK) goto fail;
    if (jit_log && !products->log) {
        products->log = jit_log;
        jit_log = NULL;
    }
    kp_cuda_naming nm = {
        .decls = &decls, .entry = src->entry ? src->entry : "", .lowered = lowered};
    st = kp_cuda_program_meta(module, &nm, &products->meta, err);
    if (st != KPROF_OK) goto fail;
    kp_cuda_meta_tg_rules(products, &products->meta);
    p = kp_cuda_program_new(dev, module, products->binary, products->binary_len, ptx);
    if (!p) {
        st = kp_error_nomem(err);
        goto fail;
    }
    *out = p;
    kp_cuda_decls_free(&decls);
    free(jit_log);
    return KPROF_OK;
fail:
    if (module) kp_cu.cuModuleUnload(module);
    kp_cuda_decls_free(&decls);
    free(jit_log);
    kp_build_output_free(products);
    return st;
}

kprof_status kp_cuda_load_binary(kp_device *dev, const unsigned char *binary, size_t len,
                                 kp_program **out, kp_error *err)
{
    *out = NULL;
    CUmodule module = NULL;
    kp_program *p = NULL;
    kprof_status st = kp_cuda_enter(dev, err);
    if (st != KPROF_OK) goto fail;
    if (len == 0) {
        st = kp_error_set(err, KPROF_CORRUPT, "cuda: the cached binary is empty");
        goto fail;
    }
    /* PTX is kept with its NUL; a cubin (or fatbin) is handed to the driver as it is. */
    int ptx = binary[len - 1] == '\0' && !(len >= 4 && memcmp(binary, "\177ELF", 4) == 0);
    st = kp_cuda_module_load(dev, "the cached binary", ptx, binary, &module, NULL, err);
    if (st != KPROF_OK) goto fail;
    p = kp_cuda_program_new(dev, module, binary, len, ptx);
    if (!p) {
        st = kp_error_nomem(err);
        goto fail;
    }
    *out = p;
    return KPROF_OK;
fail:
    if (module) kp_cu.cuModuleUnload(module);
    return st;
}

void kp_cuda_program_release(kp_program *p)
{
    if (!p) return;
    if (!p->dev->poisoned && kp_cu.cuCtxSetCurrent(p->dev->context) == CUDA_SUCCESS)
        kp_cu.cuModuleUnload(p->module);
    free(p->image);
    free(p);
}
