/*
 * occupancy.h — theoretical occupancy of a CUDA kernel and what limits it, by the same
 * arithmetic as NVIDIA's occupancy calculator (cuda_occupancy.h): blocks per SM allowed by
 * warp slots, registers, shared memory and the block-slot limit, the smallest of which wins.
 *
 * The driver's cuOccupancyMaxActiveBlocksPerMultiprocessor gives the number, but not which
 * resource set it; this file names it. Pure arithmetic on plain records, no driver calls, so
 * the unit tests check it on machines without a GPU.
 */
#ifndef KP_CUDA_OCCUPANCY_H
#define KP_CUDA_OCCUPANCY_H

#include <stdint.h>

/* What the occupancy arithmetic needs to know about a device (CU_DEVICE_ATTRIBUTE_*). */
typedef struct kp_cuda_occ_device {
    int cc_major, cc_minor;           /* compute capability */
    int warp_size;                    /* WARP_SIZE */
    int max_threads_per_block;        /* MAX_THREADS_PER_BLOCK */
    int max_threads_per_sm;           /* MAX_THREADS_PER_MULTIPROCESSOR */
    int max_blocks_per_sm;            /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    int regs_per_sm;                  /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    int regs_per_block;               /* MAX_REGISTERS_PER_BLOCK */
    uint64_t smem_per_sm;             /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    uint64_t smem_per_block;          /* MAX_SHARED_MEMORY_PER_BLOCK (48 KiB without opt-in) */
    uint64_t smem_per_block_optin;    /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    uint64_t smem_reserved_per_block; /* RESERVED_SHARED_MEMORY_PER_BLOCK (1 KiB on sm_80+) */
} kp_cuda_occ_device;

/* What it needs to know about a kernel (CU_FUNC_ATTRIBUTE_*). */
typedef struct kp_cuda_occ_kernel {
    int max_threads;           /* MAX_THREADS_PER_BLOCK (0 = the device's) */
    int registers;             /* NUM_REGS, per thread */
    uint64_t static_smem;      /* SHARED_SIZE_BYTES */
    uint64_t max_dynamic_smem; /* MAX_DYNAMIC_SHARED_SIZE_BYTES as currently set */
} kp_cuda_occ_kernel;

#define KP_CUDA_OCC_UNLIMITED INT32_MAX

/* Blocks per SM each resource allows (KP_CUDA_OCC_UNLIMITED where it does not limit). */
typedef struct kp_cuda_occ_limits {
    int warps;           /* warp slots: max_threads_per_sm / warp_size over warps per block */
    int registers;       /* register file, allocated per warp in units of 256 */
    int shared_memory;   /* shared memory, allocated per block in 128 B units plus reserve */
    int blocks;          /* the SM's block slots */
    int blocks_per_sm;   /* the smallest of the above */
    const char *limiter; /* its name: "warps", "blocks", "registers" or "shared memory" */
} kp_cuda_occ_limits;

/* Compute the limits for blocks of `threads` threads with `dyn_smem` bytes of dynamic shared
 * memory. A block that cannot run at all gives 0 for the resource that forbids it. */
void kp_cuda_occupancy_limits(const kp_cuda_occ_device *dev, const kp_cuda_occ_kernel *k,
                              uint64_t threads, uint64_t dyn_smem, kp_cuda_occ_limits *out);

/* The resource whose limit equals `blocks` (the driver's answer, which wins when it differs
 * from the arithmetic). Ties go to the launch-shape limits first (warps, blocks), since a
 * resource named after them could not raise occupancy; when nothing equals `blocks`, the limit
 * closest to it. */
const char *kp_cuda_occupancy_limiter(const kp_cuda_occ_limits *l, int blocks);

/* blocks * threads / max_threads_per_sm, within 0..1. */
double kp_cuda_occupancy_fraction(int blocks, uint64_t threads, int warp_size,
                                  int max_threads_per_sm);

#endif
