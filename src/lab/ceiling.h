/*
 * ceiling.h — the device's bandwidth ceiling, measured (`kprof caps --measure`): kprof's own
 * copy kernels over working sets beyond the last-level cache, at sizes and repeat counts chosen
 * for the device (kp_ceiling_plan_make), best of several dispatches, plus the demo_add kernel at
 * the largest size. Beside it, the device's FP32 FLOP peak: kprof's fma_f32 kernel
 * (kernels/fma.cu, fma.cl), best of the same number of dispatches — the compute roof of the
 * roofline `kprof run --counters` draws. The result goes to the store, and `kprof run` reports
 * ~GB/s (and, with --counters, measured GB/s and FLOP/s) against it.
 *
 * Two steps, so a caller can say what will be measured (or only that: --dry-run) before the
 * measuring starts: kp_ceiling_prepare chooses the device and makes the plan, kp_ceiling_measure
 * carries it out.
 */
#ifndef KP_LAB_CEILING_H
#define KP_LAB_CEILING_H

#include "backend/backend.h"
#include "lab/run_result.h"

#include <stdio.h>

#define KP_CEILING_MAX_SIZES 3
#define KP_CEILING_VARIANTS  3 /* copy_f4, copy_f4x4, copy_f4_stride */
/* A CPU's copies: copy_f4, copy_f4x4. It runs a grid-stride loop one work-item at a time,
 * striding across memory (PoCL: 20x below copy_f4), so that one never sets a CPU's ceiling. */
#define KP_CEILING_CPU_VARIANTS 2
#define KP_CEILING_CPU_MAX      (512ULL << 20) /* a CPU's buffer, unless its cache is larger */

/* What kp_ceiling_plan_make chose, and from what. The rule:
 *   GPU:        base = max(64 MiB, 8 x cache) rounded up to a power of two; base, 2x, 4x;
 *               20 timed dispatches after 3 warm-ups per point.
 *   any other   base = max(64 MiB, 4 x cache) rounded up to a power of two, but at most 512 MiB
 *   (CPU):      (KP_CEILING_CPU_MAX) or the cache rounded up to a power of two where that is
 *               more; that one size; copy_f4 and copy_f4x4 only (KP_CEILING_CPU_VARIANTS);
 *               20 timed dispatches after 1 warm-up per point (a CPU copies at tens of GB/s:
 *               filling and copying gigabytes took minutes; on a 2-core machine whose PoCL
 *               reports a 480 MiB cache, 512 MiB buffers take 5-16 s where 2 GiB took 100-550
 *               s, and measure 24.4 GB/s where 2 GiB measured 25.2-25.9 with both cores free:
 *               bench/results/2026-12-01-2core-caps-measure).
 * Every size is capped by the device's largest allocation, a quarter of its memory and
 * --max-bytes, and rounded down to whole 64-byte groups. "cache" is the last-level cache
 * (kp_device_info.cache_bytes). A buffer is one of two (source and destination).
 * The FLOP peak (one more point, fma_f32, 16 FLOPs per thread and iteration):
 *   GPU:        compute units x 8192 threads (a few waves of full SMs), 4096 iterations
 *               (about 1 ms on an H200);
 *   any other:  compute units x 4096 threads, 512 iterations. */
typedef enum kp_ceiling_cap {
    KP_CEILING_CAP_NONE,      /* the sizes are the rule's */
    KP_CEILING_CAP_DEVICE,    /* cut by the largest allocation or a quarter of memory */
    KP_CEILING_CAP_MAX_BYTES, /* cut by --max-bytes */
    KP_CEILING_CAP_CPU,       /* a CPU's KP_CEILING_CPU_MAX (or its cache) */
} kp_ceiling_cap;

typedef struct kp_ceiling_plan {
    int gpu;              /* sized as for a GPU (else as for a CPU) */
    uint64_t cache_bytes; /* the device's last-level cache, 0 when unknown */
    int cache_factor;     /* the rule's multiple of the cache for the first size: 8 or 4 */
    kp_ceiling_cap cap;   /* what cut the sizes, if anything */
    uint64_t cap_bytes;   /* the largest buffer allowed */
    int nsizes;
    /* Bytes per buffer, ascending. */
    uint64_t sizes[KP_CEILING_MAX_SIZES];
    int iters;            /* timed dispatches per point */
    int warmup;           /* untimed dispatches before them */
    int nvariants;        /* copy variants measured: the first nvariants of kp_ceiling_variant */
    int npoints;          /* copy variants x sizes, + demo_add, + fma_f32 */
    uint64_t fma_threads; /* the FLOP peak's grid */
    uint32_t fma_iters;   /* its iterations per thread */
    int in_cache;         /* the largest buffer is smaller than the cache: the figure would
                             be the cache's (only when the device's limits force it) */
} kp_ceiling_plan;

