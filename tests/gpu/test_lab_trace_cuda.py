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
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

SPEC = "f32:1M,f32:1M,f32:1M,u32=1048576"


def kernel_events(path):
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT s.text, e.start_ns, e.end_ns, e.grid_x, e.block_x, e.registers, m.value "
        "FROM events e JOIN strings s ON s.id = e.name "
        "LEFT JOIN metrics m ON m.event = e.id AND m.key = "
        "  (SELECT id FROM strings WHERE text = 'iteration') "
        "WHERE e.kind = 4 ORDER BY e.start_ns").fetchall()
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    return rows, meta


class LabTraceCuda(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        ok, why = kptest.cuda_available()
        if not ok:
            raise kptest.unittest.SkipTest("no CUDA device: " + str(why))

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
            rows, meta = kernel_events(os.path.join(self.tmp, out))
            self.assertEqual(meta["collectors"], "lab")
            self.assertIn("(cuda device ", meta["device"])
            self.assertEqual(len(rows), 55, timer)
            self.assertEqual([int(r[6]) for r in rows], list(range(-5, 50)))
            timed = [r[2] - r[1] for r in rows if r[6] >= 0]
            self.assertEqual(timed, [round(ms * 1e6) for ms in run["gpu_ms_samples"]], timer)
            for r in rows:
                self.assertEqual(r[0], "demo_add")
                self.assertEqual((r[3], r[4]), (1048576 // 256, 256))
                self.assertGreater(r[5] or 0, 0)  # registers, from the reflection
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
        rows, _ = kernel_events(os.path.join(self.tmp, "c.kprof"))
        flushes = [i for i, r in enumerate(rows) if r[0] == "kprof_cache_flush"]
        self.assertGreater(len(flushes), 10)
        for i in flushes:
            self.assertEqual(rows[i + 1][0], "demo_add")
            self.assertEqual(rows[i + 1][6], rows[i][6])
            self.assertLessEqual(rows[i][2], rows[i + 1][1])


if __name__ == "__main__":
    kptest.main()
