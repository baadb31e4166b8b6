"""kprof caps, --version, --help and the command table, run as a user would."""

import json
import os

import kptest


class Caps(kptest.KprofTestCase):
    def test_text_lists_opencl_device_and_cuda_reason(self):
        p = self.kprof("caps", expect=0)
        out = p.stdout
        self.assertIn("opencl device 0:", out)
        for field in ("vendor", "driver", "compute units", "max threadgroup size",
                      "threadgroup (local) memory", "global memory", "timer resolution",
                      "profiling (device timestamps)"):
            self.assertIn(field, out)
        cuda_ok, _ = kptest.cuda_available()
        if not cuda_ok:
            line = [l for l in out.splitlines() if l.startswith("cuda:")]
            self.assertEqual(len(line), 1, out)
            self.assertRegex(line[0], r"^cuda: unavailable: \S.+")

    def test_json(self):
        caps = json.loads(self.kprof("caps", "--json", expect=0).stdout)
        names = [b["name"] for b in caps["backends"]]
        self.assertEqual(sorted(names), ["cuda", "opencl"])
        cl = [b for b in caps["backends"] if b["name"] == "opencl"][0]
        self.assertTrue(cl["available"])
        self.assertIsNone(cl["reason"])
        d = cl["devices"][0]
        self.assertEqual(d["backend"], "opencl")
        self.assertEqual(d["index"], 0)
        self.assertTrue(d["name"])
        self.assertGreater(d["compute_units"], 0)
        self.assertGreater(d["max_threadgroup_size"], 0)
        self.assertGreater(d["threadgroup_memory_bytes"], 0)
        self.assertGreater(d["global_memory_bytes"], 0)
        self.assertGreater(d["timer_resolution_ns"], 0)
        self.assertTrue(d["profiling"])
        cuda = [b for b in caps["backends"] if b["name"] == "cuda"][0]
        if not cuda["available"]:
            self.assertTrue(cuda["reason"])

    def test_no_platform_says_why_and_exits_3(self):
        empty = os.path.join(self.tmp, "vendors")
        os.makedirs(empty)
        env = {"OCL_ICD_VENDORS": empty, "OCL_ICD_FILENAMES": None}
        if self.kprof("caps", "--backend", "opencl", env=env).returncode == 0:
            self.skipTest("this machine's OpenCL ICD loader ignores OCL_ICD_VENDORS, so no test "
                          "can hide its platforms")
        p = self.kprof("caps", "--backend", "opencl", env=env, expect=3)
        self.assertIn("opencl: unavailable: no OpenCL platform found", p.stdout)
        self.assertIn("no usable device", p.stderr)
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl",
                                     env=env, expect=3).stdout)
        self.assertFalse(caps["backends"][0]["available"])
        self.assertIn("no OpenCL platform", caps["backends"][0]["reason"])

    def test_missing_loader_says_why(self):
        p = self.kprof("caps", "--backend", "opencl",
                       env={"KPROF_OPENCL_LIBRARY": "/nonexistent/libOpenCL.so.1"}, expect=3)
        self.assertIn("opencl: unavailable: /nonexistent/libOpenCL.so.1", p.stdout)
        self.assertIn("could not be loaded", p.stdout)

    def test_bad_arguments(self):
        p = self.kprof("caps", "--backend", "metal", expect=2)
        self.assertIn("kprof: error: --backend 'metal' is not a backend", p.stderr)
        self.kprof("caps", "--bogus", expect=2)
        self.kprof("caps", "extra", expect=2)


