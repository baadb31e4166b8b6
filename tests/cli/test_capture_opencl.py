"""kprof trace --capture on PoCL (issue 26): the OpenCL layer writes one kernel launch of an
unmodified program (tests/programs/cl_capture_app.c) as a capture folder. The program dumps every
buffer just before and just after each of its launches; the folder must hold the same bytes, the
launch's geometry and arguments as the program gave them, and the program's code. A pattern that
never matches, an unwritable folder and a full disk are each one clear line with nothing written
(no folder, no temporary), and the program's own work is untouched."""

import json
import os
import shutil
import struct
import subprocess

import kptest

APP = os.environ.get("KPROF_CL_CAPTURE_APP")
ENOSPC = os.environ.get("KPROF_ENOSPC")

N = 4096
LOCAL = 64
BIG = 1 << 18


def unshare_for_mount():
    """The unshare command that lets this test mount a tmpfs of its own, or None."""
    if not shutil.which("unshare"):
        return None
    for args in (["unshare", "-m"], ["unshare", "-rm"]):
        p = subprocess.run(args + ["sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                           capture_output=True)
        if p.returncode == 0:
            return args
    return None


class CaptureOpenCL(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_capture_app was not built (no OpenCL ICD loader)")

    def setUp(self):
        super().setUp()
        self.caps = os.path.join(self.tmp, "caps")
        self.out = os.path.join(self.tmp, "out")
        os.mkdir(self.out)

    def capture(self, pattern, *flags, mode="basic", app_args=(), caps=None, expect=0,
                timeout=300):
        """kprof trace --capture PATTERN of cl_capture_app MODE: the finished process."""
        trace = os.path.join(self.tmp, "t.kprof")
        p = self.kprof("trace", "--capture", pattern, "--capture-dir", caps or self.caps,
                       *flags, "-o", trace, "--force", "--", APP, mode, self.out, *app_args,
                       timeout=timeout)
        self.assertEqual(p.returncode, expect, p.stderr)
        # The program's own work is whole whatever the capture did.
        with open(os.path.join(self.out, "launches")) as f:
            done = f.read().split()
        self.assertEqual(len(done), {"basic": 8, "binary": 2, "svm": 1, "slowest": 4, "user": 3}[mode], done)
        return p

    def folder(self, name):
        path = os.path.join(self.caps, name)
        with open(os.path.join(path, "capture.json")) as f:
            return path, json.load(f)

    def dumped(self, launch, buf, state):
        with open(os.path.join(self.out, "%s.%s.%s" % (launch, buf, state)), "rb") as f:
            return f.read()

    def state(self, path, manifest, j, which):
        name = manifest["allocs"][j][which]
        self.assertTrue(name, "allocation %d has no %s-state" % (j, which))
        with open(os.path.join(path, name), "rb") as f:
            return f.read()

    def check_states(self, path, m, launch, bufs):
        """Allocation j holds buffer bufs[j] as the program saw it around launch."""
        self.assertEqual(len(m["allocs"]), len(bufs))
        for j, buf in enumerate(bufs):
            for which in ("before", "after"):
                self.assertEqual(self.state(path, m, j, which), self.dumped(launch, buf, which),
                                 "%s: allocation %d (%s) %s" % (launch, j, buf, which))

    def assert_nothing_written(self, caps):
        """No folder and no temporary left in the kernels folder (it may not exist at all)."""
        left = os.listdir(caps) if os.path.isdir(caps) else []
        self.assertEqual(left, [], "the failed capture left %s behind" % left)

    def test_nth_launch(self):
        p = self.capture("scale@2")
        path, m = self.folder("scale@2")
        self.assertIn("captured scale@2", p.stderr)
        self.assertEqual(m["kprof_capture"], 1)
        self.assertEqual(m["api"], "opencl")
        self.assertEqual(m["kernel"], "scale")
        self.assertEqual(m["symbol"], "scale")
        self.assertEqual(m["launch"], 2)
        self.assertEqual(m["selector"], "N")
        self.assertGreater(m["held_ns"], 0)
        self.assertGreater(m["pid"], 0)
        self.assertIn("cl_capture_app basic", m["command"])
        # The launch as the program made it: 4096 work-items in groups of 1024.
        g = m["geometry"]
        self.assertEqual(g["dims"], 1)
        self.assertEqual(g["grid"], [N, 1, 1])
        self.assertEqual(g["tg"], [N // 4, 1, 1])
        self.assertEqual(g["offset"], [0, 0, 0])
        # Its code: the program's source and build options.
        self.assertEqual(m["code"]["kind"], "opencl-source")
        self.assertEqual(m["code"]["build_options"], "-cl-fast-relaxed-math -cl-kernel-arg-info")
        with open(os.path.join(path, m["code"]["file"])) as f:
            source = f.read()
        for k in ("fill", "scale", "group_sum", "twice", "spin"):
            self.assertIn("__kernel void %s(" % k, source)
        # Arguments: two buffers and the second launch's scalar, 2.5f.
        args = m["args"]
        self.assertEqual([a["kind"] for a in args], ["mem", "mem", "value"])
        self.assertEqual([a["index"] for a in args], [0, 1, 2])
        self.assertEqual([a["alloc"] for a in args[:2]], [0, 1])
        self.assertEqual(args[2]["size"], 4)
        self.assertEqual(args[2]["hex"], struct.pack("<f", 2.5).hex())
        self.assertEqual([a["bytes"] for a in m["allocs"]], [N * 4, N * 4])
        # Named as the kernel names its parameters (the program asked for -cl-kernel-arg-info).
        self.assertEqual([a["name"] for a in m["allocs"]], ["in", "out"])
        self.assertEqual([a["arg"] for a in m["allocs"]], [0, 1])
        # The bytes: a (written by fill) and b (written by scale@1, read and written here).
        self.check_states(path, m, "scale@2", ["a", "b"])
        self.assertNotEqual(self.dumped("scale@2", "b", "before"),
                            self.dumped("scale@2", "b", "after"))
        self.assertEqual(m["not_captured"], [])
        with open(os.path.join(path, "not-captured.txt")) as f:
            self.assertEqual(f.read(), "")
        self.assertNotIn("not captured", p.stderr)

    def test_launches_counted_across_kernel_objects(self):
        # scale@3 is made through a second kernel object of the same name, a clone of the first
        # (clCloneKernel) that was given only the scalar: the buffers are the clone's copies.
        self.capture("sc?le@3")
        path, m = self.folder("scale@3")
        self.assertEqual(m["launch"], 3)
        self.assertEqual([a["kind"] for a in m["args"]], ["mem", "mem", "value"])
        self.assertEqual(m["args"][2]["hex"], struct.pack("<f", 3.5).hex())
        self.check_states(path, m, "scale@3", ["a", "b"])

    def test_program_from_binary(self):
        # A program made with clCreateProgramWithBinary has no source: its binary is the code.
        self.capture("scale@2", mode="binary")
        path, m = self.folder("scale@2")
        self.assertEqual(m["code"]["kind"], "opencl-binary")
        self.assertEqual(m["code"]["file"], "program.bin")
        self.assertEqual(m["code"]["build_options"], "-DFROM_BINARY")
        with open(os.path.join(path, "program.bin"), "rb") as a, \
                open(os.path.join(self.out, "program.bin"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertFalse(os.path.exists(os.path.join(path, "kernel.cl")))
        self.assertEqual(m["geometry"]["tg"], [0, 0, 0])
        self.check_states(path, m, "scale@2", ["a", "b"])

    def test_first_launch_local_memory(self):
        p = self.capture("group_*")
        path, m = self.folder("group_sum@1")
        self.assertEqual(m["selector"], "first")
        self.assertEqual(m["launch"], 1)
        self.assertEqual(m["geometry"]["tg"], [LOCAL, 1, 1])
        self.assertEqual(m["geometry"]["dynamic_smem"], LOCAL * 4)
        args = m["args"]
        self.assertEqual([a["kind"] for a in args], ["mem", "mem", "local"])
        self.assertEqual(args[2]["size"], LOCAL * 4)
        self.assertEqual([a["bytes"] for a in m["allocs"]], [N * 4, N // LOCAL * 4])
        self.check_states(path, m, "group_sum@1", ["b", "c"])
        self.assertIn("captured group_sum@1", p.stderr)

    def test_one_buffer_two_arguments(self):
        self.capture("twice")
        path, m = self.folder("twice@1")
        self.assertEqual([(a["kind"], a["alloc"]) for a in m["args"]], [("mem", 0), ("mem", 0)])
        self.check_states(path, m, "twice@1", ["d"])

    def test_null_buffer_and_sub_buffer(self):
        # A NULL buffer argument is 8 zero bytes by value, not __local memory.
        self.capture("maybe_add")
        path, m = self.folder("maybe_add@1")
        self.assertEqual([a["kind"] for a in m["args"]], ["mem", "value"])
        self.assertEqual(m["args"][1]["hex"], "00" * 8)
        self.check_states(path, m, "maybe_add@1", ["d"])
        self.assertEqual(m["not_captured"], [])
        # A sub-buffer is not captured, and says so; the rest is.
        p = self.capture("twice@2")
        path, m = self.folder("twice@2")
        self.assertEqual([a["kind"] for a in m["args"]], ["value", "mem"])
        self.assertEqual(len(m["not_captured"]), 1)
        self.assertEqual("argument 0 (p): a sub-buffer (clCreateSubBuffer)", m["not_captured"][0])
        with open(os.path.join(path, "not-captured.txt")) as f:
            self.assertIn("a sub-buffer", f.read())
        self.assertIn("capture twice@2: not captured: argument 0 (p): a sub-buffer "
                      "(clCreateSubBuffer)\n", p.stderr)
        self.check_states(path, m, "twice@2", ["d"])

    def test_svm_pointer(self):
        # An SVM pointer is passed by value and said not captured; the buffer beside it is.
        probe = subprocess.run([APP, "svm", self.out], capture_output=True, text=True)
        if probe.returncode == 77:
            self.skipTest("the OpenCL device has no SVM")
        p = self.capture("twice", mode="svm")
        path, m = self.folder("twice@1")
        self.assertEqual([a["kind"] for a in m["args"]], ["value", "mem"])
        self.assertEqual(m["args"][0]["size"], 8)
        self.assertEqual(m["not_captured"],
                         ["argument 0 (p): the memory behind an SVM pointer "
                          "(clSetKernelArgSVMPointer)"])
        self.assertIn("not captured: argument 0 (p): the memory behind an SVM pointer", p.stderr)
        self.check_states(path, m, "twice@1", ["d"])

    def test_runtime_chosen_groups(self):
        # fill passes no local size: tg 0 (the replay lets the runtime choose again).
        self.capture("fill")
        path, m = self.folder("fill@1")
        self.assertEqual(m["geometry"]["grid"], [N, 1, 1])
        self.assertEqual(m["geometry"]["tg"], [0, 0, 0])
        self.assertEqual(m["args"][1]["hex"], struct.pack("<I", 7).hex())
        self.check_states(path, m, "fill@1", ["a"])

    def test_no_after_and_max_bytes(self):
        self.capture("scale@2", "--capture-no-after")
        path, m = self.folder("scale@2")
        self.assertEqual(m["after"], 0)
        for j, buf in enumerate("ab"):
            self.assertIsNone(m["allocs"][j]["after"])
            self.assertEqual(self.state(path, m, j, "before"),
                             self.dumped("scale@2", buf, "before"))
        self.assertFalse([f for f in os.listdir(path) if f.endswith(".after")])
        shutil.rmtree(self.caps)
        p = self.capture("group_sum", "--capture-max-bytes", "1000")
        path, m = self.folder("group_sum@1")
        # b (16 KiB) is over the limit, c (256 bytes) is not.
        self.assertIsNone(m["allocs"][0]["before"])
        self.assertIsNone(m["allocs"][0]["after"])
        self.assertEqual(self.state(path, m, 1, "after"), self.dumped("group_sum@1", "c", "after"))
        self.assertEqual(len(m["not_captured"]), 1)
        self.assertIn("--capture-max-bytes", m["not_captured"][0])
        self.assertIn("not captured", p.stderr)
        self.assertIn("--capture-max-bytes", p.stderr)

    def test_slowest(self):
        # spin runs on 64 and on 2^18 work-items in the window, then again after it: the launch
        # captured is the first after the window with the slow one's geometry, launch 4.
        self.capture("spin@slowest", "--capture-window", "1", mode="slowest", app_args=("1",))
        path, m = self.folder("spin@4")
        self.assertEqual(m["selector"], "slowest")
        self.assertEqual(m["launch"], 4)
        self.assertEqual(m["geometry"]["grid"], [BIG, 1, 1])
        s = m["slowest"]
        self.assertEqual(s["window_s"], 1)
        self.assertEqual(s["launches"], 2)
        self.assertEqual(s["slowest_launch"], 2)
        self.assertGreater(s["slowest_ns"], 0)
        self.check_states(path, m, "spin@4", ["x"])

    def test_user_events(self):
        # The program sets its user events only after its enqueues returned: the capture never
        # waits for them for good (the timeout would fail the test), and says why it gave up.
        not_ready = "the launch's inputs were not ready: it waits on an event the program sets later"
        # fill@1 has the unset user event in its wait list: given up at once.
        p = self.capture("fill", mode="user", expect=2, timeout=120)
        self.assertIn("capture of fill@1 failed: " + not_ready, p.stderr)
        self.assertIn("a user event in its wait list", p.stderr)
        self.assert_nothing_written(self.caps)
        # scale@1 has no wait list, but fill@2 before it on the in-order queue waits on an unset
        # user event: the capture gives up after its bounded wait, and the launch goes on.
        p = self.capture("scale", mode="user", expect=2, timeout=120)
        self.assertIn("capture of scale@1 failed: " + not_ready, p.stderr)
        self.assertIn("before it on its queue", p.stderr)
        self.assert_nothing_written(self.caps)
        # @slowest times fill@1 and fill@2 in its window without waiting in the enqueue (a wait
        # there would never end); the run ends inside the window, which the exit line says.
        p = self.capture("fill@slowest", "--capture-window", "60", mode="user", expect=2,
                         timeout=120)
        self.assertIn("capture of fill", p.stderr)
        self.assertIn("60 s window", p.stderr)
        self.assert_nothing_written(self.caps)
        self.assertEqual(self.dumped("scale@1", "b", "after"),
                         b"".join(struct.pack("<f", float((i * 7) % 97) * 1.5)
                                  for i in range(N)))

    def test_existing_folder(self):
        # A capture folder of that name is replaced only with --force; without it the capture
        # fails, the old folder untouched and no temporary left.
        self.capture("scale@2")
        path, first = self.folder("scale@2")
        with open(os.path.join(path, "capture.json"), "rb") as f:
            old = f.read()
        p = self.kprof("trace", "--capture", "scale@2", "--capture-dir", self.caps, "-o",
                       os.path.join(self.tmp, "second.kprof"), "--", APP, "basic", self.out,
                       timeout=300)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("capture of scale@2 failed", p.stderr)
        self.assertIn("--force", p.stderr)
        self.assertEqual(os.listdir(self.caps), ["scale@2"])
        with open(os.path.join(path, "capture.json"), "rb") as f:
            self.assertEqual(f.read(), old)
        self.capture("scale@2")
        _, again = self.folder("scale@2")
        self.assertNotEqual(again["pid"], first["pid"])
        self.assertEqual(os.listdir(self.caps), ["scale@2"])

    def test_never_launched(self):
        # The trace is written and exits 2; the layer says why nothing was captured.
        p = self.capture("nothing_like_it", expect=2)
        self.assertIn("no OpenCL kernel matching 'nothing_like_it' was launched", p.stderr)
        self.assert_nothing_written(self.caps)
        p = self.capture("scale@9", expect=2)
        self.assertIn("'scale' was launched 3 times: there was no launch 9", p.stderr)
        self.assert_nothing_written(self.caps)

    def on_tmpfs(self, pattern, mount, before_program):
        """kprof trace --capture PATTERN with the kernels folder on a tmpfs of its own (mount:
        its options), and `before_program` run in front of the program (after kprof checked the
        folder; $TMPFS names the tmpfs): the finished process; its stdout lists what is left in
        the kernels folder."""
        unshare = unshare_for_mount()
        if not unshare:
            self.skipTest("this machine does not let a test mount a tmpfs (unshare -m / -rm)")
        small = os.path.join(self.tmp, "small")
        os.mkdir(small)
        trace = os.path.join(self.tmp, "t.kprof")
        script = ('export TMPFS="$1" && mount -t tmpfs -o %s tmpfs "$1" && "$2" trace --capture %s '
                  '--capture-dir "$1/kernels" -o "$3" -- sh -c \'%s; exec "$@"\' sh "$4" basic '
                  '"$5"; rc=$?; ls -A "$1/kernels"; exit $rc' % (mount, pattern, before_program))
        p = subprocess.run(unshare + ["sh", "-c", script, "sh", small, kptest.KPROF, trace, APP,
                                      self.out],
                           capture_output=True, text=True, timeout=300, env=self.child_env(),
                           cwd=self.tmp)
        with open(os.path.join(self.out, "launches")) as f:
            self.assertEqual(len(f.read().split()), 8, "the program's own work is not whole")
        return p

    def test_unwritable_folder(self):
        # kprof checks the folder before the program runs ...
        p = self.kprof("trace", "--capture", "scale@2", "--capture-dir",
                       "/proc/kprof-unwritable/kernels", "-o", os.path.join(self.tmp, "t.kprof"),
                       "--", APP, "basic", self.out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("/proc/kprof-unwritable", p.stderr)
        self.assertFalse(os.path.exists("/proc/kprof-unwritable"))
        # ... and a folder that stops being writable after that check (remounted read-only
        # before the program starts) fails the capture alone: one line, nothing written.
        p = self.on_tmpfs("scale@2", "size=1m", 'mount -o remount,ro "$TMPFS"')
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("capture of scale@2 failed", p.stderr)
        self.assertIn("Read-only file system", p.stderr)
        self.assertEqual(p.stdout.split(), [], "the failed capture left files behind")

    def test_folder_fills_up(self):
        # The enospc shim, in the program only: writes into the capture folder fail with ENOSPC
        # past 20000 bytes (the source and the first 16 KiB buffer fit, the second does not).
        if not ENOSPC:
            self.skipTest("the enospc shim was not built")
        shim = 'LD_PRELOAD="$LD_PRELOAD:%s" exec "$@"' % ENOSPC
        p = self.kprof("trace", "--capture", "scale@2", "--capture-dir", self.caps, "-o",
                       os.path.join(self.tmp, "t.kprof"), "--", "sh", "-c", shim, "sh", APP,
                       "basic", self.out, env={"KPROF_TEST_CAPTURE_BYTES": "20000"}, timeout=300)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("capture of scale@2 failed", p.stderr)
        self.assertIn("alloc-1.before: No space left on device", p.stderr)
        self.assert_nothing_written(self.caps)
        with open(os.path.join(self.out, "launches")) as f:
            self.assertEqual(len(f.read().split()), 8, "the program's own work is not whole")

    def test_full_disk(self):
        # The kernels folder on a 32 KiB tmpfs: the 16 KiB buffers do not fit.
        p = self.on_tmpfs("scale@2", "size=32k", "true")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("capture of scale@2 failed", p.stderr)
        self.assertIn("No space left on device", p.stderr)
        self.assertEqual(p.stdout.split(), [], "the failed capture left files behind")


if __name__ == "__main__":
    kptest.main()
