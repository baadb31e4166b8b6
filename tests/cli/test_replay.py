"""kprof run/bench/sweep NAME@N: a captured launch (collect/capture.h) replayed in the lab on PoCL.

The capture folders are written here by hand, as `kprof trace --capture` writes them (the manifest
is JSON, docs/formats/capture.md): an OpenCL kernel y[i] = a * x[i] + y[i] with a value argument,
a buffer passed twice (y, and yin reading it), and a __local argument. Values are chosen so that
the after-state is exact in float32 whatever the compiler contracts."""

import json
import os
import struct

import kptest

N = 1024
TG = 64
A = 2.0

SOURCE = r"""
__kernel void axpy(float a, __global const float *x, __global float *y,
                   __global const float *yin, __local float *tmp)
{
    size_t i = get_global_id(0), l = get_local_id(0);
    tmp[l] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[i] = a * tmp[l] + yin[i];
}
"""

QUICK = ["--min-time", "0.05", "--timeout", "5", "--max-noise", "50"]


def floats(values):
    return struct.pack("<%df" % len(values), *values)


class Replay(kptest.KprofTestCase):
    def capture_dir(self, name="axpy@1"):
        return os.path.join(self.home, "kernels", name)

    def make_capture(self, name="axpy@1", args=None, after_y=None, missing=()):
        d = self.capture_dir(name)
        os.makedirs(d)
        x = [i * 0.5 for i in range(N)]
        y = [float(i) for i in range(N)]
        out = [A * x[i] + y[i] for i in range(N)]  # 2i: exact
        files = {
            "kernel.cl": SOURCE.encode(),
            "alloc-0.before": floats(x),
            "alloc-0.after": floats(x),
            "alloc-1.before": floats(y),
            "alloc-1.after": after_y if after_y is not None else floats(out),
            "not-captured.txt": "".join(m + "\n" for m in missing).encode(),
        }
        for f, data in files.items():
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(data)
        if args is None:
            args = [
                {"index": 0, "size": 4, "kind": "value", "hex": struct.pack("<f", A).hex()},
                {"index": 1, "size": 8, "kind": "mem", "alloc": 0},
                {"index": 2, "size": 8, "kind": "mem", "alloc": 1},
                {"index": 3, "size": 8, "kind": "mem", "alloc": 1},
                {"index": 4, "size": TG * 4, "kind": "local"},
            ]
        manifest = {
            "kprof_capture": 1, "api": "opencl", "kernel": "axpy", "symbol": "axpy",
            "launch": 1, "selector": "first", "device": "pocl", "command": "./prog",
            "pid": 1234, "captured_at": "2026-12-02T18:00:00Z", "held_ns": 1000,
            "code": {"kind": "opencl-source", "file": "kernel.cl", "build_options": ""},
            "geometry": {"dims": 1, "grid": [N, 1, 1], "tg": [TG, 1, 1], "offset": [0, 0, 0],
                         "dynamic_smem": 0},
            "attributes": {"registers": None, "static_smem": None, "local_bytes": None,
                           "max_threads": None, "const_bytes": None},
            "after": 1,
            "args": args,
            "allocs": [
                {"id": 0, "bytes": N * 4, "address": 0, "arg": 1, "name": "x",
                 "before": "alloc-0.before", "after": "alloc-0.after"},
                {"id": 1, "bytes": N * 4, "address": 0, "arg": 2, "name": "y",
                 "before": "alloc-1.before", "after": "alloc-1.after"},
            ],
            "pointers": [],
            "not_captured": list(missing),
        }
        with open(os.path.join(d, "capture.json"), "w") as fh:
            json.dump(manifest, fh)
        return d

    def test_run_reproduces_the_output_at_the_captured_geometry(self):
        self.make_capture()
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=0)
        self.assertIn("replay reproduces the program's output", p.stdout)
        self.assertIn("grid %d, tg %d" % (N, TG), p.stdout)
        doc = self.run_json("run", "axpy@1", "--iters", "2")
        self.assertEqual(doc["grid"][0], N)
        self.assertEqual(doc["threadgroup"][0], TG)
        check = doc["replay_check"]
        self.assertTrue(check["checked"])
        self.assertTrue(check["identical"])
        self.assertEqual(check["bytes"], 2 * N * 4)
        self.assertEqual(check["differing"], 0)
        # One buffer per captured allocation, named as captured.
        self.assertEqual([b["name"] for b in doc["buffers"]], ["x", "y"])
        self.assertEqual([b["count"] for b in doc["buffers"]], [N * 4, N * 4])

    def test_a_replay_that_faults_is_named_and_void(self):
        d = self.make_capture()
        # Every work-item writes past the canonical address space: the child dies at once.
        with open(os.path.join(d, "kernel.cl"), "w") as f:
            f.write(SOURCE.replace("y[i] =", "y[((ulong)i + 1) << 45] ="))
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=4)
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        # The device the replay ran on: auto prefers a GPU (the capture names none here).
        gpus = [d for d in caps["backends"][0].get("devices", []) if d.get("is_gpu")]
        if gpus and not gpus[0].get("kernels_in_process", True):
            # A GPU's OpenCL (the default device where one exists) reports the fault as the
            # dispatch's error: the run fails all the same, naming the output check.
            self.assertIn("kernel axpy failed", p.stderr)
            self.assertIn("the replay's output check", p.stderr)
            return
        self.assertIn("the replay of", p.stderr)
        self.assertIn("faulted", p.stderr)
        self.assertIn("outside the captured allocations", p.stderr)

    def test_a_capture_named_by_its_path(self):
        d = self.make_capture()
        p = self.kprof("run", d, "--iters", "2", expect=0)
        self.assertIn("replay reproduces the program's output", p.stdout)

    def test_a_corrupted_after_state_is_a_difference_named_by_its_buffer(self):
        out = [2.0 * i for i in range(N)]
        out[7] = -1.0
        self.make_capture(after_y=floats(out))
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=0)
        self.assertIn("differs", p.stdout)
        self.assertIn("'y'", p.stdout)
        doc = self.run_json("run", "axpy@1", "--iters", "2")
        self.assertFalse(doc["replay_check"]["identical"])
        self.assertEqual(doc["replay_check"]["worst"], "y")
        self.assertGreater(doc["replay_check"]["differing"], 0)
        self.assertLessEqual(doc["replay_check"]["differing"], 4)

    def test_an_argument_count_that_is_not_the_kernels_is_refused(self):
        args = [
            {"index": 0, "size": 4, "kind": "value", "hex": struct.pack("<f", A).hex()},
            {"index": 1, "size": 8, "kind": "mem", "alloc": 0},
            {"index": 2, "size": 8, "kind": "mem", "alloc": 1},
            {"index": 3, "size": 8, "kind": "mem", "alloc": 1},
        ]
        self.make_capture(args=args)
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=2)
        self.assertIn("4 arguments", p.stderr)
        self.assertIn("takes 5", p.stderr)

    def test_a_value_of_the_wrong_size_is_refused(self):
        args = [
            {"index": 0, "size": 8, "kind": "value", "hex": struct.pack("<d", A).hex()},
            {"index": 1, "size": 8, "kind": "mem", "alloc": 0},
            {"index": 2, "size": 8, "kind": "mem", "alloc": 1},
            {"index": 3, "size": 8, "kind": "mem", "alloc": 1},
            {"index": 4, "size": TG * 4, "kind": "local"},
        ]
        self.make_capture(args=args)
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=2)
        self.assertIn("argument 1", p.stderr)

    def test_buffers_with_a_capture_is_a_usage_error(self):
        self.make_capture()
        p = self.kprof("run", "axpy@1", "--buffers", "f32:16", expect=2)
        self.assertIn("captured launch", p.stderr)
        self.assertIn("drop --buffers", p.stderr)

    def test_what_was_not_captured_is_said_with_the_replay(self):
        why = "a pointer stored inside device memory (y+0) is not relocated"
        self.make_capture(missing=[why])
        p = self.kprof("run", "axpy@1", "--iters", "2", expect=0)
        self.assertIn("not captured", p.stdout)
        self.assertIn(why, p.stdout)
        doc = self.run_json("run", "axpy@1", "--iters", "2")
        self.assertEqual(doc["replay_check"]["not_captured"], 1)

    def test_a_capture_that_is_not_there_is_named(self):
        p = self.kprof("run", "nope@3", expect=2)
        self.assertIn("no captured launch nope@3", p.stderr)
        self.assertIn("kprof trace --capture", p.stderr)

    def test_another_geometry_says_the_check_is_of_the_captured_one(self):
        self.make_capture()
        p = self.kprof("run", "axpy@1", "--tg", "32", "--iters", "2", expect=0)
        self.assertIn("captured geometry only", p.stdout)

    def test_bench_runs_the_capture(self):
        self.make_capture()
        p = self.kprof("bench", "axpy@1", *QUICK, expect=0)
        self.assertIn("axpy on", p.stdout)
        self.assertIn("replay reproduces the program's output", p.stdout)
        doc = json.loads(self.kprof("bench", "axpy@1", *QUICK, "--json", expect=0).stdout)
        self.assertTrue(doc["replay"]["identical"])
        self.assertEqual(doc["config"]["grid"], str(N))
        self.assertEqual(doc["config"]["tg"], str(TG))
        # --axis has nothing to vary in the program's own buffers.
        p = self.kprof("bench", "axpy@1", "--axis", "N=1,2", *QUICK, expect=2)
        self.assertIn("--axis", p.stderr)

    def test_sweep_varies_tg_at_the_captured_grid(self):
        self.make_capture()
        p = self.kprof("sweep", "axpy@1", "--tg-list", "32,64", "--iters", "2", expect=0)
        self.assertIn("grid %d" % N, p.stdout)
        self.assertIn("captured geometry only", p.stdout)

    def test_isolate_from_a_capture_then_bench_the_edited_copy_on_its_arguments(self):
        self.make_capture()
        p = self.kprof("isolate", "edited", "--from", "axpy@1", expect=0)
        self.assertIn("kprof bench axpy@1 edited", p.stdout)
        path = os.path.join(self.home, "kernels", "edited", "kernel.cl")
        self.assertEqual(open(path).read(), SOURCE)
        with open(path, "w") as f:
            f.write(SOURCE.replace("a * tmp[l] + yin[i]", "a * x[i] + yin[i]"))
        p = self.kprof("bench", "axpy@1", "edited", *QUICK, expect=0)
        self.assertIn("B/A", p.stdout)
        # Both sides ran on the program's arguments, and both reproduce its output.
        self.assertEqual(p.stdout.count("replay reproduces the program's output"), 2)

    def test_isolate_from_a_cuda_capture_without_source_says_why(self):
        d = self.make_capture(name="k@1")
        with open(os.path.join(d, "capture.json")) as f:
            m = json.load(f)
        m["api"] = "cuda"
        m["code"] = {"kind": "ptx", "file": "kernel.ptx", "build_options": ""}
        os.remove(os.path.join(d, "kernel.cl"))
        with open(os.path.join(d, "kernel.ptx"), "w") as f:
            f.write(".version 8.0\n")
        with open(os.path.join(d, "capture.json"), "w") as f:
            json.dump(m, f)
        p = self.kprof("isolate", "e", "--from", "k@1", expect=2)
        self.assertIn("not as source", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, "kernels", "e")))


