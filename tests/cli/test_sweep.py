"""kprof sweep / kprof run --sweep-tg on PoCL: the occupancy curve, its best point and ties,
bad sizes named, sweep.json, the SVG plot rendered in headless Chromium, progress on a tty; a
kernel's required work-group size; --tg in a sweep; rows as they are measured, and what a signal
leaves (the rows so far, "complete": false, exit 128 + signal)."""

import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import time

import chromium as chromium_driver
import kptest

SPEC = "f32:65536,f32:65536,f32:65536,u32=65536"
KERNEL_2D = r"""
__kernel void madd(__global float *c, __global const float *a, uint width)
{
    size_t x = get_global_id(0), y = get_global_id(1);
    c[y * width + x] = a[y * width + x] * 2.0f;
}
"""


# reqd_work_group_size: PoCL's CL_KERNEL_WORK_GROUP_SIZE says 4096 for it all the same.
KERNEL_REQD = r"""
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void twice(__global float *c, __global const float *a, uint n)
{
    size_t i = get_global_id(0);
    if (i < n) c[i] = a[i] * 2.0f;
}
"""

KERNEL_REQD_2D = r"""
__kernel __attribute__((reqd_work_group_size(8, 8, 1)))
void tile(__global float *c, uint width)
{
    c[get_global_id(1) * width + get_global_id(0)] = 1.0f;
}
"""

# Quick at tg 8; at tg 16 it spins until the process ends (x[0] stays 0): a sweep that is
# still measuring its second point whenever the signal comes, on any machine.
KERNEL_STUCK_AT_16 = r"""
__kernel void stuck(__global volatile int *x, __global float *y)
{
    if (get_local_size(0) == 16)
        while (x[0] == 0) {}
    y[get_global_id(0)] = 1.0f;
}
"""


