"""kprof trace --capture on a CUDA GPU (issue 26): the capture folder a real CUDA program's launch
leaves — the module image, the geometry, every parameter's bytes, the allocations its pointers
point into (a whole pointer argument, a pointer 256 bytes into an allocation, pointers inside a
struct passed by value) before and after the launch — compared with what the program itself
wrote down about that launch (tests/programs/cuda_capture_app.cu); @N, @slowest, and the
failures a capture announces (a kernel never launched, a launch that never came). Skipped, with
the reason, where no CUDA device or no nvcc exists."""

import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs")


class CaptureCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bin = os.path.join(kptest.tempfile.mkdtemp(prefix="kprof-cuda-capture-"), "bin")
        p = subprocess.run(["sh", os.path.join(PROGRAMS, "build_cuda_app.sh"), cls.bin,
                            "cuda_capture_app"], capture_output=True, text=True)
        if p.returncode == 77:
            raise kptest.unittest.SkipTest(p.stderr.strip())
        if p.returncode != 0:
            raise AssertionError("building cuda_capture_app failed:\n" + p.stderr)
        cls.app = os.path.join(cls.bin, "cuda_capture_app")

    def capture(self, pattern, *extra, mode=(), expect=0, program=None):
        """Trace the app (or program + [its output folder]) with --capture PATTERN into a
        kernels folder of this test: (the program's output folder, the kernels folder, the
        finished process)."""
        out = os.path.join(self.tmp, "prog-out")
        os.makedirs(out, exist_ok=True)
        kernels = os.path.join(self.tmp, "kernels")
        cmd = (program or [self.app]) + [out] + list(mode)
        p = self.kprof("trace", "--capture", pattern, "--capture-dir", kernels, *extra,
                       "-o", os.path.join(self.tmp, "t.kprof"), "--", *cmd,
                       expect=expect, timeout=300)
        return out, kernels, p

    def read(self, *parts):
        with open(os.path.join(*parts), "rb") as f:
            return f.read()

    def manifest(self, folder):
        with open(os.path.join(folder, "capture.json")) as f:
            return json.load(f)

    def alloc_of(self, m, arg, at=0):
        """The allocation and offset the pointer at (arg, at) was found to point into."""
        ptrs = [p for p in m["pointers"] if p["arg"] == arg and p["at"] == at]
        self.assertEqual(len(ptrs), 1, m["pointers"])
        allocs = {a["id"]: a for a in m["allocs"]}
        return allocs[ptrs[0]["alloc"]], ptrs[0]["offset"]

    def test_nth_launch_of_a_plain_kernel(self):
        out, kernels, p = self.capture("kp_cap_axpy@2")
        self.assertIn("cuda_capture_app: ok", p.stdout)
        folder = os.path.join(kernels, "kp_cap_axpy@2")
        self.assertTrue(os.path.isdir(folder), p.stderr)
        self.assertIn("captured kp_cap_axpy@2", p.stderr)
        self.assertNotIn("kprof: error", p.stderr)
        m = self.manifest(folder)
        self.assertEqual(m["api"], "cuda")
        self.assertEqual(m["symbol"], "kp_cap_axpy")  # extern "C": unmangled
        self.assertEqual(m["launch"], 2)
        self.assertGreaterEqual(m["held_ns"], 0)
        n = 1 << 20
        g = m["geometry"]
        self.assertEqual(g["grid"][:1], [n])
        self.assertEqual(g["tg"][:1], [256])
        self.assertEqual(g["dynamic_smem"], 0)
        self.assertGreater(m["attributes"]["registers"], 0)
        # float *y, const float *x, float a, int n
        self.assertEqual([a["size"] for a in m["args"]], [8, 8, 4, 4])
        self.assertEqual(bytes.fromhex(m["args"][2]["hex"]), struct.pack("<f", 2.0))
        self.assertEqual(bytes.fromhex(m["args"][3]["hex"]), struct.pack("<i", n))
        # y is 256 bytes into its allocation; x is an allocation of its own.
        ya, yoff = self.alloc_of(m, 0)
        xa, xoff = self.alloc_of(m, 1)
        self.assertEqual(yoff, 256)
        self.assertEqual(xoff, 0)
        self.assertGreaterEqual(ya["bytes"], 256 + 4 * n)
        self.assertGreaterEqual(xa["bytes"], 4 * n)
        # The before-state is what the program had after launch 1, the after-state after 2.
        y_before = self.read(folder, ya["before"])[256:256 + 4 * n]
        y_after = self.read(folder, ya["after"])[256:256 + 4 * n]
        self.assertEqual(y_before, self.read(out, "y1.bin"))
        self.assertEqual(y_after, self.read(out, "y2.bin"))
        self.assertEqual(self.read(folder, xa["before"])[:4 * n], self.read(out, "x.bin"))
        self.assertEqual(self.read(folder, xa["after"])[:4 * n], self.read(out, "x.bin"))
        # The code: the module image the function came from, holding its symbol.
        code = m["code"]
        self.assertIn(code["kind"], ("cubin", "fatbin", "ptx"))
        image = self.read(folder, code["file"])
        self.assertIn(b"kp_cap_axpy", image)
        if code["kind"] == "cubin":
            self.assertEqual(image[:4], b"\x7fELF")
        self.assertEqual(self.read(folder, "not-captured.txt"), b"")
        # Nothing half-written beside it.
        self.assertEqual(sorted(os.listdir(kernels)), ["kp_cap_axpy@2"])

    def test_struct_of_pointers_by_value(self):
        out, kernels, p = self.capture("*kp_cap_pairs*")
        folders = os.listdir(kernels)
        self.assertEqual(folders, ["kp_cap_pairs@1"], p.stderr)
        folder = os.path.join(kernels, folders[0])
        m = self.manifest(folder)
        self.assertTrue(m["symbol"].startswith("_Z"), m["symbol"])  # C++: mangled
        self.assertIn("kp_cap_pairs", m["kernel"])
        rows, cols = 512, 256
        g = m["geometry"]
        self.assertEqual(g["dims"], 2)
        self.assertEqual(g["grid"][:2], [cols, rows])
        self.assertEqual(g["tg"][:2], [16, 16])
        # struct Pair { const float *in; float *out; int cols; float scale; } = 24 bytes
        self.assertEqual([a["size"] for a in m["args"]], [24])
        raw = bytes.fromhex(m["args"][0]["hex"])
        self.assertEqual(struct.unpack("<if", raw[16:24]), (cols, 1.5))
        ina, inoff = self.alloc_of(m, 0, 0)
        outa, outoff = self.alloc_of(m, 0, 8)
        self.assertEqual((inoff, outoff), (0, 0))
        self.assertNotEqual(ina["id"], outa["id"])
        size = 4 * rows * cols
        self.assertEqual(self.read(folder, ina["before"])[:size], self.read(out, "in.bin"))
        self.assertEqual(self.read(folder, outa["before"])[:size], bytes(size))
        self.assertEqual(self.read(folder, outa["after"])[:size], self.read(out, "out.bin"))
        self.assertEqual(len(m["pointers"]), 2)

    def test_no_after_state(self):
        out, kernels, p = self.capture("kp_cap_axpy@3", "--capture-no-after")
        m = self.manifest(os.path.join(kernels, "kp_cap_axpy@3"))
        self.assertFalse(m["after"])
        for a in m["allocs"]:
            self.assertIsNone(a["after"])
            self.assertIsNotNone(a["before"])

    def test_slowest(self):
        out, kernels, p = self.capture("kp_cap_axpy@slowest", "--capture-window", "1",
                                       mode=("slowest",))
        self.assertIn("cuda_capture_app: ok slowest", p.stdout)
        folders = os.listdir(kernels)
        self.assertEqual(folders, ["kp_cap_axpy@7"], p.stderr)
        folder = os.path.join(kernels, folders[0])
        m = self.manifest(folder)
        self.assertEqual(m["selector"], "slowest")
        self.assertEqual(m["launch"], 7)
        self.assertEqual(m["geometry"]["grid"][:1], [1 << 24])
        s = m["slowest"]
        self.assertEqual(s["slowest_launch"], 4)
        self.assertEqual(s["launches"], 4)  # the launches timed inside the window: not the first
        self.assertGreater(s["slowest_ns"], 0)
        ya, yoff = self.alloc_of(m, 0)
        big = 4 << 24
        self.assertEqual(yoff, 0)
        self.assertEqual(self.read(folder, ya["before"])[:big], self.read(out, "ybig-before.bin"))
        self.assertEqual(self.read(folder, ya["after"])[:big], self.read(out, "ybig-after.bin"))

    def test_kernel_never_launched(self):
        out, kernels, p = self.capture("kp_no_such_kernel", expect=2)
        self.assertIn("cuda_capture_app: ok", p.stdout)  # the program runs on
        self.assertIn("capture", p.stderr)
        self.assertIn("no kernel matching 'kp_no_such_kernel' was launched", p.stderr)
        self.assertFalse(os.path.exists(kernels) and os.listdir(kernels))

    def test_launch_that_never_came(self):
        out, kernels, p = self.capture("kp_cap_axpy@9", expect=2)
        self.assertIn("launched 4 times: launch 9 never came", p.stderr)
        self.assertFalse(os.path.exists(kernels) and os.listdir(kernels))

    def test_triton_kernel(self):
        """A Triton kernel: JIT-compiled, its cubin loaded at run time, launched with
        cuLaunchKernelEx on tensors of PyTorch's caching allocator (pointers into segments)."""
        probe = subprocess.run([sys.executable, "-c", "import torch, triton; "
                                "assert torch.cuda.is_available()"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("no torch+triton with a CUDA device")
        prog = [sys.executable, os.path.join(PROGRAMS, "triton_add.py")]
        out, kernels, p = self.capture("kp_triton_add@2", program=prog)
        self.assertIn("triton_add: ok", p.stdout)
        folder = os.path.join(kernels, "kp_triton_add@2")
        self.assertTrue(os.path.isdir(folder), p.stderr)
        m = self.manifest(folder)
        self.assertEqual(m["code"]["kind"], "cubin")
        self.assertIn(b"kp_triton_add", self.read(folder, m["code"]["file"]))
        n = 1 << 20
        self.assertEqual(m["geometry"]["grid"][0] // m["geometry"]["tg"][0], n // 1024)
        # kp_triton_add(out, y, out, n): launch 2 reads and writes out in place.
        self.assertGreaterEqual(len(m["args"]), 4)
        self.assertEqual(bytes.fromhex(m["args"][3]["hex"]), struct.pack("<i", n))
        oa, ooff = self.alloc_of(m, 0)
        ya, yoff = self.alloc_of(m, 1)
        oa2, ooff2 = self.alloc_of(m, 2)
        self.assertEqual((oa["id"], ooff), (oa2["id"], ooff2))
        self.assertEqual(self.read(folder, ya["before"])[yoff:yoff + 4 * n],
                         self.read(out, "y.bin"))
        self.assertEqual(self.read(folder, oa["before"])[ooff:ooff + 4 * n],
                         self.read(out, "out1.bin"))
        self.assertEqual(self.read(folder, oa["after"])[ooff:ooff + 4 * n],
                         self.read(out, "out2.bin"))

    def replay(self, folder_name):
        """kprof run and kprof bench on a capture, named by its path (--capture-dir put it
        outside KPROF_HOME): the output check must say identical."""
        folder_name = os.path.join(self.tmp, "kernels", folder_name)
        r = self.run_json("run", folder_name, "--iters", "5", "--warmup", "1")
        check = r["replay_check"]
        self.assertTrue(check["checked"], check)
        self.assertTrue(check["identical"], check)
        self.assertGreater(r["gpu_ms_median"], 0)
        b = self.kprof("bench", folder_name, "--json", "--timeout", "3", expect=0)
        doc = json.loads(b.stdout)
        self.assertTrue(doc["replay"]["identical"], doc["replay"])
        return r

    def test_replay_plain_kernel(self):
        """The capture of launch 2 replayed: the program's y after launch 2, from y after 1."""
        self.capture("kp_cap_axpy@2")
        r = self.replay("kp_cap_axpy@2")
        self.assertEqual(r["grid"][:1], [1 << 20])
        self.assertEqual(r["threadgroup"][:1], [256])

    def test_replay_struct_of_pointers(self):
        """Pointers inside a struct passed by value, relocated to the replay's buffers."""
        self.capture("*kp_cap_pairs*")
        self.replay("kp_cap_pairs@1")

    def test_replay_triton(self):
        probe = subprocess.run([sys.executable, "-c", "import torch, triton; "
                                "assert torch.cuda.is_available()"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("no torch+triton with a CUDA device")
        prog = [sys.executable, os.path.join(PROGRAMS, "triton_add.py")]
        self.capture("kp_triton_add@2", program=prog)
        self.replay("kp_triton_add@2")

    def test_trace_unchanged_by_a_capture(self):
        """The trace records the program's kernels as without --capture."""
        out, kernels, p = self.capture("kp_cap_axpy@2")
        r = json.loads(self.kprof("report", os.path.join(self.tmp, "t.kprof"), "--json",
                                  expect=0).stdout)
        dev = {g["name"]: g for g in r["device"]}
        self.assertEqual(dev["kp_cap_axpy"]["calls"], 4)
        self.assertEqual(r["dropped"], 0)


if __name__ == "__main__":
    kptest.unittest.main()
