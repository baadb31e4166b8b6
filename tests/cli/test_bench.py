"""kprof bench on PoCL: the stopping rule (and the rule named), every sample in the JSON and the
numbers checked against them, hot and cold, axes substituted into --grid, --buffers and -D with
--bytes/--flops formulas, the plot, bench.json in a kernel folder, A/B comparisons and --compare
with an earlier run as structure (what a comparison says and how, never which verdict PoCL's
timings give: bench/verdict_quality.py measures that), --repeat, the engine's verdicts and the
gate's exit 5 on synthetic results, and bad input refused."""

import json
import math
import os
import re
import statistics

import kptest

SPEC = "f32:N,f32:N,f32:N,u32=N"

# Each work-item runs a dependent chain of PASSES x 4096 multiply-adds: compute-bound, so the
# kernel's time is proportional to PASSES (the launch's own cost is small beside it).
WORK = r"""
__kernel void work(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f, a = 0.999f, b = 1e-4f;
    for (int p = 0; p < PASSES * 4096; p++)
        x = x * a + b;
    if (i < n) out[i] = x;
}
"""

# Two kernels in one file: work11 does 10% more than work10 (one more pass in eleven).
WORK_AB = r"""
__kernel void work10(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f, a = 0.999f, b = 1e-4f;
    for (int p = 0; p < 10 * 1024; p++)
        x = x * a + b;
    if (i < n) out[i] = x;
}

__kernel void work11(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f, a = 0.999f, b = 1e-4f;
    for (int p = 0; p < 11 * 1024; p++)
        x = x * a + b;
    if (i < n) out[i] = x;
}
"""

QUICK = ["--min-time", "0.05", "--timeout", "5"]


