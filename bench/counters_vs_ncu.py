#!/usr/bin/env python3
"""bench/counters_vs_ncu.py — does `kprof run --counters` measure what Nsight Compute measures,
on the same kernels launched the same way, and quickly? (issue 16, on a CUDA GPU)

Kernels (bench/kernels/counters.cu), each launched by kprof with the same arguments both ways:
  triad      memory-bound (3 x 256 MiB, far beyond the L2)
  fma_loop   compute-bound (8 FMA chains x 4096 steps per thread; no memory to speak of)
  l2_reread  cache-friendly (16 coalesced rereads of an 8 MiB buffer that stays in the L2)
  stride2    reads each element of a 256 MiB buffer twice, n/2 threads apart

For each:
  1. `kprof run ... --counters --json` (after one untimed run that fills the compile cache):
     its counters, readings and the wall time to the result (warm compile cache).
  2. `ncu --clock-control none --cache-control C --metrics <the names kprof read> --csv
     --print-units base -k regex:^NAME$ --launch-skip 2 -c 1 kprof run ... --warmup 2 --iters 1
     --timer events` (kprof without --counters, and timed by events, not CUPTI: ncu holds the
     counters and CUPTI), for C = all (ncu's default: caches
     flushed before each pass) and C = none (the cache as the previous dispatches left it, as
     kprof's counter dispatch finds it after its timed ones). Both are printed; the verdict is
     given for each.
  3. Compared: DRAM bytes read + written within 1% (or within 64 KiB where a kernel moves almost
     nothing: then the comparison is of noise, and says so); achieved occupancy and SM
     throughput within 2 points; L2 hit rate, FP32 FLOPs and instructions shown beside.
  4. stride2: measured / estimated bytes ~ 2 (1.8..2.2) and the reading "traffic_more" that
     says so; every kernel: the time to result of `kprof run --counters` under 3 s.
Before all that, when the store has no FP32 FLOP peak for the device, `kprof caps --measure
--backend cuda` measures it (the roofline's compute roof; --no-measure skips it).

A missing ncu, or a kprof whose counters are unavailable, is recorded with the reason and the
rest goes on. --json writes everything; a summary is printed last. --dry-run prints the commands
and feeds the parsing and summary made-up output (nothing runs).

usage: bench/counters_vs_ncu.py [--kprof build/kprof] [--ncu ncu] [--json out.json] [--dry-run]
"""

import argparse
import csv
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "kernels", "counters.cu")
TG = 256
N = 64 << 20  # 64 Mi floats: 256 MiB per buffer

KERNELS = [
    {"name": "triad", "kind": "memory-bound", "grid": N,
     "buffers": "f32:%d:zero,f32:%d:zero,f32:%d:zero,f32=3,u64=%d" % (N, N, N, N)},
    {"name": "fma_loop", "kind": "compute-bound", "grid": 1 << 20,
     "buffers": "f32:%d:zero,u32=4096" % (1 << 20)},
    {"name": "l2_reread", "kind": "cache-friendly", "grid": 32 << 20,
     "buffers": "f32:%d:zero,f32:%d:zero,u32=%d,u32=16" % (32 << 20, 2 << 20, 2 << 20)},
    {"name": "stride2", "kind": "reads each element twice", "grid": N,
     "buffers": "f32:1:zero,f32:%d:zero,u64=%d" % (N, N)},
]

# The standard items compared or shown (kprof's JSON keys), and what each must match within.
COMPARED = [
    ("dram_bytes", "DRAM bytes read + written", "rel", 0.01),
    ("achieved_occupancy_pct", "achieved occupancy (%)", "abs", 2.0),
    ("sm_throughput_pct", "SM throughput (% of peak)", "abs", 2.0),
]
SHOWN = ["l2_hit_rate_pct", "l1_hit_rate_pct", "warp_instructions", "ffma", "fadd", "fmul"]
DRAM_FLOOR = 64 << 10  # bytes: under this difference the DRAM comparison is of noise
CACHE_MODES = ("all", "none")


def run_args(k):
    return ["run", SRC, "--entry", k["name"], "--grid", str(k["grid"]), "--tg", str(TG),
            "--buffers", k["buffers"], "--backend", "cuda"]


# ---- made-up output for --dry-run ---------------------------------------------------------

