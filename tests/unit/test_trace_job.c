/* test_trace_job.c — a job's trace rank by rank and device by device (analysis/trace_job.h), fed
 * events made here: collectives told apart by name (core/collective.h), the busy unions of
 * overlapping and unordered operations, each rank's processes together, and the stragglers by
 * collective, by NVTX range with the collectives launched inside each, and by range alone. */
#include "core/collective.h"
#include "core/host_calls.h"
#include "analysis/trace_job.h"
#include "test.h"

#include <stdlib.h>

#define US 1000LL
#define MS 1000000LL

enum { N_NONE, N_GEMM, N_ALLREDUCE, N_ALLGATHER, N_STEP, N_LAUNCH, N_POLL, N_OTHER, N_NAMES };
static const char *const names[N_NAMES] = {NULL,
                                           "gemm_kernel",
                                           "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)",
                                           "ncclDevKernel_AllGather_RING_LL",
                                           "step",
                                           "cudaLaunchKernel",
                                           "cudaGetLastError",
                                           "forward"};

static void test_classify(void)
{
    CHECK_INT(kp_collective_classify("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
              KP_COLLECTIVE_ALL_REDUCE);
    CHECK_INT(kp_collective_classify("ncclKernel_ReduceScatter_RING_LL_Sum_half"),
              KP_COLLECTIVE_REDUCE_SCATTER);
    CHECK_INT(kp_collective_classify("ncclKernel_Reduce_RING_LL_Sum_float"), KP_COLLECTIVE_REDUCE);
    CHECK_INT(kp_collective_classify("ncclDevKernel_SendRecv"), KP_COLLECTIVE_SEND_RECV);
    CHECK_INT(kp_collective_classify("ncclKernel_Broadcast_RING_LL_Sum_int8_t"),
              KP_COLLECTIVE_BROADCAST);
    CHECK_INT(kp_collective_classify("ncclDevKernel_Generic_1"), KP_COLLECTIVE_OTHER);
    /* The parameters of a demangled name say nothing of the operation. */
    CHECK_INT(kp_collective_classify("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"),
              KP_COLLECTIVE_OTHER);
    /* Not a prefix, but nccl or rccl with an operation (any case). */
    CHECK_INT(kp_collective_classify("void rccl::allgather_kernel<float>(int)"),
              KP_COLLECTIVE_ALL_GATHER);
    CHECK_INT(kp_collective_classify("my_NCCL_allreduce_wrapper"), KP_COLLECTIVE_ALL_REDUCE);
    /* nccl without an operation, an operation without nccl, compute kernels: none. */
    CHECK_INT(kp_collective_classify("nccl_helper_kernel"), KP_COLLECTIVE_NONE);
    CHECK_INT(kp_collective_classify("reduce_kernel<float>"), KP_COLLECTIVE_NONE);
    CHECK_INT(kp_collective_classify("gemm_kernel"), KP_COLLECTIVE_NONE);
    CHECK_INT(kp_collective_classify(NULL), KP_COLLECTIVE_NONE);
    CHECK_STR(kp_collective_op_name(KP_COLLECTIVE_ALL_REDUCE), "all-reduce");
    CHECK_STR(kp_collective_op_name(KP_COLLECTIVE_OTHER), "collective");
    CHECK_STR(kp_collective_op_name(KP_COLLECTIVE_NONE), "");
}

static kp_trace_event ev(int kind, uint32_t name, int64_t process, int64_t start, int64_t end,
                         uint32_t device)
{
    kp_trace_event t;
    memset(&t, 0, sizeof t);
    t.e.kind = (kp_event_kind)kind;
    t.e.name = name;
    t.e.process = process;
    t.e.start_ns = start;
    t.e.end_ns = end;
    t.e.device = device;
    return t;
}

static void add(kp_trace_job *j, kp_trace_event t)
{
    unsigned flags = t.e.kind == KP_EVENT_API ? kp_host_call_flags(names[t.e.name]) : 0;
    CHECK_INT(kp_trace_job_add(j, &t, flags, NULL), 0);
}

/* A collective launched at `launch` (the call's start), on the device from start to end. */
static void coll(kp_trace_job *j, uint32_t name, int64_t process, int64_t launch, int64_t start,
                 int64_t end, uint32_t device)
{
    kp_trace_event t = ev(KP_EVENT_KERNEL, name, process, start, end, device);
    t.has = KP_TRACE_HAS_LAUNCH;
    t.launch_start_ns = launch;
    add(j, t);
}

/* Three process rows: the launcher (no rank), rank 0 on host a, and rank 1 — two images of one
 * pid (an exec) on host b, then a row of rank 1 again under another pid. */
static const kp_trace_process procs[] = {
    {.id = 1,
     .pid = 100,
     .rank = -1,
     .local_rank = -1,
     .host = "a",
     .launcher = "",
     .start_ns = 1 * MS,
     .end_ns = 90 * MS,
     .ended = 1},
    {.id = 2,
     .pid = 200,
     .rank = 0,
     .local_rank = 0,
     .host = "a",
     .launcher = "torchrun",
     .start_ns = 2 * MS,
     .end_ns = 80 * MS,
     .ended = 1},
    {.id = 3,
     .pid = 300,
     .rank = 1,
     .local_rank = 0,
     .host = "b",
     .launcher = "torchrun",
     .start_ns = 3 * MS,
     .ended = 0},
    {.id = 4,
     .pid = 301,
     .rank = 1,
     .local_rank = 0,
     .host = "b",
     .launcher = "torchrun",
     .start_ns = 4 * MS,
     .end_ns = 70 * MS,
     .ended = 1},
};

static void test_ranks_devices_unions(void)
{
    kp_trace_job j;
    CHECK_INT(kp_trace_job_begin(&j, procs, 4, names, N_NAMES, 0, NULL), 0);
    /* Rank 0 (row 2): two streams overlapping, fed out of order: [10,20] [15,25] [30,40] ms on
     * device 0 → busy 25 ms; a collective [40,45] touching the last → in collectives 5. */
    add(&j, ev(KP_EVENT_KERNEL, N_GEMM, 2, 30 * MS, 40 * MS, 0));
    add(&j, ev(KP_EVENT_KERNEL, N_GEMM, 2, 10 * MS, 20 * MS, 0));
    add(&j, ev(KP_EVENT_MEMCPY, N_OTHER, 2, 15 * MS, 25 * MS, 0));
    coll(&j, N_ALLREDUCE, 2, 39 * MS, 40 * MS, 45 * MS, 0);
    /* Host calls: a launch counts, a polling call does not (without raw). */
    add(&j, ev(KP_EVENT_API, N_LAUNCH, 2, 9 * MS, 9 * MS + 500 * US, 0));
    add(&j, ev(KP_EVENT_API, N_POLL, 2, 9 * MS, 9 * MS + 700 * US, 0));
    /* Rank 1: its two rows together, device 0 of host b (another device than a's 0). */
    add(&j, ev(KP_EVENT_KERNEL, N_GEMM, 3, 10 * MS, 12 * MS, 0));
    add(&j, ev(KP_EVENT_MEMSET, N_OTHER, 4, 11 * MS, 13 * MS, 0));
    coll(&j, N_ALLREDUCE, 4, 39 * MS, 43 * MS, 45 * MS, 0);
    /* The launcher's call, and an event of a row the trace does not have: both "-". */
    add(&j, ev(KP_EVENT_API, N_LAUNCH, 1, 1 * MS, 2 * MS, 0));
    add(&j, ev(KP_EVENT_KERNEL, N_GEMM, 99, 50 * MS, 51 * MS, 3));
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);

    CHECK_INT(j.nranked, 2);
    CHECK_INT(j.nranks, 3);
    CHECK_INT(j.nhosts, 2);
    CHECK_STR(j.launcher, "torchrun");
    const kp_job_rank *r0 = &j.ranks[0], *r1 = &j.ranks[1], *dash = &j.ranks[2];
    CHECK_INT(r0->rank, 0);
    CHECK_INT(r0->local_rank, 0);
    CHECK_STR(r0->host, "a");
    CHECK_INT(r0->npids, 1);
    CHECK_INT(r0->pids[0], 200);
    CHECK_INT(r0->kernels, 2);
    CHECK_INT(r0->collectives, 1);
    CHECK_INT(r0->copies, 1);
    CHECK_INT(r0->gpu_busy_ns, 30 * MS); /* [10,25] + [30,45] */
    CHECK_INT(r0->collective_ns, 5 * MS);
    CHECK_INT(r0->host_api_ns, 500 * US);
    CHECK_INT(r0->start_ns, 2 * MS); /* its process's life, wider than its events */
    CHECK_INT(r0->end_ns, 80 * MS);
    CHECK_INT(r1->rank, 1);
    CHECK_INT(r1->npids, 2);
    CHECK_INT(r1->pids[0], 300);
    CHECK_INT(r1->pids[1], 301);
    CHECK_INT(r1->ngpus, 1);
    CHECK_INT(r1->gpus[0], 0);
    CHECK_INT(r1->kernels, 1);
    CHECK_INT(r1->fills, 1);
    CHECK_INT(r1->gpu_busy_ns, 3 * MS + 2 * MS); /* [10,13] + [43,45] */
    CHECK_INT(r1->collective_ns, 2 * MS);
    CHECK_INT(r1->start_ns, 3 * MS);
    CHECK_INT(r1->end_ns, 70 * MS);
    CHECK_INT(dash->rank, -1);
    CHECK_INT(dash->host_api_ns, 1 * MS);
    CHECK_INT(dash->kernels, 1);
    /* Devices by host, then number: a's 0, a's 3 (the unknown row's: no host, so ""), b's 0. */
    CHECK_INT(j.ndevices, 3);
    CHECK_STR(j.devices[0].host, "");
    CHECK_INT(j.devices[0].device, 3);
    CHECK_STR(j.devices[1].host, "a");
    CHECK_INT(j.devices[1].gpu_busy_ns, 30 * MS);
    CHECK_INT(j.devices[1].kernels, 2);
    CHECK_INT(j.devices[1].collectives, 1);
    CHECK_INT(j.devices[1].nranks, 1);
    CHECK_INT(j.devices[1].ranks[0], 0);
    CHECK_STR(j.devices[2].host, "b");
    CHECK_INT(j.devices[2].device, 0);
    CHECK_INT(j.devices[2].gpu_busy_ns, 5 * MS);
    CHECK_INT(j.devices[2].ranks[0], 1);
    CHECK_INT(j.devices[0].ranks[0], -1);
    /* Stragglers by collective (no range on every rank): rank 1 started its all-reduce 3 ms
     * after rank 0, which waited 3 ms of its 5. */
    const kp_job_stragglers *g = &j.stragglers;
    CHECK_INT(g->steps_by, KP_JOB_STEPS_COLLECTIVE);
    CHECK_INT(g->nsteps, 1);
    CHECK_INT(g->last_rank, 1);
    CHECK_INT(g->last_count, 1);
    CHECK_INT(g->steps[0].wait_ns, 3 * MS);
    CHECK_INT(g->steps[0].waits[0], 3 * MS);
    CHECK_INT(g->steps[0].waits[1], 0);
    CHECK_INT(g->timed_total_ns, 7 * MS);
    CHECK_INT(g->op, KP_COLLECTIVE_ALL_REDUCE);
    kp_trace_job_free(&j);
    CHECK(j.ranks == NULL && j.state_ == NULL);
    kp_trace_job_free(&j); /* twice: a zeroed one is fine */
}

