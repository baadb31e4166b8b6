"""chromium.py — headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: Chromium reads NUL-terminated JSON commands on its fd 3 and writes
replies and events on its fd 4), Python's standard library only. What the tests of kprof's HTML
pages need: open a page, wait until it has drawn, and say every network request it made, every
error it reported and when it first drew; evaluate expressions in it, take screenshots, send it
keys, clicks, drags and wheel turns.

    with Chromium(width=1400, height=1000) as c:
        r = c.open(path, wait_expr="document.documentElement.dataset.drawn === '1'")
        r.requests, r.errors, r.drawn_ms, r.open_s
        c.eval("document.title"); c.screenshot("page.png")
        c.key("+"); c.wheel(700, 500, dy=-240); c.drag(100, 300, 400, 300); c.click(10, 10)
        c.wait("window.zoomed === true")

Nothing here waits without a limit: every reply is awaited for `timeout` seconds at most (a
ChromiumError says which command went unanswered and the tail of Chromium's stderr), and leaving
the `with` block (or a crash of the test) ends the browser's whole process group.

chromium_path() is the browser or None; require_chromium(case) is the tests' rule for a
missing one: chromium is part of kprof's install (scripts/install), so it is a failure, unless
KPROF_ALLOW_NO_CHROMIUM=1 says this machine may lack it (then the test skips, saying why).
"""

import atexit
import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

ALLOW_NO_CHROMIUM = "KPROF_ALLOW_NO_CHROMIUM"


