/* test_job.c — a process's place in a job (core/job): each launcher's variables, which launcher
 * wins when several are set, the node index from Slurm under another launcher, numbers that are
 * not whole numbers read as unknown; this host's name and boot id; and clock pairs read together
 * (checked against reads taken around them, never against how fast the machine is). */
#define _GNU_SOURCE
#include "base/job.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The environment: a NULL-terminated list of "NAME=value". */
static const char *lookup(const char *name, void *ctx)
{
    size_t n = strlen(name);
    for (const char *const *v = ctx; *v; v++)
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=') return *v + n + 1;
    return NULL;
}

static kp_job_info read_job(const char *const *vars)
{
    kp_job_info j;
    memset(&j, 0x5a, sizeof j); /* everything must be written */
    kp_job_read_from(lookup, (void *)vars, &j);
    return j;
}

static void check_job(kp_job_info j, kp_launcher launcher, int rank, int local_rank, int world_size,
                      int local_world_size, int node, int restart, int line)
{
    int bad = j.launcher != launcher || j.rank != rank || j.local_rank != local_rank ||
              j.world_size != world_size || j.local_world_size != local_world_size ||
              j.node != node || j.restart != restart;
    if (bad) {
        fprintf(stderr,
                "line %d: read launcher %d rank %d local %d world %d local world %d node %d "
                "restart %d; expected %d %d %d %d %d %d %d\n",
                line, j.launcher, j.rank, j.local_rank, j.world_size, j.local_world_size, j.node,
                j.restart, launcher, rank, local_rank, world_size, local_world_size, node, restart);
        kp_test_failures++;
    }
}
#define CHECK_JOB(vars, ...) check_job(read_job(vars), __VA_ARGS__, __LINE__)

