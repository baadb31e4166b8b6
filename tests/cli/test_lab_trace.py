"""kprof run --trace and kprof bench --trace on PoCL: the lab's dispatches as a kprof trace. Every
warm-up and timed dispatch is one kernel event of the kernel's name, the warm-ups told apart by
their "iteration" metric (negative; timed dispatches count 0, 1, ...); the timed events' durations
are the run's samples to the nanosecond, their geometry the launch's, their starts increasing
without overlap on the one queue; the trace reads as every trace does (report, exports, diff);
an A/B bench gives both kernels' events, a cold one the flushes too; an output that exists, is a
folder or cannot be written is refused before anything runs, with nothing left behind."""

import json
import os
import statistics

import kptest

SPEC = "f32:65536,f32:65536,f32:65536,u32=65536"

WORK_AB = r"""
__kernel void work10(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f;
    for (int p = 0; p < 10 * 256; p++)
        x = x * 0.999f + 1e-4f;
    if (i < n) out[i] = x;
}

__kernel void work11(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f;
    for (int p = 0; p < 11 * 256; p++)
        x = x * 0.999f + 1e-4f;
    if (i < n) out[i] = x;
}
"""



class LabTrace(kptest.KprofTestCase):
    def demo(self):
        return os.path.join(kptest.SOURCE_DIR, "kernels", "demo_add.cl")

    def run_args(self, *more):
        return ("run", self.demo(), "--buffers", SPEC, "--grid", "65536", "--tg", "64",
                "--iters", "20", "--warmup", "3") + more

    def leftovers(self, keep=()):
        return sorted(f for f in os.listdir(self.tmp)
                      if f not in ("home", "cache", "store.db") + tuple(keep))

    def test_run_trace_holds_the_samples(self):
        p = self.kprof(*self.run_args("--trace", "t.kprof", "--json"), expect=0)
        run = json.loads(p.stdout)
        self.assertIn("23 kernel events in ", p.stderr)
        path = os.path.join(self.tmp, "t.kprof")
        rows, meta = kptest.lab_kernel_events(path)
        self.assertEqual(len(rows), 23)
        self.assertEqual({r[0] for r in rows}, {"demo_add"})
        # The warm-ups come first, counting down to the timed ones: -3, -2, -1, 0, ..., 19.
        self.assertEqual([int(r[5]) for r in rows], list(range(-3, 20)))
        timed = [r for r in rows if r[5] >= 0]
        self.assertEqual(len(timed), 20)
        # The launch: 65536 work-items in groups of 64 (the trace counts groups).
        for r in rows:
            self.assertEqual((r[3], r[4]), (65536 // 64, 64))
            self.assertEqual(r[6], run["bytes"])  # the run's byte estimate, as "bytes"
        # On the one queue: in order, none overlapping the next.
        for a, b in zip(rows, rows[1:]):
            self.assertLess(a[1], a[2])
            self.assertLessEqual(a[2], b[1])
        # The durations are the samples, in order, to the nanosecond: so their median (the
        # lab's: the upper middle of an even count), min, max and mean are run.json's.
        ns = [r[2] - r[1] for r in timed]
        self.assertEqual(ns, [round(ms * 1e6) for ms in run["gpu_ms_samples"]])
        ms = [n / 1e6 for n in ns]
        self.assertAlmostEqual(sorted(ms)[len(ms) // 2], run["gpu_ms_median"], places=9)
        self.assertAlmostEqual(min(ms), run["gpu_ms_min"], places=9)
        self.assertAlmostEqual(max(ms), run["gpu_ms_max"], places=9)
        self.assertAlmostEqual(statistics.mean(ms), run["gpu_ms_mean"], places=9)
        # The header: this command, "lab" as what made it, the device, kprof's version.
        self.assertEqual(meta["collectors"], "lab")
        self.assertIn("--trace t.kprof", meta["command"])
        self.assertIn("(opencl device ", meta["device"])
        self.assertEqual(meta["kprof_version"], run["kprof_version"])
        # Every reader takes it as it takes a trace.
        rep = self.run_json("report", path)
        dev = {g["name"]: g for g in rep["device"]}
        self.assertEqual(dev["demo_add"]["calls"], 23)
        all_s = [(r[2] - r[1]) / 1e9 for r in rows]
        self.assertAlmostEqual(dev["demo_add"]["min_s"], min(all_s), places=12)
        self.assertAlmostEqual(dev["demo_add"]["max_s"], max(all_s), places=12)
        self.assertAlmostEqual(dev["demo_add"]["total_s"], sum(all_s), places=12)
        self.kprof("report", path, expect=0)
        for flag, out in (("--chrome", "c.json"), ("--perfetto", "p.pftrace"),
                          ("--hatchet", "h.json")):
            self.kprof("export", path, flag, out, expect=0)
            self.assertGreater(os.path.getsize(os.path.join(self.tmp, out)), 0)
        chrome = json.load(open(os.path.join(self.tmp, "c.json")))
        events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
        kernels = [e for e in events if e.get("ph") == "X" and e.get("name") == "demo_add"]
        self.assertEqual(len(kernels), 23)
        self.assertEqual(sorted(e["args"]["iteration"] for e in kernels), list(range(-3, 20)))
        self.kprof(*self.run_args("--trace", "u.kprof"), expect=0)
        d = self.kprof("diff", path, os.path.join(self.tmp, "u.kprof"), expect=0)
        self.assertIn("demo_add", d.stdout)

    def test_bench_pair_gives_both_kernels(self):
        src = self.write("ab.cl", WORK_AB)
        p = self.kprof("bench", src, "--entry", "work10", "--entry", "work11", "--grid", "64",
                       "--tg", "64", "--buffers", "f32:64,u32=64", "--min-time", "0.02",
                       "--timeout", "10", "--json", "--trace", "b.kprof", expect=0)
        doc = json.loads(p.stdout)
        rows, meta = kptest.lab_kernel_events(os.path.join(self.tmp, "b.kprof"))
        self.assertEqual(meta["collectors"], "lab")
        for k in doc["points"][0]["kernels"]:
            mine = [r for r in rows if r[0] == k["entry"]]
            timed = [r[2] - r[1] for r in mine if r[5] >= 0]
            self.assertEqual(timed, [round(ms * 1e6) for ms in k["samples_ms"]], k["entry"])
            self.assertGreater(len([r for r in mine if r[5] < 0]), 0)  # its warm-ups
        # Cold: each sample's flush is an event of its own, named as the flush kernel is, with
        # its sample's iteration, right before it.
        self.kprof("bench", self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                   "f32:4096,f32:4096,f32:4096,u32=4096", "--cache", "cold", "--min-time",
                   "0.02", "--timeout", "10", "--trace", "c.kprof", expect=0)
        rows, _ = kptest.lab_kernel_events(os.path.join(self.tmp, "c.kprof"))
        flushes = [i for i, r in enumerate(rows) if r[0] == "kprof_cache_flush"]
        self.assertGreater(len(flushes), 0)
        for i in flushes:
            self.assertEqual(rows[i + 1][0], "demo_add")
            self.assertEqual(rows[i + 1][5], rows[i][5])

    def test_outputs_refused_before_anything_runs(self):
        # An existing file: exit 2, untouched; --force replaces it.
        self.write("t.kprof", "mine")
        p = self.kprof(*self.run_args("--trace", "t.kprof"), expect=2)
        self.assertIn("t.kprof exists; use --force to replace it", p.stderr)
        self.assertEqual(open(os.path.join(self.tmp, "t.kprof")).read(), "mine")
        self.assertEqual(self.leftovers(keep=("t.kprof",)), [])
        self.kprof(*self.run_args("--trace", "t.kprof", "--force"), expect=0)
        self.assertEqual(len(kptest.lab_kernel_events(os.path.join(self.tmp, "t.kprof"))[0]), 23)
        os.remove(os.path.join(self.tmp, "t.kprof"))
        # A folder: exit 2. One that cannot be written: exit 1. Nothing left behind, and the
        # kernel never ran (no output on stdout).
        os.mkdir(os.path.join(self.tmp, "d"))
        p = self.kprof(*self.run_args("--trace", "d"), expect=2)
        self.assertIn("is a folder", p.stderr)
        os.rmdir(os.path.join(self.tmp, "d"))
        self.write("f", "x")
        for says, where in (("its folder does not exist", "no/t.kprof"),
                            ("a part of its folder is a file", "f/t.kprof"),
                            ("cannot write /proc/", "/proc/kprof-unwritable.kprof")):
            for cmd in (self.run_args("--trace", where),
                        ("bench", self.demo(), "--grid", "4096", "--tg", "64", "--buffers",
                         "f32:4096,f32:4096,f32:4096,u32=4096", "--trace", where)):
                p = self.kprof(*cmd, expect=1)
                self.assertIn(says, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(self.leftovers(keep=("f",)), [])
        # Not with a sweep: a usage error.
        p = self.kprof(*self.run_args("--sweep-tg", "--trace", "s.kprof"), expect=2)
        self.assertIn("--trace writes one run's dispatches: not with a sweep", p.stderr)
        self.assertEqual(self.leftovers(keep=("f",)), [])


if __name__ == "__main__":
    kptest.main()
