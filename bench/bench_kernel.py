#!/usr/bin/env python3
"""bench/bench_kernel.py — is `kprof bench` precise, quick to an answer, in line with Nsight
Compute, and right about A/B? Measured against its peers in one run (on a CUDA GPU).

Kernels (bench/kernels/bench.cu), sized at the start by one `kprof run` each (--no-calibrate:
the built-in guesses): stream_add at ~20 us ("short") and ~200 us ("mid"), fma_long at ~1 ms
("long"), and the pair fma_work10 / fma_work11 (B does 10% more dependent FMAs than A).

  a. precision: 5 separate `kprof bench` runs (hot, defaults) of short and long; the spread of
     the 5 medians (max/min - 1), each run's wall time, samples and stopping rule. Goal < 0.5%.
  b. time to a result against triton.testing.do_bench (defaults: 25 ms warm-up, 100 ms of
     repetitions, L2 flushed before each, so a cold measurement) calling the same source through
     cupy.RawKernel, 5 times each, interleaved with `kprof bench --cache cold` (defaults, and
     --min-time 0.02) and `kprof bench --min-time 0.02` hot. Each tool's median of medians, its
     5-run spread and mean wall time per result (kprof: the process's wall time, and the JSON's
     wall_s, which leaves out process start, compile and buffer fill). Goal: kprof cold's spread
     no wider than do_bench's; the time ratio is reported.
  c. nvbench: not built on that machine (its CMake fetches dependencies; no internet): recorded.
  d. cold against Nsight Compute: the median of ncu's gpu__time_duration.sum (`ncu
     --clock-control none`, default --cache-control all, i.e. flushed before each kernel) over
     `kprof run --timer events --iters 20 --warmup 2`, against `kprof bench --cache cold`'s
     median (hot beside it for contrast), for short, mid and long. Goal: within 2%.
  e. A/B: 10 runs of fma_work10 vs fma_work11 (every verdict SLOWER) and 10 of fma_work10 vs
     itself (never FASTER or SLOWER); the ratios and the wall time of each.

A missing tool (ncu, triton, cupy, torch) is recorded with the reason and the rest goes on;
a section that fails is recorded and the next one runs. The --json file is rewritten after each
section, so a run cut short keeps what it measured. --budget S stops starting new measurements
after S seconds. --dry-run prints every command and feeds the parsing and summary synthetic
figures (nothing runs; the JSON says "dry_run": true).

usage: bench/bench_kernel.py [--kprof build/kprof] [--ncu ncu] [--json out.json] [--dry-run]
"""

import argparse
import csv
import inspect
import io
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "kernels", "bench.cu")

REPS = 5          # precision and do_bench: separate results per kernel and tool
AB_REPS = 10      # A/B and A/A runs
TG = 256
# Starting sizes (H200 figures from bench/results: stream_add of 4M floats 16.8 us hot,
# ~3.4 TB/s on large arrays; fma_loop-like four chains ~30 TFMA/s).
GUESS = {"short": 5242880, "mid": 56623104, "long": 7090}
TARGET_MS = {"short": 0.020, "mid": 0.200, "long": 1.0}
LONG_GRID = 1048576
AB_GRID = 262144  # fma_work10 ~80 us, fma_work11 ~88 us on an H200 (one wave at full occupancy)
NVBENCH_REASON = ("not built: nvbench's CMake fetches its dependencies (CPM: fmt, nlohmann_json, "
                  "...) from the internet, which the H200 machine cannot reach; no prebuilt "
                  "nvbench is installed there")


def mean(v):
    return sum(v) / len(v) if v else None


def spread(v):
    return max(v) / min(v) - 1 if len(v) >= 2 and min(v) > 0 else None


def pct(x):
    return "n/a" if x is None else "%.2f%%" % (100 * x)


def fmt(x, f="%.4f"):
    return "n/a" if x is None else f % x


# --------------------------------------------------------------------------------------------
# Kernels


