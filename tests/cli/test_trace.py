"""kprof trace, report and export on synthetic programs whose timelines are known exactly
(tests/cli/gen_trace.py writes the records a collector would), plus the command's own
behaviour: exit codes, no GPU activity, dropped records, crashes, bad trace files."""

import json
import os
import shutil
import sqlite3
import sys

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")


class Trace(kptest.KprofTestCase):
    needs_opencl = False

    def trace(self, *args, expect=0, name="t.kprof", env=None):
        out = os.path.join(self.tmp, name)
        p = self.kprof("trace", "-o", out, "--", *args, expect=expect, env=env)
        return out, p

    def gen(self, pattern, *extra, expect=0):
        return self.trace(sys.executable, GEN, pattern, *extra, expect=expect)

    def report(self, path, *extra):
        return json.loads(self.kprof("report", path, "--json", *extra, expect=0).stdout)

    def test_launch_bound_program(self):
        path, p = self.gen("launch-bound", "--kernels", "500", "--seconds", "0.2")
        self.assertIn("1501 events (500 on the device) from 1 process, 0 records dropped", p.stderr)
        r = self.report(path)
        self.assertEqual(r["events"], 1501)
        # Every kernel has its launch, every launch its kernel, the process closed its record.
        self.assertEqual(r["completeness"], {"records_dropped": 0, "device_ops_without_call": 0,
                                             "calls_without_device_work": 0,
                                             "processes_not_closed": 0})
        self.assertGreaterEqual(r["wall_s"], 0.2)
        host = {g["name"]: g for g in r["host"]}
        self.assertEqual(list(host), ["cudaLaunchKernel"])  # cudaGetLastError hidden
        self.assertEqual(host["cudaLaunchKernel"]["calls"], 500)
        self.assertAlmostEqual(host["cudaLaunchKernel"]["mean_s"], 40e-6, places=12)
        self.assertAlmostEqual(host["cudaLaunchKernel"]["total_s"], 500 * 40e-6, places=9)
        dev = r["device"]
        self.assertEqual(len(dev), 1)
        self.assertEqual(dev[0]["name"], "small(float*, int)")  # demangled
        self.assertEqual(dev[0]["calls"], 500)
        self.assertAlmostEqual(r["gpu_busy_s"], 500 * 5e-6, places=9)
        self.assertEqual(r["nvtx"][0]["name"], "outer")
        # The whole wall holds the interpreter's start-up and the idle end, whose length
        # depends on the machine; every number below is fixed by the records alone.
        v = r["verdict"]
        self.assertEqual(v["kernels"], 500)
        self.assertEqual(v["small_dispatch_fraction"], 1)
        self.assertEqual(v["idle_gaps"], 499)
        self.assertAlmostEqual(v["median_gap_s"], 40e-6, places=12)
        self.assertAlmostEqual(v["gpu_busy_fraction"], r["gpu_busy_s"] / r["wall_s"], places=9)
        # Launched back to back for 22.5 ms of a >= 200 ms wall: the GPU idles mostly outside
        # the launches, so the wall is host-bound (a slower machine only idles it more) ...
        self.assertEqual(v["kind"], "host-bound")
        self.assertFalse(v["flags"]["short_gaps"])
        # ... and the active window, first to last kernel, is launch-bound.
        a = v["active"]
        self.assertEqual(a["kind"], "launch-bound")
        self.assertAlmostEqual(a["duration_s"], 499 * 45e-6 + 5e-6, places=12)
        self.assertAlmostEqual(a["launches_per_s"], 500 / (499 * 45e-6 + 5e-6), places=6)
        self.assertEqual(a["idle_gaps"], 499)
        self.assertTrue(all(a["flags"].values()))
        self.assertEqual(a["advice"], ["fewer-launches", "cuda-graphs", "named-call"])
        self.assertIn("kernel tuning cannot move the headline", a["sentence"])
        self.assertIn("CUDA graphs", a["sentence"])
        # The NVTX range around the launches: the same verdict.
        self.assertEqual([(x["name"], x["instances"], x["kind"]) for x in v["ranges"]],
                         [("outer", 1, "launch-bound")])
        # Launch latency: the kernel starts 50 us after its call began, 49 us after it was
        # queued, 5 us after it was submitted.
        lat = r["launch_latency"]
        for key, want in (("launch_to_start", 50e-6), ("queued_to_start", 49e-6),
                          ("submitted_to_start", 5e-6)):
            self.assertEqual(lat[key]["count"], 500)
            self.assertAlmostEqual(lat[key]["median_s"], want, places=12)
            self.assertAlmostEqual(lat[key]["p95_s"], want, places=12)
        raw = self.report(path, "--raw")
        self.assertIn("cudaGetLastError", [g["name"] for g in raw["host"]])

    def test_text_report_and_trace(self):
        path, _ = self.gen("launch-bound", "--kernels", "200", "--seconds", "0.05")
        out = self.kprof("report", path, expect=0).stdout
        # Units follow the wall, which holds the machine-dependent start-up: ms or s.
        self.assertRegex(out, r"^Profiler ran for [\d.]+ m?s, capturing 601 events\.")
        for text in ("Host-side activity: calling GPU APIs took", "Device-side activity: GPU was "
                     "busy for", "Time (%)", "Total time", "Calls", "Time distribution", "NVTX "
                     "ranges:", "Verdict: host-bound over the wall",
                     "Verdict: launch-bound over the active window", "Verdict per top-level NVTX "
                     "range", "launches", "under 0.05 ms",
                     "Launch latency: launch call to start median 50 µs, p95 50 µs (200 device "
                     "operations); queued to start median 49 µs, p95 49 µs; submitted to start "
                     "median 5 µs, p95 5 µs\n"):
            self.assertIn(text, out)
        self.assertIn("40 µs ± 0", out)
        self.assertRegex(out, r"\n  outer ×1 \(9.0\d ms\): launch-bound\n")
        t = self.kprof("report", path, "--trace", expect=0).stdout
        host = t[t.index("Host-side trace:"):t.index("Device-side trace:")]
        device = t[t.index("Device-side trace:"):t.index("Verdict:")]
        self.assertIn("Threadgroups", device)
        self.assertIn("Regs", device)
        self.assertIn("Shared mem", device)
        self.assertNotIn("Size", device)  # no copies: the column is left out
        self.assertNotIn("Global size", device)  # every kernel says its group size
        self.assertRegex(device, r"Launch lat +Queue wait +Submit wait +Name\n")
        # IDs correlate: call 7's kernel has ID 7 too, 50 us after the call began.
        self.assertRegex(host, r"\n +7 +[\d.]+ m?s +40 µs +1 +cudaLaunchKernel")
        self.assertRegex(device, r"\n +7 +[\d.]+ m?s +5 µs +64 +256 +16 +1 KiB +50 µs +49 µs "
                                 r"+5 µs +small")

    def test_device_bound_program_and_copies(self):
        # Was flaky: the wall holds the interpreter's start-up, which on a loaded 2-core machine
        # turned the wall's verdict from device-bound into mixed. The active window (first to
        # last device operation) is what the records fix.
        path, _ = self.gen("device-bound", "--kernels", "20", "--seconds", "1.5")
        r = self.report(path)
        a = r["verdict"]["active"]
        self.assertEqual(a["kind"], "device-bound")
        self.assertGreater(a["gpu_busy_fraction"], 0.99)
        self.assertEqual(a["advice"], ["kernels"])
        self.assertAlmostEqual(r["gpu_busy_s"], a["gpu_busy_s"], places=12)
        names = [g["name"] for g in r["device"]]
        self.assertEqual(names, ["big", "[CUDA memcpy DtoH]"])
        self.assertEqual(r["completeness"]["device_ops_without_call"], 1)  # the copy's call
        self.assertGreater(r["verdict"]["host_sync_s"], 0.1)
        t = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertIn("Size", t)
        self.assertIn("1 MiB", t)
        self.assertIn("GB/s", t)
        self.assertIn("Verdict: device-bound over the active window", t)
        csv = self.kprof("report", path, "--csv", expect=0).stdout.splitlines()
        header = csv[0].split(",")
        self.assertEqual(header[:9], ["table", "name", "calls", "total_s", "percent_of_wall",
                                      "mean_s", "std_s", "min_s", "max_s"])
        self.assertTrue(any(l.startswith("device,big,20,") for l in csv))
        self.assertTrue(any(l.startswith('device,[CUDA memcpy DtoH],1,') for l in csv))
        import csv as csvmod
        rows = list(csvmod.DictReader(csv))
        self.assertTrue(all(len(row) == len(header) for row in rows))
        verdicts = {row["name"]: row for row in rows if row["table"] == "verdict"}
        self.assertEqual(set(verdicts), {"wall", "active"})
        self.assertEqual(verdicts["active"]["verdict"], "device-bound")
        self.assertEqual(verdicts["wall"]["verdict"], r["verdict"]["kind"])
        self.assertIn("device-bound", verdicts["active"]["sentence"])
        lat = {row["name"]: row for row in rows if row["table"] == "latency"}
        self.assertEqual(set(lat), {"launch_to_start"})  # no queue times in this trace
        self.assertAlmostEqual(float(lat["launch_to_start"]["median_s"]), 5e-6, places=12)
        self.assertEqual(lat["launch_to_start"]["calls"], "20")  # the copy's call is unknown

    def test_slow_start_up_leaves_the_active_window_alone(self):
        # A loaded machine, made on purpose: 0.3 s pass before the program starts. The wall
        # (busy at most 0.49 s of 0.8 s) is no longer device-bound; the active window still is.
        path, _ = self.trace("sh", "-c", 'sleep 0.3; exec "$0" "$@"', sys.executable, GEN,
                             "device-bound", "--kernels", "10", "--seconds", "0.5")
        v = self.report(path)["verdict"]
        self.assertLess(v["gpu_busy_fraction"], 0.8)
        self.assertNotEqual(v["kind"], "device-bound")
        self.assertEqual(v["active"]["kind"], "device-bound")

    def test_host_bound_program_like_a_training_script(self):
        # Start-up with no kernel (allocations, a module load), then 10 `step` ranges of 20
        # short kernels, a sync and idle time: host-bound over the wall (the longest idle
        # stretch before the first kernel, however long the machine takes to start Python),
        # over the active window and in every step.
        path, _ = self.gen("host-bound", "--kernels", "20", "--seconds", "0.3", "--steps", "10")
        r = self.report(path)
        v = r["verdict"]
        self.assertEqual(v["kind"], "host-bound")
        self.assertEqual(v["kernels"], 200)
        self.assertEqual(v["longest_gap"]["place"], "before-first")
        self.assertEqual(v["longest_gap"]["text"], "before the first kernel")
        self.assertGreaterEqual(v["longest_gap_s"], 0.3)
        self.assertEqual([c["name"] for c in v["largest_host_calls"]][:2],
                         ["cudaMalloc", "cuModuleLoadData"])
        self.assertIn("is before the first kernel", v["sentence"])
        self.assertIn("The host's largest GPU calls: cudaMalloc 75 ms, cuModuleLoadData 75 ms",
                      v["sentence"])
        self.assertIn("host-bound, not launch-bound", v["sentence"])
        self.assertNotIn("cuda-graphs", v["advice"])
        a = v["active"]
        self.assertEqual(a["kind"], "host-bound")
        self.assertEqual(a["longest_gap"]["place"], "between")
        self.assertEqual(a["longest_gap"]["text"],
                         "between elementwise_kernel and elementwise_kernel")
        self.assertAlmostEqual(a["median_gap_s"], 26e-6, places=12)
        (step,) = v["ranges"]
        self.assertEqual((step["name"], step["instances"], step["kind"]),
                         ("step", 10, "host-bound"))
        self.assertEqual(step["instance_kinds"], {"host-bound": 10})
        self.assertAlmostEqual(step["duration_s"], 0.2, places=12)
        self.assertAlmostEqual(step["launches_per_s"], 1000, places=6)
        self.assertEqual(step["longest_gap"]["place"], "after-last")
        self.assertAlmostEqual(step["host_sync_s"], 10e-3, places=12)
        out = self.kprof("report", path, expect=0).stdout
        self.assertIn("Verdict: host-bound over the wall", out)
        self.assertIn("step ×10 (200 ms): host-bound; instance by instance: 10 host-bound", out)
        self.assertIn("the longest idle stretch", out)
        self.assertIn("Largest host calls: cudaMalloc 75 ms", out)

    def test_opencl_blocking_read_is_host_synchronization(self):
        # Each step ends in a blocking clEnqueueReadBuffer whose wait record says it blocked: the
        # host waits there for the step's kernels (73% of the step), so the read is host
        # synchronization, not a call that is the headline, and the kernel is what the device
        # table puts first. Before: "clEnqueueReadBuffer took 74%... that call, not a kernel,
        # is the headline" and host synchronization 0.
        path, _ = self.gen("opencl-blocking", "--kernels", "4", "--steps", "10")
        r = self.report(path)
        self.assertEqual(r["device"][0]["name"], "heavy")
        a = r["verdict"]["active"]
        # First kernel (2.6 ms into step 0) to the last copy's end (step 9's end).
        self.assertAlmostEqual(a["duration_s"], 0.1 - 2.6e-3, places=9)
        self.assertAlmostEqual(a["kernel_fraction"], 10 * 7.3e-3 / (0.1 - 2.6e-3), places=6)
        reads_s = 9 * (10e-3 - 2.54e-3)  # step 0's read starts before the window
        self.assertAlmostEqual(a["host_sync_s"], reads_s, places=9)
        self.assertIsNone(a["named_call"])
        self.assertNotIn("named-call", a["advice"])
        self.assertEqual(a["kind"], "mixed")
        self.assertNotIn("clEnqueueReadBuffer", a["sentence"])
        # ... and names the kernel: 10 x 7.3 ms of the 10 x 7.4 ms on the device.
        self.assertIn("The kernel of most device time: heavy, 73 ms (98.6% of the device time).",
                      a["sentence"])
        self.assertNotIn("that call, not a kernel", a["sentence"])
        self.assertIsNone(r["verdict"]["named_call"])
        text = self.kprof("report", path, expect=0).stdout
        self.assertNotIn("not a kernel, is the headline", text)

    def test_opencl_program(self):
        # An OpenCL program: the advice fits OpenCL (no CUDA graphs), a clBuildProgram taking
        # 40% of the active window is named, kernels launched without a local size show what is
        # known (the work-items) and "-" for what is not, and nothing claims registers or
        # shared memory that OpenCL never reports.
        path, _ = self.gen("opencl", "--kernels", "1000")
        r = self.report(path, "--trace")
        v = r["verdict"]
        self.assertEqual(v["api"], ["opencl"])
        a = v["active"]
        self.assertEqual(a["kind"], "host-bound")
        self.assertAlmostEqual(a["duration_s"], 0.75 - 30e-6, places=9)
        self.assertEqual(a["named_call"], "clBuildProgram")
        self.assertAlmostEqual(a["largest_host_calls"][0]["fraction"], 0.3 / (0.75 - 30e-6),
                               places=9)
        self.assertIn("build-once", a["advice"])
        self.assertIn("clBuildProgram took 40% of the active window (1 call, 300 ms): build the "
                      "program once and reuse its binary", a["sentence"])
        (burst,) = v["ranges"]
        self.assertEqual((burst["name"], burst["kind"]), ("burst", "launch-bound"))
        self.assertEqual(burst["advice"], ["fewer-launches", "named-call"])
        self.assertIn("fusion, more work per launch", burst["sentence"])
        text = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertNotIn("CUDA", text)
        self.assertNotIn("cuda", json.dumps(r))
        # OpenCL's device may be a CPU (PoCL): the words are "device" and "queue", never "GPU"
        # or "stream", in the report, the verdicts, the tree and both exports.
        tree = self.kprof("report", path, "--tree", expect=0).stdout
        tree += self.kprof("report", path, "--by", "name", "--sort", "gpu", expect=0).stdout
        chrome = self.kprof("export", path, "--chrome", "-", expect=0).stdout
        for out in (text, self.kprof("report", path, expect=0).stdout, tree, chrome,
                    a["sentence"], burst["sentence"]):
            self.assertNotIn("GPU", out)
            self.assertNotIn("stream", out)
        self.assertIn("Device-side activity: the device was busy for", text)
        self.assertIn("Host-side activity: calling OpenCL APIs took", text)
        self.assertRegex(text, r"(?m)^ +Device busy .+ of ")
        self.assertIn("; device time ", tree)
        names = [e["args"]["name"] for e in json.loads(chrome)["traceEvents"] if e["ph"] == "M"]
        self.assertIn("queue 1", names)
        self.assertTrue(any(n.startswith("device 0 (pid ") for n in names), names)
        # Geometry: the runtime chose the work-groups of the even launches.
        device = text[text.index("Device-side trace:"):text.index("Verdict:")]
        header = device.splitlines()[1]
        self.assertIn("Threadgroups", header)
        self.assertIn("Global size", header)
        for col in ("Regs", "Shared mem", "Local mem"):
            self.assertNotIn(col, header)
        self.assertRegex(device, r"\n +2 +[\d.]+ m?s +5 µs +- +- +4096 +- +- +10 µs +8 µs +2 µs "
                                 r"+scale\n")
        self.assertRegex(device, r"\n +3 +[\d.]+ m?s +5 µs +16 +256 +4096 +- +- +10 µs +8 µs "
                                 r"+2 µs +scale\n")
        kernels = [e for e in r["device_trace"] if e["kind"] == "kernel"]
        self.assertEqual(len(kernels), 1000)
        self.assertEqual(kernels[0]["grid"], None)
        self.assertEqual(kernels[0]["block"], None)
        self.assertEqual(kernels[0]["global_size"], [4096, 1, 1])
        self.assertEqual(kernels[1]["grid"], [16, 1, 1])
        self.assertEqual(kernels[1]["block"], [256, 1, 1])
        self.assertNotIn("global_size", kernels[1])
        for k in kernels:
            for key in ("registers", "shared_bytes", "local_bytes"):
                self.assertNotIn(key, k)
        self.assertAlmostEqual(kernels[0]["launch_to_start_s"], 10e-6, places=12)
        self.assertAlmostEqual(kernels[0]["queued_to_start_s"], 8e-6, places=12)
        self.assertAlmostEqual(kernels[0]["submitted_to_start_s"], 2e-6, places=12)
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind = 4 AND (registers "
                                    "IS NOT NULL OR static_smem IS NOT NULL OR dynamic_smem IS "
                                    "NOT NULL OR local_mem IS NOT NULL)").fetchone()[0], 0)
        out = os.path.join(self.tmp, "cl.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        ev = [e for e in json.load(open(out))["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(ev[0]["args"]["grid"], None)
        self.assertEqual(ev[0]["args"]["global_size"], [4096, 1, 1])
        self.assertEqual(ev[1]["args"]["block"], [256, 1, 1])
        for e in ev:
            self.assertNotIn("registers", e["args"])
            self.assertNotIn("shared_bytes", e["args"])
        self.assertEqual(ev[0]["args"]["launch_to_start_us"], 10.0)
        self.assertEqual(ev[0]["args"]["queued_to_start_us"], 8.0)
        self.assertEqual(ev[0]["args"]["submitted_to_start_us"], 2.0)

    def test_trace_with_json_and_csv(self):
        # --trace used to be dropped silently with --json and --csv.
        path, _ = self.gen("launch-bound", "--kernels", "20", "--seconds", "0.02")
        r = self.report(path, "--trace")
        self.assertEqual([e["name"] for e in r["host_trace"]], ["cudaLaunchKernel"] * 20)
        self.assertEqual(len(r["device_trace"]), 20)
        k = r["device_trace"][6]
        self.assertEqual((k["id"], k["kind"], k["name"]), (7, "kernel", "small(float*, int)"))
        self.assertEqual((k["grid"], k["block"], k["registers"], k["shared_bytes"]),
                         ([64, 1, 1], [256, 1, 1], 16, 1024))
        self.assertAlmostEqual(k["duration_s"], 5e-6, places=12)
        self.assertAlmostEqual(k["start_s"] - r["host_trace"][6]["start_s"], 50e-6, places=9)
        self.assertEqual(len(self.report(path, "--trace", "--raw")["host_trace"]), 40)
        self.assertNotIn("device_trace", self.report(path))
        p = self.kprof("report", path, "--trace", "--csv", expect=2)
        self.assertIn("--trace does not combine with --csv", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_no_launch_data_no_latency(self):
        # Without correlations or queue times there is nothing to say: no line, no columns, no
        # JSON member, never zeros.
        path, _ = self.gen("launch-bound", "--kernels", "20", "--seconds", "0.02")
        db = sqlite3.connect(path)
        db.execute("UPDATE events SET correlation = NULL, queued_ns = NULL, submitted_ns = NULL")
        db.commit()
        db.close()
        r = self.report(path, "--trace")
        self.assertNotIn("launch_latency", r)
        self.assertTrue(all("launch_to_start_s" not in e and "queued_to_start_s" not in e
                            for e in r["device_trace"]))
        t = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertNotIn("Launch latency", t)
        self.assertNotIn("Launch lat", t)
        self.assertNotIn("Queue wait", t)
        csv = self.kprof("report", path, "--csv", expect=0).stdout
        self.assertNotIn("\nlatency,", csv)

    def test_chrome_export(self):
        path, _ = self.gen("launch-bound", "--kernels", "50", "--seconds", "0.05")
        out = os.path.join(self.tmp, "t.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        doc = json.load(open(out))
        ev = doc["traceEvents"]
        names = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertEqual(len(names), 2)  # the process and its GPU
        kernels = [e for e in ev if e.get("cat") == "kernel"]
        calls = [e for e in ev if e.get("cat") == "api" and e["name"] == "cudaLaunchKernel"]
        self.assertEqual(len(kernels), 50)
        self.assertEqual(len(calls), 50)
        ins = {e["bind_id"] for e in kernels if e.get("flow_in")}
        outs = {e["bind_id"] for e in calls if e.get("flow_out")}
        self.assertEqual(len(ins), 50)
        self.assertEqual(ins, outs)  # every launch has its arrow to its kernel
        polls = [e for e in ev if e.get("name") == "cudaGetLastError"]
        self.assertTrue(all("bind_id" not in e for e in polls))
        for e in ev:
            if e["ph"] == "X":
                self.assertGreaterEqual(e["ts"], 0)
                self.assertGreaterEqual(e["dur"], 0)
        k = kernels[0]
        self.assertEqual(k["args"]["grid"], [64, 1, 1])
        self.assertEqual(k["dur"], 5.0)
        rng = [e for e in ev if e.get("cat") == "nvtx"]
        self.assertEqual(rng[0]["name"], "outer")
        p = self.kprof("export", path, expect=2)
        self.assertIn("--chrome", p.stderr)

    def test_large_chrome_export_is_whole(self):
        # Over 200k events the export runs on two threads; the halves must make one document.
        path, _ = self.gen("launch-bound", "--kernels", "80000", "--seconds", "0.2",
                           "--period-us", "2.5")
        out = os.path.join(self.tmp, "big.json")
        self.kprof("export", path, "--chrome", out, expect=0, timeout=300)
        ev = json.load(open(out))["traceEvents"]
        x = [e for e in ev if e["ph"] == "X"]
        self.assertEqual(len(x), 240001)  # launches, polls, kernels and the range
        ins = [e["bind_id"] for e in x if e.get("flow_in")]
        self.assertEqual(len(ins), 80000)
        self.assertEqual(len(set(ins)), 80000)
        self.assertEqual(set(ins), {e["bind_id"] for e in x if e.get("flow_out")})

    def events_relative(self, path):
        """Every event of a trace, with times relative to its first event, sorted; and the
        process rows' counters."""
        db = sqlite3.connect(path)
        t0 = db.execute("SELECT MIN(start_ns) FROM events").fetchone()[0]
        ev = sorted(db.execute(
            "SELECT e.kind, s.text, e.start_ns - ?, e.end_ns - ?, e.correlation, e.grid_x, "
            "e.registers, e.queued_ns - ?, e.range_id, e.status FROM events e LEFT JOIN strings s "
            "ON s.id = e.name", (t0, t0, t0)).fetchall(), key=repr)
        proc = db.execute("SELECT pid > 0, collector, clean_exit, truncated, events, dropped "
                          "FROM processes").fetchall()
        db.close()
        return ev, proc

    def test_live_merge_is_the_merge_after(self):
        # Records written in 20 marked batches over 0.6 s are merged while the program runs
        # (KPROF_TRACE_TIMES says how many events were); the trace is the one a merge after the
        # program makes (KPROF_TRACE_LIVE=0), event for event. How much is merged live depends
        # on the machine's speed, so only the result is asserted.
        args = ("launch-bound", "--kernels", "3000", "--seconds", "0.6", "--period-us", "150",
                "--chunks", "20")
        live, p = self.trace(sys.executable, GEN, *args, name="live.kprof",
                             env={"KPROF_TRACE_TIMES": "1"})
        self.assertRegex(p.stderr, r"kprof: times: program [0-9.]+ s, .* \(\d+ events merged "
                                   r"while the program ran, \d+ after\)")
        after, _ = self.trace(sys.executable, GEN, *args, name="after.kprof",
                              env={"KPROF_TRACE_LIVE": "0"})
        ev_live, proc_live = self.events_relative(live)
        ev_after, proc_after = self.events_relative(after)
        self.assertEqual(len(ev_live), 9001)
        self.assertEqual(ev_live, ev_after)
        self.assertEqual(proc_live, [(1, "cuda", 1, 0, 9001, 0)])
        self.assertEqual(proc_live, proc_after)
        self.assertEqual(self.report(live)["completeness"], self.report(after)["completeness"])

    def test_live_merge_of_a_crash(self):
        # Batches merged live, then a crash: the rest is read up to the last whole record.
        path, p = self.gen("crash", "--kernels", "400", "--seconds", "0.3", "--chunks", "8",
                           expect=128 + 11)
        r = self.report(path)
        self.assertEqual(r["events"], 1201)
        self.assertEqual(r["completeness"]["processes_not_closed"], 1)

    def test_sqlite_schema_is_queryable(self):
        path, _ = self.gen("launch-bound", "--kernels", "10", "--seconds", "0.02")
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("PRAGMA application_id").fetchone()[0], 0x4B50524F)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 3)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        # Format 3: the run's own clock pairs (process NULL), where it ran.
        self.assertEqual(db.execute("SELECT COUNT(*) FROM clocks WHERE process IS NULL")
                         .fetchone()[0], 2)
        self.assertIn("host", meta)
        self.assertEqual(meta["format"], "kprof-trace")
        self.assertIn("gen_trace.py launch-bound", meta["command"])
        self.assertEqual(int(meta["exit_status"]), 0)
        rows = db.execute("SELECT a.name, k.name FROM event_view a JOIN event_view k ON "
                          "k.process = a.process AND k.correlation = a.correlation WHERE a.kind = 'api' "
                          "AND k.kind = 'kernel'").fetchall()
        self.assertEqual(len(rows), 10)
        # Format 2: which calls launched device work is the join above (no launched column);
        # time order is the index on start_ns.
        cols = [r[1] for r in db.execute("PRAGMA table_info(events)")]
        self.assertNotIn("launched", cols)
        self.assertEqual([r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                                   "'index' AND tbl_name = 'events'")],
                         ["events_start"])
        plan = " ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN SELECT * FROM events "
                                                  "ORDER BY start_ns"))
        self.assertIn("events_start", plan)
        proc = db.execute("SELECT clean_exit, truncated FROM processes").fetchall()
        self.assertEqual(proc, [(1, 0)])

    def test_dropped_records_are_shown(self):
        path, p = self.gen("dropped", "--kernels", "5", "--seconds", "0.02")
        self.assertIn("7 records dropped", p.stderr)
        r = self.report(path)
        self.assertEqual(r["dropped"], 7)
        self.assertEqual(r["completeness"], {"records_dropped": 7, "device_ops_without_call": 0,
                                             "calls_without_device_work": 0,
                                             "processes_not_closed": 0})
        self.assertIn("\nCompleteness: 7 records dropped, 0 device operations whose launching "
                      "calls were not recorded, 0 calls whose device work never arrived, 0 "
                      "processes that ended without closing\n",
                      self.kprof("report", path, expect=0).stdout)

    def test_crash_leaves_a_readable_trace(self):
        path, p = self.gen("crash", "--kernels", "30", "--seconds", "0.05", expect=128 + 11)
        self.assertIn("killed by signal 11", p.stderr)
        self.assertIn("ended without closing its record", p.stderr)
        r = self.report(path)
        self.assertEqual(r["verdict"]["kernels"], 30)
        self.assertEqual(r["completeness"]["processes_not_closed"], 1)

    def test_no_gpu_activity(self):
        path, p = self.trace("true")
        self.assertIn("no GPU activity was captured", p.stderr)
        self.assertIn("Likely reasons", p.stderr)
        r = self.report(path)
        self.assertEqual(r["events"], 0)
        self.assertEqual(r["verdict"]["kind"], "no-device-activity")

    def test_exit_code_and_usage(self):
        self.trace("sh", "-c", "exit 3", expect=3, name="three.kprof")
        # A program that cannot be run is bad input: no trace, nothing left behind.
        for prog in ("/nonexistent/program", "no-such-command-kprof", self.tmp):
            out = os.path.join(self.tmp, "x.kprof")
            p = self.kprof("trace", "-o", out, "--", prog, expect=2)
            self.assertIn("cannot run %s" % prog, p.stderr)
            self.assertFalse(os.path.exists(out))
            self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith("x.kprof")], [])
        # A program that runs and fails to run another is the program's business.
        self.trace("sh", "-c", "no-such-command-kprof", expect=127, name="sh127.kprof")
        self.kprof("trace", expect=2)
        path, _ = self.trace("true", name="dup.kprof")
        p = self.kprof("trace", "-o", path, "--", "true", expect=2)
        self.assertIn("--force", p.stderr)
        self.kprof("trace", "-o", path, "--force", "--", "true", expect=0)
        p = self.kprof("trace", "-o", self.tmp, "--", "true", expect=2)
        self.assertIn("is a folder", p.stderr)
        # The program's own options are its own, its --help too; kprof's come before it.
        self.trace("sh", "-c", "exit 0", "-o", "ignored", expect=0, name="own.kprof")
        p = self.trace("sh", "-c", "echo ran $0", "-h", name="help.kprof")[1]
        self.assertEqual(p.stdout.strip(), "ran -h")
        self.assertIn("usage: kprof trace", self.kprof("trace", "--help", expect=0).stdout)
        p = self.kprof("trace", "-o", os.path.join(self.tmp, "y.kprof"), "--", "true",
                       env={"CUDA_INJECTION64_PATH": "/other/profiler.so"}, expect=3)
        self.assertIn("another profiler is injected", p.stderr)

    def test_output_is_not_the_command(self):
        # The trace never replaces the program being traced, nor a file its command line names,
        # --force or not, whether the file exists yet or not (same inode, or the same name once
        # the folders are resolved).
        app = os.path.join(self.tmp, "app")
        shutil.copy("/bin/true", app)
        before = open(app, "rb").read()
        sub = os.path.join(self.tmp, "sub")
        os.mkdir(sub)
        os.symlink(app, os.path.join(self.tmp, "link"))
        cases = [
            (["-o", "./app", "--force", "--", "./app"], "is the program being traced"),
            (["-o", "app", "--", app], "is the program being traced"),
            (["-o", "link", "--force", "--", "./app"], "is the program being traced"),
            (["-o", "sub/../app", "--force", "--", "./app"], "is the program being traced"),
            (["-o", "in.kprof", "--force", "--", "cp", "sub/../in.kprof", "x"],
             "argument 1, 'sub/../in.kprof'"),
            (["-o", "new.kprof", "--", "sh", "-c", "true", "--out=./new.kprof"],
             "argument 3, './new.kprof'"),
        ]
        for args, words in cases:
            p = self.kprof("trace", *args, expect=2)
            self.assertIn(words, p.stderr, args)
            self.assertEqual(open(app, "rb").read(), before, args)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "new.kprof")))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["app", "link", "sub"])
        # A name that is merely alike is fine.
        self.kprof("trace", "-o", "app.kprof", "--", "./app", expect=0)

    def test_environment_of_the_program(self):
        # What the collectors are told travels in the environment; the program sees it, and
        # nothing inherited may turn on what the user did not ask for.
        show = "echo $KPROF_CUDA_QUEUE_TIMES+$OPENCL_LAYERS+$LD_PRELOAD+$NVTX_INJECTION64_PATH"
        env = {"KPROF_CUDA_QUEUE_TIMES": "1", "OPENCL_LAYERS": "/their/layer.so"}
        p = self.trace("sh", "-c", show, env=env, name="env1.kprof")[1]
        queue, layers, preload, _ = p.stdout.strip().split("+")
        self.assertEqual(queue, "")
        inject = layers.split(":")[-1]
        self.assertTrue(inject.endswith("libkprof-inject.so"), layers)
        self.assertEqual(layers.split(":")[0], "/their/layer.so")  # theirs first, ours outermost
        self.assertEqual(preload.split(":")[0], inject)
        p = self.kprof("trace", "-o", os.path.join(self.tmp, "env2.kprof"), "--queue-times",
                       "--", "sh", "-c", show, expect=0)
        self.assertEqual(p.stdout.split("+")[0], "1")

    def test_default_name(self):
        self.kprof("trace", "--", "true", expect=0)
        self.kprof("trace", "--", "true", expect=0)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "trace_1.kprof")))
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "trace_2.kprof")))

    def test_bad_trace_files(self):
        junk = self.write("junk.kprof", "this is not a database at all " * 100)
        p = self.kprof("report", junk, expect=2)
        self.assertIn("is not a kprof trace", p.stderr)
        other = os.path.join(self.tmp, "other.db")
        db = sqlite3.connect(other)
        db.execute("CREATE TABLE t (x)")
        db.commit()
        db.close()
        p = self.kprof("report", other, expect=2)
        self.assertIn("an SQLite database of something else", p.stderr)
        path, _ = self.gen("launch-bound", "--kernels", "3000", "--seconds", "0.05")
        data = open(path, "rb").read()
        cut = self.write("cut.kprof", "")
        with open(cut, "wb") as f:
            f.write(data[:len(data) // 2])
        for cmd in (("report", cut), ("export", cut, "--chrome", os.path.join(self.tmp, "c.json"))):
            p = self.kprof(*cmd, expect=2)
            self.assertIn("damaged or truncated", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "c.json")))
        self.kprof("report", os.path.join(self.tmp, "missing.kprof"), expect=2)
        self.kprof("report", self.tmp, expect=2)
        self.kprof("report", path, "--json", "--csv", expect=2)


if __name__ == "__main__":
    kptest.main()
