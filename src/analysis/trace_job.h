/*
 * trace_job.h — a distributed job's trace seen rank by rank and device by device: what each
 * rank (the processes a launcher gave one rank, base/job.h) and each GPU did, collectives
 * (core/collective.h) as their own class, and the stragglers — at each step, which rank arrived
 * last and how long the others waited for it. `kprof report` shows it for a job's trace — one
 * whose processes a launcher gave ranks — that holds more than one rank, or device work on more
 * than one device (kp_trace_job_applies); a trace without ranks reports as it always did, on
 * any number of devices. It feeds it from its own
 * pass over the events (begin, add per event, finish), as it feeds the verdicts
 * (analysis/trace_verdict.h); kp_trace_job_read makes a pass of its own.
 *
 * Ranks: the processes with the same rank are one rank (the images a rank's process exec'd, a
 * wrapper that carried the rank's variables); the processes without a rank (the launcher, a
 * helper) are one more, rank -1, shown as "-". Restarts of one rank (torchrun's
 * TORCHELASTIC_RESTART_COUNT) are the same rank.
 *
 * Hosts: a host is a boot — the processes' boot id, which processes of one machine share until
 * it reboots — or, for processes that say no boot id (an old trace), their host name. Two
 * machines that share a name (containers, a default hostname) are two hosts; where names clash
 * like that, a host's tag says its boot, for the tables to show: "node1 (boot 1a2b3c4d)".
 *
 * Devices: a device is (host, device number), the number as each process saw it — the CUDA
 * ordinal, or OpenCL's — so two ranks on one host that each saw their GPU as device 0 through
 * CUDA_VISIBLE_DEVICES are reported on one device 0: that remapping is not undone (the trace does
 * not record it).
 *
 * Busy times are unions of intervals (core/busy.h's rule: operations that overlap or touch count
 * once): a rank's GPU busy is the union of its device operations, a device's the union of every
 * process's operations on it; time in collectives the union of the collective kernels alone.
 *
 * Stragglers, over the ranks (rank >= 0; at least two):
 *   - steps by NVTX range: when a range name occurs on every rank at least twice, the k-th
 *     occurrence on each rank is step k (of several such names, the one with the largest total
 *     time: the outermost "step" rather than what it holds). The collective kernels a rank
 *     launched inside its k-th range (the launching call started within it, where the trace
 *     has the call; else the kernel itself started within it) are the step's:
 *     they must pair up on every rank (as many, the same names in the same order), else the
 *     step is counted unmatched and left out. A rank arrives at the step when its first
 *     collective of the step starts on its device; at the j-th collective every rank waits from
 *     its own start to the last rank's start (an NCCL kernel on an early rank spins until the
 *     last rank joins), and its wait in the step is the sum. Without any collective kernel in
 *     the trace, a rank arrives when its range starts, and waits until the last rank's start.
 *   - steps by collective, where no range name qualifies (or no range step paired up): the k-th
 *     collective kernel of one name on every rank is one step, each rank arriving when its
 *     kernel starts.
 *   A step that is not on every rank (a name or an occurrence some rank lacks) is skipped and
 *   counted; so is a step that no rank was still in when its last rank arrived (its range, or
 *   its collectives, had ended on every other rank: ranks recorded one after another), whose
 *   "waits" would be the time between separate runs. A rank's wait at a step is at most
 *   the time it spent in it, so the waits are never more than the time timed. A step's wait is the
 * mean of the other ranks' waits (all but the last); the summary gives the rank most often last,
 * the steps' median and largest wait, and every rank's waits summed over the time of what was timed
 * (the steps' collective kernels, or ranges, on every rank).
 *
 * Memory: 24 bytes per device operation (the unions are made after the pass, by sorting), and
 * 32 per collective kernel and per range of a rank.
 *
 * Ownership: hosts, boot ids and names are the source's strings (kp_trace_process,
 * kp_event_source_strings), or the job's own tags: keep the source open while the job is read, and
 * free the job first.
 */
#ifndef KP_ANALYSIS_TRACE_JOB_H
#define KP_ANALYSIS_TRACE_JOB_H

#include "core/collective.h"
#include "base/error.h"
#include "store/event_source.h"

#include <stddef.h>
#include <stdint.h>

/* One rank: its processes together. */
typedef struct kp_job_rank {
    int rank;             /* >= 0; -1: every process without a rank ("-") */
    int local_rank;       /* -1: unknown, or its processes do not say one value */
    const char *host;     /* its first process's host that is known: its name; "" unknown */
    const char *boot_id;  /* ... and its boot id; "" unknown */
    const char *host_tag; /* ... and what tells it from other hosts of its name (see the top):
                             "boot 1a2b3c4d" (the whole id where 8 characters do not tell two
                             apart), "no boot id"; "" where the name alone does, "boot ..."
                             for a host without a name */
    int64_t *pids;        /* its processes' pids, each once, ascending */
    size_t npids;
    uint32_t *gpus; /* the device numbers its device work ran on, ascending */
    size_t ngpus;
    uint64_t kernels;       /* compute kernels (collectives not included) */
    uint64_t collectives;   /* collective kernels */
    uint64_t copies, fills; /* copies and fills on the device */
    int64_t gpu_busy_ns;    /* the union of its device operations */
    int64_t collective_ns;  /* the union of its collective kernels */
    int64_t host_api_ns;    /* its host API calls summed (polling calls only with raw) */
    int64_t start_ns;       /* its span: its first process's start (or first event) ... */
    int64_t end_ns;         /* ... to its last process's end (or last event); 0, 0: none */
    uint64_t last_at;       /* the straggler steps at which it arrived last */
} kp_job_rank;

