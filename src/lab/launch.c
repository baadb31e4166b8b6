/*
 * launch.c — a launch in the lab, checked before anything runs: the grid against kprof's own
 * bounds and the device's, the threadgroup against the kernel's compile-time rule (required or
 * maximum size), its reflected maximum and the device's local memory; the kernel reflected at
 * it (for a session in this process: kp_lab_local's check_launch and reflect); and what its grid
 * can touch of each buffer, for the readings.
 */
#define _GNU_SOURCE
#include "lab/lab_internal.h"
#include "base/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kprof's own bound on a grid: each dimension fits 32 bits and the whole grid 2^40 threads,
 * so no runtime's index arithmetic wraps (PoCL divides by zero on a 2^32-thread dimension). */
#define KP_GRID_DIM_MAX   4294967295ULL
#define KP_GRID_TOTAL_MAX (1ULL << 40)

uint64_t kp_tg_rule_threads(const kp_reflection *r)
{
    if (r->tg_rule == KP_TG_RULE_NONE) return 0;
    return r->tg_rule_size[0] * r->tg_rule_size[1] * r->tg_rule_size[2];
}

int kp_reflection_limit_declared(const kp_reflection *r)
{
    uint64_t declared = kp_tg_rule_threads(r);
    return declared && r->max_tg >= declared;
}

void kp_tg_shape_text(const uint64_t v[3], int min_dims, char *buf, size_t n)
{
    int dims = 3;
    while (dims > 1 && dims > min_dims && v[dims - 1] == 1)
        dims--;
    if (dims == 1)
        snprintf(buf, n, "%llu", (unsigned long long)v[0]);
    else if (dims == 2)
        snprintf(buf, n, "%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1]);
    else
        snprintf(buf, n, "%llux%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1],
                 (unsigned long long)v[2]);
}

void kp_tg_rule_text(const kp_reflection *r, char *buf, size_t n)
{
    char shape[96];
    kp_tg_shape_text(r->tg_rule_size, 1, shape, sizeof shape);
    const char *from = r->tg_rule_from ? r->tg_rule_from : "its source";
    if (r->tg_rule == KP_TG_RULE_REQUIRED)
        snprintf(buf, n, "required group size %s (%s)", shape, from);
    else if (r->tg_rule == KP_TG_RULE_MAX)
        snprintf(buf, n, "max %llu (%s)", (unsigned long long)kp_tg_rule_threads(r), from);
    else if (n)
        buf[0] = '\0';
}

kprof_status kp_lab_check_tg_rule(const kp_reflection *r, const kp_launch *l, const char *name,
                                  kp_error *err)
{
    uint64_t tg[3] = {1, 1, 1};
    for (int d = 0; d < l->dims && d < 3; d++)
        tg[d] = l->tg[d];
    char have[96], want[96];
    kp_tg_shape_text(tg, l->dims, have, sizeof have);
    const char *from = r->tg_rule_from ? r->tg_rule_from : "its source";
    if (r->tg_rule == KP_TG_RULE_REQUIRED) {
        if (tg[0] == r->tg_rule_size[0] && tg[1] == r->tg_rule_size[1] &&
            tg[2] == r->tg_rule_size[2])
            return KPROF_OK;
        /* What to type: the shape with as many dimensions as the grid, unless the shape needs
         * more (then the grid must have them too). */
        int need = 3;
        while (need > 1 && r->tg_rule_size[need - 1] == 1)
            need--;
        kp_tg_shape_text(r->tg_rule_size, l->dims > need ? l->dims : need, want, sizeof want);
        if (need > l->dims)
            return kp_error_set(err, KPROF_INVALID,
                                "tg %s is not %s's required threadgroup size %s (%s, fixed when "
                                "it was compiled): it needs a %d-D grid and --tg %s",
                                have, name, want, from, need, want);
        return kp_error_set(err, KPROF_INVALID,
                            "tg %s is not %s's required threadgroup size %s (%s, fixed when it "
                            "was compiled): use --tg %s",
                            have, name, want, from, want);
    }
    if (r->tg_rule == KP_TG_RULE_MAX) {
        uint64_t most = kp_tg_rule_threads(r);
        if (tg[0] * tg[1] * tg[2] > most)
            return kp_error_set(err, KPROF_INVALID,
                                "tg %s is above %s's maximum threadgroup size %llu (%s, fixed "
                                "when it was compiled)",
                                have, name, (unsigned long long)most, from);
    }
    return KPROF_OK;
}

kprof_status kp_lab_local_reflect(kp_lab *lab, const kp_launch *l, kp_reflection *refl,
                                  kp_error *err)
{
    if (!lab->ops->reflect)
        return kp_error_set(err, KPROF_UNAVAILABLE, "the %s backend cannot reflect a kernel",
                            lab->ops->name);
    kprof_status st = lab->ops->reflect(lab->kernel, l, refl, err);
    if (st != KPROF_OK) return st;
    refl->dynamic_local = l->dyn_local;
    for (int i = 0; i < lab->spec.count; i++)
        if (lab->spec.args[i].kind == KP_ARG_LOCAL)
            refl->dynamic_local += lab->spec.args[i].local_bytes;
    return KPROF_OK;
}

kprof_status kp_lab_local_check_launch(kp_lab *lab, const kp_launch *l, kp_reflection *refl,
                                       kp_error *err)
{
    const kp_device_info *d = &lab->info.device;
    const char *name = lab->info.kernel->name;
    if (l->dims < 1 || l->dims > 3)
        return kp_error_set(err, KPROF_INVALID, "grid must have 1, 2 or 3 dimensions");
    uint64_t total = 1;
    for (int i = 0; i < l->dims; i++) {
        uint64_t grid = l->grid[i], tg = l->tg[i];
        char axis = "xyz"[i];
        if (grid == 0 || tg == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "grid and tg must be at least 1 in every dimension");
        if (grid > KP_GRID_DIM_MAX)
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu in dimension %c is above kprof's limit of %llu "
                                "threads per dimension",
                                (unsigned long long)grid, axis, KP_GRID_DIM_MAX);
        if (total > KP_GRID_TOTAL_MAX / grid)
            return kp_error_set(err, KPROF_INVALID,
                                "the grid has more than 2^40 threads, above kprof's limit");
        total *= grid;
        if (d->max_tg_dims[i] && tg > d->max_tg_dims[i])
            return kp_error_set(
                err, KPROF_INVALID, "tg %llu in dimension %c is above the device's maximum %llu",
                (unsigned long long)tg, axis, (unsigned long long)d->max_tg_dims[i]);
    }
    /* The kernel's own rule first: a size it was compiled never to take is the real reason,
     * whatever else is wrong with it. */
    kprof_status st = kp_lab_local_reflect(lab, l, refl, err);
    if (st != KPROF_OK) return st;
    st = kp_lab_check_tg_rule(refl, l, name, err);
    if (st != KPROF_OK) return st;
    for (int i = 0; i < l->dims; i++) {
        uint64_t grid = l->grid[i], tg = l->tg[i];
        uint64_t groups = grid / tg + (grid % tg != 0);
        if (d->uniform_groups && grid % tg != 0)
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu is not a multiple of tg %llu in dimension %c; %s needs "
                                "whole threadgroups (OpenCL C 1.2 uniform work-groups): use "
                                "--grid %llu and guard the tail in the kernel",
                                (unsigned long long)grid, (unsigned long long)tg, "xyz"[i],
                                d -> backend, (unsigned long long)(groups * tg));
    }
    uint64_t local = 0;
    for (int i = 0; i < lab->spec.count; i++)
        if (lab->spec.args[i].kind == KP_ARG_LOCAL) local += lab->spec.args[i].local_bytes;
    uint64_t threads = kp_launch_tg_threads(l);
    if (refl->max_tg && threads > refl->max_tg)
        return kp_error_set(err, KPROF_INVALID,
                            "tg %llu threads is above %s's maximum threadgroup size %llu "
                            "(kernel reflection%s)",
                            (unsigned long long)threads, name, (unsigned long long)refl->max_tg,
                            kp_reflection_limit_declared(refl) ? ""
                            : refl->max_tg < d->max_tg
                                ? "; register pressure lowers it below the device's"
                                : "");
    /* The backends report static memory alone (OpenCL's is read before any argument is set):
     * the local:BYTES arguments come on top. */
    uint64_t need = refl->static_local + local;
    if (local && d->local_mem && need > d->local_mem)
        return kp_error_set(err, KPROF_INVALID,
                            "local memory: %s needs %llu bytes per threadgroup (its local:BYTES "
                            "arguments, %llu bytes, and its own), above the device's %llu",
                            name, (unsigned long long)need, (unsigned long long)local,
                            (unsigned long long)d->local_mem);
    return KPROF_OK;
}

