"""kprof run --source on a CUDA GPU: CUPTI PC sampling over dispatches of their own, PCs mapped to
source lines through the cubin's line info. A kernel whose time is one long dependent loop on
one line must have that line first, with its text and stall reasons; the timing and the buffers
must be those of the timed run; a cached binary, a kernel folder and a .cubin map lines too; a
.ptx samples PCs but has no lines, and says so. Skipped, with the reason, where no CUDA device
exists; where one exists, PC sampling must work (the GPU machine runs as root), so a "cannot
run" there is a failure that shows its reason."""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

# Line 7 is the loop: every thread runs ITERS dependent multiply-adds there, and the rest of the
# kernel is a handful of instructions.
HOT = r"""extern "C" __global__ void hot(float *out, const float *in, unsigned n, unsigned iters)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = in[i];
    for (unsigned k = 0; k < iters; k++)
        acc = acc * 0.999999f + 0.5f;
    out[i] = acc;
}
extern "C" __global__ void bump(float *x, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""
HOT_LINE = 7
HOT_TEXT = "acc = acc * 0.999999f + 0.5f;"
N = 65536
SPEC = "f32:%d,f32:%d,u32=%d,u32=50000" % (N, N, N)
RUN = ["--entry", "hot", "--grid", str(N), "--tg", "256", "--buffers", SPEC, "--iters", "5"]


class Source(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def setUp(self):
        super().setUp()
        self.path = self.write("src/hot.cu", HOT)

    def hotspots(self, *args, env=None):
        p = self.kprof("run", *args, "--json", expect=0, env=env)
        r = json.loads(p.stdout)
        h = r["hotspots"]
        if not h["available"]:
            self.fail("PC sampling could not run: " + h["reason"] + "\nstderr: " + p.stderr)
        self.assertNotIn("kprof: source:", p.stderr)
        return r, h

    def check_hot_first(self, h, file_suffix="hot.cu"):
        top = h["lines"][0]
        self.assertEqual(top["line"], HOT_LINE, json.dumps(h["lines"][:3], indent=1))
        self.assertTrue(top["file"].endswith(file_suffix), top["file"])
        self.assertEqual(top["function"], "hot")
        self.assertGreater(top["share"], 0.5, json.dumps(h["lines"][:3], indent=1))
        self.assertGreater(top["samples"], 0)
        self.assertLessEqual(top["not_issued"], top["samples"])
        self.assertGreater(len(top["stalls"]), 0)
        self.assertEqual(sum(s["samples"] for s in top["stalls"]), top["samples"])
        for s in top["stalls"]:
            self.assertNotIn("smsp__", s["reason"])
            self.assertNotIn("not_issued", s["reason"])
        return top

    def test_hot_line_first(self):
        t0 = time.monotonic()
        r, h = self.hotspots(self.path, *RUN, "--source")
        wall = time.monotonic() - t0
        top = self.check_hot_first(h)
        self.assertEqual(top["text"], HOT_TEXT)
        self.assertEqual(h["dispatches"], 5)
        lines = h["lines"]
        self.assertEqual(sum(l["samples"] for l in lines), h["samples"])
        self.assertEqual([l["samples"] for l in lines],
                         sorted((l["samples"] for l in lines), reverse=True))
        self.assertAlmostEqual(sum(l["share"] for l in lines), 1.0, places=9)
        # The timing is the timed dispatches' alone.
        self.assertEqual(len(r["gpu_ms_samples"]), 5)
        # Figures for the closing note.
        sys.stderr.write("\n[source] %d lines, %d samples over %d dispatches (sampler total %d, "
                         "dropped %d); top line %.1f%% %s; stalls %s; note %r; wall %.2f s\n"
                         % (len(lines), h["samples"], h["dispatches"],
                            h["sampler_total_samples"], h["sampler_dropped_samples"],
                            100 * top["share"], top["text"],
                            ", ".join("%s %d" % (s["reason"], s["samples"])
                                      for s in top["stalls"][:4]), h["note"], wall))

    def test_text_output(self):
        p = self.kprof("run", self.path, *RUN, "--source=3", expect=0)
        self.assertEqual(p.stderr, "")
        out = p.stdout
        at = out.index("source lines (PC sampling: ")
        self.assertLess(out.index("reflection:"), at)
        self.assertLess(at, out.index("buffers after the run:"))
        section = out[at:out.index("buffers after the run:")].splitlines()
        first = [i for i, l in enumerate(section) if "hot.cu:" in l][0]
        self.assertIn("hot.cu:%d" % HOT_LINE, section[first])
        self.assertIn(HOT_TEXT, section[first])
        share = section[first].split("%")[0].strip()
        self.assertGreater(float(share), 50, section[first])
        self.assertRegex(section[first + 1], r"^ +[a-z_]+ \d+%")  # stall reasons and shares
        self.assertLessEqual(len([l for l in section if "hot.cu:" in l]), 3)

    def test_buffers_are_the_timed_runs(self):
        # bump adds 1 per dispatch: after 3 warm-ups and 5 timed dispatches every element is 8
        # more than its fill, with --source or without (its dispatches come after the digest).
        args = ["run", self.path, "--entry", "bump", "--grid", "4096", "--tg", "128",
                "--buffers", "f32:4096:zero,u32=4096", "--iters", "5"]
        plain = self.run_json(*args)
        r, h = self.hotspots(*args[1:], "--source")
        self.assertEqual(r["buffers"], plain["buffers"])
        self.assertEqual(r["buffers"][0]["first"], [8.0, 8.0, 8.0, 8.0])
        self.assertEqual(h["dispatches"], 5)

    def test_cached_binary_and_kernel_folder(self):
        self.hotspots(self.path, *RUN, "--source")
        r, h = self.hotspots(self.path, *RUN, "--source")
        self.assertTrue(r["compile"]["cache_hit"])
        self.assertEqual(self.check_hot_first(h)["text"], HOT_TEXT)
        self.kprof("isolate", "hotk", "--from", self.path, expect=0)
        r, h = self.hotspots("hotk", *RUN, "--source")
        top = self.check_hot_first(h, file_suffix=".cu")
        self.assertTrue(top["file"].startswith(os.path.join(self.home, "kernels", "hotk")),
                        top["file"])
        self.assertEqual(top["text"], HOT_TEXT)

    def test_cubin_and_ptx(self):
        dump = os.path.join(self.tmp, "dump")
        self.run_json("run", self.path, *RUN, env={"KPROF_DUMP_DIR": dump})
        files = os.listdir(dump)
        cubin = [os.path.join(dump, f) for f in files if f.endswith(".cubin")][0]
        ptx = [os.path.join(dump, f) for f in files if f.endswith(".ptx")][0]
        # The cubin's line info names the source NVRTC compiled: still there, so its text too.
        r, h = self.hotspots(cubin, *RUN, "--source")
        self.assertEqual(self.check_hot_first(h)["text"], HOT_TEXT)
        # PTX is compiled by the driver: PCs, but no line table kprof can read.
        r, h = self.hotspots(ptx, *RUN, "--source")
        self.assertIn("PTX", h["note"])
        self.assertGreater(h["samples"], 0)
        self.assertTrue(all(l["file"] is None and l["line"] is None for l in h["lines"]))
        self.assertTrue(all(l["function"] == "hot" for l in h["lines"]))

    def test_under_another_profiler(self):
        ncu = shutil.which("ncu")
        if not ncu:
            self.skipTest("ncu is not on PATH")
        # Nsight Compute holds the GPU's counters: the run must go on, exit 0, with either
        # lines or one line saying why not, and the JSON agreeing.
        cmd = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
               kptest.KPROF, "run", self.path, *RUN, "--iters", "2", "--source", "--json"]
        env = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        p = subprocess.run(cmd, env=env, cwd=self.tmp, capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        start = p.stdout.index("{")
        r = json.loads(p.stdout[start:p.stdout.rindex("}") + 1])
        h = r["hotspots"]
        lines = [l for l in p.stderr.splitlines() if l.startswith("kprof: source: ")]
        if h["available"]:
            self.assertEqual(lines, [])
        else:
            self.assertEqual(lines, ["kprof: source: " + h["reason"]])
        self.assertEqual(len(r["gpu_ms_samples"]), 2)
        sys.stderr.write("\n[source under ncu] available=%s %s\n"
                         % (h["available"], h.get("reason", "")))


if __name__ == "__main__":
    kptest.main()
