"""kprof run with bad input: every case gets a clear message, the documented exit code, and
leaves nothing half-written."""

import json
import os
import re
import time

import kptest

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"
TWO_KERNELS = r"""
__kernel void first(__global float *x, uint n) { x[get_global_id(0)] = n; }
__kernel void second(__global int *y, __local float *s, float k) { y[0] = (int)k; }
"""

# Faults for sure, whatever else runs: work-item 0 writes to address `far` (u64=8: the first
# page, never mapped), and no other work-item touches memory; far=0 writes nothing.
FAULTING = r"""
__kernel void oob(__global float *out, ulong far) {
    if (get_global_id(0) == 0 && far) *(__global volatile float *)far = out[0];
}
"""
STRUCTS = r"""
struct params { float a; int b; };
typedef struct { float a; int b; } params_t;
typedef params_t alias_t;
union bits { float f; uint i; };
typedef union bits bits_t;
typedef uint count_t;
__kernel void by_struct(__global float *out, struct params p) { out[0] = p.a; }
__kernel void by_typedef(__global float *out, alias_t p) { out[0] = p.a; }
__kernel void by_union(__global float *out, bits_t p) { out[0] = p.f; }
__kernel void by_pointer(__global float *out, __global struct params *p) { out[0] = p->a; }
__kernel void by_scalar(__global float *out, count_t n) { out[0] = n; }
"""


