"""kprof trace of programs with NVTX ranges and marks but no CUDA (tests/programs/cl_nvtx_app.c):
an OpenCL program (on PoCL in CI), and the same program without OpenCL (no GPU at all). kprof's
NVTX collector, the only one on every machine, records push/pop ranges per thread, start/end
ranges ended on another thread, marks, wide (UTF-8 converted) and registered names in domains,
and ranges opened before the first OpenCL call; a forked child starts fresh; ranges left open
are counted in a note. The checks are exact everywhere."""

import json
import os
import shutil
import sqlite3
import subprocess

import kptest

CL_APP = os.environ.get("KPROF_CL_NVTX_APP")
APP = os.environ.get("KPROF_NVTX_APP")
NO_NVTX = "the nvtx3 headers (NVTX v3) were not found when kprof was built, so the NVTX test " \
          "programs were not built"

WIDE = "gr\u00f6\u00dfe \u2713 \u6d4b\u8bd5 \U0001F600"

# Every range of `cl_nvtx_app full`, in the order they start: (name, thread).
RANGES = [
    ("app", "main"), ("setup", "main"),
    ("iteration", "main"), ("kernel", "main"),
    ("iteration", "main"), ("kernel", "main"),
    ("iteration", "main"), ("kernel", "main"),
    ("async", "main"), ("worker", "worker"),
    (WIDE, "main"), ("ex wide \u00fc", "main"),
    ("kp-domain:registered", "main"), ("inner", "main"),
    ("wide-domain \u00e5:wide registered \u00df", "main"),
]
MARKS = [("checkpoint", "main"), ("mark \u00e9", "main"), ("kp-domain:domain mark", "main")]


def rows(db, kind, process=None):
    """(name, tid, start, end, range_id) of every range (kind 8) or mark (9), by start."""
    sql = ("SELECT s.text, e.tid, e.start_ns, e.end_ns, e.range_id FROM events e "
           "JOIN strings s ON s.id = e.name WHERE e.kind = ?")
    args = [kind]
    if process is not None:
        sql += " AND e.process = ?"
        args.append(process)
    return db.execute(sql + " ORDER BY e.start_ns, e.range_id", args).fetchall()


def inside(inner, outer):
    return outer[2] <= inner[2] and inner[3] <= outer[3]


class NvtxChecks(kptest.KprofTestCase):
    app = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not (CL_APP or APP):
            raise kptest.unittest.SkipTest(NO_NVTX)

    def trace(self, *args, name="nvtx.kprof", env=None, expect=0):
        out = os.path.join(self.tmp, name)
        p = self.kprof("trace", "-o", out, "--", self.app, *args, expect=expect, timeout=300,
                       env=env)
        tids = dict(item.split("=") for item in p.stdout.split())
        return out, p, {"main": int(tids["main_tid"]), "worker": int(tids["worker_tid"])}

    def check_program(self, db, p, tids, process=None):
        """The rows of one `cl_nvtx_app full` run, exactly: names, threads, count, nesting."""
        ranges = rows(db, 8, process)
        marks = rows(db, 9, process)
        self.assertNotIn("cl_nvtx_app: level:", p.stderr)  # push/pop return NVTX's levels
        self.assertEqual([(r[0], r[1]) for r in ranges],
                         [(n, tids[t]) for n, t in RANGES])
        self.assertEqual([(r[0], r[1]) for r in marks], [(n, tids[t]) for n, t in MARKS])
        for r in marks:
            self.assertEqual(r[2], r[3])
        ids = [r[4] for r in ranges + marks]
        self.assertNotIn(None, ids)
        self.assertEqual(len(set(ids)), len(ids))
        by = {}
        for r in ranges:
            by.setdefault(r[0], []).append(r)
        app, setup, async_ = by["app"][0], by["setup"][0], by["async"][0]
        # Nesting by time: everything on the main thread lies inside "app".
        for r in ranges[1:] + marks:
            if r[1] == tids["main"]:
                self.assertTrue(inside(r, app), r)
        checkpoint = marks[0]
        self.assertTrue(setup[3] <= checkpoint[2] <= by["iteration"][0][2])
        for i in range(3):
            it, k = by["iteration"][i], by["kernel"][i]
            self.assertTrue(inside(k, it), (k, it))
            if i:
                self.assertLessEqual(by["iteration"][i - 1][3], it[2])
        # "async" was started on the main thread and ended by the worker, after its own range.
        worker = by["worker"][0]
        self.assertTrue(inside(worker, async_))
        self.assertLessEqual(by["iteration"][2][3], async_[2])
        # The domain's range was popped from under "inner", opened inside it.
        registered, inner = by["kp-domain:registered"][0], by["inner"][0]
        domain_mark = marks[2]
        self.assertTrue(registered[2] <= domain_mark[2] <= inner[2])
        self.assertTrue(registered[3] <= inner[3])
        self.assertGreaterEqual(registered[3], inner[2])
        return by

    def check_notes(self, db, open_ranges=0):
        notes = [t for (t,) in db.execute("SELECT text FROM notes")]
        still_open = [n for n in notes if "still open" in n]
        if open_ranges:
            self.assertEqual(still_open, [
                "%d NVTX ranges were still open when the program ended (pushed or started, "
                "never popped or ended); not recorded" % open_ranges])
        else:
            self.assertEqual(still_open, [])
        # No other note about NVTX: there is one NVTX path, whatever else the machine has.
        self.assertEqual([n for n in notes if "NVTX" in n], still_open)

    def check_report(self, path, by):
        r = json.loads(self.kprof("report", path, "--json", expect=0).stdout)
        self.assertEqual({g["name"]: g["calls"] for g in r["nvtx"]},
                         {name: len(v) for name, v in by.items()})
        text = self.kprof("report", path, expect=0).stdout
        table = text.split("NVTX ranges:")[1]
        for name in by:
            self.assertIn(name, table)


