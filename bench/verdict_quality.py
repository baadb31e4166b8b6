#!/usr/bin/env python3
"""bench/verdict_quality.py — how often are kprof's comparison verdicts wrong (issue 22)? The
verdicts themselves measured: a kernel against itself (A/A: any FASTER or SLOWER is false), a
kernel against one doing a little more work (power: SLOWER is right), and traces of one program
(`kprof diff`: nothing FASTER or SLOWER between runs alike; exactly the slowed kernels SLOWER).

The kernel is one dependent FMA chain per work-item (generated here, nothing folds it away):
OpenCL (PoCL on a CPU) at grid 64, tg 64 and 4096 steps (~0.3 ms there), measured with
--min-time 0.05 --timeout 3 so a comparison takes ~1-3 s; CUDA: bench/kernels/bench.cu's
fma_work10 (grid 262144, tg 256: ~80 us on an H200) for A/A and the same chain (10*1024 steps)
generated for power, with --min-time 0.1 (an H200 is quiet: more comparisons in a lease).

  aa     A/A in five forms: (a) one file, the kernel twice (--entry k --entry k: one session,
         paired); (b) two identical files (two sessions, paired); (c) --compare with an earlier
         run of the same kernel (run once to a JSON, then again with --compare: unpaired, across
         runs); (d) (c) with --repeat 3 on both runs; (e) (a) with --repeat 3. Per form: count,
         false FASTER/SLOWER count and rate with a 95% Wilson interval, UNSURE rate with the
         reasons' counts, SAME rate, mean wall time per comparison (for (c)/(d) both runs), and
         the same split by the other_cpus kprof saw (CPUs other processes took).
         Goal: false FASTER/SLOWER <= 1% in every form and condition.
  power  B with 2%, 5% and 10% more work (the loop count x1.02/1.05/1.10), in (a) one file
         (paired, one session) and (b) two files: SLOWER, UNSURE and FASTER rates with Wilson
         intervals. Goals: on an H200 SLOWER >= 95% at 5% and 10%; on PoCL idle >= 90% at 10%.
  traces CUDA and torch only (skipped elsewhere, with the reason): bench/programs/train_torch.py
         (its steps alternating between two batch sizes, so kernels of several shapes run
         under one name, and one torch.cuda._sleep kernel of SPIN cycles a step) traced 5
         times; `kprof diff` over the 10 pairs: device rows and judged host rows called FASTER
         or SLOWER (goal 0). Then the sleep kernel made 1.5x as long (the change that slows
         some kernels): each of the 5 runs against it: the sleep rows SLOWER, nothing else
         FASTER or SLOWER.

A condition is a run of this script: --label idle|busy (free text kept in the JSON) and the
backend; --busy-loop starts one `sh -c 'while :; do :; done'` for the run's duration (killed at
the end, always). The measurements of the aa and power sections are interleaved round by round
(shuffled within a round, seeded), so that a run cut short by --budget has as many of each and
a change of the machine's load falls on all of them alike. The --json file is rewritten after
every round and section, so a run cut short keeps what it measured. --budget S stops starting
new measurements after S seconds. --dry-run prints every command and feeds the parsing and the
summary synthetic figures (nothing runs; the JSON says "dry_run": true; it takes a second).
Not part of the test suite (its figures are timing-dependent).

usage: bench/verdict_quality.py [--kprof build/kprof] [--backend opencl|cuda] [--aa N]
       [--power N] [--label idle|busy] [--busy-loop] [--sections aa,power,traces]
       [--json out.json] [--budget S] [--dry-run]
"""

import argparse
import json
import math
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_CU = os.path.join(HERE, "kernels", "bench.cu")
TRAIN = os.path.join(HERE, "programs", "train_torch.py")

AA_FORMS = {
    "a": "one file, --entry k twice (one session, paired)",
    "b": "two identical files (two sessions, paired)",
    "c": "--compare with an earlier run (unpaired, one run a side)",
    "d": "--compare with an earlier run, --repeat 3 on both",
    "e": "one file, --entry k twice, --repeat 3",
}
POWER_FORMS = {"a": "one file (paired, one session)", "b": "two files (two sessions, paired)"}
VARIANTS = {"p2": 1.02, "p5": 1.05, "p10": 1.10}
REASONS = ["straddles", "few", "drift", "modes", "busy", "small", "one_run", "runs", "clock"]
VERDICTS = ["SAME", "FASTER", "SLOWER", "UNSURE"]

