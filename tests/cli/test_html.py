"""The HTML pages (issue 27): `kprof report FILE --html`, `export --html`, `diff --html`,
`bench --html` and `sweep --html`. The file itself: its data block is what --json prints for the
same input, its timeline holds every event of the trace (and past the limit, a bin for every
busy stretch), no text of a trace can end its script, and bad inputs and outputs are refused as
every output of kprof's is. Traces come from gen_trace.py, whose every duration the records fix;
nothing here depends on how fast the machine is. What the page shows in a browser:
test_html_render.py."""

import json
import os
import re
import shutil
import sqlite3
import sys

import kptest

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
DATA = re.compile(r'<script type="application/json" id="kprof-data">(.*?)</script>', re.S)


def page_data(path):
    """The page's data block, parsed; and the page's text."""
    with open(path, encoding="utf-8") as f:
        html = f.read()
    m = DATA.search(html)
    assert m, "no kprof-data block in " + path
    return json.loads(m.group(1)), html


def slices(tl):
    """The timeline's slices as dicts, starts decoded (ns from t0)."""
    s = tl["slices"]
    out, t = [], 0
    for i in range(len(s["start"])):
        t += s["start"][i]
        out.append({k: s[k][i] for k in s} | {"start": t})
    return out


def quantile(v, q):
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


