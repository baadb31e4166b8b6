"""kprof caps, --version, --help and the command table, run as a user would."""

import json
import os
import re

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
        # OpenCL gives no memory clock or bus width: no datasheet peak, and why (not a 0).
        self.assertIsNone(d["peak_bandwidth_gbs"])
        self.assertIn("OpenCL reports no memory clock", d["peak_bandwidth_reason"])
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

    def test_one_rule_for_backend_names(self):
        # Every command takes the same names from --backend and KPROF_BACKEND and refuses any
        # other with the same words, naming the known ones (issue 10, item 8).
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        run = ("run", "demo", "--grid", "64", "--tg", "64",
               "--buffers", "f32:64,f32:64,f32:64,u32=64", "--iters", "1")
        for source, args, env in (("--backend", ("--backend", "metal"), None),
                                  ("KPROF_BACKEND", (), {"KPROF_BACKEND": "metal"})):
            for cmd in (("caps",), ("caps", "--json"), ("caps", "--measure", "--dry-run"),
                        run, ("sweep", "demo", "--grid", "64", "--buffers", run[-3]),
                        ("isolate", "other")):
                if cmd[0] == "isolate" and args:
                    continue  # isolate has no --backend
                p = self.kprof(*cmd, *args, env=env, expect=2)
                self.assertIn("kprof: error: %s 'metal' is not a backend (choose opencl, cuda "
                              "or auto)" % source, p.stderr, cmd)
                self.assertEqual(p.stdout, "", cmd)
        self.assertFalse(os.path.exists(os.path.join(self.home, "kernels", "other")))
        # auto, and an empty KPROF_BACKEND, are every backend.
        # (The devices each lists, by their header lines: PoCL's global memory follows the
        # host's free memory, which moves between two calls on a busy machine.)
        def devices(out):
            return [l for l in out.splitlines() if re.match(r"\w+ device \d+: ", l)]
        auto = devices(self.kprof("caps", "--backend", "auto", expect=0).stdout)
        self.assertTrue(auto)
        self.assertEqual(auto, devices(self.kprof("caps", expect=0).stdout))
        self.kprof("caps", env={"KPROF_BACKEND": ""}, expect=0)
        self.kprof("caps", env={"KPROF_BACKEND": "opencl"}, expect=0)
        self.kprof(*run, env={"KPROF_BACKEND": "auto"}, expect=0)

    def test_panel_values_in_one_column_and_sizes_in_units(self):
        out = self.kprof("caps", "--backend", "opencl", expect=0).stdout
        panel = out.split("\n\n")[0].splitlines()
        self.assertTrue(panel[0].startswith("opencl device 0:"), out)
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        d = caps["backends"][0]["devices"][0]
        labels = ["vendor", "platform", "compute units", "global memory",
                  "profiling (device timestamps)", "peak bandwidth (datasheet)",
                  "global memory cache", "bandwidth ceiling"]
        columns = {}
        for line in panel[1:]:
            for label in sorted(labels, key=len, reverse=True):  # "global memory cache" first
                if line.startswith("  " + label + " "):
                    rest = line[2 + len(label):]
                    columns[label] = 2 + len(label) + len(rest) - len(rest.lstrip(" "))
                    break
        self.assertEqual(sorted(columns), sorted(labels), out)
        self.assertEqual(len(set(columns.values())), 1, columns)
        # The cache in units (JSON keeps the number of bytes).
        row = [l for l in panel if l.startswith("  global memory cache ")][0]
        value = row[columns["global memory cache"]:]
        cache = d["global_mem_cache_bytes"]
        self.assertIsInstance(cache, int)
        if cache >= 1024:
            self.assertRegex(value, r"^\d+(\.\d+)? (KiB|MiB|GiB|TiB)$")
            self.assertNotIn(str(cache), value)


def pow2_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