class Measure(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.env["KPROF_STORE"] = os.path.join(self.tmp, "store", "kprof.db")

    def test_measure_stores_ceiling_and_run_reports_against_it(self):
        r = json.loads(self.kprof("caps", "--measure", "--backend", "opencl", "--max-bytes", "16M",
                                  "--iters", "3", "--json", expect=0).stdout)
        self.assertEqual(r["backend"], "opencl")
        kernels = [p["kernel"] for p in r["points"]]
        self.assertEqual(kernels, ["copy_f4", "copy_f4x4", "copy_f4_stride", "demo_add"])
        copies = [p for p in r["points"] if p["kernel"] != "demo_add"]
        for p in copies:
            self.assertEqual(p["bytes"], 16 << 20)
            self.assertLessEqual(p["best_ms"], p["median_ms"])
            self.assertAlmostEqual(p["gb_per_s"], 2 * p["bytes"] / (p["best_ms"] * 1e-3) / 1e9,
                                   delta=1e-6 * p["gb_per_s"])
        self.assertEqual(r["ceiling_gb_per_s"], max(p["gb_per_s"] for p in copies))
        self.assertTrue(os.path.exists(r["store"]))
        # caps shows it; run reports against it.
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        dev = [d for d in caps["backends"][0]["devices"] if d["index"] == r["index"]][0]
        mc = dev["measured_ceiling"]
        self.assertEqual(mc["copy_gb_per_s"], r["ceiling_gb_per_s"])
        self.assertIn("bandwidth ceiling", self.kprof("caps", expect=0).stdout)
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        run = json.loads(self.kprof("run", "demo", "--grid", "4096", "--tg", "64", "--buffers",
                                    "f32:4096,f32:4096,f32:4096,u32=4096", "--json",
                                    expect=0).stdout)
        self.assertEqual(run["ceiling_gb_per_s"], r["ceiling_gb_per_s"])
        self.assertAlmostEqual(run["ceiling_percent"],
                               100 * run["approx_gb_per_s"] / r["ceiling_gb_per_s"], places=6)
        # 48 KiB of buffers: where the device names its cache they fit in it, and the
        # figure is never called bandwidth-bound whatever its share of the ceiling.
        self.assertIn(run["readings"][0]["id"],
                      ("bandwidth", "bandwidth_bound", "not_dram", "above_ceiling"))
        if run["last_level_cache_bytes"]:
            self.assertIn("fits_cache", run["not_dram_reasons"])
            self.assertNotEqual(run["readings"][0]["id"], "bandwidth_bound")

    def test_without_measurement_run_says_how(self):
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        self.assertIsNone(caps["backends"][0]["devices"][0]["measured_ceiling"])
        self.assertIn("not measured yet (kprof caps --measure)", self.kprof("caps", expect=0).stdout)
        self.assertFalse(os.path.exists(self.env["KPROF_STORE"]))

    def test_foreign_store_is_refused_untouched(self):
        path = self.env["KPROF_STORE"]
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write("not a database")
        # A foreign file is bad input (exit 2), as every bad input file is.
        p = self.kprof("caps", "--measure", "--max-bytes", "8M", "--iters", "1", expect=2)
        self.assertIn("is not a kprof store", p.stderr)
        self.assertEqual(open(path).read(), "not a database")

    def test_measure_usage(self):
        self.kprof("caps", "--max-bytes", "8M", expect=2)
        self.kprof("caps", "--measure", "--max-bytes", "1K", expect=2)
        self.kprof("caps", "--measure", "--iters", "0", expect=2)
        p = self.kprof("caps", "--measure", "--backend", "opencl", "--device", "9", expect=3)
        self.assertIn("device 9 does not exist", p.stderr)


class Cli(kptest.KprofTestCase):
    needs_opencl = False

    def test_version(self):
        p = self.kprof("--version", expect=0)
        self.assertRegex(p.stdout, r"^kprof \d+\.\d+\.\d+\n$")
        self.assertEqual(self.kprof("version", expect=0).stdout, p.stdout)

    def test_help_lists_commands_and_exit_codes(self):
        p = self.kprof("--help", expect=0)
        for cmd in ("caps", "isolate", "run", "help"):
            self.assertRegex(p.stdout, r"\n  %s\s" % cmd)
        for code in ("0  success", "1  runtime failure", "2  usage error", "3  backend or device",
                     "4  kernel fault"):
            self.assertIn(code, p.stdout)

    def test_help_cmd_equals_cmd_help(self):
        for cmd in ("caps", "isolate", "run"):
            a = self.kprof("help", cmd, expect=0).stdout
            b = self.kprof(cmd, "--help", expect=0).stdout
            self.assertEqual(a, b)
            self.assertTrue(a.startswith("usage: kprof %s" % cmd))

    def test_unknown_command(self):
        p = self.kprof("frobnicate", expect=2)
        self.assertIn("kprof: error: no command 'frobnicate'", p.stderr)
        self.kprof("help", "frobnicate", expect=2)
        self.kprof(expect=2)


if __name__ == "__main__":
    kptest.main()
