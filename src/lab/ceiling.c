/*
 * ceiling.c — measuring the device's bandwidth ceiling with kprof's copy kernels (see
 * ceiling.h): the plan (sizes and repeats from the device), then the points. Each point is one
 * kernel at one size: warm-ups, then timed dispatches; the point's bandwidth is from its fastest
 * dispatch ("best of many"), and the ceiling is the best point. The last point is the FP32 FLOP
 * peak, fma_f32's fastest dispatch, measured the same way.
 */
#include "lab/ceiling.h"
#include "core/format.h"
#include "base/util.h"
#include "lab/lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char kp_embedded_copy_cl[];
extern const size_t kp_embedded_copy_cl_len;
extern const char kp_embedded_copy_cu[];
extern const size_t kp_embedded_copy_cu_len;
extern const char kp_embedded_demo_add_cl[];
extern const size_t kp_embedded_demo_add_cl_len;
extern const char kp_embedded_demo_add_cu[];
extern const size_t kp_embedded_demo_add_cu_len;
extern const char kp_embedded_fma_cl[];
extern const size_t kp_embedded_fma_cl_len;
extern const char kp_embedded_fma_cu[];
extern const size_t kp_embedded_fma_cu_len;

#define KP_MIB (1ULL << 20)

kprof_status kp_ceiling_plan_make(const kp_device_info *dev, uint64_t max_bytes, int iters,
                                  kp_ceiling_plan *plan, kp_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->gpu = dev->is_gpu;
    plan->cache_bytes = dev->cache_bytes;
    plan->cache_factor = plan->gpu ? 8 : 4;
    plan->iters = iters > 0 ? iters : 20;
    plan->warmup = plan->gpu ? 3 : 1;
    plan->nvariants = plan->gpu ? KP_CEILING_VARIANTS : KP_CEILING_CPU_VARIANTS;
    int wanted = plan->gpu ? 3 : 1;
    uint64_t cache = plan->cache_bytes;

    if (max_bytes && cache && max_bytes < cache) {
        char a[64], b[64];
        return kp_error_set(err, KPROF_INVALID,
                            "--max-bytes %s is below this device's %s last-level cache: buffers "
                            "that fit in it measure the cache, not memory, and kprof would keep "
                            "that as the device's ceiling. Give --max-bytes %lluM or more, or "
                            "leave it out to let kprof choose",
                            kp_format_bytes(max_bytes, a, sizeof a),
                            kp_format_bytes(cache, b, sizeof b),
                            (unsigned long long)((cache + KP_MIB - 1) / KP_MIB));
    }
    uint64_t base = 64 * KP_MIB;
    while (cache && base < (uint64_t)plan->cache_factor * cache)
        base *= 2;
    if (!plan->gpu) {
        /* Filling and copying gigabytes on a CPU takes minutes: at most KP_CEILING_CPU_MAX, or
         * the cache rounded up to a power of two where that is more (source and destination
         * together then always exceed the cache). */
        uint64_t most = KP_CEILING_CPU_MAX;
        while (cache && most < cache)
            most *= 2;
        if (base > most) {
            base = most;
            plan->cap = KP_CEILING_CAP_CPU;
        }
    }
    uint64_t cap = dev->global_mem ? dev->global_mem / 4 : base << (wanted - 1);
    if (dev->max_alloc && dev->max_alloc < cap) cap = dev->max_alloc;
    kp_ceiling_cap why = KP_CEILING_CAP_DEVICE;
    if (max_bytes && max_bytes < cap) {
        cap = max_bytes;
        why = KP_CEILING_CAP_MAX_BYTES;
    }
    cap &= ~(uint64_t)63; /* whole float4 groups for every variant */
    plan->cap_bytes = cap;
    for (int i = 0; i < wanted; i++) {
        uint64_t s = base << i;
        if (s > cap) {
            s = cap;
            plan->cap = why;
        }
        if (plan->nsizes > 0 && s == plan->sizes[plan->nsizes - 1]) break;
        plan->sizes[plan->nsizes++] = s;
    }
    plan->in_cache = cache && plan->sizes[plan->nsizes - 1] < cache;
    plan->npoints = plan->nsizes * plan->nvariants + 2;
    uint64_t units = dev->compute_units ? dev->compute_units : 1;
    plan->fma_threads = units * (plan->gpu ? 8192 : 4096);
    plan->fma_iters = plan->gpu ? 4096 : 512;
    return KPROF_OK;
}

