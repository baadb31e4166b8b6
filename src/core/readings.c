/*
 * readings.c — the seeds' readings computed from a measurement (kp_readings_compute: numbers and
 * flags only), and their sentences (kp_readings_describe: prose only, from those flags). With
 * hardware counters the bandwidth reading comes from measured DRAM traffic, and the roofline and
 * the measured-against-estimated bytes are read too (kp_readings_measure).
 */
#include "core/readings.h"
#include "core/format.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *kp_bound_name(kp_bound b)
{
    switch (b) {
    case KP_BOUND_MEMORY:
        return "memory";
    case KP_BOUND_COMPUTE:
        return "compute";
    case KP_BOUND_LATENCY:
        return "latency";
    case KP_BOUND_BETWEEN:
        return "between";
    case KP_BOUND_UNKNOWN:
        break;
    }
    return "unknown";
}

/* The measured figures (in->measured): numbers and flags, over what kp_readings_compute set from
 * the estimate. The bandwidth reading becomes the measured traffic's. */
static void kp_readings_measure(const kp_readings_input *in, kp_readings *r)
{
    const kp_readings_measured *m = &in->measured;
    double seconds = in->median_ms * 1e-3;
    if (m->have_dram) {
        r->dram_bytes = m->dram_read_bytes + m->dram_write_bytes;
        /* The counters' dispatch began with a cold L2; warm timed dispatches of data that fits
         * in it read little of it from DRAM: those bytes over their median are no rate. */
        r->dram_cold = r->fits_cache && !in->timed_cold;
        r->measured = !r->dram_cold;
        if (r->measured) r->measured_gbps = seconds > 0 ? r->dram_bytes / seconds / 1e9 : 0;
        if (in->bytes > 0) {
            r->bytes_ratio = r->dram_bytes / (double)in->bytes;
            r->traffic = fabs(r->bytes_ratio - 1) <= KP_READING_TRAFFIC_TOLERANCE
                             ? KP_TRAFFIC_MATCHES
                         : r->bytes_ratio > 1 ? KP_TRAFFIC_MORE
                                              : KP_TRAFFIC_LESS;
        }
        if (r->measured && in->ceiling_gbs > 0) {
            r->measured_fraction = r->measured_gbps / in->ceiling_gbs;
            /* Measured traffic is DRAM traffic whatever the sizes: near the ceiling it is the
             * limit; above it, the ceiling was measured low. */
            r->bandwidth = r->measured_fraction >= KP_READING_BANDWIDTH_FRACTION
                               ? KP_BANDWIDTH_BOUND
                               : KP_BANDWIDTH_BELOW;
            r->bandwidth_bound = r->bandwidth == KP_BANDWIDTH_BOUND;
            r->ceiling_low = r->measured_fraction > KP_READING_CEILING_TOLERANCE;
        }
    }
    if (m->have_flops && seconds > 0) r->gflops = m->flops / seconds / 1e9;
    if (m->have_flops && r->measured && r->dram_bytes > 0) {
        r->have_intensity = 1;
        r->intensity = m->flops / r->dram_bytes;
    }
    if (m->peak_gflops > 0 && in->ceiling_gbs > 0) {
        r->have_ridge = 1;
        r->ridge = m->peak_gflops / in->ceiling_gbs;
    }
    if (r->have_intensity && r->have_ridge) {
        double memory_roof = r->intensity * in->ceiling_gbs;
        r->attainable_gflops = memory_roof < m->peak_gflops ? memory_roof : m->peak_gflops;
    }
    if (m->have_flops && m->peak_gflops > 0) {
        r->flop_fraction = r->gflops / m->peak_gflops;
        r->compute_known = 1;
        r->compute_fraction = r->flop_fraction;
    }
    if (m->have_sm_throughput &&
        (!r->compute_known || m->sm_throughput_pct / 100 > r->compute_fraction)) {
        r->compute_known = 1;
        r->compute_fraction = m->sm_throughput_pct / 100;
        r->compute_from_sm = 1;
    }
    r->bound = KP_BOUND_UNKNOWN;
    if (r->dram_cold) {
        /* No bandwidth roof to be near or far from: only the compute roof can say. */
        if (r->compute_known && r->compute_fraction >= KP_READING_ROOF_NEAR)
            r->bound = KP_BOUND_COMPUTE;
        return;
    }
    if (!r->measured || in->ceiling_gbs <= 0) return;
    int near_memory = r->measured_fraction >= KP_READING_ROOF_NEAR;
    int near_compute = r->compute_known && r->compute_fraction >= KP_READING_ROOF_NEAR;
    if (near_memory && near_compute)
        r->bound = r->measured_fraction >= r->compute_fraction ? KP_BOUND_MEMORY : KP_BOUND_COMPUTE;
    else if (near_memory)
        r->bound = KP_BOUND_MEMORY;
    else if (near_compute)
        r->bound = KP_BOUND_COMPUTE;
    else if (!r->compute_known)
        r->bound = KP_BOUND_UNKNOWN; /* under the bandwidth roof, the compute roof unknown */
    else if (r->measured_fraction < KP_READING_ROOF_FAR &&
             r->compute_fraction < KP_READING_ROOF_FAR)
        r->bound = KP_BOUND_LATENCY;
    else
        r->bound = KP_BOUND_BETWEEN;
}

