#!/usr/bin/env python3
"""bench/trace_overhead.py — what tracing costs a program (issue 5, on a CUDA GPU): a
launch-bound program (200k tiny kernels) and a kernel-bound one (200 kernels of ~5 ms), each run
plain, under a bare CUPTI collector (bench/programs/bare_collector.c: the same activity kinds as
kprof's, records only counted), under `kprof trace`, and under Nsight Systems' collector, in one
run. Figures: wall time of the whole command (median of --repeat), the time the program measures
itself, the added wall time over plain, and where kprof's time went (KPROF_TRACE_TIMES: the
program, the merge). Goals: kernel-bound <= 3% slower than plain; launch-bound at least 3x less
added wall time than Nsight Systems (issue 5), and kprof's whole-command wall at most 1.25x the
bare collector's (issue 11).

usage: bench/trace_overhead.py [--kprof build/kprof] [--nsys PATH] [--repeat 3] [--json out.json]
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
NSYS = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"


def cupti_paths():
    """The CUDA include folder, CUPTI's include folder and the folder holding libcupti.so."""
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    inc = [os.path.join(cuda, "include"), os.path.join(cuda, "extras", "CUPTI", "include")]
    for lib in (os.path.join(cuda, "extras", "CUPTI", "lib64"), os.path.join(cuda, "lib64")):
        if os.path.exists(os.path.join(lib, "libcupti.so")):
            return inc, lib
    sys.exit("no libcupti.so under " + cuda)


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
    p.times = None
    for line in p.stderr.splitlines():
        # kprof: times: program X s, after it until the merge Y s, merge Z s (L events merged
        # while the program ran, A after)
        m = re.match(r"kprof: times: program ([0-9.]+) s, after it until the merge ([0-9.]+) s, "
                     r"merge ([0-9.]+) s \((\d+) events merged while the program ran, (\d+) "
                     r"after\)", line)
        if m:
            p.times = [float(v) for v in m.groups()]
    return wall, own, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--nsys", default=shutil.which("nsys") or NSYS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--tools", default="plain,bare,kprof,nsys",
                    help="which of plain,bare,kprof,kprof-after,nsys to run (plain, bare and "
                         "kprof needed for the ratios; kprof-after: kprof merging only after the "
                         "program, KPROF_TRACE_LIVE=0)")
    ap.add_argument("--cases", default="launch-bound,kernel-bound")
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
    inc, cupti_lib = cupti_paths()
    bare = os.path.join(tmp, "libbare_collector.so")
    b = subprocess.run(["gcc", "-O2", "-shared", "-fPIC"] + ["-I" + d for d in inc] +
                       [os.path.join(HERE, "programs", "bare_collector.c"), "-L" + cupti_lib,
                        "-lcupti", "-Wl,-rpath," + cupti_lib, "-o", bare],
                       capture_output=True, text=True)
    if b.returncode != 0:
        sys.exit("building the bare collector failed: " + b.stderr)
    bare_env = dict(os.environ, CUDA_INJECTION64_PATH=bare)
    kprof_env = dict(os.environ, KPROF_TRACE_TIMES="1")
    tools = tuple(t for t in ("plain", "bare", "kprof", "kprof-after", "nsys")
                  if t in a.tools.split(","))
    after_env = dict(kprof_env, KPROF_TRACE_LIVE="0")
    results = {}
    for case, args in (("launch-bound", ["launch", str(a.launches)]),
                       ("kernel-bound", ["kernel", "200"])):
        if case not in a.cases.split(","):
            continue
        row = {}
        for tool in tools:
            walls, owns, times = [], [], []
            for i in range(a.repeat):
                out = os.path.join(tmp, "%s-%s-%d" % (case, tool, i))
                if tool in ("plain", "bare"):
                    cmd = [exe] + args
                elif tool in ("kprof", "kprof-after"):
                    cmd = [kprof, "trace", "-o", out + ".kprof", "--", exe] + args
                else:
                    cmd = [a.nsys, "profile", "--force-overwrite", "true", "-o", out, exe] + args
                env = {"bare": bare_env, "kprof": kprof_env, "kprof-after": after_env}.get(tool)
                wall, own, p = run(cmd, env)
                if tool == "bare" and "bare collector:" not in p.stderr:
                    sys.exit("the bare collector did not run:\n" + p.stderr)
                if p.times:
                    times.append(p.times)
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
                if times:  # the run of median wall
                    t = times[walls.index(statistics.median(walls))] if len(walls) % 2 else times[0]
                    (row[tool]["program_s"], row[tool]["before_merge_s"], row[tool]["merge_s"],
                     row[tool]["events_merged_live"], row[tool]["events_merged_after"]) = t
        base = row["plain"]["wall_s"]
        for tool in tools[1:]:
            if "wall_s" in row.get(tool, {}):
                row[tool]["added_s"] = row[tool]["wall_s"] - base
                row[tool]["ratio"] = row[tool]["wall_s"] / base
        if "bare" in row and "kprof" in row:
            row["kprof"]["vs_bare"] = row["kprof"]["wall_s"] / row["bare"]["wall_s"]
        results[case] = row
    # What kprof recorded, as a check that the traced runs were really traced.
    rep = subprocess.run([kprof, "report", os.path.join(tmp, "launch-bound-kprof-0.kprof"),
                          "--json"], capture_output=True, text=True)
    if rep.returncode == 0 and rep.stdout:
        r = json.loads(rep.stdout)
        results["kprof_recorded"] = {"events": r["events"], "dropped": r["dropped"],
                                     "kernels": r["verdict"]["kernels"],
                                     "verdict": r["verdict"]["kind"]}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    for case in ("launch-bound", "kernel-bound"):
        if case not in results:
            continue
        row = results[case]
        line = "%-13s plain %.2f s" % (case, row["plain"]["wall_s"])
        for tool in tools[1:]:
            t = row.get(tool, {})
            if "wall_s" in t:
                line += "; %s %.2f s (%.3fx, +%.2f s; program's own %.2f s)" % (
                    tool, t["wall_s"], t["ratio"], t["added_s"], t["own_s"])
            else:
                line += "; %s failed: %s" % (tool, t.get("error", "?").strip().splitlines()[-1:])
        print(line)
    lb, kb = results.get("launch-bound", {}), results.get("kernel-bound", {})
    if "added_s" in lb.get("nsys", {}) and "kprof" in lb:
        print("launch-bound: nsys added / kprof added = %.2f (goal >= 3)" % (
            lb["nsys"]["added_s"] / max(lb["kprof"]["added_s"], 1e-9)))
    if "kprof" in kb:
        print("kernel-bound: kprof %.1f%% slower than plain (goal <= 3%%)" % (
            100 * (kb["kprof"]["ratio"] - 1)))
    k = lb.get("kprof", {})
    if "vs_bare" in k:
        print("launch-bound: kprof / bare collector = %.3f (goal <= 1.25); bare %.2f s, kprof "
              "%.2f s: its program %.2f s, then %.2f s, merge after it %.2f s (%d events merged "
              "while the program ran, %d after)" % (
                  k["vs_bare"], lb["bare"]["wall_s"], k["wall_s"], k.get("program_s", 0),
                  k.get("before_merge_s", 0), k.get("merge_s", 0),
                  k.get("events_merged_live", 0), k.get("events_merged_after", 0)))
    ka = lb.get("kprof-after", {})
    if "merge_s" in ka:
        print("launch-bound: kprof merging only after the program (KPROF_TRACE_LIVE=0): %.2f s "
              "wall, merge %.2f s" % (ka["wall_s"], ka["merge_s"]))
    if "kprof_recorded" in results:
        print("kprof recorded (launch-bound): %s" % results["kprof_recorded"])
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
