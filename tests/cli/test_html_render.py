"""The HTML pages in a browser (issue 27): each page kind — a trace (flows, geometry, metrics,
NVTX ranges), a decimated trace, a diff of two traces, a bench of A against B, a sweep — opened
in headless Chromium (tests/cli/chromium.py): it makes no network request and logs no error, it
draws (a screenshot of each kind is taken and must hold a picture, not a blank page), and every
number it shows, read back from the DOM, is the number `--json` prints for the same input,
formatted for people from that same value. Then what a user does: sort a table, fold the call
tree, zoom and pan the timeline with the wheel, drag and keys, hover a call to see its flow,
click a slice for its arguments; and the trace page in print. Screenshots go to $KPROF_SCREENSHOT_DIR (default: a folder in the
test's scratch space, removed after). Traces come from gen_trace.py; nothing depends on speed."""

import json
import os
import re
import shutil
import sys
import tempfile
import unittest

import chromium
import kptest
from test_html import page_data

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
DRAWN = "document.documentElement.dataset.drawn === '1'"
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


def png_ok(path, width):
    """A PNG of that width whose top is not all one colour: (ok, why)."""
    try:
        w, h, ch, rows = kptest.read_png(path, max_rows=400)
    except ValueError as e:
        return False, str(e)
    if w != width or h < 200:
        return False, "%dx%d" % (w, h)
    distinct = {row[i:i + 3] for row in rows[::4] for i in range(0, len(row), ch * 7)}
    return len(distinct) > 8, "%d distinct colours sampled" % len(distinct)


def resolve(data, key):
    """The value at a data-k path: `report.device[0].total_s`."""
    v = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        v = v[int(part[1:-1])] if part.startswith("[") else v[part]
    return v


def seconds_of(text):
    """A duration as people read it ("1.23 ms", "45.6 µs", "2 s"): seconds, or None."""
    m = re.search(r"(-?[\d.,]+(?:e[-+]?\d+)?)\s*(ns|µs|us|ms|min|s)\b", text)
    if not m:
        return None
    return float(m.group(1).replace(",", "")) * UNITS[m.group(2)]


class Browser(kptest.KprofTestCase):
    """What the page tests share: the browser, screenshots, the DOM's numbers."""
    needs_opencl = False
    width = 1400

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.browser = chromium.require_chromium()
        cls.shots = os.environ.get("KPROF_SCREENSHOT_DIR")
        cls.own_shots = not cls.shots
        if cls.own_shots:
            cls.shots = tempfile.mkdtemp(prefix="kprof-shots-")
        os.makedirs(cls.shots, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        if cls.own_shots:
            shutil.rmtree(cls.shots, ignore_errors=True)

    def gen(self, name, pattern, *extra):
        out = os.path.join(self.tmp, name)
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, pattern, *extra, expect=0)
        return out

    def open(self, c, path, shot):
        r = c.open(path, wait_expr=DRAWN, timeout=60)
        self.assertEqual(r.requests, [], "the page made network requests")
        self.assertEqual(r.errors, [], "the page logged errors")
        self.assertIsNotNone(r.drawn_ms)
        png = os.path.join(self.shots, shot)
        c.screenshot(png, full_page=True)
        ok, why = png_ok(png, self.width)
        self.assertTrue(ok, "%s: %s" % (shot, why))
        return r

    def numbers(self, c):
        return c.eval("Array.from(document.querySelectorAll('[data-k]')).map(function (e) {"
                      " return [e.dataset.k, e.dataset.v, e.textContent]; })")

    def check_numbers(self, c, data, must):
        """Every [data-k] element's value is the data's, its text that value formatted; and each
        key of must is shown."""
        shown = self.numbers(c)
        self.assertTrue(shown, "no numbers in the DOM")
        keys = set()
        for key, v, text in shown:
            keys.add(key)
            want = resolve(data, key)
            self.assertIsInstance(want, (int, float), key)
            self.assertEqual(float(v), float(want), key)
            if key.endswith("_s") or key.endswith("_ms"):
                got = seconds_of(text)
                if got is not None:
                    scale = 1e-3 if key.endswith("_ms") else 1.0
                    self.assertAlmostEqual(got / (want * scale) if want else got, 1 if want else 0,
                                           delta=0.01, msg="%s: %r shows %r" % (key, want, text))
        missing = [k for k in must if k not in keys]
        self.assertEqual(missing, [], "numbers the page must show")
        return shown


