/*
 * lab_trace.c — a lab session's dispatch log as one record file for the store's ingest (see
 * lab_trace.h).
 */
#include "lab/lab_trace.h"
#include "collect/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* A metric record of the event record before it (record.h: KP_REC_METRIC). */
static kp_rec kp_lab_metric(uint32_t key, double value)
{
    kp_rec m;
    memset(&m, 0, sizeof m);
    m.kind = KP_REC_METRIC;
    m.name = key;
    memcpy(&m.bytes, &value, sizeof value);
    m.aux = KP_REC_KERNEL;
    return m;
}

/* The event record of entry i and its metrics: how many records were made in out[0..4]. */
static size_t kp_lab_entry_records(const kp_lab_log *log, size_t i, const kp_device_info *device,
                                   const uint32_t *names, const uint32_t keys[4], kp_rec out[5])
{
    const kp_lab_tag *tag = &log->tags[i];
    const kp_lab_site *site = &log->sites[tag->site];
    kp_rec *r = &out[0];
    memset(r, 0, sizeof *r);
    r->kind = KP_REC_KERNEL;
    /* As the collectors have device work: OpenCL's under its API, CUDA's under none. */
    r->domain = strcmp(device->backend, "opencl") == 0 ? KP_DOMAIN_OPENCL : KP_DOMAIN_NONE;
    r->name = names[tag->site];
    r->tid = kp_writer_tid();
    r->start = (uint64_t)log->spans[i].start_ns;
    r->end = (uint64_t)log->spans[i].end_ns;
    r->device = (uint32_t)device->index;
    r->stream = 1;
    if (site->have_launch) {
        const kp_launch *l = &site->launch;
        for (int d = 0; d < 3; d++) {
            uint64_t tg = d < l->dims ? l->tg[d] : 1, grid = d < l->dims ? l->grid[d] : 1;
            uint64_t groups = tg ? (grid + tg - 1) / tg : 0;
            r->grid[d] = groups > INT32_MAX ? INT32_MAX : (int32_t)groups;
            r->block[d] = tg > INT32_MAX ? INT32_MAX : (int32_t)tg;
        }
    }
    if (site->have_refl) {
        const kp_reflection *f = &site->refl;
        if (f->have_registers && f->registers > 0) r->registers = (uint32_t)f->registers;
        r->static_smem = f->static_local > UINT32_MAX ? UINT32_MAX : (uint32_t)f->static_local;
        r->dynamic_smem = f->dynamic_local > UINT32_MAX ? UINT32_MAX : (uint32_t)f->dynamic_local;
        r->local_mem = f->private_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)f->private_bytes;
    }
    size_t n = 1;
    out[n++] = kp_lab_metric(keys[0], (double)tag->iteration);
    if (site->have_refl && site->refl.have_occupancy)
        out[n++] = kp_lab_metric(keys[1], site->refl.occupancy);
    if (!isnan(site->flops)) out[n++] = kp_lab_metric(keys[2], site->flops);
    if (!isnan(site->bytes)) out[n++] = kp_lab_metric(keys[3], site->bytes);
    return n;
}

kprof_status kp_lab_trace_records(const kp_lab_log *log, const kp_device_info *device,
                                  const char *dir, kp_error *err)
{
    if (kp_writer_active())
        return kp_error_set(err, KPROF_INVALID,
                            "the lab's trace cannot be written while this process records a "
                            "trace of its own (a libkprof session)");
    kprof_status st = kp_writer_start_in(dir, KP_LAB_COLLECTOR, 0, err);
    if (st != KPROF_OK) return st;
    uint32_t *names = calloc(log->nsites ? log->nsites : 1, sizeof *names);
    if (!names) {
        kp_writer_stop();
        return kp_error_nomem(err);
    }
    const uint32_t keys[4] = {kp_writer_string("iteration"), kp_writer_string("occupancy"),
                              kp_writer_string("flops"), kp_writer_string("bytes")};
    int opencl = strcmp(device->backend, "opencl") == 0;
    for (size_t s = 0; s < log->nsites; s++) {
        const kp_lab_site *site = &log->sites[s];
        names[s] = kp_writer_string(site->kernel);
        int first = 1; /* one KERNEL_INFO per kernel name */
        for (size_t t = 0; t < s; t++)
            if (names[t] == names[s]) first = 0;
        if (!opencl || !site->have_refl || !first) continue;
        kp_rec info;
        memset(&info, 0, sizeof info);
        info.kind = KP_REC_KERNEL_INFO;
        info.name = names[s];
        info.device = (uint32_t)device->index;
        info.static_smem =
            site->refl.static_local > UINT32_MAX ? UINT32_MAX : (uint32_t)site->refl.static_local;
        info.local_mem =
            site->refl.private_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)site->refl.private_bytes;
        info.bytes = site->refl.max_tg;
        info.aux = (uint32_t)site->refl.preferred_multiple;
        kp_writer_emit(&info);
    }
    for (size_t i = 0; i < log->n; i++) {
        kp_rec recs[5];
        size_t n = kp_lab_entry_records(log, i, device, names, keys, recs);
        kp_writer_emit_n(recs, n);
    }
    free(names);
    kp_writer_stop();
    return st;
}
