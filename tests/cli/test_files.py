"""Trace integrity (issue 9, items 6-10): outputs that are inputs, devices, FIFOs, links and
standard output; inputs that are not regular files; a trace that shrinks while it is read;
signals during export and report; output that is valid UTF-8 whatever bytes came in;
timestamps at the extremes of int64; one exit code for every bad input file; error lines that
user text cannot split.

Everything here depends only on what kprof does, never on how fast the machine is: a trace
shrinks and kprof is paused for a signal at points set by its own reads and writes
(tests/programs/io_shim.c, LD_PRELOAD)."""

import codecs
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
SHIM = os.environ.get("KPROF_IO_SHIM")
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

# What kprof writes for bytes that are not UTF-8: \u00XX of the byte in JSON, U+FFFD per byte
# in CSV. Python's decoder splits ill-formed input where kprof does, so these give the
# expected text.
codecs.register_error("kp_json", lambda e: ("".join(chr(b) for b in e.object[e.start:e.end]),
                                            e.end))
codecs.register_error("kp_csv", lambda e: ("\ufffd" * (e.end - e.start), e.end))

BAD_NAMES = [
    b"bad\xff",                        # never UTF-8
    b"cut\xe2\x82",                    # a three-byte sequence cut short
    b"cut2\xe2\x82A",                  # ... followed by ASCII
    b"over\xc0\xaf",                   # overlong '/'
    b"sur\xed\xa0\x80",                # a surrogate (CESU)
    b"big\xf4\x90\x80\x80",            # above U+10FFFF
    b"ctl\x01\x1b[31m\x7f\ttab\nnl",   # control characters
    b"ok\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc2\x9b",  # valid: e-acute, euro, emoji, C1
]


def json_text(raw):
    return raw.decode("utf-8", "kp_json")


def shim_env(extra):
    env = {"LD_PRELOAD": SHIM}
    asan = os.environ.get("ASAN_OPTIONS")
    if asan is not None:  # the shim is preloaded ahead of the sanitizer's runtime
        env["ASAN_OPTIONS"] = asan + ":verify_asan_link_order=0"
    env.update(extra)
    return env