double kp_ceiling_fma_flops(const kp_ceiling_plan *plan)
{
    return (double)plan->fma_threads * (double)plan->fma_iters * 16.0;
}

double kp_ceiling_plan_seconds(const kp_ceiling_plan *plan, double ceiling_gbs, double peak_gflops)
{
    double gbs = ceiling_gbs > 0 ? ceiling_gbs : plan->gpu ? 500 : 10;
    double gflops = peak_gflops > 0 ? peak_gflops : plan->gpu ? 10000 : 10;
    double dispatches = plan->warmup + plan->iters;
    double s = 0.3 * (plan->nsizes + 2); /* sessions: a copy one per size, demo_add, fma_f32 */
    for (int i = 0; i < plan->nsizes; i++) {
        double bytes = (double)plan->sizes[i];
        s += 2 * bytes / 1e9; /* fill source and destination */
        s += plan->nvariants * dispatches * 2 * bytes / (gbs * 1e9); /* read + write */
    }
    double largest = plan->nsizes ? (double)plan->sizes[plan->nsizes - 1] : 0;
    s += largest / 1e9 + dispatches * largest / (gbs * 1e9); /* demo_add: three thirds */
    s += dispatches * kp_ceiling_fma_flops(plan) / (gflops * 1e9);
    return s;
}

typedef struct kp_copy_variant {
    const char *entry;
    int per_thread; /* float4 per thread; 0 = grid-stride with a fixed grid */
} kp_copy_variant;

static const kp_copy_variant kp_copy_variants[KP_CEILING_VARIANTS] = {
    {"copy_f4", 1},
    {"copy_f4x4", 4},
    {"copy_f4_stride", 0},
};

const char *kp_ceiling_variant(int i)
{
    return i >= 0 && i < KP_CEILING_VARIANTS ? kp_copy_variants[i].entry : "";
}

/* Which of kprof's own kernels a session runs. */
typedef enum kp_ceiling_source {
    KP_CEILING_COPY,     /* the copy variants */
    KP_CEILING_DEMO_ADD, /* demo_add */
    KP_CEILING_FMA,      /* fma_f32: the FLOP peak */
} kp_ceiling_source;

/* A lab session on one of kprof's own kernels. */
static kp_lab_options kp_ceiling_lab_options(const kp_backend_ops *ops, kp_ceiling_source which,
                                             const char *spec, int index)
{
    int cuda = ops->source_lang == KP_LANG_CUDA; /* else OpenCL C */
    kp_lab_options lo = {
        .entry = which == KP_CEILING_DEMO_ADD ? "demo_add"
                 : which == KP_CEILING_FMA    ? "fma_f32"
                                              : "copy_f4",
        .buffers = spec,
        .backend = ops->name,
        .device = index,
        .source_lang = ops->source_lang,
    };
    if (which == KP_CEILING_FMA) {
        lo.source_text = cuda ? kp_embedded_fma_cu : kp_embedded_fma_cl;
        lo.source_len = cuda ? kp_embedded_fma_cu_len : kp_embedded_fma_cl_len;
        lo.source_name = cuda ? "kprof:fma.cu" : "kprof:fma.cl";
    } else if (which == KP_CEILING_DEMO_ADD) {
        lo.source_text = cuda ? kp_embedded_demo_add_cu : kp_embedded_demo_add_cl;
        lo.source_len = cuda ? kp_embedded_demo_add_cu_len : kp_embedded_demo_add_cl_len;
        lo.source_name = cuda ? "kprof:demo_add.cu" : "kprof:demo_add.cl";
    } else {
        lo.source_text = cuda ? kp_embedded_copy_cu : kp_embedded_copy_cl;
        lo.source_len = cuda ? kp_embedded_copy_cu_len : kp_embedded_copy_cl_len;
        lo.source_name = cuda ? "kprof:copy.cu" : "kprof:copy.cl";
    }
    return lo;
}

