"""libkprof's CUDA surface on a CUDA GPU (issue 12): a program that profiles itself with scopes,
the in-process CUDA collector and a kernel hook (tests/programs/inproc_cuda.cu, built with nvcc
against this build's libkprof.so). Its trace's GFLOP/s and GB/s are the kernel's own arithmetic
over its device time; its kernel times agree with `kprof trace` of the same program within 2%;
kprof_benchmark's device times are consistent, hot and cold (the L2 flush measured apart, GB/s and
GFLOP/s from the work given), kprof_benchmark_compare tells 80 saxpys from 20 (SLOWER, about 4x)
and 20 from the same 20 (never FASTER or SLOWER); the capture hand-off gives Nsight Compute exactly
the region's kernels; beside another CUDA injection the collector says it is off. Skipped, with
the reason, where no CUDA device or no nvcc exists."""

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs")
BUILD = os.environ.get("KPROF_BUILD_DIR") or os.path.dirname(kptest.KPROF)
INCLUDE = os.path.join(kptest.SOURCE_DIR, "include")
STEPS = 200
N = 1 << 20  # saxpy's elements


def nvcc():
    for c in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.exists(c):
            return c
    return None


class InprocCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        compiler = nvcc()
        if not compiler:
            raise kptest.unittest.SkipTest("nvcc not found")
        cls.dir = kptest.tempfile.mkdtemp(prefix="kprof-inproc-cuda-")
        cls.app = os.path.join(cls.dir, "inproc_cuda")
        p = subprocess.run([compiler, "-O2", "-arch=" + os.environ.get("NVCC_ARCH", "sm_90"),
                            "-I", INCLUDE, "-o", cls.app,
                            os.path.join(PROGRAMS, "inproc_cuda.cu"), "-L", BUILD, "-lkprof",
                            "-Xlinker", "-rpath=" + BUILD], capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("building inproc_cuda failed:\n" + p.stderr)

    def run_app(self, *args, env=None, timeout=300):
        e = dict(os.environ, TMPDIR=self.tmp)
        e.pop("KPROF", None)  # the tests' KPROF names the binary; to libkprof it means KPROF=1
        e.update(env or {})
        return subprocess.run([self.app] + list(args), capture_output=True, text=True, env=e,
                              timeout=timeout, cwd=self.tmp)

    def kernels(self, path):
        """saxpy's device durations (ns) and the trace's flops/bytes of them."""
        db = sqlite3.connect(path)
        cols = [r[1] for r in db.execute("PRAGMA table_info(events)")]
        metric = "flops, metric_bytes" if "flops" in cols else "NULL, NULL"
        rows = db.execute("SELECT e.end_ns - e.start_ns, %s FROM events e JOIN strings s ON "
                          "s.id = e.name WHERE e.kind = 4 AND s.text LIKE 'saxpy%%'"
                          % metric).fetchall()
        db.close()
        return rows

    def test_nvtx_in_process_once(self):
        # KPROF=1 with the CUDA collector records the program's NVTX ranges and marks (the nvtx
        # collector comes with cuda), each once, as kprof trace of the same program does.
        library = os.environ.get("KPROF_SHARED_LIBRARY")
        if not library:
            self.skipTest("KPROF_SHARED_LIBRARY not set (run through ctest)")
        if os.environ.get("KPROF_SANITIZED") == "1":
            self.skipTest("a sanitized libkprof cannot be preloaded into an nvcc program here")
        app = os.path.join(self.tmp, "cuda_nvtx_app")
        p = subprocess.run([nvcc(), "-O2", "-arch=" + os.environ.get("NVCC_ARCH", "sm_90"),
                            "-o", app, os.path.join(PROGRAMS, "cuda_nvtx_app.cu")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.tmp, "nvtx.kprof")
        env = dict(os.environ, KPROF="1", KPROF_COLLECT="scopes,cuda", KPROF_OUTPUT=out,
                   LD_PRELOAD=library, TMPDIR=self.tmp)
        for k in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH"):
            env.pop(k, None)
        p = subprocess.run([app, "12"], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kprof: saved ", p.stderr)
        traced = os.path.join(self.tmp, "traced.kprof")
        self.kprof("trace", "-o", traced, "--", app, "12", expect=0)
        q = ("SELECT name, kind FROM event_view WHERE kind IN ('range', 'mark') "
             "ORDER BY start_ns, id")
        mine = sqlite3.connect(out).execute(q).fetchall()
        self.assertEqual(sorted(mine), sorted([("app", "range"), ("done", "mark")] +
                                              [("step", "range")] * 12))
        self.assertEqual(mine, sqlite3.connect(traced).execute(q).fetchall())
        kernels = sqlite3.connect(out).execute(
            "SELECT COUNT(*) FROM event_view WHERE kind = 'kernel'").fetchone()[0]
        self.assertEqual(kernels, 12)

    def test_hooked_kernels_carry_their_work(self):
        out = os.path.join(self.tmp, "p.kprof")
        p = self.run_app("profile", out, str(STEPS))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("cuda: OK: \n", p.stdout)
        rows = self.kernels(out)
        self.assertEqual(len(rows), STEPS)
        for dur, flops, nbytes in rows:
            self.assertGreater(dur, 0)
            self.assertEqual(flops, 2.0 * N)
            self.assertEqual(nbytes, 12.0 * N)
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        dev = {g["name"]: g for g in r["device"]}
        name = [n for n in dev if n.startswith("saxpy")]
        self.assertEqual(len(name), 1, list(dev))
        row = dev[name[0]]
        self.assertEqual(row["calls"], STEPS)
        device_s = sum(d for d, _, _ in rows) / 1e9
        # The kernel's own arithmetic over its device time: 2 flops and 12 bytes an element.
        self.assertAlmostEqual(row["gflop_per_s"], 2.0 * N * STEPS / device_s / 1e9,
                               delta=row["gflop_per_s"] * 1e-6)
        self.assertAlmostEqual(row["gb_per_s"], 12.0 * N * STEPS / device_s / 1e9,
                               delta=row["gb_per_s"] * 1e-6)
        # A saxpy over 4 MiB a vector runs at a real bandwidth: between 10 GB/s and the HBM's 5 TB/s.
        self.assertGreater(row["gb_per_s"], 10)
        self.assertLess(row["gb_per_s"], 5000)
        # Each step scope holds its launch; the kernels run inside the scopes' span.
        by = json.loads(self.kprof("report", out, "--by", "path", "--json", expect=0).stdout)
        paths = {"/".join(x["path"]): x["calls"] for x in by["rows"]}
        self.assertEqual(paths.get("step"), STEPS, paths)
        launched = [k for k, v in paths.items() if k.startswith("step/cudaLaunchKernel")]
        self.assertTrue(launched, paths)

    def test_in_process_times_agree_with_kprof_trace(self):
        inproc = os.path.join(self.tmp, "in.kprof")
        p = self.run_app("profile", inproc, str(STEPS))
        self.assertEqual(p.returncode, 0, p.stderr)
        traced = os.path.join(self.tmp, "traced.kprof")
        t = self.kprof("trace", "-o", traced, "--", self.app, "profile",
                       os.path.join(self.tmp, "under-trace.kprof"), str(STEPS), expect=0,
                       env={"TMPDIR": self.tmp})
        # Under kprof trace the program's own CUDA collection stands aside, and says so.
        self.assertRegex(t.stdout, r"cuda: UNAVAILABLE: kprof_start: a CUDA injection collects "
                                   r"this process's CUDA work already")
        a = statistics.median(d for d, _, _ in self.kernels(inproc))
        b = statistics.median(d for d, _, _ in self.kernels(traced))
        self.assertEqual(len(self.kernels(traced)), STEPS)
        # The program's kernel hook reaches kprof trace's CUDA collector too.
        self.assertEqual({(f, b) for _, f, b in self.kernels(traced)}, {(2.0 * N, 12.0 * N)})
        self.assertLess(abs(a - b) / b, 0.02, "in-process median %d ns, kprof trace %d ns" % (a, b))

    def bench(self, *args):
        p = self.run_app("bench", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        words = p.stdout.split()
        b = {words[i]: words[i + 1] for i in range(0, len(words), 2)}
        stop = b.pop("stop")
        b = {k: float(v) for k, v in b.items()}
        self.assertIn(stop, ("noise", "settled", "budget", "runs"))
        self.assertGreaterEqual(b["runs"], 10)
        self.assertEqual(b["kernels"], 20)
        self.assertLessEqual(b["min"], b["p50"])
        self.assertLessEqual(b["p50"], b["p90"])
        self.assertLessEqual(b["p90"], b["max"])
        self.assertLessEqual(b["lo"], b["p50"])
        self.assertLessEqual(b["p50"], b["hi"])
        self.assertLessEqual(b["busy"], b["p50"] * 1.001)  # the kernels alone, without gaps
        self.assertGreater(b["busy"], 0)
        self.assertEqual(b["samples_n"], min(b["runs"], 1000))
        self.assertEqual(b["samples_in_range"], 1)
        self.assertLessEqual(b["discarded"], b["runs"] * 10)
        return b, stop

    def test_benchmark(self):
        b, stop = self.bench()
        self.assertEqual(b["flush"], 0)
        self.assertEqual((b["gbps"], b["gflops"]), (0, 0))  # no work given
        # The noise is the interval's relative half-width, and under the noise rule within its
        # goal (0.5%). How noisy a run of 20 launches is depends on what else the host and the
        # GPU do (ctest runs GPU tests side by side), so no bound is asserted on it otherwise.
        self.assertAlmostEqual(b["noise"], (b["hi"] - b["lo"]) / 2 / b["p50"], delta=0.002)
        if stop == "noise":
            self.assertLessEqual(b["noise"], 0.005 + 1e-6, (b, stop))
        # Twenty saxpys back to back: the run is about twenty kernels' time.
        kernel = statistics.median(d for d, _, _ in self.kernels(self.profile_once()))
        self.assertLess(abs(b["busy"] - 20 * kernel) / (20 * kernel), 0.10, (b, kernel))

    def test_benchmark_cold(self):
        b, _ = self.bench("cold")
        self.assertGreater(b["flush"], 0)  # the L2 flush's own device time, not in the runs
        # GB/s and GFLOP/s are the work given over p50 (bytes per ns = GB/s).
        self.assertAlmostEqual(b["gbps"], 20 * 12.0 * N / b["p50"], delta=b["gbps"] * 1e-5)
        self.assertAlmostEqual(b["gflops"], 20 * 2.0 * N / b["p50"], delta=b["gflops"] * 1e-5)

    def test_benchmark_compare(self):
        p = self.run_app("compare")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = {}
        for line in p.stdout.splitlines():
            words = line.split()
            lines[words[0]] = {words[i]: words[i + 1] for i in range(1, len(words), 2)}
        same, four = lines["compare-same"], lines["compare-four"]
        self.assertIn(same["verdict"], ("SAME", "UNSURE"), same)
        self.assertEqual(same["a_runs"], same["b_runs"])
        self.assertEqual(four["verdict"], "SLOWER", four)
        self.assertEqual(four["reasons"], "0")
        self.assertLess(abs(float(four["ratio"]) - 4) / 4, 0.2, four)  # 80 saxpys against 20
        self.assertTrue(float(four["lo"]) <= float(four["ratio"]) <= float(four["hi"]), four)

    def test_benchmark_errors(self):
        p = self.run_app("errors")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"nothing INVALID: kprof_benchmark: run 1 \(a warm-up\) "
                                   r"launched no device work that the CUDA collector saw")

    def profile_once(self):
        out = os.path.join(self.tmp, "once.kprof")
        p = self.run_app("profile", out, "50")
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_capture_hands_the_region_to_nsight_compute(self):
        ncu = shutil.which("ncu")
        if not ncu:
            self.skipTest("ncu not found")
        rep = os.path.join(self.tmp, "cap")
        p = subprocess.run([ncu, "--clock-control", "none", "--profile-from-start", "off",
                            "--metrics", "gpu__time_duration.sum", "--csv", self.app, "capture"],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TMPDIR=self.tmp))
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertIn("captured", p.stdout)
        profiled = [line for line in p.stdout.splitlines() if "saxpy" in line and
                    "gpu__time_duration" in line]
        self.assertEqual(len(profiled), 2, p.stdout[-3000:])  # the region's two, not the first
        del rep

    def test_cuda_example(self):
        # examples/cuda_hook.cu, built as its comment says.
        exe = os.path.join(self.dir, "cuda_hook")
        p = subprocess.run([nvcc(), "-O2", "-arch=" + os.environ.get("NVCC_ARCH", "sm_90"), "-I",
                            INCLUDE, "-o", exe,
                            os.path.join(kptest.SOURCE_DIR, "examples", "cuda_hook.cu"), "-L",
                            BUILD, "-lkprof", "-Xlinker", "-rpath=" + BUILD],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.tmp, "example.kprof")
        e = dict(os.environ, TMPDIR=self.tmp)
        e.pop("KPROF", None)
        p = subprocess.run([exe, out], capture_output=True, text=True, env=e, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        row = next(g for g in r["device"] if g["name"].startswith("saxpy"))
        self.assertEqual(row["calls"], 10)
        self.assertEqual(row["flops"], 10 * 2.0 * (1 << 24))
        self.assertGreater(row["gb_per_s"], 100)


if __name__ == "__main__":
    kptest.main()
