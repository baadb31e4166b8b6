"""Inputs meant to break kprof: damaged caches, cut-off files, FIFOs, arguments kprof cannot
bind, grids that overflow, odd store rows. Each gets a clear error or a correct result — never
a crash or a hang."""

import json
import os
import re
import sqlite3
import stat
import subprocess

import kptest
import tree_trace

SPEC = "f32:4096,f32:4096,f32:4096,u32=4096"


class Hostile(kptest.KprofTestCase):
    def setUp(self):
        super().setUp()
        self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        self.args = ("run", "demo", "--grid", "4096", "--tg", "64", "--buffers", SPEC)

    def test_truncated_cache_entry_is_a_miss(self):
        ref = self.run_json(*self.args)
        d = os.path.join(self.cache, "opencl")
        binfile = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".bin")][0]
        data = open(binfile, "rb").read()
        with open(binfile, "wb") as f:
            f.write(data[:len(data) // 2])
        r = self.run_json(*self.args)
        self.assertFalse(r["compile"]["cache_hit"])
        self.assertEqual(r["buffers"], ref["buffers"])
        # Same length, other bytes: the hash catches it.
        data = bytearray(open(binfile, "rb").read())
        data[len(data) // 2] ^= 0xFF
        with open(binfile, "wb") as f:
            f.write(bytes(data))
        self.assertFalse(self.run_json(*self.args)["compile"]["cache_hit"])

    def test_edited_header_is_a_cache_miss(self):
        inc = os.path.join(self.tmp, "inc")
        os.makedirs(inc)
        with open(os.path.join(inc, "v.h"), "w") as f:
            f.write("#define VAL 1\n")
        path = self.write("k.cl", '#include "v.h"\n'
                          "__kernel void k(__global int *x) { x[get_global_id(0)] = VAL; }\n")
        args = ("run", path, "--grid", "4", "--tg", "4", "--buffers", "i32:4", "-I", inc)
        self.assertEqual(self.run_json(*args)["buffers"][0]["first"], [1, 1, 1, 1])
        self.assertTrue(self.run_json(*args)["compile"]["cache_hit"])
        with open(os.path.join(inc, "v.h"), "w") as f:
            f.write("#define VAL 7\n")
        r = self.run_json(*args)
        self.assertFalse(r["compile"]["cache_hit"])
        self.assertEqual(r["buffers"][0]["first"], [7, 7, 7, 7])

    def test_fifo_and_devices_are_refused(self):
        fifo = os.path.join(self.tmp, "fifo.cl")
        os.mkfifo(fifo)
        p = self.kprof("isolate", "f", "--from", fifo, expect=2, timeout=30)
        self.assertIn("not a regular file", p.stderr)
        p = self.kprof("run", fifo, "--buffers", "f32:1", expect=2, timeout=30)
        self.assertIn("not a regular file", p.stderr)
        d = os.path.join(self.home, "kernels", "z")
        os.makedirs(d)
        os.symlink("/dev/zero", os.path.join(d, "kernel.cl"))
        p = self.kprof("run", "z", "--buffers", "f32:1", expect=2, timeout=30)
        self.assertIn("holds no kernel source", p.stderr)

    def test_directory_named_like_a_kernel_is_ignored(self):
        d = os.path.join(self.home, "kernels", "demo")
        os.makedirs(os.path.join(d, "kernel.cu"))
        self.run_json(*self.args)

    def test_image_argument_is_refused(self):
        path = self.write("im.cl", "__kernel void im(__global float *o, read_only image2d_t img)"
                                   " { o[0] = 1; }")
        p = self.kprof("run", path, "--buffers", "f32:256,f32:1", "--grid", "256", "--tg", "256",
                       expect=2)
        self.assertIn("argument 2 'img' is image2d_t, which kprof cannot bind", p.stderr)

    def test_local_memory_above_the_device(self):
        path = self.write("lo.cl", "__kernel void lo(__global float *o, __local float *s)"
                                   " { s[0] = 1; o[0] = s[0]; }")
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        most = max(d["threadgroup_memory_bytes"] for d in caps["backends"][0]["devices"])
        p = self.kprof("run", path, "--buffers", "f32:256,local:%d" % (most * 2), "--grid", "256",
                       "--tg", "256", expect=2)
        self.assertIn("bytes per threadgroup", p.stderr)

    def test_grids_that_overflow(self):
        for grid, tg, text in (("4294967296", "1", "above kprof's limit"),
                               ("4294967296x4294967296", "256x1", "above kprof's limit"),
                               ("18446744073709551615", "256", "above kprof's limit"),
                               ("4194304x4194304", "256x1", "more than 2^40 threads"),
                               ("99999999999999999999999", "1", "--grid")):
            p = self.kprof("run", "demo", "--buffers", SPEC, "--grid", grid, "--tg", tg, expect=2)
            self.assertIn(text, p.stderr, grid)

    def test_scalar_values(self):
        for spec, text in (("f32:4096,f32:4096,f32:4096,u32= 1", "starts with a space"),
                           ("f32:4096,f32:4096,f32:4096,u32=-1", "negative"),
                           ("f32:4096,f32:4096,f32:1e999,u32=1", "count"),
                           ("f32:4096,f32:4096,f32:4096:const=1e999,u32=1", "out of range")):
            p = self.kprof("run", "demo", "--buffers", spec, "--grid", "4096", "--tg", "64",
                           expect=2)
            self.assertIn(text, p.stderr, spec)

    def test_huge_constants_in_json(self):
        path = self.write("c.cl", "__kernel void c(__global double *x) { x[0] = x[1]; }")
        r = self.run_json("run", path, "--buffers", "f64:4:const=1e300", "--grid", "1", "--tg",
                          "1")
        self.assertEqual(r["buffers"][0]["max"], 1e300)

    def test_compile_failure_with_an_unwritable_cache(self):
        blocker = os.path.join(self.tmp, "blocker")
        open(blocker, "w").close()
        path = self.write("bad.cl", "__kernel void bad(__global float *x) { x[0] = y; }\n")
        p = self.kprof("run", path, "--buffers", "f32:1", "--grid", "1", "--tg", "1",
                       env={"KPROF_CACHE_DIR": blocker}, expect=4)
        self.assertNotIn("kept in", p.stderr)
        self.assertIn("could not keep source, options and log", p.stderr)

    def test_odd_store_row(self):
        store = os.path.join(self.tmp, "store.db")
        # The smallest buffers kprof measures over: the last-level cache's size (16M if less).
        caps = json.loads(self.kprof("caps", "--json", "--backend", "opencl", expect=0).stdout)
        cache = caps["backends"][0]["devices"][0].get("global_mem_cache_bytes") or 0
        self.kprof("caps", "--measure", "--backend", "opencl", "--device", "0", "--max-bytes",
                   "%dM" % max(16, -(-cache // (1 << 20))), "--iters", "1", expect=0)
        db = sqlite3.connect(store)
        db.execute("UPDATE ceilings SET measured_at = 9223372036854775807")
        db.commit()
        db.close()
        p = self.kprof("caps", expect=0)
        self.assertIn("bandwidth ceiling", p.stdout)

    def test_read_only_cache_folder_still_runs(self):
        if os.geteuid() == 0:
            self.skipTest("root ignores file permissions, so a read-only folder cannot be made")
        os.makedirs(self.cache)
        os.chmod(self.cache, stat.S_IRUSR | stat.S_IXUSR)
        try:
            r = self.run_json(*self.args)
            self.assertFalse(r["compile"]["cache_hit"])
        finally:
            os.chmod(self.cache, stat.S_IRWXU)


class TerminalEscapes(kptest.KprofTestCase):
    """Names, commands and devices from files reach every text output escaped (issue 23), as
    `notes list` and the error lines print them; JSON keeps the bytes, JSON-escaped."""
    needs_opencl = False

    def assert_escaped(self, args, expect_text=True):
        env = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        p = subprocess.run([kptest.KPROF, *args], cwd=self.tmp, capture_output=True, env=env,
                           timeout=120)
        self.assertEqual(p.returncode, 0, (args, p.stderr))
        out = p.stdout.decode("utf-8")  # strict: valid UTF-8
        for c in out:
            self.assertFalse(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) < 0xa0,
                             (args, "a raw control character %r in the output" % c))
        if expect_text:
            self.assertIn(tree_trace.HOSTILE_TEXT, out, args)
        return out

    def test_trace_reports(self):
        a = os.path.basename(tree_trace.make_hostile(self, "a.kprof"))
        b = os.path.basename(tree_trace.make_hostile(self, "b.kprof"))
        out = self.assert_escaped(["report", a])
        self.assertIn("Command: prog --arg " + tree_trace.HOSTILE_TEXT.replace("\\n", ""), out)
        for args in (["report", a, "--trace"], ["report", a, "--tree"],
                     ["report", a, "--by", "path"], ["report", a, "--by", "name"],
                     ["diff", a, b], ["diff", a, b, "--by", "path"], ["diff", a, b, "--by", "name"]):
            self.assert_escaped(args)
        # JSON holds the bytes, escaped as JSON does (\u001b, and \u00ff for the stray byte).
        doc = json.loads(self.kprof("report", a, "--json", expect=0).stdout)
        self.assertIn("\x1b[31mil\r", doc["command"])
        doc = json.loads(self.kprof("report", a, "--tree", "--json", expect=0).stdout)
        self.assertIn("kernev\x1b[31mil\r\nx\u00ff\x07", [n["name"] for n in doc["nodes"]])

    def test_history_and_result_diff(self):
        self.kprof("notes", "add", "makes the store", expect=0)
        db = sqlite3.connect(os.path.join(self.tmp, "store.db"))
        bad = tree_trace.HOSTILE
        for i in range(2):
            db.execute("INSERT INTO runs (kind, at, device, backend, kernel, target, options, "
                       "grid, tg, buffers, median_ms, min_ms, nsamples, samples, result) VALUES "
                       "('run', 1700000000, ?, 'opencl', ?, 'k.cl', ?, '4096', '64', 'f32:4', "
                       "1.0, 0.9, 6, '[1,1.01,0.99,1,1.02,0.98]', '{}')",
                       (b"dev" + bad, b"kern" + bad, b"-DX=" + bad if i else b"-DX=1"))
        db.commit()
        db.close()
        self.assert_escaped(["history"])
        self.assert_escaped(["diff", "1", "2"])


class DamagedTimes(kptest.KprofTestCase):
    """Events whose end precedes their start (issue 23): the damaged trace says so with their
    count, and no table or row prints a negative time: their durations count as 0."""
    needs_opencl = False
    NOTE = "3 events end before they start (a damaged trace): their durations count as 0"

    def test_no_negative_durations(self):
        t = os.path.basename(tree_trace.make_backwards(self))
        negative = re.compile(r"(?<![\w.])-\d")  # "-1 ms", "-5.00%"; not "cuda-1" or "--raw"
        for args in (["report", t], ["report", t, "--trace"], ["report", t, "--tree"],
                     ["report", t, "--by", "name"], ["report", t, "--by", "path"],
                     ["diff", t, t]):
            out = self.kprof(*args, expect=0).stdout
            self.assertIn(self.NOTE, out, args)
            for line in out.splitlines():
                self.assertIsNone(negative.search(line), (args, line))
        out = self.kprof("report", t, expect=0).stdout
        self.assertRegex(out, r"0\.00%\s+0 ns\s+1\s+backwards")
        self.assertRegex(out, r"10\.00%\s+2 ms\s+2 .*cudaLaunchKernel")
        self.assertIn("calling GPU APIs took 2 ms (10.00% of the wall)", out)
        doc = json.loads(self.kprof("report", t, "--json", expect=0).stdout)
        self.assertIn(self.NOTE + " in every table and row", doc["notes"])
        for table in ("host", "device", "nvtx"):
            for row in doc[table]:
                self.assertGreaterEqual(row["total_s"], 0, (table, row))
                self.assertGreaterEqual(row["min_s"], 0, (table, row))
        doc = json.loads(self.kprof("report", t, "--trace", "--json", expect=0).stdout)
        for key in ("host_trace", "device_trace"):
            for row in doc[key]:
                self.assertGreaterEqual(row["duration_s"], 0, (key, row))
        tree = json.loads(self.kprof("report", t, "--tree", "--json", expect=0).stdout)
        for n in tree["nodes"]:
            self.assertGreaterEqual(n["total_s"], 0, n)
            self.assertGreaterEqual(n["min_s"] if n["min_s"] is not None else 0, 0, n)


if __name__ == "__main__":
    kptest.main()
