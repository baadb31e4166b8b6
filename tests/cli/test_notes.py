"""kprof notes on PoCL: notes made plain and --from a run.json, sweep.json, bench.json (one kernel
and a comparison) or a run of the history; --kernel; list and its filter; FTS5 search (words, a
phrase, a column, no hit, queries FTS5 cannot parse); show; export and import (a round trip into
a fresh store, notes already present skipped, a bad file adding nothing); UTF-8 and stray bytes
(what kprof writes stays valid UTF-8); the --json shapes. The run, sweep and bench results are
made once for the class; every test has its own store (KPROF_STORE)."""

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

import kptest

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"
GEOMETRY = ["--grid", "4096", "--tg", "64"]
QUICK_BENCH = ["--max-noise", "50", "--min-time", "0.05"]

TWO_KERNELS = r"""
__kernel void add_a(__global float *out, __global const float *a, __global const float *b, uint n)
{ size_t i = get_global_id(0); if (i < n) out[i] = a[i] + b[i]; }
__kernel void add_b(__global float *out, __global const float *a, __global const float *b, uint n)
{ size_t i = get_global_id(0); if (i < n) out[i] = a[i] * b[i]; }
"""

NOTE_KEYS = {"id", "at", "time", "text", "kernel", "device", "grid", "tg", "median_ms",
             "git_commit", "made_from", "data"}