/* Three ranks, one process each. */
static const kp_trace_process three[] = {
    {.id = 1, .pid = 10, .rank = 2, .local_rank = 2, .host = "h", .launcher = "env"},
    {.id = 2, .pid = 11, .rank = 0, .local_rank = 0, .host = "h", .launcher = "env"},
    {.id = 3, .pid = 12, .rank = 1, .local_rank = 1, .host = "h", .launcher = "env"},
};

/* Rank r's process row in `three`. */
static int64_t row_of(int rank)
{
    return rank == 2 ? 1 : rank == 0 ? 2 : 3;
}

static void test_collective_steps_skipped(void)
{
    kp_trace_job j;
    CHECK_INT(kp_trace_job_begin(&j, three, 3, names, N_NAMES, 0, NULL), 0);
    /* Four all-reduces on each rank, rank 2 late by (k+1) ms at step k; an all-gather on ranks
     * 0 and 1 only (skipped: not on every rank), and a fifth all-reduce on rank 0 (skipped). */
    for (int k = 0; k < 4; k++) {
        int64_t base = (int64_t)(k + 1) * 100 * MS, end = base + (k + 1) * MS + 1 * MS;
        for (int r = 0; r < 3; r++) {
            int64_t start = base + (r == 2 ? (k + 1) * MS : 0);
            coll(&j, N_ALLREDUCE, row_of(r), start, start, end, (uint32_t)r);
        }
    }
    coll(&j, N_ALLGATHER, row_of(0), 900 * MS, 900 * MS, 901 * MS, 0);
    coll(&j, N_ALLGATHER, row_of(1), 900 * MS, 900 * MS, 901 * MS, 1);
    coll(&j, N_ALLREDUCE, row_of(0), 950 * MS, 950 * MS, 951 * MS, 0);
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    CHECK_INT(j.nranks, 3); /* no "-": every process has a rank */
    CHECK_INT(j.ranks[0].rank, 0);
    CHECK_INT(j.ranks[2].rank, 2);
    const kp_job_stragglers *g = &j.stragglers;
    CHECK_INT(g->steps_by, KP_JOB_STEPS_COLLECTIVE);
    CHECK_INT(g->nsteps, 4);
    CHECK_INT(g->skipped, 1 + 1); /* the all-gather, the fifth all-reduce */
    CHECK_INT(g->last_rank, 2);
    CHECK_INT(g->last_count, 4);
    CHECK_INT(j.ranks[2].last_at, 4);
    /* Step k: ranks 0 and 1 wait (k+1) ms each; the steps in order of time. */
    for (int k = 0; k < 4; k++) {
        CHECK_INT(g->steps[k].index, k);
        CHECK_INT(g->steps[k].last_rank, 2);
        CHECK_INT(g->steps[k].wait_ns, (k + 1) * MS);
        CHECK_INT(g->steps[k].waits[0], (k + 1) * MS);
        CHECK_INT(g->steps[k].waits[2], 0);
    }
    CHECK_INT(g->wait_max_ns, 4 * MS);
    CHECK_INT(g->wait_median_ns, 2500 * US);
    CHECK_INT(g->wait_total_ns, 2 * (1 + 2 + 3 + 4) * MS);
    /* Timed: per step, ranks 0 and 1 run (k+2) ms, rank 2 1 ms. */
    CHECK_INT(g->timed_total_ns, (2 * (2 + 3 + 4 + 5) + 4) * MS);
    kp_trace_job_free(&j);
}