def synth_kprof(k):
    est = sum(int(x.split(":")[1]) * 4 for x in k["buffers"].split(",") if x.startswith("f32:"))
    ratio = {"stride2": 2.0, "l2_reread": 0.9, "fma_loop": 0.01}.get(k["name"], 1.0)
    dram = est * ratio
    values = {"dram_read_bytes": dram * 0.6, "dram_write_bytes": dram * 0.4,
              "achieved_occupancy_pct": 88.0, "sm_throughput_pct": 40.0,
              "l2_hit_rate_pct": 50.0, "l1_hit_rate_pct": 0.0, "warp_instructions": 1e6,
              "ffma": 1e6, "fadd": 0, "fmul": 1e5}
    metrics = {"dram_read_bytes": "dram__bytes_read.sum", "dram_write_bytes": "dram__bytes_write.sum",
               "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
               "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
               "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
               "warp_instructions": "smsp__inst_executed.sum",
               "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
               "fadd": "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
               "fmul": "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"}
    readings = [{"id": "traffic_more" if ratio > 1.2 else "traffic_matches", "text": "..."},
                {"id": "roofline", "text": "..."}]
    return json.dumps({"entry": k["name"], "gpu_ms_median": 0.2, "bytes": est,
                       "counters": {"available": True, "values": values, "metrics": metrics,
                                    "derived": {"dram_bytes": dram, "measured_gb_per_s": 3000,
                                                "measured_over_estimated": dram / est,
                                                "bound": "memory"}},
                       "readings": readings})


def synth_ncu(names, k, mode):
    d = json.loads(synth_kprof(k))["counters"]["values"]
    by_name = {v: d[key] for key, v in json.loads(synth_kprof(k))["counters"]["metrics"].items()}
    head = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
    rows = [head]
    for n in names:
        v = by_name.get(n, 0) * (0.995 if mode == "all" else 1.0)
        rows.append('"0","%s","%s","","%s"' % (k["name"], n, "{:,.2f}".format(v)))
    return "==PROF== Connected to process\n" + "\n".join(rows) + "\n"


# ---- running things ---------------------------------------------------------------------------

class Ctx:
    def __init__(self, a):
        self.a = a
        self.dry = a.dry_run
        self.kprof = os.path.abspath(a.kprof)

    def log(self, msg):
        print(msg, file=sys.stderr, flush=True)

    def call(self, cmd, timeout, fake=None):
        """{"cmd", "rc", "wall_s", "stdout", "stderr_tail"} or {"cmd", "error"}."""
        rec = {"cmd": shlex.join(cmd)}
        if self.dry:
            print("$ " + rec["cmd"], flush=True)
            rec.update(rc=0, wall_s=0.5, stdout=fake() if fake else "", stderr_tail="")
            return rec
        t = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        except OSError as exc:
            rec["error"] = "cannot run: %s" % exc
            return rec
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            rec["error"] = "killed after %.0f s" % timeout
            return rec
        rec.update(rc=p.returncode, wall_s=time.perf_counter() - t, stdout=out,
                   stderr_tail=err[-2000:])
        if p.returncode != 0:
            rec["error"] = "exit %d: %s" % (p.returncode, err.strip()[-600:])
        return rec