APP = os.environ.get("KPROF_CL_CAPTURE_APP")


class ReplayCaptured(kptest.KprofTestCase):
    """Launches captured by `kprof trace --capture` from tests/programs/cl_capture_app.c (several
    kernels, one reading what another wrote), replayed: output identical, at the launch's own
    geometry and arguments."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_capture_app was not built (no OpenCL ICD loader)")

    def capture(self, pattern, mode="basic"):
        caps = os.path.join(self.tmp, "caps")
        out = os.path.join(self.tmp, "out")
        os.makedirs(out, exist_ok=True)
        self.kprof("trace", "--capture", pattern, "--capture-dir", caps, "-o",
                   os.path.join(self.tmp, "t.kprof"), "--force", "--", APP, mode, out,
                   expect=0, timeout=300)
        folder = pattern if "@" in pattern else pattern + "@1"
        path = os.path.join(caps, folder)
        with open(os.path.join(path, "capture.json")) as f:
            return path, json.load(f)

    def replayed(self, pattern):
        path, m = self.capture(pattern)
        doc = self.run_json("run", path, "--iters", "2")
        return m, doc

    def test_each_kernel_reproduces_the_programs_output(self):
        # fill: no local size (the runtime chose); scale@2: reads what fill wrote; group_sum:
        # __local memory; twice: one buffer as two arguments; maybe_add: a NULL buffer.
        for pattern in ("fill", "scale@2", "group_sum", "twice", "maybe_add"):
            with self.subTest(pattern=pattern):
                m, doc = self.replayed(pattern)
                check = doc["replay_check"]
                self.assertTrue(check["identical"], (pattern, check))
                self.assertEqual(check["bytes"], sum(a["bytes"] for a in m["allocs"]))
                self.assertEqual(doc["grid"][0], m["geometry"]["grid"][0])
                if m["geometry"]["tg"][0]:
                    self.assertEqual(doc["threadgroup"][0], m["geometry"]["tg"][0])
                self.assertEqual(doc["entry"], m["symbol"])

    def test_a_program_made_from_a_binary(self):
        # clCreateProgramWithBinary: no source, program.bin is loaded for the device instead.
        path, m = self.capture("scale@2", mode="binary")
        self.assertEqual(m["code"]["kind"], "opencl-binary")
        doc = self.run_json("run", path, "--iters", "2")
        self.assertTrue(doc["replay_check"]["identical"], doc["replay_check"])
        self.assertTrue(doc["source"].endswith("program.bin"), doc["source"])
        # It has no source to make editable.
        p = self.kprof("isolate", "e", "--from", path, expect=2)
        self.assertIn("not as source", p.stderr)

    def test_a_buffer_the_capture_did_not_hold_is_refused(self):
        path, m = self.capture("twice@2")  # its first argument is a sub-buffer
        self.assertEqual(len(m["not_captured"]), 1)
        p = self.kprof("run", path, "--iters", "2", expect=2)
        self.assertIn("did not hold", p.stderr)


if __name__ == "__main__":
    kptest.main()