class Page(kptest.KprofTestCase):
    needs_opencl = False

    def gen(self, name, pattern, *extra):
        out = os.path.join(self.tmp, name)
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, pattern, *extra, expect=0)
        return out

    def report_json(self, trace, *args):
        return json.loads(self.kprof("report", trace, "--json", *args, expect=0).stdout)

    def page(self, trace, name="page.html"):
        out = os.path.join(self.tmp, name)
        self.kprof("report", trace, "--html", out, expect=0)
        return page_data(out)

    def test_trace_page_holds_the_report_and_every_event(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "40")
        d, html = self.page(trace)
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        self.assertEqual(d["page"], "trace")
        self.assertEqual(d["report"], self.report_json(trace))
        self.assertEqual(d["tree"], self.report_json(trace, "--tree"))
        tl = d["timeline"]
        self.assertFalse(tl["decimated"])
        self.assertEqual(tl["events"], d["report"]["events"])
        ss = slices(tl)
        self.assertEqual(len(ss), d["report"]["events"])
        kinds, names = tl["kinds"], tl["names"]
        by_kind = {}
        for s in ss:
            by_kind.setdefault(kinds[s["kind"]], []).append(s)
        self.assertEqual({k: len(v) for k, v in by_kind.items()},
                         {"range": 40, "api": 80, "kernel": 80})
        # Sorted by start; the device table's totals are the kernels' durations summed.
        self.assertEqual([s["start"] for s in ss], sorted(s["start"] for s in ss))
        for row in d["report"]["device"]:
            total = sum(s["dur"] for s in by_kind["kernel"] if names[s["name"]] == row["name"])
            self.assertAlmostEqual(total / 1e9, row["total_s"], places=9)
        # Tracks: the host thread (ranges at depth 0, the calls in them at 1) and the stream.
        tracks = tl["tracks"]
        self.assertEqual(sorted(t["kind"] for t in tracks), ["stream", "thread"])
        self.assertTrue(all(tracks[s["track"]]["kind"] == "thread" and s["depth"] == 0
                            for s in by_kind["range"]))
        self.assertTrue(all(s["depth"] == 1 for s in by_kind["api"]))
        # Flows: every kernel points at the call that launched it, and that call back at it.
        for i, s in enumerate(ss):
            if kinds[s["kind"]] == "kernel":
                call = ss[s["flow"]]
                self.assertEqual(kinds[call["kind"]], "api")
                self.assertEqual(call["flow"], i)
                self.assertLessEqual(call["start"], s["start"])
                self.assertEqual(s["latency"], s["start"] - call["start"])
                g = tl["geoms"][s["geom"]]
                self.assertEqual(g["grid"], [16384, 1, 1])
                self.assertEqual(g["tg"], [256, 1, 1])
                self.assertEqual(g["groups"], [64, 1, 1])
        # The histograms: each kernel's instances, all of them, within its bins' edges.
        hist = {h["name"]: h for h in d["hist"]}
        self.assertEqual(set(hist), {"steady", "tuned"})
        for row in d["report"]["device"]:
            h = hist[row["name"]]
            self.assertEqual(sum(h["counts"]), row["calls"])
            self.assertEqual(len(h["edges_s"]), len(h["counts"]) + 1)
            self.assertAlmostEqual(h["edges_s"][0], row["min_s"], places=12)
            self.assertAlmostEqual(h["edges_s"][-1], row["max_s"], places=12)

    def test_slow_rows_are_the_text_tables(self):
        # launch-bound: calls of several names; the thresholds are the text table's rule.
        trace = self.gen("a.kprof", "host-bound", "--kernels", "5", "--steps", "3",
                         "--seconds", "0.05")
        d, _ = self.page(trace)
        for table in ("host", "device", "nvtx"):
            totals = sorted(r["total_s"] for r in d["report"][table] if r["total_s"] >= 1e-8)
            if len(totals) < 4:
                self.assertIsNone(d["slow"][table], table)
                continue
            self.assertAlmostEqual(d["slow"][table]["p75"], quantile(totals, 0.75), places=12)
            self.assertAlmostEqual(d["slow"][table]["p95"], quantile(totals, 0.95), places=12)
        self.assertIsNotNone(d["slow"]["host"], "the host-bound trace has calls of 4+ names")

    def test_decimated_timeline_shows_every_busy_stretch(self):
        # 40000 launches, polls and kernels: more events than the page's 100000 slices.
        trace = self.gen("big.kprof", "launch-bound", "--kernels", "40000", "--period-us", "45")
        d, html = self.page(trace)
        tl = d["timeline"]
        self.assertTrue(tl["decimated"])
        self.assertGreater(tl["events"], tl["slices_limit"])
        self.assertNotIn("slices", tl)
        self.assertLess(len(html), 1 << 20, "a decimated page stays small")
        rows = self.report_json(trace, "--trace")
        t0, bin_ns = tl["t0_ns"], tl["bin_ns"]
        self.assertGreaterEqual(bin_ns * tl["bins"], tl["span_ns"])
        stream = [i for i, t in enumerate(tl["tracks"]) if t["kind"] == "stream"]
        self.assertEqual(len(stream), 1)
        summary = [s for s in tl["summary"] if s["track"] == stream[0]]
        self.assertEqual(len(summary), 1)
        s = summary[0]
        # Every bin a kernel touches is there, and no other; busy time adds up to theirs.
        want, busy = set(), 0
        start_of = rows["device_trace"][0]
        key_start = "start_s" if "start_s" in start_of else None
        self.assertIsNotNone(key_start, "device_trace rows have start_s")
        for r in rows["device_trace"]:
            a = round(r["start_s"] * 1e9)
            b = a + max(round(r["duration_s"] * 1e9), 1)
            want.update(range(a // bin_ns, (b - 1) // bin_ns + 1))
            busy += b - a
        t_first = min(round(r["start_s"] * 1e9) for r in rows["device_trace"])
        # start_s is from the trace's start, which is t0
        self.assertGreaterEqual(t_first, 0)
        self.assertEqual(set(s["bin"]), want)
        self.assertEqual(sum(s["count"]), len(rows["device_trace"]) +
                         sum(1 for r in rows["device_trace"]
                             if (round(r["start_s"] * 1e9) // bin_ns) !=
                             ((round(r["start_s"] * 1e9) +
                               max(round(r["duration_s"] * 1e9), 1) - 1) // bin_ns)))
        self.assertAlmostEqual(sum(s["busy"]) / busy, 1, places=3)
        self.assertTrue(all(0 < b <= bin_ns for b in s["busy"]))
        # The host thread: the range 'outer' alone at depth 0, the calls in it at 1.
        names = tl["names"]
        host = {x["depth"]: x for x in tl["summary"]
                if tl["tracks"][x["track"]]["kind"] == "thread"}
        self.assertEqual(sorted(host), [0, 1])
        self.assertEqual({names[n] for n in host[0]["name"]}, {"outer"})
        self.assertNotIn("outer", {names[n] for n in host[1]["name"]})

    def test_ranges_hold_the_calls_that_start_with_them(self):
        # launch-bound: the range 'outer' starts with its first call, and is stored after it.
        trace = self.gen("a.kprof", "launch-bound", "--kernels", "200")
        d, _ = self.page(trace)
        tl = d["timeline"]
        kinds, names = tl["kinds"], tl["names"]
        depth = {}
        for s in slices(tl):
            if tl["tracks"][s["track"]]["kind"] == "thread":
                depth.setdefault((kinds[s["kind"]], names[s["name"]]), set()).add(s["depth"])
        self.assertEqual(depth.pop(("range", "outer")), {0})
        self.assertTrue(depth)
        for key, ds in depth.items():
            self.assertEqual(ds, {1}, key)

    def test_page_script_cannot_end_its_element(self):
        for name in ("page.js", "page.css"):
            with open(os.path.join(kptest.SOURCE_DIR, "src", "export", "page", name)) as f:
                text = f.read().lower()
            self.assertNotIn("</script", text, name)
            self.assertNotIn("</style", text, name)
            self.assertNotRegex(text, r"https?://(?!www\.w3\.org/2000/svg)", name)

    def test_no_text_of_a_trace_ends_the_script(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "10")
        evil = "</script><img src=x onerror=alert(1)>&<!--"
        with sqlite3.connect(trace) as db:
            db.execute("UPDATE strings SET text = ? WHERE text = 'tuned'", (evil,))
        d, html = self.page(trace)
        self.assertNotIn("<img", html)
        self.assertNotIn("<!--", html)
        self.assertIn(evil, d["timeline"]["names"])
        self.assertIn(evil, [r["name"] for r in d["report"]["device"]])
        self.assertEqual(html.count("</script>"), 2)  # the data block's and the script's
        # Nothing the page loads from elsewhere: its script and style are inline.
        self.assertRegex(html, r"<meta http-equiv=\"Content-Security-Policy\" "
                               r"content=\"default-src 'none';")
        self.assertNotRegex(html, r"<(link|iframe|object|embed)\b")
        self.assertNotRegex(html, r"<(script|img)\b[^>]*\bsrc=")

    def test_export_writes_the_same_page(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "10")
        a, _ = self.page(trace, "a.html")
        out = os.path.join(self.tmp, "b.html")
        self.kprof("export", trace, "--html", out, expect=0)
        self.assertEqual(page_data(out)[0], a)
        out = os.path.join(self.tmp, "c.HTML")
        self.kprof("export", trace, "-o", out, expect=0)
        self.assertEqual(page_data(out)[0], a)

    def test_bad_inputs_and_outputs(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "10")
        out = os.path.join(self.tmp, "p.html")
        p = self.kprof("report", trace, "--html", out, "--json", expect=2)
        self.assertIn("--html", p.stderr)
        self.kprof("report", trace, "--force", expect=2)
        self.kprof("report", trace, "--html", "", expect=2)
        self.kprof("report", os.path.join(self.tmp, "none.kprof"), "--html", out, expect=2)
        self.assertFalse(os.path.exists(out))
        bad = self.write("bad.kprof", "not a trace\n")
        p = self.kprof("report", bad, "--html", out, expect=2)
        self.assertFalse(os.path.exists(out))
        self.kprof("report", trace, "--html", trace, "--force", expect=2)  # the input itself
        self.kprof("report", trace, "--html", self.tmp, expect=2)  # a folder
        with open(out, "w") as f:
            f.write("keep")
        p = self.kprof("report", trace, "--html", out, expect=2)
        self.assertIn("--force", p.stderr)
        self.assertEqual(open(out).read(), "keep")
        self.kprof("report", trace, "--html", out, "--force", expect=0)
        self.assertEqual(page_data(out)[0]["page"], "trace")
        self.kprof("report", trace, "--html", os.path.join(self.tmp, "no", "p.html"), expect=1)
        self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp" in n], [])

    def test_diff_page_is_the_diff_json(self):
        a = self.gen("a.kprof", "two-kernels", "--kernels", "40")
        b = self.gen("b.kprof", "two-kernels", "--kernels", "40", "--slower", "20", "--extra")
        out = os.path.join(self.tmp, "d.html")
        want = json.loads(self.kprof("diff", a, b, "--json", "--fail-if-slower", "1").stdout)
        p = self.kprof("diff", a, b, "--html", out, "--fail-if-slower", "1")
        self.assertEqual(p.returncode, 5 if want["fails_gate"] else 0, p.stderr)
        d, _ = page_data(out)
        self.assertEqual(d["page"], "diff")
        self.assertEqual(d["diff"], want)
        self.kprof("diff", a, b, "--html", out, "--json", expect=2)
        self.kprof("diff", a, b, "--html", out, expect=2)  # exists: --force replaces it
        self.kprof("diff", a, b, "--html", out, "--force", expect=0)
        self.kprof("diff", a, b, "--html", a, "--force", expect=2)  # an input

    def test_diff_of_results_page(self):
        def bench(path, ms):
            samples = [ms * (1 + ((i * 37) % 11 - 5) * 1e-3) for i in range(60)]
            with open(path, "w") as f:
                json.dump({"version": 1, "kind": "bench", "device": "Fake GPU", "points": [
                    {"point": "", "cache": "hot",
                     "kernels": [{"samples_ms": samples, "rounds": 60}]}]}, f)
            return path
        a = bench(os.path.join(self.tmp, "a.json"), 1.0)
        b = bench(os.path.join(self.tmp, "b.json"), 1.3)
        out = os.path.join(self.tmp, "d.html")
        want = json.loads(self.kprof("diff", a, b, "--json", expect=0).stdout)
        self.kprof("diff", a, b, "--html", out, expect=0)
        self.assertEqual(page_data(out)[0]["diff"], want)


class LabPages(kptest.KprofTestCase):
    """bench and sweep on PoCL: the page's data is the same run's --json."""

    def setUp(self):
        super().setUp()
        self.kprof("isolate", "k", expect=0)
        self.buffers = "f32:4096,f32:4096,f32:4096,u32=4096"

    def test_bench_page_is_its_json(self):
        out = os.path.join(self.tmp, "b.html")
        p = self.kprof("bench", "k", "--entry", "demo_add", "--buffers", self.buffers, "--grid",
                       "4096", "--tg", "64", "--min-time", "0.02", "--timeout", "2", "--json",
                       "--html", out, expect=0)
        d, _ = page_data(out)
        self.assertEqual(d["page"], "bench")
        self.assertEqual(d["bench"], json.loads(p.stdout))
        self.assertTrue(d["bench"]["points"][0]["kernels"][0]["samples_ms"])
        # Checked before anything runs: an existing page without --force.
        p = self.kprof("bench", "k", "--entry", "demo_add", "--buffers", self.buffers,
                       "--html", out, expect=2)
        self.assertIn("--force", p.stderr)
        p = self.kprof("bench", "k", "--entry", "demo_add", "--buffers", self.buffers,
                       "--html", "-", expect=2)
        self.assertIn("standard output", p.stderr)
        t = os.path.join(self.tmp, "t.kprof")
        p = self.kprof("bench", "k", "--entry", "demo_add", "--buffers", self.buffers,
                       "--html", t, "--trace", t, expect=2)
        self.assertIn("one file", p.stderr)
        self.assertFalse(os.path.exists(t))

    def test_sweep_page_is_its_json(self):
        out = os.path.join(self.tmp, "s.html")
        p = self.kprof("sweep", "k", "--entry", "demo_add", "--buffers", self.buffers, "--grid",
                       "4096", "--tg-list", "32,64,128", "--iters", "5", "--json", "--html", out,
                       expect=0)
        d, _ = page_data(out)
        self.assertEqual(d["page"], "sweep")
        self.assertEqual(d["sweep"], json.loads(p.stdout))
        self.assertEqual(len(d["sweep"]["points"]), 3)
        p = self.kprof("run", "k", "--entry", "demo_add", "--buffers", self.buffers, "--html",
                       out, "--force", expect=2)
        self.assertIn("--sweep-tg", p.stderr)


if __name__ == "__main__":
    kptest.main()
