"""kprof_benchmark and kprof_benchmark_compare of real OpenCL kernels in-process, on PoCL
(tests/programs/inproc_bench.c): callbacks that enqueue kernels, as pyopencl code does, timed
through kprof's OpenCL layer (libkprof-inject.so, taken in by a session started before the
program's first OpenCL call, or by KPROF=1).

What is checked is what the program did, never how fast the machine is: the results' fields agree
with one another (min <= p50 <= max, the interval around p50, the samples within the range, the
stop rule one of the rule's, GB/s and GFLOP/s the given work over p50), a cold run measured its
flushes, a kernel against an identical copy is never FASTER or SLOWER, against itself with 4x the
work it is SLOWER (or UNSURE for the busy machine's reasons alone, never SAME or FASTER); the errors say what was wrong; OpenCL the layer never saw is UNAVAILABLE with
the reason. The stopping rule's own behaviour (noise, settled, budget, decided, throttling) is
tested on synthetic samples (tests/unit/test_bench_rule.c)."""

import json
import os
import subprocess

import kptest

BENCH = os.environ.get("KPROF_INPROC_BENCH")
STOPS = {"noise", "settled", "budget", "runs"}
KPROF_UNSURE_DRIFT, KPROF_UNSURE_MODES, KPROF_UNSURE_BUSY = 1 << 2, 1 << 3, 1 << 4  # kprof.h


def parse(stdout):
    """{case: {key: value}} for result lines, {case: "STATUS: message"} for errors."""
    out = {}
    for line in stdout.splitlines():
        name, _, rest = line.partition(" ")
        if "=" in rest.split(" ")[0]:
            out[name] = dict(kv.split("=", 1) for kv in rest.split(" "))
        else:
            out[name] = rest
    return out


