"""kprof export FILE -o OUT: the format follows OUT's name (.json Chrome, .pftrace /
.perfetto-trace / .pb Perfetto, .csv the call tree's CSV, .hatchet.json / .hatchet Hatchet, case
aside); a name that says none gets Chrome JSON, or Perfetto when the trace holds more events than
a browser's JSON loader takes (KPROF_CHROME_MAX_EVENTS, default 2000000), and --chrome on such a
trace still writes JSON but warns, naming --perfetto. Each output is compared byte for byte with
what the explicit option writes for the same trace (a synthetic program of gen_trace.py whose
event count is known: 100 launch calls, 100 polls, 100 kernels and one NVTX range)."""

import json
import os
import shutil
import sqlite3
import sys
import tempfile

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
KERNELS = 100
EVENTS = 3 * KERNELS + 1


class ExportDefault(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # One trace for every test (made once: each test copies nothing, only reads it).
        cls.shared = tempfile.mkdtemp(prefix="kprof-test-export-default-")
        cls.trace = os.path.join(cls.shared, "t.kprof")
        cls.shared_env = {"KPROF_HOME": os.path.join(cls.shared, "home"),
                          "KPROF_CACHE_DIR": os.path.join(cls.shared, "cache"),
                          "KPROF_STORE": os.path.join(cls.shared, "store.db"),
                          "KPROF_CHROME_MAX_EVENTS": None}
        p = kptest.run(["trace", "-o", cls.trace, "--", sys.executable, GEN, "launch-bound",
                        "--kernels", str(KERNELS), "--seconds", "0.01"], env=cls.shared_env)
        if p.returncode != 0:
            raise AssertionError("kprof trace failed:\n" + p.stderr)
        # What each explicit option writes: the reference the -o outputs must equal.
        cls.reference = {}
        for option, name in (("--chrome", "ref.json"), ("--perfetto", "ref.pftrace"),
                             ("--csv", "ref.csv"), ("--hatchet", "ref.hatchet")):
            out = os.path.join(cls.shared, name)
            p = kptest.run(["export", cls.trace, option, out], env=cls.shared_env)
            if p.returncode != 0:
                raise AssertionError("kprof export %s failed:\n%s" % (option, p.stderr))
            with open(out, "rb") as f:
                cls.reference[option] = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.env["KPROF_CHROME_MAX_EVENTS"] = None  # the default unless a test sets it

    def export(self, *args, env=None, expect=0):
        return self.kprof("export", self.trace, *args, env=env, expect=expect)

    def content(self, name):
        with open(os.path.join(self.tmp, name), "rb") as f:
            return f.read()

    def test_reference_formats_differ(self):
        # The comparisons below tell the formats apart only if their outputs differ.
        self.assertEqual(self.trace_events(), EVENTS)
        ref = self.reference
        self.assertEqual(len(set(ref.values())), 4)
        self.assertIn("traceEvents", json.loads(ref["--chrome"]))
        self.assertFalse(ref["--perfetto"].startswith(b"{"))
        self.assertTrue(ref["--csv"].startswith(b"id,parent,"))
        self.assertIsInstance(json.loads(ref["--hatchet"]), list)

    def trace_events(self):
        db = sqlite3.connect(self.trace)
        try:
            return db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        finally:
            db.close()

    def test_format_from_the_name(self):
        for name, option in (("a.json", "--chrome"), ("b.JSON", "--chrome"),
                             ("c.pftrace", "--perfetto"), ("d.perfetto-trace", "--perfetto"),
                             ("e.pb", "--perfetto"), ("f.csv", "--csv"),
                             ("g.hatchet.json", "--hatchet"), ("h.hatchet", "--hatchet"),
                             ("i.Hatchet.Json", "--hatchet")):
            p = self.export("-o", name)
            self.assertEqual(self.content(name), self.reference[option], name)
            # A name that says its format needs no note, and a small trace no warning.
            self.assertEqual(p.stderr, "", name)
        p = self.export("--output", "long.pftrace")
        self.assertEqual(self.content("long.pftrace"), self.reference["--perfetto"])

    def test_no_extension_small_trace_is_chrome(self):
        for name in ("out", "out.txt", "dir.d/out", ".json"):
            if "/" in name:
                os.makedirs(os.path.join(self.tmp, os.path.dirname(name)))
            p = self.export("-o", name)
            self.assertEqual(self.content(name), self.reference["--chrome"], name)
            self.assertIn("kprof: note: %s names no format" % name, p.stderr)
            self.assertIn("Chrome JSON (%d events" % EVENTS, p.stderr)
        # At the threshold exactly it is still Chrome: only more events than it is too many.
        p = self.export("-o", "edge", env={"KPROF_CHROME_MAX_EVENTS": str(EVENTS)})
        self.assertEqual(self.content("edge"), self.reference["--chrome"])

    def test_no_extension_large_trace_is_perfetto(self):
        p = self.export("-o", "big", env={"KPROF_CHROME_MAX_EVENTS": str(EVENTS - 1)})
        self.assertEqual(self.content("big"), self.reference["--perfetto"])
        self.assertIn("kprof: note: big names no format", p.stderr)
        self.assertIn("writing a Perfetto trace, as the trace's %d events are more than a "
                      "browser's JSON loader takes (over %d" % (EVENTS, EVENTS - 1), p.stderr)
        # ... and an extension still wins over the count.
        p = self.export("-o", "big.json", env={"KPROF_CHROME_MAX_EVENTS": "0"})
        self.assertEqual(self.content("big.json"), self.reference["--chrome"])

    def test_standard_output(self):
        p = self.export("-o", "-")
        self.assertEqual(p.stdout.encode(), self.reference["--chrome"])
        self.assertIn("kprof: note: - names no format", p.stderr)

    def test_chrome_on_a_large_trace_warns(self):
        p = self.export("--chrome", "w.json", env={"KPROF_CHROME_MAX_EVENTS": "10"})
        self.assertEqual(self.content("w.json"), self.reference["--chrome"])
        self.assertIn("kprof: warning: the trace holds %d events (over 10): browsers may fail to "
                      "load its Chrome JSON" % EVENTS, p.stderr)
        self.assertIn("--perfetto", p.stderr)
        # The same through the name, and none below the threshold.
        p = self.export("-o", "w2.json", env={"KPROF_CHROME_MAX_EVENTS": "10"})
        self.assertIn("kprof: warning: the trace holds", p.stderr)
        p = self.export("--chrome", "w3.json", env={"KPROF_CHROME_MAX_EVENTS": str(EVENTS)})
        self.assertEqual(p.stderr, "")
        # Perfetto never warns.
        p = self.export("--perfetto", "w.pftrace", env={"KPROF_CHROME_MAX_EVENTS": "10"})
        self.assertEqual(p.stderr, "")

    def assert_usage(self, args, message, env=None):
        before = sorted(os.listdir(self.tmp))
        p = self.export(*args, env=env, expect=2)
        self.assertIn("kprof: error: ", p.stderr)
        self.assertIn(message, p.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), before, "nothing written: %s" % (args,))

    def test_errors(self):
        self.assert_usage(["-o", "x.json", "--chrome", "y.json"],
                          "-o OUT takes the format from OUT's name")
        self.assert_usage(["--perfetto", "y.pftrace", "-o", "x"],
                          "-o OUT takes the format from OUT's name")
        self.assert_usage([], "give -o OUT (the format follows OUT's name")
        self.assert_usage(["-o", ""], "-o needs a file name")
        self.assert_usage(["-o"], "-o needs a value")
        self.assert_usage(["-o", "x.json", "--raw"], "--raw goes with")
        self.assert_usage(["-o", "x", "--raw"], "--raw goes with")
        for bad in ("x", "-1", "1e6", " 5", "5 ", "99999999999999999999999"):
            self.assert_usage(["-o", "x"], "KPROF_CHROME_MAX_EVENTS='%s': expected a whole "
                              "number of events" % bad, env={"KPROF_CHROME_MAX_EVENTS": bad})
        # An empty variable is unset: the default.
        self.export("-o", "empty", env={"KPROF_CHROME_MAX_EVENTS": ""})
        self.assertEqual(self.content("empty"), self.reference["--chrome"])
        # --raw goes with the call tree's names.
        self.export("-o", "raw.csv", "--raw")
        self.assertTrue(self.content("raw.csv").startswith(b"id,parent,"))

    def test_output_rules_apply(self):
        self.export("-o", "once")
        p = self.export("-o", "once", expect=2)
        self.assertIn("once exists; use --force to replace it", p.stderr)
        with open(os.path.join(self.tmp, "once"), "wb") as f:
            f.write(b"old")
        self.export("-o", "once", "--force", env={"KPROF_CHROME_MAX_EVENTS": "1"})
        self.assertEqual(self.content("once"), self.reference["--perfetto"])
        # The trace itself is never the output, whatever its name says.
        with open(self.trace, "rb") as f:
            before = f.read()
        p = self.export("-o", self.trace, "--force", expect=2)
        self.assertIn("kprof: error: ", p.stderr)
        with open(self.trace, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertTrue(os.path.getsize(self.trace) > 0)
        # A missing trace: exit 2, nothing written, before any format is chosen.
        p = self.kprof("export", os.path.join(self.tmp, "missing.kprof"), "-o", "m", expect=2)
        self.assertIn("missing.kprof", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "m")))

    def test_help_documents_the_rule(self):
        p = self.kprof("export", "--help", expect=0)
        for text in ("-o OUT", ".pftrace", ".hatchet.json", "2000000", "KPROF_CHROME_MAX_EVENTS"):
            self.assertIn(text, p.stdout)


if __name__ == "__main__":
    kptest.main()
