"""kptest — what kprof's CLI tests share: run the real `kprof` binary in a scratch folder with
its own KPROF_HOME and cache, the LCG fill and FNV-1a hash to check outputs independently, and
a main() that reports an all-skipped file as skipped (exit 77), never as passed."""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

KPROF = os.environ.get("KPROF", "kprof")
SOURCE_DIR = os.environ.get("KPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def run(args, env=None, cwd=None, timeout=300, input=None):
    """Run kprof; returns CompletedProcess with text stdout/stderr."""
    full_env = dict(os.environ)
    if env:
        for k, v in env.items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
    return subprocess.run([KPROF] + list(args), cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout, input=input)


def opencl_available():
    p = run(["caps", "--json", "--backend", "opencl"])
    try:
        caps = json.loads(p.stdout)
    except ValueError:
        return False, "kprof caps --json gave no JSON: " + p.stderr
    b = caps["backends"][0]
    return b["available"], b.get("reason")


def loader_has_layers(program):
    """Whether the OpenCL ICD loader a program links knows OPENCL_LAYERS (ocl-icd >= 2.3, the
    Khronos loader since 2020; not the one CUDA ships): otherwise only LD_PRELOAD reaches it."""
    ldd = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    for line in ldd.splitlines():
        if "libOpenCL" in line and "=>" in line:
            path = line.split("=>")[1].split("(")[0].strip()
            with open(path, "rb") as f:
                return b"OPENCL_LAYERS" in f.read()
    return True


def budget_of_dispatches(case, *command, dispatches=8):
    """A --time-budget of about `dispatches` of this kernel's dispatches on the device the
    tests run on (PoCL's ~0.25 s, a GPU's far less): 50 would always overrun it, and the budget
    counts each dispatch at its device time or more, so fewer than 50 are timed however fast
    the device is."""
    r = case.run_json(*command, "--warmup", "0", "--iters", "2")
    return "%.6f" % max(dispatches * max(r["gpu_ms_samples"]) / 1e3, 1e-4)


def cuda_available():
    p = run(["caps", "--json", "--backend", "cuda"])
    try:
        caps = json.loads(p.stdout)
    except ValueError:
        return False, "kprof caps --json gave no JSON: " + p.stderr
    b = caps["backends"][0]
    return b["available"], b.get("reason")


def lcg_words(index, count):
    """The seed runner's LCG, as kprof fills buffer `index`."""
    state = (0x9E3779B97F4A7C15 + index) % 2**64
    for _ in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        yield state >> 33


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def fill_f32(index, count):
    return [f32(w / 2147483648.0) for w in lcg_words(index, count)]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) % 2**64
    return "%016x" % h


def pack(fmt, values):
    return struct.pack("<%d%s" % (len(values), fmt), *values)


def lab_kernel_events(path):
    """The kernel events of a lab trace (`kprof run/bench --trace`), in start order, as
    (name, start_ns, end_ns, grid_x, block_x, iteration, metric_bytes, registers), and its meta
    table as a dict."""
    import sqlite3
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT s.text, e.start_ns, e.end_ns, e.grid_x, e.block_x, m.value, e.metric_bytes, "
        "e.registers FROM events e JOIN strings s ON s.id = e.name "
        "LEFT JOIN metrics m ON m.event = e.id AND m.key = "
        "  (SELECT id FROM strings WHERE text = 'iteration') "
        "WHERE e.kind = 4 ORDER BY e.start_ns").fetchall()
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    db.close()
    return rows, meta


class KprofTestCase(unittest.TestCase):
    """A scratch working folder, KPROF_HOME and compile cache per test."""

    needs_opencl = True
    needs_cuda = False  # True: the class skips, saying why, where no CUDA device is

    @classmethod
    def setUpClass(cls):
        if cls.needs_cuda:
            ok, why = cuda_available()
            if not ok:
                raise unittest.SkipTest("no CUDA device: " + str(why))
        if cls.needs_opencl:
            ok, why = opencl_available()
            if not ok:
                if os.environ.get("KPROF_ALLOW_NO_OPENCL") == "1":
                    raise unittest.SkipTest("no OpenCL device: " + str(why))
                raise AssertionError(
                    "no OpenCL device (PoCL is part of kprof's install; run scripts/install): "
                    + str(why))

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kprof-test-")
        self.home = os.path.join(self.tmp, "home")
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"KPROF_HOME": self.home, "KPROF_CACHE_DIR": self.cache,
                    "KPROF_STORE": os.path.join(self.tmp, "store.db"),
                    "KPROF_BACKEND": None, "KPROF_DEVICE": None, "KPROF_DUMP_DIR": None,
                    # a CI runner's own variables change where compile dumps go (test_run_errors)
                    "GITHUB_ACTIONS": None, "RUNNER_TEMP": None, "BUILDKITE": None,
                    # No progress lines off a terminal: a test's stderr must not depend on
                    # how long a busy machine takes (the tests of those lines set it).
                    "KPROF_PROGRESS_EVERY": "0"}

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def kprof(self, *args, env=None, expect=None, **kw):
        e = dict(self.env)
        if env:
            e.update(env)
        p = run(args, env=e, cwd=kw.pop("cwd", self.tmp), **kw)
        if expect is not None:
            self.assertEqual(p.returncode, expect,
                             "kprof %s exited %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(args), p.returncode, expect, p.stdout, p.stderr))
        return p

    def child_env(self):
        """The environment a kprof of this test runs in: os.environ with self.env applied (a
        None value removes the variable)."""
        env = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def on_terminal(self, *args):
        """Run kprof with a pseudo-terminal as its stdin, stdout and stderr: (exit code, what it
        wrote, as bytes)."""
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.tmp)
            os.execve(KPROF, [KPROF] + list(args), self.child_env())
        out = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return os.waitstatus_to_exitcode(status), out

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_json(self, *args, **kw):
        p = self.kprof(*args, "--json", expect=0, **kw)
        return json.loads(p.stdout)


def main():
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules["__main__"])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and len(result.skipped) >= result.testsRun:
        for _, why in result.skipped[:1]:
            print("SKIPPED: " + why)
        sys.exit(77)
    sys.exit(0)


def read_png(path, max_rows=None):
    """Decode an 8-bit RGB/RGBA PNG (what Chromium's screenshots are) into (width, height,
    channels, rows), rows being lists of bytes — enough to tell whether a picture is blank;
    with max_rows, only the first rows (a tall page's top) are decoded."""
    import zlib
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("unsupported PNG: depth %d colour type %d" % (depth, ctype))
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h if max_rows is None else min(h, max_rows)):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows
