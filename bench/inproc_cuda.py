#!/usr/bin/env python3
"""bench/inproc_cuda.py — libkprof's CUDA surface on a CUDA GPU (issue 12), side by side with
`kprof trace` in one run: a program that profiles itself (tests/programs/inproc_cuda.cu: STEPS
scopes, each a saxpy over 1M floats with a kernel hook giving 2 flops and 12 bytes an element)
— the saxpy's median device time in-process against kprof trace's of the same program, its
GFLOP/s and GB/s from the trace; and kprof_benchmark of 20 saxpys against 20 x the profiled
median.

usage: bench/inproc_cuda.py [--build build] [--steps 500] [--json out.json]
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def kernels(path):
    db = sqlite3.connect(path)
    rows = [r[0] for r in db.execute("SELECT e.end_ns - e.start_ns FROM events e JOIN strings s "
                                      "ON s.id = e.name WHERE e.kind = 4 AND s.text LIKE 'saxpy%'")]
    db.close()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    kprof = os.path.join(build, "kprof")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    tmp = tempfile.mkdtemp(prefix="kprof-inproc-bench-")
    app = os.path.join(tmp, "inproc_cuda")
    b = subprocess.run([nvcc, "-O2", "-arch=sm_90", "-I", os.path.join(ROOT, "include"), "-o", app,
                        os.path.join(ROOT, "tests", "programs", "inproc_cuda.cu"), "-L", build,
                        "-lkprof", "-Xlinker", "-rpath=" + build], capture_output=True, text=True)
    if b.returncode != 0:
        sys.exit("nvcc failed: " + b.stderr)
    env = dict(os.environ, TMPDIR=tmp)
    env.pop("KPROF", None)
    inproc = os.path.join(tmp, "in.kprof")
    subprocess.run([app, "profile", inproc, str(a.steps)], check=True, env=env, cwd=tmp,
                   capture_output=True)
    traced = os.path.join(tmp, "traced.kprof")
    subprocess.run([kprof, "trace", "-o", traced, "--", app, "profile",
                    os.path.join(tmp, "x.kprof"), str(a.steps)], check=True, env=env, cwd=tmp,
                   capture_output=True)
    k_in, k_tr = kernels(inproc), kernels(traced)
    rep = json.loads(subprocess.run([kprof, "report", inproc, "--json"], check=True,
                                    capture_output=True, text=True).stdout)
    row = next(g for g in rep["device"] if g["name"].startswith("saxpy"))
    bench = subprocess.run([app, "bench"], check=True, env=env, cwd=tmp, capture_output=True,
                           text=True).stdout.split()
    bench = {bench[i]: bench[i + 1] for i in range(0, len(bench), 2)}
    bench = {k: v if k == "stop" else float(v) for k, v in bench.items()}  # stop: the rule's name
    res = {
        "steps": a.steps,
        "inproc_median_ns": statistics.median(k_in), "inproc_kernels": len(k_in),
        "trace_median_ns": statistics.median(k_tr), "trace_kernels": len(k_tr),
        "gflop_per_s": row.get("gflop_per_s"), "gb_per_s": row.get("gb_per_s"),
        "benchmark": bench,
    }
    res["inproc_vs_trace"] = res["inproc_median_ns"] / res["trace_median_ns"]
    res["benchmark_busy_vs_20_kernels"] = bench["busy"] / (20 * res["inproc_median_ns"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print("saxpy over 1M floats, %d steps: in-process median %.2f us (%d kernels), kprof trace "
          "%.2f us (%d kernels): ratio %.4f (goal within 2%%)" % (
              a.steps, res["inproc_median_ns"] / 1e3, len(k_in), res["trace_median_ns"] / 1e3,
              len(k_tr), res["inproc_vs_trace"]))
    print("kernel hook metrics: %.1f GFLOP/s, %.1f GB/s (2 flops, 12 bytes an element)" % (
        res["gflop_per_s"], res["gb_per_s"]))
    print("kprof_benchmark, 20 saxpys a run: %d runs, p50 %.2f us (min %.2f, p90 %.2f, max %.2f), "
          "kernels alone %.2f us = %.3f x 20 profiled medians; host wall %.2f us" % (
              bench["runs"], bench["p50"] / 1e3, bench["min"] / 1e3, bench["p90"] / 1e3,
              bench["max"] / 1e3, bench["busy"] / 1e3, res["benchmark_busy_vs_20_kernels"],
              bench["wall"] / 1e3))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
