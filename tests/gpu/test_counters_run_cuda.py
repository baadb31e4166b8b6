"""--counters on a CUDA GPU (issue 16): a streaming kernel's measured DRAM bytes match what its
buffers hold, a kernel that reads each element twice moves about twice that and the reading
says so, an FMA loop's FP32 FLOPs are its FMAs x 2 and it reads compute-bound against the
measured FLOP peak, raw metric names (known and unknown) come back beside the standard set, the
text panel, sweep and bench carry them, and `caps --counters` lists the device's metrics.
Skipped, with the reason, where no CUDA device exists or its counters cannot be read here (no
profiling permission, another profiler, a kprof whose CUDA backend has no counters op)."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

N = 16 << 20  # floats: 64 MiB a buffer, three of them well beyond an H100/H200 L2

KERNELS = r"""
extern "C" __global__ void triad(float *a, const float *b, const float *c, float s,
                                 unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) a[i] = b[i] + s * c[i];
}
extern "C" __global__ void stride2(float *out, const float *in, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long j = i + n / 2;
    if (j >= n) j -= n; /* (i + n/2) mod n, without a 64-bit division */
    float v = in[i] + in[j];
    if (v == -12345.0f) out[0] = v;
}
extern "C" __global__ void fma_loop(float *out, unsigned iters)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float b = 0.999f, c = 1e-3f;
    float x0 = (float)(i & 1023) * 1e-6f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
