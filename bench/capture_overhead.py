#!/usr/bin/env python3
"""bench/capture_overhead.py — what `kprof trace --capture` costs a CUDA program (issue 26, on a
CUDA GPU), at its worst: the launch-bound program of bench/trace_overhead.py
(bench/programs/overhead.cu: N tiny kernels back to back, one sync), where every launch passes
the capture's CUPTI callback. Three ways, interleaved over --repeat rounds (each
round begins with the next way):

  trace     `kprof trace` alone
  never     `kprof trace --capture 'kp_no_such_kernel*'`: every launch is looked at, none
            matches (one name lookup per function, then a table probe per launch)
  once      `kprof trace --capture 'tiny@1000'`: one launch is captured (the program is held
            while it is: the held time the capture reports is printed beside it)

Figures: the median wall time of the whole command and the time the program measures itself,
and what `never` and `once` add over `trace` (goal: never-matching <= 1% added). Also the held
time and the folder of the `once` capture. Exits 77 when nvcc or a CUDA device is missing.

usage: bench/capture_overhead.py [--kprof build/kprof] [--launches 200000] [--repeat 5]
                                 [--json out.json]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, timeout=300):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    own = None
    for line in p.stdout.splitlines():
        if line.startswith("overhead:"):
            own = float(line.split(" in ")[1].split()[0])
    held = re.search(r"kprof: captured (\S+) .* the program was held ([0-9.]+) ms", p.stderr)
    return {"rc": p.returncode, "wall_s": wall, "own_s": own,
            "held_ms": float(held.group(2)) if held else None,
            "folder": held.group(1) if held else None, "stderr": p.stderr[-2000:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    if not shutil.which("nvcc"):
        print("capture_overhead: skipped: no nvcc", file=sys.stderr)
        return 77
    tmp = tempfile.mkdtemp(prefix="kprof-capture-overhead-")
    exe = os.path.join(tmp, "overhead")
    b = subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", exe,
                        os.path.join(HERE, "programs", "overhead.cu")], capture_output=True,
                       text=True)
    if b.returncode != 0:
        print("capture_overhead: nvcc failed: " + b.stderr, file=sys.stderr)
        return 1
    probe = subprocess.run([exe, "launch", "10"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("capture_overhead: skipped: the program does not run here: " + probe.stderr,
              file=sys.stderr)
        return 77

    kp = os.path.abspath(a.kprof)
    prog = [exe, "launch", str(a.launches)]
    ways = {
        "trace": [],
        "never": ["--capture", "kp_no_such_kernel*"],
        "once": ["--capture", "tiny@1000"],
        # Captured at the first launch: every later launch returns at the done flag, so this
        # tells CUPTI's own cost of the callbacks from the capture's work per launch.
        "first": ["--capture", "tiny@1"],
    }
    runs = {w: [] for w in ways}
    order = list(ways)
    for r in range(a.repeat):
        # Each round starts with another way, so that no way always runs first or last.
        for w in order[r % len(order):] + order[:r % len(order)]:
            extra = ways[w]
            kernels = os.path.join(tmp, "kernels-%s-%d" % (w, r))
            opts = extra + (["--capture-dir", kernels] if extra else [])
            out = os.path.join(tmp, "%s-%d.kprof" % (w, r))
            res = run([kp, "trace", "-o", out] + opts + ["--"] + prog)
            # A pattern that matched nothing makes kprof trace exit 2, by design.
            expected = 2 if w == "never" else 0
            if res["rc"] != expected:
                print("capture_overhead: %s round %d exited %d:\n%s" %
                      (w, r, res["rc"], res["stderr"]), file=sys.stderr)
                return 1
            if w in ("once", "first") and not res["folder"]:
                print("capture_overhead: no capture:\n" + res["stderr"], file=sys.stderr)
                return 1
            runs[w].append(res)
            os.remove(out)
            shutil.rmtree(kernels, ignore_errors=True)

    def med(w, key):
        vals = [x[key] for x in runs[w] if x[key] is not None]
        return statistics.median(vals) if vals else None

    R = {"launches": a.launches, "repeat": a.repeat, "ways": {}}
    base_wall, base_own = med("trace", "wall_s"), med("trace", "own_s")
    print("capture overhead, %d launches, median of %d rounds" % (a.launches, a.repeat))
    print("%-6s %10s %10s %12s %12s %10s" % ("way", "wall s", "own s", "wall added", "own added",
                                            "held ms"))
    for w in ways:
        wall, own, held = med(w, "wall_s"), med(w, "own_s"), med(w, "held_ms")
        add_wall = (wall / base_wall - 1) * 100 if base_wall else None
        add_own = (own / base_own - 1) * 100 if own and base_own else None
        R["ways"][w] = {"wall_s": wall, "own_s": own, "wall_added_pct": add_wall,
                        "own_added_pct": add_own, "held_ms": held,
                        "walls": [x["wall_s"] for x in runs[w]]}
        print("%-6s %10.3f %10s %11s%% %11s%% %10s" % (
            w, wall, "%.3f" % own if own is not None else "-",
            "%+.2f" % add_wall if add_wall is not None else "-",
            "%+.2f" % add_own if add_own is not None else "-",
            "%.1f" % held if held is not None else "-"))
    never = R["ways"]["never"]["wall_added_pct"]
    print("goal: a never-matching pattern adds <= 1%% wall: %s (%+.2f%%)" %
          ("met" if never is not None and never <= 1.0 else "NOT met", never or 0.0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