void kp_readings_compute(const kp_readings_input *in, kp_readings *r)
{
    memset(r, 0, sizeof *r);
    /* Where the figure could come from, from sizes alone (true however fast the machine is). */
    r->grid_short = in->bytes_assumed && in->grid_bytes > 0 && in->grid_bytes < in->working_set;
    r->footprint = r->grid_short ? in->grid_bytes : in->working_set;
    r->fits_cache = in->cache_bytes > 0 && r->footprint > 0 && r->footprint <= in->cache_bytes;
    r->bandwidth = KP_BANDWIDTH_NO_CEILING;
    if (in->ceiling_gbs > 0) {
        r->have_ceiling = 1;
        r->ceiling_fraction = in->gbps / in->ceiling_gbs;
        int not_dram = r->grid_short || r->fits_cache;
        if (r->ceiling_fraction > KP_READING_CEILING_TOLERANCE) {
            r->bandwidth = KP_BANDWIDTH_ABOVE;
            r->bytes_overstate = !in->bytes_assumed && !r->fits_cache;
            r->unexplained = in->bytes_assumed && !not_dram;
        } else if (r->ceiling_fraction >= KP_READING_BANDWIDTH_FRACTION) {
            r->bandwidth = not_dram ? KP_BANDWIDTH_NOT_DRAM : KP_BANDWIDTH_BOUND;
        } else {
            r->bandwidth = KP_BANDWIDTH_BELOW;
        }
        r->bandwidth_bound = r->bandwidth == KP_BANDWIDTH_BOUND;
    }
    r->register_pressure =
        in->kernel_max_tg > 0 && in->device_max_tg > 0 && in->kernel_max_tg < in->device_max_tg;
    if (in->device_local > 0) {
        r->local_fraction = (double)in->static_local / (double)in->device_local;
        r->shared_memory_bound = r->local_fraction >= KP_READING_LOCAL_FRACTION;
    }
    r->submission_bound = in->median_ms > 0 && in->median_ms < KP_READING_SUBMISSION_MS;
    r->occupancy_limited = in->have_occupancy && in->occupancy < 0.5;
    r->sweep_hint = in->single_tg;
    kp_readings_measure(in, r);
}

static int kp_add(kp_reading_line *out, int n, int max, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int kp_add(kp_reading_line *out, int n, int max, const char *id, const char *fmt, ...)
{
    if (n >= max) return n;
    snprintf(out[n].id, sizeof out[n].id, "%s", id);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out[n].text, sizeof out[n].text, fmt, ap);
    va_end(ap);
    return n + 1;
}

