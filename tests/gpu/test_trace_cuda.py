"""kprof trace on a CUDA GPU: a real CUDA program (static and shared cudart), its NVTX ranges
(recorded by kprof's own NVTX collector, as everywhere, on the clock CUPTI's records are mapped
onto), fork and crash, a PyTorch program, and another profiler holding CUPTI. Skipped, with the
reason, where no CUDA device or no nvcc exists."""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs")


class TraceCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bin = os.path.join(kptest.tempfile.mkdtemp(prefix="kprof-cuda-app-"), "bin")
        p = subprocess.run(["sh", os.path.join(PROGRAMS, "build_cuda_app.sh"), cls.bin],
                           capture_output=True, text=True)
        if p.returncode == 77:
            raise kptest.unittest.SkipTest(p.stderr.strip())
        if p.returncode != 0:
            raise AssertionError("building cuda_app failed:\n" + p.stderr)
        cls.app = os.path.join(cls.bin, "cuda_app")

    def trace(self, *cmd, expect=0, name="t.kprof", timeout=300, opts=()):
        out = os.path.join(self.tmp, name)
        p = self.kprof("trace", "-o", out, *opts, "--", *cmd, expect=expect, timeout=timeout)
        return out, p

    def report(self, path):
        return json.loads(self.kprof("report", path, "--json", expect=0).stdout)

    def test_cuda_program(self):
        path, p = self.trace(self.app, "500")
        self.assertIn("cuda_app: ok", p.stdout)
        r = self.report(path)
        dev = {g["name"]: g for g in r["device"]}
        self.assertEqual(dev["kp_plain_add"]["calls"], 500)
        scale = [n for n in dev if n.startswith("void kp_scale<float, 2>")]
        self.assertEqual(len(scale), 1, list(dev))  # demangled
        self.assertEqual(dev[scale[0]]["calls"], 500)
        self.assertTrue(any("memcpy" in n for n in dev), list(dev))
        self.assertTrue(any("memset" in n for n in dev), list(dev))
        host = {g["name"] for g in r["host"]}
        self.assertIn("cudaLaunchKernel", host)
        self.assertIn("cudaDeviceSynchronize", host)
        self.assertFalse([n for n in host if n.endswith("_v2")], host)
        nvtx = {g["name"]: g for g in r["nvtx"]}
        self.assertEqual(nvtx["outer"]["calls"], 1)
        self.assertEqual(nvtx["inner"]["calls"], 50)
        self.assertEqual(nvtx["setup"]["calls"], 1)  # opened before the first CUDA call
        self.assertEqual(r["dropped"], 0)
        # A clean run is complete: every launch, copy and fill call has its device work (CUPTI
        # records no driver calls of the runtime's own), every device operation its call.
        self.assertEqual(r["completeness"], {"records_dropped": 0, "device_ops_without_call": 0,
                                             "calls_without_device_work": 0,
                                             "processes_not_closed": 0})
        # Device times lie inside the run, on the same clock as the host calls.
        import sqlite3
        db = sqlite3.connect(path)
        lo, hi = db.execute("SELECT value FROM meta WHERE key='start_ns'").fetchone()[0], \
            db.execute("SELECT value FROM meta WHERE key='end_ns'").fetchone()[0]
        k = db.execute("SELECT MIN(start_ns), MAX(end_ns) FROM events WHERE kind = 4").fetchone()
        self.assertGreaterEqual(k[0], int(lo))
        self.assertLessEqual(k[1], int(hi))
        # Each launch precedes its kernel.
        bad = db.execute("SELECT COUNT(*) FROM events a JOIN events k ON k.process = a.process AND "
                         "k.correlation = a.correlation WHERE a.kind = 3 AND k.kind = 4 AND "
                         "k.start_ns < a.start_ns").fetchone()[0]
        self.assertEqual(bad, 0)
        # NVTX ranges come from kprof's own NVTX collector, CUDA records from CUPTI mapped onto
        # kprof's clock: one clock and one thread numbering. Each "inner" range holds the two
        # launches made inside it, on its own thread; "outer" holds every kernel (the program
        # synchronizes before it pops "outer").
        named = ("SELECT e.tid, e.start_ns, e.end_ns FROM events e JOIN strings s ON s.id = e.name "
                 "WHERE e.kind = ? AND s.text = ?")
        launches = db.execute(named, (3, "cudaLaunchKernel")).fetchall()
        for tid, start, end in db.execute(named, (8, "inner")).fetchall():
            held = [a for a in launches if a[0] == tid and start <= a[1] and a[2] <= end]
            self.assertEqual(len(held), 2, (tid, start, end))
        (outer,) = db.execute(named, (8, "outer")).fetchall()
        self.assertLessEqual(outer[1], k[0])
        self.assertLessEqual(k[1], outer[2])
        # Queue times only on request (--queue-times, below).
        n = db.execute("SELECT COUNT(*) FROM events WHERE kind = 4 AND queued_ns IS NOT NULL")
        self.assertEqual(n.fetchone()[0], 0)
        # CUPTI says each kernel's registers; launch latency from each call to its kernel.
        n = db.execute("SELECT COUNT(*) FROM events WHERE kind = 4 AND registers IS NULL")
        self.assertEqual(n.fetchone()[0], 0)
        lat = r["launch_latency"]
        self.assertNotIn("queued_to_start", lat)
        self.assertGreaterEqual(lat["launch_to_start"]["count"], 1000)
        self.assertGreater(lat["launch_to_start"]["median_s"], 0)
        self.assertIn("cuda", r["verdict"]["api"])
        out = os.path.join(self.tmp, "t.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        ev = json.load(open(out))["traceEvents"]
        self.assertEqual(sum(1 for e in ev if e.get("flow_in") and e.get("cat") == "kernel"), 1000)
        text = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertIn("Regs", text)

    def test_queue_times(self):
        path, p = self.trace(self.app, "200", opts=("--queue-times",))
        self.assertIn("kernels ran one at a time", p.stderr)
        import sqlite3
        db = sqlite3.connect(path)
        rows = db.execute("SELECT queued_ns, submitted_ns, start_ns FROM events "
                          "WHERE kind = 4").fetchall()
        self.assertEqual(len(rows), 400)
        self.assertEqual(self.report(path)["launch_latency"]["queued_to_start"]["count"], 400)
        for queued, submitted, start in rows:
            # Serialized kernel records carry the queue time; the submit time only where CUPTI
            # gives one (its concurrent records do, its serialized ones may not).
            self.assertIsNotNone(queued)
            self.assertLessEqual(queued, start)
            if submitted is not None:
                self.assertLessEqual(queued, submitted)
                self.assertLessEqual(submitted, start)

    def test_many_launches(self):
        # 200k back-to-back launches: the collector keeps up and the program ends, with queue
        # times too (taken with concurrent kernel records, CUPTI 13.0 deadlocked here).
        exe = os.path.join(self.tmp, "overhead")
        src = os.path.join(PROGRAMS, "..", "..", "bench", "programs", "overhead.cu")
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", exe, src], check=True)
        for opts in ((), ("--queue-times",)):
            with self.subTest(opts=opts):
                path, p = self.trace(exe, "launch", "200000", timeout=120, opts=opts,
                                     name="many%d.kprof" % len(opts))
                self.assertIn("0 records dropped", p.stderr)
                r = self.report(path)
                # The wall holds the CUDA context's start-up, which depends on the machine;
                # the active window (first to last kernel) is the launches alone.
                active = r["verdict"]["active"]
                if not opts:
                    self.assertEqual(active["kind"], "launch-bound", active)
                    self.assertIn("cuda-graphs", active["advice"])
                else:
                    # Serialized kernel records stretch each tiny kernel (H200, 2026-11-30: the
                    # active window came out "mixed"): the GPU looks busy half the time or more.
                    self.assertIn(active["kind"], ("launch-bound", "mixed"), active)
                    self.assertLess(active["gpu_busy_fraction"], 0.8, active)
                kernels = {g["name"]: g["calls"] for g in r["device"]}
                self.assertEqual(kernels["tiny(float*)"], 200001)

    def test_shared_cudart(self):
        exe = os.path.join(self.tmp, "cuda_app_shared")
        p = subprocess.run(["nvcc", "-arch=sm_90", "-cudart", "shared", "-o", exe,
                            os.path.join(PROGRAMS, "cuda_app.cu")], capture_output=True, text=True)
        if p.returncode != 0:
            self.fail("nvcc -cudart shared failed: " + p.stderr)
        path, _ = self.trace(exe, "100")
        r = self.report(path)
        self.assertEqual({g["name"]: g["calls"] for g in r["device"]}["kp_plain_add"], 100)

    def test_fork_does_not_hang(self):
        path, p = self.trace(self.app, "100", "fork", timeout=120)
        self.assertIn("cuda_app: ok", p.stdout)
        r = self.report(path)
        self.assertEqual({g["name"]: g["calls"] for g in r["device"]}["kp_plain_add"], 100)

    def test_crash_keeps_what_came_before(self):
        path, p = self.trace(self.app, "200", "crash", expect=128 + 11, timeout=120)
        self.assertIn("ended without closing its record", p.stderr)
        r = self.report(path)
        dev = {g["name"]: g["calls"] for g in r["device"]}
        self.assertGreaterEqual(dev.get("kp_plain_add", 0), 100)

    def test_python_pytorch(self):
        code = ("import torch\n"
                "torch.cuda.nvtx.range_push('before-cuda')\n"
                "x = torch.ones(1 << 20, device='cuda')\n"
                "torch.cuda.nvtx.range_pop()\n"
                "for _ in range(200): x.add_(1)\n"
                "torch.cuda.synchronize()\n"
                "print('sum', float(x.sum()))\n")
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch in this python")
        path, p = self.trace(sys.executable, "-c", code, timeout=300)
        self.assertIn("sum 21", p.stdout.replace(".0", ""))
        r = self.report(path)
        self.assertGreaterEqual(r["verdict"]["kernels"], 200)
        self.assertIn("before-cuda", {g["name"] for g in r["nvtx"]})

    def test_another_profiler(self):
        ncu = shutil.which("ncu")
        if not ncu:
            self.skipTest("no ncu on this machine")
        out = os.path.join(self.tmp, "under-ncu.kprof")
        p = subprocess.run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
                            kptest.KPROF, "trace", "-o", out, "--", self.app, "5"],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, **{k: v for k, v in self.env.items() if v}))
        said = p.stdout + p.stderr
        self.assertTrue("another profiler" in said or "another CUPTI subscriber" in said, said[-3000:])


if __name__ == "__main__":
    kptest.main()
