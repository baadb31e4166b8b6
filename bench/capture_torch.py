#!/usr/bin/env python3
"""capture_torch.py — issue 26's figures on a CUDA machine: from a PyTorch training script's
trace to its slowest kernel in the lab, against the traced instances and against ncu.

  1. `kprof trace` of bench/programs/train_torch.py (STEPS steps): the kernel with the most
     device time, its launches, their median duration (all instances, and those of the
     geometry the capture gets);
  2. `kprof trace --capture 'NAME@slowest'` of the same script: the capture folder;
  3. `kprof bench NAME@N` hot and cold: the replay's median against the traced median
     (goal: within 5%, hot or cold), and its output check (goal: identical);
  4. `kprof run NAME@N --counters` against `ncu --metrics dram__bytes_read.sum,
     dram__bytes_write.sum` on the original program for the same launch (goal: DRAM bytes
     within 2%);
  5. overhead: the traced script's wall (whole, and its own step time) with --capture for a
     pattern that never matches and for one that matches once, against without, ROUNDS rounds
     interleaved (goal: never-matching ≤ 1% added).

usage: capture_torch.py [--kprof build/kprof] [--steps 60] [--rounds 3] [--ncu ncu]
                        [--out DIR] [--json FILE]
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "programs", "train_torch.py")


def run(cmd, timeout=600, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return {"cmd": " ".join(cmd), "rc": p.returncode, "wall_s": time.time() - t0,
            "stdout": p.stdout, "stderr": p.stderr}


def steps_time(out):
    m = re.search(r"steps \d+ loss \S+ in ([0-9.]+) s", out)
    return float(m.group(1)) if m else None


def top_kernel(trace):
    db = sqlite3.connect(trace)
    row = db.execute(
        "SELECT s.text, SUM(e.end_ns - e.start_ns) AS t, COUNT(*) FROM events e JOIN strings s "
        "ON s.id = e.name WHERE e.kind = 4 GROUP BY s.text ORDER BY t DESC LIMIT 1").fetchone()
    return row


def durations(trace, name, geometry=None):
    db = sqlite3.connect(trace)
    q = ("SELECT e.end_ns - e.start_ns, e.grid_x * e.block_x, e.grid_y * e.block_y, "
         "e.grid_z * e.block_z, e.block_x, e.block_y, e.block_z FROM events e JOIN strings s "
         "ON s.id = e.name WHERE e.kind = 4 AND s.text = ? ORDER BY e.start_ns")
    rows = db.execute(q, (name,)).fetchall()
    if geometry:
        rows = [r for r in rows if list(r[1:4]) == geometry["grid"] and
                list(r[4:7]) == geometry["tg"]]
    return [r[0] for r in rows]


def glob_escape(name):
    return re.sub(r"([\\*?\[\]])", r"\\\1", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kprof", default="build/kprof")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--out", default="capture-out")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    kp = os.path.abspath(a.kprof)
    prog = [sys.executable, TRAIN, str(a.steps)]
    R = {"steps": a.steps, "rounds": a.rounds}

    # 1. the plain trace and its slowest kernel
    t1 = os.path.join(a.out, "plain.kprof")
    p = run([kp, "trace", "--force", "-o", t1, "--"] + prog)
    if p["rc"] != 0:
        print("plain trace failed:", p["stderr"][-2000:])
        return 1
    name, total_ns, launches = top_kernel(t1)
    all_d = durations(t1, name)
    R["kernel"] = {"name": name, "total_ms": total_ns / 1e6, "launches": launches,
                   "median_us_all": statistics.median(all_d) / 1e3}
    print("slowest kernel by total time: %s (%d launches, %.3f ms in all, median %.2f us)" %
          (name, launches, total_ns / 1e6, R["kernel"]["median_us_all"]))

    # 2. capture it
    cdir = os.path.abspath(os.path.join(a.out, "kernels"))
    shutil.rmtree(cdir, ignore_errors=True)
    t2 = os.path.join(a.out, "capture.kprof")
    pattern = glob_escape(name) + "@slowest"
    p = run([kp, "trace", "--force", "-o", t2, "--capture", pattern, "--capture-window", "0.25",
             "--capture-dir", cdir, "--"] + prog)
    R["capture_trace"] = {"rc": p["rc"], "stderr": p["stderr"][-3000:]}
    m = re.search(r"kprof: captured (\S+) \(", p["stderr"])
    if not m:
        print("capture failed:", p["stderr"][-3000:])
        R["error"] = "no capture"
        return finish(a, R, 1)
    folder = m.group(1)
    held = re.search(r"held ([0-9.]+) ms", p["stderr"])
    man = json.load(open(os.path.join(cdir, folder, "capture.json")))
    R["capture"] = {"folder": folder, "held_ms": float(held.group(1)) if held else None,
                    "launch": man["launch"], "geometry": man["geometry"],
                    "allocs": len(man["allocs"]), "pointers": len(man["pointers"]),
                    "bytes": sum(x["bytes"] for x in man["allocs"]),
                    "not_captured": man["not_captured"], "code": man["code"]["kind"],
                    "slowest": man.get("slowest")}
    geo_d = durations(t1, name, man["geometry"])
    R["kernel"]["median_us_geometry"] = statistics.median(geo_d) / 1e3 if geo_d else None
    R["kernel"]["instances_geometry"] = len(geo_d)
    print("captured %s: launch %d, %d allocations (%.1f MiB), %d pointers, %s, held %s ms" %
          (folder, man["launch"], len(man["allocs"]), R["capture"]["bytes"] / 2**20,
           len(man["pointers"]), man["code"]["kind"], R["capture"]["held_ms"]))
    report = run([kp, "report", t2])
    R["report_lines"] = [l for l in report["stdout"].splitlines() if "captured" in l]

    env = dict(os.environ, KPROF_HOME=os.path.dirname(cdir))
    # 3. replay: bench hot and cold, the output check
    R["replay"] = {}
    for cache in ("hot", "cold"):
        b = run([kp, "bench", folder, "--cache", cache, "--json"], env=env)
        rec = {"rc": b["rc"], "stderr": b["stderr"][-1500:]}
        try:
            j = json.loads(b["stdout"])
            k = j["points"][0]["kernels"][0]
            rec["median_us"] = k["median_ms"] * 1e3
            rec["noise"] = k.get("noise")
            base = R["kernel"]["median_us_geometry"] or R["kernel"]["median_us_all"]
            rec["ratio_to_traced"] = rec["median_us"] / base
        except Exception as e:  # noqa: BLE001 — said in the record
            rec["error"] = "%s: %s" % (type(e).__name__, b["stdout"][-800:])
        R["replay"][cache] = rec
        print("replay %s: %s" % (cache, rec.get("median_us") and "%.2f us, %.4f x traced median"
                                 % (rec["median_us"], rec["ratio_to_traced"]) or rec))
    # 4. counters against ncu
    r = run([kp, "run", folder, "--counters", "--json"], env=env)
    rec = {"rc": r["rc"], "stderr": r["stderr"][-1500:]}
    try:
        j = json.loads(r["stdout"])
        rec["replay_check"] = j.get("replay_check")
        c = j.get("counters", {})
        rec["kprof_dram_read"] = c.get("values", {}).get("dram_read_bytes")
        rec["kprof_dram_write"] = c.get("values", {}).get("dram_write_bytes")
        rec["counters_available"] = c.get("available")
        rec["counters_reason"] = c.get("reason")
    except Exception as e:  # noqa: BLE001
        rec["error"] = "%s: %s" % (type(e).__name__, r["stdout"][-800:])
    print("replay output check:", rec.get("replay_check"))
    if a.ncu and os.path.exists(a.ncu):
        n = run([a.ncu, "--clock-control", "none", "--metrics",
                 "dram__bytes_read.sum,dram__bytes_write.sum", "--csv", "--print-units", "base",
                 "--kernel-name-base", "mangled", "-k", "regex:^%s$" % re.escape(man["symbol"]),
                 "--launch-skip", str(man["launch"] - 1), "-c", "1"] + prog, timeout=600)
        vals = {}
        lines = [l for l in n["stdout"].splitlines() if l.startswith('"')]
        for row in csv.DictReader(io.StringIO("\n".join(lines))):
            try:
                vals[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
            except (KeyError, ValueError, AttributeError):
                pass
        rec["ncu"] = vals
        rec["ncu_rc"] = n["rc"]
        if not vals:
            rec["ncu_tail"] = (n["stdout"] + n["stderr"])[-1500:]
        for key, metric in (("read", "dram__bytes_read.sum"), ("write", "dram__bytes_write.sum")):
            kv = rec.get("kprof_dram_" + key)
            if kv is not None and vals.get(metric):
                rec["ratio_" + key] = kv / vals[metric]
        print("dram bytes kprof replay / ncu original: read %s, write %s" %
              (rec.get("ratio_read"), rec.get("ratio_write")))
    R["counters"] = rec

    # 5. overhead, interleaved rounds
    never = "kprof_never_matches_this_kernel"
    walls = {"none": [], "never": [], "once": []}
    steps = {"none": [], "never": [], "once": []}
    hows = ["none", "never", "once"]
    for i in range(a.rounds):
        for how in hows[i % 3:] + hows[:i % 3]:  # no way always first
            extra = []
            if how == "never":
                extra = ["--capture", never]
            elif how == "once":
                shutil.rmtree(os.path.join(a.out, "k2"), ignore_errors=True)
                extra = ["--capture", glob_escape(name) + "@2", "--capture-dir",
                         os.path.join(a.out, "k2")]
            p = run([kp, "trace", "--force", "-o", os.path.join(a.out, "o.kprof")] + extra +
                    ["--"] + prog)
            walls[how].append(p["wall_s"])
            steps[how].append(steps_time(p["stdout"]))
    R["overhead"] = {"walls_s": walls, "steps_s": steps}
    med = {k: statistics.median(v) for k, v in walls.items()}
    smed = {k: statistics.median([x for x in v if x is not None] or [float("nan")])
            for k, v in steps.items()}
    R["overhead"]["never_added_wall"] = med["never"] / med["none"] - 1
    R["overhead"]["once_added_wall"] = med["once"] / med["none"] - 1
    R["overhead"]["never_added_steps"] = smed["never"] / smed["none"] - 1
    R["overhead"]["once_added_steps"] = smed["once"] / smed["none"] - 1
    print("overhead: never-matching %+.2f%% wall (%+.2f%% steps), matching once %+.2f%% wall "
          "(%+.2f%% steps)" % (100 * R["overhead"]["never_added_wall"],
                                100 * R["overhead"]["never_added_steps"],
                                100 * R["overhead"]["once_added_wall"],
                                100 * R["overhead"]["once_added_steps"]))
    return finish(a, R, 0)


def finish(a, R, code):
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main())