# Per backend: the kernel's language, geometry, A's steps and kprof bench's options.
BACKENDS = {
    "opencl": {"ext": "cl", "grid": 64, "tg": 64, "buffers": "f32:64,u32=64", "steps": 4096,
               "extra": ["--min-time", "0.05", "--timeout", "3"]},
    "cuda": {"ext": "cu", "grid": 262144, "tg": 256, "buffers": "f32:262144,u32=262144",
             "steps": 10 * 1024, "extra": ["--min-time", "0.1", "--timeout", "10"]},
}
CL_KERNEL = """__kernel void %(name)s(__global float *out, uint n)
{
    size_t i = get_global_id(0);
    float x = (float)i * 1e-6f, a = 0.999f, b = 1e-4f;
    for (int p = 0; p < %(steps)d; p++)
        x = x * a + b;
    if (i < n) out[i] = x;
}
"""
CU_KERNEL = """extern "C" __global__ void %(name)s(float *out, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = (float)i * 1e-6f;
#pragma unroll 8
    for (unsigned int k = 0; k < %(steps)du; k++)
        x = fmaf(x, 0.999f, 0.5f);
    if (i < n) out[i] = x;
}
"""
# traces: train_torch.py's steps, batch sizes (alternating) and sleep cycles.
TRACE_RUNS = 5
TRACE_STEPS = 40
TRACE_BATCH = "64,96"
TRACE_SPIN = 200000


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def wilson(k, n, z=1.959964):
    """The 95% Wilson score interval of k successes in n trials."""
    if not n:
        return [None, None]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [max(0.0, c - h), min(1.0, c + h)]


def pct(x):
    return "n/a" if x is None else "%.1f%%" % (100 * x)


def rate(k, n):
    """'k/n = r% [lo, hi]'."""
    if not n:
        return "0/0"
    lo, hi = wilson(k, n)
    return "%d/%d = %s [%s, %s]" % (k, n, pct(k / n), pct(lo), pct(hi))


def fmt(x, f="%.4f"):
    return "n/a" if x is None else f % x


# --------------------------------------------------------------------------------------------
# Synthetic tool output (--dry-run)


def _arg(cmd, flag, default=None):
    vals = [cmd[i + 1] for i, c in enumerate(cmd[:-1]) if c == flag]
    return vals if flag == "--entry" else (vals[-1] if vals else default)


def synth_bench(cmd, factors, rng):
    """What `kprof bench --json` would print for cmd, roughly: verdicts drawn at made-up rates."""
    entries = _arg(cmd, "--entry")
    files = [c for c in cmd[2:] if c.endswith((".cl", ".cu")) and
             cmd[cmd.index(c) - 1] not in ("--compare",)]
    names = entries or [os.path.splitext(os.path.basename(f))[0] for f in files]
    if len(names) == 1 and len(files) == 2:
        names = names * 2
    repeat = int(_arg(cmd, "--repeat", "1"))
    ks = []
    for i, nm in enumerate(names):
        f = factors.get(nm.split("_copy")[0], 1.0)
        med = 0.3 * f * rng.gauss(1, 0.002)
        k = {"label": ("A", "B")[i] if len(names) == 2 else "", "entry": nm, "median_ms": med,
             "samples": rng.randint(90, 200), "shape": {"block": 3, "blocks": 40}}
        if repeat > 1:
            k["run_medians_ms"] = [med * rng.gauss(1, 0.003) for _ in range(repeat)]
        ks.append(k)
    other = rng.choice([0.05, 0.3, 1.2])
    comp = None
    compare = _arg(cmd, "--compare")
    if len(ks) == 2 or compare:
        if compare:
            base = json.load(open(compare))["points"][0]["kernels"][0]["median_ms"]
            r = ks[0]["median_ms"] / base
        else:
            r = ks[1]["median_ms"] / ks[0]["median_ms"]
        x = rng.random()
        if r > 1.015 and x < 0.9:
            v, reasons = "SLOWER", []
        elif x < 0.008:
            v, reasons = rng.choice(["FASTER", "SLOWER"]), []
        elif x < 0.25:
            v, reasons = "UNSURE", rng.sample(["straddles", "busy", "few", "modes"], 2)
        else:
            v, reasons = "SAME", []
        comp = {"ratio": r, "ci": [r - 0.004, r + 0.004], "verdict": v, "reasons": reasons,
                "reason": " and ".join(reasons) or "", "runs": repeat, "paired": not compare,
                "one_run_a_side": bool(compare) and repeat == 1, "busy_cpus": other}
    return json.dumps({"kind": "bench", "device": "synthetic (dry run)", "points": [
        {"point": "", "cache": "hot", "wall_s": 1.0, "other_cpus": other, "host_cpus": 2,
         "kernels": ks, "comparison": comp}]})


