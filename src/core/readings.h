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
 *
 * With hardware counters (`--counters`: in->measured, lab/counters.h) the readings use the
 * measured figures where they have them:
 *   measured DRAM traffic (bytes read + written / median)
 *     >= 70% of the measured ceiling                        -> bandwidth-bound (above 110%:
 *                                                              the ceiling was measured low)
 *     below 70%                                             -> not bandwidth-bound
 *     (the ~GB/s estimate's sizes no longer decide it)
 *   (the counters' dispatch starts from a cold L2, as ncu's does: when the data fits in the
 *   cache and the timed dispatches ran warm, those bytes are not the timed ones' traffic; the
 *   bytes are reported as a cold-cache reading, with no rate, bandwidth reading or memory bound)
 *   measured DRAM bytes vs the estimate (the buffers, or --bytes):
 *     more than 20% apart                                   -> which way, and what it means
 *   the roofline: arithmetic intensity = FLOPs / DRAM bytes against the ceiling and the measured
 *   FP32 FLOP peak (ridge = peak / ceiling); the bound:
 *     memory   measured traffic >= 70% of the ceiling
 *     compute  FLOP/s >= 70% of the peak, or SM throughput >= 70% (its pipes are busy, whether
 *              with FP32 or not); when both, the roof it is nearer
 *     latency  under 30% of the ceiling, and of the peak and SM throughput (those known): far
 *              under both roofs, waiting, not moving or computing
 *     between  none of these: under both roofs, neither limiting
 */
#ifndef KP_CORE_READINGS_H
#define KP_CORE_READINGS_H

#include "base/util.h"

#include <stdint.h>

#define KP_READING_BANDWIDTH_FRACTION 0.70
/* Above this share of the ceiling the figure is more than the device's memory delivered (the
 * 10% allow for the noise between the ceiling's measurement and this one). */
#define KP_READING_CEILING_TOLERANCE 1.10
#define KP_READING_LOCAL_FRACTION    0.75
#define KP_READING_SUBMISSION_MS     0.05
/* Measured DRAM bytes and the estimate "differ" beyond this fraction of the estimate. */
#define KP_READING_TRAFFIC_TOLERANCE 0.20
/* Near a roof: at least this share of it (the bandwidth-bound share). */
#define KP_READING_ROOF_NEAR KP_READING_BANDWIDTH_FRACTION
/* Far under a roof: below this share of it. */
#define KP_READING_ROOF_FAR 0.30

/* What hardware counters measured of one dispatch (lab/counters.h fills it); all zero without. */
typedef struct kp_readings_measured {
    int have_dram; /* DRAM bytes read and written were both measured */
    double dram_read_bytes;
    double dram_write_bytes;
    int have_flops; /* FLOPs from the SASS counters (FP32 at least) */
    double flops;
    int have_sm_throughput;
    double sm_throughput_pct; /* 0..100 */
    double peak_gflops;       /* the device's measured FP32 FLOP peak, 0 when none */
} kp_readings_measured;

typedef struct kp_readings_input {
    double median_ms;       /* device (GPU) time per dispatch */
    double gbps;            /* ~GB/s touched */
    int bytes_assumed;      /* bytes from the once-per-element assumption (no --bytes) */
    uint64_t bytes;         /* bytes per dispatch the figure counts (--bytes, or the buffers) */
    uint64_t working_set;   /* sum of the buffers' sizes, bytes */
    uint64_t grid_bytes;    /* bytes the grid can touch: per buffer min(elements, threads) x
                               element size (one element per thread) */
    uint64_t grid_threads;  /* threads in the grid */
    uint64_t cache_bytes;   /* the device's last-level cache, 0 when unknown */
    double ceiling_gbs;     /* measured device ceiling, 0 when none */
    uint64_t kernel_max_tg; /* reflection */
    uint64_t device_max_tg;
    uint64_t static_local; /* bytes */
    uint64_t device_local; /* per-group limit, bytes */
    int have_occupancy;
    double occupancy;              /* 0..1 */
    const char *limiter;           /* occupancy limiter */
    int single_tg;                 /* one threadgroup size was measured */
    int not_gpu;                   /* the device is no GPU (a CPU through OpenCL): its time is
                                      "device time", and a sweep is about work-group sizes, not
                                      occupancy */
    int timed_cold;                /* the timed dispatches each began with a cold cache (a cold
                                      bench row); 0: warm, back to back (run, sweep, hot rows) */
    kp_readings_measured measured; /* hardware counters, when read */
} kp_readings_input;

/* Measured DRAM bytes against the estimate. */
typedef enum kp_traffic_reading {
    KP_TRAFFIC_UNKNOWN, /* not measured, or no estimate */
    KP_TRAFFIC_MATCHES, /* within 20% of the estimate */
    KP_TRAFFIC_MORE,    /* more than 20% above it */
    KP_TRAFFIC_LESS,    /* more than 20% below it */
} kp_traffic_reading;

/* Where the roofline puts the kernel (see the table above). */
typedef enum kp_bound {
    KP_BOUND_UNKNOWN, /* no measured traffic, or no ceiling to compare it with */
    KP_BOUND_MEMORY,
    KP_BOUND_COMPUTE,
    KP_BOUND_LATENCY,
    KP_BOUND_BETWEEN,
} kp_bound;

/* "unknown", "memory", "compute", "latency", "between" (JSON). */
const char *kp_bound_name(kp_bound b);

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
    int occupancy_limited; /* theoretical occupancy below 50% */
    int sweep_hint;
    /* From hardware counters (in->measured); zero without them. */
    int measured;             /* DRAM traffic was measured and is the timed dispatches': the
                                 bandwidth reading is from it */
    int dram_cold;            /* DRAM bytes were measured (dram_bytes, traffic), but from a cold
                                 L2 (the counters' dispatch, as ncu's) while the data fits in the
                                 cache and the timed dispatches ran warm: no measured GB/s, no
                                 bandwidth reading, ceiling_low or memory bound from them
                                 (measured stays 0) */
    double dram_bytes;        /* read + written, one dispatch */
    double measured_gbps;     /* dram_bytes / median */
    double measured_fraction; /* of the ceiling (0 without one) */
    int ceiling_low;          /* measured traffic above 110% of the ceiling */
    kp_traffic_reading traffic;
    double bytes_ratio;       /* measured DRAM bytes / the estimate (in->bytes); 0 when none */
    double gflops;            /* FLOPs / median / 1e9 (have_flops) */
    int have_intensity;       /* FLOPs and a non-zero DRAM traffic */
    double intensity;         /* FLOP per DRAM byte */
    int have_ridge;           /* a ceiling and a FLOP peak */
    double ridge;             /* FLOP per byte where the roofs meet: peak / ceiling */
    double attainable_gflops; /* the roofline at this intensity: min(peak, intensity x ceiling) */
    double flop_fraction;     /* gflops / peak (0 without a peak) */
    int compute_known;        /* the FLOP fraction or the SM throughput is known */
    double compute_fraction;  /* the larger of the two: how near the compute roof */
    int compute_from_sm;      /* compute_fraction is the SM throughput's */
    kp_bound bound;
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