static void test_range_steps(void)
{
    /* Steps by the range 'step' (the name with the largest total on every rank twice; 'forward'
     * is on every rank too, but shorter): the collectives launched inside each. Step 1's do not
     * pair up (rank 1 launched two): unmatched. */
    kp_trace_job j;
    CHECK_INT(kp_trace_job_begin(&j, three + 1, 2, names, N_NAMES, 0, NULL), 0);
    for (int k = 0; k < 3; k++) {
        int64_t s = (int64_t)k * 10 * MS;
        for (int r = 0; r < 2; r++) {
            int64_t row = row_of(r);
            add(&j, ev(KP_EVENT_RANGE, N_STEP, row, s, s + 9 * MS, 0));
            add(&j, ev(KP_EVENT_RANGE, N_OTHER, row, s, s + 1 * MS, 0));
            /* Launched at 2 ms into the step; rank 0 arrives 1 ms late at step 0, rank 1 2 ms
             * late at step 2; the device runs it after the range ends (async). */
            int64_t late = (k == 0 && r == 0) ? 1 * MS : (k == 2 && r == 1) ? 2 * MS : 0;
            coll(&j, N_ALLREDUCE, row, s + 2 * MS, s + 5 * MS + late, s + 12 * MS, (uint32_t)r);
            if (k == 1 && r == 1)
                coll(&j, N_ALLREDUCE, row, s + 3 * MS, s + 12 * MS, s + 13 * MS, 1);
        }
    }
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    const kp_job_stragglers *g = &j.stragglers;
    CHECK_INT(g->steps_by, KP_JOB_STEPS_RANGE);
    CHECK_INT(g->range, N_STEP);
    CHECK(g->timed_by_collectives);
    CHECK_INT(g->nsteps, 2);
    CHECK_INT(g->unmatched, 1);
    CHECK_INT(g->skipped, 0);
    CHECK_INT(g->steps[0].index, 0);
    CHECK_INT(g->steps[0].last_rank, 0);
    CHECK_INT(g->steps[0].wait_ns, 1 * MS);
    CHECK_INT(g->steps[1].index, 2);
    CHECK_INT(g->steps[1].last_rank, 1);
    CHECK_INT(g->steps[1].wait_ns, 2 * MS);
    CHECK_INT(g->last_count, 1);
    CHECK_INT(g->last_rank, 0); /* one each: the lowest rank */
    kp_trace_job_free(&j);

    /* Ranges alone (no collective in the trace): a rank arrives when its range starts. */
    CHECK_INT(kp_trace_job_begin(&j, three + 1, 2, names, N_NAMES, 0, NULL), 0);
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 2; r++) {
            int64_t s = (int64_t)k * 10 * MS + (r == 1 ? 3 * MS : 0);
            add(&j, ev(KP_EVENT_RANGE, N_STEP, row_of(r), s, s + 5 * MS, 0));
        }
    add(&j, ev(KP_EVENT_RANGE, N_STEP, row_of(0), 50 * MS, 55 * MS, 0)); /* a third on rank 0 */
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    CHECK_INT(j.stragglers.steps_by, KP_JOB_STEPS_RANGE);
    CHECK(!j.stragglers.timed_by_collectives);
    CHECK_INT(j.stragglers.nsteps, 2);
    CHECK_INT(j.stragglers.skipped, 1);
    CHECK_INT(j.stragglers.last_rank, 1);
    CHECK_INT(j.stragglers.wait_median_ns, 3 * MS);
    CHECK_INT(j.stragglers.timed_total_ns, 20 * MS);
    kp_trace_job_free(&j);

    /* One rank: no stragglers. */
    CHECK_INT(kp_trace_job_begin(&j, three, 1, names, N_NAMES, 0, NULL), 0);
    coll(&j, N_ALLREDUCE, 1, 0, 0, 1 * MS, 0);
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    CHECK_INT(j.stragglers.steps_by, KP_JOB_STEPS_NONE);
    CHECK_INT(j.stragglers.last_rank, -1);
    kp_trace_job_free(&j);
}

