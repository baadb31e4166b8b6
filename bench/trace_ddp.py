#!/usr/bin/env python3
"""bench/trace_ddp.py — `kprof trace` of a real torchrun job (issue 15's GPU proof, on a machine
with 2 GPUs): bench/ddp_torch.py, a DistributedDataParallel training job (NCCL, one GPU per
rank), under `torchrun --standalone --nproc-per-node 2`.

1. Overhead: alternating rounds (--rounds, at least 3 each) of the plain job and the traced one
   (`kprof trace -o OUT -- torchrun ...`): the median whole-command wall time of each, the
   median time the job measures for its steps itself (rank 0's "ddp: world W, N steps in T s"),
   and the ratios traced / plain.
2. What one traced run holds (read with sqlite3 from the documented schema): processes with a
   rank (expect 2 ranks), devices with kernels (expect 2), NCCL collective kernels on each device
   (expect > 0), NVTX "step" ranges per rank; and whether `kprof report --json` has the job's
   sections (per rank, per device, collectives, stragglers: their keys are looked for by name,
   and whatever is found is printed; "MISSING" where none is), and the text report's straggler
   line.
3. A known straggler: the same job with `--straggle 1 MS` (rank 1 sleeps MS before its backward
   in every step): the straggler line should name rank 1.
4. Per-rank files (as `mpirun -n 2 kprof trace -o 'rank-%r.kprof' -- prog` would make; torchrun
   starts the ranks itself, so here the 2 ranks are started by hand with RANK, LOCAL_RANK,
   WORLD_SIZE, MASTER_ADDR and MASTER_PORT, each under its own `kprof trace -o rank-%r.kprof`),
   then `kprof merge rank-*.kprof -o merged.kprof` and the same checks on the merged trace.
A step that kprof cannot do yet (no `kprof merge`, no %r) says so and the rest goes on.

usage: bench/trace_ddp.py [--kprof build/kprof] [--steps 30] [--rounds 3] [--straggle-ms 20]
                          [--nproc 2] [--out DIR] [--keep-traces] [--json out.json] [--cpu]
  --out DIR    write the reports (text and JSON) of the traced, straggler and merged runs there
  --cpu        a dry run where no GPU is: ddp_torch.py --cpu (gloo); the GPU checks say n/a
Exit status: 0 when every job ran and no check FAILED (a MISSING feature is not a failure), 1
otherwise.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "ddp_torch.py")
KERNEL = 4  # docs/formats/trace.md: kinds
RANGE = 8
# NCCL's (and RCCL's) kernels: ncclKernel_*, ncclDevKernel_*, and names with an nccl and a
# collective in them.
NCCL_SQL = "(lower(s.text) LIKE '%nccl%' OR lower(s.text) LIKE '%rccl%')"
TIMES_RE = re.compile(r"kprof: times: program ([0-9.]+) s, after it until the merge ([0-9.]+) s, "
                      r"merge ([0-9.]+) s")


class Run:
    """A finished command: wall seconds, exit code, stdout, stderr, and whether it timed out."""

    def __init__(self, cmd, wall, code, out, err, timed_out):
        self.cmd, self.wall, self.code, self.out, self.err = cmd, wall, code, out, err
        self.timed_out = timed_out

    @property
    def ok(self):
        return self.code == 0 and not self.timed_out

    def own_s(self):
        """The steps' time rank 0 measured ("ddp: world W, N steps in T s"), or None."""
        m = re.search(r"^ddp: world \d+, \d+ steps in ([0-9.]+) s", self.out, re.M)
        return float(m.group(1)) if m else None

    def merge_s(self):
        m = TIMES_RE.search(self.err)
        return float(m.group(3)) if m else None

    def why(self):
        if self.timed_out:
            return "timed out"
        tail = (self.err.strip() or self.out.strip()).splitlines()[-6:]
        return "exit %d: %s" % (self.code, " | ".join(tail))