/* The measured bytes against the estimate, and the roofline: the readings only counters give. */
static int kp_readings_describe_measured(const kp_readings_input *in, const kp_readings *r,
                                         kp_reading_line *out, int n, int max)
{
    char a[64], b[64];
    const char *estimate = in->bytes_assumed ? "its buffers hold" : "--bytes gives";
    if (r->traffic == KP_TRAFFIC_MORE)
        n = kp_add(out, n, max, "traffic_more",
                   "The kernel moves %.1f× the bytes %s (%s of DRAM traffic measured per "
                   "dispatch, %s estimated): uncoalesced or repeated reads.",
                   r->bytes_ratio, estimate, kp_format_bytes((uint64_t)r->dram_bytes, a, sizeof a),
                   kp_format_bytes(in->bytes, b, sizeof b));
    else if (r->traffic == KP_TRAFFIC_LESS)
        n = kp_add(out, n, max, "traffic_less",
                   "The kernel moves %.1f× the bytes %s (%s of DRAM traffic measured per "
                   "dispatch, %s estimated): %s",
                   r->bytes_ratio, estimate, kp_format_bytes((uint64_t)r->dram_bytes, a, sizeof a),
                   kp_format_bytes(in->bytes, b, sizeof b),
                   in->bytes_assumed ? "it touches part of its buffers, or hits in cache."
                                     : "--bytes overstates what reaches memory, or it hits in "
                                       "cache.");
    else if (r->traffic == KP_TRAFFIC_MATCHES)
        n = kp_add(out, n, max, "traffic_matches",
                   "Measured DRAM traffic (%s per dispatch) is within %.0f%% of the bytes %s "
                   "(%s, %.2f×)%s",
                   kp_format_bytes((uint64_t)r->dram_bytes, a, sizeof a),
                   100 * KP_READING_TRAFFIC_TOLERANCE, estimate,
                   kp_format_bytes(in->bytes, b, sizeof b), r->bytes_ratio,
                   in->bytes_assumed ? ": the once-per-element estimate holds for this kernel."
                                     : ".");
    const kp_readings_measured *m = &in->measured;
    if (r->dram_cold) {
        kp_str cold = {0};
        kp_str_printf(&cold,
                      "DRAM bytes as from a cold L2, as ncu reads them (%s read + %s written "
                      "per dispatch); the timed dispatches ran with a warm L2",
                      kp_format_bytes((uint64_t)m->dram_read_bytes, a, sizeof a),
                      kp_format_bytes((uint64_t)m->dram_write_bytes, b, sizeof b));
        char c[64], d[64];
        kp_str_printf(&cold,
                      ", and the data it can touch (%s) fits in the device's %s last-level "
                      "cache: no measured GB/s, bandwidth reading or memory bound follows "
                      "(`kprof bench --cache cold` times it from a cold cache).",
                      kp_format_bytes(r->footprint, c, sizeof c),
                      kp_format_bytes(in->cache_bytes, d, sizeof d));
        if (r->bound == KP_BOUND_COMPUTE) {
            if (r->compute_from_sm)
                kp_str_printf(&cold, " Compute-bound: the SM's pipes %.0f%% busy (SM throughput).",
                              100 * r->compute_fraction);
            else
                kp_str_printf(&cold, " Compute-bound: at %.0f%% of the FP32 peak.",
                              100 * r->compute_fraction);
        }
        n = kp_add(out, n, max, "dram_cold", "%s", cold.data ? cold.data : "");
        kp_str_free(&cold);
    }
    if (!r->measured) return n;
    kp_str line = {0};
    if (r->have_intensity)
        kp_str_printf(&line,
                      "Roofline: %.3g FLOP/byte (%.4g GFLOP over %s of DRAM traffic, "
                      "%.4g GFLOP/s)",
                      r->intensity, m->flops / 1e9,
                      kp_format_bytes((uint64_t)r->dram_bytes, a, sizeof a), r->gflops);
    else if (m->have_flops)
        kp_str_printf(&line, "Roofline: %.4g GFLOP and no DRAM traffic measured (%.4g GFLOP/s)",
                      m->flops / 1e9, r->gflops);
    else
        kp_str_append(&line, "Roofline: no FLOP counters read");
    if (r->have_ridge)
        kp_str_printf(&line,
                      "; the ridge is %.3g FLOP/byte (FP32 peak %.0f GFLOP/s over the "
                      "%.0f GB/s ceiling)",
                      r->ridge, m->peak_gflops, in->ceiling_gbs);
    else if (m->peak_gflops <= 0)
        kp_str_append(&line, "; no measured FLOP peak for this device yet (kprof caps --measure "
                             "measures it)");
    switch (r->bound) {
    case KP_BOUND_MEMORY:
        kp_str_printf(&line, ": memory-bound, at %.0f%% of the bandwidth roof.",
                      100 * r->measured_fraction);
        break;
    case KP_BOUND_COMPUTE:
        if (r->compute_from_sm)
            kp_str_printf(&line, ": compute-bound, the SM's pipes %.0f%% busy (SM throughput)%s.",
                          100 * r->compute_fraction,
                          r->flop_fraction > 0 ? "" : ", not on FP32 arithmetic");
        else
            kp_str_printf(&line, ": compute-bound, at %.0f%% of the FP32 peak.",
                          100 * r->compute_fraction);
        break;
    case KP_BOUND_LATENCY:
        kp_str_printf(&line,
                      ": latency-bound, far under both roofs (%.0f%% of the bandwidth roof, "
                      "%.0f%% of the compute roof, both under %.0f%%): neither bytes nor FLOPs "
                      "limit it; more work in flight does (occupancy, independent loads, a larger "
                      "grid).",
                      100 * r->measured_fraction, 100 * r->compute_fraction,
                      100 * KP_READING_ROOF_FAR);
        break;
    case KP_BOUND_BETWEEN:
        kp_str_printf(&line,
                      ": under both roofs, neither limiting (%.0f%% of the bandwidth roof, %.0f%% "
                      "of the compute roof; %.0f%% is near one).",
                      100 * r->measured_fraction, 100 * r->compute_fraction,
                      100 * KP_READING_ROOF_NEAR);
        break;
    case KP_BOUND_UNKNOWN:
        if (in->ceiling_gbs <= 0)
            kp_str_append(&line, ": no bound without a measured bandwidth ceiling (kprof caps "
                                 "--measure).");
        else
            kp_str_printf(&line,
                          ": %.0f%% of the bandwidth roof; the compute roof is unknown (no FLOP "
                          "peak or SM throughput), so no bound.",
                          100 * r->measured_fraction);
        break;
    }
    n = kp_add(out, n, max, "roofline", "%s", line.data ? line.data : "");
    kp_str_free(&line);
    return n;
}

