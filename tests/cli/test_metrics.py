"""Metrics (issue 12): flops, bytes and user keys that events carry (KP_REC_METRIC records,
src/collect/record.h) through the real merge (`kprof trace --merge`) into the trace's columns
and metrics table, and out through every view: `kprof report` (text, --json, --csv, --trace
--json), --tree and --by (text, JSON, CSV), the Chrome, Perfetto and Hatchet exports. The trace
is written with klog.py, with known values and durations, so every rate is checked exactly:
GFLOP/s = flops / ns of the events that carry them (flops per ns are GFLOP per s).

The timeline (process 500, one thread; times after T0, 10 ms in all):
  train   range [0, 10 ms]       flops 3e9, bytes 1e8 (300 GFLOP/s, 10 GB/s), user key "epoch" 1
    step  range [1, 3 ms]        flops 1e9 (500 GFLOP/s)
      cudaLaunchKernel -> gemm   [1.2, 1.3 ms]  flops 2e8, bytes 1e7, tiles 16, occupancy_hint 0.5
      cudaLaunchKernel -> gemm   [2.1, 2.4 ms]  flops 4e8, bytes 3e7, tiles 48
    step  range [4, 6 ms]        no metrics: the row's rate stays 500 (not diluted to 250)
      cudaLaunchKernel -> relu   no metrics
      cudaMemcpy -> HtoD copy    1 MiB in 50 µs (its size is its bytes where a table shows them)
    cublasSgemm api [7, 7.2 ms]  flops 1e9 (5000 GFLOP/s): any kind may carry metrics
Two metric records the merge drops and counts: one before any event, one naming a range after a
kernel.
"""

import json
import os
import sqlite3
import struct
import subprocess
import sys

import kptest
import klog

GOLDEN = os.path.join(kptest.SOURCE_DIR, "tests", "golden")
UPDATE = os.environ.get("KPROF_GOLDEN_UPDATE") == "1"

T0 = 1_000_000_000
US = 1000
MS = 1000 * US

# name -> (flops, bytes, flops_ns, bytes_ns): the sums the tables must show (bytes_ns: the time
# of the events that carry bytes; a copy's size counts).
ROWS = {
    "train": (3e9, 1e8, 10 * MS, 10 * MS),
    "step": (1e9, None, 2 * MS, None),
    "gemm": (6e8, 4e7, 400 * US, 400 * US),
    "cublasSgemm": (1e9, None, 200 * US, None),
    "[CUDA memcpy HtoD]": (None, float(1 << 20), None, 50 * US),
}


def at(ns):
    return T0 + int(ns)