class InProcessBench(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        if not BENCH:
            self.skipTest("tests/programs/inproc_bench.c not built (no libOpenCL)")

    def run_bench(self, mode, env=None):
        e = dict(os.environ)
        for k in ("KPROF", "KPROF_COLLECT", "KPROF_OUTPUT"):
            e.pop(k, None)
        e.update(env or {})
        p = subprocess.run([BENCH, mode], capture_output=True, text=True, env=e, cwd=self.tmp,
                           timeout=600)
        if p.returncode == 77:
            self.skipTest(p.stderr.strip())
        self.assertEqual(p.returncode, 0, p.stderr)
        got = parse(p.stdout)
        if "hot" in got and isinstance(got["hot"], str) and "layer" in got["hot"] and \
                mode != "never":
            self.skipTest("this machine's OpenCL loader took no layer: " + got["hot"])
        return got

    def check_result(self, r, flops=None, nbytes=None):
        v = {k: float(x) for k, x in r.items() if k != "stop"}
        self.assertIn(r["stop"], STOPS)
        self.assertGreaterEqual(v["runs"], 10)  # min_runs, the default
        self.assertEqual(v["kernels"], 1)
        self.assertLessEqual(v["min"], v["p50"])
        self.assertLessEqual(v["p50"], v["p90"])
        self.assertLessEqual(v["p90"], v["max"])
        self.assertLessEqual(v["min"], v["mean"])
        self.assertLessEqual(v["mean"], v["max"])
        self.assertGreater(v["min"], 0)
        self.assertLessEqual(v["lo"], v["p50"])
        self.assertLessEqual(v["p50"], v["hi"])
        self.assertAlmostEqual(v["noise"], (v["hi"] - v["lo"]) / 2 / v["p50"],
                               delta=v["noise"] * 0.5 + 1e-12)
        # One kernel a run: its busy time is its span; the host waited at least that long.
        self.assertGreater(v["busy"], 0)
        self.assertLessEqual(v["busy"], v["max"] * 1.0001)
        self.assertGreater(v["wall"], 0)
        self.assertEqual(v["discarded"], 0)  # no GPU clock is read on PoCL
        if flops is not None:
            self.assertAlmostEqual(v["gflops"], flops / v["p50"], delta=v["gflops"] * 1e-9)
            self.assertAlmostEqual(v["gbps"], nbytes / v["p50"], delta=v["gbps"] * 1e-9)
        return v

    def test_benchmark_and_compare(self):
        got = self.run_bench("session")
        items, iters = 4096, 400
        flops, nbytes = 2.0 * items * iters, 2.0 * items * 4
        hot = self.check_result(got["hot"], flops, nbytes)
        # Every kept run's span went to the caller's buffer (cap 4096), within [min, max].
        self.assertEqual(hot["samples_n"], min(hot["runs"], 4096))
        self.assertEqual(hot["samples_in_range"], 1)
        self.assertEqual(hot["flush"], 0)
        cold = self.check_result(got["cold"], flops, nbytes)
        self.assertGreater(cold["flush"], 0)  # each run's flush, measured apart
        self.assertEqual(cold["samples_n"], 0)  # no buffer given
        self.assertLessEqual(cold["runs"], 200)  # max_runs

        same = got["same"]
        self.assertIn(same["verdict"], ("SAME", "UNSURE"), same)
        if same["verdict"] == "UNSURE":
            self.assertNotEqual(same["reasons"], "0", same)
        lo, ratio, hi = float(same["lo"]), float(same["ratio"]), float(same["hi"])
        self.assertTrue(lo <= ratio <= hi, same)
        self.assertEqual(same["a_runs"], same["b_runs"])  # pairs
        self.assertIn(same["a_stop"], STOPS | {"decided"})

        # 4x the work: SLOWER. The engine may still answer UNSURE where this 2-core machine is
        # busy with other work (PoCL's kernels run on its CPUs) and the noise is past the
        # threshold, or the samples drift or have two modes: then for those reasons alone, and
        # never SAME or FASTER. On an idle machine it is SLOWER.
        four = got["four"]
        self.assertIn(four["verdict"], ("SLOWER", "UNSURE"), four)
        machine = KPROF_UNSURE_BUSY | KPROF_UNSURE_DRIFT | KPROF_UNSURE_MODES
        if four["verdict"] == "SLOWER":
            self.assertEqual(four["reasons"], "0")
        else:
            self.assertNotEqual(int(four["reasons"]), 0, four)
            self.assertEqual(int(four["reasons"]) & ~machine, 0, four)
        self.assertGreater(float(four["lo"]), 1.01)
        self.assertTrue(float(four["lo"]) <= float(four["ratio"]) <= float(four["hi"]), four)
        self.assertGreater(float(four["b_p50"]), float(four["a_p50"]))

    def test_errors_are_clear(self):
        got = self.run_bench("session")
        expect = {
            "no-callback": r"^INVALID: kprof_benchmark: no callback",
            "result-size-0": r"^INVALID: kprof_benchmark: result->size is 0",
            "options-size-0": r"^INVALID: kprof_benchmark: options.size",
            "bad-noise": r"^INVALID: kprof_benchmark: max_noise must be",
            "bad-collector": r"^INVALID: kprof_benchmark: collector 0x80 is neither",
            "bad-budget": r"^INVALID: kprof_benchmark: budget_s must be",
            "cap-without-samples": r"^INVALID: kprof_benchmark: samples_cap is set",
            "bad-cache": r"^INVALID: kprof_benchmark: cache 5",
            "no-device-work": r"^INVALID: kprof_benchmark: run 1 .*launched no device work that "
                              r"the OpenCL collector saw",
            "compare-no-b": r"^INVALID: kprof_benchmark_compare: fn_a, fn_b and out",
        }
        for case, pattern in expect.items():
            self.assertRegex(got[case], pattern, case)

    def test_opencl_the_layer_never_saw(self):
        got = self.run_bench("never")
        self.assertRegex(got["hot"], r"^UNAVAILABLE: kprof_benchmark: the program's OpenCL does "
                                     r"not go through kprof's OpenCL layer")
        self.assertIn("KPROF=1", got["hot"])
        self.assertIn("before", got["hot"])

    def test_while_a_session_records(self):
        # KPROF=1 with the OpenCL collector: the session records while the benchmark runs; its
        # runs are the session's kernels too (the layer's tracker and the benchmark share the
        # events).
        out = os.path.join(self.tmp, "auto.kprof")
        got = self.run_bench("running", env={"KPROF": "1", "KPROF_COLLECT": "opencl",
                                             "KPROF_OUTPUT": out})
        hot = self.check_result(got["hot"])
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        calls = {g["name"]: g["calls"] for g in r["device"]}
        # warm-ups and timed runs (kept or not), all recorded
        self.assertGreaterEqual(calls.get("spin", 0), hot["runs"] + 3, calls)


if __name__ == "__main__":
    kptest.main()