def median(v):
    return sorted(v)[len(v) // 2]


class BenchTest(kptest.KprofTestCase):
    def demo(self):
        return os.path.join(kptest.SOURCE_DIR, "kernels", "demo_add.cl")

    def bench_json(self, *args, expect=0):
        p = self.kprof("bench", *args, "--json", expect=expect)
        return json.loads(p.stdout), p

    def test_one_kernel_numbers_follow_from_its_samples(self):
        doc, _ = self.bench_json(self.demo(), "--grid", "65536", "--tg", "64", "--buffers",
                                 "f32:65536,f32:65536,f32:65536,u32=65536", "--min-time", "0.1",
                                 "--max-noise", "2", "--timeout", "20")
        self.assertEqual(doc["kind"], "bench")
        self.assertEqual(doc["backend"], "opencl")
        self.assertEqual(len(doc["points"]), 1)
        pt = doc["points"][0]
        self.assertEqual(pt["cache"], "hot")
        self.assertEqual(pt["grid"], [65536])
        self.assertIn(pt["stop"], ("noise", "settled", "timeout"))
        k = pt["kernels"][0]
        s = k["samples_ms"]
        self.assertEqual(len(s), k["samples"])
        self.assertGreaterEqual(len(s), 10)
        self.assertEqual(k["median_ms"], median(s))
        self.assertEqual(k["min_ms"], min(s))
        self.assertLessEqual(k["ci_ms"][0], k["median_ms"])
        self.assertGreaterEqual(k["ci_ms"][1], k["median_ms"])
        self.assertAlmostEqual(k["noise"], (k["ci_ms"][1] - k["ci_ms"][0]) / 2 / k["median_ms"])
        self.assertAlmostEqual(k["mean_ms"], statistics.mean(s), places=9)
        self.assertGreaterEqual(k["taken"], k["samples"])
        self.assertEqual(k["throttled"], 0)
        # The floor: 0.1 s of device time before any rule but the timeout may stop.
        if pt["stop"] != "timeout":
            self.assertGreaterEqual(k["gpu_time_s"], 0.1)
            self.assertGreaterEqual(sum(s) / 1e3, 0.1 * 0.999)
        if pt["stop"] == "noise":
            self.assertLessEqual(k["noise"], 0.02)
        # No clock on an OpenCL device: said, not invented.
        self.assertIsNone(k["clock_mhz"])
        self.assertIn("opencl", k["clock_note"].lower())
        # bytes assumed: every buffer element once: 3 x 65536 x 4.
        self.assertEqual(pt["bytes"], 3 * 65536 * 4)
        self.assertTrue(pt["bytes_assumed"])
        self.assertAlmostEqual(k["gbps"], pt["bytes"] / (k["median_ms"] * 1e-3) / 1e9)

    def test_the_stop_rule_is_named_and_kept(self):
        # A goal hardly anything reaches: the timeout, or settled should the noise stop
        # shrinking, or noise only where the timer's quantum made the interval a point.
        doc, _ = self.bench_json(self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                                 "f32:4096,f32:4096,f32:4096,u32=4096", "--max-noise", "0.001",
                                 "--min-time", "0", "--timeout", "1")
        pt = doc["points"][0]
        k = pt["kernels"][0]
        self.assertIn(pt["stop"], ("timeout", "settled", "noise"))
        if pt["stop"] == "timeout":
            self.assertGreaterEqual(pt["wall_s"], 1.0)
        if pt["stop"] == "noise":
            self.assertLessEqual(k["noise"], 0.00001)
            self.assertEqual(k["ci_ms"][0], k["ci_ms"][1])
        # An easy goal: the noise rule, as soon as the floor allows.
        doc, _ = self.bench_json(self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                                 "f32:4096,f32:4096,f32:4096,u32=4096", "--max-noise", "100",
                                 "--min-time", "0", "--min-samples", "25")
        pt = doc["points"][0]
        self.assertEqual(pt["stop"], "noise")
        self.assertGreaterEqual(pt["kernels"][0]["samples"], 25)

    def test_table_names_rule_and_numbers(self):
        p = self.kprof("bench", self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                       "f32:4096,f32:4096,f32:4096,u32=4096", "--max-noise", "50", *QUICK,
                       expect=0)
        self.assertIn("demo_add on", p.stdout)
        # Issue 23 items 5 and 8: mean and max columns beside min and p90, and every time in
        # the unit that keeps its digits (a number and ns, µs, ms or s), never 0.0007.
        header = [l for l in p.stdout.splitlines() if "95% CI" in l][0].split()
        for col in ("median", "min", "mean", "p90", "max"):
            self.assertIn(col, header)
        self.assertNotIn("median ms", p.stdout)
        row = [l for l in p.stdout.splitlines() if re.search(r"\[.*\].*%", l)][0]
        self.assertRegex(row, r"^\s*\d+(\.\d+)? (ns|µs|ms|s)  \[\d+(\.\d+)? (ns|µs|ms|s), "
                              r"\d+(\.\d+)? (ns|µs|ms|s)\]")
        self.assertEqual(len(re.findall(r"\d (ns|µs|ms|s)\b", row)), 7, row)
        self.assertIn("median", p.stdout)
        self.assertIn("95% CI", p.stdout)
        # The legend names the rule the row's stop column says stopped it: the noise goal on an
        # idle machine; on a loaded one the run may drift and go on to --timeout (which rule it
        # is depends on the load, that the legend names it does not).
        stop = re.search(r"\d%\s+(\S+)", row.split("]", 1)[1]).group(1)  # after the noise
        self.assertIn(stop, ("noise", "timeout", "max-samples", "samples"), row)
        self.assertIn("stop: %s = " % stop, p.stdout)
        if stop == "noise":
            self.assertIn("stop: noise = the median's 95% interval is within --max-noise",
                          p.stdout)
        self.assertIn("clock: not read", p.stdout)

    def test_progress_lines_off_a_terminal(self):
        # Issue 23 item 3: off a terminal, a line of its own every KPROF_PROGRESS_EVERY seconds
        # of long work (10 by default; the tests set 0): here 0.2 s over a bench that runs to
        # its 2 s --timeout (a noise goal no run meets), saying where it stands as it goes.
        p = self.kprof("bench", self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                       "f32:4096,f32:4096,f32:4096,u32=4096", "--min-time", "0.01",
                       "--max-noise", "0.001", "--timeout", "2",
                       env={"KPROF_PROGRESS_EVERY": "0.2"}, expect=0)
        lines = [l for l in p.stderr.splitlines() if l.startswith("kprof: bench: ")]
        self.assertGreaterEqual(len(lines), 1, p.stderr)
        self.assertNotIn("\r", p.stderr)

    def test_hot_and_cold(self):
        doc, _ = self.bench_json(self.demo(), "--grid", "262144", "--tg", "64", "--buffers",
                                 "f32:262144,f32:262144,f32:262144,u32=262144", "--cache",
                                 "both", "--max-noise", "5", *QUICK)
        caches = [p["cache"] for p in doc["points"]]
        self.assertEqual(caches, ["hot", "cold"])
        hot, cold = doc["points"][0]["kernels"][0], doc["points"][1]["kernels"][0]
        self.assertNotIn("flush_ms", hot)
        self.assertGreater(cold["flush_ms"], 0)
        # The floor of --min-samples holds unless --timeout came first (a slow flush on a busy
        # machine): what stopped it says which.
        if doc["points"][1]["stop"] != "timeout":
            self.assertGreaterEqual(cold["samples"], 10)
        self.assertEqual(cold["samples"], len(cold["samples_ms"]))

    def test_axes_substitute_and_formulas(self):
        doc, _ = self.bench_json(self.demo(), "--axis", "N=4K,16K", "--grid", "N", "--tg", "64",
                                 "--buffers", SPEC, "--bytes", "12*N", "--flops", "N",
                                 "--max-noise", "20", *QUICK)
        pts = doc["points"]
        self.assertEqual([p["point"] for p in pts], ["N=4096", "N=16384"])
        self.assertEqual([p["axes"]["N"] for p in pts], [4096, 16384])
        self.assertEqual([p["grid"] for p in pts], [[4096], [16384]])
        for p in pts:
            n = p["axes"]["N"]
            k = p["kernels"][0]
            self.assertEqual(p["bytes"], 12 * n)
            self.assertFalse(p["bytes_assumed"])
            self.assertAlmostEqual(k["gbps"], 12 * n / (k["median_ms"] * 1e-3) / 1e9)
            self.assertAlmostEqual(k["gflops"], n / (k["median_ms"] * 1e-3) / 1e9)
        self.assertEqual(doc["axes"], [{"name": "N", "values": ["4K", "16K"]}])

    def test_axis_in_a_define_changes_the_kernel(self):
        src = self.write("work.cl", WORK)
        doc, _ = self.bench_json(src, "--axis", "P=1,8", "-DPASSES=P", "--grid", "1024", "--tg",
                                 "64", "--buffers", "f32:1024,u32=1024", "--max-noise", "5",
                                 *QUICK)
        m1 = doc["points"][0]["kernels"][0]["median_ms"]
        m8 = doc["points"][1]["kernels"][0]["median_ms"]
        # Eight times the work: well over twice the time, on any machine.
        self.assertGreater(m8, 2 * m1)
        # -DP alone, with an axis P, defines it as the value.
        src2 = self.write("work2.cl", WORK.replace("PASSES", "P"))
        doc, _ = self.bench_json(src2, "--axis", "P=2", "-DP", "--grid", "1024", "--tg", "64",
                                 "--buffers", "f32:1024,u32=1024", "--max-noise", "50", *QUICK)
        self.assertEqual(doc["points"][0]["axes"]["P"], 2)

    def test_text_axis_and_braces(self):
        doc, _ = self.bench_json(self.demo(), "--axis", "N=8K", "--grid", "{N/2}x2", "--tg",
                                 "64x1", "--buffers", "f32:N,f32:N,f32:N,u32={N}",
                                 "--max-noise", "50", *QUICK)
        self.assertEqual(doc["points"][0]["grid"], [4096, 2])

    def test_plot(self):
        out = os.path.join(self.tmp, "n.svg")
        self.kprof("bench", self.demo(), "--axis", "N=4K,8K,16K", "--grid", "N", "--tg", "64",
                   "--buffers", SPEC, "--max-noise", "50", *QUICK, "--plot", out, expect=0)
        svg = open(out).read()
        self.assertTrue(svg.startswith("<?xml"))
        # "GPU" only on a GPU: PoCL's is a CPU, whose time is device time.
        self.assertRegex(svg, r"(GPU|device) time per dispatch \(ms\)")
        for label in ("4K", "8K", "16K"):
            self.assertIn(">%s</text>" % label, svg)
        # An existing plot is not replaced without --force.
        p = self.kprof("bench", self.demo(), "--axis", "N=4K,8K", "--grid", "N", "--tg", "64",
                       "--buffers", SPEC, *QUICK, "--plot", out, expect=2)
        self.assertIn("--force", p.stderr)
        self.kprof("bench", self.demo(), "--axis", "N=4K,8K", "--grid", "N", "--tg", "64",
                   "--buffers", SPEC, "--max-noise", "50", *QUICK, "--plot", out, "--force",
                   "--plot-y", "gbps", expect=0)
        self.assertIn("GB/s", open(out).read())

    def test_kernel_folder_keeps_bench_json(self):
        self.kprof("isolate", "addk", "--from", self.demo(), expect=0)
        p = self.kprof("bench", "addk", "--grid", "4096", "--tg", "64", "--buffers",
                       "f32:4096,f32:4096,f32:4096,u32=4096", "--max-noise", "50", *QUICK,
                       expect=0)
        path = os.path.join(self.home, "kernels", "addk", "bench.json")
        self.assertIn("kept in", p.stdout)
        kept = json.load(open(path))
        self.assertEqual(kept["kind"], "bench")
        self.assertGreaterEqual(kept["points"][0]["kernels"][0]["samples"], 10)

    def test_compare_with_the_kernel_folders_own_file(self):
        self.kprof("isolate", "addk", "--from", self.demo(), expect=0)
        common = ["--grid", "4096", "--tg", "64", "--buffers",
                  "f32:4096,f32:4096,f32:4096,u32=4096", "--max-noise", "50", *QUICK]
        self.kprof("bench", "addk", *common, expect=0)
        kept = os.path.join(self.home, "kernels", "addk", "bench.json")
        doc, _ = self.bench_json("addk", *common, "--compare", kept)
        self.assertIsNotNone(doc["points"][0]["comparison"])
        # The file was replaced by this run's result.
        self.assertEqual(json.load(open(kept))["config"]["compare"], kept)

    def test_gate_that_compares_nothing_fails(self):
        src = self.write("ab.cl", WORK_AB)
        common = ["--entry", "work10", "--grid", "64", "--tg", "64", "--buffers",
                  "f32:64,u32=64", "--min-time", "0.05", "--timeout", "5"]
        old = self.write("before.json", self.kprof("bench", src, *common, "--json",
                                                   expect=0).stdout)
        p = self.kprof("bench", src, *common, "--cache", "cold", "--compare", old,
                       "--fail-if-slower", "5", expect=2)
        self.assertIn("nothing was compared", p.stderr)
        # An earlier file with too few samples: not judged.
        few = json.load(open(old))
        few["points"][0]["kernels"][0]["samples_ms"] = [0.5, 0.6]
        path = self.write("few.json", json.dumps(few))
        p = self.kprof("bench", src, *common, "--compare", path, expect=0)
        self.assertIn("fewer than 5", p.stderr)

    def test_long_warmup_and_every_point_checked_first(self):
        p = self.kprof("bench", self.demo(), "--grid", "64", "--tg", "64", "--buffers",
                       "f32:64,f32:64,f32:64,u32=64", "--warmup", "12000", "--max-noise", "50",
                       *QUICK, expect=0)
        self.assertIn("demo_add", p.stdout)
        # The last point's formula fails: said before anything is measured.
        p = self.kprof("bench", self.demo(), "--axis", "N=2,1", "--grid", "64", "--tg", "64",
                       "--buffers", "f32:64,f32:64,f32:64,u32=64", "--bytes", "1/(N-1)",
                       expect=2)
        self.assertIn("division by zero", p.stderr)
        self.assertIn("N=1", p.stderr)
        p = self.kprof("bench", self.demo(), "--axis", "nx=64", "--grid", "nx", "--buffers",
                       SPEC, expect=2)
        self.assertIn("may not hold 'x'", p.stderr)

    def check_comparison(self, c, paired):
        """What every comparison says, whatever PoCL's timings gave: a verdict of the four, an
        interval around the ratio, the engine's reasons named exactly when it is UNSURE (words
        with them), and what it rests on."""
        self.assertIn(c["verdict"], ("SAME", "FASTER", "SLOWER", "UNSURE"))
        self.assertIn(c["interval_verdict"], ("SAME", "FASTER", "SLOWER", "UNSURE"))
        # An end that no number bounds is null (a verdict judged through a side whose median
        # may fall towards 0 leaves the ratio unbounded above): -inf and +inf here.
        lo = c["ci"][0] if c["ci"][0] is not None else -math.inf
        hi = c["ci"][1] if c["ci"][1] is not None else math.inf
        self.assertLessEqual(lo, c["ratio"])
        self.assertGreaterEqual(hi, c["ratio"])
        # The reported interval holds the samples' own (it only ever widens).
        self.assertLessEqual(lo, c["sample_ci"][0])
        self.assertGreaterEqual(hi, c["sample_ci"][1])
        known = {"straddles", "few", "drift", "modes", "busy", "small", "one_run", "runs", "clock"}
        self.assertLessEqual(set(c["reasons"]), known, c)
        if c["verdict"] == "UNSURE":
            self.assertTrue(c["reasons"], c)
            self.assertTrue(c["reason"], c)
        else:
            self.assertEqual(c["reasons"], [], c)
            # A verdict given is the interval's.
            if c["cycles_ratio"] is None:
                self.assertEqual(c["verdict"], c["interval_verdict"])
        self.assertEqual(c["paired"], paired)
        # Two sessions on a CPU device are judged as two runs.
        self.assertEqual(c["across_runs"], not paired or c["separate_sessions"])
        if c["across_runs"] and c["runs"] == 1 and c["verdict"] != "UNSURE":
            self.assertTrue(c["one_run_a_side"])
        if c["busy_cpus"] is not None:
            self.assertGreaterEqual(c["busy_cpus"], 0)

    def test_a_kernel_against_itself(self):
        # The verdicts' error rates are bench/verdict_quality.py's to measure; here, what the
        # comparison says and how, on one file (one session) and on two identical files.
        src = self.write("ab.cl", WORK_AB)
        other = self.write("copy.cl", WORK_AB)
        for args in ((src, src, "--entry", "work10"), (src, other, "--entry", "work10")):
            doc, _ = self.bench_json(*args, "--grid", "64", "--tg", "64", "--buffers",
                                     "f32:64,u32=64", "--min-time", "0.05", "--timeout", "3")
            pt = doc["points"][0]
            self.check_comparison(pt["comparison"], True)
            self.assertEqual(pt["comparison"]["runs"], 1)
            # One file is one session; two files are two (judged as two runs where the device
            # runs kernels on the host's CPUs, as PoCL does; not so on a GPU's OpenCL).
            if args[1] == src:
                self.assertFalse(pt["comparison"]["separate_sessions"])
            self.assertGreaterEqual(pt["host_cpus"], 1)
            for k in pt["kernels"]:
                sh = k["shape"]
                self.assertGreaterEqual(sh["block"], 1)
                self.assertEqual(sh["blocks"], k["samples"] // sh["block"])
                self.assertLessEqual(set(sh["unstable"]), {"few", "drift", "modes", "busy"})

    def test_two_kernels(self):
        src = self.write("ab.cl", WORK_AB)
        doc, p = self.bench_json(src, "--entry", "work10", "--entry", "work11", "--grid",
                                 "64", "--tg", "64", "--buffers", "f32:64,u32=64",
                                 "--min-time", "0.05", "--timeout", "10")
        pt = doc["points"][0]
        c = pt["comparison"]
        self.check_comparison(c, True)
        a, b = pt["kernels"]
        self.assertEqual((a["label"], a["entry"]), ("A", "work10"))
        self.assertEqual((b["label"], b["entry"]), ("B", "work11"))
        self.assertAlmostEqual(c["ratio"], b["median_ms"] / a["median_ms"])
        # Two files: two sessions, one process each, taking turns just the same.
        a = self.write("a.cl", WORK_AB.split("__kernel void work11")[0])
        b = self.write("b.cl", "__kernel void work11" + WORK_AB.split("__kernel void work11")[1])
        doc, _ = self.bench_json(a, b, "--grid", "64", "--tg", "64", "--buffers",
                                 "f32:64,u32=64", "--min-time", "0.05", "--timeout", "10")
        pt = doc["points"][0]
        self.check_comparison(pt["comparison"], True)
        self.assertEqual([k["source"] for k in pt["kernels"]], [a, b])
        # The table says the verdict, and the reason when UNSURE; --fail-if-slower's exit 5
        # follows the gate the JSON states.
        for fmt in ("text", "json"):
            p = self.kprof("bench", src, "--entry", "work10", "--entry", "work11", "--grid",
                           "64", "--tg", "64", "--buffers", "f32:64,u32=64", "--min-time",
                           "0.05", "--timeout", "10", "--fail-if-slower", "2",
                           *(["--json"] if fmt == "json" else []))
            self.assertIn(p.returncode, (0, 5), p.stderr)
            if fmt == "json":
                pt = json.loads(p.stdout)["points"][0]
                self.assertEqual(p.returncode == 5, pt["fails_gate"])
                if pt["fails_gate"]:
                    self.assertEqual(pt["comparison"]["verdict"], "SLOWER")
            else:
                self.assertRegex(p.stdout, r"→  (SAME|FASTER|SLOWER|UNSURE)")
                # Issue 23 item 8: the band is said as what SAME would need, never as
                # "SLOWER (SAME within ±1%)"; the footer names each side's entry.
                self.assertNotIn("(SAME within", p.stdout)
                self.assertRegex(p.stdout, r"\(SAME would be an interval inside ±\d+(\.\d+)?%\)")
                self.assertIn("A: %s:work10  B: %s:work11" % (src, src), p.stdout)
                if "→  UNSURE" in p.stdout:
                    self.assertIn("    UNSURE: ", p.stdout)
                if p.returncode == 5:
                    self.assertIn("slower by more than --fail-if-slower 2%", p.stdout)

    def test_repeat(self):
        src = self.write("ab.cl", WORK_AB)
        doc, p = self.bench_json(src, "--entry", "work10", "--entry", "work11", "--grid",
                                 "64", "--tg", "64", "--buffers", "f32:64,u32=64",
                                 "--min-time", "0.02", "--timeout", "3", "--repeat", "3")
        pt = doc["points"][0]
        c = pt["comparison"]
        self.check_comparison(c, True)
        self.assertEqual(c["runs"], 3)
        for k in pt["kernels"]:
            self.assertEqual(len(k["run_medians_ms"]), 3)
            self.assertEqual(k["samples"], len(k["samples_ms"]))
        # One kernel, repeated: its sessions' medians, said in the table.
        p = self.kprof("bench", src, "--entry", "work10", "--grid", "64", "--tg", "64",
                       "--buffers", "f32:64,u32=64", "--min-time", "0.02", "--timeout", "3",
                       "--repeat", "2", expect=0)
        self.assertIn("2 sessions: their medians", p.stdout)
        for bad in ("0", "33", "x"):
            p = self.kprof("bench", src, "--entry", "work10", "--buffers", "f32:64,u32=64",
                           "--repeat", bad, expect=2)
            self.assertIn("--repeat", p.stderr)

    def test_compare_with_an_earlier_run(self):
        src = self.write("ab.cl", WORK_AB)
        common = ["--grid", "64", "--tg", "64", "--buffers", "f32:64,u32=64", "--min-time",
                  "0.05", "--timeout", "10"]
        before, p = self.bench_json(src, "--entry", "work10", *common)
        old = self.write("before.json", p.stdout)
        doc, _ = self.bench_json(src, "--entry", "work11", *common, "--compare", old)
        c = doc["points"][0]["comparison"]
        self.check_comparison(c, False)
        self.assertEqual(c["runs"], 1)
        self.assertTrue(c["one_run_a_side"])
        now = doc["points"][0]["kernels"][0]["median_ms"]
        self.assertAlmostEqual(c["ratio"], now / before["points"][0]["kernels"][0]["median_ms"])
        p = self.kprof("bench", src, "--entry", "work11", *common, "--compare", old,
                       "--fail-if-slower", "2", "--json")
        self.assertIn(p.returncode, (0, 5), p.stderr)
        self.assertEqual(p.returncode == 5, json.loads(p.stdout)["points"][0]["fails_gate"])
        # A point the earlier run lacks: said, not invented.
        p = self.kprof("bench", src, "--entry", "work11", *common, "--cache", "cold",
                       "--compare", old, expect=0)
        self.assertIn("nothing compared", p.stderr)

    def synthetic_result(self, name, samples, rounds, runs=None):
        """A bench.json as `kprof bench --json` writes it, its samples made up."""
        k = {"label": "", "source": "x.cl", "entry": "k", "samples_ms": samples,
             "rounds": rounds}
        if runs:
            k["run_medians_ms"] = runs
        doc = {"version": 1, "kind": "bench", "device": "synthetic", "backend": "opencl",
               "points": [{"point": "", "cache": "hot", "kernels": [k]}]}
        return self.write(name, json.dumps(doc))

    def test_verdicts_on_synthetic_results(self):
        # The engine through the CLI on samples made up, so that the answer is known: 10%
        # slower is SLOWER (and the gate's exit 5), the same samples SAME, 2% slower in one run a
        # side UNSURE for want of the run-to-run spread, two modes UNSURE with their words.
        import random
        rng = random.Random(7)
        base = [1.0 + 0.002 * rng.gauss(0, 1) for _ in range(2000)]
        a = self.synthetic_result("a.json", base, 100)
        slow = self.synthetic_result("slow.json", [x * 1.10 for x in base[::-1]], 100)
        same = self.synthetic_result("same.json", base[1000:] + base[:1000], 100)
        two = self.synthetic_result("two.json", [x * 1.02 for x in base[::-1]], 100)
        p = self.kprof("diff", a, slow, "--json", "--fail-if-slower", "2", expect=5)
        pt = json.loads(p.stdout)["points"][0]
        self.assertEqual(pt["comparison"]["verdict"], "SLOWER", p.stdout)
        p = self.kprof("diff", a, same, "--json", "--fail-if-slower", "2", expect=0)
        self.assertEqual(json.loads(p.stdout)["points"][0]["comparison"]["verdict"], "SAME")
        p = self.kprof("diff", a, two, "--fail-if-slower", "1", expect=0)
        self.assertIn("one run a side", p.stdout)
        modes = [(0.37 if rng.random() < 0.6 else 0.52) * (1 + 0.001 * rng.gauss(0, 1))
                 for _ in range(2000)]
        m1 = self.synthetic_result("m1.json", modes, 100)
        m2 = self.synthetic_result("m2.json", [x * 1.1 for x in modes[::-1]], 100)
        p = self.kprof("diff", m1, m2, "--json", expect=0)
        pt = json.loads(p.stdout)["points"][0]
        self.assertEqual(pt["comparison"]["verdict"], "UNSURE")
        self.assertIn("modes", pt["reasons"])
        self.assertIn("two modes at 0.37", pt["reason"])

    def test_bad_input(self):
        d = self.demo()
        cases = [
            ([d], "--buffers is required"),
            ([d, "--buffers", SPEC, "--axis", "N"], "expected NAME=V1,V2"),
            ([d, "--buffers", SPEC, "--axis", "2N=1"], "is not a name"),
            ([d, "--buffers", SPEC, "--axis", "N=1,1"], "given twice"),
            ([d, "--buffers", SPEC, "--axis", "N=1+"], "ends too soon"),
            ([d, "--buffers", SPEC, "--axis", "N=1", "--axis", "N=2"], "given twice"),
            ([d, "--buffers", SPEC, "--axis", "N=1K", "--bytes", "12*M"], "unknown name 'M'"),
            ([d, "--buffers", SPEC, "--axis", "N=1K,2K", "--axis", "T=1,2", "--plot", "p.svg"],
             "exactly one --axis"),
            ([d, "--buffers", SPEC, "--plot", "p.png", "--axis", "N=1,2"], "SVG"),
            ([d, "--buffers", SPEC, "--fail-if-slower", "5"], "needs a comparison"),
            ([d, d, "--buffers", SPEC, "--compare", "x.json"], "not two"),
            ([d, "--buffers", SPEC, "--cache", "warm"], "choose hot, cold or both"),
            ([d, "--buffers", SPEC, "--max-noise", "abc"], "expected a percentage"),
            ([d, "--buffers", SPEC, "--timeout", "0"], "expected seconds > 0"),
            ([d, d, d, "--buffers", SPEC], "unexpected argument"),
            ([d, "--buffers", SPEC, "--plot-y", "gflops", "--axis", "N=1,2", "--plot", "a.svg"],
             "needs --flops"),
        ]
        for args, msg in cases:
            p = self.kprof("bench", *args, expect=2)
            self.assertIn(msg, p.stderr, args)
            self.assertTrue(p.stderr.startswith("kprof: error:"), p.stderr)
        # Problems found at a point: named, exit 2, nothing measured.
        p = self.kprof("bench", d, "--axis", "N=4K", "--grid", "N/3", "--buffers", SPEC,
                       expect=2)
        self.assertIn("not a positive whole number", p.stderr)
        p = self.kprof("bench", d, "--axis", "N=4K", "--grid", "Nx2", "--tg", "64",
                       "--buffers", SPEC, expect=2)
        self.assertIn("dimension", p.stderr)
        # --compare with a file that is not an earlier bench result.
        notjson = self.write("n.json", "{not json")
        p = self.kprof("bench", d, "--buffers", SPEC, "--axis", "N=4K", "--grid", "N",
                       "--compare", notjson, expect=2)
        self.assertIn("not JSON", p.stderr)
        other = self.write("o.json", json.dumps({"kind": "run", "points": []}))
        p = self.kprof("bench", d, "--buffers", SPEC, "--axis", "N=4K", "--grid", "N",
                       "--compare", other, expect=2)
        self.assertIn("not a `kprof bench` result", p.stderr)
        bad = self.write("b.json", json.dumps({"kind": "bench", "version": 1, "points": [
            {"point": "", "cache": "hot", "kernels": [{"samples_ms": ["x"]}]}]}))
        p = self.kprof("bench", d, "--buffers", SPEC, "--axis", "N=4K", "--grid", "N",
                       "--compare", bad, expect=2)
        self.assertIn("samples_ms", p.stderr)
        p = self.kprof("bench", d, "--buffers", SPEC, "--compare", self.tmp, expect=2)
        self.assertIn(self.tmp, p.stderr)


if __name__ == "__main__":
    kptest.main()
