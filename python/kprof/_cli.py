"""The `kprof` command of the wheel: execs the kprof binary the package carries (kprof/bin/kprof,
which finds libkprof-inject.so in kprof/lib), with the arguments as given."""

import os
import sys


def main():
    """Replace this process with the bundled `kprof` (its exit status is the command's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    binary = os.path.join(here, "bin", "kprof")
    if not os.access(binary, os.X_OK):
        sys.stderr.write("kprof: error: the kprof command is not in this package (%s)\n" % binary)
        return 1
    os.execv(binary, [binary] + sys.argv[1:])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