def synth_diff(cmd, rng):
    slowed = "b" in os.path.basename(cmd[3])
    dev = []
    for name in ("void at::native::vectorized_elementwise_kernel", "sm80_xmma_fprop",
                 "cutlass_80_gemm", "spin_kernel(long)"):
        v = rng.choice(["SAME"] * 8 + ["UNSURE"] * 2)
        if slowed and "spin" in name:
            v = "SLOWER"
        dev.append({"name": name, "status": "both", "a": {"count": 40}, "b": {"count": 40},
                    "comparison": {"verdict": v, "ratio": 1.5 if v == "SLOWER" else 1.0,
                                   "ci": [0.99, 1.01]}})
    host = [{"name": "cudaLaunchKernel", "status": "both", "comparison": None},
            {"name": "cudaMemcpyAsync", "status": "both",
             "comparison": {"verdict": "not judged"}}]
    return json.dumps({"kind": "diff", "device": dev, "host": host, "ranges": [],
                       "summary": {}})


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
        self.rng = random.Random(a.seed)
        self.factors = {}  # entry -> work factor, for the synthetic figures

    def elapsed(self):
        return time.perf_counter() - self.t0

    def left(self):
        return self.budget - self.elapsed()

    def log(self, msg):
        print("[%4.0fs] %s" % (self.elapsed(), msg), file=sys.stderr, flush=True)

    def call(self, cmd, timeout, synth=None):
        """Run cmd: {"cmd", "rc", "wall_subprocess_s", "stdout"|"error"}."""
        rec = {"cmd": shlex.join(cmd)}
        if self.dry:
            print("$ " + rec["cmd"], flush=True)
            rec.update(rc=0, wall_subprocess_s=round(self.rng.uniform(1, 3), 2),
                       stdout=synth(cmd) if synth else "")  # made up
            return rec
        t = time.perf_counter()
        try:
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
        except BaseException:  # Ctrl-C: end what we started, then go on unwinding
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        rec.update(rc=p.returncode, wall_subprocess_s=time.perf_counter() - t, stdout=out)
        if p.returncode != 0:
            rec["stderr_tail"] = err[-1500:]
        return rec

    def json_call(self, cmd, timeout, synth=None):
        """call(), its stdout parsed into rec["result"] (samples dropped) and kept in rec
        ["stdout"] only while the caller needs it (an earlier run for --compare)."""
        rec = self.call(cmd, timeout, synth)
        out = rec.get("stdout")
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
        rec["result"] = j
        return rec


# --------------------------------------------------------------------------------------------
# Kernels


def write_kernels(ctx, workdir, backend):
    """The generated sources: one file with A and the variants, a file each, A's copy."""
    B = BACKENDS[backend]
    tmpl = CL_KERNEL if B["ext"] == "cl" else CU_KERNEL
    steps = {"fma_a": B["steps"]}
    for v, f in VARIANTS.items():
        steps["fma_" + v] = int(round(B["steps"] * f))
    ctx.factors = {n: s / B["steps"] for n, s in steps.items()}
    files = {"all": os.path.join(workdir, "fma_all." + B["ext"])}
    with open(files["all"], "w") as f:
        f.write("\n".join(tmpl % {"name": n, "steps": s} for n, s in steps.items()))
    for n, s in steps.items():
        files[n] = os.path.join(workdir, "%s.%s" % (n, B["ext"]))
        with open(files[n], "w") as f:
            f.write(tmpl % {"name": n, "steps": s})
    files["fma_a_copy"] = os.path.join(workdir, "fma_a_copy." + B["ext"])
    shutil.copyfile(files["fma_a"], files["fma_a_copy"])
    return {"steps": steps, "factors": ctx.factors, "files": files}


def geometry(backend):
    B = BACKENDS[backend]
    return ["--grid", str(B["grid"]), "--tg", str(B["tg"]), "--buffers", B["buffers"]] + \
        (["--backend", backend] if backend == "cuda" else []) + B["extra"]


def bench_timeout(backend, repeat=1):
    t = float(_arg(BACKENDS[backend]["extra"], "--timeout", "15"))
    return 60 + 2 * t * repeat * 2


def comparison_of(rec):
    """The first point's comparison and the figures we keep of one `kprof bench` record."""
    j = rec.get("result") or {}
    pts = j.get("points") or [{}]
    pt = pts[0]
    ks = pt.get("kernels") or []
    return {"comparison": pt.get("comparison"), "other_cpus": pt.get("other_cpus"),
            "host_cpus": pt.get("host_cpus"), "stop": pt.get("stop"), "json_wall_s": pt.get(
                "wall_s"),
            "kernels": [{x: k.get(x) for x in ("label", "entry", "source", "median_ms",
                                                "samples", "taken", "noise", "rsd",
                                                "run_medians_ms", "shape")} for k in ks]}


