/*
 * occupancy.c — theoretical occupancy and its limiter (see occupancy.h). The rules follow
 * cuda_occupancy.h of CUDA 13.0 for compute capability 5.0 and later with the default shared
 * memory carveout; the unit tests compare the two.
 */
#include "backend/cuda/occupancy.h"

#include <stddef.h>

static int64_t kp_cuda_occ_round_up(int64_t x, int64_t unit)
{
    return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

static int kp_cuda_occ_clamp(int64_t v)
{
    if (v < 0) return 0;
    return v > KP_CUDA_OCC_UNLIMITED ? KP_CUDA_OCC_UNLIMITED : (int)v;
}

/* Register file: registers go to warps in units of 256, and each of the SM's sub-partitions
 * (4; GP100 has 2) holds whole warps. */
static int kp_cuda_occ_registers(const kp_cuda_occ_device *d, const kp_cuda_occ_kernel *k,
                                 int64_t warps_per_block)
{
    const int64_t unit = 256, max_per_thread = d->cc_major >= 7 ? 256 : 255;
    int64_t partitions = (d->cc_major == 6 && d->cc_minor == 0) ? 2 : 4;
    if (k->registers <= 0) return KP_CUDA_OCC_UNLIMITED;
    int64_t per_warp = kp_cuda_occ_round_up((int64_t)k->registers * d->warp_size, unit);
    int64_t per_block = per_warp * warps_per_block;
    /* The hardware check assumes the block's warps spread over every sub-partition. */
    int64_t assumed = per_warp * kp_cuda_occ_round_up(warps_per_block, partitions);
    if (k->registers > max_per_thread || per_block > d->regs_per_block ||
        assumed > d->regs_per_block)
        return 0;
    int64_t warps_per_partition = (d->regs_per_sm / partitions) / per_warp;
    return kp_cuda_occ_clamp(warps_per_partition * partitions / warps_per_block);
}

/* Shared memory: a block takes its static and dynamic bytes plus the driver's reserve, rounded
 * up to the allocation unit; the SM's whole shared memory (default carveout) divides by that. */
static int kp_cuda_occ_shared(const kp_cuda_occ_device *d, const kp_cuda_occ_kernel *k,
                              uint64_t dyn)
{
    int64_t unit = d->cc_major >= 8 ? 128 : 256;
    int64_t fixed = (int64_t)(k->static_smem + d->smem_reserved_per_block);
    int64_t allocated = kp_cuda_occ_round_up(fixed + (int64_t)dyn, unit);
    /* The driver treats every function as able to opt in: a block may grow to the opt-in
     * limit as far as the function's MAX_DYNAMIC_SHARED_SIZE_BYTES allows. */
    uint64_t block_limit = d->smem_per_block;
    if ((uint64_t)fixed + k->max_dynamic_smem > d->smem_per_block)
        block_limit = d->smem_per_block_optin;
    if (d->cc_major >= 8) block_limit += d->smem_reserved_per_block;
    if (dyn > k->max_dynamic_smem || (uint64_t)allocated > block_limit) return 0;
    if (allocated == 0) return KP_CUDA_OCC_UNLIMITED;
    int64_t per_sm = (int64_t)d->smem_per_sm;
    /* A block larger than the preferred carveout gets a carveout that fits it. */
    if (per_sm < allocated) per_sm = allocated;
    return kp_cuda_occ_clamp(per_sm / allocated);
}

void kp_cuda_occupancy_limits(const kp_cuda_occ_device *d, const kp_cuda_occ_kernel *k,
                              uint64_t threads, uint64_t dyn_smem, kp_cuda_occ_limits *out)
{
    int64_t warp = d->warp_size > 0 ? d->warp_size : 32;
    int64_t max_threads = k->max_threads > 0 ? k->max_threads : d->max_threads_per_block;
    if (d->max_threads_per_block > 0 && d->max_threads_per_block < max_threads)
        max_threads = d->max_threads_per_block;
    int64_t warps_per_block = threads ? ((int64_t)threads + warp - 1) / warp : 1;

    if (threads == 0 || (int64_t)threads > max_threads)
        out->warps = 0;
    else
        out->warps = kp_cuda_occ_clamp((d->max_threads_per_sm / warp) / warps_per_block);
    out->registers = kp_cuda_occ_registers(d, k, warps_per_block);
    out->shared_memory = kp_cuda_occ_shared(d, k, dyn_smem);
    out->blocks = d->max_blocks_per_sm > 0 ? d->max_blocks_per_sm : KP_CUDA_OCC_UNLIMITED;

    int min = out->warps;
    if (out->blocks < min) min = out->blocks;
    if (out->registers < min) min = out->registers;
    if (out->shared_memory < min) min = out->shared_memory;
    out->blocks_per_sm = min;
    out->limiter = kp_cuda_occupancy_limiter(out, min);
}

const char *kp_cuda_occupancy_limiter(const kp_cuda_occ_limits *l, int blocks)
{
    const struct {
        const char *name;
        int limit;
    } order[] = {{"warps", l->warps},
                 {"blocks", l->blocks},
                 {"registers", l->registers},
                 {"shared memory", l->shared_memory}};
    size_t n = sizeof order / sizeof order[0], best = 0;
    int64_t best_gap = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t gap = (int64_t)order[i].limit - blocks;
        if (gap < 0) gap = -gap;
        if (gap < best_gap) {
            best_gap = gap;
            best = i;
        }
    }
    return order[best].name;
}

double kp_cuda_occupancy_fraction(int blocks, uint64_t threads, int warp_size,
                                  int max_threads_per_sm)
{
    if (blocks <= 0 || max_threads_per_sm <= 0) return 0;
    /* Active warps over the SM's warp slots: a partial warp occupies a whole slot. */
    uint64_t w = warp_size > 0 ? (uint64_t)warp_size : 32;
    uint64_t slots = (threads + w - 1) / w * w;
    double f = (double)blocks * (double)slots / (double)max_threads_per_sm;
    return f > 1 ? 1 : f;
}
