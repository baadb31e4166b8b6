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


if __name__ == "__main__":
    kptest.main()