/* One device: a host's device number. */
typedef struct kp_job_device {
    const char *host;     /* its host's name; "" unknown */
    const char *boot_id;  /* its host's boot id; "" unknown */
    const char *host_tag; /* its host's tag (kp_job_rank.host_tag) */
    uint32_t device;      /* as the processes saw it (see the top) */
    uint64_t kernels, collectives, copies, fills;
    int64_t gpu_busy_ns;   /* the union of every process's operations on it */
    int64_t collective_ns; /* ... of the collective kernels alone */
    int *ranks;            /* the ranks whose work ran on it, ascending, -1 ("-") last */
    size_t nranks;
} kp_job_device;

typedef enum kp_job_steps {
    KP_JOB_STEPS_NONE,      /* fewer than two ranks, or no range or collective on every rank */
    KP_JOB_STEPS_RANGE,     /* the k-th occurrence of an NVTX range name on every rank */
    KP_JOB_STEPS_COLLECTIVE /* the k-th collective kernel of one name on every rank */
} kp_job_steps;

typedef struct kp_job_step {
    uint64_t index;       /* k: the occurrence on every rank (from 0) */
    uint32_t name;        /* the collective's string id (the step's first, for range steps
                             timed by collectives), or the range's */
    kp_collective_op op;  /* its collective's operation; NONE for a range without them */
    uint32_t collectives; /* collective kernels of the step on each rank (1 by collective) */
    int last_rank;        /* the rank that arrived last (the lowest of a tie) */
    int64_t at_ns;        /* when it arrived */
    int64_t wait_ns;      /* the other ranks' mean wait */
    int64_t timed_ns;     /* the time of its collective kernels (or ranges), every rank's */
    const int64_t *waits; /* each rank's wait, in the ranks' order (kp_trace_job.ranks[i], i <
                             nranked) */
} kp_job_step;

typedef struct kp_job_stragglers {
    kp_job_steps steps_by;
    uint32_t range;           /* steps by range: its name's string id */
    int timed_by_collectives; /* arrivals are collective kernels' starts (else ranges') */
    kp_collective_op op;      /* every step's operation; OTHER when they differ; NONE none */
    kp_job_step *steps;       /* in order of time (at_ns) */
    size_t nsteps;
    uint64_t skipped;    /* steps not on every rank */
    uint64_t unmatched;  /* range steps whose collectives did not pair up */
    uint64_t apart;      /* steps left out because no rank was still in them when their last
                            rank arrived (ranks that ran one after another) */
    int last_rank;       /* the rank most often last (the lowest of a tie); -1 none */
    uint64_t last_count; /* ... at this many steps */
    int64_t wait_median_ns, wait_max_ns; /* over the steps' wait_ns */
    int64_t wait_total_ns;               /* every rank's waits at every step */
    int64_t timed_total_ns;              /* the steps' timed_ns summed */
    int64_t *waits_;                     /* private: the steps' waits */
} kp_job_stragglers;

typedef struct kp_job_state kp_job_state;

typedef struct kp_trace_job {
    kp_job_rank *ranks; /* ascending rank, "-" (-1) last when there are such processes */
    size_t nranks;
    size_t nranked;         /* the ranks with rank >= 0: ranks[0 .. nranked) */
    kp_job_device *devices; /* by host, then device number */
    size_t ndevices;
    size_t nhosts;        /* distinct hosts (boots, or names where no boot is said) of the
                             processes; processes that say neither not counted */
    const char *launcher; /* the first ranked process's launcher ("torchrun"); "" none */
    kp_job_stragglers stragglers;
    kp_job_state *state_; /* private: what was fed */
} kp_trace_job;

/* Whether src is a job's trace, the report's rule for showing the job's tables: a process has a
 * rank, and there is more than one rank or device work on more than one device. *applies 0 or
 * 1. Where ranks alone do not decide, the first call makes the source's index
 * (kp_event_source_queues). */
kprof_status kp_trace_job_applies(kp_event_source *src, int *applies, kp_error *err);

/* Zero *j and get ready to be fed the events of a trace whose processes are procs (by row id,
 * as kp_event_source_processes gives them) and whose strings are names[0 .. nnames). raw: polling
 * host calls count in the ranks' host API time (--raw). KPROF_OK, or KPROF_NOMEM (err filled; *j
 * then holds nothing). */
kprof_status kp_trace_job_begin(kp_trace_job *j, const kp_trace_process *procs, size_t nprocs,
                                const char *const *names, size_t nnames, int raw, kp_error *err);

/* Feed one event, any order. What it reads: kind, name, process, start, end, and for device
 * operations e.device (KP_EVENT_FIELD_STREAM) and the launching call's start
 * (KP_EVENT_FIELD_LAUNCH, where the trace has it). call_flags: kp_host_call_flags of its name
 * (API calls). KPROF_OK, or KPROF_NOMEM (err filled). */
kprof_status kp_trace_job_add(kp_trace_job *j, const kp_trace_event *ev, unsigned call_flags,
                              kp_error *err);

/* After the last event: the ranks', the devices' and the stragglers' numbers. KPROF_OK;
 * KPROF_NOMEM; KPROF_INVALID when j was never begun (err says which). */
kprof_status kp_trace_job_finish(kp_trace_job *j, kp_error *err);

/* begin, one pass over the events with the fields it needs, finish. Errors: as
 * kp_event_iter_next's (a damaged trace is CORRUPT), NOMEM; *j then holds nothing. */
kprof_status kp_trace_job_read(kp_event_source *src, int raw, kp_trace_job *j, kp_error *err);

/* The event fields kp_trace_job_add reads (besides the core ones). */
#define KP_TRACE_JOB_FIELDS (KP_EVENT_FIELD_STREAM | KP_EVENT_FIELD_LAUNCH)

void kp_trace_job_free(kp_trace_job *j); /* a zeroed one is fine; zeroes it */

#endif
