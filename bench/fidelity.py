#!/usr/bin/env python3
"""bench/fidelity.py — does kprof's GPU time agree with Nsight Compute and with CUPTI kernel
records? (issue 3, on a CUDA GPU)

For three kernels — memory-bound (>= 1 ms), short (~10 us), compute-bound — and a tiny one (one
warp, under 2 us, where kprof's convention and Nsight Compute's part: shown, not judged) it takes, in one
run: kprof's median with its default clock (CUPTI kernel records), kprof's median with CUDA
events, and the median of Nsight Compute's gpu__time_duration.sum over the same dispatches
(`ncu --clock-control none`, profiling `kprof run --timer events`). Goal: within 2%, and within
0.5 us for the short kernel.

usage: bench/fidelity.py [--kprof build/kprof] [--ncu ncu] [--json out.json]
"""

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "kernels", "fidelity.cu")

CASES = [
    # name, entry, grid, tg, buffers
    ("memory-bound", "stream_add", 402653184, 256,
     "f32:402653184,f32:402653184,f32:402653184,u32=402653184"),
    ("short", "stream_add", 4194304, 256, "f32:4194304,f32:4194304,f32:4194304,u32=4194304"),
    ("compute-bound", "fma_loop", 1048576, 256, "f32:1048576,f32:1048576,u32=16384"),
    # Below 2 us the two conventions part by a fixed amount (see TINY_NOTE): shown, not judged.
    ("tiny", "stream_add", 32, 32, "f32:32,f32:32,f32:32,u32=32"),
]

TINY_NOTE = (
    "tiny (one warp, under 2 us): kprof reports the kernel's execution span from CUPTI's kernel "
    "records, the convention of Nsight Systems and the PyTorch profiler, whose timelines kprof's "
    "traces line up with; Nsight Compute's gpu__time_duration also counts the GPU front end's "
    "work on the launch, a fixed ~0.5-1 us that only a kernel this short shows. CUDA events add "
    "the host-visible launch gap on top. The difference is reported, not judged.")