def write_records(d, broken=True):
    """The record file of the timeline above; broken: with the two metric records to drop."""
    w = klog.Writer(os.path.join(d, "500-cuda-%d.klog" % at(0)), 500, "python bench.py", at(0))
    s = w.string
    b = bytearray()
    KERNEL, RANGE, API = klog.KERNEL, klog.RANGE, klog.API

    def api(name, start, end, corr=0, flops=None):
        b.extend(klog.rec(API, name=s(name), tid=500, start=at(start), end=at(end),
                          correlation=corr, domain=klog.CUDA_RUNTIME))
        if flops is not None:
            b.extend(klog.metric(s("flops"), flops, API))

    def kernel(name, start, end, corr, metrics=()):
        b.extend(klog.rec(KERNEL, name=s(name), tid=500, start=at(start), end=at(end),
                          correlation=corr, device=0, stream=7, grid=(64, 1, 1),
                          block=(256, 1, 1), registers=32))
        for key, value in metrics:
            b.extend(klog.metric(s(key), value, KERNEL))

    def rng(name, start, end, rid, metrics=()):
        b.extend(klog.rec(RANGE, name=s(name), tid=500, start=at(start), end=at(end), rid=rid,
                          domain=klog.NVTX))
        for key, value in metrics:
            b.extend(klog.metric(s(key), value, RANGE))

    if broken:
        b.extend(klog.metric(s("flops"), 1, KERNEL))  # no event before it
    api("cudaLaunchKernel", 1100 * US, 1110 * US, corr=1)
    kernel("gemm", 1200 * US, 1300 * US, 1, [("flops", 2e8), ("bytes", 1e7), ("tiles", 16),
                                             ("occupancy_hint", 0.5)])
    if broken:
        b.extend(klog.metric(s("flops"), 1, RANGE))  # the event before it is a kernel
    api("cudaLaunchKernel", 2000 * US, 2010 * US, corr=2)
    kernel("gemm", 2100 * US, 2400 * US, 2, [("flops", 4e8), ("bytes", 3e7), ("tiles", 48)])
    rng("step", 1 * MS, 3 * MS, 2, [("flops", 1e9)])
    api("cudaLaunchKernel", 4100 * US, 4110 * US, corr=3)
    kernel("relu", 4200 * US, 4250 * US, 3)
    api("cudaMemcpy", 5000 * US, 5100 * US, corr=4)
    b.extend(klog.rec(klog.MEMCPY, name=s("[CUDA memcpy HtoD]"), tid=500, start=at(5020 * US),
                      end=at(5070 * US), correlation=4, nbytes=1 << 20, aux=klog.HTOD, device=0,
                      stream=7))
    rng("step", 4 * MS, 6 * MS, 3)
    api("cublasSgemm", 7 * MS, 7200 * US, flops=1e9)
    rng("train", 0, 10 * MS, 1, [("flops", 3e9), ("bytes", 1e8), ("epoch", 1)])
    w.write(bytes(b))
    w.close(end=at(10 * MS))


RUN_TXT = """kprof-trace-run 1
start_ns %d
end_ns %d
exit_status 0
collectors cuda
command python bench.py
""" % (T0, at(10 * MS))


