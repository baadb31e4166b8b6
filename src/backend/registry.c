/*
 * registry.c — the backends compiled into this build, device choice (--backend, --device,
 * KPROF_BACKEND, KPROF_DEVICE, auto) and the program metadata helpers shared by backends.
 */
#include "backend/backend.h"
#include "base/env.h"
#include "base/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const kp_backend_ops *const kp_backends[] = {
#ifdef KPROF_HAVE_CUDA
    &kp_cuda_backend,
#endif
    &kp_opencl_backend,
    NULL,
};

const kp_backend_ops *kp_backend_find(const char *name)
{
    for (int i = 0; kp_backends[i]; i++)
        if (strcmp(kp_backends[i]->name, name) == 0) return kp_backends[i];
    return NULL;
}

/* Every backend kprof knows, whether or not this build has it, in the order messages list them,
 * with its API's name (as its table says it when it is built in) and its place in the
 * preference order for auto (kp_backends' order, were every backend built in). */
static const struct {
    const char *name, *api;
    int preference;
} kp_backend_known[KP_BACKEND_NKNOWN] = {{"opencl", "OpenCL", 1}, {"cuda", "CUDA", 0}};

const char *kp_backend_known_name(int i)
{
    for (size_t k = 0; k < sizeof kp_backend_known / sizeof kp_backend_known[0]; k++)
        if (kp_backend_known[k].preference == i) return kp_backend_known[k].name;
    return NULL;
}

const char *kp_backend_api(const char *name)
{
    const kp_backend_ops *ops = name ? kp_backend_find(name) : NULL;
    if (ops) return ops->api;
    for (size_t i = 0; name && i < sizeof kp_backend_known / sizeof kp_backend_known[0]; i++)
        if (strcmp(name, kp_backend_known[i].name) == 0) return kp_backend_known[i].api;
    return "";
}

kprof_status kp_backend_name_check(const char *name, const char *source, kp_error *err)
{
    size_t n = sizeof kp_backend_known / sizeof kp_backend_known[0];
    if (name && strcmp(name, "auto") == 0) return KPROF_OK;
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(name, kp_backend_known[i].name) == 0) return KPROF_OK;
    kp_str known = {0};
    for (size_t i = 0; i < n; i++)
        kp_str_printf(&known, "%s%s", i ? ", " : "", kp_backend_known[i].name);
    kprof_status st =
        kp_error_set(err, KPROF_INVALID, "%s '%s' is not a backend (choose %s or auto)", source,
                     name ? name : "", known.data ? known.data : "");
    kp_str_free(&known);
    return st;
}

const char *kp_backend_env(void)
{
    const char *v = getenv(KP_ENV_BACKEND);
    return v && *v ? v : NULL;
}

static int kp_backend_runs(const kp_backend_ops *ops, int lang)
{
    return lang < 0 || strcmp(kp_lang_backend((kp_lang)lang), ops->name) == 0;
}

int kp_backend_may_run_in_process(const char *backend, int lang)
{
    if (!backend || !*backend) backend = getenv(KP_ENV_BACKEND);
    if (!backend || !*backend) backend = "auto";
    int any = strcmp(backend, "auto") == 0;
    for (int b = 0; kp_backends[b]; b++) {
        const kp_backend_ops *ops = kp_backends[b];
        if ((any || strcmp(backend, ops->name) == 0) && kp_backend_runs(ops, lang) &&
            ops->kernels_in_process)
            return 1;
    }
    return 0;
}

/* $KPROF_DEVICE as a device number: KPROF_OK, or KPROF_INVALID naming the variable and its
 * value. */
static kprof_status kp_parse_device_env(const char *text, int *out, kp_error *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 0 || v > 1 << 20)
        return kp_error_set(err, KPROF_INVALID,
                            "%s='%s' is not a device number (kprof caps lists them)", KP_ENV_DEVICE,
                            text);
    *out = (int)v;
    return KPROF_OK;
}

