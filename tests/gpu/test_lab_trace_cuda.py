"""kprof run --trace and kprof bench --trace on a CUDA GPU: with the CUPTI timer the kernel events
are CUPTI's own records on kprof's clock, with CUDA events (--timer events, which have no
timestamps) the host clock at each launch with the measured duration; either way the timed
events' durations are the samples to the nanosecond, warm-ups come first (negative
"iteration"), the events run in order without overlapping on the one stream, inside the trace's
wall, with the launch's blocks and threads and the kernel's registers; a cold bench's flushes are
kprof_cache_flush events right before their samples. Skipped, with the reason, where no CUDA
device exists."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

SPEC = "f32:1M,f32:1M,f32:1M,u32=1048576"


ITER, REGS = 5, 7  # columns of kptest.lab_kernel_events


class LabTraceCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def demo(self):
        return os.path.join(kptest.SOURCE_DIR, "kernels", "demo_add.cu")

    def test_run_trace_with_each_timer(self):
        for timer, clock in (("cupti", "cupti"), ("events", "events")):
            out = "t-%s.kprof" % timer
            p = self.kprof("run", self.demo(), "--backend", "cuda", "--buffers", SPEC, "--grid",
                           "1M", "--tg", "256", "--iters", "50", "--warmup", "5", "--timer",
                           timer, "--trace", out, "--json", expect=0)
            run = json.loads(p.stdout)
            self.assertTrue(run["timer"].startswith(clock), run["timer"])
            rows, meta = kptest.lab_kernel_events(os.path.join(self.tmp, out))
            self.assertEqual(meta["collectors"], "lab")
            self.assertIn("(cuda device ", meta["device"])
            self.assertEqual(len(rows), 55, timer)
            self.assertEqual([int(r[ITER]) for r in rows], list(range(-5, 50)))
            timed = [r[2] - r[1] for r in rows if r[ITER] >= 0]
            self.assertEqual(timed, [round(ms * 1e6) for ms in run["gpu_ms_samples"]], timer)
            for r in rows:
                self.assertEqual(r[0], "demo_add")
                self.assertEqual((r[3], r[4]), (1048576 // 256, 256))
                self.assertGreater(r[REGS] or 0, 0)  # registers, from the reflection
            for a, b in zip(rows, rows[1:]):
                self.assertLessEqual(a[2], b[1], timer)  # one stream: no overlap
            lo, hi = int(meta["start_ns"]), int(meta["end_ns"])
            self.assertLessEqual(lo, rows[0][1])
            self.assertLessEqual(rows[-1][2], hi)
            rep = self.run_json("report", os.path.join(self.tmp, out))
            self.assertEqual({g["name"]: g["calls"] for g in rep["device"]}["demo_add"], 55)

    def test_cold_bench_has_its_flushes(self):
        self.kprof("bench", self.demo(), "--backend", "cuda", "--grid", "1M", "--buffers", SPEC,
                   "--cache", "cold", "--min-time", "0.05", "--timeout", "5", "--trace",
                   "c.kprof", expect=0)
        rows, _ = kptest.lab_kernel_events(os.path.join(self.tmp, "c.kprof"))
        flushes = [i for i, r in enumerate(rows) if r[0] == "kprof_cache_flush"]
        self.assertGreater(len(flushes), 10)
        for i in flushes:
            self.assertEqual(rows[i + 1][0], "demo_add")
            self.assertEqual(rows[i + 1][ITER], rows[i][ITER])
            self.assertLessEqual(rows[i][2], rows[i + 1][1])


if __name__ == "__main__":
    kptest.main()