def one_comparison(ctx, backend, kern, section, form, variant=None):
    """Run one comparison; a record with the verdict (or the error)."""
    files = kern["files"]
    g = geometry(backend)
    kp = ctx.kprof
    rec = {"section": section, "form": form, "variant": variant, "calls": []}
    if ctx.a.backend == "cuda" and section == "aa" and form in ("a", "b", "c", "d", "e"):
        src_a, entry = BENCH_CU, "fma_work10"
        copy = os.path.join(os.path.dirname(files["all"]), "bench_copy.cu")
        if not os.path.exists(copy):
            shutil.copyfile(BENCH_CU, copy)
    else:
        src_a, entry, copy = files["all"], "fma_a", files["fma_a_copy"]
    b_entry = entry if section == "aa" else "fma_" + variant

    def synth(cmd):
        return synth_bench(cmd, ctx.factors, ctx.rng)

    def bench(args, repeat=1):
        cmd = [kp, "bench"] + args + g + (["--repeat", str(repeat)] if repeat > 1 else []) + \
            ["--json"]
        r = ctx.json_call(cmd, bench_timeout(backend, repeat), synth)
        rec["calls"].append({k: v for k, v in r.items() if k not in ("stdout", "result")})
        return r

    if form in ("a", "e"):  # one file, two entries: one session
        r = bench([src_a, "--entry", entry, "--entry", b_entry], 3 if form == "e" else 1)
    elif form == "b":  # two files: two sessions
        if section == "aa":
            two = ([src_a, copy, "--entry", entry] if ctx.a.backend == "cuda"
                   else [files["fma_a"], copy])
        else:
            two = [files["fma_a"], files[b_entry]]
        r = bench(two)
    else:  # c, d: an earlier run, then this one with --compare
        repeat = 3 if form == "d" else 1
        first = bench([src_a, "--entry", entry], repeat)
        if first.get("error") or not first.get("stdout"):
            rec["error"] = "earlier run: %s" % first.get("error", "no output")
            return rec
        earlier = os.path.join(os.path.dirname(files["all"]), "earlier.json")
        with open(earlier, "w") as f:
            f.write(first["stdout"])
        rec["earlier"] = comparison_of(first)["kernels"]
        r = bench([src_a, "--entry", b_entry, "--compare", earlier], repeat)
    rec["wall_s"] = sum(c.get("wall_subprocess_s") or 0 for c in rec["calls"])
    if r.get("error"):
        rec["error"] = r["error"]
    rec.update(comparison_of(r))
    rec["device"] = (r.get("result") or {}).get("device")
    c = rec.get("comparison")
    rec["verdict"] = c.get("verdict") if c else "ERROR"
    if not c and "error" not in rec:
        rec["error"] = "no comparison in the JSON"
    return rec


def recline(rec):
    c = rec.get("comparison")
    if not c:
        return "ERROR: %s" % (rec.get("error") or "?").strip().splitlines()[-1][:200]
    return "%-6s ratio %.4f [%.4f, %.4f] reasons %s, other_cpus %s, samples %s, %.1f s" % (
        c.get("verdict"), c.get("ratio") or 0, (c.get("ci") or [0, 0])[0],
        (c.get("ci") or [0, 0])[1], ",".join(c.get("reasons") or []) or "-",
        fmt(rec.get("other_cpus"), "%.2f"), [k.get("samples") for k in rec.get("kernels", [])],
        rec.get("wall_s") or 0)


# --------------------------------------------------------------------------------------------
# Tallies


BUCKETS = ["other_cpus < 0.25", "other_cpus 0.25-1", "other_cpus >= 1", "other_cpus n/a"]


def other_bucket(x):
    if x is None:
        return "other_cpus n/a"
    return ("other_cpus < 0.25" if x < 0.25 else "other_cpus 0.25-1" if x < 1
            else "other_cpus >= 1")


def tally(recs, right=None):
    """Counts and rates of a list of comparison records. right: the verdict that is correct
    (power: SLOWER); None for A/A (FASTER and SLOWER are false)."""
    n = len(recs)
    ok = [r for r in recs if r.get("comparison")]
    m = len(ok)
    cnt = {v: sum(1 for r in ok if r["verdict"] == v) for v in VERDICTS}
    other = sorted({r["verdict"] for r in ok} - set(VERDICTS))
    for v in other:  # a verdict this script does not know: counted, not hidden
        cnt[v] = sum(1 for r in ok if r["verdict"] == v)
    reasons = {}
    for r in ok:
        if r["verdict"] == "UNSURE":
            for why in r["comparison"].get("reasons") or ["(none given)"]:
                reasons[why] = reasons.get(why, 0) + 1
    t = {"count": n, "compared": m, "errors": n - m, "verdicts": cnt,
         "unsure_reasons": reasons,
         "mean_wall_s": mean([r.get("wall_s") for r in ok]),
         "mean_other_cpus": mean([r.get("other_cpus") for r in ok]),
         "ratios": [round(r["comparison"].get("ratio") or 0, 5) for r in ok]}
    # Every session's median of A (and B, and the earlier run's): how far apart the machine's
    # states put one kernel (a false verdict across sessions needs them apart).
    meds = []
    for r in ok:
        for k in (r.get("kernels") or []) + (r.get("earlier") or []):
            meds += k.get("run_medians_ms") or ([k["median_ms"]] if k.get("median_ms") else [])
    t["session_medians_ms"] = ([min(meds), statistics.median(meds), max(meds)] if meds
                               else None)
    for v in VERDICTS:
        t["rate_" + v.lower()] = cnt[v] / m if m else None
        t["wilson_" + v.lower()] = wilson(cnt[v], m)
    if right is None:
        k = cnt["FASTER"] + cnt["SLOWER"]
        t["false"] = k
        t["false_rate"] = k / m if m else None
        t["false_wilson"] = wilson(k, m)
        t["false_records"] = [r for r in ok if r["verdict"] in ("FASTER", "SLOWER")]
    return t


def summarise_aa(R):
    recs = R.get("aa", {}).get("records", [])
    out = {}
    for form in AA_FORMS:
        rs = [r for r in recs if r["form"] == form]
        if not rs:
            continue
        t = tally(rs)
        t["by_other_cpus"] = {}
        seen = {other_bucket(r.get("other_cpus")) for r in rs}
        for b in [b for b in BUCKETS if b in seen]:
            sub = tally([r for r in rs if other_bucket(r.get("other_cpus")) == b])
            sub.pop("false_records", None)
            sub.pop("ratios", None)
            t["by_other_cpus"][b] = sub
        t["pass"] = (t["false_wilson"][0] is not None and t["false_rate"] <= 0.01)
        out[form] = t
    if recs:
        t = tally(recs)
        t.pop("ratios")
        out["all"] = t
    R["aa"]["tallies"] = out


