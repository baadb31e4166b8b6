"""kprof run on PoCL: timing from device timestamps, results checked against an independent
computation of the same deterministic inputs, JSON and run.json, cache and dumps."""

import json
import os
import sqlite3

import kptest

SPEC4K = "f32:4096,f32:4096,f32:4096,u32=4096"

KERNELS_2D = r"""
__kernel void madd(__global float *c, __global const float *a, __global const float *b,
                   uint width)
{
    size_t x = get_global_id(0), y = get_global_id(1);
    c[y * width + x] = a[y * width + x] * 2.0f + b[y * width + x];
}
"""

KERNEL_LOCAL = r"""
__kernel void block_sum(__global uint *out, __global const uint *in, __local uint *scratch)
{
    size_t l = get_local_id(0), g = get_global_id(0), n = get_local_size(0);
    scratch[l] = in[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        uint s = 0;
        for (size_t i = 0; i < n; i++) s += scratch[i];
        out[get_group_id(0)] = s;
    }
}
"""

KERNEL_FILLS = r"""
__kernel void fills(__global int *iota, __global double *c, __global uchar *z, long scale)
{
    size_t i = get_global_id(0);
    iota[i] = iota[i] * (int)scale;
    c[i] = c[i] + 1.0;
    z[i] = z[i] + 1;
}
"""


