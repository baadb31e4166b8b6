"""tree_trace — a trace whose call tree is known exactly, for test_calltree.py (kprof report
--tree/--by, kprof export --json/--csv) and test_hatchet.py (kprof export --hatchet). The record
files are written with klog.py and merged by the real `kprof trace --merge`, so nothing the
machine does enters the numbers. The timeline (ms after T0), hatchet_tree.c's with a poll, a call
name in two paths and a name that is not UTF-8:

  process 5000 "python train.py", thread 5000:
    train [0,10]  (range)
      step [1,5]  (range)
        cudaLaunchKernel [2,2.5] #1      -> gemm [2.6,4.6]
        cudaGetLastError [2.5,2.6]       (a polling call: left out unless --raw)
        cudaMemcpy [3,4.5] #2            -> [CUDA memcpy HtoD] [3.1,4.1], 1 MiB
      step [5,9]
        cudaLaunchKernel [6,6.2] #3      -> gemm [9.5,11] (after its ranges closed)
  thread 5001:
    "naïve\\xff" [0.5,1.5] (range)
    cudaLaunchKernel [12,12.1] #4        -> gemm [12.2,12.4]
  device: orphan [13,13.5] #42 (no call has that correlation)

EXPECTED is the tree with polling calls left out: path -> (kind, calls, inclusive, exclusive,
gpu, gpu_self, device_ops, bytes), times in seconds. The poll's 0.1 ms is step's own time.
"""

import os

import klog

T0 = 1_000_000_000
PID, MAIN, WORKER = 5000, 5000, 5001
COMMAND = "python train.py --steps 2"
NAIVE_BYTES = b"na\xc3\xafve\xff"  # "naïve", then a byte that is not UTF-8
NAIVE_JSON = "na\u00efve\u00ff"  # as the JSON writer writes it (\u00ff for the byte)
NAIVE_CSV = "na\u00efve\ufffd"  # as CSV writes it (U+FFFD)
NAIVE_TEXT = "na\u00efve\\xff"  # as the text tables write it (escaped, as in error messages)
MS = 1e-3
MIB = 1 << 20


def at(ms):
    return T0 + int(round(ms * 1e6))


def write_records(d):
    """The record files and run.txt of the timeline, in folder d."""
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (PID, at(0))), PID, COMMAND, at(0))
    s = w.string
    b = bytearray()

    def api(name, start, end, corr=0, tid=MAIN):
        b.extend(klog.rec(klog.API, name=s(name), tid=tid, start=at(start), end=at(end),
                          correlation=corr, domain=klog.CUDA_RUNTIME))

    def kernel(name, start, end, corr, tid=MAIN):
        b.extend(klog.rec(klog.KERNEL, name=s(name), tid=tid, start=at(start), end=at(end),
                          correlation=corr, device=0, stream=7, grid=(8, 1, 1),
                          block=(128, 1, 1)))

    def rng(name, start, end, rid, tid=MAIN):
        b.extend(klog.rec(klog.RANGE, name=s(name), tid=tid, start=at(start), end=at(end),
                          rid=rid, domain=klog.NVTX))

    api("cudaLaunchKernel", 2, 2.5, corr=1)
    api("cudaGetLastError", 2.5, 2.6)
    kernel("gemm", 2.6, 4.6, 1)
    api("cudaMemcpy", 3, 4.5, corr=2)
    b.extend(klog.rec(klog.MEMCPY, name=s("[CUDA memcpy HtoD]"), tid=MAIN, start=at(3.1),
                      end=at(4.1), correlation=2, nbytes=MIB, aux=klog.HTOD, device=0,
                      stream=7))
    rng("step", 1, 5, 2)
    api("cudaLaunchKernel", 6, 6.2, corr=3)
    rng("step", 5, 9, 3)
    rng("train", 0, 10, 1)
    kernel("gemm", 9.5, 11, 3)
    rng(NAIVE_BYTES, 0.5, 1.5, 4, tid=WORKER)
    api("cudaLaunchKernel", 12, 12.1, corr=4, tid=WORKER)
    kernel("gemm", 12.2, 12.4, 4, tid=WORKER)
    kernel("orphan", 13, 13.5, 42)
    w.write(bytes(b))
    w.close(end=at(14))
    with open(os.path.join(d, "run.txt"), "w") as f:
        f.write("kprof-trace-run 1\nstart_ns %d\nend_ns %d\nexit_status 0\ncollectors cuda\n"
                "command %s\n" % (at(0), at(14), COMMAND))