/* One timed point: its run at launch, iters dispatches after warmup. */
static kprof_status kp_ceiling_point_run(kp_lab *lab, const kp_launch *launch, int warmup,
                                         int iters, double *samples, double *scratch,
                                         kp_ceiling_point *p, kp_error *err)
{
    kprof_status st = kp_lab_measure(lab, launch, warmup, iters, samples, err);
    if (st != KPROF_OK) return st;
    p->run.iters = iters;
    p->run.warmup = warmup;
    kp_run_result_time(&p->run, samples, (size_t)iters, scratch);
    return KPROF_OK;
}

/* One point of a kernel of its own (demo_add, fma_f32): a lab of which's source over spec, n
 * threads in groups of tg, timed as the plan says and appended to out->points (*pp, once the
 * launch is checked). The caller fills in what the point's figures mean. */
static kprof_status kp_ceiling_one_point(kp_ceiling_result *out, int which, const char *spec,
                                         const char *name, uint64_t n, uint64_t tg, double *samples,
                                         double *scratch, kp_ceiling_point **pp, kp_error *err)
{
    *pp = NULL;
    kp_lab_options lo = kp_ceiling_lab_options(out->ops, which, spec, out->device.index);
    kp_lab *lab = NULL;
    kprof_status st = kp_lab_open(&lo, &lab, err);
    if (st == KPROF_OK) {
        kp_launch l = {.dims = 1, .grid = {n, 1, 1}, .tg = {tg, 1, 1}};
        kp_reflection refl;
        st = kp_lab_check_launch(lab, &l, &refl, err);
        if (st == KPROF_OK && out->npoints >= KP_CEILING_MAX_POINTS)
            st = kp_error_set(err, KPROF_INVALID, "more than %d ceiling points",
                              KP_CEILING_MAX_POINTS);
        if (st == KPROF_OK) {
            kp_ceiling_point *p = &out->points[out->npoints++];
            snprintf(p->kernel, sizeof p->kernel, "%s", name);
            p->bytes = n * 4;
            p->run.launch = l;
            *pp = p;
            st = kp_ceiling_point_run(lab, &l, out->plan.warmup, out->plan.iters, samples, scratch,
                                      p, err);
        }
    }
    if (st == KPROF_OK) st = kp_lab_finish(lab, err);
    kp_lab_close(lab);
    return st;
}

kprof_status kp_ceiling_prepare(const kp_ceiling_options *opts, kp_ceiling_result *out,
                                kp_error *err)
{
    memset(out, 0, sizeof *out);
    int index = -1;
    /* Not kp_backend_choose: its runtime loaded here would keep the sessions below from running
     * in a child process (lab.h). */
    kprof_status st =
        kp_lab_device(opts->backend, opts->device, -1, &out->ops, &index, &out->device, err);
    if (st != KPROF_OK) return st;
    return kp_ceiling_plan_make(&out->device, opts->max_bytes, opts->iters, &out->plan, err);
}

