/*
 * lab_local.c — a kernel-lab session in this process: kp_lab_local, the implementation of
 * kp_lab_impl that calls the backend itself (lab_internal.h). It resolves the target, chooses
 * the device, compiles (compile.c), checks and binds the arguments (arguments.c), switches
 * kernels, measures and samples (hot, or cold after the backend's cache flush), digests the
 * buffers, reads counters and PC samples, and releases everything; launches are checked in
 * launch.c. It is also what the child of a session in a child process runs (isolate.c).
 */
#define _GNU_SOURCE
#include "base/env.h"
#include "base/util.h"
#include "lab/kernel_dir.h"
#include "lab/lab_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

kprof_status kp_lab_resolve(const kp_lab_options *opts, kp_lab_info *info, kp_error *err)
{
    const char *t = opts->target;
    if (!t || !*t) return kp_error_set(err, KPROF_INVALID, "no kernel given (NAME or FILE)");
    struct stat st;
    int looks_like_file = strchr(t, '/') != NULL || kp_lang_from_path(t) >= 0;
    if (stat(t, &st) == 0 && S_ISREG(st.st_mode)) {
        if (strlen(t) >= sizeof info->source_path)
            return kp_error_set(err, KPROF_INVALID, "path too long");
        snprintf(info->source_path, sizeof info->source_path, "%s", t);
        return KPROF_OK;
    }
    if (stat(t, &st) == 0 && !S_ISDIR(st.st_mode))
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file (a FIFO or device?)", t);
    /* A capture folder named by its path (kprof trace --capture-dir DIR). */
    int capture_path = strchr(t, '/') && kp_path_is_dir(t) && kp_capture_is_folder(t);
    if (looks_like_file && !capture_path)
        return kp_error_set(err, KPROF_NOT_FOUND, "%s: no such file", t);
    kprof_status s = KPROF_OK;
    if (capture_path) {
        if (strlen(t) >= sizeof info->kernel_dir)
            return kp_error_set(err, KPROF_INVALID, "path too long");
        snprintf(info->kernel_dir, sizeof info->kernel_dir, "%s", t);
    } else {
        s = kp_kernel_dir(t, info->kernel_dir, sizeof info->kernel_dir, err);
    }
    if (s != KPROF_OK) return s;
    if (!kp_path_is_dir(info->kernel_dir))
        return kp_error_set(err, KPROF_NOT_FOUND,
                            "no kernel folder %s and no file '%s' (create the folder with `kprof "
                            "isolate %s`)",
                            info->kernel_dir, t, t);
    const char *prefer = opts->backend ? opts->backend : kp_backend_env();
    kprof_status s2 = kp_kernel_dir_source(info->kernel_dir, prefer, info->source_path,
                                           sizeof info->source_path, err);
    if (s2 == KPROF_NOT_FOUND && kp_capture_is_folder(info->kernel_dir)) {
        char bin[4200];
        snprintf(bin, sizeof bin, "%s/program.bin", info->kernel_dir);
        /* A captured OpenCL program made from a binary: the binary is its code. */
        if (stat(bin, &st) == 0 && S_ISREG(st.st_mode) && strlen(bin) < sizeof info->source_path) {
            kp_error_clear(err);
            memcpy(info->source_path, bin, strlen(bin) + 1);
            return KPROF_OK;
        }
    }
    return s2;
}

static kprof_status kp_local_use_kernel(kp_lab *lab, const char *entry, kp_error *err)
{
    kprof_status st = KPROF_OK;
    const kp_kernel_meta *k = NULL;
    /* A capture's kernel is the one it launched, named by its symbol. */
    for (int i = 0; !entry && lab->capture && i < lab->meta.nkernels; i++)
        if (strcmp(lab->meta.kernels[i].symbol, lab->capture->symbol) == 0 ||
            strcmp(lab->meta.kernels[i].name, lab->capture->symbol) == 0)
            entry = lab->meta.kernels[i].name;
    if (!entry) {
        if (lab->meta.nkernels > 1) {
            kp_str list = {0};
            for (int i = 0; i < lab->meta.nkernels; i++)
                kp_str_printf(&list, "%s%s", i ? ", " : "", lab->meta.kernels[i].name);
            st =
                kp_error_set(err, KPROF_INVALID, "%s has %d kernels (%s): choose one with --entry",
                             lab->info.source_path, lab->meta.nkernels, list.data ? list.data : "");
            kp_str_free(&list);
            return st;
        }
        k = &lab->meta.kernels[0];
    } else {
        k = kp_program_meta_find(&lab->meta, entry);
    }
    if (!k) {
        kp_str list = {0};
        for (int i = 0; i < lab->meta.nkernels; i++) {
            char sig[1024];
            kp_lab_signature(&lab->meta.kernels[i], sig, sizeof sig);
            kp_str_printf_escaped(&list, "\n  %s", sig);
        }
        st = kp_error_set(err, KPROF_NOT_FOUND,
                          "%s has no kernel '%s'; its kernels:", lab->info.source_path, entry);
        kp_error_append_lines(err, list.data);
        kp_str_free(&list);
        return st;
    }
    /* A capture is checked against the kernel's parameters instead of a SPEC. */
    st = lab->capture ? kp_lab_capture_check_kernel(lab->capture, k, err)
                      : kp_lab_check_spec(&lab->spec, k, err);
    if (st != KPROF_OK) return st;
    kp_kernel *kernel = NULL;
    st = lab->ops->kernel_create(lab->program, k, &kernel, err);
    if (st != KPROF_OK) return st;
    if (lab->bound) {
        st = lab->capture ? kp_lab_capture_bind_kernel(lab, kernel, err)
                          : lab->ops->bind(kernel, &lab->spec, lab->buffers, err);
        if (st != KPROF_OK) {
            lab->ops->kernel_release(kernel);
            return st;
        }
    }
    lab->ops->kernel_release(lab->kernel);
    lab->kernel = kernel;
    lab->info.kernel = k;
    return KPROF_OK;
}

