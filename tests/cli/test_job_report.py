"""kprof report and the timeline exports on a distributed job's trace: a table per rank and per
device, NCCL collectives as their own class, the stragglers line (analysis/trace_job.h), and track
names that say the rank. The job is synthetic (tests/cli/gen_trace.py's 'job': a torchrun in
small whose ranks write the records a collector would, with one rank late by a known time), so
every number is fixed by the records; and a real one: two PoCL programs with RANK=0 and RANK=1
under one `kprof trace`."""

import json
import os
import re
import sqlite3
import struct
import subprocess
import sys

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
APP = os.environ.get("KPROF_CL_APP")
COLLECTIVE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

# gen_trace.py's job, in ns.
STEP_KERNEL = 50000  # a compute kernel
TAIL = 100000  # the all-reduce after the last rank's compute
COPY = 100000  # the copy before the steps
LAUNCH = 5000  # a launch call


def late_ns(rank, k, late_rank, late_us):
    """How late rank is at step k (gen_trace.py's job_late_ns)."""
    late = int(late_us * 1000)
    if k % 5 == 4 and late_rank != 0:
        return late // 2 if rank == 0 else 0
    return late if rank == late_rank else 0


def expected(ranks, kernels, steps, late_rank, late_us):
    """Each rank's busy and collective time, the steps' waits and timed work, from the model:
    at step k a rank computes kernels × 50 us (+ its lateness), then its all-reduce runs until
    100 us after the last rank's compute ended."""
    busy = [COPY] * ranks
    coll = [0] * ranks
    steps_out = []
    for k in range(steps):
        lates = [late_ns(r, k, late_rank, late_us) for r in range(ranks)]
        latest = max(lates)
        last = lates.index(latest)
        waits = [latest - x for x in lates]
        timed = 0
        for r in range(ranks):
            busy[r] += kernels * STEP_KERNEL + latest + TAIL  # compute and all-reduce touch
            coll[r] += latest - lates[r] + TAIL
            timed += latest - lates[r] + TAIL
        others = [w for r, w in enumerate(waits) if r != last]
        steps_out.append({"last": last, "waits": waits, "wait": sum(others) / len(others),
                          "timed": timed})
    return busy, coll, steps_out