def summarise_power(R):
    recs = R.get("power", {}).get("records", [])
    out = {}
    goal = R["power"].get("goal_slower")
    for form in POWER_FORMS:
        for v in VARIANTS:
            rs = [r for r in recs if r["form"] == form and r["variant"] == v]
            if not rs:
                continue
            t = tally(rs, "SLOWER")
            need = goal.get(v) if goal else None
            t["goal_slower"] = need
            t["pass"] = None if need is None or not t["compared"] else t["rate_slower"] >= need
            out["%s/%s" % (form, v)] = t
    R["power"]["tallies"] = out


# --------------------------------------------------------------------------------------------
# Sections


def ab_sections(ctx, R, backend, kern, save):
    """The aa and power sections, interleaved round by round."""
    sections = ctx.a.sections
    jobs_per_round = []
    n_aa = ctx.a.aa if "aa" in sections else 0
    n_pw = ctx.a.power if "power" in sections else 0
    for i in range(max(n_aa, n_pw)):
        jobs = []
        if i < n_aa:
            jobs += [("aa", f, None) for f in AA_FORMS]
        if i < n_pw:
            jobs += [("power", f, v) for f in POWER_FORMS for v in VARIANTS]
        ctx.rng.shuffle(jobs)
        jobs_per_round.append(jobs)
    if n_aa:
        R["aa"] = {"forms": AA_FORMS, "planned_per_form": n_aa, "records": [],
                   "goal": "false FASTER/SLOWER <= 1% in every form and condition"}
    if n_pw:
        on_h200 = backend == "cuda"
        R["power"] = {"forms": POWER_FORMS, "variants": VARIANTS, "planned_per_variant": n_pw,
                      "records": [],
                      "goal": ("SLOWER >= 95% at 5% and 10% (H200)" if on_h200 else
                               "SLOWER >= 90% at 10% (PoCL, idle)"),
                      "goal_slower": ({"p5": 0.95, "p10": 0.95} if on_h200 else
                                      {"p10": 0.90} if ctx.a.label == "idle" else None)}
    total = sum(len(j) for j in jobs_per_round)
    done = 0
    for i, jobs in enumerate(jobs_per_round):
        for sec, form, var in jobs:
            if ctx.left() <= 0:
                ctx.skipped += 1
                continue
            t = ctx.elapsed()
            rec = one_comparison(ctx, backend, kern, sec, form, var)
            rec["round"], rec["t_s"] = i, round(t, 1)
            rec["loadavg"] = os.getloadavg()[0]
            R[sec]["records"].append(rec)
            done += 1
            ctx.log("%d/%d %s %s%s: %s" % (done, total, sec, form, "/" + var if var else "",
                                          recline(rec)))
        if "aa" in R:
            summarise_aa(R)
        if "power" in R:
            summarise_power(R)
        save()


def cuda_torch_missing(ctx):
    """Why the traces section cannot run here, or None."""
    if ctx.a.backend != "cuda":
        return "the backend is %s: traces need CUDA (kprof trace of a PyTorch program)" % \
            ctx.a.backend
    if ctx.dry:
        return None
    p = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return "torch with CUDA is not usable here: %s" % (p.stderr.strip().splitlines() or
                                                           ["?"])[-1]
    return None


def diff_findings(d):
    """Per table (device, host, ranges): rows, judged rows, FASTER/SLOWER rows. A row's verdict
    may be missing, null or "not judged" (host rows are not judged by default)."""
    out = {}
    for table in ("device", "host", "ranges"):
        rows = d.get(table) or []
        judged, found = 0, []
        for r in rows:
            c = r.get("comparison") or {}
            v = c.get("verdict") if isinstance(c, dict) else None
            if v in ("SAME", "FASTER", "SLOWER", "UNSURE"):
                judged += 1
            if v in ("FASTER", "SLOWER"):
                found.append({"name": r.get("name"), "status": r.get("status"), "verdict": v,
                              "ratio": c.get("ratio"), "ci": c.get("ci"),
                              "key": {k: r.get(k) for k in ("grid", "tg", "geometry", "shape")
                                      if k in r},
                              "count_a": (r.get("a") or {}).get("count"),
                              "count_b": (r.get("b") or {}).get("count")})
        out[table] = {"rows": len(rows), "judged": judged, "faster_slower": found}
    return out


def is_spin(name):
    n = (name or "").lower()
    return "spin" in n or "sleep" in n


