"""Golden tests: every `kprof report` mode and the Chrome export of one synthetic trace, pinned
byte for byte against the files in tests/golden/, so a refactor of the reports, the exports or
the trace's store shows at once whether it changed what users see.

The trace is made without any live program: the record files of three processes are written
with klog.py (fixed pids, tids, timestamps and names) into a folder with a run.txt, and merged
with `kprof trace --merge DIR -o golden.kprof`. So nothing the machine does (its speed, its load,
its clock) enters the outputs. The timeline, 1 s after boot, 100 ms long:

  pid 4242 (cuda, threads 4242 and 4250, ends cleanly): cudaMalloc; an HtoD copy; NVTX ranges
    train > step > forward nested, a second step; four runtime launches of a demangled kernel
    with full geometry (two with queue times); cudaGetLastError polls (hidden unless --raw); a
    3-D kernel; three driver launches of a kernel with no register count; a fill; a kernel and a
    peer copy on device 1 from the second thread; a kernel whose launching call was not
    recorded; a launch whose kernel never arrived; a failed call; a sync call with its sync
    record; a DtoH copy; a mark; a CUPTI overhead record; 3 dropped records; a note.
  pid 4300 (opencl, child of 4242, no end record: it did not exit cleanly): a write, a long
    clBuildProgram, an NVTX range around kernels with and without a local size (1-D and 2-D),
    a fill, clFinish, a read, polls.
  pid 4301 (nvtx only, two threads): nested ranges, a range with non-ASCII text and one with a
    quote and a comma in its name, marks.

Pinned: `kprof report` (text, NO_COLOR), `--raw`, `--trace`, `--json`, `--trace --json`,
`--csv`, `kprof export --chrome`; the call tree and key averages (`report --tree`, `--by name`,
`--by path` with --sort, --top, --depth and --raw, as text, JSON and CSV) and
`kprof export --hatchet`. What legitimately varies is fixed by how the test runs, not
masked: kprof runs in the scratch folder and is given the trace as `golden.kprof` (the path
`report --json` prints), and the one value that changes with every release, kprof's version in
the Chrome export's producer, is replaced (exactly that string, found by `kprof --version`) with
@KPROF_VERSION@.

Regenerate the expected files after an intended change of output:

    KPROF_GOLDEN_UPDATE=1 KPROF=build/kprof python3 tests/cli/test_golden.py

(or `KPROF_GOLDEN_UPDATE=1 ctest -R cli.golden` in the build folder), then read the diff of
tests/golden/ before committing it: every changed line is a change users will see.
"""

import difflib
import os
import shutil
import sqlite3
import subprocess
import sys

import kptest
import klog

GOLDEN = os.path.join(kptest.SOURCE_DIR, "tests", "golden")
UPDATE = os.environ.get("KPROF_GOLDEN_UPDATE") == "1"

T0 = 1_000_000_000  # the run's start: CLOCK_MONOTONIC ns
US = 1000

HTOD, DTOH, PEER = klog.HTOD, klog.DTOH, klog.PEER
CUDA_RT, CUDA_DRV, OPENCL, NVTX = klog.CUDA_RUNTIME, klog.CUDA_DRIVER, klog.OPENCL, klog.NVTX


def at(us):
    """A time us microseconds after the run's start."""
    return T0 + int(us * US)