kprof_status kp_ceiling_measure(const kp_ceiling_options *opts, kp_ceiling_result *out,
                                kp_error *err)
{
    if (!out->ops || out->plan.nsizes < 1)
        return kp_error_set(err, KPROF_INVALID, "kp_ceiling_measure before kp_ceiling_prepare");
    kprof_status st = KPROF_OK;
    const kp_ceiling_plan *plan = &out->plan;
    int index = out->device.index;
    int iters = plan->iters, warmup = plan->warmup;
    int nsizes = plan->nsizes;
    const uint64_t *sizes = plan->sizes;
    out->npoints = 0;
    double *samples = calloc((size_t)iters, sizeof *samples);
    double *scratch = calloc((size_t)iters, sizeof *scratch);
    if (!samples || !scratch) {
        free(samples);
        free(scratch);
        return kp_error_nomem(err);
    }
    int nvariants = plan->nvariants;
    int total = plan->npoints, done = 0;
    uint64_t tg = out->device.max_tg >= 256 ? 256 : out->device.max_tg;

    for (int si = 0; si < nsizes && st == KPROF_OK; si++) {
        uint64_t bytes = sizes[si];
        uint64_t n4 = bytes / 16;
        char spec[128];
        snprintf(spec, sizeof spec, "f32:%llu:zero,f32:%llu:iota,u64=%llu",
                 (unsigned long long)(bytes / 4), (unsigned long long)(bytes / 4),
                 (unsigned long long)n4);
        kp_lab_options lo = kp_ceiling_lab_options(out->ops, KP_CEILING_COPY, spec, index);
        kp_lab *lab = NULL;
        st = kp_lab_open(&lo, &lab, err);
        for (int v = 0; v < nvariants && st == KPROF_OK; v++) {
            const kp_copy_variant *cv = &kp_copy_variants[v];
            st = kp_lab_use_kernel(lab, cv->entry, err);
            if (st != KPROF_OK) break;
            uint64_t threads = cv->per_thread ? n4 / (uint64_t)cv->per_thread
                                              : (uint64_t)out->device.compute_units * 4 * tg;
            threads = (threads + tg - 1) / tg * tg; /* whole groups; kernels guard the tail */
            kp_launch l = {.dims = 1, .grid = {threads, 1, 1}, .tg = {tg, 1, 1}};
            kp_reflection refl;
            st = kp_lab_check_launch(lab, &l, &refl, err);
            if (st != KPROF_OK) break;
            kp_ceiling_point *p = &out->points[out->npoints++];
            snprintf(p->kernel, sizeof p->kernel, "%s", cv->entry);
            p->bytes = bytes;
            p->run.launch = l;
            st = kp_ceiling_point_run(lab, &l, warmup, iters, samples, scratch, p, err);
            if (st != KPROF_OK) break;
            p->run.bytes = 2 * n4 * 16; /* read + write */
            p->run.gbps = 2.0 * (double)(n4 * 16) / (p->run.stats.min * 1e-3) / 1e9;
            if (opts->progress) opts->progress(p, ++done, total, opts->user);
        }
        if (st == KPROF_OK) st = kp_lab_finish(lab, err); /* what it measured stands */
        kp_lab_close(lab);
    }

    /* demo_add at the largest size: three buffers of sizes[n-1] / 3 rounded to whole groups. */
    if (st == KPROF_OK) {
        uint64_t n = sizes[nsizes - 1] / 4 / 3;
        n = n / tg * tg;
        char spec[160];
        snprintf(spec, sizeof spec, "f32:%llu,f32:%llu,f32:%llu,u32=%llu", (unsigned long long)n,
                 (unsigned long long)n, (unsigned long long)n, (unsigned long long)n);
        kp_ceiling_point *p = NULL;
        st = kp_ceiling_one_point(out, KP_CEILING_DEMO_ADD, spec, "demo_add", n, tg, samples,
                                  scratch, &p, err);
        if (st == KPROF_OK) {
            p->run.bytes = 3 * n * 4; /* two read, one written */
            p->run.gbps = 3.0 * (double)(n * 4) / (p->run.stats.median * 1e-3) / 1e9;
            out->ceiling.demo_add_gbs = p->run.gbps;
            out->ceiling.demo_add_ms = p->run.stats.median;
            out->ceiling.demo_add_elements = n;
            if (opts->progress) opts->progress(p, ++done, total, opts->user);
        }
    }

    /* The FP32 FLOP peak: fma_f32's fastest dispatch. Optional: where it cannot be measured,
     * the bandwidth ceiling stands without it (kp_ceiling_conclude warns). */
    kprof_status fma_st = KPROF_OK;
    kp_error fma_err = {0};
    if (st == KPROF_OK) {
        uint64_t n = (plan->fma_threads + tg - 1) / tg * tg;
        char spec[128];
        snprintf(spec, sizeof spec, "f32:%llu:zero,u32=%u", (unsigned long long)n,
                 (unsigned)plan->fma_iters);
        int before = out->npoints;
        kp_ceiling_point *fma = NULL;
        fma_st = kp_ceiling_one_point(out, KP_CEILING_FMA, spec, "fma_f32", n, tg, samples, scratch,
                                      &fma, &fma_err);
        if (fma_st == KPROF_OK && fma->run.stats.min > 0) {
            kp_ceiling_plan at = *plan; /* the grid as launched: whole groups */
            at.fma_threads = n;
            fma->gflops = kp_ceiling_fma_flops(&at) / (fma->run.stats.min * 1e-3) / 1e9;
            if (opts->progress) opts->progress(fma, ++done, total, opts->user);
        } else if (fma_st == KPROF_OK) {
            fma_st = kp_error_set(&fma_err, KPROF_BACKEND, "fma_f32 took no measurable time");
        }
        if (fma_st != KPROF_OK) out->npoints = before; /* no point of a failed measurement */
        if (fma_st == KPROF_NOMEM) st = kp_error_set(err, KPROF_NOMEM, "%s", fma_err.message);
    }
    free(samples);
    free(scratch);
    if (st == KPROF_OK) st = kp_ceiling_conclude(out, fma_st, fma_err.message, stderr, err);
    kp_error_clear(&fma_err);
    return st;
}

