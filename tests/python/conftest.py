"""Shared helpers of the kprof package's tests (run by ctest python.package in its virtual
environment, against the installed package)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import kprof


def run_fresh(code, timeout=300):
    """Run `code` in a new Python (the same environment): OpenCL needs a profile started before
    the process's first OpenCL call, so each OpenCL case has a process of its own. The code
    prints one JSON document last; returns it."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture
def kprof_command():
    """The bundled kprof command."""
    return kprof.bundled_command()


def has_opencl():
    try:
        import pyopencl  # noqa: F401
    except ImportError as e:
        return "pyopencl cannot be imported: %s" % e
    p = subprocess.run([sys.executable, "-c", "import pyopencl as cl; print(len(cl.get_platforms()))"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or p.stdout.strip() in ("", "0"):
        return "no OpenCL platform (PoCL: pocl-opencl-icd): %s" % p.stderr.strip()[-300:]
    return None


_WHY_NO_OPENCL = has_opencl()
needs_opencl = pytest.mark.skipif(bool(_WHY_NO_OPENCL), reason=_WHY_NO_OPENCL or "")
