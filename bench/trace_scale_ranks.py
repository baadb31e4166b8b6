#!/usr/bin/env python3
"""bench/trace_scale_ranks.py — issue 15's scale goal: a merged trace of 8 ranks x 1M kernels.
Each rank's trace is the real `kprof trace` of a synthetic program (tests/cli/gen_trace.py
launch-bound: N kernels and the N launch calls that made them, as bench/trace_scale.py makes
one), run with the rank's launcher variables in its environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE: torchrun's), each into a file of its own; `kprof merge` makes one trace of them
(skipped, saying so, where this kprof has no `merge`). On the merged trace: `kprof report`,
`kprof export --perfetto`, `--chrome`, and `-o OUT` with no extension (which should pick
Perfetto for a trace this large), each whole command's wall time and peak memory, and both per
million events against the goal of issues 8 and 11 (per 1M events: under 2 s and 1 GiB).

usage: bench/trace_scale_ranks.py [--kprof build/kprof] [--ranks 8] [--kernels 1000000]
                                  [--jobs N] [--tmp DIR] [--no-stamp] [--json out.json]
  --jobs N   ranks traced at once (default: as many as there are cores, at most --ranks)
  --tmp DIR  where the traces and exports go (8 x 1M: some 8 GiB at the peak)
  --no-stamp where a part's processes carry no rank (a gen_trace.py whose launch-bound program
             writes no process record), leave it unknown; by default it is written into the
             part's processes row with sqlite3, and the output says so
Small sizes run anywhere in seconds (--ranks 2 --kernels 20000), but their figures per million
events are mostly start-up: the goal is judged at the full size.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "cli", "gen_trace.py")
GOAL_S, GOAL_MIB = 2.0, 1024.0  # per million events


def measured(cmd):
    """Wall seconds, peak RSS (MiB), exit code and stderr of one command, run from a python of
    its own: ru_maxrss of children is a high-water mark over all of them, so each command gets
    a fresh parent and the figures do not mix."""
    code = ("import resource, subprocess, sys, time, json\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(%r, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, "
            "text=True)\n"
            "w = time.perf_counter() - t\n"
            "print(json.dumps([w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
            "p.returncode, p.stderr]))\n" % (cmd,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    wall, peak, rc, err = json.loads(out)
    return wall, peak, rc, err


def trace_ranks(path):
    """The ranks the trace's processes carry (docs/formats/trace.md: processes.rank), or None for
    a trace without the column."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return sorted(r for (r,) in db.execute("SELECT DISTINCT rank FROM processes"))
    except sqlite3.Error:
        return None
    finally:
        db.close()


