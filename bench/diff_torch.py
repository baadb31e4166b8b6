#!/usr/bin/env python3
"""bench/diff_torch.py — `kprof diff` on real PyTorch runs (issue 14's proof, on a CUDA GPU):
three `kprof trace` runs of bench/programs/train_torch.py (STEPS steps, each with one kernel of
PyTorch's own that spins SPIN cycles: torch.cuda._sleep), A and A2 alike, B with that one kernel
spinning 1.5 times as long — the hold-out. Goal: A against A2 reports no kernel FASTER or
SLOWER; A against B reports exactly the spin kernel SLOWER and nothing else changed.

usage: bench/diff_torch.py [--kprof build/kprof] [--steps 40] [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "programs", "train_torch.py")


def trace(kprof, out, steps, spin):
    subprocess.run([kprof, "trace", "-o", out, "--", sys.executable, SCRIPT, str(steps), "64",
                    str(spin)], check=True, capture_output=True, text=True)


def diff(kprof, a, b):
    p = subprocess.run([kprof, "diff", a, b, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("kprof diff failed (%d): %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


def findings(d):
    """Device rows with a FASTER/SLOWER verdict, and rows only in one trace."""
    out = []
    for r in d["device"]:
        c = r.get("comparison") or {}
        if c.get("verdict") in ("FASTER", "SLOWER") or r.get("status") in ("only-in-a",
                                                                            "only-in-b"):
            out.append({"name": r["name"], "status": r.get("status"),
                        "verdict": c.get("verdict"), "ratio": c.get("ratio"), "ci": c.get("ci"),
                        "count_a": (r.get("a") or {}).get("count"),
                        "count_b": (r.get("b") or {}).get("count")})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--spin", type=int, default=200000)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kprof-diff-torch-")
    A, A2, B = (os.path.join(tmp, n) for n in ("a.kprof", "a2.kprof", "b.kprof"))
    trace(a.kprof, A, a.steps, a.spin)
    trace(a.kprof, A2, a.steps, a.spin)
    trace(a.kprof, B, a.steps, a.spin * 3 // 2)
    same, held = diff(a.kprof, A, A2), diff(a.kprof, A, B)
    f_same, f_held = findings(same), findings(held)
    spin_rows = [f for f in f_held if "spin" in f["name"].lower() or "sleep" in f["name"].lower()]
    result = {
        "steps": a.steps, "spin_cycles": [a.spin, a.spin * 3 // 2],
        "same": {"findings": f_same, "summary": same["summary"],
                 "device_rows": len(same["device"])},
        "holdout": {"findings": f_held, "summary": held["summary"],
                    "device_rows": len(held["device"])},
        "pass_same": not f_same,
        "pass_holdout": len(f_held) == 1 and len(spin_rows) == 1 and
        spin_rows[0]["verdict"] == "SLOWER",
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    print("A vs A2 (the same script twice): %d device rows, %s -> %s" % (
        len(same["device"]), f_same or "no kernel FASTER or SLOWER",
        "PASS" if result["pass_same"] else "MISS"))
    print("A vs B (one kernel spinning 1.5x as long): %d device rows, found %s -> %s" % (
        len(held["device"]), [(f["name"], f["verdict"], f["ratio"]) for f in f_held],
        "PASS" if result["pass_holdout"] else "MISS"))


if __name__ == "__main__":
    main()