def cuda_process(d):
    pid, main, worker = 4242, 4242, 4250
    w = klog.Writer(os.path.join(d, "%d-cuda-%d.klog" % (pid, at(1))), pid,
                    "python train.py --epochs 1", at(1), ppid=4200)
    s = w.string
    b = bytearray()

    def api(name, start, end, corr=0, tid=main, domain=CUDA_RT, status=0):
        b.extend(klog.rec(klog.API, name=s(name), tid=tid, start=at(start), end=at(end),
                          correlation=corr, domain=domain, status=status))

    api("cudaMalloc", 100, 310, corr=1)
    api("cudaMemcpy", 400, 520, corr=2)
    b.extend(klog.rec(klog.MEMCPY, name=s("[CUDA memcpy HtoD]"), tid=main, start=at(410),
                      end=at(500), correlation=2, nbytes=1 << 20, aux=HTOD, device=0, stream=7))
    # NVTX: train > step > forward, then a second step (recorded as they end, inner first).
    b.extend(klog.rec(klog.RANGE, name=s("forward"), tid=main, start=at(2500), end=at(10000),
                      rid=3, domain=NVTX))
    b.extend(klog.rec(klog.RANGE, name=s("step"), tid=main, start=at(2000), end=at(20000), rid=2,
                      domain=NVTX))
    # Four runtime launches of one kernel with all its geometry; two with queue times.
    matmul = s("_Z6matmulPKfS0_Pfi")
    for i in range(4):
        t = 3000 + i * 1000
        api("cudaLaunchKernel", t, t + 30, corr=10 + i)
        api("cudaGetLastError", t + 30, t + 31)
        b.extend(klog.rec(klog.KERNEL, name=matmul, tid=main, start=at(t + 50),
                          end=at(t + 250 + 10 * i), correlation=10 + i, device=0, stream=7,
                          grid=(64, 32, 1), block=(16, 16, 1), registers=40, static_smem=8192,
                          dynamic_smem=4096, local_mem=0,
                          queued=at(t + 5) if i < 2 else 0))
    api("cudaLaunchKernel", 8000, 8025, corr=14)
    b.extend(klog.rec(klog.KERNEL, name=s("conv3d"), tid=main, start=at(8040), end=at(9540),
                      correlation=14, device=0, stream=7, grid=(8, 8, 4), block=(8, 8, 2),
                      registers=64, static_smem=0, dynamic_smem=16384, local_mem=32))
    b.extend(klog.rec(klog.RANGE, name=s("step"), tid=main, start=at(22000), end=at(40000),
                      rid=4, domain=NVTX))
    # Driver launches of a kernel CUPTI gave no register count for, on another stream.
    for i in range(3):
        t = 23000 + i * 500
        api("cuLaunchKernel", t, t + 12, corr=20 + i, domain=CUDA_DRV)
        b.extend(klog.rec(klog.KERNEL, name=s("relu_kernel"), tid=main, start=at(t + 20),
                          end=at(t + 80), correlation=20 + i, device=0, stream=13,
                          grid=(1024, 1, 1), block=(256, 1, 1), registers=0, local_mem=16))
    api("cudaMemsetAsync", 41000, 41011, corr=30)
    b.extend(klog.rec(klog.MEMSET, name=s("[CUDA memset]"), tid=main, start=at(41020),
                      end=at(41105), correlation=30, nbytes=4096, device=0, stream=13))
    # The second thread works on device 1: a kernel and a peer copy.
    api("cudaLaunchKernel", 45000, 45025, corr=31, tid=worker)
    b.extend(klog.rec(klog.KERNEL, name=s("peer_reduce"), tid=worker, start=at(45030),
                      end=at(45930), correlation=31, device=1, stream=3, grid=(128, 1, 1),
                      block=(512, 1, 1), registers=24, static_smem=2048))
    api("cudaMemcpyPeerAsync", 46000, 46008, corr=32, tid=worker)
    b.extend(klog.rec(klog.MEMCPY, name=s("[CUDA memcpy PtoP]"), tid=worker, start=at(46010),
                      end=at(46410), correlation=32, nbytes=8 << 20, aux=PEER, device=1,
                      stream=3))
    # A kernel whose launching call was not recorded, a launch whose kernel never arrived,
    # a call that failed.
    b.extend(klog.rec(klog.KERNEL, name=s("orphan_kernel"), tid=main, start=at(47000),
                      end=at(47110), correlation=99, device=0, stream=7, grid=(1, 1, 1),
                      block=(32, 1, 1), registers=8))
    api("cudaLaunchKernel", 48000, 48020, corr=40)
    api("cudaFree", 48100, 48150, corr=43, status=1)
    # The host waits: the call and CUPTI's synchronization record.
    api("cudaDeviceSynchronize", 50000, 58000, corr=41)
    b.extend(klog.rec(klog.SYNC, name=s("[sync: context]"), tid=main, start=at(50010),
                      end=at(57990), correlation=41, device=0xFFFFFFFF, stream=0xFFFFFFFF))
    api("cudaMemcpy", 58100, 58400, corr=42)
    b.extend(klog.rec(klog.MEMCPY, name=s("[CUDA memcpy DtoH]"), tid=main, start=at(58150),
                      end=at(58350), correlation=42, nbytes=1 << 20, aux=DTOH, device=0,
                      stream=7))
    b.extend(klog.rec(klog.MARK, name=s("checkpoint"), tid=main, start=at(59000), end=at(59000),
                      rid=5, domain=NVTX))
    b.extend(klog.rec(klog.OVERHEAD, name=s("[CUPTI overhead: buffer flush]"), tid=main,
                      start=at(59500), end=at(59600), aux=1))
    b.extend(klog.rec(klog.RANGE, name=s("train"), tid=main, start=at(1000), end=at(60000),
                      rid=1, domain=NVTX))
    b.extend(klog.rec(klog.DROPPED, start=at(60000), nbytes=3))
    b.extend(klog.rec(klog.NOTE, name=s("another profiler held CUPTI for 2 ms"), start=at(100)))
    w.write(bytes(b))
    w.close(end=at(60500))