/* A rank waits at a collective no longer than its kernel ran: a broadcast's root (rank 0 here)
 * can finish before a late receiver joins. */
static void test_wait_capped_by_kernel(void)
{
    kp_trace_job j;
    CHECK_INT(kp_trace_job_begin(&j, three, 3, names, N_NAMES, 0, NULL), 0);
    coll(&j, N_ALLGATHER, row_of(0), 100 * MS, 100 * MS, 101 * MS, 0); /* ran 1 ms */
    coll(&j, N_ALLGATHER, row_of(1), 100 * MS, 100 * MS, 106 * MS, 1); /* spun until rank 2 */
    coll(&j, N_ALLGATHER, row_of(2), 105 * MS, 105 * MS, 106 * MS, 2); /* last, 5 ms late */
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    const kp_job_stragglers *g = &j.stragglers;
    CHECK_INT(g->nsteps, 1);
    CHECK_INT(g->last_rank, 2);
    CHECK_INT(g->steps[0].waits[0], 1 * MS); /* not 5: its kernel ran 1 ms */
    CHECK_INT(g->steps[0].waits[1], 5 * MS);
    CHECK_INT(g->steps[0].waits[2], 0);
    CHECK_INT(g->steps[0].wait_ns, 3 * MS);
    CHECK(g->wait_total_ns <= g->timed_total_ns);
    kp_trace_job_free(&j);
}