def start(cmd, env=None):
    # Its own session, so that a job that hangs (an NCCL rank waiting for a dead peer) is ended
    # whole: torchrun, kprof and every rank.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def finish(p, cmd, t0, timeout):
    timed_out = False
    try:
        out, err = p.communicate(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                out, err = p.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                out, err = "", ""
    return Run(cmd, time.perf_counter() - t0, p.returncode, out or "", err or "", timed_out)


def run(cmd, env=None, timeout=300):
    t0 = time.perf_counter()
    return finish(start(cmd, env), cmd, t0, timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(extra=None):
    """The environment a job starts with: this one, less any launcher variables it may have been
    given (a rank of an outer job), plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not re.match(r"(RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|"
                           r"MASTER_PORT|TORCHELASTIC_.*|OMPI_COMM_WORLD_.*|PMI_.*|PMIX_.*|"
                           r"SLURM_PROCID|SLURM_LOCALID|SLURM_NODEID|SLURM_NTASKS)$", k)}
    env.update(extra or {})
    # NVLink multicast stays off on the shared GPU machines (a job that uses it can take the
    # host's GPUs out of service): whatever this environment says.
    env.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"})
    return env


def trace_facts(path, cpu):
    """What a trace holds, from its tables (docs/formats/trace.md)."""
    f = {"path": path}
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    except sqlite3.Error as e:
        return {"error": "cannot open %s: %s" % (path, e)}
    try:
        f["events"] = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        f["kernels"] = db.execute("SELECT COUNT(*) FROM events WHERE kind = ?",
                                  (KERNEL,)).fetchone()[0]
        try:
            rows = db.execute("SELECT pid, launcher, rank, local_rank, world_size, host "
                              "FROM processes WHERE rank >= 0 ORDER BY rank, pid").fetchall()
            f["ranked_processes"] = [dict(zip(("pid", "launcher", "rank", "local_rank",
                                               "world_size", "host"), r)) for r in rows]
            f["ranks"] = sorted({r[2] for r in rows})
        except sqlite3.Error as e:  # a kprof before trace format 3
            f["ranks_error"] = str(e)
        f["kernels_by_device"] = {d: n for d, n in db.execute(
            "SELECT device, COUNT(*) FROM events WHERE kind = ? GROUP BY device ORDER BY device",
            (KERNEL,))}
        f["nccl_by_device"] = {d: n for d, n in db.execute(
            "SELECT e.device, COUNT(*) FROM events e JOIN strings s ON s.id = e.name "
            "WHERE e.kind = ? AND " + NCCL_SQL + " GROUP BY e.device ORDER BY e.device",
            (KERNEL,))}
        f["nccl_names"] = [n for (n,) in db.execute(
            "SELECT DISTINCT s.text FROM events e JOIN strings s ON s.id = e.name "
            "WHERE e.kind = ? AND " + NCCL_SQL + " ORDER BY s.text LIMIT 5", (KERNEL,))]
        try:
            f["devices_by_rank"] = {}
            for rank, dev, n in db.execute(
                    "SELECT p.rank, e.device, COUNT(*) FROM events e JOIN processes p "
                    "ON p.id = e.process WHERE e.kind = ? GROUP BY p.rank, e.device",
                    (KERNEL,)):
                f["devices_by_rank"].setdefault(str(rank), {})[dev] = n
            f["steps_by_rank"] = {str(r): n for r, n in db.execute(
                "SELECT p.rank, COUNT(*) FROM events e JOIN processes p ON p.id = e.process "
                "JOIN strings s ON s.id = e.name WHERE e.kind = ? AND s.text = 'step' "
                "GROUP BY p.rank", (RANGE,))}
        except sqlite3.Error:
            pass
        try:
            f["hosts_table"] = [list(r) for r in db.execute(
                "SELECT host, boot_id, offset_ns, uncertainty_ns FROM hosts")]
        except sqlite3.Error:
            pass  # only a merged trace has one
    except sqlite3.Error as e:
        f["error"] = "%s: %s" % (path, e)
    finally:
        db.close()
    return f


def find_sections(report):
    """The job's sections of `kprof report --json`, by key name (top level or one below): the
    keys are another change's, so they are looked for, never assumed."""
    want = {"per_rank": re.compile(r"rank", re.I),
            "per_device": re.compile(r"^(devices|per_device|by_device|gpus?|device_table|"
                                     r"devices_table)$", re.I),
            "collectives": re.compile(r"collective|nccl", re.I),
            "stragglers": re.compile(r"straggl", re.I)}
    found = {}
    levels = [("", report)] if isinstance(report, dict) else []
    for prefix, obj in levels + [(k + ".", v) for k, v in (report.items() if isinstance(
            report, dict) else []) if isinstance(v, dict)]:
        for key, value in obj.items():
            for name, pattern in want.items():
                if name not in found and pattern.search(key):
                    found[name] = (prefix + key, value)
    return found


def describe(value):
    if isinstance(value, list):
        return "%d rows%s" % (len(value), (": first " + json.dumps(value[0])[:160]) if value
                              else "")
    if isinstance(value, dict):
        for k in ("line", "summary", "text"):
            if isinstance(value.get(k), str):
                return value[k]
        return "keys " + ", ".join(list(value)[:12])
    return json.dumps(value)[:200]


def last_ranks(value):
    """In a stragglers section, how often each rank was the last to arrive: every dict with an
    int under a key naming the last rank ('last_rank', 'last', 'straggler', ...)."""
    tally = {}

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if (re.search(r"last|straggler", k, re.I) and isinstance(v, int)
                        and not isinstance(v, bool) and not re.search(r"_(s|ns|ms)$", k)):
                    tally[v] = tally.get(v, 0) + 1
                else:
                    walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)
    walk(value)
    return tally


def straggler_line(text):
    """The text report's straggler line ("stragglers: rank 1 arrived last ..."); not the command
    line, which holds --straggle."""
    for line in text.splitlines():
        if re.search(r"\bstragglers?\b", line, re.I) and "--straggle" not in line:
            return line.strip()
    return None


def drop_kept_records(r):
    """A kprof trace that could not write its trace keeps the records and says where (a folder
    kprof-trace-* under $TMPDIR): this benchmark's own leftovers, removed."""
    for path in re.findall(r"the recording is kept in (\S+) ", r.err):
        if os.path.basename(path.rstrip("/")).startswith("kprof-trace-") and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


def report(kprof, path, out_dir, name):
    """`kprof report` (text and --json) of a trace: what it found of the job's sections."""
    res = {}
    t = run([kprof, "report", path], timeout=120)
    j = run([kprof, "report", path, "--json"], timeout=120)
    if out_dir:
        with open(os.path.join(out_dir, name + ".txt"), "w") as f:
            f.write(t.out + t.err)
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            f.write(j.out if j.ok else j.err)
    if not t.ok or not j.ok:
        res["error"] = "kprof report failed: " + (t.why() if not t.ok else j.why())
        return res
    res["straggler_line"] = straggler_line(t.out)
    try:
        data = json.loads(j.out)
    except ValueError as e:
        res["error"] = "kprof report --json gave no JSON: %s" % e
        return res
    sections = find_sections(data)
    for name_ in ("per_rank", "per_device", "collectives", "stragglers"):
        if name_ in sections:
            key, value = sections[name_]
            res[name_] = {"key": key, "found": describe(value)}
        else:
            res[name_] = "MISSING"
    if "stragglers" in sections:
        res["last_rank_tally"] = {str(k): v for k, v in
                                  last_ranks(sections["stragglers"][1]).items()}
    return res


def names_rank(rep, rank):
    """Whether a report names `rank` as the straggler: the first rank the text line names
    ("stragglers: rank 1 arrived last at ..."), else the rank the JSON's per-step tally has most
    often. None when neither exists."""
    m = re.search(r"\brank (\d+)", rep.get("straggler_line") or "")
    if m:
        return int(m.group(1)) == rank
    tally = rep.get("last_rank_tally") or {}
    if tally:
        return max(tally, key=tally.get) == str(rank)
    return None


def torchrun_cmd(a, extra):
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(a.nproc), SCRIPT, str(a.steps)] + extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--straggle-ms", type=float, default=20.0)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one job")
    ap.add_argument("--out", help="folder for the reports")
    ap.add_argument("--keep-traces", action="store_true", help="keep the traces (in --out)")
    ap.add_argument("--json")
    ap.add_argument("--cpu", action="store_true", help="gloo on the CPU: a dry run")
    a = ap.parse_args()
    if a.rounds < 1 or a.steps < 1 or a.nproc < 2:
        ap.error("--rounds and --steps at least 1, --nproc at least 2")
    kprof = os.path.abspath(a.kprof)
    if not os.access(kprof, os.X_OK):
        sys.exit("trace_ddp.py: no kprof at %s (build it first)" % kprof)
    probe = run([sys.executable, "-c", "import torch, torch.distributed as d; "
                 "print(torch.__version__, torch.cuda.device_count(), d.is_nccl_available())"],
                timeout=120)
    if not probe.ok:
        sys.exit("trace_ddp.py: cannot import torch: " + probe.why())
    version, ngpu, nccl = probe.out.split()
    print("torch %s, %s CUDA devices, NCCL %s" % (version, ngpu, nccl), flush=True)
    if not a.cpu and (int(ngpu) < a.nproc or nccl != "True"):
        sys.exit("trace_ddp.py: needs %d CUDA devices and NCCL (--cpu: a dry run with gloo)"
                 % a.nproc)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    tmp = os.path.join(a.out, "traces") if a.out and a.keep_traces else tempfile.mkdtemp(
        prefix="kprof-ddp-")
    os.makedirs(tmp, exist_ok=True)
    extra = ["--cpu"] if a.cpu else []
    res = {"torch": version, "cuda_devices": int(ngpu), "steps": a.steps, "nproc": a.nproc,
           "cpu": a.cpu, "rounds": a.rounds}
    checks = []  # (what, "ok" | "FAILED" | "MISSING" | "n/a", detail)

    def check(what, status, detail=""):
        checks.append((what, status, detail))
        print("  %-48s %s%s" % (what, status, ("  " + detail) if detail else ""), flush=True)

    # 1. Overhead: plain and traced, alternating.
    env = job_env({"KPROF_TRACE_TIMES": "1"})
    walls = {"plain": [], "traced": []}
    owns = {"plain": [], "traced": []}
    merges = []
    failed = []
    last_traced = None
    for i in range(a.rounds):
        for kind in ("plain", "traced"):
            cmd = torchrun_cmd(a, extra)
            if kind == "traced":
                out = os.path.join(tmp, "ddp-%d.kprof" % i)
                cmd = [kprof, "trace", "-o", out, "--"] + cmd
            r = run(cmd, env, a.timeout)
            drop_kept_records(r)
            print("round %d %-6s %6.2f s wall, steps %s s%s" % (
                i, kind, r.wall, r.own_s(), "" if r.ok else "  FAILED " + r.why()), flush=True)
            if not r.ok or r.own_s() is None:
                failed.append("%s round %d: %s" % (kind, i, r.why()))
                continue
            walls[kind].append(r.wall)
            owns[kind].append(r.own_s())
            if kind == "traced":
                last_traced = out
                if r.merge_s() is not None:
                    merges.append(r.merge_s())
    for kind in ("plain", "traced"):
        if walls[kind]:
            res[kind] = {"wall_s": statistics.median(walls[kind]), "walls": walls[kind],
                         "steps_s": statistics.median(owns[kind]), "steps": owns[kind]}
    if merges:
        res["traced"]["merge_s"] = statistics.median(merges)
    if "plain" in res and "traced" in res:
        res["overhead"] = {"wall_ratio": res["traced"]["wall_s"] / res["plain"]["wall_s"],
                           "steps_ratio": res["traced"]["steps_s"] / res["plain"]["steps_s"]}
    res["failed_runs"] = failed

    print("\nthe traced job:", flush=True)
    if last_traced:
        res["trace"] = facts = trace_facts(last_traced, a.cpu)
        check_trace(facts, a, check, "traced")
        rep = res["report"] = report(kprof, last_traced, a.out, "ddp-report")
        check_report(rep, check, "traced")
    else:
        check("a traced job ran", "FAILED", "; ".join(failed)[:300])

    # 3. A known straggler.
    print("\nrank 1 sleeping %g ms before each backward:" % a.straggle_ms, flush=True)
    out = os.path.join(tmp, "straggle.kprof")
    r = run([kprof, "trace", "-o", out, "--"] + torchrun_cmd(
        a, extra + ["--straggle", "1", "%g" % a.straggle_ms]), env, a.timeout)
    drop_kept_records(r)
    if r.ok:
        res["straggle"] = {"wall_s": r.wall, "steps_s": r.own_s()}
        rep = res["straggle"]["report"] = report(kprof, out, a.out, "straggle-report")
        named = names_rank(rep, 1)
        check("straggler run: names rank 1",
              "MISSING" if named is None else "ok" if named else "FAILED",
              rep.get("straggler_line") or ("last rank per step %s" % rep["last_rank_tally"]
                                            if rep.get("last_rank_tally") else
                                            rep.get("error", "")))
        if "plain" in res and r.own_s():
            # What the sleeps added to the steps: about steps x MS when the others wait.
            res["straggle"]["added_s"] = r.own_s() - res["plain"]["steps_s"]
    else:
        check("straggler run", "FAILED", r.why())

    # 4. Per-rank files and kprof merge.
    print("\nper-rank files (ranks started by hand, each under kprof trace -o rank-%r.kprof):",
          flush=True)
    res["per_rank_files"] = per_rank_files(a, kprof, tmp, extra, check)

    res["checks"] = [{"what": w, "status": s, "detail": d} for w, s, d in checks]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    if not (a.out and a.keep_traces):
        shutil.rmtree(tmp, ignore_errors=True)

    print("\n===== torchrun --nproc-per-node %d, %d steps: summary =====" % (a.nproc, a.steps))
    if "overhead" in res:
        print("plain %.2f s, traced %.2f s wall (median of %d): %.3fx; the steps alone %.3f s "
              "and %.3f s: %.3fx%s" % (
                  res["plain"]["wall_s"], res["traced"]["wall_s"], len(walls["traced"]),
                  res["overhead"]["wall_ratio"], res["plain"]["steps_s"],
                  res["traced"]["steps_s"], res["overhead"]["steps_ratio"],
                  "; merge %.2f s" % res["traced"]["merge_s"] if "merge_s" in res["traced"]
                  else ""))
    for f in failed:
        print("FAILED run: " + f)
    for w, s, d in checks:
        if s != "ok":
            print("%s: %s%s" % (s, w, (" (" + d[:200] + ")") if d else ""))
    nok = sum(1 for c in checks if c[1] == "ok")
    print("%d checks ok, %d failed, %d missing, %d n/a" % (
        nok, sum(1 for c in checks if c[1] == "FAILED"),
        sum(1 for c in checks if c[1] == "MISSING"), sum(1 for c in checks if c[1] == "n/a")))
    sys.exit(1 if failed or any(c[1] == "FAILED" for c in checks) else 0)