class TraceNvtxOpenCL(NvtxChecks):
    app = CL_APP

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not CL_APP:
            raise kptest.unittest.SkipTest("cl_nvtx_app was not built (no OpenCL ICD loader to "
                                           "link)")

    def test_ranges_and_marks(self):
        path, p, tids = self.trace("full")
        db = sqlite3.connect(path)
        by = self.check_program(db, p, tids)
        self.check_notes(db)
        # "setup" was pushed before the program's first OpenCL call and holds its OpenCL setup;
        # each kernel launch lies inside its "kernel" range.
        calls = db.execute("SELECT s.text, e.start_ns, e.end_ns FROM events e JOIN strings s "
                           "ON s.id = e.name WHERE e.kind = 3 ORDER BY e.start_ns").fetchall()
        setup = by["setup"][0]
        self.assertLess(setup[2], calls[0][1])
        self.assertTrue(any(c[0] == "clBuildProgram" and setup[2] <= c[1] and c[2] <= setup[3]
                            for c in calls))
        launches = [c for c in calls if c[0] == "clEnqueueNDRangeKernel"]
        self.assertEqual(len(launches), 3)
        for launch, kernel in zip(launches, by["kernel"]):
            self.assertTrue(kernel[2] <= launch[1] and launch[2] <= kernel[3])
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind = 4").fetchone()[0],
                         3)
        self.check_report(path, by)
        # The same rows through the sqlite3 shell, as a user reads them (where it is installed).
        if shutil.which("sqlite3"):
            shell = subprocess.run(
                ["sqlite3", path, "SELECT name FROM event_view WHERE kind = 'range' "
                 "ORDER BY start_ns, id"], capture_output=True, text=True, timeout=60)
            self.assertEqual(shell.stdout.splitlines(), [n for n, _ in RANGES], shell.stderr)

    def in_process(self, collect, name):
        """The program under KPROF=1 (libkprof preloaded: it knows nothing of kprof), its
        session recording `collect`: the trace, the process, the threads."""
        library = os.environ.get("KPROF_SHARED_LIBRARY")
        if not library:
            self.skipTest("KPROF_SHARED_LIBRARY not set (run through ctest)")
        preload = [library]
        if os.environ.get("KPROF_SANITIZED") == "1":  # a sanitized libkprof: its runtime first
            cc = os.environ.get("KPROF_CC") or "cc"
            runtime = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                                     text=True).stdout.strip()
            if not os.path.isabs(runtime):
                self.skipTest("the sanitizer's runtime for preloading a sanitized libkprof")
            preload.insert(0, runtime)
        out = os.path.join(self.tmp, name)
        env = dict(os.environ, KPROF="1", KPROF_COLLECT=collect, KPROF_OUTPUT=out,
                   LD_PRELOAD=":".join(preload), TMPDIR=self.tmp)
        for k in ("KPROF_TRACE_DIR", "NVTX_INJECTION64_PATH", "OPENCL_LAYERS"):
            env.pop(k, None)
        p = subprocess.run([self.app, "full"], capture_output=True, text=True, env=env,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kprof: saved ", p.stderr)
        tids = dict(item.split("=") for item in p.stdout.split())
        return out, p, {"main": int(tids["main_tid"]), "worker": int(tids["worker_tid"])}

    def test_in_process_session_records_nvtx(self):
        # KPROF=1 with the OpenCL collector records the NVTX ranges and marks `kprof trace`
        # records, exactly (NVTX comes with the device collectors), in one process with the
        # kernels; KPROF_COLLECT=scopes,nvtx records them alone; the scopes alone do not.
        path, p, tids = self.in_process("scopes,opencl", "inproc.kprof")
        db = sqlite3.connect(path)
        by = self.check_program(db, p, tids)
        # The kernels come through the OpenCL layer, which a loader without layer support (the
        # one CUDA ships) never takes in: there the session has none, and says why; NVTX does
        # not need the loader.
        kernels = db.execute("SELECT COUNT(*) FROM events WHERE kind = 4").fetchone()[0]
        if kptest.loader_has_layers(self.app):
            self.assertEqual(kernels, 3)
        else:
            self.assertEqual(kernels, 0)
            notes = [n for (n,) in db.execute("SELECT text FROM notes")]
            self.assertTrue(any("no layer support" in n for n in notes), notes)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM processes").fetchone()[0], 1)
        self.check_report(path, by)
        traced, _, _ = self.trace("full")
        names = "SELECT name FROM event_view WHERE kind IN ('range', 'mark') ORDER BY start_ns, id"
        self.assertEqual(db.execute(names).fetchall(),
                         sqlite3.connect(traced).execute(names).fetchall())
        path, p, tids = self.in_process("scopes,nvtx", "nvtx-only.kprof")
        db = sqlite3.connect(path)
        self.check_program(db, p, tids)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind = 4").fetchone()[0],
                         0)
        path, p, tids = self.in_process("scopes", "scopes-only.kprof")
        db = sqlite3.connect(path)
        self.assertEqual(rows(db, 8), [])

    def test_fork_child_starts_fresh(self):
        path, p, tids = self.trace("fork")
        db = sqlite3.connect(path)
        procs = db.execute("SELECT id, pid, ppid FROM processes ORDER BY start_ns").fetchall()
        self.assertEqual(len(procs), 2)
        parent, child = procs
        self.assertEqual(child[2], parent[1])
        self.check_program(db, p, tids, process=parent[0])
        # The child pushed at level 0 (its parent's "app" is not its own) and records only
        # what it did, into its own part.
        self.assertEqual([(r[0], r[1]) for r in rows(db, 8, child[0])], [("child", child[1])])
        self.assertEqual([(r[0], r[1]) for r in rows(db, 9, child[0])],
                         [("child mark", child[1])])
        self.check_notes(db)

    def test_open_ranges_counted_at_exit(self):
        path, p, tids = self.trace("open")
        db = sqlite3.connect(path)
        names = [r[0] for r in rows(db, 8)]
        self.assertEqual(names, [n for n, _ in RANGES if n != "app"])  # "never ended" neither
        self.check_notes(db, open_ranges=2)
        self.assertIn("2 NVTX ranges were still open", p.stderr)

    def test_user_injection_is_kept(self):
        # NVTX_INJECTION64_PATH set by the user (another tool) is left alone: here it names
        # nothing, so NVTX records nothing, and the OpenCL work is still traced.
        env = {"NVTX_INJECTION64_PATH": os.path.join(self.tmp, "no-such-tool.so")}
        path, p, tids = self.trace("full", env=env)
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind IN (8, 9)")
                         .fetchone()[0], 0)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind = 4").fetchone()[0],
                         3)