static int64_t ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(void)
{
    const char *none[] = {"HOME=/root", NULL};
    CHECK_JOB(none, KP_LAUNCHER_NONE, -1, -1, -1, -1, -1, -1);

    /* Each launcher alone. */
    const char *torchrun[] = {"RANK=5",
                              "LOCAL_RANK=1",
                              "WORLD_SIZE=8",
                              "LOCAL_WORLD_SIZE=4",
                              "GROUP_RANK=1",
                              "TORCHELASTIC_RUN_ID=abc",
                              "TORCHELASTIC_RESTART_COUNT=2",
                              NULL};
    CHECK_JOB(torchrun, KP_LAUNCHER_TORCHRUN, 5, 1, 8, 4, 1, 2);
    const char *env[] = {"RANK=0", "WORLD_SIZE=2", NULL}; /* accelerate, DeepSpeed, by hand */
    CHECK_JOB(env, KP_LAUNCHER_ENV, 0, -1, 2, -1, -1, -1);
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=13", "OMPI_COMM_WORLD_LOCAL_RANK=5",
                          "OMPI_COMM_WORLD_SIZE=16", "OMPI_COMM_WORLD_LOCAL_SIZE=8", NULL};
    CHECK_JOB(ompi, KP_LAUNCHER_OPENMPI, 13, 5, 16, 8, -1, -1);
    const char *pmi[] = {"PMI_RANK=3", "MPI_LOCALRANKID=1", "PMI_SIZE=4", "MPI_LOCALNRANKS=2",
                         NULL};
    CHECK_JOB(pmi, KP_LAUNCHER_PMI, 3, 1, 4, 2, -1, -1);
    const char *pmix[] = {"PMIX_RANK=2", NULL};
    CHECK_JOB(pmix, KP_LAUNCHER_PMI, 2, -1, -1, -1, -1, -1);
    const char *slurm[] = {"SLURM_PROCID=9", "SLURM_LOCALID=1", "SLURM_NTASKS=12", "SLURM_NODEID=4",
                           NULL};
    CHECK_JOB(slurm, KP_LAUNCHER_SLURM, 9, 1, 12, -1, 4, -1);
    /* Slurm's node index with no rank of its own is no job. */
    const char *node_only[] = {"SLURM_NODEID=4", NULL};
    CHECK_JOB(node_only, KP_LAUNCHER_NONE, -1, -1, -1, -1, -1, -1);

    /* Precedence: torchrun > Open MPI > PMI > Slurm (the innermost launcher wins), and none of
     * the outer launcher's variables leak into the inner one's fields. */
    const char *all[] = {"RANK=1",
                         "TORCHELASTIC_RUN_ID=r",
                         "OMPI_COMM_WORLD_RANK=2",
                         "OMPI_COMM_WORLD_LOCAL_RANK=2",
                         "OMPI_COMM_WORLD_SIZE=20",
                         "PMI_RANK=3",
                         "PMI_SIZE=30",
                         "SLURM_PROCID=4",
                         "SLURM_LOCALID=4",
                         "SLURM_NTASKS=40",
                         "SLURM_NODEID=7",
                         NULL};
    CHECK_JOB(all, KP_LAUNCHER_TORCHRUN, 1, -1, -1, -1, 7, -1);
    CHECK_JOB(all + 2, KP_LAUNCHER_OPENMPI, 2, 2, 20, -1, 7, -1);
    CHECK_JOB(all + 5, KP_LAUNCHER_PMI, 3, -1, 30, -1, 7, -1);
    CHECK_JOB(all + 7, KP_LAUNCHER_SLURM, 4, 4, 40, -1, 7, -1);
    /* The node: torchrun's GROUP_RANK over Slurm's, Slurm's where the launcher has none. */
    const char *group[] = {"RANK=0", "GROUP_RANK=2", "SLURM_PROCID=0", "SLURM_NODEID=7", NULL};
    CHECK_JOB(group, KP_LAUNCHER_ENV, 0, -1, -1, -1, 2, -1);
    const char *bad_group[] = {"RANK=0", "GROUP_RANK=x", "SLURM_NODEID=7", NULL};
    CHECK_JOB(bad_group, KP_LAUNCHER_ENV, 0, -1, -1, -1, 7, -1);

    /* Numbers: a whole number 0..INT_MAX, or unknown. A rank that is not one does not make a
     * launcher: the next one that applies is taken. */
    const char *bad[] = {"",   "-1",   "+1",  " 1",         "1 ",
                         "1x", "0x10", "1.0", "2147483648", "99999999999999999999",
                         "one"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char rank[64], local[64];
        snprintf(rank, sizeof rank, "RANK=%s", bad[i]);
        snprintf(local, sizeof local, "OMPI_COMM_WORLD_LOCAL_RANK=%s", bad[i]);
        const char *vars[] = {rank, "OMPI_COMM_WORLD_RANK=6", local, NULL};
        kp_job_info j = read_job(vars);
        if (j.launcher != KP_LAUNCHER_OPENMPI || j.rank != 6 || j.local_rank != -1) {
            fprintf(stderr, "\"%s\" read as a number (launcher %d rank %d local %d)\n", bad[i],
                    j.launcher, j.rank, j.local_rank);
            kp_test_failures++;
        }
    }
    const char *edges[] = {"SLURM_PROCID=2147483647", "SLURM_LOCALID=0", "SLURM_NTASKS=007", NULL};
    CHECK_JOB(edges, KP_LAUNCHER_SLURM, 2147483647, 0, 7, -1, -1, -1);

    CHECK_STR(kp_launcher_name(KP_LAUNCHER_TORCHRUN), "torchrun");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_ENV), "env");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_OPENMPI), "openmpi");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_PMI), "pmi");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_SLURM), "slurm");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_NONE), "");
    CHECK_STR(kp_launcher_name(KP_LAUNCHER_COUNT), "");

    /* kp_job_read is the same on this process's own environment. */
    const char *names[] = {"RANK",         "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
                           "PMI_RANK",     "PMIX_RANK",           "SLURM_PROCID",
                           "SLURM_NODEID", "GROUP_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unsetenv(names[i]);
    setenv("PMI_RANK", "11", 1);
    setenv("SLURM_NODEID", "3", 1);
    kp_job_info j;
    kp_job_read(&j);
    CHECK_INT(j.launcher, KP_LAUNCHER_PMI);
    CHECK_INT(j.rank, 11);
    CHECK_INT(j.node, 3);

    /* Host and boot id. */
    char host[256], want[256] = "";
    kp_job_host(host, sizeof host);
    gethostname(want, sizeof want);
    CHECK_STR(host, want);
    CHECK(host[0] != '\0');
    char tiny[4] = "xyz";
    kp_job_host(tiny, sizeof tiny); /* cut, always terminated */
    CHECK(strlen(tiny) <= 3);
    char before[4];
    memcpy(before, tiny, sizeof tiny);
    kp_job_host(tiny, 0); /* no room: nothing written */
    CHECK(memcmp(tiny, before, sizeof tiny) == 0);
    char boot[64], boot2[64];
    kp_job_boot_id(boot, sizeof boot);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        char line[64] = "";
        CHECK(fgets(line, sizeof line, f) != NULL);
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        CHECK_STR(boot, line);
        CHECK_INT(strlen(boot), 36);
    } else {
        CHECK_STR(boot, "");
    }
    kp_job_boot_id(boot2, sizeof boot2);
    CHECK_STR(boot2, boot); /* one boot, one id */
    char small[9];
    kp_job_boot_id(small, sizeof small);
    CHECK_INT(strlen(small), f ? 8 : 0);
    if (f) CHECK(strncmp(small, boot, 8) == 0);

    /* Clock pairs: REALTIME read with MONOTONIC, the pair inside reads taken around it. */
    for (int i = 0; i < 100; i++) {
        int64_t mono0 = ns(CLOCK_MONOTONIC), real0 = ns(CLOCK_REALTIME);
        kp_clock_pair p = kp_clock_pair_now();
        int64_t real1 = ns(CLOCK_REALTIME), mono1 = ns(CLOCK_MONOTONIC);
        CHECK(p.uncertainty_ns >= 0);
        CHECK(p.mono_ns >= mono0 && p.mono_ns <= mono1);
        CHECK(p.real_ns >= real0 && p.real_ns <= real1);
        CHECK(p.uncertainty_ns <= (mono1 - mono0 + 1) / 2 + 1);
        int64_t wall = (int64_t)time(NULL) * 1000000000;
        CHECK(p.real_ns > wall - 1000000000 && p.real_ns < wall + 2000000000);
        if (kp_test_failures) break;
    }
    TEST_DONE();
}
