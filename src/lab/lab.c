/*
 * lab.c — the kernel-lab session's front (see lab.h): it decides where a session runs (in this
 * process, or in a child where the backend may run kernels in kprof's own process), opens it
 * there, and calls every device operation through the session's table (kp_lab_impl,
 * lab_internal.h: lab_local.c here, isolate.c in a child) without asking which it is. What holds
 * for a session wherever it runs is here too: timed dispatches within a budget and the argument
 * checks lab.h documents.
 */
#define _GNU_SOURCE
#include "base/util.h"
#include "lab/lab_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const kp_lab_info *kp_lab_get_info(const kp_lab *lab)
{
    return &lab->info;
}

int kp_lab_pid(const kp_lab *lab)
{
    return lab ? lab->impl->pid(lab) : 0;
}

kprof_status kp_lab_use_kernel(kp_lab *lab, const char *entry, kp_error *err)
{
    return lab->impl->use_kernel(lab, entry, err);
}

/* The language of the session's source, or -1 when the target cannot be resolved (the session
 * then opens here, and says why). */
static int kp_lab_language(const kp_lab_options *opts)
{
    if (opts->source_text) return opts->source_lang;
    kp_lab_info *info = calloc(1, sizeof *info);
    if (!info) return -1;
    kp_error scratch = {0};
    int lang = kp_lab_resolve(opts, info, &scratch) == KPROF_OK
                   ? kp_lang_from_path(info->source_path)
                   : -1;
    kp_error_clear(&scratch);
    free(info);
    return lang;
}

kprof_status kp_lab_open(const kp_lab_options *opts, kp_lab **out, kp_error *err)
{
    *out = NULL;
    kprof_status checked = kp_lab_check_options(opts->options, err);
    if (checked != KPROF_OK) return checked;
    int lang = kp_lab_language(opts);
    if (lang < 0 || !kp_backend_may_run_in_process(opts->backend, lang))
        return kp_lab_local_open(opts, out, err);
    return kp_lab_remote_open(opts, out, err);
}

kprof_status kp_lab_device(const char *backend, int device, int lang, const kp_backend_ops **ops,
                           int *index, kp_device_info *info, kp_error *err)
{
    if (kp_backend_may_run_in_process(backend, lang))
        return kp_lab_remote_device(backend, device, lang, ops, index, info, err);
    kprof_status st = kp_backend_choose(backend, device, lang, ops, index, err);
    return st == KPROF_OK ? (*ops)->device_info(*index, info, err) : st;
}

kprof_status kp_lab_check_launch(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                 kp_error *err)
{
    return lab->impl->check_launch(lab, launch, refl, err);
}

kprof_status kp_lab_reflect(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                            kp_error *err)
{
    return lab->impl->reflect(lab, launch, refl, err);
}

kprof_status kp_lab_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                            double *samples_ms, kp_error *err)
{
    return lab->impl->measure(lab, launch, warmup, iters, samples_ms, err);
}

int kp_lab_budget_iters(int iters, int timed, double per_dispatch_s, double spent_s,
                        double budget_s)
{
    if (iters < 1) return 0;
    if (budget_s <= 0 || per_dispatch_s <= 0) return iters;
    double left = budget_s - spent_s;
    double more = left > 0 ? floor(left / per_dispatch_s) : 0;
    int n = timed + (more < (double)(iters - timed) ? (int)more : iters - timed);
    if (n < timed) n = timed;
    return n < 1 ? 1 : n;
}

kprof_status kp_lab_measure_within(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                                   double budget_s, double *samples_ms, int *timed, kp_error *err)
{
    *timed = 0;
    if (budget_s <= 0 || iters <= 1) {
        kprof_status st = kp_lab_measure(lab, launch, warmup, iters, samples_ms, err);
        if (st == KPROF_OK) *timed = iters;
        return st;
    }
    /* The warm-ups and one timed dispatch say what a dispatch costs, by the wall clock (what the
     * budget is about) or by its device time when that is more. */
    uint64_t t0 = kp_now_ns();
    kprof_status st = kp_lab_measure(lab, launch, warmup, 1, samples_ms, err);
    if (st != KPROF_OK) return st;
    double spent = (double)(kp_now_ns() - t0) / 1e9;
    double per = spent / (warmup + 1);
    if (samples_ms[0] / 1e3 > per) per = samples_ms[0] / 1e3;
    int n = kp_lab_budget_iters(iters, 1, per, spent, budget_s);
    if (n > 1) st = kp_lab_measure(lab, launch, 0, n - 1, samples_ms + 1, err);
    if (st == KPROF_OK) *timed = n;
    return st;
}

kprof_status kp_lab_sample(kp_lab *lab, const kp_launch *launch, int n, int cold,
                           double *samples_ms, double *flush_ms, kp_error *err)
{
    if (n < 1) return kp_error_set(err, KPROF_INVALID, "kp_lab_sample: %d samples asked for", n);
    return lab->impl->sample(lab, launch, n, cold, samples_ms, flush_ms, err);
}

kprof_status kp_lab_digest(kp_lab *lab, kp_buffer_digest *out, int max, int *n, kp_error *err)
{
    return lab->impl->digest(lab, out, max, n, err);
}

kprof_status kp_lab_finish(kp_lab *lab, kp_error *err)
{
    return lab->impl->finish(lab, err);
}

int kp_lab_is_void(const kp_lab *lab)
{
    return lab && lab->impl->is_void(lab);
}

void kp_lab_close(kp_lab *lab)
{
    if (lab) lab->impl->close(lab);
}