def stream_spec(name, n):
    n = min(max(1024, int(n) // 1024 * 1024), 1 << 28)
    return {"name": name, "entries": ["stream_add"], "grid": n, "tg": TG, "n": n,
            "buffers": "f32:%d,f32:%d,f32:%d,u32=%d" % (n, n, n, n), "bytes": 12 * n}


def long_spec(iters):
    iters = min(max(16, int(iters)), 1 << 20)
    return {"name": "long", "entries": ["fma_long"], "grid": LONG_GRID, "tg": TG, "iters": iters,
            "buffers": "f32:%d,u32=%d" % (LONG_GRID, iters),
            "flops": 2 * 4 * iters * LONG_GRID}


def ab_spec(entry_a, entry_b):
    return {"name": "%s/%s" % (entry_a, entry_b), "entries": [entry_a, entry_b], "grid": AB_GRID,
            "tg": TG, "buffers": "f32:%d,u32=%d" % (AB_GRID, AB_GRID)}


def label(spec):
    if spec["name"] == "long":
        return "fma_long ~1ms (iters %d)" % spec["iters"]
    return "stream_add ~%dus (n %d)" % (round(TARGET_MS[spec["name"]] * 1e3), spec["n"])


# --------------------------------------------------------------------------------------------
# Synthetic tool output (--dry-run; also lets a stand-in kprof/ncu exercise the parsing)


def _arg(cmd, flag, default=None):
    vals = [cmd[i + 1] for i, c in enumerate(cmd[:-1]) if c == flag]
    return vals if flag == "--entry" else (vals[-1] if vals else default)


def _model_ms(entry, buffers):
    u32 = [int(b.split("=")[1]) for b in buffers.split(",") if b.startswith("u32=")]
    p = u32[0] if u32 else 1 << 20
    if entry == "stream_add":
        return 0.002 + 12 * p / 3.4e12 * 1e3
    if entry == "fma_long":
        return p / 7090.0
    if entry == "fma_work10":
        return 0.0830
    if entry == "fma_work11":
        return 0.0910
    return 0.05


def synth(cmd, rng=random):
    """What kprof (run / bench --json) or ncu (--csv) would print for cmd, roughly."""
    if os.path.basename(cmd[0]).startswith("ncu"):
        k = cmd.index("run")
        entry = _arg(cmd[k:], "--entry")[0]
        ms = _model_ms(entry, _arg(cmd[k:], "--buffers"))
        n = int(_arg(cmd[k:], "--iters", "20")) + int(_arg(cmd[k:], "--warmup", "2"))
        rows = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
        for i in range(n):
            rows.append('"%d","%s","gpu__time_duration.sum","ns","%s"' % (
                i, entry, "{:,.0f}".format(ms * 1e6 * rng.gauss(0.99, 0.003))))
        return "==PROF== Connected to process\n" + "\n".join(rows) + "\n"
    sub = cmd[1]
    entries = _arg(cmd, "--entry") or ["stream_add"]
    buffers = _arg(cmd, "--buffers")
    if sub == "run":
        ms = _model_ms(entries[0], buffers) * rng.gauss(1, 0.002)
        return json.dumps({"gpu_ms_median": ms, "gpu_ms_min": ms * 0.99, "timer": "cupti"})
    caches = {"hot": ["hot"], "cold": ["cold"], "both": ["hot", "cold"]}[_arg(cmd, "--cache",
                                                                             "hot")]
    min_time = float(_arg(cmd, "--min-time", "0.5"))
    points = []
    for cache in caches:
        ks = []
        for i, e in enumerate(entries if len(entries) == 2 else entries[:1]):
            base = _model_ms(e, buffers) * (1.01 if cache == "cold" else 1.0)
            med = base * rng.gauss(1, 0.001 if min_time >= 0.5 else 0.002)
            n = max(10, int(min_time / base * 1e3))
            ks.append({"label": ("A", "B")[i] if len(entries) == 2 else "", "entry": e,
                       "median_ms": med, "ci_ms": [med * 0.998, med * 1.002],
                       "min_ms": med * 0.99, "p90_ms": med * 1.01, "noise": 0.002,
                       "rsd": 0.01, "samples": n, "taken": n, "throttled": 0,
                       "gpu_time_s": n * base / 1e3, "clock_mhz": 1980.0, "gbps": 0,
                       "samples_ms": [med] * min(n, 50),
                       **({"flush_ms": 0.05} if cache == "cold" else {})})
        comp = None
        if len(ks) == 2:
            r = ks[1]["median_ms"] / ks[0]["median_ms"]
            v = "SLOWER" if r > 1.02 else "FASTER" if r < 0.98 else "SAME"
            comp = {"ratio": r, "ci": [r - 0.003, r + 0.003], "verdict": v, "time_verdict": v,
                    "cycles_ratio": r, "cycles_verdict": v, "paired": True}
        gpu = sum(k["gpu_time_s"] for k in ks)
        points.append({"point": "", "cache": cache, "stop": "noise",
                       "wall_s": gpu * (3 if cache == "cold" else 1.15), "kernels": ks,
                       "comparison": comp})
    return json.dumps({"kind": "bench", "device": "NVIDIA H200 (dry run)", "timer": "cupti",
                       "points": points})


# --------------------------------------------------------------------------------------------
# Running things


class Ctx:
    def __init__(self, a):
        self.a = a
        self.dry = a.dry_run
        self.kprof = os.path.abspath(a.kprof)
        self.env = dict(os.environ, NO_COLOR="1")
        self.t0 = time.perf_counter()
        self.budget = a.budget
        self.skipped = 0

    def elapsed(self):
        return time.perf_counter() - self.t0

    def left(self):
        return self.budget - self.elapsed()

    def log(self, msg):
        print("[%4.0fs] %s" % (self.elapsed(), msg), file=sys.stderr, flush=True)

    def call(self, cmd, timeout):
        """Run cmd: {"cmd", "rc", "wall_subprocess_s", "stdout"|"error"}."""
        rec = {"cmd": shlex.join(cmd)}
        if self.left() <= 0:
            self.skipped += 1
            rec["error"] = "skipped: over the --budget of %.0f s" % self.budget
            return rec
        if self.dry:
            print("$ " + rec["cmd"], flush=True)
            rec.update(rc=0, wall_subprocess_s=0.5, stdout=synth(cmd))  # made up
            return rec
        timeout = max(10.0, min(timeout, self.left() + 60))
        t = time.perf_counter()
        try:
            # Its own process group, so that a timeout also ends what it started (ncu's target).
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=self.env, start_new_session=True)
        except OSError as exc:
            rec["error"] = "cannot run: %s" % exc
            return rec
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            rec.update(wall_subprocess_s=time.perf_counter() - t,
                       error="killed after %.0f s (subprocess timeout)" % timeout)
            return rec
        rec.update(rc=p.returncode, wall_subprocess_s=time.perf_counter() - t, stdout=out)
        if p.returncode != 0:
            rec["stderr_tail"] = err[-1500:]
        return rec

    def kprof_json(self, cmd, timeout):
        """Run a kprof command with --json; the parsed JSON in rec["result"] (samples dropped
        unless --keep-samples)."""
        rec = self.call(cmd, timeout)
        out = rec.pop("stdout", None)
        if out is None:
            return rec
        try:
            j = json.loads(out[out.index("{"):]) if "{" in out else None
        except ValueError as exc:
            j = None
            rec.setdefault("error", "unparsable JSON (%s); stdout starts %r" % (exc, out[:200]))
        if j is None:
            rec.setdefault("error", "no JSON (rc %s): %s" % (rec.get("rc"),
                                                            rec.get("stderr_tail", "")[-500:]))
            return rec
        if not self.a.keep_samples:
            for pt in j.get("points", []):
                for k in pt.get("kernels", []):
                    if "samples_ms" in k:
                        k["samples_ms_n"] = len(k.pop("samples_ms"))
                    k.pop("clock_samples_mhz", None)
        rec["result"] = j
        return rec


def bench_cmd(ctx, spec, cache="hot", extra=(), sources=None):
    cmd = [ctx.kprof, "bench"] + (sources or [SRC])
    for e in spec["entries"]:
        cmd += ["--entry", e]
    cmd += ["--grid", str(spec["grid"]), "--tg", str(spec["tg"]), "--buffers", spec["buffers"],
            "--cache", cache] + list(extra) + ["--json"]
    return cmd


def run_cmd(ctx, spec, iters=20, warmup=3, timer=None):
    cmd = [ctx.kprof, "run", SRC, "--entry", spec["entries"][0], "--grid", str(spec["grid"]),
           "--tg", str(spec["tg"]), "--buffers", spec["buffers"], "--iters", str(iters),
           "--warmup", str(warmup)]
    return cmd + (["--timer", timer] if timer else []) + ["--json"]


def bench_timeout(extra):
    t = 15.0
    if "--timeout" in extra:
        t = float(extra[list(extra).index("--timeout") + 1])
    return t + 60


def fig(rec, cache=None):
    """One kernel's figures from a single-kernel `kprof bench --json` record, or None."""
    j = rec.get("result")
    if not j:
        return None
    pts = [p for p in j.get("points", []) if cache is None or p.get("cache") == cache]
    if not pts or not pts[0].get("kernels"):
        return None
    p, k = pts[0], pts[0]["kernels"][0]
    return {"median_ms": k.get("median_ms"), "noise": k.get("noise"),
            "samples": k.get("samples"), "taken": k.get("taken"),
            "throttled": k.get("throttled"), "stop": p.get("stop"), "wall_s": p.get("wall_s"),
            "subprocess_s": rec.get("wall_subprocess_s"), "flush_ms": k.get("flush_ms"),
            "gpu_time_s": k.get("gpu_time_s"), "clock_mhz": k.get("clock_mhz")}


def agg(figs, wall_key="subprocess_s"):
    """Median of medians, spread, mean walls of a list of figures (None entries = failures)."""
    ok = [f for f in figs if f and f.get("median_ms")]
    med = [f["median_ms"] for f in ok]
    out = {"n_runs": len(figs), "ok": len(ok), "medians_ms": med,
           "median_of_medians_ms": statistics.median(med) if med else None,
           "spread": spread(med),
           "mean_wall_s": mean([f[wall_key] for f in ok if f.get(wall_key) is not None])}
    if ok and "wall_s" in ok[0] and wall_key != "wall_s":
        out["mean_json_wall_s"] = mean([f["wall_s"] for f in ok if f.get("wall_s") is not None])
    if ok and "stop" in ok[0]:
        stops = {}
        for f in ok:
            stops[f["stop"]] = stops.get(f["stop"], 0) + 1
        out["stops"] = stops
        out["samples"] = [f.get("samples") for f in ok]
    return out


def group(recs):
    """agg() of `kprof bench` records, with the runs and the first error (if any)."""
    g = {"runs": recs, **agg([fig(r) for r in recs])}
    g["first_error"] = next((r["error"] for r in recs if r.get("error")), None)
    return g


def failed(g):
    """' FAILED: why' where a group measured nothing, else ''."""
    if g.get("ok"):
        return ""
    return " FAILED: %s" % (g.get("first_error") or "nothing measured").strip().splitlines()[-1]


# --------------------------------------------------------------------------------------------
# Sections


def calibrate(ctx, R):
    specs = {"short": stream_spec("short", GUESS["short"]), "mid": stream_spec("mid", GUESS["mid"]),
             "long": long_spec(GUESS["long"])}
    cal = {}
    R["calibration"] = cal
    if ctx.a.no_calibrate:
        cal["note"] = "--no-calibrate: the guesses"
        return specs
    for name, spec in list(specs.items()):
        rec = ctx.kprof_json(run_cmd(ctx, spec), 120)
        j = rec.get("result") or {}
        ms = j.get("gpu_ms_median")
        entry = {"guess": spec, "run": rec, "measured_ms": ms, "target_ms": TARGET_MS[name]}
        if ms and ms > 0:
            if name == "long":
                specs[name] = long_spec(round(spec["iters"] * TARGET_MS[name] / ms))
            else:
                fixed = 0.002 if ms > 0.004 else 0  # launch/ramp: not proportional to n
                specs[name] = stream_spec(name, spec["n"] * (TARGET_MS[name] - fixed) /
                                          (ms - fixed))
            if "timer" in j:
                R.setdefault("timer_run", j["timer"])
        else:
            entry["note"] = "calibration failed: the guess is used"
        entry["chosen"] = specs[name]
        cal[name] = entry
        ctx.log("calibrate %s: %s ms at the guess -> %s" % (name, fmt(ms), label(specs[name])))
    return specs


def precision(ctx, R, specs):
    out = {"goal": "spread of %d medians (max/min - 1) < 0.5%%" % REPS}
    R["precision"] = out
    for name in ("short", "long"):
        spec = specs[name]
        recs = []
        for i in range(REPS):
            rec = ctx.kprof_json(bench_cmd(ctx, spec, "hot"), bench_timeout(()))
            recs.append(rec)
            f = fig(rec)
            ctx.log("precision %s run %d/%d: %s" % (name, i + 1, REPS, _figline(f, rec)))
        out[name] = {"spec": spec, "figures": [fig(r) for r in recs], **group(recs)}
        s = out[name]["spread"]
        out[name]["pass"] = s is not None and s < 0.005 and out[name]["ok"] == REPS


def _figline(f, rec):
    if not f:
        return "FAILED: %s" % rec.get("error", "?")
    return "%.5f ms, %s samples, stop %s, %.2f s (json wall_s %.2f)" % (
        f["median_ms"], f["samples"], f["stop"], f["subprocess_s"] or 0, f["wall_s"] or 0)


def ncu_section(ctx, R, specs):
    """Nsight Compute's median for short, mid, long (kprof's side is filled in later)."""
    out = {"goal": "kprof bench --cache cold median within 2% of ncu's (default --cache-control "
                   "all, --clock-control none)"}
    R["ncu"] = out
    ncu = ctx.a.ncu or shutil.which("ncu") or (
        "/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)
    if not ncu and ctx.dry:
        ncu = "ncu"
    if not ncu or not (ctx.dry or shutil.which(ncu) or os.path.exists(ncu)):
        out["unavailable"] = "ncu not found (--ncu PATH names it)"
        return
    out["ncu"] = ncu
    for name in ("short", "mid", "long"):
        spec = specs[name]
        cmd = [ncu, "--clock-control", "none", "--cache-control", "all",
               "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
               "--kernel-name", spec["entries"][0]] + run_cmd(ctx, spec, 20, 2, "events")[:-1]
        rec = ctx.call(cmd, 240)
        stdout = rec.pop("stdout", None)
        ns = []
        if stdout is not None:
            lines = [l for l in stdout.splitlines() if l.startswith('"')]
            try:
                rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
                ns = [float(r["Metric Value"].replace(",", "")) for r in rows
                      if r.get("Metric Name") == "gpu__time_duration.sum"]
            except (KeyError, ValueError) as exc:
                rec["error"] = "unparsable ncu CSV: %s" % exc
            if not ns:
                rec.setdefault("error", "no gpu__time_duration rows (rc %s): %s" % (
                    rec.get("rc"), (stdout[-800:] + rec.get("stderr_tail", ""))[-1500:]))
        ns = ns[2:] if len(ns) > 2 else ns  # the 2 warm-ups
        ms = statistics.median(ns) / 1e6 if ns else None
        out[name] = row = {"spec": spec, "run": rec, "ncu_ms": ms, "ncu_n": len(ns),
                           "ncu_samples_ms": [x / 1e6 for x in ns]}
        ctx.log("ncu %s: median %s ms of %d (%.1f s)%s" % (
            name, fmt(ms), len(ns), rec.get("wall_subprocess_s") or 0,
            "" if ns else ": " + rec.get("error", "")[-300:]))
        if name == "mid":  # short and long come from sections a and b
            cold = ctx.kprof_json(bench_cmd(ctx, spec, "cold"), bench_timeout(()))
            hot = ctx.kprof_json(bench_cmd(ctx, spec, "hot"), bench_timeout(()))
            row["kprof_runs"] = [cold, hot]
            c, h = fig(cold), fig(hot)
            row["kprof_cold_ms"] = c and c["median_ms"]
            row["kprof_hot_ms"] = h and h["median_ms"]
            ctx.log("kprof bench mid cold: %s; hot: %s" % (_figline(c, cold), _figline(h, hot)))


def ab_section(ctx, R):
    out = {"goal": "fma_work11 vs fma_work10 (B does 10%% more): %d/%d SLOWER; fma_work10 vs "
                   "itself: never FASTER or SLOWER" % (AB_REPS, AB_REPS)}
    R["ab"] = out
    extra = ["--timeout", "10"]
    diff, same = ab_spec("fma_work10", "fma_work11"), ab_spec("fma_work10", "fma_work10")
    # A/A forms, tried in turn until one is accepted: --entry twice; the file twice; a copy.
    forms = [None, [SRC, SRC]]
    diffs, sames, same_form = [], [], None
    for i in range(AB_REPS):
        diffs.append(_ab_one(ctx, bench_cmd(ctx, diff, "hot", extra), extra))
        ctx.log("A/B  run %d/%d: %s" % (i + 1, AB_REPS, _abline(diffs[-1])))
        tried = [same_form] if same_form is not None or i > 0 else forms
        for form in tried:
            spec = same if form is None else {**same, "entries": ["fma_work10"]}
            rec = _ab_one(ctx, bench_cmd(ctx, spec, "hot", extra, form), extra)
            if rec.get("comparison") or ctx.dry:
                same_form = form
                break
        sames.append(rec)
        ctx.log("A/A  run %d/%d: %s" % (i + 1, AB_REPS, _abline(sames[-1])))
    out["same_form"] = "--entry twice" if same_form is None else "the file twice"
    for key, recs in (("diff", diffs), ("same", sames)):
        comps = [r.get("comparison") for r in recs]
        verdicts = [c["verdict"] if c else "ERROR" for c in comps]
        counts = {}
        for v in verdicts:
            counts[v] = counts.get(v, 0) + 1
        out[key] = {"runs": recs, "verdicts": verdicts, "counts": counts,
                    "ratios": [c["ratio"] if c else None for c in comps],
                    "mean_wall_s": mean([r["wall_subprocess_s"] for r in recs
                                         if r.get("comparison")]),
                    "mean_json_wall_s": mean([r["json_wall_s"] for r in recs
                                              if r.get("comparison")])}
    out["diff"]["pass"] = out["diff"]["counts"].get("SLOWER", 0) == AB_REPS
    out["same"]["pass"] = (out["same"]["counts"].get("SLOWER", 0) == 0 and
                           out["same"]["counts"].get("FASTER", 0) == 0 and
                           out["same"]["counts"].get("ERROR", 0) == 0)


def _ab_one(ctx, cmd, extra):
    rec = ctx.kprof_json(cmd, bench_timeout(extra))
    j = rec.get("result") or {}
    pts = j.get("points") or [{}]
    rec["comparison"] = pts[0].get("comparison")
    rec["stop"] = pts[0].get("stop")
    rec["json_wall_s"] = pts[0].get("wall_s")
    rec["medians_ms"] = [k.get("median_ms") for k in pts[0].get("kernels", [])]
    return rec


def _abline(rec):
    c = rec.get("comparison")
    if not c:
        return "FAILED: %s" % rec.get("error", "no comparison in the JSON")
    return "%s ratio %.4f [%.4f, %.4f] (time %s, cycles %s), stop %s, %.2f s" % (
        c.get("verdict"), c.get("ratio"), c["ci"][0], c["ci"][1], c.get("time_verdict"),
        c.get("cycles_verdict"), rec.get("stop"), rec.get("wall_subprocess_s") or 0)


class Peer:
    """triton.testing.do_bench over cupy.RawKernel launches of bench.cu on torch's stream."""

    def __init__(self, ctx, specs):
        self.ctx = ctx
        self.info = {}
        self.fns = {}
        if ctx.dry:
            self.info["note"] = "dry run: do_bench figures are synthetic"
            return
        import numpy as np
        import torch
        import triton
        import triton.testing
        import cupy
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        cupy.cuda.Device(0).use()
        self.torch, self.cupy = torch, cupy
        self.do_bench = triton.testing.do_bench
        # One stream for both: torch's current one (its default stream is the legacy default
        # stream, which cupy's null stream is too).
        tptr = torch.cuda.current_stream().cuda_stream
        stream = cupy.cuda.ExternalStream(tptr) if tptr else cupy.cuda.Stream.null
        stream.use()
        self.info.update(triton=triton.__version__, torch=torch.__version__,
                         cupy=cupy.__version__, device=torch.cuda.get_device_name(0),
                         torch_stream=tptr, cupy_stream=cupy.cuda.get_current_stream().ptr)
        with open(SRC) as f:
            mod = cupy.RawModule(code=f.read())
        for name in ("short", "long"):
            spec = specs[name]
            k = mod.get_function(spec["entries"][0])
            blocks = (spec["grid"] + TG - 1) // TG
            if name == "long":
                out = cupy.empty(spec["grid"], dtype=cupy.float32)
                args = (out, np.uint32(spec["iters"]))
                keep = (out,)
            else:
                n = spec["n"]
                a = cupy.arange(n, dtype=cupy.float32) * 1e-3
                b = cupy.ones(n, dtype=cupy.float32)
                out = cupy.empty(n, dtype=cupy.float32)
                args = (out, a, b, np.uint32(n))
                keep = (out, a, b)
            fn = (lambda k=k, blocks=blocks, args=args: k((blocks,), (TG,), args))
            fn()
            torch.cuda.synchronize()
            if name == "short":  # the launch did what bench.cu says
                ok = bool(cupy.allclose(out[:4096], a[:4096] + b[:4096]))
                self.info["stream_add_checked"] = ok
                if not ok:
                    raise RuntimeError("cupy's stream_add gave wrong results")
            self.fns[name] = (fn, keep)
        # Which statistic this do_bench returns: all samples where it can (return_mode="all"),
        # else its median. The probe call is also the warm-up (kprof's compile cache is warm by
        # now too).
        params = inspect.signature(self.do_bench).parameters
        self.mode = None
        for mode in (("all", "median") if "return_mode" in params else ()):
            try:
                self.do_bench(self.fns["short"][0], return_mode=mode)
                self.mode = mode
                break
            except Exception as exc:  # an older triton: no "all"
                self.info["return_mode_%s" % mode] = repr(exc)
        if self.mode is None:
            self.do_bench(self.fns["short"][0])
        self.info["statistic"] = {"all": "median of all its samples (return_mode='all')",
                                  "median": "its median (return_mode='median')",
                                  None: "its default return (old API)"}[self.mode]
        self.info["do_bench_signature"] = str(inspect.signature(self.do_bench))

    def bench(self, name, rng=random):
        if self.ctx.dry:
            ms = (TARGET_MS[name] * 1.15 if name == "short" else TARGET_MS[name] * 1.005) * \
                rng.gauss(1, 0.004)
            print("do_bench(%s)" % name, flush=True)
            return {"median_ms": ms, "mean_ms": ms, "n": 100, "wall_s": 0.2, "subprocess_s": 0.2}
        fn = self.fns[name][0]
        self.torch.cuda.synchronize()
        t = time.perf_counter()
        r = self.do_bench(fn, return_mode=self.mode) if self.mode else self.do_bench(fn)
        self.torch.cuda.synchronize()
        wall = time.perf_counter() - t
        if self.mode == "all":
            v = list(r)
            return {"median_ms": statistics.median(v), "mean_ms": mean(v), "n": len(v),
                    "min_ms": min(v), "wall_s": wall, "subprocess_s": wall}
        med = r[0] if isinstance(r, (tuple, list)) else r
        return {"median_ms": float(med), "wall_s": wall, "subprocess_s": wall}


def peers_section(ctx, R, specs):
    """kprof cold (defaults, --min-time 0.02) and hot --min-time 0.02, interleaved with
    do_bench, REPS times for short and long."""
    out = {"goal": "kprof --cache cold: 5-run spread no wider than do_bench's (time to result "
                   "reported)"}
    R["peers"] = out
    peer = None
    try:
        peer = Peer(ctx, specs)
        out["do_bench"] = peer.info
    except Exception as exc:  # a missing peer is recorded, not fatal
        out["do_bench"] = {"unavailable": "%s: %s" % (type(exc).__name__, exc),
                           "traceback": traceback.format_exc()[-2000:]}
        ctx.log("do_bench unavailable: %s" % out["do_bench"]["unavailable"])
    configs = [("kprof_cold", "cold", ()), ("kprof_cold_min0.02", "cold", ("--min-time", "0.02")),
               ("kprof_hot_min0.02", "hot", ("--min-time", "0.02"))]
    raw = {name: {c[0]: [] for c in configs} for name in ("short", "long")}
    for name in raw:
        raw[name]["do_bench"] = []
    for i in range(REPS):
        for name in ("short", "long"):
            spec = specs[name]
            for key, cache, extra in configs:
                rec = ctx.kprof_json(bench_cmd(ctx, spec, cache, extra), bench_timeout(extra))
                raw[name][key].append(rec)
                ctx.log("%s %s run %d/%d: %s" % (key, name, i + 1, REPS, _figline(fig(rec),
                                                                                 rec)))
            if peer is not None and ctx.left() > 0:
                try:
                    d = peer.bench(name)
                except Exception as exc:
                    d = {"error": repr(exc)}
                raw[name]["do_bench"].append(d)
                ctx.log("do_bench %s run %d/%d: %s ms in %s s" % (
                    name, i + 1, REPS, fmt(d.get("median_ms"), "%.5f"),
                    fmt(d.get("wall_s"), "%.2f")))
    prec = R.get("precision", {})
    for name in ("short", "long"):
        row = {"spec": specs[name]}
        for key, _, _ in configs:
            row[key] = group(raw[name][key])
        if name in prec:  # hot with defaults: section a's runs
            row["kprof_hot"] = {"from": "precision", **{k: v for k, v in prec[name].items()
                                                        if k not in ("runs", "figures", "spec",
                                                                     "pass", "first_error")}}
        if raw[name]["do_bench"]:
            ok = [d for d in raw[name]["do_bench"] if "median_ms" in d]
            row["do_bench"] = {"results": raw[name]["do_bench"], **agg(ok, "wall_s")}
        db = row.get("do_bench", {})
        kc = row["kprof_cold"]
        if db.get("mean_wall_s") and kc.get("mean_wall_s"):
            row["time_ratio_kprof_cold_over_do_bench"] = kc["mean_wall_s"] / db["mean_wall_s"]
            row["time_ratio_kprof_cold_json_over_do_bench"] = (
                kc["mean_json_wall_s"] / db["mean_wall_s"] if kc.get("mean_json_wall_s")
                else None)
            k1 = row["kprof_cold_min0.02"]
            row["time_ratio_kprof_cold_min0.02_over_do_bench"] = (
                k1["mean_wall_s"] / db["mean_wall_s"] if k1.get("mean_wall_s") else None)
        if db.get("median_of_medians_ms") and kc.get("median_of_medians_ms"):
            row["median_ratio_kprof_cold_over_do_bench"] = (kc["median_of_medians_ms"] /
                                                           db["median_of_medians_ms"])
        if db.get("spread") is not None and kc.get("spread") is not None:
            row["pass"] = kc["spread"] <= db["spread"] and kc["ok"] == REPS
        out[name] = row


def ncu_finish(ctx, R, specs):
    """Section d's ratios: kprof's cold and hot medians (short and long from sections a and b,
    mid measured in ncu_section) over ncu's."""
    out = R["ncu"]
    if "unavailable" in out:
        return
    for name in ("short", "mid", "long"):
        row = out.get(name)
        if not row:
            continue
        if name != "mid":
            p = R.get("peers", {}).get(name, {})
            row["kprof_cold_ms"] = p.get("kprof_cold", {}).get("median_of_medians_ms")
            row["kprof_hot_ms"] = R.get("precision", {}).get(name, {}).get(
                "median_of_medians_ms")
            row["kprof_from"] = "median of the %d-run medians of sections a (hot) and b (cold)" \
                % REPS
        n = row.get("ncu_ms")
        for k in ("cold", "hot"):
            v = row.get("kprof_%s_ms" % k)
            row["%s_over_ncu" % k] = v / n if v and n else None
        r = row["cold_over_ncu"]
        row["pass"] = r is not None and abs(r - 1) <= 0.02
        ctx.log("ncu %s: kprof cold/ncu %s, hot/ncu %s" % (name, fmt(r),
                                                           fmt(row["hot_over_ncu"])))


# --------------------------------------------------------------------------------------------
# Summary


def verdict(p):
    return "n/a " if p is None else ("PASS" if p else "MISS")


def summary(R):
    L = []
    pr = R.get("precision", {})
    for name in ("short", "long"):
        r = pr.get(name)
        if not r:
            continue
        L.append("%s precision %-34s spread of %d medians %-7s (goal < 0.5%%), %.2f s per "
                 "result (json wall_s %s s), samples %s, stops %s%s" % (
                     verdict(r.get("pass")), label(r["spec"]), r["ok"], pct(r["spread"]),
                     r["mean_wall_s"] or 0, fmt(r.get("mean_json_wall_s"), "%.2f"),
                     _range(r.get("samples")), r.get("stops"), failed(r)))
    pe = R.get("peers", {})
    if "unavailable" in pe.get("do_bench", {}):
        L.append("n/a  do_bench: %s" % pe["do_bench"]["unavailable"])
    for name in ("short", "long"):
        r = pe.get(name)
        if not r:
            continue
        kc, k1, kh = r["kprof_cold"], r["kprof_cold_min0.02"], r["kprof_hot_min0.02"]
        db = r.get("do_bench", {})
        L.append("%s do_bench  %-34s cold, median of %d [spread] time per result: kprof %s ms "
                 "[%s] %s s (wall_s %s), --min-time 0.02 [%s] %s s | do_bench %s ms [%s] %s s | "
                 "kprof/do_bench time %s (0.02: %s) | hot --min-time 0.02 [%s] %s s "
                 "(goal: kprof's spread <= do_bench's)%s" % (
                     verdict(r.get("pass")), label(r["spec"]), REPS,
                     fmt(kc["median_of_medians_ms"], "%.5f"), pct(kc["spread"]),
                     fmt(kc["mean_wall_s"], "%.2f"), fmt(kc.get("mean_json_wall_s"), "%.2f"),
                     pct(k1["spread"]), fmt(k1["mean_wall_s"], "%.2f"),
                     fmt(db.get("median_of_medians_ms"), "%.5f"), pct(db.get("spread")),
                     fmt(db.get("mean_wall_s"), "%.2f"),
                     fmt(r.get("time_ratio_kprof_cold_over_do_bench"), "%.1fx"),
                     fmt(r.get("time_ratio_kprof_cold_min0.02_over_do_bench"), "%.1fx"),
                     pct(kh["spread"]), fmt(kh["mean_wall_s"], "%.2f"), failed(kc)))
    if "nvbench" in R:
        L.append("n/a  nvbench   %s" % R["nvbench"]["nvbench"])
    nc = R.get("ncu", {})
    if "unavailable" in nc:
        L.append("n/a  ncu       %s" % nc["unavailable"])
    for name in ("short", "mid", "long"):
        r = nc.get(name)
        if not r:
            continue
        why = ""
        if r.get("ncu_ms") is None:
            why = " FAILED (ncu): %s" % (r["run"].get("error") or "?").strip().splitlines()[-1]
        L.append("%s ncu       %-34s kprof cold/ncu %s (goal within 2%%), hot/ncu %s; ncu %s "
                 "ms, kprof cold %s ms%s" % (
                     verdict(r.get("pass")), label(r["spec"]), fmt(r.get("cold_over_ncu")),
                     fmt(r.get("hot_over_ncu")), fmt(r.get("ncu_ms"), "%.5f"),
                     fmt(r.get("kprof_cold_ms"), "%.5f"), why))
    ab = R.get("ab", {})
    for key, what, goal in (("diff", "fma_work11 vs fma_work10 (+10%)", "all SLOWER"),
                            ("same", "fma_work10 vs itself", "never FASTER/SLOWER")):
        r = ab.get(key)
        if not r:
            continue
        ratios = [x for x in r["ratios"] if x is not None]
        errs = [x.get("error") for x in r["runs"] if x.get("error")]
        L.append("%s A/B       %-34s %s (goal %s), ratios %s, %s s per run (json wall_s %s)%s" % (
            verdict(r.get("pass")), what, r["counts"], goal, _range(ratios, "%.4f"),
            fmt(r.get("mean_wall_s"), "%.2f"), fmt(r.get("mean_json_wall_s"), "%.2f"),
            "; first error: %s" % errs[0].strip().splitlines()[-1] if errs else ""))
    for k, v in R.get("errors", {}).items():
        L.append("ERR  %s: %s" % (k, v.splitlines()[-1] if v else v))
    return L


def _range(v, f="%d"):
    v = [x for x in (v or []) if x is not None]
    if not v:
        return "n/a"
    return (f % min(v)) if min(v) == max(v) else (f + "..." + f) % (min(v), max(v))


def first_device(R):
    """The device and timer of the first `kprof bench` result anywhere in R."""
    stack = [R]
    while stack:
        x = stack.pop(0)
        if isinstance(x, dict):
            if x.get("kind") == "bench" and x.get("device"):
                return x["device"], x.get("timer")
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--ncu", default=None, help="Nsight Compute (default: ncu on PATH, else "
                    "/usr/local/cuda/bin/ncu)")
    ap.add_argument("--json", help="write every figure here (rewritten after each section)")
    ap.add_argument("--budget", type=float, default=480,
                    help="seconds after which no new measurement starts (default 480)")
    ap.add_argument("--no-calibrate", action="store_true",
                    help="use the built-in sizes instead of one kprof run each")
    ap.add_argument("--keep-samples", action="store_true",
                    help="keep kprof's samples_ms in the JSON (large)")
    ap.add_argument("--only", default="a,b,c,d,e", help="sections to run (default a,b,c,d,e)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the commands, run nothing, summarise synthetic figures")
    a = ap.parse_args()
    ctx = Ctx(a)
    only = set(a.only.split(","))
    R = {"kind": "bench_kernel", "dry_run": a.dry_run, "kprof": ctx.kprof, "source": SRC,
         "argv": sys.argv[1:], "budget_s": a.budget, "errors": {}}
    if not a.dry_run and not os.access(ctx.kprof, os.X_OK):
        sys.exit("kprof not found at %s (--kprof PATH)" % ctx.kprof)

    def save():
        R["total_wall_s"] = ctx.elapsed()
        R["skipped_over_budget"] = ctx.skipped
        if a.json:
            with open(a.json + ".tmp", "w") as f:
                json.dump(R, f, indent=1)
            os.replace(a.json + ".tmp", a.json)

    def section(key, fn, *args):
        try:
            fn(ctx, R, *args)
        except Exception:  # recorded; the next section still runs
            R["errors"][key] = traceback.format_exc()
            ctx.log("section %s failed:\n%s" % (key, R["errors"][key]))
        save()

    specs = None
    try:
        specs = calibrate(ctx, R)
    except Exception:
        R["errors"]["calibration"] = traceback.format_exc()
        specs = {"short": stream_spec("short", GUESS["short"]),
                 "mid": stream_spec("mid", GUESS["mid"]), "long": long_spec(GUESS["long"])}
    R["kernels"] = specs
    save()
    # Order: the kprof-only sections and ncu before torch/cupy/triton load in this process.
    if "a" in only:
        section("precision", precision, specs)
    if "c" in only:
        R["nvbench"] = {"nvbench": NVBENCH_REASON}
    if "d" in only:
        section("ncu", ncu_section, specs)
    if "e" in only:
        section("ab", ab_section)
    if "b" in only:
        section("peers", peers_section, specs)
    if "d" in only:
        section("ncu_finish", ncu_finish, specs)
    R["device"], R["timer"] = first_device(R)
    save()
    lines = summary(R)
    R["summary"] = lines
    save()
    print("bench_kernel on %s (kprof timer %s), %.0f s%s%s:" % (
        R.get("device"), R.get("timer"), ctx.elapsed(), " (DRY RUN: synthetic figures)"
        if a.dry_run else "", ", %d measurements skipped over --budget" % ctx.skipped
        if ctx.skipped else ""))
    for l in lines:
        print(l)


if __name__ == "__main__":
    main()
