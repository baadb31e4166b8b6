#!/usr/bin/env python3
"""bench/run_demo.py — time to result of `kprof run` on the demo kernel.

Cold: kprof's compile cache and PoCL's own kernel cache emptied before each run, so the run
compiles from source. Warm: both caches filled by an earlier run. Each figure is the median wall
time of --repeat runs of the whole command (process start to exit). Goal (issue 2): warm under
1 s on the project's 2-core machine.

usage: bench/run_demo.py [--kprof build/kprof] [--repeat 5] [--backend opencl]
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

SPEC = "f32:1048576,f32:1048576,f32:1048576,u32=1048576"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(os.path.dirname(__file__), "..", "build", "kprof"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backend", default="opencl")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    kprof = os.path.abspath(a.kprof)
    tmp = tempfile.mkdtemp(prefix="kprof-bench-")
    env = dict(os.environ, KPROF_HOME=os.path.join(tmp, "home"),
               KPROF_CACHE_DIR=os.path.join(tmp, "cache"), POCL_CACHE_DIR=os.path.join(tmp, "pocl"),
               NO_COLOR="1")
    ext = "cl" if a.backend == "opencl" else "cu"
    subprocess.run([kprof, "isolate", "demo", "--lang", ext], env=env, check=True,
                   capture_output=True)
    cmd = [kprof, "run", "demo", "--backend", a.backend, "--entry", "demo_add", "--grid",
           "1048576", "--tg", "256", "--buffers", SPEC, "--json"]

    def once():
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit("kprof run failed: " + p.stderr)
        return wall, json.loads(p.stdout)

    cold, warm = [], []
    for _ in range(a.repeat):
        shutil.rmtree(env["KPROF_CACHE_DIR"], ignore_errors=True)
        shutil.rmtree(env["POCL_CACHE_DIR"], ignore_errors=True)
        w, r = once()
        assert not r["compile"]["cache_hit"]
        cold.append(w)
    once()
    for _ in range(a.repeat):
        w, r = once()
        assert r["compile"]["cache_hit"]
        warm.append(w)
    device = r["device"]["name"]
    shutil.rmtree(tmp, ignore_errors=True)
    res = {"device": device, "backend": a.backend, "repeat": a.repeat,
           "cold_s_median": statistics.median(cold), "warm_s_median": statistics.median(warm),
           "cold_s": cold, "warm_s": warm, "gpu_ms_median_last": r["gpu_ms_median"],
           "goal_warm_under_1s": statistics.median(warm) < 1.0}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print("kprof run demo on %s (%s), median of %d runs of the whole command:" % (device, a.backend, a.repeat))
    print("  cold cache (compile from source): %.3f s" % res["cold_s_median"])
    print("  warm cache:                       %.3f s   goal < 1 s: %s" % (
        res["warm_s_median"], "met" if res["goal_warm_under_1s"] else "MISSED"))


if __name__ == "__main__":
    main()
