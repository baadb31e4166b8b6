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


class KprofTestCase(unittest.TestCase):
    """A scratch working folder, KPROF_HOME and compile cache per test."""

    needs_opencl = True

    @classmethod
    def setUpClass(cls):
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
                    "KPROF_BACKEND": None, "KPROF_DEVICE": None, "KPROF_DUMP_DIR": None}

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
