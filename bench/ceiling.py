#!/usr/bin/env python3
"""bench/ceiling.py — is `kprof caps --measure` at least as high as the best device-to-device
copy that torch and cupy achieve in the same run? (issue 3, on a CUDA GPU)

Peers copy buffers of the sizes kprof measured (read + write counted), best of --iters copies
timed with CUDA events after warm-ups. The ratio kprof / best peer is the figure.

usage: bench/ceiling.py [--kprof build/kprof] [--json out.json]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def peer_copy(lib, nbytes, iters):
    if lib == "torch":
        import torch
        a = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
        b = torch.empty_like(a)
        ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
        sync = torch.cuda.synchronize
        copy = lambda: b.copy_(a)  # noqa: E731
    else:
        import cupy
        a = cupy.random.random(nbytes // 4, dtype=cupy.float32)
        b = cupy.empty_like(a)
        ev = lambda: cupy.cuda.Event()  # noqa: E731
        sync = cupy.cuda.Device().synchronize
        copy = lambda: cupy.copyto(b, a)  # noqa: E731
    for _ in range(3):
        copy()
    sync()
    best = float("inf")
    for _ in range(iters):
        s, e = ev(), ev()
        s.record()
        copy()
        e.record()
        e.synchronize()
        ms = s.elapsed_time(e) if lib == "torch" else cupy.cuda.get_elapsed_time(s, e)
        best = min(best, ms)
    del a, b
    return 2 * nbytes / (best * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    p = subprocess.run([os.path.abspath(a.kprof), "caps", "--measure", "--backend", "cuda",
                        "--iters", str(a.iters), "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("kprof caps --measure failed:\n" + p.stderr)
    k = json.loads(p.stdout)
    sizes = sorted({pt["bytes"] for pt in k["points"] if pt["kernel"] != "demo_add"})
    peers = {}
    for lib in ("torch", "cupy"):
        try:
            peers[lib] = {str(s): peer_copy(lib, s, a.iters) for s in sizes}
        except Exception as exc:  # a missing peer is reported, not fatal
            peers[lib] = {"error": repr(exc)}
    best_peer = max((v for d in peers.values() for v in d.values() if isinstance(v, float)),
                    default=0)
    res = {"device": k["device"], "kprof_ceiling_gbs": k["ceiling_gb_per_s"],
           "kprof_method": k["method"], "kprof_points": k["points"], "peers_gbs": peers,
           "best_peer_gbs": best_peer,
           "ratio_kprof_over_best_peer": k["ceiling_gb_per_s"] / best_peer if best_peer else None,
           "datasheet_gbs": k.get("peak_bandwidth_gbs")}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print("ceiling on %s: kprof caps --measure %.0f GB/s (%s)" % (k["device"], k["ceiling_gb_per_s"],
                                                                k["method"]))
    for lib, d in peers.items():
        print("  %-6s %s" % (lib, ", ".join("%s MiB %.0f GB/s" % (int(s) >> 20, v)
                                          if isinstance(v, float) else "%s: %s" % (s, v)
                                          for s, v in d.items())))
    if best_peer:
        print("  kprof / best peer = %.3f (goal >= 1)" % res["ratio_kprof_over_best_peer"])


if __name__ == "__main__":
    main()