kprof_status kp_backend_choose(const char *backend, int device, int lang,
                               const kp_backend_ops **ops_out, int *index_out, kp_error *err)
{
    *ops_out = NULL;
    *index_out = -1;
    const char *source = "--backend";
    if (!backend || !*backend) {
        backend = kp_backend_env();
        source = KP_ENV_BACKEND;
        if (!backend) backend = "auto";
    }
    kprof_status named = kp_backend_name_check(backend, source, err);
    if (named != KPROF_OK) return named;
    if (device < 0) {
        const char *env = getenv(KP_ENV_DEVICE);
        if (env && *env) {
            kprof_status st = kp_parse_device_env(env, &device, err);
            if (st != KPROF_OK) return st;
        }
    }

    if (strcmp(backend, "auto") != 0) {
        if (lang >= 0 && strcmp(kp_lang_backend((kp_lang)lang), backend) != 0)
            return kp_error_set(err, KPROF_INVALID,
                                "%s is %s, but this kernel is %s and needs the %s backend", source,
                                backend, lang == KP_LANG_OPENCL_C ? "OpenCL C" : "CUDA",
                                kp_lang_backend((kp_lang)lang));
        const kp_backend_ops *ops = kp_backend_find(backend);
        if (!ops) /* a known name (checked above) this build lacks: only CUDA can be left out */
            return kp_error_set(err, KPROF_UNAVAILABLE,
                                "%s: this kprof was built without the %s backend (no CUDA "
                                "headers at build time)",
                                backend, backend);
        kp_error why = {0};
        if (ops->probe(&why) != KPROF_OK) {
            kp_error_set(err, KPROF_UNAVAILABLE, "%s: %s", ops->name, why.message);
            kp_error_clear(&why);
            return KPROF_UNAVAILABLE;
        }
        int count = ops->device_count();
        if (count <= 0)
            return kp_error_set(err, KPROF_UNAVAILABLE, "%s: no devices found", ops->name);
        if (device >= count)
            return kp_error_set(err, KPROF_UNAVAILABLE,
                                "%s: device %d does not exist (%d device%s; kprof caps lists "
                                "them)",
                                ops->name, device, count, count == 1 ? "" : "s");
        *ops_out = ops;
        *index_out = device >= 0 ? device : 0;
        if (device < 0) {
            /* Within a backend, auto still prefers a GPU. */
            for (int i = 0; i < count; i++) {
                kp_device_info info;
                if (ops->device_info(i, &info, NULL) == KPROF_OK && info.is_gpu) {
                    *index_out = i;
                    break;
                }
            }
        }
        return KPROF_OK;
    }

    /* auto: the first GPU in backend order, else the first device of any backend. */
    kp_str why = {0};
    const kp_backend_ops *fallback = NULL;
    int fallback_index = -1;
    for (int b = 0; kp_backends[b]; b++) {
        const kp_backend_ops *ops = kp_backends[b];
        if (!kp_backend_runs(ops, lang)) continue;
        kp_error reason = {0};
        if (ops->probe(&reason) != KPROF_OK) {
            kp_str_printf_escaped(&why, "\n  %s: %s", ops->name, reason.message);
            kp_error_clear(&reason);
            continue;
        }
        int count = ops->device_count();
        if (count <= 0) {
            kp_str_printf_escaped(&why, "\n  %s: no devices found", ops->name);
            continue;
        }
        if (device >= 0) {
            if (device < count) {
                *ops_out = ops;
                *index_out = device;
                kp_str_free(&why);
                return KPROF_OK;
            }
            kp_str_printf_escaped(&why, "\n  %s: device %d does not exist (%d device%s)", ops->name,
                                  device, count, count == 1 ? "" : "s");
            continue;
        }
        for (int i = 0; i < count; i++) {
            kp_device_info info;
            if (ops->device_info(i, &info, NULL) != KPROF_OK) continue;
            if (info.is_gpu) {
                *ops_out = ops;
                *index_out = i;
                kp_str_free(&why);
                return KPROF_OK;
            }
            if (!fallback) {
                fallback = ops;
                fallback_index = i;
            }
        }
    }
    if (fallback) {
        *ops_out = fallback;
        *index_out = fallback_index;
        kp_str_free(&why);
        return KPROF_OK;
    }
    if (!why.data && lang >= 0)
        kp_str_printf_escaped(&why, "\n  %s: this kprof was built without the %s backend",
                              kp_lang_backend((kp_lang)lang), kp_lang_backend((kp_lang)lang));
    /* The reasons, one per line: composed above with their arguments escaped. */
    kp_error_set(err, KPROF_UNAVAILABLE, "no device to run on:");
    kp_error_append_lines(err, why.data);
    kp_str_free(&why);
    return KPROF_UNAVAILABLE;
}