class Measure(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.env["KPROF_STORE"] = os.path.join(self.tmp, "store", "kprof.db")

    def pocl(self):
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        return caps["backends"][0]["devices"][0]

    def small_max_bytes(self):
        """The smallest --max-bytes kprof accepts here: the cache's size (16M when smaller)."""
        cache = self.pocl().get("global_mem_cache_bytes") or 0
        return max(16, -(-cache // (1 << 20)))

    def test_measure_stores_ceiling_and_run_reports_against_it(self):
        mb = self.small_max_bytes()
        p = self.kprof("caps", "--measure", "--backend", "opencl", "--device", "0",
                       "--max-bytes", "%dM" % mb, "--iters", "3", "--json", expect=0)
        r = json.loads(p.stdout)
        # Not on a terminal: one line saying what is measured, and no progress.
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("kprof: measuring the bandwidth ceiling of "
                                            + r["device"]), lines[0])
        self.assertIn("over %d MiB buffer (cut to --max-bytes)" % mb, lines[0])
        self.assertIn("the best of 3 timed dispatches", lines[0])
        self.assertNotIn("\r", p.stderr)
        self.assertEqual(r["backend"], "opencl")
        self.assertFalse(r["dry_run"])
        self.assertEqual(r["plan"]["buffer_bytes"], [mb << 20])
        self.assertEqual(r["plan"]["capped_by"], "max_bytes")
        self.assertEqual(r["plan"]["iters"], 3)
        # No datasheet peak on OpenCL: null, and why.
        self.assertIsNone(r["peak_bandwidth_gbs"])
        self.assertIn("OpenCL reports no memory clock", r["peak_bandwidth_reason"])
        kernels = [p["kernel"] for p in r["points"]]
        # No grid-stride copy on a CPU: it runs one work-item at a time (ceiling.h).
        copies = ["copy_f4", "copy_f4x4"] + (["copy_f4_stride"] if self.pocl()["is_gpu"] else [])
        self.assertEqual(kernels, copies + ["demo_add", "fma_f32"])
        self.assertEqual(r["plan"]["kernels"], kernels)
        # The FP32 FLOP peak: fma_f32's fastest dispatch, 16 FLOPs per thread and iteration.
        fma = r["points"][-1]
        flops = r["plan"]["fma_threads"] * r["plan"]["fma_iterations"] * 16
        self.assertAlmostEqual(fma["gflop_per_s"], flops / (fma["best_ms"] * 1e-3) / 1e9,
                               delta=1e-6 * fma["gflop_per_s"])
        self.assertEqual(r["fma_gflop_per_s"], fma["gflop_per_s"])
        self.assertIn("fma_f32", r["fma_method"])
        copies = [p for p in r["points"] if p["kernel"] not in ("demo_add", "fma_f32")]
        for p in copies:
            self.assertEqual(p["bytes"], mb << 20)
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
        self.assertEqual(mc["fma_gflop_per_s"], r["fma_gflop_per_s"])
        text = self.kprof("caps", expect=0).stdout
        self.assertIn("bandwidth ceiling", text)
        self.assertIn("FLOP peak (FP32)", text)
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        # The device measured (the default device may be another: a GPU beside PoCL).
        run = json.loads(self.kprof("run", "demo", "--backend", "opencl", "--device",
                                    str(r["index"]), "--grid", "4096", "--tg", "64", "--buffers",
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

    def test_progress_on_a_terminal(self):
        import pty
        import subprocess
        master, slave = pty.openpty()
        env = dict(os.environ)
        env.update({k: v for k, v in self.env.items() if v is not None})
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
        p = subprocess.Popen([os.environ["KPROF"], "caps", "--measure", "--backend", "opencl",
                              "--device", "0", "--max-bytes", "%dM" % self.small_max_bytes(),
                              "--iters", "1"], stdout=subprocess.PIPE, stderr=slave, env=env,
                             cwd=self.tmp)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            err += chunk
        out = p.stdout.read()
        p.stdout.close()
        self.assertEqual(p.wait(timeout=300), 0, err)
        os.close(master)
        text = err.decode()
        self.assertIn("kprof: measuring the bandwidth ceiling of ", text)
        n = 5 if self.pocl()["is_gpu"] else 4
        self.assertIn("measuring: 1/%d copy_f4 " % n, text)
        self.assertIn("measuring: %d/%d demo_add " % (n - 1, n), text)
        self.assertRegex(text, r"measuring: %d/%d fma_f32 [0-9]+ GFLOP/s" % (n, n))
        self.assertIn("ceiling:", out.decode())

    def test_dry_run_sizes_from_the_device(self):
        d = self.pocl()
        if d["is_gpu"]:
            self.skipTest("the default OpenCL device is a GPU: the CPU rule is not used")
        r = json.loads(self.kprof("caps", "--measure", "--backend", "opencl", "--device", "0",
                                  "--dry-run", "--json", expect=0).stdout)
        # The CPU rule (docs/guide/cuda.md, `kprof caps --measure`): one buffer at least 4x the
        # last-level cache and 64 MiB, a power of two, but at most 512 MiB or the cache rounded
        # up to a power of two; within
        # the largest allocation and a quarter of memory; copy_f4 and copy_f4x4, best of 20
        # after 1 warm-up.
        cache = d.get("global_mem_cache_bytes") or 0
        # The limit: a quarter of memory (PoCL's figure moves with the machine's free memory,
        # so the plan's own is used) and the largest allocation, in 64-byte groups.
        cap = r["plan"]["buffer_limit_bytes"]
        self.assertLessEqual(cap, d["max_allocation_bytes"])
        self.assertEqual(cap % 64, 0)
        base = min(pow2_at_least(max(64 << 20, 4 * cache)), pow2_at_least(max(512 << 20, cache)))
        sizes = [min(base, cap)]
        plan = r["plan"]
        self.assertTrue(r["dry_run"])
        self.assertEqual(plan["sized_for"], "cpu")
        self.assertEqual(plan["buffer_bytes"], sizes)
        self.assertEqual(plan["iters"], 20)
        self.assertEqual(plan["warmup"], 1)
        self.assertEqual(plan["points"], 2 * len(sizes) + 2)
        self.assertEqual(plan["kernels"], ["copy_f4", "copy_f4x4", "demo_add", "fma_f32"])
        # Issue 23 item 4: the time it expects, and never the minutes 2 GiB buffers took.
        self.assertGreater(plan["expected_seconds"], 0)
        self.assertLess(plan["expected_seconds"], 20)
        # The FLOP peak on a CPU: 4096 threads per compute unit, 512 iterations each.
        self.assertEqual(plan["fma_threads"], 4096 * d["compute_units"])
        self.assertEqual(plan["fma_iterations"], 512)
        self.assertEqual(plan["last_level_cache_bytes"], cache or None)
        self.assertNotIn("ceiling_gb_per_s", r)
        # The text form says the same, and nothing is stored.
        p = self.kprof("caps", "--measure", "--backend", "opencl", "--device", "0", "--dry-run",
                       expect=0)
        self.assertTrue(p.stdout.startswith("would measure the bandwidth ceiling of "), p.stdout)
        self.assertIn("best of 20 timed dispatches after 1 warm-up", p.stdout)
        self.assertRegex(p.stdout, r"; about \d+ s on an idle machine \(nothing measured")
        self.assertEqual(p.stderr, "")
        self.assertFalse(os.path.exists(self.env["KPROF_STORE"]))

    def test_max_bytes_inside_the_cache_is_refused(self):
        cache = self.pocl().get("global_mem_cache_bytes") or 0
        if cache < 2 << 20:
            self.skipTest("the OpenCL device reports no last-level cache of 2 MiB or more")
        small = cache // 2 >> 20
        p = self.kprof("caps", "--measure", "--backend", "opencl", "--device", "0",
                       "--max-bytes", "%dM" % small, expect=2)
        self.assertIn("--max-bytes %d MiB is below this device's" % small, p.stderr)
        self.assertIn("last-level cache", p.stderr)
        self.assertFalse(os.path.exists(self.env["KPROF_STORE"]))

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
        p = self.kprof("caps", "--measure", "--iters", "1", expect=2)
        self.assertIn("is not a kprof store", p.stderr)
        self.assertEqual(open(path).read(), "not a database")

    def test_measure_usage(self):
        self.kprof("caps", "--max-bytes", "8M", expect=2)
        self.kprof("caps", "--dry-run", expect=2)
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
