/*
 * job.h — where a process stands in a distributed job, as its launcher's environment says, and
 * the clocks that put the records of several hosts on one time base.
 *
 * Launchers, the first that applies wins (the innermost launcher sets its variables last, and
 * torchrun under Slurm or mpirun is the common nesting):
 *   torchrun (and the RANK/WORLD_SIZE convention of accelerate, DeepSpeed, ...):
 *       RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK (node),
 * TORCHELASTIC_RESTART_COUNT
 *       ("torchrun" when TORCHELASTIC_RUN_ID is set, else "env")
 *   Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE,
 *       OMPI_COMM_WORLD_LOCAL_SIZE
 *   MPICH, Intel MPI (PMI): PMI_RANK, MPI_LOCALRANKID, PMI_SIZE, MPI_LOCALNRANKS; PMIx: PMIX_RANK
 *   Slurm: SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID
 * A variable that is not a whole number in range reads as unknown (-1).
 *
 * Clocks: every process records (CLOCK_MONOTONIC, CLOCK_REALTIME) pairs when it starts and when
 * it ends. All processes of one boot of one host share CLOCK_MONOTONIC exactly (the boot id,
 * /proc/sys/kernel/random/boot_id, names that clock); between hosts the pairs give each host's
 * REALTIME − MONOTONIC offset, which `kprof merge` uses to put every host on one time base.
 *
 * Nothing here allocates; kp_job_read and kp_clock_pair_now are safe in an injected library's
 * constructor.
 */
#ifndef KP_BASE_JOB_H
#define KP_BASE_JOB_H

#include <stddef.h>
#include <stdint.h>

typedef enum kp_launcher {
    KP_LAUNCHER_NONE = 0,
    KP_LAUNCHER_TORCHRUN = 1, /* TORCHELASTIC_RUN_ID with RANK */
    KP_LAUNCHER_ENV = 2,      /* RANK without torchrun's own variables */
    KP_LAUNCHER_OPENMPI = 3,
    KP_LAUNCHER_PMI = 4,
    KP_LAUNCHER_SLURM = 5,
    KP_LAUNCHER_COUNT
} kp_launcher;

typedef struct kp_job_info {
    kp_launcher launcher;
    int rank, local_rank, world_size, local_world_size; /* -1 unknown */
    int node;    /* the node's index in the job (GROUP_RANK, SLURM_NODEID); -1 unknown */
    int restart; /* TORCHELASTIC_RESTART_COUNT; -1 unknown */
} kp_job_info;

/* What this process's environment says (getenv). */
void kp_job_read(kp_job_info *out);

/* The same from any lookup (tests; a child's environment): get(name, ctx) is the variable's
 * value or NULL. */
void kp_job_read_from(const char *(*get)(const char *name, void *ctx), void *ctx, kp_job_info *out);

/* getenv as a lookup for kp_job_read_from (and base/outname.h): ctx unused. */
const char *kp_job_getenv(const char *name, void *ctx);

/* The variables kp_job_read takes a rank from, and local ranks from, for messages. */
#define KP_JOB_RANK_VARS "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID"
#define KP_JOB_LOCAL_RANK_VARS                                                                     \
    "LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID"

/* The variable that gives the local rank under launcher l (KP_JOB_LOCAL_RANK_VARS for none). */
const char *kp_launcher_local_rank_var(kp_launcher l);

/* "torchrun", "env", "openmpi", "pmi", "slurm"; "" for none. */
const char *kp_launcher_name(kp_launcher l);

/* This host's name (gethostname; "" when it cannot be read), NUL-terminated within n. */
void kp_job_host(char *out, size_t n);

/* This boot's id (/proc/sys/kernel/random/boot_id, 36 characters; "" where there is none),
 * NUL-terminated within n: the identity of this host's CLOCK_MONOTONIC. */
void kp_job_boot_id(char *out, size_t n);

/* A (CLOCK_MONOTONIC, CLOCK_REALTIME) pair read together: REALTIME read between two MONOTONIC
 * reads, taken as at their midpoint; the best (tightest) of a few tries. uncertainty_ns is half
 * the gap between the two MONOTONIC reads. */
typedef struct kp_clock_pair {
    int64_t mono_ns, real_ns;
    int64_t uncertainty_ns;
} kp_clock_pair;

kp_clock_pair kp_clock_pair_now(void);

#endif
