"""chromium.py, the DevTools-protocol driver the HTML pages' tests use, on small static pages of
its own: a clean page reports no request and no error and its first draw's time; an image, a
fetch and a worker's fetch are reported as requests (one blocked by the page's
Content-Security-Policy too, with the violation as an error); an exception and console.error
are errors; eval's values and exceptions; screenshots are PNGs of the viewport or the whole
page; keys, wheel turns, clicks and drags reach the page's listeners; a wait that never comes
true ends at its timeout; the browser's processes are gone after the `with` block; and the rule
for a machine without chromium (a failure unless KPROF_ALLOW_NO_CHROMIUM=1)."""

import os
import shutil
import signal
import tempfile
import time
import unittest

import chromium
import kptest

CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">")
DRAWN = "document.documentElement.dataset.drawn === '1'"
# What a kprof page does at its first draw.
MARK_DRAWN = ("window.kprofDrawnMs = performance.now(); "
              "document.documentElement.dataset.drawn = '1';")
PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8"
         "BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

PAGES = {
    "clean.html": """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">%s
<title>clean</title><style>body{margin:0;background:#fff}</style></head><body>
<div id="app"></div><img src="%s" alt="">
<script>requestAnimationFrame(function () {
  document.getElementById('app').textContent = 'drawn';
  %s
});</script></body></html>""" % (CSP, PIXEL, MARK_DRAWN),
    "image.html": """<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">
<script>%s</script></body></html>""" % MARK_DRAWN,
    "image_csp.html": """<!DOCTYPE html><html><head>%s</head><body>
<img src="http://127.0.0.1:9/blocked.png"><script>%s</script></body></html>""" % (CSP, MARK_DRAWN),
    "fetch.html": """<!DOCTYPE html><html><body><script>
fetch('http://127.0.0.1:9/').catch(function () {}).then(function () { %s });
</script></body></html>""" % MARK_DRAWN,
    "worker.html": """<!DOCTYPE html><html><body><script>
var src = "fetch('http://127.0.0.1:9/from-worker').catch(function () {})" +
          ".then(function () { postMessage('done'); });";
var w = new Worker(URL.createObjectURL(new Blob([src], {type: 'text/javascript'})));
w.onmessage = function () { %s };
</script></body></html>""" % MARK_DRAWN,
    "throws.html": """<!DOCTYPE html><html><body><script>
%s
console.error('said with console.error');
setTimeout(function () { window.thrown = 1; throw new Error('boom from the page'); }, 0);
</script></body></html>""" % MARK_DRAWN,
    "tall.html": """<!DOCTYPE html><html><head><style>body{margin:0}
#top{height:300px;background:#fff}#red{height:2700px;background:#ff0000}</style></head>
<body><div id="top"></div><div id="red"></div><script>%s</script></body></html>""" % MARK_DRAWN,
    "input.html": """<!DOCTYPE html><html><head><style>body{margin:0}
#pad{width:800px;height:600px;background:#eee}</style></head><body><div id="pad"></div><script>
window.got = [];
document.addEventListener('keydown', function (e) {
  got.push(['key', e.key, e.ctrlKey, e.shiftKey]);
});
var pad = document.getElementById('pad');
pad.addEventListener('wheel', function (e) {
  e.preventDefault();
  got.push(['wheel', Math.round(e.deltaY), e.clientX, e.clientY, e.ctrlKey]);
}, {passive: false});
pad.addEventListener('mousedown', function (e) { got.push(['down', e.clientX, e.clientY]); });
pad.addEventListener('mousemove', function (e) {
  if (e.buttons & 1) got.push(['move', e.clientX, e.clientY]);
});
pad.addEventListener('mouseup', function (e) { got.push(['up', e.clientX, e.clientY]); });
pad.addEventListener('click', function (e) { got.push(['click', e.clientX, e.clientY]); });
%s
</script></body></html>""" % MARK_DRAWN,
}


def live_in_group(pgid):
    """The processes of process group `pgid` that are not zombies (from /proc)."""
    live = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            live.append(int(d))
    return live


def kinds(got, kind):
    return [g for g in got if g[0] == kind]


class ChromiumDriverTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        chromium.require_chromium(None, "to run the DevTools driver")
        cls.tmp = tempfile.mkdtemp(prefix="kprof-cdp-")
        for name, text in PAGES.items():
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write(text)
        # Generous limits: a loaded 2-core machine starts Chromium slowly.
        cls.c = chromium.Chromium(width=1000, height=700, timeout=120)
        cls.c.start()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def open(self, name, wait=DRAWN):
        return self.c.open(os.path.join(self.tmp, name), wait_expr=wait, timeout=120)

    def test_clean_page(self):
        r = self.open("clean.html")
        self.assertEqual(r.requests, [], "the data: image and the page itself are no requests")
        self.assertEqual(r.errors, [])
        self.assertIsInstance(r.drawn_ms, float)
        self.assertGreater(r.drawn_ms, 0)
        self.assertEqual(r.drawn_ms, float(self.c.eval("window.kprofDrawnMs")))
        self.assertEqual(self.c.eval("document.getElementById('app').textContent"), "drawn")
        self.assertGreater(r.open_s, 0)
        self.assertEqual(r.url, "file://" + os.path.join(self.tmp, "clean.html"))

    def test_image_is_a_request(self):
        r = self.open("image.html")
        self.assertEqual(r.requests, ["http://127.0.0.1:9/x.png"])
        self.assertTrue(any("127.0.0.1:9/x.png" in e for e in r.errors), r.errors)

    def test_image_blocked_by_the_pages_policy(self):
        r = self.open("image_csp.html")
        self.assertEqual(r.requests, ["http://127.0.0.1:9/blocked.png"])
        self.assertTrue(any("Content Security Policy" in e or "CSP" in e for e in r.errors),
                        r.errors)

    def test_fetch_is_a_request(self):
        r = self.open("fetch.html")
        self.assertEqual(r.requests, ["http://127.0.0.1:9/"])

    def test_workers_requests_count(self):
        r = self.open("worker.html")
        self.assertIn("http://127.0.0.1:9/from-worker", r.requests)

    def test_exception_and_console_error(self):
        r = self.open("throws.html", wait="window.thrown === 1")
        self.assertTrue(any("boom from the page" in e for e in r.errors), r.errors)
        self.assertTrue(any(e.startswith("console.error") and "said with console.error" in e
                            for e in r.errors), r.errors)
        self.assertEqual(r.requests, [])

    def test_eval(self):
        self.open("clean.html")
        self.assertEqual(self.c.eval("1 + 2"), 3)
        self.assertEqual(self.c.eval("({a: [1, 'x'], b: null})"), {"a": [1, "x"], "b": None})
        self.assertEqual(self.c.eval("Promise.resolve(7)", await_promise=True), 7)
        with self.assertRaises(chromium.JSError) as cm:
            self.c.eval("undefinedName.x")
        self.assertIn("undefinedName", str(cm.exception))

    def test_screenshots(self):
        self.open("tall.html")
        png = os.path.join(self.tmp, "view.png")
        self.assertEqual(self.c.screenshot(png, full_page=False), (1000, 700))
        data = open(png, "rb").read()
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        w, h, ch, rows = kptest.read_png(png)
        self.assertEqual((w, h), (1000, 700))
        full = os.path.join(self.tmp, "full.png")
        self.c.screenshot(full)
        w, h, ch, rows = kptest.read_png(full)
        self.assertEqual((w, h), (1000, 3000))
        self.assertEqual(tuple(rows[100][500 * ch:500 * ch + 3]), (255, 255, 255))
        self.assertEqual(tuple(rows[2900][500 * ch:500 * ch + 3]), (255, 0, 0))
        # The viewport is put back after a full-page picture.
        self.assertEqual(self.c.eval("[innerWidth, innerHeight]"), [1000, 700])

    def test_keys_reach_the_page(self):
        self.open("input.html")
        self.c.key("+")
        self.c.key("ArrowLeft")
        self.c.key("0", modifiers=chromium.MOD_CTRL)
        self.c.wait("got.length >= 3", timeout=60)
        self.assertEqual(kinds(self.c.eval("got"), "key"),
                         [["key", "+", False, False], ["key", "ArrowLeft", False, False],
                          ["key", "0", True, False]])

    def test_wheel_reaches_the_page(self):
        self.open("input.html")
        self.c.wheel(400, 300, dy=-240)
        self.c.wheel(410, 310, dy=120, modifiers=chromium.MOD_CTRL)
        self.c.wait("got.filter(function (g) { return g[0] === 'wheel'; }).length >= 2",
                    timeout=60)
        wheels = kinds(self.c.eval("got"), "wheel")
        self.assertEqual(wheels, [["wheel", -240, 400, 300, False],
                                  ["wheel", 120, 410, 310, True]])

    def test_click_and_drag_reach_the_page(self):
        self.open("input.html")
        self.c.click(50, 60)
        self.c.wait("got.some(function (g) { return g[0] === 'click'; })", timeout=60)
        self.c.drag(100, 200, 300, 200, steps=4)
        self.c.wait("got.some(function (g) { return g[0] === 'up'; })", timeout=60)
        got = self.c.eval("got")
        # The drag's press and release were on the same element: a click there too.
        self.assertEqual(kinds(got, "click"), [["click", 50, 60], ["click", 300, 200]])
        self.assertEqual(kinds(got, "down"), [["down", 50, 60], ["down", 100, 200]])
        self.assertEqual(kinds(got, "move")[-1], ["move", 300, 200])
        self.assertGreaterEqual(len(kinds(got, "move")), 2)
        self.assertEqual(kinds(got, "up"), [["up", 50, 60], ["up", 300, 200]])

    def test_a_wait_that_never_holds_times_out(self):
        t0 = time.monotonic()
        with self.assertRaises(chromium.ChromiumError) as cm:
            self.c.open(os.path.join(self.tmp, "clean.html"), wait_expr="window.never === 1",
                        timeout=3)
        self.assertIn("window.never === 1", str(cm.exception))
        self.assertLess(time.monotonic() - t0, 60, "the wait did not end at its timeout")
        # The browser still answers after a timed-out wait.
        self.assertEqual(self.c.eval("6 * 7"), 42)


