#!/usr/bin/env python3
"""gen_trace.py — a stand-in for a GPU program, run under `kprof trace`: it writes the records a
collector would (into $KPROF_TRACE_DIR) for a known timeline, then lives until that timeline
ends, so the real merge and report see a program whose numbers are known exactly.

usage: gen_trace.py PATTERN [--kernels N] [--seconds S] [--period-us P] [--steps K]
  launch-bound   N short kernels (5 us), each after a 40 us launch call and a 1 us poll, one
                 every P us (default 45: back to back), inside an NVTX range 'outer'
  device-bound   N long kernels back to back filling 98% of S, one sync call at the end
  host-bound     a training script in small: start-up (allocations, a module load, no kernel)
                 for S, then K NVTX 'step' ranges of 20 ms, each N short kernels 50 us apart,
                 a sync, and idle (data loading)
  opencl         an OpenCL program: a write, clBuildProgram (300 ms), an NVTX range 'burst' of
                 N kernels launched back to back (half with no local size: the runtime chose
                 the work-groups), and a read 750 ms after the write (the build is 40% of it)
  opencl-blocking  an OpenCL program of K steps 10 ms apart, each 2.5 ms of host work (no
                 call), N kernel launches (8 us, 10 us apart), N kernels back to back from 2.6
                 ms to 9.9 ms (73% of the step), and a blocking clEnqueueReadBuffer (CL_TRUE)
                 from the last launch to the step's end, whose wait record (the layer's SYNC
                 record: the call's name, interval and correlation) says it blocked; its copy
                 is the last 100 us on the device
  crash          some kernels, then SIGSEGV without an end record
  dropped        a few kernels and 7 dropped records
  two-kernels    N iterations, one every 400 us, each an NVTX range 'iter' (300 us) holding a
                 launch of 'steady' (40 us on the device) and of 'tuned' (50 us); both kernels'
                 durations step through +0..100 ns by iteration (never two alike, the same in
                 every trace). --slower P makes 'tuned' P percent longer, --extra adds a third
                 launch per iteration, of 'extra' (10 us): what `kprof diff` must find
  shapes         N iterations, one every 400 us, each an NVTX range 'step' (300 us) holding
                 launches of one kernel name 'gemm' with two launch shapes, 64 and 1024
                 threadgroups of 256 (20 and 80 us on the device), and of 'tiny' (2 us); every
                 duration steps through +0..100 ns by iteration. --slower P makes the large
                 'gemm', 'tiny' and the launch calls P percent longer (20: 'tiny' by 400 ns, under
                 kprof diff's minimum effect of 1 us)
  job            a torchrun in small: it records a launch call of its own (no rank) and starts
                 --ranks processes of 'job-rank' with torchrun's variables (RANK, LOCAL_RANK,
                 WORLD_SIZE, ...), all on one timeline that starts at T (0.2 s from now)
  job-rank       one rank (its place from those variables, as the collectors read it): a copy
                 (100 us), then K steps 2 ms apart, each an NVTX range 'step' (unless
                 --no-ranges) holding N compute kernels of 50 us back to back on stream 7 from
                 20 us into the step, then an all-reduce (ncclDevKernel_AllReduce_Sum_f32_RING_LL,
                 stream 13) that starts when the rank's compute ends and ends 100 us after the
                 last rank's compute ends, as NCCL's kernels do. --late-rank R is --late-us L
                 late (its last compute kernel L longer) at every step but each fifth (k % 5 ==
                 4), where rank 0 is L/2 late instead. --extra-collective-rank E: rank E runs one
                 all-reduce more, after the steps. Device: the local rank; host: --hosts' entry
                 for the rank (comma-separated, taken in turn), else this host

The program lives S seconds from its first record, or until its last record if that is later;
whatever it lived before that (the interpreter's start-up) depends on the machine, so tests
assert on what the records fix: the active window, the NVTX ranges, counts and durations.
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import klog  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pattern")
    ap.add_argument("--kernels", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--no-poll", action="store_true", help="no polling call after each launch")
    ap.add_argument("--period-us", type=float, default=45.0, help="launch-bound: launch period")
    ap.add_argument("--steps", type=int, default=10, help="host-bound: NVTX step ranges")
    ap.add_argument("--slower", type=float, default=0.0,
                    help="two-kernels: 'tuned' this many percent longer")
    ap.add_argument("--extra", action="store_true", help="two-kernels: a third kernel, 'extra'")
    ap.add_argument("--chunks", type=int, default=0,
                    help="write the records in this many batches spread over the timeline, "
                         "each marked whole as the collectors' writer does (the live merge "
                         "takes them while the program runs); 0: all at once, unmarked")
    ap.add_argument("--ranks", type=int, default=2, help="job: ranks to start")
    ap.add_argument("--late-rank", type=int, default=1, help="job: the rank that is late")
    ap.add_argument("--late-us", type=float, default=300.0, help="job: how late (us)")
    ap.add_argument("--no-ranges", action="store_true", help="job: no NVTX 'step' ranges")
    ap.add_argument("--extra-collective-rank", type=int, default=-1,
                    help="job: this rank runs one all-reduce more")
    ap.add_argument("--hosts", default="", help="job: the ranks' hosts, comma-separated")
    ap.add_argument("--boots", default="",
                    help="job: the ranks' boot ids, comma-separated (default: one per host)")
    ap.add_argument("--t0", type=int, default=0, help="job-rank: the job's timeline start (ns)")
    a = ap.parse_args()
    d = os.environ.get("KPROF_TRACE_DIR")
    if not d:
        sys.exit("gen_trace.py: run me under kprof trace (KPROF_TRACE_DIR unset)")
    if a.pattern == "job":
        return job_launcher(a, d)
    if a.pattern == "job-rank":
        return job_rank(a, d)
    pid = os.getpid()
    t0 = klog.now_ns() + 1000
    span = int(a.seconds * 1e9)
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (pid, t0)), pid, " ".join(sys.argv), t0)
    launch = w.string("cudaLaunchKernel")
    sync = w.string("cudaDeviceSynchronize")
    poll = w.string("cudaGetLastError")
    outer = w.string("outer")
    n = a.kernels
    buf = bytearray()
    last = t0 + span  # the last record's time: the program lives at least until then
    if a.pattern in ("launch-bound", "crash", "dropped"):
        kname = w.string("_Z5smallPfi")  # demangles to small(float*, int)
        step = int(a.period_us * 1000)
        span = max(span, n * step + 55000)
        for i in range(n):
            s = t0 + i * step
            buf += klog.rec(klog.API, name=launch, start=s, end=s + 40000, correlation=i + 1,
                            domain=1)
            if not a.no_poll:
                buf += klog.rec(klog.API, name=poll, start=s + 40000, end=s + 41000, domain=1)
            buf += klog.rec(klog.KERNEL, name=kname, start=s + 50000, end=s + 55000,
                            correlation=i + 1, grid=(64, 1, 1), block=(256, 1, 1), registers=16,
                            static_smem=1024, queued=s + 1000, submitted=s + 45000)
        buf += klog.rec(klog.RANGE, name=outer, start=t0, end=t0 + n * step + 55000, rid=1,
                        domain=4)
    elif a.pattern == "host-bound":
        malloc = w.string("cudaMalloc")
        module = w.string("cuModuleLoadData")
        kname = w.string("elementwise_kernel")
        stepname = w.string("step")
        for i in range(10):  # start-up: allocations and a module load, no kernel yet
            s = t0 + i * span // 20
            buf += klog.rec(klog.API, name=malloc, start=s, end=s + span // 40, domain=1)
        buf += klog.rec(klog.API, name=module, start=t0 + span // 2, end=t0 + span * 3 // 4,
                        domain=2)
        corr = 0
        for k in range(a.steps):
            st = t0 + span + k * 20000000
            buf += klog.rec(klog.RANGE, name=stepname, start=st, end=st + 20000000, rid=k + 1,
                            domain=4)
            for i in range(n):
                s = st + 1000000 + i * 50000
                corr += 1
                buf += klog.rec(klog.API, name=launch, start=s - 10000, end=s - 2000,
                                correlation=corr, domain=1)
                buf += klog.rec(klog.KERNEL, name=kname, start=s, end=s + 24000,
                                correlation=corr, grid=(256, 1, 1), block=(128, 1, 1),
                                registers=32)
            buf += klog.rec(klog.API, name=sync, start=st + 3000000, end=st + 4000000, domain=1)
        span = span + a.steps * 20000000
    elif a.pattern == "opencl":
        ndrange = w.string("clEnqueueNDRangeKernel")
        build = w.string("clBuildProgram")
        write = w.string("clEnqueueWriteBuffer")
        read = w.string("clEnqueueReadBuffer")
        kname = w.string("scale")
        burst = w.string("burst")
        cl = klog.OPENCL  # calls and device operations alike
        buf += klog.rec(klog.API, name=write, start=t0, end=t0 + 20000, correlation=1, domain=cl)
        buf += klog.rec(klog.MEMCPY, name=w.string("[OpenCL write]"), start=t0 + 30000,
                        end=t0 + 40000, correlation=1, nbytes=16384, aux=1, domain=cl,
                        queued=t0 + 5000, submitted=t0 + 25000, stream=1)
        buf += klog.rec(klog.API, name=build, start=t0 + 1000000, end=t0 + 301000000, domain=cl)
        b0 = t0 + 302000000
        for i in range(n):
            s = b0 + i * 15000
            corr = i + 2
            buf += klog.rec(klog.API, name=ndrange, start=s, end=s + 12000, correlation=corr,
                            domain=cl)
            # Even launches pass no local size: grid holds the 4096 work-items, block 0.
            geo = dict(grid=(4096, 1, 1), block=(0, 0, 0)) if i % 2 == 0 else \
                dict(grid=(16, 1, 1), block=(256, 1, 1))
            buf += klog.rec(klog.KERNEL, name=kname, start=s + 10000, end=s + 15000,
                            correlation=corr, domain=cl, queued=s + 2000, submitted=s + 8000,
                            stream=1, **geo)
        buf += klog.rec(klog.RANGE, name=burst, start=b0, end=b0 + n * 15000, rid=1, domain=4)
        r0 = t0 + 750000000
        buf += klog.rec(klog.API, name=read, start=r0 - 30000, end=r0, correlation=n + 2,
                        domain=cl)
        buf += klog.rec(klog.MEMCPY, name=w.string("[OpenCL read]"), start=r0 - 10000, end=r0,
                        correlation=n + 2, nbytes=16384, aux=2, domain=cl, stream=1)
        span = max(span, 750000000)
    elif a.pattern == "opencl-blocking":
        ndrange = w.string("clEnqueueNDRangeKernel")
        read = w.string("clEnqueueReadBuffer")
        kname = w.string("heavy")
        cl = klog.OPENCL
        corr = 0
        each = 7300000 // n
        for k in range(a.steps):
            st = t0 + k * 10000000
            for i in range(n):
                s = st + 2500000 + i * 10000
                corr += 1
                buf += klog.rec(klog.API, name=ndrange, start=s, end=s + 8000, correlation=corr,
                                domain=cl)
                ks = st + 2600000 + i * each
                buf += klog.rec(klog.KERNEL, name=kname, start=ks, end=ks + each,
                                correlation=corr, domain=cl, grid=(16, 1, 1), block=(256, 1, 1),
                                stream=1)
            corr += 1
            rs, re = st + 2500000 + n * 10000, st + 10000000
            buf += klog.rec(klog.API, name=read, start=rs, end=re, correlation=corr, domain=cl)
            buf += klog.rec(klog.SYNC, name=read, start=rs, end=re, correlation=corr, domain=cl,
                            stream=0xFFFFFFFF)
            buf += klog.rec(klog.MEMCPY, name=w.string("[OpenCL read]"), start=re - 100000,
                            end=re, correlation=corr, nbytes=16384, aux=klog.DTOH, domain=cl,
                            stream=1)
        span = max(span, a.steps * 10000000)
    elif a.pattern == "device-bound":
        kname = w.string("big")
        each = int(span * 0.98) // n
        for i in range(n):
            s = t0 + i * each
            buf += klog.rec(klog.API, name=launch, start=s, end=s + 3000, correlation=i + 1,
                            domain=1)
            buf += klog.rec(klog.KERNEL, name=kname, start=s + 5000, end=s + each,
                            correlation=i + 1, grid=(1024, 1, 1), block=(256, 1, 1))
        end = t0 + n * each
        buf += klog.rec(klog.API, name=sync, start=t0 + 3000 * n, end=end + 1000, domain=1)
        buf += klog.rec(klog.MEMCPY, name=w.string("[CUDA memcpy DtoH]"), start=end + 2000,
                        end=end + 12000, nbytes=1 << 20, aux=2, correlation=n + 1)
    elif a.pattern == "two-kernels":
        steady = w.string("steady")
        tuned = w.string("tuned")
        extra = w.string("extra")
        it = w.string("iter")
        period = 400000
        for i in range(n):
            s = t0 + i * period
            jitter = (i * 37 % 11) * 10  # ns: every instance its own duration
            buf += klog.rec(klog.RANGE, name=it, start=s, end=s + 300000, rid=i + 1, domain=4)
            launches = [(steady, 40000 + jitter), (tuned, int((50000 + jitter) *
                                                              (1 + a.slower / 100)))]
            if a.extra:
                launches.append((extra, 10000 + jitter))
            at = s + 100000  # the device runs them back to back, after the launches
            for k, (kname, dur) in enumerate(launches):
                corr = i * 3 + k + 1
                c = s + 1000 + k * 12000
                buf += klog.rec(klog.API, name=launch, start=c, end=c + 10000, correlation=corr,
                                domain=1)
                buf += klog.rec(klog.KERNEL, name=kname, start=at, end=at + dur,
                                correlation=corr, grid=(64, 1, 1), block=(256, 1, 1))
                at += dur + 1000
        span = max(span, n * period)
    elif a.pattern == "shapes":
        gemm = w.string("gemm")
        tiny = w.string("tiny")
        stepname = w.string("step")
        period = 400000
        more = 1 + a.slower / 100
        for i in range(n):
            s = t0 + i * period
            jitter = (i * 37 % 11) * 10  # ns: every instance its own duration
            buf += klog.rec(klog.RANGE, name=stepname, start=s, end=s + 300000, rid=i + 1,
                            domain=4)
            # (name, grid in threadgroups, duration): two shapes of 'gemm', one of 'tiny'
            launches = [(gemm, (64, 1, 1), 20000 + jitter),
                        (gemm, (1024, 1, 1), int((80000 + jitter) * more)),
                        (tiny, (8, 1, 1), int((2000 + jitter) * more))]
            at = s + 100000
            for k, (kname, grid, dur) in enumerate(launches):
                corr = i * 3 + k + 1
                c = s + 1000 + k * 12000
                buf += klog.rec(klog.API, name=launch, start=c, end=c + int(10000 * more),
                                correlation=corr, domain=1)
                buf += klog.rec(klog.KERNEL, name=kname, start=at, end=at + dur,
                                correlation=corr, grid=grid, block=(256, 1, 1), dynamic_smem=0,
                                static_smem=0)
                at += dur + 1000
        span = max(span, n * period)
    if a.pattern == "dropped":
        buf += klog.rec(klog.DROPPED, start=t0, nbytes=7)
    last = max(last, t0 + span)
    if a.chunks > 0:  # batch k goes out at t0 + k/chunks of the timeline, whole records only
        size = (len(buf) // 128 + a.chunks - 1) // a.chunks * 128
        for k in range(a.chunks):
            while klog.now_ns() < t0 + (last - t0) * k // a.chunks:
                time.sleep(0.002)
            w.write(bytes(buf[k * size:(k + 1) * size]))
            w.mark_whole()
    else:
        w.write(bytes(buf))
        w.f.flush()
    while klog.now_ns() < last:
        time.sleep(0.005)
    if a.pattern == "crash":
        w.f.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    w.close(end=klog.now_ns())


JOB_STEP_NS = 2000000  # a step's period
JOB_KERNEL_NS = 50000  # a compute kernel
JOB_TAIL_NS = 100000  # the all-reduce after the last rank's compute ended
JOB_COLLECTIVE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def job_host(a, rank):
    hosts = [h for h in a.hosts.split(",") if h]
    if hosts:
        return hosts[rank % len(hosts)] if rank >= 0 else hosts[0]
    import socket
    return socket.gethostname()


def job_boot(a, rank):
    """A rank's boot id: --boots', else one per host (two hosts never share a boot)."""
    boots = [b for b in a.boots.split(",") if b]
    if boots:
        return boots[rank % len(boots)] if rank >= 0 else boots[0]
    return "synthetic-boot-of-" + job_host(a, rank) if a.hosts else "synthetic-boot"


def job_late_ns(a, rank, k):
    """How late rank is at step k (its compute's end)."""
    late = int(a.late_us * 1000)
    if k % 5 == 4 and a.late_rank != 0:
        return late // 2 if rank == 0 else 0
    return late if rank == a.late_rank else 0


def job_wait(w, last):
    while klog.now_ns() < last:
        time.sleep(0.005)
    w.close(end=klog.now_ns())


def job_launcher(a, d):
    import subprocess
    pid = os.getpid()
    t0 = klog.now_ns() + 200000000
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (pid, t0)), pid, " ".join(sys.argv),
                    t0 - 2000000)
    buf = bytearray(klog.process(w, host=job_host(a, -1), boot_id=job_boot(a, -1)))
    buf += klog.rec(klog.API, name=w.string("cuInit"), start=t0 - 2000000, end=t0 - 1000000,
                    domain=2)
    w.write(bytes(buf))
    w.f.flush()
    children = []
    for r in range(a.ranks):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.ranks),
                   LOCAL_WORLD_SIZE=str(a.ranks), GROUP_RANK="0", TORCHELASTIC_RUN_ID="gen",
                   TORCHELASTIC_RESTART_COUNT="0")
        args = [sys.executable, os.path.abspath(__file__), "job-rank", "--t0", str(t0)]
        args += sys.argv[2:]
        children.append(subprocess.Popen(args, env=env))
    rc = max(c.wait() for c in children)
    job_wait(w, 0)
    sys.exit(rc)


