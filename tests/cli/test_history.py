"""kprof history on PoCL: every kprof run, sweep and bench recorded once, with the right kind,
kernel, geometry, options, source path and hash (FNV-1a 64 computed here), device, the median,
min and samples of the command's own JSON and that JSON whole; the git commit and dirty flag of
the source's work tree (null outside one); the table and --json, newest first, by kernel, with
--limit; KPROF_HISTORY=0; a store that cannot be written only warned about; an older (schema 1)
store upgraded keeping its ceilings; a newer or foreign store refused and left byte for byte."""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import time

import kptest

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"

KERNELS = r"""
#ifndef SCALE
#define SCALE 3.0f
#endif

__kernel void demo_add(__global float *out, __global const float *a, __global const float *b,
                       uint n)
{
    size_t i = get_global_id(0);
    if (i < n) out[i] = a[i] + b[i];
}

__kernel void demo_scale(__global float *out, __global const float *a, __global const float *b,
                         uint n)
{
    size_t i = get_global_id(0);
    if (i < n) out[i] = SCALE * a[i];
}
"""

# The store kprof wrote before the history: schema 1, the ceilings table alone.
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS ceilings (  device_key TEXT PRIMARY KEY,  backend TEXT NOT NULL,
  device TEXT NOT NULL,  driver TEXT,  copy_gbs REAL NOT NULL,  copy_bytes INTEGER,
  demo_add_gbs REAL,  demo_add_ms REAL,  demo_add_elements INTEGER,  method TEXT,
  measured_at INTEGER NOT NULL);
