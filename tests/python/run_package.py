"""ctest python.package: `pip install` the source folder (the kprof package, built by
scikit-build-core with this machine's CMake) into a virtual environment of its own under the build
folder, with pytest, pyopencl, numpy and llnl-hatchet from PyPI (binary wheels only), and run
tests/python with it. Skips (77), saying why, where the environment or PyPI cannot be had: a
skip, never a pass. The package's build folder (BUILD/python-wheel) is kept, so a rerun builds
only what changed."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import kpvenv  # noqa: E402

SKIP = 77
SOURCE = os.environ["KPROF_SOURCE_DIR"]
BUILD = os.environ["KPROF_BUILD_DIR"]
# pytest; pyopencl and numpy for the kernels on PoCL; hatchet to read the Hatchet export, and
# perfetto's protobuf classes (test_perfetto.py's pins) to decode the Perfetto one.
TOOLS = ["pytest==8.3.4", "numpy", "pyopencl", "llnl-hatchet==2026.2.0", "protobuf==7.36.2",
         "perfetto==0.59.1"]


def main():
    try:
        python = kpvenv.python_with("python-package", TOOLS)
    except Exception as e:  # unittest.SkipTest: no venv module, no PyPI, no wheel
        print("SKIP: %s" % e)
        return SKIP
    # The package itself from the source folder (its build requirements, scikit-build-core,
    # come from PyPI into pip's isolated build environment).
    p = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-input",
                        "--disable-pip-version-check", "--force-reinstall", "--no-deps",
                        "--config-settings=build-dir=%s" % os.path.join(BUILD, "python-wheel"),
                        SOURCE], capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        out = p.stdout + p.stderr
        if "Could not find a version" in out or "Failed to establish a new connection" in out \
                or "No matching distribution" in out:
            print("SKIP: cannot get kprof's build requirements from PyPI:\n" + out[-2000:])
            return SKIP
        print("pip install %s failed:\n%s" % (SOURCE, out[-6000:]))
        return 1
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("KPROF_INJECT_LIBRARY", None)
    args = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
            os.path.join(SOURCE, "tests", "python")] + sys.argv[1:]
    # From a folder outside the source, so that `import kprof` is the installed package.
    return subprocess.run(args, env=env, cwd=BUILD).returncode


if __name__ == "__main__":
    sys.exit(main())
