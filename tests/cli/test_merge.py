"""kprof merge: per-host traces put on one time base. The traces are real ones (kprof trace of
gen_trace.py, whose timelines the records fix; cl_app on PoCL where it was built), and "another
host" is a copy of one rewritten with sqlite3 the way a host whose CLOCK_MONOTONIC is X behind
would have recorded it: every monotonic time minus X, CLOCK_REALTIME kept, another host name and
boot id. The merge must put the copy's events back exactly on the original's times, say X in the
hosts table and a note, and state an uncertainty that covers its error. Also: one host (no shift
at all), pid collisions, older formats, every bad input, and every reader of the result."""

import json
import os
import shutil
import sqlite3
import sys
import tempfile

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
APP = os.environ.get("KPROF_CL_APP")
V1 = os.path.join(kptest.SOURCE_DIR, "tests", "data", "trace-v1.kprof")
X = 12345678901  # host B's CLOCK_MONOTONIC is 12.345678901 s behind host A's
STRIDE = 4194304

TIME_COLUMNS = (("events", ("start_ns", "end_ns", "queued_ns", "submitted_ns")),
                ("processes", ("start_ns", "end_ns")), ("clocks", ("mono_ns",)),
                ("notes", ("time_ns",)))


def other_host(src, dst, behind, host="hostB", boot="boot-of-host-b", pid_delta=1,
               last_pair_real=0):
    """A copy of src as host `host` would have recorded it, its monotonic clock `behind` ns
    behind src's host: every monotonic time minus behind, real_ns kept. pid_delta moves its
    pids (0: the same pids as src); last_pair_real adds to the last clock pair's real_ns (the
    host's clock slewed or stepped during the run)."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    for table, cols in TIME_COLUMNS:
        db.execute("UPDATE %s SET %s" % (table, ", ".join("%s = %s - %d" % (c, c, behind)
                                                           for c in cols)))
    for key in ("start_ns", "end_ns"):
        db.execute("UPDATE meta SET value = CAST(CAST(value AS INTEGER) - ? AS TEXT) "
                   "WHERE key = ?", (behind, key))
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('host', ?)", (host,))
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot_id', ?)", (boot,))
    db.execute("UPDATE processes SET host = ?, boot_id = ?, pid = pid + ?", (host, boot, pid_delta))
    db.execute("UPDATE events SET pid = pid + ?", (pid_delta,))
    if last_pair_real:
        db.execute("UPDATE clocks SET real_ns = real_ns + ? WHERE rowid = (SELECT MAX(rowid) "
                   "FROM clocks)", (last_pair_real,))
    db.commit()
    db.close()


def estimate(path):
    """The documented estimate (docs/formats/trace.md, "Merged traces"), written again here:
    (offset, uncertainty) of the host of the trace at path."""
    db = sqlite3.connect(path)
    pairs = db.execute("SELECT mono_ns, real_ns, uncertainty_ns FROM clocks").fetchall()
    db.close()
    used = [(r - m, u) for m, r, u in pairs if r > 0 and u >= 0]
    lo, hi = min(d for d, _ in used), max(d for d, _ in used)
    spread = hi - lo
    return lo + spread // 2, max(u for _, u in used) + (spread + 1) // 2


def spread(path):
    """The range of the offsets a trace's clock pairs give."""
    db = sqlite3.connect(path)
    d = [r - m for (m, r) in db.execute("SELECT mono_ns, real_ns FROM clocks WHERE real_ns > 0")]
    db.close()
    return max(d) - min(d)


def rows(path, sql, *args):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def timeline(path, process):
    """Every event of a process row: (kind, name, start, end, queued, submitted), in id order."""
    return rows(path, "SELECT e.kind, s.text, e.start_ns, e.end_ns, e.queued_ns, e.submitted_ns "
                      "FROM events e LEFT JOIN strings s ON s.id = e.name WHERE e.process = ? "
                      "ORDER BY e.id", process)


def meta(path):
    return dict(rows(path, "SELECT key, value FROM meta"))