def check_trace(facts, a, check, label):
    if "error" in facts:
        check("%s: trace readable" % label, "FAILED", facts["error"])
        return
    if "ranks_error" in facts:
        check("%s: processes with a rank" % label, "MISSING", facts["ranks_error"])
    else:
        ranks = facts["ranks"]
        check("%s: ranks recorded (expect %d)" % (label, a.nproc),
              "ok" if ranks == list(range(a.nproc)) else "FAILED",
              "ranks %s in %d processes; launchers %s" % (
                  ranks, len(facts["ranked_processes"]),
                  sorted({p["launcher"] or "" for p in facts["ranked_processes"]})))
    if a.cpu:
        check("%s: devices with kernels" % label, "n/a", "--cpu")
        check("%s: NCCL kernels on each device" % label, "n/a", "--cpu")
    else:
        devs = facts["kernels_by_device"]
        check("%s: devices with kernels (expect %d)" % (label, a.nproc),
              "ok" if len(devs) >= a.nproc else "FAILED",
              "kernels by device %s; by rank %s" % (devs, facts.get("devices_by_rank")))
        nccl = facts["nccl_by_device"]
        check("%s: NCCL kernels on each device (> 0)" % label,
              "ok" if len(nccl) >= a.nproc and all(n > 0 for n in nccl.values()) else "FAILED",
              "%s; e.g. %s" % (nccl, ", ".join(facts["nccl_names"][:2])))
    steps = facts.get("steps_by_rank", {})
    check("%s: NVTX 'step' ranges per rank (expect %d)" % (label, a.steps),
          "ok" if steps and all(steps.get(str(r)) == a.steps for r in range(a.nproc))
          else "FAILED", json.dumps(steps))


