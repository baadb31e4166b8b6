"""kprof export --perfetto on synthetic programs whose timelines are known exactly (gen_trace.py,
edited with SQL where a case needs more: nested NVTX ranges, marks, overlapping kernels, bytes
that are not UTF-8). The .pftrace is decoded with perfetto's own protobuf classes — the
`perfetto` PyPI package ships perfetto_trace_pb2, compiled from the .proto files of its release —
and the `protobuf` runtime, both installed into a virtual environment this test makes under the
build folder (kept there for later runs, remade when the pins below change): the file re-runs
itself with that environment's Python. Where PyPI cannot be reached, the decoding tests skip
with the reason and the rest (the size against the Chrome export, the output rules) still run.

trace_processor is perfetto's own importer; the `perfetto` package downloads its binary from
outside PyPI on first use, which this machine and CI cannot reach: the test tries (or uses
KPROF_TRACE_PROCESSOR=/path/to/trace_processor_shell) and otherwise skips that part, saying so.
"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import unittest
import time

import kptest
import kpvenv

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
SHIM = os.environ.get("KPROF_IO_SHIM")  # tests/programs/io_shim.c, as test_files.py uses it

# What the virtual environment holds: pinned, so that a run tomorrow decodes as one today.
REQUIREMENTS = ["protobuf==7.36.2", "perfetto==0.59.1"]
VENV_MARK = "KPROF_PERFETTO_VENV"  # set once the file runs inside the environment
NO_DECODER = "KPROF_PERFETTO_NO_DECODER"  # why the environment could not be made


def venv_python():
    """The environment's Python, made if needed (kpvenv: one maker at a time, so that cli.perfetto
    and cli.inproc, which both decode with it, never see a half-made one): (path, None), or
    (None, why not)."""
    try:
        return kpvenv.python_with("perfetto", REQUIREMENTS), None
    except unittest.SkipTest as e:
        return None, str(e)
    except OSError as e:
        return None, "cannot make the virtual environment under the build folder: %s" % e


def perfetto_protos():
    """perfetto_trace_pb2, or skip the test with the reason it cannot be had."""
    import unittest
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as e:
        raise unittest.SkipTest(os.environ.get(NO_DECODER) or "no perfetto protobuf classes: %s"
                                % e)
    return perfetto_trace_pb2


class Decoded:
    """A .pftrace read packet by packet, as a consumer reading in order would: its tracks, its
    interned names, its slices rebuilt from begin/end on each track's stack, instants, flows."""

    def __init__(self, test, path):
        pb = perfetto_protos()
        trace = pb.Trace()
        with open(path, "rb") as f:
            trace.ParseFromString(f.read())
        self.pb = pb
        self.packets = list(trace.packet)
        self.tracks = {}       # uuid -> TrackDescriptor
        self.names = {}        # iid -> event name
        self.categories = {}   # iid -> category
        self.arg_names = {}    # iid -> debug annotation name
        self.slices = []       # dicts, in begin order
        self.instants = []
        stacks = {}
        last_ts = 0
        te_type = pb.TrackEvent
        for i, p in enumerate(self.packets):
            test.assertEqual(p.trusted_packet_sequence_id, 1, "packet %d" % i)
            if p.HasField("interned_data"):
                d = p.interned_data
                for table, entries in ((self.names, d.event_names),
                                       (self.categories, d.event_categories),
                                       (self.arg_names, d.debug_annotation_names)):
                    for e in entries:
                        test.assertNotIn(e.iid, table, "iid %d interned twice" % e.iid)
                        table[e.iid] = e.name
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                test.assertNotIn(td.uuid, self.tracks)
                if td.HasField("parent_uuid"):
                    test.assertIn(td.parent_uuid, self.tracks, "a parent comes first")
                self.tracks[td.uuid] = td
            if not p.HasField("track_event"):
                continue
            ev = p.track_event
            test.assertEqual(p.sequence_flags, pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE)
            test.assertTrue(p.HasField("timestamp"))
            test.assertGreaterEqual(p.timestamp, last_ts, "packets in time order")
            last_ts = p.timestamp
            test.assertIn(ev.track_uuid, self.tracks, "a track is described before its events")
            stack = stacks.setdefault(ev.track_uuid, [])
            if ev.type == te_type.TYPE_SLICE_END:
                test.assertTrue(stack, "an end with no slice open")
                s = stack.pop()
                s["end"] = p.timestamp
                continue
            if ev.HasField("name_iid"):
                test.assertIn(ev.name_iid, self.names, "a name is interned before it is used")
                name = self.names[ev.name_iid]
            else:
                name = ev.name
            args = {}
            for a in ev.debug_annotations:
                # Interned names for kprof's own arguments, plain names for user metrics.
                key = self.arg_names[a.name_iid] if a.HasField("name_iid") else a.name
                if a.HasField("int_value"):
                    args[key] = a.int_value
                elif a.HasField("double_value"):
                    args[key] = a.double_value
                else:
                    args[key] = [v.int_value for v in a.array_values]
            s = {"name": name, "cat": [self.categories[c] for c in ev.category_iids],
                 "track": ev.track_uuid, "ts": p.timestamp, "end": None,
                 "depth": len(stack), "parent": stack[-1] if stack else None,
                 "flows": list(ev.flow_ids), "terminates": list(ev.terminating_flow_ids),
                 "args": args}
            if ev.type == te_type.TYPE_INSTANT:
                self.instants.append(s)
            else:
                test.assertEqual(ev.type, te_type.TYPE_SLICE_BEGIN)
                self.slices.append(s)
                stack.append(s)
        for uuid, stack in stacks.items():
            test.assertEqual(stack, [], "slices left open on track %d" % uuid)

    def track_name(self, uuid):
        td = self.tracks[uuid]
        if td.HasField("thread"):
            return "thread %d/%d" % (td.thread.pid, td.thread.tid)
        return td.name

    def named(self, name):
        return [s for s in self.slices if s["name"] == name]