class ChromiumProcessTest(unittest.TestCase):

    def setUp(self):
        chromium.require_chromium(self, "to run the DevTools driver")

    def test_the_browser_is_gone_after_the_block(self):
        with chromium.Chromium(width=300, height=200, timeout=120) as c:
            pgid = c.proc.pid
            self.assertEqual(c.eval("innerWidth"), 300)
            self.assertIn(pgid, live_in_group(pgid))
        # Zombies may stay (the container's PID 1 reaps the zygote's orphans when it does):
        # what counts is that nothing of the group runs.
        self.assertEqual(live_in_group(pgid), [])

    def test_a_dead_browser_is_an_error_not_a_hang(self):
        with chromium.Chromium(width=300, height=200, timeout=120) as c:
            os.killpg(c.proc.pid, signal.SIGKILL)
            c.proc.wait(timeout=60)
            with self.assertRaises(chromium.ChromiumError):
                c.eval("1")


class MissingChromiumRuleTest(unittest.TestCase):
    """No chromium: a failure, unless KPROF_ALLOW_NO_CHROMIUM=1 (then a skip saying why)."""

    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ("KPROF_CHROMIUM", chromium.ALLOW_NO_CHROMIUM)}
        os.environ["KPROF_CHROMIUM"] = "/nonexistent/chromium"

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_missing_is_a_failure(self):
        os.environ.pop(chromium.ALLOW_NO_CHROMIUM, None)
        self.assertIsNone(chromium.chromium_path())
        with self.assertRaises(AssertionError) as cm:
            chromium.require_chromium(None)
        self.assertIn("scripts/install", str(cm.exception))

    def test_missing_may_be_allowed(self):
        os.environ[chromium.ALLOW_NO_CHROMIUM] = "1"
        with self.assertRaises(unittest.SkipTest) as cm:
            chromium.require_chromium(None, "to render the plot")
        self.assertIn("no chromium on this machine to render the plot", str(cm.exception))


if __name__ == "__main__":
    kptest.main()