def job_rank(a, d):
    def env_int(name):
        v = os.environ.get(name)
        return int(v) if v is not None and v.isdigit() else -1
    rank, local = env_int("RANK"), env_int("LOCAL_RANK")
    launcher = klog.LAUNCHER_TORCHRUN if os.environ.get("TORCHELASTIC_RUN_ID") else \
        klog.LAUNCHER_ENV if rank >= 0 else klog.LAUNCHER_NONE
    pid = os.getpid()
    t0 = a.t0 or klog.now_ns() + 1000
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (pid, t0)), pid, " ".join(sys.argv),
                    t0 - 1000000)
    buf = bytearray()
    buf += klog.process(w, launcher=launcher, rank=rank, local_rank=local,
                        world_size=env_int("WORLD_SIZE"),
                        local_world_size=env_int("LOCAL_WORLD_SIZE"),
                        node=env_int("GROUP_RANK"),
                        restart=env_int("TORCHELASTIC_RESTART_COUNT"), host=job_host(a, rank),
                        boot_id=job_boot(a, rank))
    device = max(local, 0)
    launch = w.string("cudaLaunchKernel")
    compute = w.string("gemm_kernel")
    coll = w.string(JOB_COLLECTIVE)
    step = w.string("step")
    corr = 1
    # The copy, before the steps.
    buf += klog.rec(klog.API, name=w.string("cudaMemcpyAsync"), start=t0 - 160000,
                    end=t0 - 155000, correlation=corr, domain=1)
    buf += klog.rec(klog.MEMCPY, name=w.string("[CUDA memcpy HtoD]"), start=t0 - 150000,
                    end=t0 - 50000, correlation=corr, nbytes=1 << 20, aux=klog.HTOD,
                    device=device, stream=7)
    n = a.kernels
    for k in range(a.steps):
        s = t0 + k * JOB_STEP_NS
        if not a.no_ranges:
            buf += klog.rec(klog.RANGE, name=step, start=s, end=s + JOB_STEP_NS - 10000,
                            rid=k + 1, domain=klog.NVTX)
        at = s + 20000
        for i in range(n):
            corr += 1
            c = s + 1000 + i * 10000
            buf += klog.rec(klog.API, name=launch, start=c, end=c + 5000, correlation=corr,
                            domain=1)
            dur = JOB_KERNEL_NS + (job_late_ns(a, rank, k) if i == n - 1 else 0)
            buf += klog.rec(klog.KERNEL, name=compute, start=at, end=at + dur, correlation=corr,
                            grid=(64, 1, 1), block=(256, 1, 1), device=device, stream=7)
            at += dur
        latest = max(job_late_ns(a, r, k) for r in range(a.ranks))
        end = s + 20000 + n * JOB_KERNEL_NS + latest + JOB_TAIL_NS
        corr += 1
        c = s + 1000 + n * 10000
        buf += klog.rec(klog.API, name=launch, start=c, end=c + 5000, correlation=corr, domain=1)
        buf += klog.rec(klog.KERNEL, name=coll, start=at, end=end, correlation=corr,
                        grid=(2, 1, 1), block=(512, 1, 1), device=device, stream=13)
    last = t0 + a.steps * JOB_STEP_NS
    if rank == a.extra_collective_rank:
        s = last
        corr += 1
        buf += klog.rec(klog.API, name=launch, start=s + 1000, end=s + 6000, correlation=corr,
                        domain=1)
        buf += klog.rec(klog.KERNEL, name=coll, start=s + 20000, end=s + 20000 + JOB_TAIL_NS,
                        correlation=corr, grid=(2, 1, 1), block=(512, 1, 1), device=device,
                        stream=13)
        last += JOB_STEP_NS
    w.write(bytes(buf))
    w.f.flush()
    job_wait(w, last)
    return 0


if __name__ == "__main__":
    main()
