"""kprof trace under faults: nothing recorded is lost without being counted, and what a program
completed before it died is kept.

- A scratch folder that fills up (a 1 MiB tmpfs where this machine lets a test mount one, and a
  file-size limit everywhere): every record that could not be written is counted as dropped,
  reported, and warned about at the end.
- An OpenCL program that aborts right after clFinish keeps every kernel it ran; one that aborts
  with kernels still queued has them counted as dropped (recorded + dropped = launched)."""

import os
import shutil
import signal
import sqlite3
import subprocess

import kptest

APP = os.environ.get("KPROF_CL_APP")
ABORT = os.environ.get("KPROF_CL_ABORT")

ENOSPC = os.environ.get("KPROF_ENOSPC")


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


def counts(path):
    db = sqlite3.connect(path)
    events = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    kernels = db.execute("SELECT COUNT(*) FROM events WHERE kind = 4").fetchone()[0]
    dropped = db.execute("SELECT TOTAL(dropped) FROM processes").fetchone()[0]
    notes = [t for (t,) in db.execute("SELECT text FROM notes")]
    clean = db.execute("SELECT MIN(clean_exit) FROM processes").fetchone()[0]
    db.close()
    return events, kernels, int(dropped), notes, clean


class FullFolder(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_app was not built (no OpenCL ICD loader to link)")

    def reference(self):
        out = os.path.join(self.tmp, "all.kprof")
        p = self.kprof("trace", "-o", out, "--", APP, "300", expect=0, timeout=300)
        self.assertIn("0 records dropped", p.stderr)
        events, _, dropped, _, _ = counts(out)
        self.assertEqual(dropped, 0)
        return events

    def check_loss(self, path, p, total):
        events, _, dropped, notes, clean = counts(path)
        self.assertGreater(dropped, 0, "the folder filled up, yet nothing was counted as lost")
        self.assertGreater(events, 0)
        # Every record is either in the trace or counted: nothing silently lost.
        self.assertEqual(events + dropped, total)
        self.assertIn("could not be written", p.stderr)
        self.assertIn("%d records dropped" % dropped, p.stderr)
        self.assertTrue(any("could not be written" in n for n in notes), notes)
        # The program ended normally: the trace must not call it a crash.
        self.assertEqual(clean, 1)
        self.assertNotIn("crashed", p.stderr)
        r = self.kprof("report", path, expect=0)
        self.assertIn("%d records dropped" % dropped, r.stdout)

    def test_folder_fills_up(self):
        # The shim makes writes to the record file fail with ENOSPC past 64 KiB, part-way
        # through a batch, as a full disk does.
        total = self.reference()
        out = os.path.join(self.tmp, "limited.kprof")
        p = self.kprof("trace", "-o", out, "--", APP, "300", timeout=300,
                       env={"LD_PRELOAD": ENOSPC, "KPROF_TEST_KLOG_BYTES": "65536"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_loss(out, p, total)
        self.assertIn("No space left on device", p.stderr)

    def test_full_tmpfs(self):
        unshare = unshare_for_mount()
        if not unshare:
            self.skipTest("this machine does not let a test mount a tmpfs (unshare -m / -rm)")
        total = self.reference()
        small = os.path.join(self.tmp, "small")
        os.mkdir(small)
        out = os.path.join(self.tmp, "tmpfs.kprof")
        script = ('mount -t tmpfs -o size=256k tmpfs "$1" && TMPDIR="$1" "$2" trace -o "$3" -- '
                  '"$4" 300')
        p = subprocess.run(unshare + ["sh", "-c", script, "sh", small, kptest.KPROF, out,
                            APP], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, **{k: v for k, v in self.env.items() if v}))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_loss(out, p, total)


class Abort(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not ABORT:
            raise kptest.unittest.SkipTest("cl_abort was not built (no OpenCL ICD loader to link)")

    def trace(self, mode, intercept=None):
        out = os.path.join(self.tmp, "abort-%s-%s.kprof" % (mode, intercept))
        env = {"KPROF_OPENCL_INTERCEPT": intercept}
        p = self.kprof("trace", "-o", out, "--", ABORT, "50", mode, env=env, timeout=300)
        self.assertEqual(p.returncode, 128 + signal.SIGABRT, p.stderr)
        self.assertIn("killed by signal %d" % signal.SIGABRT, p.stderr)
        return out, p

    def test_abort_after_finish_keeps_every_kernel(self):
        for intercept in (None, "layer", "preload"):
            out, p = self.trace("after-finish", intercept)
            events, kernels, dropped, _, _ = counts(out)
            self.assertEqual((kernels, dropped), (50, 0), (intercept, p.stderr))
            db = sqlite3.connect(out)
            names = {n for (n,) in db.execute(
                "SELECT s.text FROM events e JOIN strings s ON s.id = e.name")}
            db.close()
            for call in ("clBuildProgram", "clFinish", "clEnqueueReadBuffer", "[OpenCL read]"):
                self.assertIn(call, names, intercept)

    def test_abort_with_work_pending_counts_it(self):
        for intercept in (None, "layer", "preload"):
            out, p = self.trace("pending", intercept)
            events, kernels, dropped, _, _ = counts(out)
            # Each launched kernel is in the trace or counted as dropped, never neither.
            self.assertEqual(kernels + dropped, 50, (intercept, p.stderr))
            db = sqlite3.connect(out)
            launches = db.execute(
                "SELECT COUNT(*) FROM events e JOIN strings s ON s.id = e.name "
                "WHERE s.text = 'clEnqueueNDRangeKernel'").fetchone()[0]
            db.close()
            self.assertEqual(launches, 50, intercept)


if __name__ == "__main__":
    kptest.main()
