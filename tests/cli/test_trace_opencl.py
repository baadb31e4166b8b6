"""kprof trace of a real, unmodified OpenCL program on PoCL (tests/programs/cl_app.c): the
layer forces profiling on every queue and records kernels, reads, writes, copies and fills with
device timestamps on the host clock, plus the host calls; fork and crash."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import kptest

APP = os.environ.get("KPROF_CL_APP")


class TraceOpenCL(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_app was not built (no OpenCL ICD loader to link)")

    def trace(self, *args, expect=0, name="cl.kprof", env=None):
        out = os.path.join(self.tmp, name)
        p = self.kprof("trace", "-o", out, "--", APP, *args, expect=expect, timeout=300, env=env)
        return out, p

    def check_counts(self, path, p):
        """Every call and every device operation of `cl_app 20`, recorded exactly once."""
        self.assertIn("0 records dropped", p.stderr)
        r = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        dev = {g["name"]: g["calls"] for g in r["device"]}
        self.assertEqual(dev["scale"], 20)
        self.assertEqual(dev["add_one"], 21)  # 20 NDRange + 1 task
        for op in ("[OpenCL read]", "[OpenCL write]", "[OpenCL copy]", "[OpenCL fill]"):
            self.assertEqual(dev[op], 20, op)
        host = {g["name"]: g["calls"] for g in r["host"]}
        self.assertEqual(host["clEnqueueNDRangeKernel"], 40)
        self.assertEqual(host["clBuildProgram"], 1)

    def test_program_recorded(self):
        path, p = self.trace("20")
        self.check_counts(path, p)
        db = sqlite3.connect(path)
        # Both queues, the one created without profiling too, have timed device work.
        streams = {s for (s,) in db.execute("SELECT DISTINCT stream FROM events WHERE kind = 4")}
        self.assertEqual(streams, {1, 2})
        lo = int(db.execute("SELECT value FROM meta WHERE key = 'start_ns'").fetchone()[0])
        hi = int(db.execute("SELECT value FROM meta WHERE key = 'end_ns'").fetchone()[0])
        for s, e in db.execute("SELECT start_ns, end_ns FROM events WHERE kind IN (4,5,6)"):
            self.assertLessEqual(lo, s)
            self.assertLessEqual(s, e)
            self.assertLessEqual(e, hi)
        # Every device op follows the call that enqueued it (same process and correlation).
        rows = db.execute("SELECT a.start_ns, k.start_ns, k.queued_ns FROM events a JOIN events k "
                          "ON k.process = a.process AND k.correlation = a.correlation "
                          "WHERE a.kind = 3 AND k.kind IN (4,5,6)").fetchall()
        self.assertEqual(len(rows), 121)
        for call, start, queued in rows:
            self.assertGreaterEqual(start, call)
            self.assertGreaterEqual(queued, call)
        sizes = {b for (b,) in db.execute("SELECT DISTINCT bytes FROM events WHERE kind IN (5,6)")}
        self.assertEqual(sizes, {16384})
        kinds = dict(db.execute("SELECT s.text, e.copy_kind FROM events e JOIN strings s ON "
                                "s.id = e.name WHERE e.kind = 5 GROUP BY s.text"))
        self.assertEqual(kinds, {"[OpenCL read]": 2, "[OpenCL write]": 1, "[OpenCL copy]": 3})
        # OpenCL never says registers or shared memory: NULL, not a made-up 0. add_one's
        # NDRange passes no local size: the runtime chose the groups (block 0, grid the
        # work-items), which reports show as the global size and "-".
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind = 4 AND (registers "
                                    "IS NOT NULL OR static_smem IS NOT NULL OR dynamic_smem IS "
                                    "NOT NULL OR local_mem IS NOT NULL)").fetchone()[0], 0)
        r = json.loads(self.kprof("report", path, "--trace", "--json", expect=0).stdout)
        adds = [e for e in r["device_trace"] if e["name"] == "add_one"]
        self.assertEqual(len(adds), 21)
        ndrange = [e for e in adds if e["grid"] is None]
        self.assertEqual(len(ndrange), 20)
        for e in ndrange:
            self.assertIsNone(e["block"])
            self.assertEqual(e["global_size"], [4096, 1, 1])
        for e in r["device_trace"]:
            self.assertNotIn("registers", e)
            self.assertNotIn("shared_bytes", e)
            self.assertGreaterEqual(e["launch_to_start_s"], 0)
        self.assertEqual(r["launch_latency"]["launch_to_start"]["count"], 121)
        self.assertNotIn("CUDA graphs", json.dumps(r["verdict"]))
        out = os.path.join(self.tmp, "cl.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        ev = json.load(open(out))["traceEvents"]
        for e in ev:
            if e.get("cat") == "kernel":
                self.assertNotIn("registers", e["args"])
                self.assertNotIn("shared_bytes", e["args"])
                if e["name"] == "add_one" and e["args"]["grid"] is None:
                    self.assertEqual(e["args"]["global_size"], [4096, 1, 1])
        flows_in = [e for e in ev if e.get("flow_in")]
        flows_out = {e["bind_id"] for e in ev if e.get("flow_out")}
        self.assertEqual(len(flows_in), 121)
        self.assertEqual({e["bind_id"] for e in flows_in}, flows_out)

    def test_kernel_reflection(self):
        # Each OpenCL kernel's reflection on its device is queried once, at its first launch,
        # and kept once per kernel and device (kernel_info); reports, --trace and both exports
        # carry it on every dispatch, with the values `kprof run` prints for the same kernel.
        path, p = self.trace("20")
        self.check_counts(path, p)
        db = sqlite3.connect(path)
        info = {name: row for (name, *row) in db.execute(
            "SELECT s.text, k.device, k.local_mem, k.private_mem, k.max_group_size, "
            "k.group_multiple FROM kernel_info k JOIN strings s ON s.id = k.name")}
        self.assertEqual(sorted(info), ["add_one", "scale"])  # once each, 41 launches
        src = os.path.join(self.tmp, "k.cl")
        with open(src, "w") as f:
            f.write("__kernel void scale(__global float *x, float a)\n{\n"
                    "    size_t i = get_global_id(0);\n    x[i] = x[i] * a;\n}\n")
        # cl_app takes the first platform's first device: kprof's OpenCL device 0 (on a machine
        # with PoCL and a GPU's OpenCL, kprof run alone would take the GPU).
        run = json.loads(self.kprof("run", src, "--backend", "opencl", "--device", "0",
                                    "--buffers",
                                    "f32:64,f32=3", "--grid", "64", "--tg", "64", "--iters",
                                    "1", "--json", expect=0).stdout)["reflection"]
        device, local, private, max_group, multiple = info["scale"]
        self.assertEqual((max_group, multiple, local, private),
                         (run["max_threadgroup_size"], run["preferred_multiple"],
                          run["static_local_bytes"], run["private_bytes"]))
        want = {"max_threadgroup_size": max_group, "preferred_multiple": multiple,
                "static_local_bytes": local, "private_bytes": private}
        r = json.loads(self.kprof("report", path, "--trace", "--json", expect=0).stdout)
        scales = [e for e in r["device_trace"] if e["name"] == "scale"]
        self.assertEqual(len(scales), 20)
        for e in scales:
            self.assertEqual(e["reflection"], want)
        for e in r["device_trace"]:
            if e["kind"] != "kernel":
                self.assertNotIn("reflection", e)
        text = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertIn("\nKernel reflection (OpenCL: queried once per kernel and device, at its "
                      "first launch):\n", text)
        self.assertEqual(len([l for l in text.splitlines()
                              if l.startswith("  scale on device %d: max tg %d · preferred "
                                              "multiple %d · local mem " % (device, max_group,
                                                                            multiple))]), 1)
        chrome = json.loads(self.kprof("export", path, "--chrome", "-", expect=0).stdout)
        kernels = [e for e in chrome["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 41)
        for e in kernels:
            if e["name"] == "scale":
                self.assertEqual({k: e["args"][k] for k in want}, want)
        # The Perfetto export's debug annotations, decoded as test_perfetto.py decodes them.
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, here)
        import test_perfetto
        python, why = test_perfetto.venv_python()
        if python:
            pf = os.path.join(self.tmp, "cl.pftrace")
            self.kprof("export", path, "--perfetto", pf, expect=0)
            script = (
                "import json, sys, unittest\nsys.path.insert(0, sys.argv[2])\n"
                "import test_perfetto\nclass T(unittest.TestCase):\n    def runTest(self): pass\n"
                "d = test_perfetto.Decoded(T(), sys.argv[1])\n"
                "print(json.dumps([s['args'] for s in d.slices if s['name'] == 'scale']))\n")
            q = subprocess.run([python, "-c", script, pf, here], capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(q.returncode, 0, q.stderr)
            args = json.loads(q.stdout)
            self.assertEqual(len(args), 20)
            for a in args:
                self.assertEqual({k: a[k] for k in want}, want)
        # kprof merge keeps it: each input's kernels with their own process's reflection.
        merged, copy = os.path.join(self.tmp, "merged.kprof"), os.path.join(self.tmp, "copy.kprof")
        shutil.copyfile(path, copy)
        self.kprof("merge", path, copy, "-o", merged, expect=0)
        r = json.loads(self.kprof("report", merged, "--trace", "--json", expect=0).stdout)
        scales = [e for e in r["device_trace"] if e["name"] == "scale"]
        self.assertEqual(len(scales), 40)
        for e in scales:
            self.assertEqual(e["reflection"], want)
        # An old trace (no kernel_info table) reads as before, without reflection.
        db.execute("DROP TABLE kernel_info")
        db.commit()
        db.close()
        r = json.loads(self.kprof("report", path, "--trace", "--json", expect=0).stdout)
        self.assertFalse(any("reflection" in e for e in r["device_trace"]))

    def test_blocking_read_is_host_synchronization(self):
        # `cl_app 6 blocking` ends each iteration with a blocking read (CL_TRUE) and no clFinish
        # on that queue: the layer writes a wait record (kind 7) of each call that blocked, with
        # the call's name, thread, interval and correlation, and the verdict counts the read as
        # the host waiting for the kernels, never as a call that is the headline. Structure
        # only: what share of the time the waits take depends on PoCL and the machine.
        path, p = self.trace("6", "blocking")
        db = sqlite3.connect(path)
        q = ("SELECT a.start_ns, a.end_ns, a.correlation, a.tid FROM events a JOIN strings s ON "
             "s.id = a.name WHERE a.kind = %d AND s.text = 'clEnqueueReadBuffer' ORDER BY 1")
        calls, waits = db.execute(q % 3).fetchall(), db.execute(q % 7).fetchall()
        self.assertEqual(len(calls), 6)
        self.assertEqual(waits, calls)
        (mapped,) = db.execute(q.replace("clEnqueueReadBuffer", "clEnqueueMapBuffer") %
                               7).fetchall()  # the blocking map at the end
        # The non-blocking calls have none.
        names = {t for (t,) in db.execute("SELECT s.text FROM events e JOIN strings s ON "
                                          "s.id = e.name WHERE e.kind = 7")}
        self.assertEqual(names, {"clEnqueueReadBuffer", "clEnqueueMapBuffer"})
        r = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        reads = sum(e - s for s, e, _, _ in calls) / 1e9
        for window in (r["verdict"], r["verdict"]["active"]):
            self.assertNotEqual(window["named_call"], "clEnqueueReadBuffer")
            self.assertNotIn("clEnqueueReadBuffer took", window["sentence"])
        self.assertGreaterEqual(r["verdict"]["host_sync_s"], reads * (1 - 1e-9))

    def test_each_way_in(self):
        # The layer alone (loaders with layers), the LD_PRELOAD wrappers alone (loaders without,
        # such as the one CUDA ships): each records everything once.
        for way in ("layer", "preload"):
            with self.subTest(way=way):
                path, p = self.trace("20", name=way + ".kprof",
                                     env={"KPROF_OPENCL_INTERCEPT": way})
                if way == "layer" and not kptest.loader_has_layers(APP):
                    # e.g. the loader CUDA ships: the layer is never loaded, and the trace
                    # says that nothing was captured rather than showing an empty table.
                    self.assertIn("no GPU activity was captured", p.stderr)
                    continue
                self.check_counts(path, p)
        p = self.kprof("trace", "--", APP, "1", env={"KPROF_OPENCL_INTERCEPT": "ptrace"},
                       expect=2)
        self.assertIn("expected layer, preload or both", p.stderr)

    def test_program_layers_see_every_call(self):
        # A layer of the program's own stays in the path of every call: kprof's layer goes
        # outermost, and its LD_PRELOAD wrappers call what lies under it.
        if not kptest.loader_has_layers(APP):
            self.skipTest("this ICD loader has no layer support")
        layer = {"OPENCL_LAYERS": os.environ["KPROF_COUNT_LAYER"]}
        alone = subprocess.run([APP, "20"], env=dict(os.environ, **layer), capture_output=True,
                               text=True, timeout=300)
        self.assertEqual(alone.returncode, 0, alone.stderr)
        counts = [ln for ln in alone.stderr.splitlines() if ln.startswith("count_layer:")]
        self.assertEqual(counts, ["count_layer: clEnqueueNDRangeKernel=40 clFinish=32"])
        path, p = self.trace("20", env=layer)
        self.assertIn(counts[0], p.stderr)
        self.check_counts(path, p)

    def test_weak_reference_without_a_loader(self):
        # The collector's exports stand in for a weakly referenced clFinish; with no loader
        # behind them the call fails with an OpenCL error instead of crashing the program.
        weak = os.environ["KPROF_WEAK_CL"]
        alone = subprocess.run([weak], capture_output=True, text=True, timeout=60)
        self.assertEqual(alone.stdout.strip(), "no OpenCL")
        out = os.path.join(self.tmp, "weak.kprof")
        p = self.kprof("trace", "-o", out, "--", weak, expect=0)
        self.assertEqual(p.stdout.strip(), "clFinish=-59")  # CL_INVALID_OPERATION

    def test_collector_path_with_a_space(self):
        # LD_PRELOAD cannot carry such a path: preload alone is refused, the default says it
        # traces through layers only (and still does, where the loader has them).
        folder = os.path.join(self.tmp, "with space")
        os.makedirs(folder)
        lib = os.path.join(folder, "libkprof-inject.so")
        shutil.copy(os.path.join(os.path.dirname(kptest.KPROF), "libkprof-inject.so"), lib)
        env = {"KPROF_INJECT_LIBRARY": lib, "KPROF_OPENCL_INTERCEPT": "preload"}
        p = self.kprof("trace", "--", APP, "1", env=env, expect=2)
        self.assertIn("which LD_PRELOAD cannot carry", p.stderr)
        env["KPROF_OPENCL_INTERCEPT"] = "both"
        path, p = self.trace("20", name="space.kprof", env=env)
        self.assertIn("traced through the loader's layers only", p.stderr)
        if kptest.loader_has_layers(APP):
            self.check_counts(path, p)

    def test_fork(self):
        path, p = self.trace("20", "fork")
        r = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        self.assertGreaterEqual(r["processes"], 2)
        db = sqlite3.connect(path)
        with_kernels = db.execute("SELECT COUNT(DISTINCT process) FROM events WHERE kind = 4")
        self.assertEqual(with_kernels.fetchone()[0], 2)

    def test_crash(self):
        path, p = self.trace("20", "crash", expect=128 + 11)
        self.assertIn("ended without closing its record", p.stderr)
        r = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        dev = {g["name"]: g["calls"] for g in r["device"]}
        self.assertGreaterEqual(dev.get("scale", 0), 5)

    def test_layer_without_trace_passes_through(self):
        env = dict(os.environ, OPENCL_LAYERS=os.path.join(os.path.dirname(kptest.KPROF),
                                                          "libkprof-inject.so"))
        env.pop("KPROF_TRACE_DIR", None)
        p = subprocess.run([APP, "5"], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_preload_without_trace_passes_through(self):
        env = dict(os.environ, LD_PRELOAD=os.path.join(os.path.dirname(kptest.KPROF),
                                                       "libkprof-inject.so"))
        env.pop("KPROF_TRACE_DIR", None)
        env.pop("OPENCL_LAYERS", None)
        p = subprocess.run([APP, "5"], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    kptest.main()
