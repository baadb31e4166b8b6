#!/usr/bin/env python3
"""bench/trace_overhead.py — what tracing costs a program (issue 5, on a CUDA GPU): a
launch-bound program (200k tiny kernels) and a kernel-bound one (200 kernels of ~5 ms), each run
plain, under `kprof trace`, and under Nsight Systems' collector, in one run. Figures: wall time
of the whole command (median of --repeat), the time the program measures itself, and the added
wall time over plain. Goals: kernel-bound <= 3% slower than plain; launch-bound at least 3x less
added wall time than Nsight Systems.

usage: bench/trace_overhead.py [--kprof build/kprof] [--nsys PATH] [--repeat 3] [--json out.json]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NSYS = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"


def run(cmd, env=None, timeout=180):
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, None, subprocess.CompletedProcess(
            cmd, 124, "", "timed out after %d s" % timeout)
    wall = time.perf_counter() - t0
    own = None
    for line in p.stdout.splitlines():
        if line.startswith("overhead:"):
            own = float(line.split(" in ")[1].split()[0])
    return wall, own, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--nsys", default=shutil.which("nsys") or NSYS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--json")
    a = ap.parse_args()
    kprof = os.path.abspath(a.kprof)
    tmp = tempfile.mkdtemp(prefix="kprof-overhead-")
    exe = os.path.join(tmp, "overhead")
    b = subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", exe,
                        os.path.join(HERE, "programs", "overhead.cu")], capture_output=True,
                       text=True)
    if b.returncode != 0:
        sys.exit("nvcc failed: " + b.stderr)
    results = {}
    for case, args in (("launch-bound", ["launch", str(a.launches)]),
                       ("kernel-bound", ["kernel", "200"])):
        row = {}
        for tool in ("plain", "kprof", "nsys"):
            walls, owns = [], []
            for i in range(a.repeat):
                out = os.path.join(tmp, "%s-%s-%d" % (case, tool, i))
                if tool == "plain":
                    cmd = [exe] + args
                elif tool == "kprof":
                    cmd = [kprof, "trace", "-o", out + ".kprof", "--", exe] + args
                else:
                    cmd = [a.nsys, "profile", "--force-overwrite", "true", "-o", out, exe] + args
                wall, own, p = run(cmd)
                print("  %s %s run %d: %.2f s wall%s" % (case, tool, i, wall,
                      "" if own is not None else " (failed: %s)" % (p.stderr or "?")[-200:]),
                      flush=True)
                if tool == "nsys" and own is None:
                    row[tool] = {"error": (p.stderr or p.stdout)[-400:]}
                    break
                if own is None:
                    sys.exit("%s failed:\n%s\n%s" % (" ".join(cmd), p.stdout, p.stderr))
                walls.append(wall)
                owns.append(own)
            else:
                row[tool] = {"wall_s": statistics.median(walls), "own_s": statistics.median(owns),
                             "walls": walls}
        base = row["plain"]["wall_s"]
        for tool in ("kprof", "nsys"):
            if "wall_s" in row.get(tool, {}):
                row[tool]["added_s"] = row[tool]["wall_s"] - base
                row[tool]["ratio"] = row[tool]["wall_s"] / base
        results[case] = row
    # What kprof recorded, as a check that the traced runs were really traced.
    rep = subprocess.run([kprof, "report", os.path.join(tmp, "launch-bound-kprof-0.kprof"),
                          "--json"], capture_output=True, text=True)
    if rep.returncode == 0:
        r = json.loads(rep.stdout)
        results["kprof_recorded"] = {"events": r["events"], "dropped": r["dropped"],
                                     "kernels": r["verdict"]["kernels"],
                                     "verdict": r["verdict"]["kind"]}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    for case in ("launch-bound", "kernel-bound"):
        row = results[case]
        line = "%-13s plain %.2f s" % (case, row["plain"]["wall_s"])
        for tool in ("kprof", "nsys"):
            t = row.get(tool, {})
            if "wall_s" in t:
                line += "; %s %.2f s (%.3fx, +%.2f s; program's own %.2f s)" % (
                    tool, t["wall_s"], t["ratio"], t["added_s"], t["own_s"])
            else:
                line += "; %s failed: %s" % (tool, t.get("error", "?").strip().splitlines()[-1:])
        print(line)
    lb, kb = results["launch-bound"], results["kernel-bound"]
    if "added_s" in lb.get("nsys", {}):
        print("launch-bound: nsys added / kprof added = %.2f (goal >= 3)" % (
            lb["nsys"]["added_s"] / max(lb["kprof"]["added_s"], 1e-9)))
    print("kernel-bound: kprof %.1f%% slower than plain (goal <= 3%%)" % (
        100 * (kb["kprof"]["ratio"] - 1)))
    if "kprof_recorded" in results:
        print("kprof recorded (launch-bound): %s" % results["kprof_recorded"])
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