int kp_readings_describe(const kp_readings_input *in, const kp_readings *r, kp_reading_line *out,
                         int max)
{
    int n = 0;
    char a[64], b[64];
    switch (r->bandwidth) {
    case KP_BANDWIDTH_NO_CEILING:
        n = kp_add(out, n, max, "no_ceiling",
                   "No measured bandwidth ceiling for this device yet: `kprof caps --measure` "
                   "measures it, and runs then report GB/s as a share of it.");
        break;
    case KP_BANDWIDTH_BELOW:
        if (r->measured) {
            n = kp_add(out, n, max, "bandwidth",
                       "Measured DRAM traffic, %.0f GB/s (%s read + %s written per dispatch), is "
                       "%.0f%% of this device's measured ceiling (%.0f GB/s): not "
                       "bandwidth-bound.",
                       r->measured_gbps,
                       kp_format_bytes((uint64_t)in->measured.dram_read_bytes, a, sizeof a),
                       kp_format_bytes((uint64_t)in->measured.dram_write_bytes, b, sizeof b),
                       100 * r->measured_fraction, in->ceiling_gbs);
            break;
        }
        n = kp_add(out, n, max, "bandwidth",
                   "~%.0f GB/s is %.0f%% of this device's measured ceiling (%.0f GB/s): not "
                   "bandwidth-bound by this estimate.",
                   in->gbps, 100 * r->ceiling_fraction, in->ceiling_gbs);
        break;
    case KP_BANDWIDTH_BOUND:
        if (r->measured) {
            n = kp_add(out, n, max, "bandwidth_bound",
                       "Measured DRAM traffic, %.0f GB/s (%s read + %s written per dispatch), is "
                       "%.0f%% of this device's measured ceiling (%.0f GB/s): bandwidth-bound. "
                       "Fewer passes, smaller elements and better locality help; more math per "
                       "byte is free.%s",
                       r->measured_gbps,
                       kp_format_bytes((uint64_t)in->measured.dram_read_bytes, a, sizeof a),
                       kp_format_bytes((uint64_t)in->measured.dram_write_bytes, b, sizeof b),
                       100 * r->measured_fraction, in->ceiling_gbs,
                       r->ceiling_low ? " Above 110% of the ceiling, the ceiling was measured "
                                        "low: measure it again on an idle machine (kprof caps "
                                        "--measure)."
                                      : "");
            break;
        }
        n = kp_add(out, n, max, "bandwidth_bound",
                   "~%.0f GB/s is %.0f%% of this device's measured ceiling (%.0f GB/s): "
                   "bandwidth-bound. Fewer passes, smaller elements and better locality "
                   "help; more math per byte is free.",
                   in->gbps, 100 * r->ceiling_fraction, in->ceiling_gbs);
        break;
    case KP_BANDWIDTH_NOT_DRAM:
    case KP_BANDWIDTH_ABOVE: {
        kp_str why = {0};
        char c[64];
        if (r->bandwidth == KP_BANDWIDTH_ABOVE)
            kp_str_printf(&why,
                          "~%.0f GB/s is %.0f%% of this device's measured ceiling (%.0f GB/s), "
                          "more than its memory delivers, so it cannot be DRAM traffic.",
                          in->gbps, 100 * r->ceiling_fraction, in->ceiling_gbs);
        else
            kp_str_printf(&why,
                          "~%.0f GB/s is %.0f%% of this device's measured ceiling (%.0f GB/s), "
                          "but it is not DRAM traffic, so this is no bandwidth reading.",
                          in->gbps, 100 * r->ceiling_fraction, in->ceiling_gbs);
        if (r->grid_short)
            kp_str_printf(&why,
                          " A grid of %llu threads touches at most %s of the %s its buffers "
                          "hold (one element per thread per buffer): the estimate counts bytes "
                          "the kernel never reads. A kernel that loops over its buffers should "
                          "give its traffic with --bytes B.",
                          (unsigned long long)in->grid_threads,
                          kp_format_bytes(in->grid_bytes, a, sizeof a),
                          kp_format_bytes(in->working_set, b, sizeof b));
        if (r->fits_cache)
            kp_str_printf(&why,
                          " The data it can touch (%s) fits in the device's %s last-level cache, "
                          "so repeated dispatches are served from the cache, not from memory.",
                          kp_format_bytes(r->footprint, a, sizeof a),
                          kp_format_bytes(in->cache_bytes, b, sizeof b));
        if (r->bytes_overstate)
            kp_str_printf(&why,
                          " --bytes %s is more than the kernel moves to and from memory per "
                          "dispatch.",
                          kp_format_bytes(in->bytes, a, sizeof a));
        if (r->unexplained) {
            if (in->cache_bytes)
                kp_str_printf(&why,
                              " Its buffers (%s) are larger than the %s last-level cache and the "
                              "grid covers them,",
                              kp_format_bytes(in->working_set, a, sizeof a),
                              kp_format_bytes(in->cache_bytes, c, sizeof c));
            else
                kp_str_append(&why, " The grid covers its buffers,");
            kp_str_append(&why, " so either the kernel touches less than each element once per "
                                "dispatch (give --bytes B) or the ceiling was measured low "
                                "(measure it again on an idle machine: kprof caps --measure).");
        }
        n = kp_add(out, n, max, r->bandwidth == KP_BANDWIDTH_ABOVE ? "above_ceiling" : "not_dram",
                   "%s", why.data ? why.data : "");
        kp_str_free(&why);
        break;
    }
    }
    n = kp_readings_describe_measured(in, r, out, n, max);
    if (in->bytes_assumed && r->traffic == KP_TRAFFIC_UNKNOWN)
        n = kp_add(out, n, max, "bytes_assumed",
                   "~GB/s assumes each buffer element is touched once per dispatch; give "
                   "--bytes B for the kernel's real traffic before quoting it.");
    if (r->register_pressure)
        n = kp_add(out, n, max, "register_pressure",
                   "The kernel's max threadgroup size (%llu) is below the device's (%llu): "
                   "register pressure limits occupancy. Lower the declared max so the compiler "
                   "widens registers; split the kernel only if spills persist.",
                   (unsigned long long)in->kernel_max_tg, (unsigned long long)in->device_max_tg);
    if (r->shared_memory_bound)
        n = kp_add(out, n, max, "shared_memory_bound",
                   "Static threadgroup memory (%s) is %.0f%% of the per-group limit (%s): "
                   "threadgroup-memory-bound occupancy.",
                   kp_format_bytes(in->static_local, a, sizeof a), 100 * r->local_fraction,
                   kp_format_bytes(in->device_local, b, sizeof b));
    if (r->occupancy_limited)
        n = kp_add(out, n, max, "occupancy", "Theoretical occupancy is %.0f%%, limited by %s.",
                   100 * in->occupancy,
                   in->limiter && *in->limiter ? in->limiter : "an unknown resource");
    if (r->submission_bound)
        n = kp_add(out, n, max, "submission_bound",
                   "%s time per dispatch is %s, under %.2f ms: in real use submission economics "
                   "dominate. Fewer launches and waits, not a faster kernel; check the whole "
                   "program with `kprof trace` first.",
                   in->not_gpu ? "Device" : "GPU",
                   kp_format_duration(in->median_ms / 1e3, a, sizeof a), KP_READING_SUBMISSION_MS);
    if (r->sweep_hint)
        n = kp_add(out, n, max, "sweep", "%s",
                   in->not_gpu ? "A single work-group size is not a conclusion: sweep it "
                                 "(`kprof run ... --sweep-tg`)."
                               : "A single threadgroup size is not an occupancy conclusion: "
                                 "sweep it (`kprof run ... --sweep-tg`).");
    return n;
}