class TraceNvtxWithoutGpu(NvtxChecks):
    app = APP
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest(NO_NVTX)

    def test_program_without_gpu(self):
        ldd = subprocess.run(["ldd", APP], capture_output=True, text=True).stdout
        self.assertNotIn("libOpenCL", ldd)
        self.assertNotIn("libcuda", ldd)
        # Untraced, NVTX has no tool and does nothing.
        alone = subprocess.run([APP], capture_output=True, text=True, timeout=60,
                               env={k: v for k, v in os.environ.items()
                                    if k != "NVTX_INJECTION64_PATH"})
        self.assertEqual(alone.returncode, 0, alone.stderr)
        path, p, tids = self.trace("full")
        db = sqlite3.connect(path)
        by = self.check_program(db, p, tids)
        self.check_notes(db)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM events WHERE kind NOT IN (8, 9)")
                         .fetchone()[0], 0)
        self.check_report(path, by)
        # KPROF=1 asking for OpenCL in a program that makes no OpenCL call: the NVTX ranges
        # (which share the inject library's writer) are kept, and the OpenCL collector still
        # says it recorded nothing.
        path, p, tids = TraceNvtxOpenCL.in_process(self, "scopes,opencl", "inproc.kprof")
        db = sqlite3.connect(path)
        self.check_program(db, p, tids)
        notes = [n for (n,) in db.execute("SELECT text FROM notes")]
        self.assertTrue(any("the OpenCL collector recorded nothing" in n for n in notes), notes)


if __name__ == "__main__":
    kptest.main()
