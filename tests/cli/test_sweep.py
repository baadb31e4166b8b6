"""kprof sweep / kprof run --sweep-tg on PoCL: the occupancy curve, its best point and ties,
bad sizes named, sweep.json, the SVG plot rendered in headless Chromium, progress on a tty."""

import json
import os
import pty
import shutil
import subprocess

import kptest

SPEC = "f32:65536,f32:65536,f32:65536,u32=65536"
KERNEL_2D = r"""
__kernel void madd(__global float *c, __global const float *a, uint width)
{
    size_t x = get_global_id(0), y = get_global_id(1);
    c[y * width + x] = a[y * width + x] * 2.0f;
}
"""


class Sweep(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        self.dir = os.path.join(self.home, "kernels", "demo")

    def test_default_sweep(self):
        r = self.run_json("sweep", "demo", "--grid", "65536", "--buffers", SPEC, "--iters", "5")
        threads = [p["threads"] for p in r["points"]]
        self.assertGreaterEqual(len(threads), 2)
        for a, b in zip(threads, threads[1:]):
            self.assertEqual(b, 2 * a)  # powers of two, in order
        self.assertLessEqual(threads[-1], r["kernel_max_threadgroup_size"])
        self.assertGreater(threads[-1] * 2, r["kernel_max_threadgroup_size"])
        best = [p for p in r["points"] if p["best"]]
        self.assertEqual(len(best), 1)
        best = best[0]
        self.assertEqual(best["gpu_ms_median"], min(p["gpu_ms_median"] for p in r["points"]))
        self.assertEqual(r["best_threadgroup"], best["threadgroup"])
        for p in r["points"]:
            self.assertLessEqual(p["gpu_ms_p10"], p["gpu_ms_median"])
            self.assertLessEqual(p["gpu_ms_median"], p["gpu_ms_p90"])
            spread = max(p["gpu_ms_p90"] - p["gpu_ms_p10"], best["gpu_ms_p90"] - best["gpu_ms_p10"])
            if not p["best"]:
                self.assertEqual(p["tie"], p["gpu_ms_median"] - best["gpu_ms_median"] <= spread)
            self.assertAlmostEqual(p["approx_gb_per_s"],
                                   r["bytes"] / (p["gpu_ms_median"] * 1e-3) / 1e9, places=6)
        with open(os.path.join(self.dir, "sweep.json")) as f:
            self.assertEqual(json.load(f), r)
        # The run alias gives the same sweep.
        r2 = self.run_json("run", "demo", "--sweep-tg", "--grid", "65536", "--buffers", SPEC,
                           "--iters", "2")
        self.assertEqual([p["threads"] for p in r2["points"]], threads)

    def test_table(self):
        p = self.kprof("sweep", "demo", "--grid", "65536", "--buffers", SPEC, "--iters", "3",
                       expect=0)
        self.assertIn("GPU ms median", p.stdout)
        self.assertEqual(p.stdout.count("◀ best"), 1)
        self.assertIn("best tg ", p.stdout)
        self.assertEqual(p.stderr, "")  # no progress line without a terminal

    def test_tg_list_2d(self):
        path = self.write("m.cl", KERNEL_2D)
        r = self.run_json("sweep", path, "--grid", "64x64", "--tg-list", "8x8,16x4,4x16",
                          "--buffers", "f32:4096,f32:4096,u32=64", "--iters", "3")
        self.assertEqual([p["threadgroup"] for p in r["points"]], [[8, 8], [16, 4], [4, 16]])
        self.assertEqual(r["grid"], [64, 64])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "sweep.json")))

    def test_bad_sizes_each_named(self):
        p = self.kprof("sweep", "demo", "--grid", "65536", "--buffers", SPEC, "--json",
                       "--tg-list", "64,8192,96", expect=2)
        self.assertIn("the sweep cannot use these threadgroup sizes", p.stderr)
        self.assertIn("tg 8192", p.stderr)
        self.assertIn("grid 65536 is not a multiple of tg 96", p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "sweep.json")))
        p = self.kprof("sweep", "demo", "--grid", "65536", "--buffers", SPEC, "--tg-list", "0,64",
                       expect=2)
        self.assertIn("'0' (zero)", p.stderr)

    def test_stopped_sweep_with_json(self):
        # A sweep that stops (here a kernel that never ends) still prints JSON under --json,
        # marked incomplete, with the points measured so far (none here).
        path = self.write("spin.cl",
                          "__kernel void spin(__global volatile int *x) { while (x[0] == 0) {} }")
        p = self.kprof("sweep", path, "--grid", "8", "--buffers", "i32:8:zero", "--timeout", "1",
                       "--tg-list", "8,4", "--json", "--warmup", "0", "--iters", "1", expect=4,
                       timeout=60)
        r = json.loads(p.stdout)
        self.assertIs(r["complete"], False)
        self.assertEqual(r["points"], [])
        self.assertIn("the sweep stopped", p.stderr)

    def test_usage(self):
        cases = ((["--sweep-tg", "--tg", "64"], "--tg fixes one threadgroup size"),
                 (["--plot", "x.svg"], "--plot draws a sweep"),
                 (["--sweep-tg", "--plot", "x.png"], "name a .svg file"),
                 (["--sweep-tg", "--grid", "64x64"], "needs its threadgroup shapes"))
        for extra, text in cases:
            p = self.kprof("run", "demo", "--buffers", SPEC, *extra,
                           expect=2 if "needs its" not in text else 2)
            self.assertIn(text, p.stderr, extra)

    def test_plot_renders_in_chromium(self):
        svg = os.path.join(self.tmp, "sweep.svg")
        p = self.kprof("sweep", "demo", "--grid", "65536", "--buffers", SPEC, "--iters", "3",
                       "--plot", svg, expect=0)
        self.assertIn("plot: " + svg, p.stdout)
        text = open(svg).read()
        self.assertTrue(text.startswith("<?xml"))
        self.assertIn("<svg", text)
        self.assertIn("best", text)
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            if os.environ.get("KPROF_ALLOW_NO_CHROMIUM") == "1":
                self.skipTest("no chromium on this machine to render the plot")
            self.fail("chromium is part of kprof's install (scripts/install) and is missing")
        png = os.path.join(self.tmp, "sweep.png")
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--window-size=760,440", "--screenshot=" + png,
                        "file://" + svg], capture_output=True, timeout=120,
                       env=dict(os.environ, HOME=self.tmp))
        w, h, ch, rows = kptest.read_png(png)
        self.assertEqual((w, h), (760, 440))
        nonwhite = blue = 0
        for row in rows:
            for i in range(0, len(row), ch):
                r, g, b = row[i], row[i + 1], row[i + 2]
                if (r, g, b) != (255, 255, 255):
                    nonwhite += 1
                if abs(r - 0x1c) < 40 and abs(g - 0x5f) < 40 and abs(b - 0xa8) < 40:
                    blue += 1
        self.assertGreater(nonwhite, 0.01 * w * h, "the rendered plot is blank")
        self.assertGreater(blue, 200, "the median line is not in the picture")

    def test_progress_on_a_terminal_only(self):
        pid, fd = pty.fork()
        if pid == 0:
            env = dict(os.environ, **{k: v for k, v in self.env.items() if v is not None})
            os.chdir(self.tmp)
            os.execve(kptest.KPROF, [kptest.KPROF, "sweep", "demo", "--grid", "65536",
                                     "--buffers", SPEC, "--iters", "2"], env)
        out = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        self.assertIn(b"\r\x1b[Ksweep: tg ", out)


if __name__ == "__main__":
    kptest.main()