/* The vector width of a pointer parameter's element ("float4*" -> 4, "float*" -> 1); a 3-wide
 * vector takes the room of 4 (OpenCL C). 1 when the type is unknown. */
static uint64_t kp_param_vector_width(const kp_param *p)
{
    const char *t = p->type_name, *star = strchr(t, '*');
    if (!star) return 1;
    const char *end = star;
    while (end > t && end[-1] == ' ')
        end--;
    const char *d = end;
    while (d > t && isdigit((unsigned char)d[-1]))
        d--;
    if (d == end || d == t || !isalpha((unsigned char)d[-1])) return 1;
    int w = atoi(d);
    if (w == 3) return 4;
    return w == 2 || w == 4 || w == 8 || w == 16 ? (uint64_t)w : 1;
}

uint64_t kp_lab_grid_bytes(const kp_lab *lab, const kp_launch *launch, uint64_t *threads)
{
    uint64_t n = 1, total = 0;
    for (int d = 0; d < launch->dims; d++)
        n *= launch->grid[d];
    const kp_kernel_meta *k = lab->info.kernel;
    if (lab->info.replay) { /* u8 buffers of a capture: their sizes, not one byte per thread */
        if (threads) *threads = n;
        return lab->info.buffer_bytes;
    }
    for (int i = 0; i < lab->spec.count; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t width =
            k && k->params && i < k->nparams ? kp_param_vector_width(&k->params[i]) : 1;
        uint64_t per_thread = kp_type_size(a->type) * width;
        uint64_t bytes = kp_arg_bytes(a);
        total += n >= bytes / per_thread ? bytes : n * per_thread;
    }
    if (threads) *threads = n;
    return total;
}
