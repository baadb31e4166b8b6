/*
 * readings.h — what a kernel-lab measurement means, as flags and numbers (the analysis), kept
 * apart from the sentences that report it (kp_readings_describe). The thresholds are the seeds':
 *   ~GB/s touched >= 70% of the measured device ceiling     -> bandwidth-bound
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
#define KP_READING_LOCAL_FRACTION 0.75
#define KP_READING_SUBMISSION_MS 0.05

typedef struct kp_readings_input {
    double median_ms;         /* GPU time per dispatch */
    double gbps;              /* ~GB/s touched */
    int bytes_assumed;        /* bytes from the once-per-element assumption (no --bytes) */
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

typedef struct kp_readings {
    int have_ceiling;
    double ceiling_fraction;
    int bandwidth_bound;
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
    char text[512];
} kp_reading_line;

int kp_readings_describe(const kp_readings_input *in, const kp_readings *r, kp_reading_line *out,
                         int max);

#endif
