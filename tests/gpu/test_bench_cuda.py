"""kprof bench on a CUDA GPU: the SM clock read through NVML around every batch, cold samples
after the L2 is emptied slower than hot ones for a working set the L2 holds, and A/B verdicts
confirmed in cycles (10% more work SLOWER every time; a kernel against itself never FASTER or
SLOWER). Skipped, with the reason, where no CUDA device exists."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

AB = r"""
extern "C" __global__ void work10(float *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = i * 1e-6f;
    for (int p = 0; p < 10 * 4096; p++)
        x = fmaf(x, 0.999f, 1e-4f);
    if (i < n) out[i] = x;
}
extern "C" __global__ void work11(float *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = i * 1e-6f;
    for (int p = 0; p < 11 * 4096; p++)
        x = fmaf(x, 0.999f, 1e-4f);
    if (i < n) out[i] = x;
}
"""


class BenchCuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def bench(self, *args, expect=0):
        p = self.kprof("bench", *args, "--json", expect=expect)
        return json.loads(p.stdout)

    def test_clock_read_and_cold_slower_than_hot(self):
        demo = os.path.join(kptest.SOURCE_DIR, "kernels", "demo_add.cu")
        # 3 x 4 MiB: held by the L2 when hot, fetched from memory when cold.
        doc = self.bench(demo, "--grid", "1M", "--buffers", "f32:1M,f32:1M,f32:1M,u32=1048576",
                         "--cache", "both", "--min-time", "0.2", "--timeout", "10")
        self.assertEqual(doc["backend"], "cuda")
        hot, cold = (p["kernels"][0] for p in doc["points"])
        for k in (hot, cold):
            self.assertIsNotNone(k["clock_mhz"], k.get("clock_note"))
            self.assertGreater(k["default_clock_mhz"], 0)
            self.assertEqual(len(k["clock_samples_mhz"]), k["samples"])
            self.assertGreater(k["samples"], 100)
        self.assertGreater(cold["flush_ms"], 0)
        self.assertGreater(cold["median_ms"], hot["median_ms"] * 1.05)
        self.assertIn(doc["points"][0]["stop"], ("noise", "settled", "timeout"))

    def test_ab_verdicts_confirmed_in_cycles(self):
        src = self.write("ab.cu", AB)
        common = ["--grid", "65536", "--tg", "128", "--buffers", "f32:65536,u32=65536",
                  "--min-time", "0.1", "--timeout", "10"]
        for _ in range(5):
            doc = self.bench(src, "--entry", "work10", "--entry", "work11", *common)
            c = doc["points"][0]["comparison"]
            self.assertEqual(c["verdict"], "SLOWER", json.dumps(c))
            self.assertEqual(c["cycles_verdict"], "SLOWER", json.dumps(c))
            self.assertGreater(c["ratio"], 1.05)
            self.assertLess(c["ratio"], 1.15)
        for _ in range(5):
            doc = self.bench(src, src, "--entry", "work10", *common)
            c = doc["points"][0]["comparison"]
            self.assertIn(c["verdict"], ("SAME", "UNSURE"), json.dumps(c))


if __name__ == "__main__":
    kptest.main()