class Notes(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shared = tempfile.mkdtemp(prefix="kprof-notes-")
        home = os.path.join(cls.shared, "home")
        env = {"KPROF_HOME": home, "KPROF_CACHE_DIR": os.path.join(cls.shared, "cache"),
               "KPROF_STORE": os.path.join(cls.shared, "store.db"), "KPROF_BACKEND": "opencl",
               "KPROF_DEVICE": None, "KPROF_DUMP_DIR": None}

        def kprof(*args):
            p = kptest.run(args, env=env, cwd=cls.shared)
            assert p.returncode == 0, "kprof %s: %s" % (" ".join(args), p.stderr)
            return p.stdout

        kprof("isolate", "nd", "--lang", "cl")
        printed = kprof("run", "nd", "--buffers", SPEC, *GEOMETRY, "--iters", "5", "--json")
        kprof("sweep", "nd", "--buffers", SPEC, "--grid", "4096", "--tg-list", "32,64",
              "--iters", "5", "--json")
        kprof("bench", "nd", "--buffers", SPEC, *GEOMETRY, *QUICK_BENCH, "--json")
        folder = os.path.join(home, "kernels", "nd")
        cls.run_file = os.path.join(folder, "run.json")
        cls.sweep_file = os.path.join(folder, "sweep.json")
        cls.bench_file = os.path.join(folder, "bench.json")
        two = os.path.join(cls.shared, "two.cl")
        with open(two, "w") as f:
            f.write(TWO_KERNELS)
        out = kprof("bench", two, "--entry", "add_a", "--entry", "add_b", "--buffers", SPEC,
                    *GEOMETRY, *QUICK_BENCH, "--threshold", "50", "--timeout", "3", "--json")
        cls.compare_file = os.path.join(cls.shared, "compare.json")
        with open(cls.compare_file, "w") as f:
            f.write(out)
        cls.printed_file = os.path.join(cls.shared, "printed.json")
        with open(cls.printed_file, "w") as f:
            f.write(printed)
        for name in ("run", "sweep", "bench", "compare", "printed"):
            with open(getattr(cls, name + "_file")) as f:
                setattr(cls, name + "_doc", json.load(f))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)

    def setUp(self):
        super().setUp()
        # The fixtures are in no git work tree whatever folder the tests run in.
        self.env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(self.tmp)
        self.env["KPROF_BACKEND"] = "opencl"

    def add(self, *args, **kw):
        return self.run_json("notes", "add", *args, **kw)

    def notes(self, *args, **kw):
        return self.run_json("notes", *args, **kw)["notes"]

    def raw(self, *args, env=None):
        """kprof with bytes arguments and bytes output, for checks on encodings."""
        e = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        if env:
            e.update(env)
        return subprocess.run([kptest.KPROF] + list(args), cwd=self.tmp, env=e,
                              capture_output=True, timeout=300)

    def assert_usage_error(self, *args, says=None, env=None):
        p = self.kprof(*args, env=env, expect=2)
        self.assertIn("kprof: error:", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        if says:
            self.assertIn(says, p.stderr)
        return p

    # ---- add -------------------------------------------------------------------------------------

    def test_add_plain_and_show(self):
        before = int(time.time())
        p = self.kprof("notes", "add", "unrolling by 4 did nothing", expect=0)
        self.assertEqual(p.stdout, "note 1 added\n")
        n = self.notes("list")[0]
        self.assertEqual(set(n), NOTE_KEYS)
        self.assertEqual(n["id"], 1)
        self.assertEqual(n["text"], "unrolling by 4 did nothing")
        self.assertGreaterEqual(n["at"], before)
        self.assertLessEqual(n["at"], int(time.time()))
        self.assertRegex(n["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        for key in ("kernel", "device", "grid", "tg", "median_ms", "git_commit", "made_from",
                    "data"):
            self.assertIsNone(n[key], key)
        shown = self.kprof("notes", "show", "1", expect=0).stdout
        self.assertTrue(shown.startswith("note 1  "))
        self.assertIn("    unrolling by 4 did nothing\n", shown)
        self.assertEqual(self.run_json("notes", "show", "1"), n)

    def test_add_kernel_and_list_filter(self):
        self.kprof("notes", "add", "k1 first", "--kernel", "k1", expect=0)
        self.kprof("notes", "add", "k2 only", "--kernel", "k2", expect=0)
        self.kprof("notes", "add", "about nothing in particular", expect=0)
        self.kprof("notes", "add", "k1 second", "--kernel", "k1", expect=0)
        self.assertEqual([n["text"] for n in self.notes("list")],
                         ["k1 first", "k2 only", "about nothing in particular", "k1 second"])
        k1 = self.notes("list", "--kernel", "k1")
        self.assertEqual([(n["id"], n["kernel"]) for n in k1], [(1, "k1"), (4, "k1")])
        self.assertEqual(self.run_json("notes", "list", "--kernel", "nope"),
                         {"count": 0, "notes": []})
        human = self.kprof("notes", "list", "--kernel", "k2", expect=0).stdout
        self.assertIn("#2  ", human)
        self.assertIn("    k2 only\n", human)
        self.assertNotIn("k1", human)

    def test_add_from_run_json(self):
        n = self.add("baseline", "--from", self.run_file)
        r = self.run_doc
        self.assertEqual(n["kernel"], r["entry"])
        self.assertEqual(n["kernel"], "demo_add")
        self.assertEqual(n["device"], r["device"]["name"])
        self.assertEqual((n["grid"], n["tg"]), ("4096", "64"))
        self.assertEqual(n["median_ms"], r["gpu_ms_median"])
        self.assertEqual(n["made_from"], os.path.realpath(self.run_file))
        self.assertIsNone(n["git_commit"])  # not in a work tree
        d = n["data"]
        self.assertEqual(d["from"], "run")
        for key in ("backend", "timer", "source", "iterations", "gpu_ms_min", "gpu_ms_p90",
                    "approx_gb_per_s", "bytes", "reflection"):
            self.assertEqual(d[key], r[key], key)
        self.assertEqual(d["device"]["driver"], r["device"]["driver"])
        self.assertEqual(d["readings"], [x["id"] for x in r["readings"]])
        self.assertNotIn("gpu_ms_samples", d)
        self.assertNotIn("buffers", d)
        # The human line says what the note carries.
        p = self.kprof("notes", "add", "again", "--from", self.run_file, expect=0)
        self.assertRegex(p.stdout, r"^note 2 added: demo_add · grid 4096 · tg 64 · ")
        # What `kprof run --json` prints is the same form.
        n = self.add("printed", "--from", self.printed_file)
        self.assertEqual(n["median_ms"], self.printed_doc["gpu_ms_median"])
        self.assertEqual(n["made_from"], os.path.realpath(self.printed_file))

    def test_add_from_sweep_json_takes_the_best_point(self):
        n = self.add("64 is the knee", "--from", self.sweep_file, "--kernel", "demo_add")
        s = self.sweep_doc
        points = s["points"]
        best = [p for p in points if p["best"]]
        point = best[0] if best else min(points, key=lambda p: p["gpu_ms_median"])
        self.assertEqual(n["tg"], "x".join(str(v) for v in point["threadgroup"]))
        self.assertEqual(n["median_ms"], point["gpu_ms_median"])
        self.assertEqual((n["kernel"], n["grid"]), ("demo_add", "4096"))
        self.assertEqual(n["device"], s["device"]["name"])
        d = n["data"]
        self.assertEqual(d["from"], "sweep")
        self.assertEqual(d["best"], bool(best))
        self.assertEqual(d["curve"], [{"tg": str(p["threadgroup"][0]),
                                       "median_ms": p["gpu_ms_median"]} for p in points])
        self.assertEqual(d["point"]["gpu_ms_min"], point["gpu_ms_min"])

    def test_add_from_bench_json_takes_the_first_kernel(self):
        n = self.add("bench baseline", "--from", self.bench_file)
        k = self.bench_doc["points"][0]["kernels"][0]
        self.assertEqual((n["kernel"], n["grid"], n["tg"]), ("demo_add", "4096", "64"))
        self.assertEqual(n["median_ms"], k["median_ms"])
        self.assertEqual(n["device"], self.bench_doc["device"])
        d = n["data"]
        self.assertEqual(d["from"], "bench")
        self.assertEqual(d["kernel"]["min_ms"], k["min_ms"])
        self.assertEqual(d["kernel"]["samples"], k["samples"])
        self.assertNotIn("samples_ms", d["kernel"])
        self.assertEqual(d["cache"], "hot")
        self.assertEqual(d["config"]["buffers"], SPEC)

    def test_add_from_a_comparison_picks_the_kernel(self):
        kernels = self.compare_doc["points"][0]["kernels"]
        first = self.add("A", "--from", self.compare_file)
        self.assertEqual((first["kernel"], first["median_ms"]),
                         ("add_a", kernels[0]["median_ms"]))
        for pick in ("add_b", "B"):  # its entry or its label
            n = self.add("B against A", "--from", self.compare_file, "--kernel", pick)
            self.assertEqual((n["kernel"], n["median_ms"]), ("add_b", kernels[1]["median_ms"]))
            self.assertEqual(n["data"]["comparison"]["verdict"],
                             self.compare_doc["points"][0]["comparison"]["verdict"])
            self.assertEqual(n["data"]["kernels"], 2)
        p = self.assert_usage_error("notes", "add", "x", "--from", self.compare_file,
                                    "--kernel", "add_c")
        self.assertIn("add_a, add_b", p.stderr)
        self.assertEqual(len(self.notes("list")), 3)

    def test_kernel_must_be_the_one_measured(self):
        p = self.assert_usage_error("notes", "add", "x", "--from", self.run_file,
                                    "--kernel", "other")
        self.assertIn("measured demo_add", p.stderr)
        self.assertEqual(self.notes("list"), [])

    def test_commit_of_the_work_tree_holding_the_file(self):
        if not shutil.which("git"):
            self.skipTest("no git on PATH")
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(repo, "results"))
        shutil.copy(self.run_file, os.path.join(repo, "results", "run.json"))
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"]
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "results"]):
            subprocess.run(git + args, check=True, capture_output=True)
        head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        n = self.add("in a repo", "--from", os.path.join("repo", "results", "run.json"))
        self.assertEqual(n["git_commit"], head)
        self.assertEqual(n["made_from"], os.path.realpath(os.path.join(repo, "results",
                                                                       "run.json")))
        self.assertRegex(self.kprof("notes", "show", str(n["id"]), expect=0).stdout,
                         r"\ncommit +%s\n" % head)
        # The caller's GIT_DIR and GIT_WORK_TREE do not point git at another repository (git is
        # run as for the history: kp_git_head).
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        subprocess.run(["git", "-C", other, "init", "-q"], check=True, capture_output=True)
        n = self.add("GIT_DIR set", "--from", os.path.join("repo", "results", "run.json"),
                     env={"GIT_DIR": os.path.join(other, ".git"), "GIT_WORK_TREE": other})
        self.assertEqual(n["git_commit"], head)

    def test_from_files_that_are_not_results(self):
        self.write("caps.json", self.kprof("caps", "--json", expect=0).stdout)
        self.write("empty.json", "")
        self.write("broken.json", '{"points": [')
        self.write("nopoints.json", json.dumps(dict(self.sweep_doc, points=[])))
        self.write("nokernels.json", json.dumps(
            dict(self.bench_doc, points=[dict(self.bench_doc["points"][0], kernels=[])])))
        for path, says in (("caps.json", "not a result of kprof run, sweep or bench"),
                           ("empty.json", "not JSON"), ("broken.json", "not JSON"),
                           ("nopoints.json", "without a measured point"),
                           ("nokernels.json", "without a measured point"),
                           ("missing.json", "missing.json"), (self.tmp, "not a regular file")):
            self.assert_usage_error("notes", "add", "x", "--from", path, says=says)
        self.assertEqual(self.notes("list"), [])

    def test_from_history(self):
        if self.kprof("help", "history").returncode != 0:
            self.skipTest("no `kprof history` in this build (the run history is not merged)")
        self.kprof("isolate", "h", "--lang", "cl", expect=0)
        self.kprof("run", "h", "--buffers", SPEC, *GEOMETRY, "--iters", "5", expect=0)
        n = self.add("from the history", "--from", "@0")
        self.assertEqual((n["kernel"], n["grid"], n["tg"]), ("demo_add", "4096", "64"))
        self.assertRegex(n["made_from"], r"^history:\d+$")
        self.assertGreater(n["median_ms"], 0)
        self.assertEqual(n["data"]["from"], "history")
        same = self.add("by id", "--from", n["made_from"].split(":")[1])
        self.assertEqual(same["made_from"], n["made_from"])
        self.assert_usage_error("notes", "add", "x", "--from", "@-9999")
        self.assertEqual(len(self.notes("list")), 2)

    def test_text_from_standard_input(self):
        p = self.kprof("notes", "add", "-", input="first line\n  second, indented\n\n",
                       expect=0)
        self.assertEqual(p.stdout, "note 1 added\n")
        self.assertEqual(self.notes("list")[0]["text"], "first line\n  second, indented")
        self.assertIn("    first line\n      second, indented\n",
                      self.kprof("notes", "show", "1", expect=0).stdout)

    def test_usage_errors(self):
        self.assert_usage_error("notes", says="add, list, search, show, export or import")
        self.assert_usage_error("notes", "frob", says="no notes command 'frob'")
        self.assert_usage_error("notes", "add", says="give the note's TEXT")
        self.assert_usage_error("notes", "add", "", says="empty")
        self.assert_usage_error("notes", "add", "two", "texts", says="one TEXT")
        self.assert_usage_error("notes", "add", "-5% after unrolling", says="goes after --")
        self.assert_usage_error("notes", "list", "--from", self.run_file,
                                says="notes list takes no --from")
        self.assert_usage_error("notes", "search", says="give WORDS")
        self.assert_usage_error("notes", "export", says="give one FILE")
        self.assert_usage_error("notes", "export", "-", "--json", says="leave --json out")
        self.assertEqual(self.notes("list"), [])
        p = self.kprof("notes", "add", "--json", "--", "-5% after unrolling", expect=0)
        self.assertEqual(json.loads(p.stdout)["text"], "-5% after unrolling")
        helptext = self.kprof("notes", "--help", expect=0).stdout
        self.assertIn("usage: kprof notes add TEXT", helptext)
        self.assertIn("notes", self.kprof("--help", expect=0).stdout)

    # ---- list, search, show ----------------------------------------------------------------

    def test_list_without_a_store_creates_none(self):
        self.assertEqual(self.run_json("notes", "list"), {"count": 0, "notes": []})
        self.assertIn("no notes", self.kprof("notes", "list", expect=0).stdout)
        self.assertEqual(self.run_json("notes", "search", "anything")["count"], 0)
        self.assert_usage_error("notes", "show", "1", says="no note 1")
        self.assertFalse(os.path.exists(self.env["KPROF_STORE"]))

    def test_store_before_notes_has_none(self):
        """A schema-1 store (ceilings alone) or an empty file: no notes, not an SQL error."""
        store = self.env["KPROF_STORE"]
        db = sqlite3.connect(store)
        db.execute("CREATE TABLE ceilings (device_key TEXT PRIMARY KEY, backend TEXT NOT NULL, "
                   "device TEXT NOT NULL, driver TEXT, copy_gbs REAL NOT NULL, copy_bytes "
                   "INTEGER, demo_add_gbs REAL, demo_add_ms REAL, demo_add_elements INTEGER, "
                   "method TEXT, measured_at INTEGER NOT NULL)")
        db.execute("PRAGMA user_version = 1")
        db.commit()
        db.close()
        for make_empty in (False, True):
            if make_empty:
                open(store, "w").close()
            with open(store, "rb") as f:
                before = f.read()
            self.assertEqual(self.run_json("notes", "list"), {"count": 0, "notes": []})
            p = self.kprof("notes", "list", expect=0)
            self.assertIn("no notes", p.stdout)
            self.assertNotIn("no such table", p.stderr)
            self.assertEqual(self.run_json("notes", "search", "anything")["count"], 0)
            self.assert_usage_error("notes", "show", "1", says="no note 1")
            p = self.kprof("notes", "export", "-", expect=0)
            self.assertEqual(json.loads(p.stdout)["notes"], [])
            with open(store, "rb") as f:
                self.assertEqual(f.read(), before)  # reading upgrades nothing

    def test_search(self):
        self.kprof("notes", "add", "shared memory bank conflicts in the transpose",
                   "--kernel", "transpose", expect=0)
        self.kprof("notes", "add", "memory bound: near the ceiling; memory memory", expect=0)
        self.kprof("notes", "add", "the shared accumulator spills registers", "--kernel",
                   "reduce", expect=0)
        self.kprof("notes", "add", "nothing about that", "--kernel", "copy_kernel", expect=0)

        def ids(*query):
            r = self.run_json("notes", "search", *query)
            self.assertEqual(r["query"], " ".join(query))
            self.assertEqual(r["count"], len(r["notes"]))
            return [n["id"] for n in r["notes"]]

        # Words: every one must match; bm25 puts the densest match first.
        self.assertEqual(ids("memory"), [2, 1])
        self.assertEqual(ids("shared", "memory"), [1])
        self.assertEqual(sorted(ids("shared")), [1, 3])
        # A phrase matches in order only.
        self.assertEqual(ids('"bank conflicts"'), [1])
        self.assertEqual(ids('"conflicts bank"'), [])
        # The kernel is searched too, and can be asked for alone.
        self.assertEqual(ids("transpose"), [1])
        self.assertEqual(ids("kernel:reduce"), [3])
        # A kernel's name is words too: copy_kernel is "copy kernel".
        self.assertEqual(ids("copy_kernel"), [4])
        self.assertEqual(ids("copy"), [4])
        self.assertEqual(sorted(ids("spill*", "OR", "bank")), [1, 3])
        # No hit is not an error.
        self.assertEqual(ids("occupancy"), [])
        self.assertIn("no note matches: occupancy",
                      self.kprof("notes", "search", "occupancy", expect=0).stdout)
        human = self.kprof("notes", "search", "transpose", expect=0).stdout
        self.assertIn("#1  ", human)
        self.assertIn("transpose", human)
        # Queries FTS5 cannot parse are usage errors, not crashes.
        for bad in ('"unterminated', "memory AND", "(", "tg-256", "nocolumn:memory", "*"):
            p = self.assert_usage_error("notes", "search", bad, says="cannot search for")
            self.assertIn("FTS5 query syntax", p.stderr)
        self.assertEqual(ids('"tg-256"'), [])

    def test_search_scores(self):
        self.kprof("notes", "add", "latency latency latency", expect=0)
        self.kprof("notes", "add", "latency once among many other words here", expect=0)
        self.kprof("notes", "add", "unrelated", expect=0)
        r = self.run_json("notes", "search", "latency")
        self.assertEqual(set(r), {"query", "count", "notes"})
        self.assertEqual([set(n) for n in r["notes"]], [NOTE_KEYS | {"score"}] * 2)
        scores = [n["score"] for n in r["notes"]]
        self.assertEqual(scores, sorted(scores))  # bm25: lower is better
        self.assertEqual(r["notes"][0]["id"], 1)

    def test_show(self):
        n = self.add("a finding", "--from", self.run_file)
        out = self.kprof("notes", "show", str(n["id"]), expect=0).stdout
        for text in ("note 1  ", "kernel     demo_add", "grid       4096", "tg         64",
                     "median     ", "made from  " + os.path.realpath(self.run_file),
                     "    a finding\n", "data:\n", '"from": "run"'):
            self.assertIn(text, out)
        self.assertEqual(self.run_json("notes", "show", "1"), n)
        p = self.assert_usage_error("notes", "show", "7", says="no note 7")
        self.assertEqual(p.stdout, "")
        for bad in ("abc", "0", "-1", "1x", " 1", ""):
            self.assert_usage_error("notes", "show", "--", bad)

    # ---- export and import ----------------------------------------------------------------

    def make_notes(self):
        self.add("plain")
        self.add("from the run", "--from", self.run_file)
        self.add("from the sweep", "--from", self.sweep_file)
        self.add("from the bench", "--from", self.bench_file)
        self.add("ünïcødé ✓ 漢字\nand a second line", "--kernel", "k✓")
        return self.notes("list")

    def test_export_import_round_trip(self):
        notes = self.make_notes()
        out = os.path.join(self.tmp, "team", "notes.json")
        os.makedirs(os.path.dirname(out))
        r = self.run_json("notes", "export", out)
        self.assertEqual(r, {"file": out, "exported": 5})
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual((doc["kind"], doc["version"]), ("kprof-notes", 1))
        self.assertEqual(len(doc["notes"]), 5)
        self.assertNotIn("id", doc["notes"][0])  # ids are one store's
        # Into a fresh store: the same notes.
        fresh = {"KPROF_STORE": os.path.join(self.tmp, "fresh.db")}
        p = self.kprof("notes", "import", out, env=fresh, expect=0)
        self.assertEqual(p.stdout, "added 5 notes from %s\n" % out)
        again = self.run_json("notes", "list", env=fresh)["notes"]
        self.assertEqual(again, notes)
        out2 = os.path.join(self.tmp, "notes2.json")
        self.kprof("notes", "export", out2, env=fresh, expect=0)
        with open(out, "rb") as a, open(out2, "rb") as b:
            self.assertEqual(a.read(), b.read())
        # Importing it again adds nothing, and says so.
        r = self.run_json("notes", "import", out, env=fresh)
        self.assertEqual(r, {"file": out, "notes": 5, "added": 0, "already_present": 5})
        p = self.kprof("notes", "import", out, expect=0)
        self.assertEqual(p.stdout, "added 0 notes from %s (5 already present)\n" % out)
        # A teammate's new note comes in; the ones already there do not come twice.
        self.add("a teammate's finding", env=fresh)
        self.kprof("notes", "export", out, "--force", env=fresh, expect=0)
        self.assertEqual(self.run_json("notes", "import", out)["added"], 1)
        self.assertEqual(len(self.notes("list")), 6)

    def test_export_to_standard_output_and_force(self):
        self.make_notes()
        p = self.kprof("notes", "export", "-", expect=0)
        self.assertEqual(len(json.loads(p.stdout)["notes"]), 5)
        out = os.path.join(self.tmp, "notes.json")
        self.kprof("notes", "export", out, expect=0)
        p = self.assert_usage_error("notes", "export", out, says="--force")
        self.add("one more")
        self.kprof("notes", "export", out, "--force", expect=0)
        with open(out) as f:
            self.assertEqual(len(json.load(f)["notes"]), 6)
        self.assertEqual([f for f in os.listdir(self.tmp) if ".tmp." in f], [])
        # The store is an input: never an export's output.
        store = self.env["KPROF_STORE"]
        with open(store, "rb") as f:
            before = f.read()
        self.assert_usage_error("notes", "export", store, "--force")
        with open(store, "rb") as f:
            self.assertEqual(f.read(), before)
        # An empty store exports an empty list.
        empty = {"KPROF_STORE": os.path.join(self.tmp, "none.db")}
        p = self.kprof("notes", "export", "-", env=empty, expect=0)
        self.assertEqual(json.loads(p.stdout)["notes"], [])

    def test_import_of_a_bad_file_adds_nothing(self):
        self.make_notes()
        out = os.path.join(self.tmp, "notes.json")
        self.kprof("notes", "export", out, expect=0)
        with open(out) as f:
            good = json.load(f)
        fresh = {"KPROF_STORE": os.path.join(self.tmp, "fresh.db")}
        self.add("already here", env=fresh)

        def bad(name, note_index=None, **change):
            doc = json.loads(json.dumps(good))
            if note_index is None:
                doc.update(change)
            else:
                doc["notes"][note_index].update(change)
            return self.write(name, json.dumps(doc))

        cases = [
            (bad("at.json", 3, at="yesterday"), 'note 4: "at"'),
            (bad("neg.json", 4, at=-5), 'note 5: "at"'),
            (bad("text.json", 2, text=""), 'note 3 has no "text"'),
            (bad("kernel.json", 1, kernel=7), 'note 2: "kernel"'),
            (bad("median.json", 1, median_ms="fast"), 'note 2: "median_ms"'),
            (bad("data.json", 1, data=[1, 2]), 'note 2: "data"'),
            (bad("kind.json", kind="kprof-notez"), "not notes from kprof notes export"),
            (bad("version.json", version=2), "version 2"),
            (bad("list.json", notes={}), "not notes from kprof notes export"),
            (self.write("trunc.json", open(out).read()[:-40]), "not JSON"),
            (self.write("empty.json", ""), "not JSON"),
            (self.write("deep.json", json.dumps(dict(good, notes=[dict(
                good["notes"][0], data={"a": json.loads("[" * 300 + "]" * 300)})]))),
             "nested too deep"),
            (self.run_file, "not notes from kprof notes export"),
            (os.path.join(self.tmp, "missing.json"), "missing.json"),
        ]
        for path, says in cases:
            p = self.assert_usage_error("notes", "import", path, env=fresh, says=says)
            self.assertIn(os.path.basename(path), p.stderr)
        self.assertEqual([n["text"] for n in self.notes("list", env=fresh)], ["already here"])
        # An entry that is not an object at all.
        doc = dict(good, notes=good["notes"] + ["a string"])
        self.assert_usage_error("notes", "import", self.write("str.json", json.dumps(doc)),
                                env=fresh, says="note 6 is not an object")
        self.assertEqual(len(self.notes("list", env=fresh)), 1)

    # ---- text of every kind ----------------------------------------------------------------

    def test_malformed_json_refused_by_every_reader(self):
        """One strict reader behind notes import, notes add --from, diff of results and bench
        --compare: bytes after the document, a second document, a NUL after it, \\u0000 in a
        string and nesting past the limit are each refused, exit 2 with the reason, where each
        file without the fault reads (they passed, "added 1 note", and \\u0000 cut the text;
        1000 levels was called "not JSON")."""
        self.kprof("notes", "add", "cut here", expect=0)
        export = os.path.join(self.tmp, "export.json")
        self.kprof("notes", "export", export, expect=0)
        fresh = {"KPROF_STORE": os.path.join(self.tmp, "fresh.db")}

        def with_string(doc):  # a key no reader knows, holding \u0000 (the first key)
            return b'{"comment": "cut\\u0000here", ' + doc.lstrip()[1:]

        def deep(doc):
            return b'{"comment": ' + b"[" * 1000 + b"]" * 1000 + b", " + doc.lstrip()[1:]

        faults = [
            ("trailing", lambda d: d + b"garbage", "not JSON: bytes after the document at byte "),
            ("second", lambda d: d + d, "not one JSON document: a second one begins at byte "),
            ("nul", lambda d: d + b"\n\0", "not JSON: a NUL byte at byte "),
            ("u0000", with_string, "a string holds \\u0000 (a NUL character) at byte "),
            ("deep", deep, "nested too deeply at byte 212 (limit 200 levels of arrays and "
                           "objects)"),
        ]
        readers = [
            ("import", export, lambda f: ["notes", "import", f]),
            ("from-run", self.run_file, lambda f: ["notes", "add", "x", "--from", f]),
            ("from-bench", self.bench_file, lambda f: ["notes", "add", "x", "--from", f]),
            ("diff", self.bench_file, lambda f: ["diff", self.bench_file, f]),
            ("compare", self.bench_file,
             lambda f: ["bench", os.path.join(self.shared, "home", "kernels", "nd"), "--buffers",
                        SPEC, *GEOMETRY, "--compare", f, "--json"]),
        ]
        for reader, base, command in readers:
            with open(base, "rb") as f:
                good = f.read()
            for fault, make, says in faults:
                path = os.path.join(self.tmp, "%s-%s.json" % (reader, fault))
                with open(path, "wb") as f:
                    f.write(make(good))
                p = self.kprof(*command(path), env=fresh, expect=2)
                self.assertIn("kprof: error: %s: %s" % (path, says), p.stderr, (reader, fault))
                self.assertEqual(p.stdout, "", (reader, fault))
            self.assertEqual(self.notes("list", env=fresh), [], reader)
        # The same files without the fault read.
        self.kprof("notes", "import", export, env=fresh, expect=0)
        self.kprof("notes", "add", "x", "--from", self.bench_file, env=fresh, expect=0)
        self.assertEqual([n["text"] for n in self.notes("list", env=fresh)], ["cut here", "x"])
        self.kprof("diff", self.bench_file, self.bench_file, expect=0)

    def test_utf8_and_stray_bytes(self):
        text = (b"bank \xff\xfe conflicts \xc3 \xe2\x9c\x93 \xf0\x9f\x9a\x80 "
                + "漢字 caf\u00e9 ".encode() + b"\x1b[31mred\x1b[0m")
        p = self.raw("notes", "add", text, "--kernel", b"k\xffname", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        n = json.loads(p.stdout.decode("utf-8"))  # strict: valid UTF-8
        self.assertEqual(n["text"],
                         "bank \ufffd\ufffd conflicts \ufffd ✓ 🚀 漢字 café \x1b[31mred\x1b[0m")
        self.assertEqual(n["kernel"], "k\ufffdname")
        # Found by its kernel and words; the filter is read the way the note was.
        self.assertEqual(len(self.notes("list", "--kernel", "k\ufffdname")), 1)
        p = self.raw("notes", "list", "--kernel", b"k\xffname", "--json")
        self.assertEqual(json.loads(p.stdout.decode("utf-8"))["count"], 1)
        self.assertEqual(self.run_json("notes", "search", "conflicts")["count"], 1)
        self.assertEqual(self.run_json("notes", "search", "漢字")["count"], 1)
        self.assertEqual(self.run_json("notes", "search", "cafe")["count"], 1)  # diacritics
        # What people see is valid UTF-8 with no control character to move the terminal.
        for args in (("notes", "show", "1"), ("notes", "list"), ("notes", "search", "bank")):
            out = self.raw(*args).stdout
            out.decode("utf-8")
            self.assertNotIn(b"\x1b", out)
            self.assertIn("✓ 🚀".encode(), out)
        # A result file with stray bytes in its names.
        with open(self.run_file, "rb") as f:
            raw = f.read().replace(b'"demo_add"', b'"demo\xff_add"', 1)
        self.assertIn(b"\xff", raw)
        odd = os.path.join(self.tmp, "odd.json")
        with open(odd, "wb") as f:
            f.write(raw)
        p = self.raw("notes", "add", "odd", "--from", odd, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        n = json.loads(p.stdout.decode("utf-8"))
        self.assertEqual(n["kernel"], "demo\ufffd_add")
        # Exported and imported, it is the same text.
        out = os.path.join(self.tmp, "n.json")
        self.kprof("notes", "export", out, expect=0)
        with open(out, "rb") as f:
            json.loads(f.read().decode("utf-8"))
        fresh = {"KPROF_STORE": os.path.join(self.tmp, "fresh.db")}
        self.kprof("notes", "import", out, env=fresh, expect=0)
        self.assertEqual(self.notes("list", env=fresh), self.notes("list"))

    # ---- --json shapes ---------------------------------------------------------------------

    def test_json_shapes(self):
        n = self.add("shape", "--from", self.run_file)
        self.assertEqual(set(n), NOTE_KEYS)
        for key in ("id", "at"):
            self.assertIsInstance(n[key], int)
        for key in ("text", "time", "kernel", "device", "grid", "tg", "made_from"):
            self.assertIsInstance(n[key], str)
        self.assertIsInstance(n["median_ms"], float)
        self.assertIsInstance(n["data"], dict)
        listed = self.run_json("notes", "list")
        self.assertEqual(set(listed), {"count", "notes"})
        self.assertEqual(listed["notes"], [n])
        self.assertEqual(self.run_json("notes", "show", "1"), n)
        out = os.path.join(self.tmp, "x.json")
        self.assertEqual(self.run_json("notes", "export", out), {"file": out, "exported": 1})
        self.assertEqual(self.run_json("notes", "import", out),
                         {"file": out, "notes": 1, "added": 0, "already_present": 1})


if __name__ == "__main__":
    kptest.main()