def make(test, name="tree.kprof"):
    """Merge the timeline into test.tmp/name with the real kprof; returns its path."""
    records = os.path.join(test.tmp, "records-" + name)
    os.mkdir(records)
    write_records(records)
    out = os.path.join(test.tmp, name)
    test.kprof("trace", "--merge", records, "-o", out, expect=0)
    return out


# path below the root -> (kind, calls, inclusive, exclusive, gpu, gpu_self, device_ops, bytes)
EXPECTED = {
    ("train",): ("range", 1, 10 * MS, 2 * MS, 4.5 * MS, 0, 3, 0),
    ("train", "step"): ("range", 2, 8 * MS, 5.8 * MS, 4.5 * MS, 0, 3, 0),
    ("train", "step", "cudaMemcpy"): ("api", 1, 1.5 * MS, 1.5 * MS, 1 * MS, 0, 1, 0),
    ("train", "step", "cudaMemcpy", "[CUDA memcpy HtoD]"):
        ("memcpy", 1, 0, 0, 1 * MS, 1 * MS, 1, MIB),
    ("train", "step", "cudaLaunchKernel"): ("api", 2, 0.7 * MS, 0.7 * MS, 3.5 * MS, 0, 2, 0),
    ("train", "step", "cudaLaunchKernel", "gemm"): ("kernel", 2, 0, 0, 3.5 * MS, 3.5 * MS, 2, 0),
    (NAIVE_JSON,): ("range", 1, 1 * MS, 1 * MS, 0, 0, 0, 0),
    ("(unattributed)",): ("unattributed", 0, 0, 0, 0.5 * MS, 0, 1, 0),
    ("(unattributed)", "orphan"): ("kernel", 1, 0, 0, 0.5 * MS, 0.5 * MS, 1, 0),
    ("cudaLaunchKernel",): ("api", 1, 0.1 * MS, 0.1 * MS, 0.2 * MS, 0, 1, 0),
    ("cudaLaunchKernel", "gemm"): ("kernel", 1, 0, 0, 0.2 * MS, 0.2 * MS, 1, 0),
}

# The tree in the order shown by --sort total: depth-first, children largest total first
# ((unattributed)'s total is the device time it holds).
ORDER_TOTAL = [
    ("train",), ("train", "step"), ("train", "step", "cudaMemcpy"),
    ("train", "step", "cudaMemcpy", "[CUDA memcpy HtoD]"), ("train", "step", "cudaLaunchKernel"),
    ("train", "step", "cudaLaunchKernel", "gemm"), (NAIVE_JSON,), ("(unattributed)",),
    ("(unattributed)", "orphan"), ("cudaLaunchKernel",), ("cudaLaunchKernel", "gemm"),
]


def make_deep(test, depth, name="deep.kprof", folder=None):
    """A trace of `depth` NVTX ranges nested in one another on one thread (L0 outermost, each
    1 µs inside the one before), with a launch and its kernel in the innermost: the call tree's
    deep case (issue 23). Merged into folder (test.tmp) with the real kprof; returns its path."""
    folder = folder or test.tmp
    records = os.path.join(folder, "records-" + name)
    os.mkdir(records)
    write_deep_records(records, depth)
    out = os.path.join(folder, name)
    test.kprof("trace", "--merge", records, "-o", out, expect=0)
    return out


def write_deep_records(d, depth):
    """The record files and run.txt of make_deep's timeline, in folder d."""
    end = at(0) + 2 * depth * 1000 + 10_000
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (PID, at(0))), PID, COMMAND, at(0))
    names = [w.string("L%d" % i) for i in range(depth)]
    launch, gemm = w.string("cudaLaunchKernel"), w.string("gemm")
    b = bytearray()
    inner = at(0) + depth * 1000
    b.extend(klog.rec(klog.API, name=launch, tid=MAIN, start=inner, end=inner + 500,
                      correlation=1, domain=klog.CUDA_RUNTIME))
    b.extend(klog.rec(klog.KERNEL, name=gemm, tid=MAIN, start=inner + 600, end=inner + 900,
                      correlation=1, device=0, stream=7, grid=(8, 1, 1), block=(128, 1, 1)))
    for i in range(depth):  # a range is written when it ends: the innermost first
        j = depth - 1 - i
        b.extend(klog.rec(klog.RANGE, name=names[j], tid=MAIN, start=at(0) + j * 1000,
                          end=end - j * 1000, rid=j + 1, domain=klog.NVTX))
    w.write(bytes(b))
    w.close(end=end + 1000)
    with open(os.path.join(d, "run.txt"), "w") as f:
        f.write("kprof-trace-run 1\nstart_ns %d\nend_ns %d\nexit_status 0\ncollectors cuda\n"
                "command %s\n" % (at(0), end + 1000, COMMAND))


