"""kprof caps, --version, --help and the command table, run as a user would."""

import json
import os

import kptest


class Caps(kptest.KprofTestCase):
    def test_text_lists_opencl_device_and_cuda_reason(self):
        p = self.kprof("caps", expect=0)
        out = p.stdout
        self.assertIn("opencl device 0:", out)
        for field in ("vendor", "driver", "compute units", "max threadgroup size",
                      "threadgroup (local) memory", "global memory", "timer resolution",
                      "profiling (device timestamps)"):
            self.assertIn(field, out)
        cuda_ok, _ = kptest.cuda_available()
        if not cuda_ok:
            line = [l for l in out.splitlines() if l.startswith("cuda:")]
            self.assertEqual(len(line), 1, out)
            self.assertRegex(line[0], r"^cuda: unavailable: \S.+")

    def test_json(self):
        caps = json.loads(self.kprof("caps", "--json", expect=0).stdout)
        names = [b["name"] for b in caps["backends"]]
        self.assertEqual(sorted(names), ["cuda", "opencl"])
        cl = [b for b in caps["backends"] if b["name"] == "opencl"][0]
        self.assertTrue(cl["available"])
        self.assertIsNone(cl["reason"])
        d = cl["devices"][0]
        self.assertEqual(d["backend"], "opencl")
        self.assertEqual(d["index"], 0)
        self.assertTrue(d["name"])
        self.assertGreater(d["compute_units"], 0)
        self.assertGreater(d["max_threadgroup_size"], 0)
        self.assertGreater(d["threadgroup_memory_bytes"], 0)
        self.assertGreater(d["global_memory_bytes"], 0)
        self.assertGreater(d["timer_resolution_ns"], 0)
        self.assertTrue(d["profiling"])
        cuda = [b for b in caps["backends"] if b["name"] == "cuda"][0]
        if not cuda["available"]:
            self.assertTrue(cuda["reason"])

    def test_no_platform_says_why_and_exits_3(self):
        empty = os.path.join(self.tmp, "vendors")
        os.makedirs(empty)
        p = self.kprof("caps", "--backend", "opencl", env={"OCL_ICD_VENDORS": empty}, expect=3)
        self.assertIn("opencl: unavailable: no OpenCL platform found", p.stdout)
        self.assertIn("no usable device", p.stderr)
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl",
                                     env={"OCL_ICD_VENDORS": empty}, expect=3).stdout)
        self.assertFalse(caps["backends"][0]["available"])
        self.assertIn("no OpenCL platform", caps["backends"][0]["reason"])

    def test_missing_loader_says_why(self):
        p = self.kprof("caps", "--backend", "opencl",
                       env={"KPROF_OPENCL_LIBRARY": "/nonexistent/libOpenCL.so.1"}, expect=3)
        self.assertIn("opencl: unavailable: /nonexistent/libOpenCL.so.1", p.stdout)
        self.assertIn("could not be loaded", p.stdout)

    def test_bad_arguments(self):
        p = self.kprof("caps", "--backend", "metal", expect=2)
        self.assertIn("kprof: error: --backend 'metal' is not a backend", p.stderr)
        self.kprof("caps", "--bogus", expect=2)
        self.kprof("caps", "extra", expect=2)


class Cli(kptest.KprofTestCase):
    needs_opencl = False

    def test_version(self):
        p = self.kprof("--version", expect=0)
        self.assertRegex(p.stdout, r"^kprof \d+\.\d+\.\d+\n$")
        self.assertEqual(self.kprof("version", expect=0).stdout, p.stdout)

    def test_help_lists_commands_and_exit_codes(self):
        p = self.kprof("--help", expect=0)
        for cmd in ("caps", "isolate", "run", "help"):
            self.assertRegex(p.stdout, r"\n  %s\s" % cmd)
        for code in ("0  success", "1  runtime failure", "2  usage error", "3  backend or device",
                     "4  kernel fault"):
            self.assertIn(code, p.stdout)

    def test_help_cmd_equals_cmd_help(self):
        for cmd in ("caps", "isolate", "run"):
            a = self.kprof("help", cmd, expect=0).stdout
            b = self.kprof(cmd, "--help", expect=0).stdout
            self.assertEqual(a, b)
            self.assertTrue(a.startswith("usage: kprof %s" % cmd))

    def test_unknown_command(self):
        p = self.kprof("frobnicate", expect=2)
        self.assertIn("kprof: error: no command 'frobnicate'", p.stderr)
        self.kprof("help", "frobnicate", expect=2)
        self.kprof(expect=2)


if __name__ == "__main__":
    kptest.main()
