"""docs/guide/python.md's examples, run as doctests in a fresh Python (its OpenCL example starts
a profile before the process's first OpenCL call). Examples that need an NVIDIA GPU are marked
+SKIP in the guide."""

import os
import subprocess
import sys

import pytest

from conftest import _WHY_NO_OPENCL

GUIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "guide",
                     "python.md")


@pytest.mark.skipif(bool(_WHY_NO_OPENCL), reason=_WHY_NO_OPENCL or "")
def test_guide_doctests(tmp_path):
    p = subprocess.run([sys.executable, "-m", "doctest", "-o", "NORMALIZE_WHITESPACE",
                        "-o", "ELLIPSIS", os.path.abspath(GUIDE)], capture_output=True,
                       text=True, timeout=600, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
