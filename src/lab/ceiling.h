/*
 * ceiling.h — the device's bandwidth ceiling, measured (`kprof caps --measure`): kprof's own
 * copy kernels over working sets far beyond the last-level cache, at several sizes, best of many
 * dispatches, plus the demo_add kernel at the largest size. The result goes to the store, and
 * `kprof run` reports ~GB/s against it.
 */
#ifndef KP_LAB_CEILING_H
#define KP_LAB_CEILING_H

#include "backend/backend.h"
#include "store/store.h"

#define KP_CEILING_MAX_POINTS 32

typedef struct kp_ceiling_point {
    char kernel[32];   /* copy variant, or "demo_add" */
    uint64_t bytes;    /* buffer size */
    uint64_t tg;
    double best_ms;    /* fastest dispatch */
    double median_ms;
    double gbs;        /* moved bytes / best_ms */
} kp_ceiling_point;

typedef struct kp_ceiling_options {
    const char *backend; /* as for kp_backend_choose */
    int device;
    uint64_t max_bytes;  /* cap on one buffer (0 = choose from the device) */
    int iters;           /* timed dispatches per point (default 20) */
    /* Called after each point (progress); may be NULL. */
    void (*progress)(const kp_ceiling_point *p, int done, int total, void *user);
    void *user;
} kp_ceiling_options;

typedef struct kp_ceiling_result {
    kp_device_info device;
    kp_ceiling ceiling;
    int npoints;
    kp_ceiling_point points[KP_CEILING_MAX_POINTS];
} kp_ceiling_result;

/* Measure; the caller stores the result (kp_store_put_ceiling). */
kprof_status kp_ceiling_measure(const kp_ceiling_options *opts, kp_ceiling_result *out,
                                kp_error *err);

/* The buffer sizes measured for a device: base = max(64 MiB, 8 x last-level cache) rounded up
 * to a power of two, then 2x and 4x, each capped by the largest allocation and a quarter of
 * global memory (and max_bytes when non-zero). Returns how many (1..3). Exposed for tests. */
int kp_ceiling_sizes(const kp_device_info *dev, uint64_t max_bytes, uint64_t sizes[3]);

#endif
