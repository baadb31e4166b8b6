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
  crash          some kernels, then SIGSEGV without an end record
  dropped        a few kernels and 7 dropped records
  two-kernels    N iterations, one every 400 us, each an NVTX range 'iter' (300 us) holding a
                 launch of 'steady' (40 us on the device) and of 'tuned' (50 us); both kernels'
                 durations step through +0..100 ns by iteration (never two alike, the same in
                 every trace). --slower P makes 'tuned' P percent longer, --extra adds a third
                 launch per iteration, of 'extra' (10 us): what `kprof diff` must find

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
    a = ap.parse_args()
    d = os.environ.get("KPROF_TRACE_DIR")
    if not d:
        sys.exit("gen_trace.py: run me under kprof trace (KPROF_TRACE_DIR unset)")
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


if __name__ == "__main__":
    main()