def chromium_path():
    """The Chromium binary ($KPROF_CHROMIUM, else chromium, chromium-browser, google-chrome on
    PATH), or None."""
    env = os.environ.get("KPROF_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def require_chromium(case=None, what="to render the page"):
    """The binary; where there is none: skip (unittest.SkipTest, saying so) only if
    KPROF_ALLOW_NO_CHROMIUM=1, else fail (case.fail, or AssertionError without a case, as in
    setUpClass) — scripts/install installs it, so in CI a missing chromium is a defect, not a
    reason to skip."""
    p = chromium_path()
    if p:
        return p
    if os.environ.get(ALLOW_NO_CHROMIUM) == "1":
        raise unittest.SkipTest("no chromium on this machine " + what)
    why = "chromium is part of kprof's install (scripts/install) and is missing"
    if case is not None:
        case.fail(why)
    raise AssertionError(why)


class ChromiumError(RuntimeError):
    """The browser died, did not answer in time, or answered a command with an error."""


class JSError(RuntimeError):
    """An expression given to eval() threw."""


class PageResult:
    """What open() saw of one page.

    url: the file:// URL opened; requests: the URLs of every network request the page made or
    tried (anything but its own URL and data: URLs, blocked ones included); errors: strings,
    one per uncaught exception, console.error/console.assert failure, error-level log entry
    (failed loads, Content-Security-Policy violations) and CSP issue; drawn_ms: the page's
    window.kprofDrawnMs (performance.now() at its first draw, ms since navigation start) or
    None; open_s: wall seconds from the navigation's start until wait_expr held; load_ms: the
    page's own loadEventEnd (ms since navigation start) or None."""

    def __init__(self, url):
        self.url = url
        self.requests = []
        self.errors = []
        self.drawn_ms = None
        self.open_s = None
        self.load_ms = None

    def __repr__(self):
        return "PageResult(url=%r, requests=%r, errors=%r, drawn_ms=%r, open_s=%r)" % (
            self.url, self.requests, self.errors, self.drawn_ms, self.open_s)


# windowsVirtualKeyCode and code of the keys that are not one printable character.
_KEYS = {
    "Enter": (13, "Enter", "\r"), "Escape": (27, "Escape", None), "Tab": (9, "Tab", None),
    "Backspace": (8, "Backspace", None), "Delete": (46, "Delete", None),
    " ": (32, "Space", " "), "Home": (36, "Home", None), "End": (35, "End", None),
    "PageUp": (33, "PageUp", None), "PageDown": (34, "PageDown", None),
    "ArrowLeft": (37, "ArrowLeft", None), "ArrowUp": (38, "ArrowUp", None),
    "ArrowRight": (39, "ArrowRight", None), "ArrowDown": (40, "ArrowDown", None),
    "+": (187, "Equal", "+"), "=": (187, "Equal", "="), "-": (189, "Minus", "-"),
    "_": (189, "Minus", "_"), "/": (191, "Slash", "/"), "?": (191, "Slash", "?"),
    ".": (190, "Period", "."), ",": (188, "Comma", ","),
}
MOD_ALT, MOD_CTRL, MOD_META, MOD_SHIFT = 1, 2, 4, 8
_BUTTONS = {"none": 0, "left": 1, "right": 2, "middle": 4}


class Chromium:
    """One headless Chromium with one page, driven over --remote-debugging-pipe."""

    def __init__(self, width=1400, height=1000, binary=None, timeout=60.0, args=()):
        self.width, self.height = int(width), int(height)
        self.binary = binary or chromium_path()
        self.timeout = float(timeout)
        self.extra_args = list(args)
        self.proc = None
        self.session = None
        self._next_id = 0
        self._replies = {}
        self._events = []  # (sessionId, method, params), in arrival order
        self._cond = threading.Condition()
        self._wlock = threading.Lock()
        self._dead = None
        self._sessions = set()  # the page's session and those of its workers
        self._loader = None  # the current navigation's loaderId

    # ---- process -------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self):
        if not self.binary:
            raise ChromiumError("no chromium binary (chromium_path() found none)")
        self.tmp = tempfile.mkdtemp(prefix="kprof-chromium-")
        self._stderr = open(os.path.join(self.tmp, "stderr.txt"), "w+b")
        cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads them on fd 3
        out_r, out_w = os.pipe()  # Chromium writes on fd 4, we read
        # Out of the way of 3 and 4 before the shell moves them there.
        child_in = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_out = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(out_w)
        argv = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--mute-audio",
                "--user-data-dir=" + os.path.join(self.tmp, "profile"),
                "--window-size=%d,%d" % (self.width, self.height),
                "--remote-debugging-pipe"] + self.extra_args + ["about:blank"]
        script = 'exec "$@" 3<&%d 4>&%d %d<&- %d>&-' % (child_in, child_out, child_in,
                                                        child_out)
        env = dict(os.environ, HOME=self.tmp)
        # bash: dash takes only one-digit descriptors in a redirection.
        shell = shutil.which("bash") or "/bin/bash"
        self.proc = subprocess.Popen([shell, "-c", script, "bash"] + argv,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, pass_fds=(child_in, child_out),
                                     start_new_session=True, env=env)
        os.close(child_in)
        os.close(child_out)
        self._wfd, self._rfd = cmd_w, out_r
        atexit.register(self._kill)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        try:
            self._attach()
        except BaseException:
            self.close()
            raise

    def close(self):
        """Ask the browser to close, then end its process group whatever it did."""
        if self.proc is None:
            return
        if self._dead is None:
            try:
                self._send("Browser.close", {}, session=None)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._kill()
        try:
            atexit.unregister(self._kill)
        except Exception:
            pass
        for fd in (self._wfd, self._rfd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._reader.join(timeout=5)
        self._stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.proc = None

    def _kill(self):
        """SIGKILL to the process group this object started (its own id), then reap."""
        p = self.proc
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def stderr_tail(self, n=2000):
        try:
            self._stderr.flush()
            with open(self._stderr.name, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except (OSError, ValueError):
            return ""

    # ---- the protocol ---------------------------------------------------------------------

    def _read_loop(self):
        buf = b""
        try:
            while True:
                chunk = os.read(self._rfd, 1 << 20)
                if not chunk:
                    break
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    if raw:
                        self._dispatch(json.loads(raw))
        except (OSError, ValueError) as e:
            why = "reading Chromium's pipe: %s" % e
        else:
            why = "Chromium closed its end of the pipe"
        with self._cond:
            self._dead = why
            self._cond.notify_all()

    def _dispatch(self, msg):
        if "id" in msg:
            with self._cond:
                self._replies[msg["id"]] = msg
                self._cond.notify_all()
            return
        method, params = msg.get("method"), msg.get("params", {})
        sid = msg.get("sessionId")
        if method == "Target.attachedToTarget":
            # A worker of the page (auto-attached, paused): its requests and errors count too.
            child = params["sessionId"]
            with self._cond:
                self._sessions.add(child)
            for m in ("Network.enable", "Runtime.enable", "Log.enable",
                      "Runtime.runIfWaitingForDebugger"):
                try:
                    self._send(m, {}, session=child)
                except OSError:
                    pass
        with self._cond:
            self._events.append((sid, method, params))
            self._cond.notify_all()

    def _send(self, method, params, session):
        with self._wlock:
            self._next_id += 1
            mid = self._next_id
            msg = {"id": mid, "method": method, "params": params}
            if session:
                msg["sessionId"] = session
            data = json.dumps(msg).encode() + b"\0"
            while data:
                n = os.write(self._wfd, data)
                data = data[n:]
        return mid

    def send(self, method, params=None, session="page", timeout=None):
        """One command; its result (a dict). session: "page" (the page's), None (the
        browser's) or a session id."""
        if session == "page":
            session = self.session
        if self._dead is not None:
            raise ChromiumError("%s: %s\n%s" % (method, self._dead, self.stderr_tail()))
        try:
            mid = self._send(method, params or {}, session)
        except OSError as e:
            raise ChromiumError("%s: cannot write to Chromium: %s" % (method, e))
        limit = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._cond:
            while mid not in self._replies:
                left = limit - time.monotonic()
                if self._dead is not None:
                    raise ChromiumError("%s: %s\n%s" % (method, self._dead, self.stderr_tail()))
                if left <= 0:
                    raise ChromiumError("%s: no answer in %.0f s\n%s" % (
                        method, self.timeout if timeout is None else timeout,
                        self.stderr_tail()))
                self._cond.wait(min(left, 1.0))
            msg = self._replies.pop(mid)
        if "error" in msg:
            raise ChromiumError("%s: %s" % (method, msg["error"].get("message", msg["error"])))
        return msg.get("result", {})

    def _attach(self):
        limit = time.monotonic() + self.timeout
        target = None
        while target is None:
            infos = self.send("Target.getTargets", session=None)["targetInfos"]
            pages = [t for t in infos if t.get("type") == "page"]
            if pages:
                target = pages[0]["targetId"]
            elif time.monotonic() > limit:
                target = self.send("Target.createTarget", {"url": "about:blank"},
                                   session=None)["targetId"]
            else:
                time.sleep(0.05)
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=None)["sessionId"]
        self._sessions.add(self.session)
        for m in ("Page.enable", "Runtime.enable", "Network.enable", "Log.enable",
                  "Audits.enable"):
            self.send(m)
        self.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True,
                                           "flatten": True})
        self._set_metrics(self.width, self.height)

    def _set_metrics(self, width, height):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": int(width), "height": int(height), "deviceScaleFactor": 1,
                   "mobile": False})

    # ---- pages ---------------------------------------------------------------------------

    def open(self, path, wait_expr=None, timeout=30.0, settle=0.3):
        """Navigate to the file `path` (or a URL), wait for its load event and then until
        `wait_expr` is truthy (both within `timeout` seconds, else ChromiumError saying what it
        saw), then `settle` seconds more for late events; a PageResult."""
        url = path if "://" in path or path.startswith("about:") else \
            "file://" + os.path.abspath(path)
        res = PageResult(url)
        with self._cond:
            mark = len(self._events)
        limit = time.monotonic() + timeout
        t0 = time.perf_counter()
        nav = self.send("Page.navigate", {"url": url}, timeout=timeout)
        if nav.get("errorText"):
            raise ChromiumError("cannot open %s: %s" % (url, nav["errorText"]))
        self._loader = nav.get("loaderId")
        self._wait_event(mark, "Page.loadEventFired", limit, url)
        if wait_expr:
            self._poll(wait_expr, limit, "%s: %s" % (url, wait_expr), mark)
        res.open_s = time.perf_counter() - t0
        if settle:
            time.sleep(settle)
        self.eval("0")  # a round trip: what the page did before it has been reported
        drawn = self.eval("typeof window.kprofDrawnMs === 'number' ? "
                          "window.kprofDrawnMs : null")
        # float: a whole number of ms comes back through JSON as an int.
        res.drawn_ms = None if drawn is None else float(drawn)
        res.load_ms = self.eval("(function(){var n = performance.getEntriesByType('navigation')"
                                "[0]; return n && n.loadEventEnd > 0 ? n.loadEventEnd : null})()")
        res.requests, res.errors = self._collect(mark, url)
        return res

    def _wait_event(self, mark, method, limit, what):
        with self._cond:
            while True:
                if any(m == method and s == self.session for s, m, _ in self._events[mark:]):
                    return
                if self._dead is not None:
                    raise ChromiumError("%s: %s\n%s" % (what, self._dead, self.stderr_tail()))
                left = limit - time.monotonic()
                if left <= 0:
                    raise ChromiumError("%s: no %s in time; errors so far: %s" % (
                        what, method, self._collect_locked(mark, what)[1]))
                self._cond.wait(min(left, 0.5))

    def _poll(self, expr, limit, what, mark=None):
        last = None
        while True:
            try:
                last = self.eval(expr)
                if last:
                    return last
            except JSError as e:
                last = e
            if time.monotonic() > limit:
                errors = self._collect(mark, what)[1] if mark is not None else []
                raise ChromiumError("%s: still %r when time ran out; page errors: %s" % (
                    what, last, errors))
            time.sleep(0.05)

    def wait(self, expr, timeout=30.0):
        """Poll `expr` until it is truthy (its value), or raise ChromiumError after timeout."""
        return self._poll(expr, time.monotonic() + timeout, expr)

    def _collect(self, mark, url):
        with self._cond:
            return self._collect_locked(mark, url)

    def _collect_locked(self, mark, url):
        requests, errors = [], []
        page = url.split("#")[0]

        def request(u):
            if u and not u.startswith("data:") and u.split("#")[0] != page and \
                    u not in requests:
                requests.append(u)

        for sid, method, p in self._events[mark:]:
            if sid not in self._sessions:
                continue
            if method == "Network.requestWillBeSent":
                # A late request of the page before this one is not this page's.
                if sid == self.session and self._loader and p.get("loaderId") and \
                        p["loaderId"] != self._loader:
                    continue
                request(p["request"]["url"])
            elif method == "Network.loadingFailed":
                pass  # its request was reported by requestWillBeSent (the URL is there)
            elif method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                text = d.get("text", "")
                exc = d.get("exception") or {}
                if exc.get("description"):
                    text += " " + exc["description"].split("\n")[0]
                errors.append("exception: %s (%s:%s)" % (text, d.get("url", ""),
                                                         d.get("lineNumber", "")))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", "")))
                                for a in p.get("args", []))
                errors.append("console.%s: %s" % (p["type"], args))
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                e = p["entry"]
                errors.append("log (%s): %s%s" % (e.get("source"), e.get("text", ""),
                                                 " " + e["url"] if e.get("url") else ""))
                if e.get("url") and e.get("source") in ("network", "security", "violation"):
                    request(e["url"])
            elif method == "Audits.issueAdded":
                issue = p.get("issue", {})
                code = issue.get("code", "")
                if code == "ContentSecurityPolicyIssue":
                    d = issue.get("details", {}).get("contentSecurityPolicyIssueDetails", {})
                    blocked = d.get("blockedURL")
                    errors.append("CSP violation: %s blocked (%s)" % (
                        blocked or "inline code", d.get("violatedDirective", "")))
                    if blocked:
                        request(blocked)
        return requests, errors

    # ---- evaluation and pictures ----------------------------------------------------------

    def eval(self, expr, await_promise=False):
        """The value of `expr` in the page (returnByValue); JSError if it throws."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": await_promise})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            desc = (d.get("exception") or {}).get("description") or d.get("text")
            raise JSError("%s: %s" % (expr[:200], desc))
        return r.get("result", {}).get("value")

    def screenshot(self, png_path, full_page=True):
        """A PNG of the viewport, or of the whole page (the viewport grown to the content's
        size for the picture, then put back). Returns (width, height) of the picture."""
        w, h = self.width, self.height
        if full_page:
            m = self.send("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            w = max(self.width, int(size["width"] + 0.999))
            h = max(1, min(int(size["height"] + 0.999), 16384))
            self._set_metrics(w, h)
        try:
            r = self.send("Page.captureScreenshot", {"format": "png", "fromSurface": True,
                                                     "captureBeyondViewport": full_page})
        finally:
            if full_page:
                self._set_metrics(self.width, self.height)
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return w, h

    # ---- input -----------------------------------------------------------------------------

    def key(self, key, modifiers=0, code=None):
        """Press and release one key: a character ("a", "+", "0") or a key name ("ArrowLeft",
        "Escape", "Enter"). modifiers: MOD_ALT|MOD_CTRL|MOD_META|MOD_SHIFT."""
        if key in _KEYS:
            vk, kcode, text = _KEYS[key]
        elif len(key) == 1:
            vk = ord(key.upper()) if key.isalnum() else ord(key)
            kcode = ("Key" + key.upper()) if key.isalpha() else \
                ("Digit" + key) if key.isdigit() else ""
            text = key
        else:
            raise ValueError("unknown key %r" % key)
        if modifiers & (MOD_CTRL | MOD_ALT | MOD_META):
            text = None
        down = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code or kcode,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
                "modifiers": modifiers}
        if text:
            down["text"] = down["unmodifiedText"] = text
        self.send("Input.dispatchKeyEvent", down)
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key,
                                             "code": code or kcode, "windowsVirtualKeyCode": vk,
                                             "nativeVirtualKeyCode": vk,
                                             "modifiers": modifiers})

    def type_text(self, text):
        """Text into the focused element, as typing would insert it."""
        self.send("Input.insertText", {"text": text})

    def mouse(self, type, x, y, button="none", buttons=None, click_count=0, modifiers=0,
              delta_x=0, delta_y=0):
        """One Input.dispatchMouseEvent: type mousePressed | mouseReleased | mouseMoved |
        mouseWheel, at (x, y) CSS pixels of the viewport."""
        p = {"type": type, "x": x, "y": y, "button": button, "clickCount": click_count,
             "modifiers": modifiers}
        if buttons is not None:
            p["buttons"] = buttons
        if type == "mouseWheel":
            p["deltaX"], p["deltaY"] = delta_x, delta_y
        self.send("Input.dispatchMouseEvent", p)

    def move(self, x, y, modifiers=0):
        self.mouse("mouseMoved", x, y, modifiers=modifiers)

    def click(self, x, y, button="left", modifiers=0, count=1):
        self.mouse("mouseMoved", x, y, modifiers=modifiers)
        for n in range(1, count + 1):
            self.mouse("mousePressed", x, y, button, _BUTTONS[button], n, modifiers)
            self.mouse("mouseReleased", x, y, button, 0, n, modifiers)

    def wheel(self, x, y, dy=-120, dx=0, modifiers=0):
        """A wheel turn at (x, y): dy < 0 is away from the user (up; zoom in, in most
        timelines), in pixels as WheelEvent.deltaY reports it."""
        self.mouse("mouseMoved", x, y, modifiers=modifiers)
        self.mouse("mouseWheel", x, y, modifiers=modifiers, delta_x=dx, delta_y=dy)

    def drag(self, x0, y0, x1, y1, steps=8, button="left", modifiers=0):
        """Press at (x0, y0), move in `steps` steps to (x1, y1), release there."""
        b = _BUTTONS[button]
        self.mouse("mouseMoved", x0, y0, modifiers=modifiers)
        self.mouse("mousePressed", x0, y0, button, b, 1, modifiers)
        for i in range(1, steps + 1):
            x = x0 + (x1 - x0) * i / steps
            y = y0 + (y1 - y0) * i / steps
            self.mouse("mouseMoved", x, y, button, b, 0, modifiers)
        self.mouse("mouseReleased", x1, y1, button, 0, 1, modifiers)
