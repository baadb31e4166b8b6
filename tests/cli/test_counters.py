"""--counters on PoCL, where no hardware counters can be read (OpenCL has no counters op): run,
sweep (and run --sweep-tg), bench and caps say why in one line on stderr, exit 0, and give the
timing as without the flag; their JSON says the counters are unavailable and why. A malformed
--counters LIST is refused (exit 2) before anything runs; a LIST is told from a kernel by its
"__" or commas. Without --counters nothing changes (no "counters" key, nothing on stderr). The
FP32 FLOP peak `caps --measure` adds beside the bandwidth ceiling is checked in test_caps.py; the
counters themselves on a CUDA GPU in tests/gpu/test_counters_run_cuda.py."""

import json
import os

import kptest

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"
LAUNCH = ["--grid", "4096", "--tg", "64", "--buffers", SPEC]
QUICK = ["--min-time", "0", "--min-samples", "9", "--max-noise", "50", "--timeout", "5"]
# A bench whose samples are counted stops on --min-samples and --max-noise, never on the clock:
# its --timeout (wall time, and it ends a measurement before --min-samples) is a hang guard only.
# A cold sample on PoCL first flushes a scratch twice the host's last-level cache (0.2 to 0.3 s
# here idle, several times that with the machine loaded), so QUICK's 5 s let the cold row stop at
# 5 to 8 samples on a loaded machine. Two measurements (hot and cold) of at most 120 s each stay
# inside kptest.run's 300 s.
COUNTED = QUICK[:-2] + ["--timeout", "120"]
WHY = "the opencl backend reads no hardware counters"