static void kp_local_close(kp_lab *lab);

kprof_status kp_lab_local_open(const kp_lab_options *opts, kp_lab **out, kp_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t text_len = 0;
    kp_lab *lab = calloc(1, sizeof *lab);
    if (!lab) return kp_error_nomem(err);
    lab->impl = &kp_lab_local;
    kp_str options = {0};
    const char *entry = opts->entry;
    kprof_status st = kp_lab_capture_load(opts, &lab->capture, lab->info.replay_dir,
                                          sizeof lab->info.replay_dir, err);
    if (st != KPROF_OK) goto fail;
    if (lab->capture) {
        const kp_capture *c = lab->capture;
        st = kp_lab_capture_spec(c, &lab->spec, err);
        if (st != KPROF_OK) goto fail;
        lab->info.replay = 1;
        lab->info.replay_missing = c->nmissing;
        for (int i = 0; i < c->nmissing && i < 4; i++)
            kp_strlcpy(lab->info.replay_missing_lines[i], c->missing[i],
                       sizeof lab->info.replay_missing_lines[i]);
        kp_launch *l = &lab->info.replay_launch;
        if (kp_lab_capture_launch(c, l)) {
            char t[64];
            kp_tg_shape_text(l->tg, l->dims, t, sizeof t);
            snprintf(lab->info.warning, sizeof lab->info.warning,
                     "the program let the runtime choose the work-group size; the replay uses "
                     "tg %s",
                     t);
        }
        /* The program's own build options, then the user's. */
        kp_str_printf(&options, "%s%s%s", c->build_options,
                      c->build_options[0] && opts->options && opts->options[0] ? " " : "",
                      opts->options ? opts->options : "");
        if (options.failed) {
            st = kp_error_nomem(err);
            goto fail;
        }
        if (!entry) entry = c->symbol;
        if ((c->offset[0] || c->offset[1] || c->offset[2]) && !lab->info.warning[0])
            snprintf(lab->info.warning, sizeof lab->info.warning,
                     "the captured launch had a global offset (%llu, %llu, %llu), which the lab "
                     "does not replay: its work-items run from 0",
                     (unsigned long long)c->offset[0], (unsigned long long)c->offset[1],
                     (unsigned long long)c->offset[2]);
    } else {
        st = kp_spec_parse(opts->buffers, &lab->spec, err);
        if (st != KPROF_OK) goto fail;
    }
    lab->info.spec = &lab->spec;
    int lang;
    if (opts->source_text) {
        snprintf(lab->info.source_path, sizeof lab->info.source_path, "%s", opts->source_name);
        lang = opts->source_lang;
        text = malloc(opts->source_len + 1);
        if (!text) {
            st = kp_error_nomem(err);
            goto fail;
        }
        memcpy(text, opts->source_text, opts->source_len);
        text[opts->source_len] = '\0';
        text_len = opts->source_len;
    } else {
        st = kp_lab_resolve(opts, &lab->info, err);
        if (st != KPROF_OK) goto fail;
        lang = kp_lab_source_lang(lab->info.source_path);
        if (lang < 0) {
            st = kp_error_set(err, KPROF_INVALID,
                              "%s: unknown kernel language (use .cl for OpenCL C, .cu for CUDA, "
                              ".ptx or .cubin)",
                              lab->info.source_path);
            goto fail;
        }
        st = kp_file_read(lab->info.source_path, &text, &text_len, err);
        if (st != KPROF_OK) goto fail;
    }

    int index = -1, device = opts->device;
    /* A capture replays on the device it was made on, unless a device is asked for. */
    const char *env_device = getenv(KP_ENV_DEVICE);
    if (lab->capture && device < 0 && !(env_device && *env_device))
        device = kp_lab_capture_device(lab->capture, opts->backend);
    st = kp_backend_choose(opts->backend, device, lang, &lab->ops, &index, err);
    if (st != KPROF_OK) goto fail;
    lab->info.ops = lab->ops;
    st = lab->ops->device_info(index, &lab->info.device, err);
    if (st != KPROF_OK) goto fail;
    if (lab->capture && lab->capture->device[0] &&
        strcmp(lab->capture->device, lab->info.device.name) != 0 && !lab->info.warning[0])
        snprintf(lab->info.warning, sizeof lab->info.warning,
                 "the launch was captured on %.200s; this replay runs on %.200s",
                 lab->capture->device, lab->info.device.name);
    st = lab->ops->open(index, &lab->dev, err);
    if (st != KPROF_OK) goto fail;

    kp_source src = {
        .path = lab->info.source_path,
        .text = text,
        .len = text_len,
        .lang = (kp_lang)lang,
        .options = options.data    ? options.data
                   : opts->options ? opts->options
                                   : "",
        .entry = entry ? entry : "",
    };
    /* kprof's own kernels (in memory) include nothing. */
    if (!opts->source_text && !kp_lab_is_program_binary(lab->info.source_path))
        src.includes_hash = kp_lab_includes_hash(&src);
    if (lab->capture && kp_lab_is_program_binary(lab->info.source_path))
        st = kp_lab_capture_load_binary(lab, text, text_len, err);
    else
        st = kp_lab_compile(lab, &src, err);
    if (st != KPROF_OK) goto fail;
    kp_lab_mark_aggregates(
        &lab->meta, &src, (lang == KP_LANG_OPENCL_C || lang == KP_LANG_CUDA) && !opts->source_text);

    if (lab->meta.nkernels == 0) {
        st = kp_error_set(err, KPROF_NOT_FOUND, "%s defines no kernels", lab->info.source_path);
        goto fail;
    }
    /* A capture names its kernel by symbol (the mangled name): the kernel of that symbol. */
    if (lab->capture && entry == lab->capture->symbol) {
        for (int i = 0; i < lab->meta.nkernels; i++)
            if (strcmp(lab->meta.kernels[i].symbol, entry) == 0 ||
                strcmp(lab->meta.kernels[i].name, entry) == 0) {
                entry = lab->meta.kernels[i].name;
                break;
            }
    }
    st = kp_local_use_kernel(lab, entry, err);
    if (st != KPROF_OK) goto fail;

    st = lab->capture ? kp_lab_capture_bind(lab, err) : kp_lab_bind_buffers(lab, err);
    if (st != KPROF_OK) goto fail;
    free(text);
    kp_str_free(&options);
    *out = lab;
    return KPROF_OK;
fail:
    free(text);
    kp_str_free(&options);
    kp_local_close(lab);
    return st;
}