def trace_events(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        db.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--kernels", type=int, default=1000000, help="kernels per rank")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--tmp")
    ap.add_argument("--no-stamp", action="store_true",
                    help="where the parts carry no rank, leave it so (default: write each "
                         "part's rank into its processes row)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.ranks < 1 or a.kernels < 1:
        ap.error("--ranks and --kernels must be at least 1")
    kprof = os.path.abspath(a.kprof)
    if not os.access(kprof, os.X_OK):
        sys.exit("trace_scale_ranks.py: no kprof at %s (build it first)" % kprof)
    jobs = a.jobs or min(a.ranks, os.cpu_count() or 1)
    tmp = tempfile.mkdtemp(prefix="kprof-scale-ranks-", dir=a.tmp)
    res = {"ranks": a.ranks, "kernels_per_rank": a.kernels, "jobs": jobs}
    try:
        run_bench(a, kprof, jobs, tmp, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    sys.exit(res.get("exit", 0))


def run_bench(a, kprof, jobs, tmp, res):
    # 1. One trace per rank, `jobs` at a time.
    files = [os.path.join(tmp, "rank-%d.kprof" % r) for r in range(a.ranks)]
    t0 = time.perf_counter()
    pending = list(range(a.ranks))
    running = []
    while pending or running:
        while pending and len(running) < jobs:
            r = pending.pop(0)
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.ranks),
                       LOCAL_WORLD_SIZE=str(a.ranks))
            for k in ("TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
                env.pop(k, None)
            cmd = [kprof, "trace", "-o", files[r], "--", sys.executable, GEN, "launch-bound",
                   "--kernels", str(a.kernels), "--seconds", "1", "--period-us", "1",
                   "--no-poll"]
            running.append((r, subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True)))
        r, p = running.pop(0)
        _, err = p.communicate()
        if p.returncode != 0:
            for _, q in running:
                q.kill()
                q.wait()
            sys.exit("kprof trace of rank %d failed (exit %d):\n%s" % (r, p.returncode, err))
    res["trace_s"] = time.perf_counter() - t0
    ranks = [trace_ranks(f) for f in files]
    carried = all(rk == [r] for r, rk in enumerate(ranks))
    res["ranks_carried"] = carried
    per_rank_events = trace_events(files[0])
    print("%d per-rank traces of %d kernels (%d events each, %.0f MiB each) in %.1f s, %d at a "
          "time; ranks recorded: %s" % (
              a.ranks, a.kernels, per_rank_events, os.path.getsize(files[0]) / 2**20,
              res["trace_s"], jobs,
              "yes, each trace its own" if carried else
              "NO (%s: gen_trace.py's launch-bound writes no KP_REC_PROCESS record)" % ranks),
          flush=True)
    if not carried and not a.no_stamp and all(rk is not None for rk in ranks):
        # So that the report's per-rank work is measured at this size too: each part's rank
        # written into its processes row, as the process record would have (launcher "env").
        for r, f in enumerate(files):
            db = sqlite3.connect(f)
            with db:
                db.execute("UPDATE processes SET launcher = 'env', rank = ?, local_rank = ?, "
                           "world_size = ?, local_world_size = ?", (r, r, a.ranks, a.ranks))
            db.close()
        res["ranks_stamped"] = True
        print("  ranks written into each part's processes row with sqlite3 instead (--no-stamp: "
              "leave them unknown)", flush=True)

    # 2. The merge.
    h = subprocess.run([kprof, "merge", "--help"], capture_output=True, text=True)
    if h.returncode != 0:
        msg = (h.stderr.strip().splitlines() or ["?"])[0]
        print("skipped: this kprof has no `kprof merge` (%s): nothing merged, nothing timed"
              % msg)
        res["skipped"] = "no kprof merge: " + msg
        return
    merged = os.path.join(tmp, "merged.kprof")
    wall, peak, rc, err = measured([kprof, "merge"] + files + ["-o", merged])
    if rc != 0:
        print("kprof merge failed (exit %d):\n%s" % (rc, err))
        res["exit"] = 1
        res["merge_error"] = err
        return
    events = trace_events(merged)
    millions = events / 1e6
    res["events"] = events
    res["merged_mib"] = os.path.getsize(merged) / 2**20
    res["merge"] = {"wall_s": wall, "peak_mib": peak}
    # The rank of each part survives the merge.
    mranks = trace_ranks(merged)
    res["merged_ranks"] = mranks
    for f in files:  # the parts are not needed any more: room for the exports
        os.unlink(f)
    print("merged: %d events (%.0f MiB) from %d files in %.1f s, %.0f MiB peak; ranks %s" % (
        events, res["merged_mib"], a.ranks, wall, peak, mranks), flush=True)

    # 3. Report and exports of the merged trace.
    rows = {}
    for name, cmd, out in (
            ("report", [kprof, "report", merged], None),
            ("export_perfetto", None, "m.pftrace"),
            ("export_chrome", None, "m.json"),
            ("export_default", None, "m-default")):
        if cmd is None:
            path = os.path.join(tmp, out)
            cmd = {"export_perfetto": [kprof, "export", merged, "--perfetto", path],
                   "export_chrome": [kprof, "export", merged, "--chrome", path],
                   "export_default": [kprof, "export", merged, "-o", path]}[name]
        wall, peak, rc, err = measured(cmd)
        row = {"wall_s": wall, "peak_mib": peak, "s_per_m_events": wall / millions,
               "mib_per_m_events": peak / millions}
        if rc != 0:
            row["error"] = "exit %d: %s" % (rc, err.strip()[-300:])
            res["exit"] = 1
        else:
            row["stderr"] = err.strip()
        if out and rc == 0:
            path = os.path.join(tmp, out)
            row["mib"] = os.path.getsize(path) / 2**20
            with open(path, "rb") as f:
                row["format"] = "chrome" if f.read(1) == b"{" else "perfetto"
            os.unlink(path)
        rows[name] = row
    res.update(rows)
    print("on the merged trace (%.2fM events; goal per 1M events: < %.0f s, < %.0f MiB):" % (
        millions, GOAL_S, GOAL_MIB))
    for name, r in rows.items():
        if "error" in r:
            print("  %-16s FAILED %s" % (name, r["error"]))
            continue
        met = r["s_per_m_events"] < GOAL_S and r["mib_per_m_events"] < GOAL_MIB
        print("  %-16s %7.2f s, %6.0f MiB peak: %.2f s and %.0f MiB per 1M events (%s)%s" % (
            name, r["wall_s"], r["peak_mib"], r["s_per_m_events"], r["mib_per_m_events"],
            "met" if met else "MISSED",
            ", %.0f MiB %s" % (r["mib"], r["format"]) if "mib" in r else ""))
    chrome, default = rows.get("export_chrome", {}), rows.get("export_default", {})
    if "stderr" in chrome:
        print("  --chrome warned that browsers may fail to load it: %s" % (
            "yes" if "--perfetto" in chrome["stderr"] else "no"))
    if "format" in default:
        print("  -o OUT without an extension wrote %s (%s)" % (
            default["format"], (default["stderr"].splitlines() or ["no note"])[0][:160]))


if __name__ == "__main__":
    main()