class Run(kptest.KprofTestCase):
    def isolate_demo(self, name="demo"):
        self.kprof("isolate", name, "--lang", "cl", expect=0)
        return os.path.join(self.home, "kernels", name)

    def test_human_output(self):
        self.isolate_demo()
        p = self.kprof("run", "demo", "--entry", "demo_add", "--grid", "4096", "--tg", "64",
                       "--buffers", SPEC4K, "--iters", "7", expect=0)
        out = p.stdout
        self.assertRegex(out, r"\(opencl device \d+\)")
        # The times are labelled with what the device is: GPU ms on a GPU only.
        index = int(out.split("(opencl device ")[1].split(")")[0])
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        dev = [d for d in caps["backends"][0]["devices"] if d["index"] == index][0]
        clock = "GPU" if dev["is_gpu"] else "device"
        if not dev["is_gpu"]:
            self.assertNotIn("GPU", out)
        for text in ("demo_add on ", clock + " (median)", clock + " (min)",
                     clock + " (p90)", clock + " (max)", "~GB/s touched", "grid               4096",
                     "threadgroup        64", "7 timed after 3 warm-ups", "reflection: max tg",
                     "preferred multiple", "local mem", "private mem", "buffers after the run:",
                     "#1 out", "#2 a", "#3 b", "readings:", "touched once per dispatch",
                     "single work-group size" if not dev["is_gpu"] else "single threadgroup size"):
            self.assertIn(text, out)
        self.assertEqual(p.stderr, "")

    def test_json_result_matches_independent_computation(self):
        d = self.isolate_demo()
        r = self.run_json("run", "demo", "--entry", "demo_add", "--grid", "4096", "--tg", "64",
                          "--buffers", SPEC4K, "--iters", "9", "--warmup", "2")
        self.assertEqual(r["backend"], "opencl")
        self.assertEqual(r["entry"], "demo_add")
        self.assertEqual(r["grid"], [4096])
        self.assertEqual(r["threadgroup"], [64])
        self.assertEqual(r["iterations"], 9)
        self.assertEqual(r["warmup"], 2)
        samples = r["gpu_ms_samples"]
        self.assertEqual(len(samples), 9)
        s = sorted(samples)
        self.assertEqual(r["gpu_ms_median"], s[len(s) // 2])
        self.assertEqual(r["gpu_ms_min"], s[0])
        self.assertEqual(r["gpu_ms_max"], s[-1])
        self.assertEqual(r["gpu_ms_p90"], s[min(len(s) - 1, int(0.9 * len(s)))])
        self.assertGreater(r["gpu_ms_min"], 0)
        self.assertEqual(r["bytes"], 3 * 4096 * 4)
        self.assertTrue(r["bytes_assumed_once_per_element"])
        self.assertAlmostEqual(r["approx_gb_per_s"],
                               r["bytes"] / (r["gpu_ms_median"] * 1e-3) / 1e9, places=6)
        self.assertGreater(r["reflection"]["max_threadgroup_size"], 0)
        self.assertIn(r["reflection"]["preferred_multiple"], range(1, 4097))
        ids = [x["id"] for x in r["readings"]]
        self.assertIn("bytes_assumed", ids)
        self.assertIn("sweep", ids)
        # The output is a + b of the LCG fills of arguments 1 and 2.
        a = kptest.fill_f32(1, 4096)
        b = kptest.fill_f32(2, 4096)
        out = [kptest.f32(x + y) for x, y in zip(a, b)]
        bufs = r["buffers"]
        self.assertEqual([x["arg"] for x in bufs], [0, 1, 2])
        self.assertEqual([x["name"] for x in bufs], ["out", "a", "b"])
        self.assertEqual(bufs[1]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", a)))
        self.assertEqual(bufs[2]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", b)))
        self.assertEqual(bufs[0]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", out)))
        self.assertAlmostEqual(bufs[0]["sum"], sum(out), delta=1e-3)
        self.assertEqual(bufs[0]["first"], out[:4])
        self.assertEqual(bufs[0]["min"], min(out))
        # run.json in the kernel folder holds the same document.
        with open(os.path.join(d, "run.json")) as f:
            self.assertEqual(json.load(f), r)
        self.assertEqual(sorted(os.listdir(d)), ["kernel.cl", "run.json"])

    def test_same_digests_every_run_and_without_json_no_run_json(self):
        d = self.isolate_demo()
        self.kprof("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K, expect=0)
        self.assertFalse(os.path.exists(os.path.join(d, "run.json")))
        r1 = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K)
        r2 = self.run_json("run", "demo", "--grid", "4096", "--tg", "128", "--buffers", SPEC4K)
        self.assertEqual([b["fnv1a64"] for b in r1["buffers"]],
                         [b["fnv1a64"] for b in r2["buffers"]])

    def test_file_target_2d(self):
        path = self.write("k/m.cl", KERNELS_2D)
        r = self.run_json("run", path, "--grid", "64x32", "--tg", "8x4",
                          "--buffers", "f32:2048,f32:2048,f32:2048,u32=64", "--iters", "3")
        self.assertEqual(r["entry"], "madd")  # the file's only kernel
        self.assertEqual(r["grid"], [64, 32])
        self.assertEqual(r["threadgroup"], [8, 4])
        a = kptest.fill_f32(1, 2048)
        b = kptest.fill_f32(2, 2048)
        c = [kptest.f32(kptest.f32(x * 2.0) + y) for x, y in zip(a, b)]
        self.assertEqual(r["buffers"][0]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", c)))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "k", "run.json")))

    def test_local_memory_argument(self):
        path = self.write("l.cl", KERNEL_LOCAL)
        r = self.run_json("run", path, "--grid", "1024", "--tg", "64",
                          "--buffers", "u32:16:zero,u32:1024:iota,local:256", "--iters", "2")
        expected = [sum(range(g * 64, g * 64 + 64)) for g in range(16)]
        self.assertEqual(r["buffers"][0]["fnv1a64"], kptest.fnv1a64(kptest.pack("I", expected)))
        self.assertEqual(r["buffers"][0]["sum"], sum(range(1024)))
        # Issue 10, item 8: the local:BYTES argument is dynamic threadgroup memory, reported
        # apart from the kernel's own (static) memory, which this kernel has none of.
        # (NVIDIA's OpenCL reports 1 byte of its own for such a kernel: H200, 2026-11-30.)
        self.assertLessEqual(r["reflection"]["static_local_bytes"], 16)
        self.assertEqual(r["reflection"]["dynamic_local_bytes"], 256)
        p = self.kprof("run", path, "--grid", "1024", "--tg", "64",
                       "--buffers", "u32:16:zero,u32:1024:iota,local:256", "--iters", "2", expect=0)
        self.assertRegex(p.stdout, r"local mem \d+ B static \+ 256 B dynamic")

    def test_fills_and_scalars(self):
        path = self.write("f.cl", KERNEL_FILLS)
        r = self.run_json("run", path, "--grid", "64", "--tg", "8",
                          "--buffers", "i32:64:iota,f64:64:const=2.5,u8:64:zero,i64=3",
                          "--iters", "1", "--warmup", "0")
        iota, c, z = r["buffers"]
        self.assertEqual(iota["sum"], 3 * sum(range(64)))
        self.assertEqual(iota["first"], [0, 3, 6, 9])
        self.assertEqual(c["sum"], 64 * 3.5)
        self.assertEqual(z["max"], 1)

    def test_bytes_override(self):
        self.isolate_demo()
        r = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K,
                          "--bytes", "1000")
        self.assertEqual(r["bytes"], 1000)
        self.assertFalse(r["bytes_assumed_once_per_element"])
        self.assertNotIn("bytes_assumed", [x["id"] for x in r["readings"]])

    def test_compile_cache(self):
        self.isolate_demo()
        args = ("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K)
        r1 = self.run_json(*args)
        r2 = self.run_json(*args)
        self.assertFalse(r1["compile"]["cache_hit"])
        self.assertTrue(r2["compile"]["cache_hit"])
        entries = os.listdir(os.path.join(self.cache, "opencl"))
        self.assertEqual(len([e for e in entries if e.endswith(".bin")]), 1)
        self.assertEqual(len([e for e in entries if e.endswith(".meta")]), 1)
        # Other options are another entry.
        r3 = self.run_json(*args, "-D", "UNUSED=1")
        self.assertFalse(r3["compile"]["cache_hit"])
        # A damaged entry is a miss, not a failure.
        for e in os.listdir(os.path.join(self.cache, "opencl")):
            with open(os.path.join(self.cache, "opencl", e), "w") as f:
                f.write("garbage")
        r4 = self.run_json(*args)
        self.assertFalse(r4["compile"]["cache_hit"])
        self.assertEqual(r4["buffers"], r1["buffers"])

    def test_dump_dir(self):
        self.isolate_demo()
        dump = os.path.join(self.tmp, "dumps")
        self.kprof("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K,
                   env={"KPROF_DUMP_DIR": dump}, expect=0)
        exts = sorted(os.path.splitext(f)[1] for f in os.listdir(dump))
        self.assertEqual(exts, [".bin", ".cl", ".log", ".options"])
        cl = [f for f in os.listdir(dump) if f.endswith(".cl")][0]
        self.assertTrue(cl.startswith("kernel-"))

    def test_backend_and_device_choice(self):
        self.isolate_demo()
        args = ("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K)
        self.assertEqual(self.run_json(*args, "--backend", "opencl", "--device", "0")["backend"],
                         "opencl")
        self.kprof(*args, env={"KPROF_BACKEND": "opencl", "KPROF_DEVICE": "0"}, expect=0)
        p = self.kprof(*args, "--device", "7", expect=3)
        self.assertIn("device 7 does not exist", p.stderr)
        p = self.kprof(*args, env={"KPROF_DEVICE": "x"}, expect=2)
        self.assertIn("KPROF_DEVICE='x'", p.stderr)
        p = self.kprof(*args, "--backend", "metal", expect=2)
        self.assertIn("'metal' is not a backend", p.stderr)

    # Issue 10, item 7: a heavy kernel's run shows what it is doing, on a terminal only (the
    # line is drawn when each phase begins, so this holds however fast the machine is).
    def test_progress_on_a_terminal_only(self):
        self.isolate_demo()
        args = ["run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K,
                "--iters", "2"]
        p = self.kprof(*args, expect=0)
        self.assertEqual(p.stderr, "")
        code, out = self.on_terminal(*args)
        self.assertEqual(code, 0, out)
        self.assertIn(b"\r\x1b[Krun: demo: compile, fill and bind buffers", out)
        self.assertIn(b"\r\x1b[Krun: demo_add: 3 warm-ups + 2 timed dispatches", out)
        # Cleared before the panel: the table starts on a clean line.
        self.assertIn(b"\r\x1b[Kdemo_add on ", out)


# kprof's store (src/store/store.c, schema 1): a test writes the ceiling it wants into it, so the
# share of the ceiling a run reports is forced, whatever the machine's speed.
STORE_SCHEMA = """
CREATE TABLE ceilings (device_key TEXT PRIMARY KEY, backend TEXT NOT NULL, device TEXT NOT NULL,
  driver TEXT, copy_gbs REAL NOT NULL, copy_bytes INTEGER, demo_add_gbs REAL, demo_add_ms REAL,
  demo_add_elements INTEGER, method TEXT, measured_at INTEGER NOT NULL);
PRAGMA user_version = 1;
"""


class AboveTheCeiling(kptest.KprofTestCase):
    """Readings above the measured ceiling say why the figure cannot be DRAM traffic, and never
    "bandwidth-bound" (issue 10, item 2). The ceiling is written into the store: 1e-6 GB/s puts
    any run far above it, so what the tests check is decided by sizes, not by speed."""

    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        caps = self.run_json("caps", "--backend", "opencl")
        self.device = caps["backends"][0]["devices"][0]
        db = sqlite3.connect(self.env["KPROF_STORE"])
        db.executescript(STORE_SCHEMA)
        d = self.device
        db.execute("INSERT INTO ceilings VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   ("opencl|%s|%s" % (d["name"], d["platform"]), "opencl", d["name"],
                    d["driver"], 1e-6, 1 << 20, 0, 0, 0, "written by the test", 1))
        db.commit()
        db.close()

    def check_never_bandwidth_bound(self, r):
        ids = [x["id"] for x in r["readings"]]
        self.assertIn("above_ceiling", ids)
        self.assertNotIn("bandwidth_bound", ids)
        for x in r["readings"]:
            self.assertNotIn("bandwidth-bound", x["text"])
        self.assertGreater(r["ceiling_percent"], 110)
        return [x["text"] for x in r["readings"] if x["id"] == "above_ceiling"][0]

    def test_grid_smaller_than_the_buffers(self):
        # The case: grid 3,000 over 1M-element buffers.
        r = self.run_json("run", "demo", "--device", "0", "--grid", "3000", "--tg", "8",
                          "--buffers", "f32:1M,f32:1M,f32:1M,u32=3000", "--iters", "3")
        self.assertEqual(r["working_set_bytes"], 3 * 4 << 20)
        self.assertEqual(r["grid_touch_bytes"], 3 * 3000 * 4)
        self.assertIn("grid_short", r["not_dram_reasons"])
        text = self.check_never_bandwidth_bound(r)
        self.assertIn("cannot be DRAM traffic", text)
        self.assertIn("A grid of 3000 threads touches at most 35.16 KiB of the 12 MiB its "
                      "buffers hold", text)
        # The text panel says the same.
        out = self.kprof("run", "demo", "--device", "0", "--grid", "3000", "--tg", "8",
                         "--buffers", "f32:1M,f32:1M,f32:1M,u32=3000", "--iters", "3",
                         expect=0).stdout
        self.assertIn("A grid of 3000 threads touches at most", out)
        self.assertNotIn("bandwidth-bound", out)

    def test_working_set_inside_the_cache(self):
        cache = self.device.get("global_mem_cache_bytes") or 0
        if cache < 48 * 1024:
            self.skipTest("the OpenCL device reports no global memory cache (%r)" % cache)
        # Three buffers filling at most half the cache, the grid covering them.
        n = min(cache // 24, 1 << 19) // 64 * 64
        r = self.run_json("run", "demo", "--device", "0", "--grid", str(n), "--tg", "64",
                          "--buffers", "f32:%d,f32:%d,f32:%d,u32=%d" % (n, n, n, n),
                          "--iters", "3")
        self.assertEqual(r["last_level_cache_bytes"], cache)
        self.assertEqual(r["working_set_bytes"], 12 * n)
        self.assertEqual(r["grid_touch_bytes"], 12 * n)
        self.assertEqual(r["not_dram_reasons"], ["fits_cache"])
        text = self.check_never_bandwidth_bound(r)
        self.assertIn("fits in the device's", text)
        self.assertIn("last-level cache", text)

    def test_bytes_given_above_the_ceiling(self):
        r = self.run_json("run", "demo", "--device", "0", "--grid", "4096", "--tg", "64",
                          "--buffers", SPEC4K, "--bytes", "1G", "--iters", "3")
        self.assertNotIn("grid_short", r["not_dram_reasons"])
        text = self.check_never_bandwidth_bound(r)
        # 48 KiB of buffers: the cache explains it where the device reports one, else --bytes.
        if r["last_level_cache_bytes"]:
            self.assertIn("fits in the device's", text)
        else:
            self.assertIn("--bytes 1 GiB is more than the kernel moves", text)


# A kernel slow enough to show the time budget at work (~0.25 s a dispatch on a 2-core PoCL,
# and 10x faster would still overrun the budgets below 50 times over): a dependent chain of
# n multiply-adds per work-item.
KERNEL_SPIN = r"""
__kernel void spin(__global float *x, uint n)
{
    size_t i = get_global_id(0);
    float v = x[i];
    for (uint k = 0; k < n; k++) v = v * 0.999999f + 0.5f;
    x[i] = v;
}
"""
SPIN = ("--grid", "2048", "--tg", "64", "--buffers", "f32:2048,u32=200000")


class TimeBudget(kptest.KprofTestCase):
    """Issue 23 item 3: a slow kernel's run times fewer dispatches than the default, and says
    so; --iters given wins. No assertion on how long anything took."""

    def spin(self):
        path = os.path.join(self.tmp, "spin.cl")
        with open(path, "w") as f:
            f.write(KERNEL_SPIN)
        return path

    def test_budget_cuts_the_default_count_and_says_so(self):
        path = self.spin()
        budget = kptest.budget_of_dispatches(self, "run", path, *SPIN)
        r = self.run_json("run", path, *SPIN, "--warmup", "1", "--time-budget", budget)
        self.assertEqual(r["iterations_asked"], 50)
        self.assertLess(r["iterations"], 50)
        self.assertGreaterEqual(r["iterations"], 1)
        self.assertEqual(len(r["gpu_ms_samples"]), r["iterations"])
        self.assertTrue(r["time_budget_cut"])
        self.assertAlmostEqual(r["time_budget_s"], float(budget), places=6)
        p = self.kprof("run", path, *SPIN, "--warmup", "1", "--time-budget", budget + "s",
                       expect=0)
        self.assertRegex(p.stdout, r"time budget +\d+ of 50 timed dispatches")
        self.assertIn("--time-budget", p.stdout)
        self.assertIn("--iters N", p.stdout)

    def test_iters_wins(self):
        path = self.spin()
        r = self.run_json("run", path, *SPIN, "--warmup", "0", "--iters", "3",
                          "--time-budget", "0.01")
        self.assertEqual(r["iterations"], 3)
        self.assertEqual(r["iterations_asked"], 3)
        self.assertIsNone(r["time_budget_s"])
        self.assertFalse(r["time_budget_cut"])
        p = self.kprof("run", path, *SPIN, "--warmup", "0", "--iters", "2", "--time-budget",
                       "0.01", expect=0)
        self.assertNotIn("time budget", p.stdout)

    def test_a_fast_kernel_runs_every_dispatch(self):
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        r = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K)
        self.assertEqual(r["iterations"], 50)
        self.assertFalse(r["time_budget_cut"])

    def test_bad_budget(self):
        path = self.spin()
        for bad in ("-1", "x", "5m", ""):
            p = self.kprof("run", path, *SPIN, "--time-budget", bad, expect=2)
            self.assertIn("--time-budget", p.stderr)

    def test_progress_lines_off_a_terminal(self):
        # Off a terminal, long work prints a line of its own every KPROF_PROGRESS_EVERY
        # seconds (10 by default): here 0.2 s, and the run lasts well over a second.
        path = self.spin()
        p = self.kprof("run", path, *SPIN, "--warmup", "0", "--iters", "8",
                       env={"KPROF_PROGRESS_EVERY": "0.2"}, expect=0)
        self.assertRegex(p.stderr, r"(?m)^kprof: run: spin: 0 warm-ups \+ 8 timed dispatches"
                                   r"( \(\d+ s\))?$")
        self.assertNotIn("\r", p.stderr)
        self.assertNotIn("\033", p.stderr)
        # None by default under the tests (kptest sets 0), and none for short work.
        p = self.kprof("run", path, *SPIN, "--warmup", "0", "--iters", "1", expect=0)
        self.assertEqual(p.stderr, "")


if __name__ == "__main__":
    kptest.main()