class RunErrors(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        self.dir = os.path.join(self.home, "kernels", "demo")

    def run_demo(self, *extra, expect, env=None, buffers=SPEC, json=True):
        args = ["run", "demo", "--grid", "4096", "--tg", "64", "--buffers", buffers]
        if json:
            args.append("--json")
        p = self.kprof(*args, *extra, expect=expect, env=env)
        if expect != 0:
            self.assertEqual(p.stdout, "", "a failed run printed a result")
            self.assertTrue(p.stderr.startswith("kprof: error: "), p.stderr)
            self.assertEqual(sorted(os.listdir(self.dir)), ["kernel.cl"],
                             "a failed run left files behind")
        return p

    def test_missing_file(self):
        p = self.kprof("run", os.path.join(self.tmp, "nope.cl"), "--buffers", SPEC, expect=2)
        self.assertIn("nope.cl: no such file", p.stderr)

    def test_missing_kernel_folder(self):
        p = self.kprof("run", "ghost", "--buffers", SPEC, expect=2)
        self.assertIn("no kernel folder", p.stderr)
        self.assertIn("kprof isolate ghost", p.stderr)

    def test_unknown_language(self):
        path = self.write("k.metal", "kernel void k() {}")
        p = self.kprof("run", path, "--buffers", SPEC, expect=2)
        self.assertIn("unknown kernel language", p.stderr)

    def test_unknown_entry_lists_kernels(self):
        p = self.run_demo("--entry", "demo_sub", expect=2)
        self.assertIn("has no kernel 'demo_sub'", p.stderr)
        self.assertIn("demo_add(float* out, float* a, float* b, uint n)", p.stderr)

    def test_several_kernels_need_entry(self):
        path = self.write("two.cl", TWO_KERNELS)
        p = self.kprof("run", path, "--grid", "64", "--tg", "8", "--buffers", "f32:64,u32=1",
                       expect=2)
        self.assertIn("has 2 kernels (first, second): choose one with --entry", p.stderr)
        p = self.kprof("run", path, "--entry", "third", "--grid", "64", "--tg", "8",
                       "--buffers", "f32:64,u32=1", expect=2)
        self.assertIn("first(float* x, uint n)", p.stderr)
        self.assertIn("second(int* y, local float* s, float k)", p.stderr)
        self.kprof("run", path, "--entry", "second", "--grid", "64", "--tg", "8",
                   "--buffers", "i32:1,local:64,f32=2", expect=0)

    def test_spec_count_mismatch(self):
        p = self.run_demo(expect=2, buffers="f32:4096,f32:4096,f32:4096")
        self.assertIn("--buffers has 3 items but demo_add takes 4 arguments", p.stderr)
        self.assertIn("demo_add(float* out", p.stderr)

    def test_spec_type_mismatch(self):
        p = self.run_demo(expect=2, buffers="f32:4096,i32:4096,f32:4096,u32=4096")
        # Issue 23 item 8: "an i32", and the item to write instead.
        self.assertIn("argument 2 'a' is float* but --buffers item 2 'i32:4096' is an i32 "
                      "(int) buffer; write f32:4096 for it", p.stderr)
        p = self.run_demo(expect=2, buffers="f32:4096,f32:4096,f32:4096,f32=1")
        self.assertIn("argument 4 'n' is uint", p.stderr)
        self.assertIn("is an f32 (4 bytes); write u32=1 for it", p.stderr)
        # A float argument given as u32=2: f32=2 is suggested.
        path = self.write("scale.cl", "__kernel void scale(__global float *x, float k) "
                                      "{ x[get_global_id(0)] *= k; }")
        p = self.kprof("run", path, "--grid", "64", "--tg", "8", "--buffers", "f32:64,u32=2",
                       expect=2)
        self.assertIn("argument 2 'k' is float (4 bytes) but --buffers item 2 'u32=2' is a u32 "
                      "(4 bytes); write f32=2 for it", p.stderr)
        # No suggestion the value cannot take: 1.5 is no u32.
        p = self.run_demo(expect=2, buffers="f32:4096,f32:4096,f32:4096,f32=1.5")
        self.assertNotIn("write u32", p.stderr)
        p = self.run_demo(expect=2, buffers="f32:4096,f32:4096,f32:4096,u32:4")
        self.assertIn("TYPE=VALUE", p.stderr)
        p = self.run_demo(expect=2, buffers="f32=1,f32:4096,f32:4096,u32=4")
        self.assertIn("TYPE:COUNT", p.stderr)

    def test_malformed_spec(self):
        for spec, text in (("f32:4096,f32:abc,f32:4096,u32=4", "item 2 'f32:abc'"),
                           ("f32:4096,f32:4096,q9:1,u32=4", "item 3 'q9:1': unknown type 'q9'"),
                           ("f32:4096,,f32:4096,u32=4", "item 2 is empty"),
                           ("f32:4096,f32:4096,f32:4096,u32=x", "'x' is not an integer"),
                           ("f32:4096:glitter,f32:1,f32:1,u32=1", "unknown fill 'glitter'")):
            p = self.run_demo(expect=2, buffers=spec)
            self.assertIn(text, p.stderr)

    def test_tg_above_kernel_max(self):
        import json
        index = self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC,
                              "--iters", "1")["device"]["index"]
        os.remove(os.path.join(self.dir, "run.json"))
        caps = self.kprof("caps", "--json", "--backend", "opencl", expect=0)
        dev = [d for d in json.loads(caps.stdout)["backends"][0]["devices"]
               if d["index"] == index][0]
        big = dev["max_threadgroup_dims"][0] * 2
        p = self.kprof("run", "demo", "--grid", str(big * 2), "--tg", str(big), "--buffers", SPEC,
                       expect=2)
        self.assertIn("tg %d in dimension x is above the device's maximum %d"
                      % (big, dev["max_threadgroup_dims"][0]), p.stderr)

    def test_tg_above_kernel_max_2d(self):
        path = self.write("z.cl", "__kernel void z(__global float *x) { x[0] = 0; }")
        p = self.kprof("run", path, "--grid", "4096x4096", "--tg", "128x128", "--buffers", "f32:1",
                       expect=2)
        self.assertIn("tg 16384 threads is above z's maximum threadgroup size", p.stderr)

    def test_grid_not_multiple_of_tg(self):
        p = self.run_demo("--grid", "1000", expect=2)
        self.assertIn("grid 1000 is not a multiple of tg 64", p.stderr)
        self.assertIn("--grid 1024", p.stderr)

    def test_allocation_failure(self):
        p = self.run_demo(expect=1, buffers="f32:4096,f32:4096,f32:64G,u32=4096")
        self.assertIn("--buffers item 3 'f32:64G'", p.stderr)
        self.assertIn("largest allocation", p.stderr)

    def test_no_device(self):
        empty = os.path.join(self.tmp, "vendors")
        os.makedirs(empty)
        env = {"OCL_ICD_VENDORS": empty, "OCL_ICD_FILENAMES": None}
        if self.kprof("caps", "--backend", "opencl", env=env).returncode != 0:
            p = self.run_demo(expect=3, env=env)
            self.assertIn("no OpenCL platform found", p.stderr)
        p = self.run_demo(expect=3, env={"KPROF_OPENCL_LIBRARY": "/nonexistent.so"})
        self.assertIn("/nonexistent.so", p.stderr)

    def test_backend_language_mismatch(self):
        p = self.run_demo("--backend", "cuda", expect=2)
        self.assertIn("needs the opencl backend", p.stderr)

    def test_cuda_kernel_without_cuda(self):
        ok, why = kptest.cuda_available()
        if ok:
            self.skipTest("a CUDA device exists here; this checks the machine without one")
        path = self.write("k.cu", 'extern "C" __global__ void k(float *x) { x[0] = 1; }')
        p = self.kprof("run", path, "--buffers", "f32:1", expect=3)
        self.assertIn("cuda:", p.stderr)

    def test_compile_failure_prints_log_and_keeps_source(self):
        path = self.write("bad.cl", "__kernel void bad(__global float *x) { x[0] = y; }\n")
        p = self.kprof("run", path, "--buffers", "f32:1", "--grid", "1", "--tg", "1",
                       "--json", expect=4)
        self.assertEqual(p.stdout, "")
        self.assertIn("OpenCL C compile failed", p.stderr)
        self.assertIn("--- compiler log ---", p.stderr)
        self.assertIn("undeclared identifier 'y'", p.stderr)
        # The log cites the user's file, line and column, not the runtime's temporary copy.
        self.assertIn(path + ":1:", p.stderr)
        self.assertNotIn("tempfile_", p.stderr)
        kept = [l for l in p.stderr.splitlines() if l.startswith("source, options and log kept in ")]
        self.assertEqual(len(kept), 1, p.stderr)
        folder = kept[0][len("source, options and log kept in "):].rstrip("/")
        files = sorted(os.path.splitext(f)[1] for f in os.listdir(folder))
        self.assertEqual(files, [".cl", ".log", ".options"])
        log = [f for f in os.listdir(folder) if f.endswith(".log")][0]
        with open(os.path.join(folder, log)) as f:
            self.assertIn(path + ":1:", f.read())
        self.assertTrue(folder.startswith(self.cache))

    def test_compile_failure_on_ci_runners(self):
        # GitHub Actions: the failure is kept under $RUNNER_TEMP/kprof-compilation-dumps, which
        # outlives the job's steps for an upload step, and a workflow notice names the folder.
        path = self.write("bad.cl", "__kernel void bad(__global float *x) { x[0] = y; }\n")
        args = ("run", path, "--buffers", "f32:1", "--grid", "1", "--tg", "1")
        runner_temp = os.path.join(self.tmp, "runner temp")
        os.mkdir(runner_temp)
        p = self.kprof(*args, expect=4, env={"GITHUB_ACTIONS": "true", "RUNNER_TEMP": runner_temp})
        base = os.path.join(runner_temp, "kprof-compilation-dumps")
        notice = [l for l in p.stderr.splitlines() if l.startswith("::notice title=kprof::")]
        self.assertEqual(len(notice), 1, p.stderr)
        m = re.search(r" kept in (.*) \(upload it with actions/upload-artifact", notice[0])
        self.assertTrue(m, notice[0])
        folder = m.group(1)
        self.assertEqual(os.path.dirname(folder), base)
        self.assertEqual(sorted(os.path.splitext(f)[1] for f in os.listdir(folder)),
                         [".cl", ".log", ".options"])
        self.assertIn("source, options and log kept in %s/" % folder, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cache, "failed")))
        # KPROF_DUMP_DIR still wins, and is the folder named; a good kernel's dumps are named too.
        dump = os.path.join(self.tmp, "dumps")
        env = {"GITHUB_ACTIONS": "true", "RUNNER_TEMP": runner_temp, "KPROF_DUMP_DIR": dump}
        p = self.kprof(*args, expect=4, env=env)
        self.assertRegex(p.stderr, r"(?m)^::notice title=kprof::.* kept in %s \(" % re.escape(dump))
        good = self.write("good.cl", "__kernel void good(__global float *x) { x[0] = 1; }\n")
        p = self.kprof("run", good, "--buffers", "f32:1", "--grid", "1", "--tg", "1", "--iters",
                       "1", "--json", expect=0, env=env)
        json.loads(p.stdout)  # the notice is not in the JSON
        self.assertRegex(p.stderr, r"(?m)^::notice title=kprof::KPROF_DUMP_DIR: .* kept in %s \("
                         % re.escape(dump))
        # Off GitHub Actions, no notice.
        p = self.kprof(*args, expect=4, env={"RUNNER_TEMP": runner_temp})
        self.assertNotIn("::notice", p.stderr)
        # Buildkite: the upload command, the folder quoted for the shell.
        p = self.kprof(*args, expect=4, env={"BUILDKITE": "true"})
        m = re.search(r"(?m)^kprof: on Buildkite, keep them as artifacts: "
                      r"buildkite-agent artifact upload '(.*)/\*\*/\*'$", p.stderr)
        self.assertTrue(m, p.stderr)
        self.assertTrue(m.group(1).startswith(os.path.join(self.cache, "failed")), m.group(1))
        self.assertTrue(os.path.isdir(m.group(1)))

    def in_process_device(self):
        """An OpenCL device whose kernels run in kprof's process (PoCL's CPU device), or skip."""
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        for dev in caps["backends"][0]["devices"]:
            if dev["kernels_in_process"]:
                return ["--backend", "opencl", "--device", str(dev["index"])]
        self.skipTest("no OpenCL device here runs kernels inside kprof's process")

    def check_fault(self, p, grid, table_header=False):
        # A sweep in text prints its table's header once every size is checked, before the
        # first point runs; no row of a void sweep may stand.
        out = p.stdout
        if table_header:
            lines = out.splitlines()
            self.assertLessEqual(len(lines), 2, out)
            if lines:
                self.assertIn(" tg ", lines[1] if len(lines) > 1 else " tg ", out)
            out = ""
        self.assertEqual(out, "", "a run whose kernel faulted printed results")
        last = p.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("kprof: error: kernel oob faulted: the process running "
                                        "it died of SIG"), p.stderr)
        self.assertIn("during its dispatches (grid %d, tg 64); likely cause: " % grid, last)
        self.assertIn("runs kernels inside kprof's own process, so kprof ran them in a child "
                      "process. Results of this run are void", last)
        return last

    def test_kernel_fault_in_process(self):
        device = self.in_process_device()
        path = self.write("oob.cl", FAULTING)
        # The case: a 102-element buffer for a 1,024-thread grid.
        p = self.kprof("run", path, "--grid", "1024", "--tg", "64", "--buffers", "f32:102,u64=8",
                       *device, expect=4, timeout=120)
        last = self.check_fault(p, 1024)
        self.assertIn("argument 1 'out' (f32:102) holds fewer elements than the 1024 threads of "
                      "the grid", last)
        # Every buffer is long enough: the cause is an index the kernel computes.
        p = self.kprof("run", path, "--grid", "1024", "--tg", "64", "--buffers", "f32:1024,u64=8",
                       *device, expect=4, timeout=120)
        last = self.check_fault(p, 1024)
        self.assertIn("likely cause: an index past the end of a buffer", last)
        self.assertNotIn("holds fewer elements", last)
        # A kernel folder gets no run.json from a void run.
        self.kprof("isolate", "oob", "--from", path, expect=0)
        p = self.kprof("run", "oob", "--grid", "1024", "--tg", "64", "--buffers", "f32:102,u64=8",
                       "--json", *device, expect=4, timeout=120)
        self.check_fault(p, 1024)
        self.assertEqual(os.listdir(os.path.join(self.home, "kernels", "oob")), ["kernel.cl"])
        # Without the faulting write the same session runs and reports.
        out = self.run_json("run", path, "--grid", "1024", "--tg", "64", "--buffers",
                            "f32:102,u64=0", "--iters", "3", *device)
        self.assertEqual(len(out["gpu_ms_samples"]), 3)
        self.assertEqual(out["buffers"][0]["count"], 102)

    def test_kernel_fault_in_sweep(self):
        device = self.in_process_device()
        path = self.write("oob.cl", FAULTING)
        for fmt in ([], ["--json"]):
            p = self.kprof("sweep", path, "--grid", "1024", "--tg-list", "64,128", "--buffers",
                           "f32:102,u64=8", *fmt, *device, expect=4, timeout=120)
            last = self.check_fault(p, 1024, table_header=not fmt)
            self.assertIn("argument 1 'out' (f32:102) holds fewer elements", last)

    def test_crash_after_the_kernels_ran_voids_the_run(self):
        # Memory a kernel corrupted often fails only at read-back or release; a layer that aborts
        # there stands for it, deterministically.
        device = self.in_process_device()
        layer, app = os.environ.get("KPROF_CRASH_LAYER"), os.environ.get("KPROF_CL_APP")
        if not layer or not app:
            self.skipTest("no OpenCL ICD loader here to build tests/programs/crash_layer.c for")
        if not kptest.loader_has_layers(app):
            self.skipTest("this OpenCL ICD loader knows no OPENCL_LAYERS")
        self.kprof("isolate", "oob", "--from", self.write("oob.cl", FAULTING), expect=0)
        folder = os.path.join(self.home, "kernels", "oob")
        args = ("run", "oob", "--grid", "1024", "--tg", "64", "--buffers", "f32:102,u64=0",
                "--iters", "3", "--json", *device)
        for at, doing in (("clEnqueueReadBuffer", "reading its buffers back"),
                          ("clReleaseContext", "releasing the device after the run")):
            p = self.kprof(*args, env={"OPENCL_LAYERS": layer, "KPROF_CRASH_AT": at}, expect=4)
            self.assertEqual(p.stdout, "")
            last = p.stderr.strip().splitlines()[-1]
            self.assertIn("kprof: error: kernel oob corrupted memory, it seems: the process that "
                          "ran it (grid 1024, tg 64) died of SIGABRT (Aborted) %s; likely cause: "
                          "argument 1 'out' (f32:102) holds fewer elements than the 1024 threads "
                          "of the grid" % doing, last)
            self.assertTrue(last.endswith("Results of this run are void"), last)
            self.assertEqual(os.listdir(folder), ["kernel.cl"])
        # Dying before any kernel ran is the runtime's failure (exit 1), not a kernel's fault.
        p = self.kprof(*args, env={"OPENCL_LAYERS": layer, "KPROF_CRASH_AT": "clCreateContext"},
                       expect=1)
        self.assertIn("kprof: error: the process opening the session (device, compile, buffers) "
                      "died of SIGABRT (Aborted), in the device's runtime", p.stderr)
        self.assertNotIn("void", p.stderr)
        # The layer alone lets the run through.
        self.kprof(*args, env={"OPENCL_LAYERS": layer}, expect=0)
        self.assertEqual(sorted(os.listdir(folder)), ["kernel.cl", "run.json"])

    def test_struct_by_value_refused(self):
        path = self.write("structs.cl", STRUCTS)
        for entry, what in (("by_struct", "a struct (struct params)"),
                            ("by_typedef", "a struct (alias_t)"),
                            ("by_union", "a union (bits_t)")):
            for scalar in ("f32=1", "u32=1", "f64=1", "u64=1"):
                p = self.kprof("run", path, "--entry", entry, "--grid", "64", "--tg", "64",
                               "--buffers", "f32:64," + scalar, expect=2)
                self.assertEqual(p.stdout, "")
                noun = "unions" if "union" in what else "structs"
                self.assertIn("kprof: error: argument 2 'p' is %s passed by value: kprof cannot "
                              "fill %s yet" % (what, noun), p.stderr)
        # A pointer to a struct is a buffer, and a typedef of a scalar is that scalar.
        self.kprof("run", path, "--entry", "by_pointer", "--grid", "64", "--tg", "64",
                   "--buffers", "f32:64,u8:8", "--iters", "1", expect=0)
        self.kprof("run", path, "--entry", "by_scalar", "--grid", "64", "--tg", "64",
                   "--buffers", "f32:64,u32=3", "--iters", "1", expect=0)

    def test_timeout(self):
        path = self.write("spin.cl",
                          "__kernel void spin(__global volatile int *x) { while (x[0] == 0) {} }")
        t0 = time.time()
        p = self.kprof("run", path, "--grid", "8", "--tg", "8", "--buffers", "i32:8:zero",
                       "--timeout", "1", "--warmup", "0", "--iters", "1", expect=4, timeout=60)
        self.assertIn("kernel spin is still running after 1 s", p.stderr)
        self.assertLess(time.time() - t0, 30)

    def test_empty_compiler_options_refused_before_anything_runs(self):
        # An empty or blank -D or -I, or --options ending in one, reached the compiler and
        # crashed PoCL inside the session (issue 23): refused with exit 2 while parsing. The
        # OpenCL runtime is made unloadable, so anything that got as far as the device would
        # exit 3 instead.
        env = {"KPROF_OPENCL_LIBRARY": "/nonexistent.so"}
        no_name, no_dir = "-D has no macro name", "-I has no folder"
        cases = ((["-D", ""], no_name), (["-D", " "], no_name), (["-I", ""], no_dir),
                 (["-I", " "], no_dir), (["--options", "-D"], no_name),
                 (["--options", "-O2 -I"], no_dir), (["-D", "=3"], "-D '=3': a macro name"),
                 (["--options", "-D -I inc"], "-D '-I': a macro name"))
        base = ["demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC]
        for how in (["run"], ["run", "--sweep-tg", "--tg-list", "32,64"],
                    ["sweep", "--tg-list", "32,64"], ["bench"]):
            for extra, text in cases:
                p = self.kprof(*how, *base, *extra, env=env, expect=2)
                self.assertTrue(p.stderr.startswith("kprof: error: compiler option "),
                                (how, extra, p.stderr))
                self.assertIn(text, p.stderr, (how, extra))
                self.assertEqual(p.stdout, "")
                self.assertEqual(sorted(os.listdir(self.dir)), ["kernel.cl"], (how, extra))
        # Good options still reach the device (here: the missing runtime, exit 3).
        p = self.kprof("run", *base, "-D", "N=4", "-I", ".", "--options", "-D M", env=env,
                       expect=3)
        self.assertIn("/nonexistent.so", p.stderr)

    def test_usage_errors(self):
        cases = ((["run"], "give a kernel"),
                 (["run", "demo"], "--buffers is required"),
                 (["run", "demo", "--buffers", SPEC, "--grid", "0"], "--grid '0'"),
                 (["run", "demo", "--buffers", SPEC, "--grid", "16x", "--tg", "4"], "--grid '16x'"),
                 (["run", "demo", "--buffers", SPEC, "--grid", "16", "--tg", "4x4"],
                  "--grid has 1 dimension but --tg has 2"),
                 (["run", "demo", "--buffers", SPEC, "--iters", "0"], "--iters '0'"),
                 (["run", "demo", "--buffers", SPEC, "--timeout", "-1"], "--timeout '-1'"),
                 (["run", "demo", "--buffers", SPEC, "--frob"], "unknown option '--frob'"),
                 (["run", "demo", "--buffers"], "--buffers needs a value"),
                 (["run", "demo", "other", "--buffers", SPEC], "unexpected argument 'other'"))
        for args, text in cases:
            p = self.kprof(*args, expect=2)
            self.assertIn(text, p.stderr, args)


if __name__ == "__main__":
    kptest.main()