class Integrity(kptest.KprofTestCase):
    needs_opencl = False
    kernels = 200

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shared = tempfile.mkdtemp(prefix="kprof-integrity-")
        cls.trace_path = os.path.join(cls.shared, "t.kprof")
        p = kptest.run(["trace", "-o", cls.trace_path, "--", sys.executable, GEN,
                        "launch-bound", "--kernels", str(cls.kernels), "--seconds", "0.02"])
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.t = os.path.join(self.tmp, "t.kprof")
        shutil.copy(self.trace_path, self.t)

    def raw(self, *args, env=None, timeout=300):
        """kprof with bytes arguments allowed and bytes output, for checks on encodings."""
        e = dict(os.environ)
        e.update({k: v for k, v in self.env.items() if v is not None})
        for k, v in self.env.items():
            if v is None:
                e.pop(k, None)
        if env:
            e.update(env)
        return subprocess.run([kptest.KPROF] + list(args), cwd=self.tmp, env=e,
                              capture_output=True, timeout=timeout)

    def leftovers(self, folder=None):
        folder = folder or self.tmp
        return [f for f in os.listdir(folder) if ".tmp." in f]

    def sha(self, path):
        with open(path, "rb") as f:
            return f.read()

    # ---- item 6: outputs ---------------------------------------------------------------------

    def test_output_that_is_the_input_is_refused(self):
        before = self.sha(self.t)
        hard = os.path.join(self.tmp, "hard.json")
        os.link(self.t, hard)
        link = os.path.join(self.tmp, "link.json")
        os.symlink("t.kprof", link)
        for out in (self.t, hard, link, "./t.kprof"):
            for force in ((), ("--force",)):
                p = self.kprof("export", self.t, "--chrome", out, *force, expect=2)
                self.assertIn("is the input", p.stderr)
        self.assertEqual(self.sha(self.t), before)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(self.leftovers(), [])
        self.kprof("report", self.t, expect=0)

    def test_devices_are_written_in_place_and_links_followed(self):
        # Links inside the test's folder stand for /dev/null, /dev/full and /dev/stdout: the
        # test never risks the machine's own device nodes.
        null = os.path.join(self.tmp, "null.json")
        os.symlink("/dev/null", null)
        self.kprof("export", self.t, "--chrome", null, expect=0)
        self.assertEqual(os.readlink(null), "/dev/null")
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        full = os.path.join(self.tmp, "full.json")
        os.symlink("/dev/full", full)
        p = self.kprof("export", self.t, "--chrome", full, expect=1)
        self.assertIn("cannot write %s: No space left on device" % full, p.stderr)
        self.assertEqual(os.readlink(full), "/dev/full")
        # /dev/stdout is a link to /proc/self/fd/1: standard output, here a pipe.
        out = os.path.join(self.tmp, "stdout.json")
        os.symlink("/proc/self/fd/1", out)
        p = self.kprof("export", self.t, "--chrome", out, expect=0)
        self.assertEqual(len([e for e in json.loads(p.stdout)["traceEvents"]
                              if e.get("cat") == "kernel"]), self.kernels)
        self.assertEqual(os.readlink(out), "/proc/self/fd/1")
        self.assertEqual(self.leftovers(), [])

    def test_dash_is_standard_output(self):
        p = self.kprof("export", self.t, "--chrome", "-", expect=0)
        ev = json.loads(p.stdout)["traceEvents"]
        self.assertEqual(len([e for e in ev if e.get("cat") == "kernel"]), self.kernels)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "-")))

    def test_fifo_is_written_in_place(self):
        fifo = os.path.join(self.tmp, "out.fifo")
        os.mkfifo(fifo)
        got = os.path.join(self.tmp, "got.json")
        with open(got, "wb") as sink:
            reader = subprocess.Popen(["cat", fifo], stdout=sink)
            try:
                self.kprof("export", self.t, "--chrome", fifo, expect=0)
                reader.wait(timeout=120)  # ends once kprof closes the FIFO
            finally:
                if reader.poll() is None:  # kprof never opened the FIFO
                    reader.kill()
                    reader.wait()
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        ev = json.load(open(got))["traceEvents"]
        self.assertEqual(len([e for e in ev if e.get("cat") == "kernel"]), self.kernels)

    def test_existing_output_needs_force(self):
        out = os.path.join(self.tmp, "out.json")
        with open(out, "w") as f:
            f.write("keep me")
        os.chmod(out, 0o640)
        p = self.kprof("export", self.t, "--chrome", out, expect=2)
        self.assertIn("exists; use --force to replace it", p.stderr)
        self.assertEqual(open(out).read(), "keep me")
        self.kprof("export", self.t, "--chrome", out, "--force", expect=0)
        json.load(open(out))
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o640)  # permissions kept
        # A link to an existing file: the target is replaced (with --force), the link stays.
        real = os.path.join(self.tmp, "real.json")
        with open(real, "w") as f:
            f.write("old")
        link = os.path.join(self.tmp, "link.json")
        os.symlink("real.json", link)
        self.kprof("export", self.t, "--chrome", link, expect=2)
        self.kprof("export", self.t, "--chrome", link, "--force", expect=0)
        self.assertTrue(os.path.islink(link))
        json.load(open(real))
        # A dangling link names the file to create.
        dang = os.path.join(self.tmp, "dangling.json")
        os.symlink("sub/new.json", dang)
        os.mkdir(os.path.join(self.tmp, "sub"))
        self.kprof("export", self.t, "--chrome", dang, expect=0)
        self.assertTrue(os.path.islink(dang))
        json.load(open(os.path.join(self.tmp, "sub", "new.json")))
        self.assertEqual(self.leftovers(), [])

    def test_outputs_kprof_cannot_write_are_named_before_the_work(self):
        p = self.kprof("export", self.t, "--chrome", self.tmp, expect=2)
        self.assertIn("is a folder", p.stderr)
        p = self.kprof("export", self.t, "--chrome", os.path.join(self.tmp, "no", "x.json"),
                       expect=1)
        self.assertIn("its folder does not exist", p.stderr)
        self.assertEqual(self.leftovers(), [])

    def test_unwritable_outputs_exit_1_in_every_writer(self):
        # One rule (issue 23): an output kprof cannot write is exit 1 whatever the cause — its
        # folder missing, a path through a regular file, a file system that makes no files
        # (/proc: root cannot write there either, unlike a chmod'd folder), a folder without
        # write permission (not as root) — named before the work; a refused one stays exit 2.
        notes = os.path.join(self.tmp, "notes-store.db")
        self.kprof("notes", "add", "one", env={"KPROF_STORE": notes}, expect=0)
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        lab = ("demo", "--grid", "4096", "--buffers", "f32:4096,f32:4096,f32:4096,u32=4096")
        # The lab's plots are checked before the device is touched: with no OpenCL runtime to
        # load, reaching it would exit 3.
        env = {"KPROF_STORE": notes, "KPROF_OPENCL_LIBRARY": "/nonexistent.so"}
        places = [("its folder does not exist", os.path.join(self.tmp, "no", "x")),
                  ("a part of its folder is a file", os.path.join(self.t, "x")),
                  ("cannot write /proc/", "/proc/kprof-unwritable-x")]
        if os.geteuid() != 0:
            ro = os.path.join(self.tmp, "ro")
            os.mkdir(ro)
            os.chmod(ro, 0o555)
            places.append(("Permission denied", os.path.join(ro, "x")))
        for says, base in places:
            writers = [("export", self.t, "-o", base + ".json"),
                       ("export", self.t, "--chrome", base + ".json"),
                       ("export", self.t, "--perfetto", base + ".pftrace"),
                       ("export", self.t, "--hatchet", base + ".hatchet.json"),
                       ("export", self.t, "--csv", base + ".csv"),
                       ("export", self.t, "--json", base + ".json"),
                       ("merge", self.t, self.t, "-o", base + ".kprof"),
                       ("trace", "-o", base + ".kprof", "--", "true"),
                       ("notes", "export", base + ".json"),
                       ("sweep", *lab, "--tg-list", "32,64", "--plot", base + ".svg"),
                       ("bench", *lab, "--tg", "64", "--axis", "N=1,2", "--plot",
                        base + ".svg"),
                       ("run", *lab, "--tg", "64", "--trace", base + ".kprof"),
                       ("bench", *lab, "--tg", "64", "--trace", base + ".kprof")]
            for args in writers:
                p = self.kprof(*args, env=env, expect=1)
                self.assertIn("cannot write " + base[:30], p.stderr, args)
                self.assertIn(says, p.stderr, args)
                self.assertEqual(p.stdout, "", args)
        self.assertEqual(self.leftovers(), [])

    # ---- item 7: inputs that are not regular files; a trace that shrinks -------------------

    def test_fifo_and_folder_inputs_are_refused_without_blocking(self):
        fifo = os.path.join(self.tmp, "f.kprof")
        os.mkfifo(fifo)
        out = os.path.join(self.tmp, "o.json")
        for args in (("report", fifo), ("report", fifo, "--trace"), ("report", fifo, "--json"),
                     ("report", fifo, "--csv"), ("export", fifo, "--chrome", out)):
            p = self.kprof(*args, expect=2, timeout=60)
            self.assertIn("not a regular file (a FIFO)", p.stderr)
            p = self.kprof(args[0], self.tmp, *args[2:], expect=2, timeout=60)
            self.assertIn("not a regular file (a folder)", p.stderr)
        self.assertFalse(os.path.exists(out))

    def shrunk_trace(self):
        """A bigger trace (the reads must outlast the shim's trigger), copied for one run."""
        path = os.path.join(self.tmp, "s.kprof")
        self.kprof("trace", "-o", path, "--", sys.executable, GEN, "launch-bound", "--kernels",
                   "10000", "--seconds", "0.02", expect=0)
        return path

    def test_trace_that_shrinks_while_read(self):
        # Cut in the middle of the reading: a clear error, exit 2, nothing left behind.
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        src = self.shrunk_trace()
        path = os.path.join(self.tmp, "shrinking.kprof")
        out = os.path.join(self.tmp, "out.json")
        for args in (("report", path), ("report", path, "--json"),
                     ("export", path, "--chrome", out)):
            shutil.copy(src, path)
            p = self.kprof(*args, env=shim_env({"KPROF_SHIM_FILE": path,
                                                "KPROF_SHIM_ACTION": "shrink",
                                                "KPROF_SHIM_AT": "read:60"}), expect=2)
            self.assertIn("is damaged or truncated", p.stderr)
            self.assertLess(os.path.getsize(path), os.path.getsize(src))  # it did shrink
            self.assertFalse(os.path.exists(out))
            self.assertEqual(self.leftovers(), [])

    def test_trace_that_shrinks_while_exported(self):
        # Cut while the export writes (a reader that maps the file then faults with SIGBUS):
        # never a signal; either the pages kprof already holds make a whole export, or the
        # trace is reported damaged; no temporary either way.
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        src = self.shrunk_trace()
        path = os.path.join(self.tmp, "shrinking.kprof")
        out = os.path.join(self.tmp, "out.json")
        shutil.copy(src, path)
        p = self.kprof("export", path, "--chrome", out,
                       env=shim_env({"KPROF_SHIM_FILE": path, "KPROF_SHIM_ACTION": "shrink",
                                     "KPROF_SHIM_AT": "write"}))
        self.assertLess(os.path.getsize(path), os.path.getsize(src))
        self.assertIn(p.returncode, (0, 2), p.stderr)
        if p.returncode == 0:
            self.assertEqual(len([e for e in json.load(open(out))["traceEvents"]
                                  if e.get("cat") == "kernel"]), 10000)
        else:
            self.assertIn("is damaged or truncated", p.stderr)
            self.assertFalse(os.path.exists(out))
        self.assertEqual(self.leftovers(), [])

    def signalled(self, args, at, sig):
        """Run kprof paused by the shim at `at`, send sig once it is there; the result."""
        ready = os.path.join(self.tmp, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        e = dict(os.environ)
        e.update({k: v for k, v in self.env.items() if v is not None})
        e.update(shim_env({"KPROF_SHIM_FILE": self.t, "KPROF_SHIM_ACTION": "pause",
                           "KPROF_SHIM_AT": at, "KPROF_SHIM_READY": ready}))
        proc = subprocess.Popen([kptest.KPROF] + list(args), cwd=self.tmp, env=e,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            # Wait for the shim's signal that kprof is inside its work (or for kprof to end,
            # which the assertions below then report).
            while not os.path.exists(ready) and proc.poll() is None:
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(sig)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return proc.returncode, proc.stderr.read().decode(errors="replace")

    def test_signal_during_export_leaves_no_temporary(self):
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        self.t = self.shrunk_trace()  # large enough to write 64 KiB at once
        out = os.path.join(self.tmp, "out.json")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            rc, err = self.signalled(("export", self.t, "--chrome", out), "write", sig)
            self.assertEqual(rc, 128 + sig, err)
            self.assertFalse(os.path.exists(out))
            self.assertEqual(self.leftovers(), [])

    def test_signal_during_report(self):
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        self.t = self.shrunk_trace()  # far more than 20 reads, whatever SQLite's version
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            rc, err = self.signalled(("report", self.t), "read:20", sig)
            self.assertEqual(rc, 128 + sig, err)
            self.assertEqual(self.leftovers(), [])

    # ---- item 8: valid UTF-8 whatever came in -------------------------------------------------

    def odd_trace(self):
        """The trace with names, a command and a process command that are not all UTF-8."""
        db = sqlite3.connect(self.t)
        db.text_factory = bytes
        ids = [r[0] for r in db.execute("SELECT id FROM strings ORDER BY id")]
        used = [r[0] for r in db.execute("SELECT DISTINCT name FROM events WHERE name IS NOT "
                                         "NULL ORDER BY name")]
        self.assertGreaterEqual(len(used), 3)
        # One odd name per event name used: each event keeps its name id.
        names = {}
        for i, sid in enumerate(used):
            names[sid] = BAD_NAMES[i % len(BAD_NAMES)] + b"#%d" % i
            db.execute("UPDATE strings SET text = CAST(? AS TEXT) WHERE id = ?",
                       (names[sid], sid))
        # The rest of the odd names as extra kernels, so every one of them is written.
        start = db.execute("SELECT MIN(start_ns) FROM events").fetchone()[0]
        for i, raw in enumerate(BAD_NAMES):
            sid = max(ids) + 1 + i
            db.execute("INSERT INTO strings (id, text) VALUES (?, CAST(? AS TEXT))", (sid, raw))
            db.execute("INSERT INTO events (kind, process, pid, tid, name, start_ns, end_ns, "
                       "device, stream) VALUES (4, 1, 1, 1, ?, ?, ?, 0, 0)",
                       (sid, start + i, start + i + 10))
            names[sid] = raw
        db.execute("UPDATE meta SET value = CAST(? AS TEXT) WHERE key = 'command'",
                   (b"prog \xff\xfe arg\x1b",))
        db.execute("UPDATE processes SET command = CAST(? AS TEXT)", (b"proc\xc0\xaf",))
        db.commit()
        db.close()
        return set(names.values())

    def test_json_and_csv_are_utf8(self):
        names = self.odd_trace()
        p = self.raw("report", self.t, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout.decode("utf-8"))  # strict: fails on any byte that is not UTF-8
        self.assertEqual(r["command"], "prog \u00ff\u00fe arg\x1b")
        got = {g["name"] for t in ("host", "device", "nvtx") for g in r[t]}
        want = {json_text(n) for n in names}
        self.assertTrue(want - got <= {json_text(n) for n in names if b"GetLastError" in n},
                        (want - got, got))
        for n in BAD_NAMES:
            self.assertIn(json_text(n), got)
        p = self.raw("report", self.t, "--raw", "--csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        csv = p.stdout.decode("utf-8")
        for n in BAD_NAMES:
            text = n.decode("utf-8", "kp_csv")
            self.assertIn(text.replace('"', '""'), csv)
        out = os.path.join(self.tmp, "c.json")
        p = self.raw("export", self.t, "--chrome", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
        got = {e.get("name") for e in doc["traceEvents"] if e["ph"] != "M"}
        for n in BAD_NAMES:
            self.assertIn(json_text(n), got)
        procs = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
        self.assertTrue(any(n.endswith("proc\u00c0\u00af") for n in procs), procs)
        # The text report is for people, not checked for encoding here; it must still run.
        self.assertEqual(self.raw("report", self.t, "--trace").returncode, 0)

    def test_paths_and_commands_that_are_not_utf8(self):
        path = os.path.join(self.tmp.encode(), b"u\xff.kprof")
        p = self.raw("trace", "-o", path, "--", "true", b"\xff")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.raw("report", path, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout.decode("utf-8"))
        self.assertEqual(r["command"], "true \u00ff")
        self.assertEqual(r["trace"], json_text(path))
        out = os.path.join(self.tmp.encode(), b"o\xff.json")
        p = self.raw("export", path, "--chrome", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            json.loads(f.read().decode("utf-8"))

    # ---- item 9: timestamps at the extremes ---------------------------------------------------

    def test_extreme_timestamps(self):
        db = sqlite3.connect(self.t)
        k = db.execute("SELECT MIN(id) FROM events WHERE kind = 4").fetchone()[0]
        a = db.execute("SELECT MIN(id) FROM events WHERE kind = 3").fetchone()[0]
        db.execute("UPDATE events SET start_ns = ?, end_ns = ? WHERE id = ?",
                   (INT64_MIN, INT64_MAX, k))
        db.execute("UPDATE events SET start_ns = ?, end_ns = ?, static_smem = ?, "
                   "dynamic_smem = ? WHERE id = ?",
                   (INT64_MAX, INT64_MIN, INT64_MAX, INT64_MAX, a))
        db.execute("UPDATE events SET static_smem = ?, dynamic_smem = ? WHERE id = ?",
                   (INT64_MAX, INT64_MAX, k))
        db.execute("UPDATE meta SET value = ? WHERE key = 'end_ns'", (str(INT64_MAX),))
        db.commit()
        db.close()
        r = json.loads(self.kprof("report", self.t, "--json", expect=0).stdout)
        kernel = [g for g in r["device"] if g["name"] == "small(float*, int)"][0]
        self.assertEqual(kernel["max_s"], INT64_MAX / 1e9)  # saturated, not wrapped to -1 ns
        self.assertGreater(r["wall_s"], 1e9)
        # The kernel spans the whole wall, to which the timeline clips it: busy is the wall.
        self.assertAlmostEqual(r["gpu_busy_s"], r["wall_s"], delta=1e-6 * r["wall_s"])
        for extra in ((), ("--trace",), ("--csv",), ("--raw",)):
            self.kprof("report", self.t, *extra, expect=0)
        out = os.path.join(self.tmp, "x.json")
        self.kprof("export", self.t, "--chrome", out, expect=0)
        ev = json.load(open(out))["traceEvents"]
        big = [e for e in ev if e.get("cat") == "kernel" and e["dur"] > 1e15]
        self.assertEqual(len(big), 1)
        self.assertEqual(big[0]["dur"], INT64_MAX / 1000)
        self.assertEqual(big[0]["ts"], INT64_MIN / 1000)
        self.assertEqual(big[0]["args"]["shared_bytes"], INT64_MAX)
        back = [e for e in ev if e.get("cat") == "api" and e["dur"] < 0]
        self.assertEqual([e["dur"] for e in back], [INT64_MIN / 1000])

    def test_string_id_at_the_end_of_the_range(self):
        # Tables of names are indexed by string id: MAX(id) + 1 must not overflow, nor ask for
        # an impossible allocation.
        db = sqlite3.connect(self.t)
        db.execute("INSERT INTO strings (id, text) VALUES (?, 'last')", (INT64_MAX,))
        db.execute("UPDATE events SET name = ? WHERE id = 1", (INT64_MAX,))
        db.commit()
        db.close()
        r = json.loads(self.kprof("report", self.t, "--json", expect=0).stdout)
        self.assertEqual(r["events"], 3 * self.kernels + 1)
        self.kprof("export", self.t, "--chrome", os.path.join(self.tmp, "x.json"), expect=0)

    # ---- item 10: one exit code for bad input; one-line errors -----------------------------

    def test_every_bad_input_file_exits_2(self):
        junk = self.write("junk.kprof", "this is not a database at all " * 100)
        other = os.path.join(self.tmp, "other.db")
        db = sqlite3.connect(other)
        db.execute("CREATE TABLE t (x)")
        db.commit()
        db.close()
        newer = os.path.join(self.tmp, "newer.kprof")
        shutil.copy(self.t, newer)
        db = sqlite3.connect(newer)
        db.execute("PRAGMA user_version = 99")
        db.commit()
        db.close()
        cut = os.path.join(self.tmp, "cut.kprof")
        with open(self.t, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:os.path.getsize(self.t) // 2])
        fifo = os.path.join(self.tmp, "fifo.kprof")
        os.mkfifo(fifo)
        cases = ((junk, "is not a kprof trace"), (other, "an SQLite database of something else"),
                 (newer, "format 99"), (cut, "damaged or truncated"),
                 (os.path.join(self.tmp, "missing.kprof"), "no such file"),
                 (self.tmp, "a folder"), (fifo, "a FIFO"))
        out = os.path.join(self.tmp, "o.json")
        for path, text in cases:
            for args in (("report", path), ("report", path, "--json"),
                         ("export", path, "--chrome", out)):
                p = self.kprof(*args, expect=2, timeout=60)
                self.assertIn(text, p.stderr, args)
        self.assertFalse(os.path.exists(out))

    def test_user_text_cannot_split_an_error_line(self):
        p = self.raw("report", b"bad\nname\x1b[31m\xff.kprof")
        self.assertEqual(p.returncode, 2)
        err = p.stderr.decode("utf-8")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("bad\\nname\\x1b[31m\\xff.kprof: no such file", err)
        p = self.raw("export", self.t, "--chrome", b"no\nsuch/x.json")
        self.assertEqual(p.returncode, 1)  # an output that cannot be written
        self.assertEqual(p.stderr.decode("utf-8").count("\n"), 1, p.stderr)
        self.assertIn(b"no\\nsuch/x.json", p.stderr)
        # Usage errors: the option value escaped on the error line; the hint line follows.
        for args, text in (((b"report", b"--bo\ngus"), b"unknown option '--bo\\ngus'"),
                           ((b"run", b"k.cl", b"--buffers", b"f32:1", b"--grid", b"1\r\n2"),
                            b"--grid '1\\r\\n2'")):
            p = self.raw(*args)
            self.assertEqual(p.returncode, 2)
            first, hint = p.stderr.split(b"\n")[:2]
            self.assertIn(text, first)
            self.assertTrue(hint.startswith(b"(kprof "), p.stderr)


class LabOutputs(kptest.KprofTestCase):
    """The lab's outputs (run.json, sweep.json, --plot) follow the same rules; PoCL runs them."""

    SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"

    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        self.dir = os.path.join(self.home, "kernels", "demo")

    def test_kernel_folder_files_follow_links(self):
        elsewhere = os.path.join(self.tmp, "elsewhere.json")
        os.symlink(elsewhere, os.path.join(self.dir, "run.json"))
        self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", self.SPEC,
                      "--iters", "2")
        self.assertTrue(os.path.islink(os.path.join(self.dir, "run.json")))
        self.assertEqual(json.load(open(elsewhere))["entry"], "demo_add")
        # Twice: kprof's own file is replaced each run without --force.
        self.run_json("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", self.SPEC,
                      "--iters", "2")
        self.assertTrue(os.path.islink(os.path.join(self.dir, "run.json")))
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp." in f], [])

    def test_plot_needs_force_and_is_checked_first(self):
        plot = os.path.join(self.tmp, "p.svg")
        args = ("sweep", "demo", "--grid", "4096", "--tg-list", "32,64", "--buffers", self.SPEC,
                "--iters", "2", "--plot", plot)
        self.kprof(*args, expect=0)
        self.assertIn("<svg", open(plot).read())
        with open(plot, "w") as f:
            f.write("mine")
        p = self.kprof(*args, expect=2)
        self.assertIn("exists; use --force to replace it", p.stderr)
        self.assertNotIn("best", p.stdout)  # refused before the sweep ran
        self.assertEqual(open(plot).read(), "mine")
        self.kprof(*args, "--force", expect=0)
        self.assertIn("<svg", open(plot).read())
        null = os.path.join(self.tmp, "null.svg")
        os.symlink("/dev/null", null)
        self.kprof(*args[:-1], null, expect=0)
        self.assertEqual(os.readlink(null), "/dev/null")
        self.assertEqual([f for f in os.listdir(self.tmp) if ".tmp." in f], [])

    def test_line_breaks_kprof_means_are_kept(self):
        # Arguments are escaped, not the messages kprof lays out over several lines.
        spec = ("--buffers", self.SPEC)
        p = self.kprof("run", "demo", "--entry", "no\npe", *spec, expect=2)
        lines = p.stderr.splitlines()
        self.assertTrue(lines[0].endswith("has no kernel 'no\\npe'; its kernels:"), p.stderr)
        self.assertTrue(lines[1].startswith("  demo_add("), p.stderr)
        p = self.kprof("sweep", "demo", "--grid", "4096", "--tg-list", "3,5000", *spec, expect=2)
        self.assertEqual(len(p.stderr.splitlines()), 3, p.stderr)
        p = self.kprof("run", "demo", *spec, env={"KPROF_OPENCL_LIBRARY": "/no/such\nlib.so"},
                       expect=3)
        lines = p.stderr.splitlines()
        self.assertEqual(lines[0], "kprof: error: no device to run on:", p.stderr)
        self.assertTrue(lines[1].startswith("  opencl: /no/such\\nlib.so"), p.stderr)

    def test_run_json_with_a_path_that_is_not_utf8(self):
        src = os.path.join(self.tmp.encode(), b"k\xff.cl")
        with open(os.path.join(self.dir, "kernel.cl"), "rb") as f, open(src, "wb") as g:
            g.write(f.read())
        e = dict(os.environ)
        e.update({k: v for k, v in self.env.items() if v is not None})
        p = subprocess.run([kptest.KPROF, "run", src, "--grid", "4096", "--tg", "64",
                            "--buffers", self.SPEC, "--iters", "2", "--json"], env=e,
                           cwd=self.tmp, capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout.decode("utf-8"))
        self.assertEqual(r["source"], json_text(src))


if __name__ == "__main__":
    kptest.main()