"""
CEILING = ("opencl|Some GPU|Some platform", "opencl", "Some GPU", "1.2", 321.5, 1 << 26, 300.25,
           0.5, 1 << 24, "copy kernels", 1700000000)

# Stop as soon as the median is known to 50%: the test needs a result, not a good one.
BENCH_QUICK = ["--min-time", "0", "--min-samples", "9", "--max-noise", "50", "--timeout", "5"]

GIT = shutil.which("git")


def median(v):
    return sorted(v)[len(v) // 2]


class History(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.store = self.env["KPROF_STORE"]
        self.src = self.write("k.cl", KERNELS)

    def run_add(self, *extra, src="k.cl", entry="demo_add", iters="5", **kw):
        return self.kprof("run", src, "--entry", entry, "--grid", "4096", "--tg", "64",
                          "--buffers", SPEC, "--iters", iters, "-DSCALE=2.0f", *extra, **kw)

    def history(self, *args, **kw):
        p = self.kprof("history", "--json", *args, expect=0, **kw)
        return json.loads(p.stdout)

    def results(self):
        """The result column of every run, by id (not in --json: read as a user would)."""
        db = sqlite3.connect(self.store)
        try:
            return dict(db.execute("SELECT id, result FROM runs"))
        finally:
            db.close()

    def source_hash(self, path):
        with open(path, "rb") as f:
            return kptest.fnv1a64(f.read())

    def outside_git(self, folder):
        if GIT is None:
            return True
        return subprocess.run([GIT, "-C", folder, "rev-parse", "HEAD"], capture_output=True
                              ).returncode != 0

    # ---- what is recorded --------------------------------------------------------------------

    def test_run_recorded(self):
        p = self.run_add("--json", expect=0)
        self.assertEqual(p.stderr, "")
        r = json.loads(p.stdout)
        runs = self.history()
        self.assertEqual(len(runs), 1)
        h = runs[0]
        self.assertEqual(h["kind"], "run")
        self.assertEqual(h["kernel"], "demo_add")
        self.assertEqual(h["target"], "k.cl")
        self.assertEqual(h["source_path"], os.path.realpath(self.src))
        self.assertEqual(h["source_hash"], self.source_hash(self.src))
        self.assertRegex(h["source_hash"], "^[0-9a-f]{16}$")
        self.assertEqual(h["options"], "-DSCALE=2.0f")
        self.assertEqual(h["grid"], "4096")
        self.assertEqual(h["tg"], "64")
        self.assertEqual(h["buffers"], SPEC)
        self.assertEqual(h["device"], r["device"]["name"])
        self.assertEqual(h["driver"], r["device"]["driver"])
        self.assertEqual(h["backend"], "opencl")
        self.assertEqual(h["device_key"], "opencl|%s|%s" % (r["device"]["name"],
                                                           r["device"]["platform"]))
        self.assertEqual(h["kprof_version"], r["kprof_version"])
        self.assertEqual(h["median_ms"], r["gpu_ms_median"])
        self.assertEqual(h["min_ms"], r["gpu_ms_min"])
        self.assertEqual(h["nsamples"], 5)
        self.assertEqual(h["samples"], r["gpu_ms_samples"])
        self.assertEqual(median(h["samples"]), h["median_ms"])
        if self.outside_git(self.tmp):
            self.assertIsNone(h["git_commit"])
            self.assertIsNone(h["git_dirty"])
        self.assertNotIn("result", h)
        # The result column is the JSON --json printed, whole.
        self.assertEqual(self.results()[h["id"]], p.stdout)
        # A run without --json is recorded the same way, its JSON built all the same.
        p = self.run_add(expect=0)
        self.assertEqual(p.stderr, "")
        runs = self.history()
        self.assertEqual([x["id"] for x in runs], [2, 1])
        again = json.loads(self.results()[2])
        self.assertEqual(again["gpu_ms_median"], runs[0]["median_ms"])
        self.assertEqual(again["entry"], "demo_add")

    def test_sweep_recorded(self):
        p = self.kprof("sweep", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg-list",
                       "32,64,128", "--iters", "5", "--buffers", SPEC, "--json", expect=0)
        s = json.loads(p.stdout)
        self.assertTrue(s["compared"])
        best = [pt for pt in s["points"] if pt["best"]]
        self.assertEqual(len(best), 1)
        best = best[0]
        runs = self.history()
        self.assertEqual(len(runs), 1)
        h = runs[0]
        self.assertEqual(h["kind"], "sweep")
        self.assertEqual(h["kernel"], "demo_add")
        self.assertEqual(h["grid"], "4096")
        self.assertEqual(h["tg"], str(best["threadgroup"][0]))
        self.assertEqual(h["median_ms"], best["gpu_ms_median"])
        self.assertEqual(h["min_ms"], best["gpu_ms_min"])
        self.assertEqual(h["nsamples"], 5)
        self.assertEqual(len(h["samples"]), 5)
        # The best point's own samples: their median and min are its numbers.
        self.assertEqual(median(h["samples"]), best["gpu_ms_median"])
        self.assertEqual(min(h["samples"]), best["gpu_ms_min"])
        self.assertEqual(h["source_hash"], self.source_hash(self.src))
        self.assertEqual(self.results()[h["id"]], p.stdout)
        # `run --sweep-tg` is the same sweep: one record, of kind sweep, nothing of kind run.
        self.run_add("--sweep-tg", "--tg-list", "64", expect=0)
        runs = self.history()
        self.assertEqual([x["kind"] for x in runs], ["sweep", "sweep"])
        # One size, so no best: the only point is what is recorded.
        self.assertEqual(runs[0]["tg"], "64")
        self.assertEqual(len(runs[0]["samples"]), 5)

    def test_bench_recorded(self):
        p = self.kprof("bench", "k.cl", "--entry", "demo_add", "--axis", "N=1024,4096", "--grid",
                       "N", "--tg", "64", "--buffers", "f32:N,f32:N,f32:N,u32=N", "-DSCALE=N",
                       "--json", *BENCH_QUICK, expect=0)
        b = json.loads(p.stdout)
        self.assertEqual(len(b["points"]), 2)
        first = b["points"][0]["kernels"][0]
        runs = self.history()
        self.assertEqual(len(runs), 1)  # one record per invocation
        h = runs[0]
        self.assertEqual(h["kind"], "bench")
        self.assertEqual(h["kernel"], "demo_add")
        self.assertEqual(h["target"], "k.cl")
        self.assertEqual(h["grid"], "1024")
        self.assertEqual(h["tg"], "64")
        self.assertEqual(h["buffers"], "f32:1024,f32:1024,f32:1024,u32=1024")
        self.assertEqual(h["options"], "-DSCALE=1024")
        self.assertEqual(h["median_ms"], first["median_ms"])
        self.assertEqual(h["min_ms"], first["min_ms"])
        self.assertEqual(h["nsamples"], first["samples"])
        self.assertEqual(h["samples"], first["samples_ms"])
        self.assertEqual(h["source_hash"], self.source_hash(self.src))
        self.assertEqual(self.results()[h["id"]], p.stdout)
        # Without --json too; two kernels compared are one record, of A.
        self.kprof("bench", "k.cl", "--entry", "demo_scale", "--entry", "demo_add", "--grid",
                   "4096", "--tg", "64", "--buffers", SPEC, "-DSCALE=2.0f", *BENCH_QUICK,
                   expect=0)
        runs = self.history()
        self.assertEqual([(x["kind"], x["kernel"]) for x in runs],
                         [("bench", "demo_scale"), ("bench", "demo_add")])

    def test_failed_command_records_nothing(self):
        p = self.kprof("run", "k.cl", "--entry", "nosuch", "--grid", "4096", "--tg", "64",
                       "--buffers", SPEC)
        self.assertNotEqual(p.returncode, 0)
        p = self.kprof("sweep", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg-list",
                       "100000", "--buffers", SPEC)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(self.history(), [])

    # ---- listing -----------------------------------------------------------------------------

    def test_list_filter_limit_and_order(self):
        self.run_add(expect=0)
        self.run_add(entry="demo_scale", expect=0)
        self.run_add(expect=0)
        runs = self.history()
        # Newest first: @0 is id 3, @-1 id 2, @-2 id 1.
        self.assertEqual([(x["id"], x["kernel"]) for x in runs],
                         [(3, "demo_add"), (2, "demo_scale"), (1, "demo_add")])
        self.assertEqual([x["id"] for x in self.history("demo_add")], [3, 1])
        self.assertEqual([x["id"] for x in self.history("demo_scale")], [2])
        self.assertEqual([x["id"] for x in self.history("--limit", "2")], [3, 2])
        self.assertEqual([x["id"] for x in self.history("demo_add", "--limit", "1")], [3])
        self.assertEqual(self.history("nosuch"), [])
        # The table: a header, one line per run, newest first, and its legend.
        out = self.kprof("history", expect=0).stdout
        lines = out.splitlines()
        self.assertEqual(lines[0].split()[:5], ["id", "when", "kind", "kernel", "device"])
        self.assertIn("median ms", lines[0])
        self.assertEqual([ln.split()[0] for ln in lines[1:4]], ["3", "2", "1"])
        self.assertIn("demo_scale", lines[2])
        for ln in lines[1:4]:
            self.assertRegex(ln, r"^\s*\d+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  run  ")
            self.assertIn(" 4096  64 ", ln)
        self.assertIn("newest first", lines[4])
        self.assertEqual(len(self.kprof("history", "demo_scale", expect=0).stdout.splitlines()),
                         3)
        p = self.kprof("history", "nosuch", expect=0)
        self.assertIn("no run of nosuch in the history", p.stdout)

    def test_empty_and_usage(self):
        p = self.kprof("history", expect=0)
        self.assertIn("no run in the history yet", p.stdout)
        self.assertFalse(os.path.exists(self.store))  # reading makes no store
        self.assertEqual(self.history(), [])
        self.assertFalse(os.path.exists(self.store))
        for bad in (["--limit", "0"], ["--limit", "x"], ["a", "b"], ["--nope"], ["--limit"]):
            p = self.kprof("history", *bad, expect=2)
            self.assertIn("kprof: error:", p.stderr)
        p = self.kprof("history", "--help", expect=0)
        self.assertIn("usage: kprof history [KERNEL] [--json] [--limit N]", p.stdout)
        self.assertIn("history", self.kprof("--help", expect=0).stdout)

    # ---- git ---------------------------------------------------------------------------------

    def git(self, *args, cwd):
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=self.tmp,
                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
        return subprocess.run([GIT, "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
                               *args], cwd=cwd, env=env, capture_output=True, text=True,
                              check=True).stdout

    def test_git_commit_and_dirty(self):
        if GIT is None:
            self.skipTest("no git on PATH")
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(repo, "kernels"))
        src = os.path.join(repo, "kernels", "k.cl")
        shutil.copy(self.src, src)
        self.git("init", "-q", cwd=repo)
        self.git("add", "kernels/k.cl", cwd=repo)
        self.git("commit", "-q", "-m", "k", cwd=repo)
        head = self.git("rev-parse", "HEAD", cwd=repo).strip()
        self.run_add(src=src, expect=0)
        # An untracked file is not a change to the code measured.
        self.write("repo/notes.txt", "x")
        self.run_add(src=src, expect=0)
        with open(src, "a") as f:
            f.write("// changed\n")
        self.run_add(src=src, expect=0)
        # Outside any work tree: null.
        self.run_add(expect=0)
        runs = self.history()
        self.assertEqual([x["git_commit"] for x in runs[1:]], [head] * 3)
        self.assertEqual([x["git_dirty"] for x in runs[1:]], [True, False, False])
        for x in runs[1:]:  # a JSON boolean, as diff and notes write it (it was 0/1)
            self.assertIsInstance(x["git_dirty"], bool)
        self.assertEqual(runs[1]["source_hash"], self.source_hash(src))
        self.assertNotEqual(runs[1]["source_hash"], runs[2]["source_hash"])
        if self.outside_git(self.tmp):
            self.assertIsNone(runs[0]["git_commit"])
            self.assertIsNone(runs[0]["git_dirty"])
        # The table shows the short commit, * when dirty.
        out = self.kprof("history", expect=0).stdout.splitlines()
        self.assertTrue(out[2].endswith(head[:7] + "*"), out[2])
        self.assertTrue(out[3].endswith(head[:7]), out[3])
        # A repository with no commit yet has nothing to name: null.
        fresh = os.path.join(self.tmp, "fresh")
        os.makedirs(fresh)
        shutil.copy(self.src, os.path.join(fresh, "k.cl"))
        self.git("init", "-q", cwd=fresh)
        self.run_add(src=os.path.join(fresh, "k.cl"), expect=0)
        self.assertIsNone(self.history("--limit", "1")[0]["git_commit"])

    def test_repository_config_runs_nothing(self):
        """A repository's core.fsmonitor (a command git runs on status) and hooks are not run
        when kprof asks git for the commit of the kernel's work tree."""
        if GIT is None:
            self.skipTest("no git on PATH")
        repo = os.path.join(self.tmp, "unpacked")
        os.makedirs(repo)
        src = os.path.join(repo, "k.cl")
        shutil.copy(self.src, src)
        marker = os.path.join(self.tmp, "fsmonitor-ran")
        evil = os.path.join(repo, "evil.sh")
        with open(evil, "w") as f:
            f.write("#!/bin/sh\ntouch '%s'\n" % marker)
        os.chmod(evil, 0o755)
        self.git("init", "-q", cwd=repo)
        self.git("add", "k.cl", cwd=repo)
        self.git("commit", "-q", "-m", "k", cwd=repo)
        self.git("config", "core.fsmonitor", "./evil.sh", cwd=repo)
        head = self.git("rev-parse", "HEAD", cwd=repo).strip()
        self.run_add(src=src, expect=0)
        self.assertFalse(os.path.exists(marker), "kprof run ran the repository's core.fsmonitor")
        self.assertEqual(self.history()[0]["git_commit"], head)
        p = self.kprof("notes", "add", "x", "--from", "@0", "--json", expect=0)
        self.assertFalse(os.path.exists(marker))
        # The check itself: git alone does run it.
        self.git("status", "--porcelain", cwd=repo)
        self.assertTrue(os.path.exists(marker), "this git does not run core.fsmonitor")

    # ---- when nothing is, or can be, recorded -------------------------------------------------

    def test_history_off(self):
        p = self.run_add(env={"KPROF_HISTORY": "0"}, expect=0)
        self.assertEqual(p.stderr, "")
        self.assertFalse(os.path.exists(self.store))
        self.kprof("sweep", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg-list", "64",
                   "--iters", "3", "--buffers", SPEC, env={"KPROF_HISTORY": "0"}, expect=0)
        self.kprof("bench", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg", "64",
                   "--buffers", SPEC, "-DSCALE=2.0f", *BENCH_QUICK, env={"KPROF_HISTORY": "0"},
                   expect=0)
        self.assertFalse(os.path.exists(self.store))
        self.assertEqual(self.history(), [])

    def check_not_recorded(self, store, why):
        """run, sweep and bench succeed with store unwritable: a warning, the result intact."""
        env = {"KPROF_STORE": store}
        p = self.run_add("--json", env=env, expect=0)
        self.assertEqual(json.loads(p.stdout)["entry"], "demo_add")
        self.assertIn("kprof: warning: not recorded in the history: ", p.stderr)
        self.assertIn(why, p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        p = self.kprof("sweep", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg-list",
                       "32,64", "--iters", "3", "--buffers", SPEC, env=env, expect=0)
        self.assertIn("best tg", p.stdout)
        self.assertIn("kprof: warning: not recorded in the history: ", p.stderr)
        p = self.kprof("bench", "k.cl", "--entry", "demo_add", "--grid", "4096", "--tg", "64",
                       "--buffers", SPEC, "-DSCALE=2.0f", *BENCH_QUICK, env=env, expect=0)
        self.assertIn("kprof: warning: not recorded in the history: ", p.stderr)

    def test_unwritable_store(self):
        folder = os.path.join(self.tmp, "a-folder")
        os.makedirs(folder)
        self.check_not_recorded(folder, "is a folder")
        self.check_not_recorded(os.path.join(self.src, "store.db"), "k.cl")  # under a file
        if os.geteuid() != 0:  # root writes anywhere
            ro = os.path.join(self.tmp, "read-only")
            os.makedirs(ro)
            os.chmod(ro, 0o555)
            try:
                self.check_not_recorded(os.path.join(ro, "store.db"), "store")
            finally:
                os.chmod(ro, 0o755)

    # ---- old, new and foreign stores -----------------------------------------------------------

    def make_v1(self):
        db = sqlite3.connect(self.store)
        db.executescript(V1_SCHEMA)
        db.execute("INSERT INTO ceilings VALUES (?,?,?,?,?,?,?,?,?,?,?)", CEILING)
        db.execute("PRAGMA user_version = 1")
        db.commit()
        db.close()

    def test_v1_store_upgraded(self):
        self.make_v1()
        with open(self.store, "rb") as f:
            before = f.read()
        # Reading it changes nothing: no runs yet.
        self.assertEqual(self.history(), [])
        with open(self.store, "rb") as f:
            self.assertEqual(f.read(), before)
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        try:
            # Schema 2, which an older kprof opens too: the FLOP peak's columns are added
            # without a new version.
            self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 2)
            # Kept as it was; the FLOP peak is not measured for it (NULL).
            self.assertEqual(db.execute("SELECT * FROM ceilings").fetchall(),
                             [CEILING + (None, None)])
            names = {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
            for n in ("ceilings", "runs", "runs_kernel", "notes", "notes_at", "notes_fts",
                      "notes_ai", "notes_ad", "notes_au"):
                self.assertIn(n, names)
            self.assertEqual(db.execute("SELECT count(*) FROM runs").fetchone()[0], 1)
        finally:
            db.close()
        self.assertEqual(len(self.history()), 1)

    def test_notes_index_added_to_older_v2_store(self):
        """notes_at (what notes import looks a note up by) is in a new store, and added to a
        schema-2 store made before it on its next read-write open; a read adds nothing."""
        self.kprof("notes", "add", "first", expect=0)
        db = sqlite3.connect(self.store)
        try:
            plan = db.execute("EXPLAIN QUERY PLAN SELECT 1 FROM notes WHERE text = 'a' AND "
                              "at = 1 AND kernel IS NULL LIMIT 1").fetchall()
            self.assertIn("notes_at", str(plan))
            db.execute("DROP INDEX notes_at")
            db.commit()
        finally:
            db.close()

        def has_index():
            db = sqlite3.connect(self.store)
            try:
                return db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'notes_at'"
                                  ).fetchone()[0] == 1
            finally:
                db.close()

        self.kprof("notes", "list", expect=0)
        self.history()
        self.assertFalse(has_index())
        self.kprof("notes", "add", "second", expect=0)
        self.assertTrue(has_index())

    def test_empty_file_store(self):
        open(self.store, "w").close()
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        try:
            self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 2)
        finally:
            db.close()
        self.assertEqual(len(self.history()), 1)

    def test_dev_schema_3_store_written_back_as_2(self):
        """A store a development build left at user_version 3 (schema 2 and the FLOP peak's
        columns) is read, and written back as 2 on the next read-write open."""
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        db.execute("PRAGMA user_version = 3")
        db.commit()
        db.close()
        self.assertEqual(len(self.history()), 1)
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        try:
            self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 2)
            cols = {r[1] for r in db.execute("PRAGMA table_info(ceilings)")}
            self.assertTrue({"fma_gflops", "fma_method"} <= cols)
        finally:
            db.close()
        self.assertEqual(len(self.history()), 2)

    def check_refused_untouched(self, why):
        with open(self.store, "rb") as f:
            before = f.read()
        p = self.kprof("history", expect=2)
        self.assertIn("kprof: error: ", p.stderr)
        self.assertIn(why, p.stderr)
        p = self.kprof("history", "--json", expect=2)
        self.assertEqual(p.stdout, "")
        p = self.run_add("--json", expect=0)
        json.loads(p.stdout)
        self.assertIn("kprof: warning: not recorded in the history: ", p.stderr)
        self.assertIn(why, p.stderr)
        with open(self.store, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_newer_store_refused(self):
        self.make_v1()
        db = sqlite3.connect(self.store)
        db.execute("PRAGMA user_version = 99")
        db.commit()
        db.close()
        self.check_refused_untouched("schema 99, newer than this kprof")

    def test_foreign_store_refused(self):
        with open(self.store, "w") as f:
            f.write("not a database, but long enough to be read as one........................\n")
        self.check_refused_untouched("is not a kprof store")
        os.unlink(self.store)
        db = sqlite3.connect(self.store)
        db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
        db.commit()
        db.close()
        self.check_refused_untouched("is not a kprof store")


    def test_one_byte_file_refused(self):
        """A non-empty file that does not begin as SQLite does is refused and left as it is,
        however short: SQLite reads a 1-byte file as a new database, and kprof wrote a store
        over it."""
        for text in (b"S", b"SQ", b"SQLite format 2\0" + b"x" * 200):
            with open(self.store, "wb") as f:
                f.write(text)
            for args in (["notes", "add", "x"], ["notes", "list"], ["history"]):
                p = self.kprof(*args, expect=2)
                self.assertIn(self.store + " is not a kprof store (not an SQLite database)",
                              p.stderr)
            with open(self.store, "rb") as f:
                self.assertEqual(f.read(), text)

    # ---- many kprofs making one store at once ---------------------------------------------------

    def start(self, *args):
        return subprocess.Popen([kptest.KPROF] + list(args), env=self.child_env(), cwd=self.tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_concurrent_first_writers(self):
        """Eight kprofs adding a note to a store none has made yet, and eight reading it, all at
        once, for several rounds: every note is stored and every command succeeds (a writer whose
        check read the version before another made the schema and the tables after called the
        store foreign, exit 2, "an SQLite database of 14 other tables", and its note was lost)."""
        want = sorted("n%d" % i for i in range(8))
        for round_ in range(60):
            for suffix in ("", "-journal"):
                if os.path.exists(self.store + suffix):
                    os.unlink(self.store + suffix)
            procs = [self.start("notes", "add", text) for text in want]
            procs += [self.start("notes", "list", "--json") for _ in range(8)]
            for p in procs:
                out, err = p.communicate(timeout=120)
                self.assertEqual((p.returncode, err), (0, ""),
                                 "round %d: kprof %s" % (round_, " ".join(p.args[1:])))
                if "list" in p.args:
                    self.assertLessEqual(json.loads(out)["count"], 8)
            db = sqlite3.connect(self.store)
            try:
                self.assertEqual(sorted(t for (t,) in db.execute("SELECT text FROM notes")),
                                 want, "round %d" % round_)
            finally:
                db.close()

    def test_read_waits_for_the_schema_being_made(self):
        """A read that finds an empty file while another program holds the write lock making the
        schema waits for it, and reads what was made (it read the empty file: no notes)."""
        other = os.path.join(self.tmp, "other.db")
        self.kprof("notes", "add", "made meanwhile", env={"KPROF_STORE": other}, expect=0)
        src = sqlite3.connect(other)
        try:
            schema = [sql for (sql,) in src.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
                "'notes_fts_%' ORDER BY rowid")]
            note = src.execute("SELECT at, text FROM notes").fetchone()
        finally:
            src.close()
        open(self.store, "w").close()
        db = sqlite3.connect(self.store, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            for sql in schema:
                db.execute(sql)
            db.execute("INSERT INTO notes (at, text) VALUES (?, ?)", note)
            db.execute("PRAGMA user_version = 2")
            reader = self.start("notes", "list", "--json")
            time.sleep(1.5)  # the reader is at the lock by now (or, on a slow machine, later)
            db.execute("COMMIT")
        finally:
            db.close()
        out, err = reader.communicate(timeout=60)
        self.assertEqual((reader.returncode, err), (0, ""))
        self.assertEqual([n["text"] for n in json.loads(out)["notes"]], ["made meanwhile"])

    # ---- a damaged or unwritable store -----------------------------------------------------------

    def damaged_store(self, how):
        for suffix in ("", "-journal"):
            if os.path.exists(self.store + suffix):
                os.unlink(self.store + suffix)
        self.kprof("notes", "add", "base words", expect=0)
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        try:
            if how == "column":
                db.execute("ALTER TABLE runs DROP COLUMN backend")
                db.execute("ALTER TABLE notes RENAME COLUMN device TO dev")
            elif how == "fts":
                db.execute("DROP TABLE notes_fts_data")
            roots = dict(db.execute("SELECT name, rootpage FROM sqlite_master"))
            page = db.execute("PRAGMA page_size").fetchone()[0]
            db.commit()
        finally:
            db.close()
        if how == "malformed":  # the root pages of runs and notes overwritten
            with open(self.store, "r+b") as f:
                for table in ("runs", "notes"):
                    f.seek((roots[table] - 1) * page)
                    f.write(b"\x0d" + b"\xff" * (page - 1))

    def test_damaged_store(self):
        """A store with a column missing, a malformed image or a broken full-text index: every
        command that reads or writes the part damaged exits 2 with one sentence naming the store
        and what to do (it exited 1 with SQLite's words alone: "no such column: backend",
        "database disk image is malformed", "vtable constructor failed"); a run still measures
        and warns; what is not damaged still reads."""
        notes_file = self.write("notes.json", "")
        every = [["history"], ["history", "--json"], ["diff", "@0", "@0"], ["notes", "list"],
                 ["notes", "add", "x"], ["notes", "search", "base"], ["notes", "show", "1"],
                 ["notes", "export", "-"], ["notes", "import", notes_file]]
        fts = [["notes", "add", "x"], ["notes", "search", "base"], ["notes", "import", notes_file]]
        for how, says, failing in (("column", "no such column", every),
                                   ("malformed", "database disk image is malformed", every),
                                   ("fts", "vtable constructor failed", fts)):
            self.damaged_store(how)
            with open(notes_file, "w") as f:  # what a good store exports
                f.write('{"kind": "kprof-notes", "version": 1, "notes": [{"at": 1, "text": "t"}]}')
            for args in every:
                p = self.kprof(*args, expect=2 if args in failing else 0)
                if args in failing:
                    self.assertRegex(p.stderr, r"^kprof: error: store %s is damaged \(.*\): move it "
                                     r"aside \(kprof then makes a new store\) or point "
                                     r"KPROF_STORE elsewhere\n$" % re.escape(self.store),
                                     "%s: kprof %s" % (how, " ".join(args)))
                    if how != "column":
                        self.assertIn(says, p.stderr)
            p = self.run_add(expect=0)
            self.assertIn("median", p.stdout)
            if how != "fts":
                self.assertIn("kprof: warning: not recorded in the history: store %s is damaged"
                              % self.store, p.stderr)

    def test_damaged_ceilings(self):
        """A store whose ceilings table is damaged: run, sweep and caps say once that they go on
        without the bandwidth ceiling (they went on silently, as if none had been measured)."""
        self.run_add(expect=0)
        db = sqlite3.connect(self.store)
        db.execute("ALTER TABLE ceilings RENAME COLUMN copy_gbs TO damaged")
        db.commit()
        db.close()
        ceiling = ("kprof: warning: store %s is damaged (cannot read the bandwidth ceiling"
                   % self.store)
        for p in (self.run_add(expect=0),
                  self.kprof("sweep", "k.cl", "--entry", "demo_add", "--grid", "4096",
                             "--tg-list", "32,64", "--iters", "2", "--buffers", SPEC, expect=0),
                  self.kprof("caps", expect=0), self.kprof("caps", "--json", expect=0)):
            self.assertEqual(p.stderr.count(ceiling), 1, p.stderr)
            self.assertIn("going on without the bandwidth ceiling\n", p.stderr)
        json.loads(p.stdout)  # caps --json still writes its JSON

    def test_unwritable_store_says_so(self):
        """A store kprof may not write (run as another user here when the test is root, who
        writes anything): a note cannot be added and the error says the store cannot be written,
        naming it, whether the store exists or would be made; reading it still works."""
        folder = os.path.join(self.tmp, "shared")
        os.makedirs(folder)
        store = os.path.join(folder, "store.db")
        self.kprof("notes", "add", "kept", env={"KPROF_STORE": store}, expect=0)
        os.chmod(self.tmp, 0o755)
        os.chmod(folder, 0o555)
        os.chmod(store, 0o444)

        def as_other():
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)

        try:
            for path in (store, os.path.join(folder, "new.db")):
                env = dict(os.environ, KPROF_STORE=path, KPROF_HOME=folder)
                p = subprocess.run([kptest.KPROF, "notes", "add", "x"], env=env, text=True,
                                   capture_output=True, preexec_fn=as_other)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("kprof: error: store %s cannot be written (" % path, p.stderr)
                self.assertIn("or point KPROF_STORE at a file that can be", p.stderr)
            p = subprocess.run([kptest.KPROF, "notes", "list", "--json"], text=True,
                               env=dict(os.environ, KPROF_STORE=store, KPROF_HOME=folder),
                               capture_output=True, preexec_fn=as_other)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual([n["text"] for n in json.loads(p.stdout)["notes"]], ["kept"])
        finally:
            os.chmod(folder, 0o755)
            os.chmod(store, 0o644)

    # ---- a store left by a crashed writer, held by another, or not a file ---------------------

    def test_hot_journal_read(self):
        """A writer that died mid-transaction leaves a hot journal: a read rolls it back and reads
        the store as it was committed (it was 'not a kprof store', exit 2)."""
        self.run_add(expect=0)
        pid = os.fork()
        if pid == 0:  # the crashed writer: a transaction spilled to the file, never committed
            try:
                db = sqlite3.connect(self.store, isolation_level=None)
                db.execute("PRAGMA cache_size = 1")
                db.execute("BEGIN")
                for i in range(300):
                    db.execute("INSERT INTO notes (at, text) VALUES (?, ?)", (i, "x" * 2000))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        self.assertTrue(os.path.exists(self.store + "-journal"))
        runs = self.history()
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["kernel"], "demo_add")
        p = self.kprof("notes", "list", "--json", expect=0)
        self.assertEqual(json.loads(p.stdout)["count"], 0)
        p = self.kprof("diff", "@0", "@0", expect=0)
        self.assertNotIn("not a kprof store", p.stderr)

    def test_busy_store(self):
        """A store locked past 5 s is busy (exit 1), not 'not a kprof store' (exit 2)."""
        self.run_add(expect=0)
        db = sqlite3.connect(self.store, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")
            t0 = time.monotonic()
            p = self.kprof("history", expect=1)
            self.assertGreaterEqual(time.monotonic() - t0, 4)
            self.assertIn("the store is busy", p.stderr)
            self.assertNotIn("not a kprof store", p.stderr)
        finally:
            db.close()
        self.assertEqual(len(self.history()), 1)

    def test_fifo_store(self):
        """A FIFO as the store is refused at once (it hung): reads exit 2 naming it; a run still
        measures, warns, and succeeds."""
        fifo = os.path.join(self.tmp, "store.fifo")
        os.mkfifo(fifo)
        env = {"KPROF_STORE": fifo}
        for args in (["history"], ["notes", "list"], ["notes", "add", "x"]):
            p = self.kprof(*args, env=env, expect=2, timeout=30)
            self.assertIn(fifo, p.stderr)
            self.assertIn("is a FIFO", p.stderr)
        p = self.run_add("--json", env=env, expect=0, timeout=60)
        self.assertEqual(json.loads(p.stdout)["entry"], "demo_add")
        self.assertIn("kprof: warning: not recorded in the history: ", p.stderr)
        self.assertIn("is a FIFO", p.stderr)
        p = self.kprof("history", env={"KPROF_STORE": "/dev/null"}, expect=2, timeout=30)
        self.assertIn("is a character device", p.stderr)


if __name__ == "__main__":
    kptest.main()