static kprof_status kp_local_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                                     double *samples_ms, kp_dispatch_span *spans, kp_error *err)
{
    double ns = 0;
    for (int i = 0; i < warmup; i++) {
        kprof_status st =
            lab->ops->dispatch(lab->kernel, launch, &ns, spans ? &spans[i] : NULL, err);
        if (st != KPROF_OK) return st;
    }
    kp_dispatch_span *timed = spans ? spans + warmup : NULL;
    if (lab->ops->dispatch_batch) {
        kprof_status st = lab->ops->dispatch_batch(lab->kernel, launch, iters, samples_ms, timed,
                                                   lab->info.timer, sizeof lab->info.timer, err);
        if (st != KPROF_OK) return st;
        for (int i = 0; i < iters; i++)
            samples_ms[i] /= 1e6;
        return KPROF_OK;
    }
    snprintf(lab->info.timer, sizeof lab->info.timer, "%s-profiling-events", lab->ops->name);
    for (int i = 0; i < iters; i++) {
        kprof_status st =
            lab->ops->dispatch(lab->kernel, launch, &ns, timed ? &timed[i] : NULL, err);
        if (st != KPROF_OK) return st;
        samples_ms[i] = ns / 1e6;
    }
    return KPROF_OK;
}

static kprof_status kp_local_sample(kp_lab *lab, const kp_launch *launch, int n, int cold,
                                    double *samples_ms, double *flush_ms, kp_dispatch_span *spans,
                                    kp_error *err)
{
    if (flush_ms)
        for (int i = 0; i < n; i++)
            flush_ms[i] = 0;
    if (!cold) return kp_local_measure(lab, launch, 0, n, samples_ms, spans, err);
    if (!lab->ops->flush_cache)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "the %s backend cannot flush the device's cache: no cold samples",
                            lab->ops->name);
    for (int i = 0; i < n; i++) {
        double flush_ns = 0;
        kprof_status st =
            lab->ops->flush_cache(lab->dev, &flush_ns, spans ? &spans[2 * i] : NULL, err);
        /* Timed alone, by the clock of a hot batch: kp_lab_measure's, with one dispatch. */
        if (st == KPROF_OK)
            st = kp_local_measure(lab, launch, 0, 1, &samples_ms[i],
                                  spans ? &spans[2 * i + 1] : NULL, err);
        if (st != KPROF_OK) return st;
        if (flush_ms) flush_ms[i] = flush_ns / 1e6;
    }
    return KPROF_OK;
}

