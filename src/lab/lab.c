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
                   ? kp_lab_source_lang(info->source_path)
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

/* ---- the dispatch log ------------------------------------------------------------------ */

kprof_status kp_lab_log_init(kp_lab_log *log, size_t cap, kp_error *err)
{
    memset(log, 0, sizeof *log);
    log->flops = log->bytes = NAN;
    if (cap == 0) return KPROF_OK;
    log->spans = calloc(cap, sizeof *log->spans);
    log->tags = calloc(cap, sizeof *log->tags);
    if (!log->spans || !log->tags) {
        kp_lab_log_free(log);
        return kp_error_set(err, KPROF_NOMEM, "out of memory for a log of %zu dispatches", cap);
    }
    log->cap = cap;
    return KPROF_OK;
}

void kp_lab_log_free(kp_lab_log *log)
{
    if (!log) return;
    free(log->spans);
    free(log->tags);
    free(log->sites);
    memset(log, 0, sizeof *log);
}

void kp_lab_set_log(kp_lab *lab, kp_lab_log *log)
{
    lab->log = log;
}

kp_lab_log *kp_lab_get_log(const kp_lab *lab)
{
    return lab->log;
}

/* Two sites are one when every field the trace keeps is equal. */
static int kp_lab_site_same(const kp_lab_site *a, const kp_lab_site *b)
{
    int same_metric = (isnan(a->flops) ? isnan(b->flops) : a->flops == b->flops) &&
                      (isnan(a->bytes) ? isnan(b->bytes) : a->bytes == b->bytes);
    if (strcmp(a->kernel, b->kernel) != 0 || a->have_launch != b->have_launch || !same_metric)
        return 0;
    if (!a->have_launch) return 1;
    const kp_launch *x = &a->launch, *y = &b->launch;
    return x->dims == y->dims && memcmp(x->grid, y->grid, sizeof x->grid) == 0 &&
           memcmp(x->tg, y->tg, sizeof x->tg) == 0 && x->dyn_local == y->dyn_local;
}

/* The log's site of the session's kernel at launch (launch NULL: the backend's cache flush),
 * made (and the kernel reflected there) the first time: its index, or -1 out of memory. */
static int kp_lab_log_site(kp_lab *lab, const kp_launch *launch)
{
    kp_lab_log *log = lab->log;
    kp_lab_site site;
    memset(&site, 0, sizeof site);
    /* A flush is logged only for a backend with flush_cache, which names its kernel. */
    const char *name = launch ? (lab->info.kernel ? lab->info.kernel->name : "")
                              : (lab->info.ops->flush_kernel ? lab->info.ops->flush_kernel : "");
    kp_strlcpy(site.kernel, name, sizeof site.kernel);
    site.flops = launch ? log->flops : NAN;
    site.bytes = launch ? log->bytes : NAN;
    if (launch) {
        site.have_launch = 1;
        site.launch = *launch;
    }
    for (size_t i = 0; i < log->nsites; i++)
        if (kp_lab_site_same(&log->sites[i], &site)) return (int)i;
    if (log->nsites == log->sites_cap) {
        size_t cap = log->sites_cap ? 2 * log->sites_cap : 8;
        kp_lab_site *p = realloc(log->sites, cap * sizeof *p);
        if (!p) return -1;
        log->sites = p;
        log->sites_cap = cap;
    }
    if (launch) {
        kp_error scratch = {0};
        site.have_refl = kp_lab_reflect(lab, launch, &site.refl, &scratch) == KPROF_OK;
        kp_error_clear(&scratch);
    }
    log->sites[log->nsites] = site;
    return (int)log->nsites++;
}

/* Room for n entries at the end of the session's log, grown now if need be (NULL: no log, or
 * out of memory: counted). */
static kp_dispatch_span *kp_lab_log_room(kp_lab *lab, size_t n)
{
    kp_lab_log *log = lab->log;
    if (!log) return NULL;
    if (n > log->cap - log->n) {
        size_t cap = log->cap * 2 > log->n + n ? log->cap * 2 : log->n + n;
        kp_dispatch_span *spans = realloc(log->spans, cap * sizeof *spans);
        if (spans) log->spans = spans;
        kp_lab_tag *tags = spans ? realloc(log->tags, cap * sizeof *tags) : NULL;
        if (!tags) {
            log->lost += n;
            return NULL;
        }
        log->tags = tags;
        log->cap = cap;
    }
    return log->spans + log->n;
}

/* Tag the next entry and take it. */
static void kp_lab_log_take(kp_lab_log *log, int role, int site, int64_t iteration)
{
    log->tags[log->n] = (kp_lab_tag){.role = role, .site = site, .iteration = iteration};
    log->n++;
}

kprof_status kp_lab_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                            double *samples_ms, kp_error *err)
{
    int site = lab->log ? kp_lab_log_site(lab, launch) : -1;
    kp_dispatch_span *spans = NULL;
    if (warmup >= 0 && iters >= 0)
        spans = site >= 0 ? kp_lab_log_room(lab, (size_t)warmup + (size_t)iters) : NULL;
    if (lab->log && site < 0) lab->log->lost += (uint64_t)warmup + (uint64_t)iters;
    kprof_status st = lab->impl->measure(lab, launch, warmup, iters, samples_ms, spans, err);
    if (st != KPROF_OK || !spans) return st;
    for (int i = 0; i < warmup; i++)
        kp_lab_log_take(lab->log, KP_LAB_WARMUP, site, (int64_t)i - warmup);
    for (int i = 0; i < iters; i++)
        kp_lab_log_take(lab->log, KP_LAB_TIMED, site, lab->log->timed++);
    return st;
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
    int site = lab->log ? kp_lab_log_site(lab, launch) : -1;
    int flush = lab->log && cold ? kp_lab_log_site(lab, NULL) : -1;
    size_t each = cold ? 2 : 1;
    kp_dispatch_span *spans =
        site >= 0 && (!cold || flush >= 0) ? kp_lab_log_room(lab, (size_t)n * each) : NULL;
    if (lab->log && (site < 0 || (cold && flush < 0))) lab->log->lost += (uint64_t)n * each;
    kprof_status st = lab->impl->sample(lab, launch, n, cold, samples_ms, flush_ms, spans, err);
    if (st != KPROF_OK || !spans) return st;
    kp_lab_log *log = lab->log;
    for (int i = 0; i < n; i++) {
        int64_t iteration = log->warming ? (int64_t)i - n : log->timed;
        if (cold) kp_lab_log_take(log, KP_LAB_FLUSH, flush, iteration);
        kp_lab_log_take(log, log->warming ? KP_LAB_WARMUP : KP_LAB_TIMED, site, iteration);
        if (!log->warming) log->timed++;
    }
    return st;
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