def kprof_run(kprof, entry, grid, tg, buffers, timer, iters, env, warmup=3, kind=None):
    if kind:
        env = dict(env, KPROF_CUPTI_KIND=kind)
    cmd = [kprof, "run", SRC, "--entry", entry, "--grid", str(grid), "--tg", str(tg),
           "--buffers", buffers, "--iters", str(iters), "--warmup", str(warmup), "--timer", timer,
           "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("kprof failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return json.loads(p.stdout)


def ncu_durations(ncu, kprof, entry, grid, tg, buffers, iters, env, cache="all"):
    cmd = [ncu, "--clock-control", "none", "--cache-control", cache,
           "--metrics", "gpu__time_duration.sum", "--csv",
           "--print-units", "base", "--kernel-name", entry,
           kprof, "run", SRC, "--entry", entry, "--grid", str(grid), "--tg", str(tg),
           "--buffers", buffers, "--iters", str(iters), "--warmup", "3", "--timer", "events"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("ncu failed: %s\n%s\n%s" % (" ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    lines = [l for l in p.stdout.splitlines() if l.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    ns = [float(r["Metric Value"].replace(",", "")) for r in rows
          if r.get("Metric Name") == "gpu__time_duration.sum"]
    if not ns:
        sys.exit("ncu gave no gpu__time_duration rows:\n" + p.stdout[-3000:])
    return ns[3:] if len(ns) > 3 else ns  # drop the warm-ups


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--blocks-probe", action="store_true",
                    help="how CUPTI's two record kinds depart from ncu as the grid grows")
    ap.add_argument("--probe", action="store_true",
                    help="show how warm-up count and ncu's cache control move the figures")
    a = ap.parse_args()
    kprof = os.path.abspath(a.kprof)
    env = dict(os.environ, NO_COLOR="1")
    if a.blocks_probe:
        # How each CUPTI record kind departs from ncu as the grid grows (stream_add).
        for n in (1 << 22, 1 << 24, 1 << 26, 1 << 27, 402653184):
            bufs = "f32:%d,f32:%d,f32:%d,u32=%d" % (n, n, n, n)
            s = kprof_run(kprof, "stream_add", n, 256, bufs, "cupti", a.iters, env, kind="serial")
            c = kprof_run(kprof, "stream_add", n, 256, bufs, "cupti", a.iters, env,
                          kind="concurrent")
            ncu = statistics.median(ncu_durations(a.ncu, kprof, "stream_add", n, 256, bufs, 20,
                                                  env, "none")) / 1e6
            print("blocks %8d: ncu %.4f ms serial %+.2f us concurrent %+.2f us" % (
                n // 256, ncu, (s["gpu_ms_median"] - ncu) * 1e3,
                (c["gpu_ms_median"] - ncu) * 1e3), flush=True)
        return
    if a.probe:
        for name, entry, grid, tg, buffers in CASES:
            for timer in ("events", "cupti"):
                for warmup in (3, 30, 300):
                    r = kprof_run(kprof, entry, grid, tg, buffers, timer, a.iters, env, warmup)
                    print("probe %-14s %-6s warmup %4d: median %.4f ms min %.4f ms" % (
                        name, timer, warmup, r["gpu_ms_median"], r["gpu_ms_min"]), flush=True)
            for cache in ("all", "none"):
                ns = ncu_durations(a.ncu, kprof, entry, grid, tg, buffers, 20, env, cache)
                print("probe %-14s ncu cache-control %-4s: median %.4f ms min %.4f ms" % (
                    name, cache, statistics.median(ns) / 1e6, min(ns) / 1e6), flush=True)
        return
    rows = []
    for name, entry, grid, tg, buffers in CASES:
        auto = kprof_run(kprof, entry, grid, tg, buffers, "auto", a.iters, env)
        cupti = kprof_run(kprof, entry, grid, tg, buffers, "cupti", a.iters, env, kind="serial")
        conc = kprof_run(kprof, entry, grid, tg, buffers, "cupti", a.iters, env,
                         kind="concurrent")
        events = kprof_run(kprof, entry, grid, tg, buffers, "events", a.iters, env)
        # kprof dispatches back to back without flushing caches: ncu --cache-control none is
        # the like-for-like figure; ncu's default (flush before each kernel) is shown beside it.
        ncu = ncu_durations(a.ncu, kprof, entry, grid, tg, buffers, 20, env, "none")
        ncu_flush = ncu_durations(a.ncu, kprof, entry, grid, tg, buffers, 20, env, "all")
        row = {
            "case": name, "entry": entry, "grid": grid, "tg": tg,
            "kprof_default_ms": auto["gpu_ms_median"], "kprof_default_timer": auto["timer"],
            "kprof_cupti_ms": cupti["gpu_ms_median"], "kprof_cupti_timer": cupti["timer"],
            "kprof_cupti_concurrent_ms": conc["gpu_ms_median"],
            "kprof_events_ms": events["gpu_ms_median"],
            "ncu_ms": statistics.median(ncu) / 1e6, "ncu_n": len(ncu),
            "ncu_flush_ms": statistics.median(ncu_flush) / 1e6,
        }
        for k in ("default", "cupti", "cupti_concurrent", "events"):
            v = row["kprof_%s_ms" % k]
            row["%s_vs_ncu_ratio" % k] = v / row["ncu_ms"]
            row["%s_vs_ncu_us" % k] = (v - row["ncu_ms"]) * 1e3
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    print("fidelity: kprof medians vs Nsight Compute gpu__time_duration median (ncu --cache-control"
          " none; 'flush' = ncu's default cache flush), ratio and difference to ncu")
    print("%-14s %-28s %-28s %-28s %-28s %10s %10s" % (
        "kernel", "kprof default", "cupti serial", "cupti concurrent", "events", "ncu",
        "ncu flush"))
    ok = True
    for r in rows:
        cells = ["%8.4f ms %6.4f %+6.2fus" % (r["kprof_%s_ms" % k], r["%s_vs_ncu_ratio" % k],
                                              r["%s_vs_ncu_us" % k])
                 for k in ("default", "cupti", "cupti_concurrent", "events")]
        print("%-14s %-28s %-28s %-28s %-28s %7.4f ms %7.4f ms" % (
            r["case"], cells[0], cells[1], cells[2], cells[3], r["ncu_ms"], r["ncu_flush_ms"]))
        if r["case"] == "tiny":
            continue  # two conventions, both shown (TINY_NOTE)
        goal = abs(r["default_vs_ncu_us"]) <= 0.5 if r["case"] == "short" else \
            abs(r["default_vs_ncu_ratio"] - 1) <= 0.02
        ok = ok and goal
    print(TINY_NOTE)
    print("default clock: %s" % rows[0]["kprof_default_timer"])
    print("goal (default clock within 2%%, short within 0.5 us): %s" % ("met" if ok else "MISSED"))


if __name__ == "__main__":
    main()