def opencl_process(d):
    pid = 4300
    w = klog.Writer(os.path.join(d, "%d-opencl-%d.klog" % (pid, at(5000))), pid,
                    "ocl_worker --device 0", at(5000), ppid=4242)
    s = w.string
    b = bytearray()

    def api(name, start, end, corr=0, status=0):
        b.extend(klog.rec(klog.API, name=s(name), tid=pid, start=at(start), end=at(end),
                          correlation=corr, domain=OPENCL, status=status))

    def op(kind, name, start, end, corr, **kw):
        b.extend(klog.rec(kind, name=s(name), tid=pid, start=at(start), end=at(end),
                          correlation=corr, domain=OPENCL, stream=1, **kw))

    api("clEnqueueWriteBuffer", 6100, 6120, corr=1)
    op(klog.MEMCPY, "[OpenCL write]", 6130, 6160, 1, nbytes=65536, aux=HTOD, queued=at(6105),
       submitted=at(6125))
    api("clBuildProgram", 7000, 15500)
    api("clGetProgramBuildInfo", 15500, 15502)
    # No local size: grid holds the work-items, block is 0.
    api("clEnqueueNDRangeKernel", 16100, 16112, corr=2)
    op(klog.KERNEL, "scale", 16120, 16140, 2, grid=(4096, 1, 1), block=(0, 0, 0),
       queued=at(16102), submitted=at(16115))
    api("clEnqueueNDRangeKernel", 16200, 16212, corr=3)
    op(klog.KERNEL, "scale", 16220, 16242, 3, grid=(16, 1, 1), block=(256, 1, 1),
       queued=at(16202), submitted=at(16216))
    api("clEnqueueNDRangeKernel", 16300, 16311, corr=4)
    op(klog.KERNEL, "blur2d", 16320, 16420, 4, grid=(512, 512, 1), block=(0, 0, 0),
       queued=at(16301), submitted=at(16318))
    api("clEnqueueNDRangeKernel", 16430, 16432, corr=5, status=-54)
    api("clEnqueueFillBuffer", 16440, 16450, corr=6)
    op(klog.MEMSET, "[OpenCL fill]", 16455, 16470, 6, nbytes=1024, queued=at(16441),
       submitted=at(16452))
    api("clGetEventInfo", 16480, 16481)
    api("clFinish", 16500, 16900)
    b.extend(klog.rec(klog.RANGE, name=s("burst"), tid=pid, start=at(16000), end=at(17000),
                      rid=1, domain=NVTX))
    api("clEnqueueReadBuffer", 17100, 17300, corr=7)
    op(klog.MEMCPY, "[OpenCL read]", 17200, 17280, 7, nbytes=65536, aux=DTOH, queued=at(17101),
       submitted=at(17190))
    w.write(bytes(b))
    w.close()  # no end record: the process did not exit cleanly