static kprof_status kp_local_digest(kp_lab *lab, kp_buffer_digest *out, int max, int *n,
                                    kp_error *err)
{
    *n = 0;
    for (int i = 0; i < lab->spec.count && *n < max; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t bytes = kp_arg_bytes(a);
        void *host = malloc((size_t)bytes);
        if (!host)
            return kp_error_set(err, KPROF_NOMEM, "cannot allocate %llu bytes to read back",
                                (unsigned long long)bytes);
        kprof_status st = lab->ops->read(lab->buffers[i], host, bytes, err);
        if (st != KPROF_OK) {
            free(host);
            return st;
        }
        kp_buffer_digest *d = &out[(*n)++];
        memset(d, 0, sizeof *d);
        d->arg = i;
        const kp_kernel_meta *k = lab->info.kernel;
        if (lab->capture)
            kp_strlcpy(d->name, lab->capture->allocs[i].name, sizeof d->name);
        else if (k->nparams > i && k->params)
            kp_strlcpy(d->name, k->params[i].name, sizeof d->name);
        d->type = a->type;
        d->count = a->count;
        d->hash = kp_hash64(KP_HASH_SEED, host, (size_t)bytes);
        d->min = INFINITY;
        d->max = -INFINITY;
        for (uint64_t e = 0; e < a->count; e++) {
            double v = kp_value_as_double(a->type, host, e);
            if (e < 4) d->first[d->nfirst++] = v;
            if (!isfinite(v)) {
                d->nonfinite++;
                continue;
            }
            d->sum += v;
            if (v < d->min) d->min = v;
            if (v > d->max) d->max = v;
        }
        if (d->nonfinite == d->count) d->min = d->max = NAN;
        free(host);
    }
    return KPROF_OK;
}

static kprof_status kp_local_counters(kp_lab *lab, const kp_launch *launch,
                                      const char *const *metrics, size_t n, double *values,
                                      unsigned char *bad, kp_error *err)
{
    return lab->info.ops->counters(lab->kernel, launch, metrics, n, values, bad, err);
}

static kprof_status kp_local_pc_sample(kp_lab *lab, const kp_launch *launch, int dispatches,
                                       kp_pc_samples *out, kp_error *err)
{
    return lab->ops->pc_sample(lab->kernel, launch, dispatches, out, err);
}

/* A session here keeps its objects until kp_lab_close. */
static kprof_status kp_local_finish(kp_lab *lab, kp_error *err)
{
    (void)lab;
    (void)err;
    return KPROF_OK;
}

static int kp_local_pid(const kp_lab *lab)
{
    (void)lab;
    return 0;
}

static int kp_local_is_void(const kp_lab *lab)
{
    (void)lab;
    return 0;
}

static void kp_local_close(kp_lab *lab)
{
    if (lab->ops) {
        for (int i = 0; i < KP_SPEC_MAX_ARGS; i++)
            lab->ops->free(lab->buffers[i]);
        lab->ops->kernel_release(lab->kernel);
        lab->ops->program_release(lab->program);
        lab->ops->close(lab->dev);
    }
    kp_program_meta_free(&lab->meta);
    kp_lab_capture_free(lab->capture);
    free(lab);
}

const kp_lab_impl kp_lab_local = {
    .where = "here",
    .use_kernel = kp_local_use_kernel,
    .check_launch = kp_lab_local_check_launch,
    .reflect = kp_lab_local_reflect,
    .measure = kp_local_measure,
    .sample = kp_local_sample,
    .digest = kp_local_digest,
    .counters = kp_local_counters,
    .pc_sample = kp_local_pc_sample,
    .finish = kp_local_finish,
    .pid = kp_local_pid,
    .is_void = kp_local_is_void,
    .close = kp_local_close,
};
