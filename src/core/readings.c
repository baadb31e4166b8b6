/*
 * readings.c — the seeds' readings computed from a measurement (kp_readings_compute: numbers and
 * flags only), and their sentences (kp_readings_describe: prose only, from those flags).
 */
#include "core/readings.h"
#include "core/format.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

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
    r->register_pressure = in->kernel_max_tg > 0 && in->device_max_tg > 0 &&
                           in->kernel_max_tg < in->device_max_tg;
    if (in->device_local > 0) {
        r->local_fraction = (double)in->static_local / (double)in->device_local;
        r->shared_memory_bound = r->local_fraction >= KP_READING_LOCAL_FRACTION;
    }
    r->submission_bound = in->median_ms > 0 && in->median_ms < KP_READING_SUBMISSION_MS;
    r->occupancy_limited = in->have_occupancy && in->occupancy < 0.5;
    r->sweep_hint = in->single_tg;
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
        n = kp_add(out, n, max, "bandwidth",
                   "~%.0f GB/s is %.0f%% of this device's measured ceiling (%.0f GB/s): not "
                   "bandwidth-bound by this estimate.",
                   in->gbps, 100 * r->ceiling_fraction, in->ceiling_gbs);
        break;
    case KP_BANDWIDTH_BOUND:
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
    if (in->bytes_assumed)
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
        n = kp_add(out, n, max, "occupancy",
                   "Theoretical occupancy is %.0f%%, limited by %s.", 100 * in->occupancy,
                   in->limiter && *in->limiter ? in->limiter : "an unknown resource");
    if (r->submission_bound)
        n = kp_add(out, n, max, "submission_bound",
                   "GPU time per dispatch is %s, under %.2f ms: in real use submission economics "
                   "dominate. Fewer launches and waits, not a faster kernel; check the whole "
                   "program with `kprof trace` first.",
                   kp_format_duration(in->median_ms / 1e3, a, sizeof a), KP_READING_SUBMISSION_MS);
    if (r->sweep_hint)
        n = kp_add(out, n, max, "sweep",
                   "A single threadgroup size is not an occupancy conclusion: sweep it "
                   "(`kprof run ... --sweep-tg`).");
    return n;
}