#pragma unroll 16
    for (unsigned k = 0; k < iters; k++) {
        x0 = fmaf(x0, b, c);
        x1 = fmaf(x1, b, c);
        x2 = fmaf(x2, b, c);
        x3 = fmaf(x3, b, c);
    }
    out[i] = x0 + x1 + x2 + x3;
}
"""

TRIAD = ["--entry", "triad", "--grid", str(N), "--tg", "256", "--buffers",
         "f32:%d:zero,f32:%d:zero,f32:%d:zero,f32=3,u64=%d" % (N, N, N, N)]
STRIDE2 = ["--entry", "stride2", "--grid", str(N), "--tg", "256", "--buffers",
           "f32:1:zero,f32:%d:zero,u64=%d" % (N, N)]
FMA_THREADS, FMA_ITERS = 1 << 20, 2048
FMA = ["--entry", "fma_loop", "--grid", str(FMA_THREADS), "--tg", "256", "--buffers",
       "f32:%d:zero,u32=%d" % (FMA_THREADS, FMA_ITERS)]


class CudaCounters(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def setUp(self):
        super().setUp()
        self.src = self.write("k.cu", KERNELS)

    def counters(self, *args):
        p = self.kprof("run", self.src, *args, "--backend", "cuda", "--iters", "5", "--counters", "--json",
                       expect=0)
        r = json.loads(p.stdout)
        c = r["counters"]
        if not c["available"]:
            self.assertIn("kprof: counters: " + c["reason"], p.stderr)
            self.skipTest("counters cannot be read here: " + c["reason"])
        self.assertNotIn("kprof: counters:", p.stderr)
        return r, c

    def test_streaming_kernel_moves_what_its_buffers_hold(self):
        r, c = self.counters(*TRIAD)
        v, d = c["values"], c["derived"]
        self.assertEqual(r["bytes"], 3 * N * 4)
        # Two arrays read, one written. Reads within 10% of the buffers' bytes; writes still
        # dirty in the L2 when the kernel ends are not DRAM traffic yet (ncu counts the same
        # way): the written 64 MiB against a 60 MiB L2 reached DRAM at 0.83 on the H200.
        self.assertAlmostEqual(v["dram_read_bytes"] / (2 * N * 4), 1, delta=0.1)
        self.assertGreater(v["dram_write_bytes"] / (N * 4), 0.5)
        self.assertLess(v["dram_write_bytes"] / (N * 4), 1.1)
        self.assertAlmostEqual(d["measured_over_estimated"], 1, delta=0.2)
        self.assertEqual(d["traffic"], "matches")
        self.assertAlmostEqual(d["measured_gb_per_s"],
                               d["dram_bytes"] / (r["gpu_ms_median"] * 1e-3) / 1e9,
                               delta=1e-6 * d["measured_gb_per_s"])
        self.assertGreater(v["achieved_occupancy_pct"], 0)
        self.assertLessEqual(v["achieved_occupancy_pct"], 100)
        self.assertLessEqual(v["sm_throughput_pct"], 100)
        # The metric each value came from, in ncu's names.
        self.assertEqual(c["metrics"]["dram_read_bytes"], "dram__bytes_read.sum")
        self.assertIn("traffic_matches", [x["id"] for x in r["readings"]])
        self.assertIn("roofline", [x["id"] for x in r["readings"]])

    def test_reading_each_element_twice(self):
        r, c = self.counters(*STRIDE2)
        d = c["derived"]
        self.assertAlmostEqual(d["measured_over_estimated"], 2, delta=0.3)
        self.assertEqual(d["traffic"], "more")
        text = [x["text"] for x in r["readings"] if x["id"] == "traffic_more"]
        self.assertEqual(len(text), 1, r["readings"])
        self.assertIn("the bytes its buffers hold", text[0])
        self.assertIn("uncoalesced or repeated reads", text[0])

    def test_fma_loop_flops(self):
        r, c = self.counters(*FMA)
        v, d = c["values"], c["derived"]
        fmas = FMA_THREADS * FMA_ITERS * 4
        self.assertGreaterEqual(v["ffma"], fmas)
        self.assertLess(v["ffma"], fmas * 1.001)
        self.assertAlmostEqual(d["flops_fp32"] / (2 * fmas), 1, delta=0.001)
        self.assertGreater(d["arithmetic_intensity"] or float("inf"), 10)
        self.assertEqual(c["derived"]["top_pipe"], "pipe_fma_pct")

    def test_raw_names_and_text_panel(self):
        p = self.kprof("run", self.src, *TRIAD, "--backend", "cuda", "--iters", "3",
                       "--counters", "dram__bytes_read.sum,no_such__metric.sum", "--json",
                       expect=0)
        c = json.loads(p.stdout)["counters"]
        if not c["available"]:
            self.skipTest("counters cannot be read here: " + c["reason"])
        raw = {x["name"]: x for x in c["raw"]}
        self.assertEqual(raw["dram__bytes_read.sum"]["value"], c["values"]["dram_read_bytes"])
        self.assertFalse(raw["no_such__metric.sum"]["available"])
        self.assertEqual(raw["no_such__metric.sum"]["note"], "not on this device")
        text = self.kprof("run", self.src, *TRIAD, "--backend", "cuda", "--iters", "3",
                          "--counters", "no_such__metric.sum", expect=0).stdout
        self.assertIn("counters (one replayed dispatch", text)
        self.assertRegex(text, r"no_such__metric\.sum\s+n/a \(not on this device\)")
        self.assertIn("roofline", text)
        # Under the reflection, before the buffers.
        self.assertLess(text.index("reflection:"), text.index("counters (one replayed"))
        self.assertLess(text.index("counters (one replayed"), text.index("buffers after the run"))

    def test_sweep_and_bench(self):
        p = self.kprof("sweep", self.src, *TRIAD[:2], "--grid", str(N), "--tg-list", "128,256",
                       "--buffers", TRIAD[-1], "--backend", "cuda", "--iters", "3",
                       "--counters", "--json", expect=0)
        s = json.loads(p.stdout)
        for pt in s["points"]:
            if not pt["counters"]["available"]:
                self.skipTest("counters cannot be read here: " + pt["counters"]["reason"])
            self.assertAlmostEqual(pt["counters"]["derived"]["measured_over_estimated"], 1,
                                   delta=0.1)
        text = self.kprof("sweep", self.src, *TRIAD[:2], "--grid", str(N), "--tg-list",
                          "128,256", "--buffers", TRIAD[-1], "--backend", "cuda", "--iters", "3",
                          "--counters", expect=0).stdout
        self.assertIn("DRAM GB/s", text)
        b = json.loads(self.kprof("bench", self.src, *TRIAD, "--backend", "cuda", "--min-time",
                                  "0", "--min-samples", "9", "--max-noise", "50", "--counters",
                                  "--json", expect=0).stdout)
        k = b["points"][0]["kernels"][0]
        self.assertTrue(k["counters"]["available"])
        self.assertAlmostEqual(k["counters"]["derived"]["measured_over_estimated"], 1, delta=0.1)

    def test_caps_lists_the_metrics(self):
        p = self.kprof("caps", "--counters", "--backend", "cuda", "--json", expect=0)
        c = json.loads(p.stdout)
        if not c["available"]:
            self.skipTest("counters cannot be listed here: " + c["reason"])
        names = [m["name"] for m in c["metrics"]]
        self.assertEqual(c["count"], len(names))
        self.assertGreater(len(names), 100)
        for base in ("dram__bytes_read", "sm__warps_active", "lts__t_sector_hit_rate"):
            self.assertTrue(any(n.startswith(base) for n in names), base)
        text = self.kprof("caps", "--counters", "--backend", "cuda", expect=0).stdout
        self.assertIn("hardware counters", text.splitlines()[0])


if __name__ == "__main__":
    kptest.main()
