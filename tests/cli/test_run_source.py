"""kprof run --source where PC sampling cannot run (PoCL: OpenCL has no PC sampler): one line
`kprof: source: REASON` on stderr, exit 0, the timing and the buffers exactly as without
--source, and the JSON (and run.json) saying why. Bad --source values are usage errors."""

import json
import os

import kptest

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"
RUN = ["--entry", "demo_add", "--grid", "4096", "--tg", "64", "--buffers", SPEC]


class RunSource(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        self.dir = os.path.join(self.home, "kernels", "demo")

    def source_line(self, stderr):
        lines = [l for l in stderr.splitlines() if l.startswith("kprof: source: ")]
        self.assertEqual(len(lines), 1, stderr)
        self.assertNotIn("kprof: error", stderr)
        return lines[0][len("kprof: source: "):]

    def test_text_run_goes_on(self):
        p = self.kprof("run", "demo", *RUN, "--iters", "6", "--source", expect=0)
        reason = self.source_line(p.stderr)
        self.assertIn("opencl", reason)
        self.assertIn("CUDA", reason)
        # Nothing else on stderr: the reason is the only line.
        self.assertEqual(p.stderr.strip().count("\n"), 0, p.stderr)
        out = p.stdout
        for text in ("demo_add on ", "(median)", "6 timed after 3 warm-ups", "reflection:",
                     "buffers after the run:", "#1 out"):
            self.assertIn(text, out)
        self.assertNotIn("source lines", out)
        # The same sections and buffers as without --source (the times differ run to run).
        plain = self.kprof("run", "demo", *RUN, "--iters", "6", expect=0)
        self.assertEqual(plain.stderr, "")

        def shape(text):
            return [l for l in text.splitlines() if not l.startswith("  ") or l.startswith("  #")]
        self.assertEqual(shape(out), shape(plain.stdout))

    def test_json_says_why_and_timing_is_intact(self):
        p = self.kprof("run", "demo", *RUN, "--iters", "7", "--warmup", "2", "--source=3",
                       "--json", expect=0)
        reason = self.source_line(p.stderr)
        r = json.loads(p.stdout)
        self.assertEqual(r["hotspots"], {"available": False, "reason": reason})
        self.assertEqual(r["iterations"], 7)
        self.assertEqual(len(r["gpu_ms_samples"]), 7)
        self.assertTrue(all(x > 0 for x in r["gpu_ms_samples"]))
        # The buffers are those of the timed run: the same digests as a run without --source.
        plain = self.run_json("run", "demo", *RUN, "--iters", "7", "--warmup", "2")
        self.assertNotIn("hotspots", plain)
        self.assertEqual([b["fnv1a64"] for b in r["buffers"]],
                         [b["fnv1a64"] for b in plain["buffers"]])
        self.assertEqual(set(r) - {"hotspots"}, set(plain))
        # run.json keeps what --json printed (the last run was the plain one: run again).
        p = self.kprof("run", "demo", *RUN, "--iters", "7", "--source", "--json", expect=0)
        with open(os.path.join(self.dir, "run.json")) as f:
            self.assertEqual(json.load(f)["hotspots"]["available"], False)

    def test_file_target(self):
        path = self.write("k/scale.cl",
                          "__kernel void scale(__global float *x) "
                          "{ x[get_global_id(0)] *= 2.0f; }\n")
        p = self.kprof("run", path, "--grid", "1024", "--tg", "64", "--buffers", "f32:1024",
                       "--iters", "3", "--source", "--json", expect=0)
        r = json.loads(p.stdout)
        self.assertFalse(r["hotspots"]["available"])
        self.assertEqual(r["hotspots"]["reason"], self.source_line(p.stderr))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "k", "run.json")))

    def test_bad_values(self):
        for bad in ("0", "-1", "abc", "100001", ""):
            p = self.kprof("run", "demo", *RUN, "--source=" + bad, expect=2)
            self.assertIn("--source=", p.stderr)
            self.assertEqual(p.stdout, "")
        p = self.kprof("run", "demo", *RUN, "--source", "--sweep-tg", expect=2)
        self.assertIn("not with a sweep", p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["kernel.cl"])
        p = self.kprof("sweep", "demo", *RUN, "--source", expect=2)
        self.assertIn("not with a sweep", p.stderr)

    def test_help(self):
        p = self.kprof("run", "--help", expect=0)
        self.assertIn("--source[=N]", p.stdout)


if __name__ == "__main__":
    kptest.main()
