/*
 * bench_bin.c — kp_bench_bin_ops (benchmark.h): a batch of runs' device records given to the
 * runs by the boundaries noted between them. Its own file: the CUDA timer (cuda.c) calls it,
 * and benchmark.c calls the timer.
 */
#include "libkprof/benchmark.h"

#include <string.h>

size_t kp_bench_bin_ops(const kp_bench_op *ops, size_t nops, const int64_t *bounds, size_t nslots,
                        kp_bench_slot *slots)
{
    memset(slots, 0, nslots * sizeof *slots);
    size_t nobody = 0;
    for (size_t i = 0; i < nops; i++) {
        int64_t s = ops[i].start, e = ops[i].end;
        if (nslots == 0 || s < bounds[0] || s >= bounds[nslots]) {
            nobody++;
            continue;
        }
        size_t lo = 0, hi = nslots; /* the last slot whose lower bound is <= s */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (bounds[mid] <= s)
                lo = mid;
            else
                hi = mid;
        }
        kp_bench_slot *slot = &slots[lo];
        if (!slot->ops || s < slot->first) slot->first = s;
        if (!slot->ops || e > slot->last) slot->last = e;
        slot->busy += e > s ? e - s : 0;
        slot->ops++;
    }
    return nobody;
}
