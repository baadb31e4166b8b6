/*
 * job.c — a process's place in a distributed job (its launcher's variables), its host and boot,
 * and clock pairs: see job.h.
 */
#define _GNU_SOURCE
#include "base/job.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *kp_job_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* A whole number 0..INT_MAX, or -1 when the variable is unset or not such a number: job.h's
 * "unknown" value for a rank or a size, not a failure (a launcher need not set them all). */
static int kp_job_int(const char *(*get)(const char *, void *), void *ctx, const char *name)
{
    const char *s = get(name, ctx);
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > INT_MAX) return -1;
    return (int)v;
}

/* The variable that gives the local rank under each launcher. */
static const char *const kp_local_rank_var[KP_LAUNCHER_COUNT] = {
    [KP_LAUNCHER_TORCHRUN] = "LOCAL_RANK",
    [KP_LAUNCHER_ENV] = "LOCAL_RANK",
    [KP_LAUNCHER_OPENMPI] = "OMPI_COMM_WORLD_LOCAL_RANK",
    [KP_LAUNCHER_PMI] = "MPI_LOCALRANKID",
    [KP_LAUNCHER_SLURM] = "SLURM_LOCALID",
};

const char *kp_launcher_local_rank_var(kp_launcher l)
{
    return l > KP_LAUNCHER_NONE && l < KP_LAUNCHER_COUNT ? kp_local_rank_var[l]
                                                         : KP_JOB_LOCAL_RANK_VARS;
}

void kp_job_read_from(const char *(*get)(const char *name, void *ctx), void *ctx, kp_job_info *out)
{
    *out = (kp_job_info){.launcher = KP_LAUNCHER_NONE,
                         .rank = -1,
                         .local_rank = -1,
                         .world_size = -1,
                         .local_world_size = -1,
                         .node = -1,
                         .restart = -1};
    int rank;
    if ((rank = kp_job_int(get, ctx, "RANK")) >= 0) {
        out->launcher = get("TORCHELASTIC_RUN_ID", ctx) ? KP_LAUNCHER_TORCHRUN : KP_LAUNCHER_ENV;
        out->rank = rank;
        out->world_size = kp_job_int(get, ctx, "WORLD_SIZE");
        out->local_world_size = kp_job_int(get, ctx, "LOCAL_WORLD_SIZE");
        out->node = kp_job_int(get, ctx, "GROUP_RANK");
        out->restart = kp_job_int(get, ctx, "TORCHELASTIC_RESTART_COUNT");
    } else if ((rank = kp_job_int(get, ctx, "OMPI_COMM_WORLD_RANK")) >= 0) {
        out->launcher = KP_LAUNCHER_OPENMPI;
        out->rank = rank;
        out->world_size = kp_job_int(get, ctx, "OMPI_COMM_WORLD_SIZE");
        out->local_world_size = kp_job_int(get, ctx, "OMPI_COMM_WORLD_LOCAL_SIZE");
    } else if ((rank = kp_job_int(get, ctx, "PMI_RANK")) >= 0 ||
               (rank = kp_job_int(get, ctx, "PMIX_RANK")) >= 0) {
        out->launcher = KP_LAUNCHER_PMI;
        out->rank = rank;
        out->world_size = kp_job_int(get, ctx, "PMI_SIZE");
        out->local_world_size = kp_job_int(get, ctx, "MPI_LOCALNRANKS");
    } else if ((rank = kp_job_int(get, ctx, "SLURM_PROCID")) >= 0) {
        out->launcher = KP_LAUNCHER_SLURM;
        out->rank = rank;
        out->world_size = kp_job_int(get, ctx, "SLURM_NTASKS");
    }
    if (out->launcher != KP_LAUNCHER_NONE)
        out->local_rank = kp_job_int(get, ctx, kp_local_rank_var[out->launcher]);
    /* The node index: Slurm's, whichever launcher runs under it, where the launcher has none. */
    if (out->launcher != KP_LAUNCHER_NONE && out->node < 0)
        out->node = kp_job_int(get, ctx, "SLURM_NODEID");
}

void kp_job_read(kp_job_info *out)
{
    kp_job_read_from(kp_job_getenv, NULL, out);
}

const char *kp_launcher_name(kp_launcher l)
{
    switch (l) {
    case KP_LAUNCHER_TORCHRUN:
        return "torchrun";
    case KP_LAUNCHER_ENV:
        return "env";
    case KP_LAUNCHER_OPENMPI:
        return "openmpi";
    case KP_LAUNCHER_PMI:
        return "pmi";
    case KP_LAUNCHER_SLURM:
        return "slurm";
    default:
        return "";
    }
}

void kp_job_host(char *out, size_t n)
{
    if (!n) return;
    if (gethostname(out, n) != 0) out[0] = '\0';
    out[n - 1] = '\0';
}

void kp_job_boot_id(char *out, size_t n)
{
    if (!n) return;
    out[0] = '\0';
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t got = read(fd, out, n - 1);
    close(fd);
    if (got <= 0) {
        out[0] = '\0';
        return;
    }
    out[got] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
}

static int64_t kp_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

kp_clock_pair kp_clock_pair_now(void)
{
    kp_clock_pair best = {0, 0, INT64_MAX};
    for (int i = 0; i < 5; i++) {
        int64_t a = kp_clock_ns(CLOCK_MONOTONIC);
        int64_t r = kp_clock_ns(CLOCK_REALTIME);
        int64_t b = kp_clock_ns(CLOCK_MONOTONIC);
        int64_t half = (b - a + 1) / 2;
        if (half < best.uncertainty_ns) best = (kp_clock_pair){a + (b - a) / 2, r, half};
    }
    return best;
}