class Counters(kptest.KprofTestCase):
    def demo(self):
        return os.path.join(kptest.SOURCE_DIR, "kernels", "demo_add.cl")

    def the_one_line(self, stderr):
        lines = stderr.splitlines()
        self.assertEqual(len(lines), 1, stderr)
        self.assertTrue(lines[0].startswith("kprof: counters: " + WHY), lines[0])
        self.assertIn("(kprof reads them on CUDA devices, through CUPTI)", lines[0])
        return lines[0]

    def assert_unavailable(self, counters):
        self.assertEqual(counters["available"], False)
        self.assertIn(WHY, counters["reason"])
        self.assertEqual(sorted(counters), ["available", "reason"])

    def test_run_text(self):
        p = self.kprof("run", self.demo(), *LAUNCH, "--iters", "5", "--counters",
                       "--backend", "opencl", expect=0)
        self.the_one_line(p.stderr)
        # "device" on PoCL, "GPU" on a GPU's OpenCL (the GPU machine's NVIDIA OpenCL).
        self.assertRegex(p.stdout, r"(device|GPU) \(median\)")
        self.assertIn("buffers after the run:", p.stdout)
        self.assertNotIn("counters (", p.stdout)  # no block of n/a: the line said why

    def test_run_json_and_without_the_flag(self):
        p = self.kprof("run", self.demo(), *LAUNCH, "--iters", "5", "--counters", "--json",
                       expect=0)
        self.the_one_line(p.stderr)
        r = json.loads(p.stdout)
        self.assertGreater(r["gpu_ms_median"], 0)
        self.assertEqual(len(r["gpu_ms_samples"]), 5)
        self.assert_unavailable(r["counters"])
        # The readings are the estimate's, as without --counters.
        ids = [x["id"] for x in r["readings"]]
        self.assertIn("bytes_assumed", ids)
        self.assertNotIn("roofline", ids)
        plain = self.kprof("run", self.demo(), *LAUNCH, "--iters", "5", "--json", expect=0)
        self.assertEqual(plain.stderr, "")
        q = json.loads(plain.stdout)
        self.assertNotIn("counters", q)
        self.assertEqual([b["fnv1a64"] for b in q["buffers"]],
                         [b["fnv1a64"] for b in r["buffers"]])
        self.assertEqual(ids, [x["id"] for x in q["readings"]])

    def test_run_list_before_and_after_the_kernel(self):
        # `--counters LIST` (a space, then names holding "__"), `--counters=LIST`, and a LIST
        # after the kernel: the kernel stays the kernel.
        for args in (["--counters", "dram__bytes_read.sum,no_such__metric.sum", self.demo()],
                     [self.demo(), "--counters=lts__t_sector_hit_rate.pct"],
                     [self.demo(), "--counters", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]):
            p = self.kprof("run", *args, *LAUNCH, "--iters", "3", "--json", expect=0)
            self.the_one_line(p.stderr)
            r = json.loads(p.stdout)
            self.assertEqual(r["entry"], "demo_add")
            self.assert_unavailable(r["counters"])
        # Plain --counters before the kernel: the kernel is not taken for a LIST.
        p = self.kprof("run", "--counters", self.demo(), *LAUNCH, "--iters", "3", expect=0)
        self.the_one_line(p.stderr)

    def test_kernel_holding_underscores_is_not_a_list(self):
        # A kernel named "demo__add.cl" (it holds "__") right after --counters stays the kernel:
        # a file, a path or a kernel's extension is never a LIST.
        d = self.tmp
        k = os.path.join(d, "demo__add.cl")
        with open(self.demo()) as f, open(k, "w") as g:
            g.write(f.read())
        for word in ("demo__add.cl", k):
            p = self.kprof("run", "--counters", word, *LAUNCH, "--iters", "3", "--json",
                           cwd=d, expect=0)
            self.the_one_line(p.stderr)
            self.assertEqual(json.loads(p.stdout)["entry"], "demo_add")
        # bench A B: A is not lost to the LIST.
        p = self.kprof("bench", "--counters", "demo__add.cl", self.demo(), *LAUNCH, *QUICK,
                       "--json", cwd=d, expect=0)
        self.assertEqual(len(json.loads(p.stdout)["points"][0]["kernels"]), 2)
        # A LIST taken with no kernel left: the usage error says so.
        for cmd in ("run", "bench"):
            p = self.kprof(cmd, *LAUNCH, "--counters", "dram__bytes_read.sum", expect=2)
            self.assertIn("--counters took 'dram__bytes_read.sum' as its LIST", p.stderr)

    def test_sweep_usage_errors_name_sweep(self):
        # `kprof sweep` names itself in its usage errors (--source, a bad LIST), not `run`.
        for extra in (["--source"], ["--counters", "dram__bytes_read.sum,"]):
            p = self.kprof("sweep", self.demo(), *LAUNCH, *extra, expect=2)
            self.assertIn("(kprof sweep --help shows the options)", p.stderr)
            self.assertNotIn("kprof run --help", p.stderr)

    def test_malformed_list_exit_2(self):
        cases = [
            (["--counters", "dram__bytes_read.sum,,lts__t_sector_hit_rate.pct"], "item 2 is empty"),
            (["--counters", "dram__bytes_read.sum,"], "item 2 is empty"),
            (["--counters", ",dram__bytes_read.sum"], "item 1 is empty"),
            (["--counters="], "--counters LIST is empty"),
            (["--counters=dram__bytes read.sum"], "holds ' '"),
        ]
        for cmd in ("run", "sweep", "bench"):
            for extra, says in cases:
                p = self.kprof(cmd, self.demo(), *LAUNCH, *extra, expect=2)
                self.assertIn("kprof: error: --counters", p.stderr)
                self.assertIn(says, p.stderr)
                self.assertEqual(p.stdout, "")
        # More names than kprof takes at once.
        many = ",".join("m__%d.sum" % i for i in range(33))
        p = self.kprof("run", self.demo(), *LAUNCH, "--counters", many, expect=2)
        self.assertIn("more than 32 metric names", p.stderr)

    def test_sweep(self):
        p = self.kprof("sweep", self.demo(), "--grid", "4096", "--tg-list", "64,128",
                       "--buffers", SPEC, "--iters", "3", "--counters", expect=0)
        self.the_one_line(p.stderr)
        self.assertIn("◀ best tg", p.stdout)
        # No columns of dashes where the backend has no counters.
        self.assertNotIn("DRAM GB/s", p.stdout)
        p = self.kprof("run", self.demo(), *LAUNCH, "--sweep-tg", "--iters", "3",
                       "--counters", "dram__bytes_read.sum", "--json", expect=0)
        self.the_one_line(p.stderr)
        s = json.loads(p.stdout)
        self.assertTrue(s["complete"])
        self.assertGreaterEqual(len(s["points"]), 2)
        for pt in s["points"]:
            self.assertGreater(pt["gpu_ms_median"], 0)
            self.assert_unavailable(pt["counters"])
        plain = json.loads(self.kprof("sweep", self.demo(), "--grid", "4096", "--tg-list", "64",
                                      "--buffers", SPEC, "--iters", "3", "--json",
                                      expect=0).stdout)
        self.assertNotIn("counters", plain["points"][0])

    def test_bench(self):
        p = self.kprof("bench", self.demo(), *LAUNCH, *QUICK, "--counters", expect=0)
        self.the_one_line(p.stderr)
        self.assertIn("95% CI", p.stdout)
        self.assertNotIn("median ms", p.stdout)
        self.assertNotIn("counters (", p.stdout)
        p = self.kprof("bench", self.demo(), *LAUNCH, *COUNTED, "--cache", "both", "--counters",
                       "--json", expect=0)
        self.the_one_line(p.stderr)
        b = json.loads(p.stdout)
        self.assertEqual(len(b["points"]), 2)  # hot and cold rows
        for pt in b["points"]:
            k = pt["kernels"][0]
            self.assertGreaterEqual(k["samples"], 9)
            self.assert_unavailable(k["counters"])
        plain = json.loads(self.kprof("bench", self.demo(), *LAUNCH, *QUICK, "--json",
                                      expect=0).stdout)
        self.assertNotIn("counters", plain["points"][0]["kernels"][0])

    def test_caps_counters(self):
        p = self.kprof("caps", "--counters", "--backend", "opencl", expect=0)
        self.the_one_line(p.stderr)
        self.assertEqual(p.stdout, "")
        p = self.kprof("caps", "--counters", "--backend", "opencl", "--device", "0", "--json",
                       expect=0)
        self.the_one_line(p.stderr)
        c = json.loads(p.stdout)
        self.assertEqual(c["backend"], "opencl")
        self.assertEqual(c["index"], 0)
        self.assertFalse(c["available"])
        self.assertIn(WHY, c["reason"])
        self.assertEqual(c["metrics"], [])
        self.assertEqual(c["count"], 0)
        # Usage: --counters lists, --measure measures; the measuring options go with --measure.
        self.kprof("caps", "--counters", "--measure", expect=2)
        self.kprof("caps", "--counters", "--iters", "3", expect=2)
        p = self.kprof("caps", "--counters", "--backend", "opencl", "--device", "9", expect=3)
        self.assertIn("device 9 does not exist", p.stderr)

    def test_help_mentions_it(self):
        for cmd in ("run", "sweep", "bench", "caps"):
            p = self.kprof("help", cmd, expect=0)
            self.assertIn("--counters", p.stdout, cmd)


if __name__ == "__main__":
    kptest.main()
