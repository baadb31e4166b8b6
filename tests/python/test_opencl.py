"""kprof.profile(opencl=True) around pyopencl kernels on PoCL, each case in a fresh Python (the
profile must start before the process's first OpenCL call: the ICD loader takes kprof's layer in
then): kernels under the scopes that launched them, their dispatch metadata in events(), a kernel
hook's flops on every launch, the exports; kprof.benchmark and kprof.compare of a pyopencl
callable (kprof_benchmark's OpenCL collector)."""

from conftest import needs_opencl, run_fresh

SETUP = """
import json, kprof
hooked = []
def hook(*, kernel_name, grid, threads):
    hooked.append([kernel_name, list(grid), list(threads)])
    return {"flops": 2.0 * grid[0] * threads[0], "bytes": 12.0 * grid[0] * threads[0]}
kprof.register_kernel_hook("saxpy", hook)
prof = kprof.profile(opencl=True).start()
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, '''__kernel void saxpy(__global float *y, __global const float *x, float a)
{ int i = get_global_id(0); y[i] += a * x[i]; }''').build()
N = 4096
x = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
              hostbuf=np.ones(N, np.float32))
y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
              hostbuf=np.zeros(N, np.float32))
saxpy = prg.saxpy
def launch():
    saxpy(queue, (N,), (64,), y, x, np.float32(2.0))
"""


@needs_opencl
def test_kernels_in_scopes_with_hooks():
    out = run_fresh(SETUP + """
with kprof.scope("step"):
    for _ in range(3):
        launch()
    queue.finish()
host = np.empty(N, np.float32)
cl.enqueue_copy(queue, host, y)
prof.stop()
kernels = [e for e in prof.events() if e["kind"] == "kernel"]
rows = {(r["kind"], r["path"]): r for r in prof.key_averages("call_path").rows}
print(json.dumps({"kernels": kernels, "hooked": hooked, "value": float(host[0]),
                  "paths": sorted("%s %s %d" % (k[0], k[1], r["calls"]) for k, r in rows.items()
                                  if k[0] in ("range", "kernel")),
                  "step_gpu": rows[("range", "step")]["gpu_s"],
                  "kernel_flops": sum(r["flops"] for k, r in rows.items() if k[0] == "kernel"),
                  "copies": sum(1 for e in prof.events() if e["kind"] == "memcpy")}))
""")
    assert out["value"] == 6.0  # three saxpys of 2 * 1
    assert len(out["kernels"]) == 3
    for k in out["kernels"]:
        assert k["name"] == "saxpy"
        assert k["grid"] == [N // 64 for N in (4096,)] + [1, 1] and k["block"] == [64, 1, 1]
        assert k["flops"] == 2.0 * 4096 and k["metric_bytes"] == 12.0 * 4096
        assert k["end_ns"] >= k["start_ns"] and k["correlation"] is not None
    assert out["hooked"] == [["saxpy", [64, 1, 1], [64, 1, 1]]] * 3
    assert out["kernel_flops"] == 3 * 2.0 * 4096
    assert out["step_gpu"] > 0
    assert any(p.startswith("kernel ") and p.endswith(" 3") for p in out["paths"]), out["paths"]
    assert "range step 1" in out["paths"]
    assert out["copies"] >= 1


@needs_opencl
def test_exports_carry_the_kernels(tmp_path):
    out = run_fresh(SETUP + """
import sys
launch(); queue.finish()
prof.stop()
prof.export_chrome_trace(sys.argv[0] + ".json") if False else None
d = %r
prof.export_chrome_trace(d + "/t.json")
prof.save(d + "/run.kprof")
print(json.dumps({"report": kprof.Trace(d + "/run.kprof").report(),
                  "kernels": kprof.Trace(d + "/run.kprof").kernels()}))
""" % str(tmp_path))
    import json
    doc = json.load(open(str(tmp_path / "t.json")))
    assert "saxpy" in {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert [k["name"] for k in out["kernels"]] == ["saxpy"]
    assert out["kernels"][0]["flops"] == 2.0 * 4096
    assert "saxpy" in out["report"]


@needs_opencl
def test_hook_errors_are_not_silent():
    out = run_fresh(SETUP.replace('return {"flops"', 'return {"watts": 1, "flops"') + """
import sys, io
seen = []
sys.unraisablehook = lambda u: seen.append(str(u.exc_value))
launch(); queue.finish()
prof.stop()
k = [e for e in prof.events() if e["kind"] == "kernel"][0]
print(json.dumps({"seen": seen, "flops": k["flops"]}))
""")
    assert out["flops"] is None
    assert any("watts" in s and "a hook gives flops and bytes" in s for s in out["seen"])


@needs_opencl
def test_benchmark_and_compare_opencl():
    """Against issue 25's contract (kprof_benchmark's OpenCL collector, pybench's work)."""
    out = run_fresh(SETUP + """
launch(); queue.finish()
prof.stop()
b = kprof.benchmark(launch, device="opencl", budget=0.5, min_runs=5, max_runs=50,
                    flops=2.0 * N, bytes=12.0 * N)
c = kprof.compare(launch, launch, device="opencl", budget=0.5, min_runs=5, max_runs=50)
print(json.dumps({"runs": b.runs, "kernels": b.kernels, "p50": b.p50_ns, "lo": b.lo_ns,
                  "hi": b.hi_ns, "samples": len(b.samples), "stop": b.stop, "gflops": b.gflops,
                  "summary": b.summary(), "verdict": c.verdict, "reasons": c.reasons,
                  "a_runs": c.a.runs, "b_runs": c.b.runs, "ci": list(c.ci)}))
""")
    assert out["kernels"] == 1
    assert 5 <= out["runs"] <= 50 and out["samples"] == out["runs"]
    assert out["lo"] <= out["p50"] <= out["hi"]
    assert out["stop"] in ("noise", "settled", "budget", "runs")
    assert out["gflops"] > 0 and "GFLOP/s" in out["summary"]
    assert out["verdict"] in ("SAME", "UNSURE", "FASTER", "SLOWER")
    assert out["a_runs"] >= 1 and out["b_runs"] >= 1
    assert out["ci"][0] <= out["ci"][1]


@needs_opencl
def test_opencl_benchmark_without_layer_says_why():
    """pyopencl used before any profile: the layer is not in the chain, and kprof says so."""
    out = run_fresh("""
import json, kprof, numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
try:
    kprof.benchmark(lambda: cl.enqueue_fill_buffer(q, buf, np.uint8(0), 0, 4096), device="opencl")
    print(json.dumps({"raised": None}))
except kprof.Error as e:
    print(json.dumps({"raised": type(e).__name__, "message": str(e)}))
""")
    assert out["raised"] == "UnavailableError", out
    assert "kprof_benchmark" in out["message"]
