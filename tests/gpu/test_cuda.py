"""The kernel lab on a CUDA GPU: NVRTC, templates, PTX and cubin, reflection with occupancy,
compile-time block sizes (__launch_bounds__, .reqntid), dynamic shared memory, faults,
timeouts, compile failures, dumps and the measured ceiling. Skipped, with the reason, where no
CUDA device exists."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import kptest  # noqa: E402

SPEC4K = "f32:4096,f32:4096,f32:4096,u32=4096"

KERNELS = r"""
#include "scale.h"
template <int N> __global__ void scale(float *x, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * N + OFFSET;
}
template __global__ void scale<2>(float *, unsigned);
namespace ns {
__global__ void twice(float *x, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2 * x[i];
}
}
extern "C" __global__ void fault(float *x)
{
    float *bad = (float *)0x10;
    bad[threadIdx.x] = x[0];
}
extern "C" __global__ void spin(volatile int *flag)
{
    while (flag[0] == 0) {
    }
}
extern "C" __global__ void big_block_fault(float *x)
{
    if (blockDim.x >= 256) {
        float *bad = (float *)0x10;
        bad[threadIdx.x] = x[0];
    } else {
        x[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    }
}
extern "C" __global__ void smem_sum(float *out, const float *in, unsigned n)
{
    extern __shared__ float s[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float acc = 0;
        for (unsigned k = 0; k < blockDim.x; k++) acc += s[k];
        out[blockIdx.x] = acc;
    }
}
"""

HEAVY = r"""
extern "C" __global__ void heavy(float *out, const float *in, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a[160];
#pragma unroll
    for (int j = 0; j < 160; j++) a[j] = in[(i + j * 977u) % n];
#pragma unroll
    for (int it = 0; it < 4; it++) {
#pragma unroll
        for (int j = 0; j < 160; j++) a[j] = a[j] * a[(j + 7) % 160] + 1.0f;
    }
    float s = 0;
#pragma unroll
    for (int j = 0; j < 160; j++) s += a[j];
    out[i] = s;
}
"""


BOUNDED = r"""
extern "C" __global__ void __launch_bounds__(64) lb(float *c, const float *a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * 2.0f;
}
"""


class Cuda(kptest.KprofTestCase):
    needs_opencl = False
    needs_cuda = True

    def setUp(self):
        super().setUp()
        self.write("inc/scale.h", "#define OFFSET 0.0f\n")
        self.kernels = self.write("k.cu", KERNELS)

    def test_caps(self):
        caps = json.loads(self.kprof("caps", "--json", "--backend", "cuda", expect=0).stdout)
        d = caps["backends"][0]["devices"][0]
        self.assertTrue(d["is_gpu"])
        for key in ("compute_capability", "sm_count", "l2_bytes", "max_threads_per_sm",
                    "registers_per_sm", "shared_memory_per_block_optin", "memory_bus_width_bits"):
            self.assertIn(key, d)
        self.assertGreater(d["sm_count"], 0)
        self.assertEqual(d["execution_width"], 32)
        self.assertGreater(d["global_memory_bytes"], 1 << 30)
        text = self.kprof("caps", "--backend", "cuda", expect=0).stdout
        self.assertIn("cuda device 0:", text)

    def test_demo_same_bytes_as_every_backend(self):
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        r = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K)
        self.assertEqual(r["backend"], "cuda")
        a = kptest.fill_f32(1, 4096)
        b = kptest.fill_f32(2, 4096)
        out = [kptest.f32(x + y) for x, y in zip(a, b)]
        self.assertEqual(r["buffers"][0]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", out)))
        self.assertEqual(r["buffers"][1]["fnv1a64"], kptest.fnv1a64(kptest.pack("f", a)))
        self.assertTrue(r["timer"].startswith("cupti"), r["timer"])
        refl = r["reflection"]
        self.assertGreater(refl["registers"], 0)
        self.assertEqual(refl["max_threadgroup_size"], 1024)
        self.assertGreaterEqual(refl["binary_version"], 70)
        self.assertGreater(refl["occupancy"], 0)
        self.assertIn(refl["occupancy_limiter"], ("registers", "shared memory", "warps", "blocks"))
        e = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K,
                          "--timer", "events")
        self.assertEqual(e["timer"], "events")
        self.assertEqual(e["buffers"], r["buffers"])

    def test_templates_namespaces_defines_includes(self):
        inc = os.path.join(self.tmp, "inc")
        # In-place kernels: one dispatch, so the result is that of one call.
        r = self.run_json("run", self.kernels, "--entry", "scale<3>", "--grid", "256", "--tg", "64",
                          "--buffers", "f32:256:iota,u32=256", "-I", inc, "--iters", "1",
                          "--warmup", "0")
        self.assertEqual(r["entry"], "scale<3>")
        self.assertEqual(r["buffers"][0]["sum"], 3.0 * sum(range(256)))
        r = self.run_json("run", self.kernels, "--entry", "ns::twice", "--grid", "256", "--tg",
                          "64", "--buffers", "f32:256:iota,u32=256", "-I", inc, "--iters", "1",
                          "--warmup", "0")
        self.assertEqual(r["buffers"][0]["sum"], 2.0 * sum(range(256)))
        r = self.run_json("run", self.kernels, "--entry", "scale<2>", "--grid", "256", "--tg", "64",
                          "--buffers", "f32:256:iota,u32=256", "-I", inc, "-D", "UNUSED=1",
                          "--iters", "1", "--warmup", "0")
        self.assertEqual(r["buffers"][0]["sum"], 2.0 * sum(range(256)))
        p = self.kprof("run", self.kernels, "--entry", "nope", "--buffers", "f32:1", "-I", inc,
                       expect=2)
        self.assertIn("has no kernel 'nope'", p.stderr)
        self.assertIn("fault", p.stderr)
        self.assertIn("smem_sum", p.stderr)
        p = self.kprof("run", self.kernels, "--entry", "ns::twice", "--buffers", "i32:256,u32=1",
                       "-I", inc, expect=2)
        self.assertIn("argument 1", p.stderr)

    def test_ptx_and_cubin(self):
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        dump = os.path.join(self.tmp, "dump")
        ref = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC4K,
                            env={"KPROF_DUMP_DIR": dump})
        exts = sorted(os.path.splitext(f)[1] for f in os.listdir(dump))
        self.assertEqual(exts, [".cu", ".cubin", ".log", ".options", ".ptx"])
        opts = open([os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(".options")][0]).read()
        self.assertIn("-arch=sm_", opts)
        for ext in (".ptx", ".cubin"):
            path = [os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(ext)][0]
            r = self.run_json("run", path, "--entry", "demo_add", "--grid", "4096", "--tg", "64",
                              "--buffers", SPEC4K)
            self.assertEqual(r["buffers"], ref["buffers"], ext)

    def test_register_pressure(self):
        path = self.write("heavy.cu", HEAVY)
        r = self.run_json("run", path, "--grid", "65536", "--tg", "128",
                          "--buffers", "f32:65536,f32:65536,u32=65536", "--iters", "3")
        refl = r["reflection"]
        self.assertGreater(refl["registers"], 64)
        self.assertLess(refl["max_threadgroup_size"], 1024)
        self.assertEqual(refl["occupancy_limiter"], "registers")
        self.assertIn("register_pressure", [x["id"] for x in r["readings"]])
        too_big = refl["max_threadgroup_size"] * 2
        p = self.kprof("run", path, "--grid", "65536", "--tg", str(too_big),
                       "--buffers", "f32:65536,f32:65536,u32=65536", expect=2)
        self.assertIn("above heavy's maximum threadgroup size %d" % refl["max_threadgroup_size"],
                      p.stderr)

    # Issue 10, item 4: the driver's max threads per block folds __launch_bounds__, .reqntid and
    # registers into one number; kprof reads the rule from the PTX or the cubin, shows it, keeps
    # it in the compile cache and checks --tg and the sweep's sizes against it.
    def test_compile_time_block_size(self):
        path = self.write("lb.cu", BOUNDED)
        spec = "f32:4096,f32:4096,u32=4096"
        dump = os.path.join(self.tmp, "dump")
        r = self.run_json("run", path, "--grid", "4096", "--tg", "64", "--buffers", spec,
                          "--iters", "2", env={"KPROF_DUMP_DIR": dump})
        rule = {"kind": "max", "size": [64, 1, 1], "threads": 64,
                "from": "__launch_bounds__ / .maxntid"}
        self.assertEqual(r["reflection"]["threadgroup_rule"], rule)
        self.assertEqual(r["reflection"]["max_threadgroup_size"], 64)
        self.assertNotIn("register_pressure", [x["id"] for x in r["readings"]])
        # From the compile cache: the same rule.
        r = self.run_json("run", path, "--grid", "4096", "--tg", "64", "--buffers", spec,
                          "--iters", "2")
        self.assertTrue(r["compile"]["cache_hit"])
        self.assertEqual(r["reflection"]["threadgroup_rule"], rule)
        p = self.kprof("run", path, "--grid", "4096", "--tg", "64", "--buffers", spec,
                       "--iters", "2", expect=0)
        self.assertIn("max tg 64 (__launch_bounds__ / .maxntid; device 1024)", p.stdout)
        p = self.kprof("run", path, "--grid", "4096", "--tg", "128", "--buffers", spec, expect=2)
        self.assertIn("tg 128 is above lb's maximum threadgroup size 64 (__launch_bounds__",
                      p.stderr)
        s = self.run_json("sweep", path, "--grid", "4096", "--buffers", spec, "--iters", "2")
        self.assertEqual([x["threads"] for x in s["points"]], [32, 64])
        self.assertEqual(s["warnings"], [])
        # The cubin NVRTC made carries it in its .nv.info records.
        cubin = [os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(".cubin")][0]
        r = self.run_json("run", cubin, "--grid", "4096", "--tg", "64", "--buffers", spec,
                          "--iters", "2")
        self.assertEqual(r["reflection"]["threadgroup_rule"], rule)
        self.kprof("run", cubin, "--grid", "4096", "--tg", "128", "--buffers", spec, expect=2)
        # A required shape (.reqntid, as Triton writes): exactly it, and the sweep has only it.
        ptx = [os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(".ptx")][0]
        text = open(ptx).read()
        self.assertIn(".maxntid 64, 1, 1", text)
        req = self.write("req.ptx", text.replace(".maxntid 64, 1, 1", ".reqntid 32, 2, 1"))
        r = self.run_json("run", req, "--grid", "64x64", "--tg", "32x2", "--buffers", spec,
                          "--iters", "2")
        self.assertEqual(r["reflection"]["threadgroup_rule"],
                         {"kind": "required", "size": [32, 2, 1], "threads": 64,
                          "from": ".reqntid"})
        p = self.kprof("run", req, "--grid", "4096", "--tg", "64", "--buffers", spec, expect=2)
        self.assertIn("tg 64 is not lb's required threadgroup size 32x2 (.reqntid", p.stderr)
        self.assertIn("it needs a 2-D grid and --tg 32x2", p.stderr)
        s = self.run_json("sweep", req, "--grid", "64x64", "--buffers", spec, "--iters", "2")
        self.assertEqual([x["threadgroup"] for x in s["points"]], [[32, 2]])
        self.assertIsNone(s["best_threadgroup"])

    def test_dynamic_shared_memory(self):
        inc = os.path.join(self.tmp, "inc")
        r = self.run_json("run", self.kernels, "--entry", "smem_sum", "--grid", "1024", "--tg",
                          "256", "--smem", "1024", "--buffers", "f32:4:zero,f32:1024:iota,u32=1024",
                          "-I", inc)
        self.assertEqual(r["buffers"][0]["sum"], sum(range(1024)))
        big = self.run_json("run", self.kernels, "--entry", "smem_sum", "--grid", "1024", "--tg",
                            "256", "--smem", "100000",
                            "--buffers", "f32:4:zero,f32:1024:iota,u32=1024", "-I", inc)
        self.assertEqual(big["reflection"]["occupancy_limiter"], "shared memory")
        self.assertLess(big["reflection"]["occupancy"], r["reflection"]["occupancy"])
        p = self.kprof("run", self.kernels, "--entry", "smem_sum", "--buffers",
                       "f32:4,f32:1024,local:1024", "-I", inc, expect=2)
        self.assertIn("--smem", p.stderr)

    def test_fault_is_reported_not_hung(self):
        inc = os.path.join(self.tmp, "inc")
        t0 = time.time()
        p = self.kprof("run", self.kernels, "--entry", "fault", "--grid", "32", "--tg", "32",
                       "--buffers", "f32:32", "-I", inc, expect=4, timeout=120)
        self.assertIn("fault", p.stderr)
        self.assertIn("CUDA_ERROR_ILLEGAL_ADDRESS", p.stderr)
        self.assertLess(time.time() - t0, 60)

    def test_timeout(self):
        inc = os.path.join(self.tmp, "inc")
        t0 = time.time()
        p = self.kprof("run", self.kernels, "--entry", "spin", "--grid", "32", "--tg", "32",
                       "--buffers", "i32:1:zero", "--timeout", "1", "--warmup", "0", "--iters",
                       "1", "-I", inc, expect=4, timeout=120)
        self.assertIn("kernel spin is still running after 1 s", p.stderr)
        self.assertLess(time.time() - t0, 60)

    def test_compile_failure_keeps_source_options_log(self):
        path = self.write("bad.cu", 'extern "C" __global__ void bad(float *x) { x[0] = y; }\n')
        p = self.kprof("run", path, "--buffers", "f32:1", "--grid", "1", "--tg", "1", expect=4)
        self.assertIn("NVRTC", p.stderr)
        self.assertIn("--- compiler log ---", p.stderr)
        self.assertIn('identifier "y" is undefined', p.stderr)
        kept = [l for l in p.stderr.splitlines() if l.startswith("source, options and log kept in ")]
        folder = kept[0][len("source, options and log kept in "):].rstrip("/")
        self.assertEqual(sorted(os.path.splitext(f)[1] for f in os.listdir(folder)),
                         [".cu", ".log", ".options"])

    def test_measure_and_percent_of_ceiling(self):
        r = json.loads(self.kprof("caps", "--measure", "--backend", "cuda", "--max-bytes", "256M",
                                  "--iters", "5", "--json", expect=0, timeout=300).stdout)
        self.assertGreater(r["ceiling_gb_per_s"], 500)
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        run = self.run_json("run", "demo", "--grid", "16M", "--tg", "256",
                            "--buffers", "f32:16M,f32:16M,f32:16M,u32=16777216")
        self.assertEqual(run["ceiling_gb_per_s"], r["ceiling_gb_per_s"])
        self.assertGreater(run["ceiling_percent"], 1)

    def test_sweep(self):
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        r = self.run_json("sweep", "demo", "--grid", "1M", "--iters", "5",
                          "--buffers", "f32:1M,f32:1M,f32:1M,u32=1048576")
        self.assertEqual([p["threads"] for p in r["points"]], [32, 64, 128, 256, 512, 1024])
        for p in r["points"]:
            self.assertIn("occupancy", p)
            self.assertIn(p["occupancy_limiter"], ("registers", "shared memory", "warps", "blocks"))
        self.assertEqual(sum(p["best"] for p in r["points"]), 1)
        self.assertEqual(r["warnings"], [])
        path = self.write("heavy.cu", HEAVY)
        h = self.run_json("sweep", path, "--grid", "65536", "--iters", "3",
                          "--buffers", "f32:65536,f32:65536,u32=65536")
        self.assertLess(h["kernel_max_threadgroup_size"], 1024)
        self.assertLessEqual(h["points"][-1]["threads"], h["kernel_max_threadgroup_size"])
        self.assertEqual([w["id"] for w in h["warnings"]], ["register_pressure"])

    def test_sweep_stops_at_a_fault(self):
        inc = os.path.join(self.tmp, "inc")
        p = self.kprof("sweep", self.kernels, "--entry", "big_block_fault", "--grid", "4096",
                       "--buffers", "f32:4096", "-I", inc, "--iters", "2", expect=4, timeout=120)
        for tg in ("32 ", "64 ", "128 "):
            self.assertIn("\n  " + tg, p.stdout)
        self.assertNotIn("\n  256 ", p.stdout)
        self.assertIn("CUDA_ERROR_ILLEGAL_ADDRESS", p.stderr)
        self.assertIn("at tg 256; the sweep stopped", p.stderr)

    def test_first_hour_on_cuda(self):
        # Issue 23 on a GPU: blank compiler options refused before anything runs; a slow
        # kernel's default count cut by the time budget; a 2-D grid's default shapes are whole
        # warps wide; the words stay GPU words on a GPU.
        inc = os.path.join(self.tmp, "inc")
        for bad in (["-D", ""], ["-I", ""], ["-D", " "]):
            p = self.kprof("run", self.kernels, "--entry", "ns::twice", "--grid", "64", "--tg",
                           "32", "--buffers", "f32:64,u32=64", "-I", inc, *bad, expect=2)
            self.assertIn("compiler option", p.stderr)
        path = self.write("slow.cu", 'extern "C" __global__ void slow(long long cycles)\n{\n'
                          '    long long t0 = clock64();\n    while (clock64() - t0 < cycles) {\n'
                          '    }\n}\n')
        # About 0.1 s a dispatch at 2 GHz; 50 of them would take 5 s, past a 1 s budget.
        r = self.run_json("run", path, "--grid", "1", "--tg", "1", "--buffers",
                          "i64=200000000", "--warmup", "1", "--time-budget", "1")
        self.assertEqual(r["iterations_asked"], 50)
        self.assertTrue(r["time_budget_cut"])
        self.assertLess(r["iterations"], 50)
        self.assertEqual(len(r["gpu_ms_samples"]), r["iterations"])
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        text = self.kprof("run", "demo", "--grid", "16M", "--tg", "256", "--buffers",
                          "f32:16M,f32:16M,f32:16M,u32=16777216", expect=0).stdout
        self.assertIn("GPU", text)
        r = self.run_json("run", self.kernels, "--entry", "ns::twice", "--sweep-tg", "--grid",
                          "256x256", "--buffers", "f32:65536,u32=65536", "-I", inc,
                          "--iters", "3")
        shapes = [tuple(p["threadgroup"]) for p in r["points"]]
        self.assertGreater(len(shapes), 3)
        for x, y in shapes:
            self.assertEqual(x % 32, 0, shapes)
            self.assertLessEqual(x * y, r["kernel_max_threadgroup_size"])
        self.assertIn((32, 8), shapes)

    def test_device_out_of_range(self):
        self.kprof("isolate", "demo", "--lang", "cu", expect=0)
        p = self.kprof("run", "demo", "--device", "99", "--buffers", SPEC4K, expect=3)
        self.assertIn("device 99 does not exist", p.stderr)


if __name__ == "__main__":
    kptest.main()
