/*
 * readings.h — what a kernel-lab measurement means, as flags and numbers (the analysis), kept
 * apart from the sentences that report it (kp_readings_describe). The thresholds are the seeds':
 *   ~GB/s touched 70%..110% of the measured device ceiling,
 *     and the figure can be DRAM traffic                    -> bandwidth-bound
 *   ~GB/s touched above 110% of the ceiling, or near it but
 *     not DRAM traffic                                      -> the reasons it cannot be DRAM
 *                                                              traffic; never bandwidth-bound
 *   kernel max threads per group < device max               -> register pressure
 *   static group memory >= 75% of the per-group limit       -> shared-memory-bound occupancy
 *   GPU time per dispatch < 0.05 ms                         -> submission economics dominate
 *   one threadgroup size measured                            -> not an occupancy conclusion
 */
#ifndef KP_CORE_READINGS_H
#define KP_CORE_READINGS_H

#include "core/util.h"

#include <stdint.h>

#define KP_READING_BANDWIDTH_FRACTION 0.70
/* Above this share of the ceiling the figure is more than the device's memory delivered (the
 * 10% allow for the noise between the ceiling's measurement and this one). */
#define KP_READING_CEILING_TOLERANCE 1.10
#define KP_READING_LOCAL_FRACTION 0.75
#define KP_READING_SUBMISSION_MS 0.05

typedef struct kp_readings_input {
    double median_ms;         /* GPU time per dispatch */
    double gbps;              /* ~GB/s touched */
    int bytes_assumed;        /* bytes from the once-per-element assumption (no --bytes) */
    uint64_t bytes;           /* bytes per dispatch the figure counts (--bytes, or the buffers) */
    uint64_t working_set;     /* sum of the buffers' sizes, bytes */
    uint64_t grid_bytes;      /* bytes the grid can touch: per buffer min(elements, threads) x
                                 element size (one element per thread) */
    uint64_t grid_threads;    /* threads in the grid */
    uint64_t cache_bytes;     /* the device's last-level cache, 0 when unknown */
    double ceiling_gbs;       /* measured device ceiling, 0 when none */
    uint64_t kernel_max_tg;   /* reflection */
    uint64_t device_max_tg;
    uint64_t static_local;    /* bytes */
    uint64_t device_local;    /* per-group limit, bytes */
    int have_occupancy;
    double occupancy;         /* 0..1 */
    const char *limiter;      /* occupancy limiter */
    int single_tg;            /* one threadgroup size was measured */
} kp_readings_input;

/* What ~GB/s touched says about DRAM bandwidth. */
typedef enum kp_bandwidth_reading {
    KP_BANDWIDTH_NO_CEILING, /* no measured ceiling to compare with */
    KP_BANDWIDTH_BELOW,      /* under 70% of the ceiling: not bandwidth-bound by this estimate */
    KP_BANDWIDTH_BOUND,      /* 70%..110% of the ceiling and it can be DRAM traffic */
    KP_BANDWIDTH_NOT_DRAM,   /* 70%..110%, but the sizes say it is not DRAM traffic */
    KP_BANDWIDTH_ABOVE       /* above 110%: more than the memory delivers, so not all DRAM */
} kp_bandwidth_reading;

typedef struct kp_readings {
    int have_ceiling;
    double ceiling_fraction;
    kp_bandwidth_reading bandwidth;
    int bandwidth_bound; /* bandwidth == KP_BANDWIDTH_BOUND */
    /* Why the figure cannot be DRAM traffic (any number of them; set whatever the fraction). */
    int grid_short;      /* no --bytes, and the grid touches less than the buffers hold */
    int fits_cache;      /* the data the kernel can touch fits in the last-level cache */
    uint64_t footprint;  /* that data: the buffers, or what the grid reaches when less */
    int bytes_overstate; /* above the ceiling with --bytes, and the cache does not explain
                            it: --bytes is more than the kernel moves */
    int unexplained;     /* above the ceiling, no --bytes, and no size explains it: the
                            kernel touches less than each element once, or the ceiling was
                            measured low */
    int register_pressure;
    int shared_memory_bound;
    double local_fraction;
    int submission_bound;
    int occupancy_limited;    /* theoretical occupancy below 50% */
    int sweep_hint;
} kp_readings;

void kp_readings_compute(const kp_readings_input *in, kp_readings *out);

/* One reading per call: id (stable, for JSON) and sentence. Returns the number written. */
typedef struct kp_reading_line {
    char id[32];
    char text[1024];
} kp_reading_line;

int kp_readings_describe(const kp_readings_input *in, const kp_readings *r, kp_reading_line *out,
                         int max);

#endif