class Perfetto(kptest.KprofTestCase):
    needs_opencl = False

    def gen(self, pattern, *extra, name="t.kprof"):
        out = os.path.join(self.tmp, name)
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, pattern, *extra, expect=0)
        return out

    def export(self, path, name="t.pftrace"):
        out = os.path.join(self.tmp, name)
        self.kprof("export", path, "--perfetto", out, expect=0, timeout=300)
        return out

    def test_launch_bound_program(self):
        path = self.gen("launch-bound", "--kernels", "50", "--seconds", "0.05")
        d = Decoded(self, self.export(path))
        pb = d.pb
        db = sqlite3.connect(path)
        pid, command = db.execute("SELECT pid, command FROM processes").fetchone()
        # The clock: CLOCK_MONOTONIC is the trace's, every packet's by default.
        snap = d.packets[0].clock_snapshot
        self.assertEqual(snap.primary_trace_clock, pb.BUILTIN_CLOCK_MONOTONIC)
        self.assertEqual([c.clock_id for c in snap.clocks], [pb.BUILTIN_CLOCK_MONOTONIC])
        first = d.packets[1]
        self.assertEqual(first.sequence_flags, pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED)
        self.assertEqual(first.trace_packet_defaults.timestamp_clock_id,
                         pb.BUILTIN_CLOCK_MONOTONIC)
        self.assertTrue({"api", "kernel", "nvtx"} <= set(d.categories.values()))
        # Tracks: the process (its command), its thread, its GPU and the stream under it.
        procs = [t for t in d.tracks.values() if t.HasField("process")]
        self.assertEqual([(t.process.pid, t.process.process_name) for t in procs],
                         [(pid, command)])
        threads = [t for t in d.tracks.values() if t.HasField("thread")]
        self.assertEqual([(t.thread.pid, t.thread.tid) for t in threads], [(pid, 1)])
        gpu = [t for t in d.tracks.values() if t.name == "GPU 0"]
        self.assertEqual(len(gpu), 1)
        self.assertEqual(gpu[0].parent_uuid, procs[0].uuid)
        streams = [t for t in d.tracks.values() if t.name.startswith("GPU 0 \u00b7 ")]
        self.assertEqual([t.name for t in streams], ["GPU 0 \u00b7 stream 0"])
        self.assertEqual(streams[0].parent_uuid, gpu[0].uuid)
        # Slices: every event once, by name and category, on the right track.
        kernels = d.named("small(float*, int)")
        calls = d.named("cudaLaunchKernel")
        polls = d.named("cudaGetLastError")
        self.assertEqual((len(kernels), len(calls), len(polls)), (50, 50, 50))
        self.assertEqual(len(d.slices), 151)
        self.assertTrue(all(k["cat"] == ["kernel"] and k["track"] == streams[0].uuid
                            for k in kernels))
        self.assertTrue(all(c["cat"] == ["api"] and c["track"] == threads[0].uuid
                            for c in calls + polls))
        # Times: the trace's own nanoseconds, unchanged.
        want = sorted(db.execute("SELECT start_ns, end_ns FROM events WHERE kind = 4"))
        self.assertEqual(sorted((k["ts"], k["end"]) for k in kernels), want)
        self.assertTrue(all(k["end"] - k["ts"] == 5000 for k in kernels))
        # The NVTX range encloses every call (it starts with the first: the longer comes first).
        outer = d.named("outer")
        self.assertEqual(len(outer), 1)
        self.assertEqual(outer[0]["cat"], ["nvtx"])
        self.assertEqual(outer[0]["depth"], 0)
        self.assertEqual(outer[0]["args"], {"range_id": 1})
        self.assertTrue(all(c["depth"] == 1 and c["parent"] is outer[0] for c in calls + polls))
        # Flows: from each launch to its kernel, none from the polls.
        outs = [f for c in calls for f in c["flows"]]
        ins = [f for k in kernels for f in k["terminates"]]
        self.assertEqual(len(set(outs)), 50)
        self.assertEqual(sorted(outs), sorted(ins))
        for c in calls:
            k = [k for k in kernels if k["terminates"] == c["flows"]][0]
            self.assertEqual(k["ts"] - c["ts"], 50000)  # the kernel that call launched
        self.assertTrue(all(not p["flows"] and not p["terminates"] for p in polls))
        # Interned names: each once, all of the trace's that were used.
        self.assertEqual(sorted(d.names.values()),
                         ["cudaGetLastError", "cudaLaunchKernel", "outer", "small(float*, int)"])
        # The arguments the Chrome export carries.
        k = kernels[0]
        self.assertEqual(k["args"], {"correlation": 1, "grid": [64, 1, 1], "block": [256, 1, 1],
                                     "registers": 16, "shared_bytes": 1024,
                                     "queued_to_start_ns": 49000, "submitted_to_start_ns": 5000,
                                     "launch_to_start_ns": 50000})
        self.assertEqual(calls[0]["args"], {})

    def edited_trace(self):
        """A launch-bound trace plus, by SQL: an NVTX range 'inner' inside 'outer' around the
        first two launches, a mark inside it, a copy, two kernels on one stream that overlap
        without nesting, and a kernel whose name is not UTF-8."""
        path = self.gen("launch-bound", "--kernels", "4", "--seconds", "0.01")
        db = sqlite3.connect(path)
        proc, pid, t0 = db.execute(
            "SELECT process, pid, MIN(start_ns) FROM events WHERE kind = 3").fetchone()

        def string(text):
            db.execute("INSERT INTO strings (text) VALUES (CAST(? AS TEXT))", (text,))
            return db.execute("SELECT MAX(id) FROM strings").fetchone()[0]

        def event(kind, name, start, end, **cols):
            cols.update(kind=kind, name=name, start_ns=start, end_ns=end, process=proc, pid=pid,
                        tid=cols.get("tid", 1))
            keys = sorted(cols)
            db.execute("INSERT INTO events (%s) VALUES (%s)" % (
                ", ".join(keys), ", ".join("?" * len(keys))), [cols[k] for k in keys])

        inner, mark, copy, wide = string("inner"), string("checkpoint"), \
            string("[CUDA memcpy HtoD]"), string("wide")
        bad = string(b"bad\xffname")
        event(8, inner, t0, t0 + 90000, domain=4, range_id=2)  # the first two launch periods
        event(9, mark, t0 + 42000, t0 + 42000, domain=4, range_id=3)
        event(5, copy, t0 + 300000, t0 + 301000, device=0, stream=0, bytes=4096, copy_kind=1)
        # Two kernels on stream 9 overlapping without nesting, and a third inside both.
        event(4, wide, t0 + 400000, t0 + 410000, device=0, stream=9, grid_x=1, grid_y=1,
              grid_z=1, block_x=32, block_y=1, block_z=1)
        event(4, wide, t0 + 405000, t0 + 420000, device=0, stream=9, grid_x=1, grid_y=1,
              grid_z=1, block_x=32, block_y=1, block_z=1)
        event(4, bad, t0 + 406000, t0 + 407000, device=0, stream=9)
        db.commit()
        db.close()
        return path

    def test_nesting_marks_overlaps_and_names(self):
        d = Decoded(self, self.export(self.edited_trace()))
        outer, inner = d.named("outer"), d.named("inner")
        self.assertEqual((len(outer), len(inner)), (1, 1))
        self.assertIs(inner[0]["parent"], outer[0])  # both start with the first launch
        self.assertEqual(inner[0]["depth"], 1)
        calls = d.named("cudaLaunchKernel")
        self.assertEqual([c["parent"]["name"] for c in calls], ["inner", "inner", "outer", "outer"])
        self.assertEqual([c["depth"] for c in calls], [2, 2, 1, 1])
        # The mark: an instant on the thread, inside the ranges.
        self.assertEqual([(m["name"], m["cat"], m["depth"]) for m in d.instants],
                         [("checkpoint", ["nvtx"], 2)])
        copy = d.named("[CUDA memcpy HtoD]")
        self.assertEqual([(c["cat"], c["args"]) for c in copy], [(["memcpy"], {"bytes": 4096})])
        # Overlapping kernels: the second cannot nest in the first, so it goes to an overflow
        # track under the stream; the third nests in the first.
        wide = d.named("wide")
        self.assertEqual([d.track_name(w["track"]) for w in wide],
                         ["GPU 0 \u00b7 stream 9", "GPU 0 \u00b7 stream 9 (overlap 1)"])
        lane = d.tracks[wide[1]["track"]]
        self.assertEqual(d.tracks[lane.parent_uuid].name, "GPU 0 \u00b7 stream 9")
        self.assertEqual([(w["ts"], w["end"]) for w in wide],
                         [(wide[0]["ts"], wide[0]["ts"] + 10000),
                          (wide[0]["ts"] + 5000, wide[0]["ts"] + 20000)])
        bad = d.named("bad\ufffdname")  # bytes that are not UTF-8 become U+FFFD
        self.assertEqual(len(bad), 1)
        self.assertIs(bad[0]["parent"], wide[0])  # the first track where it nests
        self.assertEqual(bad[0]["args"], {})  # no geometry recorded: none made up
        self.assertEqual(wide[0]["args"], {"grid": [1, 1, 1], "block": [32, 1, 1]})
        streams = sorted(t.name for t in d.tracks.values() if "stream" in t.name)
        self.assertEqual(streams, ["GPU 0 \u00b7 stream 0", "GPU 0 \u00b7 stream 9",
                                   "GPU 0 \u00b7 stream 9 (overlap 1)"])
        self.assertEqual(len(d.slices), 4 * 3 + 2 + 1 + 3)

    def test_opencl_queues_and_global_size(self):
        path = self.gen("opencl", "--kernels", "6", "--seconds", "0.01")
        d = Decoded(self, self.export(path))
        queues = sorted(t.name for t in d.tracks.values() if "\u00b7" in t.name)
        # An OpenCL device (perhaps a CPU) is a "device", its queue a "queue", as in the
        # Chrome export and the report.
        self.assertEqual(queues, ["device 0 \u00b7 queue 1"])
        self.assertIn("device 0", [t.name for t in d.tracks.values()])
        kernels = d.named("scale")
        self.assertEqual(len(kernels), 6)
        # Even launches gave no local size: the work-items, no made-up groups.
        self.assertEqual(kernels[0]["args"]["global_size"], [4096, 1, 1])
        self.assertNotIn("grid", kernels[0]["args"])
        self.assertEqual(kernels[1]["args"]["grid"], [16, 1, 1])
        self.assertEqual(kernels[1]["args"]["block"], [256, 1, 1])
        self.assertEqual(kernels[0]["args"]["launch_to_start_ns"], 10000)
        self.assertEqual(kernels[0]["args"]["queued_to_start_ns"], 8000)
        self.assertEqual(kernels[0]["args"]["submitted_to_start_ns"], 2000)
        for k in kernels:
            self.assertNotIn("registers", k["args"])
            self.assertNotIn("shared_bytes", k["args"])
        copies = d.named("[OpenCL write]") + d.named("[OpenCL read]")
        self.assertEqual([c["args"]["bytes"] for c in copies], [16384, 16384])
        flows = [f for s in d.slices for f in s["flows"]]
        self.assertEqual(sorted(flows), sorted(f for s in d.slices for f in s["terminates"]))
        self.assertEqual(len(flows), 6 + 2)

    def test_large_export_is_whole(self):
        # Many chunks of output and many batches between the reading and the writing threads:
        # one stream still, every slice closed, every flow paired.
        path = self.gen("launch-bound", "--kernels", "80000", "--seconds", "0.2",
                        "--period-us", "2.5")
        d = Decoded(self, self.export(path))
        self.assertEqual(len(d.slices), 240001)
        kernels = d.named("small(float*, int)")
        self.assertEqual(len(kernels), 80000)
        ins = [f for k in kernels for f in k["terminates"]]
        self.assertEqual(len(set(ins)), 80000)
        self.assertEqual(set(ins), {f for s in d.named("cudaLaunchKernel") for f in s["flows"]})
        # Launches 2.5 us apart last 40 us each, kernels 5 us: on one thread (one stream) they
        # overlap without nesting, so they go to overflow tracks; whatever track a slice is on,
        # its end is its own.
        want = {"cudaLaunchKernel": 40000, "cudaGetLastError": 1000, "small(float*, int)": 5000,
                "outer": 80000 * 2500 + 55000}
        self.assertEqual({s["name"] for s in d.slices}, set(want))
        self.assertTrue(all(s["end"] - s["ts"] == want[s["name"]] for s in d.slices))
        lanes = [t.name for t in d.tracks.values() if "(overlap" in t.name]
        self.assertEqual(lanes, ["host thread 1 (overlap %d)" % i for i in range(1, 16)]
                         + ["GPU 0 \u00b7 stream 0 (overlap 1)"])  # 16 and 2 at once

    def test_size_against_chrome(self):
        # The same trace as Chrome JSON: the protobuf at most half its size (issue 11).
        path = self.gen("launch-bound", "--kernels", "20000", "--seconds", "0.05",
                        "--period-us", "2", "--no-poll")
        pf = self.export(path)
        js = os.path.join(self.tmp, "t.json")
        self.kprof("export", path, "--chrome", js, expect=0)
        ratio = os.path.getsize(pf) / os.path.getsize(js)
        self.assertLessEqual(ratio, 0.5, "%d bytes against Chrome's %d" % (
            os.path.getsize(pf), os.path.getsize(js)))

    def test_output_rules(self):
        path = self.gen("launch-bound", "--kernels", "20", "--seconds", "0.01")
        out = self.export(path)
        data = open(out, "rb").read()
        # '-' is standard output, byte for byte the file.
        env = dict(os.environ)
        for k, v in self.env.items():
            env.pop(k, None) if v is None else env.__setitem__(k, v)
        p = subprocess.run([kptest.KPROF, "export", path, "--perfetto", "-"], capture_output=True,
                           env=env, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, data)
        # An existing output needs --force; the trace itself is never an output.
        p = self.kprof("export", path, "--perfetto", out, expect=2)
        self.assertIn("--force", p.stderr)
        self.kprof("export", path, "--perfetto", out, "--force", expect=0)
        self.assertEqual(open(out, "rb").read(), data)
        p = self.kprof("export", path, "--perfetto", path, "--force", expect=2)
        self.assertEqual(open(path, "rb").read(4), b"SQLi")
        # One format at a time; a value is needed; no format at all names both.
        p = self.kprof("export", path, "--perfetto", out, "--chrome", out + ".json", expect=2)
        self.assertIn("one format at a time", p.stderr)
        p = self.kprof("export", path, "--perfetto", expect=2)
        self.assertIn("needs a value", p.stderr)
        p = self.kprof("export", path, expect=2)
        self.assertIn("--perfetto", p.stderr)
        self.assertIn("--perfetto", self.kprof("export", "--help", expect=0).stdout)
        # A full device: the write error, named, exit 1.
        if os.path.exists("/dev/full"):
            p = self.kprof("export", path, "--perfetto", "/dev/full", expect=1)
            self.assertIn("cannot write /dev/full", p.stderr)
        # A damaged trace: exit 2, nothing left behind.
        big = self.gen("launch-bound", "--kernels", "3000", "--seconds", "0.02", name="big.kprof")
        cut = os.path.join(self.tmp, "cut.kprof")
        with open(big, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:os.path.getsize(big) // 2])
        bad = os.path.join(self.tmp, "cut.pftrace")
        p = self.kprof("export", cut, "--perfetto", bad, expect=2)
        self.assertIn("damaged or truncated", p.stderr)
        self.assertFalse(os.path.exists(bad))
        self.assertEqual([f for f in os.listdir(self.tmp) if f.startswith("cut.pftrace")], [])

    def shim_env(self, extra):
        env = {"LD_PRELOAD": SHIM}
        asan = os.environ.get("ASAN_OPTIONS")
        if asan is not None:  # the shim is preloaded ahead of the sanitizer's runtime
            env["ASAN_OPTIONS"] = asan + ":verify_asan_link_order=0"
        env.update(extra)
        return env

    def leftovers(self):
        return [f for f in os.listdir(self.tmp) if ".tmp." in f]

    def test_trace_that_shrinks_while_read(self):
        # Cut while the reading thread is in the middle of it: a clear error, exit 2, nothing
        # left behind (the writer stops with the reader's error).
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        src = self.gen("launch-bound", "--kernels", "10000", "--seconds", "0.02", name="s.kprof")
        path = os.path.join(self.tmp, "shrinking.kprof")
        out = os.path.join(self.tmp, "out.pftrace")
        for at in ("read:60", "read:400"):
            shutil.copy(src, path)
            p = self.kprof("export", path, "--perfetto", out,
                           env=self.shim_env({"KPROF_SHIM_FILE": path, "KPROF_SHIM_AT": at,
                                              "KPROF_SHIM_ACTION": "shrink"}), expect=2)
            self.assertIn("is damaged or truncated", p.stderr)
            self.assertLess(os.path.getsize(path), os.path.getsize(src))  # it did shrink
            self.assertFalse(os.path.exists(out))
            self.assertEqual(self.leftovers(), [])

    def test_signal_during_export_leaves_no_temporary(self):
        # kprof paused inside a read of the trace (on its reading thread) gets a signal: it
        # exits 128 + the signal and leaves no temporary.
        if not SHIM:
            self.skipTest("KPROF_IO_SHIM unset (run through ctest)")
        path = self.gen("launch-bound", "--kernels", "10000", "--seconds", "0.02")
        out = os.path.join(self.tmp, "out.pftrace")
        ready = os.path.join(self.tmp, "ready")
        env = dict(os.environ)
        for k, v in self.env.items():
            env.pop(k, None) if v is None else env.__setitem__(k, v)
        env.update(self.shim_env({"KPROF_SHIM_FILE": path, "KPROF_SHIM_ACTION": "pause",
                                  "KPROF_SHIM_AT": "read:60", "KPROF_SHIM_READY": ready}))
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if os.path.exists(ready):
                os.unlink(ready)
            proc = subprocess.Popen([kptest.KPROF, "export", path, "--perfetto", out],
                                    cwd=self.tmp, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            try:
                # Until the shim says kprof is inside its work (or kprof ends: asserted below).
                while not os.path.exists(ready) and proc.poll() is None:
                    time.sleep(0.01)
                if proc.poll() is None:
                    proc.send_signal(sig)
                proc.wait(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            self.assertEqual(proc.returncode, 128 + sig, proc.stderr.read().decode())
            proc.stderr.close()
            self.assertFalse(os.path.exists(out))
            self.assertEqual(self.leftovers(), [])

    def test_trace_processor(self):
        # perfetto's own importer, where it can be had: the slices, flows and no import errors.
        perfetto_protos()
        path = self.gen("launch-bound", "--kernels", "50", "--seconds", "0.05")
        out = self.export(path)
        script = r"""
import json, os, sys
from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
config = TraceProcessorConfig(bin_path=os.environ.get("KPROF_TRACE_PROCESSOR") or None,
                              load_timeout=60)
try:
    tp = TraceProcessor(trace=sys.argv[1], config=config)
except Exception as e:
    print(json.dumps({"unavailable": "%s: %s" % (type(e).__name__, str(e).strip()[-300:])}))
    sys.exit(0)
q = lambda sql: [dict(r.__dict__) for r in tp.query(sql)]
print(json.dumps({
    "slices": q("select category, count(*) as n from slice group by category order by 1"),
    "depths": q("select name, max(depth) as d from slice group by name order by 1"),
    "flows": q("select count(*) as n from flow"),
    "errors": q("select name, idx, value from stats where value > 0 and "
                "severity in ('error', 'data_loss')")}))
tp.close()
"""
        try:
            p = subprocess.run([sys.executable, "-c", script, out], capture_output=True,
                               text=True, timeout=300, cwd=self.tmp,
                               env=dict(os.environ, HOME=os.environ.get("HOME", self.tmp)))
        except subprocess.TimeoutExpired:
            self.skipTest("trace_processor did not start within 300 s")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        if "unavailable" in r:
            self.skipTest("trace_processor cannot be had here (its binary is downloaded from "
                          "outside PyPI; KPROF_TRACE_PROCESSOR names a local one): "
                          + r["unavailable"])
        self.assertEqual({s["category"]: s["n"] for s in r["slices"]},
                         {"api": 100, "kernel": 50, "nvtx": 1})
        self.assertEqual({s["name"]: s["d"] for s in r["depths"]},
                         {"cudaGetLastError": 1, "cudaLaunchKernel": 1, "outer": 0,
                          "small(float*, int)": 0})
        self.assertEqual(r["flows"], [{"n": 50}])
        self.assertEqual(r["errors"], [])


if __name__ == "__main__":
    if not os.environ.get(VENV_MARK):
        python, why = venv_python()
        if python:
            os.environ[VENV_MARK] = "1"
            os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
        os.environ[VENV_MARK] = "unavailable"
        os.environ[NO_DECODER] = why
    kptest.main()