/* The plan for a device. max_bytes caps one buffer (0: none); iters overrides the timed count
 * (0: the rule's). INVALID, naming the cache and the smallest accepted value, when max_bytes is
 * below the device's last-level cache: buffers that fit in it measure the cache, not memory,
 * and the store would keep that as the device's ceiling. */
kprof_status kp_ceiling_plan_make(const kp_device_info *dev, uint64_t max_bytes, int iters,
                                  kp_ceiling_plan *plan, kp_error *err);

/* About how many seconds a plan takes on an idle machine: the sessions' start (0.3 s each),
 * filling the buffers (about 1 GB/s of host work), and the dispatches at the device's measured
 * ceiling and FLOP peak where known (ceiling_gbs, peak_gflops; 0: unknown), else at a guess (a
 * CPU 10 GB/s and 10 GFLOP/s, a GPU 500 GB/s and 10 TFLOP/s). What --dry-run says to expect. */
double kp_ceiling_plan_seconds(const kp_ceiling_plan *plan, double ceiling_gbs, double peak_gflops);

/* The name of copy variant i (0..KP_CEILING_VARIANTS-1): "copy_f4", ... */
const char *kp_ceiling_variant(int i);

/* FLOPs one dispatch of fma_f32 does at a plan's grid and iterations: threads x iters x 16. */
double kp_ceiling_fma_flops(const kp_ceiling_plan *plan);

#define KP_CEILING_MAX_POINTS 32

/* A device's ceiling as measured: what kp_ceiling_measure concludes and the store keeps per
 * device (store/store.h: kp_store_put_ceiling, kp_store_get_ceiling). */
typedef struct kp_ceiling {
    double copy_gbs;     /* best device-to-device copy, bytes read + written per s / 1e9 */
    uint64_t copy_bytes; /* buffer size of the best copy */
    double demo_add_gbs; /* demo_add at the largest size, ~GB/s touched */
    double demo_add_ms;  /* its median GPU ms */
    uint64_t demo_add_elements;
    int64_t measured_at;  /* unix seconds */
    char driver[128];     /* driver version when measured */
    char method[256];     /* what was measured, for people */
    double fma_gflops;    /* FP32 FLOP peak: kprof's FMA kernel, GFLOP/s; 0 when not
                             measured (or stored by a kprof without the column) */
    char fma_method[256]; /* how the peak was measured, for people ("" when none) */
} kp_ceiling;

typedef struct kp_ceiling_point {
    char kernel[32];   /* copy variant, "demo_add" or "fma_f32" */
    uint64_t bytes;    /* one buffer's size */
    double gflops;     /* fma_f32: FLOP/s of its fastest dispatch / 1e9; 0 for the others */
    kp_run_result run; /* the kernel's run: run.launch (1-D, tg in tg[0]), run.stats (ms; min the
                          fastest dispatch), run.bytes the bytes a dispatch moves, and run.gbps
                          over the fastest dispatch for a copy, over the median for demo_add */
} kp_ceiling_point;

typedef struct kp_ceiling_options {
    const char *backend; /* as for kp_backend_choose */
    int device;
    uint64_t max_bytes; /* cap on one buffer (0 = choose from the device) */
    int iters;          /* timed dispatches per point (0 = choose from the device) */
    /* Called after each point (progress); may be NULL. */
    void (*progress)(const kp_ceiling_point *p, int done, int total, void *user);
    void *user;
} kp_ceiling_options;

typedef struct kp_ceiling_result {
    kp_device_info device;
    kp_ceiling_plan plan;
    const kp_backend_ops *ops; /* the device's backend (set by kp_ceiling_prepare) */
    kp_ceiling ceiling;
    int npoints;
    kp_ceiling_point points[KP_CEILING_MAX_POINTS];
} kp_ceiling_result;

/* Choose the device and plan the measurement: out->device and out->plan. Measures nothing. */
kprof_status kp_ceiling_prepare(const kp_ceiling_options *opts, kp_ceiling_result *out,
                                kp_error *err);

/* Measure as prepared (out from kp_ceiling_prepare); the caller stores the result
 * (kp_store_put_ceiling). */
kprof_status kp_ceiling_measure(const kp_ceiling_options *opts, kp_ceiling_result *out,
                                kp_error *err);

/* kp_ceiling_measure's last step, public for its test: out->ceiling from out->points — the
 * copy that moved the most bytes per second, and the FP32 FLOP peak from the fma_f32 point
 * when fma_st is OK. The peak is optional: when fma_st is not OK (or no fma_f32 point has one)
 * the ceiling is kept without it (fma_gflops 0: NULL in the store) and one line
 * `kprof: warning: ...` naming fma_why goes to warn (none when warn is NULL). INVALID when no
 * copy was measured. */
kprof_status kp_ceiling_conclude(kp_ceiling_result *out, kprof_status fma_st, const char *fma_why,
                                 FILE *warn, kp_error *err);

#endif