kprof_status kp_ceiling_conclude(kp_ceiling_result *out, kprof_status fma_st, const char *fma_why,
                                 FILE *warn, kp_error *err)
{
    const kp_ceiling_point *best = NULL, *fma = NULL;
    for (int i = 0; i < out->npoints; i++) {
        const kp_ceiling_point *p = &out->points[i];
        if (strcmp(p->kernel, "fma_f32") == 0)
            fma = p;
        else if (strcmp(p->kernel, "demo_add") != 0 && (!best || p->run.gbps > best->run.gbps))
            best = p;
    }
    if (!best || best->run.gbps <= 0)
        return kp_error_set(err, KPROF_INVALID, "no copy kernel was measured");
    int iters = out->plan.iters;
    if (fma_st == KPROF_OK && fma && fma->gflops > 0) {
        out->ceiling.fma_gflops = fma->gflops;
        snprintf(out->ceiling.fma_method, sizeof out->ceiling.fma_method,
                 "best of %d dispatches of fma_f32: %llu threads x %u iterations x 8 FMA chains "
                 "(16 FLOPs each), tg %llu",
                 iters, (unsigned long long)fma->run.launch.grid[0], (unsigned)out->plan.fma_iters,
                 (unsigned long long)fma->run.launch.tg[0]);
    } else {
        out->ceiling.fma_gflops = 0; /* NULL in the store */
        out->ceiling.fma_method[0] = '\0';
        if (warn)
            fprintf(warn,
                    "kprof: warning: the FP32 FLOP peak (fma_f32) could not be measured: %s; the "
                    "bandwidth ceiling is stored without it (run kprof caps --measure again to "
                    "add it)\n",
                    fma_why && *fma_why ? fma_why : "no result");
    }
    out->ceiling.copy_gbs = best->run.gbps;
    out->ceiling.copy_bytes = best->bytes;
    out->ceiling.measured_at = kp_unix_now();
    snprintf(out->ceiling.driver, sizeof out->ceiling.driver, "%s", out->device.driver);
    snprintf(out->ceiling.method, sizeof out->ceiling.method,
             "best of %d dispatches of %s over %llu MiB (read + write), tg %llu", iters,
             best->kernel, (unsigned long long)(best->bytes >> 20),
             (unsigned long long)best->run.launch.tg[0]);
    return KPROF_OK;
}
