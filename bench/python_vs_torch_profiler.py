#!/usr/bin/env python3
"""bench/python_vs_torch_profiler.py — `kprof.profile(cuda=True)` against `torch.profiler` on
one PyTorch training script, in separate runs (on a CUDA GPU with torch and the kprof package).

The script: a small convolutional model (bench/programs/train_torch.py's), WARM untimed steps,
then STEPS timed steps, each ending in a .item() that waits for the device. Three modes, each
in a process of its own, ROUNDS times in turn (plain, torch, kprof, plain, ...):

  plain   the steps alone;
  torch   inside torch.profiler.profile(activities=[CPU, CUDA]); its kernels read from its
          Chrome trace ("cat": "kernel" events: count and summed "dur");
  kprof   inside kprof.profile(cuda=True); its kernels read from the saved trace
          (prof.save, then SQL on the store: events of kind "kernel").

Per mode: the wall time of the steps (the profiler started before, stopped after: not
counted) and of the whole profiled region with its start and stop, the kernel count and the
summed GPU time. Figures: kernel counts equal, GPU time within 1%, and the wall time each
profiler adds to the steps (mode's median minus plain's median), as a ratio kprof/torch
(goal < 0.25).

usage: bench/python_vs_torch_profiler.py [--steps 200] [--warm 20] [--rounds 3] [--json out]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, sqlite3, sys, tempfile, time
import torch
mode, steps, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
def step():
    x = torch.randn(64, 3, 32, 32).to(dev)
    y = torch.randint(0, 10, (64,)).to(dev)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()
for _ in range(warm):
    step()
torch.cuda.synchronize()
out = {"mode": mode}
tmp = tempfile.mkdtemp()
if mode == "plain":
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    out["steps_s"] = out["region_s"] = time.perf_counter() - t0
elif mode == "torch":
    from torch.profiler import profile, ProfilerActivity
    r0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        out["steps_s"] = time.perf_counter() - t0
    p.key_averages()  # what a user then asks for
    out["region_s"] = time.perf_counter() - r0
    path = os.path.join(tmp, "t.json")
    p.export_chrome_trace(path)
    ev = json.load(open(path))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    k = [e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"]
    out["kernels"] = len(k)
    out["gpu_ns"] = sum(float(e["dur"]) for e in k) * 1000.0
else:
    import kprof
    r0 = time.perf_counter()
    with kprof.profile(cuda=True) as p:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        out["steps_s"] = time.perf_counter() - t0
    p.key_averages()
    out["region_s"] = time.perf_counter() - r0
    path = os.path.join(tmp, "run.kprof")
    p.save(path)
    db = sqlite3.connect(path)
    n, ns = db.execute("SELECT COUNT(*), TOTAL(duration_ns) FROM event_view "
                       "WHERE kind = 'kernel'").fetchone()
    out["kernels"], out["gpu_ns"] = n, ns
print("RESULT " + json.dumps(out))
'''


def run(mode, a):
    p = subprocess.run([sys.executable, "-c", CHILD, mode, str(a.steps), str(a.warm)],
                       capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"mode": mode, "error": (p.stderr or p.stdout).strip().splitlines()[-5:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    res = {m: [] for m in ("plain", "torch", "kprof")}
    R = {"steps": a.steps, "warm": a.warm, "rounds": a.rounds, "runs": res}
    for _ in range(a.rounds):
        for m in res:
            res[m].append(run(m, a))
            print("run %s: %s" % (m, json.dumps(res[m][-1])), flush=True)
            if a.json:  # a run cut short keeps what it measured
                with open(a.json, "w") as f:
                    json.dump(R, f, indent=1)
    med = {}
    for m, rs in res.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            print("%s: failed: %s" % (m, rs[0].get("error")))
            continue
        med[m] = {k: statistics.median(r[k] for r in ok) for k in ok[0] if k != "mode"}
    R["median"] = med
    if "plain" in med and "torch" in med and "kprof" in med:
        for key in ("steps_s", "region_s"):
            t_add = med["torch"][key] - med["plain"][key]
            k_add = med["kprof"][key] - med["plain"][key]
            R["added_" + key] = {"torch": t_add, "kprof": k_add,
                                 "ratio": k_add / t_add if t_add > 0 else None}
        R["kernels"] = {"torch": med["torch"]["kernels"], "kprof": med["kprof"]["kernels"]}
        R["gpu_ratio"] = med["kprof"]["gpu_ns"] / med["torch"]["gpu_ns"]
        print("kernels: torch.profiler %d, kprof %d" % (med["torch"]["kernels"],
                                                        med["kprof"]["kernels"]))
        print("GPU time: torch.profiler %.3f ms, kprof %.3f ms (kprof/torch %.4f)" % (
            med["torch"]["gpu_ns"] / 1e6, med["kprof"]["gpu_ns"] / 1e6, R["gpu_ratio"]))
        for key in ("steps_s", "region_s"):
            d = R["added_" + key]
            print("%s: plain %.3f s; added: torch.profiler %+.3f s, kprof %+.3f s (ratio %s)" % (
                key, med["plain"][key], d["torch"], d["kprof"],
                "%.3f" % d["ratio"] if d["ratio"] is not None else "-"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)


if __name__ == "__main__":
    main()
