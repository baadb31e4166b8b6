"""libkprof.so exports its public API (include/kprof.h: the kprof_* functions, and the one
flag the scopes' inline functions read) and nothing else: kprof's internal kp_* functions stay inside, so a program that links libkprof cannot
collide with them or come to depend on them."""

import os
import re
import shutil
import subprocess

import kptest

LIB = os.environ.get("KPROF_SHARED_LIBRARY")
HEADER = os.path.join(kptest.SOURCE_DIR, "include", "kprof.h")


class Exports(kptest.KprofTestCase):
    needs_opencl = False

    def test_only_the_public_api(self):
        if not LIB:
            self.skipTest("KPROF_SHARED_LIBRARY not set (run through ctest)")
        if not shutil.which("nm"):
            self.skipTest("no nm on this machine")
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                             check=True).stdout
        # AddressSanitizer adds an ODR indicator (__odr_asan.NAME) beside each exported variable.
        exported = {line.split()[-1] for line in out.splitlines()
                    if len(line.split()) == 3 and line.split()[1] in "TDBRVW"
                    and not line.split()[-1].startswith("__odr_asan")}
        header = open(HEADER).read()
        declared = set(re.findall(r"KPROF_API [^;(]*?\b(kprof_\w+)\(", header))
        # Data: the flag the scopes' inline functions read (extern KPROF_API int kprof_...;).
        declared |= set(re.findall(r"extern KPROF_API [^;(]*?\b(kprof_\w+);", header))
        self.assertTrue(declared, "no KPROF_API function found in kprof.h")
        self.assertEqual(exported - declared, set(), "exported but not in kprof.h")
        self.assertEqual(declared - exported, set(), "declared in kprof.h but not exported")

    def test_inject_library_only_its_entry_points(self):
        # libkprof-inject.so (cmake/kprof-inject.map): the CUDA and NVTX injections' entries,
        # the OpenCL API (a layer, or preloaded), and the start/stop libkprof calls; not the
        # kprof_* status functions it is built with.
        if not LIB:
            self.skipTest("KPROF_SHARED_LIBRARY not set (run through ctest)")
        if not shutil.which("nm"):
            self.skipTest("no nm on this machine")
        inject = os.path.join(os.path.dirname(LIB), "libkprof-inject.so")
        out = subprocess.run(["nm", "-D", "--defined-only", inject], capture_output=True,
                             text=True, check=True).stdout
        exported = {line.split()[-1].split("@")[0] for line in out.splitlines()
                    if len(line.split()) == 3 and line.split()[1] in "TDBRVWi"}
        entries = {"InitializeInjectionNvtx2", "kprof_inject_nvtx_start", "kprof_inject_nvtx_stop",
                   "kprof_inject_opencl_start", "kprof_inject_opencl_stop", "clGetLayerInfo",
                   "clInitLayer", "clEnqueueNDRangeKernel", "clSetKernelArg",
                   "kprof_inject_opencl_bench_begin", "kprof_inject_opencl_bench_end",
                   "kprof_inject_opencl_bench_flush", "kprof_inject_opencl_bench_close"}
        self.assertEqual(entries - exported, set(), "entry points not exported")
        others = {s for s in exported if s not in entries and s != "InitializeInjection"
                  and not re.fullmatch(r"cl[A-Z]\w*", s)}
        self.assertEqual(others, set(), "exported beyond the entry points")


if __name__ == "__main__":
    kptest.main()