class Merge(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The traces every test starts from, made once (kprof trace of gen_trace.py).
        cls.made = tempfile.mkdtemp(prefix="kprof-merge-")
        for name, args in (("a.kprof", ["launch-bound", "--kernels", "200", "--seconds", "0.05"]),
                           ("b.kprof", ["two-kernels", "--kernels", "30", "--seconds", "0.05"]),
                           ("d.kprof", ["dropped", "--kernels", "20", "--seconds", "0.05"])):
            p = kptest.run(["trace", "-o", os.path.join(cls.made, name), "--", sys.executable,
                            GEN] + args)
            if p.returncode != 0:
                raise AssertionError("kprof trace failed:\n" + p.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.made, ignore_errors=True)

    def take(self, name, as_name=None):
        dst = os.path.join(self.tmp, as_name or name)
        shutil.copy(os.path.join(self.made, name), dst)
        return dst

    def merge(self, *args, expect=0):
        p = self.kprof("merge", *args, expect=expect)
        return p

    def merge_json(self, *args):
        p = self.kprof("merge", *args, "--json", expect=0)
        return json.loads(p.stdout), p

    def leftovers(self):
        return sorted(f for f in os.listdir(self.tmp) if ".tmp." in f)

    # ---- (a) hosts whose clocks differ by a known offset ----------------------------------

    def test_other_host_lands_on_the_reference_times(self):
        a = self.take("a.kprof")
        b = os.path.join(self.tmp, "b.kprof")
        other_host(a, b, X)
        out = os.path.join(self.tmp, "m.kprof")
        j, p = self.merge_json(a, b, "-o", out)
        hosts = {h["host"]: h for h in j["hosts"]}
        self.assertEqual(len(hosts), 2, j)
        self.assertTrue(hosts["hostB"]["inputs"] == [b] and not hosts["hostB"]["reference"])
        ref = [h for h in j["hosts"] if h["reference"]]
        self.assertEqual([h["inputs"] for h in ref], [[a]])
        self.assertEqual(ref[0]["offset_ns"], 0)
        self.assertEqual(ref[0]["uncertainty_ns"], 0)
        # Both hosts' pairs give offsets exactly X apart: the shift is X to the nanosecond.
        self.assertEqual(hosts["hostB"]["offset_ns"], X)
        ua, ub = estimate(a)[1], estimate(b)[1]
        self.assertEqual(hosts["hostB"]["uncertainty_ns"], ua + ub)
        self.assertEqual(hosts["hostB"]["pairs"], len(rows(b, "SELECT * FROM clocks")))
        self.assertGreaterEqual(hosts["hostB"]["pairs"], 2)  # kprof's own, at start and end
        # The hosts table says the same.
        self.assertEqual(rows(out, "SELECT host, offset_ns, uncertainty_ns, pairs, inputs FROM "
                                   "hosts WHERE host = 'hostB'"),
                         [("hostB", X, ua + ub, hosts["hostB"]["pairs"], b)])
        # The copy's events are back on the original's times, every one of them.
        original = timeline(a, 1)
        self.assertEqual(len(original), 601)
        self.assertEqual(timeline(out, 1), original)
        self.assertEqual(timeline(out, 2), original)
        # ... and so are its process, clock pairs and meta.
        self.assertEqual(rows(out, "SELECT start_ns, end_ns FROM processes WHERE id = 2"),
                         rows(a, "SELECT start_ns, end_ns FROM processes"))
        pairs_a = rows(a, "SELECT mono_ns, real_ns FROM clocks ORDER BY rowid")
        self.assertEqual(rows(out, "SELECT mono_ns, real_ns FROM clocks ORDER BY rowid"),
                         pairs_a + pairs_a)
        m, ma = meta(out), meta(a)
        self.assertEqual((m["start_ns"], m["end_ns"]), (ma["start_ns"], ma["end_ns"]))
        self.assertEqual((m["host"], m["boot_id"]), (ma["host"], ma["boot_id"]))
        # What was applied is said: a note of the whole trace, the same line on stderr.
        note = ("host hostB (%s): shifted by +12.345678901 s ± " % b)
        notes = [t for (t,) in rows(out, "SELECT text FROM notes WHERE process IS NULL")]
        self.assertEqual(len(notes), 1, notes)
        self.assertTrue(notes[0].startswith(note), notes)
        self.assertIn("from %d clock pairs" % hosts["hostB"]["pairs"], notes[0])
        self.assertIn("assumes the hosts' CLOCK_REALTIME agree (NTP/PTP)", notes[0])
        self.assertIn("kprof: " + notes[0] + "\n", p.stderr)
        self.assertEqual(j["notes"], notes)
        self.assertIn("kprof: 1202 events from 2 processes of 2 traces (2 hosts) in %s" % out,
                      p.stderr)
        # Readers see the note too.
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        self.assertEqual(r["events"], 1202)

    def test_reference_picks_the_time_base(self):
        a = self.take("a.kprof")
        b = os.path.join(self.tmp, "b.kprof")
        other_host(a, b, X)
        out = os.path.join(self.tmp, "m.kprof")
        j, _ = self.merge_json(a, b, "-o", out, "--reference", b)
        self.assertEqual(j["reference"], b)
        host_a = [h for h in j["hosts"] if h["inputs"] == [a]][0]
        self.assertEqual(host_a["offset_ns"], -X)
        # Everything is on B's clock now: B's own times untouched, A's moved back by X.
        self.assertEqual(timeline(out, 2), timeline(b, 1))
        self.assertEqual(timeline(out, 1), timeline(b, 1))
        self.assertEqual(meta(out)["host"], "hostB")
        self.assertIn("shifted by -12.345678901 s", json.dumps(j["notes"], ensure_ascii=False))

    def test_a_clock_that_drifted_widens_the_uncertainty(self):
        a = self.take("a.kprof")
        b, c = os.path.join(self.tmp, "b.kprof"), os.path.join(self.tmp, "c.kprof")
        other_host(a, b, X)
        drift = 3000001  # the last pair of host C says its offset grew by 3 ms (NTP stepped it)
        other_host(a, c, X, host="hostC", boot="boot-of-host-c", pid_delta=2,
                   last_pair_real=drift)
        out = os.path.join(self.tmp, "m.kprof")
        j, _ = self.merge_json(a, b, c, "-o", out)
        hosts = {h["host"]: h for h in j["hosts"]}
        steady, drifted = hosts["hostB"], hosts["hostC"]
        # The documented estimate, computed here independently.
        oa, ua = estimate(a)
        oc, uc = estimate(c)
        self.assertEqual(drifted["offset_ns"], oc - oa)
        self.assertEqual(drifted["uncertainty_ns"], ua + uc)
        # Wider by about half the drift (less the spread A's own pairs had, which the drift
        # may partly cancel).
        spread_a = spread(a)
        self.assertGreaterEqual(drifted["uncertainty_ns"] - steady["uncertainty_ns"],
                                drift // 2 - spread_a - 1)
        # C's events are off by the estimate's error, which the stated uncertainty covers.
        err = drifted["offset_ns"] - X
        self.assertNotEqual(err, 0)
        self.assertLessEqual(abs(err), drifted["uncertainty_ns"])
        original = timeline(a, 1)
        moved = timeline(out, 3)
        self.assertEqual(len(moved), len(original))
        for o, m in zip(original, moved):
            self.assertEqual(m[2] - o[2], err)
        self.assertEqual(timeline(out, 2), original)
        note_c = [n for n in j["notes"] if n.startswith("host hostC")]
        self.assertEqual(len(note_c), 1, j["notes"])
        self.assertRegex(note_c[0], r"shifted by \+12\.34\d+ s ± 1\.\d ms from 2 clock pairs")

    # ---- (b) one host ----------------------------------------------------------------------

    def test_one_host_is_never_shifted(self):
        a, b = self.take("a.kprof"), self.take("b.kprof")
        out = os.path.join(self.tmp, "m.kprof")
        j, p = self.merge_json(a, b, "-o", out)
        self.assertEqual(len(j["hosts"]), 1)
        h = j["hosts"][0]
        self.assertEqual((h["offset_ns"], h["uncertainty_ns"], h["reference"], h["inputs"]),
                         (0, 0, True, [a, b]))
        self.assertEqual(h["boot_id"], meta(a)["boot_id"])
        self.assertEqual(j["notes"], [])
        self.assertNotIn("shifted", p.stderr)
        # Times exactly as recorded; strings interned again (the two programs name different
        # kernels), each event keeping its own name.
        self.assertEqual(timeline(out, 1), timeline(a, 1))
        self.assertEqual(timeline(out, 2), timeline(b, 1))
        texts = [t for (t,) in rows(out, "SELECT text FROM strings")]
        self.assertEqual(len(texts), len(set(texts)))
        self.assertEqual(rows(out, "SELECT COUNT(*) FROM notes WHERE process IS NULL"), [(0,)])
        m = meta(out)
        self.assertEqual(int(m["start_ns"]), min(int(meta(a)["start_ns"]), int(meta(b)["start_ns"])))
        self.assertEqual(int(m["end_ns"]), max(int(meta(a)["end_ns"]), int(meta(b)["end_ns"])))
        # Correlation stays per process row: every launch still finds its kernel.
        self.assertEqual(rows(out, "SELECT COUNT(*) FROM events c JOIN events k ON k.process = "
                                   "c.process AND k.correlation = c.correlation WHERE c.kind = 3 "
                                   "AND k.kind = 4"), [(260,)])

    # ---- (c) pids --------------------------------------------------------------------------

    def test_pids_that_collide_are_made_distinct(self):
        a = self.take("a.kprof")
        a2 = self.take("a.kprof", "a2.kprof")  # the same pid on the same host: a later run
        b = os.path.join(self.tmp, "b.kprof")
        other_host(a, b, X, pid_delta=0)  # and on another host (a container)
        out = os.path.join(self.tmp, "m.kprof")
        j, p = self.merge_json(a, a2, b, "-o", out)
        (pid,), = rows(a, "SELECT pid FROM processes")
        self.assertEqual(rows(out, "SELECT id, pid, os_pid FROM processes ORDER BY id"),
                         [(1, pid, pid), (2, pid + STRIDE, pid), (3, pid + 2 * STRIDE, pid)])
        for process in (1, 2, 3):
            (got,), = rows(out, "SELECT DISTINCT pid FROM events WHERE process = ?", process)
            self.assertEqual(got, pid + (process - 1) * STRIDE)
        self.assertEqual(j["pid_shifts"], [{"input": a2, "shift": STRIDE},
                                           {"input": b, "shift": 2 * STRIDE}])
        for path, k in ((a2, 1), (b, 2)):
            line = ("%s: pids shifted by +%d (pid %d is also a process of %s): processes.os_pid "
                    "keeps the pids the system gave" % (path, k * STRIDE, pid, a))
            self.assertIn(line, j["notes"])
            self.assertIn("kprof: " + line + "\n", p.stderr)
        # Readers see three processes, not one: three tracks of host threads.
        chrome = os.path.join(self.tmp, "m.json")
        self.kprof("export", out, "--chrome", chrome, expect=0)
        pids = {e["pid"] for e in json.load(open(chrome))["traceEvents"]
                if e.get("ph") == "X" and e.get("cat", "").startswith("api")}
        self.assertTrue({pid, pid + STRIDE, pid + 2 * STRIDE} <= pids, pids)

    def set_pid(self, path, pid):
        """Give the one process of a trace (and its events) another pid."""
        db = sqlite3.connect(path)
        db.execute("UPDATE processes SET pid = ?", (pid,))
        db.execute("UPDATE events SET pid = ?", (pid,))
        db.commit()
        db.close()

    def test_pids_past_int32_get_the_smallest_free_ids(self):
        # Perfetto's pid is an int32 (Chrome trace readers take it as a uint32): a shift that
        # would put a pid past 2^31 - 1 gives the input's pids the smallest free ids instead.
        big = 2147483000
        a, a2 = self.take("a.kprof"), self.take("a.kprof", "a2.kprof")
        self.set_pid(a, big)
        self.set_pid(a2, big)
        out = os.path.join(self.tmp, "m.kprof")
        j, p = self.merge_json(a, a2, "-o", out)
        self.assertEqual(rows(out, "SELECT id, pid, os_pid FROM processes ORDER BY id"),
                         [(1, big, big), (2, 1, big)])
        self.assertEqual(rows(out, "SELECT process, pid, COUNT(*) FROM events GROUP BY process, "
                                   "pid ORDER BY process"),
                         [(1, big, 601), (2, 1, 601)])
        self.assertEqual(j["pid_shifts"], [{"input": a2, "shift": None,
                                            "pids": [{"os_pid": big, "pid": 1}]}])
        line = ("%s: pids given the smallest free ids, from 1 (pid %d is also a process of %s, "
                "and a shift by a multiple of 4194304 would take them past 2147483647, the "
                "largest pid trace viewers read): processes.os_pid keeps the pids the system "
                "gave" % (a2, big, a))
        self.assertEqual(j["notes"], [line])
        self.assertIn("kprof: " + line + "\n", p.stderr)
        # A third copy takes the next free id.
        a3 = self.take("a.kprof", "a3.kprof")
        self.set_pid(a3, big)
        self.merge(a, a2, a3, "-o", out, "--force")
        self.assertEqual(rows(out, "SELECT pid FROM processes ORDER BY id"), [(big,), (1,), (2,)])

    def test_a_pid_out_of_range_is_refused(self):
        # Two copies of a trace whose pid is near the top of the int64 range (an edited or
        # damaged file): refused at once, not a search through 2^41 shifts.
        a, a2 = self.take("a.kprof"), self.take("a.kprof", "a2.kprof")
        for path in (a, a2):
            self.set_pid(path, 9223372036854775000)
        out = os.path.join(self.tmp, "m.kprof")
        p = self.kprof("merge", a, a2, "-o", out, expect=2, timeout=60)
        self.assertIn("kprof: error: %s is damaged or truncated (pids out of range: pid "
                      "9223372036854775000)" % a, p.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(self.leftovers(), [])
        self.set_pid(a2, -5)
        p = self.kprof("merge", self.take("b.kprof"), a2, "-o", out, expect=2, timeout=60)
        self.assertIn("%s is damaged or truncated (pids out of range: pid -5)" % a2, p.stderr)

    def test_a_time_that_a_shift_would_overflow_is_refused(self):
        # SQLite makes an integer sum that overflows a REAL: a time that the shift would take
        # past the int64 range (an edited file) is refused, naming the file and the column.
        a = self.take("a.kprof")
        b = os.path.join(self.tmp, "b.kprof")
        other_host(a, b, X)
        db = sqlite3.connect(b)
        db.execute("UPDATE events SET end_ns = 9223372036854775000 WHERE id = 7")
        db.commit()
        db.close()
        out = os.path.join(self.tmp, "m.kprof")
        p = self.kprof("merge", a, b, "-o", out, expect=2)
        self.assertIn("kprof: error: %s is damaged or truncated (events.end_ns out of range: "
                      "moved by +12.345678901 s it leaves the int64 range)" % b, p.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(self.leftovers(), [])
        # The other way: onto b's time base, a's times move back by X.
        db = sqlite3.connect(a)
        db.execute("UPDATE processes SET start_ns = -9223372036854775000")
        db.commit()
        db.close()
        p = self.kprof("merge", a, b, "-o", out, "--reference", b, expect=2)
        self.assertIn("%s is damaged or truncated (processes.start_ns out of range: moved by "
                      "-12.345678901 s it leaves the int64 range)" % a, p.stderr)

    # ---- older formats ---------------------------------------------------------------------

    def test_format_1_input_merges_unshifted_with_a_note(self):
        a = self.take("a.kprof")
        v1 = os.path.join(self.tmp, "v1.kprof")
        shutil.copy(V1, v1)
        out = os.path.join(self.tmp, "m.kprof")
        j, p = self.merge_json(a, v1, "-o", out)
        old = [h for h in j["hosts"] if h["inputs"] == [v1]][0]
        self.assertEqual((old["offset_ns"], old["uncertainty_ns"], old["pairs"], old["host"]),
                         (0, None, 0, None))
        note = ("an unnamed host (%s): no clock pairs (trace format 1 or 2 records none): its "
                "offset from host " % v1)
        self.assertTrue(any(n.startswith(note) and n.endswith(
            "is unknown and taken as 0; its times line up with the others only if it ran on the "
            "same boot of the same host") for n in j["notes"]), j["notes"])
        self.assertIn("kprof: " + note, p.stderr)
        self.assertEqual(rows(out, "SELECT uncertainty_ns FROM hosts WHERE inputs = ?", v1),
                         [(None,)])
        # Its events as they were (the v1 file's launched column is not carried: readers
        # compute it), and its rows read like any other.
        self.assertEqual(timeline(out, 2), timeline(v1, 1))
        n1 = rows(v1, "SELECT COUNT(*) FROM events")[0][0]
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        self.assertEqual(r["events"], 601 + n1)

    def test_reference_without_pairs_shifts_nothing(self):
        a = self.take("a.kprof")
        v1 = os.path.join(self.tmp, "v1.kprof")
        shutil.copy(V1, v1)
        out = os.path.join(self.tmp, "m.kprof")
        j, _ = self.merge_json(v1, a, "-o", out)
        self.assertEqual(j["reference"], v1)
        host_a = [h for h in j["hosts"] if h["inputs"] == [a]][0]
        self.assertEqual((host_a["offset_ns"], host_a["uncertainty_ns"]), (0, None))
        self.assertIn("not shifted: the reference, an unnamed host (%s), has no clock pairs, so "
                      "the offset between them is unknown and taken as 0" % v1,
                      " ".join(j["notes"]))
        self.assertEqual(timeline(out, 2), timeline(a, 1))

    def test_format_2_input(self):
        a = self.take("a.kprof")
        v2 = self.take("b.kprof", "v2.kprof")
        db = sqlite3.connect(v2)  # what kprof wrote before format 3: no job columns, no clocks
        db.execute("DROP TABLE clocks")
        for col in ("launcher", "rank", "local_rank", "world_size", "local_world_size", "node",
                    "restart", "host", "boot_id"):
            db.execute("ALTER TABLE processes DROP COLUMN %s" % col)
        db.execute("DELETE FROM meta WHERE key IN ('host', 'boot_id')")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'format_version'")
        db.execute("PRAGMA user_version = 2")
        db.commit()
        db.close()
        out = os.path.join(self.tmp, "m.kprof")
        j, _ = self.merge_json(a, v2, "-o", out)
        self.assertEqual(len(j["hosts"]), 2)
        self.assertIn("no clock pairs (trace format 1 or 2 records none)", " ".join(j["notes"]))
        self.assertEqual(timeline(out, 2), timeline(v2, 1))
        self.assertEqual(rows(out, "SELECT rank, host, boot_id, os_pid FROM processes WHERE id = 2"),
                         [(None, None, None, rows(v2, "SELECT pid FROM processes")[0][0])])

    # ---- (e) the result reads everywhere ---------------------------------------------------

    def test_merged_trace_reads_in_every_reader(self):
        a, b, d = self.take("a.kprof"), self.take("b.kprof"), self.take("d.kprof")
        # Metrics: a flops value and a user key, whose string the merge must intern again.
        db = sqlite3.connect(b)
        db.execute("UPDATE events SET flops = 1e6 WHERE id = (SELECT MIN(id) FROM events "
                   "WHERE kind = 4)")
        db.execute("INSERT INTO strings (text) VALUES ('tiles')")
        db.execute("INSERT INTO metrics (event, key, value) SELECT MIN(id), (SELECT id FROM "
                   "strings WHERE text = 'tiles'), 42 FROM events WHERE kind = 4")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'metrics'")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'exit_status'")
        db.commit()
        db.close()
        out = os.path.join(self.tmp, "m.kprof")
        self.merge(a, b, d, "-o", out)
        counts = [rows(p, "SELECT COUNT(*) FROM events")[0][0] for p in (a, b, d)]
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        self.assertEqual(r["events"], sum(counts))
        self.assertEqual(r["completeness"]["records_dropped"], 7)
        dev = {g["name"]: g["calls"] for g in r["device"]}
        self.assertEqual(dev, {"small(float*, int)": 220, "steady": 30, "tuned": 30})
        self.assertEqual(rows(out, "SELECT COUNT(*) FROM processes"), [(3,)])
        m = meta(out)
        self.assertEqual(m["format_version"], "3")
        self.assertEqual(m["exit_status"], "3")  # the first non-zero
        self.assertEqual(m["dropped"], "7")
        self.assertEqual(m["metrics"], "2")
        self.assertEqual(m["collectors"], meta(a)["collectors"])
        self.assertEqual(m["merged_from"], "\n".join((a, b, d)))
        self.assertEqual(m["command"], "; ".join(meta(p)["command"] for p in (a, b, d)))
        self.assertEqual(rows(out, "PRAGMA user_version"), [(3,)])
        self.assertEqual(rows(out, "SELECT s.text, m.value FROM metrics m JOIN strings s ON "
                                   "s.id = m.key"), [("tiles", 42.0)])
        self.assertEqual(rows(out, "SELECT s.text, e.flops FROM events e JOIN strings s ON "
                                   "s.id = e.name WHERE e.flops IS NOT NULL"), [("steady", 1e6)])
        for fmt, name in (("--chrome", "m.json"), ("--perfetto", "m.pftrace"),
                          ("--hatchet", "h.json"), ("--csv", "m.csv"), ("--json", "t.json")):
            target = os.path.join(self.tmp, name)
            self.kprof("export", out, fmt, target, expect=0)
            self.assertGreater(os.path.getsize(target), 0, fmt)
        chrome = json.load(open(os.path.join(self.tmp, "m.json")))["traceEvents"]
        self.assertEqual(sum(1 for e in chrome if e.get("ph") == "X" and e.get("name") == "steady"),
                         30)
        self.kprof("report", out, "--tree", expect=0)
        d_ = json.loads(self.kprof("diff", a, out, "--json", expect=0).stdout)
        self.assertIn("device", d_)
        # A merged trace merges again, with what it holds: its hosts rows after the merge's
        # own (one host here: nothing shifted), its inputs named through it.
        again = os.path.join(self.tmp, "again.kprof")
        a3 = self.take("a.kprof", "a3.kprof")
        self.merge(out, a3, "-o", again)
        self.assertEqual(rows(again, "SELECT COUNT(*) FROM events"), [(sum(counts) + 601,)])
        self.assertEqual(rows(again, "SELECT COUNT(*) FROM processes WHERE os_pid <> pid"), [(1,)])
        host, boot = meta(a)["host"], meta(a)["boot_id"]
        pairs = [rows(p, "SELECT COUNT(*) FROM clocks")[0][0] for p in (out, a3)]
        self.assertEqual(rows(again, "SELECT id, host, boot_id, offset_ns, uncertainty_ns, pairs, "
                                     "inputs FROM hosts ORDER BY id"),
                         [(1, host, boot, 0, 0, sum(pairs), "%s\n%s" % (out, a3)),
                          (2, host, boot, 0, 0, pairs[0],
                           "%s: %s\n%s: %s\n%s: %s" % (out, a, out, b, out, d))])
        # Its notes of the whole trace say which input they came through; then the merge's own
        # (a3 is a's process again).
        db = sqlite3.connect(out)
        db.execute("INSERT INTO notes (process, time_ns, text) VALUES (NULL, NULL, 'a note')")
        db.commit()
        db.close()
        self.merge(out, a3, "-o", again, "--force")
        (pid,), = rows(a, "SELECT pid FROM processes")
        self.assertEqual([t for (t,) in rows(again, "SELECT text FROM notes WHERE process IS "
                                                    "NULL ORDER BY rowid")],
                         ["%s: a note" % out,
                          "%s: pids shifted by +%d (pid %d is also a process of %s): "
                          "processes.os_pid keeps the pids the system gave"
                          % (a3, STRIDE, pid, out)])

    def test_a_merged_trace_merges_again_on_another_time_base(self):
        # m: hosts A and B (B shifted by X onto A); then m with host C as the reference, whose
        # monotonic clock is Y behind A's: m moves by -Y, and its hosts rows come along with
        # their offsets and uncertainties on C's time base, and its notes with its name.
        Y = 5000000000
        a = self.take("a.kprof")
        b, c = os.path.join(self.tmp, "b.kprof"), os.path.join(self.tmp, "c.kprof")
        other_host(a, b, X)
        other_host(a, c, Y, host="hostC", boot="boot-of-host-c", pid_delta=2)
        m = os.path.join(self.tmp, "m.kprof")
        jm, _ = self.merge_json(a, b, "-o", m)
        again = os.path.join(self.tmp, "again.kprof")
        j, _ = self.merge_json(c, m, "-o", again)
        ua, ub, uc = estimate(a)[1], estimate(b)[1], estimate(c)[1]
        um = estimate(m)[1]  # m's pairs, b's shifted onto A's clock, give A's offset
        self.assertEqual(estimate(m)[0], estimate(a)[0])
        n = lambda p: rows(p, "SELECT COUNT(*) FROM clocks")[0][0]
        host_a, boot_a = meta(a)["host"], meta(a)["boot_id"]
        self.assertEqual(
            rows(again, "SELECT id, host, boot_id, offset_ns, uncertainty_ns, pairs, inputs "
                        "FROM hosts ORDER BY id"),
            [(1, "hostC", "boot-of-host-c", 0, 0, n(c), c),
             (2, host_a, boot_a, -Y, um + uc, n(m), m),
             (3, host_a, boot_a, -Y, um + uc, n(a), "%s: %s" % (m, a)),
             (4, "hostB", "boot-of-host-b", X - Y, ua + ub + um + uc, n(b), "%s: %s" % (m, b))])
        # The times went where the rows say: b's events are a's, moved by -Y.
        moved = [(k, name, s + Y, e + Y, q, sub) for (k, name, s, e, q, sub) in timeline(again, 3)]
        self.assertEqual([t[:4] for t in moved], [t[:4] for t in timeline(a, 1)])
        notes = [t for (t,) in rows(again, "SELECT text FROM notes WHERE process IS NULL")]
        self.assertEqual(len(notes), 2, notes)
        self.assertIn("%s: %s" % (m, jm["notes"][0]), notes)
        self.assertTrue(jm["notes"][0].startswith("host hostB (%s): shifted by +12.345678901 s"
                                                  % b))
        self.assertIn(j["notes"][0], notes)
        self.assertTrue(j["notes"][0].startswith("host %s (%s): shifted by -5.000000000 s"
                                                 % (host_a, m)), j["notes"])

    # ---- (d) bad input ----------------------------------------------------------------------

    def assert_refused(self, args, message, out=None, code=2):
        p = self.kprof("merge", *args, expect=code)
        self.assertIn(message, p.stderr)
        self.assertTrue(p.stderr.startswith("kprof: error: "), p.stderr)
        if out:
            self.assertFalse(os.path.exists(out), out)
        self.assertEqual(self.leftovers(), [])
        return p

    def test_every_bad_input_is_refused(self):
        a = self.take("a.kprof")
        out = os.path.join(self.tmp, "m.kprof")
        self.assert_refused(["-o", out], "give the traces to merge", out)
        self.assert_refused([a], "give the output: -o OUT.kprof")
        self.assert_refused([a, "-o"], "-o needs a value")
        self.assert_refused([a, "-o", out, "--bogus"], "unknown option '--bogus'", out)
        missing = os.path.join(self.tmp, "missing.kprof")
        self.assert_refused([a, missing, "-o", out], missing, out)
        text = self.write("notes.txt", "not a trace\n")
        self.assert_refused([a, text, "-o", out], "%s is not a kprof trace" % text, out)
        self.assert_refused([a, self.tmp, "-o", out], self.tmp, out)  # a folder
        fifo = os.path.join(self.tmp, "fifo.kprof")
        os.mkfifo(fifo)
        self.assert_refused([a, fifo, "-o", out], fifo, out)
        os.unlink(fifo)
        # Cut short: the header says more pages than the file holds.
        short = os.path.join(self.tmp, "short.kprof")
        with open(a, "rb") as f:
            data = f.read()
        with open(short, "wb") as f:
            f.write(data[:len(data) // 2])
        self.assert_refused([a, short, "-o", out], "%s is damaged or truncated" % short, out)
        # Damaged inside: pages of events overwritten; found while it is copied.
        bad = os.path.join(self.tmp, "bad.kprof")
        page = rows(a, "PRAGMA page_size")[0][0]
        with open(bad, "wb") as f:
            f.write(data[:2 * page] + b"\xa5" * (len(data) - 4 * page) + data[-2 * page:])
        self.assert_refused([a, bad, "-o", out], "%s is damaged or truncated" % bad, out)
        newer = self.take("a.kprof", "newer.kprof")
        db = sqlite3.connect(newer)
        db.execute("PRAGMA user_version = 9")
        db.commit()
        db.close()
        self.assert_refused([a, newer, "-o", out], "%s is a kprof trace of format 9; this kprof "
                            "reads formats 1 to 3 (a newer kprof wrote it)" % newer, out)
        # The same file twice, by name or through a link.
        self.assert_refused([a, a, "-o", out], "%s is given twice" % a, out)
        link = os.path.join(self.tmp, "link.kprof")
        os.symlink(a, link)
        self.assert_refused([a, link, "-o", out], "%s is given twice" % link, out)
        self.assert_refused([a, "-o", out, "--reference", missing], "--reference %s: not one of "
                            "the traces merged" % missing, out)
        # The output: never an input, an existing file only with --force.
        before = open(a, "rb").read()
        self.assert_refused([a, self.take("b.kprof"), "-o", a, "--force"], a)
        self.assertEqual(open(a, "rb").read(), before)
        self.write("m.kprof", "keep me\n")
        self.assert_refused([a, "-o", out], out)
        self.assertEqual(open(out).read(), "keep me\n")
        self.merge(a, "-o", out, "--force")
        self.assertEqual(rows(out, "SELECT COUNT(*) FROM events"), [(601,)])
        self.assertEqual(self.leftovers(), [])

    def test_help(self):
        p = self.kprof("--help", expect=0)
        self.assertIn("  merge ", p.stdout)
        p = self.kprof("merge", "--help", expect=0)
        self.assertIn("usage: kprof merge A.kprof B.kprof ... -o OUT.kprof", p.stdout)


class MergeOpenCL(kptest.KprofTestCase):
    """The same on a real program's trace: each process's own clock pairs (start and end) count
    with kprof's."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_app was not built (no OpenCL ICD loader to link)")

    def test_real_trace_on_another_host(self):
        a = os.path.join(self.tmp, "a.kprof")
        self.kprof("trace", "-o", a, "--", APP, "3", expect=0, timeout=300)
        per_process = rows(a, "SELECT COUNT(*) FROM clocks WHERE process IS NOT NULL")[0][0]
        self.assertGreaterEqual(per_process, 2)
        self.assertTrue(all(h for (h,) in rows(a, "SELECT boot_id FROM processes")))
        b = os.path.join(self.tmp, "b.kprof")
        other_host(a, b, X)
        out = os.path.join(self.tmp, "m.kprof")
        j = json.loads(self.kprof("merge", a, b, "-o", out, "--json", expect=0).stdout)
        host_b = [h for h in j["hosts"] if h["host"] == "hostB"][0]
        self.assertEqual(host_b["offset_ns"], X)
        self.assertEqual(host_b["pairs"], rows(b, "SELECT COUNT(*) FROM clocks")[0][0])
        self.assertEqual(host_b["uncertainty_ns"], estimate(a)[1] + estimate(b)[1])
        n = rows(a, "SELECT COUNT(*) FROM processes")[0][0]
        for process in range(1, n + 1):
            self.assertEqual(timeline(out, n + process), timeline(a, process))
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        dev = {g["name"]: g["calls"] for g in r["device"]}
        self.assertEqual(dev["scale"], 6)


if __name__ == "__main__":
    kptest.main()
