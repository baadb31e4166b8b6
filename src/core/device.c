/*
 * device.c — the small functions over the plain device and kernel records (see device.h).
 */
#include "core/device.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kp_device_fact_add(kp_device_info *info, const char *key, const char *label, int numeric,
                        const char *fmt, ...)
{
    if (info->nfacts >= KP_MAX_FACTS) return;
    kp_fact *f = &info->facts[info->nfacts++];
    kp_strlcpy(f->key, key, sizeof f->key);
    kp_strlcpy(f->label, label, sizeof f->label);
    f->numeric = numeric;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
}

void kp_program_meta_free(kp_program_meta *meta)
{
    if (!meta) return;
    for (int i = 0; i < meta->nkernels; i++)
        free(meta->kernels[i].params);
    free(meta->kernels);
    meta->kernels = NULL;
    meta->nkernels = 0;
}

void kp_build_output_free(kp_build_output *out)
{
    if (!out) return;
    free(out->binary);
    free(out->ptx);
    free(out->log);
    free(out->options);
    kp_program_meta_free(&out->meta);
    memset(out, 0, sizeof *out);
}

const kp_kernel_meta *kp_program_meta_find(const kp_program_meta *meta, const char *name)
{
    for (int i = 0; i < meta->nkernels; i++)
        if (strcmp(meta->kernels[i].name, name) == 0) return &meta->kernels[i];
    return NULL;
}

uint64_t kp_launch_tg_threads(const kp_launch *l)
{
    uint64_t n = 1;
    for (int d = 0; d < l->dims; d++)
        n *= l->tg[d];
    return n;
}

const char *kp_lang_extension(kp_lang lang)
{
    static const char *const ext[KP_LANG_COUNT] = {"cl", "cu", "ptx", "cubin"};
    return (unsigned)lang < KP_LANG_COUNT ? ext[lang] : "";
}

int kp_lang_from_path(const char *path)
{
    const char *ext = kp_path_extension(path);
    if (strcmp(ext, "cl") == 0) return KP_LANG_OPENCL_C;
    if (strcmp(ext, "cu") == 0 || strcmp(ext, "cuh") == 0) return KP_LANG_CUDA;
    if (strcmp(ext, "ptx") == 0) return KP_LANG_PTX;
    /* A fatbin is loaded as a cubin is (cuModuleLoadData takes either). */
    if (strcmp(ext, "cubin") == 0 || strcmp(ext, "fatbin") == 0) return KP_LANG_CUBIN;
    return -1;
}

const char *kp_lang_backend(kp_lang lang)
{
    return lang == KP_LANG_OPENCL_C ? "opencl" : "cuda";
}
