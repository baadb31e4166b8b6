"""kpvenv — a Python tool from PyPI for a test (hatchet, perfetto, ...), installed in a virtual
environment of the test's own under the build folder and reused across runs, never system-wide.
When it cannot be had (no venv module: Debian's python3-venv, which scripts/install installs; no
network; no wheel for this Python), the test skips with the reason: a skip, never a pass.

    python = kpvenv.python_with("hatchet", ["llnl-hatchet==2026.2.0"])  # raises SkipTest

Only binary wheels are installed (--only-binary=:all:): nothing is compiled on the test machine.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import unittest

BUILD_DIR = os.environ.get("KPROF_BUILD_DIR") or (
    os.path.dirname(os.environ["KPROF"]) if os.environ.get("KPROF") else None)


def _tail(text, lines=8):
    return "\n".join(text.strip().splitlines()[-lines:])


def python_with(name, requirements, timeout=600):
    """The interpreter of the virtual environment `name` (BUILD_DIR/test-venv/NAME) holding
    `requirements`, made or remade when it does not hold exactly them. Raises unittest.SkipTest
    with the reason when it cannot be made."""
    if not BUILD_DIR:
        raise unittest.SkipTest("KPROF_BUILD_DIR not set (run through ctest)")
    root = os.path.join(BUILD_DIR, "test-venv")
    os.makedirs(root, exist_ok=True)
    home = os.path.join(root, name)
    python = os.path.join(home, "bin", "python")
    marker = os.path.join(home, "kprof-requirements.txt")
    wanted = "%s\n%s\n" % (sys.version.split()[0], "\n".join(requirements))
    # One maker at a time (ctest -j, or two build folders' tests sharing nothing but this).
    with open(os.path.join(root, name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.exists(python) and open(marker).read() == wanted:
                return python
        except OSError:
            pass
        shutil.rmtree(home, ignore_errors=True)
        p = subprocess.run([sys.executable, "-m", "venv", home], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            shutil.rmtree(home, ignore_errors=True)
            raise unittest.SkipTest(
                "cannot make a virtual environment with %s (Debian: python3-venv, which "
                "scripts/install installs): %s" % (sys.executable, _tail(p.stderr + p.stdout)))
        p = subprocess.run([python, "-m", "pip", "install", "--quiet", "--only-binary=:all:",
                            "--disable-pip-version-check", "--no-input"] + list(requirements),
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            shutil.rmtree(home, ignore_errors=True)
            raise unittest.SkipTest("cannot install %s from PyPI for Python %s: %s" % (
                " ".join(requirements), sys.version.split()[0], _tail(p.stderr + p.stdout)))
        with open(marker, "w") as f:
            f.write(wanted)
        return python