def nvtx_process(d):
    pid = 4301
    w = klog.Writer(os.path.join(d, "%d-nvtx-%d.klog" % (pid, at(10000))), pid,
                    "nvtx_only_tool", at(10000), ppid=4242)
    s = w.string
    b = bytearray()

    def rng(name, tid, start, end, rid):
        b.extend(klog.rec(klog.RANGE, name=s(name), tid=tid, start=at(start), end=at(end),
                          rid=rid, domain=NVTX))

    b.extend(klog.rec(klog.MARK, name=s("epoch-begin"), tid=4302, start=at(10001),
                      end=at(10001), rid=1, domain=NVTX))
    rng("parse", 4301, 11000, 12000, 3)
    rng("parse", 4301, 13000, 15000, 4)
    rng("étape ✓", 4301, 16050, 18050, 5)
    rng("load", 4301, 10000, 30000, 2)
    rng('fetch "shard", 3', 4302, 10500, 25000, 6)
    b.extend(klog.rec(klog.MARK, name=s("epoch-end"), tid=4302, start=at(31000), end=at(31000),
                      rid=7, domain=NVTX))
    w.write(bytes(b))
    w.close(end=at(32000))


RUN_TXT = """kprof-trace-run 1
start_ns %d
end_ns %d
exit_status 0
collectors cuda,opencl
command python train.py --epochs 1
""" % (T0, at(100000))

# (golden file, kprof arguments; the trace is golden.kprof in the working folder)
CASES = [
    ("report.txt", ["report", "golden.kprof"]),
    ("report-raw.txt", ["report", "golden.kprof", "--raw"]),
    ("report-trace.txt", ["report", "golden.kprof", "--trace"]),
    ("report.json", ["report", "golden.kprof", "--json"]),
    ("report-trace.json", ["report", "golden.kprof", "--trace", "--json"]),
    ("report.csv", ["report", "golden.kprof", "--csv"]),
    ("chrome.json", ["export", "golden.kprof", "--chrome", "-"]),
    # The call tree and key averages (issue 11).
    ("report-tree.txt", ["report", "golden.kprof", "--tree"]),
    ("report-tree.json", ["report", "golden.kprof", "--tree", "--json"]),
    ("report-tree.csv", ["report", "golden.kprof", "--tree", "--csv"]),
    ("report-tree-raw-gpu-top.txt", ["report", "golden.kprof", "--tree", "--raw", "--sort", "gpu",
                                     "--top", "2", "--depth", "3"]),
    ("report-by-name.txt", ["report", "golden.kprof", "--by", "name"]),
    ("report-by-name-calls.json", ["report", "golden.kprof", "--by", "name", "--sort", "calls",
                                   "--top", "5", "--json"]),
    ("report-by-path-self.txt", ["report", "golden.kprof", "--by", "path", "--sort", "self"]),
    ("report-by-path.csv", ["report", "golden.kprof", "--by", "path", "--csv"]),
    ("hatchet.json", ["export", "golden.kprof", "--hatchet", "-"]),
]


class Golden(kptest.KprofTestCase):
    needs_opencl = False

    def setUp(self):
        super().setUp()
        self.env["NO_COLOR"] = "1"
        records = os.path.join(self.tmp, "records")
        os.mkdir(records)
        cuda_process(records)
        opencl_process(records)
        nvtx_process(records)
        with open(os.path.join(records, "run.txt"), "w") as f:
            f.write(RUN_TXT)
        self.kprof("trace", "--merge", "records", "-o", "golden.kprof", expect=0)
        version = self.kprof("--version", expect=0).stdout.split()
        self.version = version[-1]

    def output(self, args):
        """kprof's stdout as bytes (no decoding that a locale could change)."""
        env = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        p = subprocess.run([kptest.KPROF] + args, cwd=self.tmp, env=env, capture_output=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, "kprof %s exited %d:\n%s"
                         % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
        out = p.stdout
        producer = b'"producer":"kprof %s"' % self.version.encode()
        if args[0] == "export" and "--chrome" in args:
            self.assertIn(producer, out)
            out = out.replace(producer, b'"producer":"kprof @KPROF_VERSION@"')
        return out

    def test_the_trace_is_what_the_records_say(self):
        # The synthetic trace is as designed: these counts are read from the trace file, so a
        # golden mismatch below is the reports' change, not the merge's.
        db = sqlite3.connect(os.path.join(self.tmp, "golden.kprof"))
        kinds = dict(db.execute("SELECT name, id FROM kinds"))
        self.assertEqual(kinds, {"api": klog.API, "kernel": klog.KERNEL, "memcpy": klog.MEMCPY,
                                 "memset": klog.MEMSET, "sync": klog.SYNC, "range": klog.RANGE,
                                 "mark": klog.MARK, "overhead": klog.OVERHEAD})
        domains = dict(db.execute("SELECT name, id FROM domains"))
        self.assertEqual(domains, {"": klog.DOMAIN_NONE, "cuda_runtime": klog.CUDA_RUNTIME,
                                   "cuda_driver": klog.CUDA_DRIVER, "opencl": klog.OPENCL,
                                   "nvtx": klog.NVTX, "scope": klog.SCOPE})
        rows = dict(db.execute("SELECT k.name, COUNT(*) FROM events e JOIN kinds k ON "
                               "k.id = e.kind GROUP BY k.name"))
        self.assertEqual(rows, {"api": 32, "kernel": 13, "memcpy": 5, "memset": 2, "sync": 1,
                                "range": 10, "mark": 3, "overhead": 1})
        procs = db.execute("SELECT pid, ppid, collector, clean_exit, dropped FROM processes "
                           "ORDER BY pid").fetchall()
        self.assertEqual(procs, [(4242, 4200, "cuda", 1, 3), (4300, 4242, "opencl", 0, 0),
                                 (4301, 4242, "nvtx", 1, 0)])
        # One order only: no two events start at the same time (ORDER BY start_ns has no ties
        # to break) and no two names of a table share a total (the tables sort by total).
        self.assertEqual(db.execute("SELECT start_ns FROM events GROUP BY start_ns "
                                    "HAVING COUNT(*) > 1").fetchall(), [])
        for kinds in ("3", "4, 5, 6", "8"):
            totals = db.execute("SELECT SUM(end_ns - start_ns) AS t FROM events WHERE kind IN "
                                "(%s) GROUP BY name" % kinds).fetchall()
            self.assertEqual(len(totals), len(set(totals)), "tied totals of kinds " + kinds)
        db.close()

    def test_outputs_match_the_golden_files(self):
        if UPDATE:
            os.makedirs(GOLDEN, exist_ok=True)
        failures = []
        for name, args in CASES:
            got = self.output(args)
            path = os.path.join(GOLDEN, name)
            if UPDATE:
                with open(path, "wb") as f:
                    f.write(got)
                continue
            if not os.path.exists(path):
                failures.append("%s: no golden file (KPROF_GOLDEN_UPDATE=1 makes it)" % name)
                continue
            with open(path, "rb") as f:
                want = f.read()
            if got != want:
                lines = lambda b: b.decode("utf-8", "backslashreplace").splitlines(True)
                diff = difflib.unified_diff(lines(want), lines(got), "tests/golden/" + name,
                                            "kprof " + " ".join(args))
                failures.append("".join(list(diff)[:80]))
        if UPDATE:
            print("golden files written to %s" % GOLDEN, file=sys.stderr)
        self.assertFalse(failures, "outputs differ from tests/golden/ (KPROF_GOLDEN_UPDATE=1 "
                         "regenerates them; see this file's docstring):\n" + "\n".join(failures))

    def test_a_version_1_trace_reads_as_before(self):
        # tests/data/trace-v1.kprof was written by kprof with trace format 1 (events in file
        # order, a `launched` column, three indexes; gen_trace.py host-bound: NVTX steps, six
        # kernels), and the v1 golden files are that kprof's own outputs of it. Format 2 readers
        # must give the same bytes.
        shutil.copy(os.path.join(kptest.SOURCE_DIR, "tests", "data", "trace-v1.kprof"),
                    os.path.join(self.tmp, "v1.kprof"))
        db = sqlite3.connect(os.path.join(self.tmp, "v1.kprof"))
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 1)
        db.close()
        failures = []
        for name, args in (("report-v1.txt", ["report", "v1.kprof"]),
                           ("report-v1.json", ["report", "v1.kprof", "--json"]),
                           ("report-v1.csv", ["report", "v1.kprof", "--csv"]),
                           ("chrome-v1.json", ["export", "v1.kprof", "--chrome", "-"])):
            with open(os.path.join(GOLDEN, name), "rb") as f:
                want = f.read()
            got = self.output(args)
            if got != want:
                lines = lambda b: b.decode("utf-8", "backslashreplace").splitlines(True)
                failures.append("".join(list(difflib.unified_diff(
                    lines(want), lines(got), "tests/golden/" + name, "kprof " + " ".join(args)))[:60]))
        self.assertFalse(failures, "a version 1 trace reads differently:\n" + "\n".join(failures))

    def test_a_job_trace_reads_as_before(self):
        # tests/data/trace-job.kprof and trace-job-hosts.kprof were recorded once from
        # gen_trace.py's 'job' (two ranks with NVTX steps; three ranks on hosts a and b, steps by
        # collective), so their pids, hosts and times are fixed: the job's tables (ranks,
        # devices, collectives, stragglers) pinned in every output form.
        failures = []
        for trace in ("trace-job", "trace-job-hosts"):
            shutil.copy(os.path.join(kptest.SOURCE_DIR, "tests", "data", trace + ".kprof"),
                        os.path.join(self.tmp, trace + ".kprof"))
            name = "report-" + trace[len("trace-"):]
            path = trace + ".kprof"
            for golden, args in ((name + ".txt", ["report", path]),
                                 (name + "-raw.txt", ["report", path, "--raw"]),
                                 (name + ".json", ["report", path, "--json"]),
                                 (name + ".csv", ["report", path, "--csv"]),
                                 (name + "-trace.txt", ["report", path, "--trace"]),
                                 (name + "-trace.json", ["report", path, "--trace", "--json"]),
                                 (name + "-by-name.txt", ["report", path, "--by", "name"])):
                got = self.output(args)
                gpath = os.path.join(GOLDEN, golden)
                if UPDATE:
                    with open(gpath, "wb") as f:
                        f.write(got)
                    continue
                with open(gpath, "rb") as f:
                    want = f.read()
                if got != want:
                    lines = lambda b: b.decode("utf-8", "backslashreplace").splitlines(True)
                    failures.append("".join(list(difflib.unified_diff(
                        lines(want), lines(got), "tests/golden/" + golden,
                        "kprof " + " ".join(args)))[:60]))
        self.assertFalse(failures, "a job's report reads differently:\n" + "\n".join(failures))

    def test_other_versions_are_refused_by_number(self):
        path = os.path.join(self.tmp, "v9.kprof")
        shutil.copy(os.path.join(kptest.SOURCE_DIR, "tests", "data", "trace-v1.kprof"), path)
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 9")
        db.commit()
        db.close()
        p = self.kprof("report", path, expect=2)
        self.assertIn("is a kprof trace of format 9; this kprof reads formats 1 to 3 (a newer "
                      "kprof wrote it)", p.stderr)


if __name__ == "__main__":
    kptest.main()