# Names that would move a terminal's cursor or break a line (issue 23): ESC, CR, LF, BEL and a
# byte that is not UTF-8; TEXT is how every text output shows them (as error messages do).
HOSTILE = b"ev\x1b[31mil\r\nx\xff\x07"
HOSTILE_TEXT = "ev\\x1b[31mil\\r\\nx\\xff\\x07"


def make_hostile(test, name="hostile.kprof"):
    """A trace whose command, range, call and kernel names hold HOSTILE; returns its path."""
    records = os.path.join(test.tmp, "records-" + name)
    os.mkdir(records)
    command = b"prog --arg " + HOSTILE.replace(b"\n", b"")  # run.txt: one line
    w = klog.Writer(os.path.join(records, "%d-cuda-%d.klog" % (PID, at(0))), PID, command,
                    at(0))
    s = w.string
    b = bytearray()
    b.extend(klog.rec(klog.API, name=s(b"launch" + HOSTILE), tid=MAIN, start=at(1), end=at(2),
                      correlation=1, domain=klog.CUDA_RUNTIME))
    b.extend(klog.rec(klog.KERNEL, name=s(b"kern" + HOSTILE), tid=MAIN, start=at(3), end=at(9),
                      correlation=1, device=0, stream=7, grid=(8, 1, 1), block=(128, 1, 1)))
    b.extend(klog.rec(klog.RANGE, name=s(b"range" + HOSTILE), tid=MAIN, start=at(0),
                      end=at(10), rid=1, domain=klog.NVTX))
    w.write(bytes(b))
    w.close(end=at(20))
    with open(os.path.join(records, "run.txt"), "wb") as f:
        f.write(b"kprof-trace-run 1\nstart_ns %d\nend_ns %d\nexit_status 0\ncollectors cuda\n"
                b"command %s\n" % (at(0), at(20), command))
    out = os.path.join(test.tmp, name)
    test.kprof("trace", "--merge", records, "-o", out, expect=0)
    return out


def make_backwards(test, name="backwards.kprof"):
    """A damaged trace (issue 23): of a launch and its kernel, a second launch and its kernel, a
    copy call and a range, the second kernel (starting 50 s late), the copy call and the range
    end before they start. Returns its path."""
    records = os.path.join(test.tmp, "records-" + name)
    os.mkdir(records)
    w = klog.Writer(os.path.join(records, "%d-cuda-%d.klog" % (PID, at(0))), PID, "prog", at(0))
    s = w.string
    b = bytearray()
    for corr, (ls, le, ks, ke, kname) in enumerate(((1, 2, 3, 4, "good"),
                                                     (5, 6, 50007, 7, "backwards")), 1):
        b.extend(klog.rec(klog.API, name=s("cudaLaunchKernel"), tid=MAIN, start=at(ls),
                          end=at(le), correlation=corr, domain=klog.CUDA_RUNTIME))
        b.extend(klog.rec(klog.KERNEL, name=s(kname), tid=MAIN, start=at(ks), end=at(ke),
                          correlation=corr, device=0, stream=7, grid=(8, 1, 1),
                          block=(128, 1, 1)))
    b.extend(klog.rec(klog.API, name=s("cudaMemcpy"), tid=MAIN, start=at(9), end=at(8),
                      domain=klog.CUDA_RUNTIME))
    b.extend(klog.rec(klog.RANGE, name=s("step"), tid=MAIN, start=at(10), end=at(9.5), rid=1,
                      domain=klog.NVTX))
    w.write(bytes(b))
    w.close(end=at(20))
    with open(os.path.join(records, "run.txt"), "w") as f:
        f.write("kprof-trace-run 1\nstart_ns %d\nend_ns %d\nexit_status 0\ncollectors cuda\n"
                "command prog\n" % (at(0), at(20)))
    out = os.path.join(test.tmp, name)
    test.kprof("trace", "--merge", records, "-o", out, expect=0)
    return out
