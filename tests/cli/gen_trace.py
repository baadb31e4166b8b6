#!/usr/bin/env python3
"""gen_trace.py — a stand-in for a GPU program, run under `kprof trace`: it writes the records a
collector would (into $KPROF_TRACE_DIR) for a known timeline, then lives until that timeline
ends, so the real merge and report see a program whose numbers are known exactly.

usage: gen_trace.py PATTERN [--kernels N] [--seconds S]
  launch-bound   N short kernels (5 us), each after a 40 us launch call, spread over S
  device-bound   N long kernels back to back filling 98% of S, one sync call at the end
  crash          some kernels, then SIGSEGV without an end record
  dropped        a few kernels and 7 dropped records
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
    if a.pattern in ("launch-bound", "crash", "dropped"):
        kname = w.string("_Z5smallPfi")  # demangles to small(float*, int)
        step = span // max(n, 1)
        for i in range(n):
            s = t0 + i * step
            buf += klog.rec(klog.API, name=launch, start=s, end=s + 40000, correlation=i + 1,
                            domain=1)
            if not a.no_poll:
                buf += klog.rec(klog.API, name=poll, start=s + 40000, end=s + 41000, domain=1)
            buf += klog.rec(klog.KERNEL, name=kname, start=s + 50000, end=s + 55000,
                            correlation=i + 1, grid=(64, 1, 1), block=(256, 1, 1), registers=16,
                            static_smem=1024, queued=s + 1000, submitted=s + 45000)
        buf += klog.rec(klog.RANGE, name=outer, start=t0, end=t0 + span, rid=1, domain=4)
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
    if a.pattern == "dropped":
        buf += klog.rec(klog.DROPPED, start=t0, nbytes=7)
    w.write(bytes(buf))
    w.f.flush()
    while klog.now_ns() < t0 + span:
        time.sleep(0.005)
    if a.pattern == "crash":
        w.f.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    w.close(end=klog.now_ns())


if __name__ == "__main__":
    main()