def varints(data):
    """A protobuf message's fields as (number, wire type, value): ints for varints, bytes for
    length-delimited fields (enough of the wire format to read Perfetto's track descriptors
    without perfetto's own classes)."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 2:
            n, pos = read_varint(data, pos)
            value, pos = data[pos:pos + n], pos + n
        elif wire == 1:
            value, pos = struct.unpack("<Q", data[pos:pos + 8])[0], pos + 8
        elif wire == 5:
            value, pos = struct.unpack("<I", data[pos:pos + 4])[0], pos + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield number, wire, value


def read_varint(data, pos):
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def perfetto_tracks(path):
    """The .pftrace's track descriptors (TracePacket field 60): {uuid: (name, parent uuid,
    process name, pid)}, names as text."""
    tracks = {}
    with open(path, "rb") as f:
        data = f.read()
    for number, _, packet in varints(data):
        if number != 1:
            continue
        for field, _, value in varints(packet):
            if field != 60:
                continue
            desc = dict(uuid=None, name=None, parent=None, process=None, pid=None)
            for n, _, v in varints(value):
                if n == 1:
                    desc["uuid"] = v
                elif n == 2:
                    desc["name"] = v.decode()
                elif n == 5:
                    desc["parent"] = v
                elif n == 3:  # ProcessDescriptor: pid 1, process_name 6
                    for pn, _, pv in varints(v):
                        if pn == 1:
                            desc["pid"] = pv
                        elif pn == 6:
                            desc["process"] = pv.decode()
            tracks[desc["uuid"]] = desc
    return tracks


class JobReport(kptest.KprofTestCase):
    needs_opencl = False

    def job(self, *extra, name="job.kprof"):
        out = os.path.join(self.tmp, name)
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, "job", "--kernels", "4",
                   "--steps", "10", *extra, expect=0, timeout=300)
        return out

    def report(self, path, *extra):
        return json.loads(self.kprof("report", path, "--json", *extra, expect=0).stdout)

    def test_ranks_devices_collectives_stragglers(self):
        # Two ranks, rank 1 300 us late at 8 steps of 10 (rank 0 150 us late at the other two),
        # rank 0 with an all-reduce more after the steps; NVTX 'step' ranges on both.
        path = self.job("--ranks", "2", "--late-rank", "1", "--late-us", "300",
                        "--extra-collective-rank", "0")
        r = self.report(path)
        busy, coll, steps = expected(2, 4, 10, 1, 300)
        busy[0] += TAIL  # the extra all-reduce, alone
        coll[0] += TAIL
        job = r["job"]
        self.assertEqual(job["launcher"], "torchrun")
        self.assertEqual(job["ranks_count"], 2)
        ranks = job["ranks"]
        self.assertEqual([k["rank"] for k in ranks], [0, 1, None])  # None: the launcher, "-"
        for i in range(2):
            k = ranks[i]
            self.assertEqual(k["local_rank"], i)
            self.assertEqual(k["gpus"], [i])
            self.assertEqual(len(k["pids"]), 1)
            self.assertEqual(k["kernels"], 40)  # compute kernels only
            self.assertEqual(k["collectives"], 10 + (i == 0))
            self.assertEqual(k["copies"], 1)
            self.assertAlmostEqual(k["gpu_busy_s"], busy[i] / 1e9, places=12)
            self.assertAlmostEqual(k["collective_s"], coll[i] / 1e9, places=12)
            launches = 10 * 5 + (i == 0)
            self.assertAlmostEqual(k["host_api_s"], (launches + 1) * LAUNCH / 1e9, places=12)
            self.assertGreater(k["span_s"], 0.02)
        launcher = ranks[2]
        self.assertEqual(launcher["gpus"], [])
        self.assertAlmostEqual(launcher["host_api_s"], 1e-3, places=12)  # its cuInit
        self.assertNotIn(launcher["pids"][0], ranks[0]["pids"] + ranks[1]["pids"])
        self.assertEqual(ranks[0]["last_at_steps"], 2)
        self.assertEqual(ranks[1]["last_at_steps"], 8)
        devices = job["devices"]
        self.assertEqual([(d["device"], d["ranks"]) for d in devices], [(0, [0]), (1, [1])])
        for i, d in enumerate(devices):
            self.assertAlmostEqual(d["gpu_busy_s"], busy[i] / 1e9, places=12)
            self.assertAlmostEqual(d["collective_s"], coll[i] / 1e9, places=12)
            self.assertEqual((d["kernels"], d["collectives"], d["copies"]), (40, 10 + (i == 0), 1))
            self.assertAlmostEqual(d["gpu_busy_percent_of_wall"],
                                   100 * d["gpu_busy_s"] / r["wall_s"], places=9)
        # Collectives are a class of their own: not in the device table.
        self.assertNotIn(COLLECTIVE, [g["name"] for g in r["device"]])
        self.assertEqual([(g["name"], g["calls"]) for g in r["collectives"]], [(COLLECTIVE, 21)])
        self.assertEqual({g["name"]: g["calls"] for g in r["device"]},
                         {"gemm_kernel": 80, "[CUDA memcpy HtoD]": 2})
        # Stragglers: steps by the 'step' range, each timed by its all-reduce.
        s = job["stragglers"]
        self.assertEqual((s["steps_by"], s["range"], s["timed_by"], s["op"]),
                         ("range", "step", "collective", "all-reduce"))
        self.assertEqual((s["steps"], s["skipped"], s["unmatched"]), (10, 0, 0))
        self.assertEqual((s["last_rank"], s["last_count"]), (1, 8))
        waits = sorted(st["wait"] for st in steps)
        self.assertAlmostEqual(s["wait_median_s"], (waits[4] + waits[5]) / 2e9, places=12)
        self.assertAlmostEqual(s["wait_max_s"], 300e-6, places=12)
        wait_total = sum(sum(st["waits"]) for st in steps)
        timed_total = sum(st["timed"] for st in steps)
        self.assertAlmostEqual(s["wait_total_s"], wait_total / 1e9, places=12)
        self.assertAlmostEqual(s["timed_total_s"], timed_total / 1e9, places=12)
        self.assertAlmostEqual(s["wait_fraction"], wait_total / timed_total, places=12)
        self.assertEqual([d["index"] for d in s["detail"]], list(range(10)))
        for d, st in zip(s["detail"], steps):
            self.assertEqual(d["name"], COLLECTIVE)
            self.assertEqual(d["last_rank"], st["last"])
            self.assertEqual([w["rank"] for w in d["waits"]], [0, 1])
            for w, want in zip(d["waits"], st["waits"]):
                self.assertAlmostEqual(w["wait_s"], want / 1e9, places=12)
        # The text says the same.
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("Ranks: 2 ranks (torchrun) on 1 host", text)
        self.assertIn("Collectives (NCCL/RCCL kernels, apart from the compute kernels): 21 "
                      "kernels, 4.8 ms", text)
        self.assertIn("CUDA_VISIBLE_DEVICES remapping per rank is not undone", text)
        self.assertIn("Stragglers: rank 1 arrived last at 8 of 10 'step' steps; the other ranks "
                      "waited 300 µs median, 300 µs max per step (57.4% of the collectives' "
                      "time)\n", text)
        rows = text.split("Ranks:")[1].split("\n\n")[0].splitlines()[2:]
        cells = [row.split() for row in rows]
        self.assertEqual([c[0] for c in cells], ["0", "1", "-"])
        self.assertEqual(cells[1][5:8], ["40", "10", "5.8"])  # kernels, collectives, GPU busy
        # CSV: the collectives' own table.
        csv = self.kprof("report", path, "--csv", expect=0).stdout
        self.assertIn("\ncollective,%s,21," % COLLECTIVE, csv)
        self.assertNotIn("\ndevice,%s" % COLLECTIVE, csv)

    def test_steps_by_collective_on_two_hosts(self):
        # No ranges: the k-th all-reduce on every rank is a step. Three ranks on hosts a and b,
        # rank 2 late; rank 0's extra all-reduce is on no other rank: skipped.
        path = self.job("--ranks", "3", "--late-rank", "2", "--late-us", "200", "--no-ranges",
                        "--extra-collective-rank", "0", "--hosts", "a,b", name="hosts.kprof")
        r = self.report(path)
        busy, coll, steps = expected(3, 4, 10, 2, 200)
        job = r["job"]
        self.assertEqual(job["hosts"], 2)
        self.assertEqual([(k["rank"], k["host"]) for k in job["ranks"]],
                         [(0, "a"), (1, "b"), (2, "a"), (None, "a")])
        self.assertEqual([(d["host"], d["device"], d["ranks"]) for d in job["devices"]],
                         [("a", 0, [0]), ("a", 2, [2]), ("b", 1, [1])])
        self.assertAlmostEqual(job["ranks"][1]["collective_s"], coll[1] / 1e9, places=12)
        s = job["stragglers"]
        self.assertEqual((s["steps_by"], s["range"], s["timed_by"]),
                         ("collective", None, "collective"))
        self.assertEqual((s["steps"], s["skipped"], s["last_rank"], s["last_count"]),
                         (10, 1, 2, 8))
        self.assertEqual([d["last_rank"] for d in s["detail"]], [st["last"] for st in steps])
        # Step 0: ranks 0 and 1 waited 200 us for rank 2; the step's wait is their mean.
        d0 = s["detail"][0]
        self.assertEqual([round(w["wait_s"] * 1e9) for w in d0["waits"]], [200000, 200000, 0])
        self.assertAlmostEqual(d0["wait_s"], 200e-6, places=12)
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("Stragglers: rank 2 arrived last at 8 of 10 all-reduce steps;", text)
        self.assertIn("; 1 step skipped (not on every rank)\n", text)
        self.assertIn("  a · GPU 0 ", text)
        self.assertIn("  b · GPU 1 ", text)

    def test_track_names_say_the_rank(self):
        path = self.job("--ranks", "2")
        r = self.report(path)
        pids = {k["rank"]: k["pids"][0] for k in r["job"]["ranks"]}
        # Chrome: processes, their GPUs and streams.
        out = os.path.join(self.tmp, "job.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        with open(out, encoding="utf-8") as f:
            meta = [e for e in json.load(f)["traceEvents"] if e["ph"] == "M"]
        procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
        threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta
                   if e["name"] == "thread_name"}
        for rank in (0, 1):
            pid = pids[rank]
            self.assertTrue(procs[pid].startswith("rank %d · pid %d (" % (rank, pid)), procs[pid])
            self.assertTrue(procs[pid].endswith(")"))
            gpu = [p for p, n in procs.items() if n == "rank %d · GPU %d (pid %d)" % (rank, rank, pid)]
            self.assertEqual(len(gpu), 1, procs)
            self.assertEqual(threads[(gpu[0], 7)], "rank %d · GPU %d · stream 7" % (rank, rank))
            self.assertEqual(threads[(gpu[0], 13)], "rank %d · GPU %d · stream 13" % (rank, rank))
        # The launcher has no rank: its name is as it always was.
        launcher = pids[None]
        self.assertFalse(procs[launcher].startswith("rank"))
        self.assertTrue(procs[launcher].startswith("%d " % launcher))
        # Perfetto: the same names on its tracks.
        out = os.path.join(self.tmp, "job.pftrace")
        self.kprof("export", path, "--perfetto", out, expect=0)
        tracks = perfetto_tracks(out)
        by_pid = {t["pid"]: t for t in tracks.values() if t["pid"] is not None}
        for rank in (0, 1):
            pid = pids[rank]
            proc = by_pid[pid]
            self.assertTrue(proc["process"].startswith("rank %d · pid %d (" % (rank, pid)))
            children = [t for t in tracks.values() if t["parent"] == proc["uuid"]]
            self.assertEqual([t["name"] for t in children], ["rank %d · GPU %d" % (rank, rank)])
            streams = sorted(t["name"] for t in tracks.values()
                             if t["parent"] == children[0]["uuid"])
            self.assertEqual(streams, ["rank %d · GPU %d · stream 13" % (rank, rank),
                                       "rank %d · GPU %d · stream 7" % (rank, rank)])
        self.assertFalse(by_pid[launcher]["process"].startswith("rank"))

    def edit(self, path, *statements):
        db = sqlite3.connect(path)
        for sql in statements:
            if isinstance(sql, tuple):
                db.execute(*sql)
            else:
                db.execute(sql)
        db.commit()
        db.close()

    def report_bytes(self, path):
        """kprof report's text as bytes (what a file's host names make of it, undecoded)."""
        env = dict(os.environ)
        env.update({k: v for k, v in self.env.items() if v is not None})
        p = subprocess.run([kptest.KPROF, "report", path], cwd=self.tmp, env=env,
                           capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_track_ids_fit_32_bits(self):
        # A merge of 600+ inputs makes pids of pid + k·2^22 past 2^31; and a rank with GPUs 1
        # and 17 (the old GPU ids took device & 15). Every pid written fits an int32, the GPU
        # tracks are one per (pid, device) and are no process's pid; the names keep the pids.
        path = self.job("--ranks", "2")
        r = self.report(path)
        real = {k["rank"]: k["pids"][0] for k in r["job"]["ranks"]}
        big = {rank: pid + (600 + rank) * 4194304 for rank, pid in real.items()
               if rank is not None}
        for rank, pid in big.items():
            self.edit(path, ("UPDATE processes SET pid = ? WHERE pid = ?", (pid, real[rank])),
                      ("UPDATE events SET pid = ? WHERE pid = ?", (pid, real[rank])))
        self.edit(path, ("UPDATE events SET device = 17 WHERE pid = ? AND stream = 13",
                         (big[1],)))
        # The launcher's pid fits and is kept: 2^30, the first id the others would be given.
        self.edit(path, ("UPDATE processes SET pid = ? WHERE pid = ?", (2 ** 30, real[None])),
                  ("UPDATE events SET pid = ? WHERE pid = ?", (2 ** 30, real[None])))
        out = os.path.join(self.tmp, "big.json")
        self.kprof("export", path, "--chrome", out, expect=0)
        with open(out, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        for e in events:
            self.assertTrue(0 <= e["pid"] < 2 ** 31, e)
        procs = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual(len(procs), len([e for e in events if e["ph"] == "M" and
                                          e["name"] == "process_name"]))  # each id once
        for rank, pid in big.items():
            host = [p for p, n in procs.items() if n.startswith("rank %d · pid %d (" % (rank, pid))]
            self.assertEqual(len(host), 1, procs)
        gpus = {n: p for p, n in procs.items() if " GPU " in " " + n}
        self.assertEqual(sorted(gpus), ["rank 0 · GPU 0 (pid %d)" % big[0],
                                        "rank 1 · GPU 1 (pid %d)" % big[1],
                                        "rank 1 · GPU 17 (pid %d)" % big[1]])
        host_ids = set(procs) - set(gpus.values())
        self.assertTrue(procs[2 ** 30].startswith("%d " % 2 ** 30), procs)
        self.assertFalse(host_ids & set(gpus.values()))
        # Every event lies on a named process: kernels on their device's GPU track.
        for e in events:
            self.assertIn(e["pid"], procs, e)
        on = {e["pid"] for e in events if e.get("cat") == "kernel" and e["tid"] == 13}
        self.assertEqual(on, {gpus["rank 0 · GPU 0 (pid %d)" % big[0]],
                              gpus["rank 1 · GPU 17 (pid %d)" % big[1]]})
        # Perfetto: the ProcessDescriptors' pids fit its int32 and are distinct.
        out = os.path.join(self.tmp, "big.pftrace")
        self.kprof("export", path, "--perfetto", out, expect=0)
        tracks = [t for t in perfetto_tracks(out).values() if t["pid"] is not None]
        pids = [t["pid"] for t in tracks]
        self.assertEqual(len(pids), 3, tracks)
        self.assertEqual(len(set(pids)), 3)
        self.assertIn(2 ** 30, pids)
        self.assertTrue(all(0 <= p < 2 ** 31 for p in pids), pids)
        names = sorted(t["process"] for t in tracks)
        for rank, pid in big.items():
            self.assertTrue(any(n.startswith("rank %d · pid %d (" % (rank, pid)) for n in names),
                            names)

    def test_hosts_that_share_a_name(self):
        # Two machines called "node" (containers, a default hostname): two hosts, told apart by
        # their boot ids, each with its own GPU 0.
        path = self.job("--ranks", "2", "--hosts", "node", "--boots",
                        "1a2b3c4d-0000-aaaa,5e6f7a8b-0000-bbbb", "--no-ranges")
        job = self.report(path)["job"]
        self.assertEqual(job["hosts"], 2)
        self.assertEqual([(d["host"], d["boot_id"], d["device"], d["ranks"])
                          for d in job["devices"]],
                         [("node", "1a2b3c4d-0000-aaaa", 0, [0]),
                          ("node", "5e6f7a8b-0000-bbbb", 1, [1])])
        self.assertEqual([(k["host"], k["boot_id"]) for k in job["ranks"]],
                         [("node", "1a2b3c4d-0000-aaaa"), ("node", "5e6f7a8b-0000-bbbb"),
                          ("node", "1a2b3c4d-0000-aaaa")])
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("Ranks: 2 ranks (torchrun) on 2 hosts", text)
        self.assertIn("  node (boot 1a2b3c4d) · GPU 0 ", text)
        self.assertIn("  node (boot 5e6f7a8b) · GPU 1 ", text)
        rows = text.split("Ranks:")[1].split("\n\n")[0].splitlines()[2:]
        self.assertEqual([re.split(r"\s{2,}", row.strip())[2] for row in rows],
                         ["node (boot 1a2b3c4d)", "node (boot 5e6f7a8b)", "node (boot 1a2b3c4d)"])

    def test_host_names_escaped_and_cut(self):
        # A host name from a file is printed escaped (control characters and bytes that are not
        # UTF-8 as \xNN, as kprof notes prints) and cut to 32 characters with "…".
        path = self.job("--ranks", "2", "--hosts", "a,b", "--no-ranges")
        evil = b"ev\x1b[2Jil\xff" + b"n" * 60
        self.edit(path, ("UPDATE processes SET host = CAST(? AS TEXT) WHERE host = 'b'",
                         (evil,)))
        out = self.report_bytes(path)
        self.assertNotIn(b"\x1b", out)
        self.assertNotIn(b"\xff", out)
        text = out.decode("utf-8")
        shown = "ev\\x1b[2Jil\\xff" + "n" * 16 + "…"
        self.assertEqual(len(shown), 32)
        rows = text.split("Ranks:")[1].split("\n\n")[0].splitlines()[2:]
        self.assertEqual([row.split()[2] for row in rows], ["a", shown, "a"])
        widths = {len(row.split(shown)[0]) for row in rows if shown in row}
        self.assertEqual(len(widths), 1)  # the column is as wide as the cut name
        self.assertIn("  %s · GPU 1 " % shown, text)
        # JSON keeps the whole name (valid UTF-8, as kprof writes any JSON).
        job = self.report(path)["job"]
        self.assertTrue(job["ranks"][1]["host"].startswith("ev\x1b[2Jil"))

    def test_stragglers_clock_uncertainty(self):
        # A merged trace's hosts table says how far apart the hosts' clocks may still be: the
        # stragglers line says it, and when the median wait is within it.
        path = self.job("--ranks", "2", "--late-rank", "1", "--late-us", "300",
                        "--hosts", "a,b")
        plain = self.kprof("report", path, expect=0).stdout
        self.assertNotIn("across hosts", plain)
        self.assertEqual(self.report(path)["job"]["stragglers"]["clock_uncertainty_s"], 0)
        self.edit(path, "CREATE TABLE hosts (id INTEGER PRIMARY KEY, host TEXT, boot_id TEXT, "
                        "offset_ns INTEGER, uncertainty_ns INTEGER, pairs INTEGER, inputs TEXT)",
                  "INSERT INTO hosts VALUES (1, 'a', 'boot-a', 0, 0, 4, 'a.kprof'), "
                  "(2, 'b', 'boot-b', 12345, 4000, 4, 'b.kprof')")
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("waited 300 µs median, 300 µs max per step ± 4 µs across hosts (", text)
        self.assertNotIn("within the hosts' clock uncertainty", text)
        s = self.report(path)["job"]["stragglers"]
        self.assertAlmostEqual(s["clock_uncertainty_s"], 4e-6, places=12)
        self.assertFalse(s["wait_median_within_clock_uncertainty"])
        self.edit(path, "UPDATE hosts SET uncertainty_ns = 1000000 WHERE id = 2")
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("waited 300 µs median (within the hosts' clock uncertainty), 300 µs max "
                      "per step ± 1 ms across hosts (", text)
        self.assertTrue(self.report(path)["job"]["stragglers"]
                        ["wait_median_within_clock_uncertainty"])
        self.edit(path, "UPDATE hosts SET uncertainty_ns = NULL WHERE id = 2")
        text = self.kprof("report", path, expect=0).stdout
        self.assertIn("300 µs max per step (the hosts' clock offsets are unknown) (", text)
        self.assertIsNone(self.report(path)["job"]["stragglers"]["clock_uncertainty_s"])

    def test_stragglers_not_judged_for_ranks_run_one_after_another(self):
        # RANK=0 traced, then RANK=1, then merged: their 'step' ranges never overlap in time, so
        # no rank waited for another and the report says it judged nothing (it said "rank 1
        # arrived last ... waited 142.73 ms median (272.1% of the ranges' time)").
        paths = []
        for r in (0, 1):
            out = os.path.join(self.tmp, "r%d.kprof" % r)
            env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r))
            self.kprof("trace", "-o", out, "--", sys.executable, GEN, "job-rank", "--kernels",
                       "2", "--steps", "5", expect=0, timeout=300, env=env)
            paths.append(out)
        merged = os.path.join(self.tmp, "m.kprof")
        self.kprof("merge", "-o", merged, *paths, expect=0)
        text = self.kprof("report", merged, expect=0).stdout
        self.assertIn("\nStragglers: not judged: the ranks' 'step' ranges never overlap in time "
                      "(the ranks ran one after another)\n", text)
        self.assertNotIn("arrived last", text)
        s = self.report(merged)["job"]["stragglers"]
        self.assertEqual((s["steps"], s["apart"]), (0, 5))
        self.assertEqual(s["wait_total_s"], 0)
        self.assertLessEqual(s["wait_fraction"], 1)

    def test_single_process_trace_unchanged(self):
        # One process, one device: no job tables, no collectives table, tracks as before.
        out = os.path.join(self.tmp, "one.kprof")
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, "launch-bound", "--kernels",
                   "20", "--seconds", "0.05", expect=0)
        r = self.report(out)
        self.assertNotIn("job", r)
        self.assertNotIn("collectives", r)
        text = self.kprof("report", out, expect=0).stdout
        self.assertNotIn("Ranks:", text)
        self.assertNotIn("Stragglers", text)


class JobReportOpenCL(kptest.KprofTestCase):
    """A real multi-process job on PoCL: two cl_app processes with RANK=0 and RANK=1."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_app was not built (no OpenCL ICD loader to link)")

    def test_two_ranks(self):
        out = os.path.join(self.tmp, "cl.kprof")
        script = ('RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 "$0" 3 & '
                  'RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 "$0" 3; wait')
        self.kprof("trace", "-o", out, "--", "sh", "-c", script, APP, expect=0, timeout=300)
        r = json.loads(self.kprof("report", out, "--json", expect=0).stdout)
        job = r["job"]
        self.assertEqual(job["launcher"], "env")
        ranks = job["ranks"]
        self.assertEqual([k["rank"] for k in ranks], [0, 1])  # sh made no GPU call: no "-"
        for i, k in enumerate(ranks):
            self.assertEqual(k["local_rank"], i)
            self.assertEqual(len(k["pids"]), 1)
            self.assertEqual(k["kernels"], 2 * 3 + 1)  # cl_app 3: 3 scale, 4 add_one
            self.assertEqual(k["collectives"], 0)
            self.assertGreater(k["gpu_busy_s"], 0)
            self.assertGreater(k["host_api_s"], 0)
        self.assertNotEqual(ranks[0]["pids"], ranks[1]["pids"])
        # Both saw PoCL's device 0 on this host: one device, used by both ranks.
        self.assertEqual([(d["device"], d["ranks"]) for d in job["devices"]], [(0, [0, 1])])
        self.assertEqual(job["devices"][0]["kernels"], 14)
        # No NVTX range and no collective: no step to compare.
        self.assertIsNone(job["stragglers"]["steps_by"])
        text = self.kprof("report", out, expect=0).stdout
        self.assertIn("Ranks: 2 ranks (env) on 1 host\n", text)
        self.assertIn("Stragglers: none measured", text)


if __name__ == "__main__":
    kptest.main()