/* A host is a boot: machines that share a name are two hosts, their labels say the boots; a
 * name without a boot id is a host of its own, a boot without a name is labelled by its id. */
/* Ranks recorded one after another (two traces merged): their 'step' ranges never overlap, so
 * no step is judged and none says a rank waited; where only some steps overlap, only those are
 * judged, and a rank waits no longer than its own range. */
static void test_steps_apart(void)
{
    kp_trace_job j;
    /* Rank 0 runs steps 0..3 from 0, rank 1 the same from 100 ms: after rank 0 has ended. */
    CHECK_INT(kp_trace_job_begin(&j, three + 1, 2, names, N_NAMES, 0, NULL), 0);
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < 2; r++) {
            int64_t s = (int64_t)k * 10 * MS + (r == 1 ? 100 * MS : 0);
            add(&j, ev(KP_EVENT_RANGE, N_STEP, row_of(r), s, s + 5 * MS, 0));
        }
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    const kp_job_stragglers *g = &j.stragglers;
    CHECK_INT(g->steps_by, KP_JOB_STEPS_RANGE);
    CHECK_INT(g->range, N_STEP);
    CHECK_INT(g->nsteps, 0);
    CHECK_INT(g->apart, 4);
    CHECK_INT(g->wait_total_ns, 0);
    CHECK_INT(g->last_count, 0);
    kp_trace_job_free(&j);

    /* Partly: steps 0 and 1 overlap (rank 1 2 ms late, then 7 ms late: its range starts before
     * rank 0's 10 ms one ends), steps 2 and 3 do not (rank 1 starts 12 ms late: rank 0's is
     * over). */
    CHECK_INT(kp_trace_job_begin(&j, three + 1, 2, names, N_NAMES, 0, NULL), 0);
    static const int64_t late[4] = {2 * MS, 7 * MS, 12 * MS, 15 * MS};
    for (int k = 0; k < 4; k++) {
        int64_t s = (int64_t)k * 100 * MS;
        add(&j, ev(KP_EVENT_RANGE, N_STEP, row_of(0), s, s + 10 * MS, 0));
        add(&j, ev(KP_EVENT_RANGE, N_STEP, row_of(1), s + late[k], s + late[k] + 10 * MS, 0));
    }
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    CHECK_INT(g->nsteps, 2);
    CHECK_INT(g->apart, 2);
    CHECK_INT(g->steps[0].index, 0);
    CHECK_INT(g->steps[1].index, 1);
    CHECK_INT(g->last_rank, 1);
    CHECK_INT(g->last_count, 2);
    CHECK_INT(g->wait_max_ns, 7 * MS);
    CHECK_INT(g->wait_total_ns, 9 * MS);
    CHECK_INT(g->timed_total_ns, 40 * MS);
    CHECK(g->wait_total_ns <= g->timed_total_ns);
    kp_trace_job_free(&j);
}