def parse_ncu(text):
    """{metric name: value} from `ncu --csv --print-units base` (the profiled launch only)."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    out = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        name, value = r.get("Metric Name"), r.get("Metric Value")
        if not name or value is None:
            continue
        try:
            out[name] = float(value.replace(",", ""))
        except ValueError:
            out[name] = None  # "n/a"
    return out


def peak_stored(ctx):
    if ctx.dry:
        return True
    p = ctx.call([ctx.kprof, "caps", "--json", "--backend", "cuda"], 120)
    try:
        devs = json.loads(p["stdout"])["backends"][0]["devices"]
        mc = devs[0].get("measured_ceiling") if devs else None
        return bool(mc and mc.get("fma_gflop_per_s"))
    except (KeyError, ValueError, IndexError, TypeError):
        return False


def one_kernel(ctx, k):
    rec = {"kernel": k["name"], "kind": k["kind"], "args": run_args(k)}
    base = [ctx.kprof] + run_args(k)
    # The compile cache first (and the buffers' first fill), untimed.
    ctx.call(base + ["--iters", "1", "--warmup", "0"], 300, fake=lambda: "{}")
    run = ctx.call(base + ["--counters", "--json"], 300, fake=lambda: synth_kprof(k))
    rec["kprof_wall_s"] = run.get("wall_s")
    rec["kprof_stderr"] = run.get("stderr_tail", "")
    if "error" in run:
        rec["error"] = "kprof: " + run["error"]
        return rec
    r = json.loads(run["stdout"])
    c = r.get("counters", {})
    rec["kprof"] = {"gpu_ms_median": r.get("gpu_ms_median"), "bytes": r.get("bytes"),
                    "counters": c, "readings": r.get("readings")}
    if not c.get("available"):
        rec["error"] = "kprof's counters are unavailable: %s" % c.get("reason")
        return rec
    values, metrics = c["values"], c["metrics"]
    names = sorted({metrics[key] for key in ("dram_read_bytes", "dram_write_bytes",
                                             "achieved_occupancy_pct", "sm_throughput_pct")
                    + tuple(SHOWN) if metrics.get(key)} | {"gpu__time_duration.sum"})
    ncu = ctx.a.ncu
    rec["ncu"] = {}
    for mode in CACHE_MODES:
        if not ncu:
            rec["ncu"][mode] = {"error": "ncu not found (--ncu PATH names it)"}
            continue
        cmd = [ncu, "--clock-control", "none", "--cache-control", mode, "--metrics",
               ",".join(names), "--csv", "--print-units", "base", "--target-processes", "all",
               "-k", "regex:^%s$" % k["name"], "--launch-skip", "2", "-c", "1"] + base + [
                   "--warmup", "2", "--iters", "1", "--timer", "events"]
        p = ctx.call(cmd, 600, fake=lambda mode=mode: synth_ncu(names, k, mode))
        got = parse_ncu(p.get("stdout", ""))
        m = {"cmd": p["cmd"], "wall_s": p.get("wall_s"), "values": got}
        if not got:
            m["error"] = p.get("error") or "no metric rows in ncu's output: %s" % (
                (p.get("stdout", "") + p.get("stderr_tail", ""))[-800:])
        rec["ncu"][mode] = m
        if got:
            m["compare"] = compare(values, metrics, got)
    return rec


def compare(values, metrics, ncu):
    """Each compared item: kprof's value, ncu's, the difference and whether it is within."""
    out = {}

    def ncu_of(key):
        return ncu.get(metrics.get(key))

    for key, label, how, tol in COMPARED:
        if key == "dram_bytes":
            kv = (values.get("dram_read_bytes") or 0) + (values.get("dram_write_bytes") or 0)
            r, w = ncu_of("dram_read_bytes"), ncu_of("dram_write_bytes")
            nv = None if r is None or w is None else r + w
        else:
            kv, nv = values.get(key), ncu_of(key)
        row = {"label": label, "kprof": kv, "ncu": nv}
        if kv is not None and nv is not None:
            diff = kv - nv
            row["diff"] = diff
            if how == "rel":
                row["rel_diff"] = diff / nv if nv else None
                row["floor"] = abs(diff) <= DRAM_FLOOR and abs(nv) < 100 * DRAM_FLOOR
                row["pass"] = abs(diff) <= max(tol * abs(nv), DRAM_FLOOR)
            else:
                row["pass"] = abs(diff) <= tol
        out[key] = row
    for key in SHOWN:
        out[key] = {"label": key, "kprof": values.get(key), "ncu": ncu_of(key)}
    return out


def fmt(v, f="%.4g"):
    return "-" if v is None else f % v


def summary(R):
    L = ["===== kprof run --counters against ncu (%s) =====" % R.get("device", "?")]
    if R.get("peak_measure"):
        L.append("FLOP peak: %s" % R["peak_measure"])
    for rec in R["kernels"]:
        L.append("%s (%s): kprof run --counters %s s to result%s" % (
            rec["kernel"], rec["kind"], fmt(rec.get("kprof_wall_s"), "%.2f"),
            "" if rec.get("kprof_wall_s") is None else
            (" (goal < 3 s: %s)" % ("ok" if rec["kprof_wall_s"] < 3 else "MISSED"))))
        if rec.get("error"):
            L.append("  FAILED: %s" % rec["error"])
            continue
        d = rec["kprof"]["counters"].get("derived", {})
        L.append("  kprof: %s GB/s measured, %sx the estimated bytes, bound %s; readings: %s" % (
            fmt(d.get("measured_gb_per_s"), "%.0f"), fmt(d.get("measured_over_estimated"), "%.3f"),
            d.get("bound"), ", ".join(x["id"] for x in rec["kprof"].get("readings") or [])))
        for mode in CACHE_MODES:
            m = rec["ncu"].get(mode, {})
            if m.get("error"):
                L.append("  ncu --cache-control %s: FAILED: %s" % (mode, m["error"][-300:]))
                continue
            parts = []
            for key, _, how, tol in COMPARED:
                row = m["compare"][key]
                if "pass" not in row:
                    parts.append("%s n/a" % key)
                    continue
                diff = ("%+.2f%%" % (100 * row["rel_diff"]) if how == "rel" and row.get("rel_diff")
                        is not None else "%+.2f" % row["diff"])
                parts.append("%s %s vs %s (%s) %s%s" % (
                    key, fmt(row["kprof"], "%.6g"), fmt(row["ncu"], "%.6g"), diff,
                    "ok" if row["pass"] else "OFF",
                    " (both tiny: noise)" if row.get("floor") else ""))
            L.append("  ncu --cache-control %s: %s" % (mode, "; ".join(parts)))
            shown = ", ".join("%s %s/%s" % (k, fmt(m["compare"][k]["kprof"]),
                                            fmt(m["compare"][k]["ncu"])) for k in SHOWN)
            L.append("    shown (kprof/ncu): %s" % shown)
        if rec["kernel"] == "stride2":
            ratio = d.get("measured_over_estimated")
            ids = [x["id"] for x in rec["kprof"].get("readings") or []]
            ok = ratio is not None and 1.8 <= ratio <= 2.2 and "traffic_more" in ids
            L.append("  stride2: measured/estimated %s, reading traffic_more %s: %s" % (
                fmt(ratio, "%.3f"), "present" if "traffic_more" in ids else "ABSENT",
                "ok" if ok else "MISSED"))
    for mode in CACHE_MODES:
        verdicts = [rec["ncu"][mode]["compare"][key].get("pass")
                    for rec in R["kernels"] if not rec.get("error")
                    and "compare" in rec.get("ncu", {}).get(mode, {}) for key, *_ in COMPARED]
        if verdicts:
            L.append("verdict vs ncu --cache-control %s: %d of %d comparisons within bounds" % (
                mode, sum(1 for v in verdicts if v), len(verdicts)))
    walls = [rec["kprof_wall_s"] for rec in R["kernels"] if rec.get("kprof_wall_s") is not None]
    if walls:
        L.append("time to result: max %.2f s (goal < 3 s: %s)" % (max(walls),
                                                                 "ok" if max(walls) < 3 else
                                                                 "MISSED"))
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--ncu", default=None)
    ap.add_argument("--json")
    ap.add_argument("--no-measure", action="store_true",
                    help="do not measure the FLOP peak when the store has none")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    a.ncu = a.ncu or shutil.which("ncu") or (
        "/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)
    if a.dry_run and not a.ncu:
        a.ncu = "ncu"
    ctx = Ctx(a)
    R = {"dry_run": a.dry_run, "kernels": [], "source": SRC}
    if not ctx.dry:
        p = ctx.call([ctx.kprof, "caps", "--json", "--backend", "cuda"], 120)
        try:
            R["device"] = json.loads(p["stdout"])["backends"][0]["devices"][0]["name"]
        except (KeyError, ValueError, IndexError, TypeError):
            R["device"] = "no CUDA device: %s" % (p.get("stdout", "") + p.get("error", ""))[-300:]
    if not a.no_measure and not peak_stored(ctx):
        p = ctx.call([ctx.kprof, "caps", "--measure", "--backend", "cuda", "--json"], 600)
        try:
            m = json.loads(p["stdout"])
            R["peak_measure"] = "%.0f GFLOP/s FP32 (%s); ceiling %.0f GB/s" % (
                m["fma_gflop_per_s"], m["fma_method"], m["ceiling_gb_per_s"])
        except (KeyError, ValueError, TypeError):
            R["peak_measure"] = "FAILED: %s" % p.get("error", p.get("stdout", "")[-300:])
    for k in KERNELS:
        R["kernels"].append(one_kernel(ctx, k))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(R, f, indent=2)
    print(summary(R))


if __name__ == "__main__":
    main()
