"""kprof diff: two traces from gen_trace.py whose every duration is fixed by the records (the
two-kernels pattern: 'tuned' made 20% slower, a kernel 'extra' added), two bench.json files
written here with known samples, and bad inputs. Nothing here runs a kernel or depends on how
fast the machine is: the wall of a trace holds the interpreter's start-up, and the verdicts the
tests read are those the records decide (GPU idle over 99% of the wall, whatever it lasts)."""

import json
import os
import sqlite3
import sys

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")


def bench_point(name, base_ms, n=60, cache="hot", rounds=60, entry=None, source=None):
    """A point of a bench.json: n samples within +-0.5% of base_ms, none alike in a row."""
    samples = [base_ms * (1 + ((i * 37) % 11 - 5) * 1e-3) for i in range(n)]
    kernel = {"samples_ms": samples, "rounds": rounds}
    if entry is not None:
        kernel.update(entry=entry, source=source or "")
    return {"point": name, "cache": cache, "kernels": [kernel]}


def bench_file(points, device="Fake GPU"):
    return {"version": 1, "kind": "bench", "device": device, "points": points}


class Diff(kptest.KprofTestCase):
    needs_opencl = False

    def gen(self, name, *extra):
        return self.gen_pattern(name, "two-kernels", *extra)

    def gen_pattern(self, name, pattern, *extra):
        out = os.path.join(self.tmp, name)
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, pattern, *extra, expect=0)
        return out

    def pair(self, kernels="40"):
        a = self.gen("a.kprof", "--kernels", kernels)
        b = self.gen("b.kprof", "--kernels", kernels, "--slower", "20", "--extra")
        return a, b

    def diff_json(self, *args, expect=0):
        p = self.kprof("diff", *args, "--json", expect=expect)
        return json.loads(p.stdout)

    @staticmethod
    def rows(d):
        return {(table, r["name"]): r for table in ("device", "host", "ranges")
                for r in d[table]}

    def test_trace_with_itself(self):
        a = self.gen("a.kprof", "--kernels", "40")
        d = self.diff_json(a, a, "--fail-if-slower", "1")
        rows = self.rows(d)
        self.assertEqual(set(rows), {("device", "steady"), ("device", "tuned"),
                                     ("host", "cudaLaunchKernel"), ("ranges", "iter")})
        for (table, _), r in rows.items():
            # Host calls and ranges are listed, not judged (without --judge-host).
            self.assertEqual(r["status"], "same" if table == "device" else "not-judged", r)
            self.assertEqual(r["judged"], table == "device")
            self.assertFalse(r["changed"])
            self.assertFalse(r["fails_gate"])
            if table == "device":
                self.assertEqual(r["comparison"]["ratio"], 1)
                self.assertEqual(r["verdict"], "SAME")
            else:
                self.assertIsNone(r["comparison"])
                self.assertIsNone(r["verdict"])
            self.assertEqual(r["delta"], {"count": 0, "total_s": 0, "median_s": 0})
        self.assertEqual(d["summary"]["differences"], 0)
        self.assertEqual(d["summary"]["only-in-a"] + d["summary"]["only-in-b"], 0)
        self.assertEqual(d["verdict_changed"], {"wall": False, "active": False})
        self.assertFalse(d["fails_gate"])
        out = self.kprof("diff", a, a, "--fail-if-slower", "1", expect=0).stdout
        self.assertIn("\n0 differences: 0 slower, 0 faster, 0 only in A, 0 only in B; 0 unsure, "
                      "2 the same, 0 with n too small (< 5 instances in A or B); 2 not judged "
                      "(host calls and ranges: --judge-host)", out)
        self.assertNotIn("SLOWER", out)
        self.assertNotIn("only in B ", out)
        self.assertIn("Verdict over the wall: A host-bound, B host-bound — unchanged", out)

    def test_slower_kernel_and_extra_kernel(self):
        a, b = self.pair()
        d = self.diff_json(a, b)
        rows = self.rows(d)
        changed = {k for k, r in rows.items() if r["changed"]}
        self.assertEqual(changed, {("device", "tuned"), ("device", "extra")})
        tuned = rows[("device", "tuned")]
        self.assertEqual(tuned["status"], "slower")
        self.assertEqual(tuned["kind"], "kernel")
        self.assertEqual((tuned["a"]["count"], tuned["b"]["count"]), (40, 40))
        self.assertAlmostEqual(tuned["ratio"]["median"], 1.2, places=3)
        c = tuned["comparison"]
        self.assertEqual(c["verdict"], "SLOWER")
        self.assertGreater(c["ci"][0], 1.19)
        self.assertLess(c["ci"][1], 1.21)
        self.assertLessEqual(c["ci"][0], c["ratio"])
        self.assertLessEqual(c["ratio"], c["ci"][1])
        # 40 instances of 50 us (+0..100 ns) each, 20% longer: 400 us more in all.
        self.assertAlmostEqual(tuned["delta"]["total_s"], 40 * 50e-6 * 0.2, delta=1e-6)
        extra = rows[("device", "extra")]
        self.assertEqual(extra["status"], "only-in-b")
        self.assertIsNone(extra["a"])
        self.assertIsNone(extra["comparison"])
        self.assertEqual(extra["b"]["count"], 40)
        self.assertAlmostEqual(extra["b"]["median_s"], 10e-6, delta=1e-7)
        # Everything else: the same, even where the count changed (a launch more per iteration).
        self.assertEqual(rows[("device", "steady")]["status"], "same")
        launch = rows[("host", "cudaLaunchKernel")]
        self.assertEqual(launch["status"], "not-judged")
        self.assertEqual(launch["delta"]["count"], 40)
        self.assertEqual(rows[("ranges", "iter")]["status"], "not-judged")
        s = d["summary"]
        self.assertEqual((s["slower"], s["only-in-b"], s["faster"], s["only-in-a"], s["unsure"],
                          s["n-too-small"], s["same"], s["not-judged"], s["differences"]),
                         (1, 1, 0, 0, 0, 0, 1, 2, 2))
        # --judge-host judges them too: the launch calls did not change.
        r = self.rows(self.diff_json(a, b, "--judge-host"))
        self.assertEqual(r[("host", "cudaLaunchKernel")]["status"], "same")
        self.assertEqual(r[("ranges", "iter")]["status"], "same")
        # Sorted by the change of total time: the added kernel (402 us) before 'tuned' (400 us).
        self.assertEqual([r["name"] for r in d["device"]], ["extra", "tuned", "steady"])
        # Each trace's verdict is the one kprof report prints.
        for side, path in (("a", a), ("b", b)):
            report = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
            v = d[side]["verdict"]
            self.assertEqual(v["wall"]["kind"], report["verdict"]["kind"])
            self.assertEqual(v["active"]["kind"], report["verdict"]["active"]["kind"])
            self.assertEqual(v["active"]["sentence"], report["verdict"]["active"]["sentence"])
            self.assertEqual(v["wall"]["kind"], "host-bound")
        self.assertEqual(d["verdict_changed"], {"wall": False, "active": False})
        # The other way round: faster, and only in A.
        r = self.rows(self.diff_json(b, a))
        self.assertEqual(r[("device", "tuned")]["status"], "faster")
        self.assertEqual(r[("device", "extra")]["status"], "only-in-a")
        # Text: the same findings, and no verdict that is not there.
        out = self.kprof("diff", a, b, expect=0).stdout
        self.assertRegex(out, r"\n +\+[\d.]+ µs +- +[\d.]+ µs +- +40 +- +10\.\d+ µs +- +only in B"
                              r" +extra  grid 16384 tg 256 smem 0\n")
        self.assertRegex(out, r"1\.200 \[1\.\d{3}, 1\.\d{3}\] +SLOWER +tuned  grid 16384 tg 256 "
                              r"smem 0\n")
        self.assertIn("\n2 differences: 1 slower, 0 faster, 0 only in A, 1 only in B; 0 unsure, "
                      "1 the same, 0 with n too small", out)
        self.assertNotIn("UNSURE", out)

    def test_fail_if_slower(self):
        a, b = self.pair()
        p = self.kprof("diff", a, b, "--fail-if-slower", "5", expect=5)
        self.assertIn("tuned  grid 16384 tg 256 smem 0 is slower by more than --fail-if-slower 5%",
                      p.stdout)
        d = self.diff_json(a, b, "--fail-if-slower", "5", expect=5)
        self.assertTrue(d["fails_gate"])
        self.assertEqual(d["fail_if_slower"], 0.05)
        self.assertEqual([r["name"] for r in d["device"] if r["fails_gate"]], ["tuned"])
        # 20% slower is not slower by more than 25%; an added kernel is no regression.
        self.kprof("diff", a, b, "--fail-if-slower", "25", expect=0)
        self.kprof("diff", a, b, "--fail-if-slower", "5%", "--by", "path", expect=5)
        # --threshold widens the SAME band as kprof bench's does.
        d = self.diff_json(a, b, "--threshold", "25")
        self.assertEqual(self.rows(d)[("device", "tuned")]["status"], "same")
        help_text = self.kprof("diff", "--help", expect=0).stdout
        self.assertIn("Exit code 5 when --fail-if-slower finds a regression", help_text)
        self.assertIn("kprof diff", self.kprof("--help", expect=0).stdout)

    def test_by_path(self):
        a, b = self.pair()
        d = self.diff_json(a, b, "--by", "path")
        self.assertEqual(d["by"], "path")
        rows = self.rows(d)
        self.assertEqual(set(rows), {("device", "iter/cudaLaunchKernel/steady"),
                                     ("device", "iter/cudaLaunchKernel/tuned"),
                                     ("device", "iter/cudaLaunchKernel/extra"),
                                     ("host", "iter/cudaLaunchKernel"), ("ranges", "iter")})
        self.assertEqual(rows[("device", "iter/cudaLaunchKernel/tuned")]["status"], "slower")
        self.assertEqual(rows[("device", "iter/cudaLaunchKernel/extra")]["status"], "only-in-b")
        self.assertEqual({k for k, r in rows.items() if r["changed"]},
                         {("device", "iter/cudaLaunchKernel/tuned"),
                          ("device", "iter/cudaLaunchKernel/extra")})
        out = self.kprof("diff", a, b, "--by", "path", "--top", "1", expect=0).stdout
        self.assertIn("iter/cudaLaunchKernel/extra\n  … 2 more rows (--json lists them all)", out)

    def test_too_few_instances(self):
        a = self.gen("a.kprof", "--kernels", "3")
        b = self.gen("b.kprof", "--kernels", "3", "--slower", "20")
        d = self.diff_json(a, b, "--fail-if-slower", "5")
        tuned = self.rows(d)[("device", "tuned")]
        self.assertEqual(tuned["status"], "n-too-small")
        self.assertEqual(tuned["note"], "n too small")
        self.assertIsNone(tuned["comparison"])
        self.assertFalse(tuned["changed"])
        self.assertAlmostEqual(tuned["delta"]["total_s"], 3 * 50e-6 * 0.2, delta=1e-7)
        self.assertAlmostEqual(tuned["ratio"]["median"], 1.2, places=3)
        self.assertFalse(d["fails_gate"])  # no verdict, no regression
        out = self.kprof("diff", a, b, "--fail-if-slower", "5", expect=0).stdout
        self.assertRegex(out, r"\+30\.\d+ µs .* n too small +tuned  grid 16384 tg 256 smem 0\n")

    def test_run_allowance(self):
        a, b = self.pair()
        d = self.diff_json(a, b)
        self.assertEqual(d["run_allowance"], 0.10)
        self.assertEqual(self.diff_json(a, b, "--run-allowance", "3")["run_allowance"], 0.03)
        p = self.kprof("diff", a, b, "--run-allowance", "x", expect=2)
        self.assertIn("--run-allowance", p.stderr)

    def test_json_shape(self):
        a, b = self.pair()
        d = self.diff_json(a, b)
        self.assertEqual(list(d), ["version", "kind", "by", "threshold", "fail_if_slower",
                                   "min_instances", "min_effect_us", "min_share", "run_allowance",
                                   "device_s",
                                   "judge_host", "polling_calls", "a", "b", "verdict_changed",
                                   "device", "host", "ranges", "summary", "fails_gate"])
        self.assertEqual((d["version"], d["kind"], d["by"], d["threshold"], d["min_instances"],
                          d["min_effect_us"], d["min_share"], d["judge_host"]),
                         (1, "trace-diff", "shape", 0.01, 5, 1, 0.001, False))
        self.assertIsNone(d["fail_if_slower"])
        self.assertEqual(list(d["a"]), ["trace", "command", "wall_s", "events", "verdict"])
        self.assertEqual(d["a"]["trace"], a)
        self.assertEqual(list(d["a"]["verdict"]), ["wall", "active"])
        self.assertEqual(list(d["a"]["verdict"]["wall"]),
                         ["kind", "duration_s", "gpu_busy_fraction", "sentence"])
        row = self.rows(d)[("device", "tuned")]
        self.assertEqual(list(row), ["name", "kind", "key", "grid", "tg", "smem_bytes", "status",
                                     "changed", "judged", "verdict", "reason", "reasons", "a",
                                     "b", "delta", "ratio", "comparison", "note"])
        self.assertEqual((row["key"], row["grid"], row["tg"], row["smem_bytes"]),
                         ("tuned  grid 16384 tg 256 smem 0", [16384, 1, 1], [256, 1, 1], 0))
        host = self.rows(d)[("host", "cudaLaunchKernel")]
        self.assertEqual(list(host), ["name", "kind", "status", "changed", "judged", "verdict",
                                      "reason", "reasons", "a", "b", "delta", "ratio",
                                      "comparison", "note"])
        self.assertEqual((host["judged"], host["verdict"], host["reasons"]), (False, None, []))
        self.assertEqual(list(row["a"]), ["count", "total_s", "median_s"])
        self.assertEqual(list(row["delta"]), ["count", "total_s", "median_s"])
        self.assertEqual(list(row["ratio"]), ["total", "median"])
        self.assertEqual(list(row["comparison"]),
                         ["ratio", "ci", "level", "interval_verdict", "verdict"])
        self.assertEqual(list(d["summary"]),
                         ["slower", "faster", "unsure", "same", "under-minimum", "n-too-small",
                          "no-verdict", "only-in-a", "only-in-b", "not-judged", "differences"])
        # The same inputs, the same answer (the bootstrap is seeded).
        self.assertEqual(d, self.diff_json(a, b))

    def test_colour_on_a_terminal_only(self):
        a, b = self.pair()
        self.env["NO_COLOR"] = None
        rc, out = self.on_terminal("diff", a, b)
        self.assertEqual(rc, 0)
        self.assertIn(b"\x1b[31mSLOWER", out)
        plain = self.kprof("diff", a, b, env={"NO_COLOR": None}, expect=0).stdout
        self.assertNotIn("\x1b[", plain)  # not a terminal: no colour

    def write_json(self, name, doc):
        return self.write(name, json.dumps(doc))

    def test_bench_results(self):
        a = self.write_json("a.json", bench_file([bench_point("N=1M", 1.0),
                                                  bench_point("N=4M", 4.0),
                                                  bench_point("N=16M", 16.0),
                                                  bench_point("N=1M", 3.0, cache="cold")]))
        b = self.write_json("b.json", bench_file([bench_point("N=1M", 1.0),
                                                  bench_point("N=4M", 4.8),
                                                  bench_point("N=16M", 16.0, n=3),
                                                  bench_point("N=64M", 64.0),
                                                  bench_point("N=1M", 2.4, cache="cold")]))
        d = self.diff_json(a, b)
        self.assertEqual(list(d), ["version", "kind", "threshold", "fail_if_slower",
                                   "min_samples", "a", "b", "different_kernels", "points",
                                   "summary", "fails_gate"])
        self.assertIsNone(d["different_kernels"])
        self.assertEqual(d["kind"], "result-diff")
        self.assertEqual((d["a"]["input"], d["a"]["path"], d["a"]["device"]),
                         ("bench", a, "Fake GPU"))
        points = {(p["point"], p["cache"]): p for p in d["points"]}
        self.assertEqual([(p["point"], p["cache"]) for p in d["points"]],
                         [("N=1M", "hot"), ("N=4M", "hot"), ("N=16M", "hot"), ("N=1M", "cold"),
                          ("N=64M", "hot")])
        self.assertEqual(points[("N=1M", "hot")]["status"], "same")
        slow = points[("N=4M", "hot")]
        self.assertEqual(slow["status"], "slower")
        self.assertAlmostEqual(slow["comparison"]["ratio"], 1.2, places=3)
        self.assertFalse(slow["comparison"]["paired"])
        self.assertEqual(slow["comparison"]["verdict"], "SLOWER")
        self.assertEqual(slow["a"]["samples"], 60)
        self.assertEqual(points[("N=1M", "cold")]["status"], "faster")
        self.assertEqual(points[("N=16M", "hot")]["status"], "n-too-small")
        self.assertIsNone(points[("N=16M", "hot")]["comparison"])
        self.assertEqual(points[("N=64M", "hot")]["status"], "only-in-b")
        self.assertIsNone(points[("N=64M", "hot")]["a"])
        self.assertEqual(d["summary"]["differences"], 3)
        # kprof bench --compare's numbers: the same comparison, read from the other side.
        self.kprof("diff", a, b, "--fail-if-slower", "10", expect=5)
        self.kprof("diff", a, b, "--fail-if-slower", "25", expect=0)
        self.kprof("diff", a, a, "--fail-if-slower", "1", expect=0)
        same = self.diff_json(a, a)
        self.assertEqual({p["status"] for p in same["points"]}, {"same"})
        out = self.kprof("diff", a, b, expect=0).stdout
        self.assertRegex(out, r"N=4M +hot +4 +4\.8 +60 +60 +1\.2000 \[1\.\d{4}, 1\.\d{4}\] +"
                              r"SLOWER\n")
        self.assertRegex(out, r"N=64M +hot +- +64 +- +60 +- +only in B\n")
        self.assertIn("3 differences: 1 slower, 1 faster, 0 only in A, 1 only in B", out)
        # Two devices: said, not refused.
        c = self.write_json("c.json", bench_file([bench_point("N=1M", 1.0)], device="Other"))
        p = self.kprof("diff", a, c, expect=0)
        self.assertIn("A was measured on Fake GPU, B on Other", p.stderr)
        self.kprof("diff", a, b, "--by", "path", expect=2)

    def test_launch_shapes(self):
        # One kernel name launched with two geometries is two rows, each judged on its own;
        # --by name merges them as before.
        a = self.gen_pattern("a.kprof", "shapes", "--kernels", "30")
        b = self.gen_pattern("b.kprof", "shapes", "--kernels", "30", "--slower", "20")
        d = self.diff_json(a, b)
        self.assertEqual(d["by"], "shape")
        gemm = sorted((r for r in d["device"] if r["name"] == "gemm"), key=lambda r: r["grid"])
        self.assertEqual([(r["key"], r["grid"], r["tg"], r["smem_bytes"]) for r in gemm],
                         [("gemm  grid 16384 tg 256 smem 0", [16384, 1, 1], [256, 1, 1], 0),
                          ("gemm  grid 262144 tg 256 smem 0", [262144, 1, 1], [256, 1, 1], 0)])
        self.assertEqual([(r["a"]["count"], r["b"]["count"]) for r in gemm], [(30, 30), (30, 30)])
        small, large = gemm
        self.assertAlmostEqual(small["a"]["median_s"], 20e-6, delta=1e-7)
        self.assertAlmostEqual(large["a"]["median_s"], 80e-6, delta=1e-7)
        self.assertEqual(small["status"], "same")  # the records fix every duration
        self.assertEqual(large["status"], "slower")
        out = self.kprof("diff", a, b, expect=0).stdout
        self.assertIn("  gemm  grid 16384 tg 256 smem 0\n", out)
        self.assertIn("  gemm  grid 262144 tg 256 smem 0\n", out)
        # By name: one row of both shapes' instances, no shape fields.
        d = self.diff_json(a, b, "--by", "name")
        self.assertEqual(d["by"], "name")
        gemm = [r for r in d["device"] if r["name"] == "gemm"]
        self.assertEqual(len(gemm), 1)
        self.assertEqual((gemm[0]["a"]["count"], gemm[0]["b"]["count"]), (60, 60))
        self.assertNotIn("grid", gemm[0])
        self.assertNotIn("grid 16384", self.kprof("diff", a, b, "--by", "name", expect=0).stdout)
        # By path: the call path, shapes together (as before).
        rows = self.rows(self.diff_json(a, b, "--by", "path"))
        self.assertEqual(rows[("device", "step/cudaLaunchKernel/gemm")]["a"]["count"], 60)
        # OpenCL launches with and without a local size: the runtime's choice is a shape of its
        # own ("tg auto", tg null); a trace without shared memory sizes shows none.
        cl = self.gen_pattern("cl.kprof", "opencl", "--kernels", "20")
        scale = sorted(((r["key"], r["grid"], r["tg"], r["smem_bytes"], r["a"]["count"])
                        for r in self.diff_json(cl, cl)["device"] if r["name"] == "scale"),
                       key=str)
        self.assertEqual(scale, [("scale  grid 4096 tg 256", [4096, 1, 1], [256, 1, 1], None, 10),
                                 ("scale  grid 4096 tg auto", [4096, 1, 1], None, None, 10)])

    def test_minimum_effect(self):
        # 'tiny' is 20% slower, but by 400 ns an instance: under the minimum effect (1 us).
        a = self.gen_pattern("a.kprof", "shapes", "--kernels", "30")
        b = self.gen_pattern("b.kprof", "shapes", "--kernels", "30", "--slower", "20")
        d = self.diff_json(a, b)
        tiny = self.rows(d)[("device", "tiny")]
        self.assertEqual((tiny["status"], tiny["verdict"], tiny["changed"]),
                         ("under-minimum", None, False))
        self.assertIn("small", tiny["reasons"])  # the engine's reason codes (core/judge.h)
        self.assertIn("under the minimum effect of 1 µs", tiny["reason"])
        self.assertEqual(tiny["comparison"]["interval_verdict"], "SLOWER")
        self.assertEqual(d["summary"]["under-minimum"], 1)
        self.assertEqual(d["summary"]["differences"], 1)  # the large gemm alone
        out = self.kprof("diff", a, b, expect=0).stdout
        self.assertRegex(out, r"under minimum +tiny  grid 2048 tg 256 smem 0\n")
        self.assertRegex(out, r"\n  tiny  grid 2048 tg 256 smem 0: [^\n]*under the minimum effect")
        self.assertIn("1 under the minimum effect", out)
        # A smaller minimum leaves it to the engine's other rules; a larger share of the device
        # time holds back the gemm too (its 480 us are some 14% of the device time).
        tiny = self.rows(self.diff_json(a, b, "--min-effect-us", "0.1"))[("device", "tiny")]
        self.assertNotIn("small", tiny["reasons"])
        self.assertNotEqual(tiny["status"], "under-minimum")
        d = self.diff_json(a, b, "--min-share", "50")
        self.assertEqual((d["min_share"], d["summary"]["differences"]), (0.5, 0))
        large = [r for r in d["device"] if r["key"] == "gemm  grid 262144 tg 256 smem 0"][0]
        self.assertEqual((large["status"], large["reasons"]), ("under-minimum", ["small"]))
        self.assertIn("of the device time, under the minimum share of 50%", large["reason"])
        # --fail-if-slower gates on verdicts: a change under the minimum is none.
        self.kprof("diff", a, b, "--min-share", "50", "--fail-if-slower", "5", expect=0)
        self.kprof("diff", a, b, "--fail-if-slower", "5", expect=5)

    def test_host_rows_not_judged(self):
        # The launch calls are 20% longer in B: listed with their numbers, not judged, not a
        # difference; --judge-host judges them.
        a = self.gen_pattern("a.kprof", "shapes", "--kernels", "30")
        b = self.gen_pattern("b.kprof", "shapes", "--kernels", "30", "--slower", "20")
        d = self.diff_json(a, b)
        self.assertFalse(d["judge_host"])
        launch = self.rows(d)[("host", "cudaLaunchKernel")]
        self.assertEqual((launch["status"], launch["judged"], launch["verdict"],
                          launch["comparison"], launch["changed"]),
                         ("not-judged", False, None, None, False))
        self.assertAlmostEqual(launch["ratio"]["median"], 1.2, places=3)
        step = self.rows(d)[("ranges", "step")]
        self.assertEqual((step["status"], step["judged"]), ("not-judged", False))
        self.assertEqual(d["summary"]["not-judged"], 2)
        out = self.kprof("diff", a, b, expect=0).stdout
        self.assertRegex(out, r"1\.200 +not judged +cudaLaunchKernel\n")
        self.assertIn("2 not judged (host calls and ranges: --judge-host)", out)
        d = self.diff_json(a, b, "--judge-host")
        self.assertTrue(d["judge_host"])
        launch = self.rows(d)[("host", "cudaLaunchKernel")]
        self.assertTrue(launch["judged"])
        self.assertEqual(launch["status"], "slower")  # 10 us -> 12 us, fixed by the records
        self.assertEqual(self.rows(d)[("ranges", "step")]["status"], "same")
        self.assertEqual(d["summary"]["not-judged"], 0)
        self.assertEqual(d["summary"]["differences"], 2)

    def test_unsure_says_why(self):
        # Samples that came in 6 rounds are 6 independent blocks a side: too few for the
        # bootstrap (core/judge.h's KP_JUDGE_MIN_BLOCKS), so the interval is the samples' whole
        # range. 2x apart, no sample contradicts SLOWER ...
        a = self.write_json("a.json", bench_file([bench_point("N=1M", 1.0, rounds=6)]))
        b = self.write_json("b.json", bench_file([bench_point("N=1M", 2.0, rounds=6)]))
        p = self.diff_json(a, b)["points"][0]
        self.assertEqual((p["status"], p["reasons"]), ("slower", []))
        # ... 0.3% apart, the ranges straddle the band: UNSURE, and why.
        c = self.write_json("c.json", bench_file([bench_point("N=1M", 1.003, rounds=6)]))
        p = self.diff_json(a, c)["points"][0]
        self.assertEqual((p["status"], p["reasons"]), ("unsure", ["few"]))
        self.assertIn("independent blocks", p["reason"])
        out = self.kprof("diff", a, c, expect=0).stdout
        self.assertRegex(out, r"UNSURE\n +[AB] has only 6 independent blocks")

    def test_results_of_different_kernels(self):
        a = self.write_json("a.json", bench_file([bench_point("N=1M", 1.0, entry="reduce_sum",
                                                              source="r.cl")]))
        b = self.write_json("b.json", bench_file([bench_point("N=1M", 8.7, entry="slow",
                                                              source="s.cl")]))
        p = self.kprof("diff", a, b, expect=2)
        self.assertEqual(p.stdout, "")
        self.assertIn("A is reduce_sum (r.cl), B is slow (s.cl) at N=1M: different kernels; "
                      "--force compares them anyway", p.stderr)
        self.kprof("diff", a, b, "--json", expect=2)
        p = self.kprof("diff", a, b, "--force", expect=0)
        self.assertIn("A is reduce_sum (r.cl), B is slow (s.cl) at N=1M: different kernels, "
                      "compared anyway (--force)", p.stdout)
        d = self.diff_json(a, b, "--force")
        self.assertIn("A is reduce_sum", d["different_kernels"])
        self.assertEqual(len(d["points"]), 1)
        # One kernel whose source changed is what a diff is for: compared.
        c = self.write_json("c.json", bench_file([bench_point("N=1M", 1.0, entry="reduce_sum",
                                                              source="r2.cl")]))
        self.assertIsNone(self.diff_json(a, c)["different_kernels"])
        # Files that do not say which kernel (older bench.json): compared.
        e = self.write_json("e.json", bench_file([bench_point("N=1M", 1.0)]))
        self.assertIsNone(self.diff_json(a, e)["different_kernels"])

    def test_bad_inputs(self):
        trace = self.gen("t.kprof", "--kernels", "8")
        bench = self.write("r.json", json.dumps(bench_file([bench_point("N=1M", 1.0)])))

        def refused(*args, says):
            p = self.kprof("diff", *args, expect=2)
            self.assertIn(says, p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertNotIn("Traceback", p.stderr)
            return p

        refused(trace, os.path.join(self.tmp, "missing.kprof"), says="missing.kprof: no such file")
        refused(os.path.join(self.tmp, "gone.json"), bench, says="gone.json: no such file")
        refused(trace, self.tmp, says="not a regular file (a folder)")
        text = self.write("notes.txt", "not a trace, not JSON\n")
        refused(text, trace, says="notes.txt is neither a kprof trace")
        junk = self.write("junk.kprof", "this is not a database at all " * 100)
        refused(junk, trace, says="junk.kprof is not a kprof trace")
        other = os.path.join(self.tmp, "other.db")
        db = sqlite3.connect(other)
        db.execute("CREATE TABLE t (x)")
        db.commit()
        db.close()
        refused(trace, other, says="an SQLite database of something else")
        data = open(self.gen("big.kprof", "--kernels", "3000"), "rb").read()
        cut = os.path.join(self.tmp, "cut.kprof")
        with open(cut, "wb") as f:
            f.write(data[:len(data) // 2])
        refused(trace, cut, says="damaged or truncated")
        # A trace with a result, either way round, or with a history reference.
        refused(trace, bench, says="t.kprof is a trace and %s a bench result" % bench)
        refused(bench, trace, says="is a bench result and %s a trace" % trace)
        refused(trace, "@0", says="is a trace and @0 a history run")
        # JSON that is not a bench result, JSON that is not JSON.
        run = self.write("run.json", json.dumps({"kind": "run", "median_ms": 1}))
        refused(bench, run, says="run.json: not a `kprof bench` result")
        broken = self.write("broken.json", "{\"kind\": \"bench\", ")
        refused(broken, bench, says="broken.json: not JSON")
        # Usage.
        refused(trace, says="give two traces")
        refused(trace, trace, trace, says="unexpected argument")
        refused(trace, trace, "--by", "stack", says="--by 'stack': choose shape, name or path")
        refused(trace, trace, "--min-effect-us", "-1", says="--min-effect-us '-1'")
        refused(trace, trace, "--min-share", "x", says="--min-share 'x'")
        refused(trace, trace, "--force", says="--force goes with results")
        refused(trace, trace, "--threshold", "0", says="--threshold '0'")
        refused(trace, trace, "--fail-if-slower", "x", says="--fail-if-slower 'x'")
        refused(bench, bench, "--raw", says="--by, --raw, --top")
        refused(bench, bench, "--judge-host", says="--judge-host, --min-effect-us")

    def test_history_references(self):
        # This store is empty (KPROF_STORE is the test's own): the reference is refused as bad
        # input, naming it.
        p = self.kprof("diff", "@-1", "@0", expect=2)
        self.assertIn("@-1", p.stderr)
        p = self.kprof("diff", "17", "@0", expect=2)
        self.assertIn("17", p.stderr)
        # A file named like an id is reached through its path.
        t = self.gen("17", "--kernels", "5")
        d = self.diff_json("./17", t)
        self.assertEqual(d["summary"]["differences"], 0)

    def test_history_runs(self):
        # Two recorded runs of kprof run, then of a kernel with 8 times the work: diff @-1 @0
        # compares their samples as bench does.
        src = self.write("w.cl", """
__kernel void work(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f;
    for (int p = 0; p < PASSES * 1024; p++)
        x = x * 0.999f + 1e-4f;
    if (i < n) out[i] = x;
}
""")
        common = ["--grid", "64", "--tg", "64", "--buffers", "f32:64,u32=64", "--iters", "30"]
        self.kprof("run", src, "-DPASSES=2", *common, expect=0)
        self.kprof("run", src, "-DPASSES=2", *common, expect=0)
        # The runs' samples go to the comparison engine, whose verdict on PoCL depends on the
        # machine (two modes, a drift, a busy host: UNSURE with the reason): the structure is
        # asserted, not the verdict (the verdicts' rules have synthetic tests above).
        compared = {"same", "slower", "faster", "unsure"}
        d = self.diff_json("@-1", "@0", "--threshold", "25")
        self.assertEqual(d["differs"], {})
        self.assertIsNone(d["different_kernels"])
        (p,) = d["points"]
        self.assertIn(p["status"], compared)
        self.assertEqual((p["a"]["samples"], p["b"]["samples"]), (30, 30))
        self.assertEqual(p["reason"] is None, p["status"] != "unsure")
        self.kprof("run", src, "-DPASSES=16", *common, expect=0)
        d = self.diff_json("@-1", "@0")
        # One kernel whose options changed: compared, the change listed.
        self.assertEqual(d["differs"], {"options": ["-DPASSES=2", "-DPASSES=16"]})
        self.assertIsNone(d["different_kernels"])
        self.assertIn(d["points"][0]["status"], compared)
        out = self.kprof("diff", "@-1", "@0", expect=0).stdout
        self.assertIn("  options: -DPASSES=2 → -DPASSES=16\n", out)
        # A run of another kernel: refused, naming both, unless --force.
        with open(src) as f:
            other = self.write("o.cl", f.read().replace("void work", "void other"))
        self.kprof("run", other, "-DPASSES=2", *common, expect=0)
        p = self.kprof("diff", "@-1", "@0", expect=2)
        self.assertEqual(p.stdout, "")
        self.assertRegex(p.stderr, r"A is work \(src hash [0-9a-f]{16}\), B is other \(src hash "
                                   r"[0-9a-f]{16}\): different kernels; --force compares them "
                                   r"anyway")
        p = self.kprof("diff", "@-1", "@0", "--force", expect=0)
        self.assertIn("different kernels, compared anyway (--force)", p.stdout)
        self.assertIn("  kernel: work → other", p.stdout)


if __name__ == "__main__":
    kptest.main()