static void test_hosts_by_boot(void)
{
#define P(row, r, h, b)                                                                            \
    {                                                                                              \
        .id = row, .pid = 1000 + row, .rank = r, .local_rank = 0, .host = h, .boot_id = b,         \
        .launcher = "torchrun"                                                                     \
    }
    static const kp_trace_process hp[] = {
        P(1, 0, "node", "1a2b3c4d-aaaa"),  P(2, 1, "node", "5e6f7a8b-bbbb"),
        P(3, 2, "node", "1a2b3c4d-aaaa"), /* rank 0's machine */
        P(4, 3, "other", "99999999-cccc"), P(5, 4, "node", ""),
        P(6, 5, "", "deadbeef-1234"),      P(7, 6, "dup", "12345678-x"),
        P(8, 7, "dup", "12345678-y"),
    };
#undef P
    size_t n = sizeof hp / sizeof *hp;
    kp_trace_job j;
    CHECK_INT(kp_trace_job_begin(&j, hp, n, names, N_NAMES, 0, NULL), 0);
    for (size_t i = 0; i < n; i++)
        add(&j, ev(KP_EVENT_KERNEL, N_GEMM, hp[i].id, 10 * MS, 11 * MS, 0));
    CHECK_INT(kp_trace_job_finish(&j, NULL), 0);
    CHECK_INT(j.nhosts, 7); /* node's 3 (two boots, and no boot), other, deadbeef, dup's 2 */
    CHECK_INT(j.nranked, 8);
    /* Each rank's host: its name, boot and the tag that tells hosts of one name apart. */
    static const char *const want[][3] = {
        {"node", "1a2b3c4d-aaaa", "boot 1a2b3c4d"},
        {"node", "5e6f7a8b-bbbb", "boot 5e6f7a8b"},
        {"node", "1a2b3c4d-aaaa", "boot 1a2b3c4d"},
        {"other", "99999999-cccc", ""},
        {"node", "", "no boot id"},
        {"", "deadbeef-1234", "boot deadbeef"},
        {"dup", "12345678-x", "boot 12345678-x"}, /* 8 characters tell them not apart */
        {"dup", "12345678-y", "boot 12345678-y"}};
    for (size_t i = 0; i < 8 && i < j.nranks; i++) {
        CHECK_STR(j.ranks[i].host, want[i][0]);
        CHECK_STR(j.ranks[i].boot_id, want[i][1]);
        CHECK_STR(j.ranks[i].host_tag, want[i][2]);
    }
    /* Device 0 of each host, by name then boot: ranks 0 and 2 share one. */
    static const int order[] = {5, 6, 7, 4, 0, 1, 3};
    CHECK_INT(j.ndevices, 7);
    for (size_t d = 0; d < j.ndevices && d < 7; d++) {
        CHECK_STR(j.devices[d].host, want[order[d]][0]);
        CHECK_STR(j.devices[d].boot_id, want[order[d]][1]);
        CHECK_STR(j.devices[d].host_tag, want[order[d]][2]);
        CHECK_INT(j.devices[d].nranks, order[d] == 0 ? 2 : 1);
        CHECK_INT(j.devices[d].kernels, order[d] == 0 ? 2 : 1);
    }
    kp_trace_job_free(&j);
}

int main(void)
{
    test_classify();
    test_ranks_devices_unions();
    test_collective_steps_skipped();
    test_range_steps();
    test_wait_capped_by_kernel();
    test_steps_apart();
    test_hosts_by_boot();
    if (kp_test_failures) fprintf(stderr, "%d failure(s)\n", kp_test_failures);
    return kp_test_failures != 0;
}