def default_signals():
    """In the child: SIGINT and SIGTERM as a user's shell leaves them. A test runner may start
    its tests with SIGINT ignored (a background job), and kprof keeps an ignored signal
    ignored, as nohup means it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start_with_tty_stderr(args, env, cwd):
    """kprof with stdout a pipe and stderr a terminal (so the progress line is drawn): (process,
    the terminal's master side)."""
    master, slave = pty.openpty()
    full = dict(os.environ, **{k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            full.pop(k, None)
    p = subprocess.Popen([kptest.KPROF] + list(args), stdout=subprocess.PIPE, stderr=slave,
                         env=full, cwd=cwd, preexec_fn=default_signals)
    os.close(slave)
    return p, master


# How long a test waits for output it needs before it gives up and fails (never a pause that
# decides anything: what the tests wait for is what kprof printed).
GIVE_UP_S = 300


def read_until(fd, needle, limit=1 << 20):
    """Read fd (a pipe, or a terminal's master side) until needle (bytes, or a compiled bytes
    pattern) is in what was read, fd ends, or GIVE_UP_S pass; everything read."""
    out = b""
    deadline = time.monotonic() + GIVE_UP_S
    found = (lambda b: needle in b) if isinstance(needle, bytes) else needle.search
    while not found(out) and len(out) < limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


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
            # A tie is the rule applied to the numbers the JSON gives (whichever way PoCL's
            # timings fall): the medians' 95% intervals overlap, and it is within 1.5x.
            self.assertLessEqual(p["gpu_ms_median_ci_low"], p["gpu_ms_median"])
            self.assertLessEqual(p["gpu_ms_median"], p["gpu_ms_median_ci_high"])
            if not p["best"]:
                self.assertEqual(p["tie"], p["gpu_ms_median_ci_low"] <=
                                 best["gpu_ms_median_ci_high"] and
                                 p["gpu_ms_median"] <= 1.5 * best["gpu_ms_median"])
            # Above 110% of the ceiling, the reason `kprof run` gives; else null.
            self.assertIn("above_ceiling_reason", p)
            if p["above_ceiling_reason"] is not None:
                self.assertGreater(p["ceiling_percent"], 110)
                self.assertIn("cannot be DRAM traffic", p["above_ceiling_reason"])
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
        # "GPU ms" only on a GPU: device timestamps time any device.
        self.assertRegex(p.stdout, r"(GPU|device) median")
        self.assertEqual(p.stdout.count("◀ best"), 1)
        self.assertIn("best tg ", p.stdout)
        self.assertEqual(p.stderr, "")  # no progress line without a terminal
        # Rows come as they are measured, so marks cannot be on them: the best (and any tie) is
        # named in a closing block after the last row.
        lines = p.stdout.splitlines()
        rows = [i for i, l in enumerate(lines) if l.split() and l.split()[0].isdigit()]
        best = [i for i, l in enumerate(lines) if "◀ best" in l]
        self.assertGreater(best[0], rows[-1])
        for i in rows:
            self.assertNotIn("◀", lines[i])

    def test_above_the_ceiling_says_why(self):
        # A ceiling of 1e-6 GB/s written into the store puts every point far above it: the
        # sweep gives the reason `kprof run` gives (the same sentence, from the same readings),
        # in the closing block and per point in the JSON. Decided by sizes, not by speed.
        from test_run import STORE_SCHEMA
        d = self.run_json("caps", "--backend", "opencl")["backends"][0]["devices"][0]
        db = sqlite3.connect(self.env["KPROF_STORE"])
        db.executescript(STORE_SCHEMA)
        db.execute("INSERT INTO ceilings VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   ("opencl|%s|%s" % (d["name"], d["platform"]), "opencl", d["name"],
                    d["driver"], 1e-6, 1 << 20, 0, 0, 0, "written by the test", 1))
        db.commit()
        db.close()
        args = ("demo", "--device", "0", "--grid", "3000", "--buffers",
                "f32:1M,f32:1M,f32:1M,u32=3000", "--iters", "3")
        r = self.run_json("sweep", *args, "--tg-list", "8,24")
        for p in r["points"]:
            self.assertGreater(p["ceiling_percent"], 110)
            self.assertIn("cannot be DRAM traffic", p["above_ceiling_reason"])
            self.assertIn("A grid of 3000 threads touches at most 35.16 KiB of the 12 MiB its "
                          "buffers hold", p["above_ceiling_reason"])
        out = self.kprof("sweep", *args, "--tg-list", "8,24", expect=0).stdout
        self.assertIn("! above 110% of the ceiling at tg 8, 24: ~", out)
        self.assertIn("A grid of 3000 threads touches at most", out)
        run = self.run_json("run", *args, "--tg", "8")
        text = [x["text"] for x in run["readings"] if x["id"] == "above_ceiling"][0]
        # The same sentence but for its numbers (each run's own GB/s): from the grid on, equal.
        tail = text[text.index(" A grid of"):]
        self.assertTrue(r["points"][0]["above_ceiling_reason"].endswith(tail))

    def test_tg_list_2d(self):
        path = self.write("m.cl", KERNEL_2D)
        r = self.run_json("sweep", path, "--grid", "64x64", "--tg-list", "8x8,16x4,4x16",
                          "--buffers", "f32:4096,f32:4096,u32=64", "--iters", "3")
        self.assertEqual([p["threadgroup"] for p in r["points"]], [[8, 8], [16, 4], [4, 16]])
        self.assertEqual(r["grid"], [64, 64])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "sweep.json")))

    def test_default_2d_shapes(self):
        # Issue 23 item 7: a 2-D grid without --tg-list sweeps shapes of its own: x a multiple
        # of the device's width (PoCL's preferred multiple), up to the kernel's maximum, each
        # inside the grid.
        path = self.write("m.cl", KERNEL_2D)
        r = self.run_json("run", path, "--sweep-tg", "--grid", "64x64", "--buffers",
                          "f32:4096,f32:4096,u32=64", "--iters", "2", "--warmup", "0")
        shapes = [tuple(p["threadgroup"]) for p in r["points"]]
        self.assertGreater(len(shapes), 3)
        self.assertEqual(len(set(shapes)), len(shapes))
        widths = {x for x, _ in shapes}
        w = min(widths)
        for x, y in shapes:
            self.assertEqual(x % w, 0)
            self.assertLessEqual(x * y, r["kernel_max_threadgroup_size"])
            self.assertLessEqual(x, 64)
            self.assertLessEqual(y, 64)
            self.assertGreaterEqual(x, y)  # the squarest first: x never below y
        # 256 threads, the squarest first: x the first multiple of the width from 16 (PoCL's 8
        # wide: 16x16; a GPU's 32: 32x8).
        x = -(-16 // w) * w
        self.assertIn((x, 256 // x), shapes)
        self.assertIsNotNone(r["best_threadgroup"])
        # A grid no shape fits says so, and how to give them.
        p = self.kprof("sweep", path, "--grid", "4x4", "--buffers", "f32:16,f32:16,u32=4",
                       expect=2)
        self.assertIn("give --tg-list", p.stderr)

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
        cases = ((["--plot", "x.svg"], "--plot draws a sweep"),
                 (["--sweep-tg", "--plot", "x.png"], "name a .svg file"))
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
        # The default device is a GPU where there is one; PoCL runs on the CPU, and its axis
        # says device time, not GPU time.
        caps = json.loads(self.kprof("caps", "--json", expect=0).stdout)
        gpu = any(d.get("is_gpu") for b in caps["backends"] for d in b.get("devices", []))
        if gpu:
            self.assertIn("GPU time per dispatch (ms)", text)
        else:
            self.assertIn("device time per dispatch (ms)", text)
            self.assertNotIn("GPU", text)
        chromium = chromium_driver.require_chromium(self, "to render the plot")
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
        code, out = self.on_terminal("sweep", "demo", "--grid", "65536", "--buffers", SPEC,
                                     "--iters", "2")
        self.assertEqual(code, 0, out)
        self.assertIn(b"\r\x1b[Ksweep: tg ", out)

    # Issue 10, item 6: a `run` command becomes a sweep by adding --sweep-tg; its --tg is one
    # of the sizes, marked.
    def test_your_tg_in_the_sweep(self):
        base = ["demo", "--grid", "65536", "--buffers", SPEC, "--iters", "3"]
        r = self.run_json("run", *base, "--tg", "128", "--sweep-tg")
        threads = [p["threads"] for p in r["points"]]
        mine = [p for p in r["points"] if p["your_tg"]]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["threadgroup"], [128])
        self.assertEqual(r["your_threadgroup"], [128])
        self.assertEqual(threads.count(128), 1)  # already a default size: not added twice
        # A size outside the default curve is added in its place among them; at the end of a
        # --tg-list.
        r = self.run_json("run", "demo", "--grid", "196608", "--buffers",
                          "f32:196608,f32:196608,f32:196608,u32=196608", "--iters", "2",
                          "--tg", "96", "--sweep-tg")
        threads = [p["threads"] for p in r["points"]]
        self.assertEqual(threads, sorted(threads))
        self.assertEqual([p["threads"] for p in r["points"] if p["your_tg"]], [96])
        r = self.run_json("run", *base, "--tg", "32", "--tg-list", "64,128")
        self.assertEqual([p["threadgroup"] for p in r["points"]], [[64], [128], [32]])
        self.assertEqual([p["your_tg"] for p in r["points"]], [False, False, True])
        p = self.kprof("run", *base, "--tg", "128", "--sweep-tg", expect=0)
        row = [l for l in p.stdout.splitlines() if l.split() and l.split()[0] == "128"]
        self.assertEqual(len(row), 1)
        self.assertIn("◀ your --tg", row[0])
        # Checked with the others before anything runs.
        p = self.kprof("run", *base, "--tg", "96", "--sweep-tg", "--json", expect=2)
        self.assertIn("your --tg: grid 65536 is not a multiple of tg 96", p.stderr)
        self.assertEqual(p.stdout, "")
        # Its shape must have the grid's dimensions.
        p = self.kprof("run", *base, "--tg", "8x8", "--sweep-tg", expect=2)
        self.assertIn("--grid has 1 dimension but --tg has 2", p.stderr)

    # Issue 10, item 4: reqd_work_group_size is read, shown and checked before anything runs.
    def test_required_group_size(self):
        path = self.write("twice.cl", KERNEL_REQD)
        spec = "f32:4096,f32:4096,u32=4096"
        for tg in (["--tg", "128"], ["--tg", "32"], []):  # [] is run's default, 256
            p = self.kprof("run", path, "--grid", "4096", *tg, "--buffers", spec, expect=2)
            self.assertIn("is not twice's required threadgroup size 64 (reqd_work_group_size",
                          p.stderr)
            self.assertIn("use --tg 64", p.stderr)
            self.assertEqual(p.stdout, "")
        p = self.kprof("run", path, "--grid", "4096", "--tg", "64", "--buffers", spec,
                       "--iters", "2", expect=0)
        self.assertIn("reflection: required group size 64 (reqd_work_group_size)", p.stdout)
        # 64 below the device's maximum is the declaration, not register pressure; and with one
        # legal size there is nothing to sweep.
        self.assertNotIn("register pressure", p.stdout)
        self.assertNotIn("sweep it", p.stdout)
        r = self.run_json("run", path, "--grid", "4096", "--tg", "64", "--buffers", spec,
                          "--iters", "2")
        self.assertEqual(r["reflection"]["max_threadgroup_size"], 64)
        self.assertEqual(r["reflection"]["threadgroup_rule"],
                         {"kind": "required", "size": [64, 1, 1], "threads": 64,
                          "from": "reqd_work_group_size"})
        self.assertEqual([x["id"] for x in r["readings"] if x["id"] in ("register_pressure",
                                                                         "sweep")], [])
        # The default sweep has exactly the legal size, and one size is no comparison.
        r = self.run_json("sweep", path, "--grid", "4096", "--buffers", spec, "--iters", "2")
        self.assertEqual([p["threadgroup"] for p in r["points"]], [[64]])
        self.assertIs(r["complete"], True)
        self.assertIs(r["compared"], False)
        self.assertIsNone(r["best_threadgroup"])
        self.assertIs(r["points"][0]["best"], False)
        self.assertEqual(r["kernel_max_threadgroup_size"], 64)
        p = self.kprof("sweep", path, "--grid", "4096", "--buffers", spec, "--iters", "2",
                       expect=0)
        self.assertNotIn("◀ best", p.stdout)
        self.assertIn("one size is not a comparison", p.stdout)
        self.assertIn("required group size 64", p.stdout)
        # Listed sizes are checked against it, each bad one named.
        p = self.kprof("sweep", path, "--grid", "4096", "--buffers", spec,
                       "--tg-list", "64,128,32", expect=2)
        self.assertIn("tg 128 is not twice's required threadgroup size 64", p.stderr)
        self.assertIn("tg 32 is not twice's required threadgroup size 64", p.stderr)
        # A 2-D required shape needs no --tg-list on a 2-D grid.
        path = self.write("tile.cl", KERNEL_REQD_2D)
        r = self.run_json("sweep", path, "--grid", "64x64", "--buffers", "f32:4096,u32=64",
                          "--iters", "2")
        self.assertEqual([p["threadgroup"] for p in r["points"]], [[8, 8]])
        p = self.kprof("run", path, "--grid", "4096", "--tg", "64", "--buffers",
                       "f32:4096,u32=64", expect=2)
        self.assertIn("it needs a 2-D grid and --tg 8x8", p.stderr)

    # Issue 10, item 7: rows as they are measured; a signal prints the rows so far and exits
    # 128 + signal at once, without waiting for the point being measured (here one that never
    # ends), leaving no temporary behind.
    def test_sigint_prints_the_rows_so_far(self):
        path = self.write("stuck.cl", KERNEL_STUCK_AT_16)
        svg = os.path.join(self.tmp, "plot.svg")
        env = dict(os.environ, **{k: v for k, v in self.env.items() if v is not None})
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
        p = subprocess.Popen([kptest.KPROF, "sweep", path, "--grid", "64", "--tg-list", "8,16",
                              "--buffers", "i32:64:zero,f32:64", "--iters", "2", "--plot", svg],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=self.tmp, preexec_fn=default_signals)
        try:
            seen = read_until(p.stdout.fileno(), re.compile(rb"\n  8 [^\n]*\n"))
            self.assertIn(b"\n  8 ", seen, "no row for tg 8 came before the sweep ended or "
                          "%d s passed" % GIVE_UP_S)
            self.assertRegex(seen.split(b"\n  8 ")[0], rb"(GPU|device) median")  # header first
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=GIVE_UP_S)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        err = err.decode()
        self.assertEqual(p.returncode, 128 + signal.SIGINT, err)
        out = (seen + out).decode()
        self.assertIn("the sweep stopped: 1 of 2 sizes measured", out)
        self.assertIn("one size is not a comparison", out)
        self.assertNotIn("◀ best", out)
        self.assertIn("SIGINT (Interrupt) stopped the sweep with 1 of 2 sizes measured", err)
        self.assertEqual([f for f in os.listdir(self.tmp) if "plot" in f], [])  # nor temporary

    def test_sigterm_with_json(self):
        self.kprof("isolate", "stuck", "--from", self.write("stuck.cl", KERNEL_STUCK_AT_16),
                   expect=0)
        folder = os.path.join(self.home, "kernels", "stuck")
        p, master = start_with_tty_stderr(
            ["sweep", "stuck", "--grid", "64", "--tg-list", "8,16", "--buffers",
             "i32:64:zero,f32:64", "--iters", "2", "--json"], self.env, self.tmp)
        try:
            # Under --json nothing is printed before the end; the progress line on the terminal
            # moves to the second size once the first is measured.
            seen = read_until(master, b"sweep: tg 16 (2/2)")
            self.assertIn(b"sweep: tg 16 (2/2)", seen)
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=GIVE_UP_S)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            rest = read_until(master, b"\0")  # what came after (the closing message)
            os.close(master)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, rest)
        r = json.loads(out)
        self.assertIs(r["complete"], False)
        self.assertEqual(r["signal"], "SIGTERM")
        self.assertEqual([x["threadgroup"] for x in r["points"]], [[8]])
        self.assertEqual(r["sizes_planned"], 2)
        self.assertIsNone(r["best_threadgroup"])
        with open(os.path.join(folder, "sweep.json")) as f:
            self.assertEqual(json.load(f), r)
        self.assertEqual(sorted(os.listdir(folder)), ["kernel.cl", "sweep.json"])


