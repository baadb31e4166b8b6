"""kprof run/bench NAME@N on a CUDA GPU: captured launches (collect/capture.h) built here from a
module kprof compiled itself (NVRTC, kept by KPROF_DUMP_DIR), replayed in the lab: a kernel
taking a struct of two pointers by value (the replay relocates both words inside it) and one
taking a pointer into the middle of an allocation (relocated with its offset). The after-states
are exact in float32. Skipped, with the reason, where no CUDA device exists."""

import glob
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

N = 4096
TG = 256

SOURCE = r"""
struct Ptrs { const float *x; float *y; };
extern "C" __global__ void axpy_s(float a, Ptrs p, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p.y[i] = a * p.x[i] + p.y[i];
}
extern "C" __global__ void scale(float *y, const float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""

# Where the allocations were in the "program": any addresses; the replay moves them.
X_ADDR = 0x7F0000001000
Y_ADDR = 0x7F0000200000


def floats(values):
    return struct.pack("<%df" % len(values), *values)


class ReplayCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def module(self):
        """The module NVRTC made of SOURCE: (file, code kind)."""
        src = self.write("k.cu", SOURCE)
        dump = os.path.join(self.tmp, "dump")
        self.kprof("run", src, "--entry", "scale", "--grid", str(N), "--tg", str(TG), "--buffers",
                   "f32:%d,f32:%d,f32=2,u32=%d" % (N, N, N), "--iters", "1",
                   env={"KPROF_DUMP_DIR": dump}, expect=0)
        for ext, kind in (("cubin", "cubin"), ("ptx", "ptx")):
            found = glob.glob(os.path.join(dump, "*." + ext))
            if found:
                return found[0], kind
        self.fail("KPROF_DUMP_DIR kept no cubin or PTX: %s" % os.listdir(dump))

    def capture(self, name, symbol, args, allocs, pointers, states):
        image, kind = self.module()
        d = os.path.join(self.home, "kernels", name)
        os.makedirs(d)
        code = "kernel." + kind
        with open(image, "rb") as f, open(os.path.join(d, code), "wb") as g:
            g.write(f.read())
        for f, data in states.items():
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(data)
        with open(os.path.join(d, "not-captured.txt"), "w"):
            pass
        m = {
            "kprof_capture": 1, "api": "cuda", "kernel": symbol, "symbol": symbol, "launch": 1,
            "selector": "first", "device": "gpu", "command": "./prog", "pid": 1,
            "captured_at": "2026-12-02T18:00:00Z", "held_ns": 1000,
            "code": {"kind": kind, "file": code, "build_options": ""},
            "geometry": {"dims": 1, "grid": [N, 1, 1], "tg": [TG, 1, 1], "offset": [0, 0, 0],
                         "dynamic_smem": 0},
            "attributes": {"registers": None, "static_smem": None, "local_bytes": None,
                           "max_threads": None, "const_bytes": None},
            "after": 1, "args": args, "allocs": allocs, "pointers": pointers,
            "not_captured": [],
        }
        with open(os.path.join(d, "capture.json"), "w") as f:
            json.dump(m, f)

    def test_a_struct_of_pointers_by_value_is_relocated(self):
        x = [i * 0.5 for i in range(N)]
        y = [float(i) for i in range(N)]
        args = [
            {"index": 0, "size": 4, "kind": "value", "hex": struct.pack("<f", 2.0).hex()},
            {"index": 1, "size": 16, "kind": "value",
             "hex": struct.pack("<QQ", X_ADDR, Y_ADDR).hex()},
            {"index": 2, "size": 4, "kind": "value", "hex": struct.pack("<I", N).hex()},
        ]
        allocs = [
            {"id": 0, "bytes": N * 4, "address": X_ADDR, "arg": 1, "name": "p.x",
             "before": "alloc-0.before", "after": "alloc-0.after"},
            {"id": 1, "bytes": N * 4, "address": Y_ADDR, "arg": 1, "name": "p.y",
             "before": "alloc-1.before", "after": "alloc-1.after"},
        ]
        pointers = [{"arg": 1, "at": 0, "alloc": 0, "offset": 0},
                    {"arg": 1, "at": 8, "alloc": 1, "offset": 0}]
        self.capture("axpy_s@1", "axpy_s", args, allocs, pointers, {
            "alloc-0.before": floats(x), "alloc-0.after": floats(x),
            "alloc-1.before": floats(y), "alloc-1.after": floats([2.0 * i for i in range(N)])})
        doc = self.run_json("run", "axpy_s@1", "--iters", "3")
        self.assertTrue(doc["replay_check"]["identical"], doc["replay_check"])
        self.assertEqual(doc["replay_check"]["bytes"], 2 * N * 4)
        p = self.kprof("bench", "axpy_s@1", "--min-time", "0.05", "--timeout", "10", expect=0)
        self.assertIn("replay reproduces the program's output", p.stdout)

    def test_a_pointer_into_an_allocation_keeps_its_offset(self):
        off = 64  # floats: y points 256 bytes into its allocation
        n = N - off
        x = [float(i) for i in range(N)]
        y0 = [-1.0] * N
        y1 = list(y0)
        for i in range(n):
            y1[off + i] = 3.0 * x[i]
        args = [
            {"index": 0, "size": 8, "kind": "value",
             "hex": struct.pack("<Q", Y_ADDR + 4 * off).hex()},
            {"index": 1, "size": 8, "kind": "value", "hex": struct.pack("<Q", X_ADDR).hex()},
            {"index": 2, "size": 4, "kind": "value", "hex": struct.pack("<f", 3.0).hex()},
            {"index": 3, "size": 4, "kind": "value", "hex": struct.pack("<I", n).hex()},
        ]
        allocs = [
            {"id": 0, "bytes": N * 4, "address": Y_ADDR, "arg": 0, "name": "y",
             "before": "alloc-0.before", "after": "alloc-0.after"},
            {"id": 1, "bytes": N * 4, "address": X_ADDR, "arg": 1, "name": "x",
             "before": "alloc-1.before", "after": "alloc-1.after"},
        ]
        pointers = [{"arg": 0, "at": 0, "alloc": 0, "offset": 4 * off},
                    {"arg": 1, "at": 0, "alloc": 1, "offset": 0}]
        self.capture("scale@1", "scale", args, allocs, pointers, {
            "alloc-0.before": floats(y0), "alloc-0.after": floats(y1),
            "alloc-1.before": floats(x), "alloc-1.after": floats(x)})
        p = self.kprof("run", "scale@1", "--iters", "3", expect=0)
        self.assertIn("replay reproduces the program's output", p.stdout)
        self.assertIn("grid %d, tg %d" % (N, TG), p.stdout)


PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs")


class ReplayCapturedCuda(kptest.KprofTestCase):
    """Launches of a real CUDA program (tests/programs/cuda_capture_app.cu) and of a Triton kernel
    captured by `kprof trace --capture`, then replayed: output identical."""

    needs_opencl = False
    needs_cuda = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bin = os.path.join(kptest.tempfile.mkdtemp(prefix="kprof-cuda-replay-"), "bin")
        p = subprocess.run(["sh", os.path.join(PROGRAMS, "build_cuda_app.sh"), cls.bin,
                                   "cuda_capture_app"], capture_output=True, text=True)
        if p.returncode == 77:
            raise kptest.unittest.SkipTest(p.stderr.strip())
        if p.returncode != 0:
            raise AssertionError("building cuda_capture_app failed:\n" + p.stderr)
        cls.app = os.path.join(cls.bin, "cuda_capture_app")

    def captured(self, pattern, folder, program=None):
        out = os.path.join(self.tmp, "prog-out")
        os.makedirs(out, exist_ok=True)
        kernels = os.path.join(self.tmp, "kernels")
        self.kprof("trace", "--capture", pattern, "--capture-dir", kernels, "-o",
                   os.path.join(self.tmp, "t.kprof"), "--", *(program or [self.app]), out,
                   expect=0, timeout=300)
        path = os.path.join(kernels, folder)
        self.assertTrue(os.path.isdir(path), os.listdir(kernels))
        return path

    def check_replay(self, path):
        doc = self.run_json("run", path, "--iters", "5")
        self.assertTrue(doc["replay_check"]["identical"], doc["replay_check"])
        self.assertGreater(doc["replay_check"]["bytes"], 0)
        return doc

    def test_plain_kernel(self):
        self.check_replay(self.captured("kp_cap_axpy@2", "kp_cap_axpy@2"))

    def test_struct_of_pointers_by_value(self):
        path = self.captured("*kp_cap_pairs*", "kp_cap_pairs@1")
        doc = self.check_replay(path)
        self.assertEqual(doc["threadgroup"][:2], [16, 16])
        p = self.kprof("bench", path, "--min-time", "0.05", "--timeout", "10", expect=0)
        self.assertIn("replay reproduces the program's output", p.stdout)

    def test_triton_kernel(self):
        probe = subprocess.run([sys.executable, "-c", "import torch, triton; "
                                       "assert torch.cuda.is_available()"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("no torch+triton with a CUDA device")
        prog = [sys.executable, os.path.join(PROGRAMS, "triton_add.py")]
        self.check_replay(self.captured("kp_triton_add@2", "kp_triton_add@2", program=prog))


if __name__ == "__main__":
    kptest.main()