class Rendered(Browser):
    def test_trace_page(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "40")
        out = os.path.join(self.tmp, "a.html")
        self.kprof("report", trace, "--html", out, expect=0)
        data, _ = page_data(out)
        self.assertEqual(data["report"], json.loads(self.kprof("report", trace, "--json").stdout))
        rep = data["report"]
        must = ["report.wall_s"]
        for table in ("host", "device", "nvtx"):
            for i, _ in enumerate(rep[table]):
                must += ["report.%s[%d].total_s" % (table, i), "report.%s[%d].calls" % (table, i)]
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "trace.png")
            self.check_numbers(c, data, must)
            text = c.eval("document.body.innerText")
            for word in (rep["verdict"]["kind"], "steady", "tuned", "cudaLaunchKernel", "iter"):
                self.assertIn(word, text)
            # In print: the page and its timeline still draw, with no error.
            c.send("Emulation.setEmulatedMedia", {"media": "print"})
            c.eval("window.dispatchEvent(new Event('beforeprint'))")
            png = os.path.join(self.shots, "trace-print.png")
            c.screenshot(png, full_page=True)
            ok, why = png_ok(png, self.width)
            self.assertTrue(ok, "trace-print.png: " + why)
            self.assertTrue(c.eval("(function () { var r = document.querySelector('.tl-canvas')"
                                   ".getBoundingClientRect(); return r.width > 300 &&"
                                   " r.height > 40; })()"))
            self.assertEqual(c.eval("document.documentElement.dataset.error || ''"), "")

    def test_what_a_user_does(self):
        trace = self.gen("a.kprof", "two-kernels", "--kernels", "40")
        out = os.path.join(self.tmp, "a.html")
        self.kprof("report", trace, "--html", out, expect=0)
        data, _ = page_data(out)
        tl = data["timeline"]
        kinds = tl["kinds"]
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "trace-top.png")
            # Sorting: the device table's rows by total, one way and then the other.
            order = ("(function (table) { var t = Array.from(document.querySelectorAll('table'))"
                     ".find(function (x) { return x.querySelector('[data-k=\"report.' + table +"
                     " '[0].total_s\"]'); }); return Array.from(t.querySelectorAll("
                     "'tbody tr [data-k$=\".total_s\"]')).map(function (e) {"
                     " return parseFloat(e.dataset.v); }); })")
            click_total = ("(function (table) { var t = Array.from(document.querySelectorAll("
                           "'table')).find(function (x) { return x.querySelector('[data-k=\"report.'"
                           " + table + '[0].total_s\"]'); }); Array.from(t.querySelectorAll('th'))"
                           ".find(function (h) { return /^total/.test(h.textContent.trim()); })"
                           ".click(); })")
            before = c.eval(order + "('device')")
            self.assertEqual(before, sorted(before, reverse=True))
            c.eval(click_total + "('device')")
            one = c.eval(order + "('device')")
            c.eval(click_total + "('device')")
            other = c.eval(order + "('device')")
            self.assertEqual(sorted(one), sorted(before))
            self.assertNotEqual(one, other)
            self.assertIn(one, (sorted(one), sorted(one, reverse=True)))
            self.assertEqual(other, list(reversed(one)))
            # The call tree folds and opens.
            shown = "document.querySelectorAll('table.tree tbody tr:not([hidden])').length"
            opened = c.eval(shown)
            c.eval("Array.from(document.querySelectorAll('button')).find(function (b) {"
                   " return b.textContent === 'close all'; }).click()")
            closed = c.eval(shown)
            self.assertLess(closed, opened)
            c.eval("Array.from(document.querySelectorAll('button')).find(function (b) {"
                   " return b.textContent === 'open all'; }).click()")
            self.assertGreater(c.eval(shown), opened)  # the kernels under the calls too
            # The timeline: wheel zooms at the cursor, drag pans, keys zoom, pan and reset.
            c.eval("document.querySelector('.tl').scrollIntoView()")
            view = ("document.querySelector('.tl').dataset.view.split(',').map(Number)")
            v0 = c.eval(view)
            box = c.eval("(function () { var r = document.querySelector('.tl-canvas')"
                         ".getBoundingClientRect(); return [r.left, r.top, r.width, r.height];"
                         " })()")
            x, y = box[0] + box[2] * 0.7, box[1] + box[3] * 0.5
            c.wheel(x, y, dy=-240)
            c.wait("(function (v) { return v[1] - v[0] < %r; })(%s)" % (v0[1] - v0[0], view))
            v1 = c.eval(view)
            c.drag(x, y, x - 200, y)
            c.wait("(function (v) { return v[0] > %r; })(%s)" % (v1[0], view))
            v2 = c.eval(view)
            self.assertAlmostEqual(v2[1] - v2[0], v1[1] - v1[0], delta=(v1[1] - v1[0]) * 1e-6)
            c.move(x, y)
            c.key("0")
            c.wait("(function (v) { return v[0] === %r && v[1] === %r; })(%s)"
                   % (v0[0], v0[1], view))
            c.key("w")
            c.wait("(function (v) { return v[1] - v[0] < %r; })(%s)" % (v0[1] - v0[0], view))
            c.key("d")
            c.key("s")
            c.key("0")
            c.wait("(function (v) { return v[0] === %r && v[1] === %r; })(%s)"
                   % (v0[0], v0[1], view))
            # A kernel, zoomed into until it is wide: hovering it draws the arrow from its call;
            # a click shows its arguments.
            k = next(i for i, kind in enumerate(tl["slices"]["kind"]) if kinds[kind] == "kernel")
            call = tl["slices"]["flow"][k]
            at = "document.querySelector('.tl').kprofSliceAt(%d)" % k
            for _ in range(40):
                p = c.eval(at)
                self.assertIsNotNone(p, "the kernel is on screen")
                before = c.eval("document.querySelector('.tl').dataset.view")
                c.wheel(p["x"], p["y"], dy=-480)
                c.wait("document.querySelector('.tl').dataset.view !== %s" % json.dumps(before))
                if c.eval("(function (v) { return v[1] - v[0]; })(%s)" % view) < 2e5:
                    break
            p = c.eval(at)
            c.move(p["x"], p["y"])
            c.wait("document.querySelector('.tl').dataset.hover === '%d'" % k)
            c.wait("document.querySelector('.tl').dataset.arrow === '%d>%d'" % (call, k))
            c.click(p["x"], p["y"])
            c.wait("document.querySelector('.tl').dataset.selected === '%d'" % k)
            panel = c.eval("document.querySelector('.tl-panel').innerText")
            self.assertIn(tl["names"][tl["slices"]["name"][k]], panel)
            for word in ("grid", "16,384", "launch"):
                self.assertIn(word, panel)
            c.screenshot(os.path.join(self.shots, "trace-selected.png"), full_page=False)

    def test_decimated_trace_page(self):
        trace = self.gen("big.kprof", "launch-bound", "--kernels", "40000", "--period-us", "45")
        out = os.path.join(self.tmp, "big.html")
        self.kprof("report", trace, "--html", out, expect=0)
        data, _ = page_data(out)
        self.assertTrue(data["timeline"]["decimated"])
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "trace-decimated.png")
            self.check_numbers(c, data, ["report.wall_s", "report.device[0].total_s"])
            self.assertIn("decimated", c.eval("document.body.innerText").lower())

    def test_diff_page(self):
        a = self.gen("a.kprof", "two-kernels", "--kernels", "40")
        b = self.gen("b.kprof", "two-kernels", "--kernels", "40", "--slower", "20", "--extra")
        out = os.path.join(self.tmp, "d.html")
        self.kprof("diff", a, b, "--html", out, expect=0)
        data, _ = page_data(out)
        self.assertEqual(data["diff"], json.loads(self.kprof("diff", a, b, "--json").stdout))
        must = []
        for i, row in enumerate(data["diff"]["device"]):
            if row["ratio"]["median"] is not None:
                must.append("diff.device[%d].ratio.median" % i)
        self.assertTrue(must)
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "diff.png")
            self.check_numbers(c, data, must)
            text = c.eval("document.body.innerText")
            for row in data["diff"]["device"]:
                self.assertIn(row["name"], text)
                if row["verdict"]:
                    self.assertIn(row["verdict"], text)