def traces_section(ctx, R):
    out = {"goal": "runs alike: 0 device or judged host rows FASTER/SLOWER over the 10 pairs; "
                   "the sleep kernel 1.5x as long: its rows SLOWER, nothing else"}
    R["traces"] = out
    why = cuda_torch_missing(ctx)
    if why:
        out["skipped"] = why
        ctx.log("traces skipped: %s" % why)
        return
    tmp = tempfile.mkdtemp(prefix="kprof-vq-traces-", dir=ctx.workdir)
    out.update(steps=TRACE_STEPS, batch=TRACE_BATCH, spin=[TRACE_SPIN, TRACE_SPIN * 3 // 2])

    def trace(path, spin):
        cmd = [ctx.kprof, "trace", "-o", path, "--", sys.executable, TRAIN, str(TRACE_STEPS),
               TRACE_BATCH, str(spin)]
        r = ctx.call(cmd, 600)
        r.pop("stdout", None)
        return r

    def diff(a, b):
        r = ctx.json_call([ctx.kprof, "diff", a, b, "--json"], 300,
                          lambda cmd: synth_diff(cmd, ctx.rng))
        d = r.pop("result", None)
        r.pop("stdout", None)
        return r, d

    runs = []
    for i in range(TRACE_RUNS):
        if ctx.left() <= 0:
            ctx.skipped += 1
            continue
        p = os.path.join(tmp, "a%d.kprof" % i)
        r = trace(p, TRACE_SPIN)
        runs.append((p, r))
        ctx.log("trace %d/%d: rc %s, %.1f s" % (i + 1, TRACE_RUNS, r.get("rc"),
                                                r.get("wall_subprocess_s") or 0))
    out["traces"] = [r for _, r in runs]
    good = [p for p, r in runs if r.get("rc") == 0]
    pairs = []
    for i in range(len(good)):
        for j in range(i + 1, len(good)):
            if ctx.left() <= 0:
                ctx.skipped += 1
                continue
            r, d = diff(good[i], good[j])
            f = diff_findings(d) if d else None
            pairs.append({"a": i, "b": j, "call": r, "findings": f})
    out["alike"] = pairs
    ok = [p for p in pairs if p["findings"]]
    out["alike_tally"] = {
        "pairs": len(pairs), "diffed": len(ok),
        "device_rows": sum(p["findings"]["device"]["rows"] for p in ok),
        "device_judged": sum(p["findings"]["device"]["judged"] for p in ok),
        "device_false": sum(len(p["findings"]["device"]["faster_slower"]) for p in ok),
        "host_rows": sum(p["findings"]["host"]["rows"] for p in ok),
        "host_judged": sum(p["findings"]["host"]["judged"] for p in ok),
        "host_false": sum(len(p["findings"]["host"]["faster_slower"]) for p in ok)}
    t = out["alike_tally"]
    t["pass"] = bool(ok) and t["device_false"] == 0 and t["host_false"] == 0
    if ctx.left() <= 0 or not good:
        return
    slow = os.path.join(tmp, "b.kprof")
    r = trace(slow, TRACE_SPIN * 3 // 2)
    out["changed_trace"] = r
    if r.get("rc") != 0 and not ctx.dry:
        return
    changed = []
    for i, p in enumerate(good):
        if ctx.left() <= 0:
            ctx.skipped += 1
            continue
        rr, d = diff(p, slow)
        f = diff_findings(d) if d else None
        spin_rows = [x for x in (d or {}).get("device", []) if is_spin(x.get("name"))]
        spin_v = [((x.get("comparison") or {}).get("verdict")) for x in spin_rows]
        # The sleep rows' whole comparisons (ratio, interval, reasons), to say why one missed.
        spin_c = [{k: x.get(k) for k in ("name", "status", "reasons", "reason", "a", "b",
                                         "comparison")} for x in spin_rows]
        others = [x for x in (f["device"]["faster_slower"] + f["host"]["faster_slower"])
                  if not is_spin(x["name"])] if f else None
        changed.append({"a": i, "call": rr, "findings": f, "sleep_rows": len(spin_rows),
                        "sleep_verdicts": spin_v, "sleep_comparisons": spin_c,
                        "others_faster_slower": others,
                        "pass": bool(spin_rows) and all(v == "SLOWER" for v in spin_v) and
                        others == []})
    out["changed"] = changed
    out["changed_tally"] = {"diffs": len(changed),
                            "pass": sum(1 for c in changed if c["pass"]),
                            "sleep_slower": sum(v == "SLOWER" for c in changed
                                                for v in c["sleep_verdicts"]),
                            "sleep_rows": sum(c["sleep_rows"] for c in changed),
                            "others_faster_slower": sum(len(c["others_faster_slower"] or [])
                                                        for c in changed)}


# --------------------------------------------------------------------------------------------
# Summary


def summary(R):
    L = []
    aa = R.get("aa", {}).get("tallies", {})
    for form, t in aa.items():
        what = AA_FORMS.get(form, "all forms together")
        L.append("%s A/A (%s) %-52s false FASTER/SLOWER %s (goal <= 1%%); UNSURE %s %s; SAME "
                 "%s; %s s per comparison; mean other_cpus %s%s" % (
                     "    " if form == "all" else ("PASS" if t.get("pass") else "MISS"), form,
                     what, rate(t["false"], t["compared"]),
                     rate(t["verdicts"]["UNSURE"], t["compared"]), t["unsure_reasons"] or "",
                     rate(t["verdicts"]["SAME"], t["compared"]), fmt(t["mean_wall_s"], "%.2f"),
                     fmt(t["mean_other_cpus"], "%.2f"),
                     "; %d errors" % t["errors"] if t["errors"] else ""))
        if form == "all" and t.get("session_medians_ms"):
            lo, mid, hi = t["session_medians_ms"]
            L.append("       the sessions' medians of the A/A kernel: %.4f..%.4f ms (median "
                     "%.4f; max/min %s)" % (lo, hi, mid, pct(hi / lo - 1) if lo else "n/a"))
        for b, s in (t.get("by_other_cpus") or {}).items():
            L.append("       %-22s false %s, UNSURE %s, SAME %s" % (
                b, rate(s["false"], s["compared"]), rate(s["verdicts"]["UNSURE"], s["compared"]),
                rate(s["verdicts"]["SAME"], s["compared"])))
    pw = R.get("power", {}).get("tallies", {})
    for key, t in pw.items():
        form, v = key.split("/")
        need = t.get("goal_slower")
        L.append("%s power (%s) +%-3s %-33s SLOWER %s%s; UNSURE %s %s; FASTER %s; SAME %s; "
                 "%s s per comparison%s" % (
                     "n/a " if t["pass"] is None else ("PASS" if t["pass"] else "MISS"), form,
                     "%d%%" % round((VARIANTS[v] - 1) * 100), POWER_FORMS[form],
                     rate(t["verdicts"]["SLOWER"], t["compared"]),
                     " (goal >= %d%%)" % round(need * 100) if need else "",
                     rate(t["verdicts"]["UNSURE"], t["compared"]), t["unsure_reasons"] or "",
                     rate(t["verdicts"]["FASTER"], t["compared"]),
                     rate(t["verdicts"]["SAME"], t["compared"]), fmt(t["mean_wall_s"], "%.2f"),
                     "; %d errors" % t["errors"] if t["errors"] else ""))
    tr = R.get("traces")
    if tr:
        if "skipped" in tr:
            L.append("n/a  traces: skipped: %s" % tr["skipped"])
        else:
            t = tr.get("alike_tally", {})
            L.append("%s traces alike: %d/%d pairs diffed, device rows %d (judged %d) FASTER/"
                     "SLOWER %d, host rows %d (judged %d) FASTER/SLOWER %d (goal 0)" % (
                         "PASS" if t.get("pass") else "MISS", t.get("diffed", 0),
                         t.get("pairs", 0), t.get("device_rows", 0), t.get("device_judged", 0),
                         t.get("device_false", 0), t.get("host_rows", 0),
                         t.get("host_judged", 0), t.get("host_false", 0)))
            c = tr.get("changed_tally")
            if c:
                L.append("%s traces changed (sleep 1.5x): %d/%d diffs right; sleep rows SLOWER "
                         "%d/%d; other rows FASTER/SLOWER %d (goal 0)" % (
                             "PASS" if c["pass"] == c["diffs"] and c["diffs"] else "MISS",
                             c["pass"], c["diffs"], c["sleep_slower"], c["sleep_rows"],
                             c["others_faster_slower"]))
    for k, v in R.get("errors", {}).items():
        L.append("ERR  %s: %s" % (k, v.strip().splitlines()[-1] if v else v))
    return L


def false_details(R):
    """The false FASTER/SLOWER verdicts of A/A, each with what explains it."""
    out = []
    for r in R.get("aa", {}).get("records", []):
        if r.get("verdict") in ("FASTER", "SLOWER"):
            out.append({"form": r["form"], "round": r.get("round"), "verdict": r["verdict"],
                        "comparison": r["comparison"], "other_cpus": r.get("other_cpus"),
                        "stop": r.get("stop"), "kernels": r.get("kernels"),
                        "earlier": r.get("earlier"), "cmds": [c["cmd"] for c in r["calls"]]})
    return out


# --------------------------------------------------------------------------------------------


class BusyLoop:
    """One `sh -c 'while :; do :; done'` for the run's duration, killed at the end, always."""

    def __init__(self, ctx):
        self.ctx, self.p = ctx, None

    def __enter__(self):
        cmd = ["sh", "-c", "while :; do :; done"]
        if self.ctx.dry:
            print("$ " + shlex.join(cmd) + " &", flush=True)
            return self
        self.p = subprocess.Popen(cmd, start_new_session=True)
        self.ctx.log("busy loop started: pid %d" % self.p.pid)
        return self

    def __exit__(self, *exc):
        if self.p is not None and self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)  # its own group: the sh we started
            except ProcessLookupError:
                pass
            self.p.wait()
            self.ctx.log("busy loop %d ended" % self.p.pid)
        return False


def default_backend(kprof):
    try:
        p = subprocess.run([kprof, "caps"], capture_output=True, text=True, timeout=60)
        for line in p.stdout.splitlines():
            if line.startswith("cuda device"):
                return "cuda"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "opencl"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--backend", choices=("opencl", "cuda"),
                    help="default: cuda where `kprof caps` shows a CUDA device, else opencl")
    ap.add_argument("--aa", type=int, default=40,
                    help="comparisons per A/A form (5 forms; default 40: 200 in all)")
    ap.add_argument("--power", type=int, default=20,
                    help="comparisons per power variant and form (default 20)")
    ap.add_argument("--label", default="idle", help="the condition, kept in the JSON: idle, "
                    "busy or any words (default idle)")
    ap.add_argument("--busy-loop", action="store_true",
                    help="run one busy shell loop for the duration (killed at the end)")
    ap.add_argument("--sections", default="aa,power,traces",
                    help="which to run (default aa,power,traces)")
    ap.add_argument("--json", help="write every figure here (rewritten after each round)")
    ap.add_argument("--budget", type=float, default=1800,
                    help="seconds after which no new measurement starts (default 1800)")
    ap.add_argument("--seed", type=int, default=22, help="the order within rounds (default 22)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the commands, run nothing, summarise synthetic figures")
    a = ap.parse_args()
    a.sections = set(s.strip() for s in a.sections.split(",") if s.strip())
    bad = a.sections - {"aa", "power", "traces"}
    if bad:
        ap.error("unknown sections: %s" % ",".join(sorted(bad)))
    if not a.dry_run and not os.access(os.path.abspath(a.kprof), os.X_OK):
        sys.exit("kprof not found at %s (--kprof PATH)" % a.kprof)
    if a.backend is None:
        a.backend = "opencl" if a.dry_run else default_backend(os.path.abspath(a.kprof))
    ctx = Ctx(a)
    ctx.workdir = tempfile.mkdtemp(prefix="kprof-verdict-quality-")
    R = {"kind": "verdict_quality", "dry_run": a.dry_run, "kprof": ctx.kprof,
         "argv": sys.argv[1:], "backend": a.backend, "label": a.label,
         "busy_loop": a.busy_loop, "budget_s": a.budget, "sections": sorted(a.sections),
         "bench_options": geometry(a.backend), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
         "host_cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "errors": {}}

    def save():
        R["total_wall_s"] = ctx.elapsed()
        R["skipped_over_budget"] = ctx.skipped
        if a.json:
            os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
            with open(a.json + ".tmp", "w") as f:
                json.dump(R, f, indent=1)
            os.replace(a.json + ".tmp", a.json)

    # SIGTERM unwinds like Ctrl-C, so the busy loop and any kprof running are ended.
    def on_term(*_):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    interrupted = False
    try:
        with BusyLoop(ctx) if a.busy_loop else _Null():
            try:
                kern = write_kernels(ctx, ctx.workdir, a.backend)
                R["kernels"] = {"steps": kern["steps"], "factors": kern["factors"],
                                "source_a": open(kern["files"]["fma_a"]).read(),
                                "aa_kernel": ("bench.cu fma_work10" if a.backend == "cuda"
                                              else "fma_a (generated)")}
                if a.sections & {"aa", "power"}:
                    ab_sections(ctx, R, a.backend, kern, save)
            except KeyboardInterrupt:
                raise
            except Exception:
                R["errors"]["aa/power"] = traceback.format_exc()
                ctx.log("aa/power failed:\n%s" % R["errors"]["aa/power"])
            save()
            if "traces" in a.sections:
                try:
                    traces_section(ctx, R)
                except KeyboardInterrupt:
                    raise
                except Exception:
                    R["errors"]["traces"] = traceback.format_exc()
                    ctx.log("traces failed:\n%s" % R["errors"]["traces"])
                save()
    except KeyboardInterrupt:
        interrupted = True
        R["interrupted"] = True
        ctx.log("interrupted: summarising what was measured")
    finally:
        shutil.rmtree(ctx.workdir, ignore_errors=True)
    if "aa" in R:
        summarise_aa(R)
    if "power" in R:
        summarise_power(R)
    R["false_verdicts"] = false_details(R)
    R["loadavg_end"] = os.getloadavg()
    lines = summary(R)
    R["summary"] = lines
    save()
    print("verdict_quality on %s (%s, label %r%s), %.0f s%s%s%s:" % (
        _device(R), a.backend, a.label, ", busy loop" if a.busy_loop else "", ctx.elapsed(),
        " (DRY RUN: synthetic figures)" if a.dry_run else "",
        ", %d measurements skipped over --budget" % ctx.skipped if ctx.skipped else "",
        " (interrupted)" if interrupted else ""))
    for l in lines:
        print(l)
    for f in R["false_verdicts"]:
        c = f["comparison"]
        print("FALSE %s in A/A form %s: ratio %.4f ci %s reasons %s other_cpus %s samples %s "
              "(%s)" % (f["verdict"], f["form"], c.get("ratio") or 0, c.get("ci"),
                        c.get("reasons"), fmt(f.get("other_cpus"), "%.2f"),
                        [k.get("samples") for k in f["kernels"] or []], c.get("reason")))
    if interrupted:
        sys.exit(130)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _device(R):
    for sec in ("aa", "power"):
        for r in R.get(sec, {}).get("records", []):
            if r.get("device"):
                return r["device"]
    return "?"


if __name__ == "__main__":
    main()
