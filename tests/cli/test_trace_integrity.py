"""kprof trace under faults: nothing recorded is lost without being counted, and what a program
completed before it died is kept.

- A scratch folder that fills up (a 1 MiB tmpfs where this machine lets a test mount one, and a
  file-size limit everywhere): every record that could not be written is counted as dropped,
  reported, and warned about at the end.
- An OpenCL program that aborts right after clFinish keeps every kernel it ran; one that aborts
  with kernels still queued has them counted as dropped (recorded + dropped = launched).
- Signals to kprof trace: passed on to the program, which gets a grace period; the trace is made
  of what was recorded, nothing is left behind, the exit code is 128+signal; a second signal
  stops the merge and keeps the records, which `kprof trace --merge` turns into the trace.
- An output kprof cannot write is found before the program runs; a merge that fails (the disk
  is full) keeps the records and says how to finish."""

import glob
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

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
        self.assertRegex(r.stdout, r"(?m)^Note: %d records could not be written" % dropped)
        j = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        self.assertTrue(any("could not be written" in n for n in j["notes"]), j["notes"])

    def test_folder_fills_up(self):
        # The shim makes writes to the record file fail with ENOSPC past 64 KiB, part-way
        # through a batch, as a full disk does.
        total = self.reference()
        out = os.path.join(self.tmp, "limited.kprof")
        # Into the program only (beside kprof's own preload), never into kprof.
        shim = 'LD_PRELOAD="$LD_PRELOAD:%s" exec "$@"' % ENOSPC
        p = self.kprof("trace", "-o", out, "--", "sh", "-c", shim, "sh", APP, "300", timeout=300,
                       env={"KPROF_TEST_KLOG_BYTES": "65536"})
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

    def intercepts(self):
        """Both ways in, and each alone; the layer alone only where the loader has layers."""
        ways = [None, "preload"]
        if kptest.loader_has_layers(ABORT):
            ways.append("layer")
        return ways

    def test_abort_after_finish_keeps_every_kernel(self):
        for intercept in self.intercepts():
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
        for intercept in self.intercepts():
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


# A program that records 3000 kernels (as a collector would, through klog.py), says it is ready
# and then waits to be stopped; with "stubborn" it ignores SIGTERM, SIGINT and SIGHUP.
PROGRAM = r"""
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import klog
if len(sys.argv) > 3 and sys.argv[3] == "stubborn":
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
pid = os.getpid()
t0 = klog.now_ns()
w = klog.Writer(os.path.join(os.environ["KPROF_TRACE_DIR"], "%d-cuda-%d.klog" % (pid, t0)), pid,
                "program", t0)
k = w.string("kern")
w.write(b"".join(klog.rec(klog.KERNEL, name=k, start=t0 + i * 1000, end=t0 + i * 1000 + 500,
                          correlation=i + 1) for i in range(3000)))
w.f.flush()
open(sys.argv[2], "w").write(str(pid))
while True:
    time.sleep(0.05)
"""

# Records FILES x 5000 kernels in as many record files (each under 1 MiB), then exits.
BIG = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import klog
for f in range(int(sys.argv[2])):
    t0 = klog.now_ns()
    w = klog.Writer(os.path.join(os.environ["KPROF_TRACE_DIR"], "%d-cuda-%d.klog" % (f + 1, t0)),
                    f + 1, "part %d" % f, t0)
    k = w.string("kern")
    w.write(b"".join(klog.rec(klog.KERNEL, name=k, start=t0 + i * 1000, end=t0 + i * 1000 + 500,
                              correlation=i + 1) for i in range(5000)))
    w.close(end=t0 + 5000 * 1000)
