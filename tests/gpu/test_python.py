"""The Python package on a CUDA GPU (issue 25), with the packages the GPU machine already has
(torch, triton, cupy: nothing is installed): kprof.profile(cuda=True) around torch kernels (the
kernels, their grid and block in events(), under the scope that launched them, a kernel hook's
flops), kprof.benchmark of a torch matmul (device time, interval, samples, GFLOP/s, cold),
kprof.compare of a callable with itself (never FASTER or SLOWER beyond its interval), a Triton
kernel and a CuPy one where those are installed, kprof.capture. The package is this build's
(BUILD/python, made where the build has -DKPROF_PYTHON=ON, which scripts/gpu-suite turns on where
Python's headers are); each case runs in a Python of its own. Skipped, saying why, where no CUDA
device, no torch or no such build exists."""

import json
import os
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

BUILD = os.environ.get("KPROF_BUILD_DIR") or os.path.dirname(kptest.KPROF)
PACKAGE = os.path.join(BUILD, "python")


def has(module):
    p = subprocess.run([sys.executable, "-c", "import %s" % module], capture_output=True)
    return p.returncode == 0


class PythonOnCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not os.path.exists(os.path.join(PACKAGE, "kprof", "_kprof.abi3.so")):
            raise unittest.SkipTest("the Python extension is not in this build (configure with "
                                    "-DKPROF_PYTHON=ON; needs Python's headers)")
        if not has("torch"):
            raise unittest.SkipTest("torch is not installed (the GPU tests install nothing)")
        p = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
        if p.stdout.strip() != "True":
            raise unittest.SkipTest("torch sees no CUDA device: " + p.stderr.strip()[-300:])

    def run_py(self, code, timeout=300):
        env = dict(os.environ, PYTHONPATH=PACKAGE)
        # From a file, not -c: Triton's @jit reads its function's source.
        script = os.path.join(self.tmp, "case.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        p = subprocess.run([sys.executable, script], capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def test_profile_torch(self):
        out = self.run_py("""
            import json, kprof, torch
            N = 1024
            a = torch.randn(N, N, device="cuda"); torch.cuda.synchronize()
            seen = []
            def hook(*, kernel_name, grid, threads):
                seen.append(kernel_name)
                return {"flops": 1.0}
            with kprof.profile(cuda=True) as prof:
                with kprof.scope("mm", flops=2.0 * N ** 3 * 5):
                    for _ in range(5):
                        b = a @ a
                    torch.cuda.synchronize()
            names = [e["name"] for e in prof.events() if e["kind"] == "kernel"]
            kprof.register_kernel_hook(names[0], hook)
            with kprof.profile(cuda=True) as prof2:
                b = a @ a; torch.cuda.synchronize()
            kernels = [e for e in prof.events() if e["kind"] == "kernel"]
            rows = {(r["kind"], r["path"]): r for r in prof.key_averages("call_path").rows}
            k2 = [e for e in prof2.events() if e["kind"] == "kernel"]
            print(json.dumps({"kernels": len(kernels), "grid": kernels[0]["grid"],
                              "block": kernels[0]["block"], "mm_gpu": rows[("range", "mm")]["gpu_s"],
                              "gflops": rows[("range", "mm")]["gflops_per_s"],
                              "hooked": len(seen), "hook_flops": k2[0]["flops"]}))
        """)
        self.assertEqual(out["kernels"] % 5, 0)
        self.assertGreaterEqual(out["kernels"], 5)
        self.assertTrue(all(x >= 1 for x in out["grid"]) and all(x >= 1 for x in out["block"]))
        self.assertGreater(out["mm_gpu"], 0)
        self.assertGreater(out["gflops"], 0)
        self.assertGreaterEqual(out["hooked"], 1)
        self.assertEqual(out["hook_flops"], 1.0)

    def test_benchmark_and_compare_torch(self):
        out = self.run_py("""
            import json, kprof, torch
            N = 2048
            a = torch.randn(N, N, device="cuda")
            fn = lambda: a @ a
            b = kprof.benchmark(fn, flops=2.0 * N ** 3, budget=1.0)
            cold = kprof.benchmark(fn, cache="cold", budget=1.0)
            c = kprof.compare(fn, fn, budget=1.0)
            print(json.dumps({"p50": b.p50_ns, "lo": b.lo_ns, "hi": b.hi_ns, "runs": b.runs,
                              "samples": len(b.samples), "gflops": b.gflops, "stop": b.stop,
                              "kernels": b.kernels, "summary": b.summary(),
                              "cold_flush": cold.flush_ns, "cold_p50": cold.p50_ns,
                              "verdict": c.verdict, "ci": list(c.ci), "ratio": c.ratio}))
        """)
        self.assertGreaterEqual(out["kernels"], 1)
        self.assertTrue(out["lo"] <= out["p50"] <= out["hi"], out)
        self.assertEqual(out["samples"], out["runs"])
        self.assertGreater(out["gflops"], 0)
        self.assertIn(out["stop"], ("noise", "settled", "budget", "runs"))
        self.assertIn("GFLOP/s", out["summary"])
        self.assertGreater(out["cold_flush"], 0)
        self.assertGreater(out["cold_p50"], 0)
        self.assertIn(out["verdict"], ("SAME", "UNSURE"))
        self.assertTrue(out["ci"][0] <= out["ratio"] <= out["ci"][1])

    def test_triton(self):
        if not has("triton"):
            self.skipTest("triton is not installed")
        out = self.run_py("""
            import json, kprof, torch, triton, triton.language as tl
            @triton.jit
            def add(x, y, out, n, BLOCK: tl.constexpr):
                i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                m = i < n
                tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
            n = 1 << 20
            x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda")
            o = torch.empty_like(x)
            run = lambda: add[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
            run(); torch.cuda.synchronize()
            with kprof.profile(cuda=True) as prof:
                run(); torch.cuda.synchronize()
            b = kprof.benchmark(run, bytes=12.0 * n)
            names = [e["name"] for e in prof.events() if e["kind"] == "kernel"]
            print(json.dumps({"names": names, "p50": b.p50_ns, "gbps": b.gbps}))
        """)
        self.assertTrue(any("add" in n for n in out["names"]), out["names"])
        self.assertGreater(out["p50"], 0)
        self.assertGreater(out["gbps"], 0)

    def test_cupy(self):
        if not has("cupy"):
            self.skipTest("cupy is not installed")
        out = self.run_py("""
            import json, kprof, cupy
            x = cupy.ones(1 << 20, dtype=cupy.float32)
            b = kprof.benchmark(lambda: x * 2)
            print(json.dumps({"p50": b.p50_ns, "kernels": b.kernels}))
        """)
        self.assertGreater(out["p50"], 0)
        self.assertGreaterEqual(out["kernels"], 1)

    def test_capture(self):
        out = self.run_py("""
            import json, kprof, torch
            a = torch.ones(16, device="cuda"); torch.cuda.synchronize()
            with kprof.capture("region"):
                a.add_(1); torch.cuda.synchronize()
            try:
                with kprof.capture("outer"):
                    with kprof.capture("inner"):
                        pass
                nested = None
            except kprof.InvalidError as e:
                nested = str(e)
            print(json.dumps({"nested": nested}))
        """)
        self.assertIn("do not nest", out["nested"])


if __name__ == "__main__":
    kptest.main()