def check_report(rep, check, label):
    if "error" in rep:
        check("%s: kprof report" % label, "FAILED", rep["error"])
        return
    for name in ("per_rank", "per_device", "collectives", "stragglers"):
        v = rep[name]
        check("%s: report --json %s" % (label, name), "MISSING" if v == "MISSING" else "ok",
              "" if v == "MISSING" else "%s: %s" % (v["key"], v["found"][:160]))
    check("%s: report's straggler line" % label, "ok" if rep["straggler_line"] else "MISSING",
          rep["straggler_line"] or "")


def per_rank_files(a, kprof, tmp, extra, check):
    res = {}
    folder = os.path.join(tmp, "per-rank")
    os.makedirs(folder, exist_ok=True)
    port = str(free_port())
    procs = []
    t0 = time.perf_counter()
    for rank in range(a.nproc):
        env = job_env({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(a.nproc),
                       "LOCAL_WORLD_SIZE": str(a.nproc), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": port})
        cmd = [kprof, "trace", "-o", os.path.join(folder, "rank-%r.kprof"), "--",
               sys.executable, SCRIPT, str(a.steps)] + extra
        procs.append((cmd, start(cmd, env)))
    runs = [finish(p, cmd, t0, a.timeout) for cmd, p in procs]
    for r in runs:
        drop_kept_records(r)
    files = sorted(glob.glob(os.path.join(folder, "rank-*.kprof")))
    res["files"] = [os.path.basename(f) for f in files]
    res["runs"] = [{"ok": r.ok, "wall_s": r.wall, "why": None if r.ok else r.why()} for r in runs]
    want = ["rank-%d.kprof" % r for r in range(a.nproc)]
    if res["files"] == want and all(r.ok for r in runs):
        check("per-rank files rank-%r.kprof", "ok", ", ".join(res["files"]))
    else:
        why = "; ".join(r.why() for r in runs if not r.ok)
        unexpanded = any("%r" in f for f in res["files"]) or "%r" in why
        check("per-rank files rank-%r.kprof", "MISSING" if unexpanded else "FAILED",
              "files %s; %s" % (res["files"], why[:300]))
        if not files:
            return res
    h = run([kprof, "merge", "--help"], timeout=60)
    if not h.ok:
        check("kprof merge", "MISSING", "kprof merge --help: " + h.why())
        return res
    merged = os.path.join(tmp, "merged.kprof")
    m = run([kprof, "merge"] + files + ["-o", merged], timeout=300)
    res["merge"] = {"ok": m.ok, "wall_s": m.wall, "stderr": m.err.strip().splitlines()[-8:]}
    if not m.ok:
        check("kprof merge rank-*.kprof", "FAILED", m.why())
        return res
    check("kprof merge rank-*.kprof", "ok", "%.2f s%s" % (
        m.wall, ("; " + " | ".join(res["merge"]["stderr"]))[:300] if m.err.strip() else ""))
    res["trace"] = facts = trace_facts(merged, a.cpu)
    check_trace(facts, a, check, "merged")
    res["report"] = rep = report(kprof, merged, a.out, "merged-report")
    check_report(rep, check, "merged")
    return res


if __name__ == "__main__":
    main()