class RenderedLab(Browser):
    """bench and sweep pages from real runs on PoCL."""
    needs_opencl = True

    def setUp(self):
        super().setUp()
        self.kprof("isolate", "k", expect=0)
        self.buffers = "f32:4096,f32:4096,f32:4096,u32=4096"

    def test_bench_page(self):
        out = os.path.join(self.tmp, "b.html")
        ab = os.path.join(self.home, "kernels", "k", "kernel.cl")
        other = os.path.join(self.tmp, "b.cl")
        shutil.copy(ab, other)
        p = self.kprof("bench", ab, other, "--entry", "demo_add", "--buffers", self.buffers,
                       "--grid", "4096", "--tg", "64", "--min-time", "0.02", "--timeout", "2",
                       "--json", "--html", out, expect=0)
        data, _ = page_data(out)
        self.assertEqual(data["bench"], json.loads(p.stdout))
        point = data["bench"]["points"][0]
        must = []
        for i, _ in enumerate(point["kernels"]):
            must += ["bench.points[0].kernels[%d].median_ms" % i,
                     "bench.points[0].kernels[%d].ci_ms[0]" % i,
                     "bench.points[0].kernels[%d].ci_ms[1]" % i]
        must.append("bench.points[0].comparison.ratio")
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "bench.png")
            self.check_numbers(c, data, must)
            self.assertIn(point["comparison"]["verdict"], c.eval("document.body.innerText"))
            # A's and B's sample histograms: two drawn series.
            self.assertGreaterEqual(c.eval("document.querySelectorAll('svg').length"), 1)

    def test_sweep_page(self):
        out = os.path.join(self.tmp, "s.html")
        p = self.kprof("sweep", "k", "--entry", "demo_add", "--buffers", self.buffers, "--grid",
                       "4096", "--tg-list", "32,64,128,256", "--iters", "5", "--json", "--html",
                       out, expect=0)
        data, _ = page_data(out)
        self.assertEqual(data["sweep"], json.loads(p.stdout))
        must = ["sweep.points[%d].gpu_ms_median" % i for i in range(len(data["sweep"]["points"]))]
        with chromium.Chromium(width=self.width, height=1000, binary=self.browser) as c:
            self.open(c, out, "sweep.png")
            self.check_numbers(c, data, must)
            self.assertIn("best", c.eval("document.body.innerText").lower())


if __name__ == "__main__":
    kptest.main()