"""

# Runs a command with every file it writes limited to LIMIT bytes (SIGXFSZ ignored: the writes
# fail instead, as on a full disk).
LIMITED = ("import os, resource, signal, sys\n"
           "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
           "limit = int(sys.argv[1])\n"
           "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
           "os.execvp(sys.argv[2], sys.argv[2:])\n")

HERE = os.path.dirname(os.path.abspath(__file__))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is gone for our purposes
        return f.read().split(")")[-1].split()[0] != "Z"


class Signals(kptest.KprofTestCase):
    needs_opencl = False

    def start(self, *extra, stubborn=False):
        """kprof trace of PROGRAM, started with its records written and the program waiting."""
        self.scratch = os.path.join(self.tmp, "scratch")
        os.makedirs(self.scratch, exist_ok=True)
        self.out = os.path.join(self.tmp, "sig.kprof")
        ready = os.path.join(self.tmp, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        env = dict(os.environ, **{k: v for k, v in self.env.items() if v})
        env["TMPDIR"] = self.scratch
        args = [kptest.KPROF, "trace", "-o", self.out, *extra, "--", sys.executable, "-c",
                PROGRAM, HERE, ready] + (["stubborn"] if stubborn else [])
        # A session of its own, as under a job scheduler: no terminal foreground.
        proc = subprocess.Popen(args, env=env, cwd=self.tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        for _ in range(6000):
            if os.path.exists(ready) and open(ready).read():
                break
            if proc.poll() is not None:
                self.fail("kprof trace ended early: " + proc.stderr.read())
            time.sleep(0.01)
        self.program = int(open(ready).read())
        return proc

    def finish(self, proc):
        out, err = proc.communicate(timeout=120)
        return proc.returncode, err

    def check_clean(self):
        self.assertFalse(alive(self.program), "the program was left running")
        self.assertEqual(glob.glob(self.out + ".tmp.*"), [], "a temporary was left behind")

    def test_sigterm_is_passed_on_and_the_trace_made(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            proc = self.start()
            proc.send_signal(sig)
            code, err = self.finish(proc)
            self.assertEqual(code, 128 + sig, err)
            self.check_clean()
            self.assertEqual(os.listdir(self.scratch), [], "the records' folder was left behind")
            events, kernels, dropped, _, _ = counts(self.out)
            self.assertEqual((kernels, dropped), (3000, 0), err)
            self.assertIn("passed on to the program", err)
            os.unlink(self.out)

    def test_program_that_ignores_it_is_killed_after_the_grace_period(self):
        proc = self.start("--grace", "0.5", stubborn=True)
        proc.send_signal(signal.SIGTERM)
        code, err = self.finish(proc)
        self.assertEqual(code, 128 + signal.SIGTERM, err)
        self.check_clean()
        self.assertIn("the program was killed", err)
        self.assertEqual(counts(self.out)[1], 3000)

    def test_second_signal_stops_and_keeps_the_records(self):
        proc = self.start(stubborn=True)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        code, err = self.finish(proc)
        self.assertEqual(code, 128 + signal.SIGTERM, err)
        self.check_clean()
        self.assertFalse(os.path.exists(self.out))
        kept = glob.glob(os.path.join(self.scratch, "kprof-trace-*"))
        self.assertEqual(len(kept), 1, err)
        self.assertIn("kprof trace --merge %s" % kept[0], err)
        # --merge finishes the job, and removes the folder once the trace is made.
        p = self.kprof("trace", "--merge", kept[0], "-o", self.out, expect=0)
        self.assertIn("3000 events", p.stderr)
        self.assertEqual(counts(self.out)[1], 3000)
        self.assertFalse(os.path.exists(kept[0]))
        db = sqlite3.connect(self.out)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        self.assertIn("program", meta["command"])
        self.assertEqual(int(meta["exit_status"]), 128 + signal.SIGKILL)
        db.close()


class Output(kptest.KprofTestCase):
    needs_opencl = False

    def test_unwritable_output_is_found_before_the_program_runs(self):
        marker = os.path.join(self.tmp, "ran")
        for out in (os.path.join(self.tmp, "no", "such", "folder", "t.kprof"),
                    "/proc/t.kprof"):
            p = self.kprof("trace", "-o", out, "--", "touch", marker)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("cannot write " + out, p.stderr)
            self.assertFalse(os.path.exists(marker), "the program ran before the output was "
                             "found unwritable")
        self.assertEqual(os.listdir(self.tmp), ["home"] if os.path.exists(self.home) else [])

    def test_failed_merge_keeps_the_records_and_merge_finishes(self):
        scratch = os.path.join(self.tmp, "scratch")
        os.mkdir(scratch)
        out = os.path.join(self.tmp, "big.kprof")
        env = {"TMPDIR": scratch}
        # 4 x 5000 kernels make a trace of several MiB: with files limited to 1 MiB the merge
        # fails the way a full disk makes it fail.
        p = subprocess.run([sys.executable, "-c", LIMITED, "1048576", kptest.KPROF, "trace", "-o",
                            out, "--", sys.executable, "-c", BIG, HERE, "4"], cwd=self.tmp,
                           env=dict(os.environ, **{k: v for k, v in self.env.items() if v}, **env),
                           capture_output=True, text=True, timeout=300)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(glob.glob(out + ".tmp.*"), [])
        kept = glob.glob(os.path.join(scratch, "kprof-trace-*"))
        self.assertEqual(len(kept), 1, p.stderr)
        self.assertIn("kprof trace --merge %s" % kept[0], p.stderr)
        self.assertEqual(len(glob.glob(os.path.join(kept[0], "*.klog"))), 4)
        p = self.kprof("trace", "--merge", kept[0], "-o", out, expect=0)
        self.assertIn("20000 events (20000 on the device) from 4 processes, 0 records dropped",
                      p.stderr)
        self.assertFalse(os.path.exists(kept[0]))
        self.assertEqual(counts(out)[1], 20000)

    def test_merge_of_a_folder_that_is_not_one(self):
        p = self.kprof("trace", "--merge", self.tmp, "-o", os.path.join(self.tmp, "x.kprof"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not a folder of kprof trace records", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.kprof")))
        self.assertEqual(glob.glob(os.path.join(self.tmp, "x.kprof.tmp.*")), [])
        p = self.kprof("trace", "--merge", self.tmp, "--", "true")
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    kptest.main()
