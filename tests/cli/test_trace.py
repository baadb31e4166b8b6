"""kprof trace, report and export on synthetic programs whose timelines are known exactly
(tests/cli/gen_trace.py writes the records a collector would), plus the command's own
behaviour: exit codes, no GPU activity, dropped records, crashes, bad trace files."""

import json
import os
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
        v = r["verdict"]
        self.assertEqual(v["kind"], "launch-bound")
        self.assertEqual(v["kernels"], 500)
        self.assertEqual(v["small_dispatch_fraction"], 1)
        self.assertEqual(v["idle_gaps"], 499)
        self.assertAlmostEqual(v["gpu_busy_fraction"], r["gpu_busy_s"] / r["wall_s"], places=9)
        self.assertIn("kernel tuning cannot move the headline", v["sentence"])
        raw = self.report(path, "--raw")
        self.assertIn("cudaGetLastError", [g["name"] for g in raw["host"]])

    def test_text_report_and_trace(self):
        path, _ = self.gen("launch-bound", "--kernels", "200", "--seconds", "0.05")
        out = self.kprof("report", path, expect=0).stdout
        self.assertRegex(out, r"^Profiler ran for [\d.]+ ms, capturing 601 events\.")
        for text in ("Host-side activity: calling GPU APIs took", "Device-side activity: GPU was "
                     "busy for", "Time (%)", "Total time", "Calls", "Time distribution", "NVTX "
                     "ranges:", "Verdict: launch-bound", "launches", "under 0.05 ms"):
            self.assertIn(text, out)
        self.assertIn("40 µs ± 0", out)
        t = self.kprof("report", path, "--trace", expect=0).stdout
        host = t[t.index("Host-side trace:"):t.index("Device-side trace:")]
        device = t[t.index("Device-side trace:"):t.index("Verdict:")]
        self.assertIn("Threadgroups", device)
        self.assertIn("Regs", device)
        self.assertIn("Shared mem", device)
        self.assertNotIn("Size", device)  # no copies: the column is left out
        # IDs correlate: call 7's kernel has ID 7 too.
        self.assertRegex(host, r"\n +7 +[\d.]+ ms +40 µs +1 +cudaLaunchKernel")
        self.assertRegex(device, r"\n +7 +[\d.]+ ms +5 µs +64 +256 +16 +1 KiB +small")

    def test_device_bound_program_and_copies(self):
        path, _ = self.gen("device-bound", "--kernels", "20", "--seconds", "1.5")
        r = self.report(path)
        self.assertEqual(r["verdict"]["kind"], "device-bound")
        names = [g["name"] for g in r["device"]]
        self.assertEqual(names, ["big", "[CUDA memcpy DtoH]"])
        self.assertGreater(r["verdict"]["host_sync_s"], 0.1)
        t = self.kprof("report", path, "--trace", expect=0).stdout
        self.assertIn("Size", t)
        self.assertIn("1 MiB", t)
        self.assertIn("GB/s", t)
        csv = self.kprof("report", path, "--csv", expect=0).stdout.splitlines()
        self.assertEqual(csv[0], "table,name,calls,total_s,percent_of_wall,mean_s,std_s,min_s,max_s")
        self.assertTrue(any(l.startswith("device,big,20,") for l in csv))
        self.assertTrue(any(l.startswith('device,[CUDA memcpy DtoH],1,') for l in csv))

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
        path, _ = self.gen("launch-bound", "--kernels", "80000", "--seconds", "0.2")
        out = os.path.join(self.tmp, "big.json")
        self.kprof("export", path, "--chrome", out, expect=0, timeout=300)
        ev = json.load(open(out))["traceEvents"]
        x = [e for e in ev if e["ph"] == "X"]
        self.assertEqual(len(x), 240001)  # launches, polls, kernels and the range
        ins = [e["bind_id"] for e in x if e.get("flow_in")]
        self.assertEqual(len(ins), 80000)
        self.assertEqual(len(set(ins)), 80000)
        self.assertEqual(set(ins), {e["bind_id"] for e in x if e.get("flow_out")})

    def test_sqlite_schema_is_queryable(self):
        path, _ = self.gen("launch-bound", "--kernels", "10", "--seconds", "0.02")
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("PRAGMA application_id").fetchone()[0], 0x4B50524F)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 1)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        self.assertEqual(meta["format"], "kprof-trace")
        self.assertIn("gen_trace.py launch-bound", meta["command"])
        self.assertEqual(int(meta["exit_status"]), 0)
        rows = db.execute("SELECT a.name, k.name FROM event_view a JOIN event_view k ON "
                          "k.process = a.process AND k.correlation = a.correlation WHERE a.kind = 'api' "
                          "AND k.kind = 'kernel'").fetchall()
        self.assertEqual(len(rows), 10)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE launched = 1").fetchone()[0],
                         10)
        proc = db.execute("SELECT clean_exit, truncated FROM processes").fetchall()
        self.assertEqual(proc, [(1, 0)])

    def test_dropped_records_are_shown(self):
        path, p = self.gen("dropped", "--kernels", "5", "--seconds", "0.02")
        self.assertIn("7 records dropped", p.stderr)
        self.assertEqual(self.report(path)["dropped"], 7)
        self.assertIn("(7 records dropped)", self.kprof("report", path, expect=0).stdout)

    def test_crash_leaves_a_readable_trace(self):
        path, p = self.gen("crash", "--kernels", "30", "--seconds", "0.05", expect=128 + 11)
        self.assertIn("killed by signal 11", p.stderr)
        self.assertIn("ended without closing its record", p.stderr)
        r = self.report(path)
        self.assertEqual(r["verdict"]["kernels"], 30)

    def test_no_gpu_activity(self):
        path, p = self.trace("true")
        self.assertIn("no GPU activity was captured", p.stderr)
        self.assertIn("Likely reasons", p.stderr)
        r = self.report(path)
        self.assertEqual(r["events"], 0)
        self.assertEqual(r["verdict"]["kind"], "no-device-activity")

    def test_exit_code_and_usage(self):
        self.trace("sh", "-c", "exit 3", expect=3, name="three.kprof")
        p = self.kprof("trace", "-o", os.path.join(self.tmp, "x.kprof"), "--",
                       "/nonexistent/program", expect=127)
        self.assertIn("cannot run /nonexistent/program", p.stderr)
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