def pb_fields(data):
    """The fields of a protobuf message: (number, wire type, value) — an int for varints and
    fixed64, bytes for length-delimited."""
    i, out = 0, []
    while i < len(data):
        key, i = varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(data, i)
        elif wt == 1:
            v = struct.unpack_from("<Q", data, i)[0]
            i += 8
        elif wt == 2:
            n, i = varint(data, i)
            v = data[i:i + n]
            i += n
        elif wt == 5:
            v = struct.unpack_from("<I", data, i)[0]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def varint(data, i):
    shift = v = 0
    while True:
        c = data[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def perfetto_slices(path):
    """Each slice begin of a .pftrace as (name, {argument: value}), decoded by hand (perfetto's
    protos: TracePacket 11 track_event, 12 interned_data; TrackEvent 4 debug_annotations, 10
    name_iid, 9 type; DebugAnnotation 1 name_iid, 10 name, 4 int_value, 5 double_value)."""
    names, args, slices = {}, {}, []
    with open(path, "rb") as f:
        trace = f.read()
    for num, _, packet in pb_fields(trace):
        if num != 1:
            continue
        fields = pb_fields(packet)
        for n, _, v in fields:
            if n != 12:
                continue
            for kind, _, entry in pb_fields(v):
                e = {k: val for k, _, val in pb_fields(entry)}
                if kind == 2:
                    names[e[1]] = e[2].decode()
                elif kind == 3:
                    args[e[1]] = e[2].decode()
        for n, _, v in fields:
            if n != 11:
                continue
            ev = pb_fields(v)
            if not any(k == 9 and val == 1 for k, _, val in ev):
                continue
            name = next((names.get(val) for k, _, val in ev if k == 10), None)
            got = {}
            for k, _, ann in ev:
                if k != 4:
                    continue
                a = {kk: val for kk, _, val in pb_fields(ann)}
                key = args.get(a[1]) if 1 in a else a[10].decode()
                if 5 in a:
                    got[key] = struct.unpack("<d", struct.pack("<Q", a[5]))[0]
                elif 4 in a:
                    got[key] = a[4]
                else:
                    got[key] = "array"
            slices.append((name, got))
    return slices


class Metrics(kptest.KprofTestCase):
    needs_opencl = False

    def setUp(self):
        super().setUp()
        self.env["NO_COLOR"] = "1"
        self.trace = self.merge("records", "m.kprof")

    def merge(self, folder, name, broken=True):
        records = os.path.join(self.tmp, folder)
        os.mkdir(records)
        write_records(records, broken)
        with open(os.path.join(records, "run.txt"), "w") as f:
            f.write(RUN_TXT)
        p = self.kprof("trace", "--merge", folder, "-o", name, expect=0)
        self.merge_stderr = p.stderr
        return os.path.join(self.tmp, name)

    def out(self, *args):
        return self.kprof(*args, expect=0).stdout

    def check_golden(self, name, got):
        path = os.path.join(GOLDEN, name)
        if UPDATE:
            with open(path, "w") as f:
                f.write(got)
            return
        with open(path) as f:
            self.assertEqual(got, f.read(), "%s differs (KPROF_GOLDEN_UPDATE=1 rewrites it)" % name)

    def test_the_trace_holds_the_metrics(self):
        db = sqlite3.connect(self.trace)
        rows = db.execute("SELECT s.text, e.flops, e.metric_bytes FROM events e JOIN strings s "
                          "ON s.id = e.name WHERE e.flops IS NOT NULL OR e.metric_bytes IS NOT "
                          "NULL ORDER BY e.start_ns").fetchall()
        self.assertEqual(rows, [("train", 3e9, 1e8), ("step", 1e9, None), ("gemm", 2e8, 1e7),
                                ("gemm", 4e8, 3e7), ("cublasSgemm", 1e9, None)])
        # A copy keeps its size in `bytes`; its metric_bytes is NULL (none was given).
        self.assertEqual(db.execute("SELECT bytes, metric_bytes FROM events WHERE kind = ?",
                                    (klog.MEMCPY,)).fetchall(), [(1 << 20, None)])
        users = db.execute("SELECT e.name, k.text, m.value FROM metrics m JOIN event_view e ON "
                           "e.id = m.event JOIN strings k ON k.id = m.key ORDER BY m.rowid"
                           ).fetchall()
        self.assertEqual(users, [("gemm", "tiles", 16.0), ("gemm", "occupancy_hint", 0.5),
                                 ("gemm", "tiles", 48.0), ("train", "epoch", 1.0)])
        self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'metrics'").fetchone(),
                         ("12",))
        # event_view shows them too.
        self.assertEqual(db.execute("SELECT flops, metric_bytes FROM event_view WHERE name = "
                                    "'train'").fetchone(), (3e9, 1e8))
        # The two records dropped are counted, in a note and by `kprof trace`.
        notes = [r[0] for r in db.execute("SELECT text FROM notes")]
        self.assertIn("metric records dropped: 2 with no event of the kind they name right "
                      "before them", notes)
        self.assertIn("kprof: note: metric records dropped: 2", self.merge_stderr)
        db.close()

    def test_report_tables(self):
        text = self.out("report", self.trace)
        self.assertIn("Note: metric records dropped: 2 with no event", text)
        self.check_golden("report-metrics.txt", text)
        # Every other form of the tables and the trace with metrics, pinned too (the path the
        # JSON names is the test's own folder: written as m.kprof).
        for name, args in (("report-metrics.json", ["--json"]), ("report-metrics.csv", ["--csv"]),
                           ("report-metrics-trace.txt", ["--trace"]),
                           ("report-metrics-trace.json", ["--trace", "--json"]),
                           ("report-metrics-raw.txt", ["--raw"])):
            self.check_golden(name, self.out("report", self.trace, *args).replace(
                self.trace, "m.kprof"))
        host, device, nvtx = (text.split(h)[1].split("\n\n")[0] for h in
                              ("Host-side activity", "Device-side activity", "NVTX ranges"))
        self.assertIn("Calls       Flops   GFLOP/s  Time distribution", host)  # no bytes there
        self.assertIn("Calls       Flops   GFLOP/s       Bytes      GB/s  Time distribution",
                      device)
        self.assertIn("Calls       Flops   GFLOP/s       Bytes      GB/s  Time distribution",
                      nvtx)
        line = lambda table, name: next(l for l in table.splitlines() if l.endswith("  " + name))
        self.assertIn("     1 G      5000  ", line(host, "cublasSgemm"))
        self.assertIn("   600 M      1500   38.15 MiB       100  ", line(device, "gemm"))
        self.assertIn("       -         -       1 MiB      21.0  ",
                      line(device, "[CUDA memcpy HtoD]"))
        self.assertIn("       -         -           -         -  ", line(device, "relu"))
        self.assertIn("     1 G       500           -         -  ", line(nvtx, "step"))
        self.assertIn("     3 G       300   95.37 MiB      10.0  ", line(nvtx, "train"))

    def test_copy_of_unknown_size(self):
        # A copy whose size the trace does not hold (bytes NULL) has no bytes: "-" in the device
        # table, as before the tables moved onto core/aggregate; the same copy with its size
        # shows it (1 MiB, 21.0 GB/s).
        device_line = lambda trace: next(
            l for l in self.out("report", trace).split("Device-side activity")[1]
            .split("\n\n")[0].splitlines() if l.endswith("  [CUDA memcpy HtoD]"))
        self.assertIn("       -         -       1 MiB      21.0  ", device_line(self.trace))
        unknown = os.path.join(self.tmp, "unknown.kprof")
        with open(self.trace, "rb") as f, open(unknown, "wb") as g:
            g.write(f.read())
        db = sqlite3.connect(unknown)
        db.execute("UPDATE events SET bytes = NULL WHERE kind = ?", (klog.MEMCPY,))
        db.commit()
        db.close()
        self.assertIn("       -         -           -         -  ", device_line(unknown))

    def test_report_json_and_csv(self):
        rep = json.loads(self.out("report", self.trace, "--json"))
        rows = {r["name"]: r for t in ("host", "device", "nvtx") for r in rep[t]}
        for name, (flops, nbytes, flops_ns, bytes_ns) in ROWS.items():
            r = rows[name]
            if flops is None:
                self.assertNotIn("flops", r)
                self.assertNotIn("gflop_per_s", r)
            else:
                self.assertEqual(r["flops"], flops, name)
                self.assertEqual(r["gflop_per_s"], flops / flops_ns, name)  # exact
            if nbytes is None:
                self.assertNotIn("bytes", r)
                self.assertNotIn("gb_per_s", r)
            else:
                self.assertEqual(r["bytes"], nbytes, name)
                self.assertEqual(r["gb_per_s"], nbytes / bytes_ns, name)
        self.assertEqual(rows["step"]["gflop_per_s"], 500.0)  # not diluted by the second step
        for name in ("relu", "cudaLaunchKernel", "cudaMemcpy"):  # no zeros made up
            self.assertFalse({"flops", "bytes", "gflop_per_s", "gb_per_s"} & set(rows[name]))

        csv = self.out("report", self.trace, "--csv").splitlines()
        self.assertTrue(csv[0].endswith(",sentence,flops,bytes,gflop_per_s,gb_per_s"))
        width = csv[0].count(",")
        self.assertTrue(all(l.count(",") >= width for l in csv))
        gemm = next(l for l in csv if l.startswith("device,gemm,"))
        self.assertTrue(gemm.endswith(",600000000,40000000,1500,100"), gemm)
        step = next(l for l in csv if l.startswith("nvtx,step,"))
        self.assertTrue(step.endswith(",1000000000,,500,"), step)
        relu = next(l for l in csv if l.startswith("device,relu,"))
        self.assertTrue(relu.endswith(",,,,"), relu)

    def test_report_trace_json(self):
        rep = json.loads(self.out("report", self.trace, "--trace", "--json"))
        gemms = [r for r in rep["device_trace"] if r["name"] == "gemm"]
        self.assertEqual([(g["flops"], g["gflop_per_s"], g["bytes"], g["gb_per_s"], g["metrics"])
                          for g in gemms],
                         [(2e8, 2e8 / 100000, 1e7, 1e7 / 100000,
                           {"tiles": 16, "occupancy_hint": 0.5}),
                          (4e8, 4e8 / 300000, 3e7, 3e7 / 300000, {"tiles": 48})])
        copy = next(r for r in rep["device_trace"] if r["kind"] == "memcpy")
        self.assertEqual(copy["bytes"], 1 << 20)  # its size, as before
        self.assertNotIn("flops", copy)
        blas = next(r for r in rep["host_trace"] if r["name"] == "cublasSgemm")
        self.assertEqual((blas["flops"], blas["gflop_per_s"]), (1e9, 1e9 / 200000))

    def test_tree_and_by(self):
        tree = json.loads(self.out("report", self.trace, "--tree", "--json"))
        nodes = {"/".join(n["path"]): n for n in tree["nodes"]}
        train = nodes["train"]
        self.assertEqual((train["flops"], train["gflop_per_s"]), (3e9, 3e9 / (10 * MS)))
        self.assertEqual((train["bytes"], train["gb_per_s"]), (1e8, 1e8 / (10 * MS)))
        gemm = nodes["train/step/cudaLaunchKernel/gemm"]
        self.assertEqual((gemm["flops"], gemm["gflop_per_s"]), (6e8, 1500.0))
        self.assertEqual((gemm["bytes"], gemm["gb_per_s"]), (4e7, 100.0))
        step = nodes["train/step"]
        self.assertEqual(step["gflop_per_s"], 500.0)
        self.assertIsNone(step["gb_per_s"])
        launch = nodes["train/step/cudaLaunchKernel"]
        self.assertIsNone(launch["gflop_per_s"])
        copy = nodes["train/step/cudaMemcpy/[CUDA memcpy HtoD]"]
        self.assertEqual(copy["gb_per_s"], (1 << 20) / (50 * US))
        # A range that launched device work has its rates over that device time too: train's
        # 3e9 flops ran on 500 µs of device time (6000 GFLOP/s), over 10 ms of host time (300).
        self.assertEqual(nodes["train"]["device_gflop_per_s"], 3e9 / (500 * US))
        self.assertEqual(nodes["train"]["device_gb_per_s"], 1e8 / (500 * US))
        self.assertEqual(step["device_gflop_per_s"], 1e9 / (500 * US))
        self.assertIsNone(nodes["train/step/cudaLaunchKernel"]["device_gflop_per_s"])
        text = self.out("report", "m.kprof", "--tree")  # the path the header names
        self.assertIn("     Flops  Dev GFLOP/s  Host GFLOP/s       Bytes  Dev GB/s  Host GB/s  Kind",
                      text)
        self.assertRegex(text, r"\n +1 +10 ms .* 3 G +6000 +300 +95.37 MiB +200 +10.0  range +train\n")
        self.check_golden("report-metrics-tree.txt", text)
        by = json.loads(self.out("report", self.trace, "--by", "name", "--json"))
        rows = {r["name"]: r for r in by["rows"]}
        self.assertEqual(rows["step"]["gflop_per_s"], 500.0)
        self.assertEqual(rows["gemm"]["gb_per_s"], 100.0)
        self.assertEqual(rows["cublasSgemm"]["gflop_per_s"], 1e9 / 200000)
        csv = self.out("report", self.trace, "--by", "path", "--csv").splitlines()
        self.assertTrue(csv[0].endswith(",flops,bytes,gflop_per_s,gb_per_s"))
        gemm = next(l for l in csv if "train/step/cudaLaunchKernel/gemm," in l)
        self.assertTrue(gemm.endswith(",600000000,40000000,1500,100"), gemm)
        text = self.out("report", self.trace, "--by", "name")
        self.assertIn("Flops  Dev GFLOP/s  Host GFLOP/s       Bytes  Dev GB/s  Host GB/s  Name",
                      text)

    def test_exports(self):
        chrome = json.loads(self.out("export", self.trace, "--chrome", "-"))
        slices = [e for e in chrome["traceEvents"] if e.get("ph") == "X"]
        gemm = [e["args"] for e in slices if e["name"] == "gemm"]
        self.assertEqual(gemm[0]["flops"], 2e8)
        self.assertEqual(gemm[0]["gflop_per_s"], 2000.0)
        self.assertEqual(gemm[0]["bytes"], 1e7)
        self.assertEqual(gemm[0]["gb_per_s"], 100.0)
        self.assertEqual((gemm[0]["tiles"], gemm[0]["occupancy_hint"]), (16, 0.5))
        self.assertEqual(gemm[1]["tiles"], 48)
        self.assertEqual(gemm[0]["registers"], 32)  # what was there before stays
        train = next(e["args"] for e in slices if e["name"] == "train")
        self.assertEqual(train, {"range_id": 1, "flops": 3e9, "gflop_per_s": 300.0,
                                 "bytes": 1e8, "gb_per_s": 10.0, "epoch": 1})
        relu = next(e["args"] for e in slices if e["name"] == "relu")
        self.assertFalse({"flops", "gflop_per_s", "gb_per_s"} & set(relu))
        copy = next(e["args"] for e in slices if e["cat"] == "memcpy")
        self.assertEqual(copy["bytes"], 1 << 20)
        self.assertNotIn("gb_per_s", copy)

        self.kprof("export", self.trace, "--perfetto", "m.pftrace", expect=0)
        pf = perfetto_slices(os.path.join(self.tmp, "m.pftrace"))
        gemm = [a for n, a in pf if n == "gemm"]
        self.assertEqual(len(gemm), 2)
        self.assertEqual((gemm[0]["flops"], gemm[0]["gflop_per_s"], gemm[0]["bytes"],
                          gemm[0]["gb_per_s"], gemm[0]["tiles"], gemm[0]["occupancy_hint"]),
                         (2e8, 2000.0, 1e7, 100.0, 16.0, 0.5))
        self.assertEqual(gemm[0]["registers"], 32)
        train = next(a for n, a in pf if n == "train")
        self.assertEqual((train["flops"], train["gflop_per_s"], train["epoch"]), (3e9, 300.0, 1.0))
        relu = next(a for n, a in pf if n == "relu")
        self.assertFalse({"flops", "gflop_per_s", "gb_per_s"} & set(relu))

        hatchet = json.loads(self.out("export", self.trace, "--hatchet", "-"))
        root = hatchet[0]

        def node(*path):
            n = root
            for name in path:
                n = next(c for c in n["children"] if c["frame"]["name"] == name)
            return n["metrics"]

        train = node("train")
        self.assertEqual((train["flops"], train["bytes"]), (3e9, 1e8))
        self.assertEqual(train["flops (inc)"], 3e9 + 1e9 + 6e8 + 1e9)
        self.assertEqual(train["bytes (inc)"], 1e8 + 4e7 + (1 << 20))
        self.assertEqual(node("train", "step", "cudaLaunchKernel", "gemm")["flops"], 6e8)
        self.assertEqual(root["metrics"]["flops (inc)"], 5.6e9)

    def test_user_key_named_as_an_argument(self):
        # A user key that is the name of an argument kprof writes goes in as "user:KEY".
        db = sqlite3.connect(self.trace)
        db.execute("UPDATE strings SET text = 'registers' WHERE text = 'tiles'")
        db.commit()
        db.close()
        chrome = json.loads(self.out("export", self.trace, "--chrome", "-"))
        gemm = next(e["args"] for e in chrome["traceEvents"] if e.get("name") == "gemm")
        self.assertEqual((gemm["registers"], gemm["user:registers"]), (32, 16))
        self.kprof("export", self.trace, "--perfetto", "u.pftrace", expect=0)
        gemm = next(a for n, a in perfetto_slices(os.path.join(self.tmp, "u.pftrace"))
                    if n == "gemm")
        self.assertEqual((gemm["registers"], gemm["user:registers"]), (32, 16.0))

    def test_without_metrics_nothing_shows(self):
        # The same timeline without a metric record, and this trace with its metric columns and
        # table taken away (a format 2 file made before metrics): no view shows a metric column,
        # and both read alike, as a trace without metrics.
        plain = os.path.join(self.tmp, "plain")
        os.mkdir(plain)
        w = klog.Writer(os.path.join(plain, "500-cuda-1.klog"), 500, "python bench.py", at(0))
        w.close(end=at(10 * MS))
        db = sqlite3.connect(self.trace)
        db.execute("DROP VIEW event_view")
        db.execute("ALTER TABLE events DROP COLUMN flops")
        db.execute("ALTER TABLE events DROP COLUMN metric_bytes")
        db.execute("DROP TABLE metrics")
        db.execute("DELETE FROM meta WHERE key = 'metrics'")
        db.commit()
        db.close()
        stripped = self.trace
        for args in (["report"], ["report", "--json"], ["report", "--csv"], ["report", "--tree"],
                     ["report", "--by", "name", "--csv"], ["report", "--tree", "--json"]):
            got = self.out(args[0], stripped, *args[1:])
            for word in ("Flops", "GFLOP/s", "gflop_per_s", "gb_per_s", "GB/s", '"flops": 3'):
                self.assertNotIn(word, got, args)
        chrome = self.out("export", stripped, "--chrome", "-")
        self.assertNotIn("flops", chrome)
        self.assertNotIn("tiles", chrome)

    def test_metric_columns_only_where_a_table_has_metrics(self):
        # Metrics on kernels only: the device table shows them (copies with their sizes), the
        # host and NVTX tables are as they were.
        records = os.path.join(self.tmp, "kernels")
        os.mkdir(records)
        w = klog.Writer(os.path.join(records, "600-cuda-1.klog"), 600, "k", at(0))
        s = w.string
        w.write(klog.rec(klog.API, name=s("cudaLaunchKernel"), tid=600, start=at(100),
                         end=at(200), correlation=1, domain=klog.CUDA_RUNTIME))
        w.write(klog.rec(klog.KERNEL, name=s("k"), tid=600, start=at(300), end=at(1300),
                         correlation=1, grid=(1, 1, 1), block=(32, 1, 1)))
        w.write(klog.metric(s("flops"), 5e3, klog.KERNEL))
        w.write(klog.rec(klog.RANGE, name=s("r"), tid=600, start=at(0), end=at(2000), rid=1,
                         domain=klog.NVTX))
        w.close(end=at(3000))
        with open(os.path.join(records, "run.txt"), "w") as f:
            f.write(RUN_TXT)
        self.kprof("trace", "--merge", "kernels", "-o", "k.kprof", expect=0)
        text = self.out("report", "k.kprof")
        host, device, nvtx = (text.split(h)[1].split("\n\n")[0] for h in
                              ("Host-side activity", "Device-side activity", "NVTX ranges"))
        self.assertNotIn("Flops", host + nvtx)
        self.assertIn("Calls       Flops   GFLOP/s  Name", device)  # no bytes anywhere: no Bytes
        self.assertIn("       5 k      5.00  k", device)
        rep = json.loads(self.out("report", "k.kprof", "--json"))
        self.assertEqual(rep["device"][0]["gflop_per_s"], 5.0)
        self.assertNotIn("flops", rep["nvtx"][0])


if __name__ == "__main__":
    kptest.main()