KERNEL_SPIN = r"""
__kernel void spin(__global float *x, uint n)
{
    size_t i = get_global_id(0);
    float v = x[i];
    for (uint k = 0; k < n; k++) v = v * 0.999999f + 0.5f;
    x[i] = v;
}
"""


class SweepTimeBudget(kptest.KprofTestCase):
    """Issue 23 item 3: a sweep's time budget is the whole sweep's, shared by its sizes; a slow
    kernel's sizes time fewer dispatches, and the closing block and the JSON say so."""

    def test_budget_is_shared_and_said(self):
        path = os.path.join(self.tmp, "spin.cl")
        with open(path, "w") as f:
            f.write(KERNEL_SPIN)
        # A budget of about 8 dispatches of the kernel on this device, for both sizes: 50 a
        # size always overrun it (kptest.budget_of_dispatches).
        common = ("--grid", "2048", "--buffers", "f32:2048,u32=200000")
        budget = kptest.budget_of_dispatches(self, "run", path, *common, "--tg", "64")
        args = ("sweep", path, *common, "--tg-list", "64,128", "--warmup", "0",
                "--time-budget", budget)
        r = self.run_json(*args)
        self.assertEqual(r["iterations"], 50)
        self.assertTrue(r["time_budget_cut"])
        for pt in r["points"]:
            self.assertLess(pt["iterations"], 50)
            self.assertGreaterEqual(pt["iterations"], 1)
        p = self.kprof(*args, expect=0)
        self.assertRegex(p.stdout, r"time budget: 2 sizes timed fewer than the 50 dispatches")
        # --iters wins.
        r = self.run_json(*args[:-2], "--time-budget", "0.01", "--iters", "2")
        self.assertFalse(r["time_budget_cut"])
        self.assertEqual([pt["iterations"] for pt in r["points"]], [2, 2])


if __name__ == "__main__":
    kptest.main()
